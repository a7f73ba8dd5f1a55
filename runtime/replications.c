/* Replications of a model over groups of ranks, and their pooling. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "kairos/statistics.h"
#include "base/error.h"
#include "base/fault.h"
#include "net/collectives.h"
#include "runtime/checkpoint_store.h"
#include "runtime/replications.h"

uint64_t kr__replication_seed(uint64_t model_seed, uint64_t r)
{
    if (r == 0) return model_seed;
    /* splitmix64: state model_seed + r * golden gamma, then its finalizer
     * (a bijection), so distinct r give distinct 64-bit outputs. */
    uint64_t z = model_seed + r * UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return z & UINT64_C(0x7fffffffffffffff);
}

static int ranks_of(const kr__replications_desc_t *d) { return d->ranks > 0 ? d->ranks : 1; }

kr_status_t kr__replications_plan(const kr__replications_desc_t *d, int *groups, int *group_ranks)
{
    int ranks = ranks_of(d);
    if (d->replications < 1)
        return kr__fail(KR_ERR_INVALID_ARG, "--replications: expected a whole number >= 1, found %u", d->replications);
    size_t sims = SIZE_MAX;
    for (size_t p = 0; p < d->point_count; p++)
        if (d->points[p]->sim_count < sims) sims = d->points[p]->sim_count;
    if (sims == 0 || sims == SIZE_MAX) sims = 1;
    int g;
    uint64_t items = (uint64_t)d->point_count * d->replications;
    /* An emulation's input and log are one each: every replication would
     * read from the same peer or pipe and write the same log at once. */
    for (size_t p = 0; items > 1 && p < d->point_count; p++) {
        const kr__model_file_t *f = d->points[p];
        for (size_t i = 0; i < f->sim_count; i++) {
            const json_t *em = f->sims[i].emulation;
            const char *key = json_object_get(em, "input") ? "input" : json_object_get(em, "log") ? "log" : NULL;
            if (!key) continue;
            char path[96];
            snprintf(path, sizeof path, "simulators[%zu].emulation.%s", f->sims[i].index, key);
            return kr__input_error(f->path, path, "no emulation input or log with more than one replication or sweep "
                                   "point (they would all read the one input and write the one log; run one alone)",
                                   json_object_get(em, key));
        }
    }
    if (d->group_ranks) {
        if (d->group_ranks < 1 || d->group_ranks > ranks)
            return kr__fail(KR_ERR_INVALID_ARG, "--group-ranks: expected a whole number from 1 to %d (the ranks), "
                            "found %d", ranks, d->group_ranks);
        g = d->group_ranks;
    } else {
        uint64_t want = items < (uint64_t)ranks ? items : (uint64_t)ranks;
        g = want ? (int)((uint64_t)ranks / want) : 1;
        if ((size_t)g > sims) g = (int)sims;
        if (g < 1) g = 1;
    }
    *group_ranks = g;
    /* no more groups than work items: the others would idle unannounced */
    *groups = (uint64_t)(ranks / g) < items ? ranks / g : (int)items;
    if (*groups < 1) *groups = 1;
    return KR_OK;
}

kr_status_t kr__replications_agree(const kr__replications_desc_t *d, bool speaks, kr_status_t st)
{
    int ranks = ranks_of(d);
    if (ranks == 1) return st;
    /* (status, signal) per rank: an interrupted group's signal decides
     * the exit status of every rank, as in kr__run_agree */
    int mine[2] = { speaks ? (int)st : 0, speaks && st ? (int)kr__signal_caught : 0 };
    int *codes = malloc((size_t)ranks * sizeof mine);
    if (!codes) {
        /* Cannot agree without memory: take the whole job down rather
         * than leave ranks waiting in the next collective. */
        MPI_Abort(d->comm, 1);
        return KR_ERR_NOMEM;
    }
    MPI_Allgather(mine, 2, MPI_INT, codes, 2, MPI_INT, d->comm);
    int first = -1;
    for (int r = 0; r < ranks && first < 0; r++)
        if (codes[2 * r]) first = r;
    kr_status_t agreed = first >= 0 ? (kr_status_t)codes[2 * first] : KR_OK;
    if (agreed == KR_ERR_INTERRUPTED) kr__run_note_signal(codes[2 * first + 1]);
    free(codes);
    if (!agreed) return KR_OK;
    char **all = NULL;
    kr__net_gather_strings(d->comm, speaks && st ? kr_last_error() : "", &all);
    if (d->rank == 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", all && all[first] ? all[first] : "a group failed");
        for (int r = 0; all && r < ranks; r++) free(all[r]);
        free(all);
        return kr__fail(agreed, "%s", msg);
    }
    if (speaks && st) return st; /* keeps its own message */
    return kr__fail(agreed, "another group failed");
}

