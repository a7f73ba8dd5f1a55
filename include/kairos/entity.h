/* Entity ids.
 *
 * An entity id is 64 bits: the low 32 bits are a slot index, the high 32 bits
 * the slot's generation. Destroying an entity bumps its slot's generation and
 * recycles the index, so an old id is never taken for the new entity that
 * reuses the slot. 0 is the invalid entity (generations start at 1). */
#ifndef KAIROS_ENTITY_H
#define KAIROS_ENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef uint64_t kr_entity_t;

#define KR_ENTITY_INVALID ((kr_entity_t)0)

static inline uint32_t kr_entity_index(kr_entity_t e) { return (uint32_t)e; }
static inline uint32_t kr_entity_generation(kr_entity_t e) { return (uint32_t)(e >> 32); }
static inline kr_entity_t kr_entity_make(uint32_t index, uint32_t generation)
{
    return ((kr_entity_t)generation << 32) | index;
}

typedef struct kr_world kr_world_t;
typedef uint32_t kr_component_t;

/* Options for kr_entity_create_desc. Every field is optional. */
typedef struct kr_entity_desc {
    const char *name;                 /* copied; see kairos/name.h */
    kr_entity_t parent;               /* becomes the last child of parent */
    const kr_component_t *components; /* added at once, zeroed */
    size_t component_count;
} kr_entity_desc_t;

/* Creates an entity with no components. Returns KR_ENTITY_INVALID on failure
 * (null world, or a structural change during a chunk pass). */
KR_API kr_entity_t kr_entity_create(kr_world_t *world);

/* Creates an entity with a name, a parent and components in one step; the
 * components are placed directly in their final storage, which is faster
 * than adding them one by one. Behaviors get on_creation, the parent gets
 * on_entered. Returns KR_ENTITY_INVALID on failure; nothing is created then. */
KR_API kr_entity_t kr_entity_create_desc(kr_world_t *world, const kr_entity_desc_t *desc);

/* Destroys an entity and its whole subtree, children first (post-order):
 * on_destroy fires on every behavior, the parent gets on_exited, the entity
 * leaves the spatial hash and its name is released. */
KR_API kr_status_t kr_entity_destroy(kr_world_t *world, kr_entity_t e);
/* kr_entity_destroy on e[0] .. e[n-1], in that order: the same effects and
 * errors as n single calls, but the records and rows of later entities
 * load while earlier ones go, so destroying many entities waits on memory
 * far less. Stops at the first call that fails (an entity already gone,
 * e.g. a child of one destroyed before it, is KR_ERR_STALE_ENTITY) and
 * returns its status; *done (may be NULL) gets the number destroyed
 * before it. */
KR_API kr_status_t kr_entity_destroy_n(kr_world_t *world, size_t n, const kr_entity_t *e, size_t *done);

/* True if e names a live entity of this world (false for 0 and stale ids). */
KR_API bool kr_entity_alive(const kr_world_t *world, kr_entity_t e);
/* A hint that e's record and spatial-hash entry are needed soon: starts
 * loading them into the cache, changes nothing. Any id is fine. For loops
 * that visit entities in an order memory does not follow (cell by cell). */
KR_API void kr_entity_prefetch(const kr_world_t *world, kr_entity_t e);

/* ---- entity lists: entity ids of one world (a slot,
 * KR_FIELD_ENTITY_LIST, of a simulator's state, kairos/state.h), in insertion order ---- */
typedef struct kr_entity_list {
    kr_entity_t *items;
    uint32_t count, capacity;
} kr_entity_list_t;

KR_API kr_status_t kr_entity_list_push(kr_entity_list_t *l, kr_entity_t e);
/* Removes the entry at `index` keeping the order of the others. */
KR_API void kr_entity_list_remove_at(kr_entity_list_t *l, uint32_t index);
/* Removes the first entry equal to e; false if there is none. */
KR_API bool kr_entity_list_remove(kr_entity_list_t *l, kr_entity_t e);
KR_API void kr_entity_list_fini(kr_entity_list_t *l);

KR_END_DECLS

#endif
