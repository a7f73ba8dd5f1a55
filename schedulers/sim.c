/* One simulator: its event records and queue, local scheduling, cancel and
 * delay, and running the next event. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/rng.h"
#include "base/error.h"
#include "base/fault.h"
#include "base/grow.h"
#include "base/memory.h"
#include "schedulers/render.h"
#include "schedulers/model_private.h"

/* Queue words: priority (sign flipped so it compares unsigned) and source,
 * then sequence and phase. */
static inline kr__qentry_t entry_of(const kr_sim_t *s, const kr__event_rec_t *r, uint32_t slot)
{
    kr__qentry_t q;
    q.time = r->time;
    q.hi = ((uint64_t)((uint32_t)r->priority ^ 0x80000000u) << 32) | r->source;
    q.lo = (r->sequence << 1) | r->phase;
    q.slot = slot;
    q.aux = s->versions[slot];
    return q;
}

static uint64_t source_hash(uint32_t source, uint64_t sequence)
{
    return kr__mix64(sequence * 0x100000001b3ULL ^ ((uint64_t)source << 48 | source));
}

int kr_event_key_compare(const kr_event_key_t *a, const kr_event_key_t *b)
{
    if (a->time != b->time) return a->time < b->time ? -1 : 1;
    if (a->priority != b->priority) return a->priority < b->priority ? -1 : 1;
    if (a->source != b->source) return a->source < b->source ? -1 : 1;
    if (a->sequence != b->sequence) return a->sequence < b->sequence ? -1 : 1;
    if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
    return 0;
}

kr_status_t kr__sim_init(kr_sim_t *s)
{
    s->free_head = UINT32_MAX;
    s->extra_free = UINT32_MAX;
    kr__hmap_init(&s->by_source);
    return kr__equeue_init(&s->queue);
}

static void extra_release(kr_sim_t *s, uint32_t extra)
{
    if (!extra) return;
    kr__rec_extra_t *x = &s->extras[extra - 1];
    kr_buf_fini(&x->pack);
    free(x->roots);
    free(x->text);
    *x = (kr__rec_extra_t){ .next_free = s->extra_free };
    s->extra_free = extra - 1;
}

/* Frees what the record owns (heap payload, rare fields). */
static void rec_release(kr_sim_t *s, kr__event_rec_t *r)
{
    if (r->flags & KR__EVREC_HEAP) free(r->data.heap);
    r->flags &= (uint8_t)~KR__EVREC_HEAP;
    extra_release(s, r->extra);
    r->extra = 0;
}

void kr__sim_fini(kr_sim_t *s)
{
    if (s->world) kr_world_destroy(s->world);
    if (s->rng) kr_rng_destroy(s->rng);
    for (uint32_t i = 0; i < s->rec_count; i++)
        if (s->recs[i].state == KR__EVREC_PENDING) rec_release(s, &s->recs[i]);
    free(s->recs);
    free(s->versions);
    free(s->extras);
    kr__equeue_fini(&s->queue);
    kr__hmap_fini(&s->by_source);
    free(s->outgoing);
    kr__continuous_fini(s);
    kr__emulation_fini(s);
    kr__render_free(s->render);
    free(s->out_edges);
    free(s->in_edges);
    free(s->moved);
    free(s->contexts);
    free(s->receives);
    free(s->name);
}

kr__sim_footprint_t kr__sim_footprint(const kr_sim_t *s)
{
    kr__sim_footprint_t f = { 0 };
    for (uint32_t i = 0; i < s->rec_count; i++) {
        const kr__event_rec_t *r = &s->recs[i];
        if (r->state != KR__EVREC_PENDING) continue;
        f.pending++;
        if (r->flags & KR__EVREC_HEAP) f.payload_bytes += r->data_size;
        if (r->extra) {
            const kr__rec_extra_t *x = &s->extras[r->extra - 1];
            f.payload_bytes += x->pack.cap + (x->roots ? x->root_count * sizeof *x->roots : 0) + (x->text ? strlen(x->text) + 1 : 0);
        }
    }
    f.event_bytes = (size_t)s->rec_cap * (sizeof *s->recs + sizeof *s->versions) + kr__equeue_bytes(&s->queue) +
                    (size_t)s->extra_cap * sizeof *s->extras + (size_t)s->by_source.capacity * sizeof(kr__hmap_slot_t) +
                    f.payload_bytes;
    f.other_bytes = sizeof *s + (size_t)s->outgoing_cap * sizeof *s->outgoing + s->moved_cap * sizeof *s->moved +
                    ((size_t)s->out_count + s->in_count) * sizeof(uint32_t);
    return f;
}

