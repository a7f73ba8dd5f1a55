/* Packing subtrees and unpacking them into another world that shares the
 * registry: new ids, names, child order, component values, entity fields
 * and kr_ser_entity references remapped (inside the pack -> the new ids,
 * outside -> KR_ENTITY_INVALID), behavior state through serialize (heap
 * strings included) and as raw bytes, spatial positions, the callback order
 * on_creation -> serialize -> on_submodel_move; the bulk path and packs read
 * back to back; and refusals that leave the target world untouched: every
 * truncation, every single-bit flip and random multi-byte damage (each
 * either refused cleanly or accepted into a consistent world), bad magic
 * and version, another registry, overlapping, duplicate and stale roots,
 * null arguments, and a behavior whose load fails. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

/* ---- registry ------------------------------------------------------------ */

typedef struct pos {
    double x, y;
    int32_t k, pad;
} pos_t;

#define LINK_MARK_R 0xa11ce001u
#define LINK_MARK_C1 0xa11ce002u
#define LINK_MARK_G31 0xa11ce003u

typedef struct link {
    kr_entity_t inside, root, outside;
    kr_entity_t arr[2];
    uint32_t mark, pad;
} link_t;

typedef struct labeled {
    char *label;          /* owned; freed in on_destroy */
    kr_entity_t buddy;    /* kr_ser_entity */
    int64_t counter;
    double weight;
    uint32_t created;     /* set by on_creation, not serialized */
    uint32_t created_at_load;
} labeled_t;

typedef struct raw {
    int32_t a, created;
    double b;
} raw_t;

#define FRAGILE_POISON 0xdeadu      /* refuses to load */
#define FRAGILE_SAVE_POISON 0xbadu  /* refuses to save */

typedef struct fragile {
    uint32_t v;
} fragile_t;

typedef struct ids {
    kr_component_t pos, link, tag, labeled, raw, fragile, greedy;
} ids_t;

/* Callback log, reached through the world's owner pointer. */
enum { EV_CREATE = 1, EV_LOAD, EV_MOVE, EV_DESTROY, EV_HIER };
enum { B_LABELED = 1, B_RAW, B_FRAGILE };

typedef struct ev {
    int kind, behavior;
    kr_entity_t self, arg;
    kr_entity_t parent_then; /* at EV_MOVE: the parent at that moment */
} ev_t;

typedef struct evlog {
    ev_t *ev;
    size_t n, cap;
    int kill_countdown; /* > 0: the labeled on_creation that brings it to 0 destroys its entity */
} evlog_t;

static void log_ev(kr_world_t *w, int kind, int behavior, kr_entity_t self, kr_entity_t arg)
{
    evlog_t *l = kr_world_owner(w);
    if (!l) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
        if (!l->ev) abort();
    }
    kr_entity_t parent = kind == EV_MOVE ? kr_entity_parent(w, self) : KR_ENTITY_INVALID;
    l->ev[l->n++] = (ev_t){ kind, behavior, self, arg, parent };
}

static size_t count_ev(const evlog_t *l, int kind, int behavior)
{
    size_t c = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->ev[i].kind == kind && (!behavior || l->ev[i].behavior == behavior)) c++;
    return c;
}

/* Index of the first event (kind, behavior, self), or SIZE_MAX. */
static size_t find_ev(const evlog_t *l, int kind, int behavior, kr_entity_t self)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->ev[i].kind == kind && l->ev[i].behavior == behavior && l->ev[i].self == self) return i;
    return SIZE_MAX;
}

static void labeled_create(kr_world_t *w, kr_entity_t self, void *state)
{
    ((labeled_t *)state)->created = 1;
    log_ev(w, EV_CREATE, B_LABELED, self, 0);
    evlog_t *l = kr_world_owner(w);
    if (l && l->kill_countdown > 0 && --l->kill_countdown == 0) kr_entity_destroy(w, self);
}

static void labeled_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    labeled_t *st = state;
    free(st->label);
    st->label = NULL;
    log_ev(w, EV_DESTROY, B_LABELED, self, 0);
}

static void labeled_hier(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t other)
{
    (void)state;
    log_ev(w, EV_HIER, B_LABELED, self, other);
}

static kr_status_t labeled_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    labeled_t *st = state;
    bool loading = kr_serializer_loading(s);
    if (loading) {
        log_ev(w, EV_LOAD, B_LABELED, self, 0);
        st->created_at_load = st->created;
    }
    kr_ser_string(s, &st->label);
    kr_ser_entity(s, &st->buddy);
    kr_ser_i64(s, &st->counter);
    kr_ser_f64(s, &st->weight);
    return kr_serializer_status(s);
}

static void labeled_move(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)state;
    log_ev(w, EV_MOVE, B_LABELED, self, old_self);
}

static const kr_behavior_vtbl_t labeled_vtbl = {
    .on_creation = labeled_create,
    .on_destroy = labeled_destroy,
    .on_entering = labeled_hier,
    .on_entered = labeled_hier,
    .on_exiting = labeled_hier,
    .on_exited = labeled_hier,
    .serialize = labeled_serialize,
    .on_submodel_move = labeled_move,
};

static void raw_create(kr_world_t *w, kr_entity_t self, void *state)
{
    ((raw_t *)state)->created = 1;
    log_ev(w, EV_CREATE, B_RAW, self, 0);
}

static void raw_move(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)state;
    log_ev(w, EV_MOVE, B_RAW, self, old_self);
}

static void raw_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)state;
    log_ev(w, EV_DESTROY, B_RAW, self, 0);
}

static const kr_behavior_vtbl_t raw_vtbl = {
    .on_creation = raw_create, .on_destroy = raw_destroy, .on_submodel_move = raw_move,
};

static void fragile_create(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)state;
    log_ev(w, EV_CREATE, B_FRAGILE, self, 0);
}

static void fragile_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)state;
    log_ev(w, EV_DESTROY, B_FRAGILE, self, 0);
}

static void fragile_move(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)state;
    log_ev(w, EV_MOVE, B_FRAGILE, self, old_self);
}

/* Loading a poisoned value fails the way a real callback would on bad input. */
static kr_status_t fragile_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    fragile_t *st = state;
    if (kr_serializer_loading(s)) log_ev(w, EV_LOAD, B_FRAGILE, self, 0);
    else if (st->v == FRAGILE_SAVE_POISON) return KR_ERR_IO;
    kr_status_t rc = kr_ser_u32(s, &st->v);
    if (rc) return rc;
    if (kr_serializer_loading(s) && st->v == FRAGILE_POISON) return KR_ERR_STATE;
    return KR_OK;
}

static const kr_behavior_vtbl_t fragile_vtbl = {
    .on_creation = fragile_create,
    .on_destroy = fragile_destroy,
    .serialize = fragile_serialize,
    .on_submodel_move = fragile_move,
};

/* Writes two values but reads back only one: the pack must notice the
 * unread bytes instead of silently ignoring them. */
static kr_status_t greedy_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    (void)w;
    (void)self;
    uint64_t *v = state;
    kr_ser_u64(s, v);
    if (!kr_serializer_loading(s)) {
        uint64_t extra = 99;
        kr_ser_u64(s, &extra);
    }
    return kr_serializer_status(s);
}

static const kr_behavior_vtbl_t greedy_vtbl = { .serialize = greedy_serialize };

/* Builds the test registry; `extra` adds one more component at the end. */
static kr_registry_t *make_registry(ids_t *ids, bool extra)
{
    kr_registry_t *reg = kr_registry_create();
    cr_assert_not_null(reg, "%s", kr_last_error());
    static const kr_field_t pos_fields[] = {
        KR_FIELD(pos_t, x, KR_FIELD_F64),
        KR_FIELD(pos_t, y, KR_FIELD_F64),
        KR_FIELD(pos_t, k, KR_FIELD_I32),
    };
    static const kr_field_t link_fields[] = {
        KR_FIELD(link_t, inside, KR_FIELD_ENTITY),
        KR_FIELD(link_t, root, KR_FIELD_ENTITY),
        KR_FIELD(link_t, outside, KR_FIELD_ENTITY),
        KR_FIELD_ARRAY(link_t, arr, KR_FIELD_ENTITY, 2),
        KR_FIELD(link_t, mark, KR_FIELD_U32),
    };
    ids->pos = kr_component_register(reg, &(kr_component_desc_t){
        .name = "pos", .size = sizeof(pos_t), .fields = pos_fields, .field_count = 3 });
    ids->link = kr_component_register(reg, &(kr_component_desc_t){
        .name = "link", .size = sizeof(link_t), .fields = link_fields, .field_count = 5 });
    ids->tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "tag", .size = 0 });
    ids->labeled = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "labeled", .state_size = sizeof(labeled_t), .vtbl = &labeled_vtbl });
    ids->raw = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "raw", .state_size = sizeof(raw_t), .vtbl = &raw_vtbl });
    ids->fragile = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "fragile", .state_size = sizeof(fragile_t), .vtbl = &fragile_vtbl });
    ids->greedy = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "greedy", .state_size = sizeof(uint64_t), .vtbl = &greedy_vtbl });
    cr_assert(ids->pos && ids->link && ids->tag && ids->labeled && ids->raw && ids->fragile && ids->greedy,
              "%s", kr_last_error());
    if (extra)
        cr_assert_neq(kr_component_register(reg, &(kr_component_desc_t){ .name = "extra", .size = 4 }),
                      KR_COMPONENT_NONE);
    return reg;
}

