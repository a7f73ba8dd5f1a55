/* Internal layout of a world, shared by the files of ecs/. Not public API. */
#ifndef KAIROS_ECS_WORLD_PRIVATE_H
#define KAIROS_ECS_WORLD_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
/* The ecs layer's own public headers, never kairos/kairos.h: ecs/ knows
 * nothing of simulators, time or kinds (tests/layering checks it). */
#include "kairos/behavior.h"
#include "kairos/buffer.h"
#include "kairos/channel.h"
#include "kairos/component.h"
#include "kairos/entity.h"
#include "kairos/hierarchy.h"
#include "kairos/name.h"
#include "kairos/pack.h"
#include "kairos/registry.h"
#include "kairos/serializer.h"
#include "kairos/spatial.h"
#include "kairos/status.h"
#include "kairos/view.h"
#include "kairos/world.h"
#include "base/error.h"
#include "base/hmap.h"

#define KR__NONE UINT32_MAX   /* "no index" for tables, rows and tree links */

/* Record flags: side structures are touched only when their flag is set, so
 * the hot record stays 16 bytes. */
enum {
    KR__REC_ALIVE   = 1u << 0,
    KR__REC_TREE    = 1u << 1,  /* has a parent or children */
    KR__REC_NAMED   = 1u << 2,
    KR__REC_SPATIAL = 1u << 3,
    KR__REC_DYING   = 1u << 4,  /* destroy in progress (callbacks running) */
    KR__REC_STARTED = 1u << 5,  /* behaviors got awake/start */
    KR__REC_SPARSE  = 1u << 6   /* may hold sparse components */
};

typedef struct kr__record {
    uint32_t generation;
    uint32_t table;
    uint32_t row;
    uint32_t flags;
} kr__record_t;

/* Tree links by entity index (KR__NONE = none). */
typedef struct kr__tree {
    uint32_t parent, first_child, last_child, prev, next, child_count;
} kr__tree_t;

typedef struct kr__name_rec {
    char *str;
    uint64_t hash;
    uint32_t prev, next;   /* other entities with the same name, oldest first */
} kr__name_rec_t;

typedef struct kr__column {
    uint8_t *data;
    uint32_t size;
    uint32_t align;
} kr__column_t;

typedef struct kr__table {
    kr_component_t *types;     /* sorted ascending */
    kr__column_t *columns;      /* parallel to types */
    uint32_t type_count;
    uint32_t count, capacity;
    kr_entity_t *entities;     /* KR_ENTITY_INVALID marks a hole (see view.h) */
    uint32_t *holes;           /* rows left during a pass, compacted after */
    uint32_t hole_count, hole_capacity;
    int16_t *column_of;        /* component id -> column, -1 when absent */
    uint32_t column_of_size;
    uint32_t *add_edge;        /* component id -> table, KR__NONE unknown */
    uint32_t *remove_edge;
    uint32_t edge_size;
    uint32_t *behavior_columns;/* columns holding behaviors */
    uint32_t behavior_count;
    bool destroy_hooks;        /* behaviors or a channel: destroy calls out */
    uint64_t hash;
    bool dirty;                /* on the world's dirty list */
    bool sweep;                /* holes not all listed: compaction scans every row */
} kr__table_t;

/* A pool of one sparse component (sparse.c). */
typedef struct kr__sparse_pool {
    uint32_t *slot_of;           /* entity index -> dense slot, KR__NONE if absent */
    uint32_t slot_capacity;
    kr_entity_t *entities;       /* dense: owner of each slot */
    uint8_t *data;               /* dense: values */
    uint32_t count, capacity, size, align;
} kr__sparse_pool_t;

static inline uint32_t kr__sparse_slot(const kr__sparse_pool_t *p, uint32_t idx)
{
    return idx < p->slot_capacity ? p->slot_of[idx] : KR__NONE;
}

static inline void *kr__sparse_value(const kr__sparse_pool_t *p, uint32_t slot)
{
    return p->size ? (void *)(p->data + (size_t)slot * p->size) : (void *)(p->entities + slot);
}

