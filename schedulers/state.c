/* Per-simulator state (kairos/state.h): state types (which kr_sim_context
 * has always called context types), one block of each per simulator, the
 * block a simulator's kind declared as its state, and the slots the
 * runtime owns inside blocks. */
#include <stdlib.h>
#include <string.h>
#include "kairos/digest.h"
#include "kairos/dist.h"
#include "kairos/state.h"
#include "kairos/statistics.h"
#include "base/error.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "schedulers/model_private.h"

size_t kr__field_bytes(kr_field_type_t t)
{
    switch (t) {
    case KR_FIELD_BOOL: case KR_FIELD_I8: case KR_FIELD_U8: return 1;
    case KR_FIELD_I16: case KR_FIELD_U16: return 2;
    case KR_FIELD_I32: case KR_FIELD_U32: case KR_FIELD_F32: return 4;
    case KR_FIELD_I64: case KR_FIELD_U64: case KR_FIELD_F64: case KR_FIELD_COUNTER: return 8;
    case KR_FIELD_ENTITY: return sizeof(kr_entity_t);
    case KR_FIELD_TALLY: return sizeof(kr_tally_t);
    case KR_FIELD_TIMEAVG: return sizeof(kr_timeavg_t);
    case KR_FIELD_BATCHMEANS: return sizeof(kr_batchmeans_t);
    case KR_FIELD_HISTOGRAM: return sizeof(kr_histogram_t);
    case KR_FIELD_DIST: return sizeof(kr_dist_t);
    case KR_FIELD_ENTITY_LIST: return sizeof(kr_entity_list_t);
    case KR_FIELD_STRING: return sizeof(char *);
    case KR_FIELD_NUMBER_LIST: return sizeof(kr_number_list_t);
    }
    return 0;
}

/* Copies a field table ending with { 0 }, checking every field lies inside
 * the block; NULL with kr_last_error on failure, or for no table. */
static kr_field_t *copy_fields(const char *type, const kr_field_t *fields, size_t size, bool *ok)
{
    *ok = true;
    if (!fields) return NULL;
    size_t n = 0;
    while (fields[n].name) n++;
    kr_field_t *copy = calloc(n + 1, sizeof *copy);
    if (!copy) {
        *ok = false;
        kr__fail(KR_ERR_NOMEM, "kr_model_context_type: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        size_t bytes = kr__field_bytes(fields[i].type), count = fields[i].count ? fields[i].count : 1;
        if (!bytes || fields[i].offset > size || count * bytes > size - fields[i].offset) {
            kr__fail(KR_ERR_INVALID_ARG, "state type '%s': field '%s' has %s", type, fields[i].name,
                     bytes ? "no room in the block" : "an unknown type");
            free(copy);
            *ok = false;
            return NULL;
        }
        copy[i] = fields[i];
        copy[i].count = (uint32_t)count;
    }
    return copy;
}

kr_context_type_t kr_model_context_type(kr_model_t *m, const kr_context_desc_t *d)
{
    if (kr__model_refuse_change(m, "kr_model_context_type")) return 0;
    if (!d || !d->name || !d->name[0] || !d->size) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_context_type: a context type needs a name and a size");
        return 0;
    }
    if (kr_model_find_context_type(m, d->name)) {
        kr__fail(KR_ERR_EXISTS, "kr_model_context_type: context type '%s' is already registered", d->name);
        return 0;
    }
    bool ok;
    kr_field_t *fields = copy_fields(d->name, d->fields, d->size, &ok);
    if (!ok) return 0;
    kr__context_rec_t *cs = realloc(m->contexts, (m->context_count + 1) * sizeof *cs);
    char *name = strdup(d->name);
    if (cs) m->contexts = cs;
    if (!cs || !name) {
        free(fields);
        free(name);
        kr__fail(KR_ERR_NOMEM, "kr_model_context_type: out of memory");
        return 0;
    }
    /* Every simulator's table of blocks grows with the types. */
    for (uint32_t i = 0; i < m->sim_count; i++) {
        void **p = realloc(m->sims[i]->contexts, (m->context_count + 1) * sizeof *p);
        if (!p) {
            free(fields);
            free(name);
            kr__fail(KR_ERR_NOMEM, "kr_model_context_type: out of memory");
            return 0;
        }
        p[m->context_count] = NULL;
        m->sims[i]->contexts = p;
    }
    cs[m->context_count] = (kr__context_rec_t){ .name = name, .desc = *d };
    cs[m->context_count].desc.name = name;
    cs[m->context_count].desc.fields = fields;
    return ++m->context_count;
}

