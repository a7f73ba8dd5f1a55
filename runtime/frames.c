/* Frames: what `kairos run --frames DIR` records (docs/viewer.md). At
 * fixed model times every simulator that draws (kairos/render.h) appends
 * one block to its own file, on the rank that runs it; rank 0 writes the
 * manifest when the run is complete. Frames are taken at cuts, where
 * every rank has run every event before the cut and nothing else, so a
 * recording is the same on any number of ranks and adds no event. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kairos/kairos.h"
#include "base/error.h"
#include "base/grow.h"
#include "net/collectives.h"
#include "runtime/run_private.h"
#include "regions/departure.h"
#include "runtime/frame_writer.h"
#include "schedulers/model_private.h"
#include "schedulers/render.h"

#define FRAMES_FORMAT "kairos-frames"
#define FRAMES_VERSION 1u
#define DEFAULT_MOST_FRAMES 200u
#define MOST_FRAMES 1000000u
#define ZSTD_LEVEL 1

/* One agent of a frame, before it is written as columns. */
typedef struct agent_rec {
    uint64_t id;
    float x, y, size;
    uint32_t rgba;              /* bytes R, G, B, A */
    uint8_t shape, layer;
    uint16_t label_len;
    uint32_t label_at;          /* in the labels buffer */
} agent_rec_t;

typedef struct block {
    agent_rec_t *agents;
    size_t n, cap;
    kr_buf_t labels;            /* label bytes, by agent_rec_t.label_at */
    kr_buf_t raw;               /* the block's raw bytes */
    float *cells;               /* a field's values, as sampled */
    size_t cells_cap;
} block_t;

/* What every frame reuses. */
struct kr__frame_scratch {
    block_t block;
    kr__frame_writer_t *writer;  /* compresses and writes, on its own thread */
};

typedef struct kr__frame_file {
    kr__out_file_t out;
    run_ctx_t *ctx;
    block_t departed;           /* a region's migrants in transit, from its step at departed_at */
    kr_time_t departed_at, departed_until; /* the frames in [at, until) draw them (until: their arrival) */
    kr_status_t failed;         /* drawing a departure failed: reported when the frame is taken */
    bool open;
    bool resume;                /* a restart goes on with this file from byte resume_at */
    uint64_t resume_at;
    bool has_extent;            /* the agents' extent, for a world that declared no bounds */
    double extent[4];
} frame_file_t;

static bool draws(kr_sim_t *s)
{
    const kr__render_t *r = kr__render_of(s);
    return kr_sim_is_local(s) && r && (r->layer_count || r->field_count);
}

/* 0xRRGGBBAA as bytes R, G, B, A in a little-endian word. */
static uint32_t rgba_bytes(uint32_t c) { return __builtin_bswap32(c); }

static double units(const run_ctx_t *c, kr_time_t t) { return kr_time_to_units(t, c->file->precision); }

kr_status_t kr__run_frames_plan(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    const char *dir = c->opt->frames_dir;
    if (!dir) return KR_OK;
    kr_model_t *m = c->model;
    /* what draws, and the largest time step among it, over every rank */
    int64_t mine[2] = { 0, 0 }, all[2];
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        if (!draws(s)) continue;
        mine[0] = 1;
        if ((int64_t)kr_sim_time_step(s) > mine[1]) mine[1] = (int64_t)kr_sim_time_step(s);
    }
    all[0] = mine[0];
    all[1] = mine[1];
    if (kr__run_distributed(c)) MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, c->opt->comm);
    if (!all[0])
        return kr__fail(KR_ERR_INVALID_ARG, "--frames %s: expected a simulator that draws (a kind with render layers "
                        "or fields, docs/viewer.md), found none in %s", dir, c->file->path);
    kr_time_t end = kr_model_end_time(m);
    kr_time_t step = all[1] ? (kr_time_t)all[1] : (end / 100 ? end / 100 : 1);
    fr->series_step = step;
    if (c->opt->frame_every > 0) {
        double ticks = c->opt->frame_every * (double)c->file->precision;
        if (ticks > 1.8e19)
            return kr__fail(KR_ERR_INVALID_ARG, "--frame-every %g: expected a period up to the end time %g, found more",
                            c->opt->frame_every, units(c, kr_model_end_time(m)));
        if (!(ticks >= 0.5) || fabs(ticks - nearbyint(ticks)) > 1e-6 * fmax(1.0, ticks))
            return kr__fail(KR_ERR_INVALID_ARG, "--frame-every %g: expected a whole number of ticks (1 tick = %g model "
                            "units), found %g ticks", c->opt->frame_every, 1.0 / (double)c->file->precision, ticks);
        fr->every = (kr_time_t)nearbyint(ticks);
        if (end / fr->every >= MOST_FRAMES)
            return kr__fail(KR_ERR_INVALID_ARG, "--frame-every %g: expected at most %u frames up to the end time %g, "
                            "found %.0f", c->opt->frame_every, MOST_FRAMES, units(c, end),
                            floor((double)end / (double)fr->every) + 1);
    } else if (fr->restored && json_integer_value(json_object_get(fr->restored, "every")) > 0 &&
               end / (kr_time_t)json_integer_value(json_object_get(fr->restored, "every")) < MOST_FRAMES) {
        /* a restart goes on with its recording's period: the default,
         * from the end time, changes with --end */
        fr->every = (kr_time_t)json_integer_value(json_object_get(fr->restored, "every"));
    } else {
        /* whole steps, and at most DEFAULT_MOST_FRAMES frames from 0 to the end */
        double k = ceil((double)end / ((double)(DEFAULT_MOST_FRAMES - 1) * (double)step));
        fr->every = step * (kr_time_t)(k > 1 ? k : 1);
    }
    fr->last = end / fr->every;
    /* A restart goes on from the first frame at or after its cut; the
     * recording goes on where the checkpoint left it when that run
     * recorded the same frames, else a new one begins there. */
    kr_time_t from = c->restored_at;
    fr->next = from ? (from - 1) / fr->every + 1 : 0;
    fr->first = fr->next;
    json_t *was = fr->restored;
    /* drawn whichever recording goes on: they are in no world at the cut */
    fr->departed = json_incref(json_object_get(was, "departed"));
    if (was && (kr_time_t)json_integer_value(json_object_get(was, "every")) == fr->every &&
        (uint64_t)json_integer_value(json_object_get(was, "first")) <= fr->next)
        fr->first = (uint64_t)json_integer_value(json_object_get(was, "first"));
    else {
        json_decref(was);
        fr->restored = NULL;
    }
    fr->enabled = true;
    return KR_OK;
}

