/* Reading a simulator's params for its kind, with errors that name the file
 * and the JSON path; and the kind's report for the stats file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"
#include "runtime/model_file.h"
#include "runtime/param_table.h"

/* The first bytes of a value's JSON text: the dump stops once they are
 * there, so that showing a 100 MB string or a million-element array costs
 * no more than showing a number. */
typedef struct shown_text {
    char text[64];
    size_t len;
} shown_text_t;

static int keep_prefix(const char *buffer, size_t size, void *data)
{
    shown_text_t *t = data;
    size_t room = sizeof t->text - 1 - t->len, n = size < room ? size : room;
    memcpy(t->text + t->len, buffer, n);
    t->len += n;
    t->text[t->len] = 0;
    return n < size ? -1 : 0; /* -1 ends the dump */
}

kr_status_t kr__input_error(const char *file, const char *path, const char *expected, const json_t *found)
{
    char shown[96];
    if (!found) {
        snprintf(shown, sizeof shown, "nothing");
    } else if (json_is_real(found)) {
        /* In the fewest digits that read back as the value, as the user
         * wrote it: -0.1, not -0.10000000000000001. */
        for (int digits = 15; digits <= 17; digits++) {
            char *text = json_dumps(found, JSON_ENCODE_ANY | JSON_REAL_PRECISION(digits));
            snprintf(shown, sizeof shown, "%s", text ? text : "?");
            free(text);
            if (strtod(shown, NULL) == json_real_value(found)) break;
        }
    } else {
        shown_text_t t = { .len = 0 };
        /* (numbers inside in 15 digits, as written: 0.2, not 0.20000000000000001) */
        json_dump_callback(found, keep_prefix, &t, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
        if (t.len > 60) snprintf(shown, sizeof shown, "%.57s...", t.text);
        else snprintf(shown, sizeof shown, "%s", t.len ? t.text : "?");
    }
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected %s, found %s", file, path, expected, shown);
}

struct kr_params {
    const char *file;
    char *path;              /* e.g. simulators[2].params */
    json_t *object;
    uint64_t precision;
    const char **read;       /* keys the kind asked for */
    size_t read_count, read_cap;
    kr_region_cut_t cut;     /* 1 x 1 unless the entry has "regions" */
    bool has_regions;
    bool cut_read;           /* the kind asked for the cut (kr_params_region_cut) */
};

kr_params_t *kr__params_open(const char *file, const char *path, json_t *object, uint64_t precision)
{
    kr_params_t *p = calloc(1, sizeof *p);
    if (!p || !(p->path = strdup(path))) {
        free(p);
        kr__fail(KR_ERR_NOMEM, "params: out of memory");
        return NULL;
    }
    p->file = file;
    p->object = object;
    p->precision = precision;
    p->cut = (kr_region_cut_t){ .cols = 1, .rows = 1 };
    return p;
}

void kr__params_set_region(kr_params_t *p, const kr__sim_entry_t *e, uint32_t sim_id)
{
    p->has_regions = e->region_cols > 0;
    p->cut = p->has_regions ? (kr_region_cut_t){ e->region_cols, e->region_rows, e->region_index, e->region_first }
                            : (kr_region_cut_t){ .cols = 1, .rows = 1, .first_sim = sim_id };
}

/* The entry's path without ".params": a complaint about "regions". */
static int entry_path_len(const kr_params_t *p)
{
    size_t n = strlen(p->path);
    return n > 7 && !strcmp(p->path + n - 7, ".params") ? (int)(n - 7) : (int)n;
}

kr_status_t kr_params_region_cut(const kr_params_t *p, int64_t width, int64_t height, kr_region_cut_t *out)
{
    ((kr_params_t *)p)->cut_read = true;
    *out = p->cut;
    if ((int64_t)p->cut.cols <= width && (int64_t)p->cut.rows <= height) return KR_OK;
    int entry = entry_path_len(p);
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %.*s.regions: expected at most %lld x %lld regions for a %lld x %lld grid "
                    "(params.width, params.height), found [%u,%u]", p->file, entry, p->path, (long long)width,
                    (long long)height, (long long)width, (long long)height, p->cut.cols, p->cut.rows);
}

