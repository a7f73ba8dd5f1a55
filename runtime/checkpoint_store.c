/* The checkpoint store: rank files, the manifest, the directory's life
 * and reading back (runtime/checkpoint_store.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/error.h"
#include "base/file.h"
#include "base/hmap.h"
#include "runtime/checkpoint_store.h"
#include "runtime/run.h"

static const char MAGIC[8] = { 'K', 'R', 'C', 'K', 'P', 'T', '\r', '\n' };
/* The most a zstd frame of N bytes can decompress to: every block takes at
 * least 4 bytes (an RLE block: a 3-byte header and the byte) and gives at
 * most ZSTD_BLOCKSIZE_MAX (128 KiB). */
#define ZSTD_MAX_RATIO (131072 / 4)
/* A manifest larger than this is refused before it is parsed. */
#define MANIFEST_MAX ((off_t)1 << 30)

/* DIR/NAME (no doubled slash when DIR ends in one, as a path typed with
 * a trailing slash does). */
static char *join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = d + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(p, n, "%s%s%s", dir, d && dir[d - 1] == '/' ? "" : "/", name);
    return p;
}

/* A plain file name: not empty, no '/', not "." or "..", not too long. */
static bool plain_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= NAME_MAX && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* A path named as a half-written checkpoint. */
static bool named_partial(const char *path)
{
    return ends_with(path, ".partial") || ends_with(path, ".partial/");
}

char *kr__ckpt_join(const char *dir, const char *name)
{
    return join(dir, name);
}

static kr_status_t fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return kr__fail(KR_ERR_IO, "%s: cannot open to sync: %s", path, strerror(errno));
    int r = fsync(fd);
    int e = errno;
    close(fd);
    if (r && e != EINVAL) return kr__fail(KR_ERR_IO, "%s: cannot sync: %s", path, strerror(e));
    return KR_OK;
}

/* Flushes and fsyncs an output file, then closes and renames it into place
 * (runtime/output_file.c); on any failure removes it. */
static kr_status_t out_sync_close(kr__out_file_t *o)
{
    bool ok = fflush(o->fp) == 0 && fsync(fileno(o->fp)) == 0;
    if (!ok) {
        kr_status_t st = kr__fail(KR_ERR_IO, "%s: write failed: %s", o->partial, strerror(errno));
        kr__out_close(o, false);
        return st;
    }
    return kr__out_close(o, true);
}

/* ---- writing ---- */

void kr__ckpt_entry_fini(kr__ckpt_entry_t *e)
{
    free(e->sim);
    free(e->file);
    e->sim = e->file = NULL;
}

kr_status_t kr__ckpt_write_rank_file(const char *dir, const char *file, int level, const kr__ckpt_part_t *parts,
                                     size_t n, kr__ckpt_entry_t *entries)
{
    if (!dir || !file || !plain_name(file) || !strcmp(file, KR__CKPT_MANIFEST))
        return kr__fail(KR_ERR_INVALID_ARG, "checkpoint rank file: expected a plain file name, found \"%s\"",
                        file ? file : "(null)");
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
        return kr__fail(KR_ERR_INVALID_ARG, "checkpoint compression level: expected %d to %d, found %d",
                        ZSTD_minCLevel(), ZSTD_maxCLevel(), level);
    for (size_t i = 0; i < n; i++)
        if (!parts[i].sim || (!parts[i].data && parts[i].size))
            return kr__fail(KR_ERR_INVALID_ARG, "checkpoint part %zu: expected a simulator name and data", i);
    for (size_t i = 0; i < n; i++) entries[i] = (kr__ckpt_entry_t){ 0 };

    char *path = join(dir, file);
    if (!path) return KR_ERR_NOMEM;
    kr__out_file_t o = { 0 };
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    void *frame = NULL;
    size_t frame_cap = 0;
    kr_status_t st = KR_OK;
    if (!cctx) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1))) {
        st = kr__fail(KR_ERR_INVALID_ARG, "checkpoint compression: zstd refused level %d", level);
        goto done;
    }
    if ((st = kr__out_open(&o, path))) goto done;
    unsigned char header[KR__CKPT_HEADER_SIZE] = { 0 };
    memcpy(header, MAGIC, sizeof MAGIC);
    header[8] = KR__CKPT_VERSION & 0xff;
    header[9] = (KR__CKPT_VERSION >> 8) & 0xff;
    if (fwrite(header, 1, sizeof header, o.fp) != sizeof header) goto write_failed;
    uint64_t at = sizeof header;
    for (size_t i = 0; i < n; i++) {
        size_t need = ZSTD_compressBound(parts[i].size);
        if (need > frame_cap) {
            free(frame);
            frame = malloc(need);
            frame_cap = frame ? need : 0;
            if (!frame) {
                st = kr__fail(KR_ERR_NOMEM, "out of memory (compressing %s's part of %zu bytes)", parts[i].sim,
                              parts[i].size);
                goto done;
            }
        }
        size_t z = ZSTD_compress2(cctx, frame, frame_cap, parts[i].data ? parts[i].data : "", parts[i].size);
        if (ZSTD_isError(z)) {
            st = kr__fail(KR_ERR_IO, "%s: cannot compress %s's part: %s", path, parts[i].sim, ZSTD_getErrorName(z));
            goto done;
        }
        if (fwrite(frame, 1, z, o.fp) != z) goto write_failed;
        entries[i] = (kr__ckpt_entry_t){ .sim = strdup(parts[i].sim), .file = strdup(file), .offset = at,
                                         .size = z, .raw_size = parts[i].size,
                                         .checksum = kr__hash_bytes(frame, z, 0) };
        if (!entries[i].sim || !entries[i].file) {
            st = kr__fail(KR_ERR_NOMEM, "out of memory");
            goto done;
        }
        at += z;
    }
    st = out_sync_close(&o);
    goto done;
write_failed:
    st = kr__fail(KR_ERR_IO, "%s: write failed: %s", o.partial, strerror(errno));
