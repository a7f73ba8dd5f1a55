/* The per-simulator event queue: a radix-16 heap on time with a small
 * binary heap on the full key for the entries at or below `last` (see
 * event_queue.h for the invariants; bench/README.md for why this one).
 * Buckets are chains of blocks of two sizes from the queue's two pools. */
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

static size_t block_bytes(uint32_t cap)
{
    return sizeof(kr__equeue_block_t) + cap * sizeof(kr__qentry_t);
}

static kr__equeue_pool_t *pool_of(kr__equeue_t *q, uint32_t cap)
{
    return cap == KR__EQUEUE_SMALL_ENTRIES ? &q->small : &q->large;
}

/* A block of cap entries (small or large) from its pool, else allocated;
 * NULL if it cannot be had. */
static kr__equeue_block_t *block_take(kr__equeue_t *q, uint32_t cap)
{
    kr__equeue_pool_t *p = pool_of(q, cap);
    kr__equeue_block_t *k = p->free;
    if (k) {
        p->free = k->next;
        p->free_count--;
    } else {
        if (!may_allocate(q) || !(k = malloc(block_bytes(cap)))) return NULL;
        k->cap = cap;
        p->block_count++;
    }
    k->next = NULL;
    k->count = 0;
    return k;
}

static void block_give(kr__equeue_t *q, kr__equeue_block_t *k)
{
    kr__equeue_pool_t *p = pool_of(q, k->cap);
    if (p->free_count >= POOL_SLACK + (p->block_count - p->free_count) / 16) {
        free(k);
        p->block_count--;
        return;
    }
    k->next = p->free;
    p->free = k;
    p->free_count++;
}

static inline unsigned bucket_of(uint64_t time, uint64_t last)
{
    /* (63 ^ clz, the same as 63 - clz for 0..63, compiles to one bsr) */
    unsigned high = 63u ^ (unsigned)__builtin_clzll(time ^ last);
    unsigned level = high / KR__EQUEUE_DIGIT_BITS;
    unsigned digit = (unsigned)(time >> (level * KR__EQUEUE_DIGIT_BITS)) & (KR__EQUEUE_DIGITS - 1);
    return level * KR__EQUEUE_DIGITS + digit;
}

static inline void mark(kr__equeue_t *q, unsigned b) { q->nonempty[b / 64] |= (uint64_t)1 << (b % 64); }
static inline void unmark(kr__equeue_t *q, unsigned b) { q->nonempty[b / 64] &= ~((uint64_t)1 << (b % 64)); }

/* The bucket holds only `keep` (NULL or an empty block), no entries. */
static void bucket_reset(kr__equeue_bucket_t *k, kr__equeue_block_t *keep)
{
    if (keep) keep->next = NULL;
    k->head = keep;
    k->rest = 0;
    k->fill = 0;
    k->cap = keep ? keep->cap : 0;
    k->min_time = UINT64_MAX;
}

/* The head's fill goes into its header, so that code off the hot path
 * can walk the chain by the headers alone... */
static void chain_sync(kr__equeue_bucket_t *k)
{
    if (k->head) k->head->count = k->fill;
}

/* ... and comes back from it after such code changed the chain, which
 * now holds `count` entries. */
static void chain_load(kr__equeue_bucket_t *k, uint32_t count)
{
    k->fill = k->head ? k->head->count : 0;
    k->cap = k->head ? k->head->cap : 0;
    k->rest = count - k->fill;
}

static inline uint32_t bucket_count(const kr__equeue_bucket_t *k)
{
    return k->rest + k->fill;
}

/* A new head for a chain whose head is full (or that has none): a small
 * block first, large ones after. False, nothing changed, if no block can
 * be had. */
static bool chain_grow(kr__equeue_t *q, kr__equeue_bucket_t *k)
{
    kr__equeue_block_t *h = block_take(q, k->head ? KR__EQUEUE_BLOCK_ENTRIES : KR__EQUEUE_SMALL_ENTRIES);
    if (!h) return false;
    chain_sync(k);
    h->next = k->head;
    k->head = h;
    k->rest += k->fill;
    k->fill = 0;
    k->cap = h->cap;
    return true;
}

