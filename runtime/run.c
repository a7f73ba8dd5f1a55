/* A run from a model file: plan and build on every rank, agree on the
 * outcome, run, and hand the results to the reports (report.c) and the
 * outputs (observer.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "runtime/checkpoint_store.h"
#include "runtime/run_private.h"
#include "runtime/sweep.h"
#include "net/collectives.h"
#include "net/transport_mpi.h"
#include "schedulers/model_private.h"

/* The signal that interrupted the run, as the ranks agreed on it (0: none
 * agreed; a lone process uses its own). */
static int agreed_signal;

void kr__run_note_signal(int sig)
{
    if (sig) agreed_signal = sig;
}

int kr__run_exit_status(kr_status_t st)
{
    if ((int)st == (int)KR__STOPPED_CHECKPOINTED) return KR__EXIT_CHECKPOINTED;
    switch (st) {
    case KR_OK: return KR__EXIT_DONE;
    case KR_ERR_INVALID_ARG:
    case KR_ERR_IO:
    case KR_ERR_CORRUPT:
    case KR_ERR_EXISTS:
    case KR_ERR_MISMATCH: return KR__EXIT_INPUT;
    case KR_ERR_DEADLOCK: return KR__EXIT_DEADLOCK;
    case KR_ERR_INTERRUPTED: {
        int sig = agreed_signal ? agreed_signal : kr__signal_caught;
        return sig == SIGINT ? KR__EXIT_SIGINT : KR__EXIT_SIGTERM;
    }
    default: return KR__EXIT_FAILED;
    }
}

kr_status_t kr__run_as_run_failure(kr_status_t st)
{
    /* (the kind's own status would read as bad input: a refused
     * sync-event is KR_ERR_INVALID_ARG; the message keeps its words.
     * Corrupt data read while running, such as an emulation's replay log
     * that does not fit the run, stays bad input.) */
    return st != KR_ERR_CORRUPT && kr__run_exit_status(st) == KR__EXIT_INPUT ? KR_ERR_STATE : st;
}

kr_status_t kr__run_agree(MPI_Comm comm, int ranks, int rank, kr_status_t st, bool own)
{
    if (ranks <= 1) return st;
    int mine[3] = { (int)st, st && own, st ? (int)kr__signal_caught : 0 };
    int *all = malloc((size_t)ranks * sizeof mine);
    if (!all) {
        /* Cannot agree without memory: take the whole job down rather
         * than leave ranks waiting in the next collective. */
        MPI_Abort(comm, KR__EXIT_FAILED);
        return KR_ERR_NOMEM;
    }
    MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, comm);
    /* the first rank whose failure is its own; else the first that failed */
    int first = -1;
    for (int pass = 0; pass < 2 && first < 0; pass++)
        for (int r = 0; r < ranks && first < 0; r++)
            if (all[3 * r] && (pass || all[3 * r + 1])) first = r;
    kr_status_t agreed = first >= 0 ? (kr_status_t)all[3 * first] : KR_OK;
    if (agreed == KR_ERR_INTERRUPTED && all[3 * first + 2]) agreed_signal = all[3 * first + 2];
    free(all);
    if (!agreed) return KR_OK;
    char **msgs = NULL;
    kr__net_gather_strings(comm, st ? kr_last_error() : "", &msgs);
    if (rank == 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", msgs && msgs[first] && msgs[first][0] ? msgs[first] : "a rank failed");
        for (int r = 0; msgs && r < ranks; r++) free(msgs[r]);
        free(msgs);
        return kr__fail(agreed, "%s", msg);
    }
    if (st) return kr__fail(agreed, "%s", kr_last_error()); /* keeps its own message */
    return kr__fail(agreed, "rank %d failed", first);
}

/* The environment's settings a run reads (docs/cli.md, "Environment"; the
 * transport reads KAIROS_WAIT, run_file KAIROS_CHAOS_SEED and, armed
 * only once the setup is done, KAIROS_FAIL_ALLOC): a value that means
 * nothing is bad input, not quietly the default. */
