/* A plug-in kind that declares its parameters (kairos/param.h): one of
 * every type, written into its state by the runtime before setup. Its
 * report shows what the state holds, so that a test sees the values a run
 * used; its setup also reads two keys of its own through the public
 * getters ("also", a second target; "complain", an error about the entry).
 * A second kind, "gauge_sink", declares nothing and only receives. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <kairos/kairos.h>

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
    KR_PARAM(gauge_t, rate, KR_PARAM_NUMBER, .def = "1.5", .range = "> 0", .unit = "1/s",
             .help = "readings per second"),
    KR_PARAM(gauge_t, period, KR_PARAM_DURATION, .def = "5", .range = "> 0", .unit = "s",
             .help = "time between two reports"),
    KR_PARAM(gauge_t, slots, KR_PARAM_INT, .def = "4", .range = ">= 1, <= 64", .help = "readings kept"),
    KR_PARAM(gauge_t, loud, KR_PARAM_BOOL, .def = "false", .help = "log every reading"),
    KR_PARAM(gauge_t, label, KR_PARAM_STRING, .def = "\"gauge\"", .help = "a name for | the reports"),
    KR_PARAM(gauge_t, service, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 2}", .unit = "s",
             .help = "time to take one reading"),
    KR_PARAM(gauge_t, to, KR_PARAM_TARGET, .help = "the simulator readings go to"),
    KR_PARAM(gauge_t, weights, KR_PARAM_LIST, .def = "[1, 2.5]", .range = ">= 0", .help = "weights of the slots"),
    { 0 }
};

/* kr_sim_state once the runtime has it (found at run time, so that the
 * plug-in also loads into a kairos without it). */
static gauge_t *state_of(kr_sim_t *sim)
{
    void *(*fn)(kr_sim_t *);
    *(void **)&fn = dlsym(RTLD_DEFAULT, "kr_sim_state");
    return fn ? fn(sim) : NULL;
}

static kr_status_t gauge_setup(kr_sim_t *sim, const kr_params_t *params)
{
    if (kr_params_json_type(params, "also")) {
        uint32_t id;
        kr_status_t st = kr_params_target(params, "also", NULL, sim, &id);
        if (st) return st;
    }
    bool complain = false;
    kr_status_t st = kr_params_bool(params, "complain", false, &complain);
    if (st || !complain) return st;
    return kr_params_entry_error(params, "formalism", "a formalism gauge allows", "\"emulation\"");
}

static void gauge_report(kr_sim_t *sim, kr_report_t *r)
{
    gauge_t *g = state_of(sim);
    if (!g) return;
    kr_report_number(r, "rate", g->rate);
    kr_report_int(r, "period_ticks", (int64_t)g->period);
    kr_report_int(r, "slots", g->slots);
    kr_report_int(r, "loud", g->loud);
    kr_report_string(r, "label", g->label);
    kr_report_number(r, "service_mean", kr_dist_mean(&g->service));
    kr_report_string(r, "to", g->to);
    double sum = 0;
    for (size_t i = 0; i < g->weights.count; i++) sum += g->weights.values[i];
    kr_report_int(r, "weights_count", (int64_t)g->weights.count);
    kr_report_number(r, "weights_sum", sum);
}

static const kr_kind_desc_t gauge_kind = {
    .name = "gauge",
    .summary = "a test kind that declares one parameter of every type",
    .formalism = KR_DISCRETE_EVENT,
    .formalisms = KR_FORMALISM_BIT(KR_DISCRETE_EVENT) | KR_FORMALISM_BIT(KR_AGENT_BASED),
    .setup = gauge_setup,
    .report = gauge_report,
    .state_size = sizeof(gauge_t),
    .params = gauge_params,
};

/* Statistics by name (kairos/state.h): the runtime reports them with no
 * report function. */
static kr_status_t sink_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    uint64_t *setups = kr_sim_counter(sim, "setups");
    kr_tally_t *draws = kr_sim_tally(sim, "draws");
    kr_histogram_t *h = kr_sim_histogram(sim, "spread", 0, 10, 5);
    if (!setups || !draws || !h || kr_sim_tally(sim, "draws") != draws) return kr_last_status();
    ++*setups;
    kr_tally_add(draws, 2.0);
    kr_tally_add(kr_sim_tally(sim, "draws"), 4.0);
    kr_histogram_add(h, 3.0);
    return KR_OK;
}

static const kr_kind_desc_t sink_kind = {
    .name = "gauge_sink",
    .summary = "receives what gauges send (a test kind)",
    .formalism = KR_DISCRETE_EVENT,
    .setup = sink_setup,
};

kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    kr_status_t st = kr_kind_register(kinds, &gauge_kind);
    return st ? st : kr_kind_register(kinds, &sink_kind);
}
