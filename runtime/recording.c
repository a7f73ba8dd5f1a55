/* Reading a recording of frames (docs/viewer.md, "The recording's
 * format"): the manifest is checked whole when the recording is opened,
 * and each simulator file is indexed by walking its block headers, so that
 * a truncated or foreign file is refused at once while no frame is
 * decompressed before it is asked for. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "base/error.h"
#include "base/file.h"
#include "runtime/recording.h"

#define FILE_HEADER 16
#define BLOCK_HEADER 40
/* The most a zstd frame of N bytes can decompress to: every block takes at
 * least 3 bytes and gives at most ZSTD_BLOCKSIZE_MAX (128 KiB). */
#define ZSTD_MAX_RATIO (131072 / 3)
/* Bytes per agent in a block: id, x, y, size, rgba, shape, layer. */
#define AGENT_BYTES 26u
#define PIECE_HEADER 20u

static const char *const shape_names[KR__SHAPE_COUNT] = { "circle", "square", "triangle", "diamond" };

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static double getf64(const unsigned char *p)
{
    uint64_t u = get64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static float getf32(const unsigned char *p)
{
    uint32_t u = get32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- the manifest ---- */

typedef struct manifest_reader {
    const char *path;            /* DIR/manifest.json, for the messages */
    char where[160];             /* the JSON path being read */
    const char *series;          /* the series file's name, or NULL */
} manifest_reader_t;

static kr_status_t bad(const manifest_reader_t *r, const char *key, const char *expected, const json_t *found)
{
    char *text = found ? json_dumps(found, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    kr_status_t st = kr__fail(KR_ERR_CORRUPT, "%s: %s%s%s: expected %s, found %s", r->path, r->where,
                              r->where[0] && key[0] ? "." : "", key, expected, text ? text : "nothing");
    free(text);
    return st;
}

static bool is_number(const json_t *v) { return json_is_number(v) && isfinite(json_number_value(v)); }

/* A plain file name of the folder: never a path that leaves it. */
static bool plain_file_name(const char *s)
{
    return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/') && !strchr(s, '\\');
}

static char *dup_string(const json_t *v)
{
    char *s = strdup(json_string_value(v));
    if (!s) kr__fail(KR_ERR_NOMEM, "out of memory");
    return s;
}

/* "#rrggbb" or "#rrggbbaa" into 0xAABBGGRR. */
static bool parse_colour(const json_t *v, uint32_t *rgba)
{
    const char *s = json_string_value(v);
    size_t len = s ? strlen(s) : 0;
    if ((len != 7 && len != 9) || s[0] != '#' || strspn(s + 1, "0123456789abcdefABCDEF") != len - 1) return false;
    unsigned long hex = strtoul(s + 1, NULL, 16);
    if (len == 7) hex = hex << 8 | 0xff;
    *rgba = (uint32_t)((hex >> 24 & 0xff) | (hex >> 16 & 0xff) << 8 | (hex >> 8 & 0xff) << 16 | (hex & 0xff) << 24);
    return true;
}

static bool get_numbers(const json_t *v, size_t n, double *out)
{
    if (!json_is_array(v) || json_array_size(v) != n) return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_number(json_array_get(v, i))) return false;
        out[i] = json_number_value(json_array_get(v, i));
    }
    return true;
}

static kr_status_t read_layer(manifest_reader_t *r, const json_t *v, kr__rec_layer_t *l)
{
    if (!json_is_object(v)) return bad(r, "", "an object", v);
    const json_t *name = json_object_get(v, "name"), *shape = json_object_get(v, "shape"),
                 *colour = json_object_get(v, "colour"), *size = json_object_get(v, "size");
    if (!json_is_string(name)) return bad(r, "name", "a string", name);
    l->shape = KR__SHAPE_COUNT;
    for (uint8_t s = 0; s < KR__SHAPE_COUNT; s++)
        if (json_is_string(shape) && !strcmp(json_string_value(shape), shape_names[s])) l->shape = s;
    if (l->shape == KR__SHAPE_COUNT) return bad(r, "shape", "circle, square, triangle or diamond", shape);
    if (!parse_colour(colour, &l->rgba)) return bad(r, "colour", "a colour \"#rrggbbaa\"", colour);
    if (!is_number(size) || !(json_number_value(size) > 0)) return bad(r, "size", "a number > 0", size);
    l->size = json_number_value(size);
    return (l->name = dup_string(name)) ? KR_OK : KR_ERR_NOMEM;
}

static kr_status_t read_field(manifest_reader_t *r, const json_t *v, kr__rec_field_t *f)
{
    if (!json_is_object(v)) return bad(r, "", "an object", v);
    const json_t *name = json_object_get(v, "name"), *map = json_object_get(v, "colormap"),
                 *min = json_object_get(v, "min"), *max = json_object_get(v, "max");
    if (!json_is_string(name)) return bad(r, "name", "a string", name);
    if (!json_is_array(map) || json_array_size(map) < 2 || json_array_size(map) > KR__COLORMAP_MAX_STOPS)
        return bad(r, "colormap", "a list of 2 to 16 colours", map);
    f->stop_count = (uint32_t)json_array_size(map);
    for (uint32_t i = 0; i < f->stop_count; i++)
        if (!parse_colour(json_array_get(map, i), &f->stops[i]))
            return bad(r, "colormap", "a list of colours \"#rrggbbaa\"", map);
    if (!is_number(min)) return bad(r, "min", "a number", min);
    if (!is_number(max) || json_number_value(max) < json_number_value(min))
        return bad(r, "max", "a number >= min", max);
    f->min = json_number_value(min);
    f->max = json_number_value(max);
    return (f->name = dup_string(name)) ? KR_OK : KR_ERR_NOMEM;
}

static kr_status_t read_sim(manifest_reader_t *r, const char *dir, const json_t *v, kr__rec_sim_t *s)
{
    if (!json_is_object(v)) return bad(r, "", "an object", v);
    const json_t *name = json_object_get(v, "name"), *rank = json_object_get(v, "rank"),
                 *rect = json_object_get(v, "rect"), *file = json_object_get(v, "file");
    if (!json_is_string(name)) return bad(r, "name", "a string", name);
    if (!json_is_integer(rank) || json_integer_value(rank) < 0 || json_integer_value(rank) > INT32_MAX)
        return bad(r, "rank", "a whole number >= 0", rank);
    s->rank = (int)json_integer_value(rank);
    if (rect && !json_is_null(rect)) {
        double c[4];
        if (!get_numbers(rect, 4, c)) return bad(r, "rect", "[x0, y0, x1, y1] or null", rect);
        for (int i = 0; i < 4; i++) {
            if (c[i] != floor(c[i]) || fabs(c[i]) > INT32_MAX) return bad(r, "rect", "whole numbers", rect);
            s->rect[i] = (int32_t)c[i];
        }
        s->has_rect = true;
    }
    if (!json_is_string(file) || !plain_file_name(json_string_value(file)) ||
        !strcmp(json_string_value(file), "manifest.json") ||
        (r->series && !strcmp(json_string_value(file), r->series)))
        return bad(r, "file", "the name of a frames file in the folder (not the manifest's or the series')", file);
    size_t n = strlen(dir) + strlen(json_string_value(file)) + 2;
    s->name = dup_string(name);
    s->path = malloc(n);
    if (!s->name || !s->path) return kr__fail(KR_ERR_NOMEM, "out of memory");
    snprintf(s->path, n, "%s/%s", dir, json_string_value(file));
    return KR_OK;
}

/* Reads the array v's elements with fn into *items (count *n), the
 * element's JSON path kept for the messages. */
#define READ_LIST(r, key, v, items, n, ...)                                                                 \
    do {                                                                                                     \
        if (!json_is_array(v)) return bad(r, key, "a list", v);                                              \
        *(n) = json_array_size(v);                                                                           \
        *(items) = calloc(*(n) ? *(n) : 1, sizeof **(items));                                                \
        if (!*(items)) return kr__fail(KR_ERR_NOMEM, "out of memory");                                       \
        size_t keep = strlen((r)->where);                                                                    \
        for (size_t i_ = 0; i_ < *(n); i_++) {                                                               \
            snprintf((r)->where + keep, sizeof (r)->where - keep, "%s%s[%zu]", keep ? "." : "", key, i_);    \
            kr_status_t st_ = __VA_ARGS__;                                                                   \
            if (st_) return st_;                                                                             \
        }                                                                                                    \
        (r)->where[keep] = '\0';                                                                             \
    } while (0)

static kr_status_t read_world(manifest_reader_t *r, const char *dir, const json_t *v, kr__rec_world_t *w)
{
    if (!json_is_object(v)) return bad(r, "", "an object", v);
    const json_t *name = json_object_get(v, "name"), *bounds = json_object_get(v, "bounds"),
                 *grid = json_object_get(v, "grid");
    if (!json_is_string(name)) return bad(r, "name", "a string", name);
    if (!(w->name = dup_string(name))) return KR_ERR_NOMEM;
    if (!get_numbers(bounds, 4, w->bounds) || !(w->bounds[2] > w->bounds[0]) || !(w->bounds[3] > w->bounds[1]))
        return bad(r, "bounds", "[x0, y0, x1, y1] with x0 < x1 and y0 < y1", bounds);
    if (grid && !json_is_null(grid)) {
        const json_t *gw = json_object_get(grid, "width"), *gh = json_object_get(grid, "height"),
                     *cell = json_object_get(grid, "cell");
        if (!json_is_integer(gw) || json_integer_value(gw) < 1 || json_integer_value(gw) > 65536 ||
            !json_is_integer(gh) || json_integer_value(gh) < 1 || json_integer_value(gh) > 65536 ||
            !is_number(cell) || !(json_number_value(cell) > 0) ||
            !get_numbers(json_object_get(grid, "origin"), 2, w->origin))
            return bad(r, "grid", "{\"width\", \"height\" (1 to 65536), \"cell\" > 0, \"origin\": [x, y]} or null",
                       grid);
        w->has_grid = true;
        w->grid_width = (uint32_t)json_integer_value(gw);
        w->grid_height = (uint32_t)json_integer_value(gh);
        w->cell = json_number_value(cell);
    }
    const json_t *layers = json_object_get(v, "layers"), *fields = json_object_get(v, "fields"),
                 *sims = json_object_get(v, "simulators");
    READ_LIST(r, "layers", layers, &w->layers, &w->layer_count, read_layer(r, json_array_get(layers, i_), &w->layers[i_]));
    if (w->layer_count > 256) return bad(r, "layers", "at most 256 layers", layers);
    READ_LIST(r, "fields", fields, &w->fields, &w->field_count, read_field(r, json_array_get(fields, i_), &w->fields[i_]));
    if (w->field_count && !w->has_grid) return bad(r, "grid", "a grid for the fields", grid);
    READ_LIST(r, "simulators", sims, &w->sims, &w->sim_count,
              read_sim(r, dir, json_array_get(sims, i_), &w->sims[i_]));
    if (!w->sim_count) return bad(r, "simulators", "at least one simulator", sims);
    return KR_OK;
}

static kr_status_t read_manifest(kr__recording_t *rec, const json_t *root, manifest_reader_t *r)
{
    const json_t *format = json_object_get(root, "format"), *version = json_object_get(root, "version");
    if (!json_is_string(format) || strcmp(json_string_value(format), "kairos-frames"))
        return bad(r, "format", "\"kairos-frames\"", format);
    if (!json_is_integer(version) || json_integer_value(version) != 1) return bad(r, "version", "1", version);
    const json_t *times = json_object_get(root, "times"), *series = json_object_get(root, "series"),
                 *worlds = json_object_get(root, "worlds");
    if (!json_is_array(times) || !json_array_size(times)) return bad(r, "times", "a list of frame times", times);
    rec->frame_count = json_array_size(times);
    /* a recording begun at a restart's cut numbers its frames from there */
    const json_t *first = json_object_get(root, "first_frame");
    if (first && (!json_is_integer(first) || json_integer_value(first) < 0 || json_integer_value(first) > UINT32_MAX))
        return bad(r, "first_frame", "a whole number >= 0", first);
    rec->first_frame = first ? (uint32_t)json_integer_value(first) : 0;
    if (!(rec->times = malloc(rec->frame_count * sizeof *rec->times))) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < rec->frame_count; i++) {
        const json_t *t = json_array_get(times, i);
        if (!is_number(t) || (i && !(json_number_value(t) > rec->times[i - 1]))) {
            snprintf(r->where, sizeof r->where, "times[%zu]", i);
            return bad(r, "", "a number above the one before", t);
        }
        rec->times[i] = json_number_value(t);
    }
    if (series && !json_is_null(series)) {
        if (!json_is_string(series) || !plain_file_name(json_string_value(series)) ||
            !strcmp(json_string_value(series), "manifest.json"))
            return bad(r, "series", "the name of a file in the folder, or null", series);
        if (!(rec->series = dup_string(series))) return KR_ERR_NOMEM;
        r->series = rec->series;
        size_t n = strlen(rec->dir) + strlen(rec->series) + 2;
        char *path = malloc(n);
        if (!path) return kr__fail(KR_ERR_NOMEM, "out of memory");
        snprintf(path, n, "%s/%s", rec->dir, rec->series);
        bool there = access(path, R_OK) == 0;
        free(path);
        if (!there) return bad(r, "series", "a file there (or null)", series);
    }
    /* informational figures, checked all the same: a page reads them */
    const json_t *end = json_object_get(root, "end_time"), *every = json_object_get(root, "frame_every"),
                 *ranks = json_object_get(root, "ranks");
    if (end && (!is_number(end) || json_number_value(end) < rec->times[rec->frame_count - 1]))
        return bad(r, "end_time", "a time at or after the last frame's", end);
    if (every && (!is_number(every) || !(json_number_value(every) > 0)))
        return bad(r, "frame_every", "a time > 0", every);
    if (ranks && (!json_is_integer(ranks) || json_integer_value(ranks) < 1))
        return bad(r, "ranks", "a whole number >= 1", ranks);
    READ_LIST(r, "worlds", worlds, &rec->worlds, &rec->world_count,
              read_world(r, rec->dir, json_array_get(worlds, i_), &rec->worlds[i_]));
    /* a frames file is one simulator's (it was served twice) */
    for (size_t a = 0; a < rec->world_count; a++)
        for (size_t i = 0; i < rec->worlds[a].sim_count; i++)
            for (size_t b = a; b < rec->world_count; b++)
                for (size_t j = b == a ? i + 1 : 0; j < rec->worlds[b].sim_count; j++)
                    if (!strcmp(rec->worlds[a].sims[i].path, rec->worlds[b].sims[j].path)) {
                        snprintf(r->where, sizeof r->where, "worlds[%zu].simulators[%zu]", b, j);
                        json_t *f = json_string(strrchr(rec->worlds[b].sims[j].path, '/') + 1);
                        kr_status_t st = bad(r, "file", "a file of its own (another simulator's names it too)", f);
                        json_decref(f);
                        return st;
                    }
    return KR_OK;
}

