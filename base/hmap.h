/* An open-addressing hash multimap from 64-bit keys to 32-bit values, with
 * linear probing and backward-shift deletion (no tombstones, so lookups stay
 * short after many removals). Keys may repeat: callers that key by a hash
 * of something larger walk every value stored under the key and compare. */
#ifndef KAIROS_BASE_HMAP_H
#define KAIROS_BASE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

#define KR__HMAP_EMPTY UINT32_MAX

/* Key and value share a slot, so a probe touches one cache line. */
typedef struct kr__hmap_slot {
    uint64_t key;
    uint32_t value;       /* KR__HMAP_EMPTY marks a free slot */
    uint32_t unused;
} kr__hmap_slot_t;

typedef struct kr__hmap {
    kr__hmap_slot_t *slots;
    uint32_t capacity;    /* power of two, or 0 */
    uint32_t count;
} kr__hmap_t;

void kr__hmap_init(kr__hmap_t *m);
void kr__hmap_fini(kr__hmap_t *m);
kr_status_t kr__hmap_insert(kr__hmap_t *m, uint64_t key, uint32_t value);
/* Removes the entry (key, value); false if absent. */
bool kr__hmap_remove(kr__hmap_t *m, uint64_t key, uint32_t value);
/* Replaces the value of entry (key, old) by new; false if absent. */
bool kr__hmap_replace(kr__hmap_t *m, uint64_t key, uint32_t old_value, uint32_t new_value);

/* A strong 64-bit mix (splitmix64's finalizer). */
static inline uint64_t kr__mix64(uint64_t x)
{
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Iterates the values under key: start with *cursor = 0; returns
 * KR__HMAP_EMPTY when there are no more. Inline: every sync-event sent or
 * delivered between simulators with many edges looks its edge up here
 * (schedulers/model.c, kr__edge). The cursor counts probe steps from the
 * key's home slot. */
static inline uint32_t kr__hmap_next(const kr__hmap_t *m, uint64_t key, uint32_t *cursor)
{
    if (!m->capacity) return KR__HMAP_EMPTY;
    uint32_t mask = m->capacity - 1, home = (uint32_t)kr__mix64(key);
    for (uint32_t step = *cursor; step < m->capacity; step++) {
        const kr__hmap_slot_t *s = &m->slots[(home + step) & mask];
        if (s->value == KR__HMAP_EMPTY) break;
        if (s->key == key) {
            *cursor = step + 1;
            return s->value;
        }
    }
    *cursor = m->capacity;
    return KR__HMAP_EMPTY;
}

/* FNV-1a over bytes, then mixed. */
uint64_t kr__hash_bytes(const void *data, size_t n, uint64_t seed);
/* FNV-1a continued over n more bytes, unmixed, from KR__FNV_START: the
 * digest of a file written piece by piece (emulation and event logs, whose
 * prefix a restart checks) is the same as that of its bytes read whole. */
#define KR__FNV_START 0xcbf29ce484222325ULL
uint64_t kr__fnv1a(uint64_t h, const void *data, size_t n);

#endif
