/* The continuous formalism: integrating the ODE up to each event, state
 * events, observation points and the end. */
#include <stdlib.h>
#include <string.h>
#include "kairos/continuous.h"
#include "base/error.h"
#include "schedulers/model_private.h"
#include "schedulers/formalisms/ode_engine.h"

typedef struct state_event {
    kr_ode_threshold_t threshold;
    kr_event_type_t type;
    void *data;
} state_event_t;

struct kr__continuous {
    kr__ode_engine_t *engine;
    kr_ode_threshold_t *thresholds;  /* mirrors events[i].threshold, as the engine wants them */
    state_event_t *events;
    size_t event_count;
    kr_time_t stop_spacing;          /* spacing of integration stops */
    /* The state at the simulator's own time (where its last event left
     * it), kept as an integration leaves that time: the state itself may
     * then run ahead, to the next event or integration stop, and a frame
     * in between integrates a copy from here (kr__continuous_show). */
    kr_time_t anchor_time;
    double *anchor;                  /* dim values; NULL until first kept */
    /* A frame's view (kr__continuous_show): while `showing`,
     * kr_continuous_state answers `shown`, the state at the frame's time. */
    double *shown;
    bool showing;
};

static kr__continuous_t *cont_of(kr_sim_t *s, const char *fn)
{
    if (!s) { kr__fail(KR_ERR_INVALID_ARG, "%s: null simulator", fn); return NULL; }
    if (s->formalism != KR_CONTINUOUS) {
        kr__fail(KR_ERR_STATE, "%s: '%s' is %s, not continuous", fn, s->name, kr_formalism_name(s->formalism));
        return NULL;
    }
    if (!s->cont && !(s->cont = calloc(1, sizeof *s->cont))) kr__fail(KR_ERR_NOMEM, "%s: out of memory", fn);
    return s->cont;
}

kr_status_t kr_continuous_set_ode(kr_sim_t *s, const kr_ode_desc_t *desc)
{
    kr__continuous_t *c = cont_of(s, "kr_continuous_set_ode");
    if (!c) return kr_last_status();
    if (s->model->started) return kr__fail(KR_ERR_STATE, "kr_continuous_set_ode: '%s': the model has started", s->name);
    kr__ode_engine_t *e = kr__ode_engine_create(desc, s->model->precision, 0);
    if (!e) return kr__fail(kr_last_status(), "simulator '%s': %s", s->name, kr_last_error());
    if (c->engine) kr__ode_engine_destroy(c->engine);
    c->engine = e;
    return KR_OK;
}

double *kr_continuous_state(kr_sim_t *s, size_t *dim)
{
    if (dim) *dim = 0;
    if (!s || !s->cont || !s->cont->engine) return NULL;
    if (dim) *dim = kr__ode_engine_dim(s->cont->engine);
    return s->cont->showing ? s->cont->shown : kr__ode_engine_state(s->cont->engine);
}

kr_status_t kr_continuous_add_state_event(kr_sim_t *s, const kr_ode_threshold_t *th, kr_event_type_t type,
                                          const void *data)
{
    kr__continuous_t *c = cont_of(s, "kr_continuous_add_state_event");
    if (!c) return kr_last_status();
    if (s->model->started)
        return kr__fail(KR_ERR_STATE, "kr_continuous_add_state_event: '%s': the model has started", s->name);
    if (!th || !th->g) return kr__fail(KR_ERR_INVALID_ARG, "kr_continuous_add_state_event: a threshold function is needed");
    const kr__event_type_rec_t *t = kr__event_type(s->model, type);
    if (!t || !t->desc.on_event)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_continuous_add_state_event: '%s': event type %u is not a local event type",
                        s->name, type);
    state_event_t *ev = realloc(c->events, (c->event_count + 1) * sizeof *ev);
    if (!ev) return kr__fail(KR_ERR_NOMEM, "kr_continuous_add_state_event: out of memory");
    c->events = ev;
    kr_ode_threshold_t *ths = realloc(c->thresholds, (c->event_count + 1) * sizeof *ths);
    if (!ths) return kr__fail(KR_ERR_NOMEM, "kr_continuous_add_state_event: out of memory");
    c->thresholds = ths;
    void *copy = NULL;
    if (t->desc.size) {
        if (!(copy = calloc(1, t->desc.size))) return kr__fail(KR_ERR_NOMEM, "kr_continuous_add_state_event: out of memory");
        if (data) memcpy(copy, data, t->desc.size);
    }
    ev[c->event_count] = (state_event_t){ *th, type, copy };
    ths[c->event_count] = *th;
    c->event_count++;
    return KR_OK;
}