static void on_departure(kr_region_t *region, kr_entity_t e, void *arg);
static kr_status_t restore_departed(run_ctx_t *c, kr_sim_t *s, frame_file_t *ff);

kr_status_t kr__run_frames_open(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->enabled) return KR_OK;
    const char *dir = c->opt->frames_dir;
    kr_model_t *m = c->model;
    struct stat sb;
    if (mkdir(dir, 0777) == 0) fr->dir_made = true;
    else if (errno != EEXIST)
        return kr__fail(KR_ERR_IO, "%s: cannot create the frames folder: %s", dir, strerror(errno));
    else if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return kr__fail(KR_ERR_IO, "--frames %s: expected a folder (made if missing), found another kind of file", dir);
    fr->files = calloc(kr_model_sim_count(m) ? kr_model_sim_count(m) : 1, sizeof *fr->files);
    if (!fr->files) return kr__fail(KR_ERR_NOMEM, "out of memory");
    json_t *lengths = json_object_get(fr->restored, "files");
    /* A new file is opened under its .partial name, which a refused run
     * removes (or leaves as it was: an unfinished run's); a file the
     * restart goes on with is only checked here. Both are written only
     * once the whole setup has passed on every rank
     * (kr__run_frames_continue). */
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        if (!draws(s)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.frames", dir, kr_sim_name(s));
        json_t *length = json_object_get(lengths, kr_sim_name(s));
        frame_file_t *ff = &fr->files[i];
        ff->ctx = c;
        kr_buf_init(&ff->departed.labels);
        kr_buf_init(&ff->departed.raw);
        if (kr_region_of(s)) {
            kr__region_on_departure(kr_region_of(s), on_departure, ff);
            kr_status_t st = restore_departed(c, s, ff);
            if (st) return st;
        }
        if (json_is_integer(length)) {
            ff->resume_at = (uint64_t)json_integer_value(length);
            ff->resume = true;
            kr_status_t st = kr__out_check_resume(path, ff->resume_at);
            if (st) return st;
            continue;
        }
        kr_status_t st = kr__out_open_unemptied(&ff->out, path);
        if (st) {
            kr__out_commit(&ff->out, false); /* frees the names */
            return st;
        }
        ff->open = true;
    }
    return KR_OK;
}

kr_status_t kr__run_frames_continue(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->enabled) return KR_OK;
    const char *dir = c->opt->frames_dir;
    kr_model_t *m = c->model;
    /* The folder's recording is being replaced (or, on a restart, cut back
     * and continued): its manifest goes now, so that no manifest ever
     * describes files it does not match. */
    if (c->opt->rank == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/manifest.json", dir);
        if (remove(path) && errno != ENOENT)
            return kr__fail(KR_ERR_IO, "%s: cannot remove the recording's old manifest: %s", path, strerror(errno));
    }
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        frame_file_t *ff = &fr->files[i];
        if (ff->open) {
            /* a new file: its header */
            static const char magic[8] = { 'K', 'R', 'F', 'R', 'A', 'M', 'E', 'S' };
            uint32_t head[2] = { FRAMES_VERSION, 0 };
            kr_status_t st = kr__out_empty(&ff->out);
            if (st) return st;
            if (fwrite(magic, 1, sizeof magic, ff->out.fp) != sizeof magic ||
                fwrite(head, sizeof head, 1, ff->out.fp) != 1)
                return kr__fail(KR_ERR_IO, "%s: write failed: %s", ff->out.partial, strerror(errno));
            continue;
        }
        if (!ff->resume) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.frames", dir, kr_sim_name(kr_model_sim(m, i)));
        kr_status_t st = kr__out_resume(&ff->out, path, ff->resume_at);
        if (st) {
            /* frees the names; a file the restart could not take stays as it is */
            ff->out.keep_partial = true;
            kr__out_commit(&ff->out, false);
            return st;
        }
        ff->open = true;
    }
    return KR_OK;
}

