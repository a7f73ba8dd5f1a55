/* Statistics for model kinds: tallies, time-weighted averages, batch-means
 * confidence intervals and histograms (kairos/kind.h writes them into a
 * kind's report; declared in a kind's state, kairos/state.h, the runtime
 * reports them itself).
 *
 * All of them are plain structs updated in O(1) per observation with no
 * allocation after init (the histogram allocates its bins once); they keep
 * no pointers into the model and can live in behavior or context state. */
#ifndef KAIROS_STATISTICS_H
#define KAIROS_STATISTICS_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/status.h"
#include "kairos/time.h"

KR_BEGIN_DECLS


/* ---- tally: count, mean, variance, min, max (Welford's update, so the
 * variance stays accurate for large means) ---- */
typedef struct kr_tally {
    uint64_t count;
    double mean, m2, min, max;
} kr_tally_t;

KR_API void kr_tally_init(kr_tally_t *t);
KR_API void kr_tally_add(kr_tally_t *t, double x);
/* Sample variance (n - 1 in the denominator); NaN below two observations. */
KR_API double kr_tally_variance(const kr_tally_t *t);
KR_API double kr_tally_sd(const kr_tally_t *t);
/* Mean, min and max are NaN for an empty tally. */
KR_API double kr_tally_mean(const kr_tally_t *t);
KR_API double kr_tally_min(const kr_tally_t *t);
KR_API double kr_tally_max(const kr_tally_t *t);

/* ---- time-weighted average of a piecewise-constant value (a queue
 * length, a number of busy servers) ---- */
typedef struct kr_timeavg {
    kr_time_t start, last;
    double value;        /* current value */
    double area;         /* integral of value over [start, last], in value x ticks */
    double min, max;
} kr_timeavg_t;

/* Starts observing at `start` with `value`. */
KR_API void kr_timeavg_init(kr_timeavg_t *a, kr_time_t start, double value);
/* The value changes to `value` at time t (t >= the last change; an earlier
 * t is treated as the last change's time). */
KR_API void kr_timeavg_set(kr_timeavg_t *a, kr_time_t t, double value);
/* Restarts the average at t keeping the current value (end of a warm-up). */
KR_API void kr_timeavg_reset(kr_timeavg_t *a, kr_time_t t);
/* The average over [start, t]; the current value when no time has passed. */
KR_API double kr_timeavg_mean(const kr_timeavg_t *a, kr_time_t t);

/* ---- batch means: a 95% confidence interval for the mean of a correlated
 * series (waiting times in a queue), streaming in O(1) memory.
 *
 * Observations are grouped in batches; whenever KR_BATCH_SLOTS batches are
 * full, neighbouring pairs merge and the batch size doubles, so at the end
 * between KR_BATCH_SLOTS/2 and KR_BATCH_SLOTS equal batches remain. The
 * interval is mean +- t(0.975, b-1) x sd(batch means) / sqrt(b) over the b
 * full batches (a partial last batch is left out of the interval but not of
 * the mean). ---- */
#define KR_BATCH_SLOTS 64
typedef struct kr_batchmeans {
    double sums[KR_BATCH_SLOTS];
    uint64_t batch_size;   /* observations per full batch */
    uint32_t full;         /* full batches */
    uint64_t in_current;   /* observations in the batch being filled */
    double current;        /* their sum */
    kr_tally_t all;        /* every observation */
} kr_batchmeans_t;

KR_API void kr_batchmeans_init(kr_batchmeans_t *b);
KR_API void kr_batchmeans_add(kr_batchmeans_t *b, double x);
KR_API double kr_batchmeans_mean(const kr_batchmeans_t *b);
/* Half-width of the 95% interval; NaN with fewer than 2 full batches. */
KR_API double kr_batchmeans_halfwidth(const kr_batchmeans_t *b);
KR_API uint32_t kr_batchmeans_batches(const kr_batchmeans_t *b);

/* ---- histogram: `bins` equal bins over [lo, hi), plus counts below and
 * at or above ---- */
typedef struct kr_histogram {
    double lo, hi;
    size_t bins;
    uint64_t *counts;
    uint64_t under, over, total;
} kr_histogram_t;

/* Fails (KR_ERR_INVALID_ARG) unless lo < hi, both finite, and bins >= 1. */
KR_API kr_status_t kr_histogram_init(kr_histogram_t *h, double lo, double hi, size_t bins);
KR_API void kr_histogram_fini(kr_histogram_t *h);
KR_API void kr_histogram_add(kr_histogram_t *h, double x);
/* The value below which a fraction q of the binned observations lies,
 * interpolated within its bin; NaN when empty. */
KR_API double kr_histogram_quantile(const kr_histogram_t *h, double q);

KR_END_DECLS

#endif
