/* The integration engine of continuous simulators: one ODE system, its
 * state at an integer tick, and GSL's adaptive steppers to move it forward
 * with state events. The contract (time in model units, determinism, event
 * location, GSL's error handler) is in include/kairos/ode.h. Not public API. */
#ifndef KAIROS_SCHEDULERS_ODE_ENGINE_H
#define KAIROS_SCHEDULERS_ODE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "kairos/ode.h"
#include "kairos/status.h"
#include "kairos/time.h"

typedef struct kr__ode_engine kr__ode_engine_t;

/* Creates an engine whose state is desc->initial at tick start; precision
 * is ticks per model unit. Returns NULL with kr_last_error() on a bad desc
 * (dim 0, no rhs, no initial or a non-finite one, negative or non-finite
 * tolerances or initial step, unknown method, an implicit method without a
 * jacobian), a zero precision, or no memory. Turns GSL's aborting default
 * error handler off (see ode.h). */
kr__ode_engine_t *kr__ode_engine_create(const kr_ode_desc_t *desc, uint64_t precision,
                                       kr_time_t start);
/* A new engine with e's system, method and tolerances, and its state and
 * tick (none of its history: an advance never depends on it); NULL with
 * kr_last_error() when out of memory. */
kr__ode_engine_t *kr__ode_engine_copy(const kr__ode_engine_t *e);
/* Frees the engine (NULL is fine). */
void kr__ode_engine_destroy(kr__ode_engine_t *e);

/* The state y, dim doubles, owned by the engine. The owner may change it
 * between advances (an event handler resetting a variable). */
double *kr__ode_engine_state(kr__ode_engine_t *e);
size_t kr__ode_engine_dim(const kr__ode_engine_t *e);
/* The tick the state holds. */
kr_time_t kr__ode_engine_time(const kr__ode_engine_t *e);
/* Puts the state at tick t (a checkpoint's restore; the caller writes y
 * through kr__ode_engine_state). */
void kr__ode_engine_set_time(kr__ode_engine_t *e, kr_time_t t);

/* Integrates from the state's tick to `to` (>= it). If one of the nth
 * thresholds changes sign (per its direction) on the way, stops instead at
 * the first tick at which its sign has changed, sets *hit to its index (the
 * lowest among those crossing at that tick) and leaves the state there;
 * otherwise leaves the state at `to` and sets *hit = -1 (hit may be NULL
 * when nth is 0). The result depends only on the state's tick and value,
 * `to` and the thresholds. Fails with KR_ERR_INVALID_ARG (to before the
 * state's tick, bad thresholds) or KR_ERR_NUMERIC (a callback returned an
 * error, GSL could not meet the tolerance, a NaN threshold or non-finite
 * state); on failure the state and its tick are left as they were. */
kr_status_t kr__ode_engine_advance(kr__ode_engine_t *e, kr_time_t to,
                                   const kr_ode_threshold_t *th, size_t nth, int *hit);

#endif
