/* Regions: the geometry of a cut world, and the per-step cycle of one
 * region simulator (act, migrate, exchange halos), see kairos/region.h and
 * docs/regions.md.
 *
 * Migrants and the halo strip for one neighbour travel in one sync-event
 * per step: the strip is an entity carrying a behavior whose serialize
 * callback writes the strip's bytes, so it rides the same pack as the
 * migrants and needs nothing of the sync machinery beyond what entity
 * migration already does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/kairos.h"
#include "base/error.h"
#include "base/hmap.h"
#include "schedulers/model_fail.h"

#define REGION_CONTEXT "kr.region"
#define REGION_AGENT "kr.region.agent"
#define REGION_STRIP "kr.region.strip"
#define REGION_DRIVER "kr.region.driver"
#define REGION_EXCHANGE "kr.region.exchange"
#define REGION_START "kr.region.start"
#define STRIP_MAGIC 0x6b726731u
/* Acts between two calls of kr_sim_progress (a walker update is ~0.1 us). */
#define PROGRESS_EVERY 2048
/* A strip larger than this is corrupt: a halo of a 10^6-wide world, 64
 * layers deep, with fields, stays far below it. */
#define STRIP_MAX_BYTES (1ull << 32)

/* ---- geometry ---- */

kr_status_t kr_region_grid_check(const kr_region_grid_t *g)
{
    if (g->width < 1 || g->height < 1 || g->width > KR_REGION_MAX_SIDE || g->height > KR_REGION_MAX_SIDE)
        return kr__fail(KR_ERR_INVALID_ARG, "a region grid of %d x %d cells: expected 1 to %d cells a side", g->width,
                        g->height, KR_REGION_MAX_SIDE);
    if (g->cols < 1 || g->rows < 1 || (uint64_t)g->cols * g->rows > KR_REGION_MAX)
        return kr__fail(KR_ERR_INVALID_ARG, "a cut into %u x %u regions: expected at least 1 x 1 and at most %u "
                        "regions", g->cols, g->rows, KR_REGION_MAX);
    if (g->cols > (uint32_t)g->width || g->rows > (uint32_t)g->height)
        return kr__fail(KR_ERR_INVALID_ARG, "a cut into %u x %u regions of a %d x %d grid: expected at most one "
                        "region per cell", g->cols, g->rows, g->width, g->height);
    return KR_OK;
}

uint32_t kr_region_grid_count(const kr_region_grid_t *g) { return g->cols * g->rows; }

static int32_t cut_at(int32_t size, uint32_t parts, uint32_t i)
{
    return (int32_t)((int64_t)i * size / parts);
}

kr_rect_t kr_region_grid_rect(const kr_region_grid_t *g, uint32_t i)
{
    uint32_t c = i % g->cols, r = i / g->cols;
    return (kr_rect_t){ cut_at(g->width, g->cols, c), cut_at(g->height, g->rows, r),
                        cut_at(g->width, g->cols, c + 1), cut_at(g->height, g->rows, r + 1) };
}

static int32_t clamp32(int64_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : (int32_t)v; }

kr_rect_t kr_region_grid_stored(const kr_region_grid_t *g, uint32_t i)
{
    kr_rect_t r = kr_region_grid_rect(g, i);
    int64_t k = g->halo;
    return (kr_rect_t){ clamp32(r.x0 - k, 0, g->width), clamp32(r.y0 - k, 0, g->height),
                        clamp32(r.x1 + k, 0, g->width), clamp32(r.y1 + k, 0, g->height) };
}

uint32_t kr_region_grid_owner(const kr_region_grid_t *g, int32_t x, int32_t y)
{
    if (x < 0 || y < 0 || x >= g->width || y >= g->height) return UINT32_MAX;
    /* the column c with c*W/P <= x < (c+1)*W/P */
    uint32_t c = (uint32_t)((((int64_t)x + 1) * g->cols - 1) / g->width);
    uint32_t r = (uint32_t)((((int64_t)y + 1) * g->rows - 1) / g->height);
    return r * g->cols + c;
}

size_t kr_region_grid_neighbours(const kr_region_grid_t *g, uint32_t i, uint32_t out[8])
{
    int64_t c = i % g->cols, r = i / g->cols;
    size_t n = 0;
    for (int64_t dr = -1; dr <= 1; dr++)
        for (int64_t dc = -1; dc <= 1; dc++) {
            int64_t cc = c + dc, rr = r + dr;
            if ((!dc && !dr) || cc < 0 || rr < 0 || cc >= g->cols || rr >= g->rows) continue;
            out[n++] = (uint32_t)(rr * g->cols + cc);
        }
    return n; /* row-major scan: increasing order */
}

static kr_rect_t rect_meet(kr_rect_t a, kr_rect_t b)
{
    kr_rect_t r = { a.x0 > b.x0 ? a.x0 : b.x0, a.y0 > b.y0 ? a.y0 : b.y0, a.x1 < b.x1 ? a.x1 : b.x1,
                    a.y1 < b.y1 ? a.y1 : b.y1 };
    if (r.x1 < r.x0) r.x1 = r.x0;
    if (r.y1 < r.y0) r.y1 = r.y0;
    return r;
}

/* ---- a region ---- */

typedef struct snap_entry {
    uint64_t id;
    kr_entity_t e;
    int32_t x, y;            /* its cell (a cell's gathered agents only) */
} snap_entry_t;

typedef struct neighbour {
    uint32_t region, sim;
    kr_rect_t send;          /* my own cells in its halo */
    kr_rect_t receive;       /* its own cells in my halo */
    kr_rect_t stored;        /* its own cells and halo */
    snap_entry_t *out;       /* migrants this step (may hold stale or returned ones) */
    size_t out_count, out_cap;
    bool arrived;            /* its strip for this step is in */
    size_t migrants;         /* leaving for it this step */
} neighbour_t;

typedef struct ghost_rec {
    uint64_t id;
    int32_t x, y;
    size_t offset;           /* of its bytes in ghost_bytes */
} ghost_rec_t;

