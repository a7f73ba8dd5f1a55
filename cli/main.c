/* The kairos command: run, sweep, validate, kinds, info, and frames and
 * view for recordings (viewer_commands.h).
 *
 * Exit status (docs/cli.md): 0 success; 1 a run that failed; 2 bad input
 * (command line, model file, params, a setup error), with one line on
 * stderr naming the file, the JSON path, what was expected and what was
 * found; 3 a deadlock; 130 / 143 interrupted by SIGINT / SIGTERM. Every
 * rank ends with the same status (the ranks agree on it, runtime/run.c);
 * only rank 0 prints. */
#include <errno.h>
#include <math.h>
#include <hwloc.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "models/builtin.h"
#include "runtime/kind_doc.h"
#include "runtime/memory_estimate.h"
#include "runtime/model_digest.h"
#include "runtime/param_table.h"
#include "runtime/plugins.h"
#include "runtime/run.h"
#include "runtime/sweep.h"
#include "cli/arguments.h"
#include "cli/sanitizer_exit.h"
#include "cli/viewer_commands.h"

static const char *const main_help =
    "usage: kairos <command> [options]\n"
    "\n"
    "commands:\n"
    "  run MODEL.json       run a model and report what it did (or R replications, pooled)\n"
    "  sweep MODEL.json     replications at every combination of some parameters' values, to CSV\n"
    "  validate MODEL.json  check a model file and print its plan\n"
    "  kinds [NAME]         list the model kinds, or describe one and its parameters\n"
    "  info                 version, MPI library and the topology of this node\n"
    "  frames DIR --png OUT draw a recording of frames (run --frames) as PNG pictures\n"
    "  view DIR             serve a recording of frames to the viewer page in a browser\n"
    "\n"
    "kairos <command> --help shows the options of a command; kairos --version, the version.\n"
    "Exit status: 0 done, 1 the run failed, 2 bad input, 3 deadlock, 4 checkpointed and not finished,\n"
    "130/143 interrupted (docs/cli.md).\n";

static const char *const run_help =
    "usage: kairos run MODEL.json [options]\n"
    "\n"
    "Runs the model under mpirun (or alone) and prints a summary.\n"
    "\n"
    "options:\n"
    "  -o, --stats FILE      write the stats JSON (docs/stats.md) to FILE\n"
    "  --set KEY=VALUE       override a field of the model file before it is checked;\n"
    "                        KEY is a dotted path, simulators addressed by name:\n"
    "                        --set end_time=3600 --set simulators.queue.params.capacity=10\n"
    "                        VALUE is JSON (10, \"text\", [1,2], {...}) or else a string\n"
    "  --sync ALGORITHM      auto (the default), null-message or window (same results,\n"
    "                        other costs; docs/performance.md)\n"
    "  --end T               end time in model units (same as --set end_time=T)\n"
    "  --seed N              model seed (same as --set seed=N)\n"
    "  --trace FILE          write a Chrome trace (Perfetto, chrome://tracing)\n"
    "  --event-log DIR       write every executed event, one JSON-lines file per simulator\n"
    "  --series FILE         write the kinds' per-step figures, summed over simulators, as CSV\n"
    "  --frames DIR          record frames of the simulators that draw (docs/viewer.md): see them\n"
    "                        with kairos view DIR, or as PNGs with kairos frames DIR --png OUT\n"
    "  --frame-every DT      a frame every DT of model time (default: the largest time step of\n"
    "                        the simulators that draw, at most 200 frames a run)\n"
    "  --replay NAME=LOG     emulation simulator NAME replays LOG (its log of an earlier run)\n"
    "                        instead of reading input: the same run again, bit for bit, with\n"
    "                        no outside system (docs/emulation.md); repeatable\n"
    "  --quiet               no summary and no progress line\n"
    "  --replications R      R independent replications (seeds derived from the model seed),\n"
    "                        shared out over groups of ranks; the stats gain pooled means and\n"
    "                        95% intervals (docs/replications.md)\n"
    "  --group-ranks G       ranks per replication group (default: docs/replications.md)\n"
    "  --checkpoint-at T[,T...]  write a checkpoint when model time reaches each T\n"
    "  --checkpoint-every DT write a checkpoint every DT of model time\n"
    "  --checkpoint-dir DIR  where checkpoints go (default: checkpoints)\n"
    "  --checkpoint-keep N   keep the newest N complete checkpoints (default 2; 0: all)\n"
    "  --checkpoint-level L  zstd level, 1 to 19 (default 1, the fastest)\n"
    "  --restart PATH        go on from a checkpoint (or the newest in the folder PATH), on any\n"
    "                        number of ranks: the results equal an uninterrupted run's\n"
    "                        (docs/checkpoint.md)\n"
    "  --checkpoint-wall S   also write a checkpoint every S seconds of wall time\n"
    "  --stop-before-wall S  checkpoint and stop (exit status 4) before the run has gone S\n"
    "                        seconds: fits a batch job's time limit (docs/cluster.md)\n"
    "  --checkpoint-on-term  SIGTERM checkpoints and stops (exit 4) like SIGUSR1, instead of\n"
    "                        interrupting the run (143)\n"
    "  --progress S          a progress line every S seconds when stderr is not a terminal\n"
    "                        (default 60; 0: none, on a terminal too)\n"
    "  -h, --help            this help\n";