/* ---- the simulator files ---- */

/* A block's time against the manifest's: the manifest's JSON may print a
 * time with fewer digits than the f64 of the block. */
static bool same_time(double block, double manifest)
{
    return fabs(block - manifest) <= 1e-9 * fmax(1, fabs(manifest));
}

/* Walks the block headers of s's file: one block per frame, in order, each
 * within the file, nothing after the last. */
static kr_status_t index_file(const kr__recording_t *rec, const kr__rec_world_t *w, kr__rec_sim_t *s)
{
    int fd = kr__open_regular(s->path);
    if (fd == KR__NOT_REGULAR) return kr__fail(KR_ERR_IO, "%s: expected a regular file, found another kind", s->path);
    if (fd < 0)
        return kr__fail(errno == ENOENT ? KR_ERR_CORRUPT : KR_ERR_IO, "%s: expected the frames of simulator %s, "
                        "found no file to read (%s)", s->path, s->name, strerror(errno));
    struct stat sb;
    kr_status_t st = KR_OK;
    unsigned char h[BLOCK_HEADER];
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        st = kr__fail(KR_ERR_IO, "%s: expected a regular file, found another kind", s->path);
    } else if (pread(fd, h, FILE_HEADER, 0) != FILE_HEADER) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a %d-byte header, found %lld bytes: truncated", s->path,
                      FILE_HEADER, (long long)sb.st_size);
    } else if (memcmp(h, "KRFRAMES", 8)) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a kairos frames file (KRFRAMES), found another header", s->path);
    } else if (get32(h + 8) != 1) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected frames file version 1, found version %" PRIu32, s->path,
                      get32(h + 8));
    } else if (get32(h + 12) != 0) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected 0 in the header's last 4 bytes, found %" PRIu32, s->path,
                      get32(h + 12));
    } else if (!(s->blocks = calloc(rec->frame_count, sizeof *s->blocks))) {
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    uint64_t at = FILE_HEADER, size = (uint64_t)sb.st_size;
    for (size_t i = 0; !st && i < rec->frame_count; i++) {
        if (size - at < BLOCK_HEADER) {
            st = kr__fail(KR_ERR_CORRUPT, "%s: expected %zu frames, found %zu: truncated", s->path, rec->frame_count,
                          i);
            break;
        }
        if (pread(fd, h, BLOCK_HEADER, (off_t)at) != BLOCK_HEADER) {
            st = kr__fail(KR_ERR_IO, "%s: cannot read: %s", s->path, strerror(errno));
            break;
        }
        kr__rec_block_t *b = &s->blocks[i];
        b->offset = at + BLOCK_HEADER;
        b->agents = get32(h + 16);
        b->pieces = get32(h + 20);
        b->label_bytes = get32(h + 24);
        b->packed = get32(h + 28);
        b->raw = get32(h + 32);
        uint64_t least = (uint64_t)b->agents * AGENT_BYTES + (uint64_t)b->pieces * PIECE_HEADER + b->label_bytes;
        if (memcmp(h, "KRFB", 4))
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu at byte %" PRIu64 ": expected KRFB, found other bytes",
                          s->path, i, at);
        else if (get32(h + 4) != rec->first_frame + i || !same_time(getf64(h + 8), rec->times[i]))
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu: expected frame %zu at time %.17g (manifest.json), "
                          "found frame %" PRIu32 " at time %.17g", s->path, i, rec->first_frame + i, rec->times[i],
                          get32(h + 4), getf64(h + 8));
        else if (get32(h + 36) != 0)
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu: expected 0 in the block header's last 4 bytes, found %"
                          PRIu32, s->path, i, get32(h + 36));
        else if (b->packed > size - b->offset)
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu: expected %" PRIu32 " compressed bytes, found %" PRIu64
                          ": truncated", s->path, i, b->packed, size - b->offset);
        else if (b->raw < least || b->raw / ZSTD_MAX_RATIO > b->packed)
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu: expected a raw size from %" PRIu64 " to %" PRIu64
                          " bytes (its agents and pieces need the least; %" PRIu32 " compressed bytes give at most "
                          "the most), found %" PRIu32, s->path, i, least,
                          (uint64_t)b->packed * ZSTD_MAX_RATIO + ZSTD_MAX_RATIO - 1, b->packed, b->raw);
        else if (b->pieces && !w->field_count)
            st = kr__fail(KR_ERR_CORRUPT, "%s: block %zu: expected no field pieces (world %s has no field), found %"
                          PRIu32, s->path, i, w->name, b->pieces);
        at = b->offset + b->packed;
    }
    if (!st && at != size)
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected %" PRIu64 " bytes (the end of frame %zu), found %" PRIu64,
                      s->path, at, rec->frame_count - 1, size);
    close(fd);
    return st;
}

