/* The exchange: at time 0 and at the end of every step but the last, one
 * sync-event to each neighbour carries the agents that moved into its cells
 * (the migrants, with their subtrees) and the strip of this region's cells
 * in its halo (field values and ghosts, this step's emigrants among them);
 * on arrival the strip fills the halo (halo.c) and the migrants are in the
 * world for the next step. docs/regions.md, "A step".
 *
 * Migrants and the halo strip for one neighbour travel in one sync-event
 * per step: the strip is an entity carrying a behavior whose serialize
 * callback writes the strip's bytes, so it rides the same pack as the
 * migrants and needs nothing of the sync machinery beyond what entity
 * migration already does. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_fail.h"
#include "regions/region_private.h"

#define STRIP_MAGIC 0x6b726731u
/* A strip larger than this is corrupt: a halo of a 10^6-wide world, 64
 * layers deep, with fields, stays far below it. */
#define STRIP_MAX_BYTES (1ull << 32)

static kr_status_t put_ghost(kr_buf_t *b, uint64_t id, int32_t x, int32_t y, const void *bytes, size_t n)
{
    kr_status_t st = kr_buf_put_u64(b, id);
    if (!st) st = kr_buf_put_u32(b, (uint32_t)x);
    if (!st) st = kr_buf_put_u32(b, (uint32_t)y);
    if (!st && n) st = kr_buf_append(b, bytes, n);
    return st;
}

/* The strip for neighbour n: field values of my own cells in its halo, and
 * every agent I hold at the end of the step in a cell of its halo: those
 * of my own cells there, and my emigrants bound for other regions' cells
 * there (their new region reports them only from the next step). */
static kr_status_t strip_write(kr_region_t *r, const kr__region_neighbour_t *n, kr_buf_t *b)
{
    kr_rect_t s = n->send;
    kr_status_t st = kr_buf_put_u32(b, STRIP_MAGIC);
    if (!st) st = kr_buf_put_u32(b, r->index);
    if (!st) st = kr_buf_put_u64(b, r->step);
    if (!st) st = kr_buf_put_u32(b, r->desc.fields);
    for (uint32_t f = 0; !st && f < r->desc.fields; f++) {
        const double *v = kr_region_field(r, f);
        for (int32_t y = s.y0; !st && y < s.y1; y++)
            st = kr_buf_append(b, v + kr_region_field_index(r, s.x0, y), (size_t)(s.x1 - s.x0) * sizeof *v);
    }
    if (st) return st;
    size_t count_at = b->len;
    uint32_t count = 0;
    size_t gsize = r->desc.ghost_size;
    if ((st = kr_buf_put_u32(b, 0)) || (st = kr_buf_put_u32(b, (uint32_t)gsize))) return st;
    for (int32_t y = s.y0; y < s.y1; y++)
        for (int32_t x = s.x0; x < s.x1; x++) {
            size_t k;
            const kr_entity_t *in = kr_spatial_cell_entities(r->world, (kr_cell_t){ x, y }, &k);
            for (size_t i = 0; i < k; i++) {
                uint64_t id = kr_region_agent_id(r, in[i]);
                if (!id) continue;
                if ((st = put_ghost(b, id, x, y, NULL, 0)) || (st = kr_buf_reserve(b, gsize))) return st;
                if (gsize) {
                    memset(b->data + b->len, 0, gsize);
                    r->desc.ghost(r, in[i], b->data + b->len, r->desc.arg);
                    b->len += gsize;
                }
                count++;
            }
        }
    for (size_t i = 0; i < r->emigrant_count; i++) {
        const kr__region_ghost_rec_t *g = &r->emigrants[i];
        if (!kr_rect_contains(n->stored, g->x, g->y) || kr_region_grid_owner(&r->grid, g->x, g->y) == n->region)
            continue;
        /* (no bytes at all when ghosts carry none: no pointer to offset) */
        const uint8_t *bytes = r->emigrant_bytes.data ? r->emigrant_bytes.data + g->offset : NULL;
        if ((st = put_ghost(b, g->id, g->x, g->y, bytes, gsize))) return st;
        count++;
    }
    memcpy(b->data + count_at, &(uint32_t){ count }, 4); /* little-endian hosts only, as the packs */
    return KR_OK;
}