static const char *const sweep_help =
    "usage: kairos sweep MODEL.json --vary KEY=[v1,v2,...] [--vary ...] -o SWEEP.csv [options]\n"
    "\n"
    "Runs R replications at every combination of the listed values (the first --vary\n"
    "outermost) and writes one CSV row per point: the parameters, then the mean and\n"
    "the 95% interval half-width of every statistic (docs/replications.md).\n"
    "\n"
    "options:\n"
    "  --vary KEY=[v1,...]   a key of the model file (a dotted path, as --set) and a JSON\n"
    "                        array of its values; repeatable\n"
    "  --replications R      replications per point (default 1)\n"
    "  -o FILE               the CSV (needed)\n"
    "  --plot DIR            one PNG per statistic against the first varied key (matplotlib)\n"
    "  --group-ranks G       ranks per replication group\n"
    "  --set KEY=VALUE       override a field first (as for run)\n"
    "  --sync, --end, --seed as for run\n"
    "  --quiet               no summary\n"
    "  --checkpoint-dir, --restart, --checkpoint-wall, --stop-before-wall,\n"
    "  --checkpoint-on-term, --progress  as for run: a checkpoint keeps the finished\n"
    "                        replications, a restart runs only the others\n"
    "  -h, --help            this help\n";

static const char *const validate_help =
    "usage: kairos validate MODEL.json [--ranks N] [--set KEY=VALUE]... [--sync A] [--end T] [--seed N]\n"
    "\n"
    "Checks the model file (and every kind's params) without running it, and\n"
    "prints the plan: the model's identity and run digests, simulators,\n"
    "formalisms, dependencies and promises, zero-promise groups, which rank\n"
    "runs what for N ranks (default 1), the parameter values a run will use\n"
    "(after defaults) of every simulator whose kind declares them, and an\n"
    "estimate of each rank's memory after setup (entities, pending events,\n"
    "halos), measured on the model built and started in this one process.\n"
    "--sync, --end and --seed are the same as run's: --set sync=A, end_time=T, seed=N.\n";

static const char *const kinds_help =
    "usage: kairos kinds [NAME] [--markdown] [--plugin FILE]... [MODEL.json]\n"
    "\n"
    "Without NAME lists every kind, built-in ones and those of the plug-ins, with\n"
    "its summary, in the order they are registered. With NAME prints the kind's\n"
    "formalisms and the parameters it declares: name, type, default, range, unit\n"
    "and help.\n"
    "\n"
    "options:\n"
    "  --plugin FILE   also the kinds of this plug-in (repeatable)\n"
    "  MODEL.json      also the kinds of the plug-ins the model file names\n"
    "  --markdown      NAME's description as Markdown, as in docs/models/\n"
    "  -h, --help      this help\n";

static const char *const info_help =
    "usage: kairos info\n"
    "\n"
    "Prints the kairos version, the MPI library, and for every rank its node,\n"
    "the cores it may run on, and the hwloc topology of the node.\n";

typedef struct cli {
    int rank, ranks;
} cli_t;

static int input_error(const cli_t *c, const char *fmt, const char *arg)
{
    if (c->rank == 0) {
        fprintf(stderr, "kairos: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    return 2;
}

/* Binds this rank to one core unless the launcher bound it already (its
 * CPU set is then smaller than the machine), the core chosen by the rank's
 * place among the ranks of its node. Writes what it is bound to. */
static void bind_rank(char *where, size_t cap)
{
    snprintf(where, cap, "unknown");
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) || hwloc_topology_load(topo)) return;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_const_bitmap_t all = hwloc_topology_get_topology_cpuset(topo);
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        bool launcher_bound = !hwloc_bitmap_isequal(set, all);
        if (!launcher_bound) {
            MPI_Comm node;
            int local = 0;
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
            MPI_Comm_rank(node, &local);
            MPI_Comm_free(&node);
            int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
            hwloc_obj_t core = cores > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(local % cores)) : NULL;
            if (core && hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_PROCESS) == 0)
                hwloc_bitmap_copy(set, core->cpuset);
        }
        char pus[128];
        hwloc_bitmap_list_snprintf(pus, sizeof pus, set);
        hwloc_obj_t core = hwloc_get_next_obj_covering_cpuset_by_type(topo, set, HWLOC_OBJ_CORE, NULL);
        bool one_core = core && hwloc_bitmap_isequal(core->cpuset, set);
        if (one_core) snprintf(where, cap, "core %u (PU %s)%s", core->logical_index, pus,
                               launcher_bound ? "" : ", bound by kairos");
        else snprintf(where, cap, "PUs %s%s", pus, launcher_bound ? "" : " (unbound)");
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

/* Options shared by run and validate. */
typedef struct options {
    const char *model;
    const char **sets;
    size_t set_count;
    char **owned;           /* sets made from --sync/--end/--seed */
    size_t owned_count;
    const char *stats, *trace, *event_log, *series, *frames;
    double frame_every;         /* --frame-every, model units; 0: the default */
    bool quiet;
    int ranks;
    long replications;      /* 0: not given */
    int group_ranks;        /* 0: not given */
    const char **varies;
    size_t vary_count;
    const char **replays;   /* --replay NAME=LOG */
    size_t replay_count;
    const char *plot_dir;
    kr__ckpt_plan_t ckpt;   /* --checkpoint-* */
    const char *restart;
    double checkpoint_wall, stop_before_wall; /* seconds, 0: not given */
    double progress;        /* seconds; -1: not given */
    bool checkpoint_on_term;
} options_t;

static void options_free(options_t *o)
{
    for (size_t i = 0; i < o->owned_count; i++) free(o->owned[i]);
    free(o->owned);
    free(o->sets);
    free(o->varies);
    free(o->replays);
    free(o->ckpt.at);
}

