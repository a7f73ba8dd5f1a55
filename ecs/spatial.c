/* The spatial hash: a dense grid of cell records over declared bounds,
 * and off it an open-addressed table keyed by (cx, cy) whose slots hold the
 * cell records themselves; every entity in the hash keeps its cell and slot
 * (the reverse index, by entity index), so insert, move and remove never
 * scan. An emptied cell stays in its table slot (count 0) and is taken again
 * if an entity comes back; the table is rebuilt from its occupied cells when
 * used slots reach 3/4 of it, so memory follows the occupied cells. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/memory.h"
#include "ecs/world_private.h"

/* Cell indices are int32: a quotient x / size must lie in [CELL_LO, CELL_HI)
 * for its floor to fit. */
#define CELL_LO (-2147483648.0)
#define CELL_HI 2147483648.0

#define TABLE_MIN 16u
#define TABLE_MAX (1u << 31)

static inline bool in_cell_range(double q) { return q >= CELL_LO && q < CELL_HI; }

/* floor(q) for q in [CELL_LO, CELL_HI), without a libm call: truncation,
 * then one step down for negative non-integers. */
static inline int32_t floor_i32(double q)
{
    int32_t i = (int32_t)q;
    return i - ((double)i > q);
}

/* q rounded toward zero, or INT64_MIN when q is NaN or beyond int64: what
 * x86's conversion answers by itself, which C leaves undefined (hence the
 * intrinsic there, and the explicit test elsewhere). */
static inline int64_t trunc_i64(double q)
{
#if defined(__x86_64__) && defined(__SSE2__)
    return _mm_cvttsd_si64(_mm_set_sd(q));
#else
    return fabs(q) < 0x1p62 ? (int64_t)q : INT64_MIN;
#endif
}

/* floor(q) as trunc_i64 gives it, or a value outside int32 when not
 * representable. The step down is done in unsigned arithmetic: from
 * INT64_MIN (a huge negative q) it wraps to INT64_MAX, still outside
 * int32, where signed arithmetic would overflow. */
static inline int64_t floor_i64(double q)
{
    int64_t i = trunc_i64(q);
    return (int64_t)((uint64_t)i - (uint64_t)((double)i > q));
}

/* The cell coordinate of v, clamped to the int32 range (queries only: no
 * entity lies outside it, so clamping keeps every cell that can match). */
static int32_t cell_clamped(double v, double size)
{
    double q = v / size;
    if (!(q >= CELL_LO)) return INT32_MIN;
    if (!(q < CELL_HI)) return INT32_MAX;
    return floor_i32(q);
}

/* The grid record of cell (cx, cy), or KR__NONE outside the grid. */
static inline uint32_t grid_index(const kr__spatial_state_t *s, int32_t cx, int32_t cy)
{
    uint32_t dx = (uint32_t)cx - (uint32_t)s->gx0, dy = (uint32_t)cy - (uint32_t)s->gy0;
    return dx < s->gw && dy < s->gh ? dy * s->gw + dx : KR__NONE;
}

/* ---- the cell table ------------------------------------------------------ */

/* Fibonacci hashing of the packed pair: the top bits of the product depend
 * on every bit of both coordinates. */
static inline uint32_t table_home(const kr__spatial_state_t *s, int32_t cx, int32_t cy)
{
    uint64_t key = ((uint64_t)(uint32_t)cx << 32) | (uint32_t)cy;
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> s->table_shift);
}

/* The slot of cell (cx, cy) in the table (occupied or emptied), or else the
 * never-used slot where it would go. *found tells which. The table always
 * has a never-used slot (at most 3/4 are used), so the probe ends. */
static inline uint32_t table_probe(const kr__spatial_state_t *s, int32_t cx, int32_t cy, bool *found)
{
    uint32_t mask = s->table_capacity - 1, i = table_home(s, cx, cy);
    for (;; i = (i + 1) & mask) {
        const kr__spatial_cell_rec_t *c = &s->table[i];
        if (!c->capacity) {
            *found = false;
            return i;
        }
        if (c->cx == cx && c->cy == cy) {
            *found = true;
            return i;
        }
    }
}

uint32_t kr__spatial_find(const kr__spatial_state_t *s, int32_t cx, int32_t cy)
{
    uint32_t gi = grid_index(s, cx, cy);
    if (gi != KR__NONE) return s->grid[gi].count ? gi : KR__NONE;
    if (!s->table_capacity) return KR__NONE;
    bool found;
    uint32_t i = table_probe(s, cx, cy, &found);
    return found && s->table[i].count ? s->grid_cells + i : KR__NONE;
}

/* Lays the table out anew, with only its occupied cells, at a size that
 * leaves it at most half used; the entries of their members follow their
 * cells' new slots. Members keep their order (records are copied whole). */
