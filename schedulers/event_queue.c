/* The per-simulator event queue: a radix-16 heap on time with a small
 * binary heap on the full key for the entries at or below `last` (see
 * event_queue.h for the invariants; bench/README.md for why this one).
 * Buckets are chains of fixed-size blocks from the queue's pool. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "schedulers/event_queue.h"
#include "base/error.h"
#include "base/fault.h"

#define INITIAL_CAP 8u
#ifndef KR__EQUEUE_ABSORB
#define KR__EQUEUE_ABSORB 32u
#endif
/* The pool keeps at most this many free blocks beyond one in 16 of those
 * in use: a split frees its bucket's blocks one by one while the buckets
 * below take new ones, so the pool must cover that churn, but a queue that
 * shrank for good gives the rest back. */
#define POOL_SLACK 64u
/* An emptied small heap above this many entries gives its array back. */
#define HEAP_RELEASE_CAP 4096u

static bool may_allocate(kr__equeue_t *q)
{
    if (q->alloc_fail_after >= 0) {
        if (q->alloc_fail_after == 0) return false;
        q->alloc_fail_after--;
    }
    return !kr__fault_alloc();
}

static kr__equeue_block_t *block_take(kr__equeue_t *q)
{
    kr__equeue_block_t *k = q->free_blocks;
    if (k) {
        q->free_blocks = k->next;
        q->free_count--;
    } else {
        if (!may_allocate(q) || !(k = malloc(sizeof *k))) return NULL;
        q->block_count++;
    }
    k->count = 0;
    return k;
}