void kr__params_close(kr_params_t *p)
{
    if (!p) return;
    free(p->read);
    free(p->path);
    free(p);
}

/* Remembers that the kind knows `key`; returns the value or NULL. */
static json_t *take(const kr_params_t *cp, const char *key)
{
    kr_params_t *p = (kr_params_t *)cp;
    bool known = false;
    for (size_t i = 0; i < p->read_count && !known; i++) known = !strcmp(p->read[i], key);
    /* Out of memory the key is not remembered, and no error is recorded. */
    if (!known && p->read_count == p->read_cap)
        (void)KR__GROW(p->read, p->read_cap, p->read_count + 1, 16, NULL);
    if (!known && p->read_count < p->read_cap) p->read[p->read_count++] = key;
    return json_object_get(p->object, key);
}

json_t *kr__params_take(const kr_params_t *p, const char *key) { return take(p, key); }
const char *kr__params_file(const kr_params_t *p) { return p->file; }
const char *kr__params_path(const kr_params_t *p) { return p->path; }
uint64_t kr__params_precision(const kr_params_t *p) { return p->precision; }

const char *kr_params_json_type(const kr_params_t *p, const char *key)
{
    /* json_object_get, not take: asking what a key holds is not reading it */
    const json_t *v = json_object_get(p->object, key);
    if (!v) return NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return NULL;
}

kr_status_t kr_params_entry_error(const kr_params_t *p, const char *key, const char *expected, const char *found)
{
    /* The entry's path is the params' without ".params". */
    size_t n = strlen(p->path);
    int entry = n > 7 && !strcmp(p->path + n - 7, ".params") ? (int)(n - 7) : (int)n;
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %.*s.%s: expected %s, found %s", p->file, entry, p->path, key, expected,
                    found);
}

kr_status_t kr__params_target_of(const kr_params_t *p, const char *key, const json_t *v, kr_sim_t *from,
                                 uint32_t *out)
{
    char path[512], expected[700];
    snprintf(path, sizeof path, "%s.%s", p->path, key);
    int n = snprintf(expected, sizeof expected, "the name of a simulator with a dependency from '%.200s'",
                     kr_sim_name(from));
    if (!json_is_string(v)) return kr__input_error(p->file, path, expected, v);
    const char *name = json_string_value(v);
    kr_model_t *model = kr_sim_model(from);
    kr_sim_t *to = kr_model_find_sim(model, name);
    if (!to) snprintf(expected + n, sizeof expected - (size_t)n, " (there is no simulator '%.200s')", name);
    else if (kr_model_promise(model, kr_sim_id(from), kr_sim_id(to)) == KR_TIME_NEVER)
        snprintf(expected + n, sizeof expected - (size_t)n, " (none to '%.200s')", name);
    else {
        *out = kr_sim_id(to);
        return KR_OK;
    }
    return kr__input_error(p->file, path, expected, v);
}

kr_status_t kr_params_target(const kr_params_t *p, const char *key, const char *def, kr_sim_t *from, uint32_t *out)
{
    json_t *v = take(p, key);
    if (!v && !def) {
        char path[512], expected[300];
        snprintf(path, sizeof path, "%s.%s", p->path, key);
        snprintf(expected, sizeof expected, "the name of a simulator with a dependency from '%.200s'",
                 kr_sim_name(from));
        return kr__input_error(p->file, path, expected, NULL);
    }
    json_t *d = v ? NULL : json_string(def);
    if (!v && !d) return kr__fail(KR_ERR_NOMEM, "params: out of memory");
    kr_status_t st = kr__params_target_of(p, key, v ? v : d, from, out);
    json_decref(d);
    return st;
}

