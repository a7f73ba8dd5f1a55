/* What the files of runtime/ that make up a run share: the run's context,
 * the observer that writes event logs, the trace and the progress line
 * (observer.c), and the stats, series and summary (report.c). run.c drives
 * the run. Not public API. */
#ifndef KAIROS_RUNTIME_RUN_PRIVATE_H
#define KAIROS_RUNTIME_RUN_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "runtime/model_digest.h"
#include "runtime/run.h"
#include "net/transport.h"

/* When this run writes checkpoints (checkpoint.c), in ticks. */
typedef struct kr__ckpt_schedule {
    bool enabled;
    kr_time_t *at;
    size_t at_count;
    kr_time_t every;            /* 0: none */
    const char *dir;
    unsigned dir_made;          /* rank 0 made it and this many folders above: removed at the end if left empty */
    bool locked;                /* rank 0 holds the folder's lock through lock_fd (kr__ckpt_dir_prepare) */
    bool checked;               /* rank 0 found no other model's checkpoints in the folder (foreign_checkpoints) */
    int lock_fd;
    int keep, level;
    uint64_t written;           /* checkpoints written by this run */
    uint64_t write_ns, bytes, raw_bytes; /* rank 0: their time (each from the cut to every rank's agreement), sizes */
    uint64_t restore_ns;        /* this rank's restart: reading and loading its simulators */
    char *restored_from;        /* a restart's checkpoint (the newest usable when given a folder), or NULL */
    json_t *identity_items;     /* rank 0: the manifest's identity_items (NULL: too many), made once */
    json_t *identity_values;    /* ... and identity_values (NULL: too many) */
    bool identity_made;
    char last_name[96];         /* the newest this run wrote ("" none), e.g. ckpt-500 */
    uint64_t last_write_ns;     /* how long it took */
    uint64_t last_started_ns;   /* when it began (this rank's clock): --checkpoint-wall counts from there */
    uint64_t last_done_ns;      /* when it was complete (this rank's clock) */
} kr__ckpt_schedule_t;

/* The run's safe points (safe_point.c): where every rank stops together,
 * so that a signal or the wall clock can be acted on (a checkpoint, a
 * stop) and a batch log can be told how far the run is. */
typedef struct kr__safe_points {
    kr_time_t span;             /* model time to the next one, in ticks (0: not yet planned) */
    kr_time_t first_at;         /* model time where this run (or restart) began */
    uint64_t last_ns;           /* when the last one was passed (or the run began) */
    uint64_t last_progress_ns;  /* rank 0: when the last progress line was due */
    bool progress_due;          /* rank 0: a line at this safe point, after its checkpoint (if any) */
    uint64_t events;            /* every rank's events at the last one (agreed) */
    uint64_t passed;            /* safe points this run (or restart) has passed */
    char why[320];              /* what asked for that stop */
    bool by_usr1;               /* it was a SIGUSR1 (on some rank) */
} kr__safe_points_t;

/* The frames this run records (frames.c, docs/viewer.md): frame k shows
 * model time k x every, recorded at the cut one tick later (every event
 * at that time has run). */
typedef struct kr__frames {
    bool enabled;
    bool dir_made;              /* this run made the folder: a run that fails removes it if left empty */
    kr_time_t every;            /* ticks between frames */
    uint64_t first;             /* the recording's first frame (a restart continues one) */
    uint64_t next;              /* the next frame to record */
    uint64_t last;              /* the last frame of the run: last x every <= the end time */
    kr_time_t series_step;      /* model time of a series row (the drawing simulators' largest step) */
    struct kr__frame_file *files; /* by simulator id */
    struct kr__frame_scratch *scratch; /* buffers and the compressor, kept from frame to frame */
    json_t *restored;           /* a restart: the checkpoint's "frames" ({"every", "first", "files"}) */
    json_t *departed;           /* a restart: the migrants then on their way ("departed", by region simulator) */
    json_t *described;          /* rank 0: every simulator's description by id (null: draws nothing) */
    kr__out_file_t manifest, series; /* rank 0 */
} kr__frames_t;

