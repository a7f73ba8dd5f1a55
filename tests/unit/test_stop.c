/* Ending a run from inside the model (kairos/stop.h) in one process: the
 * horizons (shortest promise distances, the stop lookahead), a stop down a
 * chain with both algorithms and under a transport that delays, reorders
 * and duplicates (the stop then travels as a message), the zero-promise
 * group rule, several stops, kr_sim_stop outside a run, and sync-events
 * whose sender side falls at or past its sender's horizon (they never
 * happen, and their targets do not wait for them). */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"
#include "schedulers/model_private.h"

#define S (KR_PRECISION_DEFAULT)
#define MAX_SIMS 8

/* Each simulator ticks every `period`, sends its tick to `target` (if any)
 * `delay` later, and stops the run in tick number `stop_after`. */
typedef struct ticker {
    kr_time_t period, delay;
    uint32_t target;
    uint64_t stop_after, ticks;
} ticker_t;

static ticker_t tickers[MAX_SIMS];
static kr_event_type_t tick_type, msg_type, mark_type, side_type;
static const int tag;
/* the tickers' sync-events have a sender side (side_type) */
static bool ticks_with_sender_side;

static void on_tick(kr_sim_t *sim, void *data)
{
    (void)data;
    ticker_t *t = kr_sim_user(sim, &tag);
    t->ticks++;
    if (t->target != UINT32_MAX)
        cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = t->target, .delay = t->delay,
                                                              .type = ticks_with_sender_side ? side_type : msg_type,
                                                              .data = &t->ticks }, NULL), KR_OK,
                     "%s", kr_last_error());
    if (t->stop_after && t->ticks == t->stop_after) kr_sim_stop(sim);
    cr_assert_eq(kr_schedule(sim, KR_PRIORITY_DEFAULT, t->period, tick_type, NULL, NULL), KR_OK);
}

static void on_msg(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

/* A one-off event: stops the run if its data says so. */
static void on_mark(kr_sim_t *sim, void *data)
{
    int stop;
    memcpy(&stop, data, sizeof stop);
    if (stop) kr_sim_stop(sim);
}

static kr_model_t *new_model(kr_time_t end, kr_sync_algorithm_t sync)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = end, .seed = 42, .log_level = KR_LOG_OFF,
                                                        .sync = sync });
    cr_assert_not_null(m);
    tick_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = on_tick });
    msg_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "msg", .size = 8, .on_target_side = on_msg });
    mark_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "mark", .size = sizeof(int),
                                                                .on_event = on_mark });
    side_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "side", .size = 8, .on_sender_side = on_msg,
                                                                .on_target_side = on_msg });
    cr_assert(tick_type && msg_type && mark_type && side_type);
    memset(tickers, 0, sizeof tickers);
    return m;
}

static kr_sim_t *add(kr_model_t *m, const char *name, kr_time_t period, uint32_t target, kr_time_t delay,
                     uint64_t stop_after)
{
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = name, .formalism = KR_DISCRETE_EVENT });
    cr_assert_not_null(s, "%s", kr_last_error());
    ticker_t *t = &tickers[kr_sim_id(s)];
    *t = (ticker_t){ .period = period, .delay = delay, .target = target, .stop_after = stop_after };
    kr_sim_set_user(s, &tag, t);
    return s;
}

static void start_ticking(kr_model_t *m)
{
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++)
        if (tickers[i].period)
            cr_assert_eq(kr_schedule(kr_model_sim(m, i), KR_PRIORITY_DEFAULT, tickers[i].period, tick_type, NULL,
                                     NULL), KR_OK);
}

