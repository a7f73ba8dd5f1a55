/* World images (ecs/image.h), checkpoint/restart's core: a world with a
 * rich history (a free list, archetypes made in some order, rows moved by
 * adds and removes, sparse pools, reordered siblings, duplicate names,
 * spatial entities moved between grid cells and hashed cells, channels and
 * resources holding children, behaviors with and without serialize) is
 * saved and loaded into a fresh world registered in the same and in another
 * order; both must then give identical answers to the same further
 * operations (new ids, view orders, spatial query orders, name lookups,
 * children orders, channel sends). Also: a second round trip gives the same
 * bytes, on_awake/on_start run for started entities, every truncation and
 * every flipped byte of an image is refused or accepted without harm, and
 * the size and speed of a million-agent image. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "kairos/kairos.h"
#include "ecs/image.h"
#include "ecs/world_private.h"

/* ---- components ------------------------------------------------------------ */

typedef struct pos { double x, y; } pos_t;
typedef struct vel { float vx, vy; } vel_t;
typedef struct ref { kr_entity_t target; uint32_t n, pad; } ref_t;
typedef struct mark { uint32_t v; } mark_t;

/* Counts callbacks, through the world's owner pointer. */
typedef struct counts { int awake, start, destroy; } counts_t;

static void count_awake(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self; (void)state;
    counts_t *c = kr_world_owner(w);
    if (c) c->awake++;
}

static void count_start(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self; (void)state;
    counts_t *c = kr_world_owner(w);
    if (c) c->start++;
}

/* With serialize: owns a string, holds an entity reference. */
typedef struct labeled { char *label; kr_entity_t buddy; int64_t counter; } labeled_t;

static void labeled_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self;
    labeled_t *l = state;
    free(l->label);
    l->label = NULL;
    counts_t *c = kr_world_owner(w);
    if (c) c->destroy++;
}

static kr_status_t labeled_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    (void)w; (void)self;
    labeled_t *l = state;
    kr_ser_string(s, &l->label);
    kr_ser_entity(s, &l->buddy);
    kr_ser_i64(s, &l->counter);
    return kr_serializer_status(s);
}

static const kr_behavior_vtbl_t labeled_vtbl = {
    .on_destroy = labeled_destroy, .on_awake = count_awake, .on_start = count_start,
    .serialize = labeled_serialize,
};

/* Without serialize: raw state. */
typedef struct plain { int32_t a, b; } plain_t;
static const kr_behavior_vtbl_t plain_vtbl = { .on_awake = count_awake, .on_start = count_start };

static const kr_field_t ref_fields[] = { KR_FIELD(ref_t, target, KR_FIELD_ENTITY), KR_FIELD(ref_t, n, KR_FIELD_U32) };

/* Registers in order (reverse: the other way round). */
static void register_all(kr_registry_t *reg, bool reverse)
{
    for (int k = 0; k < 8; k++) {
        int i = reverse ? 7 - k : k;
        kr_component_t c = 0;
        switch (i) {
        case 0: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "pos", .size = sizeof(pos_t) }); break;
        case 1: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "vel", .size = sizeof(vel_t) }); break;
        case 2: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "tag", .size = 0 }); break;
        case 3: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "ref", .size = sizeof(ref_t),
                                                                        .fields = ref_fields, .field_count = 2 }); break;
        case 4: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "mark", .size = sizeof(mark_t),
                                                                        .storage = KR_STORAGE_SPARSE }); break;
        case 5: c = kr_component_register(reg, &(kr_component_desc_t){ .name = "flag", .size = 0,
                                                                        .storage = KR_STORAGE_SPARSE }); break;
        case 6: c = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "labeled", .state_size = sizeof(labeled_t),
                                                                     .vtbl = &labeled_vtbl }); break;
        case 7: c = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "plain", .state_size = sizeof(plain_t),
                                                                     .vtbl = &plain_vtbl }); break;
        }
        cr_assert(c, "register %d: %s", i, kr_last_error());
    }
}

typedef struct ids { kr_component_t pos, vel, tag, ref, mark, flag, labeled, plain; } ids_t;

static ids_t lookup(kr_world_t *w)
{
    kr_registry_t *reg = kr_world_registry(w);
    return (ids_t){ kr_component_lookup(reg, "pos"), kr_component_lookup(reg, "vel"), kr_component_lookup(reg, "tag"),
                    kr_component_lookup(reg, "ref"), kr_component_lookup(reg, "mark"), kr_component_lookup(reg, "flag"),
                    kr_component_lookup(reg, "labeled"), kr_component_lookup(reg, "plain") };
}

static kr_world_t *make_world(bool reverse, counts_t *counts)
{
    kr_registry_t *reg = kr_registry_create();
    register_all(reg, reverse);
    /* A world image carries its own grid: the desc's is replaced on load. */
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .owner = counts, .spatial_cell_size = 4 });
    cr_assert(w);
    return w;
}

