/* Channels and resources (kairos/channel.h). A pure ECS feature: the
 * channel state is the KR_CHANNEL data component, a resource is the
 * KR_RESOURCE tag, and a resource's channel list is its channel children.
 *
 * Nothing here trusts a stored id: a peer counts only if it is a live
 * channel of the other kind whose peer is this channel, and a resource only
 * if it is a live resource that is still the channel's parent. Destroy,
 * component removal, packs and direct writes therefore never leave a
 * half-connected pair that acts connected.
 *
 * Ready notifications go through a per-world queue (channel ids) that the
 * outermost channel call drains, so callbacks that send again run as a loop
 * rather than a recursion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "ecs/world_private.h"

/* ---- reading channels, without touching kr_last_error ---- */

static bool alive(const kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    return e && idx < w->record_count && (w->records[idx].flags & KR__REC_ALIVE) &&
           w->records[idx].generation == kr_entity_generation(e);
}

static bool dying(const kr_world_t *w, kr_entity_t e)
{
    return (w->records[kr_entity_index(e)].flags & KR__REC_DYING) != 0;
}

static bool has_table_component(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    const kr__record_t *r = &w->records[kr_entity_index(e)];
    return kr__column_index(w->tables[r->table], c) >= 0;
}

/* The channel value of live entity e, or NULL if it is not a channel (no
 * KR_CHANNEL, or one added by hand without a kind). */
static kr_channel_t *chan(const kr_world_t *w, kr_entity_t e)
{
    if (!alive(w, e)) return NULL;
    const kr__record_t *r = &w->records[kr_entity_index(e)];
    const kr__table_t *t = w->tables[r->table];
    int col = kr__column_index(t, KR_CHANNEL);
    if (col < 0) return NULL;
    kr_channel_t *c = kr__column_ptr(t, (uint32_t)col, r->row);
    return c->kind == KR_CHANNEL_INPUT || c->kind == KR_CHANNEL_OUTPUT ? c : NULL;
}

static uint32_t parent_index(const kr_world_t *w, uint32_t idx)
{
    return (w->records[idx].flags & KR__REC_TREE) ? w->tree[idx].parent : KR__NONE;
}

/* The connected channel, checked from both sides. */
static kr_entity_t peer_of(const kr_world_t *w, kr_entity_t e, const kr_channel_t *c)
{
    const kr_channel_t *p = chan(w, c->peer);
    return p && p->peer == e && p->kind != c->kind ? c->peer : KR_ENTITY_INVALID;
}

/* The resource holding channel e: alive, tagged, and still its parent. */
static kr_entity_t resource_of(const kr_world_t *w, kr_entity_t e, const kr_channel_t *c)
{
    kr_entity_t r = c->resource;
    if (!alive(w, r) || !has_table_component(w, r, KR_RESOURCE)) return KR_ENTITY_INVALID;
    return parent_index(w, kr_entity_index(e)) == kr_entity_index(r) ? r : KR_ENTITY_INVALID;
}

/* Why the pair of e is not ready, or NULL if it is. */
static const char *not_ready(const kr_world_t *w, kr_entity_t e, const kr_channel_t *c)
{
    kr_entity_t p = peer_of(w, e, c);
    if (!p) return "is not connected";
    const kr_channel_t *pc = chan(w, p);
    if (!c->open) return "is closed";
    if (!pc->open) return "has a closed peer";
    if (!resource_of(w, e, c)) return "has no resource (moved away from it, or it lost KR_RESOURCE)";
    if (!resource_of(w, p, pc)) return "has a peer without a resource (moved away from it, or it lost KR_RESOURCE)";
    if (dying(w, e) || dying(w, p) || dying(w, c->resource) || dying(w, pc->resource))
        return "is being destroyed";
    return NULL;
}

static bool ready(const kr_world_t *w, kr_entity_t e)
{
    const kr_channel_t *c = chan(w, e);
    return c && !not_ready(w, e, c);
}

/* ---- argument checks, with kr_last_error ---- */

static kr_channel_t *channel_arg(const kr_world_t *w, kr_entity_t e, const char *fn)
{
    if (!kr__live(w, e, fn)) return NULL;
    kr_channel_t *c = chan(w, e);
    if (!c)
        kr__fail(KR_ERR_NO_COMPONENT, "%s: entity %u:%u is not a channel", fn, kr_entity_index(e),
                 kr_entity_generation(e));
    return c;
}