Test(stop, distances_follow_promises_and_the_lookahead)
{
    for (int with_lookahead = 0; with_lookahead < 2; with_lookahead++) {
        kr_model_t *m = new_model(20 * S, KR_SYNC_WINDOW);
        const char *names[] = { "a", "b", "c", "d", "e" };
        for (int i = 0; i < 5; i++) add(m, names[i], 0, UINT32_MAX, 0, 0);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, 1, 2, 3 * S), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, 0, 2, 10 * S), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, 3, 0, 1 * S), KR_OK);
        cr_assert_eq(kr_model_stop_lookahead(m), KR_TIME_NEVER);
        if (with_lookahead) cr_assert_eq(kr_model_set_stop_lookahead(m, 4 * S), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_model_set_stop_lookahead(m, S), KR_ERR_STATE);
        kr_time_t d[5];
        cr_assert_eq(kr__stop_distances(m, 0, d), KR_OK);
        kr_time_t plain[5] = { 0, 2 * S, 5 * S, KR_TIME_NEVER, KR_TIME_NEVER };
        kr_time_t capped[5] = { 0, 2 * S, 4 * S, 4 * S, 4 * S };
        for (int i = 0; i < 5; i++)
            cr_assert_eq(d[i], with_lookahead ? capped[i] : plain[i], "distance to %s", names[i]);
        kr_model_destroy(m);
    }
}

/* a -> b (promise 2) -> c (promise 3); d unreachable; a stops in its 5th
 * tick, at 5. Returns the checksum. */
static uint64_t run_chain(kr_sync_algorithm_t sync, kr__transport_t *tr)
{
    kr_model_t *m = new_model(20 * S, sync);
    if (tr) cr_assert_eq(kr__model_use_transport(m, tr), KR_OK);
    kr_sim_t *a = add(m, "a", S, 1, 2 * S, 5);
    kr_sim_t *b = add(m, "b", S, 2, 3 * S, 0);
    kr_sim_t *c = add(m, "c", S, UINT32_MAX, 0, 0);
    kr_sim_t *d = add(m, "d", S, UINT32_MAX, 0, 0);
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 2, 3 * S), KR_OK);
    start_ticking(m);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint32_t by;
    kr_time_t at;
    cr_assert(kr_model_stopped(m, &by, &at));
    cr_assert_eq(by, 0);
    cr_assert_eq(at, 5 * S);
    /* each ends after its last event below 5 + d(a -> it) */
    cr_assert_eq(kr_sim_stop_horizon(a), 5 * S);
    cr_assert_eq(kr_sim_stop_horizon(b), 7 * S);
    cr_assert_eq(kr_sim_stop_horizon(c), 10 * S);
    cr_assert_eq(kr_sim_stop_horizon(d), KR_TIME_NEVER);
    cr_assert_eq(kr_sim_now(a), 5 * S);
    cr_assert_eq(kr_sim_event_count(a), 5);
    cr_assert_eq(kr_sim_now(b), 6 * S);
    cr_assert_eq(kr_sim_event_count(b), 6 + 4, "6 ticks and a's ticks 1 to 4, arriving at 3 to 6");
    cr_assert_eq(kr_sim_now(c), 9 * S);
    cr_assert_eq(kr_sim_event_count(c), 9 + 6, "9 ticks and b's ticks 1 to 6, arriving at 4 to 9");
    cr_assert_eq(kr_sim_now(d), 20 * S, "no path from a: to the end");
    cr_assert_eq(kr_sim_event_count(d), 20);
    uint64_t sum = kr_model_checksum(m);
    kr_model_destroy(m);
    return sum;
}

/* run gives one checksum with both algorithms, directly and over test
 * transports (seeds 1 to `seeds`) that hold messages back and deliver some
 * twice. */
static void same_whatever_the_transport(uint64_t (*run)(kr_sync_algorithm_t, kr__transport_t *), uint64_t seeds)
{
    uint64_t ref = run(KR_SYNC_NULL_MESSAGE, NULL);
    cr_assert_eq(run(KR_SYNC_WINDOW, NULL), ref);
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        kr__test_transport_desc_t td = { .seed = seed, .hold_probability = 0.6, .duplicate_probability = 0.2 };
        cr_assert_eq(run(KR_SYNC_NULL_MESSAGE, kr__transport_test_create(&td)), ref, "seed %llu",
                     (unsigned long long)seed);
        cr_assert_eq(run(KR_SYNC_WINDOW, kr__transport_test_create(&td)), ref, "seed %llu", (unsigned long long)seed);
    }
}

Test(stop, a_stop_ends_each_simulator_at_its_horizon_whatever_the_algorithm)
{
    same_whatever_the_transport(run_chain, 4);
}

