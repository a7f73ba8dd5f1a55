/* What a run writes as it goes: per-simulator event logs, the Chrome
 * trace (one fragment per rank, joined by rank 0) and the progress line;
 * docs/stats.md describes each. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "runtime/run_private.h"

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

void kr__run_show_progress(run_ctx_t *c, bool final)
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
    /* (since this process started: a restart goes on from its cut) */
    events -= c->events_restored;
    double end = kr_time_to_units(kr_model_end_time(m), kr_model_precision(m));
    double at = kr_time_to_units(frontier, kr_model_precision(m));
    double from = kr_time_to_units(c->restored_at, kr_model_precision(m));
    double wall = (double)(now - c->t0) * 1e-9;
    double rate = wall > 0 ? (double)events / wall : 0;
    double left = at > from && end > at ? wall * (end - at) / (at - from) : 0;
    fprintf(stderr, "\r  model time %.6g of %.6g  %.3g events/s  %s%.0f s left   ", at, end, rate,
            at > from ? "" : "~", left);
    if (final) fputc('\n', stderr);
    fflush(stderr);
    c->progress_shown = true;
}

static void on_event(void *arg, kr_sim_t *s, const kr_event_key_t *k, kr_event_type_t type)
{
    run_ctx_t *c = arg;
    if (c->logs) {
        /* (through kr__out_write: a checkpoint records the log's digest) */
        char small[512], *line = small;
        const char *fmt = "{\"time\": %llu, \"priority\": %d, \"source\": %u, \"sequence\": %llu, \"phase\": %u, "
                          "\"type\": \"%s\"}\n";
        const char *name = kr_model_event_type_name(c->model, type);
        int n = snprintf(small, sizeof small, fmt, (unsigned long long)k->time, k->priority, k->source,
                         (unsigned long long)k->sequence, k->phase, name);
        if (n >= (int)sizeof small && (line = malloc((size_t)n + 1)))
            snprintf(line, (size_t)n + 1, fmt, (unsigned long long)k->time, k->priority, k->source,
                     (unsigned long long)k->sequence, k->phase, name);
        kr__out_file_t *log = &c->logs[kr_sim_id(s)];
        if (n < 0 || !line) log->failed = true;
        else kr__out_write(log, line, (size_t)n);
        if (line != small) free(line);
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
    if (c->opt->progress) kr__run_show_progress(c, false);
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

kr_observer_t kr__run_observer(run_ctx_t *c, bool event_logs, bool trace, bool progress)
{
    return (kr_observer_t){ .arg = c, .on_event = event_logs || trace ? on_event : NULL,
                            .on_busy = trace || progress ? on_busy : NULL,
                            .on_blocked = trace ? on_blocked : NULL, .on_sync = trace ? on_sync : NULL };
}

/* The trace of rank k: a fragment FILE.rankK (events only, one a line)
 * that rank 0 joins afterwards. */
static void trace_fragment_path(const run_ctx_t *c, const char *path, int rank, char *out, size_t cap)
{
    (void)c;
    snprintf(out, cap, "%s.rank%d", path, rank);
}

/* The path of simulator i's event log in log_dir, and (a restart) the
 * byte of it the checkpoint was cut at. */
static uint64_t log_path(const run_ctx_t *c, const char *log_dir, uint32_t i, char *path, size_t cap)
{
    const char *name = kr_sim_name(kr_model_sim(c->model, i));
    snprintf(path, cap, "%s/%s.jsonl", log_dir, name);
    json_t *offset = c->log_offsets ? json_object_get(c->log_offsets, name) : NULL;
    return (uint64_t)json_integer_value(offset);
}

kr_status_t kr__run_check_event_logs(run_ctx_t *c, const char *log_dir)
{
    kr_model_t *m = c->model;
    if (!log_dir || !c->log_offsets) return KR_OK;
    /* (a checkpoint of a run without event logs: they begin at the cut, in
     * a folder made as a new run's is) */
    if (mkdir(log_dir, 0777) == 0) c->log_dir_made = strdup(log_dir);
    else if (errno != EEXIST)
        return kr__fail(KR_ERR_IO, "%s: cannot create the event-log folder: %s", log_dir, strerror(errno));
    c->log_kept_digests = calloc(kr_model_sim_count(m) + 1, sizeof *c->log_kept_digests);
    if (!c->log_kept_digests) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
        char path[4096];
        uint64_t at = log_path(c, log_dir, i, path, sizeof path);
        kr_status_t st = kr__out_check_resume(path, at);
        if (!st) st = kr__out_prefix_digest(path, at, &c->log_kept_digests[i]);
        if (st) return st;
        /* (a checkpoint written before logs had digests has none to compare) */
        const char *name = kr_sim_name(kr_model_sim(m, i));
        const char *hex = json_string_value(c->log_digests ? json_object_get(c->log_digests, name) : NULL);
        char have[17];
        snprintf(have, sizeof have, "%016llx", (unsigned long long)c->log_kept_digests[i]);
        if (hex && strcmp(hex, have))
            return kr__fail(KR_ERR_CORRUPT, "%s: its first %llu bytes are not the ones the checkpoint saw (digest "
                            "%s, expected %s): the log was changed after the checkpoint", path,
                            (unsigned long long)at, have, hex);
    }
    return KR_OK;
}

kr_status_t kr__run_open_event_logs(run_ctx_t *c, const char *log_dir)
{
    kr_model_t *m = c->model;
    if (!log_dir || c->log_offsets) return KR_OK;
    if (mkdir(log_dir, 0777) == 0) c->log_dir_made = strdup(log_dir);
    else if (errno != EEXIST)
        return kr__fail(KR_ERR_IO, "%s: cannot create the event-log folder: %s", log_dir, strerror(errno));
    c->logs = calloc(kr_model_sim_count(m), sizeof *c->logs);
    if (!c->logs) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
        char path[4096];
        log_path(c, log_dir, i, path, sizeof path);
        kr_status_t st = kr__out_open_unemptied(&c->logs[i], path);
        if (st) return st;
    }
    return KR_OK;
}

