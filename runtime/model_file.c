/* Model files: JSON in, a checked plan and a built kr_model_t out.
 *
 * The order is fixed so that errors are found where a user expects them:
 * parse, apply --set overrides to the tree, check the top level, load the
 * plugins (they add kinds), expand simulators (count -> name[i]), resolve
 * dependencies (wildcards), then build, where each kind checks its params. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/error.h"
#include "base/grow.h"
#include "kairos/stop.h"
#include "runtime/kind_build.h"
#include "runtime/model_file.h"
#include "runtime/emulation_settings.h"
#include "runtime/plugins.h"
#include "schedulers/model_private.h"

#define FAIL_IF(cond, where, expected, found) \
    do { if (cond) return kr__input_error(f->path, (where), (expected), (found)); } while (0)

static const char *const top_keys[] = { "precision", "seed", "end_time", "sync", "mapping", "log_level",
                                        "simulators", "dependencies", "outputs", "plugins", "description",
                                        "stop_lookahead", NULL };
static const char *const sim_keys[] = { "name", "kind", "formalism", "time_step", "params", "rank", "count",
                                        "regions", "description", "render", "emulation", NULL };
static const char *const dep_keys[] = { "from", "to", "promise", NULL };
static const char *const out_keys[] = { "stats", "event_log", "trace", "series", "checkpoint", NULL };
static const char *const ckpt_keys[] = { "dir", "at", "every", "keep", "level", NULL };

kr_status_t kr__model_file_check_keys(const kr__model_file_t *f, json_t *obj, const char *const *allowed,
                                      const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(allowed[i], key);
        if (ok) continue;
        char expected[256];
        size_t n = (size_t)snprintf(expected, sizeof expected, "one of the keys ");
        for (int i = 0; allowed[i] && n < sizeof expected; i++)
            n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", i ? ", " : "", allowed[i]);
        /* a key may be megabytes long: show its first bytes, as values */
        int shown = strlen(key) > 60 ? 57 : 60;
        const char *more = strlen(key) > 60 ? "..." : "";
        char path[512];
        snprintf(path, sizeof path, "%s%s%.*s%s", where, where[0] ? "." : "", shown, key, more);
        return kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected %s, found the unknown key \"%.*s%s\"", f->path, path,
                        expected, shown, key, more);
    }
    return KR_OK;
}

/* ---- --set ---- */

/* The child of `node` named by one path segment: a key of an object, an
 * index of an array, or, under "simulators", a simulator entry's name. */
static json_t *child(json_t *node, const char *seg, bool in_simulators)
{
    if (json_is_object(node)) return json_object_get(node, seg);
    if (!json_is_array(node)) return NULL;
    if (in_simulators) {
        size_t i;
        json_t *e;
        json_array_foreach(node, i, e) {
            json_t *name = json_object_get(e, "name");
            if (json_is_string(name) && !strcmp(json_string_value(name), seg)) return e;
        }
    }
    /* an index is digits alone, without a sign or a leading 0 ("00" and
     * "+0" named entry 0) */
    if (!seg[0] || strspn(seg, "0123456789") != strlen(seg) || (seg[0] == '0' && seg[1])) return NULL;
    char *end;
    errno = 0;
    unsigned long idx = strtoul(seg, &end, 10);
    if (errno) return NULL;
    return json_array_get(node, idx);
}

/* The longest path an override's key is followed to. */
#define KR__SET_PATH_MAX 512

/* `option` names the override in messages ("--set", "--vary"); with
 * `must_exist` the leaf must already be there (a sweep varies what the
 * file holds, and a misspelt key would otherwise add a field nobody
 * reads). `canon`, when not NULL, gets the key's path with an array's
 * entries by index (a simulator named by its name too). */
static kr_status_t apply_set(kr__model_file_t *f, const char *set, const char *option, bool must_exist,
                             char canon[KR__SET_PATH_MAX])
{
    const char *eq = strchr(set, '=');
    /* (an empty part, as in "a..b" or ".a", was skipped: the path named
     * another key than written) */
    bool empty_part = false;
    for (const char *c = set; eq && c < eq && !empty_part; c++)
        empty_part = *c == '.' && (c == set || c + 1 == eq || c[1] == '.');
    if (!eq || eq == set || empty_part) {
        json_t *found = json_string(set);
        char where[32];
        snprintf(where, sizeof where, "(%s)", option);
        kr_status_t st = kr__input_error(f->path, where,
                                         empty_part ? "KEY=VALUE with a dotted KEY, no part of it empty"
                                                    : "KEY=VALUE with a dotted KEY", found);
        json_decref(found);
        return st;
    }
    char *key = strndup(set, (size_t)(eq - set));
    if (!key) return kr__fail(KR_ERR_NOMEM, "out of memory");
    const char *text = eq + 1;
    json_error_t err;
    json_t *value = json_loads(text, JSON_DECODE_ANY, &err);
    if (!value && (strstr(err.text, "too big integer") || strstr(err.text, "real number overflow"))) {
        /* (taken as a string, it was refused later as a string "1e400") */
        char expected[700];
        snprintf(expected, sizeof expected, "a number JSON can hold, a whole one within 64 bits and any other "
                 "within about 1.8e308 (%s %s)", option, set);
        json_t *found = json_string(text);
        kr_status_t st = kr__input_error(f->path, key, expected, found);
        json_decref(found);
        free(key);
        return st;
    }
    if (!value && strstr(err.text, "\\u0000")) {
        /* (taken as a bare word, it was refused later as a string) */
        json_t *found = json_string(text);
        char expected[64];
        snprintf(expected, sizeof expected, "a value without \\u0000 (%s)", option);
        kr_status_t st = kr__input_error(f->path, key, expected, found);
        json_decref(found);
        free(key);
        return st;
    }
    if (!value) value = json_string(text); /* a bare word is a string */
    kr_status_t st = KR_OK;
    json_t *node = f->root;
    char path[KR__SET_PATH_MAX] = "";
    size_t canon_len = 0;
    char *save = NULL;
    bool in_simulators = false;
    char *seg = strtok_r(key, ".", &save);
    while (seg && !st) {
        char *next = strtok_r(NULL, ".", &save);
        size_t n = strlen(path);
        snprintf(path + n, sizeof path - n, "%s%s", n ? "." : "", seg);
        /* the same path with an array's entries by index, not by name */
        json_t *here = json_is_array(node) ? child(node, seg, in_simulators) : NULL;
        size_t idx = 0;
        for (; here && idx < json_array_size(node) && json_array_get(node, idx) != here; idx++) {}
        if (canon && canon_len < KR__SET_PATH_MAX)
            canon_len += (size_t)(here ? snprintf(canon + canon_len, KR__SET_PATH_MAX - canon_len, "%s%zu",
                                                  canon_len ? "." : "", idx)
                                       : snprintf(canon + canon_len, KR__SET_PATH_MAX - canon_len, "%s%s",
                                                  canon_len ? "." : "", seg));
        if (!next) {
            /* The leaf: replace, or add a key to an existing object. */
            if (must_exist && !child(node, seg, in_simulators)) {
                st = kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected an existing key (%s), found nothing",
                              f->path, path, option);
            } else if (json_is_object(node)) {
                if (json_object_set(node, seg, value)) st = kr__fail(KR_ERR_NOMEM, "out of memory");
            } else if (json_is_array(node) && child(node, seg, in_simulators)) {
                /* an index, or under simulators an entry's name */
                json_t *old = child(node, seg, in_simulators), *item;
                size_t idx;
                json_array_foreach(node, idx, item) if (item == old) break;
                json_array_set(node, idx, value);
            } else {
                st = kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected a path that exists (%s %s), found nothing",
                              f->path, path, option, set);
            }
            break;
        }
        json_t *c = child(node, seg, in_simulators);
        if (!c) {
            char what[160] = "a path that exists";
            if (in_simulators && seg[strspn(seg, "0123456789")] == '\0')
                snprintf(what, sizeof what, "an entry's index below %zu or its name", json_array_size(node));
            else if (in_simulators && strchr(seg, '['))
                snprintf(what, sizeof what, "the name of a simulator entry (replicas are set through their entry: "
                         "simulators.NAME...)");
            else if (in_simulators)
                snprintf(what, sizeof what, "the name of a simulator");
            st = kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected %s (%s %s), found nothing", f->path, path, what,
                          option, set);
            break;
        }
        in_simulators = node == f->root && !strcmp(seg, "simulators");
        node = c;
        seg = next;
    }
    json_decref(value);
    free(key);
    return st;
}