static kr_world_t *make_world(kr_registry_t *reg, evlog_t *log)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .owner = log });
    cr_assert_not_null(w, "%s", kr_last_error());
    return w;
}

/* A target world whose next ids differ from the source's: some slots are
 * used, some recycled with a newer generation. */
static kr_world_t *make_target(kr_registry_t *reg, evlog_t *log)
{
    kr_world_t *w = make_world(reg, log);
    kr_entity_t f[7];
    for (int i = 0; i < 7; i++) {
        f[i] = kr_entity_create(w);
        cr_assert_neq(f[i], KR_ENTITY_INVALID);
    }
    cr_assert_eq(kr_entity_destroy(w, f[1]), KR_OK);
    cr_assert_eq(kr_entity_destroy(w, f[4]), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, f[0], "filler"), KR_OK);
    cr_assert_eq(kr_spatial_insert(w, f[2], 1.5, 2.5), KR_OK); /* shares a cell with the root */
    return w;
}

static kr_entity_t mk(kr_world_t *w, const char *name, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .parent = parent });
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}

static void *add(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    void *p = kr_component_add(w, e, c);
    cr_assert_not_null(p, "%s", kr_last_error());
    return p;
}

static void *get(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    void *p = kr_component_get(w, e, c);
    cr_assert_not_null(p, "entity %llx lacks component %u: %s", (unsigned long long)e, c, kr_last_error());
    return p;
}

/* ---- the reference scene ---------------------------------------------------
 *
 *   P "parent-of-root"          O "outside" (pos)        stale (destroyed)
 *   └─ R "root"  pos link labeled raw, spatial (1.5, 2.5)
 *      ├─ C1 "child-1"  pos link labeled(label NULL)
 *      │   ├─ G11 "grandchild-11"  pos
 *      │   └─ G12 (no name)  tag
 *      ├─ C3 "child-3"  (nothing; moved before C2)
 *      │   └─ G31 "grandchild-31"  link fragile
 *      └─ C2 "child-2"  raw tag, spatial (-7.25, 100)
 */
typedef struct scene {
    kr_entity_t P, O, stale, R, C1, C2, C3, G11, G12, G31;
} scene_t;

static void build_scene(kr_world_t *w, const ids_t *ids, scene_t *s, uint32_t fragile_value)
{
    s->P = mk(w, "parent-of-root", 0);
    s->O = mk(w, "outside", 0);
    *(pos_t *)add(w, s->O, ids->pos) = (pos_t){ -1, -1, -1, 0 };
    s->stale = mk(w, "stale", 0);
    cr_assert_eq(kr_entity_destroy(w, s->stale), KR_OK);
    s->R = mk(w, "root", s->P);
    s->C1 = mk(w, "child-1", s->R);
    s->C2 = mk(w, "child-2", s->R);
    s->C3 = mk(w, "child-3", s->R);
    cr_assert_eq(kr_entity_insert_before(w, s->C3, s->R, s->C2), KR_OK, "%s", kr_last_error());
    s->G11 = mk(w, "grandchild-11", s->C1);
    s->G12 = mk(w, NULL, s->C1);
    s->G31 = mk(w, "grandchild-31", s->C3);

    *(pos_t *)add(w, s->R, ids->pos) = (pos_t){ 1.0, 2.0, 7, 0 };
    *(link_t *)add(w, s->R, ids->link) =
        (link_t){ s->G11, s->R, s->O, { s->C2, s->O }, LINK_MARK_R, 0 };
    labeled_t *lr = add(w, s->R, ids->labeled);
    cr_assert_eq(lr->created, 1);
    lr->label = strdup("root label");
    lr->buddy = s->G12;
    lr->counter = -1234567890123LL;
    lr->weight = 3.25;
    raw_t *rr = add(w, s->R, ids->raw);
    rr->a = -42;
    rr->b = 6.5;
    cr_assert_eq(kr_spatial_insert(w, s->R, 1.5, 2.5), KR_OK);

    *(pos_t *)add(w, s->C1, ids->pos) = (pos_t){ 10.0, 20.0, 1, 0 };
    *(link_t *)add(w, s->C1, ids->link) =
        (link_t){ s->C1, s->R, s->P, { s->G31, s->stale }, LINK_MARK_C1, 0 };
    labeled_t *lc = add(w, s->C1, ids->labeled);
    lc->label = NULL;
    lc->buddy = s->O;
    lc->counter = 5;
    lc->weight = -0.5;

    raw_t *rc = add(w, s->C2, ids->raw);
    rc->a = 7;
    rc->b = -1e300;
    add(w, s->C2, ids->tag);
    cr_assert_eq(kr_spatial_insert(w, s->C2, -7.25, 100.0), KR_OK);

    *(pos_t *)add(w, s->G11, ids->pos) = (pos_t){ 3.0, 4.0, 11, 0 };
    add(w, s->G12, ids->tag);
    *(link_t *)add(w, s->G31, ids->link) =
        (link_t){ KR_ENTITY_INVALID, s->R, s->O, { s->G31, s->C1 }, LINK_MARK_G31, 0 };
    ((fragile_t *)add(w, s->G31, ids->fragile))->v = fragile_value;
}

static void pack_ok(kr_world_t *w, const kr_entity_t *roots, size_t n, kr_buf_t *out)
{
    cr_assert_eq(kr_pack(w, roots, n, out), KR_OK, "kr_pack: %s", kr_last_error());
}

static void unpack_ok(kr_world_t *w, const void *data, size_t len, const kr_unpack_desc_t *desc,
                      size_t *root_count, size_t *used)
{
    kr_status_t st = kr_unpack(w, data, len, desc, root_count, used);
    cr_assert_eq(st, KR_OK, "kr_unpack: %s (%s)", kr_status_str(st), kr_last_error());
}

static kr_entity_t child_at(kr_world_t *w, kr_entity_t parent, size_t i)
{
    kr_entity_t c = kr_entity_first_child(w, parent);
    while (i-- && c) c = kr_entity_next_sibling(w, c);
    cr_assert_neq(c, KR_ENTITY_INVALID, "missing child");
    return c;
}

static void assert_name(kr_world_t *w, kr_entity_t e, const char *want)
{
    const char *got = kr_entity_name(w, e);
    if (!want) {
        cr_assert_null(got, "unexpected name '%s'", got);
        return;
    }
    cr_assert_not_null(got, "entity lost its name '%s'", want);
    cr_assert_str_eq(got, want);
}

/* The unpacked copy of the scene, found by walking the new tree. */
static void map_scene(kr_world_t *b, kr_entity_t root, scene_t *n)
{
    memset(n, 0, sizeof *n);
    n->R = root;
    cr_assert_eq(kr_entity_child_count(b, root), 3);
    n->C1 = child_at(b, root, 0);
    n->C3 = child_at(b, root, 1);
    n->C2 = child_at(b, root, 2);
    cr_assert_eq(kr_entity_child_count(b, n->C1), 2);
    n->G11 = child_at(b, n->C1, 0);
    n->G12 = child_at(b, n->C1, 1);
    cr_assert_eq(kr_entity_child_count(b, n->C3), 1);
    n->G31 = child_at(b, n->C3, 0);
    cr_assert_eq(kr_entity_child_count(b, n->C2), 0);
    cr_assert_eq(kr_entity_child_count(b, n->G11), 0);
    cr_assert_eq(kr_entity_child_count(b, n->G12), 0);
    cr_assert_eq(kr_entity_child_count(b, n->G31), 0);
}

