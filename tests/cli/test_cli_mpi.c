/* kairos under mpirun -np 2 (MPIRUN): exit status 0 and the same checksum
 * as a run on one rank. */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include "spawn.h"
#include "kairos/region.h"

TestSuite(cli_mpi, .fini = cli_cleanup);

Test(cli_mpi, factory_two_ranks_same_checksum)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    cr_assert(root && bin && mpirun, "KAIROS_SOURCE_ROOT, KAIROS_BIN and MPIRUN are needed");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    char one[600], two[600];
    snprintf(one, sizeof one, "%s", cli_path("np1.json"));
    snprintf(two, sizeof two, "%s", cli_path("np2.json"));

    cli_result_t r = kairos("run", model, "-o", one, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);

    char *argv[] = { (char *)mpirun, "-np", "2", "--oversubscribe", (char *)bin, "run", model, "-o", two, "--quiet",
                     NULL };
    r = cli_spawn(argv);
    cr_assert_eq(r.status, 0, "mpirun: %s", r.err);
    cli_free(&r);

    char *a = cli_checksum(one), *b = cli_checksum(two);
    cr_assert_str_eq(a, b, "one rank and two ranks");
    free(a), free(b);
    json_error_t e;
    json_t *s = json_load_file(two, 0, &e);
    cr_assert(s);
    cr_assert_eq(json_integer_value(json_object_get(s, "ranks")), 2);
    json_decref(s);
}

/* The idle-rank warning names the ranks the plan leaves empty, pins and
 * zero-promise groups included (it named ranks by count: "ranks 2-3"
 * when 0 and 1 were the idle ones, and nothing when pins left a rank
 * idle with no more ranks than simulators). */
Test(cli_mpi, idle_ranks_named_from_the_plan)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    cr_assert(root && bin && mpirun, "KAIROS_SOURCE_ROOT, KAIROS_BIN and MPIRUN are needed");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    static const struct { const char *np, *line, *bath, *want; } cases[] = {
        { "4", "3", "1", "kairos: warning: 4 ranks for 3 simulators: ranks 0, 2 idle\n" },
        { "2", "1", "1", "kairos: warning: 2 ranks for 3 simulators: rank 0 idles\n" },
        { "2", "1", "0", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[64], robots[64], bath[64];
        snprintf(line, sizeof line, "simulators.AssemblyLine.rank=%s", cases[i].line);
        snprintf(robots, sizeof robots, "simulators.TransportRobots.rank=%s", cases[i].line);
        snprintf(bath, sizeof bath, "simulators.ChemicalBath.rank=%s", cases[i].bath);
        char *argv[] = { (char *)mpirun, "-np", (char *)cases[i].np, "--oversubscribe", (char *)bin, "run", model,
                         "--end", "100", "--set", line, "--set", robots, "--set", bath, "--quiet",
                         "-o", (char *)cli_path("idle.json"), NULL };
        cli_result_t r = cli_spawn(argv);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert_str_eq(r.err, cases[i].want, "-np %s, the line on %s, the bath on %s", cases[i].np, cases[i].line,
                         cases[i].bath);
        cli_free(&r);
    }
    /* replications: within each group, by the same plan */
    char *argv[] = { (char *)mpirun, "-np", "2", "--oversubscribe", (char *)bin, "run", model, "--end", "100",
                     "--replications", "2", "--group-ranks", "2", "--set", "simulators.AssemblyLine.rank=1",
                     "--set", "simulators.TransportRobots.rank=1", "--set", "simulators.ChemicalBath.rank=1",
                     "--quiet", "-o", (char *)cli_path("idle-reps.json"), NULL };
    cli_result_t r = cli_spawn(argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "kairos: warning: groups of 2 ranks for 3 simulators: rank 0 of each group idles\n");
    cli_free(&r);
}

/* Runs MODEL on `np` ranks (np 0: no mpirun) writing the stats to `stats`,
 * with up to three more option pairs (NULL: none). */
static cli_result_t run_on(int np, const char *model, const char *stats, const char *a1, const char *a2,
                           const char *a3, const char *a4, const char *a5, const char *a6)
{
    const char *args[] = { "run", model, "-o", stats, "--quiet", a1, a2, a3, a4, a5, a6, NULL };
    return kairos_on(np, args);
}

/* The determinism contract: the same checksum and the same event count of
 * every simulator on 1, 2 and 4 ranks and with both algorithms (with
 * `every_pair`, each rank count with each algorithm); `set` and `set2` are
 * --set overrides (NULL: none). */
static void same_everywhere_runs(const char *example, const char *set, const char *set2, bool every_pair)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    if (example[0] == '/') snprintf(model, sizeof model, "%s", example); /* a model a test wrote */
    else snprintf(model, sizeof model, "%s/examples/%s", root, example);
    const struct { int np; const char *sync; } runs[] = { { 0, "null-message" }, { 1, "window" }, { 2, "null-message" },
                                                          { 2, "window" }, { 4, "null-message" }, { 4, "window" },
                                                          { 1, "null-message" } };
    size_t run_count = every_pair ? sizeof runs / sizeof runs[0] : 5;
    json_t *ref = NULL;
    char window_run[17] = "";
    for (size_t i = 0; i < run_count; i++) {
        char stats[600];
        snprintf(stats, sizeof stats, "%s", cli_path("stats.json"));
        cli_result_t r = run_on(runs[i].np, model, stats, "--sync", runs[i].sync, set ? "--set" : NULL, set,
                                set && set2 ? "--set" : NULL, set2);
        cr_assert_eq(r.status, 0, "%s on %d ranks (%s): %s", example, runs[i].np, runs[i].sync, r.err);
        cli_free(&r);
        json_error_t e;
        json_t *s = json_load_file(stats, 0, &e);
        cr_assert(s, "%s", e.text);
        if (!ref) {
            ref = s;
            continue;
        }
        cr_assert_str_eq(json_string_value(json_object_get(s, "checksum")),
                         json_string_value(json_object_get(ref, "checksum")), "%s on %d ranks (%s)", example,
                         runs[i].np, runs[i].sync);
        /* one model everywhere: the same identity; the run digest also
         * names the algorithm (runs[0] is null-message) */
        cr_assert_str_eq(json_string_value(json_object_get(s, "identity_digest")),
                         json_string_value(json_object_get(ref, "identity_digest")), "%s on %d ranks (%s)", example,
                         runs[i].np, runs[i].sync);
        const char *run = json_string_value(json_object_get(s, "run_digest"));
        cr_assert(run && strlen(run) == 16);
        if (!strcmp(runs[i].sync, "null-message"))
            cr_assert_str_eq(run, json_string_value(json_object_get(ref, "run_digest")), "%s on %d ranks", example,
                             runs[i].np);
        else if (!window_run[0]) {
            snprintf(window_run, sizeof window_run, "%s", run);
            cr_assert_str_neq(run, json_string_value(json_object_get(ref, "run_digest")), "the algorithm is in it");
        } else {
            cr_assert_str_eq(run, window_run, "%s on %d ranks (window)", example, runs[i].np);
        }
        json_t *a = json_object_get(s, "simulators"), *b = json_object_get(ref, "simulators");
        cr_assert_eq(json_array_size(a), json_array_size(b));
        for (size_t k = 0; k < json_array_size(a); k++)
            cr_assert_eq(json_integer_value(json_object_get(json_array_get(a, k), "events")),
                         json_integer_value(json_object_get(json_array_get(b, k), "events")), "simulator %zu", k);
        if (runs[i].np > 1) {
            /* the simulators really were spread over the ranks */
            int max_rank = 0;
            for (size_t k = 0; k < json_array_size(a); k++) {
                int rk = (int)json_integer_value(json_object_get(json_array_get(a, k), "rank"));
                if (rk > max_rank) max_rank = rk;
            }
            cr_assert(json_array_size(a) < 2 || max_rank > 0, "every simulator on rank 0");
        }
        /* The coordinator's traffic: none between processes on one; over
         * ranks every guarantee sent is a message, messages travel in
         * batches, and every window round is at least one reduction. */
        json_int_t messages = json_integer_value(json_object_get(s, "messages"));
        json_int_t batches = json_integer_value(json_object_get(s, "batches"));
        json_int_t nulls = json_integer_value(json_object_get(s, "null_messages"));
        json_int_t rounds = json_integer_value(json_object_get(s, "rounds"));
        json_int_t reductions = json_integer_value(json_object_get(s, "reductions"));
        if (runs[i].np <= 1) {
            cr_assert_eq(messages, 0, "%s on one process: %lld messages", example, (long long)messages);
            cr_assert_eq(batches, 0);
            cr_assert_eq(reductions, 0);
        } else {
            cr_assert_geq(messages, nulls, "%s on %d ranks", example, runs[i].np);
            cr_assert(batches <= messages && (batches > 0) == (messages > 0), "%s on %d ranks: %lld batches for %lld "
                      "messages", example, runs[i].np, (long long)batches, (long long)messages);
            /* sqss is one simulator: nothing crosses */
            cr_assert(json_array_size(a) < 2 || messages > 0, "%s on %d ranks: no message", example, runs[i].np);
            cr_assert_geq(reductions, rounds, "%s on %d ranks (%s)", example, runs[i].np, runs[i].sync);
            cr_assert(!strcmp(runs[i].sync, "window") ? rounds > 0 : reductions == 0);
        }
        json_decref(s);
    }
    json_decref(ref);
}

