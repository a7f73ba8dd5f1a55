/* The factory kinds (models/factory) through the real runtime: ERS's
 * chain assembly -> robots (promise 0) -> bath (promise 2) written as a
 * model file, loaded and built by runtime/model_file.c (every kind's setup
 * reads its params through kr_params_*, unread keys are refused), run, and
 * checked: nothing lost on the way, the robots' travel time and FIFO, the
 * bath's state event against the closed form of a part heated in a bath
 * held at a constant temperature, the bath's slots and queue, parts'
 * on_submodel_move, the temperature profile, determinism, and the
 * parameter errors with their messages naming the file and the JSON path.
 * Nothing may be logged at warn or above during a run (stderr is
 * captured). */
#include <math.h>
#include <unistd.h>

#include "model_text.h"
#include "runtime/run.h"

enum { ASSEMBLY, ROBOTS, BATH, NSIMS };

static const char *const kind_names[NSIMS] = { "assembly", "robots", "bath" };

TestSuite(factory_kinds, .fini = mt_cleanup);

typedef struct run {
    kr__model_file_t *f;
    kr_model_t *m;
    json_t *reports[NSIMS];
    uint64_t digests[NSIMS];
} run_t;

/* ERS's model; each *_params is the body of a params object (' for "),
 * next to the "to" the model always names. */
static const char *factory(uint64_t seed, double end, const char *line, const char *robots, const char *bath)
{
    static char text[8192];
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

/* A simulator's final state as the run's checksum sees it (runtime/report.c):
 * the kind's own digest, if any, its world and its declared state. */
static uint64_t sim_digest(const kr_kind_desc_t *k, kr_sim_t *s)
{
    kr_world_t *w = kr_sim_world(s);
    return (k->digest ? k->digest(s) : 0) + kr_world_digest(w) +
           (k->state_size ? kr_fields_digest(w, kr_sim_state(s), k->state_fields) : 0);
}

/* Loads, builds and runs `text`; the run must log nothing at warn or above. */
static void run_go(run_t *r, const char *text)
{
    memset(r, 0, sizeof *r);
    r->f = mt_load(text, NULL);
    cr_assert(r->f, "load: %s", kr_last_error());
    r->m = kr__model_file_build(r->f, NULL);
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
        const kr_kind_desc_t *k = kr__model_file_kind(r->f, i);
        cr_assert_str_eq(k->name, kind_names[i]);
        kr_report_t *rep = kr__report_open();
        cr_assert(rep);
        k->report(kr_model_sim(r->m, i), rep);
        r->reports[i] = json_deep_copy(kr__report_json(rep));
        kr__report_close(rep);
        r->digests[i] = sim_digest(k, kr_model_sim(r->m, i));
    }
}

static void run_free(run_t *r)
{
    for (int i = 0; i < NSIMS; i++) json_decref(r->reports[i]);
    kr_model_destroy(r->m);
    kr__model_file_free(r->f);
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
    kr__model_file_t *f = mt_load(text, set, NULL);
    cr_assert(f, "load: %s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert_null(m, "setup should fail (%s)", jpath);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
    kr__model_file_free(f);
}

/* A bath held at a constant temperature (no heater, no loss, parts take no
 * heat from it): a part entering at T0 follows Ti(t) = Tb - (Tb - T0)
 * e^{-exchange t} and reaches the target after ln((Tb - T0)/(Tb - target)) / exchange. */
#define CONST_BATH "'heater': 0, 'loss': 0, 'heat_ratio': 0"
static double heat_time(double tb, double t0, double target, double exchange)
{
    return log((tb - t0) / (tb - target)) / exchange;
}

#define TICK 1e-6
/* A state event fires at the first tick past the crossing. */
static void expect_after_crossing(double got, double exact, double ticks, const char *what)
{
    cr_assert(got >= exact - 1e-9 && got <= exact + ticks * TICK + 1e-9, "%s: %.12g, closed form %.12g", what,
              got, exact);
}

static json_t *profile(const run_t *r, size_t *n)
{
    json_t *p = json_object_get(r->reports[BATH], "temperature_profile");
    cr_assert(json_is_object(p), "no temperature_profile");
    json_t *t = json_object_get(p, "time"), *v = json_object_get(p, "value");
    cr_assert(json_is_array(t) && json_is_array(v) && json_array_size(t) == json_array_size(v));
    *n = json_array_size(t);
    return p;
}

static double series_at(json_t *p, const char *which, size_t i)
{
    return json_real_value(json_array_get(json_object_get(p, which), i));
}

/* Parts (entities with factory.part) in a simulator's world, and the
 * moves their trackers counted. */
static int64_t parts_in(const run_t *r, int sim, uint64_t *moves_min, uint64_t *moves_max)
{
    kr_registry_t *reg = kr_model_registry(r->m);
    kr_component_t part = kr_component_lookup(reg, "factory.part"), tracker = kr_component_lookup(reg, "factory.tracker");
    cr_assert(part != KR_COMPONENT_NONE && tracker != KR_COMPONENT_NONE);
    kr_world_t *w = kr_sim_world(kr_model_sim(r->m, (uint32_t)sim));
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { part } }), KR_OK);
    int64_t n = 0;
    *moves_min = UINT64_MAX, *moves_max = 0;
    while (kr_view_next(&v)) {
        const uint64_t *moves = kr_component_get(w, kr_view_entity(&v), tracker);
        cr_assert(moves, "a part without its tracker");
        if (*moves < *moves_min) *moves_min = *moves;
        if (*moves > *moves_max) *moves_max = *moves;
        n++;
    }
    kr_view_fini(&v);
    return n;
}

