/* Entity names. Names are optional and need not be unique; a name is copied.
 * kr_entity_find returns, in O(1) on average, the entity that has held the
 * name the longest. */
#ifndef KAIROS_NAME_H
#define KAIROS_NAME_H

#include "kairos/export.h"
#include "kairos/entity.h"

KR_BEGIN_DECLS

/* Sets or replaces the name; NULL or "" removes it. */
KR_API kr_status_t kr_entity_set_name(kr_world_t *world, kr_entity_t e, const char *name);
/* The entity's name, or NULL if it has none (or is stale). Valid until the
 * name changes or the entity is destroyed. */
KR_API const char *kr_entity_name(const kr_world_t *world, kr_entity_t e);
/* The live entity with this name, or KR_ENTITY_INVALID. */
KR_API kr_entity_t kr_entity_find(const kr_world_t *world, const char *name);

KR_END_DECLS

#endif
