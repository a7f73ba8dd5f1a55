/* One simulator: its event records and queue, local scheduling, cancel and
 * delay, and running the next event. */
#include <stdlib.h>
#include <string.h>
#include "kairos/rng.h"
#include "../ecs/error_private.h"
#include "model_private.h"

/* Queue words: priority (sign flipped so it compares unsigned) and source,
 * then sequence and phase. */
static kr_qentry_t entry_of(const kr_event_rec_t *r, uint32_t slot)
{
    kr_qentry_t q;
    q.time = r->key.time;
    q.hi = ((uint64_t)((uint32_t)r->key.priority ^ 0x80000000u) << 32) | r->key.source;
    q.lo = (r->key.sequence << 1) | r->key.phase;
    q.slot = slot;
    q.aux = r->version;
    return q;
}

static uint64_t source_hash(uint32_t source, uint64_t sequence)
{
    return kr_mix64(sequence * 0x100000001b3ULL ^ ((uint64_t)source << 48 | source));
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
    kr_hmap_init(&s->by_source);
    kr_hmap_init(&s->outgoing_index);
    return kr_equeue_init(&s->queue);
}

static void rec_release(kr_event_rec_t *r)
{
    free(r->data);
    r->data = NULL;
    kr_buf_fini(&r->pack);
    free(r->roots);
    r->roots = NULL;
    r->root_count = 0;
    free(r->text);
    r->text = NULL;
}

void kr__sim_fini(kr_sim_t *s)
{
    if (s->world) kr_world_destroy(s->world);
    if (s->rng) kr_rng_destroy(s->rng);
    for (uint32_t i = 0; i < s->rec_count; i++)
        if (s->recs[i].state == KR_REC_PENDING) rec_release(&s->recs[i]);
    free(s->recs);
    kr_equeue_fini(&s->queue);
    kr_hmap_fini(&s->by_source);
    kr_hmap_fini(&s->outgoing_index);
    free(s->outgoing);
    kr__continuous_fini(s);
    kr__emulation_fini(s);
    free(s->out_edges);
    free(s->in_edges);
    free(s->moved);
    free(s->contexts);
    free(s->name);
}

uint32_t kr__rec_alloc(kr_sim_t *s)
{
    uint32_t slot;
    if (s->free_head != UINT32_MAX) {
        slot = s->free_head;
        s->free_head = s->recs[slot].next_free;
    } else {
        if (s->rec_count == s->rec_cap) {
            uint32_t cap = s->rec_cap ? s->rec_cap * 2 : 64;
            kr_event_rec_t *recs = realloc(s->recs, cap * sizeof *recs);
            if (!recs) { kr__fail(KR_ERR_NOMEM, "simulator '%s': out of memory for events", s->name); return UINT32_MAX; }
            s->recs = recs;
            s->rec_cap = cap;
        }
        slot = s->rec_count++;
        s->recs[slot].version = 0;
    }
    kr_event_rec_t *r = &s->recs[slot];
    uint32_t version = r->version;
    memset(r, 0, sizeof *r);
    r->version = version;
    r->state = KR_REC_PENDING;
    kr_buf_init(&r->pack);
    return slot;
}

void kr__rec_free(kr_sim_t *s, uint32_t slot)
{
    kr_event_rec_t *r = &s->recs[slot];
    rec_release(r);
    r->state = KR_REC_FREE;
    r->version++;           /* any entry still queued for it is now stale */
    r->next_free = s->free_head;
    s->free_head = slot;
}

kr_status_t kr__rec_set_data(kr_event_rec_t *r, const void *data, size_t size)
{
    free(r->data);
    r->data = NULL;
    r->data_size = (uint32_t)size;
    r->data_inline = size <= KR_INLINE_DATA;
    if (!r->data_inline && !(r->data = malloc(size)))
        return kr__fail(KR_ERR_NOMEM, "out of memory for an event payload");
    void *dst = kr__rec_data(r);
    if (data && size) memcpy(dst, data, size);
    else if (size) memset(dst, 0, size);
    return KR_OK;
}

