/* The multi-rank harness, end to end: every rank builds the same registry
 * (checked by an all-reduce of the registry hash's min and max), packs a
 * subtree of its own world and sends it to rank (r + 1) % size, unpacks the
 * pack from rank (r - 1 + size) % size and checks it: names carry the
 * sender's rank, values, child order, entity references remapped inside the
 * pack and cleared outside it, behavior state (a heap string and an entity
 * reference), spatial positions, and on_submodel_move with the sender's old
 * ids. With one rank, the rank sends to itself.
 *
 * Plain C with MPI, not Criterion: Criterion forks each test and MPI cannot
 * start in a forked child under mpirun. Any failure prints one line naming
 * the rank and calls MPI_Abort. */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

#define TAG_PACK 7101
#define LEAVES 2000  /* extra roots, so the message exceeds MPI's eager limit */

static int g_rank = -1;

static void fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mpi_pack_exchange: rank %d: %s\n", g_rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

/* ---- registry, the same on every rank ------------------------------------ */

typedef struct value {
    double x;
    int64_t sender;
    int32_t serial, pad;
} value_t;

typedef struct ref {
    kr_entity_t target;     /* inside the pack */
    kr_entity_t home;       /* the root */
    kr_entity_t elsewhere;  /* outside the pack */
} ref_t;

typedef struct note {
    char *text;             /* owned */
    kr_entity_t friend_of;
    int64_t moved_from;     /* old id seen by on_submodel_move */
    int32_t moves, creations;
} note_t;

static void note_create(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w;
    (void)self;
    ((note_t *)state)->creations++;
}

static void note_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w;
    (void)self;
    note_t *n = state;
    free(n->text);
    n->text = NULL;
}

static kr_status_t note_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *s)
{
    (void)w;
    (void)self;
    note_t *n = state;
    kr_ser_string(s, &n->text);
    kr_ser_entity(s, &n->friend_of);
    return kr_serializer_status(s);
}

static void note_move(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)w;
    (void)self;
    note_t *n = state;
    n->moved_from = (int64_t)old_self;
    n->moves++;
}

static const kr_behavior_vtbl_t note_vtbl = {
    .on_creation = note_create,
    .on_destroy = note_destroy,
    .serialize = note_serialize,
    .on_submodel_move = note_move,
};

typedef struct ids {
    kr_component_t value, ref, note;
} ids_t;

static kr_registry_t *build_registry(ids_t *ids)
{
    kr_registry_t *reg = kr_registry_create();
    CHECK(reg, "kr_registry_create: %s", kr_last_error());
    static const kr_field_t value_fields[] = {
        KR_FIELD(value_t, x, KR_FIELD_F64),
        KR_FIELD(value_t, sender, KR_FIELD_I64),
        KR_FIELD(value_t, serial, KR_FIELD_I32),
    };
    static const kr_field_t ref_fields[] = {
        KR_FIELD(ref_t, target, KR_FIELD_ENTITY),
        KR_FIELD(ref_t, home, KR_FIELD_ENTITY),
        KR_FIELD(ref_t, elsewhere, KR_FIELD_ENTITY),
    };
    ids->value = kr_component_register(reg, &(kr_component_desc_t){
        .name = "value", .size = sizeof(value_t), .fields = value_fields, .field_count = 3 });
    ids->ref = kr_component_register(reg, &(kr_component_desc_t){
        .name = "ref", .size = sizeof(ref_t), .fields = ref_fields, .field_count = 3 });
    ids->note = kr_behavior_register(reg, &(kr_behavior_desc_t){
        .name = "note", .state_size = sizeof(note_t), .vtbl = &note_vtbl });
    CHECK(ids->value && ids->ref && ids->note, "registering components: %s", kr_last_error());
    return reg;
}

/* ---- the subtree each rank sends --------------------------------------------
 *
 *   "rank-R-outside" (not packed)
 *   "rank-R-root"  value ref note, spatial (R + 0.5, -R)
 *     children "rank-R-child-0" .. "rank-R-child-(R % 3 + 2)", each with a value
 *     and a ref (target: the next child, wrapping; elsewhere: the outside);
 *     child 0 has a grandchild "rank-R-grand" whose ref points at the root.
 *   then LEAVES roots "rank-R-leaf-i" with a value each.
 * Creation order is fixed, so a receiver can rebuild a sender's ids. */
