/* Views: include/exclude, chunk and entity passes, changes during a pass. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

typedef struct { float x, y; } vec2_t;
typedef struct { uint64_t current, maximum; } capacity_t;

static kr_registry_t *reg;
static kr_world_t *w;
static kr_component_t pos, vel, cap, tag;

static void setup(void)
{
    reg = kr_registry_create();
    pos = kr_component_register(reg, &(kr_component_desc_t){ .name = "Position", .size = sizeof(vec2_t) });
    vel = kr_component_register(reg, &(kr_component_desc_t){ .name = "Velocity", .size = sizeof(vec2_t) });
    cap = kr_component_register(reg, &(kr_component_desc_t){ .name = "Capacity", .size = sizeof(capacity_t) });
    tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "Frozen" });
    w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
}

static void teardown(void)
{
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

TestSuite(view, .init = setup, .fini = teardown);

static size_t count_entity_pass(kr_view_t *v)
{
    size_t n = 0;
    while (kr_view_next(v)) n++;
    return n;
}

Test(view, seed_include_and_exclude)
{
    kr_entity_t a = kr_entity_create(w), b = kr_entity_create(w), c = kr_entity_create(w);
    kr_component_add(w, a, cap);
    kr_component_add(w, a, KR_TRANSFORM);
    kr_component_add(w, b, cap);
    kr_component_add(w, c, KR_TRANSFORM);

    kr_view_t v1, v2;
    cr_assert_eq(kr_view_init(&v1, w, &(kr_view_desc_t){ .include = { cap, KR_TRANSFORM } }), KR_OK);
    cr_assert(kr_view_next(&v1));
    cr_assert_eq(kr_view_entity(&v1), a);
    cr_assert_eq(kr_view_get(&v1, 0), kr_component_get(w, a, cap));
    cr_assert_eq(kr_view_get(&v1, 1), kr_component_get(w, a, KR_TRANSFORM));
    cr_assert_not(kr_view_next(&v1));

    cr_assert_eq(kr_view_init(&v2, w, &(kr_view_desc_t){ .include = { cap }, .exclude = { KR_TRANSFORM } }), KR_OK);
    cr_assert(kr_view_next(&v2));
    cr_assert_eq(kr_view_entity(&v2), b);
    cr_assert_not(kr_view_next(&v2));
    kr_view_fini(&v1);
    kr_view_fini(&v2);
}

Test(view, chunks_are_plain_arrays_and_cover_every_match)
{
    enum { N = 3000 };
    for (int i = 0; i < N; i++) {
        kr_entity_t e = kr_entity_create(w);
        ((vec2_t *)kr_component_add(w, e, pos))->x = (float)i;
        ((vec2_t *)kr_component_add(w, e, vel))->x = 1.0f;
        if (i % 3 == 0) kr_component_add(w, e, cap);   /* a second table */
        if (i % 7 == 0) kr_component_add(w, e, tag);   /* excluded */
    }
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos, vel }, .exclude = { tag } });
    size_t seen = 0, chunks = 0;
    kr_view_chunk_t ch;
    while (kr_view_next_chunk(&v, &ch)) {
        vec2_t *p = ch.columns[0];
        const vec2_t *vv = ch.columns[1];
        for (size_t i = 0; i < ch.count; i++) {
            p[i].x += vv[i].x;
            cr_assert_not(kr_component_has(w, ch.entities[i], tag));
        }
        seen += ch.count;
        chunks++;
    }
    size_t expect = 0;
    for (int i = 0; i < N; i++) expect += i % 7 != 0;
    cr_assert_eq(seen, expect);
    cr_assert_eq(chunks, 2);
    cr_assert_eq(kr_view_count(&v), expect);
    /* Values were written through the chunk arrays. */
    kr_view_t all;
    kr_view_init(&all, w, &(kr_view_desc_t){ .include = { pos, tag } });
    while (kr_view_next(&all)) {
        vec2_t *p = kr_view_get(&all, 0);
        cr_assert_eq(p->x, (float)(int)p->x, "excluded entities untouched");
    }
    kr_view_fini(&all);
    kr_view_fini(&v);
}

Test(view, structure_is_locked_during_a_chunk_pass)
{
    kr_entity_t e = kr_entity_create(w);
    kr_component_add(w, e, pos);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_chunk_t ch;
    cr_assert(kr_view_next_chunk(&v, &ch));
    cr_assert_eq(kr_entity_create(w), KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_LOCKED);
    cr_assert_eq(kr_entity_destroy(w, e), KR_ERR_LOCKED);
    cr_assert_null(kr_component_add(w, e, vel));
    cr_assert_eq(kr_component_remove(w, e, pos), KR_ERR_LOCKED);
    cr_assert(kr_entity_alive(w, e));
    kr_view_end(&v);
    /* After the pass the world is open again. */
    cr_assert_neq(kr_entity_create(w), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_destroy(w, e), KR_OK);
    kr_view_fini(&v);
}

