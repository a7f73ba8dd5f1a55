/* The geometry of a cut world: the cells each region owns and the cells it
 * stores (its own rectangle and the halo around it, clipped to the world),
 * the region owning a cell, a region's neighbours. Plain arithmetic on a
 * kr_region_grid_t, no simulator needed: model-file checks and tests use it
 * as well as the regions. docs/regions.md, "Geometry". */
#include <stdint.h>
#include "base/error.h"
#include "regions/region_private.h"

kr_status_t kr_region_grid_check(const kr_region_grid_t *g)
{
    if (g->width < 1 || g->height < 1 || g->width > KR_REGION_MAX_SIDE || g->height > KR_REGION_MAX_SIDE)
        return kr__fail(KR_ERR_INVALID_ARG, "a region grid of %d x %d cells: expected 1 to %d cells a side", g->width,
                        g->height, KR_REGION_MAX_SIDE);
    if (g->cols < 1 || g->rows < 1 || (uint64_t)g->cols * g->rows > KR_REGION_MAX)
        return kr__fail(KR_ERR_INVALID_ARG, "a cut into %u x %u regions: expected at least 1 x 1 and at most %u "
                        "regions", g->cols, g->rows, KR_REGION_MAX);
    if (g->cols > (uint32_t)g->width || g->rows > (uint32_t)g->height)
        return kr__fail(KR_ERR_INVALID_ARG, "a cut into %u x %u regions of a %d x %d grid: expected at most one "
                        "region per cell", g->cols, g->rows, g->width, g->height);
    return KR_OK;
}

uint32_t kr_region_grid_count(const kr_region_grid_t *g) { return g->cols * g->rows; }

static int32_t cut_at(int32_t size, uint32_t parts, uint32_t i)
{
    return (int32_t)((int64_t)i * size / parts);
}

kr_rect_t kr_region_grid_rect(const kr_region_grid_t *g, uint32_t i)
{
    uint32_t c = i % g->cols, r = i / g->cols;
    return (kr_rect_t){ cut_at(g->width, g->cols, c), cut_at(g->height, g->rows, r),
                        cut_at(g->width, g->cols, c + 1), cut_at(g->height, g->rows, r + 1) };
}

static int32_t clamp32(int64_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : (int32_t)v; }

kr_rect_t kr_region_grid_stored(const kr_region_grid_t *g, uint32_t i)
{
    kr_rect_t r = kr_region_grid_rect(g, i);
    int64_t k = g->halo;
    return (kr_rect_t){ clamp32(r.x0 - k, 0, g->width), clamp32(r.y0 - k, 0, g->height),
                        clamp32(r.x1 + k, 0, g->width), clamp32(r.y1 + k, 0, g->height) };
}

uint32_t kr_region_grid_owner(const kr_region_grid_t *g, int32_t x, int32_t y)
{
    if (x < 0 || y < 0 || x >= g->width || y >= g->height) return UINT32_MAX;
    /* the column c with c*W/P <= x < (c+1)*W/P */
    uint32_t c = (uint32_t)((((int64_t)x + 1) * g->cols - 1) / g->width);
    uint32_t r = (uint32_t)((((int64_t)y + 1) * g->rows - 1) / g->height);
    return r * g->cols + c;
}

size_t kr_region_grid_neighbours(const kr_region_grid_t *g, uint32_t i, uint32_t out[8])
{
    int64_t c = i % g->cols, r = i / g->cols;
    size_t n = 0;
    for (int64_t dr = -1; dr <= 1; dr++)
        for (int64_t dc = -1; dc <= 1; dc++) {
            int64_t cc = c + dc, rr = r + dr;
            if ((!dc && !dr) || cc < 0 || rr < 0 || cc >= g->cols || rr >= g->rows) continue;
            out[n++] = (uint32_t)(rr * g->cols + cc);
        }
    return n; /* row-major scan: increasing order */
}

kr_rect_t kr__region_rect_meet(kr_rect_t a, kr_rect_t b)
{
    kr_rect_t r = { a.x0 > b.x0 ? a.x0 : b.x0, a.y0 > b.y0 ? a.y0 : b.y0, a.x1 < b.x1 ? a.x1 : b.x1,
                    a.y1 < b.y1 ? a.y1 : b.y1 };
    if (r.x1 < r.x0) r.x1 = r.x0;
    if (r.y1 < r.y0) r.y1 = r.y0;
    return r;
}