static kr_status_t table_rebuild(kr__spatial_state_t *s, const char *fn)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < s->table_capacity; i++) live += s->table[i].count != 0;
    uint64_t cap = TABLE_MIN;
    while (cap < (live + 1) * 2) cap *= 2;
    if (cap > TABLE_MAX) return kr__fail(KR_ERR_NOMEM, "%s: too many occupied cells", fn);
    kr__spatial_cell_rec_t *table = kr__array_grow(NULL, 0, (size_t)cap * sizeof *table, 64);
    if (!table) return kr__fail(KR_ERR_NOMEM, "%s: out of memory for a table of %llu cells", fn,
                                (unsigned long long)cap);
    memset(table, 0, (size_t)cap * sizeof *table);
    kr__spatial_cell_rec_t *old = s->table;
    uint32_t old_capacity = s->table_capacity;
    s->table = table;
    s->table_capacity = (uint32_t)cap;
    s->table_shift = (uint32_t)(64 - __builtin_ctzll(cap));
    s->table_used = (uint32_t)live;
    for (uint32_t i = 0; i < old_capacity; i++) {
        const kr__spatial_cell_rec_t *c = &old[i];
        if (!c->count) continue;   /* emptied: dropped (its heap buffer went when it emptied) */
        bool found;
        uint32_t j = table_probe(s, c->cx, c->cy, &found);
        table[j] = *c;
        const kr_entity_t *m = kr__cell_members(&table[j]);
        for (uint32_t k = 0; k < c->count; k++) s->entries[kr_entity_index(m[k])].cell = s->grid_cells + j;
    }
    free(old);
    return KR_OK;
}

/* The table slot of cell (cx, cy), taken if absent (the table rebuilt
 * first when that would pass 3/4 used); KR__NONE with the error set on
 * failure, nothing changed then. May move the table. */
static uint32_t table_acquire(kr__spatial_state_t *s, int32_t cx, int32_t cy, const char *fn)
{
    bool found = false;
    uint32_t i = 0;
    if (s->table_capacity) i = table_probe(s, cx, cy, &found);
    if (found) return i;
    if ((uint64_t)(s->table_used + 1) * 4 > (uint64_t)s->table_capacity * 3) {
        if (table_rebuild(s, fn)) return KR__NONE;
        i = table_probe(s, cx, cy, &found);
    }
    s->table[i] = (kr__spatial_cell_rec_t){ .cx = cx, .cy = cy, .capacity = KR__CELL_INLINE };
    s->table_used++;
    return i;
}

__attribute__((cold, noinline)) static kr_status_t bad_position(const char *fn, double x, double y)
{
    if (!isfinite(x) || !isfinite(y))
        return kr__fail(KR_ERR_INVALID_ARG, "%s: position (%g, %g) is not finite", fn, x, y);
    return kr__fail(KR_ERR_INVALID_ARG,
                    "%s: position (%g, %g) lies in a cell whose index does not fit in int32", fn, x, y);
}

__attribute__((cold, noinline)) static kr_status_t not_in_hash(const char *fn, kr_entity_t e)
{
    return kr__fail(KR_ERR_STATE, "%s: entity %u:%u is not in the spatial hash", fn,
                    kr_entity_index(e), kr_entity_generation(e));
}

#define GRID_MAX_CELLS KR_SPATIAL_MAX_GRID_CELLS

kr_status_t kr__spatial_init(kr__spatial_state_t *s, double cell_size, const double bounds[4])
{
    if (!(cell_size > 0) || !isfinite(cell_size)) cell_size = 1.0;
    if (!bounds || (bounds[0] == 0 && bounds[1] == 0 && bounds[2] == 0 && bounds[3] == 0))
        return kr__spatial_init_grid(s, cell_size, 0, 0, 0, 0);
    memset(s, 0, sizeof *s);
    s->cell_size = cell_size;
    s->inv_cell_size = 1.0 / cell_size;
    for (int i = 0; i < 4; i++)
        if (!isfinite(bounds[i]) || !in_cell_range(bounds[i] / cell_size))
            return kr__fail(KR_ERR_INVALID_ARG, "spatial_bounds[%d] = %g is not a usable coordinate", i, bounds[i]);
    if (!(bounds[2] > bounds[0] && bounds[3] > bounds[1]))
        return kr__fail(KR_ERR_INVALID_ARG, "spatial_bounds (%g, %g)-(%g, %g): expected x0 < x1 and y0 < y1",
                        bounds[0], bounds[1], bounds[2], bounds[3]);
    int32_t gx0 = floor_i32(bounds[0] / cell_size), gy0 = floor_i32(bounds[1] / cell_size);
    int32_t gx1 = floor_i32(bounds[2] / cell_size), gy1 = floor_i32(bounds[3] / cell_size);
    uint64_t gw = (uint64_t)((int64_t)gx1 - gx0) + 1, gh = (uint64_t)((int64_t)gy1 - gy0) + 1;
    if (gw * gh > GRID_MAX_CELLS)
        return kr__fail(KR_ERR_INVALID_ARG, "spatial_bounds cover %llu x %llu cells; the grid holds at most %u",
                        (unsigned long long)gw, (unsigned long long)gh, GRID_MAX_CELLS);
    return kr__spatial_init_grid(s, cell_size, gx0, gy0, (uint32_t)gw, (uint32_t)gh);
}

/* Split from kr__spatial_init so that a world image (image.c) can lay out
 * the very grid it saved, not one re-derived from rounded bounds. */
