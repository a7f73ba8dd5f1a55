/* The conservative coordinator of one process.
 *
 * Each zero-promise group (usually one simulator) runs its events in key
 * order, but only those below its bound: the minimum of the guarantees on
 * the edges into the group. After running, a group recomputes what it
 * guarantees downstream, min(next, bound) + promise per outgoing edge, and
 * sends it when it grew. Everything between groups travels through the
 * transport, so the same loop runs over MPI later; nothing here reads a
 * global event list or the wall clock (emulation aside).
 *
 * The loop always runs the group with the lowest runnable key, which keeps
 * placeholders (sync-events waiting for their sender side) from blocking
 * the sender. A deadlock is defined, not timed: nothing runnable, nothing
 * in flight, and some simulator not finished. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "schedulers/model_private.h"
#include "schedulers/time_heap.h"

/* Opens or closes the blocked spans of a group's members. */
static void note_blocked(kr_model_t *m, kr__group_t *g, bool blocked, uint64_t now)
{
    if (!g->local) return;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_sim_t *s = m->sims[g->members[i]];
        if (blocked && !s->blocked_since) {
            s->blocked_since = now;
            s->blocked_episodes++;
        } else if (!blocked && s->blocked_since) {
            s->blocked_ns += now - s->blocked_since;
            if (m->observer.on_blocked) m->observer.on_blocked(m->observer.arg, s, s->blocked_since, now);
            s->blocked_since = 0;
        }
    }
}

/* The group's lowest pending record and the simulator that holds it. */
static kr__event_rec_t *group_head(kr_model_t *m, kr__group_t *g, kr_sim_t **who)
{
    kr__event_rec_t *best = NULL;
    *who = NULL;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_sim_t *s = m->sims[g->members[i]];
        kr__event_rec_t *h = kr__sim_head(s);
        if (h && (!best || kr__rec_less(h, best))) {
            best = h;
            *who = s;
        }
    }
    return best;
}

static kr_time_t clamp_end(const kr_model_t *m, kr_time_t t)
{
    return t > m->end_time ? KR_TIME_NEVER : t;
}

/* The group's next time; KR_TIME_NEVER past the end or its stop horizon
 * (it will never run that: what it may still receive is at or after its
 * bound, which its guarantees count instead). */
static kr_time_t group_next(kr_model_t *m, kr__group_t *g)
{
    kr_time_t next = KR_TIME_NEVER;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_time_t t = clamp_end(m, kr__sim_next_time(m->sims[g->members[i]]));
        if (t < next) next = t;
    }
    return next >= g->horizon ? KR_TIME_NEVER : next;
}

/* group_next, and in *scheduled the same without the continuous members'
 * possible state events (kr__sim_next_scheduled), in one pass. */
static kr_time_t group_next_and_scheduled(kr_model_t *m, kr__group_t *g, kr_time_t *scheduled)
{
    kr_time_t next = KR_TIME_NEVER, sched = KR_TIME_NEVER;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_sim_t *s = m->sims[g->members[i]];
        kr_time_t raw = kr__sim_next_scheduled(s);
        kr_time_t t = clamp_end(m, s->cont ? kr__continuous_next(s, raw) : raw), u = clamp_end(m, raw);
        if (t < next) next = t;
        if (u < sched) sched = u;
    }
    *scheduled = sched >= g->horizon ? KR_TIME_NEVER : sched;
    return next >= g->horizon ? KR_TIME_NEVER : next;
}

/* ---- bounds over many in-edges ----
 *
 * A group's bound is the least guarantee on its in-edges. A guarantee
 * raised on a direct edge can move it only if it was that least, but then
 * a rescan cost d for d in-edges, and with many simulators on one rank the
 * group that ran usually held the least guarantee of every other (d^2 per
 * step, bench/README.md, "Many simulators on one rank"). From
 * BOUND_TREE_MIN in-edges a group keeps a min-tree over them, and a raise
 * costs log d. Every raise of a guarantee updates its leaf: a direct one
 * at once (send_guarantees), a delivered one after the poll
 * (take_deliveries), and update_bound refreshes all of them (at the start
 * of a run, at a cut and after a stop arrives). A lagging leaf would make
 * the bound lower, never higher (guarantees only grow), holding the group
 * back without breaking a promise. */
#define BOUND_TREE_MIN 9

static kr__bound_tree_t *bound_tree(kr_model_t *m, const kr__group_t *g)
{
    kr__bound_tree_t *t = m->bound_trees ? &m->bound_trees[g - m->groups] : NULL;
    return t && t->node ? t : NULL;
}

static kr_status_t make_bound_trees(kr_model_t *m)
{
    if (m->bound_trees || m->sync != KR_SYNC_NULL_MESSAGE) return KR_OK;
    m->bound_trees = calloc(m->group_count ? m->group_count : 1, sizeof *m->bound_trees);
    if (!m->bound_trees) return kr__fail(KR_ERR_NOMEM, "coordinator: out of memory");
    for (uint32_t i = 0; i < m->group_count; i++) {
        const kr__group_t *g = &m->groups[i];
        if (!g->local || g->in_count < BOUND_TREE_MIN) continue;
        uint32_t leaves = 1;
        while (leaves < g->in_count) leaves *= 2;
        kr_time_t *node = malloc(2 * (size_t)leaves * sizeof *node);
        if (!node) return kr__fail(KR_ERR_NOMEM, "coordinator: out of memory");
        for (uint32_t k = 0; k < 2 * leaves; k++) node[k] = KR_TIME_NEVER;
        m->bound_trees[i] = (kr__bound_tree_t){ node, leaves };
    }
    return KR_OK;
}

/* The lesser of node i's two children. */
static inline kr_time_t bound_tree_least(const kr_time_t *n, uint32_t i)
{
    return n[2 * i] < n[2 * i + 1] ? n[2 * i] : n[2 * i + 1];
}

/* Sets leaf `pos` to v and the nodes above it; returns the least. */
static kr_time_t bound_tree_set(kr__bound_tree_t *t, uint32_t pos, kr_time_t v)
{
    kr_time_t *n = t->node;
    uint32_t i = t->leaves + pos;
    n[i] = v;
    for (i /= 2; i; i /= 2) {
        kr_time_t least = bound_tree_least(n, i);
        if (n[i] == least) break; /* (and so is every node above) */
        n[i] = least;
    }
    return n[1];
}

static void update_bound(kr_model_t *m, kr__group_t *g)
{
    if (!g->local || m->sync == KR_SYNC_WINDOW) return; /* the window sets bounds per round */
    kr__bound_tree_t *t = bound_tree(m, g);
    kr_time_t b = KR_TIME_NEVER;
    if (t) {
        kr_time_t *n = t->node;
        for (uint32_t i = 0; i < g->in_count; i++) n[t->leaves + i] = m->edges[g->in_edges[i]].guarantee;
        for (uint32_t i = t->leaves - 1; i; i--) n[i] = bound_tree_least(n, i);
        b = n[1];
    } else {
        for (uint32_t i = 0; i < g->in_count; i++) {
            kr_time_t v = m->edges[g->in_edges[i]].guarantee;
            if (v < b) b = v;
        }
    }
    g->bound = clamp_end(m, b);
}

/* The least guarantee the sender of e sends unasked after it sent `g`:
 * the next multiple of the promise above g (see send_guarantees). */
static kr_time_t next_mark(const kr__edge_t *e, kr_time_t g)
{
    if (!e->promise || g == KR_TIME_NEVER) return g;
    return kr__time_add(g - g % e->promise, e->promise);
}

/* Sends every outgoing guarantee of the group that grew: at once to a
 * simulator of this process (it costs nothing); to another process on
 * demand (while its receiver asks for more than it has), and unasked once
 * it reaches the next multiple of the promise above the last one sent
 * (next_mark; a data message's counts too). One unasked guarantee per
 * promise of model time and edge is what simulators that advance
 * together need (docs/scaling.md, "The null-message floor for PHOLD's
 * graph"); at fixed marks, the guarantees a receiver waits for all
 * arrive as their senders pass the same mark, so it is blocked about
 * once per promise, not once per edge. */
