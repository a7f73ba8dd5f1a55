/* Events inside one simulator: the five-part order, scheduling at the
 * current time, cancel and delay by key (also of other events at the
 * current time, never the executing one), the reserved step priority, the
 * end time boundary, and the model's structural checks. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"

#define S (KR_PRECISION_DEFAULT)

typedef struct log_entry {
    kr_time_t time;
    int32_t tag;
} log_entry_t;

typedef struct fixture {
    log_entry_t log[256];
    int n;
    kr_event_key_t keys[16];
    kr_event_type_t ev;
    kr_status_t status[8];
    int statuses;
} fixture_t;

static fixture_t fx;

static void record(kr_sim_t *sim, void *data)
{
    int32_t tag = *(int32_t *)data;
    fx.log[fx.n++] = (log_entry_t){ kr_sim_now(sim), tag };
}

static kr_model_t *make_model(kr_time_t end)
{
    memset(&fx, 0, sizeof fx);
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = end, .log_level = KR_LOG_OFF });
    cr_assert_not_null(m);
    fx.ev = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "rec", .size = sizeof(int32_t),
                                                              .on_event = record });
    cr_assert_neq(fx.ev, 0);
    return m;
}

static kr_sim_t *add_de(kr_model_t *m, const char *name)
{
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = name, .formalism = KR_DISCRETE_EVENT });
    cr_assert_not_null(s, "%s", kr_last_error());
    return s;
}

static void sched(kr_sim_t *s, kr_priority_t prio, kr_time_t delay, int32_t tag, kr_event_key_t *key)
{
    cr_assert_eq(kr_schedule(s, prio, delay, fx.ev, &tag, key), KR_OK, "%s", kr_last_error());
}

Test(events, order_is_time_priority_then_sequence)
{
    kr_model_t *m = make_model(10 * S);
    kr_sim_t *s = add_de(m, "a");
    sched(s, 0, 5 * S, 1, NULL);
    sched(s, 5, 2 * S, 2, NULL);
    sched(s, 0, 2 * S, 3, NULL);   /* same time, lower priority value than tag 2: first */
    sched(s, -3, 2 * S, 4, NULL);  /* negative priorities run before 0 */
    sched(s, 0, 2 * S, 5, NULL);   /* same time and priority as tag 3: after it, by sequence */
    sched(s, 0, 0, 6, NULL);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    int32_t want[] = { 6, 4, 3, 5, 2, 1 };
    cr_assert_eq(fx.n, 6);
    for (int i = 0; i < 6; i++) cr_assert_eq(fx.log[i].tag, want[i], "position %d: %d", i, fx.log[i].tag);
    cr_assert_eq(fx.log[1].time, 2 * S);
    kr_model_destroy(m);
}

/* A handler that schedules at the current time with a key below events
 * already run: it runs next, before the rest of that time's events. */
static kr_event_type_t chain_type;
static void chain(kr_sim_t *sim, void *data)
{
    int32_t tag = *(int32_t *)data;
    fx.log[fx.n++] = (log_entry_t){ kr_sim_now(sim), tag };
    if (tag == 10) {
        int32_t t = 11;
        cr_assert_eq(kr_schedule(sim, -100, 0, chain_type, &t, NULL), KR_OK);
    }
}

