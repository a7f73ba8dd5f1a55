/* Regions (kairos/region.h): the geometry of a cut, the model-file
 * expansion of "regions": [P, Q] and its errors, the cells a region
 * stores, and runs of the walkers kind in one process whose state digest
 * and per-step audit do not depend on the cut. Multi-rank runs are in
 * tests/cli/test_cli_mpi.c. */
#include "model_text.h"
#include "net/transport.h"
#include "schedulers/model_private.h"

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

static bool has_dep(const kr__model_file_t *f, uint32_t from, uint32_t to, kr_time_t promise)
{
    for (size_t i = 0; i < f->dep_count; i++)
        if (f->deps[i].from == from && f->deps[i].to == to) return f->deps[i].promise == promise;
    return false;
}

Test(region, regions_expand_to_named_simulators_and_neighbour_dependencies)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [3, 2],", ""), NULL);
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
    kr__model_file_free(f);
}

Test(region, set_recuts_the_world)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ""), "simulators.w.regions=[4,1]", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 4);
    cr_assert_eq(f->dep_count, 6, "a row of 4: 3 pairs, both ways");
    kr__model_file_free(f);
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
    kr__model_file_t *f = mt_load(WALKERS("'regions': [61, 1],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_null(kr__model_file_build(f, NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].regions",
              "at most 60 x 40 regions for a 60 x 40 grid (params.width, params.height)", "[61,1]");
    kr__model_file_free(f);
}

/* ---- storage ---- */

Test(region, a_region_stores_its_cells_and_the_halo_only)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ", 'halo': 2"), NULL);
    cr_assert(f, "%s", kr_last_error());
    /* this process runs regions 0 and 3 only, as rank 0 of 2 would with a mapping that put them there */
    int rank_of[4] = { 0, 1, 1, 0 };
    kr_model_t *m = kr__model_file_build_on(f, NULL, 0, rank_of);
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
    kr__model_file_free(f);
}

/* A region's step driver holds a pointer into this process: packing an
 * entity that carries it fails, so no message can carry one across. */
Test(region, the_step_driver_never_travels)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [2, 1],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build_on(f, NULL, 0, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_world_t *w = kr_sim_world(kr_model_sim(m, 0));
    kr_component_t driver = kr_component_lookup(kr_model_registry(m), "kr.region.driver");
    cr_assert(driver);
    kr_entity_t e = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e, driver), "%s", kr_last_error());
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_neq(kr_pack(w, &e, 1, &b), KR_OK);
    cr_assert(strstr(kr_last_error(), "step driver cannot move"), "%s", kr_last_error());
    kr_buf_fini(&b);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* kr_region_scatter: every region of a cut gets exactly the agents placed
 * in its own cells, in (y, x, id) order, and the agents are placed once
 * for all the regions of the process (twice each: a counting pass). */
typedef struct placing {
    uint64_t calls;
    int32_t width, height;
} placing_t;

static uint64_t scramble(uint64_t x)
{
    x *= 0x9e3779b97f4a7c15ULL;
    return x ^ (x >> 29);
}

static bool place_test(uint64_t id, int32_t *x, int32_t *y, void *arg)
{
    placing_t *pl = arg;
    pl->calls++;
    if (id % 7 == 0) return false; /* no such agent */
    *x = (int32_t)(scramble(id) % (uint64_t)pl->width);
    *y = (int32_t)(scramble(id ^ 0x55) % (uint64_t)pl->height);
    return true;
}

static bool place_outside(uint64_t id, int32_t *x, int32_t *y, void *arg)
{
    (void)arg;
    *x = id == 5 ? -1 : 0;
    *y = 0;
    return true;
}

