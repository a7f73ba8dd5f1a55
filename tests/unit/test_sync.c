/* Sync-events and the coordinator in one process: every refusal (no
 * dependency, delay below the promise, cancel or delay too late, before
 * start, not a sync type), sender and target sides at one time, entities
 * moving with their components and children, zero-promise cycles, a
 * simulator held exactly at its guarantee by a slow upstream, identical
 * event sequences under a transport that delays, reorders and duplicates,
 * the same sequences with hundreds of simulators (groups) in one process,
 * whose steps visit a bounded share of them, and a deadlock reported with
 * the simulators and times involved. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"
#include "schedulers/model_private.h"

#define S (KR_PRECISION_DEFAULT)

static kr_model_t *new_model(kr_time_t end)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = end, .seed = 42, .log_level = KR_LOG_OFF });
    cr_assert_not_null(m);
    return m;
}

static kr_sim_t *add(kr_model_t *m, const char *name, kr_formalism_t f, kr_time_t step)
{
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = name, .formalism = f, .time_step = step });
    cr_assert_not_null(s, "%s", kr_last_error());
    return s;
}

/* A model of n discrete-event simulators named PREFIX0, PREFIX1, ... */
static kr_model_t *numbered_sims(uint32_t n, const char *prefix, kr_time_t end, uint64_t seed,
                                 kr_sync_algorithm_t sync)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = end, .seed = seed, .log_level = KR_LOG_OFF,
                                                         .sync = sync });
    cr_assert_not_null(m);
    for (uint32_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "%s%u", prefix, i);
        add(m, name, KR_DISCRETE_EVENT, 0);
    }
    return m;
}

/* Runs m's messages through tr (NULL: the model's own transport). */
static void use_transport(kr_model_t *m, kr__transport_t *tr)
{
    if (!tr) return;
    m->transport = tr;
    m->owns_transport = true;
}

/* ---- refusals ---- */

static int target_runs;
static void on_target(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
    target_runs++;
}

Test(sync, refusals_name_both_simulators_and_times)
{
    kr_model_t *m = new_model(10 * S);
    kr_sim_t *a = add(m, "assembly", KR_DISCRETE_EVENT, 0);
    add(m, "robots", KR_DISCRETE_EVENT, 0);
    add(m, "bath", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "part", .size = 8,
                                                                        .on_target_side = on_target });
    kr_event_type_t local = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "l", .on_event = on_target });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
    /* before start */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = t }, NULL), KR_ERR_STATE);
    cr_assert_eq(kr_model_start(m), KR_OK);
    /* no dependency */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 2, .delay = 3 * S, .type = t }, NULL),
                 KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "'assembly' at 0") && strstr(kr_last_error(), "'bath' at 3") &&
              strstr(kr_last_error(), "no dependency"), "%s", kr_last_error());
    /* below the promise */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = S, .type = t }, NULL),
                 KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "'assembly' at 0") && strstr(kr_last_error(), "'robots' at 1") &&
              strstr(kr_last_error(), "below the promise 2"), "%s", kr_last_error());
    /* not a sync type, reserved priority, unknown target */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = local }, NULL),
                 KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = t,
                                                        .priority = KR_PRIORITY_STEP }, NULL), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 9, .delay = 3 * S, .type = t }, NULL),
                 KR_ERR_INVALID_ARG);
    /* entities counted but not given */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = t, .entity_count = 2 },
                                  NULL), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "expected 2 entities to send, found a NULL entity array"), "%s", kr_last_error());
    /* a stale entity */
    kr_entity_t gone = kr_entity_create(kr_sim_world(a));
    kr_entity_destroy(kr_sim_world(a), gone);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = t, .entities = &gone,
                                                        .entity_count = 1 }, NULL), KR_ERR_STALE_ENTITY);
    /* exactly the promise is fine; cancel and delay while far enough ahead */
    kr_event_key_t k1, k2, k3;
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t }, &k1), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 5 * S, .type = t }, &k2), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 6 * S, .type = t }, &k3), KR_OK);
    cr_assert_eq(k1.target, 1);
    cr_assert_eq(kr_delay(a, &k2, S, &k2), KR_OK);
    cr_assert_eq(k2.time, 6 * S);
    cr_assert_eq(kr_cancel(a, &k3), KR_OK);
    /* the receiver may not cancel the sender's event */
    cr_assert_eq(kr_cancel(kr_model_sim(m, 1), &k1), KR_ERR_STATE);
    target_runs = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(target_runs, 2);
    kr_model_destroy(m);
}

/* Too late: at t = 5 the sender tries to cancel an event at 6 over an edge
 * with promise 2 (limit 7), and to delay one at 8 by 1 (allowed). */
static kr_event_key_t late_key, ok_key;
static kr_status_t late_status, ok_status;
static void try_late(kr_sim_t *sim, void *data)
{
    (void)data;
    late_status = kr_cancel(sim, &late_key);
    ok_status = kr_delay(sim, &ok_key, S, NULL);
}


/* A simulator that declares what it receives refuses the other sync-event
 * types, whose target side may be another kind's handler: the sender is
 * told, and nothing runs on the target. One that declares nothing takes
 * every sync-event type, as before. */
static int other_runs;
static void on_other(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
    other_runs++;
}

Test(sync, a_simulator_refuses_what_it_does_not_receive)
{
    kr_model_t *m = new_model(10 * S);
    kr_sim_t *a = add(m, "belt", KR_DISCRETE_EVENT, 0);
    kr_sim_t *b = add(m, "controller", KR_DISCRETE_EVENT, 0);
    add(m, "open", KR_DISCRETE_EVENT, 0);
    kr_event_type_t reading = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "reading",
                                                                              .on_target_side = on_target });
    kr_event_type_t divert = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "divert",
                                                                             .on_target_side = on_other });
    kr_event_type_t local = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "l", .on_event = on_target });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 0, 2, S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, S), KR_OK);
    cr_assert_not(kr_sim_receives(b, reading));
    cr_assert_eq(kr_sim_receive(b, reading), KR_OK);
    cr_assert_eq(kr_sim_receive(b, reading), KR_OK); /* (twice is once) */
    cr_assert_eq(kr_sim_receive(a, divert), KR_OK);
    cr_assert(kr_sim_receives(b, reading) && !kr_sim_receives(b, divert) && kr_sim_receives(a, divert));
    /* a local type, an unknown one, no simulator */
    cr_assert_eq(kr_sim_receive(b, local), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "'l' is not a sync-event type"), "%s", kr_last_error());
    cr_assert_eq(kr_sim_receive(b, 999), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_sim_receive(NULL, reading), KR_ERR_INVALID_ARG);
    cr_assert_not(kr_sim_receives(NULL, reading));
    cr_assert_not(kr_sim_receives(b, 999));
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_sim_receive(b, divert), KR_ERR_STATE, "declared before the start only");
    cr_assert_not(kr_sim_receives(b, divert));
    target_runs = other_runs = 0;
    /* divert to the controller, which receives only reading */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = S, .type = divert }, NULL),
                 KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "'belt' at 0") && strstr(kr_last_error(), "'controller' at 1") &&
              strstr(kr_last_error(), "'controller' does not receive 'divert'"), "%s", kr_last_error());
    /* what it receives goes; a simulator that declares nothing takes any */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = S, .type = reading }, NULL), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 2, .delay = S, .type = divert }, NULL), KR_OK);
    cr_assert_eq(kr_schedule_sync(b, &(kr_sync_desc_t){ .target = 0, .delay = 2 * S, .type = divert }, NULL), KR_OK);
    cr_assert_eq(kr_schedule_sync(b, &(kr_sync_desc_t){ .target = 0, .delay = 2 * S, .type = reading }, NULL),
                 KR_ERR_INVALID_ARG);
    /* (a refusal after a type passed on the same edge: each type is checked) */
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = S, .type = divert }, NULL),
                 KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(target_runs, 1);
    cr_assert_eq(other_runs, 2);
    kr_model_destroy(m);
}
Test(sync, cancel_and_delay_refused_past_now_plus_promise)
{
    kr_model_t *m = new_model(20 * S);
    kr_sim_t *a = add(m, "a", KR_DISCRETE_EVENT, 0);
    add(m, "b", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_target_side = on_target });
    kr_event_type_t l = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "l", .on_event = try_late });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 6 * S, .type = t }, &late_key), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 8 * S, .type = t }, &ok_key), KR_OK);
    cr_assert_eq(kr_schedule(a, 0, 5 * S, l, NULL, NULL), KR_OK);
    target_runs = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(late_status, KR_ERR_STATE);
    cr_assert_eq(ok_status, KR_OK);
    cr_assert_eq(target_runs, 2);
    kr_model_destroy(m);
}

