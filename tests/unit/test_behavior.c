/* Behavior components (ERS's script behaviors): registration, and the
 * exact order of every lifecycle and hierarchy callback, recorded into a log
 * (entity, behavior, callback, argument, plus what the callback could see).
 * Also: state zeroed on add and kept across table moves, heap-owning state
 * released in on_destroy, and callbacks that destroy entities, add
 * components or rearrange the tree while the library is mid-operation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

/* ---- the recording behaviors ------------------------------------------- */

enum { BA = 1, BB = 2 };
enum {
    CB_CREATION = 1, CB_DESTROY, CB_AWAKE, CB_START,
    CB_ENTERING, CB_ENTERED, CB_EXITING, CB_EXITED,
};
static const char *cb_names[] = {
    "?", "creation", "destroy", "awake", "start", "entering", "entered", "exiting", "exited",
};

typedef struct ev {
    kr_entity_t self;
    int beh, cb;
    kr_entity_t arg;
    kr_entity_t parent_now; /* entering/exiting: self's parent; entered/exited: arg's parent */
    uint64_t seen;          /* creation: 1 if the state was all zero; else state->counter */
} ev_t;

#define LOG_MAX 8192
static ev_t evlog[LOG_MAX];
static size_t evn;

#define MAGIC 0x6b6169726f73ULL

typedef struct bstate {
    uint64_t magic;
    uint64_t counter;
    char *heap;      /* owned; freed in on_destroy */
    uint64_t pad[5];
} bstate_t;

static bool heap_mode;   /* on_creation allocates, on_destroy frees */
static long live_allocs;

/* Optional action run after an event is logged; tests set it. */
typedef void (*hook_fn)(kr_world_t *w, kr_entity_t self, int beh, int cb, kr_entity_t arg);
static hook_fn hook;

static void rec(kr_world_t *w, int beh, int cb, kr_entity_t self, void *state, kr_entity_t arg)
{
    bstate_t *s = state;
    ev_t ev = { self, beh, cb, arg, 0, 0 };
    if (cb == CB_ENTERING || cb == CB_EXITING) ev.parent_now = kr_entity_parent(w, self);
    if (cb == CB_ENTERED || cb == CB_EXITED) ev.parent_now = kr_entity_parent(w, arg);
    if (cb == CB_CREATION) {
        static const bstate_t zero;
        ev.seen = memcmp(s, &zero, sizeof zero) == 0;
        s->magic = MAGIC;
        if (heap_mode) {
            s->heap = malloc(1024);
            memset(s->heap, 0x5a, 1024);
            live_allocs++;
        }
    } else {
        ev.seen = s->counter;
    }
    if (cb == CB_DESTROY) {
        if (s->heap) {
            free(s->heap);
            s->heap = NULL;
            live_allocs--;
        }
        s->magic = 0xdead;
    }
    if (evn < LOG_MAX) evlog[evn] = ev;
    evn++;
    if (hook) hook(w, self, beh, cb, arg);
}

#define DEFINE_BEHAVIOR(T)                                                                        \
    static void T##_creation(kr_world_t *w, kr_entity_t s, void *st) { rec(w, T, CB_CREATION, s, st, 0); } \
    static void T##_destroy(kr_world_t *w, kr_entity_t s, void *st) { rec(w, T, CB_DESTROY, s, st, 0); }   \
    static void T##_awake(kr_world_t *w, kr_entity_t s, void *st) { rec(w, T, CB_AWAKE, s, st, 0); }       \
    static void T##_start(kr_world_t *w, kr_entity_t s, void *st) { rec(w, T, CB_START, s, st, 0); }       \
    static void T##_entering(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { rec(w, T, CB_ENTERING, s, st, a); } \
    static void T##_entered(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { rec(w, T, CB_ENTERED, s, st, a); }   \
    static void T##_exiting(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { rec(w, T, CB_EXITING, s, st, a); }   \
    static void T##_exited(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { rec(w, T, CB_EXITED, s, st, a); }     \
    static const kr_behavior_vtbl_t T##_vtbl = {                                                  \
        .on_creation = T##_creation, .on_destroy = T##_destroy, .on_awake = T##_awake,            \
        .on_start = T##_start, .on_entering = T##_entering, .on_entered = T##_entered,            \
        .on_exiting = T##_exiting, .on_exited = T##_exited,                                       \
    };

DEFINE_BEHAVIOR(BA)
DEFINE_BEHAVIOR(BB)

typedef struct dcomp { double x; int32_t y; int32_t z; } dcomp_t;

/* Per-test fixture: one registry with A, B (behaviors) and D, E (data). */
static kr_registry_t *reg;
static kr_world_t *W;
static kr_component_t A, B, D, E;

static void setup(void)
{
    evn = 0;
    hook = NULL;
    heap_mode = false;
    live_allocs = 0;
    reg = kr_registry_create();
    cr_assert_not_null(reg);
    A = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "rec_a", .state_size = sizeof(bstate_t), .vtbl = &BA_vtbl });
    B = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "rec_b", .state_size = sizeof(bstate_t), .vtbl = &BB_vtbl });
    D = kr_component_register(reg, &(kr_component_desc_t){ .name = "d", .size = sizeof(dcomp_t) });
    E = kr_component_register(reg, &(kr_component_desc_t){ .name = "e", .size = sizeof(double) });
    cr_assert(A && B && D && E, "%s", kr_last_error());
    cr_assert_lt(A, B, "tests assume A has the lower id");
    W = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    cr_assert_not_null(W, "%s", kr_last_error());
}

static void teardown(void)
{
    hook = NULL;
    kr_world_destroy(W);
    kr_registry_destroy(reg);
}

TestSuite(behavior, .init = setup, .fini = teardown);

/* ---- helpers ----------------------------------------------------------- */

static kr_entity_t ent(kr_entity_t parent, const kr_component_t *cs, size_t n)
{
    kr_entity_t e = kr_entity_create_desc(W, &(kr_entity_desc_t){
        .parent = parent, .components = cs, .component_count = n });
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}
static kr_entity_t with_a(kr_entity_t parent) { return ent(parent, &A, 1); }

static void dump_log(void)
{
    for (size_t i = 0; i < evn && i < LOG_MAX; i++)
        fprintf(stderr, "  [%zu] %llx %c.%s(%llx) parent_now=%llx seen=%llu\n", i,
                (unsigned long long)evlog[i].self, evlog[i].beh == BA ? 'A' : 'B',
                cb_names[evlog[i].cb], (unsigned long long)evlog[i].arg,
                (unsigned long long)evlog[i].parent_now, (unsigned long long)evlog[i].seen);
}

/* Asserts the log is exactly want[0..n) on (self, beh, cb, arg). */
static void expect_log(const ev_t *want, size_t n)
{
    if (evn != n) dump_log();
    cr_assert_eq(evn, n, "log has %zu events, want %zu", evn, n);
    for (size_t i = 0; i < n; i++) {
        bool ok = evlog[i].self == want[i].self && evlog[i].beh == want[i].beh &&
                  evlog[i].cb == want[i].cb && evlog[i].arg == want[i].arg;
        if (!ok) dump_log();
        cr_assert(ok, "event %zu is %c.%s(%llx) on %llx, want %c.%s(%llx) on %llx", i,
                  evlog[i].beh == BA ? 'A' : 'B', cb_names[evlog[i].cb],
                  (unsigned long long)evlog[i].arg, (unsigned long long)evlog[i].self,
                  want[i].beh == BA ? 'A' : 'B', cb_names[want[i].cb],
                  (unsigned long long)want[i].arg, (unsigned long long)want[i].self);
    }
}
#define EV(self, beh, cb, arg) { (self), (beh), (cb), (arg), 0, 0 }
#define EXPECT(...) do { const ev_t want_[] = { __VA_ARGS__ }; \
    expect_log(want_, sizeof want_ / sizeof want_[0]); } while (0)