struct kr_region {
    kr_sim_t *sim;
    kr_world_t *world;
    kr_region_desc_t desc;
    kr_region_grid_t grid;
    uint32_t index;
    kr_rect_t own, stored;
    uint32_t stride;
    kr_time_t time_step, end_time;
    uint64_t seed, step;
    kr_component_t agent, strip, driver;
    kr_event_type_t exchange;
    neighbour_t nb[8];
    size_t nb_count;
    double *cur, *next;      /* fields x stored cells each */
    kr_rng_t *rng;
    snap_entry_t *snap;      /* the agents of the cell being scanned */
    size_t snap_cap;
    ghost_rec_t *ghost_recs;
    size_t ghost_count, ghost_cap;
    kr_buf_t ghost_bytes;
    kr_region_ghost_t *ghosts; /* the public view of ghost_recs, sorted */
    bool ghosts_ready;
    kr_buf_t scratch;
    /* This step's emigrants as ghosts: they are in cells of other regions
     * at the end of the step, where nobody else can report them yet. */
    ghost_rec_t *emigrants;
    size_t emigrant_count, emigrant_cap;
    kr_buf_t emigrant_bytes;
    uint64_t updates, migrants_sent, migrant_bytes;
    /* The agent acting now and its cell: its cell is known from the
     * scan, which spares act a look into the spatial hash. */
    kr_entity_t acting;
    int32_t acting_x, acting_y;
    bool moved_other;        /* an act moved an agent other than itself */
    /* ids of the migrants that arrived for the next step: checked for
     * duplicates before it (two regions cannot both send one agent) */
    uint64_t *arrived;
    size_t arrived_count, arrived_cap;
    /* kr_region_scatter: the births of every region of the cut in this
     * process, placed once by the first region that asked, by region
     * (start[i] .. start[i + 1]); freed when the last local region has
     * taken its share. Held by a region of the cut whose slot was free,
     * so several populations may be under way at once. */
    struct scatter {
        uint64_t first, count;
        bool (*place)(uint64_t id, int32_t *x, int32_t *y, void *arg);
        kr_region_birth_t *births;
        size_t *start;
        uint32_t waiting;    /* local regions that have not taken theirs */
    } scatter;
};

typedef struct strip_state {
    uint8_t *data;
    uint64_t len;
} strip_state_t;

typedef struct driver_state {
    kr_region_t *region;
} driver_state_t;

typedef struct exchange_msg {
    uint32_t from;           /* region index of the sender */
    uint32_t migrants;
    uint64_t step;           /* the sender's step */
} exchange_msg_t;

static kr_context_type_t region_context(kr_model_t *m)
{
    return kr_model_find_context_type(m, REGION_CONTEXT);
}

kr_region_t *kr_region_of(kr_sim_t *sim)
{
    kr_context_type_t t = sim ? region_context(kr_sim_model(sim)) : 0;
    kr_region_t *r = t ? kr_sim_context(sim, t) : NULL;
    return r && r->sim ? r : NULL;
}

static void region_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    kr_region_t *r = context;
    for (size_t i = 0; i < 8; i++) free(r->nb[i].out);
    free(r->cur);
    free(r->next);
    kr_rng_destroy(r->rng);
    free(r->snap);
    free(r->ghost_recs);
    free(r->ghosts);
    kr_buf_fini(&r->ghost_bytes);
    kr_buf_fini(&r->scratch);
    free(r->emigrants);
    kr_buf_fini(&r->emigrant_bytes);
    free(r->scatter.births);
    free(r->scatter.start);
    free(r->arrived);
}

static void strip_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w, (void)self;
    strip_state_t *s = state;
    free(s->data);
    s->data = NULL;
}

static kr_status_t strip_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser)
{
    (void)w, (void)self;
    strip_state_t *s = state;
    kr_status_t st = kr_ser_u64(ser, &s->len);
    if (st) return st;
    if (kr_serializer_loading(ser)) {
        if (s->len > STRIP_MAX_BYTES || s->len > kr_serializer_left(ser))
            return kr__fail(KR_ERR_CORRUPT, "a halo strip of %llu bytes (%zu left in the message)",
                            (unsigned long long)s->len, kr_serializer_left(ser));
        free(s->data);
        s->data = malloc(s->len ? s->len : 1);
        if (!s->data) return kr__fail(KR_ERR_NOMEM, "out of memory for a halo strip");
    }
    return kr_ser_bytes(ser, s->data, s->len);
}

static void region_step(kr_region_t *r);

/* The driver holds a pointer to this process's region: it never travels,
 * and one arriving from the wire is refused. */
static kr_status_t driver_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser)
{
    (void)w, (void)self, (void)state, (void)ser;
    return kr__fail(KR_ERR_CORRUPT, "a region's step driver cannot move between simulators");
}

static void driver_update(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w, (void)self;
    driver_state_t *d = state;
    if (d->region) region_step(d->region);
}

static void exchange_arrive(kr_sim_t *sim, void *data);
static void start_event(kr_sim_t *sim, void *data);

kr_status_t kr_region_register(kr_model_t *m)
{
    if (region_context(m)) return KR_OK; /* another region kind did it */
    kr_registry_t *reg = kr_model_registry(m);
    static const kr_behavior_vtbl_t strip_vtbl = { .on_destroy = strip_destroy, .serialize = strip_serialize };
    static const kr_behavior_vtbl_t driver_vtbl = { .on_update = driver_update, .serialize = driver_serialize };
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = REGION_CONTEXT, .size = sizeof(kr_region_t),
                                                        .fini = region_fini }) ||
        !kr_component_register(reg, &(kr_component_desc_t){ .name = REGION_AGENT, .size = sizeof(kr_region_agent_t) }) ||
        !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = REGION_STRIP, .state_size = sizeof(strip_state_t),
                                                          .vtbl = &strip_vtbl }) ||
        !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = REGION_DRIVER, .state_size = sizeof(driver_state_t),
                                                          .vtbl = &driver_vtbl }) ||
        !kr_model_event_type(m, &(kr_event_type_desc_t){ .name = REGION_EXCHANGE, .size = sizeof(exchange_msg_t),
                                                          .on_target_side = exchange_arrive }) ||
        !kr_model_event_type(m, &(kr_event_type_desc_t){ .name = REGION_START, .on_event = start_event }))
        return kr_last_status();
    return KR_OK;
}