/* ---- sender side ---- */

typedef struct msg { int32_t value; kr_time_t sender_time; } msg_t;
static kr_time_t target_time;
static int32_t target_value;
static int side_order[4], sides;
static void sender_side(kr_sim_t *sim, void *data)
{
    msg_t *msg = data;
    msg->value *= 10;
    msg->sender_time = kr_sim_now(sim);
    side_order[sides++] = 1;
}
static void target_side(kr_sim_t *sim, void *data)
{
    msg_t *msg = data;
    target_time = kr_sim_now(sim);
    target_value = msg->value;
    cr_assert_eq(msg->sender_time, target_time);
    side_order[sides++] = 2;
}

static void run_sender_side(kr_time_t promise)
{
    kr_model_t *m = new_model(10 * S);
    kr_sim_t *a = add(m, "a", KR_DISCRETE_EVENT, 0);
    add(m, "b", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .size = sizeof(msg_t),
        .on_sender_side = sender_side, .on_target_side = target_side });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, promise), KR_OK);
    if (promise == 0) cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK); /* one group */
    cr_assert_eq(kr_model_start(m), KR_OK);
    msg_t msg = { .value = 7 };
    sides = 0;
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = t, .data = &msg }, NULL),
                 KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(sides, 2);
    cr_assert_eq(side_order[0], 1);
    cr_assert_eq(side_order[1], 2);
    cr_assert_eq(target_value, 70);
    cr_assert_eq(target_time, 3 * S);
    kr_model_destroy(m);
}

Test(sync, sender_side_runs_first_at_the_same_time) { run_sender_side(S); }
Test(sync, sender_side_inside_a_zero_promise_group) { run_sender_side(0); }

/* ---- entities ---- */

typedef struct part { double mass; int32_t serial; int32_t pad; } part_t;
static kr_component_t part_c, tracker_c;
static int moves;
static kr_entity_t arrived;
static void tracker_move(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old)
{
    (void)w;
    (void)self;
    (void)old;
    (void)state;
    moves++;
}
static void receive(kr_sim_t *sim, void *data)
{
    (void)data;
    size_t n;
    const kr_entity_t *e = kr_event_entities(sim, &n);
    cr_assert_eq(n, 1);
    arrived = e[0];
}

static void entity_move(bool with_sender_side)
{
    kr_model_t *m = new_model(10 * S);
    kr_registry_t *reg = kr_model_registry(m);
    part_c = kr_component_register(reg, &(kr_component_desc_t){ .name = "part", .size = sizeof(part_t),
                                                                 .align = _Alignof(part_t) });
    kr_behavior_vtbl_t vt = { .on_submodel_move = tracker_move };
    tracker_c = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "tracker", .state_size = 8, .vtbl = &vt });
    kr_sim_t *a = add(m, "a", KR_DISCRETE_EVENT, 0);
    kr_sim_t *b = add(m, "b", KR_AGENT_BASED, S);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "ship",
        .on_sender_side = with_sender_side ? sender_side : NULL, .size = sizeof(msg_t), .on_target_side = receive });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    kr_world_t *wa = kr_sim_world(a);
    kr_entity_t box = kr_entity_create_desc(wa, &(kr_entity_desc_t){ .name = "box" });
    part_t *p = kr_component_add(wa, box, part_c);
    p->mass = 2.5;
    p->serial = 99;
    kr_component_add(wa, box, tracker_c);
    for (int i = 0; i < 2; i++) {
        kr_entity_t c = kr_entity_create_desc(wa, &(kr_entity_desc_t){ .parent = box });
        part_t *cp = kr_component_add(wa, c, part_c);
        cp->serial = i;
    }
    cr_assert_eq(kr_world_entity_count(wa), 3);
    cr_assert_eq(kr_model_start(m), KR_OK);
    moves = 0;
    sides = 0;
    arrived = KR_ENTITY_INVALID;
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t, .entities = &box,
                                                        .entity_count = 1 }, NULL), KR_OK);
    cr_assert_eq(kr_world_entity_count(wa), with_sender_side ? 3u : 0u);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_world_t *wb = kr_sim_world(b);
    cr_assert_eq(kr_world_entity_count(wa), 0);
    cr_assert_eq(kr_world_entity_count(wb), 3);
    cr_assert(kr_entity_alive(wb, arrived));
    cr_assert_eq(moves, 1);
    part_t *q = kr_component_get(wb, arrived, part_c);
    cr_assert_not_null(q);
    cr_assert_float_eq(q->mass, 2.5, 0);
    cr_assert_eq(q->serial, 99);
    cr_assert_eq(kr_entity_find(wb, "box"), arrived);
    int children = 0;
    for (kr_entity_t c = kr_entity_first_child(wb, arrived); c; c = kr_entity_next_sibling(wb, c)) {
        part_t *cp = kr_component_get(wb, c, part_c);
        cr_assert_eq(cp->serial, children);
        children++;
    }
    cr_assert_eq(children, 2);
    kr_model_destroy(m);
}

Test(sync, entity_arrives_with_components_and_children) { entity_move(false); }
Test(sync, entity_leaves_after_the_sender_side) { entity_move(true); }

/* ---- a zero-promise cycle ---- */

typedef struct ball { int32_t hops; } ball_t;
static kr_event_type_t ball_t_id;
static int hops_seen;
static void bounce(kr_sim_t *sim, void *data)
{
    ball_t b = *(ball_t *)data;
    hops_seen++;
    if (b.hops == 0) return;
    b.hops--;
    uint32_t other = kr_sim_id(sim) == 0 ? 1 : 0;
    /* alternate zero and positive delays so time moves */
    kr_time_t delay = (b.hops % 2) ? 0 : S / 2;
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = other, .delay = delay, .type = ball_t_id,
                                                          .data = &b }, NULL), KR_OK, "%s", kr_last_error());
}

