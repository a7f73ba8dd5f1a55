/* Declared parameters (kairos/param.h): a kind's table checked once when
 * the kind is registered, then read for every simulator of the kind into
 * its state before its setup.
 *
 * One reader serves three callers: registration (a row's default, with no
 * model yet: a target is then only a string), apply (the entry's value or
 * the default, into the simulator's state), and show (`kairos validate`:
 * apply into a scratch block, then print it). So a default that passes
 * registration reads the same way at run time, and validate shows exactly
 * what a run gets.
 *
 * Ownership: apply allocates a string's copy, the numbers of a list and a
 * distribution's tables inside the state. In a simulator's state they sit
 * in slots the runtime adds for them (runtime/kind_build.c), freed with the
 * simulator; kr__param_table_fini frees them in a scratch state. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/model_file.h"
#include "runtime/param_table.h"

/* A parsed range: each side optional, open (>, <) or closed (>=, <=). */
typedef struct bounds {
    bool has_lo, lo_open, has_hi, hi_open;
    double lo, hi;
} bounds_t;

const char *kr__param_type_name(kr_param_type_t type)
{
    switch (type) {
    case KR_PARAM_NUMBER: return "number";
    case KR_PARAM_DURATION: return "duration";
    case KR_PARAM_INT: return "int";
    case KR_PARAM_BOOL: return "bool";
    case KR_PARAM_STRING: return "string";
    case KR_PARAM_DIST: return "distribution";
    case KR_PARAM_TARGET: return "target";
    case KR_PARAM_LIST: return "list";
    }
    return NULL;
}

/* The size of a param type's field (0: no such type), and its alignment
 * in *align. */
static size_t type_layout(kr_param_type_t type, size_t *align)
{
#define LAYOUT(T) (*align = _Alignof(T), sizeof(T))
    switch (type) {
    case KR_PARAM_NUMBER: return LAYOUT(double);
    case KR_PARAM_DURATION: return LAYOUT(kr_time_t);
    case KR_PARAM_INT: return LAYOUT(int64_t);
    case KR_PARAM_BOOL: return LAYOUT(bool);
    case KR_PARAM_STRING:
    case KR_PARAM_TARGET: return LAYOUT(const char *);
    case KR_PARAM_DIST: return LAYOUT(kr_dist_t);
    case KR_PARAM_LIST: return LAYOUT(kr_number_list_t);
    }
#undef LAYOUT
    *align = 1;
    return 0;
}

static bool has_range(kr_param_type_t type)
{
    return type == KR_PARAM_NUMBER || type == KR_PARAM_DURATION || type == KR_PARAM_INT || type == KR_PARAM_LIST;
}

/* "> x", ">= x", "< x", "<= x", comma-separated, at most one of each side,
 * x finite, and not empty (lo <= hi). false on anything else. */
static bool parse_range(const char *text, bounds_t *b)
{
    memset(b, 0, sizeof *b);
    if (!text) return true;
    const char *c = text;
    for (;;) {
        while (*c == ' ') c++;
        bool lower = *c == '>';
        if (*c != '>' && *c != '<') return false;
        c++;
        bool open = *c != '=';
        if (!open) c++;
        char *end;
        double x = strtod(c, &end);
        if (end == c || !isfinite(x)) return false;
        c = end;
        while (*c == ' ') c++;
        if (lower ? b->has_lo : b->has_hi) return false;
        if (lower) *b = (bounds_t){ true, open, b->has_hi, b->hi_open, x, b->hi };
        else *b = (bounds_t){ b->has_lo, b->lo_open, true, open, b->lo, x };
        if (!*c) break;
        if (*c++ != ',') return false;
    }
    if (b->has_lo && b->has_hi && (b->lo > b->hi || (b->lo == b->hi && (b->lo_open || b->hi_open)))) return false;
    return true;
}

static bool in_range(const bounds_t *b, double x)
{
    if (b->has_lo && (b->lo_open ? !(x > b->lo) : !(x >= b->lo))) return false;
    if (b->has_hi && (b->hi_open ? !(x < b->hi) : !(x <= b->hi))) return false;
    return true;
}

/* A duration is never negative: its bounds with ">= 0" unless a lower
 * bound at or above 0 says more. */
static bounds_t row_bounds(const kr_param_t *row)
{
    bounds_t b;
    parse_range(row->range, &b); /* checked at registration */
    if (row->type == KR_PARAM_DURATION && (!b.has_lo || b.lo < 0)) {
        b.has_lo = true;
        b.lo_open = false;
        b.lo = 0;
    }
    return b;
}

