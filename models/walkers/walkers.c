/* "walkers": `agents` random walkers on a `width` x `height` grid, the
 * smallest complete region kind (docs/models/walkers.md).
 *
 * Walker i has the global id i + 1 and starts in a cell drawn from its own
 * stream (seed, id, birth), so every region creates exactly the walkers
 * whose first cell it owns, whatever the cut. At every step each walker
 * draws one of its 8 neighbouring cells from the stream (seed, id, step)
 * and moves there, or stays when that cell lies outside the world. Walkers
 * do not interact: the halo is exchanged (width `halo`) but nobody reads
 * it, which makes the kind the benchmark of the region machinery itself.
 *
 * With `audit`, every region adds, for each walker acting at step s, a
 * hash of (id, s) to a sum and counts the acts: summed over regions, the
 * run must give exactly the sum over s = 1..S and id = 1..N, which holds
 * only if at every step every walker acted once, in one region. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "kairos/kairos.h"
#include "models/walkers/walkers.h"

/* The extra word of the birth stream: no step number reaches it. */
#define BIRTH UINT64_MAX

/* The kind's declared state: the params, then what setup and act keep. */
typedef struct walkers {
    int64_t width, height, agents, halo;
    bool audit;
    kr_region_t *region;
    uint64_t audit_sum, audit_acts;
    uint64_t seed;
    kr_rng_t *birth;         /* placing the walkers, during setup only */
} walkers_t;

static const int8_t dirs[8][2] = { { -1, -1 }, { 0, -1 }, { 1, -1 }, { -1, 0 }, { 1, 0 }, { -1, 1 }, { 0, 1 }, { 1, 1 } };

static void act(kr_region_t *r, kr_entity_t agent, uint64_t id, void *arg)
{
    walkers_t *w = arg;
    uint64_t bits = kr_rng_u64(kr_region_rng(r, id));
    int32_t x, y;
    if (w->audit) {
        w->audit_sum += kr_region_agent_hash(id, (int32_t)kr_region_step(r), 0, 0xa0d17);
        w->audit_acts++;
    }
    if (!kr_region_agent_cell(r, agent, &x, &y)) return;
    const int8_t *d = dirs[bits & 7];
    int32_t nx = x + d[0], ny = y + d[1];
    if (nx < 0 || ny < 0 || nx >= w->width || ny >= w->height) return; /* the edge: stay */
    if (kr_region_agent_move(r, agent, nx, ny))
        kr_sim_fail(kr_region_sim(r), kr_last_status(), "walkers: walker %llu: %s", (unsigned long long)id,
                    kr_last_error());
}

/* Walker id's first cell, from its own stream (seed, id, BIRTH). */
static bool place(uint64_t id, int32_t *x, int32_t *y, void *arg)
{
    walkers_t *w = arg;
    kr_rng_reset(w->birth, w->seed, KR_RNG_AGENT, id, BIRTH);
    *x = (int32_t)(kr_rng_uniform(w->birth) * (double)w->width);
    *y = (int32_t)(kr_rng_uniform(w->birth) * (double)w->height);
    return true;
}

static kr_status_t walkers_setup(kr_sim_t *sim, const kr_params_t *p)
{
    walkers_t *w = kr_sim_state(sim);
    kr_region_desc_t d = { .width = (int32_t)w->width, .height = (int32_t)w->height, .halo = (uint32_t)w->halo,
                           .act = act, .arg = w };
    kr_status_t st = kr_params_region_cut(p, w->width, w->height, &d.cut);
    if (st) return st;
    /* (the region layer checks it too; here it names the parameter) */
    int64_t narrow = kr_region_cut_narrowest(&d.cut, w->width, w->height);
    if (2 * w->halo > narrow) {
        char expected[128], found[24];
        snprintf(expected, sizeof expected, "at most %lld (half the narrowest region of the %u x %u cut, %lld cells)",
                 (long long)(narrow / 2), d.cut.cols, d.cut.rows, (long long)narrow);
        snprintf(found, sizeof found, "%lld", (long long)w->halo);
        return kr_params_error(p, "halo", expected, found);
    }
    if (!(w->region = kr_region_create(sim, &d))) return kr_last_status();
    w->seed = kr_model_seed(kr_sim_model(sim));
    /* Only this setup's kr_region_scatter places walkers (later regions of
     * the process take its result), so the stream goes with the setup. */
    if (!(w->birth = kr_rng_create(w->seed, KR_RNG_AGENT, 0, BIRTH))) return kr_last_status();
    /* Created in the order they act (cells by row, then id), entities lie
     * in memory in that order: a step then walks its memory nearly in
     * sequence (walkers move one cell at a time), not at random. */
    kr_region_birth_t *born;
    size_t n;
    st = kr_region_scatter(w->region, 1, (uint64_t)w->agents, place, w, &born, &n);
    kr_rng_destroy(w->birth);
    w->birth = NULL;
    if (st)
        return st == KR_ERR_NOMEM ? kr_params_error(p, "agents", "a number of walkers that fits in memory", "too many")
                                  : st;
    for (size_t i = 0; i < n && !st; i++)
        if (!kr_region_agent_create(w->region, born[i].id, born[i].x, born[i].y)) st = kr_last_status();
    free(born);
    if (!st)
        st = kr_render_layer(sim, &(kr_render_layer_desc_t){ .name = "walkers",
            .component = kr_region_agent_component(w->region), .shape = KR_SHAPE_CIRCLE,
            .colour = KR_RGB(0x25, 0x4e, 0xa0), .size = 0.8 });
    return st;
}