/* Doubles the record pool, keeping it on cache-line boundaries. Both
 * arrays come from kr__array_grow, which advises huge pages: records are
 * read in time order, which is random order in memory, and with 4 KiB
 * pages a pool of millions of events missed the TLB on nearly every
 * event (PHOLD at 2^18 LPs, bench/README.md). */
static kr_status_t grow_recs(kr_sim_t *s)
{
    uint32_t cap = s->rec_cap ? s->rec_cap * 2 : 64;
    if (cap <= s->rec_cap) return kr__fail(KR_ERR_NOMEM, "simulator '%s': too many pending events", s->name);
    size_t count = s->rec_count;
    kr__event_rec_t *recs = kr__array_grow(NULL, 0, (size_t)cap * sizeof *recs, 64);
    uint32_t *versions = recs ? kr__array_grow(NULL, 0, (size_t)cap * sizeof *versions, 64) : NULL;
    if (!versions) {
        free(recs);
        return kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory for events", s->name);
    }
    if (count) {
        memcpy(recs, s->recs, count * sizeof *recs);
        memcpy(versions, s->versions, count * sizeof *versions);
    }
    free(s->recs);
    free(s->versions);
    s->recs = recs;
    s->versions = versions;
    s->rec_cap = cap;
    return KR_OK;
}

uint32_t kr__rec_alloc(kr_sim_t *s)
{
    uint32_t slot;
    if (s->free_head != UINT32_MAX) {
        slot = s->free_head;
        s->free_head = s->recs[slot].data.next_free;
    } else {
        if (s->rec_count == s->rec_cap && grow_recs(s)) return UINT32_MAX;
        slot = s->rec_count++;
        s->versions[slot] = 0;
    }
    kr__event_rec_t *r = &s->recs[slot];
    memset(r, 0, offsetof(kr__event_rec_t, data));
    r->state = KR__EVREC_PENDING;
    return slot;
}

static void rec_unindex(kr_sim_t *s, uint32_t slot)
{
    kr__event_rec_t *r = &s->recs[slot];
    if (!(r->flags & KR__EVREC_INDEXED)) return;
    kr__hmap_remove(&s->by_source, source_hash(r->source, r->sequence), slot);
    r->flags &= (uint8_t)~KR__EVREC_INDEXED;
}

static kr_status_t rec_index(kr_sim_t *s, uint32_t slot)
{
    kr__event_rec_t *r = &s->recs[slot];
    kr_status_t st = kr__hmap_insert(&s->by_source, source_hash(r->source, r->sequence), slot);
    if (!st) r->flags |= KR__EVREC_INDEXED;
    return st;
}

/* Returns the slot to the pool; any entry still queued for it is stale. */
static void rec_free_slot(kr_sim_t *s, uint32_t slot)
{
    kr__event_rec_t *r = &s->recs[slot];
    rec_unindex(s, slot);
    r->state = KR__EVREC_FREE;
    s->versions[slot]++;
    r->data.next_free = s->free_head;
    s->free_head = slot;
}

void kr__rec_free(kr_sim_t *s, uint32_t slot)
{
    rec_release(s, &s->recs[slot]);
    rec_free_slot(s, slot);
}

kr_status_t kr__rec_set_data(kr__event_rec_t *r, const void *data, size_t size)
{
    if (r->flags & KR__EVREC_HEAP) free(r->data.heap);
    r->flags &= (uint8_t)~KR__EVREC_HEAP;
    r->data_size = (uint32_t)size;
    if (size > KR__INLINE_DATA) {
        if (kr__fault_alloc() || !(r->data.heap = malloc(size))) return kr__fail(KR_ERR_NOMEM, "out of memory for an event payload");
        r->flags |= KR__EVREC_HEAP;
    }
    void *dst = kr__rec_data(r);
    if (data && size) memcpy(dst, data, size);
    else if (size) memset(dst, 0, size);
    return KR_OK;
}