/* Every region whose halo holds an emigrant's new cell must hear of it
 * from this one: itself, or a neighbour. A region further away could only
 * see it if the move went beyond the halo; the check says so instead of
 * leaving that region's halo short of an agent. */
static kr_status_t emigrant_reach(const kr_region_t *r, int32_t x, int32_t y)
{
    uint32_t dest = kr_region_grid_owner(&r->grid, x, y), around[8];
    size_t n = kr_region_grid_neighbours(&r->grid, dest, around);
    for (size_t i = 0; i < n; i++) {
        if (around[i] == r->index || !kr_rect_contains(kr_region_grid_stored(&r->grid, around[i]), x, y)) continue;
        bool told = false;
        for (size_t j = 0; j < r->nb_count && !told; j++) told = r->nb[j].region == around[i];
        if (!told)
            return kr__fail(KR_ERR_INVALID_ARG, "region %u: an agent moved to cell (%d, %d), in the halo of region %u, "
                            "which is no neighbour of region %u: moves must stay within the halo width",
                            r->index, x, y, around[i], r->index);
    }
    return KR_OK;
}

/* This step's emigrants as ghosts, before they leave: for the neighbours'
 * strips and for this region's own halo of the next step. */
static kr_status_t emigrants_collect(kr_region_t *r)
{
    r->emigrant_count = 0;
    kr_buf_clear(&r->emigrant_bytes);
    size_t gsize = r->desc.ghost_size;
    for (size_t i = 0; i < r->nb_count; i++) {
        const kr__region_neighbour_t *n = &r->nb[i];
        for (size_t j = 0; j < n->migrants; j++) {
            const kr__region_snap_t *m = &n->out[j];
            int32_t x, y;
            kr_region_agent_cell(r, m->e, &x, &y);
            kr_status_t st = emigrant_reach(r, x, y);
            if (st) return st;
            if (r->emigrant_count == r->emigrant_cap &&
                KR__GROW(r->emigrants, r->emigrant_cap, r->emigrant_count + 1, 64, NULL))
                return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
            size_t at = r->emigrant_bytes.len;
            if ((st = kr_buf_reserve(&r->emigrant_bytes, gsize))) return st;
            if (gsize) {
                memset(r->emigrant_bytes.data + at, 0, gsize);
                r->desc.ghost(r, m->e, r->emigrant_bytes.data + at, r->desc.arg);
                r->emigrant_bytes.len += gsize;
            }
            r->emigrants[r->emigrant_count++] = (kr__region_ghost_rec_t){ m->id, x, y, at };
            if (kr_rect_contains(r->stored, x, y) &&
                (st = kr__region_ghost_add(r, m->id, x, y, r->emigrant_bytes.data ? r->emigrant_bytes.data + at : NULL)))
                return st;
        }
    }
    return KR_OK;
}

static int snap_cmp(const void *a, const void *b)
{
    const kr__region_snap_t *p = a, *q = b;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* The migrants still bound for neighbour n, by id, each once: an agent may
 * have moved on or come back since it was listed. */
static size_t migrants_of(kr_region_t *r, kr__region_neighbour_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < n->out_count; i++) {
        int32_t x, y;
        kr_entity_t e = n->out[i].e;
        if (!kr_entity_alive(r->world, e) || !kr_region_agent_cell(r, e, &x, &y) ||
            kr_region_grid_owner(&r->grid, x, y) != n->region)
            continue;
        n->out[k++] = n->out[i];
    }
    if (k) qsort(n->out, k, sizeof *n->out, snap_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || n->out[u - 1].e != n->out[i].e) n->out[u++] = n->out[i];
    return u;
}