static void free_world(kr_world_t *w)
{
    kr_registry_t *reg = kr_world_registry(w);
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

/* ---- the rich world ------------------------------------------------------- */

typedef struct rich {
    kr_entity_t e[48];
    kr_entity_t parent, res_a, res_b, out_a, in_b;
} rich_t;

static void build_rich(kr_world_t *w, rich_t *r)
{
    /* A world built with a grid, so the image must carry it. */
    cr_assert_eq(kr_spatial_set_bounds(w, (double[]){ 0, 0, 11.5, 11.5 }), KR_OK);
    ids_t c = lookup(w);
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 48; i++) {
        kr_component_t set[3];
        size_t n = 0;
        if (i % 3 == 0) set[n++] = c.pos;
        if (i % 4 == 1) set[n++] = c.vel;
        if (i % 7 == 2) set[n++] = c.tag;
        if (i % 5 == 3) set[n++] = c.ref;
        r->e[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = set, .component_count = n });
        cr_assert(r->e[i]);
        pos_t *p = kr_component_get(w, r->e[i], c.pos);
        if (p) *p = (pos_t){ i * 1.5, -i * 0.25 };
        ref_t *rf = kr_component_get(w, r->e[i], c.ref);
        if (rf) *rf = (ref_t){ r->e[(i * 7) % 48 < i ? (i * 7) % 48 : 0], (uint32_t)i, 0 };
    }
    /* A free list in a nontrivial order, generations above 1. */
    int dead[] = { 5, 17, 3, 30, 41, 11 };
    for (size_t k = 0; k < sizeof dead / sizeof *dead; k++) cr_assert_eq(kr_entity_destroy(w, r->e[dead[k]]), KR_OK);
    r->e[5] = kr_entity_create(w);                 /* reuses slot 11 */
    r->e[17] = kr_entity_create(w);                /* reuses slot 41 */
    cr_assert_eq(kr_entity_destroy(w, r->e[5]), KR_OK);
    r->e[5] = r->e[3] = r->e[30] = r->e[11] = r->e[41] = 0;
    /* Rows moved by adds and removes (swap-removes reorder tables). */
    for (int i = 0; i < 48; i += 5)
        if (r->e[i] && !kr_component_has(w, r->e[i], c.vel)) cr_assert(kr_component_add(w, r->e[i], c.vel));
    for (int i = 0; i < 48; i += 6)
        if (r->e[i] && kr_component_has(w, r->e[i], c.pos)) cr_assert_eq(kr_component_remove(w, r->e[i], c.pos), KR_OK);
    /* Sparse pools, with a removal that swaps the dense order. */
    for (int i = 47; i >= 0; i -= 3)
        if (r->e[i]) {
            mark_t *m = kr_component_add(w, r->e[i], c.mark);
            cr_assert(m);
            m->v = (uint32_t)(1000 + i);
        }
    cr_assert_eq(kr_component_remove(w, r->e[44], c.mark), KR_OK);
    for (int i = 1; i < 48; i += 8)
        if (r->e[i]) cr_assert(kr_component_add(w, r->e[i], c.flag));
    /* A tree with reordered siblings and a grandchild. */
    r->parent = r->e[20];
    for (int i = 21; i < 26; i++) cr_assert_eq(kr_entity_set_parent(w, r->e[i], r->parent), KR_OK);
    cr_assert_eq(kr_entity_insert_before(w, r->e[25], r->parent, r->e[22]), KR_OK);
    cr_assert_eq(kr_entity_insert_before(w, r->e[21], r->parent, r->e[24]), KR_OK);
    cr_assert_eq(kr_entity_set_parent(w, r->e[26], r->e[23]), KR_OK);
    /* Names: a chain of three holders (one renamed away), and others. */
    cr_assert_eq(kr_entity_set_name(w, r->e[7], "alpha"), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, r->e[2], "alpha"), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, r->e[9], "alpha"), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, r->e[13], "alpha"), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, r->e[7], "beta"), KR_OK);
    cr_assert_eq(kr_entity_set_name(w, r->e[33], "gamma"), KR_OK);
    /* Spatial: grid cells, hashed cells beyond it, moves, removals (free cells). */
    for (int i = 0; i < 48; i++) {
        if (!r->e[i] || i % 2) continue;
        double x = (i * 37 % 23) - 3.5, y = (i * 11 % 19) - 1.25;
        cr_assert_eq(kr_spatial_insert(w, r->e[i], x, y), KR_OK, "%s", kr_last_error());
    }
    cr_assert_eq(kr_spatial_move(w, r->e[0], 100.5, 100.5), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[2], 1.0, 1.0), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[4], -40.0, 3.0), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[6], -40.5, 3.5), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[0], 2.0, 2.0), KR_OK);
    cr_assert_eq(kr_spatial_remove(w, r->e[8]), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[4], 5.0, 5.0), KR_OK);
    cr_assert_eq(kr_spatial_move(w, r->e[6], 7.0, -30.0), KR_OK);
    /* Channels: two resources, a connected open pair, children queued. */
    r->res_a = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "res_a" });
    r->res_b = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "res_b" });
    cr_assert_eq(kr_resource_add(w, r->res_a), KR_OK);
    cr_assert_eq(kr_resource_add(w, r->res_b), KR_OK);
    r->out_a = kr_entity_create(w);
    r->in_b = kr_entity_create(w);
    cr_assert_eq(kr_channel_add(w, r->out_a, KR_CHANNEL_OUTPUT, r->res_a), KR_OK);
    cr_assert_eq(kr_channel_add(w, r->in_b, KR_CHANNEL_INPUT, r->res_b), KR_OK);
    cr_assert_eq(kr_channel_connect(w, r->out_a, r->in_b), KR_OK);
    cr_assert_eq(kr_channel_open(w, r->out_a), KR_OK);
    cr_assert_eq(kr_channel_open(w, r->in_b), KR_OK);
    for (int i = 0; i < 5; i++)
        cr_assert(kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = r->res_a }));
    cr_assert(kr_channel_send(w, r->out_a, kr_entity_first_child(w, r->res_a) == r->out_a
                                               ? kr_entity_next_sibling(w, r->out_a)
                                               : kr_entity_first_child(w, r->res_a)));
    /* Behaviors: started ones, then one more added after the start. */
    for (int i = 12; i < 16; i++) {
        labeled_t *l = kr_component_add(w, r->e[i], c.labeled);
        cr_assert(l);
        char buf[32];
        snprintf(buf, sizeof buf, "label-%d", i);
        l->label = strdup(buf);
        l->buddy = r->e[i + 10];
        l->counter = i * 1000003LL;
    }
    plain_t *pl = kr_component_add(w, r->e[18], c.plain);
    pl->a = 7;
    pl->b = -9;
    cr_assert(kr_component_add(w, r->e[19], c.plain));
    cr_assert_eq(kr_world_start(w), KR_OK);
    labeled_t *late = kr_component_add(w, r->e[27], c.labeled);
    late->label = strdup("late");
    late->buddy = r->e[12];
    /* Leave a free list for the future to reuse, in a nontrivial order. */
    int last[] = { 40, 35, 46, 37, 39 };
    for (size_t k = 0; k < sizeof last / sizeof *last; k++) cr_assert_eq(kr_entity_destroy(w, r->e[last[k]]), KR_OK);
}