kr_time_t kr__run_frames_next_cut(const run_ctx_t *c)
{
    const kr__frames_t *fr = &c->frames;
    if (!fr->enabled || fr->next > fr->last) return 0;
    kr_time_t at = (kr_time_t)fr->next * fr->every;
    return at < kr_model_end_time(c->model) ? at + 1 : 0;
}

static void grow_extent(frame_file_t *ff, const agent_rec_t *a)
{
    double h = a->size / 2, box[4] = { a->x - h, a->y - h, a->x + h, a->y + h };
    if (!ff->has_extent) memcpy(ff->extent, box, sizeof box);
    for (int k = 0; k < 2; k++) {
        if (box[k] < ff->extent[k]) ff->extent[k] = box[k];
        if (box[k + 2] > ff->extent[k + 2]) ff->extent[k + 2] = box[k + 2];
    }
    ff->has_extent = true;
}

/* Adds agent a to the block, with its label (a.label_len bytes). */
static kr_status_t push_agent(block_t *b, agent_rec_t a, const char *label)
{
    if (KR__GROW(b->agents, b->cap, b->n + 1, 1024, "recording a frame")) return kr_last_status();
    a.label_at = (uint32_t)b->labels.len;
    b->agents[b->n++] = a;
    return a.label_len ? kr_buf_append(&b->labels, label, a.label_len) : KR_OK;
}

/* One entity of layer l (its component's value: `value`; its id: `id`),
 * placed and styled, added to the block. */
static kr_status_t add_agent(kr_sim_t *s, const kr__render_t *r, kr_world_t *w, uint32_t l, kr_entity_t e,
                             uint64_t id, const void *value, block_t *b)
{
    const kr__render_layer_t *layer = &r->layers[l];
    kr_render_agent_t a = { .id = id, .colour = layer->colour, .size = layer->size, .shape = layer->shape };
    kr_spatial_position(w, e, &a.x, &a.y);
    const kr_render_t *own = r->own != KR_COMPONENT_NONE && kr_component_has(w, e, r->own)
                                 ? kr_component_get(w, e, r->own) : NULL;
    if (own) {
        a.colour = own->colour;
        if (own->size > 0) a.size = own->size;
        if (own->shape < KR_SHAPE_COUNT) a.shape = (kr_shape_t)own->shape;
        snprintf(a.label, sizeof a.label, "%.*s", (int)sizeof own->label, own->label);
    }
    if (layer->agent) layer->agent(s, e, value, &a, layer->arg);
    if (a.hidden) return KR_OK;
    size_t len = a.label[0] ? strnlen(a.label, sizeof a.label) : 0;
    return push_agent(b, (agent_rec_t){ .id = a.id, .x = (float)a.x, .y = (float)a.y, .size = (float)a.size,
        .rgba = rgba_bytes(a.colour), .shape = (uint8_t)((unsigned)a.shape < KR_SHAPE_COUNT ? a.shape : 0),
        .layer = (uint8_t)l, .label_len = (uint16_t)len }, a.label);
}

/* Every entity of every layer, with its place and style: table by table
 * (a region's agents carry their id in a second column), or entity by
 * entity where a sparse component makes tables unusable. */
static kr_status_t gather_agents(kr_sim_t *s, const kr__render_t *r, block_t *b)
{
    kr_region_t *region = kr_region_of(s);
    kr_world_t *w = region ? kr_region_world(region) : kr_sim_world(s);
    kr_registry_t *reg = kr_model_registry(kr_sim_model(s));
    kr_component_t agent_c = region ? kr_region_agent_component(region) : KR_COMPONENT_NONE;
    kr_status_t st = KR_OK;
    for (uint32_t l = 0; l < r->layer_count && !st; l++) {
        kr_component_t c = r->layers[l].component;
        size_t size = kr_component_info(reg, c)->size;
        bool by_id_column = region && c != agent_c;
        kr_view_t v;
        if ((st = kr_view_init(&v, w, &(kr_view_desc_t){ .include = { c, by_id_column ? agent_c : KR_COMPONENT_NONE } })))
            break;
        if (v.sparse_include) {
            while (!st && kr_view_next(&v)) {
                kr_entity_t e = kr_view_entity(&v);
                st = add_agent(s, r, w, l, e, region ? kr_region_agent_id(region, e) : (uint64_t)e, kr_view_get(&v, 0), b);
            }
        } else {
            kr_view_chunk_t ch;
            while (!st && kr_view_next_chunk(&v, &ch))
                for (size_t i = 0; i < ch.count && !st; i++) {
                    const char *value = (const char *)ch.columns[0] + i * size;
                    const kr_region_agent_t *ra = !region ? NULL
                        : by_id_column ? (const kr_region_agent_t *)ch.columns[1] + i : (const kr_region_agent_t *)value;
                    st = add_agent(s, r, w, l, ch.entities[i], ra ? ra->id : (uint64_t)ch.entities[i], value, b);
                }
        }
        kr_view_fini(&v);
    }
    return st;
}

/* A region's migrant about to leave at the end of a step: until it
 * arrives at the neighbour's next step it is in no world, so every frame
 * whose time falls in between draws it from here (kept in the file's
 * `departed` block, one step's migrants at a time). */
