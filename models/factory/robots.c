/* "robots": the factory's transport robots (agent-based).
 *
 * `robots` robots, each an entity with a factory.robot behavior, carry one
 * part each along a path of `path_length` from the dock to the next
 * station. A part that arrives waits in a FIFO for an idle robot. A loaded
 * robot moves `speed` x time_step at every step (on_update); when it
 * reaches the path's end it ships its part to `to` (delay `delay`) and
 * travels back empty at the same speed; back at the dock it takes the next
 * waiting part, if any, and sets off at the following step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/factory/factory.h"

#define FACTORY_ROBOT "factory.robot"

enum { ROBOT_IDLE, ROBOT_OUT, ROBOT_BACK };

/* One robot: the state of its factory.robot behavior. */
typedef struct robot {
    uint32_t index;
    uint32_t phase;           /* ROBOT_IDLE, ROBOT_OUT, ROBOT_BACK */
    int64_t steps;            /* steps taken on the current leg */
    double position;          /* 0 at the dock, path_length at the end */
    kr_entity_t part;         /* the part carried, KR_ENTITY_INVALID when empty */
} robot_t;

typedef struct robots {
    uint32_t target;
    kr_time_t delay;          /* ticks, >= the promise of the edge to target */
    double path_length, speed;
    double step_length;       /* speed x time_step, model distance per step */
    int64_t leg_steps;        /* steps from one end of the path to the other */
    int64_t count;
    kr_entity_t *robot;       /* count robot entities, by index; owned */
    factory_queue_t waiting;  /* parts waiting for a robot; owned */
    uint64_t received, delivered;
    int64_t busy;             /* robots not idle */
    kr_timeavg_t busy_avg;
    kr_component_t robot_c;
} robots_t;

static void robots_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    robots_t *r = context;
    free(r->robot);
    factory_queue_fini(&r->waiting);
}

static void set_busy(kr_sim_t *sim, robots_t *r, int64_t delta)
{
    r->busy += delta;
    kr_timeavg_set(&r->busy_avg, kr_sim_now(sim), (double)r->busy);
}

/* Loads a part on an idle robot (its state `b`): it sets off at the next step. */
static void load(kr_sim_t *sim, robots_t *r, robot_t *b, kr_entity_t part)
{
    *b = (robot_t){ .index = b->index, .phase = ROBOT_OUT, .part = part };
    set_busy(sim, r, +1);
}

static robot_t *robot_state(kr_sim_t *sim, const robots_t *r, int64_t i)
{
    return kr_component_get(kr_sim_world(sim), r->robot[i], r->robot_c);
}

static void robot_update(kr_world_t *w, kr_entity_t self, void *state)
{
    kr_sim_t *sim = kr_sim_of_world(w);
    robots_t *r = factory_context(sim, FACTORY_ROBOTS);
    robot_t *b = state;
    if (!r || b->phase == ROBOT_IDLE) return;
    b->steps++;
    double moved = fmin(r->path_length, (double)b->steps * r->step_length);
    if (b->phase == ROBOT_OUT) {
        b->position = moved;
        if (b->steps < r->leg_steps) return;
        b->position = r->path_length;
        /* Shipping takes the part out of this world: the state may move. */
        if (factory_ship(sim, r->target, r->delay, &b->part, 1) != KR_OK) return; /* the run fails (kr_sim_fail) */
        b = kr_component_get(w, self, r->robot_c);
        r->delivered++;
        *b = (robot_t){ .index = b->index, .phase = ROBOT_BACK, .position = r->path_length,
                        .part = KR_ENTITY_INVALID };
        return;
    }
    b->position = r->path_length - moved;
    if (b->steps < r->leg_steps) return;
    *b = (robot_t){ .index = b->index, .phase = ROBOT_IDLE, .part = KR_ENTITY_INVALID };
    set_busy(sim, r, -1);
    kr_entity_t next = factory_queue_pop(&r->waiting);
    if (next != KR_ENTITY_INVALID) load(sim, r, b, next);
}

static const kr_behavior_vtbl_t robot_vtbl = { .on_update = robot_update };

static void robots_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count)
{
    robots_t *r = factory_context(sim, FACTORY_ROBOTS);
    if (!r) return;
    int64_t idle = 0;
    for (size_t i = 0; i < count; i++) {
        r->received++;
        robot_t *b = NULL;
        for (; idle < r->count; idle++) {
            b = robot_state(sim, r, idle);
            if (b && b->phase == ROBOT_IDLE) break;
        }
        if (idle < r->count) load(sim, r, b, parts[i]);
        else if (factory_queue_push(&r->waiting, parts[i]) != KR_OK)
            kr_sim_fail(sim, KR_ERR_NOMEM, "out of memory queueing a part");
    }
}

static kr_status_t robots_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK) st = factory_register_context(model, FACTORY_ROBOTS, sizeof(robots_t), robots_fini);
    if (st == KR_OK) st = factory_register_behavior(model, FACTORY_ROBOT, sizeof(robot_t), &robot_vtbl);
    return st;
}