kr_status_t kr__spatial_init_grid(kr__spatial_state_t *s, double cell_size, int32_t gx0, int32_t gy0, uint32_t gw,
                                  uint32_t gh)
{
    memset(s, 0, sizeof *s);
    if (!(cell_size > 0) || !isfinite(cell_size)) cell_size = 1.0;
    s->cell_size = cell_size;
    s->inv_cell_size = 1.0 / cell_size;
    int exponent;
    s->pow2_size = frexp(cell_size, &exponent) == 0.5 && isfinite(s->inv_cell_size) && s->inv_cell_size > 0;
    if (!gw || !gh) return KR_OK;
    if ((uint64_t)gw * gh > GRID_MAX_CELLS || (int64_t)gx0 + gw - 1 > INT32_MAX || (int64_t)gy0 + gh - 1 > INT32_MAX)
        return kr__fail(KR_ERR_INVALID_ARG, "spatial grid of %u x %u cells from (%d, %d): too large", gw, gh,
                        gx0, gy0);
    uint32_t n = gw * gh;
    s->grid = kr__array_grow(NULL, 0, (size_t)n * sizeof *s->grid, 64);
    if (!s->grid) return kr__fail(KR_ERR_NOMEM, "spatial grid: out of memory for %u cells", n);
    for (uint32_t i = 0; i < n; i++)
        s->grid[i] = (kr__spatial_cell_rec_t){ .cx = gx0 + (int32_t)(i % gw), .cy = gy0 + (int32_t)(i / gw),
                                              .capacity = KR__CELL_INLINE };
    s->gx0 = gx0;
    s->gy0 = gy0;
    s->gw = gw;
    s->gh = gh;
    s->grid_cells = n;
    return KR_OK;
}

bool kr__spatial_point_cell(const kr__spatial_state_t *s, double x, double y, int32_t *cx, int32_t *cy)
{
    double qx = x / s->cell_size, qy = y / s->cell_size;
    if (!(in_cell_range(qx) && in_cell_range(qy))) return false;
    *cx = floor_i32(qx);
    *cy = floor_i32(qy);
    return true;
}

void kr__spatial_fini(kr__spatial_state_t *s)
{
    for (uint32_t i = 0; i < s->grid_cells; i++) free(s->grid[i].heap);
    for (uint32_t i = 0; i < s->table_capacity; i++) free(s->table[i].heap);
    free(s->grid);
    free(s->table);
    free(s->entries);
    free(s->gens);
    /* An empty hash: kr__spatial_forget is a no-op from now on. */
    double size = s->cell_size;
    memset(s, 0, sizeof *s);
    s->cell_size = size;
    s->inv_cell_size = 1.0 / size;
}

/* ---- cells ------------------------------------------------------------ */

static kr_status_t reserve_members(kr__spatial_cell_rec_t *c, const char *fn)
{
    if (c->count < c->capacity) return KR_OK;
    uint64_t cap = (uint64_t)c->capacity * 2;
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    if (cap <= c->count)
        return kr__fail(KR_ERR_NOMEM, "%s: too many entities in one cell", fn);
    kr_entity_t *m = realloc(c->heap, (size_t)cap * sizeof *m);
    if (!m) return kr__fail(KR_ERR_NOMEM, "%s: out of memory for a cell of %llu entities", fn,
                            (unsigned long long)cap);
    if (!c->heap) memcpy(m, c->inline_members, sizeof c->inline_members);
    c->heap = m;
    c->capacity = (uint32_t)cap;
    return KR_OK;
}

/* An emptied cell gives back any heap buffer, so an empty record costs one
 * cache line. */
__attribute__((cold, noinline)) static kr_status_t release_heap(kr__spatial_cell_rec_t *c)
{
    free(c->heap);
    c->heap = NULL;
    c->capacity = KR__CELL_INLINE;
    return KR_OK;
}

/* The cell (cx, cy), taken if absent, with room for one more member; its
 * index, or KR__NONE with the error set (nothing observable changed then).
 * May move the table, and with it the cell of every entry off the grid. */
static uint32_t cell_acquire(kr__spatial_state_t *s, int32_t cx, int32_t cy, const char *fn)
{
    uint32_t gi = grid_index(s, cx, cy);
    if (gi != KR__NONE) return reserve_members(&s->grid[gi], fn) ? KR__NONE : gi;
    uint32_t i = table_acquire(s, cx, cy, fn);
    if (i == KR__NONE) return KR__NONE;
    return reserve_members(&s->table[i], fn) ? KR__NONE : s->grid_cells + i;
}

/* Appends e to cell ci (room reserved) and points its entry there. */
static inline void cell_push(kr__spatial_state_t *s, uint32_t ci, kr_entity_t e, kr__spatial_entry_t *en)
{
    kr__spatial_cell_rec_t *c = kr__cell_at(s, ci);
    s->live_cells += c->count == 0;
    en->cell = ci;
    en->cx = c->cx;
    en->cy = c->cy;
    en->slot = c->count;
    kr__cell_members(c)[c->count++] = e;
}

/* Takes entity idx out of its cell: swap-remove, fixing the slot of the
 * member moved into the hole. An emptied cell stays where it is (in the
 * table: until a rebuild) and gives back a heap buffer. */
static inline void cell_unlink(kr__spatial_state_t *s, uint32_t idx)
{
    const kr__spatial_entry_t *en = &s->entries[idx];
    uint32_t slot = en->slot;
    kr__spatial_cell_rec_t *c = kr__cell_at(s, en->cell);
    uint32_t last = --c->count;
    /* Without a branch on slot != last: the count has just come from
     * memory, and a mispredicted branch on it would throw away the work
     * done meanwhile. When the entity is the last member it "moves" onto
     * itself, which changes nothing. */
    kr_entity_t *members = kr__cell_members(c);
    kr_entity_t moved = members[last];
    members[slot] = moved;
    s->entries[kr_entity_index(moved)].slot = slot;
    if (last) return;
    s->live_cells--;
    if (c->heap) release_heap(c);
}

