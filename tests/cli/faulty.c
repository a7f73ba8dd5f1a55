/* A test plug-in kind, "faulty": a discrete-event simulator that ticks
 * every `period` and, from `fail_at` on, fails the way a user's kind does
 * (tests/cli/test_cli_mpi.c, test_cli.c):
 *
 *   how "sync": a sync-event to `peer` with delay 0 below the edge's
 *       promise, refused; the kind passes the refusal on with
 *       kr_sim_fail(sim, kr_last_status(), ...), the idiom of
 *       docs/concepts.md;
 *   how "hold": a sync-event with a sender side to `peer`, one unit
 *       ahead; with a zero promise back from the peer, the peer waits for
 *       the payload and this one for the peer's guarantee: a deadlock;
 *   how "meddle": a tick scheduled straight onto `peer`'s queue with
 *       kr_schedule, refused on any number of ranks (a simulator changes
 *       only its own events); passed on with kr_sim_fail; with
 *       `meddle_in_setup` the setup tries it already, and fails;
 *   how "grow": every tick creates `grow` entities (the world's storage
 *       grows), so that KAIROS_FAIL_ALLOC finds an allocation inside the
 *       kind's work; a failure is passed on with kr_sim_fail, or only
 *       logged with `ignore_errors` (the run must end all the same);
 *   how "spin": every tick schedules the next with no delay: model time
 *       stands still while events run (the stall watch, coordinator.c).
 *
 * Built like examples/plugin: no kairos library linked. */
#include <string.h>
#include <kairos/kairos.h>

#define FAULTY "faulty"
#define FAULTY_TICK "faulty.tick"
#define FAULTY_PING "faulty.ping"
#define FAULTY_HOLD "faulty.hold"

typedef struct faulty {
    kr_time_t period, fail_at;      /* fail_at KR_TIME_NEVER: never */
    int how;                        /* 0 none, 1 sync, 2 grow, 3 hold, 4 meddle, 5 spin */
    int64_t grow;
    bool ignore_errors;
    char peer[64];
} faulty_t;

static const kr_behavior_vtbl_t faulty_vtbl = { 0 };

static faulty_t *faulty_of(kr_sim_t *sim)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), FAULTY);
    kr_entity_t e = kr_entity_find(w, FAULTY);
    return e == KR_ENTITY_INVALID ? NULL : kr_component_get(w, e, c);
}

static void ping(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    faulty_t *f = faulty_of(sim);
    kr_model_t *m = kr_sim_model(sim);
    if (kr_sim_now(sim) >= f->fail_at && (f->how == 1 || f->how == 3)) {
        kr_sim_t *peer = kr_model_find_sim(m, f->peer);
        if (!peer) {
            kr_sim_fail(sim, KR_ERR_INVALID_ARG, "no simulator '%s'", f->peer);
            return;
        }
        bool hold = f->how == 3;
        if (hold) f->fail_at = KR_TIME_NEVER; /* once */
        if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = kr_sim_id(peer),
                .delay = hold ? kr_model_precision(m) : 0,
                .type = kr_model_find_event_type(m, hold ? FAULTY_HOLD : FAULTY_PING) }, NULL) != KR_OK) {
            kr_sim_fail(sim, kr_last_status(), "pinging: %s", kr_last_error());
            return;
        }
    }
    if (kr_sim_now(sim) >= f->fail_at && f->how == 4) {
        kr_sim_t *peer = kr_model_find_sim(m, f->peer);
        if (kr_schedule(peer, KR_PRIORITY_DEFAULT, 0, kr_model_find_event_type(m, FAULTY_TICK), NULL, NULL)) {
            kr_sim_fail(sim, kr_last_status(), "meddling: %s", kr_last_error());
            return;
        }
    }
    if (kr_sim_now(sim) >= f->fail_at && f->how == 2) {
        for (int64_t i = 0; i < f->grow; i++) {
            if (kr_entity_create(kr_sim_world(sim)) != KR_ENTITY_INVALID) continue;
            if (f->ignore_errors) kr_log(sim, KR_LOG_WARN, "%s", kr_last_error());
            else kr_sim_fail(sim, kr_last_status(), "growing: %s", kr_last_error());
            break;
        }
    }
    kr_time_t next = kr_sim_now(sim) >= f->fail_at && f->how == 5 ? 0 : f->period;
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, next, kr_model_find_event_type(m, FAULTY_TICK), NULL, NULL) != KR_OK) {
        if (f->ignore_errors) kr_log(sim, KR_LOG_WARN, "%s", kr_last_error());
        else kr_sim_fail(sim, kr_last_status(), "ticking: %s", kr_last_error());
    }
}