void kr__region_on_departure(kr_region_t *r, kr__region_departure_fn fn, void *arg)
{
    r->on_departure = fn;
    r->departure_arg = arg;
}

kr_status_t kr__region_exchange_send(kr_region_t *r)
{
    kr_status_t st = KR_OK;
    kr_entity_t *roots = NULL;
    size_t roots_cap = 0;
    for (size_t i = 0; i < r->nb_count; i++) {
        kr__region_neighbour_t *n = &r->nb[i];
        n->migrants = migrants_of(r, n);
        n->out_count = 0;
    }
    st = emigrants_collect(r);
    for (size_t i = 0; !st && i < r->nb_count; i++) {
        kr__region_neighbour_t *n = &r->nb[i];
        size_t m = n->migrants;
        if (m + 1 > roots_cap) {
            kr_entity_t *g = realloc(roots, (m + 1) * sizeof *g);
            if (!g) { st = kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index); break; }
            roots = g;
            roots_cap = m + 1;
        }
        for (size_t j = 0; j < m; j++) roots[j + 1] = n->out[j].e;
        for (size_t j = 0; r->on_departure && j < m; j++) r->on_departure(r, n->out[j].e, r->departure_arg);
        if (m) {
            /* Bytes per migrant, for the stats: the pack the sync-event
             * makes of the same subtrees. */
            kr_buf_clear(&r->scratch);
            if ((st = kr_pack(r->world, roots + 1, m, &r->scratch))) break;
            r->migrant_bytes += r->scratch.len;
            r->migrants_sent += m;
        }
        kr_buf_clear(&r->scratch);
        if ((st = strip_write(r, n, &r->scratch))) break;
        roots[0] = kr_entity_create(r->world);
        kr__region_strip_t *ss = roots[0] ? kr_component_add(r->world, roots[0], r->strip) : NULL;
        if (!ss) { st = kr_last_status(); break; }
        ss->data = malloc(r->scratch.len);
        if (!ss->data) { st = kr__fail(KR_ERR_NOMEM, "region %u: out of memory for a halo strip", r->index); break; }
        memcpy(ss->data, r->scratch.data, r->scratch.len);
        ss->len = r->scratch.len;
        kr__region_exchange_msg_t msg = { r->index, (uint32_t)m, r->step };
        st = kr_schedule_sync(r->sim, &(kr_sync_desc_t){ .target = n->sim, .delay = r->time_step,
                                                          .type = r->exchange, .data = &msg, .entities = roots,
                                                          .entity_count = m + 1 }, NULL);
    }
    free(roots);
    return st;
}

static kr_status_t strip_read(kr_region_t *r, kr__region_neighbour_t *n, const uint8_t *data, size_t len)
{
    kr_reader_t rd;
    kr_reader_init(&rd, data, len);
    uint32_t magic = kr_reader_u32(&rd), from = kr_reader_u32(&rd);
    uint64_t step = kr_reader_u64(&rd);
    uint32_t fields = kr_reader_u32(&rd);
    if (rd.failed || magic != STRIP_MAGIC || from != n->region || step + 1 != kr_region_step(r) ||
        fields != r->desc.fields)
        return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with the wrong header", n->region);
    kr_rect_t s = n->receive;
    size_t w = (size_t)(s.x1 - s.x0);
    for (uint32_t f = 0; f < fields; f++) {
        double *v = r->cur + (size_t)f * kr_rect_area(r->stored);
        for (int32_t y = s.y0; y < s.y1; y++) {
            const void *row = kr_reader_view(&rd, w * sizeof(double));
            if (!row) return kr__fail(KR_ERR_CORRUPT, "a truncated halo strip from region %u", n->region);
            memcpy(v + kr_region_field_index(r, s.x0, y), row, w * sizeof(double));
        }
    }
    uint32_t count = kr_reader_u32(&rd), gsize = kr_reader_u32(&rd);
    if (rd.failed || gsize != r->desc.ghost_size || count > kr_reader_left(&rd) / (16 + (size_t)gsize))
        return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with a bad agent list", n->region);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t id = kr_reader_u64(&rd);
        int32_t x = (int32_t)kr_reader_u32(&rd), y = (int32_t)kr_reader_u32(&rd);
        const void *bytes = kr_reader_view(&rd, gsize);
        /* its own cells, or (emigrants) a third region's, in my halo */
        if (rd.failed || !id || !kr_rect_contains(r->stored, x, y) || kr_rect_contains(r->own, x, y))
            return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with an agent outside my halo", n->region);
        kr_status_t st = kr__region_ghost_add(r, id, x, y, bytes);
        if (st) return st;
    }
    if (kr_reader_left(&rd)) return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with trailing bytes",
                                             n->region);
    r->ghosts_ready = false;
    n->arrived = true;
    return KR_OK;
}