done:
    if (o.final) kr__out_close(&o, false);
    if (st)
        for (size_t i = 0; i < n; i++) kr__ckpt_entry_fini(&entries[i]);
    ZSTD_freeCCtx(cctx);
    free(frame);
    free(path);
    return st;
}

static json_t *hex64(uint64_t v)
{
    char s[17];
    snprintf(s, sizeof s, "%016" PRIx64, v);
    return json_string(s);
}

/* The rank files' parts carry checksums of their own, but an edited
 * manifest (an event log's length, the cut's ticks) would otherwise be
 * taken at its word: it carries this digest of the rest of it. */
bool kr__ckpt_manifest_digest(const json_t *root, uint64_t *out)
{
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (!text) return false;
    *out = kr__hash_bytes(text, strlen(text), 0);
    free(text);
    return true;
}

static json_t *manifest_json(const kr__ckpt_manifest_t *m)
{
    json_t *root = json_object(), *files = json_array(), *sims = json_array(), *t = json_object();
    bool ok = root && files && sims && t;
    ok = ok && !json_object_set_new(root, "format", json_string(KR__CKPT_FORMAT));
    ok = ok && !json_object_set_new(root, "version", json_integer(KR__CKPT_VERSION));
    ok = ok && !json_object_set_new(root, "identity", hex64(m->identity));
    ok = ok && !json_object_set_new(t, "ticks", json_integer((json_int_t)m->time));
    ok = ok && !json_object_set_new(t, "units", json_real(m->time_units));
    ok = ok && !json_object_set(root, "time", t);
    ok = ok && !json_object_set_new(root, "precision", json_integer((json_int_t)m->precision));
    ok = ok && !json_object_set_new(root, "ranks", json_integer(m->ranks));
    ok = ok && !json_object_set(root, "files", files);
    ok = ok && !json_object_set(root, "simulators", sims);
    for (size_t i = 0; ok && i < m->entry_count; i++) {
        const kr__ckpt_entry_t *e = &m->entries[i];
        bool seen = false;
        for (size_t j = 0; !seen && j < i; j++) seen = !strcmp(m->entries[j].file, e->file);
        if (!seen) ok = !json_array_append_new(files, json_string(e->file));
        json_t *s = json_object();
        ok = ok && s && !json_array_append_new(sims, s);
        ok = ok && !json_object_set_new(s, "name", json_string(e->sim));
        ok = ok && !json_object_set_new(s, "file", json_string(e->file));
        ok = ok && !json_object_set_new(s, "offset", json_integer((json_int_t)e->offset));
        ok = ok && !json_object_set_new(s, "size", json_integer((json_int_t)e->size));
        ok = ok && !json_object_set_new(s, "raw_size", json_integer((json_int_t)e->raw_size));
        ok = ok && !json_object_set_new(s, "checksum", hex64(e->checksum));
    }
    if (ok && m->extra) ok = !json_object_set(root, "extra", m->extra);
    uint64_t digest;
    ok = ok && kr__ckpt_manifest_digest(root, &digest) && !json_object_set_new(root, "digest", hex64(digest));
    json_decref(files);
    json_decref(sims);
    json_decref(t);
    if (!ok) {
        json_decref(root);
        kr__fail(KR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return root;
}

kr_status_t kr__ckpt_manifest_write(const char *dir, const kr__ckpt_manifest_t *m)
{
    if (m->time > INT64_MAX || m->precision < 1 || m->precision > INT64_MAX || m->ranks < 1)
        return kr__fail(KR_ERR_INVALID_ARG,
                        "checkpoint manifest: expected a time up to 2^63-1 ticks, a precision >= 1 and ranks >= 1, "
                        "found %" PRIu64 ", %" PRIu64 " and %d",
                        m->time, m->precision, m->ranks);
    if (m->extra && !json_is_object(m->extra))
        return kr__fail(KR_ERR_INVALID_ARG, "checkpoint manifest: expected extra to be an object");
    for (size_t i = 0; i < m->entry_count; i++) {
        const kr__ckpt_entry_t *e = &m->entries[i];
        if (!e->sim || !*e->sim || !e->file || !plain_name(e->file) || !strcmp(e->file, KR__CKPT_MANIFEST) ||
            e->offset > INT64_MAX || e->size > INT64_MAX || e->raw_size > INT64_MAX)
            return kr__fail(KR_ERR_INVALID_ARG, "checkpoint manifest: entry %zu (%s): expected a simulator name, "
                            "a plain file name and sizes up to 2^63-1", i, e->sim ? e->sim : "(null)");
    }
    json_t *root = manifest_json(m);
    if (!root) return KR_ERR_NOMEM;
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    char *path = join(dir, KR__CKPT_MANIFEST);
    kr_status_t st = KR_OK;
    if (!text || !path) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    kr__out_file_t o = { 0 };
    if ((st = kr__out_open(&o, path))) {
        if (o.final) kr__out_close(&o, false);
        goto done;
    }
    if (fputs(text, o.fp) == EOF || fputc('\n', o.fp) == EOF) {
        st = kr__fail(KR_ERR_IO, "%s: write failed: %s", o.partial, strerror(errno));
        kr__out_close(&o, false);
        goto done;
    }
    st = out_sync_close(&o);
done:
    free(text);
    free(path);
    return st;
}

void kr__ckpt_manifest_fini(kr__ckpt_manifest_t *m)
{
    for (size_t i = 0; i < m->entry_count; i++) kr__ckpt_entry_fini(&m->entries[i]);
    free(m->entries);
    json_decref(m->extra);
    *m = (kr__ckpt_manifest_t){ 0 };
}

/* ---- reading the manifest ---- */

typedef struct reader {
    const char *path;     /* DIR/manifest.json, for messages */
} reader_t;

/* "PATH: WHERE: expected ..., found ..." */
static kr_status_t bad(const reader_t *r, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static kr_status_t bad(const reader_t *r, const char *where, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kr__fail(KR_ERR_CORRUPT, "%s: %s: %s", r->path, where, msg);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
    }
}

static kr_status_t get_uint(const reader_t *r, const json_t *obj, const char *key, const char *where, uint64_t min,
                            uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    char at[256];
    snprintf(at, sizeof at, "%s%s%s", where, *where ? "." : "", key);
    if (!v) return bad(r, at, "expected an integer, found nothing");
    if (!json_is_integer(v)) return bad(r, at, "expected an integer, found %s", type_name(v));
    json_int_t i = json_integer_value(v);
    if (i < 0 || (uint64_t)i < min)
        return bad(r, at, "expected an integer >= %" PRIu64 ", found %" JSON_INTEGER_FORMAT, min, i);
    *out = (uint64_t)i;
    return KR_OK;
}

static kr_status_t get_hex(const reader_t *r, const json_t *obj, const char *key, const char *where, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    char at[256];
    snprintf(at, sizeof at, "%s%s%s", where, *where ? "." : "", key);
    const char *s = json_string_value(v);
    bool ok = s && strlen(s) == 16 && strspn(s, "0123456789abcdefABCDEF") == 16;
    if (!ok) {
        if (!v) return bad(r, at, "expected 16 hex digits, found nothing");
        if (!s) return bad(r, at, "expected 16 hex digits, found %s", type_name(v));
        return bad(r, at, "expected 16 hex digits, found \"%.40s\"", s);
    }
    *out = strtoull(s, NULL, 16);
    return KR_OK;
}

static kr_status_t only_keys(const reader_t *r, json_t *obj, const char *where, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool known = false;
        for (size_t i = 0; keys[i] && !known; i++) known = !strcmp(k, keys[i]);
        if (!known) return bad(r, *where ? where : "(top level)", "expected only known keys, found \"%.40s\"", k);
    }
    return KR_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parses and checks the manifest at PATH (no file checks); on success *m
 * owns entries and extra, and *files (malloc'ed, sorted) the distinct file
 * names (pointers into entries' strings or into the manifest's list,
 * copied). */
typedef struct parsed {
    kr__ckpt_manifest_t m;
    char **files;           /* sorted, owned */
    size_t file_count;
} parsed_t;

static void parsed_fini(parsed_t *p)
{
    kr__ckpt_manifest_fini(&p->m);
    for (size_t i = 0; i < p->file_count; i++) free(p->files[i]);
    free(p->files);
    *p = (parsed_t){ 0 };
}

static kr_status_t parse_manifest(const char *path, parsed_t *p)
{
    *p = (parsed_t){ 0 };
    reader_t r = { path };
    bool odd;
    FILE *in = kr__fopen_regular(path, &odd);
    if (!in && !odd) {
        kr_status_t s = errno == ENOENT ? KR_ERR_CORRUPT : KR_ERR_IO;
        return kr__fail(s, "%s: expected a checkpoint manifest, found %s (a half-written or missing checkpoint?)",
                        path, strerror(errno));
    }
    struct stat sb;
    if (!in || fstat(fileno(in), &sb) || sb.st_size > MANIFEST_MAX) {
        if (in) fclose(in);
        return kr__fail(KR_ERR_CORRUPT, "%s: expected a regular file of at most %lld bytes", path,
                        (long long)MANIFEST_MAX);
    }
    json_error_t err;
    json_t *root = json_loadf(in, JSON_REJECT_DUPLICATES, &err);
    fclose(in);
    if (!root)
        return kr__fail(KR_ERR_CORRUPT, "%s: line %d column %d: expected valid JSON, found %s", path, err.line,
                        err.column, err.text);
    kr_status_t st = KR_OK;
    if (!json_is_object(root)) {
        st = bad(&r, "(top level)", "expected an object, found %s", type_name(root));
        goto done;
    }
    const char *format = json_string_value(json_object_get(root, "format"));
    if (!format || strcmp(format, KR__CKPT_FORMAT)) {
        st = bad(&r, "format", "expected \"%s\", found %s%.40s%s: not a kairos checkpoint", KR__CKPT_FORMAT,
                 format ? "\"" : "", format ? format : "something else", format ? "\"" : "");
        goto done;
    }
    json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver) || json_integer_value(ver) != KR__CKPT_VERSION) {
        if (json_is_integer(ver))
            st = bad(&r, "version", "expected %d, found %" JSON_INTEGER_FORMAT
                     " (a checkpoint of another version of kairos)", KR__CKPT_VERSION, json_integer_value(ver));
        else
            st = bad(&r, "version", "expected %d, found %s", KR__CKPT_VERSION, ver ? type_name(ver) : "nothing");
        goto done;
    }
    static const char *const top_keys[] = { "format", "version", "identity", "time", "precision", "ranks", "files",
                                            "simulators", "extra", "digest", NULL };
    static const char *const time_keys[] = { "ticks", "units", NULL };
    static const char *const sim_keys[] = { "name", "file", "offset", "size", "raw_size", "checksum", NULL };
    if ((st = only_keys(&r, root, "", top_keys))) goto done;
    kr__ckpt_manifest_t *m = &p->m;
    if ((st = get_hex(&r, root, "identity", "", &m->identity))) goto done;
    json_t *t = json_object_get(root, "time");
    if (!json_is_object(t)) {
        st = bad(&r, "time", "expected an object, found %s", t ? type_name(t) : "nothing");
        goto done;
    }
    if ((st = only_keys(&r, t, "time", time_keys)) || (st = get_uint(&r, t, "ticks", "time", 0, &m->time))) goto done;
    json_t *units = json_object_get(t, "units");
    if (!json_is_number(units)) {
        st = bad(&r, "time.units", "expected a number, found %s", units ? type_name(units) : "nothing");
        goto done;
    }
    m->time_units = json_number_value(units);
    uint64_t ranks;
    if ((st = get_uint(&r, root, "precision", "", 1, &m->precision)) ||
        (st = get_uint(&r, root, "ranks", "", 1, &ranks)))
        goto done;
    if (ranks > INT_MAX) {
        st = bad(&r, "ranks", "expected at most %d, found %" PRIu64, INT_MAX, ranks);
        goto done;
    }
    m->ranks = (int)ranks;
    json_t *extra = json_object_get(root, "extra");
    if (extra && !json_is_object(extra)) {
        st = bad(&r, "extra", "expected an object, found %s", type_name(extra));
        goto done;
    }
    m->extra = json_incref(extra);

    json_t *files = json_object_get(root, "files");
    if (!json_is_array(files)) {
        st = bad(&r, "files", "expected an array, found %s", files ? type_name(files) : "nothing");
        goto done;
    }
    size_t nf = json_array_size(files);
    p->files = calloc(nf ? nf : 1, sizeof *p->files);
    if (!p->files) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nf; i++) {
        char at[64];
        snprintf(at, sizeof at, "files[%zu]", i);
        const char *s = json_string_value(json_array_get(files, i));
        if (!s || !plain_name(s) || !strcmp(s, KR__CKPT_MANIFEST)) {
            st = bad(&r, at, "expected a plain file name (no '/', not \"..\"), found %s%.40s%s", s ? "\"" : "",
                     s ? s : type_name(json_array_get(files, i)), s ? "\"" : "");
            goto done;
        }
        if (!(p->files[i] = strdup(s))) {
            st = kr__fail(KR_ERR_NOMEM, "out of memory");
            goto done;
        }
        p->file_count++;
    }
    if (nf) qsort(p->files, nf, sizeof *p->files, cmp_str);
    for (size_t i = 1; i < nf; i++)
        if (!strcmp(p->files[i - 1], p->files[i])) {
            st = bad(&r, "files", "expected distinct names, found \"%.40s\" twice", p->files[i]);
            goto done;
        }

    json_t *sims = json_object_get(root, "simulators");
    if (!json_is_array(sims)) {
        st = bad(&r, "simulators", "expected an array, found %s", sims ? type_name(sims) : "nothing");
        goto done;
    }
    size_t ns = json_array_size(sims);
    m->entries = calloc(ns ? ns : 1, sizeof *m->entries);
    if (!m->entries) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < ns; i++) {
        char at[64];
        snprintf(at, sizeof at, "simulators[%zu]", i);
        json_t *s = json_array_get(sims, i);
        if (!json_is_object(s)) {
            st = bad(&r, at, "expected an object, found %s", type_name(s));
            goto done;
        }
        if ((st = only_keys(&r, s, at, sim_keys))) goto done;
        kr__ckpt_entry_t *e = &m->entries[i];
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *file = json_string_value(json_object_get(s, "file"));
        if (!name || !*name) {
            st = bad(&r, at, "expected a \"name\", a non-empty string");
            goto done;
        }
        char who[128];
        snprintf(who, sizeof who, "%s (%.40s)", at, name);
        if (!file || !bsearch(&file, p->files, nf, sizeof *p->files, cmp_str)) {
            st = bad(&r, who, "expected a \"file\" listed in \"files\", found %s%.40s%s",
                     file ? "\"" : "", file ? file : "none", file ? "\"" : "");
            goto done;
        }
        if ((st = get_uint(&r, s, "offset", at, KR__CKPT_HEADER_SIZE, &e->offset)) ||
            (st = get_uint(&r, s, "size", at, 1, &e->size)) ||
            (st = get_uint(&r, s, "raw_size", at, 0, &e->raw_size)) ||
            (st = get_hex(&r, s, "checksum", at, &e->checksum)))
            goto done;
        if (e->raw_size / ZSTD_MAX_RATIO > e->size) {
            st = bad(&r, who, "expected a raw_size a zstd frame of %" PRIu64 " bytes can give, found %" PRIu64,
                     e->size, e->raw_size);
            goto done;
        }
        e->sim = strdup(name);
        e->file = strdup(file);
        m->entry_count++;
        if (!e->sim || !e->file) {
            st = kr__fail(KR_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    /* Last, so that a fuzzer's changes still reach every check above. */
    uint64_t want, got;
    if ((st = get_hex(&r, root, "digest", "", &want))) goto done;
    json_object_del(root, "digest");
    if (!kr__ckpt_manifest_digest(root, &got)) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (got != want)
        st = bad(&r, "digest", "expected %016" PRIx64 " (what the manifest's content gives), found %016" PRIx64
                 ": the manifest was changed after it was written", got, want);
done:
    json_decref(root);
    if (st) parsed_fini(p);
    return st;
}

/* ---- the open checkpoint ---- */

struct kr__ckpt {
    char *dir;
    kr__ckpt_manifest_t m;
    char **files;           /* sorted */
    size_t file_count;
    const kr__ckpt_entry_t **by_name; /* the entries sorted by simulator name */
};

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp((*(const kr__ckpt_entry_t *const *)a)->sim, (*(const kr__ckpt_entry_t *const *)b)->sim);
}

static int cmp_by_place(const void *a, const void *b)
{
    const kr__ckpt_entry_t *x = *(const kr__ckpt_entry_t *const *)a, *y = *(const kr__ckpt_entry_t *const *)b;
    int c = strcmp(x->file, y->file);
    if (c) return c;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The rank file's header, and its length against what its parts need. */
static kr_status_t check_file(const char *dir, const char *name, uint64_t need)
{
    char *path = join(dir, name);
    if (!path) return KR_ERR_NOMEM;
    kr_status_t st = KR_OK;
    int fd = kr__open_regular(path);
    struct stat sb;
    unsigned char h[KR__CKPT_HEADER_SIZE];
    if (fd == KR__NOT_REGULAR) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a regular file", path);
    } else if (fd < 0) {
        st = kr__fail(errno == ENOENT ? KR_ERR_CORRUPT : KR_ERR_IO, "%s: expected a checkpoint rank file, found %s",
                      path, strerror(errno));
    } else if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a regular file", path);
    } else if ((uint64_t)sb.st_size < KR__CKPT_HEADER_SIZE ||
               pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a %d-byte header, found %lld bytes: truncated", path,
                      KR__CKPT_HEADER_SIZE, (long long)sb.st_size);
    } else if (memcmp(h, MAGIC, sizeof MAGIC) || h[10] || h[11] || h[12] || h[13] || h[14] || h[15]) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a kairos checkpoint rank file, found another header", path);
    } else if (h[8] + 256u * h[9] != KR__CKPT_VERSION) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected rank file version %d, found version %u", path, KR__CKPT_VERSION,
                      h[8] + 256u * h[9]);
    } else if ((uint64_t)sb.st_size < need) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected %" PRIu64 " bytes (the end of its last part), found %lld: truncated",
                      path, need, (long long)sb.st_size);
    } else if ((uint64_t)sb.st_size > need) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected %" PRIu64 " bytes (the end of its last part), found %lld: "
                      "bytes the manifest does not list", path, need, (long long)sb.st_size);
    }
    if (fd >= 0) close(fd);
    free(path);
    return st;
}

