/* The agents of a region: entities with a kr.region.agent component (a
 * global id, the step it last acted in) and a cell in the spatial index.
 * Creating, finding and moving them (a move into a neighbour's cells lists
 * the agent as a migrant for the exchange), counting them, the ids of
 * children and each agent's random stream (docs/regions.md, "Determinism
 * rules"). A kind's act calls these for every agent at every step. */
#include <math.h>
#include <stdlib.h>
#include "base/error.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "regions/region_private.h"

kr_entity_t kr_region_agent_create(kr_region_t *r, uint64_t id, int32_t x, int32_t y)
{
    if (!id || !kr_rect_contains(r->own, x, y)) {
        kr__fail(KR_ERR_INVALID_ARG, "region %u: an agent %llu in cell (%d, %d): expected a non-zero id and one of "
                 "the region's own cells [%d, %d) x [%d, %d)", r->index, (unsigned long long)id, x, y, r->own.x0,
                 r->own.x1, r->own.y0, r->own.y1);
        return KR_ENTITY_INVALID;
    }
    kr_entity_t e = kr_entity_create_desc(r->world, &(kr_entity_desc_t){ .components = &r->agent,
                                                                          .component_count = 1 });
    if (!e) return KR_ENTITY_INVALID;
    /* born this step: acts from the next */
    *(kr_region_agent_t *)kr_component_get(r->world, e, r->agent) = (kr_region_agent_t){ id, r->step };
    if (kr_spatial_insert(r->world, e, x + 0.5, y + 0.5)) {
        kr_entity_destroy(r->world, e);
        return KR_ENTITY_INVALID;
    }
    return e;
}

uint64_t kr_region_agent_id(const kr_region_t *r, kr_entity_t e)
{
    const kr_region_agent_t *a = kr_component_has(r->world, e, r->agent)
                                     ? kr_component_get(r->world, e, r->agent) : NULL;
    return a ? a->id : 0;
}

bool kr__region_cell_lookup(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y)
{
    double px, py;
    if (!kr_spatial_position(r->world, e, &px, &py)) return false;
    if (x) *x = (int32_t)floor(px);
    if (y) *y = (int32_t)floor(py);
    return true;
}

bool kr_region_agent_cell(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y)
{
    if (e == r->acting && e) {
        if (x) *x = r->acting_x;
        if (y) *y = r->acting_y;
        return true;
    }
    return kr__region_cell_lookup(r, e, x, y);
}

static inline kr_status_t place(kr_region_t *r, kr_entity_t e, int32_t x, int32_t y)
{
    kr_status_t st = kr_spatial_move(r->world, e, x + 0.5, y + 0.5);
    if (!st && e == r->acting) {
        r->acting_x = x;
        r->acting_y = y;
    } else if (!st) {
        r->moved_other = true; /* an agent gathered with the acting one may have moved */
    }
    return st;
}

kr_status_t kr_region_agent_move(kr_region_t *r, kr_entity_t e, int32_t x, int32_t y)
{
    if (kr_rect_contains(r->own, x, y)) return place(r, e, x, y);
    uint32_t owner = kr_region_grid_owner(&r->grid, x, y);
    size_t slot = 0;
    if (owner != r->index)
        while (slot < r->nb_count && r->nb[slot].region != owner) slot++;
    if (owner == UINT32_MAX || (owner != r->index && slot == r->nb_count))
        return kr__fail(KR_ERR_INVALID_ARG, "region %u: a move to cell (%d, %d): expected a cell of the %d x %d world "
                        "owned by this region or a neighbour", r->index, x, y, r->grid.width, r->grid.height);
    /* Only agents migrate: the receiver refuses anything else. */
    uint64_t id = kr_region_agent_id(r, e);
    if (!id)
        return kr__fail(KR_ERR_INVALID_ARG, "region %u: a move to cell (%d, %d) of region %u: expected an agent "
                        "(kr.region.agent), found entity %u:%u", r->index, x, y, owner, kr_entity_index(e),
                        kr_entity_generation(e));
    kr_status_t st = place(r, e, x, y);
    if (st) return st;
    kr__region_neighbour_t *n = &r->nb[slot];
    if (n->out_count == n->out_cap && KR__GROW(n->out, n->out_cap, n->out_count + 1, 64, NULL))
        return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
    n->out[n->out_count++] = (kr__region_snap_t){ id, e, x, y };
    return KR_OK;
}

size_t kr_region_agent_count(const kr_region_t *r)
{
    kr_view_t v;
    if (kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->agent } })) return 0;
    size_t n = kr_view_count(&v);
    kr_view_fini(&v);
    return n;
}

uint64_t kr_region_child_id(uint64_t parent, uint64_t step, uint32_t n)
{
    uint64_t h = kr__mix64(kr__mix64(parent ^ 0x6368696c64ULL) ^ kr__mix64(step + 0x9e3779b97f4a7c15ULL) ^ n);
    return h ? h : 1;
}

kr_rng_t *kr_region_rng(kr_region_t *r, uint64_t id)
{
    kr_rng_reset(r->rng, r->seed, KR_RNG_AGENT, id, r->step);
    return r->rng;
}

kr_component_t kr_region_agent_component(const kr_region_t *r) { return r ? r->agent : KR_COMPONENT_NONE; }
