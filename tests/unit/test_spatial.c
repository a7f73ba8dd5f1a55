/* The spatial hash: occupancy after insert, move, remove and destroy (the
 * PHIDS cases, without its scan of every cell on destroy), queries and their
 * order, argument checks, and random operations against a brute-force
 * model that mirrors the documented slot order. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"
/* Only for the memory test: the number of cell records ever made. */
#include "ecs/world_private.h"

static kr_world_t *make_world(double cell_size)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_cell_size = cell_size });
    cr_assert_not_null(w, "%s", kr_last_error());
    return w;
}

static kr_entity_t make_entity(kr_world_t *w)
{
    kr_entity_t e = kr_entity_create(w);
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}

static void put(kr_world_t *w, kr_entity_t e, double x, double y)
{
    cr_assert_eq(kr_spatial_insert(w, e, x, y), KR_OK, "%s", kr_last_error());
}

static size_t cell_size_of(const kr_world_t *w, int32_t cx, int32_t cy)
{
    size_t n = 99;
    const kr_entity_t *m = kr_spatial_cell_entities(w, (kr_cell_t){ cx, cy }, &n);
    if (!n) cr_assert_null(m);
    return n;
}

static void assert_cell(const kr_world_t *w, int32_t cx, int32_t cy, const kr_entity_t *want, size_t n)
{
    size_t got_n = 0;
    const kr_entity_t *got = kr_spatial_cell_entities(w, (kr_cell_t){ cx, cy }, &got_n);
    cr_assert_eq(got_n, n, "cell (%d, %d) holds %zu entities, want %zu", cx, cy, got_n, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "cell (%d, %d) slot %zu: %llx want %llx", cx, cy, i, (unsigned long long)got[i], (unsigned long long)want[i]);
}

Test(spatial, insert_then_cell_query)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    put(w, e, 2.5, 3.25);
    kr_cell_t c = kr_spatial_cell_of(w, 2.5, 3.25);
    cr_assert_eq(c.x, 2);
    cr_assert_eq(c.y, 3);
    assert_cell(w, 2, 3, &e, 1);
    double x = 0, y = 0;
    cr_assert(kr_spatial_position(w, e, &x, &y));
    cr_assert_eq(x, 2.5);
    cr_assert_eq(y, 3.25);
    cr_assert(kr_spatial_position(w, e, NULL, NULL));
    cr_assert_eq(kr_spatial_count(w), 1);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    cr_assert_eq(cell_size_of(w, 3, 2), 0);
    /* Not in the hash: false, and no error. */
    kr_entity_t other = make_entity(w);
    kr_clear_error();
    cr_assert_not(kr_spatial_position(w, other, &x, &y));
    cr_assert_eq(kr_last_status(), KR_OK);
    kr_world_destroy(w);
}

Test(spatial, move_updates_occupancy)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    put(w, e, 0.5, 0.5);
    cr_assert_eq(kr_spatial_move(w, e, 5.5, -2.5), KR_OK, "%s", kr_last_error());
    cr_assert_eq(cell_size_of(w, 0, 0), 0, "old cell still holds the entity");
    assert_cell(w, 5, -3, &e, 1);
    cr_assert_eq(kr_spatial_cell_count(w), 1, "old cell not released");
    cr_assert_eq(kr_spatial_count(w), 1);

    /* A move within the cell changes the position only. */
    size_t n;
    const kr_entity_t *before = kr_spatial_cell_entities(w, (kr_cell_t){ 5, -3 }, &n);
    cr_assert_eq(kr_spatial_move(w, e, 5.9, -2.01), KR_OK);
    cr_assert_eq(kr_spatial_cell_entities(w, (kr_cell_t){ 5, -3 }, &n), before);
    double x, y;
    cr_assert(kr_spatial_position(w, e, &x, &y));
    cr_assert_eq(x, 5.9);
    cr_assert_eq(y, -2.01);
    cr_assert_eq(kr_spatial_cell_count(w), 1);

    /* Moving back re-creates the old cell. */
    cr_assert_eq(kr_spatial_move(w, e, 0.0, 0.999), KR_OK);
    assert_cell(w, 0, 0, &e, 1);
    cr_assert_eq(cell_size_of(w, 5, -3), 0);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    kr_world_destroy(w);
}

Test(spatial, destroy_removes_from_hash)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t a = make_entity(w), b = make_entity(w), c = make_entity(w), d = make_entity(w);
    put(w, a, 1.5, 1.5);
    put(w, b, 1.25, 1.75);
    put(w, c, 1.75, 1.0);
    put(w, d, -4.0, 7.0);
    cr_assert_eq(kr_spatial_count(w), 4);
    cr_assert_eq(kr_spatial_cell_count(w), 2);

    /* Destroying the first member swap-removes it: the last takes its slot. */
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    cr_assert_eq(kr_spatial_count(w), 3);
    assert_cell(w, 1, 1, (kr_entity_t[]){ c, b }, 2);
    /* The moved member's slot was fixed: it can still move and leave. */
    cr_assert_eq(kr_spatial_move(w, c, 9.5, 9.5), KR_OK);
    assert_cell(w, 1, 1, &b, 1);
    assert_cell(w, 9, 9, &c, 1);

    cr_assert_eq(kr_entity_destroy(w, d), KR_OK);
    cr_assert_eq(cell_size_of(w, -4, 7), 0);
    cr_assert_eq(kr_spatial_count(w), 2);
    cr_assert_eq(kr_spatial_cell_count(w), 2);

    /* A new entity that reuses a destroyed index starts outside the hash. */
    kr_entity_t e = make_entity(w);
    cr_assert(kr_entity_index(e) == kr_entity_index(d) || kr_entity_index(e) == kr_entity_index(a));
    cr_assert_not(kr_spatial_position(w, e, NULL, NULL));
    put(w, e, -4.0, 7.0);
    assert_cell(w, -4, 7, &e, 1);

    cr_assert_eq(kr_entity_destroy(w, b), KR_OK);
    cr_assert_eq(kr_entity_destroy(w, c), KR_OK);
    cr_assert_eq(kr_entity_destroy(w, e), KR_OK);
    cr_assert_eq(kr_spatial_count(w), 0);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    kr_world_destroy(w);
}

Test(spatial, multiple_occupancy_and_slot_order)
{
    kr_world_t *w = make_world(2.0);
    kr_entity_t e[5];
    for (int i = 0; i < 5; i++) {
        e[i] = make_entity(w);
        put(w, e[i], 0.25 * i, 1.0);   /* all in cell (0, 0) */
    }
    assert_cell(w, 0, 0, e, 5);
    cr_assert_eq(kr_spatial_cell_count(w), 1);

    cr_assert_eq(kr_spatial_remove(w, e[1]), KR_OK);
    assert_cell(w, 0, 0, (kr_entity_t[]){ e[0], e[4], e[2], e[3] }, 4);
    cr_assert_eq(kr_spatial_move(w, e[4], 3.0, 1.0), KR_OK);    /* to cell (1, 0) */
    assert_cell(w, 0, 0, (kr_entity_t[]){ e[0], e[3], e[2] }, 3);
    cr_assert_eq(kr_spatial_remove(w, e[3]), KR_OK);
    assert_cell(w, 0, 0, (kr_entity_t[]){ e[0], e[2] }, 2);
    cr_assert_eq(kr_spatial_remove(w, e[2]), KR_OK);            /* the last slot */
    assert_cell(w, 0, 0, &e[0], 1);
    cr_assert_eq(kr_spatial_count(w), 2);
    cr_assert_eq(kr_spatial_cell_count(w), 2);
    kr_world_destroy(w);
}

Test(spatial, cell_of_and_negative_coordinates)
{
    kr_world_t *w = make_world(1.0);
    kr_cell_t c = kr_spatial_cell_of(w, -0.5, -0.0);
    cr_assert_eq(c.x, -1);
    cr_assert_eq(c.y, 0);
    c = kr_spatial_cell_of(w, -1.0, -1.0000001);
    cr_assert_eq(c.x, -1);
    cr_assert_eq(c.y, -2);
    c = kr_spatial_cell_of(w, 3.0, 2.9999999);
    cr_assert_eq(c.x, 3);
    cr_assert_eq(c.y, 2);
    kr_world_destroy(w);

    /* The cell is floor(x / size), division included. */
    w = make_world(0.1);
    c = kr_spatial_cell_of(w, 0.3, -0.3);
    cr_assert_eq(c.x, (int32_t)floor(0.3 / 0.1));
    cr_assert_eq(c.y, (int32_t)floor(-0.3 / 0.1));
    uint64_t s = 7;
    for (int i = 0; i < 1000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double x = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 200.0;
        c = kr_spatial_cell_of(w, x, -x);
        cr_assert_eq(c.x, (int32_t)floor(x / 0.1));
        cr_assert_eq(c.y, (int32_t)floor(-x / 0.1));
    }
    kr_world_destroy(w);

    /* 0 means 1.0 (negative and non-finite sizes are refused:
     * a_bad_cell_size_is_refused). */
    w = make_world(0.0);
    c = kr_spatial_cell_of(w, 1.5, -1.5);
    cr_assert_eq(c.x, 1);
    cr_assert_eq(c.y, -2);
    kr_world_destroy(w);
}