static kr_status_t check_environment(void)
{
    const char *w = getenv("KAIROS_WAIT");
    if (w && w[0] && strcmp(w, "spin") && strcmp(w, "yield") && strcmp(w, "sleep"))
        return kr__fail(KR_ERR_INVALID_ARG, "KAIROS_WAIT: expected spin, yield or sleep, found \"%.64s\"", w);
    const char *chaos = getenv("KAIROS_CHAOS_SEED");
    if (chaos && chaos[0]) {
        errno = 0;
        (void)strtoull(chaos, NULL, 10);
        if (strspn(chaos, "0123456789") != strlen(chaos) || errno == ERANGE)
            return kr__fail(KR_ERR_INVALID_ARG, "KAIROS_CHAOS_SEED: expected a whole number from 0 to 2^64 - 1, "
                            "found \"%.64s\"", chaos);
    }
    return kr__fault_check();
}

static kr_status_t agree(run_ctx_t *c, kr_status_t st)
{
    if (!kr__run_distributed(c)) return st;
    /* a failure relayed by a peer's abort message is not this rank's own */
    int origin = c->mpi && st ? kr__transport_mpi_failed_rank(c->mpi) : -1;
    return kr__run_agree(c->opt->comm, c->opt->ranks, c->opt->rank, st, origin < 0 || origin == c->opt->rank);
}

/* Runs the model to its end, stopping at every checkpoint's cut to write
 * it (checkpoint.c) and at every safe point (safe_point.c), where a signal
 * or the wall clock may ask for a checkpoint and a stop; a restart's first
 * cut comes after its own. */
static kr_status_t run_model(run_ctx_t *c)
{
    for (kr_time_t done = c->restored_at;;) {
        kr_time_t planned = c->ckpt.enabled ? kr__run_next_cut(c, done) : 0;
        kr_time_t safe = kr__run_next_safe_point(c, done);
        kr_time_t cut = planned && (!safe || planned <= safe) ? planned : safe;
        bool at_cut = false;
        kr_status_t st = KR_OK;
        /* Frames up to the cut (frames.c): each at a cut of its own, where
         * nothing but the frame happens. */
        for (kr_time_t frame; !at_cut && (frame = kr__run_frames_next_cut(c)) && (!cut || frame <= cut);) {
            if ((st = kr__coord_run_until(c->model, frame, &at_cut)) || !at_cut) return st;
            if ((st = kr__run_frames_take(c))) return st;
            at_cut = frame == cut;
        }
        if (!at_cut && ((st = kr__coord_run_until(c->model, cut, &at_cut)) || !at_cut)) return st;
        bool checkpoint = false, stop = false;
        if ((st = kr__run_safe_point(c, &checkpoint, &stop))) return st;
        /* A replication (or a sweep's) writes no checkpoint of its own: asked
         * to stop, it is abandoned, and runs again after a restart
         * (replications.c keeps the finished ones). */
        if (c->opt->stats_json && stop)
            return kr__fail(KR__STOPPED_CHECKPOINTED, "%s: the replication was abandoned", c->safe.why);
        if (c->opt->stats_json) checkpoint = false;
        if ((cut == planned || checkpoint) && (st = kr__run_checkpoint(c, cut))) {
            /* A SIGUSR1's checkpoint that cannot be written (a folder
             * nobody named, which is then not checked before the run, is
             * a file) does not end the run: it goes on, said once, and a
             * second SIGUSR1 asks again. A checkpoint the run planned, or
             * the wall clock's, or SIGTERM's, still ends it. */
            if (cut == planned || !c->safe.by_usr1 || st == KR_ERR_NOMEM) return st;
            if (c->opt->rank == 0)
                fprintf(stderr, "kairos: warning: SIGUSR1: no checkpoint written (%s); the run goes on\n",
                        kr_last_error());
            kr__checkpoint_asked = 0;
            stop = false;
        }
        kr__run_safe_point_progress(c, cut);
        if (stop)
            return kr__fail(KR__STOPPED_CHECKPOINTED, "%s: checkpointed at model time %s (%s/%s), not finished; go "
                            "on with --restart %s", c->safe.why, c->ckpt.last_name + strlen("ckpt-"), c->ckpt.dir,
                            c->ckpt.last_name, c->ckpt.dir);
        done = cut;
    }
}

