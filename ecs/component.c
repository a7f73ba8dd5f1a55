/* Adding, getting and removing components. Table components move the
 * entity's row along a cached table edge; sparse components live in their
 * own pool (sparse.c). */
#include "ecs/world_private.h"

static const kr__registry_entry_t *registered(const kr_world_t *w, kr_component_t c, const char *fn)
{
    const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
    if (!e) kr__fail(KR_ERR_UNREGISTERED, "%s: component %u is not registered", fn, c);
    return e;
}

static void *already(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__fail(KR_ERR_EXISTS, "kr_component_add: entity %u:%u already has '%s'", kr_entity_index(e),
             kr_entity_generation(e), kr__registry_entry(w->registry, c)->info.name);
    return NULL;
}

/* The value of sparse component c of entity idx, or NULL. */
static void *sparse_get(const kr_world_t *w, uint32_t idx, kr_component_t c)
{
    const kr__sparse_pool_t *p = c < w->pool_slots ? w->pools[c] : NULL;
    if (!p) return NULL;
    uint32_t slot = kr__sparse_slot(p, idx);
    return slot == KR__NONE ? NULL : kr__sparse_value(p, slot);
}

/* Sparse storage: the pool, not the row, gains the value. */
__attribute__((always_inline)) static inline void *sparse_add(kr_world_t *w, kr_entity_t e, kr__record_t *r,
                                                             kr_component_t c)
{
    kr__sparse_pool_t *p = kr__pool(w, c, true);
    if (!p) return NULL;
    if (kr__sparse_slot(p, kr_entity_index(e)) != KR__NONE) return already(w, e, c);
    void *v = kr__sparse_add(w, p, e);
    if (v) r->flags |= KR__REC_SPARSE;
    return v;
}

/* True once c has a sparse pool in w: kr_component_add and _remove send
 * such a component to the two functions below at once. The test depends
 * on nothing the entity's record holds, so a sparse add does not wait for
 * the record's cache miss to know where it goes. */
static inline bool has_pool(kr_world_t *w, kr_component_t c)
{
    return w && kr__pool(w, c, false);
}

/* kr_component_add of a component with a pool (has_pool): it is sparse
 * and registered, so only the entity and the lock are checked. */
__attribute__((noinline)) static void *add_to_pool(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__record_t *r = kr__live(w, e, "kr_component_add");
    if (!r || kr__structure_locked(w, "kr_component_add")) return NULL;
    return sparse_add(w, e, r, c);
}

/* The rarer adds: an edge not yet known, or a behavior with on_creation,
 * which runs once the row has moved. Out of kr_component_add, which then
 * ends in tail calls and keeps few values in saved registers. */
__attribute__((noinline)) static void *add_slow(kr_world_t *w, kr_entity_t e, kr__record_t *r, kr_component_t c,
                                                const kr__registry_entry_t *entry)
{
    uint32_t to = kr__table_with(w, r->table, c);
    void *v = to == KR__NONE ? NULL : kr__table_move_add(w, e, r, to, c);
    if (!v || !entry->info.vtbl || !entry->info.vtbl->on_creation) return v;
    kr__behavior_fire_one(w, e, c, KR__CB_CREATION, 0);
    /* The callback may have changed or destroyed the entity. */
    if (!kr_entity_alive(w, e)) {
        kr__fail(KR_ERR_STALE_ENTITY, "kr_component_add: on_creation destroyed the entity");
        return NULL;
    }
    if (!kr_component_has(w, e, c)) {
        kr__fail(KR_ERR_STATE, "kr_component_add: on_creation removed '%s' from entity %u:%u again", entry->info.name,
                 kr_entity_index(e), kr_entity_generation(e));
        return NULL;
    }
    return kr_component_get(w, e, c);
}

