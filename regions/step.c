/* The step of a region (docs/regions.md, "A step"): the behavior of a
 * driver entity runs it at each step of the agent-based simulator. The
 * neighbours' halos and migrants must be in; then begin_step, every agent
 * of the own cells acts once (act_cell: the hot loop of every region kind),
 * end_step, the fields turn over and the exchange goes out. At time 0
 * (kr__region_start) the initial fields take effect and the first halos
 * go out. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_fail.h"
#include "schedulers/time_private.h"
#include "regions/region_private.h"
#include "regions/restart.h"

/* Acts between two calls of kr_sim_progress (a walker update is ~0.1 us). */
#define PROGRESS_EVERY 2048

/* Above this many agents to act a cell's are sorted by qsort, not by insertion. */
#define CROWDED 32

static int snap_by_id(const void *a, const void *b)
{
    uint64_t p = ((const kr__region_snap_t *)a)->id, q = ((const kr__region_snap_t *)b)->id;
    return (p > q) - (p < q);
}

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
    if (k > r->snap_cap && KR__GROW(r->snap, r->snap_cap, k, 64, NULL))
        return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for the step", r->index);
    int32_t x = cell->cell.x, y = cell->cell.y;
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        kr_region_agent_t *a = cell->values[i];
        if (!a || a->step >= step) continue;
        a->step = step;
        r->snap[n++] = (kr__region_snap_t){ a->id, cell->entities[i], x, y };
    }
    /* By id (ids are unique, so either sort gives one order): a crowded
     * cell at once, as insertion took time in the square of its agents (a
     * third of a step of 60,000 swarms on 10 x 10 cells: bench/README.md,
     * "Ecology"); the few agents of most cells by insertion. */
    if (n > CROWDED) {
        qsort(r->snap, n, sizeof *r->snap, snap_by_id);
    } else {
        for (size_t i = 1; i < n; i++) {
            kr__region_snap_t a = r->snap[i];
            size_t j = i;
            for (; j > 0 && r->snap[j - 1].id > a.id; j--) r->snap[j] = r->snap[j - 1];
            r->snap[j] = a;
        }
    }
    /* the cell's arrays are spent from here: acts change the world */
    r->moved_other = false;
    for (size_t j = 0; j < n; j++) {
        const kr__region_snap_t *a = &r->snap[j];
        /* the first of a cell is alive: gathered just now; a later
         * one may have been removed, or moved, by an earlier act */
        if (j && !kr_entity_alive(r->world, a->e)) continue;
        r->acting = a->e;
        r->acting_x = a->x;
        r->acting_y = a->y;
        if (r->moved_other && !kr__region_cell_lookup(r, a->e, &r->acting_x, &r->acting_y)) continue;
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
    if (!st && kr__time_add(kr_sim_now(sim), r->time_step) <= r->end_time) st = kr__region_exchange_send(r);
    if (!st && kr__time_add(kr_sim_now(sim), r->time_step) > r->end_time)
        for (size_t i = 0; i < r->nb_count; i++) r->nb[i].out_count = 0;
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s', step %llu: %s", kr_sim_name(sim),
                           (unsigned long long)r->step, kr_last_error());
}

kr_status_t kr__region_check_end_change(kr_sim_t *sim, kr_time_t cut, kr_time_t saved_end)
{
    kr_region_t *r = kr_region_of(sim);
    kr_model_t *m = kr_sim_model(sim);
    kr_time_t end = kr_model_end_time(m), h = r ? r->time_step : 0;
    if (!h || end == saved_end) return KR_OK;
    /* the step at next - h ran before the cut; it sent its exchange when
     * the arrival, at next, is within the end */
    kr_time_t next = kr__time_step_at_or_after(cut, h);
    if ((next <= saved_end) == (next <= end)) return KR_OK;
    uint64_t p = kr_model_precision(m);
    bool sent = next <= saved_end;
    return kr__fail(KR_ERR_INVALID_ARG, "region '%s': the checkpoint at %.15g, of a run ending at %.15g, cannot go "
                    "on to the end time %.15g: its step at %.15g %s (docs/checkpoint.md); restart with --end %.15g, or "
                    "from an earlier checkpoint", kr_sim_name(sim), kr_time_to_units(cut, p),
                    kr_time_to_units(saved_end, p), kr_time_to_units(end, p), kr_time_to_units(next - h, p),
                    sent ? "sent its migrants on, which the last step before an end time keeps"
                         : "was the last before that run's end and kept its migrants, which it sends when not the last",
                    kr_time_to_units(saved_end, p));
}

/* The driver holds a pointer to this process's region: it never travels
 * to another simulator. It is saved only with its own region's world (a
 * checkpoint's image of the world): as the region's index, for the load to
 * check. A driver without its region (one made by hand, or any that is
 * not in its region's world) is refused, and so is one loaded into a
 * world of another region. Loading into a world that is not yet its
 * simulator's leaves the pointer empty: kr_region_serialize, which the
 * kind calls after the world is in, hands it the region. */
kr_status_t kr__region_driver_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser)
{
    (void)self;
    kr__region_driver_t *d = state;
    bool loading = kr_serializer_loading(ser);
    if (!loading && (!d->region || d->region->world != w))
        return kr__fail(KR_ERR_CORRUPT, "a region's step driver cannot move between simulators");
    uint32_t index = loading ? 0 : d->region->index;
    kr_status_t st = kr_ser_u32(ser, &index);
    if (st || !loading) return st;
    kr_sim_t *sim = kr_sim_of_world(w);
    kr_region_t *r = sim ? kr_region_of(sim) : NULL;
    if (sim && (!r || r->index != index || r->world != w))
        return kr__fail(KR_ERR_CORRUPT, "a region's step driver cannot move between simulators");
    d->region = r;
    return KR_OK;
}

void kr__region_driver_update(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w, (void)self;
    kr__region_driver_t *d = state;
    if (d->region) region_step(d->region);
}

void kr__region_start(kr_sim_t *sim, void *data)
{
    (void)data;
    kr_region_t *r = kr_region_of(sim);
    if (!r) return;
    double *t = r->cur; /* what setup wrote is the state of step 0 */
    r->cur = r->next;
    r->next = t;
    if (r->time_step > r->end_time) return;
    r->step = 0;
    kr_status_t st = kr__region_exchange_send(r);
    if (st) kr__model_fail(kr_sim_model(sim), st, "region '%s': the initial halo: %s", kr_sim_name(sim),
                           kr_last_error());
}