kr_region_t *kr_region_create(kr_sim_t *sim, const kr_region_desc_t *desc)
{
    kr_model_t *m = kr_sim_model(sim);
    kr_context_type_t ctx = region_context(m);
    if (!ctx) {
        kr__fail(KR_ERR_STATE, "region '%s': kr_region_register was not called by the kind", kr_sim_name(sim));
        return NULL;
    }
    if (kr_sim_formalism(sim) != KR_AGENT_BASED || !kr_sim_time_step(sim)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': expected an agent-based simulator with a time step",
                 kr_sim_name(sim));
        return NULL;
    }
    if (!desc->act) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': the kind gives no act callback", kr_sim_name(sim));
        return NULL;
    }
    if (desc->ghost_size && !desc->ghost) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': ghost_size %zu without a ghost callback", kr_sim_name(sim),
                 desc->ghost_size);
        return NULL;
    }
    kr_region_grid_t g = { desc->width, desc->height, desc->cut.cols, desc->cut.rows, desc->halo };
    kr_status_t st = kr_region_grid_check(&g);
    if (st) return NULL;
    if (desc->cut.index >= kr_region_grid_count(&g) ||
        desc->cut.first_sim + desc->cut.index != kr_sim_id(sim) ||
        desc->cut.first_sim + kr_region_grid_count(&g) > kr_model_sim_count(m)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': region %u of %u starting at simulator %u does not fit the model",
                 kr_sim_name(sim), desc->cut.index, kr_region_grid_count(&g), desc->cut.first_sim);
        return NULL;
    }
    /* A halo must lie within the 8 neighbours, and so must the halo cells
     * of an agent that moved (at most `halo` cells) into a neighbour: the
     * narrowest region is at least twice the halo wide. */
    if ((g.cols > 1 && (uint64_t)(g.width / (int32_t)g.cols) < 2 * (uint64_t)g.halo) ||
        (g.rows > 1 && (uint64_t)(g.height / (int32_t)g.rows) < 2 * (uint64_t)g.halo)) {
        kr__fail(KR_ERR_INVALID_ARG, "region '%s': a halo of %u cells needs regions at least %llu cells wide; the "
                 "narrowest region of a %d x %d grid cut %u x %u is narrower", kr_sim_name(sim), g.halo,
                 2 * (unsigned long long)g.halo, g.width, g.height, g.cols, g.rows);
        return NULL;
    }
    kr_region_t *r = kr_sim_context(sim, ctx);
    if (!r) return NULL;
    if (r->sim) {
        kr__fail(KR_ERR_STATE, "region '%s': the simulator is a region already", kr_sim_name(sim));
        return NULL;
    }
    kr_region_t fresh = { .world = kr_sim_world(sim), .desc = *desc, .grid = g, .index = desc->cut.index,
                          .time_step = kr_sim_time_step(sim), .end_time = kr_model_end_time(m),
                          .seed = kr_model_seed(m) };
    *r = fresh;
    kr_buf_init(&r->ghost_bytes);
    kr_buf_init(&r->scratch);
    kr_buf_init(&r->emigrant_bytes);
    r->own = kr_region_grid_rect(&g, r->index);
    r->stored = kr_region_grid_stored(&g, r->index);
    r->stride = (uint32_t)(r->stored.x1 - r->stored.x0);
    kr_registry_t *reg = kr_model_registry(m);
    r->agent = kr_component_lookup(reg, REGION_AGENT);
    r->strip = kr_component_lookup(reg, REGION_STRIP);
    r->driver = kr_component_lookup(reg, REGION_DRIVER);
    r->exchange = kr_model_find_event_type(m, REGION_EXCHANGE);
    uint32_t nb[8];
    r->nb_count = kr_region_grid_neighbours(&g, r->index, nb);
    for (size_t i = 0; i < r->nb_count; i++) {
        neighbour_t *n = &r->nb[i];
        n->region = nb[i];
        n->sim = desc->cut.first_sim + nb[i];
        n->send = rect_meet(r->own, kr_region_grid_stored(&g, nb[i]));
        n->receive = rect_meet(r->stored, kr_region_grid_rect(&g, nb[i]));
        n->stored = kr_region_grid_stored(&g, nb[i]);
        kr_time_t p = kr_model_promise(m, kr_sim_id(sim), n->sim);
        if (p == KR_TIME_NEVER || p > r->time_step) {
            kr__fail(KR_ERR_INVALID_ARG, "region '%s': expected a dependency to its neighbour '%s' with a promise of "
                     "at most the time step", kr_sim_name(sim), kr_sim_name(kr_model_sim(m, n->sim)));
            return NULL;
        }
    }
    uint64_t cells = kr_rect_area(r->stored);
    if (desc->fields) {
        r->cur = calloc(cells * desc->fields, sizeof *r->cur);
        r->next = calloc(cells * desc->fields, sizeof *r->next);
    }
    r->rng = kr_rng_create(r->seed, KR_RNG_AGENT, 0, 0);
    if ((desc->fields && (!r->cur || !r->next)) || !r->rng) {
        kr__fail(KR_ERR_NOMEM, "region '%s': out of memory for %llu cells", kr_sim_name(sim),
                 (unsigned long long)cells);
        return NULL;
    }
    /* The dense grid covers exactly the stored cells: bounds are points,
     * and the last cell's centre keeps the grid from growing a row. */
    double b[4] = { r->stored.x0, r->stored.y0, r->stored.x1 - 0.5, r->stored.y1 - 0.5 };
    if ((st = kr_spatial_set_bounds(r->world, b))) return NULL;
    kr_entity_t d = kr_entity_create(r->world);
    driver_state_t *ds = d ? kr_component_add(r->world, d, r->driver) : NULL;
    if (!ds) return NULL;
    ds->region = r;
    /* Time 0: the initial fields take effect and the initial halos go out,
     * for step 1. */
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, 0, kr_model_find_event_type(m, REGION_START), NULL, NULL))
        return NULL;
    r->sim = sim;
    return r;
}

kr_sim_t *kr_region_sim(const kr_region_t *r) { return r->sim; }
kr_world_t *kr_region_world(const kr_region_t *r) { return r->world; }
const kr_region_grid_t *kr_region_grid(const kr_region_t *r) { return &r->grid; }
uint32_t kr_region_index(const kr_region_t *r) { return r->index; }
kr_rect_t kr_region_rect(const kr_region_t *r) { return r->own; }
kr_rect_t kr_region_stored(const kr_region_t *r) { return r->stored; }
uint64_t kr_region_stored_cells(const kr_region_t *r) { return kr_rect_area(r->stored); }
uint64_t kr_region_step(const kr_region_t *r) { return kr_sim_now(r->sim) / r->time_step; }
uint64_t kr_region_migrants_sent(const kr_region_t *r) { return r->migrants_sent; }
uint64_t kr_region_migrant_bytes(const kr_region_t *r) { return r->migrant_bytes; }
uint64_t kr_region_updates(const kr_region_t *r) { return r->updates; }

/* ---- agents ---- */

kr_entity_t kr_region_agent_create(kr_region_t *r, uint64_t id, int32_t x, int32_t y)
{
    if (!id || !kr_rect_contains(r->own, x, y)) {
        kr__fail(KR_ERR_INVALID_ARG, "region %u: an agent %llu in cell (%d, %d): expected a non-zero id and one of "
                 "the region's own cells [%d, %d) x [%d, %d)", r->index, (unsigned long long)id, x, y, r->own.x0,
                 r->own.x1, r->own.y0, r->own.y1);
        return KR_ENTITY_INVALID;
    }
    kr_entity_t e = kr_entity_create_desc(r->world, &(kr_entity_desc_t){ .components = &r->agent,
                                                                          .component_count = 1 });
    if (!e) return KR_ENTITY_INVALID;
    /* born this step: acts from the next */
    *(kr_region_agent_t *)kr_component_get(r->world, e, r->agent) = (kr_region_agent_t){ id, r->step };
    if (kr_spatial_insert(r->world, e, x + 0.5, y + 0.5)) {
        kr_entity_destroy(r->world, e);
        return KR_ENTITY_INVALID;
    }
    return e;
}

