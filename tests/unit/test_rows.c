/* The rows kind through the real loader and runtime: totes conserved
 * (generated = received + on the lines + shipped past the end), exact
 * times with constant draws (transit, accumulation behind a slow tote,
 * the sync delay), the snag probability and mean against their
 * parameters, determinism over sync algorithms and seeds, and params
 * refused with clear messages. */
#include <math.h>
#include "model_text.h"
#include "runtime/run.h"

TestSuite(rows, .fini = mt_cleanup);

/* `count` lines feeding one final simulator, promise 1. */
#define ROWS(count, end, params)                                                                          \
    "{'seed': 3, 'end_time': " end ", 'simulators': ["                                                    \
    " {'name': 'line', 'kind': 'rows', 'count': " count ", 'params': {'to': 'final'" params "}},"        \
    " {'name': 'final', 'kind': 'rows', 'params': {'role': 'final'}}],"                                   \
    " 'dependencies': [{'from': 'line[*]', 'to': 'final', 'promise': 1}]}"

typedef struct result {
    kr_status_t status;
    char error[1024];
    int64_t generated, shipped, shipped_late, on_line, passes, snags, received, received_snagged;
    int64_t entities;            /* live entities over every line world */
    uint64_t ship_events;        /* target sides of rows.ship, seen by an observer */
    double mean_snag, mean_lead_time, max_lead_time;
    uint64_t checksum;
} result_t;

static void on_event(void *arg, kr_sim_t *sim, const kr_event_key_t *key, kr_event_type_t type)
{
    (void)key;
    if (!strcmp(kr_model_event_type_name(kr_sim_model(sim), type), "rows.ship")) (*(uint64_t *)arg)++;
}

static int64_t figure(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    cr_assert(json_is_integer(v), "no figure %s", key);
    return json_integer_value(v);
}

static double number(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    cr_assert(json_is_number(v), "no figure %s", key);
    return json_number_value(v);
}

static result_t run_sets(const char *text, const char *const *sets)
{
    result_t r = { 0 };
    size_t n = 0;
    while (sets && sets[n]) n++;
    mt_write(text);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){
        .path = mt_path, .sets = sets, .set_count = n, .register_builtin = kr__models_register_builtin });
    kr_observer_t obs = { .arg = &r.ship_events, .on_event = on_event };
    kr_model_t *m = f ? kr__model_file_build(f, &obs) : NULL;
    r.status = !f || !m ? kr_last_status() : kr_model_run(m);
    if (r.status) {
        snprintf(r.error, sizeof r.error, "%s", kr_last_error());
    } else {
        for (size_t i = 0; i < kr_model_sim_count(m); i++) {
            kr_sim_t *s = kr_model_sim(m, (uint32_t)i);
            kr_report_t *rep = kr__report_open();
            kr__model_file_kind(f, i)->report(s, rep);
            json_t *j = kr__report_json(rep);
            if (!strcmp(json_string_value(json_object_get(j, "role")), "final")) {
                r.received += figure(j, "received");
                r.received_snagged += figure(j, "received_snagged");
                r.mean_lead_time = number(j, "mean_lead_time");
                r.max_lead_time = number(j, "max_lead_time");
            } else {
                r.generated += figure(j, "generated");
                r.shipped += figure(j, "shipped");
                r.shipped_late += figure(j, "shipped_late");
                r.on_line += figure(j, "on_line");
                r.passes += figure(j, "passes");
                r.snags += figure(j, "snags");
                json_t *ms = json_object_get(j, "mean_snag");
                if (json_is_number(ms)) r.mean_snag = json_number_value(ms);
                r.entities += (int64_t)kr_world_entity_count(kr_sim_world(s));
            }
            kr__report_close(rep);
        }
        r.checksum = kr__run_checksum(f, m);
    }
    kr_model_destroy(m);
    kr__model_file_free(f);
    return r;
}

static result_t run1(const char *text, const char *set)
{
    const char *sets[] = { set, NULL };
    return run_sets(text, sets);
}