/* Spatial hash state; the reverse index is indexed by entity index. */
typedef struct kr__spatial_entry {
    double x, y;
    int32_t cx, cy;  /* the cell's coordinates, so a move compares integers */
    uint32_t cell;   /* grid index, or grid_cells + slot in the cell table (kr__cell_at) */
    uint32_t slot;   /* position in the cell's member array */
} kr__spatial_entry_t;

/* One cache line: most cells hold a few entities, which then live inline,
 * so finding a cell and its members is one memory access. */
#define KR__CELL_INLINE 5
typedef struct kr__spatial_cell_rec {
    int32_t cx, cy;
    uint32_t count;
    uint32_t capacity;             /* KR__CELL_INLINE: members inline; 0: a table slot never used */
    kr_entity_t *heap;             /* members when more than KR__CELL_INLINE */
    kr_entity_t inline_members[KR__CELL_INLINE];
} kr__spatial_cell_rec_t;

static inline kr_entity_t *kr__cell_members(const kr__spatial_cell_rec_t *c)
{
    return c->heap ? c->heap : (kr_entity_t *)c->inline_members;
}

typedef struct kr__spatial_state {
    double cell_size, inv_cell_size;
    bool pow2_size;                  /* x * inv_cell_size == x / cell_size exactly */
    /* Optional dense grid: cells [gx0, gx0 + gw) x [gy0, gy0 + gh) are the
     * grid_cells records of `grid`, found by arithmetic. */
    int32_t gx0, gy0;
    uint32_t gw, gh, grid_cells;
    kr__spatial_cell_rec_t *grid;
    /* Cells off the grid: an open-addressed table keyed by (cx, cy), linear
     * probing, the cell record in the slot itself (one access finds cell and
     * members). An emptied cell keeps its slot (count 0) so that nothing is
     * ever deleted and probing needs no tombstones; when used slots reach
     * 3/4 of the table, it is rebuilt from the occupied cells alone. */
    kr__spatial_cell_rec_t *table;
    uint32_t table_capacity;         /* a power of two, or 0 before the first cell */
    uint32_t table_shift;            /* 64 - log2(table_capacity): hash to slot */
    uint32_t table_used;             /* slots holding a cell, occupied or emptied */
    kr__spatial_entry_t *entries;     /* by entity index */
    /* By entity index: the entity's generation while it is in the hash, 0
     * otherwise (generations start at 1). A move checks the handle here, a
     * small array, instead of reading the entity's record. */
    uint32_t *gens;
    uint32_t entry_capacity;          /* of entries and gens */
    uint32_t live_cells;
    size_t members;
} kr__spatial_state_t;

/* The record of cell index ci (a kr__spatial_entry_t's cell). */
static inline kr__spatial_cell_rec_t *kr__cell_at(const kr__spatial_state_t *s, uint32_t ci)
{
    return ci < s->grid_cells ? &s->grid[ci] : &s->table[ci - s->grid_cells];
}

/* A behavior whose on_destroy is running, and the ones it runs inside
 * (a chain on the C stack, innermost first): a remove of that behavior,
 * or a destroy of its entity, from inside the callback does not call it
 * again (its own remove called it without end, and overflowed the stack). */
typedef struct kr__removal {
    kr_entity_t entity;
    kr_component_t component;
    const struct kr__removal *outer;
} kr__removal_t;

/* An entity whose behaviors are getting on_creation, and those still
 * waiting: if a callback destroys the entity, the waiting ones get no
 * on_destroy. Saved and restored around nested creations. */
typedef struct kr__creating {
    kr_entity_t entity;
    const kr_component_t *pending;
    uint32_t pending_count;
} kr__creating_t;

struct kr_world {
    kr_registry_t *registry;
    bool owns_registry;
    void *owner;

    kr__record_t *records;
    uint32_t record_count, record_capacity;
    uint32_t free_head;              /* free list through record.row */
    size_t live;

    kr__tree_t *tree;                 /* lazily sized to record_capacity */
    uint32_t tree_capacity;

    kr__name_rec_t *names;            /* lazily sized to record_capacity */
    uint32_t names_capacity;
    kr__hmap_t name_map;              /* name hash -> oldest entity index */

    kr__table_t **tables;             /* tables[0] is the empty table */
    uint32_t table_count, table_capacity;
    kr__hmap_t table_map;             /* type-set hash -> table id */