static void finish_ctx(run_ctx_t *c)
{
    json_decref(c->steps);
    json_decref(c->log_offsets);
    json_decref(c->log_digests);
    free(c->log_kept_digests);
    kr__run_frames_free(c);
    free(c->ckpt.at);
    free(c->ckpt.restored_from);
    if (c->ckpt.locked) close(c->ckpt.lock_fd);
    json_decref(c->ckpt.identity_items);
    json_decref(c->ckpt.identity_values);
    kr_model_destroy(c->model);
}

size_t kr__run_idle_ranks(const kr__model_file_t *f, int ranks, const int *rank_of, char *list, size_t cap)
{
    list[0] = '\0';
    bool *busy = calloc((size_t)ranks, sizeof *busy);
    if (!busy) return 0;
    for (size_t i = 0; i < f->sim_count; i++) busy[rank_of[i]] = true;
    size_t len = 0, idle = 0;
    for (int r = 0; r < ranks; r++) {
        if (busy[r]) continue;
        int last = r;
        while (last + 1 < ranks && !busy[last + 1]) last++;
        idle += (size_t)(last - r + 1);
        if (len + 40 < cap)
            len += (size_t)snprintf(list + len, cap - len, last > r ? "%s%d-%d" : "%s%d", len ? ", " : "", r, last);
        else if (!strstr(list, ", ..."))
            len += (size_t)snprintf(list + len, cap - len, ", ...");
        r = last;
    }
    free(busy);
    return idle;
}

/* One warning naming the ranks the plan leaves without a simulator
 * (more ranks than simulators, pins, zero-promise groups kept together),
 * as ranges: "ranks 0-1, 5 idle". */
static void warn_idle_ranks(const kr__model_file_t *f, int ranks, const int *rank_of)
{
    char list[256];
    size_t idle = kr__run_idle_ranks(f, ranks, rank_of, list, sizeof list);
    if (idle)
        fprintf(stderr, "kairos: warning: %d ranks for %zu simulator%s: rank%s %s idle%s\n", ranks, f->sim_count,
                f->sim_count == 1 ? "" : "s", idle == 1 ? "" : "s", list, idle == 1 ? "s" : "");
}

/* A sync-event sent along a dependency whose promise is past the end
 * time, even at time 0, arrives after the end: the run goes on as if it
 * were not there (a promise of 1e9 written for "never", or in the wrong
 * unit, was taken without a word). */
void kr__run_warn_late_promises(const kr__model_file_t *f)
{
    size_t late = 0, first = 0;
    for (size_t i = 0; i < f->dep_count; i++)
        if (f->deps[i].promise > f->end_time && late++ == 0) first = i;
    if (!late) return;
    const kr__dep_entry_t *d = &f->deps[first];
    char promise[40], end[40];
    kr__sweep_format_double(promise, sizeof promise, kr_time_to_units(d->promise, f->precision));
    kr__sweep_format_double(end, sizeof end, kr_time_to_units(f->end_time, f->precision));
    fprintf(stderr, "kairos: warning: %zu dependenc%s with a promise past the end time %s (the first: '%s' -> '%s', "
            "promise %s): nothing sent along %s arrives before the end\n", late, late == 1 ? "y" : "ies", end,
            f->sims[d->from].name, f->sims[d->to].name, promise, late == 1 ? "it" : "them");
}

