/* Replications on one process (runtime/replications.c): the seed of each
 * replication, pooling against figures computed by hand, M/M/1 replications
 * whose pooled 95% interval covers the theoretical mean, and the sweep's
 * number formatting. Several ranks: tests/cli/test_cli_mpi.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/replications.h"
#include "runtime/sweep.h"
#include "model_text.h"

TestSuite(replications, .fini = mt_cleanup);

Test(replications, seeds_are_stable_distinct_and_start_with_the_model_seed)
{
    cr_assert_eq(kr__replication_seed(1, 0), 1);
    cr_assert_eq(kr__replication_seed(987654321, 0), 987654321);
    /* splitmix64 from state 1 (its first two outputs), top bit cleared:
     * values from an independent implementation, so that a change of the
     * derivation (which would change every published replication) fails. */
    cr_assert_eq(kr__replication_seed(1, 1), UINT64_C(1227844342346046657));
    cr_assert_eq(kr__replication_seed(1, 2), UINT64_C(4533873174211652711));
    cr_assert_eq(kr__replication_seed(0, 1), UINT64_C(7070836379803831727));
    enum { N = 2000 };
    static uint64_t seen[N];
    for (uint64_t r = 0; r < N; r++) {
        seen[r] = kr__replication_seed(42, r);
        cr_assert_leq(seen[r], UINT64_C(0x7fffffffffffffff), "a seed a model file can hold");
        for (uint64_t q = 0; q < r; q++) cr_assert_neq(seen[q], seen[r], "replications %llu and %llu",
                                                       (unsigned long long)q, (unsigned long long)r);
    }
}

/* A record as kr__replications_run makes them: one simulator "s". */
static json_t *record(double a, json_t *b)
{
    return json_pack("{s:i, s:[{s:s, s:{s:f, s:o, s:s}}]}", "replication", 0, "simulators", "name", "s", "stats",
                     "a", a, "b", b, "label", "text");
}

/* Values far from zero keep their spread: 1e9 + small parts, against the
 * sd of the parts alone (the differences 1e9 + x - 1e9 are exact here).
 * One pass of Welford's update was off by some 2e-7. */
Test(replications, pooling_keeps_the_sd_of_values_far_from_zero)
{
    json_t *recs = json_array();
    const double parts[] = { 0.125, 0.75, 0.5, 0.875, 0.25, 0.0625 };
    double mean = 0, squares = 0;
    for (int i = 0; i < 6; i++) {
        json_array_append_new(recs, record(1e9 + parts[i], json_integer(i)));
        mean += parts[i] / 6;
    }
    for (int i = 0; i < 6; i++) squares += (parts[i] - mean) * (parts[i] - mean);
    json_t *pooled = kr__replications_pool(recs);
    json_t *a = json_object_get(json_object_get(json_array_get(pooled, 0), "stats"), "a");
    double sd = json_real_value(json_object_get(a, "sd"));
    cr_assert(fabs(sd - sqrt(squares / 5)) <= 1e-12 * sqrt(squares / 5), "sd %.17g, exact %.17g", sd,
              sqrt(squares / 5));
    cr_assert_float_eq(json_real_value(json_object_get(a, "mean")), 1e9 + mean, 1e-6);
    json_decref(pooled);
    json_decref(recs);
}

