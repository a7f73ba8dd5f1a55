/* A region's field as render data (kairos/render.h): each region records
 * its own cells of the world's grid, and the pieces fit together again
 * when the frames are read, whatever the cut. */
#include <stdint.h>
#include "base/error.h"
#include "regions/region_private.h"

/* The layer's own cells as of the last step (the stored cells hold the
 * halo too, which belongs to the neighbours' pieces). */
static void sample_own_cells(kr_sim_t *sim, float *values, void *arg)
{
    const kr_region_t *r = kr_region_of(sim);
    uint32_t layer = (uint32_t)(uintptr_t)arg;
    const double *v = kr_region_field(r, layer);
    kr_rect_t own = r->own;
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++)
            *values++ = (float)v[kr_region_field_index(r, x, y)];
}

kr_status_t kr_region_render_field(kr_region_t *r, uint32_t layer, const char *name, const char *colormap,
                                   double min, double max)
{
    if (!r || layer >= r->desc.fields)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_region_render_field '%s': no such field layer", name ? name : "");
    return kr_render_field(r->sim, &(kr_render_field_desc_t){ .name = name,
        .grid_width = (uint32_t)r->grid.width, .grid_height = (uint32_t)r->grid.height, .cell = 1,
        .x0 = r->own.x0, .y0 = r->own.y0, .width = (uint32_t)(r->own.x1 - r->own.x0),
        .height = (uint32_t)(r->own.y1 - r->own.y0), .colormap = colormap, .min = min, .max = max,
        .sample = sample_own_cells, .arg = (void *)(uintptr_t)layer });
}
