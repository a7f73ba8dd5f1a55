/* The entity tree: ERS's ordered children and sibling links, creation
 * under a parent, insert_before, reparenting, detaching, reordering without
 * callbacks, cycle refusal, post-order subtree destruction, stale ids, a deep
 * chain, and random operations checked link by link against a plain model. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kairos/kairos.h"

/* ---- helpers ----------------------------------------------------------- */

/* Worlds and registries made by a test are freed by the suite's fini, so a
 * failed assertion does not leak them (keeps sanitizer output to the point). */
static kr_world_t *worlds[4];
static kr_registry_t *registries[4];

static kr_world_t *make_world(kr_registry_t *reg)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    cr_assert_not_null(w, "%s", kr_last_error());
    for (int i = 0; i < 4; i++)
        if (!worlds[i]) { worlds[i] = w; break; }
    return w;
}

static void drop_world(kr_world_t *w)
{
    for (int i = 0; i < 4; i++)
        if (worlds[i] == w) worlds[i] = NULL;
    kr_world_destroy(w);
}

static kr_registry_t *make_registry(void)
{
    kr_registry_t *reg = kr_registry_create();
    cr_assert_not_null(reg);
    for (int i = 0; i < 4; i++)
        if (!registries[i]) { registries[i] = reg; break; }
    return reg;
}

static void drop_registry(kr_registry_t *reg)
{
    for (int i = 0; i < 4; i++)
        if (registries[i] == reg) registries[i] = NULL;
    kr_registry_destroy(reg);
}

static void cleanup(void)
{
    for (int i = 0; i < 4; i++) {
        if (worlds[i]) kr_world_destroy(worlds[i]);
        worlds[i] = NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (registries[i]) kr_registry_destroy(registries[i]);
        registries[i] = NULL;
    }
}

TestSuite(hierarchy, .fini = cleanup);

static kr_entity_t make(kr_world_t *w, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = parent });
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}

static void set_parent(kr_world_t *w, kr_entity_t c, kr_entity_t p)
{
    kr_status_t st = kr_entity_set_parent(w, c, p);
    cr_assert_eq(st, KR_OK, "set_parent: %s", kr_last_error());
}

/* Asserts that p's children are exactly want[0..n), in order, walking both
 * directions, and that every child names p as its parent. */
static void assert_children(const kr_world_t *w, kr_entity_t p, const kr_entity_t *want, size_t n)
{
    cr_assert_eq(kr_entity_child_count(w, p), n, "child_count %zu, want %zu",
                 kr_entity_child_count(w, p), n);
    kr_entity_t c = kr_entity_first_child(w, p);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(c, want[i], "child %zu of %llu is %llu, want %llu", i, (unsigned long long)p,
                     (unsigned long long)c, (unsigned long long)want[i]);
        cr_assert_eq(kr_entity_parent(w, c), p);
        cr_assert_eq(kr_entity_prev_sibling(w, c), i ? want[i - 1] : KR_ENTITY_INVALID);
        cr_assert_eq(kr_entity_next_sibling(w, c), i + 1 < n ? want[i + 1] : KR_ENTITY_INVALID);
        c = kr_entity_next_sibling(w, c);
    }
    cr_assert_eq(c, KR_ENTITY_INVALID);
    c = kr_entity_last_child(w, p);
    for (size_t i = n; i-- > 0;) {
        cr_assert_eq(c, want[i], "backward walk: child %zu", i);
        c = kr_entity_prev_sibling(w, c);
    }
    cr_assert_eq(c, KR_ENTITY_INVALID);
}

static void assert_root_leaf(const kr_world_t *w, kr_entity_t e)
{
    cr_assert_eq(kr_entity_parent(w, e), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_prev_sibling(w, e), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_next_sibling(w, e), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_first_child(w, e), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_last_child(w, e), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_child_count(w, e), 0);
}

/* A behavior that logs every hierarchy callback and on_destroy. */
enum { EV_DESTROY = 1, EV_ENTERING, EV_ENTERED, EV_EXITING, EV_EXITED };
typedef struct ev { kr_entity_t self; int cb; kr_entity_t arg; } ev_t;
static ev_t evlog[4096];
static size_t evn;