/* Checks a parsed manifest against the files of DIR and takes it over. */
static kr_status_t open_dir(const char *dir, parsed_t *p, kr__ckpt_t **out)
{
    kr__ckpt_t *c = calloc(1, sizeof *c);
    kr__ckpt_manifest_t *m = &p->m;
    size_t n = m->entry_count;
    const kr__ckpt_entry_t **place = malloc((n ? n : 1) * sizeof *place);
    uint64_t *ends = calloc(p->file_count ? p->file_count : 1, sizeof *ends);
    if (c) c->by_name = malloc((n ? n : 1) * sizeof *c->by_name);
    if (c) c->dir = strdup(dir);
    kr_status_t st = KR_OK;
    char *mpath = join(dir, KR__CKPT_MANIFEST);
    if (!c || !place || !ends || !c->by_name || !c->dir || !mpath) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    reader_t r = { mpath };
    for (size_t i = 0; i < n; i++) c->by_name[i] = place[i] = &m->entries[i];
    if (n) qsort(c->by_name, n, sizeof *c->by_name, cmp_by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(c->by_name[i - 1]->sim, c->by_name[i]->sim)) {
            char at[64];
            const kr__ckpt_entry_t *later = c->by_name[i] > c->by_name[i - 1] ? c->by_name[i] : c->by_name[i - 1];
            snprintf(at, sizeof at, "simulators[%zu]", (size_t)(later - m->entries));
            st = bad(&r, at, "expected a simulator listed once, found \"%.40s\" twice", later->sim);
            goto done;
        }
    if (n) qsort(place, n, sizeof *place, cmp_by_place);
    for (size_t i = 0; i < n; i++) {
        const kr__ckpt_entry_t *e = place[i];
        if (e->offset > INT64_MAX - e->size) {
            char at[128];
            snprintf(at, sizeof at, "simulators[%zu] (%.40s)", (size_t)(e - m->entries), e->sim);
            st = bad(&r, at, "expected offset + size within a file, found %" PRIu64 " + %" PRIu64, e->offset,
                     e->size);
            goto done;
        }
        if (i > 0) {
            const kr__ckpt_entry_t *prev = place[i - 1];
            if (!strcmp(prev->file, e->file) && e->offset < prev->offset + prev->size) {
                char at[128];
                snprintf(at, sizeof at, "simulators[%zu] (%.40s)", (size_t)(e - m->entries), e->sim);
                st = bad(&r, at, "expected a part apart from the others in %s, found bytes %" PRIu64 "..%" PRIu64
                         " overlapping %.40s's", e->file, e->offset, e->offset + e->size, prev->sim);
                goto done;
            }
        }
        char **f = bsearch(&e->file, p->files, p->file_count, sizeof *p->files, cmp_str);
        uint64_t *end = &ends[f - p->files];
        if (e->offset + e->size > *end) *end = e->offset + e->size;
    }
    for (size_t i = 0; i < p->file_count; i++)
        if ((st = check_file(dir, p->files[i], ends[i] ? ends[i] : KR__CKPT_HEADER_SIZE))) goto done;
    c->m = p->m;
    c->files = p->files;
    c->file_count = p->file_count;
    *p = (parsed_t){ 0 };
    *out = c;
    c = NULL;
done:
    free(mpath);
    free(place);
    free(ends);
    if (c) {
        free(c->by_name);
        free(c->dir);
        free(c);
    }
    return st;
}