static void mark(kr_sim_t *s, kr_priority_t prio, kr_time_t t, int stop)
{
    cr_assert_eq(kr_schedule(s, prio, t, mark_type, &stop, NULL), KR_OK, "%s", kr_last_error());
}

/* a <-> b with zero promises (one group), a -> c with promise 0 (acyclic):
 * a stops at 5 in its event of priority 0. */
Test(stop, the_zero_promise_group_ends_right_after_the_stopping_event)
{
    for (int w = 0; w < 2; w++) {
        kr_model_t *m = new_model(20 * S, w ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE);
        kr_sim_t *a = add(m, "a", 0, UINT32_MAX, 0, 0);
        kr_sim_t *b = add(m, "b", 0, UINT32_MAX, 0, 0);
        kr_sim_t *c = add(m, "c", 0, UINT32_MAX, 0, 0);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, 0), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
        cr_assert_eq(kr_model_add_dependency(m, 0, 2, 0), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        cr_assert_eq(kr_model_group_of(m, 1), 0);
        mark(a, 0, 5 * S, 1);
        mark(a, 2, 5 * S, 0);     /* a's own, after: does not run */
        mark(b, 0, 4 * S, 0);     /* runs */
        mark(b, -1, 5 * S, 0);    /* before a's event: runs */
        mark(b, 1, 5 * S, 0);     /* after a's event: does not run */
        mark(c, 0, 4 * S, 0);     /* runs */
        mark(c, -5, 5 * S, 0);    /* at t + d = 5: does not run, whatever its key */
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_sim_event_count(a), 1);
        cr_assert_eq(kr_sim_event_count(b), 2);
        cr_assert_eq(kr_sim_now(b), 5 * S);
        cr_assert_eq(kr_sim_event_count(c), 1);
        cr_assert_eq(kr_sim_now(c), 4 * S);
        kr_model_destroy(m);
    }
}

/* With a stop lookahead of 1.5 the simulator no path reaches ends too, after
 * its last event below 6.5; b (d = 2) ends before 6.5 as well. */
Test(stop, a_stop_lookahead_ends_every_simulator)
{
    uint64_t ref = 0;
    for (int w = 0; w < 2; w++) {
        kr_model_t *m = new_model(20 * S, w ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE);
        kr_sim_t *a = add(m, "a", S, 1, 2 * S, 5);
        kr_sim_t *b = add(m, "b", S, UINT32_MAX, 0, 0);
        kr_sim_t *d = add(m, "d", S, UINT32_MAX, 0, 0);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
        cr_assert_eq(kr_model_set_stop_lookahead(m, 3 * S / 2), KR_OK);
        start_ticking(m);
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_sim_now(a), 5 * S);
        cr_assert_eq(kr_sim_now(b), 6 * S);
        cr_assert_eq(kr_sim_now(d), 6 * S);
        cr_assert_eq(kr_sim_event_count(d), 6);
        if (!w) ref = kr_model_checksum(m);
        else cr_assert_eq(kr_model_checksum(m), ref);
        kr_model_destroy(m);
    }
    /* zero would make every group wait for every other at equal times */
    kr_model_t *m = new_model(20 * S, KR_SYNC_WINDOW);
    add(m, "a", S, UINT32_MAX, 0, 0);
    add(m, "b", S, UINT32_MAX, 0, 0);
    cr_assert_eq(kr_model_set_stop_lookahead(m, 0), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "stop lookahead of 0"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* a stops at 5 and d at 3 (d -> b, promise 1): the earliest is reported,
 * and b's horizon is the smaller one, 4. */
Test(stop, several_stops_the_earliest_horizon_wins)
{
    kr_model_t *m = new_model(20 * S, KR_SYNC_NULL_MESSAGE);
    add(m, "a", S, 1, 2 * S, 5);
    kr_sim_t *b = add(m, "b", S, UINT32_MAX, 0, 0);
    add(m, "d", S, 1, S, 3);
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 2, 1, S), KR_OK);
    start_ticking(m);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint32_t by;
    kr_time_t at;
    cr_assert(kr_model_stopped(m, &by, &at));
    cr_assert_eq(by, 2);
    cr_assert_eq(at, 3 * S);
    cr_assert_eq(kr_sim_stop_horizon(b), 4 * S);
    cr_assert_eq(kr_sim_now(b), 3 * S);
    kr_model_destroy(m);
}

