/* The test transport: holds messages back, delivers them in random order
 * and some twice, all drawn from a seed (net/transport.h). */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "net/message_list.h"
#include "net/transport.h"

typedef struct test_transport {
    kr__transport_t base;
    msg_list_t held;
    uint64_t state;
    kr__test_transport_desc_t desc;
    uint32_t frozen;     /* sim id + 1, 0 = none */
    uint64_t sent;       /* messages sent: the last one's id */
    bool last_doubled;   /* the last message sent went in twice */
} test_transport_t;

static double draw(test_transport_t *tt)
{
    return kr__msg_draw(&tt->state);
}

static kr_status_t test_send(kr__transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    test_transport_t *tt = (test_transport_t *)t;
    kr_status_t st = kr__msg_list_push(&tt->held, from, to, bytes, len);
    if (st) return st;
    local_msg_t *m = &tt->held.items[tt->held.count - 1];
    m->id = ++tt->sent;
    while (m->holds < 8 && draw(tt) < tt->desc.hold_probability) m->holds++;
    tt->last_doubled = draw(tt) < tt->desc.duplicate_probability;
    if (tt->last_doubled) {
        st = kr__msg_list_push(&tt->held, from, to, bytes, len);
        if (st) return st;
        tt->held.items[tt->held.count - 1].holds = (uint32_t)(draw(tt) * 4);
        tt->held.items[tt->held.count - 1].id = tt->sent;
    }
    return KR_OK;
}

/* held, amend and extend (net/transport.h), so that the coordinator's
 * raised guarantees and runs of sync-events meet reordering and
 * duplicates in tests. A message that went in twice is not held: changing
 * one copy would give the receiver two different messages with one place
 * in the edge's order. */
static bool test_held(kr__transport_t *t, kr__held_t *where)
{
    test_transport_t *tt = (test_transport_t *)t;
    *where = (kr__held_t){ 0 };
    if (!tt->held.count || tt->last_doubled || tt->held.items[tt->held.count - 1].id != tt->sent) return false;
    where->batch = tt->sent;
    return true;
}

static local_msg_t *find_held(test_transport_t *tt, uint64_t id)
{
    for (size_t i = tt->held.count; i-- > 0;)
        if (tt->held.items[i].id == id) return &tt->held.items[i];
    return NULL;
}

static bool test_amend(kr__transport_t *t, const kr__held_t *where, size_t offset, const void *bytes, size_t len)
{
    local_msg_t *m = where->batch ? find_held((test_transport_t *)t, where->batch) : NULL;
    if (!m || offset > m->len || len > m->len - offset) return false;
    memcpy(m->bytes + offset, bytes, len);
    return true;
}

/* As in a batch, only the message sent last may grow. */
static uint8_t *test_extend(kr__transport_t *t, const kr__held_t *where, size_t len)
{
    test_transport_t *tt = (test_transport_t *)t;
    if (!where->batch || where->batch != tt->sent || !tt->held.count) return NULL;
    local_msg_t *m = &tt->held.items[tt->held.count - 1];
    if (m->id != where->batch || len > UINT32_MAX - m->len) return NULL;
    uint8_t *grown = realloc(m->bytes, (size_t)m->len + len);
    if (!grown) return NULL;
    m->bytes = grown;
    m->len += (uint32_t)len;
    return grown + m->len - len;
}

static kr_status_t test_poll(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count)
{
    test_transport_t *tt = (test_transport_t *)t;
    /* Take out what is due, shuffle it, deliver it; the rest ages one poll. */
    msg_list_t due = { 0 };
    size_t keep = 0;
    for (size_t i = 0; i < tt->held.count; i++) {
        local_msg_t m = tt->held.items[i];
        bool frozen = tt->frozen && m.from + 1 == tt->frozen;
        if (m.holds == 0 && !frozen) {
            if (due.count == due.cap && KR__GROW(due.items, due.cap, due.count + 1, 16, "transport")) {
                kr__msg_list_free(&due);
                return kr_last_status();
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

static size_t test_in_flight(const kr__transport_t *t)
{
    return ((const test_transport_t *)t)->held.count;
}

static void test_destroy(kr__transport_t *t)
{
    test_transport_t *tt = (test_transport_t *)t;
    kr__msg_list_free(&tt->held);
    free(tt);
}

static const kr__transport_vtbl_t test_vtbl = { .send = test_send, .poll = test_poll, .in_flight = test_in_flight,
                                                .destroy = test_destroy, .held = test_held, .amend = test_amend,
                                                .extend = test_extend };

kr__transport_t *kr__transport_test_create(const kr__test_transport_desc_t *desc)
{
    test_transport_t *tt = calloc(1, sizeof *tt);
    if (!tt) { kr__fail(KR_ERR_NOMEM, "transport: out of memory"); return NULL; }
    tt->base.vtbl = &test_vtbl;
    if (desc) tt->desc = *desc;
    tt->state = tt->desc.seed;
    return &tt->base;
}

void kr__transport_test_freeze(kr__transport_t *t, uint32_t from_sim, bool frozen)
{
    test_transport_t *tt = (test_transport_t *)t;
    tt->frozen = frozen ? from_sim + 1 : 0;
}