static kr_status_t send_guarantees(kr_model_t *m, kr__group_t *g, bool only_if_moved)
{
    if (!g->local || m->sync == KR_SYNC_WINDOW) return KR_OK;
    /* stops learned here go first on every edge (stop.c) */
    if (m->stop_unsent_count) {
        kr_status_t st = kr__stop_flush(m);
        if (st) return st;
    }
    kr_time_t next = group_next(m, g);
    kr_time_t base = next < g->bound ? next : g->bound;
    /* Every guarantee below is the base plus a promise, and what was sent
     * only grows: from a base no higher than the last pass's, nothing new
     * goes out. (With many simulators on one rank, each step raised the
     * bounds of most of them, and each then passed over all its edges to
     * find nothing: bench/README.md, "Many simulators on one rank".) A
     * group that has just run has usually moved: it does not ask. */
    if (only_if_moved && g->sent_valid && base <= g->sent_base) return KR_OK;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_sim_t *s = m->sims[g->members[i]];
        for (uint32_t k = 0; k < s->out_count; k++) {
            kr__edge_t *e = &m->edges[s->out_edges[k]];
            if (e->internal) continue;
            kr_time_t gt = clamp_end(m, kr__time_add(base, e->promise));
            if (gt <= e->guarantee_sent) continue;
            /* Below the next mark and unasked, a guarantee still goes where
             * it costs nothing: into the edge's last data message, while
             * it waits in this process. A run of sync-events carries the
             * guarantee given with its first; this brings it up to date
             * as the group's stretch ends (sync.c, append_sync). */
            if (!e->direct && e->demand <= e->guarantee_sent && gt < next_mark(e, e->guarantee_sent) &&
                !m->eager_guarantees) {
                kr__sync_raise_held(m, e, gt);
                continue;
            }
            kr_time_t old = e->guarantee;
            kr_status_t st = kr__sync_send_guarantee(m, e, gt);
            if (st) return st;
            /* Applied at once: the receiver's bound moves now, and what
             * it guarantees in turn may grow (deliver_and_propagate
             * sends it). Its bound is the least of its guarantees, so
             * it can move only if this edge's old one was that least:
             * recomputing it for every edge cost d^2 per step for
             * simulators with d direct edges each (bench/README.md). */
            if (e->direct) {
                kr__group_t *to = &m->groups[m->sims[e->to]->group];
                kr_time_t before = to->bound;
                kr__bound_tree_t *t = bound_tree(m, to);
                if (t) to->bound = clamp_end(m, bound_tree_set(t, e->in_pos, e->guarantee));
                else if (old <= before) update_bound(m, to);
                if (to->bound != before && !to->raised) {
                    to->raised = true;
                    m->raised[m->raised_count++] = m->sims[e->to]->group;
                }
            }
        }
    }
    g->sent_base = base;
    g->sent_valid = true;
    return KR_OK;
}

/* send_guarantees for every group, in order; the first failure stops it. */
static kr_status_t send_all_guarantees(kr_model_t *m)
{
    for (uint32_t i = 0; i < m->group_count; i++) {
        kr_status_t st = send_guarantees(m, &m->groups[i], true);
        if (st) return st;
    }
    return KR_OK;
}

/* A group that cannot run asks the senders that hold it back for the
 * guarantee it needs: beyond its next event (or the end, to finish). Each
 * edge is asked once per need; the sender answers with every guarantee it
 * can give until it reaches the need, so a chain of blocked groups wakes
 * up link by link, as eagerly sent guarantees would wake it. A need at or
 * below the sender's next mark is not asked for: the sender sends that
 * much unasked as soon as it can (send_guarantees), and without asking
 * nothing deadlocks (docs/internals.md, "Guarantees, piggybacked and
 * null"). */
static kr_status_t ask_for_guarantees(kr_model_t *m, kr__group_t *g, const kr__event_rec_t *h)
{
    /* past its stop horizon a group needs only to know that nothing
     * earlier can still arrive */
    kr_time_t limit = kr__time_add(kr__run_limit(m), 1);
    if (g->horizon < limit) limit = g->horizon;
    kr_time_t need = h && h->time < limit ? kr__time_add(h->time, 1) : limit;
    if (g->bound >= need) return KR_OK;
    for (uint32_t i = 0; i < g->in_count; i++) {
        kr__edge_t *e = &m->edges[g->in_edges[i]];
        if (e->direct || e->guarantee >= need || e->requested >= need ||
            (need <= next_mark(e, e->guarantee) && !m->eager_guarantees))
            continue;
        kr_status_t st = kr__sync_request_guarantee(m, e, need);
        if (st) return st;
    }
    return KR_OK;
}

static bool runnable(kr_model_t *m, kr__group_t *g, kr_sim_t *s, const kr__event_rec_t *h)
{
    if (!h || (h->flags & KR__EVREC_AWAITING)) return false;
    kr_time_t t = h->time;
    if (t > kr__run_limit(m) || t >= g->bound || t >= g->horizon) return false;
    return !s->emu || kr__emulation_ready(s, t);
}

/* Null messages: room for every group on propagate's list. */
static kr_status_t make_raised_list(kr_model_t *m)
{
    m->raised_count = 0;
    for (uint32_t i = 0; i < m->group_count; i++) m->groups[i].raised = false;
    if (m->raised || m->sync != KR_SYNC_NULL_MESSAGE) return KR_OK;
    m->raised = malloc((m->group_count ? m->group_count : 1) * sizeof *m->raised);
    return m->raised ? KR_OK : kr__fail(KR_ERR_NOMEM, "coordinator: out of memory");
}

/* The groups a scan found runnable. A step runs the runnable group with
 * the lowest head, and finding it visits every group here: with thousands
 * of simulators on one rank (a fan-in of rows lines into one final
 * simulator), each step ran one group's events and then visited all the
 * others again, and the scans took nearly all of the run (16,000 lines did
 * not finish in two minutes). So under null messages, with at least
 * 2 * SCAN_SPREAD groups here, a scan keeps up to one runnable group in
 * SCAN_SPREAD, lowest head first, and as many steps as it kept take them
 * in turn, each checked again before it runs (a group still runnable
 * after its step goes to the end of the list): a step then costs about
 * SCAN_SPREAD visits, whatever the number of groups. Which runnable group
 * runs first changes no result (the window's rounds run them in group
 * order; docs/concepts.md, "What determinism kairos promises"), only how
 * far ahead the others get: a group made runnable meanwhile waits for the
 * next scan, which comes once those steps are used up or nothing on the
 * list can run, and at once after a cut, at the start of a run and after
 * a stop arrives. One that a delivery from another process made runnable
 * goes to the front of the list instead (a guarantee from there may be
 * what a whole rank waits for: list_touched). Models with continuous or
 * emulation simulators, whose scans also integrate ahead and watch
 * clocks, scan every step. */
#define SCAN_SPREAD 32u

static kr_status_t make_ready_list(kr_model_t *m)
{
    uint32_t local = 0;
    bool plain = m->sync == KR_SYNC_NULL_MESSAGE && !m->has_continuous && !m->has_emulation;
    for (uint32_t i = 0; i < m->group_count; i++) local += m->groups[i].local;
    m->ready_count = m->ready_next = m->ready_keep = m->ready_steps = 0;
    if (!plain || local < 2 * SCAN_SPREAD) return KR_OK;
    if (!m->ready && !(m->ready = malloc((size_t)local * sizeof *m->ready)))
        return kr__fail(KR_ERR_NOMEM, "coordinator: out of memory");
    m->ready_keep = local / SCAN_SPREAD;
    m->ready_cap = local;
    return KR_OK;
}

static int ready_order(const void *a, const void *b)
{
    const kr__time_item_t *x = a, *y = b;
    return kr__time_item_less(*x, *y) ? -1 : kr__time_item_less(*y, *x);
}

static void swap_items(kr__time_item_t *a, uint32_t i, uint32_t j)
{
    kr__time_item_t x = a[i];
    a[i] = a[j];
    a[j] = x;
}

/* Moves the k least of a[0..n) (k < n; no two alike: their ids differ) to
 * a[0..k), in no order: Hoare's selection, linear on average. Sorting all
 * the runnable groups of every scan to keep a thirty-second of them cost
 * more than the scan itself where scans came every step (PHOLD with 128
 * simulators on 2 ranks, when every delivery dropped the list). */
static void select_least(kr__time_item_t *a, uint32_t n, uint32_t k)
{
    uint32_t lo = 0, hi = n;
    while (hi - lo > 1) {
        swap_items(a, lo + (hi - lo) / 2, hi - 1);
        kr__time_item_t pivot = a[hi - 1];
        uint32_t at = lo;
        for (uint32_t i = lo; i < hi - 1; i++)
            if (kr__time_item_less(a[i], pivot)) swap_items(a, i, at++);
        swap_items(a, at, hi - 1);
        if (at == k) return;
        if (at < k) lo = at + 1;
        else hi = at;
    }
}

/* After a scan: the runnable groups it noted (m->ready[0..ready_count)),
 * but the one it runs now, lowest head first, up to ready_keep of them. */
static void keep_ready(kr_model_t *m, const kr__group_t *best)
{
    uint32_t n = 0, skip = best ? (uint32_t)(best - m->groups) : UINT32_MAX;
    for (uint32_t i = 0; i < m->ready_count; i++)
        if (m->ready[i].id != skip) m->ready[n++] = m->ready[i];
    if (n > m->ready_keep) {
        select_least(m->ready, n, m->ready_keep);
        n = m->ready_keep;
    }
    qsort(m->ready, n, sizeof *m->ready, ready_order);
    m->ready_count = n;
    m->ready_next = 0;
    m->ready_steps = m->ready_keep;
}

