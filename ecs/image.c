/* World images (ecs/image.h): every order a model can observe, saved and
 * rebuilt exactly, for checkpoint/restart.
 *
 * The image is logical, not a memory dump: no pointer, no capacity, no hash
 * map, no table edge, no column_of, no cell map — all of those are rebuilt
 * from what is saved, so a change of internal layout can still read it. It
 * is columnar (arrays, not per-entity records) because worlds of millions of
 * agents are checkpointed while the run waits: writing is mostly memcpy and
 * the compressor (zstd, applied by the caller) sees like values side by side.
 *
 * Layout, little-endian; "idx" is an entity index (the generation is in the
 * records), "comp" an index into the component list:
 *   magic "KRIM" u32, version u32
 *   components: n u32; each: name length u32, name, size u32, kind u8
 *               (0 data, 1 sparse data, 2 behavior, 3 behavior with serialize)
 *   records:    n u32, generation u32[n], flags u8[n] (1 alive, 2 started),
 *               free list (reuse order): m u32, idx u32[m]
 *   tables:     n u32 (table ids in order, 0 the empty one); each: type count
 *               u32, comp u32[], rows u32, idx u32[rows], then per type, in
 *               that order: rows * size raw bytes, or for kind 3 a length
 *               u32[rows] and the serialized states one after another
 *   sparse:     n u32 (pools in creation order); each: comp u32, count u32,
 *               idx u32[count] (dense order), count * size raw bytes
 *   tree:       n u32, parent idx u32[n], child count u32[n], then the
 *               children of each parent in sibling order, idx u32[]
 *   names:      n u32 chains; each: length u32, name, count u32, idx u32[]
 *               (oldest first)
 *   spatial:    cell size f64, grid x0 i32, y0 i32, width u32, height u32,
 *               n u32 (occupied cells beyond the grid), cx i32[n], cy i32[n]
 *               (those cells in (cy, cx) order), member count u32[grid cells
 *               + n] (grid cells in index order, then the n), members: idx
 *               u32[], x f64[], y f64[] (cell by cell, in member order)
 * Version 1 (still read) saved the spatial hash's cell records instead:
 * after the grid, n u32 counted grid cells and every record beyond them,
 * emptied ones included, with cx i32[], cy i32[] of those beyond, member
 * counts u32[n], the members as above, then the free records: m u32,
 * cell u32[m]. Only the occupied cells and their members' order are
 * observable, which is what version 2 keeps.
 * Arrays are written in host order: this file requires a little-endian host
 * (raw component bytes are host-layout anyway, as in pack.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "ecs/image.h"
#include "ecs/serializer_private.h"
#include "ecs/world_private.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ecs/image.c writes arrays in host order, which must be little-endian"
#endif

#define IMAGE_MAGIC 0x4d49524bu /* "KRIM" */
#define IMAGE_VERSION 2u
#define IMAGE_VERSION_OLDEST 1u /* version 1: the spatial hash as cell records */
#define MAX_NAME (1u << 20)

enum { KIND_DATA, KIND_SPARSE, KIND_BEHAVIOR, KIND_SERIALIZED, KIND_COUNT };
enum { IMG_ALIVE = 1, IMG_STARTED = 2 };

static const char *const kind_names[KIND_COUNT] = { "data component", "sparse component", "behavior",
                                                    "behavior with serialize" };

static int kind_of(const kr_component_info_t *info)
{
    if (info->storage == KR_STORAGE_SPARSE) return KIND_SPARSE;
    if (!info->vtbl) return KIND_DATA;
    return info->vtbl->serialize ? KIND_SERIALIZED : KIND_BEHAVIOR;
}