Test(factory_kinds, builtin_list)
{
    kr_kinds_t *kinds = kr__kinds_create();
    cr_assert_eq(kr__models_register_builtin(kinds), KR_OK);
    cr_assert_geq(kr__kinds_count(kinds), 3); /* the factory's three, and the other built-in kinds */
    cr_assert_eq(kr__kinds_find(kinds, "assembly")->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(kr__kinds_find(kinds, "robots")->formalism, KR_AGENT_BASED);
    cr_assert_eq(kr__kinds_find(kinds, "bath")->formalism, KR_CONTINUOUS);
    for (size_t i = 0; i < kr__kinds_count(kinds); i++) {
        const kr_kind_desc_t *k = kr__kinds_at(kinds, i);
        cr_assert(k->summary && k->summary[0]);
        /* Something builds its simulators; its state is digested by the
         * runtime (declared) or by the kind (its own digest). */
        cr_assert(k->setup || k->events || k->on_step, "%s", k->name);
        cr_assert(k->digest || k->state_fields || k->state_digest, "%s", k->name);
    }
    for (int i = 0; i < NSIMS; i++) {
        const kr_kind_desc_t *k = kr__kinds_find(kinds, kind_names[i]);
        cr_assert(k->register_types && k->report && k->params && k->state_size, "%s", k->name);
    }
    cr_assert_neq(kr__models_register_builtin(kinds), KR_OK, "duplicates are refused");
    kr__kinds_destroy(kinds);
}

/* One part: made at 0.5, picked up at once (promise 0), 10 / 2 = 5 steps to
 * the end of the path (steps 1 .. 5), 2 on the way to the bath, then heated
 * from 20 to 60 in a bath at 100. */
Test(factory_kinds, single_part_lead_time)
{
    run_t r;
    double h = heat_time(100, 20, 60, 0.1);
    run_go(&r, factory(1, 100, "'limit': 1, 'first': 0.5", "", "'initial': 100, " CONST_BATH));
    cr_assert_eq(fig_int(&r, BATH, "finished"), 1);
    expect_after_crossing(fig_num(&r, BATH, "mean_lead_time"), (5 - 0.5) + 2 + h, 1, "lead time");
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 100.0, 0, "the bath held its temperature");
    run_free(&r);

    /* ceil(7 / 3) = 3 steps, a delay of 3.5 above the promise, another bath */
    h = heat_time(90, 15, 75, 0.25);
    run_go(&r, factory(1, 100, "'limit': 1, 'first': 0.5", "'path_length': 7, 'speed': 3, 'delay': 3.5",
                       "'initial': 90, 'part_temperature': 15, 'target': 75, 'exchange': 0.25, " CONST_BATH));
    expect_after_crossing(fig_num(&r, BATH, "mean_lead_time"), (3 - 0.5) + 3.5 + h, 1, "lead time");
    run_free(&r);

    /* time step 0.5: a speed of 2 covers 1 per step, 10 steps to the end */
    const char *text = factory(1, 100, "'limit': 1, 'first': 0.25", "", "'initial': 100, " CONST_BATH);
    char buf[8192];
    const char *ts = strstr(text, "'time_step': 1,");
    cr_assert(ts);
    snprintf(buf, sizeof buf, "%.*s'time_step': 0.5,%s", (int)(ts - text), text, ts + strlen("'time_step': 1,"));
    run_go(&r, buf);
    expect_after_crossing(fig_num(&r, BATH, "mean_lead_time"), (5 - 0.25) + 2 + heat_time(100, 20, 60, 0.1), 1,
                          "lead time");
    run_free(&r);
}