static void ev_push(kr_entity_t self, int cb, kr_entity_t arg)
{
    if (evn < sizeof evlog / sizeof evlog[0]) evlog[evn] = (ev_t){ self, cb, arg };
    evn++;
}
static void cb_destroy(kr_world_t *w, kr_entity_t s, void *st) { (void)w; (void)st; ev_push(s, EV_DESTROY, 0); }
static void cb_entering(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)w; (void)st; ev_push(s, EV_ENTERING, a); }
static void cb_entered(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)w; (void)st; ev_push(s, EV_ENTERED, a); }
static void cb_exiting(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)w; (void)st; ev_push(s, EV_EXITING, a); }
static void cb_exited(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)w; (void)st; ev_push(s, EV_EXITED, a); }

static const kr_behavior_vtbl_t log_vtbl = {
    .on_destroy = cb_destroy, .on_entering = cb_entering, .on_entered = cb_entered,
    .on_exiting = cb_exiting, .on_exited = cb_exited,
};

static kr_component_t register_logger(kr_registry_t *reg)
{
    kr_component_t b = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "tree_logger", .state_size = sizeof(int), .vtbl = &log_vtbl });
    cr_assert_neq(b, KR_COMPONENT_NONE, "%s", kr_last_error());
    return b;
}

static kr_entity_t make_logged(kr_world_t *w, kr_component_t b, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){
        .parent = parent, .components = &b, .component_count = 1 });
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}

/* ---- ERS's examples ---------------------------------------------- */

Test(hierarchy, new_entity_is_a_root_without_links)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t e = make(w, 0);
    assert_root_leaf(w, e);
    drop_world(w);
}

Test(hierarchy, children_are_ordered_with_sibling_links)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t a = kr_entity_create(w), b = kr_entity_create(w), c = kr_entity_create(w);
    set_parent(w, a, p);
    set_parent(w, b, p);
    set_parent(w, c, p);
    assert_children(w, p, (kr_entity_t[]){ a, b, c }, 3);
    cr_assert_eq(kr_entity_first_child(w, p), a);
    cr_assert_eq(kr_entity_last_child(w, p), c);
    cr_assert_eq(kr_entity_next_sibling(w, a), b);
    cr_assert_eq(kr_entity_prev_sibling(w, b), a);
    cr_assert_eq(kr_entity_parent(w, b), p);
    cr_assert_eq(kr_entity_parent(w, p), KR_ENTITY_INVALID);
    /* Grandchildren do not show up among the children. */
    kr_entity_t g = make(w, b);
    assert_children(w, p, (kr_entity_t[]){ a, b, c }, 3);
    assert_children(w, b, &g, 1);
    cr_assert_eq(kr_entity_parent(w, g), b);
    drop_world(w);
}

Test(hierarchy, create_with_parent_appends_as_last_child)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t k[5];
    for (int i = 0; i < 5; i++) {
        k[i] = make(w, p);
        assert_children(w, p, k, (size_t)i + 1);
    }
    drop_world(w);
}

Test(hierarchy, create_with_stale_parent_fails_and_creates_nothing)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    cr_assert_eq(kr_entity_destroy(w, p), KR_OK);
    size_t before = kr_world_entity_count(w);
    kr_clear_error();
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = p });
    cr_assert_eq(e, KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_world_entity_count(w), before);
    drop_world(w);
}

/* ---- insert_before ----------------------------------------------------- */

Test(hierarchy, insert_before_places_child_before_sibling)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t a = make(w, p), b = make(w, p);
    kr_entity_t x = kr_entity_create(w), y = kr_entity_create(w), z = kr_entity_create(w);
    cr_assert_eq(kr_entity_insert_before(w, x, p, a), KR_OK, "%s", kr_last_error()); /* new first */
    assert_children(w, p, (kr_entity_t[]){ x, a, b }, 3);
    cr_assert_eq(kr_entity_insert_before(w, y, p, b), KR_OK, "%s", kr_last_error()); /* middle */
    assert_children(w, p, (kr_entity_t[]){ x, a, y, b }, 4);
    cr_assert_eq(kr_entity_insert_before(w, z, p, y), KR_OK, "%s", kr_last_error());
    assert_children(w, p, (kr_entity_t[]){ x, a, z, y, b }, 5);
    drop_world(w);
}

Test(hierarchy, insert_before_moves_from_another_parent)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0), q = make(w, 0);
    kr_entity_t a = make(w, p), b = make(w, p), c = make(w, p);
    kr_entity_t s = make(w, q), t = make(w, q);
    cr_assert_eq(kr_entity_insert_before(w, b, q, t), KR_OK, "%s", kr_last_error());
    assert_children(w, p, (kr_entity_t[]){ a, c }, 2);
    assert_children(w, q, (kr_entity_t[]){ s, b, t }, 3);
    drop_world(w);
}