/* The rank-independent part of one replication's merged stats. */
static json_t *record(json_t *stats, uint64_t item, uint32_t r, uint64_t seed)
{
    json_t *sims = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(stats, "simulators"), i, s) {
        json_t *one = json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(s, "name"), "final_time",
                                json_object_get(s, "final_time"), "events", json_object_get(s, "events"), "stats",
                                json_object_get(s, "stats"));
        if (!one || json_array_append_new(sims, one)) {
            json_decref(sims);
            return NULL;
        }
    }
    json_t *rec = json_pack("{s:I, s:I, s:I, s:O, s:O, s:o}", "_item", (json_int_t)item, "replication",
                            (json_int_t)r, "seed", (json_int_t)seed, "checksum", json_object_get(stats, "checksum"),
                            "events", json_object_get(stats, "events"), "simulators", sims);
    /* a replication the model ended itself says who and when (kairos/stop.h) */
    json_t *stopped = json_object_get(stats, "stopped");
    if (rec && stopped && json_object_set(rec, "stopped", stopped)) {
        json_decref(rec);
        return NULL;
    }
    return rec;
}

/* One work item on this group; its leader appends the record to `mine`. */
static kr_status_t run_item(const kr__replications_desc_t *d, uint64_t item, int group_ranks, int group_rank,
                            MPI_Comm group, json_t *mine)
{
    kr__model_file_t *f = d->points[item / d->replications];
    uint32_t r = (uint32_t)(item % d->replications);
    uint64_t model_seed = f->seed;
    /* (a replication writes none of the model file's outputs: with the
     * series too, each wrote over the last's, and over ranks two groups
     * renamed one file, failing the job) */
    const char *stats_out = f->out_stats, *log_out = f->out_event_log, *trace_out = f->out_trace;
    const char *series_out = f->out_series;
    uint64_t seed = kr__replication_seed(model_seed, r);
    f->seed = seed;
    f->out_stats = f->out_event_log = f->out_trace = f->out_series = NULL;
    json_t *stats = NULL;
    /* a signal or the wall clock may abandon the replication at a safe
     * point (KR__STOPPED_CHECKPOINTED): it runs again after a restart */
    kr__run_options_t o = { .quiet = true, .ranks = group_ranks, .rank = group_rank, .comm = group,
                           .stats_json = &stats, .setup_warned = true,
                           .wall = { .stop_before_wall = d->wall.stop_before_wall, .started_ns = d->wall.started_ns } };
    kr_status_t st = kr__run_file(f, &o);
    f->seed = model_seed;
    f->out_stats = stats_out;
    f->out_event_log = log_out;
    f->out_trace = trace_out;
    f->out_series = series_out;
    if (st && st != KR_ERR_INVALID_ARG && st != KR_ERR_IO && st != KR__STOPPED_CHECKPOINTED) {
        /* A run error belongs to one replication: say which, so that it can
         * be rerun alone with --seed. Input errors keep their one-line form. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", kr_last_error());
        /* (a sweep's points share their seeds: the point is named too, as
         * its row of the CSV counts them, from 1) */
        if (d->point_count > 1)
            kr__fail(st, "point %llu of %zu (the CSV's row %llu), replication %u (seed %llu): %s",
                     (unsigned long long)(item / d->replications + 1), d->point_count,
                     (unsigned long long)(item / d->replications + 1), r, (unsigned long long)seed, msg);
        else
            kr__fail(st, "replication %u (seed %llu): %s", r, (unsigned long long)seed, msg);
    }
    if (!st && mine) {
        json_t *rec = stats ? record(stats, item, r, seed) : NULL;
        if (!rec || json_array_append_new(mine, rec)) st = kr__fail(KR_ERR_NOMEM, "out of memory keeping results");
    }
    json_decref(stats);
    return st;
}

