/* A run from a model file, and every output it writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/hmap.h"
#include "runtime/run.h"
#include "net/collectives.h"
#include "net/transport_mpi.h"
#include "schedulers/model_private.h"

kr_status_t kr__out_open(kr__out_file_t *o, const char *path)
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

kr_status_t kr__out_close(kr__out_file_t *o, bool keep)
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
    *o = (kr__out_file_t){ 0 };
    return st;
}

/* ---- the observer: event logs, trace, progress ---- */

typedef struct run_ctx {
    kr__model_file_t *file;
    kr_model_t *model;
    const kr__run_options_t *opt;
    kr__out_file_t *logs;           /* one per simulator, or NULL */
    kr__out_file_t trace;
    bool tracing, first_trace_event;
    uint64_t t0;                /* wall start */
    uint64_t last_progress;
    bool progress_shown;
    kr__transport_t *mpi;        /* the MPI transport (owned by the model), for its counts; NULL on one rank */
    json_t *steps;              /* rank 0: per-step figures summed per kind (kr_report_steps) */
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
    uint64_t now = kr__monotonic_ns();
    if (!final && now - c->last_progress < 250000000u) return; /* four refreshes a second at most */
    c->last_progress = now;
    kr_model_t *m = c->model;
    kr_time_t frontier = KR_TIME_NEVER;
    uint64_t events = 0;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
        kr_time_t t = kr_sim_now(kr_model_sim(m, i));
        if (t < frontier) frontier = t;
        events += kr_sim_event_count(kr_model_sim(m, i));
    }
    if (frontier == KR_TIME_NEVER) frontier = 0;
    double end = kr_time_to_units(kr_model_end_time(m), kr_model_precision(m));
    double at = kr_time_to_units(frontier, kr_model_precision(m));
    double wall = (double)(now - c->t0) * 1e-9;
    double rate = wall > 0 ? (double)events / wall : 0;
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
                    us(c, kr__monotonic_ns()));
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
                    c->opt->rank, kr_sim_id(s), us(c, kr__monotonic_ns()));
}

/* ---- checksum and stats ---- */

static uint64_t combine(uint64_t h, uint32_t id, uint64_t events, uint64_t state)
{
    h = kr__mix64(h ^ kr__mix64(events + id));
    return kr__mix64(h ^ state);
}

uint64_t kr__run_checksum(const kr__model_file_t *f, kr_model_t *m)
{
    uint64_t h = 0x6b6169726f73ULL;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        const kr_kind_desc_t *k = kr__model_file_kind(f, i);
        h = combine(h, i, kr_sim_event_digest(s), k && k->digest ? k->digest(s) : 0);
    }
    return h;
}

/* This rank's part of the stats: its simulators, each with its id and
 * digests (for the checksum, combined on rank 0), and its wall time. */
