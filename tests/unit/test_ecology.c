/* The ecology kind (models/ecology, docs/ecology.md): its rules one by one
 * on tiny worlds built through the real loader, its parameter checks, and
 * a state digest that does not depend on the cut. Multi-rank runs are in
 * tests/cli/test_cli_mpi.c. */
#include <math.h>
#include "model_text.h"
#include "models/ecology/ecology.h"

TestSuite(ecology, .fini = mt_cleanup);

/* A model of one ecology region; `params` goes inside "params". */
#define ECO(end, params)                                                                                   \
    "{'end_time': " #end ", 'seed': 3, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, "    \
    "'params': {" params "}}]}"

/* Switch off what a test does not look at. */
#define QUIET "'seed_interval': 1000000, 'upkeep': 0, 'divisor': 1000000, 'split_population': 1000000, " \
              "'repel_steps': 0, 'emit': 0"

typedef struct world {
    kr__model_file_t *f;
    kr_model_t *m;
    kr_region_t *r;
    kr_world_t *w;
    kr_component_t plant, swarm;
} world_t;

static world_t build(const char *text)
{
    world_t t = { 0 };
    t.f = mt_load(text, NULL);
    cr_assert(t.f, "%s", kr_last_error());
    t.m = kr__model_file_build(t.f, NULL);
    cr_assert(t.m, "%s", kr_last_error());
    t.r = kr_region_of(kr_model_sim(t.m, 0));
    t.w = kr_region_world(t.r);
    t.plant = kr_component_lookup(kr_model_registry(t.m), KR__ECOLOGY_PLANT);
    t.swarm = kr_component_lookup(kr_model_registry(t.m), KR__ECOLOGY_SWARM);
    return t;
}

static void run(world_t *t)
{
    cr_assert_eq(kr_model_run(t->m), KR_OK, "%s", kr_last_error());
}

static void done(world_t *t)
{
    kr_model_destroy(t->m);
    kr__model_file_free(t->f);
}

/* Adds an agent before the run (ids above any initial one). */
static kr__ecology_plant_t *add_plant(world_t *t, uint64_t id, int32_t x, int32_t y, double energy)
{
    kr_entity_t e = kr_region_agent_create(t->r, id, x, y);
    cr_assert(e != KR_ENTITY_INVALID, "%s", kr_last_error());
    kr__ecology_plant_t *p = kr_component_add(t->w, e, t->plant);
    *p = (kr__ecology_plant_t){ .energy = energy, .last_seed = 0, .attacked = -1 };
    return p;
}

static void add_swarm(world_t *t, uint64_t id, int32_t x, int32_t y, int64_t pop, double energy)
{
    kr_entity_t e = kr_region_agent_create(t->r, id, x, y);
    cr_assert(e != KR_ENTITY_INVALID, "%s", kr_last_error());
    kr__ecology_swarm_t *s = kr_component_add(t->w, e, t->swarm);
    *s = (kr__ecology_swarm_t){ .energy = energy, .population = pop };
}

/* The agents with component c after the run, at most `cap`, with cells. */
typedef struct found {
    uint64_t id;
    int32_t x, y;
    const void *data;
} found_t;

static size_t find(world_t *t, kr_component_t c, found_t *out, size_t cap)
{
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, t->w, &(kr_view_desc_t){ .include = { c } }), KR_OK);
    size_t n = 0;
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        if (n < cap) {
            out[n].id = kr_region_agent_id(t->r, e);
            kr_region_agent_cell(t->r, e, &out[n].x, &out[n].y);
            out[n].data = kr_view_get(&v, 0);
        }
        n++;
    }
    kr_view_fini(&v);
    return n;
}

static double field(world_t *t, uint32_t layer, int32_t x, int32_t y)
{
    return kr_region_field(t->r, layer)[kr_region_field_index(t->r, x, y)];
}