uint64_t kr_region_agent_id(const kr_region_t *r, kr_entity_t e)
{
    const kr_region_agent_t *a = kr_component_has(r->world, e, r->agent)
                                     ? kr_component_get(r->world, e, r->agent) : NULL;
    return a ? a->id : 0;
}

static bool cell_lookup(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y)
{
    double px, py;
    if (!kr_spatial_position(r->world, e, &px, &py)) return false;
    if (x) *x = (int32_t)floor(px);
    if (y) *y = (int32_t)floor(py);
    return true;
}

bool kr_region_agent_cell(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y)
{
    if (e == r->acting && e) {
        if (x) *x = r->acting_x;
        if (y) *y = r->acting_y;
        return true;
    }
    return cell_lookup(r, e, x, y);
}

static inline kr_status_t place(kr_region_t *r, kr_entity_t e, int32_t x, int32_t y)
{
    kr_status_t st = kr_spatial_move(r->world, e, x + 0.5, y + 0.5);
    if (!st && e == r->acting) {
        r->acting_x = x;
        r->acting_y = y;
    } else if (!st) {
        r->moved_other = true; /* an agent gathered with the acting one may have moved */
    }
    return st;
}

kr_status_t kr_region_agent_move(kr_region_t *r, kr_entity_t e, int32_t x, int32_t y)
{
    if (kr_rect_contains(r->own, x, y)) return place(r, e, x, y);
    uint32_t owner = kr_region_grid_owner(&r->grid, x, y);
    size_t slot = 0;
    if (owner != r->index)
        while (slot < r->nb_count && r->nb[slot].region != owner) slot++;
    if (owner == UINT32_MAX || (owner != r->index && slot == r->nb_count))
        return kr__fail(KR_ERR_INVALID_ARG, "region %u: a move to cell (%d, %d): expected a cell of the %d x %d world "
                        "owned by this region or a neighbour", r->index, x, y, r->grid.width, r->grid.height);
    /* Only agents migrate: the receiver refuses anything else. */
    uint64_t id = kr_region_agent_id(r, e);
    if (!id)
        return kr__fail(KR_ERR_INVALID_ARG, "region %u: a move to cell (%d, %d) of region %u: expected an agent "
                        "(kr.region.agent), found entity %u:%u", r->index, x, y, owner, kr_entity_index(e),
                        kr_entity_generation(e));
    kr_status_t st = place(r, e, x, y);
    if (st) return st;
    neighbour_t *n = &r->nb[slot];
    if (n->out_count == n->out_cap) {
        size_t cap = n->out_cap ? n->out_cap * 2 : 64;
        snap_entry_t *o = realloc(n->out, cap * sizeof *o);
        if (!o) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
        n->out = o;
        n->out_cap = cap;
    }
    n->out[n->out_count++] = (snap_entry_t){ id, e, x, y };
    return KR_OK;
}

size_t kr_region_agent_count(const kr_region_t *r)
{
    kr_view_t v;
    if (kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->agent } })) return 0;
    size_t n = kr_view_count(&v);
    kr_view_fini(&v);
    return n;
}

uint64_t kr_region_child_id(uint64_t parent, uint64_t step, uint32_t n)
{
    uint64_t h = kr__mix64(kr__mix64(parent ^ 0x6368696c64ULL) ^ kr__mix64(step + 0x9e3779b97f4a7c15ULL) ^ n);
    return h ? h : 1;
}

/* ---- births spread over the world ---- */