static json_t *local_stats(run_ctx_t *c, double wall)
{
    kr_model_t *m = c->model;
    kr__model_file_t *f = c->file;
    json_t *sims = json_array();
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        if (!kr_sim_is_local(s)) continue;
        const kr_kind_desc_t *k = kr__model_file_kind(f, i);
        kr_report_t *r = kr__report_open();
        if (r && k->report) k->report(s, r);
        json_t *own = r ? json_deep_copy(kr__report_json(r)) : json_object();
        kr__report_close(r);
        char ev[17], st[17];
        snprintf(ev, sizeof ev, "%016llx", (unsigned long long)kr_sim_event_digest(s));
        snprintf(st, sizeof st, "%016llx", (unsigned long long)(k->digest ? k->digest(s) : 0));
        if (k->state_digest) {
            /* this simulator's part of stats.state_digest, summed on rank 0 */
            char part[17];
            snprintf(part, sizeof part, "%016llx", (unsigned long long)k->state_digest(s));
            json_object_set_new(own ? own : (own = json_object()), "_state_part", json_string(part));
        }
        json_array_append_new(sims, json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:I, "
                                              "s:f, s:I, s:o}",
            "_id", (json_int_t)i, "_events_digest", ev, "_state_digest", st,
            "name", kr_sim_name(s), "rank", kr_sim_rank(s), "kind", k->name,
            "formalism", kr_formalism_name(kr_sim_formalism(s)),
            "final_time", kr_time_to_units(kr_sim_now(s), f->precision),
            "events", (json_int_t)kr_sim_event_count(s), "sync_sent", (json_int_t)kr_sim_sync_sent(s),
            "sync_received", (json_int_t)kr_sim_sync_received(s), "null_messages", (json_int_t)kr_sim_null_messages(s),
            "guarantee_requests", (json_int_t)kr_sim_guarantee_requests(s), "blocked_seconds", kr_sim_blocked_seconds(s), "entities", (json_int_t)kr_world_entity_count(kr_sim_world(s)),
            "stats", own ? own : json_object()));
    }
    char node[256] = "?";
    gethostname(node, sizeof node - 1);
    kr__mpi_transport_stats_t net = { 0 };
    if (c->mpi) kr__transport_mpi_stats(c->mpi, &net);
    return json_pack("{s:i, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:o}", "rank", c->opt->rank, "node", node,
                     "cores", c->opt->binding && c->opt->binding[0] ? c->opt->binding : "all", "wall_seconds", wall,
                     "rounds", (json_int_t)kr_model_rounds(c->model),
                     "messages", (json_int_t)kr_model_transport_messages(c->model),
                     "batches", (json_int_t)net.batches_sent, "bytes", (json_int_t)net.bytes_sent,
                     "reductions", (json_int_t)net.reductions, "simulators", sims);
}

static uint64_t hex64(const char *s)
{
    return s ? strtoull(s, NULL, 16) : 0;
}

/* One simulator's per-step figures (kr_report_steps) added into those of
 * its model-file entry (every region of a world, every replica of a
 * `count`), step by step; called in simulator-id order. Whole numbers, so
 * the sums are exact whatever simulators hold the figures. */
static void add_steps(json_t *totals, const char *entry, json_t *steps)
{
    json_t *k = json_object_get(totals, entry);
    if (!k) json_object_set_new(totals, entry, k = json_object());
    const char *name;
    json_t *fig;
    json_object_foreach(steps, name, fig) {
        json_t *acc = json_object_get(k, name);
        if (!acc) {
            json_object_set_new(k, name, json_deep_copy(fig));
            continue;
        }
        json_t *sum = json_object_get(acc, "values");
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(fig, "values"), i, v) {
            json_int_t a = json_integer_value(json_array_get(sum, i)), b = json_integer_value(v), total;
            /* (saturates rather than wraps: kinds keep their figures far below) */
            if (__builtin_add_overflow(a, b, &total)) total = a > 0 ? INT64_MAX : INT64_MIN;
            if (i < json_array_size(sum))
                json_array_set_new(sum, i, json_integer(total));
            else json_array_append(sum, v);
        }
    }
}

/* The "name" of the model-file entry simulator `i` came from. */
static const char *entry_name(const kr__model_file_t *f, size_t i)
{
    json_t *entry = json_array_get(json_object_get(f->root, "simulators"), f->sims[i].index);
    const char *name = json_string_value(json_object_get(entry, "name"));
    return name ? name : f->sims[i].name;
}

static double pow10u(json_int_t d)
{
    double p = 1;
    while (d-- > 0) p *= 10;
    return p;
}

/* stats.totals: the last step's value of every summed per-step figure,
 * by model-file entry. */
static json_t *step_totals(json_t *steps)
{
    json_t *out = json_object();
    const char *kind, *name;
    json_t *k, *fig;
    json_object_foreach(steps, kind, k) {
        json_t *t = json_object();
        json_object_foreach(k, name, fig) {
            json_t *vs = json_object_get(fig, "values");
            json_int_t d = json_integer_value(json_object_get(fig, "decimals"));
            json_int_t last = json_array_size(vs) ? json_integer_value(json_array_get(vs, json_array_size(vs) - 1)) : 0;
            json_object_set_new(t, name, d ? json_real((double)last / pow10u(d)) : json_integer(last));
        }
        json_object_set_new(out, kind, t);
    }
    return out;
}

