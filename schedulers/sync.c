/* Sync-events between simulators: scheduling with the dependency and
 * promise checks, moving entities, the messages that carry them (and
 * guarantees) over the transport, and applying those messages in each
 * edge's order whatever order the transport delivers them in.
 *
 * Wire format, little-endian, every message:
 *   u8 kind, u32 from, u32 to, u64 edge_seq, u64 time, then by kind:
 *   SYNC      u64 guarantee, i32 priority, u64 sequence, u32 type,
 *             u8 placeholder, u32 data_len, data, u32 root_count,
 *             u32 pack_len, pack; then any number of further sync-events
 *             on the edge, each u64 time and the same fields from
 *             priority on (a run added while the message waited in the
 *             sender's transport: append_sync)
 *   PAYLOAD   u64 guarantee, u64 sequence, u32 data_len, data,
 *             u32 root_count, u32 pack_len, pack
 *   CANCEL    u64 guarantee, u64 sequence
 *   DELAY     u64 guarantee, u64 sequence       (time = the new time)
 *   GUARANTEE (edge_seq = data messages sent on the edge before it)
 *   REQUEST   (time = the guarantee the receiver needs; edge_seq 0;
 *             travels against the edge, to `from`)
 *   STOP      u64 guarantee, u32 stopper (time = the stop's time;
 *             stop.c: a data message, so that it applies before every
 *             guarantee sent after it on the edge)
 * Data messages (SYNC to DELAY, and STOP) are numbered per edge from 0 and carry
 * the sender's guarantee on the edge as of sending ("piggybacked"), which
 * applies once the message does: a null message is needed only when no
 * data flows. A guarantee due while the edge's last data message still
 * waits in the transport raises the one that message carries instead
 * (kr__sync_send_guarantee). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/pack.h"
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_private.h"

enum { MSG_SYNC = 1, MSG_PAYLOAD, MSG_CANCEL, MSG_DELAY, MSG_GUARANTEE, MSG_REQUEST, MSG_STOP };

static bool is_data(uint8_t kind) { return (kind >= MSG_SYNC && kind <= MSG_DELAY) || kind == MSG_STOP; }

static double units(const kr_model_t *m, kr_time_t t) { return kr_time_to_units(t, m->precision); }

/* ---- entities ---- */

/* Packs the live roots into `out` (u32 count, u32 length, bytes) and
 * destroys them in s's world. */
static kr_status_t pack_roots(kr_sim_t *s, const kr_entity_t *roots, size_t n, kr_buf_t *pack, uint32_t *count)
{
    *count = 0;
    if (!n) return KR_OK;
    kr_entity_t *live = malloc(n * sizeof *live);
    if (!live) return kr__fail(KR_ERR_NOMEM, "'%s': out of memory packing entities", s->name);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (kr_entity_alive(s->world, roots[i])) live[k++] = roots[i];
        else kr_log(s, KR_LOG_WARN, "entity %u:%u sent with a sync-event no longer exists; not sent",
                    kr_entity_index(roots[i]), kr_entity_generation(roots[i]));
    }
    kr_status_t st = k ? kr_pack(s->world, live, k, pack) : KR_OK;
    for (size_t i = 0; !st && i < k; i++) st = kr_entity_destroy(s->world, live[i]);
    free(live);
    if (!st) *count = (uint32_t)k;
    return st;
}

kr_status_t kr__sync_unpack(kr_sim_t *s, kr__event_rec_t *r)
{
    s->moved_count = 0;
    kr__rec_extra_t *x = kr__rec_extra_peek(s, r);
    if (!x || !x->root_count) return KR_OK;
    size_t root_count = x->root_count;
    if (root_count > s->moved_cap) {
        kr_entity_t *moved = realloc(s->moved, root_count * sizeof *moved);
        if (!moved) {
            kr__model_fail(s->model, KR_ERR_NOMEM, "'%s': out of memory receiving entities", s->name);
            return KR_ERR_NOMEM;
        }
        s->moved = moved;
        s->moved_cap = root_count;
    }
    /* kr_unpack fires behaviors, which may schedule events and move the
     * side table: the pack is taken out of it first. */
    kr_buf_t pack = x->pack;
    kr_buf_init(&x->pack);
    kr_unpack_desc_t d = { .roots = s->moved, .roots_capacity = s->moved_cap, .notify_move = true };
    size_t count = 0;
    kr_status_t st = kr_unpack(s->world, pack.data, pack.len, &d, &count, NULL);
    kr_buf_fini(&pack);
    if (!st && count != root_count)
        st = kr__fail(KR_ERR_CORRUPT, "the pack holds %zu entities, the message said %zu", count, root_count);
    if (st) {
        kr__model_fail(s->model, st, "'%s': entities of a sync-event from simulator %u could not be unpacked: %s",
                       s->name, r->source, kr_last_error());
        return st;
    }
    s->moved_count = count;
    return KR_OK;
}

const kr_entity_t *kr_event_entities(const kr_sim_t *s, size_t *count)
{
    if (count) *count = s ? s->moved_count : 0;
    return s ? s->moved : NULL;
}

/* ---- encoding and sending ---- */

enum {
    HEADER_LEN = 1 + 4 + 4 + 8 + 8,                       /* kind, from, to, edge_seq, time */
    TIME_AT = 1 + 4 + 4 + 8,
    DATA_GUARANTEE_AT = HEADER_LEN,                        /* where a data message's guarantee sits */
    DATA_HEADER_LEN = HEADER_LEN + 8,
    SYNC_FIXED_LEN = 4 + 8 + 4 + 1,                        /* priority, sequence, type, placeholder */
};

/* Little-endian stores and loads of a field's n low bytes, unchecked: a
 * message is reserved whole before it is written (begin) and its length
 * is checked before it is read, so a field costs one store or load (a call
 * and a bounds check per field were a third of what a sync-event to
 * another rank cost). */
static inline uint8_t *put(uint8_t *p, uint64_t v, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, n);
#else
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
    return p + n;
}