const char *kr__param_number_text(double x, char buf[32])
{
    /* the shortest of %.15g .. %.17g that reads back as x: 0.1, not
     * 0.10000000000000001 */
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, 32, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return buf;
}

/* The bounds as text: ">= 1, <= 64"; "" without. */
static void range_text(const bounds_t *b, char *buf, size_t cap)
{
    char lo[32], hi[32];
    int n = 0;
    buf[0] = 0;
    if (b->has_lo) n = snprintf(buf, cap, "%s %s", b->lo_open ? ">" : ">=", kr__param_number_text(b->lo, lo));
    if (b->has_hi && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "%s%s %s", n ? ", " : "", b->hi_open ? "<" : "<=",
                 kr__param_number_text(b->hi, hi));
}

void kr__param_row_range(const kr_param_t *row, char *buf, size_t cap)
{
    bounds_t b = row_bounds(row);
    range_text(&b, buf, cap);
}

/* What a value of the row must be, for messages: "a duration in model
 * units > 0". */
static void expected_text(const kr_param_t *row, char *buf, size_t cap)
{
    bounds_t b = row_bounds(row);
    char range[96];
    range_text(&b, range, sizeof range);
    const char *what = "";
    switch (row->type) {
    case KR_PARAM_NUMBER: what = "a number"; break;
    case KR_PARAM_DURATION: what = "a duration in model units"; break;
    case KR_PARAM_INT: what = "a whole number"; break;
    case KR_PARAM_BOOL: what = "true or false"; break;
    case KR_PARAM_STRING: what = "a string"; break;
    case KR_PARAM_DIST: what = "a number or a distribution {\"dist\": ...}"; break;
    case KR_PARAM_TARGET: what = "the name of a simulator"; break;
    case KR_PARAM_LIST: what = range[0] ? "an array of numbers each" : "an array of numbers"; break;
    }
    snprintf(buf, cap, "%s%s%s", what, range[0] ? " " : "", range);
}

/* Where the reader reports: a file and a JSON path (apply), or nowhere
 * (registration: the caller words the message). */
typedef struct reader {
    const char *file;
    const char *path;        /* "simulators[2].params.interval" */
    uint64_t precision;
    kr_params_t *params;     /* apply: for targets */
    kr_sim_t *sim;           /* apply: NULL at registration */
} reader_t;

static kr_status_t refuse(const reader_t *r, const kr_param_t *row, const json_t *v)
{
    char expected[160];
    expected_text(row, expected, sizeof expected);
    return kr__input_error(r->file, r->path, expected, v);
}

/* Reads v (the entry's value or the default) into field. */
static kr_status_t read_value(const reader_t *r, const kr_param_t *row, const json_t *v, void *field)
{
    bounds_t b = row_bounds(row);
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    switch (row->type) {
    case KR_PARAM_NUMBER:
        if (!isfinite(x) || !in_range(&b, x)) return refuse(r, row, v);
        *(double *)field = x;
        return KR_OK;
    case KR_PARAM_DURATION:
        if (!isfinite(x) || !in_range(&b, x)) return refuse(r, row, v);
        /* as kr_params_duration: model units, rounded up to ticks */
        *(kr_time_t *)field = kr_time_delay_ticks(x, r->precision);
        return KR_OK;
    case KR_PARAM_INT:
        /* 3.0 is a whole number too; beyond 2^53 a double is no longer exact */
        if (json_is_integer(v) && in_range(&b, (double)json_integer_value(v))) {
            *(int64_t *)field = json_integer_value(v);
            return KR_OK;
        }
        if (!json_is_real(v) || x != floor(x) || fabs(x) > 9007199254740992.0 || !in_range(&b, x))
            return refuse(r, row, v);
        *(int64_t *)field = (int64_t)x;
        return KR_OK;
    case KR_PARAM_BOOL:
        if (!json_is_boolean(v)) return refuse(r, row, v);
        *(bool *)field = json_is_true(v);
        return KR_OK;
    case KR_PARAM_STRING:
        if (!json_is_string(v)) return refuse(r, row, v);
        /* A copy, freed with the state: a default's decoded text dies with
         * its parse, and the state must not lean on the model file. */
        if (!(*(char **)field = strdup(json_string_value(v))))
            return kr__fail(KR_ERR_NOMEM, "%s: %s: out of memory", r->file, r->path);
        return KR_OK;
    case KR_PARAM_TARGET: {
        if (!r->sim) return json_is_string(v) && json_string_value(v)[0] ? KR_OK : refuse(r, row, v);
        uint32_t id;
        kr_status_t st = kr__params_target_of(r->params, row->name, v, r->sim, &id);
        if (st) return st;
        *(const char **)field = kr_sim_name(kr_model_sim(kr_sim_model(r->sim), id));
        return KR_OK;
    }
    case KR_PARAM_DIST:
        return kr__dist_from_json(r->file, r->path, v, (kr_dist_t *)field);
    case KR_PARAM_LIST: {
        kr_number_list_t *list = field;
        if (!json_is_array(v)) return refuse(r, row, v);
        size_t n = json_array_size(v);
        double *values = malloc((n ? n : 1) * sizeof *values);
        if (!values) return kr__fail(KR_ERR_NOMEM, "%s: %s: out of memory", r->file, r->path);
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            double y = json_is_number(e) ? json_number_value(e) : NAN;
            if (!isfinite(y) || !in_range(&b, y)) {
                free(values);
                char path[600], range[96], expected[128];
                snprintf(path, sizeof path, "%s[%zu]", r->path, i);
                range_text(&b, range, sizeof range);
                snprintf(expected, sizeof expected, "a number%s%s", range[0] ? " " : "", range);
                return kr__input_error(r->file, path, expected, e);
            }
            values[i] = y;
        }
        *list = (kr_number_list_t){ .values = values, .count = n };
        return KR_OK;
    }
    }
    return kr__fail(KR_ERR_INVALID_ARG, "%s: %s: unknown parameter type", r->file, r->path);
}

