/* Running a model file and writing what a run produces: the summary, the
 * stats JSON, per-simulator event logs, the Chrome trace and the progress
 * line (run.c drives the run, report.c and observer.c write, output_file.c
 * keeps unfinished files under .partial names). Not public API. */
#ifndef KAIROS_RUNTIME_RUN_H
#define KAIROS_RUNTIME_RUN_H

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include "runtime/model_file.h"

#define KAIROS_VERSION_STRING "0.1.0"

/* A long job's wall-clock settings (docs/cluster.md), in seconds, 0 for
 * none; shared by a run, replications and sweeps. */
typedef struct kr__wall_limits {
    double checkpoint_wall;      /* --checkpoint-wall: a checkpoint every so often */
    double stop_before_wall;     /* --stop-before-wall: checkpoint and stop before the job has gone that long */
    double progress_every;       /* --progress: a progress line every so often when stderr is no terminal */
    uint64_t started_ns;         /* when the process began (the wall clock's reference; 0: at the run's start) */
    bool on_term;                /* --checkpoint-on-term: SIGTERM checkpoints (its folder is checked first) */
} kr__wall_limits_t;

/* A signal or the wall clock may ask this run for a checkpoint: its folder
 * is then made and checked before the run (checkpoint.c, replications.c). */
static inline bool kr__wall_may_checkpoint(const kr__wall_limits_t *w)
{
    return w->checkpoint_wall > 0 || w->stop_before_wall > 0 || w->on_term;
}

typedef struct kr__run_options {
    const char *stats_path;      /* NULL: the file's outputs.stats, else none */
    const char *event_log_dir;   /* NULL: the file's outputs.event_log, else none */
    const char *trace_path;      /* NULL: the file's outputs.trace, else none */
    const char *series_path;     /* NULL: the file's outputs.series, else none */
    const char *frames_dir;      /* --frames: record frames there (docs/viewer.md); NULL: none */
    double frame_every;          /* --frame-every, model units; 0: the default */
    bool quiet;                  /* no summary, no progress */
    bool progress;               /* a progress line on stderr */
    int ranks;                   /* MPI ranks of the run: above 1, simulators are distributed */
    int rank;                    /* this rank */
    MPI_Comm comm;               /* the run's communicator when ranks > 1 */
    const char *binding;         /* where this rank runs (cores), for the stats; may be NULL */
    FILE *summary;               /* where the human summary goes (stdout) */
    /* Replications (runtime/replications.c) run many times on a group's
     * communicator and pool the results themselves: */
    json_t **stats_json;         /* not NULL: rank 0 gets the merged stats here (the caller's to decref) */
    bool setup_warned;           /* the caller has given the setup's warnings (idle ranks, promises past the end) once already */
    kr__ckpt_plan_t ckpt;        /* --checkpoint-*: over the file's outputs.checkpoint (keep -1: not given) */
    const char *restart;         /* --restart: a checkpoint, or a folder of them */
    kr__wall_limits_t wall;      /* a long job's (a replication takes only stop_before_wall and started_ns) */
} kr__run_options_t;

/* A file written as NAME.partial and renamed to NAME once complete, so
 * that a failed run never leaves a file that looks finished. NAME a
 * symbolic link: the file it names is written that way (the link stays).
 * NAME something other than a file (/dev/null, a FIFO, a terminal): written
 * directly, which a rename over it would replace (as root, /dev/null). */
typedef struct kr__out_file {
    char *final, *partial;       /* direct: partial is the final name too */
    FILE *fp;
    bool failed;                 /* a write or the close failed: never renamed */
    bool keep_partial;           /* a failed run keeps it under its .partial name: a checkpoint continues it */
    bool direct;                 /* not a regular file: written in place, never renamed or removed */
    bool unemptied;              /* kr__out_open_unemptied found bytes there: kr__out_empty empties it */
    /* FNV-1a (base/hmap.h) of the bytes written through kr__out_write; a
     * caller going on with a file (kr__out_resume) sets it to its kept
     * start's (kr__out_prefix_digest). Event logs: a checkpoint records
     * it, and a restart checks the start it keeps against it. */
    uint64_t digest;
} kr__out_file_t;

/* Opens PATH.partial for writing (or PATH itself, see above); a directory
 * is refused. */
kr_status_t kr__out_open(kr__out_file_t *o, const char *path);
/* The same, but a .partial file already there (an unfinished run's, which
 * a restart may go on with) keeps its bytes, and is kept as it was by a
 * commit that does not keep the output, until kr__out_empty empties it:
 * what a run opens in its setup and writes once nothing can refuse it. */
kr_status_t kr__out_open_unemptied(kr__out_file_t *o, const char *path);
kr_status_t kr__out_empty(kr__out_file_t *o);
/* Opens PATH.partial to go on writing at byte `offset` (a restart from a
 * checkpoint): the file a run left there (PATH.partial, or PATH when it
 * finished), cut to `offset`. KR_ERR_CORRUPT if neither exists or it is
 * shorter than that (kr__out_check_resume). */
kr_status_t kr__out_resume(kr__out_file_t *o, const char *path, uint64_t offset);
/* What kr__out_resume would refuse, found without touching anything: a
 * restart checks every file first, so that one it refuses leaves all of
 * them as they were. */
kr_status_t kr__out_check_resume(const char *path, uint64_t offset);
/* The digest (see kr__out_file_t) of the first `offset` bytes of the file
 * kr__out_resume would go on with; KR_ERR_CORRUPT when it is shorter. */