/* The state event against the closed form, part after part: each handler
 * takes the hot part out, and the next part's rising crossing fires. */
Test(factory_kinds, state_event_closed_form)
{
    run_t r;
    double h = heat_time(90, 15, 75, 0.25);
    run_go(&r, factory(1, 200, "'limit': 30, 'first': 0.5, 'interval': {'dist': 'constant', 'value': 3}",
                       "", "'initial': 90, 'part_temperature': 15, 'target': 75, 'exchange': 0.25, " CONST_BATH));
    cr_assert_eq(fig_int(&r, BATH, "finished"), 30);
    cr_assert_eq(fig_int(&r, BATH, "lead_time_count"), 30);
    /* every part: 4.5 to the path's end (the first step is the next whole unit), 2 to the bath */
    expect_after_crossing(fig_num(&r, BATH, "lead_time_min"), 4.5 + 2 + h, 1, "shortest lead time");
    expect_after_crossing(fig_num(&r, BATH, "lead_time_max"), 4.5 + 2 + h, 1, "longest lead time");
    cr_assert_eq(fig_int(&r, BATH, "in_bath"), 0);
    cr_assert_eq(fig_int(&r, BATH, "waiting"), 0);
    size_t n;
    json_t *p = profile(&r, &n);
    for (size_t i = 0; i < n; i++) cr_assert_float_eq(series_at(p, "value", i), 90.0, 0);
    run_free(&r);

    /* Two parts in the bath at once (parts every 3, each 6.4 in the bath):
     * handlers alternate with arrivals and each part still leaves on time. */
    run_go(&r, factory(1, 200, "'limit': 30, 'first': 0.5, 'interval': {'dist': 'constant', 'value': 1.5}",
                       "", "'initial': 90, 'part_temperature': 15, 'target': 75, 'exchange': 0.25, " CONST_BATH));
    cr_assert_eq(fig_int(&r, BATH, "finished"), 30);
    /* Parts made at a whole unit are moved by the step at that time (arrivals
     * run before steps): they reach the path's end 4 later, the others 4.5. */
    expect_after_crossing(fig_num(&r, BATH, "lead_time_min"), 4 + 2 + h, 1, "shortest lead time");
    expect_after_crossing(fig_num(&r, BATH, "lead_time_max"), 4.5 + 2 + h, 1, "longest lead time");
    run_free(&r);
}

/* The bath heats a part, cools by losing heat, and gives heat to parts: a
 * part heated in a cooling bath takes longer than in a held one. */
Test(factory_kinds, bath_gives_heat)
{
    run_t r;
    run_go(&r, factory(1, 200, "'limit': 1, 'first': 0.5", "", "'initial': 100, 'heater': 0, 'loss': 0, "
                       "'heat_ratio': 0.5"));
    double lead = fig_num(&r, BATH, "mean_lead_time");
    /* Heat is conserved: Tb + 0.5 Ti stays 110, so Tb ends at 110 - 0.5 x 60 = 80 when the part leaves,
     * and the part follows d(Ti)/dt = 0.1 (110 - 1.5 Ti) towards 73.3. */
    double ti_inf = 110.0 / 1.5, k = 0.15;
    double exact = 4.5 + 2 + log((ti_inf - 20) / (ti_inf - 60)) / k;
    expect_after_crossing(lead, exact, 1, "lead time with heat exchange");
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 80.0, 1e-4);
    run_free(&r);

    /* heater and loss alone, no parts: Tb = 100 - 80 e^{-0.05 t} */
    run_go(&r, factory(1, 50, "'first': 1000", "", ""));
    cr_assert_eq(fig_int(&r, BATH, "received"), 0);
    cr_assert_float_eq(fig_num(&r, BATH, "temperature"), 100.0 - 80.0 * exp(-0.05 * 50), 1e-6);
    cr_assert(json_is_null(json_object_get(r.reports[BATH], "mean_lead_time")), "no parts, no mean");
    run_free(&r);
}