kr_context_type_t kr_model_find_context_type(const kr_model_t *m, const char *name)
{
    for (uint32_t i = 0; m && name && i < m->context_count; i++)
        if (!strcmp(m->contexts[i].name, name)) return i + 1;
    return 0;
}

void *kr_sim_context(kr_sim_t *s, kr_context_type_t type)
{
    if (!s) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_sim_context: null simulator");
        return NULL;
    }
    kr_model_t *m = s->model;
    if (type < 1 || type > m->context_count) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_sim_context: unknown context type %u", type);
        return NULL;
    }
    if (!s->contexts[type - 1]) {
        s->contexts[type - 1] = calloc(1, m->contexts[type - 1].desc.size);
        if (!s->contexts[type - 1]) kr__fail(KR_ERR_NOMEM, "kr_sim_context: out of memory");
    }
    return s->contexts[type - 1];
}

void *kr_sim_set_state(kr_sim_t *s, kr_context_type_t type)
{
    if (!s) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_sim_set_state: null simulator");
        return NULL;
    }
    if (s->state_type && s->state_type != type) {
        kr__fail(KR_ERR_STATE, "kr_sim_set_state: simulator '%s' has a state already", s->name);
        return NULL;
    }
    void *block = kr_sim_context(s, type);
    if (!block) return NULL;
    /* Slots whose zero is not their empty value. */
    const kr_field_t *fields = s->model->contexts[type - 1].desc.fields;
    for (size_t i = 0; fields && fields[i].name; i++)
        for (uint32_t k = 0; fields[i].type == KR_FIELD_BATCHMEANS && k < fields[i].count; k++)
            kr_batchmeans_init((kr_batchmeans_t *)(void *)((char *)block + fields[i].offset +
                                                           k * sizeof(kr_batchmeans_t)));
    s->state = block;
    s->state_type = type;
    return block;
}

void *kr_sim_state(kr_sim_t *s) { return s ? s->state : NULL; }

void kr_sim_set_on_step(kr_sim_t *s, void (*fn)(kr_sim_t *sim))
{
    if (s) s->on_step = fn;
}

/* ---- digests of blocks ---- */

static uint64_t add(uint64_t h, uint64_t v) { return kr_digest_mix(h ^ kr_digest_mix(v + 0x9e3779b97f4a7c15ULL)); }

static uint64_t add_bytes(uint64_t h, const void *p, size_t n)
{
    uint64_t v = 0;
    memcpy(&v, p, n < 8 ? n : 8);
    return add(h, v);
}

static uint64_t add_doubles(uint64_t h, const double *d, size_t n)
{
    for (size_t i = 0; i < n; i++) h = add_bytes(h, &d[i], sizeof *d);
    return h;
}

static uint64_t add_entity(uint64_t h, kr_world_t *w, kr_entity_t e)
{
    if (e == KR_ENTITY_INVALID) return add(h, 0x5eed);
    return add(h, 0x5e7 ^ (w ? kr_entity_digest(w, e) : 0));
}

/* One element of a field or slot. Distributions are a kind's parameters,
 * not its state: they do not count. */