static void on_departure(kr_region_t *region, kr_entity_t e, void *arg)
{
    frame_file_t *ff = arg;
    kr_sim_t *s = kr_region_sim(region);
    kr_time_t now = kr_sim_now(s), arrival = kr__time_add(now, kr_sim_time_step(s));
    if (ff->departed_at != now || ff->departed_until != arrival) {
        ff->departed.n = 0;
        kr_buf_clear(&ff->departed.labels);
        ff->departed_at = now;
        ff->departed_until = arrival;
    }
    /* Kept even when no frame of this run falls before their arrival: a
     * checkpoint in between saves them for a restart, whose frames may
     * fall elsewhere (another --frame-every). */
    if (ff->failed) return;
    const kr__render_t *r = kr__render_of(s);
    kr_world_t *w = kr_region_world(region);
    for (uint32_t l = 0; l < r->layer_count && !ff->failed; l++)
        if (kr_component_has(w, e, r->layers[l].component) &&
            add_agent(s, r, w, l, e, kr_region_agent_id(region, e), kr_component_get(w, e, r->layers[l].component),
                      &ff->departed))
            ff->failed = kr_last_status();
}

/* Writes one field of every agent as a column at the raw buffer's end. */
#define PUT_COLUMN(b, field, type)                                                            \
    do {                                                                                       \
        type *col_ = (type *)(void *)((b)->raw.data + (b)->raw.len);                           \
        for (size_t i_ = 0; i_ < (b)->n; i_++) col_[i_] = (b)->agents[i_].field;              \
        (b)->raw.len += (b)->n * sizeof(type);                                                 \
    } while (0)

/* The raw bytes of docs/viewer.md ("NAME.frames"): columns, field pieces,
 * labels. */
static kr_status_t encode(kr_sim_t *s, const kr__render_t *r, block_t *b, uint32_t *label_bytes)
{
    kr_status_t st = kr_buf_reserve(&b->raw, b->n * 26 + 8);
    if (st) return st;
    PUT_COLUMN(b, id, uint64_t);
    PUT_COLUMN(b, x, float);
    PUT_COLUMN(b, y, float);
    PUT_COLUMN(b, size, float);
    PUT_COLUMN(b, rgba, uint32_t);
    PUT_COLUMN(b, shape, uint8_t);
    PUT_COLUMN(b, layer, uint8_t);
    for (uint32_t f = 0; f < r->field_count && !st; f++) {
        const kr__render_field_t *fd = &r->fields[f];
        size_t cells = (size_t)fd->width * fd->height;
        int32_t head[5] = { (int32_t)f, fd->x0, fd->y0, (int32_t)fd->width, (int32_t)fd->height };
        /* sampled into an array of its own: in the block the values follow
         * the one-byte columns, at any alignment */
        if ((st = KR__GROW(b->cells, b->cells_cap, cells, 1024, "recording a frame"))) break;
        fd->sample(s, b->cells, fd->arg);
        if ((st = kr_buf_append(&b->raw, head, sizeof head)) ||
            (st = kr_buf_append(&b->raw, b->cells, cells * sizeof *b->cells)))
            break;
    }
    size_t before = b->raw.len;
    for (size_t i = 0; i < b->n && !st; i++) {
        const agent_rec_t *a = &b->agents[i];
        if (!a->label_len) continue;
        uint32_t head[2] = { (uint32_t)i, a->label_len };
        if (!(st = kr_buf_append(&b->raw, head, sizeof head)))
            st = kr_buf_append(&b->raw, b->labels.data + a->label_at, a->label_len);
    }
    *label_bytes = (uint32_t)(b->raw.len - before);
    if (!st && b->raw.len > UINT32_MAX)
        st = kr__fail(KR_ERR_INVALID_ARG, "a frame of '%s' exceeds 4 GiB", kr_sim_name(s));
    return st;
}

static kr_status_t record_sim(run_ctx_t *c, kr_sim_t *s, frame_file_t *ff, struct kr__frame_scratch *sc, uint64_t frame)
{
    block_t *b = &sc->block;
    const kr__render_t *r = kr__render_of(s);
    b->n = 0;
    kr_buf_clear(&b->labels);
    kr_buf_clear(&b->raw);
    uint32_t label_bytes = 0;
    /* A continuous simulator's state may have been integrated past the
     * frame's time: its callbacks see the state at that time. */
    kr_status_t st = ff->failed ? ff->failed : kr__continuous_show(s, (kr_time_t)frame * c->frames.every);
    if (!st) st = gather_agents(s, r, b);
    /* with the region's migrants on their way at the frame's time */
    const block_t *d = &ff->departed;
    kr_time_t at = (kr_time_t)frame * c->frames.every;
    for (size_t i = 0; at >= ff->departed_at && at < ff->departed_until && i < d->n && !st; i++)
        st = push_agent(b, d->agents[i], (const char *)d->labels.data + d->agents[i].label_at);
    if (!st) st = encode(s, r, b, &label_bytes);
    kr__continuous_unshow(s);
    if (st) return st;
    for (size_t i = 0; i < b->n; i++) grow_extent(ff, &b->agents[i]);
    double time = units(c, (kr_time_t)frame * c->frames.every);
    uint32_t head[10];
    memcpy(head, "KRFB", 4);
    head[1] = (uint32_t)frame;
    memcpy(&head[2], &time, sizeof time);
    head[4] = (uint32_t)b->n;
    head[5] = r->field_count;
    head[6] = label_bytes;
    head[7] = 0; /* the compressed size: the writer's */
    head[8] = (uint32_t)b->raw.len;
    head[9] = 0;
    return kr__frame_writer_put(sc->writer, ff->out.fp, ff->out.partial, head, &b->raw);
}

