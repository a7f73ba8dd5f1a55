/* Batches: the records a distributed transport sends between processes as
 * one message, each a u32 length (little-endian) followed by that many
 * bytes. Not public API. The splitter is apart from transport_mpi.c so
 * that tests/fuzz can feed it arbitrary bytes without MPI. */
#ifndef KAIROS_NET_BATCH_H
#define KAIROS_NET_BATCH_H

#include <stddef.h>
#include <string.h>
#include "net/transport.h"

/* The length of the record whose u32 length prefix (little-endian) is at p. */
static inline uint32_t kr__batch_record_len(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Writes a record's u32 length prefix (little-endian) at p: one store
 * where the byte order allows (a loop of byte stores through a pointer
 * that may alias the buffer's own fields was a fifth of what appending a
 * sync-event to a batch cost). */
static inline void kr__batch_put_record_len(uint8_t *p, uint32_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &len, 4);
#else
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(len >> (8 * i));
#endif
}

/* Hands each record of the `len` bytes at `data` to `deliver`, in order,
 * adding one to *count per record handed over. Stops at the first failing
 * delivery, whose status it returns (prefixed "from rank SOURCE: " when
 * source >= 0), and refuses a record that runs past the end
 * (KR_ERR_CORRUPT). */
kr_status_t kr__batch_deliver(const void *data, size_t len, int source, kr__deliver_fn deliver, void *arg,
                              size_t *count);

#endif
