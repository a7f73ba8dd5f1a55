/* The world and entity lifecycle: id slots with generations, a free list of
 * recycled indices, creation into a table, destruction of whole subtrees. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "ecs/world_private.h"

kr__record_t *kr__stale(const kr_world_t *w, kr_entity_t e, const char *fn)
{
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: null world", fn);
        return NULL;
    }
    uint32_t idx = kr_entity_index(e);
    if (e == KR_ENTITY_INVALID || idx >= w->record_count) {
        kr__fail(KR_ERR_STALE_ENTITY, "%s: entity %u:%u is not an entity of this world", fn, idx,
                 kr_entity_generation(e));
        return NULL;
    }
    kr__record_t *r = &w->records[idx];
    if (!(r->flags & KR__REC_ALIVE) || r->generation != kr_entity_generation(e)) {
        kr__fail(KR_ERR_STALE_ENTITY, "%s: entity %u:%u was destroyed", fn, idx,
                 kr_entity_generation(e));
        return NULL;
    }
    return r;
}

bool kr__locked_error(const char *fn)
{
    kr__fail(KR_ERR_LOCKED, "%s: structural change during a chunk pass (see kairos/view.h)", fn);
    return true;
}

/* Entity slots a world starts with: a model of 10^5 simulators holds as
 * many worlds, most with a handful of entities, and the side arrays
 * (names, hierarchy) follow this capacity; large worlds double from here. */
#define KR__WORLD_FIRST_RECORDS 64

kr_status_t kr__world_reserve_records(kr_world_t *w, uint32_t need)
{
    if (need <= w->record_capacity) return KR_OK;
    uint64_t cap = w->record_capacity ? w->record_capacity : KR__WORLD_FIRST_RECORDS;
    while (cap < need) cap *= 2;
    if (cap > UINT32_MAX - 1) cap = UINT32_MAX - 1;
    if (cap < need) return kr__fail(KR_ERR_NOMEM, "world: more than 2^32-1 entity slots");
    kr__record_t *r = kr__array_grow(w->records, (size_t)w->record_count * sizeof *r, cap * sizeof *r, 64);
    if (!r) return kr__fail(KR_ERR_NOMEM, "world: out of memory for %llu entities", (unsigned long long)cap);
    w->records = r;
    w->record_capacity = (uint32_t)cap;
    return KR_OK;
}

kr_world_t *kr_world_create(const kr_world_desc_t *desc)
{
    kr_world_desc_t d = desc ? *desc : (kr_world_desc_t){0};
    if (!(d.spatial_cell_size >= 0) || !isfinite(d.spatial_cell_size)) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_world_create: spatial_cell_size: expected a positive finite number (0 for "
                 "1.0), found %g", d.spatial_cell_size);
        return NULL;
    }
    kr_world_t *w = calloc(1, sizeof *w);
    if (!w) {
        kr__fail(KR_ERR_NOMEM, "kr_world_create: out of memory");
        return NULL;
    }
    w->registry = d.registry;
    if (!w->registry) {
        w->registry = kr_registry_create();
        w->owns_registry = true;
        if (!w->registry) {
            free(w);
            return NULL;
        }
    }
    w->owner = d.owner;
    w->free_head = KR__NONE;
    kr__hmap_init(&w->table_map);
    kr__hmap_init(&w->name_map);
    if (kr__spatial_init(&w->spatial, d.spatial_cell_size, d.spatial_bounds) ||
        kr__world_reserve_records(w, d.initial_capacity ? d.initial_capacity : KR__WORLD_FIRST_RECORDS) ||
        kr__table_find_or_create(w, NULL, 0) != 0) {
        kr_world_destroy(w);
        return NULL;
    }
    return w;
}