Test(hierarchy, insert_before_rejects_bad_siblings)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0), q = make(w, 0);
    kr_entity_t a = make(w, p), other = make(w, q), x = kr_entity_create(w);

    kr_clear_error();
    cr_assert_eq(kr_entity_insert_before(w, x, p, KR_ENTITY_INVALID), KR_ERR_INVALID_ARG);
    cr_assert_str_neq(kr_last_error(), "");
    cr_assert_eq(kr_entity_insert_before(w, x, p, other), KR_ERR_INVALID_ARG); /* child of q */
    cr_assert_eq(kr_entity_insert_before(w, x, p, q), KR_ERR_INVALID_ARG);     /* a root */
    cr_assert_eq(kr_entity_insert_before(w, x, KR_ENTITY_INVALID, a), KR_ERR_INVALID_ARG);
    kr_entity_t dead = kr_entity_create(w);
    kr_entity_destroy(w, dead);
    cr_assert_eq(kr_entity_insert_before(w, x, p, dead), KR_ERR_STALE_ENTITY);
    /* Nothing moved. */
    assert_root_leaf(w, x);
    assert_children(w, p, &a, 1);
    assert_children(w, q, &other, 1);
    drop_world(w);
}

/* ---- reparent, detach, reorder ---------------------------------------- */

Test(hierarchy, reparent_between_parents)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0), q = make(w, 0);
    kr_entity_t a = make(w, p), b = make(w, p), c = make(w, p);
    kr_entity_t d = make(w, q);
    kr_entity_t g = make(w, b); /* b's subtree moves with it */
    set_parent(w, b, q);
    assert_children(w, p, (kr_entity_t[]){ a, c }, 2);
    assert_children(w, q, (kr_entity_t[]){ d, b }, 2);
    assert_children(w, b, &g, 1);
    /* First and last children leave too. */
    set_parent(w, a, q);
    set_parent(w, c, q);
    assert_children(w, p, NULL, 0);
    cr_assert_eq(kr_entity_first_child(w, p), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_last_child(w, p), KR_ENTITY_INVALID);
    assert_children(w, q, (kr_entity_t[]){ d, b, a, c }, 4);
    drop_world(w);
}

Test(hierarchy, detach_with_invalid_parent)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t a = make(w, p), b = make(w, p), c = make(w, p);
    set_parent(w, b, KR_ENTITY_INVALID);
    assert_root_leaf(w, b);
    assert_children(w, p, (kr_entity_t[]){ a, c }, 2);
    /* Detaching a root is a harmless no-op. */
    set_parent(w, b, KR_ENTITY_INVALID);
    assert_root_leaf(w, b);
    set_parent(w, a, 0);
    set_parent(w, c, 0);
    assert_children(w, p, NULL, 0);
    assert_root_leaf(w, p);
    drop_world(w);
}

Test(hierarchy, reorder_within_parent_fires_no_callbacks)
{
    kr_registry_t *reg = make_registry();
    kr_component_t lb = register_logger(reg);
    kr_world_t *w = make_world(reg);
    kr_entity_t p = make_logged(w, lb, 0);
    kr_entity_t a = make_logged(w, lb, p), b = make_logged(w, lb, p), c = make_logged(w, lb, p);
    evn = 0;
    set_parent(w, a, p); /* already a child: moves to the end */
    assert_children(w, p, (kr_entity_t[]){ b, c, a }, 3);
    cr_assert_eq(kr_entity_insert_before(w, a, p, b), KR_OK, "%s", kr_last_error());
    assert_children(w, p, (kr_entity_t[]){ a, b, c }, 3);
    cr_assert_eq(kr_entity_insert_before(w, c, p, b), KR_OK, "%s", kr_last_error());
    assert_children(w, p, (kr_entity_t[]){ a, c, b }, 3);
    cr_assert_eq(kr_entity_insert_before(w, a, p, c), KR_OK); /* already there */
    assert_children(w, p, (kr_entity_t[]){ a, c, b }, 3);
    cr_assert_eq(kr_entity_insert_before(w, c, p, c), KR_OK); /* before itself */
    assert_children(w, p, (kr_entity_t[]){ a, c, b }, 3);
    cr_assert_eq(evn, 0, "reordering fired %zu callbacks (first: cb %d)", evn, evn ? evlog[0].cb : 0);
    drop_world(w);
    drop_registry(reg);
}