kr_status_t kr__run_begin_event_logs(run_ctx_t *c, const char *log_dir)
{
    kr_model_t *m = c->model;
    if (!log_dir) return KR_OK;
    bool resume = c->log_offsets != NULL; /* (a new run's are open already) */
    if (resume && !(c->logs = calloc(kr_model_sim_count(m), sizeof *c->logs)))
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        if (!kr_sim_is_local(kr_model_sim(m, i))) continue;
        if (!resume) {
            kr_status_t st = kr__out_empty(&c->logs[i]);
            if (st) return st;
            continue;
        }
        char path[4096];
        uint64_t at = log_path(c, log_dir, i, path, sizeof path);
        /* a restart goes on with the log where the checkpoint was cut,
         * checked on every rank first (kr__run_check_event_logs) */
        kr_status_t st = kr__out_resume(&c->logs[i], path, at);
        if (st) return st;
        c->logs[i].digest = c->log_kept_digests[i];
    }
    return KR_OK;
}

kr_status_t kr__run_open_trace(run_ctx_t *c, const char *trace_path)
{
    kr_model_t *m = c->model;
    if (!trace_path) return KR_OK;
    /* A fragment on every rank, one rank included: joining it keeps
     * only the flows that end (kr__run_join_trace). */
    char frag[4200];
    trace_fragment_path(c, trace_path, c->opt->rank, frag, sizeof frag);
    kr_status_t st = kr__out_open(&c->trace, frag);
    if (st) return st;
    c->tracing = true;
    c->first_trace_event = true;
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
    return KR_OK;
}

kr_status_t kr__run_close_outputs(run_ctx_t *c, bool ok)
{
    kr_status_t st = KR_OK, s2;
    /* Event logs stay under their .partial names until every rank has
     * agreed that the whole run, rank 0's stats and trace included, is
     * complete (kr__run_commit_outputs). */
    if (c->logs)
        for (uint32_t i = 0; i < kr_model_sim_count(c->model); i++)
            if ((s2 = kr__out_finish(&c->logs[i])) && ok && !st) st = s2;
    /* A trace fragment is not an output: rank 0 joins the fragments into
     * the trace and removes them. */
    if (c->tracing) {
        fputc('\n', c->trace.fp);
        if ((s2 = kr__out_close(&c->trace, ok)) && !st) st = s2;
        c->tracing = false;
    }
    return st;
}

