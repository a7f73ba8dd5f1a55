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
#include "kairos/statistics.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

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

/* ---- statistics by name ----
 * A simulator also keeps statistics that code creates by name, on first
 * use, for a kind without declared state or for figures it names at run
 * time: the runtime reports each like the slot of that type (kairos/
 * registry.h) under its name, after the declared ones, in the order they
 * were created, pools them over replications and sweeps, digests them and
 * frees them with the simulator. The pointer stays valid as long as the
 * simulator, but a name lookup is a scan of its statistics: in a hot
 * handler, prefer a slot of the declared state. NULL when the name is
 * taken by a statistic of another type (or, for a histogram, of other
 * bins), or out of memory; kr_last_error says which. */
KR_API uint64_t *kr_sim_counter(kr_sim_t *sim, const char *name);
KR_API kr_tally_t *kr_sim_tally(kr_sim_t *sim, const char *name);
KR_API kr_timeavg_t *kr_sim_timeavg(kr_sim_t *sim, const char *name);
KR_API kr_batchmeans_t *kr_sim_batchmeans(kr_sim_t *sim, const char *name);
KR_API kr_histogram_t *kr_sim_histogram(kr_sim_t *sim, const char *name, double lo, double hi, size_t bins);

/* The simulator's statistics by name, for the runtime and tools: the i-th
 * created (i < kr_sim_stat_count), its type (a KR_FIELD_* slot type) and
 * its value; NULL past the end. */
KR_API size_t kr_sim_stat_count(const kr_sim_t *sim);
KR_API const char *kr_sim_stat_at(const kr_sim_t *sim, size_t i, kr_field_type_t *type, const void **value);

/* A block described by fields (a table ending with { 0 }): the values of
 * its fields and the contents of its slots (distributions excepted: they
 * are parameters, not state). Entity fields and lists count by whether
 * they are set and, with `world`, by the referenced entity's own hash
 * (kr_entity_digest), never by id. The runtime adds this for a kind's
 * state to the checksum. */
KR_API uint64_t kr_fields_digest(kr_world_t *world, const void *block, const kr_field_t *fields);

KR_END_DECLS

#endif
