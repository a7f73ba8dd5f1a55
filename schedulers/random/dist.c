/* Distributions: checked once at init, then sampled through GSL. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "kairos/dist.h"
#include "base/error.h"

static const char *const kind_names[] = {
    [KR_DIST_CONSTANT] = "constant",
    [KR_DIST_UNIFORM] = "uniform",
    [KR_DIST_EXPONENTIAL] = "exponential",
    [KR_DIST_NORMAL] = "normal",
    [KR_DIST_LOGNORMAL] = "lognormal",
    [KR_DIST_TRIANGULAR] = "triangular",
    [KR_DIST_ERLANG] = "erlang",
    [KR_DIST_GAMMA] = "gamma",
    [KR_DIST_DISCRETE] = "discrete",
    [KR_DIST_POISSON] = "poisson",
    [KR_DIST_BERNOULLI] = "bernoulli",
};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])

/* Poisson draws are unsigned ints in GSL; this keeps the tail far inside. */
#define POISSON_MEAN_MAX 1e9

kr_dist_kind_t kr_dist_kind_from_name(const char *name)
{
    if (!name) return KR_DIST_NONE;
    for (size_t i = 1; i < KIND_COUNT; i++)
        if (strcmp(name, kind_names[i]) == 0) return (kr_dist_kind_t)i;
    return KR_DIST_NONE;
}

const char *kr_dist_kind_name(kr_dist_kind_t kind)
{
    if (kind <= KR_DIST_NONE || (size_t)kind >= KIND_COUNT) return NULL;
    return kind_names[kind];
}

/* Each check reports "<dist>: <param> <value> <what is wrong>". */
static kr_status_t need_finite(const kr_dist_desc_t *d, const char *param, double v)
{
    if (isfinite(v)) return KR_OK;
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s %g is not a finite number", kind_names[d->kind], param, v);
}

static kr_status_t need_positive(const kr_dist_desc_t *d, const char *param, double v)
{
    if (need_finite(d, param, v)) return kr_last_status();
    if (v > 0) return KR_OK;
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s %g must be greater than 0", kind_names[d->kind], param, v);
}

static kr_status_t need_nonnegative(const kr_dist_desc_t *d, const char *param, double v)
{
    if (need_finite(d, param, v)) return kr_last_status();
    if (v >= 0) return KR_OK;
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s %g is negative", kind_names[d->kind], param, v);
}

static kr_status_t need_range(const kr_dist_desc_t *d)
{
    if (need_finite(d, "min", d->min) || need_finite(d, "max", d->max)) return kr_last_status();
    if (d->min > d->max)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: min %g is greater than max %g", kind_names[d->kind],
                        d->min, d->max);
    if (!isfinite(d->max - d->min))
        return kr__fail(KR_ERR_INVALID_ARG, "%s: the range from min %g to max %g is too wide",
                        kind_names[d->kind], d->min, d->max);
    return KR_OK;
}

static kr_status_t init_discrete(kr_dist_t *dist, const kr_dist_desc_t *d)
{
    if (d->count == 0) return kr__fail(KR_ERR_INVALID_ARG, "discrete: values is empty");
    if (!d->values || !d->weights)
        return kr__fail(KR_ERR_INVALID_ARG, "discrete: %s is missing", d->values ? "weights" : "values");
    double sum = 0;
    for (size_t i = 0; i < d->count; i++) {
        if (!isfinite(d->values[i]))
            return kr__fail(KR_ERR_INVALID_ARG, "discrete: values[%zu] %g is not a finite number", i,
                            d->values[i]);
        if (!isfinite(d->weights[i]))
            return kr__fail(KR_ERR_INVALID_ARG, "discrete: weights[%zu] %g is not a finite number", i,
                            d->weights[i]);
        if (d->weights[i] < 0)
            return kr__fail(KR_ERR_INVALID_ARG, "discrete: weights[%zu] %g is negative", i, d->weights[i]);
        sum += d->weights[i];
    }
    if (!(sum > 0)) return kr__fail(KR_ERR_INVALID_ARG, "discrete: weights sum to 0, need a positive sum");
    if (!isfinite(sum)) return kr__fail(KR_ERR_INVALID_ARG, "discrete: weights sum past the largest double");
    double mean = 0;
    for (size_t i = 0; i < d->count; i++) mean += d->weights[i] / sum * d->values[i];
    if (!isfinite(mean)) return kr__fail(KR_ERR_INVALID_ARG, "discrete: the mean is past the largest double");

    dist->values = malloc(d->count * sizeof *dist->values);
    if (!dist->values) return kr__fail(KR_ERR_NOMEM, "discrete: out of memory for %zu values", d->count);
    memcpy(dist->values, d->values, d->count * sizeof *dist->values);
    /* Its arguments are checked above, so GSL's error handler can fire only
     * when malloc fails inside. */
    dist->table = gsl_ran_discrete_preproc(d->count, d->weights);
    if (!dist->table) return kr__fail(KR_ERR_NOMEM, "discrete: out of memory for %zu weights", d->count);
    dist->mean = mean;
    return KR_OK;
}