kr_status_t kr__rec_enqueue(kr_sim_t *s, uint32_t slot)
{
    kr_event_rec_t *r = &s->recs[slot];
    kr_qentry_t q = entry_of(r, slot);
    kr_status_t st = kr_equeue_push(&s->queue, &q);
    if (st) return st;
    st = kr_hmap_insert(&s->by_source, source_hash(r->key.source, r->key.sequence), slot);
    if (st) {
        r->version++;
        s->stale_entries++;
    }
    return st;
}

uint32_t kr__rec_find(const kr_sim_t *s, uint32_t source, uint64_t sequence)
{
    uint32_t cursor = 0, slot;
    while ((slot = kr_hmap_next(&s->by_source, source_hash(source, sequence), &cursor)) != KR_HMAP_EMPTY) {
        const kr_event_rec_t *r = &s->recs[slot];
        if (r->state == KR_REC_PENDING && r->key.source == source && r->key.sequence == sequence) return slot;
    }
    return UINT32_MAX;
}

static void rec_unindex(kr_sim_t *s, uint32_t slot)
{
    const kr_event_rec_t *r = &s->recs[slot];
    kr_hmap_remove(&s->by_source, source_hash(r->key.source, r->key.sequence), slot);
}

static bool entry_is_live(void *arg, const kr_qentry_t *q)
{
    const kr_sim_t *s = arg;
    return s->recs[q->slot].state == KR_REC_PENDING && s->recs[q->slot].version == q->aux;
}

/* Drops stale entries in bulk once they are the bulk of the queue, so a
 * model that delays one event many times does not grow the queue. */
static void maybe_purge(kr_sim_t *s)
{
    if (s->stale_entries > 1024 && s->stale_entries > kr_equeue_size(&s->queue) / 2) {
        if (kr_equeue_filter(&s->queue, entry_is_live, s) == KR_OK) s->stale_entries = 0;
    }
}

kr_event_rec_t *kr__sim_head(kr_sim_t *s)
{
    const kr_qentry_t *q;
    while ((q = kr_equeue_peek(&s->queue))) {
        if (entry_is_live(s, q)) return &s->recs[q->slot];
        kr_qentry_t dropped;
        kr_equeue_pop(&s->queue, &dropped);
        if (s->stale_entries) s->stale_entries--;
    }
    return NULL;
}

kr_time_t kr__sim_next_time(kr_sim_t *s)
{
    kr_event_rec_t *h = kr__sim_head(s);
    kr_time_t t = h ? h->key.time : KR_TIME_NEVER;
    if (s->executing && s->current.time < t) t = s->current.time;
    if (s->cont) t = kr__continuous_next(s, t);
    if (s->emu) t = kr__emulation_next(s, t);
    return t;
}

kr_status_t kr__sim_schedule_kind(kr_sim_t *s, kr_event_kind_t kind, kr_priority_t prio, kr_time_t t,
                                  kr_event_type_t type, const void *data, size_t size, kr_event_key_t *key)
{
    uint32_t slot = kr__rec_alloc(s);
    if (slot == UINT32_MAX) return kr_last_status();
    kr_event_rec_t *r = &s->recs[slot];
    r->key = (kr_event_key_t){ .time = t, .priority = prio, .source = s->id, .sequence = s->sequence++,
                               .phase = 0, .target = s->id };
    r->kind = (uint8_t)kind;
    r->type = type;
    kr_status_t st = kr__rec_set_data(r, data, size);
    if (!st) st = kr__rec_enqueue(s, slot);
    if (st) { kr__rec_free(s, slot); return st; }
    if (key) *key = s->recs[slot].key;
    return KR_OK;
}

