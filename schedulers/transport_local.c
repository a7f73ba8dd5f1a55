/* Transports inside one process: the plain in-order one, and the test one
 * that delays, reorders and duplicates. */
#include <stdlib.h>
#include <string.h>
#include "../ecs/error_private.h"
#include "../ecs/hmap.h"
#include "transport.h"

typedef struct local_msg {
    uint32_t from, to;
    uint32_t len;
    uint32_t holds;      /* test transport: polls left before it is due */
    uint8_t *bytes;
} local_msg_t;

/* A growable array of messages, shared by both transports. */
typedef struct msg_list {
    local_msg_t *items;
    size_t count, cap;
} msg_list_t;

static kr_status_t list_push(msg_list_t *l, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    if (len > UINT32_MAX) return kr__fail(KR_ERR_INVALID_ARG, "transport: message of %zu bytes", len);
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        local_msg_t *items = realloc(l->items, cap * sizeof *items);
        if (!items) return kr__fail(KR_ERR_NOMEM, "transport: out of memory");
        l->items = items;
        l->cap = cap;
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return kr__fail(KR_ERR_NOMEM, "transport: out of memory");
    memcpy(copy, bytes, len);
    l->items[l->count++] = (local_msg_t){ from, to, (uint32_t)len, 0, copy };
    return KR_OK;
}

static void list_free(msg_list_t *l)
{
    for (size_t i = 0; i < l->count; i++) free(l->items[i].bytes);
    free(l->items);
}

/* ---- in order, at once ---- */

typedef struct local_transport {
    kr_transport_t base;
    msg_list_t queue;
    size_t head;          /* first undelivered message */
} local_transport_t;

static kr_status_t local_send(kr_transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    local_transport_t *lt = (local_transport_t *)t;
    /* Reclaim the delivered prefix before the array grows. */
    if (lt->head && lt->queue.count == lt->queue.cap) {
        memmove(lt->queue.items, lt->queue.items + lt->head, (lt->queue.count - lt->head) * sizeof *lt->queue.items);
        lt->queue.count -= lt->head;
        lt->head = 0;
    }
    return list_push(&lt->queue, from, to, bytes, len);
}

static kr_status_t local_poll(kr_transport_t *t, kr_deliver_fn deliver, void *arg, size_t *count)
{
    local_transport_t *lt = (local_transport_t *)t;
    size_t n = 0;
    kr_status_t st = KR_OK;
    /* Deliveries may send more messages; those wait for the next poll. */
    size_t end = lt->queue.count;
    while (lt->head < end) {
        local_msg_t msg = lt->queue.items[lt->head++];
        st = deliver(arg, msg.bytes, msg.len);
        free(msg.bytes);
        n++;
        if (st) break;
    }
    if (lt->head == lt->queue.count) lt->queue.count = lt->head = 0;
    if (count) *count = n;
    return st;
}

static size_t local_in_flight(const kr_transport_t *t)
{
    const local_transport_t *lt = (const local_transport_t *)t;
    return lt->queue.count - lt->head;
}

static void local_destroy(kr_transport_t *t)
{
    local_transport_t *lt = (local_transport_t *)t;
    for (size_t i = lt->head; i < lt->queue.count; i++) free(lt->queue.items[i].bytes);
    free(lt->queue.items);
    free(lt);
}

static const kr_transport_vtbl_t local_vtbl = { .send = local_send, .poll = local_poll, .in_flight = local_in_flight,
                                                 .destroy = local_destroy, .direct_local = true };

kr_transport_t *kr_transport_local_create(void)
{
    local_transport_t *lt = calloc(1, sizeof *lt);
    if (!lt) { kr__fail(KR_ERR_NOMEM, "transport: out of memory"); return NULL; }
    lt->base.vtbl = &local_vtbl;
    return &lt->base;
}

/* ---- test: delay, reorder, duplicate ---- */

typedef struct test_transport {
    kr_transport_t base;
    msg_list_t held;
    uint64_t state;
    kr_test_transport_desc_t desc;
    uint32_t frozen;     /* sim id + 1, 0 = none */
} test_transport_t;

static double draw(test_transport_t *tt)
{
    tt->state += 0x9e3779b97f4a7c15ULL;
    return (double)(kr_mix64(tt->state) >> 11) * 0x1.0p-53;
}

