/* Adding, reading and removing components of an entity.
 *
 * Storage: entities with the same set of components share one table
 * (archetype) in which every component type is one contiguous array, so a
 * view hands out plain arrays. Adding or removing a component moves the
 * entity's row to another table.
 *
 * Pointer validity: a component pointer stays valid until the next
 * structural change of the same world (create with components, add,
 * remove, destroy); the value survives, its address may not. Never store
 * component pointers; store entity ids and look the component up again. */
#ifndef KAIROS_COMPONENT_H
#define KAIROS_COMPONENT_H

#include <stdbool.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/registry.h"

KR_BEGIN_DECLS

/* Adds a zeroed component and returns it (behaviors: their state, after
 * on_creation has run). Fails (NULL, kr_last_error) on a stale entity, an
 * unregistered id, a component already present, or during a chunk pass.
 * Tags (size 0) return a non-NULL pointer that must not be dereferenced. */
KR_API void *kr_component_add(kr_world_t *world, kr_entity_t e, kr_component_t c);

/* Returns the component, or NULL (and kr_last_error) if absent. */
KR_API void *kr_component_get(kr_world_t *world, kr_entity_t e, kr_component_t c);

/* True if the live entity has the component. */
KR_API bool kr_component_has(const kr_world_t *world, kr_entity_t e, kr_component_t c);

/* Removes the component (behaviors: on_destroy runs first). */
KR_API kr_status_t kr_component_remove(kr_world_t *world, kr_entity_t e, kr_component_t c);

/* kr_component_add / _remove on e[0] .. e[n-1], in that order: the same
 * changes, values (zeroed) and errors as n single calls, but the rows of
 * later entities load while earlier ones move, so a change to many
 * entities waits on memory far less. Stops at the first call that fails
 * and returns its status; *done (may be NULL) gets the number of entities
 * changed before it. The values are found with kr_component_get. */
KR_API kr_status_t kr_component_add_n(kr_world_t *world, size_t n, const kr_entity_t *e, kr_component_t c,
                                      size_t *done);
KR_API kr_status_t kr_component_remove_n(kr_world_t *world, size_t n, const kr_entity_t *e, kr_component_t c,
                                         size_t *done);

KR_END_DECLS

#endif