kr_status_t kr_schedule(kr_sim_t *s, kr_priority_t priority, kr_time_t delay, kr_event_type_t type,
                        const void *data, kr_event_key_t *key)
{
    if (!s) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: null simulator");
    const kr_event_type_rec_t *t = kr__event_type(s->model, type);
    if (!t) return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': unknown event type %u", s->name, type);
    if (!t->desc.on_event)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': event type '%s' has no on_event (a sync-event type?)",
                        s->name, t->name);
    if (priority == KR_PRIORITY_STEP)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_schedule: '%s': priority %d is reserved for steps", s->name, priority);
    return kr__sim_schedule_kind(s, KR_EV_LOCAL, priority, kr__time_add(s->now, delay), type, data, t->desc.size, key);
}

kr_status_t kr__sync_cancel(kr_sim_t *s, const kr_event_key_t *key, bool delay, kr_time_t extra,
                            kr_event_key_t *new_key);

/* Cancels (extra ignored) or delays a pending record of this simulator. */
static kr_status_t change_local(kr_sim_t *s, uint32_t slot, bool delay, kr_time_t extra, kr_event_key_t *new_key)
{
    kr_event_rec_t *r = &s->recs[slot];
    s->stale_entries++;
    r->version++;
    if (!delay) {
        rec_unindex(s, slot);
        kr__rec_free(s, slot);
        maybe_purge(s);
        return KR_OK;
    }
    r->key.time = kr__time_add(r->key.time, extra);
    kr_qentry_t q = entry_of(r, slot);
    kr_status_t st = kr_equeue_push(&s->queue, &q);
    if (st) {
        rec_unindex(s, slot);
        kr__rec_free(s, slot);
        return st;
    }
    if (new_key) *new_key = r->key;
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
    uint32_t slot = kr__rec_find(s, key->source, key->sequence);
    if (slot == UINT32_MAX || s->recs[slot].key.phase != key->phase)
        return kr__fail(KR_ERR_STATE, "%s: '%s': no pending event with sequence %llu (already run or cancelled)", fn,
                        s->name, (unsigned long long)key->sequence);
    return change_local(s, slot, delay, extra, new_key);
}

kr_status_t kr_cancel(kr_sim_t *s, const kr_event_key_t *key)
{
    if (!s || !key) return kr__fail(KR_ERR_INVALID_ARG, "kr_cancel: null argument");
    if (key->target != s->id) return kr__sync_cancel(s, key, false, 0, NULL);
    if (key->source != s->id)
        return kr__fail(KR_ERR_STATE, "kr_cancel: '%s': a sync-event can be cancelled only by its sender", s->name);
    return kr__sim_change(s, key, false, 0, NULL, "kr_cancel");
}

kr_status_t kr_delay(kr_sim_t *s, const kr_event_key_t *key, kr_time_t extra, kr_event_key_t *new_key)
{
    if (!s || !key) return kr__fail(KR_ERR_INVALID_ARG, "kr_delay: null argument");
    if (key->target != s->id) return kr__sync_cancel(s, key, true, extra, new_key);
    if (key->source != s->id)
        return kr__fail(KR_ERR_STATE, "kr_delay: '%s': a sync-event can be delayed only by its sender", s->name);
    return kr__sim_change(s, key, true, extra, new_key, "kr_delay");
}

const kr_event_key_t *kr_event_current(const kr_sim_t *s)
{
    return s && s->executing ? &s->current : NULL;
}

static uint64_t key_digest(const kr_event_key_t *k, kr_event_type_t type)
{
    uint64_t h = kr_mix64(k->time ^ 0x9e3779b97f4a7c15ULL);
    h = kr_mix64(h ^ ((uint64_t)(uint32_t)k->priority << 32 | k->source));
    h = kr_mix64(h ^ k->sequence);
    return kr_mix64(h ^ ((uint64_t)type << 8 | k->phase));
}