typedef kr__ckpt_found_t candidate_t;

static int cmp_candidate(const void *a, const void *b) /* newest first */
{
    const candidate_t *x = a, *y = b;
    if (x->time != y->time) return x->time > y->time ? -1 : 1;
    return -strcmp(x->name, y->name);
}

/* The complete checkpoints under ROOT, newest first. strict: a directory
 * with a manifest that does not read fails the call; else it is skipped. */
static kr_status_t list_checkpoints(const char *root, bool strict, candidate_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    DIR *d = opendir(root);
    if (!d) return kr__fail(KR_ERR_IO, "%s: cannot read the directory: %s", root, strerror(errno));
    candidate_t *list = NULL;
    size_t n = 0, cap = 0;
    kr_status_t st = KR_OK;
    struct dirent *de;
    while (!st && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || ends_with(de->d_name, ".partial")) continue;
        char *dir = join(root, de->d_name), *mpath = dir ? join(dir, KR__CKPT_MANIFEST) : NULL;
        struct stat sb;
        if (!mpath) {
            st = KR_ERR_NOMEM;
        } else if (!stat(dir, &sb) && S_ISDIR(sb.st_mode) && !lstat(mpath, &sb)) {
            parsed_t p;
            kr_status_t ps = parse_manifest(mpath, &p);
            if (ps == KR_ERR_NOMEM || (ps && strict)) {
                st = ps;
            } else if (!ps) {
                uint64_t t = p.m.time, identity = p.m.identity;
                parsed_fini(&p);
                if (n == cap) {
                    size_t nc = cap ? 2 * cap : 8;
                    candidate_t *g = realloc(list, nc * sizeof *g);
                    if (!g) st = kr__fail(KR_ERR_NOMEM, "out of memory");
                    else list = g, cap = nc;
                }
                if (!st && !(list[n].name = strdup(de->d_name))) st = kr__fail(KR_ERR_NOMEM, "out of memory");
                if (!st) {
                    list[n].time = t;
                    list[n++].identity = identity;
                }
            }
        }
        free(mpath);
        free(dir);
    }
    closedir(d);
    if (st) {
        for (size_t i = 0; i < n; i++) free(list[i].name);
        free(list);
        return st;
    }
    if (n) qsort(list, n, sizeof *list, cmp_candidate); /* (no list at all when n is 0) */
    *out = list;
    *count = n;
    return KR_OK;
}