static void same_everywhere_set(const char *example, const char *set)
{
    same_everywhere_runs(example, set, NULL, false);
}
static void same_everywhere(const char *example) { same_everywhere_set(example, NULL); }

Test(cli_mpi, factory_same_on_1_2_4_ranks, .timeout = 240) { same_everywhere("factory.json"); }
Test(cli_mpi, phold_same_on_1_2_4_ranks, .timeout = 240) { same_everywhere_set("phold.json", "end_time=40"); }
Test(cli_mpi, sqss_same_on_1_2_4_ranks, .timeout = 240) { same_everywhere("sqss.json"); }
/* 51 simulators fanning in: 1, 2 and 4 ranks, each with both algorithms. */
Test(cli_mpi, rows_same_on_1_2_4_ranks_both_syncs, .timeout = 240)
{
    same_everywhere_runs("rows.json", "end_time=600", NULL, true);
}
/* 301 simulators fanning in: at least 64 on a rank even on 4, so that
 * the scans keep lists and deliveries from other ranks put the groups
 * they touch on them (schedulers/coordinator.c, "What a delivery
 * touched"); the final simulator's bound comes from its min-tree. */
Test(cli_mpi, rows_many_lines_same_on_1_2_4_ranks_both_syncs, .timeout = 240)
{
    same_everywhere_runs("rows.json", "simulators.line.count=300", "end_time=300", true);
}
/* 12 simulators, each with 11 out-edges: kr__edge finds them by hash
 * beyond 8, and guarantees on direct edges move bounds only when they were
 * the least (schedulers/coordinator.c); every rank count and algorithm. */
Test(cli_mpi, phold_wide_fan_out_same_on_1_2_4_ranks_both_syncs, .timeout = 240)
{
    same_everywhere_runs("phold.json", "simulators.phold.count=12", "end_time=4", true);
}

/* The stats of a run of examples/phold.json with `count` simulators on np
 * ranks, the algorithm left to auto (the default). */
static json_t *phold_auto_run(int np, const char *count)
{
    char model[1024], stats[600];
    snprintf(model, sizeof model, "%s/examples/phold.json", getenv("KAIROS_SOURCE_ROOT"));
    snprintf(stats, sizeof stats, "%s", cli_path("auto.json"));
    cli_result_t r = run_on(np, model, stats, "--set", count, "--set", "end_time=4", NULL, NULL);
    cr_assert_eq(r.status, 0, "%s on %d ranks: %s", count, np, r.err);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s", e.text);
    cr_assert_str_eq(json_string_value(json_object_get(s, "sync_requested")), "auto");
    return s;
}

/* auto (docs/performance.md): 12 simulators with 11 in-edges each run the
 * window algorithm, 4 with 3 each null messages, on every rank count, with
 * the results of the algorithm named. */
Test(cli_mpi, phold_wide_auto_chooses_by_fan_in_same_results, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024], stats[600];
    snprintf(model, sizeof model, "%s/examples/phold.json", root);
    snprintf(stats, sizeof stats, "%s", cli_path("named.json"));
    cli_result_t r = run_on(0, model, stats, "--sync", "null-message", "--set", "simulators.phold.count=12", "--set",
                            "end_time=4");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    char *want = cli_checksum(stats);
    const int nps[] = { 0, 2, 4 };
    for (int i = 0; i < 3; i++) {
        json_t *s = phold_auto_run(nps[i], "simulators.phold.count=12");
        cr_assert_str_eq(json_string_value(json_object_get(s, "sync")), "window", "on %d ranks", nps[i]);
        cr_assert_gt(json_integer_value(json_object_get(s, "rounds")), 0);
        cr_assert_str_eq(json_string_value(json_object_get(s, "checksum")), want, "on %d ranks", nps[i]);
        json_decref(s);
    }
    json_t *s = phold_auto_run(2, "simulators.phold.count=4");
    cr_assert_str_eq(json_string_value(json_object_get(s, "sync")), "null-message");
    cr_assert_eq(json_integer_value(json_object_get(s, "rounds")), 0);
    json_decref(s);
    free(want);
}

/* A simulator pinned to rank 1 with a bad parameter: the error is found
 * there, printed once (by rank 0), every rank exits 2, no stats file. */
Test(cli_mpi, error_on_rank_1_is_printed_once, .timeout = 120)
{
    const char *model = cli_path("bad.json");
    cli_write(model, "{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'sqss'},"
                     " {'name': 'b', 'kind': 'sqss', 'rank': 1, 'params': {'capacity': 0}}]}");
    char stats[600];
    snprintf(stats, sizeof stats, "%s", cli_path("bad-stats.json"));
    cli_result_t r = run_on(2, model, stats, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "simulators[1].params.capacity"), "%s", r.err);
    const char *first = strstr(r.err, "capacity");
    cr_assert(first && !strstr(first + 1, "simulators[1].params.capacity"), "printed twice: %s", r.err);
    cr_assert(!cli_exists(stats), "a stats file was left");
    cli_free(&r);
}

/* Messages delayed and reordered on their way (KAIROS_CHAOS_SEED) change
 * nothing: the same checksum on 2 ranks, with both algorithms. */
Test(cli_mpi, reordered_messages_same_checksum, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    char ref[600];
    snprintf(ref, sizeof ref, "%s", cli_path("ref.json"));
    cli_result_t r = run_on(0, model, ref, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    char *want = cli_checksum(ref);
    const char *syncs[] = { "null-message", "window" };
    for (int i = 0; i < 2; i++) {
        char stats[600];
        snprintf(stats, sizeof stats, "%s", cli_path("chaos.json"));
        setenv("KAIROS_CHAOS_SEED", i ? "77" : "13", 1);
        char *argv[] = { (char *)mpirun, "-np", "2", "--oversubscribe", "-x", "KAIROS_CHAOS_SEED", (char *)bin, "run",
                         model, "-o", stats, "--quiet", "--sync", (char *)syncs[i], NULL };
        r = cli_spawn(argv);
        unsetenv("KAIROS_CHAOS_SEED");
        cr_assert_eq(r.status, 0, "%s: %s", syncs[i], r.err);
        cli_free(&r);
        char *got = cli_checksum(stats);
        cr_assert_str_eq(got, want, "%s under reordering", syncs[i]);
        free(got);
    }
    free(want);
}

/* A 2-rank PHOLD trace: one file joined by rank 0, spans of both ranks,
 * and the ranks busy at the same time (they overlap). End 25 keeps the
 * trace near 5 MB: reading 21 MB of it took a minute under the
 * sanitizers. */
Test(cli_mpi, two_rank_trace_overlaps, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    char model[1024], trace[600], stats[600];
    snprintf(model, sizeof model, "%s/examples/phold.json", root);
    snprintf(trace, sizeof trace, "%s", cli_path("trace.json"));
    snprintf(stats, sizeof stats, "%s", cli_path("tstats.json"));
    char *argv[] = { (char *)mpirun, "-np", "2", "--oversubscribe", (char *)bin, "run", model, "--quiet", "-o", stats,
                     "--trace", trace, "--set", "simulators.phold.count=2", "--set", "end_time=25", NULL };
    cli_result_t r = cli_spawn(argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    json_error_t e;
    json_t *t = json_load_file(trace, 0, &e);
    cr_assert(t, "trace does not parse: %s", e.text);
    json_t *events = json_object_get(t, "traceEvents");
    /* busy spans per rank as [begin, end) */
    size_t n = json_array_size(events);
    double *b0 = calloc(n, sizeof *b0), *e0 = calloc(n, sizeof *e0), *b1 = calloc(n, sizeof *b1),
           *e1 = calloc(n, sizeof *e1);
    size_t n0 = 0, n1 = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(json_string_value(json_object_get(ev, "name")) ? json_string_value(json_object_get(ev, "name")) : "",
                   "busy"))
            continue;
        double ts = json_number_value(json_object_get(ev, "ts")), dur = json_number_value(json_object_get(ev, "dur"));
        if (json_integer_value(json_object_get(ev, "pid")) == 0) { b0[n0] = ts; e0[n0++] = ts + dur; }
        else { b1[n1] = ts; e1[n1++] = ts + dur; }
    }
    cr_assert(n0 > 0 && n1 > 0, "busy spans of both ranks (%zu, %zu)", n0, n1);
    bool overlap = false;
    for (size_t i = 0, j = 0; i < n0 && j < n1 && !overlap;) {
        if (b0[i] < e1[j] && b1[j] < e0[i] && e0[i] > b0[i] && e1[j] > b1[j]) overlap = true;
        else if (e0[i] < e1[j]) i++;
        else j++;
    }
    cr_assert(overlap, "the two ranks were never busy at the same time");
    free(b0), free(e0), free(b1), free(e1);
    json_decref(t);
}