/* The CSV of --series: one row per step, one column per summed figure
 * (ENTRY.NAME when several model-file entries report some), fixed-point
 * values written exactly. */
static void write_series(FILE *o, json_t *steps)
{
    size_t rows = 0;
    const char *kind, *name;
    json_t *k, *fig;
    fputs("step", o);
    json_object_foreach(steps, kind, k) json_object_foreach(k, name, fig) {
        if (json_object_size(steps) > 1) fprintf(o, ",%s.%s", kind, name);
        else fprintf(o, ",%s", name);
        size_t n = json_array_size(json_object_get(fig, "values"));
        if (n > rows) rows = n;
    }
    fputc('\n', o);
    for (size_t i = 0; i < rows; i++) {
        fprintf(o, "%zu", i);
        json_object_foreach(steps, kind, k) json_object_foreach(k, name, fig) {
            json_t *v = json_array_get(json_object_get(fig, "values"), i);
            json_int_t d = json_integer_value(json_object_get(fig, "decimals"));
            if (!v) {
                fputc(',', o);
                continue;
            }
            long long x = (long long)json_integer_value(v);
            if (!d) {
                fprintf(o, ",%lld", x);
                continue;
            }
            long long p = (long long)pow10u(d);
            unsigned long long ax = x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
            fprintf(o, ",%s%llu.%0*llu", x < 0 ? "-" : "", ax / (unsigned long long)p, (int)d,
                    ax % (unsigned long long)p);
        }
        fputc('\n', o);
    }
}

/* Rank 0: every rank's part into the stats object, simulators in id order,
 * the checksum combined in that order. */