static size_t count_ev(kr_entity_t self, int beh, int cb)
{
    size_t n = 0;
    for (size_t i = 0; i < evn && i < LOG_MAX; i++)
        n += evlog[i].self == self && evlog[i].beh == beh && evlog[i].cb == cb;
    return n;
}

static bstate_t *state_of(kr_entity_t e, kr_component_t c)
{
    bstate_t *s = kr_component_get(W, e, c);
    cr_assert_not_null(s, "%s", kr_last_error());
    return s;
}

/* Checks every live entity's links agree with each other and that no parent
 * chain loops; returns the number of live entities seen through ids. */
static void assert_tree_consistent(const kr_entity_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kr_entity_t e = ids[i];
        if (!kr_entity_alive(W, e)) continue;
        size_t depth = 0;
        for (kr_entity_t a = kr_entity_parent(W, e); a; a = kr_entity_parent(W, a)) {
            cr_assert_neq(a, e, "entity %zu is its own ancestor", i);
            cr_assert_lt(++depth, n + 1, "parent chain of entity %zu loops", i);
        }
        size_t count = 0;
        kr_entity_t prev = KR_ENTITY_INVALID;
        for (kr_entity_t c = kr_entity_first_child(W, e); c; c = kr_entity_next_sibling(W, c)) {
            cr_assert_lt(count, n + 1, "children of entity %zu loop", i);
            cr_assert_eq(kr_entity_parent(W, c), e, "child %zu of entity %zu names another parent", count, i);
            cr_assert_eq(kr_entity_prev_sibling(W, c), prev);
            prev = c;
            count++;
        }
        cr_assert_eq(kr_entity_last_child(W, e), prev, "last child of entity %zu", i);
        cr_assert_eq(kr_entity_child_count(W, e), count, "child_count of entity %zu", i);
        kr_entity_t p = kr_entity_parent(W, e);
        if (p) {
            bool found = false;
            for (kr_entity_t c = kr_entity_first_child(W, p); c && !found; c = kr_entity_next_sibling(W, c))
                found = c == e;
            cr_assert(found, "entity %zu is missing from its parent's children", i);
        }
    }
}

/* ---- registration ------------------------------------------------------ */

Test(behavior, register_requires_vtbl_and_unique_name)
{
    kr_clear_error();
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "novtbl", .state_size = 8 }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_str_neq(kr_last_error(), "");
    cr_assert_eq(kr_component_lookup(reg, "novtbl"), KR_COMPONENT_NONE);

    kr_clear_error();
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "rec_a", .vtbl = &BB_vtbl }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    /* Behaviors and data components share one name space. */
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "d", .vtbl = &BA_vtbl }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "kr_transform", .vtbl = &BA_vtbl }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_component_register(reg, &(kr_component_desc_t){ .name = "rec_b", .size = 4 }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);

    kr_clear_error();
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .vtbl = &BA_vtbl }), KR_COMPONENT_NONE);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "", .vtbl = &BA_vtbl }),
                 KR_COMPONENT_NONE);
    cr_assert_eq(kr_behavior_register(reg, NULL), KR_COMPONENT_NONE);
    cr_assert_eq(kr_behavior_register(NULL, &(kr_behavior_desc_t){ .name = "x", .vtbl = &BA_vtbl }),
                 KR_COMPONENT_NONE);

    /* The failures registered nothing; the good ones are as described. */
    uint32_t count = kr_registry_count(reg);
    cr_assert_eq(count, 7, "transform, resource, channel + A + B + D + E, got %u", count); /* 3 built-ins + 4 */
    const kr_component_info_t *ia = kr_component_info(reg, A);
    cr_assert_not_null(ia);
    cr_assert_eq(ia->vtbl, &BA_vtbl);
    cr_assert_eq(ia->size, sizeof(bstate_t));
    cr_assert_str_eq(ia->name, "rec_a");
    cr_assert_eq(kr_component_lookup(reg, "rec_b"), B);
    cr_assert_null(kr_component_info(reg, D)->vtbl);

    /* A new, unique name still works, with no state at all. */
    kr_component_t c = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "stateless", .vtbl = &BA_vtbl });
    cr_assert_neq(c, KR_COMPONENT_NONE, "%s", kr_last_error());
}

/* ---- add and remove ---------------------------------------------------- */

Test(behavior, add_fires_on_creation_with_zeroed_state)
{
    kr_entity_t e = kr_entity_create(W);
    bstate_t *s = kr_component_add(W, e, A);
    cr_assert_not_null(s, "%s", kr_last_error());
    EXPECT(EV(e, BA, CB_CREATION, 0));
    cr_assert_eq(evlog[0].seen, 1, "state was not zeroed before on_creation");
    /* add returns the state after on_creation ran. */
    cr_assert_eq(s->magic, MAGIC);
    cr_assert(kr_component_has(W, e, A));
    cr_assert_eq(state_of(e, A), s);
}

Test(behavior, remove_fires_on_destroy_once)
{
    kr_entity_t e = kr_entity_create(W);
    bstate_t *s = kr_component_add(W, e, A);
    s->counter = 7;
    evn = 0;
    cr_assert_eq(kr_component_remove(W, e, A), KR_OK, "%s", kr_last_error());
    EXPECT(EV(e, BA, CB_DESTROY, 0));
    cr_assert_eq(evlog[0].seen, 7, "on_destroy did not see the state");
    cr_assert_not(kr_component_has(W, e, A));
    cr_assert(kr_entity_alive(W, e));
    /* Removing it again fails and fires nothing. */
    evn = 0;
    cr_assert_eq(kr_component_remove(W, e, A), KR_ERR_NO_COMPONENT);
    cr_assert_eq(evn, 0);
    /* Destroying the entity now fires nothing either. */
    cr_assert_eq(kr_entity_destroy(W, e), KR_OK);
    cr_assert_eq(evn, 0);
}

/* on_destroy of A removes A itself, or (for B) removes A and then B: each
 * on_destroy still runs once. A remove of the behavior whose on_destroy
 * is running called it again, without end (a stack overflow; found by a
 * new-user trial). */
static void remove_a_on_destroy(kr_world_t *w, kr_entity_t self, int beh, int cb, kr_entity_t arg)
{
    (void)arg;
    if (cb != CB_DESTROY || !kr_entity_alive(w, self)) return;
    if (kr_component_has(w, self, A)) cr_assert_eq(kr_component_remove(w, self, A), KR_OK, "%s", kr_last_error());
    if (beh == BB && kr_component_has(w, self, B))
        cr_assert_eq(kr_component_remove(w, self, B), KR_OK, "%s", kr_last_error());
}

Test(behavior, a_remove_of_itself_inside_on_destroy_calls_it_once)
{
    hook = remove_a_on_destroy;
    kr_entity_t e = with_a(0);
    evn = 0;
    cr_assert_eq(kr_component_remove(W, e, A), KR_OK, "%s", kr_last_error());
    EXPECT(EV(e, BA, CB_DESTROY, 0));
    cr_assert_not(kr_component_has(W, e, A));
    /* from a destroy */
    e = with_a(0);
    evn = 0;
    cr_assert_eq(kr_entity_destroy(W, e), KR_OK, "%s", kr_last_error());
    EXPECT(EV(e, BA, CB_DESTROY, 0));
    /* B's on_destroy removes A (whose own runs then) and B itself */
    kr_component_t both[] = { A, B };
    e = ent(0, both, 2);
    evn = 0;
    cr_assert_eq(kr_component_remove(W, e, B), KR_OK, "%s", kr_last_error());
    EXPECT(EV(e, BB, CB_DESTROY, 0), EV(e, BA, CB_DESTROY, 0));
    cr_assert_not(kr_component_has(W, e, A));
    cr_assert_not(kr_component_has(W, e, B));
    cr_assert(kr_entity_alive(W, e));
    hook = NULL;
}