typedef struct scene {
    kr_entity_t outside, root, grand;
    kr_entity_t child[5];
    int nchild;
} scene_t;

static int child_count(int rank) { return rank % 3 + 2; }

static kr_entity_t make(kr_world_t *w, const char *name, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .parent = parent });
    CHECK(e, "creating '%s': %s", name, kr_last_error());
    return e;
}

static void *add(kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    void *p = kr_component_add(w, e, c);
    CHECK(p, "adding component %u: %s", c, kr_last_error());
    return p;
}

static void build_scene(kr_world_t *w, const ids_t *ids, int rank, scene_t *s, kr_entity_t *leaves)
{
    char name[64];
    snprintf(name, sizeof name, "rank-%d-outside", rank);
    s->outside = make(w, name, 0);
    snprintf(name, sizeof name, "rank-%d-root", rank);
    s->root = make(w, name, 0);
    s->nchild = child_count(rank);
    for (int i = 0; i < s->nchild; i++) {
        snprintf(name, sizeof name, "rank-%d-child-%d", rank, i);
        s->child[i] = make(w, name, s->root);
    }
    snprintf(name, sizeof name, "rank-%d-grand", rank);
    s->grand = make(w, name, s->child[0]);

    *(value_t *)add(w, s->root, ids->value) = (value_t){ rank * 1000.25, rank, -1, 0 };
    *(ref_t *)add(w, s->root, ids->ref) = (ref_t){ s->grand, s->root, s->outside };
    note_t *n = add(w, s->root, ids->note);
    snprintf(name, sizeof name, "hello from rank %d", rank);
    n->text = strdup(name);
    n->friend_of = s->child[s->nchild - 1];
    CHECK(kr_spatial_insert(w, s->root, rank + 0.5, -rank) == KR_OK, "spatial insert: %s", kr_last_error());
    for (int i = 0; i < s->nchild; i++) {
        *(value_t *)add(w, s->child[i], ids->value) = (value_t){ rank + i / 8.0, rank, i, 0 };
        *(ref_t *)add(w, s->child[i], ids->ref) =
            (ref_t){ s->child[(i + 1) % s->nchild], s->root, s->outside };
    }
    *(ref_t *)add(w, s->grand, ids->ref) = (ref_t){ s->root, s->root, s->outside };
    for (int i = 0; i < LEAVES; i++) {
        snprintf(name, sizeof name, "rank-%d-leaf-%d", rank, i);
        leaves[i] = make(w, name, 0);
        *(value_t *)add(w, leaves[i], ids->value) = (value_t){ i * 0.5, rank, i, 0 };
    }
}

static void expect_name(kr_world_t *w, kr_entity_t e, const char *want)
{
    const char *got = kr_entity_name(w, e);
    CHECK(got && strcmp(got, want) == 0, "entity named '%s', want '%s'", got ? got : "(none)", want);
}

static const void *get(kr_world_t *w, kr_entity_t e, kr_component_t c, const char *what)
{
    const void *p = kr_component_get(w, e, c);
    CHECK(p, "%s lacks component %u: %s", what, c, kr_last_error());
    return p;
}

/* Checks what arrived from rank `src` against a locally rebuilt copy of the
 * sender's world (same build, so the same ids). */