static void assert_link(kr_world_t *w, const ids_t *ids, kr_entity_t e, link_t want)
{
    const link_t *l = get(w, e, ids->link);
    cr_assert_eq(l->mark, want.mark);
    cr_assert_eq(l->inside, want.inside, "inside: %llx want %llx", (unsigned long long)l->inside,
                 (unsigned long long)want.inside);
    cr_assert_eq(l->root, want.root, "root: %llx want %llx", (unsigned long long)l->root,
                 (unsigned long long)want.root);
    cr_assert_eq(l->outside, want.outside, "outside: %llx want %llx", (unsigned long long)l->outside,
                 (unsigned long long)want.outside);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(l->arr[i], want.arr[i], "arr[%d]: %llx want %llx", i, (unsigned long long)l->arr[i],
                     (unsigned long long)want.arr[i]);
}

/* Checks the whole unpacked scene `n` in world b against the original. */
static void check_scene_copy(kr_world_t *b, const ids_t *ids, const scene_t *o, const scene_t *n,
                             uint32_t fragile_value)
{
    (void)o;
    const kr_entity_t all_new[] = { n->R, n->C1, n->C2, n->C3, n->G11, n->G12, n->G31 };
    for (int i = 0; i < 7; i++) cr_assert(kr_entity_alive(b, all_new[i]));
    cr_assert_eq(kr_entity_parent(b, n->R), KR_ENTITY_INVALID, "a root must have no parent");
    cr_assert_eq(kr_entity_parent(b, n->C1), n->R);
    cr_assert_eq(kr_entity_parent(b, n->G31), n->C3);

    assert_name(b, n->R, "root");
    assert_name(b, n->C1, "child-1");
    assert_name(b, n->C2, "child-2");
    assert_name(b, n->C3, "child-3");
    assert_name(b, n->G11, "grandchild-11");
    assert_name(b, n->G12, NULL);
    assert_name(b, n->G31, "grandchild-31");

    /* Exactly the original component sets. */
    struct { kr_entity_t e; kr_component_t want[5]; } sets[] = {
        { n->R, { ids->pos, ids->link, ids->labeled, ids->raw } },
        { n->C1, { ids->pos, ids->link, ids->labeled } },
        { n->C2, { ids->raw, ids->tag } },
        { n->C3, { 0 } },
        { n->G11, { ids->pos } },
        { n->G12, { ids->tag } },
        { n->G31, { ids->link, ids->fragile } },
    };
    kr_component_t all[] = { KR_TRANSFORM, ids->pos, ids->link, ids->tag, ids->labeled, ids->raw,
                             ids->fragile, ids->greedy };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        for (size_t c = 0; c < sizeof all / sizeof all[0]; c++) {
            bool want = false;
            for (int k = 0; k < 5; k++) want |= sets[i].want[k] == all[c] && all[c];
            cr_assert_eq(kr_component_has(b, sets[i].e, all[c]), want, "entity %zu component %u: has=%d",
                         i, all[c], !want);
        }

    const pos_t *p = get(b, n->R, ids->pos);
    cr_assert(p->x == 1.0 && p->y == 2.0 && p->k == 7);
    p = get(b, n->C1, ids->pos);
    cr_assert(p->x == 10.0 && p->y == 20.0 && p->k == 1);
    p = get(b, n->G11, ids->pos);
    cr_assert(p->x == 3.0 && p->y == 4.0 && p->k == 11);

    assert_link(b, ids, n->R, (link_t){ n->G11, n->R, KR_ENTITY_INVALID, { n->C2, KR_ENTITY_INVALID }, LINK_MARK_R, 0 });
    assert_link(b, ids, n->C1, (link_t){ n->C1, n->R, KR_ENTITY_INVALID, { n->G31, KR_ENTITY_INVALID }, LINK_MARK_C1, 0 });
    assert_link(b, ids, n->G31, (link_t){ KR_ENTITY_INVALID, n->R, KR_ENTITY_INVALID, { n->G31, n->C1 }, LINK_MARK_G31, 0 });

    const labeled_t *l = get(b, n->R, ids->labeled);
    cr_assert_not_null(l->label);
    cr_assert_str_eq(l->label, "root label");
    cr_assert_eq(l->buddy, n->G12);
    cr_assert_eq(l->counter, -1234567890123LL);
    cr_assert_eq(l->weight, 3.25);
    cr_assert_eq(l->created_at_load, 1, "serialize ran before on_creation");
    l = get(b, n->C1, ids->labeled);
    cr_assert_null(l->label);
    cr_assert_eq(l->buddy, KR_ENTITY_INVALID, "reference outside the pack must load as invalid");
    cr_assert_eq(l->counter, 5);
    cr_assert_eq(l->weight, -0.5);

    const raw_t *r = get(b, n->R, ids->raw);
    cr_assert_eq(r->a, -42);
    cr_assert_eq(r->b, 6.5);
    r = get(b, n->C2, ids->raw);
    cr_assert_eq(r->a, 7);
    cr_assert_eq(r->b, -1e300);
    cr_assert_eq(((const fragile_t *)get(b, n->G31, ids->fragile))->v, fragile_value);

    double x = 0, y = 0;
    cr_assert(kr_spatial_position(b, n->R, &x, &y), "root lost its spatial position");
    cr_assert(x == 1.5 && y == 2.5);
    cr_assert(kr_spatial_position(b, n->C2, &x, &y));
    cr_assert(x == -7.25 && y == 100.0);
    const kr_entity_t *others[] = { &n->C1, &n->C3, &n->G11, &n->G12, &n->G31 };
    for (size_t i = 0; i < 5; i++) cr_assert_not(kr_spatial_position(b, *others[i], NULL, NULL));
    /* The hash itself knows them, not only the position records. */
    size_t cnt = 0;
    const kr_entity_t *cell = kr_spatial_cell_entities(b, kr_spatial_cell_of(b, -7.25, 100.0), &cnt);
    bool found = false;
    for (size_t i = 0; i < cnt; i++) found |= cell[i] == n->C2;
    cr_assert(found, "unpacked entity missing from its spatial cell");
    kr_entity_t hits[8];
    size_t nh = kr_spatial_query_radius(b, 1.5, 2.5, 0.01, hits, 8);
    found = false;
    for (size_t i = 0; i < nh && i < 8; i++) found |= hits[i] == n->R;
    cr_assert(found);
}

/* ---- consistency of a world after an accepted (possibly damaged) pack ---- */

static bool in_set(const kr_entity_t *set, size_t n, kr_entity_t e)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == e) return true;
    return false;
}

/* Walks every root's subtree; every entity reference must be invalid or one
 * of the new entities. Returns the number of entities reached. */
static size_t check_consistent(kr_world_t *w, const ids_t *ids, const kr_entity_t *roots, size_t nroots,
                               kr_entity_t **out_set)
{
    size_t cap = 64, n = 0;
    kr_entity_t *set = malloc(cap * sizeof *set);
    cr_assert_not_null(set);
    for (size_t r = 0; r < nroots; r++) {
        cr_assert(kr_entity_alive(w, roots[r]));
        cr_assert_eq(kr_entity_parent(w, roots[r]), KR_ENTITY_INVALID);
        /* Pre-order walk with an explicit stack of next siblings. */
        kr_entity_t cur = roots[r];
        while (cur) {
            cr_assert(kr_entity_alive(w, cur));
            cr_assert_not(in_set(set, n, cur), "entity reached twice: the tree has a cycle");
            if (n == cap) {
                cap *= 2;
                set = realloc(set, cap * sizeof *set);
                cr_assert_not_null(set);
            }
            set[n++] = cur;
            cr_assert_leq(n, kr_world_entity_count(w));
            kr_entity_t next = kr_entity_first_child(w, cur);
            while (!next && cur != roots[r]) {
                next = kr_entity_next_sibling(w, cur);
                if (!next) cur = kr_entity_parent(w, cur);
            }
            cur = next;
        }
    }
    for (size_t i = 0; i < n; i++) {
        kr_entity_t e = set[i];
        const char *name = kr_entity_name(w, e);
        if (name) cr_assert_gt(strlen(name), 0);
        size_t kids = 0;
        for (kr_entity_t c = kr_entity_first_child(w, e); c; c = kr_entity_next_sibling(w, c)) {
            cr_assert_eq(kr_entity_parent(w, c), e);
            kids++;
        }
        cr_assert_eq(kids, kr_entity_child_count(w, e));
        if (kr_component_has(w, e, ids->link)) {
            const link_t *l = get(w, e, ids->link);
            const kr_entity_t refs[] = { l->inside, l->root, l->outside, l->arr[0], l->arr[1] };
            for (int k = 0; k < 5; k++)
                cr_assert(refs[k] == KR_ENTITY_INVALID || in_set(set, n, refs[k]),
                          "entity field points outside the unpacked entities");
        }
        if (kr_component_has(w, e, ids->labeled)) {
            const labeled_t *l = get(w, e, ids->labeled);
            cr_assert(l->buddy == KR_ENTITY_INVALID || in_set(set, n, l->buddy));
            if (l->label) cr_assert_lt(strlen(l->label), 1u << 20);
        }
        double x, y;
        if (kr_spatial_position(w, e, &x, &y)) cr_assert(isfinite(x) && isfinite(y));
    }
    if (out_set) *out_set = set;
    else free(set);
    return n;
}

