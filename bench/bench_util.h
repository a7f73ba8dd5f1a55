/* What the benchmarks share: a clock in nanoseconds and the median of a
 * few repetitions. */
#ifndef KAIROS_BENCH_UTIL_H
#define KAIROS_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double bench_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