static kr_status_t reserve_entries(kr_world_t *w, uint32_t idx, const char *fn)
{
    kr__spatial_state_t *s = &w->spatial;
    if (idx < s->entry_capacity) return KR_OK;
    uint64_t need = (uint64_t)idx + 1;
    uint64_t cap = s->entry_capacity ? (uint64_t)s->entry_capacity * 2 : 64;
    if (cap > w->record_capacity) cap = w->record_capacity;
    if (cap < need) cap = need;
    kr__spatial_entry_t *en = kr__array_grow(s->entries, (size_t)s->entry_capacity * sizeof *en,
                                            (size_t)cap * sizeof *en, 64);
    if (!en) return kr__fail(KR_ERR_NOMEM, "%s: out of memory for %llu spatial entries", fn,
                             (unsigned long long)cap);
    s->entries = en;
    uint32_t *gens = kr__array_grow(s->gens, (size_t)s->entry_capacity * sizeof *gens, (size_t)cap * sizeof *gens, 64);
    if (!gens) return kr__fail(KR_ERR_NOMEM, "%s: out of memory for %llu spatial entries", fn,
                               (unsigned long long)cap);
    memset(gens + s->entry_capacity, 0, (size_t)(cap - s->entry_capacity) * sizeof *gens);
    s->gens = gens;
    s->entry_capacity = (uint32_t)cap;
    return KR_OK;
}

/* ---- insert, move, remove ---------------------------------------------- */

kr_status_t kr_spatial_insert(kr_world_t *w, kr_entity_t e, double x, double y)
{
    static const char fn[] = "kr_spatial_insert";
    kr__record_t *r = kr__live(w, e, fn);
    if (!r) return kr_last_status();
    if (r->flags & KR__REC_SPATIAL)
        return kr__fail(KR_ERR_EXISTS, "%s: entity %u:%u is already in the spatial hash", fn,
                        kr_entity_index(e), kr_entity_generation(e));
    kr__spatial_state_t *s = &w->spatial;
    double qx = x / s->cell_size, qy = y / s->cell_size;
    if (!(in_cell_range(qx) && in_cell_range(qy))) return bad_position(fn, x, y);
    uint32_t idx = kr_entity_index(e);
    if (reserve_entries(w, idx, fn)) return kr_last_status();
    uint32_t ci = cell_acquire(s, floor_i32(qx), floor_i32(qy), fn);
    if (ci == KR__NONE) return kr_last_status();
    kr__spatial_entry_t *en = &s->entries[idx];
    en->x = x;
    en->y = y;
    cell_push(s, ci, e, en);
    s->gens[idx] = kr_entity_generation(e);
    s->members++;
    r->flags |= KR__REC_SPATIAL;
    return KR_OK;
}

/* The cell changed, and the move is not one between two grid cells with
 * room (grid_move). The entity joins the new cell first, so that a failure
 * leaves it where it was, then leaves the old one. */
__attribute__((noinline)) static kr_status_t relocate(kr__spatial_state_t *s, kr_entity_t e, double x, double y,
                                                      int32_t cx, int32_t cy)
{
    uint32_t ci = cell_acquire(s, cx, cy, "kr_spatial_move");
    if (ci == KR__NONE) return kr_last_status();
    uint32_t idx = kr_entity_index(e);
    cell_unlink(s, idx);
    kr__spatial_entry_t *en = &s->entries[idx];
    en->x = x;
    en->y = y;
    cell_push(s, ci, e, en);
    return KR_OK;
}

/* Moves e from its cell to cell `to` (index ci), which has room. Inline in
 * the two movers below, which differ only in how they find `to`. The
 * entry's position is stored first, freeing registers; the old cell is
 * fixed before the entry's slot is set, since the member moved into the
 * hole may be e itself. */
__attribute__((always_inline)) static inline kr_status_t move_to(kr__spatial_state_t *s, kr__spatial_entry_t *en,
                                                                kr_entity_t e, kr__spatial_cell_rec_t *to,
                                                                uint32_t ci, double x, double y, int32_t cx,
                                                                int32_t cy)
{
    en->x = x;
    en->y = y;
    en->cx = cx;
    en->cy = cy;
    kr__spatial_cell_rec_t *old = kr__cell_at(s, en->cell);
    /* Both counts arrive from memory late: whether a cell fills or
     * empties is arithmetic, not a branch (cell_unlink's note). */
    uint32_t slot = en->slot, last = old->count - 1, n = to->count;
    old->count = last;
    kr_entity_t *members = kr__cell_members(old);
    kr_entity_t moved = members[last];
    members[slot] = moved;
    s->entries[kr_entity_index(moved)].slot = slot;
    en->cell = ci;
    en->slot = n;
    kr__cell_members(to)[n] = e;
    to->count = n + 1;
    s->live_cells += (uint32_t)(n == 0) - (uint32_t)(last == 0);
    /* Last, and a tail call, so that nothing is live across it. */
    if (old->heap && !last) return release_heap(old);
    return KR_OK;
}

/* A move between two cells of the dense grid. Its own function, so that
 * the checks before it and a move within one cell save fewer registers
 * (measured: bench/README.md, ECS). */