static inline uint8_t *put_bytes(uint8_t *p, const void *src, size_t n)
{
    if (n) memcpy(p, src, n);
    return p + n;
}

static inline uint64_t get(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, n);
#else
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
#endif
    return v;
}

/* A field read through a reader: 0 once it runs short (it sets failed). */
static inline uint64_t rd(kr_reader_t *r, size_t n)
{
    const uint8_t *p = kr_reader_view(r, n);
    return p ? get(p, n) : 0;
}

/* The encoders below and add_target are forced inline: as calls, their
 * prologues were a tenth of what a sync-event to another rank cost to
 * send or deliver (bench/README.md, "Fast paths in one function"). */
#define FORCE_INLINE static inline __attribute__((always_inline))

/* Starts message `kind` on edge e in m->msg with room for `body` bytes
 * after the header, and returns where the body goes (NULL: out of
 * memory, the error set). */
FORCE_INLINE uint8_t *begin(kr_model_t *m, uint8_t kind, const kr__edge_t *e, uint64_t edge_seq, kr_time_t time,
                            size_t body)
{
    kr_buf_t *b = &m->msg;
    b->len = 0;
    if (b->cap < HEADER_LEN + body && kr_buf_reserve(b, HEADER_LEN + body)) return NULL;
    b->len = HEADER_LEN + body;
    uint8_t *p = put(b->data, kind, 1);
    p = put(p, e->from, 4);
    p = put(p, e->to, 4);
    p = put(p, edge_seq, 8);
    return put(p, time, 8);
}

/* Starts a data message from simulator s, with the guarantee it gives:
 * nothing s still does comes before min(now, bound) (its group runs in
 * time order and nothing reaches it before its bound), so no later
 * message on the edge is earlier than that plus the promise. It counts as
 * sent: the coordinator sends a null message only to go beyond it. */
FORCE_INLINE uint8_t *begin_data(kr_model_t *m, kr_sim_t *s, uint8_t kind, kr__edge_t *e, kr_time_t time, size_t body)
{
    uint8_t *p = begin(m, kind, e, e->sent, time, 8 + body);
    if (!p) return NULL;
    e->sent++;
    kr_time_t bound = m->groups[s->group].bound;
    kr_time_t base = s->now < bound ? s->now : bound;
    kr_time_t g = kr__time_add(base, e->promise);
    if (g > m->end_time) g = KR_TIME_NEVER;
    /* the receiver applies it with the message: no null message need
     * repeat it (a direct edge's guarantees are applied by the sender) */
    if (!e->direct && g > e->guarantee_sent) e->guarantee_sent = g;
    return put(p, g, 8);
}

static size_t payload_len(uint32_t size, size_t pack_len) { return 4 + (size_t)size + 4 + 4 + pack_len; }

FORCE_INLINE uint8_t *put_payload(uint8_t *p, const void *data, uint32_t size, uint32_t roots, const kr_buf_t *pack)
{
    p = put(p, size, 4);
    p = put_bytes(p, data, size);
    p = put(p, roots, 4);
    p = put(p, (uint32_t)pack->len, 4);
    return put_bytes(p, pack->data, pack->len);
}

/* For the window over ranks: the earliest time sent to e's receiver
 * group since the last round (coordinator.c, window_round). */
static inline void note_sent_time(kr_model_t *m, const kr__edge_t *e, kr_time_t t)
{
    if (!m->window_sent_min) return;
    kr_time_t *min = &m->window_sent_min[m->sims[e->to]->group];
    if (t < *min) *min = t;
}

static kr_status_t transmit(kr_model_t *m, kr__edge_t *e)
{
    uint8_t kind = m->msg.data[0];
    if (is_data(kind)) {
        m->msgs_sent++;
        if (kind != MSG_STOP) note_sent_time(m, e, get(m->msg.data + TIME_AT, 8));
    }
    m->transport_sent++;
    /* a request travels against the edge */
    uint32_t from = kind == MSG_REQUEST ? e->to : e->from, to = kind == MSG_REQUEST ? e->from : e->to;
    kr_status_t st = m->transport->vtbl->send(m->transport, from, to, m->msg.data, m->msg.len);
    /* a later guarantee (and, on a SYNC, later sync-events) may still ride
     * on the edge's last data message */
    if (!st && is_data(kind)) {
        if (!(m->transport->vtbl->held && m->transport->vtbl->held(m->transport, &e->held))) e->held.batch = 0;
        e->held_sync = kind == MSG_SYNC;
    }
    if (st) kr__model_fail(m, st, "sending from '%s' to '%s': %s", m->sims[e->from]->name, m->sims[e->to]->name,
                           kr_last_error());
    return st;
}

/* A sync-event's fields after its time, as a SYNC message carries them. */
FORCE_INLINE uint8_t *put_sync_body(uint8_t *p, const kr_event_key_t *k, kr_event_type_t type, bool placeholder,
                                    const void *data, uint32_t size, uint32_t roots, const kr_buf_t *pack)
{
    p = put(p, (uint32_t)k->priority, 4);
    p = put(p, k->sequence, 8);
    p = put(p, type, 4);
    p = put(p, placeholder, 1);
    return put_payload(p, data, size, roots, pack);
}

/* Adds sync-event k, time first, to the edge's last data message if that
 * is a SYNC the transport still holds, writing it straight into the
 * transport's batch: a run of sync-events on one edge then travels as one
 * message, with one header and one place in the edge's order, and the
 * receiver finds the edge and checks the order once for the run (about a
 * quarter of what a sync-event to another rank cost to send, and as much
 * of what it cost to deliver; bench/README.md, "Runs of sync-events in
 * one message"). It is still one message for the edge counts and the
 * window's quiescence. The guarantee it carries stays the one given with
 * its first event until send_guarantees raises it (kr__sync_raise_held).
 * False when the message has left, or the transport cannot add to it: k
 * then travels as a message of its own. */