Test(region, scatter_places_once_and_hands_each_region_its_own)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [3, 2],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build_on(f, NULL, 0, NULL);
    cr_assert(m, "%s", kr_last_error());
    placing_t pl = { 0, 60, 40 };
    const uint64_t first = 1000000, count = 5000;
    uint64_t got = 0, want = 0;
    for (uint64_t id = first; id < first + count; id++) want += id % 7 != 0;
    for (uint32_t i = 0; i < 6; i++) {
        kr_region_t *r = kr_region_of(kr_model_sim(m, i));
        kr_region_birth_t *b;
        size_t n;
        cr_assert_eq(kr_region_scatter(r, first, count, place_test, &pl, &b, &n), KR_OK, "%s", kr_last_error());
        kr_rect_t own = kr_region_rect(r);
        for (size_t k = 0; k < n; k++) {
            cr_assert(kr_rect_contains(own, b[k].x, b[k].y), "region %u got an agent of cell (%d, %d)", i, b[k].x,
                      b[k].y);
            int32_t x, y;
            cr_assert(place_test(b[k].id, &x, &y, &(placing_t){ 0, 60, 40 }) && x == b[k].x && y == b[k].y);
            if (k) cr_assert(b[k - 1].y < b[k].y || (b[k - 1].y == b[k].y && (b[k - 1].x < b[k].x ||
                             (b[k - 1].x == b[k].x && b[k - 1].id < b[k].id))), "(y, x, id) order");
        }
        got += n;
        free(b);
    }
    cr_assert_eq(got, want, "every agent once: %llu of %llu", (unsigned long long)got, (unsigned long long)want);
    cr_assert_eq(pl.calls, 2 * count, "placed once for all six regions (two passes): %llu calls",
                 (unsigned long long)pl.calls);
    kr_region_birth_t *b;
    size_t n;
    cr_assert_eq(kr_region_scatter(kr_region_of(kr_model_sim(m, 0)), 1, 10, place_outside, NULL, &b, &n),
                 KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "agent 5 placed in cell (-1, 0), outside"), "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}

static bool place_unsteady(uint64_t id, int32_t *x, int32_t *y, void *arg)
{
    placing_t *pl = arg;
    *x = (int32_t)((id + pl->calls++) % (uint64_t)pl->width); /* not a function of the id */
    *y = 0;
    return true;
}

/* Two populations under way at once (each region asks for both, in
 * turn): each is placed once, each region gets its own of both. A place
 * that does not depend on the id alone is caught, not written past. */
Test(region, scatter_keeps_two_populations_apart)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [3, 2],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build_on(f, NULL, 0, NULL);
    cr_assert(m, "%s", kr_last_error());
    placing_t a = { 0, 60, 40 }, b = { 0, 60, 40 };
    uint64_t got_a = 0, got_b = 0;
    for (uint32_t i = 0; i < 6; i++) {
        kr_region_t *r = kr_region_of(kr_model_sim(m, i));
        kr_region_birth_t *ba, *bb;
        size_t na, nb;
        cr_assert_eq(kr_region_scatter(r, 1, 1000, place_test, &a, &ba, &na), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_region_scatter(r, 5001, 500, place_test, &b, &bb, &nb), KR_OK, "%s", kr_last_error());
        for (size_t k = 0; k < na; k++) cr_assert(ba[k].id >= 1 && ba[k].id <= 1000);
        for (size_t k = 0; k < nb; k++) cr_assert(bb[k].id >= 5001 && bb[k].id <= 5500);
        got_a += na;
        got_b += nb;
        free(ba);
        free(bb);
    }
    cr_assert_eq(a.calls, 2 * 1000, "population a placed once: %llu", (unsigned long long)a.calls);
    cr_assert_eq(b.calls, 2 * 500, "population b placed once: %llu", (unsigned long long)b.calls);
    uint64_t want_a = 0, want_b = 0;
    for (uint64_t id = 1; id <= 1000; id++) want_a += id % 7 != 0;
    for (uint64_t id = 5001; id <= 5500; id++) want_b += id % 7 != 0;
    cr_assert(got_a == want_a && got_b == want_b);
    placing_t u = { 0, 60, 40 };
    kr_region_birth_t *bu;
    size_t nu;
    cr_assert_eq(kr_region_scatter(kr_region_of(kr_model_sim(m, 0)), 1, 100, place_unsteady, &u, &bu, &nu),
                 KR_ERR_STATE);
    cr_assert(strstr(kr_last_error(), "must depend on the id alone"), "%s", kr_last_error());
    cr_assert_eq(kr_region_scatter(NULL, 1, 1, place_test, &u, &bu, &nu), KR_ERR_INVALID_ARG);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* ---- runs in one process ---- */

typedef struct run_result {
    uint64_t digest, audit, acts, agents;
} run_result_t;

