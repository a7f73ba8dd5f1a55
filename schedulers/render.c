/* Render data (kairos/render.h): the layers and fields a simulator
 * declares, kept on the simulator until the frames recorder reads them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "schedulers/model_private.h"
#include "schedulers/render.h"

#define RENDER_COMPONENT "kairos.render"

/* Stops spread evenly over a field's range (docs/viewer.md). The
 * sequential maps follow ColorBrewer's and matplotlib's published ramps. */
static const struct colormap {
    const char *name;
    uint32_t count;
    uint32_t stops[5];
} colormaps[] = {
    { "viridis", 5, { 0x440154ffu, 0x3b528bffu, 0x21918cffu, 0x5ec962ffu, 0xfde725ffu } },
    { "magma", 5, { 0x000004ffu, 0x51127cffu, 0xb73779ffu, 0xfc8961ffu, 0xfcfdbfffu } },
    { "greys", 2, { 0xffffffffu, 0x000000ffu } },
    { "greens", 3, { 0xf7fcf5ffu, 0x74c476ffu, 0x00441bffu } },
    { "blues", 3, { 0xf7fbffffu, 0x6baed6ffu, 0x08306bffu } },
    { "reds", 3, { 0xfff5f0ffu, 0xfb6a4affu, 0x67000dffu } },
};

static const char *const shape_names[KR_SHAPE_COUNT] = { "circle", "square", "triangle", "diamond" };

const uint32_t *kr__render_colormap(const char *name, uint32_t *count)
{
    for (size_t i = 0; i < sizeof colormaps / sizeof *colormaps; i++)
        if (!strcmp(colormaps[i].name, name)) {
            *count = colormaps[i].count;
            return colormaps[i].stops;
        }
    return NULL;
}

const char *kr__render_colormap_names(void) { return "viridis, magma, greys, greens, blues or reds"; }

const char *kr__render_shape_name(kr_shape_t s) { return (unsigned)s < KR_SHAPE_COUNT ? shape_names[s] : "?"; }

int kr__render_shape_from_name(const char *name)
{
    for (int i = 0; i < KR_SHAPE_COUNT; i++)
        if (!strcmp(shape_names[i], name)) return i;
    return -1;
}

kr_component_t kr_render_component(kr_model_t *model)
{
    if (!model) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_render_component: no model");
        return KR_COMPONENT_NONE;
    }
    kr_registry_t *reg = kr_model_registry(model);
    kr_component_t c = kr_component_lookup(reg, RENDER_COMPONENT);
    if (c != KR_COMPONENT_NONE) return c;
    return kr_component_register(reg, &(kr_component_desc_t){ .name = RENDER_COMPONENT, .size = sizeof(kr_render_t) });
}

const kr__render_t *kr__render_of(const kr_sim_t *sim) { return sim->render; }

/* The simulator's render data, made on first use. */
kr__render_t *kr__render_of_mut(kr_sim_t *sim)
{
    if (!sim->render) {
        sim->render = calloc(1, sizeof *sim->render);
        if (!sim->render) return NULL;
        sim->render->own = kr_component_lookup(kr_model_registry(sim->model), RENDER_COMPONENT);
    }
    return sim->render;
}

void kr__render_free(kr__render_t *r)
{
    if (!r) return;
    for (uint32_t i = 0; i < r->layer_count; i++) free(r->layers[i].name);
    for (uint32_t i = 0; i < r->field_count; i++) free(r->fields[i].name);
    free(r->layers);
    free(r->fields);
    free(r);
}

/* A name no other layer or field of the simulator has. */
static kr_status_t check_name(const kr_sim_t *sim, const char *what, const char *name)
{
    if (!name || !name[0] || strlen(name) > 64)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: simulator '%s': a name of 1 to 64 characters is required", what,
                        sim->name);
    const kr__render_t *r = sim->render;
    for (uint32_t i = 0; r && i < r->layer_count; i++)
        if (!strcmp(r->layers[i].name, name))
            return kr__fail(KR_ERR_EXISTS, "%s: simulator '%s' has a layer '%s' already", what, sim->name, name);
    for (uint32_t i = 0; r && i < r->field_count; i++)
        if (!strcmp(r->fields[i].name, name))
            return kr__fail(KR_ERR_EXISTS, "%s: simulator '%s' has a field '%s' already", what, sim->name, name);
    return KR_OK;
}

/* *items holds `count` items of `size` bytes after it (realloc); false
 * when memory is short (*items unchanged). */
static bool grow(void **items, uint32_t count, size_t size)
{
    void *more = realloc(*items, count * size);
    if (more) *items = more;
    return more != NULL;
}