/* A 7 x 7 lattice at half-integers in [-3, 3] plus points on cell edges. */
Test(spatial, box_query_boundaries_and_order)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t grid[7][7];
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 7; i++) {
            grid[j][i] = make_entity(w);
            put(w, grid[j][i], i - 3 + 0.5, j - 3 + 0.5);
        }
    kr_entity_t out[64];

    /* Cells (-1..0, -1..0): four lattice points, in (cy, cx) order. */
    size_t n = kr_spatial_query_box(w, -1.0, -1.0, 0.99, 0.99, out, 64);
    cr_assert_eq(n, 4);
    cr_assert_eq(out[0], grid[2][2]);
    cr_assert_eq(out[1], grid[2][3]);
    cr_assert_eq(out[2], grid[3][2]);
    cr_assert_eq(out[3], grid[3][3]);

    /* Box edges are inclusive. */
    n = kr_spatial_query_box(w, -0.5, -0.5, 0.5, 0.5, out, 64);
    cr_assert_eq(n, 4);
    n = kr_spatial_query_box(w, 0.5, 0.5, 0.5, 0.5, out, 64);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], grid[3][3]);
    n = kr_spatial_query_box(w, 0.50001, 0.5, 0.6, 0.6, out, 64);
    cr_assert_eq(n, 0);

    /* A point exactly on a cell edge. */
    kr_entity_t edge = make_entity(w);
    put(w, edge, 1.0, 1.0);
    assert_cell(w, 1, 1, (kr_entity_t[]){ grid[4][4], edge }, 2);
    n = kr_spatial_query_box(w, 0.0, 0.0, 1.0, 1.0, out, 64);
    cr_assert_eq(n, 2);
    cr_assert_eq(out[0], grid[3][3]);
    cr_assert_eq(out[1], edge);
    n = kr_spatial_query_box(w, 0.0, 0.0, 0.9999999, 0.9999999, out, 64);
    cr_assert_eq(n, 1);
    n = kr_spatial_query_box(w, 1.0, 1.0, 1.4, 1.4, out, 64);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], edge);

    /* Everything: rows bottom up, then slot order. */
    n = kr_spatial_query_box(w, -1000, -1000, 1000, 1000, out, 64);
    cr_assert_eq(n, 50);
    size_t k = 0;
    for (int j = 0; j < 7; j++)
        for (int i = 0; i < 7; i++) {
            cr_assert_eq(out[k], grid[j][i], "result %zu", k);
            k++;
            if (j == 4 && i == 4) cr_assert_eq(out[k++], edge);
        }

    /* An empty or inverted box. */
    cr_assert_eq(kr_spatial_query_box(w, 10, 10, 20, 20, out, 64), 0);
    cr_assert_eq(kr_spatial_query_box(w, 1, 1, 0, 0, out, 64), 0);
    kr_world_destroy(w);
}

Test(spatial, capacity_exceeded_returns_full_count)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e[6];
    for (int i = 0; i < 6; i++) {
        e[i] = make_entity(w);
        put(w, e[i], 0.1 * i, 0.1 * i);
    }
    kr_entity_t all[8], out[8];
    cr_assert_eq(kr_spatial_query_box(w, 0, 0, 1, 1, all, 8), 6);
    for (int cap = 0; cap <= 6; cap++) {
        for (int i = 0; i < 8; i++) out[i] = (kr_entity_t)0xdead;
        cr_assert_eq(kr_spatial_query_box(w, 0, 0, 1, 1, out, (size_t)cap), 6);
        for (int i = 0; i < cap; i++) cr_assert_eq(out[i], all[i]);
        for (int i = cap; i < 8; i++) cr_assert_eq(out[i], (kr_entity_t)0xdead, "wrote past capacity");
        for (int i = 0; i < 8; i++) out[i] = (kr_entity_t)0xdead;
        cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 1, out, (size_t)cap), 6);
        for (int i = cap; i < 8; i++) cr_assert_eq(out[i], (kr_entity_t)0xdead, "wrote past capacity");
    }
    /* Counting only. */
    cr_assert_eq(kr_spatial_query_box(w, 0, 0, 1, 1, NULL, 0), 6);
    cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 0.3, NULL, 0), 3);
    /* The same counts when the box spans more cells than are occupied. */
    cr_assert_eq(kr_spatial_query_box(w, -50, -50, 50, 50, out, 2), 6);
    cr_assert_eq(out[0], all[0]);
    cr_assert_eq(out[1], all[1]);
    kr_world_destroy(w);
}

Test(spatial, radius_query)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t on = make_entity(w), in = make_entity(w), out_ = make_entity(w), centre = make_entity(w);
    put(w, on, 3.0, 4.0);      /* distance 5 */
    put(w, in, -3.0, -3.0);    /* distance 4.24 */
    put(w, out_, 5.0, 5.0);    /* distance 7.07 */
    put(w, centre, 0.0, 0.0);
    kr_entity_t out[8];
    size_t n = kr_spatial_query_radius(w, 0, 0, 5.0, out, 8);
    cr_assert_eq(n, 3);
    /* (cy, cx) order: in (-3, -3), centre (0, 0), on (3, 4). */
    cr_assert_eq(out[0], in);
    cr_assert_eq(out[1], centre);
    cr_assert_eq(out[2], on);
    cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 4.999, out, 8), 2);
    cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 0.0, out, 8), 1);
    cr_assert_eq(out[0], centre);
    cr_assert_eq(kr_spatial_query_radius(w, 3.0, 4.0, 0.0, out, 8), 1);
    cr_assert_eq(out[0], on);
    cr_assert_eq(kr_spatial_query_radius(w, 0.5, 0.5, 0.1, out, 8), 0);
    /* The corner of the bounding square is not in the disc. */
    cr_assert_eq(kr_spatial_query_radius(w, 4.0, 4.0, 1.0, out, 8), 1);
    cr_assert_eq(out[0], on);
    cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 1e6, out, 8), 4);
    kr_world_destroy(w);
}

/* The disc test is the double expression dx * dx + dy * dy <= r * r, the
 * same as a brute-force scan: rounding in x - r must not drop a cell. Here
 * x - r is exactly 0 (cell 0) while the point lies in cell -1, and
 * (-1e-300 - 0.5) rounds to -0.5. */
Test(spatial, radius_matches_distance_formula_at_cell_edges)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w), f = make_entity(w);
    put(w, e, -1e-300, 0.5);
    put(w, f, 0.5, 1.0);
    kr_entity_t out[4];
    cr_assert_eq(kr_spatial_query_radius(w, 0.5, 0.5, 0.5, out, 4), 2);
    cr_assert_eq(out[0], e);
    cr_assert_eq(out[1], f);
    kr_world_destroy(w);
}

/* The same answer at every cell size: an entity at distance 4.5 (in
 * doubles) from a centre 4.4 to its left lies just past x + r as rounded,
 * in cell 1 of 0.1 while x + r falls in cell 0; and with r 0, an entity
 * -5e-324 left of the centre is at distance 0 (its square rounds to 0), in
 * cell -1. */
Test(spatial, radius_answer_does_not_depend_on_the_cell_size)
{
    const double sizes[] = { 0.1, 0.5, 1.0, 0.03 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        kr_world_t *w = make_world(sizes[k]);
        kr_entity_t e = make_entity(w), f = make_entity(w);
        put(w, e, 0.1, 0.1);
        put(w, f, -5e-324, 50);
        kr_entity_t out[4];
        cr_assert_eq(kr_spatial_query_radius(w, -4.4, 0.1, 4.5, out, 4), 1, "cell size %g", sizes[k]);
        cr_assert_eq(out[0], e);
        cr_assert_eq(kr_spatial_query_radius(w, 0, 50, 0, out, 4), 1, "cell size %g", sizes[k]);
        cr_assert_eq(out[0], f);
        kr_world_destroy(w);
    }
}

Test(spatial, stale_entity_refused)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    put(w, e, 1, 1);
    cr_assert_eq(kr_entity_destroy(w, e), KR_OK);
    cr_assert_eq(kr_spatial_insert(w, e, 2, 2), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, e, 2, 2), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_remove(w, e), KR_ERR_STALE_ENTITY);
    kr_clear_error();
    cr_assert_not(kr_spatial_position(w, e, NULL, NULL));
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    /* Still refused once the index is reused. */
    kr_entity_t f = make_entity(w);
    cr_assert_eq(kr_entity_index(f), kr_entity_index(e));
    put(w, f, 3, 3);
    cr_assert_eq(kr_spatial_move(w, e, 2, 2), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_remove(w, e), KR_ERR_STALE_ENTITY);
    cr_assert_not(kr_spatial_position(w, e, NULL, NULL));
    cr_assert_eq(kr_spatial_count(w), 1);
    assert_cell(w, 3, 3, &f, 1);
    cr_assert_eq(kr_spatial_insert(w, KR_ENTITY_INVALID, 0, 0), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_insert(w, kr_entity_make(12345, 1), 0, 0), KR_ERR_STALE_ENTITY);
    kr_world_destroy(w);
}

