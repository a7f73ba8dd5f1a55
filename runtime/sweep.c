/* A parameter sweep: points, their replications, the CSV and the plots. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "runtime/data_path.h"
#include "runtime/sweep.h"

extern char **environ;

/* At most this many points times replications: a typo in a list should
 * not start a run of years. */
#define MAX_ITEMS 10000000u

void kr__sweep_format_double(char *out, size_t cap, double x)
{
    if (!isfinite(x)) {
        snprintf(out, cap, "%s", "");
        return;
    }
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(out, cap, "%.*g", digits, x);
        if (strtod(out, NULL) == x) break;
    }
    snprintf(out, cap, "%.*g", digits, x);
    /* %g turns to an exponent once it exceeds the precision (10 as
     * "1e+01"); whole parts below 1e17 read better written out. */
    const char *e = strchr(out, 'e');
    int exponent = e ? atoi(e + 1) : -1;
    if (exponent >= digits && exponent < 17) snprintf(out, cap, "%.*g", exponent + 1, x);
}

/* One --vary: its key and its values. */
typedef struct vary {
    char *key;
    json_t *values;    /* a non-empty array */
} vary_t;

static kr_status_t parse_varies(const kr__sweep_desc_t *d, vary_t *v)
{
    for (size_t i = 0; i < d->vary_count; i++) {
        const char *a = d->varies[i], *eq = strchr(a, '=');
        if (!eq || eq == a)
            return kr__fail(KR_ERR_INVALID_ARG, "--vary: expected KEY=[v1,v2,...], found \"%s\"", a);
        v[i].key = strndup(a, (size_t)(eq - a));
        if (!v[i].key) return kr__fail(KR_ERR_NOMEM, "out of memory");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(v[j].key, v[i].key))
                return kr__fail(KR_ERR_INVALID_ARG, "--vary %s: expected each key once, found it twice", v[i].key);
        json_error_t err;
        v[i].values = json_loads(eq + 1, JSON_DECODE_ANY, &err);
        /* (an array whose number JSON cannot hold is no other kind of value) */
        if (!v[i].values && (strstr(err.text, "too big integer") || strstr(err.text, "real number overflow")))
            return kr__fail(KR_ERR_INVALID_ARG, "--vary %s: expected numbers JSON can hold, a whole one within 64 "
                            "bits and any other within about 1.8e308, found %s", v[i].key, eq + 1);
        if (!v[i].values && strstr(err.text, "\\u0000"))
            return kr__fail(KR_ERR_INVALID_ARG, "--vary %s: expected strings without \\u0000, found %s", v[i].key,
                            eq + 1);
        if (!json_is_array(v[i].values))
            return kr__fail(KR_ERR_INVALID_ARG, "--vary %s: expected a JSON array of values [v1,v2,...], found %s",
                            v[i].key, eq + 1);
        if (json_array_size(v[i].values) == 0)
            return kr__fail(KR_ERR_INVALID_ARG, "--vary %s: expected at least one value, found []", v[i].key);
    }
    return KR_OK;
}

/* Point p's value index for vary i: nested loops, the first outermost. */
static size_t value_index(const vary_t *v, size_t n, size_t p, size_t i)
{
    for (size_t j = n; j-- > i + 1;) p /= json_array_size(v[j].values);
    return p % json_array_size(v[i].values);
}

static kr_status_t load_points(const kr__sweep_desc_t *d, const vary_t *v, size_t points, kr__model_file_t **files)
{
    char **sets = calloc(d->vary_count ? d->vary_count : 1, sizeof *sets);
    if (!sets) return kr__fail(KR_ERR_NOMEM, "out of memory");
    kr_status_t st = KR_OK;
    for (size_t p = 0; !st && p < points; p++) {
        for (size_t i = 0; i < d->vary_count; i++) {
            json_t *value = json_array_get(v[i].values, value_index(v, d->vary_count, p, i));
            char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
            size_t n = strlen(v[i].key) + (text ? strlen(text) : 0) + 2;
            free(sets[i]);
            sets[i] = text ? malloc(n) : NULL;
            if (sets[i]) snprintf(sets[i], n, "%s=%s", v[i].key, text);
            free(text);
            if (!sets[i]) st = kr__fail(KR_ERR_NOMEM, "out of memory");
        }
        if (st) break;
        files[p] = kr__model_file_load(&(kr__model_file_desc_t){
            .path = d->model, .sets = d->sets, .set_count = d->set_count, .varies = (const char *const *)sets,
            .vary_count = d->vary_count, .register_builtin = d->register_builtin });
        if (!files[p]) st = kr_last_status();
    }
    for (size_t i = 0; i < d->vary_count; i++) free(sets[i]);
    free(sets);
    return st;
}

