/* Entity ids: creation, generations, recycling, destroy, bad input. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"
#include "shuffle.h"

Test(entity, create_find_destroy_seed_example)
{
    kr_world_t *w = kr_world_create(NULL);
    kr_entity_t some = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "SomeEntity" });
    cr_assert_neq(some, KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "SomeEntity"), some);
    cr_assert_eq(kr_entity_destroy(w, some), KR_OK);
    cr_assert_not(kr_entity_alive(w, some));
    cr_assert_eq(kr_entity_find(w, "SomeEntity"), KR_ENTITY_INVALID);
    kr_world_destroy(w);
}

Test(entity, ids_are_never_zero_and_unique)
{
    kr_world_t *w = kr_world_create(NULL);
    enum { N = 5000 };
    static kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        cr_assert_neq(ids[i], KR_ENTITY_INVALID);
        cr_assert_eq(kr_entity_generation(ids[i]), 1);
        for (int j = i - 1; j >= 0 && j > i - 50; j--) cr_assert_neq(ids[i], ids[j]);
    }
    cr_assert_eq(kr_world_entity_count(w), N);
    kr_world_destroy(w);
}

Test(entity, destroyed_id_is_never_taken_for_a_live_one)
{
    kr_world_t *w = kr_world_create(NULL);
    kr_entity_t a = kr_entity_create(w);
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    kr_entity_t b = kr_entity_create(w);
    /* The index is recycled, the generation is not. */
    cr_assert_eq(kr_entity_index(b), kr_entity_index(a));
    cr_assert_neq(kr_entity_generation(b), kr_entity_generation(a));
    cr_assert(kr_entity_alive(w, b));
    cr_assert_not(kr_entity_alive(w, a));
    cr_assert_eq(kr_entity_destroy(w, a), KR_ERR_STALE_ENTITY);
    cr_assert(strlen(kr_last_error()) > 0);
    cr_assert(kr_entity_alive(w, b), "destroying the stale id must not touch the new entity");
    kr_world_destroy(w);
}

Test(entity, indices_are_recycled)
{
    kr_world_t *w = kr_world_create(NULL);
    kr_entity_t ids[100];
    for (int i = 0; i < 100; i++) ids[i] = kr_entity_create(w);
    for (int i = 0; i < 100; i += 2) kr_entity_destroy(w, ids[i]);
    uint32_t max_index = 0;
    for (int i = 0; i < 50; i++) {
        kr_entity_t e = kr_entity_create(w);
        if (kr_entity_index(e) > max_index) max_index = kr_entity_index(e);
    }
    cr_assert_lt(max_index, 100, "new entities should reuse freed slots");
    cr_assert_eq(kr_world_entity_count(w), 100);
    kr_world_destroy(w);
}

Test(entity, invalid_and_foreign_ids_are_refused)
{
    kr_world_t *w = kr_world_create(NULL);
    cr_assert_not(kr_entity_alive(w, KR_ENTITY_INVALID));
    cr_assert_eq(kr_entity_destroy(w, KR_ENTITY_INVALID), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_entity_destroy(w, kr_entity_make(123456, 1)), KR_ERR_STALE_ENTITY);
    cr_assert_not(kr_entity_alive(w, kr_entity_make(0, 7)));
    kr_world_destroy(w);
}

Test(entity, null_world_never_crashes)
{
    kr_clear_error();
    cr_assert_eq(kr_entity_create(NULL), KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_entity_destroy(NULL, 1), KR_ERR_INVALID_ARG);
    cr_assert_not(kr_entity_alive(NULL, 1));
    cr_assert_eq(kr_world_entity_count(NULL), 0);
    cr_assert_eq(kr_world_start(NULL), KR_ERR_INVALID_ARG);
    cr_assert_null(kr_component_get(NULL, 1, KR_TRANSFORM));
    cr_assert_null(kr_component_add(NULL, 1, KR_TRANSFORM));
    cr_assert_not(kr_component_has(NULL, 1, KR_TRANSFORM));
    cr_assert_neq(kr_component_remove(NULL, 1, KR_TRANSFORM), KR_OK);
    cr_assert_neq(kr_entity_set_name(NULL, 1, "x"), KR_OK);
    cr_assert_null(kr_entity_name(NULL, 1));
    cr_assert_eq(kr_entity_find(NULL, "x"), KR_ENTITY_INVALID);
    cr_assert_neq(kr_entity_set_parent(NULL, 1, 2), KR_OK);
    cr_assert_eq(kr_entity_parent(NULL, 1), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_child_count(NULL, 1), 0);
    kr_view_t v;
    cr_assert_neq(kr_view_init(&v, NULL, &(kr_view_desc_t){ .include = { KR_TRANSFORM } }), KR_OK);
    cr_assert_neq(kr_spatial_insert(NULL, 1, 0, 0), KR_OK);
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_neq(kr_pack(NULL, NULL, 0, &b), KR_OK);
    cr_assert_neq(kr_unpack(NULL, "x", 1, NULL, NULL, NULL), KR_OK);
    kr_world_destroy(NULL);
}

