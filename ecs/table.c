/* Archetype tables: one per set of component types, each component a
 * contiguous column. Entities move between tables as they gain and lose
 * components; cached add/remove edges make a move one array lookup. */
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/memory.h"
#include "ecs/world_private.h"


static uint64_t types_hash(const kr_component_t *types, uint32_t n)
{
    return kr__hash_bytes(types, (size_t)n * sizeof *types, n);
}

kr_status_t kr__table_reserve(kr__table_t *t, uint32_t need)
{
    if (need <= t->capacity) return KR_OK;
    uint64_t cap = t->capacity ? t->capacity : 8;
    while (cap < need) cap *= 2;
    if (cap > UINT32_MAX - 1) return kr__fail(KR_ERR_NOMEM, "table: more than 2^32 rows");
    kr_entity_t *ents = kr__array_grow(t->entities, (size_t)t->count * sizeof *ents, cap * sizeof *ents, 64);
    if (!ents) return kr__fail(KR_ERR_NOMEM, "table: out of memory for %llu rows", (unsigned long long)cap);
    t->entities = ents;
    for (uint32_t i = 0; i < t->type_count; i++) {
        kr__column_t *c = &t->columns[i];
        if (!c->size) continue;
        void *d = kr__array_grow(c->data, (size_t)t->count * c->size, cap * c->size, c->align);
        if (!d) return kr__fail(KR_ERR_NOMEM, "table: out of memory for %llu rows", (unsigned long long)cap);
        c->data = d;
    }
    t->capacity = (uint32_t)cap;
    return KR_OK;
}

void kr__table_free(kr__table_t *t)
{
    if (!t) return;
    for (uint32_t i = 0; i < t->type_count; i++) free(t->columns[i].data);
    free(t->columns);
    free(t->types);
    free(t->entities);
    free(t->holes);
    free(t->column_of);
    free(t->add_edge);
    free(t->remove_edge);
    free(t->behavior_columns);
    free(t);
}

static kr__table_t *table_new(kr_world_t *w, const kr_component_t *types, uint32_t n)
{
    kr__table_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->type_count = n;
    t->types = malloc((n ? n : 1) * sizeof *t->types);
    t->columns = calloc(n ? n : 1, sizeof *t->columns);
    t->behavior_columns = malloc((n ? n : 1) * sizeof *t->behavior_columns);
    kr_component_t max_id = 0;
    for (uint32_t i = 0; i < n; i++) max_id = types[i] > max_id ? types[i] : max_id;
    t->column_of_size = max_id + 1;
    t->column_of = malloc(t->column_of_size * sizeof *t->column_of);
    if (!t->types || !t->columns || !t->behavior_columns || !t->column_of) {
        kr__table_free(t);
        return NULL;
    }
    memset(t->column_of, 0xff, t->column_of_size * sizeof *t->column_of);
    for (uint32_t i = 0; i < n; i++) {
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, types[i]);
        t->types[i] = types[i];
        t->columns[i].size = (uint32_t)e->info.size;
        t->columns[i].align = (uint32_t)e->info.align;
        t->column_of[types[i]] = (int16_t)i;
        if (e->info.vtbl) t->behavior_columns[t->behavior_count++] = i;
    }
    t->destroy_hooks = t->behavior_count || kr__column_index(t, KR_CHANNEL) >= 0;
    t->hash = types_hash(types, n);
    return t;
}

uint32_t kr__table_find_or_create(kr_world_t *w, const kr_component_t *types, uint32_t n)
{
    uint64_t h = types_hash(types, n);
    uint32_t cursor = 0, id;
    while ((id = kr__hmap_next(&w->table_map, h, &cursor)) != KR__HMAP_EMPTY) {
        kr__table_t *t = w->tables[id];
        if (t->type_count == n && memcmp(t->types, types, n * sizeof *types) == 0) return id;
    }
    if (n > INT16_MAX) {
        kr__fail(KR_ERR_INVALID_ARG, "an entity may hold at most %d components", INT16_MAX);
        return KR__NONE;
    }
    if (w->table_count == w->table_capacity &&
        KR__GROW_U32(w->tables, w->table_capacity, w->table_count + 1, 16, NULL)) {
        kr__fail(KR_ERR_NOMEM, "out of memory for a new table");
        return KR__NONE;
    }
    if (w->dirty_capacity < w->table_capacity) {
        uint32_t *d = realloc(w->dirty_tables, w->table_capacity * sizeof *d);
        if (!d) {
            kr__fail(KR_ERR_NOMEM, "out of memory for a new table");
            return KR__NONE;
        }
        w->dirty_tables = d;
        w->dirty_capacity = w->table_capacity;
    }
    kr__table_t *t = table_new(w, types, n);
    if (!t || kr__hmap_insert(&w->table_map, h, w->table_count)) {
        kr__table_free(t);
        kr__fail(KR_ERR_NOMEM, "out of memory for a new table");
        return KR__NONE;
    }
    w->tables[w->table_count] = t;
    return w->table_count++;
}