/* A group still runnable after its step (its budget, its stretch or an
 * agent-based step ended it) goes to the end of the list: alone runnable
 * (a sink whose sources are done), it would otherwise cost a scan every
 * step. (At most ready_keep steps follow a scan, each adding at
 * most one group: the list never holds more than the local groups.) */
static void keep_if_runnable(kr_model_t *m, kr__group_t *g)
{
    kr_sim_t *s;
    kr__event_rec_t *h = group_head(m, g, &s);
    if (m->ready_steps && runnable(m, g, s, h))
        m->ready[m->ready_count++] = (kr__time_item_t){ h->time, (uint32_t)(g - m->groups) };
}

/* The next group on the list that can still run, if any. */
static kr__group_t *next_ready(kr_model_t *m)
{
    while (m->ready_next < m->ready_count) {
        kr__group_t *g = &m->groups[m->ready[m->ready_next++].id];
        kr_sim_t *s;
        kr__event_rec_t *h = group_head(m, g, &s);
        if (runnable(m, g, s, h)) return g;
    }
    return NULL;
}

static void forget_ready(kr_model_t *m)
{
    m->ready_count = m->ready_next = m->ready_steps = 0;
}

/* What a delivery touched. A delivery from another process may change the
 * bound and head of the group it reaches, what that group may guarantee
 * (or, for a guarantee request, what its sender's group must), and whether
 * it can run. Looking at every group after each poll (every bound
 * refreshed, every group's guarantees tried, the scan's list dropped for
 * a full scan) made a poll cost the number of groups: with 16,000 rows
 * lines over 2 ranks, every step (bench/README.md, "Deliveries that touch
 * a few of many groups"). So a delivery puts its edge on a list
 * (kr__touch_edge) and, after the poll, take_deliveries looks only at the
 * groups at those edges' ends: a receiver's bound (its min-tree's leaf
 * for the edge, or its few in-edges), each one's guarantees, and a
 * receiver that can now run goes first on the scan's list (list_touched).
 * A stop may move any group's horizon: after one arrives in a step, every
 * group is looked at, as before (one that arrives while a cut drains the
 * transport has every bound refreshed there: reach_cut). Null messages
 * only (the window sets bounds per round). */
static kr_status_t make_touched_lists(kr_model_t *m)
{
    m->touched_count = m->touched_group_count = 0;
    m->touched_all = false;
    for (uint32_t i = 0; i < m->edge_count; i++) m->edges[i].touched = false;
    if (m->touched || m->sync != KR_SYNC_NULL_MESSAGE) return KR_OK;
    m->touched = malloc((m->edge_count ? m->edge_count : 1) * sizeof *m->touched);
    m->touched_groups = malloc((m->group_count ? m->group_count : 1) * sizeof *m->touched_groups);
    m->group_touched = calloc(m->group_count ? m->group_count : 1, sizeof *m->group_touched);
    if (m->touched && m->touched_groups && m->group_touched) return KR_OK;
    free(m->touched);
    free(m->touched_groups);
    free(m->group_touched);
    m->touched = m->touched_groups = NULL;
    m->group_touched = NULL;
    return kr__fail(KR_ERR_NOMEM, "coordinator: out of memory");
}

/* Empties the list of touched edges (whoever took up what they brought). */
static void forget_touched(kr_model_t *m)
{
    for (uint32_t k = 0; k < m->touched_count; k++) m->edges[m->touched[k]].touched = false;
    m->touched_count = 0;
    m->touched_all = false;
}

static void touch_group(kr_model_t *m, uint32_t id)
{
    if (!m->groups[id].local || m->group_touched[id]) return;
    m->group_touched[id] = true;
    m->touched_groups[m->touched_group_count++] = id;
}

kr_status_t kr__coord_prepare(kr_model_t *m)
{
    m->running = true;
    /* Marks rely on every sender reaching its next one unasked, as a
     * discrete sender does once it has run what its bound allows. A
     * continuous simulator with state events may not: until it integrates
     * to its next stop its guarantee is a tick past its state's time, and
     * in a cycle that integration waits for guarantees a held one would
     * never let grow (a deadlock over ranks, found by a run of a model
     * with the bath in a cycle). Its state events are known only on its
     * own rank, so any continuous simulator with an edge to or from
     * another process makes every guarantee of the run eager, as on every
     * rank alike. */
    m->eager_guarantees = false;
    m->has_continuous = false;
    for (uint32_t i = 0; i < m->sim_count; i++) m->has_continuous |= m->sims[i]->formalism == KR_CONTINUOUS;
    for (uint32_t i = 0; i < m->edge_count; i++) {
        const kr__edge_t *e = &m->edges[i];
        if (!e->internal && !e->direct &&
            (m->sims[e->from]->formalism == KR_CONTINUOUS || m->sims[e->to]->formalism == KR_CONTINUOUS))
            m->eager_guarantees = true;
    }
    m->last_ran = UINT32_MAX;
    /* Every link first (each may wait for its peer), then the logs: a run
     * that fails to open one empties none (kr__emulation_open). */
    for (int phase = 0; phase < 2; phase++)
        for (uint32_t i = 0; i < m->sim_count; i++)
            if (m->sims[i]->emu) {
                kr_status_t st = phase ? kr__emulation_begin(m->sims[i]) : kr__emulation_open(m->sims[i]);
                if (st) return st;
            }
    m->has_emulation = false;
    for (uint32_t i = 0; i < m->sim_count; i++) m->has_emulation |= m->sims[i]->emu != NULL;
    kr_status_t st = make_bound_trees(m);
    if (st) return st;
    if ((st = make_raised_list(m)) || (st = make_ready_list(m)) || (st = make_touched_lists(m))) return st;
    for (uint32_t i = 0; i < m->group_count; i++) {
        kr__group_t *g = &m->groups[i];
        update_bound(m, g);
        /* The stretch: the smallest promise on an edge to another
         * process. A step ends there, and what the group sent leaves at
         * the poll after it; a guarantee due at a mark (send_guarantees)
         * rides free on a data message still waiting in the batch, so the
         * longer the step, the fewer null messages. Half a promise, as
         * before, doubled the null messages on edges that carry less
         * than a message per promise (PHOLD with 32 simulators on 32
         * ranks: 0.50 per event instead of 0.41, and 20 % slower; on 2
         * ranks the speed-ups were the same or better with the whole
         * promise: bench/README.md, "The stretch, a whole promise
         * again"). Only for a group that waits on another process too:
         * one that nothing holds back (a source, like the lines of
         * examples/rows.json) runs far ahead of its receivers anyway, and
         * stopping it every promise only multiplied its polls (rows on 2
         * ranks ran 2.5 times slower with half a promise). */
        g->stretch = KR_TIME_NEVER;
        bool waits = false;
        for (uint32_t k = 0; k < g->in_count && !waits; k++) {
            const kr__edge_t *e = &m->edges[g->in_edges[k]];
            waits = !e->internal && !e->direct;
        }
        for (uint32_t k = 0; waits && g->local && m->sync == KR_SYNC_NULL_MESSAGE && k < g->count; k++) {
            const kr_sim_t *s = m->sims[g->members[k]];
            for (uint32_t j = 0; j < s->out_count; j++) {
                const kr__edge_t *e = &m->edges[s->out_edges[j]];
                kr_time_t span = e->promise ? e->promise : 1;
                if (!e->internal && !e->direct && span < g->stretch) g->stretch = span;
            }
        }
    }
    return send_all_guarantees(m);
}

static kr_status_t deliver(void *arg, const void *bytes, size_t len)
{
    return kr__sync_deliver(arg, bytes, len);
}

static kr_status_t describe_deadlock(kr_model_t *m);

/* Every process calls this at once on a deadlock: one describes it (the
 * lowest with a blocked event), the others fail with its description. */
static kr_status_t report_deadlock(kr_model_t *m)
{
    bool describe = true;
    if (m->transport->vtbl->deadlock) {
        bool blocked = false;
        for (uint32_t gi = 0; gi < m->group_count && !blocked; gi++) {
            kr__group_t *g = &m->groups[gi];
            kr_sim_t *s;
            kr__event_rec_t *h = g->local ? group_head(m, g, &s) : NULL;
            blocked = h && h->time <= kr__run_limit(m) && h->time < g->horizon;
        }
        unsigned line;
        uint64_t after;
        for (uint32_t i = 0; i < m->sim_count && !blocked; i++)
            blocked = m->sims[i]->local && m->sims[i]->emu && kr__emulation_replay_waiting(m->sims[i], &line, &after);
        kr_status_t st = m->transport->vtbl->deadlock(m->transport, blocked, &describe);
        if (st) {
            kr__model_fail(m, st, "%s", kr_last_error());
            return st;
        }
    }
    return describe_deadlock(m);
}

