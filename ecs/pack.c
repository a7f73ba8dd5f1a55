/* Packing entity subtrees into bytes and recreating them elsewhere.
 *
 * Layout (little-endian):
 *   header: magic "KRPK" u32, version u32, registry hash u64, total bytes u64,
 *           root count u32, entity count u32
 *   entity (pre-order over each root's subtree):
 *           parent u32 (index within the pack, or KR__NONE for a root),
 *           old id u64, flags u8 (1 named, 2 spatial),
 *           [name length u32, bytes], [x f64, y f64],
 *           component count u32, then per component: id u32, length u32, bytes
 * Data components are their raw bytes with entity fields rewritten as
 * references (0 = invalid, k + 1 = the pack's k-th entity); behaviors are
 * whatever their serialize callback wrote (raw state without one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "ecs/serializer_private.h"
#include "ecs/world_private.h"

#define PACK_MAGIC 0x4b50524bu /* "KRPK" */
#define PACK_VERSION 1u
#define PACK_HEADER 32u
#define PACK_NAMED 1u
#define PACK_SPATIAL 2u
#define PACK_MAX_NAME (1u << 20)

/* ---- entity references while packing --------------------------------- */

static kr_status_t scratch_begin(kr_world_t *w)
{
    if (w->scratch_capacity < w->record_count) {
        uint64_t *s = realloc(w->scratch, (size_t)w->record_capacity * sizeof *s);
        if (!s) return kr__fail(KR_ERR_NOMEM, "kr_pack: out of memory");
        memset(s + w->scratch_capacity, 0, (size_t)(w->record_capacity - w->scratch_capacity) * sizeof *s);
        w->scratch = s;
        w->scratch_capacity = w->record_capacity;
    }
    if (++w->scratch_epoch == 0) {
        memset(w->scratch, 0, (size_t)w->scratch_capacity * sizeof *w->scratch);
        w->scratch_epoch = 1;
    }
    return KR_OK;
}

static bool scratch_get(const kr_world_t *w, uint32_t idx, uint32_t *local)
{
    uint64_t v = w->scratch[idx];
    if ((uint32_t)(v >> 32) != w->scratch_epoch) return false;
    *local = (uint32_t)v;
    return true;
}

static uint64_t ref_save(void *ctx, kr_entity_t e)
{
    kr_world_t *w = ctx;
    uint32_t local;
    if (!kr_entity_alive(w, e) || !scratch_get(w, kr_entity_index(e), &local)) return 0;
    return (uint64_t)local + 1;
}

typedef struct load_ctx {
    const kr_entity_t *ids;
    uint32_t count;
} load_ctx_t;

static kr_entity_t ref_load(void *ctx, uint64_t ref, bool *ok)
{
    const load_ctx_t *l = ctx;
    if (ref > l->count) {
        *ok = false;
        return KR_ENTITY_INVALID;
    }
    return ref ? l->ids[ref - 1] : KR_ENTITY_INVALID;
}

static int cmp_component(const void *a, const void *b)
{
    kr_component_t x = *(const kr_component_t *)a, y = *(const kr_component_t *)b;
    return x < y ? -1 : x > y;
}

/* Rewrites every entity field of a data component in place, in either direction. */
static bool remap_fields(const kr_component_info_t *info, uint8_t *bytes,
                         uint64_t (*save)(void *, kr_entity_t), kr__ref_load_fn load, void *ctx)
{
    for (size_t f = 0; f < info->field_count; f++) {
        const kr_field_t *fd = &info->fields[f];
        if (fd->type != KR_FIELD_ENTITY) continue;
        for (uint32_t k = 0; k < fd->count; k++) {
            uint8_t *p = bytes + fd->offset + k * sizeof(kr_entity_t);
            uint64_t v;
            memcpy(&v, p, sizeof v);
            if (save) {
                v = save(ctx, v);
            } else {
                bool ok = true;
                v = load(ctx, v, &ok);
                if (!ok) return false;
            }
            memcpy(p, &v, sizeof v);
        }
    }
    return true;
}

/* ---- pack -------------------------------------------------------------- */

/* Visits a subtree in pre-order without a stack, giving each entity the
 * next local index; fails if an entity was already taken (overlap). */