static uint32_t *edge_slot(kr_world_t *w, kr__table_t *t, kr_component_t c, bool add)
{
    if (c >= t->edge_size) {
        uint32_t size = kr_registry_count(w->registry) + 1;
        if (size <= c) size = c + 1;
        uint32_t *a = realloc(t->add_edge, size * sizeof *a);
        if (a) t->add_edge = a;
        uint32_t *r = realloc(t->remove_edge, size * sizeof *r);
        if (r) t->remove_edge = r;
        if (!a || !r) return NULL;
        memset(a + t->edge_size, 0xff, (size - t->edge_size) * sizeof *a);
        memset(r + t->edge_size, 0xff, (size - t->edge_size) * sizeof *r);
        t->edge_size = size;
    }
    return add ? &t->add_edge[c] : &t->remove_edge[c];
}

uint32_t kr__table_neighbour(kr_world_t *w, uint32_t from, kr_component_t c, bool add)
{
    kr__table_t *t = w->tables[from];
    uint32_t *edges = add ? t->add_edge : t->remove_edge;
    if (c < t->edge_size && edges[c] != KR__NONE) return edges[c];
    kr_component_t *types = malloc((t->type_count + 1) * sizeof *types);
    if (!types) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        return KR__NONE;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->type_count; i++) {
        if (add && t->types[i] > c && (n == 0 || types[n - 1] < c)) types[n++] = c;
        if (t->types[i] != c) types[n++] = t->types[i];
    }
    if (add && (n == 0 || types[n - 1] < c)) types[n++] = c;
    uint32_t to = kr__table_find_or_create(w, types, n);
    free(types);
    if (to == KR__NONE) return KR__NONE;
    uint32_t *slot = edge_slot(w, w->tables[from], c, add);
    if (slot) *slot = to;
    uint32_t *back = edge_slot(w, w->tables[to], c, !add);
    if (back) *back = from;
    return to;
}

uint32_t kr__table_append(kr_world_t *w, kr__table_t *t, kr_entity_t e)
{
    (void)w;
    if (t->count == t->capacity && kr__table_reserve(t, t->count + 1)) return KR__NONE;
    uint32_t row = t->count++;
    t->entities[row] = e;
    for (uint32_t i = 0; i < t->type_count; i++) {
        kr__column_t *c = &t->columns[i];
        if (c->size) kr__zero_value(c->data + (size_t)row * c->size, c->size);
    }
    return row;
}

/* The dirty list has room for every table (reserved as tables are made),
 * so marking cannot fail. */
static void mark_dirty(kr_world_t *w, uint32_t table)
{
    kr__table_t *t = w->tables[table];
    if (t->dirty) return;
    w->dirty_tables[w->dirty_count++] = table;
    t->dirty = true;
}

/* Leaves a hole instead of moving a row while an entity pass is active. */
static void remove_row_in_pass(kr_world_t *w, uint32_t table, uint32_t row)
{
    kr__table_t *t = w->tables[table];
    /* An entity pass is walking tables by row number: leave a hole so no row
     * changes place until the pass ends (kairos/view.h). */
    t->entities[row] = KR_ENTITY_INVALID;
    mark_dirty(w, table);
    if (!t->sweep) {
        if (t->hole_count == t->hole_capacity &&
            KR__GROW_U32(t->holes, t->hole_capacity, t->hole_count + 1, 16, NULL)) {
            t->sweep = true; /* no list: compaction scans the whole table */
            return;
        }
        t->holes[t->hole_count++] = row;
    }
}

void kr__table_remove_row(kr_world_t *w, uint32_t table, uint32_t row)
{
    if (w->entity_passes == 0) kr__table_swap_remove(w, w->tables[table], row);
    else remove_row_in_pass(w, table, row);
}

/* The part of a move that both directions share: a row in `to` for e,
 * the record pointed at it; returns the new row, or KR__NONE (error set). */
static inline uint32_t move_begin(kr_world_t *w, kr_entity_t e, kr__record_t *rec, uint32_t to)
{
    kr__table_t *dst = w->tables[to];
    if (dst->count == dst->capacity && kr__table_reserve(dst, dst->count + 1)) return KR__NONE;
    uint32_t dst_row = dst->count++;
    dst->entities[dst_row] = e;
    rec->table = to;
    rec->row = dst_row;
    return dst_row;
}

/* After the columns: the source row is gone. `fill` (see below) says that
 * the last row took its place. */
