/* The light path of a model kind, below the runtime: per-simulator state
 * with slots (kairos/state.h), scheduling by handler (kairos/handler.h),
 * shared event types and components, and digests from field metadata
 * (kairos/digest.h) that depend neither on entity ids nor on order. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"

#define S (KR_PRECISION_DEFAULT)

typedef struct counter_state {
    uint64_t ticks;
    kr_tally_t gaps;
    kr_batchmeans_t waits;
    kr_histogram_t spread;
    kr_dist_t delay;
    kr_entity_list_t seen;
} counter_state_t;

static const kr_field_t counter_fields[] = {
    KR_FIELD(counter_state_t, ticks, KR_FIELD_COUNTER),
    KR_FIELD(counter_state_t, gaps, KR_FIELD_TALLY),
    KR_FIELD(counter_state_t, waits, KR_FIELD_BATCHMEANS),
    KR_FIELD(counter_state_t, spread, KR_FIELD_HISTOGRAM),
    KR_FIELD(counter_state_t, delay, KR_FIELD_DIST),
    KR_FIELD(counter_state_t, seen, KR_FIELD_ENTITY_LIST),
    { 0 },
};

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    counter_state_t *c = kr_sim_state(sim);
    c->ticks++;
    kr_tally_add(&c->gaps, 1.0);
    kr_histogram_add(&c->spread, kr_sim_now_units(sim));
    if (kr_schedule_in(sim, 1.5, tick, NULL)) kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
}

static kr_model_t *model(kr_time_t end)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = end, .log_level = KR_LOG_OFF });
    cr_assert_not_null(m);
    return m;
}

Test(state, slots_are_set_up_reached_in_o1_and_freed)
{
    kr_model_t *m = model(10 * S);
    cr_assert(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick }));
    kr_context_type_t t = kr_model_context_type(m, &(kr_context_desc_t){ .name = "counter", .size = sizeof(counter_state_t),
                                                                          .fields = counter_fields });
    cr_assert(t, "%s", kr_last_error());
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "c", .formalism = KR_DISCRETE_EVENT });
    cr_assert_null(kr_sim_state(s));
    counter_state_t *c = kr_sim_set_state(s, t);
    cr_assert_not_null(c);
    cr_assert_eq(kr_sim_state(s), c);
    cr_assert_eq(kr_sim_context(s, t), c, "a state is a context block of its type");
    cr_assert_eq(c->waits.batch_size, 1, "batch means start ready");
    cr_assert_eq(kr_histogram_init(&c->spread, 0, 10, 10), KR_OK);
    cr_assert_eq(kr_dist_init(&c->delay, &(kr_dist_desc_t){ .kind = KR_DIST_EXPONENTIAL, .mean = 1 }), KR_OK);
    kr_world_t *w = kr_sim_world(s);
    for (int i = 0; i < 20; i++) cr_assert_eq(kr_entity_list_push(&c->seen, kr_entity_create(w)), KR_OK);
    cr_assert_eq(kr_schedule_in(s, 1.0, tick, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(c->ticks, 7); /* 1, 2.5, ..., 10 */
    cr_assert_eq(c->spread.total, 7);
    kr_model_destroy(m); /* ASan: histogram, distribution and list are freed */
}

Test(state, one_state_per_simulator)
{
    kr_model_t *m = model(S);
    kr_context_type_t a = kr_model_context_type(m, &(kr_context_desc_t){ .name = "a", .size = 8 });
    kr_context_type_t b = kr_model_context_type(m, &(kr_context_desc_t){ .name = "b", .size = 8 });
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "s", .formalism = KR_DISCRETE_EVENT });
    void *first = kr_sim_set_state(s, a);
    cr_assert_not_null(first);
    cr_assert_eq(kr_sim_set_state(s, a), first, "the same type again is the same block");
    cr_assert_null(kr_sim_set_state(s, b));
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    cr_assert_null(kr_sim_set_state(s, 99));
    kr_model_destroy(m); /* ASan: histogram, distribution and list are freed */
}