/* ---- internals: what the image must restore, even where no public call shows it */

static const char *cname(const kr_world_t *w, kr_component_t c) { return kr_component_info(w->registry, c)->name; }

static bool table_has(const kr_world_t *w, const kr__table_t *t, const char *name)
{
    for (uint32_t i = 0; i < t->type_count; i++)
        if (!strcmp(cname(w, t->types[i]), name)) return true;
    return false;
}

static void same_internals(const kr_world_t *a, const kr_world_t *b)
{
    const uint32_t seen = KR__REC_ALIVE | KR__REC_STARTED | KR__REC_NAMED | KR__REC_SPATIAL;
    cr_assert_eq(a->record_count, b->record_count);
    cr_assert_eq(a->live, b->live);
    for (uint32_t i = 0; i < a->record_count; i++) {
        const kr__record_t *x = &a->records[i], *y = &b->records[i];
        cr_assert_eq(x->generation, y->generation, "record %u", i);
        cr_assert_eq(x->flags & seen, y->flags & seen, "record %u", i);
        if (!(x->flags & KR__REC_ALIVE)) continue;
        cr_assert(x->table == y->table && x->row == y->row, "record %u", i);
        for (size_t f = 0; f < sizeof(kr__tree_t); f += 4)
            cr_assert_eq(kr__tree_field(a, i, f), kr__tree_field(b, i, f), "tree link %zu of %u", f, i);
        if (x->flags & KR__REC_NAMED) {
            cr_assert_str_eq(a->names[i].str, b->names[i].str);
            cr_assert(a->names[i].prev == b->names[i].prev && a->names[i].next == b->names[i].next);
        }
    }
    uint32_t fa = a->free_head, fb = b->free_head;
    for (; fa != KR__NONE; fa = a->records[fa].row, fb = b->records[fb].row) cr_assert_eq(fa, fb);
    cr_assert_eq(fb, KR__NONE);
    cr_assert_eq(a->table_count, b->table_count);
    for (uint32_t t = 0; t < a->table_count; t++) {
        const kr__table_t *x = a->tables[t], *y = b->tables[t];
        cr_assert(x->type_count == y->type_count && x->count == y->count, "table %u", t);
        for (uint32_t i = 0; i < x->type_count; i++) cr_assert(table_has(b, y, cname(a, x->types[i])));
        cr_assert(!x->count || memcmp(x->entities, y->entities, x->count * sizeof *x->entities) == 0, "rows of table %u", t);
    }
    cr_assert_eq(a->pool_count, b->pool_count);
    for (uint32_t i = 0; i < a->pool_count; i++) {
        const kr__sparse_pool_t *x = a->pools[a->pool_ids[i]], *y = b->pools[b->pool_ids[i]];
        cr_assert_str_eq(cname(a, a->pool_ids[i]), cname(b, b->pool_ids[i]));
        cr_assert_eq(x->count, y->count);
        cr_assert(!x->count || memcmp(x->entities, y->entities, x->count * sizeof *x->entities) == 0, "pool %u order", i);
        if (x->size && x->count) cr_assert(memcmp(x->data, y->data, (size_t)x->count * x->size) == 0);
    }
    const kr__spatial_state_t *s = &a->spatial, *t = &b->spatial;
    cr_assert(s->cell_size == t->cell_size && s->gx0 == t->gx0 && s->gy0 == t->gy0 && s->gw == t->gw && s->gh == t->gh);
    cr_assert(s->grid_cells == t->grid_cells && s->live_cells == t->live_cells && s->members == t->members);
    /* The same occupied cells with the same members in the same order;
     * where a cell sits in the table is not part of the state. */
    uint32_t occupied_a = 0, occupied_b = 0;
    for (uint32_t c = 0; c < t->grid_cells + t->table_capacity; c++) occupied_b += kr__cell_at(t, c)->count != 0;
    for (uint32_t c = 0; c < s->grid_cells + s->table_capacity; c++) {
        const kr__spatial_cell_rec_t *x = kr__cell_at(s, c);
        if (!x->count) continue;
        occupied_a++;
        uint32_t d = kr__spatial_find(t, x->cx, x->cy);
        cr_assert_neq(d, KR__NONE, "cell (%d, %d) is missing", x->cx, x->cy);
        cr_assert(c >= s->grid_cells || c == d, "grid cell %u", c);
        const kr__spatial_cell_rec_t *y = kr__cell_at(t, d);
        cr_assert(x->cx == y->cx && x->cy == y->cy && x->count == y->count, "cell %u", c);
        cr_assert(memcmp(kr__cell_members(x), kr__cell_members(y), x->count * sizeof(kr_entity_t)) == 0, "cell %u order", c);
        for (uint32_t k = 0; k < x->count; k++) {
            uint32_t i = kr_entity_index(kr__cell_members(x)[k]);
            const kr__spatial_entry_t *ex = &s->entries[i], *ey = &t->entries[i];
            cr_assert(ex->x == ey->x && ex->y == ey->y && ex->cx == ey->cx && ex->cy == ey->cy && ex->slot == ey->slot,
                      "entry of cell %u slot %u", c, k);
            cr_assert(ex->cell == c && ey->cell == d && ex->slot == k, "entry of cell %u slot %u points elsewhere", c, k);
            cr_assert(s->gens[i] == t->gens[i] && s->gens[i] == kr_entity_generation(kr__cell_members(x)[k]));
        }
    }
    cr_assert_eq(occupied_a, occupied_b);
}

/* ---- the same future in both worlds -------------------------------------- */

typedef struct trace { uint64_t v[4096]; size_t n; } trace_t;

static void note(trace_t *t, uint64_t v)
{
    cr_assert_lt(t->n, sizeof t->v / sizeof *t->v);
    t->v[t->n++] = v;
}

