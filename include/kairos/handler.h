/* Scheduling by handler: ERS's ScheduleLocalEvent in one call.
 *
 * A kind declares its event handlers with its descriptor (kr_kind_desc_t's
 * `events`, kairos/kind.h): a name, a payload size and the handler (a local
 * on_event, or a sync-event's on_target_side and optional on_sender_side).
 * The runtime registers them as event types under these names, in the
 * order kinds first appear in the model file, so that names and ids are
 * the same on every rank by construction (event logs, traces and
 * checkpoints use the names). Code then schedules by the handler itself,
 * with a delay in model units: no type id, no tick arithmetic.
 *
 * A handler function identifies one event type: a function declared for
 * two types cannot be scheduled by handler (the call says so). */
#ifndef KAIROS_HANDLER_H
#define KAIROS_HANDLER_H

#include <stddef.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/event.h"
#include "kairos/sim.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

/* Schedules the local event whose on_event is `handler` at now + delay
 * (model units, >= 0, rounded up to a tick), with the default priority.
 * `data` (the type's size, may be NULL for zeros) is copied. */
KR_API kr_status_t kr_schedule_in(kr_sim_t *sim, double delay, kr_event_fn handler, const void *data);

/* The simulator's current time in model units (kr_sim_now in ticks). */
KR_API double kr_sim_now_units(const kr_sim_t *sim);

/* A sync-event by handler: `handler` is the on_target_side of a declared
 * event type; the target is named. */
typedef struct kr_send {
    const char *to;              /* the target simulator's name (a dependency must lead there) */
    kr_event_fn handler;         /* its on_target_side */
    double delay;                /* model units; 0 (the default) means the edge's promise */
    kr_priority_t priority;      /* default 0 */
    const void *data;            /* the type's size, copied; NULL = zeros */
    const kr_entity_t *entities; /* optional roots moved to the target (kairos/sync.h) */
    size_t entity_count;
} kr_send_t;

/* Schedules the sync-event; the rules of kr_schedule_sync apply (a delay
 * below the promise, a missing dependency or an unknown target fail with
 * a message naming both simulators). */
KR_API kr_status_t kr_send(kr_sim_t *sim, const kr_send_t *send);

/* The event type whose handler (on_event, on_target_side or
 * on_sender_side) is `handler`; 0 if none or if several share it. */
KR_API kr_event_type_t kr_model_handler_type(const kr_model_t *model, kr_event_fn handler);

KR_END_DECLS

#endif
