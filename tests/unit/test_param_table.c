/* Declared parameters (kairos/param.h, runtime/param_table.c): tables
 * refused at registration, every type read from a model file into a state
 * block, defaults, each error in its exact one-line form, the values
 * validate shows, and the description `kairos kinds` prints. The test
 * kind's setup applies the table itself into a block of its own, as the
 * runtime does before setup, so that these tests do not depend on where
 * the runtime keeps its state. */
#include "model_text.h"
#include "runtime/kind_doc.h"
#include "runtime/param_table.h"

typedef struct gauge {
    double rate;
    kr_time_t period;
    int64_t slots;
    bool loud;
    const char *label;
    kr_dist_t service;
    const char *to;
    kr_number_list_t weights;
} gauge_t;

static const kr_param_t gauge_params[] = {
    KR_PARAM(gauge_t, rate, KR_PARAM_NUMBER, .def = "1.5", .range = "> 0", .unit = "1/s", .help = "readings per second"),
    KR_PARAM(gauge_t, period, KR_PARAM_DURATION, .def = "5", .range = "> 0", .unit = "s", .help = "between reports"),
    KR_PARAM(gauge_t, slots, KR_PARAM_INT, .def = "4", .range = ">= 1, <= 64", .help = "readings kept"),
    KR_PARAM(gauge_t, loud, KR_PARAM_BOOL, .def = "false", .help = "log every reading"),
    KR_PARAM(gauge_t, label, KR_PARAM_STRING, .def = "\"gauge\"", .help = "a name"),
    KR_PARAM(gauge_t, service, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 2}", .unit = "s",
             .help = "time to take one reading"),
    KR_PARAM(gauge_t, to, KR_PARAM_TARGET, .help = "where readings go"),
    KR_PARAM(gauge_t, weights, KR_PARAM_LIST, .def = "[1, 2.5]", .range = ">= 0", .help = "weights"),
    { 0 }
};

/* The states of the gauges of the last build, by simulator id, freed by
 * the fixture. */
static gauge_t states[4];
static kr_kind_desc_t gauge_kind;

static kr_status_t gauge_setup(kr_sim_t *sim, const kr_params_t *params)
{
    cr_assert_lt(kr_sim_id(sim), 4);
    /* a test may build several models: the last one's state is kept */
    kr__param_table_fini(&gauge_kind, &states[kr_sim_id(sim)]);
    kr_status_t st = kr__param_table_apply(&gauge_kind, (kr_params_t *)params, sim, &states[kr_sim_id(sim)]);
    if (st) return st;
    /* the public getters for keys the table does not declare */
    if (kr_params_json_type(params, "also")) {
        uint32_t id;
        if ((st = kr_params_target(params, "also", NULL, sim, &id))) return st;
    }
    bool complain = false;
    if ((st = kr_params_bool(params, "complain", false, &complain)) || !complain) return st;
    return kr_params_entry_error(params, "formalism", "a formalism gauge allows", "\"emulation\"");
}

static kr_status_t sink_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)sim;
    (void)params;
    return KR_OK;
}

/* A setup that drops a getter's status (docs/regions.md's example did). */
static kr_status_t careless_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)sim;
    int64_t n;
    (void)kr_params_int(params, "n", 1, 1, 10, &n);
    return KR_OK;
}

static kr_kind_desc_t gauge_kind = {
    .name = "gauge", .summary = "declares one parameter of every type", .formalism = KR_DISCRETE_EVENT,
    .formalisms = KR_FORMALISM_BIT(KR_AGENT_BASED), .setup = gauge_setup, .state_size = sizeof(gauge_t),
    .params = gauge_params,
};

static kr_status_t register_kinds(kr_kinds_t *kinds)
{
    kr_status_t st = kr_kind_register(kinds, &gauge_kind);
    if (!st) st = kr_kind_register(kinds, &(kr_kind_desc_t){ .name = "careless", .setup = careless_setup });
    return st ? st : kr_kind_register(kinds, &(kr_kind_desc_t){ .name = "sink", .setup = sink_setup });
}

