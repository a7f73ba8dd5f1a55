/* The kairos command, run as a child process (KAIROS_BIN): exit statuses,
 * one-line complaints about bad input, no output files after a failed run,
 * the stats file (docs/stats.md), checksums, event logs, the Chrome trace,
 * validate's plan, info, every --help, and the plugin example. */
#include <math.h>
#include <signal.h>
#include <time.h>
#include "spawn.h"
#include <kairos/kind.h> /* (KR_ABI_VERSION, kr_kind_desc_t: a plug-in built against other headers) */

TestSuite(cli, .fini = cli_cleanup);

static const char *source(const char *rel) { return cli_source(rel); }

#define FACTORY_SHORT                                                                                  \
    "{'end_time': 50, 'seed': 4, 'simulators': ["                                                      \
    "  {'name': 'Line', 'kind': 'assembly', 'params': {'to': 'Robots'}},"                              \
    "  {'name': 'Robots', 'kind': 'robots', 'time_step': 1, 'params': {'to': 'Bath'}},"                \
    "  {'name': 'Bath', 'kind': 'bath', 'time_step': 2}],"                                             \
    " 'dependencies': [{'from': 'Line', 'to': 'Robots', 'promise': 0},"                                \
    "                  {'from': 'Robots', 'to': 'Bath', 'promise': 2}]}"

static const char *model(const char *text)
{
    const char *p = cli_path("model.json");
    cli_write(p, text);
    return p;
}

/* Exit status 2, nothing on stdout, exactly one line on stderr: "kairos: "
 * then `want` (a prefix of the rest when `prefix_only`). */
static void expect_bad(cli_result_t r, const char *want)
{
    cr_assert_eq(r.status, 2, "status %d, stderr: %s", r.status, r.err);
    cr_assert_str_empty(r.out, "nothing on stdout: %s", r.out);
    cr_assert_eq(cli_lines(r.err), 1, "one line: %s", r.err);
    char line[4096];
    snprintf(line, sizeof line, "kairos: %s\n", want);
    cr_assert_str_eq(r.err, line);
    cli_free(&r);
}

/* ---- help and info ---- */

Test(cli, help_everywhere)
{
    static const char *const cmds[][3] = {
        { "--help", NULL }, { "-h", NULL }, { "help", NULL },
        { "run", "--help" }, { "run", "-h" }, { "validate", "--help" }, { "validate", "-h" },
        { "info", "--help" }, { "info", "-h" },
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_result_t r = kairos(cmds[i][0], cmds[i][1], NULL);
        cr_assert_eq(r.status, 0, "%s %s: %d", cmds[i][0], cmds[i][1] ? cmds[i][1] : "", r.status);
        cr_assert(!strncmp(r.out, "usage: kairos", 13), "%s", r.out);
        cr_assert_str_empty(r.err);
        cli_free(&r);
    }
    cli_result_t r = kairos("run", "--help", NULL);
    for (const char *opt = "-o\0--stats\0--set\0--sync\0--end\0--seed\0--trace\0--event-log\0--quiet\0"; *opt;
         opt += strlen(opt) + 1)
        cr_assert(strstr(r.out, opt), "run --help lists %s", opt);
    cli_free(&r);
    r = kairos("validate", "--help", NULL);
    cr_assert(strstr(r.out, "--ranks N"));
    cli_free(&r);
}

Test(cli, no_command_or_unknown)
{
    cli_result_t r = kairos(NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "usage: kairos"));
    cli_free(&r);
    r = kairos("frobnicate", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: unknown command 'frobnicate': expected run, sweep, validate, kinds, info, "
                     "frames or view (kairos --help)\n");
    cli_free(&r);
    r = kairos("--version", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(r.out, "kairos 0.1.0\n");
    cli_free(&r);
}

/* A command without its model file, or with an option it does not know,
 * answers in one line (the usage stays behind --help). */
