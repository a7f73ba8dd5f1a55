/* What stops a run from outside its own logic: a signal asking it to stop
 * (SIGINT, SIGTERM) or to checkpoint and stop (SIGUSR1; SIGTERM too with
 * --checkpoint-on-term), and, for tests, an allocation made to fail
 * (KAIROS_FAIL_ALLOC, docs/cli.md). Not public API.
 *
 * Both are process-wide: they are noted where they happen (a signal
 * handler, an allocation on a growth path) and acted on by the coordinator
 * once per step, where it already polls, never per event. */
#ifndef KAIROS_BASE_FAULT_H
#define KAIROS_BASE_FAULT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "kairos/status.h"

/* The first of SIGINT / SIGTERM received since kr__catch_signals, or 0. */
extern volatile sig_atomic_t kr__signal_caught;
/* A signal asked for a checkpoint and a stop (SIGUSR1, or SIGTERM after
 * kr__checkpoint_on_term): the signal's number, or 0. The runtime acts on
 * it at its next safe point (runtime/safe_point.c). */
extern volatile sig_atomic_t kr__checkpoint_asked;
/* The injected allocation failure happened (since kr__fault_arm). */
extern volatile sig_atomic_t kr__fault_fired;

/* Installs the handlers for SIGINT, SIGTERM and SIGUSR1: the first only
 * notes the signal (the run stops at its next safe point); a second SIGINT
 * ends the process as the signal would. */
void kr__catch_signals(void);
/* From now on SIGTERM asks for a checkpoint (kr__checkpoint_asked) instead
 * of interrupting the run. */
void kr__checkpoint_on_term(void);

/* Starts counting allocations: with KAIROS_FAIL_ALLOC=N (N >= 1) in the
 * environment, the N-th allocation on the growth paths of kairos from now
 * on fails (once). Fails (KR_ERR_INVALID_ARG) for a value that is not a
 * whole number >= 1. Without the variable, nothing is counted. */
kr_status_t kr__fault_arm(void);
/* The same check of KAIROS_FAIL_ALLOC, without arming: a setup checks it
 * before it changes any file. */
kr_status_t kr__fault_check(void);
/* Stops counting (the run is over: what follows is not the kind's work). */
void kr__fault_disarm(void);

/* The N of KAIROS_FAIL_ALLOC while armed, else 0 (read inline below). */
extern uint64_t kr__fault_at;
/* Counts one allocation; true for the N-th (and notes kr__fault_fired). */
bool kr__fault_count(void);

/* True when this allocation is the one to fail. Costs one load when
 * KAIROS_FAIL_ALLOC is unset; called only where memory is about to be
 * requested from the system, never on a path that does not allocate. */
static inline bool kr__fault_alloc(void)
{
    return __builtin_expect(kr__fault_at != 0, 0) && kr__fault_count();
}

#endif