static kr_status_t number_subtree(kr_world_t *w, uint32_t root, uint32_t **order, uint32_t *n,
                                  uint32_t *cap)
{
    uint32_t cur = root;
    for (;;) {
        uint32_t seen;
        if (scratch_get(w, cur, &seen))
            return kr__fail(KR_ERR_INVALID_ARG,
                            "kr_pack: entity %u is packed twice (a root given twice, or inside another root's subtree)",
                            cur);
        if (*n == *cap && KR__GROW_U32(*order, *cap, *n + 1, 64, "kr_pack")) return kr_last_status();
        w->scratch[cur] = ((uint64_t)w->scratch_epoch << 32) | *n;
        (*order)[(*n)++] = cur;
        uint32_t next = kr__tree_field(w, cur, offsetof(kr__tree_t, first_child));
        while (next == KR__NONE && cur != root) {
            next = kr__tree_field(w, cur, offsetof(kr__tree_t, next));
            if (next == KR__NONE) cur = kr__tree_field(w, cur, offsetof(kr__tree_t, parent));
        }
        if (next == KR__NONE) return KR_OK;
        cur = next;
    }
}

static kr_status_t write_entity(kr_world_t *w, uint32_t idx, kr_buf_t *out, uint32_t parent_local)
{
    kr__record_t *r = &w->records[idx];
    kr_entity_t e = kr_entity_make(idx, r->generation);
    kr_status_t st = kr_buf_put_u32(out, parent_local);
    st = st ? st : kr_buf_put_u64(out, e);
    uint8_t flags = (r->flags & KR__REC_NAMED ? PACK_NAMED : 0) | (r->flags & KR__REC_SPATIAL ? PACK_SPATIAL : 0);
    st = st ? st : kr_buf_put_u8(out, flags);
    if (!st && (flags & PACK_NAMED)) {
        size_t len = strlen(w->names[idx].str);
        /* kr_unpack refuses longer names: never write a pack nobody can read. */
        if (len > PACK_MAX_NAME)
            return kr__fail(KR_ERR_INVALID_ARG, "kr_pack: entity %u has a name of %zu bytes (at most %u)", idx,
                            len, PACK_MAX_NAME);
        st = kr_buf_put_u32(out, (uint32_t)len);
        st = st ? st : kr_buf_append(out, w->names[idx].str, len);
    }
    if (!st && (flags & PACK_SPATIAL)) {
        st = kr_buf_put_f64(out, w->spatial.entries[idx].x);
        st = st ? st : kr_buf_put_f64(out, w->spatial.entries[idx].y);
    }
    /* Every component in ascending id order: the table's (sorted) merged
     * with the sparse ones the entity holds. */
    kr__table_t *t = w->tables[r->table];
    uint32_t n = t->type_count, ns = 0;
    kr_component_t small[32], *ids = small;
    uint32_t room = n + ((r->flags & KR__REC_SPARSE) ? w->pool_count : 0);
    if (room > 32 && !(ids = malloc(room * sizeof *ids))) return kr__fail(KR_ERR_NOMEM, "kr_pack: out of memory");
    if (r->flags & KR__REC_SPARSE) {
        for (uint32_t i = 0; i < w->pool_count; i++)
            if (kr__sparse_slot(w->pools[w->pool_ids[i]], idx) != KR__NONE) ids[n + ns++] = w->pool_ids[i];
    }
    memcpy(ids, t->types, n * sizeof *ids);
    n += ns;
    if (ns) qsort(ids, n, sizeof *ids, cmp_component);
    st = st ? st : kr_buf_put_u32(out, n);
    for (uint32_t i = 0; i < n && !st; i++) {
        const kr_component_info_t *info = &kr__registry_entry(w->registry, ids[i])->info;
        st = kr_buf_put_u32(out, ids[i]);
        size_t len_at = out->len;
        st = st ? st : kr_buf_put_u32(out, 0);
        if (st) break;
        size_t start = out->len;
        /* Looked up each time: the value must not be read through a pointer
         * that outlived a reallocation. */
        void *data = kr_component_get(w, e, ids[i]);
        if (info->vtbl && info->vtbl->serialize) {
            kr_serializer_t s;
            kr__serializer_saver(&s, out, ref_save, w);
            st = info->vtbl->serialize(w, e, data, &s);
            if (!st) st = s.status;
            if (st) kr__fail(st, "kr_pack: serialize of '%s' on entity %u failed: %s", info->name, idx,
                             kr_last_error());
        } else if (info->size) {
            st = kr_buf_append(out, data, info->size);
            if (!st && !info->vtbl) remap_fields(info, out->data + start, ref_save, NULL, w);
        }
        if (st) break;
        size_t len = out->len - start;
        if (len > UINT32_MAX) {
            st = kr__fail(KR_ERR_INVALID_ARG, "kr_pack: component state over 4 GiB");
            break;
        }
        for (int b = 0; b < 4; b++) out->data[len_at + b] = (uint8_t)(len >> (8 * b));
    }
    if (ids != small) free(ids);
    return st;
}