static void note_view(kr_world_t *w, trace_t *t, kr_component_t a, kr_component_t b)
{
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w, &(kr_view_desc_t){ .include = { a, b } }), KR_OK);
    while (kr_view_next(&v)) note(t, kr_view_entity(&v));
    note(t, 0xffff);
    kr_view_fini(&v);
}

static void note_queries(kr_world_t *w, trace_t *t)
{
    kr_entity_t out[64];
    size_t n = kr_spatial_query_box(w, -50, -50, 200, 200, out, 64);
    for (size_t i = 0; i < n && i < 64; i++) note(t, out[i]);
    n = kr_spatial_query_radius(w, 4, 4, 6, out, 64);
    for (size_t i = 0; i < n && i < 64; i++) note(t, out[i]);
    note(t, kr_spatial_cell_count(w));
}

static void note_children(kr_world_t *w, trace_t *t, kr_entity_t p)
{
    for (kr_entity_t c = kr_entity_first_child(w, p); c; c = kr_entity_next_sibling(w, c)) note(t, c);
    note(t, 0xc0de);
}

static uint64_t label_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    if (!s) return 0;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

/* Operations a model could run after the restart; everything observable goes to t. */
static void future(kr_world_t *w, trace_t *t)
{
    ids_t c = lookup(w);
    note(t, kr_world_digest(w));
    note_view(w, t, c.pos, 0);
    note_view(w, t, c.vel, c.pos);
    note_view(w, t, c.mark, 0);
    note_view(w, t, c.labeled, 0);
    note_queries(w, t);
    kr_entity_t alpha = kr_entity_find(w, "alpha");
    note(t, alpha);
    kr_entity_t parent = kr_entity_parent(w, kr_entity_find(w, "gamma"));
    (void)parent;
    kr_entity_t res_a = kr_entity_find(w, "res_a"), res_b = kr_entity_find(w, "res_b");
    note_children(w, t, res_a);
    note_children(w, t, res_b);
    kr_entity_t outs[4];
    cr_assert_eq(kr_resource_outputs(w, res_a, outs, 4), 1);
    /* New entities take the free list's slots in its order. */
    kr_entity_t made[12];
    for (int i = 0; i < 12; i++) {
        made[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = (kr_component_t[]){ c.pos }, .component_count = i % 2 });
        note(t, made[i]);
    }
    /* Destroying the oldest alpha: the next one takes the name. */
    cr_assert_eq(kr_entity_destroy(w, alpha), KR_OK);
    note(t, kr_entity_find(w, "alpha"));
    cr_assert_eq(kr_entity_set_name(w, made[0], "alpha"), KR_OK);
    kr_entity_destroy(w, kr_entity_find(w, "alpha"));
    note(t, kr_entity_find(w, "alpha"));
    /* Rows: a removal swaps the last row in. */
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { c.pos } });
    kr_entity_t first = kr_view_next(&v) ? kr_view_entity(&v) : 0;
    kr_view_fini(&v);
    cr_assert(first);
    cr_assert_eq(kr_component_remove(w, first, c.pos), KR_OK);
    note_view(w, t, c.pos, 0);
    /* Sparse: removal reorders the pool. */
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { c.mark } });
    first = kr_view_next(&v) ? kr_view_entity(&v) : 0;
    kr_view_fini(&v);
    cr_assert_eq(kr_component_remove(w, first, c.mark), KR_OK);
    note_view(w, t, c.mark, 0);
    /* Spatial: moves into and out of cells, new members. */
    kr_entity_t sp[64];
    size_t n = kr_spatial_query_box(w, -100, -100, 200, 200, sp, 64);
    for (size_t i = 0; i < n && i < 64; i += 3) kr_spatial_move(w, sp[i], (double)(i % 9) - 2, (double)(i % 5) + 60);
    for (int i = 1; i < 12; i += 2) kr_spatial_insert(w, made[i], i * 0.75, -i * 1.5);
    note_queries(w, t);
    /* Tree: more children, reordering. */
    kr_entity_t kid = kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = res_b });
    note(t, kid);
    note_children(w, t, res_b);
    /* Channels: a send moves a queued child to the other resource. */
    kr_entity_t item = kr_entity_last_child(w, res_a);
    note(t, item);
    note(t, kr_channel_send(w, outs[0], item));
    note_children(w, t, res_a);
    note_children(w, t, res_b);
    /* Behaviors: the restored states. */
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { c.labeled } });
    while (kr_view_next(&v)) {
        labeled_t *l = kr_view_get(&v, 0);
        note(t, label_hash(l->label));
        note(t, l->buddy);
        note(t, (uint64_t)l->counter);
    }
    kr_view_fini(&v);
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { c.plain } });
    while (kr_view_next(&v)) {
        plain_t *p = kr_view_get(&v, 0);
        note(t, (uint64_t)(uint32_t)p->a << 32 | (uint32_t)p->b);
    }
    kr_view_fini(&v);
    note(t, kr_world_digest(w));
    note(t, kr_world_entity_count(w));
}

/* ---- tests ---------------------------------------------------------------- */

static void save(kr_world_t *w, kr_buf_t *b)
{
    kr_buf_init(b);
    cr_assert_eq(kr__world_image_save(w, b), KR_OK, "save: %s", kr_last_error());
}

static int started_behaviors(kr_world_t *w)
{
    (void)w;
    return 4 /* labeled 12..15 */ + 2 /* plain 18, 19 */;
}

