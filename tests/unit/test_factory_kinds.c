/* The factory kinds (models/factory) through the real runtime: the seed's
 * chain assembly -> robots (promise 0) -> bath (promise 2) written as a
 * model file, loaded and built by runtime/model_file.c (every kind's setup
 * reads its params through kr_params_*, unread keys are refused), run, and
 * checked: nothing lost on the way, the bath's ODE against its closed
 * form, alarms, determinism, and the parameter errors with their messages
 * naming the file and the JSON path. Nothing may be logged at warn or
 * above during a run (stderr is captured). */
#include <math.h>
#include <unistd.h>

#include "model_text.h"
#include "../../runtime/run.h"

enum { ASSEMBLY, ROBOTS, BATH, NSIMS };

static const char *const kind_names[NSIMS] = { "assembly", "robots", "bath" };

TestSuite(factory_kinds, .fini = mt_cleanup);

typedef struct run {
    kr_model_file_t *f;
    kr_model_t *m;
    json_t *reports[NSIMS];
    uint64_t digests[NSIMS];
} run_t;

/* The seed's model; each *_params is the body of a params object (' for "),
 * next to the "to" the model always names. */
static const char *factory(uint64_t seed, double end, const char *line, const char *robots, const char *bath)
{
    static char text[4096];
    snprintf(text, sizeof text,
             "{'seed': %llu, 'end_time': %.17g, 'simulators': ["
             " {'name': 'AssemblyLine', 'kind': 'assembly', 'params': {'to': 'TransportRobots'%s%s}},"
             " {'name': 'TransportRobots', 'kind': 'robots', 'formalism': 'agent-based', 'time_step': 1,"
             "  'params': {'to': 'ChemicalBath'%s%s}},"
             " {'name': 'ChemicalBath', 'kind': 'bath', 'formalism': 'continuous', 'time_step': 2,"
             "  'params': {%s}}],"
             " 'dependencies': [{'from': 'AssemblyLine', 'to': 'TransportRobots', 'promise': 0},"
             "  {'from': 'TransportRobots', 'to': 'ChemicalBath', 'promise': 2}]}",
             (unsigned long long)seed, end, line[0] ? ", " : "", line, robots[0] ? ", " : "", robots, bath);
    return text;
}

/* Loads, builds and runs `text`; the run must log nothing at warn or above. */
static void run_go(run_t *r, const char *text)
{
    memset(r, 0, sizeof *r);
    r->f = mt_load(text, NULL);
    cr_assert(r->f, "load: %s", kr_last_error());
    r->m = kr_model_file_build(r->f, NULL);
    cr_assert(r->m, "build: %s", kr_last_error());

    fflush(stderr);
    int saved = dup(2);
    FILE *log = tmpfile();
    cr_assert(saved >= 0 && log);
    dup2(fileno(log), 2);
    kr_status_t st = kr_model_run(r->m);
    char failure[1024];
    snprintf(failure, sizeof failure, "%s", st ? kr_last_error() : "");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char logged[512] = "";
    rewind(log);
    size_t n = fread(logged, 1, sizeof logged - 1, log);
    logged[n] = '\0';
    fclose(log);
    cr_assert_eq(st, KR_OK, "run: %s", failure);
    cr_assert_eq(n, 0, "logged: %s", logged);

    for (uint32_t i = 0; i < NSIMS; i++) {
        const kr_kind_desc_t *k = kr_model_file_kind(r->f, i);
        cr_assert_str_eq(k->name, kind_names[i]);
        kr_report_t *rep = kr_report_open();
        cr_assert(rep);
        k->report(kr_model_sim(r->m, i), rep);
        r->reports[i] = json_deep_copy(kr_report_json(rep));
        kr_report_close(rep);
        r->digests[i] = k->digest(kr_model_sim(r->m, i));
    }
}

static void run_free(run_t *r)
{
    for (int i = 0; i < NSIMS; i++) json_decref(r->reports[i]);
    kr_model_destroy(r->m);
    kr_model_file_free(r->f);
}

static int64_t fig_int(const run_t *r, int sim, const char *name)
{
    json_t *v = json_object_get(r->reports[sim], name);
    cr_assert(v, "%s reports no '%s'", kind_names[sim], name);
    cr_assert(json_is_integer(v), "%s.%s is not a whole number", kind_names[sim], name);
    return json_integer_value(v);
}

