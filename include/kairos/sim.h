/* Simulators: one ECS world, one event queue, one clock, one formalism.
 *
 * A simulator is created by kr_model_add_sim and lives as long as the model.
 * Callbacks (events, behaviors) receive the simulator or its world;
 * kr_sim_of_world finds one from the other. */
#ifndef KAIROS_SIM_H
#define KAIROS_SIM_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/event.h"
#include "kairos/time.h"
#include "kairos/world.h"

KR_BEGIN_DECLS

typedef struct kr_rng kr_rng_t; /* kairos/rng.h */

typedef struct kr_model kr_model_t;

typedef enum kr_formalism {
    KR_DISCRETE_EVENT, /* events only */
    KR_AGENT_BASED,    /* on_update then on_late_update every time_step */
    KR_CONTINUOUS,     /* an ODE state, brought up to date only where needed */
    KR_EMULATION       /* paced by a wall clock, accepts injected events */
} kr_formalism_t;

/* "discrete-event", "agent-based", "continuous", "emulation". */
KR_API const char *kr_formalism_name(kr_formalism_t f);
/* The formalism of a name; also accepts "discrete_event" and "agent_based"
 * (kr_formalism_name still gives the hyphenated name). */
KR_API kr_status_t kr_formalism_from_name(const char *name, kr_formalism_t *out);

/* The getters below answer 0 (or NULL) for a NULL simulator, as for a
 * name kr_model_find_sim did not find; all but kr_sim_now, which handlers
 * call at every event and which takes a simulator that exists. */
KR_API uint32_t kr_sim_id(const kr_sim_t *sim);              /* 0 .. count-1, in add order */
       KR_API const char *kr_sim_name(const kr_sim_t *sim);
KR_API kr_formalism_t kr_sim_formalism(const kr_sim_t *sim);
KR_API kr_time_t kr_sim_now(const kr_sim_t *sim);            /* time of the current or last event */
       KR_API kr_time_t kr_sim_time_step(const kr_sim_t *sim);
KR_API kr_world_t *kr_sim_world(kr_sim_t *sim);
KR_API kr_model_t *kr_sim_model(kr_sim_t *sim);
/* The simulator owning a world (NULL for a world made outside a model). */
KR_API kr_sim_t *kr_sim_of_world(kr_world_t *world);

/* The simulator's random stream, keyed by (model seed, simulator id): the
 * same numbers whichever rank runs it. */
KR_API kr_rng_t *kr_sim_rng(kr_sim_t *sim);

/* Ends the run with an error, for a callback that finds the model in a
 * state it cannot go on from (an agent it could not move, memory it could
 * not get): the run stops after the current event, and kr_model_run (on
 * every rank) returns `status` (KR_ERR_STATE if KR_OK) with the message
 * "simulator 'NAME', time T: ...". The first failure of a run wins.
 * Outside a run (a kind's setup, on_start) it also logs the message and
 * sets kr_last_error; kr_model_failure reports it, and kr_model_run then
 * refuses to run. */
KR_API void kr_sim_fail(kr_sim_t *sim, kr_status_t status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* From inside a long callback (a step over many agents, say): lets the
 * messages this process has sent move on to other ranks, which a large one
 * may otherwise not do until the callback returns. Delivers nothing and
 * changes no state; cheap, so call it every few hundred microseconds of
 * work. Region steps call it themselves. */
KR_API void kr_sim_progress(kr_sim_t *sim);

/* Events executed so far, and a digest of their keys and types in order:
 * two runs that executed the same event sequence have equal digests. */
KR_API uint64_t kr_sim_event_count(const kr_sim_t *sim);
KR_API uint64_t kr_sim_event_digest(const kr_sim_t *sim);

/* Traffic and waiting, for stats: sync-events scheduled by this simulator
 * and executed in it, guarantees (null messages) it sent, and the wall
 * time it spent blocked with work it could not run yet. */
KR_API uint64_t kr_sim_sync_sent(const kr_sim_t *sim);
KR_API uint64_t kr_sim_sync_received(const kr_sim_t *sim);
KR_API uint64_t kr_sim_null_messages(const kr_sim_t *sim);
/* Guarantee requests it sent to senders in other processes (null-message
 * algorithm: guarantees are sent there on demand). */
KR_API uint64_t kr_sim_guarantee_requests(const kr_sim_t *sim);
KR_API double kr_sim_blocked_seconds(const kr_sim_t *sim);
/* How many separate times it became blocked. The mean wait, seconds over
 * episodes, tells latency (many waits about as long as a sender's step)
 * from imbalance (few long ones). */
KR_API uint64_t kr_sim_blocked_episodes(const kr_sim_t *sim);

/* Per-simulator state blocks (ERS's SubModelContext; kairos/state.h,
 * docs/concepts.md, "Per-simulator state"): one block of the type's size
 * per simulator, zeroed, created on first use, freed (after the type's
 * fini, and with its slots) with the model. NULL on allocation failure.
 * A kind's declared state is such a block, reached by kr_sim_state. */
typedef uint32_t kr_context_type_t;
KR_API void *kr_sim_context(kr_sim_t *sim, kr_context_type_t type);

/* Kept for plug-ins written before declared state (kairos/state.h), which
 * replaces it: one pointer a kind may keep per simulator, for
 * event handlers, which get no user pointer: O(1), where finding a context
 * type by name is not. `tag` names its owner (the address of something of
 * the kind's own, such as its kr_kind_desc_t): kr_sim_user returns the
 * pointer only to the owner, NULL to anyone else, so that a handler run on
 * a simulator of another kind (a sync-event sent to the wrong simulator)
 * finds nothing instead of another kind's state. Handlers must not pick
 * their state by an id in the event data instead: a sync-event's data
 * comes from another process. */
KR_API void kr_sim_set_user(kr_sim_t *sim, const void *tag, void *user);
KR_API void *kr_sim_user(const kr_sim_t *sim, const void *tag);

KR_END_DECLS

#endif