/* Every leader's records to rank 0, placed in item order, after those a
 * restart began with (`restored`, rank 0's); with `partial`, the items
 * not done are left out (a checkpoint), else each must be there. */
static kr_status_t collect(const kr__replications_desc_t *d, json_t *mine, json_t *restored, uint64_t items,
                           bool partial, json_t **results)
{
    char *text = json_dumps(mine, JSON_COMPACT | JSON_REAL_PRECISION(17));
    char **all = NULL;
    int ranks = ranks_of(d);
    if (ranks > 1) kr__net_gather_strings(d->comm, text ? text : "null", &all);
    if (d->rank != 0) {
        free(text);
        return KR_OK;
    }
    json_t *out = json_array();
    kr_status_t st = out ? KR_OK : kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; !st && i < items; i++)
        if (json_array_append_new(out, json_null())) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    size_t k;
    json_t *old;
    json_array_foreach(st ? NULL : restored, k, old) {
        json_int_t item = json_integer_value(json_object_get(old, "_item"));
        json_t *rec = json_deep_copy(old);
        json_object_del(rec, "_item");
        json_array_set_new(out, (size_t)item, rec ? rec : json_null());
    }
    for (int r = 0; !st && r < ranks; r++) {
        const char *part = ranks > 1 ? all[r] : text;
        json_t *recs = part ? json_loads(part, 0, NULL) : NULL;
        if (!json_is_array(recs)) st = kr__fail(KR_ERR_NOMEM, "out of memory gathering results (rank %d)", r);
        size_t i;
        json_t *rec;
        json_array_foreach(recs, i, rec) {
            json_int_t item = json_integer_value(json_object_get(rec, "_item"));
            if (item < 0 || (uint64_t)item >= items) continue;
            json_object_del(rec, "_item");
            json_array_set(out, (size_t)item, rec);
        }
        json_decref(recs);
    }
    for (uint64_t i = 0; !st && i < items; i++) {
        if (!json_is_null(json_array_get(out, i))) continue;
        if (!partial) st = kr__fail(KR_ERR_NOMEM, "the results of work item %llu are missing", (unsigned long long)i);
    }
    if (!st && partial) {
        /* the checkpoint's form: the records done, each with its item */
        json_t *done = json_array();
        for (uint64_t i = 0; done && i < items; i++) {
            json_t *rec = json_array_get(out, i);
            if (json_is_null(rec)) continue;
            json_object_set_new(rec, "_item", json_integer((json_int_t)i));
            json_array_append(done, rec);
        }
        json_decref(out);
        out = done;
        if (!out) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    for (int r = 0; all && r < ranks; r++) free(all[r]);
    free(all);
    free(text);
    if (st) json_decref(out);
    else *results = out;
    return st;
}

static double wall_now(void) { return (double)kr__monotonic_ns() * 1e-9; }

/* Which items are done: every rank learns it from rank 0's restored
 * records (a byte per item). */
static kr_status_t share_done(const kr__replications_desc_t *d, json_t *restored, uint64_t items, uint8_t *done)
{
    size_t i;
    json_t *rec;
    json_array_foreach(restored, i, rec) done[json_integer_value(json_object_get(rec, "_item"))] = 1;
    if (ranks_of(d) > 1 && items <= INT32_MAX &&
        MPI_Bcast(done, (int)items, MPI_UINT8_T, 0, d->comm) != MPI_SUCCESS)
        return kr__fail(KR_ERR_IO, "MPI: sharing the finished replications failed");
    return KR_OK;
}

/* After a round, every rank at once: what the signals and the wall clock
 * ask for (as at a run's safe points, safe_point.c), with a replication
 * that was abandoned for a stop counting as asked. */