void kr_world_destroy(kr_world_t *w)
{
    if (!w) return;
    /* Destroy roots so that every behavior gets on_destroy exactly once;
     * again for what on_destroy created meanwhile (in a freed slot, maybe
     * behind the sweep), a bounded number of times: a callback that
     * creates at every destroy would go on for ever. */
    uint32_t passes = w->entity_passes + w->chunk_passes;
    w->chunk_passes = 0;
    /* Without a behavior or a channel anywhere, destroying entity by
     * entity calls nothing out and only frees what the frees below free
     * anyway (rows, names, spatial entries, sparse values, tree links):
     * it is skipped (a million plain entities took some 80 ms). */
    bool hooks = false;
    for (uint32_t i = 0; i < w->table_count && !hooks; i++) hooks = w->tables[i]->destroy_hooks;
    for (int sweep = 0; hooks && w->live && sweep < 64; sweep++)
        for (uint32_t i = 0; i < w->record_count; i++) {
            kr__record_t *r = &w->records[i];
            if (!(r->flags & KR__REC_ALIVE)) continue;
            if ((r->flags & KR__REC_TREE) && w->tree[i].parent != KR__NONE) continue;
            kr_entity_destroy(w, kr_entity_make(i, r->generation));
        }
    for (uint32_t i = 0; i < w->table_count; i++) kr__table_free(w->tables[i]);
    free(w->tables);
    kr__hmap_fini(&w->table_map);
    kr__names_fini(w);
    kr__spatial_fini(&w->spatial);
    kr__sparse_fini(w);
    free(w->records);
    free(w->tree);
    free(w->dirty_tables);
    free(w->scratch);
    free(w->channel_notes);
    if (w->owns_registry) kr_registry_destroy(w->registry);
    if (passes) {
        /* Views still in a pass (a loop left by break) end it later, in
         * kr_view_end or kr_view_fini: what they touch then is this
         * struct, kept, emptied, until the last of them has (view.c). A
         * view that is never ended leaves only this behind. */
        *w = (kr_world_t){ .destroyed = true, .dead_passes = passes };
        return;
    }
    free(w);
}

kr_registry_t *kr_world_registry(const kr_world_t *w) { return w ? w->registry : NULL; }
void *kr_world_owner(const kr_world_t *w) { return w ? w->owner : NULL; }
void kr_world_set_owner(kr_world_t *w, void *owner) { if (w) w->owner = owner; }
size_t kr_world_entity_count(const kr_world_t *w) { return w ? w->live : 0; }

void kr_entity_prefetch(const kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (!w || idx >= w->record_count) return;
    __builtin_prefetch(&w->records[idx]);
    if (idx < w->spatial.entry_capacity) __builtin_prefetch(&w->spatial.entries[idx]);
}

bool kr_entity_alive(const kr_world_t *w, kr_entity_t e)
{
    if (!w || e == KR_ENTITY_INVALID) return false;
    uint32_t idx = kr_entity_index(e);
    if (idx >= w->record_count) return false;
    const kr__record_t *r = &w->records[idx];
    return (r->flags & KR__REC_ALIVE) && r->generation == kr_entity_generation(e);
}

/* Takes a slot from the free list or the end; the entity is not yet in a table. */
static kr_entity_t alloc_slot(kr_world_t *w)
{
    uint32_t idx;
    if (w->free_head != KR__NONE) {
        idx = w->free_head;
        w->free_head = w->records[idx].row;
    } else {
        if (w->record_count == UINT32_MAX - 1) {
            kr__fail(KR_ERR_NOMEM, "world: all 2^32-1 entity slots are in use");
            return KR_ENTITY_INVALID;
        }
        if (w->record_count == w->record_capacity && kr__world_reserve_records(w, w->record_count + 1))
            return KR_ENTITY_INVALID;
        idx = w->record_count++;
        w->records[idx].generation = 1;
    }
    kr__record_t *r = &w->records[idx];
    r->flags = KR__REC_ALIVE;
    r->table = KR__NONE;
    r->row = KR__NONE;
    w->live++;
    return kr_entity_make(idx, r->generation);
}

static void free_slot(kr_world_t *w, uint32_t idx)
{
    kr__record_t *r = &w->records[idx];
    r->flags = 0;
    r->table = KR__NONE;
    /* Generation 0 never appears in a live id, so wrap past it. */
    if (++r->generation == 0) r->generation = 1;
    r->row = w->free_head;
    w->free_head = idx;
    w->live--;
}

kr_entity_t kr_entity_create(kr_world_t *w)
{
    return kr_entity_create_desc(w, NULL);
}

/* Undoes a creation that failed before on_creation ran: its behaviors get no
 * on_destroy either. Keeps the failure's status. */