Test(stop, outside_a_run_kr_sim_stop_does_nothing)
{
    kr_model_t *m = new_model(10 * S, KR_SYNC_NULL_MESSAGE);
    kr_sim_t *a = add(m, "a", S, UINT32_MAX, 0, 0);
    kr_sim_stop(a);
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    cr_assert(strstr(kr_last_error(), "not executing"), "%s", kr_last_error());
    start_ticking(m);
    kr_sim_stop(a); /* started, not running */
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    cr_assert_eq(kr_model_run(m), KR_OK);
    kr_sim_stop(a);
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    cr_assert_not(kr_model_stopped(m, NULL, NULL));
    cr_assert_eq(kr_sim_now(a), 10 * S);
    kr_model_destroy(m);
}

/* ---- from a behavior callback ---- */

static void step_and_stop(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self;
    int *steps = state;
    if (++*steps == 3) kr_sim_stop(kr_sim_of_world(w));
}

/* An agent-based simulator stops in its third step (at 3) from on_update;
 * x, downstream with promise 2, ends after its last event below 5. */
Test(stop, a_behavior_callback_can_stop_the_run)
{
    for (int w = 0; w < 2; w++) {
        kr_model_t *m = new_model(20 * S, w ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE);
        static const kr_behavior_vtbl_t vtbl = { .on_update = step_and_stop };
        kr_component_t c = kr_behavior_register(kr_model_registry(m), &(kr_behavior_desc_t){
            .name = "stepper", .state_size = sizeof(int), .vtbl = &vtbl });
        cr_assert_neq(c, KR_COMPONENT_NONE);
        kr_sim_t *ab = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "agents", .formalism = KR_AGENT_BASED,
                                                             .time_step = S });
        cr_assert_not_null(ab);
        kr_sim_t *x = add(m, "x", S, UINT32_MAX, 0, 0);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
        cr_assert_neq(kr_entity_create_desc(kr_sim_world(ab), &(kr_entity_desc_t){ .components = &c,
                                                                                   .component_count = 1 }),
                      KR_ENTITY_INVALID);
        start_ticking(m);
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_sim_now(ab), 3 * S);
        cr_assert_eq(kr_sim_event_count(ab), 3);
        cr_assert_eq(kr_sim_now(x), 4 * S);
        uint32_t by;
        cr_assert(kr_model_stopped(m, &by, NULL));
        cr_assert_eq(by, 0);
        kr_model_destroy(m);
    }
}

/* ---- the wire: a stop from another process is checked before use ---- */

static size_t stop_message(uint8_t *b, uint32_t from, uint32_t to, kr_time_t at, uint32_t by)
{
    size_t n = 0;
    b[n++] = 7; /* MSG_STOP (sync.c) */
    memcpy(b + n, &from, 4), n += 4;
    memcpy(b + n, &to, 4), n += 4;
    uint64_t seq = 0, guarantee = 0;
    memcpy(b + n, &seq, 8), n += 8;
    memcpy(b + n, &at, 8), n += 8;
    memcpy(b + n, &guarantee, 8), n += 8;
    memcpy(b + n, &by, 4), n += 4;
    return n;
}

