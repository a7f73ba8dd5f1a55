/* Ending a run from inside the model: kr_sim_stop and the stop horizons
 * (docs/concepts.md, "Ending a run from inside the model").
 *
 * A stop by S in its event at t gives every simulator X the horizon
 * t + d(S -> X), d the shortest sum of promises from S to X (capped by the
 * stop lookahead when there is one); X runs no event at or after it. Every
 * process holds the whole dependency graph, so only (S, t) travels and each
 * process computes the horizons itself; several stops combine by minimum.
 *
 * Why no simulator passes its horizon before its process knows of the stop
 * (null-message algorithm). X runs an event at time u only while u is
 * below its bound, the minimum of the guarantees on its incoming edges,
 * and a guarantee on an edge w -> v is min(next_w, bound_w) + p(w -> v),
 * next_w counting the event w executes. Until S has finished its event at
 * t, next_S <= t, so every guarantee S gives is at most t + p(S -> v), and
 * by induction along the happened-before order every guarantee on an edge
 * into any v is at most t + d(S -> v) unless the process that sent it had
 * a bound (or, for S's group, a next time) past t + d(S -> w): a
 * guarantee above t + d(S -> X) reaching X is the end of a chain of
 * guarantees that starts after S's stop, each sent by a process that had
 * received the previous one. Each process passes a stop it learns on along
 * all of its outgoing edges to other processes at once, as a data message
 * (MSG_STOP, sync.c), before it sends any later guarantee on them; a
 * receiver applies an edge's guarantees only after every data message sent
 * before them (their edge counts), so each link of the chain carries the
 * stop ahead of the guarantee, and X's process knows the horizon before X's
 * bound can exceed it. The bound convention is strict (X runs u < bound),
 * so the horizon is strict too: X runs every event below t + d(S -> X),
 * which it could already have run, and none at or after it, which it could
 * not have. Inside S's zero-promise group d is 0: no member runs an event
 * at t after S's (they run in one loop in key order, and the horizon t
 * refuses the rest). Simulators no path reaches never need to know.
 *
 * Window algorithm: in the round in which S stops, every group's bound is
 * at most t + d(S -> g) (the round's shortest-path fixpoint from next
 * times gathered with next_S <= t); the horizons travel with the next
 * round's reduction, before any bound can pass them. A stop lookahead ties
 * every simulator to every other, which the window's reduction provides
 * (every round sees every next time); the null-message algorithm would
 * need a guarantee between every pair of simulators, so a model with a
 * stop lookahead runs its rounds with the window algorithm. */
#include <stdlib.h>
#include "kairos/stop.h"
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_private.h"
#include "schedulers/time_heap.h"

kr_status_t kr_model_set_stop_lookahead(kr_model_t *m, kr_time_t delta)
{
    if (!m) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_set_stop_lookahead: null model");
    if (m->started) return kr__fail(KR_ERR_STATE, "kr_model_set_stop_lookahead: the model has started");
    m->has_stop_lookahead = delta != KR_TIME_NEVER;
    m->stop_lookahead = delta;
    return KR_OK;
}

kr_time_t kr_model_stop_lookahead(const kr_model_t *m)
{
    return m && m->has_stop_lookahead ? m->stop_lookahead : KR_TIME_NEVER;
}

bool kr_model_stopped(const kr_model_t *m, uint32_t *by, kr_time_t *at)
{
    if (!m || !m->stopped) return false;
    if (by) *by = m->stopped_by;
    if (at) *at = m->stopped_at;
    return true;
}

kr_time_t kr_sim_stop_horizon(const kr_sim_t *s)
{
    return s ? s->stop_horizon : KR_TIME_NEVER;
}

kr_status_t kr__stop_check_start(kr_model_t *m)
{
    if (!m->has_stop_lookahead) return KR_OK;
    if (m->stop_lookahead == 0 && m->group_count > 1)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_model_start: a stop lookahead of 0 would make every simulator wait "
                        "for every other at equal times ('%s' and '%s' are in different zero-promise groups); give "
                        "it a positive value", m->sims[m->groups[0].members[0]]->name,
                        m->sims[m->groups[1].members[0]]->name);
    /* (see the top of this file) */
    if (m->sync == KR_SYNC_NULL_MESSAGE && m->group_count > 1) m->sync = KR_SYNC_WINDOW;
    return KR_OK;
}

void kr__stop_fini(kr_model_t *m)
{
    free(m->stop_unsent);
    m->stop_unsent = NULL;
    m->stop_unsent_count = m->stop_unsent_cap = 0;
}

/* ---- distances: Dijkstra with a binary heap of (distance, simulator) ---- */