Test(behavior, add_twice_fails_without_callbacks)
{
    kr_entity_t e = with_a(0);
    evn = 0;
    kr_clear_error();
    cr_assert_null(kr_component_add(W, e, A));
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert_eq(evn, 0);
    cr_assert_eq(state_of(e, A)->magic, MAGIC, "the failed add disturbed the state");
}

Test(behavior, create_desc_fires_on_creation_per_behavior_in_id_order)
{
    kr_component_t cs[] = { D, B, A }; /* any order in the description */
    kr_entity_t e = ent(0, cs, 3);
    EXPECT(EV(e, BA, CB_CREATION, 0), EV(e, BB, CB_CREATION, 0));
    cr_assert_eq(evlog[0].seen, 1);
    cr_assert_eq(evlog[1].seen, 1);
    cr_assert_eq(state_of(e, A)->magic, MAGIC);
    cr_assert_eq(state_of(e, B)->magic, MAGIC);
    const dcomp_t *d = kr_component_get(W, e, D);
    cr_assert_not_null(d);
    cr_assert_eq(d->x, 0.0);
    cr_assert_eq(d->y, 0);
}

/* ---- entity destroy ---------------------------------------------------- */

Test(behavior, entity_destroy_fires_on_destroy_then_parent_on_exited)
{
    kr_entity_t p = with_a(0);
    kr_component_t ab[] = { A, B };
    kr_entity_t c = ent(p, ab, 2);
    evn = 0;
    cr_assert_eq(kr_entity_destroy(W, c), KR_OK);
    EXPECT(EV(c, BA, CB_DESTROY, 0), EV(c, BB, CB_DESTROY, 0), EV(p, BA, CB_EXITED, c));
    /* When the parent hears it, the child is no longer its child. */
    cr_assert_eq(evlog[2].parent_now, KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_child_count(W, p), 0);
}

Test(behavior, world_destroy_fires_on_destroy_once_per_behavior)
{
    kr_entity_t r = with_a(0);
    kr_component_t ab[] = { A, B };
    kr_entity_t c = ent(r, ab, 2);
    kr_entity_t g = with_a(c);
    kr_entity_t lone = ent(0, &B, 1);
    evn = 0;
    kr_world_destroy(W);
    W = NULL;
    cr_assert_eq(count_ev(r, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(c, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(c, BB, CB_DESTROY), 1);
    cr_assert_eq(count_ev(g, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(lone, BB, CB_DESTROY), 1);
    size_t destroys = 0;
    for (size_t i = 0; i < evn; i++) destroys += evlog[i].cb == CB_DESTROY;
    cr_assert_eq(destroys, 5);
    W = kr_world_create(&(kr_world_desc_t){ .registry = reg }); /* for teardown */
}

/* kr_world_destroy skips destroying entity by entity when no table has a
 * behavior or a channel: the one behavior among many plain entities, in
 * the last table made, must still be found, and a plain entity's
 * names, tree links, spatial entry and sparse value freed with the world
 * (the sanitizer build checks the leaks). */
Test(behavior, world_destroy_finds_the_one_behavior_among_plain_tables)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_cell_size = 1.0 });
    kr_component_t sparse = kr_component_register(reg, &(kr_component_desc_t){
        .name = "sparse_d", .size = sizeof(double), .storage = KR_STORAGE_SPARSE });
    cr_assert(w && sparse, "%s", kr_last_error());
    kr_entity_t parent = KR_ENTITY_INVALID;
    for (int i = 0; i < 100; i++) {
        kr_component_t cs[2] = { D, E };
        kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){
            .parent = i % 10 ? parent : KR_ENTITY_INVALID, .components = cs, .component_count = 1 + (size_t)(i % 2) });
        cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
        if (i % 10 == 0) parent = e;
        char name[32];
        snprintf(name, sizeof name, "plain%d", i);
        cr_assert_eq(kr_entity_set_name(w, e, name), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_spatial_insert(w, e, i, -i), KR_OK, "%s", kr_last_error());
        cr_assert_not_null(kr_component_add(w, e, sparse), "%s", kr_last_error());
    }
    kr_entity_t only = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &B, .component_count = 1 });
    cr_assert_neq(only, KR_ENTITY_INVALID, "%s", kr_last_error());
    evn = 0;
    kr_world_destroy(w);
    cr_assert_eq(count_ev(only, BB, CB_DESTROY), 1);
    cr_assert_eq(evn, 1, "only the behavior is called");

    w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_cell_size = 1.0 });
    for (int i = 0; i < 100; i++) {
        kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = i ? parent : KR_ENTITY_INVALID,
                                                                     .components = &D, .component_count = 1 });
        if (!i) parent = e;
        char name[32];
        snprintf(name, sizeof name, "only_plain%d", i);
        cr_assert_eq(kr_entity_set_name(w, e, name), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr_spatial_insert(w, e, 3 * i, i), KR_OK, "%s", kr_last_error());
        cr_assert_not_null(kr_component_add(w, e, sparse), "%s", kr_last_error());
    }
    evn = 0;
    kr_world_destroy(w);
    cr_assert_eq(evn, 0);
}

/* ---- kr_world_start ---------------------------------------------------- */

static size_t find_ev(kr_entity_t self, int beh, int cb)
{
    for (size_t i = 0; i < evn; i++)
        if (evlog[i].self == self && evlog[i].beh == beh && evlog[i].cb == cb) return i;
    return (size_t)-1;
}

Test(behavior, start_fires_awake_on_all_then_start_on_all_once)
{
    kr_entity_t e1 = with_a(0);
    kr_component_t ab[] = { A, B };
    kr_entity_t e2 = ent(0, ab, 2);
    kr_entity_t plain = kr_entity_create(W);
    kr_entity_t e4 = ent(0, &B, 1);
    kr_entity_t e5 = with_a(e1); /* children are started too */
    (void)plain;
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK, "%s", kr_last_error());
    struct { kr_entity_t e; int beh; } want[] = { { e1, BA }, { e2, BA }, { e2, BB }, { e4, BB }, { e5, BA } };
    const size_t n = sizeof want / sizeof want[0];
    if (evn != 2 * n) dump_log();
    cr_assert_eq(evn, 2 * n, "%zu callbacks, want %zu", evn, 2 * n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(evlog[i].cb, CB_AWAKE, "event %zu is not on_awake", i);
        cr_assert_eq(evlog[n + i].cb, CB_START, "event %zu is not on_start", n + i);
        /* on_start runs in the same order as on_awake. */
        cr_assert_eq(evlog[n + i].self, evlog[i].self);
        cr_assert_eq(evlog[n + i].beh, evlog[i].beh);
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(count_ev(want[i].e, want[i].beh, CB_AWAKE), 1, "behavior %zu awake count", i);
        cr_assert_eq(count_ev(want[i].e, want[i].beh, CB_START), 1, "behavior %zu start count", i);
    }
    /* Within one entity, behaviors go in id order. */
    cr_assert_lt(find_ev(e2, BA, CB_AWAKE), find_ev(e2, BB, CB_AWAKE));

    /* Only once per entity. */
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    cr_assert_eq(evn, 0, "second start fired %zu callbacks", evn);

    /* Entities created later get both at the next call. */
    kr_entity_t late = with_a(0);
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    EXPECT(EV(late, BA, CB_AWAKE, 0), EV(late, BA, CB_START, 0));
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    cr_assert_eq(evn, 0);
}

