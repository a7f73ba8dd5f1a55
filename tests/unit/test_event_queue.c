/* The private event queue (schedulers/event_queue.h), checked against a
 * brute-force model (a sorted array): random pushes and pops with many
 * equal times and equal-time entries below the last popped one, filter,
 * peek then push of a smaller entry, the empty queue, extreme times, a
 * 100,000-entry drain in exact order, and allocation failures (push
 * refused with the queue unchanged, pops that still succeed, splits that
 * run out of blocks part-way), and a bucket's blocks: a small one first,
 * kept when the bucket empties, and the heap made in place. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schedulers/event_queue.h"

/* ---- the model: a binary heap by full key ---- */

/* The key order written out again, so a bug in kr__qentry_less shows. */
static bool key_less(const kr__qentry_t *a, const kr__qentry_t *b)
{
    if (a->time != b->time) return a->time < b->time;
    if (a->hi != b->hi) return a->hi < b->hi;
    return a->lo < b->lo;
}

/* a[0] is the least entry. A heap, not a sorted array: moving the array
 * on every push and pop made the random tests quadratic, which the
 * sanitizer build's memmove turned into minutes. */
typedef struct {
    kr__qentry_t *a;
    size_t n, cap;
} model_t;

static void model_sift_down(model_t *m, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->n) return;
        if (c + 1 < m->n && key_less(&m->a[c + 1], &m->a[c])) c++;
        if (!key_less(&m->a[c], &m->a[i])) return;
        kr__qentry_t t = m->a[i];
        m->a[i] = m->a[c];
        m->a[c] = t;
        i = c;
    }
}

static void model_push(model_t *m, const kr__qentry_t *e)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->a = realloc(m->a, m->cap * sizeof *m->a);
        cr_assert_not_null(m->a);
    }
    size_t i = m->n++;
    while (i > 0 && key_less(e, &m->a[(i - 1) / 2])) {
        m->a[i] = m->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->a[i] = *e;
}

static kr__qentry_t model_pop(model_t *m)
{
    cr_assert_gt(m->n, 0);
    kr__qentry_t e = m->a[0];
    m->a[0] = m->a[--m->n];
    model_sift_down(m, 0);
    return e;
}

