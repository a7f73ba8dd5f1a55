/* Events, their order, and scheduling them inside one simulator.
 *
 * Every event has the key (time, priority, source simulator, source
 * sequence, phase), compared in that order; lower priorities run first. The
 * sequence is a counter of the scheduling simulator, advanced by every
 * schedule (local or sync), so two events never share a key and the order
 * never depends on ranks, threads or timing. A simulator runs its pending
 * events in key order; an event scheduled at the current time with a lower
 * key than events already run simply runs next. The phase puts a
 * sync-event's sender side (0) before its target side (1).
 *
 * Event types are registered on the model (kr_model_event_type) with a
 * fixed payload size: a payload is plain bytes, copied when the event is
 * scheduled and handed to the handler, which may change it. */
#ifndef KAIROS_EVENT_H
#define KAIROS_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

typedef struct kr_sim kr_sim_t;
typedef int32_t kr_priority_t;
typedef uint32_t kr_event_type_t; /* 0 is no type */

#define KR_PRIORITY_DEFAULT 0
/* Reserved: the agent-based step and the continuous observation point run
 * after every other event at the same time, so arrivals at a step time are
 * in place before the step (but for one that another step of the same time
 * sends with delay 0, in a zero-promise group: docs/concepts.md). Users may
 * not schedule at it. */
#define KR_PRIORITY_STEP INT32_MAX

typedef struct kr_event_key {
    kr_time_t time;
    kr_priority_t priority;
    uint32_t source;     /* id of the simulator that scheduled it */
    uint64_t sequence;   /* that simulator's schedule counter */
    uint8_t phase;       /* 0 local or sender side, 1 target side */
    uint32_t target;     /* where it runs (== source for local events); not part of the order */
    /* Not part of the order either: where the simulator holding the event
     * keeps it (0 = unknown), so kr_cancel / kr_delay find it without a
     * lookup. Keys the runtime hands out carry it; a key built by hand may
     * leave it 0 (then the event is searched for). */
    uint32_t handle;
} kr_event_key_t;

/* <0, 0, >0 as a sorts before, equals, after b (target and handle are ignored). */
KR_API int kr_event_key_compare(const kr_event_key_t *a, const kr_event_key_t *b);

typedef void (*kr_event_fn)(kr_sim_t *sim, void *data);

typedef struct kr_event_type_desc {
    const char *name;            /* unique in the model; copied */
    size_t size;                 /* payload bytes, may be 0; a sync-event's at most 1 GiB - 4 KiB */
    kr_event_fn on_event;        /* local events */
    kr_event_fn on_sender_side;  /* sync-events: optional, runs in the sender at the event time */
    kr_event_fn on_target_side;  /* sync-events: runs in the target at the same time */
    /* Optional, ending with { 0 }, not copied (a static table): the payload's
     * fields (numbers and booleans; kairos/registry.h). A type that
     * describes its payload can cross the emulation gateway, which writes
     * it as the JSON object {field: value} (docs/emulation.md). */
    const struct kr_field *fields;
} kr_event_type_desc_t;

/* Schedules a local event at now + delay. `data` (type size bytes, may be
 * NULL for zeros) is copied. The key is written to *key when non-NULL.
 * Fails for an unknown type or one without on_event, and for the reserved
 * step priority. Events after the end time are accepted and never run.
 * `sim` is the simulator whose event is executing (or, before the run, whose
 * setup is running): a simulator changes only its own events, and this
 * call, kr_cancel and kr_delay fail with KR_ERR_STATE for another one and
 * after the run (docs/concepts.md, "Events and their order"). */
KR_API kr_status_t kr_schedule(kr_sim_t *sim, kr_priority_t priority, kr_time_t delay, kr_event_type_t type,
                               const void *data, kr_event_key_t *key);

/* Cancels a pending event by key: a local event of this simulator (also one
 * at the current time, never the one executing), or a sync-event it sent
 * while the event time is at least now + the edge's promise. Fails with
 * KR_ERR_STATE for an event already run, cancelled or executing, and for a
 * sync-event past that limit. */
KR_API kr_status_t kr_cancel(kr_sim_t *sim, const kr_event_key_t *key);

/* Postpones a pending event by `extra` ticks, keeping its sequence (and so
 * its place among events of the same time and priority); the same rules as
 * kr_cancel apply, to the old and the new time. The new key goes to
 * *new_key when non-NULL. */
KR_API kr_status_t kr_delay(kr_sim_t *sim, const kr_event_key_t *key, kr_time_t extra, kr_event_key_t *new_key);

/* The key of the event executing in this simulator, NULL between events. */
KR_API const kr_event_key_t *kr_event_current(const kr_sim_t *sim);

KR_END_DECLS

#endif
