/* phold_bare: a bare sequential PHOLD, the memory floor of issue 20
 * ("Cost as the model grows"). Nothing but the model and a queue: no ECS,
 * no event keys, no digests, no runtime; not linked with kairos.
 *
 * N LPs, each with `start` events at lookahead + Exp(mean - lookahead)
 * from time 0. An event at an LP schedules exactly one new event at
 * now + lookahead + Exp(mean - lookahead); with probability `remote` its
 * target is an LP drawn uniformly among all N, otherwise the same LP: the
 * draws of models/phold/phold.c with one simulator (in one process the
 * remote draw only moves the event to a random LP). Each LP keeps a count
 * of its events, so the target LP is touched as in kairos. Times are
 * doubles (kairos rounds delays up to whole ticks). Events with a time
 * below the end time run; the run stops at the first event at or past it.
 *
 * Two queues, chosen with --queue:
 *  - calendar: Brown's calendar queue (1988). Buckets of one width, each a
 *    list sorted by time, the bucket of a time t being floor(t / width)
 *    modulo the bucket count. The bucket count doubles when the
 *    population exceeds it and halves when it falls below a quarter of
 *    it; the width follows the events' spread at each resize, about one
 *    event to a bucket at the head. Events are 16-byte nodes of one pool
 *    linked by 32-bit indices (a free list), buckets 4-byte heads: 20
 *    bytes an event at PHOLD's constant population. A dequeue reads the
 *    current bucket's head; an enqueue reads one bucket head and walks a
 *    list of about one node. (Tried on this machine, 2026-12-02: two
 *    events a bucket and a bucket count of half the population ran 10-25 %
 *    slower at 2^18 LPs.)
 *  - heap4: an implicit 4-ary min-heap of 16-byte entries (time, LP).
 * Both pop an event and push its successor (no replace-top shortcut).
 *
 * The random numbers come from a splitmix64 sequence written here (a
 * Weyl counter and a 64-bit mixer); uniforms take its top 53 bits.
 *
 * Prints one JSON line:
 *   {"bench":"phold_bare","queue":"calendar"|"heap4","lps":N,"events":E,
 *    "seconds":S,"events_per_second":R,"bytes_per_pending_event":B,
 *    "peak_rss_bytes":P, ...}
 * S times the event loop only (setup excluded, as kairos's wall_seconds);
 * P is the peak resident memory (VmHWM), B that over the pending events
 * (lps x start), as
 * bench/bench_phold_scale.py counts kairos; queue_bytes_per_pending_event
 * is what the queue and the LP counts allocate, over the same.
 *
 *   phold_bare [--queue calendar|heap4] [--lps N] [--start 16] [--end T]
 *              [--remote 0.25] [--lookahead 0.1] [--mean 1] [--seed 1]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, when built alone (meson defines it) */
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ---- random numbers ---- */

typedef struct { uint64_t s; } rng_t;

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* in [0, 1) */
static inline double rng_uniform(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- the model's draws ---- */

static double loop_seconds;     /* wall time of the last event loop (setup excluded) */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double lookahead, exp_mean, remote;
    uint32_t lps;
    rng_t rng;
} model_t;

static inline double draw_delay(model_t *m)
{
    return m->lookahead - m->exp_mean * log1p(-rng_uniform(&m->rng));
}

static inline uint32_t draw_target(model_t *m, uint32_t lp)
{
    if (m->remote > 0 && rng_uniform(&m->rng) < m->remote) {
        uint32_t g = (uint32_t)(rng_uniform(&m->rng) * (double)m->lps);
        return g < m->lps ? g : m->lps - 1;
    }
    return lp;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "phold_bare: out of memory (%zu bytes)\n", n); exit(1); }
    return p;
}

/* ---- calendar queue ---- */

#define NIL UINT32_MAX

typedef struct {
    double t;
    uint32_t lp, next;          /* next node in its bucket, or in the free list */
} node_t;

typedef struct {
    node_t *node;               /* the pool */
    uint32_t cap, free;         /* pool size, free list */
    uint32_t *head;             /* per bucket: first node, NIL if empty */
    uint64_t nb, mask;          /* bucket count (a power of two), nb - 1 */
    double inv_width;           /* 1 / bucket width */
    uint64_t cur;               /* the current virtual bucket: floor(t / width) of the dequeue point */
    uint64_t count;
    size_t peak_bytes;          /* largest pool + bucket array held at once */
} calq_t;

static inline uint64_t vbucket(const calq_t *q, double t) { return (uint64_t)(t * q->inv_width); }

/* Links node i into its bucket, in time order (after equal times). */
static inline void cq_link(calq_t *q, uint32_t i)
{
    node_t *n = q->node;
    double t = n[i].t;
    uint32_t *p = &q->head[vbucket(q, t) & q->mask];
    while (*p != NIL && n[*p].t <= t) p = &n[*p].next;
    n[i].next = *p;
    *p = i;
}

static void cq_note_bytes(calq_t *q)
{
    size_t b = (size_t)q->cap * sizeof(node_t) + (size_t)q->nb * sizeof(uint32_t);
    if (b > q->peak_bytes) q->peak_bytes = b;
}