static kr_status_t describe_deadlock(kr_model_t *m)
{
    char msg[1024];
    size_t n = 0;
    n += (size_t)snprintf(msg + n, sizeof msg - n, "deadlock: no simulator can advance and no message is in flight;");
    /* A replayed log whose next line waits for more events than its
     * simulator can run holds back everything after that line's time. */
    for (uint32_t i = 0; i < m->sim_count && n < sizeof msg - 1; i++) {
        kr_sim_t *s = m->sims[i];
        unsigned line;
        uint64_t after;
        if (s->local && s->emu && kr__emulation_replay_waiting(s, &line, &after))
            n += (size_t)snprintf(msg + n, sizeof msg - n, " '%s' (now %g, %llu events run) waits to replay line %u of "
                                  "its log, due after %llu events (a log that does not fit this run?);", s->name,
                                  kr_time_to_units(s->now, m->precision), (unsigned long long)s->executed, line,
                                  (unsigned long long)after);
    }
    for (uint32_t gi = 0; gi < m->group_count && n < sizeof msg - 1; gi++) {
        kr__group_t *g = &m->groups[gi];
        /* (a blocked head, as report_deadlock finds it: `done` is the last
         * scan's, older than the bounds a window round has just made) */
        kr_sim_t *s;
        kr__event_rec_t *h = g->local ? group_head(m, g, &s) : NULL;
        if (!h || h->time > kr__run_limit(m) || h->time >= g->horizon) continue;
        const char *holder = NULL;
        kr_time_t held = g->bound;
        if (m->sync == KR_SYNC_WINDOW && g->bound != KR_TIME_NEVER) holder = m->sims[g->bound_from]->name;
        for (uint32_t i = 0; m->sync != KR_SYNC_WINDOW && i < g->in_count; i++)
            if (m->edges[g->in_edges[i]].guarantee == g->bound) holder = m->sims[m->edges[g->in_edges[i]].from]->name;
        if (h->flags & KR__EVREC_AWAITING)
            n += (size_t)snprintf(msg + n, sizeof msg - n, " '%s' (now %g) waits for the payload of a sync-event at %g "
                                  "from '%s';", s->name, kr_time_to_units(s->now, m->precision),
                                  kr_time_to_units(h->time, m->precision), m->sims[h->source]->name);
        else
            n += (size_t)snprintf(msg + n, sizeof msg - n, " '%s' (now %g) has an event at %g held by %s %g%s%s%s;",
                                  s->name, kr_time_to_units(s->now, m->precision),
                                  kr_time_to_units(h->time, m->precision), m->sync == KR_SYNC_WINDOW ? "bound" : "guarantee",
                                  kr_time_to_units(held, m->precision), holder ? " from '" : "",
                                  holder ? holder : "", holder ? "'" : "");
    }
    if (n >= sizeof msg) n = sizeof msg - 1;
    if (n && msg[n - 1] == ';') msg[n - 1] = '\0';
    kr__model_fail(m, KR_ERR_DEADLOCK, "%s", msg);
    return kr__fail(KR_ERR_DEADLOCK, "%s", msg);
}

/* Brings the continuous members of group g forward together, towards
 * `to`, point by point: a point is the next integration stop of any member
 * with state events, or `to` if that comes first. Before any member goes
 * to a point, each one's integration there is tried on a copy of its
 * state (when two or more go): if some would cross a threshold on the way,
 * the first such crossing is where the others stop, and the member that
 * crosses there finds its state event. The members without state events
 * (which find no events of their own) follow to `to` once all have reached
 * it. Returns true when a member found a state event, which is then the
 * group's next event (or the run failed).
 *
 * So no member passes the time of another's state event, whose sync-events
 * (zero promises) must meet it in its state at that time; and the points a
 * member's integration stops at come from the model (its group's stops and
 * events), never from timing: whether the group waited and integrated
 * ahead first (`lookahead`: only points below `bound`, and none of the
 * members without state events) or went straight to an event at `to`,
 * every trajectory is the same. Each member integrated on its own to the
 * event, or while the group waited to its own next stop, met such a
 * sync-event in a later state, and cuts changed which (two oscillators
 * kicking each other). *progressed: some member moved. */
static bool advance_continuous(kr_model_t *m, kr__group_t *g, kr_time_t to, kr_time_t bound, bool lookahead,
                               bool *progressed)
{
    for (;;) {
        kr_time_t at = KR_TIME_NEVER, point = to;
        for (uint32_t i = 0; i < g->count; i++) {
            const kr_sim_t *c = m->sims[g->members[i]];
            if (!kr__continuous_has_state_events(c)) continue;
            kr_time_t t = kr__continuous_time(c);
            if (t < at) at = t;
        }
        if (at >= to) break;
        for (uint32_t i = 0; i < g->count; i++) {
            kr_time_t stop = kr__continuous_stop_after(m->sims[g->members[i]], at);
            if (stop < point) point = stop;
        }
        if (point >= bound) return false;
        uint32_t going = 0;
        for (uint32_t i = 0; i < g->count; i++) {
            const kr_sim_t *c = m->sims[g->members[i]];
            going += kr__continuous_has_state_events(c) && kr__continuous_time(c) < point;
        }
        kr_time_t first = point;
        const kr_sim_t *crosser = NULL;
        for (uint32_t i = 0; going > 1 && i < g->count; i++) {
            kr_sim_t *c = m->sims[g->members[i]];
            if (!kr__continuous_has_state_events(c) || kr__continuous_time(c) >= point) continue;
            kr_time_t t = kr__continuous_first_crossing(c, point);
            if (m->failure) return true;
            if (t < first || (t == first && !crosser)) {
                first = t;
                crosser = c;
            }
        }
        for (uint32_t i = 0; i < g->count; i++) {
            kr_sim_t *c = m->sims[g->members[i]];
            kr_time_t target = going > 1 && c != crosser ? first : point;
            if (!kr__continuous_has_state_events(c) || kr__continuous_time(c) >= target) continue;
            *progressed = true;
            if (!kr__continuous_advance(c, target)) return true;
        }
        if (crosser) return true; /* (its advance found the crossing, unless the run failed) */
    }
    if (lookahead) return false;
    for (uint32_t i = 0; i < g->count; i++) {
        kr_sim_t *c = m->sims[g->members[i]];
        if (c->cont && !kr__continuous_has_state_events(c) && kr__continuous_time(c) < to) {
            *progressed = true;
            if (!kr__continuous_advance(c, to)) return true;
        }
    }
    return false;
}

/* The most events a group runs in one step before the coordinator polls
 * the transport and sends what the group may now guarantee. Each poll
 * costs a rank about as much as 15 PHOLD events in MPI (measured on the
 * AMD host of bench/README.md), and each step's sync-events to a peer
 * leave as one batch, which costs about the same up to the transport's
 * batch size (4 KiB over MPI on one node). 512 events of PHOLD at base
 * (remote 0.25) fill about one batch: on 2 ranks they ran 1.5-3.6 %
 * faster than 256, and 768 (a batch and a half) no faster. A lone plain
 * simulator's step also ends at its stretch, which a small promise makes
 * shorter; at remote 0.5 a full batch leaves in mid-step, and 512 ran as
 * fast as 256 (bench/README.md, "Steps of 512 events"). */
#define STEP_EVENTS 512u

/* Runs at most `budget` events of group g while it stays runnable. With an
 * on_busy hook, each stretch of one simulator's events is reported. */
static uint32_t run_group(kr_model_t *m, kr__group_t *g, uint32_t budget)
{
    uint32_t ran = 0;
    kr_time_t limit = kr__run_limit(m);
    kr_sim_t *only = g->count == 1 ? m->sims[g->members[0]] : NULL;
    if (only && !only->cont && !only->emu && !m->observer.on_busy) {
        /* The common case, one plain simulator: its head is the group's. */
        kr_time_t stop_at = KR_TIME_NEVER;
        while (ran < budget && !m->failure) {
            const kr__event_rec_t *h = kr__sim_head(only);
            if (!h || (h->flags & KR__EVREC_AWAITING) || h->time >= g->bound || h->time > limit ||
                h->time >= g->horizon || h->time >= stop_at)
                break;
            if (!ran) stop_at = kr__time_add(h->time, g->stretch);
            /* An agent-based step is usually long (every agent acts): what
             * it sent (halos, migrants) and the guarantees it allows must
             * leave before the next one, or a neighbour waits two steps. */
            bool step = h->priority == KR_PRIORITY_STEP;
            kr__sim_run_head(only);
            ran++;
            if (step) break;
        }
        return ran;
    }
    kr_sim_t *span_sim = NULL;
    uint64_t span_begin = 0, span_events = 0;
    bool spans = m->observer.on_busy != NULL;
    while (ran < budget && !m->failure) {
        kr_sim_t *s;
        kr__event_rec_t *h = group_head(m, g, &s);
        if (!runnable(m, g, s, h)) break;
        /* A continuous member could cross a threshold before this event:
         * bring them all to the event's time first (a state event found is
         * then the group's head). */
        bool progressed = false;
        if (m->has_continuous && advance_continuous(m, g, h->time, KR_TIME_NEVER, false, &progressed)) {
            if (m->failure) break;
            continue;
        }
        if (spans && s != span_sim) {
            uint64_t now = kr__monotonic_ns();
            if (span_sim) m->observer.on_busy(m->observer.arg, span_sim, span_begin, now, span_events);
            span_sim = s;
            span_begin = now;
            span_events = 0;
        }
        bool step = h->priority == KR_PRIORITY_STEP; /* (see above) */
        if (kr__sim_run_head(s)) {
            ran++;
            span_events++;
            if (step) break;
            /* input is read between every two events of an emulation
             * simulator: a replay injects at exact event counts */
            if (s->emu) kr__emulation_poll(s);
        } else if (m->failure) {
            break;
        }
    }
    if (span_sim) m->observer.on_busy(m->observer.arg, span_sim, span_begin, kr__monotonic_ns(), span_events);
    return ran;
}