__attribute__((noinline)) static kr_status_t grid_move(kr__spatial_state_t *s, kr__spatial_entry_t *en, kr_entity_t e,
                                                       uint32_t gi, double x, double y, int32_t cx, int32_t cy)
{
    kr__spatial_cell_rec_t *to = &s->grid[gi];
    if (to->count == to->capacity) return relocate(s, e, x, y, cx, cy); /* the cell's members grow */
    return move_to(s, en, e, to, gi, x, y, cx, cy);
}

/* A move into a cell off the grid: the table probed here, a cell taken in
 * place when absent; growing the table or a cell's members is left to
 * relocate. */
__attribute__((noinline)) static kr_status_t table_move(kr__spatial_state_t *s, kr__spatial_entry_t *en,
                                                        kr_entity_t e, double x, double y, int32_t cx, int32_t cy)
{
    if (!s->table_capacity) return relocate(s, e, x, y, cx, cy);
    uint32_t mask = s->table_capacity - 1, i = table_home(s, cx, cy);
    kr__spatial_cell_rec_t *to;
    for (;; i = (i + 1) & mask) {
        to = &s->table[i];
        if (!to->capacity) {
            if ((uint64_t)(s->table_used + 1) * 4 > (uint64_t)s->table_capacity * 3)
                return relocate(s, e, x, y, cx, cy);
            *to = (kr__spatial_cell_rec_t){ .cx = cx, .cy = cy, .capacity = KR__CELL_INLINE };
            s->table_used++;
            break;
        }
        if (to->cx == cx && to->cy == cy) break;
    }
    if (to->count == to->capacity) return relocate(s, e, x, y, cx, cy);
    return move_to(s, en, e, to, s->grid_cells + i, x, y, cx, cy);
}

/* kr_spatial_move with every check: a stale handle, an entity not in the
 * hash, a position off the int32 cells, each with its own error; and the
 * moves the fast path leaves here (a quotient at the very edge of the
 * range). */
__attribute__((cold, noinline)) static kr_status_t move_checked(kr_world_t *w, kr_entity_t e, double x, double y)
{
    static const char fn[] = "kr_spatial_move";
    kr__record_t *r = kr__live(w, e, fn);
    if (!r) return kr_last_status();
    if (!(r->flags & KR__REC_SPATIAL)) return not_in_hash(fn, e);
    kr__spatial_state_t *s = &w->spatial;
    int32_t cx, cy;
    if (!kr__spatial_point_cell(s, x, y, &cx, &cy)) return bad_position(fn, x, y);
    kr__spatial_entry_t *en = &s->entries[kr_entity_index(e)];
    if (cx == en->cx && cy == en->cy) {
        en->x = x;
        en->y = y;
        return KR_OK;
    }
    return relocate(s, e, x, y, cx, cy);
}

/* The cell of (x, y) as the fast paths compute it: false for a position
 * they leave to the checked path (NaN, infinite, or off the int32 cells). */
__attribute__((always_inline)) static inline bool fast_cell(const kr__spatial_state_t *s, double x, double y,
                                                           int32_t *cx, int32_t *cy)
{
    double qx, qy;
    if (s->pow2_size) {
        qx = x * s->inv_cell_size; /* exact: the same as x / cell_size */
        qy = y * s->inv_cell_size;
    } else {
        qx = x / s->cell_size;
        qy = y / s->cell_size;
    }
    /* Floors in 64 bits, then one test that both fit in int32 (NaN and
     * huge quotients give INT64_MIN, which fails it). */
    int64_t fx = floor_i64(qx), fy = floor_i64(qy);
    if ((((uint64_t)fx + 0x80000000u) | ((uint64_t)fy + 0x80000000u)) >> 32) return false;
    *cx = (int32_t)fx;
    *cy = (int32_t)fy;
    return true;
}

/* True when handle e is alive and in the hash, checked against the hash's
 * own generations: equal and not 0 means both (destroy and remove clear
 * it), without reading the entity's record. */
__attribute__((always_inline)) static inline bool in_hash(const kr__spatial_state_t *s, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e), gen = kr_entity_generation(e);
    return ((idx < s->entry_capacity) & (gen != 0)) && s->gens[idx] == gen;
}

/* kr_spatial_move on a world that is not NULL: the same cell, a grid
 * cell, a cell of the table, or (errors and rare cases) the checked path. */
__attribute__((always_inline)) static inline kr_status_t move_one(kr_world_t *w, kr_entity_t e, double x, double y)
{
    kr__spatial_state_t *s = &w->spatial;
    int32_t cx, cy;
    if (!in_hash(s, e) || !fast_cell(s, x, y, &cx, &cy)) return move_checked(w, e, x, y);
    kr__spatial_entry_t *en = &s->entries[kr_entity_index(e)];
    if (((cx ^ en->cx) | (cy ^ en->cy)) == 0) {
        /* Same cell: no cell record is touched. */
        en->x = x;
        en->y = y;
        return KR_OK;
    }
    /* Into a grid cell (the common move of a bounded world: no hashing)
     * or into a cell of the table. */
    uint32_t dx = (uint32_t)cx - (uint32_t)s->gx0, dy = (uint32_t)cy - (uint32_t)s->gy0;
    if ((dx < s->gw) & (dy < s->gh)) return grid_move(s, en, e, dy * s->gw + dx, x, y, cx, cy);
    return table_move(s, en, e, x, y, cx, cy);
}