/* ---- top level ---- */

static kr_status_t read_time(kr__model_file_t *f, json_t *v, const char *path, bool is_duration, kr_time_t *out)
{
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    FAIL_IF(!(d >= 0) || !isfinite(d), path, "a time >= 0 in model units", v);
    if (is_duration) {
        *out = kr_time_delay_ticks(d, f->precision);
        return KR_OK;
    }
    if (kr_time_from_units(d, f->precision, out)) return kr__input_error(f->path, path, "a representable time", v);
    return KR_OK;
}

/* outputs.checkpoint (docs/checkpoint.md): every field optional. */

/* A whole number from lo to hi: an integer, or a real with a whole value
 * (2.0, as a program that writes every number as a float gives; kinds'
 * params take it too), exactly representable. */
static bool whole_in(const json_t *v, json_int_t lo, json_int_t hi, json_int_t *out)
{
    if (json_is_integer(v)) *out = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) <= 9007199254740992.0)
        *out = (json_int_t)json_real_value(v);
    else
        return false;
    return *out >= lo && *out <= hi;
}
static kr_status_t read_checkpoint_plan(kr__model_file_t *f, json_t *c)
{
    kr__ckpt_plan_t *p = &f->ckpt;
    p->keep = -1;
    if (!c) return KR_OK;
    FAIL_IF(!json_is_object(c), "outputs.checkpoint", "an object with dir, at, every, keep, level", c);
    kr_status_t st = kr__model_file_check_keys(f, c, ckpt_keys, "outputs.checkpoint");
    if (st) return st;
    json_t *v;
    if ((v = json_object_get(c, "dir"))) {
        FAIL_IF(!json_is_string(v) || !json_string_value(v)[0], "outputs.checkpoint.dir", "a folder name", v);
        p->dir = json_string_value(v);
    }
    if ((v = json_object_get(c, "at"))) {
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        FAIL_IF(!json_is_number(v) && !(json_is_array(v) && n), "outputs.checkpoint.at",
                "a time > 0 or a list of them", v);
        if (!(p->at = malloc(n * sizeof *p->at))) return kr__fail(KR_ERR_NOMEM, "out of memory");
        p->at_count = n;
        for (size_t i = 0; i < n; i++) {
            json_t *t = json_is_array(v) ? json_array_get(v, i) : v;
            char path[64];
            snprintf(path, sizeof path, json_is_array(v) ? "outputs.checkpoint.at[%zu]" : "outputs.checkpoint.at", i);
            double d = json_is_number(t) ? json_number_value(t) : NAN;
            FAIL_IF(!(d > 0) || !isfinite(d), path, "a time > 0 in model units", t);
            FAIL_IF(i && d <= p->at[i - 1], path, "times in increasing order", t);
            p->at[i] = d;
        }
    }
    if ((v = json_object_get(c, "every"))) {
        double d = json_is_number(v) ? json_number_value(v) : NAN;
        FAIL_IF(!(d > 0) || !isfinite(d), "outputs.checkpoint.every", "a time > 0 in model units", v);
        p->every = d;
    }
    if ((v = json_object_get(c, "keep"))) {
        json_int_t keep;
        FAIL_IF(!whole_in(v, 0, 1000000, &keep), "outputs.checkpoint.keep",
                "a whole number of checkpoints to keep (0: all)", v);
        p->keep = (int)keep;
    }
    if ((v = json_object_get(c, "level"))) {
        json_int_t level;
        FAIL_IF(!whole_in(v, 1, 19, &level), "outputs.checkpoint.level", "a zstd level from 1 to 19", v);
        p->level = (int)level;
    }
    return KR_OK;
}

