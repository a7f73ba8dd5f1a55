/* Checkpoints of a run and restarts from them (docs/checkpoint.md): when
 * to cut, what every rank writes, the manifest rank 0 writes, and loading
 * a checkpoint into a freshly built model on any number of ranks.
 *
 * A simulator's part is its scheduler state (schedulers/checkpoint.h)
 * followed by its kind's own (kr_kind_desc_t.serialize), each
 * length-prefixed. The manifest's "extra" holds what belongs to the whole
 * model: the end time of the run that wrote it, a stop made in the model,
 * and every event log's length at the cut. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kairos/rng.h"
#include "kairos/stop.h"
#include "kairos/world.h"
#include "base/clock.h"
#include "base/error.h"
#include "ecs/serializer_private.h"
#include "regions/restart.h"
#include "runtime/checkpoint_store.h"
#include "runtime/run_private.h"
#include "net/collectives.h"
#include "schedulers/checkpoint.h"
#include "schedulers/model_private.h"

#define DEFAULT_DIR "checkpoints"
#define DEFAULT_KEEP 2
#define DEFAULT_LEVEL 1

/* The shortest text of v (at least 6 digits) that reads back as v: a
 * time as checkpoint folders name it. */
static void shortest(double v, char out[32])
{
    snprintf(out, 32, "%.17g", v);
    for (int digits = 6; digits < 17; digits++) {
        char trial[32];
        snprintf(trial, sizeof trial, "%.*g", digits, v);
        if (strtod(trial, NULL) == v) {
            memcpy(out, trial, sizeof trial);
            break;
        }
    }
}

/* ---- when ---- */

kr_status_t kr__run_checkpoint_plan(run_ctx_t *c)
{
    const kr__ckpt_plan_t *cli = &c->opt->ckpt, *file = &c->file->ckpt;
    kr__ckpt_schedule_t *s = &c->ckpt;
    const kr__ckpt_plan_t *at = cli->at_count ? cli : file;
    double every = cli->every > 0 ? cli->every : file->every;
    s->dir = cli->dir ? cli->dir : file->dir ? file->dir : DEFAULT_DIR;
    s->keep = cli->keep >= 0 ? cli->keep : file->keep >= 0 ? file->keep : DEFAULT_KEEP;
    s->level = cli->level ? cli->level : file->level ? file->level : DEFAULT_LEVEL;
    uint64_t p = c->file->precision;
    if (at->at_count && !(s->at = malloc(at->at_count * sizeof *s->at))) return kr__fail(KR_ERR_NOMEM, "out of memory");
    const char *at_name = cli->at_count ? "--checkpoint-at" : "outputs.checkpoint.at";
    const char *every_name = cli->every > 0 ? "--checkpoint-every" : "outputs.checkpoint.every";
    for (size_t i = 0; i < at->at_count; i++) {
        if (kr_time_from_units(at->at[i], p, &s->at[i]) || s->at[i] == 0)
            return kr__fail(KR_ERR_INVALID_ARG, "%s: expected representable times > 0 (at least one tick, %g), found %g",
                            at_name, 1.0 / (double)p, at->at[i]);
        s->at_count++;
        /* One that never comes was taken without a word. (A replication
         * writes none: its times are not looked at.) */
        if (s->at[i] > kr_model_end_time(c->model) && !c->opt->stats_json) {
            char end[32], time[32];
            shortest(kr_time_to_units(kr_model_end_time(c->model), p), end);
            shortest(kr_time_to_units(s->at[i], p), time);
            if (cli->at_count)
                return kr__fail(KR_ERR_INVALID_ARG, "%s: expected times up to the end time %s, found %s", at_name, end,
                                time);
            if (c->opt->rank == 0)
                fprintf(stderr, "kairos: warning: %s: %s is after the end time %s: no checkpoint there\n", at_name,
                        time, end);
        }
    }
    /* (a spacing below one tick was rounded up to a checkpoint every tick:
     * billions of them) */
    if (every > 0 && every * (double)p < 1)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: expected a model time of at least one tick (%g), found %g", every_name,
                        1.0 / (double)p, every);
    s->every = every > 0 ? kr_time_delay_ticks(every, p) : 0;
    /* a replication or a sweep's point is one of many short runs, pooled
     * by its caller: it writes none */
    s->enabled = (s->at_count || s->every) && !c->opt->stats_json;
    return KR_OK;
}

kr_time_t kr__run_next_cut(const run_ctx_t *c, kr_time_t after)
{
    const kr__ckpt_schedule_t *s = &c->ckpt;
    kr_time_t next = 0;
    for (size_t i = 0; i < s->at_count && !next; i++)
        if (s->at[i] > after) next = s->at[i];
    if (s->every) {
        kr_time_t k = after / s->every + 1;
        kr_time_t t = k > KR_TIME_NEVER / s->every ? 0 : k * s->every;
        if (t && (!next || t < next)) next = t;
    }
    /* a cut past the end is no cut: the run ends first */
    return next && next <= kr_model_end_time(c->model) ? next : 0;
}