/* Restores the heap after entries were dropped in place (the filters). */
static void model_rebuild(model_t *m)
{
    for (size_t i = m->n / 2; i-- > 0;) model_sift_down(m, i);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void assert_same(const kr__qentry_t *got, const kr__qentry_t *want, const char *what, size_t step)
{
    cr_assert(got->time == want->time && got->hi == want->hi && got->lo == want->lo &&
              got->slot == want->slot && got->aux == want->aux,
              "%s at step %zu: got (%llu, %llu, %llu, slot %u), want (%llu, %llu, %llu, slot %u)",
              what, step,
              (unsigned long long)got->time, (unsigned long long)got->hi, (unsigned long long)got->lo, got->slot,
              (unsigned long long)want->time, (unsigned long long)want->hi, (unsigned long long)want->lo, want->slot);
}


static void check_pop(kr__equeue_t *q, model_t *m, size_t step)
{
    kr__qentry_t got;
    if (m->n == 0) {
        cr_assert_null(kr__equeue_peek(q), "peek on an empty queue at step %zu", step);
        cr_assert_not(kr__equeue_pop(q, &got), "pop on an empty queue at step %zu", step);
        return;
    }
    const kr__qentry_t *p = kr__equeue_peek(q);
    cr_assert_not_null(p, "peek returned NULL with %zu entries at step %zu", m->n, step);
    assert_same(p, &m->a[0], "peek", step);
    cr_assert(kr__equeue_pop(q, &got), "pop failed with %zu entries at step %zu", m->n, step);
    kr__qentry_t want = model_pop(m);
    assert_same(&got, &want, "pop", step);
}

static void drain_and_check(kr__equeue_t *q, model_t *m)
{
    size_t step = 0;
    while (m->n) {
        cr_assert_eq(kr__equeue_size(q), m->n);
        check_pop(q, m, step++);
    }
    cr_assert_eq(kr__equeue_size(q), 0);
    kr__qentry_t e;
    cr_assert_not(kr__equeue_pop(q, &e));
    cr_assert_null(kr__equeue_peek(q));
}

static uint32_t next_slot;

/* An entry at or after now: often at now exactly (with a hi/lo that may
 * sort before entries already popped), often a tick or a few later, some
 * far away. lo is unique (a counter in its low bits) so the order is total. */
static kr__qentry_t random_entry(uint64_t now, uint64_t seq)
{
    uint64_t r = rnd();
    uint64_t delay;
    switch (r % 8) {
    case 0: case 1: case 2: delay = 0; break;
    case 3: delay = 1 + (r >> 8) % 3; break;
    case 4: delay = (r >> 8) % 256; break;
    case 5: delay = (r >> 8) % 100000; break;
    case 6: delay = (r >> 8) % ((uint64_t)1 << 40); break;
    default: delay = (r >> 8) % 20; break;
    }
    kr__qentry_t e;
    e.time = now + delay;
    e.hi = (rnd() % 4) << 32 | (rnd() % 3);
    e.lo = (rnd() % 8) << 40 | seq;
    e.slot = next_slot++;
    e.aux = (uint32_t)rnd();
    return e;
}

Test(event_queue, empty_queue)
{
    kr__equeue_t q;
    cr_assert_eq(kr__equeue_init(&q), KR_OK);
    kr__qentry_t e;
    cr_assert_eq(kr__equeue_size(&q), 0);
    cr_assert_null(kr__equeue_peek(&q));
    cr_assert_not(kr__equeue_pop(&q, &e));
    cr_assert_eq(kr__equeue_size(&q), 0);
    kr__equeue_fini(&q);
    /* fini, then init again, reuses nothing stale */
    cr_assert_eq(kr__equeue_init(&q), KR_OK);
    kr__qentry_t a = { .time = 5, .hi = 1, .lo = 2, .slot = 7 };
    cr_assert_eq(kr__equeue_push(&q, &a), KR_OK);
    cr_assert(kr__equeue_pop(&q, &e));
    cr_assert_eq(e.slot, 7);
    cr_assert_not(kr__equeue_pop(&q, &e));
    cr_assert_null(kr__equeue_peek(&q));
    kr__equeue_fini(&q);
}

Test(event_queue, peek_then_push_smaller)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    kr__qentry_t e;
    kr__qentry_t a = { .time = 100, .hi = 5, .lo = 5, .slot = 1 };
    kr__qentry_t b = { .time = 200, .hi = 0, .lo = 0, .slot = 2 };
    kr__equeue_push(&q, &a);
    kr__equeue_push(&q, &b);
    cr_assert(kr__equeue_pop(&q, &e));
    cr_assert_eq(e.slot, 1);
    /* peek looks ahead to time 200 ... */
    cr_assert_eq(kr__equeue_peek(&q)->slot, 2);
    /* ... then entries between the last popped time and it arrive */
    kr__qentry_t c = { .time = 150, .hi = 9, .lo = 9, .slot = 3 };
    cr_assert_eq(kr__equeue_push(&q, &c), KR_OK);
    cr_assert_eq(kr__equeue_peek(&q)->slot, 3);
    /* and one at the last popped time itself, with a smaller (hi, lo) */
    kr__qentry_t d = { .time = 100, .hi = 0, .lo = 1, .slot = 4 };
    cr_assert_eq(kr__equeue_push(&q, &d), KR_OK);
    cr_assert_eq(kr__equeue_peek(&q)->slot, 4);
    /* and one at 200 with a smaller key than the peeked 200 */
    kr__qentry_t f = { .time = 199, .hi = 0, .lo = 0, .slot = 5 };
    cr_assert_eq(kr__equeue_push(&q, &f), KR_OK);
    uint32_t want[] = { 4, 3, 5, 2 };
    for (int i = 0; i < 4; i++) {
        cr_assert(kr__equeue_pop(&q, &e));
        cr_assert_eq(e.slot, want[i], "pop %d: slot %u, want %u", i, e.slot, want[i]);
    }
    cr_assert_not(kr__equeue_pop(&q, &e));
    kr__equeue_fini(&q);
}