void kr__continuous_fini(kr_sim_t *s)
{
    kr__continuous_t *c = s->cont;
    if (!c) return;
    if (c->engine) kr__ode_engine_destroy(c->engine);
    for (size_t i = 0; i < c->event_count; i++) free(c->events[i].data);
    free(c->anchor);
    free(c->shown);
    free(c->events);
    free(c->thresholds);
    free(c);
    s->cont = NULL;
}

void kr__continuous_space_stops(kr_sim_t *s)
{
    kr_model_t *m = s->model;
    /* Integration stops every time_step, or closer when a cycle of dependencies
     * through this simulator has less lookahead than that: a cycle's
     * guarantees always reach past the next stop, so waiting for
     * inputs never stalls it (the spacing comes from the model's structure,
     * never from timing, so trajectories repeat bit for bit). */
    kr_time_t in_min = KR_TIME_NEVER, out_min = KR_TIME_NEVER;
    for (uint32_t i = 0; i < s->in_count; i++)
        if (m->edges[s->in_edges[i]].promise < in_min) in_min = m->edges[s->in_edges[i]].promise;
    for (uint32_t i = 0; i < s->out_count; i++)
        if (m->edges[s->out_edges[i]].promise < out_min) out_min = m->edges[s->out_edges[i]].promise;
    /* A stop lookahead is a promise from every zero-promise group to every
     * other (stop.c), into and out of this simulator like any other: two
     * tanks with state events, stops 1 apart and a stop lookahead of 0.5
     * each waited at 0 for the other to pass 0.5 (a deadlock). */
    bool sends = s->out_count > 0;
    if (m->has_stop_lookahead && m->group_count > 1) {
        if (m->stop_lookahead < in_min) in_min = m->stop_lookahead;
        if (m->stop_lookahead < out_min) out_min = m->stop_lookahead;
        sends = true;
    }
    kr_time_t cycle = kr__time_add(in_min, out_min);
    kr_time_t spacing = cycle > 0 && cycle < s->time_step ? cycle : s->time_step;
    /* In a cycle, no further apart than the smallest positive incoming
     * promise either: a sender that is continuous too, or one held at a
     * cut, guarantees only its own time plus that promise, and a stop
     * beyond it would never be reached (two baths feeding each other with
     * promises of 0.5 and stops 1 apart deadlocked). */
    if (sends && in_min > 0 && in_min < spacing) spacing = in_min;
    s->cont->stop_spacing = spacing;
}

kr_status_t kr__continuous_start(kr_sim_t *s)
{
    if (!cont_of(s, "kr_model_start")) return kr_last_status();
    kr_model_t *m = s->model;
    kr__continuous_space_stops(s);
    /* The end is always an update point; observation points only matter
     * when someone downstream can be told about the state. */
    kr_status_t st = kr__sim_schedule_kind(s, KR__EV_OBSERVE, KR_PRIORITY_STEP, m->end_time, 0, NULL, 0, NULL);
    if (!st && s->out_count && s->time_step < m->end_time)
        st = kr__sim_schedule_kind(s, KR__EV_OBSERVE, KR_PRIORITY_STEP, s->time_step, 0, NULL, 0, NULL);
    return st;
}

/* With state events the integration always stops at every integration
 * stop k x stop_spacing on its way (see kr__continuous_space_stops): the
 * coordinator may then integrate ahead to a stop while the simulator waits for its inputs, and the trajectory
 * is the same whether it did or not. */
static kr_time_t next_stop(const kr_sim_t *s, kr_time_t from)
{
    kr_time_t h = s->cont->stop_spacing;
    kr_time_t k = from / h + 1;
    return k > (KR_TIME_NEVER - 1) / h ? KR_TIME_NEVER : k * h;
}

/* Where an integration from `from` towards t stops next: t, or the next
 * integration stop before it when there are state events. */
static kr_time_t segment_end(const kr_sim_t *s, kr_time_t from, kr_time_t t)
{
    if (!s->cont->event_count || !s->cont->stop_spacing) return t;
    kr_time_t cp = next_stop(s, from);
    return cp < t ? cp : t;
}

/* Keeps the state as it leaves the simulator's own time (the anchor);
 * false, with the run failed, when out of memory. */