static json_t *merge_stats(run_ctx_t *c, json_t **parts, int nparts)
{
    kr__model_file_t *f = c->file;
    size_t n = f->sim_count;
    json_t **by_id = calloc(n ? n : 1, sizeof *by_id);
    json_t *ranks = json_array();
    double wall = 0;
    if (!by_id) return NULL;
    for (int r = 0; r < nparts; r++) {
        json_t *p = parts[r];
        double w = json_number_value(json_object_get(p, "wall_seconds"));
        if (w > wall) wall = w;
        json_array_append_new(ranks, json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "rank",
                                               json_object_get(p, "rank"), "node", json_object_get(p, "node"),
                                               "cores", json_object_get(p, "cores"), "wall_seconds",
                                               json_object_get(p, "wall_seconds"), "messages",
                                               json_object_get(p, "messages"), "batches",
                                               json_object_get(p, "batches"), "bytes", json_object_get(p, "bytes")));
        size_t i;
        json_t *sim;
        json_array_foreach(json_object_get(p, "simulators"), i, sim) {
            json_int_t id = json_integer_value(json_object_get(sim, "_id"));
            if (id >= 0 && (size_t)id < n && !by_id[id]) by_id[id] = sim;
        }
    }
    uint64_t h = 0x6b6169726f73ULL, events = 0, nulls = 0, requests = 0, messages = 0, batches = 0, bytes = 0;
    uint64_t state_sum = 0;
    bool has_state = false;
    json_int_t rounds = 0, reductions = 0;
    for (int r = 0; r < nparts; r++) {
        /* rounds and reductions are collective: every rank counts each one */
        json_int_t x = json_integer_value(json_object_get(parts[r], "rounds"));
        if (x > rounds) rounds = x;
        x = json_integer_value(json_object_get(parts[r], "reductions"));
        if (x > reductions) reductions = x;
        messages += (uint64_t)json_integer_value(json_object_get(parts[r], "messages"));
        batches += (uint64_t)json_integer_value(json_object_get(parts[r], "batches"));
        bytes += (uint64_t)json_integer_value(json_object_get(parts[r], "bytes"));
    }
    json_t *sims = json_array();
    json_decref(c->steps);
    c->steps = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *sim = by_id[i];
        if (!sim) continue; /* cannot happen: every simulator runs on one rank */
        h = combine(h, (uint32_t)i, hex64(json_string_value(json_object_get(sim, "_events_digest"))),
                    hex64(json_string_value(json_object_get(sim, "_state_digest"))));
        events += (uint64_t)json_integer_value(json_object_get(sim, "events"));
        nulls += (uint64_t)json_integer_value(json_object_get(sim, "null_messages"));
        json_t *part = json_object_get(json_object_get(sim, "stats"), "_state_part");
        if (part) {
            /* A sum: the same whatever simulator holds which agent. */
            state_sum += hex64(json_string_value(part));
            has_state = true;
        }
        requests += (uint64_t)json_integer_value(json_object_get(sim, "guarantee_requests"));
        json_t *steps = json_object_get(json_object_get(sim, "stats"), "_steps");
        if (steps) add_steps(c->steps, entry_name(f, i), steps);
        json_t *copy = json_deep_copy(sim);
        json_object_del(json_object_get(copy, "stats"), "_state_part");
        json_object_del(json_object_get(copy, "stats"), "_steps");
        json_object_del(copy, "_id");
        json_object_del(copy, "_events_digest");
        json_object_del(copy, "_state_digest");
        json_array_append_new(sims, copy);
    }
    free(by_id);
    char sum[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)h);
    double end = kr_time_to_units(f->end_time, f->precision), per_event = events ? 1.0 / (double)events : 0.0;
    json_t *out = json_pack("{s:s, s:i, s:s, s:f, s:f, s:I, s:f, s:f, s:I, s:I, s:I, s:f, s:s, s:o, s:o}", "version",
                            KAIROS_VERSION_STRING, "ranks", c->opt->ranks > 0 ? c->opt->ranks : 1,
                            "sync", f->sync == KR_SYNC_WINDOW ? "window" : "null-message",
                            "end_time", end, "wall_seconds", wall,
                            "events", (json_int_t)events, "events_per_second", wall > 0 ? (double)events / wall : 0.0,
                            "speedup", wall > 0 ? end / wall : 0.0,
                            "rounds", rounds, "null_messages", (json_int_t)nulls,
                            "guarantee_requests", (json_int_t)requests,
                            "null_messages_per_event", (double)(nulls + requests) * per_event,
                            "checksum", sum, "simulators", sims, "rank_info", ranks);
    /* The coordinator's traffic between processes (docs/stats.md, docs/scaling.md). */
    if (out && json_object_update_new(out, json_pack("{s:I, s:f, s:I, s:f, s:I, s:I}", "messages",
                                                     (json_int_t)messages, "messages_per_event",
                                                     (double)messages * per_event, "batches", (json_int_t)batches,
                                                     "batches_per_event", (double)batches * per_event, "bytes",
                                                     (json_int_t)bytes, "reductions", reductions))) {
        json_decref(out);
        out = NULL;
    }
    if (out && json_object_size(c->steps)) json_object_set_new(out, "totals", step_totals(c->steps));
    if (out && has_state) {
        char digest[17];
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)state_sum);
        json_object_set_new(out, "state_digest", json_string(digest));
    }
    return out;
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
    if (json_object_get(stats, "state_digest"))
        fprintf(o, "  state digest %s\n", json_string_value(json_object_get(stats, "state_digest")));
    size_t i;
    json_t *s;
    json_array_foreach(sims, i, s) {
        fprintf(o, "  %-20s %-10s %-15s", json_string_value(json_object_get(s, "name")),
                json_string_value(json_object_get(s, "kind")), json_string_value(json_object_get(s, "formalism")));
        if (c->opt->ranks > 1) fprintf(o, " rank %-3lld", (long long)json_integer_value(json_object_get(s, "rank")));
        fprintf(o, " events %-10lld", (long long)json_integer_value(json_object_get(s, "events")));
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

static bool distributed(const run_ctx_t *c) { return c->opt->ranks > 1; }

/* The trace of rank k: the whole file on one rank; a fragment FILE.rankK
 * (events only) that rank 0 joins afterwards on several. */
static void trace_fragment_path(const run_ctx_t *c, const char *path, int rank, char *out, size_t cap)
{
    (void)c;
    snprintf(out, cap, "%s.rank%d", path, rank);
}

static kr_status_t open_outputs(run_ctx_t *c, const char *log_dir, const char *trace_path)
{
    kr_model_t *m = c->model;
    if (log_dir) {
        if (mkdir(log_dir, 0777) && errno != EEXIST)
            return kr__fail(KR_ERR_IO, "%s: cannot create the event-log folder: %s", log_dir, strerror(errno));
        c->logs = calloc(kr_model_sim_count(m), sizeof *c->logs);
        if (!c->logs) return kr__fail(KR_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
            if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.jsonl", log_dir, kr_sim_name(kr_model_sim(m, i)));
            kr_status_t st = kr__out_open(&c->logs[i], path);
            if (st) return st;
        }
    }
    if (trace_path) {
        char frag[4200];
        trace_fragment_path(c, trace_path, c->opt->rank, frag, sizeof frag);
        kr_status_t st = kr__out_open(&c->trace, distributed(c) ? frag : trace_path);
        if (st) return st;
        c->tracing = true;
        c->first_trace_event = true;
        if (!distributed(c)) fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", c->trace.fp);
        trace_event(c, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
                    c->opt->rank, c->opt->rank);
        for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
            if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
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
            if ((s2 = kr__out_close(&c->logs[i], ok)) && !st) st = s2;
        free(c->logs);
        c->logs = NULL;
    }
    if (c->tracing) {
        fputs(distributed(c) ? "\n" : "\n]}\n", c->trace.fp);
        if ((s2 = kr__out_close(&c->trace, ok)) && !st) st = s2;
        c->tracing = false;
    }
    return st;
}

/* Rank 0 joins the ranks' trace fragments into one file (and removes them;
 * on failure, only removes them). */
static kr_status_t join_trace(run_ctx_t *c, const char *path, bool ok)
{
    kr__out_file_t out = { 0 };
    kr_status_t st = ok ? kr__out_open(&out, path) : KR_OK;
    if (!st && ok) fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", out.fp);
    bool first = true;
    for (int r = 0; r < c->opt->ranks; r++) {
        char frag[4200];
        trace_fragment_path(c, path, r, frag, sizeof frag);
        FILE *in = fopen(frag, "r");
        if (!in) {
            if (ok && !st) st = kr__fail(KR_ERR_IO, "%s: the trace of rank %d is missing: %s", frag, r, strerror(errno));
            continue;
        }
        if (ok && !st) {
            if (!first) fputs(",\n", out.fp);
            first = false;
            char buf[65536];
            size_t n;
            long body = 0;
            while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
                /* drop the fragment's trailing newline so the commas line up */
                if (feof(in) && n && buf[n - 1] == '\n') n--;
                fwrite(buf, 1, n, out.fp);
                body += (long)n;
            }
            (void)body;
        }
        fclose(in);
        remove(frag);
    }
    if (!st && ok) fputs("\n]}\n", out.fp);
    kr_status_t closed = ok ? kr__out_close(&out, !st) : KR_OK;
    return st ? st : closed;
}