static void verify(kr_world_t *w, const ids_t *ids, int src, const kr_entity_t *roots, size_t nroots,
                   const scene_t *sent)
{
    char name[64];
    CHECK(nroots == 1 + LEAVES, "received %zu roots from rank %d, want %d", nroots, src, 1 + LEAVES);
    kr_entity_t root = roots[0];
    snprintf(name, sizeof name, "rank-%d-root", src);
    expect_name(w, root, name);
    CHECK(kr_entity_find(w, name) == root, "kr_entity_find('%s') does not give the root", name);
    CHECK(kr_entity_parent(w, root) == KR_ENTITY_INVALID, "the root from rank %d has a parent", src);

    int nchild = child_count(src);
    CHECK((int)kr_entity_child_count(w, root) == nchild, "root from rank %d has %zu children, want %d", src,
          kr_entity_child_count(w, root), nchild);
    kr_entity_t child[5];
    kr_entity_t c = kr_entity_first_child(w, root);
    for (int i = 0; i < nchild; i++, c = kr_entity_next_sibling(w, c)) {
        CHECK(c, "child %d of rank %d's root is missing", i, src);
        child[i] = c;
        snprintf(name, sizeof name, "rank-%d-child-%d", src, i);
        expect_name(w, c, name); /* child order kept */
        const value_t *v = get(w, c, ids->value, "child");
        CHECK(v->x == src + i / 8.0 && v->sender == src && v->serial == i,
              "child %d value (%g, %lld, %d) is not rank %d's", i, v->x, (long long)v->sender, v->serial, src);
    }
    CHECK(c == KR_ENTITY_INVALID, "rank %d's root has an extra child", src);
    CHECK(kr_entity_child_count(w, child[0]) == 1, "child 0 lost its grandchild");
    kr_entity_t grand = kr_entity_first_child(w, child[0]);
    snprintf(name, sizeof name, "rank-%d-grand", src);
    expect_name(w, grand, name);

    const value_t *rv = get(w, root, ids->value, "root");
    CHECK(rv->x == src * 1000.25 && rv->sender == src && rv->serial == -1, "root value is not rank %d's", src);
    const ref_t *rr = get(w, root, ids->ref, "root");
    CHECK(rr->target == grand, "root ref.target %llx, want the new grandchild %llx",
          (unsigned long long)rr->target, (unsigned long long)grand);
    CHECK(rr->home == root, "root ref.home is not the new root");
    CHECK(rr->elsewhere == KR_ENTITY_INVALID, "root ref.elsewhere (outside the pack) was not cleared");
    for (int i = 0; i < nchild; i++) {
        const ref_t *r = get(w, child[i], ids->ref, "child");
        CHECK(r->target == child[(i + 1) % nchild] && r->home == root && r->elsewhere == KR_ENTITY_INVALID,
              "child %d refs not remapped", i);
    }
    const ref_t *gr = get(w, grand, ids->ref, "grandchild");
    CHECK(gr->target == root && gr->home == root && gr->elsewhere == KR_ENTITY_INVALID,
          "grandchild refs not remapped");

    const note_t *n = get(w, root, ids->note, "root");
    snprintf(name, sizeof name, "hello from rank %d", src);
    CHECK(n->text && strcmp(n->text, name) == 0, "note text '%s', want '%s'", n->text ? n->text : "(null)", name);
    CHECK(n->friend_of == child[nchild - 1], "note's entity reference not remapped");
    CHECK(n->creations == 1, "on_creation ran %d times", n->creations);
    CHECK(n->moves == 1, "on_submodel_move ran %d times", n->moves);
    CHECK((kr_entity_t)n->moved_from == sent->root, "on_submodel_move got old id %llx, want rank %d's %llx",
          (unsigned long long)n->moved_from, src, (unsigned long long)sent->root);

    double x = 0, y = 0;
    CHECK(kr_spatial_position(w, root, &x, &y), "root from rank %d lost its spatial position", src);
    CHECK(x == src + 0.5 && y == -src, "root position (%g, %g), want (%g, %d)", x, y, src + 0.5, -src);

    for (int i = 0; i < LEAVES; i++) {
        kr_entity_t leaf = roots[1 + i];
        snprintf(name, sizeof name, "rank-%d-leaf-%d", src, i);
        expect_name(w, leaf, name); /* roots in order */
        const value_t *v = get(w, leaf, ids->value, "leaf");
        CHECK(v->x == i * 0.5 && v->sender == src && v->serial == i, "leaf %d value is not rank %d's", i, src);
        CHECK(kr_entity_child_count(w, leaf) == 0 && !kr_entity_parent(w, leaf), "leaf %d gained links", i);
    }
    size_t want = (size_t)(1 + nchild + 1 + LEAVES);
    CHECK(kr_world_entity_count(w) == want + 3, "receiving world holds %zu entities, want %zu",
          kr_world_entity_count(w), want + 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;

    ids_t ids;
    kr_registry_t *reg = build_registry(&ids);

    /* Every rank must have built the same registry. */
    unsigned long long hash = kr_registry_hash(reg), lo = 0, hi = 0;
    MPI_Allreduce(&hash, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hash, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi && lo == hash, "registry hashes differ across ranks (min %llx, max %llx, mine %llx)", lo, hi,
          hash);

    /* Pack this rank's subtree and the leaves. */
    kr_world_t *mine = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    CHECK(mine, "kr_world_create: %s", kr_last_error());
    scene_t s;
    kr_entity_t *roots = malloc((1 + LEAVES) * sizeof *roots);
    CHECK(roots, "out of memory");
    build_scene(mine, &ids, rank, &s, roots + 1);
    roots[0] = s.root;
    kr_buf_t buf;
    kr_buf_init(&buf);
    CHECK(kr_pack(mine, roots, 1 + LEAVES, &buf) == KR_OK, "kr_pack: %s", kr_last_error());
    CHECK(buf.len <= (size_t)INT32_MAX, "pack too large for one MPI message");

    int dest = (rank + 1) % size, src = (rank - 1 + size) % size;
    MPI_Request req;
    MPI_Isend(buf.data, (int)buf.len, MPI_BYTE, dest, TAG_PACK, MPI_COMM_WORLD, &req);
    MPI_Status st;
    MPI_Probe(src, TAG_PACK, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count > 0, "empty message from rank %d", src);
    unsigned char *in = malloc((size_t)count);
    CHECK(in, "out of memory for %d bytes", count);
    MPI_Recv(in, count, MPI_BYTE, src, TAG_PACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    /* The receiving world already holds entities, so new ids differ from the
     * sender's. */
    kr_world_t *recv = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    CHECK(recv, "kr_world_create: %s", kr_last_error());
    for (int i = 0; i < 3; i++) CHECK(kr_entity_create(recv), "filler: %s", kr_last_error());
    kr_entity_t *got = malloc((1 + LEAVES) * sizeof *got);
    CHECK(got, "out of memory");
    size_t nroots = 0, used = 0;
    kr_status_t rc = kr_unpack(recv, in, (size_t)count,
                               &(kr_unpack_desc_t){ .roots = got, .roots_capacity = 1 + LEAVES, .notify_move = true },
                               &nroots, &used);
    CHECK(rc == KR_OK, "kr_unpack of rank %d's pack: %s (%s)", src, kr_status_str(rc), kr_last_error());
    CHECK(used == (size_t)count, "kr_unpack used %zu of %d bytes", used, count);

    /* Rebuild the sender's world locally to learn its ids. */
    kr_world_t *theirs = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    CHECK(theirs, "kr_world_create: %s", kr_last_error());
    scene_t sent;
    kr_entity_t *their_leaves = malloc(LEAVES * sizeof *their_leaves);
    CHECK(their_leaves, "out of memory");
    build_scene(theirs, &ids, src, &sent, their_leaves);
    verify(recv, &ids, src, got, nroots, &sent);

    /* A damaged copy must be refused on every rank without side effects. */
    size_t before = kr_world_entity_count(recv);
    in[0] ^= 0xff;
    CHECK(kr_unpack(recv, in, (size_t)count, NULL, NULL, NULL) != KR_OK, "a pack with a bad magic was accepted");
    CHECK(kr_world_entity_count(recv) == before, "a refused pack left entities behind");

    /* Everyone verified before rank 0 reports. */
    int ok = 1, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    CHECK(all, "another rank failed");
    if (rank == 0) printf("mpi_pack_exchange: ok on %d ranks\n", size);

    free(in);
    free(got);
    free(roots);
    free(their_leaves);
    kr_buf_fini(&buf);
    kr_world_destroy(mine);
    kr_world_destroy(recv);
    kr_world_destroy(theirs);
    kr_registry_destroy(reg);
    MPI_Finalize();
    return 0;
}
