/* What the runtime does with a kind's declared parts when it builds a model
 * file (runtime/kind_build.c): event handlers registered by name and
 * shared between kinds that declare them alike, a type two kinds define
 * differently refused naming both kinds, the state given before setup and
 * reached in handlers, the formalism checked on the entry, and a kind's
 * declared parts checked when it is registered. */
#include "model_text.h"
#include "runtime/kind_build.h"

#define S KR_PRECISION_DEFAULT

TestSuite(kind_build, .fini = mt_cleanup);

typedef struct ticker {
    double period;
    uint64_t ticks;
} ticker_t;

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    ticker_t *t = kr_sim_state(sim);
    t->ticks++;
    kr_schedule_in(sim, t->period, tick, NULL);
}

static void other_tick(kr_sim_t *sim, void *data) { (void)sim; (void)data; }

static kr_status_t start(kr_sim_t *sim, const kr_params_t *p)
{
    (void)p;
    return kr_schedule_in(sim, ((ticker_t *)kr_sim_state(sim))->period, tick, NULL);
}

static const kr_param_t ticker_params[] = {
    KR_PARAM(ticker_t, period, KR_PARAM_NUMBER, .def = "1", .range = "> 0"),
    { 0 },
};
static const kr_field_t ticker_fields[] = { KR_FIELD(ticker_t, ticks, KR_FIELD_COUNTER), { 0 } };
static const kr_event_type_desc_t tick_events[] = { { .name = "tick", .on_event = tick }, { 0 } };
static const kr_event_type_desc_t other_events[] = { { .name = "tick", .on_event = other_tick }, { 0 } };

static kr_status_t register_pos(kr_model_t *m)
{
    return kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = "pos", .size = 8 })
               ? KR_OK : kr_last_status();
}
static kr_status_t register_other_pos(kr_model_t *m)
{
    return kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = "pos", .size = 16 })
               ? KR_OK : kr_last_status();
}

static kr_kind_desc_t ticker(const char *name, const kr_event_type_desc_t *events)
{
    return (kr_kind_desc_t){ .name = name, .summary = "ticks", .formalism = KR_DISCRETE_EVENT, .setup = start,
                             .register_types = register_pos, .state_size = sizeof(ticker_t),
                             .state_fields = ticker_fields, .params = ticker_params, .events = events };
}

static void pinged(kr_sim_t *sim, void *data) { (void)sim; (void)data; }
static const kr_event_type_desc_t ping_events[] = { { .name = "tick", .on_event = tick },
                                                    { .name = "ping", .on_target_side = pinged }, { 0 } };

/* A setup that fails with no message, and one that fails through
 * kr_sim_fail with a status that would read as a deadlock. */
static kr_status_t silent_setup(kr_sim_t *sim, const kr_params_t *p)
{
    (void)sim; (void)p;
    kr_clear_error();
    return KR_ERR_STATE;
}
static kr_status_t deadlock_setup(kr_sim_t *sim, const kr_params_t *p)
{
    (void)p;
    kr_sim_fail(sim, KR_ERR_DEADLOCK, "gave up");
    return KR_OK;
}

/* register_types failing with no message (the load went on, exit 0). */
static kr_status_t silent_register(kr_model_t *m)
{
    (void)m;
    return KR_ERR_IO;
}