/* Every rank learns whether any failed; rank 0 gets the first failing
 * rank's message. Returns the agreed status (this rank's own when it
 * failed). */
static kr_status_t agree(run_ctx_t *c, kr_status_t st)
{
    if (!distributed(c)) return st;
    int mine = st, worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, c->opt->comm);
    if (!worst) return KR_OK;
    char **all = NULL;
    kr__net_gather_strings(c->opt->comm, st ? kr_last_error() : "", &all);
    if (c->opt->rank == 0 && all) {
        int first = -1;
        for (int r = 0; r < c->opt->ranks && first < 0; r++)
            if (all[r] && all[r][0]) first = r;
        /* rank 0's own message wins when it failed too: it may carry a
         * peer's, relayed by the abort */
        char msg[1024];
        if (st) snprintf(msg, sizeof msg, "%s", kr_last_error());
        else snprintf(msg, sizeof msg, "%s", first >= 0 ? all[first] : "a rank failed");
        for (int r = 0; r < c->opt->ranks; r++) free(all[r]);
        free(all);
        return kr__fail(st ? st : (kr_status_t)worst, "%s", msg);
    }
    if (all) free(all);
    return st ? st : kr__fail((kr_status_t)worst, "another rank failed");
}

/* Every rank must agree on what the component registry and the event
 * types are, or entities and events would be read as something else. */