static bool add_set(options_t *o, const char *set, bool owned)
{
    const char **sets = realloc(o->sets, (o->set_count + 1) * sizeof *sets);
    if (!sets) return false;
    o->sets = sets;
    sets[o->set_count++] = set;
    if (owned) {
        char **own = realloc(o->owned, (o->owned_count + 1) * sizeof *own);
        if (!own) return false;
        o->owned = own;
        own[o->owned_count++] = (char *)set;
    }
    return true;
}

static bool sugar(options_t *o, const char *key, const char *value, bool quote)
{
    size_t n = strlen(key) + strlen(value) + 4;
    char *s = malloc(n);
    if (!s) return false;
    snprintf(s, n, quote ? "%s=\"%s\"" : "%s=%s", key, value);
    return add_set(o, s, true);
}

/* A whole number in [lo, hi] or -1. */
static long whole(const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return !v[0] || *end || errno || x < lo || x > hi ? -1 : x;
}

/* "T[,T...]": times > 0 in increasing order, into p->at. */
static int parse_times(const char *text, kr__ckpt_plan_t *p)
{
    free(p->at);
    p->at = NULL;
    p->at_count = 0;
    for (const char *at = text;;) {
        char *end;
        double t = strtod(at, &end);
        if (end == at || !(t > 0) || !isfinite(t) || (p->at_count && t <= p->at[p->at_count - 1])) return -1;
        double *more = realloc(p->at, (p->at_count + 1) * sizeof *more);
        if (!more) return -1;
        p->at = more;
        p->at[p->at_count++] = t;
        if (!*end) return 0;
        if (*end != ',') return -1;
        at = end + 1;
    }
}

/* Parses argv[first..] for `cmd` (run, validate or sweep); returns 0, or
 * the exit status to stop with (-1: help was printed). */