/* Appends to a chain; false (nothing changed) if no block can be had. */
static inline __attribute__((always_inline)) bool chain_append(kr__equeue_t *q, kr__equeue_bucket_t *k,
                                                               const kr__qentry_t *e)
{
    if (k->fill == k->cap && !chain_grow(q, k)) return false;
    uint64_t time = e->time;    /* (read before the copy, which could alias it) */
    k->head->items[k->fill++] = *e;
    if (time < k->min_time) k->min_time = time;
    return true;
}

static inline bool bucket_append(kr__equeue_t *q, unsigned b, const kr__qentry_t *e)
{
    if (!chain_append(q, &q->buckets[b], e)) return false;
    mark(q, b);
    return true;
}

/* Empties a bucket: its large blocks go back to the pool, and it keeps
 * one small block (if it has one) for the entries to come. Keeping a
 * large block too held 2 KiB for every bucket a model of many small
 * queues had ever used (rows on 1 rank ran 3-6 % slower); the pool's
 * last-in, first-out reuse keeps the large blocks in use few and warm. */
static void chain_empty(kr__equeue_t *q, kr__equeue_bucket_t *k)
{
    kr__equeue_block_t *keep = NULL;
    for (kr__equeue_block_t *h = k->head, *next; h; h = next) {
        next = h->next;
        if (!keep && h->cap == KR__EQUEUE_SMALL_ENTRIES) keep = h;
        else block_give(q, h);
    }
    bucket_reset(k, keep);
}

/* Empties a chain that is no bucket's (a split's entries at `last`):
 * every block goes back to its pool. */
static void chain_free(kr__equeue_t *q, kr__equeue_bucket_t *k)
{
    for (kr__equeue_block_t *h = k->head, *next; h; h = next) {
        next = h->next;
        block_give(q, h);
    }
    bucket_reset(k, NULL);
}

/* Puts chain `from` in front of `into` (no entry moves, nothing allocated)
 * and empties `from`; an empty `from` keeps its small block. */
static void chain_splice(kr__equeue_bucket_t *into, kr__equeue_bucket_t *from)
{
    uint32_t count = bucket_count(into) + bucket_count(from);
    if (!bucket_count(from)) return;
    chain_sync(into);
    chain_sync(from);
    kr__equeue_block_t *tail = from->head;
    while (tail->next) tail = tail->next;
    tail->next = into->head;
    into->head = from->head;
    if (from->min_time < into->min_time) into->min_time = from->min_time;
    chain_load(into, count);
    bucket_reset(from, NULL);
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
    free_chain(q->large.free);
    free_chain(q->small.free);
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
        return kr__fail(KR_ERR_NOMEM, "event queue: out of memory adding an entry at tick %llu",
                        (unsigned long long)e->time);
    }
    q->size++;
    return KR_OK;
}

/* The heap's storage becomes block h (of capacity cap), with n entries;
 * the heap's block before (if any) is returned to the caller. */
static inline kr__equeue_block_t *heap_to_block(kr__equeue_t *q, kr__equeue_block_t *h, uint32_t cap, size_t n)
{
    kr__equeue_block_t *old = q->heap_block;
    q->heap_block = h;
    q->heap = h->items;
    q->heap_cap = cap;
    q->heap_count = n;
    return old;
}

/* absorb() for a bucket of more than one block: moves its entries to the
 * heap, in place if they fit in its first block. */
static __attribute__((noinline)) bool absorb_chain(kr__equeue_t *q, kr__equeue_bucket_t *k)
{
    kr__equeue_block_t *h = k->head, *rest = h->next;
    if (!rest->next && rest->cap == KR__EQUEUE_SMALL_ENTRIES && k->fill + rest->count <= k->cap) {
        /* a large block and its small one: the small one's few entries
         * join the large one, which becomes the heap's storage, and the
         * bucket keeps the small one */
        memcpy(&h->items[k->fill], rest->items, rest->count * sizeof *rest->items);
        h->next = NULL;
        kr__equeue_block_t *old = heap_to_block(q, h, k->cap, k->fill + rest->count);
        if (old) block_give(q, old);
        bucket_reset(k, rest);
        return true;
    }
    if (!heap_reserve(q, bucket_count(k))) return false;
    chain_sync(k);
    size_t n = 0;
    for (kr__equeue_block_t *r = k->head; r; r = r->next) {
        memcpy(&q->heap[n], r->items, r->count * sizeof *r->items);
        n += r->count;
    }
    q->heap_count = n;
    chain_empty(q, k);
    return true;
}

