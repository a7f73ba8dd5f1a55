/* Growable byte buffers and bounds-checked readers. Values are stored
 * little-endian so that packs read the same on every rank. */
#include <stdlib.h>
#include <string.h>

#include "kairos/buffer.h"
#include "base/error.h"
#include "base/fault.h"

void kr_buf_init(kr_buf_t *b) { memset(b, 0, sizeof *b); }

void kr_buf_fini(kr_buf_t *b)
{
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

void kr_buf_clear(kr_buf_t *b) { b->len = 0; }

kr_status_t kr_buf_reserve(kr_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len) return kr__fail(KR_ERR_NOMEM, "buffer: size overflow");
    size_t need = b->len + extra;
    if (need <= b->cap) return KR_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *d = kr__fault_alloc() ? NULL : realloc(b->data, cap);
    if (!d) return kr__fail(KR_ERR_NOMEM, "buffer: out of memory for %zu bytes", cap);
    b->data = d;
    b->cap = cap;
    return KR_OK;
}

kr_status_t kr_buf_append(kr_buf_t *b, const void *data, size_t n)
{
    if (kr_buf_reserve(b, n)) return kr_last_status();
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    return KR_OK;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static kr_status_t put_n(kr_buf_t *b, uint64_t v, int n)
{
    if (kr_buf_reserve(b, (size_t)n)) return kr_last_status();
    put_le(b->data + b->len, v, n);
    b->len += (size_t)n;
    return KR_OK;
}

kr_status_t kr_buf_put_u8(kr_buf_t *b, uint8_t v) { return put_n(b, v, 1); }
kr_status_t kr_buf_put_u32(kr_buf_t *b, uint32_t v) { return put_n(b, v, 4); }
kr_status_t kr_buf_put_u64(kr_buf_t *b, uint64_t v) { return put_n(b, v, 8); }

kr_status_t kr_buf_put_f64(kr_buf_t *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return put_n(b, bits, 8);
}

void kr_reader_init(kr_reader_t *r, const void *data, size_t len)
{
    r->data = data;
    r->len = data ? len : 0;
    r->pos = 0;
    r->failed = false;
}

bool kr_reader_get(kr_reader_t *r, void *out, size_t n)
{
    const void *p = kr_reader_view(r, n);
    if (!p) {
        memset(out, 0, n);
        return false;
    }
    memcpy(out, p, n);
    return true;
}

static uint64_t get_n(kr_reader_t *r, int n)
{
    const uint8_t *p = kr_reader_view(r, (size_t)n);
    return p ? get_le(p, n) : 0;
}

uint8_t kr_reader_u8(kr_reader_t *r) { return (uint8_t)get_n(r, 1); }
uint32_t kr_reader_u32(kr_reader_t *r) { return (uint32_t)get_n(r, 4); }
uint64_t kr_reader_u64(kr_reader_t *r) { return get_n(r, 8); }

double kr_reader_f64(kr_reader_t *r)
{
    uint64_t bits = get_n(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