Test(view, destroying_during_an_entity_pass)
{
    enum { N = 1000 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        ((capacity_t *)kr_component_add(w, ids[i], cap))->current = (uint64_t)i;
    }
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { cap } });
    bool *visited = calloc(N, sizeof *visited);
    size_t n = 0;
    while (kr_view_next(&v)) {
        capacity_t *c = kr_view_get(&v, 0);
        uint64_t i = c->current;
        cr_assert_not(visited[i], "entity %llu visited twice", (unsigned long long)i);
        visited[i] = true;
        n++;
        /* Destroy self on multiples of 3, and a not yet visited entity on multiples of 5. */
        if (i % 3 == 0) cr_assert_eq(kr_entity_destroy(w, kr_view_entity(&v)), KR_OK);
        if (i % 5 == 0 && i + 1 < N) kr_entity_destroy(w, ids[i + 1]);
    }
    for (int i = 0; i < N; i++) {
        bool killed_ahead = i > 0 && (i - 1) % 5 == 0;
        cr_assert_eq(visited[i], !killed_ahead, "entity %d", i);
    }
    /* After the pass, storage is compact and every survivor is intact. */
    size_t alive = 0;
    for (int i = 0; i < N; i++) {
        if (!kr_entity_alive(w, ids[i])) continue;
        alive++;
        cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
    }
    cr_assert_eq(kr_view_count(&v), alive);
    kr_view_chunk_t ch;
    size_t in_chunks = 0;
    while (kr_view_next_chunk(&v, &ch)) {
        for (size_t i = 0; i < ch.count; i++) cr_assert_neq(ch.entities[i], KR_ENTITY_INVALID, "no holes left");
        in_chunks += ch.count;
    }
    cr_assert_eq(in_chunks, alive);
    free(visited);
    kr_view_fini(&v);
}

Test(view, adding_and_removing_during_an_entity_pass)
{
    enum { N = 600 };
    kr_entity_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create(w);
        ((capacity_t *)kr_component_add(w, ids[i], cap))->current = (uint64_t)i;
        if (i % 2) kr_component_add(w, ids[i], pos);
    }
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { cap } });
    int *visits = calloc(N, sizeof *visits);
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        uint64_t i = ((capacity_t *)kr_view_get(&v, 0))->current;
        visits[i]++;
        /* Moves the current entity into another matching table. */
        if (kr_component_has(w, e, pos)) kr_component_remove(w, e, pos);
        else kr_component_add(w, e, vel);
        /* The component pointer is re-read after the move. */
        cr_assert_eq(((capacity_t *)kr_view_get(&v, 0))->current, i);
    }
    for (int i = 0; i < N; i++) {
        cr_assert_eq(visits[i], 1, "entity %d visited %d times", i, visits[i]);
        cr_assert_eq(kr_component_has(w, ids[i], pos), false);
        cr_assert_eq(kr_component_has(w, ids[i], vel), i % 2 == 0);
        cr_assert_eq(((capacity_t *)kr_component_get(w, ids[i], cap))->current, (uint64_t)i);
    }
    free(visits);
    kr_view_fini(&v);
}

Test(view, entities_created_during_a_pass_are_not_visited)
{
    for (int i = 0; i < 10; i++) kr_component_add(w, kr_entity_create(w), cap);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { cap } });
    size_t n = 0;
    while (kr_view_next(&v)) {
        n++;
        kr_entity_t child = kr_entity_create(w);
        cr_assert_not_null(kr_component_add(w, child, cap));
        kr_component_t both[] = { cap, pos };
        cr_assert_neq(kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 }),
                      KR_ENTITY_INVALID);
    }
    cr_assert_eq(n, 10);
    cr_assert_eq(kr_view_count(&v), 30);
    cr_assert_eq(count_entity_pass(&v), 30, "a new pass sees them");
    kr_view_fini(&v);
}

Test(view, early_end_and_nested_passes)
{
    for (int i = 0; i < 20; i++) kr_component_add(w, kr_entity_create(w), cap);
    kr_view_t outer, inner;
    kr_view_init(&outer, w, &(kr_view_desc_t){ .include = { cap } });
    kr_view_init(&inner, w, &(kr_view_desc_t){ .include = { cap } });
    size_t pairs = 0;
    while (kr_view_next(&outer)) {
        pairs += count_entity_pass(&inner);
        if (pairs >= 100) break;
    }
    kr_view_end(&outer);
    cr_assert_eq(pairs, 100);
    /* A destroy during nested passes is compacted once both end. */
    while (kr_view_next(&outer)) {
        while (kr_view_next(&inner)) {
            if (kr_view_entity(&inner) != kr_view_entity(&outer)) kr_entity_destroy(w, kr_view_entity(&inner));
        }
    }
    cr_assert_eq(kr_view_count(&outer), 1);
    cr_assert_eq(count_entity_pass(&outer), 1);
    kr_view_fini(&outer);
    kr_view_fini(&inner);
}