static kr_entity_t abandon(kr_world_t *w, kr_entity_t e, const char *what)
{
    kr_status_t st = kr_last_status();
    char msg[256];
    snprintf(msg, sizeof msg, "kr_entity_create: could not set %s: %s", what, kr_last_error());
    /* No on_creation ran: every behavior is pending. */
    kr_component_t small[16];
    kr__creating_t outer = w->creating;
    w->creating.entity = e;
    w->creating.pending = kr__behavior_list(w->tables[w->records[kr_entity_index(e)].table], small,
                                            &w->creating.pending_count);
    kr_entity_destroy(w, e);
    if (w->creating.pending != small) free((void *)w->creating.pending);
    w->creating = outer;
    kr__fail(st, "%s", msg);
    return KR_ENTITY_INVALID;
}

kr_entity_t kr_entity_create_desc(kr_world_t *w, const kr_entity_desc_t *desc)
{
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_entity_create: null world");
        return KR_ENTITY_INVALID;
    }
    if (kr__structure_locked(w, "kr_entity_create")) return KR_ENTITY_INVALID;
    uint32_t table = 0;
    if (desc && desc->parent && !kr__live(w, desc->parent, "kr_entity_create (parent)"))
        return KR_ENTITY_INVALID;
    if (desc && desc->component_count) {
        if (!desc->components) {
            kr__fail(KR_ERR_INVALID_ARG, "kr_entity_create: component_count without components");
            return KR_ENTITY_INVALID;
        }
        /* Walk the cached add edges from the empty table: the set, not the
         * order of the list, decides the table, and no sorting or hashing
         * happens once the edges exist. */
        for (size_t i = 0; i < desc->component_count; i++) {
            kr_component_t c = desc->components[i];
            if (!kr__registry_entry(w->registry, c)) {
                kr__fail(KR_ERR_UNREGISTERED, "kr_entity_create: component %u is not registered", c);
                return KR_ENTITY_INVALID;
            }
            if (kr__is_sparse(w, c)) {
                /* Sparse components are added once the entity exists. */
                for (size_t j = 0; j < i; j++)
                    if (desc->components[j] == c) {
                        kr__fail(KR_ERR_EXISTS, "kr_entity_create: component %u listed twice", c);
                        return KR_ENTITY_INVALID;
                    }
                continue;
            }
            if (kr__column_index(w->tables[table], c) >= 0) {
                kr__fail(KR_ERR_EXISTS, "kr_entity_create: component %u listed twice", c);
                return KR_ENTITY_INVALID;
            }
            table = kr__table_with(w, table, c);
            if (table == KR__NONE) return KR_ENTITY_INVALID;
        }
    }
    kr_entity_t e = alloc_slot(w);
    if (!e) return KR_ENTITY_INVALID;
    kr__table_t *t = w->tables[table];
    uint32_t row = kr__table_append(w, t, e);
    if (row == KR__NONE) {
        free_slot(w, kr_entity_index(e));
        return KR_ENTITY_INVALID;
    }
    kr__record_t *r = &w->records[kr_entity_index(e)];
    r->table = table;
    r->row = row;
    if (!desc) return e;
    for (size_t i = 0; i < desc->component_count; i++) {
        kr_component_t c = desc->components[i];
        if (!kr__is_sparse(w, c)) continue;
        kr__sparse_pool_t *p = kr__pool(w, c, true);
        if (!p || !kr__sparse_add(w, p, e)) return abandon(w, e, "a sparse component");
        w->records[kr_entity_index(e)].flags |= KR__REC_SPARSE;
    }
    if (desc->name && *desc->name && kr_entity_set_name(w, e, desc->name)) return abandon(w, e, "the name");
    /* on_creation for each behavior of the new entity, in component-id
     * order. The list is taken first: a callback may add or remove
     * behaviors, and those that are gone by their turn are skipped. */
    kr_component_t small[16];
    uint32_t nb;
    kr_component_t *behaviors = kr__behavior_list(t, small, &nb);
    if (!behaviors) return abandon(w, e, "its behaviors (out of memory)");
    kr__creating_t outer = w->creating;
    for (uint32_t b = 0; b < nb && kr_entity_alive(w, e); b++) {
        /* Behaviors later in the list have not had on_creation yet: should
         * this callback destroy the entity, they get no on_destroy. */
        w->creating = (kr__creating_t){ e, behaviors + b + 1, nb - b - 1 };
        kr__behavior_fire_one(w, e, behaviors[b], KR__CB_CREATION, 0);
    }
    w->creating = outer;
    if (behaviors != small) free(behaviors);
    if (!kr_entity_alive(w, e)) {
        kr__fail(KR_ERR_STATE, "kr_entity_create: an on_creation callback destroyed the new entity");
        return KR_ENTITY_INVALID;
    }
    if (desc->parent && kr_entity_set_parent(w, e, desc->parent)) {
        kr_status_t st = kr_last_status();
        kr_entity_destroy(w, e);
        kr__fail(st, "kr_entity_create: could not attach to the parent");
        return KR_ENTITY_INVALID;
    }
    return e;
}

