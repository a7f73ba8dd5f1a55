/* The factory kinds (models/factory) against the test double of the kinds
 * runtime (kinds_stub.c): the seed's chain assembly -> robots (promise 0)
 * -> bath (promise 2) built by hand, set up from stub params, run, and
 * checked: nothing lost on the way, the bath's ODE against its closed form,
 * alarms, determinism, and the parameter errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kairos/kairos.h"
#include "builtin.h"
#include "kinds_stub.h"

#define S (KR_PRECISION_DEFAULT)
enum { ASSEMBLY, ROBOTS, BATH, NSIMS };

typedef struct run {
    kr_model_t *m;
    kr_kinds_t kinds;
    kr_params_t params[NSIMS];
    kr_report_t reports[NSIMS];
    uint64_t digests[NSIMS];
    int errors;                     /* log messages at warn or above */
    char last_log[512];
} run_t;

static const char *const names[NSIMS] = { "AssemblyLine", "TransportRobots", "ChemicalBath" };
static const char *const kind_names[NSIMS] = { "assembly", "robots", "bath" };

static void on_log(void *arg, kr_log_level_t level, const char *sim, kr_time_t now, const char *msg)
{
    (void)sim, (void)now;
    run_t *r = arg;
    if (level >= KR_LOG_WARN) {
        r->errors++;
        snprintf(r->last_log, sizeof r->last_log, "%s", msg);
    }
}

/* The seed's model with default params: the targets named, nothing else. */
static void run_init(run_t *r, uint64_t seed, double end_units)
{
    memset(r, 0, sizeof *r);
    cr_assert_eq(kr_models_register_builtin(&r->kinds), KR_OK, "%s", kr_last_error());
    r->m = kr_model_create(&(kr_model_desc_t){ .seed = seed, .end_time = (kr_time_t)(end_units * S),
                                                .log_level = KR_LOG_WARN, .log_fn = on_log, .log_arg = r });
    cr_assert(r->m);
    cr_assert(kr_model_add_sim(r->m, &(kr_sim_desc_t){ .name = names[ASSEMBLY], .formalism = KR_DISCRETE_EVENT }));
    cr_assert(kr_model_add_sim(r->m, &(kr_sim_desc_t){ .name = names[ROBOTS], .formalism = KR_AGENT_BASED,
                                                       .time_step = 1 * S }));
    cr_assert(kr_model_add_sim(r->m, &(kr_sim_desc_t){ .name = names[BATH], .formalism = KR_CONTINUOUS,
                                                       .time_step = 2 * S }));
    cr_assert_eq(kr_model_add_dependency(r->m, ASSEMBLY, ROBOTS, 0), KR_OK);
    cr_assert_eq(kr_model_add_dependency(r->m, ROBOTS, BATH, 2 * S), KR_OK);
    static const char *const where[NSIMS] = { "simulators[0].params", "simulators[1].params",
                                              "simulators[2].params" };
    for (int i = 0; i < NSIMS; i++) stub_params_init(&r->params[i], where[i], S);
    stub_params_string(&r->params[ASSEMBLY], "to", names[ROBOTS]);
    stub_params_string(&r->params[ROBOTS], "to", names[BATH]);
}

/* What the runtime will do: register_types once per kind, then setup every
 * simulator in id order. Returns the first failure, KR_OK when all went. */
static kr_status_t run_setup(run_t *r)
{
    for (int i = 0; i < NSIMS; i++) {
        const kr_kind_desc_t *k = stub_kinds_find(&r->kinds, kind_names[i]);
        cr_assert(k);
        if (k->register_types) cr_assert_eq(k->register_types(r->m), KR_OK, "%s", kr_last_error());
    }
    for (int i = 0; i < NSIMS; i++) {
        const kr_kind_desc_t *k = stub_kinds_find(&r->kinds, kind_names[i]);
        kr_status_t st = k->setup(kr_model_sim(r->m, (uint32_t)i), &r->params[i]);
        if (st != KR_OK) return st;
    }
    return KR_OK;
}