static int birth_cmp(const void *a, const void *b)
{
    const kr_region_birth_t *p = a, *q = b;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* Places agents first .. first + count - 1 and sorts them by the local
 * region they start in (a counting sort), into `sc`; agents of other
 * processes' regions are dropped. */
static kr_status_t scatter_all(kr_region_t *r, struct scatter *sc, uint64_t first, uint64_t count,
                               bool (*place)(uint64_t id, int32_t *x, int32_t *y, void *arg), void *arg)
{
    kr_model_t *m = kr_sim_model(r->sim);
    uint32_t regions = kr_region_grid_count(&r->grid);
    sc->start = calloc((size_t)regions + 1, sizeof *sc->start);
    bool *local = calloc(regions, sizeof *local);
    kr_status_t st = sc->start && local ? KR_OK : kr__fail(KR_ERR_NOMEM, "region %u: out of memory", r->index);
    for (uint32_t i = 0; !st && i < regions; i++) {
        local[i] = kr_sim_is_local(kr_model_sim(m, r->desc.cut.first_sim + i));
        sc->waiting += local[i];
    }
    /* two passes over the placements (count, then fill): nothing but the
     * births themselves is kept, at the price of placing each twice */
    for (int pass = 0; !st && pass < 2; pass++) {
        size_t *fill = NULL;
        if (pass == 1) {
            for (uint32_t i = 0; i < regions; i++) sc->start[i + 1] += sc->start[i];
            size_t total = sc->start[regions];
            sc->births = malloc((total ? total : 1) * sizeof *sc->births);
            fill = calloc(regions, sizeof *fill);
            if (!sc->births || !fill) {
                free(fill);
                st = kr__fail(KR_ERR_NOMEM, "region %u: out of memory for %zu births", r->index, total);
                break;
            }
        }
        for (uint64_t k = 0; k < count; k++) {
            uint64_t id = first + k;
            int32_t x, y;
            if (!place(id, &x, &y, arg)) continue;
            uint32_t o = kr_region_grid_owner(&r->grid, x, y);
            if (o == UINT32_MAX) {
                st = kr__fail(KR_ERR_INVALID_ARG, "region %u: agent %llu placed in cell (%d, %d), outside the %d x %d "
                              "world", r->index, (unsigned long long)id, x, y, r->grid.width, r->grid.height);
                break;
            }
            if (!local[o]) continue;
            if (pass == 0) {
                sc->start[o + 1]++;
            } else if (fill[o] < sc->start[o + 1] - sc->start[o]) {
                sc->births[sc->start[o] + fill[o]++] = (kr_region_birth_t){ id, x, y };
            } else {
                st = kr__fail(KR_ERR_STATE, "region %u: agent %llu placed differently twice: `place` must depend on "
                              "the id alone", r->index, (unsigned long long)id);
                break;
            }
        }
        free(fill);
    }
    free(local);
    if (st) {
        free(sc->births);
        free(sc->start);
        *sc = (struct scatter){ 0 };
        return st;
    }
    sc->first = first;
    sc->count = count;
    sc->place = place;
    return KR_OK;
}

kr_status_t kr_region_scatter(kr_region_t *r, uint64_t first, uint64_t count,
                              bool (*place)(uint64_t id, int32_t *x, int32_t *y, void *arg), void *arg,
                              kr_region_birth_t **out, size_t *n)
{
    if (!r || !place || !out || !n) return kr__fail(KR_ERR_INVALID_ARG, "kr_region_scatter: expected a region, a "
                                                    "place callback and places for the result");
    *out = NULL;
    *n = 0;
    kr_model_t *m = kr_sim_model(r->sim);
    uint32_t regions = kr_region_grid_count(&r->grid);
    /* a region of this cut, in this process, that placed these births;
     * failing that, one with a free slot to hold them (this one first) */
    kr_region_t *holder = NULL, *free_slot = r->scatter.births ? NULL : r;
    for (uint32_t i = 0; i < regions && !holder; i++) {
        kr_sim_t *s = kr_model_sim(m, r->desc.cut.first_sim + i);
        kr_region_t *h = kr_sim_is_local(s) ? kr_region_of(s) : NULL;
        if (!h) continue;
        const struct scatter *sc = &h->scatter;
        if (sc->births && sc->first == first && sc->count == count && sc->place == place) holder = h;
        else if (!sc->births && !free_slot) free_slot = h;
    }
    if (!holder) {
        if (!free_slot)
            return kr__fail(KR_ERR_STATE, "region %u: more populations scattered at once than regions of the cut "
                            "in this process", r->index);
        kr_status_t st = scatter_all(r, &free_slot->scatter, first, count, place, arg);
        if (st) return st;
        holder = free_slot;
    }
    struct scatter *sc = &holder->scatter;
    size_t from = sc->start[r->index], len = sc->start[r->index + 1] - from;
    kr_region_birth_t *mine = malloc((len ? len : 1) * sizeof *mine);
    if (!mine) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for %zu births", r->index, len);
    if (len) memcpy(mine, sc->births + from, len * sizeof *mine);
    qsort(mine, len, sizeof *mine, birth_cmp);
    if (--sc->waiting == 0) {
        free(sc->births);
        free(sc->start);
        *sc = (struct scatter){ 0 };
    }
    *out = mine;
    *n = len;
    return KR_OK;
}

kr_rng_t *kr_region_rng(kr_region_t *r, uint64_t id)
{
    kr_rng_reset(r->rng, r->seed, KR_RNG_AGENT, id, r->step);
    return r->rng;
}

/* ---- fields and ghosts ---- */

size_t kr_region_field_index(const kr_region_t *r, int32_t x, int32_t y)
{
    return (size_t)(y - r->stored.y0) * r->stride + (size_t)(x - r->stored.x0);
}

const double *kr_region_field(const kr_region_t *r, uint32_t layer)
{
    return layer < r->desc.fields ? r->cur + (size_t)layer * kr_rect_area(r->stored) : NULL;
}

double *kr_region_field_next(kr_region_t *r, uint32_t layer)
{
    return layer < r->desc.fields ? r->next + (size_t)layer * kr_rect_area(r->stored) : NULL;
}

static int ghost_cmp(const void *a, const void *b)
{
    const ghost_rec_t *p = a, *q = b;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

static kr_status_t ghosts_prepare(kr_region_t *r)
{
    if (r->ghosts_ready) return KR_OK;
    if (r->ghost_count) qsort(r->ghost_recs, r->ghost_count, sizeof *r->ghost_recs, ghost_cmp);
    free(r->ghosts);
    r->ghosts = malloc((r->ghost_count ? r->ghost_count : 1) * sizeof *r->ghosts);
    if (!r->ghosts) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the halo", r->index);
    for (size_t i = 0; i < r->ghost_count; i++) {
        const ghost_rec_t *g = &r->ghost_recs[i];
        r->ghosts[i] = (kr_region_ghost_t){ g->id, g->x, g->y, r->ghost_bytes.data + g->offset };
    }
    r->ghosts_ready = true;
    return KR_OK;
}

const kr_region_ghost_t *kr_region_ghosts(const kr_region_t *r, int32_t x, int32_t y, size_t *count)
{
    *count = 0;
    /* Sorted on the first look of the step: a kind that never reads its
     * halo (walkers) never pays for sorting it. The region is the
     * simulator's own; only this cache changes. */
    if (!r->ghosts_ready) {
        kr_region_t *mut = (kr_region_t *)r;
        if (ghosts_prepare(mut)) {
            kr__model_fail(kr_sim_model(mut->sim), kr_last_status(), "region '%s': %s", kr_sim_name(mut->sim),
                           kr_last_error());
            return NULL;
        }
    }
    size_t lo = 0, hi = r->ghost_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kr_region_ghost_t *g = &r->ghosts[mid];
        if (g->y < y || (g->y == y && g->x < x)) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < r->ghost_count && r->ghosts[end].x == x && r->ghosts[end].y == y) end++;
    *count = end - lo;
    return end > lo ? &r->ghosts[lo] : NULL;
}

/* ---- the exchange ---- */

static kr_status_t put_ghost(kr_buf_t *b, uint64_t id, int32_t x, int32_t y, const void *bytes, size_t n)
{
    kr_status_t st = kr_buf_put_u64(b, id);
    if (!st) st = kr_buf_put_u32(b, (uint32_t)x);
    if (!st) st = kr_buf_put_u32(b, (uint32_t)y);
    if (!st && n) st = kr_buf_append(b, bytes, n);
    return st;
}

/* The strip for neighbour n: field values of my own cells in its halo, and
 * every agent I hold at the end of the step in a cell of its halo: those
 * of my own cells there, and my emigrants bound for other regions' cells
 * there (their new region reports them only from the next step). */
static kr_status_t strip_write(kr_region_t *r, const neighbour_t *n, kr_buf_t *b)
{
    kr_rect_t s = n->send;
    kr_status_t st = kr_buf_put_u32(b, STRIP_MAGIC);
    if (!st) st = kr_buf_put_u32(b, r->index);
    if (!st) st = kr_buf_put_u64(b, r->step);
    if (!st) st = kr_buf_put_u32(b, r->desc.fields);
    for (uint32_t f = 0; !st && f < r->desc.fields; f++) {
        const double *v = kr_region_field(r, f);
        for (int32_t y = s.y0; !st && y < s.y1; y++)
            st = kr_buf_append(b, v + kr_region_field_index(r, s.x0, y), (size_t)(s.x1 - s.x0) * sizeof *v);
    }
    if (st) return st;
    size_t count_at = b->len;
    uint32_t count = 0;
    size_t gsize = r->desc.ghost_size;
    if ((st = kr_buf_put_u32(b, 0)) || (st = kr_buf_put_u32(b, (uint32_t)gsize))) return st;
    for (int32_t y = s.y0; y < s.y1; y++)
        for (int32_t x = s.x0; x < s.x1; x++) {
            size_t k;
            const kr_entity_t *in = kr_spatial_cell_entities(r->world, (kr_cell_t){ x, y }, &k);
            for (size_t i = 0; i < k; i++) {
                uint64_t id = kr_region_agent_id(r, in[i]);
                if (!id) continue;
                if ((st = put_ghost(b, id, x, y, NULL, 0)) || (st = kr_buf_reserve(b, gsize))) return st;
                if (gsize) {
                    memset(b->data + b->len, 0, gsize);
                    r->desc.ghost(r, in[i], b->data + b->len, r->desc.arg);
                    b->len += gsize;
                }
                count++;
            }
        }
    for (size_t i = 0; i < r->emigrant_count; i++) {
        const ghost_rec_t *g = &r->emigrants[i];
        if (!kr_rect_contains(n->stored, g->x, g->y) || kr_region_grid_owner(&r->grid, g->x, g->y) == n->region)
            continue;
        if ((st = put_ghost(b, g->id, g->x, g->y, r->emigrant_bytes.data + g->offset, gsize))) return st;
        count++;
    }
    memcpy(b->data + count_at, &(uint32_t){ count }, 4); /* little-endian hosts only, as the packs */
    return KR_OK;
}

/* Adds a ghost for the next step to this region's halo. */
static kr_status_t ghost_add(kr_region_t *r, uint64_t id, int32_t x, int32_t y, const void *bytes)
{
    if (r->ghost_count == r->ghost_cap) {
        size_t cap = r->ghost_cap ? r->ghost_cap * 2 : 256;
        ghost_rec_t *g = realloc(r->ghost_recs, cap * sizeof *g);
        if (!g) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the halo", r->index);
        r->ghost_recs = g;
        r->ghost_cap = cap;
    }
    r->ghost_recs[r->ghost_count++] = (ghost_rec_t){ id, x, y, r->ghost_bytes.len };
    r->ghosts_ready = false;
    return kr_buf_append(&r->ghost_bytes, bytes, r->desc.ghost_size);
}

/* Every region whose halo holds an emigrant's new cell must hear of it
 * from this one: itself, or a neighbour. A region further away could only
 * see it if the move went beyond the halo; the check says so instead of
 * leaving that region's halo short of an agent. */
static kr_status_t emigrant_reach(const kr_region_t *r, int32_t x, int32_t y)
{
    uint32_t dest = kr_region_grid_owner(&r->grid, x, y), around[8];
    size_t n = kr_region_grid_neighbours(&r->grid, dest, around);
    for (size_t i = 0; i < n; i++) {
        if (around[i] == r->index || !kr_rect_contains(kr_region_grid_stored(&r->grid, around[i]), x, y)) continue;
        bool told = false;
        for (size_t j = 0; j < r->nb_count && !told; j++) told = r->nb[j].region == around[i];
        if (!told)
            return kr__fail(KR_ERR_INVALID_ARG, "region %u: an agent moved to cell (%d, %d), in the halo of region %u, "
                            "which is no neighbour of region %u: moves must stay within the halo width",
                            r->index, x, y, around[i], r->index);
    }
    return KR_OK;
}

/* This step's emigrants as ghosts, before they leave: for the neighbours'
 * strips and for this region's own halo of the next step. */
static kr_status_t emigrants_collect(kr_region_t *r)
{
    r->emigrant_count = 0;
    kr_buf_clear(&r->emigrant_bytes);
    size_t gsize = r->desc.ghost_size;
    for (size_t i = 0; i < r->nb_count; i++) {
        const neighbour_t *n = &r->nb[i];
        for (size_t j = 0; j < n->migrants; j++) {
            const snap_entry_t *m = &n->out[j];
            int32_t x, y;
            kr_region_agent_cell(r, m->e, &x, &y);
            kr_status_t st = emigrant_reach(r, x, y);
            if (st) return st;
            if (r->emigrant_count == r->emigrant_cap) {
                size_t cap = r->emigrant_cap ? r->emigrant_cap * 2 : 64;
                ghost_rec_t *g = realloc(r->emigrants, cap * sizeof *g);
                if (!g) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
                r->emigrants = g;
                r->emigrant_cap = cap;
            }
            size_t at = r->emigrant_bytes.len;
            if ((st = kr_buf_reserve(&r->emigrant_bytes, gsize))) return st;
            if (gsize) {
                memset(r->emigrant_bytes.data + at, 0, gsize);
                r->desc.ghost(r, m->e, r->emigrant_bytes.data + at, r->desc.arg);
                r->emigrant_bytes.len += gsize;
            }
            r->emigrants[r->emigrant_count++] = (ghost_rec_t){ m->id, x, y, at };
            if (kr_rect_contains(r->stored, x, y) &&
                (st = ghost_add(r, m->id, x, y, r->emigrant_bytes.data + at)))
                return st;
        }
    }
    return KR_OK;
}

static int snap_cmp(const void *a, const void *b)
{
    const snap_entry_t *p = a, *q = b;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* The migrants still bound for neighbour n, by id, each once: an agent may
 * have moved on or come back since it was listed. */
static size_t migrants_of(kr_region_t *r, neighbour_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < n->out_count; i++) {
        int32_t x, y;
        kr_entity_t e = n->out[i].e;
        if (!kr_entity_alive(r->world, e) || !kr_region_agent_cell(r, e, &x, &y) ||
            kr_region_grid_owner(&r->grid, x, y) != n->region)
            continue;
        n->out[k++] = n->out[i];
    }
    if (k) qsort(n->out, k, sizeof *n->out, snap_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || n->out[u - 1].e != n->out[i].e) n->out[u++] = n->out[i];
    return u;
}

static kr_status_t exchange_send(kr_region_t *r)
{
    kr_status_t st = KR_OK;
    kr_entity_t *roots = NULL;
    size_t roots_cap = 0;
    for (size_t i = 0; i < r->nb_count; i++) {
        neighbour_t *n = &r->nb[i];
        n->migrants = migrants_of(r, n);
        n->out_count = 0;
    }
    st = emigrants_collect(r);
    for (size_t i = 0; !st && i < r->nb_count; i++) {
        neighbour_t *n = &r->nb[i];
        size_t m = n->migrants;
        if (m + 1 > roots_cap) {
            kr_entity_t *g = realloc(roots, (m + 1) * sizeof *g);
            if (!g) { st = kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index); break; }
            roots = g;
            roots_cap = m + 1;
        }
        for (size_t j = 0; j < m; j++) roots[j + 1] = n->out[j].e;
        if (m) {
            /* Bytes per migrant, for the stats: the pack the sync-event
             * makes of the same subtrees. */
            kr_buf_clear(&r->scratch);
            if ((st = kr_pack(r->world, roots + 1, m, &r->scratch))) break;
            r->migrant_bytes += r->scratch.len;
            r->migrants_sent += m;
        }
        kr_buf_clear(&r->scratch);
        if ((st = strip_write(r, n, &r->scratch))) break;
        roots[0] = kr_entity_create(r->world);
        strip_state_t *ss = roots[0] ? kr_component_add(r->world, roots[0], r->strip) : NULL;
        if (!ss) { st = kr_last_status(); break; }
        ss->data = malloc(r->scratch.len);
        if (!ss->data) { st = kr__fail(KR_ERR_NOMEM, "region %u: out of memory for a halo strip", r->index); break; }
        memcpy(ss->data, r->scratch.data, r->scratch.len);
        ss->len = r->scratch.len;
        exchange_msg_t msg = { r->index, (uint32_t)m, r->step };
        st = kr_schedule_sync(r->sim, &(kr_sync_desc_t){ .target = n->sim, .delay = r->time_step,
                                                          .type = r->exchange, .data = &msg, .entities = roots,
                                                          .entity_count = m + 1 }, NULL);
    }
    free(roots);
    return st;
}

