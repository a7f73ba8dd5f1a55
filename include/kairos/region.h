/* Regions: one agent-based world of W x H cells cut into P x Q region
 * simulators, each owning a rectangle of cells (docs/regions.md).
 *
 * A model-file entry with "regions": [P, Q] becomes P x Q agent-based
 * simulators NAME[0] .. NAME[P*Q-1] (region i is column i % P, row i / P),
 * joined to their 8 neighbours by dependencies with promise = time_step.
 * A kind builds one region per simulator with kr_region_create; the region
 * layer then drives the steps:
 *
 *  - step 0 (time 0) is the initial state: nobody acts, halos are sent;
 *  - step s >= 1 (time s x time_step): migrants and halo strips sent at the
 *    end of step s-1 are in place; every agent of the region's own cells
 *    acts once, cells in (y, x) order, agents of one cell in id order
 *    (`act`); agents that moved to a neighbour's cell leave with their
 *    components and children, and every neighbour gets the strip of cells
 *    of its halo (field values and agents there) as of the end of step s,
 *    its emigrants in transit included.
 *    Both travel in one sync-event per neighbour and step, delay time_step.
 *    Migrants leaving in the last step of the run (whose arrival would fall
 *    after the end time) stay where they are, so no agent is ever lost.
 *
 * An agent is an entity with the kr_region_agent_t component (a global id
 * that never changes, unlike its entity id, which a move renews) and a
 * position in the world's spatial hash at the centre of its cell (cell
 * size 1). Children of an agent travel with it and never act themselves.
 *
 * The same answer however the world is cut, if the kind keeps these rules:
 * draw an agent's random numbers from kr_region_rng(r, id) (keyed by seed,
 * agent id and step), read neighbours (fields, halo agents) as of the
 * previous step, settle conflicts within a cell by agent id, and derive new
 * agents' ids with kr_region_child_id. kr_region_state_digest is then the
 * same for every cut; kinds return it from kr_kind_desc_t.state_digest and
 * the run reports the sum over simulators as stats.state_digest.
 *
 * Storage: a region allocates its own cells plus the halo (cells within
 * `halo` of its border, clipped to the world), for its fields and for its
 * world's dense spatial grid; never the whole world. */
#ifndef KAIROS_REGION_H
#define KAIROS_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/model.h"
#include "kairos/render.h"
#include "kairos/rng.h"
#include "kairos/serializer.h"
#include "kairos/sim.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef struct kr_region kr_region_t;

/* A rectangle of cells, half-open: [x0, x1) x [y0, y1). */
typedef struct kr_rect {
    int32_t x0, y0, x1, y1;
} kr_rect_t;

/* Most regions a world may be cut into, and most cells on a side. */
#define KR_REGION_MAX 4096u
#define KR_REGION_MAX_SIDE 1000000

/* ---- geometry (pure functions, no simulator) ---- */

/* A W x H world cut into cols x rows regions with a halo of `halo` cells.
 * Column c covers x in [c*W/cols, (c+1)*W/cols) (integer division), rows
 * likewise, so sizes differ by at most one cell. */
typedef struct kr_region_grid {
    int32_t width, height;   /* cells, 1 .. KR_REGION_MAX_SIDE */
    uint32_t cols, rows;     /* P x Q, each >= 1, at most width x height */
    uint32_t halo;           /* k >= 0 */
} kr_region_grid_t;

/* Fails (KR_ERR_INVALID_ARG, one line) for sizes out of range, more
 * regions than cells on a side, or more than KR_REGION_MAX regions. */
KR_API kr_status_t kr_region_grid_check(const kr_region_grid_t *g);
KR_API uint32_t kr_region_grid_count(const kr_region_grid_t *g);
/* Region `i`'s own cells. */
KR_API kr_rect_t kr_region_grid_rect(const kr_region_grid_t *g, uint32_t i);
/* Region `i`'s own cells plus its halo, clipped to the world: what it stores. */
KR_API kr_rect_t kr_region_grid_stored(const kr_region_grid_t *g, uint32_t i);
/* The region owning cell (x, y); UINT32_MAX outside the world. */
KR_API uint32_t kr_region_grid_owner(const kr_region_grid_t *g, int32_t x, int32_t y);
/* Region i's neighbours among the 8 around it, in increasing index order;
 * returns their number (0..8). */
KR_API size_t kr_region_grid_neighbours(const kr_region_grid_t *g, uint32_t i, uint32_t out[8]);

static inline bool kr_rect_contains(kr_rect_t r, int32_t x, int32_t y)
{
    return x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1;
}
static inline uint64_t kr_rect_area(kr_rect_t r)
{
    return r.x1 > r.x0 && r.y1 > r.y0 ? (uint64_t)(r.x1 - r.x0) * (uint64_t)(r.y1 - r.y0) : 0;
}

/* ---- the cut of one simulator, from its model-file entry ---- */

