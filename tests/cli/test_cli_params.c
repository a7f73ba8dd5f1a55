/* Declared parameters through the kairos command, with the test plug-in
 * kind "gauge" (params_plugin.c, KAIROS_PARAMS_PLUGIN): `kairos kinds`
 * (list, text, Markdown, unknown names, plug-ins from a model file), the
 * values `kairos validate` shows, every error's one line and exit 2
 * through validate and run, and the defaults a run writes into the state.
 */
#include "spawn.h"

TestSuite(cli_params, .fini = cli_cleanup);

static const char *plugin(void)
{
    const char *p = getenv("KAIROS_PARAMS_PLUGIN");
    cr_assert(p, "KAIROS_PARAMS_PLUGIN is not set");
    return p;
}

/* g sends to s; h has no dependency at all. */
static const char *model(const char *params)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{'end_time': 10, 'plugins': ['%s'], 'simulators': ["
             " {'name': 'g', 'kind': 'gauge', 'params': %s},"
             " {'name': 'h', 'kind': 'gauge_sink'}, {'name': 's', 'kind': 'gauge_sink'}],"
             " 'dependencies': [{'from': 'g', 'to': 's', 'promise': 1}]}", plugin(), params);
    const char *p = cli_path("model.json");
    cli_write(p, text);
    return p;
}

static void expect_bad(cli_result_t r, const char *want)
{
    cr_assert_eq(r.status, 2, "status %d, stderr: %s", r.status, r.err);
    cr_assert_str_empty(r.out, "nothing on stdout: %s", r.out);
    char line[4096];
    snprintf(line, sizeof line, "kairos: %s\n", want);
    cr_assert_str_eq(r.err, line);
    cli_free(&r);
}

/* ---- kairos kinds ---- */