static void run_go(run_t *r)
{
    cr_assert_eq(run_setup(r), KR_OK, "setup: %s", kr_last_error());
    for (int i = 0; i < NSIMS; i++)
        cr_assert_null(stub_params_unread(&r->params[i]), "%s never read '%s'", kind_names[i],
                       stub_params_unread(&r->params[i]));
    cr_assert_eq(kr_model_run(r->m), KR_OK, "run: %s", kr_last_error());
    for (int i = 0; i < NSIMS; i++) {
        const kr_kind_desc_t *k = stub_kinds_find(&r->kinds, kind_names[i]);
        k->report(kr_model_sim(r->m, (uint32_t)i), &r->reports[i]);
        r->digests[i] = k->digest(kr_model_sim(r->m, (uint32_t)i));
    }
    cr_assert_eq(r->errors, 0, "logged: %s", r->last_log);
}

static int64_t fig_int(const run_t *r, int sim, const char *name)
{
    const stub_figure_t *f = stub_report_get(&r->reports[sim], name);
    cr_assert(f, "%s reports no '%s'", kind_names[sim], name);
    cr_assert_eq(f->type, 'i', "%s.%s is not a whole number", kind_names[sim], name);
    return f->integer;
}

static double fig_num(const run_t *r, int sim, const char *name)
{
    const stub_figure_t *f = stub_report_get(&r->reports[sim], name);
    cr_assert(f, "%s reports no '%s'", kind_names[sim], name);
    cr_assert_eq(f->type, 'n', "%s.%s is not a number", kind_names[sim], name);
    return f->number;
}

static void expect_setup_error(run_t *r, const char *needle)
{
    cr_assert_neq(run_setup(r), KR_OK, "setup should fail (%s)", needle);
    cr_assert(strstr(kr_last_error(), needle), "error '%s' lacks '%s'", kr_last_error(), needle);
    kr_model_destroy(r->m);
}

Test(factory_kinds, builtin_list)
{
    kr_kinds_t kinds = { 0 };
    cr_assert_eq(kr_models_register_builtin(&kinds), KR_OK);
    cr_assert_eq(kinds.count, 3);
    cr_assert_eq(stub_kinds_find(&kinds, "assembly")->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(stub_kinds_find(&kinds, "robots")->formalism, KR_AGENT_BASED);
    cr_assert_eq(stub_kinds_find(&kinds, "bath")->formalism, KR_CONTINUOUS);
    for (size_t i = 0; i < kinds.count; i++) {
        cr_assert(kinds.kinds[i]->summary && kinds.kinds[i]->summary[0]);
        cr_assert(kinds.kinds[i]->register_types && kinds.kinds[i]->report && kinds.kinds[i]->digest);
    }
    cr_assert_neq(kr_models_register_builtin(&kinds), KR_OK, "duplicates are refused");
}

/* A limited line that finishes long before the end: every part made
 * reaches the bath, 4 to 5 units after it was made (3 steps, then 2). */
Test(factory_kinds, every_part_arrives)
{
    run_t r;
    run_init(&r, 1, 3600);
    stub_params_number(&r.params[ASSEMBLY], "limit", 50);
    run_go(&r);
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
    kr_model_destroy(r.m);
}

/* Cut in full flow (the seed's model, unlimited): nothing lost, only held. */
Test(factory_kinds, conservation_mid_flow)
{
    run_t r;
    run_init(&r, 1, 101.5);
    run_go(&r);
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
    kr_model_destroy(r.m);
}

/* No parts (the first comes after the end): the bath follows the closed
 * form T(t) = 70 - 50 exp(-0.1 t) from 20, and heated harder it alarms once. */
Test(factory_kinds, bath_closed_form_and_alarm)
{
    run_t r;
    run_init(&r, 1, 50);
    stub_params_number(&r.params[ASSEMBLY], "first", 1000);
    run_go(&r);
    cr_assert_eq(fig_int(&r, ASSEMBLY, "made"), 0);
    cr_assert_eq(fig_int(&r, BATH, "received"), 0);
    cr_assert_float_eq(fig_num(&r, BATH, "mean_residence"), 0.0, 0.0);
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 70.0 - 50.0 * exp(-5.0), 1e-6);
    kr_model_destroy(r.m);

    run_init(&r, 1, 50);
    stub_params_number(&r.params[ASSEMBLY], "first", 1000);
    stub_params_number(&r.params[BATH], "heater", 10);      /* equilibrium 120 */
    stub_params_number(&r.params[BATH], "initial", 30);
    stub_params_number(&r.params[BATH], "alarm", 75);
    run_go(&r);
    cr_assert_eq(fig_int(&r, BATH, "alarms"), 1);
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 120.0 - 90.0 * exp(-5.0), 1e-6);
    kr_model_destroy(r.m);
}