FORCE_INLINE bool append_sync(kr_model_t *m, kr__edge_t *e, const kr_event_key_t *k, kr_event_type_t type,
                              bool placeholder, const void *data, uint32_t size, uint32_t roots, const kr_buf_t *pack)
{
    if (!e->held_sync || !e->held.batch || !m->transport->vtbl->extend) return false;
    uint8_t *p = m->transport->vtbl->extend(m->transport, &e->held, 8 + SYNC_FIXED_LEN + payload_len(size, pack->len));
    if (!p) return false;
    put_sync_body(put(p, k->time, 8), k, type, placeholder, data, size, roots, pack);
    m->transport_sent++;
    note_sent_time(m, e, k->time);
    return true;
}

/* Sends a SYNC message for the sync-event k of type `type`: with its
 * payload and entities, or as a placeholder (its type has a sender side,
 * whose PAYLOAD message brings them once it ran), with neither. A NULL
 * payload travels as zeros, as kr__rec_set_data stores it. */
static kr_status_t send_sync(kr_model_t *m, kr_sim_t *s, kr__edge_t *e, const kr_event_key_t *k,
                             kr_event_type_t type, bool placeholder, const void *data, uint32_t size,
                             uint32_t roots, const kr_buf_t *pack)
{
    static const uint8_t zeros[64];
    uint8_t *tmp = NULL;
    if (placeholder) size = 0;
    if (!data && size) {
        if (size <= sizeof zeros) data = zeros;
        else if (!(data = tmp = calloc(1, size))) return kr__fail(KR_ERR_NOMEM, "kr_schedule_sync: out of memory");
    }
    kr_status_t st = KR_OK;
    if (!append_sync(m, e, k, type, placeholder, data, size, roots, pack)) {
        uint8_t *p = begin_data(m, s, MSG_SYNC, e, k->time, SYNC_FIXED_LEN + payload_len(size, pack->len));
        if (p) put_sync_body(p, k, type, placeholder, data, size, roots, pack);
        st = p ? transmit(m, e) : kr_last_status();
    }
    if (tmp) free(tmp); /* (a call to free(NULL) per sync-event otherwise) */
    return st;
}

bool kr__sync_raise_held(kr_model_t *m, kr__edge_t *e, kr_time_t g)
{
    if (e->direct || !e->held.batch || !m->transport->vtbl->amend) return false;
    uint8_t bytes[8];
    put(bytes, (uint64_t)g, 8);
    if (!m->transport->vtbl->amend(m->transport, &e->held, DATA_GUARANTEE_AT, bytes, sizeof bytes)) {
        e->held.batch = 0;
        return false;
    }
    e->guarantee_sent = g;
    return true;
}

kr_status_t kr__sync_send_guarantee(kr_model_t *m, kr__edge_t *e, kr_time_t g)
{
    if (e->direct) {
        /* Both halves are here and every data message is already applied. */
        e->guarantee_sent = g;
        if (g > e->guarantee) e->guarantee = g;
        return KR_OK;
    }
    /* The edge's last data message has not left yet: it carries g instead
     * of a null message after it. The receiver applies g once that message
     * is applied, and every data message sent after this call is at or
     * after g. */
    if (kr__sync_raise_held(m, e, g)) return KR_OK;
    e->guarantee_sent = g;
    if (!begin(m, MSG_GUARANTEE, e, e->sent, g, 0)) return kr_last_status();
    m->sims[e->from]->null_sent++;
    return transmit(m, e);
}

kr_status_t kr__sync_send_stop(kr_model_t *m, kr__edge_t *e, uint32_t by, kr_time_t at)
{
    uint8_t *p = begin_data(m, m->sims[e->from], MSG_STOP, e, at, 4);
    if (!p) return kr_last_status();
    put(p, by, 4);
    return transmit(m, e);
}

kr_status_t kr__sync_request_guarantee(kr_model_t *m, kr__edge_t *e, kr_time_t need)
{
    if (!begin(m, MSG_REQUEST, e, 0, need, 0)) return kr_last_status();
    e->requested = need;
    m->sims[e->to]->requests_sent++;
    return transmit(m, e);
}

/* ---- the target half: records for arriving sync-events ---- */

/* A data message applied at once on a direct edge: counted as sent and
 * delivered, so the edge's counts and the window's quiescence test see the
 * same numbers as over a transport. */
static void count_direct(kr_model_t *m, kr__edge_t *e)
{
    if (!e->direct) return;
    e->sent++;
    e->received++;
    m->msgs_sent++;
    m->msgs_delivered++;
}

FORCE_INLINE kr_status_t add_target(kr_sim_t *t, const kr_event_key_t *key, kr_event_type_t type, bool placeholder,
                                    const void *data, uint32_t size, uint32_t roots, const void *pack, size_t pack_len,
                                    uint32_t *slot_out)
{
    uint32_t slot = kr__rec_alloc(t);
    if (slot == UINT32_MAX) return kr_last_status();
    kr__event_rec_t *r = &t->recs[slot];
    r->time = key->time;
    r->priority = key->priority;
    r->source = key->source;
    r->sequence = key->sequence;
    r->phase = 1;
    r->kind = KR__EV_TARGET;
    r->type = type;
    if (placeholder) r->flags |= KR__EVREC_AWAITING;
    kr_status_t st = kr__rec_set_data(r, data, size);
    if (!st && (roots || pack_len)) {
        kr__rec_extra_t *x = kr__rec_extra(t, r);
        if (!x) st = kr_last_status();
        else {
            x->root_count = roots;
            if (pack_len) st = kr_buf_append(&x->pack, pack, pack_len);
        }
    }
    if (!st) st = kr__rec_enqueue(t, slot);
    if (st) kr__rec_free(t, slot);
    else if (slot_out) *slot_out = slot;
    return st;
}