Test(behavior, start_with_no_behaviors_or_no_entities)
{
    cr_assert_eq(kr_world_start(W), KR_OK);
    kr_entity_create(W);
    cr_assert_eq(kr_world_start(W), KR_OK);
    cr_assert_eq(evn, 0);
    kr_clear_error();
    cr_assert_neq(kr_world_start(NULL), KR_OK);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
}

/* An entity that was started and then moved between tables (a component
 * added) must not be started again. */
Test(behavior, start_survives_table_moves)
{
    kr_entity_t e = with_a(0);
    cr_assert_eq(kr_world_start(W), KR_OK);
    cr_assert_not_null(kr_component_add(W, e, D));
    cr_assert_eq(kr_component_remove(W, e, D), KR_OK);
    cr_assert_not_null(kr_component_add(W, e, E));
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    cr_assert_eq(evn, 0, "a started entity was started again after moving tables");
}

static kr_entity_t spawned;
static void spawn_on_awake(kr_world_t *w, kr_entity_t self, int beh, int cb, kr_entity_t arg)
{
    (void)self; (void)arg; (void)beh;
    if (cb == CB_AWAKE && !spawned)
        spawned = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &A, .component_count = 1 });
}

Test(behavior, entity_created_during_start_waits_for_next_call)
{
    kr_entity_t e = with_a(0);
    spawned = KR_ENTITY_INVALID;
    hook = spawn_on_awake;
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    hook = NULL;
    cr_assert_neq(spawned, KR_ENTITY_INVALID);
    EXPECT(EV(e, BA, CB_AWAKE, 0), EV(spawned, BA, CB_CREATION, 0), EV(e, BA, CB_START, 0));
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    EXPECT(EV(spawned, BA, CB_AWAKE, 0), EV(spawned, BA, CB_START, 0));
}

static kr_entity_t victim;
static void kill_victim_on_awake(kr_world_t *w, kr_entity_t self, int beh, int cb, kr_entity_t arg)
{
    (void)arg; (void)beh;
    if (cb == CB_AWAKE && self != victim && kr_entity_alive(w, victim)) kr_entity_destroy(w, victim);
}

Test(behavior, entity_destroyed_during_start_gets_no_more_callbacks)
{
    kr_entity_t first = with_a(0);
    victim = with_a(0);
    kr_entity_t other = with_a(0);
    hook = kill_victim_on_awake;
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    hook = NULL;
    cr_assert_not(kr_entity_alive(W, victim));
    /* Whoever ran first killed the victim: it gets on_destroy and then
     * nothing; the others each get one awake and one start. */
    cr_assert_eq(count_ev(victim, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(victim, BA, CB_START), 0);
    cr_assert_leq(count_ev(victim, BA, CB_AWAKE), 1);
    cr_assert_eq(count_ev(first, BA, CB_AWAKE), 1);
    cr_assert_eq(count_ev(first, BA, CB_START), 1);
    cr_assert_eq(count_ev(other, BA, CB_AWAKE), 1);
    cr_assert_eq(count_ev(other, BA, CB_START), 1);
    cr_assert_eq(kr_world_entity_count(W), 2);
}

/* ---- hierarchy callbacks ------------------------------------------------ */

Test(behavior, reparent_order_is_exiting_entering_exited_entered)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK, "%s", kr_last_error());
    EXPECT(EV(c, BA, CB_EXITING, q), EV(c, BA, CB_ENTERING, q),
           EV(p, BA, CB_EXITED, c), EV(q, BA, CB_ENTERED, c));
    /* The link changes between the child's calls and the parents' calls. */
    cr_assert_eq(evlog[0].parent_now, p, "on_exiting: the child has already left");
    cr_assert_eq(evlog[1].parent_now, p, "on_entering: the child has already moved");
    cr_assert_eq(evlog[2].parent_now, q, "on_exited: the child has not moved yet");
    cr_assert_eq(evlog[3].parent_now, q, "on_entered: the child has not arrived");
}

Test(behavior, reparent_with_two_behaviors_on_each_side)
{
    kr_component_t ab[] = { A, B };
    kr_entity_t p = ent(0, ab, 2), q = ent(0, ab, 2);
    kr_entity_t c = ent(p, ab, 2);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK);
    EXPECT(EV(c, BA, CB_EXITING, q), EV(c, BB, CB_EXITING, q),
           EV(c, BA, CB_ENTERING, q), EV(c, BB, CB_ENTERING, q),
           EV(p, BA, CB_EXITED, c), EV(p, BB, CB_EXITED, c),
           EV(q, BA, CB_ENTERED, c), EV(q, BB, CB_ENTERED, c));
}

Test(behavior, insert_before_into_another_parent_has_the_same_order)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p);
    kr_entity_t s = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = q });
    evn = 0;
    cr_assert_eq(kr_entity_insert_before(W, c, q, s), KR_OK, "%s", kr_last_error());
    EXPECT(EV(c, BA, CB_EXITING, q), EV(c, BA, CB_ENTERING, q),
           EV(p, BA, CB_EXITED, c), EV(q, BA, CB_ENTERED, c));
    cr_assert_eq(kr_entity_first_child(W, q), c);
}

Test(behavior, detach_skips_the_new_parent_calls)
{
    kr_entity_t p = with_a(0);
    kr_entity_t c = with_a(p);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, KR_ENTITY_INVALID), KR_OK);
    EXPECT(EV(c, BA, CB_EXITING, KR_ENTITY_INVALID), EV(p, BA, CB_EXITED, c));
    cr_assert_eq(evlog[0].parent_now, p);
    cr_assert_eq(evlog[1].parent_now, KR_ENTITY_INVALID);
}

Test(behavior, attach_orphan_skips_the_old_parent_calls)
{
    kr_entity_t q = with_a(0);
    kr_entity_t c = with_a(0);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK);
    EXPECT(EV(c, BA, CB_ENTERING, q), EV(q, BA, CB_ENTERED, c));
    cr_assert_eq(evlog[0].parent_now, KR_ENTITY_INVALID);
    cr_assert_eq(evlog[1].parent_now, q);
}

Test(behavior, create_with_parent_fires_creation_then_attach)
{
    kr_entity_t p = with_a(0);
    evn = 0;
    kr_entity_t c = with_a(p);
    EXPECT(EV(c, BA, CB_CREATION, 0), EV(c, BA, CB_ENTERING, p), EV(p, BA, CB_ENTERED, c));
    cr_assert_eq(evlog[2].parent_now, p);
    /* A child without behaviors: only the parent hears about it. */
    evn = 0;
    kr_entity_t plain = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = p });
    cr_assert_neq(plain, KR_ENTITY_INVALID);
    EXPECT(EV(p, BA, CB_ENTERED, plain));
}

Test(behavior, only_entities_with_behaviors_are_called)
{
    kr_entity_t p = kr_entity_create(W), q = kr_entity_create(W);
    kr_entity_t c = with_a(p);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK);
    EXPECT(EV(c, BA, CB_EXITING, q), EV(c, BA, CB_ENTERING, q));
    kr_entity_t d = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = q });
    evn = 0;
    kr_entity_t pa = with_a(0);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, d, pa), KR_OK);
    EXPECT(EV(pa, BA, CB_ENTERED, d));
}

Test(behavior, refused_reparent_fires_nothing)
{
    kr_entity_t p = with_a(0);
    kr_entity_t c = with_a(p);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, p, c), KR_ERR_CYCLE);
    cr_assert_eq(kr_entity_set_parent(W, c, c), KR_ERR_CYCLE);
    cr_assert_eq(evn, 0);
}

/* ---- state ------------------------------------------------------------- */

