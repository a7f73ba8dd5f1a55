/* The world: one simulator's entities, component storage, names, hierarchy
 * and spatial hash. A world is single-threaded; several worlds may share a
 * registry. */
#ifndef KAIROS_WORLD_H
#define KAIROS_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/registry.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef struct kr_world_desc {
    kr_registry_t *registry;  /* shared, not owned; NULL makes a private one */
    double spatial_cell_size; /* edge of a spatial-hash cell; 0 means 1.0; negative, NaN, infinite: refused */
    /* Optional x0, y0, x1, y1: cells covering this rectangle are kept in a
     * dense grid found by arithmetic (no hashing), the fast choice for a
     * bounded world; positions outside it still work, through the hash.
     * All zero: no grid. The grid costs 64 bytes per cell up front and
     * may hold at most 2^25 cells. */
    double spatial_bounds[4];
    void *owner;              /* opaque back pointer for the layer above */
    uint32_t initial_capacity;/* entity slots to reserve; 0 for a default */
} kr_world_desc_t;

/* Creates an empty world; NULL desc takes every default. Returns NULL with
 * kr_last_error() on failure. */
KR_API kr_world_t *kr_world_create(const kr_world_desc_t *desc);
/* Destroys every entity (firing on_destroy) and frees the world; entities
 * an on_destroy creates meanwhile are destroyed too (64 rounds at most, so
 * a callback that creates at every destroy cannot keep it going). */
KR_API void kr_world_destroy(kr_world_t *world);

KR_API kr_registry_t *kr_world_registry(const kr_world_t *world);
KR_API void *kr_world_owner(const kr_world_t *world);
KR_API void kr_world_set_owner(kr_world_t *world, void *owner);

/* Number of live entities. */
KR_API size_t kr_world_entity_count(const kr_world_t *world);

/* ERS's model start: fires on_awake on every behavior of every entity
 * not yet started, then on_start on each of them, in storage order. An
 * entity is started once; entities created after (or during) a call get
 * both callbacks at the next call. A behavior added to an entity already
 * started gets neither (on_creation is its start); one removed and added
 * again during the call may get on_start without on_awake. */
KR_API kr_status_t kr_world_start(kr_world_t *world);

/* One step of ERS's update loop: on_update on every behavior of every
 * entity, then on_late_update on every behavior, both in storage order over
 * one snapshot taken at the call (entities created during the step join at
 * the next one; entities destroyed during it are skipped). The agent-based
 * and continuous simulators call it; models rarely need to. Called from
 * one of its own callbacks it fails (KR_ERR_STATE). */
KR_API kr_status_t kr_world_update(kr_world_t *world);

KR_END_DECLS

#endif
