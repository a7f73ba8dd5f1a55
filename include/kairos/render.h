/* Render data: what a simulator's world looks like, for the frames that
 * `kairos run --frames` records and `kairos view` / `kairos frames --png`
 * draw (docs/viewer.md).
 *
 * A kind declares, in its setup:
 *
 *  - layers: every entity of the simulator's world that has the layer's
 *    component is drawn with the layer's style (shape, size, colour) at
 *    its position in the spatial hash. A layer may instead compute each
 *    entity's place and style with a callback (an entity on a path, a
 *    colour by state). An entity that has the built-in render component
 *    (kr_render_component) is drawn with that style and label.
 *  - fields: a scalar per grid cell, drawn with a colour map over a range
 *    (regions: kr_region_render_field in kairos/region.h).
 *
 * Render data is read only at frame times and never changes a result: a
 * run with frames executes the same events as one without. The model
 * file's entry may restyle any layer or field by name ("render"). */
#ifndef KAIROS_RENDER_H
#define KAIROS_RENDER_H

#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/model.h"
#include "kairos/registry.h"
#include "kairos/sim.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef enum kr_shape {
    KR_SHAPE_CIRCLE,
    KR_SHAPE_SQUARE,
    KR_SHAPE_TRIANGLE,
    KR_SHAPE_DIAMOND,
    KR_SHAPE_COUNT
} kr_shape_t;

/* Colours are 0xRRGGBBAA. */
#define KR_RGB(r, g, b) (((uint32_t)(r) << 24) | ((uint32_t)(g) << 16) | ((uint32_t)(b) << 8) | 0xffu)

/* The built-in render component: an entity's own style. */
typedef struct kr_render {
    uint32_t colour;          /* 0xRRGGBBAA */
    float size;               /* diameter in world units; 0: the layer's */
    uint8_t shape;            /* kr_shape_t */
    char label[11];           /* optional, NUL-terminated; "" for none */
} kr_render_t;

/* The render component's id in the model's registry ("kairos.render"),
 * registered on the first call. Call it from the kind's register_types,
 * so that every rank registers it in the same order. KR_COMPONENT_NONE
 * on failure. */
KR_API kr_component_t kr_render_component(kr_model_t *model);

/* What a layer draws of one entity: filled with the layer's style and the
 * entity's spatial position (0, 0 when it has none) before the layer's
 * callback, which may change any of it. */
typedef struct kr_render_agent {
    double x, y;
    uint64_t id;              /* the order of drawing within the layer */
    uint32_t colour;
    double size;
    kr_shape_t shape;
    char label[32];
    bool hidden;              /* true: not drawn */
} kr_render_agent_t;

typedef void (*kr_render_agent_fn)(kr_sim_t *sim, kr_entity_t e, const void *component, kr_render_agent_t *agent,
                                   void *arg);

typedef struct kr_render_layer_desc {
    const char *name;         /* unique among the simulator's layers and fields; required */
    kr_component_t component; /* the entities drawn; required */
    kr_shape_t shape;
    uint32_t colour;          /* 0xRRGGBBAA; 0 is taken as opaque black */
    double size;              /* diameter in world units; 0: 1 */
    kr_render_agent_fn agent; /* optional: place and style one entity */
    void *arg;
} kr_render_layer_desc_t;

/* Declares a layer, drawn over the layers declared before it. */
KR_API kr_status_t kr_render_layer(kr_sim_t *sim, const kr_render_layer_desc_t *desc);

/* Writes the field's values for the cells the simulator records
 * (width x height, row by row). */
typedef void (*kr_render_sample_fn)(kr_sim_t *sim, float *values, void *arg);

typedef struct kr_render_field_desc {
    const char *name;         /* unique among the simulator's layers and fields; required */
    /* The world's grid: grid_width x grid_height cells of side `cell`
     * (0: 1) whose first corner is at (origin_x, origin_y). */
    uint32_t grid_width, grid_height;
    double cell, origin_x, origin_y;
    /* The cells this simulator records: x0 .. x0+width-1, y0 .. y0+height-1
     * (all of them when width and height are 0). */
    int32_t x0, y0;
    uint32_t width, height;
    /* "viridis" (NULL), "magma", "greys", "greens", "blues", "reds" */
    const char *colormap;
    double min, max;          /* the range the colour map spans; min < max */
    kr_render_sample_fn sample; /* required */
    void *arg;
} kr_render_field_desc_t;

/* Declares a field, drawn under every layer. */
KR_API kr_status_t kr_render_field(kr_sim_t *sim, const kr_render_field_desc_t *desc);

/* The rectangle the world is drawn in, x0 < x1, y0 < y1 (by default the
 * spatial hash's bounds, else the fields' grid, else the agents' extent). */
KR_API kr_status_t kr_render_bounds(kr_sim_t *sim, double x0, double y0, double x1, double y1);

KR_END_DECLS

#endif
