/* The built-in kinds' serialize callbacks and kr_region_serialize
 * (checkpoints, docs/checkpoint.md), short of a real restart (which also
 * replaces the world and the events): each example model runs a while;
 * what every simulator's kind saves then loads into the same model freshly
 * set up, and saves again to the same bytes. Regions: the loaded region
 * draws what the saved one draws, counts what it counts, holds its fields
 * and halo; a checkpoint of one region does not load into another; the
 * step driver travels with its own region's world only. */
#include <string.h>
#include <criterion/criterion.h>

#include "kairos/kairos.h"
#include "base/grow.h"
#include "ecs/serializer_private.h"
#include "regions/region_private.h"
#include "runtime/model_file.h"
#include "models/builtin.h"

/* A checkpoint keeps entity ids: references are the ids themselves. */
static uint64_t ref_save(void *ctx, kr_entity_t e)
{
    (void)ctx;
    return e;
}

static kr_entity_t ref_load(void *ctx, uint64_t ref, bool *ok)
{
    (void)ctx;
    *ok = true;
    return ref;
}

typedef struct built {
    kr__model_file_t *f;
    kr_model_t *m;
} built_t;

static built_t build(const char *path, const char *end_time)
{
    char set[64];
    snprintf(set, sizeof set, "end_time=%s", end_time);
    const char *sets[] = { set };
    built_t b = { 0 };
    b.f = kr__model_file_load(&(kr__model_file_desc_t){ .path = path, .sets = sets, .set_count = 1,
                                                        .register_builtin = kr__models_register_builtin });
    cr_assert(b.f, "%s: %s", path, kr_last_error());
    b.m = kr__model_file_build(b.f, NULL);
    cr_assert(b.m, "%s: %s", path, kr_last_error());
    return b;
}

static void unbuild(built_t *b)
{
    kr_model_destroy(b->m);
    kr__model_file_free(b->f);
}

static const kr_kind_desc_t *kind_of(const built_t *b, uint32_t i) { return kr__model_file_kind(b->f, i); }

static void save(const built_t *b, uint32_t i, kr_buf_t *out)
{
    kr_serializer_t s;
    kr_buf_init(out);
    kr__serializer_saver(&s, out, ref_save, NULL);
    kr_sim_t *sim = kr_model_sim(b->m, i);
    cr_assert_eq(kind_of(b, i)->serialize(sim, &s), KR_OK, "saving %s: %s", kr_sim_name(sim), kr_last_error());
}

static kr_status_t load(const built_t *b, uint32_t i, const kr_buf_t *in)
{
    kr_reader_t rd;
    kr_serializer_t s;
    kr_reader_init(&rd, in->data, in->len);
    kr__serializer_loader(&s, &rd, ref_load, NULL);
    kr_status_t st = kind_of(b, i)->serialize(kr_model_sim(b->m, i), &s);
    if (!st) cr_assert_eq(kr_serializer_left(&s), 0, "%s: %zu bytes not read", kr_sim_name(kr_model_sim(b->m, i)),
                          kr_serializer_left(&s));
    return st;
}

static bool same(const kr_buf_t *a, const kr_buf_t *b)
{
    return a->len == b->len && !memcmp(a->data, b->data, a->len);
}

/* Runs `path` to `end_time`; every simulator whose kind serializes saves,
 * and loads into a fresh build of the same file, which then saves the
 * same bytes. Returns how many simulators serialize, and asserts that the
 * run changed what they save (else the test would prove nothing). */
static uint32_t round_trip(const char *path, const char *end_time)
{
    built_t run = build(path, end_time), fresh = build(path, end_time);
    cr_assert_eq(kr_model_run(run.m), KR_OK, "%s: %s", path, kr_last_error());
    uint32_t n = kr_model_sim_count(run.m), serializing = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!kind_of(&run, i)->serialize) continue;
        serializing++;
        kr_buf_t saved, before, again;
        save(&run, i, &saved);
        save(&fresh, i, &before);
        cr_assert(!same(&saved, &before), "%s: %s saves the same before and after the run", path,
                  kr_sim_name(kr_model_sim(run.m, i)));
        cr_assert_eq(load(&fresh, i, &saved), KR_OK, "%s: loading %s: %s", path,
                     kr_sim_name(kr_model_sim(run.m, i)), kr_last_error());
        save(&fresh, i, &again);
        cr_assert(same(&saved, &again), "%s: %s saves other bytes after a load (%zu, %zu)", path,
                  kr_sim_name(kr_model_sim(run.m, i)), saved.len, again.len);
        kr_buf_fini(&saved);
        kr_buf_fini(&before);
        kr_buf_fini(&again);
    }
    unbuild(&run);
    unbuild(&fresh);
    return serializing;
}

