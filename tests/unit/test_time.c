/* Model units <-> ticks: nearest for points, up (with a tolerance for
 * floating-point error) for delays, and the refusals and saturation at the
 * edges. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kairos/status.h"
#include "kairos/time.h"
#include "base/hmap.h"

#define P KR_PRECISION_DEFAULT

Test(time, from_units_rounds_to_nearest)
{
    kr_time_t t = 7;
    cr_assert_eq(kr_time_from_units(0.0, P, &t), KR_OK);
    cr_assert_eq(t, 0);
    cr_assert_eq(kr_time_from_units(0.3, P, &t), KR_OK);
    cr_assert_eq(t, 300000);
    cr_assert_eq(kr_time_from_units(0.1 + 0.2, P, &t), KR_OK);
    cr_assert_eq(t, 300000);
    cr_assert_eq(kr_time_from_units(1.0000004, P, &t), KR_OK);
    cr_assert_eq(t, 1000000);
    cr_assert_eq(kr_time_from_units(1.0000006, P, &t), KR_OK);
    cr_assert_eq(t, 1000001);
    cr_assert_eq(kr_time_from_units(2.5, 1, &t), KR_OK); /* ties away from zero */
    cr_assert_eq(t, 3);
    cr_assert_eq(kr_time_from_units(12.0, 1, &t), KR_OK);
    cr_assert_eq(t, 12);
}

Test(time, from_units_refuses)
{
    kr_time_t t = 42;
    const double bad[] = {-1.0, -1e-300, NAN, INFINITY, -INFINITY, 1e300, 0x1p64};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kr_clear_error();
        cr_assert_eq(kr_time_from_units(bad[i], 1, &t), KR_ERR_INVALID_ARG, "%g accepted", bad[i]);
        cr_assert_neq(kr_last_error()[0], '\0');
        cr_assert_eq(t, 42, "output written on failure");
    }
    cr_assert_eq(kr_time_from_units(1.0, 0, &t), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "precision"));
    cr_assert_eq(kr_time_from_units(1.0, P, NULL), KR_ERR_INVALID_ARG);
    /* 2e13 units at microseconds is 2e19 ticks, past 2^64. */
    cr_assert_eq(kr_time_from_units(2e13, P, &t), KR_ERR_INVALID_ARG);
    /* The largest double below 2^64 fits. */
    cr_assert_eq(kr_time_from_units(0x1p64 - 2048, 1, &t), KR_OK);
    cr_assert_eq(t, UINT64_MAX - 2047);
}

Test(time, delay_rounds_up)
{
    cr_assert_eq(kr_time_delay_ticks(1.0, P), 1000000);
    cr_assert_eq(kr_time_delay_ticks(1.0000001, P), 1000001);
    cr_assert_eq(kr_time_delay_ticks(1.0000004, P), 1000001);
    cr_assert_eq(kr_time_delay_ticks(0.3000001, P), 300001);
    cr_assert_eq(kr_time_delay_ticks(1e-9, P), 1);   /* any positive delay takes a tick */
    cr_assert_eq(kr_time_delay_ticks(1e-300, P), 1);
    cr_assert_eq(kr_time_delay_ticks(2.5, 1), 3);
    cr_assert_eq(kr_time_delay_ticks(2.001, 1), 3);
}

Test(time, delay_ceil_tolerance)
{
    /* (0.1 + 0.2) * 1e6 is 300000.00000000006 in doubles, and 9 * 0.001 *
     * 1e6 is 9000.0000000000018: error, not a real excess. */
    volatile double tenth = 0.1, fifth = 0.2, ms = 0.001;
    double ms9 = 9 * ms;
    cr_assert_gt((tenth + fifth) * 1e6, 300000.0, "premise: the product lands above the integer");
    cr_assert_gt(ms9 * 1e6, 9000.0, "premise: the product lands above the integer");
    cr_assert_eq(kr_time_delay_ticks(ms9, P), 9000);
    cr_assert_eq(kr_time_delay_ticks(0.3, P), 300000);
    cr_assert_eq(kr_time_delay_ticks(0.1 + 0.2, P), 300000);
    cr_assert_eq(kr_time_delay_ticks(0.7, P), 700000);
    cr_assert_eq(kr_time_delay_ticks(1.1, P), 1100000);
    for (int i = 1; i <= 1000; i++) {
        double u = i * 0.001; /* i milliseconds, computed in doubles */
        cr_assert_eq(kr_time_delay_ticks(u, P), (kr_time_t)i * 1000, "%d ms", i);
        cr_assert_eq(kr_time_delay_ticks(i / 10.0, 10), (kr_time_t)i, "%d tenths", i);
    }
    /* Large: the tolerance is capped at 1e-3 ticks. */
    cr_assert_eq(kr_time_delay_ticks(1e6 + 0.01, P), UINT64_C(1000000010000));
    cr_assert_eq(kr_time_delay_ticks(1e6 + 1e-6, P), UINT64_C(1000000000001));
    /* Never below the nearest tick: at or above a promise stays at or above it. */
    for (int i = 0; i < 1000; i++) {
        double u = 0.000123 * i + 0.5;
        kr_time_t p;
        cr_assert_eq(kr_time_from_units(u, P, &p), KR_OK);
        cr_assert_geq(kr_time_delay_ticks(u, P), p);
    }
}