kr__rec_extra_t *kr__rec_extra(kr_sim_t *s, kr__event_rec_t *r)
{
    if (r->extra) return &s->extras[r->extra - 1];
    uint32_t i;
    if (s->extra_free != UINT32_MAX) {
        i = s->extra_free;
        s->extra_free = s->extras[i].next_free;
    } else {
        if (s->extra_count == s->extra_cap &&
            KR__GROW_U32(s->extras, s->extra_cap, s->extra_count + 1, 16, NULL)) {
            kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory for events", s->name);
            return NULL;
        }
        i = s->extra_count++;
    }
    s->extras[i] = (kr__rec_extra_t){ .next_free = UINT32_MAX };
    kr_buf_init(&s->extras[i].pack);
    r->extra = i + 1;
    return &s->extras[i];
}

kr_status_t kr__rec_enqueue(kr_sim_t *s, uint32_t slot)
{
    kr__event_rec_t *r = &s->recs[slot];
    kr__qentry_t q = entry_of(s, r, slot);
    kr_status_t st = kr__equeue_push(&s->queue, &q);
    if (st) return st;
    if (r->kind == KR__EV_TARGET && ((r->flags & KR__EVREC_AWAITING) || s->index_targets)) {
        st = rec_index(s, slot);
        if (st) {
            s->versions[slot]++;
            s->stale_entries++;
        }
    }
    return st;
}

/* From now on every target record is indexed, starting with those pending. */
static kr_status_t index_all_targets(kr_sim_t *s)
{
    for (uint32_t i = 0; i < s->rec_count; i++) {
        kr__event_rec_t *r = &s->recs[i];
        if (r->state != KR__EVREC_PENDING || r->kind != KR__EV_TARGET || (r->flags & KR__EVREC_INDEXED)) continue;
        kr_status_t st = rec_index(s, i);
        if (st) return st;
    }
    s->index_targets = true;
    return KR_OK;
}

uint32_t kr__rec_find(kr_sim_t *s, uint32_t source, uint64_t sequence, uint32_t handle)
{
    if (handle) {
        uint32_t slot = handle - 1;
        if (slot < s->rec_count) {
            const kr__event_rec_t *r = &s->recs[slot];
            if (r->state == KR__EVREC_PENDING && r->source == source && r->sequence == sequence) return slot;
        }
        return UINT32_MAX;
    }
    if (source != s->id && (s->index_targets || index_all_targets(s) == KR_OK)) {
        uint32_t cursor = 0, slot;
        while ((slot = kr__hmap_next(&s->by_source, source_hash(source, sequence), &cursor)) != KR__HMAP_EMPTY) {
            const kr__event_rec_t *r = &s->recs[slot];
            if (r->state == KR__EVREC_PENDING && r->source == source && r->sequence == sequence) return slot;
        }
        return UINT32_MAX;
    }
    /* A key built by hand: search. */
    for (uint32_t slot = 0; slot < s->rec_count; slot++) {
        const kr__event_rec_t *r = &s->recs[slot];
        if (r->state == KR__EVREC_PENDING && r->source == source && r->sequence == sequence) return slot;
    }
    return UINT32_MAX;
}

static bool entry_is_live(void *arg, const kr__qentry_t *q)
{
    const kr_sim_t *s = arg;
    return s->versions[q->slot] == q->aux;
}

/* Drops stale entries in bulk once they are the bulk of the queue, so a
 * model that delays one event many times does not grow the queue. */
static void maybe_purge(kr_sim_t *s)
{
    if (s->stale_entries > 1024 && s->stale_entries > kr__equeue_size(&s->queue) / 2) {
        if (kr__equeue_filter(&s->queue, entry_is_live, s) == KR_OK) s->stale_entries = 0;
    }
}