Test(cli, missing_model_or_unknown_option_is_one_line)
{
    cli_result_t r = kairos("run", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: run: expected a model file, found none (usage: kairos run MODEL.json [options])\n");
    cli_free(&r);
    r = kairos("validate", "model.json", "--bogus", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: validate: unknown option --bogus (kairos validate --help lists them)\n");
    cli_free(&r);
    r = kairos("kinds", "--bogus", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: kinds: unknown option --bogus (kairos kinds --help lists them)\n");
    cli_free(&r);
    /* (view and frames printed their whole usage after the line) */
    r = kairos("view", "frames", "--bogus", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: view: unknown option --bogus (kairos view --help lists them)\n");
    cli_free(&r);
    r = kairos("view", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: view: expected a frames folder DIR, found none (kairos view --help lists the "
                            "options)\n");
    cli_free(&r);
    r = kairos("frames", "frames", "--bogus", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err, "kairos: frames: unknown option --bogus (kairos frames --help lists them)\n");
    cli_free(&r);
}

Test(cli, info)
{
    cli_result_t r = kairos("info", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(!strncmp(r.out, "kairos 0.1.0\nMPI: ", 18), "%s", r.out);
    cr_assert(strstr(r.out, "(1 rank)\nhwloc: "), "%s", r.out);
    cr_assert(strstr(r.out, "\nrank 0: node "), "%s", r.out);
    cli_free(&r);
    expect_bad(kairos("info", "extra", NULL), "info takes no arguments (found extra)");
}

/* ---- bad input ---- */

/* A promise past the end time is taken (nothing sent along it arrives
 * before the end), with one warning naming it; none without. */
Test(cli, a_promise_past_the_end_is_warned_of)
{
    const char *model = source("examples/factory.json");
    cli_result_t r = kairos("run", model, "--quiet", "--end", "100", "--set", "dependencies.1.promise=500", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, "kairos: warning: 1 dependency with a promise past the end time 100 (the first: "
                     "'TransportRobots' -> 'ChemicalBath', promise 500): nothing sent along it arrives before the end\n");
    cli_free(&r);
    r = kairos("run", model, "--quiet", "--end", "100", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    cli_free(&r);
}

Test(cli, bad_unreadable_file)
{
    const char *missing = cli_path("missing.json");
    char want[700];
    snprintf(want, sizeof want, "%s: (file): expected a readable model file, found No such file or directory", missing);
    expect_bad(kairos("run", missing, NULL), want);
    expect_bad(kairos("validate", missing, NULL), want);
}

Test(cli, bad_truncated_file)
{
    const char *m = model("{'end_time': 50, 'simulators': [{'name': 'Line', 'kind'");
    cli_result_t r = kairos("run", m, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_empty(r.out);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    char prefix[700];
    snprintf(prefix, sizeof prefix, "kairos: %s: line 1 column ", m);
    cr_assert(!strncmp(r.err, prefix, strlen(prefix)), "%s", r.err);
    cr_assert(strstr(r.err, ": expected valid JSON, found "), "%s", r.err);
    cli_free(&r);
}

Test(cli, bad_set_on_missing_path)
{
    const char *m = model(FACTORY_SHORT);
    char want[700];
    snprintf(want, sizeof want, "%s: simulators.Oven: expected the name of a simulator (--set "
             "simulators.Oven.params.k=1), found nothing", m);
    expect_bad(kairos("run", m, "--set", "simulators.Oven.params.k=1", NULL), want);
    snprintf(want, sizeof want, "%s: outputs: expected a path that exists (--set outputs.stats=s.json), found nothing",
             m);
    expect_bad(kairos("validate", m, "--set", "outputs.stats=s.json", NULL), want);
}

Test(cli, bad_model_fields)
{
    const char *m = model(FACTORY_SHORT);
    char want[700];
    snprintf(want, sizeof want, "%s: simulators[2].kind: expected a known kind (assembly, robots, bath, sqss, phold, rows, walkers, ecology, feeder, belt, controller, gateway), found \"tub\"",
             m);
    expect_bad(kairos("run", m, "--set", "simulators.Bath.kind=tub", NULL), want);
    snprintf(want, sizeof want, "%s: dependencies[1].to: expected the name of a simulator (or \"name[*]\"), found "
             "\"Oven\"", m);
    expect_bad(kairos("run", m, "--set", "dependencies.1.to=Oven", NULL), want);
    snprintf(want, sizeof want, "%s: simulators[1].name: expected a name not used before (simulators[0] is \"Line\"), "
             "found \"Line\"", m);
    expect_bad(kairos("run", m, "--set", "simulators.Robots.name=Line", NULL), want);
    snprintf(want, sizeof want, "%s: simulators[2].time_step: expected a time step that is a whole positive number of "
             "ticks (1 tick = 1e-06 model units), found 1.5e-6", m);
    expect_bad(kairos("run", m, "--set", "simulators.Bath.time_step=0.0000015", NULL), want);
    /* a formalism the kind does not run is what is wrong, not the time step it would need */
    snprintf(want, sizeof want, "%s: simulators[0].formalism: expected a formalism of kind 'assembly' "
             "(discrete-event, emulation), found \"agent-based\"", m);
    expect_bad(kairos("run", m, "--set", "simulators.Line.formalism=agent-based", NULL), want);
    snprintf(want, sizeof want, "%s: speed: expected one of the keys precision, seed, end_time, sync, mapping, "
             "log_level, simulators, dependencies, outputs, plugins, description, stop_lookahead, found the unknown key \"speed\"", m);
    expect_bad(kairos("run", m, "--set", "speed=2", NULL), want);
    snprintf(want, sizeof want, "%s: dependencies[0].promise: expected a promise >= 0 in model units, found -1", m);
    expect_bad(kairos("run", m, "--set", "dependencies.0.promise=-1", NULL), want);
    snprintf(want, sizeof want, "%s: end_time: expected a time >= 0 in model units, found \"soon\"", m);
    expect_bad(kairos("run", m, "--set", "end_time=soon", NULL), want);
    snprintf(want, sizeof want, "%s: end_time: expected a time >= 0 in model units, found -5", m);
    expect_bad(kairos("run", m, "--end", "-5", NULL), want);
}

Test(cli, bad_kind_params)
{
    const char *m = model(FACTORY_SHORT);
    char want[700];
    snprintf(want, sizeof want, "%s: simulators[2].params.loss: expected a number >= 0, found -1", m);
    expect_bad(kairos("run", m, "--set", "simulators.Bath.params={\"loss\": -1}", NULL), want);
    expect_bad(kairos("validate", m, "--set", "simulators.Bath.params={\"loss\": -1}", NULL), want);
    snprintf(want, sizeof want, "%s: simulators[1].params.carry_steps: expected a parameter of kind 'robots' (to, "
             "robots, path_length, speed, delay), found the unknown key \"carry_steps\"", m);
    expect_bad(kairos("run", m, "--set", "simulators.Robots.params.carry_steps=3", NULL), want);
}

Test(cli, bad_promise_sets)
{
    /* an emulation simulator in a zero-promise cycle */
    const char *m = model("{'end_time': 2, 'simulators': [{'name': 'A', 'kind': 'assembly', 'formalism': 'emulation',"
                          " 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', 'time_step': 1}],"
                          " 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0}, {'from': 'B', 'to': 'A',"
                          " 'promise': 0}]}");
    char want[900];
    snprintf(want, sizeof want, "%s: simulators[0].formalism: expected no emulation simulator in a cycle of zero "
             "promises (A is in one with B; give an edge of the cycle a positive promise), found \"emulation\"", m);
    expect_bad(kairos("run", m, NULL), want);
    expect_bad(kairos("validate", m, NULL), want);
    /* pins that split a zero-promise group */
    m = model("{'end_time': 2, 'simulators': [{'name': 'p', 'kind': 'bath', 'time_step': 1, 'rank': 0},"
              " {'name': 'q', 'kind': 'bath', 'time_step': 1, 'rank': 1}],"
              " 'dependencies': [{'from': 'p', 'to': 'q', 'promise': 0}, {'from': 'q', 'to': 'p', 'promise': 0}]}");
    snprintf(want, sizeof want, "%s: simulators[1].rank: expected rank 0, where 'p' is pinned (a cycle of zero "
             "promises joins them and runs as one loop on one rank), found 1", m);
    expect_bad(kairos("validate", m, "--ranks", "2", NULL), want);
    /* a pin beyond the ranks of the run */
    snprintf(want, sizeof want, "%s: simulators[1].rank: expected a rank below 1, found 1", m);
    expect_bad(kairos("run", m, NULL), want);
}

Test(cli, bad_option_values)
{
    const char *m = model(FACTORY_SHORT);
    expect_bad(kairos("run", m, "--sync", "optimistic", NULL),
               "--sync: expected auto, null-message or window, found \"optimistic\"");
    expect_bad(kairos("run", m, "--seed", "-1", NULL),
               "--seed: expected a whole number from 0 to 9223372036854775807, found \"-1\"");
    expect_bad(kairos("run", m, "--seed", "9223372036854775808", NULL),
               "--seed: expected a whole number from 0 to 9223372036854775807, found \"9223372036854775808\"");
    /* the largest seed is fine: replications derive seeds up to it */
    cli_result_t big = kairos("run", m, "--seed", "9223372036854775807", "--quiet", NULL);
    cr_assert_eq(big.status, 0, "%s", big.err);
    cli_free(&big);
    expect_bad(kairos("run", m, "--end", "later", NULL), "--end: expected a time in model units, found \"later\"");
    expect_bad(kairos("run", m, "--set", "seed", NULL), "--set: expected KEY=VALUE, found \"seed\"");
    expect_bad(kairos("run", m, "-o", NULL), "-o needs a file name");
    /* an option after an option that takes a value is not that value (it
     * made a folder named --quiet) */
    expect_bad(kairos("run", m, "--checkpoint-dir", "--quiet", "--checkpoint-every", "10", NULL),
               "--checkpoint-dir needs a folder name");
    expect_bad(kairos("run", m, "--restart", "-o", "x.json", NULL), "--restart needs a checkpoint or a folder of them");
    cr_assert(!cli_exists("--quiet"));
    expect_bad(kairos("validate", m, "--ranks", "0", NULL), "--ranks: expected a whole number from 1 to 1048576, found \"0\"");
    char want[700];
    snprintf(want, sizeof want, "one model file only (found another: %s)", m);
    expect_bad(kairos("run", m, m, NULL), want);
}

/* ---- failed runs leave no output files ---- */

static void expect_no_outputs(const char *stats, const char *trace, const char *logs)
{
    char partial[700];
    cr_assert(!cli_exists(stats), "%s left behind", stats);
    snprintf(partial, sizeof partial, "%s.partial", stats);
    cr_assert(!cli_exists(partial), "%s left behind", partial);
    cr_assert(!cli_exists(trace), "%s left behind", trace);
    snprintf(partial, sizeof partial, "%s.partial", trace);
    cr_assert(!cli_exists(partial), "%s left behind", partial);
    static const char *const sims[] = { "Line", "Robots", "Bath" };
    for (size_t i = 0; i < 3; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s.jsonl", logs, sims[i]);
        cr_assert(!cli_exists(p), "%s left behind", p);
        snprintf(p, sizeof p, "%s/%s.jsonl.partial", logs, sims[i]);
        cr_assert(!cli_exists(p), "%s left behind", p);
    }
}

Test(cli, failed_setup_writes_nothing)
{
    const char *m = model(FACTORY_SHORT);
    const char *stats = cli_path("s.json"), *trace = cli_path("t.json"), *logs = cli_path("logs");
    cli_result_t r = kairos("run", m, "-o", stats, "--trace", trace, "--event-log", logs, "--set",
                            "simulators.Robots.params.delay=1", NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, ": simulators[1].params.delay: expected "), "%s", r.err);
    cr_assert_str_empty(r.out);
    cli_free(&r);
    expect_no_outputs(stats, trace, logs);
    /* the same with the outputs named in the model file */
    char set[900];
    snprintf(set, sizeof set, "outputs={\"stats\": \"%s\", \"trace\": \"%s\", \"event_log\": \"%s\"}", stats, trace,
             logs);
    r = kairos("run", m, "--set", set, "--set", "simulators.Bath.params.loss=-1", NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cli_free(&r);
    expect_no_outputs(stats, trace, logs);
}

/* The trace and the event logs are open when the stats file cannot be
 * made: everything written so far is removed again. */
Test(cli, failed_output_removes_the_others)
{
    const char *m = model(FACTORY_SHORT);
    const char *stats = cli_path("no-such-folder/s.json"), *trace = cli_path("t.json"), *logs = cli_path("logs");
    cli_result_t r = kairos("run", m, "-o", stats, "--trace", trace, "--event-log", logs, NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, "no-such-folder/s.json: cannot write: No such file or directory"), "%s", r.err);
    cr_assert_str_empty(r.out);
    cli_free(&r);
    expect_no_outputs(stats, trace, logs);
    cr_assert(!cli_exists(logs), "the event-log folder the run made was left, empty");
}

/* ---- successful runs ---- */

static json_t *run_stats(const char *model_path, const char *stats, const char *extra1, const char *extra2,
                         const char *extra3, const char *extra4)
{
    cli_result_t r = kairos("run", model_path, "-o", stats, "--quiet", extra1, extra2, extra3, extra4, NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cr_assert_str_empty(r.out, "--quiet: %s", r.out);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s: %s", stats, e.text);
    char partial[700];
    snprintf(partial, sizeof partial, "%s.partial", stats);
    cr_assert(!cli_exists(partial));
    return s;
}

/* A checkpoint folder the run made, with the folders above it that it
 * made, is removed when no checkpoint went into it (the folders above
 * were left); one that holds anything else, or was there before, stays. */
Test(cli, checkpoint_folders_made_for_nothing_are_removed)
{
    const char *m = model(FACTORY_SHORT);
    char dir[600];
    snprintf(dir, sizeof dir, "%s", cli_path("made/a/b"));
    cli_result_t r = kairos("run", m, "--quiet", "--end", "5", "--checkpoint-every", "10", "--checkpoint-dir", dir,
                            "-o", cli_path("made.json"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    cr_assert(!cli_exists(cli_path("made")), "the folders made for no checkpoint are gone");
    cr_assert_eq(mkdir(cli_path("made"), 0777), 0);
    cr_assert_eq(mkdir(cli_path("made/other"), 0777), 0);
    r = kairos("run", m, "--quiet", "--end", "5", "--checkpoint-every", "10", "--checkpoint-dir", dir, "-o",
               cli_path("made.json"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    cr_assert(!cli_exists(cli_path("made/a")) && cli_exists(cli_path("made/other")), "only what the run made goes");
    r = kairos("run", m, "--quiet", "--end", "15", "--checkpoint-every", "10", "--checkpoint-dir", dir, "-o",
               cli_path("made.json"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    cr_assert(cli_exists(cli_path("made/a/b/ckpt-10/manifest.json")), "a checkpoint written stays");
    /* a checkpoint's name holds its time without an exponent (ckpt-1e-06) */
    r = kairos("run", m, "--quiet", "--end", "1", "--checkpoint-at", "0.000001", "--checkpoint-dir",
               cli_path("small"), "-o", cli_path("made.json"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    cr_assert(cli_exists(cli_path("small/ckpt-0.000001/manifest.json")), "named ckpt-0.000001");
}

Test(cli, stats_has_every_field)
{
    const char *stats = cli_path("s.json");
    json_t *s = run_stats(source("examples/factory.json"), stats, NULL, NULL, NULL, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(s, "version")), "0.1.0");
    cr_assert_eq(json_integer_value(json_object_get(s, "ranks")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(s, "sync")), "null-message");
    cr_assert_float_eq(json_number_value(json_object_get(s, "end_time")), 3600.0, 0);
    cr_assert(json_is_number(json_object_get(s, "wall_seconds")));
    cr_assert(json_number_value(json_object_get(s, "wall_seconds")) > 0);
    cr_assert(json_is_number(json_object_get(s, "events_per_second")));
    cr_assert(json_is_integer(json_object_get(s, "events")));
    const char *sum = json_string_value(json_object_get(s, "checksum"));
    cr_assert(sum && strlen(sum) == 16 && strspn(sum, "0123456789abcdef") == 16, "checksum %s", sum);
    json_t *sims = json_object_get(s, "simulators");
    cr_assert(json_is_array(sims) && json_array_size(sims) == 3);
    static const char *const names[] = { "AssemblyLine", "TransportRobots", "ChemicalBath" };
    static const char *const kinds[] = { "assembly", "robots", "bath" };
    static const char *const forms[] = { "discrete-event", "agent-based", "continuous" };
    json_int_t events = 0;
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(sims, i);
        cr_assert_str_eq(json_string_value(json_object_get(x, "name")), names[i]);
        cr_assert_eq(json_integer_value(json_object_get(x, "rank")), 0);
        cr_assert_str_eq(json_string_value(json_object_get(x, "kind")), kinds[i]);
        cr_assert_str_eq(json_string_value(json_object_get(x, "formalism")), forms[i]);
        cr_assert(json_is_number(json_object_get(x, "final_time")));
        cr_assert(json_number_value(json_object_get(x, "final_time")) <= 3600.0);
        for (const char *k = "events\0sync_sent\0sync_received\0null_messages\0blocked_episodes\0entities\0"; *k;
             k += strlen(k) + 1)
            cr_assert(json_is_integer(json_object_get(x, k)), "simulators[%zu].%s", i, k);
        cr_assert(json_is_number(json_object_get(x, "blocked_seconds")));
        cr_assert(json_is_object(json_object_get(x, "stats")));
        events += json_integer_value(json_object_get(x, "events"));
    }
    cr_assert_eq(events, json_integer_value(json_object_get(s, "events")));
    /* the kinds' own figures: nothing lost between them */
    json_t *a = json_object_get(json_array_get(sims, 0), "stats"), *b = json_object_get(json_array_get(sims, 1), "stats");
    cr_assert_eq(json_integer_value(json_object_get(a, "made")), json_integer_value(json_object_get(b, "received")));
    json_decref(s);
}

/* Per-step totals and the series belong to model-file entries: two
 * worlds of one kind (one cut in regions) keep their own. */
Test(cli, totals_and_series_by_model_entry)
{
    const char *m = model("{'end_time': 3, 'seed': 2, 'simulators': ["
                          " {'name': 'north', 'kind': 'ecology', 'time_step': 1, 'regions': [2, 1],"
                          "  'params': {'width': 40, 'height': 20, 'swarms': 10, 'plant_density': 0.5}},"
                          " {'name': 'south', 'kind': 'ecology', 'time_step': 1,"
                          "  'params': {'width': 20, 'height': 20, 'swarms': 4, 'plant_density': 0.2}}]}");
    const char *stats = cli_path("s.json"), *series = cli_path("s.csv");
    json_t *s = run_stats(m, stats, "--series", series, NULL, NULL);
    json_t *tot = json_object_get(s, "totals");
    json_int_t north = json_integer_value(json_object_get(json_object_get(tot, "north"), "plants"));
    json_int_t south = json_integer_value(json_object_get(json_object_get(tot, "south"), "plants"));
    json_int_t plants[2] = { 0, 0 };
    size_t i;
    json_t *sim;
    json_array_foreach(json_object_get(s, "simulators"), i, sim)
        plants[i < 2 ? 0 : 1] += json_integer_value(json_object_get(json_object_get(sim, "stats"), "plants"));
    cr_assert_eq(json_object_size(tot), 2, "one entry per world");
    cr_assert(north > 0 && north == plants[0], "north: %lld, its regions hold %lld", (long long)north,
              (long long)plants[0]);
    cr_assert(south > 0 && south == plants[1], "south: %lld, its simulator holds %lld", (long long)south,
              (long long)plants[1]);
    char *csv = cli_slurp(series);
    cr_assert(csv && !strncmp(csv, "step,north.plants,", 18), "%.80s", csv);
    cr_assert(strstr(csv, ",south.plants,"), "%.200s", csv);
    free(csv);
    json_decref(s);
}

Test(cli, checksums_repeat_across_runs_and_sync)
{
    const char *f = source("examples/factory.json");
    json_decref(run_stats(f, cli_path("a.json"), NULL, NULL, NULL, NULL));
    json_decref(run_stats(f, cli_path("b.json"), NULL, NULL, NULL, NULL));
    json_t *w = run_stats(f, cli_path("w.json"), "--sync", "window", NULL, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(w, "sync")), "window");
    json_decref(w);
    json_decref(run_stats(f, cli_path("s2.json"), "--seed", "2", NULL, NULL));
    char *a = cli_checksum(cli_path("a.json")), *b = cli_checksum(cli_path("b.json"));
    char *wc = cli_checksum(cli_path("w.json")), *s2 = cli_checksum(cli_path("s2.json"));
    cr_assert_str_eq(a, b, "two runs");
    cr_assert_str_eq(a, wc, "null-message and window");
    cr_assert_str_neq(a, s2, "another seed");
    free(a), free(b), free(wc), free(s2);
}

Test(cli, summary_on_stdout)
{
    const char *stats = cli_path("s.json");
    cli_result_t r = kairos("run", source("examples/factory.json"), "-o", stats, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *sum = cli_checksum(stats);
    char line[64];
    snprintf(line, sizeof line, "  checksum %s\n", sum);
    cr_assert(strstr(r.out, line), "%s", r.out);
    cr_assert(strstr(r.out, "3 simulators on 1 rank, sync null-message"), "%s", r.out);
    cr_assert_str_empty(r.err, "no progress line when stderr is not a terminal: %s", r.err);
    free(sum);
    cli_free(&r);
}

Test(cli, event_logs)
{
    const char *stats = cli_path("s.json"), *logs = cli_path("logs");
    json_t *s = run_stats(model(FACTORY_SHORT), stats, "--event-log", logs, NULL, NULL);
    json_t *sims = json_object_get(s, "simulators");
    for (size_t i = 0; i < json_array_size(sims); i++) {
        json_t *x = json_array_get(sims, i);
        char path[700];
        snprintf(path, sizeof path, "%s/%s.jsonl", logs, json_string_value(json_object_get(x, "name")));
        char *text = cli_slurp(path);
        cr_assert(text, "%s missing", path);
        json_int_t lines = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            json_error_t e;
            json_t *ev = json_loads(line, 0, &e);
            cr_assert(ev, "%s line %lld: %s", path, (long long)lines + 1, e.text);
            for (const char *k = "time\0priority\0source\0sequence\0phase\0"; *k; k += strlen(k) + 1)
                cr_assert(json_is_integer(json_object_get(ev, k)), "%s: %s", path, k);
            cr_assert(json_is_string(json_object_get(ev, "type")));
            json_decref(ev);
            lines++;
        }
        cr_assert_eq(lines, json_integer_value(json_object_get(x, "events")), "%s: one line per event", path);
        free(text);
    }
    json_decref(s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct span { double ts, end; } span_t;

static int cmp_span(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the outer span first */
}

Test(cli, trace_parses_nests_and_pairs_flows)
{
    const char *stats = cli_path("s.json"), *trace = cli_path("t.json");
    json_t *s = run_stats(source("examples/factory.json"), stats, "--trace", trace, NULL, NULL);
    json_error_t e;
    json_t *t = json_load_file(trace, 0, &e);
    cr_assert(t, "trace: %s line %d", e.text, e.line);
    json_t *evs = json_object_get(t, "traceEvents");
    cr_assert(json_is_array(evs) && json_array_size(evs) > 0);
    size_t n = json_array_size(evs), nx = 0, ns = 0, nf = 0, threads = 0;
    span_t *spans = calloc(n, sizeof *spans);
    uint64_t *sid = calloc(n, sizeof *sid), *fid = calloc(n, sizeof *fid);
    cr_assert(spans && sid && fid);
    /* spans per (pid, tid): one rank, so pid 0 and tid = simulator id */
    size_t sims = json_array_size(json_object_get(s, "simulators"));
    for (size_t tid = 0; tid < sims; tid++) {
        nx = 0;
        for (size_t i = 0; i < n; i++) {
            json_t *ev = json_array_get(evs, i);
            const char *ph = json_string_value(json_object_get(ev, "ph"));
            cr_assert(ph, "event %zu has a phase", i);
            cr_assert_eq(json_integer_value(json_object_get(ev, "pid")), 0);
            if (strcmp(ph, "X") || (size_t)json_integer_value(json_object_get(ev, "tid")) != tid) continue;
            double ts = json_number_value(json_object_get(ev, "ts")), dur = json_number_value(json_object_get(ev, "dur"));
            cr_assert(dur >= 0);
            spans[nx++] = (span_t){ ts, ts + dur };
        }
        cr_assert_gt(nx, 0, "simulator %zu has spans", tid);
        qsort(spans, nx, sizeof *spans, cmp_span);
        /* a stack of open spans: each new one ends inside the innermost open one */
        double stack[256];
        size_t depth = 0;
        for (size_t i = 0; i < nx; i++) {
            while (depth && stack[depth - 1] <= spans[i].ts + 0.0005) depth--;
            if (depth)
                cr_assert(spans[i].end <= stack[depth - 1] + 0.0015, "tid %zu: span [%.3f, %.3f] overlaps one ending "
                          "at %.3f", tid, spans[i].ts, spans[i].end, stack[depth - 1]);
            cr_assert_lt(depth, 256);
            stack[depth++] = spans[i].end;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!strcmp(ph, "s")) sid[ns++] = (uint64_t)json_integer_value(json_object_get(ev, "id"));
        else if (!strcmp(ph, "f")) fid[nf++] = (uint64_t)json_integer_value(json_object_get(ev, "id"));
        else if (!strcmp(ph, "M") && !strcmp(json_string_value(json_object_get(ev, "name")), "thread_name")) threads++;
    }
    cr_assert_eq(threads, sims, "a thread name per simulator");
    qsort(sid, ns, sizeof *sid, cmp_u64);
    qsort(fid, nf, sizeof *fid, cmp_u64);
    for (size_t i = 1; i < ns; i++) cr_assert_neq(sid[i], sid[i - 1], "flow ids are unique");
    for (size_t i = 1; i < nf; i++) cr_assert_neq(fid[i], fid[i - 1], "each flow ends once");
    size_t j = 0;
    for (size_t i = 0; i < nf; i++) {
        while (j < ns && sid[j] < fid[i]) j++;
        cr_assert(j < ns && sid[j] == fid[i], "flow end %llu has a start", (unsigned long long)fid[i]);
    }
    /* every flow that starts ends (issue 16): one per sync-event received;
     * a sync-event still in flight at the end (the factory has one) has no
     * flow at all */
    json_int_t sent = 0, received = 0;
    for (size_t i = 0; i < sims; i++) {
        json_t *x = json_array_get(json_object_get(s, "simulators"), i);
        sent += json_integer_value(json_object_get(x, "sync_sent"));
        received += json_integer_value(json_object_get(x, "sync_received"));
    }
    cr_assert_gt(nf, 0);
    cr_assert_gt(sent, received, "no sync-event in flight at the end: the case is not tested");
    cr_assert_eq((json_int_t)ns, received);
    cr_assert_eq((json_int_t)nf, received);
    free(spans), free(sid), free(fid);
    json_decref(t);
    json_decref(s);
}

/* ---- validate ---- */

Test(cli, validate_prints_the_plan)
{
    cli_result_t r = kairos("validate", source("examples/factory.json"), "--ranks", "2", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    for (const char *want = "factory.json: valid\n\0simulators (3):\n\0AssemblyLine\0TransportRobots\0"
                            "agent-based     time_step 1\n\0continuous      time_step 2\n\0dependencies (2):\n\0"
                            "  AssemblyLine -> TransportRobots  promise 0\n\0"
                            "  TransportRobots -> ChemicalBath  promise 2\n\0"
                            "zero-promise groups (run as one event loop on one rank): none\n\0ranks (2):\n\0"
                            "  rank 0: AssemblyLine, ChemicalBath\n\0  rank 1: TransportRobots\n\0";
         *want; want += strlen(want) + 1)
        cr_assert(strstr(r.out, want), "'%s' missing from:\n%s", want, r.out);
    cli_free(&r);

    const char *m = model("{'end_time': 5, 'simulators': [{'name': 'b', 'kind': 'bath', 'time_step': 1, 'count': 4}],"
                          " 'dependencies': [{'from': 'b[0]', 'to': 'b[1]', 'promise': 0},"
                          " {'from': 'b[1]', 'to': 'b[0]', 'promise': 0}, {'from': 'b[*]', 'to': 'b[3]',"
                          " 'promise': 1}]}");
    r = kairos("validate", m, "--ranks", "2", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    for (const char *want = "simulators (4):\n\0dependencies (5):\n\0  b[2] -> b[3]  promise 1\n\0"
                            "zero-promise groups (run as one event loop on one rank):\n  {b[0], b[1]}\n\0"
                            "  rank 0: b[0], b[1], b[2]\n  rank 1: b[3]\n\0";
         *want; want += strlen(want) + 1)
        cr_assert(strstr(r.out, want), "'%s' missing from:\n%s", want, r.out);
    cli_free(&r);
}

/* ---- the plugin example ---- */

Test(cli, plugin_example_runs)
{
    const char *plugin = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(plugin && plugin[0] == '/', "KAIROS_TEST_PLUGIN");
    json_error_t e;
    json_t *m = json_load_file(source("examples/plugin/counter.json"), 0, &e);
    cr_assert(m, "%s", e.text);
    json_object_set_new(m, "plugins", json_pack("[s]", plugin));
    const char *path = cli_path("counter.json"), *stats = cli_path("s.json");
    cr_assert_eq(json_dump_file(m, path, 0), 0);
    json_decref(m);
    json_t *s = run_stats(path, stats, NULL, NULL, NULL, NULL);
    json_t *clock = json_array_get(json_object_get(s, "simulators"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(clock, "kind")), "counter");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(clock, "stats"), "ticks")), 20);
    json_decref(s);
    cli_result_t r = kairos("validate", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "Clock"), "%s", r.out);
    cli_free(&r);
}

/* "regions" through the command: a bad cut, a cut finer than the grid,
 * and a re-cut by --set that runs (issue 7). */
Test(cli, regions_checked_and_recut)
{
    const char *m = model("{'end_time': 3, 'simulators': [{'name': 'eco', 'kind': 'walkers', 'time_step': 1,"
                          " 'regions': [2, 2], 'params': {'width': 8, 'height': 6, 'agents': 40}}]}");
    char want[700];
    snprintf(want, sizeof want, "%s: simulators[0].regions: expected [P, Q], two whole numbers >= 1 with P x Q <= "
             "4096, found [2,\"x\"]", m);
    expect_bad(kairos("run", m, "--set", "simulators.eco.regions=[2,\"x\"]", NULL), want);
    snprintf(want, sizeof want, "%s: simulators[0].regions: expected at most 8 x 6 regions for a 8 x 6 grid "
             "(params.width, params.height), found [9,1]", m);
    expect_bad(kairos("run", m, "--set", "simulators.eco.regions=[9,1]", NULL), want);
    expect_bad(kairos("validate", m, "--set", "simulators.eco.regions=[9,1]", NULL), want);
    cli_result_t r = kairos("run", m, "--set", "simulators.eco.regions=[4,3]", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "12 simulators"), "%s", r.out);
    cr_assert(strstr(r.out, "eco[11]"), "%s", r.out);
    cr_assert(strstr(r.out, "state digest"), "%s", r.out);
    cli_free(&r);
    /* regions narrower than twice the halo: an agent moving into one could
     * land in the halo of a region that is not its old one's neighbour */
    snprintf(want, sizeof want, "%s: simulators[0].params.halo: expected at most 1 (half the narrowest region of "
             "the 4 x 1 cut, 2 cells), found 2", m);
    expect_bad(kairos("run", m, "--set", "simulators.eco.regions=[4,1]", "--set", "simulators.eco.params.halo=2", NULL),
               want);
    expect_bad(kairos("validate", m, "--set", "simulators.eco.regions=[4,1]", "--set",
                      "simulators.eco.params.halo=2", NULL), want);
}

/* ---- replications and sweeps (docs/replications.md) ---- */

Test(cli, replications_stats_pool_every_statistic)
{
    const char *m = model(CLI_MM1);
    char one[600], reps[600];
    snprintf(one, sizeof one, "%s", cli_path("one.json"));
    snprintf(reps, sizeof reps, "%s", cli_path("reps.json"));
    cli_result_t r = kairos("run", m, "-o", one, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    r = kairos("run", m, "-o", reps, "--replications", "4", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "4 replications on 1 rank"), "%s", r.out);
    cr_assert(strstr(r.out, "mean_time_in_system"), "%s", r.out);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(reps, 0, &e);
    cr_assert(s, "%s", e.text);
    cr_assert_eq(json_integer_value(json_object_get(s, "replication_count")), 4);
    cr_assert_eq(json_integer_value(json_object_get(s, "seed")), 5);
    json_t *list = json_object_get(s, "replications");
    cr_assert_eq(json_array_size(list), 4);
    /* replication 0 is the plain run */
    char *plain = cli_checksum(one);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "checksum")), plain);
    free(plain);
    double sum = 0;
    for (size_t i = 0; i < 4; i++) {
        json_t *rec = json_array_get(list, i);
        cr_assert_eq(json_integer_value(json_object_get(rec, "replication")), (json_int_t)i);
        json_t *sim = json_array_get(json_object_get(rec, "simulators"), 0);
        sum += json_number_value(json_object_get(json_object_get(sim, "stats"), "mean_time_in_system"));
        for (size_t j = 0; j < i; j++)
            cr_assert_neq(json_integer_value(json_object_get(rec, "seed")),
                          json_integer_value(json_object_get(json_array_get(list, j), "seed")));
    }
    json_t *pooled = json_array_get(json_object_get(s, "pooled"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pooled, "name")), "mm1");
    json_t *w = json_object_get(json_object_get(pooled, "stats"), "mean_time_in_system");
    cr_assert_float_eq(json_real_value(json_object_get(w, "mean")), sum / 4, 1e-12);
    cr_assert(json_real_value(json_object_get(w, "ci95")) > 0);
    cr_assert_eq(json_integer_value(json_object_get(w, "n")), 4);
    for (const char *k = "created\0skipped\0received\0utilisation\0throughput\0"; *k; k += strlen(k) + 1)
        cr_assert(json_object_get(json_object_get(pooled, "stats"), k), "pooled %s", k);
    json_decref(s);
}

/* Rows in nested-loop order (first --vary outermost), the values as given,
 * R in every row, and the effect of the arrival rate where theory puts it:
 * utilisation = lambda / mu. */
Test(cli, sweep_over_the_arrival_rate_writes_one_row_per_point)
{
    const char *m = model(CLI_MM1);
    char csv[600];
    snprintf(csv, sizeof csv, "%s", cli_path("sweep.csv"));
    cli_result_t r = kairos("sweep", m, "--vary", "simulators.mm1.params.arrival.mean=[4,2,1.25]", "--vary",
                            "simulators.mm1.params.servers=[1,2]", "--replications", "3", "-o", csv, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "6 points x 3 replications"), "%s", r.out);
    cli_free(&r);
    cr_assert(!cli_exists(cli_path("sweep.csv.partial")));
    char *text = cli_slurp(csv);
    cr_assert(text);
    cr_assert_eq(cli_lines(text), 7, "a header and 6 rows: %s", text);
    cr_assert(!strncmp(text, "simulators.mm1.params.arrival.mean,simulators.mm1.params.servers,replications,"
                             "mm1.created.mean,mm1.created.ci95,", 101), "%s", text);
    const char *want[] = { "4,1,3,", "4,2,3,", "2,1,3,", "2,2,3,", "1.25,1,3,", "1.25,2,3," };
    /* the utilisation column, by name */
    char *line = strtok(text, "\n");
    int ucol = -1, col = 0;
    for (char *c = line; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL, col++)
        if (!strncmp(c, "mm1.utilisation.mean,", 21)) ucol = col;
    cr_assert_geq(ucol, 0, "a utilisation column");
    for (int i = 0; i < 6; i++) {
        line = strtok(NULL, "\n");
        cr_assert(line && !strncmp(line, want[i], strlen(want[i])), "row %d: %s", i, line ? line : "(none)");
        const char *c = line;
        for (int k = 0; k < ucol; k++) c = strchr(c, ',') + 1;
        double u = strtod(c, NULL), ci = strtod(strchr(c, ',') + 1, NULL);
        double lambda = 1 / (i < 2 ? 4.0 : i < 4 ? 2.0 : 1.25), servers = i % 2 ? 2 : 1;
        cr_assert(fabs(u - lambda / servers) < 0.05 && ci > 0, "row %d: utilisation %g +- %g, theory %g", i, u, ci,
                  lambda / servers);
    }
    free(text);
}

Test(cli, sweep_and_replication_errors_are_one_line)
{
    const char *m = model(CLI_MM1);
    char csv[600];
    snprintf(csv, sizeof csv, "%s", cli_path("bad.csv"));
    char line[1400];
    snprintf(line, sizeof line, "%s: simulators.mm1.params.capacty: expected an existing key (--vary), found nothing", m);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.capacty=[1,2]", "-o", csv, NULL), line);
    snprintf(line, sizeof line, "%s: simulators.mm2: expected the name of a simulator (--vary simulators.mm2.params=1), "
             "found nothing", m);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm2.params=[1]", "-o", csv, NULL), line);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.capacity=[]", "-o", csv, NULL),
               "--vary simulators.mm1.params.capacity: expected at least one value, found []");
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.capacity=5", "-o", csv, NULL),
               "--vary simulators.mm1.params.capacity: expected a JSON array of values [v1,v2,...], found 5");
    expect_bad(kairos("sweep", m, "--vary", "seed=[1]", "--vary", "seed=[2]", "-o", csv, NULL),
               "--vary seed: expected each key once, found it twice");
    /* one value named twice (by name and by index), or one key inside
     * another's value: the CSV labelled rows with values no run used */
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.capacity=[1,2]", "--vary",
                      "simulators.0.params.capacity=[3,4]", "-o", csv, NULL),
               "--vary simulators.0.params.capacity: expected a key of its own, found one that names the value of "
               "--vary simulators.mm1.params.capacity (simulators.0.params.capacity)");
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.service.mean=[0.4,0.5]", "--vary",
                      "simulators.mm1.params.service=[{\"dist\":\"constant\",\"value\":0.5}]", "-o", csv, NULL),
               "--vary simulators.mm1.params.service: expected a key of its own, found one that holds --vary "
               "simulators.mm1.params.service.mean (simulators.0.params.service.mean)");
    expect_bad(kairos("sweep", m, "--vary", "seed", "-o", csv, NULL), "--vary: expected KEY=[v1,v2,...], found \"seed\"");
    /* an array all the same (it said "expected a JSON array") */
    expect_bad(kairos("sweep", m, "--vary", "seed=[1,9223372036854775808]", "-o", csv, NULL),
               "--vary seed: expected numbers JSON can hold, a whole one within 64 bits and any other within about "
               "1.8e308, found [1,9223372036854775808]");
    expect_bad(kairos("sweep", m, "--vary", "seed=[1]", "--replications", "0", "-o", csv, NULL),
               "--replications: expected a whole number from 1 to 1000000, found \"0\"");
    expect_bad(kairos("sweep", m, "--vary", "seed=[1]", NULL), "sweep: expected -o SWEEP.csv, found none");
    expect_bad(kairos("sweep", m, "-o", csv, NULL), "sweep: expected at least one --vary KEY=[v1,...], found none");
    expect_bad(kairos("run", m, "--replications", "-3", NULL),
               "--replications: expected a whole number from 1 to 1000000, found \"-3\"");
    expect_bad(kairos("run", m, "--replications", "2", "--group-ranks", "2", NULL),
               "--group-ranks: expected a whole number from 1 to 1 (the ranks), found \"2\"");
    expect_bad(kairos("run", m, "--replications", "2", "--group-ranks", "0", NULL),
               "--group-ranks: expected a whole number from 1 to 1 (the ranks), found \"0\"");
    expect_bad(kairos("run", m, "--replications", "2", "--group-ranks", "two", NULL),
               "--group-ranks: expected a whole number from 1 to 1 (the ranks), found \"two\"");
    expect_bad(kairos("run", m, "--replications", "2", "--trace", cli_path("t.json"), NULL),
               "--trace: expected no trace, series or event log with --replications (rerun one replication alone "
               "with --seed), found one");
    expect_bad(kairos("run", m, "--replications", "2", "--series", cli_path("s.csv"), NULL),
               "--series: expected no trace, series or event log with --replications (rerun one replication alone "
               "with --seed), found one");
    /* outputs that name one file, and names that name none, are refused before the run */
    snprintf(line, sizeof line, "the stats (-o) and the trace (--trace): expected a file each, found one for both (%s)",
             cli_path("same.json"));
    expect_bad(kairos("run", m, "-o", cli_path("same.json"), "--trace", cli_path("same.json"), NULL), line);
    cr_assert(!cli_exists(cli_path("same.json")) && !cli_exists(cli_path("same.json.partial")));
    expect_bad(kairos("run", m, "--trace", "", NULL), "--trace needs a file name");
    /* no output is written over the model file, however it is named: -o
     * model.json wrote the stats there, a run's, replications' or a sweep's */
    char *model_text = cli_slurp(m);
    cr_assert(model_text);
    /* a hard link too (it was taken, and the stats replaced the model) */
    const char *hard = cli_path("hard-link-to-model.json");
    unlink(hard);
    cr_assert_eq(link(m, hard), 0);
    snprintf(line, sizeof line, "the model file and the stats (-o): expected a file each, found one for both (%s)", hard);
    expect_bad(kairos("run", m, "-o", hard, NULL), line);
    const char *link = cli_path("link-to-model.json");
    unlink(link);
    cr_assert_eq(symlink(m, link), 0);
    snprintf(line, sizeof line, "the model file and the stats (-o): expected a file each, found one for both (%s)", m);
    expect_bad(kairos("run", m, "-o", m, NULL), line);
    expect_bad(kairos("run", m, "--replications", "2", "-o", m, NULL), line);
    snprintf(line, sizeof line, "the model file and the trace (--trace): expected a file each, found one for both "
             "(%s)", link);
    expect_bad(kairos("run", m, "--trace", link, NULL), line);
    snprintf(line, sizeof line, "the model file and the sweep's table (-o): expected a file each, found one for both "
             "(%s)", m);
    expect_bad(kairos("sweep", m, "--vary", "seed=[1,2]", "-o", m, NULL), line);
    snprintf(line, sizeof line, "the model file and the event log of 'mm1' (--event-log): expected a file each, found "
             "one for both (%s/mm1.jsonl)", cli_path("."));
    cli_write(cli_path("mm1.jsonl"), model_text);
    expect_bad(kairos("run", cli_path("mm1.jsonl"), "--event-log", cli_path("."), NULL), line);
    char *after = cli_slurp(m), *after_log = cli_slurp(cli_path("mm1.jsonl"));
    cr_assert(after && after_log);
    cr_assert_str_eq(after, model_text, "the model file is as it was");
    cr_assert_str_eq(after_log, model_text, "the model file is as it was");
    free(after);
    free(after_log);
    free(model_text);
    /* ... nor a file of the frames' folder, also one still to be made and
     * spelled otherwise, or a fragment of the trace (found by review: the
     * run went to its end, then failed renaming) */
    const char *eco = source("examples/ecology.json");
    snprintf(line, sizeof line, "the stats (-o) and the frames' manifest (--frames): expected a file each, found one "
             "for both (%s)", cli_path("fr/manifest.json"));
    expect_bad(kairos("run", eco, "--end", "2", "--frames", cli_path("fr"), "-o", cli_path("fr/manifest.json"), NULL),
               line);
    snprintf(line, sizeof line, "the stats (-o) and the frames of 'eco[0]' (--frames): expected a file each, found one "
             "for both (%s)", cli_path("fr/eco[0].frames"));
    expect_bad(kairos("run", eco, "--end", "2", "--frames", cli_path("fr"), "-o", cli_path("./fr/../fr/eco[0].frames"),
                      NULL), line);
    cr_assert(!cli_exists(cli_path("fr")), "no frames folder made");
    snprintf(line, sizeof line, "the stats (-o) and a fragment of the trace (--trace): expected a file each, found one "
             "for both (%s)", cli_path("t.json.rank0"));
    expect_bad(kairos("run", m, "--trace", cli_path("t.json"), "-o", cli_path("t.json.rank0"), NULL), line);
    expect_bad(kairos("run", m, "--checkpoint-every", "1e-9", NULL),
               "--checkpoint-every: expected a model time of at least one tick (1e-06), found 1e-09");
    /* a value that only the kind refuses: found when that point is built */
    snprintf(line, sizeof line, "%s: simulators[0].params.capacity: expected a whole number >= 1, <= 100000000, "
             "found 0", m);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.capacity=[3,0]", "-o", csv, NULL), line);
    cr_assert(!cli_exists(csv) && !cli_exists(cli_path("bad.csv.partial")), "no CSV after a failed sweep");
}