/* Parts cool the bath: hot enough to cross the alarm and be pushed back by
 * arrivals, it alarms several times. */
Test(factory_kinds, parts_cool_and_alarms_repeat)
{
    run_t r;
    run_init(&r, 3, 400);
    stub_params_number(&r.params[BATH], "heater", 8.5);     /* 105 without parts, about 85 with */
    stub_params_number(&r.params[BATH], "part_cooling", 4);
    run_go(&r);
    cr_assert_gt(fig_int(&r, BATH, "received"), 100);
    cr_assert_gt(fig_int(&r, BATH, "alarms"), 1, "alarms %lld", (long long)fig_int(&r, BATH, "alarms"));
    kr_model_destroy(r.m);
}

static void run_digest(uint64_t seed, uint64_t *checksum, uint64_t digests[NSIMS], int64_t *made, double *temp)
{
    run_t r;
    run_init(&r, seed, 500);
    stub_params_dist(&r.params[ASSEMBLY], "interval",
                     &(kr_dist_desc_t){ .kind = KR_DIST_UNIFORM, .min = 0.5, .max = 2.5 });
    run_go(&r);
    *checksum = kr_model_checksum(r.m);
    memcpy(digests, r.digests, sizeof r.digests);
    *made = fig_int(&r, ASSEMBLY, "made");
    *temp = fig_num(&r, BATH, "temperature");
    kr_model_destroy(r.m);
}

Test(factory_kinds, deterministic)
{
    uint64_t c1, c2, c3, d1[NSIMS], d2[NSIMS], d3[NSIMS];
    int64_t m1, m2, m3;
    double t1, t2, t3;
    run_digest(7, &c1, d1, &m1, &t1);
    run_digest(7, &c2, d2, &m2, &t2);
    cr_assert_eq(c1, c2);
    cr_assert_eq(memcmp(d1, d2, sizeof d1), 0);
    cr_assert_eq(m1, m2);
    cr_assert_eq(memcmp(&t1, &t2, sizeof t1), 0, "temperatures equal to the bit");
    run_digest(8, &c3, d3, &m3, &t3);
    cr_assert_neq(c1, c3, "another seed, another run");
    cr_assert_neq(d1[ASSEMBLY] ^ d1[BATH], d3[ASSEMBLY] ^ d3[BATH]);
}

/* A delay above the promise, longer carrying: parts spend longer on the way. */
Test(factory_kinds, robots_delay_and_steps)
{
    run_t r;
    run_init(&r, 1, 3600);
    stub_params_number(&r.params[ASSEMBLY], "limit", 20);
    stub_params_dist(&r.params[ASSEMBLY], "interval", &(kr_dist_desc_t){ .kind = KR_DIST_CONSTANT, .value = 3 });
    stub_params_number(&r.params[ASSEMBLY], "first", 0.5);
    stub_params_number(&r.params[ROBOTS], "delay", 4.25);
    stub_params_number(&r.params[ROBOTS], "carry_steps", 5);
    run_go(&r);
    cr_assert_eq(fig_int(&r, BATH, "received"), 20);
    /* Made at 0.5 + 3i, steps at the next 5 whole units, leaves at +4.5, + 4.25. */
    cr_assert_float_eq(fig_num(&r, BATH, "mean_residence"), 8.75, 1e-9);
    kr_model_destroy(r.m);
}

Test(factory_kinds, param_errors)
{
    run_t r;
    run_init(&r, 1, 10);
    stub_params_init(&r.params[ASSEMBLY], "simulators[0].params", S);       /* no "to" */
    expect_setup_error(&r, "simulators[0].params.to");

    run_init(&r, 1, 10);
    stub_params_init(&r.params[ASSEMBLY], "simulators[0].params", S);
    stub_params_string(&r.params[ASSEMBLY], "to", "Nowhere");
    expect_setup_error(&r, "'Nowhere', which is not a simulator");

    run_init(&r, 1, 10);
    stub_params_init(&r.params[ASSEMBLY], "simulators[0].params", S);
    stub_params_string(&r.params[ASSEMBLY], "to", names[BATH]);            /* no edge */
    expect_setup_error(&r, "no dependency 'AssemblyLine' -> 'ChemicalBath'");

    run_init(&r, 1, 10);
    stub_params_number(&r.params[ROBOTS], "delay", 1);
    expect_setup_error(&r, "simulators[1].params.delay: expected a duration at least the promise");

    run_init(&r, 1, 10);
    stub_params_number(&r.params[ROBOTS], "carry_steps", 0);
    expect_setup_error(&r, "simulators[1].params.carry_steps");

    run_init(&r, 1, 10);
    stub_params_string(&r.params[ROBOTS], "carry_steps", "three");
    expect_setup_error(&r, "carry_steps");

    run_init(&r, 1, 10);
    stub_params_dist(&r.params[ASSEMBLY], "interval", &(kr_dist_desc_t){ .kind = KR_DIST_CONSTANT, .value = 0 });
    expect_setup_error(&r, "simulators[0].params.interval");

    run_init(&r, 1, 10);
    stub_params_number(&r.params[BATH], "k", -1);
    expect_setup_error(&r, "simulators[2].params.k");
}