Test(events, schedule_at_now_with_lower_key_runs_next)
{
    kr_model_t *m = make_model(10 * S);
    chain_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "chain", .size = 4, .on_event = chain });
    kr_sim_t *s = add_de(m, "a");
    int32_t a = 10, b = 12;
    cr_assert_eq(kr_schedule(s, 0, S, chain_type, &a, NULL), KR_OK);
    cr_assert_eq(kr_schedule(s, 1, S, chain_type, &b, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(fx.n, 3);
    cr_assert_eq(fx.log[0].tag, 10);
    cr_assert_eq(fx.log[1].tag, 11);
    cr_assert_eq(fx.log[2].tag, 12);
    kr_model_destroy(m);
}

Test(events, end_time_is_inclusive)
{
    kr_model_t *m = make_model(3 * S);
    kr_sim_t *s = add_de(m, "a");
    sched(s, 0, 3 * S, 1, NULL);
    sched(s, 0, 3 * S + 1, 2, NULL);
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(fx.n, 1);
    cr_assert_eq(fx.log[0].tag, 1);
    cr_assert_eq(kr_sim_now(s), 3 * S);
    kr_model_destroy(m);
}

/* At t = 1: the first event cancels one event at the same time, delays
 * another at the same time, tries to cancel and delay itself (refused), and
 * cancels one in the future. */
static kr_event_type_t boss_type;
static void boss(kr_sim_t *sim, void *data)
{
    (void)data;
    fx.log[fx.n++] = (log_entry_t){ kr_sim_now(sim), 100 };
    fx.status[fx.statuses++] = kr_cancel(sim, &fx.keys[1]);               /* same time, pending */
    fx.status[fx.statuses++] = kr_delay(sim, &fx.keys[2], 2 * S, &fx.keys[5]); /* same time -> t = 3 */
    fx.status[fx.statuses++] = kr_cancel(sim, kr_event_current(sim));     /* itself: refused */
    fx.status[fx.statuses++] = kr_delay(sim, &fx.keys[0], 1, NULL);       /* itself: refused */
    fx.status[fx.statuses++] = kr_cancel(sim, &fx.keys[3]);               /* future */
}

Test(events, cancel_and_delay_by_key)
{
    kr_model_t *m = make_model(10 * S);
    boss_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "boss", .on_event = boss });
    kr_sim_t *s = add_de(m, "a");
    cr_assert_eq(kr_schedule(s, -1, S, boss_type, NULL, &fx.keys[0]), KR_OK);
    sched(s, 0, S, 1, &fx.keys[1]);
    sched(s, 0, S, 2, &fx.keys[2]);
    sched(s, 0, 5 * S, 3, &fx.keys[3]);
    sched(s, 0, 2 * S, 4, &fx.keys[4]);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(fx.status[0], KR_OK);
    cr_assert_eq(fx.status[1], KR_OK);
    cr_assert_eq(fx.status[2], KR_ERR_STATE);
    cr_assert_eq(fx.status[3], KR_ERR_STATE);
    cr_assert_eq(fx.status[4], KR_OK);
    /* boss at 1, tag 4 at 2, tag 2 delayed to 3 keeps its sequence */
    cr_assert_eq(fx.n, 3);
    cr_assert_eq(fx.log[0].tag, 100);
    cr_assert_eq(fx.log[1].tag, 4);
    cr_assert_eq(fx.log[2].tag, 2);
    cr_assert_eq(fx.log[2].time, 3 * S);
    cr_assert_eq(fx.keys[5].sequence, fx.keys[2].sequence);
    cr_assert_eq(fx.keys[5].time, 3 * S);
    /* after the run every key is spent */
    cr_assert_eq(kr_cancel(s, &fx.keys[4]), KR_ERR_STATE);
    kr_model_destroy(m);
}

Test(events, delay_keeps_place_among_equal_keys)
{
    kr_model_t *m = make_model(10 * S);
    kr_sim_t *s = add_de(m, "a");
    kr_event_key_t k;
    sched(s, 0, 1 * S, 1, &k);       /* sequence 0, moved to t = 2 */
    sched(s, 0, 2 * S, 2, NULL);     /* sequence 1 at t = 2 */
    cr_assert_eq(kr_delay(s, &k, S, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(fx.n, 2);
    cr_assert_eq(fx.log[0].tag, 1);  /* lower sequence still first at t = 2 */
    cr_assert_eq(fx.log[1].tag, 2);
    kr_model_destroy(m);
}

Test(events, many_delays_do_not_grow_without_bound)
{
    kr_model_t *m = make_model(100000 * S);
    kr_sim_t *s = add_de(m, "a");
    kr_event_key_t k;
    sched(s, 0, S, 1, &k);
    for (int i = 0; i < 20000; i++) cr_assert_eq(kr_delay(s, &k, 1, &k), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(fx.n, 1);
    cr_assert_eq(fx.log[0].time, S + 20000);
    kr_model_destroy(m);
}

Test(events, refusals)
{
    kr_model_t *m = make_model(10 * S);
    kr_sim_t *s = add_de(m, "a");
    int32_t tag = 0;
    cr_assert_eq(kr_schedule(s, KR_PRIORITY_STEP, 0, fx.ev, &tag, NULL), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_schedule(s, 0, 0, 999, &tag, NULL), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_schedule(s, 0, 0, 0, &tag, NULL), KR_ERR_INVALID_ARG);
    kr_event_type_t sync_only = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "s", .on_target_side = record });
    cr_assert_eq(kr_schedule(s, 0, 0, sync_only, &tag, NULL), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "on_event"));
    /* duplicate names, missing handlers */
    cr_assert_eq(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "rec", .on_event = record }), 0);
    cr_assert_eq(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "x" }), 0);
    /* a sync-event's payload fits one message between ranks; a local event's needs not */
    size_t most = ((size_t)1 << 30) - 4096;
    cr_assert_eq(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "big", .size = most + 1,
                                                                 .on_target_side = record }), 0);
    cr_assert_str_eq(kr_last_error(), "kr_model_event_type: sync-event type 'big': a payload of 1073737729 bytes, more "
                     "than the 1073737728 a sync-event may carry between ranks");
    cr_assert_neq(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "big", .size = most,
                                                                  .on_target_side = record }), 0);
    cr_assert_neq(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "big local", .size = most + 1,
                                                                  .on_event = record }), 0);
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "a" }));
    cr_assert(strstr(kr_last_error(), "already exists"));
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "" }));
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ab", .formalism = KR_AGENT_BASED }));
    cr_assert(strstr(kr_last_error(), "time step"));
    kr_model_destroy(m);
}