static kr_status_t check_top(kr__model_file_t *f)
{
    json_t *r = f->root;
    FAIL_IF(!json_is_object(r), "(top)", "an object", r);
    kr_status_t st = kr__model_file_check_keys(f, r, top_keys, "");
    if (st) return st;
    json_t *v;
    f->precision = KR_PRECISION_DEFAULT;
    if ((v = json_object_get(r, "precision"))) {
        json_int_t precision;
        FAIL_IF(!whole_in(v, 1, INT64_MAX, &precision), "precision", "a whole number of ticks per model unit >= 1",
                v);
        f->precision = (uint64_t)precision;
    }
    if ((v = json_object_get(r, "seed"))) {
        json_int_t seed;
        FAIL_IF(!whole_in(v, 0, INT64_MAX, &seed), "seed", "a whole number >= 0", v);
        f->seed = (uint64_t)seed;
    }
    v = json_object_get(r, "end_time");
    if ((st = read_time(f, v, "end_time", false, &f->end_time))) return st;
    f->sync = KR_SYNC_AUTO;
    if ((v = json_object_get(r, "sync"))) {
        const char *s = json_string_value(v);
        FAIL_IF(!s || kr__sync_from_name(s) < 0, "sync", "\"auto\", \"null-message\" or \"window\"", v);
        f->sync = (kr_sync_algorithm_t)kr__sync_from_name(s);
    }
    f->sync_ran = f->sync;
    f->mapping = KR__MAP_ROUND_ROBIN;
    if ((v = json_object_get(r, "mapping"))) {
        const char *s = json_string_value(v);
        FAIL_IF(!s || (strcmp(s, "round-robin") && strcmp(s, "block") && strcmp(s, "metis")), "mapping",
                "\"round-robin\", \"block\" or \"metis\"", v);
        f->mapping = !strcmp(s, "block") ? KR__MAP_BLOCK : !strcmp(s, "metis") ? KR__MAP_METIS : KR__MAP_ROUND_ROBIN;
    }
    f->log_level = KR_LOG_WARN;
    if ((v = json_object_get(r, "log_level"))) {
        FAIL_IF(!json_is_string(v) || kr_log_level_from_name(json_string_value(v), &f->log_level), "log_level",
                "one of trace, debug, info, warn, error, critical, off", v);
    }
    if ((v = json_object_get(r, "description"))) FAIL_IF(!json_is_string(v), "description", "a string", v);
    /* (read again when the model is built: kairos/stop.h) */
    kr_time_t stop_lookahead;
    if ((v = json_object_get(r, "stop_lookahead")) && (st = read_time(f, v, "stop_lookahead", true, &stop_lookahead)))
        return st;
    if ((v = json_object_get(r, "outputs"))) {
        FAIL_IF(!json_is_object(v), "outputs", "an object", v);
        if ((st = kr__model_file_check_keys(f, v, out_keys, "outputs"))) return st;
        const char **slots[] = { &f->out_stats, &f->out_event_log, &f->out_trace, &f->out_series };
        if ((st = read_checkpoint_plan(f, json_object_get(v, "checkpoint")))) return st;
        for (int i = 0; i < 4; i++) {
            json_t *o = json_object_get(v, out_keys[i]);
            if (!o) continue;
            char path[64];
            snprintf(path, sizeof path, "outputs.%s", out_keys[i]);
            FAIL_IF(!json_is_string(o) || !json_string_value(o)[0], path, "a file or folder name", o);
            *slots[i] = json_string_value(o);
        }
    }
    return KR_OK;
}

/* ---- plugins ---- */

static kr_status_t load_plugins(kr__model_file_t *f)
{
    json_t *list = json_object_get(f->root, "plugins");
    if (!list) return KR_OK;
    FAIL_IF(!json_is_array(list), "plugins", "an array of shared-object paths", list);
    size_t n = json_array_size(list);
    f->plugins = calloc(n ? n : 1, sizeof *f->plugins);
    if (!f->plugins) return kr__fail(KR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(list, i);
        char path[64];
        snprintf(path, sizeof path, "plugins[%zu]", i);
        FAIL_IF(!json_is_string(v) || !json_string_value(v)[0], path, "a shared-object path", v);
        void *h;
        kr_status_t st = kr__plugin_load(f->kinds, json_string_value(v), f->dir, f->path, path, &h);
        if (h) f->plugins[f->plugin_count++] = h; /* also when its init failed: it stays loaded (plugins.c) */
        if (st) return st;
    }
    return KR_OK;
}

/* ---- simulators ---- */

/* A simulator's name selects it in --set paths and `from`/`to` (hence no
 * '[', ']', '*' or '.') and names its files, an event log NAME.jsonl in a
 * folder among them (hence no '/' or '\\'); and it is printed in one-line
 * messages and summaries (hence no control characters, as kr__control_len
 * counts them). */
static bool name_chars_ok(const char *name)
{
    for (const char *c = name; *c; c++)
        if (kr__control_len(c) || strchr("[]*./\\", *c)) return false;
    return true;
}

static uint64_t name_key(const char *name, size_t len)
{
    return kr__hash_bytes(name, len, 0x6e616d65);
}

static uint64_t pair_key(uint32_t from, uint32_t to)
{
    return kr__mix64((uint64_t)from << 32 | to);
}

/* The simulator named `name`, or SIZE_MAX. */
static size_t find_name(const kr__model_file_t *f, const char *name)
{
    uint32_t cursor = 0, i;
    while ((i = kr__hmap_next(&f->names, name_key(name, strlen(name)), &cursor)) != KR__HMAP_EMPTY)
        if (!strcmp(f->sims[i].name, name)) return i;
    return SIZE_MAX;
}

/* The first replica of the entry with a count or regions named by the
 * `len` bytes of `base` (its replicas are base[0], base[1], ...), or
 * SIZE_MAX. */
static size_t find_replicas(const kr__model_file_t *f, const char *base, size_t len)
{
    uint32_t cursor = 0, i;
    while ((i = kr__hmap_next(&f->replicas, name_key(base, len), &cursor)) != KR__HMAP_EMPTY)
        if (!strncmp(f->sims[i].name, base, len) && f->sims[i].name[len] == '[') return i;
    return SIZE_MAX;
}

/* Adds one simulator. Its name is new: entry names are checked unique
 * before expanding (check_simulators), and no entry name holds '[', so
 * no replica's "name[r]" can meet another's name. */