/* The robots need time steps; a robots kind on a discrete-event simulator
 * is refused rather than holding parts forever. */
Test(factory_kinds, robots_need_steps)
{
    run_t r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(kr_models_register_builtin(&r.kinds), KR_OK);
    r.m = kr_model_create(&(kr_model_desc_t){ .seed = 1, .end_time = 10 * S, .log_level = KR_LOG_OFF });
    kr_sim_t *a = kr_model_add_sim(r.m, &(kr_sim_desc_t){ .name = "A", .formalism = KR_DISCRETE_EVENT });
    kr_sim_t *b = kr_model_add_sim(r.m, &(kr_sim_desc_t){ .name = "B", .formalism = KR_DISCRETE_EVENT });
    cr_assert(a && b);
    cr_assert_eq(kr_model_add_dependency(r.m, 0, 1, 0), KR_OK);
    const kr_kind_desc_t *k = stub_kinds_find(&r.kinds, "robots");
    cr_assert_eq(k->register_types(r.m), KR_OK);
    kr_params_t p;
    stub_params_init(&p, "simulators[0].params", S);
    stub_params_string(&p, "to", "B");
    cr_assert_neq(k->setup(a, &p), KR_OK);
    cr_assert(strstr(kr_last_error(), "discrete-event"), "%s", kr_last_error());
    kr_model_destroy(r.m);
}

/* The assembly line may feed the bath directly (any factory receiver). */
Test(factory_kinds, assembly_straight_to_bath)
{
    run_t r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(kr_models_register_builtin(&r.kinds), KR_OK);
    r.m = kr_model_create(&(kr_model_desc_t){ .seed = 5, .end_time = 100 * S, .log_level = KR_LOG_WARN,
                                               .log_fn = on_log, .log_arg = &r });
    kr_sim_t *a = kr_model_add_sim(r.m, &(kr_sim_desc_t){ .name = "Line", .formalism = KR_DISCRETE_EVENT });
    kr_sim_t *b = kr_model_add_sim(r.m, &(kr_sim_desc_t){ .name = "Bath", .formalism = KR_CONTINUOUS,
                                                          .time_step = S });
    cr_assert(a && b);
    cr_assert_eq(kr_model_add_dependency(r.m, 0, 1, S / 2), KR_OK);
    const kr_kind_desc_t *ka = stub_kinds_find(&r.kinds, "assembly"), *kb = stub_kinds_find(&r.kinds, "bath");
    cr_assert_eq(ka->register_types(r.m), KR_OK);
    cr_assert_eq(kb->register_types(r.m), KR_OK);
    kr_params_t pa, pb;
    stub_params_init(&pa, "a", S);
    stub_params_string(&pa, "to", "Bath");
    stub_params_number(&pa, "limit", 10);
    stub_params_init(&pb, "b", S);
    cr_assert_eq(ka->setup(a, &pa), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kb->setup(b, &pb), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(r.m), KR_OK, "%s", kr_last_error());
    ka->report(a, &r.reports[0]);
    kb->report(b, &r.reports[1]);
    cr_assert_eq(stub_report_get(&r.reports[0], "made")->integer, 10);
    cr_assert_eq(stub_report_get(&r.reports[1], "received")->integer, 10);
    cr_assert_float_eq(stub_report_get(&r.reports[1], "mean_residence")->number, 0.5, 1e-9);
    cr_assert_eq(r.errors, 0, "%s", r.last_log);
    kr_model_destroy(r.m);
}