static run_result_t run_cut(const char *regions)
{
    char set[64];
    snprintf(set, sizeof set, "simulators.w.regions=%s", regions);
    kr__model_file_t *f = mt_load(WALKERS("'regions': [1, 1],", ", 'audit': true"), set, NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    run_result_t res = { 0 };
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        kr_region_t *r = kr_region_of(s);
        res.digest += kr__model_file_kind(f, i)->state_digest(s);
        res.agents += kr_region_agent_count(r);
        res.acts += kr_region_updates(r);
    }
    kr_model_destroy(m);
    kr__model_file_free(f);
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

/* A transport that counts the progress calls made to it and hands
 * everything else to the in-process one. */
typedef struct counting_transport {
    kr__transport_t base;
    kr__transport_t *inner;
    int progress_calls;
} counting_transport_t;

static kr_status_t ct_send(kr__transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    kr__transport_t *in = ((counting_transport_t *)t)->inner;
    return in->vtbl->send(in, from, to, bytes, len);
}
static kr_status_t ct_poll(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count)
{
    kr__transport_t *in = ((counting_transport_t *)t)->inner;
    return in->vtbl->poll(in, deliver, arg, count);
}
static size_t ct_in_flight(const kr__transport_t *t)
{
    const kr__transport_t *in = ((const counting_transport_t *)t)->inner;
    return in->vtbl->in_flight(in);
}
static int progress_calls; /* outlives the transport, which the model frees */
static void ct_destroy(kr__transport_t *t)
{
    counting_transport_t *ct = (counting_transport_t *)t;
    progress_calls = ct->progress_calls;
    ct->inner->vtbl->destroy(ct->inner);
    free(ct);
}
static void ct_progress(kr__transport_t *t) { ((counting_transport_t *)t)->progress_calls++; }

/* A long step gives the transport a chance to move its sends along
 * (kr_sim_progress), through a wrapping transport too; it changes nothing
 * in the run. */
Test(region, long_steps_let_sends_progress)
{
    static const kr__transport_vtbl_t vtbl = { .send = ct_send, .poll = ct_poll, .in_flight = ct_in_flight,
                                              .destroy = ct_destroy, .progress = ct_progress };
    kr_sim_progress(NULL); /* nothing to do */
    run_result_t plain = run_cut("[2,1]");
    kr__model_file_t *f = mt_load(WALKERS("'regions': [2, 1],", ", 'audit': true"), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_sim_progress(kr_model_sim(m, 0)); /* before the run: no transport yet, nothing to do */
    counting_transport_t *ct = calloc(1, sizeof *ct);
    ct->base.vtbl = &vtbl;
    ct->inner = kr__transport_local_create();
    cr_assert_eq(kr__model_use_transport(m, kr__transport_chaos_wrap(&ct->base, 3)), KR_OK, "%s", kr_last_error());
    progress_calls = -1;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t digest = 0;
    for (uint32_t i = 0; i < 2; i++) digest += kr__model_file_kind(f, i)->state_digest(kr_model_sim(m, i));
    kr_model_destroy(m);
    kr__model_file_free(f);
    cr_assert_eq(digest, plain.digest);
    /* 3000 walkers, 20 steps: 60,000 acts, a call every 2048 of a region's */
    cr_assert_geq(progress_calls, 28, "progress was called %d times", progress_calls);
}

Test(region, walkers_really_move_and_migrate)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [2, 2],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    uint64_t before = kr__model_file_kind(f, 0)->state_digest(kr_model_sim(m, 0));
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t sent = 0;
    for (uint32_t i = 0; i < 4; i++) sent += kr_region_migrants_sent(kr_region_of(kr_model_sim(m, i)));
    cr_assert_gt(sent, 100, "walkers crossed region borders (%llu)", (unsigned long long)sent);
    cr_assert_neq(kr__model_file_kind(f, 0)->state_digest(kr_model_sim(m, 0)), before);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* ---- halos: a kind whose agents read their neighbourhood ----
 *
 * "probe": walkers that, before moving, fold into a per-agent word the
 * heat field (diffused every step from the previous step's values) of the
 * 3 x 3 cells around them and the ids of every agent that stood in those
 * cells at the end of the previous step: their own region's from a copy
 * taken at the start of the step, the halo's from the ghosts. The words
 * are the same for every cut only if halos hold exactly the previous
 * step's field values and agents, emigrants in transit included. */

typedef struct probe {
    int64_t width, height, agents, halo;
    kr_region_t *region;
    kr_component_t acc;
    uint64_t *cell_ids;      /* (cell index << 32 ... ) pairs: own agents at the step's start */
    size_t cell_id_count, cell_id_cap;
    uint64_t bad_ghosts;
} probe_t;

typedef struct probe_acc { uint64_t word; } probe_acc_t;

static double heat0(int32_t x, int32_t y) { return (double)((x * 31 + y * 17) % 101); }

static probe_t *probe_of(kr_sim_t *sim)
{
    return kr_sim_context(sim, kr_model_find_context_type(kr_sim_model(sim), "probe.state"));
}

static void probe_fini(kr_sim_t *sim, void *c)
{
    (void)sim;
    free(((probe_t *)c)->cell_ids);
}

static kr_status_t probe_register(kr_model_t *m)
{
    kr_status_t st = kr_region_register(m);
    if (st) return st;
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = "probe.state", .size = sizeof(probe_t),
                                                        .fini = probe_fini }) ||
        !kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = "probe.acc",
                                                                             .size = sizeof(probe_acc_t) }))
        return kr_last_status();
    return KR_OK;
}

