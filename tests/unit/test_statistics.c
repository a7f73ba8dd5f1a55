/* The statistics API against known values: tallies (also with a large
 * offset, where a naive sum of squares loses every digit), time-weighted
 * averages, batch means (its batching and the coverage of its interval),
 * histograms and quantiles, and what they write into a kind's report. */
#include <criterion/criterion.h>
#include <gsl/gsl_randist.h>
#include <math.h>

#include "kairos/kairos.h"
#include "runtime/model_file.h"

Test(statistics, tally_known_values)
{
    kr_tally_t t;
    kr_tally_init(&t);
    cr_assert(isnan(kr_tally_mean(&t)) && isnan(kr_tally_variance(&t)) && isnan(kr_tally_min(&t)));
    for (int i = 1; i <= 10; i++) kr_tally_add(&t, i);
    cr_assert_eq(t.count, 10);
    cr_assert_float_eq(kr_tally_mean(&t), 5.5, 1e-12);
    cr_assert_float_eq(kr_tally_variance(&t), 55.0 / 6.0, 1e-12);
    cr_assert_float_eq(kr_tally_sd(&t), sqrt(55.0 / 6.0), 1e-12);
    cr_assert_eq(kr_tally_min(&t), 1);
    cr_assert_eq(kr_tally_max(&t), 10);
    kr_tally_t one;
    kr_tally_init(&one);
    kr_tally_add(&one, -3);
    cr_assert(isnan(kr_tally_variance(&one)));
    cr_assert_eq(kr_tally_min(&one), -3);
    cr_assert_eq(kr_tally_max(&one), -3);
}

Test(statistics, tally_keeps_precision_with_a_large_offset)
{
    kr_tally_t t;
    kr_tally_init(&t);
    for (int i = 1; i <= 10; i++) kr_tally_add(&t, 1e9 + i);
    cr_assert_float_eq(kr_tally_variance(&t), 55.0 / 6.0, 1e-6);
    cr_assert_float_eq(kr_tally_mean(&t), 1e9 + 5.5, 1e-6);
}

Test(statistics, time_weighted_average)
{
    kr_timeavg_t a;
    kr_timeavg_init(&a, 0, 0);
    kr_timeavg_set(&a, 2, 3);
    kr_timeavg_set(&a, 5, 1);
    cr_assert_float_eq(kr_timeavg_mean(&a, 10), 1.4, 1e-12);   /* (0*2 + 3*3 + 1*5) / 10 */
    cr_assert_float_eq(kr_timeavg_mean(&a, 5), 9.0 / 5.0, 1e-12);
    cr_assert_eq(a.max, 3);
    cr_assert_eq(a.min, 0);
    /* an out-of-order change counts from the last change */
    kr_timeavg_set(&a, 4, 7);
    cr_assert_float_eq(kr_timeavg_mean(&a, 6), (9.0 + 7.0) / 6.0, 1e-12);
    /* no time passed: the current value */
    kr_timeavg_t b;
    kr_timeavg_init(&b, 100, 4);
    cr_assert_eq(kr_timeavg_mean(&b, 100), 4);
    /* a warm-up reset keeps the value, drops the past */
    kr_timeavg_set(&b, 200, 2);
    kr_timeavg_reset(&b, 300);
    cr_assert_float_eq(kr_timeavg_mean(&b, 400), 2.0, 1e-12);
}

Test(statistics, batch_means_batching)
{
    kr_batchmeans_t b;
    kr_batchmeans_init(&b);
    cr_assert(isnan(kr_batchmeans_halfwidth(&b)));
    for (int i = 0; i < 64; i++) kr_batchmeans_add(&b, i);
    cr_assert_eq(kr_batchmeans_batches(&b), 32);
    cr_assert_eq(b.batch_size, 2);
    for (int i = 64; i < 1000; i++) kr_batchmeans_add(&b, i);
    cr_assert(kr_batchmeans_batches(&b) >= KR_BATCH_SLOTS / 2 && kr_batchmeans_batches(&b) < KR_BATCH_SLOTS);
    cr_assert_float_eq(kr_batchmeans_mean(&b), 499.5, 1e-9);
    /* the full batches cover a prefix of the data, in order */
    double covered = (double)b.batch_size * kr_batchmeans_batches(&b);
    double sum = 0;
    for (uint32_t i = 0; i < kr_batchmeans_batches(&b); i++) sum += b.sums[i];
    cr_assert_float_eq(sum, covered * (covered - 1) / 2, 1e-6);
}