static void decide(const kr__replications_desc_t *d, bool abandoned, bool last, double start, double last_ckpt,
                   double round, bool *checkpoint, bool *stop, char *why, size_t cap)
{
    double now = wall_now();
    double mine[4] = { kr__checkpoint_asked ? 1.0 : 0.0, now - start, now - last_ckpt, abandoned ? 1.0 : 0.0 }, all[4];
    memcpy(all, mine, sizeof all);
    if (ranks_of(d) > 1) MPI_Allreduce(mine, all, 4, MPI_DOUBLE, MPI_MAX, d->comm);
    *checkpoint = *stop = false;
    /* after the last round only an abandoned replication is left to do */
    if (last && all[3] == 0) return;
    if (all[0] > 0 || all[3] > 0) {
        *checkpoint = *stop = true;
        /* (this rank's own reason; a replication another group abandoned
         * for a signal or the wall clock reads as the wall clock here) */
        if (kr__checkpoint_asked) snprintf(why, cap, "%s", kr__checkpoint_asked == SIGTERM ? "SIGTERM (--checkpoint-on-term)"
                                                           : "SIGUSR1");
        else if (d->wall.stop_before_wall > 0 && all[0] == 0)
            snprintf(why, cap, "--stop-before-wall %g: %.0f s gone", d->wall.stop_before_wall, all[1]);
        else snprintf(why, cap, "a signal to another rank");
    } else if (d->wall.stop_before_wall > 0 && all[1] + round + 1.0 >= d->wall.stop_before_wall) {
        /* the next round would not fit: stop before it */
        *checkpoint = *stop = true;
        snprintf(why, cap, "--stop-before-wall %g: %.0f s gone", d->wall.stop_before_wall, all[1]);
    } else if (d->wall.checkpoint_wall > 0 && all[2] >= d->wall.checkpoint_wall) {
        *checkpoint = true;
    }
}