static const char *component_name(void *arg, uint32_t i)
{
    const kr_component_info_t *info = kr_component_info(arg, i + 1);
    return info ? info->name : "?";
}

static const char *event_type_name(void *arg, uint32_t i)
{
    return kr_model_event_type_name(arg, i + 1);
}

static kr_status_t check_registries(run_ctx_t *c)
{
    kr_registry_t *reg = kr_model_registry(c->model);
    uint32_t n = kr_registry_count(reg);
    uint32_t t = kr_model_event_type_count(c->model);
    uint64_t *d = malloc(((n > t ? n : t) + 1) * sizeof *d);
    if (!d) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const kr_component_info_t *info = kr_component_info(reg, i + 1);
        uint64_t h = info ? kr__hash_bytes(info->name, strlen(info->name), info->size * 31 + info->align) : 0;
        d[i] = info ? kr__mix64(h ^ (info->vtbl ? 1u : 0u) ^ ((uint64_t)info->field_count << 8)) : 0;
    }
    kr_status_t st = kr__net_check_same(c->opt->comm, "component registries", d, n, component_name, reg);
    for (uint32_t i = 0; !st && i < t; i++) {
        const char *name = kr_model_event_type_name(c->model, i + 1);
        d[i] = kr__hash_bytes(name, strlen(name), kr_model_event_type_size(c->model, i + 1));
    }
    if (!st) st = kr__net_check_same(c->opt->comm, "event types", d, t, event_type_name, c->model);
    free(d);
    return st;
}