/* ---- cycles ------------------------------------------------------------- */

Test(hierarchy, cycles_are_refused)
{
    kr_registry_t *reg = make_registry();
    kr_component_t lb = register_logger(reg);
    kr_world_t *w = make_world(reg);
    kr_entity_t r = make_logged(w, lb, 0);
    kr_entity_t a = make_logged(w, lb, r);
    kr_entity_t b = make_logged(w, lb, a);
    kr_entity_t c = make_logged(w, lb, b);
    kr_entity_t c2 = make(w, c);
    kr_entity_t lone = kr_entity_create(w);
    evn = 0;

    kr_clear_error();
    cr_assert_eq(kr_entity_set_parent(w, r, c), KR_ERR_CYCLE);          /* root under its leaf */
    cr_assert_eq(kr_last_status(), KR_ERR_CYCLE);
    cr_assert_str_neq(kr_last_error(), "");
    cr_assert_eq(kr_entity_set_parent(w, a, b), KR_ERR_CYCLE);          /* under its child */
    cr_assert_eq(kr_entity_set_parent(w, a, a), KR_ERR_CYCLE);          /* self */
    cr_assert_eq(kr_entity_set_parent(w, r, r), KR_ERR_CYCLE);
    cr_assert_eq(kr_entity_set_parent(w, lone, lone), KR_ERR_CYCLE);
    /* insert_before must check too: a is an ancestor of c. */
    cr_assert_eq(kr_entity_insert_before(w, a, c, c2), KR_ERR_CYCLE);
    cr_assert_eq(evn, 0, "a refused reparent fired callbacks");

    /* The tree is untouched. */
    cr_assert_eq(kr_entity_parent(w, r), KR_ENTITY_INVALID);
    assert_children(w, r, &a, 1);
    assert_children(w, a, &b, 1);
    assert_children(w, b, &c, 1);
    assert_children(w, c, &c2, 1);
    assert_root_leaf(w, lone);
    /* Moving down a sibling branch is fine. */
    kr_entity_t side = make(w, r);
    set_parent(w, side, c);
    assert_children(w, c, (kr_entity_t[]){ c2, side }, 2);
    drop_world(w);
    drop_registry(reg);
}

/* ---- destroy ---------------------------------------------------------- */

static size_t destroy_pos(kr_entity_t e)
{
    for (size_t i = 0; i < evn; i++)
        if (evlog[i].self == e && evlog[i].cb == EV_DESTROY) return i;
    return (size_t)-1;
}

static size_t destroy_count(kr_entity_t e)
{
    size_t n = 0;
    for (size_t i = 0; i < evn; i++) n += evlog[i].self == e && evlog[i].cb == EV_DESTROY;
    return n;
}