/* ---- the plot script ---- */

static const char *python(void)
{
    const char *env = getenv("KAIROS_PYTHON");
    if (env && env[0]) return env;
    /* Debian's python3-matplotlib belongs to the system interpreter, which
     * a python3 earlier on PATH (pyenv, a venv) may not see. */
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* The plot script (meson.build): KAIROS_PLOT_SCRIPT from the environment;
 * for a binary of the build tree, the source tree's; for an installed one,
 * the copy under its own prefix (the binary in PREFIX/BINDIR, the script
 * in PREFIX/DATADIR/kairos), then the one under the configured prefix. */
static const char *plot_script(void)
{
    const char *env = getenv("KAIROS_PLOT_SCRIPT");
    if (env && env[0]) return env;
    static char found[4200];
    return kr__data_path(KAIROS_PLOT_SCRIPT, KAIROS_PLOT_SCRIPT_INSTALLED, found, sizeof found);
}

/* run_script's answer when a signal interrupted kairos meanwhile. */
#define SCRIPT_INTERRUPTED (-1)
/* How long a script has to end after SIGTERM before SIGKILL. */
#define KILL_AFTER_NS 5000000000ULL

/* SIGINT or SIGTERM, also a SIGTERM that --checkpoint-on-term turned into
 * a checkpoint's request: the sweep has nothing left to checkpoint once
 * the plots are being drawn. */
static bool interrupted(void)
{
    return kr__signal_caught || kr__checkpoint_asked == SIGTERM;
}

/* Runs python SCRIPT ARGS...; its stderr's first line (if any) lands in
 * `err`. Returns the exit status, 127 when it could not start. */
static int run_script(const char *a1, const char *a2, char *err, size_t cap)
{
    err[0] = '\0';
    const char *py = python();
    char *argv[] = { (char *)py, (char *)plot_script(), (char *)a1, (char *)a2, NULL };
    int fds[2];
    if (pipe(fds)) return 127;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    /* Read until the pipe closes or the script has ended (a process it
     * started may hold the pipe open), keeping what fits; the script must
     * never block on a full pipe. A SIGINT or SIGTERM to kairos meanwhile
     * (the handler restarts calls, so it is looked for between short
     * polls) ends the script too, with SIGKILL if SIGTERM has not within
     * a few seconds: the run is not held until it finishes. */
    bool open = true, reaped = rc != 0, wait_failed = false, killed = false, hard = false;
    uint64_t killed_at = 0;
    int ws = 0;
    size_t n = 0;
    char buf[4096];
    struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
    while (open || !reaped) {
        if (!reaped && interrupted()) {
            uint64_t now = kr__monotonic_ns();
            if (!killed) {
                killed = kill(pid, SIGTERM) == 0;
                killed_at = now;
            } else if (!hard && now - killed_at > KILL_AFTER_NS) {
                hard = kill(pid, SIGKILL) == 0;
            }
        }
        if (!reaped) {
            pid_t done = waitpid(pid, &ws, WNOHANG);
            if (done == pid || (done < 0 && errno != EINTR)) {
                reaped = true;
                wait_failed = done < 0;
            }
        }
        if (!open) {
            if (!reaped) nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
            continue;
        }
        int ready = poll(&pfd, 1, reaped ? 0 : 100);
        if ((ready < 0 && errno != EINTR) || (ready == 0 && reaped)) open = false;
        if (ready <= 0) continue;
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got == 0 || (got < 0 && errno != EINTR)) open = false;
        if (got <= 0) continue;
        size_t take = (size_t)got < cap - 1 - n ? (size_t)got : cap - 1 - n;
        memcpy(err + n, buf, take);
        n += take;
    }
    close(fds[0]);
    err[n] = '\0';
    char *nl = strchr(err, '\n');
    if (nl) *nl = '\0';
    if (rc) {
        snprintf(err, cap, "%s", strerror(rc)); /* (posix_spawnp's reason: the interpreter is missing) */
        return 127;
    }
    if (interrupted()) return SCRIPT_INTERRUPTED;
    if (wait_failed) return 127;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
}