/* One PNG per statistic, or, without matplotlib, one line before any run. */
Test(cli, sweep_plots_or_says_matplotlib_is_missing, .timeout = 120)
{
    const char *m = model(CLI_MM1);
    char csv[600], dir[600], png[700];
    snprintf(csv, sizeof csv, "%s", cli_path("plot.csv"));
    snprintf(dir, sizeof dir, "%s", cli_path("plots"));
    /* an interpreter that cannot see site packages has no matplotlib */
    const char *nomat = cli_path("python-without-site");
    cli_write(nomat, "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
    cr_assert_eq(chmod(nomat, 0755), 0);
    setenv("KAIROS_PYTHON", nomat, 1);
    cli_result_t r = kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "-o", csv, "--plot", dir, NULL);
    char line[1400];
    snprintf(line, sizeof line, "--plot: matplotlib is missing for %s (apt-get install python3-matplotlib, or "
             "scripts/setup)", nomat);
    expect_bad(r, line);
    cr_assert(!cli_exists(csv), "the sweep did not run");
    /* an interpreter that is not there: its reason, not an empty one */
    setenv("KAIROS_PYTHON", "/nonexistent/python3", 1);
    r = kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "-o", csv, "--plot", dir, NULL);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "--plot: cannot run /nonexistent/python3 ") &&
                  strstr(r.err, ": No such file or directory\n"), "%s", r.err);
    cli_free(&r);
    unsetenv("KAIROS_PYTHON");
    /* a plot folder that is a file: one line, before the sweep runs */
    const char *file = cli_path("plots-a-file");
    cli_write(file, "not a folder\n");
    r = kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "-o", csv, "--plot", file, NULL);
    snprintf(line, sizeof line, "--plot %s: expected a folder (made if missing), found a file", file);
    expect_bad(r, line);
    cr_assert(!cli_exists(csv), "the sweep did not run");
    r = kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "--replications", "2", "-o", csv,
               "--plot", dir, "--quiet", NULL);
    if (r.status == 2 && strstr(r.err, "matplotlib is missing")) {
        /* this machine has no matplotlib: the same one line */
        cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
        cli_free(&r);
        return;
    }
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    const char *stats[] = { "mm1.utilisation", "mm1.mean_time_in_system", "mm1.skipped" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(png, sizeof png, "%s/%s.png", dir, stats[i]);
        char *data = cli_slurp(png);
        cr_assert(data && !memcmp(data, "\x89PNG", 4), "%s is a PNG", png);
        free(data);
        snprintf(png, sizeof png, "%s/%s.png.partial", dir, stats[i]);
        cr_assert(!cli_exists(png));
    }
}

