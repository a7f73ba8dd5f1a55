/* Distributions: sample mean and variance of 1e5 draws against theory
 * (tolerance five standard errors, fixed keys so the test is deterministic),
 * bounds, every validation refusal with its message, names, and delays in
 * ticks. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kairos/dist.h"
#include "kairos/rng.h"
#include "kairos/status.h"

#define N 100000

typedef struct moment_case {
    const char *label;
    kr_dist_desc_t desc;
    double mean, var, kurtosis; /* theory; kurtosis = mu4 / var^2 */
    double lo, hi;              /* every sample within [lo, hi] */
} moment_case_t;

static void check_moments(const moment_case_t *c, uint64_t id)
{
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &c->desc), KR_OK, "%s: %s", c->label, kr_last_error());
    cr_assert(fabs(kr_dist_mean(&d) - c->mean) <= 1e-12 * fmax(1, fabs(c->mean)), "%s: kr_dist_mean %.17g, want %.17g",
              c->label, kr_dist_mean(&d), c->mean);
    kr_rng_t *r = kr_rng_create(20240601, KR_RNG_SIMULATOR, id, 0);
    cr_assert_not_null(r);
    /* Welford, so the variance does not cancel. */
    double m = 0, s = 0;
    for (int i = 1; i <= N; i++) {
        double x = kr_dist_sample(&d, r);
        cr_assert(x >= c->lo && x <= c->hi, "%s: sample %.17g outside [%g, %g]", c->label, x, c->lo, c->hi);
        double dx = x - m;
        m += dx / i;
        s += dx * (x - m);
    }
    double var = s / (N - 1);
    double se_mean = sqrt(c->var / N);
    double se_var = c->var * sqrt((c->kurtosis - 1) / N);
    cr_assert(fabs(m - c->mean) <= 5 * se_mean, "%s: mean %.6g, want %.6g +- %.3g", c->label, m, c->mean,
              5 * se_mean);
    cr_assert(fabs(var - c->var) <= 5 * se_var, "%s: variance %.6g, want %.6g +- %.3g", c->label, var, c->var,
              5 * se_var);
    kr_rng_destroy(r);
    kr_dist_fini(&d);
}

static double lognormal_kurtosis(double mean, double sd)
{
    double s2 = log1p(sd * sd / (mean * mean));
    return exp(4 * s2) + 2 * exp(3 * s2) + 3 * exp(2 * s2) - 3 + 3;
}

