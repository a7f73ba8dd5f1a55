/* The component registry: names, sizes, field metadata and behavior tables. */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hmap.h"
#include "ecs/world_private.h"


static uint64_t name_hash(const char *name) { return kr__hash_bytes(name, strlen(name), 0); }

kr_component_t kr_component_lookup(const kr_registry_t *reg, const char *name)
{
    if (!reg || !name) return KR_COMPONENT_NONE;
    uint64_t h = name_hash(name);
    uint32_t cursor = 0, id;
    while ((id = kr__hmap_next(&reg->by_name, h, &cursor)) != KR__HMAP_EMPTY)
        if (strcmp(reg->entries[id].name, name) == 0) return id;
    return KR_COMPONENT_NONE;
}

static size_t default_align(size_t size)
{
    /* The largest power of two dividing size, at most max_align_t's: what
     * the C compiler would have given a struct of that size at most. */
    size_t a = alignof(max_align_t);
    while (a > 1 && (size == 0 ? false : size % a != 0)) a >>= 1;
    return size ? a : 1;
}

static const char *field_type_ok(kr_field_type_t t, size_t *size)
{
    static const size_t sizes[] = {
        [KR_FIELD_BOOL] = sizeof(bool), [KR_FIELD_I8] = 1, [KR_FIELD_U8] = 1,
        [KR_FIELD_I16] = 2, [KR_FIELD_U16] = 2, [KR_FIELD_I32] = 4, [KR_FIELD_U32] = 4,
        [KR_FIELD_I64] = 8, [KR_FIELD_U64] = 8, [KR_FIELD_F32] = 4, [KR_FIELD_F64] = 8,
        [KR_FIELD_ENTITY] = sizeof(kr_entity_t),
    };
    if (t < KR_FIELD_BOOL || t > KR_FIELD_ENTITY) return "unknown field type";
    *size = sizes[t];
    return NULL;
}

static kr_component_t add_entry(kr_registry_t *reg, const char *kind, const char *name, size_t size,
                                size_t align, const kr_field_t *fields, size_t field_count,
                                const kr_behavior_vtbl_t *vtbl, kr_storage_t storage)
{
    if (!reg) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: null registry", kind);
        return KR_COMPONENT_NONE;
    }
    if (!name || !*name) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: a name is required", kind);
        return KR_COMPONENT_NONE;
    }
    kr_component_t same = kr_component_lookup(reg, name);
    if (same) {
        /* Model kinds that share a component each register it: the same
         * definition again is the same component. */
        const kr_component_info_t *o = kr_component_info(reg, same);
        size_t a = align ? align : default_align(size);
        bool equal = o->size == size && o->align == a && o->vtbl == vtbl && o->storage == storage &&
                     o->field_count == field_count;
        for (size_t i = 0; equal && i < field_count; i++)
            equal = !strcmp(o->fields[i].name, fields[i].name) && o->fields[i].type == fields[i].type &&
                    o->fields[i].offset == fields[i].offset &&
                    o->fields[i].count == (fields[i].count ? fields[i].count : 1);
        if (equal) return same;
        kr__fail(KR_ERR_EXISTS, "kr_%s_register: '%s' is already registered with another definition", kind, name);
        return KR_COMPONENT_NONE;
    }
    if (storage != KR_STORAGE_TABLE && storage != KR_STORAGE_SPARSE) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: '%s' has unknown storage %d", kind, name, (int)storage);
        return KR_COMPONENT_NONE;
    }
    if (size > UINT32_MAX / 2) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: '%s' is too large (%zu bytes)", kind, name, size);
        return KR_COMPONENT_NONE;
    }
    if (align == 0) align = default_align(size);
    if ((align & (align - 1)) || align > 4096 || (size && size % align)) {
        kr__fail(KR_ERR_INVALID_ARG,
                 "kr_%s_register: '%s' has alignment %zu, expected a power of two <= 4096 dividing size %zu",
                 kind, name, align, size);
        return KR_COMPONENT_NONE;
    }
    if (field_count && !fields) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: '%s' has field_count %zu but no fields",
                 kind, name, field_count);
        return KR_COMPONENT_NONE;
    }
    for (size_t i = 0; i < field_count; i++) {
        size_t fsize = 0;
        const char *why = field_type_ok(fields[i].type, &fsize);
        uint32_t n = fields[i].count ? fields[i].count : 1;
        if (!why && (!fields[i].name || !*fields[i].name)) why = "field without a name";
        if (!why && (fields[i].offset > size || (size_t)n * fsize > size - fields[i].offset))
            why = "field extends past the component's size";
        if (why) {
            kr__fail(KR_ERR_INVALID_ARG, "kr_%s_register: '%s' field %zu: %s", kind, name, i, why);
            return KR_COMPONENT_NONE;
        }
    }
    if (reg->count == reg->capacity && KR__GROW_U32(reg->entries, reg->capacity, reg->count + 1, 16, NULL)) {
        kr__fail(KR_ERR_NOMEM, "kr_%s_register: out of memory", kind);
        return KR_COMPONENT_NONE;
    }
    kr__registry_entry_t *e = &reg->entries[reg->count];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    e->fields = field_count ? malloc(field_count * sizeof *e->fields) : NULL;
    if (!e->name || (field_count && !e->fields)) {
        free(e->name);
        free(e->fields);
        kr__fail(KR_ERR_NOMEM, "kr_%s_register: out of memory", kind);
        return KR_COMPONENT_NONE;
    }
    for (size_t i = 0; i < field_count; i++) {
        e->fields[i] = fields[i];
        e->fields[i].name = strdup(fields[i].name);
        if (!e->fields[i].count) e->fields[i].count = 1;
    }
    e->info = (kr_component_info_t){ e->name, size, align, e->fields, field_count, vtbl, storage };
    kr_component_t id = reg->count;
    if (kr__hmap_insert(&reg->by_name, name_hash(name), id)) return KR_COMPONENT_NONE;
    reg->count++;
    return id;
}