    uint32_t *dirty_tables;
    uint32_t dirty_count, dirty_capacity;
    uint32_t entity_passes;          /* active entity passes */
    uint32_t chunk_passes;           /* active chunk passes: structure locked */
    /* Destroyed with views in a pass: the struct stays, emptied, until the
     * last of those passes ends (kr_view_end frees it); dead_passes counts
     * them. */
    bool destroyed;
    uint32_t dead_passes;

    kr__spatial_state_t spatial;
    uint32_t spatial_scans;          /* kr_spatial_scan under way (nested in visits) */

    kr__sparse_pool_t **pools;        /* by component id; NULL until first use */
    uint32_t pool_slots;
    kr_component_t *pool_ids;        /* components that have a pool */
    uint32_t pool_count;

    uint64_t *scratch;               /* pack: entity index -> (epoch << 32) | local index */
    uint32_t scratch_capacity;
    uint32_t scratch_epoch;
    const kr__removal_t *removing;    /* on_destroy calls under way (behavior.c) */
    kr__creating_t creating;          /* kr_entity_create_desc: on_creation under way */

    /* Channels (channel.c): ready notifications waiting to fire, as
     * channel ids, fired in order when the outermost channel call ends. */
    kr_entity_t *channel_notes;
    uint32_t note_head, note_count, note_capacity;
    uint32_t channel_depth;          /* channel calls under way */
    bool updating;                   /* kr_world_update under way: not again from its callbacks */
};

/* Registry internals used by the world. */
typedef struct kr__registry_entry {
    kr_component_info_t info;
    char *name;
    kr_field_t *fields;
} kr__registry_entry_t;

struct kr_registry {
    kr__registry_entry_t *entries;   /* entries[0] unused: id 0 is invalid */
    uint32_t count, capacity;
    kr__hmap_t by_name;              /* name hash -> id */
};

static inline const kr__registry_entry_t *kr__registry_entry(const kr_registry_t *reg, kr_component_t id)
{
    return reg && id > 0 && id < reg->count ? &reg->entries[id] : NULL;
}

/* Returns the record of a live entity, or NULL with kr_last_error set. */
__attribute__((cold)) kr__record_t *kr__stale(const kr_world_t *w, kr_entity_t e, const char *fn);
static inline kr__record_t *kr__live(const kr_world_t *w, kr_entity_t e, const char *fn)
{
    uint32_t idx = kr_entity_index(e);
    if (w && idx < w->record_count) {
        kr__record_t *r = &w->records[idx];
        if ((r->flags & KR__REC_ALIVE) && r->generation == kr_entity_generation(e) && e) return r;
    }
    /* NULL here, not kr__stale's answer (NULL too, when its checks fail as
     * these did): the compiler then knows that no value of the caller
     * outlives the call. */
    kr__stale(w, e, fn);
    return NULL;
}

/* The record of e for a structural change's fast path (kr_entity_destroy,
 * kr_component_add, _remove): e is live and no pass of either kind is
 * active. NULL sends the caller to its checked path, which says what is
 * wrong; no error is set here. */
static inline kr__record_t *kr__record_to_change(const kr_world_t *w, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (!w || idx >= w->record_count || (w->chunk_passes | w->entity_passes)) return NULL;
    kr__record_t *r = &w->records[idx];
    if (!(r->flags & KR__REC_ALIVE) || r->generation != kr_entity_generation(e) || !e) return NULL;
    return r;
}

static inline kr__table_t *kr__table(const kr_world_t *w, uint32_t id) { return w->tables[id]; }

static inline void *kr__column_ptr(const kr__table_t *t, uint32_t col, uint32_t row)
{
    const kr__column_t *c = &t->columns[col];
    return c->data ? c->data + (size_t)row * c->size : (void *)t->entities;
}

/* Copies one component value; small fixed sizes avoid a libc call. */
static inline void kr__copy_value(void *restrict dst, const void *restrict src, uint32_t size)
{
    switch (size) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, size); break;
    }
}

static inline void kr__zero_value(void *dst, uint32_t size)
{
    switch (size) {
    case 4: memset(dst, 0, 4); break;
    case 8: memset(dst, 0, 8); break;
    case 16: memset(dst, 0, 16); break;
    default: memset(dst, 0, size); break;
    }
}