/* Walkers (issue 7): thousands of walkers on a world cut 1x1, 2x1 and 2x2,
 * on 1, 2 and 4 ranks, both algorithms. At every step each walker acts
 * once in exactly one region: the audit sum over regions of hash(id, step)
 * for every act must equal the sum over steps 1..S and ids 1..N (a lost or
 * duplicated walker at any step changes it), the acts number N x S, the
 * final count is N, and stats.state_digest is the same for every run. */
Test(cli_mpi, walkers_same_answer_for_every_cut_and_rank_count, .timeout = 600)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/walkers.json", root);
    const int64_t n = 5000, steps = 50; /* examples/walkers.json */
    uint64_t want = 0;
    for (int64_t s = 1; s <= steps; s++)
        for (int64_t id = 1; id <= n; id++) want += kr_region_agent_hash((uint64_t)id, (int32_t)s, 0, 0xa0d17);
    const char *cuts[] = { "simulators.walkers.regions=[1,1]", "simulators.walkers.regions=[2,1]",
                           "simulators.walkers.regions=[2,2]" };
    const int nps[] = { 1, 2, 4 };
    const char *syncs[] = { "null-message", "window" };
    char digest[32] = "";
    for (size_t c = 0; c < 3; c++)
        for (size_t k = 0; k < 3; k++)
            for (size_t y = 0; y < 2; y++) {
                char stats[600];
                snprintf(stats, sizeof stats, "%s", cli_path("walkers.json"));
                const char *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
                char np[8];
                snprintf(np, sizeof np, "%d", nps[k]);
                char *argv[] = { (char *)mpirun, "-np", np, "--oversubscribe", (char *)bin, "run", model, "-o", stats,
                                 "--quiet", "--sync", (char *)syncs[y], "--set", (char *)cuts[c], "--set",
                                 "simulators.walkers.params.audit=true", NULL };
                cli_result_t r = cli_spawn(argv);
                cr_assert_eq(r.status, 0, "%s on %d ranks (%s): %s", cuts[c], nps[k], syncs[y], r.err);
                cli_free(&r);
                json_error_t e;
                json_t *s = json_load_file(stats, 0, &e);
                cr_assert(s, "%s", e.text);
                uint64_t audit = 0;
                int64_t acts = 0, agents = 0;
                size_t i;
                json_t *sim;
                json_array_foreach(json_object_get(s, "simulators"), i, sim) {
                    json_t *st = json_object_get(sim, "stats");
                    audit += strtoull(json_string_value(json_object_get(st, "audit_sum")), NULL, 16);
                    acts += json_integer_value(json_object_get(st, "audit_acts"));
                    agents += json_integer_value(json_object_get(st, "agents"));
                }
                cr_assert_eq(agents, n, "%s on %d ranks (%s): %lld walkers at the end", cuts[c], nps[k], syncs[y],
                             (long long)agents);
                cr_assert_eq(acts, n * steps, "%s on %d ranks (%s): acts", cuts[c], nps[k], syncs[y]);
                cr_assert_eq(audit, want, "%s on %d ranks (%s): some step lost or duplicated a walker", cuts[c],
                             nps[k], syncs[y]);
                const char *d = json_string_value(json_object_get(s, "state_digest"));
                cr_assert(d, "stats.state_digest");
                if (!digest[0]) snprintf(digest, sizeof digest, "%s", d);
                cr_assert_str_eq(d, digest, "%s on %d ranks (%s)", cuts[c], nps[k], syncs[y]);
                json_decref(s);
            }
}

/* A 2x2 cut on 4 ranks: every rank runs one region, which stores its own
 * cells plus a halo of one cell, never the whole 60 x 40 world. */
Test(cli_mpi, walkers_ranks_store_own_cells_and_halo, .timeout = 120)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024], stats[600];
    snprintf(model, sizeof model, "%s/examples/walkers.json", root);
    snprintf(stats, sizeof stats, "%s", cli_path("walkers-store.json"));
    cli_result_t r = run_on(4, model, stats, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s", e.text);
    int64_t per_rank[4] = { 0 };
    size_t i;
    json_t *sim;
    json_array_foreach(json_object_get(s, "simulators"), i, sim) {
        json_t *st = json_object_get(sim, "stats");
        int rank = (int)json_integer_value(json_object_get(sim, "rank"));
        cr_assert(rank >= 0 && rank < 4);
        cr_assert_eq(json_integer_value(json_object_get(st, "own_cells")), 30 * 20);
        cr_assert_eq(json_integer_value(json_object_get(st, "stored_cells")), 31 * 21, "own cells + a halo of 1");
        cr_assert_eq(json_integer_value(json_object_get(st, "grid_cells")), 31 * 21, "the spatial grid as well");
        per_rank[rank] += json_integer_value(json_object_get(st, "stored_cells"));
    }
    for (int k = 0; k < 4; k++) cr_assert_eq(per_rank[k], 31 * 21, "rank %d stores one region", k);
    json_decref(s);
}

/* ---- replications and sweeps over groups of ranks ---- */

/* The same CSV, byte for byte, on 1 rank and on 4 (four groups). */
Test(cli_mpi, sweep_csv_same_on_1_and_4_ranks, .timeout = 240)
{
    const char *model = cli_path("sweep.json");
    cli_write(model, CLI_MM1);
    char one[600], four[600];
    snprintf(one, sizeof one, "%s", cli_path("np1.csv"));
    snprintf(four, sizeof four, "%s", cli_path("np4.csv"));
    const char *a1[] = { "sweep", model, "--vary", "simulators.mm1.params.arrival.mean=[4,2,1.25]", "--vary",
                         "simulators.mm1.params.capacity=[2,1000]", "--replications", "3", "-o", one, "--quiet", NULL };
    cli_result_t r = kairos_on(0, a1);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    const char *a4[] = { "sweep", model, "--vary", "simulators.mm1.params.arrival.mean=[4,2,1.25]", "--vary",
                         "simulators.mm1.params.capacity=[2,1000]", "--replications", "3", "-o", four, NULL };
    r = kairos_on(4, a4);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "on 4 ranks (4 groups of 1)"), "%s", r.out);
    cli_free(&r);
    char *x = cli_slurp(one), *y = cli_slurp(four);
    cr_assert(x && y);
    cr_assert_eq(cli_lines(x), 7);
    cr_assert_str_eq(x, y, "1 rank and 4 ranks");
    free(x), free(y);
}

/* Pooled results and every replication's figures identical on 1 rank, on
 * 4 ranks in four groups of one, and in two groups of two (each
 * replication then spread over a group's communicator). */
Test(cli_mpi, replications_same_on_any_grouping, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    const struct { int np; const char *group; } runs[] = { { 0, NULL }, { 4, NULL }, { 4, "2" } };
    json_t *ref = NULL;
    for (size_t i = 0; i < 3; i++) {
        char stats[600];
        snprintf(stats, sizeof stats, "%s", cli_path("reps.json"));
        const char *args[] = { "run", model, "--end", "600", "--replications", "4", "-o", stats, "--quiet",
                               runs[i].group ? "--group-ranks" : NULL, runs[i].group, NULL };
        cli_result_t r = kairos_on(runs[i].np, args);
        cr_assert_eq(r.status, 0, "run %zu: %s", i, r.err);
        cli_free(&r);
        json_error_t e;
        json_t *s = json_load_file(stats, 0, &e);
        cr_assert(s, "%s", e.text);
        if (runs[i].group) {
            cr_assert_eq(json_integer_value(json_object_get(s, "groups")), 2);
            cr_assert_eq(json_integer_value(json_object_get(s, "group_ranks")), 2);
        }
        if (!ref) {
            ref = s;
            cr_assert_eq(json_array_size(json_object_get(s, "replications")), 4);
            continue;
        }
        cr_assert(json_equal(json_object_get(s, "pooled"), json_object_get(ref, "pooled")), "pooled, run %zu", i);
        cr_assert(json_equal(json_object_get(s, "replications"), json_object_get(ref, "replications")),
                  "replications, run %zu", i);
        json_decref(s);
    }
    json_decref(ref);
}

