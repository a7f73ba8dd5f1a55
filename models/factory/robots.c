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

#include "models/factory/factory.h"
#include "models/serialize.h"

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
    const char *to;           /* params */
    int64_t count;
    double path_length, speed;
    uint32_t target;
    kr_time_t delay;          /* ticks, >= the promise of the edge to target */
    double step_length;       /* speed x time_step, model distance per step */
    int64_t leg_steps;        /* steps from one end of the path to the other */
    kr_entity_list_t robot;   /* the robot entities, by index */
    kr_entity_list_t waiting; /* parts waiting for a robot, oldest first */
    uint64_t received, delivered;
    int64_t busy;             /* robots not idle */
    kr_timeavg_t busy_avg;
    kr_component_t robot_c;
} robots_t;

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
    return kr_component_get(kr_sim_world(sim), r->robot.items[i], r->robot_c);
}

static void robot_update(kr_world_t *w, kr_entity_t self, void *state)
{
    kr_sim_t *sim = kr_sim_of_world(w);
    robots_t *r = kr_sim_state(sim);
    robot_t *b = state;
    if (b->phase == ROBOT_IDLE) return;
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
    robots_t *r = kr_sim_state(sim);
    int64_t idle = 0;
    for (size_t i = 0; i < count; i++) {
        r->received++;
        robot_t *b = NULL;
        for (; idle < r->count; idle++) {
            b = robot_state(sim, r, idle);
            if (b && b->phase == ROBOT_IDLE) break;
        }
        if (idle < r->count) load(sim, r, b, parts[i]);
        else if (kr_entity_list_push(&r->waiting, parts[i]) != KR_OK)
            kr_sim_fail(sim, KR_ERR_NOMEM, "out of memory queueing a part");
    }
}

static kr_status_t robots_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK && !kr_behavior_register(kr_model_registry(model), &(kr_behavior_desc_t){
            .name = FACTORY_ROBOT, .state_size = sizeof(robot_t), .vtbl = &robot_vtbl }))
        st = kr_last_status();
    return st;
}

static const factory_station_t robots_station = { .receive = robots_receive };

/* A robot drawn on its own lane of the path, the dock at x = 0: orange
 * on its way out with a part, blue on its way back, grey when idle at the
 * dock; labelled with its index. */
static void robot_style(kr_sim_t *sim, kr_entity_t e, const void *component, kr_render_agent_t *a, void *arg)
{
    (void)sim, (void)e, (void)arg;
    const robot_t *b = component;
    a->x = b->position;
    a->y = b->index + 0.5;
    a->id = b->index;
    if (b->phase == ROBOT_BACK) a->colour = KR_RGB(0x3a, 0x7b, 0xc8);
    else if (b->phase == ROBOT_IDLE) a->colour = KR_RGB(0x88, 0x88, 0x88);
    snprintf(a->label, sizeof a->label, "R%u", b->index);
}

static kr_status_t robots_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    uint64_t precision = kr_model_precision(model);
    robots_t *r = kr_sim_state(sim);
    kr_time_t promise = 0;
    char found[768];
    r->target = factory_target(sim, r->to, &promise);
    kr_status_t st = factory_check_takes(sim, params, "to", r->target, FACTORY_SHIP);
    if (st != KR_OK) return st;
    /* Not in the table: its default is the promise of the edge to `to`. */
    st = kr_params_duration(params, "delay", promise, &r->delay);
    if (st != KR_OK) return st;
    if (r->delay < promise) {
        snprintf(found, sizeof found, "%.17g, below the promise %.17g of '%.140s' -> '%.140s'",
                 kr_time_to_units(r->delay, precision), kr_time_to_units(promise, precision), kr_sim_name(sim),
                 r->to);
        return kr_params_error(params, "delay", "a duration at least the promise of the edge to \"to\"", found);
    }
    r->step_length = r->speed * kr_time_to_units(kr_sim_time_step(sim), precision);
    /* Whole steps per leg; a hair of slack so that 10 / (0.1 x 100) is 10 steps, not 11. */
    double legs = ceil(r->path_length / r->step_length * (1 - 1e-12));
    if (!(legs >= 1 && legs < 1e15)) {
        snprintf(found, sizeof found, "%g steps of %g to cover a path of %g", legs, r->step_length, r->path_length);
        return kr_params_error(params, "speed", "a speed that covers the path in 1 to 1e15 steps", found);
    }
    r->leg_steps = (int64_t)legs;
    r->robot_c = kr_component_lookup(kr_model_registry(model), FACTORY_ROBOT);
    kr_timeavg_init(&r->busy_avg, 0, 0.0);
    factory_set_station(sim, &robots_station);
    kr_world_t *w = kr_sim_world(sim);
    for (int64_t i = 0; i < r->count; i++) {
        char name[48];
        snprintf(name, sizeof name, "robot[%lld]", (long long)i);
        kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .components = &r->robot_c,
                                                                       .component_count = 1 });
        if (e == KR_ENTITY_INVALID || kr_entity_list_push(&r->robot, e) != KR_OK) return kr_last_status();
        *robot_state(sim, r, i) = (robot_t){ .index = (uint32_t)i, .phase = ROBOT_IDLE, .part = KR_ENTITY_INVALID };
    }
    kr_status_t drawn = kr_render_bounds(sim, -0.5, 0, r->path_length + 0.5, (double)r->count);
    if (!drawn)
        drawn = kr_render_layer(sim, &(kr_render_layer_desc_t){ .name = "robots", .component = r->robot_c,
            .shape = KR_SHAPE_TRIANGLE, .colour = KR_RGB(0xf5, 0x8a, 0x07), .size = 0.8, .agent = robot_style });
    return drawn;
}