static bool keep_anchor(kr_sim_t *s)
{
    kr__continuous_t *c = s->cont;
    size_t dim = kr__ode_engine_dim(c->engine);
    if (!c->anchor && !(c->anchor = malloc(dim * sizeof *c->anchor))) {
        kr__model_fail(s->model, KR_ERR_NOMEM, "continuous simulator '%s': out of memory", s->name);
        return false;
    }
    memcpy(c->anchor, kr__ode_engine_state(c->engine), dim * sizeof *c->anchor);
    c->anchor_time = kr__ode_engine_time(c->engine);
    return true;
}

/* The run fails with an integration that did (a signal that stopped it
 * interrupts the run, as between steps). */
static void integration_failed(kr_sim_t *s, kr_status_t st, kr_time_t to)
{
    if (st == KR_ERR_INTERRUPTED) kr__model_fail_interrupted(s->model);
    else kr__model_fail(s->model, st, "continuous simulator '%s' integrating to %g: %s", s->name,
                        kr_time_to_units(to, s->model->precision), kr_last_error());
}

bool kr__continuous_advance(kr_sim_t *s, kr_time_t t)
{
    kr__continuous_t *c = s->cont;
    while (c->engine && kr__ode_engine_time(c->engine) < t) {
        if (kr__ode_engine_time(c->engine) <= s->now && !keep_anchor(s)) return false;
        kr_time_t to = segment_end(s, kr__ode_engine_time(c->engine), t);
        int hit = -1;
        kr_status_t st = kr__ode_engine_advance(c->engine, to, c->thresholds, c->event_count, &hit);
        if (st) {
            integration_failed(s, st, to);
            return false;
        }
        if (hit < 0) continue;
        const state_event_t *ev = &c->events[hit];
        const kr__event_type_rec_t *type = kr__event_type(s->model, ev->type);
        st = kr__sim_schedule_kind(s, KR__EV_STATE, KR_PRIORITY_DEFAULT, kr__ode_engine_time(c->engine), ev->type,
                                   ev->data, type->desc.size, NULL);
        if (st) kr__model_fail(s->model, st, "continuous simulator '%s': %s", s->name, kr_last_error());
        return false;
    }
    return true;
}

bool kr__continuous_has_state_events(const kr_sim_t *s)
{
    return s->cont && s->cont->engine && s->cont->event_count;
}

kr_time_t kr__continuous_time(const kr_sim_t *s)
{
    return s->cont && s->cont->engine ? kr__ode_engine_time(s->cont->engine) : KR_TIME_NEVER;
}

kr_time_t kr__continuous_stop_after(const kr_sim_t *s, kr_time_t from)
{
    return kr__continuous_has_state_events(s) && s->cont->stop_spacing ? next_stop(s, from) : KR_TIME_NEVER;
}

kr_time_t kr__continuous_first_crossing(kr_sim_t *s, kr_time_t t)
{
    kr__continuous_t *c = s->cont;
    kr__ode_engine_t *copy = kr__ode_engine_copy(c->engine);
    if (!copy) {
        kr__model_fail(s->model, kr_last_status(), "continuous simulator '%s': %s", s->name, kr_last_error());
        return KR_TIME_NEVER;
    }
    /* The integration kr__continuous_advance would make, on the copy. */
    kr_time_t found = KR_TIME_NEVER;
    while (kr__ode_engine_time(copy) < t) {
        kr_time_t to = segment_end(s, kr__ode_engine_time(copy), t);
        int hit = -1;
        kr_status_t st = kr__ode_engine_advance(copy, to, c->thresholds, c->event_count, &hit);
        if (st) {
            integration_failed(s, st, to);
            break;
        }
        if (hit >= 0) {
            found = kr__ode_engine_time(copy);
            break;
        }
    }
    kr__ode_engine_destroy(copy);
    return found;
}

