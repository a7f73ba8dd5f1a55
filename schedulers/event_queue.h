/* The per-simulator pending-event queue. Not public API.
 *
 * A radix heap keyed on time (nothing is scheduled in a simulator before the
 * time it last ran: delays are never negative, docs/concepts.md, "Model
 * time", and no sync-event arrives in its target's past), with radix-16
 * digits, plus a small binary heap on the full key (time, hi, lo) for the
 * entries at or below the queue's reference time `last`. Entries above
 * `last` sit in the bucket of the highest hex digit where their time differs
 * from `last` and of their digit there; every entry of a lower bucket is
 * earlier than every entry of a higher one, so a pop only looks at the
 * lowest non-empty bucket. When the small heap runs dry, that bucket is
 * split: `last` becomes its earliest time and its entries drop to lower
 * buckets (or, at `last` itself, into the heap). An entry is moved at most
 * once per hex digit of its distance from `last`, so push and pop cost O(1)
 * amortized for a bounded time horizon, and the moves are sequential
 * appends, which is what makes the structure fast once the queue outgrows
 * the caches (bench/README.md, "Event queue").
 *
 * Entries pushed at or below `last` (ties at the current time, or after a
 * peek raised `last`) go to the small heap, which orders them by the full
 * key, so the order is exact whatever the times. */
#ifndef KAIROS_SCHEDULERS_EVENT_QUEUE_H
#define KAIROS_SCHEDULERS_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

/* One queued event: the key is (time, hi, lo) compared lexicographically as
 * unsigned 64-bit words; slot is an opaque payload index carried along. */
typedef struct kr__qentry {
    uint64_t time;
    uint64_t hi;
    uint64_t lo;
    uint32_t slot;
    uint32_t aux;
} kr__qentry_t;

/* 4-bit digits: 1, 2, 3, 5 and 6 bits measured no faster (bench/README.md). */
#define KR__EQUEUE_DIGIT_BITS 4
#define KR__EQUEUE_DIGITS (1u << KR__EQUEUE_DIGIT_BITS)
#define KR__EQUEUE_LEVELS ((64 + KR__EQUEUE_DIGIT_BITS - 1) / KR__EQUEUE_DIGIT_BITS)
#define KR__EQUEUE_BUCKETS (KR__EQUEUE_LEVELS * KR__EQUEUE_DIGITS)

/* Buckets hold their entries in fixed-size blocks from the queue's own
 * pools rather than in arrays that double: entries flow from bucket to
 * bucket as time advances, and arrays of every size freed and grown in
 * turn left the allocator holding several times the live entries (PHOLD
 * with 4 M pending events: 267 bytes of memory per event, of which 32 are
 * the entry; bench/README.md, "PHOLD as the model grows"). A large block
 * of 2 KiB keeps a split's reads and writes sequential.
 *
 * A bucket's first block is a small one, and the bucket keeps it when it
 * empties: in a small queue buckets fill and empty at nearly every
 * refill, and taking a block from the pool and giving it back each time
 * cost 11 % of the hold model at 10^3 entries. Keeping a large block
 * instead held 2 KiB for every bucket a model of many small queues ever
 * used (rows ran 3-6 % slower), so only the small one stays. */
#define KR__EQUEUE_BLOCK_ENTRIES 63u
#define KR__EQUEUE_SMALL_ENTRIES 8u

typedef struct kr__equeue_block {
    struct kr__equeue_block *next;
    uint32_t count;         /* for a bucket's first block: its fill says it */
    uint32_t cap;           /* KR__EQUEUE_SMALL_ENTRIES or KR__EQUEUE_BLOCK_ENTRIES */
    kr__qentry_t items[];
} kr__equeue_block_t;

/* Blocks of one size no bucket holds, and how many of that size exist. */
typedef struct kr__equeue_pool {
    kr__equeue_block_t *free;
    size_t free_count;
    size_t block_count;     /* allocated, in buckets, in the heap or here */
} kr__equeue_pool_t;

/* A bucket's entries, in no order: appends go to the first block (head),
 * which is the only one with room unless a failed split relinked chains.
 * The head's fill and capacity sit here, so an append reads no block
 * header; the other blocks' counts are in their headers. Growing, a
 * bucket takes a small block first, then large ones in front of it; an
 * emptied bucket keeps a small block (head, fill 0) and nothing else. */
typedef struct kr__equeue_bucket {
    kr__equeue_block_t *head;
    uint32_t rest;          /* entries in the blocks after head */
    uint32_t fill;          /* entries in head */
    uint32_t cap;           /* head's capacity; 0 with no head */
    uint64_t min_time;      /* earliest time in the bucket, when it has entries */
} kr__equeue_bucket_t;

typedef struct kr__equeue {
    uint64_t last;          /* heap entries have time <= last, bucket entries > last */
    size_t size;            /* all entries */
    kr__qentry_t *heap;      /* binary min-heap on the full key: heap_block's items or heap_mem */
    size_t heap_count;
    size_t heap_cap;
    /* A bucket of one block (or of a large block and its small one, when
     * the small one's entries fit in the large) becomes the small heap in
     * place: that block holds the heap, so a refill copies few entries or
     * none. The heap's block before goes to the bucket if it is small and
     * the bucket has none left, else back to its pool. heap_mem, the
     * heap's own array, is for heaps larger than a block. */
    struct kr__equeue_block *heap_block;
    kr__qentry_t *heap_mem;
    size_t heap_mem_cap;
    uint64_t nonempty[(KR__EQUEUE_BUCKETS + 63) / 64];   /* bit b: bucket b has entries */
    int alloc_fail_after;   /* testing only: < 0 never; else allocations left before one fails */
    kr__equeue_pool_t large;
    kr__equeue_pool_t small;
    kr__equeue_bucket_t buckets[KR__EQUEUE_BUCKETS];
} kr__equeue_t;

/* An empty queue; allocates nothing. Always KR_OK. */
kr_status_t kr__equeue_init(kr__equeue_t *q);
/* Frees the queue's arrays; the queue may be initialized again. */
void kr__equeue_fini(kr__equeue_t *q);
/* Adds a copy of *e. KR_ERR_NOMEM on allocation failure, queue unchanged. */
kr_status_t kr__equeue_push(kr__equeue_t *q, const kr__qentry_t *e);
/* Removes the minimum into *out; false when empty. Never fails for want of
 * memory: if the lowest bucket cannot be split or made the small heap, the
 * minimum is found by scanning that bucket (slow, but only while memory is
 * short). */
bool kr__equeue_pop(kr__equeue_t *q, kr__qentry_t *out);
/* The minimum, NULL when empty; valid until the next push/pop/filter. */
const kr__qentry_t *kr__equeue_peek(kr__equeue_t *q);
size_t kr__equeue_size(const kr__equeue_t *q);
/* The bytes of its arrays as allocated (the struct itself not counted). */
size_t kr__equeue_bytes(const kr__equeue_t *q);
/* Keeps only the entries for which keep(arg, entry) is true (used to purge
 * cancelled events), calling keep once per entry; the rest stay a valid
 * queue. KR_ERR_INVALID_ARG if keep is NULL. */
kr_status_t kr__equeue_filter(kr__equeue_t *q, bool (*keep)(void *arg, const kr__qentry_t *e), void *arg);

/* Full key order. */
static inline bool kr__qentry_less(const kr__qentry_t *a, const kr__qentry_t *b)
{
    if (a->time != b->time) return a->time < b->time;
    if (a->hi != b->hi) return a->hi < b->hi;
    return a->lo < b->lo;
}

#endif