static int parse(const cli_t *c, int argc, char **argv, int first, const char *cmd, options_t *o)
{
    bool is_sweep = !strcmp(cmd, "sweep"), is_run = is_sweep || !strcmp(cmd, "run"), run_only = is_run && !is_sweep;
    const char *help = is_sweep ? sweep_help : is_run ? run_help : validate_help;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = kr__cli_has_value(i, argc, argv);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (c->rank == 0) fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--set")) {
            if (!has_value) return input_error(c, "--set needs KEY=VALUE", "");
            if (!strchr(argv[i + 1], '=')) return input_error(c, "--set: expected KEY=VALUE, found \"%s\"", argv[i + 1]);
            if (!add_set(o, argv[++i], false)) return 1;
        } else if (is_run && (!strcmp(a, "-o") || !strcmp(a, "--stats"))) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a file name", a);
            o->stats = argv[++i];
        } else if (run_only && !strcmp(a, "--trace")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a file name", a);
            o->trace = argv[++i];
        } else if (run_only && !strcmp(a, "--series")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a file name", a);
            o->series = argv[++i];
        } else if (run_only && !strcmp(a, "--frames")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a folder name", a);
            o->frames = argv[++i];
        } else if (run_only && !strcmp(a, "--frame-every")) {
            char *end;
            double dt = has_value ? strtod(argv[i + 1], &end) : 0;
            if (!has_value || end == argv[i + 1] || *end || !(dt > 0) || !isfinite(dt))
                return input_error(c, "--frame-every: expected a model time > 0, found %s", has_value ? argv[i + 1] : "nothing");
            o->frame_every = dt;
            i++;
        } else if (run_only && !strcmp(a, "--replay")) {
            if (!has_value || !strchr(argv[i + 1], '='))
                return input_error(c, "--replay: expected NAME=LOG, found %s", has_value ? argv[i + 1] : "nothing");
            const char **r = realloc(o->replays, (o->replay_count + 1) * sizeof *r);
            if (!r) return input_error(c, "--replay: out of memory%s", "");
            o->replays = r;
            r[o->replay_count++] = argv[++i];
        } else if (run_only && !strcmp(a, "--event-log")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a folder name", a);
            o->event_log = argv[++i];
        } else if (!strcmp(a, "--sync")) { /* (validate too: the digests of a run with it) */
            if (!has_value) return input_error(c, "%s needs auto, null-message or window", a);
            const char *v = argv[++i];
            if (kr__sync_from_name(v) < 0)
                return input_error(c, "--sync: expected auto, null-message or window, found \"%s\"", v);
            if (!sugar(o, "sync", v, true)) return 1;
        } else if (!strcmp(a, "--end")) { /* (validate too: the digests of a run with it) */
            if (!has_value) return input_error(c, "%s needs a time", a);
            char *end;
            strtod(argv[i + 1], &end);
            if (!argv[i + 1][0] || *end) return input_error(c, "--end: expected a time in model units, found \"%s\"", argv[i + 1]);
            if (!sugar(o, "end_time", argv[++i], false)) return 1;
        } else if (!strcmp(a, "--seed")) { /* (validate too: the digests of a run with it) */
            if (!has_value) return input_error(c, "%s needs a number", a);
            const char *v = argv[++i];
            /* up to INT64_MAX: a JSON integer, and every seed replications derive */
            errno = 0;
            unsigned long long seed = strtoull(v, NULL, 10);
            if (!v[0] || strspn(v, "0123456789") != strlen(v) || errno || seed > (unsigned long long)INT64_MAX)
                return input_error(c, "--seed: expected a whole number from 0 to 9223372036854775807, found \"%s\"", v);
            char digits[24]; /* (as a JSON number: "05" was no number) */
            snprintf(digits, sizeof digits, "%llu", seed);
            if (!sugar(o, "seed", digits, false)) return 1;
        } else if (run_only && !strcmp(a, "--checkpoint-at")) {
            if (!has_value) return input_error(c, "%s needs T[,T...]", a);
            if (parse_times(argv[++i], &o->ckpt))
                return input_error(c, "--checkpoint-at: expected times > 0 in increasing order, T[,T...], found \"%s\"",
                                   argv[i]);
        } else if (run_only && !strcmp(a, "--checkpoint-every")) {
            if (!has_value) return input_error(c, "%s needs a time", a);
            char *end;
            o->ckpt.every = strtod(argv[++i], &end);
            if (!argv[i][0] || *end || !(o->ckpt.every > 0) || !isfinite(o->ckpt.every))
                return input_error(c, "--checkpoint-every: expected a time > 0 in model units, found \"%s\"", argv[i]);
        } else if (is_run && (!strcmp(a, "--checkpoint-wall") || !strcmp(a, "--stop-before-wall") ||
                              !strcmp(a, "--progress"))) {
            if (!has_value) return input_error(c, "%s needs a number of seconds", a);
            bool progress = !strcmp(a, "--progress");
            char *end;
            double v = strtod(argv[++i], &end);
            if (!argv[i][0] || *end || !isfinite(v) || v < 0 || (v == 0 && !progress)) {
                char what[96];
                snprintf(what, sizeof what, "%s: expected wall-clock seconds %s", a, progress ? ">= 0 (0: off)" : "> 0");
                if (c->rank == 0) fprintf(stderr, "kairos: %s, found \"%s\"\n", what, argv[i]);
                return 2;
            }
            *(progress ? &o->progress : !strcmp(a, "--checkpoint-wall") ? &o->checkpoint_wall : &o->stop_before_wall) = v;
        } else if (is_run && !strcmp(a, "--checkpoint-on-term")) {
            o->checkpoint_on_term = true;
        } else if (is_run && !strcmp(a, "--checkpoint-dir")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a folder name", a);
            o->ckpt.dir = argv[++i];
        } else if (run_only && !strcmp(a, "--checkpoint-keep")) {
            if (!has_value) return input_error(c, "%s needs a number", a);
            if ((o->ckpt.keep = (int)whole(argv[++i], 0, 1000000)) < 0)
                return input_error(c, "--checkpoint-keep: expected a whole number >= 0 (0: keep all), found \"%s\"",
                                   argv[i]);
        } else if (run_only && !strcmp(a, "--checkpoint-level")) {
            if (!has_value) return input_error(c, "%s needs a number", a);
            if ((o->ckpt.level = (int)whole(argv[++i], 1, 19)) < 0)
                return input_error(c, "--checkpoint-level: expected a zstd level from 1 to 19, found \"%s\"", argv[i]);
        } else if (is_run && !strcmp(a, "--restart")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a checkpoint or a folder of them", a);
            o->restart = argv[++i];
        } else if (is_run && !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (is_run && !strcmp(a, "--replications")) {
            if (!has_value) return input_error(c, "%s needs a number", a);
            if ((o->replications = whole(argv[++i], 1, 1000000)) < 0)
                return input_error(c, "--replications: expected a whole number from 1 to 1000000, found \"%s\"",
                                   argv[i]);
        } else if (is_run && !strcmp(a, "--group-ranks")) {
            if (!has_value) return input_error(c, "%s needs a number", a);
            long g = whole(argv[++i], 1, c->ranks);
            if (g < 0) {
                char fmt[96];
                snprintf(fmt, sizeof fmt,
                         "--group-ranks: expected a whole number from 1 to %d (the ranks), found \"%%s\"", c->ranks);
                return input_error(c, fmt, argv[i]);
            }
            o->group_ranks = (int)g;
        } else if (is_sweep && !strcmp(a, "--vary")) {
            if (!has_value) return input_error(c, "--vary needs KEY=[v1,v2,...]", "");
            const char **varies = realloc(o->varies, (o->vary_count + 1) * sizeof *varies);
            if (!varies) return 1;
            o->varies = varies;
            varies[o->vary_count++] = argv[++i];
        } else if (is_sweep && !strcmp(a, "--plot")) {
            if (!has_value || !argv[i + 1][0]) return input_error(c, "%s needs a folder name", a);
            o->plot_dir = argv[++i];
        } else if (!is_run && !strcmp(a, "--ranks")) {
            if (!has_value) return input_error(c, "%s needs a number", a);
            const char *v = argv[++i];
            char *end;
            long r = strtol(v, &end, 10);
            if (!v[0] || *end || r < 1 || r > 1 << 20) return input_error(c, "--ranks: expected a whole number from 1 to 1048576, found \"%s\"", v);
            o->ranks = (int)r;
        } else if (a[0] == '-' && a[1]) {
            if (c->rank == 0)
                fprintf(stderr, "kairos: %s: unknown option %s (kairos %s --help lists them)\n", cmd, a, cmd);
            return 2;
        } else if (!o->model) {
            o->model = a;
        } else {
            return input_error(c, "one model file only (found another: %s)", a);
        }
    }
    if (!o->model) {
        /* (the usage's first line names what is missing) */
        if (c->rank == 0) fprintf(stderr, "kairos: %s: expected a model file, found none (%.*s)\n", cmd,
                                  (int)strcspn(help, "\n"), help);
        return 2;
    }
    if (run_only && o->replications && (o->trace || o->event_log || o->series))
        return input_error(c, "%s: expected no trace, series or event log with --replications (rerun one replication "
                           "alone with --seed), found one", o->trace ? "--trace" : o->series ? "--series" : "--event-log");
    if (run_only && o->replications && (o->ckpt.at_count || o->ckpt.every > 0 || o->ckpt.keep >= 0 || o->ckpt.level))
        return input_error(c, "%s: expected no model-time checkpoints with --replications (their checkpoints keep the "
                           "replications that finished: --checkpoint-wall, --stop-before-wall, SIGUSR1), found one",
                           o->ckpt.at_count ? "--checkpoint-at" : o->ckpt.every > 0 ? "--checkpoint-every"
                           : o->ckpt.keep >= 0 ? "--checkpoint-keep" : "--checkpoint-level");
    if (run_only && o->replications && o->frames)
        return input_error(c, "--frames: expected no frames with --replications (record one replication alone with "
                           "--seed), found %s", o->frames);
    if (run_only && o->frame_every > 0 && !o->frames)
        return input_error(c, "--frame-every: expected --frames DIR too, found none", "");
    if (run_only && o->group_ranks && !o->replications)
        return input_error(c, "--group-ranks: expected --replications too, found none", "");
    if (is_sweep && !o->vary_count) return input_error(c, "sweep: expected at least one --vary KEY=[v1,...], found none", "");
    if (is_sweep && !o->stats) return input_error(c, "sweep: expected -o SWEEP.csv, found none", "");
    return 0;
}

