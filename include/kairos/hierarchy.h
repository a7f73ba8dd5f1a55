/* The entity tree: zero or one parent, ordered children, siblings.
 * Queries on a stale entity return KR_ENTITY_INVALID (or 0) and set
 * kr_last_error(). Destroying an entity destroys its subtree. */
#ifndef KAIROS_HIERARCHY_H
#define KAIROS_HIERARCHY_H

#include <stddef.h>
#include "kairos/export.h"
#include "kairos/entity.h"

KR_BEGIN_DECLS

/* Makes child the last child of parent (KR_ENTITY_INVALID detaches it).
 * Refuses to make an entity its own ancestor. Callbacks: kairos/behavior.h. */
KR_API kr_status_t kr_entity_set_parent(kr_world_t *world, kr_entity_t child, kr_entity_t parent);
/* As set_parent, but inserts child just before sibling (a child of parent). */
KR_API kr_status_t kr_entity_insert_before(kr_world_t *world, kr_entity_t child, kr_entity_t parent,
                                           kr_entity_t sibling);

KR_API kr_entity_t kr_entity_parent(const kr_world_t *world, kr_entity_t e);
KR_API kr_entity_t kr_entity_first_child(const kr_world_t *world, kr_entity_t e);
KR_API kr_entity_t kr_entity_last_child(const kr_world_t *world, kr_entity_t e);
KR_API kr_entity_t kr_entity_next_sibling(const kr_world_t *world, kr_entity_t e);
KR_API kr_entity_t kr_entity_prev_sibling(const kr_world_t *world, kr_entity_t e);
KR_API size_t kr_entity_child_count(const kr_world_t *world, kr_entity_t e);

KR_END_DECLS

#endif
