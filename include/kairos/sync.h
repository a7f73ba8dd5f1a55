/* Sync-events: the only way simulators talk, along declared dependencies.
 *
 * A sync-event from A to B runs the type's on_sender_side in A (optional)
 * and then on_target_side in B, at the same model time. It needs a
 * dependency A -> B, and its delay must be at least the edge's promise;
 * otherwise it is refused with a message naming both simulators and both
 * times. Without a sender side the payload travels when the event is
 * scheduled; with one, B learns of the event at once and waits for the
 * payload at that time.
 *
 * A sync-event may carry entities (each with its whole subtree): they leave
 * A's world (packed, then destroyed there, so on_destroy fires in A) and are
 * recreated in B with new ids just before on_target_side runs, entity
 * references inside the moved subtrees remapped, references outside them
 * set to KR_ENTITY_INVALID, and on_submodel_move fired on their behaviors.
 * With a sender side, the entities leave A after it ran. */
#ifndef KAIROS_SYNC_H
#define KAIROS_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/event.h"

KR_BEGIN_DECLS

typedef struct kr_sync_desc {
    uint32_t target;            /* simulator id */
    kr_priority_t priority;     /* default 0; the step priority is reserved */
    kr_time_t delay;            /* >= the promise of the edge */
    kr_event_type_t type;       /* needs on_target_side */
    const void *data;           /* type size bytes, copied; NULL = zeros */
    const kr_entity_t *entities;/* optional roots to move to the target */
    size_t entity_count;
} kr_sync_desc_t;

/* Schedules a sync-event; writes its key (target = the target simulator) to
 * *key when non-NULL. Cancel and delay it with kr_cancel / kr_delay, which
 * need that key: a sync-event scheduled with key NULL cannot be cancelled
 * or delayed (kairos keeps no record of it on the sender's side). */
KR_API kr_status_t kr_schedule_sync(kr_sim_t *sim, const kr_sync_desc_t *desc, kr_event_key_t *key);

/* Declares that `sim` runs sync-events of `type` on the target side (a
 * kind declares them with kr_kind_desc_t.receives). Once a simulator has
 * declared one type, a sync-event of a type it has not declared is
 * refused when scheduled, naming both simulators and the type, and the
 * emulation gateway forwards input to it only for the types it declares
 * (docs/emulation.md); a simulator that declares none is not checked.
 * Fails for a type without on_target_side (KR_ERR_INVALID_ARG) and once
 * the model has started (KR_ERR_STATE). */
KR_API kr_status_t kr_sim_receive(kr_sim_t *sim, kr_event_type_t type);

/* True when `sim` has declared that it receives `type` (kr_sim_receive). */
KR_API bool kr_sim_receives(const kr_sim_t *sim, kr_event_type_t type);

/* True when a sync-event of `type` sent to `sim` would be taken: `sim`
 * declared the type, or declares none (and is not checked). A kind's
 * setup asks it of the simulator it will send to, so that a model file
 * that points it at one that cannot take what it sends is refused
 * before the run, not when the first sync-event leaves. */
KR_API bool kr_sim_takes(const kr_sim_t *sim, kr_event_type_t type);

/* During on_target_side: the ids, in this world, of the entities the event
 * carried (in the order they were given), and their number. */
KR_API const kr_entity_t *kr_event_entities(const kr_sim_t *sim, size_t *count);

KR_END_DECLS

#endif
