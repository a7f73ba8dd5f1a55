/* Adding, getting and removing components: each add or remove moves the
 * entity's row along a cached table edge. */
#include "world_private.h"

static const kr_registry_entry_t *registered(const kr_world_t *w, kr_component_t c, const char *fn)
{
    const kr_registry_entry_t *e = kr__registry_entry(w->registry, c);
    if (!e) kr__fail(KR_ERR_UNREGISTERED, "%s: component %u is not registered", fn, c);
    return e;
}

void *kr_component_add(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr_record_t *r = kr__live(w, e, "kr_component_add");
    if (!r) return NULL;
    const kr_registry_entry_t *entry = registered(w, c, "kr_component_add");
    if (!entry || kr__structure_locked(w, "kr_component_add")) return NULL;
    kr_table_t *t = w->tables[r->table];
    if (kr__column_index(t, c) >= 0) {
        kr__fail(KR_ERR_EXISTS, "kr_component_add: entity %u already has '%s'", kr_entity_index(e),
                 entry->info.name);
        return NULL;
    }
    uint32_t to = kr__table_with(w, r->table, c);
    if (to == KR_NONE || kr__table_move(w, e, r, to)) return NULL;
    if (entry->info.vtbl && entry->info.vtbl->on_creation) {
        kr__behavior_fire_one(w, e, c, KR_CB_CREATION, 0);
        /* The callback may have changed or destroyed the entity. */
        if (!kr_entity_alive(w, e)) {
            kr__fail(KR_ERR_STALE_ENTITY, "kr_component_add: on_creation destroyed the entity");
            return NULL;
        }
        return kr_component_get(w, e, c);
    }
    kr_table_t *dst = w->tables[to];
    return kr__column_ptr(dst, (uint32_t)kr__column_index(dst, c), r->row);
}

void *kr_component_get(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr_record_t *r = kr__live(w, e, "kr_component_get");
    if (!r) return NULL;
    kr_table_t *t = w->tables[r->table];
    int col = kr__column_index(t, c);
    if (col < 0) {
        if (registered(w, c, "kr_component_get"))
            kr__fail(KR_ERR_NO_COMPONENT, "kr_component_get: entity %u has no '%s'", kr_entity_index(e),
                     kr__registry_entry(w->registry, c)->info.name);
        return NULL;
    }
    return kr__column_ptr(t, (uint32_t)col, r->row);
}

bool kr_component_has(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr_record_t *r = kr__live(w, e, "kr_component_has");
    return r && kr__column_index(w->tables[r->table], c) >= 0;
}

kr_status_t kr_component_remove(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    kr_record_t *r = kr__live(w, e, "kr_component_remove");
    if (!r) return kr_last_status();
    const kr_registry_entry_t *entry = registered(w, c, "kr_component_remove");
    if (!entry) return KR_ERR_UNREGISTERED;
    if (kr__structure_locked(w, "kr_component_remove")) return KR_ERR_LOCKED;
    if (kr__column_index(w->tables[r->table], c) < 0)
        return kr__fail(KR_ERR_NO_COMPONENT, "kr_component_remove: entity %u has no '%s'",
                        kr_entity_index(e), entry->info.name);
    if (entry->info.vtbl && entry->info.vtbl->on_destroy) {
        kr_entity_t se = w->removing_e;
        kr_component_t sc = w->removing_c;
        w->removing_e = e;
        w->removing_c = c;
        kr__behavior_fire_one(w, e, c, KR_CB_DESTROY, 0);
        w->removing_e = se;
        w->removing_c = sc;
        r = kr__live(w, e, "kr_component_remove");
        if (!r) return kr_last_status();
        if (kr__column_index(w->tables[r->table], c) < 0) return KR_OK; /* callback removed it */
    }
    uint32_t to = kr__table_without(w, r->table, c);
    if (to == KR_NONE) return kr_last_status();
    return kr__table_move(w, e, r, to);
}
