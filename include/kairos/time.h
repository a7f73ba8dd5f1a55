/* Model time.
 *
 * Time is kr_time_t, a count of ticks. The model precision is the number of
 * ticks per model time unit (default 1,000,000: with 1.0 meaning one second,
 * a tick is a microsecond). Model files and users speak model units
 * (doubles); the runtime converts once, at the boundary, with the helpers
 * below. Integer ticks make event order exact: no two runs can disagree on
 * whether a + b equals c. */
#ifndef KAIROS_TIME_H
#define KAIROS_TIME_H

#include <stdint.h>
#include "kairos/export.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef uint64_t kr_time_t;

#define KR_PRECISION_DEFAULT UINT64_C(1000000)
/* "Never": later than any time a run can reach. */
#define KR_TIME_NEVER UINT64_MAX

/* Converts a point in time given in model units to ticks, rounded to the
 * nearest tick. Fails (KR_ERR_INVALID_ARG) for a negative, non-finite or
 * unrepresentable value, or a zero precision. */
KR_API kr_status_t kr_time_from_units(double units, uint64_t precision, kr_time_t *out);

/* Converts a delay in model units to ticks, rounded up, so that a delay
 * drawn at or above a promise never falls below it once in ticks. Negative
 * values, zero, NaN and a zero precision give 0; values past the
 * representable range (and +infinity) saturate at KR_TIME_NEVER - 1.
 *
 * Rounding up has a tolerance for floating-point error: with x = units *
 * precision, if x lies within min(1e-12 * x, 1e-3) of a whole number n the
 * result is n, otherwise ceil(x). So 0.1 + 0.2 s at microseconds (x =
 * 300000.00000000006) gives 300000, not 300001, while a real sub-tick
 * excess (0.3000001 s -> 300000.1) still rounds up. The result is never
 * below the nearest tick, so a delay at or above a promise converted by
 * kr_time_from_units stays at or above it. */
KR_API kr_time_t kr_time_delay_ticks(double units, uint64_t precision);

/* Converts ticks to model units (KR_TIME_NEVER gives +infinity, a zero
 * precision NaN). */
KR_API double kr_time_to_units(kr_time_t ticks, uint64_t precision);

KR_END_DECLS

#endif
