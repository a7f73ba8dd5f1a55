/* A run from a model file, and every output it writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../ecs/error_private.h"
#include "../ecs/hmap.h"
#include "run.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A file written as NAME.partial and renamed to NAME once complete. */
typedef struct out_file {
    char *final, *partial;
    FILE *fp;
} out_file_t;

static kr_status_t out_open(out_file_t *o, const char *path)
{
    size_t n = strlen(path);
    o->final = strdup(path);
    o->partial = malloc(n + 9);
    if (!o->final || !o->partial) return kr__fail(KR_ERR_NOMEM, "out of memory");
    snprintf(o->partial, n + 9, "%s.partial", path);
    o->fp = fopen(o->partial, "w");
    if (!o->fp) return kr__fail(KR_ERR_IO, "%s: cannot write: %s", o->partial, strerror(errno));
    return KR_OK;
}

/* Closes; renames into place when keep, removes otherwise. */
static kr_status_t out_close(out_file_t *o, bool keep)
{
    kr_status_t st = KR_OK;
    if (o->fp) {
        bool bad = ferror(o->fp) != 0;
        if (fclose(o->fp) || bad) {
            if (keep) st = kr__fail(KR_ERR_IO, "%s: write failed: %s", o->partial, strerror(errno));
            keep = false;
        }
        if (keep && rename(o->partial, o->final)) {
            st = kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", o->partial, o->final, strerror(errno));
            keep = false;
        }
        if (!keep) remove(o->partial);
    }
    free(o->final);
    free(o->partial);
    *o = (out_file_t){ 0 };
    return st;
}

/* ---- the observer: event logs, trace, progress ---- */

typedef struct run_ctx {
    kr_model_file_t *file;
    kr_model_t *model;
    const kr_run_options_t *opt;
    out_file_t *logs;           /* one per simulator, or NULL */
    out_file_t trace;
    bool tracing, first_trace_event;
    uint64_t t0;                /* wall start */
    uint64_t last_progress;
    uint64_t events;
    bool progress_shown;
} run_ctx_t;

static void trace_event(run_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace_event(run_ctx_t *c, const char *fmt, ...)
{
    if (!c->first_trace_event) fputs(",\n", c->trace.fp);
    c->first_trace_event = false;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->trace.fp, fmt, ap);
    va_end(ap);
}

static double us(const run_ctx_t *c, uint64_t ns) { return (double)(ns - c->t0) / 1000.0; }

static void show_progress(run_ctx_t *c, bool final)
{
    uint64_t now = now_ns();
    if (!final && now - c->last_progress < 250000000u) return; /* four refreshes a second at most */
    c->last_progress = now;
    kr_model_t *m = c->model;
    kr_time_t frontier = KR_TIME_NEVER;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_time_t t = kr_sim_now(kr_model_sim(m, i));
        if (t < frontier) frontier = t;
    }
    double end = kr_time_to_units(kr_model_end_time(m), kr_model_precision(m));
    double at = kr_time_to_units(frontier, kr_model_precision(m));
    double wall = (double)(now - c->t0) * 1e-9;
    double rate = wall > 0 ? (double)c->events / wall : 0;
    double left = at > 0 && end > at ? wall * (end - at) / at : 0;
    fprintf(stderr, "\r  model time %.6g of %.6g  %.3g events/s  %s%.0f s left   ", at, end, rate,
            at > 0 ? "" : "~", left);
    if (final) fputc('\n', stderr);
    fflush(stderr);
    c->progress_shown = true;
}

static void on_event(void *arg, kr_sim_t *s, const kr_event_key_t *k, kr_event_type_t type)
{
    run_ctx_t *c = arg;
    c->events++;
    if (c->logs) {
        FILE *fp = c->logs[kr_sim_id(s)].fp;
        fprintf(fp, "{\"time\": %llu, \"priority\": %d, \"source\": %u, \"sequence\": %llu, \"phase\": %u, "
                "\"type\": \"%s\"}\n", (unsigned long long)k->time, k->priority, k->source,
                (unsigned long long)k->sequence, k->phase, kr_model_event_type_name(c->model, type));
    }
    if (c->tracing && k->phase == 1 && k->source != kr_sim_id(s))
        trace_event(c, "{\"name\": \"sync\", \"cat\": \"sync\", \"ph\": \"f\", \"bp\": \"e\", \"id\": %llu, "
                    "\"pid\": %d, \"tid\": %u, \"ts\": %.3f}",
                    (unsigned long long)((uint64_t)k->source << 40 ^ k->sequence), c->opt->rank, kr_sim_id(s),
                    us(c, now_ns()));
}

static void on_busy(void *arg, kr_sim_t *s, uint64_t begin, uint64_t end, uint64_t events)
{
    run_ctx_t *c = arg;
    if (c->tracing)
        trace_event(c, "{\"name\": \"busy\", \"cat\": \"sim\", \"ph\": \"X\", \"pid\": %d, \"tid\": %u, \"ts\": %.3f, "
                    "\"dur\": %.3f, \"args\": {\"events\": %llu}}", c->opt->rank, kr_sim_id(s), us(c, begin),
                    (double)(end - begin) / 1000.0, (unsigned long long)events);
    if (c->opt->progress) show_progress(c, false);
}

