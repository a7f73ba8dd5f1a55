/* Time arithmetic shared by the schedulers and the layers above them
 * (regions/ ends its last step with it, and checks a restart's end with
 * the step after the cut). Not public API. */
#ifndef KAIROS_SCHEDULERS_TIME_PRIVATE_H
#define KAIROS_SCHEDULERS_TIME_PRIVATE_H

#include "kairos/time.h"

/* a + b, saturating at KR_TIME_NEVER: a delay never wraps a time around. */
static inline kr_time_t kr__time_add(kr_time_t a, kr_time_t b)
{
    return a > KR_TIME_NEVER - b ? KR_TIME_NEVER : a + b;
}

/* The first multiple of step h (> 0) at or after t: the next step or
 * update point of a checkpoint cut at t (a cut is exclusive). */
static inline kr_time_t kr__time_step_at_or_after(kr_time_t t, kr_time_t h)
{
    return t / h * h + (t % h ? h : 0);
}

#endif
