/* The monotonic clock in nanoseconds, for wall times in stats, traces,
 * emulation and waits: never for what a simulation computes. Not public
 * API; shared by every layer. */
#ifndef KAIROS_BASE_CLOCK_H
#define KAIROS_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t kr__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
