/* The phold kind through the real loader and runtime: event conservation
 * (checked against an observer's count and, with constant delays, against
 * the exact count the model must give), determinism, the fraction of
 * remote events, no event sooner than the lookahead after it was
 * scheduled, params and dependencies refused with clear messages, and
 * --set simulators.phold.count on the example. */
#include <math.h>
#include "model_text.h"
#include "runtime/run.h"

TestSuite(phold, .fini = mt_cleanup);

/* PHOLD on `count` replicas, all-to-all dependencies with promise 0.1. */
#define PHOLD(count, params)                                                                              \
    "{'seed': 5, 'end_time': 100, 'simulators': [{'name': 'phold', 'kind': 'phold', 'count': " count ","  \
    " 'formalism': 'discrete_event', 'params': {" params "}}],"                                            \
    " 'dependencies': [{'from': 'phold[*]', 'to': 'phold[*]', 'promise': 0.1}]}"

/* What an observer sees, independently of the kind's own counters. */
typedef struct seen {
    uint64_t phold_events;    /* executed events of type phold.event */
    uint64_t other_events;
    uint64_t syncs;           /* sync-events scheduled */
    kr_time_t min_sync_delay; /* smallest (event time - sender's now) of a sync-event */
} seen_t;

static void on_event(void *arg, kr_sim_t *sim, const kr_event_key_t *key, kr_event_type_t type)
{
    (void)key;
    seen_t *s = arg;
    if (!strcmp(kr_model_event_type_name(kr_sim_model(sim), type), "phold.event")) s->phold_events++;
    else s->other_events++;
}

static void on_sync(void *arg, kr_sim_t *sim, const kr_event_key_t *key)
{
    seen_t *s = arg;
    s->syncs++;
    kr_time_t d = key->time - kr_sim_now(sim);
    if (d < s->min_sync_delay) s->min_sync_delay = d;
}

typedef struct result {
    kr_status_t status;
    char error[1024];
    size_t sims;
    int64_t events, remote_sent, lps, kernel_events, entities;
    double min_delay;
    uint64_t checksum;
    seen_t seen;
} result_t;

static int64_t figure(json_t *stats, const char *key)
{
    json_t *v = json_object_get(stats, key);
    cr_assert(json_is_integer(v), "no figure %s", key);
    return json_integer_value(v);
}

/* Loads with the sets (NULL-terminated), runs, and sums the report over
 * every simulator. */
