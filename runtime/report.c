/* What a run reports at its end: the checksum, the stats JSON (each
 * rank's part, merged on rank 0), the per-step series and the summary;
 * docs/stats.md describes each. */
#include <math.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kairos/continuous.h"
#include "kairos/digest.h"
#include "kairos/stop.h"
#include "base/clock.h"
#include "base/error.h"
#include "runtime/run_private.h"
#include "base/hmap.h"
#include "net/transport_mpi.h"

static uint64_t combine(uint64_t h, uint32_t id, uint64_t events, uint64_t state)
{
    h = kr__mix64(h ^ kr__mix64(events + id));
    return kr__mix64(h ^ state);
}

/* A simulator's state for the checksum: its world, its declared state
 * digested from their field metadata (kairos/digest.h) and its statistics
 * by name, a continuous simulator's ODE state vector (the engine keeps
 * it, not the kind), plus what the kind digests itself, if anything. */
static uint64_t state_digest(const kr_kind_desc_t *k, kr_sim_t *s)
{
    kr_world_t *w = kr_sim_world(s);
    uint64_t own = k && k->digest ? k->digest(s) : 0;
    uint64_t state = k && k->state_size ? kr_fields_digest(w, kr_sim_state(s), k->state_fields) : 0;
    size_t dim = 0;
    const double *y = kr_continuous_state(s, &dim);
    for (size_t i = 0; i < dim; i++) {
        uint64_t bits;
        memcpy(&bits, &y[i], sizeof bits);
        state = kr_digest_mix(state ^ bits);
    }
    kr_field_type_t type;
    const void *value;
    const char *name;
    for (size_t i = 0; (name = kr_sim_stat_at(s, i, &type, &value)); i++) {
        const kr_field_t one[] = { { name, type, 0, 1 }, { 0 } };
        state = kr_digest_mix(state ^ kr__hash_bytes(name, strlen(name), 0) ^ kr_fields_digest(w, value, one));
    }
    return own + kr_digest_mix(kr_world_digest(w) ^ kr_digest_mix(state));
}

uint64_t kr__run_checksum(const kr__model_file_t *f, kr_model_t *m)
{
    uint64_t h = 0x6b6169726f73ULL;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        h = combine(h, i, kr_sim_event_digest(s), state_digest(kr__model_file_kind(f, i), s));
    }
    return h;
}

/* One statistic under its name (docs/stats.md). Time averages and batch
 * means end at the end time, as the run's span. */
static void report_stat(kr_report_t *r, kr_sim_t *s, const char *name, kr_field_type_t type, const void *at)
{
    char key[300];
    switch (type) {
    case KR_FIELD_COUNTER: {
        uint64_t v;
        memcpy(&v, at, sizeof v);
        kr_report_int(r, name, (int64_t)v);
        break;
    }
    case KR_FIELD_TALLY: kr_report_tally(r, name, at); break;
    case KR_FIELD_TIMEAVG: kr_report_number(r, name, kr_timeavg_mean(at, kr_model_end_time(kr_sim_model(s)))); break;
    case KR_FIELD_HISTOGRAM: kr_report_histogram(r, name, at); break;
    case KR_FIELD_BATCHMEANS:
        snprintf(key, sizeof key, "%s_mean", name);
        kr_report_number(r, key, kr_batchmeans_mean(at));
        snprintf(key, sizeof key, "%s_ci95", name);
        kr_report_number(r, key, kr_batchmeans_halfwidth(at));
        snprintf(key, sizeof key, "%s_count", name);
        kr_report_int(r, key, (int64_t)((const kr_batchmeans_t *)at)->all.count);
        break;
    default: break;
    }
}

/* The statistics in the slots of a kind's declared state, then those the
 * simulator keeps by name (kairos/state.h). */
static void report_slots(const kr_kind_desc_t *k, kr_sim_t *s, kr_report_t *r)
{
    const char *state = kr_sim_state(s);
    for (size_t i = 0; state && k->state_fields && k->state_fields[i].name; i++)
        report_stat(r, s, k->state_fields[i].name, k->state_fields[i].type, state + k->state_fields[i].offset);
    kr_field_type_t type;
    const void *value;
    const char *name;
    for (size_t i = 0; (name = kr_sim_stat_at(s, i, &type, &value)); i++) report_stat(r, s, name, type, value);
}

/* This rank's part of the stats: its simulators, each with its id and
 * digests (for the checksum, combined on rank 0), and its wall time. */