Test(spatial, null_world)
{
    kr_entity_t out[4];
    size_t n = 7;
    kr_clear_error();
    cr_assert_eq(kr_spatial_insert(NULL, 1, 0, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_move(NULL, 1, 0, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_remove(NULL, 1), KR_ERR_INVALID_ARG);
#define NULL_WORLD_CASE(expr)                                  \
    do {                                                       \
        kr_clear_error();                                      \
        cr_assert(!(expr), #expr);                             \
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG, #expr); \
    } while (0)
    NULL_WORLD_CASE(kr_spatial_position(NULL, 1, NULL, NULL));
    NULL_WORLD_CASE(kr_spatial_cell_entities(NULL, (kr_cell_t){ 0, 0 }, &n));
    cr_assert_eq(n, 0);
    NULL_WORLD_CASE(kr_spatial_query_box(NULL, 0, 0, 1, 1, out, 4));
    NULL_WORLD_CASE(kr_spatial_query_radius(NULL, 0, 0, 1, out, 4));
    NULL_WORLD_CASE(kr_spatial_count(NULL));
    NULL_WORLD_CASE(kr_spatial_cell_count(NULL));
    kr_clear_error();
    kr_cell_t c = kr_spatial_cell_of(NULL, 5, 5);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_eq(c.x, 0);
    cr_assert_eq(c.y, 0);
#undef NULL_WORLD_CASE
}

Test(spatial, non_finite_and_out_of_range_input)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    double bad[] = { NAN, INFINITY, -INFINITY };
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(kr_spatial_insert(w, e, bad[i], 0), KR_ERR_INVALID_ARG);
        cr_assert_eq(kr_spatial_insert(w, e, 0, bad[i]), KR_ERR_INVALID_ARG);
    }
    cr_assert_eq(kr_spatial_count(w), 0);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    cr_assert_not(kr_spatial_position(w, e, NULL, NULL));

    put(w, e, 1.5, 1.5);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(kr_spatial_move(w, e, bad[i], 0), KR_ERR_INVALID_ARG);
        cr_assert_eq(kr_spatial_move(w, e, 0, bad[i]), KR_ERR_INVALID_ARG);
    }
    double x, y;
    cr_assert(kr_spatial_position(w, e, &x, &y));
    cr_assert_eq(x, 1.5);
    cr_assert_eq(y, 1.5);
    assert_cell(w, 1, 1, &e, 1);

    /* Cell indices must fit in int32. */
    cr_assert_eq(kr_spatial_move(w, e, 1e300, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_move(w, e, 2147483648.0, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_move(w, e, 0, -2147483649.0), KR_ERR_INVALID_ARG);
    assert_cell(w, 1, 1, &e, 1);
    kr_entity_t lo = make_entity(w), hi = make_entity(w);
    put(w, hi, 2147483647.5, 2147483647.0);
    put(w, lo, -2147483648.0, -2147483647.5);
    assert_cell(w, INT32_MAX, INT32_MAX, &hi, 1);
    assert_cell(w, INT32_MIN, INT32_MIN, &lo, 1);
    kr_entity_t out[4];
    cr_assert_eq(kr_spatial_query_box(w, -1e300, -1e300, 1e300, 1e300, out, 4), 3);
    cr_assert_eq(out[0], lo);
    cr_assert_eq(out[1], e);
    cr_assert_eq(out[2], hi);
    cr_assert_eq(kr_spatial_query_box(w, 2147483647.0, 2147483647.0, 1e300, 1e300, out, 4), 1);
    cr_assert_eq(out[0], hi);
    cr_assert_eq(kr_spatial_query_radius(w, -2147483648.0, -2147483648.0, 1.0, out, 4), 1);
    cr_assert_eq(out[0], lo);
    cr_assert_eq(kr_spatial_query_radius(w, 0, 0, 1e300, out, 4), 3);
    kr_clear_error();
    kr_cell_t c = kr_spatial_cell_of(w, 1e300, -1e300);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_eq(c.x, INT32_MAX);
    cr_assert_eq(c.y, INT32_MIN);
    kr_clear_error();
    kr_spatial_cell_of(w, NAN, 0);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);

    /* Queries with non-finite input, a negative radius, or no buffer. */
    for (size_t i = 0; i < 3; i++) {
        kr_clear_error();
        cr_assert_eq(kr_spatial_query_box(w, bad[i], 0, 1, 1, out, 4), 0);
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
        kr_clear_error();
        cr_assert_eq(kr_spatial_query_box(w, 0, 0, 1, bad[i], out, 4), 0);
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
        kr_clear_error();
        cr_assert_eq(kr_spatial_query_radius(w, 1.5, bad[i], 1, out, 4), 0);
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
        kr_clear_error();
        cr_assert_eq(kr_spatial_query_radius(w, 1.5, 1.5, bad[i], out, 4), 0);
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    }
    kr_clear_error();
    cr_assert_eq(kr_spatial_query_radius(w, 1.5, 1.5, -1.0, out, 4), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    kr_clear_error();
    cr_assert_eq(kr_spatial_query_box(w, 0, 0, 2, 2, NULL, 4), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    kr_world_destroy(w);
}

Test(spatial, remove_then_reinsert)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    put(w, e, 4.5, 4.5);
    cr_assert_eq(kr_spatial_insert(w, e, 0, 0), KR_ERR_EXISTS);
    assert_cell(w, 4, 4, &e, 1);
    cr_assert_eq(kr_spatial_remove(w, e), KR_OK);
    cr_assert_not(kr_spatial_position(w, e, NULL, NULL));
    cr_assert_eq(kr_spatial_count(w), 0);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    cr_assert_eq(cell_size_of(w, 4, 4), 0);
    cr_assert_eq(kr_spatial_remove(w, e), KR_ERR_STATE);
    cr_assert_eq(kr_spatial_move(w, e, 1, 1), KR_ERR_STATE);
    cr_assert_eq(kr_spatial_count(w), 0);

    put(w, e, -7.25, 2.0);
    assert_cell(w, -8, 2, &e, 1);
    cr_assert_eq(kr_spatial_count(w), 1);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    double x, y;
    cr_assert(kr_spatial_position(w, e, &x, &y));
    cr_assert_eq(x, -7.25);
    cr_assert_eq(y, 2.0);
    /* And destroy after the round trip. */
    cr_assert_eq(kr_entity_destroy(w, e), KR_OK);
    cr_assert_eq(kr_spatial_count(w), 0);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    kr_world_destroy(w);
}

Test(spatial, cells_released)
{
    kr_world_t *w = make_world(1.0);
    enum { N = 1000 };
    kr_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = make_entity(w);
        put(w, e[i], i % 37 + 0.5, i / 37 - 10.5);
    }
    cr_assert_eq(kr_spatial_cell_count(w), N);
    for (int i = 0; i < N; i++) cr_assert_eq(kr_spatial_remove(w, e[i]), KR_OK);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    cr_assert_eq(kr_spatial_count(w), 0);
    cr_assert_eq(kr_spatial_query_box(w, -1e9, -1e9, 1e9, 1e9, NULL, 0), 0);
    for (int i = 0; i < N; i++) put(w, e[i], 0.5, 0.5);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    cr_assert_eq(cell_size_of(w, 0, 0), N);
    for (int i = 0; i < N; i += 2) cr_assert_eq(kr_entity_destroy(w, e[i]), KR_OK);
    cr_assert_eq(cell_size_of(w, 0, 0), N / 2);
    for (int i = 1; i < N; i += 2) cr_assert_eq(kr_spatial_move(w, e[i], 100.5, 0.5), KR_OK);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    cr_assert_eq(cell_size_of(w, 100, 0), N / 2);
    cr_assert_eq(cell_size_of(w, 0, 0), 0);
    kr_world_destroy(w);   /* spatial entities still in: freed with the world */
}

/* Memory follows occupied cells: an entity walking through many cells
 * keeps reusing one cell record. */
Test(spatial, walk_reuses_cell_records)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t a = make_entity(w), b = make_entity(w);
    put(w, a, 0.5, 0.5);
    put(w, b, -0.5, 0.5);
    for (int i = 1; i < 100000; i++) {
        cr_assert_eq(kr_spatial_move(w, a, i + 0.5, (i * 7) % 1000 + 0.5), KR_OK);
        cr_assert_eq(kr_spatial_move(w, b, -i - 0.5, 0.5), KR_OK);
    }
    cr_assert_eq(kr_spatial_cell_count(w), 2);
    /* Emptied cells are dropped by the rebuilds: the table stays its least size. */
    cr_assert_eq(w->spatial.table_capacity, 16, "the cell table grew to %u", w->spatial.table_capacity);
    cr_assert_leq(w->spatial.table_used, 12);
    kr_world_destroy(w);
}

/* Every entity's entry points at its cell and slot, and its generation is
 * the hash's: what moves rely on (checked after rebuilds). */
static void assert_reverse_index(const kr_world_t *w)
{
    const kr__spatial_state_t *s = &w->spatial;
    size_t members = 0;
    uint32_t occupied = 0;
    for (uint32_t c = 0; c < s->grid_cells + s->table_capacity; c++) {
        const kr__spatial_cell_rec_t *cell = kr__cell_at(s, c);
        occupied += cell->count != 0;
        for (uint32_t k = 0; k < cell->count; k++) {
            kr_entity_t e = kr__cell_members(cell)[k];
            const kr__spatial_entry_t *en = &s->entries[kr_entity_index(e)];
            cr_assert(en->cell == c && en->slot == k, "entity %u: cell %u slot %u, found in %u slot %u",
                      kr_entity_index(e), en->cell, en->slot, c, k);
            cr_assert(en->cx == cell->cx && en->cy == cell->cy);
            cr_assert_eq(s->gens[kr_entity_index(e)], kr_entity_generation(e));
            members++;
        }
    }
    cr_assert_eq(members, s->members);
    cr_assert_eq(occupied, s->live_cells);
}

/* A move within the cell stores the position and nothing else: the slot
 * order stays, in the table and in the grid. */
Test(spatial, same_cell_moves_keep_the_order)
{
    for (int grid = 0; grid < 2; grid++) {
        kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, grid ? 8 : 0, grid ? 8 : 0 } });
        cr_assert_not_null(w);
        kr_entity_t e[3] = { make_entity(w), make_entity(w), make_entity(w) };
        for (int i = 0; i < 3; i++) put(w, e[i], 2.5, 3.5);
        cr_assert_eq(kr_spatial_move(w, e[0], 2.0, 3.999), KR_OK);
        cr_assert_eq(kr_spatial_move(w, e[1], 2.999, 3.0), KR_OK);
        assert_cell(w, 2, 3, e, 3);
        double x, y;
        cr_assert(kr_spatial_position(w, e[0], &x, &y));
        cr_assert(x == 2.0 && y == 3.999);
        cr_assert(kr_spatial_position(w, e[1], &x, &y));
        cr_assert(x == 2.999 && y == 3.0);
        cr_assert_eq(kr_spatial_cell_count(w), 1);
        /* The first step out is a cell change. */
        cr_assert_eq(kr_spatial_move(w, e[0], 3.0, 3.5), KR_OK);
        assert_cell(w, 2, 3, (kr_entity_t[]){ e[2], e[1] }, 2);
        assert_cell(w, 3, 3, e, 1);
        assert_reverse_index(w);
        kr_world_destroy(w);
    }
}

/* The fast move checks the handle against the hash's generations; what it
 * does not take goes through the checked path: a quotient of exactly
 * -2^31 (a valid cell), a handle of generation 0, an entity not in the hash
 * or destroyed, positions off the int32 cells. */
