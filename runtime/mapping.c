/* Rank mapping: which rank runs each simulator of a model file. The
 * file's "mapping" picks round-robin, block or METIS; "rank" pins a
 * simulator; a zero-promise group always lands on one rank
 * (docs/model-file.md, docs/scaling.md). Every rank computes the same plan
 * from the same file. */
#include <metis.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/model_file.h"

/* True when no part of `part` weighs more than an even share plus the
 * heaviest group (which may not split), and none is empty while there
 * are groups enough for every part. */
static bool balanced(const idx_t *vwgt, const idx_t *part, idx_t groups, idx_t nparts)
{
    idx_t *load = calloc((size_t)nparts, sizeof *load), total = 0, heaviest = 0;
    if (!load) return true; /* (out of memory: keep METIS's answer) */
    for (idx_t g = 0; g < groups; g++) {
        load[part[g]] += vwgt[g];
        total += vwgt[g];
        if (vwgt[g] > heaviest) heaviest = vwgt[g];
    }
    bool ok = true;
    for (idx_t p = 0; p < nparts && ok; p++)
        ok = load[p] <= (total + nparts - 1) / nparts + heaviest && (load[p] > 0 || groups < nparts);
    free(load);
    return ok;
}

/* The heaviest group first, each to the least loaded part (lowest index
 * on a tie): balanced, whatever it cuts. The last resort of metis_map. */
static void greedy_parts(const idx_t *vwgt, idx_t *part, idx_t groups, idx_t nparts)
{
    idx_t *load = calloc((size_t)nparts, sizeof *load);
    bool *placed = calloc((size_t)groups, sizeof *placed);
    for (idx_t done = 0; load && placed && done < groups; done++) {
        idx_t best = -1;
        for (idx_t g = 0; g < groups; g++)
            if (!placed[g] && (best < 0 || vwgt[g] > vwgt[best])) best = g;
        idx_t to = 0;
        for (idx_t p = 1; p < nparts; p++)
            if (load[p] < load[to]) to = p;
        part[best] = to;
        load[to] += vwgt[best];
        placed[best] = true;
    }
    if (!load || !placed)
        for (idx_t g = 0; g < groups; g++) part[g] = g % nparts; /* (out of memory: round-robin) */
    free(load);
    free(placed);
}