Test(entity, create_with_desc_places_components_and_parent)
{
    kr_registry_t *reg = kr_registry_create();
    kr_component_t hp = kr_component_register(reg, &(kr_component_desc_t){ .name = "hp", .size = sizeof(int) });
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    kr_entity_t parent = kr_entity_create(w);
    kr_component_t list[] = { hp, KR_TRANSFORM };
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){
        .name = "child", .parent = parent, .components = list, .component_count = 2 });
    cr_assert(kr_component_has(w, e, hp));
    cr_assert(kr_component_has(w, e, KR_TRANSFORM));
    cr_assert_eq(*(int *)kr_component_get(w, e, hp), 0, "components start zeroed");
    cr_assert_eq(kr_entity_parent(w, e), parent);
    cr_assert_str_eq(kr_entity_name(w, e), "child");

    /* Bad lists create nothing. */
    size_t before = kr_world_entity_count(w);
    kr_component_t dup[] = { hp, hp };
    cr_assert_eq(kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = dup, .component_count = 2 }),
                 KR_ENTITY_INVALID);
    kr_component_t bad[] = { 999 };
    cr_assert_eq(kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = bad, .component_count = 1 }),
                 KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_UNREGISTERED);
    cr_assert_eq(kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = kr_entity_make(77, 1) }),
                 KR_ENTITY_INVALID);
    cr_assert_eq(kr_world_entity_count(w), before);
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

Test(entity, many_creates_and_destroys_keep_counts)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .initial_capacity = 4 });
    enum { N = 20000 };
    static kr_entity_t ids[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) ids[i] = kr_entity_create(w);
        cr_assert_eq(kr_world_entity_count(w), N);
        for (int i = N - 1; i >= 0; i--) cr_assert_eq(kr_entity_destroy(w, ids[i]), KR_OK);
        cr_assert_eq(kr_world_entity_count(w), 0);
        for (int i = 0; i < N; i++) cr_assert_not(kr_entity_alive(w, ids[i]));
    }
    kr_world_destroy(w);
}

/* ---- kr_entity_destroy_n -------------------------------------------------- */

typedef struct { float x, y; } pair_t;

/* One world of the batch test: entities of every kind a destroy handles
 * (table components, sparse ones, a name, a spatial entry, children). */
static kr_world_t *varied_world(kr_registry_t *reg, kr_component_t pos, kr_component_t note, kr_entity_t *ids, int n)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_cell_size = 1.0,
                                                        .spatial_bounds = { 0, 0, 20, 20 } });
    cr_assert_not_null(w, "%s", kr_last_error());
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "e%d", i);
        kr_entity_t parent = i % 7 == 6 ? ids[i - 1] : KR_ENTITY_INVALID; /* a child of the one before */
        ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = i % 5 ? NULL : name, .parent = parent });
        cr_assert_neq(ids[i], KR_ENTITY_INVALID, "%s", kr_last_error());
        if (i % 2) *(pair_t *)kr_component_add(w, ids[i], pos) = (pair_t){ (float)i, 1 };
        if (i % 3 == 0) *(uint64_t *)kr_component_add(w, ids[i], note) = (uint64_t)i;
        if (i % 4 != 3)
            cr_assert_eq(kr_spatial_insert(w, ids[i], (i * 7) % 30 + 0.5, (i * 3) % 20 + 0.5), KR_OK,
                         "%s", kr_last_error());
    }
    return w;
}