/* ---- round trip ------------------------------------------------------------ */

Test(pack, subtree_round_trip)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    evlog_t la = { 0 }, lb = { 0 };
    kr_world_t *a = make_world(reg, &la);
    scene_t s;
    build_scene(a, &ids, &s, 17);
    size_t a_count = kr_world_entity_count(a);

    kr_buf_t buf;
    kr_buf_init(&buf);
    const char prefix[] = "HDR!";
    cr_assert_eq(kr_buf_append(&buf, prefix, 4), KR_OK);
    pack_ok(a, &s.R, 1, &buf);
    cr_assert_gt(buf.len, 4);
    cr_assert_eq(memcmp(buf.data, prefix, 4), 0, "kr_pack must append, not overwrite");

    /* Packing changes nothing in the source world. */
    cr_assert_eq(kr_world_entity_count(a), a_count);
    cr_assert_eq(kr_entity_parent(a, s.R), s.P);
    cr_assert_str_eq(((labeled_t *)get(a, s.R, ids.labeled))->label, "root label");
    cr_assert_eq(((link_t *)get(a, s.R, ids.link))->inside, s.G11);

    kr_world_t *b = make_target(reg, &lb);
    size_t b_count = kr_world_entity_count(b);
    size_t b_spatial = kr_spatial_count(b);
    kr_entity_t root = 0;
    size_t nroots = 99, used = 0;
    unpack_ok(b, buf.data + 4, buf.len - 4,
              &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1, .notify_move = true }, &nroots,
              &used);
    cr_assert_eq(nroots, 1);
    cr_assert_eq(used, buf.len - 4);
    cr_assert_eq(kr_world_entity_count(b), b_count + 7);
    cr_assert_eq(kr_spatial_count(b), b_spatial + 2);
    cr_assert_eq(kr_entity_find(b, "root"), root);
    cr_assert_eq(kr_entity_find(b, "filler"), kr_entity_make(0, 1), "the target's own names survive");

    scene_t n;
    map_scene(b, root, &n);
    check_scene_copy(b, &ids, &s, &n, 17);

    /* The label is the unpacked world's own heap copy. */
    labeled_t *la_r = get(a, s.R, ids.labeled), *lb_r = get(b, n.R, ids.labeled);
    cr_assert_neq(la_r->label, lb_r->label);

    /* The source is intact and independent of the copy. */
    cr_assert_eq(kr_world_entity_count(a), a_count);
    cr_assert_eq(kr_entity_destroy(b, n.R), KR_OK);
    cr_assert_eq(kr_world_entity_count(b), b_count);
    cr_assert_str_eq(((labeled_t *)get(a, s.R, ids.labeled))->label, "root label");
    cr_assert_eq(count_ev(&lb, EV_DESTROY, B_LABELED), 2);

    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
    free(la.ev);
    free(lb.ev);
}

Test(pack, callbacks_in_order_with_notify_move)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    evlog_t la = { 0 }, lb = { 0 };
    kr_world_t *a = make_world(reg, &la);
    scene_t s;
    build_scene(a, &ids, &s, 17);
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, &s.R, 1, &buf);
    cr_assert_eq(count_ev(&la, EV_LOAD, 0), 0, "packing must not load");
    kr_world_t *b = make_target(reg, &lb);
    kr_entity_t root = 0;
    unpack_ok(b, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1, .notify_move = true },
              NULL, NULL);
    scene_t n;
    map_scene(b, root, &n);

    /* Every behavior instance: create, then load (serialize only), then move
     * with its old id. */
    struct { kr_entity_t e, old; int behavior; bool serialize; } inst[] = {
        { n.R, s.R, B_LABELED, true }, { n.R, s.R, B_RAW, false }, { n.C1, s.C1, B_LABELED, true },
        { n.C2, s.C2, B_RAW, false }, { n.G31, s.G31, B_FRAGILE, true },
    };
    for (size_t i = 0; i < sizeof inst / sizeof inst[0]; i++) {
        size_t c = find_ev(&lb, EV_CREATE, inst[i].behavior, inst[i].e);
        size_t l = find_ev(&lb, EV_LOAD, inst[i].behavior, inst[i].e);
        size_t m = find_ev(&lb, EV_MOVE, inst[i].behavior, inst[i].e);
        cr_assert_neq(c, SIZE_MAX, "instance %zu: no on_creation", i);
        cr_assert_neq(m, SIZE_MAX, "instance %zu: no on_submodel_move", i);
        if (inst[i].serialize) {
            cr_assert_neq(l, SIZE_MAX, "instance %zu: serialize did not load", i);
            cr_assert_lt(c, l, "instance %zu: serialize before on_creation", i);
            cr_assert_lt(l, m, "instance %zu: on_submodel_move before serialize", i);
        } else {
            cr_assert_eq(l, SIZE_MAX);
            cr_assert_lt(c, m);
        }
        cr_assert_eq(lb.ev[m].arg, inst[i].old, "instance %zu: old_self %llx, want the id in A %llx", i,
                     (unsigned long long)lb.ev[m].arg, (unsigned long long)inst[i].old);
        /* By then the entity sits in its final place in the tree. */
        cr_assert_eq(lb.ev[m].parent_then, kr_entity_parent(b, inst[i].e));
    }
    /* Exactly once each; no hierarchy callbacks while unpacking. */
    cr_assert_eq(count_ev(&lb, EV_CREATE, 0), 5);
    cr_assert_eq(count_ev(&lb, EV_LOAD, 0), 3);
    cr_assert_eq(count_ev(&lb, EV_MOVE, 0), 5);
    cr_assert_eq(count_ev(&lb, EV_HIER, 0), 0, "hierarchy callbacks fired during unpack");
    cr_assert_eq(count_ev(&lb, EV_DESTROY, 0), 0);
    /* Raw behaviors kept their bytes (on_creation's mark is part of them). */
    cr_assert_eq(((raw_t *)get(b, n.R, ids.raw))->created, 1);

    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
    free(la.ev);
    free(lb.ev);
}

Test(pack, no_move_without_notify)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    evlog_t la = { 0 }, lb = { 0 };
    kr_world_t *a = make_world(reg, &la);
    scene_t s;
    build_scene(a, &ids, &s, 17);
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, &s.R, 1, &buf);
    kr_world_t *b = make_target(reg, &lb);
    kr_entity_t root = 0;
    unpack_ok(b, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1 }, NULL, NULL);
    cr_assert_eq(count_ev(&lb, EV_CREATE, 0), 5);
    cr_assert_eq(count_ev(&lb, EV_LOAD, 0), 3);
    cr_assert_eq(count_ev(&lb, EV_MOVE, 0), 0, "on_submodel_move without notify_move");
    scene_t n;
    map_scene(b, root, &n);
    check_scene_copy(b, &ids, &s, &n, 17);

    /* A NULL desc is allowed too: no roots reported, no move. */
    size_t nroots = 0, used = 0;
    unpack_ok(b, buf.data, buf.len, NULL, &nroots, &used);
    cr_assert_eq(nroots, 1);
    cr_assert_eq(used, buf.len);
    cr_assert_eq(count_ev(&lb, EV_MOVE, 0), 0);
    cr_assert_eq(count_ev(&lb, EV_CREATE, 0), 10);

    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
    free(la.ev);
    free(lb.ev);
}