/* A point whose params only the kind refuses, run by the second group: every
 * rank stops, the message once, exit 2, no CSV. */
Test(cli_mpi, error_in_one_group_stops_every_rank, .timeout = 120)
{
    const char *model = cli_path("sweep-bad.json");
    cli_write(model, CLI_MM1);
    char csv[600];
    snprintf(csv, sizeof csv, "%s", cli_path("bad.csv"));
    const char *args[] = { "sweep", model, "--vary", "simulators.mm1.params.capacity=[3,0,5]", "-o", csv, "--quiet",
                           NULL };
    cli_result_t r = kairos_on(2, args);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    const char *first = strstr(r.err, "simulators[0].params.capacity: expected");
    cr_assert(first, "%s", r.err);
    cr_assert(!strstr(first + 1, "simulators[0].params.capacity: expected"), "printed twice: %s", r.err);
    cr_assert(!cli_exists(csv) && !cli_exists(cli_path("bad.csv.partial")), "a CSV was left");
    cli_free(&r);
}

/* Ecology (issue 7): examples/ecology.json cut 1x1, 2x1 and 2x2 on 1, 2
 * and 4 ranks with both algorithms gives one stats.state_digest (every
 * agent's id, cell and exact energy) and one per-step CSV (plants, swarms,
 * herbivores, plant energy summed over regions), and something happened:
 * swarms crossed region borders and plants were eaten. */
Test(cli_mpi, ecology_same_answer_for_every_cut_and_rank_count, .timeout = 600)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/ecology.json", root);
    const char *cuts[] = { "simulators.eco.regions=[1,1]", "simulators.eco.regions=[2,1]",
                           "simulators.eco.regions=[2,2]" };
    const int nps[] = { 1, 2, 4 };
    const char *syncs[] = { "null-message", "window" };
    char digest[32] = "";
    char *series0 = NULL;
    for (size_t c = 0; c < 3; c++)
        for (size_t k = 0; k < 3; k++)
            for (size_t y = 0; y < 2; y++) {
                char stats[600], series[600];
                snprintf(stats, sizeof stats, "%s", cli_path("ecology.json"));
                snprintf(series, sizeof series, "%s", cli_path("ecology.csv"));
                const char *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
                char np[8];
                snprintf(np, sizeof np, "%d", nps[k]);
                char *argv[] = { (char *)mpirun, "-np", np, "--oversubscribe", (char *)bin, "run", model, "-o", stats,
                                 "--series", series, "--quiet", "--end", "25", "--sync", (char *)syncs[y], "--set",
                                 (char *)cuts[c], NULL };
                cli_result_t r = cli_spawn(argv);
                cr_assert_eq(r.status, 0, "%s on %d ranks (%s): %s", cuts[c], nps[k], syncs[y], r.err);
                cli_free(&r);
                json_error_t e;
                json_t *s = json_load_file(stats, 0, &e);
                cr_assert(s, "%s", e.text);
                const char *d = json_string_value(json_object_get(s, "state_digest"));
                cr_assert(d, "stats.state_digest");
                if (!digest[0]) snprintf(digest, sizeof digest, "%s", d);
                cr_assert_str_eq(d, digest, "%s on %d ranks (%s)", cuts[c], nps[k], syncs[y]);
                int64_t migrants = 0, eaten = 0, plants = 0;
                size_t i;
                json_t *sim;
                json_array_foreach(json_object_get(s, "simulators"), i, sim) {
                    json_t *st = json_object_get(sim, "stats");
                    migrants += json_integer_value(json_object_get(st, "migrants_sent"));
                    eaten += json_integer_value(json_object_get(st, "plants_eaten"));
                    plants += json_integer_value(json_object_get(st, "plants"));
                }
                json_t *tot = json_object_get(json_object_get(s, "totals"), "eco"); /* the entry's name */
                cr_assert_eq(json_integer_value(json_object_get(tot, "plants")), plants,
                             "stats.totals sums the regions' plants");
                if (c > 0) cr_assert_gt(migrants, 0, "%s: agents crossed region borders", cuts[c]);
                cr_assert_gt(eaten, 0, "swarms ate plants");
                char *csv = cli_slurp(series);
                cr_assert(csv, "the series CSV was written");
                cr_assert(!strncmp(csv, "step,plants,swarms,herbivores,plant_energy\n0,", 45), "%.60s", csv);
                if (!series0) series0 = csv;
                else {
                    cr_assert_str_eq(csv, series0, "%s on %d ranks (%s): the per-step series", cuts[c], nps[k],
                                     syncs[y]);
                    free(csv);
                }
                json_decref(s);
            }
    /* steps 0 .. 25 */
    size_t rows = 0;
    for (const char *p = series0; *p; p++) rows += *p == '\n';
    cr_assert_eq(rows, 1 + 26);
    free(series0);
}

/* ---- one model on every rank (issue 16) ---- */

/* mpirun -np NP kairos ARGS..., each rank under a shell that writes
 * "rank exit S" with its own status to stderr (and mpirun told not to cut
 * the others short), so that every rank's status is seen. mpirun's own
 * status then says nothing (it is 0): kairos_on gives that one. */
static cli_result_t each_rank(int np, const char *const *args)
{
    const char *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np);
    char *argv[40] = { (char *)mpirun, "-np", nps, "--oversubscribe", "--mca", "orte_abort_on_non_zero_status", "0",
                       "/bin/sh", "-c", "\"$0\" \"$@\"; s=$?; echo \"rank exit $s\" >&2; exit $s", (char *)bin };
    int n = 11;
    for (int i = 0; args[i] && n < 39; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return cli_spawn(argv);
}

/* Every one of `np` ranks exited with `status`, and the message (printed
 * once, by rank 0) holds `what` (NULL: no check of the message). */
static void every_rank_exits(const cli_result_t *r, int np, int status, const char *what)
{
    char want[32];
    snprintf(want, sizeof want, "rank exit %d\n", status);
    int n = 0;
    for (const char *p = r->err; (p = strstr(p, "rank exit ")); p++) {
        cr_assert(!strncmp(p, want, strlen(want)), "a rank did not exit %d: %s", status, r->err);
        n++;
    }
    cr_assert_eq(n, np, "%d rank statuses for %d ranks: %s", n, np, r->err);
    if (!what) return;
    const char *at = strstr(r->err, what);
    cr_assert(at, "no \"%s\" in: %s", what, r->err);
    cr_assert(!strstr(at + 1, what), "printed twice: %s", r->err);
}

/* An output rank 0 cannot write (here the trace: a folder stands where its
 * .partial file would go) fails the run on every rank, after the run
 * itself succeeded: every rank exits 2, and no rank's event log, nor the
 * stats, is left under its final name. */
Test(cli_mpi, an_output_rank_0_cannot_write_fails_every_rank, .timeout = 120)
{
    char trace[600], logs[600], stats[600], partial[640];
    snprintf(trace, sizeof trace, "%s", cli_path("blocked-trace.json"));
    snprintf(logs, sizeof logs, "%s", cli_path("blocked-logs"));
    snprintf(stats, sizeof stats, "%s", cli_path("blocked-stats.json"));
    snprintf(partial, sizeof partial, "%s.partial", trace);
    cr_assert_eq(mkdir(partial, 0755), 0);
    char model[600];
    snprintf(model, sizeof model, "%s/examples/phold.json", getenv("KAIROS_SOURCE_ROOT"));
    const char *args[] = { "run", model, "--end", "5", "--quiet", "--trace", trace, "--event-log", logs,
                           "-o", stats, NULL };
    cli_result_t r = each_rank(2, args);
    every_rank_exits(&r, 2, 2, "cannot write");
    cli_free(&r);
    cr_assert(!cli_exists(stats), "the stats were left");
    for (int i = 0; i < 4; i++) {
        char log[700];
        snprintf(log, sizeof log, "%s/phold[%d].jsonl", logs, i);
        cr_assert(!cli_exists(log), "%s was left under its final name", log);
    }
    rmdir(partial);
}