Test(sync, two_simulator_zero_promise_cycle_runs)
{
    kr_model_t *m = new_model(100 * S);
    kr_sim_t *a = add(m, "ping", KR_DISCRETE_EVENT, 0);
    add(m, "pong", KR_DISCRETE_EVENT, 0);
    ball_t_id = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "ball", .size = sizeof(ball_t),
                                                                 .on_target_side = bounce });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 0), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_model_group_of(m, 1), 0);
    hops_seen = 0;
    ball_t b = { 40 };
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 0, .type = ball_t_id, .data = &b }, NULL),
                 KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(hops_seen, 41);
    kr_model_destroy(m);
}

/* ---- a slow upstream ---- */

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    kr_event_type_t self = kr_event_current(sim) ? 0 : 0;
    (void)self;
}

Test(sync, held_exactly_at_the_guarantee_of_a_slow_upstream)
{
    kr_model_t *m = new_model(20 * S);
    kr_sim_t *a = add(m, "upstream", KR_DISCRETE_EVENT, 0);
    kr_sim_t *b = add(m, "downstream", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 3 * S), KR_OK);
    /* b has events at 0, 1, ..., 10; a one at 10 */
    for (int i = 0; i <= 10; i++) cr_assert_eq(kr_schedule(b, 0, (kr_time_t)i * S, t, NULL, NULL), KR_OK);
    cr_assert_eq(kr_schedule(a, 0, 10 * S, t, NULL, NULL), KR_OK);
    kr__transport_t *tr = kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 1 });
    m->transport = tr;
    m->owns_transport = true;
    cr_assert_eq(kr_model_start(m), KR_OK);
    kr__transport_test_freeze(tr, 0, true);   /* nothing from upstream arrives */
    cr_assert_eq(kr__coord_prepare(m), KR_OK);
    kr_status_t st;
    for (int i = 0; i < 200; i++) cr_assert(kr__coord_step(m, &st), "%s", kr_last_error());
    /* the initial guarantee is the promise: events at 0, 1, 2 ran, 3 did not */
    cr_assert_eq(kr_sim_event_count(b), 3);
    cr_assert_eq(kr_sim_now(b), 2 * S);
    cr_assert_eq(kr_sim_event_count(a), 1);
    /* one wait so far, however many steps found it still held; upstream,
     * with no inputs, never waits */
    cr_assert_eq(kr_sim_blocked_episodes(b), 1);
    cr_assert_eq(kr_sim_blocked_episodes(a), 0);
    kr__transport_test_freeze(tr, 0, false);
    while (kr__coord_step(m, &st)) {}
    cr_assert_eq(st, KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_sim_event_count(b), 11);
    kr_model_destroy(m);
}

/* ---- the same sequences whatever the transport does ---- */

typedef struct token { uint32_t hops; } token_t;
static kr_event_type_t token_type, local_type;
static void token_arrives(kr_sim_t *sim, void *data)
{
    token_t tok = *(token_t *)data;
    kr_model_t *m = kr_sim_model(sim);
    kr_rng_t *r = kr_sim_rng(sim);
    tok.hops++;
    uint32_t n = (uint32_t)kr_model_sim_count(m);
    uint32_t to = (kr_sim_id(sim) + 1 + (uint32_t)(kr_rng_uniform(r) * (n - 1))) % n;
    kr_time_t delay = S + (kr_time_t)(kr_rng_uniform(r) * 3 * S);
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = to, .delay = delay, .type = token_type,
                                                          .data = &tok }, NULL), KR_OK, "%s", kr_last_error());
    if (kr_rng_uniform(r) < 0.3) kr_schedule(sim, 0, (kr_time_t)(kr_rng_uniform(r) * 2 * S), local_type, NULL, NULL);
}
static void local_noop(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

static void run_ring_sync(kr__transport_t *tr, uint64_t digests[4], kr_sync_algorithm_t sync)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 200 * S, .seed = 42, .log_level = KR_LOG_OFF,
                                                         .sync = sync });
    cr_assert_not_null(m);
    const char *names[] = { "n0", "n1", "n2", "n3" };
    for (int i = 0; i < 4; i++) add(m, names[i], KR_DISCRETE_EVENT, 0);
    token_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "token", .size = sizeof(token_t),
                                                                  .on_target_side = token_arrives });
    local_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "noop", .on_event = local_noop });
    for (uint32_t i = 0; i < 4; i++)
        for (uint32_t j = 0; j < 4; j++)
            if (i != j) cr_assert_eq(kr_model_add_dependency(m, i, j, S), KR_OK);
    use_transport(m, tr);
    cr_assert_eq(kr_model_start(m), KR_OK);
    for (uint32_t i = 0; i < 4; i++) {
        token_t tok = { 0 };
        for (int k = 0; k < 3; k++)
            cr_assert_eq(kr_schedule_sync(kr_model_sim(m, i), &(kr_sync_desc_t){ .target = (i + 1) % 4,
                .delay = S + (kr_time_t)k, .type = token_type, .data = &tok }, NULL), KR_OK);
    }
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < 4; i++) {
        digests[i] = kr_sim_event_digest(kr_model_sim(m, i));
        cr_assert_gt(kr_sim_event_count(kr_model_sim(m, i)), 100);
    }
    if (kr_model_sync(m) == KR_SYNC_WINDOW) {
        /* promises of 1 over 200 units: at most 200 / 1 + 1 rounds per unit of progress */
        cr_assert_gt(kr_model_rounds(m), 0);
        cr_assert_leq(kr_model_rounds(m), 2 * 200 + 2, "%llu rounds", (unsigned long long)kr_model_rounds(m));
    } else {
        cr_assert_eq(kr_model_rounds(m), 0);
    }
    kr_model_destroy(m);
}

static void run_ring(kr__transport_t *tr, uint64_t digests[4])
{
    run_ring_sync(tr, digests, KR_SYNC_NULL_MESSAGE);
}

Test(sync, same_sequences_under_a_reordering_transport)
{
    uint64_t plain[4], again[4], shaken[4];
    run_ring(NULL, plain);
    run_ring(NULL, again);
    run_ring(kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 7, .hold_probability = 0.6,
                                                                   .duplicate_probability = 0.3 }), shaken);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(plain[i], again[i]);
        cr_assert_eq(plain[i], shaken[i], "simulator %d diverged under reordering", i);
    }
}

Test(sync, window_algorithm_gives_the_same_sequences)
{
    uint64_t plain[4], window[4], shaken[4];
    run_ring(NULL, plain);
    run_ring_sync(NULL, window, KR_SYNC_WINDOW);
    run_ring_sync(kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 9, .hold_probability = 0.6,
                                                                        .duplicate_probability = 0.3 }),
                  shaken, KR_SYNC_WINDOW);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(plain[i], window[i], "simulator %d differs with the window", i);
        cr_assert_eq(plain[i], shaken[i], "simulator %d differs with the window under reordering", i);
    }
}

/* ---- auto (kairos/model.h) ---- */

/* What auto resolves to for n simulators with an edge from each to every
 * other (promise 1), the first `joined` of them also joined by a cycle of
 * zero promises (one group). */
static kr_sync_algorithm_t auto_for(uint32_t n, uint32_t joined)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = S, .log_level = KR_LOG_OFF, .sync = KR_SYNC_AUTO });
    cr_assert_not_null(m);
    for (uint32_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%u", i);
        add(m, name, KR_DISCRETE_EVENT, 0);
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (i != j) cr_assert_eq(kr_model_add_dependency(m, i, j, i < joined && j < joined ? 0 : S), KR_OK);
    cr_assert_eq(kr_model_sync(m), KR_SYNC_AUTO, "before start: what was asked");
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    kr_sync_algorithm_t chosen = kr_model_sync(m);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_model_destroy(m);
    return chosen;
}