static kr_status_t fill_target(kr_sim_t *t, uint32_t source, uint64_t seq, const void *data, uint32_t size,
                               uint32_t roots, const void *pack, size_t pack_len)
{
    uint32_t slot = kr__rec_find(t, source, seq, 0);
    if (slot == UINT32_MAX || !(t->recs[slot].flags & KR__EVREC_AWAITING))
        return kr__fail(KR_ERR_CORRUPT, "payload for an unknown sync-event (sequence %llu)", (unsigned long long)seq);
    kr__event_rec_t *r = &t->recs[slot];
    if (size != r->data_size)
        return kr__fail(KR_ERR_CORRUPT, "payload of %u bytes for an event type of %u", size, r->data_size);
    if (size) memcpy(kr__rec_data(r), data, size);
    kr__rec_extra_t *x = roots || pack_len ? kr__rec_extra(t, r) : kr__rec_extra_peek(t, r);
    if (roots || pack_len) {
        if (!x) return kr_last_status();
    }
    if (x) {
        kr_buf_clear(&x->pack);
        if (pack_len && kr_buf_append(&x->pack, pack, pack_len)) return kr_last_status();
        x->root_count = roots;
    }
    r->flags &= (uint8_t)~KR__EVREC_AWAITING;
    return KR_OK;
}

/* ---- the sender's table of sync-events it may still change ---- */

/* Entries are appended in sequence order and pruning keeps that order. */
static uint32_t outgoing_find(const kr_sim_t *s, uint64_t seq)
{
    uint32_t lo = 0, hi = s->outgoing_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->outgoing[mid].sequence < seq) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->outgoing_count && s->outgoing[lo].sequence == seq && s->outgoing[lo].live ? lo : UINT32_MAX;
}

static void outgoing_drop(kr_sim_t *s, uint32_t i)
{
    s->outgoing[i].live = false;
    s->outgoing_live--;
}

/* Forgets entries that can no longer change (cancelled, or closer than
 * their promise). Runs only when the table is full, before it would grow,
 * so its cost is amortized O(1) per sync-event. */
static void outgoing_prune(kr_sim_t *s)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->outgoing_count; i++) {
        kr__outgoing_t o = s->outgoing[i];
        if (!o.live || o.time < kr__time_add(s->now, o.promise)) continue;
        s->outgoing[keep++] = o;
    }
    s->outgoing_count = s->outgoing_live = keep;
}

static kr_status_t outgoing_add(kr_sim_t *s, const kr__outgoing_t *o)
{
    if (s->outgoing_count == s->outgoing_cap) {
        outgoing_prune(s);
        /* Double when pruning freed less than half, even if it freed some:
         * hence a need of cap + 1 rather than count + 1. */
        if ((s->outgoing_cap == 0 || s->outgoing_count * 2 > s->outgoing_cap) &&
            KR__GROW_U32(s->outgoing, s->outgoing_cap, (size_t)s->outgoing_cap + 1, 64, NULL))
            return kr__fail(KR_ERR_NOMEM, "'%s': out of memory", s->name);
    }
    s->outgoing[s->outgoing_count++] = *o;
    s->outgoing_live++;
    return KR_OK;
}

/* ---- scheduling ---- */

static kr_status_t refuse(kr_sim_t *s, const kr_sync_desc_t *d, kr_time_t t, const char *why)
{
    kr_model_t *m = s->model;
    return kr__fail(KR_ERR_INVALID_ARG, "sync-event from '%s' at %g to '%s' at %g refused: %s", s->name,
                    units(m, s->now), m->sims[d->target]->name, units(m, t), why);
}

/* A type the target has not declared it receives (receive.c). */
__attribute__((cold, noinline)) static kr_status_t not_received(kr_sim_t *s, const kr_sync_desc_t *d, kr_time_t t,
                                                               const char *type)
{
    char why[160];
    snprintf(why, sizeof why, "'%s' does not receive '%.60s' (not among the sync-events it declares)",
             s->model->sims[d->target]->name, type);
    return refuse(s, d, t, why);
}

