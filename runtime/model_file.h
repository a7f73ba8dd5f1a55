/* Model files: loading, overriding, checking and building a run from JSON.
 * Not public API; the kairos command and the tests use it.
 *
 * Every complaint about the input is one line, "FILE: JSON.PATH: expected
 * X, found Y", returned as KR_ERR_INVALID_ARG (or KR_ERR_IO for a file that
 * cannot be read); the command turns those into exit status 2. */
#ifndef KAIROS_RUNTIME_MODEL_FILE_H
#define KAIROS_RUNTIME_MODEL_FILE_H

#include <jansson.h>
#include <stdbool.h>
#include "kairos/kind.h"
#include "kairos/model.h"
#include "base/hmap.h"

/* Limits of one model file (docs/model-file.md, "Limits"): checked before
 * anything is expanded, so that a hostile file is refused in one line
 * instead of exhausting memory. Every rank holds the whole structure:
 * about 7 KB for a simulator another rank runs, 25 KB and up for one it
 * runs (its world), and 250 bytes per dependency, so the largest file
 * costs a few GB per rank while it is built. */
#define KR__MAX_SIMULATORS 100000u
#define KR__MAX_DEPENDENCIES 10000000u
/* A simulator's name names its files: with a replica's index (at most
 * "[99999]") the longest, NAME.frames.partial, fits the 255 bytes of a
 * file name. */
#define KR__MAX_NAME 233u

typedef enum kr__mapping { KR__MAP_ROUND_ROBIN, KR__MAP_BLOCK, KR__MAP_METIS } kr__mapping_t;

/* One simulator after `count` expansion. */
typedef struct kr__sim_entry {
    char *name;              /* "queue", or "line[3]" for a replica */
    const char *kind;        /* borrowed from the JSON tree */
    kr_formalism_t formalism;
    kr_time_t time_step;
    json_t *params;          /* borrowed; an empty object when absent */
    int rank;                /* pinned rank, -1 when free */
    size_t index;            /* position of its entry in "simulators" */
    uint32_t replicas;       /* the entry's count (or regions), 0 without */
    /* "regions": [cols, rows]; 0 x 0 for an entry without. Region
     * region_index runs as simulator region_first + region_index. */
    uint32_t region_cols, region_rows, region_index, region_first;
    json_t *emulation;       /* borrowed: the entry's emulation settings, NULL when absent */
    char *replay;            /* owned: `--replay NAME=LOG`'s LOG, NULL when not given */
} kr__sim_entry_t;

typedef struct kr__dep_entry {
    uint32_t from, to;
    kr_time_t promise;
} kr__dep_entry_t;

/* When and where a run writes checkpoints (outputs.checkpoint, or the
 * command line's --checkpoint-*; docs/checkpoint.md). Times in model
 * units. */
typedef struct kr__ckpt_plan {
    const char *dir;         /* NULL: not given */
    double *at;              /* owned, ascending */
    size_t at_count;
    double every;            /* 0: not given */
    int keep;                /* -1: not given */
    int level;               /* 0: not given */
} kr__ckpt_plan_t;

typedef struct kr__model_file {
    char *path;
    char *dir;               /* folder of the file, for relative plugin paths */
    json_t *root;
    uint64_t precision, seed;
    kr_time_t end_time;
    kr_sync_algorithm_t sync;     /* asked for: the file's "sync" (absent: auto) */
    kr_sync_algorithm_t sync_ran; /* what ran: kr_model_sync once a run's model started (kr__run_file, validate) */
    kr__mapping_t mapping;
    kr_log_level_t log_level;
    const char *out_stats, *out_event_log, *out_trace, *out_series; /* borrowed; NULL if absent */
    kr__ckpt_plan_t ckpt;    /* outputs.checkpoint */
    kr__sim_entry_t *sims;
    size_t sim_count, sim_cap;
    kr__dep_entry_t *deps;
    size_t dep_count, dep_cap;
    /* Lookups that keep loading linear in simulators plus dependencies:
     * a simulator's name -> its index; an entry's name (with a count or
     * regions) -> its first replica; (from, to) -> the dependency. */
    kr__hmap_t names, replicas, dep_set;
    kr_kinds_t *kinds;       /* built-in kinds plus the file's plugins */
    void **plugins;          /* dlopen handles */
    size_t plugin_count;
} kr__model_file_t;

/* Command-line overrides, applied to the JSON tree before it is checked.
 * `sets` are "dotted.path=VALUE" strings; VALUE is JSON, or else a string. */
typedef struct kr__model_file_desc {
    const char *path;
    const char *const *sets;
    size_t set_count;
    /* Like sets, applied after them, but KEY must already exist: a sweep's
     * point ("--vary" in messages). */
    const char *const *varies;
    size_t vary_count;
    kr_status_t (*register_builtin)(kr_kinds_t *kinds); /* may be NULL */
    /* "NAME=LOG": replay LOG for emulation simulator NAME (--replay) */
    const char *const *replays;
    size_t replay_count;
} kr__model_file_desc_t;