Test(ecology, plants_grow_up_to_their_maximum)
{
    world_t t = build(ECO(3, "'width': 1, 'height': 1, 'plant_density': 1, 'swarms': 0, 'plant_energy': 10, "
                             "'growth': 2, 'max_energy': 15, " QUIET));
    run(&t);
    found_t p[2];
    cr_assert_eq(find(&t, t.plant, p, 2), 1);
    cr_assert_float_eq(((const kr__ecology_plant_t *)p[0].data)->energy, 15.0, 1e-12, "10 + 2 + 2, then capped");
    done(&t);
    t = build(ECO(2, "'width': 1, 'height': 1, 'plant_density': 1, 'swarms': 0, 'plant_energy': 10, "
                     "'growth': 2, 'max_energy': 50, " QUIET));
    run(&t);
    cr_assert_eq(find(&t, t.plant, p, 2), 1);
    cr_assert_float_eq(((const kr__ecology_plant_t *)p[0].data)->energy, 14.0, 1e-12);
    done(&t);
}

Test(ecology, plants_below_the_survival_threshold_die)
{
    world_t t = build(ECO(1, "'width': 2, 'height': 1, 'plant_density': 0, 'swarms': 0, 'growth': 0.5, "
                             "'survival': 2, " QUIET));
    add_plant(&t, 100, 0, 0, 1.4);  /* 1.9 < 2 after growing: dies */
    add_plant(&t, 101, 1, 0, 1.5);  /* 2.0: lives */
    run(&t);
    found_t p[2];
    cr_assert_eq(find(&t, t.plant, p, 2), 1);
    cr_assert_eq(p[0].id, 101);
    done(&t);
}

Test(ecology, seeds_land_within_the_distance_and_cost_the_parent)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{'end_time': 1, 'seed': %llu, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, "
                 "'params': {'width': 21, 'height': 21, 'plant_density': 0, 'swarms': 0, 'growth': 0, "
                 "'seed_interval': 1, 'seed_cost': 4, 'seed_energy': 3, 'seed_min_distance': 2.5, "
                 "'seed_max_distance': 4, 'upkeep': 0}}]}", (unsigned long long)seed);
        world_t t = build(text);
        add_plant(&t, 1000, 10, 10, 30);
        run(&t);
        found_t p[4];
        cr_assert_eq(find(&t, t.plant, p, 4), 2, "one seed (seed %llu)", (unsigned long long)seed);
        const found_t *parent = p[0].id == 1000 ? &p[0] : &p[1], *child = p[0].id == 1000 ? &p[1] : &p[0];
        cr_assert_eq(child->id, kr_region_child_id(1000, 1, 0), "the child's id derives from the parent");
        cr_assert_float_eq(((const kr__ecology_plant_t *)parent->data)->energy, 26.0, 1e-12);
        cr_assert_float_eq(((const kr__ecology_plant_t *)child->data)->energy, 3.0, 1e-12);
        double dx = child->x - 10, dy = child->y - 10, d = sqrt(dx * dx + dy * dy);
        /* a distance in [2.5, 4], each coordinate rounded by at most 1/2 */
        cr_assert(d >= 2.5 - 0.70711 && d <= 4 + 0.70711, "seed at (%d, %d)", child->x, child->y);
        done(&t);
    }
}

Test(ecology, seeds_need_energy_above_survival_and_a_free_cell)
{
    world_t t = build(ECO(1, "'width': 21, 'height': 21, 'plant_density': 0, 'swarms': 0, 'growth': 0, "
                             "'seed_interval': 1, 'seed_cost': 4, 'survival': 2, 'upkeep': 0"));
    add_plant(&t, 1000, 10, 10, 5.9);  /* 5.9 - 4 < 2: no seed */
    run(&t);
    found_t p[2];
    cr_assert_eq(find(&t, t.plant, p, 2), 1);
    cr_assert_float_eq(((const kr__ecology_plant_t *)p[0].data)->energy, 5.9, 1e-12, "nothing spent");
    done(&t);
    /* a full world: every target is occupied */
    t = build(ECO(1, "'width': 5, 'height': 5, 'plant_density': 1, 'swarms': 0, 'growth': 0, "
                     "'plant_energy': 30, 'seed_interval': 1, 'upkeep': 0"));
    run(&t);
    cr_assert_eq(find(&t, t.plant, NULL, 0), 25, "no seed lands on a plant");
    done(&t);
}