Test(hierarchy, destroy_takes_the_subtree_children_first)
{
    kr_registry_t *reg = make_registry();
    kr_component_t lb = register_logger(reg);
    kr_world_t *w = make_world(reg);
    /*        top
     *         |
     *         r ----------- keep
     *      /  |  \
     *     a   b   c
     *    / \      |
     *  a1  a2     c1
     *       |
     *      a21                       */
    kr_entity_t top = make_logged(w, lb, 0);
    kr_entity_t r = make_logged(w, lb, top), keep = make_logged(w, lb, top);
    kr_entity_t a = make_logged(w, lb, r), b = make_logged(w, lb, r), c = make_logged(w, lb, r);
    kr_entity_t a1 = make_logged(w, lb, a), a2 = make_logged(w, lb, a), c1 = make_logged(w, lb, c);
    kr_entity_t a21 = make_logged(w, lb, a2);
    kr_entity_t sub[] = { r, a, b, c, a1, a2, c1, a21 };
    size_t nsub = sizeof sub / sizeof sub[0];
    size_t before = kr_world_entity_count(w);
    evn = 0;
    cr_assert_eq(kr_entity_destroy(w, r), KR_OK, "%s", kr_last_error());

    cr_assert_eq(kr_world_entity_count(w), before - nsub);
    for (size_t i = 0; i < nsub; i++) {
        cr_assert_not(kr_entity_alive(w, sub[i]), "subtree member %zu survived", i);
        cr_assert_eq(destroy_count(sub[i]), 1, "member %zu got %zu on_destroy", i, destroy_count(sub[i]));
    }
    /* Post-order: every entity's on_destroy comes after its descendants'. */
    struct { kr_entity_t parent, child; } edges[] = {
        { r, a }, { r, b }, { r, c }, { a, a1 }, { a, a2 }, { a2, a21 }, { c, c1 },
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        cr_assert_gt(destroy_pos(edges[i].parent), destroy_pos(edges[i].child),
                     "edge %zu: parent destroyed before its child", i);
    /* The surviving parent got exactly one on_exited, for r, after r's on_destroy. */
    size_t top_exits = 0;
    for (size_t i = 0; i < evn; i++) {
        if (evlog[i].self != top || evlog[i].cb != EV_EXITED) continue;
        top_exits++;
        cr_assert_eq(evlog[i].arg, r);
        cr_assert_gt(i, destroy_pos(r));
    }
    cr_assert_eq(top_exits, 1);
    cr_assert_eq(destroy_count(top), 0);
    cr_assert_eq(destroy_count(keep), 0);
    assert_children(w, top, &keep, 1);
    drop_world(w);
    drop_registry(reg);
}

/* Destroying r's subtree: r itself gets no on_exited for its children (it is
 * going away), so neither should any other member of the subtree. Only the
 * parent outside the subtree hears about it. */
Test(hierarchy, destroy_subtree_members_get_no_on_exited)
{
    kr_registry_t *reg = make_registry();
    kr_component_t lb = register_logger(reg);
    kr_world_t *w = make_world(reg);
    kr_entity_t top = make_logged(w, lb, 0);
    kr_entity_t r = make_logged(w, lb, top);
    kr_entity_t a = make_logged(w, lb, r);
    kr_entity_t a1 = make_logged(w, lb, a);
    (void)a1;
    evn = 0;
    cr_assert_eq(kr_entity_destroy(w, r), KR_OK);
    for (size_t i = 0; i < evn; i++) {
        if (evlog[i].cb != EV_EXITED) continue;
        cr_assert_eq(evlog[i].self, top,
                     "entity %llu, itself being destroyed, got on_exited(%llu) (event %zu); "
                     "r got none for its own children",
                     (unsigned long long)evlog[i].self, (unsigned long long)evlog[i].arg, i);
    }
    drop_world(w);
    drop_registry(reg);
}

Test(hierarchy, destroy_leaf_updates_siblings)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t a = make(w, p), b = make(w, p), c = make(w, p), d = make(w, p);
    cr_assert_eq(kr_entity_destroy(w, b), KR_OK);
    assert_children(w, p, (kr_entity_t[]){ a, c, d }, 3);
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK); /* first */
    assert_children(w, p, (kr_entity_t[]){ c, d }, 2);
    cr_assert_eq(kr_entity_destroy(w, d), KR_OK); /* last */
    assert_children(w, p, &c, 1);
    cr_assert_eq(kr_entity_destroy(w, c), KR_OK);
    assert_root_leaf(w, p);
    drop_world(w);
}

/* A recycled index must start as a fresh root with no stale links. */
Test(hierarchy, recycled_slot_has_no_links)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t c = make(w, p);
    kr_entity_t g = make(w, c);
    (void)g;
    cr_assert_eq(kr_entity_destroy(w, p), KR_OK);
    cr_assert_eq(kr_world_entity_count(w), 0);
    kr_entity_t n[3];
    for (int i = 0; i < 3; i++) {
        n[i] = kr_entity_create(w);
        assert_root_leaf(w, n[i]);
    }
    drop_world(w);
}

/* ---- child_count and stale ids ---------------------------------------- */

Test(hierarchy, child_count_tracks_changes)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0), q = make(w, 0);
    cr_assert_eq(kr_entity_child_count(w, p), 0);
    kr_entity_t k[10];
    for (int i = 0; i < 10; i++) {
        k[i] = make(w, p);
        cr_assert_eq(kr_entity_child_count(w, p), (size_t)i + 1);
    }
    make(w, k[0]); /* grandchildren are not counted */
    cr_assert_eq(kr_entity_child_count(w, p), 10);
    set_parent(w, k[3], q);
    cr_assert_eq(kr_entity_child_count(w, p), 9);
    cr_assert_eq(kr_entity_child_count(w, q), 1);
    set_parent(w, k[4], 0);
    cr_assert_eq(kr_entity_child_count(w, p), 8);
    kr_entity_destroy(w, k[0]);
    cr_assert_eq(kr_entity_child_count(w, p), 7);
    set_parent(w, k[5], p); /* reorder keeps the count */
    cr_assert_eq(kr_entity_child_count(w, p), 7);
    drop_world(w);
}