Test(spatial, moves_the_fast_path_leaves_to_the_checked_one)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t a = make_entity(w), b = make_entity(w), out = make_entity(w);
    put(w, a, 0.5, 0.5);
    put(w, b, 0.5, 0.5);
    cr_assert_eq(kr_spatial_move(w, a, -2147483648.0, 0.5), KR_OK, "%s", kr_last_error());
    assert_cell(w, INT32_MIN, 0, &a, 1);
    cr_assert_eq(kr_spatial_move(w, a, -2147483648.0, -2147483648.0), KR_OK);
    assert_cell(w, INT32_MIN, INT32_MIN, &a, 1);
    cr_assert_eq(kr_spatial_move(w, a, -2147483647.5, -2147483648.0), KR_OK);
    assert_cell(w, INT32_MIN, INT32_MIN, &a, 1);
    cr_assert_eq(kr_spatial_move(w, a, 1.5, 0.5), KR_OK);
    assert_cell(w, 1, 0, &a, 1);
    /* Generation 0 is no entity, even where the hash's generation is 0. */
    cr_assert_eq(kr_spatial_move(w, kr_entity_make(kr_entity_index(out), 0), 1, 1), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, KR_ENTITY_INVALID, 1, 1), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, kr_entity_make(kr_entity_index(a), 0), 1, 1), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, kr_entity_make(1u << 30, 1), 1, 1), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, out, 1, 1), KR_ERR_STATE);
    cr_assert_eq(kr_spatial_remove(w, b), KR_OK);
    cr_assert_eq(kr_spatial_move(w, b, 1, 1), KR_ERR_STATE, "removed: the hash's generation was cleared");
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    cr_assert_eq(kr_spatial_move(w, a, 1, 1), KR_ERR_STALE_ENTITY);
    kr_entity_t again = make_entity(w);   /* a's index, the next generation */
    cr_assert_eq(kr_entity_index(again), kr_entity_index(a));
    put(w, again, 5.5, 5.5);
    cr_assert_eq(kr_spatial_move(w, a, 1, 1), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_spatial_move(w, again, 1e10, 1), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_move(w, again, -3e9, 1), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_move(w, again, 1, NAN), KR_ERR_INVALID_ARG);
    assert_cell(w, 5, 5, &again, 1);
    assert_reverse_index(w);
    kr_world_destroy(w);
}

/* The cell table: an emptied cell keeps its slot and is taken again; when
 * a new cell would make used slots pass 3/4, the table is rebuilt from the
 * occupied cells (growing only if they need it), members in their order
 * and every entry pointing at its cell's new slot. */
Test(spatial, table_rebuilt_at_three_quarters)
{
    kr_world_t *w = make_world(1.0);
    const kr__spatial_state_t *s = &w->spatial;
    enum { N = 40 };
    kr_entity_t e[N];
    for (int i = 0; i < N; i++) e[i] = make_entity(w);
    /* Seven in one cell, spilled to the heap, in a known order. */
    for (int i = 0; i < 7; i++) put(w, e[i], -0.5, -0.5);
    cr_assert_eq(s->table_capacity, 16);
    cr_assert_eq(s->table_used, 1);
    /* Cells (i, 0) for i in 1..11: 12 used, the most 16 slots take. */
    for (int i = 1; i <= 11; i++) put(w, e[6 + i], i + 0.5, 0.5);
    cr_assert_eq(s->table_used, 12);
    cr_assert_eq(s->table_capacity, 16);
    /* A 13th cell: the table is rebuilt first, and grows (12 occupied
     * cells need more than 16 slots at half use); then the cell left
     * empty stays in its slot. */
    cr_assert_eq(kr_spatial_move(w, e[7], 1.5, 7.5), KR_OK);
    cr_assert_eq(s->table_capacity, 32);
    cr_assert_eq(s->table_used, 13);
    cr_assert_eq(kr_spatial_cell_count(w), 12);
    assert_reverse_index(w);
    /* Emptying a cell keeps its slot; coming back takes the same slot. */
    uint32_t slot = s->entries[kr_entity_index(e[8])].cell;
    cr_assert_eq(kr_spatial_move(w, e[8], 2.5, 9.5), KR_OK);
    cr_assert_eq(s->table_used, 14, "cell (2, 0) emptied, still in the table");
    cr_assert_eq(kr__cell_at(s, slot)->count, 0);
    cr_assert_eq(kr_spatial_move(w, e[8], 2.25, 0.25), KR_OK);
    cr_assert_eq(s->entries[kr_entity_index(e[8])].cell, slot, "back into its old slot");
    cr_assert_eq(s->table_used, 14);
    /* Walk one entity through fresh cells: emptied cells pile up until
     * the 25th used slot of 32, then a rebuild drops them, at the same size. */
    uint32_t rebuilds = 0, used = s->table_used;
    for (int step = 1; step <= 60; step++) {
        cr_assert_eq(kr_spatial_move(w, e[20 - 4], 100.5 + step, 0.5), KR_OK);
        if (s->table_used < used) {
            rebuilds++;
            cr_assert_eq(s->table_capacity, 32);
            cr_assert_eq(s->table_used, kr_spatial_cell_count(w) + 1, "occupied cells remain, and the one just left");
            assert_reverse_index(w);
        } else {
            cr_assert_leq((uint64_t)s->table_used * 4, (uint64_t)s->table_capacity * 3);
        }
        used = s->table_used;
    }
    cr_assert_geq(rebuilds, 2);
    assert_cell(w, -1, -1, e, 7);
    /* Many occupied cells: the table grows and keeps everything. */
    for (int i = 21; i < N; i++) put(w, e[i], 0.5, 50.5 + i);
    for (int i = 21; i < N; i++) put(w, make_entity(w), 0.5, 50.5 + i);
    cr_assert_leq((uint64_t)s->table_used * 4, (uint64_t)s->table_capacity * 3);
    assert_reverse_index(w);
    assert_cell(w, -1, -1, e, 7);
    kr_entity_t got[64];
    cr_assert_eq(kr_spatial_query_box(w, -1, -1, 0, 0, got, 64), 7);
    for (int i = 0; i < 7; i++) cr_assert_eq(got[i], e[i]);
    kr_world_destroy(w);
}

Test(spatial, entries_grow_to_high_indices)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t last = 0;
    for (int i = 0; i < 5000; i++) last = make_entity(w);
    put(w, last, 1, 1);
    kr_entity_t first = kr_entity_make(0, 1);
    put(w, first, 1, 1);
    assert_cell(w, 1, 1, (kr_entity_t[]){ last, first }, 2);
    kr_world_destroy(w);
}

/* ---- random operations against a brute-force model ---------------------- */

#define RN 3000          /* entities */
#define RCELLS 4096      /* model cells: enough for RN distinct ones */

typedef struct model_cell {
    int32_t cx, cy;
    kr_entity_t *members;
    uint32_t count, capacity;
} model_cell_t;

typedef struct model {
    kr_entity_t ids[RN];
    bool in[RN];
    double x[RN], y[RN];
    model_cell_t *cells;   /* RCELLS */
    uint32_t cell_count;   /* slots used, empty ones included */
    int slot_of[4 * RN];   /* entity index -> i */
    double size;
    uint64_t rng;
} model_t;