Test(pack, unpack_into_the_source_world_copies)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    evlog_t la = { 0 };
    kr_world_t *a = make_world(reg, &la);
    scene_t s;
    build_scene(a, &ids, &s, 17);
    size_t before = kr_world_entity_count(a);
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, &s.R, 1, &buf);
    kr_entity_t root = 0;
    unpack_ok(a, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1 }, NULL, NULL);
    cr_assert_eq(kr_world_entity_count(a), before + 7);
    cr_assert_neq(root, s.R);
    scene_t n;
    map_scene(a, root, &n);
    /* Even though O and P exist here, they were outside the pack. */
    check_scene_copy(a, &ids, &s, &n, 17);
    cr_assert_eq(kr_entity_find(a, "root"), s.R, "the oldest holder keeps the name");
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_registry_destroy(reg);
    free(la.ev);
}

Test(pack, same_layout_registry_built_twice_is_accepted)
{
    ids_t ia, ib;
    kr_registry_t *ra = make_registry(&ia, false), *rb = make_registry(&ib, false);
    cr_assert_eq(kr_registry_hash(ra), kr_registry_hash(rb));
    evlog_t la = { 0 }, lb = { 0 };
    kr_world_t *a = make_world(ra, &la), *b = make_target(rb, &lb);
    scene_t s;
    build_scene(a, &ia, &s, 17);
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, &s.R, 1, &buf);
    kr_entity_t root = 0;
    unpack_ok(b, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1 }, NULL, NULL);
    scene_t n;
    map_scene(b, root, &n);
    check_scene_copy(b, &ib, &s, &n, 17);
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(ra);
    kr_registry_destroy(rb);
    free(la.ev);
    free(lb.ev);
}

/* ---- bulk, root lists, back to back --------------------------------------- */

Test(pack, bulk_ten_thousand_entities)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    kr_world_t *a = make_world(reg, NULL), *b = make_world(reg, NULL);
    enum { ROOTS = 2500, KIDS = 3 };
    kr_entity_t *roots = malloc(ROOTS * sizeof *roots);
    kr_entity_t outside = mk(a, "not packed", 0);
    cr_assert_not_null(roots);
    char name[32];
    for (int i = 0; i < ROOTS; i++) {
        snprintf(name, sizeof name, "r%d", i);
        roots[i] = mk(a, name, 0);
        kr_entity_t kids[KIDS];
        for (int k = 0; k < KIDS; k++) {
            kids[k] = kr_entity_create_desc(a, &(kr_entity_desc_t){
                .parent = roots[i], .components = &ids.pos, .component_count = 1 });
            cr_assert_neq(kids[k], KR_ENTITY_INVALID);
            *(pos_t *)get(a, kids[k], ids.pos) = (pos_t){ i, k, i * KIDS + k, 0 };
        }
        /* A reference into another root's subtree stays valid: it is in the pack. */
        *(link_t *)add(a, roots[i], ids.link) =
            (link_t){ kids[1], roots[i], i ? roots[i - 1] : outside, { kids[2], kids[0] }, (uint32_t)i, 0 };
        if (i % 10 == 0) cr_assert_eq(kr_spatial_insert(a, roots[i], i, -i), KR_OK);
    }
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, roots, ROOTS, &buf);

    kr_entity_t *nr = malloc(ROOTS * sizeof *nr);
    size_t nroots = 0, used = 0;
    unpack_ok(b, buf.data, buf.len,
              &(kr_unpack_desc_t){ .roots = nr, .roots_capacity = ROOTS, .notify_move = true }, &nroots, &used);
    cr_assert_eq(nroots, ROOTS);
    cr_assert_eq(used, buf.len);
    cr_assert_eq(kr_world_entity_count(b), (size_t)ROOTS * (1 + KIDS));
    cr_assert_eq(kr_spatial_count(b), ROOTS / 10);
    for (int i = 0; i < ROOTS; i++) {
        snprintf(name, sizeof name, "r%d", i);
        assert_name(b, nr[i], name); /* roots in order */
        cr_assert_eq(kr_entity_parent(b, nr[i]), KR_ENTITY_INVALID);
        cr_assert_eq(kr_entity_child_count(b, nr[i]), KIDS);
        kr_entity_t kids[KIDS];
        for (int k = 0; k < KIDS; k++) {
            kids[k] = child_at(b, nr[i], (size_t)k);
            const pos_t *p = get(b, kids[k], ids.pos);
            cr_assert(p->x == i && p->y == k && p->k == i * KIDS + k, "root %d child %d out of order", i, k);
        }
        const link_t *l = get(b, nr[i], ids.link);
        cr_assert_eq(l->mark, (uint32_t)i);
        cr_assert_eq(l->inside, kids[1]);
        cr_assert_eq(l->root, nr[i]);
        cr_assert_eq(l->outside, i ? nr[i - 1] : KR_ENTITY_INVALID);
        cr_assert_eq(l->arr[0], kids[2]);
        cr_assert_eq(l->arr[1], kids[0]);
        double x, y;
        if (i % 10 == 0) {
            cr_assert(kr_spatial_position(b, nr[i], &x, &y));
            cr_assert(x == i && y == -i);
        } else {
            cr_assert_not(kr_spatial_position(b, nr[i], NULL, NULL));
        }
    }
    kr_buf_fini(&buf);
    free(roots);
    free(nr);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
}

Test(pack, roots_capacity_smaller_than_root_count)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    kr_world_t *a = make_world(reg, NULL), *b = make_world(reg, NULL);
    kr_entity_t roots[5];
    char name[16];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "r%d", i);
        roots[i] = mk(a, name, 0);
        mk(a, "kid", roots[i]);
    }
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, roots, 5, &buf);
    kr_entity_t got[4] = { 1, 1, 1, 0xfeed };
    size_t nroots = 0;
    unpack_ok(b, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = got, .roots_capacity = 3 }, &nroots, NULL);
    cr_assert_eq(nroots, 5, "root_count is the full number of roots");
    cr_assert_eq(got[3], 0xfeed, "wrote past roots_capacity");
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "r%d", i);
        assert_name(b, got[i], name);
    }
    cr_assert_eq(kr_world_entity_count(b), 10);
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
}

Test(pack, two_packs_back_to_back)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    evlog_t la = { 0 }, lb = { 0 };
    kr_world_t *a = make_world(reg, &la), *b = make_target(reg, &lb);
    scene_t s;
    build_scene(a, &ids, &s, 17);
    kr_entity_t solo = mk(a, "solo", 0);
    *(pos_t *)add(a, solo, ids.pos) = (pos_t){ 9, 8, 7, 0 };
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, &s.R, 1, &buf);
    size_t first = buf.len;
    pack_ok(a, &solo, 1, &buf);
    cr_assert_gt(buf.len, first);
    /* Trailing bytes after the packs do not disturb reading them. */
    cr_assert_eq(kr_buf_put_u64(&buf, 0x0123456789abcdefull), KR_OK);

    size_t used1 = 0, used2 = 0, n1 = 0, n2 = 0;
    kr_entity_t r1 = 0, r2 = 0;
    unpack_ok(b, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &r1, .roots_capacity = 1 }, &n1, &used1);
    cr_assert_eq(used1, first);
    cr_assert_eq(n1, 1);
    unpack_ok(b, buf.data + used1, buf.len - used1, &(kr_unpack_desc_t){ .roots = &r2, .roots_capacity = 1 }, &n2,
              &used2);
    cr_assert_eq(n2, 1);
    cr_assert_eq(used1 + used2 + 8, buf.len);
    scene_t n;
    map_scene(b, r1, &n);
    check_scene_copy(b, &ids, &s, &n, 17);
    assert_name(b, r2, "solo");
    const pos_t *p = get(b, r2, ids.pos);
    cr_assert(p->x == 9 && p->y == 8 && p->k == 7);
    /* What follows is not a pack. */
    size_t count = kr_world_entity_count(b);
    cr_assert_neq(kr_unpack(b, buf.data + used1 + used2, 8, NULL, NULL, NULL), KR_OK);
    cr_assert_eq(kr_world_entity_count(b), count);
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
    free(la.ev);
    free(lb.ev);
}

Test(pack, empty_root_list)
{
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    kr_world_t *a = make_world(reg, NULL), *b = make_world(reg, NULL);
    mk(a, "x", 0);
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(a, NULL, 0, &buf);
    cr_assert_gt(buf.len, 0, "even an empty pack has a header");
    size_t nroots = 7, used = 0;
    unpack_ok(b, buf.data, buf.len, NULL, &nroots, &used);
    cr_assert_eq(nroots, 0);
    cr_assert_eq(used, buf.len);
    cr_assert_eq(kr_world_entity_count(b), 0);
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
}

/* ---- refusals --------------------------------------------------------------- */

