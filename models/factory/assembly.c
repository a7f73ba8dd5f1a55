/* "assembly": the factory's assembly line (discrete-event by default).
 *
 * Makes a part (an entity with a factory.part component and a
 * factory.tracker behavior) at `first`, then at intervals drawn from
 * `interval`, up to `limit` parts, and sends each one at once (delay = the
 * edge's promise) to the simulator `to`. */
#include <stdio.h>

#include "models/factory/factory.h"

typedef struct assembly {
    const char *to;           /* params */
    kr_dist_t interval;
    int64_t limit;            /* 0 = unlimited */
    uint32_t target;
    kr_time_t promise;        /* of the edge to the target: the shipping delay */
    uint64_t made;
    kr_event_type_t make;
} assembly_t;

static void make_part(kr_sim_t *sim, void *data)
{
    (void)data;
    assembly_t *a = kr_sim_state(sim);
    kr_entity_t part = factory_part_create(sim, a->made, kr_sim_now(sim));
    if (part == KR_ENTITY_INVALID) {
        kr_sim_fail(sim, kr_last_status(), "making part %llu: %s", (unsigned long long)a->made, kr_last_error());
        return;
    }
    a->made++;
    factory_ship(sim, a->target, a->promise, &part, 1);
    if (a->limit == 0 || a->made < (uint64_t)a->limit) {
        kr_time_t gap = kr_dist_sample_ticks(&a->interval, kr_sim_rng(sim),
                                             kr_model_precision(kr_sim_model(sim)));
        if (kr_schedule(sim, KR_PRIORITY_DEFAULT, gap, a->make, NULL, NULL) != KR_OK)
            kr_sim_fail(sim, kr_last_status(), "planning the next part: %s", kr_last_error());
    }
}

static kr_status_t assembly_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    assembly_t *a = kr_sim_state(sim);
    /* Not in the table: its default is a draw of `interval`. */
    kr_time_t first = 0;
    kr_status_t st = kr_params_duration(params, "first", KR_TIME_NEVER, &first);
    if (st != KR_OK) return st;
    double tick = 1.0 / (double)kr_model_precision(model);
    if (a->limit == 0 && !(kr_dist_mean(&a->interval) >= tick)) {
        /* A zero interval without a limit would make parts forever at one
         * time; one below a tick (each gap taken as one) a million a unit. */
        char found[64], expected[96];
        snprintf(found, sizeof found, "a distribution with mean %g and no limit", kr_dist_mean(&a->interval));
        snprintf(expected, sizeof expected, "a distribution with a mean of at least one tick (%g), or a \"limit\"",
                 tick);
        return kr_params_error(params, "interval", expected, found);
    }
    if (first == KR_TIME_NEVER)
        first = kr_dist_sample_ticks(&a->interval, kr_sim_rng(sim), kr_model_precision(model));
    a->target = factory_target(sim, a->to, &a->promise);
    if ((st = factory_check_takes(sim, params, "to", a->target, FACTORY_SHIP))) return st;
    a->make = kr_model_handler_type(model, make_part);
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, first, a->make, NULL, NULL);
}

static void assembly_report(kr_sim_t *sim, kr_report_t *r)
{
    kr_report_int(r, "made", (int64_t)((const assembly_t *)kr_sim_state(sim))->made);
}

const kr_kind_desc_t kr__factory_assembly_kind = {
    .name = "assembly",
    .summary = "factory assembly line: makes parts at random intervals and sends them on",
    .formalism = KR_DISCRETE_EVENT,
    /* The line may also run paced by the wall clock, as it could before it
     * declared its formalisms. */
    .formalisms = KR_FORMALISM_BIT(KR_EMULATION),
    .register_types = factory_register_common,
    .setup = assembly_setup,
    .report = assembly_report,
    /* No serialize: `made` is declared, the next part is an event, the
     * parts in transit are events' entities and every draw comes from
     * kr_sim_rng; the rest (target, promise, event type) is setup's. */
    .state_size = sizeof(assembly_t),
    .state_fields = (const kr_field_t[]){ KR_FIELD(assembly_t, made, KR_FIELD_U64), { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(assembly_t, to, KR_PARAM_TARGET, .help = "the simulator that takes the parts"),
        KR_PARAM(assembly_t, interval, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 2}",
                 .unit = "model units", .help = "time between parts"),
        KR_PARAM(assembly_t, limit, KR_PARAM_INT, .def = "0", .range = ">= 0",
                 .help = "parts to make (0: unlimited)"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        FACTORY_SHIP_EVENT, { .name = "factory.make", .on_event = make_part }, { 0 } },
    /* It ships parts and takes none: a sync-event sent to it is refused. */
    .receives = (const char *const[]){ NULL },
};