/* A restart passes over the times of --checkpoint-at before its
 * checkpoint's: one line says so, since they were asked for on this
 * command line (a model file's times were the earlier run's too, and are
 * passed over without a word; one at the restart's time is the checkpoint
 * it goes on from). */
static void warn_times_passed(const run_ctx_t *c)
{
    const kr__ckpt_plan_t *cli = &c->opt->ckpt;
    if (!c->opt->restart || !cli->at_count || c->opt->stats_json || c->opt->rank != 0) return;
    size_t passed = 0, first = 0;
    for (size_t i = 0; i < c->ckpt.at_count; i++)
        if (c->ckpt.at[i] < c->restored_at && !passed++) first = i;
    if (!passed) return;
    char time[32], from[32], more[48] = "";
    shortest(cli->at[first], time);
    shortest(kr_time_to_units(c->restored_at, c->file->precision), from);
    if (passed > 1) snprintf(more, sizeof more, " and %zu more", passed - 1);
    fprintf(stderr, "kairos: warning: --checkpoint-at: %s%s before the restart's model time %s: no checkpoint there\n",
            time, more, from);
}

static bool of_this_model(const run_ctx_t *c, const kr__ckpt_manifest_t *man);

/* Refused: a folder that holds another model's checkpoints (another seed
 * too). This run's would replace one of the same name and prune the
 * oldest of them, losing another run's way to go on; the default folder,
 * `checkpoints`, is every run's of a working folder. */
static kr_status_t foreign_checkpoints(const run_ctx_t *c)
{
    kr__ckpt_found_t *list;
    size_t n;
    if (kr__ckpt_list(c->ckpt.dir, &list, &n)) return KR_OK; /* (unreadable: writing says why) */
    kr_status_t st = KR_OK;
    for (size_t i = 0; i < n && !st; i++) {
        kr__ckpt_manifest_t man = { .identity = list[i].identity };
        if (!of_this_model(c, &man))
            st = kr__fail(KR_ERR_INVALID_ARG, "%s: expected a folder of this model's checkpoints, found %s of another "
                          "model (identity %016" PRIx64 ", this one's %016" PRIx64 "): give this run a "
                          "--checkpoint-dir of its own (its checkpoints would replace or prune them)", c->ckpt.dir,
                          list[i].name, list[i].identity, c->digest.identity);
    }
    kr__ckpt_list_free(list, n);
    return st;
}

kr_status_t kr__run_checkpoint_prepare(run_ctx_t *c)
{
    warn_times_passed(c);
    /* (a folder named for the checkpoints that a signal may ask for,
     * SIGUSR1 or SIGTERM with --checkpoint-on-term, is checked too: found
     * bad only then, it lost the run) */
    bool named = c->opt->ckpt.dir || c->file->ckpt.dir;
    bool will_write = c->ckpt.enabled || kr__wall_may_checkpoint(&c->opt->wall) || named;
    /* (a replication or a sweep's point writes none: its caller checks
     * the folder of replications.json) */
    if (c->opt->stats_json || !will_write || c->opt->rank != 0) return KR_OK;
    kr_status_t st = kr__ckpt_dir_prepare(c->ckpt.dir, &c->ckpt.dir_made, &c->ckpt.lock_fd);
    c->ckpt.locked = c->ckpt.lock_fd >= 0;
    if (!st) st = foreign_checkpoints(c);
    c->ckpt.checked = !st;
    return st;
}

/* ---- writing ---- */

/* Why a kind's callback failed with `st`: its message, or, when it set
 * none (the error is cleared before the call), its status. */
static const char *callback_reason(kr_status_t st, char *buf, size_t cap)
{
    const char *why = kr_last_error();
    if (kr_last_status() != KR_OK && why[0]) return why;
    snprintf(buf, cap, "failed with status %d (%s) and no message", (int)st, kr_status_str(st));
    return buf;
}