kr_status_t kr_pack(kr_world_t *w, const kr_entity_t *roots, size_t count, kr_buf_t *out)
{
    if (!w || !out || (count && !roots))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_pack: null %s", !w ? "world" : !out ? "buffer" : "roots");
    if (count > UINT32_MAX) return kr__fail(KR_ERR_INVALID_ARG, "kr_pack: too many roots");
    for (size_t i = 0; i < count; i++)
        if (!kr__live(w, roots[i], "kr_pack")) return kr_last_status();
    if (scratch_begin(w)) return kr_last_status();
    uint32_t *order = NULL, n = 0, cap = 0;
    kr_status_t st = KR_OK;
    for (size_t i = 0; i < count && !st; i++) st = number_subtree(w, kr_entity_index(roots[i]), &order, &n, &cap);
    size_t start = out->len;
    if (!st) {
        st = kr_buf_put_u32(out, PACK_MAGIC);
        st = st ? st : kr_buf_put_u32(out, PACK_VERSION);
        st = st ? st : kr_buf_put_u64(out, kr_registry_hash(w->registry));
        st = st ? st : kr_buf_put_u64(out, 0); /* total, patched below */
        st = st ? st : kr_buf_put_u32(out, (uint32_t)count);
        st = st ? st : kr_buf_put_u32(out, n);
    }
    for (uint32_t k = 0; k < n && !st; k++) {
        uint32_t idx = order[k];
        uint32_t parent = KR__NONE, local;
        uint32_t p = kr__tree_field(w, idx, offsetof(kr__tree_t, parent));
        if (p != KR__NONE && scratch_get(w, p, &local) && local < k) parent = local;
        /* A root whose real parent is outside the pack is written as a root. */
        st = write_entity(w, idx, out, parent);
    }
    free(order);
    if (st) {
        out->len = start; /* leave nothing that looks like a pack */
        return st;
    }
    uint64_t total = out->len - start;
    for (int b = 0; b < 8; b++) out->data[start + 16 + b] = (uint8_t)(total >> (8 * b));
    return KR_OK;
}

/* ---- unpack ------------------------------------------------------------ */

typedef struct parsed_entity {
    uint32_t parent;
    kr_entity_t old_id;
    uint8_t flags;
    const char *name;
    uint32_t name_len;
    double x, y;
    uint32_t component_count;
    size_t components_at;   /* reader offset of the component list */
} parsed_entity_t;

static kr_status_t corrupt(const char *what, size_t at)
{
    return kr__fail(KR_ERR_CORRUPT, "kr_unpack: corrupt pack at byte %zu: %s", at, what);
}