/* Every block handed to the writer is in its file (or failed). */
static kr_status_t frames_written(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->scratch) return KR_OK;
    return kr__frame_writer_wait(fr->scratch->writer);
}

kr_status_t kr__run_frames_take(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->scratch) {
        fr->scratch = calloc(1, sizeof *fr->scratch);
        if (!fr->scratch) return kr__fail(KR_ERR_NOMEM, "out of memory recording a frame");
        kr_buf_init(&fr->scratch->block.labels);
        kr_buf_init(&fr->scratch->block.raw);
        if (!(fr->scratch->writer = kr__frame_writer_create(ZSTD_LEVEL))) return kr_last_status();
    }
    /* the frame before is written: one frame in flight at most */
    kr_status_t st = frames_written(c);
    for (uint32_t i = 0; i < kr_model_sim_count(c->model) && !st; i++)
        if (fr->files[i].open) st = record_sim(c, kr_model_sim(c->model, i), &fr->files[i], fr->scratch, fr->next);
    kr__frame_writer_go(fr->scratch->writer);
    fr->next++;
    return st;
}

kr_status_t kr__run_frames_take_last(run_ctx_t *c)
{
    const kr__frames_t *fr = &c->frames;
    kr_time_t end = kr_model_end_time(c->model);
    if (!fr->enabled || fr->next != fr->last || (kr_time_t)fr->last * fr->every != end) return KR_OK;
    return kr__run_frames_take(c);
}

json_t *kr__run_frames_lengths(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (frames_written(c)) return NULL;
    json_t *lengths = json_object();
    for (uint32_t i = 0; fr->enabled && lengths && i < kr_model_sim_count(c->model); i++) {
        frame_file_t *ff = &fr->files[i];
        if (!ff->open) continue;
        if (fflush(ff->out.fp)) {
            kr__fail(KR_ERR_IO, "%s: write failed: %s", ff->out.partial, strerror(errno));
            json_decref(lengths);
            return NULL;
        }
        json_object_set_new(lengths, kr_sim_name(kr_model_sim(c->model, i)), json_integer((json_int_t)ftell(ff->out.fp)));
        /* a failed or stopped run keeps it, for a restart to go on with */
        ff->out.keep_partial = true;
    }
    if (!lengths) kr__fail(KR_ERR_NOMEM, "out of memory");
    return lengths;
}

/* A migrant in a checkpoint: id (8 bytes), x, y, size, rgba (4 each),
 * shape, layer (1 each), the label's length (2) and the label, in the
 * machine's byte order, all of a region's as one hex string. */
enum { DEPARTED_HEAD = 28 };

json_t *kr__run_frames_departed(run_ctx_t *c, kr_time_t cut)
{
    kr__frames_t *fr = &c->frames;
    json_t *all = json_object();
    static const char digits[] = "0123456789abcdef";
    for (uint32_t i = 0; fr->enabled && all && i < kr_model_sim_count(c->model); i++) {
        const frame_file_t *ff = &fr->files[i];
        const block_t *d = &ff->departed;
        if (!ff->ctx || !d->n || ff->departed_until <= cut) continue;
        size_t bytes = d->n * DEPARTED_HEAD + d->labels.len;
        char *hex = malloc(2 * bytes + 1), *h = hex;
        for (size_t k = 0; hex && k < d->n; k++) {
            const agent_rec_t *a = &d->agents[k];
            uint8_t rec[DEPARTED_HEAD];
            memcpy(rec, &a->id, 8);
            memcpy(rec + 8, &a->x, 4);
            memcpy(rec + 12, &a->y, 4);
            memcpy(rec + 16, &a->size, 4);
            memcpy(rec + 20, &a->rgba, 4);
            rec[24] = a->shape;
            rec[25] = a->layer;
            memcpy(rec + 26, &a->label_len, 2);
            const uint8_t *label = d->labels.data + a->label_at;
            for (size_t b = 0; b < DEPARTED_HEAD + (size_t)a->label_len; b++) {
                uint8_t v = b < DEPARTED_HEAD ? rec[b] : label[b - DEPARTED_HEAD];
                *h++ = digits[v >> 4];
                *h++ = digits[v & 15];
            }
        }
        json_t *entry = hex ? json_pack("{s:I, s:I, s:s#}", "at", (json_int_t)ff->departed_at, "until",
                                        (json_int_t)ff->departed_until, "agents", hex, h - hex) : NULL;
        free(hex);
        if (!entry || json_object_set_new(all, kr_sim_name(kr_model_sim(c->model, i)), entry)) {
            json_decref(all);
            all = NULL;
        }
    }
    if (!all) kr__fail(KR_ERR_NOMEM, "out of memory");
    return all;
}

static int hex_digit(char x)
{
    return x >= '0' && x <= '9' ? x - '0' : x >= 'a' && x <= 'f' ? x - 'a' + 10 : -1;
}

/* A restart: region simulator s's migrants on their way at the cut, as
 * kr__run_frames_departed wrote them, into ff's departed block. */
