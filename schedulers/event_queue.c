/* The per-simulator event queue: a radix-16 heap on time with a small
 * binary heap on the full key for the entries at or below `last` (see
 * event_queue.h for the invariants; bench/README.md for why this one). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "schedulers/event_queue.h"
#include "base/error.h"
#include "base/fault.h"

#define INITIAL_CAP 8u
/* A split bucket gives back an array above this many entries. Buckets fill
 * and empty in turn as time advances, and each would otherwise keep the
 * largest array it ever had: the 1e6 hold benchmark (32 MB of entries)
 * peaked at 213 MB without the release and 71 MB with it, for some 15 %
 * more time per hold (bench/README.md). */
#define RELEASE_CAP 1024u
#ifndef KR__EQUEUE_ABSORB
#define KR__EQUEUE_ABSORB 32u
#endif

static void *grow_array(kr__equeue_t *q, void *old, size_t new_count)
{
    if (q->alloc_fail_after >= 0) {
        if (q->alloc_fail_after == 0) return NULL;
        q->alloc_fail_after--;
    }
    if (new_count > SIZE_MAX / sizeof(kr__qentry_t) || kr__fault_alloc()) return NULL;
    return realloc(old, new_count * sizeof(kr__qentry_t));
}

static inline unsigned bucket_of(uint64_t time, uint64_t last)
{
    unsigned high = 63u - (unsigned)__builtin_clzll(time ^ last);
    unsigned level = high / KR__EQUEUE_DIGIT_BITS;
    unsigned digit = (unsigned)(time >> (level * KR__EQUEUE_DIGIT_BITS)) & (KR__EQUEUE_DIGITS - 1);
    return level * KR__EQUEUE_DIGITS + digit;
}

static inline void mark(kr__equeue_t *q, unsigned b) { q->nonempty[b / 64] |= (uint64_t)1 << (b % 64); }
static inline void unmark(kr__equeue_t *q, unsigned b) { q->nonempty[b / 64] &= ~((uint64_t)1 << (b % 64)); }

/* Appends to bucket b; false (nothing changed) if it cannot grow. */
static inline __attribute__((always_inline)) bool bucket_append(kr__equeue_t *q, unsigned b, const kr__qentry_t *e)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    if (k->count == k->cap) {
        if (k->cap > UINT32_MAX / 2) return false;
        if (q->spare && q->spare_cap > k->cap) {
            if (k->count) memcpy(q->spare, k->items, k->count * sizeof *k->items);
            free(k->items);
            k->items = q->spare;
            k->cap = q->spare_cap;
            q->spare = NULL;
            q->spare_cap = 0;
            goto append;
        }
        uint32_t cap = k->cap ? 2 * k->cap : INITIAL_CAP;
        kr__qentry_t *items = grow_array(q, k->items, cap);
        if (!items) return false;
        k->items = items;
        k->cap = cap;
    }
append:
    k->items[k->count++] = *e;
    if (e->time < k->min_time) k->min_time = e->time;
    mark(q, b);
    return true;
}

static bool heap_reserve(kr__equeue_t *q, size_t need)
{
    if (need <= q->heap_cap) return true;
    if (need > UINT32_MAX) return false;   /* absorb() hands the array to a bucket */
    size_t cap = q->heap_cap ? 2 * q->heap_cap : INITIAL_CAP;
    while (cap < need) cap *= 2;
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    kr__qentry_t *h = grow_array(q, q->heap, cap);
    if (!h) return false;
    q->heap = h;
    q->heap_cap = cap;
    return true;
}

