/* Symmetric save/load of behavior state over a buffer or a reader. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "ecs/serializer_private.h"

void kr__serializer_saver(kr_serializer_t *s, kr_buf_t *out, kr__ref_save_fn fn, void *ctx)
{
    *s = (kr_serializer_t){ .loading = false, .out = out, .ref_save = fn, .ref_ctx = ctx };
}

void kr__serializer_loader(kr_serializer_t *s, kr_reader_t *in, kr__ref_load_fn fn, void *ctx)
{
    *s = (kr_serializer_t){ .loading = true, .in = in, .ref_load = fn, .ref_ctx = ctx };
}

bool kr_serializer_loading(const kr_serializer_t *s) { return s && s->loading; }
size_t kr_serializer_left(const kr_serializer_t *s) { return s && s->loading && s->in ? kr_reader_left(s->in) : 0; }
kr_status_t kr_serializer_status(const kr_serializer_t *s) { return s ? s->status : KR_ERR_INVALID_ARG; }

static kr_status_t short_read(kr_serializer_t *s)
{
    s->status = kr__fail(KR_ERR_CORRUPT, "serializer: behavior state is truncated");
    return s->status;
}

static kr_status_t ser_u64(kr_serializer_t *s, uint64_t *v)
{
    if (!s) return KR_ERR_INVALID_ARG;
    if (s->status) {
        if (s->loading) *v = 0;
        return s->status;
    }
    if (s->loading) {
        *v = kr_reader_u64(s->in);
        return s->in->failed ? short_read(s) : KR_OK;
    }
    return s->status = kr_buf_put_u64(s->out, *v);
}

kr_status_t kr_ser_bytes(kr_serializer_t *s, void *data, size_t n)
{
    if (!s || (n && !data)) return kr__fail(KR_ERR_INVALID_ARG, "kr_ser_bytes: null argument");
    if (s->status) {
        if (s->loading) memset(data, 0, n);
        return s->status;
    }
    if (s->loading) return kr_reader_get(s->in, data, n) ? KR_OK : short_read(s);
    return s->status = kr_buf_append(s->out, data, n);
}

kr_status_t kr_ser_u64(kr_serializer_t *s, uint64_t *v) { return ser_u64(s, v); }

kr_status_t kr_ser_i64(kr_serializer_t *s, int64_t *v)
{
    uint64_t u = (uint64_t)*v;
    kr_status_t st = ser_u64(s, &u);
    *v = (int64_t)u;
    return st;
}

kr_status_t kr_ser_u32(kr_serializer_t *s, uint32_t *v)
{
    uint64_t u = *v;
    kr_status_t st = ser_u64(s, &u);
    if (!st && u > UINT32_MAX) st = s->status = kr__fail(KR_ERR_CORRUPT, "serializer: u32 out of range");
    *v = st ? 0 : (uint32_t)u;
    return st;
}

kr_status_t kr_ser_f64(kr_serializer_t *s, double *v)
{
    uint64_t u;
    memcpy(&u, v, sizeof u);
    kr_status_t st = ser_u64(s, &u);
    memcpy(v, &u, sizeof u);
    return st;
}

kr_status_t kr_ser_entity(kr_serializer_t *s, kr_entity_t *v)
{
    if (!s) return KR_ERR_INVALID_ARG;
    uint64_t ref = s->loading ? 0 : (s->ref_save ? s->ref_save(s->ref_ctx, *v) : 0);
    kr_status_t st = ser_u64(s, &ref);
    if (!s->loading || st) {
        if (s->loading) *v = KR_ENTITY_INVALID;
        return st;
    }
    bool ok = true;
    *v = s->ref_load ? s->ref_load(s->ref_ctx, ref, &ok) : KR_ENTITY_INVALID;
    if (!ok) return s->status = kr__fail(KR_ERR_CORRUPT, "serializer: entity reference %llu out of range",
                                         (unsigned long long)ref);
    return KR_OK;
}

kr_status_t kr_ser_string(kr_serializer_t *s, char **v)
{
    if (!s || !v) return kr__fail(KR_ERR_INVALID_ARG, "kr_ser_string: null argument");
    /* Length + 1, with 0 meaning NULL. */
    uint64_t n = s->loading ? 0 : (*v ? strlen(*v) + 1 : 0);
    kr_status_t st = ser_u64(s, &n);
    if (st) {
        if (s->loading) *v = NULL;
        return st;
    }
    if (!s->loading) return n > 1 ? kr_ser_bytes(s, *v, (size_t)n - 1) : KR_OK;
    *v = NULL;
    if (n == 0) return KR_OK;
    if (n - 1 > kr_reader_left(s->in)) return short_read(s);
    char *str = malloc((size_t)n);
    if (!str) return s->status = kr__fail(KR_ERR_NOMEM, "kr_ser_string: out of memory");
    kr_reader_get(s->in, str, (size_t)n - 1);
    str[n - 1] = '\0';
    if (strlen(str) != n - 1) {
        free(str);
        return s->status = kr__fail(KR_ERR_CORRUPT, "serializer: string holds a NUL byte");
    }
    *v = str;
    return KR_OK;
}

/* A checkpoint keeps entity ids as they are: its world comes back whole. */
static uint64_t same_id_save(void *ctx, kr_entity_t e)
{
    (void)ctx;
    return e;
}

static kr_entity_t same_id_load(void *ctx, uint64_t ref, bool *ok)
{
    (void)ctx;
    (void)ok;
    return ref;
}

void kr__serializer_checkpoint_saver(kr_serializer_t *s, kr_buf_t *out)
{
    kr__serializer_saver(s, out, same_id_save, NULL);
}

void kr__serializer_checkpoint_loader(kr_serializer_t *s, kr_reader_t *in)
{
    kr__serializer_loader(s, in, same_id_load, NULL);
}

bool kr_serializer_in_checkpoint(const kr_serializer_t *s)
{
    return s && (s->loading ? s->ref_load == same_id_load : s->ref_save == same_id_save);
}
