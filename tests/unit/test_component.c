/* Data components: add/has/get/remove, storage moves, bad input. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"
#include "shuffle.h"

typedef struct { uint64_t current, maximum; } capacity_t;
typedef struct { float x, y; } vec2_t;

static kr_registry_t *reg;
static kr_world_t *w;
static kr_component_t cap, pos, vel;

static void setup(void)
{
    reg = kr_registry_create();
    cap = kr_component_register(reg, &(kr_component_desc_t){ .name = "Capacity", .size = sizeof(capacity_t) });
    pos = kr_component_register(reg, &(kr_component_desc_t){ .name = "Position", .size = sizeof(vec2_t) });
    vel = kr_component_register(reg, &(kr_component_desc_t){ .name = "Velocity", .size = sizeof(vec2_t) });
    w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
}

static void teardown(void)
{
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

TestSuite(component, .init = setup, .fini = teardown);

Test(component, seed_add_has_get_remove)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "SomeEntity" });
    kr_transform_t *t = kr_component_add(w, e, KR_TRANSFORM);
    cr_assert_not_null(t);
    cr_assert(kr_component_has(w, e, KR_TRANSFORM));
    cr_assert_eq(kr_component_get(w, e, KR_TRANSFORM), t);
    cr_assert_eq(kr_component_remove(w, e, KR_TRANSFORM), KR_OK);
    cr_assert_not(kr_component_has(w, e, KR_TRANSFORM));
    cr_assert_null(kr_component_get(w, e, KR_TRANSFORM));
    cr_assert_eq(kr_last_status(), KR_ERR_NO_COMPONENT);
}

Test(component, seed_capacity_check)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "SomeEntity" });
    capacity_t *c = kr_component_add(w, e, cap);
    c->maximum = 3;
    kr_entity_t found = kr_entity_find(w, "SomeEntity");
    cr_assert(kr_component_has(w, found, cap));
    capacity_t *again = kr_component_get(w, found, cap);
    cr_assert_eq(again->maximum, 3);
    cr_assert_lt(again->current, again->maximum);
}

Test(component, one_of_each_type_per_entity)
{
    kr_entity_t e = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e, pos));
    cr_assert_null(kr_component_add(w, e, pos));
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert_eq(kr_component_remove(w, e, vel), KR_ERR_NO_COMPONENT);
}

Test(component, values_survive_moves_between_tables)
{
    enum { N = 1000 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        vec2_t *p = kr_component_add(w, ids[i], pos);
        *p = (vec2_t){ (float)i, (float)-i };
    }
    /* Shuffle entities through several tables. */
    for (int i = 0; i < N; i += 3) ((vec2_t *)kr_component_add(w, ids[i], vel))->x = (float)(2 * i);
    for (int i = 0; i < N; i += 5) ((capacity_t *)kr_component_add(w, ids[i], cap))->current = (uint64_t)i;
    for (int i = 0; i < N; i += 6) kr_component_remove(w, ids[i], vel);
    for (int i = 0; i < N; i++) {
        vec2_t *p = kr_component_get(w, ids[i], pos);
        cr_assert_eq(p->x, (float)i);
        cr_assert_eq(p->y, (float)-i);
        bool has_vel = i % 3 == 0 && i % 6 != 0;
        cr_assert_eq(kr_component_has(w, ids[i], vel), has_vel);
        if (has_vel) cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], vel))->x, (float)(2 * i));
        if (i % 5 == 0) cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
    }
}

Test(component, re_added_component_is_zeroed)
{
    kr_entity_t e = kr_entity_create(w);
    ((vec2_t *)kr_component_add(w, e, pos))->x = 5;
    kr_component_remove(w, e, pos);
    vec2_t *p = kr_component_add(w, e, pos);
    cr_assert_eq(p->x, 0);
    cr_assert_eq(p->y, 0);
}

Test(component, destroy_keeps_other_entities_intact)
{
    enum { N = 500 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        ((capacity_t *)kr_component_add(w, ids[i], cap))->current = (uint64_t)i;
    }
    for (int i = 0; i < N; i += 2) kr_entity_destroy(w, ids[i]);
    for (int i = 1; i < N; i += 2)
        cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
    cr_assert_null(kr_component_get(w, ids[0], cap));
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
}

