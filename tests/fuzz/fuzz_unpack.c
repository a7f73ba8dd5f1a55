/* Fuzz target: entity unpack (kr_unpack, ecs/pack.c), the decoder of the
 * entities that travel with sync-events between ranks. Any bytes must be
 * refused cleanly, with nothing created in the target world, or unpacked
 * into a consistent world: the roots it reports are alive, and they pack
 * again and unpack into a second world. Nothing may crash, leak or hang.
 *
 * The registry: data components with field metadata (doubles, integers,
 * entity references, an array of them), a tag, a behavior with a
 * serialize callback that owns a heap string (freed in on_destroy), one
 * that refuses some values on load, and one without serialize (raw state).
 * The target world already holds a few entities, one of them placed in
 * the spatial hash.
 *
 * KAIROS_FUZZ_SEEDS=DIR: writes seed packs to DIR and exits
 * (tests/fuzz/make-corpus.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

typedef struct pos {
    double x, y;
    int32_t k, pad;
} pos_t;

typedef struct link {
    kr_entity_t inside, outside;
    kr_entity_t arr[2];
    uint32_t mark, pad;
} link_t;

typedef struct labeled {
    char *label;          /* owned */
    kr_entity_t buddy;
    int64_t counter;
    double weight;
} labeled_t;

typedef struct fragile {
    uint32_t v;
} fragile_t;

typedef struct raw {
    int32_t a;
    double b;
} raw_t;

static kr_registry_t *reg;
static kr_component_t c_pos, c_link, c_tag, c_labeled, c_fragile, c_raw;

static void labeled_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w;
    (void)self;
    labeled_t *st = state;
    free(st->label);
    st->label = NULL;
}

static kr_status_t labeled_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    (void)w;
    (void)self;
    labeled_t *st = state;
    kr_ser_string(s, &st->label);
    kr_ser_entity(s, &st->buddy);
    kr_ser_i64(s, &st->counter);
    kr_ser_f64(s, &st->weight);
    return kr_serializer_status(s);
}

static void moved(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)w;
    (void)self;
    (void)state;
    (void)old_self;
}

static const kr_behavior_vtbl_t labeled_vtbl = { .on_destroy = labeled_destroy, .serialize = labeled_serialize,
                                                 .on_submodel_move = moved };

/* Refuses an odd value on load, as a callback checking its input would. */
static kr_status_t fragile_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    (void)w;
    (void)self;
    fragile_t *st = state;
    kr_status_t rc = kr_ser_u32(s, &st->v);
    if (rc) return rc;
    return kr_serializer_loading(s) && (st->v & 1) ? KR_ERR_CORRUPT : KR_OK;
}

static const kr_behavior_vtbl_t fragile_vtbl = { .serialize = fragile_serialize, .on_submodel_move = moved };
static const kr_behavior_vtbl_t raw_vtbl = { .on_submodel_move = moved };

static void make_registry(void)
{
    static const kr_field_t pos_fields[] = {
        KR_FIELD(pos_t, x, KR_FIELD_F64),
        KR_FIELD(pos_t, y, KR_FIELD_F64),
        KR_FIELD(pos_t, k, KR_FIELD_I32),
    };
    static const kr_field_t link_fields[] = {
        KR_FIELD(link_t, inside, KR_FIELD_ENTITY),
        KR_FIELD(link_t, outside, KR_FIELD_ENTITY),
        KR_FIELD_ARRAY(link_t, arr, KR_FIELD_ENTITY, 2),
        KR_FIELD(link_t, mark, KR_FIELD_U32),
    };
    reg = kr_registry_create();
    if (!reg) abort();
    c_pos = kr_component_register(reg, &(kr_component_desc_t){ .name = "pos", .size = sizeof(pos_t),
                                                               .fields = pos_fields, .field_count = 3 });
    c_link = kr_component_register(reg, &(kr_component_desc_t){ .name = "link", .size = sizeof(link_t),
                                                                .fields = link_fields, .field_count = 4 });
    c_tag = kr_component_register(reg, &(kr_component_desc_t){ .name = "tag", .size = 0 });
    c_labeled = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "labeled", .state_size = sizeof(labeled_t),
                                                                 .vtbl = &labeled_vtbl });
    c_fragile = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "fragile", .state_size = sizeof(fragile_t),
                                                                 .vtbl = &fragile_vtbl });
    c_raw = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "raw", .state_size = sizeof(raw_t),
                                                             .vtbl = &raw_vtbl });
    if (!c_pos || !c_link || !c_tag || !c_labeled || !c_fragile || !c_raw) {
        fprintf(stderr, "fuzz_unpack: %s\n", kr_last_error());
        abort();
    }
}

