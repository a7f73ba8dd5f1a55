/* The network path: the determinism checks of test_cli_mpi.c (phold,
 * factory, ecology cut in regions; both algorithms) with the ranks talking
 * over TCP on the loopback interface (Open MPI's ob1 messaging over the
 * "tcp" transport, as between nodes) instead of shared memory: the same
 * checksum, state digest and per-simulator event counts as one process
 * (which test_cli_mpi.c shows shared memory gives, on 2 and 4 ranks, with
 * the same examples). A run that allows no transport between
 * processes ("self" alone) fails, which shows the choice of transport is
 * what carries the messages. */
#include "spawn.h"

TestSuite(cli_tcp, .fini = cli_cleanup);

typedef enum { ONE_PROCESS, TCP, NO_TRANSPORT } path_t;

static const char *const path_names[] = { "one process", "TCP", "self only" };

/* Runs kairos on np ranks over `path`; returns the exit status, the stats
 * in *stats (NULL when it failed). */
static int run(path_t path, int np, const char *model, const char *sync, const char *set, json_t **stats)
{
    /* ob1 is the messaging layer that uses the btl list; UCX, where
     * present, would bypass it. */
    setenv("OMPI_MCA_pml", "ob1", 1);
    setenv("OMPI_MCA_btl", path == TCP ? "tcp,self" : "self", 1);
    setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1);
    const char *out = cli_path("stats.json");
    unlink(out);
    char n[8];
    snprintf(n, sizeof n, "%d", np);
    char *argv[32];
    int argc = 0;
    if (path != ONE_PROCESS) {
        argv[argc++] = getenv("MPIRUN");
        argv[argc++] = "-np";
        argv[argc++] = n;
        argv[argc++] = "--oversubscribe";
    }
    argv[argc++] = getenv("KAIROS_BIN");
    const char *rest[] = { "run", model, "-o", out, "--quiet", "--sync", sync, set ? "--set" : NULL, set, NULL };
    for (int i = 0; rest[i]; i++) argv[argc++] = (char *)rest[i];
    argv[argc] = NULL;
    cr_assert(argv[0], "MPIRUN and KAIROS_BIN must be set");
    cli_result_t r = cli_spawn(argv);
    int status = r.status;
    if (status == 0 || path != NO_TRANSPORT)
        cr_assert_eq(status, 0, "%s on %d ranks over %s (%s): %s", model, np, path_names[path], sync, r.err);
    cli_free(&r);
    json_error_t e;
    *stats = status == 0 ? json_load_file(out, 0, &e) : NULL;
    if (status == 0) cr_assert(*stats, "%s", e.text);
    return status;
}

static const char *str(json_t *stats, const char *key)
{
    const char *s = json_string_value(json_object_get(stats, key));
    return s ? s : "";
}

static void same_over_tcp(const char *example, const char *set)
{
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/%s", getenv("KAIROS_SOURCE_ROOT"), example);
    const char *syncs[] = { "null-message", "window" };
    const struct { path_t path; int np; } runs[] = { { ONE_PROCESS, 1 }, { TCP, 2 }, { TCP, 4 } };
    json_t *ref = NULL;
    for (size_t y = 0; y < 2; y++)
        for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
            json_t *s;
            run(runs[k].path, runs[k].np, model, syncs[y], set, &s);
            if (!ref) {
                ref = s;
                cr_assert(str(ref, "checksum")[0], "a checksum");
                continue;
            }
            cr_assert_str_eq(str(s, "checksum"), str(ref, "checksum"), "%s on %d ranks over %s (%s)", example,
                             runs[k].np, path_names[runs[k].path], syncs[y]);
            cr_assert_str_eq(str(s, "state_digest"), str(ref, "state_digest"), "%s on %d ranks over %s (%s)",
                             example, runs[k].np, path_names[runs[k].path], syncs[y]);
            json_t *a = json_object_get(s, "simulators"), *b = json_object_get(ref, "simulators");
            cr_assert_eq(json_array_size(a), json_array_size(b));
            int max_rank = 0;
            for (size_t i = 0; i < json_array_size(a); i++) {
                json_t *sa = json_array_get(a, i), *sb = json_array_get(b, i);
                cr_assert_eq(json_integer_value(json_object_get(sa, "events")),
                             json_integer_value(json_object_get(sb, "events")), "%s: simulator %zu", example, i);
                int rk = (int)json_integer_value(json_object_get(sa, "rank"));
                if (rk > max_rank) max_rank = rk;
            }
            if (runs[k].np > 1) {
                cr_assert_gt(max_rank, 0, "%s: the simulators were spread over the ranks", example);
                cr_assert_gt(json_integer_value(json_object_get(s, "messages")), 0,
                             "%s: messages crossed between ranks", example);
            }
            json_decref(s);
        }
    json_decref(ref);
}

Test(cli_tcp, phold_same_over_tcp, .timeout = 120) { same_over_tcp("phold.json", "end_time=40"); }
Test(cli_tcp, factory_same_over_tcp, .timeout = 120) { same_over_tcp("factory.json", NULL); }
Test(cli_tcp, ecology_regions_same_over_tcp, .timeout = 120)
{
    same_over_tcp("ecology.json", "simulators.eco.regions=[2,2]");
}

/* With "self" alone two ranks have no way to reach each other: the run
 * fails, so the btl list above is what chose the transport. */
Test(cli_tcp, no_transport_between_ranks_fails, .timeout = 60)
{
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/phold.json", getenv("KAIROS_SOURCE_ROOT"));
    json_t *s;
    cr_assert_neq(run(NO_TRANSPORT, 2, model, "null-message", "end_time=40", &s), 0,
                  "two ranks ran with no transport between them");
}