static inline void move_end(kr_world_t *w, uint32_t from, kr__table_t *src, uint32_t row, uint32_t last, bool fill)
{
    if (fill) {
        kr_entity_t moved = src->entities[last];
        src->entities[row] = moved;
        w->records[kr_entity_index(moved)].row = row;
    }
    if (w->entity_passes) remove_row_in_pass(w, from, row);
    else src->count = last;
}

/* One column of a move: the value at row goes to dst, and with `fill` the
 * value at last takes its place (the move and the swap-remove of the
 * source row in one pass over the columns). */
static inline void move_value(const kr__column_t *s, const kr__column_t *d, uint32_t row, uint32_t dst_row,
                              uint32_t last, bool fill)
{
    uint32_t size = s->size;
    if (!size) return;
    uint8_t *hole = s->data + (size_t)row * size;
    kr__copy_value(d->data + (size_t)dst_row * size, hole, size);
    if (fill) kr__copy_value(hole, s->data + (size_t)last * size, size);
}

/* The tables of a move differ only by c (an edge), and their type lists
 * are sorted: the columns pair up in order around c's, so none is looked
 * up by id. The last source row fills the gap unless an entity pass needs
 * a hole there (kairos/view.h) or the row is the last one. */
void *kr__table_move_add(kr_world_t *w, kr_entity_t e, kr__record_t *rec, uint32_t to, kr_component_t c)
{
    uint32_t from = rec->table, row = rec->row;
    uint32_t dst_row = move_begin(w, e, rec, to);
    if (dst_row == KR__NONE) return NULL;
    kr__table_t *src = w->tables[from], *dst = w->tables[to];
    uint32_t last = src->count - 1, n = src->type_count;
    bool fill = !w->entity_passes && row != last;
    const kr__column_t *sc = src->columns, *dc = dst->columns, *at = dc + kr__column_index(dst, c);
    for (uint32_t j = 0; j < n; j++, dc++) {
        if (dc == at) dc++;
        move_value(sc + j, dc, row, dst_row, last, fill);
    }
    move_end(w, from, src, row, last, fill);
    if (!at->size) return dst->entities;   /* a tag: kr__column_ptr's answer */
    uint8_t *v = at->data + (size_t)dst_row * at->size;
    kr__zero_value(v, at->size);
    return v;
}

kr_status_t kr__table_move_remove(kr_world_t *w, kr_entity_t e, kr__record_t *rec, uint32_t to, kr_component_t c)
{
    uint32_t from = rec->table, row = rec->row;
    uint32_t dst_row = move_begin(w, e, rec, to);
    if (dst_row == KR__NONE) return kr_last_status();
    kr__table_t *src = w->tables[from], *dst = w->tables[to];
    uint32_t last = src->count - 1, n = src->type_count;
    bool fill = !w->entity_passes && row != last;
    const kr__column_t *sc = src->columns, *dc = dst->columns, *at = sc + kr__column_index(src, c);
    for (uint32_t j = 0; j < n; j++, sc++) {
        if (sc == at) {
            /* c's column: only the gap is filled. */
            if (fill && sc->size)
                kr__copy_value(sc->data + (size_t)row * sc->size, sc->data + (size_t)last * sc->size, sc->size);
            continue;
        }
        move_value(sc, dc++, row, dst_row, last, fill);
    }
    move_end(w, from, src, row, last, fill);
    return KR_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Fills the holes of one table from its end: O(holes) with the hole list,
 * O(rows) when it could not be kept (t->sweep). */
static void compact_table(kr_world_t *w, kr__table_t *t)
{
    if (t->sweep) {
        for (uint32_t row = 0; row < t->count; row++) {
            while (t->count && t->entities[t->count - 1] == KR_ENTITY_INVALID) t->count--;
            if (row < t->count && t->entities[row] == KR_ENTITY_INVALID) kr__table_swap_remove(w, t, row);
        }
    } else {
        qsort(t->holes, t->hole_count, sizeof *t->holes, cmp_u32);
        for (uint32_t h = 0; h < t->hole_count; h++) {
            while (t->count && t->entities[t->count - 1] == KR_ENTITY_INVALID) t->count--;
            uint32_t row = t->holes[h];
            if (row >= t->count) break;
            kr__table_swap_remove(w, t, row);
        }
    }
    while (t->count && t->entities[t->count - 1] == KR_ENTITY_INVALID) t->count--;
    t->hole_count = 0;
    t->sweep = false;
    t->dirty = false;
}

void kr__world_compact(kr_world_t *w)
{
    /* Rows move only when no pass can see them: entity passes walk rows by
     * number, chunk passes hold the arrays. */
    if (w->entity_passes || w->chunk_passes) return;
    for (uint32_t i = 0; i < w->dirty_count; i++) compact_table(w, w->tables[w->dirty_tables[i]]);
    w->dirty_count = 0;
}