static void start_event(kr_sim_t *sim, void *data)
{
    (void)data;
    kr_region_t *r = kr_region_of(sim);
    if (!r) return;
    double *t = r->cur; /* what setup wrote is the state of step 0 */
    r->cur = r->next;
    r->next = t;
    if (r->time_step > r->end_time) return;
    r->step = 0;
    kr_status_t st = exchange_send(r);
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s': the initial halo: %s", kr_sim_name(sim),
                           kr_last_error());
}

static kr_status_t strip_read(kr_region_t *r, neighbour_t *n, const uint8_t *data, size_t len)
{
    kr_reader_t rd;
    kr_reader_init(&rd, data, len);
    uint32_t magic = kr_reader_u32(&rd), from = kr_reader_u32(&rd);
    uint64_t step = kr_reader_u64(&rd);
    uint32_t fields = kr_reader_u32(&rd);
    if (rd.failed || magic != STRIP_MAGIC || from != n->region || step + 1 != kr_region_step(r) ||
        fields != r->desc.fields)
        return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with the wrong header", n->region);
    kr_rect_t s = n->receive;
    size_t w = (size_t)(s.x1 - s.x0);
    for (uint32_t f = 0; f < fields; f++) {
        double *v = r->cur + (size_t)f * kr_rect_area(r->stored);
        for (int32_t y = s.y0; y < s.y1; y++) {
            const void *row = kr_reader_view(&rd, w * sizeof(double));
            if (!row) return kr__fail(KR_ERR_CORRUPT, "a truncated halo strip from region %u", n->region);
            memcpy(v + kr_region_field_index(r, s.x0, y), row, w * sizeof(double));
        }
    }
    uint32_t count = kr_reader_u32(&rd), gsize = kr_reader_u32(&rd);
    if (rd.failed || gsize != r->desc.ghost_size || count > kr_reader_left(&rd) / (16 + (size_t)gsize))
        return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with a bad agent list", n->region);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t id = kr_reader_u64(&rd);
        int32_t x = (int32_t)kr_reader_u32(&rd), y = (int32_t)kr_reader_u32(&rd);
        const void *bytes = kr_reader_view(&rd, gsize);
        /* its own cells, or (emigrants) a third region's, in my halo */
        if (rd.failed || !id || !kr_rect_contains(r->stored, x, y) || kr_rect_contains(r->own, x, y))
            return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with an agent outside my halo", n->region);
        kr_status_t st = ghost_add(r, id, x, y, bytes);
        if (st) return st;
    }
    if (kr_reader_left(&rd)) return kr__fail(KR_ERR_CORRUPT, "a halo strip from region %u with trailing bytes",
                                             n->region);
    r->ghosts_ready = false;
    n->arrived = true;
    return KR_OK;
}