Test(state, a_field_outside_the_block_is_refused)
{
    kr_model_t *m = model(S);
    static const kr_field_t bad[] = { { "x", KR_FIELD_TALLY, 8, 1 }, { 0 } };
    cr_assert_eq(kr_model_context_type(m, &(kr_context_desc_t){ .name = "s", .size = 16, .fields = bad }), 0);
    cr_assert(strstr(kr_last_error(), "no room"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* ---- scheduling by handler ---- */

static int arrivals;
static void on_arrival(kr_sim_t *sim, void *data)
{
    (void)sim;
    arrivals += *(int *)data;
}
static void unused(kr_sim_t *sim, void *data) { (void)sim; (void)data; }
static void unused_local(kr_sim_t *sim, void *data) { (void)sim; (void)data; }

Test(state, send_by_handler_defaults_to_the_promise)
{
    kr_model_t *m = model(10 * S);
    cr_assert(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "arrive", .size = sizeof(int),
                                                              .on_target_side = on_arrival }));
    cr_assert(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = unused_local }));
    kr_sim_t *a = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "a", .formalism = KR_DISCRETE_EVENT });
    kr_sim_t *b = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "b", .formalism = KR_DISCRETE_EVENT });
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 2 * S), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK);
    arrivals = 0;
    cr_assert_eq(kr_send(a, &(kr_send_t){ .to = "b", .handler = on_arrival, .data = &(int){ 3 } }), KR_OK,
                 "%s", kr_last_error());
    /* below the promise, to an unknown simulator, an undeclared handler */
    cr_assert_neq(kr_send(a, &(kr_send_t){ .to = "b", .handler = on_arrival, .delay = 1 }), KR_OK);
    cr_assert_neq(kr_send(a, &(kr_send_t){ .to = "nobody", .handler = on_arrival }), KR_OK);
    cr_assert(strstr(kr_last_error(), "no simulator named 'nobody'"), "%s", kr_last_error());
    cr_assert_neq(kr_send(a, &(kr_send_t){ .to = "b", .handler = unused }), KR_OK);
    cr_assert(strstr(kr_last_error(), "not declared"), "%s", kr_last_error());
    /* a local event's handler, said in kr_send's words */
    cr_assert_neq(kr_send(a, &(kr_send_t){ .to = "b", .handler = unused_local }), KR_OK);
    cr_assert_str_eq(kr_last_error(), "kr_send: simulator 'a': the handler of event 'tick' is a local event's "
                     "on_event, not a sync-event's on_target_side (schedule it with kr_schedule_in)");
    cr_assert_neq(kr_schedule_in(a, -1, on_arrival, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(arrivals, 3);
    cr_assert_eq(kr_sim_now(b), 2 * S, "the delay defaulted to the promise");
    kr_model_destroy(m);
}

Test(state, a_handler_of_two_types_is_ambiguous)
{
    kr_model_t *m = model(S);
    cr_assert(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "one", .on_event = unused }));
    cr_assert_eq(kr_model_handler_type(m, unused), 1);
    cr_assert(kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "two", .on_event = unused }));
    cr_assert_eq(kr_model_handler_type(m, unused), 0);
    kr_model_destroy(m);
}

/* ---- shared types ---- */

Test(state, the_same_definition_twice_is_one_type)
{
    kr_model_t *m = model(S);
    kr_event_type_desc_t d = { .name = "e", .size = 4, .on_event = unused };
    kr_event_type_t t = kr_model_event_type(m, &d);
    cr_assert(t);
    cr_assert_eq(kr_model_event_type(m, &d), t);
    d.size = 8;
    cr_assert_eq(kr_model_event_type(m, &d), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert(strstr(kr_last_error(), "'e' is already registered with another payload size"), "%s", kr_last_error());

    kr_registry_t *r = kr_model_registry(m);
    static const kr_field_t f[] = { { "x", KR_FIELD_F64, 0, 1 } };
    kr_component_desc_t c = { .name = "pos", .size = 8, .fields = f, .field_count = 1 };
    kr_component_t id = kr_component_register(r, &c);
    cr_assert(id);
    cr_assert_eq(kr_component_register(r, &c), id);
    c.field_count = 0;
    cr_assert_eq(kr_component_register(r, &c), KR_COMPONENT_NONE);
    cr_assert(strstr(kr_last_error(), "'pos' is already registered with another definition"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* ---- digests ---- */

typedef struct item {
    double weight;
    int32_t code;
    kr_entity_t next;
} item_t;

static const kr_field_t item_fields[] = {
    KR_FIELD(item_t, weight, KR_FIELD_F64),
    KR_FIELD(item_t, code, KR_FIELD_I32),
    KR_FIELD(item_t, next, KR_FIELD_ENTITY),
};

/* A chain of n items, built from the last or from the first, with a few
 * spare entities created and destroyed first so that ids differ. */
static uint64_t chain_digest(kr_registry_t *r, kr_component_t item, int n, bool reverse, int spare)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = r });
    for (int i = 0; i < spare; i++) kr_entity_destroy(w, kr_entity_create(w));
    kr_entity_t e[16];
    for (int k = 0; k < n; k++) {
        int i = reverse ? n - 1 - k : k;
        e[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &item, .component_count = 1 });
    }
    for (int i = 0; i < n; i++) {
        item_t *it = kr_component_get(w, e[i], item);
        it->weight = 1.5 * i;
        it->code = i;
        it->next = i + 1 < n ? e[i + 1] : KR_ENTITY_INVALID;
    }
    uint64_t d = kr_world_digest(w);
    kr_world_destroy(w);
    return d;
}