static double fig_num(const run_t *r, int sim, const char *name)
{
    json_t *v = json_object_get(r->reports[sim], name);
    cr_assert(v, "%s reports no '%s'", kind_names[sim], name);
    cr_assert(json_is_real(v), "%s.%s is not a number", kind_names[sim], name);
    return json_real_value(v);
}

/* Loads fine (with one --set, or none); building (the kinds' setup) fails
 * with exactly this line. */
static void expect_setup_error(const char *text, const char *set, const char *jpath, const char *expected,
                               const char *found)
{
    kr_model_file_t *f = mt_load(text, set, NULL);
    cr_assert(f, "load: %s", kr_last_error());
    kr_model_t *m = kr_model_file_build(f, NULL);
    cr_assert_null(m, "setup should fail (%s)", jpath);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
    kr_model_file_free(f);
}

Test(factory_kinds, builtin_list)
{
    kr_kinds_t *kinds = kr_kinds_create();
    cr_assert_eq(kr_models_register_builtin(kinds), KR_OK);
    cr_assert_eq(kr_kinds_count(kinds), 5);
    cr_assert_eq(kr_kinds_find(kinds, "assembly")->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(kr_kinds_find(kinds, "sqss")->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(kr_kinds_find(kinds, "phold")->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(kr_kinds_find(kinds, "robots")->formalism, KR_AGENT_BASED);
    cr_assert_eq(kr_kinds_find(kinds, "bath")->formalism, KR_CONTINUOUS);
    for (size_t i = 0; i < kr_kinds_count(kinds); i++) {
        const kr_kind_desc_t *k = kr_kinds_at(kinds, i);
        cr_assert(k->summary && k->summary[0]);
        cr_assert(k->register_types && k->report && k->digest);
    }
    cr_assert_neq(kr_models_register_builtin(kinds), KR_OK, "duplicates are refused");
    kr_kinds_destroy(kinds);
}

/* A limited line that finishes long before the end: every part made
 * reaches the bath, 4 to 5 units after it was made (3 steps, then 2). */
Test(factory_kinds, every_part_arrives)
{
    run_t r;
    run_go(&r, factory(1, 3600, "'limit': 50", "", ""));
    cr_assert_eq(fig_int(&r, ASSEMBLY, "made"), 50);
    cr_assert_eq(fig_int(&r, ROBOTS, "received"), 50);
    cr_assert_eq(fig_int(&r, ROBOTS, "forwarded"), 50);
    cr_assert_eq(fig_int(&r, ROBOTS, "in_transit"), 0);
    cr_assert_eq(fig_int(&r, BATH, "received"), 50);
    cr_assert_eq(fig_int(&r, BATH, "alarms"), 0);
    double res = fig_num(&r, BATH, "mean_residence");
    cr_assert(res >= 4.0 && res <= 5.0, "mean residence %g", res);
    /* Long after the last part the bath sits at its equilibrium, 20 + 5 / 0.1. */
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 70.0, 1e-6);
    /* The parts left the robots' and the bath's worlds; only stations stay. */
    cr_assert_eq(kr_world_entity_count(kr_sim_world(kr_model_sim(r.m, ROBOTS))), 1);
    cr_assert_eq(kr_world_entity_count(kr_sim_world(kr_model_sim(r.m, BATH))), 1);
    run_free(&r);
}

/* Cut in full flow (the seed's model, unlimited): nothing lost, only held. */
Test(factory_kinds, conservation_mid_flow)
{
    run_t r;
    run_go(&r, factory(1, 101.5, "", "", ""));
    int64_t made = fig_int(&r, ASSEMBLY, "made");
    int64_t got = fig_int(&r, ROBOTS, "received"), fwd = fig_int(&r, ROBOTS, "forwarded");
    int64_t held = fig_int(&r, ROBOTS, "in_transit"), bath = fig_int(&r, BATH, "received");
    cr_assert(made > 25 && made < 100, "made %lld parts in 101.5 units at mean interval 2", (long long)made);
    cr_assert_eq(got, made, "promise 0: every part made has reached the robots");
    cr_assert_eq(got, fwd + held);
    cr_assert_eq(held, (int64_t)kr_world_entity_count(kr_sim_world(kr_model_sim(r.m, ROBOTS))) - 1);
    /* Forwarded but not yet in the bath: only parts shipped in the last 2 units (steps 100, 101). */
    cr_assert(bath <= fwd && fwd - bath <= 8, "forwarded %lld, bath %lld", (long long)fwd, (long long)bath);
    double t = fig_num(&r, BATH, "temperature");
    /* Parts take 0.5 each, about one every 2 units: equilibrium near 67.5. */
    cr_assert(t > 60 && t < 70, "temperature %g", t);
    run_free(&r);
}

/* No parts (the first comes after the end): the bath follows the closed
 * form T(t) = 70 - 50 exp(-0.1 t) from 20, and heated harder it alarms once. */
Test(factory_kinds, bath_closed_form_and_alarm)
{
    run_t r;
    run_go(&r, factory(1, 50, "'first': 1000", "", ""));
    cr_assert_eq(fig_int(&r, ASSEMBLY, "made"), 0);
    cr_assert_eq(fig_int(&r, BATH, "received"), 0);
    cr_assert_float_eq(fig_num(&r, BATH, "mean_residence"), 0.0, 0.0);
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 70.0 - 50.0 * exp(-5.0), 1e-6);
    run_free(&r);

    /* equilibrium 120 */
    run_go(&r, factory(1, 50, "'first': 1000", "", "'heater': 10, 'initial': 30, 'alarm': 75"));
    cr_assert_eq(fig_int(&r, BATH, "alarms"), 1);
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 120.0 - 90.0 * exp(-5.0), 1e-6);
    run_free(&r);
}

