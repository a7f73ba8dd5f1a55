/* Each rank's memory after setup, counted from what the build made
 * (runtime/memory_estimate.h). The worlds and the event queues are
 * measured; a region's halo is empty until its first exchange, so its
 * ghosts are estimated from the cut's geometry and the agents' density. */
#include <stdint.h>
#include "ecs/footprint.h"
#include "regions/region_private.h"
#include "runtime/memory_estimate.h"
#include "schedulers/model_private.h"

/* Bytes a ghost costs its receiver: its line in the arriving strip (id,
 * cell, bytes), its record and bytes in the halo, and its entry in the
 * sorted view (regions/exchange.c, regions/halo.c). */
static size_t ghost_in_bytes(size_t gsize)
{
    return 16 + gsize + sizeof(kr__region_ghost_rec_t) + gsize + sizeof(kr_region_ghost_t);
}

/* The halo of region r once the exchanges run: the agents its halo cells
 * hold, and those its own cells send its neighbours, at the density of
 * its own cells; field values travel for every such cell. Ghosts come in
 * with a pack and leave with one, so both sides count. */
static void halo_estimate(const kr_region_t *r, size_t agents, size_t *ghosts, size_t *bytes)
{
    uint64_t own = kr_rect_area(r->own), in = kr_rect_area(r->stored) - own, out = 0;
    for (size_t i = 0; i < r->nb_count; i++) out += kr_rect_area(r->nb[i].send);
    double density = own ? (double)agents / (double)own : 0;
    size_t g_in = (size_t)(density * (double)in + 0.5), g_out = (size_t)(density * (double)out + 0.5);
    size_t gsize = r->desc.ghost_size;
    *ghosts = g_in;
    *bytes = g_in * ghost_in_bytes(gsize) + g_out * (16 + gsize) + (size_t)(in + out) * r->desc.fields * sizeof(double);
}

void kr__memory_estimate(const kr__model_file_t *f, kr_model_t *m, int ranks, const int *rank_of,
                         kr__rank_memory_t *per_rank)
{
    for (int k = 0; k < ranks; k++) per_rank[k] = (kr__rank_memory_t){ 0 };
    for (size_t i = 0; i < f->sim_count && i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        if (rank_of[i] < 0 || rank_of[i] >= ranks || !s->local) continue;
        kr__rank_memory_t *p = &per_rank[rank_of[i]];
        kr__world_footprint_t w = kr__world_footprint(s->world);
        kr__sim_footprint_t e = kr__sim_footprint(s);
        p->sims++;
        p->entities += w.entities;
        p->component_bytes += w.component_bytes;
        p->entity_bytes += w.bytes;
        p->events += e.pending;
        p->event_bytes += e.event_bytes;
        p->other_bytes += e.other_bytes;
        kr_region_t *r = s->formalism == KR_AGENT_BASED ? kr_region_of(s) : NULL;
        if (r) {
            kr_view_t v;
            size_t agents = 0, ghosts = 0, bytes = 0;
            if (!kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->agent } })) {
                agents = kr_view_count(&v);
                kr_view_fini(&v);
            }
            halo_estimate(r, agents, &ghosts, &bytes);
            p->cut_regions += r->nb_count > 0;
            p->ghosts += ghosts;
            p->halo_bytes += bytes;
            /* the field layers, now and next, over the stored cells */
            p->other_bytes += sizeof *r + 2 * (size_t)kr_rect_area(r->stored) * r->desc.fields * sizeof(double);
        }
    }
    for (int k = 0; k < ranks; k++) {
        kr__rank_memory_t *p = &per_rank[k];
        p->total = p->entity_bytes + p->event_bytes + p->halo_bytes + p->other_bytes;
    }
}

/* "1,234,567" */
static const char *grouped(size_t n, char buf[32])
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%zu", n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

/* Decimal units (1 MB = 10^6 bytes), three significant digits from KB
 * on: enough to add ranks up, not more than an estimate deserves. */
static const char *sized(size_t n, char buf[32])
{
    static const char *const unit[] = { "KB", "MB", "GB", "TB" };
    if (n < 1000) {
        snprintf(buf, 32, "%zu B", n);
        return buf;
    }
    double v = (double)n / 1000;
    int u = 0;
    while (v >= 999.5 && u < 3) {
        v /= 1000;
        u++;
    }
    snprintf(buf, 32, v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

void kr__memory_estimate_print(FILE *out, const kr__rank_memory_t *per_rank, int ranks)
{
    char a[32], b[32], c[32], d[32];
    size_t all = 0;
    fprintf(out, "memory (estimate, after setup):\n");
    for (int k = 0; k < ranks; k++) {
        const kr__rank_memory_t *p = &per_rank[k];
        all += p->total;
        if (!p->sims) {
            int last = k;
            while (last + 1 < ranks && !per_rank[last + 1].sims) last++;
            if (last == k) fprintf(out, "  rank %d: 0 B (idle)\n", k);
            else fprintf(out, "  ranks %d-%d: 0 B each (idle)\n", k, last);
            k = last;
            continue;
        }
        fprintf(out, "  rank %d: %s  (entities %s in %s, components %s; ", k, sized(p->total, a),
                grouped(p->entities, b), sized(p->entity_bytes, c), sized(p->component_bytes, d));
        fprintf(out, "events %s in %s; ", grouped(p->events, a), sized(p->event_bytes, b));
        /* (a sparse world's halo may round to no ghost: still a halo) */
        if (p->cut_regions) fprintf(out, "halos ~%s ghosts in %s; ", grouped(p->ghosts, a), sized(p->halo_bytes, b));
        else fprintf(out, "halos none; ");
        fprintf(out, "other %s)\n", sized(p->other_bytes, a));
    }
    fprintf(out, "  all ranks: %s\n", sized(all, a));
    fprintf(out, "  measured: a run's stats give each rank's peak as rank_info[].peak_memory_bytes (resident: it adds "
                 "the program, its libraries, MPI and growth during the run)\n");
}
