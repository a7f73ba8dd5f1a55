/* The entity tree. Links live in a side array (by entity index) that is
 * touched only for entities flagged KR__REC_TREE, so flat worlds pay nothing. */
#include <stdlib.h>
#include <string.h>

#include "ecs/world_private.h"

kr_status_t kr__tree_reserve(kr_world_t *w)
{
    if (w->tree_capacity >= w->record_capacity) return KR_OK;
    kr__tree_t *t = realloc(w->tree, (size_t)w->record_capacity * sizeof *t);
    if (!t) return kr__fail(KR_ERR_NOMEM, "hierarchy: out of memory");
    w->tree = t;
    w->tree_capacity = w->record_capacity;
    return KR_OK;
}

static void tree_touch(kr_world_t *w, uint32_t idx)
{
    kr__record_t *r = &w->records[idx];
    if (r->flags & KR__REC_TREE) return;
    r->flags |= KR__REC_TREE;
    w->tree[idx] = (kr__tree_t){ KR__NONE, KR__NONE, KR__NONE, KR__NONE, KR__NONE, 0 };
}

void kr__tree_unlink(kr_world_t *w, uint32_t idx)
{
    if (!(w->records[idx].flags & KR__REC_TREE)) return;
    kr__tree_t *n = &w->tree[idx];
    uint32_t p = n->parent;
    if (p == KR__NONE) return;
    kr__tree_t *pt = &w->tree[p];
    if (n->prev != KR__NONE) w->tree[n->prev].next = n->next; else pt->first_child = n->next;
    if (n->next != KR__NONE) w->tree[n->next].prev = n->prev; else pt->last_child = n->prev;
    pt->child_count--;
    n->parent = n->prev = n->next = KR__NONE;
}

kr_status_t kr__tree_link(kr_world_t *w, uint32_t child, uint32_t parent, uint32_t before)
{
    if (kr__tree_reserve(w)) return kr_last_status();
    tree_touch(w, child);
    tree_touch(w, parent);
    kr__tree_t *c = &w->tree[child], *p = &w->tree[parent];
    c->parent = parent;
    if (before == KR__NONE) {
        c->prev = p->last_child;
        c->next = KR__NONE;
        if (p->last_child != KR__NONE) w->tree[p->last_child].next = child; else p->first_child = child;
        p->last_child = child;
    } else {
        kr__tree_t *b = &w->tree[before];
        c->next = before;
        c->prev = b->prev;
        if (b->prev != KR__NONE) w->tree[b->prev].next = child; else p->first_child = child;
        b->prev = child;
    }
    p->child_count++;
    return KR_OK;
}

static uint32_t parent_index(const kr_world_t *w, uint32_t idx)
{
    return (w->records[idx].flags & KR__REC_TREE) ? w->tree[idx].parent : KR__NONE;
}

static bool would_cycle(const kr_world_t *w, uint32_t ci, uint32_t pi)
{
    if (pi == ci) return true;
    /* A leaf is nobody's ancestor: creating under a parent needs no walk. */
    if (!(w->records[ci].flags & KR__REC_TREE) || w->tree[ci].first_child == KR__NONE) return false;
    for (uint32_t a = pi; a != KR__NONE; a = parent_index(w, a))
        if (a == ci) return true;
    return false;
}