/* Which region of which cut a simulator is: from "regions": [P, Q] through
 * kr_params_region_cut (kairos/kind.h); a simulator without "regions" is
 * region 0 of a 1 x 1 cut. Region i runs as simulator first_sim + i. */
typedef struct kr_region_cut {
    uint32_t cols, rows;
    uint32_t index;
    uint32_t first_sim;
} kr_region_cut_t;

/* Cells across the narrowest region of a width x height world cut as
 * `cut` says (INT64_MAX uncut): a halo may be at most half of it. */
static inline int64_t kr_region_cut_narrowest(const kr_region_cut_t *cut, int64_t width, int64_t height)
{
    int64_t w = cut->cols > 1 ? width / cut->cols : INT64_MAX, h = cut->rows > 1 ? height / cut->rows : INT64_MAX;
    return w < h ? w : h;
}

/* ---- a region ---- */

/* The agent component, "kr.region.agent". */
typedef struct kr_region_agent {
    uint64_t id;             /* global, never 0, the same whatever the cut */
    uint64_t step;           /* the step it last acted in, or was born in (the region's) */
} kr_region_agent_t;

/* An agent of a neighbour's border, as of the end of the previous step. */
typedef struct kr_region_ghost {
    uint64_t id;
    int32_t x, y;
    const void *data;        /* ghost_size bytes written by desc.ghost */
} kr_region_ghost_t;

typedef struct kr_region_desc {
    int32_t width, height;   /* the whole world, cells */
    uint32_t halo;           /* k: cells a region sees beyond its border */
    kr_region_cut_t cut;
    uint32_t fields;         /* double layers per cell (0: none) */
    size_t ghost_size;       /* bytes of model data per halo agent (0: id and cell only) */
    void *arg;               /* handed to every callback */
    /* Steps >= 1: once per agent of the own cells, cells in (y, x) order,
     * a cell's agents by id (those in it when the scan reaches it). An
     * agent acts once per step wherever it moves; agents created during
     * the step act from the next one. */
    void (*act)(kr_region_t *r, kr_entity_t agent, uint64_t id, void *arg);
    /* Optional: before the first and after the last act of a step. */
    void (*begin_step)(kr_region_t *r, void *arg);
    void (*end_step)(kr_region_t *r, void *arg);
    /* Optional (needed when ghost_size > 0): describes a border agent to
     * the neighbours' halos; writes ghost_size bytes to out. */
    void (*ghost)(kr_region_t *r, kr_entity_t agent, void *out, void *arg);
    /* Optional: a word of model state per agent (energy bits, say), mixed
     * into kr_region_state_digest with the id and the cell. */
    uint64_t (*digest)(kr_region_t *r, kr_entity_t agent, void *arg);
} kr_region_desc_t;

/* Registers the region layer's components, behaviors, event and context
 * types. Call it from every region kind's register_types; calling it again
 * (two kinds, one model) is fine. */
KR_API kr_status_t kr_region_register(kr_model_t *model);

/* Makes `sim` (agent-based, with a time step) region desc->cut.index of the
 * cut: sizes its world's spatial grid and its fields to the stored cells,
 * and checks that the cut's simulators exist and depend on their
 * neighbours with promise = time_step. The simulator owns the region
 * (freed with the model). NULL with kr_last_error on failure. */
KR_API kr_region_t *kr_region_create(kr_sim_t *sim, const kr_region_desc_t *desc);
/* The region of a simulator; NULL if it is none. */
KR_API kr_region_t *kr_region_of(kr_sim_t *sim);

KR_API kr_sim_t *kr_region_sim(const kr_region_t *r);
KR_API kr_world_t *kr_region_world(const kr_region_t *r);
KR_API const kr_region_grid_t *kr_region_grid(const kr_region_t *r);
KR_API uint32_t kr_region_index(const kr_region_t *r);
KR_API kr_rect_t kr_region_rect(const kr_region_t *r);    /* own cells */
       KR_API kr_rect_t kr_region_stored(const kr_region_t *r);  /* own cells + halo */
       /* Cells allocated for fields and the spatial grid: the stored rectangle. */
       KR_API uint64_t kr_region_stored_cells(const kr_region_t *r);
/* The current step: now / time_step. */
KR_API uint64_t kr_region_step(const kr_region_t *r);

/* ---- agents ---- */

/* Creates an agent with global id `id` (never 0) in cell (x, y), which must
 * be one of the region's own cells. Add the model's components to it. */
KR_API kr_entity_t kr_region_agent_create(kr_region_t *r, uint64_t id, int32_t x, int32_t y);
/* The global id of an agent; 0 if e is none. */
KR_API uint64_t kr_region_agent_id(const kr_region_t *r, kr_entity_t e);
/* The cell of an agent; false if it is not in the spatial hash. */
KR_API bool kr_region_agent_cell(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y);
/* Moves an agent to cell (x, y): inside the world and owned by this region
 * or one of its neighbours; move agents only through this call. A cell of
 * a neighbour makes it a migrant: it leaves at the end of the step (and
 * acts there from the next one). */