static kr_status_t add_entry(kr__model_file_t *f, const kr__sim_entry_t *e)
{
    if ((f->sim_count == f->sim_cap && KR__GROW(f->sims, f->sim_cap, f->sim_count + 1, 16, NULL)) ||
        kr__hmap_insert(&f->names, name_key(e->name, strlen(e->name)), (uint32_t)f->sim_count)) {
        free(e->name);
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    f->sims[f->sim_count++] = *e;
    return KR_OK;
}

/* Adds from -> to unless it is there; *dup_of is the one there, or
 * SIZE_MAX when it was added. */
static kr_status_t add_dep(kr__model_file_t *f, uint32_t from, uint32_t to, kr_time_t promise, size_t *dup_of)
{
    uint32_t cursor = 0, k;
    uint64_t key = pair_key(from, to);
    while ((k = kr__hmap_next(&f->dep_set, key, &cursor)) != KR__HMAP_EMPTY)
        if (f->deps[k].from == from && f->deps[k].to == to) {
            *dup_of = k;
            return KR_OK;
        }
    *dup_of = SIZE_MAX;
    if ((f->dep_count == f->dep_cap && KR__GROW(f->deps, f->dep_cap, f->dep_count + 1, 16, NULL)) ||
        kr__hmap_insert(&f->dep_set, key, (uint32_t)f->dep_count))
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    f->deps[f->dep_count++] = (kr__dep_entry_t){ from, to, promise };
    return KR_OK;
}

/* Every region depends on its 8-neighbourhood with promise = time step:
 * what a region sends at one step arrives for the next. The geometry of
 * the neighbourhood needs only the cut, not the world's size. */
static kr_status_t add_region_dependencies(kr__model_file_t *f, const kr__sim_entry_t *first, json_t *regions)
{
    kr_region_grid_t g = { .width = (int32_t)first->region_cols, .height = (int32_t)first->region_rows,
                           .cols = first->region_cols, .rows = first->region_rows };
    uint32_t n = first->region_cols * first->region_rows, nb[8];
    for (uint32_t i = 0; i < n; i++) {
        size_t k = kr_region_grid_neighbours(&g, i, nb);
        if (f->dep_count + k > KR__MAX_DEPENDENCIES) {
            char path[64], expected[128];
            snprintf(path, sizeof path, "simulators[%zu].regions", first->index);
            snprintf(expected, sizeof expected, "at most %u dependencies in a model file (the regions' borders "
                     "count)", KR__MAX_DEPENDENCIES);
            return kr__input_error(f->path, path, expected, regions);
        }
        for (size_t j = 0; j < k; j++) {
            size_t dup_of;
            kr_status_t st = add_dep(f, first->region_first + i, first->region_first + nb[j], first->time_step, &dup_of);
            if (st) return st;
        }
    }
    return KR_OK;
}

static kr_status_t check_simulators(kr__model_file_t *f)
{
    json_t *list = json_object_get(f->root, "simulators");
    FAIL_IF(!json_is_array(list) || json_array_size(list) == 0, "simulators", "a non-empty array of simulators", list);
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s) {
        char at[64], path[128];
        snprintf(at, sizeof at, "simulators[%zu]", i);
        FAIL_IF(!json_is_object(s), at, "a simulator object", s);
        kr_status_t st = kr__model_file_check_keys(f, s, sim_keys, at);
        if (st) return st;
        json_t *name = json_object_get(s, "name"), *kind = json_object_get(s, "kind");
        snprintf(path, sizeof path, "%s.name", at);
        const char *nm = json_string_value(name);
        FAIL_IF(!nm || !nm[0] || !name_chars_ok(nm), path,
                "a non-empty name without '[', ']', '*', '.', '/', '\\' or control characters", name);
        char longest[64];
        snprintf(longest, sizeof longest, "a name of at most %u bytes", KR__MAX_NAME);
        FAIL_IF(strlen(nm) > KR__MAX_NAME, path, longest, name);
        /* Entry names are unique, counted or not: --set paths, stats
         * totals and series name entries. (One with a count beside one
         * without would otherwise pass, as "v[0]" is not "v".) */
        size_t same = find_name(f, nm);
        if (same == SIZE_MAX) same = find_replicas(f, nm, strlen(nm));
        if (same != SIZE_MAX) {
            char expected[300];
            snprintf(expected, sizeof expected, "a name not used before (simulators[%zu] is \"%.*s\")",
                     f->sims[same].index, (int)KR__MAX_NAME, nm);
            return kr__input_error(f->path, path, expected, name);
        }
        snprintf(path, sizeof path, "%s.kind", at);
        const kr_kind_desc_t *k = json_is_string(kind) ? kr__kinds_find(f->kinds, json_string_value(kind)) : NULL;
        if (!k) {
            char expected[1024];
            size_t n = (size_t)snprintf(expected, sizeof expected, "a known kind (");
            for (size_t j = 0; j < kr__kinds_count(f->kinds) && n < sizeof expected; j++)
                n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", j ? ", " : "",
                                      kr__kinds_at(f->kinds, j)->name);
            if (n < sizeof expected) snprintf(expected + n, sizeof expected - n, ")");
            return kr__input_error(f->path, path, expected, kind);
        }
        kr__sim_entry_t e = { .kind = k->name, .formalism = k->formalism, .rank = -1, .index = i };
        json_t *v;
        if ((v = json_object_get(s, "formalism"))) {
            snprintf(path, sizeof path, "%s.formalism", at);
            FAIL_IF(!json_is_string(v) || kr_formalism_from_name(json_string_value(v), &e.formalism), path,
                    "discrete-event, agent-based, continuous or emulation", v);
            if (kr__kind_check_formalism(f, i, k, e.formalism)) return kr_last_status();
        }
        bool stepped = e.formalism == KR_AGENT_BASED || e.formalism == KR_CONTINUOUS;
        v = json_object_get(s, "time_step");
        snprintf(path, sizeof path, "%s.time_step", at);
        if (v || stepped) {
            double d = json_is_number(v) ? json_number_value(v) : NAN;
            double ticks = d * (double)f->precision;
            /* a whole number of ticks, allowing for the binary rounding of
             * decimal steps such as 0.1 */
            bool whole = isfinite(ticks) && ticks >= 0.5 && ticks < 1.8e19 &&
                         fabs(ticks - nearbyint(ticks)) <= 1e-6 * fmax(1.0, ticks);
            char expected[160];
            snprintf(expected, sizeof expected, "a time step that is a whole positive number of ticks (1 tick = %g "
                     "model units)", 1.0 / (double)f->precision);
            FAIL_IF(!whole, path, expected, v);
            e.time_step = (kr_time_t)nearbyint(ticks);
        }
        if ((v = json_object_get(s, "params"))) {
            snprintf(path, sizeof path, "%s.params", at);
            FAIL_IF(!json_is_object(v), path, "an object", v);
            e.params = v;
        } else {
            e.params = json_object();
            json_object_set_new(s, "params", e.params); /* owned by the tree from now on */
        }
        if ((v = json_object_get(s, "rank"))) {
            snprintf(path, sizeof path, "%s.rank", at);
            json_int_t rank;
            FAIL_IF(!whole_in(v, 0, (1 << 20) - 1, &rank), path, "a rank: a whole number from 0 to 1048575", v);
            e.rank = (int)rank;
        }
        if ((v = json_object_get(s, "render"))) {
            snprintf(path, sizeof path, "%s.render", at);
            FAIL_IF(!json_is_object(v), path, "an object: styles of the kind's layers and fields by name", v);
        }
        if ((v = json_object_get(s, "description"))) {
            snprintf(path, sizeof path, "%s.description", at);
            FAIL_IF(!json_is_string(v), path, "a string", v);
        }
        json_int_t count = 0;
        if ((v = json_object_get(s, "count"))) {
            snprintf(path, sizeof path, "%s.count", at);
            char expected[64];
            snprintf(expected, sizeof expected, "a whole number from 1 to %u", KR__MAX_SIMULATORS);
            FAIL_IF(!whole_in(v, 1, KR__MAX_SIMULATORS, &count), path, expected, v);
        }
        json_int_t cols = 0, rows = 0;
        if ((v = json_object_get(s, "regions"))) {
            snprintf(path, sizeof path, "%s.regions", at);
            json_t *vp = json_array_get(v, 0), *vq = json_array_get(v, 1);
            bool ok = json_is_array(v) && json_array_size(v) == 2 && whole_in(vp, 1, KR_REGION_MAX, &cols) &&
                      whole_in(vq, 1, KR_REGION_MAX, &rows);
            char expected[128];
            snprintf(expected, sizeof expected, "[P, Q], two whole numbers >= 1 with P x Q <= %u", KR_REGION_MAX);
            FAIL_IF(!ok || cols < 1 || rows < 1 || cols > KR_REGION_MAX || rows > KR_REGION_MAX ||
                    cols * rows > KR_REGION_MAX, path, expected, v);
            FAIL_IF(e.formalism != KR_AGENT_BASED || !e.time_step, path, "an agent-based entry with a time_step", v);
            FAIL_IF(count, path, "either \"regions\" or \"count\", not both", v);
            /* Regions are replicas named like a count's, so name[*] names them. */
            count = cols * rows;
            e.region_cols = (uint32_t)cols;
            e.region_rows = (uint32_t)rows;
            e.region_first = (uint32_t)f->sim_count;
        }
        e.replicas = (uint32_t)count;
        if ((e.emulation = json_object_get(s, "emulation")) && (st = kr__emulation_settings_check(f, &e, e.emulation)))
            return st;
        /* Before anything is expanded: a count or cut too large for the
         * file is refused here, not after filling memory. */
        uint64_t adds = count ? (uint64_t)count : 1;
        if (f->sim_count + adds > KR__MAX_SIMULATORS) {
            char expected[160];
            snprintf(expected, sizeof expected, "at most %u simulators in a model file (%zu before this entry)",
                     KR__MAX_SIMULATORS, f->sim_count);
            json_t *c = json_object_get(s, cols ? "regions" : "count");
            snprintf(path, sizeof path, "%s%s", at, cols ? ".regions" : c ? ".count" : "");
            return kr__input_error(f->path, path, expected, c ? c : s);
        }
        if (!count) {
            e.name = strdup(nm);
            if (!e.name) return kr__fail(KR_ERR_NOMEM, "out of memory");
            if ((st = add_entry(f, &e))) return st;
            continue;
        }
        e.replicas = (uint32_t)count;
        size_t first = f->sim_count;
        for (json_int_t r = 0; r < count; r++) {
            char buf[KR__MAX_NAME + 32];
            snprintf(buf, sizeof buf, "%s[%lld]", nm, (long long)r);
            e.name = strdup(buf);
            if (!e.name) return kr__fail(KR_ERR_NOMEM, "out of memory");
            e.region_index = (uint32_t)r;
            if ((st = add_entry(f, &e))) return st;
        }
        /* "nm[*]": names hold no '[', so only this entry's replicas are
         * nm[0] ..., and a second entry named nm was refused above. */
        if (kr__hmap_insert(&f->replicas, name_key(nm, strlen(nm)), (uint32_t)first))
            return kr__fail(KR_ERR_NOMEM, "out of memory");
        if (cols && (st = add_region_dependencies(f, &f->sims[e.region_first], json_object_get(s, "regions"))))
            return st;
    }
    return KR_OK;
}