kr_status_t kr__replications_run(const kr__replications_desc_t *d, json_t **results, double *wall_seconds)
{
    *results = NULL;
    double t0 = wall_now();
    double start = d->wall.started_ns ? (double)d->wall.started_ns * 1e-9 : t0, last_ckpt = start;
    int groups, group_ranks;
    kr_status_t st = kr__replications_plan(d, &groups, &group_ranks);
    if (st) return st;
    int ranks = ranks_of(d);
    int group = d->rank < groups * group_ranks ? d->rank / group_ranks : -1;
    int group_rank = group >= 0 ? d->rank % group_ranks : 0;
    uint64_t items = (uint64_t)d->point_count * d->replications;
    uint64_t plan = kr__replications_plan_digest(d);
    /* The folder of replications.json: the command line's, the model
     * file's, or "checkpoints"; checked before the run when a checkpoint
     * may be written there (a signal's included), not found bad at it. */
    const char *file_dir = d->point_count ? d->points[0]->ckpt.dir : NULL;
    const char *dir = d->checkpoint_dir ? d->checkpoint_dir : file_dir ? file_dir : "checkpoints";
    bool may_write = d->checkpoint_dir || file_dir || kr__wall_may_checkpoint(&d->wall);
    unsigned dir_made = 0;
    /* A restart: rank 0 reads the finished records, every rank agrees. */
    json_t *restored = NULL;
    uint8_t *done = calloc(items ? items : 1, 1);
    if (!done) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    if (!st && d->restart && d->rank == 0) st = kr__replications_checkpoint_read(d->restart, plan, items, &restored);
    int lock = -1;
    if (!st && may_write && d->rank == 0) st = kr__ckpt_dir_prepare(dir, &dir_made, &lock);
    if (!st && may_write && d->rank == 0) st = kr__replications_checkpoint_foreign(dir, plan);
    st = kr__replications_agree(d, d->rank == 0 || st, st);
    if (!st) st = share_done(d, restored, items, done);
    /* the items left, in order: the same work shares as a run that never
     * stopped would give them out, over what remains */
    uint64_t *todo = st ? NULL : malloc((items ? items : 1) * sizeof *todo), left = 0;
    if (!st && !todo) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; !st && i < items; i++)
        if (!done[i]) todo[left++] = i;
    free(done);
    MPI_Comm comm = MPI_COMM_NULL;
    if (!st && ranks > 1 && group_ranks > 1)
        MPI_Comm_split(d->comm, group >= 0 ? group : MPI_UNDEFINED, d->rank, &comm);
    bool leader = group >= 0 && group_rank == 0;
    json_t *mine = json_array();
    uint64_t rounds = (left + (uint64_t)groups - 1) / (uint64_t)groups;
    double last_progress = t0, round_wall = 0;
    /* Rounds: after each, every rank learns whether some group failed, so
     * that an error stops everyone at the next step and nobody waits in a
     * collective for a group that gave up. The work is static (item i to
     * group i mod groups), so rounds cost no balance. After a round the
     * ranks also decide on a checkpoint or a stop. */
    bool stop = false;
    char why[160] = "";
    for (uint64_t k = 0; !st && !stop && k < rounds; k++) {
        double round_start = wall_now();
        uint64_t at = k * (uint64_t)groups + (uint64_t)(group >= 0 ? group : 0);
        kr_status_t own = KR_OK;
        bool abandoned = false;
        if (!mine) own = kr__fail(KR_ERR_NOMEM, "out of memory");
        else if (group >= 0 && at < left)
            own = run_item(d, todo[at], group_ranks, group_rank, comm, leader ? mine : NULL);
        if (own == KR__STOPPED_CHECKPOINTED) {
            abandoned = true;
            own = KR_OK;
        }
        st = kr__replications_agree(d, leader || own, own);
        if (st) break;
        round_wall = wall_now() - round_start;
        bool checkpoint = false;
        decide(d, abandoned, k + 1 == rounds, start, last_ckpt, round_wall, &checkpoint, &stop, why, sizeof why);
        if (checkpoint) {
            json_t *sofar = NULL;
            st = collect(d, mine, restored, items, true, &sofar);
            /* (a folder no option named is checked only now: a signal's) */
            if (!st && d->rank == 0 && !may_write) st = kr__replications_checkpoint_foreign(dir, plan);
            if (!st && d->rank == 0) st = kr__replications_checkpoint_write(dir, plan, items, sofar);
            st = kr__replications_agree(d, d->rank == 0, st);
            /* (a stop before any replication of this run finished: its
             * restarts would do the same, for ever) */
            bool none = json_array_size(sofar) <= items - left;
            if (!st && stop)
                st = kr__fail(KR__STOPPED_CHECKPOINTED, "%s: checkpointed after %zu of %llu replications (%s/%s), "
                              "not finished; go on with --restart %s%s", why, json_array_size(sofar),
                              (unsigned long long)items, dir, "replications.json", dir,
                              none ? " (none finished in this run: the time it had leaves none for one replication)"
                                   : "");
            json_decref(sofar);
            last_ckpt = wall_now();
        }
        if (!st && d->rank == 0 && d->wall.progress_every > 0 && wall_now() - last_progress >= d->wall.progress_every) {
            uint64_t finished = items - left + (k + 1) * (uint64_t)groups;
            if (finished > items) finished = items;
            double per = (wall_now() - t0) / (double)(k + 1);
            fprintf(stderr, "kairos: progress: %llu of %llu replications done, about %.0f s left\n",
                    (unsigned long long)finished, (unsigned long long)items, per * (double)(rounds - k - 1));
            fflush(stderr);
            last_progress = wall_now();
        }
    }
    free(todo);
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    if (!st) st = collect(d, mine, restored, items, false, results);
    kr__ckpt_dir_unmake(dir, dir_made); /* (made here: gone again unless a checkpoint is in it) */
    if (lock >= 0) close(lock);
    json_decref(mine);
    json_decref(restored);
    if (wall_seconds) *wall_seconds = wall_now() - t0;
    return st;
}

static json_t *number_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* The mean and the sample sd of x[0..n) (NaN below one and two values),
 * in two passes from the first value, with the first pass's rounding taken
 * back out of the second: values far from zero (1e9 + U(0,1)) keep their
 * sd to rounding, where one pass of Welford's update (kr_tally) lost some
 * 7 digits, an ulp of the mean against the sd. Every value is at hand. */
static void mean_and_sd(const double *x, size_t n, double *mean, double *sd)
{
    *mean = *sd = NAN;
    if (!n) return;
    double shifted = 0;
    for (size_t i = 0; i < n; i++) shifted += x[i] - x[0];
    *mean = x[0] + shifted / (double)n;
    if (n < 2) return;
    double squares = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - *mean;
        squares += d * d;
        sum += d;
    }
    double var = (squares - sum * sum / (double)n) / (double)(n - 1);
    *sd = sqrt(var > 0 ? var : 0);
}

