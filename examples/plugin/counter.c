/* A user model kind in a plugin: "counter", a discrete-event simulator that
 * ticks every `period` model units and reports how often it ticked.
 *
 * Build it out of tree with `make` (see README.md); the kairos executable
 * loads it when a model file lists it under "plugins" and calls
 * kairos_plugin_init, which registers the kind.
 *
 * The simulator's state sits in the state of a behavior on one entity of
 * its world, named "counter": event handlers, report and digest find it
 * from the simulator alone, so the plugin keeps no global mutable state
 * (several counters in one model, or several models, never share it). */
#include <kairos/kairos.h>

#define COUNTER "counter"           /* the station's entity and behavior name */
#define COUNTER_TICK "counter.tick" /* event types are namespaced by kind */

typedef struct counter {
    kr_time_t period;               /* ticks */
    uint64_t ticks;
} counter_t;

static const kr_behavior_vtbl_t counter_vtbl = { 0 }; /* state only, no callbacks */

static counter_t *counter_of(kr_sim_t *sim)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), COUNTER);
    kr_entity_t e = kr_entity_find(w, COUNTER);
    return e == KR_ENTITY_INVALID ? NULL : kr_component_get(w, e, c);
}

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    counter_t *c = counter_of(sim);
    c->ticks++;
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, c->period,
                    kr_model_find_event_type(kr_sim_model(sim), COUNTER_TICK), NULL, NULL) != KR_OK)
        kr_log(sim, KR_LOG_ERROR, "%s", kr_last_error());
}

/* Once per model: the behavior that holds the state and the tick event. */
static kr_status_t counter_register(kr_model_t *model)
{
    if (!kr_behavior_register(kr_model_registry(model), &(kr_behavior_desc_t){ .name = COUNTER,
            .state_size = sizeof(counter_t), .vtbl = &counter_vtbl }))
        return kr_last_status();
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = COUNTER_TICK, .on_event = tick }))
        return kr_last_status();
    return KR_OK;
}

/* Once per simulator of this kind. */
static kr_status_t counter_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_time_t period;
    kr_status_t st = kr_params_duration(params, "period", kr_model_precision(kr_sim_model(sim)), &period);
    if (st != KR_OK) return st;
    if (period == 0) return kr_params_error(params, "period", "a duration of at least one tick", "0");

    kr_world_t *w = kr_sim_world(sim);
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), COUNTER);
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = COUNTER, .components = &c,
                                                                   .component_count = 1 });
    if (e == KR_ENTITY_INVALID) return kr_last_status();
    counter_t *state = kr_component_get(w, e, c);
    state->period = period;
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, period,
                       kr_model_find_event_type(kr_sim_model(sim), COUNTER_TICK), NULL, NULL);
}

static void counter_report(kr_sim_t *sim, kr_report_t *report)
{
    const counter_t *c = counter_of(sim);
    kr_report_int(report, "ticks", c ? (int64_t)c->ticks : 0);
}

static uint64_t counter_digest(kr_sim_t *sim)
{
    const counter_t *c = counter_of(sim);
    return c ? c->ticks * UINT64_C(0x9e3779b97f4a7c15) : 0;
}

static const kr_kind_desc_t counter_kind = {
    .name = "counter",
    .summary = "ticks every `period` and counts the ticks (example plugin)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = counter_register,
    .setup = counter_setup,
    .report = counter_report,
    .digest = counter_digest,
};

/* The entry point the kairos executable looks up (KR_PLUGIN_ENTRY). */
kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    return kr_kind_register(kinds, &counter_kind);
}