Test(kind_serialize, phold_round_trips) { cr_assert_eq(round_trip("examples/phold.json", "20"), 4); }
Test(kind_serialize, sqss_round_trips) { cr_assert_eq(round_trip("examples/sqss.json", "600"), 1); }
Test(kind_serialize, rows_lines_and_final_round_trip) { cr_assert_eq(round_trip("examples/rows.json", "600"), 51); }
/* the assembly line has nothing to save outside its declared state */
Test(kind_serialize, robots_and_bath_round_trip) { cr_assert_eq(round_trip("examples/factory.json", "300"), 2); }
Test(kind_serialize, walkers_round_trip) { cr_assert_eq(round_trip("examples/walkers.json", "10"), 4); }
Test(kind_serialize, ecology_round_trips) { cr_assert_eq(round_trip("examples/ecology.json", "10"), 4); }

/* A step's worth of halo that a cut between steps may hold: ghosts and
 * arrived strips and migrants for the next step, put in by hand (a run's
 * last step sends no exchange, so a finished run holds none). */
static void fake_halo(kr_region_t *r)
{
    kr_rect_t st = r->stored, own = r->own;
    for (int32_t y = st.y0, k = 0; y < st.y1; y++)
        for (int32_t x = st.x0; x < st.x1; x++)
            if (!kr_rect_contains(own, x, y) && k++ % 3 == 0)
                cr_assert_eq(kr__region_ghost_add(r, 1000 + (uint64_t)k, x, y, NULL), KR_OK);
    cr_assert_gt(r->ghost_count, 0);
    for (size_t i = 0; i < r->nb_count; i++) r->nb[i].arrived = i % 2 == 0;
    r->arrived_count = 0;
    cr_assert_eq(KR__GROW(r->arrived, r->arrived_cap, 3, 4, NULL), KR_OK);
    r->arrived[r->arrived_count++] = 7;
    r->arrived[r->arrived_count++] = 3;
}

static kr_status_t region_io(kr_region_t *r, kr_buf_t *buf, bool loading)
{
    kr_serializer_t s;
    kr_reader_t rd;
    if (loading) {
        kr_reader_init(&rd, buf->data, buf->len);
        kr__serializer_loader(&s, &rd, ref_load, NULL);
    } else {
        kr__serializer_saver(&s, buf, ref_save, NULL);
    }
    return kr_region_serialize(r, &s);
}