/* kr_world_destroy before kr_view_fini, with views in the middle of their
 * passes (a loop left by break): kr_view_fini ended the pass on the freed
 * world (a crash, or a use after free under the sanitizers). Passes ended
 * in another order than begun keep the others' links right. */
Test(view, the_world_destroyed_before_views_in_a_pass)
{
    for (int i = 0; i < 10; i++) kr_component_add(w, kr_entity_create(w), pos);
    kr_view_t a, b, c, idle;
    kr_view_chunk_t chunk;
    kr_view_init(&a, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_init(&b, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_init(&c, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_init(&idle, w, &(kr_view_desc_t){ .include = { pos } });
    cr_assert(kr_view_next(&a));
    cr_assert(kr_view_next_chunk(&b, &chunk));
    cr_assert(kr_view_next(&c));
    kr_view_end(&b); /* (the middle of the list) */
    cr_assert(kr_view_next_chunk(&b, &chunk));
    kr_world_destroy(w);
    w = kr_world_create(&(kr_world_desc_t){ .registry = reg }); /* (for the teardown) */
    cr_assert_not(kr_view_next(&a), "a view of a destroyed world has nothing");
    kr_view_fini(&a);
    kr_view_fini(&b);
    kr_view_fini(&c);
    kr_view_fini(&idle);
}

Test(view, new_tables_are_picked_up)
{
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    cr_assert_eq(count_entity_pass(&v), 0);
    kr_entity_t e = kr_entity_create(w);
    kr_component_add(w, e, pos);
    kr_component_add(w, e, cap);
    cr_assert_eq(count_entity_pass(&v), 1);
    kr_view_fini(&v);
}

Test(view, bad_descriptions_are_refused)
{
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ 0 }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { 999 } }), KR_ERR_UNREGISTERED);
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos }, .exclude = { 999 } }),
                 KR_ERR_UNREGISTERED);
    cr_assert_eq(kr_view_init(&v, w, NULL), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_view_init(NULL, w, &(kr_view_desc_t){ .include = { pos } }), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } }), KR_OK);
    cr_assert_null(kr_view_get(&v, 5));
    kr_view_fini(&v);
}

Test(view, count_during_a_pass_does_not_disturb_it)
{
    kr_entity_t a = kr_entity_create(w);
    kr_component_add(w, a, pos);
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    int visits_a = 0, visits = 0, created_visited = 0;
    kr_entity_t created = KR_ENTITY_INVALID;
    while (kr_view_next(&v) && visits < 10) {
        kr_entity_t e = kr_view_entity(&v);
        visits++;
        visits_a += e == a;
        created_visited += e == created;
        if (visits == 1) {
            kr_component_add(w, a, vel); /* a moves to a table the view has not seen yet */
            kr_component_t both[2] = { pos, vel };
            created = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
            cr_assert_eq(kr_view_count(&v), 2); /* finds the new table mid-pass */
        }
    }
    kr_view_end(&v);
    cr_assert_eq(visits_a, 1);
    cr_assert_eq(created_visited, 0);
    kr_view_fini(&v);
}

Test(view, rows_stay_put_under_a_chunk_pass_when_an_entity_pass_ends)
{
    kr_entity_t e[4];
    for (int i = 0; i < 4; i++) e[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &pos,
                                                                                       .component_count = 1 });
    kr_view_t a, b;
    kr_view_init(&a, w, &(kr_view_desc_t){ .include = { pos } });
    kr_view_init(&b, w, &(kr_view_desc_t){ .include = { pos } });
    cr_assert(kr_view_next(&a));
    kr_entity_destroy(w, e[1]); /* a hole at row 1 */
    kr_view_chunk_t ch;
    cr_assert(kr_view_next_chunk(&b, &ch));
    kr_entity_t before = ch.entities[1];
    kr_view_end(&a); /* the last entity pass ends while the chunk is in hand */
    cr_assert_eq(ch.entities[1], before, "rows moved under a chunk pass");
    kr_view_end(&b); /* now the hole is compacted */
    cr_assert_eq(kr_view_count(&b), 3);
    size_t rows = 0;
    while (kr_view_next_chunk(&b, &ch)) {
        for (size_t i = 0; i < ch.count; i++) cr_assert_neq(ch.entities[i], KR_ENTITY_INVALID);
        rows += ch.count;
    }
    cr_assert_eq(rows, 3);
    kr_view_fini(&a);
    kr_view_fini(&b);
}

Test(view, get_outside_an_entity_pass_says_so)
{
    kr_entity_t e = kr_entity_create(w);
    cr_assert_not_null(kr_component_add(w, e, pos));
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { pos } });
    cr_assert_null(kr_view_get(&v, 0));
    cr_assert_eq(kr_last_status(), KR_ERR_STATE);
    cr_assert(strstr(kr_last_error(), "kr_view_get: no entity"), "%s", kr_last_error());
    cr_assert(kr_view_next(&v));
    cr_assert_not_null(kr_view_get(&v, 0));
    kr_view_fini(&v);
}