/* Destroys one entity whose children are already gone. */
static void destroy_one(kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    kr__record_t *r = &w->records[idx];
    r->flags |= KR__REC_DYING;
    /* Most entities have no behaviors and are no channel: the table says
     * so without a call (both calls would do nothing then). */
    if (w->tables[r->table]->behavior_count) {
        kr__behaviors_fire(w, e, KR__CB_DESTROY, 0);
        r = &w->records[idx];
    }
    if (kr__column_index(w->tables[r->table], KR_CHANNEL) >= 0) {
        kr__channel_forget(w, idx);
        r = &w->records[idx];
    }
    if (r->flags & KR__REC_TREE) {
        uint32_t parent = w->tree[idx].parent;
        kr__tree_unlink(w, idx);
        if (parent != KR__NONE && (w->records[parent].flags & KR__REC_ALIVE) &&
            !(w->records[parent].flags & KR__REC_DYING))
            kr__behaviors_fire(w, kr__id_of(w, parent), KR__CB_EXITED, e);
        r = &w->records[idx];
    }
    if (r->flags & KR__REC_NAMED) kr__name_release(w, idx);
    if (r->flags & KR__REC_SPATIAL) kr__spatial_forget(w, idx);
    if (r->flags & KR__REC_SPARSE) kr__sparse_forget(w, idx);
    kr__table_remove_row(w, r->table, r->row);
    free_slot(w, idx);
}

/* kr_entity_destroy of a live entity in an unlocked world: an entity
 * pass, callbacks to fire, a subtree, a name, a spatial entry, sparse
 * components. */
__attribute__((noinline)) static kr_status_t destroy_live(kr_world_t *w, kr_entity_t e, const kr__record_t *r)
{
    if (r->flags & KR__REC_DYING) return KR_OK; /* already on its way out */
    if (!(r->flags & KR__REC_TREE) || w->tree[kr_entity_index(e)].first_child == KR__NONE) {
        destroy_one(w, e);
        return KR_OK;
    }
    /* Post-order walk without recursion: descend to the deepest last child,
     * destroy it, repeat. Callbacks may change the tree, so every step
     * re-reads it from the root of the walk. */
    uint32_t root = kr_entity_index(e);
    w->records[root].flags |= KR__REC_DYING;
    uint32_t cur = root;
    for (;;) {
        if (!kr_entity_alive(w, e)) return KR_OK;
        if (!(w->records[cur].flags & KR__REC_ALIVE)) cur = root;
        while ((w->records[cur].flags & KR__REC_TREE) && w->tree[cur].last_child != KR__NONE) {
            uint32_t next = w->tree[cur].last_child;
            if (w->records[next].flags & KR__REC_DYING) {
                /* Another destroy up the stack owns it: cut it loose, it finishes there. */
                kr__tree_unlink(w, next);
                continue;
            }
            w->records[next].flags |= KR__REC_DYING;
            cur = next;
        }
        uint32_t up = cur == root ? KR__NONE : w->tree[cur].parent;
        destroy_one(w, kr__id_of(w, cur));
        if (cur == root) return KR_OK;
        cur = up;
    }
}

/* kr_entity_destroy with every check: a stale handle, a locked world. */
__attribute__((noinline)) static kr_status_t destroy_checked(kr_world_t *w, kr_entity_t e)
{
    kr__record_t *r = kr__live(w, e, "kr_entity_destroy");
    if (!r) return kr_last_status();
    if (kr__structure_locked(w, "kr_entity_destroy")) return KR_ERR_LOCKED;
    return destroy_live(w, e, r);
}

/* The common destroy: an entity with nothing but table components (no
 * behaviors, channel, tree, name, spatial entry or sparse component),
 * outside any pass. It touches what the floor in bench/bench_ecs.c
 * touches (record, row, last row, moved record) in one function, with no
 * call for the usual column sizes: calls and their saved registers were
 * half of a destroy's instructions and kept the next destroy's cache
 * misses from overlapping this one's (bench/README.md, "Fast paths in
 * one function"). */
