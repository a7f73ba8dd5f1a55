/* A user model kind in a plugin: "counter", a discrete-event simulator that
 * ticks every `period` model units and reports how often it ticked.
 *
 * Build it out of tree with `make` (see README.md); the kairos executable
 * loads it when a model file lists it under "plugins" and calls
 * kairos_plugin_init, which registers the kind.
 *
 * Everything is declared in the kind's descriptor (docs/tutorial.md walks
 * through a larger example): the runtime reads `period` into the
 * simulator's state before setup, registers the "tick" event, reports the
 * `ticks` counter and digests the state for the checksum. The plugin keeps
 * no global mutable state: each simulator has its own block. */
#include <kairos/kairos.h>

typedef struct counter {
    double period;    /* model units */
    uint64_t ticks;
} counter_t;

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    counter_t *c = kr_sim_state(sim);
    c->ticks++;
    if (kr_schedule_in(sim, c->period, tick, NULL) != KR_OK) kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
}

/* Once per simulator of this kind, after its params are in its state. */
static kr_status_t counter_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    return kr_schedule_in(sim, ((counter_t *)kr_sim_state(sim))->period, tick, NULL);
}

static const kr_kind_desc_t counter_kind = {
    .name = "counter",
    .summary = "ticks every `period` and counts the ticks (example plugin)",
    .formalism = KR_DISCRETE_EVENT,
    .setup = counter_setup,
    .state_size = sizeof(counter_t),
    .state_fields = (const kr_field_t[]){ KR_FIELD(counter_t, ticks, KR_FIELD_COUNTER), { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(counter_t, period, KR_PARAM_NUMBER, .def = "1", .range = "> 0", .unit = "s",
                 .help = "time between two ticks, the first at `period`"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){ { .name = "counter.tick", .on_event = tick }, { 0 } },
};

/* The entry point the kairos executable looks up (KR_PLUGIN_ENTRY). */
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    return kr_kind_register(kinds, &counter_kind);
}