static kr_status_t arrive(kr_region_t *r, const exchange_msg_t *msg)
{
    size_t count;
    const kr_entity_t *in = kr_event_entities(r->sim, &count);
    neighbour_t *n = NULL;
    for (size_t i = 0; i < r->nb_count && !n; i++)
        if (r->nb[i].region == msg->from) n = &r->nb[i];
    if (!n || n->arrived || count != (size_t)msg->migrants + 1 || !kr_component_has(r->world, in[0], r->strip))
        return kr__fail(KR_ERR_CORRUPT, "an exchange from region %u that this region does not expect", msg->from);
    const strip_state_t *ss = kr_component_get(r->world, in[0], r->strip);
    kr_status_t st = strip_read(r, n, ss->data, ss->len);
    kr_entity_destroy(r->world, in[0]);
    if (!st && r->arrived_count + count > r->arrived_cap) {
        size_t cap = r->arrived_cap ? r->arrived_cap : 256;
        while (cap < r->arrived_count + count) cap *= 2;
        uint64_t *a = realloc(r->arrived, cap * sizeof *a);
        if (!a) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for migrants", r->index);
        r->arrived = a;
        r->arrived_cap = cap;
    }
    for (size_t i = 1; !st && i < count; i++) {
        int32_t x, y;
        uint64_t id = kr_region_agent_id(r, in[i]);
        if (!id || !kr_region_agent_cell(r, in[i], &x, &y) || !kr_rect_contains(r->own, x, y))
            st = kr__fail(KR_ERR_CORRUPT, "a migrant from region %u that is no agent of this region's cells",
                          msg->from);
        else
            r->arrived[r->arrived_count++] = id;
    }
    return st;
}

static void exchange_arrive(kr_sim_t *sim, void *data)
{
    kr_region_t *r = kr_region_of(sim);
    kr_status_t st = r ? arrive(r, data) : kr__fail(KR_ERR_STATE, "an exchange for a simulator that is no region");
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s': %s", kr_sim_name(sim), kr_last_error());
}

/* ---- the step ---- */