Test(sync, auto_chooses_the_window_above_eight_in_edges_per_group)
{
    cr_assert_eq(auto_for(1, 0), KR_SYNC_NULL_MESSAGE);
    cr_assert_eq(auto_for(4, 0), KR_SYNC_NULL_MESSAGE);
    cr_assert_eq(auto_for(9, 0), KR_SYNC_NULL_MESSAGE, "8 in-edges each: not more than 8");
    cr_assert_eq(auto_for(10, 0), KR_SYNC_WINDOW, "9 in-edges each");
    cr_assert_eq(auto_for(32, 0), KR_SYNC_WINDOW);
    /* 10 simulators, 3 of them one group: 8 groups; the group has 7 x 3 = 21
     * in-edges, the others 9 each (63 in all): 84 / 8 = 10.5 */
    cr_assert_eq(auto_for(10, 3), KR_SYNC_WINDOW);
    /* 10 simulators, 9 of them one group: 2 groups with 9 in-edges each */
    cr_assert_eq(auto_for(10, 9), KR_SYNC_WINDOW);
    /* 4 of 10 in one group: 7 groups, 6 x 4 + 6 x 9 = 78 in-edges: 11.1 */
    cr_assert_eq(auto_for(10, 4), KR_SYNC_WINDOW);
    /* 6 simulators, 2 joined: 5 groups, 4 x 2 + 4 x 5 = 28: 5.6 */
    cr_assert_eq(auto_for(6, 2), KR_SYNC_NULL_MESSAGE);
}

Test(sync, auto_gives_the_same_sequences)
{
    uint64_t plain[4], chosen[4];
    run_ring(NULL, plain);
    run_ring_sync(NULL, chosen, KR_SYNC_AUTO);
    for (int i = 0; i < 4; i++) cr_assert_eq(plain[i], chosen[i], "simulator %d differs with auto", i);
}

Test(sync, an_unknown_algorithm_is_refused)
{
    cr_assert_null(kr_model_create(&(kr_model_desc_t){ .sync = (kr_sync_algorithm_t)3 }));
    cr_assert(strstr(kr_last_error(), "unknown sync algorithm 3"), "%s", kr_last_error());
}

/* ---- many groups in one process (coordinator.c, "The groups a scan
 * found runnable"; the window's Dijkstra) ---- */

#define MANY 300u

/* A token hops to the next simulator or to the 17th after it. */
static kr_event_type_t hop_type;
static void hop_arrives(kr_sim_t *sim, void *data)
{
    token_t tok = *(token_t *)data;
    kr_rng_t *r = kr_sim_rng(sim);
    tok.hops++;
    uint32_t n = (uint32_t)kr_model_sim_count(kr_sim_model(sim));
    uint32_t to = (kr_sim_id(sim) + (kr_rng_uniform(r) < 0.5 ? 1 : 17)) % n;
    kr_time_t delay = S + (kr_time_t)(kr_rng_uniform(r) * 3 * S);
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = to, .delay = delay, .type = hop_type,
                                                          .data = &tok }, NULL), KR_OK, "%s", kr_last_error());
    if (kr_rng_uniform(r) < 0.3) kr_schedule(sim, 0, (kr_time_t)(kr_rng_uniform(r) * 2 * S), local_type, NULL, NULL);
}

/* MANY simulators, each a group of its own, in a ring with chords: the
 * digests of their event sequences, and how many groups a step visited. */
static double run_many(kr__transport_t *tr, kr_sync_algorithm_t sync, uint64_t digests[MANY])
{
    kr_model_t *m = numbered_sims(MANY, "m", 60 * S, 42, sync);
    hop_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "hop", .size = sizeof(token_t),
                                                                .on_target_side = hop_arrives });
    local_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "noop", .on_event = local_noop });
    for (uint32_t i = 0; i < MANY; i++) {
        cr_assert_eq(kr_model_add_dependency(m, i, (i + 1) % MANY, S), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, i, (i + 17) % MANY, S), KR_OK);
    }
    use_transport(m, tr);
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < MANY; i++) {
        token_t tok = { 0 };
        for (int k = 0; k < 2; k++)
            cr_assert_eq(kr_schedule_sync(kr_model_sim(m, i), &(kr_sync_desc_t){ .target = (i + 1) % MANY,
                .delay = S + (kr_time_t)k, .type = hop_type, .data = &tok }, NULL), KR_OK);
    }
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < MANY; i++) {
        digests[i] = kr_sim_event_digest(kr_model_sim(m, i));
        cr_assert_gt(kr_sim_event_count(kr_model_sim(m, i)), 20);
    }
    cr_assert_eq(m->ready_keep > 0, kr_model_sync(m) == KR_SYNC_NULL_MESSAGE, "a scan keeps runnable groups "
                 "under null messages only");
    double visits = (double)m->groups_scanned / (double)m->steps;
    kr_model_destroy(m);
    return visits;
}

/* In one process every edge is direct and the steps take groups from
 * the scans' lists; through the test transport every edge delivers, so
 * those runs check the deliveries' path (the groups a delivery touched
 * join the list: coordinator.c, "What a delivery touched") and the
 * window's heap. */
Test(sync, many_groups_give_the_same_sequences_with_either_algorithm)
{
    static uint64_t plain[MANY], window[MANY], shaken[MANY], shaken_window[MANY];
    double visits = run_many(NULL, KR_SYNC_NULL_MESSAGE, plain);
    cr_assert_lt(visits, 100.0, "%.1f groups visited a step: the list was not used", visits);
    run_many(NULL, KR_SYNC_WINDOW, window);
    visits = run_many(kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 11, .hold_probability = 0.6,
                                                                            .duplicate_probability = 0.3 }),
                      KR_SYNC_NULL_MESSAGE, shaken);
    cr_assert_lt(visits, 100.0, "%.1f groups visited a step with deliveries: each looked at every group", visits);
    run_many(kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 12, .hold_probability = 0.6,
                                                                   .duplicate_probability = 0.3 }),
             KR_SYNC_WINDOW, shaken_window);
    for (uint32_t i = 0; i < MANY; i++) {
        cr_assert_eq(plain[i], window[i], "simulator %u differs with the window", i);
        cr_assert_eq(plain[i], shaken[i], "simulator %u differs under reordering", i);
        cr_assert_eq(plain[i], shaken_window[i], "simulator %u differs with the window under reordering", i);
    }
}

/* DENSE simulators, each depending on every other (PHOLD's shape), with
 * promises of S or, when `spread`, of 1 to 2 S: a token hops to any of
 * them. The digests of their event sequences, and how many edges a window
 * round looked at. */
#define DENSE 64u
static kr_event_type_t dense_type;
static void dense_arrives(kr_sim_t *sim, void *data)
{
    token_t tok = *(token_t *)data;
    kr_rng_t *r = kr_sim_rng(sim);
    tok.hops++;
    uint32_t to = (kr_sim_id(sim) + 1 + (uint32_t)(kr_rng_uniform(r) * (DENSE - 1))) % DENSE;
    kr_time_t delay = 2 * S + (kr_time_t)(kr_rng_uniform(r) * 3 * S);
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = to, .delay = delay, .type = dense_type,
                                                          .data = &tok }, NULL), KR_OK, "%s", kr_last_error());
}