/* Fails before anything runs when the plots could not be drawn: no
 * matplotlib, or a plot folder that is something else. */
static kr_status_t check_plotting(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return kr__fail(KR_ERR_IO, "--plot %s: expected a folder (made if missing), found a file", dir);
    char err[512];
    int rc = run_script("--check", NULL, err, sizeof err);
    if (rc == 0) return KR_OK;
    if (rc == SCRIPT_INTERRUPTED)
        return kr__fail(KR_ERR_INTERRUPTED, "interrupted (%s) while checking that the plots can be drawn: nothing ran",
                        kr__signal_caught == SIGINT ? "SIGINT" : "SIGTERM");
    if (rc == 3)
        return kr__fail(KR_ERR_IO, "--plot: matplotlib is missing for %s (apt-get install python3-matplotlib, or "
                        "scripts/setup)", python());
    return kr__fail(KR_ERR_IO, "--plot: cannot run %s %s%s%s", python(), plot_script(), err[0] ? ": " : "", err);
}

/* A CSV in the plots' folder named as a plot (SIM.STAT.png, or its
 * .partial) would be written over by one: refused before anything runs. */
static kr_status_t csv_not_a_plot(const kr__sweep_desc_t *d)
{
    const char *slash = strrchr(d->csv_path, '/'), *name = slash ? slash + 1 : d->csv_path;
    size_t n = strlen(name);
    bool png = (n > 4 && !strcmp(name + n - 4, ".png")) || (n > 12 && !strcmp(name + n - 12, ".png.partial"));
    if (!png) return KR_OK;
    char *csv_dir = slash ? strndup(d->csv_path, (size_t)(slash - d->csv_path)) : strdup(".");
    char *a = csv_dir ? realpath(csv_dir, NULL) : NULL, *b = realpath(d->plot_dir, NULL);
    bool same = a && b && !strcmp(a, b);
    free(csv_dir), free(a), free(b);
    return same ? kr__fail(KR_ERR_IO, "-o %s: expected a table apart from the plots, found a name a plot in --plot %s "
                           "may take (NAME.png)", d->csv_path, d->plot_dir) : KR_OK;
}

/* ---- the CSV ---- */