/* For independent normal data the 95% interval covers the true mean in
 * about 95% of runs. */
Test(statistics, batch_means_interval_covers)
{
    kr_rng_t *r = kr_rng_create(11, KR_RNG_AGENT, 1, 0);
    int covered = 0, runs = 200;
    for (int k = 0; k < runs; k++) {
        kr_batchmeans_t b;
        kr_batchmeans_init(&b);
        for (int i = 0; i < 4000; i++) kr_batchmeans_add(&b, 10.0 + gsl_ran_gaussian(kr_rng_gsl(r), 2.0));
        double h = kr_batchmeans_halfwidth(&b);
        cr_assert(h > 0 && h < 0.2, "half-width %g", h);
        if (fabs(kr_batchmeans_mean(&b) - 10.0) <= h) covered++;
    }
    kr_rng_destroy(r);
    /* binomial(200, 0.95): 5 standard deviations is about 15 runs */
    cr_assert(covered >= 175 && covered <= 200, "covered %d of %d", covered, runs);
}

Test(statistics, histogram_and_quantiles)
{
    kr_histogram_t h;
    cr_assert_eq(kr_histogram_init(&h, 1, 1, 4), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_histogram_init(&h, 0, 1, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_histogram_init(&h, 0, NAN, 3), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_histogram_init(&h, 0, 100, 10), KR_OK);
    cr_assert(isnan(kr_histogram_quantile(&h, 0.5)));
    for (int i = 0; i < 100; i++) kr_histogram_add(&h, i + 0.5);
    kr_histogram_add(&h, -1);
    kr_histogram_add(&h, 100);   /* the top edge is outside */
    kr_histogram_add(&h, NAN);
    cr_assert_eq(h.under, 2);
    cr_assert_eq(h.over, 1);
    cr_assert_eq(h.total, 103);
    for (size_t i = 0; i < 10; i++) cr_assert_eq(h.counts[i], 10);
    cr_assert_float_eq(kr_histogram_quantile(&h, 0.5), 50.0, 1e-9);
    cr_assert_float_eq(kr_histogram_quantile(&h, 0.25), 25.0, 1e-9);
    cr_assert_float_eq(kr_histogram_quantile(&h, 1.0), 100.0, 1e-9);
    kr_histogram_fini(&h);
}

Test(statistics, reports_carry_them)
{
    kr_report_t *r = kr__report_open();
    kr_tally_t t;
    kr_tally_init(&t);
    kr_tally_add(&t, 2);
    kr_tally_add(&t, 4);
    kr_report_tally(r, "wait", &t);
    kr_histogram_t h;
    cr_assert_eq(kr_histogram_init(&h, 0, 4, 2), KR_OK);
    kr_histogram_add(&h, 1);
    kr_report_histogram(r, "hist", &h);
    double ts[2] = { 0, 1.5 }, vs[2] = { 20, NAN };
    kr_report_series(r, "temp", ts, vs, 2);
    json_t *j = kr__report_json(r);
    cr_assert_eq(json_integer_value(json_object_get(j, "wait_count")), 2);
    cr_assert_float_eq(json_real_value(json_object_get(j, "wait_mean")), 3.0, 1e-12);
    cr_assert_float_eq(json_real_value(json_object_get(j, "wait_sd")), sqrt(2.0), 1e-12);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(json_object_get(j, "hist"), "counts"), 0)), 1);
    cr_assert(json_is_null(json_array_get(json_object_get(json_object_get(j, "temp"), "value"), 1)));
    kr_histogram_fini(&h);
    kr__report_close(r);
}