kr__event_rec_t *kr__sim_head_slow(kr_sim_t *s)
{
    const kr__qentry_t *q;
    while ((q = kr__equeue_peek(&s->queue))) {
        if (s->stale_entries == 0 || entry_is_live(s, q)) return &s->recs[q->slot];
        kr__qentry_t dropped;
        kr__equeue_pop(&s->queue, &dropped);
        s->stale_entries--;
    }
    return NULL;
}

kr_time_t kr__sim_next_scheduled(kr_sim_t *s)
{
    kr__event_rec_t *h = kr__sim_head(s);
    kr_time_t t = h ? h->time : KR_TIME_NEVER;
    if (s->executing && s->current.time < t) t = s->current.time;
    if (s->emu) t = kr__emulation_next(s, t);
    return t;
}

kr_time_t kr__sim_next_time(kr_sim_t *s)
{
    kr_time_t t = kr__sim_next_scheduled(s);
    return s->cont ? kr__continuous_next(s, t) : t;
}

kr_status_t kr__sim_schedule_kind(kr_sim_t *s, kr__event_kind_t kind, kr_priority_t prio, kr_time_t t,
                                  kr_event_type_t type, const void *data, size_t size, kr_event_key_t *key)
{
    uint32_t slot = kr__rec_alloc(s);
    if (slot == UINT32_MAX) return kr_last_status();
    kr__event_rec_t *r = &s->recs[slot];
    r->time = t;
    r->priority = prio;
    r->source = s->id;
    r->sequence = s->sequence++;
    r->kind = (uint8_t)kind;
    r->type = type;
    kr_status_t st = kr__rec_set_data(r, data, size);
    if (!st) st = kr__rec_enqueue(s, slot);
    if (st) { kr__rec_free(s, slot); return st; }
    if (key) *key = kr__rec_key(s, r, slot);
    return KR_OK;
}

/* A simulator changes only its own events (docs/concepts.md): from its
 * handlers during the run; before the run from its own setup or world start,
 * or from a program between kr_model_start and kr_model_run. Anything else
 * would depend on the ranks: a simulator of another rank has no queue here,
 * so an event scheduled for it from a neighbour's handler ran on one rank
 * and vanished on two. It is refused on every rank instead, as is a change
 * after the run, which nothing would ever run. */
bool kr__sim_may_change(const kr_sim_t *s, const char *fn)
{
    const kr_model_t *m = s->model;
    if (m->finished)
        kr__fail(KR_ERR_STATE, "%s: '%s': the run has ended, and nothing would run what is scheduled now", fn,
                 s->name);
    else if (m->running)
        kr__fail(KR_ERR_STATE, "%s: '%s' is not executing an event: a simulator schedules, cancels and delays only "
                 "its own events, from its own handlers; reach another simulator with a sync-event (kr_send)", fn,
                 s->name);
    else if (m->acting && m->acting != s)
        kr__fail(KR_ERR_STATE, "%s: '%s': called from the setup of '%s': a simulator schedules only its own events; "
                 "reach another simulator with a sync-event (kr_send) once the run has started", fn, s->name,
                 m->acting->name);
    else if (!s->local)
        kr__fail(KR_ERR_STATE, "%s: '%s' runs on rank %d, not on this one (%d): its events are scheduled there", fn,
                 s->name, s->rank, m->rank);
    else
        return true;
    return false;
}

/* kr_schedule for a simulator that executes an event (its own handler's
 * call) or may schedule without (kr__sim_may_change). */
__attribute__((always_inline)) static inline kr_status_t schedule_local(kr_sim_t *s, kr_priority_t priority,
                                                                       kr_time_t delay, kr_event_type_t type,
                                                                       const void *data, kr_event_key_t *key)
{
    const kr__event_type_rec_t *t = kr__event_type(s->model, type);
    if (!t) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': unknown event type %u", s->name, type);
    if (!t->desc.on_event)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': event type '%s' has no on_event (a sync-event type?)",
                        s->name, t->name);
    if (priority == KR_PRIORITY_STEP)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': priority %d is reserved for steps", s->name, priority);
    return kr__sim_schedule_kind(s, KR__EV_LOCAL, priority, kr__time_add(s->now, delay), type, data, t->desc.size, key);
}