/* Loads the model file. Every rank reads the same file, but a plug-in may
 * be missing or stale on one node only: the ranks agree on the outcome
 * before going on together, and rank 0 says what failed, wherever. */
static kr__model_file_t *load(const cli_t *c, const options_t *o)
{
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){
        .path = o->model, .sets = o->sets, .set_count = o->set_count, .register_builtin = kr__models_register_builtin,
        .replays = o->replays, .replay_count = o->replay_count });
    kr_status_t st = f ? KR_OK : kr_last_status();
    if (c->ranks > 1) st = kr__run_agree(MPI_COMM_WORLD, c->ranks, c->rank, st, true);
    if (st && f) {
        kr__model_file_free(f);
        f = NULL;
    }
    if (!f && c->rank == 0) fprintf(stderr, "kairos: %s\n", kr_last_error());
    return f;
}

/* When the process began: --stop-before-wall counts from here, as a batch
 * system's time limit does (start-up and a restart's loading included). */
static uint64_t process_start_ns;

/* The options of a long job (docs/cluster.md), shared by run and sweep. */
static void long_job_options(const cli_t *c, const options_t *o, kr__run_options_t *ro)
{
    bool tty = isatty(2);
    /* the live line on a terminal; a whole line now and then in a batch
     * log, where a line rewritten in place would pile up */
    ro->progress = c->rank == 0 && !o->quiet && tty && o->progress != 0;
    ro->wall = (kr__wall_limits_t){ .progress_every = o->quiet || tty ? 0 : o->progress < 0 ? 60 : o->progress,
                                    .checkpoint_wall = o->checkpoint_wall, .stop_before_wall = o->stop_before_wall,
                                    .started_ns = process_start_ns, .on_term = o->checkpoint_on_term };
    if (o->checkpoint_on_term) kr__checkpoint_on_term();
}

static int cmd_run(const cli_t *c, int argc, char **argv)
{
    options_t o = { .ranks = 1, .ckpt.keep = -1, .progress = -1 };
    int rc = parse(c, argc, argv, 2, "run", &o);
    if (rc) {
        options_free(&o);
        return rc < 0 ? 0 : rc;
    }
    kr__model_file_t *f = load(c, &o);
    if (!f) {
        options_free(&o);
        return kr__run_exit_status(kr_last_status());
    }
    /* Every rank runs its simulators; kr__run_file agrees on the outcome
     * across ranks (kr__run_agree: one status everywhere, that of the rank
     * where the failure began), and only rank 0 prints. */
    char binding[192] = "";
    if (c->ranks > 1) bind_rank(binding, sizeof binding);
    kr__run_options_t ro = { .binding = binding, .stats_path = o.stats, .event_log_dir = o.event_log, .trace_path = o.trace, .series_path = o.series,
                            .frames_dir = o.frames, .frame_every = o.frame_every,
                            .quiet = o.quiet, .ranks = c->ranks,
                            .rank = c->rank, .comm = MPI_COMM_WORLD, .summary = c->rank == 0 ? stdout : NULL,
                            .ckpt = o.ckpt, .restart = o.restart };
    long_job_options(c, &o, &ro);
    kr_status_t st = o.replications ? kr__replications_run_file(f, &ro, (uint32_t)o.replications, o.group_ranks)
                                    : kr__run_file(f, &ro);
    if (st && c->rank == 0) fprintf(stderr, "kairos: %s\n", kr_last_error());
    fflush(stdout);
    int code = kr__run_exit_status(st);
    kr__model_file_free(f);
    options_free(&o);
    return code;
}

static int cmd_sweep(const cli_t *c, int argc, char **argv)
{
    options_t o = { .ranks = 1, .progress = -1 };
    int rc = parse(c, argc, argv, 2, "sweep", &o);
    if (rc) {
        options_free(&o);
        return rc < 0 ? 0 : rc;
    }
    char binding[192];
    if (c->ranks > 1) bind_rank(binding, sizeof binding);
    kr__run_options_t job = { 0 };
    long_job_options(c, &o, &job);
    kr_status_t st = kr__sweep_run(&(kr__sweep_desc_t){
        .model = o.model, .sets = o.sets, .set_count = o.set_count, .varies = o.varies, .vary_count = o.vary_count,
        .replications = o.replications ? (uint32_t)o.replications : 1, .group_ranks = o.group_ranks,
        .csv_path = o.stats, .plot_dir = o.plot_dir, .quiet = o.quiet, .summary = c->rank == 0 ? stdout : NULL,
        .ranks = c->ranks, .rank = c->rank, .comm = MPI_COMM_WORLD, .register_builtin = kr__models_register_builtin,
        .checkpoint_dir = o.ckpt.dir, .restart = o.restart, .wall = job.wall });
    if (st && c->rank == 0) fprintf(stderr, "kairos: %s\n", kr_last_error());
    fflush(stdout);
    options_free(&o);
    return kr__run_exit_status(st);
}

