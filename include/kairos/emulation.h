/* Emulation simulators: a clock paced to the wall clock, and events
 * injected from outside while the run goes on.
 *
 * An emulation simulator runs an event at model time t only once its clock
 * reads t: model time = (wall time since the run started) x speed. It is
 * never ahead of that clock; it lags it only while it is busy (by the wall
 * time of the event it is running plus the wake-up latency of the wait,
 * about a millisecond) or while a slower upstream simulator holds it back.
 *
 * Input: JSON lines on a file descriptor, each {"event": NAME, "data": ANY}.
 * A line is stamped with the simulator's clock when it is read (never
 * earlier than the simulator's current time), scheduled as an event that
 * calls on_input with NAME and the JSON text of "data", and written to the
 * log as {"time": TICKS, "after": EVENTS, "event": NAME, "data": ANY}, where
 * EVENTS is the number of events the simulator had run. A run given that
 * log as `replay` injects the same lines at the same points of the event
 * sequence, without waiting on any clock, and so reproduces the run bit for
 * bit. A malformed line is logged as an error and skipped. */
#ifndef KAIROS_EMULATION_H
#define KAIROS_EMULATION_H

#include "kairos/export.h"

#include <stdint.h>

typedef struct kr_sim kr_sim_t;

/* A clock in nanoseconds. The default reads CLOCK_MONOTONIC and waits with
 * poll() on the input. Tests inject one that needs no real waiting. */
typedef struct kr_clock {
    uint64_t (*now_ns)(void *arg);
    /* Waits until now_ns() >= deadline or input may be readable on fd (-1:
     * none); may return early. */
    void (*wait_ns)(void *arg, uint64_t deadline, int fd);
    void *arg;
} kr_clock_t;

typedef void (*kr_input_fn)(kr_sim_t *sim, const char *event, const char *data_json);

typedef struct kr_emulation_desc {
    double speed;             /* model units per wall second; 0 = 1 */
    const kr_clock_t *clock;  /* NULL = the real clock; copied */
    int input_fd;             /* JSON lines; -1 (or 0 with no on_input) = none */
    kr_input_fn on_input;     /* runs each injected line as an event */
    const char *log_path;     /* optional: where injected lines are logged */
    const char *replay_path;  /* optional: replay this log instead of input and clock */
} kr_emulation_desc_t;

/* The emulation clock of a simulator, in ticks of model time (for tests and
 * progress displays); the simulator's current time for other formalisms. */
KR_API uint64_t kr_emulation_clock(kr_sim_t *sim);

#endif
