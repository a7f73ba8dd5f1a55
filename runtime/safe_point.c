/* Safe points: model times where every rank stops together, chosen so
 * that one comes about every second of wall time (docs/cluster.md).
 *
 * A signal (SIGUSR1; SIGTERM with --checkpoint-on-term) reaches each rank
 * at its own moment, in the middle of its own events, and the wall clock
 * reads differently on every node: neither can pick a model time that
 * every rank has not yet passed. A safe point can: it is planned before
 * the ranks reach it, as a cut (schedulers/coordinator.c,
 * kr__coord_run_until), and there every rank has run every event before it
 * and none after. The ranks then agree, with two small reductions, on what was
 * asked meanwhile: a checkpoint, a stop, a progress line. Cuts change no
 * result, so neither do safe points, wherever they fall.
 *
 * The spacing adapts: the first comes one tick after the start, and each
 * next one is placed so that, at the pace of the last stretch, it takes
 * about a second (at most four times the model time of the last stretch,
 * or 64 times after one that took less than a millisecond; at least an
 * eighth). A first one at a fraction of the run's model time came hours
 * late in a run whose end time was far beyond what it would reach; from a
 * tick, the spacing reaches a second's worth in a few steps that each
 * cost an agreement of microseconds. Every rank computes it from the same
 * agreed figures, so they all plan the same one. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "runtime/run_private.h"

#define TARGET_NS 1000000000.0  /* wall time between two safe points */
#define FAST_BELOW_NS 1000000.0 /* a stretch shorter than this ... */
#define FAST_GROWTH 64.0        /* ... lets the next grow this much (else 4 times) */

kr_time_t kr__run_next_safe_point(run_ctx_t *c, kr_time_t after)
{
    kr__safe_points_t *sp = &c->safe;
    kr_time_t end = kr_model_end_time(c->model);
    if (!sp->span) {
        sp->first_at = after;
        sp->last_ns = kr__monotonic_ns();
        sp->last_progress_ns = sp->last_ns;
        sp->span = 1;
    }
    if (after >= end || sp->span >= end - after) return 0;
    return after + sp->span;
}

/* "1 h 5 min", "6 min", "42 s": how long, as a batch log reads it. */
static void duration(double s, char *out, size_t cap)
{
    if (!(s >= 0) || s > 1e9) snprintf(out, cap, "?");
    else if (s >= 3600) snprintf(out, cap, "%.0f h %.0f min", floor(s / 3600), floor(fmod(s, 3600) / 60));
    else if (s >= 60) snprintf(out, cap, "%.0f min", floor(s / 60));
    else snprintf(out, cap, "%.0f s", s);
}

/* Rank 0's line in a batch log: one line, complete, every so often. */
static void progress_line(run_ctx_t *c, kr_time_t at, uint64_t events)
{
    kr__safe_points_t *sp = &c->safe;
    uint64_t now = kr__monotonic_ns();
    uint64_t p = c->file->precision;
    double end = kr_time_to_units(kr_model_end_time(c->model), p), t = kr_time_to_units(at, p);
    double wall = (double)(now - c->t0) * 1e-9;
    double done = kr_time_to_units(at - sp->first_at, p), left_units = end - t;
    double rate = wall > 0 ? (double)events / wall : 0;
    char left[32], ago[32], last[160] = "";
    duration(done > 0 ? wall * left_units / done : -1, left, sizeof left);
    if (c->ckpt.last_name[0]) {
        duration((double)(now - c->ckpt.last_done_ns) * 1e-9, ago, sizeof ago);
        snprintf(last, sizeof last, ", last checkpoint %s (%s ago)", c->ckpt.last_name, ago);
    }
    fprintf(stderr, "kairos: progress: model time %.6g of %.6g (%.1f %%), %.3g events/s, %s left%s\n", t, end,
            end > 0 ? 100.0 * t / end : 100.0, rate, left, last);
    fflush(stderr);
}

void kr__run_safe_point_progress(run_ctx_t *c, kr_time_t at)
{
    if (!c->safe.progress_due) return;
    c->safe.progress_due = false;
    progress_line(c, at, c->safe.events);
}

