/* Scheduling by handler (kairos/handler.h): the event type is found from
 * the handler function, the delay converted from model units. */
#include <math.h>
#include "kairos/handler.h"
#include "kairos/sync.h"
#include "base/error.h"
#include "schedulers/model_private.h"

/* A linear scan: models declare a handful of event types, and comparing a
 * few pointers costs less than hashing one. */
kr_event_type_t kr_model_handler_type(const kr_model_t *m, kr_event_fn fn)
{
    kr_event_type_t found = 0;
    for (uint32_t i = 0; m && fn && i < m->type_count; i++) {
        const kr_event_type_desc_t *d = &m->types[i].desc;
        if (d->on_event != fn && d->on_target_side != fn && d->on_sender_side != fn) continue;
        if (found) return 0;
        found = i + 1;
    }
    return found;
}

static kr_event_type_t type_of(kr_sim_t *s, kr_event_fn fn, const char *call)
{
    kr_event_type_t t = kr_model_handler_type(s->model, fn);
    if (!t)
        kr__fail(KR_ERR_INVALID_ARG, "%s: simulator '%s': %s", call, s->name,
                 !fn ? "no handler given"
                     : "the handler is not declared by any kind's events, or by more than one event type");
    return t;
}

static kr_status_t ticks_of(kr_sim_t *s, double delay, const char *call, kr_time_t *out)
{
    if (!(delay >= 0) || !isfinite(delay))
        return kr__fail(KR_ERR_INVALID_ARG, "%s: simulator '%s': a delay must be a finite number >= 0, not %g", call,
                        s->name, delay);
    *out = kr_time_delay_ticks(delay, s->model->precision);
    return KR_OK;
}

double kr_sim_now_units(const kr_sim_t *s) { return s ? kr_time_to_units(s->now, s->model->precision) : NAN; }

kr_status_t kr_schedule_in(kr_sim_t *s, double delay, kr_event_fn handler, const void *data)
{
    if (!s) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_in: null simulator");
    if (!s->executing && !kr__sim_may_change(s, "kr_schedule_in")) return kr_last_status();
    kr_event_type_t t = type_of(s, handler, "kr_schedule_in");
    kr_time_t ticks = 0;
    if (!t || ticks_of(s, delay, "kr_schedule_in", &ticks)) return kr_last_status();
    return kr_schedule(s, KR_PRIORITY_DEFAULT, ticks, t, data, NULL);
}

kr_status_t kr_send(kr_sim_t *s, const kr_send_t *d)
{
    if (!s || !d) return kr__fail(KR_ERR_INVALID_ARG, "kr_send: null argument");
    if (s->model->started && !s->executing && !kr__sim_may_change(s, "kr_send")) return kr_last_status();
    kr_sim_t *to = kr_model_find_sim(s->model, d->to);
    if (!to)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_send: simulator '%s': no simulator named '%s'", s->name,
                        d->to ? d->to : "(null)");
    kr_event_type_t t = type_of(s, d->handler, "kr_send");
    kr_time_t ticks = 0;
    if (!t || ticks_of(s, d->delay, "kr_send", &ticks)) return kr_last_status();
    /* (said here in kr_send's words: kr_schedule_sync would name itself) */
    if (!kr_model_event_type_is_sync(s->model, t))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_send: simulator '%s': the handler of event '%s' is a local event's "
                        "on_event, not a sync-event's on_target_side (schedule it with kr_schedule_in)", s->name,
                        kr_model_event_type_name(s->model, t));
    /* 0 means the promise: any smaller delay would be refused, and with a
     * zero promise the two are the same. */
    if (ticks == 0) {
        kr_time_t promise = kr_model_promise(s->model, s->id, to->id);
        if (promise != KR_TIME_NEVER) ticks = promise;
    }
    return kr_schedule_sync(s, &(kr_sync_desc_t){ .target = to->id, .priority = d->priority, .delay = ticks,
                                                   .type = t, .data = d->data, .entities = d->entities,
                                                   .entity_count = d->entity_count }, NULL);
}