static uint64_t element(uint64_t h, kr_world_t *w, kr_field_type_t type, const char *at)
{
    switch (type) {
    case KR_FIELD_ENTITY: {
        kr_entity_t e;
        memcpy(&e, at, sizeof e);
        return add_entity(h, w, e);
    }
    case KR_FIELD_TALLY: {
        const kr_tally_t *t = (const void *)at;
        return add_doubles(add(h, t->count), (const double[]){ t->mean, t->m2, t->min, t->max }, 4);
    }
    case KR_FIELD_TIMEAVG: {
        const kr_timeavg_t *a = (const void *)at;
        return add_doubles(add(add(h, a->start), a->last), (const double[]){ a->value, a->area, a->min, a->max }, 4);
    }
    case KR_FIELD_BATCHMEANS: {
        const kr_batchmeans_t *b = (const void *)at;
        h = add_doubles(add(add(add(h, b->batch_size), b->full), b->in_current), b->sums, b->full);
        return add_doubles(add(h, b->all.count), (const double[]){ b->current, b->all.mean, b->all.m2 }, 3);
    }
    case KR_FIELD_HISTOGRAM: {
        const kr_histogram_t *g = (const void *)at;
        h = add(add(add(h, g->under), g->over), g->bins);
        for (size_t i = 0; g->counts && i < g->bins; i++) h = add(h, g->counts[i]);
        return h;
    }
    case KR_FIELD_ENTITY_LIST: {
        const kr_entity_list_t *l = (const void *)at;
        h = add(h, l->count);
        for (uint32_t i = 0; i < l->count; i++) h = add_entity(h, w, l->items[i]);
        return h;
    }
    case KR_FIELD_STRING: {
        const char *text;
        memcpy(&text, at, sizeof text);
        return add(h, text ? kr__hash_bytes(text, strlen(text), 0) : 0);
    }
    case KR_FIELD_NUMBER_LIST: {
        const kr_number_list_t *l = (const void *)at;
        return add_doubles(add(h, l->count), l->values, l->values ? l->count : 0);
    }
    case KR_FIELD_DIST: return h;
    default: return add_bytes(h, at, kr__field_bytes(type));
    }
}

uint64_t kr_fields_digest(kr_world_t *w, const void *block, const kr_field_t *fields)
{
    uint64_t h = 0x7374617465ULL;
    for (size_t i = 0; block && fields && fields[i].name; i++) {
        uint32_t n = fields[i].count ? fields[i].count : 1;
        for (uint32_t k = 0; k < n; k++)
            h = element(h, w, fields[i].type, (const char *)block + fields[i].offset + k * kr__field_bytes(fields[i].type));
    }
    return h;
}

/* Frees what the slots of one block own. */
static void free_slots(void *block, const kr_field_t *fields)
{
    for (size_t i = 0; fields && fields[i].name; i++) {
        for (uint32_t k = 0; k < fields[i].count; k++) {
            char *at = (char *)block + fields[i].offset + k * kr__field_bytes(fields[i].type);
            switch (fields[i].type) {
            case KR_FIELD_DIST: kr_dist_fini((kr_dist_t *)(void *)at); break;
            case KR_FIELD_HISTOGRAM: {
                kr_histogram_t *h = (kr_histogram_t *)(void *)at;
                free(h->counts);
                h->counts = NULL;
                break;
            }
            case KR_FIELD_ENTITY_LIST: kr_entity_list_fini((kr_entity_list_t *)(void *)at); break;
            case KR_FIELD_STRING: {
                char **text = (char **)(void *)at;
                free(*text);
                *text = NULL;
                break;
            }
            case KR_FIELD_NUMBER_LIST: {
                kr_number_list_t *l = (kr_number_list_t *)(void *)at;
                free((void *)l->values);
                *l = (kr_number_list_t){ 0 };
                break;
            }
            default: break;
            }
        }
    }
}

/* ---- statistics by name ---- */

typedef struct kr__named_stat {
    char *name;
    kr_field_type_t type;
    void *value;                /* its own allocation: the pointer stays valid */
} kr__named_stat_t;

static void *named_stat(kr_sim_t *s, const char *name, kr_field_type_t type, bool *created)
{
    *created = false;
    if (!s || !name || !name[0]) {
        kr__fail(KR_ERR_INVALID_ARG, "statistic by name: a simulator and a name are needed");
        return NULL;
    }
    for (uint32_t i = 0; i < s->stat_count; i++) {
        if (strcmp(s->stats[i].name, name)) continue;
        if (s->stats[i].type == type) return s->stats[i].value;
        kr__fail(KR_ERR_EXISTS, "simulator '%s': statistic '%s' is of another type", s->name, name);
        return NULL;
    }
    if (s->stat_count == s->stat_cap && KR__GROW_U32(s->stats, s->stat_cap, s->stat_count + 1, 4, "statistic by name"))
        return NULL;
    void *value = calloc(1, kr__field_bytes(type));
    char *copy = strdup(name);
    if (!value || !copy) {
        free(value);
        free(copy);
        kr__fail(KR_ERR_NOMEM, "statistic by name: out of memory");
        return NULL;
    }
    s->stats[s->stat_count++] = (kr__named_stat_t){ copy, type, value };
    *created = true;
    return value;
}

