/* "assembly": the factory's assembly line (discrete-event by default).
 *
 * Makes a part (an entity with a factory.part component and a
 * factory.tracker behavior) at `first`, then at intervals drawn from
 * `interval`, up to `limit` parts, and sends each one at once (delay = the
 * edge's promise) to the simulator `to`. */
#include <stdio.h>

#include "models/factory/factory.h"

#define FACTORY_MAKE "factory.make"

typedef struct assembly {
    kr_dist_t interval;       /* owns memory: freed by the context's fini */
    uint32_t target;
    kr_time_t promise;        /* of the edge to the target: the shipping delay */
    int64_t limit;            /* 0 = unlimited */
    uint64_t made;
    kr_event_type_t make;
} assembly_t;

static void assembly_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    kr_dist_fini(&((assembly_t *)context)->interval);
}

static void make_part(kr_sim_t *sim, void *data)
{
    (void)data;
    assembly_t *a = factory_context(sim, FACTORY_ASSEMBLY);
    if (!a) return;
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

static kr_status_t assembly_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK) st = factory_register_context(model, FACTORY_ASSEMBLY, sizeof(assembly_t), assembly_fini);
    if (st == KR_OK && !kr_model_find_event_type(model, FACTORY_MAKE) &&
        !kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FACTORY_MAKE, .on_event = make_part }))
        st = kr_last_status();
    return st;
}

static kr_status_t assembly_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    uint32_t target = 0;
    kr_time_t promise = 0, first = 0;
    int64_t limit = 0;
    kr_dist_t interval = { 0 };
    kr_status_t st = factory_param_target(sim, params, &target, &promise);
    if (st == KR_OK) st = kr_params_dist(params, "interval",
                                         &(kr_dist_desc_t){ .kind = KR_DIST_EXPONENTIAL, .mean = 2.0 }, &interval);
    if (st == KR_OK) st = kr_params_duration(params, "first", KR_TIME_NEVER, &first);
    if (st == KR_OK) st = kr_params_int(params, "limit", 0, 0, INT64_MAX, &limit);
    if (st == KR_OK && limit == 0 && !(kr_dist_mean(&interval) > 0)) {
        /* A zero interval without a limit would make parts forever at one time. */
        char found[64];
        snprintf(found, sizeof found, "a distribution with mean %g and no limit", kr_dist_mean(&interval));
        st = kr_params_error(params, "interval", "a distribution with a positive mean (or a \"limit\")", found);
    }
    assembly_t *a = st == KR_OK ? factory_context(sim, FACTORY_ASSEMBLY) : NULL;
    if (st == KR_OK && !a) st = kr_last_status();
    if (st != KR_OK) {
        kr_dist_fini(&interval);
        return st;
    }
    if (first == KR_TIME_NEVER)
        first = kr_dist_sample_ticks(&interval, kr_sim_rng(sim), kr_model_precision(model));
    /* From here on the context owns the distribution (freed by its fini). */
    *a = (assembly_t){ .interval = interval, .target = target, .promise = promise, .limit = limit,
                       .make = kr_model_find_event_type(model, FACTORY_MAKE) };
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, first, a->make, NULL, NULL);
}

static void assembly_report(kr_sim_t *sim, kr_report_t *r)
{
    const assembly_t *a = factory_context(sim, FACTORY_ASSEMBLY);
    kr_report_int(r, "made", a ? (int64_t)a->made : 0);
}

static uint64_t assembly_digest(kr_sim_t *sim)
{
    const assembly_t *a = factory_context(sim, FACTORY_ASSEMBLY);
    return a ? factory_mix(UINT64_C(0xa55e3b1e), a->made) : 0;
}

const kr_kind_desc_t kr__factory_assembly_kind = {
    .name = "assembly",
    .summary = "factory assembly line: makes parts at random intervals and sends them on",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = assembly_register,
    .setup = assembly_setup,
    .report = assembly_report,
    .digest = assembly_digest,
};
