/* Per-simulator state: ERS's SubModelContext, declared with the kind.
 *
 * A kind declares one struct of state per simulator (kr_kind_desc_t's
 * state_size and state_fields, kairos/kind.h). The runtime allocates it
 * zeroed before the kind's setup, writes the declared parameters into it
 * (kairos/param.h), and hands it to every event handler and behavior
 * callback of the simulator through kr_sim_state, in O(1).
 *
 * Its fields are described like a component's (kr_field_t, KR_FIELD), plus
 * slots (KR_FIELD_COUNTER ... KR_FIELD_ENTITY_LIST, kairos/registry.h) for
 * what holds memory or is reported. The state holds no raw pointers: the
 * runtime can then digest it for the checksum (kairos/digest.h) and
 * save it. A described field is digested; a slot statistic is also written
 * to the stats file under its field name and pooled by replications and
 * sweeps; distributions, histograms and entity lists are freed with the
 * simulator.
 *
 * The older mechanisms are aliases of this one: kr_sim_context
 * (kairos/sim.h) gives a state block per registered context type, and
 * kr_sim_user keeps one pointer; new kinds need neither. */
#ifndef KAIROS_STATE_H
#define KAIROS_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/registry.h"
#include "kairos/sim.h"
#include "kairos/status.h"

/* The kind's state of this simulator (NULL when its kind declares none).
 * From a behavior callback: kr_sim_state(kr_sim_of_world(w)). */
KR_API void *kr_sim_state(kr_sim_t *sim);

/* Registers a state type: a block of `size` bytes per simulator described
 * by `fields` (a KR_FIELD table ending with a zeroed entry, may be NULL)
 * and gives it to `sim` as its state, zeroed. Kinds declared in
 * kairos/kind.h get theirs from the runtime; this is for models built in
 * C. Fails for a slot outside the block, a second state, or after start. */
KR_API void *kr_sim_state_create(kr_sim_t *sim, size_t size, const kr_field_t *fields);

/* ---- entity lists: a slot (KR_FIELD_ENTITY_LIST) of entity ids of the
 * simulator's world, in insertion order ---- */
typedef struct kr_entity_list {
    kr_entity_t *items;
    uint32_t count, capacity;
} kr_entity_list_t;

KR_API kr_status_t kr_entity_list_push(kr_entity_list_t *l, kr_entity_t e);
/* Removes the entry at `index` keeping the order of the others. */
KR_API void kr_entity_list_remove_at(kr_entity_list_t *l, uint32_t index);
/* Removes the first entry equal to e; false if there is none. */
KR_API bool kr_entity_list_remove(kr_entity_list_t *l, kr_entity_t e);
KR_API void kr_entity_list_fini(kr_entity_list_t *l);

#endif