kr_status_t kr__recording_open(const char *dir, kr__recording_t **out)
{
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb))
        return kr__fail(KR_ERR_IO, "%s: expected a frames folder, found none (%s)", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return kr__fail(KR_ERR_IO, "%s: expected a frames folder, found another kind of file", dir);
    kr__recording_t *rec = calloc(1, sizeof *rec);
    size_t n = strlen(dir) + sizeof "/manifest.json";
    char *path = malloc(n);
    if (!rec || !path || !(rec->dir = strdup(dir))) {
        free(rec);
        free(path);
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    snprintf(path, n, "%s/manifest.json", dir);
    manifest_reader_t r = { .path = path };
    json_error_t err = { .text = "" };
    bool odd;
    FILE *in = kr__fopen_regular(path, &odd);
    if (!in) snprintf(err.text, sizeof err.text, "%s", strerror(errno)); /* (no JSON read) */
    json_t *root = in ? json_loadf(in, JSON_REJECT_DUPLICATES, &err) : NULL;
    if (in) fclose(in);
    kr_status_t st = KR_OK;
    if (odd)
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected a regular file, found another kind", path);
    else if (!root && access(path, F_OK))
        st = kr__fail(KR_ERR_CORRUPT, "%s: expected the manifest of a finished recording, found none "
                      "(a recording still running or stopped?)", path);
    else if (!root)
        st = kr__fail(KR_ERR_CORRUPT, "%s: line %d column %d: expected valid JSON, found %s", path, err.line,
                      err.column, err.text);
    else if (!json_is_object(root))
        st = bad(&r, "(top)", "an object", root);
    else
        st = read_manifest(rec, root, &r);
    json_decref(root);
    for (size_t i = 0; !st && i < rec->world_count; i++)
        for (size_t j = 0; !st && j < rec->worlds[i].sim_count; j++)
            st = index_file(rec, &rec->worlds[i], &rec->worlds[i].sims[j]);
    free(path);
    if (st) {
        kr__recording_close(rec);
        return st;
    }
    *out = rec;
    return KR_OK;
}

void kr__recording_close(kr__recording_t *rec)
{
    if (!rec) return;
    for (size_t i = 0; i < rec->world_count; i++) {
        kr__rec_world_t *w = &rec->worlds[i];
        for (size_t j = 0; w->layers && j < w->layer_count; j++) free(w->layers[j].name);
        for (size_t j = 0; w->fields && j < w->field_count; j++) free(w->fields[j].name);
        for (size_t j = 0; w->sims && j < w->sim_count; j++) {
            free(w->sims[j].name);
            free(w->sims[j].path);
            free(w->sims[j].blocks);
        }
        free(w->name);
        free(w->layers);
        free(w->fields);
        free(w->sims);
    }
    free(rec->worlds);
    free(rec->times);
    free(rec->series);
    free(rec->dir);
    free(rec);
}

long kr__recording_world_named(const kr__recording_t *rec, const char *name)
{
    for (size_t i = 0; i < rec->world_count; i++)
        if (!strcmp(rec->worlds[i].name, name)) return (long)i;
    return -1;
}

/* ---- a world's frame ---- */

/* One simulator's block, decompressed. */
typedef struct raw_block {
    unsigned char *bytes;
    uint32_t size;
} raw_block_t;

static kr_status_t read_block(const kr__rec_sim_t *s, size_t index, raw_block_t *out)
{
    const kr__rec_block_t *b = &s->blocks[index];
    unsigned char *packed = malloc(b->packed ? b->packed : 1);
    out->bytes = malloc(b->raw ? b->raw : 1);
    out->size = b->raw;
    if (!packed || !out->bytes) {
        free(packed);
        return kr__fail(KR_ERR_NOMEM, "out of memory (frame %zu of %s: %" PRIu32 " bytes)", index, s->path, b->raw);
    }
    kr_status_t st = KR_OK;
    int fd = kr__open_regular(s->path);
    if (fd == KR__NOT_REGULAR) errno = EINVAL; /* (replaced since it was indexed) */
    ssize_t got = fd < 0 ? -1 : pread(fd, packed, b->packed, (off_t)b->offset);
    if (got != (ssize_t)b->packed) {
        st = kr__fail(KR_ERR_IO, "%s: cannot read frame %zu: %s", s->path, index,
                      got < 0 ? strerror(errno) : "the file became shorter");
    } else {
        size_t z = ZSTD_decompress(out->bytes, b->raw, packed, b->packed);
        if (ZSTD_isError(z))
            st = kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: expected a zstd frame of %" PRIu32 " bytes, found one zstd "
                          "refuses: %s", s->path, index, b->raw, ZSTD_getErrorName(z));
        else if (z != b->raw)
            st = kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: expected %" PRIu32 " raw bytes, found %zu", s->path, index,
                          b->raw, z);
    }
    if (fd >= 0) close(fd);
    free(packed);
    return st;
}