/* Rebuilds with nb buckets and a width from the events' spread: the mean
 * time above the earliest over the count (about one event to a bucket
 * near the head for PHOLD's exponential-like spread). */
static void cq_resize(calq_t *q, uint64_t nb)
{
    uint32_t *old = q->head;
    uint64_t old_nb = q->nb;
    double lo = INFINITY, sum = 0;
    for (uint64_t b = 0; b < old_nb; b++)
        for (uint32_t i = old[b]; i != NIL; i = q->node[i].next) {
            if (q->node[i].t < lo) lo = q->node[i].t;
            sum += q->node[i].t;
        }
    double width = 1.0;
    if (q->count > 1) {
        width = (sum / (double)q->count - lo) / (double)q->count;
        if (!(width > 0)) width = 1.0;
    }
    q->nb = nb;
    q->mask = nb - 1;
    q->head = xmalloc(nb * sizeof(uint32_t));
    for (uint64_t b = 0; b < nb; b++) q->head[b] = NIL;
    q->inv_width = 1.0 / width;
    q->cur = q->count ? vbucket(q, lo) : 0;
    for (uint64_t b = 0; b < old_nb; b++)
        for (uint32_t i = old[b], next; i != NIL; i = next) {
            next = q->node[i].next;
            cq_link(q, i);
        }
    free(old);
    cq_note_bytes(q);
}

static void cq_init(calq_t *q)
{
    memset(q, 0, sizeof *q);
    q->free = NIL;
    q->nb = 2;
    q->mask = 1;
    q->head = xmalloc(2 * sizeof(uint32_t));
    q->head[0] = q->head[1] = NIL;
    q->inv_width = 1.0;
}

static uint32_t cq_alloc(calq_t *q)
{
    if (q->free == NIL) {
        uint32_t cap = q->cap ? q->cap * 2 : 1024;
        node_t *n = realloc(q->node, (size_t)cap * sizeof(node_t));
        if (!n) { fprintf(stderr, "phold_bare: out of memory\n"); exit(1); }
        q->node = n;
        for (uint32_t i = cap; i-- > q->cap;) { n[i].next = q->free; q->free = i; }
        q->cap = cap;
        cq_note_bytes(q);
    }
    uint32_t i = q->free;
    q->free = q->node[i].next;
    return i;
}

/* Enqueues node i (its time and LP set). */
static inline void cq_push(calq_t *q, uint32_t i)
{
    if (q->count == 0 || vbucket(q, q->node[i].t) < q->cur) q->cur = vbucket(q, q->node[i].t);
    cq_link(q, i);
    if (++q->count > q->nb) cq_resize(q, q->nb * 2);
}

/* Dequeues the earliest node; NIL if empty. The node stays allocated (the
 * caller reuses it for the successor, PHOLD's constant population). */
static inline uint32_t cq_pop(calq_t *q)
{
    if (q->count == 0) return NIL;
    node_t *n = q->node;
    for (uint64_t k = 0; k < q->nb; k++, q->cur++) {
        uint32_t *h = &q->head[q->cur & q->mask];
        if (*h != NIL && vbucket(q, n[*h].t) <= q->cur) {
            uint32_t i = *h;
            *h = n[i].next;
            if (--q->count < q->nb / 4 && q->nb > 2) cq_resize(q, q->nb / 2);
            return i;
        }
    }
    /* a whole year without an event in it: jump to the earliest head */
    uint32_t best = NIL;
    for (uint64_t b = 0; b < q->nb; b++)
        if (q->head[b] != NIL && (best == NIL || n[q->head[b]].t < n[best].t)) best = q->head[b];
    q->cur = vbucket(q, n[best].t);
    uint32_t *h = &q->head[q->cur & q->mask];
    *h = n[best].next;
    if (--q->count < q->nb / 4 && q->nb > 2) cq_resize(q, q->nb / 2);
    return best;
}

static uint64_t run_calendar(model_t *m, uint32_t start, double end, uint32_t *lp_events, size_t *bytes)
{
    calq_t q;
    cq_init(&q);
    for (uint32_t lp = 0; lp < m->lps; lp++)
        for (uint32_t k = 0; k < start; k++) {
            uint32_t i = cq_alloc(&q);
            q.node[i].t = draw_delay(m);
            q.node[i].lp = lp;
            cq_push(&q, i);
        }
    uint64_t events = 0;
    double t0 = now_seconds();
    for (;;) {
        uint32_t i = cq_pop(&q);
        if (i == NIL) break;
        node_t *e = &q.node[i];
        double now = e->t;
        if (now >= end) break;
        lp_events[e->lp]++;
        events++;
        e->lp = draw_target(m, e->lp);
        e->t = now + draw_delay(m);
        cq_push(&q, i);
    }
    loop_seconds = now_seconds() - t0;
    *bytes = q.peak_bytes;
    free(q.node);
    free(q.head);
    return events;
}

/* ---- 4-ary heap ---- */

typedef struct {
    double t;
    uint32_t lp, pad;
} entry_t;