Test(dist, moments)
{
    const double a = 1, c = 2, b = 6; /* triangular */
    const double tri_var = (a * a + b * b + c * c - a * b - a * c - b * c) / 18;
    const double pq = 0.3 * 0.7;
    const moment_case_t cases[] = {
        {"uniform", {.kind = KR_DIST_UNIFORM, .min = -2, .max = 5}, 1.5, 49.0 / 12, 1.8, -2, 5},
        {"exponential", {.kind = KR_DIST_EXPONENTIAL, .mean = 2.5}, 2.5, 6.25, 9, 0, INFINITY},
        {"normal", {.kind = KR_DIST_NORMAL, .mean = -3, .sd = 2}, -3, 4, 3, -INFINITY, INFINITY},
        {"lognormal", {.kind = KR_DIST_LOGNORMAL, .mean = 2, .sd = 1}, 2, 1, lognormal_kurtosis(2, 1), 0, INFINITY},
        {"lognormal narrow", {.kind = KR_DIST_LOGNORMAL, .mean = 10, .sd = 0.5}, 10, 0.25,
         lognormal_kurtosis(10, 0.5), 0, INFINITY},
        {"triangular", {.kind = KR_DIST_TRIANGULAR, .min = a, .mode = c, .max = b}, (a + b + c) / 3, tri_var, 2.4, a, b},
        {"triangular mode at min", {.kind = KR_DIST_TRIANGULAR, .min = 0, .mode = 0, .max = 3}, 1, 0.5, 2.4, 0, 3},
        {"triangular mode at max", {.kind = KR_DIST_TRIANGULAR, .min = 0, .mode = 3, .max = 3}, 2, 0.5, 2.4, 0, 3},
        /* erlang k 3, mean 6: gamma shape 3, scale 2 */
        {"erlang", {.kind = KR_DIST_ERLANG, .k = 3, .mean = 6}, 6, 12, 3 + 6.0 / 3, 0, INFINITY},
        {"erlang k 1", {.kind = KR_DIST_ERLANG, .k = 1, .mean = 0.5}, 0.5, 0.25, 9, 0, INFINITY},
        {"gamma", {.kind = KR_DIST_GAMMA, .shape = 2.5, .scale = 0.4}, 1.0, 0.4, 3 + 6 / 2.5, 0, INFINITY},
        {"gamma shape < 1", {.kind = KR_DIST_GAMMA, .shape = 0.5, .scale = 2}, 1.0, 2.0, 15, 0, INFINITY},
        {"poisson", {.kind = KR_DIST_POISSON, .mean = 4}, 4, 4, 3.25, 0, INFINITY},
        {"poisson large", {.kind = KR_DIST_POISSON, .mean = 250}, 250, 250, 3 + 1.0 / 250, 0, INFINITY},
        {"bernoulli", {.kind = KR_DIST_BERNOULLI, .p = 0.3}, 0.3, pq, (1 - 3 * pq) / pq, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_moments(&cases[i], i);
}

Test(dist, discrete_moments_and_frequencies)
{
    const double values[] = {1, 2, 5, -7};
    const double weights[] = {1, 2, 1, 0};
    /* mean 2.5, E x^2 8.5, mu4 = (1.5^4 + 2 * 0.5^4 + 2.5^4) / 4 */
    const double mu4 = (pow(1.5, 4) + 2 * pow(0.5, 4) + pow(2.5, 4)) / 4;
    moment_case_t c = {"discrete", {.kind = KR_DIST_DISCRETE, .values = values, .weights = weights, .count = 4},
                       2.5, 2.25, mu4 / (2.25 * 2.25), 1, 5};
    check_moments(&c, 100);

    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &c.desc), KR_OK);
    kr_rng_t *r = kr_rng_create(3, KR_RNG_AGENT, 3, 3);
    int count[3] = {0};
    for (int i = 0; i < N; i++) {
        double x = kr_dist_sample(&d, r);
        cr_assert(x == 1 || x == 2 || x == 5, "sample %g is not a value of weight > 0", x);
        count[x == 1 ? 0 : x == 2 ? 1 : 2]++;
    }
    const double p[] = {0.25, 0.5, 0.25};
    for (int k = 0; k < 3; k++)
        cr_assert_lt(fabs(count[k] - p[k] * N), 5 * sqrt(N * p[k] * (1 - p[k])), "value %d drawn %d times", k,
                     count[k]);
    kr_rng_destroy(r);
    kr_dist_fini(&d);
}

Test(dist, discrete_copies_its_arrays)
{
    double values[] = {10, 20};
    double weights[] = {0, 1};
    kr_dist_desc_t desc = {.kind = KR_DIST_DISCRETE, .values = values, .weights = weights, .count = 2};
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &desc), KR_OK);
    values[1] = -1;
    weights[0] = 1;
    weights[1] = 0;
    kr_rng_t *r = kr_rng_create(1, KR_RNG_SIMULATOR, 1, 0);
    for (int i = 0; i < 100; i++) cr_assert_eq(kr_dist_sample(&d, r), 20);
    cr_assert_eq(kr_dist_mean(&d), 20);
    kr_rng_destroy(r);
    kr_dist_fini(&d);

    const double one_v[] = {3.5}, one_w[] = {2};
    desc = (kr_dist_desc_t){.kind = KR_DIST_DISCRETE, .values = one_v, .weights = one_w, .count = 1};
    cr_assert_eq(kr_dist_init(&d, &desc), KR_OK);
    r = kr_rng_create(1, KR_RNG_SIMULATOR, 2, 0);
    for (int i = 0; i < 100; i++) cr_assert_eq(kr_dist_sample(&d, r), 3.5);
    kr_rng_destroy(r);
    kr_dist_fini(&d);
}

Test(dist, degenerate_forms_are_exact)
{
    const kr_dist_desc_t descs[] = {
        {.kind = KR_DIST_CONSTANT, .value = 0.3},
        {.kind = KR_DIST_UNIFORM, .min = 0.3, .max = 0.3},
        {.kind = KR_DIST_NORMAL, .mean = 0.3, .sd = 0},
        {.kind = KR_DIST_TRIANGULAR, .min = 0.3, .mode = 0.3, .max = 0.3},
    };
    kr_rng_t *r = kr_rng_create(5, KR_RNG_SIMULATOR, 5, 0);
    for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++) {
        kr_dist_t d;
        cr_assert_eq(kr_dist_init(&d, &descs[i]), KR_OK);
        for (int j = 0; j < 1000; j++) cr_assert_eq(kr_dist_sample(&d, r), 0.3, "desc %zu", i);
        cr_assert_eq(kr_dist_sample_ticks(&d, r, KR_PRECISION_DEFAULT), 300000);
        kr_dist_fini(&d);
    }
    /* lognormal with sd 0 is its mean up to the exp/log round trip */
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &(kr_dist_desc_t){.kind = KR_DIST_LOGNORMAL, .mean = 4, .sd = 0}), KR_OK);
    cr_assert_lt(fabs(kr_dist_sample(&d, r) - 4), 1e-14);
    kr_dist_fini(&d);
    kr_rng_destroy(r);
}

