/* Sparse storage: one pool (a sparse set) per KR_STORAGE_SPARSE component.
 * A pool maps entity index -> dense slot; values and owners sit in dense
 * arrays, so adding and removing touch only the pool, never the entity's
 * table row. */
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "ecs/world_private.h"

kr__sparse_pool_t *kr__pool_create(kr_world_t *w, kr_component_t c)
{
    if (c >= w->pool_slots) {
        uint32_t n = kr_registry_count(w->registry) + 1;
        if (n <= c) n = c + 1;
        kr__sparse_pool_t **p = realloc(w->pools, n * sizeof *p);
        kr_component_t *ids = realloc(w->pool_ids, n * sizeof *ids);
        if (p) w->pools = p;
        if (ids) w->pool_ids = ids;
        if (!p || !ids) {
            kr__fail(KR_ERR_NOMEM, "sparse storage: out of memory");
            return NULL;
        }
        memset(p + w->pool_slots, 0, (n - w->pool_slots) * sizeof *p);
        w->pool_slots = n;
    }
    kr__sparse_pool_t *pool = calloc(1, sizeof *pool);
    if (!pool) {
        kr__fail(KR_ERR_NOMEM, "sparse storage: out of memory");
        return NULL;
    }
    const kr_component_info_t *info = &kr__registry_entry(w->registry, c)->info;
    pool->size = (uint32_t)info->size;
    pool->align = (uint32_t)info->align;
    w->pools[c] = pool;
    w->pool_ids[w->pool_count++] = c;
    return pool;
}

void *kr__sparse_add_slow(kr_world_t *w, kr__sparse_pool_t *p, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (idx >= p->slot_capacity) {
        uint32_t cap = w->record_capacity > idx ? w->record_capacity : idx + 1;
        uint32_t *s = kr__array_grow(p->slot_of, (size_t)p->slot_capacity * sizeof *s, (size_t)cap * sizeof *s, 64);
        if (!s) {
            kr__fail(KR_ERR_NOMEM, "sparse storage: out of memory");
            return NULL;
        }
        memset(s + p->slot_capacity, 0xff, (size_t)(cap - p->slot_capacity) * sizeof *s);
        p->slot_of = s;
        p->slot_capacity = cap;
    }
    if (p->count == p->capacity) {
        uint64_t cap = p->capacity ? (uint64_t)p->capacity * 2 : 64;
        if (cap > UINT32_MAX - 1) {
            kr__fail(KR_ERR_NOMEM, "sparse storage: more than 2^32 values");
            return NULL;
        }
        kr_entity_t *ents = kr__array_grow(p->entities, (size_t)p->count * sizeof *ents, cap * sizeof *ents, 64);
        if (!ents) {
            kr__fail(KR_ERR_NOMEM, "sparse storage: out of memory");
            return NULL;
        }
        p->entities = ents;
        if (p->size) {
            uint8_t *d = kr__array_grow(p->data, (size_t)p->count * p->size, cap * p->size, p->align);
            if (!d) {
                kr__fail(KR_ERR_NOMEM, "sparse storage: out of memory");
                return NULL;
            }
            p->data = d;
        }
        p->capacity = (uint32_t)cap;
    }
    uint32_t slot = p->count++;
    p->slot_of[idx] = slot;
    p->entities[slot] = e;
    if (!p->size) return p->entities + slot; /* a tag: non-NULL, not to be used */
    void *v = p->data + (size_t)slot * p->size;
    kr__zero_value(v, p->size);
    return v;
}

void kr__sparse_forget(kr_world_t *w, uint32_t idx)
{
    for (uint32_t i = 0; i < w->pool_count; i++) {
        kr__sparse_pool_t *p = w->pools[w->pool_ids[i]];
        if (kr__sparse_slot(p, idx) != KR__NONE) kr__sparse_remove(p, idx);
    }
    w->records[idx].flags &= ~(uint32_t)KR__REC_SPARSE;
}

void kr__sparse_fini(kr_world_t *w)
{
    for (uint32_t i = 0; i < w->pool_count; i++) {
        kr__sparse_pool_t *p = w->pools[w->pool_ids[i]];
        free(p->slot_of);
        free(p->entities);
        free(p->data);
        free(p);
    }
    free(w->pools);
    free(w->pool_ids);
}