Test(event_queue, ties_in_time_come_out_in_key_order)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    rng_state = 11;
    /* 2,000 entries over 5 distinct times */
    for (uint64_t i = 0; i < 2000; i++) {
        kr__qentry_t e = { .time = 1000 + (rnd() % 5) * 7, .hi = rnd() % 3, .lo = rnd(), .slot = (uint32_t)i };
        cr_assert_eq(kr__equeue_push(&q, &e), KR_OK);
        model_push(&m, &e);
    }
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

Test(event_queue, extreme_times)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    uint64_t times[] = { 0, UINT64_MAX, 1, UINT64_MAX - 1, (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1, 0, UINT64_MAX };
    for (uint32_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        kr__qentry_t e = { .time = times[i], .hi = UINT64_MAX - i, .lo = i, .slot = i };
        kr__equeue_push(&q, &e);
        model_push(&m, &e);
    }
    /* pop half, push more at and after the popped time, drain */
    for (size_t i = 0; i < 4; i++) check_pop(&q, &m, i);
    kr__qentry_t e = { .time = UINT64_MAX, .hi = 0, .lo = 0, .slot = 100 };
    kr__equeue_push(&q, &e);
    model_push(&m, &e);
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

/* Random pushes and pops (and peeks) checked op by op against the model.
 * Pushes go at or after the last popped time, as a simulator's do. */
static void random_run(uint64_t seed, size_t steps, unsigned push_weight)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    rng_state = seed;
    uint64_t now = 0, seq = 0;
    for (size_t step = 0; step < steps; step++) {
        unsigned op = (unsigned)(rnd() % 10);
        if (op < push_weight) {
            kr__qentry_t e = random_entry(now, seq++);
            cr_assert_eq(kr__equeue_push(&q, &e), KR_OK);
            model_push(&m, &e);
        } else if (op == 9 && m.n) {
            /* peek only: may look ahead, the next pushes may sort before it */
            assert_same(kr__equeue_peek(&q), &m.a[0], "peek", step);
        } else {
            if (m.n) now = m.a[0].time;
            check_pop(&q, &m, step);
        }
        cr_assert_eq(kr__equeue_size(&q), m.n, "size %zu, want %zu at step %zu", kr__equeue_size(&q), m.n, step);
    }
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

Test(event_queue, random_balanced) { random_run(1, 200000, 5); }
Test(event_queue, random_growing) { random_run(2, 100000, 7); }
Test(event_queue, random_shrinking) { random_run(3, 100000, 4); }

typedef struct {
    uint32_t modulus;
    size_t calls;
} filter_arg_t;

static bool keep_not_multiple(void *arg, const kr__qentry_t *e)
{
    filter_arg_t *f = arg;
    f->calls++;
    return e->slot % f->modulus != 0;
}

static bool keep_none(void *arg, const kr__qentry_t *e)
{
    (void)e;
    ((filter_arg_t *)arg)->calls++;
    return false;
}

Test(event_queue, filter)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    rng_state = 4;
    uint64_t now = 0, seq = 0;
    cr_assert_eq(kr__equeue_filter(&q, NULL, NULL), KR_ERR_INVALID_ARG);
    for (size_t round = 0; round < 200; round++) {
        size_t pushes = rnd() % 600, pops = rnd() % 500;
        for (size_t i = 0; i < pushes; i++) {
            kr__qentry_t e = random_entry(now, seq++);
            kr__equeue_push(&q, &e);
            model_push(&m, &e);
        }
        for (size_t i = 0; i < pops && m.n; i++) {
            now = m.a[0].time;
            check_pop(&q, &m, round);
        }
        if (round % 3 == 0 && m.n) kr__equeue_peek(&q);
        filter_arg_t f = { .modulus = 2 + (uint32_t)(rnd() % 5), .calls = 0 };
        size_t before = m.n;
        cr_assert_eq(kr__equeue_filter(&q, keep_not_multiple, &f), KR_OK);
        cr_assert_eq(f.calls, before, "keep called %zu times for %zu entries", f.calls, before);
        size_t kept = 0;
        for (size_t i = 0; i < m.n; i++)
            if (m.a[i].slot % f.modulus != 0) m.a[kept++] = m.a[i];
        m.n = kept;
        model_rebuild(&m);
        cr_assert_eq(kr__equeue_size(&q), m.n);
        if (m.n) assert_same(kr__equeue_peek(&q), &m.a[0], "peek after filter", round);
    }
    filter_arg_t f = { .modulus = 1, .calls = 0 };
    size_t before = m.n;
    cr_assert_eq(kr__equeue_filter(&q, keep_none, &f), KR_OK);
    cr_assert_eq(f.calls, before);
    cr_assert_eq(kr__equeue_size(&q), 0);
    m.n = 0;
    drain_and_check(&q, &m);
    /* usable after being emptied by a filter */
    kr__qentry_t e = random_entry(now, seq++);
    kr__equeue_push(&q, &e);
    model_push(&m, &e);
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

static int cmp_entry(const void *a, const void *b)
{
    const kr__qentry_t *x = a, *y = b;
    return key_less(x, y) ? -1 : key_less(y, x);
}

Test(event_queue, large_drain_exact_order)
{
    enum { N = 100000 };
    kr__equeue_t q;
    kr__equeue_init(&q);
    kr__qentry_t *all = malloc(N * sizeof *all);
    cr_assert_not_null(all);
    rng_state = 5;
    for (uint32_t i = 0; i < N; i++) {
        uint64_t r = rnd();
        /* a third on 1,000 shared times, the rest spread over 2^48 ticks */
        all[i].time = r % 3 == 0 ? (r >> 8) % 1000 * 1000003 : (r >> 8) % ((uint64_t)1 << 48);
        all[i].hi = rnd() % 4;
        all[i].lo = rnd() % 16 << 32 | i;
        all[i].slot = i;
        all[i].aux = ~i;
        cr_assert_eq(kr__equeue_push(&q, &all[i]), KR_OK);
    }
    cr_assert_eq(kr__equeue_size(&q), N);
    qsort(all, N, sizeof *all, cmp_entry);
    for (size_t i = 0; i < N; i++) {
        kr__qentry_t e;
        cr_assert(kr__equeue_pop(&q, &e), "pop %zu of %d failed", i, N);
        assert_same(&e, &all[i], "drain", i);
    }
    kr__qentry_t e;
    cr_assert_not(kr__equeue_pop(&q, &e));
    cr_assert_eq(kr__equeue_size(&q), 0);
    free(all);
    kr__equeue_fini(&q);
}

/* The hold pattern of a simulation: pop, push one a little later; checked
 * against the model on every step. */
Test(event_queue, hold_against_model)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    rng_state = 6;
    uint64_t seq = 0;
    for (int i = 0; i < 3000; i++) {
        kr__qentry_t e = random_entry(0, seq++);
        kr__equeue_push(&q, &e);
        model_push(&m, &e);
    }
    for (size_t step = 0; step < 100000; step++) {
        uint64_t now = m.a[0].time;
        check_pop(&q, &m, step);
        kr__qentry_t e = random_entry(now, seq++);
        kr__equeue_push(&q, &e);
        model_push(&m, &e);
    }
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

/* Allocations fail at random points: a refused push returns KR_ERR_NOMEM
 * and leaves the queue unchanged; pops and peeks never fail for it (a
 * bucket that cannot be split becomes the small heap whole). */
Test(event_queue, allocation_failures)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    rng_state = 7;
    uint64_t now = 0, seq = 0;
    size_t refused = 0;
    for (size_t step = 0; step < 60000; step++) {
        if (rnd() % 50 == 0) q.alloc_fail_after = (int)(rnd() % 3);
        else if (rnd() % 10 == 0) q.alloc_fail_after = -1;
        if (rnd() % 10 < 6) {
            kr__qentry_t e = random_entry(now, seq++);
            kr_status_t s = kr__equeue_push(&q, &e);
            if (s == KR_OK) {
                model_push(&m, &e);
            } else {
                cr_assert_eq(s, KR_ERR_NOMEM);
                cr_assert_eq(kr_last_status(), KR_ERR_NOMEM);
                refused++;
            }
        } else {
            /* half the pops run with no memory at all */
            int saved = q.alloc_fail_after;
            if (rnd() % 2) q.alloc_fail_after = 0;
            if (m.n) now = m.a[0].time;
            check_pop(&q, &m, step);
            q.alloc_fail_after = saved;
        }
        cr_assert_eq(kr__equeue_size(&q), m.n, "size %zu, want %zu at step %zu", kr__equeue_size(&q), m.n, step);
    }
    cr_assert_gt(refused, 0, "no allocation was refused: the test tests nothing");
    /* drain with every allocation failing: splits must fall back */
    q.alloc_fail_after = 0;
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

/* Buckets are chains of pooled blocks. With no memory at all, the first
 * pop cannot split the lowest bucket nor copy it into the small heap: it
 * finds the minimum by scanning that bucket, leaves the heap empty, and
 * the next pop with memory back splits as usual. A split that runs out
 * part-way (the allocation budget 1 to 6) links every chain it wrote back
 * into its bucket, so the entries come out in exact order all the same,
 * also after a filter over the relinked, partly filled blocks. */
Test(event_queue, blocks_without_memory)
{
    for (int budget = 0; budget <= 6; budget++) {
        kr__equeue_t q;
        kr__equeue_init(&q);
        model_t m = { 0 };
        rng_state = 11 + (uint64_t)budget;
        /* 5,000 entries in one bucket (the times share every hex digit
         * above bit 27 and differ below it), so its split spreads them over
         * many lower buckets and needs many new blocks. */
        for (uint64_t i = 0; i < 5000; i++) {
            kr__qentry_t e = { .time = ((uint64_t)1 << 28) + rnd() % ((uint64_t)1 << 27), .hi = rnd() % 3, .lo = i,
                               .slot = (uint32_t)i, .aux = 0 };
            cr_assert_eq(kr__equeue_push(&q, &e), KR_OK);
            model_push(&m, &e);
        }
        cr_assert_eq(q.large.free_count, 0, "the pool should be empty after growing");
        q.alloc_fail_after = budget;
        check_pop(&q, &m, 0);
        if (budget == 0) cr_assert_eq(q.heap_count, 0, "with no memory the pop should have scanned the bucket");
        check_pop(&q, &m, 1);
        /* drop every third entry, then drain with memory back */
        q.alloc_fail_after = -1;
        filter_arg_t f = { .modulus = 3 };
        cr_assert_eq(kr__equeue_filter(&q, keep_not_multiple, &f), KR_OK);
        cr_assert_eq(f.calls, m.n, "keep called %zu times for %zu entries", f.calls, m.n);
        size_t kept = 0;
        for (size_t i = 0; i < m.n; i++)
            if (m.a[i].slot % 3) m.a[kept++] = m.a[i];
        m.n = kept;
        model_rebuild(&m);
        cr_assert_eq(kr__equeue_size(&q), m.n);
        drain_and_check(&q, &m);
        /* the large pool's slack, small blocks kept by buckets and the
         * small pool's slack, and the heap's array */
        size_t large = sizeof(kr__equeue_block_t) + KR__EQUEUE_BLOCK_ENTRIES * sizeof(kr__qentry_t);
        size_t small = sizeof(kr__equeue_block_t) + KR__EQUEUE_SMALL_ENTRIES * sizeof(kr__qentry_t);
        cr_assert_leq(kr__equeue_bytes(&q), (64 + 5000 / 16 + 2) * large + (KR__EQUEUE_BUCKETS + 64 + 2) * small +
                                                8192 * sizeof(kr__qentry_t),
                      "the drained queue keeps %zu bytes", kr__equeue_bytes(&q));
        free(m.a);
        kr__equeue_fini(&q);
    }
}

/* ---- the blocks of a bucket (event_queue.h, "A bucket's first block is a
 * small one") ---- */

/* The bucket an entry at `time` goes to while last is 0: the level of
 * its highest set hex digit, and that digit (event_queue.c, bucket_of). */
static kr__equeue_bucket_t *bucket_for(kr__equeue_t *q, uint64_t time)
{
    unsigned level = (63u - (unsigned)__builtin_clzll(time)) / KR__EQUEUE_DIGIT_BITS;
    unsigned digit = (unsigned)(time >> (level * KR__EQUEUE_DIGIT_BITS)) & (KR__EQUEUE_DIGITS - 1);
    return &q->buckets[level * KR__EQUEUE_DIGITS + digit];
}

/* n entries at times base + i, in the bucket of base as long as last is
 * below base and i below base's lowest set bit. */
static void push_into_one_bucket(kr__equeue_t *q, model_t *m, uint64_t base, uint64_t first, uint64_t n)
{
    for (uint64_t i = first; i < first + n; i++) {
        kr__qentry_t e = { .time = base + i, .hi = 0, .lo = i, .slot = (uint32_t)i, .aux = 0 };
        cr_assert_eq(kr__equeue_push(q, &e), KR_OK);
        model_push(m, &e);
    }
}

/* A bucket grows by a small block first, then large blocks in front of
 * it; the head's fill and capacity are in the bucket. */
Test(event_queue, small_then_large_blocks)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    kr__equeue_bucket_t *k = bucket_for(&q, (uint64_t)1 << 28);
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, 0, 1);
    cr_assert_not_null(k->head);
    cr_assert_eq(k->head->cap, KR__EQUEUE_SMALL_ENTRIES, "the first block should be small");
    cr_assert_eq(k->cap, KR__EQUEUE_SMALL_ENTRIES);
    cr_assert_eq(k->fill, 1);
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, 1, KR__EQUEUE_SMALL_ENTRIES - 1);
    cr_assert_null(k->head->next, "%u entries should fit in the small block", KR__EQUEUE_SMALL_ENTRIES);
    cr_assert_eq(q.large.block_count, 0);
    cr_assert_eq(q.small.block_count, 1);
    kr__equeue_block_t *small = k->head;
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, KR__EQUEUE_SMALL_ENTRIES, 1);
    cr_assert_eq(k->head->cap, KR__EQUEUE_BLOCK_ENTRIES, "the second block should be large");
    cr_assert_eq(k->head->next, small, "the large block should go in front of the small one");
    cr_assert_eq(k->fill, 1);
    cr_assert_eq(k->rest, KR__EQUEUE_SMALL_ENTRIES);
    cr_assert_eq(small->count, KR__EQUEUE_SMALL_ENTRIES, "the small block's count should be in its header");
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, KR__EQUEUE_SMALL_ENTRIES + 1, KR__EQUEUE_BLOCK_ENTRIES);
    cr_assert_eq(q.large.block_count, 2);
    cr_assert_eq(q.small.block_count, 1);
    cr_assert_eq(k->head->next->next, small, "the small block should stay last");
    cr_assert_eq(k->fill + k->rest, KR__EQUEUE_SMALL_ENTRIES + 1 + KR__EQUEUE_BLOCK_ENTRIES);
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