Test(component, unregistered_and_stale_are_refused)
{
    kr_entity_t e = kr_entity_create(w);
    cr_assert_null(kr_component_add(w, e, 4242));
    cr_assert_eq(kr_last_status(), KR_ERR_UNREGISTERED);
    cr_assert_null(kr_component_add(w, e, KR_COMPONENT_NONE));
    cr_assert_null(kr_component_get(w, e, 4242));
    cr_assert_eq(kr_last_status(), KR_ERR_UNREGISTERED);
    cr_assert_not(kr_component_has(w, e, 4242));
    cr_assert_eq(kr_component_remove(w, e, 4242), KR_ERR_UNREGISTERED);
    kr_entity_destroy(w, e);
    cr_assert_null(kr_component_add(w, e, pos));
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_not(kr_component_has(w, e, pos));
    cr_assert_eq(kr_component_remove(w, e, pos), KR_ERR_STALE_ENTITY);
    cr_assert(strlen(kr_last_error()) > 0);
}

Test(component, entity_of_another_world_is_not_confused)
{
    kr_world_t *other = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    kr_entity_t e = kr_entity_create(other);
    kr_component_add(other, e, pos);
    /* Index 0 generation 1 exists in both worlds only if w has it too. */
    cr_assert_not(kr_component_has(w, e, pos));
    kr_world_destroy(other);
}

/* A move between two tables pairs their columns around the one component
 * that differs (ecs/table.c): adding or removing a component whose column
 * comes first, in the middle or last, beside tags (no data) and values of
 * several sizes, keeps every value of the moved entity and of the entity
 * whose row fills the gap. */
/* Destroy's common path (ecs/world.c) copies the last row into the gap
 * column by column: every size (tag, 3, 4, 8, 16, 24 bytes) must arrive,
 * whether the gap is at the front, in the middle or the last row, and an
 * entity that holds a sparse component takes the general path with the
 * same result. */
Test(component, destroy_moves_every_column_of_the_last_row)
{
    typedef struct { double a, b, c; } wide_t;
    kr_component_t tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "Tag" });
    kr_component_t small = kr_component_register(reg, &(kr_component_desc_t){ .name = "Small", .size = 4 });
    kr_component_t wide = kr_component_register(reg, &(kr_component_desc_t){ .name = "Wide", .size = sizeof(wide_t) });
    kr_component_t odd = kr_component_register(reg, &(kr_component_desc_t){ .name = "Odd", .size = 3 });
    kr_component_t sparse = kr_component_register(reg, &(kr_component_desc_t){ .name = "Sparse", .size = 4,
                                                                             .storage = KR_STORAGE_SPARSE });
    cr_assert(tag && small && wide && odd && sparse);
    kr_component_t all[] = { cap, pos, vel, tag, small, wide, odd };
    enum { N = 97 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = all, .component_count = 7 });
        cr_assert(ids[i]);
        ((capacity_t *)kr_component_get(w, ids[i], cap))->maximum = (uint64_t)i * 3;
        *(vec2_t *)kr_component_get(w, ids[i], pos) = (vec2_t){ (float)i, 1 };
        *(vec2_t *)kr_component_get(w, ids[i], vel) = (vec2_t){ 2, (float)-i };
        *(uint32_t *)kr_component_get(w, ids[i], small) = (uint32_t)i * 7;
        *(wide_t *)kr_component_get(w, ids[i], wide) = (wide_t){ i, i * 0.5, -i };
        memcpy(kr_component_get(w, ids[i], odd), (uint8_t[3]){ (uint8_t)i, 1, (uint8_t)(i + 2) }, 3);
        if (i % 7 == 3) cr_assert_not_null(kr_component_add(w, ids[i], sparse));
    }
    bool gone[N] = { false };
    /* the first row, the last row, then every third from the middle out */
    int order[N], n = 0;
    order[n++] = 0;
    order[n++] = N - 1;
    for (int i = N / 2; i < N - 1; i += 3) order[n++] = i;
    for (int i = N / 2 - 1; i > 0; i -= 3) order[n++] = i;
    for (int k = 0; k < n; k++) {
        cr_assert_eq(kr_entity_destroy(w, ids[order[k]]), KR_OK);
        gone[order[k]] = true;
        cr_assert_eq(kr_entity_destroy(w, ids[order[k]]), KR_ERR_STALE_ENTITY);
    }
    size_t alive = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(kr_entity_alive(w, ids[i]), !gone[i]);
        if (gone[i]) continue;
        alive++;
        cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->maximum, (uint64_t)i * 3);
        cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], pos))->x, (float)i);
        cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], vel))->y, (float)-i);
        cr_assert(kr_component_has(w, ids[i], tag));
        cr_assert_eq(*(uint32_t *)kr_component_get(w, ids[i], small), (uint32_t)i * 7);
        cr_assert_eq(((wide_t *)kr_component_get(w, ids[i], wide))->c, (double)-i);
        cr_assert_eq(((uint8_t *)kr_component_get(w, ids[i], odd))[2], (uint8_t)(i + 2));
        cr_assert_eq(kr_component_has(w, ids[i], sparse), i % 7 == 3);
    }
    cr_assert_eq(kr_world_entity_count(w), alive);
    size_t seen = 0;
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { odd } }), KR_OK);
    while (kr_view_next(&v)) seen++;
    kr_view_fini(&v);
    cr_assert_eq(seen, alive);
}