/* A world with a few entities already in it (ids the pack's will not get). */
static kr_world_t *make_world(void)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    if (!w) abort();
    kr_entity_t a = kr_entity_create(w), b = kr_entity_create(w), c = kr_entity_create(w);
    if (!a || !b || !c || kr_entity_destroy(w, b) || kr_entity_set_name(w, a, "filler") ||
        kr_spatial_insert(w, c, 1.5, 2.5))
        abort();
    return w;
}

static kr_entity_t mk(kr_world_t *w, const char *name, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .parent = parent });
    if (!e) abort();
    return e;
}

static void write_file(const char *dir, const char *name, const kr_buf_t *b)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "wb");
    if (!fp || fwrite(b->data, 1, b->len, fp) != b->len || fclose(fp)) exit(1);
}

/* Packs of a scene: one plain entity, a subtree with every component, two
 * roots, and entity references inside and outside the pack. */
static void make_seeds(const char *dir)
{
    kr_world_t *w = make_world();
    kr_entity_t outside = mk(w, "outside", KR_ENTITY_INVALID);
    kr_entity_t plain = mk(w, NULL, KR_ENTITY_INVALID);
    kr_entity_t root = mk(w, "root", KR_ENTITY_INVALID);
    kr_entity_t c1 = mk(w, "child-1", root), c2 = mk(w, NULL, root), g = mk(w, "grandchild", c1);
    pos_t *p = kr_component_add(w, root, c_pos);
    *p = (pos_t){ 1.25, -3.5, 7, 0 };
    link_t *l = kr_component_add(w, c1, c_link);
    *l = (link_t){ .inside = g, .outside = outside, .arr = { root, c2 }, .mark = 0xa11ce };
    if (!kr_component_add(w, c2, c_tag)) abort();
    labeled_t *lb = kr_component_add(w, root, c_labeled);
    lb->label = strdup("a label");
    lb->buddy = c2;
    lb->counter = -42;
    lb->weight = 0.5;
    fragile_t *fr = kr_component_add(w, g, c_fragile);
    fr->v = 2;
    raw_t *rw = kr_component_add(w, c2, c_raw);
    rw->a = 3;
    rw->b = 4.5;
    if (kr_spatial_insert(w, root, 1.5, 2.5) || kr_spatial_insert(w, c2, -7.25, 100)) abort();
    kr_entity_t second = mk(w, "second", KR_ENTITY_INVALID);
    if (!kr_component_add(w, second, c_labeled)) abort(); /* NULL label */
    struct {
        const char *name;
        kr_entity_t roots[2];
        size_t n;
    } seeds[] = { { "pack-plain", { plain }, 1 }, { "pack-tree", { root }, 1 }, { "pack-two-roots", { root, second }, 2 },
                  { "pack-subtree", { c1 }, 1 } };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        kr_buf_t b;
        kr_buf_init(&b);
        if (kr_pack(w, seeds[i].roots, seeds[i].n, &b)) {
            fprintf(stderr, "fuzz_unpack: seeds: %s\n", kr_last_error());
            exit(1);
        }
        write_file(dir, seeds[i].name, &b);
        kr_buf_fini(&b);
    }
    kr_world_destroy(w);
    printf("fuzz_unpack: %zu seeds\n", sizeof seeds / sizeof seeds[0]);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    make_registry();
    const char *seeds = getenv("KAIROS_FUZZ_SEEDS");
    if (seeds) make_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kr_world_t *w = make_world();
    size_t before = kr_world_entity_count(w);
    kr_entity_t roots[8];
    size_t n = 0, used = 0;
    kr_status_t st = kr_unpack(w, data, size, &(kr_unpack_desc_t){ .roots = roots, .roots_capacity = 8,
                                                                    .notify_move = true }, &n, &used);
    if (st) {
        /* refused: with a message, and nothing created */
        if (!kr_last_error()[0] || kr_world_entity_count(w) != before) abort();
    } else {
        if (used > size) abort();
        size_t k = n < 8 ? n : 8;
        for (size_t i = 0; i < k; i++)
            if (!kr_entity_alive(w, roots[i])) abort();
        /* what was accepted is a consistent world: it packs again, and that
         * pack unpacks */
        if (k == n && n) {
            kr_buf_t b;
            kr_buf_init(&b);
            if (kr_pack(w, roots, k, &b)) abort();
            kr_world_t *w2 = make_world();
            size_t n2 = 0;
            if (kr_unpack(w2, b.data, b.len, NULL, &n2, NULL) || n2 != n) abort();
            kr_world_destroy(w2);
            kr_buf_fini(&b);
        }
    }
    kr_world_destroy(w);
    return 0;
}