static uint64_t next_u64(model_t *m)
{
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(model_t *m) { return (double)(next_u64(m) >> 11) / 9007199254740992.0; }

/* Half the coordinates on a quarter lattice (exact cell edges and exact
 * distances), half arbitrary doubles; all in [-60, 60). */
static double coord(model_t *m)
{
    if (next_u64(m) & 1) return (double)((int64_t)(next_u64(m) % 480) - 240) * 0.25;
    return uniform(m) * 120.0 - 60.0;
}

static model_cell_t *model_cell(model_t *m, int32_t cx, int32_t cy, bool create)
{
    model_cell_t *empty = NULL;
    for (uint32_t i = 0; i < m->cell_count; i++) {
        model_cell_t *c = &m->cells[i];
        if (c->count && c->cx == cx && c->cy == cy) return c;
        if (!c->count && !empty) empty = c;
    }
    if (!create) return NULL;
    if (!empty) {
        cr_assert_lt(m->cell_count, RCELLS);
        empty = &m->cells[m->cell_count++];
    }
    empty->cx = cx;
    empty->cy = cy;
    empty->count = 0;
    return empty;
}

static int32_t mfloor(const model_t *m, double v) { return (int32_t)floor(v / m->size); }

static void model_unlink(model_t *m, int i)
{
    model_cell_t *c = model_cell(m, mfloor(m, m->x[i]), mfloor(m, m->y[i]), false);
    cr_assert_not_null(c);
    for (uint32_t k = 0; k < c->count; k++)
        if (c->members[k] == m->ids[i]) {
            c->members[k] = c->members[--c->count];
            m->in[i] = false;
            return;
        }
    cr_assert_fail("model: entity not in its cell");
}

static void model_link(model_t *m, int i, double x, double y)
{
    model_cell_t *c = model_cell(m, mfloor(m, x), mfloor(m, y), true);
    if (c->count == c->capacity) {
        c->capacity = c->capacity ? c->capacity * 2 : 8;
        c->members = realloc(c->members, c->capacity * sizeof *c->members);
        cr_assert_not_null(c->members);
    }
    c->members[c->count++] = m->ids[i];
    m->x[i] = x;
    m->y[i] = y;
    m->in[i] = true;
}

/* A move keeps the slot when the cell is unchanged. */
static void model_move(model_t *m, int i, double x, double y)
{
    if (mfloor(m, x) == mfloor(m, m->x[i]) && mfloor(m, y) == mfloor(m, m->y[i])) {
        m->x[i] = x;
        m->y[i] = y;
        return;
    }
    model_unlink(m, i);
    model_link(m, i, x, y);
}

static int cmp_cell_ptr(const void *a, const void *b)
{
    const model_cell_t *x = *(model_cell_t *const *)a, *y = *(model_cell_t *const *)b;
    if (x->cy != y->cy) return x->cy < y->cy ? -1 : 1;
    if (x->cx != y->cx) return x->cx < y->cx ? -1 : 1;
    return 0;
}

static double mpos(const model_t *m, kr_entity_t e, int axis)
{
    int i = m->slot_of[kr_entity_index(e)];
    cr_assert_eq(m->ids[i], e, "model: unknown entity");
    return axis ? m->y[i] : m->x[i];
}

static kr_entity_t model_new(kr_world_t *w, model_t *m, int i)
{
    kr_entity_t e = make_entity(w);
    cr_assert_lt(kr_entity_index(e), 4 * RN);
    m->ids[i] = e;
    m->slot_of[kr_entity_index(e)] = i;
    return e;
}

/* Brute force: every occupied cell in (cy, cx) order, members in slot order,
 * each tested against the box (radius < 0) or the disc. */
static size_t model_query(const model_t *m, double x0, double y0, double x1, double y1, double px,
                          double py, double r, kr_entity_t *out)
{
    static model_cell_t *order[RCELLS];
    size_t nc = 0, n = 0;
    for (uint32_t i = 0; i < m->cell_count; i++)
        if (m->cells[i].count) order[nc++] = &m->cells[i];
    qsort(order, nc, sizeof *order, cmp_cell_ptr);
    for (size_t i = 0; i < nc; i++)
        for (uint32_t k = 0; k < order[i]->count; k++) {
            kr_entity_t e = order[i]->members[k];
            double x = mpos(m, e, 0), y = mpos(m, e, 1);
            bool hit;
            if (r < 0) {
                hit = x >= x0 && x <= x1 && y >= y0 && y <= y1;
            } else {
                double dx = x - px, dy = y - py;
                hit = dx * dx + dy * dy <= r * r;
            }
            if (hit) out[n++] = e;
        }
    return n;
}

static void check_against_model(kr_world_t *w, model_t *m)
{
    size_t in = 0, cells = 0;
    for (int i = 0; i < RN; i++) {
        double x, y;
        bool has = kr_spatial_position(w, m->ids[i], &x, &y);
        cr_assert_eq(has, m->in[i], "entity %d membership", i);
        if (!has) continue;
        in++;
        cr_assert_eq(x, m->x[i]);
        cr_assert_eq(y, m->y[i]);
    }
    for (uint32_t c = 0; c < m->cell_count; c++) {
        const model_cell_t *mc = &m->cells[c];
        if (!mc->count) continue;
        cells++;
        assert_cell(w, mc->cx, mc->cy, mc->members, mc->count);
    }
    cr_assert_eq(kr_spatial_count(w), in);
    cr_assert_eq(kr_spatial_cell_count(w), cells);
}

static void check_queries(kr_world_t *w, model_t *m, int rounds)
{
    static kr_entity_t want[RN], got[RN];
    for (int q = 0; q < rounds; q++) {
        size_t nw, ng;
        double x0 = coord(m), y0 = coord(m);
        /* Mostly small boxes (cell lookups), sometimes huge ones (scan). */
        double span = (q % 4 == 0) ? 200.0 * uniform(m) : 12.0 * uniform(m);
        if (q % 3 == 0) span = floor(span * 4) / 4;
        double x1 = x0 + span, y1 = y0 + span * uniform(m);
        nw = model_query(m, x0, y0, x1, y1, 0, 0, -1, want);
        ng = kr_spatial_query_box(w, x0, y0, x1, y1, got, RN);
        cr_assert_eq(ng, nw, "box (%g, %g)-(%g, %g): %zu results, want %zu", x0, y0, x1, y1, ng, nw);
        cr_assert_arr_eq(got, want, nw * sizeof *want, "box (%g, %g)-(%g, %g) order", x0, y0, x1, y1);

        double r = (q % 4 == 0) ? 100.0 * uniform(m) : 8.0 * uniform(m);
        if (q % 2 == 0) r = floor(r * 4) / 4;
        nw = model_query(m, 0, 0, 0, 0, x0, y0, r, want);
        ng = kr_spatial_query_radius(w, x0, y0, r, got, RN);
        cr_assert_eq(ng, nw, "radius (%g, %g) r %g: %zu results, want %zu", x0, y0, r, ng, nw);
        cr_assert_arr_eq(got, want, nw * sizeof *want, "radius (%g, %g) r %g order", x0, y0, r);
    }
}

static void random_run(double size, uint64_t seed)
{
    model_t *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->cells = calloc(RCELLS, sizeof *m->cells);
    cr_assert_not_null(m->cells);
    m->size = size;
    m->rng = seed;
    kr_world_t *w = make_world(size);
    for (int i = 0; i < RN; i++) {
        model_new(w, m, i);
        if (i % 4 == 0) continue;
        double x = coord(m), y = coord(m);
        put(w, m->ids[i], x, y);
        model_link(m, i, x, y);
    }
    check_against_model(w, m);
    check_queries(w, m, 50);

    for (int round = 0; round < 20; round++) {
        for (int op = 0; op < 2000; op++) {
            int i = (int)(next_u64(m) % RN);
            unsigned kind = (unsigned)(next_u64(m) % 100);
            if (!m->in[i]) {
                if (kind < 10) {   /* destroy and replace */
                    cr_assert_eq(kr_entity_destroy(w, m->ids[i]), KR_OK);
                    model_new(w, m, i);
                } else if (kind < 80) {
                    double x = coord(m), y = coord(m);
                    put(w, m->ids[i], x, y);
                    model_link(m, i, x, y);
                } else {
                    cr_assert_eq(kr_spatial_move(w, m->ids[i], 0, 0), KR_ERR_STATE);
                }
            } else if (kind < 60) {   /* a short step: often the same cell */
                double x = m->x[i] + (uniform(m) - 0.5) * size, y = m->y[i] + (uniform(m) - 0.5) * size;
                cr_assert_eq(kr_spatial_move(w, m->ids[i], x, y), KR_OK);
                model_move(m, i, x, y);
            } else if (kind < 80) {   /* a jump */
                double x = coord(m), y = coord(m);
                cr_assert_eq(kr_spatial_move(w, m->ids[i], x, y), KR_OK);
                model_move(m, i, x, y);
            } else if (kind < 90) {
                cr_assert_eq(kr_spatial_remove(w, m->ids[i]), KR_OK);
                model_unlink(m, i);
            } else {   /* destroy in the hash, replace */
                kr_entity_t old = m->ids[i];
                cr_assert_eq(kr_entity_destroy(w, old), KR_OK);
                model_unlink(m, i);
                model_new(w, m, i);
                cr_assert_eq(kr_spatial_move(w, old, 0, 0), KR_ERR_STALE_ENTITY);
            }
        }
        check_against_model(w, m);
        check_queries(w, m, 30);
    }

    /* Empty it: every cell record goes. */
    for (int i = 0; i < RN; i++)
        if (m->in[i]) {
            cr_assert_eq(kr_spatial_remove(w, m->ids[i]), KR_OK);
            model_unlink(m, i);
        }
    check_against_model(w, m);
    cr_assert_eq(kr_spatial_cell_count(w), 0);
    cr_assert_eq(kr_spatial_count(w), 0);
    kr_world_destroy(w);
    for (uint32_t c = 0; c < m->cell_count; c++) free(m->cells[c].members);
    free(m->cells);
    free(m);
}

Test(spatial, random_moves_match_brute_force_unit_cells, .timeout = 60) { random_run(1.0, 1); }
Test(spatial, random_moves_match_brute_force_wide_cells, .timeout = 60) { random_run(2.5, 2); }
Test(spatial, random_moves_match_brute_force_odd_cells, .timeout = 60) { random_run(0.3, 3); }

/* ---- the dense grid of a bounded world ----------------------------------- */

Test(spatial_grid, grid_and_hash_agree_with_brute_force)
{
    /* Two worlds, one with bounds covering part of the area: every
     * operation must give identical answers; positions outside the bounds
     * go through the hash map of the grid world. */
    kr_world_t *plain = kr_world_create(&(kr_world_desc_t){ .spatial_cell_size = 2.0 });
    kr_world_t *grid = kr_world_create(&(kr_world_desc_t){ .spatial_cell_size = 2.0,
                                                           .spatial_bounds = { -10, -10, 30, 20 } });
    cr_assert_not_null(grid, "%s", kr_last_error());
    enum { N = 800 };
    kr_entity_t a[N], b[N];
    uint64_t s = 99;
    for (int i = 0; i < N; i++) {
        a[i] = kr_entity_create(plain);
        b[i] = kr_entity_create(grid);
    }
    for (int step = 0; step < 40; step++) {
        for (int i = 0; i < N; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double x = (double)(s >> 40) / (double)(1 << 24) * 60 - 20;
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            double y = (double)(s >> 40) / (double)(1 << 24) * 50 - 20;
            if (step == 0) {
                cr_assert_eq(kr_spatial_insert(plain, a[i], x, y), KR_OK);
                cr_assert_eq(kr_spatial_insert(grid, b[i], x, y), KR_OK);
            } else if ((s >> 7) % 13 == 0) {
                cr_assert_eq(kr_spatial_remove(plain, a[i]), KR_OK);
                cr_assert_eq(kr_spatial_remove(grid, b[i]), KR_OK);
                cr_assert_eq(kr_spatial_insert(plain, a[i], x, y), KR_OK);
                cr_assert_eq(kr_spatial_insert(grid, b[i], x, y), KR_OK);
            } else {
                cr_assert_eq(kr_spatial_move(plain, a[i], x, y), KR_OK);
                cr_assert_eq(kr_spatial_move(grid, b[i], x, y), KR_OK);
            }
        }
        cr_assert_eq(kr_spatial_cell_count(plain), kr_spatial_cell_count(grid));
        /* Same index in both worlds, so results compare by index. */
        kr_entity_t ra[N], rb[N];
        size_t na = kr_spatial_query_box(plain, -25, -25, 45, 35, ra, N);
        size_t nb = kr_spatial_query_box(grid, -25, -25, 45, 35, rb, N);
        cr_assert_eq(na, N);
        cr_assert_eq(na, nb);
        for (size_t i = 0; i < na; i++) cr_assert_eq(kr_entity_index(ra[i]), kr_entity_index(rb[i]));
        na = kr_spatial_query_radius(plain, 5, 5, 9, ra, N);
        nb = kr_spatial_query_radius(grid, 5, 5, 9, rb, N);
        cr_assert_eq(na, nb);
        for (size_t i = 0; i < na; i++) cr_assert_eq(kr_entity_index(ra[i]), kr_entity_index(rb[i]));
        for (int cy = -12; cy < 16; cy += 3)
            for (int cx = -12; cx < 20; cx += 3) {
                size_t ca, cb;
                const kr_entity_t *ea = kr_spatial_cell_entities(plain, (kr_cell_t){ cx, cy }, &ca);
                const kr_entity_t *eb = kr_spatial_cell_entities(grid, (kr_cell_t){ cx, cy }, &cb);
                cr_assert_eq(ca, cb);
                for (size_t i = 0; i < ca; i++) cr_assert_eq(kr_entity_index(ea[i]), kr_entity_index(eb[i]));
            }
    }
    for (int i = 0; i < N; i += 2) {
        kr_entity_destroy(plain, a[i]);
        kr_entity_destroy(grid, b[i]);
    }
    cr_assert_eq(kr_spatial_count(grid), N / 2);
    cr_assert_eq(kr_spatial_cell_count(plain), kr_spatial_cell_count(grid));
    for (int i = 1; i < N; i += 2) kr_spatial_remove(grid, b[i]);
    cr_assert_eq(kr_spatial_cell_count(grid), 0, "emptied grid cells count as released");
    kr_world_destroy(plain);
    kr_world_destroy(grid);
}

Test(spatial_grid, crowded_grid_cells_spill_to_the_heap_and_back)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 4, 4 } });
    kr_entity_t e[50];
    for (int i = 0; i < 50; i++) {
        e[i] = kr_entity_create(w);
        cr_assert_eq(kr_spatial_insert(w, e[i], 1.5, 1.5), KR_OK);
    }
    size_t n;
    const kr_entity_t *in = kr_spatial_cell_entities(w, (kr_cell_t){ 1, 1 }, &n);
    cr_assert_eq(n, 50);
    for (int i = 0; i < 50; i++) cr_assert_eq(in[i], e[i]);
    for (int i = 0; i < 50; i++) cr_assert_eq(kr_spatial_move(w, e[i], 2.5, 1.5), KR_OK);
    cr_assert_null(kr_spatial_cell_entities(w, (kr_cell_t){ 1, 1 }, &n));
    in = kr_spatial_cell_entities(w, (kr_cell_t){ 2, 1 }, &n);
    cr_assert_eq(n, 50);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    kr_world_destroy(w);
}