static inline int kr__column_index(const kr__table_t *t, kr_component_t c)
{
    return c < t->column_of_size ? t->column_of[c] : -1;
}

/* Removes `row` of t outside any entity pass: the last row fills the gap
 * and the moved entity's record follows it. Tags (size 0) have no data.
 * Inline: destroy's common path (world.c) runs it without a call. */
static inline void kr__table_swap_remove(kr_world_t *w, kr__table_t *t, uint32_t row)
{
    uint32_t last = --t->count;
    if (row == last) return;
    kr_entity_t moved = t->entities[last];
    t->entities[row] = moved;
    const kr__column_t *c = t->columns;
    for (uint32_t j = 0, n = t->type_count; j < n; j++) {
        uint32_t size = c[j].size;
        if (size) kr__copy_value(c[j].data + (size_t)row * size, c[j].data + (size_t)last * size, size);
    }
    w->records[kr_entity_index(moved)].row = row;
}

/* Tables (table.c). */
uint32_t kr__table_find_or_create(kr_world_t *w, const kr_component_t *types, uint32_t n);
/* The table beside `from` with (add) or without (!add) component c, found
 * by type set and remembered as an edge both ways; KR__NONE on failure. */
uint32_t kr__table_neighbour(kr_world_t *w, uint32_t from, kr_component_t c, bool add);
/* The remembered edge, or KR__NONE when it is not known yet. Following a
 * known edge is one load: inline, so that an add or remove keeps few
 * instructions between its cache misses. */
static inline uint32_t kr__table_edge(const kr__table_t *t, kr_component_t c, bool add)
{
    return c < t->edge_size ? (add ? t->add_edge : t->remove_edge)[c] : KR__NONE;
}
static inline uint32_t kr__table_with(kr_world_t *w, uint32_t from, kr_component_t c) /* add edge */
{
    uint32_t to = kr__table_edge(w->tables[from], c, true);
    return to != KR__NONE ? to : kr__table_neighbour(w, from, c, true);
}
static inline uint32_t kr__table_without(kr_world_t *w, uint32_t from, kr_component_t c) /* remove edge */
{
    uint32_t to = kr__table_edge(w->tables[from], c, false);
    return to != KR__NONE ? to : kr__table_neighbour(w, from, c, false);
}
/* Appends a zeroed row for e; returns the row or KR__NONE on allocation failure. */
uint32_t kr__table_append(kr_world_t *w, kr__table_t *t, kr_entity_t e);
/* Makes room for `need` rows (count unchanged). */
kr_status_t kr__table_reserve(kr__table_t *t, uint32_t need);
/* Removes row: swap-remove, or a hole while an entity pass is active. */
void kr__table_remove_row(kr_world_t *w, uint32_t table, uint32_t row);
/* Moves entity e (record rec) to table `to`, its table's neighbour with
 * component c (kr__table_with), copying the shared components; returns
 * c's zeroed value in the new row, or NULL with the error set. */
void *kr__table_move_add(kr_world_t *w, kr_entity_t e, kr__record_t *rec, uint32_t to, kr_component_t c);
/* The same towards the neighbour without c (kr__table_without). */
kr_status_t kr__table_move_remove(kr_world_t *w, kr_entity_t e, kr__record_t *rec, uint32_t to, kr_component_t c);
/* The common case of both, inline in kr_component_add and _remove
 * (component.c): outside any entity pass, into a table with room. The row
 * goes to the end of `dst` (table `to`), the last row of `src` fills its
 * place, and the record follows. The tables differ by the column `wide` of
 * the one that has it (dst when adding, src when removing); the others
 * pair up in order around it. Returns the new row. */