/* Makes bucket b (the lowest non-empty one; the small heap is empty) the
 * small heap and raises last to its latest time. Buckets above b stay
 * valid: last keeps every digit above b's level and b's digit. False, with
 * nothing changed, if the heap cannot grow. */
static inline __attribute__((always_inline)) bool absorb(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    if (!k->rest && !k->head->next) {
        /* one block: it becomes the heap's storage, and the heap's block
         * before (empty) becomes the bucket's if small, so that the two
         * trade places at every refill as arrays used to */
        bool old_small = q->heap_cap == KR__EQUEUE_SMALL_ENTRIES;
        kr__equeue_block_t *old = heap_to_block(q, k->head, k->cap, k->fill);
        if (old && old_small) {
            bucket_reset(k, old);
        } else {
            if (old) block_give(q, old);
            bucket_reset(k, NULL);
        }
    } else if (!absorb_chain(q, k)) {
        return false;
    }
    uint64_t latest = 0;
    for (size_t i = 0; i < q->heap_count; i++)
        if (q->heap[i].time > latest) latest = q->heap[i].time;
    unmark(q, b);
    q->last = latest;
    heapify(q->heap, q->heap_count);
    return true;
}

/* Splits bucket b (the lowest non-empty one; the small heap is empty):
 * last becomes its earliest time, entries at that time go to the small
 * heap, the others to lower buckets. The bucket's large blocks go back to
 * the pool as they are read, so a split needs few new ones, and it keeps
 * its small block. If a block or the heap cannot be had, every chain
 * written so far is linked back into b (nothing moves, nothing is
 * allocated) and it returns false with the queue holding the same entries
 * as before. */