/* ---- the window algorithm ----
 *
 * A round gathers every group's next event time (the minimum over ranks
 * of an array indexed by group, each rank filling its own groups, and for
 * any group the earliest message it sent there since the last round, which
 * may still be on its way) with one reduction, which returns once every
 * message sent before it has arrived. Every group then gets its own bound:
 * the earliest time any input could reach it, min over edges u -> g of
 * (min(next_u, bound_u) + promise), a shortest-path fixpoint (Dijkstra
 * over groups, sources weighted by their next time). Each rank then runs
 * its groups' events below their bounds, and the next round begins when
 * none is left. Zero promises do not stall it: a group's own next event
 * never bounds itself. In one process there is no reduction: the round
 * polls until the transport holds nothing back. */

static bool emulation_waiting(kr_model_t *m)
{
    for (uint32_t i = 0; i < m->sim_count; i++)
        if (m->sims[i]->emu && m->groups[m->sims[i]->group].local && kr__emulation_waiting(m->sims[i])) return true;
    return false;
}

/* The least key from which no edge can lower any group's bound any more
 * (window_round): the greatest over groups of the bound less the least
 * promise into the group (a stop lookahead is a promise into every
 * group). A group no edge enters has a final bound from the start; one
 * without a bound yet can still get one from any key. */
static kr_time_t window_settle(const kr_model_t *m, uint32_t G)
{
    kr_time_t settle = 0;
    for (uint32_t v = 0; v < G; v++) {
        kr_time_t least = m->window_least_in[v];
        if (m->has_stop_lookahead && m->stop_lookahead < least) least = m->stop_lookahead;
        if (least == KR_TIME_NEVER) continue;
        kr_time_t bound = m->groups[v].bound;
        if (bound == KR_TIME_NEVER) return KR_TIME_NEVER;
        if (bound - least > settle) settle = bound - least;
    }
    return settle;
}

static kr_status_t window_round(kr_model_t *m, bool *over)
{
    uint32_t G = m->group_count;
    /* next times, the stalled flag, then (over ranks) stop horizons and the
     * least next event, all reduced at once; key and done are the
     * Dijkstra's */
    uint64_t *next = calloc((size_t)G * 4 + 2, sizeof *next);
    if (!next) return kr__fail(KR_ERR_NOMEM, "window: out of memory");
    uint64_t *key = next + 2 * (size_t)G + 2, *done = key + G;
    /* The least time of an event anyone has (the next times without the
     * state events continuous simulators may still find): when a round at
     * a cut changes nothing, the cut is reached once this has passed it,
     * as the null messages' groups are then done (scan_groups). A
     * continuous simulator integrates no further than its stops below its
     * bound, and at a cut its senders may be held there for good: had the
     * cut waited for its possible state events too, the round would have
     * reported a deadlock (a model with the bath in a cycle, whenever a
     * safe point fell where its senders' guarantees stayed below its next
     * stop). The state it has not yet integrated past is in its checkpoint,
     * and whatever it finds there reaches others no earlier than the
     * bounds it gave them. */
    uint64_t *scheduled = next + 2 * (size_t)G + 1;
    bool reduce = m->transport->vtbl->reduce != NULL && m->window_sent_min; /* (set up by kr_model_start) */
    kr_status_t st = KR_OK;
    uint64_t mine[3];
    for (;;) {
        size_t delivered = 0;
        st = m->transport->vtbl->poll(m->transport, deliver, m, &delivered);
        if (st) break;
        mine[0] = m->msgs_sent + m->msgs_delivered;
        mine[1] = 0;
        mine[2] = 0x77696e646f77ULL;
        for (uint32_t i = 0; i < m->sim_count; i++) mine[1] += m->sims[i]->executed;
        *scheduled = KR_TIME_NEVER;
        for (uint32_t g = 0; g < G; g++) {
            kr_time_t t = KR_TIME_NEVER;
            next[g] = m->groups[g].local ? group_next_and_scheduled(m, &m->groups[g], &t) : KR_TIME_NEVER;
            mine[2] = kr__mix64(mine[2] ^ next[g]);   /* every next time, in order */
            if (t < *scheduled) *scheduled = t;
        }
        /* an emulation's event that became due on its clock is a change too */
        for (uint32_t i = 0; i < m->sim_count; i++) {
            kr_sim_t *e = m->sims[i];
            const kr__event_rec_t *h = e->emu && m->groups[e->group].local ? kr__sim_head(e) : NULL;
            if (h) mine[2] = kr__mix64(mine[2] ^ (kr__emulation_ready(e, h->time) ? 0x5245ULL + i : i));
        }
        if (!reduce) {
            /* one process: a test transport may hold messages back */
            if (m->transport->vtbl->in_flight(m->transport) == 0) break;
            continue;
        }
        /* The vote below must cover everything this rank puts into the
         * reduction, not only its own groups' next times: the earliest
         * message sent since the last round (a PAYLOAD, say) may already
         * have been delivered and run there, and then it lowered the last
         * round's minima below any real next time. With mine[] alone, the
         * round after that one saw "nothing changed" on every rank and
         * reported a deadlock although its own minima, without that stale
         * time, give higher bounds and runnable events. */
        for (uint32_t g = 0; g < G; g++) {
            if (m->window_sent_min[g] < next[g]) next[g] = m->window_sent_min[g];
            if (m->window_sent_min[g] < *scheduled) *scheduled = m->window_sent_min[g];
            mine[2] = kr__mix64(mine[2] ^ m->window_sent_min[g]);
            m->window_sent_min[g] = KR_TIME_NEVER;
        }
        /* the last slot: 1 if nothing changed here since the last round (an
         * emulation waiting for its clock or its input will change) */
        next[G] = m->rounds > 0 && memcmp(mine, m->window_last, sizeof mine) == 0 && !emulation_waiting(m);
        /* the horizons of stops made elsewhere arrive before any bound
         * computed below can pass them (stop.c) */
        kr__stop_window_fill(m, next + G + 1);
        st = m->transport->vtbl->reduce(m->transport, next, 2 * (size_t)G + 2);
        if (!st) st = kr__stop_window_apply(m, next + G + 1);
        for (uint32_t g = 0; !st && g < G; g++)
            if (next[g] >= m->groups[g].horizon) next[g] = KR_TIME_NEVER;
        break;
    }
    if (st) {
        free(next);
        return st;
    }
    /* A round after which nothing changed anywhere (no event run, no
     * message sent or delivered, no next time moved) gets the same bounds
     * as the last and would repeat forever: that is a deadlock, seen alike
     * by every rank from the same minimum. */
    bool stalled = m->rounds > 0 && (reduce ? next[G] == 1 : memcmp(mine, m->window_last, sizeof mine) == 0 &&
                                                             !emulation_waiting(m));
    memcpy(m->window_last, mine, sizeof mine);
    m->rounds++;
    /* Dijkstra over groups: key = min(next, bound so far) is what a group
     * may still send from; bound = earliest arrival from other groups.
     * The groups leave a heap in (key, index) order, each once (entries
     * whose key has since been lowered are skipped): with a walk over
     * every group to find the next one, a round cost G^2, and a fan-in of
     * 16,000 rows lines into one simulator took 26 s to time 30, nearly
     * all of it here (0.4 s with the heap). */
    size_t heap_n = 0;
    kr__time_item_t *heap = malloc(((size_t)3 * G + m->edge_count + 1) * sizeof *heap);
    if (!heap) {
        free(next);
        return kr__fail(KR_ERR_NOMEM, "window: out of memory");
    }
    for (uint32_t g = 0; g < G; g++) {
        m->groups[g].bound = KR_TIME_NEVER;
        key[g] = next[g];
        done[g] = 0;
        if (key[g] != KR_TIME_NEVER) kr__time_heap_push(heap, &heap_n, (kr__time_item_t){ key[g], g });
    }
    uint64_t global_min = KR_TIME_NEVER;
    for (uint32_t g = 0; g < G; g++) if (next[g] < global_min) global_min = next[g];
    /* A stop lookahead is an edge of that promise from every group to
     * every other (stop.c). Groups leave the queue in key order, so only
     * the first one's such edges can lower another's bound, and only the
     * second one's the first's. */
    uint32_t first = UINT32_MAX;
    /* Every bound is final once no edge from a group still to leave can
     * lower it: keys leave in order, so once they reach `settle` (at
     * least every group's bound less the least promise into it), the
     * rest of the walk would change nothing. Without this stop a round
     * looked at every edge: with 512 PHOLD simulators, each depending on
     * every other, 261,632 edges a round, where the bounds were all final
     * after two groups (bench/README.md, "Window rounds over many
     * edges"). `settle` is worked out again each time the edges looked at
     * since the last time reach the number of groups, so that it costs
     * no more than the walk. */
    kr_time_t settle = KR_TIME_NEVER;
    size_t looked = 0;
    for (uint32_t it = 0; heap_n;) {
        kr__time_item_t top = kr__time_heap_pop(heap, &heap_n);
        uint32_t u = top.id;
        if (done[u] || top.time != key[u]) continue;
        if (looked >= G) {
            settle = window_settle(m, G);
            m->window_edges += looked;
            looked = 0;
        }
        if (top.time >= settle) break;
        done[u] = 1;
        if (m->has_stop_lookahead && it < 2) {
            looked += G;
            kr_time_t arrive = kr__time_add(key[u], m->stop_lookahead);
            for (uint32_t v = 0; v < G; v++) {
                if (v == u || (it == 1 && v != first) || arrive >= m->groups[v].bound) continue;
                m->groups[v].bound = arrive;
                m->groups[v].bound_from = m->groups[u].members[0];
                if (!done[v] && arrive < key[v]) {
                    key[v] = arrive;
                    kr__time_heap_push(heap, &heap_n, (kr__time_item_t){ arrive, v });
                }
            }
            if (it == 0) first = u;
        }
        it++;
        kr__group_t *gu = &m->groups[u];
        for (uint32_t k = 0; k < gu->count; k++) {
            kr_sim_t *s = m->sims[gu->members[k]];
            looked += s->out_count;
            for (uint32_t e = 0; e < s->out_count; e++) {
                kr__edge_t *ed = &m->edges[s->out_edges[e]];
                if (ed->internal) continue;
                uint32_t v = m->sims[ed->to]->group;
                kr_time_t arrive = kr__time_add(key[u], ed->promise);
                if (arrive < m->groups[v].bound) {
                    m->groups[v].bound = arrive;
                    m->groups[v].bound_from = ed->from;
                    if (!done[v] && arrive < key[v]) {
                        key[v] = arrive;
                        kr__time_heap_push(heap, &heap_n, (kr__time_item_t){ arrive, v });
                    }
                }
            }
        }
    }
    free(heap);
    m->window_edges += looked;
    for (uint32_t g = 0; g < G; g++) m->groups[g].bound = clamp_end(m, m->groups[g].bound);
    kr_time_t limit = kr__run_limit(m);
    *over = global_min > limit || (stalled && limit < m->end_time && *scheduled > limit);
    free(next);
    if (stalled && !*over) return report_deadlock(m);
    return KR_OK;
}