/* A handler changes only its own simulator's events: scheduling, cancelling
 * or delaying another's is refused (over ranks the other may have no queue
 * here: tests/cli/test_cli_mpi.c), and the other's events stay as they were.
 * After the run nothing is scheduled. */
static kr_sim_t *meddle_target;
static char meddle_error[4][512];

static void meddle(kr_sim_t *sim, void *data)
{
    (void)data;
    int32_t tag = 7;
    kr_sim_t *b = meddle_target;
    for (int i = 0; i < 4; i++) {
        fx.status[i] = i == 0 ? kr_schedule(b, 0, S, fx.ev, &tag, NULL)
                     : i == 1 ? kr_cancel(b, &fx.keys[0])
                     : i == 2 ? kr_delay(b, &fx.keys[0], S, NULL)
                              : kr_schedule_in(b, 1.0, record, &tag);
        snprintf(meddle_error[i], sizeof meddle_error[i], "%s", kr_last_error());
    }
    fx.status[4] = kr_schedule(sim, 0, S, fx.ev, &tag, NULL);
}

Test(events, a_handler_changes_only_its_own_simulators_events)
{
    kr_model_t *m = make_model(10 * S);
    kr_event_type_t meddler = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "meddle", .on_event = meddle });
    kr_sim_t *a = add_de(m, "a");
    meddle_target = add_de(m, "b");
    cr_assert_eq(kr_schedule(a, 0, S, meddler, NULL, NULL), KR_OK);
    sched(meddle_target, 0, 3 * S, 1, &fx.keys[0]);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    static const char *const calls[] = { "kr_schedule", "kr_cancel", "kr_delay", "kr_schedule_in" };
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(fx.status[i], KR_ERR_STATE, "%s: %d", calls[i], fx.status[i]);
        char want[128];
        snprintf(want, sizeof want, "%s: 'b' is not executing an event: a simulator schedules, cancels and delays "
                 "only its own events", calls[i]);
        cr_assert(strstr(meddle_error[i], want), "%s", meddle_error[i]);
    }
    cr_assert_eq(fx.status[4], KR_OK, "its own events stay its own");
    /* b's event ran once, at its time; a's own at 2 */
    cr_assert_eq(fx.n, 2);
    cr_assert_eq(fx.log[0].tag, 7);
    cr_assert_eq(fx.log[0].time, 2 * S);
    cr_assert_eq(fx.log[1].tag, 1);
    cr_assert_eq(fx.log[1].time, 3 * S);
    int32_t tag = 0;
    cr_assert_eq(kr_schedule(a, 0, S, fx.ev, &tag, NULL), KR_ERR_STATE);
    cr_assert(strstr(kr_last_error(), "kr_schedule: 'a': the run has ended"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* A program of its own runs its model in one process: a simulator placed
 * on another rank is refused at the start (it waited for messages that
 * never came, then failed with an internal message). */
Test(events, a_simulator_on_another_rank_without_a_transport_is_refused)
{
    kr_model_t *m = make_model(10 * S);
    add_de(m, "here");
    cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "there", .formalism = KR_DISCRETE_EVENT,
                                                             .rank = 1 }));
    cr_assert_eq(kr_model_start(m), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "simulator 'there' is placed on rank 1, but this process (rank 0) runs the "
                                      "model alone"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* kr_sim_fail of a NULL simulator (a name mistyped in kr_model_find_sim)
 * says so instead of crashing. */
Test(events, kr_sim_fail_of_no_simulator_does_not_crash)
{
    kr_sim_fail(NULL, KR_ERR_CORRUPT, "bad part %d", 3);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_str_eq(kr_last_error(), "kr_sim_fail: null simulator (the failure was: bad part 3)");
}

Test(events, lookup_context_and_structure)
{
    kr_model_t *m = make_model(10 * S);
    kr_sim_t *a = add_de(m, "alpha");
    kr_sim_t *b = add_de(m, "beta");
    cr_assert_eq(kr_model_find_sim(m, "beta"), b);
    cr_assert_null(kr_model_find_sim(m, "gamma"));
    /* the getters of a simulator not found answer 0 or NULL */
    kr_sim_t *none = kr_model_find_sim(m, "gamma");
    cr_assert(!kr_sim_world(none) && !kr_sim_model(none) && !kr_sim_rng(none) && !kr_sim_name(none));
    cr_assert(kr_sim_id(none) == 0 && kr_sim_event_count(none) == 0 && kr_sim_time_step(none) == 0);
    cr_assert_null(kr_sim_context(none, 1));
    cr_assert(kr_model_precision(NULL) == 0 && kr_model_seed(NULL) == 0 && !kr_model_registry(NULL));
    cr_assert_eq(kr_model_sim(m, 0), a);
    cr_assert_null(kr_model_sim(m, 2));
    cr_assert_eq(kr_sim_id(b), 1);
    cr_assert_str_eq(kr_sim_name(a), "alpha");
    cr_assert_eq(kr_sim_of_world(kr_sim_world(a)), a);
    kr_context_type_t ctx = kr_model_context_type(m, &(kr_context_desc_t){ .name = "ctx", .size = 16 });
    cr_assert_neq(ctx, 0);
    int *pa = kr_sim_context(a, ctx), *pb = kr_sim_context(b, ctx);
    cr_assert(pa && pb && pa != pb);
    cr_assert_eq(pa[0], 0);
    pa[0] = 7;
    cr_assert_eq(((int *)kr_sim_context(a, ctx))[0], 7);
    cr_assert_null(kr_sim_context(a, 99));
    /* dependencies and promises */
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 5), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 5), KR_ERR_EXISTS);
    cr_assert_eq(kr_model_add_dependency(m, 0, 0, 5), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_model_add_dependency(m, 0, 7, 5), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_model_promise(m, 0, 1), 5);
    cr_assert_eq(kr_model_set_promise(m, 0, 1, 9), KR_OK);
    cr_assert_eq(kr_model_promise(m, 0, 1), 9);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 3), KR_OK);
    cr_assert_eq(kr_model_set_promises(m, 1, 4), KR_OK);
    cr_assert_eq(kr_model_promise(m, 1, 0), 4);
    cr_assert_eq(kr_model_promise(m, 1, 1), KR_TIME_NEVER);
    cr_assert_eq(kr_model_start(m), KR_OK);
    cr_assert_eq(kr_model_set_promise(m, 0, 1, 1), KR_ERR_STATE);
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "late" }));
    cr_assert_eq(kr_model_group_of(m, 1), 1);
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_STATE);
    kr_model_destroy(m);
}

