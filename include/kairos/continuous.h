/* Continuous simulators: an ODE state brought up to date only where the
 * model needs it.
 *
 * A continuous simulator integrates its state (GSL's adaptive gsl_odeiv2
 * steppers, kairos/ode.h) up to the time of every event it runs, so a
 * handler always sees the state at its own time. It calls on_update and then
 * on_late_update on its behaviors exactly at: the time of each incoming
 * sync-event (before the target side runs), every observation point
 * k x time_step (k >= 1, before the end) when it has outgoing dependencies,
 * and the end time. Otherwise it lies idle, however far the rest of the
 * model runs; none of these points depends on timing, so runs repeat bit
 * for bit.
 *
 * State events: a threshold function g(t, y) whose sign change (in the
 * chosen direction) is located within a step by bisection on whole ticks;
 * the event type's on_event then runs at the first tick past the crossing,
 * with the state brought exactly there. */
#ifndef KAIROS_CONTINUOUS_H
#define KAIROS_CONTINUOUS_H

#include <stddef.h>
#include "kairos/export.h"
#include "kairos/event.h"
#include "kairos/ode.h"

KR_BEGIN_DECLS

/* Gives a continuous simulator its ODE (before the model starts). The
 * initial state is copied; the integration starts at time 0. */
KR_API kr_status_t kr_continuous_set_ode(kr_sim_t *sim, const kr_ode_desc_t *desc);

/* The state vector (dimension *dim when non-NULL), up to date at the
 * simulator's current time inside its events and behavior callbacks, and
 * at the frame's time inside a render callback (kairos/render.h; there it
 * is a copy for the frame). A handler may change it; integration restarts
 * from the changed state. NULL for a simulator without an ODE. */
KR_API double *kr_continuous_state(kr_sim_t *sim, size_t *dim);

/* Adds a state event: when threshold->g changes sign in threshold->direction,
 * an event of `type` (a local event type) runs at the crossing with a copy
 * of `data` (the type's size). Before the model starts. */
KR_API kr_status_t kr_continuous_add_state_event(kr_sim_t *sim, const kr_ode_threshold_t *threshold, kr_event_type_t type,
                                                 const void *data);

KR_END_DECLS

#endif