/* One simulator's part: its scheduler state, then its kind's own. */
static kr_status_t save_sim(run_ctx_t *c, uint32_t i, kr_buf_t *b)
{
    kr_sim_t *s = kr_model_sim(c->model, i);
    size_t at = b->len;
    kr_buf_put_u64(b, 0);
    kr_status_t st = kr__sim_checkpoint_save(s, b);
    if (st) return st;
    uint64_t len = b->len - at - 8;
    memcpy(b->data + at, &len, 8);
    const kr_kind_desc_t *k = kr__model_file_kind(c->file, i);
    at = b->len;
    kr_buf_put_u64(b, 0);
    /* A region's state (its step, fields, halo, arrivals) is in no world:
     * a kind saves it with kr_region_serialize, and one with nothing of its
     * own to save has it saved for it. A kind whose serialize leaves it out
     * is refused: its restarts went on to other results, exit 0. */
    kr_region_t *region = kr_region_of(s);
    if (region) (void)kr__region_take_saved(region);
    kr_serializer_t ser;
    kr__serializer_checkpoint_saver(&ser, b);
    if (k && k->serialize) {
        char why[600];
        kr_clear_error();
        if ((st = k->serialize(s, &ser)) || (st = kr_serializer_status(&ser)))
            return kr__fail(st, "simulator '%s' (kind %s): saving its state: %s", kr_sim_name(s), k->name,
                            callback_reason(st, why, sizeof why));
        if (region && !kr__region_take_saved(region))
            return kr__fail(KR_ERR_STATE, "simulator '%s' (kind %s): its kind's serialize did not save its region "
                            "(call kr_region_serialize from it: docs/regions.md); a restart would not go on as the "
                            "run did", kr_sim_name(s), k->name);
    } else if (region && ((st = kr_region_serialize(region, &ser)) || (st = kr_serializer_status(&ser)))) {
        return kr__fail(st, "simulator '%s': saving its region: %s", kr_sim_name(s), kr_last_error());
    }
    len = b->len - at - 8;
    memcpy(b->data + at, &len, 8);
    return KR_OK;
}

/* A checkpoint's folder name: its model time, the shortest text that
 * reads back as it, without an exponent below 10^15 (ckpt-1e-06 read as
 * a version or an option; ckpt-0.000001 reads as a time). */
static void time_name(const run_ctx_t *c, kr_time_t t, char *out, size_t cap)
{
    double v = kr_time_to_units(t, c->file->precision);
    char text[64];
    shortest(v, text);
    for (int decimals = 0; v < 1e15 && strpbrk(text, "eE") && decimals <= 40; decimals++) {
        snprintf(text, sizeof text, "%.*f", decimals, v);
        if (strtod(text, NULL) != v) snprintf(text, sizeof text, "%.17g", v); /* (keeps looking) */
    }
    snprintf(out, cap, "ckpt-%s", text);
}

/* This rank's files: its rank file and what it knows for the manifest, as
 * a JSON text (entries, event-log lengths, a stop known here). */
static kr_status_t write_rank(run_ctx_t *c, const char *dir, kr_time_t cut, char **report)
{
    kr_model_t *m = c->model;
    uint32_t n = kr_model_sim_count(m), local = 0;
    for (uint32_t i = 0; i < n; i++) local += kr_sim_is_local(kr_model_sim(m, i));
    json_t *rep = json_object(), *entries = json_array(), *logs = json_object(), *digests = json_object();
    kr_buf_t *bufs = calloc(local ? local : 1, sizeof *bufs);
    kr__ckpt_part_t *parts = calloc(local ? local : 1, sizeof *parts);
    kr__ckpt_entry_t *where = calloc(local ? local : 1, sizeof *where);
    kr_status_t st = rep && entries && logs && digests && bufs && parts && where ? KR_OK
                                                                                : kr__fail(KR_ERR_NOMEM, "out of memory");
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && !st; i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        if (!kr_sim_is_local(s)) continue;
        kr_buf_init(&bufs[k]);
        st = save_sim(c, i, &bufs[k]);
        parts[k] = (kr__ckpt_part_t){ kr_sim_name(s), bufs[k].data, bufs[k].len };
        k++;
        if (!st && c->logs && c->logs[i].fp) {
            /* the log's length at the cut: a restart truncates it there */
            if (fflush(c->logs[i].fp)) st = kr__fail(KR_ERR_IO, "%s: write failed: %s", c->logs[i].partial, strerror(errno));
            else {
                char hex[17];
                snprintf(hex, sizeof hex, "%016llx", (unsigned long long)c->logs[i].digest);
                json_object_set_new(logs, kr_sim_name(s), json_integer((json_int_t)ftell(c->logs[i].fp)));
                json_object_set_new(digests, kr_sim_name(s), json_string(hex));
            }
            c->logs[i].keep_partial = true;
        }
    }
    char file[64];
    snprintf(file, sizeof file, "rank-%d.bin", c->opt->rank);
    if (!st && local) st = kr__ckpt_write_rank_file(dir, file, c->ckpt.level, parts, local, where);
    for (uint32_t i = 0; i < local && !st; i++) {
        char sum[17];
        snprintf(sum, sizeof sum, "%016" PRIx64, where[i].checksum);
        json_array_append_new(entries, json_pack("{s:s, s:s, s:I, s:I, s:I, s:s}", "name", where[i].sim, "file",
                                                 where[i].file, "offset", (json_int_t)where[i].offset, "size",
                                                 (json_int_t)where[i].size, "raw_size", (json_int_t)where[i].raw_size,
                                                 "checksum", sum));
    }
    for (uint32_t i = 0; i < local; i++) kr__ckpt_entry_fini(&where[i]);
    for (uint32_t i = 0; i < k; i++) kr_buf_fini(&bufs[i]);
    free(bufs);
    free(parts);
    free(where);
    uint32_t by;
    kr_time_t at;
    if (!st && kr_model_stopped(m, &by, &at))
        json_object_set_new(rep, "stop", json_pack("{s:I, s:I}", "by", (json_int_t)by, "at", (json_int_t)at));
    json_object_set_new(rep, "simulators", entries);
    json_object_set_new(rep, "event_logs", logs);
    json_object_set_new(rep, "event_log_digests", digests);
    /* the frame files' lengths at the cut: a restart goes on from there */
    if (!st && c->frames.enabled) {
        json_t *lengths = kr__run_frames_lengths(c);
        json_t *departed = lengths ? kr__run_frames_departed(c, cut) : NULL;
        if (!departed) st = kr_last_status();
        json_object_set_new(rep, "frames", lengths);
        json_object_set_new(rep, "frames_departed", departed);
    }
    *report = st ? NULL : json_dumps(rep, JSON_COMPACT);
    json_decref(rep);
    if (!st && !*report) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    return st;
}