static bool resource_arg(const kr_world_t *w, kr_entity_t e, const char *fn)
{
    if (!kr__live(w, e, fn)) return false;
    if (has_table_component(w, e, KR_RESOURCE)) return true;
    kr__fail(KR_ERR_NO_COMPONENT, "%s: entity %u:%u is not a resource (no KR_RESOURCE)", fn, kr_entity_index(e),
             kr_entity_generation(e));
    return false;
}

/* ---- the notification queue ---- */

static kr_status_t reserve_notes(kr_world_t *w, uint32_t more, const char *fn)
{
    if (w->note_head && w->note_head == w->note_count) w->note_head = w->note_count = 0;
    if (w->note_count + more <= w->note_capacity) return KR_OK;
    if (w->note_head) {
        /* Fired notes at the front: reuse their room before growing. */
        memmove(w->channel_notes, w->channel_notes + w->note_head,
                (w->note_count - w->note_head) * sizeof *w->channel_notes);
        w->note_count -= w->note_head;
        w->note_head = 0;
        if (w->note_count + more <= w->note_capacity) return KR_OK;
    }
    return KR__GROW_U32(w->channel_notes, w->note_capacity, w->note_count + more, 16, fn);
}

/* Queues the ready callbacks of e's pair, output first; room was reserved. */
static void note_pair(kr_world_t *w, kr_entity_t e, const kr_channel_t *c)
{
    kr_entity_t p = peer_of(w, e, c);
    kr_entity_t out = c->kind == KR_CHANNEL_OUTPUT ? e : p;
    w->channel_notes[w->note_count++] = out;
    w->channel_notes[w->note_count++] = out == e ? p : e;
}

static void enter(kr_world_t *w) { w->channel_depth++; }

/* Ends a channel call; the outermost one fires the queued notifications,
 * each only if its pair is still ready. Calls made by those callbacks are
 * nested (depth > 1) and only queue. */
static void leave(kr_world_t *w)
{
    if (w->channel_depth == 1) {
        while (w->note_head < w->note_count) {
            kr_entity_t e = w->channel_notes[w->note_head++];
            const kr_channel_t *c = chan(w, e);
            if (!c || not_ready(w, e, c)) continue;
            kr__callback_t cb = c->kind == KR_CHANNEL_OUTPUT ? KR__CB_OUTPUT_READY : KR__CB_INPUT_READY;
            kr__behaviors_fire(w, c->resource, cb, e);
        }
        w->note_head = w->note_count = 0;
    }
    w->channel_depth--;
}

/* leave() runs callbacks, which may overwrite kr_last_error: keep ours. */
static void leave_keeping_error(kr_world_t *w)
{
    char message[1024];
    kr_status_t st = kr_last_status();
    snprintf(message, sizeof message, "%s", kr_last_error());
    leave(w);
    kr__fail(st, "%s", message);
}

void kr__channel_forget(kr_world_t *w, uint32_t idx)
{
    kr_entity_t e = kr__id_of(w, idx);
    kr_channel_t *c = chan(w, e);
    if (!c) return;
    kr_channel_t *p = chan(w, c->peer);
    if (p && p->peer == e) p->peer = KR_ENTITY_INVALID;
    c->peer = KR_ENTITY_INVALID;
}

/* ---- resources ---- */

kr_status_t kr_resource_add(kr_world_t *w, kr_entity_t e)
{
    if (!kr__live(w, e, "kr_resource_add")) return kr_last_status();
    if (has_table_component(w, e, KR_RESOURCE))
        return kr__fail(KR_ERR_EXISTS, "kr_resource_add: entity %u:%u already is a resource", kr_entity_index(e),
                        kr_entity_generation(e));
    if (!kr_component_add(w, e, KR_RESOURCE)) return kr_last_status();
    return KR_OK;
}

static size_t list_channels(const kr_world_t *w, kr_entity_t r, uint32_t kind, kr_entity_t *out, size_t cap,
                            const char *fn)
{
    if (!resource_arg(w, r, fn)) return 0;
    if (cap && !out) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: out is NULL but cap is %zu", fn, cap);
        return 0;
    }
    uint32_t ri = kr_entity_index(r);
    if (!(w->records[ri].flags & KR__REC_TREE)) return 0;
    size_t n = 0;
    for (uint32_t i = w->tree[ri].first_child; i != KR__NONE; i = w->tree[i].next) {
        kr_entity_t e = kr__id_of(w, i);
        const kr_channel_t *c = chan(w, e);
        if (!c || c->kind != kind || c->resource != r) continue;
        if (n < cap) out[n] = e;
        n++;
    }
    return n;
}

size_t kr_resource_inputs(const kr_world_t *w, kr_entity_t r, kr_entity_t *out, size_t cap)
{
    return list_channels(w, r, KR_CHANNEL_INPUT, out, cap, "kr_resource_inputs");
}