/* Apart, so that a handler's own call (the simulator executes an event)
 * makes no call before its tail call: with the check's call inline, every
 * schedule saved six registers first, 21 instructions an event of PHOLD. */
__attribute__((cold, noinline)) static kr_status_t schedule_outside_event(kr_sim_t *s, kr_priority_t priority,
                                                                         kr_time_t delay, kr_event_type_t type,
                                                                         const void *data, kr_event_key_t *key)
{
    if (!kr__sim_may_change(s, "kr_schedule")) return kr_last_status();
    return schedule_local(s, priority, delay, type, data, key);
}

kr_status_t kr_schedule(kr_sim_t *s, kr_priority_t priority, kr_time_t delay, kr_event_type_t type,
                        const void *data, kr_event_key_t *key)
{
    if (!s) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: null simulator");
    if (!s->executing) return schedule_outside_event(s, priority, delay, type, data, key);
    return schedule_local(s, priority, delay, type, data, key);
}

/* Cancels (extra ignored) or delays a pending record of this simulator. */
static kr_status_t change_local(kr_sim_t *s, uint32_t slot, bool delay, kr_time_t extra, kr_event_key_t *new_key)
{
    kr__event_rec_t *r = &s->recs[slot];
    s->stale_entries++;
    s->versions[slot]++;
    if (!delay) {
        kr__rec_free(s, slot);
        maybe_purge(s);
        return KR_OK;
    }
    r->time = kr__time_add(r->time, extra);
    kr__qentry_t q = entry_of(s, r, slot);
    kr_status_t st = kr__equeue_push(&s->queue, &q);
    if (st) {
        kr__rec_free(s, slot);
        return st;
    }
    if (new_key) *new_key = kr__rec_key(s, r, slot);
    maybe_purge(s);
    return KR_OK;
}

kr_status_t kr__sim_change(kr_sim_t *s, const kr_event_key_t *key, bool delay, kr_time_t extra,
                           kr_event_key_t *new_key, const char *fn)
{
    if (s->executing && s->current.source == key->source && s->current.sequence == key->sequence &&
        s->current.phase == key->phase)
        return kr__fail(KR_ERR_STATE, "%s: '%s': the event at %llu is executing", fn, s->name,
                        (unsigned long long)key->time);
    uint32_t slot = kr__rec_find(s, key->source, key->sequence, key->handle);
    if (slot == UINT32_MAX || s->recs[slot].phase != key->phase)
        return kr__fail(KR_ERR_STATE, "%s: '%s': no pending event with sequence %llu (already run or cancelled)", fn,
                        s->name, (unsigned long long)key->sequence);
    return change_local(s, slot, delay, extra, new_key);
}

kr_status_t kr_cancel(kr_sim_t *s, const kr_event_key_t *key)
{
    if (!s || !key) return kr__fail(KR_ERR_INVALID_ARG, "kr_cancel: null argument");
    if (!s->executing && !kr__sim_may_change(s, "kr_cancel")) return kr_last_status();
    if (key->target != s->id) return kr__sync_cancel(s, key, false, 0, NULL);
    if (key->source != s->id)
        return kr__fail(KR_ERR_STATE, "kr_cancel: '%s': a sync-event can be cancelled only by its sender", s->name);
    return kr__sim_change(s, key, false, 0, NULL, "kr_cancel");
}

kr_status_t kr_delay(kr_sim_t *s, const kr_event_key_t *key, kr_time_t extra, kr_event_key_t *new_key)
{
    if (!s || !key) return kr__fail(KR_ERR_INVALID_ARG, "kr_delay: null argument");
    if (!s->executing && !kr__sim_may_change(s, "kr_delay")) return kr_last_status();
    if (key->target != s->id) return kr__sync_cancel(s, key, true, extra, new_key);
    if (key->source != s->id)
        return kr__fail(KR_ERR_STATE, "kr_delay: '%s': a sync-event can be delayed only by its sender", s->name);
    return kr__sim_change(s, key, true, extra, new_key, "kr_delay");
}

const kr_event_key_t *kr_event_current(const kr_sim_t *s)
{
    return s && s->executing ? &s->current : NULL;
}