Test(hierarchy, stale_ids_return_invalid_and_set_last_error)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t p = make(w, 0);
    kr_entity_t c = make(w, p);
    make(w, c);
    kr_entity_t live = make(w, 0);
    cr_assert_eq(kr_entity_destroy(w, c), KR_OK);
    kr_entity_t never = kr_entity_make(123456, 1); /* index never used */
    kr_entity_t stale[] = { c, KR_ENTITY_INVALID, never, kr_entity_make(kr_entity_index(p), 7) };

    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        kr_entity_t s = stale[i];
        kr_entity_t (*q[])(const kr_world_t *, kr_entity_t) = {
            kr_entity_parent, kr_entity_first_child, kr_entity_last_child,
            kr_entity_next_sibling, kr_entity_prev_sibling,
        };
        for (size_t f = 0; f < sizeof q / sizeof q[0]; f++) {
            kr_clear_error();
            cr_assert_eq(q[f](w, s), KR_ENTITY_INVALID, "id %zu, query %zu", i, f);
            cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY, "id %zu, query %zu", i, f);
            cr_assert_str_neq(kr_last_error(), "", "id %zu, query %zu", i, f);
        }
        kr_clear_error();
        cr_assert_eq(kr_entity_child_count(w, s), 0);
        cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
        kr_clear_error();
        cr_assert_eq(kr_entity_set_parent(w, s, live), KR_ERR_STALE_ENTITY, "id %zu as child", i);
        cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
        if (s) {
            kr_clear_error();
            cr_assert_eq(kr_entity_set_parent(w, live, s), KR_ERR_STALE_ENTITY, "id %zu as parent", i);
            cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
        }
        cr_assert_eq(kr_entity_destroy(w, s), KR_ERR_STALE_ENTITY);
    }
    /* A null world is reported as well. */
    kr_clear_error();
    cr_assert_eq(kr_entity_parent(NULL, p), KR_ENTITY_INVALID);
    cr_assert_neq(kr_last_status(), KR_OK);
    cr_assert_eq(kr_entity_child_count(NULL, p), 0);
    cr_assert_neq(kr_entity_set_parent(NULL, live, p), KR_OK);
    /* Failures did not disturb the live tree. */
    assert_children(w, p, NULL, 0);
    assert_root_leaf(w, live);
    drop_world(w);
}

/* ---- deep chain --------------------------------------------------------- */

#define DEEP 100000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A chain e[0] <- e[1] <- ... built bottom-up: each attach makes a fresh
 * root the parent of a deep chain, so the cycle check walks one ancestor. */
static kr_entity_t chain[DEEP];

static kr_entity_t *bottom_up_chain(kr_world_t *w)
{
    kr_entity_t *e = chain;
    for (size_t i = 0; i < DEEP; i++) e[i] = kr_entity_create(w);
    for (size_t i = DEEP - 1; i > 0; i--) set_parent(w, e[i], e[i - 1]);
    cr_assert_eq(kr_entity_parent(w, e[DEEP - 1]), e[DEEP - 2]);
    cr_assert_eq(kr_entity_child_count(w, e[0]), 1);
    cr_assert_eq(kr_world_entity_count(w), DEEP);
    return e;
}

/* A recursive destroy would overflow the stack long before 100,000 levels;
 * the walk must also be linear: a linear walk needs milliseconds here, so
 * 5 s (and the 20 s test timeout, for sanitizer builds) only catch a walk
 * that restarts from the root for every victim. */
Test(hierarchy, deep_chain_destroys_without_stack_overflow, .timeout = 20)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t *e = bottom_up_chain(w);
    double t0 = now_s();
    cr_assert_eq(kr_entity_destroy(w, e[0]), KR_OK, "%s", kr_last_error());
    double dt = now_s() - t0;
    cr_assert_eq(kr_world_entity_count(w), 0);
    cr_assert_not(kr_entity_alive(w, e[DEEP / 2]));
    cr_assert_not(kr_entity_alive(w, e[DEEP - 1]));
    cr_assert_lt(dt, 5.0, "destroying a %d-deep chain took %.1f s (quadratic walk?)", DEEP, dt);
    drop_world(w);
}

