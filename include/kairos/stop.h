/* Ending a run from inside the model (docs/concepts.md, "Ending a run from
 * inside the model").
 *
 * A simulator S that calls kr_sim_stop in its event at time t ends every
 * simulator X after X's last event with time < t + d(S -> X), d being the
 * shortest sum of promises along dependency paths from S to X (0 inside
 * S's zero-promise group, where the run ends right after S's event). A
 * simulator no path reaches runs to the end time. With a stop lookahead
 * delta every X also ends before t + delta. The horizon depends on the
 * model only, never on timing: results are the same on any number of
 * ranks and with either algorithm. */
#ifndef KAIROS_STOP_H
#define KAIROS_STOP_H

#include <stdbool.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/sim.h"
#include "kairos/status.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

/* Ends the run from the event (or behavior callback) `sim` is executing,
 * at its current time (rule above); the run then ends normally
 * (kr_model_run returns KR_OK). Calling it again in the same run changes
 * nothing. Outside an event of a running model (a kind's setup, on_start,
 * after the run) it does nothing: it logs a warning and sets
 * kr_last_error (KR_ERR_STATE). */
KR_API void kr_sim_stop(kr_sim_t *sim);

/* A stop anywhere then also ends every simulator before the stop's time
 * plus `delta` ticks (as if the stopping simulator had a dependency with
 * promise delta to every simulator): one global end time for models that
 * want it. Before kr_model_start; KR_TIME_NEVER (the default) turns it
 * off. It costs concurrency: no simulator runs more than delta ahead of
 * the slowest one. Zero is refused at start when the model has more than
 * one zero-promise group (every simulator would wait for every other at
 * equal times). KR_ERR_STATE after start. */
KR_API kr_status_t kr_model_set_stop_lookahead(kr_model_t *model, kr_time_t delta);
/* The stop lookahead; KR_TIME_NEVER when none. */
KR_API kr_time_t kr_model_stop_lookahead(const kr_model_t *model);

/* True if a stop this process knows of ended the run (every stop called
 * here, and those that reached its simulators); then *by (optional) is the
 * stopping simulator's id and *at (optional) the stop's time, of the
 * earliest stop by (time, simulator id). Over several processes each knows
 * the stops that concern its simulators: the run's stats merge them. */
KR_API bool kr_model_stopped(const kr_model_t *model, uint32_t *by, kr_time_t *at);

/* A simulator's stop horizon: it runs no event at or after it
 * (KR_TIME_NEVER while no stop concerns it). */
KR_API kr_time_t kr_sim_stop_horizon(const kr_sim_t *sim);

KR_END_DECLS

#endif