/* kr_schedule_sync once the caller may change s's events (below). */
static kr_status_t schedule_sync(kr_sim_t *s, const kr_sync_desc_t *d, kr_event_key_t *key)
{
    if (!s || !d) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_sync: null argument");
    kr_model_t *m = s->model;
    if (!m->started) return kr__fail(KR_ERR_STATE, "kr_schedule_sync: '%s': the model has not started", s->name);
    if (d->target >= m->sim_count)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_sync: '%s': no simulator with id %u", s->name, d->target);
    const kr__event_type_rec_t *type = kr__event_type(m, d->type);
    if (!type || !type->desc.on_target_side)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_sync: '%s': event type %u%s%s%s is not a sync-event type (it "
                        "has no on_target_side)", s->name, d->type, type ? " '" : "", type ? type->name : "",
                        type ? "'" : "");
    if (d->priority == KR_PRIORITY_STEP)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_sync: '%s': priority %d is reserved for steps", s->name,
                        d->priority);
    if (d->entity_count && !d->entities)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule_sync: '%s': expected %zu entities to send, found a NULL "
                        "entity array", s->name, d->entity_count);
    kr_time_t t = kr__time_add(s->now, d->delay);
    kr__edge_t *e = kr__edge(m, s->id, d->target);
    char why[160];
    if (!e) {
        snprintf(why, sizeof why, "no dependency '%s' -> '%s'", s->name, m->sims[d->target]->name);
        return refuse(s, d, t, why);
    }
    if (d->delay < e->promise) {
        snprintf(why, sizeof why, "delay %g is below the promise %g of '%s' -> '%s'", units(m, d->delay),
                 units(m, e->promise), s->name, m->sims[d->target]->name);
        return refuse(s, d, t, why);
    }
    /* (what a simulator receives only grows, and only before the start:
     * the edge remembers the last type that passed) */
    if (e->received_type != d->type) {
        const kr_sim_t *to = m->sims[d->target];
        if (to->receives && !kr__sim_receives(to, d->type)) return not_received(s, d, t, type->name);
        e->received_type = d->type;
    }
    for (size_t i = 0; i < d->entity_count; i++)
        if (!kr_entity_alive(s->world, d->entities[i]))
            return kr__fail(KR_ERR_STALE_ENTITY, "kr_schedule_sync: '%s': entity %u:%u to send does not exist",
                            s->name, kr_entity_index(d->entities[i]), kr_entity_generation(d->entities[i]));

    /* Entities go first: destroying them fires on_destroy, which may itself
     * schedule sync-events; the sequence is taken after, so that sequences
     * stay in send order on every edge and in the outgoing table. */
    bool placeholder = type->desc.on_sender_side != NULL;
    kr_buf_t pack = { 0 }; /* (kr_buf_init's empty buffer, without a call) */
    uint32_t roots = 0;
    if (!placeholder && d->entity_count) {
        kr_status_t pst = pack_roots(s, d->entities, d->entity_count, &pack, &roots);
        if (pst) { kr_buf_fini(&pack); return pst; }
    }
    kr_event_key_t k = { .time = t, .priority = d->priority, .source = s->id, .sequence = s->sequence++,
                         .phase = 1, .target = d->target };
    kr_sim_t *target = m->sims[d->target];
    uint32_t size = (uint32_t)type->desc.size;
    bool direct = e->internal || e->direct;
    uint32_t sender_handle = 0, target_slot = UINT32_MAX;
    kr_status_t st = KR_OK;
    if (placeholder) {
        /* The sender side waits in s's queue with the data and the roots;
         * the target learns of the event now and waits for its payload. */
        uint32_t slot = kr__rec_alloc(s);
        if (slot == UINT32_MAX) return kr_last_status();
        kr__event_rec_t *r = &s->recs[slot];
        r->time = t;
        r->priority = k.priority;
        r->source = s->id;
        r->sequence = k.sequence;
        r->phase = 0;
        r->kind = KR__EV_SENDER;
        r->type = d->type;
        kr__rec_extra_t *x = kr__rec_extra(s, r);
        if (!x) st = kr_last_status();
        else x->target = d->target;
        if (!st && d->entity_count) {
            if (!(x->roots = malloc(d->entity_count * sizeof *x->roots)))
                st = kr__fail(KR_ERR_NOMEM, "kr_schedule_sync: out of memory");
            else {
                memcpy(x->roots, d->entities, d->entity_count * sizeof *x->roots);
                x->root_count = d->entity_count;
            }
        }
        if (!st) st = kr__rec_set_data(r, d->data, size);
        if (!st) st = kr__rec_enqueue(s, slot);
        if (st) { kr__rec_free(s, slot); return st; }
        sender_handle = slot + 1;
    }
    /* The target side (a placeholder when the sender side brings the
     * payload): applied at once on a direct or internal edge, else sent.
     * Not at all when the sender side is at or after s's stop horizon but
     * the target's is later: it never runs, so the target would wait for
     * the payload for ever (kr__sync_withdraw). */
    const void *data = placeholder ? NULL : d->data;
    if (placeholder && t >= s->stop_horizon && t < target->stop_horizon) {
        /* withdrawn as it is made */
    } else if (direct) {
        st = add_target(target, &k, d->type, placeholder, data, size, roots, pack.data, pack.len, &target_slot);
        if (!st) count_direct(m, e);
    } else {
        st = send_sync(m, s, e, &k, d->type, placeholder, data, size, roots, &pack);
    }
    if (pack.data) kr_buf_fini(&pack);
    /* Only a sync-event whose key the caller keeps can be cancelled or
     * delayed (kr__sync_cancel needs its sequence): one without needs no
     * entry, and PHOLD's and kr_send's sync-events save the table's upkeep. */
    if (!st && key) {
        kr__outgoing_t out = { .sequence = k.sequence, .time = t, .promise = e->promise, .target = d->target,
                              .sender_handle = sender_handle,
                              .target_handle = target_slot != UINT32_MAX ? target_slot + 1 : 0,
                              .live = true, .carries_entities = d->entity_count > 0 };
        st = outgoing_add(s, &out);
    }
    if (!st) {
        s->sync_sent++;
        if (m->observer.on_sync) m->observer.on_sync(m->observer.arg, s, &k);
        if (key) *key = k;
    }
    return st;
}

/* Apart, as kr_schedule's (schedulers/sim.c): a handler's own call makes
 * no call before its tail call. */
__attribute__((cold, noinline)) static kr_status_t sync_outside_event(kr_sim_t *s, const kr_sync_desc_t *d,
                                                                     kr_event_key_t *key)
{
    if (d && s->model->started && !kr__sim_may_change(s, "kr_schedule_sync")) return kr_last_status();
    return schedule_sync(s, d, key);
}

kr_status_t kr_schedule_sync(kr_sim_t *s, const kr_sync_desc_t *d, kr_event_key_t *key)
{
    if (s && !s->executing) return sync_outside_event(s, d, key);
    return schedule_sync(s, d, key);
}

void kr__sync_send_payload(kr_sim_t *s, kr__event_rec_t *r)
{
    kr_model_t *m = s->model;
    kr__rec_extra_t *x = kr__rec_extra_peek(s, r);
    kr__edge_t *e = x ? kr__edge(m, s->id, x->target) : NULL;
    if (!e) {
        kr__model_fail(m, KR_ERR_STATE, "'%s': a sync-event's sender side without its target", s->name);
        return;
    }
    kr_buf_t pack;
    kr_buf_init(&pack);
    uint32_t roots = 0;
    kr_status_t st = x && x->root_count ? pack_roots(s, x->roots, x->root_count, &pack, &roots) : KR_OK;
    if (!st && (e->internal || e->direct)) {
        st = fill_target(m->sims[e->to], s->id, r->sequence, kr__rec_data(r), r->data_size, roots, pack.data,
                         pack.len);
        if (!st) count_direct(m, e);
    } else if (!st) {
        uint8_t *p = begin_data(m, s, MSG_PAYLOAD, e, r->time, 8 + payload_len(r->data_size, pack.len));
        if (p) put_payload(put(p, r->sequence, 8), kr__rec_data(r), r->data_size, roots, &pack);
        st = p ? transmit(m, e) : kr_last_status();
    }
    kr_buf_fini(&pack);
    if (st) kr__model_fail(m, st, "'%s': sending the payload of a sync-event: %s", s->name, kr_last_error());
}