/* ---- dependencies ---- */

/* The simulators a dependency end names: an exact name, or "base[*]" for
 * every replica of an entry with a count or regions, which are
 * consecutive. By lookup, so that declaring E dependencies over N
 * simulators takes time in N + E, not N x E. False when nothing matches. */
static bool match(const kr__model_file_t *f, const char *pattern, uint32_t *first, uint32_t *n, bool *wild)
{
    size_t len = strlen(pattern);
    *wild = len > 3 && !strcmp(pattern + len - 3, "[*]");
    if (!*wild) {
        size_t i = find_name(f, pattern);
        *first = (uint32_t)i;
        *n = 1;
        return i != SIZE_MAX;
    }
    size_t i = find_replicas(f, pattern, len - 3);
    if (i == SIZE_MAX) return false;
    *first = (uint32_t)i;
    *n = f->sims[i].replicas;
    return true;
}

static kr_status_t check_dependencies(kr__model_file_t *f)
{
    json_t *list = json_object_get(f->root, "dependencies");
    if (!list) return KR_OK;
    FAIL_IF(!json_is_array(list), "dependencies", "an array of dependencies", list);
    kr_status_t st = KR_OK;
    /* the dependencies there so far are those that regions make */
    size_t made_by_regions = f->dep_count, i;
    json_t *d;
    json_array_foreach(list, i, d) {
        char at[64], path[128];
        snprintf(at, sizeof at, "dependencies[%zu]", i);
        FAIL_IF(!json_is_object(d), at, "a dependency object", d);
        if ((st = kr__model_file_check_keys(f, d, dep_keys, at))) return st;
        json_t *vf = json_object_get(d, "from"), *vt = json_object_get(d, "to"), *vp = json_object_get(d, "promise");
        uint32_t ff, nf, tf, nt;
        bool wf, wt;
        snprintf(path, sizeof path, "%s.from", at);
        FAIL_IF(!json_is_string(vf) || !match(f, json_string_value(vf), &ff, &nf, &wf), path,
                "the name of a simulator (or \"name[*]\")", vf);
        snprintf(path, sizeof path, "%s.to", at);
        FAIL_IF(!json_is_string(vt) || !match(f, json_string_value(vt), &tf, &nt, &wt), path,
                "the name of a simulator (or \"name[*]\")", vt);
        snprintf(path, sizeof path, "%s.promise", at);
        kr_time_t promise;
        double pd = json_is_number(vp) ? json_number_value(vp) : NAN;
        FAIL_IF(!(pd >= 0) || !isfinite(pd), path, "a promise >= 0 in model units", vp);
        FAIL_IF(kr_time_from_units(pd, f->precision, &promise), path, "a representable promise", vp);
        /* (a positive promise that rounds to no tick would silently join
         * the two simulators into a zero-promise group) */
        FAIL_IF(pd > 0 && promise == 0, path, "0 or a promise of at least half a tick (a tick is 1/precision model "
                "units)", vp);
        /* Named explicitly, from and to must differ; a wildcard means
         * "every other replica", so its self pairs are no edge (one
         * replica to itself is none at all). */
        FAIL_IF(!wf && !wt && ff == tf, at, "a dependency between two different simulators", d);
        /* The size of the product, before it is expanded: its pairs less
         * the self pairs where the two ranges overlap. */
        uint64_t lo = ff > tf ? ff : tf, hi = (uint64_t)ff + nf < (uint64_t)tf + nt ? (uint64_t)ff + nf
                                                                                       : (uint64_t)tf + nt;
        uint64_t adds = (uint64_t)nf * nt - (hi > lo ? hi - lo : 0);
        if (f->dep_count + adds > KR__MAX_DEPENDENCIES) {
            char expected[160];
            snprintf(expected, sizeof expected, "at most %u dependencies in a model file (%zu before, %llu more "
                     "here)", KR__MAX_DEPENDENCIES, f->dep_count, (unsigned long long)adds);
            return kr__input_error(f->path, at, expected, d);
        }
        for (uint32_t a = ff; a < ff + nf; a++)
            for (uint32_t b = tf; b < tf + nt; b++) {
                if (a == b) continue;
                size_t dup_of;
                if ((st = add_dep(f, a, b, promise, &dup_of))) return st;
                if (dup_of == SIZE_MAX) continue;
                char expected[2 * KR__MAX_NAME + 160];
                if (dup_of < made_by_regions)
                    snprintf(expected, sizeof expected, "one dependency %s -> %s (simulators[%zu].regions makes it, "
                             "with promise = its time_step: neighbouring regions need none declared)",
                             f->sims[a].name, f->sims[b].name, f->sims[a].index);
                else
                    snprintf(expected, sizeof expected, "one dependency %s -> %s (already declared)", f->sims[a].name,
                             f->sims[b].name);
                return kr__input_error(f->path, at, expected, d);
            }
    }
    return KR_OK;
}