kr_status_t kr__out_prefix_digest(const char *path, uint64_t offset, uint64_t *digest);
/* Writes n bytes and adds them to the digest. */
void kr__out_write(kr__out_file_t *o, const void *data, size_t n);
/* json_dumpf's bytes, gathered in blocks before they reach fp: json_dumpf
 * hands fwrite one token at a time (over three million calls for the
 * stats of 16,000 simulators, a fifth of that run's instructions). 0, or
 * -1 when something could not be written (or there was no memory). */
int kr__json_dump_to(const json_t *j, FILE *fp, size_t flags);
/* Closes; renames into place when keep, removes otherwise. */
kr_status_t kr__out_close(kr__out_file_t *o, bool keep);
/* The same in two steps, for outputs of several ranks that must all be
 * complete before any is renamed: finish closes the file and reports a
 * failed write (the file stays under its .partial name); commit then
 * renames it into place when keep (and it was written whole) or removes
 * it, and frees. */
kr_status_t kr__out_finish(kr__out_file_t *o);
kr_status_t kr__out_commit(kr__out_file_t *o, bool keep);
/* A name as one file: the file's device and inode (so that links, hard
 * ones too, and other spellings are one), or, when it does not exist yet,
 * the real path of its deepest folder that does, then the rest of the
 * name without "." parts and with ".." taking a part back; NULL for a name
 * that is no regular file to be (a device; a FIFO unless `fifos`: an
 * output writes one in place, as often as asked), or on no memory. */
char *kr__out_file_identity(const char *path, bool fifos);
/* The files a run writes: up to three written whole (the stats, the
 * trace, the series; a sweep's table), each with what it is, as "the
 * stats (-o)"; an event log per simulator in a folder, given by an option
 * ("--event-log", or "outputs.event_log"); frames in a folder (a file per
 * simulator, the manifest, the series). NULL: none. */
typedef struct kr__run_files {
    const char *out[3], *out_what[3];
    const char *event_log_dir, *event_log_option;
    const char *frames_dir;
    int ranks;                  /* the trace's fragments, out[1].rankK (observer.c) */
} kr__run_files_t;
/* Refuses (KR_ERR_IO, naming both) a file the run writes that is the
 * model file, a file it reads or another file it writes (run_files.c).
 * Before the run, so that nothing is written over and no run wasted. */
kr_status_t kr__run_files_apart(const kr__model_file_t *f, const kr__run_files_t *run);

/* A run that stopped at a safe point after writing a checkpoint, not
 * finished (docs/cluster.md): not a kr_status_t of the API, only what
 * kr__run_file and the replications return for it (exit status 4). */
#define KR__STOPPED_CHECKPOINTED ((kr_status_t)64)

/* What a run came to, as the kairos command's exit status (docs/cli.md,
 * "Exit status"). */
enum {
    KR__EXIT_DONE = 0,
    KR__EXIT_FAILED = 1,        /* the run failed: a kind's kr_sim_fail, a refused sync-event, out of memory */
    KR__EXIT_INPUT = 2,         /* bad input: command line, model file, params, a setup error */
    KR__EXIT_DEADLOCK = 3,
    KR__EXIT_CHECKPOINTED = 4,  /* checkpointed and not finished: a signal or --stop-before-wall stopped it */
    KR__EXIT_SIGINT = 130,
    KR__EXIT_SIGTERM = 143
};

/* The exit status for a status as kr__run_file (and the replications and
 * sweeps built on it) return it: failures found before the run keep the
 * status of their cause, a failure inside the run is made a run failure
 * (kr__run_as_run_failure). KR_ERR_INTERRUPTED gives 130 or 143 by the
 * signal the ranks agreed on. */
int kr__run_exit_status(kr_status_t st);

/* The ranks of `ranks` that the plan rank_of (kr__model_file_plan) leaves
 * without a simulator, as ranges in `list` ("0-1, 5"); returns how many. */
size_t kr__run_idle_ranks(const kr__model_file_t *f, int ranks, const int *rank_of, char *list, size_t cap);
/* One warning on stderr when dependencies promise more than the end time
 * (nothing sent along them arrives before the end); nothing otherwise. */
void kr__run_warn_late_promises(const kr__model_file_t *f);
/* Records the signal the ranks agreed on (replications and sweeps, which
 * agree on their own; kr__run_agree does it for a run). */
void kr__run_note_signal(int sig);
/* A failure found while running: st itself, unless it would read as bad
 * input (a kind passing on a refused sync-event's KR_ERR_INVALID_ARG), then
 * KR_ERR_STATE; KR_ERR_CORRUPT (data read while running that does not fit,
 * such as a replay log) stays bad input. */
kr_status_t kr__run_as_run_failure(kr_status_t st);

/* Every rank of comm tells whether it failed (st), and whether the failure
 * is its own (own) rather than relayed from a peer; the first rank with a
 * failure of its own, else the first that failed, speaks for all: its
 * status is returned on every rank and its message kept on rank 0 (printed
 * once). Collective; alone (ranks <= 1), returns st. */
kr_status_t kr__run_agree(MPI_Comm comm, int ranks, int rank, kr_status_t st, bool own);

/* Builds, runs and reports. Output files are written under temporary names
 * and renamed only when the run succeeded, so a failed run never leaves a
 * file that looks finished. Returns the run's status, the same on every
 * rank (input errors KR_ERR_INVALID_ARG/KR_ERR_IO, run errors otherwise;
 * kr__run_exit_status). */
kr_status_t kr__run_file(kr__model_file_t *f, const kr__run_options_t *opt);

/* The run's checksum: every simulator's event digest and its kind's digest
 * of its final state, combined in simulator-id order. */
uint64_t kr__run_checksum(const kr__model_file_t *f, kr_model_t *m);

#endif