Test(behavior, state_is_zeroed_on_every_add)
{
    kr_entity_t e = kr_entity_create(W);
    bstate_t *s = kr_component_add(W, e, A);
    s->counter = 99;
    s->pad[4] = 12345;
    cr_assert_eq(kr_component_remove(W, e, A), KR_OK);
    evn = 0;
    s = kr_component_add(W, e, A);
    cr_assert_not_null(s);
    cr_assert_eq(evlog[0].seen, 1, "re-added behavior saw the old state");
    cr_assert_eq(s->counter, 0);
    cr_assert_eq(s->pad[4], 0);
    /* A recycled slot and row start from zero too. */
    s->counter = 5;
    cr_assert_eq(kr_entity_destroy(W, e), KR_OK);
    evn = 0;
    kr_entity_t f = with_a(0);
    cr_assert_eq(evlog[0].seen, 1);
    cr_assert_eq(state_of(f, A)->counter, 0);
}

Test(behavior, state_persists_across_table_moves)
{
    kr_entity_t e = with_a(0);
    kr_entity_t others[8];
    /* Neighbours in every table, so moves land in the middle and swap-remove
     * shuffles rows. */
    for (int i = 0; i < 8; i++) {
        kr_component_t cs[][3] = { { A }, { A, D }, { A, D, E }, { A, E } };
        size_t ns[] = { 1, 2, 3, 2 };
        others[i] = ent(0, cs[i % 4], ns[i % 4]);
        state_of(others[i], A)->counter = 1000 + (uint64_t)i;
    }
    state_of(e, A)->counter = 42;
    state_of(e, A)->pad[2] = 0xfeedULL;
    cr_assert_not_null(kr_component_add(W, e, D));
    ((dcomp_t *)kr_component_get(W, e, D))->y = -3;
    cr_assert_eq(state_of(e, A)->counter, 42);
    cr_assert_not_null(kr_component_add(W, e, E));
    cr_assert_eq(state_of(e, A)->counter, 42);
    cr_assert_eq(kr_component_remove(W, e, D), KR_OK);
    cr_assert_eq(state_of(e, A)->counter, 42);
    cr_assert_not_null(kr_component_add(W, e, B));
    cr_assert_eq(kr_component_remove(W, e, E), KR_OK);
    cr_assert_eq(kr_entity_destroy(W, others[1]), KR_OK);
    cr_assert_eq(kr_entity_destroy(W, others[0]), KR_OK);
    bstate_t *s = state_of(e, A);
    cr_assert_eq(s->magic, MAGIC);
    cr_assert_eq(s->counter, 42);
    cr_assert_eq(s->pad[2], 0xfeedULL);
    cr_assert_eq(state_of(e, B)->magic, MAGIC);
    cr_assert_eq(state_of(e, B)->counter, 0);
    for (int i = 2; i < 8; i++) cr_assert_eq(state_of(others[i], A)->counter, 1000 + (uint64_t)i);
    /* Callbacks are handed the moved state. */
    kr_entity_t p = with_a(0);
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, e, p), KR_OK);
    cr_assert_eq(evlog[0].self, e);
    cr_assert_eq(evlog[0].seen, 42, "on_entering got a different state");
}

Test(behavior, heap_state_is_freed_in_on_destroy)
{
    heap_mode = true;
    /* remove */
    kr_entity_t a = with_a(0);
    cr_assert_not_null(state_of(a, A)->heap);
    cr_assert_eq(live_allocs, 1);
    cr_assert_eq(kr_component_remove(W, a, A), KR_OK);
    cr_assert_eq(live_allocs, 0);
    /* entity destroy, after moving tables (the pointer is copied with the row) */
    kr_entity_t b = with_a(0);
    char *heap = state_of(b, A)->heap;
    cr_assert_not_null(kr_component_add(W, b, D));
    cr_assert_not_null(kr_component_add(W, b, B));
    cr_assert_eq(state_of(b, A)->heap, heap);
    cr_assert_eq((unsigned char)heap[1023], 0x5a);
    cr_assert_eq(live_allocs, 2);
    cr_assert_eq(kr_entity_destroy(W, b), KR_OK);
    cr_assert_eq(live_allocs, 0);
    /* subtree destroy */
    kr_entity_t r = with_a(0);
    kr_entity_t k1 = with_a(r);
    with_a(k1);
    with_a(r);
    cr_assert_eq(live_allocs, 4);
    cr_assert_eq(kr_entity_destroy(W, r), KR_OK);
    cr_assert_eq(live_allocs, 0);
    /* world destroy */
    kr_entity_t x = with_a(0);
    with_a(x);
    kr_component_t ab[] = { A, B };
    ent(0, ab, 2);
    cr_assert_eq(live_allocs, 4);
    kr_world_destroy(W);
    W = NULL;
    cr_assert_eq(live_allocs, 0, "world destroy leaked %ld states", live_allocs);
    W = kr_world_create(&(kr_world_desc_t){ .registry = reg });
}

/* ---- a behavior and a data component on one entity ---------------------- */

Test(behavior, behavior_and_data_component_on_one_entity)
{
    kr_component_t cs[] = { D, A };
    kr_entity_t e = ent(0, cs, 2);
    EXPECT(EV(e, BA, CB_CREATION, 0));
    dcomp_t *d = kr_component_get(W, e, D);
    bstate_t *s = state_of(e, A);
    cr_assert_not_null(d);
    cr_assert_neq((void *)d, (void *)s);
    d->x = 2.5;
    d->y = 7;
    s->counter = 11;
    cr_assert_eq(((dcomp_t *)kr_component_get(W, e, D))->x, 2.5);
    cr_assert_eq(state_of(e, A)->counter, 11);
    /* Removing the data component fires nothing and keeps the state. */
    evn = 0;
    cr_assert_eq(kr_component_remove(W, e, D), KR_OK);
    cr_assert_eq(evn, 0);
    cr_assert_eq(state_of(e, A)->counter, 11);
    cr_assert_not_null(kr_component_add(W, e, D));
    cr_assert_eq(evn, 0);
    d = kr_component_get(W, e, D);
    cr_assert_eq(d->x, 0.0);
    d->y = 8;
    /* Removing the behavior keeps the data. */
    cr_assert_eq(kr_component_remove(W, e, A), KR_OK);
    EXPECT(EV(e, BA, CB_DESTROY, 0));
    cr_assert_eq(((dcomp_t *)kr_component_get(W, e, D))->y, 8);
    /* Views see the data component on behavior entities as usual. */
    kr_entity_t f = ent(0, cs, 2);
    ((dcomp_t *)kr_component_get(W, f, D))->y = 9;
    cr_assert(kr_component_has(W, f, A));
    cr_assert(kr_component_has(W, f, D));
    cr_assert_not(kr_component_has(W, e, A));
}

/* ---- callbacks that change the world ------------------------------------ */