/* One run on this rank. */
typedef struct run_ctx {
    kr__model_file_t *file;
    kr_model_t *model;
    const kr__run_options_t *opt;
    kr__out_file_t *logs;           /* one per simulator, or NULL */
    uint64_t *log_kept_digests;     /* a restart: the digest of the start of each log it goes on with */
    char *log_dir_made;             /* the event-log folder, when this run made it (removed if left empty) */
    kr__out_file_t trace;
    bool tracing, first_trace_event;
    uint64_t t0;                /* wall start */
    uint64_t last_progress;
    bool progress_shown;
    kr__transport_t *mpi;        /* the MPI transport (owned by the model), for its counts; NULL on one rank */
    json_t *steps;              /* rank 0: per-step figures summed per kind (kr_report_steps) */
    kr__model_digest_t digest;  /* the same on every rank (model_digest.c) */
    kr__ckpt_schedule_t ckpt;
    kr__safe_points_t safe;
    /* a restart (checkpoint.c): where the checkpoint was cut, a stop it
     * knew of, every event log's length then */
    kr_time_t restored_at;
    uint64_t events_restored;   /* this rank's simulators' events before the cut: not this process's work */
    bool restored_stop;
    uint32_t stop_by;
    kr_time_t stop_at;
    json_t *log_offsets;
    json_t *log_digests;        /* and their digests then (none in a checkpoint older than them) */
    kr__frames_t frames;
} run_ctx_t;

static inline bool kr__run_distributed(const run_ctx_t *c) { return c->opt->ranks > 1; }

/* observer.c */
/* The hooks the outputs need, and only those: a hook costs a call per
 * event (or per span) even when it does nothing. */
kr_observer_t kr__run_observer(run_ctx_t *c, bool event_logs, bool trace, bool progress);
/* A restart's check of the local simulators' event logs in DIR, before
 * any rank cuts one (the caller agrees over ranks, after every other
 * check of the setup): each as long as the checkpoint says, and its start
 * the one the checkpoint saw (digest). */
kr_status_t kr__run_check_event_logs(run_ctx_t *c, const char *log_dir);
/* The event logs (DIR/NAME.jsonl per local simulator, each under its
 * .partial name). A new run's are opened by open_event_logs, which leaves
 * an unfinished run's file there as it was, and emptied by
 * begin_event_logs, once nothing can refuse the run; a restart's are cut
 * back to the checkpoint by begin_event_logs. */
kr_status_t kr__run_open_event_logs(run_ctx_t *c, const char *log_dir);
kr_status_t kr__run_begin_event_logs(run_ctx_t *c, const char *log_dir);
/* Opens this rank's fragment of the trace (FILE.rankK, under its .partial
 * name). */
kr_status_t kr__run_open_trace(run_ctx_t *c, const char *trace_path);
/* Closes them: the event logs stay under their .partial names for
 * kr__run_commit_outputs; this rank's trace fragment is renamed into
 * place for rank 0 to join when ok, removed otherwise. */
kr_status_t kr__run_close_outputs(run_ctx_t *c, bool ok);
/* Renames the event logs into place when ok (every rank agreed that the
 * run and its outputs are complete), removes them otherwise. */
kr_status_t kr__run_commit_outputs(run_ctx_t *c, bool ok);
/* Rank 0: joins the ranks' trace fragments (FILE.rankK) into the trace,
 * *out, opened by the caller in the setup and left under its .partial
 * name for it to commit, keeping only the flows that both start and end;
 * when !ok, only removes the fragments. */
kr_status_t kr__run_join_trace(run_ctx_t *c, const char *path, bool ok, kr__out_file_t *out);
void kr__run_show_progress(run_ctx_t *c, bool final);

/* checkpoint.c (docs/checkpoint.md) */
/* The checkpoint times and settings: the command line's over the file's. */
kr_status_t kr__run_checkpoint_plan(run_ctx_t *c);
/* Before the run, when it will write checkpoints (a time or spacing, or
 * the wall clock's): the folder is made and found writable on rank 0, or
 * the run is refused at once (an output that cannot be written). */
kr_status_t kr__run_checkpoint_prepare(run_ctx_t *c);
/* The first cut after `after`, 0 for none (none past the end time). */
kr_time_t kr__run_next_cut(const run_ctx_t *c, kr_time_t after);
/* Writes the checkpoint of the model standing at `cut`; on every rank at
 * once, agreed. */
kr_status_t kr__run_checkpoint(run_ctx_t *c, kr_time_t cut);
/* Loads a checkpoint (PATH or the newest in the folder PATH) into this
 * rank's simulators, built but not started; the caller agrees. */
kr_status_t kr__run_restore(run_ctx_t *c, const char *path);
/* The summary's line naming the checkpoint a restart went on from (none
 * for a run that did not restart). */