typedef struct {
    entry_t *e;
    size_t n, cap;
} heap4_t;

static inline void h4_push(heap4_t *h, entry_t x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        entry_t *e = realloc(h->e, h->cap * sizeof(entry_t));
        if (!e) { fprintf(stderr, "phold_bare: out of memory\n"); exit(1); }
        h->e = e;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 4;
        if (h->e[p].t <= x.t) break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = x;
}

static inline entry_t h4_pop(heap4_t *h)
{
    entry_t top = h->e[0], x = h->e[--h->n];
    size_t n = h->n, i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n) break;
        size_t best = c, last = c + 4 < n ? c + 4 : n;
        for (size_t j = c + 1; j < last; j++)
            if (h->e[j].t < h->e[best].t) best = j;
        if (x.t <= h->e[best].t) break;
        h->e[i] = h->e[best];
        i = best;
    }
    if (n) h->e[i] = x;
    return top;
}

static uint64_t run_heap4(model_t *m, uint32_t start, double end, uint32_t *lp_events, size_t *bytes)
{
    heap4_t h = { 0 };
    for (uint32_t lp = 0; lp < m->lps; lp++)
        for (uint32_t k = 0; k < start; k++) {
            double t = draw_delay(m);
            h4_push(&h, (entry_t){ .t = t, .lp = lp });
        }
    uint64_t events = 0;
    double t0 = now_seconds();
    while (h.n) {
        entry_t e = h4_pop(&h);
        if (e.t >= end) break;
        lp_events[e.lp]++;
        events++;
        uint32_t lp = draw_target(m, e.lp); /* the target first, then the delay: the calendar's order */
        h4_push(&h, (entry_t){ .t = e.t + draw_delay(m), .lp = lp });
    }
    loop_seconds = now_seconds() - t0;
    *bytes = h.cap * sizeof(entry_t);
    free(h.e);
    return events;
}

/* ---- driver ---- */

/* This process's peak resident memory: VmHWM, the high-water mark of its
 * own address space. (ru_maxrss would also count the parent's pages when it
 * was started by vfork, as Python's subprocess does: 16 MB here.) */
static double peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atof(line + 6);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = (double)ru.ru_maxrss;
    }
    return kb * 1024.0;
}

static void usage(void)
{
    fprintf(stderr, "usage: phold_bare [--queue calendar|heap4] [--lps N] [--start 16] [--end T] [--remote 0.25]\n"
                    "                  [--lookahead 0.1] [--mean 1] [--seed 1]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *queue = "calendar";
    long long lps = 1024, start = 16;
    double end = 100, remote = 0.25, lookahead = 0.1, mean = 1.0;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        if (!strcmp(a, "--queue")) queue = v;
        else if (!strcmp(a, "--lps")) lps = atoll(v);
        else if (!strcmp(a, "--start")) start = atoll(v);
        else if (!strcmp(a, "--end")) end = atof(v);
        else if (!strcmp(a, "--remote")) remote = atof(v);
        else if (!strcmp(a, "--lookahead")) lookahead = atof(v);
        else if (!strcmp(a, "--mean")) mean = atof(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else usage();
        i++;
    }
    int cal = !strcmp(queue, "calendar");
    if ((!cal && strcmp(queue, "heap4")) || lps < 1 || start < 1 || lps * start >= (long long)NIL ||
        lookahead < 0 || lookahead > mean || remote < 0 || remote > 1)
        usage();
    model_t m = { .lookahead = lookahead, .exp_mean = mean - lookahead, .remote = remote, .lps = (uint32_t)lps,
                  .rng = { seed * 0x2545f4914f6cdd1dull } };
    uint32_t *lp_events = calloc((size_t)lps, sizeof(uint32_t));
    if (!lp_events) usage();
    size_t qbytes = 0;
    uint64_t events = cal ? run_calendar(&m, (uint32_t)start, end, lp_events, &qbytes)
                          : run_heap4(&m, (uint32_t)start, end, lp_events, &qbytes);
    double secs = loop_seconds;
    uint64_t check = 0;
    for (long long i = 0; i < lps; i++) check += lp_events[i];
    free(lp_events);
    double pending = (double)lps * (double)start, peak = peak_rss();
    printf("{\"bench\":\"phold_bare\",\"queue\":\"%s\",\"lps\":%lld,\"events\":%llu,\"seconds\":%.6f,"
           "\"events_per_second\":%.1f,\"bytes_per_pending_event\":%.2f,\"peak_rss_bytes\":%.0f,"
           "\"queue_bytes_per_pending_event\":%.2f,\"start_events\":%lld,\"end_time\":%g,\"remote\":%g,"
           "\"lookahead\":%g,\"mean\":%g,\"seed\":%llu,\"lp_event_sum\":%llu}\n",
           queue, lps, (unsigned long long)events, secs, secs > 0 ? (double)events / secs : 0.0, peak / pending, peak,
           (double)(qbytes + (size_t)lps * sizeof(uint32_t)) / pending, start, end, remote, lookahead, mean, seed,
           (unsigned long long)check);
    return check == events ? 0 : 1;
}