static void round_trip(bool reverse)
{
    counts_t ca = { 0 }, cb = { 0 };
    kr_world_t *a = make_world(false, &ca);
    rich_t r;
    build_rich(a, &r);
    /* The history reached what it should: hashed cells beyond the grid, a
     * free cell record, shared cells, a free list, two sparse pools. */
    uint32_t occupied = 0;
    for (uint32_t c = 0; c < a->spatial.table_capacity; c++) occupied += a->spatial.table[c].count != 0;
    cr_assert_gt(occupied, 0);
    cr_assert_gt(a->spatial.table_used, occupied, "an emptied cell waits in the table");
    cr_assert_lt(a->spatial.live_cells, a->spatial.members);
    cr_assert_neq(a->free_head, KR__NONE);
    cr_assert_eq(a->pool_count, 2);
    kr_buf_t img;
    save(a, &img);
    kr_world_t *b = make_world(reverse, &cb);
    /* b has a past of its own, which the load throws away (with callbacks). */
    ids_t cbids = lookup(b);
    for (int i = 0; i < 30; i++) kr_entity_create(b);
    labeled_t *l = kr_component_add(b, kr_entity_create(b), cbids.labeled);
    l->label = strdup("doomed");
    cr_assert_eq(kr__world_image_load(b, img.data, img.len), KR_OK, "load: %s", kr_last_error());
    cr_assert_eq(cb.destroy, 1, "b's own behavior got on_destroy");
    cr_assert_eq(cb.awake, started_behaviors(b));
    cr_assert_eq(cb.start, started_behaviors(b));
    cr_assert_eq(kr_world_digest(a), kr_world_digest(b));
    cr_assert_eq(kr_world_entity_count(a), kr_world_entity_count(b));
    cr_assert_eq(kr_spatial_grid_cells(a), kr_spatial_grid_cells(b));
    same_internals(a, b);
    static trace_t ta, tb;
    ta.n = tb.n = 0;
    future(a, &ta);
    future(b, &tb);
    cr_assert_eq(ta.n, tb.n);
    for (size_t i = 0; i < ta.n; i++) cr_assert_eq(ta.v[i], tb.v[i], "trace entry %zu differs", i);
    same_internals(a, b);
    kr_buf_fini(&img);
    free_world(a);
    free_world(b);
}

Test(world_image, same_future_same_registration) { round_trip(false); }
Test(world_image, same_future_other_registration) { round_trip(true); }

/* Loads `in` into w and saves w again into out (initialized here). */
static void reload(kr_world_t *w, const kr_buf_t *in, kr_buf_t *out)
{
    cr_assert_eq(kr__world_image_load(w, in->data, in->len), KR_OK, "%s", kr_last_error());
    save(w, out);
}

static void same_bytes(const kr_buf_t *x, const kr_buf_t *y)
{
    cr_assert_eq(x->len, y->len);
    cr_assert(memcmp(x->data, y->data, x->len) == 0);
}

Test(world_image, second_round_trip_same_bytes)
{
    kr_world_t *a = make_world(false, NULL), *b = make_world(false, NULL), *c = make_world(true, NULL),
               *d = make_world(false, NULL);
    rich_t r;
    build_rich(a, &r);
    kr_buf_t ia, ib, ic, id, id2;
    save(a, &ia);
    reload(b, &ia, &ib);
    same_bytes(&ia, &ib);
    /* Through a world registered the other way round and back. */
    reload(c, &ia, &ic);
    reload(d, &ic, &id);
    same_bytes(&ia, &id);
    /* Loading into a world that already holds that very state. */
    reload(d, &ia, &id2);
    same_bytes(&ia, &id2);
    kr_buf_t *bufs[] = { &ia, &ib, &ic, &id, &id2 };
    for (int i = 0; i < 5; i++) kr_buf_fini(bufs[i]);
    free_world(a);
    free_world(b);
    free_world(c);
    free_world(d);
}

Test(world_image, empty_world)
{
    kr_world_t *a = make_world(false, NULL), *b = make_world(false, NULL);
    kr_buf_t ia, ib;
    save(a, &ia);
    for (int i = 0; i < 3; i++) kr_entity_create(b);
    cr_assert_eq(kr__world_image_load(b, ia.data, ia.len), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_world_entity_count(b), 0);
    save(b, &ib);
    cr_assert(ia.len == ib.len && memcmp(ia.data, ib.data, ia.len) == 0);
    cr_assert_eq(kr_entity_index(kr_entity_create(b)), 0);
    kr_buf_fini(&ia);
    kr_buf_fini(&ib);
    free_world(a);
    free_world(b);
}

Test(world_image, awake_and_start_only_for_started)
{
    counts_t ca = { 0 }, cb = { 0 };
    kr_world_t *a = make_world(false, &ca), *b = make_world(false, &cb);
    ids_t c = lookup(a);
    kr_entity_t s1 = kr_entity_create(a), s2 = kr_entity_create(a);
    kr_component_add(a, s1, c.plain);
    kr_component_add(a, s2, c.labeled);
    cr_assert_eq(kr_world_start(a), KR_OK);
    kr_entity_t late = kr_entity_create(a);
    kr_component_add(a, late, c.plain);
    kr_buf_t img;
    save(a, &img);
    cr_assert_eq(kr__world_image_load(b, img.data, img.len), KR_OK, "%s", kr_last_error());
    cr_assert_eq(cb.awake, 2);
    cr_assert_eq(cb.start, 2);
    /* The late one starts at the next kr_world_start, as it would have. */
    cr_assert_eq(kr_world_start(b), KR_OK);
    cr_assert_eq(cb.awake, 3);
    cr_assert_eq(cb.start, 3);
    kr_buf_fini(&img);
    free_world(a);
    free_world(b);
}

