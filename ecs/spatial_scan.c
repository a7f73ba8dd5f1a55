/* kr_spatial_scan: the cells of a rectangle in (y, x) order, with what a
 * cell-by-cell pass over many entities needs from memory loaded ahead.
 *
 * A scan meets entities in cell order, while their records, spatial
 * entries and component rows lie in creation order; once entities have
 * moved, each of those is a cache miss, and the record must arrive before
 * the row it points to can be asked for. So two cursors run ahead of the
 * visit: the far one starts loading the records of the entities there; the
 * near one (by then those records are in) their spatial entries, the rows
 * of the requested component, and the cell records of the rows above and
 * below, where moving entities land. Prefetches change nothing, so a cell
 * changed between the hint and the visit costs only a miss.
 *
 * Measured on random walkers (about one per cell, bench/README.md): spatial
 * entries loaded at the far cursor were gone again by the visit (8.2 M
 * updates/s against 10.5 M at the near one); without the far cursor 10.1 M;
 * the cells below matter most (8.5 M without them). */
#include <stdlib.h>

#include "ecs/world_private.h"

/* Cells ahead of the visit (distances from 4/12 to 10/24 all did about
 * as well). */
#define AHEAD_NEAR 6
#define AHEAD_FAR 14

/* A cursor over the rectangle's cells in scan order, with the cell's
 * index in the dense grid (KR__NONE off the grid, and past the end): along a
 * row it moves by one, so the scan computes no index per cell. */
typedef struct cursor {
    int32_t x, y;
    uint32_t gi;
} cursor_t;

static inline uint32_t grid_at(const kr__spatial_state_t *s, int32_t cx, int32_t cy)
{
    uint32_t dx = (uint32_t)cx - (uint32_t)s->gx0, dy = (uint32_t)cy - (uint32_t)s->gy0;
    return dx < s->gw && dy < s->gh ? dy * s->gw + dx : KR__NONE;
}

static inline cursor_t cursor_at(const kr__spatial_state_t *s, const kr_spatial_scan_desc_t *d, int32_t x, int32_t y)
{
    return (cursor_t){ x, y, y < d->y1 ? grid_at(s, x, y) : KR__NONE };
}

static inline void cursor_step(cursor_t *c, const kr__spatial_state_t *s, const kr_spatial_scan_desc_t *d)
{
    if (c->y >= d->y1) return; /* past the end (a cursor ahead of the visit): it stays there */
    if (++c->x == d->x1) {
        *c = cursor_at(s, d, d->x0, c->y + 1);
    } else if (c->gi != KR__NONE && (uint32_t)c->x - (uint32_t)s->gx0 < s->gw) {
        c->gi++;
    } else {
        c->gi = c->y < d->y1 ? grid_at(s, c->x, c->y) : KR__NONE;
    }
}

/* Only cells of the dense grid are prefetched: finding the others takes a
 * hash lookup, which costs what the hint would save. */
static void prefetch_far(const kr_world_t *w, cursor_t c)
{
    if (c.gi == KR__NONE) return;
    const kr__spatial_cell_rec_t *cell = &w->spatial.grid[c.gi];
    const kr_entity_t *m = kr__cell_members(cell);
    for (uint32_t i = 0; i < cell->count; i++) __builtin_prefetch(&w->records[kr_entity_index(m[i])]);
}

/* The value of table component c of a live entity's record; NULL when
 * absent or stored sparse. */
static inline void *table_value(const kr_world_t *w, const kr__record_t *r, kr_component_t c)
{
    const kr__table_t *t = w->tables[r->table];
    int col = kr__column_index(t, c);
    return col >= 0 ? kr__column_ptr(t, (uint32_t)col, r->row) : NULL;
}

static void prefetch_near(const kr_world_t *w, cursor_t c, kr_component_t comp)
{
    const kr__spatial_state_t *s = &w->spatial;
    if (c.gi == KR__NONE) return;
    if (c.gi >= s->gw) __builtin_prefetch(&s->grid[c.gi - s->gw], 1);
    if (c.gi + s->gw < s->grid_cells) __builtin_prefetch(&s->grid[c.gi + s->gw], 1);
    const kr__spatial_cell_rec_t *cell = &s->grid[c.gi];
    const kr_entity_t *m = kr__cell_members(cell);
    for (uint32_t i = 0; i < cell->count; i++) {
        uint32_t idx = kr_entity_index(m[i]);
        __builtin_prefetch(&s->entries[idx], 1);
        void *v = comp ? table_value(w, &w->records[idx], comp) : NULL;
        if (v) __builtin_prefetch(v, 1);
    }
}

/* Component c of entity e, which is alive (it is in the hash). */
static void *value_of(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    const kr__record_t *r = &w->records[kr_entity_index(e)];
    void *v = table_value(w, r, c);
    if (v || !(r->flags & KR__REC_SPARSE) || !kr_component_has(w, e, c)) return v;
    return kr_component_get(w, e, c);
}

kr_status_t kr_spatial_scan(kr_world_t *w, const kr_spatial_scan_desc_t *d)
{
    static const char fn[] = "kr_spatial_scan";
    if (!w || !d || !d->visit) return kr__fail(KR_ERR_INVALID_ARG, "%s: expected a world and a visit callback", fn);
    if (d->component && !kr__registry_entry(w->registry, d->component))
        return kr__fail(KR_ERR_UNREGISTERED, "%s: component %u is not registered", fn, d->component);
    if (d->x1 <= d->x0 || d->y1 <= d->y0) return KR_OK;
    w->spatial_scans++;
    void *small[16];
    void **values = small;
    size_t values_cap = 16;
    kr_status_t st = KR_OK;
    const kr__spatial_state_t *s = &w->spatial;
    cursor_t here = cursor_at(s, d, d->x0, d->y0), near = here, far = here;
    for (int i = 0; i < AHEAD_NEAR; i++) cursor_step(&near, s, d);
    for (int i = 0; i < AHEAD_FAR; i++) cursor_step(&far, s, d);
    for (; here.y < d->y1 && !st; cursor_step(&here, s, d)) {
        prefetch_far(w, far);
        prefetch_near(w, near, d->component);
        cursor_step(&far, s, d);
        cursor_step(&near, s, d);
        int32_t x = here.x, y = here.y;
        /* The record found afresh at each cell: a visit may have
         * created cells off the grid, rebuilding their table. */
        uint32_t ci = here.gi;
        if (ci == KR__NONE) {
            ci = kr__spatial_find(s, x, y);
            if (ci == KR__NONE) continue;
        }
        const kr__spatial_cell_rec_t *cell = kr__cell_at(s, ci);
        size_t count = cell->count;
        if (!count) continue;
        const kr_entity_t *members = kr__cell_members(cell);
        if (d->component) {
            if (count > values_cap) {
                size_t cap = values_cap * 2;
                while (cap < count) cap *= 2;
                void **grown = values == small ? malloc(cap * sizeof *grown)
                                               : realloc(values, cap * sizeof *grown);
                if (!grown) {
                    st = kr__fail(KR_ERR_NOMEM, "%s: out of memory for a cell of %zu entities", fn, count);
                    break;
                }
                values = grown;
                values_cap = cap;
            }
            for (size_t i = 0; i < count; i++) values[i] = value_of(w, members[i], d->component);
        }
        kr_spatial_visit_t v = { .cell = { x, y }, .entities = members, .values = d->component ? values : NULL,
                                 .count = count };
        st = d->visit(w, &v, d->arg);
    }
    if (values != small) free(values);
    w->spatial_scans--;
    return st;
}