typedef struct fixture {
    ids_t ids;
    kr_registry_t *reg;
    evlog_t la, lb;
    kr_world_t *a, *b;
    scene_t s;
    kr_buf_t buf;
    size_t b_count, b_spatial;
} fixture_t;

static void fixture_init(fixture_t *f, uint32_t fragile_value)
{
    memset(f, 0, sizeof *f);
    f->reg = make_registry(&f->ids, false);
    f->a = make_world(f->reg, &f->la);
    f->b = make_target(f->reg, &f->lb);
    build_scene(f->a, &f->ids, &f->s, fragile_value);
    kr_buf_init(&f->buf);
    pack_ok(f->a, &f->s.R, 1, &f->buf);
    f->b_count = kr_world_entity_count(f->b);
    f->b_spatial = kr_spatial_count(f->b);
}

static void fixture_fini(fixture_t *f)
{
    kr_buf_fini(&f->buf);
    kr_world_destroy(f->a);
    kr_world_destroy(f->b);
    kr_registry_destroy(f->reg);
    free(f->la.ev);
    free(f->lb.ev);
}

/* Unpacks `len` bytes copied to an exact-size allocation (so a sanitizer
 * sees any read past the end) and expects a clean refusal. */
static kr_status_t expect_refused(fixture_t *f, const uint8_t *data, size_t len, const char *what)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    if (len) memcpy(copy, data, len);
    kr_clear_error();
    size_t nroots = 12345, used = 12345;
    kr_entity_t root = 0xabc;
    kr_status_t st = kr_unpack(f->b, copy, len,
                               &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1, .notify_move = true },
                               &nroots, &used);
    free(copy);
    cr_assert_neq(st, KR_OK, "%s: accepted", what);
    cr_assert_neq(kr_last_error()[0], '\0', "%s: no error message", what);
    cr_assert_eq(kr_last_status(), st, "%s: last status differs from the returned one", what);
    cr_assert_eq(kr_world_entity_count(f->b), f->b_count, "%s: entities left behind", what);
    cr_assert_eq(kr_spatial_count(f->b), f->b_spatial, "%s: spatial entries left behind", what);
    cr_assert_eq(kr_entity_find(f->b, "root"), KR_ENTITY_INVALID, "%s: a name was left behind", what);
    cr_assert_eq(count_ev(&f->lb, EV_MOVE, 0), 0, "%s: on_submodel_move fired", what);
    cr_assert_eq(nroots, 12345, "%s: root_count written on failure", what);
    cr_assert_eq(used, 12345, "%s: used written on failure", what);
    cr_assert_eq(root, 0xabc, "%s: roots written on failure", what);
    return st;
}

static size_t find_bytes(const uint8_t *hay, size_t n, const void *needle, size_t m)
{
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return i;
    return SIZE_MAX;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Offset of the header's "total bytes" field, found by value so the test
 * does not hard-code the layout. */
static size_t total_field(const uint8_t *d, size_t size)
{
    for (size_t o = 0; o + 8 <= 64 && o + 8 <= size; o++) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++) v |= (uint64_t)d[o + i] << (8 * i);
        if (v == size) return o;
    }
    cr_assert_fail("pack header holds no total-size field");
    return 0;
}

Test(pack, every_truncation_is_refused)
{
    fixture_t f;
    fixture_init(&f, 17);
    for (size_t len = 0; len < f.buf.len; len++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", len, f.buf.len);
        expect_refused(&f, f.buf.data, len, what);
        cr_assert_eq(kr_last_status(), KR_ERR_CORRUPT, "%s: %s", what, kr_status_str(kr_last_status()));
    }
    /* The full pack still works afterwards. */
    unpack_ok(f.b, f.buf.data, f.buf.len, NULL, NULL, NULL);
    fixture_fini(&f);
}

Test(pack, every_truncation_with_a_consistent_header_is_refused)
{
    /* A truncated pack whose header was rewritten to match its new size:
     * the entity parser itself must notice, without reading past the end. */
    fixture_t f;
    fixture_init(&f, 17);
    size_t at = total_field(f.buf.data, f.buf.len);
    uint8_t *cut = malloc(f.buf.len);
    cr_assert_not_null(cut);
    for (size_t len = at + 8; len < f.buf.len; len++) {
        memcpy(cut, f.buf.data, len);
        put_le64(cut + at, len);
        char what[80];
        snprintf(what, sizeof what, "cut to %zu of %zu bytes, header patched", len, f.buf.len);
        expect_refused(&f, cut, len, what);
        cr_assert_eq(kr_last_status(), KR_ERR_CORRUPT, "%s: %s", what, kr_status_str(kr_last_status()));
    }
    free(cut);
    fixture_fini(&f);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Unpacks damaged bytes: a refusal must be clean; an acceptance must leave a
 * consistent world, which is then emptied again. */
static void try_damaged(fixture_t *f, const uint8_t *data, size_t len, size_t *accepted)
{
    uint8_t *copy = malloc(len);
    cr_assert_not_null(copy);
    memcpy(copy, data, len);
    kr_entity_t roots[64];
    size_t nroots = 0, used = 0;
    size_t moves = count_ev(&f->lb, EV_MOVE, 0);
    kr_status_t st = kr_unpack(f->b, copy, len,
                               &(kr_unpack_desc_t){ .roots = roots, .roots_capacity = 64, .notify_move = true },
                               &nroots, &used);
    free(copy);
    if (st != KR_OK) {
        cr_assert_neq(kr_last_error()[0], '\0');
        cr_assert_eq(kr_world_entity_count(f->b), f->b_count, "refused damage left entities behind");
        cr_assert_eq(kr_spatial_count(f->b), f->b_spatial);
        cr_assert_eq(count_ev(&f->lb, EV_MOVE, 0), moves);
        return;
    }
    (*accepted)++;
    cr_assert_leq(used, len);
    cr_assert_leq(nroots, 64);
    size_t reached = check_consistent(f->b, &f->ids, roots, nroots, NULL);
    cr_assert_eq(reached, kr_world_entity_count(f->b) - f->b_count,
                 "accepted damage made %zu entities, %zu reachable from the roots",
                 kr_world_entity_count(f->b) - f->b_count, reached);
    for (size_t i = 0; i < nroots; i++) cr_assert_eq(kr_entity_destroy(f->b, roots[i]), KR_OK);
    cr_assert_eq(kr_world_entity_count(f->b), f->b_count);
    cr_assert_eq(kr_spatial_count(f->b), f->b_spatial);
}

Test(pack, every_single_bit_flip_is_safe)
{
    fixture_t f;
    fixture_init(&f, 17);
    uint8_t *d = malloc(f.buf.len);
    cr_assert_not_null(d);
    size_t accepted = 0;
    for (size_t i = 0; i < f.buf.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(d, f.buf.data, f.buf.len);
            d[i] ^= (uint8_t)(1u << bit);
            try_damaged(&f, d, f.buf.len, &accepted);
        }
    /* Flips in plain values (positions, names, numbers) are legitimately
     * accepted; flips in the structure are not. Both must occur. */
    cr_assert_gt(accepted, 0);
    cr_assert_lt(accepted, f.buf.len * 8);
    free(d);
    fixture_fini(&f);
}

Test(pack, random_damage_is_safe)
{
    fixture_t f;
    fixture_init(&f, 17);
    uint8_t *d = malloc(f.buf.len);
    cr_assert_not_null(d);
    uint64_t seed = 20240611;
    size_t accepted = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(d, f.buf.data, f.buf.len);
        int flips = 1 + (int)(rng(&seed) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rng(&seed) % f.buf.len);
            uint8_t x = (uint8_t)(rng(&seed) | 1);
            /* Sometimes a whole word of 0xff or 0x00, the classic bad lengths. */
            if (iter % 5 == 0) d[at] = (iter & 1) ? 0xff : 0x00;
            else d[at] ^= x;
        }
        try_damaged(&f, d, f.buf.len, &accepted);
    }
    cr_assert_lt(accepted, 4000);
    free(d);
    fixture_fini(&f);
}

Test(pack, wrong_magic_and_version)
{
    fixture_t f;
    fixture_init(&f, 17);
    uint8_t *d = malloc(f.buf.len);
    cr_assert_not_null(d);
    memcpy(d, f.buf.data, f.buf.len);
    d[0] ^= 0x20;
    expect_refused(&f, d, f.buf.len, "bad magic");
    cr_assert_eq(kr_last_status(), KR_ERR_CORRUPT);
    /* Version: the u32 after the magic. */
    memcpy(d, f.buf.data, f.buf.len);
    d[4] += 1;
    kr_status_t st = expect_refused(&f, d, f.buf.len, "other version");
    cr_assert(st == KR_ERR_MISMATCH || st == KR_ERR_CORRUPT, "%s", kr_status_str(st));
    /* Not a pack at all. */
    const char text[] = "this is definitely not a kairos pack, but it is long enough";
    expect_refused(&f, (const uint8_t *)text, sizeof text, "text");
    free(d);
    fixture_fini(&f);
}

