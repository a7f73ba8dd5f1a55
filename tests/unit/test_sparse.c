/* Sparse storage: add/get/has/remove, destroy, views, packing. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

typedef struct { float x, y; } vec2_t;
typedef struct { kr_entity_t target; int32_t hits; } mark_t;

static kr_registry_t *reg;
static kr_world_t *w;
static kr_component_t pos, mark, flag;

static const kr_field_t mark_fields[] = {
    KR_FIELD(mark_t, target, KR_FIELD_ENTITY),
    KR_FIELD(mark_t, hits, KR_FIELD_I32),
};

static void setup(void)
{
    reg = kr_registry_create();
    pos = kr_component_register(reg, &(kr_component_desc_t){ .name = "Position", .size = sizeof(vec2_t) });
    mark = kr_component_register(reg, &(kr_component_desc_t){ .name = "Mark", .size = sizeof(mark_t),
        .fields = mark_fields, .field_count = 2, .storage = KR_STORAGE_SPARSE });
    flag = kr_component_register(reg, &(kr_component_desc_t){ .name = "Flag", .storage = KR_STORAGE_SPARSE });
    w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
}

static void teardown(void)
{
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

TestSuite(sparse, .init = setup, .fini = teardown);

Test(sparse, registry_records_the_storage)
{
    cr_assert_eq(kr_component_info(reg, mark)->storage, KR_STORAGE_SPARSE);
    cr_assert_eq(kr_component_info(reg, pos)->storage, KR_STORAGE_TABLE);
    cr_assert_eq(kr_component_register(reg, &(kr_component_desc_t){ .name = "bad", .size = 4,
                                                                     .storage = (kr_storage_t)7 }),
                 KR_COMPONENT_NONE);
    kr_registry_t *other = kr_registry_create();
    kr_component_register(other, &(kr_component_desc_t){ .name = "Position", .size = sizeof(vec2_t) });
    kr_component_register(other, &(kr_component_desc_t){ .name = "Mark", .size = sizeof(mark_t),
        .fields = mark_fields, .field_count = 2 });
    kr_component_register(other, &(kr_component_desc_t){ .name = "Flag", .storage = KR_STORAGE_SPARSE });
    cr_assert_neq(kr_registry_hash(reg), kr_registry_hash(other), "storage is part of the layout");
    kr_registry_destroy(other);
}

Test(sparse, add_get_has_remove)
{
    kr_entity_t e = kr_entity_create(w);
    kr_component_add(w, e, pos);
    mark_t *m = kr_component_add(w, e, mark);
    cr_assert_not_null(m);
    cr_assert_eq(m->hits, 0, "zeroed");
    m->hits = 7;
    cr_assert(kr_component_has(w, e, mark));
    cr_assert_eq(((mark_t *)kr_component_get(w, e, mark))->hits, 7);
    cr_assert_null(kr_component_add(w, e, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert_eq(kr_component_remove(w, e, mark), KR_OK);
    cr_assert_not(kr_component_has(w, e, mark));
    cr_assert_null(kr_component_get(w, e, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_NO_COMPONENT);
    cr_assert_eq(kr_component_remove(w, e, mark), KR_ERR_NO_COMPONENT);
    cr_assert(kr_component_has(w, e, pos), "the table component is untouched");
    cr_assert_not_null(kr_component_add(w, e, flag));
    cr_assert(kr_component_has(w, e, flag));
}

Test(sparse, values_survive_removal_of_others_and_destroy_cleans_up)
{
    enum { N = 2000 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        ((mark_t *)kr_component_add(w, ids[i], mark))->hits = i;
    }
    for (int i = 0; i < N; i += 3) kr_component_remove(w, ids[i], mark);
    for (int i = 1; i < N; i += 3) kr_entity_destroy(w, ids[i]);
    for (int i = 0; i < N; i++) {
        if (i % 3 == 2) cr_assert_eq(((mark_t *)kr_component_get(w, ids[i], mark))->hits, i);
        else cr_assert_not(kr_component_has(w, ids[i], mark));
    }
    /* A recycled slot does not inherit the dead entity's sparse values. */
    kr_entity_t fresh = kr_entity_create(w);
    cr_assert_not(kr_component_has(w, fresh, mark));
}

Test(sparse, create_desc_takes_sparse_components)
{
    kr_component_t list[] = { mark, pos, flag };
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = list, .component_count = 3 });
    cr_assert(kr_component_has(w, e, mark));
    cr_assert(kr_component_has(w, e, pos));
    cr_assert(kr_component_has(w, e, flag));
    kr_component_t dup[] = { mark, pos, mark };
    cr_assert_eq(kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = dup, .component_count = 3 }),
                 KR_ENTITY_INVALID);
    cr_assert_eq(kr_world_entity_count(w), 1);
}

