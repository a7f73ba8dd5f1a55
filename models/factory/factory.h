/* ERS's multi-formalism factory (docs/models/factory.md): an assembly line
 * (discrete-event) makes parts, transport robots (agent-based) carry them
 * one per robot along a path, a chemical bath (continuous) heats them along
 * an ODE until a state event takes them out. Private to models/factory; the kinds are
 * reached through kr__models_register_builtin (models/builtin.h).
 *
 * Parts are entities (a factory.part data component and a factory.tracker
 * behavior that counts the simulators a part has moved into) and travel
 * between simulators with the factory.ship sync-event, which every kind
 * declares (FACTORY_SHIP_EVENT). Each kind declares its per-simulator state
 * and parameters with its descriptor (kairos/kind.h): event handlers,
 * behaviors, ODE callbacks and reports reach the state through
 * kr_sim_state, so the kinds keep no global mutable state. */
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
#define FACTORY_SHIP "factory.ship" /* sync-event carrying parts as entities, no payload */

/* The factory.ship event, a row of each kind's events table: the same
 * definition in every kind is one event type. */
void factory_ship_arrive(kr_sim_t *sim, void *data);
#define FACTORY_SHIP_EVENT { .name = FACTORY_SHIP, .on_target_side = factory_ship_arrive }

/* Who takes the parts that arrive at a simulator: the kinds that take
 * parts (robots, bath) name theirs in their setup. */
typedef struct factory_station {
    void (*receive)(kr_sim_t *sim, const kr_entity_t *parts, size_t count);
} factory_station_t;
void factory_set_station(kr_sim_t *sim, const factory_station_t *station);

/* Registers what every factory kind shares (the part component, the
 * tracker behavior); the same definitions again are the same types, so
 * each kind's register_types calls it. */
kr_status_t factory_register_common(kr_model_t *model);

/* Creates a part entity in the simulator's world (factory.part and
 * factory.tracker); KR_ENTITY_INVALID with kr_last_error on failure. */
kr_entity_t factory_part_create(kr_sim_t *sim, uint64_t serial, kr_time_t created);
/* The part record of an entity, NULL if it has none. Valid until the next
 * structural change of the world. */
factory_part_t *factory_part_get(kr_sim_t *sim, kr_entity_t part);
/* Parts (entities with factory.part) in the simulator's world. */
int64_t factory_part_count(kr_sim_t *sim);

/* Reads the required "to" parameter: a simulator this one has a dependency
 * to. Writes its id and the edge's promise. Kept for models/rows, which
 * reads its lines' "to" with it; the factory kinds declare theirs. */
kr_status_t factory_param_target(kr_sim_t *sim, const kr_params_t *params, uint32_t *target,
                                 kr_time_t *promise);
/* The id and the edge's promise of the simulator named by a target
 * parameter (KR_PARAM_TARGET: the runtime checked the dependency). */
uint32_t factory_target(kr_sim_t *sim, const char *name, kr_time_t *promise);

/* Refuses, as a bad `key` param, a target that does not take the
 * sync-event `type_name` this simulator will send it (kr_sim_takes): a
 * part sent to one failed the run when it left. */
kr_status_t factory_check_takes(kr_sim_t *sim, const kr_params_t *params, const char *key, uint32_t target,
                                const char *type_name);

/* Sends parts (entities) to a simulator with a factory.ship sync-event.
 * Logs and returns the failure (the parts then stay where they are). */
kr_status_t factory_ship(kr_sim_t *sim, uint32_t target, kr_time_t delay, const kr_entity_t *parts,
                         size_t count);

/* The oldest entity of a FIFO kept in an entity list, removed;
 * KR_ENTITY_INVALID when empty. */
kr_entity_t factory_queue_pop(kr_entity_list_t *q);

#endif