size_t kr_resource_outputs(const kr_world_t *w, kr_entity_t r, kr_entity_t *out, size_t cap)
{
    return list_channels(w, r, KR_CHANNEL_OUTPUT, out, cap, "kr_resource_outputs");
}

/* ---- channels ---- */

kr_status_t kr_channel_add(kr_world_t *w, kr_entity_t ch, kr_channel_kind_t kind, kr_entity_t resource)
{
    const char *fn = "kr_channel_add";
    if (!kr__live(w, ch, fn)) return kr_last_status();
    if (!kr__live(w, resource, fn)) return kr_last_status();
    uint32_t ci = kr_entity_index(ch), ri = kr_entity_index(resource);
    if (kind != KR_CHANNEL_INPUT && kind != KR_CHANNEL_OUTPUT)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: kind %d is neither KR_CHANNEL_INPUT nor KR_CHANNEL_OUTPUT", fn,
                        (int)kind);
    if (ch == resource)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: entity %u cannot be a channel of itself", fn, ci);
    if (!resource_arg(w, resource, fn)) return kr_last_status();
    if (has_table_component(w, ch, KR_CHANNEL))
        return kr__fail(KR_ERR_EXISTS, "%s: entity %u already is a channel", fn, ci);
    for (uint32_t a = ri; a != KR__NONE; a = parent_index(w, a))
        if (a == ci)
            return kr__fail(KR_ERR_CYCLE, "%s: entity %u is an ancestor of resource %u and cannot be its channel",
                            fn, ci, ri);
    kr_channel_t *c = kr_component_add(w, ch, KR_CHANNEL);
    if (!c) return kr_last_status();
    /* Zeroed by the add, padding included (packs copy the raw bytes): set
     * fields one by one rather than assigning a struct. */
    c->resource = resource;
    c->kind = (uint32_t)kind;
    kr_status_t st = kr_entity_set_parent(w, ch, resource);
    if (st) {
        /* Hierarchy callbacks got in the way: take the component back. */
        char message[1024];
        snprintf(message, sizeof message, "%s", kr_last_error());
        if (kr_entity_alive(w, ch) && has_table_component(w, ch, KR_CHANNEL))
            kr_component_remove(w, ch, KR_CHANNEL);
        return kr__fail(st, "%s: %s", fn, message);
    }
    return KR_OK;
}

kr_status_t kr_channel_connect(kr_world_t *w, kr_entity_t output, kr_entity_t input)
{
    const char *fn = "kr_channel_connect";
    kr_channel_t *oc = channel_arg(w, output, fn);
    if (!oc) return kr_last_status();
    kr_channel_t *ic = channel_arg(w, input, fn);
    if (!ic) return kr_last_status();
    uint32_t oi = kr_entity_index(output), ii = kr_entity_index(input);
    if (oc->kind != KR_CHANNEL_OUTPUT)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: channel %u is an input; the first channel must be an output",
                        fn, oi);
    if (ic->kind != KR_CHANNEL_INPUT)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: channel %u is an output; the second channel must be an input",
                        fn, ii);
    kr_entity_t op = peer_of(w, output, oc), ip = peer_of(w, input, ic);
    if (op)
        return kr__fail(KR_ERR_EXISTS, "%s: output channel %u is already connected to channel %u", fn, oi,
                        kr_entity_index(op));
    if (ip)
        return kr__fail(KR_ERR_EXISTS, "%s: input channel %u is already connected to channel %u", fn, ii,
                        kr_entity_index(ip));
    if (reserve_notes(w, 2, fn)) return kr_last_status();
    oc->peer = input;
    ic->peer = output;
    enter(w);
    if (ready(w, output)) note_pair(w, output, oc);
    leave(w);
    return KR_OK;
}

kr_status_t kr_channel_disconnect(kr_world_t *w, kr_entity_t ch)
{
    const char *fn = "kr_channel_disconnect";
    kr_channel_t *c = channel_arg(w, ch, fn);
    if (!c) return kr_last_status();
    kr_entity_t p = peer_of(w, ch, c);
    c->peer = KR_ENTITY_INVALID;
    if (!p) return kr__fail(KR_ERR_STATE, "%s: channel %u is not connected", fn, kr_entity_index(ch));
    chan(w, p)->peer = KR_ENTITY_INVALID;
    return KR_OK;
}