static void candidates_free(candidate_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++) free(list[i].name);
    free(list);
}

bool kr__ckpt_names_folder(const char *path)
{
    char *mpath = join(path, KR__CKPT_MANIFEST);
    struct stat sb;
    bool folder = mpath && lstat(mpath, &sb) && !named_partial(path);
    free(mpath);
    return folder;
}

kr_status_t kr__ckpt_list(const char *root, kr__ckpt_found_t **out, size_t *count)
{
    return list_checkpoints(root, false, out, count);
}

void kr__ckpt_list_free(kr__ckpt_found_t *list, size_t count)
{
    candidates_free(list, count);
}

/* True when DIR holds at least one complete checkpoint. */
static bool holds_checkpoints(const char *dir)
{
    candidate_t *list;
    size_t n;
    if (list_checkpoints(dir, false, &list, &n)) return false;
    candidates_free(list, n);
    return n > 0;
}

/* True when DIR holds a manifest that reads as a checkpoint's. */
static bool is_checkpoint(const char *dir)
{
    char *mpath = join(dir, KR__CKPT_MANIFEST);
    parsed_t p;
    bool yes = mpath && !parse_manifest(mpath, &p);
    if (yes) parsed_fini(&p);
    free(mpath);
    return yes;
}

kr_status_t kr__ckpt_open(const char *path, kr__ckpt_t **out)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb))
        return kr__fail(KR_ERR_IO, "%s: expected a checkpoint, found %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return kr__fail(KR_ERR_CORRUPT, "%s: expected a checkpoint directory, found another kind of file", path);
    char *mpath = join(path, KR__CKPT_MANIFEST);
    if (!mpath) return KR_ERR_NOMEM;
    bool has_manifest = !lstat(mpath, &sb);
    /* (a folder of checkpoints that is also a folder of frames has their
     * manifest: its checkpoints are the ones in it) */
    if (has_manifest && !named_partial(path) && !is_checkpoint(path) && holds_checkpoints(path)) has_manifest = false;
    kr_status_t st = KR_OK;
    char *chosen = NULL;
    if (has_manifest || named_partial(path)) {
        if (!has_manifest || named_partial(path)) {
            st = kr__fail(KR_ERR_CORRUPT, "%s: expected a complete checkpoint, found a half-written one (%s)", path,
                          has_manifest ? "a .partial directory" : "no manifest.json");
            goto done;
        }
        chosen = strdup(path);
    } else {
        candidate_t *list;
        size_t n;
        if ((st = list_checkpoints(path, true, &list, &n))) goto done;
        if (!n) {
            /* (a folder of replications' or a sweep's record: the same
             * --restart goes on with it, given --replications) */
            char *reps = join(path, "replications.json");
            bool replications = reps && !lstat(reps, &sb);
            free(reps);
            st = kr__fail(KR_ERR_CORRUPT, "%s: expected a checkpoint (a manifest.json) or a directory of complete "
                          "checkpoints, found %s", path, replications ? "replications.json, the record of a run with "
                          "--replications or of a sweep (go on with that command and --restart)"
                          : "neither (a half-written checkpoint?)");
            goto done;
        }
        chosen = join(path, list[0].name);
        candidates_free(list, n);
    }
    if (!chosen) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    free(mpath);
    mpath = join(chosen, KR__CKPT_MANIFEST);
    parsed_t p;
    if (!mpath || (st = parse_manifest(mpath, &p))) {
        if (!mpath) st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = open_dir(chosen, &p, out);
    parsed_fini(&p);
done:
    free(chosen);
    free(mpath);
    return st;
}

const kr__ckpt_manifest_t *kr__ckpt_manifest(const kr__ckpt_t *c)
{
    return &c->m;
}

const char *kr__ckpt_path(const kr__ckpt_t *c)
{
    return c->dir;
}

kr_status_t kr__ckpt_read(kr__ckpt_t *c, const char *sim, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    size_t lo = 0, hi = c->m.entry_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c->by_name[mid]->sim, sim) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == c->m.entry_count || strcmp(c->by_name[lo]->sim, sim))
        return kr__fail(KR_ERR_INVALID_ARG, "%s: expected a simulator of the checkpoint, found \"%s\"", c->dir, sim);
    const kr__ckpt_entry_t *e = c->by_name[lo];
    if (e->size > SIZE_MAX || e->raw_size >= SIZE_MAX)
        return kr__fail(KR_ERR_NOMEM, "%s: %s's part is too large for this machine", c->dir, sim);
    char *path = join(c->dir, e->file);
    if (!path) return KR_ERR_NOMEM;
    kr_status_t st = KR_OK;
    unsigned char *z = malloc((size_t)e->size); /* no larger than the file, checked at open */
    unsigned char *raw = NULL;
    int fd = -1;
    if (!z) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    fd = kr__open_regular(path);
    if (fd < 0) {
        st = fd == KR__NOT_REGULAR ? kr__fail(KR_ERR_CORRUPT, "%s: expected a regular file", path)
                                   : kr__fail(KR_ERR_IO, "%s: cannot read %s's part: %s", path, sim, strerror(errno));
        goto done;
    }
    size_t got = 0;
    while (got < e->size) {
        ssize_t r = pread(fd, z + got, (size_t)e->size - got, (off_t)(e->offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = kr__fail(KR_ERR_IO, "%s: cannot read %s's part: %s", path, sim, strerror(errno));
            goto done;
        }
        if (r == 0) {
            st = kr__fail(KR_ERR_CORRUPT, "%s: simulator \"%s\": expected %" PRIu64 " bytes at %" PRIu64
                          ", found %zu: truncated", path, sim, e->size, e->offset, got);
            goto done;
        }
        got += (size_t)r;
    }
    uint64_t sum = kr__hash_bytes(z, (size_t)e->size, 0);
    if (sum != e->checksum) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: simulator \"%s\" (bytes %" PRIu64 "..%" PRIu64 "): expected checksum %016"
                      PRIx64 ", found %016" PRIx64 ": corrupted", path, sim, e->offset, e->offset + e->size,
                      e->checksum, sum);
        goto done;
    }
    /* The frame's magic number, then its header descriptor, whose bit 2 is
     * the content checksum flag (RFC 8878, 3.1.1). */
    static const unsigned char zmagic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    unsigned long long content = ZSTD_getFrameContentSize(z, (size_t)e->size);
    size_t frame = ZSTD_findFrameCompressedSize(z, (size_t)e->size);
    if (e->size < 5 || memcmp(z, zmagic, 4) || !(z[4] & 4) || content != e->raw_size || ZSTD_isError(frame) ||
        frame != e->size) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: simulator \"%s\": expected one zstd frame of %" PRIu64 " bytes giving %"
                      PRIu64 " with its checksum, found another header", path, sim, e->size, e->raw_size);
        goto done;
    }
    raw = malloc(e->raw_size ? (size_t)e->raw_size : 1);
    if (!raw) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory (%s's part: %" PRIu64 " bytes)", sim, e->raw_size);
        goto done;
    }
    size_t n = ZSTD_decompress(raw, (size_t)e->raw_size, z, (size_t)e->size);
    if (ZSTD_isError(n) || n != e->raw_size) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: simulator \"%s\": expected %" PRIu64 " bytes from zstd, found %s", path, sim,
                      e->raw_size, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "another size");
        goto done;
    }
    *data = raw;
    *size = n;
    raw = NULL;