/* Moves between grid cells with room (ecs/spatial.c, grid_move): the
 * leaver's slot goes to the cell's last member, the occupied-cell count
 * follows cells that fill and empty, and a crowded cell that empties gives
 * its heap buffer back and takes members again. */
Test(spatial_grid, moves_between_grid_cells_keep_slots_and_counts)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 8, 8 } });
    cr_assert_not_null(w);
    enum { N = 6 };
    kr_entity_t e[N];
    for (int i = 0; i < N; i++) {
        e[i] = make_entity(w);
        put(w, e[i], 1.5, 1.5);
    }
    const kr__spatial_cell_rec_t *crowded = &w->spatial.grid[1 * w->spatial.gw + 1];
    cr_assert_not_null(crowded->heap, "six members spill to the heap");
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    /* A middle member leaves: the last one takes its slot. */
    cr_assert_eq(kr_spatial_move(w, e[1], 3.5, 3.5), KR_OK);
    assert_cell(w, 1, 1, (kr_entity_t[]){ e[0], e[5], e[2], e[3], e[4] }, 5);
    assert_cell(w, 3, 3, (kr_entity_t[]){ e[1] }, 1);
    cr_assert_eq(kr_spatial_cell_count(w), 2);
    /* Into an occupied cell: no new cell counted. */
    cr_assert_eq(kr_spatial_move(w, e[5], 3.25, 3.75), KR_OK);
    assert_cell(w, 3, 3, (kr_entity_t[]){ e[1], e[5] }, 2);
    assert_cell(w, 1, 1, (kr_entity_t[]){ e[0], e[4], e[2], e[3] }, 4);
    cr_assert_eq(kr_spatial_cell_count(w), 2);
    /* The rest leave one by one, each to a cell of its own. */
    for (int i = 0; i < N; i++) {
        if (i == 1 || i == 5) continue;
        cr_assert_eq(kr_spatial_move(w, e[i], 5.5, 0.5 + i), KR_OK);
    }
    cr_assert_eq(cell_size_of(w, 1, 1), 0);
    cr_assert_null(crowded->heap, "an emptied grid cell gives its heap buffer back");
    cr_assert_eq(crowded->capacity, KR__CELL_INLINE);
    cr_assert_eq(kr_spatial_cell_count(w), 5);
    /* Moves within a cell change no cell; back into the emptied cell. */
    cr_assert_eq(kr_spatial_move(w, e[0], 5.75, 0.25), KR_OK);
    cr_assert_eq(kr_spatial_cell_count(w), 5);
    for (int i = 0; i < N; i++) cr_assert_eq(kr_spatial_move(w, e[i], 1.5, 1.5), KR_OK);
    assert_cell(w, 1, 1, e, N);
    cr_assert_eq(kr_spatial_cell_count(w), 1);
    double x, y;
    cr_assert(kr_spatial_position(w, e[3], &x, &y));
    cr_assert_eq(x, 1.5);
    cr_assert_eq(y, 1.5);
    kr_world_destroy(w);
}

/* ---- kr_spatial_move_n ---------------------------------------------------- */

static uint64_t batch_rng = 0x9e3779b97f4a7c15ull;
static double batch_unit(void)
{
    batch_rng ^= batch_rng << 13;
    batch_rng ^= batch_rng >> 7;
    batch_rng ^= batch_rng << 17;
    return (double)(batch_rng >> 11) * 0x1p-53;
}

/* Both worlds hold the same cells, members in the same slot order, and
 * every entity at the same position. */
static void assert_same_hash(const kr_world_t *a, const kr_world_t *b, const kr_entity_t *e, int n,
                             int32_t lo, int32_t hi)
{
    cr_assert_eq(kr_spatial_count(a), kr_spatial_count(b));
    cr_assert_eq(kr_spatial_cell_count(a), kr_spatial_cell_count(b));
    for (int32_t cy = lo; cy < hi; cy++)
        for (int32_t cx = lo; cx < hi; cx++) {
            size_t na = 0, nb = 0;
            const kr_entity_t *ma = kr_spatial_cell_entities(a, (kr_cell_t){ cx, cy }, &na);
            const kr_entity_t *mb = kr_spatial_cell_entities(b, (kr_cell_t){ cx, cy }, &nb);
            cr_assert_eq(na, nb, "cell (%d, %d): %zu members against %zu", cx, cy, na, nb);
            for (size_t i = 0; i < na; i++) cr_assert_eq(ma[i], mb[i], "cell (%d, %d) slot %zu", cx, cy, i);
        }
    for (int i = 0; i < n; i++) {
        double ax, ay, bx, by;
        bool ina = kr_spatial_position(a, e[i], &ax, &ay), inb = kr_spatial_position(b, e[i], &bx, &by);
        cr_assert_eq(ina, inb);
        if (ina) cr_assert(ax == bx && ay == by, "entity %d at (%g, %g) against (%g, %g)", i, ax, ay, bx, by);
    }
}

/* Batches of moves give what the same moves one call at a time give: on a
 * world with a dense grid over part of the area (so moves go grid to grid,
 * grid to table and back), and on one without; with crowded cells, moves
 * within a cell, an entity moved twice in one batch, and the cell table
 * rebuilt in the middle of a batch. */
static void batch_matches_single(const double bounds[4])
{
    enum { N = 3000, BATCH = 700, ROUNDS = 12, SIDE = 40 };
    kr_world_desc_t desc = { .spatial_cell_size = 1.0 };
    memcpy(desc.spatial_bounds, bounds, sizeof desc.spatial_bounds);
    kr_world_t *one = kr_world_create(&desc), *many = kr_world_create(&desc);
    cr_assert(one && many, "%s", kr_last_error());
    static kr_entity_t e[N], pick[BATCH];
    static double x[BATCH], y[BATCH];
    for (int i = 0; i < N; i++) {
        e[i] = make_entity(one);
        cr_assert_eq(make_entity(many), e[i]);
        /* A tenth of them crowd into four cells. */
        double px = i % 10 ? batch_unit() * SIDE : 3.5 + i % 4, py = i % 10 ? batch_unit() * SIDE : 7.5;
        put(one, e[i], px, py);
        put(many, e[i], px, py);
    }
    int rebuilt = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* Later rounds spread the entities over ever more cells, so the
         * table fills up and is rebuilt during a batch. */
        double spread = SIDE * (1 + r);
        for (int i = 0; i < BATCH; i++) {
            pick[i] = e[(size_t)(batch_unit() * N)];
            double step = i % 3 ? 0.4 : spread;
            double px, py;
            cr_assert(kr_spatial_position(one, pick[i], &px, &py));
            x[i] = px + (batch_unit() - 0.5) * step;
            y[i] = py + (batch_unit() - 0.5) * step;
        }
        pick[BATCH - 1] = pick[0]; /* moved twice: the second move wins */
        for (int i = 0; i < BATCH; i++)
            cr_assert_eq(kr_spatial_move(one, pick[i], x[i], y[i]), KR_OK, "%s", kr_last_error());
        size_t moved = 0;
        const kr__spatial_cell_rec_t *table = many->spatial.table;
        cr_assert_eq(kr_spatial_move_n(many, BATCH, pick, x, y, &moved), KR_OK, "%s", kr_last_error());
        rebuilt += many->spatial.table != table;
        cr_assert_eq(moved, BATCH);
        assert_same_hash(one, many, e, N, -SIDE * ROUNDS, SIDE * ROUNDS);
    }
    cr_assert_geq(rebuilt, 2, "the cell table was rebuilt during %d batches", rebuilt);
    kr_world_destroy(one);
    kr_world_destroy(many);
}

Test(spatial, move_n_matches_single_moves_without_a_grid, .timeout = 60)
{
    batch_matches_single((double[4]){ 0, 0, 0, 0 });
}

Test(spatial_grid, move_n_matches_single_moves_on_and_off_the_grid, .timeout = 60)
{
    batch_matches_single((double[4]){ 0, 0, 30, 30 });
}

/* A batch stops at its first failing move, with that move's error; the
 * moves before it are done, those after it are not. */