static kr_status_t init_kind(kr_dist_t *dist, const kr_dist_desc_t *d)
{
    switch (d->kind) {
    case KR_DIST_CONSTANT:
        if (need_finite(d, "value", d->value)) return kr_last_status();
        dist->a = dist->mean = d->value;
        return KR_OK;
    case KR_DIST_UNIFORM:
        if (need_range(d)) return kr_last_status();
        dist->a = d->min;
        dist->b = d->max;
        dist->mean = 0.5 * d->min + 0.5 * d->max;
        return KR_OK;
    case KR_DIST_EXPONENTIAL:
        if (need_positive(d, "mean", d->mean)) return kr_last_status();
        dist->a = dist->mean = d->mean;
        return KR_OK;
    case KR_DIST_NORMAL:
        if (need_finite(d, "mean", d->mean) || need_nonnegative(d, "sd", d->sd)) return kr_last_status();
        dist->a = dist->mean = d->mean;
        dist->b = d->sd;
        return KR_OK;
    case KR_DIST_LOGNORMAL: {
        if (need_positive(d, "mean", d->mean) || need_nonnegative(d, "sd", d->sd)) return kr_last_status();
        /* For X = exp(N(mu, sigma^2)): E X = exp(mu + sigma^2/2) and
         * Var X = (exp(sigma^2) - 1) (E X)^2. */
        double ratio = d->sd / d->mean;
        double sigma2 = log1p(ratio * ratio);
        if (!isfinite(sigma2))
            return kr__fail(KR_ERR_INVALID_ARG, "lognormal: sd %g is too large for mean %g", d->sd, d->mean);
        dist->a = log(d->mean) - 0.5 * sigma2;
        dist->b = sqrt(sigma2);
        dist->mean = d->mean;
        return KR_OK;
    }
    case KR_DIST_TRIANGULAR:
        if (need_range(d) || need_finite(d, "mode", d->mode)) return kr_last_status();
        if (d->mode < d->min || d->mode > d->max)
            return kr__fail(KR_ERR_INVALID_ARG, "triangular: mode %g is outside [min %g, max %g]", d->mode,
                            d->min, d->max);
        dist->a = d->min;
        dist->b = d->mode;
        dist->c = d->max;
        dist->mean = d->min / 3 + d->mode / 3 + d->max / 3;
        return KR_OK;
    case KR_DIST_ERLANG:
        if (need_finite(d, "k", d->k)) return kr_last_status();
        if (d->k < 1 || d->k != floor(d->k))
            return kr__fail(KR_ERR_INVALID_ARG, "erlang: k %g must be a whole number of at least 1", d->k);
        if (need_positive(d, "mean", d->mean)) return kr_last_status();
        dist->a = d->k;
        dist->b = d->mean / d->k;
        dist->mean = d->mean;
        return KR_OK;
    case KR_DIST_GAMMA:
        if (need_positive(d, "shape", d->shape) || need_positive(d, "scale", d->scale)) return kr_last_status();
        dist->a = d->shape;
        dist->b = d->scale;
        dist->mean = d->shape * d->scale;
        if (!isfinite(dist->mean))
            return kr__fail(KR_ERR_INVALID_ARG, "gamma: shape %g times scale %g is past the largest double",
                            d->shape, d->scale);
        return KR_OK;
    case KR_DIST_DISCRETE:
        return init_discrete(dist, d);
    case KR_DIST_POISSON:
        if (need_nonnegative(d, "mean", d->mean)) return kr_last_status();
        if (d->mean > POISSON_MEAN_MAX)
            return kr__fail(KR_ERR_INVALID_ARG, "poisson: mean %g is above the largest supported, %g", d->mean,
                            POISSON_MEAN_MAX);
        dist->a = dist->mean = d->mean;
        return KR_OK;
    case KR_DIST_BERNOULLI:
        if (need_finite(d, "p", d->p)) return kr_last_status();
        if (d->p < 0 || d->p > 1)
            return kr__fail(KR_ERR_INVALID_ARG, "bernoulli: p %g is outside [0, 1]", d->p);
        dist->a = dist->mean = d->p;
        return KR_OK;
    case KR_DIST_NONE:
        break;
    }
    return kr__fail(KR_ERR_INVALID_ARG, "distribution: unknown kind %d", (int)d->kind);
}

