/* Views: a cached list of the tables that match include/exclude, refreshed
 * incrementally as the world creates tables (tables are never deleted). */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "ecs/world_private.h"

/* Tables are matched on table components only; sparse terms are tested per
 * entity (entity_matches). */
static bool table_matches(const kr_view_t *v, const kr__table_t *t)
{
    for (uint32_t i = 0; i < v->include_count; i++)
        if (!(v->sparse_include >> i & 1) && kr__column_index(t, v->include[i]) < 0) return false;
    for (uint32_t i = 0; i < v->exclude_count; i++)
        if (!(v->sparse_exclude >> i & 1) && kr__column_index(t, v->exclude[i]) >= 0) return false;
    return true;
}

static bool in_pool(const kr_world_t *w, kr_component_t c, kr_entity_t e)
{
    const kr__sparse_pool_t *p = c < w->pool_slots ? w->pools[c] : NULL;
    return p && kr__sparse_slot(p, kr_entity_index(e)) != KR__NONE;
}

static bool entity_matches(const kr_view_t *v, kr_entity_t e)
{
    for (uint32_t i = 0; i < v->include_count; i++)
        if ((v->sparse_include >> i & 1) && !in_pool(v->world, v->include[i], e)) return false;
    for (uint32_t i = 0; i < v->exclude_count; i++)
        if ((v->sparse_exclude >> i & 1) && in_pool(v->world, v->exclude[i], e)) return false;
    return true;
}

static kr_status_t refresh(kr_view_t *v)
{
    kr_world_t *w = v->world;
    for (; v->tables_checked < w->table_count; v->tables_checked++) {
        if (!table_matches(v, w->tables[v->tables_checked])) continue;
        if (v->table_count == v->table_capacity) {
            /* Two arrays, one capacity: it grows once both have. */
            uint32_t cap = v->table_capacity, limits_cap = v->table_capacity;
            if (KR__GROW_U32(v->tables, cap, v->table_count + 1, 8, "view") ||
                KR__GROW_U32(v->limits, limits_cap, v->table_count + 1, 8, "view"))
                return kr_last_status();
            v->table_capacity = cap;
        }
        /* A table found during a pass (kr_view_count refreshes too) holds no
         * row of that pass; at the next pass start every limit is reset. */
        v->limits[v->table_count] = 0;
        v->tables[v->table_count++] = v->tables_checked;
    }
    return KR_OK;
}

static kr_status_t copy_terms(kr_component_t *dst, uint32_t *count, uint32_t *sparse,
                              const kr_component_t *src, const kr_registry_t *reg, const char *list)
{
    *count = 0;
    *sparse = 0;
    for (uint32_t i = 0; i < KR_VIEW_MAX_TERMS && src[i]; i++) {
        const kr__registry_entry_t *e = kr__registry_entry(reg, src[i]);
        if (!e)
            return kr__fail(KR_ERR_UNREGISTERED, "kr_view_init: %s component %u is not registered",
                            list, src[i]);
        if (e->info.storage == KR_STORAGE_SPARSE) *sparse |= 1u << i;
        dst[(*count)++] = src[i];
    }
    return KR_OK;
}

kr_status_t kr_view_init(kr_view_t *v, kr_world_t *w, const kr_view_desc_t *desc)
{
    if (!v) return kr__fail(KR_ERR_INVALID_ARG, "kr_view_init: null view");
    memset(v, 0, sizeof *v);
    if (!w || !desc) return kr__fail(KR_ERR_INVALID_ARG, "kr_view_init: null %s", w ? "desc" : "world");
    v->world = w;
    if (copy_terms(v->include, &v->include_count, &v->sparse_include, desc->include, w->registry, "include") ||
        copy_terms(v->exclude, &v->exclude_count, &v->sparse_exclude, desc->exclude, w->registry, "exclude"))
        return kr_last_status();
    if (!v->include_count)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_view_init: include needs at least one component");
    return KR_OK;
}

/* The world was destroyed while this view was in a pass (world.c): the
 * pass ends on the emptied struct, which goes with the last such pass. */
static void end_on_destroyed(kr_view_t *v)
{
    kr_world_t *w = v->world;
    if (v->pass && --w->dead_passes == 0) free(w);
    v->world = NULL;
    v->pass = 0;
    v->current = KR_ENTITY_INVALID;
}

/* (only a view in a pass may meet its world destroyed: the world keeps
 * its struct for those alone) */
static bool world_gone(kr_view_t *v, const char *fn)
{
    if (!v->pass || !v->world->destroyed) return false;
    end_on_destroyed(v);
    kr__fail(KR_ERR_STATE, "%s: the view's world was destroyed", fn);
    return true;
}