/* The model file's bytes for jansson, which would take a NUL byte between
 * two tokens as white space and read the rest (a file with a NUL in the
 * middle passed as valid): the first one ends the reading, and the load
 * reports its offset (1-based, as a line and column would be). */
typedef struct file_reader {
    FILE *in;
    uint64_t read, nul_at;
} file_reader_t;

static size_t read_checked(void *buf, size_t len, void *arg)
{
    file_reader_t *r = arg;
    size_t n = fread(buf, 1, len, r->in);
    /* A UTF-8 byte-order mark, which some editors write first, is skipped
     * (RFC 8259 allows it): jansson refused it with an invisible "near".
     * (fread fills the buffer unless the file ends: the mark is whole.) */
    if (r->read == 0 && n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
        memmove(buf, (char *)buf + 3, n - 3);
        n -= 3;
        r->read = 3;
    }
    const char *nul = memchr(buf, 0, n);
    if (nul) {
        r->nul_at = r->read + (uint64_t)(nul - (const char *)buf) + 1;
        return (size_t)-1;
    }
    r->read += n;
    return n;
}

/* ---- load ---- */

json_t *kr__model_file_read(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        kr__fail(KR_ERR_IO, "%s: (file): expected a readable model file, found %s", path, strerror(errno));
        return NULL;
    }
    /* fopen opens a directory too: jansson would then report bad JSON */
    struct stat st;
    if (fstat(fileno(in), &st) == 0 && (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0))) {
        kr__fail(KR_ERR_IO, "%s: (file): expected a readable model file, found %s", path,
                 S_ISDIR(st.st_mode) ? "a directory" : "an empty file");
        fclose(in);
        return NULL;
    }
    json_error_t err;
    file_reader_t reader = { .in = in };
    json_t *root = json_load_callback(read_checked, &reader, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    fclose(in);
    if (reader.nul_at) {
        json_decref(root);
        kr__fail(KR_ERR_INVALID_ARG, "%s: byte %llu: expected valid JSON, found a NUL byte", path,
                 (unsigned long long)reader.nul_at);
        return NULL;
    }
    if (!root) {
        /* (jansson names its own flag for this one) */
        const char *what = strstr(err.text, "JSON_ALLOW_NUL") ? "\\u0000 (a NUL character) in a string" : err.text;
        kr__fail(KR_ERR_INVALID_ARG, "%s: line %d column %d: expected valid JSON, found %s", path, err.line,
                 err.column, what);
        return NULL;
    }
    return root;
}

/* Two --vary keys that name one value, or one inside the other's: the
 * later would overwrite what the earlier set, and the CSV label the rows
 * with values no run used. `canon` holds each key's path with entries by
 * index (apply_set). */
static bool vary_overlaps(const char *const *varies, char (*canon)[KR__SET_PATH_MAX], size_t i)
{
    for (size_t j = 0; j < i; j++) {
        size_t a = strlen(canon[j]), b = strlen(canon[i]), n = a < b ? a : b;
        if (strncmp(canon[j], canon[i], n) || (a != b && (a > b ? canon[j] : canon[i])[n] != '.')) continue;
        const char *ki = varies[i], *kj = varies[j];
        kr__fail(KR_ERR_INVALID_ARG, "--vary %.*s: expected a key of its own, found one that %s --vary %.*s (%s)",
                 (int)(strchr(ki, '=') - ki), ki, a == b ? "names the value of" : a < b ? "names a part of" : "holds",
                 (int)(strchr(kj, '=') - kj), kj, a > b ? canon[j] : canon[i]);
        return true;
    }
    return false;
}