/* A stop and sender sides (stop.c, docs/concepts.md, "Ending a run from
 * inside the model"): a sync-event whose sender side is at or after its
 * sender's stop horizon never gets its payload, since the sender runs
 * nothing there. Its target half is withdrawn like a cancel, in the edge's
 * order (after every payload the sender sent before), so that a target
 * whose own horizon is later does not wait for it for ever; it never runs.
 * The sender's record stays (it never runs either), and with it the
 * model's right to cancel or delay the event (kr__sync_cancel then leaves
 * the target alone). A target record that is not there any more was
 * withdrawn before the checkpoint the run restarted from. */
kr_status_t kr__sync_withdraw(kr_sim_t *s, uint32_t target, uint64_t sequence, kr_time_t time)
{
    kr_model_t *m = s->model;
    kr__edge_t *e = kr__edge(m, s->id, target);
    if (!e) return kr__fail(KR_ERR_STATE, "'%s': a sync-event's sender side without its target", s->name);
    if (e->internal || e->direct) {
        kr_sim_t *t = m->sims[target];
        uint32_t ts = kr__rec_find(t, s->id, sequence, 0);
        if (ts == UINT32_MAX || !(t->recs[ts].flags & KR__EVREC_AWAITING)) return KR_OK;
        kr_event_key_t k = kr__rec_key(t, &t->recs[ts], ts);
        kr_status_t st = kr__sim_change(t, &k, false, 0, NULL, "stop");
        if (!st) count_direct(m, e);
        return st;
    }
    uint8_t *p = begin_data(m, s, MSG_CANCEL, e, time, 8);
    if (!p) return kr_last_status();
    put(p, sequence, 8);
    return transmit(m, e);
}

kr_status_t kr__sync_cancel(kr_sim_t *s, const kr_event_key_t *key, bool delay, kr_time_t extra,
                            kr_event_key_t *new_key)
{
    kr_model_t *m = s->model;
    const char *fn = delay ? "kr_delay" : "kr_cancel";
    if (key->source != s->id)
        return kr__fail(KR_ERR_STATE, "%s: '%s': a sync-event can be changed only by its sender", fn, s->name);
    if (s->executing && s->current.source == s->id && s->current.sequence == key->sequence)
        return kr__fail(KR_ERR_STATE, "%s: '%s': the sync-event's sender side is executing", fn, s->name);
    /* The sender's own record decides, never the caller's copy of the key:
     * it holds the event's real time after earlier delays. */
    uint32_t oi = outgoing_find(s, key->sequence);
    if (oi == UINT32_MAX || s->outgoing[oi].target != key->target)
        return kr__fail(KR_ERR_STATE, "%s: '%s': no sync-event with sequence %llu it may still change (already run, "
                        "cancelled, or past now + promise)", fn, s->name, (unsigned long long)key->sequence);
    kr__outgoing_t o = s->outgoing[oi];
    kr__edge_t *e = kr__edge(m, s->id, o.target);
    kr_time_t limit = kr__time_add(s->now, e->promise);
    kr_time_t new_time = kr__time_add(o.time, delay ? extra : 0);
    if (o.time < limit)
        return kr__fail(KR_ERR_STATE, "%s: sync-event from '%s' (now %g) to '%s' at %g: too late, the limit is "
                        "now + promise = %g", fn, s->name, units(m, s->now), m->sims[o.target]->name,
                        units(m, o.time), units(m, limit));
    /* A sender side still waiting here moves or goes with the event; one
     * that already ran has sent the payload on its way. */
    uint32_t slot = o.sender_handle ? kr__rec_find(s, s->id, key->sequence, o.sender_handle) : UINT32_MAX;
    if (!delay && o.carries_entities)
        return kr__fail(KR_ERR_STATE, "kr_cancel: sync-event from '%s' to '%s' at %g carries entities; %s (delay it "
                        "instead)", s->name, m->sims[o.target]->name, units(m, o.time),
                        slot != UINT32_MAX ? "one with entities cannot be cancelled (they leave when its sender side "
                                             "runs)"
                                           : "cancelling would lose them (they have left the sender's world)");
    if (slot != UINT32_MAX) {
        kr_event_key_t sender_key = kr__rec_key(s, &s->recs[slot], slot);
        kr_status_t st = kr__sim_change(s, &sender_key, delay, extra, NULL, fn);
        if (st) return st;
    }
    /* A sender side that will never run (at or after s's stop horizon):
     * its target half is withdrawn already (kr__sync_withdraw) or, at or
     * after the target's horizon, never runs; one delayed there now is
     * withdrawn. */
    bool never = slot != UINT32_MAX && new_time >= s->stop_horizon;
    kr_status_t st;
    if (never && o.time >= s->stop_horizon) {
        st = KR_OK;
    } else if (never && new_time < m->sims[o.target]->stop_horizon) {
        st = kr__sync_withdraw(s, o.target, key->sequence, new_time);
    } else if (e->internal || e->direct) {
        kr_sim_t *t = m->sims[o.target];
        uint32_t ts = kr__rec_find(t, s->id, key->sequence, o.target_handle);
        if (ts == UINT32_MAX)
            return kr__fail(KR_ERR_STATE, "%s: '%s': the sync-event to '%s' has already run", fn, s->name, t->name);
        kr_event_key_t target_key = kr__rec_key(t, &t->recs[ts], ts);
        st = kr__sim_change(t, &target_key, delay, extra, NULL, fn);
        if (!st) count_direct(m, e);
    } else {
        uint8_t *p = begin_data(m, s, delay ? MSG_DELAY : MSG_CANCEL, e, new_time, 8);
        if (p) put(p, key->sequence, 8);
        st = p ? transmit(m, e) : kr_last_status();
    }
    if (st) return st;
    if (delay) s->outgoing[oi].time = new_time;
    else outgoing_drop(s, oi);
    if (new_key) {
        *new_key = *key;
        new_key->time = new_time;
    }
    return KR_OK;
}

/* ---- delivery ---- */