kr_status_t kr_render_layer(kr_sim_t *sim, const kr_render_layer_desc_t *desc)
{
    if (!sim || !desc) return kr__fail(KR_ERR_INVALID_ARG, "kr_render_layer: no simulator or no description");
    kr_status_t st = check_name(sim, "kr_render_layer", desc->name);
    if (st) return st;
    if (!kr_component_info(kr_model_registry(sim->model), desc->component))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_layer '%s': simulator '%s': the component is not registered",
                        desc->name, sim->name);
    if ((unsigned)desc->shape >= KR_SHAPE_COUNT || !(desc->size >= 0) || !isfinite(desc->size))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_layer '%s': simulator '%s': a shape and a size >= 0 are required",
                        desc->name, sim->name);
    if (desc->component == kr_component_lookup(kr_model_registry(sim->model), RENDER_COMPONENT))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_layer '%s': simulator '%s': a layer draws a component of the "
                        "kind's own; the render component only restyles", desc->name, sim->name);
    kr__render_t *r = kr__render_of_mut(sim);
    char *name = r ? strdup(desc->name) : NULL;
    if (!name || !grow((void **)&r->layers, r->layer_count + 1, sizeof *r->layers)) {
        free(name);
        return kr__fail(KR_ERR_NOMEM, "kr_render_layer: out of memory");
    }
    r->layers[r->layer_count++] = (kr__render_layer_t){ .name = name, .component = desc->component,
        .shape = desc->shape, .colour = desc->colour ? desc->colour : 0x000000ffu,
        .size = desc->size > 0 ? desc->size : 1, .agent = desc->agent, .arg = desc->arg };
    return KR_OK;
}

kr_status_t kr_render_field(kr_sim_t *sim, const kr_render_field_desc_t *desc)
{
    if (!sim || !desc) return kr__fail(KR_ERR_INVALID_ARG, "kr_render_field: no simulator or no description");
    kr_status_t st = check_name(sim, "kr_render_field", desc->name);
    if (st) return st;
    const char *map = desc->colormap ? desc->colormap : "viridis";
    uint32_t stops;
    if (!kr__render_colormap(map, &stops))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_field '%s': simulator '%s': expected a colour map (%s), found "
                        "'%s'", desc->name, sim->name, kr__render_colormap_names(), map);
    uint32_t w = desc->width ? desc->width : desc->grid_width, h = desc->height ? desc->height : desc->grid_height;
    double cell = desc->cell > 0 ? desc->cell : 1;
    bool inside = desc->x0 >= 0 && desc->y0 >= 0 && (uint64_t)desc->x0 + w <= desc->grid_width &&
                  (uint64_t)desc->y0 + h <= desc->grid_height;
    if (!desc->sample || !desc->grid_width || !desc->grid_height || !w || !h || !inside ||
        (uint64_t)desc->grid_width * desc->grid_height > (1u << 30) || !isfinite(cell) ||
        !isfinite(desc->origin_x) || !isfinite(desc->origin_y))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_field '%s': simulator '%s': expected a sample callback and a "
                        "grid of at most 2^30 cells holding the recorded cells", desc->name, sim->name);
    if (!(desc->min < desc->max) || !isfinite(desc->min) || !isfinite(desc->max))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_field '%s': simulator '%s': expected a range min < max, found "
                        "[%g, %g]", desc->name, sim->name, desc->min, desc->max);
    kr__render_t *r = kr__render_of_mut(sim);
    char *name = r ? strdup(desc->name) : NULL;
    if (!name || !grow((void **)&r->fields, r->field_count + 1, sizeof *r->fields)) {
        free(name);
        return kr__fail(KR_ERR_NOMEM, "kr_render_field: out of memory");
    }
    const char *known = NULL;
    for (size_t i = 0; i < sizeof colormaps / sizeof *colormaps; i++)
        if (!strcmp(colormaps[i].name, map)) known = colormaps[i].name;
    r->fields[r->field_count++] = (kr__render_field_t){ .name = name, .grid_width = desc->grid_width,
        .grid_height = desc->grid_height, .cell = cell, .origin_x = desc->origin_x, .origin_y = desc->origin_y,
        .x0 = desc->x0, .y0 = desc->y0, .width = w, .height = h, .colormap = known, .min = desc->min,
        .max = desc->max, .sample = desc->sample, .arg = desc->arg };
    return KR_OK;
}

kr_status_t kr_render_bounds(kr_sim_t *sim, double x0, double y0, double x1, double y1)
{
    if (!sim || !(x0 < x1) || !(y0 < y1) || !isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_render_bounds: expected x0 < x1 and y0 < y1, finite");
    kr__render_t *r = kr__render_of_mut(sim);
    if (!r) return kr__fail(KR_ERR_NOMEM, "kr_render_bounds: out of memory");
    r->has_bounds = true;
    r->bounds[0] = x0;
    r->bounds[1] = y0;
    r->bounds[2] = x1;
    r->bounds[3] = y1;
    return KR_OK;
}