kr__model_file_t *kr__model_file_load(const kr__model_file_desc_t *desc)
{
    char (*varied)[KR__SET_PATH_MAX] = NULL;
    kr__model_file_t *f = calloc(1, sizeof *f);
    if (!f) { kr__fail(KR_ERR_NOMEM, "out of memory"); return NULL; }
    f->ckpt.keep = -1;
    f->path = strdup(desc->path ? desc->path : "");
    const char *slash = desc->path ? strrchr(desc->path, '/') : NULL;
    f->dir = slash ? strndup(desc->path, (size_t)(slash - desc->path)) : strdup(".");
    f->kinds = kr__kinds_create();
    kr__hmap_init(&f->names);
    kr__hmap_init(&f->replicas);
    kr__hmap_init(&f->dep_set);
    if (!f->path || !f->dir || !f->kinds) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (!(f->root = kr__model_file_read(f->path))) goto fail;
    /* (any JSON value is read, so that one that is no object is named as
     * such, before a --set would look into it) */
    if (!json_is_object(f->root)) {
        check_top(f);
        goto fail;
    }
    for (size_t i = 0; i < desc->set_count; i++)
        if (apply_set(f, desc->sets[i], "--set", false, NULL)) goto fail;
    if (desc->vary_count && !(varied = calloc(desc->vary_count, sizeof *varied))) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < desc->vary_count; i++) {
        if (apply_set(f, desc->varies[i], "--vary", true, varied[i])) goto fail;
        if (vary_overlaps(desc->varies, varied, i)) goto fail;
    }
    free(varied);
    varied = NULL;
    if (desc->register_builtin && desc->register_builtin(f->kinds)) goto fail;
    if (check_top(f) || load_plugins(f) || check_simulators(f) || check_dependencies(f)) goto fail;
    for (size_t i = 0; i < desc->replay_count; i++)
        if (kr__emulation_settings_replay(f, desc->replays[i])) goto fail;
    if (kr__emulation_settings_distinct(f)) goto fail;
    return f;
fail:
    free(varied);
    kr__model_file_free(f);
    return NULL;
}

void kr__model_file_free(kr__model_file_t *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->sim_count; i++) {
        free(f->sims[i].name);
        free(f->sims[i].replay);
    }
    free(f->sims);
    free(f->deps);
    kr__hmap_fini(&f->names);
    kr__hmap_fini(&f->replicas);
    kr__hmap_fini(&f->dep_set);
    json_decref(f->root);
    kr__kinds_destroy(f->kinds);
    /* Plugins stay loaded: models built from them may still be alive and
     * their code must outlive them; the process exit unloads them. */
    free(f->plugins);
    free(f->ckpt.at);
    free(f->path);
    free(f->dir);
    free(f);
}

static const char *const sync_names[] = { [KR_SYNC_NULL_MESSAGE] = "null-message", [KR_SYNC_WINDOW] = "window",
                                           [KR_SYNC_AUTO] = "auto" };

const char *kr__sync_name(kr_sync_algorithm_t sync)
{
    return (unsigned)sync <= KR_SYNC_AUTO ? sync_names[sync] : "?";
}

int kr__sync_from_name(const char *name)
{
    for (int i = 0; i <= KR_SYNC_AUTO; i++)
        if (!strcmp(name, sync_names[i])) return i;
    return -1;
}

const kr_kind_desc_t *kr__model_file_kind(const kr__model_file_t *f, size_t i)
{
    return i < f->sim_count ? kr__kinds_find(f->kinds, f->sims[i].kind) : NULL;
}

/* ---- build ---- */

kr_status_t kr__model_file_check_inputs(const kr__model_file_t *f, const int *rank_of)
{
    for (size_t i = 0; i < f->sim_count; i++) {
        const kr__sim_entry_t *e = &f->sims[i];
        int on = rank_of ? rank_of[i] : 0;
        /* the settings are read on the rank that runs the simulator, which
         * opens its input itself when the run starts */
        json_t *input = json_object_get(e->emulation, "input");
        if (json_is_string(input) && on != 0 && !e->replay && !json_object_get(e->emulation, "replay")) {
            char path[128], expected[200];
            snprintf(path, sizeof path, "simulators[%zu].emulation.input", e->index);
            snprintf(expected, sizeof expected, "an input other than standard input, which reaches rank 0 only and "
                     "'%s' runs on rank %d (a named pipe or a socket; or \"rank\": 0)", e->name, on);
            return kr__input_error(f->path, path, expected, input);
        }
    }
    return KR_OK;
}

kr_model_t *kr__model_file_build(kr__model_file_t *f, const kr_observer_t *observer)
{
    return kr__model_file_build_on(f, observer, 0, NULL);
}