static uint64_t key_digest(const kr__event_rec_t *r)
{
    uint64_t h = kr__mix64(r->time ^ 0x9e3779b97f4a7c15ULL);
    h = kr__mix64(h ^ ((uint64_t)(uint32_t)r->priority << 32 | r->source));
    h = kr__mix64(h ^ r->sequence);
    return kr__mix64(h ^ ((uint64_t)r->type << 8 | r->phase));
}

bool kr__sim_run_head(kr_sim_t *s)
{
    kr_model_t *m = s->model;
    if (s->cont && !kr__continuous_advance(s, kr__sim_head(s)->time)) return false;
    kr__sim_head(s); /* drops stale entries: the queue's head is the record */
    kr__qentry_t q;
    kr__equeue_pop(&s->queue, &q);
    /* Take the record out of the pool before running it: handlers schedule
     * events, which may move the pool, and must not see it as pending. Its
     * payload and rare fields now belong to `cur`. */
    uint32_t slot = q.slot;
    kr__event_rec_t cur = s->recs[slot];
    rec_unindex(s, slot);
    cur.flags &= (uint8_t)~KR__EVREC_INDEXED;
    s->recs[slot].flags = 0;
    s->recs[slot].extra = 0;
    rec_free_slot(s, slot);
    /* The next head's record and version are cache misses of their own
     * once the pool outgrows the caches: start them now, so they overlap
     * with this event's handler. */
    const kr__qentry_t *next = kr__equeue_peek(&s->queue);
    if (next) {
        __builtin_prefetch(&s->recs[next->slot]);
        __builtin_prefetch(&s->versions[next->slot]);
    }

    void *data = kr__rec_data(&cur);
    s->now = cur.time;
    s->current = kr__rec_key(s, &cur, slot);
    s->executing = true;
    const kr__event_type_rec_t *type = kr__event_type(m, cur.type);
    switch ((kr__event_kind_t)cur.kind) {
    case KR__EV_LOCAL:
    case KR__EV_STATE:
        type->desc.on_event(s, data);
        break;
    case KR__EV_STEP: {
        if (s->on_step) s->on_step(s);
        kr_status_t st = kr_world_update(s->world);
        if (!st) st = kr__sim_schedule_kind(s, KR__EV_STEP, KR_PRIORITY_STEP, kr__time_add(s->now, s->time_step), 0,
                                            NULL, 0, NULL);
        if (st) kr__model_fail(m, st, "agent-based step of '%s': %s", s->name, kr_last_error());
        break;
    }
    case KR__EV_OBSERVE:
        kr__continuous_observe(s, true);
        break;
    case KR__EV_SENDER:
        if (type->desc.on_sender_side) type->desc.on_sender_side(s, data);
        kr__sync_send_payload(s, &cur);
        break;
    case KR__EV_TARGET:
        if (kr__sync_unpack(s, &cur) == KR_OK) {
            /* A continuous simulator comes up to date before it handles an
             * arrival (ERS's update on receiving a sync-event;
             * docs/concepts.md, "The four formalisms"). */
            if (s->cont) kr__continuous_observe(s, false);
            if (!s->emu || !kr__emulation_arrival(s, cur.type, cur.source, data)) type->desc.on_target_side(s, data);
        }
        s->moved_count = 0;
        break;
    case KR__EV_INPUT:
        kr__emulation_run_input(s, &cur);
        break;
    }
    s->executing = false;
    s->executed++;
    s->digest = kr__mix64(s->digest ^ key_digest(&cur));
    if (cur.kind == KR__EV_TARGET) s->sync_received++;
    if (m->observer.on_event) {
        kr_event_key_t k = kr__rec_key(s, &cur, slot);
        m->observer.on_event(m->observer.arg, s, &k, cur.type);
    }
    rec_release(s, &cur);
    return true;
}

/* ---- accessors ---- */

/* The getters answer 0 or NULL for a NULL simulator (a name that
 * kr_model_find_sim did not find, say) rather than crash; but for
 * kr_sim_now, which a handler calls at every event (kairos/sim.h). */
