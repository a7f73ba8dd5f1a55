/* The spatial hash of a world: a 2-D grid of square cells (edge
 * kr_world_desc_t.spatial_cell_size) mapping cells to the entities in them.
 *
 * Several entities may share a cell. Insert, move and remove are O(1): each
 * entity keeps its cell and its slot in that cell (a reverse index), so
 * nothing scans the cells. Cells that become empty are released in bulk
 * (off the dense grid, when the cell table is rebuilt); memory follows the
 * number of occupied cells, not the cells ever visited.
 * Destroying an entity removes it from the hash. Positions are doubles; an
 * entity at (x, y) lies in cell (floor(x / size), floor(y / size)).
 *
 * Query results are written to a caller buffer: the return value is the
 * number of matches, which may exceed `capacity` (only the first `capacity`
 * are written), so the caller can grow the buffer and ask again. Results are
 * in a deterministic order: cells by (cy, cx), then slot order in a cell. */
#ifndef KAIROS_SPATIAL_H
#define KAIROS_SPATIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"

KR_BEGIN_DECLS

/* The most cells a dense grid (spatial_bounds) covers. */
#define KR_SPATIAL_MAX_GRID_CELLS (1u << 25)

typedef struct kr_cell { int32_t x, y; } kr_cell_t;

/* Puts e at (x, y). Fails if e is stale (KR_ERR_STALE_ENTITY) or already in
 * the hash (KR_ERR_EXISTS), or x, y are not finite or lie in a cell whose
 * index does not fit in int32 (|x / cell size| of about 2^31 or more;
 * KR_ERR_INVALID_ARG). */
KR_API kr_status_t kr_spatial_insert(kr_world_t *world, kr_entity_t e, double x, double y);
/* Moves e to (x, y); O(1), and free of cell work when the cell is unchanged.
 * Fails as kr_spatial_insert does for the position and a stale e, and with
 * KR_ERR_STATE for an e not in the hash; e then stays where it was. */
KR_API kr_status_t kr_spatial_move(kr_world_t *world, kr_entity_t e, double x, double y);
/* Moves e[i] to (x[i], y[i]) for i in 0 .. n-1, in that order: the same
 * moves, results and errors as n calls of kr_spatial_move, but the cells
 * of later moves load while earlier ones run, so a pass that moves many
 * entities waits on memory far less. Stops at the first move that fails
 * and returns its status; *moved (may be NULL) gets the number of moves
 * done before it. */
KR_API kr_status_t kr_spatial_move_n(kr_world_t *world, size_t n, const kr_entity_t *e, const double *x,
                                     const double *y, size_t *moved);
/* Takes e out of the hash. */
KR_API kr_status_t kr_spatial_remove(kr_world_t *world, kr_entity_t e);
/* True if e is in the hash; its position goes to *x, *y (either may be NULL). */
KR_API bool kr_spatial_position(const kr_world_t *world, kr_entity_t e, double *x, double *y);

/* The cell that holds point (x, y). A point in no cell sets kr_last_error
 * (KR_ERR_INVALID_ARG) and answers a cell all the same: (0, 0) for NaN or
 * infinite coordinates, the nearest int32 cell for a coordinate beyond
 * them; where that matters, kr_clear_error() first and check
 * kr_last_status() after. */
KR_API kr_cell_t kr_spatial_cell_of(const kr_world_t *world, double x, double y);
/* The entities in one cell, in slot order; *count gets their number. The
 * array is valid until the next change of the hash. NULL when empty. */
KR_API const kr_entity_t *kr_spatial_cell_entities(const kr_world_t *world, kr_cell_t cell, size_t *count);
/* Entities whose position lies in [x0, x1] x [y0, y1] (none when x0 > x1 or
 * y0 > y1). A bound that is not finite returns 0 with KR_ERR_INVALID_ARG,
 * as does either query given a NULL `out` with a capacity (out NULL with
 * capacity 0 only counts). */
KR_API size_t kr_spatial_query_box(const kr_world_t *world, double x0, double y0, double x1, double y1,
                                   kr_entity_t *out, size_t capacity);
/* Entities within distance r of (x, y), boundary included: those for which
 * dx * dx + dy * dy <= r * r in doubles, whatever the cell size. A centre
 * or r that is not finite, or r < 0, returns 0 with KR_ERR_INVALID_ARG. */
KR_API size_t kr_spatial_query_radius(const kr_world_t *world, double x, double y, double r,
                                      kr_entity_t *out, size_t capacity);
/* Lays the dense grid over bounds x0, y0, x1, y1 (as kr_world_desc_t's
 * spatial_bounds; all zero: no grid) for a world made without it. Only
 * while the hash is empty (KR_ERR_STATE otherwise). */
KR_API kr_status_t kr_spatial_set_bounds(kr_world_t *world, const double bounds[4]);
/* Cells of the dense grid (allocated up front), 0 without one. */
KR_API size_t kr_spatial_grid_cells(const kr_world_t *world);
/* A hint that cell `cell` of the dense grid is about to change (an entity
 * moving in): starts loading its record into the cache. Changes nothing;
 * cells off the grid are ignored. */
KR_API void kr_spatial_cell_prefetch(const kr_world_t *world, kr_cell_t cell);
/* Entities in the hash, and cells occupied. */
KR_API size_t kr_spatial_count(const kr_world_t *world);
KR_API size_t kr_spatial_cell_count(const kr_world_t *world);

/* ---- scanning cells in order ---- */

/* One cell met by kr_spatial_scan. */
typedef struct kr_spatial_visit {
    kr_cell_t cell;
    const kr_entity_t *entities;  /* the cell's entities, in slot order */
    void *const *values;          /* desc.component of each (NULL where absent); NULL without desc.component */
    size_t count;                 /* >= 1 */
} kr_spatial_visit_t;

typedef struct kr_spatial_scan_desc {
    int32_t x0, y0, x1, y1;       /* the cells [x0, x1) x [y0, y1); none when empty */
    /* Optional: a component whose values the visit gets, loaded ahead. */
    kr_component_t component;
    /* Called for each occupied cell in (y, x) order, with the entities in
     * it when the scan gets there. It may change the world (move, create
     * or destroy entities): the arrays are valid until it does, and later
     * cells are read as they are when reached (kr_spatial_set_bounds is
     * refused meanwhile). A status other than KR_OK stops the scan and is
     * returned. */
    kr_status_t (*visit)(kr_world_t *world, const kr_spatial_visit_t *cell, void *arg);
    void *arg;
} kr_spatial_scan_desc_t;

/* Visits the occupied cells of a rectangle in (y, x) order, for passes
 * that meet many entities cell by cell (every agent of a region, say).
 * Faster than kr_spatial_cell_entities per cell: on the dense grid it walks
 * the cell records in order and loads ahead of the visit what the next
 * cells' entities will need (records, spatial entries, the component's
 * rows, and the cells above and below). KR_ERR_INVALID_ARG without a world
 * or visit, KR_ERR_UNREGISTERED for an unknown component. */
KR_API kr_status_t kr_spatial_scan(kr_world_t *world, const kr_spatial_scan_desc_t *desc);

KR_END_DECLS

#endif