KR_API kr_status_t kr_region_agent_move(kr_region_t *r, kr_entity_t e, int32_t x, int32_t y);
/* Agents in this region's world (own cells and migrants not yet gone). */
KR_API size_t kr_region_agent_count(const kr_region_t *r);
/* The component every agent of the region's world has (for a render layer
 * of all agents, kairos/render.h). */
KR_API kr_component_t kr_region_agent_component(const kr_region_t *r);
/* The id of the n-th agent born to `parent` in step `step`: a function of
 * the three alone, so births do not depend on the cut. Never 0. */
KR_API uint64_t kr_region_child_id(uint64_t parent, uint64_t step, uint32_t n);
/* One initial agent: its id and the cell it starts in. */
typedef struct kr_region_birth {
    uint64_t id;
    int32_t x, y;
} kr_region_birth_t;

/* Initial agents spread over the whole world: ids first .. first + count
 * - 1, each placed by `place` (a cell of the world, drawn from the agent's
 * own stream so that no cut changes it; false: no such agent). *out gets
 * those that start in this region's own cells, in (y, x, id) order, the
 * order they act in (create them in it: their memory then follows the
 * scan); the caller frees it. The first region of the cut in a process
 * places every agent once for all the regions there (twice, in fact: a
 * counting pass), so setting up P x Q regions places N agents, not
 * N x P x Q. A population is (first, count, place): every region gives
 * the same; `place` must depend on the id alone (KR_ERR_STATE otherwise)
 * and its arg outlive the setup of the last region. Several populations
 * may be under way at once, up to one per region of the process. */
KR_API kr_status_t kr_region_scatter(kr_region_t *r, uint64_t first, uint64_t count,
                                     bool (*place)(uint64_t id, int32_t *x, int32_t *y, void *arg), void *arg,
                                     kr_region_birth_t **out, size_t *n);
/* The random stream of agent `id` in the current step, rewound: keyed by
 * (model seed, KR_RNG_AGENT, id, step). Valid until the next call. */
KR_API kr_rng_t *kr_region_rng(kr_region_t *r, uint64_t id);

/* ---- halo ---- */

/* Field layer `layer` as of the end of the previous step, over the stored
 * cells (own and halo), row-major: the value of cell (x, y) is at
 * kr_region_field_index(r, x, y). */
KR_API const double *kr_region_field(const kr_region_t *r, uint32_t layer);
/* The values this step writes, over the same cells (only own cells count);
 * at the start of each step a copy of kr_region_field. During setup it is
 * the initial state (own cells). */
KR_API double *kr_region_field_next(kr_region_t *r, uint32_t layer);
KR_API size_t kr_region_field_index(const kr_region_t *r, int32_t x, int32_t y);
/* Declares field layer `layer` as render data (kairos/render.h) named
 * `name`: each region records its own cells, drawn with `colormap`
 * (NULL: viridis) over [min, max]. Call it from the kind's setup. */
KR_API kr_status_t kr_region_render_field(kr_region_t *r, uint32_t layer, const char *name, const char *colormap,
                                          double min, double max);
/* The halo agents in halo cell (x, y) as of the end of the previous step,
 * in id order; NULL and *count = 0 when none. Valid during the step. */
KR_API const kr_region_ghost_t *kr_region_ghosts(const kr_region_t *r, int32_t x, int32_t y, size_t *count);

/* ---- results ---- */

/* Sum over this region's agents of a hash of (id, cell, desc.digest word):
 * an order-free digest, so summing it over regions gives the same value
 * for every cut (the run sums kinds' state_digest into stats.state_digest). */
KR_API uint64_t kr_region_state_digest(kr_region_t *r);
/* The hash one agent adds to the digest. */
KR_API uint64_t kr_region_agent_hash(uint64_t id, int32_t x, int32_t y, uint64_t word);
/* Agents sent to neighbours so far, and the bytes of their packs. */
KR_API uint64_t kr_region_migrants_sent(const kr_region_t *r);
KR_API uint64_t kr_region_migrant_bytes(const kr_region_t *r);
/* Agent updates (acts) so far. */
KR_API uint64_t kr_region_updates(const kr_region_t *r);

/* ---- checkpoints (docs/checkpoint.md) ---- */

/* Saves (kr_serializer_loading false) or loads what a region changes
 * during the run outside its simulator's world, events, stream and
 * declared state: its step and counters, its fields (own cells and halo),
 * the halo's agents and the neighbours' strips that are in, the migrants
 * that arrived. A region kind calls it from its kr_kind_desc_t.serialize.
 * Loading goes into the same region of the same cut, made again by the
 * kind's setup, after the checkpoint replaced the world: it also hands the
 * region to the world's step driver. Fails (KR_ERR_CORRUPT) for the state
 * of another region or cut. */
KR_API kr_status_t kr_region_serialize(kr_region_t *r, kr_serializer_t *s);

KR_END_DECLS

#endif