void kr_view_end(kr_view_t *v)
{
    if (!v || !v->world) return;
    /* Out of a pass the world is not touched: it may be gone (a view
     * finished after kr_world_destroy). */
    if (!v->pass) {
        v->current = KR_ENTITY_INVALID;
        return;
    }
    kr_world_t *w = v->world;
    if (w->destroyed) {
        end_on_destroyed(v);
        return;
    }
    if (v->pass == 1) {
        if (--w->entity_passes == 0) kr__world_compact(w);
    } else if (v->pass == 2) {
        if (--w->chunk_passes == 0) kr__world_compact(w);
    }
    v->pass = 0;
    v->current = KR_ENTITY_INVALID;
}

void kr_view_fini(kr_view_t *v)
{
    if (!v) return;
    kr_view_end(v);
    free(v->tables);
    free(v->limits);
    memset(v, 0, sizeof *v);
}

bool kr_view_next(kr_view_t *v)
{
    if (!v || !v->world || world_gone(v, "kr_view_next")) return false;
    kr_world_t *w = v->world;
    if (v->pass == 2) {
        kr__fail(KR_ERR_STATE, "kr_view_next: a chunk pass of this view is active");
        return false;
    }
    if (v->pass == 0) {
        if (refresh(v)) return false;
        /* Rows present now are the pass; rows appended later are not visited. */
        for (uint32_t i = 0; i < v->table_count; i++) v->limits[i] = w->tables[v->tables[i]]->count;
        v->pass = 1;
        w->entity_passes++;
        v->cursor_table = 0;
        v->cursor_row = 0;
    }
    for (; v->cursor_table < v->table_count; v->cursor_table++, v->cursor_row = 0) {
        const kr__table_t *t = w->tables[v->tables[v->cursor_table]];
        uint32_t limit = v->limits[v->cursor_table];
        if (limit > t->count) limit = t->count;
        while (v->cursor_row < limit) {
            kr_entity_t e = t->entities[v->cursor_row++];
            if (e != KR_ENTITY_INVALID && ((v->sparse_include | v->sparse_exclude) == 0 || entity_matches(v, e))) {
                v->current = e;
                return true;
            }
        }
    }
    kr_view_end(v);
    return false;
}

kr_entity_t kr_view_entity(const kr_view_t *v)
{
    return v ? v->current : KR_ENTITY_INVALID;
}

void *kr_view_get(const kr_view_t *v, size_t term)
{
    if (!v || term >= v->include_count) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_view_get: term %zu out of range", term);
        return NULL;
    }
    if (v->pass != 1 || v->current == KR_ENTITY_INVALID) {
        kr__fail(KR_ERR_STATE, "kr_view_get: no entity: call it between kr_view_next and the next call");
        return NULL;
    }
    return kr_component_get(v->world, v->current, v->include[term]);
}

bool kr_view_next_chunk(kr_view_t *v, kr_view_chunk_t *chunk)
{
    if (!v || !v->world || !chunk || world_gone(v, "kr_view_next_chunk")) return false;
    kr_world_t *w = v->world;
    if (v->pass == 1) {
        kr__fail(KR_ERR_STATE, "kr_view_next_chunk: an entity pass of this view is active");
        return false;
    }
    if (v->sparse_include | v->sparse_exclude) {
        kr__fail(KR_ERR_STATE, "kr_view_next_chunk: a view naming sparse components iterates by entity");
        return false;
    }
    if (v->pass == 0) {
        if (refresh(v)) return false;
        v->pass = 2;
        w->chunk_passes++;
        v->cursor_table = 0;
    }
    while (v->cursor_table < v->table_count) {
        kr__table_t *t = w->tables[v->tables[v->cursor_table++]];
        if (!t->count) continue;
        chunk->count = t->count;
        chunk->entities = t->entities;
        for (uint32_t i = 0; i < v->include_count; i++)
            chunk->columns[i] = kr__column_ptr(t, (uint32_t)kr__column_index(t, v->include[i]), 0);
        for (uint32_t i = v->include_count; i < KR_VIEW_MAX_TERMS; i++) chunk->columns[i] = NULL;
        return true;
    }
    kr_view_end(v);
    return false;
}

size_t kr_view_count(kr_view_t *v)
{
    if (!v || !v->world || world_gone(v, "kr_view_count") || refresh(v)) return 0;
    size_t n = 0;
    bool per_entity = (v->sparse_include | v->sparse_exclude) != 0;
    for (uint32_t i = 0; i < v->table_count; i++) {
        const kr__table_t *t = v->world->tables[v->tables[i]];
        if (!per_entity && !t->sweep) {
            n += t->count - t->hole_count;
            continue;
        }
        for (uint32_t row = 0; row < t->count; row++)
            n += t->entities[row] != KR_ENTITY_INVALID && (!per_entity || entity_matches(v, t->entities[row]));
    }
    return n;
}
