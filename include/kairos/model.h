/* The model: precision, seed, end time, simulators, dependencies with
 * promises, and the run (ERS's ModelContainer and ModelManager;
 * docs/concepts.md).
 *
 * Build a model, add simulators and dependencies, register event and
 * context types, then kr_model_start (on_awake/on_start on every behavior)
 * and kr_model_run (to the end time). Structure is fixed once the model has
 * started: adding simulators, dependencies or changing promises then fails
 * with KR_ERR_STATE. */
#ifndef KAIROS_MODEL_H
#define KAIROS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/event.h"
#include "kairos/log.h"
#include "kairos/registry.h"
#include "kairos/sim.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

typedef struct kr_emulation_desc kr_emulation_desc_t; /* kairos/emulation.h */

/* Hooks for outputs (event logs, traces, progress) and tests. Every hook is
 * optional; wall-clock times are nanoseconds of CLOCK_MONOTONIC. Observing
 * never changes what a run computes. */
typedef struct kr_observer {
    void *arg;
    /* After every executed event. */
    void (*on_event)(void *arg, kr_sim_t *sim, const kr_event_key_t *key, kr_event_type_t type);
    /* A stretch of consecutive events of one simulator, in wall time. */
    void (*on_busy)(void *arg, kr_sim_t *sim, uint64_t begin_ns, uint64_t end_ns, uint64_t events);
    /* A stretch during which the simulator had work it could not run yet
     * (held by an incoming guarantee or waiting for a payload). */
    void (*on_blocked)(void *arg, kr_sim_t *sim, uint64_t begin_ns, uint64_t end_ns);
    /* A sync-event was scheduled (key.target is the receiver). */
    void (*on_sync)(void *arg, kr_sim_t *sim, const kr_event_key_t *key);
} kr_observer_t;

/* How simulators learn how far they may run (all give the same results):
 * null-message: per-edge guarantees sent as they grow (Chandy-Misra-Bryant);
 * window: rounds in which every simulator's next event time is gathered and
 * each gets its own bound, the shortest-path fixpoint over the dependency
 * graph; auto: one of the two, chosen at kr_model_start from the
 * dependency graph: window when the zero-promise groups (a lone simulator
 * is one) have on average more than 8 dependencies each from other
 * groups and no simulator is an emulation, null-message otherwise
 * (docs/performance.md). */
typedef enum kr_sync_algorithm { KR_SYNC_NULL_MESSAGE, KR_SYNC_WINDOW, KR_SYNC_AUTO } kr_sync_algorithm_t;

typedef struct kr_model_desc {
    uint64_t precision;        /* ticks per model unit; 0 = KR_PRECISION_DEFAULT */
    uint64_t seed;             /* keys every random stream */
    kr_time_t end_time;        /* the run covers [0, end_time] */
    kr_registry_t *registry;   /* shared by every simulator's world; NULL makes one */
    kr_log_level_t log_level;  /* 0 = trace; set KR_LOG_WARN for quiet runs */
    kr_log_fn log_fn;          /* NULL: stderr */
    void *log_arg;
    const kr_observer_t *observer; /* optional; copied */
    /* Distributed runs: this process's rank. Simulators whose desc names
     * another rank are known by id, name and edges only: no world, no
     * queue, no kind setup (they run elsewhere). 0 for a lone process. */
    int rank;
    kr_sync_algorithm_t sync;
} kr_model_desc_t;

KR_API kr_model_t *kr_model_create(const kr_model_desc_t *desc);
/* Destroys every simulator (their worlds fire on_destroy) and the model. */
KR_API void kr_model_destroy(kr_model_t *model);

KR_API uint64_t kr_model_precision(const kr_model_t *model);
KR_API uint64_t kr_model_seed(const kr_model_t *model);
KR_API kr_time_t kr_model_end_time(const kr_model_t *model);
/* The synchronization algorithm: before kr_model_start the one asked for,
 * from then on the one that runs (`auto` resolved; window whatever was
 * asked for a model with a stop lookahead and more than one zero-promise
 * group, kairos/stop.h). */
KR_API kr_sync_algorithm_t kr_model_sync(const kr_model_t *model);
KR_API kr_registry_t *kr_model_registry(kr_model_t *model);

/* Registers an event type (kairos/event.h); returns its id, 0 on failure
 * (duplicate name, missing handler, after start). */
KR_API kr_event_type_t kr_model_event_type(kr_model_t *model, const kr_event_type_desc_t *desc);
KR_API kr_event_type_t kr_model_find_event_type(const kr_model_t *model, const char *name);
/* The name of an event type; "kairos" for the runtime's own events (steps,
 * observation points, input lines), which have type 0. */
KR_API const char *kr_model_event_type_name(const kr_model_t *model, kr_event_type_t type);
/* Registered event types (ids 1..count), and a type's payload size. */
KR_API uint32_t kr_model_event_type_count(const kr_model_t *model);
KR_API size_t kr_model_event_type_size(const kr_model_t *model, kr_event_type_t type);
/* True for a sync-event type (one with on_target_side). */
KR_API bool kr_model_event_type_is_sync(const kr_model_t *model, kr_event_type_t type);
/* The fields a type declared for its payload (ending with { 0 }); NULL if
 * it declared none. */