/* One robot: parts queue for it; part k leaves the dock at 10 k, so its
 * lead time grows by 10 - 3 per part. The robot is busy from 0.5 to 50. */
Test(factory_kinds, robots_fifo_and_utilisation)
{
    run_t r;
    double h = heat_time(100, 20, 60, 0.1), first = 4.5 + 2 + h;
    run_go(&r, factory(1, 100, "'limit': 5, 'first': 0.5, 'interval': {'dist': 'constant', 'value': 3}",
                       "'robots': 1", "'initial': 100, " CONST_BATH));
    cr_assert_eq(fig_int(&r, ROBOTS, "received"), 5);
    cr_assert_eq(fig_int(&r, ROBOTS, "delivered"), 5);
    cr_assert_eq(fig_int(&r, BATH, "finished"), 5);
    expect_after_crossing(fig_num(&r, BATH, "lead_time_min"), first, 1, "first part");
    expect_after_crossing(fig_num(&r, BATH, "lead_time_max"), first + 4 * 7, 1, "last part");
    expect_after_crossing(fig_num(&r, BATH, "mean_lead_time"), first + 2 * 7, 1, "mean");
    cr_assert_float_eq(fig_num(&r, ROBOTS, "utilisation"), 49.5 / 100, 1e-12);
    run_free(&r);

    /* five robots for the same parts: nobody waits, each robot busy 10 per part */
    run_go(&r, factory(1, 100, "'limit': 5, 'first': 0.5, 'interval': {'dist': 'constant', 'value': 3}",
                       "'robots': 5", "'initial': 100, " CONST_BATH));
    expect_after_crossing(fig_num(&r, BATH, "lead_time_max"), first, 1, "no waiting");
    /* loaded at 0.5 + 3k, back at the dock at the tenth step after: 9.5 each */
    cr_assert_float_eq(fig_num(&r, ROBOTS, "utilisation"), 5 * 9.5 / 100 / 5, 1e-12);
    run_free(&r);
}

/* One slot: parts wait for it; each enters when the last leaves. Cut at
 * 20, everything is accounted for. */
Test(factory_kinds, bath_slots_and_queue)
{
    run_t r;
    double h = heat_time(100, 20, 60, 0.1);
    const char *line = "'limit': 6, 'first': 0.5, 'interval': {'dist': 'constant', 'value': 3}";
    run_go(&r, factory(1, 100, line, "", "'capacity': 1, 'initial': 100, " CONST_BATH));
    cr_assert_eq(fig_int(&r, BATH, "finished"), 6);
    /* arrivals at 7, 10, ..., 22; part k leaves at 7 + (k + 1) h (a tick late at most per part) */
    expect_after_crossing(fig_num(&r, BATH, "lead_time_max"), 7 + 6 * h - 15.5, 6, "last part");
    expect_after_crossing(fig_num(&r, BATH, "lead_time_min"), 7 + h - 0.5, 1, "first part");
    run_free(&r);

    run_go(&r, factory(1, 20, line, "", "'capacity': 1, 'initial': 100, " CONST_BATH));
    cr_assert_eq(fig_int(&r, ASSEMBLY, "made"), 6);       /* 0.5 .. 15.5 */
    cr_assert_eq(fig_int(&r, ROBOTS, "delivered"), 6);    /* shipped at 5, 8, ..., 20 (the end runs) */
    cr_assert_eq(fig_int(&r, ROBOTS, "in_transit"), 0);
    cr_assert_eq(fig_int(&r, BATH, "received"), 5);       /* at 7, 10, 13, 16, 19; the last one is due at 22 */
    cr_assert_eq(fig_int(&r, BATH, "finished"), 1);       /* at 7 + h; the next at 7 + 2 h > 20 */
    cr_assert_eq(fig_int(&r, BATH, "in_bath"), 1);
    cr_assert_eq(fig_int(&r, BATH, "waiting"), 3);
    run_free(&r);
}

