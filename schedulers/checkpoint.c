/* A simulator's part of a checkpoint: see schedulers/checkpoint.h.
 *
 * Layout (little-endian, kr_buf_put_*): magic "KRSM", version, name;
 * clock and counters; random stream; the model's event type names (so a
 * record's type is read back by name); event records by slot, with the
 * free list in its order (a key a model kept names its record by slot);
 * the outgoing table (sync-events it may still cancel or delay); the
 * state blocks and statistics (state.c); the continuous state
 * (continuous.c); the world's image (ecs/image.h). */
#include <stdlib.h>
#include <string.h>
#include "kairos/rng.h"
#include "base/error.h"
#include "ecs/image.h"
#include "schedulers/checkpoint.h"
#include "schedulers/model_private.h"

#define SIM_MAGIC 0x4d53524bu /* "KRSM" */
#define SIM_VERSION 4u /* 3: a continuous simulator's anchor (continuous.c); 4: an emulation's counts */

static void put_bytes(kr_buf_t *b, const void *p, size_t n)
{
    kr_buf_put_u64(b, n);
    kr_buf_append(b, p, n);
}

static void put_text(kr_buf_t *b, const char *text)
{
    put_bytes(b, text, text ? strlen(text) : 0);
}

/* An emulation input's text is "event\0to\0data": its length spans all three. */
static size_t input_text_len(const char *text)
{
    size_t n = 0;
    for (int i = 0; i < 3; i++) n += strlen(text + n) + 1;
    return n;
}

/* A record's slot byte: 0 for a free slot, else these bits. */
enum { SLOT_PENDING = 1, SLOT_KIND_SHIFT = 1 /* 3 bits */, SLOT_AWAITING = 16, SLOT_EXTRA = 32, SLOT_BEFORE_NOW = 64 };

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* The rare fields: entities a sync-event carries, an input's text. */
static void save_extra(kr_buf_t *b, const kr__rec_extra_t *x)
{
    put_bytes(b, x->pack.data, x->pack.len);
    kr_buf_put_u64(b, x->root_count);
    kr_buf_put_u8(b, x->roots != NULL);
    for (size_t i = 0; x->roots && i < x->root_count; i++) kr_buf_put_u64(b, x->roots[i]);
    if (x->text) put_bytes(b, x->text, input_text_len(x->text));
    else put_bytes(b, NULL, 0);
    kr_buf_put_u32(b, x->target);
}

/* One pending record, compact: a large queue's records are alike (times
 * near now, small ids), and varints halve what zstd must then take
 * (bench/README.md, "Checkpoints"). */
static kr_status_t save_record(kr_sim_t *s, kr_buf_t *b, const kr__event_rec_t *r)
{
    if (kr_buf_reserve(b, 2 + 6 * 10 + (size_t)r->data_size)) return kr_last_status();
    const kr__rec_extra_t *x = kr__rec_extra_peek(s, r);
    bool before = r->time < s->now;
    uint8_t *p = b->data + b->len;
    *p++ = (uint8_t)(SLOT_PENDING | (r->kind << SLOT_KIND_SHIFT) | (r->flags & KR__EVREC_AWAITING ? SLOT_AWAITING : 0) |
                     (x ? SLOT_EXTRA : 0) | (before ? SLOT_BEFORE_NOW : 0));
    *p++ = r->phase;
    p = put_varint(p, before ? s->now - r->time : r->time - s->now);
    p = put_varint(p, r->sequence);
    /* zigzag, shifted as unsigned: a negative priority shifted as signed is undefined */
    p = put_varint(p, ((uint64_t)(int64_t)r->priority << 1) ^ (uint64_t)((int64_t)r->priority >> 63));
    p = put_varint(p, r->source);
    p = put_varint(p, r->type);
    p = put_varint(p, r->data_size);
    memcpy(p, kr__rec_data((kr__event_rec_t *)r), r->data_size);
    b->len = (size_t)(p + r->data_size - b->data);
    if (x) save_extra(b, x);
    return KR_OK;
}