kr_status_t kr__continuous_show(kr_sim_t *s, kr_time_t t)
{
    kr__continuous_t *c = s->cont;
    if (!c || !c->engine) return KR_OK;
    kr__ode_engine_t *e = c->engine;
    size_t dim = kr__ode_engine_dim(e);
    if (!c->shown && !(c->shown = malloc(dim * sizeof *c->shown)))
        return kr__fail(KR_ERR_NOMEM, "continuous simulator '%s': out of memory for a frame", s->name);
    /* From the latest point of the trajectory at or before t: the state
     * itself, or the anchor when the state has run past t. Every event up
     * to t has run, so no state event lies between that point and t. */
    kr_time_t from = kr__ode_engine_time(e);
    const double *y = kr__ode_engine_state(e);
    if (from > t && c->anchor && c->anchor_time <= t) {
        from = c->anchor_time;
        y = c->anchor;
    }
    memcpy(c->shown, y, dim * sizeof *c->shown);
    c->showing = true;
    /* (from == t here: whenever the state has left the simulator's time,
     * the anchor was kept, and a checkpoint saves it) */
    if (from >= t) return KR_OK;
    kr__ode_engine_t *copy = kr__ode_engine_copy(e);
    if (!copy) return kr__fail(kr_last_status(), "continuous simulator '%s': %s", s->name, kr_last_error());
    memcpy(kr__ode_engine_state(copy), y, dim * sizeof *c->shown);
    kr__ode_engine_set_time(copy, from);
    /* Through the integration stops the run itself makes (next_stop), so
     * that where the run's state passes t, the frame shows the same. */
    kr_status_t st = KR_OK;
    while (!st && kr__ode_engine_time(copy) < t)
        st = kr__ode_engine_advance(copy, segment_end(s, kr__ode_engine_time(copy), t), NULL, 0, NULL);
    if (st) st = kr__fail(st, "continuous simulator '%s' integrating to the frame at %g: %s", s->name,
                          kr_time_to_units(t, s->model->precision), kr_last_error());
    else memcpy(c->shown, kr__ode_engine_state(copy), dim * sizeof *c->shown);
    kr__ode_engine_destroy(copy);
    return st;
}

void kr__continuous_unshow(kr_sim_t *s)
{
    if (s->cont) s->cont->showing = false;
}

void kr__continuous_observe(kr_sim_t *s, bool observation_point)
{
    kr_model_t *m = s->model;
    kr_status_t st = kr_world_update(s->world);
    /* The next observation point follows this one, never the end itself. */
    if (!st && observation_point && s->out_count && s->now < m->end_time) {
        kr_time_t next = kr__time_add(s->now, s->time_step);
        if (next < m->end_time)
            st = kr__sim_schedule_kind(s, KR__EV_OBSERVE, KR_PRIORITY_STEP, next, 0, NULL, 0, NULL);
    }
    if (st) kr__model_fail(m, st, "continuous simulator '%s': %s", s->name, kr_last_error());
}

kr_time_t kr__continuous_next(kr_sim_t *s, kr_time_t head)
{
    kr__continuous_t *c = s->cont;
    /* A crossing may come at any tick after the state's time. */
    if (c->engine && c->event_count) {
        kr_time_t t = kr__time_add(kr__ode_engine_time(c->engine), 1);
        if (t < head) return t;
    }
    return head;
}

/* A checkpoint holds the state where the last integration left it (never
 * integrated further for the checkpoint's sake): its tick and values; and,
 * when that is past the simulator's own time, the anchor (a frame after
 * the restart may need it). The state events' thresholds are the kind's,
 * set again by its setup. */
void kr__continuous_save(kr_sim_t *s, kr_buf_t *b)
{
    kr__continuous_t *c = s->cont;
    kr__ode_engine_t *e = c ? c->engine : NULL;
    size_t dim = e ? kr__ode_engine_dim(e) : 0;
    kr_buf_put_u64(b, dim);
    if (!e) return;
    kr_buf_put_u64(b, kr__ode_engine_time(e));
    const double *y = kr__ode_engine_state(e);
    for (size_t i = 0; i < dim; i++) kr_buf_put_f64(b, y[i]);
    bool anchored = c->anchor && kr__ode_engine_time(e) > s->now;
    kr_buf_put_u8(b, anchored);
    if (!anchored) return;
    kr_buf_put_u64(b, c->anchor_time);
    for (size_t i = 0; i < dim; i++) kr_buf_put_f64(b, c->anchor[i]);
}

/* Update points (kr__continuous_observe) are each scheduled by the one
 * before, up to the end time: whether the point after the cut was
 * scheduled depends on the end, and with it the sequence number of every
 * later event. A restart with an end that decides it otherwise would not
 * run as the uninterrupted run does, and is refused. */