Test(rows, totes_are_conserved)
{
    result_t r = run1(ROWS("4", "3000", ", 'conveyors': 5, 'delay_probability': 0.2"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert(r.generated > 4 * 600, "generated %lld", (long long)r.generated);
    cr_assert_eq(r.generated, r.shipped + r.on_line, "every tote is shipped or still on its line");
    cr_assert_eq(r.on_line, r.entities, "a tote on a line is one entity of its world");
    cr_assert(r.on_line > 0, "a run that ends mid-shift has totes on the lines");
    cr_assert_eq(r.received, r.shipped - r.shipped_late, "received = shipped, but for those due after the end");
    cr_assert_eq(r.generated, r.received + r.on_line + r.shipped_late, "generated = received + in flight");
    cr_assert_eq(r.ship_events, (uint64_t)r.received, "the final simulator counts every arrival it executes");
    /* a shipped tote crossed all 5 sections, one on a line 1 to 5 of them */
    cr_assert(r.passes >= r.shipped * 5 + r.on_line && r.passes <= (r.shipped + r.on_line) * 5);
}

Test(rows, constant_draws_give_exact_times)
{
    /* A tote every 10 from 10 on, 3 sections of 5, no snags, sync delay 1:
     * each leaves the line 15 after it was made and arrives 16 after. Made
     * at 10 ... 100; those made up to 84 arrive by the end (100), those
     * made at 90 and 100 are still on the line; none is shipped late. */
    result_t r = run1(ROWS("1", "100", ", 'conveyors': 3, 'interval': {'dist': 'constant', 'value': 10},"
                           " 'transit': {'dist': 'constant', 'value': 5}, 'delay_probability': 0"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.generated, 10);
    cr_assert_eq(r.received, 8);
    cr_assert_eq(r.on_line, 2);
    cr_assert_eq(r.shipped_late, 0);
    /* a pass counts as a tote enters a section: the tote made at 90 is on
     * its third (since 100), the one made at 100 on its first */
    cr_assert_eq(r.passes, 8 * 3 + 3 + 1, "passes %lld", (long long)r.passes);
    cr_assert_float_eq(r.mean_lead_time, 16.0, 1e-9);
    cr_assert_float_eq(r.max_lead_time, 16.0, 1e-9);
    /* made at 80: leaves at 95 and is due at 96; with sync_delay 6 it is
     * due at 101, after the end: shipped late, never received */
    r = run1(ROWS("1", "100", ", 'conveyors': 3, 'interval': {'dist': 'constant', 'value': 10},"
                  " 'transit': {'dist': 'constant', 'value': 5}, 'delay_probability': 0, 'sync_delay': 6"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.received, 7);
    cr_assert_eq(r.shipped_late, 1);
    cr_assert_float_eq(r.mean_lead_time, 21.0, 1e-9);
}

Test(rows, a_slow_tote_holds_back_the_ones_behind)
{
    /* One section of 5, spacing 2, a tote every 1 from 1 on (limit 10):
     * tote n leaves at max(n + 5, previous + 2) = 2n + 4, arrives at 2n + 5,
     * after a lead time of n + 5: 6 ... 15, mean 10.5. */
    result_t r = run1(ROWS("1", "1000", ", 'conveyors': 1, 'interval': {'dist': 'constant', 'value': 1},"
                           " 'limit': 10, 'spacing': 2, 'transit': {'dist': 'constant', 'value': 5},"
                           " 'delay_probability': 0"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.received, 10);
    cr_assert_float_eq(r.mean_lead_time, 10.5, 1e-9);
    cr_assert_float_eq(r.max_lead_time, 15.0, 1e-9);
    /* every tote snagged by a constant 3 on each of 4 sections, far apart:
     * 4 x (5 + 3) + 1 */
    r = run1(ROWS("2", "1000", ", 'conveyors': 4, 'interval': {'dist': 'constant', 'value': 100},"
                  " 'transit': {'dist': 'constant', 'value': 5}, 'delay_probability': 1,"
                  " 'delay': {'dist': 'constant', 'value': 3}"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_float_eq(r.mean_lead_time, 33.0, 1e-9);
    cr_assert_eq(r.snags, r.passes);
    cr_assert_eq(r.received_snagged, r.received);
}

Test(rows, snags_follow_their_probability_and_distribution)
{
    /* 3 % of the passes snag for Uniform(1, 10): about 2 x 21,600 totes x
     * 10 sections = 432,000 passes, 12,960 snags (sd 112, so 4.5 sd is
     * 0.12 % of the passes); the mean snag 5.5 (sd of the mean 0.023). */
    result_t r = run1(ROWS("2", "86400", ""), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert(r.passes > 400000, "passes %lld", (long long)r.passes);
    double p = (double)r.snags / (double)r.passes, sd = sqrt(0.03 * 0.97 / (double)r.passes);
    cr_assert(fabs(p - 0.03) < 4.5 * sd, "snag fraction %g (sd %g)", p, sd);
    cr_assert(fabs(r.mean_snag - 5.5) < 0.12, "mean snag %g", r.mean_snag);
    /* a tote of 10 sections snags at least once with 1 - 0.97^10 = 26.3 % */
    double q = (double)r.received_snagged / (double)r.received, sdq = sqrt(0.263 * 0.737 / (double)r.received);
    cr_assert(fabs(q - (1 - pow(0.97, 10))) < 4.5 * sdq, "snagged totes %g", q);
    /* probability 0: no snag at all */
    r = run1(ROWS("2", "2000", ", 'delay_probability': 0"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.snags, 0);
    cr_assert(r.passes > 0);
}

Test(rows, deterministic_and_seeded)
{
    const char *text = ROWS("5", "2000", "");
    result_t a = run1(text, NULL), b = run1(text, NULL), w = run1(text, "sync=window"), c = run1(text, "seed=4");
    cr_assert_eq(a.status, KR_OK, "%s", a.error);
    cr_assert_eq(a.checksum, b.checksum);
    cr_assert_eq(a.checksum, w.checksum, "the same with the window algorithm");
    cr_assert_eq(a.received, w.received);
    cr_assert_neq(a.checksum, c.checksum, "another seed, another run");
}

static void expect_refused(const char *text, const char *set, const char *jpath, const char *expected,
                           const char *found)
{
    result_t r = run1(text, set);
    cr_assert_eq(r.status, KR_ERR_INVALID_ARG, "%s: status %d (%s)", set, (int)r.status, r.error);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
}

Test(rows, params_are_checked)
{
    const char *base = ROWS("2", "100", "");
    expect_refused(base, "simulators.final.params.role=middle", "simulators[1].params.role",
                   "\"line\" or \"final\"", "\"middle\"");
    expect_refused(base, "simulators.line.params.to=nowhere", "simulators[0].params.to",
                   "the name of a simulator", "'nowhere', which is not a simulator of this model");
    expect_refused(base, "simulators.line.params={}", "simulators[0].params.to",
                   "the name of the simulator that takes the parts", "nothing");
    expect_refused(base, "dependencies=[]", "simulators[0].params.to",
                   "a simulator that this one has a dependency to",
                   "'final', but there is no dependency 'line[0]' -> 'final'");
    expect_refused(base, "simulators.line.params.sync_delay=0.5", "simulators[0].params.sync_delay",
                   "a delay >= the promise 1 of 'line[0]' -> 'final'", "0.5");
    expect_refused(base, "simulators.line.params.delay_probability=1.5", "simulators[0].params.delay_probability",
                   "a number >= 0, <= 1", "1.5");
    expect_refused(base, "simulators.line.params.conveyors=0", "simulators[0].params.conveyors",
                   "a whole number >= 1, <= 1000000", "0");
    expect_refused(base, "simulators.line.params.interval={\"dist\":\"constant\",\"value\":0}",
                   "simulators[0].params.interval", "a distribution with a mean of at least one tick (1e-06), or a "
                   "\"limit\"", "a distribution with mean 0 and no limit");
    expect_refused(base, "simulators.line.params.transit={\"dist\":\"normal\",\"mean\":-3,\"sd\":1}",
                   "simulators[0].params.transit", "a distribution of times, with a mean >= 0",
                   "a distribution with mean -3");
    /* a line shipping to a simulator that takes no rows.ship: refused
     * before the run (it failed when the first tote left) */
    expect_refused(base, "simulators.final={\"name\": \"final\", \"kind\": \"sqss\"}", "simulators[0].params.to",
                   "a simulator that receives rows.ship (what this one sends it)",
                   "'final', whose kind does not receive it");
    expect_refused(base, "simulators.final.params.to=line[0]", "simulators[1].params.to",
                   "a parameter of kind 'rows' (role)", "the unknown key \"to\"");
    /* a line's parameter from the table too: a final takes `role` only */
    expect_refused(base, "simulators.final.params.conveyors=3", "simulators[1].params.conveyors",
                   "a parameter of kind 'rows' (role)", "the unknown key \"conveyors\"");
}

Test(rows, the_example_runs_the_issue_model)
{
    /* 50 lines, 10 sections each, 3 % snags of Uniform(1, 10), a day,
     * promise 1: checked through the loader, run for 10 minutes */
    const char *text = mt_read_example("rows.json");
    kr__model_file_t *f = mt_load(text, NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 51);
    cr_assert_float_eq(kr_time_to_units(f->end_time, f->precision), 86400.0, 1e-9);
    kr__model_file_free(f);
    result_t r = run1(text, "end_time=600");
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    /* a tote needs at least 10 x 20 + 1 to arrive; then about one per 4 s
     * per line */
    cr_assert(r.received > 50 * 80 && r.received < 50 * 125, "received %lld", (long long)r.received);
    cr_assert_eq(r.generated, r.received + r.on_line + r.shipped_late);
}

/* A line shipping to a simulator of another kind: that kind does not
 * receive rows.ship (kr_kind_desc_t.receives), so the line's `to` is
 * refused as the model is built (kr_sim_takes), naming both; the shipment
 * was refused only as it was sent, failing the run after its first tote,
 * and before `receives` rows' handler ran on the other kind's state. A
 * line shipping to another line (a rows simulator, which receives it)
 * finds no final's state there and stops the run. */
static void expect_target_refused(const char *text, const char *to, const char *what)
{
    kr__model_file_t *f = mt_load(text, NULL);
    cr_assert(f, "%s: %s", what, kr_last_error());
    cr_assert_null(kr__model_file_build(f, NULL), "%s: built", what);
    char want[160];
    snprintf(want, sizeof want, "simulators[0].params.to: expected a simulator that receives rows.ship (what this "
             "one sends it), found '%s', whose kind does not receive it", to);
    cr_assert(strstr(kr_last_error(), want), "%s: %s", what, kr_last_error());
    kr__model_file_free(f);
}

Test(rows, a_shipment_to_another_kind_is_refused)
{
    expect_target_refused("{'seed': 1, 'end_time': 100, 'simulators': ["
                          " {'name': 'line', 'kind': 'rows', 'params': {'to': 'ph', 'conveyors': 2}},"
                          " {'name': 'ph', 'kind': 'phold', 'params': {'lps': 4}}],"
                          " 'dependencies': [{'from': 'line', 'to': 'ph', 'promise': 1}]}", "ph", "phold");

    /* The built-in kinds that receive nothing declare it (an empty
     * `receives`): a region kind still takes its neighbours' exchanges. */
    static const char *const targets[][2] = {
        { "sqss", "" },
        /* (these two send to the line too, after the end) */
        { "assembly", "'params': {'to': 'line', 'interval': {'dist': 'constant', 'value': 1000}}" },
        { "feeder", "'params': {'to': 'line', 'interval': 1e9}" },
        { "walkers", "'formalism': 'agent-based', 'time_step': 1, 'regions': [2, 1], 'params': {'width': 8, "
                     "'height': 4}" },
        { "ecology", "'formalism': 'agent-based', 'time_step': 1, 'regions': [2, 1]" },
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        char text[1024], to[32];
        bool regions = strstr(targets[i][1], "regions") != NULL;
        snprintf(to, sizeof to, "%s", regions ? "x[1]" : "x");
        snprintf(text, sizeof text, "{'seed': 1, 'end_time': 100, 'simulators': ["
                 " {'name': 'line', 'kind': 'rows', 'params': {'to': '%s', 'conveyors': 2}},"
                 " {'name': 'x', 'kind': '%s'%s%s}], 'dependencies': [{'from': 'line', 'to': '%s', 'promise': 1}%s]}",
                 to, targets[i][0], targets[i][1][0] ? ", " : "", targets[i][1], to,
                 strstr(targets[i][1], "'to'") ? ", {'from': 'x', 'to': 'line', 'promise': 1}" : "");
        expect_target_refused(text, to, targets[i][0]);
    }

    kr__model_file_t *f = mt_load("{'seed': 1, 'end_time': 100, 'simulators': ["
                " {'name': 'line', 'kind': 'rows', 'params': {'to': 'other', 'conveyors': 2}},"
                " {'name': 'other', 'kind': 'rows', 'params': {'to': 'line', 'conveyors': 2}}],"
                " 'dependencies': [{'from': 'line', 'to': 'other', 'promise': 1},"
                " {'from': 'other', 'to': 'line', 'promise': 1}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_ERR_CORRUPT, "%s", kr_last_error());
    cr_assert(strstr(kr_last_error(), "not a final one"), "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}