uint64_t *kr_sim_counter(kr_sim_t *s, const char *name)
{
    bool created;
    return named_stat(s, name, KR_FIELD_COUNTER, &created);
}

kr_tally_t *kr_sim_tally(kr_sim_t *s, const char *name)
{
    bool created;
    return named_stat(s, name, KR_FIELD_TALLY, &created);
}

kr_timeavg_t *kr_sim_timeavg(kr_sim_t *s, const char *name)
{
    bool created;
    kr_timeavg_t *a = named_stat(s, name, KR_FIELD_TIMEAVG, &created);
    if (created) kr_timeavg_init(a, s->now, 0);
    return a;
}

kr_batchmeans_t *kr_sim_batchmeans(kr_sim_t *s, const char *name)
{
    bool created;
    kr_batchmeans_t *b = named_stat(s, name, KR_FIELD_BATCHMEANS, &created);
    if (created) kr_batchmeans_init(b);
    return b;
}

kr_histogram_t *kr_sim_histogram(kr_sim_t *s, const char *name, double lo, double hi, size_t bins)
{
    bool created;
    kr_histogram_t *h = named_stat(s, name, KR_FIELD_HISTOGRAM, &created);
    if (!h) return NULL;
    if (created) {
        if (kr_histogram_init(h, lo, hi, bins) == KR_OK) return h;
        /* a bad range: forget the statistic, so a later call may try again */
        s->stat_count--;
        free(s->stats[s->stat_count].name);
        free(h);
        return NULL;
    }
    if (h->lo == lo && h->hi == hi && h->bins == bins) return h;
    kr__fail(KR_ERR_EXISTS, "simulator '%s': histogram '%s' has other bins", s->name, name);
    return NULL;
}

size_t kr_sim_stat_count(const kr_sim_t *s) { return s ? s->stat_count : 0; }

const char *kr_sim_stat_at(const kr_sim_t *s, size_t i, kr_field_type_t *type, const void **value)
{
    if (!s || i >= s->stat_count) return NULL;
    if (type) *type = s->stats[i].type;
    if (value) *value = s->stats[i].value;
    return s->stats[i].name;
}

void kr__sim_states_free(kr_sim_t *s)
{
    for (uint32_t i = 0; i < s->stat_count; i++) {
        if (s->stats[i].type == KR_FIELD_HISTOGRAM) kr_histogram_fini(s->stats[i].value);
        free(s->stats[i].value);
        free(s->stats[i].name);
    }
    free(s->stats);
    s->stats = NULL;
    s->stat_count = s->stat_cap = 0;
    kr_model_t *m = s->model;
    for (uint32_t c = 0; c < m->context_count; c++) {
        if (!s->contexts || !s->contexts[c]) continue;
        if (m->contexts[c].desc.fini) m->contexts[c].desc.fini(s, s->contexts[c]);
        free_slots(s->contexts[c], m->contexts[c].desc.fields);
        free(s->contexts[c]);
        s->contexts[c] = NULL;
    }
    s->state = NULL;
}

void kr__state_types_free(kr_model_t *m)
{
    for (uint32_t i = 0; i < m->context_count; i++) {
        free(m->contexts[i].name);
        free((void *)m->contexts[i].desc.fields);
    }
    free(m->contexts);
}

/* The older one-pointer mechanism, kept for plug-ins written against it. */
void kr_sim_set_user(kr_sim_t *s, const void *tag, void *user)
{
    s->user_tag = tag;
    s->user = user;
}

void *kr_sim_user(const kr_sim_t *s, const void *tag)
{
    return s && tag && s->user_tag == tag ? s->user : NULL;
}

/* ---- checkpoints (schedulers/checkpoint.c) ----
 *
 * A block's slots and the statistics by name, element by element, each by
 * its meaning rather than its memory layout. Distributions are not saved:
 * they are parameters, which the simulator's setup builds again. */