static void on_blocked(void *arg, kr_sim_t *s, uint64_t begin, uint64_t end)
{
    run_ctx_t *c = arg;
    if (c->tracing)
        trace_event(c, "{\"name\": \"blocked\", \"cat\": \"sim\", \"ph\": \"X\", \"pid\": %d, \"tid\": %u, "
                    "\"ts\": %.3f, \"dur\": %.3f}", c->opt->rank, kr_sim_id(s), us(c, begin),
                    (double)(end - begin) / 1000.0);
}

static void on_sync(void *arg, kr_sim_t *s, const kr_event_key_t *k)
{
    run_ctx_t *c = arg;
    if (c->tracing)
        trace_event(c, "{\"name\": \"sync\", \"cat\": \"sync\", \"ph\": \"s\", \"id\": %llu, \"pid\": %d, "
                    "\"tid\": %u, \"ts\": %.3f}", (unsigned long long)((uint64_t)k->source << 40 ^ k->sequence),
                    c->opt->rank, kr_sim_id(s), us(c, now_ns()));
}

/* ---- checksum and stats ---- */

uint64_t kr_run_checksum(const kr_model_file_t *f, kr_model_t *m)
{
    uint64_t h = 0x6b6169726f73ULL;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        const kr_kind_desc_t *k = kr_model_file_kind(f, i);
        uint64_t state = k && k->digest ? k->digest(s) : 0;
        h = kr_mix64(h ^ kr_mix64(kr_sim_event_digest(s) + i));
        h = kr_mix64(h ^ state);
    }
    return h;
}

static json_t *stats_json(run_ctx_t *c, double wall, uint64_t checksum)
{
    kr_model_t *m = c->model;
    kr_model_file_t *f = c->file;
    uint64_t events = 0;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) events += kr_sim_event_count(kr_model_sim(m, i));
    char sum[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)checksum);
    json_t *sims = json_array();
    json_t *root = json_pack("{s:s, s:i, s:s, s:f, s:f, s:I, s:f, s:s, s:o}", "version", KAIROS_VERSION_STRING,
                             "ranks", c->opt->ranks, "sync", f->sync == KR_SYNC_WINDOW ? "window" : "null-message",
                             "end_time", kr_time_to_units(f->end_time, f->precision), "wall_seconds", wall,
                             "events", (json_int_t)events, "events_per_second", wall > 0 ? (double)events / wall : 0.0,
                             "checksum", sum, "simulators", sims);
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        const kr_kind_desc_t *k = kr_model_file_kind(f, i);
        kr_report_t *r = kr_report_open();
        if (r && k->report) k->report(s, r);
        json_t *own = r ? json_deep_copy(kr_report_json(r)) : json_object();
        kr_report_close(r);
        json_array_append_new(sims, json_pack("{s:s, s:i, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:f, s:I, s:o}",
            "name", kr_sim_name(s), "rank", c->opt->rank, "kind", k->name,
            "formalism", kr_formalism_name(kr_sim_formalism(s)),
            "final_time", kr_time_to_units(kr_sim_now(s), f->precision),
            "events", (json_int_t)kr_sim_event_count(s), "sync_sent", (json_int_t)kr_sim_sync_sent(s),
            "sync_received", (json_int_t)kr_sim_sync_received(s), "null_messages", (json_int_t)kr_sim_null_messages(s),
            "blocked_seconds", kr_sim_blocked_seconds(s), "entities", (json_int_t)kr_world_entity_count(kr_sim_world(s)),
            "stats", own ? own : json_object()));
    }
    return root;
}

static void print_summary(run_ctx_t *c, json_t *stats)
{
    FILE *o = c->opt->summary;
    json_t *sims = json_object_get(stats, "simulators");
    fprintf(o, "kairos %s: %s, %zu simulator%s on %d rank%s, sync %s\n", KAIROS_VERSION_STRING, c->file->path,
            json_array_size(sims), json_array_size(sims) == 1 ? "" : "s", c->opt->ranks, c->opt->ranks == 1 ? "" : "s",
            json_string_value(json_object_get(stats, "sync")));
    fprintf(o, "  end time %g, wall %.3f s, %lld events (%.3g events/s)\n",
            json_real_value(json_object_get(stats, "end_time")), json_real_value(json_object_get(stats, "wall_seconds")),
            (long long)json_integer_value(json_object_get(stats, "events")),
            json_real_value(json_object_get(stats, "events_per_second")));
    fprintf(o, "  checksum %s\n", json_string_value(json_object_get(stats, "checksum")));
    size_t i;
    json_t *s;
    json_array_foreach(sims, i, s) {
        fprintf(o, "  %-20s %-14s %-15s events %-10lld", json_string_value(json_object_get(s, "name")),
                json_string_value(json_object_get(s, "kind")), json_string_value(json_object_get(s, "formalism")),
                (long long)json_integer_value(json_object_get(s, "events")));
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(s, "stats"), key, v) {
            if (json_is_integer(v)) fprintf(o, " %s=%lld", key, (long long)json_integer_value(v));
            else if (json_is_real(v)) fprintf(o, " %s=%.6g", key, json_real_value(v));
            else if (json_is_string(v)) fprintf(o, " %s=%s", key, json_string_value(v));
        }
        fputc('\n', o);
    }
}