kr_status_t kr__stop_distances(const kr_model_t *m, uint32_t from, kr_time_t *dist)
{
    uint32_t n = m->sim_count;
    if (from >= n) return kr__fail(KR_ERR_INVALID_ARG, "stop: no simulator with id %u", from);
    /* Each edge pushes at most once (lazy deletion), plus the source. */
    kr__time_item_t *heap = malloc(((size_t)m->edge_count + 1) * sizeof *heap);
    if (!heap) return kr__fail(KR_ERR_NOMEM, "stop: out of memory");
    for (uint32_t i = 0; i < n; i++) dist[i] = KR_TIME_NEVER;
    size_t count = 0;
    dist[from] = 0;
    kr__time_heap_push(heap, &count, (kr__time_item_t){ 0, from });
    while (count) {
        kr__time_item_t x = kr__time_heap_pop(heap, &count);
        if (x.time != dist[x.id]) continue;
        const kr_sim_t *s = m->sims[x.id];
        for (uint32_t k = 0; k < s->out_count; k++) {
            const kr__edge_t *e = &m->edges[s->out_edges[k]];
            kr_time_t d = kr__time_add(x.time, e->promise);
            if (d < dist[e->to]) {
                dist[e->to] = d;
                kr__time_heap_push(heap, &count, (kr__time_item_t){ d, e->to });
            }
        }
    }
    free(heap);
    if (m->has_stop_lookahead)
        for (uint32_t i = 0; i < n; i++)
            if (m->stop_lookahead < dist[i]) dist[i] = m->stop_lookahead;
    return KR_OK;
}

/* ---- learning a stop ---- */

/* Sender sides past a horizon. A sync-event with a sender side (sync.c)
 * scheduled by A for T at u is two events: A's sender side at u computes
 * the payload from A's state at u, then T's target side at u receives it.
 * With a stop, A's horizon h_A may be at or below u while T's, h_T, is
 * above it: h_T = t + d(S -> T) <= t + d(S -> A) + p(A -> T) = h_A + p,
 * so with a positive promise p the window [h_A, h_A + p) is open (A
 * schedules at now_A < h_A for u >= now_A + p). Running the sender side
 * anyway would run an event of A at or after its horizon, on a state that
 * lacks A's events in [h_A, u) (which do not run), and would depend on
 * when A's process heard of the stop; sending the payload without it
 * would deliver data that was never computed. So the sync-event does not
 * happen: its sender side never runs, and its target half, which would
 * wait for the payload for ever, is withdrawn (kr__sync_withdraw) as soon
 * as A's process knows A's horizon: here, for the records A already holds,
 * and in kr_schedule_sync and kr__sync_cancel for those made or delayed
 * later. This depends only on u, h_A and h_T, never on timing: A cannot
 * have run the sender side before (check_not_past), and T cannot run a
 * placeholder whose payload is not there (it waits, whichever comes
 * first). Inside S's group (h_A = t) a sender side at t that came before
 * S's event in key order has run and is no longer in A's queue. Only
 * those below T's horizon need it; the rest never run anyway. A restart
 * from a checkpoint written after the stop learns it again and withdraws
 * them again: the targets ignore a cancel of one already gone (sync.c). */
static kr_status_t withdraw_sender_sides(kr_model_t *m, kr_sim_t *x, kr_time_t old_horizon)
{
    if (!x->local) return KR_OK;
    for (uint32_t i = 0; i < x->rec_count; i++) {
        kr__event_rec_t *r = &x->recs[i];
        if (r->state != KR__EVREC_PENDING || r->kind != KR__EV_SENDER || r->time < x->stop_horizon ||
            r->time >= old_horizon)
            continue;
        kr__rec_extra_t *e = kr__rec_extra_peek(x, r);
        if (!e || e->target >= m->sim_count || r->time >= m->sims[e->target]->stop_horizon) continue;
        kr_status_t st = kr__sync_withdraw(x, e->target, r->sequence, r->time);
        if (st) {
            if (!m->failure) kr__model_fail(m, st, "stop: '%s': withdrawing a sync-event: %s", x->name,
                                            kr_last_error());
            return st;
        }
    }
    return KR_OK;
}

/* A simulator that already ran an event at or after its new horizon would
 * make the run depend on timing: the argument at the top of this file says
 * it cannot happen, and this says so loudly if it ever did. */
static kr_status_t check_not_past(kr_model_t *m, kr_sim_t *x, kr_time_t h, uint32_t by)
{
    if (!x->local || !x->executed) return KR_OK;
    bool same_group = x->group == m->sims[by]->group;
    if (x->now > h || (x->now == h && !same_group)) {
        kr__model_fail(m, KR_ERR_STATE, "stop by '%s': '%s' already ran an event at %g, at or after its horizon %g "
                       "(a bug in kairos)", m->sims[by]->name, x->name, kr_time_to_units(x->now, m->precision),
                       kr_time_to_units(h, m->precision));
        return KR_ERR_STATE;
    }
    return KR_OK;
}