Test(state, world_digest_ignores_ids_and_order_but_not_values)
{
    kr_registry_t *r = kr_registry_create();
    kr_component_t item = kr_component_register(r, &(kr_component_desc_t){ .name = "item", .size = sizeof(item_t),
                                                                           .fields = item_fields, .field_count = 3 });
    cr_assert(item);
    uint64_t a = chain_digest(r, item, 8, false, 0);
    cr_assert_neq(a, 0);
    cr_assert_eq(chain_digest(r, item, 8, true, 5), a, "ids and creation order do not count");
    cr_assert_neq(chain_digest(r, item, 7, false, 0), a);

    /* a value, and where a reference points, both count */
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = r });
    kr_entity_t x = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &item, .component_count = 1 });
    kr_entity_t y = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &item, .component_count = 1 });
    ((item_t *)kr_component_get(w, y, item))->code = 1;
    uint64_t none = kr_world_digest(w);
    ((item_t *)kr_component_get(w, x, item))->next = y;
    uint64_t to_y = kr_world_digest(w);
    ((item_t *)kr_component_get(w, x, item))->next = KR_ENTITY_INVALID;
    ((item_t *)kr_component_get(w, y, item))->next = x;
    uint64_t to_x = kr_world_digest(w);
    cr_assert_neq(none, to_y);
    cr_assert_neq(to_y, to_x, "the referenced entity's own hash counts");
    ((item_t *)kr_component_get(w, y, item))->weight = -0.0;
    cr_assert_neq(kr_world_digest(w), to_x, "floating point counts by its bits");
    kr_world_destroy(w);
    kr_registry_destroy(r);
}

Test(state, fields_digest_covers_slots)
{
    counter_state_t a = { 0 }, b = { 0 };
    cr_assert_eq(kr_fields_digest(NULL, &a, counter_fields), kr_fields_digest(NULL, &b, counter_fields));
    kr_tally_add(&b.gaps, 2.0);
    cr_assert_neq(kr_fields_digest(NULL, &a, counter_fields), kr_fields_digest(NULL, &b, counter_fields));
    b = a;
    b.ticks = 1;
    cr_assert_neq(kr_fields_digest(NULL, &a, counter_fields), kr_fields_digest(NULL, &b, counter_fields));
}

/* ---- entity lists ---- */

Test(state, entity_list_keeps_insertion_order)
{
    kr_entity_list_t l = { 0 };
    for (kr_entity_t e = 1; e <= 100; e++) cr_assert_eq(kr_entity_list_push(&l, e), KR_OK);
    kr_entity_list_remove_at(&l, 0);
    cr_assert(kr_entity_list_remove(&l, 50));
    cr_assert_not(kr_entity_list_remove(&l, 50));
    cr_assert_eq(l.count, 98);
    cr_assert_eq(l.items[0], 2);
    cr_assert_eq(l.items[48], 51);
    kr_entity_list_fini(&l);
    cr_assert_eq(l.count, 0);
}

/* ---- a step callback ---- */

static int steps;
static void count_step(kr_sim_t *sim) { (void)sim; steps++; }

Test(state, on_step_runs_every_agent_based_step)
{
    kr_model_t *m = model(5 * S);
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ab", .formalism = KR_AGENT_BASED, .time_step = S });
    kr_sim_set_on_step(s, count_step);
    steps = 0;
    cr_assert_eq(kr_model_run(m), KR_OK);
    cr_assert_eq(steps, 5);
    kr_model_destroy(m);
}

/* ---- statistics by name ---- */

Test(state, statistics_by_name)
{
    kr_model_t *m = model(S);
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "s", .formalism = KR_DISCRETE_EVENT });
    kr_tally_t *t = kr_sim_tally(s, "wait");
    cr_assert_not_null(t);
    for (int i = 0; i < 50; i++) cr_assert_not_null(kr_sim_counter(s, i % 2 ? "odd" : "even"));
    cr_assert_eq(kr_sim_tally(s, "wait"), t, "the same statistic, at the same address, after others were made");
    cr_assert_null(kr_sim_counter(s, "wait"));
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert(strstr(kr_last_error(), "statistic 'wait' is of another type"), "%s", kr_last_error());
    cr_assert_null(kr_sim_histogram(s, "h", 1, 0, 4), "a bad range");
    kr_histogram_t *h = kr_sim_histogram(s, "h", 0, 1, 4);
    cr_assert_not_null(h, "the name is free again after a bad range: %s", kr_last_error());
    cr_assert_null(kr_sim_histogram(s, "h", 0, 2, 4));
    cr_assert(strstr(kr_last_error(), "other bins"), "%s", kr_last_error());
    cr_assert_eq(kr_sim_batchmeans(s, "b")->batch_size, 1, "batch means start ready");
    cr_assert_null(kr_sim_tally(s, ""));
    cr_assert_eq(kr_sim_stat_count(s), 5);
    kr_field_type_t type;
    const void *value;
    cr_assert_str_eq(kr_sim_stat_at(s, 0, &type, &value), "wait");
    cr_assert_eq(type, KR_FIELD_TALLY);
    cr_assert_eq(value, t);
    cr_assert_str_eq(kr_sim_stat_at(s, 3, &type, NULL), "h");
    cr_assert_null(kr_sim_stat_at(s, 5, NULL, NULL));
    kr_model_destroy(m); /* ASan: every statistic and the histogram's bins are freed */
}