Test(ecology, swarms_feed_on_their_cells_plants)
{
    world_t t = build(ECO(1, "'width': 1, 'height': 1, 'plant_density': 1, 'swarms': 1, 'swarm_population': 2, "
                             "'swarm_energy': 0, 'plant_energy': 10, 'growth': 0, 'consumption': 1, "
                             "'efficiency': 0.5, " QUIET));
    run(&t);
    found_t p[2], s[2];
    cr_assert_eq(find(&t, t.plant, p, 2), 1);
    cr_assert_eq(find(&t, t.swarm, s, 2), 1);
    cr_assert_float_eq(((const kr__ecology_plant_t *)p[0].data)->energy, 8.0, 1e-12, "2 eaten");
    cr_assert_eq(((const kr__ecology_plant_t *)p[0].data)->attacked, 1);
    const kr__ecology_swarm_t *sw = s[0].data;
    cr_assert_float_eq(sw->energy, 1.0, 1e-12, "half of 2 digested");
    cr_assert_eq(sw->population, 2);
    done(&t);
}

Test(ecology, plants_eaten_below_survival_die)
{
    world_t t = build(ECO(1, "'width': 1, 'height': 1, 'plant_density': 1, 'swarms': 1, 'swarm_population': 4, "
                             "'plant_energy': 3, 'survival': 1, 'growth': 0, 'consumption': 1, " QUIET));
    run(&t);
    cr_assert_eq(find(&t, t.plant, NULL, 0), 0, "all 3 eaten");
    done(&t);
}

Test(ecology, swarms_pay_upkeep_and_starve)
{
    world_t t = build(ECO(1, "'width': 1, 'height': 1, 'plant_density': 0, 'swarms': 0, 'energy_min': 1, "
                             "'upkeep': 1, 'seed_interval': 1000000, 'divisor': 1000000, 'split_population': 1000"));
    add_swarm(&t, 100, 0, 0, 3, 0);  /* deficit 3: all 3 die */
    add_swarm(&t, 101, 0, 0, 5, 2);  /* deficit 3: 3 die, 2 left with nothing */
    add_swarm(&t, 102, 0, 0, 2, 7);  /* pays 2, keeps 5 */
    run(&t);
    found_t s[4];
    cr_assert_eq(find(&t, t.swarm, s, 4), 2);
    for (int i = 0; i < 2; i++) {
        const kr__ecology_swarm_t *sw = s[i].data;
        if (s[i].id == 101) {
            cr_assert_eq(sw->population, 2);
            cr_assert_float_eq(sw->energy, 0.0, 1e-12);
        } else {
            cr_assert_eq(s[i].id, 102);
            cr_assert_eq(sw->population, 2);
            cr_assert_float_eq(sw->energy, 5.0, 1e-12);
        }
    }
    done(&t);
}

Test(ecology, swarms_reproduce_and_split)
{
    world_t t = build(ECO(1, "'width': 3, 'height': 3, 'plant_density': 0, 'swarms': 0, 'energy_min': 1, "
                             "'upkeep': 0, 'divisor': 2, 'split_population': 10, 'seed_interval': 1000000"));
    add_swarm(&t, 100, 1, 1, 10, 20);
    run(&t);
    /* 20 - 10 above the minimum buys 5 at 2 each: 15, 10 left; split 8 + 7, 5 + 5 */
    found_t s[3];
    cr_assert_eq(find(&t, t.swarm, s, 3), 2);
    const found_t *parent = s[0].id == 100 ? &s[0] : &s[1], *child = s[0].id == 100 ? &s[1] : &s[0];
    cr_assert_eq(child->id, kr_region_child_id(100, 1, 0));
    cr_assert_eq(((const kr__ecology_swarm_t *)parent->data)->population, 8);
    cr_assert_eq(((const kr__ecology_swarm_t *)child->data)->population, 7);
    cr_assert_float_eq(((const kr__ecology_swarm_t *)parent->data)->energy, 5.0, 1e-12);
    cr_assert_float_eq(((const kr__ecology_swarm_t *)child->data)->energy, 5.0, 1e-12);
    cr_assert(abs(child->x - 1) + abs(child->y - 1) <= 1, "the child walks at most one cell");
    done(&t);
}