static double run_dense(kr__transport_t *tr, kr_sync_algorithm_t sync, bool spread, uint64_t digests[DENSE])
{
    kr_model_t *m = numbered_sims(DENSE, "d", 200 * S, 9, sync);
    dense_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "dense", .size = sizeof(token_t),
                                                                  .on_target_side = dense_arrives });
    for (uint32_t i = 0; i < DENSE; i++)
        for (uint32_t j = 0; j < DENSE; j++)
            if (i != j)
                cr_assert_eq(kr_model_add_dependency(m, i, j, S + (spread ? (kr_time_t)((i * 7 + j * 3) % 5) * S / 4 : 0)),
                             KR_OK);
    use_transport(m, tr);
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < DENSE; i++) {
        token_t tok = { 0 };
        for (int k = 0; k < 3; k++)
            cr_assert_eq(kr_schedule_sync(kr_model_sim(m, i), &(kr_sync_desc_t){ .target = (i + 1 + (uint32_t)k) % DENSE,
                .delay = 2 * S + (kr_time_t)(k * 7 + (int)i), .type = dense_type, .data = &tok }, NULL), KR_OK);
    }
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < DENSE; i++) {
        digests[i] = kr_sim_event_digest(kr_model_sim(m, i));
        cr_assert_gt(kr_sim_event_count(kr_model_sim(m, i)), 50);
    }
    double per_round = m->rounds ? (double)m->window_edges / (double)m->rounds : 0;
    kr_model_destroy(m);
    return per_round;
}

Test(sync, a_window_round_stops_once_every_bound_is_final)
{
    /* The round's Dijkstra looked at every edge, 4,032 a round. With one
     * promise every bound is final once two groups have left it; with
     * promises of S to 2 S, once the keys have passed the least of them
     * by S. The rest of the walk changed nothing: the same events run. */
    static uint64_t plain[DENSE], window[DENSE], shaken[DENSE];
    for (int spread = 0; spread <= 1; spread++) {
        double most = spread ? DENSE * (DENSE - 1) / 2.0 : 4.0 * DENSE;
        run_dense(NULL, KR_SYNC_NULL_MESSAGE, spread, plain);
        double edges = run_dense(NULL, KR_SYNC_WINDOW, spread, window);
        cr_assert_lt(edges, most, "%.1f edges looked at a round (spread %d)", edges, spread);
        edges = run_dense(kr__transport_test_create(&(kr__test_transport_desc_t){
                              .seed = 4, .hold_probability = 0.5, .duplicate_probability = 0.2 }),
                          KR_SYNC_WINDOW, spread, shaken);
        cr_assert_lt(edges, most, "%.1f edges looked at a round through the transport (spread %d)", edges, spread);
        for (uint32_t i = 0; i < DENSE; i++) {
            cr_assert_eq(plain[i], window[i], "simulator %u differs with the window (spread %d)", i, spread);
            cr_assert_eq(plain[i], shaken[i], "simulator %u differs with the window under reordering (spread %d)", i,
                         spread);
        }
    }
}

/* A fan-in: sources that tick and ship to one sink, as rows lines do. */
static kr_event_type_t tick_type, ship_type;
static uint64_t ticked, shipped;
static void source_tick(kr_sim_t *sim, void *data)
{
    (void)data;
    ticked++;
    kr_rng_t *r = kr_sim_rng(sim);
    kr_schedule(sim, 0, S / 8 + (kr_time_t)(kr_rng_uniform(r) * S / 4), tick_type, NULL, NULL);
    token_t tok = { 1 };
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = 0, .delay = S, .type = ship_type, .data = &tok },
                                  NULL), KR_OK, "%s", kr_last_error());
}
static void ship_arrives(kr_sim_t *sim, void *data)
{
    (void)sim;
    shipped += ((token_t *)data)->hops;
}

/* 1 sink and 320 sources, each a group, in one process or through
 * transport tr: the sink's event digest, and how many groups a step
 * visited. */
static double run_fan_in(kr__transport_t *tr, uint64_t *sink_digest)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 40 * S, .seed = 3, .log_level = KR_LOG_OFF,
                                                         .sync = KR_SYNC_NULL_MESSAGE });
    cr_assert_not_null(m);
    add(m, "sink", KR_DISCRETE_EVENT, 0);
    for (uint32_t i = 1; i <= 320; i++) {
        char name[16];
        snprintf(name, sizeof name, "source%u", i);
        add(m, name, KR_DISCRETE_EVENT, 0);
        cr_assert_eq(kr_model_add_dependency(m, i, 0, S), KR_OK);
    }
    tick_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = source_tick });
    ship_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "ship", .size = sizeof(token_t),
                                                                 .on_target_side = ship_arrives });
    use_transport(m, tr);
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 1; i <= 320; i++)
        cr_assert_eq(kr_schedule(kr_model_sim(m, i), 0, (kr_time_t)i, tick_type, NULL, NULL), KR_OK);
    ticked = shipped = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_gt(shipped, 320 * 100);
    cr_assert_leq(shipped, ticked, "every tick ships once (a ship at or after the end never arrives)");
    cr_assert_geq(shipped, ticked - 320 * 8, "only the ticks of a source's last time unit may not arrive");
    *sink_digest = kr_sim_event_digest(kr_model_sim(m, 0));
    double visits = (double)m->groups_scanned / (double)m->steps;
    kr_model_destroy(m);
    return visits;
}

Test(sync, a_step_visits_a_bounded_share_of_many_groups)
{
    /* A step ran one group's events and then visited every group to find
     * the next (321 a step); the scans keep one runnable group in 32 for
     * the steps after them. Through a transport, a delivery looked at
     * every group again (642 a step); now at the groups it touched: the
     * sink's bound comes from its min-tree over 320 in-edges, one leaf
     * per delivery, and the sink runs the same events. */
    uint64_t direct, delivered;
    double visits = run_fan_in(NULL, &direct);
    cr_assert_lt(visits, 64.0, "%.1f groups visited a step", visits);
    visits = run_fan_in(kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 5, .hold_probability = 0.5,
                                                                              .duplicate_probability = 0.2 }),
                        &delivered);
    cr_assert_lt(visits, 64.0, "%.1f groups visited a step with deliveries", visits);
    cr_assert_eq(direct, delivered, "the sink ran other events through the transport");
}

/* ---- deadlock ---- */

static void noop_target(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

Test(sync, deadlock_is_reported_not_hung)
{
    /* a -> b with a sender side at 2 (promise 1); b -> a with promise 0:
     * b waits for the payload, a waits for b's guarantee beyond 2. */
    kr_model_t *m = new_model(10 * S);
    kr_sim_t *a = add(m, "alpha", KR_DISCRETE_EVENT, 0);
    add(m, "beta", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_sender_side = noop_target,
                                                                        .on_target_side = noop_target });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t }, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_DEADLOCK);
    const char *e = kr_last_error();
    cr_assert(strstr(e, "deadlock") && strstr(e, "'beta'") && strstr(e, "'alpha'") && strstr(e, "at 2"), "%s", e);
    kr_model_destroy(m);
}

/* ---- regressions from review ---- */

static kr_time_t sender_at, target_at;
static void mark_sender(kr_sim_t *sim, void *data) { (void)data; sender_at = kr_sim_now(sim); }
static void mark_target(kr_sim_t *sim, void *data) { (void)data; target_at = kr_sim_now(sim); }

