/* The seed's multi-formalism factory: an assembly line (discrete-event)
 * makes parts, transport robots (agent-based) carry them, a chemical bath
 * (continuous) treats them. Private to models/factory; the kinds are
 * reached through kr_models_register_builtin (models/builtin.h).
 *
 * Per-simulator state lives in the state of a "station" behavior on one
 * entity of the simulator's world, named like its behavior
 * ("factory.assembly", "factory.robots", "factory.bath"): event handlers,
 * behaviors, report and digest all find it from the simulator alone
 * (kr_entity_find), so the kinds keep no global mutable state, and the
 * state goes wherever the world goes. */
#ifndef KAIROS_MODELS_FACTORY_H
#define KAIROS_MODELS_FACTORY_H

#include <stdint.h>
#include "kairos/kairos.h"

extern const kr_kind_desc_t kr_factory_assembly_kind;
extern const kr_kind_desc_t kr_factory_robots_kind;
extern const kr_kind_desc_t kr_factory_bath_kind;

/* The "factory.part" data component: what travels along the line. */
typedef struct factory_part {
    uint64_t serial;   /* 0, 1, 2, ... per assembly line */
    kr_time_t created; /* ticks */
} factory_part_t;

#define FACTORY_PART "factory.part"
#define FACTORY_SHIP "factory.ship"   /* sync-event carrying parts as entities, no payload */
#define FACTORY_ASSEMBLY "factory.assembly"
#define FACTORY_ROBOTS "factory.robots"
#define FACTORY_BATH "factory.bath"

/* Registers what every factory kind shares (the part component, the ship
 * sync-event); a no-op for what is already there, so each kind's
 * register_types may call it. */
kr_status_t factory_register_common(kr_model_t *model);

/* Registers a behavior (a station or a part's) unless one of that name exists. */
kr_status_t factory_register_behavior(kr_model_t *model, const char *name, size_t state_size,
                                     const kr_behavior_vtbl_t *vtbl);

/* Creates the simulator's station entity (named and typed `name`) and
 * returns its zeroed state, or NULL with kr_last_error. */
void *factory_station_create(kr_sim_t *sim, const char *name);
/* The station state of a simulator, NULL if it has none. Valid until the
 * next structural change of the world: look it up again after creating,
 * destroying or changing entities. */
void *factory_station(kr_sim_t *sim, const char *name);

/* Reads the required "to" parameter: a simulator this one has a dependency
 * to. Writes its id and the edge's promise. */
kr_status_t factory_param_target(kr_sim_t *sim, const kr_params_t *params, uint32_t *target,
                                 kr_time_t *promise);

/* Sends parts (entities) to a simulator with a factory.ship sync-event.
 * Logs and returns the failure (the parts then stay where they are). */
kr_status_t factory_ship(kr_sim_t *sim, uint32_t target, kr_time_t delay, const kr_entity_t *parts,
                         size_t count);

/* Receivers of factory.ship, dispatched by the station found in the target
 * world. `parts` are the arrived entities (ids in this world). */
void factory_robots_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count);
void factory_bath_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count);

/* Digest helpers: order-dependent, machine-independent mixing. */
static inline uint64_t factory_mix(uint64_t h, uint64_t v)
{
    uint64_t z = h ^ (v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
uint64_t factory_double_bits(double x);

#endif
