/* A region's run-time state for checkpoints (kr_region_serialize,
 * docs/checkpoint.md): what a region changes during the run and keeps
 * outside its simulator's world, event queue, stream and declared state,
 * which a restart restores by themselves.
 *
 * On a restart the kind's setup makes the region again (kr_region_create:
 * geometry, neighbours, ids, buffers, the driver entity, the start event),
 * exactly as at the start of the run; the checkpoint then replaces the
 * world and the events, and the kind's serialize calls this to load the
 * rest. Saved:
 *  - the step and the counters (updates, migrants sent and their bytes);
 *  - the fields as of the end of the last step (cur), own cells and halo:
 *    the halo part came in with the neighbours' strips, whose events are
 *    spent;
 *  - the ghosts for the next step (neighbours' strips that arrived, this
 *    region's own emigrants), and which neighbours' strips are in;
 *  - the ids of the migrants that arrived for the next step (the duplicate
 *    check at its start);
 *  - migrants listed for a neighbour (empty between steps: kept all the
 *    same, as entity references, should a cut ever fall inside one).
 * Not saved, and why:
 *  - `next`: every step starts by copying `cur` into it, and before step 0
 *    it holds what setup wrote, which setup writes again;
 *  - the agents' streams (kr_region_rng): re-keyed from (seed, id, step) at
 *    every call, they hold nothing between calls;
 *  - the sorted ghost view (ghosts), the emigrants of the last exchange,
 *    the scan's snapshot and the scratch buffer: caches remade before use
 *    (ghosts on the first look of a step, emigrants at every exchange);
 *  - the scatter of initial agents: setup only.
 * Loading also takes the simulator's world afresh, should the restart have
 * put a new world object in the place of setup's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "regions/region_private.h"

#define REGION_SER_MAGIC 0x6b72636bu /* "krck" */
#define REGION_SER_VERSION 1u

static kr_status_t corrupt(const kr_region_t *r, const char *what)
{
    return kr__fail(KR_ERR_CORRUPT, "region %u: a checkpoint %s", r->index, what);
}

/* A u32 the load must find equal to what this region is. */
static kr_status_t ser_same_u32(kr_serializer_t *s, const kr_region_t *r, uint32_t v, const char *what)
{
    uint32_t got = v;
    kr_status_t st = kr_ser_u32(s, &got);
    if (st) return st;
    if (got != v) {
        char msg[160];
        snprintf(msg, sizeof msg, "of another region (%s %u, this region's %u)", what, got, v);
        return corrupt(r, msg);
    }
    return KR_OK;
}

/* A count to load, checked against the bytes left (each item at least
 * `min_bytes`) before anything is allocated for it. */
static kr_status_t ser_count(kr_serializer_t *s, const kr_region_t *r, size_t *n, size_t min_bytes)
{
    uint64_t v = *n;
    kr_status_t st = kr_ser_u64(s, &v);
    if (st) return st;
    if (kr_serializer_loading(s)) {
        if (v > kr_serializer_left(s) / min_bytes) return corrupt(r, "with a count beyond its end");
        *n = (size_t)v;
    }
    return KR_OK;
}

static kr_status_t ser_i32(kr_serializer_t *s, int32_t *v)
{
    uint32_t u = (uint32_t)*v;
    kr_status_t st = kr_ser_u32(s, &u);
    *v = (int32_t)u;
    return st;
}

/* The region's identity: a checkpoint loads only into the same region of
 * the same cut (the numbers of ranks may differ; the cut may not). */
static kr_status_t ser_header(kr_serializer_t *s, const kr_region_t *r)
{
    kr_status_t st = ser_same_u32(s, r, REGION_SER_MAGIC, "tag");
    if (!st) st = ser_same_u32(s, r, REGION_SER_VERSION, "version");
    if (!st) st = ser_same_u32(s, r, r->index, "index");
    if (!st) st = ser_same_u32(s, r, (uint32_t)r->grid.width, "width");
    if (!st) st = ser_same_u32(s, r, (uint32_t)r->grid.height, "height");
    if (!st) st = ser_same_u32(s, r, r->grid.cols, "columns");
    if (!st) st = ser_same_u32(s, r, r->grid.rows, "rows");
    if (!st) st = ser_same_u32(s, r, r->grid.halo, "halo");
    if (!st) st = ser_same_u32(s, r, r->desc.fields, "fields");
    if (!st) st = ser_same_u32(s, r, (uint32_t)r->desc.ghost_size, "ghost size");
    if (!st) st = ser_same_u32(s, r, (uint32_t)r->nb_count, "neighbour count");
    return st;
}