kr_status_t kr_params_error(const kr_params_t *p, const char *key, const char *expected, const char *found)
{
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s.%s: expected %s, found %s", p->file, p->path, key, expected, found);
}

static kr_status_t wrong(const kr_params_t *p, const char *key, const char *expected, const json_t *v)
{
    char path[512];
    snprintf(path, sizeof path, "%s.%s", p->path, key);
    return kr__input_error(p->file, path, expected, v);
}

bool kr_params_has(const kr_params_t *p, const char *key)
{
    return take(p, key) != NULL;
}

kr_status_t kr_params_number(const kr_params_t *p, const char *key, double def, double *out)
{
    json_t *v = take(p, key);
    *out = def;
    if (!v) return KR_OK;
    if (!json_is_number(v) || !isfinite(json_number_value(v))) return wrong(p, key, "a number", v);
    *out = json_number_value(v);
    return KR_OK;
}

kr_status_t kr_params_int(const kr_params_t *p, const char *key, int64_t def, int64_t min, int64_t max, int64_t *out)
{
    json_t *v = take(p, key);
    *out = def;
    if (!v) return KR_OK;
    char expected[96];
    if (min == INT64_MIN && max == INT64_MAX) snprintf(expected, sizeof expected, "a whole number");
    else if (max == INT64_MAX) snprintf(expected, sizeof expected, "a whole number >= %lld", (long long)min);
    else snprintf(expected, sizeof expected, "a whole number from %lld to %lld", (long long)min, (long long)max);
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < min || i > max) return wrong(p, key, expected, v);
        *out = i;
        return KR_OK;
    }
    /* 3.0 is a whole number too */
    if (!json_is_real(v) || d != floor(d) || d < (double)min || d > (double)max || fabs(d) > 9007199254740992.0)
        return wrong(p, key, expected, v);
    *out = (int64_t)d;
    return KR_OK;
}

kr_status_t kr_params_bool(const kr_params_t *p, const char *key, bool def, bool *out)
{
    json_t *v = take(p, key);
    *out = def;
    if (!v) return KR_OK;
    if (!json_is_boolean(v)) return wrong(p, key, "true or false", v);
    *out = json_is_true(v);
    return KR_OK;
}

kr_status_t kr_params_string(const kr_params_t *p, const char *key, const char *def, const char **out)
{
    json_t *v = take(p, key);
    *out = def;
    if (!v) return KR_OK;
    if (!json_is_string(v)) return wrong(p, key, "a string", v);
    *out = json_string_value(v);
    return KR_OK;
}

kr_status_t kr_params_duration(const kr_params_t *p, const char *key, kr_time_t def, kr_time_t *out)
{
    json_t *v = take(p, key);
    *out = def;
    if (!v) return KR_OK;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= 0) || !isfinite(d)) return wrong(p, key, "a duration >= 0 in model units", v);
    *out = kr_time_delay_ticks(d, p->precision);
    return KR_OK;
}

kr_status_t kr_params_dist(const kr_params_t *p, const char *key, const kr_dist_desc_t *def, kr_dist_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *v = take(p, key);
    char path[512];
    snprintf(path, sizeof path, "%s.%s", p->path, key);
    if (!v) {
        if (!def) return kr__input_error(p->file, path, "a distribution {\"dist\": ...} or a number", NULL);
        kr_status_t st = kr_dist_init(out, def);
        return st ? kr__fail(st, "%s: %s: default distribution: %s", p->file, path, kr_last_error()) : KR_OK;
    }
    return kr__dist_from_json(p->file, path, v, out);
}

/* {"dist": name, ...}: every key of the form must be there and no other.
 * A bare number is a constant: 3 is {"dist": "constant", "value": 3}. */