Test(world_image, refusals)
{
    kr_world_t *a = make_world(false, NULL);
    rich_t r;
    build_rich(a, &r);
    kr_buf_t img;
    save(a, &img);
    /* A world that lacks a component the image names. */
    kr_registry_t *reg = kr_registry_create();
    kr_component_register(reg, &(kr_component_desc_t){ .name = "pos", .size = sizeof(pos_t) });
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    cr_assert_eq(kr__world_image_load(w, img.data, img.len), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "unknown component"), "%s", kr_last_error());
    cr_assert_eq(kr_world_entity_count(w), 0);
    free_world(w);
    /* A size that differs from the registry. */
    reg = kr_registry_create();
    register_all(reg, false);
    kr_component_register(reg, &(kr_component_desc_t){ .name = "zzz", .size = 4 });
    w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    kr_buf_t bad;
    kr_buf_init(&bad);
    kr_buf_append(&bad, img.data, img.len);
    /* The first component's size field follows its name: "flag" sorts
     * nowhere in particular, so find "pos" and patch the u32 after it. */
    uint8_t *at = NULL;
    for (size_t i = 0; i + 3 <= bad.len && !at; i++)
        if (memcmp(bad.data + i, "pos", 3) == 0) at = bad.data + i;
    cr_assert(at);
    at[3] ^= 8;
    cr_assert_eq(kr__world_image_load(w, bad.data, bad.len), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "'pos' has"), "%s", kr_last_error());
    /* Bad magic, bad version, trailing bytes. */
    memcpy(bad.data, img.data, img.len);
    bad.data[0] ^= 1;
    cr_assert_eq(kr__world_image_load(w, bad.data, bad.len), KR_ERR_CORRUPT);
    memcpy(bad.data, img.data, img.len);
    bad.data[4] = 99;
    cr_assert_eq(kr__world_image_load(w, bad.data, bad.len), KR_ERR_MISMATCH);
    memcpy(bad.data, img.data, img.len);
    kr_buf_put_u8(&bad, 0);
    cr_assert_eq(kr__world_image_load(w, bad.data, bad.len), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "trailing"), "%s", kr_last_error());
    cr_assert_eq(kr_world_entity_count(w), 0);
    cr_assert(kr_entity_create(w));
    kr_buf_fini(&bad);
    kr_buf_fini(&img);
    free_world(w);
    free_world(a);
}

Test(world_image, refused_during_a_pass)
{
    kr_world_t *a = make_world(false, NULL);
    ids_t c = lookup(a);
    for (int i = 0; i < 4; i++) kr_component_add(a, kr_entity_create(a), c.pos);
    kr_buf_t img;
    save(a, &img);
    kr_buf_t during;
    kr_buf_init(&during);
    kr_view_t v;
    kr_view_init(&v, a, &(kr_view_desc_t){ .include = { c.pos } });
    cr_assert(kr_view_next(&v));
    kr_entity_destroy(a, kr_view_entity(&v)); /* leaves a hole until the pass ends */
    cr_assert_eq(kr__world_image_save(a, &during), KR_ERR_STATE);
    cr_assert_eq(during.len, 0);
    cr_assert_eq(kr__world_image_load(a, img.data, img.len), KR_ERR_STATE);
    kr_view_fini(&v);
    cr_assert_eq(kr_world_entity_count(a), 3);
    cr_assert_eq(kr__world_image_save(a, &during), KR_OK);
    kr_buf_fini(&during);
    kr_buf_fini(&img);
    free_world(a);
}

/* After any load, successful or not, the world must work and be destroyable. */
static void exercise(kr_world_t *w)
{
    ids_t c = lookup(w);
    (void)kr_world_digest(w);
    kr_entity_t e = kr_entity_create(w);
    cr_assert(e, "%s", kr_last_error());
    cr_assert(kr_component_add(w, e, c.pos));
    kr_spatial_insert(w, e, 1, 1);
    kr_entity_t out[8];
    kr_spatial_query_radius(w, 1, 1, 3, out, 8);
    kr_world_start(w);
    kr_world_update(w);
}

static void damage(void (*change)(kr_buf_t *, const kr_buf_t *, size_t), bool all_positions)
{
    kr_world_t *a = make_world(false, NULL);
    rich_t r;
    build_rich(a, &r);
    kr_buf_t img, bad;
    save(a, &img);
    kr_buf_init(&bad);
    size_t refused = 0, accepted = 0;
    kr_world_t *w = make_world(false, NULL);
    for (size_t i = 0; i < img.len; i += all_positions ? 1 : 7) {
        kr_buf_clear(&bad);
        change(&bad, &img, i);
        kr_status_t st = kr__world_image_load(w, bad.data, bad.len);
        if (st) {
            refused++;
            cr_assert_eq(kr_world_entity_count(w), 0, "a refused image left entities (byte %zu)", i);
            cr_assert(*kr_last_error());
        } else {
            accepted++;
        }
        exercise(w);
    }
    cr_log_info("world image damage: %zu refused, %zu accepted of %zu bytes", refused, accepted, img.len);
    cr_assert_gt(refused, 0);
    kr_buf_fini(&bad);
    kr_buf_fini(&img);
    free_world(w);
    free_world(a);
}

static void truncate_at(kr_buf_t *out, const kr_buf_t *img, size_t i) { kr_buf_append(out, img->data, i); }

static void flip_at(kr_buf_t *out, const kr_buf_t *img, size_t i)
{
    kr_buf_append(out, img->data, img->len);
    out->data[i] ^= 0xff;
}

static void flip_bit_at(kr_buf_t *out, const kr_buf_t *img, size_t i)
{
    kr_buf_append(out, img->data, img->len);
    out->data[i] ^= (uint8_t)(1u << (i % 8));
}

Test(world_image, every_truncation, .timeout = 300) { damage(truncate_at, true); }
Test(world_image, every_byte_flipped, .timeout = 300) { damage(flip_at, true); }
Test(world_image, bits_flipped, .timeout = 300) { damage(flip_bit_at, true); }

/* Walkers leave many emptied cells in the table; the image holds only the
 * occupied ones, in (cy, cx) order. The loaded world is the same and has
 * the same future, and its image is the same bytes though its table is laid
 * out otherwise (no emptied cells, other slots). */
