/* Behavior components: ERS's script behaviors (docs/ecs.md, "Behaviors").
 *
 * A behavior type is a callback table plus a per-instance state of
 * state_size bytes, zeroed on add. The state lives in component storage and
 * moves with its entity (by memcpy), so it may own heap memory through
 * pointers but must not point into itself. Every callback receives the
 * world, the connected entity (self) and a pointer to the state that is
 * valid only during the call. Unused callbacks are NULL.
 *
 * Hierarchy order, when child C moves from parent P to parent Q
 * (kr_entity_set_parent): C.on_exiting(Q); C.on_entering(Q); the link
 * changes; P.on_exited(C); Q.on_entered(C). Detaching skips the Q calls,
 * attaching an orphan skips the P calls. */
#ifndef KAIROS_BEHAVIOR_H
#define KAIROS_BEHAVIOR_H

#include "kairos/entity.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef struct kr_serializer kr_serializer_t; /* kairos/serializer.h */

struct kr_behavior_vtbl {
    /* Just after the component was added. */
    void (*on_creation)(kr_world_t *w, kr_entity_t self, void *state);
    /* Once, just before the component is removed or its entity destroyed. */
    void (*on_destroy)(kr_world_t *w, kr_entity_t self, void *state);
    /* Once, just before on_start, when the model starts. */
    void (*on_awake)(kr_world_t *w, kr_entity_t self, void *state);
    /* Once, when the model has started. */
    void (*on_start)(kr_world_t *w, kr_entity_t self, void *state);
    /* Before self gains a new parent. */
    void (*on_entering)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t new_parent);
    /* After new_child became a child of self. */
    void (*on_entered)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t new_child);
    /* Before self leaves its parent; new_parent may be KR_ENTITY_INVALID. */
    void (*on_exiting)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t new_parent);
    /* After old_child left self. */
    void (*on_exited)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_child);
    /* An input channel of self is ready (connected, both ends open). */
    void (*on_input_channel_ready)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel);
    /* An output channel of self is ready. */
    void (*on_output_channel_ready)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel);
    /* A foreign output channel sent child to self through input channel. */
    void (*on_receive)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel, kr_entity_t child);
    /* Agent-based: every time step. Continuous: at observation points. */
    void (*on_update)(kr_world_t *w, kr_entity_t self, void *state);
    /* After on_update ran on every behavior. */
    void (*on_late_update)(kr_world_t *w, kr_entity_t self, void *state);
    /* Saves (kr_serializer_loading false) or restores the state; the same
     * code does both through the symmetric kr_ser_* calls. */
    kr_status_t (*serialize)(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s);
    /* After the entity arrived in this world from another one; old_self is
     * its id in the world it left. */
    void (*on_submodel_move)(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self);
};

KR_END_DECLS

#endif
