/* ERS's multi-formalism factory (docs/models/factory.md): an assembly line
 * (discrete-event) makes parts, transport robots (agent-based) carry them
 * one per robot along a path, a chemical bath (continuous) heats them along
 * an ODE until a state event takes them out. Private to models/factory; the kinds are
 * reached through kr__models_register_builtin (models/builtin.h).
 *
 * Parts are entities (a factory.part data component and a factory.tracker
 * behavior that counts the simulators a part has moved into) and travel
 * between simulators with the factory.ship sync-event. Each kind keeps its
 * per-simulator state in a context (kr_sim_context) of its own type,
 * registered in register_types: a stable block that event handlers,
 * behaviors, ODE callbacks, report and digest reach from the simulator
 * alone, so the kinds keep no global mutable state. */
#ifndef KAIROS_MODELS_FACTORY_H
#define KAIROS_MODELS_FACTORY_H

#include <stdint.h>
#include "kairos/kairos.h"

extern const kr_kind_desc_t kr__factory_assembly_kind;
extern const kr_kind_desc_t kr__factory_robots_kind;
extern const kr_kind_desc_t kr__factory_bath_kind;

/* The "factory.part" data component: what travels along the line. */
typedef struct factory_part {
    uint64_t serial;   /* 0, 1, 2, ... per assembly line */
    kr_time_t created; /* ticks */
} factory_part_t;

/* The "factory.tracker" behavior of every part: on_submodel_move counts
 * the moves from one simulator's world into another's. */
typedef struct factory_tracker {
    uint64_t moves;
} factory_tracker_t;

#define FACTORY_PART "factory.part"
#define FACTORY_TRACKER "factory.tracker"
#define FACTORY_SHIP "factory.ship"       /* sync-event carrying parts as entities, no payload */
#define FACTORY_STATION "factory.station" /* context: who takes arriving parts */
#define FACTORY_ASSEMBLY "factory.assembly"
#define FACTORY_ROBOTS "factory.robots"
#define FACTORY_BATH "factory.bath"

/* The factory.station context: set by the kinds that take parts. */
typedef void (*factory_receive_fn)(kr_sim_t *sim, const kr_entity_t *parts, size_t count);
typedef struct factory_station {
    factory_receive_fn receive;
} factory_station_t;

/* Registers what every factory kind shares (the part component, the
 * tracker behavior, the ship sync-event, the station context); a no-op for
 * what is already there, so each kind's register_types calls it first. */
kr_status_t factory_register_common(kr_model_t *model);

/* Registers a behavior unless one of that name exists. */
kr_status_t factory_register_behavior(kr_model_t *model, const char *name, size_t state_size,
                                     const kr_behavior_vtbl_t *vtbl);
/* Registers a context type unless one of that name exists. */
kr_status_t factory_register_context(kr_model_t *model, const char *name, size_t size,
                                    void (*fini)(kr_sim_t *sim, void *context));
/* The simulator's context of that type (created zeroed on first use); NULL
 * when the type is not registered or memory ran out. The block never moves. */
void *factory_context(kr_sim_t *sim, const char *name);

/* Creates a part entity in the simulator's world (factory.part and
 * factory.tracker); KR_ENTITY_INVALID with kr_last_error on failure. */
kr_entity_t factory_part_create(kr_sim_t *sim, uint64_t serial, kr_time_t created);
/* The part record of an entity, NULL if it has none. Valid until the next
 * structural change of the world. */
factory_part_t *factory_part_get(kr_sim_t *sim, kr_entity_t part);
/* Parts (entities with factory.part) in the simulator's world. */
int64_t factory_part_count(kr_sim_t *sim);

/* Reads the required "to" parameter: a simulator this one has a dependency
 * to. Writes its id and the edge's promise. (models/rows reads its lines'
 * "to" with it too.) */
kr_status_t factory_param_target(kr_sim_t *sim, const kr_params_t *params, uint32_t *target,
                                 kr_time_t *promise);
/* Reads a number that must be > 0 (positive) or >= 0. */
kr_status_t factory_param_positive(const kr_params_t *params, const char *key, double def, bool allow_zero,
                                   double *out);

/* Sends parts (entities) to a simulator with a factory.ship sync-event.
 * Logs and returns the failure (the parts then stay where they are). */
kr_status_t factory_ship(kr_sim_t *sim, uint32_t target, kr_time_t delay, const kr_entity_t *parts,
                         size_t count);

/* A FIFO of entities (parts waiting), growing as needed. */
typedef struct factory_queue {
    kr_entity_t *items;
    size_t head, len, cap;
} factory_queue_t;
kr_status_t factory_queue_push(factory_queue_t *q, kr_entity_t e);
/* The oldest entity, removed; KR_ENTITY_INVALID when empty. */
kr_entity_t factory_queue_pop(factory_queue_t *q);
void factory_queue_fini(factory_queue_t *q);

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