kr_status_t kr__sim_checkpoint_save(kr_sim_t *s, kr_buf_t *b)
{
    kr_model_t *m = s->model;
    if (!s->local || s->executing)
        return kr__fail(KR_ERR_STATE, "checkpoint: simulator '%s' is not at rest here", s->name);
    kr_buf_put_u32(b, SIM_MAGIC);
    kr_buf_put_u32(b, SIM_VERSION);
    put_text(b, s->name);
    kr_buf_put_u32(b, (uint32_t)s->formalism);
    kr_buf_put_u64(b, s->now);
    kr_buf_put_u64(b, s->executed);
    kr_buf_put_u64(b, s->digest);
    kr_buf_put_u64(b, s->sync_sent);
    kr_buf_put_u64(b, s->sync_received);
    kr_buf_put_u64(b, s->sequence);
    kr_rng_state_t rs;
    kr_rng_save(s->rng, &rs);
    for (int i = 0; i < KR_RNG_STATE_WORDS; i++) kr_buf_put_u64(b, rs.words[i]);

    kr_buf_put_u32(b, m->type_count);
    for (uint32_t t = 0; t < m->type_count; t++) put_text(b, m->types[t].name);
    kr_buf_put_u32(b, s->rec_count);
    uint32_t free_count = 0;
    for (uint32_t slot = s->free_head; slot != UINT32_MAX && free_count <= s->rec_count;
         slot = s->recs[slot].data.next_free)
        free_count++;
    kr_buf_put_u32(b, free_count);
    for (uint32_t slot = s->free_head; slot != UINT32_MAX; slot = s->recs[slot].data.next_free) kr_buf_put_u32(b, slot);
    /* most of a part is its records: room for them at once, not by doublings */
    if (kr_buf_reserve(b, (size_t)s->rec_count * 24)) return kr_last_status();
    for (uint32_t slot = 0; slot < s->rec_count; slot++) {
        const kr__event_rec_t *r = &s->recs[slot];
        kr_status_t st = r->state == KR__EVREC_PENDING ? save_record(s, b, r) : kr_buf_put_u8(b, 0);
        if (st) return st;
    }
    kr_buf_put_u8(b, s->index_targets);
    kr_buf_put_u32(b, s->outgoing_count);
    for (uint32_t i = 0; i < s->outgoing_count; i++) {
        const kr__outgoing_t *o = &s->outgoing[i];
        kr_buf_put_u64(b, o->sequence);
        kr_buf_put_u64(b, o->time);
        kr_buf_put_u64(b, o->promise);
        kr_buf_put_u32(b, o->target);
        kr_buf_put_u32(b, o->sender_handle);
        kr_buf_put_u32(b, o->target_handle);
        kr_buf_put_u8(b, (uint8_t)(o->live | (o->carries_entities << 1)));
    }
    kr__sim_states_save(s, b);
    kr__continuous_save(s, b);
    kr__emulation_save(s, b);
    size_t at = b->len;
    kr_buf_put_u64(b, 0);
    kr_status_t st = kr__world_image_save(s->world, b);
    if (st) return st;
    uint64_t len = b->len - at - 8;
    memcpy(b->data + at, &len, 8);
    return kr_buf_put_u64(b, SIM_MAGIC) ? kr_last_status() : KR_OK;
}

/* ---- loading ---- */

static kr_status_t corrupt(const kr_sim_t *s, const char *what)
{
    return kr__fail(KR_ERR_CORRUPT, "simulator '%s': %s", s->name, what);
}

/* A length-prefixed byte string: its bytes (NULL, *n 0 if empty) or NULL
 * with r failed. */
static const void *get_bytes(kr_reader_t *r, size_t *n)
{
    uint64_t len = kr_reader_u64(r);
    *n = 0;
    if (len > kr_reader_left(r)) {
        r->failed = true;
        return NULL;
    }
    *n = (size_t)len;
    return kr_reader_view(r, (size_t)len);
}

static bool same_text(kr_reader_t *r, const char *text)
{
    size_t n;
    const char *p = get_bytes(r, &n);
    return !r->failed && n == strlen(text) && (!n || !memcmp(p, text, n));
}

/* Every record and queue entry of s dropped: what its setup scheduled
 * goes, the checkpoint's events come instead. */
static void clear_events(kr_sim_t *s)
{
    for (uint32_t i = 0; i < s->rec_count; i++)
        if (s->recs[i].state == KR__EVREC_PENDING) kr__rec_free(s, i);
    s->rec_count = 0;
    s->free_head = UINT32_MAX;
    s->extra_count = 0;
    s->extra_free = UINT32_MAX;
    s->stale_entries = 0;
    kr__equeue_fini(&s->queue);
    kr__equeue_init(&s->queue);
    kr__hmap_fini(&s->by_source);
    kr__hmap_init(&s->by_source);
    s->outgoing_count = s->outgoing_live = 0;
}