bool kr__sim_run_head(kr_sim_t *s)
{
    kr_model_t *m = s->model;
    kr_event_rec_t *head = kr__sim_head(s);
    if (s->cont && !kr__continuous_advance(s, head->key.time)) return false;
    kr_qentry_t q;
    kr_equeue_pop(&s->queue, &q);
    /* Take the record out of the pool before running it: handlers schedule
     * events, which may move the pool, and must not see it as pending. */
    uint32_t slot = q.slot;
    kr_event_rec_t cur = s->recs[slot];
    void *data = kr__rec_data(&cur);
    rec_unindex(s, slot);
    s->recs[slot].data = NULL;
    s->recs[slot].roots = NULL;
    s->recs[slot].text = NULL;
    kr_buf_init(&s->recs[slot].pack);
    kr__rec_free(s, slot);

    s->now = cur.key.time;
    s->current = cur.key;
    s->executing = true;
    const kr_event_type_rec_t *type = kr__event_type(m, cur.type);
    switch ((kr_event_kind_t)cur.kind) {
    case KR_EV_LOCAL:
    case KR_EV_STATE:
        type->desc.on_event(s, data);
        break;
    case KR_EV_STEP: {
        kr_status_t st = kr_world_update(s->world);
        if (!st) st = kr__sim_schedule_kind(s, KR_EV_STEP, KR_PRIORITY_STEP, kr__time_add(s->now, s->time_step), 0,
                                            NULL, 0, NULL);
        if (st) kr__model_fail(m, st, "agent-based step of '%s': %s", s->name, kr_last_error());
        break;
    }
    case KR_EV_OBSERVE:
        kr__continuous_observe(s, true);
        break;
    case KR_EV_SENDER:
        if (type->desc.on_sender_side) type->desc.on_sender_side(s, data);
        kr__sync_send_payload(s, &cur);
        break;
    case KR_EV_TARGET:
        if (kr__sync_unpack(s, &cur) == KR_OK) {
            /* A continuous simulator comes up to date before it handles an
             * arrival (the seed's update on receiving a sync-event). */
            if (s->cont) kr__continuous_observe(s, false);
            type->desc.on_target_side(s, data);
        }
        s->moved_count = 0;
        break;
    case KR_EV_INPUT:
        kr__emulation_run_input(s, &cur);
        break;
    }
    s->executing = false;
    s->executed++;
    s->digest = kr_mix64(s->digest ^ key_digest(&cur.key, cur.type));
    if (cur.kind == KR_EV_TARGET) s->sync_received++;
    if (m->observer.on_event) m->observer.on_event(m->observer.arg, s, &cur.key, cur.type);
    rec_release(&cur);
    return true;
}

/* ---- accessors ---- */

uint32_t kr_sim_id(const kr_sim_t *s) { return s->id; }
const char *kr_sim_name(const kr_sim_t *s) { return s->name; }
kr_formalism_t kr_sim_formalism(const kr_sim_t *s) { return s->formalism; }
kr_time_t kr_sim_now(const kr_sim_t *s) { return s->now; }
kr_time_t kr_sim_time_step(const kr_sim_t *s) { return s->time_step; }
kr_world_t *kr_sim_world(kr_sim_t *s) { return s->world; }
kr_model_t *kr_sim_model(kr_sim_t *s) { return s->model; }
kr_rng_t *kr_sim_rng(kr_sim_t *s) { return s->rng; }
uint64_t kr_sim_event_count(const kr_sim_t *s) { return s->executed; }
uint64_t kr_sim_event_digest(const kr_sim_t *s) { return s->digest; }
uint64_t kr_sim_sync_sent(const kr_sim_t *s) { return s->sync_sent; }
uint64_t kr_sim_sync_received(const kr_sim_t *s) { return s->sync_received; }
uint64_t kr_sim_null_messages(const kr_sim_t *s) { return s->null_sent; }
double kr_sim_blocked_seconds(const kr_sim_t *s) { return (double)s->blocked_ns * 1e-9; }

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