/* A CSV cell: quoted when it holds a comma, a quote or a line break. */
static void put_cell(FILE *fp, const char *s, bool first)
{
    if (!first) fputc(',', fp);
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"') fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static void put_number(FILE *fp, json_t *v)
{
    char num[64] = "";
    if (json_is_number(v)) kr__sweep_format_double(num, sizeof num, json_number_value(v));
    put_cell(fp, num, false);
}

/* A parameter's cell: numbers as numbers, strings as they are, anything
 * else as compact JSON. */
static void put_value(FILE *fp, json_t *v, bool first)
{
    if (json_is_integer(v)) {
        /* (exactly: as a double, seeds above 2^53 were written rounded, as
         * other seeds than the point's) */
        char num[32];
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        put_cell(fp, num, first);
    } else if (json_is_number(v)) {
        char num[64];
        kr__sweep_format_double(num, sizeof num, json_number_value(v));
        put_cell(fp, num, first);
    } else if (json_is_string(v)) {
        put_cell(fp, json_string_value(v), first);
    } else {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
        put_cell(fp, text ? text : "", first);
        free(text);
    }
}

/* Rank 0: one row per point. The statistics are every (simulator,
 * statistic) pooled at some point, in the order they first appear. */
static kr_status_t write_csv(FILE *fp, const kr__sweep_desc_t *d, const vary_t *v, size_t points, json_t *results,
                             json_t **pooled_out)
{
    json_t *pooled = json_array(), *columns = json_array(), *seen = json_object();
    if (!pooled || !columns || !seen) {
        json_decref(pooled), json_decref(columns), json_decref(seen);
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    uint32_t r = d->replications;
    for (size_t p = 0; p < points; p++) {
        json_t *recs = json_array();
        for (uint32_t k = 0; k < r; k++) json_array_append(recs, json_array_get(results, p * r + k));
        json_t *pool = kr__replications_pool(recs);
        json_decref(recs);
        json_array_append_new(pooled, pool ? pool : json_array());
        size_t i;
        json_t *sim;
        json_array_foreach(pool, i, sim) {
            const char *stat;
            json_t *unused;
            json_object_foreach(json_object_get(sim, "stats"), stat, unused) {
                char name[1024];
                snprintf(name, sizeof name, "%s.%s", json_string_value(json_object_get(sim, "name")), stat);
                if (json_object_get(seen, name)) continue;
                json_object_set_new(seen, name, json_true());
                json_array_append_new(columns, json_pack("{s:s, s:s, s:s}", "name", name, "sim",
                                                         json_string_value(json_object_get(sim, "name")), "stat", stat));
            }
        }
    }
    for (size_t i = 0; i < d->vary_count; i++) put_cell(fp, v[i].key, i == 0);
    put_cell(fp, "replications", d->vary_count == 0);
    size_t c;
    json_t *col;
    json_array_foreach(columns, c, col) {
        char head[1100];
        snprintf(head, sizeof head, "%s.mean", json_string_value(json_object_get(col, "name")));
        put_cell(fp, head, false);
        snprintf(head, sizeof head, "%s.ci95", json_string_value(json_object_get(col, "name")));
        put_cell(fp, head, false);
    }
    fputc('\n', fp);
    for (size_t p = 0; p < points; p++) {
        for (size_t i = 0; i < d->vary_count; i++)
            put_value(fp, json_array_get(v[i].values, value_index(v, d->vary_count, p, i)), i == 0);
        char reps[32];
        snprintf(reps, sizeof reps, "%u", r);
        put_cell(fp, reps, d->vary_count == 0);
        json_array_foreach(columns, c, col) {
            const char *simname = json_string_value(json_object_get(col, "sim"));
            json_t *figure = NULL, *sim;
            size_t i;
            json_array_foreach(json_array_get(pooled, p), i, sim)
                if (!strcmp(json_string_value(json_object_get(sim, "name")), simname))
                    figure = json_object_get(json_object_get(sim, "stats"),
                                             json_string_value(json_object_get(col, "stat")));
            put_number(fp, json_object_get(figure, "mean"));
            put_number(fp, json_object_get(figure, "ci95"));
        }
        fputc('\n', fp);
    }
    json_decref(columns);
    json_decref(seen);
    *pooled_out = pooled;
    return KR_OK;
}

kr_status_t kr__sweep_run(const kr__sweep_desc_t *d)
{
    vary_t *v = calloc(d->vary_count ? d->vary_count : 1, sizeof *v);
    kr__model_file_t **files = NULL;
    size_t points = 1;
    json_t *results = NULL, *pooled = NULL;
    kr__out_file_t out = { 0 };
    kr_status_t st = v ? parse_varies(d, v) : kr__fail(KR_ERR_NOMEM, "out of memory");
    if (!st && d->replications < 1)
        st = kr__fail(KR_ERR_INVALID_ARG, "--replications: expected a whole number >= 1, found %u", d->replications);
    for (size_t i = 0; !st && i < d->vary_count; i++) {
        points *= json_array_size(v[i].values);
        if ((uint64_t)points * d->replications > MAX_ITEMS)
            st = kr__fail(KR_ERR_INVALID_ARG, "--vary: expected at most %u points times replications, found more (%zu "
                          "points or more x %u)", MAX_ITEMS, points, d->replications);
    }
    if (!st) {
        files = calloc(points, sizeof *files);
        st = files ? load_points(d, v, points, files) : kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    kr__replications_desc_t rd = { .points = files, .point_count = points, .replications = d->replications,
                                  .group_ranks = d->group_ranks, .ranks = d->ranks, .rank = d->rank,
                                  .comm = d->comm, .checkpoint_dir = d->checkpoint_dir, .restart = d->restart,
                                  .wall = d->wall };
    int groups = 1, group_ranks = 1;
    if (!st) st = kr__replications_plan(&rd, &groups, &group_ranks);
    /* Everything above is decided from the command line and the files,
     * the same on every rank unless a plug-in differs on one node; below,
     * rank 0 alone learns things. Every rank agrees before going on. */
    if (!st) {
        kr__replications_warn_setup(&rd, groups, group_ranks);
        if (d->rank == 0 && d->plot_dir) st = check_plotting(d->plot_dir);
        /* (the plots' folder, too: the CSV in its place, or named as a
         * plot, was lost after the whole sweep had run) */
        kr__run_files_t table = { .out = { d->csv_path, d->plot_dir },
                                  .out_what = { "the sweep's table (-o)", "the plots' folder (--plot)" } };
        if (!st && d->rank == 0 && d->plot_dir) st = csv_not_a_plot(d);
        if (!st && d->rank == 0) st = kr__run_files_apart(files[0], &table);
        if (!st && d->rank == 0) st = kr__out_open(&out, d->csv_path);
    }
    st = kr__replications_agree(&rd, d->rank == 0 || st, st);
    double wall = 0;
    if (!st) st = kr__replications_run(&rd, &results, &wall);
    if (d->rank == 0) {
        if (!st) st = write_csv(out.fp, d, v, points, results, &pooled);
        kr_status_t finished = kr__out_finish(&out);
        if (!st) st = finished;
        kr_status_t committed = kr__out_commit(&out, !st);
        if (!st) st = committed;
        /* The plots are drawn from the complete CSV, which a failed or
         * interrupted plot leaves as it is (docs/replications.md). */
        if (!st && d->plot_dir) {
            char err[512];
            int rc = run_script(d->csv_path, d->plot_dir, err, sizeof err);
            if (rc == SCRIPT_INTERRUPTED)
                st = kr__fail(KR_ERR_INTERRUPTED, "--plot %s: interrupted (%s) while drawing the plots: %s is complete, "
                              "the plots are not", d->plot_dir, kr__signal_caught == SIGINT ? "SIGINT" : "SIGTERM",
                              d->csv_path);
            else if (rc)
                st = kr__fail(KR_ERR_IO, "--plot %s: %s (%s is complete)", d->plot_dir,
                              err[0] ? err : "the plot script failed", d->csv_path);
        }
        if (!st && !d->quiet && d->summary) {
            fprintf(d->summary, "kairos %s: sweep of %s, %zu point%s x %u replication%s on %d rank%s (%d group%s of %d)\n",
                    KAIROS_VERSION_STRING, d->model, points, points == 1 ? "" : "s", d->replications,
                    d->replications == 1 ? "" : "s", d->ranks, d->ranks == 1 ? "" : "s", groups,
                    groups == 1 ? "" : "s", group_ranks);
            fprintf(d->summary, "  wall %.3f s; wrote %s (%zu rows)", wall, d->csv_path, points);
            if (d->plot_dir) fprintf(d->summary, " and plots in %s", d->plot_dir);
            fputc('\n', d->summary);
        }
    }
    json_decref(pooled);
    json_decref(results);
    for (size_t p = 0; files && p < points; p++) kr__model_file_free(files[p]);
    free(files);
    for (size_t i = 0; v && i < d->vary_count; i++) {
        free(v[i].key);
        json_decref(v[i].values);
    }
    free(v);
    return st;
}
