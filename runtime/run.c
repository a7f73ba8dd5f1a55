/* A run from a model file: plan and build on every rank, agree on the
 * outcome, run, and hand the results to the reports (report.c) and the
 * outputs (observer.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "runtime/run_private.h"
#include "net/collectives.h"
#include "net/transport_mpi.h"
#include "schedulers/model_private.h"

static kr_status_t agree(run_ctx_t *c, kr_status_t st)
{
    if (!kr__run_distributed(c)) return st;
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
    kr_observer_t obs = kr__run_observer(&c, log_dir != NULL, trace_path != NULL, opt->progress);
    c.model = kr__model_file_build_on(f, &obs, opt->rank, ranks > 1 ? rank_of : NULL);
    st = c.model ? KR_OK : kr_last_status();
    /* A kind's params are checked only where the simulator is built. */
    st = agree(&c, st);
    /* Every rank holds the same model, or none runs (model_digest.c). */
    if (!st) st = kr__model_digest_check(f, c.model, ranks, opt->comm, &c.digest);
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
    st = kr__run_open_outputs(&c, log_dir, trace_path);
    if (!st && stats_path && opt->rank == 0) st = kr__out_open(&stats_out, stats_path);
    if (!st && series_path && opt->rank == 0) st = kr__out_open(&series_out, series_path);
    st = agree(&c, st);
    /* One start for every rank, so the ranks' traces share a time base. */
    if (kr__run_distributed(&c)) MPI_Barrier(opt->comm);
    c.t0 = c.last_progress = kr__monotonic_ns();
    if (!st) st = kr_model_run(c.model);
    double wall = (double)(kr__monotonic_ns() - c.t0) * 1e-9;
    if (c.progress_shown) kr__run_show_progress(&c, true);
    st = agree(&c, st);
    char failure[1024] = "";
    if (st) snprintf(failure, sizeof failure, "%s", kr_last_error());
    kr_status_t closed = kr__run_close_outputs(&c, !st);
    if (!st) st = closed;
    st = agree(&c, st);
    /* Results: every rank's part, merged on rank 0. */
    json_t *stats = NULL;
    if (!st) {
        json_t *part = kr__run_local_stats(&c, wall);
        if (kr__run_distributed(&c)) {
            char *text = json_dumps(part, JSON_COMPACT);
            char **all = NULL;
            st = kr__net_gather_strings(opt->comm, text ? text : "{}", &all);
            free(text);
            if (!st && opt->rank == 0) {
                json_t **parts = calloc((size_t)ranks, sizeof *parts);
                for (int r = 0; parts && r < ranks; r++) parts[r] = json_loads(all[r], 0, NULL);
                stats = parts ? kr__run_merge_stats(&c, parts, ranks) : NULL;
                for (int r = 0; parts && r < ranks; r++) json_decref(parts[r]);
                free(parts);
            }
            for (int r = 0; all && r < ranks; r++) free(all[r]);
            free(all);
        } else {
            stats = kr__run_merge_stats(&c, &part, 1);
        }
        json_decref(part);
        if (!st && opt->rank == 0 && !stats) st = kr__fail(KR_ERR_NOMEM, "out of memory building the stats");
    }
    if (opt->rank == 0) {
        if (trace_path) {
            kr_status_t joined = kr__run_join_trace(&c, trace_path, !st);
            if (!st) st = joined;
        }
        if (!st && stats_out.fp && json_dumpf(stats, stats_out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))
            st = kr__fail(KR_ERR_IO, "%s: write failed", stats_out.partial);
        if (stats_out.fp) fputc('\n', stats_out.fp);
        kr_status_t closed_stats = kr__out_close(&stats_out, !st);
        if (!st) st = closed_stats;
        if (!st && series_out.fp) kr__run_write_series(series_out.fp, c.steps);
        kr_status_t closed_series = kr__out_close(&series_out, !st);
        if (!st) st = closed_series;
        if (!st && !opt->quiet && opt->summary) kr__run_print_summary(&c, stats);
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