__attribute__((always_inline)) static inline uint32_t kr__table_move_row(kr_world_t *w, kr_entity_t e,
                                                                         kr__record_t *rec, kr__table_t *src,
                                                                         uint32_t to, kr__table_t *dst,
                                                                         uint32_t wide, bool add)
{
    uint32_t row = rec->row, last = --src->count, dst_row = dst->count++;
    bool fill = row != last;
    dst->entities[dst_row] = e;
    rec->table = to;
    rec->row = dst_row;
    const kr__column_t *sc = src->columns, *dc = dst->columns;
    for (uint32_t j = 0, n = src->type_count; j < n; j++) {
        uint32_t size = sc[j].size;
        if (!size) continue;
        uint8_t *hole = sc[j].data + (size_t)row * size;
        if (add || j != wide) {
            const kr__column_t *d = add ? dc + j + (j >= wide) : dc + j - (j > wide);
            kr__copy_value(d->data + (size_t)dst_row * size, hole, size);
        }
        if (fill) kr__copy_value(hole, sc[j].data + (size_t)last * size, size);
    }
    if (fill) {
        kr_entity_t moved = src->entities[last];
        src->entities[row] = moved;
        w->records[kr_entity_index(moved)].row = row;
    }
    return dst_row;
}
void kr__table_free(kr__table_t *t);
/* Fills holes once no entity pass is active. */
void kr__world_compact(kr_world_t *w);

kr_status_t kr__world_reserve_records(kr_world_t *w, uint32_t need);

/* Structural changes are refused during a chunk pass. */
bool kr__locked_error(const char *fn);
static inline bool kr__structure_locked(const kr_world_t *w, const char *fn)
{
    if (!w->chunk_passes) return false;
    kr__locked_error(fn);   /* always true; a constant answer lets callers save no registers */
    return true;
}

/* Behaviors (behavior.c). Call one callback slot on every behavior of e. */
typedef enum kr__callback {
    KR__CB_CREATION, KR__CB_DESTROY, KR__CB_AWAKE, KR__CB_START,
    KR__CB_ENTERING, KR__CB_ENTERED, KR__CB_EXITING, KR__CB_EXITED,
    KR__CB_SUBMODEL_MOVE, KR__CB_UPDATE, KR__CB_LATE_UPDATE,
    KR__CB_INPUT_READY, KR__CB_OUTPUT_READY, KR__CB_RECEIVE
} kr__callback_t;
void kr__behaviors_fire(kr_world_t *w, kr_entity_t e, kr__callback_t cb, kr_entity_t arg);
/* As kr__behaviors_fire, for on_receive: two entity arguments. */
void kr__behaviors_fire2(kr_world_t *w, kr_entity_t e, kr__callback_t cb, kr_entity_t arg,
                         kr_entity_t arg2);
/* The behavior components of table t, in column order: a snapshot that
 * stays right while callbacks change the entity. Uses `small` when n <= 16,
 * else malloc (free it when it is not `small`); NULL, n = 0 if that fails. */
kr_component_t *kr__behavior_list(const kr__table_t *t, kr_component_t small[16], uint32_t *n);
void kr__behavior_fire_one(kr_world_t *w, kr_entity_t e, kr_component_t c, kr__callback_t cb,
                           kr_entity_t arg);
/* Whether behavior c of e has its on_destroy under way. */
bool kr__behavior_removing(const kr_world_t *w, kr_entity_t e, kr_component_t c);

/* Tree (hierarchy.c). */
kr_status_t kr__tree_reserve(kr_world_t *w);
void kr__tree_unlink(kr_world_t *w, uint32_t idx);
kr_status_t kr__tree_link(kr_world_t *w, uint32_t child, uint32_t parent, uint32_t before);
/* One link of entity idx's tree node, chosen by offsetof(kr__tree_t, ...);
 * KR__NONE for an entity that never was in the tree. */
static inline uint32_t kr__tree_field(const kr_world_t *w, uint32_t idx, size_t field)
{
    if (!(w->records[idx].flags & KR__REC_TREE)) return KR__NONE;
    uint32_t v;
    memcpy(&v, (const char *)&w->tree[idx] + field, sizeof v);
    return v;
}
static inline kr_entity_t kr__id_of(const kr_world_t *w, uint32_t idx)
{
    return idx == KR__NONE ? KR_ENTITY_INVALID : kr_entity_make(idx, w->records[idx].generation);
}

/* Channels (channel.c). Called by destroy on an entity that is going away:
 * if it is a channel, its peer forgets it. */
void kr__channel_forget(kr_world_t *w, uint32_t idx);