/* ---- logging ---- */

static int log_calls;
static kr_log_level_t last_level;
static char last_msg[128], last_sim[32];
static void hook(void *arg, kr_log_level_t level, const char *sim, kr_time_t now, const char *msg)
{
    (void)arg;
    (void)now;
    log_calls++;
    last_level = level;
    snprintf(last_msg, sizeof last_msg, "%s", msg);
    snprintf(last_sim, sizeof last_sim, "%s", sim);
}

Test(events, log_levels_and_hook)
{
    log_calls = 0;
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .log_level = KR_LOG_WARN, .log_fn = hook });
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "w" });
    kr_log(s, KR_LOG_INFO, "hidden %d", 1);
    cr_assert_eq(log_calls, 0);
    kr_log(s, KR_LOG_ERROR, "shown %d", 2);
    cr_assert_eq(log_calls, 1);
    cr_assert_eq(last_level, KR_LOG_ERROR);
    cr_assert_str_eq(last_msg, "shown 2");
    cr_assert_str_eq(last_sim, "w");
    kr_model_log(m, KR_LOG_CRITICAL, "model");
    cr_assert_str_eq(last_sim, "");
    kr_log_level_t l;
    cr_assert_eq(kr_log_level_from_name("debug", &l), KR_OK);
    cr_assert_eq(l, KR_LOG_DEBUG);
    cr_assert_eq(kr_log_level_from_name("loud", &l), KR_ERR_INVALID_ARG);
    cr_assert_str_eq(kr_log_level_name(KR_LOG_TRACE), "trace");
    kr_formalism_t f;
    cr_assert_eq(kr_formalism_from_name("agent-based", &f), KR_OK);
    cr_assert_eq(f, KR_AGENT_BASED);
    cr_assert_eq(kr_formalism_from_name("hybrid", &f), KR_ERR_INVALID_ARG);
    kr_model_destroy(m);
}

/* ---- agent-based steps ---- */