static kr_status_t reparent(kr_world_t *w, kr_entity_t child, kr_entity_t parent, kr_entity_t sibling,
                            const char *fn)
{
    if (!kr__live(w, child, fn)) return kr_last_status();
    if (parent && !kr__live(w, parent, fn)) return kr_last_status();
    uint32_t ci = kr_entity_index(child);
    uint32_t pi = parent ? kr_entity_index(parent) : KR__NONE;
    uint32_t si = KR__NONE;
    if (sibling) {
        if (!kr__live(w, sibling, fn)) return kr_last_status();
        si = kr_entity_index(sibling);
        if (parent_index(w, si) != pi || pi == KR__NONE)
            return pi == KR__NONE
                       ? kr__fail(KR_ERR_INVALID_ARG, "%s: expected a parent for the sibling entity %u:%u, found none",
                                  fn, si, kr_entity_generation(sibling))
                       : kr__fail(KR_ERR_INVALID_ARG, "%s: entity %u:%u is not a child of entity %u:%u", fn, si,
                                  kr_entity_generation(sibling), pi, kr_entity_generation(parent));
        if (si == ci) return KR_OK;
    }
    if (pi != KR__NONE && (w->records[pi].flags & KR__REC_DYING))
        return kr__fail(KR_ERR_STALE_ENTITY, "%s: parent %u:%u is being destroyed", fn, pi,
                        kr_entity_generation(parent));
    if (w->records[ci].flags & KR__REC_DYING)
        return kr__fail(KR_ERR_STALE_ENTITY, "%s: entity %u:%u is being destroyed", fn, ci,
                        kr_entity_generation(child));
    if (would_cycle(w, ci, pi))
        return kr__fail(KR_ERR_CYCLE, "%s: entity %u:%u cannot become a descendant of itself", fn, ci,
                        kr_entity_generation(child));
    uint32_t old = parent_index(w, ci);
    if (kr__tree_reserve(w)) return kr_last_status();
    if (old == KR__NONE && pi == KR__NONE) return KR_OK;
    if (old == pi) {
        /* Reordering among the same parent's children: no callbacks. */
        kr__tree_unlink(w, ci);
        return kr__tree_link(w, ci, pi, si);
    }

    kr_entity_t old_parent = kr__id_of(w, old);
    if (old != KR__NONE) kr__behaviors_fire(w, child, KR__CB_EXITING, parent);
    if (pi != KR__NONE) kr__behaviors_fire(w, child, KR__CB_ENTERING, parent);
    /* Callbacks may have destroyed any of the three; re-check before linking. */
    if (!kr_entity_alive(w, child) || (parent && !kr_entity_alive(w, parent)) ||
        (sibling && !kr_entity_alive(w, sibling)))
        return kr__fail(KR_ERR_STALE_ENTITY, "%s: an entity was destroyed by a callback", fn);
    if (parent_index(w, ci) != old || (pi != KR__NONE && (w->records[pi].flags & KR__REC_DYING)) ||
        (si != KR__NONE && parent_index(w, si) != pi) || would_cycle(w, ci, pi))
        return kr__fail(KR_ERR_STATE, "%s: a callback changed the tree; nothing was moved", fn);
    kr__tree_unlink(w, ci);
    if (pi != KR__NONE && kr__tree_link(w, ci, pi, si)) return kr_last_status();
    if (old != KR__NONE && kr_entity_alive(w, old_parent))
        kr__behaviors_fire(w, old_parent, KR__CB_EXITED, child);
    if (pi != KR__NONE) kr__behaviors_fire(w, parent, KR__CB_ENTERED, child);
    return KR_OK;
}

kr_status_t kr_entity_set_parent(kr_world_t *w, kr_entity_t child, kr_entity_t parent)
{
    return reparent(w, child, parent, KR_ENTITY_INVALID, "kr_entity_set_parent");
}

kr_status_t kr_entity_insert_before(kr_world_t *w, kr_entity_t child, kr_entity_t parent,
                                    kr_entity_t sibling)
{
    if (!sibling) return kr__fail(KR_ERR_INVALID_ARG, "kr_entity_insert_before: sibling is required");
    return reparent(w, child, parent, sibling, "kr_entity_insert_before");
}

static kr_entity_t link_of(const kr_world_t *w, kr_entity_t e, size_t field, const char *fn)
{
    if (!kr__live(w, e, fn)) return KR_ENTITY_INVALID;
    return kr__id_of(w, kr__tree_field(w, kr_entity_index(e), field));
}

kr_entity_t kr_entity_parent(const kr_world_t *w, kr_entity_t e)
{ return link_of(w, e, offsetof(kr__tree_t, parent), "kr_entity_parent"); }
kr_entity_t kr_entity_first_child(const kr_world_t *w, kr_entity_t e)
{ return link_of(w, e, offsetof(kr__tree_t, first_child), "kr_entity_first_child"); }
kr_entity_t kr_entity_last_child(const kr_world_t *w, kr_entity_t e)
{ return link_of(w, e, offsetof(kr__tree_t, last_child), "kr_entity_last_child"); }
kr_entity_t kr_entity_next_sibling(const kr_world_t *w, kr_entity_t e)
{ return link_of(w, e, offsetof(kr__tree_t, next), "kr_entity_next_sibling"); }
kr_entity_t kr_entity_prev_sibling(const kr_world_t *w, kr_entity_t e)
{ return link_of(w, e, offsetof(kr__tree_t, prev), "kr_entity_prev_sibling"); }

size_t kr_entity_child_count(const kr_world_t *w, kr_entity_t e)
{
    if (!kr__live(w, e, "kr_entity_child_count")) return 0;
    uint32_t idx = kr_entity_index(e);
    return (w->records[idx].flags & KR__REC_TREE) ? w->tree[idx].child_count : 0;
}