/* The same chain left to kr_world_destroy. */
Test(hierarchy, deep_chain_freed_by_world_destroy, .timeout = 20)
{
    kr_world_t *w = make_world(NULL);
    bottom_up_chain(w);
    double t0 = now_s();
    drop_world(w);
    double dt = now_s() - t0;
    cr_assert_lt(dt, 5.0, "kr_world_destroy of a %d-deep chain took %.1f s", DEEP, dt);
}

/* Grown top-down with desc.parent, the way a user would build it: the new
 * entity is a leaf, so it cannot be an ancestor of the parent and no walk
 * up the chain is needed. */
Test(hierarchy, deep_chain_built_top_down_with_desc_parent, .timeout = 20)
{
    kr_world_t *w = make_world(NULL);
    kr_entity_t first = make(w, 0), prev = first;
    double t0 = now_s();
    for (size_t i = 1; i < DEEP; i++) prev = make(w, prev);
    double dt = now_s() - t0;
    cr_assert_eq(kr_world_entity_count(w), DEEP);
    cr_assert_neq(kr_entity_parent(w, prev), KR_ENTITY_INVALID);
    /* Destroy from the bottom, one leaf at a time: linear whatever the
     * destroy walk is (so this test only measures creation). */
    while (prev != first) {
        kr_entity_t up = kr_entity_parent(w, prev);
        cr_assert_eq(kr_entity_destroy(w, prev), KR_OK);
        prev = up;
    }
    cr_assert_eq(kr_entity_child_count(w, first), 0);
    cr_assert_eq(kr_world_entity_count(w), 1);
    drop_world(w);
    cr_assert_lt(dt, 5.0, "creating a %d-deep chain with desc.parent took %.1f s "
                 "(cycle check walks every ancestor of the parent?)", DEEP, dt);
}

/* ---- random operations against a model --------------------------------- */

#define NMAX 400

typedef struct model {
    kr_entity_t id[NMAX];
    bool alive[NMAX];
    int parent[NMAX];           /* -1 for none */
    int kids[NMAX][NMAX];       /* ordered children */
    int nkids[NMAX];
} model_t;

static model_t M;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static void m_unlink(int c)
{
    int p = M.parent[c];
    if (p < 0) return;
    int k = 0;
    while (M.kids[p][k] != c) k++;
    memmove(&M.kids[p][k], &M.kids[p][k + 1], (size_t)(M.nkids[p] - k - 1) * sizeof(int));
    M.nkids[p]--;
    M.parent[c] = -1;
}

static void m_link(int c, int p, int before)
{
    int at = M.nkids[p];
    if (before >= 0) {
        at = 0;
        while (M.kids[p][at] != before) at++;
    }
    memmove(&M.kids[p][at + 1], &M.kids[p][at], (size_t)(M.nkids[p] - at) * sizeof(int));
    M.kids[p][at] = c;
    M.nkids[p]++;
    M.parent[c] = p;
}

static bool m_is_ancestor(int anc, int of)
{
    for (int a = of; a >= 0; a = M.parent[a])
        if (a == anc) return true;
    return false;
}

static void m_destroy(int e)
{
    while (M.nkids[e]) m_destroy(M.kids[e][M.nkids[e] - 1]);
    m_unlink(e);
    M.alive[e] = false;
}

static int random_live(void)
{
    int n = 0, pick[NMAX];
    for (int i = 0; i < NMAX; i++)
        if (M.alive[i]) pick[n++] = i;
    return n ? pick[rnd((uint32_t)n)] : -1;
}