/* Undoes what read_value allocated in field. */
static void fini_value(const kr_param_t *row, void *field)
{
    if (row->type == KR_PARAM_DIST) kr_dist_fini(field);
    if (row->type == KR_PARAM_STRING) {
        free(*(char **)field);
        *(char **)field = NULL;
    }
    if (row->type == KR_PARAM_LIST) {
        free((void *)((kr_number_list_t *)field)->values);
        memset(field, 0, sizeof(kr_number_list_t));
    }
}

/* ---- registration ---- */

#define ROW_FAIL(...) kr__fail(KR_ERR_INVALID_ARG, __VA_ARGS__)

kr_status_t kr__param_table_check(const kr_kind_desc_t *kind)
{
    if (!kind->params) return KR_OK;
    const char *k = kind->name ? kind->name : "(no name)";
    for (size_t i = 0; kind->params[i].name; i++) {
        const kr_param_t *row = &kind->params[i];
        if (!row->name[0]) return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] has an empty name", k, i);
        /* (--set and --vary split their keys at dots: one in a name could
         * never be reached) */
        if (strchr(row->name, '.'))
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': a name without a dot (--set splits keys "
                            "at dots)", k, i, row->name);
        size_t align, size = type_layout(row->type, &align);
        if (!size)
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': unknown type %d", k, i, row->name,
                            (int)row->type);
        if (row->offset > kind->state_size || size > kind->state_size - row->offset)
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': its %s field (offset %zu, %zu bytes) "
                            "is outside the state (%zu bytes)", k, i, row->name, kr__param_type_name(row->type),
                            row->offset, size, kind->state_size);
        if (row->offset % align)
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': its %s field at offset %zu is not aligned "
                            "to %zu bytes (use offsetof, as KR_PARAM does)", k, i, row->name,
                            kr__param_type_name(row->type), row->offset, align);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(kind->params[j].name, row->name))
                return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': the name of params[%zu] already",
                                k, i, row->name, j);
        bounds_t b;
        if (row->range && !has_range(row->type))
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': a %s takes no range (found \"%s\")", k, i,
                            row->name, kr__param_type_name(row->type), row->range);
        if (!parse_range(row->range, &b))
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': range \"%s\" is not comma-separated "
                            "\"> x\", \">= x\", \"< x\", \"<= x\" with finite x and at most one bound each side, "
                            "not empty", k, i, row->name, row->range);
        if (!row->def) continue;
        json_t *v = json_loads(row->def, JSON_DECODE_ANY, NULL);
        /* a scratch field: the default is read as an entry's value would be */
        union { double d; kr_time_t t; int64_t i; bool b; const char *s; kr_dist_t dist; kr_number_list_t l; } field;
        memset(&field, 0, sizeof field);
        reader_t r = { .file = "kr_kind_register", .path = row->name, .precision = KR_PRECISION_DEFAULT };
        kr_status_t st = v ? read_value(&r, row, v, &field) : KR_ERR_INVALID_ARG;
        fini_value(row, &field);
        json_decref(v);
        if (st == KR_ERR_NOMEM) return st;
        if (st) {
            char expected[160];
            expected_text(row, expected, sizeof expected);
            const char *q = row->def[0] == '"' ? "" : "\""; /* (a JSON string default has its own quotes) */
            return ROW_FAIL("kr_kind_register: kind '%s': params[%zu] '%s': default %s%s%s is not %s", k, i,
                            row->name, q, row->def, q, expected);
        }
    }
    return KR_OK;
}