Test(component, moves_pair_columns_around_the_changed_one)
{
    typedef struct { double a, b; } wide_t;
    kr_component_t tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "Tag" });
    kr_component_t small = kr_component_register(reg, &(kr_component_desc_t){ .name = "Small", .size = 4 });
    kr_component_t wide = kr_component_register(reg, &(kr_component_desc_t){ .name = "Wide", .size = sizeof(wide_t) });
    kr_component_t odd = kr_component_register(reg, &(kr_component_desc_t){ .name = "Odd", .size = 3 });
    cr_assert(tag && small && wide && odd);
    /* Ids ascend in registration order, so columns are cap, pos, vel, tag,
     * small, wide, odd: the changed one is first (cap), in the middle
     * (tag, small) or last (odd). */
    const kr_component_t changed[] = { cap, tag, small, odd };
    enum { N = 64 };
    kr_entity_t ids[N];
    for (size_t k = 0; k < sizeof changed / sizeof changed[0]; k++) {
        kr_component_t c = changed[k];
        kr_component_t all[] = { cap, pos, vel, tag, small, wide, odd };
        kr_component_t base[8];
        uint32_t nb = 0;
        for (size_t j = 0; j < 7; j++)
            if (all[j] != c) base[nb++] = all[j];
        for (int i = 0; i < N; i++) {
            ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = base, .component_count = nb });
            cr_assert(ids[i]);
            if (c != cap) ((capacity_t *)kr_component_get(w, ids[i], cap))->current = (uint64_t)i;
            ((vec2_t *)kr_component_get(w, ids[i], pos))->x = (float)i;
            ((vec2_t *)kr_component_get(w, ids[i], vel))->y = (float)-i;
            if (c != small) *(uint32_t *)kr_component_get(w, ids[i], small) = (uint32_t)i * 7;
            ((wide_t *)kr_component_get(w, ids[i], wide))->b = i * 0.5;
            if (c != odd) memcpy(kr_component_get(w, ids[i], odd), (uint8_t[3]){ (uint8_t)i, 1, 2 }, 3);
        }
        /* Add c to the even entities, alternately from the front and from
         * the back (the last row fills the gap, or the gap is the last row). */
        for (int i = 0; i < N; i += 2) {
            uint8_t *v = kr_component_add(w, ids[i % 4 == 0 ? i : N - i], c);
            cr_assert_not_null(v);
            if (c != tag) {
                for (size_t b = 0; b < kr_component_info(reg, c)->size; b++) cr_assert_eq(v[b], 0);
            }
        }
        for (int i = 0; i < N; i++) {
            cr_assert_eq(kr_component_has(w, ids[i], c), i % 2 == 0);
            if (c != cap) cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
            cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], pos))->x, (float)i);
            cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], vel))->y, (float)-i);
            if (c != small) cr_assert_eq(*(uint32_t *)kr_component_get(w, ids[i], small), (uint32_t)i * 7);
            cr_assert_eq(((wide_t *)kr_component_get(w, ids[i], wide))->b, i * 0.5);
            if (c != odd) cr_assert_eq(((uint8_t *)kr_component_get(w, ids[i], odd))[0], (uint8_t)i);
        }
        /* And remove it again, in another order. */
        for (int i = N - 1; i >= 0; i--)
            if (kr_component_has(w, ids[i], c)) cr_assert_eq(kr_component_remove(w, ids[i], c), KR_OK);
        for (int i = 0; i < N; i++) {
            cr_assert_not(kr_component_has(w, ids[i], c));
            cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], pos))->x, (float)i);
            cr_assert_eq(((wide_t *)kr_component_get(w, ids[i], wide))->b, i * 0.5);
            if (c != small) cr_assert_eq(*(uint32_t *)kr_component_get(w, ids[i], small), (uint32_t)i * 7);
            if (c != odd) cr_assert_eq(((uint8_t *)kr_component_get(w, ids[i], odd))[2], 2);
            kr_entity_destroy(w, ids[i]);
        }
    }
}