done:
    if (fd >= 0) close(fd);
    free(raw);
    free(z);
    free(path);
    return st;
}

void kr__ckpt_close(kr__ckpt_t *c)
{
    if (!c) return;
    kr__ckpt_manifest_fini(&c->m);
    for (size_t i = 0; i < c->file_count; i++) free(c->files[i]);
    free(c->files);
    free(c->by_name);
    free(c->dir);
    free(c);
}

/* ---- the directory's life ---- */

/* Removes a flat directory: manifest first, then its files, then it. */
static kr_status_t remove_flat(const char *dir)
{
    char *mpath = join(dir, KR__CKPT_MANIFEST);
    if (!mpath) return KR_ERR_NOMEM;
    if (unlink(mpath) && errno != ENOENT) {
        kr_status_t st = kr__fail(KR_ERR_IO, "%s: cannot remove: %s", mpath, strerror(errno));
        free(mpath);
        return st;
    }
    free(mpath);
    DIR *d = opendir(dir);
    if (!d) return kr__fail(KR_ERR_IO, "%s: cannot read the directory: %s", dir, strerror(errno));
    kr_status_t st = KR_OK;
    struct dirent *de;
    while (!st && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = join(dir, de->d_name);
        if (!p) st = KR_ERR_NOMEM;
        else if (unlink(p)) st = kr__fail(KR_ERR_IO, "%s: cannot remove: %s", p, strerror(errno));
        free(p);
    }
    closedir(d);
    if (!st && rmdir(dir)) st = kr__fail(KR_ERR_IO, "%s: cannot remove: %s", dir, strerror(errno));
    return st;
}