/* Checks a decompressed block against its header and the world: the
 * field pieces inside the grid and the labels exactly filling the rest. */
static kr_status_t check_block(const kr__rec_world_t *w, const kr__rec_sim_t *s, size_t index, const raw_block_t *raw)
{
    const kr__rec_block_t *b = &s->blocks[index];
    uint64_t at = (uint64_t)b->agents * AGENT_BYTES;
    const unsigned char *p = raw->bytes;
    for (uint32_t a = 0; a < b->agents; a++) {
        uint8_t shape = p[(uint64_t)b->agents * 24 + a], layer = p[(uint64_t)b->agents * 25 + a];
        if (shape >= KR__SHAPE_COUNT || layer >= w->layer_count)
            return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: agent %" PRIu32 ": expected a shape below 4 and a layer "
                            "below %zu, found shape %u, layer %u", s->path, index, a, w->layer_count, shape, layer);
    }
    for (uint32_t k = 0; k < b->pieces; k++) {
        if (raw->size - at < PIECE_HEADER)
            return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: expected %" PRIu32 " field pieces, found %" PRIu32,
                            s->path, index, b->pieces, k);
        uint32_t field = get32(p + at), pw = get32(p + at + 12), ph = get32(p + at + 16);
        int64_t x0 = (int32_t)get32(p + at + 4), y0 = (int32_t)get32(p + at + 8);
        if (field >= w->field_count || x0 < 0 || y0 < 0 || x0 + pw > w->grid_width || y0 + ph > w->grid_height)
            return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: field piece %" PRIu32 ": expected a field below %zu inside "
                            "the %" PRIu32 "x%" PRIu32 " grid, found field %" PRIu32 " at %" PRId64 ",%" PRId64
                            " size %" PRIu32 "x%" PRIu32, s->path, index, k, w->field_count, w->grid_width,
                            w->grid_height, field, x0, y0, pw, ph);
        at += PIECE_HEADER;
        uint64_t values = (uint64_t)pw * ph * 4;
        if (raw->size - at < values)
            return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: field piece %" PRIu32 ": expected %" PRIu64 " bytes of "
                            "values, found %" PRIu64, s->path, index, k, values, raw->size - at);
        at += values;
    }
    if (raw->size - at != b->label_bytes)
        return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: expected %" PRIu32 " label bytes after the fields, found %"
                        PRIu64, s->path, index, b->label_bytes, raw->size - at);
    while (at < raw->size) {
        if (raw->size - at < 8 || get32(p + at) >= b->agents || get32(p + at + 4) > raw->size - at - 8)
            return kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: label at byte %" PRIu64 ": expected an agent below %"
                            PRIu32 " and its length within the block, found neither", s->path, index, at, b->agents);
        at += 8 + (uint64_t)get32(p + at + 4);
    }
    return KR_OK;
}