Test(world_image, round_trip_with_many_emptied_cells)
{
    kr_world_t *a = make_world(false, NULL), *b = make_world(true, NULL);
    enum { N = 300 };
    kr_entity_t e[N];
    uint64_t rng = 12345;
    for (int i = 0; i < N; i++) {
        e[i] = kr_entity_create(a);
        cr_assert_eq(kr_spatial_insert(a, e[i], (i % 17) * 4.0 + 1, (i % 13) * -4.0 - 1), KR_OK);
    }
    for (int step = 0; step < 40; step++)
        for (int i = 0; i < N; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            double x, y;
            cr_assert(kr_spatial_position(a, e[i], &x, &y));
            x += (double)((rng >> 33) % 9) - 4.0;
            y += (double)((rng >> 45) % 9) - 4.0;
            cr_assert_eq(kr_spatial_move(a, e[i], x, y), KR_OK);
        }
    for (int i = 0; i < N; i += 7) cr_assert_eq(kr_entity_destroy(a, e[i]), KR_OK);
    uint32_t occupied = 0;
    for (uint32_t c = 0; c < a->spatial.table_capacity; c++) occupied += a->spatial.table[c].count != 0;
    cr_assert_gt(a->spatial.table_used, occupied + 20, "emptied cells wait in the table (%u used, %u occupied)",
                 a->spatial.table_used, occupied);
    kr_buf_t img, again;
    save(a, &img);
    cr_assert_eq(kr__world_image_load(b, img.data, img.len), KR_OK, "load: %s", kr_last_error());
    cr_assert_eq(b->spatial.table_used, occupied, "the loaded table holds occupied cells only");
    same_internals(a, b);
    save(b, &again);
    cr_assert_eq(again.len, img.len);
    cr_assert(memcmp(again.data, img.data, img.len) == 0, "the same world, the same image");
    /* The same future: moves, then the same query answers in the same order. */
    for (int step = 0; step < 5; step++)
        for (int i = 1; i < N; i += 2) {
            if (!(i % 7)) continue;
            double x, y;
            cr_assert(kr_spatial_position(a, e[i], &x, &y));
            cr_assert_eq(kr_spatial_move(a, e[i], x + 3.0, y - 5.0), KR_OK);
            cr_assert_eq(kr_spatial_move(b, e[i], x + 3.0, y - 5.0), KR_OK);
        }
    kr_entity_t qa[N], qb[N];
    size_t na = kr_spatial_query_box(a, -1e6, -1e6, 1e6, 1e6, qa, N);
    size_t nb = kr_spatial_query_box(b, -1e6, -1e6, 1e6, 1e6, qb, N);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(qa, qb, na * sizeof *qa) == 0);
    na = kr_spatial_query_radius(a, 10, -10, 30, qa, N);
    nb = kr_spatial_query_radius(b, 10, -10, 30, qb, N);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(qa, qb, na * sizeof *qa) == 0);
    same_internals(a, b);
    kr_buf_fini(&img);
    kr_buf_fini(&again);
    free_world(a);
    free_world(b);
}

/* ---- images of version 1 ------------------------------------------------------ */

/* Written by oldimg.c at 5a94dfc, whose images were version 1 (the spatial
 * hash as cell records, with a free list). The world: grid cells [0, 4]^2
 * of size 1; entities 0..7; e0 (1.5, 1.5), e1 (1.25, 1.75), e2 (1.5, 1.5),
 * e3 (10.5, 2.5), e4 (-3.5, -7.5), e5 (10.25, 2.75), e6 (20.5, 20.5)
 * inserted; then e6 moved to (-30.5, 5.5) (alone: its record went along),
 * e4 to (10.5, 2.25) (leaving cell (-4, -8) a free record), e1 to
 * (3.5, 0.5) (so cell (1, 1) holds e0, e2), and e7 destroyed. */
/* kr__world_image_save at 5a94dfc (version 1): see the test. */
static const uint8_t v1_image[428] = {
    0x4b, 0x52, 0x49, 0x4d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00,
    0x0a, 0x00, 0x00, 0x00, 0xfc, 0xff, 0xff, 0xff, 0xe1, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00,
    0xf8, 0xff, 0xff, 0xff, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
    0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x25, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x24, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x25, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3e, 0xc0, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xe0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x06, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x16, 0x40, 0x01, 0x00, 0x00, 0x00, 0x1a, 0x00, 0x00, 0x00,
};

static void assert_members(const kr_world_t *w, int32_t cx, int32_t cy, const kr_entity_t *want, size_t n)
{
    size_t count = 0;
    const kr_entity_t *in = kr_spatial_cell_entities(w, (kr_cell_t){ cx, cy }, &count);
    cr_assert_eq(count, n, "cell (%d, %d) holds %zu, want %zu", cx, cy, count, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(in[i], want[i], "cell (%d, %d) member %zu", cx, cy, i);
}

static void assert_v1_world(kr_world_t *w)
{
    kr_entity_t e[7];
    for (uint32_t i = 0; i < 7; i++) e[i] = kr_entity_make(i, 1);
    cr_assert_eq(kr_world_entity_count(w), 7);
    cr_assert(!kr_entity_alive(w, kr_entity_make(7, 1)));
    cr_assert_eq(kr_spatial_count(w), 7);
    cr_assert_eq(kr_spatial_cell_count(w), 4);
    cr_assert_eq(kr_spatial_grid_cells(w), 25);
    assert_members(w, 1, 1, (kr_entity_t[]){ e[0], e[2] }, 2);
    assert_members(w, 3, 0, (kr_entity_t[]){ e[1] }, 1);
    assert_members(w, 10, 2, (kr_entity_t[]){ e[3], e[5], e[4] }, 3);
    assert_members(w, -31, 5, (kr_entity_t[]){ e[6] }, 1);
    cr_assert_null(kr_spatial_cell_entities(w, (kr_cell_t){ -4, -8 }, NULL));
    double x, y;
    cr_assert(kr_spatial_position(w, e[4], &x, &y));
    cr_assert(x == 10.5 && y == 2.25);
    cr_assert(kr_spatial_position(w, e[6], &x, &y));
    cr_assert(x == -30.5 && y == 5.5);
    /* The entities move on as in any world. */
    cr_assert_eq(kr_spatial_move(w, e[3], 10.75, 2.5), KR_OK);
    cr_assert_eq(kr_spatial_move(w, e[6], 0.5, 0.5), KR_OK);
    cr_assert_eq(kr_spatial_cell_count(w), 4);
    kr_entity_t out[8];
    cr_assert_eq(kr_spatial_query_box(w, -100, -100, 100, 100, out, 8), 7);
    kr_entity_t order[7] = { e[6], e[1], e[0], e[2], e[3], e[5], e[4] };
    for (int i = 0; i < 7; i++) cr_assert_eq(out[i], order[i], "query result %d", i);
}

/* An image of version 1 still loads, as the same world; saved again it is
 * version 2 and loads as the same world once more. */
Test(world_image, reads_version_1)
{
    cr_assert_eq(v1_image[4], 1, "the embedded image is version 1");
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ 0 });
    cr_assert_eq(kr__world_image_load(w, v1_image, sizeof v1_image), KR_OK, "load: %s", kr_last_error());
    kr_buf_t img;
    kr_buf_init(&img);
    cr_assert_eq(kr__world_image_load(w, v1_image, sizeof v1_image), KR_OK);
    cr_assert_eq(kr__world_image_save(w, &img), KR_OK);
    cr_assert_eq(img.data[4], 2);
    kr_world_t *v = kr_world_create(&(kr_world_desc_t){ 0 });
    cr_assert_eq(kr__world_image_load(v, img.data, img.len), KR_OK, "load: %s", kr_last_error());
    assert_v1_world(w);
    assert_v1_world(v);
    /* Every truncation of the old image is refused, and leaves the world empty. */
    for (size_t n = 0; n < sizeof v1_image; n++) {
        cr_assert_neq(kr__world_image_load(v, v1_image, n), KR_OK, "a truncation to %zu bytes loaded", n);
        cr_assert_eq(kr_world_entity_count(v), 0);
    }
    /* The image ends with the free records (one: count 1, then its index);
     * a grid cell listed there instead is refused. */
    uint8_t bad[sizeof v1_image];
    memcpy(bad, v1_image, sizeof bad);
    cr_assert(bad[sizeof bad - 8] == 1 && bad[sizeof bad - 4] >= 25, "the free list is where expected");
    memset(bad + sizeof bad - 4, 0, 4);
    cr_assert_eq(kr__world_image_load(v, bad, sizeof bad), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "free spatial cell 0"), "%s", kr_last_error());
    kr_buf_fini(&img);
    kr_world_destroy(w);
    kr_world_destroy(v);
}