/* *made: how many of path's last parts were made (once one is, every one
 * below it is too). */
static kr_status_t mkdir_p(const char *path, unsigned *made)
{
    *made = 0;
    if (!*path) return kr__fail(KR_ERR_INVALID_ARG, "checkpoint root: expected a directory, found \"\"");
    char *p = strdup(path);
    if (!p) return kr__fail(KR_ERR_NOMEM, "out of memory");
    kr_status_t st = KR_OK;
    for (char *s = p + 1; !st; s++) {
        bool last = *s == '\0';
        if (*s != '/' && !last) continue;
        *s = '\0';
        struct stat sb;
        if (!mkdir(p, 0777)) {
            ++*made;
        } else {
            if (errno != EEXIST) st = kr__fail(KR_ERR_IO, "%s: cannot make the directory: %s", p, strerror(errno));
            else if (stat(p, &sb) || !S_ISDIR(sb.st_mode))
                st = kr__fail(KR_ERR_IO, "%s: expected a directory, found a file of that name", p);
        }
        if (last) break;
        *s = '/';
    }
    free(p);
    return st;
}

static char *partial_name(const char *root, const char *name)
{
    size_t n = strlen(root) + strlen(name) + 10;
    char *p = malloc(n);
    if (!p) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(p, n, "%s/%s.partial", root, name);
    return p;
}

static kr_status_t check_name(const char *name)
{
    if (!name || !plain_name(name) || ends_with(name, ".partial"))
        return kr__fail(KR_ERR_INVALID_ARG, "checkpoint name: expected a plain name not ending in .partial, found \"%s\"",
                        name ? name : "(null)");
    return KR_OK;
}

