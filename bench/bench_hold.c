/* Event queue hold benchmark (issue 3): prints one JSON line per figure
 * (bench/README.md, "Event queue (issue 3)").
 *
 *   build/bench/bench_hold [--reps R] [--holds M] [--seed S] [--alts] [--cpu-time] [--queue-only]
 *
 * The classic hold model: fill a queue with N entries at Exp(1) times
 * (1,000,000 ticks per unit, delays rounded up to whole ticks), then time M
 * holds, each popping the minimum and pushing one entry at the popped time
 * plus a fresh Exp(1) delay. hi is a priority/source word and lo an
 * increasing sequence, as the runtime fills them. Each queue is warmed up
 * (2N holds, at least 1,000,000) before timing. Every figure is the median
 * of R repetitions; at N = 1e6 the kairos queue and a textbook binary heap
 * alternate repetition by repetition so noise hits both. --alts adds the
 * other structures tried (a 4-ary heap, and the binary heap at every N);
 * --queue-only times the kairos queue alone (for tuning it).
 *
 * Exponential delays come from a precomputed table of 65,536 values indexed
 * by a xorshift generator, identical for every queue, so the generator
 * costs a few instructions per hold. Every queue pops the same sequence;
 * the benchmark checks that (a checksum of popped keys) and fails if not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedulers/event_queue.h"
#include "bench_util.h"

#define PRECISION 1000000.0
#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)

/* Wall time by default; --cpu-time counts only this thread's CPU time,
 * which leaves out the time the process spends descheduled on a busy
 * machine (cache interference from other processes stays in). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_ns(void) { return bench_clock_ns(bench_clock); }


static uint64_t delay_table[TABLE_SIZE];

static void fill_table(uint64_t seed)
{
    uint64_t s = seed;
    for (unsigned i = 0; i < TABLE_SIZE; i++) {
        /* splitmix64 → u in (0, 1] → ceil(Exp(1) ticks), at least one tick */
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        double u = ((double)(z >> 11) + 1.0) * 0x1.0p-53;
        uint64_t d = (uint64_t)ceil(-log(u) * PRECISION);
        delay_table[i] = d ? d : 1;
    }
}

/* Generator of entries: a xorshift64 state, the sequence number, and a
 * checksum of what was popped. */
typedef struct {
    uint64_t x, seq, sum;
} gen_t;

static inline kr__qentry_t gen_entry(gen_t *g, uint64_t base)
{
    uint64_t x = g->x;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    g->x = x;
    kr__qentry_t e;
    e.time = base + delay_table[x >> (64 - TABLE_BITS)];
    /* priority 0..3 in the high half, source simulator 0..63 in the low */
    e.hi = ((x & 3) << 32) | ((x >> 2) & 63);
    e.lo = g->seq++;
    e.slot = (uint32_t)e.lo;
    e.aux = 0;
    return e;
}

static inline void gen_popped(gen_t *g, const kr__qentry_t *e)
{
    g->sum = (g->sum ^ e->time ^ (e->lo << 20)) * 0x100000001b3ULL;
}

/* ---- textbook binary heap (the reference) ---- */

typedef struct {
    kr__qentry_t *a;
    size_t n, cap;
} bheap_t;

static inline void bheap_push(bheap_t *h, const kr__qentry_t *e)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->a = realloc(h->a, h->cap * sizeof *h->a);
        if (!h->a) abort();
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!kr__qentry_less(e, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = *e;
}

static inline void bheap_pop(bheap_t *h, kr__qentry_t *out)
{
    *out = h->a[0];
    kr__qentry_t e = h->a[--h->n];
    size_t n = h->n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && kr__qentry_less(&h->a[c + 1], &h->a[c])) c++;
        if (!kr__qentry_less(&h->a[c], &e)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n) h->a[i] = e;
}

/* ---- 4-ary heap, entries inline, each group of four children on two
 * whole cache lines (the array starts 3 entries into a 64-byte-aligned
 * block, so children 4i+1..4i+4 begin on a line). ---- */

typedef struct {
    kr__qentry_t *base, *a;
    size_t n, cap;
} dheap_t;

static inline void dheap_push(dheap_t *h, const kr__qentry_t *e)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        kr__qentry_t *base = aligned_alloc(64, (cap + 4) * sizeof *base);
        if (!base) abort();
        if (h->n) memcpy(base + 3, h->a, h->n * sizeof *base);
        free(h->base);
        h->base = base;
        h->a = base + 3;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 4;
        if (!kr__qentry_less(e, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = *e;
}

static inline void dheap_pop(dheap_t *h, kr__qentry_t *out)
{
    *out = h->a[0];
    kr__qentry_t e = h->a[--h->n];
    size_t n = h->n, i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n) break;
        size_t best = c, end = c + 4 < n ? c + 4 : n;
        for (size_t j = c + 1; j < end; j++)
            if (kr__qentry_less(&h->a[j], &h->a[best])) best = j;
        if (!kr__qentry_less(&h->a[best], &e)) break;
        h->a[i] = h->a[best];
        i = best;
    }
    if (n) h->a[i] = e;
}

/* ---- the kairos queue ---- */

static inline void kq_push(kr__equeue_t *q, const kr__qentry_t *e)
{
    if (kr__equeue_push(q, e) != KR_OK) abort();
}