Test(pack, other_registry_is_a_mismatch)
{
    fixture_t f;
    fixture_init(&f, 17);
    ids_t ids2;
    kr_registry_t *reg2 = make_registry(&ids2, true);
    cr_assert_neq(kr_registry_hash(reg2), kr_registry_hash(f.reg));
    evlog_t lc = { 0 };
    kr_world_t *c = make_world(reg2, &lc);
    mk(c, "already here", 0);
    kr_clear_error();
    kr_status_t st = kr_unpack(c, f.buf.data, f.buf.len, &(kr_unpack_desc_t){ .notify_move = true }, NULL, NULL);
    cr_assert_eq(st, KR_ERR_MISMATCH, "%s", kr_status_str(st));
    cr_assert_neq(kr_last_error()[0], '\0');
    cr_assert_eq(kr_world_entity_count(c), 1);
    cr_assert_eq(lc.n, 0, "callbacks ran for a refused pack");
    /* And the other way round. */
    kr_entity_t e = mk(c, "from c", 0);
    kr_buf_t other;
    kr_buf_init(&other);
    pack_ok(c, &e, 1, &other);
    st = kr_unpack(f.b, other.data, other.len, NULL, NULL, NULL);
    cr_assert_eq(st, KR_ERR_MISMATCH);
    cr_assert_eq(kr_world_entity_count(f.b), f.b_count);
    kr_buf_fini(&other);
    kr_world_destroy(c);
    kr_registry_destroy(reg2);
    free(lc.ev);
    fixture_fini(&f);
}

Test(pack, overlapping_duplicate_and_stale_roots_are_refused)
{
    fixture_t f;
    fixture_init(&f, 17);
    size_t len = f.buf.len;
    struct { kr_entity_t roots[3]; size_t n; kr_status_t want; const char *what; } cases[] = {
        { { f.s.R, f.s.C1 }, 2, KR_ERR_INVALID_ARG, "child after its root" },
        { { f.s.G31, f.s.R }, 2, KR_ERR_INVALID_ARG, "grandchild before its root" },
        { { f.s.C2, f.s.P }, 2, KR_ERR_INVALID_ARG, "root below another root's root" },
        { { f.s.O, f.s.R, f.s.R }, 3, KR_ERR_INVALID_ARG, "duplicate root" },
        { { f.s.R, f.s.stale }, 2, KR_ERR_STALE_ENTITY, "destroyed root" },
        { { f.s.O, KR_ENTITY_INVALID }, 2, KR_ERR_STALE_ENTITY, "invalid root" },
        { { kr_entity_make(999999, 1) }, 1, KR_ERR_STALE_ENTITY, "index out of range" },
        { { kr_entity_make(kr_entity_index(f.s.R), kr_entity_generation(f.s.R) + 1) }, 1, KR_ERR_STALE_ENTITY,
          "wrong generation" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kr_clear_error();
        kr_status_t st = kr_pack(f.a, cases[i].roots, cases[i].n, &f.buf);
        cr_assert_eq(st, cases[i].want, "%s: %s", cases[i].what, kr_status_str(st));
        cr_assert_neq(kr_last_error()[0], '\0', "%s: no message", cases[i].what);
        cr_assert_eq(f.buf.len, len, "%s: a refused pack left bytes in the buffer", cases[i].what);
    }
    /* Sibling subtrees are fine, and the earlier refusals left no marks
     * (the overlap check must not remember the failed calls). */
    kr_entity_t ok_roots[] = { f.s.C1, f.s.C2, f.s.C3, f.s.O };
    pack_ok(f.a, ok_roots, 4, &f.buf);
    size_t nroots = 0;
    kr_entity_t got[4];
    unpack_ok(f.b, f.buf.data + len, f.buf.len - len,
              &(kr_unpack_desc_t){ .roots = got, .roots_capacity = 4 }, &nroots, NULL);
    cr_assert_eq(nroots, 4);
    assert_name(f.b, got[0], "child-1");
    assert_name(f.b, got[3], "outside");
    cr_assert_eq(kr_world_entity_count(f.b), f.b_count + 7);
    /* C1's link: C1 itself and G31 (C3's subtree) are packed; R and P are not. */
    const link_t *l = get(f.b, got[0], f.ids.link);
    cr_assert_eq(l->inside, got[0]);
    cr_assert_eq(l->root, KR_ENTITY_INVALID);
    cr_assert_eq(l->arr[0], kr_entity_first_child(f.b, got[2]));
    cr_assert_eq(l->outside, KR_ENTITY_INVALID);
    /* C1's buddy O is in this pack as its own root. */
    cr_assert_eq(((labeled_t *)get(f.b, got[0], f.ids.labeled))->buddy, got[3]);
    fixture_fini(&f);
}

Test(pack, null_arguments)
{
    fixture_t f;
    fixture_init(&f, 17);
    size_t len = f.buf.len;
    kr_clear_error();
    cr_assert_eq(kr_pack(NULL, &f.s.R, 1, &f.buf), KR_ERR_INVALID_ARG);
    cr_assert_neq(kr_last_error()[0], '\0');
    kr_clear_error();
    cr_assert_eq(kr_pack(f.a, NULL, 1, &f.buf), KR_ERR_INVALID_ARG);
    cr_assert_neq(kr_last_error()[0], '\0');
    kr_clear_error();
    cr_assert_eq(kr_pack(f.a, &f.s.R, 1, NULL), KR_ERR_INVALID_ARG);
    cr_assert_neq(kr_last_error()[0], '\0');
    cr_assert_eq(f.buf.len, len);

    kr_clear_error();
    cr_assert_eq(kr_unpack(NULL, f.buf.data, f.buf.len, NULL, NULL, NULL), KR_ERR_INVALID_ARG);
    cr_assert_neq(kr_last_error()[0], '\0');
    kr_clear_error();
    cr_assert_eq(kr_unpack(f.b, NULL, f.buf.len, NULL, NULL, NULL), KR_ERR_INVALID_ARG);
    cr_assert_neq(kr_last_error()[0], '\0');
    expect_refused(&f, f.buf.data, 0, "zero length");
    cr_assert_eq(kr_world_entity_count(f.b), f.b_count);
    fixture_fini(&f);
}

Test(pack, failing_behavior_load_leaves_nothing_behind)
{
    fixture_t f;
    fixture_init(&f, FRAGILE_POISON); /* G31's fragile state refuses to load */
    kr_status_t st = expect_refused(&f, f.buf.data, f.buf.len, "poisoned behavior");
    cr_assert_eq(st, KR_ERR_STATE, "the callback's status should come back, got %s", kr_status_str(st));
    /* Whatever on_creation set up was torn down by on_destroy (the labels
     * loaded before the failure were freed there: the sanitizer build checks). */
    cr_assert_eq(count_ev(&f.lb, EV_CREATE, 0), count_ev(&f.lb, EV_DESTROY, 0),
                 "%zu on_creation but %zu on_destroy", count_ev(&f.lb, EV_CREATE, 0),
                 count_ev(&f.lb, EV_DESTROY, 0));
    cr_assert_eq(count_ev(&f.lb, EV_LOAD, B_FRAGILE), 1);
    /* The target still works. */
    kr_entity_t e = mk(f.b, "after", 0);
    cr_assert(kr_entity_alive(f.b, e));
    cr_assert_eq(kr_world_entity_count(f.b), f.b_count + 1);
    fixture_fini(&f);
}

Test(pack, serialize_that_reads_less_than_it_wrote_is_refused)
{
    fixture_t f;
    fixture_init(&f, 17);
    kr_entity_t g = mk(f.a, "greedy", 0);
    *(uint64_t *)add(f.a, g, f.ids.greedy) = 5;
    kr_buf_t buf;
    kr_buf_init(&buf);
    pack_ok(f.a, &g, 1, &buf);
    kr_status_t st = expect_refused(&f, buf.data, buf.len, "unread behavior bytes");
    cr_assert_eq(st, KR_ERR_CORRUPT);
    kr_buf_fini(&buf);
    fixture_fini(&f);
}

Test(pack, crafted_bad_references_are_refused)
{
    fixture_t f;
    fixture_init(&f, 17);
    uint8_t *d = malloc(f.buf.len);
    cr_assert_not_null(d);
    /* Data-component entity fields: find R's link by its mark. */
    uint32_t mark = LINK_MARK_R;
    size_t at = find_bytes(f.buf.data, f.buf.len, &mark, sizeof mark);
    cr_assert_neq(at, SIZE_MAX);
    size_t link_at = at - offsetof(link_t, mark);
    const size_t fields[] = { offsetof(link_t, inside), offsetof(link_t, outside), offsetof(link_t, arr) + 8 };
    const uint64_t bad[] = { 8, 1000, UINT64_MAX, 1ull << 32 };
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 4; k++) {
            memcpy(d, f.buf.data, f.buf.len);
            put_le64(d + link_at + fields[i], bad[k]);
            expect_refused(&f, d, f.buf.len, "entity field out of range");
            cr_assert_eq(kr_last_status(), KR_ERR_CORRUPT);
        }
    /* The same field with an in-range reference is accepted: the pack holds
     * 7 entities, and reference 7 names the last of them. */
    memcpy(d, f.buf.data, f.buf.len);
    put_le64(d + link_at + offsetof(link_t, outside), 7);
    kr_entity_t root = 0;
    unpack_ok(f.b, d, f.buf.len, &(kr_unpack_desc_t){ .roots = &root, .roots_capacity = 1 }, NULL, NULL);
    const link_t *l = get(f.b, root, f.ids.link);
    cr_assert_neq(l->outside, KR_ENTITY_INVALID);
    cr_assert(kr_entity_alive(f.b, l->outside));
    cr_assert_eq(kr_entity_destroy(f.b, root), KR_OK);

    /* kr_ser_entity references: the u64 right after the root's label. */
    at = find_bytes(f.buf.data, f.buf.len, "root label", 10);
    cr_assert_neq(at, SIZE_MAX);
    for (size_t k = 0; k < 4; k++) {
        memcpy(d, f.buf.data, f.buf.len);
        put_le64(d + at + 10, bad[k]);
        expect_refused(&f, d, f.buf.len, "serialized entity reference out of range");
    }
    /* A string length that runs past the behavior's bytes (kr_ser_string
     * writes a u64 length before the characters). */
    memcpy(d, f.buf.data, f.buf.len);
    put_le64(d + at - 8, UINT64_MAX);
    expect_refused(&f, d, f.buf.len, "string length");
    memcpy(d, f.buf.data, f.buf.len);
    put_le64(d + at - 8, 200);
    expect_refused(&f, d, f.buf.len, "string length past the state");
    /* A NUL inside a name. */
    at = find_bytes(f.buf.data, f.buf.len, "grandchild-31", 13);
    cr_assert_neq(at, SIZE_MAX);
    memcpy(d, f.buf.data, f.buf.len);
    d[at + 5] = 0;
    expect_refused(&f, d, f.buf.len, "NUL in a name");
    /* A NaN position. */
    double xy[2] = { 1.5, 2.5 };
    at = find_bytes(f.buf.data, f.buf.len, xy, sizeof xy);
    cr_assert_neq(at, SIZE_MAX);
    memcpy(d, f.buf.data, f.buf.len);
    double nan_v = NAN;
    memcpy(d + at, &nan_v, sizeof nan_v);
    expect_refused(&f, d, f.buf.len, "NaN position");
    /* A position whose cell does not fit the hash. */
    memcpy(d, f.buf.data, f.buf.len);
    double huge = 1e300;
    memcpy(d + at + 8, &huge, sizeof huge);
    expect_refused(&f, d, f.buf.len, "position beyond the grid");
    free(d);
    fixture_fini(&f);
}

