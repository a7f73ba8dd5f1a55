/* Births spread over the world (kr_region_scatter): the kind's place
 * callback puts each agent of a population in a cell, whatever the cut, and
 * each region takes the births of its own cells. The placing is done once
 * per process, by the first local region of the cut that asks, and shared
 * by the regions of the cut that the process runs. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "regions/region_private.h"

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
static kr_status_t scatter_all(kr_region_t *r, struct kr__region_scatter *sc, uint64_t first, uint64_t count,
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
        *sc = (struct kr__region_scatter){ 0 };
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
        const struct kr__region_scatter *sc = &h->scatter;
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
    struct kr__region_scatter *sc = &holder->scatter;
    size_t from = sc->start[r->index], len = sc->start[r->index + 1] - from;
    kr_region_birth_t *mine = malloc((len ? len : 1) * sizeof *mine);
    if (!mine) return kr__fail(KR_ERR_NOMEM, "region %u: out of memory for %zu births", r->index, len);
    if (len) memcpy(mine, sc->births + from, len * sizeof *mine);
    qsort(mine, len, sizeof *mine, birth_cmp);
    if (--sc->waiting == 0) {
        free(sc->births);
        free(sc->start);
        *sc = (struct kr__region_scatter){ 0 };
    }
    *out = mine;
    *n = len;
    return KR_OK;
}
