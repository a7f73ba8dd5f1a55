/* A growable byte buffer, and a bounds-checked reader over bytes.
 * Multi-byte values are written little-endian. */
#ifndef KAIROS_BUFFER_H
#define KAIROS_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef struct kr_buf {
    uint8_t *data;
    size_t len, cap;
} kr_buf_t;

KR_API void kr_buf_init(kr_buf_t *buf);
KR_API void kr_buf_fini(kr_buf_t *buf);
KR_API void kr_buf_clear(kr_buf_t *buf);
/* Makes room for `extra` more bytes. */
KR_API kr_status_t kr_buf_reserve(kr_buf_t *buf, size_t extra);
KR_API kr_status_t kr_buf_append(kr_buf_t *buf, const void *data, size_t n);
KR_API kr_status_t kr_buf_put_u8(kr_buf_t *buf, uint8_t v);
KR_API kr_status_t kr_buf_put_u32(kr_buf_t *buf, uint32_t v);
KR_API kr_status_t kr_buf_put_u64(kr_buf_t *buf, uint64_t v);
KR_API kr_status_t kr_buf_put_f64(kr_buf_t *buf, double v);

/* A reader never reads past its end: the first short read sets `failed`,
 * later reads return zeros, and the caller checks `failed` once. */
typedef struct kr_reader {
    const uint8_t *data;
    size_t len, pos;
    bool failed;
} kr_reader_t;

KR_API void kr_reader_init(kr_reader_t *r, const void *data, size_t len);
KR_API bool kr_reader_get(kr_reader_t *r, void *out, size_t n);
KR_API uint8_t kr_reader_u8(kr_reader_t *r);
KR_API uint32_t kr_reader_u32(kr_reader_t *r);
KR_API uint64_t kr_reader_u64(kr_reader_t *r);
KR_API double kr_reader_f64(kr_reader_t *r);
/* Returns a pointer to the next n bytes and skips them, or NULL if short.
 * Inline: the wire decoders call it for every field. */
static inline const void *kr_reader_view(kr_reader_t *r, size_t n)
{
    if (r->failed || n > r->len - r->pos) {
        r->failed = true;
        return NULL;
    }
    const void *p = r->data + r->pos;
    r->pos += n;
    return p;
}
static inline size_t kr_reader_left(const kr_reader_t *r) { return r->len - r->pos; }

KR_END_DECLS

#endif