/* ---- the run ---- */

static kr_status_t open_outputs(run_ctx_t *c, const char *log_dir, const char *trace_path)
{
    kr_model_t *m = c->model;
    if (log_dir) {
        if (mkdir(log_dir, 0777) && errno != EEXIST)
            return kr__fail(KR_ERR_IO, "%s: cannot create the event-log folder: %s", log_dir, strerror(errno));
        c->logs = calloc(kr_model_sim_count(m), sizeof *c->logs);
        if (!c->logs) return kr__fail(KR_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.jsonl", log_dir, kr_sim_name(kr_model_sim(m, i)));
            kr_status_t st = out_open(&c->logs[i], path);
            if (st) return st;
        }
    }
    if (trace_path) {
        kr_status_t st = out_open(&c->trace, trace_path);
        if (st) return st;
        c->tracing = true;
        c->first_trace_event = true;
        fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", c->trace.fp);
        trace_event(c, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                    c->opt->rank, c->opt->rank);
        for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
            json_t *name = json_string(kr_sim_name(kr_model_sim(m, i)));
            char *quoted = json_dumps(name, JSON_ENCODE_ANY);
            trace_event(c, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, \"args\": "
                        "{\"name\": %s}}", c->opt->rank, i, quoted ? quoted : "\"?\"");
            free(quoted);
            json_decref(name);
        }
    }
    return KR_OK;
}

static kr_status_t close_outputs(run_ctx_t *c, bool ok)
{
    kr_status_t st = KR_OK, s2;
    if (c->logs) {
        for (uint32_t i = 0; i < kr_model_sim_count(c->model); i++)
            if ((s2 = out_close(&c->logs[i], ok)) && !st) st = s2;
        free(c->logs);
        c->logs = NULL;
    }
    if (c->tracing) {
        fputs("\n]}\n", c->trace.fp);
        if ((s2 = out_close(&c->trace, ok)) && !st) st = s2;
        c->tracing = false;
    }
    return st;
}

kr_status_t kr_run_file(kr_model_file_t *f, const kr_run_options_t *opt)
{
    run_ctx_t c = { .file = f, .opt = opt };
    kr_observer_t obs = { .arg = &c, .on_event = on_event, .on_busy = on_busy, .on_blocked = on_blocked,
                          .on_sync = on_sync };
    c.model = kr_model_file_build(f, &obs);
    if (!c.model) return kr_last_status();
    /* The same checks of the rank mapping as `kairos validate --ranks N`:
     * a pin beyond the ranks of the run, or pins that split a zero-promise
     * group, are bad input here too. */
    int *rank_of = calloc(f->sim_count ? f->sim_count : 1, sizeof *rank_of);
    kr_status_t mapped = rank_of ? kr_model_file_map(f, c.model, opt->ranks > 0 ? opt->ranks : 1, rank_of)
                                 : kr__fail(KR_ERR_NOMEM, "out of memory");
    free(rank_of);
    if (mapped) {
        kr_model_destroy(c.model);
        return mapped;
    }
    const char *stats_path = opt->stats_path ? opt->stats_path : f->out_stats;
    const char *log_dir = opt->event_log_dir ? opt->event_log_dir : f->out_event_log;
    const char *trace_path = opt->trace_path ? opt->trace_path : f->out_trace;
    out_file_t stats_out = { 0 };
    kr_status_t st = open_outputs(&c, log_dir, trace_path);
    if (!st && stats_path) st = out_open(&stats_out, stats_path);
    c.t0 = c.last_progress = now_ns();
    if (!st) st = kr_model_run(c.model);
    double wall = (double)(now_ns() - c.t0) * 1e-9;
    char failure[1024] = "";
    if (st) snprintf(failure, sizeof failure, "%s", kr_last_error());
    if (c.progress_shown) show_progress(&c, true);
    json_t *stats = NULL;
    if (!st) {
        stats = stats_json(&c, wall, kr_run_checksum(f, c.model));
        if (!stats) st = kr__fail(KR_ERR_NOMEM, "out of memory building the stats");
    }
    if (!st && stats_out.fp && json_dumpf(stats, stats_out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))
        st = kr__fail(KR_ERR_IO, "%s: write failed", stats_out.partial);
    if (stats_out.fp) fputc('\n', stats_out.fp);
    kr_status_t closed = close_outputs(&c, !st);
    kr_status_t closed_stats = out_close(&stats_out, !st);
    if (!st) st = closed ? closed : closed_stats;
    if (!st && !opt->quiet && opt->summary) print_summary(&c, stats);
    json_decref(stats);
    kr_model_destroy(c.model);
    if (failure[0]) kr__fail(st, "%s", failure);
    return st;
}