Test(time, delay_edges)
{
    cr_assert_eq(kr_time_delay_ticks(0.0, P), 0);
    cr_assert_eq(kr_time_delay_ticks(-0.0, P), 0);
    cr_assert_eq(kr_time_delay_ticks(-1.0, P), 0);
    cr_assert_eq(kr_time_delay_ticks(-INFINITY, P), 0);
    cr_assert_eq(kr_time_delay_ticks(NAN, P), 0);
    cr_assert_eq(kr_time_delay_ticks(1.0, 0), 0);
    cr_assert_eq(kr_time_delay_ticks(INFINITY, P), KR_TIME_NEVER - 1);
    cr_assert_eq(kr_time_delay_ticks(1e300, P), KR_TIME_NEVER - 1);
    cr_assert_eq(kr_time_delay_ticks(0x1p64, 1), KR_TIME_NEVER - 1);
    cr_assert_eq(kr_time_delay_ticks(0x1p64 - 2048, 1), UINT64_MAX - 2047);
    cr_assert_eq(kr_time_delay_ticks(0x1p53 + 2, 1), (UINT64_C(1) << 53) + 2);
}

/* The definition kr_time_delay_ticks follows, with libm: the nearest
 * whole x when within a relative 1e-12 (at most 1e-3) of it, else the next
 * one up. */
static kr_time_t delay_by_definition(double units, uint64_t precision)
{
    if (!(units > 0) || precision == 0) return 0;
    double x = units * (double)precision;
    if (!(x < 0x1p64)) return KR_TIME_NEVER - 1;
    double n = round(x);
    double tol = fmin(1e-12 * x, 1e-3);
    return (kr_time_t)(fabs(x - n) <= tol ? n : ceil(x));
}

static uint64_t mix_count;
static uint64_t mix_next(void) { return kr__mix64(++mix_count); }

/* kr_time_delay_ticks works without libm; it must give what the
 * definition gives for every delay: whole numbers and their neighbours a
 * few ulps away, halves, the tolerance's edges, the edges of 2^52, 2^53,
 * 2^63 and 2^64, and a million delays of random magnitude at every usual
 * precision. */
Test(time, delay_matches_its_definition)
{
    static const uint64_t precisions[] = { 1, 10, 1000, KR_PRECISION_DEFAULT, 1000000000 };
    static const double marks[] = { 0x1p-1074, 1e-300, 1e-9, 0.5, 1, 2.5, 3, 1e3, 1e6 + 0.5, 0x1p52, 0x1p52 + 0.5,
                                    0x1p53, 0x1p63, 0x1p64 - 2048, 0x1p64 };
    for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++) {
        uint64_t pr = precisions[p];
        /* each mark and 15 ulps up from it, then down from it */
        for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
            for (int up = 1; up >= 0; up--) {
                double u = marks[i] / (double)pr;
                for (int k = 0; k < 16; k++, u = nextafter(u, up ? INFINITY : 0))
                    cr_assert_eq(kr_time_delay_ticks(u, pr), delay_by_definition(u, pr), "%a at %llu", u,
                                 (unsigned long long)pr);
            }
        /* whole numbers of ticks, and a hair (the tolerance and around it) above */
        for (int i = 1; i < 20000; i++) {
            double w = (double)(mix_next() % 4000000000000ULL) + 1;
            double hairs[] = { 0, 1e-12 * w, 1.5e-12 * w, 0.9e-12 * w, 1e-3, 0.9e-3, 1.1e-3, 0.5, 0.4999999 };
            for (size_t h = 0; h < sizeof hairs / sizeof *hairs; h++) {
                double u = (w + hairs[h]) / (double)pr;
                cr_assert_eq(kr_time_delay_ticks(u, pr), delay_by_definition(u, pr), "%a at %llu", u,
                             (unsigned long long)pr);
            }
        }
    }
    /* random magnitudes: 2^-40 to 2^70 units */
    for (int i = 0; i < 1000000; i++) {
        uint64_t r = mix_next();
        double u = ldexp((double)(r >> 11) * 0x1p-53 + 0.5, (int)(mix_next() % 110) - 40);
        uint64_t pr = precisions[r % (sizeof precisions / sizeof *precisions)];
        cr_assert_eq(kr_time_delay_ticks(u, pr), delay_by_definition(u, pr), "%a at %llu", u, (unsigned long long)pr);
    }
}

Test(time, to_units)
{
    cr_assert_eq(kr_time_to_units(0, P), 0.0);
    cr_assert_eq(kr_time_to_units(1500000, P), 1.5);
    cr_assert_eq(kr_time_to_units(300000, P), 0.3);
    cr_assert(isinf(kr_time_to_units(KR_TIME_NEVER, P)));
    cr_assert_gt(kr_time_to_units(KR_TIME_NEVER, P), 0);
    cr_assert(isfinite(kr_time_to_units(KR_TIME_NEVER - 1, P)));
    cr_assert(isnan(kr_time_to_units(5, 0)));
    /* Round trip of whole ticks. */
    for (kr_time_t t = 0; t < 5000000; t += 12345) {
        kr_time_t back;
        cr_assert_eq(kr_time_from_units(kr_time_to_units(t, P), P, &back), KR_OK);
        cr_assert_eq(back, t);
        cr_assert_eq(kr_time_delay_ticks(kr_time_to_units(t, P), P), t);
    }
}