/* Cut in full flow (ERS's model, unlimited): nothing lost, only held. */
Test(factory_kinds, conservation_mid_flow)
{
    run_t r;
    run_go(&r, factory(1, 101.5, "", "", ""));
    int64_t made = fig_int(&r, ASSEMBLY, "made");
    int64_t got = fig_int(&r, ROBOTS, "received"), delivered = fig_int(&r, ROBOTS, "delivered");
    int64_t held = fig_int(&r, ROBOTS, "in_transit"), bath = fig_int(&r, BATH, "received");
    int64_t finished = fig_int(&r, BATH, "finished"), in_bath = fig_int(&r, BATH, "in_bath");
    int64_t waiting = fig_int(&r, BATH, "waiting");
    cr_assert(made > 25 && made < 100, "made %lld parts in 101.5 units at mean interval 2", (long long)made);
    cr_assert_eq(got, made, "promise 0: every part made has reached the robots");
    cr_assert_eq(got, delivered + held);
    cr_assert(fig_int(&r, ROBOTS, "waiting") <= held);
    uint64_t lo, hi;
    cr_assert_eq(parts_in(&r, ROBOTS, &lo, &hi), held);
    /* Delivered but not yet in the bath: only parts shipped in the last 2 units (steps 100, 101). */
    cr_assert(bath <= delivered && delivered - bath <= 2 * 8, "delivered %lld, bath %lld", (long long)delivered,
              (long long)bath);
    cr_assert(finished > 0);
    cr_assert_eq(bath, finished + in_bath + waiting);
    cr_assert_eq(parts_in(&r, BATH, &lo, &hi), in_bath + waiting);
    cr_assert_eq(fig_int(&r, BATH, "lead_time_count"), finished);
    cr_assert_eq(parts_in(&r, ASSEMBLY, &lo, &hi), 0, "parts leave the line as they are made");
    run_free(&r);
}

/* Parts arrive through sync-events as entities, and on_submodel_move fires
 * on their tracker: once at the robots, twice in the bath. */
Test(factory_kinds, parts_move_as_entities)
{
    run_t r;
    /* a bath at 50 never brings a part to 60: every part delivered stays in it */
    run_go(&r, factory(1, 60, "'interval': {'dist': 'constant', 'value': 2}", "'robots': 2",
                       "'initial': 50, " CONST_BATH));
    uint64_t lo, hi;
    int64_t at_robots = parts_in(&r, ROBOTS, &lo, &hi);
    cr_assert_gt(at_robots, 0);
    cr_assert(lo == 1 && hi == 1, "moves of parts at the robots: %llu .. %llu", (unsigned long long)lo,
              (unsigned long long)hi);
    int64_t in_bath = parts_in(&r, BATH, &lo, &hi);
    cr_assert_gt(in_bath, 0);
    cr_assert_eq(in_bath, fig_int(&r, BATH, "received"));
    cr_assert_eq(fig_int(&r, BATH, "finished"), 0);
    cr_assert_eq(fig_int(&r, BATH, "in_bath") + fig_int(&r, BATH, "waiting"), in_bath);
    cr_assert(lo == 2 && hi == 2, "moves of parts in the bath: %llu .. %llu", (unsigned long long)lo,
              (unsigned long long)hi);
    /* the robots themselves stay: entities named robot[0], robot[1] */
    kr_world_t *w = kr_sim_world(kr_model_sim(r.m, ROBOTS));
    cr_assert_neq(kr_entity_find(w, "robot[0]"), KR_ENTITY_INVALID);
    cr_assert_neq(kr_entity_find(w, "robot[1]"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "robot[2]"), KR_ENTITY_INVALID);
    run_free(&r);
}