Test(dist, bernoulli_edges)
{
    kr_rng_t *r = kr_rng_create(6, KR_RNG_SIMULATOR, 6, 0);
    kr_dist_t zero, one;
    cr_assert_eq(kr_dist_init(&zero, &(kr_dist_desc_t){.kind = KR_DIST_BERNOULLI, .p = 0}), KR_OK);
    cr_assert_eq(kr_dist_init(&one, &(kr_dist_desc_t){.kind = KR_DIST_BERNOULLI, .p = 1}), KR_OK);
    for (int i = 0; i < 10000; i++) {
        cr_assert_eq(kr_dist_sample(&zero, r), 0);
        cr_assert_eq(kr_dist_sample(&one, r), 1);
    }
    kr_dist_fini(&zero);
    kr_dist_fini(&one);
    kr_rng_destroy(r);
}

Test(dist, same_key_same_samples)
{
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &(kr_dist_desc_t){.kind = KR_DIST_GAMMA, .shape = 1.7, .scale = 3}), KR_OK);
    kr_rng_t *a = kr_rng_create(99, KR_RNG_AGENT, 1234, 56);
    kr_rng_t *b = kr_rng_create(99, KR_RNG_AGENT, 1234, 56);
    for (int i = 0; i < 1000; i++) cr_assert_eq(kr_dist_sample(&d, a), kr_dist_sample(&d, b));
    kr_rng_destroy(a);
    kr_rng_destroy(b);
    kr_dist_fini(&d);
}

Test(dist, sample_ticks_rounds_up_and_clamps)
{
    kr_rng_t *r = kr_rng_create(7, KR_RNG_SIMULATOR, 7, 0);
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, &(kr_dist_desc_t){.kind = KR_DIST_NORMAL, .mean = 0, .sd = 1}), KR_OK);
    int zeros = 0;
    for (int i = 0; i < 10000; i++) {
        kr_rng_state_t st;
        kr_rng_save(r, &st);
        double x = kr_dist_sample(&d, r);
        cr_assert_eq(kr_rng_restore(r, &st), KR_OK);
        kr_time_t t = kr_dist_sample_ticks(&d, r, 1000);
        cr_assert_eq(t, kr_time_delay_ticks(x, 1000));
        if (x <= 0) {
            cr_assert_eq(t, 0);
            zeros++;
        } else {
            cr_assert_geq((double)t, x * 1000 - 1e-9);
            cr_assert_lt((double)t, x * 1000 + 1);
        }
    }
    cr_assert_gt(zeros, 4000); /* about half the draws are negative */
    kr_dist_fini(&d);
    kr_rng_destroy(r);
}

typedef struct bad_case {
    kr_dist_desc_t desc;
    const char *message; /* expected substring of kr_last_error() */
} bad_case_t;