kr_status_t kr_spatial_move(kr_world_t *w, kr_entity_t e, double x, double y)
{
    if (!w) return move_checked(w, e, x, y);
    return move_one(w, e, x, y);
}

/* ---- moving many ---------------------------------------------------------- */

/* How far ahead kr_spatial_move_n loads: the entry and generation of move
 * i + 2 * MOVE_AHEAD, then the old and the new cell of move i + MOVE_AHEAD,
 * whose entry the first stage brought in. Loading also the entry of the
 * member that will fill the old cell's hole (a third stage, reading the
 * old cell) made the batch slower than single moves: it is not done.
 * Measured in bench/README.md, "Batched structural changes". */
#define MOVE_AHEAD 16

/* The two hints are forced inline: GCC counts a function whose only effect
 * is a prefetch as free of side effects and drops the calls to it, and
 * with them every hint (seen with GCC 12 at -O1 and above). */
__attribute__((always_inline)) static inline void prefetch_entry(const kr__spatial_state_t *s, kr_entity_t e)
{
    uint32_t idx = kr_entity_index(e);
    if (idx < s->entry_capacity) {
        __builtin_prefetch(&s->entries[idx], 1);
        __builtin_prefetch(&s->gens[idx]);
    }
}

/* The record of cell ci, or NULL for an index that names no cell (only a
 * hint reads it, and the entry read may be one the move will refuse). */
static inline kr__spatial_cell_rec_t *cell_or_null(const kr__spatial_state_t *s, uint32_t ci)
{
    if (ci < s->grid_cells) return &s->grid[ci];
    ci -= s->grid_cells;
    return ci < s->table_capacity ? &s->table[ci] : NULL;
}

/* Loads the old and the new cell of a move that changes cell. */
__attribute__((always_inline)) static inline void prefetch_cells(const kr__spatial_state_t *s, kr_entity_t e,
                                                                double x, double y)
{
    int32_t cx, cy;
    if (!in_hash(s, e) || !fast_cell(s, x, y, &cx, &cy)) return;
    const kr__spatial_entry_t *en = &s->entries[kr_entity_index(e)];
    if (((cx ^ en->cx) | (cy ^ en->cy)) == 0) return;
    const kr__spatial_cell_rec_t *old = cell_or_null(s, en->cell);
    if (old) __builtin_prefetch(old, 1);
    uint32_t gi = grid_index(s, cx, cy);
    if (gi != KR__NONE) __builtin_prefetch(&s->grid[gi], 1);
    else if (s->table_capacity) __builtin_prefetch(&s->table[table_home(s, cx, cy)], 1);
}

void kr__spatial_prefetch_cell(const kr__spatial_state_t *s, uint32_t idx)
{
    if (idx >= s->entry_capacity) return;
    const kr__spatial_cell_rec_t *c = cell_or_null(s, s->entries[idx].cell);
    if (c) __builtin_prefetch(c, 1);
}

kr_status_t kr_spatial_move_n(kr_world_t *w, size_t n, const kr_entity_t *e, const double *x, const double *y,
                              size_t *moved)
{
    if (moved) *moved = 0;
    if (!n) return KR_OK;
    if (!w || !e || !x || !y)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_move_n: expected a world and %zu entities and "
                        "positions, found a NULL %s", n, !w ? "world" : !e ? "entity array" : "position array");
    const kr__spatial_state_t *s = &w->spatial;
    for (size_t i = 0; i < n && i < 2 * MOVE_AHEAD; i++) prefetch_entry(s, e[i]);
    for (size_t i = 0; i < n && i < MOVE_AHEAD; i++) prefetch_cells(s, e[i], x[i], y[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + 2 * MOVE_AHEAD < n) prefetch_entry(s, e[i + 2 * MOVE_AHEAD]);
        if (i + MOVE_AHEAD < n) prefetch_cells(s, e[i + MOVE_AHEAD], x[i + MOVE_AHEAD], y[i + MOVE_AHEAD]);
        kr_status_t st = move_one(w, e[i], x[i], y[i]);
        if (st) {
            if (moved) *moved = i;
            return st;
        }
    }
    if (moved) *moved = n;
    return KR_OK;
}

kr_status_t kr_spatial_remove(kr_world_t *w, kr_entity_t e)
{
    static const char fn[] = "kr_spatial_remove";
    kr__record_t *r = kr__live(w, e, fn);
    if (!r) return kr_last_status();
    if (!(r->flags & KR__REC_SPATIAL)) return not_in_hash(fn, e);
    kr__spatial_forget(w, kr_entity_index(e));
    return KR_OK;
}

void kr__spatial_forget(kr_world_t *w, uint32_t idx)
{
    kr__spatial_state_t *s = &w->spatial;
    kr__record_t *r = &w->records[idx];
    if (!(r->flags & KR__REC_SPATIAL)) return;
    r->flags &= ~(uint32_t)KR__REC_SPATIAL;
    if (idx >= s->entry_capacity) return; /* only after kr__spatial_fini */
    cell_unlink(s, idx);
    s->gens[idx] = 0;
    s->members--;
}