Test(cli_params, kinds_lists_every_kind)
{
    cli_result_t r = kairos("kinds", "--plugin", plugin(), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    cr_assert(!strncmp(r.out, "assembly    factory assembly line", 33), "built-in kinds first: %s", r.out);
    cr_assert(strstr(r.out, "\nsqss        Source -> Queue"), "%s", r.out);
    const char *tail = "gauge       a test kind that declares one parameter of every type\n"
                       "gauge_sink  receives what gauges send (a test kind)\n";
    size_t n = strlen(r.out), m = strlen(tail);
    cr_assert(n > m && !strcmp(r.out + n - m, tail), "plug-in kinds last, in order: %s", r.out);
    cli_free(&r);
}

Test(cli_params, kinds_describes_one)
{
    cli_result_t r = kairos("kinds", "gauge", "--plugin", plugin(), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out,
        "gauge: a test kind that declares one parameter of every type\n"
        "formalisms: discrete-event (default), agent-based\n"
        "parameters:\n"
        "  name     type          default                             range        unit  help\n"
        "  rate     number        1.5                                 > 0          1/s   readings per second\n"
        "  period   duration      5                                   > 0          s     time between two reports\n"
        "  slots    int           4                                   >= 1, <= 64        readings kept\n"
        "  loud     bool          false                                                  log every reading\n"
        "  label    string        \"gauge\"                                                a name for | the reports\n"
        "  service  distribution  {\"dist\": \"exponential\", \"mean\": 2}               s     time to take one reading\n"
        "  to       target        required                                               the simulator readings go to\n"
        "  weights  list          [1, 2.5]                            >= 0               weights of the slots\n");
    cli_free(&r);
    r = kairos("kinds", "gauge", "--markdown", "--plugin", plugin(), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out,
        "Kind `gauge`: a test kind that declares one parameter of every type\n\n"
        "Formalisms: discrete-event (default), agent-based.\n\n"
        "| Parameter | Type | Default | Range | Unit | Description |\n"
        "|---|---|---|---|---|---|\n"
        "| `rate` | number | `1.5` | > 0 | 1/s | readings per second |\n"
        "| `period` | duration | `5` | > 0 | s | time between two reports |\n"
        "| `slots` | int | `4` | >= 1, <= 64 | | readings kept |\n"
        "| `loud` | bool | `false` | | | log every reading |\n"
        "| `label` | string | `\"gauge\"` | | | a name for \\| the reports |\n"
        "| `service` | distribution | `{\"dist\": \"exponential\", \"mean\": 2}` | | s | time to take one reading |\n"
        "| `to` | target | required | | | the simulator readings go to |\n"
        "| `weights` | list | `[1, 2.5]` | >= 0 | | weights of the slots |\n");
    cli_free(&r);
}

Test(cli_params, kinds_of_a_model_files_plugins)
{
    cli_result_t r = kairos("kinds", "gauge_sink", model("{'to': 's'}"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "gauge_sink: receives what gauges send (a test kind)\n"
                            "formalisms: discrete-event (default)\n"
                            "parameters: no table declared (the kind reads its params in its setup)\n");
    cli_free(&r);
}

Test(cli_params, kinds_refusals)
{
    cli_result_t r = kairos("kinds", "nope", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_empty(r.out);
    cr_assert_str_eq(r.err, "kairos kinds: no kind 'nope' (known: assembly, robots, bath, sqss, phold, rows, "
                            "walkers, ecology, feeder, belt, controller, gateway)\n");
    cli_free(&r);
    r = kairos("kinds", "--plugin", "/nonexistent/libx.so", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(!strncmp(r.err, "kairos kinds: --plugin: expected a loadable shared object (", 59), "%s", r.err);
    cr_assert_eq(cli_lines(r.err), 1);
    cli_free(&r);
    r = kairos("kinds", "--markdown", NULL);
    cr_assert_eq(r.status, 2);
    cli_free(&r);
    /* a model file is read as `kairos run` reads it (it gave "line -1
     * column -1" for a missing file, and took a top-level array as one) */
    const char *missing = cli_path("missing.json"), *array = cli_path("array.json");
    cli_write(array, "[1, 2]");
    char want[1024];
    snprintf(want, sizeof want, "%s: (file): expected a readable model file, found No such file or directory", missing);
    expect_bad(kairos("kinds", missing, NULL), want);
    snprintf(want, sizeof want, "%s: (top): expected an object, found [1,2]", array);
    expect_bad(kairos("kinds", array, NULL), want);
    r = kairos("kinds", "--help", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(!strncmp(r.out, "usage: kairos kinds", 19), "%s", r.out);
    cli_free(&r);
}

/* ---- validate and run ---- */

Test(cli_params, validate_shows_the_values)
{
    cli_result_t r = kairos("validate", model("{'to': 's', 'rate': 3, 'service': 2.5, 'weights': [0.1, 3]}"), NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\nparams (the values a run uses, after defaults):\n"
                            "  g (gauge): rate 3 1/s, period 5 s, slots 4, loud false, label \"gauge\", "
                            "service 2.5 s, to s, weights [0.1, 3]\n"), "%s", r.out);
    cli_free(&r);
}

/* The same line from validate and from run, exit 2. */
static void both_refuse(const char *params, const char *want)
{
    const char *m = model(params);
    char line[2048];
    snprintf(line, sizeof line, "%s: %s", m, want);
    expect_bad(kairos("validate", m, NULL), line);
    expect_bad(kairos("run", m, "--quiet", NULL), line);
}

#define P "simulators[0].params."

Test(cli_params, errors)
{
    both_refuse("{'to': 's', 'rate': 'x'}", P "rate: expected a number > 0, found \"x\"");
    both_refuse("{'to': 's', 'period': 0}", P "period: expected a duration in model units > 0, found 0");
    both_refuse("{'to': 's', 'slots': 65}", P "slots: expected a whole number >= 1, <= 64, found 65");
    both_refuse("{'to': 's', 'loud': 1}", P "loud: expected true or false, found 1");
    both_refuse("{}", P "to: expected the name of a simulator with a dependency from 'g', found nothing");
    both_refuse("{'to': 'zz'}",
                P "to: expected the name of a simulator with a dependency from 'g' (there is no simulator 'zz'), "
                  "found \"zz\"");
    both_refuse("{'to': 'h'}",
                P "to: expected the name of a simulator with a dependency from 'g' (none to 'h'), found \"h\"");
    both_refuse("{'to': 's', 'weights': [1, -2]}", P "weights[1]: expected a number >= 0, found -2");
    both_refuse("{'to': 's', 'service': 'fast'}",
                P "service: expected a number or a distribution {\"dist\": constant, uniform, exponential, normal, "
                  "lognormal, triangular, erlang, gamma, discrete, poisson or bernoulli, ...}, found \"fast\"");
    both_refuse("{'to': 's', 'complain': true}",
                "simulators[0].formalism: expected a formalism gauge allows, found \"emulation\"");
}

Test(cli_params, run_writes_values_and_defaults)
{
    const char *stats = cli_path("stats.json");
    cli_result_t r = kairos("run", model("{'to': 's', 'service': 4, 'weights': [1, 2, 3]}"), "--quiet", "-o", stats,
                            NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    json_error_t e;
    json_t *root = json_load_file(stats, 0, &e);
    cr_assert(root, "%s", e.text);
    json_t *g = json_object_get(json_array_get(json_object_get(root, "simulators"), 0), "stats");
    cr_assert_eq(json_real_value(json_object_get(g, "rate")), 1.5);
    cr_assert_eq(json_integer_value(json_object_get(g, "period_ticks")), 5000000);
    cr_assert_eq(json_integer_value(json_object_get(g, "slots")), 4);
    cr_assert_str_eq(json_string_value(json_object_get(g, "label")), "gauge");
    cr_assert_eq(json_real_value(json_object_get(g, "service_mean")), 4);
    cr_assert_str_eq(json_string_value(json_object_get(g, "to")), "s");
    cr_assert_eq(json_integer_value(json_object_get(g, "weights_count")), 3);
    cr_assert_eq(json_real_value(json_object_get(g, "weights_sum")), 6);
    /* the sink's statistics by name, reported in the order they were made */
    json_t *sink = json_object_get(json_array_get(json_object_get(root, "simulators"), 2), "stats");
    const char *keys[] = { "setups", "draws_count", "draws_mean", "draws_sd", "draws_min", "draws_max", "spread" };
    size_t n = 0;
    const char *key;
    json_t *v;
    json_object_foreach(sink, key, v) {
        cr_assert(n < 7, "more statistics than made: %s", key);
        cr_assert_str_eq(key, keys[n++]);
    }
    cr_assert_eq(n, 7);
    cr_assert_eq(json_integer_value(json_object_get(sink, "setups")), 1);
    cr_assert_eq(json_integer_value(json_object_get(sink, "draws_count")), 2);
    cr_assert_eq(json_real_value(json_object_get(sink, "draws_mean")), 3);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(json_object_get(sink, "spread"), "counts"), 1)), 1);
    json_decref(root);
}