Test(sparse, views_filter_by_entity_and_refuse_chunks)
{
    enum { N = 300 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        kr_component_add(w, ids[i], pos);
        if (i % 2) kr_component_add(w, ids[i], mark);
        if (i % 3 == 0) kr_component_add(w, ids[i], flag);
    }
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos, mark }, .exclude = { flag } });
    size_t n = 0;
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        cr_assert(kr_component_has(w, e, mark));
        cr_assert_not(kr_component_has(w, e, flag));
        cr_assert_eq(kr_view_get(&v, 1), kr_component_get(w, e, mark));
        n++;
    }
    size_t expect = 0;
    for (int i = 0; i < N; i++) expect += i % 2 && i % 3 != 0;
    cr_assert_eq(n, expect);
    cr_assert_eq(kr_view_count(&v), expect);
    kr_view_chunk_t ch;
    cr_assert_not(kr_view_next_chunk(&v, &ch));
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    kr_view_fini(&v);

    /* Only sparse components in include: every entity is looked at. */
    kr_entity_t bare = kr_entity_create(w);
    kr_component_add(w, bare, flag);
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { flag } });
    n = 0;
    while (kr_view_next(&v)) n++;
    cr_assert_eq(n, (size_t)(N + 2) / 3 + 1);
    kr_view_fini(&v);
}

Test(sparse, removing_during_an_entity_pass)
{
    enum { N = 100 };
    for (int i = 0; i < N; i++) kr_component_add(w, kr_entity_create(w), mark);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { mark } });
    size_t n = 0;
    while (kr_view_next(&v)) {
        n++;
        cr_assert_eq(kr_component_remove(w, kr_view_entity(&v), mark), KR_OK);
    }
    cr_assert_eq(n, N);
    cr_assert_eq(kr_view_count(&v), 0);
    kr_view_fini(&v);
}

Test(sparse, pack_carries_sparse_components_with_remapped_refs)
{
    kr_entity_t root = kr_entity_create(w);
    kr_entity_t child = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = root });
    kr_entity_t outside = kr_entity_create(w);
    *(mark_t *)kr_component_add(w, root, mark) = (mark_t){ child, 3 };
    *(mark_t *)kr_component_add(w, child, mark) = (mark_t){ outside, 4 };
    kr_component_add(w, child, flag);
    kr_component_add(w, child, pos);
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_pack(w, &root, 1, &b), KR_OK, "%s", kr_last_error());
    kr_world_t *dst = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    kr_entity_t nr;
    cr_assert_eq(kr_unpack(dst, b.data, b.len, &(kr_unpack_desc_t){ .roots = &nr, .roots_capacity = 1 }, NULL,
                           NULL), KR_OK, "%s", kr_last_error());
    kr_entity_t nc = kr_entity_first_child(dst, nr);
    mark_t *rm = kr_component_get(dst, nr, mark), *cm = kr_component_get(dst, nc, mark);
    cr_assert_eq(rm->hits, 3);
    cr_assert_eq(rm->target, nc, "reference inside the subtree remapped");
    cr_assert_eq(cm->hits, 4);
    cr_assert_eq(cm->target, KR_ENTITY_INVALID, "reference outside the subtree cleared");
    cr_assert(kr_component_has(dst, nc, flag));
    cr_assert(kr_component_has(dst, nc, pos));
    cr_assert_not(kr_component_has(dst, nr, flag));
    kr_world_destroy(dst);
    kr_buf_fini(&b);
}

Test(sparse, structure_lock_applies)
{
    kr_entity_t e = kr_entity_create(w);
    kr_component_add(w, e, pos);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_chunk_t ch;
    cr_assert(kr_view_next_chunk(&v, &ch));
    cr_assert_null(kr_component_add(w, e, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_LOCKED);
    kr_view_fini(&v);
    cr_assert_not_null(kr_component_add(w, e, mark));
}

/* Once a component has a pool, kr_component_add and _remove take a path
 * of their own (ecs/component.c, add_to_pool): it still refuses a stale
 * entity, a null world and a locked world, and says which component. */
Test(sparse, the_pool_path_checks_like_the_others)
{
    kr_entity_t e = kr_entity_create(w), gone = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e, mark)); /* the pool exists from here */
    cr_assert_eq(kr_entity_destroy(w, gone), KR_OK);
    cr_assert_null(kr_component_add(w, gone, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_component_remove(w, gone, mark), KR_ERR_STALE_ENTITY);
    cr_assert_null(kr_component_add(NULL, e, mark));
    cr_assert_eq(kr_component_remove(NULL, e, mark), KR_ERR_INVALID_ARG);
    cr_assert_null(kr_component_add(w, e, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert(strstr(kr_last_error(), "'Mark'"), "names the component: %s", kr_last_error());

    kr_entity_t other = kr_entity_create(w);
    kr_component_add(w, other, pos);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_chunk_t ch;
    cr_assert(kr_view_next_chunk(&v, &ch));
    cr_assert_null(kr_component_add(w, other, mark));
    cr_assert_eq(kr_last_status(), KR_ERR_LOCKED);
    cr_assert_eq(kr_component_remove(w, e, mark), KR_ERR_LOCKED);
    kr_view_fini(&v);

    cr_assert_eq(kr_component_remove(w, e, mark), KR_OK);
    cr_assert_eq(kr_component_remove(w, e, mark), KR_ERR_NO_COMPONENT);
    cr_assert(strstr(kr_last_error(), "'Mark'"), "names the component: %s", kr_last_error());
    cr_assert_not_null(kr_component_add(w, other, mark));
}
