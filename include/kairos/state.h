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

/* A list of numbers (a KR_FIELD_NUMBER_LIST slot; a list parameter,
 * kairos/param.h): the values are freed with the state. */
typedef struct kr_number_list {
    const double *values;
    size_t count;
} kr_number_list_t;

/* The kind's state of this simulator (NULL when its kind declares none).
 * From a behavior callback: kr_sim_state(kr_sim_of_world(w)). */
KR_API void *kr_sim_state(kr_sim_t *sim);

/* Makes the block of a registered state type (kr_model_context_type with
 * its fields, kairos/model.h) this simulator's state, so that kr_sim_state
 * returns it. The runtime does this for kinds declared in kairos/kind.h;
 * this is for models built in C. Returns the block (zeroed at first), NULL
 * on failure (no such type, a state already set, out of memory). */
KR_API void *kr_sim_set_state(kr_sim_t *sim, kr_context_type_t type);

/* Agent-based simulators: `fn` runs at every time step, before the
 * behaviors' on_update (kr_kind_desc_t.on_step sets it for kinds). */
KR_API void kr_sim_set_on_step(kr_sim_t *sim, void (*fn)(kr_sim_t *sim));

/* A block described by fields (a table ending with { 0 }): the values of
 * its fields and the contents of its slots (distributions excepted: they
 * are parameters, not state). Entity fields and lists count by whether
 * they are set and, with `world`, by the referenced entity's own hash
 * (kr_entity_digest), never by id. The runtime adds this for a kind's
 * state to the checksum. */
KR_API uint64_t kr_fields_digest(kr_world_t *world, const void *block, const kr_field_t *fields);

#endif