bool kr_spatial_position(const kr_world_t *w, kr_entity_t e, double *x, double *y)
{
    const kr__record_t *r = kr__live(w, e, "kr_spatial_position");
    if (!r || !(r->flags & KR__REC_SPATIAL)) return false;
    const kr__spatial_entry_t *en = &w->spatial.entries[kr_entity_index(e)];
    if (x) *x = en->x;
    if (y) *y = en->y;
    return true;
}

/* ---- lookups ------------------------------------------------------------- */

kr_cell_t kr_spatial_cell_of(const kr_world_t *w, double x, double y)
{
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_cell_of: null world");
        return (kr_cell_t){ 0, 0 };
    }
    if (!isfinite(x) || !isfinite(y)) {
        bad_position("kr_spatial_cell_of", x, y);
        return (kr_cell_t){ 0, 0 };
    }
    double size = w->spatial.cell_size;
    if (!(in_cell_range(x / size) && in_cell_range(y / size)))
        bad_position("kr_spatial_cell_of", x, y); /* answer the clamped cell */
    return (kr_cell_t){ cell_clamped(x, size), cell_clamped(y, size) };
}

const kr_entity_t *kr_spatial_cell_entities(const kr_world_t *w, kr_cell_t cell, size_t *count)
{
    if (count) *count = 0;
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_cell_entities: null world");
        return NULL;
    }
    uint32_t ci = kr__spatial_find(&w->spatial, cell.x, cell.y);
    if (ci == KR__NONE) return NULL;
    const kr__spatial_cell_rec_t *c = kr__cell_at(&w->spatial, ci);
    if (count) *count = c->count;
    return kr__cell_members(c);
}

size_t kr_spatial_count(const kr_world_t *w)
{
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_count: null world");
        return 0;
    }
    return w->spatial.members;
}

size_t kr_spatial_cell_count(const kr_world_t *w)
{
    if (!w) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_cell_count: null world");
        return 0;
    }
    return w->spatial.live_cells;
}

/* ---- queries ------------------------------------------------------------- */

typedef struct query {
    const kr__spatial_state_t *s;
    double x0, y0, x1, y1;      /* box filter (box queries) */
    double px, py, r2;          /* disc filter (radius queries) */
    bool radius;
    int32_t gx0, gy0, gx1, gy1; /* cell range, inclusive */
    kr_entity_t *out;
    size_t capacity, n;
} query_t;

static void emit_cell(query_t *q, uint32_t ci)
{
    const kr__spatial_state_t *s = q->s;
    const kr__spatial_cell_rec_t *c = kr__cell_at(s, ci);
    const kr_entity_t *m = kr__cell_members(c);
    uint32_t count = c->count;
    /* Monotone rounding of x / size puts every point of a cell strictly
     * inside the range interior inside the box: no filtering there. */
    if (!q->radius && c->cx > q->gx0 && c->cx < q->gx1 && c->cy > q->gy0 && c->cy < q->gy1) {
        if (q->n < q->capacity) {
            size_t room = q->capacity - q->n;
            memcpy(q->out + q->n, m, (room < count ? room : count) * sizeof *m);
        }
        q->n += count;
        return;
    }
    for (uint32_t i = 0; i < count; i++) {
        const kr__spatial_entry_t *en = &s->entries[kr_entity_index(m[i])];
        bool hit;
        if (q->radius) {
            double dx = en->x - q->px, dy = en->y - q->py;
            hit = dx * dx + dy * dy <= q->r2;
        } else {
            hit = en->x >= q->x0 && en->x <= q->x1 && en->y >= q->y0 && en->y <= q->y1;
        }
        if (!hit) continue;
        if (q->n < q->capacity) q->out[q->n] = m[i];
        q->n++;
    }
}

int kr__cell_order_cmp(const void *a, const void *b)
{
    uint64_t x = ((const kr__cell_order_t *)a)->order, y = ((const kr__cell_order_t *)b)->order;
    return x < y ? -1 : x > y;
}

/* Visits the cells of the range in (cy, cx) order: by lookup of each cell
 * of the range, or, when the range holds more cells than are occupied, by a
 * scan of the occupied cells sorted into the same order. */
static size_t run_query(query_t *q, const char *fn)
{
    const kr__spatial_state_t *s = q->s;
    uint64_t live = s->live_cells;
    if (!live) return 0;
    uint64_t nx = (uint64_t)((int64_t)q->gx1 - q->gx0) + 1;
    uint64_t ny = (uint64_t)((int64_t)q->gy1 - q->gy0) + 1;
    if (nx <= live && ny <= live && nx * ny <= live) {
        for (int64_t cy = q->gy0; cy <= q->gy1; cy++)
            for (int64_t cx = q->gx0; cx <= q->gx1; cx++) {
                uint32_t ci = kr__spatial_find(s, (int32_t)cx, (int32_t)cy);
                if (ci != KR__NONE) emit_cell(q, ci);
            }
        return q->n;
    }
    kr__cell_order_t small[64], *hits = small;
    if (live > sizeof small / sizeof small[0]) {
        hits = malloc((size_t)live * sizeof *hits);
        if (!hits) {
            kr__fail(KR_ERR_NOMEM, "%s: out of memory sorting %llu cells", fn, (unsigned long long)live);
            return 0;
        }
    }
    size_t k = 0;
    for (uint32_t i = 0; i < s->grid_cells + s->table_capacity; i++) {
        const kr__spatial_cell_rec_t *c = kr__cell_at(s, i);
        if (!c->count) continue;   /* empty, emptied or never used */
        if (c->cx < q->gx0 || c->cx > q->gx1 || c->cy < q->gy0 || c->cy > q->gy1) continue;
        hits[k].order = kr__cell_order_key(c->cx, c->cy);
        hits[k].cell = i;
        k++;
    }
    qsort(hits, k, sizeof *hits, kr__cell_order_cmp);
    for (size_t i = 0; i < k; i++) emit_cell(q, hits[i].cell);
    if (hits != small) free(hits);
    return q->n;
}