/* own agents at the start of the step, as (y, x, id) sorted triples packed in two words */
static void probe_begin(kr_region_t *r, void *arg)
{
    probe_t *p = arg;
    kr_rect_t own = kr_region_rect(r);
    p->cell_id_count = 0;
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) {
            size_t k;
            const kr_entity_t *in = kr_spatial_cell_entities(kr_region_world(r), (kr_cell_t){ x, y }, &k);
            for (size_t i = 0; i < k; i++) {
                if (p->cell_id_count + 2 > p->cell_id_cap) {
                    p->cell_id_cap = p->cell_id_cap ? p->cell_id_cap * 2 : 1024;
                    p->cell_ids = realloc(p->cell_ids, p->cell_id_cap * sizeof *p->cell_ids);
                    cr_assert(p->cell_ids);
                }
                p->cell_ids[p->cell_id_count++] = (uint64_t)(uint32_t)y << 32 | (uint32_t)x;
                p->cell_ids[p->cell_id_count++] = kr_region_agent_id(r, in[i]);
            }
        }
    /* heat: explicit diffusion from the previous step's field */
    const double *prev = kr_region_field(r, 0);
    double *next = kr_region_field_next(r, 0);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) {
            double sum = 0;
            int n = 0;
            for (int32_t dy = -1; dy <= 1; dy++)
                for (int32_t dx = -1; dx <= 1; dx++) {
                    int32_t cx = x + dx, cy = y + dy;
                    if (cx < 0 || cy < 0 || cx >= p->width || cy >= p->height) continue;
                    sum += prev[kr_region_field_index(r, cx, cy)];
                    n++;
                }
            next[kr_region_field_index(r, x, y)] = sum / n;
        }
}

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void probe_act(kr_region_t *r, kr_entity_t agent, uint64_t id, void *arg)
{
    probe_t *p = arg;
    int32_t x, y;
    cr_assert(kr_region_agent_cell(r, agent, &x, &y));
    kr_rect_t own = kr_region_rect(r);
    uint64_t heat = 0, ids = 0;
    for (int32_t dy = -1; dy <= 1; dy++)
        for (int32_t dx = -1; dx <= 1; dx++) {
            int32_t cx = x + dx, cy = y + dy;
            if (cx < 0 || cy < 0 || cx >= p->width || cy >= p->height) continue;
            heat += kr_region_agent_hash(bits(kr_region_field(r, 0)[kr_region_field_index(r, cx, cy)]), cx, cy, 1);
            if (kr_rect_contains(own, cx, cy)) {
                uint64_t key = (uint64_t)(uint32_t)cy << 32 | (uint32_t)cx;
                for (size_t i = 0; i < p->cell_id_count; i += 2)
                    if (p->cell_ids[i] == key) ids += kr_region_agent_hash(p->cell_ids[i + 1], cx, cy, 2);
            } else {
                size_t k;
                const kr_region_ghost_t *g = kr_region_ghosts(r, cx, cy, &k);
                for (size_t i = 0; i < k; i++) {
                    uint64_t data;
                    memcpy(&data, g[i].data, sizeof data);
                    if (data != g[i].id * 3 || g[i].x != cx || g[i].y != cy || (i && g[i - 1].id >= g[i].id))
                        p->bad_ghosts++;
                    ids += kr_region_agent_hash(g[i].id, cx, cy, 2);
                }
            }
        }
    probe_acc_t *a = kr_component_get(kr_region_world(r), agent, p->acc);
    a->word = kr_region_agent_hash(a->word, (int32_t)kr_region_step(r), 0, heat ^ (ids * 3));
    const int8_t d = (int8_t)(kr_rng_u64(kr_region_rng(r, id)) % 9);
    int32_t nx = x + d % 3 - 1, ny = y + d / 3 - 1;
    if (nx >= 0 && ny >= 0 && nx < p->width && ny < p->height)
        cr_assert_eq(kr_region_agent_move(r, agent, nx, ny), KR_OK, "%s", kr_last_error());
}