static kr_status_t faulty_register(kr_model_t *model)
{
    if (!kr_behavior_register(kr_model_registry(model), &(kr_behavior_desc_t){ .name = FAULTY,
            .state_size = sizeof(faulty_t), .vtbl = &faulty_vtbl }))
        return kr_last_status();
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FAULTY_TICK, .on_event = tick }))
        return kr_last_status();
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FAULTY_PING, .on_target_side = ping }))
        return kr_last_status();
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FAULTY_HOLD, .on_sender_side = ping,
            .on_target_side = ping }))
        return kr_last_status();
    return KR_OK;
}

static kr_status_t faulty_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_time_t prec = kr_model_precision(kr_sim_model(sim)), period, fail_at = KR_TIME_NEVER;
    kr_status_t st = kr_params_duration(params, "period", prec, &period);
    if (!st && kr_params_has(params, "fail_at")) st = kr_params_duration(params, "fail_at", 0, &fail_at);
    const char *how = "none", *peer = "";
    int64_t grow = 1;
    bool ignore = false, meddle_in_setup = false;
    if (!st) st = kr_params_string(params, "how", "none", &how);
    if (!st) st = kr_params_bool(params, "meddle_in_setup", false, &meddle_in_setup);
    if (!st) st = kr_params_string(params, "peer", "", &peer);
    if (!st) st = kr_params_int(params, "grow", 1, 1, 1000000, &grow);
    if (!st) st = kr_params_bool(params, "ignore_errors", false, &ignore);
    if (st) return st;
    if (period == 0) return kr_params_error(params, "period", "a duration of at least one tick", "0");
    if (strcmp(how, "none") && strcmp(how, "sync") && strcmp(how, "grow") && strcmp(how, "hold") &&
        strcmp(how, "meddle") && strcmp(how, "spin"))
        return kr_params_error(params, "how", "none, sync, grow, hold, meddle or spin", how);
    if (strlen(peer) >= sizeof ((faulty_t *)0)->peer) return kr_params_error(params, "peer", "a shorter name", peer);
    kr_world_t *w = kr_sim_world(sim);
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), FAULTY);
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = FAULTY, .components = &c,
                                                                   .component_count = 1 });
    if (e == KR_ENTITY_INVALID) return kr_last_status();
    faulty_t *f = kr_component_get(w, e, c);
    f->period = period;
    f->fail_at = fail_at;
    f->how = !strcmp(how, "sync") ? 1 : !strcmp(how, "grow") ? 2 : !strcmp(how, "hold") ? 3 : !strcmp(how, "meddle") ? 4
           : !strcmp(how, "spin") ? 5 : 0;
    f->grow = grow;
    f->ignore_errors = ignore;
    strcpy(f->peer, peer);
    kr_model_t *m = kr_sim_model(sim);
    if (meddle_in_setup &&
        (st = kr_schedule(kr_model_find_sim(m, peer), KR_PRIORITY_DEFAULT, period,
                          kr_model_find_event_type(m, FAULTY_TICK), NULL, NULL)))
        return st;
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, period, kr_model_find_event_type(kr_sim_model(sim), FAULTY_TICK),
                       NULL, NULL);
}

static void faulty_report(kr_sim_t *sim, kr_report_t *report)
{
    kr_report_int(report, "entities", (int64_t)kr_world_entity_count(kr_sim_world(sim)));
}

static const kr_kind_desc_t faulty_kind = {
    .name = "faulty",
    .summary = "ticks, and fails on demand (test plug-in)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = faulty_register,
    .setup = faulty_setup,
    .report = faulty_report,
};

kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    /* a plug-in that fails without a message (test_cli) */
    if (getenv("KAIROS_FAULTY_INIT_FAILS")) return KR_ERR_INVALID_ARG;
    /* as a plug-in built against other headers calls registration (test_cli) */
    const char *abi = getenv("KAIROS_FAULTY_ABI");
    if (abi && !strcmp(abi, "version")) return kr_kind_register_abi(kinds, &faulty_kind, KR_ABI_VERSION + 1,
                                                                    sizeof faulty_kind);
    if (abi && !strcmp(abi, "size")) return kr_kind_register_abi(kinds, &faulty_kind, KR_ABI_VERSION,
                                                                 sizeof faulty_kind - 8);
    if (abi && !strcmp(abi, "old")) return (kr_kind_register)(kinds, &faulty_kind);
    return kr_kind_register(kinds, &faulty_kind);
}