/* Every agent of the own cells acts once, cells in (y, x) order and the
 * agents of a cell by id. Each agent carries the step it last acted in (or
 * was born in): one that moves on to a cell not scanned yet, or is born
 * there, is claimed already and does not act twice or early. Cells are
 * gathered one at a time (kr_spatial_scan, which loads the agents of the
 * cells ahead), so no list of every agent is ever built. */
static kr_status_t act_cell(kr_world_t *w, const kr_spatial_visit_t *cell, void *arg)
{
    (void)w;
    kr_region_t *r = arg;
    uint64_t step = r->step;
    size_t k = cell->count;
    if (k > r->snap_cap) {
        size_t cap = r->snap_cap ? r->snap_cap : 64;
        while (cap < k) cap *= 2;
        snap_entry_t *b = realloc(r->snap, cap * sizeof *b);
        if (!b) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the step", r->index);
        r->snap = b;
        r->snap_cap = cap;
    }
    int32_t x = cell->cell.x, y = cell->cell.y;
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        kr_region_agent_t *a = cell->values[i];
        if (!a || a->step >= step) continue;
        a->step = step;
        /* insertion by id: cells hold a few agents */
        size_t j = n++;
        while (j > 0 && r->snap[j - 1].id > a->id) {
            r->snap[j] = r->snap[j - 1];
            j--;
        }
        r->snap[j] = (snap_entry_t){ a->id, cell->entities[i], x, y };
    }
    /* the cell's arrays are spent from here: acts change the world */
    r->moved_other = false;
    for (size_t j = 0; j < n; j++) {
        const snap_entry_t *a = &r->snap[j];
        /* the first of a cell is alive: gathered just now; a later
         * one may have been removed, or moved, by an earlier act */
        if (j && !kr_entity_alive(r->world, a->e)) continue;
        r->acting = a->e;
        r->acting_x = a->x;
        r->acting_y = a->y;
        if (r->moved_other && !cell_lookup(r, a->e, &r->acting_x, &r->acting_y)) continue;
        r->desc.act(r, a->e, a->id, r->desc.arg);
        /* a few hundred microseconds of acts: let the halos and migrants
         * sent before this step move on (kr_sim_progress) */
        if (++r->updates % PROGRESS_EVERY == 0) kr_sim_progress(r->sim);
    }
    r->acting = KR_ENTITY_INVALID;
    return KR_OK;
}

static kr_status_t act_all(kr_region_t *r)
{
    return kr_spatial_scan(r->world, &(kr_spatial_scan_desc_t){ .x0 = r->own.x0, .y0 = r->own.y0, .x1 = r->own.x1,
                                                               .y1 = r->own.y1, .component = r->agent,
                                                               .visit = act_cell, .arg = r });
}

static int id_cmp(const void *a, const void *b)
{
    uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;
    return p < q ? -1 : p > q;
}

/* An agent arriving twice (from two neighbours, or in one message) would
 * be counted twice from now on: the run stops instead. */
static kr_status_t arrivals_check(kr_region_t *r)
{
    size_t n = r->arrived_count;
    r->arrived_count = 0;
    if (n > 1) qsort(r->arrived, n, sizeof *r->arrived, id_cmp);
    for (size_t i = 1; i < n; i++)
        if (r->arrived[i] == r->arrived[i - 1])
            return kr__fail(KR_ERR_CORRUPT, "region %u: agent %llu arrived twice for step %llu", r->index,
                            (unsigned long long)r->arrived[i], (unsigned long long)r->step);
    return KR_OK;
}

/* a + b, saturating at KR_TIME_NEVER as the schedulers' time arithmetic */
static kr_time_t time_add(kr_time_t a, kr_time_t b) { return a > KR_TIME_NEVER - b ? KR_TIME_NEVER : a + b; }

static void region_step(kr_region_t *r)
{
    kr_sim_t *sim = r->sim;
    r->step = kr_region_step(r);
    for (size_t i = 0; i < r->nb_count; i++) {
        if (!r->nb[i].arrived && r->step >= 1) {
            kr__model_fail(kr_sim_model(sim), KR_ERR_STATE, "region '%s': step %llu without the halo of region %u",
                           kr_sim_name(sim), (unsigned long long)r->step, r->nb[i].region);
            return;
        }
        r->nb[i].arrived = false;
    }
    kr_status_t st = arrivals_check(r);
    if (!st && r->desc.fields) memcpy(r->next, r->cur, kr_rect_area(r->stored) * r->desc.fields * sizeof *r->next);
    if (!st && r->desc.begin_step) r->desc.begin_step(r, r->desc.arg);
    /* a begin_step that failed the run (kr_sim_fail) left the step's
     * state half made: no act runs on it (kr_model_failure also sets
     * kr_last_error to that failure, as the end of the run does) */
    if (!st && kr_model_failure(kr_sim_model(sim))) return;
    if (!st) st = act_all(r);
    if (!st && r->desc.end_step) r->desc.end_step(r, r->desc.arg);
    double *t = r->cur;
    r->cur = r->next;
    r->next = t;
    /* the halo read this step is spent */
    r->ghost_count = 0;
    kr_buf_clear(&r->ghost_bytes);
    r->ghosts_ready = false;
    /* In the last step a migrant's arrival would fall after the end: it
     * stays, so that it is counted once, in its new cell. */
    if (!st && time_add(kr_sim_now(sim), r->time_step) <= r->end_time) st = exchange_send(r);
    if (!st && time_add(kr_sim_now(sim), r->time_step) > r->end_time)
        for (size_t i = 0; i < r->nb_count; i++) r->nb[i].out_count = 0;
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s', step %llu: %s", kr_sim_name(sim),
                           (unsigned long long)r->step, kr_last_error());
}

/* ---- results ---- */

uint64_t kr_region_agent_hash(uint64_t id, int32_t x, int32_t y, uint64_t word)
{
    uint64_t h = kr__mix64(id * 0x9e3779b97f4a7c15ULL ^ 0x7265676eULL);
    h = kr__mix64(h ^ ((uint64_t)(uint32_t)x << 32 | (uint32_t)y));
    return kr__mix64(h ^ word);
}

uint64_t kr_region_state_digest(kr_region_t *r)
{
    kr_view_t v;
    uint64_t sum = 0;
    if (kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->agent } })) return 0;
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        const kr_region_agent_t *a = kr_view_get(&v, 0);
        int32_t x = INT32_MIN, y = INT32_MIN;
        kr_region_agent_cell(r, e, &x, &y);
        uint64_t id = a->id;
        uint64_t word = r->desc.digest ? r->desc.digest(r, e, r->desc.arg) : 0;
        sum += kr_region_agent_hash(id, x, y, word);
    }
    kr_view_fini(&v);
    return sum;
}