json_t *kr__run_local_stats(run_ctx_t *c, double wall)
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
        if (r) report_slots(k, s, r);
        json_t *own = r ? json_incref(kr__report_json(r)) : json_object(); /* (kept past the close) */
        kr__report_close(r);
        char ev[17], st[17];
        snprintf(ev, sizeof ev, "%016llx", (unsigned long long)kr_sim_event_digest(s));
        snprintf(st, sizeof st, "%016llx", (unsigned long long)state_digest(k, s));
        if (k->state_digest) {
            /* this simulator's part of stats.state_digest, summed on rank 0 */
            char part[17];
            snprintf(part, sizeof part, "%016llx", (unsigned long long)k->state_digest(s));
            json_object_set_new(own ? own : (own = json_object()), "_state_part", json_string(part));
        }
        json_array_append_new(sims, json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:I, "
                                              "s:f, s:I, s:I, s:o}",
            "_id", (json_int_t)i, "_events_digest", ev, "_state_digest", st,
            "name", kr_sim_name(s), "rank", kr_sim_rank(s), "kind", k->name,
            "formalism", kr_formalism_name(kr_sim_formalism(s)),
            "final_time", kr_time_to_units(kr_sim_now(s), f->precision),
            "events", (json_int_t)kr_sim_event_count(s), "sync_sent", (json_int_t)kr_sim_sync_sent(s),
            "sync_received", (json_int_t)kr_sim_sync_received(s), "null_messages", (json_int_t)kr_sim_null_messages(s),
            "guarantee_requests", (json_int_t)kr_sim_guarantee_requests(s), "blocked_seconds", kr_sim_blocked_seconds(s),
            "blocked_episodes", (json_int_t)kr_sim_blocked_episodes(s), "entities", (json_int_t)kr_world_entity_count(kr_sim_world(s)),
            "stats", own ? own : json_object()));
    }
    char node[256] = "?";
    gethostname(node, sizeof node - 1);
    kr__mpi_transport_stats_t net = { 0 };
    if (c->mpi) kr__transport_mpi_stats(c->mpi, &net);
    /* The process's peak resident memory so far (Linux: ru_maxrss in KiB). */
    struct rusage ru;
    json_int_t peak = getrusage(RUSAGE_SELF, &ru) == 0 ? (json_int_t)ru.ru_maxrss * 1024 : 0;
    json_t *part = json_pack("{s:i, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "rank", c->opt->rank,
                             "node", node, "cores", c->opt->binding && c->opt->binding[0] ? c->opt->binding : "all",
                             "wall_seconds", wall, "peak_memory_bytes", peak,
                             "rounds", (json_int_t)kr_model_rounds(c->model),
                             "messages", (json_int_t)kr_model_transport_messages(c->model),
                             "batches", (json_int_t)net.batches_sent, "bytes", (json_int_t)net.bytes_sent,
                             "reductions", (json_int_t)net.reductions, "simulators", sims);
    /* (rank 0 takes them out of the rate: they were run before the restart) */
    if (part && c->events_restored)
        json_object_set_new(part, "_events_restored", json_integer((json_int_t)c->events_restored));
    /* the earliest stop this rank knows of, in ticks (merged on rank 0) */
    uint32_t by;
    kr_time_t at;
    if (part && kr_model_stopped(m, &by, &at))
        json_object_set_new(part, "_stopped", json_pack("{s:I, s:I}", "by", (json_int_t)by, "at", (json_int_t)at));
    return part;
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
void kr__run_write_series(FILE *o, json_t *steps)
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
 * the checksum combined in that order. The simulators' entries move from
 * the parts into the stats, without their private keys (the parts are
 * changed). */
