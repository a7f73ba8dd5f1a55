/* Digests of worlds (kairos/digest.h), from field metadata alone: no
 * entity id, no address and no padding byte enters a hash, and a world's
 * digest is a sum over entities, so it depends neither on their order nor
 * on which rank or table holds them.
 *
 * An entity's own hash is built from one hash per component it has, added
 * up (so the components' order, table or sparse pool, does not matter):
 * the component's name and its described fields, references counted as
 * set or not. A world's digest adds, per entity, its own hash mixed, and
 * per reference (fields, parent) the referring and referenced entities'
 * own hashes mixed with where the reference sits. It is computed table by
 * table and pool by pool into an array by entity index, each component's
 * name hashed once, then references are followed through that array: a
 * few instructions per component value, which matters for worlds of
 * millions of agents. */
#include <stdlib.h>
#include <string.h>
#include "kairos/digest.h"
#include "ecs/world_private.h"

uint64_t kr_digest_mix(uint64_t x) { return kr__mix64(x); }

/* One value into a running hash: a multiply and a shift per field (a
 * component's hash is mixed fully once, at its end), since worlds of
 * millions of agents are digested at the end of every run. */
static uint64_t add(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static uint64_t bits(const char *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n);
    return v;
}

/* What a reference counts as in an entity's own hash. */
#define SET_REFERENCE 0x5e7u
#define NO_REFERENCE 0x5eedu

/* One component value's part of its entity's own hash. */
static uint64_t component_hash(const kr__registry_entry_t *e, uint64_t name_hash, const char *v)
{
    uint64_t h = name_hash;
    for (size_t i = 0; !e->info.vtbl && i < e->info.field_count; i++) {
        const kr_field_t *f = &e->info.fields[i];
        for (uint32_t k = 0; k < f->count; k++) {
            switch (f->type) {
            case KR_FIELD_BOOL: case KR_FIELD_I8: case KR_FIELD_U8: h = add(h, bits(v + f->offset + k, 1)); break;
            case KR_FIELD_I16: case KR_FIELD_U16: h = add(h, bits(v + f->offset + 2 * k, 2)); break;
            case KR_FIELD_I32: case KR_FIELD_U32: case KR_FIELD_F32: h = add(h, bits(v + f->offset + 4 * k, 4)); break;
            case KR_FIELD_I64: case KR_FIELD_U64: case KR_FIELD_F64: h = add(h, bits(v + f->offset + 8 * k, 8)); break;
            case KR_FIELD_ENTITY: {
                kr_entity_t r;
                memcpy(&r, v + f->offset + k * sizeof r, sizeof r);
                h = add(h, r == KR_ENTITY_INVALID ? NO_REFERENCE : SET_REFERENCE);
                break;
            }
            default: break; /* slots live in simulator state only */
            }
        }
    }
    return kr__mix64(h);
}

static uint64_t name_hash(const kr__registry_entry_t *e)
{
    return kr__hash_bytes(e->info.name, strlen(e->info.name), 0x636f6d70ULL);
}

static bool has_references(const kr__registry_entry_t *e)
{
    for (size_t i = 0; !e->info.vtbl && i < e->info.field_count; i++)
        if (e->info.fields[i].type == KR_FIELD_ENTITY) return true;
    return false;
}

static bool counts(const kr_world_t *w, uint32_t idx)
{
    uint32_t flags = w->records[idx].flags;
    return (flags & KR__REC_ALIVE) && !(flags & KR__REC_DYING);
}

/* The own hash from the sum of an entity's component hashes. */
/* Its parent; only entities in a tree (a record flag) have one. */
static kr_entity_t parent_of(kr_world_t *w, uint32_t idx)
{
    return (w->records[idx].flags & KR__REC_TREE) ? kr_entity_parent(w, kr__id_of(w, idx)) : KR_ENTITY_INVALID;
}

static uint64_t own_of(kr_world_t *w, uint32_t idx, uint64_t components)
{
    bool parent = parent_of(w, idx) != KR_ENTITY_INVALID;
    return kr__mix64(components + (parent ? 0x706172ULL : 0));
}

/* Calls fn for every component value of the world (with only_refs, of
 * components with entity fields): tables, then pools. */
typedef void (*visit_fn)(void *arg, uint32_t idx, const kr__registry_entry_t *e, kr_component_t c, const char *v);

static void visit_all(kr_world_t *w, visit_fn fn, void *arg, bool only_refs)
{
    for (uint32_t t = 0; t < w->table_count; t++) {
        const kr__table_t *tab = kr__table(w, t);
        for (uint32_t col = 0; col < tab->type_count; col++) {
            kr_component_t c = tab->types[col];
            const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
            if (e && only_refs && !has_references(e)) continue;
            for (uint32_t row = 0; e && row < tab->count; row++) {
                kr_entity_t ent = tab->entities[row];
                if (ent == KR_ENTITY_INVALID || !counts(w, kr_entity_index(ent))) continue;
                fn(arg, kr_entity_index(ent), e, c, kr__column_ptr(tab, col, row));
            }
        }
    }
    for (uint32_t i = 0; i < w->pool_count; i++) {
        kr_component_t c = w->pool_ids[i];
        const kr__sparse_pool_t *p = w->pools[c];
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
        if (e && only_refs && !has_references(e)) continue;
        for (uint32_t slot = 0; e && slot < p->count; slot++) {
            uint32_t idx = kr_entity_index(p->entities[slot]);
            if (counts(w, idx)) fn(arg, idx, e, c, kr__sparse_value(p, slot));
        }
    }
}