static uint64_t hex64(const char *s)
{
    return s ? strtoull(s, NULL, 16) : 0;
}

/* The identity's items as 16 hex digits each, so that a restart of another
 * model can name the first difference; left out for models so large that
 * they would swell the manifest (the digest alone then tells). */
#define MAX_IDENTITY_ITEMS 20000

/* Their values too, for models small enough that the manifest stays
 * small: a refusal then says what the checkpoint's model had. */
#define MAX_IDENTITY_VALUES 2000

/* Made at the first checkpoint and kept for the others: the model, and so
 * its items, stay the same through a run. */
static json_t *identity_items(run_ctx_t *c)
{
    if (c->ckpt.identity_made) return json_incref(c->ckpt.identity_items);
    c->ckpt.identity_made = true;
    uint64_t *h = NULL;
    size_t n = 0;
    json_t *values = NULL;
    if (kr__model_identity_items(c->file, c->model, &h, &n, &values) || n > MAX_IDENTITY_ITEMS) {
        free(h);
        json_decref(values);
        return NULL;
    }
    if (n <= MAX_IDENTITY_VALUES) c->ckpt.identity_values = values;
    else json_decref(values);
    char *text = malloc(n * 16 + 1);
    for (size_t i = 0; text && i < n; i++) snprintf(text + 16 * i, 17, "%016" PRIx64, h[i]);
    if (text) text[n * 16] = '\0';
    c->ckpt.identity_items = text ? json_string(text) : NULL;
    free(text);
    free(h);
    return json_incref(c->ckpt.identity_items);
}

/* Whether the checkpoint's model is this one (also with the identity that
 * checkpoints written before dependencies counted by (from, to) kept). */
static bool of_this_model(const run_ctx_t *c, const kr__ckpt_manifest_t *man)
{
    return man->identity == c->digest.identity || man->identity == c->digest.identity_file_order;
}

/* A restart of another model: the first item where it differs from the one
 * that wrote the checkpoint, when the checkpoint lists them. */
static kr_status_t another_model(run_ctx_t *c, const char *where, const kr__ckpt_manifest_t *man)
{
    const char *saved = json_string_value(json_object_get(man->extra, "identity_items"));
    uint64_t *h = NULL;
    size_t n = 0;
    char what[1024] = "", theirs[600] = "";
    if (saved && !kr__model_identity_items(c->file, c->model, &h, &n, NULL)) {
        size_t saved_n = strlen(saved) / 16, i = 0;
        for (; i < n && i < saved_n; i++) {
            char hex[17];
            memcpy(hex, saved + 16 * i, 16);
            hex[16] = '\0';
            if (strtoull(hex, NULL, 16) != h[i]) break;
        }
        /* (every item alike: the identity itself was what differed, and no
         * item can be named) */
        if (i < n) kr__model_describe_item(c->file, c->model, i, what, sizeof what);
        else if (i < saved_n) snprintf(what, sizeof what, "the number of its parts (the checkpoint's model has more)");
        /* (the checkpoint's own value, when it lists them: a checkpoint of a
         * small model does) */
        const char *was = i < n ? json_string_value(json_array_get(json_object_get(man->extra, "identity_values"), i))
                                : NULL;
        if (was) snprintf(theirs, sizeof theirs, ", %s in the checkpoint's", was);
    }
    free(h);
    if (what[0])
        return kr__fail(KR_ERR_MISMATCH, "%s: the checkpoint is of another model: the first difference is %s in "
                        "this one%s; only the run part (end time, outputs, algorithm, ranks, mapping, checkpoints) "
                        "may change on a restart", where, what, theirs);
    return kr__fail(KR_ERR_MISMATCH, "%s: the checkpoint is of another model (identity %016" PRIx64 ", this model's "
                    "%016" PRIx64 "): only the run part (end time, outputs, algorithm, ranks, mapping, checkpoints) "
                    "may change on a restart", where, man->identity, c->digest.identity);
}

