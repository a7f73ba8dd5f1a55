/* Messages held inside one process: see message_list.h. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "net/message_list.h"

kr_status_t kr__msg_list_push(msg_list_t *l, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    if (len > UINT32_MAX) return kr__fail(KR_ERR_INVALID_ARG, "transport: message of %zu bytes", len);
    if (l->count == l->cap && KR__GROW(l->items, l->cap, l->count + 1, 64, "transport")) return kr_last_status();
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return kr__fail(KR_ERR_NOMEM, "transport: out of memory");
    memcpy(copy, bytes, len);
    l->items[l->count++] = (local_msg_t){ from, to, (uint32_t)len, 0, 0, copy };
    return KR_OK;
}

void kr__msg_list_free(msg_list_t *l)
{
    for (size_t i = 0; i < l->count; i++) free(l->items[i].bytes);
    free(l->items);
}

double kr__msg_draw(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ULL;
    return (double)(kr__mix64(*state) >> 11) * 0x1.0p-53;
}