kr_model_t *kr__model_file_build_on(kr__model_file_t *f, const kr_observer_t *observer, int rank, const int *rank_of)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .precision = f->precision, .seed = f->seed,
                                                         .end_time = f->end_time, .log_level = f->log_level,
                                                         .observer = observer, .rank = rank, .sync = f->sync });
    if (!m) return NULL;
    char path[128];
    uint32_t *group_size = calloc(f->sim_count ? f->sim_count : 1, sizeof *group_size);
    if (!group_size) {
        kr__fail(KR_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (kr__kinds_register_types(f, m)) goto fail;
    /* every rank knows where each simulator runs: all refuse alike */
    if (kr__model_file_check_inputs(f, rank_of)) goto fail;
    for (size_t i = 0; i < f->sim_count; i++) {
        kr__sim_entry_t *e = &f->sims[i];
        int on = rank_of ? rank_of[i] : 0;
        kr__emulation_settings_t es = { 0 };
        bool emulated = e->formalism == KR_EMULATION && on == rank;
        if (emulated && kr__emulation_settings_desc(f, e, &es)) goto fail;
        kr_sim_t *added = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = e->name, .formalism = e->formalism,
                                                                 .time_step = e->time_step, .rank = on,
                                                                 .emulation = emulated ? &es.desc : NULL });
        kr__emulation_settings_free(&es);
        if (!added) {
            snprintf(path, sizeof path, "simulators[%zu]", e->index);
            kr_status_t st = kr_last_status();
            kr__fail(st == KR_ERR_IO || st == KR_ERR_CORRUPT ? st : KR_ERR_INVALID_ARG, "%s: %s: %s", f->path, path,
                     kr_last_error());
            goto fail;
        }
        if (kr__kind_declare_receives(f, e, kr__model_file_kind(f, i), added)) goto fail;
    }
    for (size_t i = 0; i < f->dep_count; i++)
        if (kr_model_add_dependency(m, f->deps[i].from, f->deps[i].to, f->deps[i].promise)) {
            kr__fail(KR_ERR_INVALID_ARG, "%s: dependencies: %s", f->path, kr_last_error());
            goto fail;
        }
    /* A promise set that cannot run: an emulation simulator paces itself
     * by the wall clock and cannot run as one loop with others (the core
     * refuses it at start; say so here, in the standard form, so that
     * `kairos validate` refuses it too). */
    for (size_t i = 0; i < f->sim_count; i++) {
        uint32_t g = kr_model_group_of(m, (uint32_t)i);
        if (g < f->sim_count) group_size[g]++;
    }
    for (size_t i = 0; i < f->sim_count; i++) {
        kr__sim_entry_t *e = &f->sims[i];
        if (e->formalism != KR_EMULATION) continue;
        uint32_t g = kr_model_group_of(m, (uint32_t)i);
        if (g >= f->sim_count || group_size[g] < 2) continue;
        for (size_t j = 0; j < f->sim_count; j++) {
            if (j == i || kr_model_group_of(m, (uint32_t)j) != g) continue;
            json_t *entry = json_array_get(json_object_get(f->root, "simulators"), e->index);
            bool named = json_object_get(entry, "formalism") != NULL;
            char expected[600];
            snprintf(path, sizeof path, "simulators[%zu].%s", e->index, named ? "formalism" : "kind");
            snprintf(expected, sizeof expected, "no emulation simulator in a cycle of zero promises (%s is in one "
                     "with %s; give an edge of the cycle a positive promise)", e->name, f->sims[j].name);
            json_t *found = json_string(named ? "emulation" : e->kind);
            kr__input_error(f->path, path, expected, found);
            json_decref(found);
            goto fail;
        }
    }
    /* The promises are the file's: a kind's setup runs on one rank only. */
    if (kr__model_fix_promises(m, f->path)) goto fail;
    json_t *stop_lookahead = json_object_get(f->root, "stop_lookahead");
    if (stop_lookahead) {
        kr_time_t delta = kr_time_delay_ticks(json_number_value(stop_lookahead), f->precision);
        /* (kr_model_start refuses it too; here in the standard form, for
         * `kairos validate` as well) */
        size_t groups = 0;
        for (size_t i = 0; i < f->sim_count; i++) groups += group_size[i] > 0;
        if (delta == 0 && groups > 1) {
            kr__input_error(f->path, "stop_lookahead", "a positive time: with 0 every simulator would wait for every "
                            "other at equal times (the model has more than one zero-promise group)", stop_lookahead);
            goto fail;
        }
        if (kr_model_set_stop_lookahead(m, delta)) goto fail;
    }
    for (size_t i = 0; i < f->sim_count; i++) {
        kr__sim_entry_t *e = &f->sims[i];
        const kr_kind_desc_t *k = kr__model_file_kind(f, i);
        /* A rank builds only the simulators it runs. */
        if (!kr_sim_is_local(kr_model_sim(m, (uint32_t)i))) continue;
        snprintf(path, sizeof path, "simulators[%zu].params", e->index);
        kr_params_t *p = kr__params_open(f->path, path, e->params, f->precision);
        if (!p) goto fail;
        kr__params_set_region(p, e, (uint32_t)i);
        kr_sim_t *sim = kr_model_sim(m, (uint32_t)i);
        kr_status_t st = kr__kind_prepare_sim(f, e, k, sim, p);
        if (!st && k->setup) {
            m->acting = sim; /* (kr__sim_may_change) */
            kr_clear_error();
            st = k->setup(sim, p);
            m->acting = NULL;
            /* A params getter's refusal that the setup went on from (the
             * value then its default, as in a kind that dropped the status):
             * still a refusal of the model file, in its own words. */
            size_t n = strlen(f->path);
            if (!st && kr_last_status() == KR_ERR_INVALID_ARG && !strncmp(kr_last_error(), f->path, n) &&
                !strncmp(kr_last_error() + n, ": ", 2) && !strncmp(kr_last_error() + n + 2, path, strlen(path)))
                st = KR_ERR_INVALID_ARG;
        }
        /* kr_sim_fail during setup, or a refused change of the model:
         * the cause even when the setup then failed of something else */
        if (m->failure) st = kr_model_failure(m);
        if (!st) st = kr__params_check_unread(p, k->name);
        if (!st) st = kr__render_restyle(f, e, sim);
        kr__params_close(p);
        if (st) {
            /* A setup that failed is bad input (docs/cli.md, "Exit status"),
             * whatever status it gave, but for memory; one that gave no
             * message is said to have given none. */
            kr_status_t as = st == KR_ERR_NOMEM || kr_last_status() == KR_ERR_NOMEM ? KR_ERR_NOMEM : KR_ERR_INVALID_ARG;
            char why[600];
            if (kr_last_status() == KR_OK || !kr_last_error()[0])
                snprintf(why, sizeof why, "setup failed with status %d (%s) and no message", (int)st, kr_status_str(st));
            else snprintf(why, sizeof why, "%s", kr_last_error());
            /* Kinds report params errors in the standard form already. */
            if (!strncmp(why, f->path, strlen(f->path))) kr__fail(as, "%s", why);
            else kr__fail(as, "%s: simulators[%zu] (%s, kind %s): %s", f->path, e->index, e->name, k->name, why);
            goto fail;
        }
    }
    free(group_size);
    return m;
fail:
    free(group_size);
    {
        char msg[1024];
        kr_status_t st = kr_last_status();
        snprintf(msg, sizeof msg, "%s", kr_last_error());
        kr_model_destroy(m);
        kr__fail(st, "%s", msg);
    }
    return NULL;
}