kr_status_t kr__stop_learn(kr_model_t *m, uint32_t by, kr_time_t at)
{
    if (by >= m->sim_count) return kr__fail(KR_ERR_INVALID_ARG, "stop: no simulator with id %u", by);
    if (!m->stopped || at < m->stopped_at || (at == m->stopped_at && by < m->stopped_by)) {
        m->stopped = true;
        m->stopped_by = by;
        m->stopped_at = at;
    }
    kr_time_t *dist = malloc((m->sim_count ? 2 * (size_t)m->sim_count : 1) * sizeof *dist);
    if (!dist) return kr__fail(KR_ERR_NOMEM, "stop: out of memory");
    kr_time_t *old = dist + m->sim_count;
    kr_status_t st = kr__stop_distances(m, by, dist);
    bool lowered = false;
    for (uint32_t i = 0; !st && i < m->sim_count; i++) {
        kr_time_t h = kr__time_add(at, dist[i]);
        kr_sim_t *x = m->sims[i];
        old[i] = x->stop_horizon;
        /* a horizon past the end changes nothing */
        if (h > m->end_time || h >= x->stop_horizon) continue;
        if ((st = check_not_past(m, x, h, by))) break;
        x->stop_horizon = h;
        if (m->groups && h < m->groups[x->group].horizon) m->groups[x->group].horizon = h;
        lowered = true;
    }
    /* (once every horizon is known: a target's decides too) */
    for (uint32_t i = 0; !st && lowered && i < m->sim_count; i++)
        if (m->sims[i]->stop_horizon < old[i]) st = withdraw_sender_sides(m, m->sims[i], old[i]);
    free(dist);
    if (st || !lowered || m->sync != KR_SYNC_NULL_MESSAGE) return st;
    if (m->stop_unsent_count == m->stop_unsent_cap &&
        KR__GROW_U32(m->stop_unsent, m->stop_unsent_cap, m->stop_unsent_count + 1, 4, "stop"))
        return kr_last_status();
    m->stop_unsent[m->stop_unsent_count++] = (kr__stop_t){ by, at };
    return KR_OK;
}

kr_status_t kr__stop_flush(kr_model_t *m)
{
    kr_status_t st = KR_OK;
    for (uint32_t k = 0; !st && k < m->stop_unsent_count; k++) {
        kr__stop_t x = m->stop_unsent[k];
        for (uint32_t i = 0; !st && i < m->edge_count; i++) {
            kr__edge_t *e = &m->edges[i];
            /* (direct and internal edges share this process's knowledge) */
            if (e->internal || e->direct || !m->sims[e->from]->local) continue;
            st = kr__sync_send_stop(m, e, x.by, x.at);
        }
    }
    m->stop_unsent_count = 0;
    return st;
}

void kr__stop_window_fill(const kr_model_t *m, uint64_t *slots)
{
    for (uint32_t g = 0; g < m->group_count; g++) slots[g] = m->groups[g].horizon;
}

kr_status_t kr__stop_window_apply(kr_model_t *m, const uint64_t *slots)
{
    kr_time_t *old = malloc((m->group_count ? m->group_count : 1) * sizeof *old);
    if (!old) return kr__fail(KR_ERR_NOMEM, "stop: out of memory");
    for (uint32_t g = 0; g < m->group_count; g++) old[g] = m->groups[g].horizon;
    kr_status_t st = KR_OK;
    for (uint32_t g = 0; !st && g < m->group_count; g++) {
        kr__group_t *gr = &m->groups[g];
        kr_time_t h = slots[g];
        if (h >= gr->horizon) continue;
        for (uint32_t k = 0; k < gr->count; k++) {
            kr_sim_t *x = m->sims[gr->members[k]];
            /* (the stopping simulator's own group learns of it at once, in
             * its own process: any member that ran at h did so before) */
            if (x->local && x->executed && x->now >= h) {
                kr__model_fail(m, KR_ERR_STATE, "stop: '%s' already ran an event at %g, at or after its horizon "
                               "%g (a bug in kairos)", x->name, kr_time_to_units(x->now, m->precision),
                               kr_time_to_units(h, m->precision));
                st = KR_ERR_STATE;
                break;
            }
            if (h < x->stop_horizon) x->stop_horizon = h;
        }
        gr->horizon = h;
    }
    /* (see withdraw_sender_sides; a group's members share its horizon) */
    for (uint32_t g = 0; !st && g < m->group_count; g++) {
        kr__group_t *gr = &m->groups[g];
        for (uint32_t k = 0; !st && gr->local && gr->horizon < old[g] && k < gr->count; k++)
            st = withdraw_sender_sides(m, m->sims[gr->members[k]], old[g]);
    }
    free(old);
    return st;
}

/* ---- kr_sim_stop ---- */

void kr_sim_stop(kr_sim_t *s)
{
    if (!s) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_sim_stop: null simulator");
        return;
    }
    kr_model_t *m = s->model;
    if (!m->running || !s->executing) {
        kr__fail(KR_ERR_STATE, "kr_sim_stop: '%s' is not executing an event of a running model; a run ends from "
                 "inside an event or a behavior callback", s->name);
        kr_log(s, KR_LOG_WARN, "%s", kr_last_error());
        return;
    }
    kr_time_t at = s->current.time;
    if (s->stop_horizon <= at) return; /* stopped already (by itself or its group) */
    kr_status_t st = kr__stop_learn(m, s->id, at);
    /* Sent from inside the event, before anything this process sends
     * afterwards: its sync-events and guarantees. */
    if (!st) st = kr__stop_flush(m);
    if (st && !m->failure) kr__model_fail(m, st, "'%s': stopping the run: %s", s->name, kr_last_error());
}