/* During an entity pass a move leaves a hole instead of moving the last
 * row (kairos/view.h); the values still travel, and the pass sees every
 * entity once. */
Test(component, moves_during_an_entity_pass_keep_values)
{
    enum { N = 40 };
    kr_entity_t ids[N];
    kr_component_t both[2] = { pos, vel };
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        ((vec2_t *)kr_component_get(w, ids[i], pos))->x = (float)i;
        ((vec2_t *)kr_component_get(w, ids[i], vel))->y = (float)(2 * i);
    }
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } }), KR_OK);
    int seen = 0;
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        seen++;
        if (kr_component_has(w, e, cap)) continue;   /* met again in cap's table */
        int i = (int)((vec2_t *)kr_component_get(w, e, pos))->x;
        if (i % 2 == 0) {
            capacity_t *c = kr_component_add(w, e, cap);
            cr_assert_not_null(c);
            c->current = (uint64_t)i;
        } else {
            cr_assert_eq(kr_component_remove(w, e, vel), KR_OK);
        }
    }
    kr_view_fini(&v);
    cr_assert_geq(seen, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], pos))->x, (float)i);
        if (i % 2 == 0) {
            cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
            cr_assert_eq(((vec2_t *)kr_component_get(w, ids[i], vel))->y, (float)(2 * i));
        } else {
            cr_assert_not(kr_component_has(w, ids[i], vel));
        }
    }
}

/* ---- kr_component_add_n / _remove_n ---------------------------------------- */

/* Entities of four shapes ({pos}, {pos, vel}, {cap}, {}), the same in both
 * worlds, each value set from the entity's number. */
static void fill_shapes(kr_world_t *world, kr_entity_t *ids, int n)
{
    for (int i = 0; i < n; i++) {
        ids[i] = kr_entity_create(world);
        if (i % 4 <= 1) *(vec2_t *)kr_component_add(world, ids[i], pos) = (vec2_t){ (float)i, (float)-i };
        if (i % 4 == 1) *(vec2_t *)kr_component_add(world, ids[i], vel) = (vec2_t){ (float)(2 * i), 3 };
        if (i % 4 == 2) *(capacity_t *)kr_component_add(world, ids[i], cap) = (capacity_t){ (uint64_t)i, 9 };
    }
}

/* Every entity has the same components with the same values in both
 * worlds, and a view over `c` meets the entities in the same order. */
static void assert_same_worlds(kr_world_t *a, kr_world_t *b, const kr_entity_t *ids, int n,
                               const kr_component_t *comps, const size_t *sizes, int ncomp)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ncomp; k++) {
            bool ha = kr_component_has(a, ids[i], comps[k]), hb = kr_component_has(b, ids[i], comps[k]);
            cr_assert_eq(ha, hb, "entity %d, component %u: %d against %d", i, comps[k], ha, hb);
            if (ha && sizes[k])
                cr_assert(!memcmp(kr_component_get(a, ids[i], comps[k]), kr_component_get(b, ids[i], comps[k]),
                                  sizes[k]), "entity %d, component %u: values differ", i, comps[k]);
        }
    for (int k = 0; k < ncomp; k++) {
        kr_view_t va, vb;
        cr_assert_eq(kr_view_init(&va, a, &(kr_view_desc_t){ .include = { comps[k] } }), KR_OK);
        cr_assert_eq(kr_view_init(&vb, b, &(kr_view_desc_t){ .include = { comps[k] } }), KR_OK);
        while (kr_view_next(&va)) {
            cr_assert(kr_view_next(&vb));
            cr_assert_eq(kr_view_entity(&va), kr_view_entity(&vb));
        }
        cr_assert_not(kr_view_next(&vb));
        kr_view_fini(&va);
        kr_view_fini(&vb);
    }
}

/* Batches change what the same single calls change, value by value and
 * row by row: table components (rows moving between four tables), a tag
 * and a sparse component, in a shuffled order. */