Test(dist, validation_refuses_with_message)
{
    static const double v2[] = {1, 2}, w_neg[] = {1, -1}, w_zero[] = {0, 0}, w_inf[] = {1, INFINITY},
                        v_nan[] = {NAN, 1}, w_ok[] = {1, 1}, w_huge[] = {DBL_MAX, DBL_MAX};
    const bad_case_t cases[] = {
        {{.kind = KR_DIST_NONE}, "unknown kind"},
        {{.kind = (kr_dist_kind_t)99}, "unknown kind 99"},
        {{.kind = KR_DIST_CONSTANT, .value = INFINITY}, "constant: value inf is not a finite number"},
        {{.kind = KR_DIST_CONSTANT, .value = NAN}, "constant: value nan is not a finite number"},
        {{.kind = KR_DIST_UNIFORM, .min = 5, .max = 3}, "uniform: min 5 is greater than max 3"},
        {{.kind = KR_DIST_UNIFORM, .min = NAN, .max = 3}, "uniform: min nan is not a finite number"},
        {{.kind = KR_DIST_UNIFORM, .min = 0, .max = -INFINITY}, "uniform: max -inf is not a finite number"},
        {{.kind = KR_DIST_UNIFORM, .min = -DBL_MAX, .max = DBL_MAX}, "uniform: the range from min"},
        {{.kind = KR_DIST_EXPONENTIAL, .mean = 0}, "exponential: mean 0 must be greater than 0"},
        {{.kind = KR_DIST_EXPONENTIAL, .mean = -2}, "exponential: mean -2 must be greater than 0"},
        {{.kind = KR_DIST_EXPONENTIAL, .mean = INFINITY}, "exponential: mean inf is not a finite number"},
        {{.kind = KR_DIST_NORMAL, .mean = 1, .sd = -1}, "normal: sd -1 is negative"},
        {{.kind = KR_DIST_NORMAL, .mean = NAN, .sd = 1}, "normal: mean nan is not a finite number"},
        {{.kind = KR_DIST_NORMAL, .mean = 0, .sd = INFINITY}, "normal: sd inf is not a finite number"},
        {{.kind = KR_DIST_LOGNORMAL, .mean = 0, .sd = 1}, "lognormal: mean 0 must be greater than 0"},
        {{.kind = KR_DIST_LOGNORMAL, .mean = -1, .sd = 1}, "lognormal: mean -1 must be greater than 0"},
        {{.kind = KR_DIST_LOGNORMAL, .mean = 1, .sd = -0.5}, "lognormal: sd -0.5 is negative"},
        {{.kind = KR_DIST_LOGNORMAL, .mean = 1e-300, .sd = 1e300}, "lognormal: sd 1e+300 is too large for mean 1e-300"},
        {{.kind = KR_DIST_TRIANGULAR, .min = 0, .mode = 7, .max = 5}, "triangular: mode 7 is outside [min 0, max 5]"},
        {{.kind = KR_DIST_TRIANGULAR, .min = 0, .mode = -1, .max = 5}, "triangular: mode -1 is outside"},
        {{.kind = KR_DIST_TRIANGULAR, .min = 6, .mode = 5, .max = 5}, "triangular: min 6 is greater than max 5"},
        {{.kind = KR_DIST_TRIANGULAR, .min = 0, .mode = NAN, .max = 5}, "triangular: mode nan is not a finite number"},
        {{.kind = KR_DIST_ERLANG, .k = 2.5, .mean = 1}, "erlang: k 2.5 must be a whole number of at least 1"},
        {{.kind = KR_DIST_ERLANG, .k = 0, .mean = 1}, "erlang: k 0 must be a whole number of at least 1"},
        {{.kind = KR_DIST_ERLANG, .k = -3, .mean = 1}, "erlang: k -3 must be"},
        {{.kind = KR_DIST_ERLANG, .k = INFINITY, .mean = 1}, "erlang: k inf is not a finite number"},
        {{.kind = KR_DIST_ERLANG, .k = 2, .mean = 0}, "erlang: mean 0 must be greater than 0"},
        {{.kind = KR_DIST_GAMMA, .shape = 0, .scale = 1}, "gamma: shape 0 must be greater than 0"},
        {{.kind = KR_DIST_GAMMA, .shape = 1, .scale = -1}, "gamma: scale -1 must be greater than 0"},
        {{.kind = KR_DIST_GAMMA, .shape = 1, .scale = NAN}, "gamma: scale nan is not a finite number"},
        {{.kind = KR_DIST_GAMMA, .shape = 1e200, .scale = 1e200}, "gamma: shape 1e+200 times scale 1e+200"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = w_ok, .count = 0}, "discrete: values is empty"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = NULL, .count = 2}, "discrete: weights is missing"},
        {{.kind = KR_DIST_DISCRETE, .values = NULL, .weights = w_ok, .count = 2}, "discrete: values is missing"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = w_neg, .count = 2}, "discrete: weights[1] -1 is negative"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = w_zero, .count = 2}, "discrete: weights sum to 0"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = w_inf, .count = 2},
         "discrete: weights[1] inf is not a finite number"},
        {{.kind = KR_DIST_DISCRETE, .values = v_nan, .weights = w_ok, .count = 2},
         "discrete: values[0] nan is not a finite number"},
        {{.kind = KR_DIST_DISCRETE, .values = v2, .weights = w_huge, .count = 2}, "discrete: weights sum past"},
        {{.kind = KR_DIST_POISSON, .mean = -1}, "poisson: mean -1 is negative"},
        {{.kind = KR_DIST_POISSON, .mean = 1e10}, "poisson: mean 1e+10 is above the largest supported"},
        {{.kind = KR_DIST_POISSON, .mean = NAN}, "poisson: mean nan is not a finite number"},
        {{.kind = KR_DIST_BERNOULLI, .p = 1.5}, "bernoulli: p 1.5 is outside [0, 1]"},
        {{.kind = KR_DIST_BERNOULLI, .p = -0.1}, "bernoulli: p -0.1 is outside [0, 1]"},
        {{.kind = KR_DIST_BERNOULLI, .p = NAN}, "bernoulli: p nan is not a finite number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kr_dist_t d;
        memset(&d, 0xab, sizeof d);
        kr_clear_error();
        cr_assert_eq(kr_dist_init(&d, &cases[i].desc), KR_ERR_INVALID_ARG, "case %zu (%s) accepted", i,
                     cases[i].message);
        cr_assert(strstr(kr_last_error(), cases[i].message), "case %zu: message \"%s\", want \"%s\"", i,
                  kr_last_error(), cases[i].message);
        cr_assert_eq(d.kind, KR_DIST_NONE);
        cr_assert_null(d.values);
        cr_assert_null(d.table);
        kr_dist_fini(&d); /* harmless after a failed init */
    }
    cr_assert_eq(kr_dist_init(NULL, &cases[0].desc), KR_ERR_INVALID_ARG);
    kr_dist_t d;
    cr_assert_eq(kr_dist_init(&d, NULL), KR_ERR_INVALID_ARG);
    kr_dist_fini(NULL);
}