static void destroy_self_on(kr_world_t *w, kr_entity_t self, int cb, int when)
{
    if (cb == when) kr_entity_destroy(w, self);
}
static void h_destroy_on_creation(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_CREATION); }
static void h_destroy_on_start(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_START); }
static void h_destroy_on_entering(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_ENTERING); }
static void h_destroy_on_exiting(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_EXITING); }
static void h_destroy_on_destroy(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_DESTROY); }
static void h_destroy_on_exited(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)a; destroy_self_on(w, s, cb, CB_EXITED); }
static void h_destroy_child_on_entered(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{ (void)b; (void)s; if (cb == CB_ENTERED) kr_entity_destroy(w, a); }

Test(behavior, on_creation_destroys_own_entity_in_add)
{
    kr_entity_t keep = with_a(0);
    kr_entity_t e = kr_entity_create(W);
    hook = h_destroy_on_creation;
    evn = 0;
    kr_clear_error();
    void *s = kr_component_add(W, e, A);
    hook = NULL;
    cr_assert_null(s);
    cr_assert_neq(kr_last_status(), KR_OK);
    cr_assert_not(kr_entity_alive(W, e));
    EXPECT(EV(e, BA, CB_CREATION, 0), EV(e, BA, CB_DESTROY, 0));
    cr_assert_eq(kr_world_entity_count(W), 1);
    cr_assert_eq(state_of(keep, A)->magic, MAGIC);
}

Test(behavior, on_creation_destroys_own_entity_in_create_desc)
{
    kr_entity_t p = with_a(0);
    size_t before = kr_world_entity_count(W);
    hook = h_destroy_on_creation;
    evn = 0;
    kr_component_t ab[] = { A, B };
    kr_entity_t e = kr_entity_create_desc(W, &(kr_entity_desc_t){
        .parent = p, .components = ab, .component_count = 2 });
    hook = NULL;
    cr_assert_eq(e, KR_ENTITY_INVALID);
    cr_assert_eq(kr_world_entity_count(W), before);
    cr_assert_eq(kr_entity_child_count(W, p), 0);
    kr_entity_t made = evlog[0].self;
    cr_assert_not(kr_entity_alive(W, made));
    cr_assert_eq(count_ev(made, BA, CB_CREATION), 1);
    cr_assert_eq(count_ev(made, BA, CB_DESTROY), 1);
    cr_assert_leq(count_ev(made, BB, CB_DESTROY), 1);
    cr_assert_eq(count_ev(made, BA, CB_ENTERING), 0);
    cr_assert_eq(count_ev(p, BA, CB_ENTERED), 0);
    /* The world is usable afterwards. */
    kr_entity_t next = with_a(p);
    cr_assert_eq(kr_entity_first_child(W, p), next);
    cr_assert_eq(kr_world_entity_count(W), before + 1);
}

/* Same, looked at from B: A's on_creation destroyed the entity before B's
 * on_creation ran, so B's state never saw on_creation (it is zeroed) and
 * must not get an on_destroy for it: on_creation/on_destroy come in pairs
 * (a state that unregisters itself in on_destroy would act on garbage). */
Test(behavior, behavior_that_never_got_on_creation_gets_no_on_destroy)
{
    hook = h_destroy_on_creation;
    evn = 0;
    kr_component_t ab[] = { A, B };
    kr_entity_t e = kr_entity_create_desc(W, &(kr_entity_desc_t){ .components = ab, .component_count = 2 });
    hook = NULL;
    cr_assert_eq(e, KR_ENTITY_INVALID);
    kr_entity_t made = evlog[0].self;
    cr_assert_eq(count_ev(made, BB, CB_CREATION), 0);
    if (count_ev(made, BB, CB_DESTROY)) dump_log();
    cr_assert_eq(count_ev(made, BB, CB_DESTROY), 0, "B got on_destroy without on_creation");
}

Test(behavior, on_start_destroys_own_entity)
{
    kr_entity_t a = with_a(0), b = with_a(0), c = with_a(0);
    hook = h_destroy_on_start;
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    hook = NULL;
    kr_entity_t all[] = { a, b, c };
    for (int i = 0; i < 3; i++) {
        cr_assert_not(kr_entity_alive(W, all[i]));
        cr_assert_eq(count_ev(all[i], BA, CB_AWAKE), 1);
        cr_assert_eq(count_ev(all[i], BA, CB_START), 1);
        cr_assert_eq(count_ev(all[i], BA, CB_DESTROY), 1);
    }
    cr_assert_eq(kr_world_entity_count(W), 0);
}

Test(behavior, on_entering_destroys_own_entity)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p);
    hook = h_destroy_on_entering;
    evn = 0;
    kr_clear_error();
    kr_status_t st = kr_entity_set_parent(W, c, q);
    hook = NULL;
    cr_assert_eq(st, KR_ERR_STALE_ENTITY, "got %d", st);
    cr_assert_not(kr_entity_alive(W, c));
    cr_assert_eq(kr_entity_child_count(W, p), 0);
    cr_assert_eq(kr_entity_child_count(W, q), 0);
    cr_assert_eq(count_ev(q, BA, CB_ENTERED), 0);
    cr_assert_eq(count_ev(c, BA, CB_DESTROY), 1);
    /* p lost its child (to destruction) and heard about it once. */
    cr_assert_eq(count_ev(p, BA, CB_EXITED), 1);
    assert_tree_consistent((kr_entity_t[]){ p, q, c }, 3);
}

Test(behavior, on_exiting_destroys_own_entity_on_detach)
{
    kr_entity_t p = with_a(0);
    kr_entity_t c = with_a(p);
    kr_entity_t c2 = with_a(p);
    hook = h_destroy_on_exiting;
    evn = 0;
    kr_entity_set_parent(W, c, KR_ENTITY_INVALID);
    hook = NULL;
    cr_assert_not(kr_entity_alive(W, c));
    cr_assert_eq(count_ev(c, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(p, BA, CB_EXITED), 1);
    cr_assert_eq(kr_entity_first_child(W, p), c2);
    assert_tree_consistent((kr_entity_t[]){ p, c, c2 }, 3);
}

Test(behavior, on_entered_destroys_the_new_child)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p);
    kr_entity_t g = with_a(c);
    hook = h_destroy_child_on_entered;
    evn = 0;
    kr_entity_set_parent(W, c, q);
    hook = NULL;
    cr_assert_not(kr_entity_alive(W, c));
    cr_assert_not(kr_entity_alive(W, g));
    cr_assert_eq(kr_entity_child_count(W, q), 0);
    cr_assert_eq(kr_entity_child_count(W, p), 0);
    cr_assert_eq(count_ev(c, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(g, BA, CB_DESTROY), 1);
    cr_assert_eq(kr_world_entity_count(W), 2);
    assert_tree_consistent((kr_entity_t[]){ p, q, c, g }, 4);
}

Test(behavior, old_parent_destroys_itself_in_on_exited)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p);
    hook = h_destroy_on_exited;
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK, "%s", kr_last_error());
    hook = NULL;
    cr_assert_not(kr_entity_alive(W, p));
    cr_assert(kr_entity_alive(W, c), "the moved child died with its old parent");
    cr_assert_eq(kr_entity_parent(W, c), q);
    cr_assert_eq(count_ev(q, BA, CB_ENTERED), 1);
    cr_assert_eq(count_ev(p, BA, CB_DESTROY), 1);
    assert_tree_consistent((kr_entity_t[]){ p, q, c }, 3);
}