/* kr_component_add in every case, with every check. */
__attribute__((noinline)) static void *add_checked(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__record_t *r = kr__live(w, e, "kr_component_add");
    if (!r) return NULL;
    const kr__registry_entry_t *entry = registered(w, c, "kr_component_add");
    if (!entry || kr__structure_locked(w, "kr_component_add")) return NULL;
    if (entry->info.storage == KR_STORAGE_SPARSE) return sparse_add(w, e, r, c);
    const kr__table_t *t = w->tables[r->table];
    if (kr__column_index(t, c) >= 0) return already(w, e, c);
    uint32_t to = kr__table_edge(t, c, true);
    if (to == KR__NONE || (entry->info.vtbl && entry->info.vtbl->on_creation)) return add_slow(w, e, r, c, entry);
    return kr__table_move_add(w, e, r, to, c);
}

/* The common add's move, in one function: the row and the record move
 * inline and the new value is zeroed (kr_component_add has checked). */
__attribute__((noinline)) static void *add_plain(kr_world_t *w, kr_entity_t e, kr__record_t *r, uint32_t to,
                                                kr_component_t c)
{
    kr__table_t *src = w->tables[r->table], *dst = w->tables[to];
    uint32_t at = (uint32_t)kr__column_index(dst, c);
    uint32_t row = kr__table_move_row(w, e, r, src, to, dst, at, true);
    const kr__column_t *col = &dst->columns[at];
    if (!col->size) return dst->entities; /* a tag: kr__column_ptr's answer */
    uint8_t *v = col->data + (size_t)row * col->size;
    kr__zero_value(v, col->size);
    return v;
}

/* The common add: a live entity outside any pass, a table edge already
 * known (so c is a registered table component the entity lacks), a
 * destination with room, and no on_creation to run (a table without
 * behaviors has none). Only tests here, then a tail call to add_plain or
 * add_checked, so that neither saves registers twice (kr_entity_destroy,
 * ecs/world.c). */
void *kr_component_add(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    if (has_pool(w, c)) return add_to_pool(w, e, c);
    kr__record_t *r = kr__record_to_change(w, e);
    if (!r) return add_checked(w, e, c);
    uint32_t to = kr__table_edge(w->tables[r->table], c, true);
    if (to == KR__NONE) return add_checked(w, e, c);
    const kr__table_t *dst = w->tables[to];
    if (dst->count == dst->capacity || dst->behavior_count) return add_checked(w, e, c);
    return add_plain(w, e, r, to, c);
}

void *kr_component_get(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__record_t *r = kr__live(w, e, "kr_component_get");
    if (!r) return NULL;
    kr__table_t *t = w->tables[r->table];
    int col = kr__column_index(t, c);
    if (col >= 0) return kr__column_ptr(t, (uint32_t)col, r->row);
    const kr__registry_entry_t *entry = registered(w, c, "kr_component_get");
    if (!entry) return NULL;
    void *v = (r->flags & KR__REC_SPARSE) ? sparse_get(w, kr_entity_index(e), c) : NULL;
    if (!v)
        kr__fail(KR_ERR_NO_COMPONENT, "kr_component_get: entity %u:%u has no '%s'", kr_entity_index(e),
                 kr_entity_generation(e), entry->info.name);
    return v;
}

bool kr_component_has(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__record_t *r = kr__live(w, e, "kr_component_has");
    if (!r) return false;
    if (kr__column_index(w->tables[r->table], c) >= 0) return true;
    if (!registered(w, c, "kr_component_has")) return false; /* (reported, as ecs.md says) */
    return (r->flags & KR__REC_SPARSE) && sparse_get(w, kr_entity_index(e), c);
}

/* Sparse storage: only the pool loses the value. */
__attribute__((always_inline)) static inline kr_status_t sparse_remove(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__sparse_pool_t *p = kr__pool(w, c, false);
    uint32_t idx = kr_entity_index(e);
    if (!p || kr__sparse_slot(p, idx) == KR__NONE)
        return kr__fail(KR_ERR_NO_COMPONENT, "kr_component_remove: entity %u:%u has no '%s'", idx,
                        kr_entity_generation(e), kr__registry_entry(w->registry, c)->info.name);
    kr__sparse_remove(p, idx);
    return KR_OK;
}