Test(spatial, move_n_stops_at_the_first_failure)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 10, 10 } });
    kr_entity_t e[6];
    for (int i = 0; i < 6; i++) {
        e[i] = make_entity(w);
        put(w, e[i], 0.5, 0.5);
    }
    kr_entity_t gone = make_entity(w);
    put(w, gone, 1.5, 1.5);
    cr_assert_eq(kr_entity_destroy(w, gone), KR_OK);
    kr_entity_t batch[5] = { e[0], e[1], gone, e[3], e[4] };
    double xs[5] = { 5.5, 6.5, 7.5, 8.5, 9.5 }, ys[5] = { 5.5, 5.5, 5.5, 5.5, 5.5 };
    size_t moved = 99;
    cr_assert_eq(kr_spatial_move_n(w, 5, batch, xs, ys, &moved), KR_ERR_STALE_ENTITY);
    cr_assert_eq(moved, 2);
    assert_cell(w, 5, 5, &e[0], 1);
    assert_cell(w, 6, 5, &e[1], 1);
    assert_cell(w, 0, 0, (kr_entity_t[]){ e[5], e[4], e[2], e[3] }, 4);
    /* A position off the cells: refused as kr_spatial_move refuses it. */
    batch[2] = e[2];
    xs[3] = NAN;
    cr_assert_eq(kr_spatial_move_n(w, 5, batch, xs, ys, &moved), KR_ERR_INVALID_ARG);
    cr_assert_eq(moved, 3);
    assert_cell(w, 7, 5, &e[2], 1);
    cr_assert_eq(cell_size_of(w, 0, 0), 3);
    /* An entity never put in the hash. */
    kr_entity_t outside = make_entity(w);
    cr_assert_eq(kr_spatial_move_n(w, 1, &outside, xs, ys, NULL), KR_ERR_STATE);
    cr_assert_not_null(strstr(kr_last_error(), "kr_spatial_move"), "%s", kr_last_error());
    /* Arguments. */
    cr_assert_eq(kr_spatial_move_n(w, 0, NULL, NULL, NULL, &moved), KR_OK);
    cr_assert_eq(moved, 0);
    cr_assert_eq(kr_spatial_move_n(NULL, 1, batch, xs, ys, &moved), KR_ERR_INVALID_ARG);
    cr_assert_eq(moved, 0);
    cr_assert_eq(kr_spatial_move_n(w, 1, NULL, xs, ys, NULL), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "entity array"), "%s", kr_last_error());
    cr_assert_eq(kr_spatial_move_n(w, 1, batch, xs, NULL, NULL), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "position array"), "%s", kr_last_error());
    cr_assert_eq(kr_spatial_count(w), 6);
    kr_world_destroy(w);
}

Test(spatial_grid, bad_bounds_are_refused)
{
    cr_assert_null(kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 5, 0, 1, 4 } }));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert_null(kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 1e9, 1e9 } }));
    cr_assert(strstr(kr_last_error(), "cells") != NULL, "%s", kr_last_error());
    cr_assert_null(kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, INFINITY, 3 } }));
}

/* A grid laid after creation (regions size theirs to their cells): only
 * while the hash is empty, and it then behaves as one given at creation. */
Test(spatial, set_bounds_on_an_empty_hash_only)
{
    kr_world_t *w = make_world(1.0);
    cr_assert_eq(kr_spatial_grid_cells(w), 0);
    kr_entity_t e = make_entity(w);
    put(w, e, 3.5, 4.5);
    cr_assert_eq(kr_spatial_set_bounds(w, (double[4]){ 0, 0, 9.5, 4.5 }), KR_ERR_STATE);
    cr_assert_eq(kr_spatial_grid_cells(w), 0, "refused: nothing changed");
    cr_assert_eq(kr_spatial_remove(w, e), KR_OK);
    cr_assert_eq(kr_spatial_set_bounds(w, (double[4]){ 0, 0, 9.5, 4.5 }), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_spatial_grid_cells(w), 50, "cells 0..9 x 0..4");
    cr_assert_eq(kr_spatial_set_bounds(w, (double[4]){ 5, 0, 1, 1 }), KR_ERR_INVALID_ARG);
    put(w, e, 3.5, 4.5);
    put(w, make_entity(w), 20.5, 4.5); /* off the grid: through the map */
    cr_assert_eq(cell_size_of(w, 3, 4), 1);
    cr_assert_eq(cell_size_of(w, 20, 4), 1);
    cr_assert_eq(kr_spatial_move(w, e, 20.5, 4.5), KR_OK);
    cr_assert_eq(cell_size_of(w, 20, 4), 2);
    cr_assert_eq(kr_spatial_count(w), 2);
    kr_world_destroy(w);
}

/* Prefetch hints accept anything and change nothing. */
Test(spatial, prefetch_hints_change_nothing)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 9, 9 } });
    kr_entity_t e = make_entity(w);
    put(w, e, 1.5, 1.5);
    kr_entity_prefetch(w, e);
    kr_entity_prefetch(w, KR_ENTITY_INVALID);
    kr_entity_prefetch(w, e + 12345);
    kr_entity_prefetch(NULL, e);
    kr_spatial_cell_prefetch(w, (kr_cell_t){ 1, 1 });
    kr_spatial_cell_prefetch(w, (kr_cell_t){ -5, 100 });
    kr_spatial_cell_prefetch(NULL, (kr_cell_t){ 0, 0 });
    cr_assert_eq(kr_spatial_count(w), 1);
    cr_assert_eq(cell_size_of(w, 1, 1), 1);
    kr_entity_destroy(w, e);
    kr_entity_prefetch(w, e);
    cr_assert_eq(kr_world_entity_count(w), 0);
    kr_world_destroy(w);
}

/* ---- kr_spatial_scan ---- */

typedef struct scan_log {
    kr_cell_t cells[4096];
    kr_entity_t entities[4096];
    void *values[4096];
    size_t n, visits;
    /* optional actions of the visit */
    kr_cell_t act_at;        /* the visit of this cell ... */
    kr_entity_t mover, victim;
    double to_x, to_y;       /* ... moves `mover` here and destroys `victim` */
    size_t stop_after;       /* visits before returning an error; 0: never */
} scan_log_t;

static kr_status_t log_visit(kr_world_t *w, const kr_spatial_visit_t *c, void *arg)
{
    scan_log_t *l = arg;
    cr_assert_geq(c->count, 1, "only occupied cells are visited");
    for (size_t i = 0; i < c->count && l->n < 4096; i++, l->n++) {
        l->cells[l->n] = c->cell;
        l->entities[l->n] = c->entities[i];
        l->values[l->n] = c->values ? c->values[i] : (void *)&l->n;
    }
    l->visits++;
    if (c->cell.x == l->act_at.x && c->cell.y == l->act_at.y && l->mover) {
        cr_assert_eq(kr_spatial_move(w, l->mover, l->to_x, l->to_y), KR_OK, "%s", kr_last_error());
        if (l->victim) kr_entity_destroy(w, l->victim);
        l->mover = 0;
    }
    if (l->stop_after && l->visits == l->stop_after) return KR_ERR_STATE;
    return KR_OK;
}

/* The scan meets exactly what kr_spatial_cell_entities shows, cell by cell
 * in (y, x) order, with each entity's component (table or sparse, NULL
 * where absent); cells on and off the dense grid, crowded cells included. */
Test(spatial, scan_matches_cells_in_order)
{
    kr_registry_t *reg = kr_registry_create();
    kr_component_t tab = kr_component_register(reg, &(kr_component_desc_t){ .name = "tab", .size = sizeof(int) });
    kr_component_t spr = kr_component_register(reg, &(kr_component_desc_t){ .name = "spr", .size = sizeof(int),
                                                                            .storage = KR_STORAGE_SPARSE });
    /* the grid covers x, y in [0, 10); the scan reaches beyond it */
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_bounds = { 0, 0, 9.5, 9.5 } });
    cr_assert_not_null(w);
    srand(7);
    for (int i = 0; i < 600; i++) {
        kr_entity_t e = make_entity(w);
        int kind = rand() % 3;
        if (kind < 2) *(int *)kr_component_add(w, e, kind ? spr : tab) = i;
        /* a crowded cell (3, 4) with > 16 entities, the rest spread over -3..14 */
        double x = i % 20 == 0 ? 3.5 : -3 + rand() % 18 + 0.5, y = i % 20 == 0 ? 4.5 : -3 + rand() % 18 + 0.5;
        put(w, e, x, y);
    }
    for (int which = 0; which < 3; which++) {
        kr_component_t comp = which == 0 ? tab : which == 1 ? spr : 0;
        scan_log_t *l = calloc(1, sizeof *l);
        cr_assert_eq(kr_spatial_scan(w, &(kr_spatial_scan_desc_t){ .x0 = -2, .y0 = -1, .x1 = 13, .y1 = 12,
                                                                   .component = comp, .visit = log_visit, .arg = l }),
                     KR_OK, "%s", kr_last_error());
        size_t k = 0;
        for (int32_t y = -1; y < 12; y++)
            for (int32_t x = -2; x < 13; x++) {
                size_t n;
                const kr_entity_t *in = kr_spatial_cell_entities(w, (kr_cell_t){ x, y }, &n);
                for (size_t i = 0; i < n; i++, k++) {
                    cr_assert_lt(k, l->n, "the scan met fewer entities than the cells hold");
                    cr_assert(l->cells[k].x == x && l->cells[k].y == y && l->entities[k] == in[i],
                              "entry %zu: cell (%d, %d), want (%d, %d)", k, l->cells[k].x, l->cells[k].y, x, y);
                    if (!comp) continue;
                    void *want = kr_component_has(w, in[i], comp) ? kr_component_get(w, in[i], comp) : NULL;
                    cr_assert_eq(l->values[k], want, "the value of entry %zu", k);
                }
            }
        cr_assert_eq(k, l->n, "the scan met %zu entities, the cells hold %zu", l->n, k);
        cr_assert_gt(k, 300);
        free(l);
    }
    kr_world_destroy(w);
    kr_registry_destroy(reg);
}

/* A visit may change the world: an entity moved to a cell ahead is met
 * again there, one destroyed before its cell is not met, and a status
 * from the visit stops the scan. */