KR_API const kr_field_t *kr_model_event_type_fields(const kr_model_t *model, kr_event_type_t type);

typedef struct kr_context_desc {
    const char *name;
    size_t size;
    void (*fini)(kr_sim_t *sim, void *context); /* optional, before the block is freed */
    /* Optional, ending with { 0 } (copied): the block's fields and slots
     * (kairos/state.h), which the runtime digests, reports and frees. */
    const kr_field_t *fields;
} kr_context_desc_t;
/* Registers a per-simulator state type (kairos/state.h; kr_sim_context
 * gives its block); 0 on failure. */
KR_API kr_context_type_t kr_model_context_type(kr_model_t *model, const kr_context_desc_t *desc);
/* A context type by name; 0 if none. */
KR_API kr_context_type_t kr_model_find_context_type(const kr_model_t *model, const char *name);

typedef struct kr_sim_desc {
    const char *name;              /* unique in the model; copied */
    kr_formalism_t formalism;
    kr_time_t time_step;           /* ticks, >= 1; agent-based and continuous only */
    double spatial_cell_size;      /* of the world's spatial hash; 0 = 1.0 */
    double spatial_bounds[4];      /* optional dense grid, see kr_world_desc_t */
    const kr_emulation_desc_t *emulation; /* emulation only; NULL = real clock, speed 1 */
    int rank;                      /* the rank that runs it (see kr_model_desc_t.rank) */
} kr_sim_desc_t;

/* Adds a simulator; NULL with kr_last_error for a duplicate or empty name,
 * a missing time step where the formalism needs one, or after start. */
KR_API kr_sim_t *kr_model_add_sim(kr_model_t *model, const kr_sim_desc_t *desc);
KR_API size_t kr_model_sim_count(const kr_model_t *model);
/* True if this process runs the simulator (always, without distribution). */
KR_API bool kr_sim_is_local(const kr_sim_t *sim);
/* The rank of this process, and the rank that runs a simulator. */
KR_API int kr_model_rank(const kr_model_t *model);
KR_API int kr_sim_rank(const kr_sim_t *sim);
KR_API kr_sim_t *kr_model_sim(kr_model_t *model, uint32_t id);           /* NULL if out of range */
KR_API kr_sim_t *kr_model_find_sim(kr_model_t *model, const char *name);  /* NULL if none */

/* A dependency from -> to lets `from` schedule sync-events on `to`, each at
 * least `promise` ticks after from's current time. Refused for a self edge,
 * an unknown id, a duplicate edge, or after start. */
KR_API kr_status_t kr_model_add_dependency(kr_model_t *model, uint32_t from, uint32_t to, kr_time_t promise);
/* Changes the promise of one edge, or of every outgoing edge of `from`. */
KR_API kr_status_t kr_model_set_promise(kr_model_t *model, uint32_t from, uint32_t to, kr_time_t promise);
KR_API kr_status_t kr_model_set_promises(kr_model_t *model, uint32_t from, kr_time_t promise);
/* The promise of an edge, or KR_TIME_NEVER when there is no such edge. */
KR_API kr_time_t kr_model_promise(const kr_model_t *model, uint32_t from, uint32_t to);

/* Fixes the structure, finds the zero-promise groups, fires on_awake then
 * on_start on every behavior of every simulator (in id order), and places
 * the first steps and observation points. */
KR_API kr_status_t kr_model_start(kr_model_t *model);
/* Runs to the end time (starting first if needed). Fails, naming simulators
 * and times, on a deadlock or an error in a simulator. */
KR_API kr_status_t kr_model_run(kr_model_t *model);
/* The failure recorded so far (kr_sim_fail, or an error inside a run):
 * KR_OK if none, otherwise its status, with its message as kr_last_error.
 * A model that failed before its run (in a kind's setup) does not run. */
KR_API kr_status_t kr_model_failure(const kr_model_t *model);

/* After a run: a digest over every simulator's event sequence, in id order. */
KR_API uint64_t kr_model_checksum(const kr_model_t *model);
/* After a run with the window algorithm: the rounds it took (0 otherwise). */
KR_API uint64_t kr_model_rounds(const kr_model_t *model);
/* After a run: the coordinator's messages that left this process's
 * simulators through the transport (sync-events, payloads, cancels, delays
 * and guarantees; not those applied at once between simulators of one
 * process). */
KR_API uint64_t kr_model_transport_messages(const kr_model_t *model);

/* The zero-promise group (strongly connected component of the zero-promise
 * graph) of a simulator, numbered by its lowest member; valid after start.
 * Members of one group run as one event loop on one rank. */
KR_API uint32_t kr_model_group_of(const kr_model_t *model, uint32_t sim);

KR_END_DECLS

#endif