/* ERS's example: many parts finish, the bath stays in a sane range. */
Test(factory_kinds, example_figures)
{
    run_t r;
    run_go(&r, factory(1, 3600, "", "'robots': 8", "'initial': 80"));
    int64_t made = fig_int(&r, ASSEMBLY, "made"), finished = fig_int(&r, BATH, "finished");
    cr_assert(made > 1700 && made < 1900, "made %lld", (long long)made);
    cr_assert(finished > made - 30, "finished %lld of %lld", (long long)finished, (long long)made);
    double lead = fig_num(&r, BATH, "mean_lead_time");
    cr_assert(lead > 15 && lead < 30, "mean lead time %g", lead);
    double u = fig_num(&r, ROBOTS, "utilisation");
    cr_assert(u > 0.5 && u < 0.75, "utilisation %g", u);
    size_t n;
    json_t *p = profile(&r, &n);
    cr_assert(n > 1000 && n <= 10001, "%zu points", n);
    cr_assert_float_eq(series_at(p, "time", 0), 0.0, 0);
    cr_assert_float_eq(series_at(p, "value", 0), 80.0, 0);
    cr_assert_float_eq(series_at(p, "time", n - 1), 3600.0, 0);
    cr_assert_float_eq(series_at(p, "value", n - 1), fig_num(&r, BATH, "temperature"), 0);
    for (size_t i = 0; i < n; i++) {
        double t = series_at(p, "value", i);
        cr_assert(t > 65 && t < 95, "temperature %g at %g", t, series_at(p, "time", i));
        if (i) cr_assert(series_at(p, "time", i) >= series_at(p, "time", i - 1));
    }
    run_free(&r);
}

/* At most profile_points points (plus the last update point), spread over the run. */
Test(factory_kinds, profile_capped)
{
    run_t r;
    run_go(&r, factory(1, 400, "", "", "'profile_points': 10"));
    size_t n;
    json_t *p = profile(&r, &n);
    cr_assert(n >= 5 && n <= 11, "%zu points", n);
    cr_assert_float_eq(series_at(p, "time", 0), 0.0, 0);
    cr_assert_float_eq(series_at(p, "time", n - 1), 400.0, 0);
    cr_assert(series_at(p, "time", n / 2) > 50 && series_at(p, "time", n / 2) < 350, "spread over the run");
    for (size_t i = 1; i < n; i++) cr_assert(series_at(p, "time", i) > series_at(p, "time", i - 1));
    run_free(&r);
}

static void run_digest(uint64_t seed, uint64_t *checksum, uint64_t *run_checksum, uint64_t digests[NSIMS],
                       json_t *reports[NSIMS])
{
    run_t r;
    run_go(&r, factory(seed, 500, "'interval': {'dist': 'uniform', 'min': 0.5, 'max': 2.5}", "'robots': 6",
                       "'capacity': 4"));
    *checksum = kr_model_checksum(r.m);
    *run_checksum = kr__run_checksum(r.f, r.m);
    memcpy(digests, r.digests, sizeof r.digests);
    for (int i = 0; i < NSIMS; i++) reports[i] = json_incref(r.reports[i]);
    run_free(&r);
}

Test(factory_kinds, deterministic)
{
    uint64_t c1, c2, c3, k1, k2, k3, d1[NSIMS], d2[NSIMS], d3[NSIMS];
    json_t *r1[NSIMS], *r2[NSIMS], *r3[NSIMS];
    run_digest(7, &c1, &k1, d1, r1);
    run_digest(7, &c2, &k2, d2, r2);
    cr_assert_eq(c1, c2);
    cr_assert_eq(k1, k2, "the run's checksum (events and final states) too");
    cr_assert_eq(memcmp(d1, d2, sizeof d1), 0);
    for (int i = 0; i < NSIMS; i++)
        cr_assert(json_equal(r1[i], r2[i]), "%s's figures (temperatures, profile) equal to the bit", kind_names[i]);
    cr_assert_gt(json_integer_value(json_object_get(r1[BATH], "finished")), 100);
    run_digest(8, &c3, &k3, d3, r3);
    cr_assert_neq(c1, c3, "another seed, another run");
    cr_assert_neq(k1, k3);
    cr_assert_neq(d1[BATH], d3[BATH]);
    cr_assert_neq(d1[ROBOTS], d3[ROBOTS]);
    for (int i = 0; i < NSIMS; i++) json_decref(r1[i]), json_decref(r2[i]), json_decref(r3[i]);
}