/* Rank 0: the manifest from every rank's report. */
static kr_status_t write_manifest(run_ctx_t *c, const char *dir, kr_time_t cut, char **reports, int ranks)
{
    kr__ckpt_manifest_t man = { .identity = c->digest.identity, .time = cut, .precision = c->file->precision,
                                .time_units = kr_time_to_units(cut, c->file->precision), .ranks = ranks };
    json_t *extra = json_object(), *logs = json_object(), *digests = json_object(), *stop = NULL;
    json_t *frames = c->frames.enabled ? json_object() : NULL, *departed = json_object();
    size_t cap = kr_model_sim_count(c->model);
    man.entries = calloc(cap ? cap : 1, sizeof *man.entries);
    kr_status_t st = extra && logs && digests && departed && man.entries ? KR_OK
                                                                         : kr__fail(KR_ERR_NOMEM, "out of memory");
    for (int r = 0; r < ranks && !st; r++) {
        json_t *rep = json_loads(reports[r], 0, NULL), *e;
        size_t i;
        json_array_foreach(json_object_get(rep, "simulators"), i, e) {
            if (man.entry_count == cap) break;
            kr__ckpt_entry_t *x = &man.entries[man.entry_count++];
            x->sim = strdup(json_string_value(json_object_get(e, "name")));
            x->file = strdup(json_string_value(json_object_get(e, "file")));
            x->offset = (uint64_t)json_integer_value(json_object_get(e, "offset"));
            x->size = (uint64_t)json_integer_value(json_object_get(e, "size"));
            x->raw_size = (uint64_t)json_integer_value(json_object_get(e, "raw_size"));
            x->checksum = hex64(json_string_value(json_object_get(e, "checksum")));
            if (!x->sim || !x->file) st = kr__fail(KR_ERR_NOMEM, "out of memory");
        }
        json_object_update(logs, json_object_get(rep, "event_logs"));
        json_object_update(digests, json_object_get(rep, "event_log_digests"));
        if (frames) json_object_update(frames, json_object_get(rep, "frames"));
        json_object_update(departed, json_object_get(rep, "frames_departed"));
        json_t *s = json_object_get(rep, "stop");
        /* the earliest stop any rank knows, by (time, simulator) */
        if (s && (!stop || json_integer_value(json_object_get(s, "at")) < json_integer_value(json_object_get(stop, "at")) ||
                  (json_integer_value(json_object_get(s, "at")) == json_integer_value(json_object_get(stop, "at")) &&
                   json_integer_value(json_object_get(s, "by")) < json_integer_value(json_object_get(stop, "by"))))) {
            json_decref(stop);
            stop = json_incref(s);
        }
        json_decref(rep);
    }
    if (!st) {
        json_object_set_new(extra, "end_time", json_integer((json_int_t)kr_model_end_time(c->model)));
        json_t *items = identity_items(c);
        if (items) json_object_set_new(extra, "identity_items", items);
        if (items && c->ckpt.identity_values) json_object_set(extra, "identity_values", c->ckpt.identity_values);
        if (stop) json_object_set(extra, "stop", stop);
        json_object_set(extra, "event_logs", logs);
        json_object_set(extra, "event_log_digests", digests);
        if (frames) {
            json_t *f = json_pack("{s:I, s:I, s:O}", "every", (json_int_t)c->frames.every, "first",
                                  (json_int_t)c->frames.first, "files", frames);
            if (json_object_size(departed)) json_object_set(f, "departed", departed);
            json_object_set_new(extra, "frames", f);
        }
        man.extra = extra;
        extra = NULL;
        st = kr__ckpt_manifest_write(dir, &man);
        for (size_t i = 0; i < man.entry_count; i++) {
            c->ckpt.bytes += man.entries[i].size;
            c->ckpt.raw_bytes += man.entries[i].raw_size;
        }
    }
    json_decref(stop);
    json_decref(logs);
    json_decref(digests);
    json_decref(frames);
    json_decref(departed);
    json_decref(extra);
    kr__ckpt_manifest_fini(&man);
    return st;
}

/* Every rank agrees on st (kr__run_agree); one process decides alone. */
static kr_status_t agree(run_ctx_t *c, kr_status_t st)
{
    return kr__run_distributed(c) ? kr__run_agree(c->opt->comm, c->opt->ranks, c->opt->rank, st, true) : st;
}