static void fini(void)
{
    for (int i = 0; i < 4; i++) kr__param_table_fini(&gauge_kind, &states[i]);
    memset(states, 0, sizeof states);
    mt_cleanup();
    (void)mt_load; /* model_text.h's loader of built-in kinds: this test has its own */
}

TestSuite(param_table, .fini = fini);

#define MODEL(params)                                                                                      \
    "{'end_time': 10, 'simulators': [{'name': 'g', 'kind': 'gauge', 'params': " params "},"                \
    " {'name': 'h', 'kind': 'sink'}, {'name': 's', 'kind': 'sink'}],"                                      \
    " 'dependencies': [{'from': 'g', 'to': 's', 'promise': 1}]}"

static kr__model_file_t *load(const char *text, const char *set)
{
    mt_write(text);
    const char *sets[1] = { set };
    return kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path, .sets = sets, .set_count = set ? 1 : 0,
                                                       .register_builtin = register_kinds });
}

/* Builds MODEL with `set`; returns the model (or NULL) and the file. */
static kr_model_t *build(const char *set, kr__model_file_t **fp)
{
    kr__model_file_t *f = load(MODEL("{'to': 's'}"), set);
    cr_assert(f, "load: %s", kr_last_error());
    *fp = f;
    return kr__model_file_build(f, NULL);
}

static void expect_error(const char *set, const char *jpath, const char *expected, const char *found)
{
    kr__model_file_t *f;
    kr_model_t *m = build(set, &f);
    cr_assert_null(m, "%s should be refused", set);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
    kr__model_file_free(f);
}

/* ---- reading ---- */