static void walkers_report(kr_sim_t *sim, kr_report_t *rep)
{
    walkers_t *w = kr_sim_state(sim);
    if (!w || !w->region) return;
    kr_region_t *r = w->region;
    kr_rect_t own = kr_region_rect(r);
    kr_report_int(rep, "region", kr_region_index(r));
    kr_report_int(rep, "agents", (int64_t)kr_region_agent_count(r));
    kr_report_int(rep, "updates", (int64_t)kr_region_updates(r));
    kr_report_int(rep, "migrants_sent", (int64_t)kr_region_migrants_sent(r));
    kr_report_int(rep, "migrant_bytes", (int64_t)kr_region_migrant_bytes(r));
    kr_report_int(rep, "own_cells", (int64_t)kr_rect_area(own));
    kr_report_int(rep, "stored_cells", (int64_t)kr_region_stored_cells(r));
    kr_report_int(rep, "grid_cells", (int64_t)kr_spatial_grid_cells(kr_region_world(r)));
    if (w->audit) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)w->audit_sum);
        kr_report_string(rep, "audit_sum", hex);
        kr_report_int(rep, "audit_acts", (int64_t)w->audit_acts);
    }
}

static uint64_t walkers_state_digest(kr_sim_t *sim)
{
    walkers_t *w = kr_sim_state(sim);
    return w && w->region ? kr_region_state_digest(w->region) : 0;
}

/* Checkpoints: the walkers are agents of the world and their draws come
 * from kr_region_rng, keyed by (seed, id, step), so nothing of a stream is
 * kept between steps. What changes during the run outside the world: the
 * region's own state (kr_region_serialize: step, counters, halo) and the
 * audit's sum and count (the kind declares no state fields). The region
 * pointer and the seed are setup's; the birth stream lives in setup only. */
static kr_status_t walkers_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    walkers_t *w = kr_sim_state(sim);
    kr_status_t st = kr_region_serialize(w->region, s);
    if (!st) kr_ser_u64(s, &w->audit_sum);
    return st ? st : kr_ser_u64(s, &w->audit_acts);
}

const kr_kind_desc_t kr__walkers_kind = {
    .name = "walkers",
    .summary = "random walkers on a grid that may be cut into regions",
    .formalism = KR_AGENT_BASED,
    .register_types = kr_region_register,
    .setup = walkers_setup,
    .report = walkers_report,
    /* the region's own agents for the checksum; their sum over regions
     * is the cut-free stats.state_digest */
    .digest = walkers_state_digest,
    .state_digest = walkers_state_digest,
    .serialize = walkers_serialize,
    /* Only its neighbouring regions' exchanges, which a region receives
     * anyway: another sync-event sent to it is refused. */
    .receives = (const char *const[]){ NULL },
    .state_size = sizeof(walkers_t),
    .params = (const kr_param_t[]){
        /* KR_REGION_MAX_SIDE cells a side at most */
        KR_PARAM(walkers_t, width, KR_PARAM_INT, .def = "100", .range = ">= 1, <= 1000000", .unit = "cells",
                 .help = "the grid's width"),
        KR_PARAM(walkers_t, height, KR_PARAM_INT, .def = "100", .range = ">= 1, <= 1000000", .unit = "cells",
                 .help = "the grid's height"),
        KR_PARAM(walkers_t, agents, KR_PARAM_INT, .def = "1000", .range = ">= 0, <= 100000000",
                 .help = "walkers in the whole world"),
        KR_PARAM(walkers_t, halo, KR_PARAM_INT, .def = "1", .range = ">= 0, <= 64", .unit = "cells",
                 .help = "halo width k (at most half the narrowest region's width and height)"),
        KR_PARAM(walkers_t, audit, KR_PARAM_BOOL, .def = "false",
                 .help = "keep the per-step audit (audit_sum, audit_acts)"),
        { 0 } },
};