/* A batch destroys what the same single calls destroy: the entities, their
 * children, names, spatial entries (on and off the grid) and sparse
 * values; what is left is alike in both worlds, cell by cell. */
Test(entity, destroy_n_matches_single_calls)
{
    enum { N = 700 };
    kr_registry_t *reg = kr_registry_create();
    kr_component_t pos = kr_component_register(reg, &(kr_component_desc_t){ .name = "Pos", .size = sizeof(pair_t) });
    kr_component_t note = kr_component_register(reg, &(kr_component_desc_t){
        .name = "Note", .size = sizeof(uint64_t), .storage = KR_STORAGE_SPARSE });
    static kr_entity_t ids[N], ids2[N], pick[N];
    kr_world_t *one = varied_world(reg, pos, note, ids, N), *many = varied_world(reg, pos, note, ids2, N);
    cr_assert(!memcmp(ids, ids2, sizeof ids));
    /* Every third entity that is not a child, in a shuffled order. */
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i % 3 == 1 && i % 7 != 6) pick[n++] = ids[i];
    uint64_t rng = 99;
    shuffle_entities(pick, n, &rng);
    for (int i = 0; i < n; i++) cr_assert_eq(kr_entity_destroy(one, pick[i]), KR_OK, "%s", kr_last_error());
    size_t done = 0;
    cr_assert_eq(kr_entity_destroy_n(many, (size_t)n, pick, &done), KR_OK, "%s", kr_last_error());
    cr_assert_eq(done, (size_t)n);
    cr_assert_eq(kr_world_entity_count(one), kr_world_entity_count(many));
    cr_assert_lt(kr_world_entity_count(many), N - n, "children went with their parents");
    cr_assert_eq(kr_spatial_count(one), kr_spatial_count(many));
    cr_assert_eq(kr_world_digest(one), kr_world_digest(many));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(kr_entity_alive(one, ids[i]), kr_entity_alive(many, ids[i]), "entity %d", i);
        char name[32];
        snprintf(name, sizeof name, "e%d", i);
        cr_assert_eq(kr_entity_find(one, name), kr_entity_find(many, name));
    }
    for (int32_t cy = 0; cy < 20; cy++)
        for (int32_t cx = 0; cx < 30; cx++) {
            size_t na = 0, nb = 0;
            const kr_entity_t *a = kr_spatial_cell_entities(one, (kr_cell_t){ cx, cy }, &na);
            const kr_entity_t *b = kr_spatial_cell_entities(many, (kr_cell_t){ cx, cy }, &nb);
            cr_assert_eq(na, nb, "cell (%d, %d)", cx, cy);
            for (size_t k = 0; k < na; k++) cr_assert_eq(a[k], b[k], "cell (%d, %d) slot %zu", cx, cy, k);
        }
    kr_world_destroy(one);
    kr_world_destroy(many);
    kr_registry_destroy(reg);
}

/* A batch stops at its first failing call: an entity destroyed with its
 * parent earlier in the batch is stale by its turn. */
Test(entity, destroy_n_stops_at_the_first_failure)
{
    kr_world_t *w = kr_world_create(NULL);
    kr_entity_t a = kr_entity_create(w), parent = kr_entity_create(w);
    kr_entity_t child = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = parent });
    kr_entity_t b = kr_entity_create(w);
    kr_entity_t batch[4] = { a, parent, child, b };
    size_t done = 99;
    cr_assert_eq(kr_entity_destroy_n(w, 4, batch, &done), KR_ERR_STALE_ENTITY);
    cr_assert_eq(done, 2);
    cr_assert_not(kr_entity_alive(w, a) || kr_entity_alive(w, parent) || kr_entity_alive(w, child));
    cr_assert(kr_entity_alive(w, b));
    cr_assert_eq(kr_entity_destroy_n(w, 0, NULL, &done), KR_OK);
    cr_assert_eq(done, 0);
    cr_assert_eq(kr_entity_destroy_n(NULL, 1, &b, &done), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_entity_destroy_n(w, 1, NULL, NULL), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "kr_entity_destroy_n: expected a world and 1 entities, found a NULL "
                                             "entity array"), "%s", kr_last_error());
    cr_assert_eq(kr_entity_destroy_n(w, 1, &b, NULL), KR_OK);
    cr_assert_eq(kr_world_entity_count(w), 0);
    kr_world_destroy(w);
}
