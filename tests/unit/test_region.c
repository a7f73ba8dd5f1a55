/* Regions (kairos/region.h): the geometry of a cut, the model-file
 * expansion of "regions": [P, Q] and its errors, the cells a region
 * stores, and runs of the walkers kind in one process whose state digest
 * and per-step audit do not depend on the cut. Multi-rank runs are in
 * tests/cli/test_cli_mpi.c. */
#include "model_text.h"

TestSuite(region, .fini = mt_cleanup);

/* ---- geometry ---- */

static void check_tiling(int32_t w, int32_t h, uint32_t p, uint32_t q, uint32_t k)
{
    kr_region_grid_t g = { w, h, p, q, k };
    cr_assert_eq(kr_region_grid_check(&g), KR_OK, "%s", kr_last_error());
    uint64_t area = 0;
    int32_t minw = INT32_MAX, maxw = 0;
    for (uint32_t i = 0; i < p * q; i++) {
        kr_rect_t r = kr_region_grid_rect(&g, i);
        area += kr_rect_area(r);
        int32_t rw = r.x1 - r.x0;
        if (rw < minw) minw = rw;
        if (rw > maxw) maxw = rw;
        kr_rect_t s = kr_region_grid_stored(&g, i);
        cr_assert(s.x0 == (r.x0 - (int32_t)k < 0 ? 0 : r.x0 - (int32_t)k) &&
                  s.x1 == (r.x1 + (int32_t)k > w ? w : r.x1 + (int32_t)k) &&
                  s.y0 == (r.y0 - (int32_t)k < 0 ? 0 : r.y0 - (int32_t)k) &&
                  s.y1 == (r.y1 + (int32_t)k > h ? h : r.y1 + (int32_t)k), "stored = own + halo, clipped");
    }
    cr_assert_eq(area, (uint64_t)w * (uint64_t)h, "the regions tile the world");
    cr_assert_leq(maxw - minw, 1, "sizes differ by at most one cell");
    for (int32_t y = 0; y < h; y++)
        for (int32_t x = 0; x < w; x++) {
            uint32_t o = kr_region_grid_owner(&g, x, y);
            cr_assert_lt(o, p * q);
            cr_assert(kr_rect_contains(kr_region_grid_rect(&g, o), x, y), "cell (%d, %d) owner %u", x, y, o);
        }
    cr_assert_eq(kr_region_grid_owner(&g, -1, 0), UINT32_MAX);
    cr_assert_eq(kr_region_grid_owner(&g, w, 0), UINT32_MAX);
    cr_assert_eq(kr_region_grid_owner(&g, 0, h), UINT32_MAX);
}

Test(region, cuts_tile_the_world)
{
    check_tiling(10, 10, 1, 1, 1);
    check_tiling(60, 40, 2, 2, 1);
    check_tiling(7, 5, 3, 2, 2);
    check_tiling(13, 1, 13, 1, 0);
    check_tiling(1000, 3, 7, 3, 1);
}

Test(region, neighbours_are_the_eight_around)
{
    kr_region_grid_t g = { 30, 30, 3, 3, 1 };
    uint32_t nb[8];
    cr_assert_eq(kr_region_grid_neighbours(&g, 4, nb), 8);
    for (uint32_t i = 0, want = 0; i < 8; i++, want++) {
        if (want == 4) want++;
        cr_assert_eq(nb[i], want);
    }
    cr_assert_eq(kr_region_grid_neighbours(&g, 0, nb), 3);
    cr_assert(nb[0] == 1 && nb[1] == 3 && nb[2] == 4);
    kr_region_grid_t one = { 30, 30, 1, 1, 1 };
    cr_assert_eq(kr_region_grid_neighbours(&one, 0, nb), 0);
}