/* ---- one step ----
 *
 * kr__coord_step does one unit of work in three phases:
 *   (a) deliver and propagate: a window round if one is due, the messages
 *       that arrived, and the guarantees that then grow, to a fixpoint;
 *   (b) pick the runnable group with the lowest head and run it, noting on
 *       the way which groups are blocked and asking for what they need;
 *   (c) with nothing runnable here: idle, settle with the other processes,
 *       or finish.
 * Each phase either hands on to the next or ends the step. */

/* Where a phase leaves the step: ended, with kr__coord_step's answer
 * (STEP_END: the run is over, finished or failed with *status; STEP_MORE:
 * call again), or handed on to the next phase. */
typedef enum step { STEP_END, STEP_MORE, STEP_NEXT } step_t;

/* Every failed step ends here: its status goes to *status, its message to
 * kr_last_error(). With recorded_first, the failure the run recorded
 * (m->failure: a handler's, a delivery's, a deadlock found by the window
 * round) is reported, if there is one; otherwise `st`, as the failing call
 * reported it. (A failed send records itself too, naming the edge, and a
 * deadlock report records a shorter copy of its message; the caller gets
 * the call's own words from both.) */
static step_t step_failed(kr_model_t *m, kr_status_t st, bool recorded_first, kr_status_t *status)
{
    if (recorded_first && m->failure) *status = kr__fail(m->failure, "%s", m->failure_msg);
    else *status = kr__fail(st, "%s", kr_last_error());
    return STEP_END;
}

void kr__model_fail_interrupted(kr_model_t *m)
{
    kr_time_t t = KR_TIME_NEVER;
    for (uint32_t i = 0; i < m->sim_count; i++)
        if (m->sims[i]->local && m->sims[i]->now < t) t = m->sims[i]->now;
    kr__model_fail(m, KR_ERR_INTERRUPTED, "run interrupted by %s at model time %.9g",
                   kr__signal_caught == SIGINT ? "SIGINT" : "SIGTERM",
                   t == KR_TIME_NEVER ? 0.0 : kr_time_to_units(t, m->precision));
}

/* A signal or an injected allocation failure (base/fault.h), noticed once
 * per step: the run stops here, at a safe point, as if a handler had
 * failed. A kind that failed on the allocation has named itself already
 * (the first failure wins); otherwise the simulator of the group that ran
 * last is named. */
static step_t attend(kr_model_t *m, kr_status_t *status)
{
    if (kr__signal_caught) {
        kr__model_fail_interrupted(m);
    } else if (m->last_ran < m->group_count) {
        kr__group_t *g = &m->groups[m->last_ran];
        kr_sim_t *s = m->sims[g->members[0]];
        for (uint32_t i = 1; i < g->count; i++)
            if (m->sims[g->members[i]]->now > s->now) s = m->sims[g->members[i]];
        kr__model_fail(m, KR_ERR_NOMEM, "simulator '%s', time %.9g: out of memory in its events up to now "
                       "(allocation %llu of the run failed: KAIROS_FAIL_ALLOC)", s->name,
                       kr_time_to_units(s->now, m->precision), (unsigned long long)kr__fault_at);
    } else {
        kr__model_fail(m, KR_ERR_NOMEM, "out of memory (allocation %llu of the run failed: KAIROS_FAIL_ALLOC)",
                       (unsigned long long)kr__fault_at);
    }
    return step_failed(m, KR_OK, true, status);
}

/* Every process ran every event before the cut and nothing runs on until
 * the caller goes on: what is still on its way is delivered now, so that
 * sync-events in flight wait in their targets' queues, where a checkpoint
 * saves them (docs/checkpoint.md, "The cut"). */
static step_t reach_cut(kr_model_t *m, kr_status_t *status)
{
    size_t delivered;
    do {
        delivered = 0;
        kr_status_t st = m->transport->vtbl->poll(m->transport, deliver, m, &delivered);
        if (st) return step_failed(m, st, true, status);
    } while (delivered || m->transport->vtbl->in_flight(m->transport));
    for (uint32_t i = 0; i < m->group_count; i++) update_bound(m, &m->groups[i]);
    forget_ready(m);
    forget_touched(m);
    /* the next round follows a pause, not a stall: nothing changed since
     * the last one, yet the run moves on past the cut */
    memset(m->window_last, 0, sizeof m->window_last);
    m->at_cut = true;
    return STEP_END;
}

/* Direct guarantees raised bounds: pass the growth on, to a fixpoint
 * (guarantees only grow, and each is at most a member's next time plus a
 * promise). */
static kr_status_t propagate(kr_model_t *m)
{
    /* (a list, not a walk over every group for the few raised: with
     * thousands of groups on one rank the walk took most of each step) */
    while (m->raised_count) {
        kr__group_t *g = &m->groups[m->raised[--m->raised_count]];
        g->raised = false;
        kr_status_t st = send_guarantees(m, g, true);
        if (st) return st;
    }
    return KR_OK;
}

/* The run reached its end (either algorithm): the emulations' logs say so. */
static step_t run_over(kr_model_t *m)
{
    m->running = false;
    m->finished = true;
    for (uint32_t i = 0; i < m->sim_count; i++)
        if (m->sims[i]->emu) kr__emulation_end(m->sims[i]);
    return STEP_END;
}

/* The runnable groups among those a delivery touched go first on the
 * scan's list, lowest head first, where they run before the list's older
 * entries (a guarantee from another process may be what a whole rank
 * waits for), while steps are left on it: only ready_steps more run
 * before the next scan, which finds the others. With no steps left a scan
 * comes next anyway; with no room, the list is dropped for that scan. A
 * group may stand on the list twice (it is checked again before it runs).
 * Clears the touched groups' marks. */