/* Entity ids keep their meaning across an image: references map to themselves. */
static bool busy(const kr_world_t *w)
{
    return w->entity_passes || w->chunk_passes || w->spatial_scans || w->channel_depth || w->creating.entity ||
           w->note_head != w->note_count;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline double ldf64(const uint8_t *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---- save -------------------------------------------------------------- */

/* Appends n bytes to fill in place; NULL (error set) when out of memory. */
static uint8_t *put_space(kr_buf_t *b, size_t n)
{
    if (kr_buf_reserve(b, n)) return NULL;
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

static kr_status_t put_string(kr_buf_t *b, const char *s)
{
    size_t n = strlen(s);
    if (n > MAX_NAME) return kr__fail(KR_ERR_INVALID_ARG, "world image: a name of %zu bytes (at most %u)", n, MAX_NAME);
    kr_status_t st = kr_buf_put_u32(b, (uint32_t)n);
    return st ? st : kr_buf_append(b, s, n);
}

/* The components the world uses, in id order; dict[id] = position + 1. */
static kr_status_t save_components(kr_world_t *w, kr_buf_t *out, uint32_t *dict)
{
    uint32_t n = kr_registry_count(w->registry) + 1;
    for (uint32_t t = 0; t < w->table_count; t++)
        for (uint32_t i = 0; i < w->tables[t]->type_count; i++) dict[w->tables[t]->types[i]] = 1;
    for (uint32_t i = 0; i < w->pool_count; i++) dict[w->pool_ids[i]] = 1;
    uint32_t used = 0;
    for (uint32_t c = 1; c < n; c++)
        if (dict[c]) dict[c] = ++used;
    kr_status_t st = kr_buf_put_u32(out, used);
    for (uint32_t c = 1; c < n && !st; c++) {
        if (!dict[c]) continue;
        const kr_component_info_t *info = &kr__registry_entry(w->registry, c)->info;
        if (info->storage == KR_STORAGE_SPARSE && info->vtbl)
            return kr__fail(KR_ERR_INVALID_ARG, "world image: sparse behavior '%s' is not supported", info->name);
        st = put_string(out, info->name);
        st = st ? st : kr_buf_put_u32(out, (uint32_t)info->size);
        st = st ? st : kr_buf_put_u8(out, (uint8_t)kind_of(info));
    }
    return st;
}

static kr_status_t save_records(kr_world_t *w, kr_buf_t *out)
{
    uint32_t n = w->record_count;
    uint8_t *p = put_space(out, 4 + (size_t)n * 5);
    if (!p) return kr_last_status();
    memcpy(p, &n, 4);
    uint8_t *gens = p + 4, *flags = gens + (size_t)n * 4;
    for (uint32_t i = 0; i < n; i++) {
        const kr__record_t *r = &w->records[i];
        if (r->flags & KR__REC_DYING) return kr__fail(KR_ERR_STATE, "world image: entity %u is being destroyed", i);
        memcpy(gens + (size_t)i * 4, &r->generation, 4);
        flags[i] = (uint8_t)((r->flags & KR__REC_ALIVE ? IMG_ALIVE : 0) | (r->flags & KR__REC_STARTED ? IMG_STARTED : 0));
    }
    uint32_t dead = n - (uint32_t)w->live;
    if (!(p = put_space(out, 4 + (size_t)dead * 4))) return kr_last_status();
    memcpy(p, &dead, 4);
    uint32_t k = 0;
    for (uint32_t i = w->free_head; i != KR__NONE && k < dead; i = w->records[i].row, k++)
        memcpy(p + 4 + (size_t)k * 4, &i, 4);
    if (k != dead) return kr__fail(KR_ERR_STATE, "world image: the free list holds %u of %u free slots", k, dead);
    return KR_OK;
}

/* Each row's state as its serialize callback writes it: lengths first (patched), then the states. */
static kr_status_t save_serialized(kr_world_t *w, const kr__table_t *t, uint32_t col, kr_buf_t *out)
{
    const kr_component_info_t *info = &kr__registry_entry(w->registry, t->types[col])->info;
    size_t lengths = out->len;
    if (!put_space(out, (size_t)t->count * 4)) return kr_last_status();
    for (uint32_t row = 0; row < t->count; row++) {
        kr_entity_t e = t->entities[row];
        size_t start = out->len;
        kr_serializer_t s;
        kr__serializer_checkpoint_saver(&s, out);
        kr_status_t st = info->vtbl->serialize(w, e, kr__column_ptr(t, col, row), &s);
        if (!st) st = s.status;
        if (st)
            return kr__fail(st, "world image: serialize of '%s' on entity %u failed: %s", info->name,
                            kr_entity_index(e), kr_last_error());
        if (out->len - start > UINT32_MAX)
            return kr__fail(KR_ERR_INVALID_ARG, "world image: state of '%s' over 4 GiB", info->name);
        uint32_t len = (uint32_t)(out->len - start);
        memcpy(out->data + lengths + (size_t)row * 4, &len, 4);
    }
    return KR_OK;
}

static kr_status_t save_tables(kr_world_t *w, kr_buf_t *out, const uint32_t *dict)
{
    kr_status_t st = kr_buf_put_u32(out, w->table_count);
    for (uint32_t ti = 0; ti < w->table_count && !st; ti++) {
        const kr__table_t *t = w->tables[ti];
        uint8_t *p = put_space(out, 8 + (size_t)t->type_count * 4 + (size_t)t->count * 4);
        if (!p) return kr_last_status();
        memcpy(p, &t->type_count, 4);
        p += 4;
        for (uint32_t i = 0; i < t->type_count; i++, p += 4) {
            uint32_t d = dict[t->types[i]] - 1;
            memcpy(p, &d, 4);
        }
        memcpy(p, &t->count, 4);
        p += 4;
        for (uint32_t row = 0; row < t->count; row++, p += 4) {
            if (t->entities[row] == KR_ENTITY_INVALID)
                return kr__fail(KR_ERR_STATE, "world image: table %u has a hole (a pass is under way)", ti);
            uint32_t idx = kr_entity_index(t->entities[row]);
            memcpy(p, &idx, 4);
        }
        for (uint32_t i = 0; i < t->type_count && !st; i++) {
            const kr_component_info_t *info = &kr__registry_entry(w->registry, t->types[i])->info;
            if (kind_of(info) == KIND_SERIALIZED) st = save_serialized(w, t, i, out);
            else if (t->columns[i].size && t->count) st = kr_buf_append(out, t->columns[i].data, (size_t)t->count * t->columns[i].size);
        }
    }
    return st;
}

static kr_status_t save_sparse(kr_world_t *w, kr_buf_t *out, const uint32_t *dict)
{
    kr_status_t st = kr_buf_put_u32(out, w->pool_count);
    for (uint32_t i = 0; i < w->pool_count && !st; i++) {
        const kr__sparse_pool_t *pool = w->pools[w->pool_ids[i]];
        uint8_t *p = put_space(out, 8 + (size_t)pool->count * (4 + pool->size));
        if (!p) return kr_last_status();
        uint32_t d = dict[w->pool_ids[i]] - 1;
        memcpy(p, &d, 4);
        memcpy(p + 4, &pool->count, 4);
        p += 8;
        for (uint32_t k = 0; k < pool->count; k++, p += 4) {
            uint32_t idx = kr_entity_index(pool->entities[k]);
            memcpy(p, &idx, 4);
        }
        if (pool->size && pool->count) memcpy(p, pool->data, (size_t)pool->count * pool->size);
    }
    return st;
}

static bool has_children(const kr_world_t *w, uint32_t i)
{
    return (w->records[i].flags & KR__REC_TREE) && w->tree[i].first_child != KR__NONE;
}

static kr_status_t save_tree(kr_world_t *w, kr_buf_t *out)
{
    uint32_t parents = 0, children = 0;
    for (uint32_t i = 0; i < w->record_count; i++)
        if (has_children(w, i)) {
            parents++;
            children += w->tree[i].child_count;
        }
    uint8_t *p = put_space(out, 4 + (size_t)parents * 8 + (size_t)children * 4);
    if (!p) return kr_last_status();
    memcpy(p, &parents, 4);
    uint8_t *ps = p + 4, *cs = ps + (size_t)parents * 4, *kids = cs + (size_t)parents * 4;
    for (uint32_t i = 0; i < w->record_count; i++) {
        if (!has_children(w, i)) continue;
        memcpy(ps, &i, 4);
        memcpy(cs, &w->tree[i].child_count, 4);
        ps += 4;
        cs += 4;
        for (uint32_t c = w->tree[i].first_child; c != KR__NONE; c = w->tree[c].next, kids += 4) memcpy(kids, &c, 4);
    }
    return KR_OK;
}

static kr_status_t save_names(kr_world_t *w, kr_buf_t *out)
{
    size_t count_at = out->len;
    uint32_t chains = 0;
    kr_status_t st = kr_buf_put_u32(out, 0);
    for (uint32_t i = 0; i < w->record_count && !st; i++) {
        if (!(w->records[i].flags & KR__REC_NAMED)) continue;
        const char *name = w->names[i].str;
        if (kr_entity_index(kr_entity_find(w, name)) != i) continue; /* not the oldest: its chain's head writes it */
        uint32_t n = 1;
        for (uint32_t k = w->names[i].next; k != i; k = w->names[k].next) n++;
        st = put_string(out, name);
        uint8_t *p = st ? NULL : put_space(out, 4 + (size_t)n * 4);
        if (!p) return kr_last_status();
        memcpy(p, &n, 4);
        uint32_t k = i;
        for (uint32_t j = 0; j < n; j++, k = w->names[k].next) memcpy(p + 4 + (size_t)j * 4, &k, 4);
        chains++;
    }
    if (!st) memcpy(out->data + count_at, &chains, 4);
    return st;
}

/* The grid, then the occupied cells of the table in (cy, cx) order: where
 * a cell sits in the table (a matter of hashing and history) is not saved. */
static kr_status_t save_spatial(kr_world_t *w, kr_buf_t *out)
{
    const kr__spatial_state_t *s = &w->spatial;
    uint32_t extra = 0, members = (uint32_t)s->members;
    for (uint32_t i = 0; i < s->table_capacity; i++) extra += s->table[i].count != 0;
    kr__cell_order_t *order = malloc((extra ? extra : 1) * sizeof *order);
    if (!order) return kr__fail(KR_ERR_NOMEM, "world image: out of memory sorting %u cells", extra);
    for (uint32_t i = 0, k = 0; i < s->table_capacity; i++)
        if (s->table[i].count) order[k++] = (kr__cell_order_t){ kr__cell_order_key(s->table[i].cx, s->table[i].cy), i };
    qsort(order, extra, sizeof *order, kr__cell_order_cmp);
    size_t bytes = 8 + 4 * 5 + (size_t)extra * 8 + ((size_t)s->grid_cells + extra) * 4 + (size_t)members * 20;
    uint8_t *p = put_space(out, bytes);
    if (!p) {
        free(order);
        return kr_last_status();
    }
    memcpy(p, &s->cell_size, 8);
    memcpy(p + 8, &s->gx0, 4);
    memcpy(p + 12, &s->gy0, 4);
    memcpy(p + 16, &s->gw, 4);
    memcpy(p + 20, &s->gh, 4);
    memcpy(p + 24, &extra, 4);
    uint8_t *cx = p + 28, *cy = cx + (size_t)extra * 4, *counts = cy + (size_t)extra * 4;
    uint8_t *idx = counts + ((size_t)s->grid_cells + extra) * 4, *xs = idx + (size_t)members * 4;
    uint8_t *ys = xs + (size_t)members * 8;
    uint32_t m = 0;
    for (uint32_t c = 0; c < s->grid_cells + extra; c++) {
        const kr__spatial_cell_rec_t *cell = c < s->grid_cells ? &s->grid[c] : &s->table[order[c - s->grid_cells].cell];
        if (c >= s->grid_cells) {
            memcpy(cx + (size_t)(c - s->grid_cells) * 4, &cell->cx, 4);
            memcpy(cy + (size_t)(c - s->grid_cells) * 4, &cell->cy, 4);
        }
        memcpy(counts + (size_t)c * 4, &cell->count, 4);
        const kr_entity_t *mem = kr__cell_members(cell);
        for (uint32_t k = 0; k < cell->count && m < members; k++, m++) {
            uint32_t i = kr_entity_index(mem[k]);
            memcpy(idx + (size_t)m * 4, &i, 4);
            memcpy(xs + (size_t)m * 8, &s->entries[i].x, 8);
            memcpy(ys + (size_t)m * 8, &s->entries[i].y, 8);
        }
    }
    free(order);
    if (m != members) return kr__fail(KR_ERR_STATE, "world image: the spatial hash counts %u members, its cells %u", members, m);
    return KR_OK;
}

kr_status_t kr__world_image_save(kr_world_t *w, kr_buf_t *out)
{
    if (!w || !out) return kr__fail(KR_ERR_INVALID_ARG, "kr__world_image_save: null %s", w ? "buffer" : "world");
    if (busy(w)) return kr__fail(KR_ERR_STATE, "kr__world_image_save: a pass, scan, creation or channel call is under way");
    kr__world_compact(w);
    uint32_t *dict = calloc((size_t)kr_registry_count(w->registry) + 1, sizeof *dict);
    if (!dict) return kr__fail(KR_ERR_NOMEM, "kr__world_image_save: out of memory");
    size_t start = out->len;
    kr_status_t st = kr_buf_put_u32(out, IMAGE_MAGIC);
    st = st ? st : kr_buf_put_u32(out, IMAGE_VERSION);
    st = st ? st : save_components(w, out, dict);
    st = st ? st : save_records(w, out);
    st = st ? st : save_tables(w, out, dict);
    st = st ? st : save_sparse(w, out, dict);
    st = st ? st : save_tree(w, out);
    st = st ? st : save_names(w, out);
    st = st ? st : save_spatial(w, out);
    free(dict);
    if (st) out->len = start; /* nothing that looks like an image */
    return st;
}

/* ---- load -------------------------------------------------------------- */

/* A column of behaviors with serialize, loaded once the structure stands. */
typedef struct serialized_block {
    kr_component_t component;
    uint32_t rows;
    size_t first;              /* position of its entities in loader.block_entities */
    const uint8_t *lengths, *data;
} serialized_block_t;

typedef struct loader {
    kr_world_t *w;
    kr_reader_t r;
    uint32_t version;
    uint32_t ncomp;
    kr_component_t *comp;       /* by image component index */
    uint8_t *kind;
    uint8_t *mark;              /* by entity index: MARK_* */
    serialized_block_t *blocks;
    uint32_t block_count, block_capacity;
    kr_entity_t *block_entities;
    size_t block_entity_count, block_entity_capacity;
} loader_t;

enum { MARK_PLACED = 1, MARK_PATH = 2, MARK_ROOTED = 4 };

__attribute__((format(printf, 2, 3))) static kr_status_t bad(const loader_t *L, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kr__fail(KR_ERR_CORRUPT, "world image: %s (at byte %zu)", msg, L->r.pos);
}

/* The next count elements of `size` bytes, or NULL (error set) when fewer are left. */
static const uint8_t *take(loader_t *L, uint64_t count, size_t size, const char *what)
{
    if (size && count > kr_reader_left(&L->r) / size) {
        bad(L, "truncated %s (%llu of %zu bytes)", what, (unsigned long long)count, size);
        return NULL;
    }
    return kr_reader_view(&L->r, (size_t)count * size);
}

static bool take_u32(loader_t *L, uint32_t *v, const char *what)
{
    const uint8_t *p = take(L, 1, 4, what);
    if (p) *v = ld32(p);
    return p != NULL;
}

/* A count u32, then that many elements of `size` bytes. */
static const uint8_t *take_counted(loader_t *L, uint32_t *count, size_t size, const char *what)
{
    return take_u32(L, count, what) ? take(L, *count, size, what) : NULL;
}

/* A name: length-checked, NUL-free, returned NUL-terminated (malloc). */
static char *take_name(loader_t *L, const char *what)
{
    uint32_t n;
    if (!take_u32(L, &n, what)) return NULL;
    if (n == 0 || n > MAX_NAME) {
        bad(L, "%s of %u bytes", what, n);
        return NULL;
    }
    const uint8_t *p = take(L, n, 1, what);
    if (!p) return NULL;
    if (memchr(p, 0, n)) {
        bad(L, "%s holds a NUL byte", what);
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        kr__fail(KR_ERR_NOMEM, "world image: out of memory");
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* A live entity of the image by index, or KR_ENTITY_INVALID with the error set. */
static kr_entity_t live_entity(const loader_t *L, uint32_t idx, const char *where)
{
    const kr_world_t *w = L->w;
    if (idx >= w->record_count) {
        bad(L, "%s: entity index %u out of range (%u records)", where, idx, w->record_count);
        return KR_ENTITY_INVALID;
    }
    if (!(w->records[idx].flags & KR__REC_ALIVE)) {
        bad(L, "%s: entity %u is not alive", where, idx);
        return KR_ENTITY_INVALID;
    }
    return kr_entity_make(idx, w->records[idx].generation);
}

static kr_status_t load_components(loader_t *L)
{
    const kr_registry_t *reg = L->w->registry;
    if (!take_u32(L, &L->ncomp, "component count")) return kr_last_status();
    /* Each takes 10 bytes at least: a length, a byte of name, a size, a kind. */
    if (L->ncomp > kr_reader_left(&L->r) / 10) return bad(L, "%u components", L->ncomp);
    L->comp = calloc(L->ncomp ? L->ncomp : 1, sizeof *L->comp);
    L->kind = calloc(L->ncomp ? L->ncomp : 1, 1);
    if (!L->comp || !L->kind) return kr__fail(KR_ERR_NOMEM, "world image: out of memory");
    for (uint32_t i = 0; i < L->ncomp; i++) {
        char *name = take_name(L, "component name");
        if (!name) return kr_last_status();
        kr_component_t c = kr_component_lookup(reg, name);
        const kr__registry_entry_t *e = kr__registry_entry(reg, c);
        uint32_t size;
        const uint8_t *k = take_u32(L, &size, "component size") ? take(L, 1, 1, "component kind") : NULL;
        kr_status_t st = KR_OK;
        if (!k) st = kr_last_status();
        else if (!e) st = bad(L, "unknown component '%s'", name);
        else if (*k >= KIND_COUNT) st = bad(L, "component '%s' of unknown kind %u", name, *k);
        else if (*k != kind_of(&e->info))
            st = bad(L, "'%s' is a %s in the image but a %s here", name, kind_names[*k], kind_names[kind_of(&e->info)]);
        else if (*k != KIND_SERIALIZED && size != e->info.size)
            st = bad(L, "component '%s' has %u bytes in the image, %zu here", name, size, e->info.size);
        for (uint32_t j = 0; j < i && !st; j++)
            if (L->comp[j] == c) st = bad(L, "component '%s' listed twice", name);
        free(name);
        if (st) return st;
        L->comp[i] = c;
        L->kind[i] = *k;
    }
    return KR_OK;
}

static kr_status_t load_records(loader_t *L)
{
    kr_world_t *w = L->w;
    uint32_t n;
    const uint8_t *gens = take_counted(L, &n, 5, "records");
    if (!gens) return kr_last_status();
    if (n > UINT32_MAX - 1) return bad(L, "%u records", n);
    const uint8_t *flags = gens + (size_t)n * 4;
    if (kr__world_reserve_records(w, n ? n : 1)) return kr_last_status();
    L->mark = calloc(n ? n : 1, 1);
    if (!L->mark) return kr__fail(KR_ERR_NOMEM, "world image: out of memory for %u records", n);
    uint32_t dead = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = ld32(gens + (size_t)i * 4);
        uint8_t f = flags[i];
        if (g == 0) return bad(L, "record %u has generation 0", i);
        if ((f & ~(IMG_ALIVE | IMG_STARTED)) || f == IMG_STARTED) return bad(L, "record %u has flags %#x", i, f);
        w->records[i] = (kr__record_t){ g, KR__NONE, KR__NONE,
                                        (f & IMG_ALIVE ? KR__REC_ALIVE : 0) | (f & IMG_STARTED ? KR__REC_STARTED : 0) };
        dead += !(f & IMG_ALIVE);
    }
    w->record_count = n;
    w->live = n - dead;
    uint32_t m;
    const uint8_t *list = take_counted(L, &m, 4, "free list");
    if (!list) return kr_last_status();
    if (m != dead) return bad(L, "the free list holds %u slots, %u records are free", m, dead);
    uint32_t *link = &w->free_head;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t i = ld32(list + (size_t)k * 4);
        if (i >= n || (w->records[i].flags & KR__REC_ALIVE)) return bad(L, "free list entry %u: slot %u is not a free record", k, i);
        if (L->mark[i]) return bad(L, "free list entry %u: slot %u listed twice (a loop)", k, i);
        L->mark[i] = MARK_PLACED;
        *link = i;
        link = &w->records[i].row;
    }
    *link = KR__NONE;
    return KR_OK;
}

static int cmp_component(const void *a, const void *b)
{
    kr_component_t x = *(const kr_component_t *)a, y = *(const kr_component_t *)b;
    return x < y ? -1 : x > y;
}

static kr_status_t add_block(loader_t *L, kr_component_t c, kr__table_t *t, const uint8_t *lengths,
                             const uint8_t *data)
{
    if (L->block_count == L->block_capacity) {
        uint32_t cap = L->block_capacity ? L->block_capacity * 2 : 8;
        serialized_block_t *b = realloc(L->blocks, cap * sizeof *b);
        if (!b) return kr__fail(KR_ERR_NOMEM, "world image: out of memory");
        L->blocks = b;
        L->block_capacity = cap;
    }
    if (L->block_entity_count + t->count > L->block_entity_capacity) {
        size_t cap = (L->block_entity_count + t->count) * 2;
        kr_entity_t *e = realloc(L->block_entities, cap * sizeof *e);
        if (!e) return kr__fail(KR_ERR_NOMEM, "world image: out of memory");
        L->block_entities = e;
        L->block_entity_capacity = cap;
    }
    L->blocks[L->block_count++] = (serialized_block_t){ c, t->count, L->block_entity_count, lengths, data };
    if (t->count) memcpy(L->block_entities + L->block_entity_count, t->entities, (size_t)t->count * sizeof *t->entities);
    L->block_entity_count += t->count;
    return KR_OK;
}

/* `count` values of component c at p, `size` bytes apart: every bool field
 * must hold 0 or 1 (any other byte read as a bool is undefined). */
static kr_status_t check_bools(loader_t *L, kr_component_t c, const uint8_t *p, uint64_t count, size_t size)
{
    const kr__registry_entry_t *e = kr__registry_entry(L->w->registry, c);
    for (size_t f = 0; e && f < e->info.field_count; f++) {
        const kr_field_t *fd = &e->info.fields[f];
        if (fd->type != KR_FIELD_BOOL) continue;
        for (uint32_t k = 0; k < (fd->count ? fd->count : 1); k++)
            for (uint64_t row = 0; row < count; row++) {
                size_t at = (size_t)row * size + fd->offset + k * sizeof(bool);
                if (at < (size_t)row * size + size && p[at] > 1)
                    return bad(L, "component '%s': field '%s' holds %u, not a bool", e->info.name, fd->name, p[at]);
            }
    }
    return KR_OK;
}

static kr_status_t load_columns(loader_t *L, kr__table_t *t, const uint32_t *dicts, const kr_component_t *ids)
{
    for (uint32_t j = 0; j < t->type_count; j++) {
        kr__column_t *col = &t->columns[kr__column_index(t, ids[j])];
        if (L->kind[dicts[j]] != KIND_SERIALIZED) {
            const uint8_t *p = take(L, t->count, col->size, "column");
            if (!p) return kr_last_status();
            if (check_bools(L, ids[j], p, t->count, col->size)) return kr_last_status();
            if (col->size && t->count) memcpy(col->data, p, (size_t)t->count * col->size);
            continue;
        }
        const uint8_t *lengths = take(L, t->count, 4, "serialized state lengths");
        if (!lengths) return kr_last_status();
        uint64_t total = 0;
        for (uint32_t row = 0; row < t->count; row++) total += ld32(lengths + (size_t)row * 4);
        const uint8_t *data = take(L, total, 1, "serialized states");
        if (!data) return kr_last_status();
        if (col->size && t->count) memset(col->data, 0, (size_t)t->count * col->size);
        if (add_block(L, ids[j], t, lengths, data)) return kr_last_status();
    }
    return KR_OK;
}

static kr_status_t load_table(loader_t *L, uint32_t ti)
{
    kr_world_t *w = L->w;
    uint32_t k;
    const uint8_t *p = take_counted(L, &k, 4, "table types");
    if (!p) return kr_last_status();
    if (k > L->ncomp) return bad(L, "table %u has %u types, the image names %u components", ti, k, L->ncomp);
    uint32_t *dicts = malloc((k ? k : 1) * sizeof *dicts);
    kr_component_t *ids = malloc((k ? k : 1) * sizeof *ids), *sorted = malloc((k ? k : 1) * sizeof *sorted);
    kr_status_t st = dicts && ids && sorted ? KR_OK : kr__fail(KR_ERR_NOMEM, "world image: out of memory");
    for (uint32_t j = 0; j < k && !st; j++) {
        dicts[j] = ld32(p + (size_t)j * 4);
        if (dicts[j] >= L->ncomp) st = bad(L, "table %u: component %u out of range", ti, dicts[j]);
        else if (L->kind[dicts[j]] == KIND_SPARSE) st = bad(L, "table %u holds sparse component %u", ti, dicts[j]);
        else sorted[j] = ids[j] = L->comp[dicts[j]];
    }
    if (!st) {
        if (k) qsort(sorted, k, sizeof *sorted, cmp_component);
        for (uint32_t j = 1; j < k && !st; j++)
            if (sorted[j] == sorted[j - 1]) st = bad(L, "table %u lists a component twice", ti);
    }
    uint32_t id = KR__NONE;
    if (!st && (id = kr__table_find_or_create(w, sorted, k)) == KR__NONE) st = kr_last_status();
    if (!st && id != ti) st = bad(L, "table %u has the component set of table %u", ti, id);
    uint32_t rows = 0;
    const uint8_t *ents = NULL;
    if (!st && !(ents = take_counted(L, &rows, 4, "table rows"))) st = kr_last_status();
    /* Check the rows' bytes are there before allocating for them. */
    uint64_t per_row = 0;
    for (uint32_t j = 0; j < k && !st; j++)
        per_row += L->kind[dicts[j]] == KIND_SERIALIZED ? 4 : kr__registry_entry(w->registry, ids[j])->info.size;
    if (!st && per_row && rows > kr_reader_left(&L->r) / per_row) st = bad(L, "truncated rows of table %u", ti);
    kr__table_t *t = st ? NULL : w->tables[id];
    if (t && kr__table_reserve(t, rows)) st = kr_last_status();
    for (uint32_t row = 0; row < rows && !st; row++) {
        uint32_t idx = ld32(ents + (size_t)row * 4);
        kr_entity_t e = live_entity(L, idx, "table row");
        if (!e) st = kr_last_status();
        else if (L->mark[idx]) st = bad(L, "entity %u has two table rows", idx);
        else {
            L->mark[idx] = MARK_PLACED;
            t->entities[row] = e;
            w->records[idx].table = ti;
            w->records[idx].row = row;
            t->count = row + 1;
        }
    }
    if (!st) st = load_columns(L, t, dicts, ids);
    free(dicts);
    free(ids);
    free(sorted);
    return st;
}

static kr_status_t load_tables(loader_t *L)
{
    uint32_t n;
    if (!take_u32(L, &n, "table count")) return kr_last_status();
    if (n == 0 || n > kr_reader_left(&L->r) / 8) return bad(L, "%u tables", n);
    for (uint32_t t = 0; t < n; t++)
        if (load_table(L, t)) return kr_last_status();
    size_t placed = 0;
    for (uint32_t i = 0; i < L->w->record_count; i++)
        placed += (L->w->records[i].flags & KR__REC_ALIVE) && L->mark[i];
    if (placed != L->w->live) return bad(L, "%zu live entities are in no table", L->w->live - placed);
    return KR_OK;
}

static kr_status_t load_sparse(loader_t *L)
{
    kr_world_t *w = L->w;
    uint32_t n;
    if (!take_u32(L, &n, "pool count")) return kr_last_status();
    if (n > L->ncomp) return bad(L, "%u sparse pools", n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d, count;
        if (!take_u32(L, &d, "pool component")) return kr_last_status();
        if (d >= L->ncomp || L->kind[d] != KIND_SPARSE) return bad(L, "pool %u: component %u is not sparse", i, d);
        kr_component_t c = L->comp[d];
        if (kr__pool(w, c, false)) return bad(L, "two pools of component %u", d);
        const uint8_t *idx = take_counted(L, &count, 4, "pool entities");
        kr__sparse_pool_t *pool = idx ? kr__pool(w, c, true) : NULL;
        if (!pool) return kr_last_status();
        const uint8_t *data = take(L, count, pool->size, "pool values");
        if (!data) return kr_last_status();
        if (check_bools(L, c, data, count, pool->size)) return kr_last_status();
        for (uint32_t k = 0; k < count; k++) {
            uint32_t ei = ld32(idx + (size_t)k * 4);
            kr_entity_t e = live_entity(L, ei, "sparse pool");
            if (!e) return kr_last_status();
            if (kr__sparse_slot(pool, ei) != KR__NONE) return bad(L, "entity %u twice in pool %u", ei, i);
            void *v = kr__sparse_add(w, pool, e);
            if (!v) return kr_last_status();
            if (pool->size) memcpy(v, data + (size_t)k * pool->size, pool->size);
            w->records[ei].flags |= KR__REC_SPARSE;
        }
    }
    return KR_OK;
}

/* Every entity's chain of parents ends: no cycle. Each node is walked over
 * once (MARK_PATH while on the current walk, MARK_ROOTED once known good). */
static kr_status_t check_acyclic(loader_t *L)
{
    const kr_world_t *w = L->w;
    for (uint32_t i = 0; i < w->record_count; i++) {
        uint32_t a = i;
        while (a != KR__NONE && (w->records[a].flags & KR__REC_TREE) && !(L->mark[a] & MARK_ROOTED)) {
            if (L->mark[a] & MARK_PATH) return bad(L, "the tree has a cycle through entity %u", a);
            L->mark[a] |= MARK_PATH;
            a = w->tree[a].parent;
        }
        for (a = i; a != KR__NONE && (w->records[a].flags & KR__REC_TREE) && !(L->mark[a] & MARK_ROOTED);
             a = w->tree[a].parent)
            L->mark[a] = (uint8_t)((L->mark[a] & ~MARK_PATH) | MARK_ROOTED);
    }
    return KR_OK;
}

static kr_status_t load_tree(loader_t *L)
{
    kr_world_t *w = L->w;
    uint32_t n;
    const uint8_t *parents = take_counted(L, &n, 8, "parents");
    if (!parents) return kr_last_status();
    const uint8_t *counts = parents + (size_t)n * 4;
    uint64_t total = 0;
    for (uint32_t k = 0; k < n; k++) total += ld32(counts + (size_t)k * 4);
    const uint8_t *kids = take(L, total, 4, "children");
    if (!kids) return kr_last_status();
    if (n && kr__tree_reserve(w)) return kr_last_status();
    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = ld32(parents + (size_t)k * 4), m = ld32(counts + (size_t)k * 4);
        if (!live_entity(L, p, "tree parent")) return kr_last_status();
        if (m == 0) return bad(L, "parent %u listed with no children", p);
        if (has_children(w, p)) return bad(L, "parent %u listed twice", p);
        for (uint32_t j = 0; j < m; j++, kids += 4) {
            uint32_t c = ld32(kids);
            if (!live_entity(L, c, "tree child")) return kr_last_status();
            if (c == p) return bad(L, "entity %u is its own child", c);
            if ((w->records[c].flags & KR__REC_TREE) && w->tree[c].parent != KR__NONE)
                return bad(L, "entity %u has two parents", c);
            if (kr__tree_link(w, c, p, KR__NONE)) return kr_last_status();
        }
    }
    return check_acyclic(L);
}

static kr_status_t load_names(loader_t *L)
{
    kr_world_t *w = L->w;
    uint32_t n;
    if (!take_u32(L, &n, "name count")) return kr_last_status();
    if (n > kr_reader_left(&L->r) / 9) return bad(L, "%u names", n);
    for (uint32_t k = 0; k < n; k++) {
        char *name = take_name(L, "entity name");
        if (!name) return kr_last_status();
        uint32_t m = 0;
        const uint8_t *ids = take_counted(L, &m, 4, "name holders");
        kr_status_t st = ids ? KR_OK : kr_last_status();
        if (!st && m == 0) st = bad(L, "name '%s' has no holder", name);
        if (!st && kr_entity_find(w, name)) st = bad(L, "name '%s' listed twice", name);
        for (uint32_t j = 0; j < m && !st; j++) {
            uint32_t idx = ld32(ids + (size_t)j * 4);
            kr_entity_t e = live_entity(L, idx, "name holder");
            if (!e) st = kr_last_status();
            else if (w->records[idx].flags & KR__REC_NAMED) st = bad(L, "entity %u has two names", idx);
            else st = kr_entity_set_name(w, e, name);
        }
        free(name);
        if (st) return st;
    }
    return KR_OK;
}

/* Puts the `count` members of cell (cx, cy) back, from the member arrays
 * (cursor *m), in their order: each insert appends to the cell. */
static kr_status_t load_cell(loader_t *L, int32_t cx, int32_t cy, uint32_t count, const uint8_t *idx,
                             const uint8_t *xs, const uint8_t *ys, uint32_t *m)
{
    kr_world_t *w = L->w;
    for (uint32_t k = 0; k < count; k++, (*m)++) {
        uint32_t i = ld32(idx + (size_t)*m * 4);
        double x = ldf64(xs + (size_t)*m * 8), y = ldf64(ys + (size_t)*m * 8);
        kr_entity_t e = live_entity(L, i, "spatial cell");
        if (!e) return kr_last_status();
        if (w->records[i].flags & KR__REC_SPATIAL) return bad(L, "entity %u is in two spatial cells", i);
        int32_t px, py;
        if (!kr__spatial_point_cell(&w->spatial, x, y, &px, &py) || px != cx || py != cy)
            return bad(L, "entity %u at (%g, %g) lies outside its cell (%d, %d)", i, x, y, cx, cy);
        kr_status_t st = kr_spatial_insert(w, e, x, y);
        if (st) return st;
    }
    return KR_OK;
}

/* Version 1's free cell records: checked, then forgotten (a table has none). */
static kr_status_t skip_free_cells(loader_t *L, uint32_t extra, const uint8_t *counts, uint32_t grid, uint32_t empty)
{
    uint32_t f;
    const uint8_t *list = take_counted(L, &f, 4, "free cells");
    if (!list) return kr_last_status();
    if (f != empty) return bad(L, "%u free spatial cells listed, %u are empty", f, empty);
    uint8_t *seen = calloc(extra ? extra : 1, 1);
    if (!seen) return kr__fail(KR_ERR_NOMEM, "world image: out of memory");
    kr_status_t st = KR_OK;
    for (uint32_t k = 0; k < f && !st; k++) {
        uint32_t c = ld32(list + (size_t)k * 4);
        if (c < grid || c - grid >= extra || ld32(counts + (size_t)c * 4))
            st = bad(L, "free spatial cell %u is not an empty cell beyond the grid", c);
        else if (seen[c - grid]++)
            st = bad(L, "free spatial cell %u listed twice", c);
    }
    free(seen);
    return st;
}

static kr_status_t load_spatial(loader_t *L)
{
    kr_world_t *w = L->w;
    kr__spatial_state_t *s = &w->spatial;
    bool v1 = L->version == 1;
    const uint8_t *h = take(L, 1, 28, "spatial header");
    if (!h) return kr_last_status();
    double size = ldf64(h);
    int32_t gx0 = (int32_t)ld32(h + 8), gy0 = (int32_t)ld32(h + 12);
    uint32_t gw = ld32(h + 16), gh = ld32(h + 20), n = ld32(h + 24);
    if (!(size > 0) || size > 1e300) return bad(L, "spatial cell size %g", size);
    if (!gw != !gh) return bad(L, "spatial grid of %u x %u cells", gw, gh);
    if (v1 && (uint64_t)gw * gh > n) return bad(L, "%u spatial cells, fewer than the grid's %u x %u", n, gw, gh);
    /* every grid cell has its count in the image: a grid larger than what
     * is left cannot be one, and is not allocated (64 bytes a cell) */
    if ((uint64_t)gw * gh > kr_reader_left(&L->r) / 4) return bad(L, "truncated spatial grid (%u x %u)", gw, gh);
    kr__spatial_fini(s);
    if (kr__spatial_init_grid(s, size, gx0, gy0, gw, gh)) return bad(L, "%s", kr_last_error());
    uint32_t grid = s->grid_cells, extra = v1 ? n - grid : n;
    if ((uint64_t)grid + extra > kr_reader_left(&L->r) / 4) return bad(L, "truncated spatial cells (%u)", n);
    const uint8_t *cxs = take(L, extra, 8, "spatial cell coordinates");
    const uint8_t *counts = cxs ? take(L, (uint64_t)grid + extra, 4, "spatial cell counts") : NULL;
    if (!counts) return kr_last_status();
    const uint8_t *cys = cxs + (size_t)extra * 4;
    uint64_t total = 0;
    for (uint32_t c = 0; c < grid + extra; c++) total += ld32(counts + (size_t)c * 4);
    if (total > w->live) return bad(L, "%llu spatial members, %zu live entities", (unsigned long long)total, w->live);
    const uint8_t *idx = take(L, total, 20, "spatial members");
    if (!idx) return kr_last_status();
    const uint8_t *xs = idx + total * 4, *ys = xs + total * 8;
    uint32_t m = 0, empty = 0;
    uint64_t previous = 0;
    for (uint32_t c = 0; c < grid + extra; c++) {
        uint32_t count = ld32(counts + (size_t)c * 4);
        int32_t cx, cy;
        if (c < grid) {
            cx = gx0 + (int32_t)(c % gw);
            cy = gy0 + (int32_t)(c / gw);
        } else {
            cx = (int32_t)ld32(cxs + (size_t)(c - grid) * 4);
            cy = (int32_t)ld32(cys + (size_t)(c - grid) * 4);
            if ((uint32_t)cx - (uint32_t)gx0 < gw && (uint32_t)cy - (uint32_t)gy0 < gh)
                return bad(L, "spatial cell %u lies inside the grid", c);
            if (!count && v1) {
                empty++;
                continue;
            }
            if (!count) return bad(L, "spatial cell (%d, %d) is listed without members", cx, cy);
            /* Version 2 lists cells in (cy, cx) order, which rules out twins. */
            if (v1 ? kr__spatial_find(s, cx, cy) != KR__NONE : c > grid && kr__cell_order_key(cx, cy) <= previous)
                return bad(L, "spatial cell (%d, %d) appears twice or out of order", cx, cy);
            previous = kr__cell_order_key(cx, cy);
        }
        if (load_cell(L, cx, cy, count, idx, xs, ys, &m)) return kr_last_status();
    }
    return v1 ? skip_free_cells(L, extra, counts, grid, empty) : KR_OK;
}

/* Back to a world with no entity, no table but the empty one, no pool, no
 * name, no grid: what a corrupt image leaves. Frees without callbacks, so
 * every entity must already be destroyed, or hold no state that owns memory. */
static void reset(kr_world_t *w)
{
    for (uint32_t t = 1; t < w->table_count; t++) {
        kr__hmap_remove(&w->table_map, w->tables[t]->hash, t);
        kr__table_free(w->tables[t]);
    }
    w->table_count = 1;
    kr__table_t *empty = w->tables[0];
    empty->count = empty->hole_count = 0;
    empty->dirty = empty->sweep = false;
    if (empty->edge_size) {
        memset(empty->add_edge, 0xff, empty->edge_size * sizeof *empty->add_edge);
        memset(empty->remove_edge, 0xff, empty->edge_size * sizeof *empty->remove_edge);
    }
    w->dirty_count = 0;
    kr__names_fini(w);
    w->names = NULL;
    w->names_capacity = 0;
    kr__hmap_init(&w->name_map);
    double size = w->spatial.cell_size;
    kr__spatial_fini(&w->spatial);
    kr__spatial_init_grid(&w->spatial, size, 0, 0, 0, 0);
    kr__sparse_fini(w);
    w->pools = NULL;
    w->pool_ids = NULL;
    w->pool_slots = w->pool_count = 0;
    free(w->tree);
    w->tree = NULL;
    w->tree_capacity = 0;
    w->record_count = 0;
    w->free_head = KR__NONE;
    w->live = 0;
    w->note_head = w->note_count = 0;
}

/* Destroys every entity with the usual callbacks (roots first, as
 * kr_world_destroy does); callbacks that create entities get a few rounds. */
static void destroy_all(kr_world_t *w)
{
    for (int round = 0; w->live && round < 8; round++)
        for (uint32_t i = 0; i < w->record_count; i++) {
            kr__record_t *r = &w->records[i];
            if (!(r->flags & KR__REC_ALIVE) || (r->flags & KR__REC_DYING)) continue;
            if ((r->flags & KR__REC_TREE) && w->tree[i].parent != KR__NONE) continue;
            kr_entity_destroy(w, kr_entity_make(i, r->generation));
        }
}

/* Behaviors with serialize, in loading mode, once the whole structure stands. */
static kr_status_t load_behaviors(loader_t *L)
{
    kr_world_t *w = L->w;
    for (uint32_t b = 0; b < L->block_count; b++) {
        const serialized_block_t *blk = &L->blocks[b];
        const kr_component_info_t *info = &kr__registry_entry(w->registry, blk->component)->info;
        const uint8_t *data = blk->data;
        for (uint32_t row = 0; row < blk->rows; row++) {
            kr_entity_t e = L->block_entities[blk->first + row];
            uint32_t len = ld32(blk->lengths + (size_t)row * 4);
            void *state = kr_component_get(w, e, blk->component);
            if (!state)
                return kr__fail(KR_ERR_STATE, "world image: a serialize callback changed entity %u", kr_entity_index(e));
            kr_reader_t br;
            kr_reader_init(&br, data, len);
            kr_serializer_t s;
            kr__serializer_checkpoint_loader(&s, &br);
            kr_status_t st = info->vtbl->serialize(w, e, state, &s);
            if (!st) st = s.status;
            if (!st && br.pos != br.len)
                st = kr__fail(KR_ERR_CORRUPT, "state is %u bytes, serialize read %zu", len, br.pos);
            if (st)
                return kr__fail(st, "world image: loading '%s' of entity %u failed: %s", info->name,
                                kr_entity_index(e), kr_last_error());
            data += len;
        }
    }
    return KR_OK;
}

/* on_awake, then on_start, for every entity that had started. */
static kr_status_t restart_behaviors(kr_world_t *w)
{
    size_t n = 0;
    for (uint32_t i = 0; i < w->record_count; i++) n += (w->records[i].flags & KR__REC_STARTED) != 0;
    if (!n) return KR_OK;
    kr_entity_t *ids = malloc(n * sizeof *ids);
    if (!ids) return kr__fail(KR_ERR_NOMEM, "world image: out of memory");
    n = 0;
    for (uint32_t i = 0; i < w->record_count; i++)
        if (w->records[i].flags & KR__REC_STARTED) ids[n++] = kr_entity_make(i, w->records[i].generation);
    size_t live = w->live;
    for (size_t i = 0; i < n; i++) kr__behaviors_fire(w, ids[i], KR__CB_AWAKE, 0);
    for (size_t i = 0; i < n; i++) kr__behaviors_fire(w, ids[i], KR__CB_START, 0);
    free(ids);
    /* relinking only: the image holds every entity there is */
    if (w->live != live)
        return kr__fail(KR_ERR_STATE, "world image: on_awake or on_start created or destroyed entities while the "
                        "world was restored (it holds every entity already)");
    return KR_OK;
}

static kr_status_t load_structure(loader_t *L)
{
    uint32_t magic, version;
    if (!take_u32(L, &magic, "header") || !take_u32(L, &version, "header")) return kr_last_status();
    if (magic != IMAGE_MAGIC) return bad(L, "not a kairos world image (bad magic)");
    if (version < IMAGE_VERSION_OLDEST || version > IMAGE_VERSION)
        return kr__fail(KR_ERR_MISMATCH, "world image: version %u, this build reads %u to %u", version,
                        IMAGE_VERSION_OLDEST, IMAGE_VERSION);
    L->version = version;
    kr_status_t st = load_components(L);
    st = st ? st : load_records(L);
    st = st ? st : load_tables(L);
    st = st ? st : load_sparse(L);
    st = st ? st : load_tree(L);
    st = st ? st : load_names(L);
    st = st ? st : load_spatial(L);
    if (!st && kr_reader_left(&L->r)) st = bad(L, "%zu trailing bytes", kr_reader_left(&L->r));
    return st;
}

kr_status_t kr__world_image_clear(kr_world_t *w)
{
    if (busy(w)) return kr__fail(KR_ERR_STATE, "kr__world_image_clear: a pass, scan, creation or channel call is under way");
    destroy_all(w);
    return KR_OK;
}

kr_status_t kr__world_image_load(kr_world_t *w, const void *data, size_t len)
{
    if (!w || (!data && len)) return kr__fail(KR_ERR_INVALID_ARG, "kr__world_image_load: null %s", w ? "data" : "world");
    if (busy(w)) return kr__fail(KR_ERR_STATE, "kr__world_image_load: a pass, scan, creation or channel call is under way");
    destroy_all(w);
    reset(w);
    loader_t L = { .w = w };
    kr_reader_init(&L.r, data, len);
    kr_status_t st = load_structure(&L);
    bool structure = !st;
    if (!st) st = load_behaviors(&L);
    free(L.comp);
    free(L.kind);
    free(L.mark);
    free(L.blocks);
    free(L.block_entities);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kr_last_error());
        /* Behaviors loaded so far may own memory: their on_destroy frees it. */
        if (structure) destroy_all(w);
        reset(w);
        return kr__fail(st, "%s", msg);
    }
    return restart_behaviors(w);
}