kr_status_t kr__run_checkpoint(run_ctx_t *c, kr_time_t cut)
{
    uint64_t t0 = kr__monotonic_ns();
    char name[96], *partial = NULL;
    time_name(c, cut, name, sizeof name);
    int rank = c->opt->rank, ranks = kr__run_distributed(c) ? c->opt->ranks : 1;
    kr_status_t st = KR_OK;
    /* (a folder no option named is checked only at its first checkpoint: a SIGUSR1's) */
    if (rank == 0 && !c->ckpt.checked && !(st = foreign_checkpoints(c))) c->ckpt.checked = true;
    if (rank == 0 && !st) st = kr__ckpt_dir_begin(c->ckpt.dir, name, &partial);
    st = agree(c, st);
    if (st) {
        free(partial);
        return st;
    }
    if (!partial) {
        size_t n = strlen(c->ckpt.dir) + strlen(name) + 16;
        if ((partial = malloc(n))) snprintf(partial, n, "%s/%s.partial", c->ckpt.dir, name);
    }
    char *report = NULL;
    st = partial ? write_rank(c, partial, cut, &report) : kr__fail(KR_ERR_NOMEM, "out of memory");
    st = agree(c, st);
    char **all = NULL;
    if (!st && ranks > 1) st = kr__net_gather_strings(c->opt->comm, report, &all);
    else if (!st) all = &report;
    if (!st && rank == 0) {
        st = write_manifest(c, partial, cut, all, ranks);
        if (!st) st = kr__ckpt_dir_commit(c->ckpt.dir, name);
        if (!st) st = kr__ckpt_dir_prune(c->ckpt.dir, c->ckpt.keep, cut);
    }
    if (all != &report) {
        for (int r = 0; all && r < ranks; r++) free(all[r]);
        free(all);
    }
    free(report);
    free(partial);
    st = agree(c, st);
    /* A checkpoint that failed leaves nothing behind: its folder stays
     * only under the .partial name, removed here (the failure's message
     * is the one kept). */
    if (st && rank == 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", kr_last_error());
        kr__ckpt_dir_abandon(c->ckpt.dir, name);
        kr__fail(st, "%s", why);
    }
    if (!st) {
        uint64_t now = kr__monotonic_ns();
        c->ckpt.written++;
        c->ckpt.write_ns += now - t0;
        c->ckpt.last_write_ns = now - t0;
        c->ckpt.last_started_ns = t0;
        c->ckpt.last_done_ns = now;
        snprintf(c->ckpt.last_name, sizeof c->ckpt.last_name, "%s", name);
    }
    return st;
}

/* ---- restarting ---- */

/* The kind's restore step, which must not add to what the checkpoint holds
 * (its events, its stream, its world): found after it, by the sequence
 * counter, the stream's position and the entity count, which cost the
 * event loop nothing, and refused. (A sync-event is refused as it is
 * tried: the model has not started.) */
static kr_status_t run_restore(kr_sim_t *s, const kr_kind_desc_t *k)
{
    kr_rng_state_t before, after;
    kr_rng_save(kr_sim_rng(s), &before);
    size_t entities = kr_world_entity_count(kr_sim_world(s));
    uint64_t sequence = s->sequence;
    char why[600];
    kr_clear_error();
    kr_status_t st = k->restore(s);
    /* A restore that fails is a setup that fails: bad input, exit 2, whatever
     * status the kind gave, but for memory (docs/cli.md, "Exit status"). */
    if (st) return kr__fail(st == KR_ERR_NOMEM ? st : KR_ERR_INVALID_ARG, "simulator '%s' (kind %s): restoring: %s",
                            kr_sim_name(s), k->name, callback_reason(st, why, sizeof why));
    if (s->sequence != sequence)
        return kr__fail(KR_ERR_INVALID_ARG, "simulator '%s' (kind %s): restoring scheduled an event (the checkpoint "
                        "holds every event already)", kr_sim_name(s), k->name);
    kr_rng_save(kr_sim_rng(s), &after);
    if (memcmp(&before, &after, sizeof before))
        return kr__fail(KR_ERR_INVALID_ARG, "simulator '%s' (kind %s): restoring drew random numbers (the checkpoint "
                        "holds its stream where the run left it)", kr_sim_name(s), k->name);
    if (kr_world_entity_count(kr_sim_world(s)) != entities)
        return kr__fail(KR_ERR_INVALID_ARG, "simulator '%s' (kind %s): restoring created or destroyed entities (the "
                        "checkpoint holds its world)", kr_sim_name(s), k->name);
    return KR_OK;
}