Test(spatial, scan_sees_changes_made_by_visits)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_bounds = { 0, 0, 63.5, 3.5 } });
    kr_entity_t a = make_entity(w), b = make_entity(w), c = make_entity(w);
    put(w, a, 0.5, 0.5);
    put(w, b, 1.5, 0.5);
    put(w, c, 40.5, 2.5);
    scan_log_t *l = calloc(1, sizeof *l);
    l->act_at = (kr_cell_t){ 0, 0 };
    l->mover = a;
    l->victim = b;
    l->to_x = 30.5;
    l->to_y = 1.5;
    cr_assert_eq(kr_spatial_scan(w, &(kr_spatial_scan_desc_t){ .x0 = 0, .y0 = 0, .x1 = 64, .y1 = 4,
                                                               .visit = log_visit, .arg = l }), KR_OK);
    cr_assert_eq(l->n, 3, "a at (0, 0), a again at (30, 1), c; b destroyed before its cell");
    cr_assert(l->entities[0] == a && l->cells[0].x == 0);
    cr_assert(l->entities[1] == a && l->cells[1].x == 30 && l->cells[1].y == 1);
    cr_assert(l->entities[2] == c && l->cells[2].x == 40);
    memset(l, 0, sizeof *l);
    l->stop_after = 1;
    cr_assert_eq(kr_spatial_scan(w, &(kr_spatial_scan_desc_t){ .x0 = 0, .y0 = 0, .x1 = 64, .y1 = 4,
                                                               .visit = log_visit, .arg = l }), KR_ERR_STATE);
    cr_assert_eq(l->visits, 1, "the scan stopped at the first error");
    free(l);
    kr_world_destroy(w);
}

Test(spatial, scan_checks_its_arguments)
{
    kr_world_t *w = make_world(1.0);
    put(w, make_entity(w), 0.5, 0.5);
    scan_log_t *l = calloc(1, sizeof *l);
    kr_spatial_scan_desc_t d = { .x0 = 0, .y0 = 0, .x1 = 5, .y1 = 5, .visit = log_visit, .arg = l };
    cr_assert_eq(kr_spatial_scan(NULL, &d), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_spatial_scan(w, NULL), KR_ERR_INVALID_ARG);
    d.visit = NULL;
    cr_assert_eq(kr_spatial_scan(w, &d), KR_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(kr_last_error(), "kr_spatial_scan"));
    d.visit = log_visit;
    d.component = 999;
    cr_assert_eq(kr_spatial_scan(w, &d), KR_ERR_UNREGISTERED);
    d.component = 0;
    d.x1 = 0; /* empty */
    cr_assert_eq(kr_spatial_scan(w, &d), KR_OK);
    cr_assert_eq(l->visits, 0);
    d.x1 = 5;
    cr_assert_eq(kr_spatial_scan(w, &d), KR_OK);
    cr_assert_eq(l->visits, 1);
    free(l);
    kr_world_destroy(w);
}

/* Visits that reshape the world as they go: entities moved anywhere (far
 * off the dense grid, which creates cell records and moves them in
 * memory), destroyed and created. At every visit the scan shows exactly
 * what kr_spatial_cell_entities shows, with the right values, and skips no
 * occupied cell; rectangles on, across and off the grid, and worlds
 * without one. */
typedef struct reshape {
    int32_t x0, y0, x1, y1;
    int64_t last;             /* scan position of the last visit, -1 before */
    kr_component_t comp;
    unsigned seed;
    size_t visits;
} reshape_t;

static double reshape_rand(reshape_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (rand_r(&s->seed) / (RAND_MAX + 1.0));
}

/* No entity in the cells after scan position `from` and before `to`. */
static void assert_empty_between(kr_world_t *w, const reshape_t *s, int64_t from, int64_t to)
{
    int64_t width = s->x1 - s->x0;
    for (int64_t k = from + 1; k < to; k++) {
        size_t n = 0;
        kr_cell_t c = { s->x0 + (int32_t)(k % width), s->y0 + (int32_t)(k / width) };
        kr_spatial_cell_entities(w, c, &n);
        cr_assert_eq(n, 0, "the scan skipped cell (%d, %d), holding %zu", c.x, c.y, n);
    }
}

static kr_status_t reshape_visit(kr_world_t *w, const kr_spatial_visit_t *c, void *arg)
{
    reshape_t *s = arg;
    s->visits++;
    int64_t at = (int64_t)(c->cell.y - s->y0) * (s->x1 - s->x0) + (c->cell.x - s->x0);
    cr_assert_gt(at, s->last, "cells in scan order");
    assert_empty_between(w, s, s->last, at);
    s->last = at;
    size_t n = 0;
    const kr_entity_t *in = kr_spatial_cell_entities(w, c->cell, &n);
    cr_assert(n == c->count && !memcmp(in, c->entities, n * sizeof *in), "cell (%d, %d)", c->cell.x, c->cell.y);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(c->values[i], kr_component_has(w, in[i], s->comp) ? kr_component_get(w, in[i], s->comp) : NULL);
    kr_entity_t mine[64];
    size_t k = n < 64 ? n : 64;
    memcpy(mine, in, k * sizeof *mine);
    for (size_t i = 0; i < k; i++) {
        int r = rand_r(&s->seed) % 6;
        if (r == 0) kr_spatial_move(w, mine[i], reshape_rand(s, -200, 200), reshape_rand(s, -200, 200));
        else if (r == 1) kr_spatial_move(w, mine[i], reshape_rand(s, s->x0 - 3, s->x1 + 3), reshape_rand(s, s->y0 - 3, s->y1 + 3));
        else if (r == 2) kr_entity_destroy(w, mine[i]);
    }
    for (int i = rand_r(&s->seed) % 3; i > 0; i--) {
        kr_entity_t e = make_entity(w);
        if (rand_r(&s->seed) % 2) *(int *)kr_component_add(w, e, s->comp) = i;
        put(w, e, reshape_rand(s, -1000, 1000), reshape_rand(s, -1000, 1000));
        put(w, make_entity(w), reshape_rand(s, s->x0 - 3, s->x1 + 3), reshape_rand(s, s->y0 - 3, s->y1 + 3));
    }
    if (s->visits == 1) cr_assert_eq(kr_spatial_set_bounds(w, (double[4]){ 0, 0, 1, 1 }), KR_ERR_STATE);
    return KR_OK;
}

Test(spatial, scan_survives_visits_that_reshape_the_world)
{
    size_t visits = 0;
    for (unsigned trial = 0; trial < 150; trial++) {
        kr_registry_t *reg = kr_registry_create();
        kr_component_t tab = kr_component_register(reg, &(kr_component_desc_t){ .name = "tab", .size = sizeof(int) });
        unsigned seed = trial * 7919 + 1;
        int gw = 1 + rand_r(&seed) % 20, gh = 1 + rand_r(&seed) % 20;
        int gx = rand_r(&seed) % 10 - 5, gy = rand_r(&seed) % 10 - 5;
        kr_world_desc_t wd = { .registry = reg };
        if (rand_r(&seed) % 4) { /* three worlds in four have a grid */
            wd.spatial_bounds[0] = gx;
            wd.spatial_bounds[1] = gy;
            wd.spatial_bounds[2] = gx + gw - 0.5;
            wd.spatial_bounds[3] = gy + gh - 0.5;
        }
        kr_world_t *w = kr_world_create(&wd);
        cr_assert_not_null(w);
        reshape_t s = { .comp = tab, .seed = seed, .last = -1 };
        for (int i = 0; i < 300; i++) {
            kr_entity_t e = make_entity(w);
            if (rand_r(&s.seed) % 2) *(int *)kr_component_add(w, e, tab) = i;
            double x = i % 10 ? reshape_rand(&s, gx - 8, gx + gw + 8) : gx + 0.5;
            double y = i % 10 ? reshape_rand(&s, gy - 8, gy + gh + 8) : gy + 0.5;
            put(w, e, x, y);
        }
        s.x0 = gx - 10 + rand_r(&s.seed) % 25;
        s.x1 = s.x0 + 1 + rand_r(&s.seed) % 40;
        s.y0 = gy - 10 + rand_r(&s.seed) % 25;
        s.y1 = s.y0 + 1 + rand_r(&s.seed) % 40;
        cr_assert_eq(kr_spatial_scan(w, &(kr_spatial_scan_desc_t){ .x0 = s.x0, .y0 = s.y0, .x1 = s.x1, .y1 = s.y1,
                                                                   .component = tab, .visit = reshape_visit,
                                                                   .arg = &s }), KR_OK, "%s", kr_last_error());
        assert_empty_between(w, &s, s.last, (int64_t)(s.x1 - s.x0) * (s.y1 - s.y0));
        visits += s.visits;
        kr_world_destroy(w);
        kr_registry_destroy(reg);
    }
    cr_assert_gt(visits, 5000);
}

/* A rectangle that ends at the last row an int32 can name: the cursors
 * ahead of the visit stop there instead of overflowing. */
Test(spatial, scan_to_the_last_row)
{
    kr_world_t *w = make_world(1.0);
    kr_entity_t e = make_entity(w);
    put(w, e, 2.5, 2147483646.5);
    scan_log_t *l = calloc(1, sizeof *l);
    cr_assert_eq(kr_spatial_scan(w, &(kr_spatial_scan_desc_t){ .x0 = 0, .y0 = INT32_MAX - 3, .x1 = 4,
                                                               .y1 = INT32_MAX, .visit = log_visit, .arg = l }), KR_OK);
    cr_assert_eq(l->n, 1);
    cr_assert_eq(l->entities[0], e);
    free(l);
    kr_world_destroy(w);
}

Test(spatial, a_bad_cell_size_is_refused)
{
    const double bad[] = { -1.0, NAN, INFINITY };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(kr_world_create(&(kr_world_desc_t){ .spatial_cell_size = bad[i] }));
        cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
        cr_assert(strstr(kr_last_error(), "spatial_cell_size: expected a positive finite number"), "%s",
                  kr_last_error());
    }
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .spatial_cell_size = 0 });
    cr_assert_not_null(w, "0 means 1.0");
    kr_world_destroy(w);
}