static kr_status_t load_extra(kr_sim_t *s, kr_reader_t *r, kr__event_rec_t *rec)
{
    kr__rec_extra_t *x = kr__rec_extra(s, rec);
    if (!x) return kr_last_status();
    size_t n;
    const void *pack = get_bytes(r, &n);
    if (r->failed || (n && kr_buf_append(&x->pack, pack, n))) return corrupt(s, "a saved event's entities are cut short");
    uint64_t roots = kr_reader_u64(r);
    x->root_count = (size_t)roots;
    if (kr_reader_u8(r)) {
        if (roots > kr_reader_left(r) / 8) return corrupt(s, "a saved event's roots are cut short");
        if (roots && !(x->roots = malloc((size_t)roots * sizeof *x->roots)))
            return kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory", s->name);
        for (uint64_t i = 0; i < roots; i++) x->roots[i] = kr_reader_u64(r);
    }
    const char *text = get_bytes(r, &n);
    if (n) {
        /* three NUL-terminated strings, and nothing after them */
        size_t nuls = 0;
        for (size_t i = 0; text && i < n; i++) nuls += text[i] == 0;
        if (!text || nuls != 3 || text[n - 1] != 0)
            return corrupt(s, "a saved input event is malformed");
        if (!(x->text = malloc(n))) return kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory", s->name);
        memcpy(x->text, text, n);
    }
    x->target = kr_reader_u32(r);
    if (x->target >= s->model->sim_count) return corrupt(s, "a saved event names no simulator of the model");
    return KR_OK;
}

static uint64_t get_varint(kr_reader_t *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        const uint8_t *p = kr_reader_view(r, 1);
        if (!p) return 0;
        v |= (uint64_t)(*p & 0x7f) << shift;
        if (!(*p & 0x80)) return v;
    }
    r->failed = true;
    return 0;
}

static kr_status_t load_record(kr_sim_t *s, kr_reader_t *r, uint32_t slot, uint8_t bits, const kr_event_type_t *type_of,
                               uint32_t type_count, kr_time_t saved_end)
{
    kr_model_t *m = s->model;
    kr__event_rec_t *rec = &s->recs[slot];
    rec->kind = (uint8_t)((bits >> SLOT_KIND_SHIFT) & 7);
    rec->phase = kr_reader_u8(r);
    uint64_t dt = get_varint(r);
    rec->time = bits & SLOT_BEFORE_NOW ? s->now - dt : s->now + dt;
    bool time_ok = bits & SLOT_BEFORE_NOW ? dt <= s->now : dt <= KR_TIME_NEVER - s->now;
    rec->sequence = get_varint(r);
    uint64_t prio = get_varint(r);
    rec->priority = (kr_priority_t)(int64_t)((prio >> 1) ^ (~(prio & 1) + 1));
    uint64_t source = get_varint(r), type = get_varint(r), n = get_varint(r);
    const void *data = n <= kr_reader_left(r) ? kr_reader_view(r, (size_t)n) : NULL;
    if (r->failed || (n && !data)) return corrupt(s, "its saved events are cut short");
    if (rec->kind > KR__EV_STATE || source >= m->sim_count || type > type_count || !time_ok || n > UINT32_MAX ||
        prio > UINT32_MAX || (bits & 128))
        return corrupt(s, "a saved event is malformed");
    rec->source = (uint32_t)source;
    rec->type = type ? type_of[type - 1] : 0;
    const kr__event_type_rec_t *t = kr__event_type(m, rec->type);
    if (type && (!t || (n && n != t->desc.size))) return corrupt(s, "a saved event's payload does not fit its type");
    /* what running it calls must be there: its type's handler, or its
     * formalism's part of the simulator */
    bool runs = false;
    switch ((kr__event_kind_t)rec->kind) {
    /* handlers read the type's whole payload */
    case KR__EV_LOCAL: runs = t && t->desc.on_event && n == t->desc.size; break;
    case KR__EV_STATE: runs = t && t->desc.on_event && n == t->desc.size && s->cont; break;
    case KR__EV_SENDER: runs = t && n == t->desc.size; break;
    /* a placeholder's payload is still on its way */
    case KR__EV_TARGET:
        runs = t && t->desc.on_target_side && (n == t->desc.size || (bits & SLOT_AWAITING && n == 0));
        break;
    case KR__EV_STEP: runs = s->formalism == KR_AGENT_BASED; break;
    case KR__EV_OBSERVE: runs = s->cont != NULL; break;
    case KR__EV_INPUT: runs = s->emu != NULL; break;
    }
    if (!runs) return corrupt(s, "a saved event does not fit its type or its simulator");
    rec->flags = bits & SLOT_AWAITING ? KR__EVREC_AWAITING : 0;
    kr_status_t st = kr__rec_set_data(rec, data, (size_t)n);
    if (st) return st;
    if ((bits & SLOT_EXTRA) && (st = load_extra(s, r, rec))) return st;
    /* the last update point of a continuous simulator is the end */
    if (rec->kind == KR__EV_OBSERVE && rec->time == saved_end) rec->time = m->end_time;
    return KR_OK;
}