Test(pack, failed_save_leaves_the_buffer_as_it_was)
{
    /* A behavior whose save fails deep in the subtree: kr_pack fails with
     * the callback's status and takes back everything it appended. */
    fixture_t f;
    fixture_init(&f, 17);
    ((fragile_t *)get(f.a, f.s.G31, f.ids.fragile))->v = FRAGILE_SAVE_POISON;
    size_t len = f.buf.len;
    uint8_t *copy = malloc(len);
    cr_assert_not_null(copy);
    memcpy(copy, f.buf.data, len);
    kr_clear_error();
    kr_entity_t roots[] = { f.s.O, f.s.R };
    kr_status_t st = kr_pack(f.a, roots, 2, &f.buf);
    cr_assert_eq(st, KR_ERR_IO, "%s", kr_status_str(st));
    cr_assert_neq(kr_last_error()[0], '\0');
    cr_assert_eq(f.buf.len, len, "a failed pack left %zu bytes behind", f.buf.len - len);
    cr_assert_eq(memcmp(f.buf.data, copy, len), 0);
    /* Fixed, the same roots pack and unpack (no leftover overlap marks). */
    ((fragile_t *)get(f.a, f.s.G31, f.ids.fragile))->v = 17;
    pack_ok(f.a, roots, 2, &f.buf);
    size_t nroots = 0;
    unpack_ok(f.b, f.buf.data + len, f.buf.len - len, NULL, &nroots, NULL);
    cr_assert_eq(nroots, 2);
    cr_assert_eq(kr_world_entity_count(f.b), f.b_count + 8);
    free(copy);
    fixture_fini(&f);
}

/* ---- library bugs ------------------------------------------------------------ */

Test(pack, what_kr_pack_accepts_kr_unpack_reads)
{
    /* kr_entity_set_name takes names of any length and kr_pack writes them,
     * but kr_unpack refuses names over 1 MiB (PACK_MAX_NAME): such a pack is
     * made on the sender and can never be read on the receiver. */
    ids_t ids;
    kr_registry_t *reg = make_registry(&ids, false);
    kr_world_t *a = make_world(reg, NULL), *b = make_world(reg, NULL);
    size_t n = (1u << 20) + 1;
    char *name = malloc(n + 1);
    cr_assert_not_null(name);
    memset(name, 'n', n);
    name[n] = '\0';
    kr_entity_t e = mk(a, name, 0);
    kr_buf_t buf;
    kr_buf_init(&buf);
    kr_status_t pst = kr_pack(a, &e, 1, &buf);
    if (pst == KR_OK) {
        kr_status_t st = kr_unpack(b, buf.data, buf.len, NULL, NULL, NULL);
        /* cr_expect, so the cleanup below still runs (no leak noise). */
        cr_expect_eq(st, KR_OK, "kr_pack wrote a pack kr_unpack refuses: %s", kr_last_error());
        if (st == KR_OK) cr_expect_eq(kr_entity_find(b, name), kr_entity_make(0, 1));
    } else {
        /* Refusing at pack time is fine too, as long as it says why. */
        cr_expect_neq(kr_last_error()[0], '\0');
        cr_expect_eq(buf.len, 0);
    }
    free(name);
    kr_buf_fini(&buf);
    kr_world_destroy(a);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
}

Test(pack, on_creation_destroying_its_entity_fails_cleanly)
{
    /* Callbacks may change the world. If a behavior's on_creation destroys
     * its own (unpacked) entity, kr_unpack must fail without touching the
     * target world's other entities. */
    fixture_t f;
    fixture_init(&f, 17);
    kr_entity_t filler = kr_entity_find(f.b, "filler");
    cr_assert_neq(filler, KR_ENTITY_INVALID);
    f.lb.kill_countdown = 2; /* the second labeled entity: child-1 */
    kr_clear_error();
    kr_status_t st = kr_unpack(f.b, f.buf.data, f.buf.len, NULL, NULL, NULL);
    /* cr_expect, so the cleanup below still runs (no leak noise). */
    cr_expect(kr_entity_alive(f.b, filler), "unpack destroyed an unrelated entity of the target world");
    if (kr_entity_alive(f.b, filler)) {
        cr_expect_eq(kr_entity_parent(f.b, filler), KR_ENTITY_INVALID, "unpack re-linked an unrelated entity");
        cr_expect_eq(kr_entity_child_count(f.b, filler), 0);
    }
    cr_expect_neq(st, KR_OK, "a pack whose entity vanished was reported as unpacked");
    cr_expect_neq(kr_last_error()[0], '\0');
    cr_expect_eq(kr_world_entity_count(f.b), f.b_count, "%zu entities, want %zu",
                 kr_world_entity_count(f.b), f.b_count);
    fixture_fini(&f);
}
