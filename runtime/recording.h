/* Reading a recording of frames (docs/viewer.md): the folder's
 * manifest.json and each simulator's NAME.frames, checked when opened and
 * indexed by their block headers; a world's frame is decompressed and
 * merged over its simulators only when asked for. Used by `kairos frames`
 * (the pictures) and `kairos view` (the viewer's data API). Not public API. */
#ifndef KAIROS_RUNTIME_RECORDING_H
#define KAIROS_RUNTIME_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

/* Shapes as the frame files code them. */
enum { KR__SHAPE_CIRCLE, KR__SHAPE_SQUARE, KR__SHAPE_TRIANGLE, KR__SHAPE_DIAMOND, KR__SHAPE_COUNT };

#define KR__COLORMAP_MAX_STOPS 16

/* Colours are packed as a little-endian machine reads the bytes R, G, B, A:
 * 0xAABBGGRR. */
typedef struct kr__rec_layer {
    char *name;
    uint8_t shape;
    uint32_t rgba;
    double size;                 /* diameter, world units */
} kr__rec_layer_t;

typedef struct kr__rec_field {
    char *name;
    uint32_t stops[KR__COLORMAP_MAX_STOPS];
    uint32_t stop_count;         /* 2 to 16 */
    double min, max;
} kr__rec_field_t;

/* Where one frame's block lies in a simulator's file. */
typedef struct kr__rec_block {
    uint64_t offset;             /* of the zstd frame */
    uint32_t agents, pieces, label_bytes, packed, raw;
} kr__rec_block_t;

typedef struct kr__rec_sim {
    char *name;
    int rank;
    bool has_rect;
    int32_t rect[4];             /* cells [x0, y0, x1, y1), when has_rect */
    char *path;                  /* DIR/FILE */
    kr__rec_block_t *blocks;     /* one per frame */
} kr__rec_sim_t;

typedef struct kr__rec_world {
    char *name;
    double bounds[4];            /* x0, y0, x1, y1 */
    bool has_grid;
    uint32_t grid_width, grid_height;
    double cell, origin[2];
    kr__rec_layer_t *layers;
    size_t layer_count;
    kr__rec_field_t *fields;
    size_t field_count;
    kr__rec_sim_t *sims;
    size_t sim_count;
} kr__rec_world_t;

/* An open recording: read its fields, change none. */
typedef struct kr__recording {
    char *dir;
    double *times;               /* every frame's model time, increasing */
    size_t frame_count;
    uint32_t first_frame;        /* the number of frame 0 in the files' blocks (manifest first_frame) */
    char *series;                /* the series file's name in dir, or NULL */
    kr__rec_world_t *worlds;
    size_t world_count;
} kr__recording_t;

/* One world's frame, merged over its simulators. Agents are sorted by
 * (layer, id), the order in which they are drawn; labels by agent. */
typedef struct kr__frame {
    double time;
    uint32_t n;                  /* agents */
    uint64_t *id;
    float *x, *y, *size;
    uint32_t *rgba;
    uint8_t *shape, *layer;
    uint32_t label_count;
    uint32_t *label_agent;       /* index into the agents above */
    uint32_t *label_length;
    const char **label;          /* label_length[i] bytes, no NUL */
    uint32_t field_count, grid_width, grid_height;
    float *fields;               /* [field][grid_height][grid_width], NaN where no simulator recorded */
    void *storage;               /* what the arrays point into */
} kr__frame_t;

/* Opens the recording in the folder dir: reads and checks manifest.json,
 * and every simulator file's header and block headers (nothing is
 * decompressed). KR_ERR_IO when the folder or a file cannot be read,
 * KR_ERR_CORRUPT when something does not fit the format; one line naming
 * the file, what was expected and what was found (kr_last_error). */
kr_status_t kr__recording_open(const char *dir, kr__recording_t **out);
void kr__recording_close(kr__recording_t *rec);

/* The index of the world with that name, or -1. */
long kr__recording_world_named(const kr__recording_t *rec, const char *name);

/* Reads frame `index` of world `world` from its simulators' files into
 * *out (to be freed with kr__frame_fini, also after a failure).
 * KR_ERR_CORRUPT when a block does not decompress or its contents do not
 * fit the manifest; KR_ERR_IO when a file cannot be read. */
kr_status_t kr__recording_load(const kr__recording_t *rec, size_t world, size_t index, kr__frame_t *out);
void kr__frame_fini(kr__frame_t *f);

/* A field value's colour: the stops spread evenly over [min, max], each
 * channel interpolated linearly between the two stops around the value and
 * rounded to the nearest whole number (halves up); at or below min the
 * first stop, at or above max the last (min == max: the first up to min,
 * the last above). NaN gives 0 (transparent). */
uint32_t kr__colormap(const uint32_t *stops, uint32_t stop_count, double min, double max, double value);

#endif