/* ---- apply ---- */

kr_status_t kr__param_table_apply(const kr_kind_desc_t *kind, kr_params_t *params, kr_sim_t *sim, void *state)
{
    if (!kind->params) return KR_OK;
    for (size_t i = 0; kind->params[i].name; i++) {
        const kr_param_t *row = &kind->params[i];
        char path[600];
        snprintf(path, sizeof path, "%s.%s", kr__params_path(params), row->name);
        reader_t r = { .file = kr__params_file(params), .path = path, .precision = kr__params_precision(params),
                       .params = params, .sim = sim };
        json_t *v = kr__params_take(params, row->name), *def = NULL;
        if (!v && row->def && !(v = def = json_loads(row->def, JSON_DECODE_ANY, NULL)))
            return kr__fail(KR_ERR_NOMEM, "%s: %s: out of memory", r.file, path);
        if (!v) {
            char expected[160];
            expected_text(row, expected, sizeof expected);
            if (row->type == KR_PARAM_TARGET)
                snprintf(expected, sizeof expected, "the name of a simulator with a dependency from '%.100s'",
                         kr_sim_name(sim));
            return kr__input_error(r.file, path, expected, NULL);
        }
        kr_status_t st = read_value(&r, row, v, (char *)state + row->offset);
        json_decref(def);
        if (st) return st;
    }
    return KR_OK;
}

void kr__param_table_fini(const kr_kind_desc_t *kind, void *state)
{
    if (!kind->params || !state) return;
    for (size_t i = 0; kind->params[i].name; i++) fini_value(&kind->params[i], (char *)state + kind->params[i].offset);
}

/* ---- show (kairos validate) ---- */

kr_status_t kr__param_table_show(const kr_kind_desc_t *kind, kr_params_t *params, kr_sim_t *sim, FILE *out)
{
    if (!kind->params) return KR_OK;
    void *state = calloc(1, kind->state_size ? kind->state_size : 1);
    if (!state) return kr__fail(KR_ERR_NOMEM, "%s: out of memory", kr__params_file(params));
    kr_status_t st = kr__param_table_apply(kind, params, sim, state);
    double precision = (double)kr__params_precision(params);
    char num[32];
    for (size_t i = 0; !st && kind->params[i].name; i++) {
        const kr_param_t *row = &kind->params[i];
        const void *field = (const char *)state + row->offset;
        fprintf(out, "%s%s ", i ? ", " : "", row->name);
        switch (row->type) {
        case KR_PARAM_NUMBER: fprintf(out, "%s", kr__param_number_text(*(const double *)field, num)); break;
        case KR_PARAM_DURATION:
            fprintf(out, "%s", kr__param_number_text((double)*(const kr_time_t *)field / precision, num));
            break;
        case KR_PARAM_INT: fprintf(out, "%lld", (long long)*(const int64_t *)field); break;
        case KR_PARAM_BOOL: fprintf(out, "%s", *(const bool *)field ? "true" : "false"); break;
        case KR_PARAM_TARGET: fprintf(out, "%s", *(const char *const *)field); break;
        case KR_PARAM_STRING:
        case KR_PARAM_DIST: {
            /* as JSON: a string's quotes show an empty one; a distribution
             * as written (its fields are private once prepared) */
            json_t *v, *def;
            if (row->type == KR_PARAM_STRING) v = def = json_string(*(const char *const *)field);
            else if (!(v = kr__params_take(params, row->name))) v = def = json_loads(row->def, JSON_DECODE_ANY, NULL);
            else def = NULL;
            char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            fprintf(out, "%s", text ? text : "?");
            free(text);
            json_decref(def);
            break;
        }
        case KR_PARAM_LIST: {
            const kr_number_list_t *l = field;
            fputc('[', out);
            for (size_t j = 0; j < l->count; j++)
                fprintf(out, "%s%s", j ? ", " : "", kr__param_number_text(l->values[j], num));
            fputc(']', out);
            break;
        }
        }
        if (row->unit && row->unit[0]) fprintf(out, " %s", row->unit);
    }
    kr__param_table_fini(kind, state);
    free(state);
    return st;
}