/* METIS k-way partition of the zero-promise groups (one vertex each,
 * weighted by its simulators) over the dependency graph (undirected, one
 * edge per pair of groups, weighted by how many dependencies join them):
 * parts of equal weight that cut as few dependencies as possible. On
 * small graphs k-way can leave a part empty (PHOLD's or the walkers' 4
 * simulators on 2 ranks all landed on one): its answer is checked
 * (balanced), and recursive bisection, then a greedy split, replace it. */
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
    /* The adjacency in compressed rows, built in time linear in groups
     * plus dependencies (a dense groups x groups matrix would be
     * quadratic: 10^5 groups make 10^10 cells). Every dependency between
     * two groups is listed from both ends; listing that again by rows in
     * ascending order (a transposition: the lists are symmetric) sorts
     * each row, whose repeats then merge into one weighted edge, so the
     * graph METIS sees is the same as the dense matrix's. */
    vwgt = calloc((size_t)groups, sizeof *vwgt);
    part = calloc((size_t)groups, sizeof *part);
    xadj = calloc((size_t)groups + 1, sizeof *xadj);
    size_t raw_count = 0;
    for (size_t i = 0; i < f->dep_count; i++)
        raw_count += group_ix[f->deps[i].from] != group_ix[f->deps[i].to] ? 2 : 0;
    idx_t *raw = malloc((raw_count ? raw_count : 1) * sizeof *raw);
    idx_t *start = calloc((size_t)groups + 1, sizeof *start), *cursor = malloc(((size_t)groups + 1) * sizeof *cursor);
    adjncy = malloc((raw_count ? raw_count : 1) * sizeof *adjncy);
    adjwgt = malloc((raw_count ? raw_count : 1) * sizeof *adjwgt);
    if (!vwgt || !part || !xadj || !raw || !start || !cursor || !adjncy || !adjwgt) {
        free(raw); free(start); free(cursor);
        st = kr__fail(KR_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) vwgt[group_ix[i]]++;
    for (size_t i = 0; i < f->dep_count; i++) {
        idx_t a = group_ix[f->deps[i].from], b = group_ix[f->deps[i].to];
        if (a == b) continue;
        start[a + 1]++;
        start[b + 1]++;
    }
    for (idx_t g = 0; g < groups; g++) start[g + 1] += start[g];
    memcpy(cursor, start, ((size_t)groups + 1) * sizeof *cursor);
    for (size_t i = 0; i < f->dep_count; i++) {
        idx_t a = group_ix[f->deps[i].from], b = group_ix[f->deps[i].to];
        if (a == b) continue;
        raw[cursor[a]++] = b;
        raw[cursor[b]++] = a;
    }
    memcpy(cursor, start, ((size_t)groups + 1) * sizeof *cursor);
    for (idx_t a = 0; a < groups; a++)
        for (idx_t r = start[a]; r < start[a + 1]; r++) adjncy[cursor[raw[r]]++] = a; /* sorted rows */
    idx_t k = 0;
    for (idx_t a = 0; a < groups; a++) {
        xadj[a] = k;
        for (idx_t r = start[a]; r < start[a + 1]; r++) {
            if (k > xadj[a] && adjncy[k - 1] == adjncy[r]) {
                adjwgt[k - 1]++;
                continue;
            }
            adjncy[k] = adjncy[r];
            adjwgt[k++] = 1;
        }
    }
    xadj[groups] = k;
    free(raw);
    free(start);
    free(cursor);
    idx_t ncon = 1, nparts = ranks, objval = 0;
    if (groups <= nparts) {
        for (idx_t g = 0; g < groups; g++) part[g] = g;
    } else if (nparts > 1) {
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_SEED] = 1; /* the same plan on every rank and every run */
        int rc = METIS_PartGraphKway(&groups, &ncon, xadj, adjncy, vwgt, NULL, adjwgt, &nparts, NULL, NULL, options,
                                     &objval, part);
        if (rc == METIS_OK && !balanced(vwgt, part, groups, nparts))
            rc = METIS_PartGraphRecursive(&groups, &ncon, xadj, adjncy, vwgt, NULL, adjwgt, &nparts, NULL, NULL,
                                          options, &objval, part);
        if (rc != METIS_OK) { st = kr__fail(KR_ERR_STATE, "%s: METIS could not partition the model (%d)", f->path, rc); goto done; }
        if (!balanced(vwgt, part, groups, nparts)) greedy_parts(vwgt, part, groups, nparts);
    }
    for (size_t i = 0; i < n; i++) rank_of[i] = (int)part[group_ix[i]];
done:
    free(group_ix);
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
     * its lowest member, which may be free). One pass over the simulators
     * (groups are named by their lowest member, pin[g] is the first pinned
     * one), and the refusal names the group with the lowest first member,
     * at its first disagreeing pin. */
    size_t *pin = malloc((n ? n : 1) * sizeof *pin);
    if (!pin) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) pin[i] = n;
    size_t bad = n, bad_group = n;
    for (size_t j = 0; j < n; j++) {
        uint32_t g = kr_model_group_of(m, (uint32_t)j);
        if (g >= n) {
            free(pin);
            return kr__fail(KR_ERR_NOMEM, "out of memory");
        }
        if (f->sims[j].rank < 0) continue;
        if (pin[g] == n) pin[g] = j;
        else if (f->sims[j].rank != f->sims[pin[g]].rank && g < bad_group) {
            bad = j;
            bad_group = g;
        }
    }
    if (bad < n) {
        size_t p = pin[bad_group];
        free(pin);
        return kr__fail(KR_ERR_INVALID_ARG, "%s: simulators[%zu].rank: expected rank %d, where '%s' is pinned "
                        "(a cycle of zero promises joins them and runs as one loop on one rank), found %d",
                        f->path, f->sims[bad].index, f->sims[p].rank, f->sims[p].name, f->sims[bad].rank);
    }
    /* The lowest member comes first, so its rank is final when the others
     * copy it. */
    for (size_t j = 0; j < n; j++) {
        uint32_t g = kr_model_group_of(m, (uint32_t)j);
        rank_of[j] = pin[g] < n ? f->sims[pin[g]].rank : rank_of[g];
    }
    free(pin);
    return KR_OK;
}