typedef struct walker { int id; } walker_t;
static char order[512];
static int order_len;
static void upd(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self;
    (void)w;
    order[order_len++] = (char)('a' + ((walker_t *)state)->id);
}
static void late(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self;
    (void)w;
    order[order_len++] = (char)('A' + ((walker_t *)state)->id);
}
static int arrivals_seen_before_step;
static void arrival(kr_sim_t *sim, void *data)
{
    (void)data;
    (void)sim;
    if (order_len == 0) arrivals_seen_before_step++;
}

Test(events, agent_based_steps_update_then_late_update)
{
    order_len = 0;
    arrivals_seen_before_step = 0;
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 5 * S, .log_level = KR_LOG_OFF });
    kr_behavior_vtbl_t vt = { .on_update = upd, .on_late_update = late };
    kr_component_t beh = kr_behavior_register(kr_model_registry(m), &(kr_behavior_desc_t){
        .name = "walker", .state_size = sizeof(walker_t), .vtbl = &vt });
    cr_assert_neq(beh, 0);
    kr_event_type_t arr = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "arr", .on_event = arrival });
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "abm", .formalism = KR_AGENT_BASED, .time_step = S });
    cr_assert_not_null(s);
    for (int i = 0; i < 3; i++) {
        kr_entity_t e = kr_entity_create(kr_sim_world(s));
        walker_t *w = kr_component_add(kr_sim_world(s), e, beh);
        w->id = i;
    }
    /* An arrival at the first step time runs before the step (reserved priority). */
    cr_assert_eq(kr_schedule(s, 1000, S, arr, NULL, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(arrivals_seen_before_step, 1);
    order[order_len] = 0;
    /* steps at 1..5 => 5 steps of "abcABC" */
    cr_assert_eq(order_len, 30, "%s", order);
    for (int k = 0; k < 5; k++) cr_assert_eq(strncmp(order + 6 * k, "abcABC", 6), 0, "%s", order);
    cr_assert_eq(kr_sim_now(s), 5 * S);
    kr_model_destroy(m);
}

/* kr_sim_fail from a handler: the run stops after that event and returns
 * the status with the simulator, the time and the message; the first
 * failure wins. kr_sim_user keeps one pointer per simulator. */
static void fail_at_tag_2(kr_sim_t *sim, void *data)
{
    int32_t tag = *(int32_t *)data;
    fx.log[fx.n++] = (log_entry_t){ kr_sim_now(sim), tag };
    cr_assert_eq(kr_sim_user(sim, &fx.ev), (void *)&fx);
    cr_assert_null(kr_sim_user(sim, &fx.n), "another owner finds nothing");
    if (tag == 2) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "bad part %d", tag);
        kr_sim_fail(sim, KR_ERR_NOMEM, "a second failure");
    }
}

Test(events, a_handler_fails_the_run)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 10 * S, .log_level = KR_LOG_OFF });
    memset(&fx, 0, sizeof fx);
    fx.ev = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "f", .size = sizeof(int32_t),
                                                              .on_event = fail_at_tag_2 });
    kr_sim_t *s = add_de(m, "line");
    cr_assert_null(kr_sim_user(s, &fx.ev));
    kr_sim_set_user(s, &fx.ev, &fx);
    for (int32_t t = 1; t <= 3; t++) sched(s, 0, (kr_time_t)t * S, t, NULL);
    cr_assert_eq(kr_model_run(m), KR_ERR_CORRUPT);
    cr_assert_not_null(strstr(kr_last_error(), "simulator 'line', time 2: bad part 2"), "%s", kr_last_error());
    cr_assert_eq(fx.n, 2, "the run stopped after the failing event");
    kr_model_destroy(m);
}

/* Outside a run kr_sim_fail is not lost: before it, kr_model_failure and
 * kr_model_run report it (a model-file build checks after each setup);
 * either way kr_last_error has it at once. */
Test(events, a_failure_before_the_run_is_reported)
{
    kr_model_t *m = make_model(10 * S);
    kr_sim_t *s = add_de(m, "setup");
    cr_assert_eq(kr_model_failure(m), KR_OK);
    kr_sim_fail(s, KR_ERR_NOMEM, "no room for %d parts", 7);
    cr_assert_str_eq(kr_last_error(), "simulator 'setup', time 0: no room for 7 parts");
    cr_assert_eq(kr_model_failure(m), KR_ERR_NOMEM);
    cr_assert_eq(kr_model_run(m), KR_ERR_NOMEM);
    cr_assert(strstr(kr_last_error(), "no room for 7 parts"), "%s", kr_last_error());
    cr_assert_eq(fx.n, 0, "nothing ran");
    kr_model_destroy(m);
}
