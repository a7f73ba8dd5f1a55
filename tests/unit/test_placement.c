/* Placing simulators on ranks: the plan from a model file (round-robin,
 * block, pins, zero-promise groups together) and a rank building only the
 * simulators it runs — the others have no world, no entities and no kind
 * setup, only their name, id and edges. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "runtime/model_file.h"
#include "models/builtin.h"

static kr__model_file_t *load_text(const char *json)
{
    char path[] = "/tmp/kairos-place-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = path,
                                                                     .register_builtin = kr__models_register_builtin });
    unlink(path);
    cr_assert_not_null(f, "%s", kr_last_error());
    return f;
}

static const char *const four_lines =
    "{\"end_time\": 100, \"simulators\": [{\"name\": \"line\", \"kind\": \"sqss\", \"count\": 4}]}";

Test(placement, a_rank_builds_only_its_simulators)
{
    kr__model_file_t *f = load_text(four_lines);
    int rank_of[4];
    cr_assert_eq(kr__model_file_plan(f, 2, rank_of), KR_OK);
    cr_assert(rank_of[0] == 0 && rank_of[1] == 1 && rank_of[2] == 0 && rank_of[3] == 1);
    for (int rank = 0; rank < 2; rank++) {
        kr_model_t *m = kr__model_file_build_on(f, NULL, rank, rank_of);
        cr_assert_not_null(m, "%s", kr_last_error());
        cr_assert_eq(kr_model_sim_count(m), 4);
        for (uint32_t i = 0; i < 4; i++) {
            kr_sim_t *s = kr_model_sim(m, i);
            bool mine = rank_of[i] == rank;
            cr_assert_eq(kr_sim_is_local(s), mine, "rank %d, simulator %u", rank, i);
            cr_assert_eq(kr_sim_rank(s), rank_of[i]);
            if (mine) {
                cr_assert_not_null(kr_sim_world(s));
                cr_assert_gt(kr_world_entity_count(kr_sim_world(s)), 0, "the kind built its stations");
                cr_assert_not_null(kr_sim_rng(s));
            } else {
                cr_assert_null(kr_sim_world(s), "rank %d built simulator %u of rank %d", rank, i, rank_of[i]);
                cr_assert_null(kr_sim_rng(s));
            }
        }
        kr_model_destroy(m);
    }
    kr__model_file_free(f);
}

Test(placement, block_pins_and_groups)
{
    kr__model_file_t *f = load_text(
        "{\"end_time\": 10, \"mapping\": \"block\", \"simulators\": ["
        "{\"name\": \"a\", \"kind\": \"sqss\"}, {\"name\": \"b\", \"kind\": \"sqss\"},"
        "{\"name\": \"c\", \"kind\": \"sqss\", \"rank\": 0}, {\"name\": \"d\", \"kind\": \"sqss\"}],"
        "\"dependencies\": [{\"from\": \"b\", \"to\": \"d\", \"promise\": 0}, {\"from\": \"d\", \"to\": \"b\", \"promise\": 0}]}");
    int rank_of[4];
    cr_assert_eq(kr__model_file_plan(f, 2, rank_of), KR_OK);
    /* block: a b | c d; c pinned to 0; b and d share a zero-promise cycle:
     * on b's rank */
    cr_assert_eq(rank_of[0], 0);
    cr_assert_eq(rank_of[1], 0);
    cr_assert_eq(rank_of[2], 0);
    cr_assert_eq(rank_of[3], 0);
    int three[4];
    cr_assert_eq(kr__model_file_plan(f, 3, three), KR_OK);
    cr_assert_eq(three[1], three[3], "a zero-promise group stays on one rank");
    kr__model_file_free(f);
}

/* "mapping": "metis" keeps tightly joined simulators together: two cliques
 * of four with one edge between them land on two ranks, one clique each
 * (round-robin would split both). */
Test(placement, metis_cuts_few_dependencies)
{
    kr__model_file_t *f = load_text(
        "{\"end_time\": 10, \"mapping\": \"metis\", \"simulators\": [{\"name\": \"a\", \"kind\": \"sqss\", \"count\": 4},"
        " {\"name\": \"b\", \"kind\": \"sqss\", \"count\": 4}], \"dependencies\": ["
        "{\"from\": \"a[*]\", \"to\": \"a[*]\", \"promise\": 1}, {\"from\": \"b[*]\", \"to\": \"b[*]\", \"promise\": 1},"
        "{\"from\": \"a[0]\", \"to\": \"b[0]\", \"promise\": 1}]}");
    int rank_of[8];
    cr_assert_eq(kr__model_file_plan(f, 2, rank_of), KR_OK, "%s", kr_last_error());
    for (int i = 1; i < 4; i++) {
        cr_assert_eq(rank_of[i], rank_of[0], "a[%d]", i);
        cr_assert_eq(rank_of[4 + i], rank_of[4], "b[%d]", i);
    }
    cr_assert_neq(rank_of[0], rank_of[4]);
    /* the same plan every time (a fixed seed) */
    int again[8];
    cr_assert_eq(kr__model_file_plan(f, 2, again), KR_OK);
    cr_assert_eq(memcmp(rank_of, again, sizeof again), 0);
    kr__model_file_free(f);
}

/* Small graphs: METIS's k-way put all four simulators of a clique (PHOLD's
 * and the walkers' graphs) on one of two ranks. Every part gets its share:
 * 2 + 2 on two ranks, one each on four, at most 2 on three. */
Test(placement, metis_balances_small_cliques)
{
    kr__model_file_t *f = load_text(
        "{\"end_time\": 10, \"mapping\": \"metis\", \"simulators\": [{\"name\": \"a\", \"kind\": \"sqss\", \"count\": 4}],"
        " \"dependencies\": [{\"from\": \"a[*]\", \"to\": \"a[*]\", \"promise\": 1}]}");
    for (int ranks = 2; ranks <= 4; ranks++) {
        int rank_of[4], load[4] = { 0 };
        cr_assert_eq(kr__model_file_plan(f, ranks, rank_of), KR_OK, "%s", kr_last_error());
        for (int i = 0; i < 4; i++) load[rank_of[i]]++;
        for (int r = 0; r < ranks; r++)
            cr_assert(load[r] >= 1 && load[r] <= (4 + ranks - 1) / ranks, "%d ranks: rank %d runs %d simulators",
                      ranks, r, load[r]);
    }
    kr__model_file_free(f);
}