static kr_status_t restore_departed(run_ctx_t *c, kr_sim_t *s, frame_file_t *ff)
{
    const char *name = kr_sim_name(s);
    json_t *entry = json_object_get(c->frames.departed, name);
    if (!entry) return KR_OK;
    const char *where = c->ckpt.restored_from ? c->ckpt.restored_from : "the checkpoint";
    json_t *at = json_object_get(entry, "at"), *until = json_object_get(entry, "until");
    const char *hex = json_string_value(json_object_get(entry, "agents"));
    size_t len = hex ? json_string_length(json_object_get(entry, "agents")) : 0;
    if (!json_is_integer(at) || !json_is_integer(until) || json_integer_value(at) < 0 ||
        json_integer_value(until) <= json_integer_value(at) || !hex || len % 2)
        return kr__fail(KR_ERR_CORRUPT, "%s/manifest.json: extra.frames.departed.%s: expected at < until and the "
                        "agents as hex, found other", where, name);
    block_t *d = &ff->departed;
    d->n = 0;
    kr_buf_clear(&d->labels);
    enum { LABEL_MOST = sizeof ((kr_render_agent_t *)0)->label };
    for (size_t p = 0; p < len;) {
        uint8_t rec[DEPARTED_HEAD + LABEL_MOST];
        size_t need = DEPARTED_HEAD;
        for (size_t b = 0; b < need; b++, p += 2) {
            int hi = p + 1 < len ? hex_digit(hex[p]) : -1, lo = hi >= 0 ? hex_digit(hex[p + 1]) : -1;
            if (lo < 0)
                return kr__fail(KR_ERR_CORRUPT, "%s/manifest.json: extra.frames.departed.%s.agents: expected whole "
                                "records in lowercase hex, found other at character %zu", where, name, p);
            rec[b] = (uint8_t)(hi << 4 | lo);
            if (b + 1 != DEPARTED_HEAD) continue;
            /* the head read: what it says is checked before its label */
            size_t label = (size_t)rec[26] | (size_t)rec[27] << 8;
            if (rec[24] >= KR_SHAPE_COUNT || rec[25] >= kr__render_of(s)->layer_count || label > LABEL_MOST)
                return kr__fail(KR_ERR_CORRUPT, "%s/manifest.json: extra.frames.departed.%s.agents: expected a "
                                "shape, a layer of '%s' and a label of at most %d bytes, found shape %u, layer %u, "
                                "label %zu", where, name, name, LABEL_MOST, rec[24], rec[25], label);
            need += label;
        }
        agent_rec_t a = { .shape = rec[24], .layer = rec[25] };
        memcpy(&a.id, rec, 8);
        memcpy(&a.x, rec + 8, 4);
        memcpy(&a.y, rec + 12, 4);
        memcpy(&a.size, rec + 16, 4);
        memcpy(&a.rgba, rec + 20, 4);
        memcpy(&a.label_len, rec + 26, 2);
        kr_status_t st = push_agent(d, a, (const char *)rec + DEPARTED_HEAD);
        if (st) return st;
    }
    ff->departed_at = (kr_time_t)json_integer_value(at);
    ff->departed_until = (kr_time_t)json_integer_value(until);
    return KR_OK;
}

kr_status_t kr__run_frames_close(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    kr_status_t st = frames_written(c), s2;
    for (uint32_t i = 0; fr->files && i < kr_model_sim_count(c->model); i++)
        if (fr->files[i].open && (s2 = kr__out_finish(&fr->files[i].out)) && !st) st = s2;
    return st;
}

kr_status_t kr__run_frames_commit(run_ctx_t *c, bool ok)
{
    kr__frames_t *fr = &c->frames;
    kr_status_t st = KR_OK, s2;
    for (uint32_t i = 0; fr->files && i < kr_model_sim_count(c->model); i++)
        if (fr->files[i].open) {
            if ((s2 = kr__out_commit(&fr->files[i].out, ok)) && !st) st = s2;
            fr->files[i].open = false;
        }
    return st;
}

/* ---- the manifest ---- */

static json_t *colour_json(uint32_t c)
{
    char s[10];
    snprintf(s, sizeof s, "#%08x", c);
    return json_string(s);
}

static json_t *box_json(const double b[4]) { return json_pack("[f, f, f, f]", b[0], b[1], b[2], b[3]); }