kr_status_t kr_dist_init(kr_dist_t *dist, const kr_dist_desc_t *desc)
{
    if (!dist) return kr__fail(KR_ERR_INVALID_ARG, "distribution: null dist");
    memset(dist, 0, sizeof *dist);
    if (!desc) return kr__fail(KR_ERR_INVALID_ARG, "distribution: null desc");
    if (init_kind(dist, desc)) {
        kr_status_t st = kr_last_status();
        kr_dist_fini(dist);
        return st;
    }
    dist->kind = desc->kind;
    return KR_OK;
}

void kr_dist_fini(kr_dist_t *dist)
{
    if (!dist) return;
    if (dist->table) gsl_ran_discrete_free(dist->table);
    free(dist->values);
    memset(dist, 0, sizeof *dist);
}

/* Inverse CDF of the triangular distribution on [a, b] with mode c. */
static double triangular(double a, double c, double b, double u)
{
    double w = b - a;
    if (!(w > 0)) return a;
    double x = u * w < c - a ? a + sqrt(u * w * (c - a)) : b - sqrt((1 - u) * w * (b - c));
    return x < a ? a : x > b ? b : x;
}

double kr_dist_sample(const kr_dist_t *dist, kr_rng_t *rng)
{
    gsl_rng *g = kr_rng_gsl(rng);
    switch (dist->kind) {
    case KR_DIST_CONSTANT: return dist->a;
    case KR_DIST_UNIFORM: {
        /* a + (b - a) u can round one ulp past b. */
        double x = dist->a + (dist->b - dist->a) * kr_rng_uniform(rng);
        return x > dist->b ? dist->b : x;
    }
    case KR_DIST_EXPONENTIAL: return gsl_ran_exponential(g, dist->a);
    case KR_DIST_NORMAL: return dist->a + gsl_ran_gaussian_ziggurat(g, dist->b);
    case KR_DIST_LOGNORMAL: return gsl_ran_lognormal(g, dist->a, dist->b);
    case KR_DIST_TRIANGULAR: return triangular(dist->a, dist->b, dist->c, kr_rng_uniform(rng));
    case KR_DIST_ERLANG:
    case KR_DIST_GAMMA: return gsl_ran_gamma(g, dist->a, dist->b);
    case KR_DIST_DISCRETE: return dist->values[gsl_ran_discrete(g, dist->table)];
    case KR_DIST_POISSON: return (double)gsl_ran_poisson(g, dist->a);
    case KR_DIST_BERNOULLI: return (double)gsl_ran_bernoulli(g, dist->a);
    case KR_DIST_NONE: break;
    }
    assert(!"kr_dist_sample on a distribution that kr_dist_init did not prepare");
    return NAN;
}

kr_time_t kr_dist_sample_ticks(const kr_dist_t *dist, kr_rng_t *rng, uint64_t precision)
{
    return kr_time_delay_ticks(kr_dist_sample(dist, rng), precision);
}

double kr_dist_mean(const kr_dist_t *dist)
{
    return dist->kind == KR_DIST_NONE ? NAN : dist->mean;
}