/* Pass 1: checks the whole pack without touching the world. */
static kr_status_t parse(const kr_world_t *w, kr_reader_t *r, uint32_t roots, uint32_t n,
                         parsed_entity_t *ents)
{
    uint32_t seen_roots = 0;
    for (uint32_t k = 0; k < n; k++) {
        parsed_entity_t *p = &ents[k];
        size_t at = r->pos;
        p->parent = kr_reader_u32(r);
        p->old_id = kr_reader_u64(r);
        p->flags = kr_reader_u8(r);
        if (r->failed) return corrupt("truncated entity header", at);
        if (p->parent == KR__NONE) seen_roots++;
        else if (p->parent >= k) return corrupt("parent index does not precede its child", at);
        if (p->flags & ~(PACK_NAMED | PACK_SPATIAL)) return corrupt("unknown entity flags", at);
        if (p->flags & PACK_NAMED) {
            p->name_len = kr_reader_u32(r);
            if (p->name_len == 0 || p->name_len > PACK_MAX_NAME) return corrupt("bad name length", at);
            p->name = kr_reader_view(r, p->name_len);
            if (!p->name) return corrupt("truncated name", at);
            if (memchr(p->name, 0, p->name_len)) return corrupt("name holds a NUL byte", at);
        }
        if (p->flags & PACK_SPATIAL) {
            p->x = kr_reader_f64(r);
            p->y = kr_reader_f64(r);
        }
        p->component_count = kr_reader_u32(r);
        if (r->failed) return corrupt("truncated entity", at);
        if (p->component_count > INT16_MAX || p->component_count > kr_reader_left(r) / 8)
            return corrupt("bad component count", at);
        p->components_at = r->pos;
        kr_component_t prev = 0;
        for (uint32_t c = 0; c < p->component_count; c++) {
            size_t cat = r->pos;
            kr_component_t id = kr_reader_u32(r);
            uint32_t len = kr_reader_u32(r);
            if (r->failed) return corrupt("truncated component header", cat);
            const kr__registry_entry_t *e = kr__registry_entry(w->registry, id);
            if (!e) return corrupt("unregistered component id", cat);
            if (id <= prev) return corrupt("components out of order or repeated", cat);
            prev = id;
            bool raw = !e->info.vtbl || !e->info.vtbl->serialize;
            if (raw && len != e->info.size) return corrupt("component size differs from the registry", cat);
            const uint8_t *bytes = kr_reader_view(r, len);
            if (!bytes) return corrupt("truncated component data", cat);
            if (!e->info.vtbl) {
                for (size_t f = 0; f < e->info.field_count; f++) {
                    const kr_field_t *fd = &e->info.fields[f];
                    if (fd->type != KR_FIELD_ENTITY) continue;
                    for (uint32_t q = 0; q < fd->count; q++) {
                        uint64_t ref;
                        memcpy(&ref, bytes + fd->offset + q * sizeof ref, sizeof ref);
                        if (ref > n) return corrupt("entity reference out of range", cat);
                    }
                }
            }
        }
    }
    if (seen_roots != roots) return corrupt("root count does not match", PACK_HEADER);
    return KR_OK;
}