Test(stop, a_stop_message_is_checked)
{
    struct { uint32_t by; kr_time_t at; size_t cut; size_t extra; const char *why; } bad[] = {
        { 9, 2 * S, 0, 0, "unknown simulator" },
        { 0, 30 * S, 0, 0, "after the end time" },
        { 0, 2 * S, 2, 0, "truncated" },
        { 0, 2 * S, 0, 1, "overlong" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kr_model_t *m = new_model(20 * S, KR_SYNC_NULL_MESSAGE);
        add(m, "a", 0, UINT32_MAX, 0, 0);
        add(m, "b", 0, UINT32_MAX, 0, 0);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        cr_assert_eq(kr_model_start(m), KR_OK);
        uint8_t msg[64] = { 0 };
        size_t n = stop_message(msg, 0, 1, bad[i].at, bad[i].by) - bad[i].cut + bad[i].extra;
        cr_assert_eq(kr__sync_deliver(m, msg, n), KR_ERR_CORRUPT, "%s", bad[i].why);
        cr_assert(strstr(kr_last_error(), "bad message from simulator 'a'"), "%s", kr_last_error());
        cr_assert_not(kr_model_stopped(m, NULL, NULL));
        kr_model_destroy(m);
    }
    /* a good one: b learns its horizon, 2 + 1 */
    kr_model_t *m = new_model(20 * S, KR_SYNC_NULL_MESSAGE);
    add(m, "a", 0, UINT32_MAX, 0, 0);
    kr_sim_t *b = add(m, "b", 0, UINT32_MAX, 0, 0);
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    uint8_t msg[64];
    cr_assert_eq(kr__sync_deliver(m, msg, stop_message(msg, 0, 1, 2 * S, 0)), KR_OK, "%s", kr_last_error());
    uint32_t by;
    kr_time_t at;
    cr_assert(kr_model_stopped(m, &by, &at));
    cr_assert_eq(by, 0);
    cr_assert_eq(at, 2 * S);
    cr_assert_eq(kr_sim_stop_horizon(b), 3 * S);
    kr_model_destroy(m);
}

/* ---- random models: the same events whatever carries the stops ---- */

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Model `seed`: 6 simulators, random dependencies (some with zero
 * promises, so groups form), each ticking and sending to one successor,
 * two of them stopping after a random number of ticks. Fills each
 * simulator's event count and returns the checksum. */
static uint64_t run_random(uint64_t seed, kr_sync_algorithm_t sync, uint64_t transport_seed, uint64_t *events)
{
    enum { N = 6 };
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    kr_model_t *m = new_model(12 * S, sync);
    if (transport_seed)
        cr_assert_eq(kr__model_use_transport(m, kr__transport_test_create(&(kr__test_transport_desc_t){
                         .seed = transport_seed, .hold_probability = 0.5, .duplicate_probability = 0.1 })), KR_OK);
    kr_time_t promise[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            promise[i][j] = KR_TIME_NEVER;
            if (i != j && next_rand(&x) % 3 == 0) promise[i][j] = (next_rand(&x) % 4) * S / 2;
            /* (a sender side may not wait for its own target through a
             * zero promise: a deadlock of its own, docs/concepts.md) */
            if (ticks_with_sender_side && promise[i][j] == 0) promise[i][j] = S / 4;
        }
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        uint32_t target = UINT32_MAX;
        for (int j = 0; j < N && target == UINT32_MAX; j++)
            if (promise[i][j] != KR_TIME_NEVER) target = (uint32_t)j;
        kr_time_t delay = target == UINT32_MAX ? 0 : promise[i][target] + (next_rand(&x) % 3) * S / 4;
        add(m, name, S / 4 + (next_rand(&x) % 5) * S / 8, target, delay, i < 2 ? 5 + next_rand(&x) % 30 : 0);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (promise[i][j] != KR_TIME_NEVER)
                cr_assert_eq(kr_model_add_dependency(m, (uint32_t)i, (uint32_t)j, promise[i][j]), KR_OK);
    start_ticking(m);
    cr_assert_eq(kr_model_run(m), KR_OK, "model %llu: %s", (unsigned long long)seed, kr_last_error());
    for (uint32_t i = 0; i < N; i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        events[i] = kr_sim_event_count(s);
        /* nothing ran at or past a horizon, but in the stopper's own event */
        kr_time_t h = kr_sim_stop_horizon(s);
        cr_assert(h == KR_TIME_NEVER || kr_sim_now(s) <= h, "model %llu: s%u at %llu, horizon %llu",
                  (unsigned long long)seed, i, (unsigned long long)kr_sim_now(s), (unsigned long long)h);
    }
    uint64_t sum = kr_model_checksum(m);
    kr_model_destroy(m);
    return sum;
}

static void random_models_stop_alike(bool sender_side)
{
    ticks_with_sender_side = sender_side;
    for (uint64_t seed = 1; seed <= 25; seed++) {
        uint64_t ref_events[6], events[6];
        uint64_t ref = run_random(seed, KR_SYNC_NULL_MESSAGE, 0, ref_events);
        const struct { kr_sync_algorithm_t sync; uint64_t transport; } runs[] = {
            { KR_SYNC_WINDOW, 0 }, { KR_SYNC_NULL_MESSAGE, 3 }, { KR_SYNC_NULL_MESSAGE, 4 }, { KR_SYNC_WINDOW, 5 } };
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            cr_assert_eq(run_random(seed, runs[r].sync, runs[r].transport, events), ref, "model %llu, run %zu",
                         (unsigned long long)seed, r);
            cr_assert_arr_eq(events, ref_events, sizeof events, "model %llu, run %zu", (unsigned long long)seed, r);
        }
    }
    ticks_with_sender_side = false;
}