static kr_status_t test_send(kr_transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    test_transport_t *tt = (test_transport_t *)t;
    kr_status_t st = list_push(&tt->held, from, to, bytes, len);
    if (st) return st;
    local_msg_t *m = &tt->held.items[tt->held.count - 1];
    while (m->holds < 8 && draw(tt) < tt->desc.hold_probability) m->holds++;
    if (draw(tt) < tt->desc.duplicate_probability) {
        st = list_push(&tt->held, from, to, bytes, len);
        if (st) return st;
        tt->held.items[tt->held.count - 1].holds = (uint32_t)(draw(tt) * 4);
    }
    return KR_OK;
}

static kr_status_t test_poll(kr_transport_t *t, kr_deliver_fn deliver, void *arg, size_t *count)
{
    test_transport_t *tt = (test_transport_t *)t;
    /* Take out what is due, shuffle it, deliver it; the rest ages one poll. */
    msg_list_t due = { 0 };
    size_t keep = 0;
    for (size_t i = 0; i < tt->held.count; i++) {
        local_msg_t m = tt->held.items[i];
        bool frozen = tt->frozen && m.from + 1 == tt->frozen;
        if (m.holds == 0 && !frozen) {
            if (due.count == due.cap) {
                size_t cap = due.cap ? due.cap * 2 : 16;
                local_msg_t *items = realloc(due.items, cap * sizeof *items);
                if (!items) { list_free(&due); return kr__fail(KR_ERR_NOMEM, "transport: out of memory"); }
                due.items = items;
                due.cap = cap;
            }
            due.items[due.count++] = m;
        } else {
            if (m.holds) m.holds--;
            tt->held.items[keep++] = m;
        }
    }
    tt->held.count = keep;
    for (size_t i = due.count; i > 1; i--) {
        size_t j = (size_t)(draw(tt) * (double)i);
        local_msg_t tmp = due.items[i - 1];
        due.items[i - 1] = due.items[j];
        due.items[j] = tmp;
    }
    kr_status_t st = KR_OK;
    size_t n = 0;
    for (size_t i = 0; i < due.count; i++) {
        if (!st) {
            st = deliver(arg, due.items[i].bytes, due.items[i].len);
            n++;
        }
        free(due.items[i].bytes);
    }
    free(due.items);
    if (count) *count = n;
    return st;
}

static size_t test_in_flight(const kr_transport_t *t)
{
    return ((const test_transport_t *)t)->held.count;
}

static void test_destroy(kr_transport_t *t)
{
    test_transport_t *tt = (test_transport_t *)t;
    list_free(&tt->held);
    free(tt);
}

static const kr_transport_vtbl_t test_vtbl = { .send = test_send, .poll = test_poll, .in_flight = test_in_flight,
                                                .destroy = test_destroy };

kr_transport_t *kr_transport_test_create(const kr_test_transport_desc_t *desc)
{
    test_transport_t *tt = calloc(1, sizeof *tt);
    if (!tt) { kr__fail(KR_ERR_NOMEM, "transport: out of memory"); return NULL; }
    tt->base.vtbl = &test_vtbl;
    if (desc) tt->desc = *desc;
    tt->state = tt->desc.seed;
    return &tt->base;
}

void kr_transport_test_freeze(kr_transport_t *t, uint32_t from_sim, bool frozen)
{
    test_transport_t *tt = (test_transport_t *)t;
    tt->frozen = frozen ? from_sim + 1 : 0;
}

/* ---- chaos: delay and reorder on top of any transport ---- */

typedef struct chaos_transport {
    kr_transport_t base;
    kr_transport_t *inner;
    msg_list_t held;
    uint64_t state;
} chaos_transport_t;

static double chaos_draw(chaos_transport_t *ct)
{
    ct->state += 0x9e3779b97f4a7c15ULL;
    return (double)(kr_mix64(ct->state) >> 11) * 0x1.0p-53;
}

static kr_status_t chaos_send(kr_transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    return list_push(&((chaos_transport_t *)t)->held, from, to, bytes, len);
}