Test(replications, pooling_matches_a_hand_computation)
{
    json_t *recs = json_array();
    const double xs[] = { 1.0, 2.0, 4.0, 8.0, 5.0 };
    for (int i = 0; i < 5; i++) {
        json_array_append_new(recs, record(xs[i], i == 2 ? json_null() : json_integer(i)));
    }
    json_t *pooled = kr__replications_pool(recs);
    cr_assert(pooled);
    json_t *stats = json_object_get(json_array_get(pooled, 0), "stats");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(pooled, 0), "name")), "s");
    cr_assert_null(json_object_get(stats, "label"), "strings are not pooled");
    json_t *a = json_object_get(stats, "a");
    /* mean 4, sample variance (9+4+0+16+1)/4 = 7.5, t(0.975, 4) = 2.7764451051977987 */
    cr_assert_float_eq(json_real_value(json_object_get(a, "mean")), 4.0, 1e-15);
    cr_assert_float_eq(json_real_value(json_object_get(a, "sd")), sqrt(7.5), 1e-14);
    cr_assert_float_eq(json_real_value(json_object_get(a, "ci95")), 2.7764451051977987 * sqrt(7.5) / sqrt(5.0), 1e-12);
    cr_assert_eq(json_integer_value(json_object_get(a, "n")), 5);
    /* b: integers 0, 1, 3, 4 (null in replication 2 is skipped) */
    json_t *b = json_object_get(stats, "b");
    cr_assert_eq(json_integer_value(json_object_get(b, "n")), 4);
    cr_assert_float_eq(json_real_value(json_object_get(b, "mean")), 2.0, 1e-15);
    json_decref(pooled);
    /* One replication: a mean, no spread */
    json_t *one = json_array();
    json_array_append(one, json_array_get(recs, 0));
    pooled = kr__replications_pool(one);
    a = json_object_get(json_object_get(json_array_get(pooled, 0), "stats"), "a");
    cr_assert_float_eq(json_real_value(json_object_get(a, "mean")), 1.0, 1e-15);
    cr_assert(json_is_null(json_object_get(a, "sd")) && json_is_null(json_object_get(a, "ci95")));
    json_decref(pooled);
    json_decref(one);
    json_decref(recs);
}

static kr__model_file_t *load_text(const char *json)
{
    kr__model_file_t *f = mt_load(json, NULL);
    cr_assert(f, "%s", kr_last_error());
    return f;
}

/* M/M/1, lambda 0.9, mu 1: W = 1 / (mu - lambda) = 10, utilisation 0.9. */
static const char *const mm1 =
    "{\"seed\": 3, \"end_time\": 30000, \"simulators\": [{\"name\": \"mm1\", \"kind\": \"sqss\", \"params\": {"
    "\"arrival\": {\"dist\": \"exponential\", \"mean\": 1.1111111111111112},"
    "\"service\": {\"dist\": \"exponential\", \"mean\": 1}, \"capacity\": 100000, \"warmup\": 3000}}]}";

Test(replications, mm1_pooled_interval_covers_the_theory, .timeout = 120)
{
    kr__model_file_t *f = load_text(mm1);
    const uint32_t R = 12;
    json_t *results = NULL;
    kr_status_t st = kr__replications_run(&(kr__replications_desc_t){ .points = &f, .point_count = 1,
                                                                     .replications = R, .ranks = 1 }, &results, NULL);
    cr_assert_eq(st, KR_OK, "%s", kr_last_error());
    cr_assert_eq(json_array_size(results), R);
    cr_assert_eq(f->seed, 3, "the model seed is restored");
    for (uint32_t r = 0; r < R; r++) {
        json_t *rec = json_array_get(results, r);
        cr_assert_eq(json_integer_value(json_object_get(rec, "replication")), r);
        cr_assert_eq((uint64_t)json_integer_value(json_object_get(rec, "seed")), kr__replication_seed(3, r));
        if (r) cr_assert_str_neq(json_string_value(json_object_get(rec, "checksum")),
                                 json_string_value(json_object_get(json_array_get(results, 0), "checksum")),
                                 "replication %u repeats replication 0", r);
    }
    json_t *pooled = kr__replications_pool(results);
    json_t *stats = json_object_get(json_array_get(pooled, 0), "stats");
    json_t *w = json_object_get(stats, "mean_time_in_system"), *u = json_object_get(stats, "utilisation");
    double wm = json_real_value(json_object_get(w, "mean")), wc = json_real_value(json_object_get(w, "ci95"));
    double um = json_real_value(json_object_get(u, "mean")), uc = json_real_value(json_object_get(u, "ci95"));
    cr_assert_eq(json_integer_value(json_object_get(w, "n")), R);
    cr_assert(fabs(wm - 10.0) <= wc, "W: %g +- %g does not cover 10", wm, wc);
    cr_assert(wc > 0 && wc < 1.5, "W's interval is informative: +- %g", wc);
    cr_assert(fabs(um - 0.9) <= uc, "utilisation: %g +- %g does not cover 0.9", um, uc);
    /* The same replications again: bit for bit the same pool. */
    json_t *again = NULL;
    st = kr__replications_run(&(kr__replications_desc_t){ .points = &f, .point_count = 1, .replications = R,
                                                        .ranks = 1 }, &again, NULL);
    cr_assert_eq(st, KR_OK);
    json_t *pooled2 = kr__replications_pool(again);
    cr_assert(json_equal(pooled, pooled2));
    json_decref(pooled2);
    json_decref(again);
    json_decref(pooled);
    json_decref(results);
    kr__model_file_free(f);
}