static kr_status_t ser_neighbour(kr_serializer_t *s, kr_region_t *r, kr__region_neighbour_t *n)
{
    kr_status_t st = ser_same_u32(s, r, n->region, "neighbour");
    uint32_t arrived = n->arrived;
    if (!st) st = kr_ser_u32(s, &arrived);
    n->arrived = arrived != 0;
    size_t count = n->out_count;
    if (!st) st = ser_count(s, r, &count, 24);
    if (st) return st;
    if (kr_serializer_loading(s)) {
        if (count > n->out_cap && KR__GROW(n->out, n->out_cap, count, 64, NULL))
            return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
        n->out_count = count;
    }
    for (size_t i = 0; !st && i < count; i++) {
        kr__region_snap_t *m = &n->out[i];
        st = kr_ser_u64(s, &m->id);
        if (!st) st = kr_ser_entity(s, &m->e);
        if (!st) st = ser_i32(s, &m->x);
        if (!st) st = ser_i32(s, &m->y);
    }
    return st;
}

/* The ghosts for the next step. Loading adds them again through
 * kr__region_ghost_add, which lays out their bytes. */
static kr_status_t ser_ghosts(kr_serializer_t *s, kr_region_t *r)
{
    bool loading = kr_serializer_loading(s);
    size_t gsize = r->desc.ghost_size, count = r->ghost_count;
    kr_status_t st = ser_count(s, r, &count, 16 + gsize);
    if (st) return st;
    if (loading) {
        r->ghost_count = 0;
        kr_buf_clear(&r->ghost_bytes);
        kr_buf_clear(&r->scratch);
        if (gsize && (st = kr_buf_reserve(&r->scratch, gsize))) return st;
    }
    for (size_t i = 0; !st && i < count; i++) {
        kr__region_ghost_rec_t g = loading ? (kr__region_ghost_rec_t){ 0 } : r->ghost_recs[i];
        st = kr_ser_u64(s, &g.id);
        if (!st) st = ser_i32(s, &g.x);
        if (!st) st = ser_i32(s, &g.y);
        void *bytes = !gsize ? NULL : loading ? r->scratch.data : r->ghost_bytes.data + g.offset;
        if (!st && gsize) st = kr_ser_bytes(s, bytes, gsize);
        if (!st && loading) {
            if (!g.id || !kr_rect_contains(r->stored, g.x, g.y)) return corrupt(r, "with a ghost outside the halo");
            st = kr__region_ghost_add(r, g.id, g.x, g.y, bytes);
        }
    }
    /* the sorted view is a cache: made again on the first look */
    r->ghosts_ready = false;
    return st;
}

static kr_status_t ser_arrived(kr_serializer_t *s, kr_region_t *r)
{
    size_t count = r->arrived_count;
    kr_status_t st = ser_count(s, r, &count, 8);
    if (st) return st;
    if (kr_serializer_loading(s)) {
        if (count > r->arrived_cap && KR__GROW(r->arrived, r->arrived_cap, count, 256, NULL))
            return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
        r->arrived_count = count;
    }
    for (size_t i = 0; !st && i < count; i++) st = kr_ser_u64(s, &r->arrived[i]);
    return st;
}

/* The step driver of a reloaded world carries no pointer (its serialize
 * cannot write one): it gets this region's. */
static void bind_drivers(kr_region_t *r)
{
    kr_view_t v;
    if (kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->driver } })) return;
    while (kr_view_next(&v)) ((kr__region_driver_t *)kr_view_get(&v, 0))->region = r;
    kr_view_fini(&v);
}

bool kr__region_take_saved(kr_region_t *r)
{
    bool saved = r->saved;
    r->saved = false;
    return saved;
}

kr_status_t kr_region_serialize(kr_region_t *r, kr_serializer_t *s)
{
    if (!r || !s) return kr__fail(KR_ERR_INVALID_ARG, "kr_region_serialize: null argument");
    if (!kr_serializer_loading(s)) r->saved = true;
    /* The world setup gave the region, or the one the checkpoint put in
     * its place if a restart made a new one. */
    if (kr_serializer_loading(s)) r->world = kr_sim_world(r->sim);
    kr_status_t st = ser_header(s, r);
    if (!st) st = kr_ser_u64(s, &r->step);
    if (!st) st = kr_ser_u64(s, &r->updates);
    if (!st) st = kr_ser_u64(s, &r->migrants_sent);
    if (!st) st = kr_ser_u64(s, &r->migrant_bytes);
    size_t values = (size_t)kr_rect_area(r->stored) * r->desc.fields;
    for (size_t i = 0; !st && i < values; i++) st = kr_ser_f64(s, &r->cur[i]);
    for (size_t i = 0; !st && i < r->nb_count; i++) st = ser_neighbour(s, r, &r->nb[i]);
    if (!st) st = ser_ghosts(s, r);
    if (!st) st = ser_arrived(s, r);
    if (!st && kr_serializer_loading(s)) bind_drivers(r);
    return st ? st : kr_serializer_status(s);
}