static kr_status_t load_events(kr_sim_t *s, kr_reader_t *r, kr_time_t saved_end)
{
    kr_model_t *m = s->model;
    uint32_t types = kr_reader_u32(r);
    if (types > kr_reader_left(r)) return corrupt(s, "its saved event types are cut short");
    kr_event_type_t *type_of = calloc(types ? types : 1, sizeof *type_of);
    if (!type_of) return kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory", s->name);
    kr_status_t st = KR_OK;
    for (uint32_t i = 0; i < types && !st; i++) {
        size_t n;
        const char *name = get_bytes(r, &n);
        for (uint32_t k = 0; name && k < m->type_count && !type_of[i]; k++)
            if (strlen(m->types[k].name) == n && !memcmp(m->types[k].name, name, n)) type_of[i] = k + 1;
        if (!type_of[i])
            st = kr__fail(KR_ERR_CORRUPT, "simulator '%s': its saved events have a type '%.*s' the model does not",
                          s->name, (int)(n < 200 ? n : 200), name ? name : "");
    }
    clear_events(s);
    uint32_t count = kr_reader_u32(r), free_count = kr_reader_u32(r);
    if (!st && (count > kr_reader_left(r) || free_count > count)) st = corrupt(s, "its saved events are cut short");
    for (uint32_t i = 0; i < count && !st; i++)
        if (kr__rec_alloc(s) != i) st = kr_last_status();
    /* the free list, in its order: slots are handed out again as they would have been */
    uint32_t *chain = st ? NULL : malloc(((size_t)free_count + 1) * sizeof *chain);
    if (!st && !chain) st = kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory", s->name);
    for (uint32_t i = 0; i < free_count && !st; i++) {
        chain[i] = kr_reader_u32(r);
        if (chain[i] >= count) st = corrupt(s, "its saved free list is malformed");
    }
    for (uint32_t slot = 0; slot < count && !st; slot++) {
        uint8_t bits = kr_reader_u8(r);
        if (r->failed) st = corrupt(s, "its saved events are cut short");
        else if (bits & SLOT_PENDING) st = load_record(s, r, slot, bits, type_of, types, saved_end);
        else if (bits) st = corrupt(s, "a saved event slot is malformed");
        else s->recs[slot].state = KR__EVREC_FREE;
    }
    /* the free list must name exactly the free slots, each once */
    for (uint32_t i = 0; i < free_count && !st; i++) {
        kr__event_rec_t *rec = &s->recs[chain[i]];
        if (rec->state != KR__EVREC_FREE || rec->flags == 0xff) st = corrupt(s, "its saved free list is malformed");
        else rec->flags = 0xff;
    }
    for (uint32_t slot = 0; slot < count && !st; slot++) {
        kr__event_rec_t *rec = &s->recs[slot];
        if (rec->state == KR__EVREC_FREE && rec->flags != 0xff) st = corrupt(s, "its saved free list is malformed");
    }
    if (!st) {
        s->free_head = UINT32_MAX;
        for (uint32_t i = free_count; i-- > 0;) {
            kr__event_rec_t *rec = &s->recs[chain[i]];
            rec->flags = 0;
            rec->data.next_free = s->free_head;
            s->free_head = chain[i];
        }
        s->index_targets = kr_reader_u8(r);
        for (uint32_t slot = 0; slot < count && !st; slot++)
            if (s->recs[slot].state == KR__EVREC_PENDING) st = kr__rec_enqueue(s, slot);
    } else {
        /* leave no half-made records behind for kr__sim_fini */
        for (uint32_t slot = 0; slot < s->rec_count; slot++)
            if (s->recs[slot].flags == 0xff) s->recs[slot].flags = 0;
    }
    free(chain);
    free(type_of);
    return st;
}