/* The JSON value of a model file (any value, not only an object), or NULL
 * with one line in kr_last_error(): not readable, a directory or empty,
 * a NUL byte, or not JSON. A UTF-8 byte-order mark is skipped. */
json_t *kr__model_file_read(const char *path);
/* Loads, overrides and checks a model file; NULL with kr_last_error(). */
kr__model_file_t *kr__model_file_load(const kr__model_file_desc_t *desc);
void kr__model_file_free(kr__model_file_t *f);

/* Builds the model: simulators, dependencies, then every kind's setup from
 * its params (unknown params are refused). `observer` may be NULL. */
kr_model_t *kr__model_file_build(kr__model_file_t *f, const kr_observer_t *observer);
/* The same for one rank of a distributed run: simulator i runs on
 * rank_of[i]; only this rank's simulators get worlds and kind setups. */
kr_model_t *kr__model_file_build_on(kr__model_file_t *f, const kr_observer_t *observer, int rank, const int *rank_of);
/* Inputs a mapping cannot serve: an emulation simulator reading standard
 * input (a string "input") on a rank other than 0. rank_of NULL: all on
 * rank 0. The standard one-line error, as build_on gives it. */
kr_status_t kr__model_file_check_inputs(const kr__model_file_t *f, const int *rank_of);
/* The rank of every simulator for `ranks` ranks, from the file alone
 * (kr__model_file_map on the model's structure). Mapping: runtime/mapping.c. */
kr_status_t kr__model_file_plan(kr__model_file_t *f, int ranks, int *rank_of);

/* "auto", "null-message" or "window"; and back (-1 for any other name). */
const char *kr__sync_name(kr_sync_algorithm_t sync);
int kr__sync_from_name(const char *name);

/* The kind of simulator i, after build. */
const kr_kind_desc_t *kr__model_file_kind(const kr__model_file_t *f, size_t i);

/* Rank of every simulator for `ranks` ranks: pins first, zero-promise groups
 * kept together on the rank of their lowest member, the rest round-robin, in
 * blocks, or by a METIS partition of the dependency graph. Needs the built
 * model (for the groups). Fails for a group whose members are pinned to
 * different ranks. runtime/mapping.c. */
kr_status_t kr__model_file_map(const kr__model_file_t *f, const kr_model_t *m, int ranks, int *rank_of);

/* Restyles the layers and fields simulator e's setup declared, from its
 * entry's "render" (runtime/render_style.c). */
kr_status_t kr__render_restyle(const kr__model_file_t *f, const kr__sim_entry_t *e, kr_sim_t *sim);
/* ---- kinds (kinds.c) ---- */
kr_kinds_t *kr__kinds_create(void);
void kr__kinds_destroy(kr_kinds_t *kinds);
const kr_kind_desc_t *kr__kinds_find(const kr_kinds_t *kinds, const char *name);
size_t kr__kinds_count(const kr_kinds_t *kinds);
/* The plug-ins (dlopen handles) whose kinds a registry holds: dlopen gives
 * a file named twice the same handle, so that it is told apart from two
 * plug-ins with a kind of the same name. */
bool kr__kinds_has_plugin(const kr_kinds_t *kinds, const void *handle);
kr_status_t kr__kinds_add_plugin(kr_kinds_t *kinds, void *handle);
const kr_kind_desc_t *kr__kinds_at(const kr_kinds_t *kinds, size_t i);

/* ---- params (params.c) ---- */
/* A view of one simulator's "params" for its kind; tracks which keys the
 * kind read so that the rest can be reported as unknown. */
kr_params_t *kr__params_open(const char *file, const char *path, json_t *object, uint64_t precision);
/* The region cut the entry declared (kr_params_region_cut), absent: 1 x 1. */
void kr__params_set_region(kr_params_t *p, const kr__sim_entry_t *e, uint32_t sim_id);
/* Fails naming the first key the kind never read. */
kr_status_t kr__params_check_unread(const kr_params_t *p, const char *kind);
void kr__params_close(kr_params_t *p);

/* ---- reports (params.c) ---- */
kr_report_t *kr__report_open(void);
json_t *kr__report_json(kr_report_t *r);   /* borrowed */
void kr__report_close(kr_report_t *r);

/* "FILE: PATH: expected X, found <json of v>" (v NULL: "nothing"). */
kr_status_t kr__input_error(const char *file, const char *path, const char *expected, const json_t *found);
/* Refuses a key of `obj` not in `allowed` (ending with NULL), in that form;
 * `where` is the object's JSON path. */
kr_status_t kr__model_file_check_keys(const kr__model_file_t *f, json_t *obj, const char *const *allowed,
                                      const char *where);

#endif