kr_status_t kr__run_safe_point(run_ctx_t *c, bool *checkpoint, bool *stop)
{
    kr__safe_points_t *sp = &c->safe;
    const kr__run_options_t *o = c->opt;
    uint64_t now = kr__monotonic_ns();
    sp->passed++;
    uint64_t start = o->wall.started_ns ? o->wall.started_ns : c->t0;
    uint64_t since_ckpt_from = c->ckpt.last_started_ns ? c->ckpt.last_started_ns : start;
    uint64_t since_done_from = c->ckpt.last_done_ns ? c->ckpt.last_done_ns : start;
    /* (this process's events: a restart's rate is its own) */
    uint64_t events = 0;
    for (uint32_t i = 0; i < kr_model_sim_count(c->model); i++)
        if (kr_sim_is_local(kr_model_sim(c->model, i))) events += kr_sim_event_count(kr_model_sim(c->model, i));
    events -= c->events_restored;
    /* The slowest rank's clocks, and whether any rank was signalled. */
    uint64_t mine[5] = { (uint64_t)kr__checkpoint_asked, now - sp->last_ns, now - start, now - since_ckpt_from,
                         now - since_done_from };
    uint64_t all[5];
    memcpy(all, mine, sizeof all);
    if (kr__run_distributed(c)) {
        if (MPI_Allreduce(mine, all, 5, MPI_UINT64_T, MPI_MAX, o->comm) != MPI_SUCCESS ||
            MPI_Allreduce(&events, &sp->events, 1, MPI_UINT64_T, MPI_SUM, o->comm) != MPI_SUCCESS)
            return kr__fail(KR_ERR_IO, "MPI: the agreement at a safe point failed");
    } else {
        sp->events = events;
    }
    double stretch = (double)all[1], elapsed = (double)all[2] * 1e-9, since_ckpt = (double)all[3] * 1e-9;
    double since_done = (double)all[4] * 1e-9;

    /* the next one: about a second away at the last stretch's pace */
    double factor = TARGET_NS / (stretch > 1e3 ? stretch : 1e3);
    double most = stretch < FAST_BELOW_NS ? FAST_GROWTH : 4;
    factor = factor > most ? most : factor < 0.125 ? 0.125 : factor;
    double span = floor((double)sp->span * factor);
    sp->span = span < 1 ? 1 : span > (double)(KR_TIME_NEVER / 2) ? KR_TIME_NEVER / 2 : (kr_time_t)span;
    sp->last_ns = now;

    *checkpoint = *stop = sp->by_usr1 = false;
    if (all[0]) {
        sp->by_usr1 = all[0] != (uint64_t)SIGTERM;
        *checkpoint = *stop = true;
        snprintf(sp->why, sizeof sp->why, "%s", all[0] == (uint64_t)SIGTERM ? "SIGTERM (--checkpoint-on-term)"
                 : "SIGUSR1");
    } else if (o->wall.stop_before_wall > 0) {
        /* Stop now if the next stretch and a checkpoint would not both fit
         * before the limit: the last checkpoint's time says what one costs
         * (the first is guessed at a second). */
        double write = c->ckpt.last_write_ns ? 1.5 * (double)c->ckpt.last_write_ns * 1e-9 : 1.0;
        if (elapsed + TARGET_NS * 1e-9 + write >= o->wall.stop_before_wall) {
            *checkpoint = *stop = true;
            /* (at the first safe point, every restart stops where it began:
             * a job that requeues itself would never get on) */
            snprintf(sp->why, sizeof sp->why, "--stop-before-wall %g: %.0f s gone%s", o->wall.stop_before_wall,
                     elapsed, sp->passed > 1 ? ""
                                             : " at this run's first safe point (S leaves no time to run: a second of "
                                               "running and a checkpoint must fit after the start)");
        }
    }
    /* A periodic checkpoint, and the progress line, fall at the safe point
     * nearest the period's end: waiting for a full period (counted from
     * the last checkpoint's completion, for the checkpoints) made a period
     * of a second give one every two. A checkpoint that takes longer than
     * its period still leaves half a period of running after it. */
    double early = 0.5 * TARGET_NS * 1e-9;
    if (!*checkpoint && o->wall.checkpoint_wall > 0 && since_ckpt >= o->wall.checkpoint_wall - early &&
        since_done >= 0.5 * o->wall.checkpoint_wall)
        *checkpoint = true;
    if (o->rank == 0 && o->wall.progress_every > 0 &&
        (double)(now - sp->last_progress_ns) * 1e-9 >= o->wall.progress_every - early) {
        sp->progress_due = true;
        sp->last_progress_ns = now;
    }
    return KR_OK;
}