kr_status_t kr__run_load_part(kr_sim_t *s, const kr_kind_desc_t *k, const void *data, size_t size, kr_time_t cut,
                              kr_time_t saved_end)
{
    kr_reader_t r;
    kr_reader_init(&r, data, size);
    uint64_t len = kr_reader_u64(&r);
    kr_reader_t part;
    const void *p = len <= kr_reader_left(&r) ? kr_reader_view(&r, (size_t)len) : NULL;
    kr_reader_init(&part, p, p ? (size_t)len : 0);
    kr_status_t st = p ? kr__sim_checkpoint_load(s, &part, cut, saved_end)
                       : kr__fail(KR_ERR_CORRUPT, "simulator '%s': its part of the checkpoint is cut short",
                                  kr_sim_name(s));
    if (!st && kr_reader_left(&part)) st = kr__fail(KR_ERR_CORRUPT, "simulator '%s': its part of the checkpoint has "
                                                    "bytes after its state", kr_sim_name(s));
    uint64_t klen = st ? 0 : kr_reader_u64(&r);
    const void *kp = st ? NULL : klen <= kr_reader_left(&r) ? kr_reader_view(&r, (size_t)klen) : NULL;
    kr_region_t *region = kr_region_of(s);
    if (!st && (!kp || kr_reader_left(&r) || (klen && !k->serialize && !region)))
        st = kr__fail(KR_ERR_CORRUPT, "simulator '%s': its kind's part of the checkpoint does not fit its kind",
                      kr_sim_name(s));
    /* the kind's own part, or its region's, which save_sim saved for it */
    if (!st && (k->serialize || region)) {
        kr_reader_t kr_in;
        kr_reader_init(&kr_in, kp, (size_t)klen);
        kr_serializer_t ser;
        kr__serializer_checkpoint_loader(&ser, &kr_in);
        st = k->serialize ? k->serialize(s, &ser) : kr_region_serialize(region, &ser);
        if (!st) st = kr_serializer_status(&ser);
        if (!st && kr_reader_left(&kr_in)) st = KR_ERR_CORRUPT;
        if (st) st = kr__fail(KR_ERR_CORRUPT, "simulator '%s' (kind %s): its %s part of the checkpoint does not load",
                              kr_sim_name(s), k->name, k->serialize ? "kind's" : "region's");
    }
    if (!st && k->restore) st = run_restore(s, k);
    if (!st) st = kr__region_check_end_change(s, cut, saved_end);
    return st;
}

static kr_status_t load_sim(run_ctx_t *c, kr__ckpt_t *ck, uint32_t i, kr_time_t cut, kr_time_t saved_end)
{
    kr_sim_t *s = kr_model_sim(c->model, i);
    void *data = NULL;
    size_t size = 0;
    kr_status_t st = kr__ckpt_read(ck, kr_sim_name(s), &data, &size);
    if (st) return st;
    st = kr__run_load_part(s, kr__model_file_kind(c->file, i), data, size, cut, saved_end);
    free(data);
    return st;
}

/* Whether a checkpoint at `dir` is one this run could go on from: it opens
 * (its manifest and files check out as far as opening checks them), of
 * this model, not after the end time. */
static bool usable(const run_ctx_t *c, const char *dir)
{
    kr__ckpt_t *ck;
    if (kr__ckpt_open(dir, &ck)) return false;
    const kr__ckpt_manifest_t *m = kr__ckpt_manifest(ck);
    bool ok = of_this_model(c, m) && m->precision == c->file->precision &&
              m->time <= kr_model_end_time(c->model);
    kr__ckpt_close(ck);
    return ok;
}

/* A restart from the folder of checkpoints `root` failed with st on a
 * checkpoint that is damaged or does not read: the error goes on to name
 * the newest other one there that this run could go on from (older than
 * `before`, the failed one's time, when known), so that a user need not
 * try them one by one. None is named when none is usable, or when the
 * message would not hold the whole path. */
static kr_status_t name_another(const run_ctx_t *c, const char *root, uint64_t before, kr_status_t st)
{
    char *kept = strdup(kr_last_error()), *hint = NULL;
    kr__ckpt_found_t *list;
    size_t n;
    if (!kept) return st;
    if (!kr__ckpt_list(root, &list, &n)) {
        for (size_t i = 0; i < n && !hint; i++) {
            char *dir = list[i].time < before ? kr__ckpt_join(root, list[i].name) : NULL;
            if (dir && usable(c, dir)) hint = dir;
            else free(dir);
        }
        kr__ckpt_list_free(list, n);
    }
    char msg[1024];
    /* (quoted for a shell when the path has anything a shell reads) */
    const char *q = hint && hint[strcspn(hint, " \t\n'\"\\$`!*?[]{}()<>|&;#~")] ? "'" : "";
    int k = hint && !strchr(hint, '\'') ? snprintf(msg, sizeof msg, "%s; to go on from the newest other checkpoint "
                                                   "there that opens: --restart %s%s%s", kept, q, hint, q) : -1;
    kr__fail(st, "%s", k > 0 && (size_t)k < sizeof msg ? msg : kept);
    free(hint);
    free(kept);
    return st;
}

