/* Emulation simulators: a clock paced to the wall clock, and an external
 * system in the loop (docs/emulation.md).
 *
 * An emulation simulator runs an event at model time t only once its clock
 * reads t: model time = (wall time since the run started) x speed. It is
 * never ahead of that clock; it lags it only while it is busy (by the wall
 * time of the event it is running plus the wake-up latency of the wait,
 * about a millisecond) or while a slower upstream simulator holds it back.
 *
 * Input: JSON lines, each an object {"event": NAME, "to": SIM, "data": ANY}
 * ("to" and "data" optional), from a descriptor or a link the simulator
 * opens itself when the run starts (standard input, a named pipe, a TCP
 * socket it listens on or connects from). A line is stamped with the
 * simulator's clock when it is read (never earlier than the simulator's
 * current time), scheduled as an event that calls on_line (or on_input)
 * and written to the log as {"time": TICKS, "after": EVENTS, "event": NAME,
 * "to": SIM, "data": ANY}, where EVENTS is the number of events the
 * simulator had run. A run given that log as `replay` injects the same
 * lines at the same points of the event sequence, without waiting on any
 * clock or opening any link, and so reproduces the run bit for bit.
 *
 * The door is guarded: a line longer than KR_EMULATION_MAX_LINE bytes, or
 * one that is not such an object, is skipped and logged with the reason
 * ({"time", "after", "skipped": REASON, "line": ITS START}); at most
 * KR_EMULATION_BACKLOG lines wait as events at once, and while they do the
 * simulator reads no more, so a flood backs up into the sender (the
 * kernel's buffers, then TCP's flow control) instead of into memory.
 * Lines sent out (kr_emulation_send) are logged as {"time", "after",
 * "out": LINE}; those a peer does not take are held up to
 * KR_EMULATION_OUT_BUFFER bytes, then dropped and counted (they stay in the
 * log). Peers coming and going are logged as {"time", "after", "peer":
 * "connected" | "gone"}. */
#ifndef KAIROS_EMULATION_H
#define KAIROS_EMULATION_H

#include "kairos/export.h"

#include <stdbool.h>
#include <stdint.h>
#include "kairos/event.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

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

#define KR_EMULATION_MAX_LINE (1u << 20)     /* bytes of one input line, newline excluded */
#define KR_EMULATION_BACKLOG 4096u            /* input lines waiting as events */
#define KR_EMULATION_OUT_BUFFER (4u << 20)    /* bytes of output a peer has not taken yet */

typedef void (*kr_input_fn)(kr_sim_t *sim, const char *event, const char *data_json);

/* One input line, as on_line sees it. */
typedef struct kr_input {
    const char *event;
    const char *to;          /* "" when the line named no target */
    const char *data_json;   /* compact JSON text; "null" when the line had no data */
} kr_input_t;
typedef void (*kr_input_line_fn)(kr_sim_t *sim, const kr_input_t *input);

/* A sync-event that reached an emulation simulator with an on_arrival
 * handler: it runs instead of the type's on_target_side, with the sender's
 * id and the payload (the type's size). */
typedef void (*kr_arrival_fn)(kr_sim_t *sim, kr_event_type_t type, uint32_t from, const void *data);

/* Where input comes from and output goes (docs/emulation.md). */
typedef enum kr_link_kind {
    KR_LINK_FD = 0,      /* input_fd, as given; no output */
    KR_LINK_STDIN,       /* standard input, output to standard output (rank 0 only under mpirun) */
    KR_LINK_PIPE,        /* a named pipe at `path`, held open so writers may come and go; output to
                          * `output_path` when set */
    KR_LINK_LISTEN,      /* TCP: listens on host:port (host NULL = 127.0.0.1), one peer at a time; a
                          * peer that leaves may be followed by another; output on the same socket */
    KR_LINK_CONNECT,     /* TCP: connects to host:port; output on the same socket */
} kr_link_kind_t;

typedef struct kr_emulation_link {
    kr_link_kind_t kind;
    const char *path;         /* PIPE */
    const char *output_path;  /* PIPE: optional file or named pipe for output */
    const char *host;         /* LISTEN (NULL = 127.0.0.1) and CONNECT */
    int port;                 /* LISTEN (0 = any free port, printed) and CONNECT */
    double wait_seconds;      /* LISTEN, CONNECT: wait this long for the peer before the run starts
                               * (0 = do not wait); a peer that never came fails the run */
    bool stop_when_gone;      /* a peer that leaves ends the run (kr_sim_stop at its clock's time) */
} kr_emulation_link_t;

typedef struct kr_emulation_desc {
    double speed;             /* model units per wall second; 0 = 1 */
    const kr_clock_t *clock;  /* NULL = the real clock; copied */
    int input_fd;             /* KR_LINK_FD: JSON lines; -1 (or 0 with no handler) = none */
    kr_input_fn on_input;     /* runs each injected line as an event (or on_line) */
    const char *log_path;     /* optional: where both directions are logged; on a replay, ignored
                               * when it is the replayed file itself */
    const char *replay_path;  /* optional: replay this log instead of input and clock */
    kr_emulation_link_t link; /* copied, strings too; opened when the run starts */
    kr_input_line_fn on_line; /* optional: runs each injected line instead of on_input */
    kr_arrival_fn on_arrival; /* optional: see kr_arrival_fn */
} kr_emulation_desc_t;

/* The emulation clock of a simulator, in ticks of model time (for tests and
 * progress displays); the simulator's current time for other formalisms. */
KR_API uint64_t kr_emulation_clock(kr_sim_t *sim);

/* Handlers set after the simulator was added (a kind's setup): NULL leaves
 * one unchanged. KR_ERR_INVALID_ARG for a simulator that is not a local
 * emulation. */
KR_API kr_status_t kr_emulation_handlers(kr_sim_t *sim, kr_input_line_fn on_line, kr_arrival_fn on_arrival);

/* Sends one line, a JSON text without a newline, to the external system
 * and logs it; never blocks (see above). On a replay it is only logged.
 * KR_ERR_INVALID_ARG for text that is not one line of JSON. */
KR_API kr_status_t kr_emulation_send(kr_sim_t *sim, const char *json_line);

/* Logs input that the simulator's handler refused ({"time", "after",
 * "skipped": reason, "line": ...}) and warns in the run's log (the first
 * few times, then every thousandth). */
KR_API void kr_emulation_skip(kr_sim_t *sim, const char *reason, const char *line);

/* Lines sent and dropped (the peer did not take them), input lines taken
 * and skipped, since the run began. */
typedef struct kr_emulation_counts {
    uint64_t lines_in, skipped, lines_out, dropped, peers;
} kr_emulation_counts_t;
KR_API kr_emulation_counts_t kr_emulation_counts(const kr_sim_t *sim);

KR_END_DECLS

#endif