static void list_touched(kr_model_t *m)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < m->touched_group_count; k++) {
        uint32_t id = m->touched_groups[k];
        kr__group_t *g = &m->groups[id];
        m->group_touched[id] = false;
        kr_sim_t *s;
        kr__event_rec_t *h = m->ready_steps ? group_head(m, g, &s) : NULL;
        if (h && runnable(m, g, s, h)) m->touched_groups[n++] = id;
    }
    m->touched_group_count = 0;
    if (!n) return;
    uint32_t left = m->ready_count - m->ready_next;
    if (n > m->ready_next) {
        /* (the steps left may each add one more: keep_if_runnable) */
        if (n + left + m->ready_steps > m->ready_cap) {
            forget_ready(m);
            return;
        }
        memmove(m->ready + n, m->ready + m->ready_next, left * sizeof *m->ready);
        m->ready_next = n;
        m->ready_count = n + left;
    }
    uint64_t now = kr__monotonic_ns();
    kr__time_item_t *at = m->ready + (m->ready_next -= n);
    for (uint32_t k = 0; k < n; k++) {
        kr__group_t *g = &m->groups[m->touched_groups[k]];
        kr_sim_t *s;
        at[k] = (kr__time_item_t){ group_head(m, g, &s)->time, m->touched_groups[k] };
        note_blocked(m, g, false, now); /* (its span closes as a scan's would) */
    }
    if (n > 1) qsort(at, n, sizeof *at, ready_order);
}

/* After a poll that delivered (or a stop that came): see "What a delivery
 * touched". */
static kr_status_t take_deliveries(kr_model_t *m)
{
    if (m->touched_all || !m->touched) {
        forget_touched(m);
        forget_ready(m);
        for (uint32_t i = 0; i < m->group_count; i++) update_bound(m, &m->groups[i]);
        m->groups_scanned += m->group_count;
        return send_all_guarantees(m);
    }
    for (uint32_t k = 0; k < m->touched_count; k++) {
        kr__edge_t *e = &m->edges[m->touched[k]];
        e->touched = false;
        uint32_t to = m->sims[e->to]->group;
        kr__bound_tree_t *t = bound_tree(m, &m->groups[to]);
        if (t) bound_tree_set(t, e->in_pos, e->guarantee);
        touch_group(m, to);
        touch_group(m, m->sims[e->from]->group); /* (a request: the sender's) */
    }
    m->touched_count = 0;
    m->groups_scanned += m->touched_group_count;
    for (uint32_t k = 0; k < m->touched_group_count; k++) {
        kr__group_t *g = &m->groups[m->touched_groups[k]];
        kr__bound_tree_t *t = bound_tree(m, g);
        if (t) g->bound = clamp_end(m, t->node[1]);
        else update_bound(m, g);
    }
    for (uint32_t k = 0; k < m->touched_group_count; k++) {
        kr_status_t st = send_guarantees(m, &m->groups[m->touched_groups[k]], true);
        if (st) return st;
    }
    list_touched(m);
    return KR_OK;
}

/* Phase (a). A failure recorded since the last step (a handler's after
 * its event, or outside a run) ends the run before anything moves. */
static step_t deliver_and_propagate(kr_model_t *m, kr_status_t *status)
{
    if (m->failure) return step_failed(m, KR_OK, true, status);
    if (kr__signal_caught | kr__fault_fired) return attend(m, status);
    kr_status_t st;
    if (m->sync == KR_SYNC_WINDOW && !m->window_open) {
        bool over = false;
        if ((st = window_round(m, &over))) return step_failed(m, st, true, status);
        if (over) {
            if (kr__run_limit(m) < m->end_time) return reach_cut(m, status);
            return run_over(m);
        }
        m->window_open = true;
    }
    size_t delivered = 0;
    if ((st = m->transport->vtbl->poll(m->transport, deliver, m, &delivered))) return step_failed(m, st, true, status);
    if (m->stop_unsent_count && (st = kr__stop_flush(m))) return step_failed(m, st, false, status);
    if ((delivered || m->touched_all) && (st = take_deliveries(m))) return step_failed(m, st, false, status);
    if ((st = propagate(m))) return step_failed(m, st, false, status);
    /* An emulation's guarantees follow its clock (and are freed from it
     * when its input ends): they grow without an event of its own. */
    bool grew = false;
    for (uint32_t i = 0; i < m->sim_count && m->has_emulation; i++) {
        kr_sim_t *s = m->sims[i];
        if (!s->emu) continue;
        kr__emulation_poll(s);
        if (kr__emulation_take_news(s)) {
            if ((st = send_guarantees(m, &m->groups[s->group], false))) return step_failed(m, st, false, status);
            grew = true;
        }
    }
    if (grew && (st = propagate(m))) return step_failed(m, st, false, status);
    return STEP_NEXT;
}

/* What phase (b)'s look over the groups found, for phase (c). */
typedef struct group_scan {
    kr__group_t *best;          /* the runnable group with the lowest head; NULL: none */
    bool waiting;               /* an emulation member waits for its clock or input */
    bool progressed;            /* a continuous member integrated ahead */
    uint64_t now;               /* when the look began, for the blocked spans */
} group_scan_t;

/* Finds the runnable group with the lowest head. The others are blocked
 * (their spans open), done, or ask their senders for what they need. */
static kr_status_t scan_groups(kr_model_t *m, group_scan_t *sc)
{
    kr__event_rec_t *best_head = NULL;
    kr_time_t limit = kr__run_limit(m);
    *sc = (group_scan_t){ .now = kr__monotonic_ns() };
    forget_ready(m);
    for (uint32_t i = 0; i < m->group_count; i++) {
        kr__group_t *g = &m->groups[i];
        if (!g->local) continue;
        m->groups_scanned++;
        kr_sim_t *s;
        kr__event_rec_t *h = group_head(m, g, &s);
        if (runnable(m, g, s, h)) {
            note_blocked(m, g, false, sc->now);
            if (m->ready_keep) m->ready[m->ready_count++] = (kr__time_item_t){ h->time, i };
            if (!sc->best || kr__rec_less(h, best_head)) {
                sc->best = g;
                best_head = h;
            }
            continue;
        }
        note_blocked(m, g, h && h->time <= limit && h->time < g->horizon, sc->now);
        /* Continuous members with state events integrate ahead while they
         * wait, so a cycle of dependencies cannot stall on them: to the
         * last of their points below the bound, never past the group's
         * next event (nor the end), where a state event found on the way
         * becomes that event (hence the head looked up again). */
        bool progressed = false;
        if (m->has_continuous) {
            kr_time_t to = h && h->time < m->end_time ? h->time : m->end_time;
            /* Below a stop's horizon nothing more arrives: the members go
             * to the horizon itself, so that a crossing before it is found
             * (the last point below it left a possible crossing after it
             * for good, which the window read as a deadlock). Nothing at
             * or past the horizon runs. */
            kr_time_t limit_to = g->bound < g->horizon ? g->bound
                                 : g->horizon == KR_TIME_NEVER ? KR_TIME_NEVER : kr__time_add(g->horizon, 1);
            advance_continuous(m, g, to, limit_to, true, &progressed);
            if (m->failure) return KR_OK;
        }
        if (progressed) {
            h = group_head(m, g, &s);
            sc->progressed = true;
            /* What it may now guarantee goes at once: when another group
             * ran in this step, the step's end sent only that group's, and
             * the next scan, finding nothing more to integrate, left this
             * one's unsent (two baths feeding each other deadlocked on one
             * rank). */
            kr_status_t st = send_guarantees(m, g, false);
            if (st) return st;
        }
        bool emu_waiting = false;
        for (uint32_t k = 0; k < g->count; k++)
            if (m->sims[g->members[k]]->emu && kr__emulation_waiting(m->sims[g->members[k]])) emu_waiting = true;
        /* done: nothing left to run before the end (or its stop horizon),
         * and nothing can still arrive before it */
        g->done = (!h || h->time > limit || h->time >= g->horizon) &&
                  (g->bound > limit || g->bound >= g->horizon) && !emu_waiting;
        if (emu_waiting) sc->waiting = true;
        if (m->sync == KR_SYNC_NULL_MESSAGE && !g->done) {
            kr_status_t st = ask_for_guarantees(m, g, h);
            if (st) return st;
        }
    }
    return KR_OK;
}

/* Phase (b): the group with the lowest runnable head goes next (or,
 * after a scan that kept some, the next runnable one it kept: "The groups
 * a scan found runnable"), for at most STEP_EVENTS events, and then sends
 * what it may now guarantee. In a
 * window round every other runnable group follows in the same step, in
 * group order: the round's bounds hold until the next round, and nothing
 * sent during it can arrive below them, so the order of the groups changes
 * nothing, while one step per group, each scanning every group, cost G^2
 * a round (bench/README.md, "The algorithm chosen by auto"). */
