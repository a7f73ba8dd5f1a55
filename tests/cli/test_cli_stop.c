/* A run that a simulator ends from inside the model (kairos/stop.h), through
 * the kairos command on 1, 2 and 4 ranks with both algorithms: the same
 * final times, event counts and checksum everywhere, exit status 0, the
 * simulators no path reaches at the end time, and "stopped" naming the
 * stopper and its time. The stopper plug-in kind (stopper_plugin.c). */
#include "spawn.h"

TestSuite(cli_stop, .fini = cli_cleanup);

/* A (stops in its 5th tick, at 5) -> B (promise 1) -> C (promise 2) and
 * -> the zero-promise pair F <-> G (promise 0.5); D -> A (D and E: no path
 * from A). Horizons: A 5, B 6, C 8, F and G 6.5. */
static const char *stop_model(void)
{
    const char *plugin = getenv("KAIROS_STOPPER_PLUGIN");
    cr_assert(plugin, "KAIROS_STOPPER_PLUGIN is not set");
    char text[4096];
    snprintf(text, sizeof text, "{'end_time': 20, 'plugins': ['%s'], 'simulators': ["
             "{'name': 'A', 'kind': 'stopper', 'params': {'period': 1, 'to': 'B', 'delay': 1, 'stop_after': 5}}, "
             "{'name': 'B', 'kind': 'stopper', 'params': {'period': 0.5, 'to': 'C,F', 'delay': 2}}, "
             "{'name': 'C', 'kind': 'stopper', 'params': {'period': 0.3}}, "
             "{'name': 'D', 'kind': 'stopper', 'params': {'period': 0.7, 'to': 'A', 'delay': 1}}, "
             "{'name': 'E', 'kind': 'stopper', 'params': {'period': 0.25}}, "
             "{'name': 'F', 'kind': 'stopper', 'params': {'period': 0.4, 'to': 'G', 'delay': 0}}, "
             "{'name': 'G', 'kind': 'stopper', 'params': {'period': 0.4, 'to': 'F', 'delay': 0}}], "
             "'dependencies': [{'from': 'A', 'to': 'B', 'promise': 1}, {'from': 'B', 'to': 'C', 'promise': 2}, "
             "{'from': 'B', 'to': 'F', 'promise': 0.5}, {'from': 'D', 'to': 'A', 'promise': 1}, "
             "{'from': 'F', 'to': 'G', 'promise': 0}, {'from': 'G', 'to': 'F', 'promise': 0}]}", plugin);
    const char *path = cli_path("stop.json");
    cli_write(path, text);
    return path;
}

static double final_time(json_t *stats, const char *name)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(stats, "simulators"), i, s)
        if (!strcmp(json_string_value(json_object_get(s, "name")), name))
            return json_real_value(json_object_get(s, "final_time"));
    cr_assert_fail("no simulator %s", name);
    return 0;
}

/* Runs the model on 1, 2 and 4 ranks with both algorithms (with `few`,
 * three of those runs: 1 rank, 2 with the window, 4 with null messages),
 * with `set`, a --set option, or NULL; checks that every run agrees with
 * the first and returns the first's stats. */
typedef struct run { int np; const char *sync; } run_t;