/* Hands about half of what it holds, shuffled, to the inner transport. */
static kr_status_t chaos_release(chaos_transport_t *ct, bool all)
{
    msg_list_t *h = &ct->held;
    for (size_t i = h->count; i > 1; i--) {
        size_t j = (size_t)(chaos_draw(ct) * (double)i);
        local_msg_t tmp = h->items[i - 1];
        h->items[i - 1] = h->items[j];
        h->items[j] = tmp;
    }
    size_t keep = 0;
    kr_status_t st = KR_OK;
    for (size_t i = 0; i < h->count; i++) {
        local_msg_t m = h->items[i];
        if (!st && (all || chaos_draw(ct) < 0.5)) {
            st = ct->inner->vtbl->send(ct->inner, m.from, m.to, m.bytes, m.len);
            free(m.bytes);
        } else {
            h->items[keep++] = m;
        }
    }
    h->count = keep;
    return st;
}

static kr_status_t chaos_poll(kr_transport_t *t, kr_deliver_fn deliver, void *arg, size_t *count)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    kr_status_t st = chaos_release(ct, false);
    return st ? st : ct->inner->vtbl->poll(ct->inner, deliver, arg, count);
}

static size_t chaos_in_flight(const kr_transport_t *t)
{
    const chaos_transport_t *ct = (const chaos_transport_t *)t;
    return ct->held.count + ct->inner->vtbl->in_flight(ct->inner);
}

static void chaos_destroy(kr_transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    ct->inner->vtbl->destroy(ct->inner);
    list_free(&ct->held);
    free(ct);
}

static kr_status_t chaos_settle(kr_transport_t *t, bool idle, bool locally_done, kr_settle_t *verdict)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    *verdict = KR_SETTLE_RUNNING;
    if (ct->held.count) return chaos_release(ct, true);
    if (!ct->inner->vtbl->settle) {
        /* one process: idle and nothing held back decides it alone */
        if (locally_done && ct->inner->vtbl->in_flight(ct->inner) == 0) *verdict = KR_SETTLE_FINISHED;
        else if (idle && ct->inner->vtbl->in_flight(ct->inner) == 0) *verdict = KR_SETTLE_DEADLOCK;
        return KR_OK;
    }
    return ct->inner->vtbl->settle(ct->inner, idle, locally_done, verdict);
}

static kr_status_t chaos_deadlock(kr_transport_t *t, bool can_describe, bool *describe)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    *describe = true;
    return ct->inner->vtbl->deadlock ? ct->inner->vtbl->deadlock(ct->inner, can_describe, describe) : KR_OK;
}

static void chaos_progress(kr_transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->inner->vtbl->progress) ct->inner->vtbl->progress(ct->inner);
}

static void chaos_wait(kr_transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->held.count) return; /* the next poll releases some */
    if (ct->inner->vtbl->wait) ct->inner->vtbl->wait(ct->inner);
}

static void chaos_abort(kr_transport_t *t, kr_status_t status, const char *message)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->inner->vtbl->abort) ct->inner->vtbl->abort(ct->inner, status, message);
}

static kr_status_t chaos_reduce(kr_transport_t *t, uint64_t *mins, size_t n_mins)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    /* what is held back was sent before the round: it must go first */
    kr_status_t st = chaos_release(ct, true);
    return st ? st : ct->inner->vtbl->reduce(ct->inner, mins, n_mins);
}

static const kr_transport_vtbl_t chaos_vtbl = { .send = chaos_send, .poll = chaos_poll, .in_flight = chaos_in_flight,
                                                .destroy = chaos_destroy, .settle = chaos_settle,
                                                .deadlock = chaos_deadlock, .wait = chaos_wait, .abort = chaos_abort,
                                                .reduce = chaos_reduce, .progress = chaos_progress };
static const kr_transport_vtbl_t chaos_local_vtbl = { .send = chaos_send, .poll = chaos_poll,
                                                      .in_flight = chaos_in_flight, .destroy = chaos_destroy,
                                                      .settle = chaos_settle, .deadlock = chaos_deadlock,
                                                      .wait = chaos_wait, .abort = chaos_abort,
                                                      .progress = chaos_progress };

kr_transport_t *kr_transport_chaos_wrap(kr_transport_t *inner, uint64_t seed)
{
    if (!inner) return NULL;
    chaos_transport_t *ct = calloc(1, sizeof *ct);
    if (!ct) {
        inner->vtbl->destroy(inner);
        kr__fail(KR_ERR_NOMEM, "transport: out of memory");
        return NULL;
    }
    ct->base.vtbl = inner->vtbl->reduce ? &chaos_vtbl : &chaos_local_vtbl;
    ct->inner = inner;
    ct->state = seed;
    return &ct->base;
}