static kr_status_t robots_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    uint64_t precision = kr_model_precision(model);
    uint32_t target = 0;
    kr_time_t promise = 0, delay = 0;
    int64_t count = 0;
    double path_length = 0, speed = 0;
    char found[768];
    kr_status_t st = factory_param_target(sim, params, &target, &promise);
    if (st == KR_OK) st = kr_params_int(params, "robots", 8, 1, 1000000, &count);
    if (st == KR_OK) st = factory_param_positive(params, "path_length", 10.0, false, &path_length);
    if (st == KR_OK) st = factory_param_positive(params, "speed", 2.0, false, &speed);
    if (st == KR_OK) st = kr_params_duration(params, "delay", promise, &delay);
    if (st != KR_OK) return st;
    if (delay < promise) {
        snprintf(found, sizeof found, "%.17g, below the promise %.17g of '%.140s' -> '%.140s'",
                 kr_time_to_units(delay, precision), kr_time_to_units(promise, precision), kr_sim_name(sim),
                 kr_sim_name(kr_model_sim(model, target)));
        return kr_params_error(params, "delay", "a duration at least the promise of the edge to \"to\"", found);
    }
    kr_formalism_t f = kr_sim_formalism(sim);
    if (f != KR_AGENT_BASED) {
        /* Robots move at time steps, one step per on_update: only agent-based
         * simulators call on_update exactly once per step. */
        snprintf(found, sizeof found, "a %s simulator", kr_formalism_name(f));
        return kr_params_error(params, "speed", "a distance per time step (an agent-based simulator)", found);
    }
    double step_length = speed * kr_time_to_units(kr_sim_time_step(sim), precision);
    /* Whole steps per leg; a hair of slack so that 10 / (0.1 x 100) is 10 steps, not 11. */
    double legs = ceil(path_length / step_length * (1 - 1e-12));
    if (!(legs >= 1 && legs < 1e15)) {
        snprintf(found, sizeof found, "%g steps of %g to cover a path of %g", legs, step_length, path_length);
        return kr_params_error(params, "speed", "a speed that covers the path in 1 to 1e15 steps", found);
    }
    robots_t *r = factory_context(sim, FACTORY_ROBOTS);
    factory_station_t *station = factory_context(sim, FACTORY_STATION);
    kr_entity_t *ids = calloc((size_t)count, sizeof *ids);
    if (!r || !station || !ids) {
        free(ids);
        return kr_params_error(params, "robots", "memory for the robots", "out of memory");
    }
    *r = (robots_t){ .target = target, .delay = delay, .path_length = path_length, .speed = speed,
                     .step_length = step_length, .leg_steps = (int64_t)legs, .count = count, .robot = ids,
                     .robot_c = kr_component_lookup(kr_model_registry(model), FACTORY_ROBOT) };
    kr_timeavg_init(&r->busy_avg, 0, 0.0);
    station->receive = robots_receive;
    kr_world_t *w = kr_sim_world(sim);
    for (int64_t i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "robot[%lld]", (long long)i);
        kr_component_t c = r->robot_c;
        r->robot[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .components = &c,
                                                                     .component_count = 1 });
        if (r->robot[i] == KR_ENTITY_INVALID) return kr_last_status();
        *robot_state(sim, r, i) = (robot_t){ .index = (uint32_t)i, .phase = ROBOT_IDLE, .part = KR_ENTITY_INVALID };
    }
    return KR_OK;
}

static void robots_report(kr_sim_t *sim, kr_report_t *rep)
{
    robots_t *r = factory_context(sim, FACTORY_ROBOTS);
    if (!r || !r->robot) return;
    kr_time_t end = kr_model_end_time(kr_sim_model(sim));
    kr_report_int(rep, "received", (int64_t)r->received);
    kr_report_int(rep, "delivered", (int64_t)r->delivered);
    /* Parts still here: counted in the world, not derived from the counters. */
    kr_report_int(rep, "in_transit", factory_part_count(sim));
    kr_report_int(rep, "waiting", (int64_t)r->waiting.len);
    kr_report_number(rep, "utilisation", kr_timeavg_mean(&r->busy_avg, end) / (double)r->count);
}

static uint64_t robots_digest(kr_sim_t *sim)
{
    robots_t *r = factory_context(sim, FACTORY_ROBOTS);
    if (!r || !r->robot) return 0;
    uint64_t h = factory_mix(UINT64_C(0x70b07500), r->received);
    h = factory_mix(h, r->delivered);
    h = factory_mix(h, r->waiting.len);
    h = factory_mix(h, factory_double_bits(r->busy_avg.area));
    for (int64_t i = 0; i < r->count; i++) {
        const robot_t *b = robot_state(sim, r, i);
        if (!b) continue;
        const factory_part_t *p = b->part != KR_ENTITY_INVALID ? factory_part_get(sim, b->part) : NULL;
        h = factory_mix(h, b->phase);
        h = factory_mix(h, (uint64_t)b->steps);
        h = factory_mix(h, p ? p->serial : UINT64_MAX);
    }
    return h;
}

const kr_kind_desc_t kr__factory_robots_kind = {
    .name = "robots",
    .summary = "factory transport robots: carry one part each along a path at a speed, then send it on",
    .formalism = KR_AGENT_BASED,
    .register_types = robots_register,
    .setup = robots_setup,
    .report = robots_report,
    .digest = robots_digest,
};