static kr_model_t *pair(kr_time_t promise, bool group, kr_event_type_t *t, bool sender_side)
{
    kr_model_t *m = new_model(20 * S);
    add(m, "A", KR_DISCRETE_EVENT, 0);
    add(m, "B", KR_DISCRETE_EVENT, 0);
    *t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_target_side = mark_target,
                                                         .on_sender_side = sender_side ? mark_sender : NULL });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, promise), KR_OK);
    if (group) cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    return m;
}

Test(sync, second_cancel_is_refused_on_every_path)
{
    for (int group = 0; group < 2; group++) {
        kr_event_type_t t;
        kr_model_t *m = pair(group ? 0 : S, group, &t, false);
        kr_event_key_t k;
        cr_assert_eq(kr_schedule_sync(kr_model_sim(m, 0), &(kr_sync_desc_t){ .target = 1, .delay = 5 * S, .type = t },
                                      &k), KR_OK);
        cr_assert_eq(kr_cancel(kr_model_sim(m, 0), &k), KR_OK);
        cr_assert_eq(kr_cancel(kr_model_sim(m, 0), &k), KR_ERR_STATE, "group %d", group);
        cr_assert_eq(kr_delay(kr_model_sim(m, 0), &k, S, NULL), KR_ERR_STATE);
        target_at = 0;
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(target_at, 0);
        kr_model_destroy(m);
    }
}

Test(sync, delay_with_a_stale_key_uses_the_real_time)
{
    kr_event_type_t t;
    kr_model_t *m = pair(S, false, &t, true);
    kr_event_key_t k, k2;
    cr_assert_eq(kr_schedule_sync(kr_model_sim(m, 0), &(kr_sync_desc_t){ .target = 1, .delay = 5 * S, .type = t }, &k),
                 KR_OK);
    cr_assert_eq(kr_delay(kr_model_sim(m, 0), &k, 2 * S, NULL), KR_OK);
    cr_assert_eq(kr_delay(kr_model_sim(m, 0), &k, S, &k2), KR_OK); /* k is stale: the event is at 7, not 5 */
    cr_assert_eq(k2.time, 8 * S);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(sender_at, 8 * S);
    cr_assert_eq(target_at, 8 * S);
    kr_model_destroy(m);
}

static kr_status_t self_cancel_status;
static kr_event_key_t self_key;
static void cancel_myself(kr_sim_t *sim, void *data)
{
    (void)data;
    self_cancel_status = kr_cancel(sim, &self_key);
}

Test(sync, cancelling_a_running_sender_side_is_refused)
{
    kr_model_t *m = new_model(10 * S);
    add(m, "A", KR_DISCRETE_EVENT, 0);
    add(m, "B", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_sender_side = cancel_myself,
                                                                        .on_target_side = mark_target });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 0), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_schedule_sync(kr_model_sim(m, 0), &(kr_sync_desc_t){ .target = 1, .delay = S, .type = t },
                                  &self_key), KR_OK);
    target_at = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(self_cancel_status, KR_ERR_STATE);
    cr_assert_eq(target_at, S);
    kr_model_destroy(m);
}

Test(sync, cancelling_a_sync_event_that_carries_entities_is_refused)
{
    kr_event_type_t t;
    kr_model_t *m = pair(S, false, &t, false);
    kr_sim_t *a = kr_model_sim(m, 0);
    kr_entity_t e = kr_entity_create(kr_sim_world(a));
    kr_event_key_t k;
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 5 * S, .type = t, .entities = &e,
                                                        .entity_count = 1 }, &k), KR_OK);
    cr_assert_eq(kr_cancel(a, &k), KR_ERR_STATE);
    cr_assert(strstr(kr_last_error(), "entities"), "%s", kr_last_error());
    cr_assert_eq(kr_delay(a, &k, S, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_world_entity_count(kr_sim_world(kr_model_sim(m, 1))), 1);
    kr_model_destroy(m);
}

/* Messages from the wire are checked: a pack whose entity count disagrees
 * with the header, a truncated message, an unknown edge, a sync-event
 * below the guarantee: each fails the run with a message, never a crash. */
static void send_raw(kr_model_t *m, const kr_buf_t *b)
{
    cr_assert_eq(m->transport->vtbl->send(m->transport, 0, 1, b->data, b->len), KR_OK);
}

static void header(kr_buf_t *b, uint8_t kind, uint32_t from, uint32_t to, uint64_t seq, kr_time_t time)
{
    kr_buf_clear(b);
    kr_buf_put_u8(b, kind);
    kr_buf_put_u32(b, from);
    kr_buf_put_u32(b, to);
    kr_buf_put_u64(b, seq);
    kr_buf_put_u64(b, time);
}

Test(sync, bad_wire_messages_fail_the_run_cleanly)
{
    for (int variant = 0; variant < 5; variant++) {
        kr_event_type_t t;
        kr_model_t *m = pair(S, false, &t, false);
        kr_sim_t *a = kr_model_sim(m, 0);
        kr_buf_t b, pack;
        kr_buf_init(&b);
        kr_buf_init(&pack);
        kr_entity_t ents[2] = { kr_entity_create(kr_sim_world(a)), kr_entity_create(kr_sim_world(a)) };
        cr_assert_eq(kr_pack(kr_sim_world(a), ents, 2, &pack), KR_OK);
        header(&b, 1, 0, variant == 2 ? 0 : 1, 0, variant == 3 ? S / 2 : 5 * S);
        kr_buf_put_u64(&b, 0);                                /* piggybacked guarantee */
        kr_buf_put_u32(&b, 0);
        kr_buf_put_u64(&b, 999);
        kr_buf_put_u32(&b, t);
        kr_buf_put_u8(&b, 0);
        kr_buf_put_u32(&b, 0);
        kr_buf_put_u32(&b, variant == 4 ? 0xffffffffu : 1);   /* the pack holds 2 */
        kr_buf_put_u32(&b, (uint32_t)pack.len);
        kr_buf_append(&b, pack.data, pack.len);
        if (variant == 1) b.len -= 3;                         /* truncated */
        send_raw(m, &b);
        cr_assert_neq(kr_model_run(m), KR_OK, "variant %d ran", variant);
        cr_assert(strlen(kr_last_error()) > 10, "variant %d: %s", variant, kr_last_error());
        kr_buf_fini(&b);
        kr_buf_fini(&pack);
        kr_model_destroy(m);
    }
}

/* A SYNC message may carry a run of sync-events on its edge, each after
 * the first with its own time (schedulers/sync.c, append_sync): each is
 * applied, in order. A bad event anywhere in the run fails the run with a
 * message naming what is wrong. */
static kr_time_t run_times[8];
static int run_count;
static void record_target(kr_sim_t *sim, void *data)
{
    (void)data;
    if (run_count < 8) run_times[run_count] = kr_sim_now(sim);
    run_count++;
}

static void put_sync_event(kr_buf_t *b, bool with_time, kr_time_t time, uint64_t seq, kr_event_type_t t)
{
    if (with_time) kr_buf_put_u64(b, time);
    kr_buf_put_u32(b, 0);   /* priority */
    kr_buf_put_u64(b, seq);
    kr_buf_put_u32(b, t);
    kr_buf_put_u8(b, 0);    /* not a placeholder */
    kr_buf_put_u32(b, 0);   /* no data */
    kr_buf_put_u32(b, 0);   /* no entities */
    kr_buf_put_u32(b, 0);
}

