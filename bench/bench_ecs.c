#define _GNU_SOURCE
/* ECS benchmark (issue 2): prints one JSON line per figure (bench/README.md,
 * "ECS (issue 2)").
 *
 *   build/bench/bench_ecs [--n ENTITIES] [--reps R] [--seed S]
 *
 * Every figure is the median of R repetitions. view_pass and plain_loop run
 * in the same process on the same data size, so their ratio is meaningful
 * on a noisy machine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "kairos/kairos.h"
#include "bench_util.h"

typedef struct { float x, y; } vec2_t;

static double now_ns(void) { return bench_clock_ns(CLOCK_MONOTONIC); }


static uint64_t rng_state;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1.0p-53; }

/* k distinct entries of ids[0..n) in random order (a partial Fisher-Yates
 * shuffle of ids itself, which is only a list of live entities). */
static void pick_distinct(kr_entity_t *out, kr_entity_t *ids, int n, int k)
{
    for (int i = 0; i < k; i++) {
        int j = i + (int)(rng_next() % (uint64_t)(n - i));
        kr_entity_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
        out[i] = ids[i];
    }
}

static void emit(const char *name, double value, const char *unit, int n, int reps)
{
    printf("{\"bench\": \"ecs\", \"case\": \"%s\", \"value\": %.4g, \"unit\": \"%s\", \"n\": %d, \"reps\": %d}\n",
           name, value, unit, n, reps);
    fflush(stdout);
}

typedef struct {
    kr_registry_t *reg;
    kr_component_t pos, vel, extra, extra_sparse;
} types_t;

static types_t make_types(void)
{
    types_t t;
    t.reg = kr_registry_create();
    t.pos = kr_component_register(t.reg, &(kr_component_desc_t){ .name = "Position", .size = sizeof(vec2_t) });
    t.vel = kr_component_register(t.reg, &(kr_component_desc_t){ .name = "Velocity", .size = sizeof(vec2_t) });
    t.extra = kr_component_register(t.reg, &(kr_component_desc_t){ .name = "Health", .size = sizeof(float) });
    t.extra_sparse = kr_component_register(t.reg, &(kr_component_desc_t){
        .name = "HealthSparse", .size = sizeof(float), .storage = KR_STORAGE_SPARSE });
    if (!t.pos || !t.vel || !t.extra || !t.extra_sparse) {
        fprintf(stderr, "bench_ecs: registration failed: %s\n", kr_last_error());
        exit(1);
    }
    return t;
}

/* Memory for the plain loops and the floors, on the same pages as the
 * world's own arrays (base/memory.c): 2 MiB pages where the kernel gives
 * them on request. A floor on 4 KiB pages pays TLB misses the world does
 * not, and how many depended on where malloc happened to place it (the
 * add/remove floor measured 56-58 ns or 46-51 depending on what the
 * benchmark had freed before it). */
static void *huge_alloc(size_t bytes)
{
    void *p = NULL;
    size_t huge = (size_t)1 << 21;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
        fprintf(stderr, "bench_ecs: out of memory\n");
        exit(1);
    }
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    return p;
}

static vec2_t *plain_array(size_t n) { return huge_alloc(n * sizeof(vec2_t)); }

static void plain_loop(vec2_t *restrict p, const vec2_t *restrict v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i].x += v[i].x;
        p[i].y += v[i].y;
    }
}

/* pos += vel over every chunk, with the very same inner loop as the plain
 * reference; returns nothing, the arrays keep the result. */
static void view_pass(kr_view_t *view)
{
    kr_view_chunk_t ch;
    while (kr_view_next_chunk(view, &ch)) plain_loop(ch.columns[0], ch.columns[1], ch.count);
}

static double time_view_pass(kr_view_t *view, int passes, int n)
{
    double t[64];
    for (int k = 0; k < passes; k++) {
        double t0 = now_ns();
        view_pass(view);
        t[k] = (now_ns() - t0) / n;
    }
    return median(t, passes);
}

typedef struct {
    double insert[64], move[64], move_n[64], query[64], radius[64], destroy[64], destroy_n[64];
} spatial_times_t;

/* n entities on a 1000 x 1000 area with cells of 1: insert, move each by a
 * step in [-0.5, 0.5)^2 (about 44% change cell), cell and radius queries,
 * then destroy `churn` of them. With `grid` the world declares its bounds,
 * so cells live in a dense grid instead of the hash map. */