static inline void kq_pop(kr__equeue_t *q, kr__qentry_t *out)
{
    if (!kr__equeue_pop(q, out)) abort();
}

/* One runner per structure: fill, warm up, and M timed holds. */
#define DEFINE_RUNNER(NAME, TYPE, PUSH, POP)                                   \
    static void NAME##_fill(TYPE *q, gen_t *g, size_t n, size_t warm)          \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            kr__qentry_t e = gen_entry(g, 0);                                   \
            PUSH(q, &e);                                                       \
        }                                                                      \
        for (size_t i = 0; i < warm; i++) {                                    \
            kr__qentry_t e;                                                     \
            POP(q, &e);                                                        \
            gen_popped(g, &e);                                                 \
            kr__qentry_t f = gen_entry(g, e.time);                              \
            PUSH(q, &f);                                                       \
        }                                                                      \
    }                                                                          \
    static double NAME##_hold(TYPE *q, gen_t *g, size_t m)                     \
    {                                                                          \
        double t0 = now_ns();                                                  \
        for (size_t i = 0; i < m; i++) {                                       \
            kr__qentry_t e;                                                     \
            POP(q, &e);                                                        \
            gen_popped(g, &e);                                                 \
            kr__qentry_t f = gen_entry(g, e.time);                              \
            PUSH(q, &f);                                                       \
        }                                                                      \
        return (now_ns() - t0) / (double)m;                                    \
    }

DEFINE_RUNNER(kq, kr__equeue_t, kq_push, kq_pop)
DEFINE_RUNNER(bh, bheap_t, bheap_push, bheap_pop)
DEFINE_RUNNER(dh, dheap_t, dheap_push, dheap_pop)

static void emit(const char *name, double value, const char *unit, size_t n, int reps)
{
    printf("{\"bench\": \"hold\", \"case\": \"%s\", \"value\": %.4g, \"unit\": \"%s\", \"n\": %zu, \"reps\": %d, \"clock\": \"%s\"}\n",
           name, value, unit, n, reps, bench_clock == CLOCK_MONOTONIC ? "wall" : "cpu");
    fflush(stdout);
}

#define MAX_REPS 64

int main(int argc, char **argv)
{
    int reps = 5, alts = 0, queue_only = 0;
    size_t holds = 2000000;
    uint64_t seed = 42;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--holds") && i + 1 < argc) holds = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--alts")) alts = 1;
        else if (!strcmp(argv[i], "--queue-only")) queue_only = 1;
        else if (!strcmp(argv[i], "--cpu-time")) bench_clock = CLOCK_THREAD_CPUTIME_ID;
        else {
            fprintf(stderr, "usage: %s [--reps R] [--holds M] [--seed S] [--alts] [--cpu-time] [--queue-only]\n", argv[0]);
            return 2;
        }
    }
    if (queue_only) alts = 0;
    if (reps < 1 || reps > MAX_REPS || holds < 1) {
        fprintf(stderr, "bench_hold: --reps must be 1..%d and --holds at least 1\n", MAX_REPS);
        return 2;
    }
    fill_table(seed);

    static const struct { size_t n; const char *name; } sizes[] = {
        { 1000, "1e3" }, { 100000, "1e5" }, { 1000000, "1e6" },
    };
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s].n;
        size_t warm = 2 * n > 1000000 ? 2 * n : 1000000;
        int with_bh = !queue_only && (alts || n == 1000000);
        double t_kq[MAX_REPS], t_bh[MAX_REPS], t_dh[MAX_REPS];
        gen_t g_kq = { seed * 2 + 1, 0, 0 }, g_bh = g_kq, g_dh = g_kq;

        kr__equeue_t q;
        kr__equeue_init(&q);
        bheap_t bh = { 0 };
        dheap_t dh = { 0 };
        kq_fill(&q, &g_kq, n, warm);
        if (with_bh) bh_fill(&bh, &g_bh, n, warm);
        if (alts) dh_fill(&dh, &g_dh, n, warm);
        for (int r = 0; r < reps; r++) {
            t_kq[r] = kq_hold(&q, &g_kq, holds);
            if (with_bh) t_bh[r] = bh_hold(&bh, &g_bh, holds);
            if (alts) t_dh[r] = dh_hold(&dh, &g_dh, holds);
        }
        if ((with_bh && g_bh.sum != g_kq.sum) || (alts && g_dh.sum != g_kq.sum)) {
            fprintf(stderr, "bench_hold: the queues popped different sequences at N = %zu\n", n);
            return 1;
        }
        char name[64];
        double kq_med = median(t_kq, reps);
        snprintf(name, sizeof name, "hold_%s", sizes[s].name);
        emit(name, kq_med, "ns/op", n, reps);
        if (with_bh) {
            double bh_med = median(t_bh, reps);
            snprintf(name, sizeof name, "binary_heap_%s", sizes[s].name);
            emit(name, bh_med, "ns/op", n, reps);
            if (n == 1000000) emit("speedup_1e6", bh_med / kq_med, "x", n, reps);
        }
        if (alts) {
            snprintf(name, sizeof name, "alt_4ary_heap_%s", sizes[s].name);
            emit(name, median(t_dh, reps), "ns/op", n, reps);
        }
        kr__equeue_fini(&q);
        free(bh.a);
        free(dh.base);
    }
    return 0;
}