Test(ecology, the_signal_of_fed_on_plants_diffuses_and_decays)
{
    /* The plant is eaten whole at step 1; step 2 emits 1 at its cell; step 3
     * diffuses (0.1 to each 4-neighbour) and decays (x 0.5). */
    const char *text = ECO(3, "'width': 3, 'height': 3, 'plant_density': 0, 'swarms': 0, 'consumption': 1, "
                              "'growth': 0, 'emit': 1, 'diffusion': 0.1, 'decay': 0.5, 'repel_threshold': 100, "
                              "'upkeep': 0, 'seed_interval': 1000000, 'divisor': 1000000, 'split_population': 1000");
    world_t t = build(text);
    add_plant(&t, 100, 1, 1, 1);
    add_swarm(&t, 101, 1, 1, 1, 0);
    run(&t);
    cr_assert_eq(find(&t, t.plant, NULL, 0), 0);
    cr_assert_float_eq(field(&t, KR__ECOLOGY_SIGNAL, 1, 1), 0.5 * (1 - 4 * 0.1), 1e-12);
    cr_assert_float_eq(field(&t, KR__ECOLOGY_SIGNAL, 0, 1), 0.5 * 0.1, 1e-12);
    cr_assert_float_eq(field(&t, KR__ECOLOGY_SIGNAL, 1, 2), 0.5 * 0.1, 1e-12);
    cr_assert_float_eq(field(&t, KR__ECOLOGY_SIGNAL, 0, 0), 0.0, 1e-12, "diagonals get nothing in one step");
    done(&t);
}

/* Where swarm 101 is after one step on a 3 x 3 world with a plant under
 * it in the middle, with the given signal threshold. */
static bool swarm_left_its_food(uint64_t seed, const char *threshold)
{
    char text[640];
    snprintf(text, sizeof text,
             "{'end_time': 1, 'seed': %llu, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, "
             "'params': {'width': 3, 'height': 3, 'plant_density': 0, 'swarms': 0, 'growth': 0, "
             "'repel_threshold': %s, 'repel_steps': 3, 'seed_interval': 1000000, 'upkeep': 0, "
             "'divisor': 1000000, 'split_population': 1000000, 'emit': 0}}]}", (unsigned long long)seed, threshold);
    world_t t = build(text);
    add_plant(&t, 100, 1, 1, 20);
    add_swarm(&t, 101, 1, 1, 1, 0);
    run(&t);
    found_t s[1], p[1];
    cr_assert_eq(find(&t, t.swarm, s, 1), 1);
    cr_assert_eq(find(&t, t.plant, p, 1), 1);
    bool moved = s[0].x != 1 || s[0].y != 1;
    bool ate = ((const kr__ecology_plant_t *)p[0].data)->energy < 20;
    cr_assert(moved != ate, "a swarm feeds only when it stays");
    if (moved) cr_assert_eq(((const kr__ecology_swarm_t *)s[0].data)->repelled, 2, "one of 3 repelled steps spent");
    done(&t);
    return moved;
}