static kr_status_t load_outgoing(kr_sim_t *s, kr_reader_t *r)
{
    uint32_t n = kr_reader_u32(r);
    if (n > kr_reader_left(r) / 37) return corrupt(s, "its saved sync-events are cut short");
    if (n > s->outgoing_cap) {
        kr__outgoing_t *o = realloc(s->outgoing, (size_t)n * sizeof *o);
        if (!o) return kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory", s->name);
        s->outgoing = o;
        s->outgoing_cap = n;
    }
    s->outgoing_count = s->outgoing_live = 0;
    for (uint32_t i = 0; i < n; i++) {
        kr__outgoing_t *o = &s->outgoing[i];
        o->sequence = kr_reader_u64(r);
        o->time = kr_reader_u64(r);
        o->promise = kr_reader_u64(r);
        o->target = kr_reader_u32(r);
        o->sender_handle = kr_reader_u32(r);
        o->target_handle = kr_reader_u32(r);
        uint8_t bits = kr_reader_u8(r);
        o->live = bits & 1;
        o->carries_entities = (bits >> 1) & 1;
        if (o->target >= s->model->sim_count || bits > 3 || o->sender_handle > s->rec_count ||
            (i && o->sequence <= s->outgoing[i - 1].sequence))
            return corrupt(s, "its saved sync-events are malformed");
        s->outgoing_count++;
        s->outgoing_live += o->live;
    }
    return KR_OK;
}

kr_status_t kr__sim_checkpoint_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut, kr_time_t saved_end)
{
    if (kr_reader_u32(r) != SIM_MAGIC || kr_reader_u32(r) != SIM_VERSION)
        return corrupt(s, "its part of the checkpoint is not a simulator's state of this version");
    if (!same_text(r, s->name)) return corrupt(s, "its part of the checkpoint belongs to another simulator");
    if (kr_reader_u32(r) != (uint32_t)s->formalism) return corrupt(s, "it was saved with another formalism");
    /* The setup's entities go first, their on_destroy with them: what
     * those change (the declared state, events, the stream) is restored
     * below. (Cleared with the world image after the declared state, a
     * behavior counting its destroys in it restarted off by the setup's
     * entities; found by a new-user trial.) */
    if (kr__world_image_clear(s->world)) return kr__fail(kr_last_status(), "simulator '%s': %s", s->name, kr_last_error());
    s->now = kr_reader_u64(r);
    s->executed = kr_reader_u64(r);
    s->digest = kr_reader_u64(r);
    s->sync_sent = kr_reader_u64(r);
    s->sync_received = kr_reader_u64(r);
    s->sequence = kr_reader_u64(r);
    kr_rng_state_t rs;
    for (int i = 0; i < KR_RNG_STATE_WORDS; i++) rs.words[i] = kr_reader_u64(r);
    if (r->failed) return corrupt(s, "its part of the checkpoint is cut short");
    if (kr_rng_restore(s->rng, &rs)) return corrupt(s, "its saved random stream is not one");
    kr_status_t st = load_events(s, r, saved_end);
    if (!st) st = load_outgoing(s, r);
    if (!st) st = kr__sim_states_load(s, r);
    if (!st) st = kr__continuous_load(s, r, cut, saved_end);
    if (!st) st = kr__emulation_load(s, r, cut);
    if (st) return st;
    size_t n;
    const void *image = get_bytes(r, &n);
    if (r->failed) return corrupt(s, "its world is cut short");
    /* Behaviors relink in on_awake and on_start; scheduling or drawing
     * there would add to what the checkpoint holds (its events, its
     * stream): found by the sequence counter and the stream's position,
     * which cost the event loop nothing, and refused. */
    kr_rng_save(s->rng, &rs);
    uint64_t sequence = s->sequence;
    st = kr__world_image_load(s->world, image, n);
    kr_rng_state_t after;
    kr_rng_save(s->rng, &after);
    if (!st && s->sequence != sequence)
        st = kr__fail(KR_ERR_STATE, "on_awake or on_start scheduled an event while the world was restored (the "
                      "checkpoint holds every event already)");
    if (!st && memcmp(&rs, &after, sizeof rs))
        st = kr__fail(KR_ERR_STATE, "on_awake or on_start drew random numbers while the world was restored (the "
                      "checkpoint holds the stream where the run left it)");
    if (st) return kr__fail(st, "simulator '%s': %s", s->name, kr_last_error());
    if (kr_reader_u64(r) != SIM_MAGIC || r->failed) return corrupt(s, "its part of the checkpoint does not end right");
    s->restored = true;
    return KR_OK;
}