kr_status_t kr__dist_from_json(const char *file, const char *path, const json_t *v, kr_dist_t *out)
{
    memset(out, 0, sizeof *out);
    if (json_is_number(v)) {
        double x = json_number_value(v);
        if (!isfinite(x)) return kr__input_error(file, path, "a finite number", v);
        return kr_dist_init(out, &(kr_dist_desc_t){ .kind = KR_DIST_CONSTANT, .value = x });
    }
    json_t *name = json_is_object(v) ? json_object_get(v, "dist") : NULL;
    kr_dist_kind_t kind = json_is_string(name) ? kr_dist_kind_from_name(json_string_value(name)) : KR_DIST_NONE;
    if (kind == KR_DIST_NONE)
        return kr__input_error(file, path, "a number or a distribution {\"dist\": constant, uniform, exponential, "
                               "normal, lognormal, triangular, erlang, gamma, discrete, poisson or bernoulli, ...}", v);
    /* The number fields each form takes, as in the JSON form. */
    static const struct { kr_dist_kind_t kind; const char *fields[3]; } forms[] = {
        { KR_DIST_CONSTANT, { "value" } },          { KR_DIST_UNIFORM, { "min", "max" } },
        { KR_DIST_EXPONENTIAL, { "mean" } },        { KR_DIST_NORMAL, { "mean", "sd" } },
        { KR_DIST_LOGNORMAL, { "mean", "sd" } },    { KR_DIST_TRIANGULAR, { "min", "mode", "max" } },
        { KR_DIST_ERLANG, { "k", "mean" } },        { KR_DIST_GAMMA, { "shape", "scale" } },
        { KR_DIST_POISSON, { "mean" } },            { KR_DIST_BERNOULLI, { "p" } },
        { KR_DIST_DISCRETE, { "values", "weights" } },
    };
    const char *const *fields = NULL;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (forms[i].kind == kind) fields = forms[i].fields;
    kr_dist_desc_t d = { .kind = kind };
    const char *kname = json_string_value(name);
    const char *k;
    json_t *field;
    json_object_foreach((json_t *)v, k, field) {
        if (!strcmp(k, "dist")) continue;
        bool ok = false;
        for (int i = 0; i < 3 && fields[i]; i++) ok |= !strcmp(fields[i], k);
        char fpath[600];
        snprintf(fpath, sizeof fpath, "%s.%s", path, k);
        if (!ok) {
            char expected[128];
            snprintf(expected, sizeof expected, "no key '%s' in the %s distribution", k, kname);
            return kr__input_error(file, fpath, expected, field);
        }
    }
    double *values = NULL, *weights = NULL;
    kr_status_t st = KR_OK;
    for (int i = 0; i < 3 && fields[i] && !st; i++) {
        field = json_object_get(v, fields[i]);
        char fpath[600];
        snprintf(fpath, sizeof fpath, "%s.%s", path, fields[i]);
        if (kind == KR_DIST_DISCRETE) {
            if (!json_is_array(field) || json_array_size(field) == 0) {
                st = kr__input_error(file, fpath, "a non-empty array of numbers", field);
                break;
            }
            size_t n = json_array_size(field);
            if (d.count && n != d.count) {
                st = kr__input_error(file, fpath, "as many weights as values", field);
                break;
            }
            double *arr = malloc(n * sizeof *arr);
            if (!arr) { st = kr__fail(KR_ERR_NOMEM, "out of memory"); break; }
            if (i == 0) values = arr; else weights = arr;
            for (size_t j = 0; j < n; j++) {
                json_t *x = json_array_get(field, j);
                if (!json_is_number(x)) { st = kr__input_error(file, fpath, "an array of numbers", field); break; }
                arr[j] = json_number_value(x);
            }
            d.count = n;
            continue;
        }
        if (!json_is_number(field)) {
            st = kr__input_error(file, fpath, "a number", field);
            break;
        }
        double x = json_number_value(field);
        if (!strcmp(fields[i], "value")) d.value = x;
        else if (!strcmp(fields[i], "min")) d.min = x;
        else if (!strcmp(fields[i], "max")) d.max = x;
        else if (!strcmp(fields[i], "mode")) d.mode = x;
        else if (!strcmp(fields[i], "mean")) d.mean = x;
        else if (!strcmp(fields[i], "sd")) d.sd = x;
        else if (!strcmp(fields[i], "k")) d.k = x;
        else if (!strcmp(fields[i], "shape")) d.shape = x;
        else if (!strcmp(fields[i], "scale")) d.scale = x;
        else if (!strcmp(fields[i], "p")) d.p = x;
    }
    if (!st) {
        d.values = values;
        d.weights = weights;
        st = kr_dist_init(out, &d);
        if (st) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", kr_last_error());
            st = kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected valid parameters, found %s", file, path, msg);
        }
    }
    free(values);
    free(weights);
    return st;
}