static void probe_ghost(kr_region_t *r, kr_entity_t agent, void *out, void *arg)
{
    (void)arg;
    uint64_t v = kr_region_agent_id(r, agent) * 3;
    memcpy(out, &v, sizeof v);
}

static uint64_t probe_word(kr_region_t *r, kr_entity_t agent, void *arg)
{
    probe_acc_t *a = kr_component_get(kr_region_world(r), agent, ((probe_t *)arg)->acc);
    return a ? a->word : 0;
}

static kr_status_t probe_setup(kr_sim_t *sim, const kr_params_t *params)
{
    probe_t *p = probe_of(sim);
    kr_status_t st = kr_params_int(params, "width", 30, 1, 1000, &p->width);
    if (!st) st = kr_params_int(params, "height", 20, 1, 1000, &p->height);
    if (!st) st = kr_params_int(params, "agents", 100, 0, 100000, &p->agents);
    if (!st) st = kr_params_int(params, "halo", 1, 1, 8, &p->halo);
    kr_region_desc_t d = { .width = (int32_t)p->width, .height = (int32_t)p->height, .halo = (uint32_t)p->halo,
                           .fields = 1, .ghost_size = 8, .arg = p, .act = probe_act, .begin_step = probe_begin,
                           .ghost = probe_ghost, .digest = probe_word };
    if (!st) st = kr_params_region_cut(params, p->width, p->height, &d.cut);
    if (st) return st;
    if (!(p->region = kr_region_create(sim, &d))) return kr_last_status();
    p->acc = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), "probe.acc");
    kr_rect_t own = kr_region_rect(p->region);
    double *heat = kr_region_field_next(p->region, 0);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) heat[kr_region_field_index(p->region, x, y)] = heat0(x, y);
    kr_rng_t *birth = kr_rng_create(kr_model_seed(kr_sim_model(sim)), KR_RNG_AGENT, 0, 0);
    for (int64_t i = 0; i < p->agents; i++) {
        kr_rng_reset(birth, kr_model_seed(kr_sim_model(sim)), KR_RNG_AGENT, (uint64_t)i + 1, UINT64_MAX);
        int32_t x = (int32_t)(kr_rng_uniform(birth) * (double)p->width);
        int32_t y = (int32_t)(kr_rng_uniform(birth) * (double)p->height);
        if (!kr_rect_contains(own, x, y)) continue;
        kr_entity_t e = kr_region_agent_create(p->region, (uint64_t)i + 1, x, y);
        cr_assert(e && kr_component_add(kr_sim_world(sim), e, p->acc));
    }
    kr_rng_destroy(birth);
    return KR_OK;
}

/* the agents, and the heat of the own cells */
static uint64_t probe_digest(kr_sim_t *sim)
{
    probe_t *p = probe_of(sim);
    uint64_t h = kr_region_state_digest(p->region);
    kr_rect_t own = kr_region_rect(p->region);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++)
            h += kr_region_agent_hash(bits(kr_region_field(p->region, 0)[kr_region_field_index(p->region, x, y)]), x,
                                      y, 3);
    return h;
}

static const kr_kind_desc_t probe_kind = { .name = "probe", .summary = "halo probe", .formalism = KR_AGENT_BASED,
                                           .register_types = probe_register, .setup = probe_setup,
                                           .state_digest = probe_digest };

static kr_status_t register_probe(kr_kinds_t *kinds) { return kr_kind_register(kinds, &probe_kind); }

static uint64_t run_probe(const char *regions, int halo, uint64_t *bad)
{
    char text[512];
    snprintf(text, sizeof text, "{'end_time': 12, 'seed': 9, 'simulators': [{'name': 'p', 'kind': 'probe', "
             "'time_step': 1, 'regions': %s, 'params': {'width': 30, 'height': 20, 'agents': 900, 'halo': %d}}]}",
             regions, halo);
    mt_write(text);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path, .register_builtin = register_probe });
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t digest = 0;
    *bad = 0;
    for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
        digest += probe_digest(kr_model_sim(m, i));
        *bad += probe_of(kr_model_sim(m, i))->bad_ghosts;
    }
    kr_model_destroy(m);
    kr__model_file_free(f);
    return digest;
}