static kr_status_t bad(kr_model_t *m, uint32_t from, const char *what)
{
    const char *name = from < m->sim_count ? m->sims[from]->name : "?";
    return kr__fail(KR_ERR_CORRUPT, "bad message from simulator '%s' (id %u): %s", name, from, what);
}

/* A payload after its size (put_payload): the data, the root count and
 * the pack's length in one view, then the pack. */
static inline kr_status_t read_payload_after_size(kr_reader_t *r, uint32_t size, const void **data, uint32_t *roots,
                                                  const void **pack, uint32_t *pack_len)
{
#if SIZE_MAX <= UINT32_MAX
    if (size > SIZE_MAX - 8) return KR_ERR_CORRUPT; /* (size + 8 would wrap) */
#endif
    const uint8_t *p = kr_reader_view(r, (size_t)size + 8);
    if (!p) return KR_ERR_CORRUPT;
    *data = p;
    *roots = (uint32_t)get(p + size, 4);
    *pack_len = (uint32_t)get(p + size + 4, 4);
    *pack = kr_reader_view(r, *pack_len);
    return *pack ? KR_OK : KR_ERR_CORRUPT;
}

static inline kr_status_t read_payload(kr_reader_t *r, const void **data, uint32_t *size, uint32_t *roots,
                                       const void **pack, uint32_t *pack_len)
{
    *size = (uint32_t)rd(r, 4);
    if (r->failed) return KR_ERR_CORRUPT;
    return read_payload_after_size(r, *size, data, roots, pack, pack_len);
}

/* Applies one sync-event of a SYNC message, at `time`: the reader is at
 * its priority and is left at the next one's time, if any. */
FORCE_INLINE kr_status_t apply_sync(kr_model_t *m, kr__edge_t *e, kr_sim_t *t, kr_time_t time, kr_reader_t *r)
{
    /* (the fixed fields and the payload's size in one view) */
    const uint8_t *p = kr_reader_view(r, SYNC_FIXED_LEN + 4);
    if (!p) return bad(m, e->from, "truncated sync-event");
    kr_event_key_t k = { .time = time, .source = e->from, .phase = 1, .target = e->to };
    k.priority = (kr_priority_t)(uint32_t)get(p, 4);
    k.sequence = get(p + 4, 8);
    kr_event_type_t type = (uint32_t)get(p + 12, 4);
    uint8_t placeholder = p[16];
    uint32_t size = (uint32_t)get(p + SYNC_FIXED_LEN, 4);
    const void *data, *pack;
    uint32_t roots, pack_len;
    if (read_payload_after_size(r, size, &data, &roots, &pack, &pack_len))
        return bad(m, e->from, "truncated sync-event");
    const kr__event_type_rec_t *tr = kr__event_type(m, type);
    if (!tr || !tr->desc.on_target_side) return bad(m, e->from, "unknown sync-event type");
    if (placeholder > 1 || k.priority == KR_PRIORITY_STEP) return bad(m, e->from, "bad sync-event flags");
    if (placeholder ? size != 0 || pack_len || roots : size != tr->desc.size)
        return bad(m, e->from, "sync-event payload size does not match its type");
    if ((roots == 0) != (pack_len == 0) || roots > pack_len) return bad(m, e->from, "entity count does not match the pack");
    /* (past the end, guarantees read "never": such events never run) */
    if (time < e->guarantee && time <= m->end_time) return bad(m, e->from, "sync-event below a guarantee already given");
    /* The sender's sequence grows with every schedule and the edge is
     * applied in order, so a sequence at or below the last is reused. */
    if (k.sequence < e->next_sync_seq) return bad(m, e->from, "sync-event sequence reused");
    kr_status_t st = add_target(t, &k, type, placeholder, placeholder ? NULL : data, (uint32_t)tr->desc.size, roots,
                                pack, pack_len, NULL);
    if (!st) e->next_sync_seq = k.sequence + 1;
    return st;
}

/* Applies one data message that is next in its edge's order. */
static kr_status_t apply_data(kr_model_t *m, kr__edge_t *e, uint8_t kind, kr_time_t time, kr_reader_t *r)
{
    kr_sim_t *t = m->sims[e->to];
    if (kind == MSG_STOP) {
        uint32_t by = (uint32_t)rd(r, 4);
        if (r->failed || kr_reader_left(r)) return bad(m, e->from, "truncated or overlong stop");
        if (by >= m->sim_count) return bad(m, e->from, "stop by an unknown simulator");
        if (time > m->end_time) return bad(m, e->from, "stop after the end time");
        m->touched_all = true; /* (horizons may move anywhere) */
        return kr__stop_learn(m, by, time);
    }
    if (time < t->now && kind != MSG_CANCEL) return bad(m, e->from, "event time before the target's current time");
    switch (kind) {
    case MSG_SYNC:
        /* The first sync-event has the header's time; each further one
         * (append_sync) brings its own. */
        for (;;) {
            kr_status_t st = apply_sync(m, e, t, time, r);
            if (st || !kr_reader_left(r)) return st;
            time = (kr_time_t)rd(r, 8);
            if (r->failed) return bad(m, e->from, "truncated sync-event");
            if (time < t->now) return bad(m, e->from, "event time before the target's current time");
        }
    case MSG_PAYLOAD: {
        uint64_t seq = rd(r, 8);
        const void *data, *pack;
        uint32_t size, roots, pack_len;
        if (read_payload(r, &data, &size, &roots, &pack, &pack_len) || kr_reader_left(r))
            return bad(m, e->from, "truncated or overlong payload");
        if ((roots == 0) != (pack_len == 0) || roots > pack_len) return bad(m, e->from, "entity count does not match the pack");
        if (fill_target(t, e->from, seq, data, size, roots, pack, pack_len)) return bad(m, e->from, kr_last_error());
        return KR_OK;
    }
    case MSG_CANCEL:
    case MSG_DELAY: {
        uint64_t seq = rd(r, 8);
        if (r->failed || kr_reader_left(r)) return bad(m, e->from, "truncated or overlong cancel/delay");
        uint32_t slot = kr__rec_find(t, e->from, seq, 0);
        /* (withdrawn before the checkpoint this run restarted from, and
         * withdrawn again: kr__sync_withdraw) */
        if (slot == UINT32_MAX && kind == MSG_CANCEL && time >= m->sims[e->from]->stop_horizon) return KR_OK;
        if (slot == UINT32_MAX) return bad(m, e->from, "cancel or delay of an unknown sync-event");
        kr_event_key_t k = kr__rec_key(t, &t->recs[slot], slot);
        if (kind == MSG_DELAY && time < k.time) return bad(m, e->from, "delay to an earlier time");
        return kr__sim_change(t, &k, kind == MSG_DELAY, kind == MSG_DELAY ? time - k.time : 0, NULL, "delivery");
    }
    }
    return bad(m, e->from, "unknown message kind");
}