Test(ecology, a_signal_above_the_threshold_repels_swarms_from_food)
{
    int moved = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        cr_assert(!swarm_left_its_food(seed, "100"), "no signal: it stays on its food");
        /* (a threshold whose double overflows: the signal's render scale stays finite) */
        cr_assert(!swarm_left_its_food(seed, "1e308"), "no signal: it stays on its food");
        moved += swarm_left_its_food(seed, "0");
    }
    /* a random walk over the cell and its 4 neighbours: 4/5 leave */
    cr_assert_geq(moved, 4, "repelled swarms walked off (%d of 10)", moved);
}

Test(ecology, the_flow_field_points_to_plant_energy)
{
    world_t t = build(ECO(8, "'width': 7, 'height': 1, 'plant_density': 0, 'swarms': 0, 'growth': 0, "
                             "'sweeps': 2, " QUIET));
    add_plant(&t, 100, 6, 0, 40);
    add_swarm(&t, 101, 0, 0, 1, 100);
    run(&t);
    for (int32_t x = 0; x < 6; x++)
        cr_assert_lt(field(&t, KR__ECOLOGY_FLOW, x, 0), field(&t, KR__ECOLOGY_FLOW, x + 1, 0),
                     "the flow rises toward the plant at x = %d", x);
    found_t s[1];
    cr_assert_eq(find(&t, t.swarm, s, 1), 1);
    cr_assert_gt(s[0].x, 0, "the swarm followed the gradient");
    done(&t);
}

Test(ecology, the_signal_lowers_the_flow)
{
    world_t t = build(ECO(3, "'width': 3, 'height': 1, 'plant_density': 0, 'swarms': 0, 'growth': 0, "
                             "'consumption': 1, 'emit': 5, 'signal_weight': 1, 'decay': 1, 'diffusion': 0, "
                             "'repel_threshold': 100, 'upkeep': 0, 'seed_interval': 1000000, "
                             "'divisor': 1000000, 'split_population': 1000"));
    add_plant(&t, 100, 1, 0, 1);
    add_swarm(&t, 101, 1, 0, 1, 0);
    run(&t);
    cr_assert_lt(field(&t, KR__ECOLOGY_FLOW, 1, 0), 0, "a signalling cell repels");
    done(&t);
}

/* ---- parameters ---- */

/* A kind's params are checked when its simulators are built. */
static void refused(const char *text)
{
    kr__model_file_t *f = mt_load(text, NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert_null(m, "refused");
    kr__model_file_free(f);
}

Test(ecology, bad_params_name_their_json_path)
{
    refused(ECO(1, "'diffusion': 0.5"));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.diffusion", "a number >= 0, <= 0.25", "0.5");
    refused(ECO(1, "'efficiency': -1"));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.efficiency", "a number >= 0, <= 1", "-1");
    refused(ECO(1, "'sweeps': 2.5"));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.sweeps", "a whole number >= 0, <= 16", "2.5");
    refused(ECO(1, "'seed_min_distance': 5, 'seed_max_distance': 2"));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.seed_min_distance", "a number <= seed_max_distance", "5");
    refused(ECO(1, "'flow_weight': 1"));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.flow_weight", "a number >= 0, < 1", "1");
    refused(ECO(1, "'grazing': 1"));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "simulators[0].params.grazing: expected a parameter of kind 'ecology' (") &&
                  strstr(kr_last_error(), "found the unknown key \"grazing\""), "%s", kr_last_error());
}