/* A plot that fails, or that kairos is interrupted in, leaves the complete
 * CSV (it was drawn from the .partial, which went with it); a CSV named as
 * a plot in the plots' folder, or as the folder itself, is refused before
 * the sweep runs (it was lost after the whole sweep). */
Test(cli, sweep_plots_fail_apart_from_the_table, .timeout = 120)
{
    const char *m = model(CLI_MM1), *bin = getenv("KAIROS_BIN");
    char csv[600], dir[600], line[1400];
    snprintf(csv, sizeof csv, "%s", cli_path("keep.csv"));
    snprintf(dir, sizeof dir, "%s", cli_path("keep-plots"));
    const char *fails = cli_path("fails.py"), *slow = cli_path("slow.py");
    cli_write(fails, "import sys\nif sys.argv[1] == '--check': sys.exit(0)\nprint('no plot today', file=sys.stderr)\n"
                     "sys.exit(3)\n");
    cli_write(slow, "import os, sys, time\nif sys.argv[1] == '--check': sys.exit(0)\nos.makedirs(sys.argv[2], "
                    "exist_ok=True)\nopen(os.path.join(sys.argv[2], 'started'), 'w').close()\ntime.sleep(60)\n");
    setenv("KAIROS_PLOT_SCRIPT", fails, 1);
    cli_result_t r = kairos("sweep", m, "--end", "200", "--vary", "simulators.mm1.params.servers=[1,2]", "-o", csv,
                            "--plot", dir, "--quiet", NULL);
    snprintf(line, sizeof line, "--plot %s: no plot today (%s is complete)", dir, csv);
    expect_bad(r, line);
    char *table = cli_slurp(csv);
    cr_assert(table && strstr(table, "simulators.mm1.params.servers"), "the CSV is kept whole");
    free(table);

    setenv("KAIROS_PLOT_SCRIPT", slow, 1);
    char *argv[] = { (char *)bin, "sweep", (char *)m, "--end", "200", "--vary", "simulators.mm1.params.servers=[1,2]",
                     "-o", (char *)cli_path("slow.csv"), "--plot", dir, "--quiet", NULL };
    pid_t pid = cli_start(argv);
    char started[700];
    snprintf(started, sizeof started, "%s/started", dir);
    for (int i = 0; i < 400 && !cli_exists(started); i++) nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
    cr_assert(cli_exists(started), "the plot script started");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(kill(pid, SIGTERM), 0);
    r = cli_wait(pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(r.status, 143, "%s", r.err);
    snprintf(line, sizeof line, "kairos: --plot %s: interrupted (SIGTERM) while drawing the plots: %s is complete, "
             "the plots are not\n", dir, cli_path("slow.csv"));
    cr_assert_str_eq(r.err, line);
    cr_assert(t1.tv_sec - t0.tv_sec < 20, "not held until the script ends");
    cr_assert(cli_exists(cli_path("slow.csv")));
    cli_free(&r);
    unsetenv("KAIROS_PLOT_SCRIPT");

    char png[700];
    snprintf(png, sizeof png, "%s/mm1.skipped.png", dir);
    snprintf(line, sizeof line, "-o %s: expected a table apart from the plots, found a name a plot in --plot %s may "
             "take (NAME.png)", png, dir);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "-o", png, "--plot", dir, NULL),
               line);
    const char *same = cli_path("same.csv");
    snprintf(line, sizeof line, "the sweep's table (-o) and the plots' folder (--plot): expected a file each, found one "
             "for both (%s)", same);
    expect_bad(kairos("sweep", m, "--vary", "simulators.mm1.params.servers=[1,2]", "-o", same, "--plot", same, NULL),
               line);
    cr_assert(!cli_exists(same) && !cli_exists(png), "nothing ran");
}

