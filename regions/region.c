/* A region: one simulator's share of a cut world (struct kr_region, in
 * region_private.h). Registering what every region kind needs
 * (kr_region_register), making a simulator a region (kr_region_create:
 * checks, geometry, neighbours, fields, the step driver, the start event)
 * and the accessors. What a region does at each step is in step.c and
 * exchange.c; see kairos/region.h and docs/regions.md. */
#include <stdlib.h>
#include "base/error.h"
#include "regions/region_private.h"

#define REGION_CONTEXT "kr.region"
#define REGION_AGENT "kr.region.agent"
#define REGION_STRIP "kr.region.strip"
#define REGION_DRIVER "kr.region.driver"
#define REGION_START "kr.region.start"

static kr_context_type_t region_context(kr_model_t *m)
{
    return kr_model_find_context_type(m, REGION_CONTEXT);
}

kr_region_t *kr_region_of(kr_sim_t *sim)
{
    kr_context_type_t t = sim ? region_context(kr_sim_model(sim)) : 0;
    kr_region_t *r = t ? kr_sim_context(sim, t) : NULL;
    return r && r->sim ? r : NULL;
}

static void region_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    kr_region_t *r = context;
    for (size_t i = 0; i < 8; i++) free(r->nb[i].out);
    free(r->cur);
    free(r->next);
    kr_rng_destroy(r->rng);
    free(r->snap);
    free(r->ghost_recs);
    free(r->ghosts);
    kr_buf_fini(&r->ghost_bytes);
    kr_buf_fini(&r->scratch);
    free(r->emigrants);
    kr_buf_fini(&r->emigrant_bytes);
    free(r->scatter.births);
    free(r->scatter.start);
    free(r->arrived);
}

kr_status_t kr_region_register(kr_model_t *m)
{
    if (region_context(m)) return KR_OK; /* another region kind did it */
    kr_registry_t *reg = kr_model_registry(m);
    static const kr_behavior_vtbl_t strip_vtbl = { .on_destroy = kr__region_strip_destroy,
                                                   .serialize = kr__region_strip_serialize };
    static const kr_behavior_vtbl_t driver_vtbl = { .on_update = kr__region_driver_update,
                                                    .serialize = kr__region_driver_serialize };
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = REGION_CONTEXT, .size = sizeof(kr_region_t),
                                                        .fini = region_fini }) ||
        !kr_component_register(reg, &(kr_component_desc_t){ .name = REGION_AGENT, .size = sizeof(kr_region_agent_t) }) ||
        !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = REGION_STRIP,
                                                          .state_size = sizeof(kr__region_strip_t),
                                                          .vtbl = &strip_vtbl }) ||
        !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = REGION_DRIVER,
                                                          .state_size = sizeof(kr__region_driver_t),
                                                          .vtbl = &driver_vtbl }) ||
        !kr_model_event_type(m, &(kr_event_type_desc_t){ .name = KR__REGION_EXCHANGE,
                                                          .size = sizeof(kr__region_exchange_msg_t),
                                                          .on_target_side = kr__region_exchange_arrive }) ||
        !kr_model_event_type(m, &(kr_event_type_desc_t){ .name = REGION_START, .on_event = kr__region_start }))
        return kr_last_status();
    return KR_OK;
}