static json_t *same_everywhere(const char *model, const char *set, bool few)
{
    static const run_t all[] = { { 0, "null-message" }, { 1, "window" }, { 2, "null-message" },
                                 { 2, "window" }, { 4, "null-message" }, { 4, "window" } };
    static const run_t some[] = { { 0, "null-message" }, { 2, "window" }, { 4, "null-message" } };
    const run_t *runs = few ? some : all;
    size_t run_count = few ? sizeof some / sizeof some[0] : sizeof all / sizeof all[0];
    json_t *ref = NULL;
    for (size_t i = 0; i < run_count; i++) {
        const char *stats = cli_path("stop-stats.json");
        const char *args[] = { "run", model, "-o", stats, "--sync", runs[i].sync, set ? "--set" : NULL, set, NULL };
        cli_result_t r = kairos_on(runs[i].np, args);
        cr_assert_eq(r.status, 0, "%d ranks (%s): a stop is no failure: %s", runs[i].np, runs[i].sync, r.err);
        if (i == 0) cr_assert(strstr(r.out, "stopped by A at 5"), "the summary: %s", r.out);
        cli_free(&r);
        json_error_t e;
        json_t *s = json_load_file(stats, 0, &e);
        cr_assert(s, "%s", e.text);
        json_t *stopped = json_object_get(s, "stopped");
        cr_assert(stopped, "%d ranks (%s): no \"stopped\"", runs[i].np, runs[i].sync);
        cr_assert_str_eq(json_string_value(json_object_get(stopped, "by")), "A");
        cr_assert_float_eq(json_real_value(json_object_get(stopped, "time")), 5.0, 1e-12);
        if (!ref) {
            ref = s;
            continue;
        }
        cr_assert_str_eq(json_string_value(json_object_get(s, "checksum")),
                         json_string_value(json_object_get(ref, "checksum")), "%d ranks (%s)", runs[i].np,
                         runs[i].sync);
        json_t *a = json_object_get(s, "simulators"), *b = json_object_get(ref, "simulators");
        cr_assert_eq(json_array_size(a), json_array_size(b));
        for (size_t k = 0; k < json_array_size(a); k++) {
            json_t *x = json_array_get(a, k), *y = json_array_get(b, k);
            cr_assert_eq(json_integer_value(json_object_get(x, "events")),
                         json_integer_value(json_object_get(y, "events")), "%d ranks (%s): simulator %zu", runs[i].np,
                         runs[i].sync, k);
            cr_assert_eq(json_real_value(json_object_get(x, "final_time")),
                         json_real_value(json_object_get(y, "final_time")), "%d ranks (%s): simulator %zu",
                         runs[i].np, runs[i].sync, k);
        }
        json_decref(s);
    }
    return ref;
}

Test(cli_stop, a_stop_ends_the_run_alike_on_1_2_4_ranks_and_both_algorithms, .timeout = 180)
{
    json_t *s = same_everywhere(stop_model(), NULL, false);
    /* each ends after its last event below 5 + d(A -> it) */
    cr_assert_float_eq(final_time(s, "A"), 5.0, 1e-9);
    cr_assert_float_eq(final_time(s, "B"), 5.5, 1e-9);
    cr_assert_float_eq(final_time(s, "C"), 7.8, 1e-9);
    cr_assert_float_eq(final_time(s, "F"), 6.4, 1e-9);
    cr_assert_float_eq(final_time(s, "G"), 6.4, 1e-9);
    /* no path from A: to the end time */
    cr_assert_float_eq(final_time(s, "D"), 19.6, 1e-9);
    cr_assert_float_eq(final_time(s, "E"), 20.0, 1e-9);
    json_decref(s);
}

Test(cli_stop, a_stop_lookahead_ends_every_simulator_alike, .timeout = 180)
{
    json_t *s = same_everywhere(stop_model(), "stop_lookahead=0.25", true);
    /* (the first run asked for null messages: a stop lookahead runs rounds) */
    cr_assert_str_eq(json_string_value(json_object_get(s, "sync")), "window");
    /* every simulator ends before 5.25 */
    cr_assert_float_eq(final_time(s, "A"), 5.0, 1e-9);
    cr_assert_float_eq(final_time(s, "B"), 5.0, 1e-9);
    cr_assert_float_eq(final_time(s, "C"), 5.1, 1e-9);
    cr_assert_float_eq(final_time(s, "F"), 5.2, 1e-9);
    cr_assert_float_eq(final_time(s, "D"), 4.9, 1e-9);
    cr_assert_float_eq(final_time(s, "E"), 5.0, 1e-9);
    json_decref(s);
}

/* A model file `name`: A (the stopper plug-in, stopping at 5) and baths,
 * `bath` the rest of their entry; `top` and `deps` its other parts. */
