/* The model's identity and run digests (runtime/model_digest.c) and the
 * promises of a model built from a file (issue 16). */
#include "model_text.h"
#include "runtime/model_digest.h"

TestSuite(model_digest, .fini = mt_cleanup);

/* model_text.h's checker of error lines: not needed here */
static void (*const unused_mt_expect)(kr_status_t, const char *, const char *, const char *)
    __attribute__((unused)) = mt_expect;

#define TWO "{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'sqss'}, {'name': 'b', 'kind': 'sqss'}, " \
            "{'name': 'c', 'kind': 'bath', 'time_step': 1}], " \
            "'dependencies': [{'from': 'a', 'to': 'b', 'promise': 0.5}, {'from': 'b', 'to': 'c', 'promise': 1}]}"

static kr__model_digest_t digest_of(kr__model_file_t *f, int rank, const int *rank_of)
{
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build_on(f, NULL, rank, rank_of);
    cr_assert(m, "%s", kr_last_error());
    kr__model_digest_t d;
    cr_assert_eq(kr__model_digest(f, m, &d), KR_OK);
    kr_model_destroy(m);
    return d;
}

/* Each rank builds and sets up only its own simulators, and still has the
 * digests of the whole model built on one. */
Test(model_digest, the_same_whatever_rank_builds_it)
{
    kr__model_file_t *f = mt_load(TWO, NULL);
    kr__model_digest_t one = digest_of(f, 0, NULL);
    cr_assert_neq(one.identity, one.run);
    for (int ranks = 2; ranks <= 4; ranks++) {
        int rank_of[3];
        cr_assert_eq(kr__model_file_plan(f, ranks, rank_of), KR_OK);
        for (int r = 0; r < ranks; r++) {
            kr__model_digest_t d = digest_of(f, r, rank_of);
            cr_assert_eq(d.identity, one.identity, "rank %d of %d", r, ranks);
            cr_assert_eq(d.run, one.run, "rank %d of %d", r, ranks);
        }
    }
    kr__model_file_free(f);
}

/* What the identity holds changes both digests; what only the run holds
 * (end time, algorithm, mapping, pins) changes the run digest alone. */
Test(model_digest, identity_and_run)
{
    kr__model_file_t *f = mt_load(TWO, NULL);
    kr__model_digest_t base = digest_of(f, 0, NULL);
    kr__model_file_free(f);
    const char *model[] = { "seed=3", "precision=1000", "dependencies.0.promise=0.25", "simulators.c.time_step=2",
                            "simulators.a.params={\"capacity\": 4}", "simulators.b.params={\"servers\": 2}",
                            "stop_lookahead=1" };
    for (size_t i = 0; i < sizeof model / sizeof model[0]; i++) {
        f = mt_load(TWO, model[i], NULL);
        kr__model_digest_t d = digest_of(f, 0, NULL);
        cr_assert_neq(d.identity, base.identity, "%s", model[i]);
        cr_assert_neq(d.run, base.run, "%s", model[i]);
        kr__model_file_free(f);
    }
    const char *run[] = { "end_time=11", "sync=\"window\"", "mapping=\"block\"", "simulators.b.rank=1" };
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
        f = mt_load(TWO, run[i], NULL);
        kr__model_digest_t d = digest_of(f, 0, NULL);
        cr_assert_eq(d.identity, base.identity, "%s", run[i]);
        cr_assert_neq(d.run, base.run, "%s", run[i]);
        kr__model_file_free(f);
    }
    /* a description is not the model */
    f = mt_load(TWO, "description=\"the same\"", NULL);
    kr__model_digest_t d = digest_of(f, 0, NULL);
    cr_assert_eq(d.identity, base.identity);
    cr_assert_eq(d.run, base.run);
    kr__model_file_free(f);
}

/* Dependencies count by their pair, not by their place in the file; the
 * identity in the file's order (as checkpoints before that kept it) is
 * kept beside, and equals the identity when the file lists them by pair. */
Test(model_digest, dependencies_in_another_order)
{
    kr__model_file_t *f = mt_load(TWO, NULL);
    kr__model_digest_t base = digest_of(f, 0, NULL);
    kr__model_file_free(f);
    cr_assert_eq(base.identity_file_order, base.identity);
    f = mt_load(TWO, "dependencies=[{\"from\": \"b\", \"to\": \"c\", \"promise\": 1}, "
                "{\"from\": \"a\", \"to\": \"b\", \"promise\": 0.5}]", NULL);
    kr__model_digest_t d = digest_of(f, 0, NULL);
    kr__model_file_free(f);
    cr_assert_eq(d.identity, base.identity);
    cr_assert_eq(d.run, base.run);
    cr_assert_neq(d.identity_file_order, base.identity);
    /* the pair still counts: the same promises between other simulators differ */
    f = mt_load(TWO, "dependencies=[{\"from\": \"b\", \"to\": \"c\", \"promise\": 0.5}, "
                "{\"from\": \"a\", \"to\": \"b\", \"promise\": 1}]", NULL);
    d = digest_of(f, 0, NULL);
    kr__model_file_free(f);
    cr_assert_neq(d.identity, base.identity);
}

/* Promises come from the file: refused after the build, naming it; a model
 * built through the C API keeps kr_model_set_promise. */
Test(model_digest, promises_of_a_file_are_refused)
{
    kr__model_file_t *f = mt_load(TWO, NULL);
    cr_assert(f);
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_set_promise(m, 0, 1, 1), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "kr_model_set_promise: the promises of a model built from ") &&
              strstr(kr_last_error(), mt_path) && strstr(kr_last_error(), "come from its \"dependencies\""),
              "%s", kr_last_error());
    cr_assert_eq(kr_model_set_promises(m, 0, 1), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "kr_model_set_promises: "), "%s", kr_last_error());
    cr_assert_eq(kr_model_promise(m, 0, 1), KR_PRECISION_DEFAULT / 2, "the file's promise stays");
    kr_model_destroy(m);
    kr__model_file_free(f);

    m = kr_model_create(&(kr_model_desc_t){ .end_time = 10 });
    cr_assert(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "x" }));
    cr_assert(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "y" }));
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 5), KR_OK);
    cr_assert_eq(kr_model_set_promise(m, 0, 1, 2), KR_OK);
    cr_assert_eq(kr_model_promise(m, 0, 1), 2);
    kr_model_destroy(m);
}
