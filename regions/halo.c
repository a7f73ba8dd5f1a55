/* Fields and ghosts: what a region reads of the cells it stores. Field
 * layers are dense arrays over the stored cells (own cells and halo), read
 * as of the previous step (kr_region_field) and written for the next
 * (kr_region_field_next). Ghosts are the agents that stood in the halo's
 * cells at the end of the previous step: added as the neighbours' strips
 * arrive (exchange.c), sorted on the first look of the step. */
#include <stdlib.h>
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_fail.h"
#include "regions/region_private.h"

size_t kr_region_field_index(const kr_region_t *r, int32_t x, int32_t y)
{
    return (size_t)(y - r->stored.y0) * r->stride + (size_t)(x - r->stored.x0);
}

const double *kr_region_field(const kr_region_t *r, uint32_t layer)
{
    return layer < r->desc.fields ? r->cur + (size_t)layer * kr_rect_area(r->stored) : NULL;
}

double *kr_region_field_next(kr_region_t *r, uint32_t layer)
{
    return layer < r->desc.fields ? r->next + (size_t)layer * kr_rect_area(r->stored) : NULL;
}

static int ghost_cmp(const void *a, const void *b)
{
    const kr__region_ghost_rec_t *p = a, *q = b;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

static kr_status_t ghosts_prepare(kr_region_t *r)
{
    if (r->ghosts_ready) return KR_OK;
    if (r->ghost_count) qsort(r->ghost_recs, r->ghost_count, sizeof *r->ghost_recs, ghost_cmp);
    free(r->ghosts);
    r->ghosts = malloc((r->ghost_count ? r->ghost_count : 1) * sizeof *r->ghosts);
    if (!r->ghosts) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the halo", r->index);
    for (size_t i = 0; i < r->ghost_count; i++) {
        const kr__region_ghost_rec_t *g = &r->ghost_recs[i];
        r->ghosts[i] = (kr_region_ghost_t){ g->id, g->x, g->y, r->ghost_bytes.data + g->offset };
    }
    r->ghosts_ready = true;
    return KR_OK;
}

const kr_region_ghost_t *kr_region_ghosts(const kr_region_t *r, int32_t x, int32_t y, size_t *count)
{
    *count = 0;
    /* Sorted on the first look of the step: a kind that never reads its
     * halo (walkers) never pays for sorting it. The region is the
     * simulator's own; only this cache changes. */
    if (!r->ghosts_ready) {
        kr_region_t *mut = (kr_region_t *)r;
        if (ghosts_prepare(mut)) {
            kr__model_fail(kr_sim_model(mut->sim), kr_last_status(), "region '%s': %s", kr_sim_name(mut->sim),
                           kr_last_error());
            return NULL;
        }
    }
    size_t lo = 0, hi = r->ghost_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kr_region_ghost_t *g = &r->ghosts[mid];
        if (g->y < y || (g->y == y && g->x < x)) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < r->ghost_count && r->ghosts[end].x == x && r->ghosts[end].y == y) end++;
    *count = end - lo;
    return end > lo ? &r->ghosts[lo] : NULL;
}

/* Adds a ghost for the next step to this region's halo. */
kr_status_t kr__region_ghost_add(kr_region_t *r, uint64_t id, int32_t x, int32_t y, const void *bytes)
{
    if (r->ghost_count == r->ghost_cap && KR__GROW(r->ghost_recs, r->ghost_cap, r->ghost_count + 1, 256, NULL))
        return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the halo", r->index);
    r->ghost_recs[r->ghost_count++] = (kr__region_ghost_rec_t){ id, x, y, r->ghost_bytes.len };
    r->ghosts_ready = false;
    return kr_buf_append(&r->ghost_bytes, bytes, r->desc.ghost_size);
}