static void put_string(kr_buf_t *b, const char *text)
{
    kr_buf_put_u8(b, text != NULL);
    if (!text) return;
    kr_buf_put_u32(b, (uint32_t)strlen(text));
    kr_buf_append(b, text, strlen(text));
}

/* A string read back (malloc'ed; NULL for none); *ok false if malformed. */
static char *get_string(kr_reader_t *r, bool *ok)
{
    if (!kr_reader_u8(r)) return NULL;
    uint32_t n = kr_reader_u32(r);
    const char *p = kr_reader_view(r, n);
    char *text = p ? malloc((size_t)n + 1) : NULL;
    if (!text) {
        *ok = false;
        return NULL;
    }
    memcpy(text, p, n);
    text[n] = '\0';
    if (strlen(text) != n) {
        free(text);
        *ok = false;
        return NULL;
    }
    return text;
}

static void put_tally(kr_buf_t *b, const kr_tally_t *t)
{
    kr_buf_put_u64(b, t->count);
    kr_buf_put_f64(b, t->mean);
    kr_buf_put_f64(b, t->m2);
    kr_buf_put_f64(b, t->min);
    kr_buf_put_f64(b, t->max);
}

static void get_tally(kr_reader_t *r, kr_tally_t *t)
{
    t->count = kr_reader_u64(r);
    t->mean = kr_reader_f64(r);
    t->m2 = kr_reader_f64(r);
    t->min = kr_reader_f64(r);
    t->max = kr_reader_f64(r);
}

static void save_element(kr_buf_t *b, kr_field_type_t type, const char *at)
{
    switch (type) {
    case KR_FIELD_TALLY: put_tally(b, (const kr_tally_t *)(const void *)at); break;
    case KR_FIELD_TIMEAVG: {
        const kr_timeavg_t *a = (const void *)at;
        kr_buf_put_u64(b, a->start);
        kr_buf_put_u64(b, a->last);
        kr_buf_put_f64(b, a->value);
        kr_buf_put_f64(b, a->area);
        kr_buf_put_f64(b, a->min);
        kr_buf_put_f64(b, a->max);
        break;
    }
    case KR_FIELD_BATCHMEANS: {
        const kr_batchmeans_t *m = (const void *)at;
        for (size_t i = 0; i < KR_BATCH_SLOTS; i++) kr_buf_put_f64(b, m->sums[i]);
        kr_buf_put_u64(b, m->batch_size);
        kr_buf_put_u32(b, m->full);
        kr_buf_put_u64(b, m->in_current);
        kr_buf_put_f64(b, m->current);
        put_tally(b, &m->all);
        break;
    }
    case KR_FIELD_HISTOGRAM: {
        const kr_histogram_t *h = (const void *)at;
        kr_buf_put_f64(b, h->lo);
        kr_buf_put_f64(b, h->hi);
        kr_buf_put_u64(b, h->counts ? h->bins : 0);
        for (size_t i = 0; h->counts && i < h->bins; i++) kr_buf_put_u64(b, h->counts[i]);
        kr_buf_put_u64(b, h->under);
        kr_buf_put_u64(b, h->over);
        kr_buf_put_u64(b, h->total);
        break;
    }
    case KR_FIELD_ENTITY_LIST: {
        const kr_entity_list_t *l = (const void *)at;
        kr_buf_put_u32(b, l->count);
        for (uint32_t i = 0; i < l->count; i++) kr_buf_put_u64(b, l->items[i]);
        break;
    }
    case KR_FIELD_STRING: {
        const char *text;
        memcpy(&text, at, sizeof text);
        put_string(b, text);
        break;
    }
    case KR_FIELD_NUMBER_LIST: {
        const kr_number_list_t *l = (const void *)at;
        kr_buf_put_u64(b, l->values ? l->count : 0);
        for (size_t i = 0; l->values && i < l->count; i++) kr_buf_put_f64(b, l->values[i]);
        break;
    }
    case KR_FIELD_DIST: break;
    default: kr_buf_append(b, at, kr__field_bytes(type)); break;
    }
}

/* Loads one element over the one in place (whose allocations it reuses or
 * frees); false if the bytes do not fit. */
