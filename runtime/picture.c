/* Drawing a frame into pixels. Everything is decided at pixel centres and
 * in a fixed order, so that the same frame gives the same bytes however
 * many ranks recorded it: white, the first field's cells, then the agents
 * in (layer, id) order, each colour laid over what is below by its alpha. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/picture.h"

#define MAX_SIDE KR__PICTURE_MAX_SIDE
#define MAX_DEFAULT_SIDE 1024

uint32_t kr__picture_default_scale(const kr__rec_world_t *w)
{
    double longer = fmax(w->bounds[2] - w->bounds[0], w->bounds[3] - w->bounds[1]);
    double s = floor(MAX_DEFAULT_SIDE / longer);
    return s < 1 ? 1 : s > MAX_SIDE ? MAX_SIDE : (uint32_t)s;
}

static uint32_t side(double extent, uint32_t scale)
{
    double px = ceil(extent * scale);
    return px < 1 ? 1 : px > MAX_SIDE + 1 ? MAX_SIDE + 1 : (uint32_t)px;
}

void kr__picture_size(const kr__rec_world_t *w, uint32_t scale, uint32_t *width, uint32_t *height)
{
    *width = side(w->bounds[2] - w->bounds[0], scale);
    *height = side(w->bounds[3] - w->bounds[1], scale);
}

/* Lays colour rgba (0xAABBGGRR) over the opaque pixel p. */
static void blend(uint8_t *p, uint32_t rgba)
{
    uint32_t a = rgba >> 24;
    for (int c = 0; c < 3; c++) {
        uint32_t src = rgba >> (8 * c) & 0xff;
        p[c] = (uint8_t)((src * a + p[c] * (255 - a) + 127) / 255);
    }
    p[3] = 255;
}

static void draw_field(const kr__rec_world_t *w, const kr__frame_t *f, uint32_t scale, kr__picture_t *pic)
{
    const kr__rec_field_t *field = &w->fields[0];
    for (uint32_t py = 0; py < pic->height; py++) {
        double wy = w->bounds[1] + (py + 0.5) / scale;
        double cy = floor((wy - w->origin[1]) / w->cell);
        if (cy < 0 || cy >= f->grid_height) continue;
        for (uint32_t px = 0; px < pic->width; px++) {
            double wx = w->bounds[0] + (px + 0.5) / scale;
            double cx = floor((wx - w->origin[0]) / w->cell);
            if (cx < 0 || cx >= f->grid_width) continue;
            float v = f->fields[(size_t)cy * f->grid_width + (size_t)cx];
            if (isnan(v)) continue;
            blend(pic->rgba + ((size_t)py * pic->width + px) * 4,
                  kr__colormap(field->stops, field->stop_count, field->min, field->max, v));
        }
    }
}

/* Whether the pixel centre at (dx, dy) from the shape's centre is inside a
 * shape of radius r. A square is half-open, so that a square of a whole
 * number of pixels covers exactly that many. */
static bool inside(uint8_t shape, double dx, double dy, double r)
{
    switch (shape) {
    case KR__SHAPE_SQUARE: return dx >= -r && dx < r && dy >= -r && dy < r;
    case KR__SHAPE_TRIANGLE: return dy >= -r && dy <= r && fabs(dx) <= (dy + r) / 2; /* apex at the top */
    case KR__SHAPE_DIAMOND: return fabs(dx) + fabs(dy) <= r;
    default: return dx * dx + dy * dy <= r * r;
    }
}

static void draw_agent(const kr__rec_world_t *w, const kr__frame_t *f, uint32_t i, uint32_t scale, kr__picture_t *pic)
{
    double cx = (f->x[i] - w->bounds[0]) * scale, cy = (f->y[i] - w->bounds[1]) * scale;
    double r = fmax(f->size[i] * scale, 1) / 2;
    if (!isfinite(cx) || !isfinite(cy) || !isfinite(r)) return;
    double x0 = fmax(floor(cx - r), 0), x1 = fmin(ceil(cx + r), pic->width - 1.0);
    double y0 = fmax(floor(cy - r), 0), y1 = fmin(ceil(cy + r), pic->height - 1.0);
    bool any = false;
    for (double py = y0; py <= y1; py++)
        for (double px = x0; px <= x1; px++)
            if (inside(f->shape[i], px + 0.5 - cx, py + 0.5 - cy, r)) {
                blend(pic->rgba + ((size_t)py * pic->width + (size_t)px) * 4, f->rgba[i]);
                any = true;
            }
    /* a shape too small to cover a pixel centre still shows: the pixel
     * under its centre */
    if (!any && cx >= 0 && cy >= 0 && cx < pic->width && cy < pic->height)
        blend(pic->rgba + ((size_t)cy * pic->width + (size_t)cx) * 4, f->rgba[i]);
}

kr_status_t kr__picture_draw(const kr__rec_world_t *w, const kr__frame_t *f, uint32_t scale, kr__picture_t *out)
{
    memset(out, 0, sizeof *out);
    kr__picture_size(w, scale, &out->width, &out->height);
    if (out->width > MAX_SIDE || out->height > MAX_SIDE)
        return kr__fail(KR_ERR_INVALID_ARG, "--scale: expected a picture of at most %d pixels a side, found %.0f x "
                        "%.0f at %u pixels per unit", MAX_SIDE, ceil((w->bounds[2] - w->bounds[0]) * scale),
                        ceil((w->bounds[3] - w->bounds[1]) * scale), scale);
    size_t bytes = (size_t)out->width * out->height * 4;
    if (!(out->rgba = malloc(bytes))) return kr__fail(KR_ERR_NOMEM, "out of memory (a picture of %zu bytes)", bytes);
    memset(out->rgba, 0xff, bytes);
    if (w->field_count && f->field_count) draw_field(w, f, scale, out);
    for (uint32_t i = 0; i < f->n; i++) draw_agent(w, f, i, scale, out);
    return KR_OK;
}

void kr__picture_fini(kr__picture_t *p)
{
    free(p->rgba);
    memset(p, 0, sizeof *p);
}
