/* A test plug-in kind for ending a run from inside the model (kairos/stop.h):
 * "stopper", a discrete-event simulator that ticks every `period`, sends a
 * sync-event carrying its tick number to each simulator named in `to`
 * (comma-separated) `delay` after every tick, and calls kr_sim_stop in its
 * `stop_after`-th tick (0: never). Its digest covers every tick and every
 * arrival in order, so two runs agree only if they ran the same events. */
#include <stdlib.h>
#include <string.h>
#include <kairos/kairos.h>

#define TICK "stopper.tick"
#define MSG "stopper.msg"
#define MAX_TARGETS 8

typedef struct stopper {
    kr_time_t period, delay;
    uint32_t targets[MAX_TARGETS], target_count;
    uint64_t stop_after, ticks, received, digest;
    kr_event_type_t tick, msg;
} stopper_t;

static const kr_kind_desc_t stopper_kind;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    return h * 0xbf58476d1ce4e5b9ULL;
}

static void on_tick(kr_sim_t *sim, void *data)
{
    (void)data;
    stopper_t *s = kr_sim_user(sim, &stopper_kind);
    s->ticks++;
    s->digest = mix(s->digest, kr_sim_now(sim));
    for (uint32_t i = 0; i < s->target_count; i++)
        if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = s->targets[i], .delay = s->delay, .type = s->msg,
                                                     .data = &s->ticks }, NULL)) {
            kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
            return;
        }
    if (s->stop_after && s->ticks == s->stop_after) kr_sim_stop(sim);
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, s->period, s->tick, NULL, NULL))
        kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
}

static void on_msg(kr_sim_t *sim, void *data)
{
    stopper_t *s = kr_sim_user(sim, &stopper_kind);
    uint64_t v;
    memcpy(&v, data, sizeof v);
    s->received++;
    s->digest = mix(mix(s->digest, v), kr_sim_now(sim));
}

static kr_status_t stopper_register(kr_model_t *model)
{
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = TICK, .on_event = on_tick }))
        return kr_last_status();
    if (!kr_model_event_type(model, &(kr_event_type_desc_t){ .name = MSG, .size = sizeof(uint64_t),
                                                             .on_target_side = on_msg }))
        return kr_last_status();
    if (!kr_model_context_type(model, &(kr_context_desc_t){ .name = "stopper", .size = sizeof(stopper_t) }))
        return kr_last_status();
    return KR_OK;
}

static kr_status_t stopper_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *m = kr_sim_model(sim);
    stopper_t *s = kr_sim_context(sim, kr_model_find_context_type(m, "stopper"));
    if (!s) return KR_ERR_NOMEM;
    s->tick = kr_model_find_event_type(m, TICK);
    s->msg = kr_model_find_event_type(m, MSG);
    int64_t stop_after;
    const char *to = NULL;
    kr_status_t st = kr_params_duration(params, "period", kr_model_precision(m), &s->period);
    if (!st) st = kr_params_duration(params, "delay", kr_model_precision(m), &s->delay);
    if (!st) st = kr_params_int(params, "stop_after", 0, 0, INT64_MAX, &stop_after);
    if (!st) st = kr_params_string(params, "to", "", &to);
    if (st) return st;
    if (s->period == 0) return kr_params_error(params, "period", "a duration of at least one tick", "0");
    s->stop_after = (uint64_t)stop_after;
    char names[512];
    snprintf(names, sizeof names, "%s", to);
    char *save = NULL;
    for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        kr_sim_t *t = kr_model_find_sim(m, n);
        if (!t || s->target_count == MAX_TARGETS) return kr_params_error(params, "to", "names of simulators", to);
        s->targets[s->target_count++] = kr_sim_id(t);
    }
    kr_sim_set_user(sim, &stopper_kind, s);
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, s->period, s->tick, NULL, NULL);
}

static void stopper_report(kr_sim_t *sim, kr_report_t *report)
{
    const stopper_t *s = kr_sim_user(sim, &stopper_kind);
    kr_report_int(report, "ticks", s ? (int64_t)s->ticks : 0);
    kr_report_int(report, "received", s ? (int64_t)s->received : 0);
}

static uint64_t stopper_digest(kr_sim_t *sim)
{
    const stopper_t *s = kr_sim_user(sim, &stopper_kind);
    return s ? s->digest : 0;
}

static const kr_kind_desc_t stopper_kind = {
    .name = "stopper",
    .summary = "ticks, sends its tick to `to`, and stops the run after `stop_after` ticks (a test)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = stopper_register,
    .setup = stopper_setup,
    .report = stopper_report,
    .digest = stopper_digest,
};

kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    return kr_kind_register(kinds, &stopper_kind);
}