json_t *kr__run_merge_stats(run_ctx_t *c, json_t **parts, int nparts)
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
        json_array_append_new(ranks, json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "rank",
                                               json_object_get(p, "rank"), "node", json_object_get(p, "node"),
                                               "cores", json_object_get(p, "cores"), "wall_seconds",
                                               json_object_get(p, "wall_seconds"), "peak_memory_bytes",
                                               json_object_get(p, "peak_memory_bytes"), "messages",
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
    uint64_t state_sum = 0, restored = 0;
    bool has_state = false;
    json_int_t rounds = 0, reductions = 0;
    for (int r = 0; r < nparts; r++) {
        /* rounds and reductions are collective: every rank counts each one */
        json_int_t x = json_integer_value(json_object_get(parts[r], "rounds"));
        if (x > rounds) rounds = x;
        x = json_integer_value(json_object_get(parts[r], "reductions"));
        if (x > reductions) reductions = x;
        messages += (uint64_t)json_integer_value(json_object_get(parts[r], "messages"));
        restored += (uint64_t)json_integer_value(json_object_get(parts[r], "_events_restored"));
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
        /* (the entry itself, its private keys dropped: a deep copy cost
         * more than the rest of the merge with 16,000 simulators) */
        json_object_del(json_object_get(sim, "stats"), "_state_part");
        json_object_del(json_object_get(sim, "stats"), "_steps");
        json_object_del(sim, "_id");
        json_object_del(sim, "_events_digest");
        json_object_del(sim, "_state_digest");
        json_array_append(sims, sim);
    }
    free(by_id);
    char sum[17];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)h);
    double end = kr_time_to_units(f->end_time, f->precision), per_event = events ? 1.0 / (double)events : 0.0;
    json_t *out = json_pack("{s:s, s:i, s:s, s:s, s:f, s:f, s:I, s:f, s:f, s:I, s:I, s:I, s:f, s:s, s:o, s:o}",
                            "version", KAIROS_VERSION_STRING, "ranks", c->opt->ranks > 0 ? c->opt->ranks : 1,
                            "sync", kr__sync_name(f->sync_ran), "sync_requested", kr__sync_name(f->sync),
                            "end_time", end, "wall_seconds", wall,
                            "events", (json_int_t)events,
                            "events_per_second", wall > 0 && events >= restored ? (double)(events - restored) / wall : 0.0,
                            "speedup", wall > 0 ? (end - kr_time_to_units(c->restored_at, f->precision)) / wall : 0.0,
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
    if (out) {
        /* What model this was (docs/stats.md): the same on every rank. */
        char digest[17];
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)c->digest.identity);
        json_object_set_new(out, "identity_digest", json_string(digest));
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)c->digest.run);
        json_object_set_new(out, "run_digest", json_string(digest));
    }
    if (out && json_object_size(c->steps)) json_object_set_new(out, "totals", step_totals(c->steps));
    /* Who ended the run (kairos/stop.h): the earliest stop by (time,
     * simulator id) over every rank's. Ticks travel as integers, whole. */
    bool stopped = false;
    json_int_t stop_by = 0, stop_at = 0;
    for (int r = 0; out && r < nparts; r++) {
        json_t *s = json_object_get(parts[r], "_stopped");
        json_int_t at = json_integer_value(json_object_get(s, "at")), by = json_integer_value(json_object_get(s, "by"));
        if (!s || by < 0 || (size_t)by >= n || at < 0) continue;
        if (!stopped || at < stop_at || (at == stop_at && by < stop_by)) {
            stopped = true;
            stop_by = by;
            stop_at = at;
        }
    }
    if (stopped)
        json_object_set_new(out, "stopped", json_pack("{s:s, s:f}", "by", f->sims[stop_by].name, "time",
                                                      kr_time_to_units((kr_time_t)stop_at, f->precision)));
    if (out && has_state) {
        char digest[17];
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)state_sum);
        json_object_set_new(out, "state_digest", json_string(digest));
    }
    return out;
}

void kr__run_print_summary(run_ctx_t *c, json_t *stats)
{
    FILE *o = c->opt->summary;
    json_t *sims = json_object_get(stats, "simulators");
    fprintf(o, "kairos %s: %s, %zu simulator%s on %d rank%s, sync %s%s\n", KAIROS_VERSION_STRING, c->file->path,
            json_array_size(sims), json_array_size(sims) == 1 ? "" : "s", c->opt->ranks, c->opt->ranks == 1 ? "" : "s",
            json_string_value(json_object_get(stats, "sync")), c->file->sync == KR_SYNC_AUTO ? " (auto)" : "");
    fprintf(o, "  end time %g, wall %.3f s, %lld events (%.3g events/s)\n",
            json_real_value(json_object_get(stats, "end_time")), json_real_value(json_object_get(stats, "wall_seconds")),
            (long long)json_integer_value(json_object_get(stats, "events")),
            json_real_value(json_object_get(stats, "events_per_second")));
    fprintf(o, "  checksum %s\n", json_string_value(json_object_get(stats, "checksum")));
    kr__run_print_restart(c, o);
    json_t *stopped = json_object_get(stats, "stopped");
    if (stopped)
        fprintf(o, "  stopped by %s at %g\n", json_string_value(json_object_get(stopped, "by")),
                json_real_value(json_object_get(stopped, "time")));
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
