/* The coordinator's transport: how messages between simulators travel.
 * Not public API; every transport lives in net/.
 *
 * The coordinator hands a transport encoded messages addressed to a
 * simulator and asks it to deliver what has arrived. A transport may delay
 * and reorder messages and may deliver one twice: the coordinator restores
 * each edge's order with per-edge message counts and drops duplicates. It
 * must not lose or corrupt them. */
#ifndef KAIROS_NET_TRANSPORT_H
#define KAIROS_NET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

typedef kr_status_t (*kr__deliver_fn)(void *arg, const void *bytes, size_t len);

/* The largest message every transport carries (1 GiB: the MPI transport's
 * counts are ints). A sync-event type whose payload could not fit in one
 * is refused when it is registered (KR__MAX_SYNC_PAYLOAD). */
#define KR__MAX_MESSAGE ((size_t)1 << 30)
/* What a sync-event's payload may take of a message: the rest is room for
 * its headers. */
#define KR__MAX_SYNC_PAYLOAD (KR__MAX_MESSAGE - 4096)

/* What a distributed transport concludes about the whole run. */
typedef enum kr__settle {
    KR__SETTLE_RUNNING,  /* some process may still do something */
    KR__SETTLE_FINISHED, /* every process is done and nothing is in flight */
    KR__SETTLE_DEADLOCK  /* every process is idle, nothing is in flight, some
                         * are not done (every process hears it at once) */
} kr__settle_t;

typedef struct kr__transport kr__transport_t;

/* Where a message waits in its sender's process before it leaves, for
 * amend: a transport's own coordinates (batch 0: nowhere). */
typedef struct kr__held { uint64_t batch; size_t at; int peer; } kr__held_t;

typedef struct kr__transport_vtbl {
    /* Copies the message; the caller's buffer may be reused at once. */
    kr_status_t (*send)(kr__transport_t *t, uint32_t from_sim, uint32_t to_sim, const void *bytes, size_t len);
    /* Delivers arrived messages; stops at the first failing delivery. *count
     * receives the number delivered. */
    kr_status_t (*poll)(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count);
    /* Messages sent and not yet delivered here or handed to the network. */
    size_t (*in_flight)(const kr__transport_t *t);
    void (*destroy)(kr__transport_t *t);
    /* Distributed transports only (NULL otherwise): */
    /* Called when this process has nothing to run. `idle`: it will do
     * nothing until a message arrives (nothing runnable, nothing in flight
     * here); `locally_done`: its simulators are finished. Must not block. */
    kr_status_t (*settle)(kr__transport_t *t, bool idle, bool locally_done, kr__settle_t *verdict);
    /* Called by every process at once when the run is deadlocked: picks
     * the one that describes it (the lowest with `can_describe`, a blocked
     * event of its own) and sets *describe there; every other process
     * waits for that description (its abort) and fails with it. */
    kr_status_t (*deadlock)(kr__transport_t *t, bool can_describe, bool *describe);
    /* Waits until a message may have arrived, for at most about a
     * millisecond: polling without pause when this process has a CPU of
     * its own, sleeping between polls when it shares one. */
    void (*wait)(kr__transport_t *t);
    /* Tells every other process that the run failed with `message`. */
    void (*abort)(kr__transport_t *t, kr_status_t status, const char *message);
    /* Window rounds: element-wise minimum of `mins` over every process, in
     * place; returns once every message any process sent before calling it
     * has reached this one (poll delivers them). Keeps receiving (and
     * notices an abort) while it waits. */
    kr_status_t (*reduce)(kr__transport_t *t, uint64_t *mins, size_t n_mins);
    /* Optional: lets this process's sends under way move on, without
     * delivering anything; cheap. Called from inside long steps, so that
     * a large batch does not wait for the sender's next poll (MPI moves a
     * message above its eager size only while the sender is in MPI). */
    void (*progress)(kr__transport_t *t);
    /* Optional, with settle: the run goes on after every process settled
     * at a checkpoint's cut (schedulers/coordinator.c), so the next
     * settle decides afresh instead of repeating FINISHED. */
    void (*resume)(kr__transport_t *t);
    /* Optional, both or neither: the message `send` handed over last, while
     * it still waits in this process (false, or batch 0: it does not),
     * and `amend`, which overwrites `len` bytes of it at `offset` if it has
     * not left yet (false, changing nothing, if it has). The coordinator
     * raises the guarantee a data message carries this way instead of
     * sending a null message after it (schedulers/sync.c). */
    bool (*held)(kr__transport_t *t, kr__held_t *where);
    bool (*amend)(kr__transport_t *t, const kr__held_t *where, size_t offset, const void *bytes, size_t len);
    /* Optional, with held: lengthens the held message at `where` by `len`
     * bytes if it is still the last message of its batch and the batch
     * stays within the size at which it would leave, and returns where
     * the caller writes those bytes, before any other call to the
     * transport (NULL, changing nothing, otherwise). The coordinator adds
     * a sync-event to the edge's last one this way, so that a run of them
     * on one edge travels as one message with one header
     * (schedulers/sync.c), written straight into the batch. */
    uint8_t *(*extend)(kr__transport_t *t, const kr__held_t *where, size_t len);
    /* True if messages between simulators of this process need not travel:
     * the coordinator then applies them at once (edge counts kept). Test
     * transports that reorder leave it false, so that they are exercised. */
    bool direct_local;
} kr__transport_vtbl_t;

struct kr__transport {
    const kr__transport_vtbl_t *vtbl;
};

/* In order, at once: the transport of a single process. */
kr__transport_t *kr__transport_local_create(void);

/* For tests: holds each message back for a random number of polls, delivers
 * what is due in random order, and delivers a fraction twice; all drawn
 * from `seed`. */
typedef struct kr__test_transport_desc {
    uint64_t seed;
    double hold_probability;      /* chance a message waits another poll */
    double duplicate_probability; /* chance a message is delivered twice */
} kr__test_transport_desc_t;
kr__transport_t *kr__transport_test_create(const kr__test_transport_desc_t *desc);
/* For tests of a whole run (in one process or over ranks): wraps `inner`
 * (taking ownership) so that messages are held back and handed on in a
 * shuffled order, drawn from `seed`. */
kr__transport_t *kr__transport_chaos_wrap(kr__transport_t *inner, uint64_t seed);

/* Test hook: while frozen, messages from `from_sim` are held (0 = none). */
void kr__transport_test_freeze(kr__transport_t *t, uint32_t from_sim, bool frozen);

#endif