kr_status_t kr__run_file(kr__model_file_t *f, const kr__run_options_t *opt)
{
    run_ctx_t c = { .file = f, .opt = opt };
    int ranks = opt->ranks > 0 ? opt->ranks : 1;
    /* The same checks of the rank mapping as `kairos validate --ranks N`
     * (every rank computes the same plan from the same file). */
    int *rank_of = calloc(f->sim_count ? f->sim_count : 1, sizeof *rank_of);
    kr_status_t st = rank_of ? kr__model_file_plan(f, ranks, rank_of) : kr__fail(KR_ERR_NOMEM, "out of memory");
    /* Planning can run out of memory on one rank only: every rank must
     * hear it before the first collective of the build. */
    st = agree(&c, st);
    if (st) {
        free(rank_of);
        return st;
    }
    if (opt->rank == 0 && !opt->setup_warned) {
        if (ranks > 1) warn_idle_ranks(f, ranks, rank_of);
        kr__run_warn_late_promises(f);
    }
    const char *stats_path = opt->stats_path ? opt->stats_path : f->out_stats;
    const char *log_dir = opt->event_log_dir ? opt->event_log_dir : f->out_event_log;
    const char *trace_path = opt->trace_path ? opt->trace_path : f->out_trace;
    const char *series_path = opt->series_path ? opt->series_path : f->out_series;
    if ((st = agree(&c, check_environment()))) {
        free(rank_of);
        return st;
    }
    kr__run_files_t files = {
        .out = { stats_path, trace_path, series_path },
        .out_what = { opt->stats_path ? "the stats (-o)" : "the stats (outputs.stats)",
                      opt->trace_path ? "the trace (--trace)" : "the trace (outputs.trace)",
                      opt->series_path ? "the series (--series)" : "the series (outputs.series)" },
        .event_log_dir = log_dir, .event_log_option = opt->event_log_dir ? "--event-log" : "outputs.event_log",
        .frames_dir = opt->frames_dir, .ranks = ranks,
    };
    /* (every rank looks at the files: a rank that sees them otherwise, or
     * runs out of memory, must not leave the others waiting) */
    if ((st = agree(&c, kr__run_files_apart(f, &files)))) {
        free(rank_of);
        return st;
    }
    /* Hooks only for the outputs that need them: a hook costs a call per
     * event (or per span) even when it does nothing. */
    kr_observer_t obs = kr__run_observer(&c, log_dir != NULL, trace_path != NULL, opt->progress);
    c.model = kr__model_file_build_on(f, &obs, opt->rank, ranks > 1 ? rank_of : NULL);
    st = c.model ? KR_OK : kr_last_status();
    /* A kind's params are checked only where the simulator is built. */
    st = agree(&c, st);
    /* Every rank holds the same model, or none runs (model_digest.c). */
    if (!st) st = kr__model_digest_check(f, c.model, ranks, opt->comm, &c.digest);
    /* (an emulation's log names the model; a replay checks it) */
    if (!st) st = agree(&c, kr__model_identify(c.model, c.digest.identity, c.digest.identity_file_order));
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
    if (!st) st = kr__run_checkpoint_plan(&c);
    /* A restart: every local simulator takes its state from the checkpoint
     * instead of its setup (checkpoint.c); every rank agrees first. */
    if (!st && opt->restart) st = agree(&c, kr__run_restore(&c, opt->restart));
    if (!st) st = kr__run_frames_plan(&c);
    if (st) {
        finish_ctx(&c);
        return st;
    }
    kr__out_file_t stats_out = { 0 }, series_out = { 0 }, trace_out = { 0 };
    st = kr__run_check_event_logs(&c, log_dir);
    if (!st) st = kr__run_checkpoint_prepare(&c);
    if (!st) st = kr__run_frames_open(&c);
    if (!st && stats_path && opt->rank == 0) st = kr__out_open(&stats_out, stats_path);
    if (!st && series_path && opt->rank == 0) st = kr__out_open(&series_out, series_path);
    if (!st && trace_path && opt->rank == 0) st = kr__out_open(&trace_out, trace_path);
    /* Starting (every behavior's on_start) and the emulation simulators'
     * files (a log, a named pipe) still belong to the setup: a failure
     * there is the model's, found before anything ran. */
    if (!st) st = kr_model_start(c.model);
    for (uint32_t i = 0; !st && i < c.model->sim_count; i++)
        if (c.model->sims[i]->emu) st = kr__emulation_prepare(c.model->sims[i]);
    if (!st) f->sync_ran = kr_model_sync(c.model);
    if (!st && c.restored_stop) st = kr__stop_learn(c.model, c.stop_by, c.stop_at);
    /* The trace and the event logs last, once every rank has found
     * nothing wrong; of them, first what may still be refused (new files,
     * under names a refused run removes, or leaves as they were), and once
     * every rank has opened those, what changes files already there
     * (emptied, or cut back to the checkpoint, and checked before): a
     * refused run leaves them, and an old recording's manifest, as they
     * were. */
    st = agree(&c, st);
    if (!st) st = kr__run_open_trace(&c, trace_path);
    if (!st) st = kr__run_open_event_logs(&c, log_dir);
    st = agree(&c, st);
    if (!st) st = kr__run_frames_continue(&c);
    if (!st) st = kr__run_begin_event_logs(&c, log_dir);
    if (!st) st = kr__fault_arm();
    st = agree(&c, st);
    /* One start for every rank, so the ranks' traces share a time base. */
    if (kr__run_distributed(&c)) MPI_Barrier(opt->comm);
    c.t0 = c.last_progress = kr__monotonic_ns();
    /* Whatever fails from here on is the run's (docs/cli.md, "Exit
     * status"), whatever status it carries; a deadlock and an interrupt
     * keep theirs. */
    if (!st && ((st = run_model(&c)) || (st = kr__run_frames_take_last(&c))))
        st = kr__fail(kr__run_as_run_failure(st), "%s", kr_last_error());
    kr__fault_disarm();
    double wall = (double)(kr__monotonic_ns() - c.t0) * 1e-9;
    if (c.progress_shown) kr__run_show_progress(&c, true);
    st = agree(&c, st);
    char failure[1024] = "";
    if (st) snprintf(failure, sizeof failure, "%s", kr_last_error());
    kr_status_t closed = kr__run_close_outputs(&c, !st);
    if (!st) st = closed;
    closed = kr__run_frames_close(&c);
    if (!st) st = closed;
    st = agree(&c, st);
    if (c.frames.enabled) {
        kr_status_t gathered = kr__run_frames_gather(&c, !st);
        st = agree(&c, st ? st : gathered);
    }
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
        json_t *ck = stats ? kr__run_checkpoint_stats(&c) : NULL;
        if (ck) json_object_set_new(stats, "checkpoints", ck);
    }
    /* Rank 0 writes the trace, the stats and the series, all under their
     * .partial names; then every rank agrees, and only a run that every
     * rank finished with every output complete renames any of them into
     * place (event logs on their ranks, the rest on rank 0). */
    if (opt->rank == 0) {
        if (trace_path) {
            kr_status_t joined = kr__run_join_trace(&c, trace_path, !st, &trace_out);
            if (!st) st = joined;
        }
        if (!st && stats_out.fp && kr__json_dump_to(stats, stats_out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))
            st = kr__fail(KR_ERR_IO, "%s: write failed", stats_out.partial);
        if (stats_out.fp) fputc('\n', stats_out.fp);
        if (!st && series_out.fp) kr__run_write_series(series_out.fp, c.steps);
        if (!st) st = kr__run_frames_write_manifest(&c);
        kr_status_t finished = kr__out_finish(&stats_out);
        if (!st) st = finished;
        finished = kr__out_finish(&series_out);
        if (!st) st = finished;
    }
    st = agree(&c, st);
    kr_status_t committed = kr__run_commit_outputs(&c, !st), framed = kr__run_frames_commit(&c, !st);
    if (!committed) committed = framed;
    if (opt->rank == 0) {
        kr_status_t s2 = kr__out_commit(&trace_out, !st);
        if (!committed) committed = s2;
        s2 = kr__out_commit(&stats_out, !st);
        if (!committed) committed = s2;
        s2 = kr__out_commit(&series_out, !st);
        if (!committed) committed = s2;
    }
    /* A rename that fails after the agreement fails the run on every rank
     * (what was renamed elsewhere stays: docs/stats.md). */
    if (!st) st = agree(&c, committed);
    /* The frames' manifest last, once every rank's frame files are in
     * place: a recording with a manifest is complete. */
    if (c.frames.enabled) st = agree(&c, st ? (kr__run_frames_commit_manifest(&c, false), st)
                                            : kr__run_frames_commit_manifest(&c, true));
    /* A frames folder this run made goes again if the run failed and left
     * it empty, and a checkpoint folder it made if it wrote nothing there
     * (after the agreement: every rank has removed its files). */
    if (st && c.frames.dir_made) rmdir(opt->frames_dir);
    kr__ckpt_dir_unmake(c.ckpt.dir, c.ckpt.dir_made);
    if (opt->rank == 0) {
        if (!st && !opt->quiet && opt->summary) kr__run_print_summary(&c, stats);
        if (!st && opt->stats_json) {
            *opt->stats_json = stats;
            stats = NULL;
        }
    }
    json_decref(stats);
    finish_ctx(&c);
    if (failure[0]) kr__fail(st, "%s", failure);
    return st;
}