/* Keeps a message that arrived ahead of its turn (deliver_one has already
 * dropped duplicates of kept ones). */
static kr_status_t keep_early(kr__edge_t *e, uint64_t seq, const void *bytes, size_t len)
{
    if (e->early_count == e->early_cap) {
        /* Two arrays, one capacity: it grows once both have. */
        size_t cap = e->early_cap, seq_cap = e->early_cap;
        if (KR__GROW(e->early, cap, e->early_count + 1, 8, NULL) ||
            KR__GROW(e->early_seq, seq_cap, e->early_count + 1, 8, NULL))
            return kr__fail(KR_ERR_NOMEM, "out of memory holding early messages");
        e->early_cap = cap;
    }
    kr_buf_init(&e->early[e->early_count]);
    kr_status_t st = kr_buf_append(&e->early[e->early_count], bytes, len);
    if (st) return st;
    e->early_seq[e->early_count++] = seq;
    return KR_OK;
}

static kr_status_t deliver_one(kr_model_t *m, const void *bytes, size_t len, bool from_early);

/* Guarantees and early messages waiting for the edge's count to catch up. */
static kr_status_t catch_up(kr_model_t *m, kr__edge_t *e)
{
    for (;;) {
        size_t i = 0;
        while (i < e->early_count && e->early_seq[i] != e->received) i++;
        if (i == e->early_count) break;
        kr_buf_t msg = e->early[i];
        e->early[i] = e->early[e->early_count - 1];
        e->early_seq[i] = e->early_seq[e->early_count - 1];
        e->early_count--;
        kr_status_t st = deliver_one(m, msg.data, msg.len, true);
        kr_buf_fini(&msg);
        if (st) return st;
    }
    size_t keep = 0;
    for (size_t i = 0; i < e->pending_count; i++) {
        kr__pending_guarantee_t p = e->pending[i];
        if (p.count <= e->received) {
            if (p.time > e->guarantee) e->guarantee = p.time;
        } else {
            e->pending[keep++] = p;
        }
    }
    e->pending_count = keep;
    return KR_OK;
}

static kr_status_t deliver_one(kr_model_t *m, const void *bytes, size_t len, bool from_early)
{
    if (len < HEADER_LEN) return bad(m, UINT32_MAX, "truncated header");
    const uint8_t *h = bytes;
    uint8_t kind = h[0];
    uint32_t from = (uint32_t)get(h + 1, 4), to = (uint32_t)get(h + 5, 4);
    uint64_t edge_seq = get(h + 9, 8);
    kr_time_t time = get(h + TIME_AT, 8);
    if (from >= m->sim_count || to >= m->sim_count) return bad(m, from, "unknown simulator id");
    kr__edge_t *e = kr__edge(m, from, to);
    if (!e || e->internal) return bad(m, from, "no such dependency");
    kr__touch_edge(m, e);
    if (kind == MSG_GUARANTEE) {
        if (len != HEADER_LEN) return bad(m, from, "overlong guarantee");
        if (edge_seq <= e->received) {
            if (time > e->guarantee) e->guarantee = time;
            return KR_OK;
        }
        if (e->pending_count == e->pending_cap && KR__GROW(e->pending, e->pending_cap, e->pending_count + 1, 4, NULL))
            return kr__fail(KR_ERR_NOMEM, "out of memory holding guarantees");
        e->pending[e->pending_count++] = (kr__pending_guarantee_t){ edge_seq, time };
        return KR_OK;
    }
    if (kind == MSG_REQUEST) {
        if (len != HEADER_LEN) return bad(m, to, "overlong guarantee request");
        if (!m->groups[m->sims[from]->group].local) return bad(m, to, "a guarantee request for another process");
        /* the coordinator answers it with the next guarantees it sends */
        if (time > e->demand) {
            e->demand = time;
            m->groups[m->sims[from]->group].sent_valid = false; /* (send_guarantees) */
        }
        return KR_OK;
    }
    if (!is_data(kind)) return bad(m, from, "unknown message kind");
    if (len < DATA_HEADER_LEN) return bad(m, from, "truncated header");
    kr_time_t piggyback = get(h + DATA_GUARANTEE_AT, 8);
    if (edge_seq < e->received) return KR_OK;                     /* a duplicate */
    if (!from_early) {
        for (size_t i = 0; i < e->early_count; i++)
            if (e->early_seq[i] == edge_seq) return KR_OK;        /* a duplicate of an early one */
        m->msgs_delivered++;
    }
    if (edge_seq > e->received) return keep_early(e, edge_seq, bytes, len);
    kr_reader_t r = { .data = h + DATA_HEADER_LEN, .len = len - DATA_HEADER_LEN };
    kr_status_t st = apply_data(m, e, kind, time, &r);
    if (st) return st;
    e->received++;
    if (piggyback > e->guarantee) e->guarantee = piggyback;
    return from_early ? KR_OK : catch_up(m, e);
}

kr_status_t kr__sync_deliver(kr_model_t *m, const void *bytes, size_t len)
{
    kr_status_t st = deliver_one(m, bytes, len, false);
    if (st) kr__model_fail(m, st, "%s", kr_last_error());
    return st;
}
