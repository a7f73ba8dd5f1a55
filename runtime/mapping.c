/* Rank mapping: which rank runs each simulator of a model file. The
 * file's "mapping" picks round-robin, block or METIS; "rank" pins a
 * simulator; a zero-promise group always lands on one rank
 * (docs/model-file.md, docs/scaling.md). Every rank computes the same plan
 * from the same file. */
#include <metis.h>
#include <stdlib.h>
#include "base/error.h"
#include "runtime/model_file.h"

/* METIS k-way partition of the zero-promise groups (one vertex each,
 * weighted by its simulators) over the dependency graph (undirected, one
 * edge per pair of groups, weighted by how many dependencies join them):
 * parts of equal weight that cut as few dependencies as possible. */
static kr_status_t metis_map(const kr__model_file_t *f, const kr_model_t *m, int ranks, int *rank_of)
{
    size_t n = f->sim_count;
    idx_t *group_ix = malloc(n * sizeof *group_ix), groups = 0;
    idx_t *xadj = NULL, *adjncy = NULL, *adjwgt = NULL, *vwgt = NULL, *part = NULL;
    kr_status_t st = KR_OK;
    if (!group_ix) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        group_ix[i] = kr_model_group_of(m, (uint32_t)i) == i ? groups++ : -1;
    for (size_t i = 0; i < n; i++)
        if (group_ix[i] < 0) group_ix[i] = group_ix[kr_model_group_of(m, (uint32_t)i)];
    /* adjacency as a dense count matrix of groups: models are at most a
     * few thousand simulators */
    idx_t *w = calloc((size_t)groups * (size_t)groups, sizeof *w);
    vwgt = calloc((size_t)groups, sizeof *vwgt);
    part = calloc((size_t)groups, sizeof *part);
    xadj = calloc((size_t)groups + 1, sizeof *xadj);
    if (!w || !vwgt || !part || !xadj) { st = kr__fail(KR_ERR_NOMEM, "out of memory"); goto done; }
    for (size_t i = 0; i < n; i++) vwgt[group_ix[i]]++;
    idx_t edges = 0;
    for (size_t i = 0; i < f->dep_count; i++) {
        idx_t a = group_ix[f->deps[i].from], b = group_ix[f->deps[i].to];
        if (a == b) continue;
        if (!w[a * groups + b]) edges += 2;
        w[a * groups + b]++;
        w[b * groups + a]++;
    }
    adjncy = malloc((size_t)(edges ? edges : 1) * sizeof *adjncy);
    adjwgt = malloc((size_t)(edges ? edges : 1) * sizeof *adjwgt);
    if (!adjncy || !adjwgt) { st = kr__fail(KR_ERR_NOMEM, "out of memory"); goto done; }
    idx_t k = 0;
    for (idx_t a = 0; a < groups; a++) {
        xadj[a] = k;
        for (idx_t b = 0; b < groups; b++)
            if (w[a * groups + b]) {
                adjncy[k] = b;
                adjwgt[k++] = w[a * groups + b];
            }
    }
    xadj[groups] = k;
    idx_t ncon = 1, nparts = ranks, objval = 0;
    if (groups <= nparts) {
        for (idx_t g = 0; g < groups; g++) part[g] = g;
    } else if (nparts > 1) {
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_SEED] = 1; /* the same plan on every rank and every run */
        int rc = METIS_PartGraphKway(&groups, &ncon, xadj, adjncy, vwgt, NULL, adjwgt, &nparts, NULL, NULL, options,
                                     &objval, part);
        if (rc != METIS_OK) { st = kr__fail(KR_ERR_STATE, "%s: METIS could not partition the model (%d)", f->path, rc); goto done; }
    }
    for (size_t i = 0; i < n; i++) rank_of[i] = (int)part[group_ix[i]];
done:
    free(group_ix);
    free(w);
    free(vwgt);
    free(part);
    free(xadj);
    free(adjncy);
    free(adjwgt);
    return st;
}

kr_status_t kr__model_file_plan(kr__model_file_t *f, int ranks, int *rank_of)
{
    /* The structure alone (every simulator elsewhere: no worlds, no kind
     * setups) is enough to find the zero-promise groups. */
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .precision = f->precision, .end_time = f->end_time,
                                                         .log_level = KR_LOG_OFF, .rank = -1 });
    if (!m) return kr_last_status();
    kr_status_t st = KR_OK;
    for (size_t i = 0; !st && i < f->sim_count; i++)
        if (!kr_model_add_sim(m, &(kr_sim_desc_t){ .name = f->sims[i].name, .formalism = f->sims[i].formalism,
                                                    .time_step = f->sims[i].time_step }))
            st = kr_last_status();
    for (size_t i = 0; !st && i < f->dep_count; i++)
        st = kr_model_add_dependency(m, f->deps[i].from, f->deps[i].to, f->deps[i].promise);
    if (!st) st = kr__model_file_map(f, m, ranks, rank_of);
    kr_model_destroy(m);
    return st;
}

kr_status_t kr__model_file_map(const kr__model_file_t *f, const kr_model_t *m, int ranks, int *rank_of)
{
    if (ranks < 1) return kr__fail(KR_ERR_INVALID_ARG, "ranks must be at least 1");
    size_t n = f->sim_count;
    if (f->mapping == KR__MAP_METIS) {
        kr_status_t st = metis_map(f, m, ranks, rank_of);
        if (st) return st;
    } else {
        for (size_t i = 0; i < n; i++)
            rank_of[i] = f->mapping == KR__MAP_BLOCK ? (int)((uint64_t)i * (uint64_t)ranks / n) : (int)(i % (size_t)ranks);
    }
    for (size_t i = 0; i < n; i++)
        if (f->sims[i].rank >= 0) {
            if (f->sims[i].rank >= ranks)
                return kr__fail(KR_ERR_INVALID_ARG, "%s: simulators[%zu].rank: expected a rank below %d, found %d",
                                f->path, f->sims[i].index, ranks, f->sims[i].rank);
            rank_of[i] = f->sims[i].rank;
        }
    /* A zero-promise group runs on one rank: a pinned member decides, else
     * its lowest member; two different pins in one group cannot run. Every
     * pin is compared with the group's first pinned member (not only with
     * its lowest member, which may be free). */
    for (size_t i = 0; i < n; i++) {
        uint32_t g = kr_model_group_of(m, (uint32_t)i);
        if (g != i) continue;
        size_t pin = n;
        for (size_t j = i; j < n; j++) {
            if (kr_model_group_of(m, (uint32_t)j) != g || f->sims[j].rank < 0) continue;
            if (pin == n) pin = j;
            else if (f->sims[j].rank != f->sims[pin].rank)
                return kr__fail(KR_ERR_INVALID_ARG, "%s: simulators[%zu].rank: expected rank %d, where '%s' is pinned "
                                "(a cycle of zero promises joins them and runs as one loop on one rank), found %d",
                                f->path, f->sims[j].index, f->sims[pin].rank, f->sims[pin].name, f->sims[j].rank);
        }
        int r = pin < n ? f->sims[pin].rank : rank_of[i];
        for (size_t j = i; j < n; j++)
            if (kr_model_group_of(m, (uint32_t)j) == g) rank_of[j] = r;
    }
    return KR_OK;
}
