/* Distributions of the model-file form (docs/model-file.md and
 * docs/random.md, "Distributions"), drawn from a stream.
 *
 * A kr_dist_desc_t names the kind and its parameters with the same names as
 * the JSON keys ({"dist": "erlang", "k": 3, "mean": 2.0} is kind
 * KR_DIST_ERLANG, k 3, mean 2.0); fields a kind does not use are ignored.
 * kr_dist_init checks every parameter once, so sampling cannot fail:
 *
 *   constant     value                  value, no draw
 *   uniform      min <= max             within [min, max]
 *   exponential  mean > 0
 *   normal       mean, sd >= 0
 *   lognormal    mean > 0, sd >= 0      mean and sd of the variable itself
 *   triangular   min <= mode <= max     inverse CDF of one uniform
 *   erlang       k whole >= 1, mean > 0 gamma, shape k, scale mean / k
 *   gamma        shape > 0, scale > 0
 *   discrete     count >= 1 values (finite), weights >= 0 with sum > 0
 *   poisson      0 <= mean <= 1e9       whole numbers
 *   bernoulli    0 <= p <= 1            0 or 1
 *
 * Every parameter must be a finite number. Samples of a kind are a fixed
 * function of the stream's draws, so a keyed stream gives the same samples
 * everywhere. */
#ifndef KAIROS_DIST_H
#define KAIROS_DIST_H

#include <stddef.h>
#include "kairos/export.h"
#include "kairos/rng.h"
#include "kairos/status.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

typedef enum kr_dist_kind {
    KR_DIST_NONE = 0, /* not a distribution: unknown name, zeroed desc */
    KR_DIST_CONSTANT,
    KR_DIST_UNIFORM,
    KR_DIST_EXPONENTIAL,
    KR_DIST_NORMAL,
    KR_DIST_LOGNORMAL,
    KR_DIST_TRIANGULAR,
    KR_DIST_ERLANG,
    KR_DIST_GAMMA,
    KR_DIST_DISCRETE,
    KR_DIST_POISSON,
    KR_DIST_BERNOULLI
} kr_dist_kind_t;

typedef struct kr_dist_desc {
    kr_dist_kind_t kind;
    double value;            /* constant */
    double min, mode, max;   /* uniform, triangular */
    double mean, sd;         /* exponential, normal, lognormal, erlang, poisson */
    double k;                /* erlang: a whole number, kept double to check it */
    double shape, scale;     /* gamma */
    double p;                /* bernoulli */
    const double *values;    /* discrete: count values and weights, */
    const double *weights;   /* copied by kr_dist_init */
    size_t count;
} kr_dist_desc_t;

/* A ready distribution; lives wherever the caller puts it, its fields are
 * private. Do not copy it: one init, one fini. */
typedef struct kr_dist {
    kr_dist_kind_t kind;
    double a, b, c;          /* parameters in sampling form */
    double mean;             /* theoretical mean */
    double *values;          /* discrete: owned copy */
    void *table;             /* discrete: gsl_ran_discrete_t */
} kr_dist_t;

/* Checks desc and prepares *dist. Fails with KR_ERR_INVALID_ARG and a
 * message naming the distribution and parameter ("uniform: min 5 is greater
 * than max 3"), or KR_ERR_NOMEM; *dist is then zeroed (fini is harmless). */
KR_API kr_status_t kr_dist_init(kr_dist_t *dist, const kr_dist_desc_t *desc);
/* Frees what init allocated and zeroes *dist; NULL and zeroed are allowed. */
KR_API void kr_dist_fini(kr_dist_t *dist);

/* One sample, drawn from rng. */
KR_API double kr_dist_sample(const kr_dist_t *dist, kr_rng_t *rng);
/* One sample taken as a delay: kr_time_delay_ticks of it (rounded up to
 * whole ticks, negative samples give 0). */
KR_API kr_time_t kr_dist_sample_ticks(const kr_dist_t *dist, kr_rng_t *rng, uint64_t precision);
/* The theoretical mean. */
KR_API double kr_dist_mean(const kr_dist_t *dist);

/* The kind of a model-file name ("exponential"); KR_DIST_NONE if unknown.
 * Names are the lower-case kind names. */
KR_API kr_dist_kind_t kr_dist_kind_from_name(const char *name);
/* The model-file name of a kind; NULL for KR_DIST_NONE or out of range. */
KR_API const char *kr_dist_kind_name(kr_dist_kind_t kind);

KR_END_DECLS

#endif