Test(behavior, on_destroy_destroying_own_entity_again_is_harmless)
{
    kr_entity_t p = with_a(0);
    kr_component_t ab[] = { A, B };
    kr_entity_t c = ent(p, ab, 2);
    kr_entity_t g = with_a(c);
    heap_mode = false;
    hook = h_destroy_on_destroy;
    evn = 0;
    cr_assert_eq(kr_entity_destroy(W, c), KR_OK);
    hook = NULL;
    cr_assert_eq(count_ev(c, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(c, BB, CB_DESTROY), 1);
    cr_assert_eq(count_ev(g, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(p, BA, CB_EXITED), 1);
    cr_assert_eq(kr_world_entity_count(W), 1);
    assert_tree_consistent((kr_entity_t[]){ p, c, g }, 3);
}

/* on_destroy is documented to run once. Removing a behavior whose
 * on_destroy destroys the entity must not run that on_destroy a second
 * time (a state that frees memory there would double-free). */
Test(behavior, on_destroy_in_remove_that_destroys_the_entity_runs_once)
{
    kr_component_t ab[] = { A, B };
    kr_entity_t e = ent(0, ab, 2);
    heap_mode = false;
    hook = h_destroy_on_destroy;
    evn = 0;
    kr_status_t st = kr_component_remove(W, e, A);
    hook = NULL;
    (void)st;
    cr_assert_not(kr_entity_alive(W, e));
    cr_assert_eq(count_ev(e, BB, CB_DESTROY), 1);
    if (count_ev(e, BA, CB_DESTROY) != 1) dump_log();
    cr_assert_eq(count_ev(e, BA, CB_DESTROY), 1, "A.on_destroy ran %zu times",
                 count_ev(e, BA, CB_DESTROY));
    cr_assert_eq(kr_world_entity_count(W), 0);
}

/* A leaf whose on_destroy destroys its parent ("the last part takes the
 * container with it"). Each entity must get exactly one on_destroy and the
 * world must stay sound. */
static void h_destroy_parent_on_destroy(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)b; (void)a;
    if (cb != CB_DESTROY) return;
    kr_entity_t p = kr_entity_parent(w, s);
    if (p) kr_entity_destroy(w, p);
}

Test(behavior, on_destroy_destroying_the_parent)
{
    kr_entity_t top = with_a(0);
    kr_entity_t p = with_a(top);
    kr_entity_t c = ent(p, &B, 1);
    kr_entity_t keep = with_a(0);
    hook = h_destroy_parent_on_destroy;
    evn = 0;
    kr_status_t st = kr_entity_destroy(W, c);
    hook = NULL;
    cr_assert_eq(st, KR_OK);
    cr_assert_not(kr_entity_alive(W, c));
    if (count_ev(c, BB, CB_DESTROY) != 1) dump_log();
    cr_assert_eq(count_ev(c, BB, CB_DESTROY), 1, "c.on_destroy ran %zu times", count_ev(c, BB, CB_DESTROY));
    cr_assert_not(kr_entity_alive(W, p));
    cr_assert_not(kr_entity_alive(W, top));
    cr_assert_eq(count_ev(p, BA, CB_DESTROY), 1);
    cr_assert_eq(count_ev(top, BA, CB_DESTROY), 1);
    cr_assert_eq(kr_world_entity_count(W), 1);
    cr_assert(kr_entity_alive(W, keep));
    /* The slots are reusable and sound. */
    for (int i = 0; i < 4; i++) {
        kr_entity_t n = with_a(keep);
        cr_assert_eq(kr_entity_parent(W, n), keep);
    }
    assert_tree_consistent((kr_entity_t[]){ top, p, c, keep }, 4);
}

/* -- callbacks that add components -- */

static void h_add_d_on_creation(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)a;
    if (cb == CB_CREATION && b == BA) {
        dcomp_t *d = kr_component_add(w, s, D);
        if (d) d->y = 77;
    }
}

Test(behavior, on_creation_adds_a_data_component)
{
    kr_entity_t e = kr_entity_create(W);
    hook = h_add_d_on_creation;
    bstate_t *s = kr_component_add(W, e, A);
    hook = NULL;
    cr_assert_not_null(s, "%s", kr_last_error());
    cr_assert_eq(s, state_of(e, A), "add returned a pointer into the old table");
    cr_assert_eq(s->magic, MAGIC);
    cr_assert_eq(((dcomp_t *)kr_component_get(W, e, D))->y, 77);
    /* And through create_desc. */
    hook = h_add_d_on_creation;
    kr_entity_t f = with_a(0);
    hook = NULL;
    cr_assert_eq(state_of(f, A)->magic, MAGIC);
    cr_assert_eq(((dcomp_t *)kr_component_get(W, f, D))->y, 77);
}

static void h_add_b_on_a_creation(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)a;
    if (cb == CB_CREATION && b == BA) kr_component_add(w, s, B);
}

Test(behavior, on_creation_adds_another_behavior)
{
    kr_entity_t e = kr_entity_create(W);
    hook = h_add_b_on_a_creation;
    bstate_t *s = kr_component_add(W, e, A);
    hook = NULL;
    cr_assert_not_null(s);
    EXPECT(EV(e, BA, CB_CREATION, 0), EV(e, BB, CB_CREATION, 0));
    cr_assert_eq(state_of(e, A)->magic, MAGIC);
    cr_assert_eq(state_of(e, B)->magic, MAGIC);
    evn = 0;
    cr_assert_eq(kr_entity_destroy(W, e), KR_OK);
    EXPECT(EV(e, BA, CB_DESTROY, 0), EV(e, BB, CB_DESTROY, 0));
}

static void h_add_d_on_destroy(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)a; (void)b;
    if (cb == CB_DESTROY && !kr_component_has(w, s, D)) kr_component_add(w, s, D);
}

Test(behavior, on_destroy_adds_a_component)
{
    heap_mode = true;
    kr_entity_t p = with_a(0);
    kr_entity_t c = with_a(p);
    kr_entity_t other = with_a(0);
    state_of(other, A)->counter = 3;
    hook = h_add_d_on_destroy;
    cr_assert_eq(kr_entity_destroy(W, c), KR_OK);
    cr_assert_not(kr_entity_alive(W, c));
    cr_assert_eq(kr_entity_child_count(W, p), 0);
    /* through remove: the component goes, the added one stays */
    kr_entity_t e = with_a(0);
    cr_assert_eq(kr_component_remove(W, e, A), KR_OK, "%s", kr_last_error());
    hook = NULL;
    cr_assert_not(kr_component_has(W, e, A));
    cr_assert(kr_component_has(W, e, D));
    cr_assert_eq(state_of(other, A)->counter, 3);
    cr_assert_eq(kr_world_entity_count(W), 3);
    /* whole subtree, each member growing a component while it dies */
    hook = h_add_d_on_destroy;
    cr_assert_eq(kr_entity_destroy(W, p), KR_OK);
    hook = NULL;
    cr_assert_eq(kr_world_entity_count(W), 2);
    cr_assert_eq(live_allocs, 1, "heap state leaked or double-freed (%ld live)", live_allocs);
}

static void h_add_on_hierarchy(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)b;
    if (cb == CB_ENTERED || cb == CB_EXITED) {
        if (!kr_component_has(w, s, D)) kr_component_add(w, s, D);
        if (kr_entity_alive(w, a) && !kr_component_has(w, a, E)) kr_component_add(w, a, E);
    }
    if (cb == CB_EXITING || cb == CB_ENTERING) {
        if (kr_component_has(w, s, E)) kr_component_remove(w, s, E);
        else kr_component_add(w, s, E);
    }
}

Test(behavior, hierarchy_callbacks_add_and_remove_components)
{
    kr_entity_t p = with_a(0), q = with_a(0);
    kr_entity_t c = with_a(p), c2 = with_a(p);
    state_of(c, A)->counter = 5;
    hook = h_add_on_hierarchy;
    evn = 0;
    cr_assert_eq(kr_entity_set_parent(W, c, q), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_entity_set_parent(W, c2, q), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_entity_set_parent(W, c, KR_ENTITY_INVALID), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_entity_set_parent(W, c, p), KR_OK, "%s", kr_last_error());
    hook = NULL;
    cr_assert_eq(count_ev(q, BA, CB_ENTERED), 2);
    cr_assert_eq(count_ev(q, BA, CB_EXITED), 1);
    cr_assert(kr_component_has(W, p, D));
    cr_assert(kr_component_has(W, q, D));
    cr_assert_eq(state_of(c, A)->counter, 5);
    cr_assert_eq(kr_entity_parent(W, c), p);
    cr_assert_eq(kr_entity_parent(W, c2), q);
    assert_tree_consistent((kr_entity_t[]){ p, q, c, c2 }, 4);
}

static kr_entity_t other_target;
static void h_add_to_other_on_start(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)a; (void)b; (void)s;
    if ((cb == CB_START || cb == CB_AWAKE) && kr_entity_alive(w, other_target)) {
        if (kr_component_has(w, other_target, D)) kr_component_remove(w, other_target, D);
        else kr_component_add(w, other_target, D);
    }
}