Test(ecology, sums_that_would_not_fit_64_bits_and_grids_too_large_are_refused)
{
    /* 3100 x 3100 plants of 10^6 in fixed point (10^6) pass 2^63: the
     * per-step total went negative */
    refused("{'end_time': 0, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, 'params': {"
            "'width': 3100, 'height': 3100, 'plant_energy': 1000000, 'max_energy': 1000000}}]}");
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.plant_energy",
              "at most 957336 on a 3100 x 3100 grid (the plant energy of every cell is summed exactly, in 64 bits)",
              "1e+06");
    /* one region of 6000 x 6000 cells: more than a world's dense grid */
    refused("{'end_time': 0, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, 'params': {"
            "'width': 6000, 'height': 6000}}]}");
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "region 'e': 6000 x 6000 cells with its halo, more than a region holds "
                     "(33554432 cells); cut the world into more regions (\"regions\", up to 4096 regions)"), "%s",
              kr_last_error());
    /* ... and at the largest cut, a smaller world (it said "more regions" there too) */
    refused("{'end_time': 1, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, 'regions': [64, 64], "
            "'params': {'width': 1000000, 'height': 1000000, 'max_energy': 1, 'plant_energy': 1, "
            "'seed_energy': 0.5}}]}");
    cr_assert(strstr(kr_last_error(), "region 'e[0]': 15628 x 15628 cells with its halo, more than a region holds "
                     "(33554432 cells); make the world smaller (a cut has at most 4096 regions)"), "%s",
              kr_last_error());
}

Test(ecology, regions_narrower_than_two_cells_are_refused_naming_the_cut)
{
    /* no parameter asks for a halo here: it is the least one, 1 */
    refused("{'end_time': 1, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, 'regions': [4, 1], "
            "'params': {'width': 4, 'height': 4, 'sweeps': 0, 'seed_max_distance': 0, 'seed_min_distance': 0}}]}");
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions",
              "a cut whose regions are at least 2 cells wide and high (each cell reads its 4 neighbours)",
              "4 x 1 of a 4 x 4 grid: regions 1 cell across");
    /* with parameters that ask for more, the cut is still what to change:
     * no parameter makes the least halo fit (it named seed_max_distance,
     * then seed_min_distance, and only then the cut) */
    refused("{'end_time': 1, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, 'regions': [2, 2], "
            "'params': {'height': 3}}]}");
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions",
              "a cut whose regions are at least 2 cells wide and high (each cell reads its 4 neighbours)",
              "2 x 2 of a 40 x 3 grid: regions 1 cell across");
}

Test(ecology, a_halo_wider_than_half_a_region_is_refused)
{
    /* regions 5 cells wide take a halo of 2 (a swarm or seed moving into
     * a neighbour must keep its halo cells among that neighbour's), not 3 */
    const char *text = "{'end_time': 1, 'simulators': [{'name': 'e', 'kind': 'ecology', 'time_step': 1, "
                       "'regions': [4, 1], 'params': {'width': 20, 'height': 10, 'sweeps': 3}}]}";
    refused(text);
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.sweeps",
              "at most 2 (half the narrowest region of the 4 x 1 cut, 5 cells)", "3");
}

/* ---- the cut ---- */

static uint64_t digest_of(const char *regions, uint64_t *agents)
{
    char set[64];
    snprintf(set, sizeof set, "simulators.eco.regions=%s", regions);
    kr__model_file_t *f = mt_load("{'end_time': 25, 'seed': 9, 'simulators': [{'name': 'eco', 'kind': 'ecology', "
                                 "'time_step': 1, 'params': {'width': 30, 'height': 24, 'swarms': 30, "
                                 "'seed_max_distance': 3, 'sweeps': 3}}]}", set, NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t d = 0;
    *agents = 0;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        d += kr__model_file_kind(f, i)->state_digest(kr_model_sim(m, i));
        *agents += kr_region_agent_count(kr_region_of(kr_model_sim(m, i)));
    }
    kr_model_destroy(m);
    kr__model_file_free(f);
    return d;
}

Test(ecology, the_digest_does_not_depend_on_the_cut)
{
    uint64_t n1, n;
    uint64_t one = digest_of("[1,1]", &n1);
    cr_assert_gt(n1, 100);
    const char *cuts[] = { "[2,1]", "[1,2]", "[2,2]", "[3,2]", "[5,4]" };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        uint64_t d = digest_of(cuts[i], &n);
        cr_assert_eq(n, n1, "%s: agents", cuts[i]);
        cr_assert_eq(d, one, "%s: digest %016llx, uncut %016llx", cuts[i], (unsigned long long)d,
                     (unsigned long long)one);
    }
}
