/* The model file's "render" on a simulator entry (docs/viewer.md):
 * restyles the layers and fields the kind declared, by name. Checked
 * where the simulator is built, after its setup declared them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/model_file.h"
#include "schedulers/render.h"

/* "#rrggbb" or "#rrggbbaa" as 0xRRGGBBAA. */
static bool parse_colour(const char *s, uint32_t *out)
{
    size_t n = strlen(s);
    if (s[0] != '#' || (n != 7 && n != 9) || strspn(s + 1, "0123456789abcdefABCDEF") != n - 1) return false;
    unsigned long v = strtoul(s + 1, NULL, 16);
    *out = n == 7 ? (uint32_t)(v << 8 | 0xffu) : (uint32_t)v;
    return true;
}

/* Writes the JSON path of style key `key` under `at` into path; false
 * (with the message) when it is none of `keys`. */
static bool style_key(const kr__model_file_t *f, const char *at, const char *key, const json_t *v,
                      const char *const *keys, const char *expected, char *path, size_t cap)
{
    snprintf(path, cap, "%s.%s", at, key);
    for (int i = 0; keys[i]; i++)
        if (!strcmp(keys[i], key)) return true;
    kr__input_error(f->path, path, expected, v);
    return false;
}

static kr_status_t restyle_layer(const kr__model_file_t *f, const char *at, kr__render_layer_t *l, json_t *style)
{
    static const char *const keys[] = { "shape", "colour", "size", NULL };
    char path[600];
    const char *key;
    json_t *v;
    json_object_foreach(style, key, v) {
        if (!style_key(f, at, key, v, keys, "shape, colour or size (a layer's style)", path, sizeof path))
            return KR_ERR_INVALID_ARG;
        if (!strcmp(key, "shape")) {
            int s = json_is_string(v) ? kr__render_shape_from_name(json_string_value(v)) : -1;
            if (s < 0) return kr__input_error(f->path, path, "circle, square, triangle or diamond", v);
            l->shape = (kr_shape_t)s;
        } else if (!strcmp(key, "colour")) {
            if (!json_is_string(v) || !parse_colour(json_string_value(v), &l->colour))
                return kr__input_error(f->path, path, "a colour \"#rrggbb\" or \"#rrggbbaa\"", v);
        } else {
            double size = json_is_number(v) ? json_number_value(v) : -1;
            /* (frames hold sizes as 32-bit floats: a larger one was stored as
             * infinity, and its layer vanished from every picture) */
            if (!(size >= FLT_MIN) || !(size <= FLT_MAX))
                return kr__input_error(f->path, path, "a size > 0 (world units) from 1.2e-38 to 3.4e38", v);
            l->size = size;
        }
    }
    return KR_OK;
}

static kr_status_t restyle_field(const kr__model_file_t *f, const char *at, kr__render_field_t *fd, json_t *style)
{
    static const char *const keys[] = { "colormap", "min", "max", NULL };
    char path[600];
    const char *key;
    json_t *v;
    double min = fd->min, max = fd->max;
    json_object_foreach(style, key, v) {
        if (!style_key(f, at, key, v, keys, "colormap, min or max (a field's style)", path, sizeof path))
            return KR_ERR_INVALID_ARG;
        if (!strcmp(key, "colormap")) {
            uint32_t stops;
            char expected[128];
            snprintf(expected, sizeof expected, "a colour map: %s", kr__render_colormap_names());
            if (!json_is_string(v) || !kr__render_colormap(json_string_value(v), &stops))
                return kr__input_error(f->path, path, expected, v);
            /* the name stays valid as long as the tree: the file's */
            fd->colormap = json_string_value(v);
        } else {
            if (!json_is_number(v) || !isfinite(json_number_value(v)))
                return kr__input_error(f->path, path, "a number", v);
            *(strcmp(key, "min") ? &max : &min) = json_number_value(v);
        }
    }
    if (!(min < max)) {
        snprintf(path, sizeof path, "%s", at);
        return kr__input_error(f->path, path, "a range with min < max", style);
    }
    fd->min = min;
    fd->max = max;
    return KR_OK;
}

kr_status_t kr__render_restyle(const kr__model_file_t *f, const kr__sim_entry_t *e, kr_sim_t *sim)
{
    json_t *entry = json_array_get(json_object_get(f->root, "simulators"), e->index);
    json_t *render = json_object_get(entry, "render");
    if (!render) return KR_OK;
    kr__render_t *r = kr__render_of_mut(sim);
    if (!r) return kr__fail(KR_ERR_NOMEM, "out of memory");
    const char *name;
    json_t *style;
    char at[512];
    json_object_foreach(render, name, style) {
        snprintf(at, sizeof at, "simulators[%zu].render.%s", e->index, name);
        kr__render_layer_t *layer = NULL;
        kr__render_field_t *field = NULL;
        for (uint32_t i = 0; i < r->layer_count; i++)
            if (!strcmp(r->layers[i].name, name)) layer = &r->layers[i];
        for (uint32_t i = 0; i < r->field_count; i++)
            if (!strcmp(r->fields[i].name, name)) field = &r->fields[i];
        if (!layer && !field) {
            char expected[512];
            size_t n = (size_t)snprintf(expected, sizeof expected, "a layer or field of kind %s (", e->kind);
            for (uint32_t i = 0; i < r->layer_count && n < sizeof expected; i++)
                n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", i ? ", " : "", r->layers[i].name);
            for (uint32_t i = 0; i < r->field_count && n < sizeof expected; i++)
                n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", i || r->layer_count ? ", " : "",
                                      r->fields[i].name);
            if (!r->layer_count && !r->field_count && n < sizeof expected)
                n += (size_t)snprintf(expected + n, sizeof expected - n, "it draws nothing");
            if (n < sizeof expected) snprintf(expected + n, sizeof expected - n, ")");
            json_t *found = json_string(name);
            kr_status_t st = kr__input_error(f->path, at, expected, found);
            json_decref(found);
            return st;
        }
        if (!json_is_object(style)) return kr__input_error(f->path, at, "an object (a style)", style);
        kr_status_t st = layer ? restyle_layer(f, at, layer, style) : restyle_field(f, at, field, style);
        if (st) return st;
    }
    return KR_OK;
}
