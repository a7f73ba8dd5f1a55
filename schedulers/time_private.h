/* Time arithmetic shared by the schedulers and the layers above them
 * (regions/ ends its last step with it). Not public API. */
#ifndef KAIROS_SCHEDULERS_TIME_PRIVATE_H
#define KAIROS_SCHEDULERS_TIME_PRIVATE_H

#include "kairos/time.h"

/* a + b, saturating at KR_TIME_NEVER: a delay never wraps a time around. */
static inline kr_time_t kr__time_add(kr_time_t a, kr_time_t b)
{
    return a > KR_TIME_NEVER - b ? KR_TIME_NEVER : a + b;
}

#endif