Test(component, add_n_and_remove_n_match_single_calls)
{
    enum { N = 800 };
    kr_component_t tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "Marked" });
    kr_component_t sparse = kr_component_register(reg, &(kr_component_desc_t){
        .name = "Note", .size = sizeof(uint64_t), .storage = KR_STORAGE_SPARSE });
    kr_world_t *w2 = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    static kr_entity_t ids[N], ids2[N], pick[N];
    fill_shapes(w, ids, N);
    fill_shapes(w2, ids2, N);
    cr_assert(!memcmp(ids, ids2, sizeof ids));
    const kr_component_t comps[] = { pos, vel, cap, tag, sparse };
    const size_t sizes[] = { sizeof(vec2_t), sizeof(vec2_t), sizeof(capacity_t), 0, sizeof(uint64_t) };
    uint64_t rng = 12345;
    struct { kr_component_t c; bool add; } steps[] = {
        { vel, true }, { tag, true }, { sparse, true }, { pos, false },
        { vel, false }, { tag, false }, { cap, true }, { sparse, false },
    };
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        /* The entities the step can change: those with (remove) or
         * without (add) the component, shuffled. */
        int n = 0;
        for (int i = 0; i < N; i++)
            if (kr_component_has(w, ids[i], steps[s].c) != steps[s].add) pick[n++] = ids[i];
        cr_assert_gt(n, 100, "step %zu changes %d entities", s, n);
        shuffle_entities(pick, n, &rng);
        for (int i = 0; i < n; i++) {
            if (steps[s].add) cr_assert_not_null(kr_component_add(w, pick[i], steps[s].c), "%s", kr_last_error());
            else cr_assert_eq(kr_component_remove(w, pick[i], steps[s].c), KR_OK, "%s", kr_last_error());
        }
        size_t done = 0;
        kr_status_t st = steps[s].add ? kr_component_add_n(w2, (size_t)n, pick, steps[s].c, &done)
                                      : kr_component_remove_n(w2, (size_t)n, pick, steps[s].c, &done);
        cr_assert_eq(st, KR_OK, "step %zu: %s", s, kr_last_error());
        cr_assert_eq(done, (size_t)n);
        assert_same_worlds(w, w2, ids, N, comps, sizes, 5);
    }
    cr_assert_eq(kr_world_digest(w), kr_world_digest(w2));
    kr_world_destroy(w2);
}

/* A batch stops at its first failing call, with that call's error: the
 * entities before it are changed, those after it are not. */
Test(component, add_n_and_remove_n_stop_at_the_first_failure)
{
    kr_entity_t e[5];
    for (int i = 0; i < 5; i++) e[i] = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e[2], pos));
    size_t done = 99;
    cr_assert_eq(kr_component_add_n(w, 5, e, pos, &done), KR_ERR_EXISTS);
    cr_assert_eq(done, 2);
    cr_assert(kr_component_has(w, e[0], pos) && kr_component_has(w, e[1], pos));
    cr_assert_not(kr_component_has(w, e[3], pos) || kr_component_has(w, e[4], pos));
    cr_assert_not_null(strstr(kr_last_error(), "kr_component_add"), "%s", kr_last_error());
    /* A stale entity in a remove. */
    cr_assert_eq(kr_entity_destroy(w, e[1]), KR_OK);
    cr_assert_eq(kr_component_remove_n(w, 3, e, pos, &done), KR_ERR_STALE_ENTITY);
    cr_assert_eq(done, 1);
    cr_assert_not(kr_component_has(w, e[0], pos));
    cr_assert(kr_component_has(w, e[2], pos));
    /* Not during a chunk pass, as the single calls. */
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } }), KR_OK);
    kr_view_chunk_t chunk;
    cr_assert(kr_view_next_chunk(&v, &chunk));
    cr_assert_eq(kr_component_add_n(w, 2, &e[3], pos, &done), KR_ERR_LOCKED);
    cr_assert_eq(done, 0);
    kr_view_fini(&v);
    /* Arguments. */
    cr_assert_eq(kr_component_add_n(w, 0, NULL, pos, &done), KR_OK);
    cr_assert_eq(done, 0);
    cr_assert_eq(kr_component_add_n(NULL, 1, e, pos, &done), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "world"), "%s", kr_last_error());
    cr_assert_eq(kr_component_remove_n(w, 1, NULL, pos, NULL), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "kr_component_remove_n: expected a world and 1 entities, found a NULL "
                                             "entity array"), "%s", kr_last_error());
    cr_assert_eq(kr_component_add_n(w, 1, &e[3], 9999, NULL), KR_ERR_UNREGISTERED);
}

Test(component, has_reports_an_unregistered_component)
{
    kr_entity_t e = kr_entity_create(w);
    kr_clear_error();
    cr_assert_not(kr_component_has(w, e, 999));
    cr_assert_eq(kr_last_status(), KR_ERR_UNREGISTERED);
    cr_assert(strstr(kr_last_error(), "kr_component_has: component 999 is not registered"), "%s", kr_last_error());
    /* a registered one the entity lacks: false, nothing reported */
    kr_clear_error();
    cr_assert_not(kr_component_has(w, e, pos));
    cr_assert_eq(kr_last_status(), KR_OK);
}