void kr__run_print_restart(const run_ctx_t *c, FILE *o);
/* Rank 0: the stats' "checkpoints" object (NULL when the run wrote none and
 * restarted from none). */
json_t *kr__run_checkpoint_stats(const run_ctx_t *c);
/* Loads one simulator's part (data, size: as kr__ckpt_read gives it) into
 * s, of kind k, built but not started (`cut`, `saved_end`: as
 * kr__sim_checkpoint_load takes them); what load_sim does for
 * each local simulator (also the loader tests/fuzz/fuzz_checkpoint_part.c
 * feeds). */
kr_status_t kr__run_load_part(kr_sim_t *s, const kr_kind_desc_t *k, const void *data, size_t size, kr_time_t cut,
                              kr_time_t saved_end);

/* frames.c (docs/viewer.md) */
/* The frames' period and first frame, the same on every rank (collective);
 * after the build and any restore. */
kr_status_t kr__run_frames_plan(run_ctx_t *c);
/* The frames' files: new ones opened under their .partial names (an
 * unfinished run's file there left as it was), and the ones a restart goes
 * on with checked (frames_open, in the setup); the old manifest removed,
 * the new files emptied and those of a restart cut back (frames_continue,
 * once every rank has passed the whole setup). */
kr_status_t kr__run_frames_open(run_ctx_t *c);
kr_status_t kr__run_frames_continue(run_ctx_t *c);
/* The cut at which the next frame is taken, 0 for none before the end
 * (a frame at the end time itself is taken when the run has finished). */
kr_time_t kr__run_frames_next_cut(const run_ctx_t *c);
/* Takes the next frame of every local simulator that draws. */
kr_status_t kr__run_frames_take(run_ctx_t *c);
/* After a finished run: the frame at the end time, if it is one. */
kr_status_t kr__run_frames_take_last(run_ctx_t *c);
/* Checkpoints: the frame files' lengths, this rank's ({NAME: bytes}). */
json_t *kr__run_frames_lengths(run_ctx_t *c);
/* Checkpoints: this rank's regions' migrants on their way at the cut,
 * which a restart's frames before their arrival draw ({NAME: {"at",
 * "until", "agents"}}, none when no region has any); NULL on failure. */
json_t *kr__run_frames_departed(run_ctx_t *c, kr_time_t cut);
/* Closes the frame files (still under their .partial names). */
kr_status_t kr__run_frames_close(run_ctx_t *c);
/* Collective: rank 0 gathers every rank's description of its simulators
 * that draw. */
kr_status_t kr__run_frames_gather(run_ctx_t *c, bool ok);
/* Rank 0, after the stats: the manifest and the series, under their
 * .partial names. */
kr_status_t kr__run_frames_write_manifest(run_ctx_t *c);
/* Renames this rank's frame files into place when ok, removes them
 * otherwise. */
kr_status_t kr__run_frames_commit(run_ctx_t *c, bool ok);
/* Rank 0, after every rank committed its files: the manifest last. */
kr_status_t kr__run_frames_commit_manifest(run_ctx_t *c, bool ok);
void kr__run_frames_free(run_ctx_t *c);

/* safe_point.c */
/* The next safe point after `after` (ticks), or 0: none before the end. */
kr_time_t kr__run_next_safe_point(run_ctx_t *c, kr_time_t after);
/* At a safe point, every rank at once: agrees on what signals and
 * the wall clock ask for, decides whether the batch log gets a progress
 * line here (rank 0), and plans the next safe point. *checkpoint: write
 * one here; *stop: then stop the run, not finished (c->safe.why says why). */
kr_status_t kr__run_safe_point(run_ctx_t *c, bool *checkpoint, bool *stop);
/* The progress line of safe point `at` if one is due: written after the
 * safe point's checkpoint, so that it names that one. */
void kr__run_safe_point_progress(run_ctx_t *c, kr_time_t at);

/* report.c */
/* This rank's part of the stats. */
json_t *kr__run_local_stats(run_ctx_t *c, double wall);
/* Rank 0: the stats of the run from every rank's part (whose simulators'
 * entries it takes over and changes). */
json_t *kr__run_merge_stats(run_ctx_t *c, json_t **parts, int nparts);
void kr__run_write_series(FILE *o, json_t *steps);
void kr__run_print_summary(run_ctx_t *c, json_t *stats);

#endif
