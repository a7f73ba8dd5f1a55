/* Structural changes to many entities in one call: kr_component_add_n,
 * kr_component_remove_n and kr_entity_destroy_n. Each makes the single
 * call on every entity in order (the same changes, values and errors),
 * and loads ahead what the coming calls will touch.
 *
 * Why: a single call runs one to two hundred instructions, about what the
 * processor holds in flight, so the cache misses of one call (the entity's
 * record, its row, the record of the row moved into the gap) and those of
 * the next cannot overlap, and a pass over random entities waits on memory
 * one miss at a time. A batch loads the record of call i + 2 * AHEAD, then
 * the row (and spatial cell) of call i + AHEAD, found through the record
 * the first stage brought in (bench/README.md, "Batched structural
 * changes"). The spatial hash's own batch is kr_spatial_move_n
 * (spatial.c). */
#include "ecs/world_private.h"

#define AHEAD 8

/* The hints are forced inline: GCC counts a function whose only effect is
 * a prefetch as free of side effects and drops the calls to it, and with
 * them every hint (seen with GCC 12 at -O1 and above). */

__attribute__((always_inline)) static inline void prefetch_record(const kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (idx >= w->record_count) return;
    __builtin_prefetch(&w->records[idx], 1);
    if (idx < w->spatial.entry_capacity) __builtin_prefetch(&w->spatial.entries[idx], 1);
}

/* The entity's row: its id and each column's value; and its spatial cell.
 * Reads the record (brought in by prefetch_record), only to find them. */
__attribute__((always_inline)) static inline void prefetch_row(const kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (idx >= w->record_count) return;
    const kr__record_t *r = &w->records[idx];
    if (!(r->flags & KR__REC_ALIVE) || r->generation != kr_entity_generation(e)) return;
    const kr__table_t *t = w->tables[r->table];
    uint32_t row = r->row;
    if (row < t->count) {
        __builtin_prefetch(&t->entities[row], 1);
        for (uint32_t j = 0; j < t->type_count; j++) {
            const kr__column_t *col = &t->columns[j];
            if (col->size) __builtin_prefetch(col->data + (size_t)row * col->size, 1);
        }
    }
    if (r->flags & KR__REC_SPATIAL) kr__spatial_prefetch_cell(&w->spatial, idx);
}

typedef enum { ADD, REMOVE, DESTROY } change_t;

/* The single call of `change` on each entity in order, the hints ahead.
 * Inline in each of the three, so that `change` is a constant there. */
__attribute__((always_inline)) static inline kr_status_t change_each(kr_world_t *w, size_t n, const kr_entity_t *e,
                                                                    kr_component_t c, size_t *done, change_t change,
                                                                    const char *fn)
{
    if (done) *done = 0;
    if (!n) return KR_OK;
    if (!w || !e)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: expected a world and %zu entities, found a NULL %s", fn, n,
                        !w ? "world" : "entity array");
    for (size_t i = 0; i < n && i < 2 * AHEAD; i++) prefetch_record(w, e[i]);
    for (size_t i = 0; i < n && i < AHEAD; i++) prefetch_row(w, e[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + 2 * AHEAD < n) prefetch_record(w, e[i + 2 * AHEAD]);
        if (i + AHEAD < n) prefetch_row(w, e[i + AHEAD]);
        bool ok = change == ADD      ? kr_component_add(w, e[i], c) != NULL
                  : change == REMOVE ? kr_component_remove(w, e[i], c) == KR_OK
                                     : kr_entity_destroy(w, e[i]) == KR_OK;
        if (!ok) {
            if (done) *done = i;
            return kr_last_status();
        }
    }
    if (done) *done = n;
    return KR_OK;
}

kr_status_t kr_component_add_n(kr_world_t *w, size_t n, const kr_entity_t *e, kr_component_t c, size_t *done)
{
    return change_each(w, n, e, c, done, ADD, "kr_component_add_n");
}

kr_status_t kr_component_remove_n(kr_world_t *w, size_t n, const kr_entity_t *e, kr_component_t c, size_t *done)
{
    return change_each(w, n, e, c, done, REMOVE, "kr_component_remove_n");
}

kr_status_t kr_entity_destroy_n(kr_world_t *w, size_t n, const kr_entity_t *e, size_t *done)
{
    return change_each(w, n, e, 0, done, DESTROY, "kr_entity_destroy_n");
}