Test(factory_kinds, param_errors)
{
    const char *seed = factory(1, 10, "", "", "");
    expect_setup_error(seed, "simulators.AssemblyLine.params={}", "simulators[0].params.to",
                       "the name of a simulator with a dependency from 'AssemblyLine'", "nothing");
    expect_setup_error(seed, "simulators.AssemblyLine.params.to=Nowhere", "simulators[0].params.to",
                       "the name of a simulator with a dependency from 'AssemblyLine' (there is no simulator "
                       "'Nowhere')", "\"Nowhere\"");
    expect_setup_error(seed, "simulators.AssemblyLine.params.to=ChemicalBath", "simulators[0].params.to",
                       "the name of a simulator with a dependency from 'AssemblyLine' (none to 'ChemicalBath')",
                       "\"ChemicalBath\"");
    /* a target that cannot take parts: refused before the run (the run
     * failed, exit 1, when the first part left; kairos validate took it) */
    expect_setup_error("{'end_time': 50, 'simulators': [{'name': 'a', 'kind': 'assembly', 'params': {'to': 'b'}}, "
                       "{'name': 'b', 'kind': 'assembly', 'params': {'to': 'a'}}], 'dependencies': [{'from': 'a', "
                       "'to': 'b', 'promise': 1}, {'from': 'b', 'to': 'a', 'promise': 1}]}", "seed=1",
                       "simulators[0].params.to", "a simulator that receives factory.ship (what this one sends it)",
                       "'b', whose kind does not receive it");
    expect_setup_error(seed, "simulators.AssemblyLine.params.interval={\"dist\": \"constant\", \"value\": 0}",
                       "simulators[0].params.interval", "a distribution with a mean of at least one tick (1e-06), or "
                       "a \"limit\"", "a distribution with mean 0 and no limit");
    /* (a mean below a tick: each gap taken as one, a million parts a unit) */
    expect_setup_error(seed, "simulators.AssemblyLine.params.interval={\"dist\": \"constant\", \"value\": 5e-324}",
                       "simulators[0].params.interval", "a distribution with a mean of at least one tick (1e-06), or "
                       "a \"limit\"", "a distribution with mean 4.94066e-324 and no limit");
    expect_setup_error(seed, "simulators.AssemblyLine.params.limit=-1", "simulators[0].params.limit",
                       "a whole number >= 0", "-1");
    /* robots */
    expect_setup_error(seed, "simulators.TransportRobots.params.delay=1", "simulators[1].params.delay",
                       "a duration at least the promise of the edge to \"to\"",
                       "1, below the promise 2 of 'TransportRobots' -> 'ChemicalBath'");
    expect_setup_error(seed, "simulators.TransportRobots.params.robots=0", "simulators[1].params.robots",
                       "a whole number >= 1, <= 1000000", "0");
    expect_setup_error(seed, "simulators.TransportRobots.params.robots=two", "simulators[1].params.robots",
                       "a whole number >= 1, <= 1000000", "\"two\"");
    expect_setup_error(seed, "simulators.TransportRobots.params.path_length=0", "simulators[1].params.path_length",
                       "a number > 0", "0");
    expect_setup_error(seed, "simulators.TransportRobots.params.speed=-2", "simulators[1].params.speed",
                       "a number > 0", "-2");
    expect_setup_error(seed, "simulators.TransportRobots.params.speed=1e-20", "simulators[1].params.speed",
                       "a speed that covers the path in 1 to 1e15 steps", "1e+21 steps of 1e-20 to cover a path of 10");
    expect_setup_error(seed, "simulators.TransportRobots.params.carry_steps=3", "simulators[1].params.carry_steps",
                       "a parameter of kind 'robots' (to, robots, path_length, speed, delay)",
                       "the unknown key \"carry_steps\"");
    /* bath */
    expect_setup_error(seed, "simulators.ChemicalBath.params.loss=-1", "simulators[2].params.loss", "a number >= 0",
                       "-1");
    expect_setup_error(seed, "simulators.ChemicalBath.params.heater=true", "simulators[2].params.heater", "a number",
                       "true");
    expect_setup_error(seed, "simulators.ChemicalBath.params.exchange=0", "simulators[2].params.exchange",
                       "a number > 0", "0");
    expect_setup_error(seed, "simulators.ChemicalBath.params.heat_ratio=-0.5", "simulators[2].params.heat_ratio",
                       "a number >= 0", "-0.5");
    expect_setup_error(seed, "simulators.ChemicalBath.params.capacity=0", "simulators[2].params.capacity",
                       "a whole number >= 1, <= 100000", "0");
    expect_setup_error(seed, "simulators.ChemicalBath.params.target=20", "simulators[2].params.target",
                       "a temperature above \"part_temperature\"", "20, not above \"part_temperature\" 20");
    expect_setup_error(seed, "simulators.ChemicalBath.params.profile_points=1", "simulators[2].params.profile_points",
                       "a whole number >= 2, <= 100000000", "1");
    expect_setup_error(seed, "simulators.ChemicalBath.params.k=1", "simulators[2].params.k",
                       "a parameter of kind 'bath' (ambient, heater, loss, exchange, heat_ratio, capacity, "
                       "part_temperature, target, profile_points, initial)",
                       "the unknown key \"k\"");
}