Test(replications, varied_keys_must_exist)
{
    const char *path = mt_write(mm1);
    const char *varies[] = { "simulators.mm1.params.capacity=7" };
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){
        .path = path, .varies = varies, .vary_count = 1, .register_builtin = kr__models_register_builtin });
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(json_integer_value(json_object_get(f->sims[0].params, "capacity")), 7);
    kr__model_file_free(f);
    /* --set may add a key; --vary may not */
    varies[0] = "simulators.mm1.params.servers=2";
    cr_assert_null(kr__model_file_load(&(kr__model_file_desc_t){
        .path = path, .varies = varies, .vary_count = 1, .register_builtin = kr__models_register_builtin }));
    mt_expect(KR_ERR_INVALID_ARG, "simulators.mm1.params.servers", "an existing key (--vary)", "nothing");
}

Test(replications, group_plan)
{
    kr__model_file_t *f = load_text(mm1);
    int groups, g;
    kr__replications_desc_t d = { .points = &f, .point_count = 1, .replications = 10, .ranks = 4 };
    cr_assert_eq(kr__replications_plan(&d, &groups, &g), KR_OK);
    /* one simulator: a replication uses one rank, four groups */
    cr_assert_eq(g, 1);
    cr_assert_eq(groups, 4);
    d.group_ranks = 3;
    cr_assert_eq(kr__replications_plan(&d, &groups, &g), KR_OK);
    cr_assert_eq(g, 3);
    cr_assert_eq(groups, 1);
    /* never more groups than replications: 2 on 4 ranks leaves 2 ranks
     * idle (and warned about), not 4 groups with 2 silent */
    d.group_ranks = 0;
    d.replications = 2;
    cr_assert_eq(kr__replications_plan(&d, &groups, &g), KR_OK);
    cr_assert_eq(g, 1);
    cr_assert_eq(groups, 2);
    d.replications = 10;
    d.group_ranks = 5;
    cr_assert_eq(kr__replications_plan(&d, &groups, &g), KR_ERR_INVALID_ARG);
    cr_assert_str_eq(kr_last_error(), "--group-ranks: expected a whole number from 1 to 4 (the ranks), found 5");
    d.group_ranks = 0;
    d.replications = 0;
    cr_assert_eq(kr__replications_plan(&d, &groups, &g), KR_ERR_INVALID_ARG);
    kr__model_file_free(f);
}

Test(replications, sweep_numbers_are_short_and_exact)
{
    char s[64];
    const double xs[] = { 10, 370, 0.9, 1.1111111111111112, 1e-7, 123456789012345678.0, -2.5, 0.1 + 0.2 };
    const char *want[] = { "10", "370", "0.9", "1.1111111111111112", "1e-07", "1.2345678901234568e+17", "-2.5",
                           "0.30000000000000004" };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        kr__sweep_format_double(s, sizeof s, xs[i]);
        cr_assert_str_eq(s, want[i]);
        cr_assert_eq(strtod(s, NULL), xs[i]);
    }
    kr__sweep_format_double(s, sizeof s, NAN);
    cr_assert_str_empty(s);
}