/* Parts cool the bath: hot enough to cross the alarm and be pushed back by
 * arrivals, it alarms several times. */
Test(factory_kinds, parts_cool_and_alarms_repeat)
{
    run_t r;
    /* 105 without parts, about 85 with */
    run_go(&r, factory(3, 400, "", "", "'heater': 8.5, 'part_cooling': 4"));
    cr_assert_gt(fig_int(&r, BATH, "received"), 100);
    cr_assert_gt(fig_int(&r, BATH, "alarms"), 1, "alarms %lld", (long long)fig_int(&r, BATH, "alarms"));
    run_free(&r);
}

static void run_digest(uint64_t seed, uint64_t *checksum, uint64_t *run_checksum, uint64_t digests[NSIMS],
                       int64_t *made, double *temp)
{
    run_t r;
    run_go(&r, factory(seed, 500, "'interval': {'dist': 'uniform', 'min': 0.5, 'max': 2.5}", "", ""));
    *checksum = kr_model_checksum(r.m);
    *run_checksum = kr_run_checksum(r.f, r.m);
    memcpy(digests, r.digests, sizeof r.digests);
    *made = fig_int(&r, ASSEMBLY, "made");
    *temp = fig_num(&r, BATH, "temperature");
    run_free(&r);
}

Test(factory_kinds, deterministic)
{
    uint64_t c1, c2, c3, k1, k2, k3, d1[NSIMS], d2[NSIMS], d3[NSIMS];
    int64_t m1, m2, m3;
    double t1, t2, t3;
    run_digest(7, &c1, &k1, d1, &m1, &t1);
    run_digest(7, &c2, &k2, d2, &m2, &t2);
    cr_assert_eq(c1, c2);
    cr_assert_eq(k1, k2, "the run's checksum (events and final states) too");
    cr_assert_eq(memcmp(d1, d2, sizeof d1), 0);
    cr_assert_eq(m1, m2);
    cr_assert_eq(memcmp(&t1, &t2, sizeof t1), 0, "temperatures equal to the bit");
    run_digest(8, &c3, &k3, d3, &m3, &t3);
    cr_assert_neq(c1, c3, "another seed, another run");
    cr_assert_neq(k1, k3);
    cr_assert_neq(d1[ASSEMBLY] ^ d1[BATH], d3[ASSEMBLY] ^ d3[BATH]);
}

/* A delay above the promise, longer carrying: parts spend longer on the way. */
Test(factory_kinds, robots_delay_and_steps)
{
    run_t r;
    run_go(&r, factory(1, 3600, "'limit': 20, 'interval': {'dist': 'constant', 'value': 3}, 'first': 0.5",
                       "'delay': 4.25, 'carry_steps': 5", ""));
    cr_assert_eq(fig_int(&r, BATH, "received"), 20);
    /* Made at 0.5 + 3i, steps at the next 5 whole units, leaves at +4.5, + 4.25. */
    cr_assert_float_eq(fig_num(&r, BATH, "mean_residence"), 8.75, 1e-9);
    run_free(&r);
}