static void robots_report(kr_sim_t *sim, kr_report_t *rep)
{
    robots_t *r = kr_sim_state(sim);
    kr_time_t end = kr_model_end_time(kr_sim_model(sim));
    kr_report_int(rep, "received", (int64_t)r->received);
    kr_report_int(rep, "delivered", (int64_t)r->delivered);
    /* Parts still here: counted in the world, not derived from the counters. */
    kr_report_int(rep, "in_transit", factory_part_count(sim));
    kr_report_int(rep, "waiting", (int64_t)r->waiting.count);
    kr_report_number(rep, "utilisation", kr_timeavg_mean(&r->busy_avg, end) / (double)r->count);
}

/* The robots' behavior states, which carry no field metadata for the
 * world's digest; the counters and lists are declared state. */
static uint64_t robots_digest(kr_sim_t *sim)
{
    robots_t *r = kr_sim_state(sim);
    uint64_t h = 0;
    for (uint32_t i = 0; i < r->robot.count; i++) {
        const robot_t *b = robot_state(sim, r, i);
        const factory_part_t *p = b->part != KR_ENTITY_INVALID ? factory_part_get(sim, b->part) : NULL;
        h = kr_digest_mix(h ^ b->phase);
        h = kr_digest_mix(h ^ (uint64_t)b->steps);
        h = kr_digest_mix(h ^ (p ? p->serial : UINT64_MAX));
    }
    return h;
}

/* Checkpoints: the robots (their behavior states, raw in the world's
 * image: phase, steps, position and the part, whose entity id stays
 * valid) and the parts are the world's; the robot and waiting lists and
 * the counters are declared. The busy-robots time average alone changes
 * during the run outside them. */
static kr_status_t robots_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    return kr__ser_timeavg(s, &((robots_t *)kr_sim_state(sim))->busy_avg);
}

const kr_kind_desc_t kr__factory_robots_kind = {
    .name = "robots",
    .summary = "factory transport robots: carry one part each along a path at a speed, then send it on",
    .formalism = KR_AGENT_BASED,
    .register_types = robots_register,
    .setup = robots_setup,
    .report = robots_report,
    .digest = robots_digest,
    .serialize = robots_serialize,
    .formalisms = KR_FORMALISM_BIT(KR_AGENT_BASED),
    .state_size = sizeof(robots_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(robots_t, robot, KR_FIELD_ENTITY_LIST),
        KR_FIELD(robots_t, waiting, KR_FIELD_ENTITY_LIST),
        KR_FIELD(robots_t, received, KR_FIELD_U64),
        KR_FIELD(robots_t, delivered, KR_FIELD_U64),
        KR_FIELD(robots_t, busy, KR_FIELD_I64),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(robots_t, to, KR_PARAM_TARGET, .help = "where the parts go"),
        { .name = "robots", .type = KR_PARAM_INT, .offset = offsetof(robots_t, count), .def = "8",
          .range = ">= 1, <= 1000000", .help = "number of robots" },
        KR_PARAM(robots_t, path_length, KR_PARAM_NUMBER, .def = "10", .range = "> 0", .unit = "distance",
                 .help = "length of the path"),
        KR_PARAM(robots_t, speed, KR_PARAM_NUMBER, .def = "2", .range = "> 0", .unit = "distance/model unit",
                 .help = "the same loaded and empty"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){ FACTORY_SHIP_EVENT, { 0 } },
    .receives = (const char *const[]){ FACTORY_SHIP, NULL },
};