static void check_against_model(const kr_world_t *w, int step)
{
    size_t live = 0;
    for (int i = 0; i < NMAX; i++) {
        if (!M.alive[i]) continue;
        live++;
        kr_entity_t e = M.id[i];
        cr_assert(kr_entity_alive(w, e), "step %d: slot %d should be alive", step, i);
        kr_entity_t want_parent = M.parent[i] >= 0 ? M.id[M.parent[i]] : KR_ENTITY_INVALID;
        cr_assert_eq(kr_entity_parent(w, e), want_parent, "step %d: parent of slot %d", step, i);
        int n = M.nkids[i];
        cr_assert_eq(kr_entity_child_count(w, e), (size_t)n, "step %d: child_count of slot %d", step, i);
        kr_entity_t c = kr_entity_first_child(w, e);
        for (int k = 0; k < n; k++) {
            kr_entity_t want = M.id[M.kids[i][k]];
            cr_assert_eq(c, want, "step %d: child %d of slot %d", step, k, i);
            cr_assert_eq(kr_entity_prev_sibling(w, c), k ? M.id[M.kids[i][k - 1]] : KR_ENTITY_INVALID,
                         "step %d: prev of child %d of slot %d", step, k, i);
            c = kr_entity_next_sibling(w, c);
        }
        cr_assert_eq(c, KR_ENTITY_INVALID, "step %d: children of slot %d run on", step, i);
        cr_assert_eq(kr_entity_last_child(w, e), n ? M.id[M.kids[i][n - 1]] : KR_ENTITY_INVALID,
                     "step %d: last child of slot %d", step, i);
        if (M.parent[i] < 0) {
            cr_assert_eq(kr_entity_prev_sibling(w, e), KR_ENTITY_INVALID);
            cr_assert_eq(kr_entity_next_sibling(w, e), KR_ENTITY_INVALID);
        }
    }
    cr_assert_eq(kr_world_entity_count(w), live, "step %d: entity count", step);
}

Test(hierarchy, random_operations_match_a_model, .timeout = 100)
{
    kr_world_t *w = make_world(NULL);
    memset(&M, 0, sizeof M);
    kr_entity_t dead[64];
    size_t ndead = 0;
    const int steps = 20000;
    for (int step = 0; step < steps; step++) {
        uint32_t op = rnd(100);
        int x = random_live();
        if (x < 0 || op < 25) {
            /* create, under a random parent half of the time */
            int slot = -1;
            for (int i = 0; i < NMAX && slot < 0; i++)
                if (!M.alive[i]) slot = i;
            if (slot < 0) continue;
            int p = (x >= 0 && rnd(2)) ? x : -1;
            kr_entity_t e = make(w, p >= 0 ? M.id[p] : 0);
            M.id[slot] = e;
            M.alive[slot] = true;
            M.parent[slot] = -1;
            M.nkids[slot] = 0;
            if (p >= 0) m_link(slot, p, -1);
        } else if (op < 55) {
            /* set_parent to a random entity or detach */
            int p = rnd(8) ? random_live() : -1;
            kr_status_t st = kr_entity_set_parent(w, M.id[x], p >= 0 ? M.id[p] : 0);
            if (p >= 0 && m_is_ancestor(x, p)) {
                cr_assert_eq(st, KR_ERR_CYCLE, "step %d", step);
            } else {
                cr_assert_eq(st, KR_OK, "step %d: %s", step, kr_last_error());
                m_unlink(x);
                if (p >= 0) m_link(x, p, -1);
            }
        } else if (op < 75) {
            /* insert before a random child of a random parent */
            int p = random_live();
            if (M.nkids[p] == 0) continue;
            int s = M.kids[p][rnd((uint32_t)M.nkids[p])];
            kr_status_t st = kr_entity_insert_before(w, M.id[x], M.id[p], M.id[s]);
            if (m_is_ancestor(x, p)) {
                cr_assert_eq(st, KR_ERR_CYCLE, "step %d", step);
            } else {
                cr_assert_eq(st, KR_OK, "step %d: %s", step, kr_last_error());
                if (s != x) {
                    m_unlink(x);
                    m_link(x, p, s);
                }
            }
        } else if (op < 88) {
            kr_entity_t e = M.id[x];
            cr_assert_eq(kr_entity_destroy(w, e), KR_OK, "step %d: %s", step, kr_last_error());
            m_destroy(x);
            dead[ndead++ % 64] = e;
        } else if (ndead) {
            /* a stale id is refused and changes nothing */
            kr_entity_t s = dead[rnd((uint32_t)(ndead < 64 ? ndead : 64))];
            if (kr_entity_alive(w, s)) continue; /* cannot happen: generations */
            cr_assert_eq(kr_entity_set_parent(w, s, M.id[x]), KR_ERR_STALE_ENTITY, "step %d", step);
            cr_assert_eq(kr_entity_set_parent(w, M.id[x], s), KR_ERR_STALE_ENTITY, "step %d", step);
            cr_assert_eq(kr_entity_parent(w, s), KR_ENTITY_INVALID);
        }
        if (step % 50 == 0 || step == steps - 1) check_against_model(w, step);
    }
    drop_world(w);
}