kr_status_t kr_unpack(kr_world_t *w, const void *data, size_t len, const kr_unpack_desc_t *desc,
                      size_t *root_count, size_t *used)
{
    if (!w || !data) return kr__fail(KR_ERR_INVALID_ARG, "kr_unpack: null %s", w ? "data" : "world");
    if (kr__structure_locked(w, "kr_unpack")) return KR_ERR_LOCKED;
    kr_reader_t r;
    kr_reader_init(&r, data, len);
    uint32_t magic = kr_reader_u32(&r), version = kr_reader_u32(&r);
    uint64_t hash = kr_reader_u64(&r), total = kr_reader_u64(&r);
    uint32_t roots = kr_reader_u32(&r), n = kr_reader_u32(&r);
    if (r.failed) return corrupt("truncated header", 0);
    if (magic != PACK_MAGIC) return corrupt("not a kairos pack (bad magic)", 0);
    if (version != PACK_VERSION)
        return kr__fail(KR_ERR_MISMATCH, "kr_unpack: pack version %u, this build reads %u", version, PACK_VERSION);
    if (hash != kr_registry_hash(w->registry))
        return kr__fail(KR_ERR_MISMATCH, "kr_unpack: the pack was made with a different component registry");
    if (total < PACK_HEADER || total > len) return corrupt("total size exceeds the data", 16);
    if (roots > n || n > (total - PACK_HEADER) / 17) return corrupt("bad entity or root count", 24);
    r.len = (size_t)total; /* never read into whatever follows this pack */

    parsed_entity_t *ents = calloc(n ? n : 1, sizeof *ents);
    kr_entity_t *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ents || !ids) {
        free(ents);
        free(ids);
        return kr__fail(KR_ERR_NOMEM, "kr_unpack: out of memory for %u entities", n);
    }
    kr_status_t st = parse(w, &r, roots, n, ents);
    if (!st && r.pos != r.len) st = corrupt("trailing bytes inside the pack", r.pos);

    /* Pass 2a: create every entity with its component set (on_creation fires). */
    kr_component_t *types = NULL;
    for (uint32_t k = 0; k < n && !st; k++) {
        parsed_entity_t *p = &ents[k];
        kr_reader_t cr;
        kr_reader_init(&cr, (const uint8_t *)data + p->components_at, r.len - p->components_at);
        kr_component_t *t = realloc(types, (p->component_count ? p->component_count : 1) * sizeof *t);
        if (!t) {
            st = kr__fail(KR_ERR_NOMEM, "kr_unpack: out of memory");
            break;
        }
        types = t;
        for (uint32_t c = 0; c < p->component_count; c++) {
            types[c] = kr_reader_u32(&cr);
            kr_reader_view(&cr, kr_reader_u32(&cr));
        }
        ids[k] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = types,
                                                                .component_count = p->component_count });
        if (!ids[k]) st = kr_last_status() ? kr_last_status() : KR_ERR_STATE;
    }
    free(types);
    /* A later on_creation may have destroyed an earlier entity of the pack. */
    for (uint32_t k = 0; k < n && !st; k++)
        if (!kr_entity_alive(w, ids[k]))
            st = kr__fail(KR_ERR_STATE, "kr_unpack: a callback destroyed entity %u of the pack", k);

    /* Pass 2b: links, names, positions, then component contents. */
    load_ctx_t lctx = { ids, n };
    for (uint32_t k = 0; k < n && !st; k++) {
        parsed_entity_t *p = &ents[k];
        uint32_t idx = kr_entity_index(ids[k]);
        if (p->parent != KR__NONE) st = kr__tree_link(w, idx, kr_entity_index(ids[p->parent]), KR__NONE);
        if (!st && (p->flags & PACK_NAMED)) {
            char *name = malloc(p->name_len + 1);
            if (!name) {
                st = kr__fail(KR_ERR_NOMEM, "kr_unpack: out of memory");
                break;
            }
            memcpy(name, p->name, p->name_len);
            name[p->name_len] = '\0';
            st = kr_entity_set_name(w, ids[k], name);
            free(name);
        }
        if (!st && (p->flags & PACK_SPATIAL)) st = kr_spatial_insert(w, ids[k], p->x, p->y);
    }
    for (uint32_t k = 0; k < n && !st; k++) {
        parsed_entity_t *p = &ents[k];
        kr_reader_t cr;
        kr_reader_init(&cr, (const uint8_t *)data + p->components_at, r.len - p->components_at);
        for (uint32_t c = 0; c < p->component_count && !st; c++) {
            kr_component_t id = kr_reader_u32(&cr);
            uint32_t clen = kr_reader_u32(&cr);
            const uint8_t *bytes = kr_reader_view(&cr, clen);
            const kr_component_info_t *info = &kr__registry_entry(w->registry, id)->info;
            void *dst = kr_component_get(w, ids[k], id);
            if (!dst) {
                st = kr__fail(KR_ERR_STALE_ENTITY, "kr_unpack: a callback destroyed entity %u of the pack", k);
                break;
            }
            if (info->vtbl && info->vtbl->serialize) {
                kr_reader_t br;
                kr_reader_init(&br, bytes, clen);
                kr_serializer_t s;
                kr__serializer_loader(&s, &br, ref_load, &lctx);
                st = info->vtbl->serialize(w, ids[k], dst, &s);
                if (!st) st = s.status;
                if (!st && br.pos != br.len) st = corrupt("behavior state longer than its serialize reads", p->components_at);
                if (st) kr__fail(st, "kr_unpack: loading '%s' failed: %s", info->name, kr_last_error());
            } else if (info->size) {
                memcpy(dst, bytes, info->size);
                if (!info->vtbl) remap_fields(info, dst, NULL, ref_load, &lctx);
            }
        }
    }
    if (!st && desc && desc->notify_move)
        for (uint32_t k = 0; k < n; k++) kr__behaviors_fire(w, ids[k], KR__CB_SUBMODEL_MOVE, ents[k].old_id);

    if (st) {
        /* Nothing half-made stays behind: destroy what pass 2 created. */
        kr_status_t keep = st;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", kr_last_error());
        for (uint32_t k = n; k-- > 0;)
            if (ids[k] && kr_entity_alive(w, ids[k]) && !kr_entity_parent(w, ids[k])) kr_entity_destroy(w, ids[k]);
        free(ents);
        free(ids);
        return kr__fail(keep, "%s", msg);
    }
    size_t out_roots = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (ents[k].parent != KR__NONE) continue;
        if (desc && desc->roots && out_roots < desc->roots_capacity) desc->roots[out_roots] = ids[k];
        out_roots++;
    }
    if (root_count) *root_count = out_roots;
    if (used) *used = (size_t)total;
    free(ents);
    free(ids);
    return KR_OK;
}
