/* Parameter sweeps: every combination of the values given for some keys of
 * a model file, R replications each (runtime/replications.h), pooled into
 * one CSV row per point and, on request, one PNG plot per statistic. Not
 * public API. */
#ifndef KAIROS_RUNTIME_SWEEP_H
#define KAIROS_RUNTIME_SWEEP_H

#include "runtime/replications.h"

typedef struct kr__sweep_desc {
    const char *model;                  /* the model file */
    const char *const *sets;            /* --set KEY=VALUE, applied first */
    size_t set_count;
    const char *const *varies;          /* --vary KEY=[v1,v2,...] as given */
    size_t vary_count;
    uint32_t replications;              /* R per point, >= 1 */
    int group_ranks;                    /* 0: the default split */
    const char *csv_path;               /* the CSV (needed) */
    const char *plot_dir;               /* NULL: no plots */
    bool quiet;                         /* no summary */
    FILE *summary;                      /* rank 0: stdout */
    int ranks, rank;
    MPI_Comm comm;                      /* used only when ranks > 1 */
    kr_status_t (*register_builtin)(kr_kinds_t *kinds);
    /* a long job: as kr__replications_desc_t's (docs/replications.md) */
    const char *checkpoint_dir, *restart;
    kr__wall_limits_t wall;
} kr__sweep_desc_t;

/* Points are the combinations in the order of nested loops, the first
 * --vary outermost. Every point's file is loaded and checked (every --vary
 * key must exist) before anything runs; an unwritable CSV or a missing
 * matplotlib (with a plot folder) fails before the runs too. Outputs are
 * written as NAME.partial and renamed once complete. Input errors are
 * KR_ERR_INVALID_ARG or KR_ERR_IO, the same on every rank. */
kr_status_t kr__sweep_run(const kr__sweep_desc_t *d);

/* The shortest text that reads back (strtod) as x, at most 17 significant
 * digits; "" for a number that is not finite. */
void kr__sweep_format_double(char *out, size_t cap, double x);

#endif
