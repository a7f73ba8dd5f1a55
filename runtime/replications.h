/* Replications: independent runs of a model (or of every point of a sweep)
 * with seeds derived from the model seed, shared out over groups of ranks,
 * and pooled across replications. Not public API.
 *
 * The ranks are split into groups of group_ranks ranks each (an MPI
 * communicator split); group g runs work items g, g + groups, g + 2 groups,
 * ... (item p * R + r is replication r of point p), each a whole run on the
 * group's communicator. Every result travels to rank 0, which keeps them in
 * item order: what is pooled, and how, never depends on the number of
 * ranks or groups. */
#ifndef KAIROS_RUNTIME_REPLICATIONS_H
#define KAIROS_RUNTIME_REPLICATIONS_H

#include "runtime/run.h"

/* The seed of replication r: r = 0 keeps the model seed (so replication 0
 * is the plain run); r >= 1 gets splitmix64's r-th output from the state
 * `model_seed`, its top bit cleared (model-file seeds are JSON integers
 * >= 0). */
uint64_t kr__replication_seed(uint64_t model_seed, uint64_t r);

typedef struct kr__replications_desc {
    kr__model_file_t *const *points; /* one loaded model file per point, the same on every rank */
    size_t point_count;
    uint32_t replications;          /* R, per point, >= 1 */
    int group_ranks;                /* ranks per group; 0: the default, see kr__replications_plan */
    int ranks, rank;                /* of comm */
    MPI_Comm comm;                  /* used only when ranks > 1 */
    /* A long job (docs/replications.md, "Long jobs"): checkpoints keep the
     * records of the finished replications, a restart runs the others. */
    const char *checkpoint_dir;     /* NULL: "checkpoints" */
    const char *restart;            /* a replications checkpoint, or its folder; NULL: none */
    kr__wall_limits_t wall;         /* checkpoints and stops after a round, progress lines (rank 0) */
} kr__replications_desc_t;

/* How the ranks are split. By default as many groups as there are work
 * items (at most one per rank), each with ranks / groups ranks but never
 * more than the smallest point's simulator count (a replication cannot use
 * more). `--group-ranks G` fixes G (1 to ranks). Ranks beyond groups * G
 * idle. Fails (KR_ERR_INVALID_ARG) for a G out of range. */
kr_status_t kr__replications_plan(const kr__replications_desc_t *d, int *groups, int *group_ranks);

/* Every rank of d->comm learns whether a rank that `speaks` failed; the
 * lowest such rank's status is returned everywhere and its message kept on
 * rank 0 (one line, printed once). Alone, returns st. */
kr_status_t kr__replications_agree(const kr__replications_desc_t *d, bool speaks, kr_status_t st);

/* Rank 0 warns once when ranks are left out of every group, when a group
 * has more ranks than a replication has simulators, and when dependencies
 * promise more than the end time (kr__run_warn_late_promises): a
 * replication's own run does not, or it would repeat each time. A sweep's
 * warnings are its first point's. */
void kr__replications_warn_setup(const kr__replications_desc_t *d, int groups, int group_ranks);

/* Runs every replication of every point. On rank 0, *results is a JSON
 * array in item order (the caller's): per item {"replication", "seed",
 * "checksum", "events", "simulators": [{"name", "final_time", "events",
 * "stats"}]}; NULL elsewhere. A failing replication stops every rank after
 * the round it failed in, with the same status everywhere and its message
 * on rank 0. The point files' seed is restored and their outputs (stats,
 * event logs, trace) are ignored: replications report through *results.
 * *wall_seconds (may be NULL): this rank's wall time for all of it. */
kr_status_t kr__replications_run(const kr__replications_desc_t *d, json_t **results, double *wall_seconds);

/* The replications checkpoint (replications_checkpoint.c). A digest of
 * what decides the records: every point's model file (outputs, algorithm
 * and mapping aside) and R. */
uint64_t kr__replications_plan_digest(const kr__replications_desc_t *d);
/* Reads PATH (the file, or the folder holding replications.json): *done
 * gets its records (each with its "_item"). Refuses another plan
 * (KR_ERR_MISMATCH), a damaged file (KR_ERR_CORRUPT), none (KR_ERR_IO). */
kr_status_t kr__replications_checkpoint_read(const char *path, uint64_t plan, uint64_t items, json_t **done);
/* Writes DIR/replications.json whole (a .partial file, fsynced, renamed). */
kr_status_t kr__replications_checkpoint_write(const char *dir, uint64_t plan, uint64_t items, json_t *done);
/* Refused: DIR/replications.json of other replications (another plan),
 * which this run's checkpoint would replace. */
kr_status_t kr__replications_checkpoint_foreign(const char *dir, uint64_t plan);

/* Pools the records of one point (an array as above): per simulator (by
 * position) {"name", "stats": {STAT: {"mean", "sd", "ci95", "n"}}} for
 * every statistic that is a number in some replication, in first-seen
 * order; summed in array order. ci95 is the half-width of the Student t
 * interval, t(0.975, n - 1) sd / sqrt(n); figures that do not exist (sd
 * and ci95 of one replication) are null. NULL when out of memory. */
json_t *kr__replications_pool(const json_t *records);

/* `kairos run MODEL --replications R`: runs, pools, writes the stats JSON
 * (opt->stats_path, else the file's outputs.stats) and prints the summary
 * on rank 0. Trace and event logs are refused by the caller. */
kr_status_t kr__replications_run_file(kr__model_file_t *f, const kr__run_options_t *opt, uint32_t replications,
                                     int group_ranks);

#endif
