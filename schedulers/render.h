/* A simulator's render data (kairos/render.h) as the frames recorder
 * (runtime/frames.c) and the model file's "render" restyling read it.
 * Not public API. */
#ifndef KAIROS_SCHEDULERS_RENDER_H
#define KAIROS_SCHEDULERS_RENDER_H

#include <stdbool.h>
#include "kairos/render.h"

typedef struct kr__render_layer {
    char *name;
    kr_component_t component;
    kr_shape_t shape;
    uint32_t colour;
    double size;
    kr_render_agent_fn agent;
    void *arg;
} kr__render_layer_t;

typedef struct kr__render_field {
    char *name;
    uint32_t grid_width, grid_height;
    double cell, origin_x, origin_y;
    int32_t x0, y0;
    uint32_t width, height;
    const char *colormap;        /* a name kr__render_colormap knows */
    double min, max;
    kr_render_sample_fn sample;
    void *arg;
} kr__render_field_t;

typedef struct kr__render {
    kr__render_layer_t *layers;
    uint32_t layer_count;
    kr__render_field_t *fields;
    uint32_t field_count;
    bool has_bounds;
    double bounds[4];
    kr_component_t own;          /* the render component, KR_COMPONENT_NONE when not registered */
} kr__render_t;

/* The simulator's render data, NULL when it declared none. */
const kr__render_t *kr__render_of(const kr_sim_t *sim);
kr__render_t *kr__render_of_mut(kr_sim_t *sim);
void kr__render_free(kr__render_t *r);

/* A colour map's stops, 0xRRGGBBAA, by name; NULL for an unknown name.
 * *count is 2 to 16. */
const uint32_t *kr__render_colormap(const char *name, uint32_t *count);
/* The names kr__render_colormap knows, for messages: "viridis, magma, …". */
const char *kr__render_colormap_names(void);
const char *kr__render_shape_name(kr_shape_t s);
/* kr_shape_t by name; -1 for an unknown one. */
int kr__render_shape_from_name(const char *name);

#endif