kr_status_t kr__ckpt_dir_begin(const char *root, const char *name, char **partial_path)
{
    *partial_path = NULL;
    kr_status_t st = check_name(name);
    unsigned made;
    if (st || (st = mkdir_p(root, &made))) return st;
    char *p = partial_name(root, name);
    if (!p) return KR_ERR_NOMEM;
    struct stat sb;
    if (!lstat(p, &sb) && (st = S_ISDIR(sb.st_mode) ? remove_flat(p)
                                                     : kr__fail(KR_ERR_IO, "%s: exists and is not a directory", p))) {
        free(p);
        return st;
    }
    if (mkdir(p, 0777)) {
        st = kr__fail(KR_ERR_IO, "%s: cannot make the directory: %s", p, strerror(errno));
        free(p);
        return st;
    }
    *partial_path = p;
    return KR_OK;
}

/* Renames `from` to `to`, and an older checkpoint of that name, if any, out
 * of the way first (as ROOT/NAME.replaced.partial, removed once the new one
 * is in place: a crash in between leaves a .partial name, never a
 * half-written checkpoint under a final one). A run repeated in the same
 * folder, or one restarted from an older checkpoint there, writes the
 * checkpoints of the same times again. */
static kr_status_t replace_dir(const char *from, const char *to, const char *root)
{
    struct stat sb;
    char *old = NULL;
    kr_status_t st = KR_OK;
    if (!lstat(to, &sb)) {
        size_t n = strlen(to) + 32;
        if (!(old = malloc(n))) return kr__fail(KR_ERR_NOMEM, "out of memory");
        snprintf(old, n, "%s.replaced.partial", to);
        if (!lstat(old, &sb)) st = S_ISDIR(sb.st_mode) ? remove_flat(old)
                                                       : kr__fail(KR_ERR_IO, "%s: exists and is not a directory", old);
        if (!st && rename(to, old)) st = kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", to, old, strerror(errno));
    }
    if (!st && rename(from, to)) st = kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", from, to, strerror(errno));
    if (!st) st = fsync_path(root);
    if (!st && old) st = remove_flat(old);
    free(old);
    return st;
}

kr_status_t kr__ckpt_dir_commit(const char *root, const char *name)
{
    kr_status_t st = check_name(name);
    if (st) return st;
    char *p = partial_name(root, name), *final = join(root, name), *mpath = p ? join(p, KR__CKPT_MANIFEST) : NULL;
    struct stat sb;
    if (!p || !final || !mpath) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
    } else if (lstat(mpath, &sb)) {
        st = kr__fail(KR_ERR_IO, "%s: expected a manifest before commit, found %s", mpath, strerror(errno));
    } else if (!lstat(final, &sb) && !is_checkpoint(final)) {
        st = kr__fail(KR_ERR_IO, "%s: cannot commit %s: the name is taken by something that is not a checkpoint",
                      final, p);
    } else if (!(st = fsync_path(p))) {
        st = replace_dir(p, final, root);
    }
    free(p);
    free(final);
    free(mpath);
    return st;
}

kr_status_t kr__ckpt_dir_abandon(const char *root, const char *name)
{
    char *p = check_name(name) ? NULL : partial_name(root, name);
    if (!p) return kr_last_status();
    struct stat sb;
    kr_status_t st = !lstat(p, &sb) && S_ISDIR(sb.st_mode) ? remove_flat(p) : KR_OK;
    free(p);
    return st;
}

void kr__ckpt_dir_unmake(const char *root, unsigned made)
{
    char *p = made ? strdup(root) : NULL;
    for (unsigned k = 0; p && k < made; k++) {
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') p[--n] = '\0';   /* (a trailing slash names the same folder) */
        if (rmdir(p)) break;                              /* not empty (or gone): the parents stay too */
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) break;
        *slash = '\0';
    }
    free(p);
}

kr_status_t kr__ckpt_dir_prepare(const char *root, unsigned *made, int *lock)
{
    *lock = -1;
    kr_status_t st = mkdir_p(root, made);
    if (st) {
        kr__ckpt_dir_unmake(root, *made);
        *made = 0;
    }
    if (!st && access(root, W_OK | X_OK))
        st = kr__fail(KR_ERR_IO, "%s: cannot write checkpoints there: %s", root, strerror(errno));
    /* access() answers yes to root where no folder can be made (/sys, a
     * read-only mount): a checkpoint is a folder, so one is made and
     * removed, as the first checkpoint would */
    char *path = st ? NULL : join(root, ".kairos-probe-XXXXXX");
    if (!st && !path) st = KR_ERR_NOMEM;
    else if (!st && !mkdtemp(path))
        st = kr__fail(KR_ERR_IO, "%s: cannot write checkpoints there: %s", root, strerror(errno));
    else if (!st && rmdir(path))
        st = kr__fail(KR_ERR_IO, "%s: cannot remove the folder made to try it: %s", path, strerror(errno));
    free(path);
    /* One run at a time: two writing one folder replaced, pruned and
     * renamed each other's checkpoints and failed after all their work.
     * A file system without locks on folders (some network ones) goes on
     * without. */
    int fd = st ? -1 : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
        if (errno == EWOULDBLOCK)
            st = kr__fail(KR_ERR_IO, "%s: expected a checkpoint folder of this run's own, found one another run "
                          "is writing checkpoints in (give each run its own --checkpoint-dir)", root);
        close(fd);
        fd = -1;
    }
    *lock = fd;
    return st;
}

kr_status_t kr__ckpt_dir_prune(const char *root, int keep, uint64_t upto)
{
    if (keep <= 0) return KR_OK;
    candidate_t *list;
    size_t n;
    kr_status_t st = list_checkpoints(root, false, &list, &n);
    if (st) return st;
    size_t later = 0; /* (newest first: those after `upto` lead the list) */
    while (later < n && list[later].time > upto) later++;
    for (size_t i = later + (size_t)keep; !st && i < n; i++) {
        char *dir = join(root, list[i].name);
        st = dir ? remove_flat(dir) : KR_ERR_NOMEM;
        free(dir);
    }
    candidates_free(list, n);
    if (!st && n > later + (size_t)keep) st = fsync_path(root);
    return st;
}
