/* Messages held inside one process by the in-process transports (local,
 * test, chaos): a growable array of copies, and the seeded draw the test
 * and chaos transports shuffle and hold back with. Not public API. */
#ifndef KAIROS_NET_MESSAGE_LIST_H
#define KAIROS_NET_MESSAGE_LIST_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

typedef struct local_msg {
    uint32_t from, to;
    uint32_t len;
    uint32_t holds;      /* test transport: polls left before it is due */
    uint64_t id;         /* test transport: its number, for held, amend and extend */
    uint8_t *bytes;
} local_msg_t;

typedef struct msg_list {
    local_msg_t *items;
    size_t count, cap;
} msg_list_t;

/* Appends a copy of bytes. */
kr_status_t kr__msg_list_push(msg_list_t *l, uint32_t from, uint32_t to, const void *bytes, size_t len);
/* Frees every copy and the array. */
void kr__msg_list_free(msg_list_t *l);
/* A uniform draw in [0, 1) from a splitmix64 stream kept in *state. */
double kr__msg_draw(uint64_t *state);

#endif