kr_status_t kr_channel_open(kr_world_t *w, kr_entity_t ch)
{
    const char *fn = "kr_channel_open";
    kr_channel_t *c = channel_arg(w, ch, fn);
    if (!c) return kr_last_status();
    if (c->open) return KR_OK;
    if (reserve_notes(w, 2, fn)) return kr_last_status();
    c->open = true;
    enter(w);
    if (ready(w, ch)) note_pair(w, ch, c);
    leave(w);
    return KR_OK;
}

kr_status_t kr_channel_close(kr_world_t *w, kr_entity_t ch)
{
    kr_channel_t *c = channel_arg(w, ch, "kr_channel_close");
    if (!c) return kr_last_status();
    c->open = false;
    return KR_OK;
}

bool kr_channel_send(kr_world_t *w, kr_entity_t output, kr_entity_t child)
{
    const char *fn = "kr_channel_send";
    kr_channel_t *oc = channel_arg(w, output, fn);
    if (!oc) return false;
    uint32_t oi = kr_entity_index(output);
    if (oc->kind != KR_CHANNEL_OUTPUT) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: channel %u is an input; send through an output channel", fn, oi);
        return false;
    }
    const char *why = not_ready(w, output, oc);
    if (why) {
        kr__fail(KR_ERR_STATE, "%s: output channel %u %s", fn, oi, why);
        return false;
    }
    kr_entity_t input = oc->peer;
    kr_entity_t src = oc->resource, dst = chan(w, input)->resource;
    if (!kr__live(w, child, fn)) return false;
    uint32_t ci = kr_entity_index(child), di = kr_entity_index(dst);
    if (has_table_component(w, child, KR_CHANNEL)) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: entity %u is a channel; channels stay with their resource", fn, ci);
        return false;
    }
    if (parent_index(w, ci) != kr_entity_index(src)) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: entity %u is not a child of the sending resource %u", fn, ci,
                 kr_entity_index(src));
        return false;
    }
    for (uint32_t a = di; a != KR__NONE; a = parent_index(w, a))
        if (a == ci) {
            kr__fail(KR_ERR_CYCLE, "%s: entity %u is the receiving resource %u or one of its ancestors", fn,
                     ci, di);
            return false;
        }
    if (dying(w, child)) {
        kr__fail(KR_ERR_STALE_ENTITY, "%s: entity %u is being destroyed", fn, ci);
        return false;
    }
    if (reserve_notes(w, 2, fn)) return false;
    enter(w);
    if (kr_entity_set_parent(w, child, dst)) {
        /* A hierarchy callback destroyed or moved something: nothing was sent. */
        leave_keeping_error(w);
        return false;
    }
    /* The callbacks that ran after the move (on_exited, on_entered) may
     * have destroyed the child or moved it on, and the move succeeded all
     * the same: then it did not arrive. */
    if (!kr_entity_alive(w, child) || dying(w, child) || kr_entity_parent(w, child) != dst) {
        kr__fail(KR_ERR_STATE, "%s: entity %u was destroyed or moved by a hierarchy callback during the send", fn,
                 ci);
        leave_keeping_error(w);
        return false;
    }
    kr__behaviors_fire2(w, dst, KR__CB_RECEIVE, input, child);
    const kr_channel_t *c = chan(w, output);
    if (c && !not_ready(w, output, c) && reserve_notes(w, 2, fn) == KR_OK) note_pair(w, output, c);
    leave(w);
    return true;
}

/* ---- queries ---- */

bool kr_channel_is_open(const kr_world_t *w, kr_entity_t ch)
{
    const kr_channel_t *c = channel_arg(w, ch, "kr_channel_is_open");
    return c && c->open;
}

bool kr_channel_is_ready(const kr_world_t *w, kr_entity_t ch)
{
    const kr_channel_t *c = channel_arg(w, ch, "kr_channel_is_ready");
    return c && !not_ready(w, ch, c);
}

kr_entity_t kr_channel_peer(const kr_world_t *w, kr_entity_t ch)
{
    const kr_channel_t *c = channel_arg(w, ch, "kr_channel_peer");
    return c ? peer_of(w, ch, c) : KR_ENTITY_INVALID;
}

kr_entity_t kr_channel_resource(const kr_world_t *w, kr_entity_t ch)
{
    const kr_channel_t *c = channel_arg(w, ch, "kr_channel_resource");
    return c ? resource_of(w, ch, c) : KR_ENTITY_INVALID;
}

kr_channel_kind_t kr_channel_kind(const kr_world_t *w, kr_entity_t ch)
{
    const kr_channel_t *c = channel_arg(w, ch, "kr_channel_kind");
    return c ? (kr_channel_kind_t)c->kind : KR_CHANNEL_KIND_NONE;
}
