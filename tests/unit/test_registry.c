/* The component registry: registration rules, metadata, hash. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <string.h>

#include "kairos/kairos.h"

typedef struct { uint64_t current, maximum; } capacity_t;
typedef struct { int value1; float value2; bool value3; kr_entity_t target; } custom_t;

static const kr_field_t capacity_fields[] = {
    KR_FIELD(capacity_t, current, KR_FIELD_U64),
    KR_FIELD(capacity_t, maximum, KR_FIELD_U64),
};
static const kr_field_t custom_fields[] = {
    KR_FIELD(custom_t, value1, KR_FIELD_I32),
    KR_FIELD(custom_t, value2, KR_FIELD_F32),
    KR_FIELD(custom_t, value3, KR_FIELD_BOOL),
    KR_FIELD(custom_t, target, KR_FIELD_ENTITY),
};

static kr_component_t reg_capacity(kr_registry_t *r)
{
    return kr_component_register(r, &(kr_component_desc_t){
        .name = "Capacity", .size = sizeof(capacity_t), .align = alignof(capacity_t),
        .fields = capacity_fields, .field_count = 2 });
}

Test(registry, builtins_are_registered)
{
    kr_registry_t *r = kr_registry_create();
    cr_assert_eq(kr_component_lookup(r, "kr_transform"), KR_TRANSFORM);
    const kr_component_info_t *info = kr_component_info(r, KR_TRANSFORM);
    cr_assert_eq(info->size, sizeof(kr_transform_t));
    cr_assert_eq(info->field_count, 3);
    /* Channels and resources (kairos/channel.h). */
    cr_assert_eq(kr_component_lookup(r, "kr_resource"), KR_RESOURCE);
    info = kr_component_info(r, KR_RESOURCE);
    cr_assert_eq(info->size, 0, "a resource is a tag");
    cr_assert_null(info->vtbl);
    cr_assert_eq(kr_component_lookup(r, "kr_channel"), KR_CHANNEL);
    info = kr_component_info(r, KR_CHANNEL);
    cr_assert_eq(info->size, sizeof(kr_channel_t));
    cr_assert_eq(info->field_count, 4);
    cr_assert_str_eq(info->fields[0].name, "peer");
    cr_assert_eq(info->fields[0].type, KR_FIELD_ENTITY, "packs remap the peer");
    cr_assert_eq(info->fields[0].offset, offsetof(kr_channel_t, peer));
    cr_assert_str_eq(info->fields[1].name, "resource");
    cr_assert_eq(info->fields[1].type, KR_FIELD_ENTITY, "packs remap the resource");
    cr_assert_eq(info->fields[1].offset, offsetof(kr_channel_t, resource));
    cr_assert_eq(info->fields[2].type, KR_FIELD_U32);
    cr_assert_eq(info->fields[3].type, KR_FIELD_BOOL);
    cr_assert_eq(kr_registry_count(r), 3);
    cr_assert_eq(kr_registry_count(r), KR_BUILTIN_COUNT);
    /* The first user component comes after the built-ins. */
    cr_assert_eq(reg_capacity(r), KR_BUILTIN_COUNT + 1);
    kr_registry_destroy(r);
}

Test(registry, register_and_look_up_with_fields)
{
    kr_registry_t *r = kr_registry_create();
    kr_component_t cap = reg_capacity(r);
    kr_component_t cus = kr_component_register(r, &(kr_component_desc_t){
        .name = "CustomComponent", .size = sizeof(custom_t), .fields = custom_fields, .field_count = 4 });
    cr_assert_neq(cap, KR_COMPONENT_NONE);
    cr_assert_neq(cus, KR_COMPONENT_NONE);
    cr_assert_neq(cap, cus);
    cr_assert_eq(kr_component_lookup(r, "Capacity"), cap);
    cr_assert_eq(kr_component_lookup(r, "nope"), KR_COMPONENT_NONE);
    const kr_component_info_t *info = kr_component_info(r, cus);
    cr_assert_str_eq(info->name, "CustomComponent");
    cr_assert_eq(info->fields[3].type, KR_FIELD_ENTITY);
    cr_assert_eq(info->fields[3].offset, offsetof(custom_t, target));
    cr_assert_str_eq(info->fields[1].name, "value2");
    cr_assert_null(info->vtbl);
    kr_registry_destroy(r);
}

Test(registry, bad_registrations_fail_with_a_message)
{
    kr_registry_t *r = kr_registry_create();
    kr_component_t id = reg_capacity(r);
    /* The same definition again is the same component (kinds that share
     * one each register it); another definition under the name fails. */
    cr_assert_eq(reg_capacity(r), id);
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .name = "Capacity", .size = 4 }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert(strstr(kr_last_error(), "'Capacity' is already registered with another definition"), "%s",
              kr_last_error());
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .size = 4 }), KR_COMPONENT_NONE);
    cr_assert_eq(kr_component_register(r, NULL), KR_COMPONENT_NONE);
    cr_assert_eq(kr_component_register(NULL, &(kr_component_desc_t){ .name = "x", .size = 4 }), KR_COMPONENT_NONE);
    /* A field past the end of the component. */
    static const kr_field_t past[] = { { "v", KR_FIELD_F64, 4, 1 } };
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .name = "past", .size = 8, .fields = past,
                                                                   .field_count = 1 }), KR_COMPONENT_NONE);
    /* An array field that overruns. */
    static const kr_field_t arr[] = { { "v", KR_FIELD_I32, 0, 3 } };
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .name = "arr", .size = 8, .fields = arr,
                                                                   .field_count = 1 }), KR_COMPONENT_NONE);
    static const kr_field_t badtype[] = { { "v", (kr_field_type_t)99, 0, 1 } };
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .name = "bt", .size = 8, .fields = badtype,
                                                                   .field_count = 1 }), KR_COMPONENT_NONE);
    cr_assert_eq(kr_component_register(r, &(kr_component_desc_t){ .name = "al", .size = 8, .align = 3 }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_registry_count(r), KR_BUILTIN_COUNT + 1, "failed registrations leave nothing behind");
    cr_assert_null(kr_component_info(r, 77));
    cr_assert_eq(kr_last_status(), KR_ERR_UNREGISTERED);
    kr_registry_destroy(r);
}

Test(registry, tags_have_no_storage)
{
    kr_registry_t *r = kr_registry_create();
    kr_component_t tag = kr_component_register(r, &(kr_component_desc_t){ .name = "Selected" });
    cr_assert_neq(tag, KR_COMPONENT_NONE);
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = r });
    kr_entity_t e = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e, tag));
    cr_assert(kr_component_has(w, e, tag));
    cr_assert_eq(kr_component_remove(w, e, tag), KR_OK);
    cr_assert_not(kr_component_has(w, e, tag));
    kr_world_destroy(w);
    kr_registry_destroy(r);
}

Test(registry, hash_matches_for_equal_registries_only)
{
    kr_registry_t *a = kr_registry_create(), *b = kr_registry_create();
    reg_capacity(a);
    reg_capacity(b);
    cr_assert_eq(kr_registry_hash(a), kr_registry_hash(b));
    kr_component_register(a, &(kr_component_desc_t){ .name = "x", .size = 4 });
    cr_assert_neq(kr_registry_hash(a), kr_registry_hash(b));
    kr_component_register(b, &(kr_component_desc_t){ .name = "x", .size = 8 });
    cr_assert_neq(kr_registry_hash(a), kr_registry_hash(b), "sizes differ");
    kr_registry_destroy(a);
    kr_registry_destroy(b);
}