Test(sync, a_message_carries_a_run_of_sync_events)
{
    static const char *const why[] = { NULL, "truncated sync-event", "sequence reused", "unknown sync-event type",
                                       "below a guarantee already given" };
    for (int variant = 0; variant < 5; variant++) {
        kr_model_t *m = new_model(20 * S);
        add(m, "A", KR_DISCRETE_EVENT, 0);
        add(m, "B", KR_DISCRETE_EVENT, 0);
        kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t",
                                                                             .on_target_side = record_target });
        kr_event_type_t local = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        /* A's own event at 3 keeps its guarantee at 4 until the run arrives */
        cr_assert_eq(kr_schedule(kr_model_sim(m, 0), 0, 3 * S, local, NULL, NULL), KR_OK);
        kr_buf_t b;
        kr_buf_init(&b);
        /* variant 4: a message before the run gives the guarantee 6 */
        uint64_t first = variant == 4;
        if (variant == 4) {
            header(&b, 1, 0, 1, 0, 4 * S);
            kr_buf_put_u64(&b, 6 * S);
            put_sync_event(&b, false, 0, 0, t);
            send_raw(m, &b);
        }
        header(&b, 1, 0, 1, first, variant == 4 ? 8 * S : 5 * S);
        kr_buf_put_u64(&b, 0);                                   /* piggybacked guarantee */
        put_sync_event(&b, false, 0, first, t);
        put_sync_event(&b, true, 7 * S, first + 1, variant == 3 ? t + 100 : t);
        /* (a run's times need not be in order) */
        put_sync_event(&b, true, variant == 4 ? 5 * S : 6 * S, variant == 2 ? first + 1 : first + 2, t);
        if (variant == 1) b.len -= 3;
        send_raw(m, &b);
        kr_buf_fini(&b);
        run_count = 0;
        kr_status_t st = kr_model_run(m);
        if (!variant) {
            cr_assert_eq(st, KR_OK, "%s", kr_last_error());
            cr_assert_eq(run_count, 3);
            cr_assert_eq(run_times[0], 5 * S);
            cr_assert_eq(run_times[1], 6 * S);
            cr_assert_eq(run_times[2], 7 * S);
        } else {
            cr_assert_neq(st, KR_OK, "variant %d ran", variant);
            cr_assert(strstr(kr_last_error(), why[variant]), "variant %d: %s", variant, kr_last_error());
            cr_assert(run_count <= 2);
        }
        kr_model_destroy(m);
    }
}

/* A sync-event with a payload and entities, cut at every length short of
 * its end: each cut fails the run with a message saying what is
 * truncated (the decoder reads the fixed fields and the payload's size,
 * then the payload with the counts after it, then the pack, each in one
 * view); the whole message runs and brings the payload and the entities. */
typedef struct { uint64_t a, b; } pair_payload_t;
static pair_payload_t got_payload;
static size_t got_entities;
static void record_payload(kr_sim_t *sim, void *data)
{
    got_payload = *(const pair_payload_t *)data;
    kr_event_entities(sim, &got_entities);
}

Test(sync, a_sync_event_cut_anywhere_is_refused_as_truncated)
{
    kr_buf_t full, pack;
    kr_buf_init(&full);
    kr_buf_init(&pack);
    size_t len = 0;
    for (size_t cut = 0;; cut++) {
        kr_model_t *m = new_model(20 * S);
        kr_sim_t *a = add(m, "A", KR_DISCRETE_EVENT, 0);
        add(m, "B", KR_DISCRETE_EVENT, 0);
        kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){
            .name = "t", .size = sizeof(pair_payload_t), .on_target_side = record_payload });
        kr_event_type_t local = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        /* (A's own event at 3 keeps its guarantee at 4 until the message arrives) */
        cr_assert_eq(kr_schedule(a, 0, 3 * S, local, NULL, NULL), KR_OK);
        if (!len) {
            kr_entity_t ents[2] = { kr_entity_create(kr_sim_world(a)), kr_entity_create(kr_sim_world(a)) };
            cr_assert_eq(kr_pack(kr_sim_world(a), ents, 2, &pack), KR_OK);
            header(&full, 1, 0, 1, 0, 5 * S);
            kr_buf_put_u64(&full, 0);                      /* piggybacked guarantee */
            kr_buf_put_u32(&full, 0);                      /* priority */
            kr_buf_put_u64(&full, 0);                      /* sequence */
            kr_buf_put_u32(&full, t);
            kr_buf_put_u8(&full, 0);                       /* not a placeholder */
            kr_buf_put_u32(&full, sizeof(pair_payload_t));
            kr_buf_put_u64(&full, 11);
            kr_buf_put_u64(&full, 22);
            kr_buf_put_u32(&full, 2);                      /* roots */
            kr_buf_put_u32(&full, (uint32_t)pack.len);
            kr_buf_append(&full, pack.data, pack.len);
            len = full.len;
        }
        kr_buf_t b = { .data = full.data, .len = cut < len ? cut : len };
        send_raw(m, &b);
        got_payload = (pair_payload_t){ 0 };
        got_entities = 0;
        kr_status_t st = kr_model_run(m);
        if (cut >= len) {
            cr_assert_eq(st, KR_OK, "%s", kr_last_error());
            cr_assert_eq(got_payload.a, 11u);
            cr_assert_eq(got_payload.b, 22u);
            cr_assert_eq(got_entities, 2u);
            kr_model_destroy(m);
            break;
        }
        cr_assert_neq(st, KR_OK, "cut at %zu of %zu ran", cut, len);
        cr_assert(strstr(kr_last_error(), "truncated"), "cut at %zu: %s", cut, kr_last_error());
        kr_model_destroy(m);
    }
    kr_buf_fini(&full);
    kr_buf_fini(&pack);
}

/* A guarantee that grew goes into the edge's last data message while the
 * transport still holds it, for free (kr__sync_raise_held, which
 * send_guarantees calls below the next mark): applied with the message,
 * no null message. Once the message has left, or when it went in twice
 * (the test transport then holds none), it is refused and nothing
 * changes. */
static kr_status_t deliver_to(void *arg, const void *bytes, size_t len) { return kr__sync_deliver(arg, bytes, len); }

Test(sync, a_grown_guarantee_rides_on_the_held_data_message)
{
    for (int doubled = 0; doubled < 2; doubled++) {
        kr_model_t *m = new_model(20 * S);
        kr_sim_t *a = add(m, "A", KR_DISCRETE_EVENT, 0);
        add(m, "B", KR_DISCRETE_EVENT, 0);
        kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_target_side = noop_target });
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        kr__transport_t *tr = kr__transport_test_create(&(kr__test_transport_desc_t){
            .seed = 5, .duplicate_probability = doubled ? 1.0 : 0.0 });
        cr_assert_eq(kr__model_use_transport(m, tr), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        kr__edge_t *e = kr__edge(m, 0, 1);
        cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t }, NULL), KR_OK);
        kr_time_t carried = e->guarantee_sent;
        cr_assert_lt(carried, 5 * S);
        bool raised = kr__sync_raise_held(m, e, 5 * S);
        cr_assert_eq(raised, !doubled, "doubled %d", doubled);
        cr_assert_eq(e->guarantee_sent, doubled ? carried : 5 * S);
        size_t n = 0;
        cr_assert_eq(tr->vtbl->poll(tr, deliver_to, m, &n), KR_OK, "%s", kr_last_error());
        cr_assert_eq(n, doubled ? 2u : 1u);
        cr_assert_eq(e->received, 1u);
        cr_assert_eq(e->guarantee, doubled ? carried : 5 * S);
        cr_assert_eq(kr_sim_null_messages(a), 0);
        /* the message has left: refused, nothing changes */
        cr_assert(!kr__sync_raise_held(m, e, 6 * S));
        cr_assert_eq(e->held.batch, 0u);
        cr_assert_eq(e->guarantee_sent, doubled ? carried : 5 * S);
        kr_model_destroy(m);
    }
}