/* Source (on rank 1) -> Sink (on rank 0), promise 0.5, both "meddler"
 * kinds from the test plug-in with Source's params `params`. */
static const char *meddler_model(const char *name, const char *params)
{
    const char *plugin = getenv("KAIROS_MEDDLER_PLUGIN");
    cr_assert(plugin, "KAIROS_MEDDLER_PLUGIN is not set");
    char text[2048];
    snprintf(text, sizeof text, "{'end_time': 10, 'plugins': ['%s'], 'simulators': ["
             "{'name': 'Sink', 'kind': 'meddler', 'rank': 0}, "
             "{'name': 'Source', 'kind': 'meddler', 'rank': 1, 'params': %s}], "
             "'dependencies': [{'from': 'Source', 'to': 'Sink', 'promise': 0.5}]}", plugin, params);
    const char *path = cli_path(name);
    cli_write(path, text);
    return path;
}

/* The kind of issue 16 lowers its promise in setup, which runs on rank 1
 * only: once a wire error ("event time before the target's current time")
 * with --sync window, now refused where promises come from, every rank
 * exiting 2, on 1 and on 2 ranks and with both algorithms. */
Test(cli_mpi, promise_changed_in_setup_is_refused_on_every_rank, .timeout = 120)
{
    const char *model = meddler_model("lower.json", "{'lower_promise': 0.1}");
    const char *stats = cli_path("lower-stats.json");
    const char *syncs[] = { "window", "null-message" };
    for (int i = 0; i < 2; i++) {
        const char *args[] = { "run", model, "--quiet", "-o", stats, "--sync", syncs[i], NULL };
        cli_result_t r = each_rank(2, args);
        every_rank_exits(&r, 2, 2, "kr_model_set_promises: the promises of a model built from");
        cr_assert(strstr(r.err, "come from its \"dependencies\""), "%s", r.err);
        cr_assert(!strstr(r.err, "bad message"), "%s", r.err);
        cr_assert(!cli_exists(stats));
        cli_free(&r);
        const char *one[] = { "run", model, "--quiet", "--sync", syncs[i], "--set", "simulators.Source.rank=0", NULL };
        r = each_rank(1, one);
        every_rank_exits(&r, 1, 2, "come from its \"dependencies\"");
        cli_free(&r);
    }
    /* mpirun's own status */
    const char *args[] = { "run", model, "--quiet", NULL };
    cli_result_t r = kairos_on(2, args);
    cr_assert_eq(r.status, 2, "mpirun exited %d: %s", r.status, r.err);
    cli_free(&r);
    /* A setup that ignores the refusal and goes on: the run still fails
     * (it ran to the end, exit 0, with the promise unchanged). */
    model = meddler_model("ignored.json", "{'lower_promise_ignored': 0.1}");
    const char *ignored[] = { "run", model, "--quiet", NULL };
    r = each_rank(2, ignored);
    every_rank_exits(&r, 2, 2, "kr_model_set_promises: the promises of a model built from");
    cli_free(&r);
    const char *ignored_one[] = { "run", model, "--quiet", "--set", "simulators.Source.rank=0", NULL };
    r = each_rank(1, ignored_one);
    every_rank_exits(&r, 1, 2, "come from its \"dependencies\"");
    cli_free(&r);
}

/* A component registered in setup exists on rank 1 only: the registries
 * are part of the model's identity, so the ranks refuse to run before the
 * first event (a world built from another registry would unpack wrongly). */
Test(cli_mpi, component_registered_in_setup_is_a_mismatch, .timeout = 120)
{
    const char *model = meddler_model("component.json", "{'register_component': 'extra'}");
    const char *args[] = { "run", model, "--quiet", NULL };
    cli_result_t r = each_rank(2, args);
    every_rank_exits(&r, 2, 2, "the model differs between ranks");
    cr_assert(strstr(r.err, "extra") || strstr(r.err, "component"), "the message names no component: %s", r.err);
    cli_free(&r);
    /* on one rank the model is what it is */
    const char *one[] = { "run", model, "--quiet", "--set", "simulators.Source.rank=0", NULL };
    r = each_rank(1, one);
    every_rank_exits(&r, 1, 0, NULL);
    cli_free(&r);
}

/* A simulator, a dependency or an event type added in setup would exist on
 * the setup's rank only: refused where it is made, on 2 ranks and on 1
 * (where a simulator added so crashed the run, and the others passed), and
 * also when the setup ignores the refusal. */
Test(cli_mpi, model_changed_in_setup_is_refused_on_any_ranks, .timeout = 120)
{
    const struct { const char *params, *fn; } cases[] = {
        { "{'add_dependency_from': 'Sink'}", "kr_model_add_dependency" },
        { "{'add_simulator': 'extra'}", "kr_model_add_sim" },
        { "{'add_event_type': 'extra'}", "kr_model_event_type" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *model = meddler_model("add.json", cases[i].params);
        char want[300];
        snprintf(want, sizeof want, "simulators[1] (Source, kind meddler): %s: called from the setup of 'Source': "
                 "a kind's setup must not change the model", cases[i].fn);
        const char *args[] = { "run", model, "--quiet", "--sync", "window", NULL };
        cli_result_t r = each_rank(2, args);
        every_rank_exits(&r, 2, 2, want);
        cli_free(&r);
        r = kairos_on(2, args);
        cr_assert_eq(r.status, 2, "mpirun exited %d: %s", r.status, r.err);
        cli_free(&r);
        const char *one[] = { "run", model, "--quiet", "--set", "simulators.Source.rank=0", NULL };
        r = each_rank(1, one);
        every_rank_exits(&r, 1, 2, want);
        cli_free(&r);
    }
}

/* MPMD: rank 0 runs `a0`, ranks 1.. run `a1` (np - 1 of them), each rank's
 * status seen as in each_rank. */
static cli_result_t mpmd(int np, const char *const *a0, const char *const *a1)
{
    const char *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np - 1);
    const char *shell = "\"$0\" \"$@\"; s=$?; echo \"rank exit $s\" >&2; exit $s";
    char *argv[64] = { (char *)mpirun, "--oversubscribe", "--mca", "orte_abort_on_non_zero_status", "0", "-np", "1",
                       "/bin/sh", "-c", (char *)shell, (char *)bin };
    int n = 11;
    for (int i = 0; a0[i] && n < 40; i++) argv[n++] = (char *)a0[i];
    const char *mid[] = { ":", "-np", nps, "/bin/sh", "-c", shell, bin };
    for (size_t i = 0; i < sizeof mid / sizeof mid[0]; i++) argv[n++] = (char *)mid[i];
    for (int i = 0; a1[i] && n < 63; i++) argv[n++] = (char *)a1[i];
    argv[n] = NULL;
    return cli_spawn(argv);
}

/* Ranks started with different inputs (a file edited on one node, an
 * option given to some ranks only) each name the first difference with
 * both values, every rank exiting 2: a promise, a time step, a params
 * entry, the end time (the run digest) and a sync algorithm. */