Test(param_table, defaults_apply)
{
    kr__model_file_t *f;
    kr_model_t *m = build(NULL, &f);
    cr_assert(m, "%s", kr_last_error());
    gauge_t *g = &states[0];
    cr_assert_eq(g->rate, 1.5);
    cr_assert_eq(g->period, 5 * KR_PRECISION_DEFAULT);
    cr_assert_eq(g->slots, 4);
    cr_assert_not(g->loud);
    cr_assert_str_eq(g->label, "gauge");
    cr_assert_eq(kr_dist_mean(&g->service), 2);
    cr_assert_str_eq(g->to, "s");
    cr_assert_eq(g->weights.count, 2);
    cr_assert_eq(g->weights.values[0], 1);
    cr_assert_eq(g->weights.values[1], 2.5);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(param_table, every_type_parses)
{
    kr__model_file_t *f = load(MODEL("{'to': 's', 'rate': 3, 'period': 0.0000015, 'slots': 64.0, 'loud': true,"
                                     " 'label': '', 'service': 2.5, 'weights': []}"), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    gauge_t *g = &states[0];
    cr_assert_eq(g->rate, 3);
    cr_assert_eq(g->period, 2, "1.5 ticks rounded up");
    cr_assert_eq(g->slots, 64);
    cr_assert(g->loud);
    cr_assert_str_eq(g->label, "");
    cr_assert_eq(kr_dist_mean(&g->service), 2.5, "a bare number is a constant");
    cr_assert_eq(g->weights.count, 0);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(param_table, show_gives_the_values_a_run_uses)
{
    kr__model_file_t *f = load(MODEL("{'to': 's', 'rate': 0.1, 'service': 3, 'weights': [0, 1e-3]}"), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_params_t *p = kr__params_open(f->path, "simulators[0].params", f->sims[0].params, f->precision);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_eq(kr__param_table_show(&gauge_kind, p, kr_model_sim(m, 0), out), KR_OK, "%s", kr_last_error());
    fclose(out);
    cr_assert_str_eq(text, "rate 0.1 1/s, period 5 s, slots 4, loud false, label \"gauge\", service 3 s, to s, "
                           "weights [0, 0.001]");
    free(text);
    kr__params_close(p);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* ---- errors, each in the standard one-line form ---- */

#define P "simulators[0].params."

Test(param_table, wrong_type)
{
    expect_error("simulators.g.params.rate=\"x\"", P "rate", "a number > 0", "\"x\"");
    expect_error("simulators.g.params.period=true", P "period", "a duration in model units > 0", "true");
    expect_error("simulators.g.params.loud=1", P "loud", "true or false", "1");
    expect_error("simulators.g.params.label=3", P "label", "a string", "3");
    expect_error("simulators.g.params.weights=3", P "weights", "an array of numbers each >= 0", "3");
    expect_error("simulators.g.params.slots=2.5", P "slots", "a whole number >= 1, <= 64", "2.5");
}

Test(param_table, out_of_range)
{
    expect_error("simulators.g.params.rate=0", P "rate", "a number > 0", "0");
    expect_error("simulators.g.params.period=-1", P "period", "a duration in model units > 0", "-1");
    expect_error("simulators.g.params.slots=65", P "slots", "a whole number >= 1, <= 64", "65");
}

Test(param_table, missing_required)
{
    expect_error("simulators.g.params={}", P "to", "the name of a simulator with a dependency from 'g'", "nothing");
}

Test(param_table, targets)
{
    expect_error("simulators.g.params.to=\"zz\"", P "to",
                 "the name of a simulator with a dependency from 'g' (there is no simulator 'zz')", "\"zz\"");
    expect_error("simulators.g.params.to=\"h\"", P "to",
                 "the name of a simulator with a dependency from 'g' (none to 'h')", "\"h\"");
    expect_error("simulators.g.params.to=7", P "to", "the name of a simulator with a dependency from 'g'", "7");
}

Test(param_table, bad_list_element)
{
    expect_error("simulators.g.params.weights=[1,-1]", P "weights[1]", "a number >= 0", "-1");
    expect_error("simulators.g.params.weights=[1,\"a\"]", P "weights[1]", "a number >= 0", "\"a\"");
}

Test(param_table, distributions)
{
    expect_error("simulators.g.params.service=\"2\"", P "service",
                 "a number or a distribution {\"dist\": constant, uniform, exponential, normal, lognormal, "
                 "triangular, erlang, gamma, discrete, poisson or bernoulli, ...}", "\"2\"");
    expect_error("simulators.g.params.service={\"dist\":\"exponential\"}", P "service.mean", "a number", "nothing");
}

Test(param_table, unknown_key_still_reported)
{
    expect_error("simulators.g.params.bogus=1", P "bogus",
                 "a parameter of kind 'gauge' (rate, period, slots, loud, label, service, to, weights, "
                 "complain)", "the unknown key \"bogus\"");
}

Test(param_table, public_getters)
{
    /* kr_params_json_type marks nothing read: "also" is then read by kr_params_target */
    expect_error("simulators.g.params.also=\"h\"", P "also",
                 "the name of a simulator with a dependency from 'g' (none to 'h')", "\"h\"");
    expect_error("simulators.g.params.complain=true", "simulators[0].formalism", "a formalism gauge allows",
                 "\"emulation\"");
    kr__model_file_t *f;
    kr_model_t *m = build("simulators.g.params.also=\"s\"", &f);
    cr_assert(m, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
    /* a getter's refusal is the setup's even when the setup went on (the
     * run went on with the default) */
    expect_error("simulators.h={\"name\": \"h\", \"kind\": \"careless\", \"params\": {\"n\": 0}}",
                 "simulators[1].params.n", "a whole number from 1 to 10", "0");
}

/* ---- registration ---- */

static void expect_refused(const kr_param_t *rows, size_t state_size, const char *message)
{
    kr_kind_desc_t k = { .name = "source", .setup = sink_setup, .state_size = state_size, .params = rows };
    cr_assert_eq(kr__param_table_check(&k), KR_ERR_INVALID_ARG, "should refuse: %s", message);
    cr_assert_str_eq(kr_last_error(), message);
}

typedef struct source {
    kr_time_t interval;
    const char *target;
} source_t;

Test(param_table, registration_accepts_a_good_table)
{
    kr_kind_desc_t k = gauge_kind;
    cr_assert_eq(kr__param_table_check(&k), KR_OK, "%s", kr_last_error());
    k.params = NULL;
    cr_assert_eq(kr__param_table_check(&k), KR_OK);
}

Test(param_table, registration_refuses_bad_tables)
{
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_DURATION, .def = "abc"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': default \"abc\" is not a duration in "
                   "model units >= 0");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_DURATION, .def = "0", .range = "> 0"),
                                   { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': default \"0\" is not a duration in "
                   "model units > 0");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, target, KR_PARAM_TARGET, .def = "3"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'target': default \"3\" is not the name of a "
                   "simulator");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_DURATION, .range = "> 0, > 1"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': range \"> 0, > 1\" is not "
                   "comma-separated \"> x\", \">= x\", \"< x\", \"<= x\" with finite x and at most one bound each "
                   "side, not empty");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_DURATION, .range = "=> 1"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': range \"=> 1\" is not "
                   "comma-separated \"> x\", \">= x\", \"< x\", \"<= x\" with finite x and at most one bound each "
                   "side, not empty");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, target, KR_PARAM_STRING, .range = "> 1"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'target': a string takes no range (found \"> 1\")");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, target, KR_PARAM_LIST), { 0 } }, sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'target': its list field (offset 8, "
                   "16 bytes) is outside the state (16 bytes)");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_DURATION),
                                   KR_PARAM(source_t, interval, KR_PARAM_NUMBER), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[1] 'interval': the name of params[0] already");
    expect_refused((kr_param_t[]){ { .name = "x", .type = 99 }, { 0 } }, sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'x': unknown type 99");
    expect_refused((kr_param_t[]){ { .name = "", .type = KR_PARAM_BOOL }, { 0 } }, sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] has an empty name");
    /* a name --set cannot reach, and a field a store would not be aligned for */
    expect_refused((kr_param_t[]){ { .name = "a.b", .type = KR_PARAM_BOOL }, { 0 } }, sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'a.b': a name without a dot (--set splits keys at "
                   "dots)");
    expect_refused((kr_param_t[]){ { .name = "x", .type = KR_PARAM_NUMBER, .offset = 3 }, { 0 } }, sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'x': its number field at offset 3 is not aligned to 8 "
                   "bytes (use offsetof, as KR_PARAM does)");
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_NUMBER, .def = "[1]"), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': default \"[1]\" is not a number");
    /* a string default keeps its own quotes, not two pairs */
    expect_refused((kr_param_t[]){ KR_PARAM(source_t, interval, KR_PARAM_NUMBER, .def = "\"five\""), { 0 } },
                   sizeof(source_t),
                   "kr_kind_register: kind 'source': params[0] 'interval': default \"five\" is not a number");
}

/* ---- descriptions ---- */

static char *described(bool markdown)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (markdown) kr__kind_doc_markdown(&gauge_kind, out);
    else kr__kind_doc_text(&gauge_kind, out);
    fclose(out);
    return text;
}

Test(param_table, descriptions)
{
    char *text = described(false);
    cr_assert(strstr(text, "gauge: declares one parameter of every type\nformalisms: discrete-event (default), "
                           "agent-based\nparameters:\n  name     type"), "%s", text);
    cr_assert(strstr(text, "\n  to       target        required"), "%s", text);
    free(text);
    text = described(true);
    cr_assert(strstr(text, "Kind `gauge`: declares one parameter of every type\n\nFormalisms: discrete-event "
                           "(default), agent-based.\n\n| Parameter |"), "%s", text);
    cr_assert(strstr(text, "\n| `slots` | int | `4` | >= 1, <= 64 | | readings kept |\n"), "%s", text);
    free(text);
}
