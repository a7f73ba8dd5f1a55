/* Digests of worlds and described blocks (kairos/digest.h), from field
 * metadata alone: no entity id, no address and no padding byte enters a
 * hash, and a world's digest is a sum over entities, so it depends on
 * neither their order nor on which rank or table holds them. */
#include <stdlib.h>
#include <string.h>
#include "kairos/digest.h"
#include "ecs/world_private.h"

uint64_t kr_digest_mix(uint64_t x) { return kr__mix64(x); }

static uint64_t add(uint64_t h, uint64_t v) { return kr__mix64(h ^ kr__mix64(v + 0x9e3779b97f4a7c15ULL)); }

static uint64_t bits64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint64_t bits32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t bits16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint64_t entity_own(kr_world_t *w, uint32_t idx);

/* An entity reference: set or not, and with a world the referenced
 * entity's own hash (its references counted as set or not only, so that a
 * cycle of references ends). */
static uint64_t reference(kr_world_t *w, kr_entity_t e, bool follow)
{
    if (e == KR_ENTITY_INVALID) return 0x5eed;
    if (!follow || !w || !kr_entity_alive(w, e)) return 0x5e7;
    return 0x5e7 ^ entity_own(w, kr_entity_index(e));
}

/* One field's values. */
static uint64_t field(kr_world_t *w, uint64_t h, const kr_field_t *f, const char *base, bool follow)
{
    uint32_t n = f->count ? f->count : 1;
    for (uint32_t k = 0; k < n; k++) {
        switch (f->type) {
        case KR_FIELD_BOOL: case KR_FIELD_I8: case KR_FIELD_U8:
            h = add(h, (uint8_t)base[f->offset + k]);
            break;
        case KR_FIELD_I16: case KR_FIELD_U16: h = add(h, bits16(base + f->offset + 2 * k)); break;
        case KR_FIELD_I32: case KR_FIELD_U32: case KR_FIELD_F32: h = add(h, bits32(base + f->offset + 4 * k)); break;
        case KR_FIELD_I64: case KR_FIELD_U64: case KR_FIELD_F64: case KR_FIELD_COUNTER:
            h = add(h, bits64(base + f->offset + 8 * k));
            break;
        case KR_FIELD_ENTITY: {
            kr_entity_t e;
            memcpy(&e, base + f->offset + k * sizeof e, sizeof e);
            h = add(h, reference(w, e, follow));
            break;
        }
        default: /* slots: only in simulator state (schedulers/state.c) */
            break;
        }
    }
    return h;
}

/* Where component c of the live entity idx keeps its value; NULL if the
 * entity has none. */
static const char *value_of(kr_world_t *w, uint32_t idx, kr_component_t c)
{
    if (kr__is_sparse(w, c)) {
        kr__sparse_pool_t *p = kr__pool(w, c, false);
        uint32_t slot = p ? kr__sparse_slot(p, idx) : KR__NONE;
        return slot == KR__NONE ? NULL : kr__sparse_value(p, slot);
    }
    const kr__record_t *r = &w->records[idx];
    const kr__table_t *t = kr__table(w, r->table);
    int col = kr__column_index(t, c);
    return col < 0 ? NULL : kr__column_ptr(t, (uint32_t)col, r->row);
}

/* An entity's own hash: its components (by name) and their described
 * fields, with references counted as set or not; and whether it has a
 * parent. */
static uint64_t entity_own(kr_world_t *w, uint32_t idx)
{
    uint64_t h = 0x656e74ULL;
    uint32_t count = kr_registry_count(w->registry);
    for (kr_component_t c = 1; c <= count; c++) {
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
        if (!e) continue;
        const char *v = value_of(w, idx, c);
        if (!v) continue;
        h = add(h, kr__hash_bytes(e->info.name, strlen(e->info.name), 0));
        for (size_t f = 0; !e->info.vtbl && f < e->info.field_count; f++) h = field(w, h, &e->info.fields[f], v, false);
    }
    kr_entity_t parent = kr_entity_parent(w, kr__id_of(w, idx));
    return add(h, parent == KR_ENTITY_INVALID ? 0 : 1);
}

/* The whole hash: the own hash, then every reference followed one step
 * (fields, then the parent). */
static uint64_t entity_full(kr_world_t *w, uint32_t idx)
{
    uint64_t h = entity_own(w, idx);
    uint32_t count = kr_registry_count(w->registry);
    for (kr_component_t c = 1; c <= count; c++) {
        const kr__registry_entry_t *e = kr__registry_entry(w->registry, c);
        if (!e || e->info.vtbl) continue;
        bool refs = false;
        for (size_t f = 0; f < e->info.field_count && !refs; f++) refs = e->info.fields[f].type == KR_FIELD_ENTITY;
        const char *v = refs ? value_of(w, idx, c) : NULL;
        for (size_t f = 0; v && f < e->info.field_count; f++)
            if (e->info.fields[f].type == KR_FIELD_ENTITY) h = field(w, h, &e->info.fields[f], v, true);
    }
    kr_entity_t parent = kr_entity_parent(w, kr__id_of(w, idx));
    if (parent != KR_ENTITY_INVALID) h = add(h, reference(w, parent, true));
    return kr__mix64(h);
}

uint64_t kr_entity_digest(kr_world_t *w, kr_entity_t e)
{
    return w && kr_entity_alive(w, e) ? entity_own(w, kr_entity_index(e)) : 0;
}

uint64_t kr_world_digest(kr_world_t *w)
{
    uint64_t sum = 0;
    for (uint32_t idx = 0; w && idx < w->record_count; idx++)
        if ((w->records[idx].flags & KR__REC_ALIVE) && !(w->records[idx].flags & KR__REC_DYING))
            sum += entity_full(w, idx);
    return sum;
}