/* An emptied bucket keeps its small block and gives its large ones back,
 * both when it becomes the heap and when it is split; in a hold with few
 * entries no block is taken or given once every bucket has its own. */
Test(event_queue, emptied_bucket_keeps_small_block)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    kr__equeue_bucket_t *k = bucket_for(&q, (uint64_t)1 << 28);
    /* more than KR__EQUEUE_ABSORB entries: the first pop splits the bucket */
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, 0, 100);
    cr_assert_eq(q.large.block_count, 2);
    kr__equeue_block_t *small = k->head->next->next;
    check_pop(&q, &m, 0);
    cr_assert_eq(k->head, small, "the split bucket should keep its small block");
    cr_assert_eq(k->fill + k->rest, 0);
    cr_assert_eq(k->cap, KR__EQUEUE_SMALL_ENTRIES);
    cr_assert_null(small->next);
    drain_and_check(&q, &m);

    /* a hold of 5 entries, 100,000 times */
    rng_state = 21;
    uint64_t seq = 1000;
    for (int i = 0; i < 5; i++) {
        kr__qentry_t e = random_entry(0, seq++);
        kr__equeue_push(&q, &e);
        model_push(&m, &e);
    }
    size_t small_blocks = 0, large_blocks = 0, small_free = 0, large_free = 0;
    for (size_t step = 0; step < 100000; step++) {
        if (step == 50000) {
            small_blocks = q.small.block_count;
            large_blocks = q.large.block_count;
            small_free = q.small.free_count;
            large_free = q.large.free_count;
        }
        uint64_t now = m.a[0].time;
        check_pop(&q, &m, step);
        kr__qentry_t e = random_entry(now, seq++);
        e.time = now + 1 + rnd() % 1000;
        kr__equeue_push(&q, &e);
        model_push(&m, &e);
        if (step >= 50000) {
            cr_assert_eq(q.small.free_count, small_free, "a small block went through the pool at step %zu", step);
            cr_assert_eq(q.large.free_count, large_free, "a large block went through the pool at step %zu", step);
            cr_assert_eq(q.small.block_count, small_blocks, "a small block was allocated at step %zu", step);
            cr_assert_eq(q.large.block_count, large_blocks, "a large block was allocated at step %zu", step);
        }
    }
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}