Test(cli_mpi, different_models_on_the_ranks_name_the_difference, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char factory[1024], walkers[1024];
    snprintf(factory, sizeof factory, "%s/examples/factory.json", root);
    snprintf(walkers, sizeof walkers, "%s/examples/walkers.json", root);
    const struct { const char *model, *option, *value, *what; } cases[] = {
        { factory, "--set", "dependencies.0.promise=0.1",
          "simulator 'AssemblyLine' promise to 'TransportRobots': 0 on rank 0, 0.1 on rank 1" },
        { walkers, "--set", "simulators.walkers.time_step=2", "simulator 'walkers[0]' time step: 1 on rank 0, 2 on rank 1" },
        { factory, "--set", "simulators.ChemicalBath.params.capacity=3", "simulators[2].params: " },
        { factory, "--end", "20", "end time: 3600 on rank 0, 20 on rank 1" },
        { factory, "--sync", "window", "sync: auto on rank 0, window on rank 1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *a0[] = { "run", cases[i].model, "--quiet", "--end", "20", NULL };
        const char *a1[] = { "run", cases[i].model, "--quiet", "--end", "20", cases[i].option, cases[i].value, NULL };
        if (!strcmp(cases[i].option, "--end")) a0[4] = "3600";
        cli_result_t r = mpmd(2, a0, a1);
        every_rank_exits(&r, 2, 2, cases[i].what);
        cr_assert(strstr(r.err, "the model differs between ranks"), "%s", r.err);
        cli_free(&r);
    }
    /* on 3 ranks, the first rank that differs is named */
    const char *a0[] = { "run", factory, "--quiet", "--end", "20", NULL };
    const char *a1[] = { "run", factory, "--quiet", "--end", "30", NULL };
    cli_result_t r = mpmd(3, a0, a1);
    every_rank_exits(&r, 3, 2, "end time: 20 on rank 0, 30 on rank 1");
    cli_free(&r);
}

/* A stale plug-in build on one node: the same model file and plug-in name,
 * the plug-in's bytes differ (a copy with one byte more, which still
 * loads). */
Test(cli_mpi, plugin_that_differs_between_ranks_is_caught, .timeout = 120)
{
    const char *plugin = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(plugin, "KAIROS_TEST_PLUGIN is not set");
    char *bytes = NULL;
    size_t size = 0;
    {
        FILE *in = fopen(plugin, "rb");
        cr_assert(in, "%s", plugin);
        fseek(in, 0, SEEK_END);
        size = (size_t)ftell(in);
        fseek(in, 0, SEEK_SET);
        bytes = malloc(size + 1);
        cr_assert(bytes && fread(bytes, 1, size, in) == size);
        fclose(in);
    }
    const char *model = "{'end_time': 10, 'plugins': ['libcounter.so'], 'simulators': "
                        "[{'name': 'a', 'kind': 'counter', 'params': {'period': 1}}, "
                        "{'name': 'b', 'kind': 'counter', 'params': {'period': 2}}]}";
    char paths[2][700];
    for (int side = 0; side < 2; side++) {
        char dir[520];
        snprintf(dir, sizeof dir, "%s", cli_path(side ? "node1" : "node0"));
        cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST);
        char so[700];
        snprintf(so, sizeof so, "%s/libcounter.so", dir);
        FILE *out = fopen(so, "wb");
        cr_assert(out);
        bytes[size] = '\n';
        cr_assert_eq(fwrite(bytes, 1, size + (size_t)side, out), size + (size_t)side);
        cr_assert_eq(fclose(out), 0);
        snprintf(paths[side], sizeof paths[side], "%s/model.json", dir);
        cli_write(paths[side], model);
    }
    free(bytes);
    const char *a0[] = { "run", paths[0], "--quiet", NULL }, *a1[] = { "run", paths[1], "--quiet", NULL };
    cli_result_t r = mpmd(2, a0, a1);
    char what[200];
    snprintf(what, sizeof what, "plugins[0] (libcounter.so): a file of %zu bytes with digest ", size);
    every_rank_exits(&r, 2, 2, what);
    snprintf(what, sizeof what, "on rank 0, a file of %zu bytes with digest ", size + 1);
    cr_assert(strstr(r.err, what), "%s", r.err);
    cli_free(&r);
    /* the same bytes on both: it runs */
    r = mpmd(2, a0, a0);
    every_rank_exits(&r, 2, 0, NULL);
    cli_free(&r);
}

/* ---- the trace closes every flow it opens (issue 16) ---- */

static int cmp_id(const void *a, const void *b)
{
    json_int_t x = *(const json_int_t *)a, y = *(const json_int_t *)b;
    return x < y ? -1 : x > y;
}

/* The factory's last sync-event is due after the end: its flow once had a
 * start and no end. Every flow of the trace now has one start and one end
 * with the same id, on 1 and on 2 ranks, and nothing else is lost (the
 * busy spans are all there). */
Test(cli_mpi, trace_closes_every_flow_it_opens, .timeout = 120)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    for (int np = 0; np <= 2; np += 2) {
        const char *trace = cli_path("flows.json"), *stats = cli_path("flows-stats.json");
        const char *args[] = { "run", model, "--quiet", "--trace", trace, "-o", stats, NULL };
        cli_result_t r = kairos_on(np, args);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cli_free(&r);
        json_error_t e;
        json_t *t = json_load_file(trace, 0, &e);
        cr_assert(t, "%s: %s (line %d)", trace, e.text, e.line);
        json_t *events = json_object_get(t, "traceEvents");
        size_t n = json_array_size(events), ns = 0, nf = 0;
        json_int_t *s = calloc(n + 1, sizeof *s), *f = calloc(n + 1, sizeof *f);
        cr_assert(s && f);
        json_int_t busy = 0;
        for (size_t i = 0; i < n; i++) {
            json_t *ev = json_array_get(events, i);
            const char *ph = json_string_value(json_object_get(ev, "ph"));
            cr_assert(ph);
            if (!strcmp(ph, "s")) s[ns++] = json_integer_value(json_object_get(ev, "id"));
            if (!strcmp(ph, "f")) f[nf++] = json_integer_value(json_object_get(ev, "id"));
            if (!strcmp(ph, "X") && !strcmp(json_string_value(json_object_get(ev, "name")), "busy"))
                busy += json_integer_value(json_object_get(json_object_get(ev, "args"), "events"));
        }
        cr_assert_gt(ns, 100, "%zu flows on %d ranks", ns, np);
        cr_assert_eq(ns, nf, "%zu starts, %zu ends on %d ranks", ns, nf, np);
        qsort(s, ns, sizeof *s, cmp_id);
        qsort(f, nf, sizeof *f, cmp_id);
        for (size_t i = 0; i < ns; i++) {
            cr_assert_eq(s[i], f[i], "flow %lld has no end, or %lld no start (%d ranks)", (long long)s[i],
                         (long long)f[i], np);
            cr_assert(i == 0 || s[i] != s[i - 1], "flow %lld starts twice", (long long)s[i]);
        }
        free(s), free(f);
        json_decref(t);
        json_t *st = json_load_file(stats, 0, &e);
        cr_assert(st);
        cr_assert_eq(busy, json_integer_value(json_object_get(st, "events")), "every event in a busy span");
        json_decref(st);
        for (int k = 0; k < 2; k++) {
            char frag[600];
            snprintf(frag, sizeof frag, "%s.rank%d", trace, k);
            cr_assert(!cli_exists(frag), "%s left behind", frag);
        }
    }
}

/* ---- failures, signals and faults: one outcome on every rank ----
 *
 * Each rank runs under tests/cli/rank_status.sh, which records its own exit
 * status (and pid) in the test's folder; with
 * `--mca orte_abort_on_non_zero_status 0` mpirun does not end the others
 * when one exits non-zero, so each status is the rank's own. */

/* Starts mpirun -np 2 [--mca orte_abort_on_non_zero_status 0] sh
 * rank_status.sh ARGS...; the statuses go to cli_tmp()/status.RANK. */
static pid_t start_ranks(bool each_own_status, const char *const *args)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *mpirun = getenv("MPIRUN");
    static char script[1024];
    snprintf(script, sizeof script, "%s/tests/cli/rank_status.sh", root);
    setenv("KAIROS_RANK_DIR", cli_tmp(), 1);
    for (int r = 0; r < 2; r++) {
        char p[64];
        snprintf(p, sizeof p, "status.%d", r);
        unlink(cli_path(p));
        snprintf(p, sizeof p, "pid.%d", r);
        unlink(cli_path(p));
    }
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)mpirun;
    argv[n++] = "-np";
    argv[n++] = "2";
    argv[n++] = "--oversubscribe";
    if (each_own_status) {
        argv[n++] = "--mca";
        argv[n++] = "orte_abort_on_non_zero_status";
        argv[n++] = "0";
        /* mpirun, given a signal, passes SIGTERM on after this many seconds
         * and kills the ranks as long after that (1 by default): a rank of
         * a sanitizer build on a loaded machine took up to 2 s to exit,
         * and was killed before its status was written */
        argv[n++] = "--mca";
        argv[n++] = "odls_base_sigkill_timeout";
        argv[n++] = "5";
    }
    argv[n++] = "-x";
    argv[n++] = "KAIROS_RANK_DIR";
    argv[n++] = "-x";
    argv[n++] = "KAIROS_BIN";
    argv[n++] = "/bin/sh";
    argv[n++] = script;
    for (int i = 0; args[i] && n < 39; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return cli_start(argv);
}