Test(region, halos_show_the_previous_step_as_an_uncut_world_would)
{
    uint64_t bad;
    uint64_t want = run_probe("[1, 1]", 1, &bad);
    cr_assert_eq(bad, 0);
    const struct { const char *cut; int halo; } runs[] = { { "[2, 1]", 1 }, { "[1, 2]", 1 }, { "[2, 2]", 1 },
                                                          { "[3, 2]", 1 }, { "[5, 4]", 1 }, { "[2, 2]", 2 } };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        uint64_t got = run_probe(runs[i].cut, runs[i].halo, &bad);
        cr_assert_eq(bad, 0, "%s: ghosts with wrong data, cells or order", runs[i].cut);
        cr_assert_eq(got, want, "%s halo %d: %016llx, uncut %016llx", runs[i].cut, runs[i].halo,
                     (unsigned long long)got, (unsigned long long)want);
    }
}

/* A kind that does not check its halo against the cut itself: the region
 * layer refuses it, naming the region, the halo and the cut. */
Test(region, a_halo_wider_than_half_a_region_is_refused_by_the_layer)
{
    mt_write("{'end_time': 1, 'seed': 9, 'simulators': [{'name': 'p', 'kind': 'probe', 'time_step': 1, "
             "'regions': [10, 1], 'params': {'width': 30, 'height': 20, 'agents': 0, 'halo': 2}}]}");
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path, .register_builtin = register_probe });
    cr_assert(f, "%s", kr_last_error());
    cr_assert_null(kr__model_file_build(f, NULL));
    cr_assert(strstr(kr_last_error(), "region 'p[0]': a halo of 2 cells needs regions at least 4 cells wide; the "
                     "narrowest region of a 30 x 20 grid cut 10 x 1 is narrower"), "%s", kr_last_error());
    kr__model_file_free(f);
}

Test(region, moves_are_checked)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [3, 1],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_region_t *r = kr_region_of(kr_model_sim(m, 0)); /* columns 0..19 of 60 */
    cr_assert_eq(kr_rect_area(kr_region_rect(r)), 20 * 40);
    cr_assert_eq(kr_region_agent_create(r, 0, 1, 1), KR_ENTITY_INVALID, "id 0 refused");
    cr_assert_eq(kr_region_agent_create(r, 777777, 25, 1), KR_ENTITY_INVALID, "a neighbour's cell refused");
    kr_entity_t a = kr_region_agent_create(r, 777777, 19, 5);
    cr_assert(a, "%s", kr_last_error());
    cr_assert_eq(kr_region_agent_id(r, a), 777777);
    cr_assert_eq(kr_region_agent_move(r, a, -1, 5), KR_ERR_INVALID_ARG, "off the world");
    cr_assert_eq(kr_region_agent_move(r, a, 45, 5), KR_ERR_INVALID_ARG, "region 2 is no neighbour of region 0");
    int32_t x, y;
    cr_assert(kr_region_agent_cell(r, a, &x, &y) && x == 19 && y == 5, "a refused move leaves it in place");
    kr_entity_t plain = kr_entity_create(kr_region_world(r));
    cr_assert_eq(kr_spatial_insert(kr_region_world(r), plain, 18.5, 5.5), KR_OK);
    cr_assert_eq(kr_region_agent_move(r, plain, 20, 5), KR_ERR_INVALID_ARG, "only agents migrate");
    cr_assert_eq(kr_region_agent_move(r, a, 20, 5), KR_OK, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* Two regions that both send an agent with one id (a kind's bug, or a
 * forged message) do not make two of it: the receiver stops the run. */
Test(region, an_agent_arriving_twice_stops_the_run)
{
    kr__model_file_t *f = mt_load(WALKERS("'regions': [3, 1],", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_region_t *left = kr_region_of(kr_model_sim(m, 0)), *right = kr_region_of(kr_model_sim(m, 2));
    kr_entity_t a = kr_region_agent_create(left, 999999, 19, 5), b = kr_region_agent_create(right, 999999, 40, 5);
    cr_assert(a && b, "%s", kr_last_error());
    /* both into the middle region's cells: they leave with the initial halos */
    cr_assert_eq(kr_region_agent_move(left, a, 20, 5), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_region_agent_move(right, b, 39, 5), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "region 1: agent 999999 arrived twice for step 1"), "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}