static __attribute__((noinline)) bool split(kr__equeue_t *q, unsigned b)
{
    kr__equeue_bucket_t *k = &q->buckets[b];
    uint64_t last = k->min_time;
    kr__equeue_bucket_t at_last = { .head = NULL, .rest = 0, .fill = 0, .cap = 0, .min_time = UINT64_MAX };
    chain_sync(k);
    kr__equeue_block_t *h = k->head, *small = NULL;
    /* (no entry of b goes back to b: each differs from the new last only
     * in lower digits) */
    bucket_reset(k, NULL);
    unmark(q, b);
    while (h) {
        uint32_t i, n = h->count;   /* (a local: the appends could be writing h->count) */
        for (i = 0; i < n; i++) {
            const kr__qentry_t *e = &h->items[i];
            bool ok = e->time == last ? chain_append(q, &at_last, e) : bucket_append(q, bucket_of(e->time, last), e);
            if (!ok) break;
        }
        if (i < n) {
            /* Undo: the unread rest of h and the blocks after it, then
             * every chain this split wrote, become bucket b again. */
            memmove(h->items, &h->items[i], (h->count - i) * sizeof *h->items);
            h->count -= i;
            k->head = h;
            uint32_t count = 0;
            for (kr__equeue_block_t *r = h; r; r = r->next) {
                count += r->count;
                for (uint32_t j = 0; j < r->count; j++)
                    if (r->items[j].time < k->min_time) k->min_time = r->items[j].time;
            }
            chain_load(k, count);
            goto undo;
        }
        kr__equeue_block_t *next = h->next;
        if (!small && h->cap == KR__EQUEUE_SMALL_ENTRIES) small = h;
        else block_give(q, h);
        h = next;
    }
    if (!heap_reserve(q, bucket_count(&at_last))) goto undo;
    chain_sync(&at_last);
    for (kr__equeue_block_t *a = at_last.head; a; a = a->next) {
        memcpy(&q->heap[q->heap_count], a->items, a->count * sizeof *a->items);
        q->heap_count += a->count;
    }
    chain_free(q, &at_last);
    if (small) bucket_reset(k, small);
    q->last = last;
    heapify(q->heap, q->heap_count);
    return true;
undo:
    if (small) {
        /* emptied, it ends b's chain again (or goes back if b has a chain) */
        if (k->head) block_give(q, small);
        else bucket_reset(k, small);
    }
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
 * short: that bucket is then as it was and still the lowest. (Not inlined:
 * in kr__equeue_pop it made every pop save and restore more registers.) */
static __attribute__((noinline)) bool refill(kr__equeue_t *q)
{
    unsigned b = lowest_bucket(q);
    if (q->heap_mem_cap > HEAP_RELEASE_CAP && bucket_count(&q->buckets[b]) < q->heap_mem_cap / 4) {
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
    if (bucket_count(&q->buckets[b]) > KR__EQUEUE_ABSORB && split(q, b)) return true;
    return absorb(q, b);
}

/* Where memory ran short: the full-key minimum of the lowest bucket,
 * found by a scan; *holder is its block and *before the block ahead of
 * that one in the chain (NULL for the first). */
static __attribute__((noinline)) kr__qentry_t *scan_min(kr__equeue_t *q, kr__equeue_block_t **holder, kr__equeue_block_t **before)
{
    kr__qentry_t *min = NULL;
    kr__equeue_block_t *prev = NULL;
    kr__equeue_bucket_t *k = &q->buckets[lowest_bucket(q)];
    *holder = *before = NULL;
    chain_sync(k);
    for (kr__equeue_block_t *h = k->head; h; prev = h, h = h->next)
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
 * Its place is filled from the end of its block; an emptied block after
 * the head goes back to the pool, and an emptied bucket keeps only its
 * small block. Allocates nothing. (It counts the entry out of q->size
 * itself: kr__equeue_pop's common path then compiled one instruction
 * shorter.) */
static __attribute__((noinline)) void pop_from_bucket(kr__equeue_t *q, kr__qentry_t *out)
{
    q->size--;
    unsigned b = lowest_bucket(q);
    kr__equeue_bucket_t *k = &q->buckets[b];
    kr__equeue_block_t *holder, *before;
    uint32_t count = bucket_count(k) - 1;
    kr__qentry_t *min = scan_min(q, &holder, &before);
    *out = *min;
    *min = holder->items[--holder->count];
    if (!holder->count && before) {
        before->next = holder->next;
        block_give(q, holder);
    }
    chain_load(k, count);
    k->min_time = UINT64_MAX;
    for (kr__equeue_block_t *h = k->head; h; h = h->next)
        for (uint32_t i = 0; i < h->count; i++)
            if (h->items[i].time < k->min_time) k->min_time = h->items[i].time;
    if (!count) {
        chain_empty(q, k);
        unmark(q, b);
    }
}

bool kr__equeue_pop(kr__equeue_t *q, kr__qentry_t *out)
{
    if (q->heap_count == 0) {
        if (q->size == 0) return false;
        if (!refill(q)) {
            pop_from_bucket(q, out);
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
    return q->heap_mem_cap * sizeof(kr__qentry_t) + q->large.block_count * block_bytes(KR__EQUEUE_BLOCK_ENTRIES) +
           q->small.block_count * block_bytes(KR__EQUEUE_SMALL_ENTRIES);
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
        if (!bucket_count(k)) continue;
        /* Compacts the chain in place: a write cursor follows the read
         * cursor through the same blocks, and the blocks left over go back
         * to the pool. */
        chain_sync(k);
        kr__equeue_block_t *w = k->head;
        uint32_t wi = 0;
        uint64_t min = UINT64_MAX;
        uint32_t n = 0;
        for (kr__equeue_block_t *r = k->head; r; r = r->next)
            for (uint32_t i = 0; i < r->count; i++) {
                if (!keep(arg, &r->items[i])) continue;
                if (wi == w->cap) {
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
        k->min_time = min;
        chain_load(k, n);
        if (!n) {
            chain_empty(q, k);
            unmark(q, b);
        }
        total += n;
    }
    q->size = total;
    return KR_OK;
}