static result_t run_sets(const char *text, const char *const *sets)
{
    result_t r = { .min_delay = INFINITY, .seen = { .min_sync_delay = KR_TIME_NEVER } };
    size_t n = 0;
    while (sets && sets[n]) n++;
    mt_write(text);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){
        .path = mt_path, .sets = sets, .set_count = n, .register_builtin = kr__models_register_builtin });
    kr_observer_t obs = { .arg = &r.seen, .on_event = on_event, .on_sync = on_sync };
    kr_model_t *m = f ? kr__model_file_build(f, &obs) : NULL;
    r.status = !f || !m ? kr_last_status() : kr_model_run(m);
    if (r.status) {
        snprintf(r.error, sizeof r.error, "%s", kr_last_error());
    } else {
        r.sims = kr_model_sim_count(m);
        for (size_t i = 0; i < r.sims; i++) {
            kr_sim_t *s = kr_model_sim(m, (uint32_t)i);
            kr_report_t *rep = kr__report_open();
            kr__model_file_kind(f, i)->report(s, rep);
            json_t *j = kr__report_json(rep);
            r.events += figure(j, "events");
            r.remote_sent += figure(j, "remote_sent");
            r.lps += figure(j, "lps");
            json_t *md = json_object_get(j, "min_delay");
            if (json_is_number(md) && json_number_value(md) < r.min_delay) r.min_delay = json_number_value(md);
            kr__report_close(rep);
            r.kernel_events += (int64_t)kr_sim_event_count(s);
            r.entities += (int64_t)kr_world_entity_count(kr_sim_world(s));
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

Test(phold, constant_delays_give_the_exact_count)
{
    /* lookahead = mean: every delay is exactly 1, so each of the 4 x 8 x 3
     * chains runs at 1, 2, ..., 100 (events at the end time run): 100
     * events each, whatever the remote draws do, if and only if every
     * event schedules exactly one. */
    result_t r = run1(PHOLD("4", "'lps': 8, 'start_events': 3, 'remote': 0.5, 'lookahead': 1, 'mean': 1"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.events, 4 * 8 * 3 * 100);
    cr_assert_eq(r.seen.phold_events, (uint64_t)r.events, "observer %llu, report %lld",
                 (unsigned long long)r.seen.phold_events, (long long)r.events);
    cr_assert_eq(r.kernel_events, r.events);
    cr_assert_eq(r.seen.syncs, (uint64_t)r.remote_sent);
    cr_assert(r.remote_sent > 0);
}

Test(phold, events_in_flight_stay_constant)
{
    /* 4 x 16 LPs x 4 start events = 256 chains, each a renewal process of
     * mean gap 1: about 256 x 500 events (sd about 0.3 %). A lost or a
     * doubled event would drift far from it. */
    result_t r = run_sets(PHOLD("4", "'lps': 16, 'start_events': 4, 'remote': 0.5"),
                          (const char *[]){ "end_time=500", NULL });
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.seen.phold_events, (uint64_t)r.events);
    cr_assert_eq(r.seen.other_events, 0);
    cr_assert_eq(r.kernel_events, r.events);
    double expected = 256.0 * 500.0;
    cr_assert(fabs((double)r.events - expected) < 0.015 * expected, "events %lld, expected about %g",
              (long long)r.events, expected);
    cr_assert_eq(r.lps, 64);
    cr_assert_eq(r.entities, 64, "one entity per LP");
}

Test(phold, deterministic_and_seeded)
{
    const char *text = PHOLD("3", "'lps': 10, 'start_events': 2, 'remote': 0.3");
    result_t a = run1(text, NULL), b = run1(text, NULL), c = run1(text, "seed=6"), w = run1(text, "sync=window");
    cr_assert_eq(a.status, KR_OK, "%s", a.error);
    cr_assert_eq(a.checksum, b.checksum);
    cr_assert_eq(a.events, b.events);
    cr_assert_eq(a.checksum, w.checksum, "the same with the window algorithm");
    cr_assert_neq(a.checksum, c.checksum, "another seed, another run");
}

Test(phold, remote_fraction_follows_the_parameter)
{
    /* A remote draw picks any of the 4 x 64 LPs: 3/4 of them are on another
     * simulator, so a fraction 0.25 x 0.75 of the events leaves. */
    result_t r = run1(PHOLD("4", "'lps': 64, 'start_events': 2, 'remote': 0.25"), NULL);
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    double f = (double)r.remote_sent / (double)r.events;
    cr_assert(fabs(f - 0.25 * 0.75) < 0.01, "remote fraction %g", f);
    result_t h = run1(PHOLD("4", "'lps': 64, 'start_events': 2, 'remote': 0.5"), NULL);
    cr_assert_eq(h.status, KR_OK, "%s", h.error);
    f = (double)h.remote_sent / (double)h.events;
    cr_assert(fabs(f - 0.5 * 0.75) < 0.01, "remote fraction %g", f);
    /* remote 0: nothing leaves, and no dependency is needed */
    result_t z = run_sets(PHOLD("4", "'lps': 64, 'start_events': 2, 'remote': 0"),
                          (const char *[]){ "dependencies=[]", NULL });
    cr_assert_eq(z.status, KR_OK, "%s", z.error);
    cr_assert_eq(z.remote_sent, 0);
    cr_assert_eq(z.seen.syncs, 0);
    cr_assert(z.events > 0);
}

Test(phold, no_event_sooner_than_the_lookahead)
{
    const char *las[] = { "0.1", "0.01" };
    for (size_t i = 0; i < 2; i++) {
        char la[64], text[1024];
        snprintf(la, sizeof la, "'lps': 32, 'start_events': 4, 'remote': 0.5, 'lookahead': %s", las[i]);
        snprintf(text, sizeof text, PHOLD("2", "%s"), la);
        for (char *c = text; *c; c++) if (*c == '\'') *c = '"';
        result_t r = run_sets(text, (const char *[]){ "dependencies.0.promise=0.01", NULL });
        cr_assert_eq(r.status, KR_OK, "%s", r.error);
        double lookahead = atof(las[i]);
        /* every processed event, local or remote (from its payload's
         * scheduling time) */
        cr_assert(r.min_delay >= lookahead && r.min_delay < lookahead + 0.01, "min delay %g, lookahead %g",
                  r.min_delay, lookahead);
        /* every sync-event, seen by the observer as it was scheduled */
        cr_assert(r.seen.syncs > 0);
        cr_assert_geq(r.seen.min_sync_delay, (kr_time_t)(lookahead * 1e6 + 0.5));
    }
}

static void expect_refused(const char *text, const char *set, const char *jpath, const char *expected,
                           const char *found)
{
    result_t r = run1(text, set);
    cr_assert_eq(r.status, KR_ERR_INVALID_ARG, "%s: status %d (%s)", set, (int)r.status, r.error);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
}

Test(phold, params_are_checked)
{
    const char *base = PHOLD("2", "'lps': 4");
    kr__model_file_t *f = mt_load(base, NULL);
    cr_assert(f, "%s", kr_last_error());
    kr__model_file_free(f);
    expect_refused(base, "simulators.phold.params.lookahead=2", "simulators[0].params.lookahead",
                   "a lookahead <= mean (1)", "2");
    expect_refused(base, "simulators.phold.params.lookahead=-0.5", "simulators[0].params.lookahead",
                   "a number >= 0", "-0.5");
    expect_refused(base, "simulators.phold.params.remote=1.5", "simulators[0].params.remote",
                   "a number >= 0, <= 1", "1.5");
    expect_refused(base, "simulators.phold.params.remote=-0.1", "simulators[0].params.remote",
                   "a number >= 0, <= 1", "-0.1");
    expect_refused(base, "simulators.phold.params.mean=0", "simulators[0].params.mean",
                   "a number > 0", "0");
    expect_refused(base, "simulators.phold.params.lps=0", "simulators[0].params.lps",
                   "a whole number >= 1, <= 100000000", "0");
    expect_refused(base, "simulators.phold.params.start_events=1.5", "simulators[0].params.start_events",
                   "a whole number >= 1, <= 1000000", "1.5");
    expect_refused(base, "simulators.phold.params.lsp=4", "simulators[0].params.lsp",
                   "a parameter of kind 'phold' (lps, start_events, remote, lookahead, mean)",
                   "the unknown key \"lsp\"");
}

Test(phold, remote_events_need_dependencies)
{
    const char *base = PHOLD("2", "'lps': 4");
    expect_refused(base, "dependencies=[]", "simulators[0].params.remote",
                   "a dependency from 'phold[0]' to every other replica, with a promise <= the lookahead 0.1 "
                   "(remote > 0 sends events to their LPs)",
                   "no dependency 'phold[0]' -> 'phold[1]'");
    expect_refused(base, "dependencies.0.promise=0.2", "simulators[0].params.remote",
                   "a dependency from 'phold[0]' to every other replica, with a promise <= the lookahead 0.1 "
                   "(remote > 0 sends events to their LPs)",
                   "the promise 0.2 on 'phold[0]' -> 'phold[1]'");
    /* one simulator needs none */
    result_t r = run_sets(base, (const char *[]){ "dependencies=[]", "simulators.phold.count=1", NULL });
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.remote_sent, 0);
}

Test(phold, example_and_count_override)
{
    const char *text = mt_read_example("phold.json");
    result_t r = run_sets(text, (const char *[]){ "end_time=2", NULL });
    cr_assert_eq(r.status, KR_OK, "%s", r.error);
    cr_assert_eq(r.sims, 4);
    cr_assert_eq(r.lps, 1024);
    cr_assert(r.remote_sent > 0);
    result_t two = run_sets(text, (const char *[]){ "end_time=2", "simulators.phold.count=2", NULL });
    cr_assert_eq(two.status, KR_OK, "%s", two.error);
    cr_assert_eq(two.sims, 2);
    cr_assert_eq(two.lps, 512);
    cr_assert(two.remote_sent > 0);
}