/* ---- size and speed -------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct cell2 { int32_t x, y; } cell2_t;
typedef struct agent { uint64_t id; } agent_t;

/* Walkers-like: a million agents, an id and a cell each, on a 1000 x 1000
 * dense grid, created in cell order and then moved one step at random. */
Test(world_image, million_agents, .timeout = 300)
{
    const uint32_t n = getenv("KR_IMAGE_AGENTS") ? (uint32_t)atoi(getenv("KR_IMAGE_AGENTS")) : 1000000u;
    const int side = 1000;
    kr_registry_t *reg = kr_registry_create();
    kr_component_t cc = kr_component_register(reg, &(kr_component_desc_t){ .name = "cell", .size = sizeof(cell2_t) });
    kr_component_t ca = kr_component_register(reg, &(kr_component_desc_t){ .name = "agent", .size = sizeof(agent_t) });
    kr_world_desc_t desc = { .registry = reg, .spatial_bounds = { 0, 0, side - 0.5, side - 0.5 }, .initial_capacity = n };
    kr_world_t *w = kr_world_create(&desc), *b = kr_world_create(&desc);
    uint64_t rng = 88172645463325252ULL;
    kr_component_t set[2] = { cc, ca };
    for (uint32_t i = 0; i < n; i++) {
        kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = set, .component_count = 2 });
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        int32_t x = (int32_t)(((uint64_t)i * side * side / n) % side), y = (int32_t)((uint64_t)i * side / n);
        *(cell2_t *)kr_component_get(w, e, cc) = (cell2_t){ x, y };
        ((agent_t *)kr_component_get(w, e, ca))->id = i + 1;
        kr_spatial_insert(w, e, x + 0.5, y + 0.5);
    }
    /* A step of walking: members leave their cells in some order. */
    kr_view_t v;
    kr_view_init(&v, w, &(kr_view_desc_t){ .include = { cc } });
    kr_view_chunk_t ch;
    while (kr_view_next_chunk(&v, &ch)) {
        cell2_t *cells = ch.columns[0];
        for (size_t i = 0; i < ch.count; i++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            int32_t nx = cells[i].x + (int32_t)(rng % 3) - 1, ny = cells[i].y + (int32_t)((rng >> 8) % 3) - 1;
            if (nx < 0 || ny < 0 || nx >= side || ny >= side) continue;
            cells[i] = (cell2_t){ nx, ny };
            kr_spatial_move(w, ch.entities[i], nx + 0.5, ny + 0.5);
        }
    }
    kr_view_fini(&v);
    kr_buf_t img;
    kr_buf_init(&img);
    double t0 = now();
    cr_assert_eq(kr__world_image_save(w, &img), KR_OK, "%s", kr_last_error());
    double t_save = now() - t0;
    size_t bound = ZSTD_compressBound(img.len);
    void *z = malloc(bound);
    t0 = now();
    size_t zlen = ZSTD_compress(z, bound, img.data, img.len, 1);
    double t_zstd = now() - t0;
    cr_assert(!ZSTD_isError(zlen));
    t0 = now();
    cr_assert_eq(kr__world_image_load(b, img.data, img.len), KR_OK, "%s", kr_last_error());
    double t_load = now() - t0;
    cr_assert_eq(kr_world_digest(w), kr_world_digest(b));
    fprintf(stderr,
            "world image, %u agents: %zu bytes (%.1f B/agent), zstd -1 %zu bytes (%.1f B/agent, %.3f s); "
            "save %.3f s, load %.3f s\n",
            n, img.len, (double)img.len / n, zlen, (double)zlen / n, t_zstd, t_save, t_load);
    cr_expect_lt((double)zlen / n, 40.0, "compressed image of %.1f bytes per agent", (double)zlen / n);
    free(z);
    kr_buf_fini(&img);
    kr_world_destroy(w);
    kr_world_destroy(b);
    kr_registry_destroy(reg);
}