/* The status rank_status.sh recorded for `rank` (-1: none). */
static int rank_status(int rank)
{
    char name[32];
    snprintf(name, sizeof name, "status.%d", rank);
    char *s = cli_slurp(cli_path(name));
    int v = s && s[0] ? atoi(s) : -1;
    free(s);
    return v;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Two faulty simulators (tests/cli/faulty.c), a on rank 0 and b on rank 1,
 * with `extra_a` / `extra_b` added to their params and edges a -> b (promise
 * 1) and b -> a (promise pb; pb NULL: no edges). */
static const char *faulty_model(const char *name, const char *extra_a, const char *extra_b, const char *pb)
{
    static char paths[4][600];
    static int at;
    const char *plugin = getenv("KAIROS_FAULTY_PLUGIN");
    cr_assert(plugin && plugin[0] == '/', "KAIROS_FAULTY_PLUGIN");
    char text[2048];
    snprintf(text, sizeof text,
             "{'end_time': 30, 'plugins': ['%s'], 'simulators': ["
             "{'name': 'a', 'kind': 'faulty', 'rank': 0, 'params': {'period': 1%s}},"
             "{'name': 'b', 'kind': 'faulty', 'rank': 1, 'params': {'period': 1%s}}],"
             " 'dependencies': [%s%s%s]}", plugin, extra_a, extra_b,
             pb ? "{'from': 'a', 'to': 'b', 'promise': 1}, {'from': 'b', 'to': 'a', 'promise': " : "", pb ? pb : "",
             pb ? "}" : "");
    char *path = paths[at++ % 4];
    snprintf(path, sizeof paths[0], "%s", cli_path(name));
    cli_write(path, text);
    return path;
}

/* Runs MODEL on 2 ranks, each with its own status seen, then under a plain
 * mpirun; every rank and mpirun must end with `want`, the message (holding
 * `says`) printed once, and no stats file left. */
static void every_rank_ends_with(const char *model, const char *sync, int want, const char *says)
{
    char stats[600];
    snprintf(stats, sizeof stats, "%s", cli_path("fail-stats.json"));
    const char *args[] = { "run", model, "-o", stats, "--quiet", "--sync", sync, NULL };
    cli_result_t r = cli_wait(start_ranks(true, args));
    for (int k = 0; k < 2; k++)
        cr_assert_eq(rank_status(k), want, "%s (%s): rank %d exited %d, want %d: %s", model, sync, k, rank_status(k),
                     want, r.err);
    cr_assert_eq(count_of(r.err, says), 1, "%s (%s): \"%s\" not printed once: %s", model, sync, says, r.err);
    cr_assert_eq(count_of(r.err, "kairos: "), 1, "%s (%s): more than one message: %s", model, sync, r.err);
    cr_assert(!cli_exists(stats) && !cli_exists(cli_path("fail-stats.json.partial")), "a stats file was left");
    cli_free(&r);
    r = run_on(2, model, stats, "--sync", sync, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, want, "%s (%s): mpirun exited %d, want %d: %s", model, sync, r.status, want, r.err);
    cli_free(&r);
}

/* The idiom of docs/concepts.md: a kind passes a refused sync-event on with
 * kr_sim_fail(sim, kr_last_status(), ...). Whichever rank it happens on,
 * both ranks and mpirun exit 1 (the run failed), and rank 0 says it once. */
Test(cli_mpi, run_failure_on_either_rank_exits_1_everywhere, .timeout = 240)
{
    const char *on_a = faulty_model("fail-a.json", ", 'how': 'sync', 'peer': 'b', 'fail_at': 5", "", "1");
    const char *on_b = faulty_model("fail-b.json", "", ", 'how': 'sync', 'peer': 'a', 'fail_at': 5", "1");
    for (int y = 0; y < 2; y++) {
        const char *sync = y ? "window" : "null-message";
        every_rank_ends_with(on_a, sync, 1, "simulator 'a', time 5: pinging: sync-event from 'a'");
        every_rank_ends_with(on_b, sync, 1, "simulator 'b', time 5: pinging: sync-event from 'b'");
    }
}

/* The factory with a dependency back from the bath to the assembly line:
 * a continuous simulator with state events in a cycle, whose next time is
 * a tick past its state's until it integrates to its next stop, which
 * waits for the guarantees its own allow. Over ranks the null messages
 * deadlocked (each side held its guarantee to the next mark, waiting for
 * the other), and the window deadlocked on any number of ranks whenever a
 * cut (a safe point, here also a checkpoint every 7.3) held the line's
 * guarantee below the bath's next stop. The same checksum everywhere. */
Test(cli_mpi, a_continuous_simulator_in_a_cycle_runs_everywhere, .timeout = 240)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/factory.json", root);
    json_error_t e;
    json_t *model = json_load_file(path, 0, &e);
    cr_assert(model, "%s", e.text);
    json_object_set_new(model, "end_time", json_integer(200));
    json_array_append_new(json_object_get(model, "dependencies"),
                          json_pack("{s:s, s:s, s:f}", "from", "ChemicalBath", "to", "AssemblyLine", "promise", 0.5));
    json_t *bath = json_array_get(json_object_get(model, "simulators"), 2);
    cr_assert_str_eq(json_string_value(json_object_get(bath, "name")), "ChemicalBath");
    json_object_set_new(bath, "time_step", json_integer(8));
    char cycle[600], stats[600];
    snprintf(cycle, sizeof cycle, "%s", cli_path("bath-cycle.json"));
    cr_assert_eq(json_dump_file(model, cycle, 0), 0);
    json_decref(model);
    same_everywhere_runs(cycle, NULL, NULL, true);
    snprintf(stats, sizeof stats, "%s", cli_path("stats.json"));
    cli_result_t r = run_on(1, cycle, stats, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    json_t *ref = json_load_file(stats, 0, &e);
    cr_assert(ref, "%s", e.text);
    for (int np = 1; np <= 2; np++)
        for (int y = 0; y < 2; y++) {
            char dir[600];
            snprintf(dir, sizeof dir, "%s-%d-%d", cli_path("bath-ckpt"), np, y);
            r = run_on(np, cycle, stats, "--sync", y ? "window" : "null-message", "--checkpoint-every", "7.3",
                       "--checkpoint-dir", dir);
            cr_assert_eq(r.status, 0, "%d ranks, %s, a checkpoint every 7.3: %s", np, y ? "window" : "null-message",
                         r.err);
            cli_free(&r);
            json_t *got = json_load_file(stats, 0, &e);
            cr_assert(got, "%s", e.text);
            cr_assert_str_eq(json_string_value(json_object_get(got, "checksum")),
                             json_string_value(json_object_get(ref, "checksum")), "%d ranks, %s", np,
                             y ? "window" : "null-message");
            json_decref(got);
        }
    json_decref(ref);
    /* Two baths feeding each other, promises below their time steps: each
     * guarantees only its state's time plus the promise, so stops a whole
     * time step apart were never reached (a deadlock everywhere), and on one
     * rank a bath's integration ahead left its guarantee unsent when another
     * group ran in the same step. */
    char pair[600];
    snprintf(pair, sizeof pair, "%s", cli_path("two-baths.json"));
    cli_write(pair, "{'end_time': 100, 'simulators': ["
                    "{'name': 'B1', 'kind': 'bath', 'formalism': 'continuous', 'time_step': 2},"
                    "{'name': 'B2', 'kind': 'bath', 'formalism': 'continuous', 'time_step': 1.3}],"
                    " 'dependencies': [{'from': 'B1', 'to': 'B2', 'promise': 0.5},"
                    " {'from': 'B2', 'to': 'B1', 'promise': 0.5}]}");
    /* (the baths hold no parts and send nothing: same_everywhere_runs would
     * want messages between the ranks) */
    char first[17] = "";
    for (int np = 0; np <= 2; np++)
        for (int y = 0; y < 2; y++) {
            const char *sync = y ? "window" : "null-message";
            r = run_on(np, pair, stats, "--sync", sync, NULL, NULL, NULL, NULL);
            cr_assert_eq(r.status, 0, "two baths on %d ranks (%s): %s", np, sync, r.err);
            cli_free(&r);
            json_t *got = json_load_file(stats, 0, &e);
            cr_assert(got, "%s", e.text);
            const char *sum = json_string_value(json_object_get(got, "checksum"));
            if (!first[0]) snprintf(first, sizeof first, "%s", sum);
            cr_assert_str_eq(sum, first, "two baths on %d ranks (%s)", np, sync);
            json_decref(got);
        }
}

/* A kind that schedules onto another simulator's queue (a's handler or
 * setup, b on the other rank) is refused, as it is on one rank
 * (tests/unit/test_events.c): the event used to vanish on two ranks and run
 * on one. */
Test(cli_mpi, scheduling_on_another_simulator_is_refused_everywhere, .timeout = 240)
{
    const char *run = faulty_model("meddle.json", ", 'how': 'meddle', 'peer': 'b', 'fail_at': 5", "", "1");
    every_rank_ends_with(run, "null-message", 1, "simulator 'a', time 5: meddling: kr_schedule: 'b' is not executing");
    every_rank_ends_with(run, "window", 1, "simulator 'a', time 5: meddling: kr_schedule: 'b' is not executing");
    const char *setup = faulty_model("meddle-setup.json", ", 'peer': 'b', 'meddle_in_setup': true", "", "1");
    cli_result_t r = run_on(2, setup, cli_path("meddle-stats.json"), NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 2, "%d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "kr_schedule: 'b': called from the setup of 'a'"), "%s", r.err);
    cli_free(&r);
}

/* A deadlock spread over two ranks: 3 on every rank, with both algorithms. */
Test(cli_mpi, deadlock_exits_3_everywhere, .timeout = 240)
{
    const char *model = faulty_model("hold.json", ", 'how': 'hold', 'peer': 'b', 'fail_at': 5", "", "0");
    every_rank_ends_with(model, "null-message", 3, "deadlock: no simulator can advance");
    every_rank_ends_with(model, "window", 3, "deadlock: no simulator can advance");
}

/* Memory exhausted inside a kind (KAIROS_FAIL_ALLOC, counted on each rank):
 * the run ends on both ranks with 1 and a message naming the simulator,
 * whether the kind fails itself (a) or only logs it and goes on (b: the
 * coordinator ends the run; test_cli.c checks its message on one rank). */
Test(cli_mpi, allocation_failure_exits_1_everywhere, .timeout = 240)
{
    /* (no dependencies: nothing travels between the ranks, so the failing
     * allocation is the kinds' own on each rank) */
    const char *model = faulty_model("grow.json", ", 'how': 'grow', 'grow': 10, 'fail_at': 1",
                                     ", 'how': 'grow', 'grow': 10, 'fail_at': 1, 'ignore_errors': true", NULL);
    const char *only_b = faulty_model("grow-b.json", "",
                                      ", 'how': 'grow', 'grow': 10, 'fail_at': 1, 'ignore_errors': true", NULL);
    setenv("KAIROS_FAIL_ALLOC", "2", 1);
    char stats[600];
    snprintf(stats, sizeof stats, "%s", cli_path("fail-stats.json"));
    const char *args[] = { "run", model, "-o", stats, "--quiet", NULL };
    cli_result_t r = cli_wait(start_ranks(true, args));
    for (int rk = 0; rk < 2; rk++)
        cr_assert_eq(rank_status(rk), 1, "rank %d exited %d: %s", rk, rank_status(rk), r.err);
    cr_assert_eq(count_of(r.err, "kairos: "), 1, "one message: %s", r.err);
    /* both ranks failed on their own: the first one's failure is told */
    cr_assert(strstr(r.err, "kairos: simulator 'a'") && strstr(r.err, "out of memory"), "%s", r.err);
    cr_assert(!cli_exists(stats), "a stats file was left");
    cli_free(&r);
    /* b only logs the failure and goes on: the coordinator ends the run */
    r = run_on(2, only_b, stats, NULL, NULL, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert(strstr(r.err, "out of memory"), "%s", r.err);
    cli_free(&r);
    unsetenv("KAIROS_FAIL_ALLOC");
}

/* A long PHOLD run on 2 ranks, each under rank_status.sh; returns in its
 * middle. (With each_own_status, mpirun does not end a rank when the other
 * exits non-zero: each rank's status is its own.) */
static pid_t start_long_run(const char *stats, bool each_own_status)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    static char model[1024];
    snprintf(model, sizeof model, "%s/examples/phold.json", root);
    const char *args[] = { "run", model, "--end", "1e9", "-o", stats, "--quiet", NULL };
    pid_t pid = start_ranks(each_own_status, args);
    /* in the middle of the run: both ranks started (their pids written)
     * and a second more */
    for (int i = 0; i < 300 && !(cli_exists(cli_path("pid.0")) && cli_exists(cli_path("pid.1"))); i++) nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
    sleep(2);
    return pid;
}

/* SIGTERM or SIGINT to mpirun (Open MPI sends the ranks SIGTERM): every rank
 * stops at its next safe point and exits 143, the run is said to be
 * interrupted once, and no output is left under its final name. */
Test(cli_mpi, signal_to_mpirun_interrupts_every_rank, .timeout = 240)
{
    const int sigs[] = { SIGTERM, SIGINT };
    for (int k = 0; k < 2; k++) {
        char stats[600];
        snprintf(stats, sizeof stats, "%s", cli_path("long.json"));
        pid_t pid = start_long_run(stats, true);
        kill(pid, sigs[k]);
        cli_result_t r = cli_wait(pid);
        cr_assert_neq(r.status, 0, "mpirun after %s", strsignal(sigs[k]));
        for (int rk = 0; rk < 2; rk++)
            cr_assert_eq(rank_status(rk), 143, "%s to mpirun: rank %d exited %d: %s", strsignal(sigs[k]), rk,
                         rank_status(rk), r.err);
        cr_assert_eq(count_of(r.err, "kairos: run interrupted by SIGTERM at model time "), 1, "%s", r.err);
        cr_assert(!cli_exists(stats) && !cli_exists(cli_path("long.json.partial")), "an output file was left");
        cli_free(&r);
    }
}

/* A rank killed (SIGKILL) in the middle of a run: kairos relies on the
 * launcher, which ends the other rank within 5 s; mpirun exits non-zero
 * and no output is left under its final name (docs/cluster.md). */
Test(cli_mpi, rank_killed_ends_the_run, .timeout = 240)
{
    char stats[600];
    snprintf(stats, sizeof stats, "%s", cli_path("killed.json"));
    pid_t pid = start_long_run(stats, false);
    char *victim = cli_slurp(cli_path("pid.1"));
    cr_assert(victim && atoi(victim) > 0, "rank 1's pid");
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    cr_assert_eq(kill(atoi(victim), SIGKILL), 0);
    free(victim);
    cli_result_t r = cli_wait(pid);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double took = (double)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - t0) * 1e-9;
    cr_assert_lt(took, 5.0, "the job took %.1f s to end after a rank was killed", took);
    cr_assert_neq(r.status, 0, "mpirun: %s", r.err);
    cr_assert_eq(rank_status(1), 128 + SIGKILL, "the killed rank: %d", rank_status(1));
    cr_assert(!cli_exists(stats), "an output file was left under its final name");
    cli_free(&r);
}

/* Replications and sweeps follow the same table on every rank: a run
 * failure in one replication is 1, a deadlock at one point of a sweep 3,
 * and no stats file or CSV is left. (Groups of 2 ranks: the model pins a
 * simulator to rank 1.) */
Test(cli_mpi, replications_and_sweeps_exit_alike, .timeout = 240)
{
    const char *fails = faulty_model("reps-fail.json", ", 'how': 'sync', 'peer': 'b', 'fail_at': 5", "", "1");
    const char *holds = faulty_model("sweep-hold.json", ", 'how': 'hold', 'peer': 'b', 'fail_at': 100", "", "0");
    char out[600];
    snprintf(out, sizeof out, "%s", cli_path("reps-out"));
    const char *reps[] = { "run", fails, "--replications", "3", "--group-ranks", "2", "-o", out, "--quiet", NULL };
    cli_result_t r = cli_wait(start_ranks(true, reps));
    for (int k = 0; k < 2; k++) cr_assert_eq(rank_status(k), 1, "replications: rank %d: %d: %s", k, rank_status(k), r.err);
    cr_assert_eq(count_of(r.err, "kairos: replication 0 (seed "), 1, "%s", r.err);
    cr_assert(!cli_exists(out), "a stats file was left");
    cli_free(&r);
    const char *sweep[] = { "sweep", holds, "--vary", "simulators.a.params.fail_at=[100,5]", "--group-ranks", "2", "-o",
                            out, "--quiet", NULL };
    r = cli_wait(start_ranks(true, sweep));
    for (int k = 0; k < 2; k++) cr_assert_eq(rank_status(k), 3, "sweep: rank %d: %d: %s", k, rank_status(k), r.err);
    cr_assert_eq(count_of(r.err, "deadlock: no simulator can advance"), 1, "%s", r.err);
    /* the point is named: every point has the same seeds */
    cr_assert_eq(count_of(r.err, "kairos: point 2 of 2 (the CSV's row 2), replication 0 (seed "), 1, "%s", r.err);
    cr_assert(!cli_exists(out), "a CSV was left");
    cli_free(&r);
}