static bool load_element(kr_reader_t *r, kr_field_type_t type, char *at)
{
    bool ok = true;
    switch (type) {
    case KR_FIELD_TALLY: get_tally(r, (kr_tally_t *)(void *)at); break;
    case KR_FIELD_TIMEAVG: {
        kr_timeavg_t *a = (void *)at;
        a->start = kr_reader_u64(r);
        a->last = kr_reader_u64(r);
        a->value = kr_reader_f64(r);
        a->area = kr_reader_f64(r);
        a->min = kr_reader_f64(r);
        a->max = kr_reader_f64(r);
        break;
    }
    case KR_FIELD_BATCHMEANS: {
        kr_batchmeans_t *m = (void *)at;
        for (size_t i = 0; i < KR_BATCH_SLOTS; i++) m->sums[i] = kr_reader_f64(r);
        m->batch_size = kr_reader_u64(r);
        m->full = kr_reader_u32(r);
        m->in_current = kr_reader_u64(r);
        m->current = kr_reader_f64(r);
        get_tally(r, &m->all);
        /* as kr_batchmeans_add leaves it: all slots full are merged at once */
        ok = m->full < KR_BATCH_SLOTS && m->batch_size >= 1 && m->in_current < m->batch_size;
        break;
    }
    case KR_FIELD_HISTOGRAM: {
        kr_histogram_t *h = (void *)at;
        double lo = kr_reader_f64(r), hi = kr_reader_f64(r);
        uint64_t bins = kr_reader_u64(r);
        if (bins > kr_reader_left(r) / 8) return false;
        uint64_t *counts = bins ? calloc((size_t)bins, sizeof *counts) : NULL;
        if (bins && !counts) return false;
        for (uint64_t i = 0; i < bins; i++) counts[i] = kr_reader_u64(r);
        free(h->counts);
        *h = (kr_histogram_t){ .lo = lo, .hi = hi, .bins = (size_t)bins, .counts = counts };
        h->under = kr_reader_u64(r);
        h->over = kr_reader_u64(r);
        h->total = kr_reader_u64(r);
        break;
    }
    case KR_FIELD_ENTITY_LIST: {
        kr_entity_list_t *l = (void *)at;
        uint32_t n = kr_reader_u32(r);
        if (n > kr_reader_left(r) / 8) return false;
        l->count = 0;
        for (uint32_t i = 0; i < n && ok; i++) ok = kr_entity_list_push(l, kr_reader_u64(r)) == KR_OK;
        break;
    }
    case KR_FIELD_STRING: {
        char **text = (char **)(void *)at;
        char *copy = get_string(r, &ok);
        free(*text);
        *text = copy;
        break;
    }
    case KR_FIELD_NUMBER_LIST: {
        kr_number_list_t *l = (void *)at;
        uint64_t n = kr_reader_u64(r);
        if (n > kr_reader_left(r) / 8) return false;
        double *values = n ? malloc((size_t)n * sizeof *values) : NULL;
        if (n && !values) return false;
        for (uint64_t i = 0; i < n; i++) values[i] = kr_reader_f64(r);
        free((void *)l->values);
        *l = (kr_number_list_t){ .values = values, .count = (size_t)n };
        break;
    }
    case KR_FIELD_DIST: break;
    /* a bool other than 0 or 1 would be undefined */
    case KR_FIELD_BOOL: ok = kr_reader_get(r, at, kr__field_bytes(type)) && *(const uint8_t *)at <= 1; break;
    default: ok = kr_reader_get(r, at, kr__field_bytes(type)); break;
    }
    return ok && !r->failed;
}

static void save_block(kr_buf_t *b, const void *block, const kr_field_t *fields)
{
    uint32_t n = 0;
    while (fields && fields[n].name) n++;
    kr_buf_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        put_string(b, fields[i].name);
        uint32_t count = fields[i].count ? fields[i].count : 1;
        kr_buf_put_u32(b, fields[i].type);
        kr_buf_put_u32(b, count);
        for (uint32_t k = 0; k < count; k++)
            save_element(b, fields[i].type, (const char *)block + fields[i].offset + k * kr__field_bytes(fields[i].type));
    }
}

static kr_status_t bad(const kr_sim_t *s, const char *what)
{
    return kr__fail(KR_ERR_CORRUPT, "simulator '%s': %s", s->name, what);
}