static void spatial_bench(const types_t *ty, int n, int churn, bool grid, spatial_times_t *out, int r)
{
    const double side = 1000.0;
    kr_world_desc_t desc = { .registry = ty->reg, .spatial_cell_size = 1.0 };
    if (grid) {
        desc.spatial_bounds[2] = side;
        desc.spatial_bounds[3] = side;
    }
    kr_world_t *w = kr_world_create(&desc);
    kr_component_t both[2] = { ty->pos, ty->vel };
    kr_entity_t *ids = malloc((size_t)n * sizeof *ids), *pick = malloc((size_t)churn * sizeof *pick);
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *x0 = malloc((size_t)n * sizeof *x0), *y0 = malloc((size_t)n * sizeof *y0);
    static kr_entity_t qbuf[4096];
    for (int i = 0; i < n; i++) {
        ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        x[i] = rng_unit() * side;
        y[i] = rng_unit() * side;
    }
    double t0 = now_ns();
    for (int i = 0; i < n; i++) kr_spatial_insert(w, ids[i], x[i], y[i]);
    out->insert[r] = (now_ns() - t0) / n;
    memcpy(x0, x, (size_t)n * sizeof *x);
    memcpy(y0, y, (size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) {
        double nx = x[i] + (rng_unit() - 0.5), ny = y[i] + (rng_unit() - 0.5);
        x[i] = nx < 0 ? nx + side : nx >= side ? nx - side : nx;
        y[i] = ny < 0 ? ny + side : ny >= side ? ny - side : ny;
    }
    int failed = 0;
    t0 = now_ns();
    for (int i = 0; i < n; i++) failed += kr_spatial_move(w, ids[i], x[i], y[i]) != KR_OK;
    out->move[r] = (now_ns() - t0) / n;
    /* The same moves, all in one kr_spatial_move_n, on a twin world made
     * and filled the same way (so its cell table is in the same state). */
    kr_world_t *twin = kr_world_create(&desc);
    for (int i = 0; i < n; i++) {
        kr_entity_t t = kr_entity_create_desc(twin, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        failed += t != ids[i] || kr_spatial_insert(twin, t, x0[i], y0[i]) != KR_OK;
    }
    size_t moved = 0;
    t0 = now_ns();
    failed += kr_spatial_move_n(twin, (size_t)n, ids, x, y, &moved) != KR_OK || moved != (size_t)n;
    out->move_n[r] = (now_ns() - t0) / n;
    kr_world_destroy(twin);
    const int queries = 100000;
    size_t found = 0;
    t0 = now_ns();
    for (int q = 0; q < queries; q++) {
        size_t cnt;
        kr_cell_t c = { (int32_t)(rng_next() % 1000), (int32_t)(rng_next() % 1000) };
        const kr_entity_t *in = kr_spatial_cell_entities(w, c, &cnt);
        found += in ? cnt : 0;
    }
    out->query[r] = (now_ns() - t0) / queries;
    t0 = now_ns();
    for (int q = 0; q < queries; q++)
        found += kr_spatial_query_radius(w, rng_unit() * side, rng_unit() * side, 2.0, qbuf, 4096);
    out->radius[r] = (now_ns() - t0) / queries;
    pick_distinct(pick, ids, n, churn);
    t0 = now_ns();
    for (int i = 0; i < churn; i++) failed += kr_entity_destroy(w, pick[i]) != KR_OK;
    out->destroy[r] = (now_ns() - t0) / churn;
    /* As many others, in one kr_entity_destroy_n. */
    pick_distinct(pick, ids + churn, n - churn, churn);
    size_t gone = 0;
    t0 = now_ns();
    failed += kr_entity_destroy_n(w, (size_t)churn, pick, &gone) != KR_OK || gone != (size_t)churn;
    out->destroy_n[r] = (now_ns() - t0) / churn;
    if (failed || !found || kr_spatial_count(w) != (size_t)(n - 2 * churn)) {
        fprintf(stderr, "bench_ecs: spatial case went wrong (%d failures)\n", failed);
        exit(1);
    }
    kr_world_destroy(w);
    free(ids);
    free(pick);
    free(x);
    free(y);
    free(x0);
    free(y0);
}

/* The floor under spatial_move_grid: the same moves (same positions, same
 * 1000 x 1000 grid of 64-byte cells holding up to six members inline) done
 * on plain arrays by a loop with nothing else to do. Both are dominated by
 * the random access to the old and the new cell; the ratio shows what the
 * API costs on top. */
typedef struct { uint32_t count, unused; uint64_t members[7]; } floor_cell_t;
typedef struct { double x, y; uint32_t cell, slot; } floor_entry_t;

/* With `ahead`, the loop also loads the old and the new cell of move
 * i + FLOOR_AHEAD first, as kr_spatial_move_n does: the floor under the
 * batched moves. Inline in both callers, so that `ahead` is a constant. */
#define FLOOR_AHEAD 16
__attribute__((always_inline)) static inline double spatial_move_floor_run(int n, bool ahead)
{
    const int side = 1000;
    floor_cell_t *cells = huge_alloc((size_t)side * side * sizeof *cells);
    floor_entry_t *en = huge_alloc((size_t)n * sizeof *en);
    double *x = huge_alloc((size_t)n * sizeof *x), *y = huge_alloc((size_t)n * sizeof *y);
    memset(cells, 0, (size_t)side * side * sizeof *cells);
    for (int i = 0; i < n; i++) {
        double px = rng_unit() * side, py = rng_unit() * side;
        uint32_t c = (uint32_t)py * (uint32_t)side + (uint32_t)px;
        floor_cell_t *cc = &cells[c];
        if (cc->count < 7) cc->members[cc->count] = (uint64_t)i;
        en[i] = (floor_entry_t){ px, py, c, cc->count++ };
        double nx = px + (rng_unit() - 0.5), ny = py + (rng_unit() - 0.5);
        x[i] = nx < 0 ? nx + side : nx >= side ? nx - side : nx;
        y[i] = ny < 0 ? ny + side : ny >= side ? ny - side : ny;
    }
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        if (ahead && i + FLOOR_AHEAD < n) {
            int j = i + FLOOR_AHEAD;
            uint32_t cj = (uint32_t)y[j] * (uint32_t)side + (uint32_t)x[j];
            if (cj != en[j].cell) {
                __builtin_prefetch(&cells[cj], 1);
                __builtin_prefetch(&cells[en[j].cell], 1);
            }
        }
        floor_entry_t *e = &en[i];
        uint32_t c = (uint32_t)y[i] * (uint32_t)side + (uint32_t)x[i];
        if (c != e->cell) {
            floor_cell_t *o = &cells[e->cell];
            uint32_t last = --o->count;
            if (e->slot != last && last < 7) {
                uint64_t m = o->members[last];
                o->members[e->slot] = m;
                en[m].slot = e->slot;
            }
            floor_cell_t *d = &cells[c];
            if (d->count < 7) d->members[d->count] = (uint64_t)i;
            e->slot = d->count++;
            e->cell = c;
        }
        e->x = x[i];
        e->y = y[i];
    }
    double t = (now_ns() - t0) / n;
    free(cells);
    free(en);
    free(x);
    free(y);
    return t;
}

static double spatial_move_floor(int n) { return spatial_move_floor_run(n, false); }

/* The same moves with each in a function of its own, called once a move
 * (see add_remove_floor_call). */
typedef struct floor_grid {
    floor_cell_t *cells;
    floor_entry_t *en;
} floor_grid_t;

__attribute__((noinline)) static void floor_move_one(floor_grid_t *g, int i, double x, double y)
{
    floor_entry_t *e = &g->en[i];
    uint32_t c = (uint32_t)y * 1000u + (uint32_t)x;
    if (c != e->cell) {
        floor_cell_t *o = &g->cells[e->cell];
        uint32_t last = --o->count;
        if (e->slot != last && last < 7) {
            uint64_t m = o->members[last];
            o->members[e->slot] = m;
            g->en[m].slot = e->slot;
        }
        floor_cell_t *d = &g->cells[c];
        if (d->count < 7) d->members[d->count] = (uint64_t)i;
        e->slot = d->count++;
        e->cell = c;
    }
    e->x = x;
    e->y = y;
}

static double spatial_move_floor_call(int n)
{
    const int side = 1000;
    floor_grid_t g = { huge_alloc((size_t)side * side * sizeof *g.cells), huge_alloc((size_t)n * sizeof *g.en) };
    double *x = huge_alloc((size_t)n * sizeof *x), *y = huge_alloc((size_t)n * sizeof *y);
    memset(g.cells, 0, (size_t)side * side * sizeof *g.cells);
    for (int i = 0; i < n; i++) {
        double px = rng_unit() * side, py = rng_unit() * side;
        uint32_t c = (uint32_t)py * (uint32_t)side + (uint32_t)px;
        floor_cell_t *cc = &g.cells[c];
        if (cc->count < 7) cc->members[cc->count] = (uint64_t)i;
        g.en[i] = (floor_entry_t){ px, py, c, cc->count++ };
        double nx = px + (rng_unit() - 0.5), ny = py + (rng_unit() - 0.5);
        x[i] = nx < 0 ? nx + side : nx >= side ? nx - side : nx;
        y[i] = ny < 0 ? ny + side : ny >= side ? ny - side : ny;
    }
    double t0 = now_ns();
    for (int i = 0; i < n; i++) floor_move_one(&g, i, x[i], y[i]);
    double t = (now_ns() - t0) / n;
    free(g.cells);
    free(g.en);
    free(x);
    free(y);
    return t;
}
static double spatial_move_floor_ahead(int n) { return spatial_move_floor_run(n, true); }

/* The raw arrays under the add_remove and destroy floors: records (as the
 * world's), one table of n rows (entity, Position, Velocity) and `churn`
 * distinct random entities to act on, in perm[0..churn). */
typedef struct { uint32_t generation, table, row, flags; } floor_rec_t;
typedef struct {
    floor_rec_t *rec;
    uint64_t *ea;
    vec2_t *pa, *va;
    uint32_t *perm;
} floor_table_t;

static floor_table_t floor_table(int n, int churn)
{
    floor_table_t f = {
        huge_alloc((size_t)n * sizeof *f.rec), huge_alloc((size_t)n * sizeof *f.ea),
        huge_alloc((size_t)n * sizeof *f.pa), huge_alloc((size_t)n * sizeof *f.va),
        huge_alloc((size_t)n * sizeof *f.perm),
    };
    for (int i = 0; i < n; i++) {
        f.rec[i] = (floor_rec_t){ 1, 0, (uint32_t)i, 1 };
        f.ea[i] = (uint64_t)i;
        f.pa[i] = (vec2_t){ (float)i, 1 };
        f.va[i] = (vec2_t){ 1, 1 };
        f.perm[i] = (uint32_t)i;
    }
    for (int i = 0; i < churn; i++) {
        int j = i + (int)(rng_next() % (uint64_t)(n - i));
        uint32_t t = f.perm[i];
        f.perm[i] = f.perm[j];
        f.perm[j] = t;
    }
    return f;
}

static void floor_table_free(floor_table_t *f)
{
    free(f->rec); free(f->ea); free(f->pa); free(f->va); free(f->perm);
}

/* The floor under add_remove: the memory traffic of moving random rows
 * between two tables (read the record, copy the row out, fill the gap with
 * the last row, fix the moved entity's record) on plain arrays, with no API
 * and no checks. Per row moved. */
/* With `ahead`, the loop also loads the record of change i +
 * 2 * FLOOR_AHEAD and the row of change i + FLOOR_AHEAD first, the two
 * stages of kr_component_add_n (ecs/batch.c, which loads half as far
 * ahead; 4 to 16 changes measured alike): the floor under the batched
 * changes. */
__attribute__((always_inline)) static inline double add_remove_floor_run(int n, int churn, bool ahead)
{
    floor_table_t f = floor_table(n, churn);
    floor_rec_t *rec = f.rec;
    uint64_t *ea = f.ea, *eb = huge_alloc((size_t)n * sizeof *eb);
    vec2_t *pa = f.pa, *va = f.va;
    vec2_t *pb = plain_array((size_t)n), *vb = plain_array((size_t)n);
    float *hb = huge_alloc((size_t)n * sizeof *hb);
    uint32_t na = (uint32_t)n, nb = 0;
    double t0 = now_ns();
    for (int i = 0; i < churn; i++) {
        if (ahead && i + 2 * FLOOR_AHEAD < churn) __builtin_prefetch(&rec[f.perm[i + 2 * FLOOR_AHEAD]], 1);
        if (ahead && i + FLOOR_AHEAD < churn) {
            uint32_t rj = rec[f.perm[i + FLOOR_AHEAD]].row;
            __builtin_prefetch(&ea[rj], 1);
            __builtin_prefetch(&pa[rj], 1);
            __builtin_prefetch(&va[rj], 1);
        }
        uint32_t e = f.perm[i], row = rec[e].row, d = nb++;
        eb[d] = e;
        pb[d] = pa[row];
        vb[d] = va[row];
        hb[d] = 0;
        rec[e].table = 1;
        rec[e].row = d;
        uint32_t last = --na;
        if (row != last) {
            uint64_t m = ea[last];
            ea[row] = m;
            pa[row] = pa[last];
            va[row] = va[last];
            rec[m].row = row;
        }
    }
    double t = (now_ns() - t0) / churn;
    floor_table_free(&f);
    free(eb); free(pb); free(vb); free(hb);
    return t;
}

static double add_remove_floor(int n, int churn) { return add_remove_floor_run(n, churn, false); }

/* The same floor with each row move in a function of its own, called once
 * a row, its arrays and counts reached through a pointer as an API's
 * state is: the floor of anything called one row at a time. The loop
 * above overlaps the cache misses of many moves, which a call and the
 * state it reads back from memory leave less room for (bench/README.md,
 * "Why single ECS calls stay above their floor"). */
typedef struct floor_move {
    floor_rec_t *rec;
    uint64_t *ea, *eb;
    vec2_t *pa, *va, *pb, *vb;
    float *hb;
    uint32_t na, nb;
} floor_move_t;

__attribute__((noinline)) static void floor_move_row(floor_move_t *m, uint32_t e)
{
    uint32_t row = m->rec[e].row, d = m->nb++;
    m->eb[d] = e;
    m->pb[d] = m->pa[row];
    m->vb[d] = m->va[row];
    m->hb[d] = 0;
    m->rec[e].table = 1;
    m->rec[e].row = d;
    uint32_t last = --m->na;
    if (row != last) {
        uint64_t moved = m->ea[last];
        m->ea[row] = moved;
        m->pa[row] = m->pa[last];
        m->va[row] = m->va[last];
        m->rec[moved].row = row;
    }
}

static double add_remove_floor_call(int n, int churn)
{
    floor_table_t f = floor_table(n, churn);
    floor_move_t m = { f.rec, f.ea, huge_alloc((size_t)n * sizeof *m.eb), f.pa, f.va, plain_array((size_t)n),
                       plain_array((size_t)n), huge_alloc((size_t)n * sizeof *m.hb), (uint32_t)n, 0 };
    double t0 = now_ns();
    for (int i = 0; i < churn; i++) floor_move_row(&m, f.perm[i]);
    double t = (now_ns() - t0) / churn;
    free(m.eb); free(m.pb); free(m.vb); free(m.hb);
    floor_table_free(&f);
    return t;
}
static double add_remove_floor_ahead(int n, int churn) { return add_remove_floor_run(n, churn, true); }

/* The floor under destroy: on the same arrays, each random entity's row
 * is swap-removed (the last row fills it, the moved entity's record is
 * fixed) and its record put on a free list, with no API and no checks.
 * Per entity. */
static double destroy_floor(int n, int churn)
{
    floor_table_t f = floor_table(n, churn);
    floor_rec_t *rec = f.rec;
    uint32_t na = (uint32_t)n, free_head = UINT32_MAX;
    double t0 = now_ns();
    for (int i = 0; i < churn; i++) {
        uint32_t e = f.perm[i], row = rec[e].row, last = --na;
        if (row != last) {
            uint64_t m = f.ea[last];
            f.ea[row] = m;
            f.pa[row] = f.pa[last];
            f.va[row] = f.va[last];
            rec[m].row = row;
        }
        rec[e] = (floor_rec_t){ rec[e].generation + 1, UINT32_MAX, free_head, 0 };
        free_head = e;
    }
    double t = (now_ns() - t0) / churn;
    if (free_head == UINT32_MAX) t = 0; /* keeps the loop's result alive */
    floor_table_free(&f);
    return t;
}

/* A minimal sparse-set store (one pool per component: sparse index -> dense
 * slot), the other classic ECS layout. It exists only so that the benchmark
 * can weigh the two layouts on the same machine in the same run (docs/ecs.md,
 * "Storage"): views pay an indirection per entity, add/remove touch only
 * the one pool. */
typedef struct {
    uint32_t *sparse, *dense;
    vec2_t *data;
    uint32_t count;
} pool_t;

static void pool_init(pool_t *p, int n)
{
    p->sparse = malloc((size_t)n * sizeof *p->sparse);
    memset(p->sparse, 0xff, (size_t)n * sizeof *p->sparse);
    p->dense = malloc((size_t)n * sizeof *p->dense);
    p->data = malloc((size_t)n * sizeof *p->data);
    p->count = 0;
}

static void pool_add(pool_t *p, uint32_t e, vec2_t v)
{
    p->sparse[e] = p->count;
    p->dense[p->count] = e;
    p->data[p->count++] = v;
}

static void pool_remove(pool_t *p, uint32_t e)
{
    uint32_t j = p->sparse[e], last = --p->count;
    p->dense[j] = p->dense[last];
    p->data[j] = p->data[last];
    p->sparse[p->dense[j]] = j;
    p->sparse[e] = UINT32_MAX;
}

static void pool_free(pool_t *p) { free(p->sparse); free(p->dense); free(p->data); }

static void sparse_view_pass(pool_t *pos, const pool_t *vel)
{
    for (uint32_t i = 0; i < pos->count; i++) {
        uint32_t j = vel->sparse[pos->dense[i]];
        if (j == UINT32_MAX) continue;
        pos->data[i].x += vel->data[j].x;
        pos->data[i].y += vel->data[j].y;
    }
}

static void sparse_model(int n, int churn, int passes, double *view, double *addrem)
{
    pool_t pos, vel, extra;
    pool_init(&pos, n);
    pool_init(&vel, n);
    pool_init(&extra, n);
    for (int i = 0; i < n; i++) {
        pool_add(&pos, (uint32_t)i, (vec2_t){ (float)i, 1.0f });
        pool_add(&vel, (uint32_t)i, (vec2_t){ 0.5f, -0.25f });
    }
    double t[64];
    for (int k = 0; k < passes; k++) {
        double t0 = now_ns();
        sparse_view_pass(&pos, &vel);
        t[k] = (now_ns() - t0) / n;
    }
    *view = median(t, passes);
    uint32_t *pick = malloc((size_t)churn * sizeof *pick);
    for (int i = 0; i < churn; i++) pick[i] = (uint32_t)(rng_next() % (uint64_t)n);
    double t0 = now_ns();
    int ops = 0;
    for (int i = 0; i < churn; i++)
        if (extra.sparse[pick[i]] == UINT32_MAX) { pool_add(&extra, pick[i], (vec2_t){ 0, 0 }); ops++; }
    for (int i = 0; i < churn; i++)
        if (extra.sparse[pick[i]] != UINT32_MAX) { pool_remove(&extra, pick[i]); ops++; }
    *addrem = (now_ns() - t0) / ops;
    free(pick);
    pool_free(&pos);
    pool_free(&vel);
    pool_free(&extra);
}

int main(int argc, char **argv)
{
    int n = 1000000, reps = 5, churn = 100000;
    rng_state = 42;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng_state = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_ecs [--n ENTITIES] [--reps R] [--seed S]\n");
            return 2;
        }
    }
    if (n < 1000 || reps < 1 || reps > 64) {
        fprintf(stderr, "bench_ecs: --n must be >= 1000 and --reps in 1..64\n");
        return 2;
    }
    if (churn > n / 2) churn = n / 2;
    const int passes = 11;
    double sp_floor[64], sp_floor_ahead[64], sp_floor_call[64], addrem_floor[64], addrem_floor_ahead[64], addrem_floor_call[64], destroy_fl[64], addrem_sparse[64], create[64], create_add[64], view[64], plain[64], addrem[64], addrem_n[64], churned[64], destroy[64], destroy_n[64];
    double alt_view[64], alt_addrem[64];
    spatial_times_t sp[2];
    kr_entity_t *ids = malloc((size_t)n * sizeof *ids);
    kr_entity_t *pick = malloc((size_t)churn * sizeof *pick);
    /* The plain loop's arrays are allocated the way the ECS allocates its
     * columns (64-byte aligned, whole 2 MiB pages advised for huge pages),
     * so the ratio measures the view, not where the memory landed. */
    vec2_t *pa = plain_array((size_t)n), *va = plain_array((size_t)n);
    for (int r = 0; r < reps; r++) {
        types_t ty = make_types();
        kr_component_t both[2] = { ty.pos, ty.vel };

        /* create: one entity with both components, placed directly. */
        kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = ty.reg });
        double t0 = now_ns();
        for (int i = 0; i < n; i++)
            ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        create[r] = (now_ns() - t0) / n;
        for (int i = 0; i < n; i++) {
            vec2_t *p = kr_component_get(w, ids[i], ty.pos), *v = kr_component_get(w, ids[i], ty.vel);
            p->x = (float)i; p->y = 1.0f; v->x = 0.5f; v->y = -0.25f;
            pa[i] = *p; va[i] = *v;
        }

        /* create, then add each component: the one-by-one path. */
        kr_world_t *w2 = kr_world_create(&(kr_world_desc_t){ .registry = ty.reg });
        t0 = now_ns();
        for (int i = 0; i < n; i++) {
            kr_entity_t e = kr_entity_create(w2);
            kr_component_add(w2, e, ty.pos);
            kr_component_add(w2, e, ty.vel);
        }
        create_add[r] = (now_ns() - t0) / n;
        kr_world_destroy(w2);

        kr_view_t vw;
        kr_view_init(&vw, w, &(kr_view_desc_t){ .include = { ty.pos, ty.vel } });
        view_pass(&vw); /* warm */
        plain_loop(pa, va, (size_t)n);
        /* Alternate the two so that both see the same machine. */
        double tv[64], tp[64];
        for (int k = 0; k < passes; k++) {
            t0 = now_ns();
            view_pass(&vw);
            tv[k] = (now_ns() - t0) / n;
            t0 = now_ns();
            plain_loop(pa, va, (size_t)n);
            tp[k] = (now_ns() - t0) / n;
        }
        view[r] = median(tv, passes);
        plain[r] = median(tp, passes);

        /* add then remove a third component on distinct random entities. */
        pick_distinct(pick, ids, n, churn);
        t0 = now_ns();
        int ops = 0;
        for (int i = 0; i < churn; i++) ops += kr_component_add(w, pick[i], ty.extra) != NULL;
        for (int i = 0; i < churn; i++) ops += kr_component_remove(w, pick[i], ty.extra) == KR_OK;
        addrem[r] = (now_ns() - t0) / (2.0 * churn);
        if (ops != 2 * churn) {
            fprintf(stderr, "bench_ecs: only %d of %d add/remove operations succeeded\n", ops, 2 * churn);
            return 1;
        }
        churned[r] = time_view_pass(&vw, passes, n);

        /* The same churn with the third component in sparse storage. */
        t0 = now_ns();
        ops = 0;
        for (int i = 0; i < churn; i++) ops += kr_component_add(w, pick[i], ty.extra_sparse) != NULL;
        for (int i = 0; i < churn; i++) ops += kr_component_remove(w, pick[i], ty.extra_sparse) == KR_OK;
        addrem_sparse[r] = (now_ns() - t0) / (2.0 * churn);
        if (ops != 2 * churn) {
            fprintf(stderr, "bench_ecs: only %d of %d sparse add/remove operations succeeded\n", ops, 2 * churn);
            return 1;
        }

        /* The table churn again on other random entities, each half in one
         * call (after the churned view pass, which it would change). */
        pick_distinct(pick, ids, n, churn);
        t0 = now_ns();
        size_t added = 0, removed = 0;
        kr_component_add_n(w, (size_t)churn, pick, ty.extra, &added);
        kr_component_remove_n(w, (size_t)churn, pick, ty.extra, &removed);
        addrem_n[r] = (now_ns() - t0) / (2.0 * churn);
        if (added + removed != 2 * (size_t)churn) {
            fprintf(stderr, "bench_ecs: only %zu of %d batched add/remove operations succeeded\n", added + removed,
                    2 * churn);
            return 1;
        }

        /* destroy distinct random entities: rows, records and ids (not in the spatial hash). */
        int destroyed = 0;
        pick_distinct(pick, ids, n, churn);
        t0 = now_ns();
        for (int i = 0; i < churn; i++) destroyed += kr_entity_destroy(w, pick[i]) == KR_OK;
        destroy[r] = (now_ns() - t0) / destroyed;
        if (destroyed != churn) {
            fprintf(stderr, "bench_ecs: only %d of %d destroys succeeded\n", destroyed, churn);
            return 1;
        }
        /* As many others, in one kr_entity_destroy_n. */
        pick_distinct(pick, ids + churn, n - churn, churn);
        size_t gone = 0;
        t0 = now_ns();
        kr_entity_destroy_n(w, (size_t)churn, pick, &gone);
        destroy_n[r] = (now_ns() - t0) / churn;
        if (gone != (size_t)churn) {
            fprintf(stderr, "bench_ecs: only %zu of %d batched destroys succeeded\n", gone, churn);
            return 1;
        }

        spatial_bench(&ty, n, churn, false, &sp[0], r);
        spatial_bench(&ty, n, churn, true, &sp[1], r);
        sp_floor[r] = spatial_move_floor(n);
        sp_floor_ahead[r] = spatial_move_floor_ahead(n);
        sp_floor_call[r] = spatial_move_floor_call(n);
        addrem_floor[r] = add_remove_floor(n, churn);
        addrem_floor_ahead[r] = add_remove_floor_ahead(n, churn);
        addrem_floor_call[r] = add_remove_floor_call(n, churn);
        destroy_fl[r] = destroy_floor(n, churn);

        sparse_model(n, churn, passes, &alt_view[r], &alt_addrem[r]);

        kr_view_fini(&vw);
        kr_world_destroy(w);
        kr_registry_destroy(ty.reg);
    }
    double v = median(view, reps), p = median(plain, reps), c = median(churned, reps);
    emit("create", median(create, reps), "ns/entity", n, reps);
    emit("create_then_add", median(create_add, reps), "ns/entity", n, reps);
    emit("view_pass", v, "ns/entity", n, reps);
    emit("plain_loop", p, "ns/entity", n, reps);
    emit("view_pass_ratio", v / p, "x plain_loop", n, reps);
    emit("add_remove", median(addrem, reps), "ns/op", churn, reps);
    emit("add_remove_plain_arrays", median(addrem_floor, reps), "ns/op", churn, reps);
    emit("add_remove_n", median(addrem_n, reps), "ns/op", churn, reps);
    emit("add_remove_plain_arrays_ahead", median(addrem_floor_ahead, reps), "ns/op", churn, reps);
    emit("add_remove_plain_arrays_call", median(addrem_floor_call, reps), "ns/op", churn, reps);
    emit("add_remove_sparse", median(addrem_sparse, reps), "ns/op", churn, reps);
    emit("view_pass_churned", c, "ns/entity", n, reps);
    emit("view_pass_churned_ratio", c / p, "x plain_loop", n, reps);
    emit("destroy", median(destroy, reps), "ns/op", churn, reps);
    emit("destroy_n", median(destroy_n, reps), "ns/op", churn, reps);
    emit("destroy_plain_arrays", median(destroy_fl, reps), "ns/op", churn, reps);
    /* Issue 20's targets are against the add/remove floor; the ratios are
     * medians of the per-repetition ratios, each taken within one
     * repetition, so that a slow moment of the machine cancels out. */
    double ar_ratio[64], ar_call[64], arn_ratio[64], arn_ahead[64], de_ratio[64], de_own[64];
    for (int r = 0; r < reps; r++) {
        ar_ratio[r] = addrem[r] / addrem_floor[r];
        ar_call[r] = addrem[r] / addrem_floor_call[r];
        arn_ratio[r] = addrem_n[r] / addrem_floor[r];
        arn_ahead[r] = addrem_n[r] / addrem_floor_ahead[r];
        de_ratio[r] = destroy[r] / addrem_floor[r];
        de_own[r] = destroy[r] / destroy_fl[r];
    }
    emit("add_remove_ratio", median(ar_ratio, reps), "x add_remove_plain_arrays", churn, reps);
    emit("add_remove_ratio_call", median(ar_call, reps), "x add_remove_plain_arrays_call", churn, reps);
    emit("add_remove_n_ratio", median(arn_ratio, reps), "x add_remove_plain_arrays", churn, reps);
    emit("add_remove_n_ratio_ahead", median(arn_ahead, reps), "x add_remove_plain_arrays_ahead", churn, reps);
    emit("destroy_ratio", median(de_ratio, reps), "x add_remove_plain_arrays", churn, reps);
    emit("destroy_ratio_own_floor", median(de_own, reps), "x destroy_plain_arrays", churn, reps);
    const char *mode[2] = { "", "_grid" };
    for (int g = 0; g < 2; g++) {
        char name[64];
        snprintf(name, sizeof name, "spatial_insert%s", mode[g]);
        emit(name, median(sp[g].insert, reps), "ns/op", n, reps);
        snprintf(name, sizeof name, "spatial_move%s", mode[g]);
        emit(name, median(sp[g].move, reps), "ns/op", n, reps);
        snprintf(name, sizeof name, "spatial_move_n%s", mode[g]);
        emit(name, median(sp[g].move_n, reps), "ns/op", n, reps);
        snprintf(name, sizeof name, "spatial_query%s", mode[g]);
        emit(name, median(sp[g].query, reps), "ns/query", 100000, reps);
        snprintf(name, sizeof name, "spatial_query_radius%s", mode[g]);
        emit(name, median(sp[g].radius, reps), "ns/query", 100000, reps);
        snprintf(name, sizeof name, "destroy_in_spatial%s", mode[g]);
        emit(name, median(sp[g].destroy, reps), "ns/op", churn, reps);
        snprintf(name, sizeof name, "destroy_n_in_spatial%s", mode[g]);
        emit(name, median(sp[g].destroy_n, reps), "ns/op", churn, reps);
    }
    emit("spatial_move_plain_arrays", median(sp_floor, reps), "ns/op", n, reps);
    emit("spatial_move_plain_arrays_ahead", median(sp_floor_ahead, reps), "ns/op", n, reps);
    emit("spatial_move_plain_arrays_call", median(sp_floor_call, reps), "ns/op", n, reps);
    double mv_ratio[2][64], mvn_ratio[2][64], mvn_ahead[2][64], mv_call[64];
    for (int r = 0; r < reps; r++) {
        mv_call[r] = sp[1].move[r] / sp_floor_call[r];
        mv_ratio[0][r] = sp[0].move[r] / sp_floor[r];
        mv_ratio[1][r] = sp[1].move[r] / sp_floor[r];
        mvn_ratio[0][r] = sp[0].move_n[r] / sp_floor[r];
        mvn_ratio[1][r] = sp[1].move_n[r] / sp_floor[r];
        mvn_ahead[0][r] = sp[0].move_n[r] / sp_floor_ahead[r];
        mvn_ahead[1][r] = sp[1].move_n[r] / sp_floor_ahead[r];
    }
    emit("spatial_move_ratio", median(mv_ratio[0], reps), "x spatial_move_plain_arrays", n, reps);
    emit("spatial_move_grid_ratio", median(mv_ratio[1], reps), "x spatial_move_plain_arrays", n, reps);
    emit("spatial_move_grid_ratio_call", median(mv_call, reps), "x spatial_move_plain_arrays_call", n, reps);
    emit("spatial_move_n_ratio", median(mvn_ratio[0], reps), "x spatial_move_plain_arrays", n, reps);
    emit("spatial_move_n_grid_ratio", median(mvn_ratio[1], reps), "x spatial_move_plain_arrays", n, reps);
    emit("spatial_move_n_ratio_ahead", median(mvn_ahead[0], reps), "x spatial_move_plain_arrays_ahead", n, reps);
    emit("spatial_move_n_grid_ratio_ahead", median(mvn_ahead[1], reps), "x spatial_move_plain_arrays_ahead", n, reps);
    emit("alt_sparse_set_view_pass", median(alt_view, reps), "ns/entity", n, reps);
    emit("alt_sparse_set_add_remove", median(alt_addrem, reps), "ns/op", churn, reps);
    free(ids);
    free(pick);
    free(pa);
    free(va);
    return 0;
}