/* ---- the model's digests (issue 16) ---- */

/* The digests `kairos validate MODEL [--set SET]` prints (16 hex digits each). */
static void validate_digests(const char *m, const char *set, char identity[17], char run[17])
{
    cli_result_t r = set ? kairos("validate", m, "--set", set, NULL) : kairos("validate", m, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *at = strstr(r.out, "  identity digest ");
    cr_assert(at, "no digests in:\n%s", r.out);
    cr_assert_eq(sscanf(at, "  identity digest %16[0-9a-f], run digest %16[0-9a-f]", identity, run), 2, "%s", at);
    cr_assert_eq(strlen(identity), 16);
    cr_assert_eq(strlen(run), 16);
    cli_free(&r);
}

/* A model's identity is what its checkpoints and emulation logs are
 * matched by: it must not move when the digest learns a new item (one
 * added among the numbered items changed every model with a stop
 * lookahead). The values are those examples/mm1.json had before (dd10392). */
Test(cli, identity_digests_stay_put)
{
    char identity[17], run[17];
    validate_digests(source("examples/mm1.json"), NULL, identity, run);
    cr_assert_str_eq(identity, "619cce5da4181d2f");
    validate_digests(source("examples/mm1.json"), "stop_lookahead=3", identity, run);
    cr_assert_str_eq(identity, "ba8a4e973c44e329");
}

/* The digests of a run's stats. */
static void stats_digests(const char *stats, char identity[17], char run[17])
{
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s", e.text);
    const char *i = json_string_value(json_object_get(s, "identity_digest"));
    const char *r = json_string_value(json_object_get(s, "run_digest"));
    cr_assert(i && r && strlen(i) == 16 && strlen(r) == 16 && strspn(i, "0123456789abcdef") == 16 &&
              strspn(r, "0123456789abcdef") == 16, "digests of %s", stats);
    snprintf(identity, 17, "%s", i);
    snprintf(run, 17, "%s", r);
    json_decref(s);
}

/* validate prints the digests a run reports; the identity changes with
 * the model (seed, a param, a promise, a time step), the run digest also
 * with the end time and the algorithm, which leave the identity alone. */
Test(cli, validate_prints_the_digests_a_run_reports)
{
    const char *factory = source("examples/factory.json");
    char vi[17], vr[17], si[17], sr[17];
    validate_digests(factory, "end_time=50", vi, vr);
    const char *stats = cli_path("digests.json");
    cli_result_t r = kairos("run", factory, "--quiet", "--end", "50", "-o", stats, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    stats_digests(stats, si, sr);
    cr_assert_str_eq(vi, si);
    cr_assert_str_eq(vr, sr);
    cr_assert_str_neq(vi, vr);
    /* validate takes run's shorthands too */
    r = kairos("validate", factory, "--end", "50", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char needle[80];
    snprintf(needle, sizeof needle, "identity digest %s, run digest %s", si, sr);
    cr_assert(strstr(r.out, needle), "%s", r.out);
    cli_free(&r);

    /* the file as it is */
    validate_digests(factory, NULL, vi, vr);
    char i2[17], r2[17];
    const char *same_identity[] = { "end_time=60", "sync=\"window\"", "mapping=\"block\"" };
    for (size_t k = 0; k < sizeof same_identity / sizeof same_identity[0]; k++) {
        validate_digests(factory, same_identity[k], i2, r2);
        cr_assert_str_eq(i2, vi, "%s", same_identity[k]);
        cr_assert_str_neq(r2, vr, "%s", same_identity[k]);
    }
    const char *other_model[] = { "seed=2", "precision=1000", "simulators.ChemicalBath.params.capacity=9",
                                  "dependencies.1.promise=3", "simulators.TransportRobots.time_step=2",
                                  "simulators.ChemicalBath.formalism=\"continuous\"" };
    for (size_t k = 0; k < sizeof other_model / sizeof other_model[0]; k++) {
        validate_digests(factory, other_model[k], i2, r2);
        /* the last one restates the default: the same model */
        bool same = k == sizeof other_model / sizeof other_model[0] - 1;
        cr_assert(!strcmp(i2, vi) == same, "%s: identity %s, before %s", other_model[k], i2, vi);
        cr_assert(!strcmp(r2, vr) == same, "%s: run digest %s, before %s", other_model[k], r2, vr);
    }
}

/* A plug-in is part of the identity by its bytes: the same file, the same
 * identity; one byte more, another. */
Test(cli, plugin_bytes_are_part_of_the_identity)
{
    const char *plugin = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(plugin, "KAIROS_TEST_PLUGIN is not set");
    char *bytes = cli_slurp(plugin);
    FILE *in = fopen(plugin, "rb");
    cr_assert(bytes && in);
    fseek(in, 0, SEEK_END);
    size_t size = (size_t)ftell(in);
    fclose(in);
    const char *so = cli_path("libcounter.so");
    const char *m = model("{'end_time': 10, 'plugins': ['libcounter.so'], 'simulators': "
                          "[{'name': 'a', 'kind': 'counter', 'params': {'period': 1}}]}");
    char id[3][17], run[3][17];
    for (int k = 0; k < 3; k++) {
        FILE *out = fopen(so, "wb");
        cr_assert(out);
        cr_assert_eq(fwrite(bytes, 1, size, out), size);
        if (k == 2) fputc('\n', out);
        cr_assert_eq(fclose(out), 0);
        validate_digests(m, NULL, id[k], run[k]);
    }
    free(bytes);
    cr_assert_str_eq(id[0], id[1]);
    cr_assert_str_eq(run[0], run[1]);
    cr_assert_str_neq(id[0], id[2]);
    cr_assert_str_neq(run[0], run[2]);
}

/* A plug-in named twice, under two spellings of one path: said so, not
 * "kind 'counter' is already registered" as two plug-ins with a kind of
 * the same name would be. */
Test(cli, plugin_named_twice)
{
    const char *plugin = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(plugin && plugin[0] == '/', "KAIROS_TEST_PLUGIN");
    char text[2048], want[1400];
    const char *slash = strrchr(plugin, '/');
    snprintf(text, sizeof text, "{'end_time': 10, 'plugins': ['%s', '%.*s/./%s'], 'simulators': "
             "[{'name': 'a', 'kind': 'counter', 'params': {'period': 1}}]}", plugin, (int)(slash - plugin), plugin,
             slash + 1);
    const char *m = model(text);
    snprintf(want, sizeof want, "%s: plugins[1]: expected each plug-in once (this file is loaded already, under "
             "another name or the same), found \"%.*s/./%s\"", m, (int)(slash - plugin), plugin, slash + 1);
    expect_bad(kairos("validate", m, NULL), want);
}

/* ---- exit statuses by phase, signals and faults (docs/cli.md) ---- */

/* Two faulty simulators (tests/cli/faulty.c) with `extra_a` / `extra_b`
 * added to their params, edges a -> b (promise 1) and b -> a (promise pb;
 * NULL: no edges). */
static const char *faulty(const char *extra_a, const char *extra_b, const char *pb)
{
    const char *plugin = getenv("KAIROS_FAULTY_PLUGIN");
    cr_assert(plugin && plugin[0] == '/', "KAIROS_FAULTY_PLUGIN");
    char text[2048];
    snprintf(text, sizeof text,
             "{'end_time': 30, 'plugins': ['%s'], 'simulators': ["
             "{'name': 'a', 'kind': 'faulty', 'params': {'period': 1%s}},"
             "{'name': 'b', 'kind': 'faulty', 'params': {'period': 1%s}}], 'dependencies': [%s%s%s]}",
             plugin, extra_a, extra_b,
             pb ? "{'from': 'a', 'to': 'b', 'promise': 1}, {'from': 'b', 'to': 'a', 'promise': " : "", pb ? pb : "",
             pb ? "}" : "");
    return model(text);
}

/* Exit `want`, the message (holding `says`) once on stderr, no stats. */
static void expect_exit(const char *m, int want, const char *says)
{
    const char *stats = cli_path("exit-stats.json");
    cli_result_t r = kairos("run", m, "-o", stats, "--quiet", NULL);
    cr_assert_eq(r.status, want, "exit %d, want %d: %s", r.status, want, r.err);
    const char *at = strstr(r.err, says);
    cr_assert(at && !strstr(at + 1, says), "\"%s\" not said once: %s", says, r.err);
    cr_assert(!cli_exists(stats) && !cli_exists(cli_path("exit-stats.json.partial")), "a stats file was left");
    cli_free(&r);
}

/* A failure inside the run is the run's (1), whatever status the kind
 * gives (a refused sync-event passed on is KR_ERR_INVALID_ARG); a setup
 * error is bad input (2); a deadlock is 3. */
Test(cli, exit_status_by_phase)
{
    expect_exit(faulty(", 'how': 'sync', 'peer': 'b', 'fail_at': 5", "", "1"), 1,
                "kairos: simulator 'a', time 5: pinging: sync-event from 'a' at 5 to 'b' at 5 refused");
    expect_exit(faulty(", 'how': 'often'", "", "1"), 2,
                "simulators[0].params.how: expected none, sync, grow, hold, meddle or spin");
    expect_exit(faulty(", 'how': 'hold', 'peer': 'b', 'fail_at': 5", "", "0"), 3,
                "kairos: deadlock: no simulator can advance");
}

/* A plug-in whose kairos_plugin_init fails without a message: the line
 * names its status, not an empty or an earlier message. */
Test(cli, plugin_failing_without_a_message)
{
    setenv("KAIROS_FAULTY_INIT_FAILS", "1", 1);
    expect_exit(faulty("", "", NULL), 2,
                "plugins[0]: expected a plugin whose kairos_plugin_init succeeds, found status 1 (invalid argument) "
                "with no message");
    unsetenv("KAIROS_FAULTY_INIT_FAILS");
}

/* A plug-in built against other headers is refused when it registers its
 * kind (one with a kr_kind_desc_t one field short ran, and crashed on a
 * restart), naming both layouts; one built before KR_ABI_VERSION too. */
Test(cli, plugin_built_against_other_headers)
{
    char want[600];
    const char *found = "plugins[0]: expected a plugin whose kairos_plugin_init succeeds, found: kr_kind_register: ";
    setenv("KAIROS_FAULTY_ABI", "version", 1);
    snprintf(want, sizeof want, "%sa kind built against other kairos headers (ABI %u, a kr_kind_desc_t of %zu bytes; "
             "this kairos has ABI %u, %zu bytes): rebuild it against this kairos' headers", found,
             (unsigned)KR_ABI_VERSION + 1, sizeof(kr_kind_desc_t), (unsigned)KR_ABI_VERSION, sizeof(kr_kind_desc_t));
    expect_exit(faulty("", "", NULL), 2, want);
    setenv("KAIROS_FAULTY_ABI", "size", 1);
    snprintf(want, sizeof want, "%sa kind built against other kairos headers (ABI %u, a kr_kind_desc_t of %zu bytes; "
             "this kairos has ABI %u, %zu bytes)", found, (unsigned)KR_ABI_VERSION, sizeof(kr_kind_desc_t) - 8,
             (unsigned)KR_ABI_VERSION, sizeof(kr_kind_desc_t));
    expect_exit(faulty("", "", NULL), 2, want);
    setenv("KAIROS_FAULTY_ABI", "old", 1);
    snprintf(want, sizeof want, "%sa kind registered through the function, not the macro of kairos/kind.h (built "
             "against an older kairos' headers, without KR_ABI_VERSION, or called through a pointer): call "
             "kr_kind_register(kinds, &desc), built against this kairos' headers", found);
    expect_exit(faulty("", "", NULL), 2, want);
    unsetenv("KAIROS_FAULTY_ABI");
}

/* KAIROS_FAIL_ALLOC=N: the N-th allocation of the run fails; the run ends
 * with 1 and names the simulator, whether the kind fails itself or only
 * logs the failure (the coordinator then ends the run). A value that is
 * not a whole number >= 1 is bad input. */
Test(cli, allocation_failure_names_the_simulator)
{
    setenv("KAIROS_FAIL_ALLOC", "2", 1);
    expect_exit(faulty(", 'how': 'grow', 'grow': 10, 'fail_at': 1", "", NULL), 1,
                "kairos: simulator 'a', time 1: growing: table: out of memory");
    /* (noticed at the coordinator's next step: the time is where a's step
     * ended, at or after the failure at time 1; where depends on the safe
     * points, whose spacing follows the wall clock, so that a loaded host
     * may end the step at 1 itself) */
    expect_exit(faulty(", 'how': 'grow', 'grow': 10, 'fail_at': 1, 'ignore_errors': true", "", NULL), 1,
                ": out of memory in its events up to now (allocation 2 of the run failed: KAIROS_FAIL_ALLOC)");
    cli_result_t named = kairos("run", faulty(", 'how': 'grow', 'grow': 10, 'fail_at': 1, 'ignore_errors': true", "",
                                              NULL), "--quiet", NULL);
    const char *said = strstr(named.err, "kairos: simulator 'a', time ");
    double noticed = -1;
    cr_assert(said && sscanf(said, "kairos: simulator 'a', time %lf:", &noticed) == 1 && noticed >= 1 &&
              noticed <= 30, "names 'a' at or after its failure at time 1: %s", named.err);
    cli_free(&named);
    setenv("KAIROS_FAIL_ALLOC", "many", 1);
    expect_exit(faulty("", "", NULL), 2, "kairos: KAIROS_FAIL_ALLOC: expected a whole number >= 1, found \"many\"");
    unsetenv("KAIROS_FAIL_ALLOC");
    /* the other settings of the environment are checked alike */
    setenv("KAIROS_WAIT", "fast", 1);
    expect_exit(faulty("", "", NULL), 2, "kairos: KAIROS_WAIT: expected spin, yield or sleep, found \"fast\"");
    unsetenv("KAIROS_WAIT");
    setenv("KAIROS_CHAOS_SEED", "abc", 1);
    expect_exit(faulty("", "", NULL), 2, "kairos: KAIROS_CHAOS_SEED: expected a whole number from 0 to 2^64 - 1, "
                "found \"abc\"");
    setenv("KAIROS_CHAOS_SEED", "99999999999999999999", 1);
    expect_exit(faulty("", "", NULL), 2, "kairos: KAIROS_CHAOS_SEED: expected a whole number from 0 to 2^64 - 1, "
                "found \"99999999999999999999\"");
    unsetenv("KAIROS_CHAOS_SEED");
    cli_result_t r = kairos("run", faulty(", 'how': 'grow', 'grow': 10, 'fail_at': 1", "", NULL), "--quiet", NULL);
    cr_assert_eq(r.status, 0, "without the variable: %s", r.err);
    cli_free(&r);
}

/* The same while an emulation simulator waits for its peer to connect (up
 * to its `wait`): the run stops as it starts, not after the wait. */
Test(cli, signal_interrupts_the_wait_for_a_peer)
{
    const int sigs[] = { SIGTERM, SIGINT };
    for (int k = 0; k < 2; k++) {
        char *argv[] = { (char *)getenv("KAIROS_BIN"), "run", (char *)source("examples/hil/line.json"), "--set",
                         "simulators.controller.emulation.wait=60", "--set",
                         "simulators.controller.emulation.input.listen=127.0.0.1:0", "--quiet", NULL };
        pid_t pid = cli_start(argv);
        sleep(1);
        kill(pid, sigs[k]);
        cli_result_t r = cli_wait(pid);
        cr_assert_eq(r.status, 128 + sigs[k], "exit %d: %s", r.status, r.err);
        /* (after the line that names the free port it listens on) */
        const char *said = strstr(r.err, "kairos: ");
        cr_assert(said && strstr(said, "while waiting for a peer") && cli_lines(said) == 1, "%s", r.err);
        cli_free(&r);
    }
}

/* A simulator whose every event schedules the next with no delay keeps
 * model time where it is: after 10 s of wall time it is named once, as a
 * warning (coordinator.c, watch_stalls), and the run goes on until a
 * signal stops it. (The coordinator reads the clock every 1024 steps,
 * which took a sanitizer build some 2 s on a loaded machine: the signal
 * waits for the warning, not for a fixed time.) */
Test(cli, stalled_model_time_is_named, .timeout = 120)
{
    char stats[600];
    snprintf(stats, sizeof stats, "%s", cli_path("stall.json"));
    char *argv[] = { (char *)getenv("KAIROS_BIN"), "run",
                     (char *)faulty(", 'how': 'spin', 'fail_at': 2", "", NULL), "-o", stats, "--quiet", NULL };
    const char *said = "[warn] a @ 2: model time has not moved for 10 s of wall time, over ";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = cli_start(argv);
    bool seen = false;
    for (int i = 0; i < 600 && !seen; i++) {
        nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
        char *err = cli_slurp(cli_path("stderr.txt"));
        seen = err && strstr(err, said);
        free(err);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    kill(pid, SIGINT);
    cli_result_t r = cli_wait(pid);
    cr_assert(seen, "no warning after %.1f s: %s", waited, r.err);
    cr_assert_geq(waited, 10.0, "warned after %.1f s of wall time: %s", waited, r.err);
    cr_assert_eq(r.status, 128 + SIGINT, "exit %d: %s", r.status, r.err);
    const char *warned = strstr(r.err, said);
    cr_assert(warned && !strstr(warned + strlen(said), "model time has not moved"), "warned once: %s", r.err);
    cr_assert(strstr(warned, " events here (does an event schedule another with no delay every time?)\n"), "%s",
              r.err);
    cr_assert(strstr(r.err, "kairos: run interrupted by SIGINT at model time 2\n"), "%s", r.err);
    cr_assert_eq(cli_lines(r.err), 2, "%s", r.err);
    cli_free(&r);
}

/* SIGTERM and SIGINT to a lone `kairos run` in the middle of a long run: it
 * stops at its next safe point, says once where, leaves no output under its
 * final name, and exits 143 / 130. */
Test(cli, signal_interrupts_a_run)
{
    const int sigs[] = { SIGTERM, SIGINT };
    const char *names[] = { "SIGTERM", "SIGINT" };
    for (int k = 0; k < 2; k++) {
        char stats[600];
        snprintf(stats, sizeof stats, "%s", cli_path("long.json"));
        char *argv[] = { (char *)getenv("KAIROS_BIN"), "run", (char *)source("examples/phold.json"), "--end", "1e9",
                         "-o", stats, "--quiet", NULL };
        pid_t pid = cli_start(argv);
        sleep(2);
        kill(pid, sigs[k]);
        cli_result_t r = cli_wait(pid);
        cr_assert_eq(r.status, 128 + sigs[k], "%s: exit %d: %s", names[k], r.status, r.err);
        char want[64];
        snprintf(want, sizeof want, "kairos: run interrupted by %s at model time ", names[k]);
        cr_assert(!strncmp(r.err, want, strlen(want)) && cli_lines(r.err) == 1, "%s", r.err);
        cr_assert(!cli_exists(stats) && !cli_exists(cli_path("long.json.partial")), "an output file was left");
        cli_free(&r);
    }
}

/* ... also inside an integration that no step would end: a stiff bath
 * (a loss of 1e9) takes its explicit method billions of steps to the
 * first time step, and SIGINT was not heard for minutes. */
Test(cli, signal_interrupts_a_stiff_integration, .timeout = 60)
{
    const char *m = model("{'end_time': 10, 'simulators': [{'name': 'bath', 'kind': 'bath', 'time_step': 2, "
                          "'params': {'loss': 1e9}}]}");
    char *argv[] = { (char *)getenv("KAIROS_BIN"), "run", (char *)m, "--quiet", NULL };
    pid_t pid = cli_start(argv);
    sleep(1);
    kill(pid, SIGINT);
    time_t t0 = time(NULL);
    cli_result_t r = cli_wait(pid);
    cr_assert_eq(r.status, 130, "exit %d: %s", r.status, r.err);
    cr_assert_leq(time(NULL) - t0, 5, "the run ended within seconds of SIGINT");
    cr_assert_str_eq(r.err, "kairos: run interrupted by SIGINT at model time 0\n");
    cli_free(&r);
}