static bool query_args_ok(const kr_world_t *w, const kr_entity_t *out, size_t capacity, const char *fn)
{
    if (!w) kr__fail(KR_ERR_INVALID_ARG, "%s: null world", fn);
    else if (!out && capacity) kr__fail(KR_ERR_INVALID_ARG, "%s: null output with capacity %zu", fn, capacity);
    else return true;
    return false;
}

size_t kr_spatial_query_box(const kr_world_t *w, double x0, double y0, double x1, double y1,
                            kr_entity_t *out, size_t capacity)
{
    static const char fn[] = "kr_spatial_query_box";
    if (!query_args_ok(w, out, capacity, fn)) return 0;
    if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1)) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: box (%g, %g)-(%g, %g) is not finite", fn, x0, y0, x1, y1);
        return 0;
    }
    if (x0 > x1 || y0 > y1) return 0;
    double size = w->spatial.cell_size;
    query_t q = {
        .s = &w->spatial, .x0 = x0, .y0 = y0, .x1 = x1, .y1 = y1,
        .gx0 = cell_clamped(x0, size), .gy0 = cell_clamped(y0, size),
        .gx1 = cell_clamped(x1, size), .gy1 = cell_clamped(y1, size),
        .out = out, .capacity = capacity,
    };
    return run_query(&q, fn);
}

size_t kr_spatial_query_radius(const kr_world_t *w, double x, double y, double r,
                               kr_entity_t *out, size_t capacity)
{
    static const char fn[] = "kr_spatial_query_radius";
    if (!query_args_ok(w, out, capacity, fn)) return 0;
    if (!isfinite(x) || !isfinite(y) || !isfinite(r)) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: centre (%g, %g) or radius %g is not finite", fn, x, y, r);
        return 0;
    }
    if (r < 0) {
        kr__fail(KR_ERR_INVALID_ARG, "%s: negative radius %g", fn, r);
        return 0;
    }
    /* The bounding square, widened by a few ulps of the coordinates on each
     * side: a point the distance test takes (dx * dx + dy * dy <= r * r, in
     * doubles) may lie just past x + r as rounded, and one ulp of widening
     * left it out with some cell sizes (0.1) and not others (an entity at
     * distance 4.5 from a centre 4.4 left of it); and by 1e-153 besides,
     * below which a square rounds to 0 (with r 0, an entity at -5e-324 is
     * at distance 0). */
    double size = w->spatial.cell_size;
    double mx = 4 * DBL_EPSILON * (fabs(x) + r) + 1e-153, my = 4 * DBL_EPSILON * (fabs(y) + r) + 1e-153;
    query_t q = {
        .s = &w->spatial, .px = x, .py = y, .r2 = r * r, .radius = true,
        .gx0 = cell_clamped(x - r - mx, size),
        .gy0 = cell_clamped(y - r - my, size),
        .gx1 = cell_clamped(x + r + mx, size),
        .gy1 = cell_clamped(y + r + my, size),
        .out = out, .capacity = capacity,
    };
    return run_query(&q, fn);
}

kr_status_t kr_spatial_set_bounds(kr_world_t *w, const double bounds[4])
{
    if (!w) return kr__fail(KR_ERR_INVALID_ARG, "kr_spatial_set_bounds: null world");
    /* Entities keep their cell's index: re-laying the cells under them
     * would break the reverse index, so only an empty hash is re-laid. */
    if (w->spatial.members)
        return kr__fail(KR_ERR_STATE, "kr_spatial_set_bounds: the spatial hash holds %zu entities",
                        w->spatial.members);
    /* a scan under way walks the grid by index */
    if (w->spatial_scans) return kr__fail(KR_ERR_STATE, "kr_spatial_set_bounds: during kr_spatial_scan");
    kr__spatial_state_t fresh;
    kr_status_t st = kr__spatial_init(&fresh, w->spatial.cell_size, bounds);
    if (st) return st;
    /* The reverse index by entity index is kept (all its entries unused). */
    fresh.entries = w->spatial.entries;
    fresh.gens = w->spatial.gens;   /* all 0: the hash is empty */
    fresh.entry_capacity = w->spatial.entry_capacity;
    w->spatial.entries = NULL;
    w->spatial.gens = NULL;
    kr__spatial_fini(&w->spatial);
    w->spatial = fresh;
    return KR_OK;
}

size_t kr_spatial_grid_cells(const kr_world_t *w)
{
    return w ? w->spatial.grid_cells : 0;
}

void kr_spatial_cell_prefetch(const kr_world_t *w, kr_cell_t cell)
{
    uint32_t gi = w ? grid_index(&w->spatial, cell.x, cell.y) : KR__NONE;
    if (gi != KR__NONE) __builtin_prefetch(&w->spatial.grid[gi], 1);
}