kr_component_t kr_component_register(kr_registry_t *reg, const kr_component_desc_t *desc)
{
    if (!desc) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_component_register: null description");
        return KR_COMPONENT_NONE;
    }
    return add_entry(reg, "component", desc->name, desc->size, desc->align, desc->fields,
                     desc->field_count, NULL, desc->storage);
}

kr_component_t kr_behavior_register(kr_registry_t *reg, const kr_behavior_desc_t *desc)
{
    if (!desc || !desc->vtbl) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_behavior_register: a description with a vtbl is required");
        return KR_COMPONENT_NONE;
    }
    return add_entry(reg, "behavior", desc->name, desc->state_size, desc->state_align, NULL, 0,
                     desc->vtbl, KR_STORAGE_TABLE);
}

kr_registry_t *kr_registry_create(void)
{
    kr_registry_t *reg = calloc(1, sizeof *reg);
    if (!reg) {
        kr__fail(KR_ERR_NOMEM, "kr_registry_create: out of memory");
        return NULL;
    }
    /* Ids index entries directly; entries[0] stands for the invalid id. */
    reg->count = 1;
    kr__hmap_init(&reg->by_name);
    reg->entries = calloc(16, sizeof *reg->entries);
    if (!reg->entries) {
        free(reg);
        kr__fail(KR_ERR_NOMEM, "kr_registry_create: out of memory");
        return NULL;
    }
    reg->capacity = 16;
    static const kr_field_t transform_fields[] = {
        KR_FIELD_ARRAY(kr_transform_t, position, KR_FIELD_F64, 3),
        KR_FIELD_ARRAY(kr_transform_t, rotation, KR_FIELD_F64, 4),
        KR_FIELD_ARRAY(kr_transform_t, scale, KR_FIELD_F64, 3),
    };
    kr_component_t t = kr_component_register(reg, &(kr_component_desc_t){
        .name = "kr_transform", .size = sizeof(kr_transform_t), .align = alignof(kr_transform_t),
        .fields = transform_fields, .field_count = 3 });
    /* Channels and resources (kairos/channel.h). A resource is a tag: its
     * channel list is its channel children, so it stores nothing. */
    static const kr_field_t channel_fields[] = {
        KR_FIELD(kr_channel_t, peer, KR_FIELD_ENTITY),
        KR_FIELD(kr_channel_t, resource, KR_FIELD_ENTITY),
        KR_FIELD(kr_channel_t, kind, KR_FIELD_U32),
        KR_FIELD(kr_channel_t, open, KR_FIELD_BOOL),
    };
    kr_component_t r = kr_component_register(reg, &(kr_component_desc_t){ .name = "kr_resource" });
    kr_component_t c = kr_component_register(reg, &(kr_component_desc_t){
        .name = "kr_channel", .size = sizeof(kr_channel_t), .align = alignof(kr_channel_t),
        .fields = channel_fields, .field_count = 4 });
    if (t != KR_TRANSFORM || r != KR_RESOURCE || c != KR_CHANNEL || reg->count != KR_BUILTIN_COUNT + 1) {
        kr_registry_destroy(reg);
        return NULL;
    }
    return reg;
}

void kr_registry_destroy(kr_registry_t *reg)
{
    if (!reg) return;
    for (uint32_t i = 1; i < reg->count; i++) {
        for (size_t f = 0; f < reg->entries[i].info.field_count; f++)
            free((char *)reg->entries[i].fields[f].name);
        free(reg->entries[i].fields);
        free(reg->entries[i].name);
    }
    free(reg->entries);
    kr__hmap_fini(&reg->by_name);
    free(reg);
}

uint32_t kr_registry_count(const kr_registry_t *reg) { return reg ? reg->count - 1 : 0; }

const kr_component_info_t *kr_component_info(const kr_registry_t *reg, kr_component_t id)
{
    const kr__registry_entry_t *e = kr__registry_entry(reg, id);
    if (!e) {
        kr__fail(KR_ERR_UNREGISTERED, "kr_component_info: component %u is not registered", id);
        return NULL;
    }
    return &e->info;
}

uint64_t kr_registry_hash(const kr_registry_t *reg)
{
    if (!reg) return 0;
    uint64_t h = kr__mix64(reg->count);
    for (uint32_t i = 1; i < reg->count; i++) {
        const kr_component_info_t *in = &reg->entries[i].info;
        h = kr__hash_bytes(in->name, strlen(in->name), h);
        /* Whether a behavior serializes decides its pack format, so it counts. */
        uint64_t kind = in->vtbl ? (in->vtbl->serialize ? 2 : 1) : 3 + (uint64_t)in->storage;
        uint64_t shape[4] = { in->size, in->align, kind, in->field_count };
        h = kr__hash_bytes(shape, sizeof shape, h);
        for (size_t f = 0; f < in->field_count; f++) {
            const kr_field_t *fd = &in->fields[f];
            h = kr__hash_bytes(fd->name, strlen(fd->name), h);
            uint64_t fs[3] = { (uint64_t)fd->type, fd->offset, fd->count };
            h = kr__hash_bytes(fs, sizeof fs, h);
        }
    }
    return h;
}