__attribute__((noinline)) static kr_status_t destroy_plain(kr_world_t *w, kr__record_t *r, uint32_t idx)
{
    kr__table_swap_remove(w, w->tables[r->table], r->row);
    free_slot(w, idx);
    return KR_OK;
}

/* Only tests, then a tail call to one of the paths: the tests need few
 * registers, so no path pays for saving them twice (a world whose
 * entities mostly take the general path, e.g. in the spatial hash,
 * measured 40 % slower when these tests shared destroy_plain's frame). */
kr_status_t kr_entity_destroy(kr_world_t *w, kr_entity_t e)
{
    kr__record_t *r = kr__record_to_change(w, e);
    if (!r) return destroy_checked(w, e);
    /* (flags other than these: a tree, a name, a spatial entry, sparse
     * components, a destroy under way) */
    if ((r->flags & ~(uint32_t)KR__REC_STARTED) != KR__REC_ALIVE || w->tables[r->table]->destroy_hooks)
        return destroy_live(w, e, r);
    return destroy_plain(w, r, kr_entity_index(e));
}

/* Live entities that have at least one behavior, in storage order; when
 * only_unstarted, those not yet started. The caller frees *out. */
static kr_status_t behavior_snapshot(kr_world_t *w, bool only_unstarted, kr_entity_t **out, size_t *count,
                                     const char *fn)
{
    size_t n = 0;
    kr_entity_t *ids = malloc((w->live ? w->live : 1) * sizeof *ids);
    if (!ids) return kr__fail(KR_ERR_NOMEM, "%s: out of memory", fn);
    for (uint32_t t = 0; t < w->table_count; t++) {
        kr__table_t *tab = w->tables[t];
        if (!tab->behavior_count) continue;
        for (uint32_t row = 0; row < tab->count; row++) {
            kr_entity_t e = tab->entities[row];
            if (!e) continue;
            if (only_unstarted && (w->records[kr_entity_index(e)].flags & KR__REC_STARTED)) continue;
            ids[n++] = e;
        }
    }
    *out = ids;
    *count = n;
    return KR_OK;
}

kr_status_t kr_world_start(kr_world_t *w)
{
    if (!w) return kr__fail(KR_ERR_INVALID_ARG, "kr_world_start: null world");
    /* One snapshot of the entities not yet started serves both rounds, so
     * every entity gets on_awake before on_start even if callbacks create
     * or destroy entities (those created now wait for the next call). */
    size_t n = 0;
    kr_entity_t *ids = NULL;
    kr_status_t st = behavior_snapshot(w, true, &ids, &n, "kr_world_start");
    if (st) return st;
    for (size_t i = 0; i < n; i++)
        if (kr_entity_alive(w, ids[i])) kr__behaviors_fire(w, ids[i], KR__CB_AWAKE, 0);
    for (size_t i = 0; i < n; i++) {
        if (!kr_entity_alive(w, ids[i])) continue;
        w->records[kr_entity_index(ids[i])].flags |= KR__REC_STARTED;
        kr__behaviors_fire(w, ids[i], KR__CB_START, 0);
    }
    free(ids);
    return KR_OK;
}

kr_status_t kr_world_update(kr_world_t *w)
{
    if (!w) return kr__fail(KR_ERR_INVALID_ARG, "kr_world_update: null world");
    /* (from an on_update it would update every entity twice in one step) */
    if (w->updating)
        return kr__fail(KR_ERR_STATE, "kr_world_update: called from a callback of an update under way");
    /* Both rounds walk one snapshot: entities created during the step join
     * at the next step, entities destroyed during it are skipped. */
    size_t n = 0;
    kr_entity_t *ids = NULL;
    kr_status_t st = behavior_snapshot(w, false, &ids, &n, "kr_world_update");
    if (st) return st;
    w->updating = true;
    for (size_t i = 0; i < n; i++)
        if (kr_entity_alive(w, ids[i])) kr__behaviors_fire(w, ids[i], KR__CB_UPDATE, 0);
    for (size_t i = 0; i < n; i++)
        if (kr_entity_alive(w, ids[i])) kr__behaviors_fire(w, ids[i], KR__CB_LATE_UPDATE, 0);
    w->updating = false;
    free(ids);
    return KR_OK;
}