/* What rank 0 needs of one local simulator for the manifest. */
static json_t *describe_sim(run_ctx_t *c, uint32_t i)
{
    kr_sim_t *s = kr_model_sim(c->model, i);
    const kr__render_t *r = kr__render_of(s);
    const kr__sim_entry_t *e = &c->file->sims[i];
    kr_region_t *region = kr_region_of(s);
    json_t *entry = json_array_get(json_object_get(c->file->root, "simulators"), e->index);
    const char *world = e->region_cols ? json_string_value(json_object_get(entry, "name")) : kr_sim_name(s);
    json_t *d = json_object(), *layers = json_array(), *fields = json_array();
    char file[600];
    snprintf(file, sizeof file, "%s.frames", kr_sim_name(s));
    json_object_set_new(d, "id", json_integer(i));
    json_object_set_new(d, "name", json_string(kr_sim_name(s)));
    json_object_set_new(d, "world", json_string(world));
    json_object_set_new(d, "kind", json_string(e->kind));
    json_object_set_new(d, "rank", json_integer(c->opt->rank));
    json_object_set_new(d, "file", json_string(file));
    double bounds[4] = { 0, 0, 1, 1 };
    if (region) {
        kr_rect_t own = kr_region_rect(region);
        const kr_region_grid_t *g = kr_region_grid(region);
        json_object_set_new(d, "rect", json_pack("[i, i, i, i]", own.x0, own.y0, own.x1, own.y1));
        bounds[2] = g->width;
        bounds[3] = g->height;
    } else {
        json_object_set_new(d, "rect", json_null());
        if (r->has_bounds) memcpy(bounds, r->bounds, sizeof bounds);
        else if (r->field_count) {
            const kr__render_field_t *f = &r->fields[0];
            double b[4] = { f->origin_x, f->origin_y, f->origin_x + f->cell * f->grid_width,
                            f->origin_y + f->cell * f->grid_height };
            memcpy(bounds, b, sizeof b);
        } else if (c->frames.files[i].has_extent) memcpy(bounds, c->frames.files[i].extent, sizeof bounds);
    }
    json_object_set_new(d, "bounds", box_json(bounds));
    for (uint32_t l = 0; l < r->layer_count; l++) {
        const kr__render_layer_t *x = &r->layers[l];
        json_array_append_new(layers, json_pack("{s:s, s:s, s:o, s:f}", "name", x->name, "shape",
                                                kr__render_shape_name(x->shape), "colour", colour_json(x->colour),
                                                "size", x->size));
    }
    for (uint32_t f = 0; f < r->field_count; f++) {
        const kr__render_field_t *x = &r->fields[f];
        uint32_t count;
        const uint32_t *stops = kr__render_colormap(x->colormap, &count);
        json_t *map = json_array();
        for (uint32_t k = 0; k < count; k++) json_array_append_new(map, colour_json(stops[k]));
        json_array_append_new(fields, json_pack("{s:s, s:o, s:s, s:f, s:f}", "name", x->name, "colormap", map,
                                                "colormap_name", x->colormap, "min", x->min, "max", x->max));
    }
    if (r->field_count) {
        const kr__render_field_t *x = &r->fields[0];
        json_object_set_new(d, "grid", json_pack("{s:i, s:i, s:f, s:[f, f]}", "width", x->grid_width, "height",
                                                 x->grid_height, "cell", x->cell, "origin", x->origin_x, x->origin_y));
    } else {
        json_object_set_new(d, "grid", json_null());
    }
    json_object_set_new(d, "layers", layers);
    json_object_set_new(d, "fields", fields);
    return d;
}

/* The model time of one row of the series: the largest time step of the
 * simulators whose figures it holds (rank 0's c->steps, by entry name);
 * one that draws but reports none has no row in it. */
static kr_time_t series_step(const run_ctx_t *c)
{
    const kr__model_file_t *f = c->file;
    kr_time_t step = 0;
    for (size_t i = 0; i < f->sim_count; i++) {
        json_t *entry = json_array_get(json_object_get(f->root, "simulators"), f->sims[i].index);
        const char *name = json_string_value(json_object_get(entry, "name"));
        if (json_object_get(c->steps, name ? name : f->sims[i].name) && f->sims[i].time_step > step)
            step = f->sims[i].time_step;
    }
    return step ? step : c->frames.series_step;
}

/* Rank 0: the manifest from every simulator's description, by id. */
static json_t *build_manifest(run_ctx_t *c, json_t *by_id)
{
    kr__frames_t *fr = &c->frames;
    json_t *man = json_object(), *times = json_array(), *worlds = json_array(), *where = json_object();
    json_object_set_new(man, "format", json_string(FRAMES_FORMAT));
    json_object_set_new(man, "version", json_integer(FRAMES_VERSION));
    const char *slash = strrchr(c->file->path, '/');
    json_object_set_new(man, "model", json_string(slash ? slash + 1 : c->file->path));
    json_object_set_new(man, "seed", json_integer((json_int_t)c->file->seed));
    json_object_set_new(man, "end_time", json_real(units(c, kr_model_end_time(c->model))));
    json_object_set_new(man, "frame_every", json_real(units(c, fr->every)));
    json_object_set_new(man, "first_frame", json_integer((json_int_t)fr->first));
    for (uint64_t k = fr->first; k < fr->next; k++) json_array_append_new(times, json_real(units(c, (kr_time_t)k * fr->every)));
    json_object_set_new(man, "times", times);
    json_object_set_new(man, "ranks", json_integer(c->opt->ranks > 1 ? c->opt->ranks : 1));
    json_object_set_new(man, "series", fr->series.partial ? json_string("series.csv") : json_null());
    json_object_set_new(man, "series_step", json_real(units(c, series_step(c))));
    size_t i;
    json_t *d;
    json_array_foreach(by_id, i, d) {
        if (!json_is_object(d)) continue;
        const char *name = json_string_value(json_object_get(d, "world"));
        json_t *w = json_object_get(where, name ? name : "");
        if (!w) {
            w = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:[]}", "name", json_object_get(d, "world"), "kind",
                          json_object_get(d, "kind"), "bounds", json_object_get(d, "bounds"), "grid",
                          json_object_get(d, "grid"), "layers", json_object_get(d, "layers"), "fields",
                          json_object_get(d, "fields"), "simulators");
            if (!w) break;
            json_array_append_new(worlds, w);
            json_object_set(where, name ? name : "", w);
        }
        json_array_append_new(json_object_get(w, "simulators"),
                              json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(d, "name"), "rank",
                                        json_object_get(d, "rank"), "rect", json_object_get(d, "rect"), "file",
                                        json_object_get(d, "file")));
    }
    json_object_set_new(man, "worlds", worlds);
    json_decref(where);
    return man;
}