kr_status_t kr__params_check_unread(const kr_params_t *p, const char *kind)
{
    /* A kind that never asked for the cut would run every region as the
     * whole world, P x Q copies of it. */
    if (p->has_regions && !p->cut_read)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: %.*s.regions: expected a kind that cuts its world into regions "
                        "(docs/regions.md), found kind '%s', which does not", p->file, entry_path_len(p), p->path,
                        kind);
    const char *key;
    json_t *v;
    json_object_foreach(p->object, key, v) {
        (void)v;
        bool read = false;
        for (size_t i = 0; i < p->read_count && !read; i++) read = !strcmp(p->read[i], key);
        if (read) continue;
        char expected[512];
        size_t n = (size_t)snprintf(expected, sizeof expected, "a parameter of kind '%s' (", kind);
        for (size_t i = 0; i < p->read_count && n < sizeof expected; i++)
            n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", i ? ", " : "", p->read[i]);
        if (!p->read_count && n < sizeof expected) n += (size_t)snprintf(expected + n, sizeof expected - n, "none");
        if (n < sizeof expected) snprintf(expected + n, sizeof expected - n, ")");
        /* a key may be megabytes long: show its first bytes, as values */
        int shown = strlen(key) > 60 ? 57 : 60;
        const char *more = strlen(key) > 60 ? "..." : "";
        char path[600];
        snprintf(path, sizeof path, "%s.%.*s%s", p->path, shown, key, more);
        return kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected %s, found the unknown key \"%.*s%s\"", p->file, path,
                        expected, shown, key, more);
    }
    return KR_OK;
}

/* ---- reports ---- */

struct kr_report {
    json_t *object;
};

kr_report_t *kr__report_open(void)
{
    kr_report_t *r = calloc(1, sizeof *r);
    if (r && !(r->object = json_object())) {
        free(r);
        r = NULL;
    }
    return r;
}

json_t *kr__report_json(kr_report_t *r) { return r->object; }

void kr__report_close(kr_report_t *r)
{
    if (!r) return;
    json_decref(r->object);
    free(r);
}

void kr_report_number(kr_report_t *r, const char *name, double value)
{
    /* JSON has no NaN or infinity: those become null. */
    json_object_set_new(r->object, name, isfinite(value) ? json_real(value) : json_null());
}

void kr_report_int(kr_report_t *r, const char *name, int64_t value)
{
    json_object_set_new(r->object, name, json_integer(value));
}

void kr_report_string(kr_report_t *r, const char *name, const char *value)
{
    json_object_set_new(r->object, name, json_string(value ? value : ""));
}

void kr_report_steps(kr_report_t *r, const char *name, const int64_t *values, size_t n, unsigned decimals)
{
    /* Under a reserved key that the run takes out of the simulator's stats
     * and sums over the kind (runtime/run.c). */
    json_t *steps = json_object_get(r->object, "_steps");
    if (!steps) json_object_set_new(r->object, "_steps", steps = json_object());
    json_t *vs = json_array();
    for (size_t i = 0; vs && i < n; i++) json_array_append_new(vs, json_integer((json_int_t)values[i]));
    json_object_set_new(steps, name, json_pack("{s:i, s:o}", "decimals", decimals > 9 ? 9 : (int)decimals,
                                               "values", vs ? vs : json_array()));
}