static kr_status_t check_end_change(const kr_sim_t *s, kr_time_t cut, kr_time_t saved_end)
{
    kr_model_t *m = s->model;
    kr_time_t end = m->end_time, h = s->time_step;
    if (end == saved_end || !s->out_count || !h) return KR_OK;
    kr_time_t next = kr__time_step_at_or_after(cut, h);
    if ((next < saved_end) == (next < end)) return KR_OK;
    uint64_t p = m->precision;
    return kr__fail(KR_ERR_INVALID_ARG, "continuous simulator '%s': the checkpoint at %.15g, of a run ending at "
                    "%.15g, cannot go on to the end time %.15g: its update point at %.15g comes before one end and "
                    "not the other (docs/checkpoint.md); restart with --end %.15g, or from an earlier checkpoint",
                    s->name, kr_time_to_units(cut, p), kr_time_to_units(saved_end, p), kr_time_to_units(end, p),
                    kr_time_to_units(next, p), kr_time_to_units(saved_end, p));
}

/* True when a state event of s is pending at t. */
static bool state_event_at(const kr_sim_t *s, kr_time_t t)
{
    for (uint32_t i = 0; i < s->rec_count; i++)
        if (s->recs[i].state == KR__EVREC_PENDING && s->recs[i].kind == KR__EV_STATE && s->recs[i].time == t)
            return true;
    return false;
}

kr_status_t kr__continuous_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut, kr_time_t saved_end)
{
    kr__ode_engine_t *e = s->cont ? s->cont->engine : NULL;
    uint64_t dim = kr_reader_u64(r);
    if (dim != (e ? kr__ode_engine_dim(e) : 0))
        return kr__fail(KR_ERR_CORRUPT, "continuous simulator '%s': its saved state has %llu variables, its setup "
                        "made %zu", s->name, (unsigned long long)dim, e ? kr__ode_engine_dim(e) : (size_t)0);
    if (!e) return KR_OK;
    kr_time_t t = kr_reader_u64(r);
    double *y = kr__ode_engine_state(e);
    for (size_t i = 0; i < dim; i++) y[i] = kr_reader_f64(r);
    uint8_t anchored = kr_reader_u8(r);
    if (anchored > 1)
        return kr__fail(KR_ERR_CORRUPT, "continuous simulator '%s': its saved state is not consistent", s->name);
    kr_time_t at = anchored ? kr_reader_u64(r) : 0;
    if (anchored && !r->failed) {
        double *a = s->cont->anchor ? s->cont->anchor : malloc(dim * sizeof *a);
        if (!a) return kr__fail(KR_ERR_NOMEM, "continuous simulator '%s': out of memory", s->name);
        s->cont->anchor = a;
        for (size_t i = 0; i < dim; i++) a[i] = kr_reader_f64(r);
        s->cont->anchor_time = at;
    } else if (!anchored) {
        free(s->cont->anchor);
        s->cont->anchor = NULL;
    }
    if (r->failed) return kr__fail(KR_ERR_CORRUPT, "continuous simulator '%s': its saved state is cut short", s->name);
    if (anchored && at > t)
        return kr__fail(KR_ERR_CORRUPT, "continuous simulator '%s': its saved state is not consistent", s->name);
    kr__ode_engine_set_time(e, t);
    /* A state integrated ahead to the end of the checkpointing run, when
     * this run ends elsewhere, or past this run's end, goes back to the
     * anchor: from there it is integrated to this run's next event, as the
     * uninterrupted run with this end does. Where it stops matters, when
     * it is integrated does not (kr__continuous_advance). */
    kr_time_t end = s->model->end_time;
    bool to_old_end = anchored && t == saved_end && saved_end != end;
    if (to_old_end && t <= end && state_event_at(s, t)) {
        /* Integrating ahead stopped at a crossing on the old end itself,
         * whose state event is pending: integrated again from the anchor,
         * the crossing would be found a second time; kept as it is, the
         * state is not the one the run with this end has there. */
        uint64_t p = s->model->precision;
        return kr__fail(KR_ERR_INVALID_ARG, "continuous simulator '%s': the checkpoint at %.15g, of a run ending "
                        "at %.15g, cannot go on to the end time %.15g: a state event of its falls on that end "
                        "(docs/checkpoint.md); restart with --end %.15g, or from an earlier checkpoint", s->name,
                        kr_time_to_units(cut, p), kr_time_to_units(saved_end, p), kr_time_to_units(end, p),
                        kr_time_to_units(saved_end, p));
    }
    if (to_old_end || (anchored && t > end)) {
        memcpy(y, s->cont->anchor, dim * sizeof *y);
        kr__ode_engine_set_time(e, at);
    }
    return check_end_change(s, cut, saved_end);
}