uint32_t kr_sim_id(const kr_sim_t *s) { return s ? s->id : 0; }
const char *kr_sim_name(const kr_sim_t *s) { return s ? s->name : NULL; }
kr_formalism_t kr_sim_formalism(const kr_sim_t *s) { return s ? s->formalism : KR_DISCRETE_EVENT; }
kr_time_t kr_sim_now(const kr_sim_t *s) { return s->now; }
kr_time_t kr_sim_time_step(const kr_sim_t *s) { return s ? s->time_step : 0; }
kr_world_t *kr_sim_world(kr_sim_t *s) { return s ? s->world : NULL; }
kr_model_t *kr_sim_model(kr_sim_t *s) { return s ? s->model : NULL; }

void kr_sim_fail(kr_sim_t *s, kr_status_t status, const char *fmt, ...)
{
    char text[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (!s) {
        /* No model to fail: say so where the user looks, rather than crash. */
        kr__fail(KR_ERR_INVALID_ARG, "kr_sim_fail: null simulator (the failure was: %s)", text);
        fprintf(stderr, "[error] %s\n", kr_last_error());
        return;
    }
    kr_model_t *m = s->model;
    /* A kind's failure is a failure: not a deadlock, an interrupt or a
     * success, which only the coordinator reports (docs/cli.md, "Exit
     * status"). */
    if (status == KR_OK || status == KR_ERR_DEADLOCK || status == KR_ERR_INTERRUPTED) status = KR_ERR_STATE;
    kr__model_fail(m, status, "simulator '%s', time %.9g: %s", s->name, kr_time_to_units(s->now, m->precision), text);
    /* After the end nobody stops: say it now. Before the start (a setup)
     * the model's build reports it, once; kr_model_failure and
     * kr_model_run report it too. */
    if (!m->running) {
        if (m->started) kr_log(s, KR_LOG_ERROR, "%s", text);
        kr__fail(m->failure, "%s", m->failure_msg);
    }
}

void kr_sim_progress(kr_sim_t *s)
{
    kr__transport_t *t = s ? s->model->transport : NULL;
    if (t && t->vtbl->progress) t->vtbl->progress(t);
}
kr_rng_t *kr_sim_rng(kr_sim_t *s) { return s ? s->rng : NULL; }
uint64_t kr_sim_event_count(const kr_sim_t *s) { return s ? s->executed : 0; }
uint64_t kr_sim_event_digest(const kr_sim_t *s) { return s ? s->digest : 0; }
uint64_t kr_sim_sync_sent(const kr_sim_t *s) { return s ? s->sync_sent : 0; }
uint64_t kr_sim_sync_received(const kr_sim_t *s) { return s ? s->sync_received : 0; }
uint64_t kr_sim_null_messages(const kr_sim_t *s) { return s ? s->null_sent : 0; }
uint64_t kr_sim_guarantee_requests(const kr_sim_t *s) { return s ? s->requests_sent : 0; }
double kr_sim_blocked_seconds(const kr_sim_t *s) { return s ? (double)s->blocked_ns * 1e-9 : 0.0; }
uint64_t kr_sim_blocked_episodes(const kr_sim_t *s) { return s ? s->blocked_episodes : 0; }

kr_sim_t *kr_sim_of_world(kr_world_t *w)
{
    return w ? kr_world_owner(w) : NULL;
}

static const char *const formalism_names[] = { "discrete-event", "agent-based", "continuous", "emulation" };

const char *kr_formalism_name(kr_formalism_t f)
{
    return (unsigned)f <= KR_EMULATION ? formalism_names[f] : "unknown";
}

/* Spellings with an underscore, as some model files and issues write them;
 * output always uses the hyphenated names. */
static const char *const formalism_aliases[] = { "discrete_event", "agent_based", NULL, NULL };

kr_status_t kr_formalism_from_name(const char *name, kr_formalism_t *out)
{
    for (int i = 0; name && i <= KR_EMULATION; i++)
        if (!strcmp(name, formalism_names[i]) || (formalism_aliases[i] && !strcmp(name, formalism_aliases[i]))) {
            *out = (kr_formalism_t)i;
            return KR_OK;
        }
    return kr__fail(KR_ERR_INVALID_ARG, "unknown formalism '%s' (expected discrete-event, agent-based, continuous "
                    "or emulation)", name ? name : "(null)");
}
