/* The chaos wrapper: holds messages back and hands them on shuffled to
 * any inner transport, in one process or over ranks (net/transport.h). */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "net/message_list.h"
#include "net/transport.h"

typedef struct chaos_transport {
    kr__transport_t base;
    kr__transport_t *inner;
    msg_list_t held;
    uint64_t state;
} chaos_transport_t;

static double chaos_draw(chaos_transport_t *ct)
{
    return kr__msg_draw(&ct->state);
}

static kr_status_t chaos_send(kr__transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    return kr__msg_list_push(&((chaos_transport_t *)t)->held, from, to, bytes, len);
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

static kr_status_t chaos_poll(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    kr_status_t st = chaos_release(ct, false);
    return st ? st : ct->inner->vtbl->poll(ct->inner, deliver, arg, count);
}

static size_t chaos_in_flight(const kr__transport_t *t)
{
    const chaos_transport_t *ct = (const chaos_transport_t *)t;
    return ct->held.count + ct->inner->vtbl->in_flight(ct->inner);
}

static void chaos_destroy(kr__transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    ct->inner->vtbl->destroy(ct->inner);
    kr__msg_list_free(&ct->held);
    free(ct);
}

static kr_status_t chaos_settle(kr__transport_t *t, bool idle, bool locally_done, kr__settle_t *verdict)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    *verdict = KR__SETTLE_RUNNING;
    if (ct->held.count) return chaos_release(ct, true);
    if (!ct->inner->vtbl->settle) {
        /* one process: idle and nothing held back decides it alone */
        if (locally_done && ct->inner->vtbl->in_flight(ct->inner) == 0) *verdict = KR__SETTLE_FINISHED;
        else if (idle && ct->inner->vtbl->in_flight(ct->inner) == 0) *verdict = KR__SETTLE_DEADLOCK;
        return KR_OK;
    }
    return ct->inner->vtbl->settle(ct->inner, idle, locally_done, verdict);
}

static kr_status_t chaos_deadlock(kr__transport_t *t, bool can_describe, bool *describe)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    *describe = true;
    return ct->inner->vtbl->deadlock ? ct->inner->vtbl->deadlock(ct->inner, can_describe, describe) : KR_OK;
}

static void chaos_progress(kr__transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->inner->vtbl->progress) ct->inner->vtbl->progress(ct->inner);
}

static void chaos_wait(kr__transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->held.count) return; /* the next poll releases some */
    if (ct->inner->vtbl->wait) ct->inner->vtbl->wait(ct->inner);
}

static void chaos_abort(kr__transport_t *t, kr_status_t status, const char *message)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->inner->vtbl->abort) ct->inner->vtbl->abort(ct->inner, status, message);
}

static kr_status_t chaos_reduce(kr__transport_t *t, uint64_t *mins, size_t n_mins)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    /* what is held back was sent before the round: it must go first */
    kr_status_t st = chaos_release(ct, true);
    return st ? st : ct->inner->vtbl->reduce(ct->inner, mins, n_mins);
}

static void chaos_resume(kr__transport_t *t)
{
    chaos_transport_t *ct = (chaos_transport_t *)t;
    if (ct->inner->vtbl->resume) ct->inner->vtbl->resume(ct->inner);
}

static const kr__transport_vtbl_t chaos_vtbl = { .send = chaos_send, .poll = chaos_poll, .in_flight = chaos_in_flight,
                                                .destroy = chaos_destroy, .settle = chaos_settle,
                                                .deadlock = chaos_deadlock, .wait = chaos_wait, .abort = chaos_abort,
                                                .reduce = chaos_reduce, .progress = chaos_progress,
                                                .resume = chaos_resume };
static const kr__transport_vtbl_t chaos_local_vtbl = { .send = chaos_send, .poll = chaos_poll,
                                                      .in_flight = chaos_in_flight, .destroy = chaos_destroy,
                                                      .settle = chaos_settle, .deadlock = chaos_deadlock,
                                                      .wait = chaos_wait, .abort = chaos_abort,
                                                      .progress = chaos_progress, .resume = chaos_resume };

kr__transport_t *kr__transport_chaos_wrap(kr__transport_t *inner, uint64_t seed)
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