/* "  NAME (KIND): key value unit, ...\n" for every simulator whose kind
 * declares a parameter table, into a buffer (*text, *len; 0 when none). */
static kr_status_t declared_values(kr__model_file_t *f, kr_model_t *m, char **text, size_t *len)
{
    FILE *out = open_memstream(text, len);
    if (!out) return kr__fail(KR_ERR_NOMEM, "%s: out of memory listing the params", f->path);
    kr_status_t st = KR_OK;
    for (size_t i = 0; i < f->sim_count && !st; i++) {
        const kr__sim_entry_t *e = &f->sims[i];
        const kr_kind_desc_t *k = kr__model_file_kind(f, i);
        if (!k || !k->params) continue;
        char path[128];
        snprintf(path, sizeof path, "simulators[%zu].params", e->index);
        kr_params_t *p = kr__params_open(f->path, path, e->params, f->precision);
        if (!p) {
            st = kr_last_status();
            break;
        }
        fprintf(out, "  %s (%s): ", e->name, k->name);
        st = kr__param_table_show(k, p, kr_model_sim(m, (uint32_t)i), out);
        fputc('\n', out);
        kr__params_close(p);
    }
    fclose(out);
    if (st) {
        free(*text);
        *text = NULL;
        *len = 0;
    }
    return st;
}

static int cmd_validate(const cli_t *c, int argc, char **argv)
{
    options_t o = { .ranks = 1 };
    int rc = parse(c, argc, argv, 2, "validate", &o);
    if (rc) {
        options_free(&o);
        return rc < 0 ? 0 : rc;
    }
    kr__model_file_t *f = load(c, &o);
    kr_model_t *m = f ? kr__model_file_build(f, NULL) : NULL;
    int *rank_of = m ? calloc(f->sim_count, sizeof *rank_of) : NULL;
    kr_status_t st = !f || !m ? kr_last_status() : !rank_of ? KR_ERR_NOMEM : kr__model_file_map(f, m, o.ranks, rank_of);
    if (!st) st = kr__model_file_check_inputs(f, rank_of);
    kr__model_digest_t digest = { 0 };
    if (!st) st = kr__model_digest(f, m, &digest);
    /* Each zero-promise group's members chained in ascending order (a
     * group is named by its lowest member): linear in the simulators,
     * where a scan per group would be quadratic for 10^5 singletons. */
    size_t n = f ? f->sim_count : 0, none = SIZE_MAX;
    size_t *next = NULL, *last = NULL;
    if (!st) {
        next = malloc((n ? n : 1) * sizeof *next);
        last = malloc((n ? n : 1) * sizeof *last);
        if (!next || !last) st = kr__fail(KR_ERR_NOMEM, "%s: out of memory listing the zero-promise groups", f->path);
    }
    /* The declared params' values, gathered before anything is printed:
     * a value the run would refuse fails validate with the run's line. */
    char *values = NULL;
    size_t values_len = 0;
    if (!st) st = declared_values(f, m, &values, &values_len);
    /* Each rank's memory, measured on the model as a run has it when it
     * starts (its behaviors' on_start and first steps included): every
     * simulator is built in this one process, then counted on its rank. */
    kr__rank_memory_t *memory = !st ? calloc((size_t)o.ranks, sizeof *memory) : NULL;
    if (!st && !memory) st = kr__fail(KR_ERR_NOMEM, "%s: out of memory estimating the ranks' memory", f->path);
    if (!st) st = kr_model_start(m);
    if (!st) f->sync_ran = kr_model_sync(m);
    if (!st) kr__memory_estimate(f, m, o.ranks, rank_of, memory);
    if (st && f && c->rank == 0) fprintf(stderr, "kairos: %s\n", kr_last_error());
    if (!st && c->rank == 0) {
        double p = (double)f->precision;
        printf("%s: valid\n", f->path);
        printf("  precision %llu ticks per unit, seed %llu, end time %g, sync %s%s, mapping %s\n",
               (unsigned long long)f->precision, (unsigned long long)f->seed, (double)f->end_time / p,
               kr__sync_name(f->sync_ran), f->sync == KR_SYNC_AUTO ? " (auto)" : "",
               f->mapping == KR__MAP_BLOCK ? "block" : f->mapping == KR__MAP_METIS ? "metis" : "round-robin");
        printf("  identity digest %016llx, run digest %016llx (the stats' identity_digest and run_digest)\n",
               (unsigned long long)digest.identity, (unsigned long long)digest.run);
        printf("simulators (%zu):\n", f->sim_count);
        for (size_t i = 0; i < f->sim_count; i++) {
            const kr__sim_entry_t *e = &f->sims[i];
            printf("  %-4zu %-24s kind %-12s %-15s", i, e->name, e->kind, kr_formalism_name(e->formalism));
            if (e->time_step) printf(" time_step %g", (double)e->time_step / p);
            if (e->rank >= 0) printf(" pinned to rank %d", e->rank);
            putchar('\n');
        }
        printf("dependencies (%zu):\n", f->dep_count);
        for (size_t i = 0; i < f->dep_count; i++)
            printf("  %s -> %s  promise %g\n", f->sims[f->deps[i].from].name, f->sims[f->deps[i].to].name,
                   (double)f->deps[i].promise / p);
        printf("zero-promise groups (run as one event loop on one rank):");
        size_t groups = 0;
        for (size_t i = 0; i < n; i++) {
            size_t g = kr_model_group_of(m, (uint32_t)i);
            next[i] = none;
            if (g != i) next[last[g]] = i;
            last[g] = i;
        }
        for (size_t i = 0; i < n; i++) {
            if (kr_model_group_of(m, (uint32_t)i) != i || next[i] == none) continue;
            printf("\n  {");
            for (size_t j = i, k = 0; j != none; j = next[j]) printf("%s%s", k++ ? ", " : "", f->sims[j].name);
            printf("}");
            groups++;
        }
        printf(groups ? "\n" : " none\n");
        printf("ranks (%d):\n", o.ranks);
        size_t *on_rank = calloc((size_t)o.ranks, sizeof *on_rank);
        for (size_t i = 0; on_rank && i < f->sim_count; i++) on_rank[rank_of[i]]++;
        for (int r = 0; on_rank && r < o.ranks; r++) {
            if (!on_rank[r]) {
                /* a run of idle ranks in one line (a million ranks for a
                 * few simulators made a million lines) */
                int last = r;
                while (last + 1 < o.ranks && !on_rank[last + 1]) last++;
                if (last == r) printf("  rank %d: (idle)\n", r);
                else printf("  ranks %d-%d: (idle)\n", r, last);
                r = last;
                continue;
            }
            printf("  rank %d:", r);
            for (size_t i = 0, k = 0; i < f->sim_count; i++)
                if (rank_of[i] == r) printf("%s %s", k++ ? "," : "", f->sims[i].name);
            printf("\n");
        }
        free(on_rank);
        if (values_len) printf("params (the values a run uses, after defaults):\n%s", values);
        kr__memory_estimate_print(stdout, memory, o.ranks);
    }
    free(memory);
    free(values);
    free(next);
    free(last);
    free(rank_of);
    kr_model_destroy(m);
    kr__model_file_free(f);
    options_free(&o);
    return kr__run_exit_status(st);
}