Test(sync, window_deadlock_is_reported_not_hung)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 10 * S, .log_level = KR_LOG_OFF,
                                                         .sync = KR_SYNC_WINDOW });
    kr_sim_t *a = add(m, "alpha", KR_DISCRETE_EVENT, 0);
    add(m, "beta", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_sender_side = noop_target,
                                                                        .on_target_side = noop_target });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t }, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_DEADLOCK);
    cr_assert(strstr(kr_last_error(), "deadlock"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* An entity sent with a sync-event whose on_destroy (fired when it leaves
 * the sender) schedules another sync-event on the same edge: sequences stay
 * in send order, so both can still be delayed and cancelled, and the run
 * goes through over a transport that does not take shortcuts. */
static kr_event_type_t nested_type;
static kr_event_key_t nested_key;
static kr_status_t nested_status;
static int nested_runs;
static void nested_target(kr_sim_t *s, void *d)
{
    (void)s;
    (void)d;
    nested_runs++;
}
static void leave_note(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self;
    (void)state;
    kr_sim_t *s = kr_sim_of_world(w);
    if (kr_sim_id(s) != 0) return;
    nested_status = kr_schedule_sync(s, &(kr_sync_desc_t){ .target = 1, .delay = 3 * S, .type = nested_type },
                                     &nested_key);
}

Test(sync, on_destroy_of_a_sent_entity_may_schedule_sync_events)
{
    for (int shaken = 0; shaken < 2; shaken++) {
        kr_model_t *m = new_model(20 * S);
        static const kr_behavior_vtbl_t vt = { .on_destroy = leave_note };
        kr_component_t beh = kr_behavior_register(kr_model_registry(m), &(kr_behavior_desc_t){ .name = "note",
                                                                                             .state_size = 8,
                                                                                             .vtbl = &vt });
        kr_sim_t *a = add(m, "A", KR_DISCRETE_EVENT, 0);
        add(m, "B", KR_DISCRETE_EVENT, 0);
        nested_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_target_side = nested_target });
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        kr_entity_t e = kr_entity_create(kr_sim_world(a));
        kr_component_add(kr_sim_world(a), e, beh);
        if (shaken) cr_assert_eq(kr__model_use_transport(m, kr__transport_test_create(&(kr__test_transport_desc_t){
                                     .seed = 1, .hold_probability = 0.5 })), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        kr_event_key_t outer;
        nested_status = KR_ERR_STATE;
        cr_assert_eq(kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = 5 * S, .type = nested_type,
                                                            .entities = &e, .entity_count = 1 }, &outer), KR_OK);
        cr_assert_eq(nested_status, KR_OK);
        cr_assert_lt(nested_key.sequence, outer.sequence, "the nested event was sent first");
        cr_assert_eq(kr_delay(a, &outer, S, NULL), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_cancel(a, &nested_key), KR_OK, "%s", kr_last_error());
        nested_runs = 0;
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(nested_runs, 1);
        kr_model_destroy(m);
    }
}

/* Guarantees ride on data messages, and a blocked receiver asks for the
 * rest: a sync-event that says "nothing from me before 8" lets the
 * receiver run everything below 8 while every null message of its sender
 * is held back; once it has nothing left before the end it asks the
 * sender, once. */
Test(sync, guarantees_ride_on_data_and_are_asked_for)
{
    kr_model_t *m = new_model(20 * S);
    kr_sim_t *a = add(m, "upstream", KR_DISCRETE_EVENT, 0);
    kr_sim_t *b = add(m, "downstream", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_target_side = noop_target });
    kr_event_type_t local = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    cr_assert_eq(kr_schedule(b, 0, 6 * S, local, NULL, NULL), KR_OK);
    cr_assert_eq(kr_schedule(b, 0, 7 * S, local, NULL, NULL), KR_OK);
    kr__transport_t *tr = kr__transport_test_create(&(kr__test_transport_desc_t){ .seed = 1 });
    m->transport = tr;
    m->owns_transport = true;
    cr_assert_eq(kr_model_start(m), KR_OK);
    kr__transport_test_freeze(tr, 0, true);   /* upstream's own messages are held */
    /* a sync-event at 5 from upstream, carrying the guarantee 8 (handed to
     * the transport as if from elsewhere, so the freeze lets it through) */
    kr_buf_t raw;
    kr_buf_init(&raw);
    header(&raw, 1, 0, 1, 0, 5 * S);
    kr_buf_put_u64(&raw, 8 * S);
    kr_buf_put_u32(&raw, 0);
    kr_buf_put_u64(&raw, 0);
    kr_buf_put_u32(&raw, t);
    kr_buf_put_u8(&raw, 0);
    kr_buf_put_u32(&raw, 0);
    kr_buf_put_u32(&raw, 0);
    kr_buf_put_u32(&raw, 0);
    cr_assert_eq(tr->vtbl->send(tr, 2, 1, raw.data, raw.len), KR_OK);
    kr_buf_fini(&raw);
    cr_assert_eq(kr__coord_prepare(m), KR_OK);
    kr_status_t st;
    for (int i = 0; i < 50; i++) cr_assert(kr__coord_step(m, &st), "%s", kr_last_error());
    cr_assert_eq(kr_sim_event_count(b), 3, "the events at 5, 6 and 7 did not run on the piggybacked guarantee");
    /* nothing left below the end: it asked upstream once, and waits */
    cr_assert_eq(kr_sim_guarantee_requests(b), 1);
    cr_assert(!m->finished);
    /* Not blocked: nothing is left to run before the end (only an event
     * it has and may not run yet counts), and upstream has no inputs. */
    cr_assert_eq(kr_sim_blocked_episodes(b), 0);
    cr_assert_eq(kr_sim_blocked_episodes(a), 0);
    kr__transport_test_freeze(tr, 0, false);
    while (kr__coord_step(m, &st)) {}
    cr_assert_eq(st, KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_sim_guarantee_requests(b), 1);
    cr_assert_geq(kr_sim_null_messages(a), 1);
    kr_model_destroy(m);
}

/* A handler's kr_sim_fail is the run's failure: a status that would read
 * as a deadlock or an interrupt (exit 3, 143) becomes KR_ERR_STATE. */
static void fail_as_deadlock(kr_sim_t *sim, void *data)
{
    (void)data;
    kr_sim_fail(sim, KR_ERR_DEADLOCK, "gave up");
}

Test(sync, a_kinds_failure_is_never_a_deadlock)
{
    kr_model_t *m = new_model(10 * S);
    kr_sim_t *a = add(m, "a", KR_DISCRETE_EVENT, 0);
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "f", .on_event = fail_as_deadlock });
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_schedule(a, 0, S, t, NULL, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_STATE, "%s", kr_last_error());
    cr_assert(strstr(kr_last_error(), "simulator 'a', time 1: gave up"), "%s", kr_last_error());
    kr_model_destroy(m);
}