/* Where an agent of the merged frame comes from, and its sort key. */
typedef struct origin {
    uint8_t layer;
    uint64_t id;
    uint32_t sim, at;
} origin_t;

static int by_layer_and_id(const void *a, const void *b)
{
    const origin_t *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    /* (an id twice in a world is a writer's mistake: drawn in file order) */
    if (x->sim != y->sim) return x->sim < y->sim ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

typedef struct label {
    uint32_t agent, seq, length;
    const char *text;
} label_t;

static int by_agent(const void *a, const void *b)
{
    const label_t *x = a, *y = b;
    if (x->agent != y->agent) return x->agent < y->agent ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

kr_status_t kr__recording_load(const kr__recording_t *rec, size_t world, size_t index, kr__frame_t *out)
{
    memset(out, 0, sizeof *out);
    if (world >= rec->world_count || index >= rec->frame_count)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: expected a world below %zu and a frame below %zu, found %zu and %zu",
                        rec->dir, rec->world_count, rec->frame_count, world, index);
    const kr__rec_world_t *w = &rec->worlds[world];
    out->time = rec->times[index];
    out->field_count = (uint32_t)w->field_count;
    out->grid_width = w->has_grid ? w->grid_width : 0;
    out->grid_height = w->has_grid ? w->grid_height : 0;
    raw_block_t *raw = calloc(w->sim_count ? w->sim_count : 1, sizeof *raw);
    if (!raw) return kr__fail(KR_ERR_NOMEM, "out of memory");
    kr_status_t st = KR_OK;
    uint64_t n = 0, labels = 0, label_bytes = 0;
    for (size_t s = 0; !st && s < w->sim_count; s++) {
        st = read_block(&w->sims[s], index, &raw[s]);
        if (!st) st = check_block(w, &w->sims[s], index, &raw[s]);
        n += w->sims[s].blocks[index].agents;
        label_bytes += w->sims[s].blocks[index].label_bytes;
    }
    for (size_t s = 0; !st && s < w->sim_count; s++) {
        const kr__rec_block_t *b = &w->sims[s].blocks[index];
        for (uint64_t at = raw[s].size - b->label_bytes; at < raw[s].size; at += 8 + get32(raw[s].bytes + at + 4))
            labels++;
    }
    if (!st && n > UINT32_MAX) st = kr__fail(KR_ERR_CORRUPT, "%s: frame %zu: expected at most 2^32-1 agents in "
                                             "world %s, found %" PRIu64, rec->dir, index, w->name, n);
    /* Every array in one allocation, 8-byte items first. */
    size_t cells = (size_t)out->field_count * out->grid_width * out->grid_height;
    size_t bytes = n * (8 + 4 * 4 + 2) + labels * (sizeof(char *) + 8) + cells * 4 + label_bytes + 64;
    origin_t *order = NULL;
    if (!st && (!(out->storage = malloc(bytes)) || !(order = malloc((n ? n : 1) * sizeof *order))))
        st = kr__fail(KR_ERR_NOMEM, "out of memory (frame %zu of world %s: %" PRIu64 " agents)", index, w->name, n);
    if (!st) {
        char *m = out->storage;
        out->n = (uint32_t)n;
        out->label_count = (uint32_t)labels;
        out->id = (uint64_t *)m, m += n * 8;
        out->label = (const char **)m, m += labels * sizeof(char *);
        out->x = (float *)m, m += n * 4;
        out->y = (float *)m, m += n * 4;
        out->size = (float *)m, m += n * 4;
        out->rgba = (uint32_t *)m, m += n * 4;
        out->label_agent = (uint32_t *)m, m += labels * 4;
        out->label_length = (uint32_t *)m, m += labels * 4;
        out->fields = (float *)m, m += cells * 4;
        out->shape = (uint8_t *)m, m += n;
        out->layer = (uint8_t *)m, m += n;
        char *text = m;
        /* the merged order */
        size_t k = 0;
        for (size_t s = 0; s < w->sim_count; s++) {
            uint32_t an = w->sims[s].blocks[index].agents;
            for (uint32_t a = 0; a < an; a++)
                order[k++] = (origin_t){ .layer = raw[s].bytes[(uint64_t)an * 25 + a],
                                         .id = get64(raw[s].bytes + (uint64_t)a * 8), .sim = (uint32_t)s, .at = a };
        }
        qsort(order, n, sizeof *order, by_layer_and_id);
        /* where each simulator's agents went, for the labels */
        uint32_t **rank_of = calloc(w->sim_count ? w->sim_count : 1, sizeof *rank_of);
        for (size_t s = 0; rank_of && s < w->sim_count; s++)
            if (!(rank_of[s] = malloc((w->sims[s].blocks[index].agents + 1) * sizeof **rank_of))) {
                for (size_t t = 0; t < s; t++) free(rank_of[t]);
                free(rank_of);
                rank_of = NULL;
            }
        if (!rank_of) st = kr__fail(KR_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; !st && i < n; i++) {
            const origin_t *o = &order[i];
            const unsigned char *p = raw[o->sim].bytes;
            uint64_t an = w->sims[o->sim].blocks[index].agents, a = o->at;
            out->id[i] = o->id;
            out->x[i] = getf32(p + an * 8 + a * 4);
            out->y[i] = getf32(p + an * 12 + a * 4);
            out->size[i] = getf32(p + an * 16 + a * 4);
            out->rgba[i] = get32(p + an * 20 + a * 4);
            out->shape[i] = p[an * 24 + a];
            out->layer[i] = o->layer;
            rank_of[o->sim][a] = i;
        }
        for (size_t c = 0; c < cells; c++) out->fields[c] = NAN;
        /* fields and labels, simulator by simulator; labels then sorted by agent */
        uint32_t l = 0;
        for (size_t s = 0; !st && s < w->sim_count; s++) {
            const kr__rec_block_t *b = &w->sims[s].blocks[index];
            const unsigned char *p = raw[s].bytes;
            uint64_t at = (uint64_t)b->agents * AGENT_BYTES;
            for (uint32_t piece = 0; piece < b->pieces; piece++) {
                uint32_t field = get32(p + at), x0 = get32(p + at + 4), y0 = get32(p + at + 8), pw = get32(p + at + 12),
                         ph = get32(p + at + 16);
                at += PIECE_HEADER;
                float *grid = out->fields + (size_t)field * out->grid_width * out->grid_height;
                for (uint32_t y = 0; y < ph; y++)
                    for (uint32_t x = 0; x < pw; x++, at += 4)
                        grid[(size_t)(y0 + y) * out->grid_width + x0 + x] = getf32(p + at);
            }
            for (; at < raw[s].size; l++) {
                uint32_t len = get32(p + at + 4);
                out->label_agent[l] = rank_of[s][get32(p + at)];
                out->label_length[l] = len;
                memcpy(text, p + at + 8, len);
                out->label[l] = text;
                text += len;
                at += 8 + len;
            }
        }
        for (size_t s = 0; rank_of && s < w->sim_count; s++) free(rank_of[s]);
        free(rank_of);
        /* the labels by agent (stable: an agent's labels keep their order) */
        label_t *sorted = out->label_count ? malloc(out->label_count * sizeof *sorted) : NULL;
        if (!st && out->label_count && !sorted) st = kr__fail(KR_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; !st && i < out->label_count; i++)
            sorted[i] = (label_t){ out->label_agent[i], i, out->label_length[i], out->label[i] };
        if (!st && sorted) qsort(sorted, out->label_count, sizeof *sorted, by_agent);
        for (uint32_t i = 0; !st && i < out->label_count; i++) {
            out->label_agent[i] = sorted[i].agent;
            out->label_length[i] = sorted[i].length;
            out->label[i] = sorted[i].text;
        }
        free(sorted);
    }
    free(order);
    for (size_t s = 0; s < w->sim_count; s++) free(raw[s].bytes);
    free(raw);
    return st;
}

void kr__frame_fini(kr__frame_t *f)
{
    free(f->storage);
    memset(f, 0, sizeof *f);
}

uint32_t kr__colormap(const uint32_t *stops, uint32_t stop_count, double min, double max, double value)
{
    if (isnan(value) || stop_count == 0) return 0;
    if (!(value > min)) return stops[0];
    if (!(value < max)) return stops[stop_count - 1];
    double at = (value - min) / (max - min) * (stop_count - 1);
    uint32_t i = (uint32_t)at;
    if (i >= stop_count - 1) return stops[stop_count - 1];
    double t = at - i;
    uint32_t rgba = 0;
    for (int shift = 0; shift < 32; shift += 8) {
        double a = stops[i] >> shift & 0xff, b = stops[i + 1] >> shift & 0xff;
        rgba |= (uint32_t)lround(a + (b - a) * t) << shift;
    }
    return rgba;
}