Test(region, grid_check_refuses_more_regions_than_cells)
{
    cr_assert_eq(kr_region_grid_check(&(kr_region_grid_t){ 3, 3, 4, 1, 0 }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_region_grid_check(&(kr_region_grid_t){ 3, 3, 1, 4, 0 }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_region_grid_check(&(kr_region_grid_t){ 0, 3, 1, 1, 0 }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_region_grid_check(&(kr_region_grid_t){ 3, 3, 0, 1, 0 }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_region_grid_check(&(kr_region_grid_t){ 5000, 5000, 100, 100, 0 }), KR_ERR_INVALID_ARG);
}

Test(region, child_ids_depend_on_parent_step_and_ordinal_only)
{
    cr_assert_eq(kr_region_child_id(7, 3, 0), kr_region_child_id(7, 3, 0));
    cr_assert_neq(kr_region_child_id(7, 3, 0), kr_region_child_id(7, 3, 1));
    cr_assert_neq(kr_region_child_id(7, 3, 0), kr_region_child_id(7, 4, 0));
    cr_assert_neq(kr_region_child_id(7, 3, 0), kr_region_child_id(8, 3, 0));
    cr_assert_neq(kr_region_child_id(7, 3, 0), 0);
}

/* ---- model files ---- */

#define WALKERS(regions, extra)                                                                          \
    "{'end_time': 20, 'seed': 5, 'simulators': [{'name': 'w', 'kind': 'walkers', 'time_step': 1, "        \
    regions " 'params': {'width': 60, 'height': 40, 'agents': 3000 " extra "}}]}"

static bool has_dep(const kr_model_file_t *f, uint32_t from, uint32_t to, kr_time_t promise)
{
    for (size_t i = 0; i < f->dep_count; i++)
        if (f->deps[i].from == from && f->deps[i].to == to) return f->deps[i].promise == promise;
    return false;
}

Test(region, regions_expand_to_named_simulators_and_neighbour_dependencies)
{
    kr_model_file_t *f = mt_load(WALKERS("'regions': [3, 2],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 6);
    for (size_t i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "w[%zu]", i);
        cr_assert_str_eq(f->sims[i].name, name);
        cr_assert_eq(f->sims[i].region_index, i);
        cr_assert_eq(f->sims[i].region_cols, 3);
    }
    /* 3 x 2: corners see 3 regions, the middle column 5: 3+5+3 twice */
    cr_assert_eq(f->dep_count, 22);
    cr_assert(has_dep(f, 0, 4, KR_PRECISION_DEFAULT), "diagonal neighbours depend on each other");
    cr_assert(has_dep(f, 4, 0, KR_PRECISION_DEFAULT));
    cr_assert(!has_dep(f, 0, 2, KR_PRECISION_DEFAULT), "regions that do not touch do not");
    kr_model_file_free(f);
}

Test(region, set_recuts_the_world)
{
    kr_model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ""), "simulators.w.regions=[4,1]", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 4);
    cr_assert_eq(f->dep_count, 6, "a row of 4: 3 pairs, both ways");
    kr_model_file_free(f);
}

Test(region, bad_regions_refused)
{
    const char *expected = "[P, Q], two whole numbers >= 1 with P x Q <= 4096";
    cr_assert_null(mt_load(WALKERS("'regions': [0, 2],", ""), NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", expected, "[0,2]");
    cr_assert_null(mt_load(WALKERS("'regions': [2, 2, 2],", ""), NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", expected, "[2,2,2]");
    cr_assert_null(mt_load(WALKERS("'regions': 'two',", ""), NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", expected, "\"two\"");
    cr_assert_null(mt_load(WALKERS("'regions': [100, 100],", ""), NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", expected, "[100,100]");
    cr_assert_null(mt_load(WALKERS("'regions': [2, 1], 'count': 2,", ""), NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", "either \"regions\" or \"count\", not both", "[2,1]");
    cr_assert_null(mt_load("{'end_time': 1, 'simulators': [{'name': 's', 'kind': 'sqss', 'regions': [2, 1]}]}",
                           NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions", "an agent-based entry with a time_step", "[2,1]");
}

Test(region, more_regions_than_cells_refused)
{
    kr_model_file_t *f = mt_load(WALKERS("'regions': [61, 1],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_null(kr_model_file_build(f, NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions",
              "at most 60 x 40 regions for a 60 x 40 grid (params.width, params.height)", "[61, 1]");
    kr_model_file_free(f);
}

/* ---- storage ---- */

Test(region, a_region_stores_its_cells_and_the_halo_only)
{
    kr_model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ", 'halo': 2"), NULL);
    cr_assert(f, "%s", kr_last_error());
    /* this process runs regions 0 and 3 only, as rank 0 of 2 would with a mapping that put them there */
    int rank_of[4] = { 0, 1, 1, 0 };
    kr_model_t *m = kr_model_file_build_on(f, NULL, 0, rank_of);
    cr_assert(m, "%s", kr_last_error());
    uint64_t stored = 0;
    for (uint32_t i = 0; i < 4; i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        if (!kr_sim_is_local(s)) {
            cr_assert_null(kr_region_of(s));
            continue;
        }
        kr_region_t *r = kr_region_of(s);
        cr_assert(r);
        /* 30 x 20 own cells and a halo of 2 on the two inner sides */
        cr_assert_eq(kr_region_stored_cells(r), 32 * 22);
        cr_assert_eq(kr_spatial_grid_cells(kr_sim_world(s)), 32 * 22, "the spatial grid covers the stored cells");
        stored += kr_region_stored_cells(r);
    }
    cr_assert_eq(stored, 2 * 32 * 22);
    cr_assert_lt(stored, 60 * 40, "never the whole world");
    kr_model_destroy(m);
    kr_model_file_free(f);
}

/* ---- runs in one process ---- */

typedef struct run_result {
    uint64_t digest, audit, acts, agents;
} run_result_t;

static run_result_t run_cut(const char *regions)
{
    char set[64];
    snprintf(set, sizeof set, "simulators.w.regions=%s", regions);
    kr_model_file_t *f = mt_load(WALKERS("'regions': [1, 1],", ", 'audit': true"), set, NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr_model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    run_result_t res = { 0 };
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        kr_region_t *r = kr_region_of(s);
        res.digest += kr_model_file_kind(f, i)->state_digest(s);
        res.agents += kr_region_agent_count(r);
        res.acts += kr_region_updates(r);
    }
    kr_model_destroy(m);
    kr_model_file_free(f);
    return res;
}

Test(region, walkers_digest_is_the_same_for_every_cut)
{
    run_result_t one = run_cut("[1,1]");
    cr_assert_eq(one.agents, 3000);
    cr_assert_eq(one.acts, 3000 * 20, "every walker acts once per step, steps 1 to 20");
    const char *cuts[] = { "[2,1]", "[1,2]", "[2,2]", "[3,2]", "[6,4]" };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        run_result_t r = run_cut(cuts[i]);
        cr_assert_eq(r.agents, 3000, "%s", cuts[i]);
        cr_assert_eq(r.acts, one.acts, "%s", cuts[i]);
        cr_assert_eq(r.digest, one.digest, "%s: state digest %016llx, uncut %016llx", cuts[i],
                     (unsigned long long)r.digest, (unsigned long long)one.digest);
    }
}

Test(region, walkers_really_move_and_migrate)
{
    kr_model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr_model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    uint64_t before = kr_model_file_kind(f, 0)->state_digest(kr_model_sim(m, 0));
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t sent = 0;
    for (uint32_t i = 0; i < 4; i++) sent += kr_region_migrants_sent(kr_region_of(kr_model_sim(m, i)));
    cr_assert_gt(sent, 100, "walkers crossed region borders (%llu)", (unsigned long long)sent);
    cr_assert_neq(kr_model_file_kind(f, 0)->state_digest(kr_model_sim(m, 0)), before);
    kr_model_destroy(m);
    kr_model_file_free(f);
}
