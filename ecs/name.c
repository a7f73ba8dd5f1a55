/* Entity names: a side array of name records (by entity index, touched only
 * for named entities) and a hash map from the name's hash to the oldest
 * entity holding it; entities sharing a name form a circular list, oldest
 * first. */
#include <stdlib.h>
#include <string.h>

#include "ecs/world_private.h"

static uint64_t hash_name(const char *s) { return kr__hash_bytes(s, strlen(s), 0x6e616d65); }

static kr_status_t names_reserve(kr_world_t *w)
{
    if (w->names_capacity >= w->record_capacity) return KR_OK;
    kr__name_rec_t *n = realloc(w->names, (size_t)w->record_capacity * sizeof *n);
    if (!n) return kr__fail(KR_ERR_NOMEM, "names: out of memory");
    w->names = n;
    w->names_capacity = w->record_capacity;
    return KR_OK;
}

/* The head (oldest holder) of the list for a name, or KR__NONE. */
static uint32_t head_of(const kr_world_t *w, const char *name, uint64_t h)
{
    uint32_t cursor = 0, idx;
    while ((idx = kr__hmap_next(&w->name_map, h, &cursor)) != KR__HMAP_EMPTY)
        if (strcmp(w->names[idx].str, name) == 0) return idx;
    return KR__NONE;
}

void kr__name_release(kr_world_t *w, uint32_t idx)
{
    kr__name_rec_t *n = &w->names[idx];
    if (n->next == idx) {
        kr__hmap_remove(&w->name_map, n->hash, idx);
    } else {
        w->names[n->prev].next = n->next;
        w->names[n->next].prev = n->prev;
        /* If idx was the head (oldest holder), the next one takes its place. */
        kr__hmap_replace(&w->name_map, n->hash, idx, n->next);
    }
    free(n->str);
    n->str = NULL;
    w->records[idx].flags &= ~(uint32_t)KR__REC_NAMED;
}

void kr__names_fini(kr_world_t *w)
{
    for (uint32_t i = 0; i < w->names_capacity && i < w->record_count; i++)
        if (w->records[i].flags & KR__REC_NAMED) free(w->names[i].str);
    free(w->names);
    kr__hmap_fini(&w->name_map);
}

kr_status_t kr_entity_set_name(kr_world_t *w, kr_entity_t e, const char *name)
{
    kr__record_t *r = kr__live(w, e, "kr_entity_set_name");
    if (!r) return kr_last_status();
    uint32_t idx = kr_entity_index(e);
    if (name && *name && (r->flags & KR__REC_NAMED) && strcmp(w->names[idx].str, name) == 0) return KR_OK;
    char *copy = NULL;
    if (name && *name) {
        if (names_reserve(w)) return kr_last_status();
        copy = strdup(name);
        if (!copy) return kr__fail(KR_ERR_NOMEM, "kr_entity_set_name: out of memory");
    }
    if (r->flags & KR__REC_NAMED) kr__name_release(w, idx);
    if (!copy) return KR_OK;
    kr__name_rec_t *n = &w->names[idx];
    n->str = copy;
    n->hash = hash_name(copy);
    uint32_t head = head_of(w, copy, n->hash);
    if (head == KR__NONE) {
        if (kr__hmap_insert(&w->name_map, n->hash, idx)) {
            free(copy);
            n->str = NULL;
            return kr_last_status();
        }
        n->prev = n->next = idx;
    } else {
        /* Holders form a circular list from the oldest (the head), so the
         * newest is head.prev and appending is O(1). */
        uint32_t tail = w->names[head].prev;
        n->prev = tail;
        n->next = head;
        w->names[tail].next = idx;
        w->names[head].prev = idx;
    }
    r->flags |= KR__REC_NAMED;
    return KR_OK;
}

const char *kr_entity_name(const kr_world_t *w, kr_entity_t e)
{
    kr__record_t *r = kr__live(w, e, "kr_entity_name");
    return r && (r->flags & KR__REC_NAMED) ? w->names[kr_entity_index(e)].str : NULL;
}

kr_entity_t kr_entity_find(const kr_world_t *w, const char *name)
{
    if (!w || !name) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_entity_find: null %s", w ? "name" : "world");
        return KR_ENTITY_INVALID;
    }
    if (!w->names) return KR_ENTITY_INVALID;
    uint32_t idx = head_of(w, name, hash_name(name));
    return kr__id_of(w, idx);
}