kr_status_t kr__run_restore(run_ctx_t *c, const char *path)
{
    uint64_t t0 = kr__monotonic_ns();
    kr__ckpt_t *ck = NULL;
    kr_status_t st = kr__ckpt_open(path, &ck);
    if ((st == KR_ERR_CORRUPT || st == KR_ERR_IO) && kr__ckpt_names_folder(path))
        return name_another(c, path, UINT64_MAX, st);
    if (st) return st;
    const kr__ckpt_manifest_t *man = kr__ckpt_manifest(ck);
    const char *where = kr__ckpt_path(ck);
    if (!of_this_model(c, man)) st = another_model(c, where, man);
    else if (man->precision != c->file->precision)
        st = kr__fail(KR_ERR_MISMATCH, "%s: the checkpoint has precision %" PRIu64 ", this model %" PRIu64, where,
                      man->precision, c->file->precision);
    else if (man->time > kr_model_end_time(c->model)) {
        char at[32], end[32];
        shortest(man->time_units, at);
        shortest(kr_time_to_units(kr_model_end_time(c->model), c->file->precision), end);
        st = kr__fail(KR_ERR_INVALID_ARG, "%s: the checkpoint is at %s, after this run's end time %s", where, at, end);
        /* (a folder's newest: an older one there may serve) */
        if (kr__ckpt_names_folder(path)) st = name_another(c, path, man->time, st);
    }
    json_t *extra = man->extra;
    json_t *end = json_object_get(extra, "end_time"), *logs = json_object_get(extra, "event_logs");
    json_t *digests = json_object_get(extra, "event_log_digests");
    if (!st && (!json_is_integer(end) || (logs && !json_is_object(logs)) || (digests && !json_is_object(digests))))
        st = kr__fail(KR_ERR_CORRUPT, "%s/manifest.json: extra: expected end_time, event_logs and event_log_digests, "
                      "found other", where);
    kr_time_t saved_end = st ? 0 : (kr_time_t)json_integer_value(end);
    for (uint32_t i = 0; i < kr_model_sim_count(c->model) && !st; i++)
        if (kr_sim_is_local(kr_model_sim(c->model, i))) st = load_sim(c, ck, i, man->time, saved_end);
    if (!st) {
        c->restored_at = man->time;
        for (uint32_t i = 0; i < kr_model_sim_count(c->model); i++)
            if (kr_sim_is_local(kr_model_sim(c->model, i)))
                c->events_restored += kr_sim_event_count(kr_model_sim(c->model, i));
        json_t *stop = json_object_get(extra, "stop");
        if (stop) {
            c->restored_stop = true;
            c->stop_by = (uint32_t)json_integer_value(json_object_get(stop, "by"));
            c->stop_at = (kr_time_t)json_integer_value(json_object_get(stop, "at"));
            if (c->stop_by >= kr_model_sim_count(c->model))
                st = kr__fail(KR_ERR_CORRUPT, "%s/manifest.json: extra.stop names no simulator", where);
        }
        c->log_offsets = json_incref(logs);
        c->log_digests = json_incref(digests);
        json_t *frames = json_object_get(extra, "frames");
        if (json_is_object(frames) && json_is_integer(json_object_get(frames, "every")) &&
            json_is_integer(json_object_get(frames, "first")) && json_is_object(json_object_get(frames, "files")))
            c->frames.restored = json_incref(frames);
    }
    /* a message names the checkpoint (also the one chosen when the path
     * was a folder of them: a simulator's refusal named none), and for a
     * damaged one another there to go on from */
    if (st && strncmp(kr_last_error(), where, strlen(where)))
        kr__fail(kr_last_status(), "%s: %s", where, kr_last_error());
    if ((st == KR_ERR_CORRUPT || st == KR_ERR_IO) && strcmp(where, path)) st = name_another(c, path, man->time, st);
    if (!st && !(c->ckpt.restored_from = strdup(where))) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    kr__ckpt_close(ck);
    c->ckpt.restore_ns = kr__monotonic_ns() - t0;
    return st;
}

void kr__run_print_restart(const run_ctx_t *c, FILE *o)
{
    if (!c->ckpt.restored_from) return;
    char at[32];
    shortest(kr_time_to_units(c->restored_at, c->file->precision), at);
    fprintf(o, "  restarted from %s at model time %s\n", c->ckpt.restored_from, at);
}

/* The path as a JSON string: one that is not UTF-8 (a file name may be
 * any bytes) with '?' for each byte that is not ASCII. */
static json_t *path_string(const char *path)
{
    json_t *v = json_string(path);
    if (v) return v;
    char *ascii = strdup(path);
    if (!ascii) return NULL;
    for (char *p = ascii; *p; p++)
        if ((unsigned char)*p >= 0x80) *p = '?';
    v = json_string(ascii);
    free(ascii);
    return v;
}

json_t *kr__run_checkpoint_stats(const run_ctx_t *c)
{
    if (!c->ckpt.written && !c->opt->restart) return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "written", json_integer((json_int_t)c->ckpt.written));
    if (c->ckpt.written) {
        json_object_set_new(o, "write_seconds", json_real((double)c->ckpt.write_ns * 1e-9));
        json_object_set_new(o, "bytes", json_integer((json_int_t)c->ckpt.bytes));
        json_object_set_new(o, "raw_bytes", json_integer((json_int_t)c->ckpt.raw_bytes));
    }
    if (c->opt->restart) {
        json_object_set_new(o, "restarted_at", json_real(kr_time_to_units(c->restored_at, c->file->precision)));
        if (c->ckpt.restored_from) json_object_set_new(o, "restarted_from", path_string(c->ckpt.restored_from));
        json_object_set_new(o, "restore_seconds", json_real((double)c->ckpt.restore_ns * 1e-9));
    }
    return o;
}