static step_t run_lowest_group(kr_model_t *m, group_scan_t *sc, kr_status_t *status)
{
    kr_status_t st;
    kr__group_t *g = m->ready_steps ? next_ready(m) : NULL;
    if (g) {
        /* (runnable at the scan, so its blocked span is closed) */
        *sc = (group_scan_t){ .best = g };
        m->ready_steps--;
    } else {
        if ((st = scan_groups(m, sc))) return step_failed(m, st, false, status);
        if (m->ready_keep) keep_ready(m, sc->best);
        if (!sc->best) return STEP_NEXT;
        g = sc->best;
    }
    m->last_ran = (uint32_t)(g - m->groups);
    run_group(m, g, STEP_EVENTS);
    if (m->failure) return step_failed(m, KR_OK, true, status);
    if ((st = send_guarantees(m, g, false))) return step_failed(m, st, false, status);
    if (m->ready_keep) keep_if_runnable(m, g);
    if (m->sync != KR_SYNC_WINDOW) return STEP_MORE;
    for (uint32_t i = 0; i < m->group_count; i++) {
        kr__group_t *o = &m->groups[i];
        if (o == sc->best || !o->local) continue;
        kr_sim_t *s;
        kr__event_rec_t *h = group_head(m, o, &s);
        if (!runnable(m, o, s, h)) continue;
        note_blocked(m, o, false, sc->now); /* (in case it was not runnable at the scan) */
        m->last_ran = i;
        run_group(m, o, STEP_EVENTS);
        if (m->failure) return step_failed(m, KR_OK, true, status);
    }
    return STEP_MORE;
}

/* An emulation replaying a log must have used it up by the end: lines
 * left over mean the log came from another run. */
static kr_status_t check_replays(kr_model_t *m)
{
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_time_t first = 0;
        size_t left = m->sims[i]->emu ? kr__emulation_leftover(m->sims[i], &first) : 0;
        if (left) {
            /* (a log of a longer run, or of another one) */
            char why[160];
            if (first > m->end_time)
                snprintf(why, sizeof why, "the first at %.15g, after this run's end time %.15g: replay it up to the "
                         "live run's end time", kr_time_to_units(first, m->precision),
                         kr_time_to_units(m->end_time, m->precision));
            else
                snprintf(why, sizeof why, "a log from another model or seed?");
            kr_status_t st = kr__fail(KR_ERR_CORRUPT, "emulation '%s': the replay log has %zu line%s the run never "
                                      "reached (%s)", m->sims[i]->name, left, left == 1 ? "" : "s", why);
            kr__model_fail(m, st, "%s", kr_last_error());
            return st;
        }
        if (m->sims[i]->emu && kr__emulation_replay_unended(m->sims[i]))
            kr_log(m->sims[i], KR_LOG_WARN, "the replayed log has no end record: the live run it records stopped "
                   "before its end (interrupted, or failed); from its last record on, this run went on without its "
                   "input");
    }
    return KR_OK;
}

/* At a cut, a group with no event scheduled up to it has reached it, even
 * while its bound is still below the cut: done here means so in a run in
 * which nothing moves any more (this process idle, and over processes
 * settle's quiet rounds: none did anything between two of them, nothing
 * in flight), where the only events that could still come before the cut
 * are the state events of continuous simulators that wait, at their
 * integration stops, for guarantees that a held event keeps below them
 * (a cycle A -> R -> B -> A with promises 0, 3, 0 between two such
 * simulators deadlocked at the first cut, every time on one rank). They
 * come after the cut, as they would have without it; the window's rounds
 * do the same (window_round). */
static bool at_cut(kr_model_t *m, kr__group_t *g)
{
    kr_sim_t *s;
    const kr__event_rec_t *h = group_head(m, g, &s);
    return !h || h->time > kr__run_limit(m) || h->time >= g->horizon;
}

/* Phase (c): nothing is runnable here. */
static step_t idle_settle_finish(kr_model_t *m, const group_scan_t *sc, kr_status_t *status)
{
    if (m->failure) return step_failed(m, KR_OK, true, status);
    if (m->sync == KR_SYNC_WINDOW) {
        /* A continuous member that integrated ahead in the scan may have
         * found a crossing below this round's bound: scan again. (The next
         * round would see the same next times, its state's time + 1 tick
         * before and the crossing's now, and call it a deadlock.) */
        if (sc->progressed) return STEP_MORE;
        /* nothing left below this round's bounds: the next round, once an
         * emulation waiting for its clock or input has something */
        if (sc->waiting) kr__emulation_wait(m);
        m->window_open = false;
        return STEP_MORE;
    }
    kr_status_t st;
    if (sc->progressed) {
        if ((st = send_all_guarantees(m))) return step_failed(m, st, false, status);
        return STEP_MORE;
    }
    bool cut = kr__run_limit(m) < m->end_time;
    bool local_done = true;
    for (uint32_t i = 0; i < m->group_count; i++)
        local_done &= !m->groups[i].local || m->groups[i].done || (cut && !sc->waiting && at_cut(m, &m->groups[i]));
    local_done = local_done && m->transport->vtbl->in_flight(m->transport) == 0;
    if (local_done && !cut && (st = check_replays(m))) return step_failed(m, st, false, status);
    /* Over ranks, the transport decides when the run is over: every rank
     * idle, nothing in flight, and either every rank done or not (a
     * deadlock, which one rank describes). One process decides alone. */
    bool idle = !sc->waiting && m->transport->vtbl->in_flight(m->transport) == 0;
    if (m->transport->vtbl->settle) {
        kr__settle_t verdict = KR__SETTLE_RUNNING;
        if ((st = m->transport->vtbl->settle(m->transport, idle, local_done, &verdict)))
            return step_failed(m, st, false, status);
        if (verdict == KR__SETTLE_DEADLOCK) return step_failed(m, report_deadlock(m), false, status);
        local_done = verdict == KR__SETTLE_FINISHED;
    }
    if (local_done) {
        for (uint32_t i = 0; i < m->group_count; i++) note_blocked(m, &m->groups[i], false, sc->now);
        if (cut) return reach_cut(m, status);
        return run_over(m);
    }
    if (!idle && !sc->waiting) return STEP_MORE;
    if (sc->waiting) {
        kr__emulation_wait(m);
        if ((st = send_all_guarantees(m))) return step_failed(m, st, false, status);
        return STEP_MORE;
    }
    /* Other ranks may still send (or still run): wait for them, without
     * spinning. */
    if (m->transport->vtbl->wait) {
        m->transport->vtbl->wait(m->transport);
        return STEP_MORE;
    }
    return step_failed(m, report_deadlock(m), false, status);
}

/* A run whose model time stands still while events keep running (an event
 * that schedules another with no delay, every time) looks hung: no safe
 * point comes, so no progress line and no checkpoint either. Every
 * STALL_STEPS steps the coordinator looks at each local simulator; one
 * that has run events for STALL_SECONDS of wall time without its time
 * moving is named once, as a warning. The run goes on: such a burst may
 * still end, and SIGINT or SIGTERM stop it if not. */
#define STALL_STEPS 1024u
#define STALL_SECONDS 10u

static void watch_stalls(kr_model_t *m)
{
    uint64_t now = kr__monotonic_ns();
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        if (!s->local || s->stall_told) continue;
        if (!s->stalled_since || s->executed == s->watch_executed || s->now != s->watch_now) {
            /* first look, idle since the last, or its time moved: watch afresh */
            s->watch_now = s->now;
            s->stalled_since = now;
            s->stalled_from = s->executed;
        } else if (now - s->stalled_since >= STALL_SECONDS * 1000000000ull) {
            s->stall_told = true;
            kr_log(s, KR_LOG_WARN, "model time has not moved for %u s of wall time, over %llu events here (does "
                   "an event schedule another with no delay every time?)", STALL_SECONDS,
                   (unsigned long long)(s->executed - s->stalled_from));
        }
        s->watch_executed = s->executed;
    }
}

bool kr__coord_step(kr_model_t *m, kr_status_t *status)
{
    *status = KR_OK;
    m->steps++;
    if (++m->steps_unwatched == STALL_STEPS) {
        m->steps_unwatched = 0;
        watch_stalls(m);
    }
    group_scan_t sc;
    step_t r = deliver_and_propagate(m, status);
    if (r == STEP_NEXT) r = run_lowest_group(m, &sc, status);
    if (r == STEP_NEXT) r = idle_settle_finish(m, &sc, status);
    return r == STEP_MORE;
}

kr_status_t kr__coord_run_until(kr_model_t *m, kr_time_t cut, bool *at_cut)
{
    *at_cut = false;
    kr_status_t st = KR_OK;
    if (!m->prepared) {
        m->prepared = true;
        st = kr__coord_prepare(m);
    }
    m->cut = cut;
    forget_ready(m);
    if (!st)
        while (kr__coord_step(m, &st)) {}
    m->cut = 0;
    if (!st && m->at_cut) {
        m->at_cut = false;
        *at_cut = true;
        if (m->transport->vtbl->resume) m->transport->vtbl->resume(m->transport);
        return KR_OK;
    }
    m->running = false;
    m->finished = true;
    /* Every other rank must hear of a failure here (a peer's failure it
     * already knows: abort is then a no-op). */
    if (st && m->transport && m->transport->vtbl->abort) m->transport->vtbl->abort(m->transport, st, kr_last_error());
    return st;
}

kr_status_t kr__coord_run(kr_model_t *m)
{
    bool at_cut;
    return kr__coord_run_until(m, 0, &at_cut);
}