kr_status_t kr__run_frames_gather(run_ctx_t *c, bool ok)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->enabled || !ok) return KR_OK;
    uint32_t n = kr_model_sim_count(c->model);
    json_t *mine = json_array();
    for (uint32_t i = 0; mine && i < n; i++)
        if (fr->files[i].open) json_array_append_new(mine, describe_sim(c, i));
    char *text = mine ? json_dumps(mine, JSON_COMPACT) : NULL;
    json_decref(mine);
    kr_status_t st = text ? KR_OK : kr__fail(KR_ERR_NOMEM, "out of memory describing the frames");
    char **all = NULL;
    int ranks = kr__run_distributed(c) ? c->opt->ranks : 1;
    if (kr__run_distributed(c)) {
        kr_status_t s2 = kr__net_gather_strings(c->opt->comm, text ? text : "[]", &all);
        if (!st) st = s2;
    }
    if (!st && c->opt->rank == 0) {
        /* every simulator's description at its id (null: it draws nothing) */
        fr->described = json_array();
        for (uint32_t i = 0; fr->described && i < n; i++) json_array_append_new(fr->described, json_null());
        for (int r = 0; fr->described && r < ranks; r++) {
            json_t *part = json_loads(all ? all[r] : text, 0, NULL), *d;
            size_t k;
            json_array_foreach(part, k, d) {
                json_int_t id = json_integer_value(json_object_get(d, "id"));
                if (id >= 0 && id < n) json_array_set(fr->described, (size_t)id, d);
            }
            json_decref(part);
        }
        if (!fr->described) st = kr__fail(KR_ERR_NOMEM, "out of memory describing the frames");
    }
    for (int r = 0; all && r < ranks; r++) free(all[r]);
    free(all);
    free(text);
    return st;
}

kr_status_t kr__run_frames_write_manifest(run_ctx_t *c)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->enabled || c->opt->rank != 0 || !fr->described) return KR_OK;
    char path[4096];
    kr_status_t st = KR_OK;
    snprintf(path, sizeof path, "%s/series.csv", c->opt->frames_dir);
    if (c->steps && json_object_size(c->steps) && !(st = kr__out_open(&fr->series, path)))
        kr__run_write_series(fr->series.fp, c->steps);
    json_t *man = st ? NULL : build_manifest(c, fr->described);
    if (!st && !man) st = kr__fail(KR_ERR_NOMEM, "out of memory writing the frames' manifest");
    snprintf(path, sizeof path, "%s/manifest.json", c->opt->frames_dir);
    if (!st && !(st = kr__out_open(&fr->manifest, path))) {
        if (kr__json_dump_to(man, fr->manifest.fp, JSON_INDENT(1) | JSON_COMPACT | JSON_REAL_PRECISION(15)))
            st = kr__fail(KR_ERR_IO, "%s: write failed", fr->manifest.partial);
        fputc('\n', fr->manifest.fp);
    }
    json_decref(man);
    kr_status_t s2 = kr__out_finish(&fr->series);
    if (!st) st = s2;
    s2 = kr__out_finish(&fr->manifest);
    if (!st) st = s2;
    return st;
}

kr_status_t kr__run_frames_commit_manifest(run_ctx_t *c, bool ok)
{
    kr__frames_t *fr = &c->frames;
    if (!fr->enabled || c->opt->rank != 0) return KR_OK;
    kr_status_t st = kr__out_commit(&fr->series, ok);
    kr_status_t s2 = kr__out_commit(&fr->manifest, ok);
    return st ? st : s2;
}

void kr__run_frames_free(run_ctx_t *c)
{
    /* the writer first: it may still hold blocks for the files */
    if (c->frames.scratch) {
        free(c->frames.scratch->block.agents);
        free(c->frames.scratch->block.cells);
        kr__frame_writer_destroy(c->frames.scratch->writer);
        kr_buf_fini(&c->frames.scratch->block.labels);
        kr_buf_fini(&c->frames.scratch->block.raw);
        free(c->frames.scratch);
        c->frames.scratch = NULL;
    }
    for (uint32_t i = 0; c->frames.files && i < kr_model_sim_count(c->model); i++) {
        frame_file_t *ff = &c->frames.files[i];
        if (!ff->ctx) continue;
        kr_region_t *region = kr_region_of(kr_model_sim(c->model, i));
        if (region) kr__region_on_departure(region, NULL, NULL);
        free(ff->departed.agents);
        kr_buf_fini(&ff->departed.labels);
        kr_buf_fini(&ff->departed.raw);
    }
    free(c->frames.files);
    c->frames.files = NULL;
    json_decref(c->frames.restored);
    c->frames.restored = NULL;
    json_decref(c->frames.departed);
    c->frames.departed = NULL;
    json_decref(c->frames.described);
    c->frames.described = NULL;
}