static void block_give(kr__equeue_t *q, kr__equeue_block_t *k)
{
    if (q->free_count >= POOL_SLACK + (q->block_count - q->free_count) / 16) {
        free(k);
        q->block_count--;
        return;
    }
    k->next = q->free_blocks;
    q->free_blocks = k;
    q->free_count++;
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

/* Appends to a chain; false (nothing changed) if no block can be had. */
static inline __attribute__((always_inline)) bool chain_append(kr__equeue_t *q, kr__equeue_bucket_t *k,
                                                               const kr__qentry_t *e)
{
    kr__equeue_block_t *h = k->head;
    if (!h || h->count == KR__EQUEUE_BLOCK_ENTRIES) {
        if (!(h = block_take(q))) return false;
        h->next = k->head;
        k->head = h;
    }
    h->items[h->count++] = *e;
    k->count++;
    if (e->time < k->min_time) k->min_time = e->time;
    return true;
}

static inline bool bucket_append(kr__equeue_t *q, unsigned b, const kr__qentry_t *e)
{
    if (!chain_append(q, &q->buckets[b], e)) return false;
    mark(q, b);
    return true;
}

/* Empties a chain: its blocks go back to the pool. (Keeping each emptied
 * bucket's first block saved a few per cent on the 1,000-entry hold, but a
 * model of many small queues then held a 2 KiB block for every bucket it
 * had ever used: rows on 1 rank ran 3-6 % slower; the pool's last-in,
 * first-out reuse keeps the blocks in use few and warm.) */
static void chain_clear(kr__equeue_t *q, kr__equeue_bucket_t *k)
{
    for (kr__equeue_block_t *h = k->head, *next; h; h = next) {
        next = h->next;
        block_give(q, h);
    }
    k->head = NULL;
    k->count = 0;
    k->min_time = UINT64_MAX;
}

/* Puts chain `from` in front of `into` (no entry moves, nothing allocated)
 * and empties `from`. */
static void chain_splice(kr__equeue_bucket_t *into, kr__equeue_bucket_t *from)
{
    if (!from->head) return;
    kr__equeue_block_t *tail = from->head;
    while (tail->next) tail = tail->next;
    tail->next = into->head;
    into->head = from->head;
    into->count += from->count;
    if (from->min_time < into->min_time) into->min_time = from->min_time;
    from->head = NULL;
    from->count = 0;
    from->min_time = UINT64_MAX;
}

static bool heap_reserve(kr__equeue_t *q, size_t need)
{
    if (need <= q->heap_cap) return true;
    if (need > q->heap_mem_cap) {
        size_t cap = q->heap_mem_cap ? 2 * q->heap_mem_cap : INITIAL_CAP;
        while (cap < need) cap *= 2;
        if (cap > SIZE_MAX / sizeof(kr__qentry_t) || !may_allocate(q)) return false;
        /* (heap_mem holds no entries while a block holds the heap) */
        kr__qentry_t *h = q->heap_block ? malloc(cap * sizeof *h) : realloc(q->heap_mem, cap * sizeof *h);
        if (!h) return false;
        if (q->heap_block) free(q->heap_mem);
        q->heap_mem = h;
        q->heap_mem_cap = cap;
    }
    if (q->heap_block) {
        /* the heap outgrows its block: to its own array */
        memcpy(q->heap_mem, q->heap, q->heap_count * sizeof *q->heap);
        block_give(q, q->heap_block);
        q->heap_block = NULL;
    }
    q->heap = q->heap_mem;
    q->heap_cap = q->heap_mem_cap;
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

static void free_chain(kr__equeue_block_t *h)
{
    for (kr__equeue_block_t *next; h; h = next) {
        next = h->next;
        free(h);
    }
}

void kr__equeue_fini(kr__equeue_t *q)
{
    free(q->heap_mem);
    free(q->heap_block);
    free_chain(q->free_blocks);
    for (unsigned b = 0; b < KR__EQUEUE_BUCKETS; b++) free_chain(q->buckets[b].head);
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
 * small heap: copies its entries and raises last to their latest time.
 * Buckets above b stay valid: last keeps every digit above b's level and
 * b's digit. False, with nothing changed, if the heap cannot grow. */
static bool absorb(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    uint64_t latest = 0;
    size_t n = 0;
    if (k->head && !k->head->next) {
        /* one block: it becomes the heap's storage, and the heap's block
         * before (if any, empty) goes back to the pool */
        kr__equeue_block_t *old = q->heap_block;
        q->heap_block = k->head;
        q->heap = k->head->items;
        q->heap_cap = KR__EQUEUE_BLOCK_ENTRIES;
        n = k->head->count;
        for (size_t i = 0; i < n; i++)
            if (q->heap[i].time > latest) latest = q->heap[i].time;
        if (old) block_give(q, old);
        k->head = NULL;
        k->count = 0;
        k->min_time = UINT64_MAX;
    } else {
        if (!heap_reserve(q, k->count)) return false;
        for (kr__equeue_block_t *h = k->head; h; h = h->next)
            for (uint32_t i = 0; i < h->count; i++) {
                if (h->items[i].time > latest) latest = h->items[i].time;
                q->heap[n++] = h->items[i];
            }
        chain_clear(q, k);
    }
    q->heap_count = n;
    unmark(q, b);
    q->last = latest;
    heapify(q->heap, q->heap_count);
    return true;
}

/* Splits bucket b (the lowest non-empty one; the small heap is empty):
 * last becomes its earliest time, entries at that time go to the small
 * heap, the others to lower buckets. The bucket's blocks go back to the
 * pool as they are read, so a split needs few new ones. If a block or the
 * heap cannot be had, every chain written so far is linked back into b
 * (nothing moves, nothing is allocated) and it returns false with the
 * queue holding the same entries as before. */
static bool split(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    uint64_t last = k->min_time;
    kr__equeue_bucket_t at_last = { .head = NULL, .count = 0, .min_time = UINT64_MAX };
    kr__equeue_block_t *h = k->head;
    k->head = NULL;
    k->count = 0;
    k->min_time = UINT64_MAX;
    unmark(q, b);
    while (h) {
        uint32_t i;
        for (i = 0; i < h->count; i++) {
            const kr__qentry_t *e = &h->items[i];
            bool ok = e->time == last ? chain_append(q, &at_last, e) : bucket_append(q, bucket_of(e->time, last), e);
            if (!ok) break;
        }
        if (i < h->count) {
            /* Undo: the unread rest of h and the blocks after it, then
             * every chain this split wrote, become bucket b again. */
            memmove(h->items, &h->items[i], (h->count - i) * sizeof *h->items);
            h->count -= i;
            k->head = h;
            for (kr__equeue_block_t *r = h; r; r = r->next) {
                k->count += r->count;
                for (uint32_t j = 0; j < r->count; j++)
                    if (r->items[j].time < k->min_time) k->min_time = r->items[j].time;
            }
            goto undo;
        }
        kr__equeue_block_t *next = h->next;
        block_give(q, h);
        h = next;
    }
    if (!heap_reserve(q, at_last.count)) goto undo;
    for (kr__equeue_block_t *a = at_last.head; a; a = a->next) {
        memcpy(&q->heap[q->heap_count], a->items, a->count * sizeof *a->items);
        q->heap_count += a->count;
    }
    chain_clear(q, &at_last);
    q->last = last;
    heapify(q->heap, q->heap_count);
    return true;
undo:
    for (unsigned c = 0; c < b; c++) {
        chain_splice(k, &q->buckets[c]);
        unmark(q, c);
    }
    chain_splice(k, &at_last);
    mark(q, b);
    return false;
}

/* The lowest non-empty bucket. */
static unsigned lowest_bucket(const kr__equeue_t *q)
{
    unsigned w = 0;
    while (!q->nonempty[w]) w++;
    return w * 64 + (unsigned)__builtin_ctzll(q->nonempty[w]);
}

/* Fills the empty small heap from the lowest bucket. False if memory ran
 * short: that bucket is then as it was and still the lowest. */
static bool refill(kr__equeue_t *q)
{
    unsigned b = lowest_bucket(q);
    if (q->heap_mem_cap > HEAP_RELEASE_CAP && q->buckets[b].count < q->heap_mem_cap / 4) {
        if (q->heap == q->heap_mem) {
            q->heap = NULL;
            q->heap_cap = 0;
        }
        free(q->heap_mem);
        q->heap_mem = NULL;
        q->heap_mem_cap = 0;
    }
    /* A small bucket becomes the heap as it is: sifting a few entries costs
     * less than moving each of them down the remaining levels one by one
     * (PHOLD, 16k pending events: ~3 moves per entry before, bench/README). */
    if (q->buckets[b].count <= KR__EQUEUE_ABSORB) return absorb(q, b);
    return split(q, b) || absorb(q, b);
}

/* Where memory ran short: the full-key minimum of the lowest bucket,
 * found by a scan; *holder is its block and *before the block ahead of
 * that one in the chain (NULL for the first). */
static kr__qentry_t *scan_min(kr__equeue_t *q, kr__equeue_block_t **holder, kr__equeue_block_t **before)
{
    kr__qentry_t *min = NULL;
    kr__equeue_block_t *prev = NULL;
    *holder = *before = NULL;
    for (kr__equeue_block_t *h = q->buckets[lowest_bucket(q)].head; h; prev = h, h = h->next)
        for (uint32_t i = 0; i < h->count; i++)
            if (!min || kr__qentry_less(&h->items[i], min)) {
                min = &h->items[i];
                *holder = h;
                *before = prev;
            }
    return min;
}

const kr__qentry_t *kr__equeue_peek(kr__equeue_t *q)
{
    if (q->heap_count == 0) {
        if (q->size == 0) return NULL;
        if (!refill(q)) {
            kr__equeue_block_t *holder, *before;
            return scan_min(q, &holder, &before);
        }
    }
    return &q->heap[0];
}

/* Removes the minimum of the lowest bucket, with no heap (see scan_min).
 * Its place is filled from the end of its block; an emptied block goes
 * back to the pool. Allocates nothing. */
static void pop_from_bucket(kr__equeue_t *q, kr__qentry_t *out)
{
    unsigned b = lowest_bucket(q);
    kr__equeue_bucket_t *k = &q->buckets[b];
    kr__equeue_block_t *holder, *before;
    kr__qentry_t *min = scan_min(q, &holder, &before);
    *out = *min;
    *min = holder->items[--holder->count];
    if (!holder->count) {
        if (before) before->next = holder->next;
        else k->head = holder->next;
        block_give(q, holder);
    }
    k->min_time = UINT64_MAX;
    k->count--;
    for (kr__equeue_block_t *h = k->head; h; h = h->next)
        for (uint32_t i = 0; i < h->count; i++)
            if (h->items[i].time < k->min_time) k->min_time = h->items[i].time;
    if (!k->count) unmark(q, b);
}

bool kr__equeue_pop(kr__equeue_t *q, kr__qentry_t *out)
{
    if (q->heap_count == 0) {
        if (q->size == 0) return false;
        if (!refill(q)) {
            pop_from_bucket(q, out);
            q->size--;
            return true;
        }
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
    return q->heap_mem_cap * sizeof(kr__qentry_t) + q->block_count * sizeof(kr__equeue_block_t);
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
        /* Compacts the chain in place: a write cursor follows the read
         * cursor through the same blocks, and the blocks left over go back
         * to the pool. */
        kr__equeue_block_t *w = k->head;
        uint32_t wi = 0;
        uint64_t min = UINT64_MAX;
        uint32_t n = 0;
        for (kr__equeue_block_t *r = k->head; r; r = r->next)
            for (uint32_t i = 0; i < r->count; i++) {
                if (!keep(arg, &r->items[i])) continue;
                if (wi == KR__EQUEUE_BLOCK_ENTRIES) {
                    w->count = wi;
                    w = w->next;
                    wi = 0;
                }
                if (r->items[i].time < min) min = r->items[i].time;
                w->items[wi++] = r->items[i];
                n++;
            }
        w->count = wi;
        kr__equeue_block_t *rest = w->next;
        w->next = NULL;
        for (kr__equeue_block_t *next; rest; rest = next) {
            next = rest->next;
            block_give(q, rest);
        }
        if (!n) {
            block_give(q, k->head);
            k->head = NULL;
            unmark(q, b);
        }
        k->count = n;
        k->min_time = min;
        total += n;
    }
    q->size = total;
    return KR_OK;
}
