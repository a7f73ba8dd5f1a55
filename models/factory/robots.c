/* "robots": the factory's transport robots (agent-based by default).
 *
 * Every part that arrives gets a factory.carried behavior; each time step
 * it advances one step, and after `carry_steps` steps it is sent on to the
 * simulator `to` with delay `delay` (at least the edge's promise). */
#include <stdio.h>

#include "factory.h"

#define FACTORY_CARRIED "factory.carried"

typedef struct robots {
    uint32_t target;
    kr_time_t delay;          /* ticks, >= the promise of the edge to target */
    int64_t carry_steps;
    uint64_t received, forwarded;
    kr_component_t carried;
} robots_t;

typedef struct carry {
    int64_t steps;            /* steps taken so far */
} carry_t;

static void carry_update(kr_world_t *w, kr_entity_t self, void *state)
{
    kr_sim_t *sim = kr_sim_of_world(w);
    robots_t *r = factory_station(sim, FACTORY_ROBOTS);
    if (!r || ++((carry_t *)state)->steps < r->carry_steps) return;
    uint32_t target = r->target;
    kr_time_t delay = r->delay;
    kr_component_t carried = r->carried;
    int64_t steps = ((carry_t *)state)->steps;
    kr_component_remove(w, self, carried);       /* state is gone from here on */
    if (factory_ship(sim, target, delay, &self, 1) == KR_OK) {
        ((robots_t *)factory_station(sim, FACTORY_ROBOTS))->forwarded++;
    } else {
        /* Keep holding it (it counts as in transit); factory_ship logged why. */
        carry_t *c = kr_component_add(w, self, carried);
        if (c) c->steps = steps;
    }
}

static const kr_behavior_vtbl_t carry_vtbl = { .on_update = carry_update };
static const kr_behavior_vtbl_t robots_vtbl = { 0 };

void factory_robots_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count)
{
    kr_world_t *w = kr_sim_world(sim);
    robots_t *r = factory_station(sim, FACTORY_ROBOTS);
    kr_component_t carried = r->carried;
    uint64_t got = 0;
    for (size_t i = 0; i < count; i++) {
        if (kr_component_add(w, parts[i], carried)) got++;
        else kr_log(sim, KR_LOG_ERROR, "picking up a part: %s", kr_last_error());
    }
    ((robots_t *)factory_station(sim, FACTORY_ROBOTS))->received += got;
}

static kr_status_t robots_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK) st = factory_register_behavior(model, FACTORY_ROBOTS, sizeof(robots_t), &robots_vtbl);
    if (st == KR_OK) st = factory_register_behavior(model, FACTORY_CARRIED, sizeof(carry_t), &carry_vtbl);
    return st;
}

static kr_status_t robots_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    uint64_t precision = kr_model_precision(model);
    uint32_t target = 0;
    kr_time_t promise = 0, delay = 0;
    int64_t carry_steps = 3;
    char found[768];
    kr_status_t st = factory_param_target(sim, params, &target, &promise);
    if (st == KR_OK) st = kr_params_int(params, "carry_steps", 3, 1, INT64_MAX, &carry_steps);
    if (st == KR_OK) st = kr_params_duration(params, "delay", promise, &delay);
    if (st != KR_OK) return st;
    if (delay < promise) {
        snprintf(found, sizeof found, "%.17g, below the promise %.17g of '%.140s' -> '%.140s'",
                 kr_time_to_units(delay, precision), kr_time_to_units(promise, precision), kr_sim_name(sim),
                 kr_sim_name(kr_model_sim(model, target)));
        return kr_params_error(params, "delay", "a duration at least the promise of the edge to \"to\"", found);
    }
    kr_formalism_t f = kr_sim_formalism(sim);
    if (f != KR_AGENT_BASED && f != KR_CONTINUOUS) {
        /* Parts advance at time steps: without steps they would sit forever. */
        snprintf(found, sizeof found, "a %s simulator, which has no time steps", kr_formalism_name(f));
        return kr_params_error(params, "carry_steps", "time steps to count (an agent-based simulator)", found);
    }
    robots_t *r = factory_station_create(sim, FACTORY_ROBOTS);
    if (!r) return kr_last_status();
    *r = (robots_t){ .target = target, .delay = delay, .carry_steps = carry_steps,
                     .carried = kr_component_lookup(kr_model_registry(model), FACTORY_CARRIED) };
    return KR_OK;
}

/* Parts still held: counted in the world, not derived from the counters. */
static int64_t robots_in_transit(kr_sim_t *sim, const robots_t *r)
{
    kr_view_t v;
    if (kr_view_init(&v, kr_sim_world(sim), &(kr_view_desc_t){ .include = { r->carried } }) != KR_OK)
        return -1;
    int64_t n = (int64_t)kr_view_count(&v);
    kr_view_fini(&v);
    return n;
}

static void robots_report(kr_sim_t *sim, kr_report_t *rep)
{
    const robots_t *r = factory_station(sim, FACTORY_ROBOTS);
    if (!r) return;
    kr_report_int(rep, "received", (int64_t)r->received);
    kr_report_int(rep, "forwarded", (int64_t)r->forwarded);
    kr_report_int(rep, "in_transit", robots_in_transit(sim, r));
}

static uint64_t robots_digest(kr_sim_t *sim)
{
    const robots_t *r = factory_station(sim, FACTORY_ROBOTS);
    if (!r) return 0;
    uint64_t h = factory_mix(UINT64_C(0x70b07500), r->received);
    h = factory_mix(h, r->forwarded);
    return factory_mix(h, (uint64_t)robots_in_transit(sim, r));
}

const kr_kind_desc_t kr_factory_robots_kind = {
    .name = "robots",
    .summary = "factory transport robots: carry each part for some steps, then send it on",
    .formalism = KR_AGENT_BASED,
    .register_types = robots_register,
    .setup = robots_setup,
    .report = robots_report,
    .digest = robots_digest,
};