/* ---- one entity ---- */

uint64_t kr_entity_digest(kr_world_t *w, kr_entity_t ent)
{
    if (!w || !kr_entity_alive(w, ent)) return 0;
    uint32_t idx = kr_entity_index(ent);
    uint64_t sum = 0;
    const kr__table_t *tab = kr__table(w, w->records[idx].table);
    for (uint32_t col = 0; col < tab->type_count; col++) {
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, tab->types[col]);
        if (e) sum += component_hash(e, name_hash(e), kr__column_ptr(tab, col, w->records[idx].row));
    }
    for (uint32_t i = 0; i < w->pool_count; i++) {
        const kr__sparse_pool_t *p = w->pools[w->pool_ids[i]];
        uint32_t slot = kr__sparse_slot(p, idx);
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, w->pool_ids[i]);
        if (slot != KR__NONE && e) sum += component_hash(e, name_hash(e), kr__sparse_value(p, slot));
    }
    return own_of(w, idx, sum);
}

/* ---- a whole world ---- */

/* The arrays make a world's digest linear in its component values; when
 * they cannot be had (out of memory) the same hashes are computed entity
 * by entity instead, slower. */
typedef struct pass {
    kr_world_t *w;
    uint64_t *names;   /* by component id, or NULL */
    uint64_t *own;     /* by entity index: component sums, then own hashes; or NULL */
    uint64_t refs;     /* what references add */
} pass_t;

static uint64_t name_of(const pass_t *p, kr_component_t c, const kr__registry_entry_t *e)
{
    return p->names ? p->names[c] : name_hash(e);
}

static uint64_t own_at(const pass_t *p, uint32_t idx)
{
    return p->own ? p->own[idx] : kr_entity_digest(p->w, kr__id_of(p->w, idx));
}

static void sum_component(void *arg, uint32_t idx, const kr__registry_entry_t *e, kr_component_t c, const char *v)
{
    pass_t *p = arg;
    p->own[idx] += component_hash(e, name_of(p, c, e), v);
}

static uint64_t referenced(const pass_t *p, kr_entity_t r)
{
    if (r == KR_ENTITY_INVALID || !kr_entity_alive(p->w, r)) return NO_REFERENCE;
    return SET_REFERENCE ^ own_at(p, kr_entity_index(r));
}

/* Every reference of a value, followed one step: the referenced entity's
 * own hash, bound to the referring entity's and salted by where the
 * reference sits. */
static void follow_references(void *arg, uint32_t idx, const kr__registry_entry_t *e, kr_component_t c,
                              const char *v)
{
    pass_t *p = arg;
    for (size_t i = 0; !e->info.vtbl && i < e->info.field_count; i++) {
        const kr_field_t *f = &e->info.fields[i];
        for (uint32_t k = 0; f->type == KR_FIELD_ENTITY && k < f->count; k++) {
            kr_entity_t r;
            memcpy(&r, v + f->offset + k * sizeof r, sizeof r);
            uint64_t where = name_of(p, c, e) + ((uint64_t)i << 20) + k;
            p->refs += kr__mix64(own_at(p, idx) ^ kr__mix64(referenced(p, r) + where));
        }
    }
}

uint64_t kr_world_digest(kr_world_t *w)
{
    if (!w) return 0;
    uint32_t n = w->record_count, nc = kr_registry_count(w->registry) + 1;
    pass_t p = { .w = w, .names = calloc(nc, sizeof *p.names), .own = calloc(n ? n : 1, sizeof *p.own) };
    bool refs = false;
    for (kr_component_t c = 1; c < nc; c++) {
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
        if (e && p.names) p.names[c] = name_hash(e);
        refs = refs || (e && has_references(e));
    }
    if (p.own) {
        visit_all(w, sum_component, &p, false);
        for (uint32_t idx = 0; idx < n; idx++)
            if (counts(w, idx)) p.own[idx] = own_of(w, idx, p.own[idx]);
    }
    if (refs) visit_all(w, follow_references, &p, true);
    uint64_t sum = p.refs;
    for (uint32_t idx = 0; idx < n; idx++) {
        if (!counts(w, idx)) continue;
        uint64_t own = own_at(&p, idx);
        sum += kr__mix64(own);
        kr_entity_t parent = parent_of(w, idx);
        if (parent != KR_ENTITY_INVALID) sum += kr__mix64(own ^ kr__mix64(referenced(&p, parent) + 0x706172ULL));
    }
    free(p.names);
    free(p.own);
    return sum;
}
