/* Drawing one world's frame as a picture of RGBA pixels (docs/viewer.md,
 * "Pictures"): what `kairos frames --png` writes. Not public API. */
#ifndef KAIROS_RUNTIME_PICTURE_H
#define KAIROS_RUNTIME_PICTURE_H

#include <stdint.h>
#include "runtime/recording.h"

/* The largest picture side, in pixels. */
#define KR__PICTURE_MAX_SIDE 16384

typedef struct kr__picture {
    uint32_t width, height;
    uint8_t *rgba;               /* width * height * 4 bytes, rows top down */
} kr__picture_t;

/* The default scale in pixels per world unit: the largest whole number
 * that keeps the longer side at most 1024 pixels, at least 1. */
uint32_t kr__picture_default_scale(const kr__rec_world_t *w);

/* The picture's size at `scale` pixels per world unit. */
void kr__picture_size(const kr__rec_world_t *w, uint32_t scale, uint32_t *width, uint32_t *height);

/* Draws frame f of world w at `scale`: white, then the world's first
 * field, then the agents in their order (labels are not drawn).
 * KR_ERR_NOMEM, or KR_ERR_INVALID_ARG when the picture would be larger
 * than 16384 pixels a side. */
kr_status_t kr__picture_draw(const kr__rec_world_t *w, const kr__frame_t *f, uint32_t scale, kr__picture_t *out);
void kr__picture_fini(kr__picture_t *p);

#endif