/* Names (name.c). */
void kr__name_release(kr_world_t *w, uint32_t idx);
void kr__names_fini(kr_world_t *w);

/* Sparse storage (sparse.c). */
kr__sparse_pool_t *kr__pool_create(kr_world_t *w, kr_component_t c);
void *kr__sparse_add_slow(kr_world_t *w, kr__sparse_pool_t *p, kr_entity_t e); /* grows, then adds */

/* The pool of component c, made on first use when `create`. */
static inline kr__sparse_pool_t *kr__pool(kr_world_t *w, kr_component_t c, bool create)
{
    if (c < w->pool_slots && w->pools[c]) return w->pools[c];
    return create ? kr__pool_create(w, c) : NULL;
}

/* Adds a zeroed value for e (absent from the pool); NULL on failure. The
 * common case, with room in both arrays, is inline. */
static inline void *kr__sparse_add(kr_world_t *w, kr__sparse_pool_t *p, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (idx >= p->slot_capacity || p->count == p->capacity) return kr__sparse_add_slow(w, p, e);
    uint32_t slot = p->count++;
    p->slot_of[idx] = slot;
    p->entities[slot] = e;
    void *v = kr__sparse_value(p, slot);
    if (p->size) kr__zero_value(v, p->size);
    return v;
}

/* Removes entity idx's value (present): the last value fills its slot. */
static inline void kr__sparse_remove(kr__sparse_pool_t *p, uint32_t idx)
{
    uint32_t slot = p->slot_of[idx], last = --p->count;
    if (slot != last) {
        kr_entity_t moved = p->entities[last];
        p->entities[slot] = moved;
        if (p->size)
            kr__copy_value(p->data + (size_t)slot * p->size, p->data + (size_t)last * p->size, p->size);
        p->slot_of[kr_entity_index(moved)] = slot;
    }
    p->slot_of[idx] = KR__NONE;
}
void kr__sparse_forget(kr_world_t *w, uint32_t idx); /* on destroy */
void kr__sparse_fini(kr_world_t *w);

static inline bool kr__is_sparse(const kr_world_t *w, kr_component_t c)
{
    const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
    return e && e->info.storage == KR_STORAGE_SPARSE;
}

/* Spatial hash (spatial.c). */
kr_status_t kr__spatial_init(kr__spatial_state_t *s, double cell_size, const double bounds[4]);
/* An empty hash whose grid is cells [gx0, gx0 + gw) x [gy0, gy0 + gh) (gw or gh 0: no grid). */
kr_status_t kr__spatial_init_grid(kr__spatial_state_t *s, double cell_size, int32_t gx0, int32_t gy0, uint32_t gw,
                                  uint32_t gh);
/* The cell of point (x, y), as kr_spatial_insert finds it; false when its
 * index does not fit in int32 (or the point is not finite). */
bool kr__spatial_point_cell(const kr__spatial_state_t *s, double x, double y, int32_t *cx, int32_t *cy);
/* The cell index (for kr__cell_at) of occupied cell (cx, cy), or KR__NONE. */
uint32_t kr__spatial_find(const kr__spatial_state_t *s, int32_t cx, int32_t cy);
/* A cell with its place in (cy, cx) order, the order in which queries
 * visit cells and images list them; sorted by qsort with kr__cell_order_cmp. */
typedef struct kr__cell_order {
    uint64_t order;  /* (cy, cx) biased to unsigned: sorts like the signed pair */
    uint32_t cell;
} kr__cell_order_t;
static inline uint64_t kr__cell_order_key(int32_t cx, int32_t cy)
{
    return ((uint64_t)((uint32_t)cy ^ 0x80000000u) << 32) | ((uint32_t)cx ^ 0x80000000u);
}
int kr__cell_order_cmp(const void *a, const void *b);
void kr__spatial_fini(kr__spatial_state_t *s);
void kr__spatial_forget(kr_world_t *w, uint32_t idx); /* on destroy */
/* A hint: starts loading the cell of entity idx, which is in the hash
 * (batch.c; a stale idx is harmless, nothing is changed). */
void kr__spatial_prefetch_cell(const kr__spatial_state_t *s, uint32_t idx);

#endif