Test(factory_kinds, param_errors)
{
    const char *seed = factory(1, 10, "", "", "");
    expect_setup_error(seed, "simulators.AssemblyLine.params={}", "simulators[0].params.to",
                       "the name of the simulator that takes the parts", "nothing");
    expect_setup_error(seed, "simulators.AssemblyLine.params.to=Nowhere", "simulators[0].params.to",
                       "the name of a simulator", "'Nowhere', which is not a simulator of this model");
    expect_setup_error(seed, "simulators.AssemblyLine.params.to=ChemicalBath", "simulators[0].params.to",
                       "a simulator that this one has a dependency to",
                       "'ChemicalBath', but there is no dependency 'AssemblyLine' -> 'ChemicalBath'");
    expect_setup_error(seed, "simulators.TransportRobots.params.delay=1", "simulators[1].params.delay",
                       "a duration at least the promise of the edge to \"to\"",
                       "1, below the promise 2 of 'TransportRobots' -> 'ChemicalBath'");
    expect_setup_error(seed, "simulators.TransportRobots.params.carry_steps=0", "simulators[1].params.carry_steps",
                       "a whole number >= 1", "0");
    expect_setup_error(seed, "simulators.TransportRobots.params.carry_steps=three",
                       "simulators[1].params.carry_steps", "a whole number >= 1", "\"three\"");
    expect_setup_error(seed, "simulators.AssemblyLine.params.interval={\"dist\": \"constant\", \"value\": 0}",
                       "simulators[0].params.interval", "a distribution with a positive mean (or a \"limit\")",
                       "a distribution with mean 0 and no limit");
    expect_setup_error(seed, "simulators.ChemicalBath.params.k=-1", "simulators[2].params.k", "a number >= 0", "-1");
    expect_setup_error(seed, "simulators.ChemicalBath.params.heater=true", "simulators[2].params.heater", "a number",
                       "true");
    expect_setup_error(seed, "simulators.ChemicalBath.params.cooling=1", "simulators[2].params.cooling",
                       "a parameter of kind 'bath' (ambient, k, heater, initial, part_cooling, alarm)",
                       "the unknown key \"cooling\"");
}

/* The robots need time steps; a robots kind on a discrete-event simulator
 * is refused rather than holding parts forever. */
Test(factory_kinds, robots_need_steps)
{
    expect_setup_error("{'end_time': 10, 'simulators': [{'name': 'A', 'kind': 'robots', 'formalism': "
                       "'discrete-event', 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', 'time_step': 1}],"
                       " 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0}]}", NULL,
                       "simulators[0].params.carry_steps", "time steps to count (an agent-based simulator)",
                       "a discrete-event simulator, which has no time steps");
}

/* The assembly line may feed the bath directly (any factory receiver). */
Test(factory_kinds, assembly_straight_to_bath)
{
    kr_model_file_t *f = mt_load("{'seed': 5, 'end_time': 100, 'simulators': ["
                                 " {'name': 'Line', 'kind': 'assembly', 'params': {'to': 'Bath', 'limit': 10}},"
                                 " {'name': 'Bath', 'kind': 'bath', 'time_step': 1}],"
                                 " 'dependencies': [{'from': 'Line', 'to': 'Bath', 'promise': 0.5}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr_model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_report_t *ra = kr_report_open(), *rb = kr_report_open();
    kr_model_file_kind(f, 0)->report(kr_model_sim(m, 0), ra);
    kr_model_file_kind(f, 1)->report(kr_model_sim(m, 1), rb);
    cr_assert_eq(json_integer_value(json_object_get(kr_report_json(ra), "made")), 10);
    cr_assert_eq(json_integer_value(json_object_get(kr_report_json(rb), "received")), 10);
    cr_assert_float_eq(json_real_value(json_object_get(kr_report_json(rb), "mean_residence")), 0.5, 1e-9);
    kr_report_close(ra);
    kr_report_close(rb);
    kr_model_destroy(m);
    kr_model_file_free(f);
}