static inline void sift_up(kr__qentry_t *h, size_t i, kr__qentry_t e)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!kr__qentry_less(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static inline void sift_down(kr__qentry_t *h, size_t n, size_t i, kr__qentry_t e)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && kr__qentry_less(&h[c + 1], &h[c])) c++;
        if (!kr__qentry_less(&h[c], &e)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static void heapify(kr__qentry_t *h, size_t n)
{
    for (size_t i = n / 2; i-- > 0;) sift_down(h, n, i, h[i]);
}

kr_status_t kr__equeue_init(kr__equeue_t *q)
{
    memset(q, 0, sizeof *q);
    q->alloc_fail_after = -1;
    for (unsigned b = 0; b < KR__EQUEUE_BUCKETS; b++) q->buckets[b].min_time = UINT64_MAX;
    return KR_OK;
}

void kr__equeue_fini(kr__equeue_t *q)
{
    free(q->heap);
    free(q->spare);
    for (unsigned b = 0; b < KR__EQUEUE_BUCKETS; b++) free(q->buckets[b].items);
    memset(q, 0, sizeof *q);
    q->alloc_fail_after = -1;
}

kr_status_t kr__equeue_push(kr__equeue_t *q, const kr__qentry_t *e)
{
    if (e->time <= q->last) {
        if (!heap_reserve(q, q->heap_count + 1))
            return kr__fail(KR_ERR_NOMEM, "event queue: out of memory growing to %zu entries", q->heap_count + 1);
        sift_up(q->heap, q->heap_count++, *e);
    } else if (!bucket_append(q, bucket_of(e->time, q->last), e)) {
        return kr__fail(KR_ERR_NOMEM, "event queue: out of memory adding an entry at time %llu",
                        (unsigned long long)e->time);
    }
    q->size++;
    return KR_OK;
}

/* Makes bucket b (the lowest non-empty one; the small heap is empty) the
 * small heap as a whole: swaps the arrays and raises last to the bucket's
 * latest time. Buckets above b stay valid: last keeps every digit above
 * b's level and b's digit. Allocates nothing. */
static void absorb(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    kr__qentry_t *spare = q->heap;
    uint32_t spare_cap = (uint32_t)q->heap_cap;
    uint64_t latest = 0;
    q->heap = k->items;
    q->heap_cap = k->cap;
    q->heap_count = k->count;
    for (uint32_t i = 0; i < k->count; i++)
        if (k->items[i].time > latest) latest = k->items[i].time;
    k->items = spare;
    k->cap = spare_cap;
    k->count = 0;
    k->min_time = UINT64_MAX;
    unmark(q, b);
    q->last = latest;
    heapify(q->heap, q->heap_count);
}

/* Splits bucket b (the lowest non-empty one; the small heap is empty):
 * last becomes its earliest time, entries at that time go to the small
 * heap, the others to lower buckets. If an array cannot grow, puts every
 * moved entry back and returns false, with the queue as before. */
static bool split(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    uint64_t last = k->min_time;
    uint32_t n = k->count, i;
    for (i = 0; i < n; i++) {
        const kr__qentry_t *e = &k->items[i];
        if (e->time == last) {
            if (q->heap_count == q->heap_cap && !heap_reserve(q, q->heap_count + 1)) break;
            q->heap[q->heap_count++] = *e;
        } else if (!bucket_append(q, bucket_of(e->time, last), e)) {
            break;
        }
    }
    if (i < n) {
        /* Undo: buckets below b and the heap were empty before; their
         * entries are exactly the i consumed ones, and items[0..i) is free. */
        uint32_t pos = 0;
        for (size_t j = 0; j < q->heap_count; j++) k->items[pos++] = q->heap[j];
        q->heap_count = 0;
        for (unsigned c = 0; c < b; c++) {
            kr__equeue_bucket_t *lo = &q->buckets[c];
            if (lo->count) memcpy(&k->items[pos], lo->items, lo->count * sizeof(kr__qentry_t));
            pos += lo->count;
            lo->count = 0;
            lo->min_time = UINT64_MAX;
            unmark(q, c);
        }
        return false;
    }
    k->count = 0;
    k->min_time = UINT64_MAX;
    if (k->cap > RELEASE_CAP) {
        if (k->cap > q->spare_cap) {
            free(q->spare);
            q->spare = k->items;
            q->spare_cap = k->cap;
        } else {
            free(k->items);
        }
        k->items = NULL;
        k->cap = 0;
    }
    unmark(q, b);
    q->last = last;
    heapify(q->heap, q->heap_count);
    return true;
}

static void refill(kr__equeue_t *q)
{
    unsigned w = 0;
    while (!q->nonempty[w]) w++;
    unsigned b = w * 64 + (unsigned)__builtin_ctzll(q->nonempty[w]);
    /* A small bucket becomes the heap as it is: sifting a few entries costs
     * less than moving each of them down the remaining levels one by one
     * (PHOLD, 16k pending events: ~3 moves per entry before, bench/README). */
    if (q->buckets[b].count <= KR__EQUEUE_ABSORB || !split(q, b)) absorb(q, b);
}

const kr__qentry_t *kr__equeue_peek(kr__equeue_t *q)
{
    if (q->heap_count == 0) {
        if (q->size == 0) return NULL;
        refill(q);
    }
    return &q->heap[0];
}

bool kr__equeue_pop(kr__equeue_t *q, kr__qentry_t *out)
{
    if (q->heap_count == 0) {
        if (q->size == 0) return false;
        refill(q);
    }
    *out = q->heap[0];
    size_t n = --q->heap_count;
    if (n > 0) sift_down(q->heap, n, 0, q->heap[n]);
    q->size--;
    return true;
}

size_t kr__equeue_size(const kr__equeue_t *q)
{
    return q->size;
}

size_t kr__equeue_bytes(const kr__equeue_t *q)
{
    size_t entries = q->heap_cap + q->spare_cap;
    for (unsigned b = 0; b < KR__EQUEUE_BUCKETS; b++) entries += q->buckets[b].cap;
    return entries * sizeof(kr__qentry_t);
}

kr_status_t kr__equeue_filter(kr__equeue_t *q, bool (*keep)(void *arg, const kr__qentry_t *e), void *arg)
{
    if (!keep) return kr__fail(KR_ERR_INVALID_ARG, "event queue: filter without a keep function");
    size_t kept = 0, total = 0;
    for (size_t i = 0; i < q->heap_count; i++)
        if (keep(arg, &q->heap[i])) q->heap[kept++] = q->heap[i];
    q->heap_count = kept;
    heapify(q->heap, kept);
    total += kept;
    for (unsigned b = 0; b < KR__EQUEUE_BUCKETS; b++) {
        kr__equeue_bucket_t *k = &q->buckets[b];
        if (!k->count) continue;
        uint32_t n = 0;
        uint64_t min = UINT64_MAX;
        for (uint32_t i = 0; i < k->count; i++) {
            if (!keep(arg, &k->items[i])) continue;
            if (k->items[i].time < min) min = k->items[i].time;
            k->items[n++] = k->items[i];
        }
        k->count = n;
        k->min_time = min;
        if (!n) unmark(q, b);
        total += n;
    }
    q->size = total;
    return KR_OK;
}