/* kr_component_remove of a component with a pool (see add_to_pool). */
__attribute__((noinline)) static kr_status_t remove_from_pool(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    if (!kr__live(w, e, "kr_component_remove")) return kr_last_status();
    if (kr__structure_locked(w, "kr_component_remove")) return KR_ERR_LOCKED;
    return sparse_remove(w, e, c);
}

/* The rarer removes: a behavior with on_destroy, which runs before the row
 * moves (unless this remove comes from that very on_destroy), or an edge
 * not yet known (see add_slow). */
__attribute__((noinline)) static kr_status_t remove_slow(kr_world_t *w, kr_entity_t e, kr__record_t *r,
                                                         kr_component_t c, const kr__registry_entry_t *entry)
{
    if (entry->info.vtbl && entry->info.vtbl->on_destroy && !kr__behavior_removing(w, e, c)) {
        kr__behavior_fire_one(w, e, c, KR__CB_DESTROY, 0);
        r = kr__live(w, e, "kr_component_remove");
        if (!r) return kr_last_status();
        if (kr__column_index(w->tables[r->table], c) < 0) return KR_OK; /* callback removed it */
    }
    uint32_t to = kr__table_without(w, r->table, c);
    if (to == KR__NONE) return kr_last_status();
    return kr__table_move_remove(w, e, r, to, c);
}

/* kr_component_remove in every case, with every check. */
__attribute__((noinline)) static kr_status_t remove_checked(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr__record_t *r = kr__live(w, e, "kr_component_remove");
    if (!r) return kr_last_status();
    const kr__registry_entry_t *entry = registered(w, c, "kr_component_remove");
    if (!entry) return KR_ERR_UNREGISTERED;
    if (kr__structure_locked(w, "kr_component_remove")) return KR_ERR_LOCKED;
    if (entry->info.storage == KR_STORAGE_SPARSE) return sparse_remove(w, e, c);
    const kr__table_t *t = w->tables[r->table];
    if (kr__column_index(t, c) < 0)
        return kr__fail(KR_ERR_NO_COMPONENT, "kr_component_remove: entity %u:%u has no '%s'",
                        kr_entity_index(e), kr_entity_generation(e), entry->info.name);
    uint32_t to = kr__table_edge(t, c, false);
    if (to == KR__NONE || (entry->info.vtbl && entry->info.vtbl->on_destroy)) return remove_slow(w, e, r, c, entry);
    return kr__table_move_remove(w, e, r, to, c);
}

/* The common remove's move (see add_plain). */
__attribute__((noinline)) static kr_status_t remove_plain(kr_world_t *w, kr_entity_t e, kr__record_t *r, uint32_t to,
                                                         kr_component_t c)
{
    kr__table_t *src = w->tables[r->table];
    kr__table_move_row(w, e, r, src, to, w->tables[to], (uint32_t)kr__column_index(src, c), false);
    return KR_OK;
}

/* The common remove (see kr_component_add): a known table edge (so the
 * entity's table holds c), a destination with room, and no on_destroy to
 * run (a table without behaviors has none). */
kr_status_t kr_component_remove(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    if (has_pool(w, c)) return remove_from_pool(w, e, c);
    kr__record_t *r = kr__record_to_change(w, e);
    if (!r) return remove_checked(w, e, c);
    const kr__table_t *src = w->tables[r->table];
    uint32_t to = kr__table_edge(src, c, false);
    if (to == KR__NONE || src->behavior_count) return remove_checked(w, e, c);
    const kr__table_t *dst = w->tables[to];
    if (dst->count == dst->capacity) return remove_checked(w, e, c);
    return remove_plain(w, e, r, to, c);
}