Test(behavior, start_callbacks_move_other_entities_between_tables)
{
    kr_entity_t e[6];
    for (int i = 0; i < 6; i++) e[i] = with_a(0);
    other_target = e[3];
    hook = h_add_to_other_on_start;
    evn = 0;
    cr_assert_eq(kr_world_start(W), KR_OK);
    hook = NULL;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(count_ev(e[i], BA, CB_AWAKE), 1, "entity %d awake", i);
        cr_assert_eq(count_ev(e[i], BA, CB_START), 1, "entity %d start", i);
    }
    cr_assert_eq(evn, 12);
}

/* -- callbacks that rearrange the tree mid-move -- */

static kr_entity_t cyc_q;
static void h_make_cycle_on_entering(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)b;
    /* While s is about to enter a, make a a child of s. */
    if (cb == CB_ENTERING && a == cyc_q) {
        cyc_q = KR_ENTITY_INVALID;
        kr_entity_set_parent(w, a, s);
    }
}

/* The cycle check runs before the callbacks; a callback that makes the new
 * parent a descendant of the child must not lead to a cycle. */
Test(behavior, callback_cannot_sneak_in_a_cycle, .timeout = 10)
{
    kr_entity_t c = with_a(0);
    kr_entity_t q = with_a(0);
    cyc_q = q;
    hook = h_make_cycle_on_entering;
    kr_status_t st = kr_entity_set_parent(W, c, q);
    hook = NULL;
    kr_entity_t pc = kr_entity_parent(W, c), pq = kr_entity_parent(W, q);
    cr_assert_not(pc == q && pq == c, "c and q are each other's parent (set_parent returned %d)", st);
    cr_assert_neq(st, KR_OK, "set_parent reported success but cannot have done what was asked");
    assert_tree_consistent((kr_entity_t[]){ c, q }, 2);
}

static kr_entity_t move_sib, move_to;
static void h_move_sibling_on_entering(kr_world_t *w, kr_entity_t s, int b, int cb, kr_entity_t a)
{
    (void)b; (void)s; (void)a;
    if (cb == CB_ENTERING && move_sib) {
        kr_entity_t sib = move_sib;
        move_sib = KR_ENTITY_INVALID;
        kr_entity_set_parent(w, sib, move_to);
    }
}

/* insert_before(c, q, s) where c's on_entering moves s to another parent:
 * c must not be linked next to a sibling that is no longer q's child. */
Test(behavior, callback_moves_the_insert_before_sibling, .timeout = 10)
{
    kr_entity_t q = with_a(0), r = with_a(0);
    kr_entity_t s1 = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = q });
    kr_entity_t s = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = q });
    kr_entity_t r1 = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = r });
    kr_entity_t c = with_a(0);
    move_sib = s;
    move_to = r;
    hook = h_move_sibling_on_entering;
    kr_status_t st = kr_entity_insert_before(W, c, q, s);
    hook = NULL;
    (void)st;
    assert_tree_consistent((kr_entity_t[]){ q, r, s1, s, r1, c }, 6);
    cr_assert_eq(kr_entity_parent(W, s), r);
}

/* on_creation of a created entity's behaviors goes by behavior, not by
 * position: a callback that adds a behavior in between must not shift who
 * gets the call. */
static kr_component_t shift_a, shift_b, shift_c;
static int shift_created[3];
static void shift_a_creation(kr_world_t *w, kr_entity_t self, void *s)
{
    (void)s;
    shift_created[0]++;
    kr_component_add(w, self, shift_b);
}
static void shift_b_creation(kr_world_t *w, kr_entity_t self, void *s) { (void)w; (void)self; (void)s; shift_created[1]++; }
static void shift_c_creation(kr_world_t *w, kr_entity_t self, void *s) { (void)w; (void)self; (void)s; shift_created[2]++; }
static const kr_behavior_vtbl_t shift_va = { .on_creation = shift_a_creation };
static const kr_behavior_vtbl_t shift_vb = { .on_creation = shift_b_creation };
static const kr_behavior_vtbl_t shift_vc = { .on_creation = shift_c_creation };

Test(behavior_creation, a_behavior_added_by_on_creation_does_not_shift_the_others)
{
    kr_registry_t *r = kr_registry_create();
    shift_a = kr_behavior_register(r, &(kr_behavior_desc_t){ .name = "A", .state_size = 4, .vtbl = &shift_va });
    shift_b = kr_behavior_register(r, &(kr_behavior_desc_t){ .name = "B", .state_size = 4, .vtbl = &shift_vb });
    shift_c = kr_behavior_register(r, &(kr_behavior_desc_t){ .name = "C", .state_size = 4, .vtbl = &shift_vc });
    kr_world_t *wd = kr_world_create(&(kr_world_desc_t){ .registry = r });
    kr_component_t list[2] = { shift_a, shift_c };
    kr_entity_t e = kr_entity_create_desc(wd, &(kr_entity_desc_t){ .components = list, .component_count = 2 });
    cr_assert_neq(e, KR_ENTITY_INVALID);
    cr_assert_eq(shift_created[0], 1);
    cr_assert_eq(shift_created[1], 1, "B: %d on_creation calls", shift_created[1]);
    cr_assert_eq(shift_created[2], 1, "C: %d on_creation calls", shift_created[2]);
    kr_world_destroy(wd);
    kr_registry_destroy(r);
}

/* on_destroy that creates: kr_world_destroy destroys what it creates too,
 * each with its on_destroy (the slot freed first is taken again, behind
 * the sweep), so heap-owning state is released. */
static int spawn_created, spawn_destroyed, spawn_left;
static kr_component_t spawn_b;
static void spawn_creation(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w; (void)self; (void)state;
    spawn_created++;
}
static void spawn_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self; (void)state;
    spawn_destroyed++;
    if (spawn_left-- > 0) {
        kr_entity_t e = kr_entity_create(w);
        cr_assert(e && kr_component_add(w, e, spawn_b), "%s", kr_last_error());
    }
}
static const kr_behavior_vtbl_t spawn_vtbl = { .on_creation = spawn_creation, .on_destroy = spawn_destroy };

Test(behavior, world_destroy_destroys_what_on_destroy_creates)
{
    kr_registry_t *reg = kr_registry_create();
    spawn_b = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "spawn", .vtbl = &spawn_vtbl });
    cr_assert_neq(spawn_b, 0);
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    spawn_created = spawn_destroyed = 0;
    spawn_left = 3;
    for (int i = 0; i < 2; i++) cr_assert_not_null(kr_component_add(w, kr_entity_create(w), spawn_b));
    kr_world_destroy(w);
    cr_assert_eq(spawn_created, 5);
    cr_assert_eq(spawn_destroyed, 5, "every entity created during the destroy got its on_destroy");
    kr_registry_destroy(reg);
}

/* kr_world_update from an on_update: refused, so no entity is updated twice
 * in one step. */
static int nested_updates;
static kr_status_t nested_status;
static void nested_update(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self; (void)state;
    nested_updates++;
    nested_status = kr_world_update(w);
}
static const kr_behavior_vtbl_t nested_vtbl = { .on_update = nested_update };

Test(behavior, update_from_inside_an_update_is_refused)
{
    kr_registry_t *reg = kr_registry_create();
    kr_component_t b = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "nested", .vtbl = &nested_vtbl });
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    for (int i = 0; i < 3; i++) cr_assert_not_null(kr_component_add(w, kr_entity_create(w), b));
    nested_updates = 0;
    cr_assert_eq(kr_world_update(w), KR_OK);
    cr_assert_eq(nested_updates, 3, "each entity once");
    cr_assert_eq(nested_status, KR_ERR_STATE);
    cr_assert_eq(kr_world_update(w), KR_OK, "the next step runs");
    cr_assert_eq(nested_updates, 6);
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}