static const char *stopper_and_baths(const char *name, const char *top, const char *bath, const char *deps)
{
    const char *plugin = getenv("KAIROS_STOPPER_PLUGIN");
    cr_assert(plugin, "KAIROS_STOPPER_PLUGIN is not set");
    char text[1024];
    snprintf(text, sizeof text, "{'end_time': 20, 'seed': 1, 'plugins': ['%s'], %s 'simulators': ["
             "{'name': 'A', 'kind': 'stopper', 'params': {'period': 1, 'stop_after': 5}}, "
             "{'name': 'Bath', 'kind': 'bath', 'formalism': 'continuous', %s "
             "'params': {'capacity': 2, 'initial': 80, 'target': 60}}], 'dependencies': [%s]}", plugin, top, bath,
             deps);
    const char *path = cli_path(name);
    cli_write(path, text);
    return path;
}

/* A stop upstream of a continuous simulator with state events (the bath):
 * its horizon, 6, falls between two of its integration stops (5.7 and
 * 6.0). It integrates to the horizon, where a crossing before it would be
 * found; it stayed at 5.7 with a crossing possible after it for good,
 * which the window algorithm reported as a deadlock (exit 3). */
Test(cli_stop, a_stop_before_a_continuous_simulator_ends_it_alike, .timeout = 180)
{
    const char *path = stopper_and_baths("stop-bath.json", "", "'time_step': 0.3,",
                                         "{'from': 'A', 'to': 'Bath', 'promise': 1}");
    json_t *s = same_everywhere(path, NULL, false);
    cr_assert_float_eq(final_time(s, "A"), 5.0, 1e-9);
    json_decref(s);
}

/* Two baths with state events and no dependency, stepping 2, tied to
 * each other and to A only by a stop lookahead of 0.5: each waited at 0
 * for the other to pass 0.5, with its next integration stop at 2 (a
 * deadlock, exit 3, found by a new-user trial). The stop lookahead now
 * spaces their stops as a promise of 0.5 would (docs/concepts.md). */
Test(cli_stop, continuous_simulators_tied_by_a_stop_lookahead_alone_run, .timeout = 180)
{
    const char *path = stopper_and_baths("stop-baths.json", "'stop_lookahead': 0.5,", "'time_step': 2, 'count': 2,",
                                         "");
    json_t *s = same_everywhere(path, NULL, true);
    cr_assert_float_eq(final_time(s, "A"), 5.0, 1e-9);
    json_decref(s);
}

Test(cli_stop, a_bad_stop_lookahead_is_refused_in_the_standard_form)
{
    const char *model = stop_model();
    const char *args[] = { "validate", model, "--set", "stop_lookahead=-1", NULL };
    cli_result_t r = kairos_on(0, args);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "stop_lookahead: expected a time >= 0 in model units, found -1"), "%s", r.err);
    cli_free(&r);
    /* 0 with several zero-promise groups: refused by validate and run alike */
    const char *verbs[] = { "validate", "run" };
    for (int i = 0; i < 2; i++) {
        const char *zero[] = { verbs[i], model, "--set", "stop_lookahead=0", "--quiet", NULL };
        if (i == 0) zero[4] = NULL;
        r = kairos_on(0, zero);
        cr_assert_eq(r.status, 2, "%s: %s", verbs[i], r.err);
        cr_assert(strstr(r.err, "stop_lookahead: expected a positive time"), "%s: %s", verbs[i], r.err);
        cli_free(&r);
    }
}

Test(cli_stop, a_run_nobody_stops_has_no_stopped)
{
    const char *stats = cli_path("nostop-stats.json");
    const char *args[] = { "run", stop_model(), "-o", stats, "--set", "simulators.A.params.stop_after=0", NULL };
    cli_result_t r = kairos_on(0, args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not(strstr(r.out, "stopped by"), "%s", r.out);
    cli_free(&r);
    json_error_t e;
    json_t *s = json_load_file(stats, 0, &e);
    cr_assert(s, "%s", e.text);
    cr_assert_null(json_object_get(s, "stopped"));
    cr_assert_float_eq(final_time(s, "A"), 20.0, 1e-9);
    json_decref(s);
}