/* A bucket of one block becomes the heap in place and takes the heap's
 * small block before; a bucket of a large block and its small one
 * becomes the heap in the large block (the small one's entries join it)
 * and keeps the small one. */
Test(event_queue, two_blocks_become_the_heap_in_place)
{
    kr__equeue_t q;
    kr__equeue_init(&q);
    model_t m = { 0 };
    kr__equeue_bucket_t *k = bucket_for(&q, (uint64_t)1 << 28);
    push_into_one_bucket(&q, &m, (uint64_t)1 << 28, 0, 20);
    kr__equeue_block_t *large = k->head, *small = k->head->next;
    cr_assert_eq(large->cap, KR__EQUEUE_BLOCK_ENTRIES);
    cr_assert_eq(small->cap, KR__EQUEUE_SMALL_ENTRIES);
    size_t blocks = q.large.block_count + q.small.block_count;
    check_pop(&q, &m, 0);
    cr_assert_eq(q.heap_block, large, "the large block should hold the heap");
    cr_assert_eq(q.heap, large->items);
    cr_assert_eq(q.heap_count, 19);
    cr_assert_eq(k->head, small, "the bucket should keep its small block");
    cr_assert_eq(k->fill + k->rest, 0);
    cr_assert_eq(q.large.block_count + q.small.block_count, blocks, "no block should have been allocated");
    drain_and_check(&q, &m);

    /* one small block (of a bucket higher up, above last): it becomes
     * the heap; the heap's block before is large, so it goes back to the
     * pool and the bucket has none */
    kr__equeue_bucket_t *k2 = bucket_for(&q, (uint64_t)1 << 32);
    push_into_one_bucket(&q, &m, (uint64_t)1 << 32, 0, 5);
    kr__equeue_block_t *second = k2->head;
    cr_assert_eq(second->cap, KR__EQUEUE_SMALL_ENTRIES);
    size_t large_free = q.large.free_count;
    check_pop(&q, &m, 0);
    cr_assert_eq(q.heap_block, second, "the one-block bucket should hold the heap");
    cr_assert_null(k2->head);
    cr_assert_eq(q.large.free_count, large_free + 1, "the heap's large block should be back in the pool");
    drain_and_check(&q, &m);
    /* again: now the heap's block before is small, and the bucket takes it */
    kr__equeue_bucket_t *k3 = bucket_for(&q, (uint64_t)1 << 36);
    push_into_one_bucket(&q, &m, (uint64_t)1 << 36, 0, 5);
    kr__equeue_block_t *third = k3->head;
    check_pop(&q, &m, 0);
    cr_assert_eq(q.heap_block, third);
    cr_assert_eq(k3->head, second, "the bucket should take the heap's small block");
    cr_assert_eq(k3->cap, KR__EQUEUE_SMALL_ENTRIES);
    cr_assert_eq(k3->fill + k3->rest, 0);
    drain_and_check(&q, &m);
    free(m.a);
    kr__equeue_fini(&q);
}
