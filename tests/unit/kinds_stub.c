/* TEST DOUBLE, unit tests only: see kinds_stub.h. Implements the parts of
 * kind.h that the real runtime provides, with the same contracts (defaults
 * when absent, errors naming the key), over a key/value table. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kinds_stub.h"
#include "../../ecs/error_private.h"

void stub_params_init(kr_params_t *p, const char *where, uint64_t precision)
{
    memset(p, 0, sizeof *p);
    p->where = where;
    p->precision = precision ? precision : KR_PRECISION_DEFAULT;
}

static stub_param_t *add(kr_params_t *p, const char *key, stub_type_t type)
{
    if (p->count == STUB_MAX) return NULL;
    stub_param_t *it = &p->items[p->count++];
    memset(it, 0, sizeof *it);
    it->key = key;
    it->type = type;
    return it;
}

void stub_params_number(kr_params_t *p, const char *key, double value)
{
    stub_param_t *it = add(p, key, STUB_NUMBER);
    if (it) it->number = value;
}

void stub_params_string(kr_params_t *p, const char *key, const char *value)
{
    stub_param_t *it = add(p, key, STUB_STRING);
    if (it) it->string = value;
}

void stub_params_bool(kr_params_t *p, const char *key, bool value)
{
    stub_param_t *it = add(p, key, STUB_BOOL);
    if (it) it->boolean = value;
}

void stub_params_dist(kr_params_t *p, const char *key, const kr_dist_desc_t *value)
{
    stub_param_t *it = add(p, key, STUB_DIST);
    if (it) it->dist = *value;
}

const char *stub_params_unread(const kr_params_t *p)
{
    for (size_t i = 0; i < p->count; i++)
        if (!p->items[i].read) return p->items[i].key;
    return NULL;
}

static stub_param_t *find(const kr_params_t *p, const char *key)
{
    for (size_t i = 0; i < p->count; i++)
        if (!strcmp(p->items[i].key, key)) {
            stub_param_t *it = (stub_param_t *)&p->items[i];
            it->read = true;
            return it;
        }
    return NULL;
}

static const char *type_name(stub_type_t t)
{
    switch (t) {
    case STUB_NUMBER: return "a number";
    case STUB_STRING: return "a string";
    case STUB_BOOL: return "a boolean";
    case STUB_DIST: return "a distribution";
    }
    return "?";
}

kr_status_t kr_params_error(const kr_params_t *p, const char *key, const char *expected, const char *found)
{
    return kr__fail(KR_ERR_INVALID_ARG, "stub.json: %s.%s: expected %s, found %s", p->where ? p->where : "params",
                    key, expected, found);
}

kr_status_t kr_params_number(const kr_params_t *p, const char *key, double def, double *out)
{
    stub_param_t *it = find(p, key);
    if (!it) { *out = def; return KR_OK; }
    if (it->type != STUB_NUMBER) return kr_params_error(p, key, "a number", type_name(it->type));
    *out = it->number;
    return KR_OK;
}

kr_status_t kr_params_int(const kr_params_t *p, const char *key, int64_t def, int64_t min, int64_t max,
                          int64_t *out)
{
    stub_param_t *it = find(p, key);
    if (!it) { *out = def; return KR_OK; }
    char expected[96], found[64];
    snprintf(expected, sizeof expected, "a whole number in [%lld, %lld]", (long long)min, (long long)max);
    if (it->type != STUB_NUMBER) return kr_params_error(p, key, expected, type_name(it->type));
    double v = it->number;
    snprintf(found, sizeof found, "%g", v);
    if (v != floor(v) || v < (double)min || v > (double)max) return kr_params_error(p, key, expected, found);
    *out = (int64_t)v;
    return KR_OK;
}

kr_status_t kr_params_bool(const kr_params_t *p, const char *key, bool def, bool *out)
{
    stub_param_t *it = find(p, key);
    if (!it) { *out = def; return KR_OK; }
    if (it->type != STUB_BOOL) return kr_params_error(p, key, "a boolean", type_name(it->type));
    *out = it->boolean;
    return KR_OK;
}

kr_status_t kr_params_string(const kr_params_t *p, const char *key, const char *def, const char **out)
{
    stub_param_t *it = find(p, key);
    if (!it) { *out = def; return KR_OK; }
    if (it->type != STUB_STRING) return kr_params_error(p, key, "a string", type_name(it->type));
    *out = it->string;
    return KR_OK;
}

kr_status_t kr_params_duration(const kr_params_t *p, const char *key, kr_time_t def, kr_time_t *out)
{
    stub_param_t *it = find(p, key);
    if (!it) { *out = def; return KR_OK; }
    if (it->type != STUB_NUMBER) return kr_params_error(p, key, "a duration", type_name(it->type));
    if (!(it->number >= 0) || !isfinite(it->number)) {
        char found[64];
        snprintf(found, sizeof found, "%g", it->number);
        return kr_params_error(p, key, "a duration >= 0", found);
    }
    *out = kr_time_delay_ticks(it->number, p->precision);
    return KR_OK;
}

kr_status_t kr_params_dist(const kr_params_t *p, const char *key, const kr_dist_desc_t *def, kr_dist_t *out)
{
    stub_param_t *it = find(p, key);
    const kr_dist_desc_t *d = def;
    if (it) {
        if (it->type != STUB_DIST) return kr_params_error(p, key, "a distribution", type_name(it->type));
        d = &it->dist;
    } else if (!def) {
        return kr_params_error(p, key, "a distribution (required)", "nothing");
    }
    if (kr_dist_init(out, d) != KR_OK) {
        char found[256];
        snprintf(found, sizeof found, "%s", kr_last_error());
        return kr_params_error(p, key, "a valid distribution", found);
    }
    return KR_OK;
}

bool kr_params_has(const kr_params_t *p, const char *key)
{
    for (size_t i = 0; i < p->count; i++)
        if (!strcmp(p->items[i].key, key)) return true;
    return false;
}

static stub_figure_t *figure(kr_report_t *r, const char *name, int type)
{
    if (r->count == STUB_MAX) return NULL;
    stub_figure_t *f = &r->figures[r->count++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->type = type;
    return f;
}

void kr_report_number(kr_report_t *r, const char *name, double value)
{
    stub_figure_t *f = figure(r, name, 'n');
    if (f) f->number = value;
}

void kr_report_int(kr_report_t *r, const char *name, int64_t value)
{
    stub_figure_t *f = figure(r, name, 'i');
    if (f) f->integer = value;
}

void kr_report_string(kr_report_t *r, const char *name, const char *value)
{
    stub_figure_t *f = figure(r, name, 's');
    if (f) f->string = value;
}

const stub_figure_t *stub_report_get(const kr_report_t *r, const char *name)
{
    for (size_t i = 0; i < r->count; i++)
        if (!strcmp(r->figures[i].name, name)) return &r->figures[i];
    return NULL;
}

kr_status_t kr_kind_register(kr_kinds_t *k, const kr_kind_desc_t *desc)
{
    if (!desc || !desc->name || !desc->name[0] || !desc->setup)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: a kind needs a name and a setup");
    if (stub_kinds_find(k, desc->name))
        return kr__fail(KR_ERR_EXISTS, "kr_kind_register: kind '%s' is already registered", desc->name);
    if (k->count == sizeof k->kinds / sizeof k->kinds[0])
        return kr__fail(KR_ERR_NOMEM, "kr_kind_register: the stub holds at most 32 kinds");
    k->kinds[k->count++] = desc;
    return KR_OK;
}

const kr_kind_desc_t *stub_kinds_find(const kr_kinds_t *k, const char *name)
{
    for (size_t i = 0; i < k->count; i++)
        if (!strcmp(k->kinds[i]->name, name)) return k->kinds[i];
    return NULL;
}