static kr_status_t register_kinds(kr_kinds_t *kinds)
{
    kr_kind_desc_t silent = { .name = "silent", .formalism = KR_DISCRETE_EVENT, .setup = silent_setup },
                   gave_up = { .name = "gave_up", .formalism = KR_DISCRETE_EVENT, .setup = deadlock_setup },
                   no_types = { .name = "no_types", .formalism = KR_DISCRETE_EVENT, .setup = silent_setup,
                                 .register_types = silent_register };
    if (kr_kind_register(kinds, &silent) || kr_kind_register(kinds, &gave_up) || kr_kind_register(kinds, &no_types))
        return kr_last_status();
    kr_kind_desc_t a = ticker("a", tick_events), b = ticker("b", tick_events), c = ticker("c", other_events),
                   d = ticker("d", tick_events), e = ticker("e", ping_events), f = ticker("f", ping_events),
                   g = ticker("g", ping_events);
    d.register_types = register_other_pos;
    /* e receives ping; f names an event no kind declares; g a local one */
    static const char *const e_receives[] = { "ping", NULL }, *const f_receives[] = { "ping", "pong", NULL },
                             *const g_receives[] = { "tick", NULL };
    e.receives = e_receives;
    f.receives = f_receives;
    g.receives = g_receives;
    kr_status_t st = kr_kind_register(kinds, &a);
    if (!st) st = kr_kind_register(kinds, &b);
    if (!st) st = kr_kind_register(kinds, &c);
    if (!st) st = kr_kind_register(kinds, &e);
    if (!st) st = kr_kind_register(kinds, &f);
    if (!st) st = kr_kind_register(kinds, &g);
    return st ? st : kr_kind_register(kinds, &d);
}

static kr__model_file_t *load(const char *text)
{
    mt_write(text);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path,
                                                                       .register_builtin = register_kinds });
    cr_assert(f, "%s", kr_last_error());
    return f;
}

Test(kind_build, two_kinds_share_a_handler_and_each_has_its_state)
{
    kr__model_file_t *f = load("{'end_time': 10, 'simulators': [{'name': 'x', 'kind': 'a', 'params': {'period': 2}},"
                               " {'name': 'y', 'kind': 'b'}]}");
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_event_type_count(m), 1, "one type 'tick' for both kinds");
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(((ticker_t *)kr_sim_state(kr_model_sim(m, 0)))->ticks, 5);
    cr_assert_eq(((ticker_t *)kr_sim_state(kr_model_sim(m, 1)))->ticks, 10);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(kind_build, a_type_defined_otherwise_names_both_kinds)
{
    kr__model_file_t *f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'a'}, {'name': 'y', 'kind': 'c'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    char want[400];
    snprintf(want, sizeof want, "%s: kind 'c' defines 'tick' otherwise than kind 'a' (kr_model_event_type: event "
             "type 'tick' is already registered with another handler)", mt_path);
    cr_assert_str_eq(kr_last_error(), want);
    kr__model_file_free(f);

    f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'a'}, {'name': 'y', 'kind': 'd'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    snprintf(want, sizeof want, "%s: kind 'd' defines 'pos' otherwise than kind 'a' (kr_component_register: 'pos' "
             "is already registered with another definition)", mt_path);
    cr_assert_str_eq(kr_last_error(), want);
    kr__model_file_free(f);
}

Test(kind_build, what_a_kind_receives_is_declared_on_every_simulator)
{
    /* (y runs on another rank: declared here too, where its senders look) */
    kr__model_file_t *f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'e'}, "
                               "{'name': 'y', 'kind': 'e'}, {'name': 'z', 'kind': 'a'}]}");
    const int ranks[3] = { 0, 1, 0 };
    kr_model_t *m = kr__model_file_build_on(f, NULL, 0, ranks);
    cr_assert(m, "%s", kr_last_error());
    kr_event_type_t ping = kr_model_find_event_type(m, "ping");
    cr_assert(ping && kr_sim_receives(kr_model_sim(m, 0), ping) && kr_sim_receives(kr_model_sim(m, 1), ping));
    cr_assert_not(kr_sim_receives(kr_model_sim(m, 2), ping));
    kr_model_destroy(m);
    kr__model_file_free(f);

    char want[300];
    f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'f'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    snprintf(want, sizeof want, "%s: kind 'f' receives 'pong', which no kind of this model declares", mt_path);
    cr_assert_str_eq(kr_last_error(), want);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    kr__model_file_free(f);
    f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'g'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    snprintf(want, sizeof want, "%s: kind 'g' receives 'tick', which is not a sync-event (it has no on_target_side)",
             mt_path);
    cr_assert_str_eq(kr_last_error(), want);
    kr__model_file_free(f);

    /* an empty name is refused when the kind is registered */
    kr_kinds_t *kinds = kr__kinds_create();
    kr_kind_desc_t k = ticker("h", ping_events);
    static const char *const h_receives[] = { "ping", "", NULL };
    k.receives = h_receives;
    cr_assert_neq(kr_kind_register(kinds, &k), KR_OK);
    cr_assert(strstr(kr_last_error(), "receives[1] is an empty name"), "%s", kr_last_error());
    kr__kinds_destroy(kinds);
}

