/* The sqss kind against queueing theory, run from model files as a user
 * would: M/M/1 with lambda = 0.9 and mu = 1 (the 95% interval of the mean
 * time in system covers 1/(mu - lambda) = 10, and Little's law holds), the
 * tutorial's deterministic line (about 359 products in an hour), a skipping
 * source when the queue is full, several servers (M/M/2 against its
 * closed form), determinism, and its params refused with clear messages. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "runtime/model_file.h"
#include "runtime/run.h"
#include "models/builtin.h"

typedef struct result {
    json_t *stats;      /* the kind's report */
    uint64_t checksum;
    kr_status_t status;
    char error[512];
} result_t;

static result_t run_text(const char *json, const char *const *sets, size_t set_count)
{
    char path[] = "/tmp/kairos-sqss-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    result_t r = { 0 };
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = path, .sets = sets, .set_count = set_count,
                                                                     .register_builtin = kr__models_register_builtin });
    kr_model_t *m = f ? kr__model_file_build(f, NULL) : NULL;
    r.status = !f || !m ? kr_last_status() : kr_model_run(m);
    if (r.status) {
        snprintf(r.error, sizeof r.error, "%s", kr_last_error());
    } else {
        kr_report_t *rep = kr__report_open();
        kr__model_file_kind(f, 0)->report(kr_model_sim(m, 0), rep);
        r.stats = json_deep_copy(kr__report_json(rep));
        kr__report_close(rep);
        r.checksum = kr__run_checksum(f, m);
    }
    kr_model_destroy(m);
    kr__model_file_free(f);
    unlink(path);
    return r;
}

static double num(const result_t *r, const char *key)
{
    json_t *v = json_object_get(r->stats, key);
    cr_assert(json_is_number(v), "no figure %s", key);
    return json_number_value(v);
}

static const char *const mm1 =
    "{\"seed\": 7, \"end_time\": 400000, \"simulators\": [{\"name\": \"mm1\", \"kind\": \"sqss\", \"params\": {"
    "\"arrival\": {\"dist\": \"exponential\", \"mean\": 1.1111111111111112},"
    "\"service\": {\"dist\": \"exponential\", \"mean\": 1}, \"capacity\": 1000000, \"warmup\": 10000}}]}";

Test(sqss, mm1_interval_covers_the_theory_and_littles_law_holds, .timeout = 120)
{
    result_t r = run_text(mm1, NULL, 0);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    double w = num(&r, "mean_time_in_system"), h = num(&r, "ci95_time_in_system");
    cr_assert(h > 0 && h < 2.0, "half-width %g", h);
    cr_assert(fabs(w - 10.0) <= h, "W = %g +- %g does not cover 10", w, h);
    /* Little: L = lambda W, lambda the throughput of the measured span */
    double l = num(&r, "mean_in_system"), lambda = num(&r, "throughput");
    cr_assert(fabs(l - lambda * w) <= 0.02 * l, "L = %g, lambda W = %g", l, lambda * w);
    cr_assert(fabs(lambda - 0.9) < 0.01, "throughput %g", lambda);
    cr_assert(fabs(num(&r, "utilisation") - 0.9) < 0.01, "utilisation %g", num(&r, "utilisation"));
    /* Lq = rho^2 / (1 - rho) = 8.1 for M/M/1, within the run's noise */
    cr_assert(fabs(num(&r, "mean_queue_length") - 8.1) < 1.0, "Lq %g", num(&r, "mean_queue_length"));
    cr_assert_eq(num(&r, "skipped"), 0);
    json_decref(r.stats);
}

Test(sqss, tutorial_line_delivers_about_359_products)
{
    char text[2048];
    FILE *f = fopen("../examples/sqss.json", "r");
    if (!f) f = fopen("examples/sqss.json", "r");
    cr_assert_not_null(f, "examples/sqss.json not found from %s", getcwd(text, sizeof text));
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    result_t r = run_text(text, NULL, 0);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    double received = num(&r, "received");
    cr_assert(fabs(received - 359) <= 1, "received %g", received);
    /* a product every 5 s, one every ~10 s served: the queue fills and
     * about every other generation is skipped */
    cr_assert(num(&r, "skipped") > 300, "skipped %g", num(&r, "skipped"));
    cr_assert_eq(num(&r, "created"), num(&r, "received") + (num(&r, "created") - num(&r, "received")));
    cr_assert(num(&r, "created") - received <= 5 + 1, "at most the queue and the server hold the rest");
    cr_assert(num(&r, "utilisation") > 0.99);
    json_decref(r.stats);
}