kr_status_t kr__run_file(kr__model_file_t *f, const kr__run_options_t *opt)
{
    run_ctx_t c = { .file = f, .opt = opt };
    int ranks = opt->ranks > 0 ? opt->ranks : 1;
    /* The same checks of the rank mapping as `kairos validate --ranks N`
     * (every rank computes the same plan from the same file). */
    int *rank_of = calloc(f->sim_count ? f->sim_count : 1, sizeof *rank_of);
    kr_status_t st = rank_of ? kr__model_file_plan(f, ranks, rank_of) : kr__fail(KR_ERR_NOMEM, "out of memory");
    if (st) {
        free(rank_of);
        return st;
    }
    if (opt->rank == 0 && ranks > 1 && (size_t)ranks > f->sim_count && !opt->no_idle_warning) {
        if ((size_t)ranks == f->sim_count + 1)
            fprintf(stderr, "kairos: warning: %d ranks for %zu simulator%s: rank %d idles\n", ranks, f->sim_count,
                    f->sim_count == 1 ? "" : "s", ranks - 1);
        else
            fprintf(stderr, "kairos: warning: %d ranks for %zu simulator%s: ranks %zu-%d idle\n", ranks, f->sim_count,
                    f->sim_count == 1 ? "" : "s", f->sim_count, ranks - 1);
    }
    const char *stats_path = opt->stats_path ? opt->stats_path : f->out_stats;
    const char *log_dir = opt->event_log_dir ? opt->event_log_dir : f->out_event_log;
    const char *trace_path = opt->trace_path ? opt->trace_path : f->out_trace;
    const char *series_path = opt->series_path ? opt->series_path : f->out_series;
    /* Hooks only for the outputs that need them: a hook costs a call per
     * event (or per span) even when it does nothing. */
    kr_observer_t obs = { .arg = &c, .on_event = log_dir || trace_path ? on_event : NULL,
                          .on_busy = trace_path || opt->progress ? on_busy : NULL,
                          .on_blocked = trace_path ? on_blocked : NULL, .on_sync = trace_path ? on_sync : NULL };
    c.model = kr__model_file_build_on(f, &obs, opt->rank, ranks > 1 ? rank_of : NULL);
    st = c.model ? KR_OK : kr_last_status();
    /* A kind's params are checked only where the simulator is built. */
    st = agree(&c, st);
    /* KAIROS_CHAOS_SEED (testing): messages are delayed and reordered on
     * their way; the results must not change. */
    const char *chaos = getenv("KAIROS_CHAOS_SEED");
    uint64_t chaos_seed = chaos && chaos[0] ? strtoull(chaos, NULL, 10) : 0;
    if (!st && ranks > 1) {
        kr__transport_t *t = kr__transport_mpi_create(&(kr__mpi_transport_desc_t){ .comm = opt->comm,
            .rank_of_sim = rank_of, .sim_count = (uint32_t)f->sim_count });
        c.mpi = t;
        if (t && chaos_seed) t = kr__transport_chaos_wrap(t, chaos_seed + (uint64_t)opt->rank);
        st = t ? kr__model_use_transport(c.model, t) : kr_last_status();
        st = agree(&c, st);
        if (!st) st = check_registries(&c);
    }
    else if (!st && chaos_seed) {
        kr__transport_t *t = kr__transport_chaos_wrap(kr__transport_local_create(), chaos_seed);
        st = t ? kr__model_use_transport(c.model, t) : kr_last_status();
    }
    free(rank_of);
    if (st) {
        kr_model_destroy(c.model);
        return st;
    }
    kr__out_file_t stats_out = { 0 }, series_out = { 0 };
    st = open_outputs(&c, log_dir, trace_path);
    if (!st && stats_path && opt->rank == 0) st = kr__out_open(&stats_out, stats_path);
    if (!st && series_path && opt->rank == 0) st = kr__out_open(&series_out, series_path);
    st = agree(&c, st);
    /* One start for every rank, so the ranks' traces share a time base. */
    if (distributed(&c)) MPI_Barrier(opt->comm);
    c.t0 = c.last_progress = kr__monotonic_ns();
    if (!st) st = kr_model_run(c.model);
    double wall = (double)(kr__monotonic_ns() - c.t0) * 1e-9;
    if (c.progress_shown) show_progress(&c, true);
    st = agree(&c, st);
    char failure[1024] = "";
    if (st) snprintf(failure, sizeof failure, "%s", kr_last_error());
    kr_status_t closed = close_outputs(&c, !st);
    if (!st) st = closed;
    st = agree(&c, st);
    /* Results: every rank's part, merged on rank 0. */
    json_t *stats = NULL;
    if (!st) {
        json_t *part = local_stats(&c, wall);
        if (distributed(&c)) {
            char *text = json_dumps(part, JSON_COMPACT);
            char **all = NULL;
            st = kr__net_gather_strings(opt->comm, text ? text : "{}", &all);
            free(text);
            if (!st && opt->rank == 0) {
                json_t **parts = calloc((size_t)ranks, sizeof *parts);
                for (int r = 0; parts && r < ranks; r++) parts[r] = json_loads(all[r], 0, NULL);
                stats = parts ? merge_stats(&c, parts, ranks) : NULL;
                for (int r = 0; parts && r < ranks; r++) json_decref(parts[r]);
                free(parts);
            }
            for (int r = 0; all && r < ranks; r++) free(all[r]);
            free(all);
        } else {
            stats = merge_stats(&c, &part, 1);
        }
        json_decref(part);
        if (!st && opt->rank == 0 && !stats) st = kr__fail(KR_ERR_NOMEM, "out of memory building the stats");
    }
    if (opt->rank == 0) {
        if (trace_path && distributed(&c)) {
            kr_status_t joined = join_trace(&c, trace_path, !st);
            if (!st) st = joined;
        }
        if (!st && stats_out.fp && json_dumpf(stats, stats_out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))
            st = kr__fail(KR_ERR_IO, "%s: write failed", stats_out.partial);
        if (stats_out.fp) fputc('\n', stats_out.fp);
        kr_status_t closed_stats = kr__out_close(&stats_out, !st);
        if (!st) st = closed_stats;
        if (!st && series_out.fp) write_series(series_out.fp, c.steps);
        kr_status_t closed_series = kr__out_close(&series_out, !st);
        if (!st) st = closed_series;
        if (!st && !opt->quiet && opt->summary) print_summary(&c, stats);
        if (!st && opt->stats_json) {
            *opt->stats_json = stats;
            stats = NULL;
        }
    }
    json_decref(stats);
    json_decref(c.steps);
    kr_model_destroy(c.model);
    if (failure[0]) kr__fail(st, "%s", failure);
    return st;
}