json_t *kr__replications_pool(const json_t *records)
{
    json_t *out = json_array();
    json_t *first = json_object_get(json_array_get(records, 0), "simulators");
    size_t i;
    json_t *sim;
    json_array_foreach(first, i, sim) {
        /* Every statistic that is a number in some replication, in the
         * order they first appear. */
        json_t *keys = json_object();
        size_t j;
        json_t *rec;
        json_array_foreach(records, j, rec) {
            json_t *stats = json_object_get(json_array_get(json_object_get(rec, "simulators"), i), "stats");
            const char *key;
            json_t *v;
            json_object_foreach(stats, key, v)
                if (json_is_number(v) && !json_object_get(keys, key)) json_object_set_new(keys, key, json_true());
        }
        json_t *pooled = json_object();
        const char *key;
        json_t *unused;
        double *x = malloc((json_array_size(records) ? json_array_size(records) : 1) * sizeof *x);
        if (!x) {
            json_decref(keys);
            json_decref(pooled);
            json_decref(out);
            return NULL;
        }
        json_object_foreach(keys, key, unused) {
            size_t count = 0;
            json_array_foreach(records, j, rec) {
                json_t *stats = json_object_get(json_array_get(json_object_get(rec, "simulators"), i), "stats");
                json_t *v = json_object_get(stats, key);
                if (json_is_number(v)) x[count++] = json_number_value(v);
            }
            double mean, sd;
            mean_and_sd(x, count, &mean, &sd);
            double n = (double)count;
            double ci = count >= 2 ? gsl_cdf_tdist_Pinv(0.975, n - 1) * sd / sqrt(n) : NAN;
            json_object_set_new(pooled, key, json_pack("{s:o, s:o, s:o, s:I}", "mean", number_or_null(count ? mean : NAN),
                                                       "sd", number_or_null(sd), "ci95", number_or_null(ci), "n",
                                                       (json_int_t)count));
        }
        free(x);
        json_decref(keys);
        json_array_append_new(out, json_pack("{s:O, s:o}", "name", json_object_get(sim, "name"), "stats", pooled));
    }
    return out;
}

void kr__replications_warn_setup(const kr__replications_desc_t *d, int groups, int group_ranks)
{
    int ranks = ranks_of(d), busy = groups * group_ranks;
    if (d->rank != 0) return;
    /* (kr__run_file's own warnings are off inside groups: they would repeat
     * for every replication) Which ranks of a group idle is the plan's, the
     * first point's (pins and zero-promise groups may leave some empty with
     * no more ranks than simulators). */
    kr__model_file_t *f = d->point_count ? d->points[0] : NULL;
    int *rank_of = f && group_ranks > 1 ? calloc(f->sim_count ? f->sim_count : 1, sizeof *rank_of) : NULL;
    char list[256];
    size_t idle = rank_of && !kr__model_file_plan(f, group_ranks, rank_of)
                      ? kr__run_idle_ranks(f, group_ranks, rank_of, list, sizeof list) : 0;
    free(rank_of);
    if (f) kr__run_warn_late_promises(f);
    if (idle)
        fprintf(stderr, "kairos: warning: groups of %d ranks for %zu simulator%s: rank%s %s of each group idle%s\n",
                group_ranks, f->sim_count, f->sim_count == 1 ? "" : "s", idle == 1 ? "" : "s", list,
                idle == 1 ? "s" : "");
    if (busy >= ranks) return;
    char beyond[64];
    if (ranks - busy == 1) snprintf(beyond, sizeof beyond, "rank %d idles", busy);
    else snprintf(beyond, sizeof beyond, "ranks %d-%d idle", busy, ranks - 1);
    fprintf(stderr, "kairos: warning: %d ranks in %d group%s of %d: %s\n", ranks, groups, groups == 1 ? "" : "s",
            group_ranks, beyond);
}

