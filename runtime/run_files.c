/* A run's files, each a file of its own (run.h, kr__run_files_apart).
 *
 * What a run writes (the stats, the trace and its fragments, the series,
 * an event log and a frames file per simulator, the frames' manifest and
 * series, an emulation's log and output) must not be
 * the model file, a file the run reads (an emulation's input pipe or
 * replayed log) or another of them: `-o model.json` used to write the
 * stats over the model. Files are compared by what they lead to (links,
 * hard ones too, and relative paths resolved), sorted so that many
 * simulators cost n log n. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/emulation_settings.h"
#include "runtime/run.h"

typedef struct named_file {
    char *id;        /* kr__out_file_identity */
    char *what;      /* "the stats (-o)", "simulators[2].emulation.log of m.json" */
    char *path;      /* as given */
    bool written;
    size_t order;    /* when it was listed: ties sort by it */
} named_file_t;

typedef struct file_list {
    named_file_t *files;
    size_t count, capacity;
    kr_status_t st;
} file_list_t;

/* Lists `path` as `what`, taking both (malloc'd; NULL: out of memory). A
 * path that leads to no file of its own (/dev/null; a named pipe written
 * to) clashes with nothing. */
static void add_file(file_list_t *l, char *path, char *what, bool written)
{
    char *id = NULL;
    if (l->count == l->capacity) {
        size_t cap = l->capacity ? 2 * l->capacity : 16;
        named_file_t *grown = realloc(l->files, cap * sizeof *grown);
        if (grown) l->files = grown, l->capacity = cap;
    }
    if (!path || !what || l->count == l->capacity) {
        if (!l->st) l->st = kr__fail(KR_ERR_NOMEM, "out of memory");
    } else if ((id = kr__out_file_identity(path, !written))) {
        l->files[l->count] = (named_file_t){ id, what, path, written, l->count };
        l->count++;
        return;
    }
    free(id);
    free(what);
    free(path);
}

/* printf into a new string, or NULL. */
__attribute__((format(printf, 1, 2))) static char *text(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n < 0 ? NULL : malloc((size_t)n + 1);
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

static int by_identity(const void *a, const void *b)
{
    const named_file_t *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* True when a and b (either may be NULL) lead to one file. */
static bool same_file(const char *a, const char *b)
{
    char *x = a && b ? kr__out_file_identity(a, true) : NULL, *y = x ? kr__out_file_identity(b, true) : NULL;
    bool same = x && y && !strcmp(x, y);
    free(x);
    free(y);
    return same;
}

/* The files of simulator `e`'s emulation. A gateway that replays its own
 * log writes none (emulation_settings.c). */
static void add_emulation_files(file_list_t *l, const kr__model_file_t *f, const kr__sim_entry_t *e)
{
    char *replay = kr__emulation_file(f, e, 3);
    for (size_t k = 0; k < KR__EMULATION_FILES; k++) {
        char *path = kr__emulation_file(f, e, k);
        if (!path || (k == 0 && same_file(path, replay))) {
            free(path);
            continue;
        }
        char *what = k == 3 && e->replay ? text("the log of --replay %s", e->name)
                                         : text("simulators[%zu].emulation.%s of %s", e->index,
                                                kr__emulation_file_keys[k], f->path);
        add_file(l, path, what, k == 0 || k == 2);
    }
    free(replay);
}

/* Simulator e's file in folder `dir`: "DIR/NAME.SUFFIX". */
static char *sim_file(const char *dir, const kr__sim_entry_t *e, const char *suffix)
{
    size_t n = strlen(dir) + strlen(e->name) + strlen(suffix) + 3;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s.%s", dir, e->name, suffix);
    return p;
}

/* In g[0..n) (one identity, in listing order): the clash to name, the
 * earliest file that meets an earlier one when either is written, with
 * the earliest such partner. False when none is written (two inputs may
 * be one file as far as this check goes; emulation_settings.c refuses
 * those it must). */
static bool first_clash(const named_file_t *g, size_t n, size_t *x, size_t *y)
{
    size_t written = n;
    for (size_t b = 1; b < n; b++) {
        if (g[b - 1].written && written == n) written = b - 1;
        if (g[b].written || written < n) {
            *x = g[b].written ? 0 : written;
            *y = b;
            return true;
        }
    }
    return false;
}

kr_status_t kr__run_files_apart(const kr__model_file_t *f, const kr__run_files_t *run)
{
    file_list_t l = { 0 };
    add_file(&l, strdup(f->path), strdup("the model file"), false);
    for (size_t i = 0; i < 3; i++)
        if (run->out[i]) add_file(&l, strdup(run->out[i]), strdup(run->out_what[i]), true);
    for (int k = 0; run->out[1] && k < run->ranks; k++)
        add_file(&l, text("%s.rank%d", run->out[1], k), text("a fragment of %s", run->out_what[1]), true);
    if (run->frames_dir) {
        add_file(&l, text("%s/manifest.json", run->frames_dir), strdup("the frames' manifest (--frames)"), true);
        add_file(&l, text("%s/series.csv", run->frames_dir), strdup("the frames' series (--frames)"), true);
    }
    for (size_t i = 0; i < f->sim_count; i++) {
        const kr__sim_entry_t *e = &f->sims[i];
        if (e->emulation || e->replay) add_emulation_files(&l, f, e);
        if (run->event_log_dir)
            add_file(&l, sim_file(run->event_log_dir, e, "jsonl"),
                     text("the event log of '%s' (%s)", e->name, run->event_log_option), true);
        /* (every simulator's: whether it draws is known once it is built) */
        if (run->frames_dir)
            add_file(&l, sim_file(run->frames_dir, e, "frames"), text("the frames of '%s' (%s)", e->name, "--frames"),
                     true);
    }
    kr_status_t st = l.st;
    if (!st && l.count > 1) qsort(l.files, l.count, sizeof *l.files, by_identity);
    /* Of every clash, the one whose later file was listed first is named. */
    const named_file_t *a = NULL, *b = NULL;
    for (size_t i = 0, j; !st && i < l.count; i = j) {
        for (j = i + 1; j < l.count && !strcmp(l.files[i].id, l.files[j].id); j++) {}
        size_t x, y;
        if (first_clash(l.files + i, j - i, &x, &y) && (!b || l.files[i + y].order < b->order))
            a = &l.files[i + x], b = &l.files[i + y];
    }
    if (!st && a)
        st = kr__fail(KR_ERR_IO, "%s and %s: expected a file each, found one for both (%s)", a->what, b->what,
                      b->path);
    for (size_t i = 0; i < l.count; i++) {
        free(l.files[i].id);
        free(l.files[i].what);
        free(l.files[i].path);
    }
    free(l.files);
    return st;
}