Test(kind_build, a_failed_setup_is_bad_input_whatever_its_status)
{
    kr__model_file_t *f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'silent'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "simulators[0] (x, kind silent): setup failed with status 12 (") &&
              strstr(kr_last_error(), ") and no message"), "%s", kr_last_error());
    kr__model_file_free(f);
    f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'gave_up'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG, "not a deadlock: %s", kr_last_error());
    cr_assert(strstr(kr_last_error(), "simulator 'x', time 0: gave up"), "%s", kr_last_error());
    kr__model_file_free(f);
    /* so is a register_types that failed with no message */
    f = load("{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'no_types'}]}");
    cr_assert_null(kr__model_file_build(f, NULL));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG, "%s", kr_last_error());
    char want[300];
    snprintf(want, sizeof want, "%s: kind 'no_types': register_types failed with status %d (%s) and no message",
             mt_path, (int)KR_ERR_IO, kr_status_str(KR_ERR_IO));
    cr_assert_str_eq(kr_last_error(), want);
    kr__model_file_free(f);
}

/* Where the entry is read, before any setup (and before the time step an
 * agent-based entry would need). */
Test(kind_build, the_entry_formalism_is_checked_before_setup)
{
    for (int with_step = 0; with_step < 2; with_step++) {
        mt_write(with_step ? "{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'a', 'formalism': "
                             "'agent-based', 'time_step': 1}]}"
                           : "{'end_time': 1, 'simulators': [{'name': 'x', 'kind': 'a', 'formalism': "
                             "'agent-based'}]}");
        cr_assert_null(kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path,
                                                                    .register_builtin = register_kinds }));
        mt_expect(KR_ERR_INVALID_ARG, "simulators[0].formalism", "a formalism of kind 'a' (discrete-event)",
                  "\"agent-based\"");
    }
}

Test(kind_build, declared_parts_are_checked_at_registration)
{
    kr_kinds_t *kinds = kr__kinds_create();
    kr_kind_desc_t k = ticker("p", tick_events);
    k.state_size = 0;
    cr_assert_neq(kr_kind_register(kinds, &k), KR_OK);
    cr_assert(strstr(kr_last_error(), "declares params but no state"), "%s", kr_last_error());
    k = ticker("q", (const kr_event_type_desc_t[]){ { .name = "x" }, { 0 } });
    cr_assert_neq(kr_kind_register(kinds, &k), KR_OK);
    cr_assert(strstr(kr_last_error(), "event 'x' has no handler"), "%s", kr_last_error());
    k = ticker("r", tick_events);
    k.formalisms = 1u << 7;
    cr_assert_neq(kr_kind_register(kinds, &k), KR_OK);
    static const kr_param_t dist_params[] = { { "d", KR_PARAM_DIST, 0, "1", NULL, NULL, NULL }, { 0 } };
    static const kr_field_t dist_fields[] = { { "d", KR_FIELD_DIST, 0, 1 }, { 0 } };
    k = (kr_kind_desc_t){ .name = "s", .setup = start, .state_size = sizeof(kr_dist_t), .params = dist_params,
                          .state_fields = dist_fields };
    cr_assert_neq(kr_kind_register(kinds, &k), KR_OK);
    cr_assert(strstr(kr_last_error(), "is also a state field"), "%s", kr_last_error());
    k = (kr_kind_desc_t){ .name = "t", .events = tick_events };
    cr_assert_eq(kr_kind_register(kinds, &k), KR_OK, "events alone make a kind: %s", kr_last_error());
    kr__kinds_destroy(kinds);
}