kr_status_t kr__run_commit_outputs(run_ctx_t *c, bool ok)
{
    kr_status_t st = KR_OK, s2;
    if (c->logs) {
        for (uint32_t i = 0; i < kr_model_sim_count(c->model); i++)
            if ((s2 = kr__out_commit(&c->logs[i], ok)) && !st) st = s2;
        free(c->logs);
        c->logs = NULL;
    }
    /* a folder this run made, that its failure left empty, goes too (an
     * interrupted run keeps its logs there, and the folder stays) */
    if (c->log_dir_made && !ok) rmdir(c->log_dir_made);
    free(c->log_dir_made);
    c->log_dir_made = NULL;
    return st;
}

/* ---- joining the fragments ---- */

/* A sync flow's line: 's' (start) or 'f' (end) and its id; 0 for any
 * other line. The lines are the ones on_sync and on_event write. */
static char flow_of(const char *line, uint64_t *id)
{
    static const char prefix[] = "{\"name\": \"sync\", \"cat\": \"sync\", \"ph\": \"";
    if (strncmp(line, prefix, sizeof prefix - 1)) return 0;
    char ph = line[sizeof prefix - 1];
    const char *at = strstr(line, "\"id\": ");
    if ((ph != 's' && ph != 'f') || !at) return 0;
    *id = strtoull(at + 6, NULL, 10);
    return ph;
}

typedef struct ids {
    uint64_t *v;
    size_t n, cap;
} ids_t;

static bool ids_add(ids_t *s, uint64_t id)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        uint64_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return false;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = id;
    return true;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool ids_has(const ids_t *s, uint64_t id)
{
    return s->n && bsearch(&id, s->v, s->n, sizeof id, cmp_u64) != NULL;
}

/* Rank 0 joins the ranks' trace fragments into one file (and removes them;
 * on failure, only removes them). A flow is kept only when both its start
 * and its end are there: a sync-event still in flight at the end (due
 * after the end time, or cancelled) opened a flow that no event closes,
 * and viewers draw such a start as an arrow to nowhere. The first pass
 * finds the flows' ends, the second copies. */
kr_status_t kr__run_join_trace(run_ctx_t *c, const char *path, bool ok, kr__out_file_t *out)
{
    kr_status_t st = KR_OK;
    ids_t starts = { 0 }, ends = { 0 };
    char *line = NULL;
    size_t cap = 0;
    for (int r = 0; ok && !st && r < c->opt->ranks; r++) {
        char frag[4200];
        trace_fragment_path(c, path, r, frag, sizeof frag);
        FILE *in = fopen(frag, "r");
        if (!in) {
            st = kr__fail(KR_ERR_IO, "%s: the trace of rank %d is missing: %s", frag, r, strerror(errno));
            break;
        }
        uint64_t id;
        char ph;
        while (!st && getline(&line, &cap, in) > 0)
            if ((ph = flow_of(line, &id)) && !ids_add(ph == 's' ? &starts : &ends, id))
                st = kr__fail(KR_ERR_NOMEM, "out of memory joining the trace");
        fclose(in);
    }
    if (starts.n) qsort(starts.v, starts.n, sizeof *starts.v, cmp_u64);
    if (ends.n) qsort(ends.v, ends.n, sizeof *ends.v, cmp_u64);
    if (!st && ok) fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", out->fp);
    bool first = true;
    for (int r = 0; r < c->opt->ranks; r++) {
        char frag[4200];
        trace_fragment_path(c, path, r, frag, sizeof frag);
        FILE *in = ok && !st ? fopen(frag, "r") : NULL;
        if (ok && !st && !in)
            st = kr__fail(KR_ERR_IO, "%s: the trace of rank %d is missing: %s", frag, r, strerror(errno));
        ssize_t n;
        while (in && (n = getline(&line, &cap, in)) > 0) {
            /* one event a line, "," after all but the fragment's last */
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ',')) line[--n] = '\0';
            uint64_t id;
            char ph = flow_of(line, &id);
            if (!n || (ph == 's' && !ids_has(&ends, id)) || (ph == 'f' && !ids_has(&starts, id))) continue;
            if (!first) fputs(",\n", out->fp);
            first = false;
            fwrite(line, 1, (size_t)n, out->fp);
        }
        if (in) fclose(in);
        remove(frag);
    }
    free(line);
    free(starts.v);
    free(ends.v);
    if (!st && ok) fputs("\n]}\n", out->fp);
    kr_status_t finished = kr__out_finish(out);
    if (st) out->failed = true;
    return st ? st : ok ? finished : KR_OK;
}

/* Every rank learns whether any failed; rank 0 gets the first failing
 * rank's message. Returns the agreed status (this rank's own when it
 * failed). */
