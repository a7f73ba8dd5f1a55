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

/* The nearest tick when x is within rounding error of it (a relative
 * 1e-12, at most a thousandth of a tick), else the next tick up. With t
 * the whole part of x and f the rest, that is t when f <= tol and t + 1
 * otherwise: an x just below a whole number rounds up to it either way,
 * and the tolerance is below a half. t and f are exact for every x in
 * (0, 2^64) (below 2^53, x - t subtracts two doubles within a factor of 2
 * of each other or t is 0; from 2^53 on, x is whole), so this gives what
 * round, fmin and ceil give, without three calls into libm (a twentieth of
 * what a PHOLD event cost, which converts its delay here). */
kr_time_t kr_time_delay_ticks(double units, uint64_t precision)
{
    if (!(units > 0) || precision == 0) return 0; /* also NaN */
    double x = units * (double)precision;
    if (!(x < TWO_64)) return KR_TIME_NEVER - 1;
    uint64_t t = (uint64_t)x;
    double f = x - (double)t;
    double tol = 1e-12 * x < 1e-3 ? 1e-12 * x : 1e-3;
    return f <= tol ? t : t + 1;
}

double kr_time_to_units(kr_time_t ticks, uint64_t precision)
{
    if (precision == 0) return NAN;
    if (ticks == KR_TIME_NEVER) return INFINITY;
    return (double)ticks / (double)precision;
}