static void print_summary(FILE *o, const kr__model_file_t *f, json_t *stats)
{
    long long count = (long long)json_integer_value(json_object_get(stats, "replication_count"));
    fprintf(o, "kairos %s: %s, %lld replication%s on %lld rank%s (%lld group%s of %lld), sync %s\n",
            KAIROS_VERSION_STRING, f->path, count, count == 1 ? "" : "s",
            (long long)json_integer_value(json_object_get(stats, "ranks")),
            json_integer_value(json_object_get(stats, "ranks")) == 1 ? "" : "s",
            (long long)json_integer_value(json_object_get(stats, "groups")),
            json_integer_value(json_object_get(stats, "groups")) == 1 ? "" : "s",
            (long long)json_integer_value(json_object_get(stats, "group_ranks")),
            json_string_value(json_object_get(stats, "sync")));
    fprintf(o, "  end time %g, seed %lld, wall %.3f s, %lld events\n",
            json_real_value(json_object_get(stats, "end_time")),
            (long long)json_integer_value(json_object_get(stats, "seed")),
            json_real_value(json_object_get(stats, "wall_seconds")),
            (long long)json_integer_value(json_object_get(stats, "events")));
    size_t i;
    json_t *sim;
    json_array_foreach(json_object_get(stats, "pooled"), i, sim) {
        fprintf(o, "  %s (mean ± 95%% half-width, sd)\n", json_string_value(json_object_get(sim, "name")));
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(sim, "stats"), key, v) {
            json_t *ci = json_object_get(v, "ci95"), *sd = json_object_get(v, "sd");
            fprintf(o, "    %-24s %.6g", key, json_number_value(json_object_get(v, "mean")));
            if (json_is_number(ci)) fprintf(o, " ± %.3g", json_number_value(ci));
            if (json_is_number(sd)) fprintf(o, "  (sd %.3g)", json_number_value(sd));
            fputc('\n', o);
        }
    }
}

kr_status_t kr__replications_run_file(kr__model_file_t *f, const kr__run_options_t *opt, uint32_t replications,
                                     int group_ranks)
{
    kr__replications_desc_t d = { .points = &f, .point_count = 1, .replications = replications,
                                 .group_ranks = group_ranks, .ranks = opt->ranks, .rank = opt->rank,
                                 .comm = opt->comm, .checkpoint_dir = opt->ckpt.dir, .restart = opt->restart,
                                 .wall = opt->wall };
    int groups = 1, g = 1; /* (set by the plan; initialized for -O3's -Wmaybe-uninitialized) */
    kr_status_t st = kr__replications_plan(&d, &groups, &g);
    if (st) return st;
    kr__replications_warn_setup(&d, groups, g);
    /* The stats file opens first: an unwritable path fails before hours of
     * replications, and the file appears only once they all succeeded. */
    const char *stats_path = opt->stats_path ? opt->stats_path : f->out_stats;
    kr__out_file_t out = { 0 };
    kr__run_files_t files = { .out = { stats_path },
                              .out_what = { opt->stats_path ? "the stats (-o)" : "the stats (outputs.stats)" } };
    if (opt->rank == 0 && stats_path) st = kr__run_files_apart(f, &files);
    if (!st && opt->rank == 0 && stats_path) st = kr__out_open(&out, stats_path);
    st = kr__replications_agree(&d, opt->rank == 0, st);
    json_t *results = NULL;
    double wall = 0;
    if (!st) st = kr__replications_run(&d, &results, &wall);
    json_t *stats = NULL;
    if (!st && opt->rank == 0) {
        json_int_t events = 0;
        size_t i;
        json_t *rec;
        json_array_foreach(results, i, rec) events += json_integer_value(json_object_get(rec, "events"));
        stats = json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:f, s:I, s:I, s:f, s:I, s:o, s:O}", "version",
                          KAIROS_VERSION_STRING, "ranks", opt->ranks > 0 ? opt->ranks : 1, "groups", groups,
                          "group_ranks", g, "sync", kr__sync_name(f->sync_ran), "sync_requested",
                          kr__sync_name(f->sync), "end_time", kr_time_to_units(f->end_time, f->precision), "seed",
                          (json_int_t)f->seed,
                          "replication_count", (json_int_t)replications, "wall_seconds", wall, "events", events,
                          "pooled", kr__replications_pool(results), "replications", results);
        if (!stats) st = kr__fail(KR_ERR_NOMEM, "out of memory building the stats");
        if (!st && out.fp && kr__json_dump_to(stats, out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(17)))
            st = kr__fail(KR_ERR_IO, "%s: write failed", out.partial);
        if (!st && out.fp) fputc('\n', out.fp);
    }
    if (opt->rank == 0) {
        kr_status_t closed = kr__out_close(&out, !st);
        if (!st) st = closed;
        if (!st && !opt->quiet && opt->summary) print_summary(opt->summary, f, stats);
    }
    json_decref(stats);
    json_decref(results);
    return st;
}