static kr_status_t arrive(kr_region_t *r, const kr__region_exchange_msg_t *msg)
{
    size_t count;
    const kr_entity_t *in = kr_event_entities(r->sim, &count);
    kr__region_neighbour_t *n = NULL;
    for (size_t i = 0; i < r->nb_count && !n; i++)
        if (r->nb[i].region == msg->from) n = &r->nb[i];
    if (!n || n->arrived || count != (size_t)msg->migrants + 1 || !kr_component_has(r->world, in[0], r->strip))
        return kr__fail(KR_ERR_CORRUPT, "an exchange from region %u that this region does not expect", msg->from);
    const kr__region_strip_t *ss = kr_component_get(r->world, in[0], r->strip);
    kr_status_t st = strip_read(r, n, ss->data, ss->len);
    kr_entity_destroy(r->world, in[0]);
    if (!st && r->arrived_count + count > r->arrived_cap &&
        KR__GROW(r->arrived, r->arrived_cap, r->arrived_count + count, 256, NULL))
        return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
    for (size_t i = 1; !st && i < count; i++) {
        int32_t x, y;
        uint64_t id = kr_region_agent_id(r, in[i]);
        if (!id || !kr_region_agent_cell(r, in[i], &x, &y) || !kr_rect_contains(r->own, x, y))
            st = kr__fail(KR_ERR_CORRUPT, "a migrant from region %u that is no agent of this region's cells",
                          msg->from);
        else
            r->arrived[r->arrived_count++] = id;
    }
    return st;
}

void kr__region_exchange_arrive(kr_sim_t *sim, void *data)
{
    kr_region_t *r = kr_region_of(sim);
    kr_status_t st = r ? arrive(r, data) : kr__fail(KR_ERR_STATE, "an exchange for a simulator that is no region");
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s': %s", kr_sim_name(sim), kr_last_error());
}

/* The strip entity's behavior (kr.region.strip): its bytes ride in the
 * exchange's pack, and are checked for size when they arrive. */
void kr__region_strip_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w, (void)self;
    kr__region_strip_t *s = state;
    free(s->data);
    s->data = NULL;
}

kr_status_t kr__region_strip_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser)
{
    (void)w, (void)self;
    kr__region_strip_t *s = state;
    kr_status_t st = kr_ser_u64(ser, &s->len);
    if (st) return st;
    if (kr_serializer_loading(ser)) {
        if (s->len > STRIP_MAX_BYTES || s->len > kr_serializer_left(ser))
            return kr__fail(KR_ERR_CORRUPT, "a halo strip of %llu bytes (%zu left in the message)",
                            (unsigned long long)s->len, kr_serializer_left(ser));
        free(s->data);
        s->data = malloc(s->len ? s->len : 1);
        if (!s->data) return kr__fail(KR_ERR_NOMEM, "out of memory for a halo strip");
    }
    return kr_ser_bytes(ser, s->data, s->len);
}