/* The fields saved must be the block's own, in the same order. */
static kr_status_t load_block(kr_sim_t *s, kr_reader_t *r, const char *type, void *block, const kr_field_t *fields)
{
    uint32_t n = 0;
    while (fields && fields[n].name) n++;
    if (kr_reader_u32(r) != n) return bad(s, "its saved state has other fields than its kind declares");
    for (uint32_t i = 0; i < n; i++) {
        bool ok = true;
        char *name = get_string(r, &ok);
        uint32_t ftype = kr_reader_u32(r), count = kr_reader_u32(r);
        bool same = ok && name && !strcmp(name, fields[i].name) && ftype == (uint32_t)fields[i].type &&
                    count == (fields[i].count ? fields[i].count : 1);
        free(name);
        if (!same) return kr__fail(KR_ERR_CORRUPT, "simulator '%s': state '%s': field '%s' was saved as another field",
                                   s->name, type, fields[i].name);
        for (uint32_t k = 0; k < count; k++)
            if (!load_element(r, fields[i].type, (char *)block + fields[i].offset + k * kr__field_bytes(fields[i].type)))
                return kr__fail(KR_ERR_CORRUPT, "simulator '%s': state '%s': field '%s' does not read back", s->name,
                                type, fields[i].name);
    }
    return KR_OK;
}

void kr__sim_states_save(kr_sim_t *s, kr_buf_t *b)
{
    kr_model_t *m = s->model;
    uint32_t blocks = 0;
    for (uint32_t c = 0; s->contexts && c < m->context_count; c++) blocks += s->contexts[c] != NULL;
    kr_buf_put_u32(b, blocks);
    for (uint32_t c = 0; s->contexts && c < m->context_count; c++) {
        if (!s->contexts[c]) continue;
        put_string(b, m->contexts[c].name);
        save_block(b, s->contexts[c], m->contexts[c].desc.fields);
    }
    kr_buf_put_u32(b, s->stat_count);
    for (uint32_t i = 0; i < s->stat_count; i++) {
        put_string(b, s->stats[i].name);
        kr_buf_put_u32(b, s->stats[i].type);
        if (s->stats[i].type == KR_FIELD_HISTOGRAM) save_element(b, KR_FIELD_HISTOGRAM, s->stats[i].value);
        else save_element(b, s->stats[i].type, s->stats[i].value);
    }
}

kr_status_t kr__sim_states_load(kr_sim_t *s, kr_reader_t *r)
{
    kr_model_t *m = s->model;
    uint32_t blocks = kr_reader_u32(r);
    if (blocks > m->context_count) return bad(s, "its saved state names more state types than the model has");
    for (uint32_t i = 0; i < blocks; i++) {
        bool ok = true;
        char *name = get_string(r, &ok);
        kr_context_type_t type = name ? kr_model_find_context_type(m, name) : 0;
        if (!type) {
            kr_status_t st = kr__fail(KR_ERR_CORRUPT, "simulator '%s': its saved state has a state type '%s' the model "
                                      "does not", s->name, name ? name : "?");
            free(name);
            return st;
        }
        void *block = kr_sim_context(s, type);
        kr_status_t st = block ? load_block(s, r, name, block, m->contexts[type - 1].desc.fields) : kr_last_status();
        free(name);
        if (st) return st;
    }
    uint32_t stats = kr_reader_u32(r);
    if (stats > kr_reader_left(r)) return bad(s, "its saved statistics are cut short");
    for (uint32_t i = 0; i < stats; i++) {
        bool ok = true, created;
        char *name = get_string(r, &ok);
        uint32_t type = kr_reader_u32(r);
        bool known = type == KR_FIELD_COUNTER || type == KR_FIELD_TALLY || type == KR_FIELD_TIMEAVG ||
                     type == KR_FIELD_BATCHMEANS || type == KR_FIELD_HISTOGRAM;
        void *value = name && known ? named_stat(s, name, (kr_field_type_t)type, &created) : NULL;
        free(name);
        if (!value || !load_element(r, (kr_field_type_t)type, value)) return bad(s, "a saved statistic does not read back");
    }
    return r->failed ? bad(s, "its saved state is cut short") : KR_OK;
}
