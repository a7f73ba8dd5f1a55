/* The transport of a single process: messages in order, at once. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "net/message_list.h"
#include "net/transport.h"

typedef struct local_transport {
    kr__transport_t base;
    msg_list_t queue;
    size_t head;          /* first undelivered message */
} local_transport_t;

static kr_status_t local_send(kr__transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    local_transport_t *lt = (local_transport_t *)t;
    /* Reclaim the delivered prefix before the array grows. */
    if (lt->head && lt->queue.count == lt->queue.cap) {
        memmove(lt->queue.items, lt->queue.items + lt->head, (lt->queue.count - lt->head) * sizeof *lt->queue.items);
        lt->queue.count -= lt->head;
        lt->head = 0;
    }
    return kr__msg_list_push(&lt->queue, from, to, bytes, len);
}

static kr_status_t local_poll(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count)
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

static size_t local_in_flight(const kr__transport_t *t)
{
    const local_transport_t *lt = (const local_transport_t *)t;
    return lt->queue.count - lt->head;
}

static void local_destroy(kr__transport_t *t)
{
    local_transport_t *lt = (local_transport_t *)t;
    for (size_t i = lt->head; i < lt->queue.count; i++) free(lt->queue.items[i].bytes);
    free(lt->queue.items);
    free(lt);
}

static const kr__transport_vtbl_t local_vtbl = { .send = local_send, .poll = local_poll, .in_flight = local_in_flight,
                                                 .destroy = local_destroy, .direct_local = true };

kr__transport_t *kr__transport_local_create(void)
{
    local_transport_t *lt = calloc(1, sizeof *lt);
    if (!lt) { kr__fail(KR_ERR_NOMEM, "transport: out of memory"); return NULL; }
    lt->base.vtbl = &local_vtbl;
    return &lt->base;
}