kr_region_t *kr_region_create(kr_sim_t *sim, const kr_region_desc_t *desc)
{
    kr_model_t *m = kr_sim_model(sim);
    kr_context_type_t ctx = region_context(m);
    if (!ctx) {
        kr__fail(KR_ERR_STATE, "region '%s': kr_region_register was not called by the kind", kr_sim_name(sim));
        return NULL;
    }
    if (kr_sim_formalism(sim) != KR_AGENT_BASED || !kr_sim_time_step(sim)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': expected an agent-based simulator with a time step",
                 kr_sim_name(sim));
        return NULL;
    }
    if (!desc->act) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': the kind gives no act callback", kr_sim_name(sim));
        return NULL;
    }
    if (desc->ghost_size && !desc->ghost) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': ghost_size %zu without a ghost callback", kr_sim_name(sim),
                 desc->ghost_size);
        return NULL;
    }
    kr_region_grid_t g = { desc->width, desc->height, desc->cut.cols, desc->cut.rows, desc->halo };
    kr_status_t st = kr_region_grid_check(&g);
    if (st) return NULL;
    if (desc->cut.index >= kr_region_grid_count(&g) ||
        desc->cut.first_sim + desc->cut.index != kr_sim_id(sim) ||
        desc->cut.first_sim + kr_region_grid_count(&g) > kr_model_sim_count(m)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': region %u of %u starting at simulator %u does not fit the model",
                 kr_sim_name(sim), desc->cut.index, kr_region_grid_count(&g), desc->cut.first_sim);
        return NULL;
    }
    /* A halo must lie within the 8 neighbours, and so must the halo cells
     * of an agent that moved (at most `halo` cells) into a neighbour: the
     * narrowest region is at least twice the halo wide. */
    if ((g.cols > 1 && (uint64_t)(g.width / (int32_t)g.cols) < 2 * (uint64_t)g.halo) ||
        (g.rows > 1 && (uint64_t)(g.height / (int32_t)g.rows) < 2 * (uint64_t)g.halo)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': a halo of %u cell%s needs regions at least %llu cells wide; the "
                 "narrowest region of a %d x %d grid cut %u x %u is narrower", kr_sim_name(sim), g.halo,
                 g.halo == 1 ? "" : "s", 2 * (unsigned long long)g.halo, g.width, g.height, g.cols, g.rows);
        return NULL;
    }
    kr_region_t *r = kr_sim_context(sim, ctx);
    if (!r) return NULL;
    if (r->sim) {
        kr__fail(KR_ERR_STATE, "region '%s': the simulator is a region already", kr_sim_name(sim));
        return NULL;
    }
    kr_region_t fresh = { .world = kr_sim_world(sim), .desc = *desc, .grid = g, .index = desc->cut.index,
                          .time_step = kr_sim_time_step(sim), .end_time = kr_model_end_time(m),
                          .seed = kr_model_seed(m) };
    *r = fresh;
    kr_buf_init(&r->ghost_bytes);
    kr_buf_init(&r->scratch);
    kr_buf_init(&r->emigrant_bytes);
    r->own = kr_region_grid_rect(&g, r->index);
    r->stored = kr_region_grid_stored(&g, r->index);
    r->stride = (uint32_t)(r->stored.x1 - r->stored.x0);
    kr_registry_t *reg = kr_model_registry(m);
    r->agent = kr_component_lookup(reg, REGION_AGENT);
    r->strip = kr_component_lookup(reg, REGION_STRIP);
    r->driver = kr_component_lookup(reg, REGION_DRIVER);
    r->exchange = kr_model_find_event_type(m, KR__REGION_EXCHANGE);
    uint32_t nb[8];
    r->nb_count = kr_region_grid_neighbours(&g, r->index, nb);
    for (size_t i = 0; i < r->nb_count; i++) {
        kr__region_neighbour_t *n = &r->nb[i];
        n->region = nb[i];
        n->sim = desc->cut.first_sim + nb[i];
        n->send = kr__region_rect_meet(r->own, kr_region_grid_stored(&g, nb[i]));
        n->receive = kr__region_rect_meet(r->stored, kr_region_grid_rect(&g, nb[i]));
        n->stored = kr_region_grid_stored(&g, nb[i]);
        kr_time_t p = kr_model_promise(m, kr_sim_id(sim), n->sim);
        if (p == KR_TIME_NEVER || p > r->time_step) {
            kr__fail(KR_ERR_INVALID_ARG, "region '%s': expected a dependency to its neighbour '%s' with a promise of "
                     "at most the time step", kr_sim_name(sim), kr_sim_name(kr_model_sim(m, n->sim)));
            return NULL;
        }
    }
    uint64_t cells = kr_rect_area(r->stored);
    /* (its world's dense grid covers the stored cells: refused before the
     * fields are allocated, which a world of 10^12 cells would try) */
    if (cells > KR_SPATIAL_MAX_GRID_CELLS) {
        /* (more regions, while the cut may have more; else a smaller world) */
        bool more = (uint64_t)g.cols * g.rows < KR_REGION_MAX;
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': %lld x %lld cells with its halo, more than a region holds "
                 "(%u cells); %s %u regions)", kr_sim_name(sim), (long long)(r->stored.x1 - r->stored.x0),
                 (long long)(r->stored.y1 - r->stored.y0), KR_SPATIAL_MAX_GRID_CELLS,
                 more ? "cut the world into more regions (\"regions\", up to"
                      : "make the world smaller (a cut has at most",
                 KR_REGION_MAX);
        return NULL;
    }
    if (desc->fields) {
        r->cur = calloc(cells * desc->fields, sizeof *r->cur);
        r->next = calloc(cells * desc->fields, sizeof *r->next);
    }
    r->rng = kr_rng_create(r->seed, KR_RNG_AGENT, 0, 0);
    if ((desc->fields && (!r->cur || !r->next)) || !r->rng) {
        kr__fail(KR_ERR_NOMEM, "region '%s': out of memory for %llu cells", kr_sim_name(sim),
                 (unsigned long long)cells);
        return NULL;
    }
    /* The dense grid covers exactly the stored cells: bounds are points,
     * and the last cell's centre keeps the grid from growing a row. */
    double b[4] = { r->stored.x0, r->stored.y0, r->stored.x1 - 0.5, r->stored.y1 - 0.5 };
    if ((st = kr_spatial_set_bounds(r->world, b))) return NULL;
    kr_entity_t d = kr_entity_create(r->world);
    kr__region_driver_t *ds = d ? kr_component_add(r->world, d, r->driver) : NULL;
    if (!ds) return NULL;
    ds->region = r;
    /* Time 0: the initial fields take effect and the initial halos go out,
     * for step 1. */
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, 0, kr_model_find_event_type(m, REGION_START), NULL, NULL))
        return NULL;
    r->sim = sim;
    return r;
}

kr_sim_t *kr_region_sim(const kr_region_t *r) { return r->sim; }
kr_world_t *kr_region_world(const kr_region_t *r) { return r->world; }
const kr_region_grid_t *kr_region_grid(const kr_region_t *r) { return &r->grid; }
uint32_t kr_region_index(const kr_region_t *r) { return r->index; }
kr_rect_t kr_region_rect(const kr_region_t *r) { return r->own; }
kr_rect_t kr_region_stored(const kr_region_t *r) { return r->stored; }
uint64_t kr_region_stored_cells(const kr_region_t *r) { return kr_rect_area(r->stored); }
uint64_t kr_region_step(const kr_region_t *r) { return kr_sim_now(r->sim) / r->time_step; }
uint64_t kr_region_migrants_sent(const kr_region_t *r) { return r->migrants_sent; }
uint64_t kr_region_migrant_bytes(const kr_region_t *r) { return r->migrant_bytes; }
uint64_t kr_region_updates(const kr_region_t *r) { return r->updates; }