Test(stop, random_models_stop_alike_under_every_transport_and_algorithm)
{
    random_models_stop_alike(false);
}

/* The same with sender sides (and positive promises): those at or past
 * their sender's horizon never run, and their targets do not wait for them
 * (stop.c). */
Test(stop, random_models_with_sender_sides_stop_alike_under_every_transport_and_algorithm)
{
    random_models_stop_alike(true);
}

/* ---- an emulation simulator stops waiting for its clock at its horizon ---- */

#include <time.h>

/* d (discrete-event) stops at 2; the emulation simulator e (100 model units
 * per wall second, promise 1 from d) ticks every unit: it ends after its
 * tick at 2 (horizon 3) instead of pacing on to the end at 1000, ten wall
 * seconds away. */
Test(stop, an_emulation_simulator_ends_at_its_horizon, .timeout = 10)
{
    for (int w = 0; w < 2; w++) {
        kr_model_t *m = new_model(1000 * S, w ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE);
        add(m, "d", S, UINT32_MAX, 0, 2);
        kr_emulation_desc_t ed = { .speed = 100, .input_fd = -1 };
        kr_sim_t *e = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "e", .formalism = KR_EMULATION, .emulation = &ed });
        cr_assert_not_null(e, "%s", kr_last_error());
        tickers[1] = (ticker_t){ .period = S, .target = UINT32_MAX };
        kr_sim_set_user(e, &tag, &tickers[1]);
        cr_assert_eq(kr_model_add_dependency(m, 0, 1, S), KR_OK);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        start_ticking(m);
        cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_assert_eq(kr_sim_now(e), 2 * S);
        cr_assert_eq(kr_sim_event_count(e), 2);
        double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        cr_assert_lt(wall, 2.0, "the run waited for the emulation clock: %g s", wall);
        kr_model_destroy(m);
    }
}

/* ---- sync-events whose sender side is past its sender's horizon ---- */

/* a -> x (promise 4) -> y (promise 1); a stops at 5, so x's horizon is 9
 * and y's 10 (d <= 4 + 1). A sync-event x -> y with a sender side at u in
 * [9, 10) never happens: x runs nothing at or after 9, so its sender side
 * never runs, and y, which would run the target side below 10, must not
 * wait for the payload (it did, for ever: a deadlock). x's sync-events, by
 * index, and their times: 0 at 8.5 runs; 1 at 9 and 2 at 9.5 do not; 3 at
 * 10.5 is past y's horizon too; 4 at 8, delayed at 6 to 9; 5 at 9.2 and 6
 * at 9.4 made at 6 (after the stop, at least in one process), 6 cancelled
 * at 7; 7 at 9.6, delayed at 7 to 9.8; 8 at 8.9, cancelled at 6. Whether x
 * hears of the stop before or after its events at 6 and 7 (the transport
 * decides), only 0 runs, on both sides. */
enum { HANDS = 9 };
typedef struct hand { int index, filled; } hand_t;
static kr_event_type_t hand_type, plan_type;
static kr_event_key_t hand_keys[HANDS];
static int hand_sent[HANDS], hand_received[HANDS];

static void on_hand_sender(kr_sim_t *sim, void *data)
{
    (void)sim;
    hand_t *h = data;
    hand_sent[h->index]++;
    h->filled = 1;
}