/* The plug-ins a model file names, relative to its folder as when it is
 * loaded. */
static kr_status_t model_plugins(kr_kinds_t *kinds, const char *model)
{
    json_t *root = kr__model_file_read(model);
    if (!root) return kr_last_status();
    json_t *list = json_object_get(root, "plugins");
    kr_status_t st = KR_OK;
    if (!json_is_object(root)) st = kr__input_error(model, "(top)", "an object", root);
    else if (list && !json_is_array(list))
        st = kr__input_error(model, "plugins", "an array of shared-object paths", list);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    for (size_t i = 0; !st && i < json_array_size(list); i++) {
        json_t *v = json_array_get(list, i);
        char where[64];
        snprintf(where, sizeof where, "plugins[%zu]", i);
        if (!json_is_string(v) || !json_string_value(v)[0])
            st = kr__input_error(model, where, "a shared-object path", v);
        else st = kr__plugin_load(kinds, json_string_value(v), dir, model, where, NULL);
    }
    json_decref(root);
    return st;
}

static int cmd_kinds(const cli_t *c, int argc, char **argv)
{
    (void)c;
    const char *name = NULL, *model = NULL;
    bool markdown = false;
    kr_kinds_t *kinds = kr__kinds_create();
    if (!kinds || kr__models_register_builtin(kinds)) {
        fprintf(stderr, "kairos kinds: %s\n", kr_last_error());
        kr__kinds_destroy(kinds);
        return 1;
    }
    int code = 0;
    for (int i = 2; i < argc && !code; i++) {
        const char *a = argv[i];
        size_t len = strlen(a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(kinds_help, stdout);
            code = -1;
        } else if (!strcmp(a, "--markdown")) {
            markdown = true;
        } else if (!strcmp(a, "--plugin")) {
            if (i + 1 >= argc) code = input_error(c, "--plugin needs a file name", "");
            else if (kr__plugin_load(kinds, argv[++i], NULL, "kairos kinds", "--plugin", NULL)) {
                fprintf(stderr, "%s\n", kr_last_error()); /* "kairos kinds: --plugin: ..." */
                code = 2;
            }
        } else if (a[0] == '-' && a[1]) {
            code = input_error(c, "kinds: unknown option %s (kairos kinds --help lists them)", a);
        } else if (len > 5 && !strcmp(a + len - 5, ".json")) {
            if (model) code = input_error(c, "one model file only (found another: %s)", a);
            else if (model_plugins(kinds, model = a)) code = input_error(c, "%s", kr_last_error());
        } else if (name) {
            code = input_error(c, "one kind name only (found another: %s)", a);
        } else {
            name = a;
        }
    }
    size_t n = kr__kinds_count(kinds);
    if (!code && name) {
        const kr_kind_desc_t *k = kr__kinds_find(kinds, name);
        if (k && markdown) kr__kind_doc_markdown(k, stdout);
        else if (k) kr__kind_doc_text(k, stdout);
        else {
            fprintf(stderr, "kairos kinds: no kind '%s' (known: ", name);
            for (size_t i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", kr__kinds_at(kinds, i)->name);
            fprintf(stderr, ")\n");
            code = 2;
        }
    } else if (!code && markdown) {
        code = input_error(c, "--markdown describes one kind: expected NAME, found none", "");
    } else if (!code) {
        int width = 0;
        for (size_t i = 0; i < n; i++)
            if ((int)strlen(kr__kinds_at(kinds, i)->name) > width) width = (int)strlen(kr__kinds_at(kinds, i)->name);
        for (size_t i = 0; i < n; i++) {
            const kr_kind_desc_t *k = kr__kinds_at(kinds, i);
            const char *summary = k->summary ? k->summary : "";
            printf("%-*s%s%s\n", summary[0] ? width : 0, k->name, summary[0] ? "  " : "", summary);
        }
    }
    kr__kinds_destroy(kinds);
    return code < 0 ? 0 : code;
}

static int cmd_info(const cli_t *c, int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            if (c->rank == 0) fputs(info_help, stdout);
            return 0;
        }
        return input_error(c, "info takes no arguments (found %s)", argv[i]);
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    /* (MPI_Get_library_version may run before MPI_Init; the node name comes
     * from the system, since MPI is up only under a launcher) */
    char node[256] = "?";
    gethostname(node, sizeof node - 1);
    hwloc_topology_t topo;
    char where[256] = "?", cpus[256] = "?";
    int cores = 0, pus = 0, packages = 0, numa = 0;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
        numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
            hwloc_bitmap_list_snprintf(cpus, sizeof cpus, set);
        if (set && hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
            hwloc_bitmap_list_snprintf(where, sizeof where, set);
        hwloc_bitmap_free(set);
        hwloc_topology_destroy(topo);
    }
    /* Ranks report in order. */
    for (int r = 0; r < c->ranks; r++) {
        if (r == c->rank) {
            if (r == 0) {
                printf("kairos %s\n", KAIROS_VERSION_STRING);
                printf("MPI: %s (%d rank%s)\n", lib, c->ranks, c->ranks == 1 ? "" : "s");
                printf("hwloc: %s\n", HWLOC_VERSION);
            }
            printf("rank %d: node %s, %d package%s, %d NUMA node%s, %d cores, %d hardware threads; may run on PUs %s, "
                   "last ran on PU %s\n", r, node, packages, packages == 1 ? "" : "s", numa, numa == 1 ? "" : "s",
                   cores, pus, cpus, where);
            fflush(stdout);
        }
        if (c->ranks > 1) MPI_Barrier(MPI_COMM_WORLD);
    }
    return 0;
}