Test(kind_serialize, a_loaded_region_goes_on_as_the_saved_one)
{
    built_t run = build("examples/ecology.json", "7"), fresh = build("examples/ecology.json", "7");
    cr_assert_eq(kr_model_run(run.m), KR_OK, "%s", kr_last_error());
    for (uint32_t i = 0; i < kr_model_sim_count(run.m); i++) {
        kr_region_t *a = kr_region_of(kr_model_sim(run.m, i)), *b = kr_region_of(kr_model_sim(fresh.m, i));
        cr_assert(a && b);
        fake_halo(a);
        uint64_t id = 1 + i;
        uint64_t draw_b = kr_rng_u64(kr_region_rng(b, id)), draw_a = kr_rng_u64(kr_region_rng(a, id));
        cr_assert_neq(draw_a, draw_b, "a fresh region is at step 0, the run's at its last");
        kr_buf_t buf;
        kr_buf_init(&buf);
        cr_assert_eq(region_io(a, &buf, false), KR_OK, "%s", kr_last_error());
        cr_assert_eq(region_io(b, &buf, true), KR_OK, "%s", kr_last_error());
        kr_buf_fini(&buf);
        /* the same draws, step and counters */
        cr_assert_eq(kr_rng_u64(kr_region_rng(b, id)), draw_a);
        cr_assert_eq(b->step, a->step);
        cr_assert_eq(kr_region_updates(b), kr_region_updates(a));
        cr_assert_gt(kr_region_updates(a), 0);
        cr_assert_eq(kr_region_migrants_sent(b), kr_region_migrants_sent(a));
        cr_assert_eq(kr_region_migrant_bytes(b), kr_region_migrant_bytes(a));
        /* the fields over own cells and halo, to the bit */
        size_t cells = kr_region_stored_cells(a);
        for (uint32_t f = 0; f < a->desc.fields; f++)
            cr_assert(!memcmp(kr_region_field(a, f), kr_region_field(b, f), cells * sizeof(double)), "field %u", f);
        /* the halo's agents, cell by cell, and what has arrived */
        kr_rect_t st = a->stored;
        for (int32_t y = st.y0; y < st.y1; y++)
            for (int32_t x = st.x0; x < st.x1; x++) {
                size_t na, nb;
                const kr_region_ghost_t *ga = kr_region_ghosts(a, x, y, &na), *gb = kr_region_ghosts(b, x, y, &nb);
                cr_assert_eq(na, nb, "cell (%d, %d)", x, y);
                for (size_t k = 0; k < na; k++) cr_assert_eq(ga[k].id, gb[k].id);
            }
        for (size_t k = 0; k < a->nb_count; k++) cr_assert_eq(b->nb[k].arrived, a->nb[k].arrived);
        cr_assert_eq(b->arrived_count, 2);
        cr_assert(b->arrived[0] == 7 && b->arrived[1] == 3);
    }
    unbuild(&run);
    unbuild(&fresh);
}

Test(kind_serialize, a_region_loads_only_its_own_checkpoint)
{
    built_t b = build("examples/walkers.json", "3");
    kr_region_t *r0 = kr_region_of(kr_model_sim(b.m, 0)), *r1 = kr_region_of(kr_model_sim(b.m, 1));
    kr_buf_t buf;
    kr_buf_init(&buf);
    cr_assert_eq(region_io(r0, &buf, false), KR_OK, "%s", kr_last_error());
    cr_assert_eq(region_io(r1, &buf, true), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "of another region"), "%s", kr_last_error());
    buf.len /= 2;
    cr_assert_eq(region_io(r0, &buf, true), KR_ERR_CORRUPT, "a truncated checkpoint");
    kr_buf_fini(&buf);
    unbuild(&b);
}

/* The step driver is saved with its own region's world (a checkpoint's
 * image) and comes back bound to that region; into another region's
 * world it does not go. */
Test(kind_serialize, the_step_driver_comes_back_to_its_own_region_only)
{
    built_t b = build("examples/walkers.json", "3");
    kr_sim_t *s0 = kr_model_sim(b.m, 0), *s1 = kr_model_sim(b.m, 1);
    kr_world_t *w0 = kr_sim_world(s0);
    kr_component_t driver = kr_component_lookup(kr_model_registry(b.m), "kr.region.driver");
    kr_view_t v;
    cr_assert_eq(kr_view_init(&v, w0, &(kr_view_desc_t){ .include = { driver } }), KR_OK);
    cr_assert(kr_view_next(&v));
    kr_entity_t d = kr_view_entity(&v);
    kr_view_fini(&v);
    kr_buf_t pack;
    kr_buf_init(&pack);
    cr_assert_eq(kr_pack(w0, &d, 1, &pack), KR_OK, "%s", kr_last_error());
    kr_entity_t copy = KR_ENTITY_INVALID;
    cr_assert_neq(kr_unpack(kr_sim_world(s1), pack.data, pack.len, &(kr_unpack_desc_t){ 0 }, NULL, NULL), KR_OK);
    cr_assert(strstr(kr_last_error(), "step driver cannot move"), "%s", kr_last_error());
    cr_assert_eq(kr_unpack(w0, pack.data, pack.len, &(kr_unpack_desc_t){ .roots = &copy, .roots_capacity = 1 }, NULL,
                           NULL), KR_OK, "%s", kr_last_error());
    const kr__region_driver_t *ds = kr_component_get(w0, copy, driver);
    cr_assert(ds && ds->region == kr_region_of(s0));
    cr_assert_eq(kr_entity_destroy(w0, copy), KR_OK);
    kr_buf_fini(&pack);
    unbuild(&b);
}