Test(sqss, mm2_against_its_closed_form, .timeout = 120)
{
    /* M/M/2, lambda = 1.5, mu = 1: rho = 0.75, W = 1/mu + Lq/lambda with
     * Lq = P0 (lambda/mu)^2 rho / (2 (1 - rho)^2), P0 = 1/7 -> W = 16/7 */
    const char *sets[] = { "simulators.mm1.params.servers=2",
                           "simulators.mm1.params.arrival={\"dist\": \"exponential\", \"mean\": 0.6666666666666666}" };
    result_t r = run_text(mm1, sets, 2);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    double w = num(&r, "mean_time_in_system"), h = num(&r, "ci95_time_in_system");
    cr_assert(fabs(w - 16.0 / 7.0) <= fmax(h, 0.01 * w), "W = %g +- %g, theory %g", w, h, 16.0 / 7.0);
    cr_assert(fabs(num(&r, "utilisation") - 0.75) < 0.01);
    json_decref(r.stats);
}

Test(sqss, same_seed_same_checksum_other_seed_other)
{
    const char *small = "{\"seed\": 3, \"end_time\": 2000, \"simulators\": [{\"name\": \"q\", \"kind\": \"sqss\", "
                        "\"params\": {\"capacity\": 3, \"servers\": 2}}]}";
    result_t a = run_text(small, NULL, 0), b = run_text(small, NULL, 0);
    const char *other[] = { "seed=4" };
    result_t c = run_text(small, other, 1);
    cr_assert_eq(a.status, KR_OK, "%s", a.error);
    cr_assert_eq(a.checksum, b.checksum);
    cr_assert_neq(a.checksum, c.checksum);
    cr_assert(num(&a, "skipped") > 0, "a small queue skips some generations");
    json_decref(a.stats);
    json_decref(b.stats);
    json_decref(c.stats);
}

Test(sqss, params_are_checked)
{
    const char *base = "{\"end_time\": 10, \"simulators\": [{\"name\": \"q\", \"kind\": \"sqss\", \"params\": {}}]}";
    const struct { const char *set, *path, *found; } cases[] = {
        { "simulators.q.params.capacity=0", "simulators[0].params.capacity", "0" },
        { "simulators.q.params.servers=1.5", "simulators[0].params.servers", "1.5" },
        { "simulators.q.params.arrival={\"dist\": \"exponential\"}", "simulators[0].params.arrival.mean", "nothing" },
        { "simulators.q.params.service={\"dist\": \"uniform\", \"min\": 5, \"max\": 3}", "simulators[0].params.service",
          "min 5" },
        { "simulators.q.params.warmup=-1", "simulators[0].params.warmup", "-1" },
        { "simulators.q.params.capcity=4", "simulators[0].params.capcity", "capcity" },
        /* gaps of 0 made products forever at time 0: a hang */
        { "simulators.q.params.arrival={\"dist\": \"constant\", \"value\": 0}", "simulators[0].params.arrival",
          "a distribution with mean 0" },
        { "simulators.q.params.arrival={\"dist\": \"normal\", \"mean\": -1, \"sd\": 0.1}",
          "simulators[0].params.arrival", "a distribution with mean -1" },
        /* below a tick each gap was taken as one: a million products a unit */
        { "simulators.q.params.arrival=5e-324", "simulators[0].params.arrival", "a distribution with mean 4.94066e-324" },
        /* a negative service time was taken as 0, and the run went on */
        { "simulators.q.params.service=-1", "simulators[0].params.service", "a distribution with mean -1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = { cases[i].set };
        result_t r = run_text(base, sets, 1);
        cr_assert_eq(r.status, KR_ERR_INVALID_ARG, "%s: status %d", cases[i].set, r.status);
        cr_assert(strstr(r.error, cases[i].path) && strstr(r.error, "expected") && strstr(r.error, cases[i].found),
                  "%s: %s", cases[i].set, r.error);
    }
}

/* A run that ends at or before the warm-up has no time averages: the reset
 * never came (or came at the last instant), and the figures over [0, end]
 * were reported as if from the warm-up. */
Test(sqss, no_time_averages_when_the_run_ends_by_the_warmup)
{
    const char *base = "{\"end_time\": 100, \"simulators\": [{\"name\": \"q\", \"kind\": \"sqss\", "
                       "\"params\": {\"warmup\": 200}}]}";
    const char *at_end[] = { "end_time=200" }, *after[] = { "end_time=300" };
    for (int k = 0; k < 3; k++) {
        result_t r = run_text(base, k == 1 ? at_end : k == 2 ? after : NULL, k ? 1 : 0);
        cr_assert_eq(r.status, KR_OK, "%s", r.error);
        const char *keys[] = { "mean_queue_length", "mean_in_system", "utilisation" };
        for (int i = 0; i < 3; i++) {
            json_t *v = json_object_get(r.stats, keys[i]);
            if (k < 2) cr_assert(json_is_null(v), "%s with the end %s the warm-up", keys[i], k ? "at" : "before");
            else cr_assert(json_is_number(v), "%s after the warm-up", keys[i]);
        }
        json_decref(r.stats);
    }
}