/* Recordings are read in one process: no MPI (cli/frames.c, cli/view.c). */
static int cmd_frames(const cli_t *c, int argc, char **argv)
{
    (void)c;
    return kr__cli_frames(argc, argv);
}

static int cmd_view(const cli_t *c, int argc, char **argv)
{
    (void)c;
    return kr__cli_view(argc, argv);
}

int main(int argc, char **argv)
{
    process_start_ns = kr__monotonic_ns();
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(main_help, cmd ? stdout : stderr);
        return cmd ? 0 : 2;
    }
    if (!strcmp(cmd, "--version")) {
        printf("kairos %s\n", KAIROS_VERSION_STRING);
        return 0;
    }
    int (*fn)(const cli_t *, int, char **) = !strcmp(cmd, "run") ? cmd_run
                                            : !strcmp(cmd, "sweep") ? cmd_sweep
                                            : !strcmp(cmd, "validate") ? cmd_validate
                                            : !strcmp(cmd, "kinds") ? cmd_kinds
                                            : !strcmp(cmd, "info") ? cmd_info
                                            : !strcmp(cmd, "frames") ? cmd_frames
                                            : !strcmp(cmd, "view") ? cmd_view : NULL;
    if (!fn) {
        /* (bad input: one line, as every other) */
        fprintf(stderr, "kairos: unknown command '%s': expected run, sweep, validate, kinds, info, frames or view "
                "(kairos --help)\n", cmd);
        return 2;
    }
    /* MPI starts only under a launcher (mpirun, srun): a lone process is
     * one rank, and `validate` and `kinds` never need MPI. This keeps a plain
     * `kairos run` from spawning Open MPI's singleton daemon. */
    cli_t c = { 0, 1 };
    bool launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") ||
                    getenv("PMI_SIZE");
    bool mpi = launched && fn != cmd_validate && fn != cmd_kinds && fn != cmd_frames && fn != cmd_view;
    /* A run stops at its next safe point on SIGINT or SIGTERM (Open MPI's
     * mpirun passes SIGTERM on to the ranks), removes its unfinished
     * outputs and exits 130 or 143, and checkpoints on SIGUSR1 (docs/cli.md).
     * Caught before MPI_Init, which may take seconds on a cluster: a signal
     * then waits for the run's first safe point instead of killing the
     * rank; and again after it, in case MPI set handlers of its own. */
    bool signals = fn == cmd_run || fn == cmd_sweep;
    if (signals) kr__catch_signals();
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &c.ranks);
    }
    if (signals) kr__catch_signals();
    int code = fn(&c, argc, argv);
    /* Interrupted under a launcher, the launcher is ending the job too:
     * MPI_Finalize would wait for it (Open MPI's mpirun kills ranks one
     * second after its SIGTERM), and the outcome is decided already. */
    bool interrupted = code == KR__EXIT_SIGINT || code == KR__EXIT_SIGTERM;
    /* Checkpointed and stopping: every rank decided it together, and a
     * launcher that ends the others once one exits (srun
     * --kill-on-bad-exit) must not turn the status into a signal's. */
    if (code == KR__EXIT_CHECKPOINTED) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGUSR1, SIG_IGN);
    }
    /* (so is a launcher that passed on SIGTERM after --checkpoint-on-term) */
    if (code == KR__EXIT_CHECKPOINTED && kr__checkpoint_asked == SIGTERM) interrupted = true;
    if (mpi && !interrupted) {
        kr__keep_shared_objects_loaded(); /* (sanitizer builds only) */
        MPI_Finalize();
    }
    return code;
}
