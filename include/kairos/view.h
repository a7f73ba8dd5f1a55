/* Views: iterate every entity that has all `include` components and none of
 * the `exclude` components.
 *
 * Two ways to iterate, each one "pass" over the world:
 *
 *  - By chunk (fast path): kr_view_next_chunk hands out one table at a time
 *    as plain arrays, one per included component in include order, so the
 *    inner loop is an ordinary C loop. During a chunk pass the world's
 *    structure is locked: creating, destroying, adding or removing fails
 *    with KR_ERR_LOCKED. Changing component values is fine.
 *
 *  - By entity: kr_view_next moves to the next entity; kr_view_entity and
 *    kr_view_get read it. Anything may be done during an entity pass:
 *      * component values may change;
 *      * any entity may be destroyed, or gain or lose components: an entity
 *        destroyed or moved before the pass reached it is not visited, one
 *        already visited is not visited again;
 *      * entities may be created; the pass does not visit them.
 *    Rows left by destroyed or moved entities are compacted when the last
 *    active entity pass of the world ends (a chunk pass started inside an
 *    entity pass may show such rows, with entity KR_ENTITY_INVALID).
 *
 * Sparse components (KR_STORAGE_SPARSE) may appear in either list; they are
 * tested entity by entity when the pass reaches the entity, so such a view
 * iterates by entity only (kr_view_next_chunk fails with KR_ERR_STATE). A
 * view whose include list holds only sparse components looks at every
 * entity of the world.
 *
 * A pass ends when next / next_chunk returns false, or when kr_view_end is
 * called (needed when breaking out of a loop early; kr_view_fini also ends
 * it). The next call after the end starts a new pass. Entities are visited
 * table by table, in row order; removals fill a row from the table's end,
 * so the order within a table is not the order of creation. */
#ifndef KAIROS_VIEW_H
#define KAIROS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/registry.h"

KR_BEGIN_DECLS

#define KR_VIEW_MAX_TERMS 8

/* include must hold at least one component; both lists end at the first
 * KR_COMPONENT_NONE (or at KR_VIEW_MAX_TERMS). */
typedef struct kr_view_desc {
    kr_component_t include[KR_VIEW_MAX_TERMS];
    kr_component_t exclude[KR_VIEW_MAX_TERMS];
} kr_view_desc_t;

typedef struct kr_view_chunk {
    size_t count;                          /* rows in this chunk */
    const kr_entity_t *entities;           /* count entity ids */
    void *columns[KR_VIEW_MAX_TERMS];      /* count components per include term */
} kr_view_chunk_t;

/* A view lives wherever the caller puts it; its fields are private. */
typedef struct kr_view {
    kr_world_t *world;
    kr_component_t include[KR_VIEW_MAX_TERMS];
    kr_component_t exclude[KR_VIEW_MAX_TERMS];
    uint32_t include_count, exclude_count;
    uint32_t sparse_include, sparse_exclude; /* bit i: term i is a sparse component */
    uint32_t *tables;        /* matched table ids, in creation order */
    uint32_t *limits;        /* per matched table: rows present at pass start */
    uint32_t table_count, table_capacity;
    uint32_t tables_checked; /* world tables examined so far */
    uint32_t pass;           /* 0 idle, 1 entity pass, 2 chunk pass */
    uint32_t cursor_table;   /* index into tables */
    uint32_t cursor_row;
    kr_entity_t current;
} kr_view_t;

/* Prepares a view. Fails on a null world, an empty include list or an
 * unregistered component. */
KR_API kr_status_t kr_view_init(kr_view_t *view, kr_world_t *world, const kr_view_desc_t *desc);
/* Ends any pass and frees the view's memory; also after kr_world_destroy
 * (a world destroyed with views in a pass keeps a small shell until the
 * last of them ends: end or fini every view). */
KR_API void kr_view_fini(kr_view_t *view);

/* Entity pass: moves to the next entity; false at the end of the pass. */
KR_API bool kr_view_next(kr_view_t *view);
/* The current entity of an entity pass. */
KR_API kr_entity_t kr_view_entity(const kr_view_t *view);
/* Component `term` (index into include) of the current entity; valid until
 * the next structural change of the world. */
KR_API void *kr_view_get(const kr_view_t *view, size_t term);

/* Chunk pass: fills *chunk with the next non-empty table; false at the end. */
KR_API bool kr_view_next_chunk(kr_view_t *view, kr_view_chunk_t *chunk);

/* Ends the current pass early (no-op when idle). */
KR_API void kr_view_end(kr_view_t *view);

/* Number of entities the view matches right now (no pass needed). */
KR_API size_t kr_view_count(kr_view_t *view);

KR_END_DECLS

#endif