static void on_hand_target(kr_sim_t *sim, void *data)
{
    (void)sim;
    const hand_t *h = data;
    cr_assert_eq(h->filled, 1, "hand %d: the payload of its sender side", h->index);
    hand_received[h->index]++;
}

static void hand(kr_sim_t *x, int index, kr_time_t delay)
{
    hand_t h = { index, 0 };
    cr_assert_eq(kr_schedule_sync(x, &(kr_sync_desc_t){ .target = 2, .delay = delay, .type = hand_type, .data = &h },
                                  &hand_keys[index]), KR_OK, "hand %d: %s", index, kr_last_error());
}

static void on_plan(kr_sim_t *x, void *data)
{
    int step;
    memcpy(&step, data, sizeof step);
    if (step == 1) {
        hand(x, 0, 15 * S / 2);
        hand(x, 1, 8 * S);
        hand(x, 2, 17 * S / 2);
        hand(x, 3, 19 * S / 2);
        hand(x, 4, 7 * S);
        hand(x, 7, 43 * S / 5);
        hand(x, 8, 79 * S / 10);
    } else if (step == 6) {
        cr_assert_eq(kr_delay(x, &hand_keys[4], S, &hand_keys[4]), KR_OK, "%s", kr_last_error());
        hand(x, 5, 16 * S / 5);
        hand(x, 6, 17 * S / 5);
        cr_assert_eq(kr_cancel(x, &hand_keys[8]), KR_OK, "%s", kr_last_error());
    } else {
        cr_assert_eq(kr_cancel(x, &hand_keys[6]), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_delay(x, &hand_keys[7], S / 5, &hand_keys[7]), KR_OK, "%s", kr_last_error());
    }
}

static uint64_t run_sender_sides(kr_sync_algorithm_t sync, kr__transport_t *tr)
{
    kr_model_t *m = new_model(20 * S, sync);
    if (tr) cr_assert_eq(kr__model_use_transport(m, tr), KR_OK);
    hand_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "hand", .size = sizeof(hand_t),
                                                                .on_sender_side = on_hand_sender,
                                                                .on_target_side = on_hand_target });
    plan_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "plan", .size = sizeof(int),
                                                                .on_event = on_plan });
    cr_assert(hand_type && plan_type);
    memset(hand_sent, 0, sizeof hand_sent);
    memset(hand_received, 0, sizeof hand_received);
    kr_sim_t *a = add(m, "a", S, UINT32_MAX, 0, 5);
    kr_sim_t *x = add(m, "x", 0, UINT32_MAX, 0, 0);
    kr_sim_t *y = add(m, "y", S, UINT32_MAX, 0, 0);
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 4 * S), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 2, S), KR_OK);
    start_ticking(m);
    for (int step = 1; step <= 7; step++)
        if (step == 1 || step == 6 || step == 7)
            cr_assert_eq(kr_schedule(x, KR_PRIORITY_DEFAULT, (kr_time_t)step * S, plan_type, &step, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_sim_stop_horizon(a), 5 * S);
    cr_assert_eq(kr_sim_stop_horizon(x), 9 * S);
    cr_assert_eq(kr_sim_stop_horizon(y), 10 * S);
    for (int i = 0; i < HANDS; i++) {
        cr_assert_eq(hand_sent[i], i == 0, "hand %d: sender side", i);
        cr_assert_eq(hand_received[i], i == 0, "hand %d: target side", i);
    }
    cr_assert_eq(kr_sim_now(x), 8500 * S / 1000, "its last event: hand 0's sender side");
    cr_assert_eq(kr_sim_event_count(x), 3 + 1);
    cr_assert_eq(kr_sim_now(y), 9 * S);
    cr_assert_eq(kr_sim_event_count(y), 9 + 1, "ticks 1 to 9 and hand 0");
    uint64_t sum = kr_model_checksum(m);
    kr_model_destroy(m);
    return sum;
}

Test(stop, a_sender_side_past_its_senders_horizon_never_runs_and_its_target_does_not_wait)
{
    same_whatever_the_transport(run_sender_sides, 6);
}