/* Robots move once per step: only an agent-based simulator has them. The
 * bath needs a continuous one for its ODE and state event. The runtime
 * refuses the others (the kinds declare the formalisms they allow). */
/* (refused where the model file's entry is read) */
static void expect_load_error(const char *text, const char *jpath, const char *expected, const char *found)
{
    cr_assert_null(mt_load(text, NULL), "the load should fail (%s)", jpath);
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
}

Test(factory_kinds, formalisms_refused)
{
    expect_load_error("{'end_time': 10, 'simulators': [{'name': 'A', 'kind': 'robots', 'formalism': "
                      "'discrete-event', 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', 'time_step': 1}],"
                      " 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0}]}",
                      "simulators[0].formalism", "a formalism of kind 'robots' (agent-based)",
                      "\"discrete-event\"");
    expect_load_error("{'end_time': 10, 'simulators': [{'name': 'A', 'kind': 'robots', 'formalism': "
                      "'continuous', 'time_step': 1, 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', "
                      "'time_step': 1}], 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0}]}",
                      "simulators[0].formalism", "a formalism of kind 'robots' (agent-based)",
                      "\"continuous\"");
    expect_load_error("{'end_time': 10, 'simulators': [{'name': 'B', 'kind': 'bath', 'formalism': 'agent-based',"
                      " 'time_step': 1}]}", "simulators[0].formalism",
                      "a formalism of kind 'bath' (continuous)", "\"agent-based\"");
}

/* The assembly line may feed the bath directly (any factory receiver). */
Test(factory_kinds, assembly_straight_to_bath)
{
    kr__model_file_t *f = mt_load("{'seed': 5, 'end_time': 100, 'simulators': ["
                                 " {'name': 'Line', 'kind': 'assembly', 'params': {'to': 'Bath', 'limit': 10}},"
                                 " {'name': 'Bath', 'kind': 'bath', 'time_step': 1, 'params': {'initial': 100, "
                                 CONST_BATH "}}],"
                                 " 'dependencies': [{'from': 'Line', 'to': 'Bath', 'promise': 0.5}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_report_t *ra = kr__report_open(), *rb = kr__report_open();
    kr__model_file_kind(f, 0)->report(kr_model_sim(m, 0), ra);
    kr__model_file_kind(f, 1)->report(kr_model_sim(m, 1), rb);
    cr_assert_eq(json_integer_value(json_object_get(kr__report_json(ra), "made")), 10);
    cr_assert_eq(json_integer_value(json_object_get(kr__report_json(rb), "received")), 10);
    cr_assert_eq(json_integer_value(json_object_get(kr__report_json(rb), "finished")), 10);
    double lead = json_real_value(json_object_get(kr__report_json(rb), "lead_time_max"));
    expect_after_crossing(lead, 0.5 + heat_time(100, 20, 60, 0.1), 1, "lead time");
    kr__report_close(ra);
    kr__report_close(rb);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* "regions" on a kind that never asks for its cut (kr_params_region_cut)
 * would run each region as the whole world: refused, naming the entry. */
Test(factory_kinds, regions_refused_for_a_kind_that_is_not_cut)
{
    expect_setup_error("{'end_time': 10, 'simulators': ["
                       " {'name': 'R', 'kind': 'robots', 'formalism': 'agent-based', 'time_step': 1, 'regions': [2, 1],"
                       "  'params': {'to': 'B'}},"
                       " {'name': 'B', 'kind': 'bath', 'formalism': 'continuous', 'time_step': 2}],"
                       " 'dependencies': [{'from': 'R[*]', 'to': 'B', 'promise': 2}]}",
                       NULL, "simulators[0].regions", "a kind that cuts its world into regions (docs/regions.md)",
                       "kind 'robots', which does not");
}
