/* Model units <-> ticks. */
#include <math.h>

#include "kairos/time.h"
#include "base/error.h"

/* 2^64: the first double that no uint64_t holds. Every double below it is a
 * whole number of at most 2^64 - 2048 once past 2^53, so it converts. */
#define TWO_64 0x1p64

kr_status_t kr_time_from_units(double units, uint64_t precision, kr_time_t *out)
{
    if (!out) return kr__fail(KR_ERR_INVALID_ARG, "time: null output");
    if (precision == 0) return kr__fail(KR_ERR_INVALID_ARG, "time: precision is 0 ticks per unit");
    if (!isfinite(units)) return kr__fail(KR_ERR_INVALID_ARG, "time: %g is not a finite time", units);
    if (units < 0) return kr__fail(KR_ERR_INVALID_ARG, "time: %g is negative", units);
    double x = round(units * (double)precision);
    if (!(x < TWO_64))
        return kr__fail(KR_ERR_INVALID_ARG, "time: %g units is too large for %llu ticks per unit",
                        units, (unsigned long long)precision);
    *out = (kr_time_t)x;
    return KR_OK;
}

kr_time_t kr_time_delay_ticks(double units, uint64_t precision)
{
    if (!(units > 0) || precision == 0) return 0; /* also NaN */
    double x = units * (double)precision;
    if (!(x < TWO_64)) return KR_TIME_NEVER - 1;
    double n = round(x);
    double tol = fmin(1e-12 * x, 1e-3);
    return (kr_time_t)(fabs(x - n) <= tol ? n : ceil(x)); /* x < 2^53 unless whole */
}

double kr_time_to_units(kr_time_t ticks, uint64_t precision)
{
    if (precision == 0) return NAN;
    if (ticks == KR_TIME_NEVER) return INFINITY;
    return (double)ticks / (double)precision;
}