Test(dist, boundary_parameters_accepted)
{
    const double v[] = {4}, w[] = {0.5};
    const kr_dist_desc_t ok[] = {
        {.kind = KR_DIST_CONSTANT, .value = -1e300},
        {.kind = KR_DIST_UNIFORM, .min = 3, .max = 3},
        {.kind = KR_DIST_NORMAL, .mean = -5, .sd = 0},
        {.kind = KR_DIST_LOGNORMAL, .mean = 1e-9, .sd = 0},
        {.kind = KR_DIST_TRIANGULAR, .min = 1, .mode = 1, .max = 2},
        {.kind = KR_DIST_ERLANG, .k = 1, .mean = 1e-6},
        {.kind = KR_DIST_GAMMA, .shape = 1e-3, .scale = 1e3},
        {.kind = KR_DIST_DISCRETE, .values = v, .weights = w, .count = 1},
        {.kind = KR_DIST_POISSON, .mean = 0},
        {.kind = KR_DIST_POISSON, .mean = 1e9},
        {.kind = KR_DIST_BERNOULLI, .p = 0},
        {.kind = KR_DIST_BERNOULLI, .p = 1},
    };
    kr_rng_t *r = kr_rng_create(8, KR_RNG_SIMULATOR, 8, 0);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kr_dist_t d;
        cr_assert_eq(kr_dist_init(&d, &ok[i]), KR_OK, "case %zu: %s", i, kr_last_error());
        for (int j = 0; j < 100; j++) cr_assert(isfinite(kr_dist_sample(&d, r)), "case %zu", i);
        kr_dist_fini(&d);
        cr_assert_eq(d.kind, KR_DIST_NONE);
    }
    kr_rng_destroy(r);
}

Test(dist, names)
{
    const char *names[] = {"constant", "uniform", "exponential", "normal", "lognormal", "triangular",
                           "erlang", "gamma", "discrete", "poisson", "bernoulli"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        kr_dist_kind_t k = kr_dist_kind_from_name(names[i]);
        cr_assert_neq(k, KR_DIST_NONE, "%s", names[i]);
        cr_assert_str_eq(kr_dist_kind_name(k), names[i]);
    }
    cr_assert_eq(kr_dist_kind_from_name("exponential"), KR_DIST_EXPONENTIAL);
    cr_assert_eq(kr_dist_kind_from_name("Exponential"), KR_DIST_NONE);
    cr_assert_eq(kr_dist_kind_from_name("weibull"), KR_DIST_NONE);
    cr_assert_eq(kr_dist_kind_from_name(""), KR_DIST_NONE);
    cr_assert_eq(kr_dist_kind_from_name(NULL), KR_DIST_NONE);
    cr_assert_null(kr_dist_kind_name(KR_DIST_NONE));
    cr_assert_null(kr_dist_kind_name((kr_dist_kind_t)99));
    cr_assert_null(kr_dist_kind_name((kr_dist_kind_t)-1));
}
