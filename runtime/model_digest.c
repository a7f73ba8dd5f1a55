/* The identity and run digests of a model built from a file, and the
 * start-up check that every rank holds the same model (model_digest.h).
 *
 * One walk over the model lists its items in a fixed order (counts before
 * the lists they count, the identity before the run's items); the digests
 * chain the items' hashes, and on a mismatch the same walk finds the first
 * differing item and says what it is on both ranks. Each rank walks the
 * model as it built it, after its own kinds' setups, so whatever a setup
 * changed on one rank only shows up here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/hmap.h"
#include "kairos/stop.h"
#include "runtime/model_digest.h"
#include "schedulers/model_private.h"

typedef enum item {
    IT_PRECISION, IT_SEED, IT_SIM_COUNT, IT_SIM_NAME, IT_SIM_KIND, IT_SIM_FORMALISM, IT_SIM_STEP, IT_EDGE_COUNT,
    IT_EDGE, IT_ENTRY_COUNT, IT_ENTRY_PARAMS, IT_COMPONENT_COUNT, IT_COMPONENT, IT_TYPE_COUNT, IT_TYPE,
    IT_PLUGIN_COUNT, IT_PLUGIN,
    /* the run's items; the identity stops before them */
    IT_END_TIME, IT_MAPPING, IT_SYNC, IT_SIM_PIN,
    /* part of the identity, emitted with it, but numbered last so that
     * models without it keep their digests */
    IT_STOP_LOOKAHEAD,
    /* a run item added later, numbered after the others for the same reason */
    IT_SIM_EMULATION
} item_t;

enum { MODE_DIGEST, MODE_HASHES, MODE_DESCRIBE };

typedef struct walk {
    const kr__model_file_t *f;
    kr_model_t *m;
    int mode;
    uint64_t h, identity;
    size_t index;                 /* items so far */
    size_t identity_items;        /* items of the identity (MODE_HASHES) */
    uint64_t *hashes;             /* MODE_HASHES: one per item (index items) */
    json_t *values;               /* MODE_HASHES, when asked: each item's value as describe gives it */
    size_t cap;
    bool failed;
    bool edges_in_file_order;     /* the identity checkpoints before the canonical order kept */
    size_t want;                  /* MODE_DESCRIBE: the item to describe */
    char *key, *val;              /* its text, KEY_CAP bytes each */
} walk_t;

#define KEY_CAP 400

static uint64_t item_hash(item_t what, uint32_t a, uint32_t b, uint64_t value)
{
    uint64_t x = kr__mix64(((uint64_t)what << 32 | a) + 0x6b6169726f73ULL);
    x = kr__mix64(x ^ ((uint64_t)b * 0x9e3779b97f4a7c15ULL));
    return kr__mix64(x ^ value);
}

static double units(const walk_t *w, kr_time_t t) { return kr_time_to_units(t, w->f->precision); }

static const char *sim_name(const walk_t *w, uint32_t i)
{
    kr_sim_t *s = kr_model_sim(w->m, i);
    return s ? kr_sim_name(s) : "?";
}

static json_t *entry_params(const walk_t *w, uint32_t i)
{
    return json_object_get(json_array_get(json_object_get(w->f->root, "simulators"), i), "params");
}

static const char *plugin_name(const walk_t *w, uint32_t i)
{
    const char *s = json_string_value(json_array_get(json_object_get(w->f->root, "plugins"), i));
    return s ? s : "?";
}

static const char *mapping_name(kr__mapping_t m)
{
    return m == KR__MAP_BLOCK ? "block" : m == KR__MAP_METIS ? "metis" : "round-robin";
}

/* The text of one item: what it is and its value on this rank. */
static void describe(walk_t *w, item_t what, uint32_t a, uint32_t b, uint64_t v)
{
    char *k = w->key, *s = w->val;
    const kr__model_file_t *f = w->f;
    switch (what) {
    case IT_PRECISION: snprintf(k, KEY_CAP, "precision"); snprintf(s, KEY_CAP, "%llu ticks per unit", (unsigned long long)v); break;
    case IT_SEED: snprintf(k, KEY_CAP, "seed"); snprintf(s, KEY_CAP, "%llu", (unsigned long long)v); break;
    case IT_SIM_COUNT: snprintf(k, KEY_CAP, "simulators"); snprintf(s, KEY_CAP, "%llu", (unsigned long long)v); break;
    case IT_SIM_NAME: snprintf(k, KEY_CAP, "simulator %u", a); snprintf(s, KEY_CAP, "'%s'", sim_name(w, a)); break;
    case IT_SIM_KIND:
        snprintf(k, KEY_CAP, "simulator '%s' kind", sim_name(w, a));
        snprintf(s, KEY_CAP, "%s", a < f->sim_count ? f->sims[a].kind : "none (added by a kind's setup)");
        break;
    case IT_SIM_FORMALISM:
        snprintf(k, KEY_CAP, "simulator '%s' formalism", sim_name(w, a));
        snprintf(s, KEY_CAP, "%s", kr_formalism_name((kr_formalism_t)v));
        break;
    case IT_SIM_STEP:
        snprintf(k, KEY_CAP, "simulator '%s' time step", sim_name(w, a));
        if (v) snprintf(s, KEY_CAP, "%.15g", units(w, v));
        else snprintf(s, KEY_CAP, "none");
        break;
    case IT_EDGE_COUNT: snprintf(k, KEY_CAP, "dependencies"); snprintf(s, KEY_CAP, "%llu", (unsigned long long)v); break;
    case IT_EDGE:
        snprintf(k, KEY_CAP, "simulator '%s' promise to '%s'", sim_name(w, a), sim_name(w, b));
        snprintf(s, KEY_CAP, "%.15g", units(w, v));
        break;
    case IT_ENTRY_COUNT:
        snprintf(k, KEY_CAP, "simulator entries in the file");
        snprintf(s, KEY_CAP, "%llu", (unsigned long long)v);
        break;
    case IT_ENTRY_PARAMS: {
        snprintf(k, KEY_CAP, "simulators[%u].params", a);
        /* 15 digits for people (2.4, not 2.3999999999999999); the hash keeps 17 */
        char *text = json_dumps(entry_params(w, a), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY |
                                JSON_REAL_PRECISION(15));
        snprintf(s, KEY_CAP, "%s", text ? text : "?");
        if (text && strlen(text) >= KEY_CAP) memcpy(s + KEY_CAP - 4, "...", 4);
        free(text);
        break;
    }
    case IT_COMPONENT_COUNT:
        snprintf(k, KEY_CAP, "registered components");
        snprintf(s, KEY_CAP, "%llu", (unsigned long long)v);
        break;
    case IT_COMPONENT: {
        const kr_component_info_t *info = kr_component_info(kr_model_registry(w->m), a + 1);
        snprintf(k, KEY_CAP, "component %u", a + 1);
        if (info)
            snprintf(s, KEY_CAP, "'%s' (%zu bytes, align %zu, %zu fields%s)", info->name, info->size, info->align,
                     info->field_count, info->vtbl ? ", a behavior" : "");
        else snprintf(s, KEY_CAP, "none");
        break;
    }
    case IT_TYPE_COUNT: snprintf(k, KEY_CAP, "event types"); snprintf(s, KEY_CAP, "%llu", (unsigned long long)v); break;
    case IT_TYPE:
        snprintf(k, KEY_CAP, "event type %u", a + 1);
        snprintf(s, KEY_CAP, "'%s' (%zu bytes)", kr_model_event_type_name(w->m, a + 1),
                 kr_model_event_type_size(w->m, a + 1));
        break;
    case IT_PLUGIN_COUNT: snprintf(k, KEY_CAP, "plugins"); snprintf(s, KEY_CAP, "%llu", (unsigned long long)v); break;
    case IT_PLUGIN:
        snprintf(k, KEY_CAP, "plugins[%u] (%s)", a, plugin_name(w, a));
        if (b == UINT32_MAX) snprintf(s, KEY_CAP, "an unreadable file");
        else snprintf(s, KEY_CAP, "a file of %u bytes with digest %016llx", b, (unsigned long long)v);
        break;
    case IT_END_TIME: snprintf(k, KEY_CAP, "end time"); snprintf(s, KEY_CAP, "%.15g", units(w, v)); break;
    case IT_MAPPING: snprintf(k, KEY_CAP, "mapping"); snprintf(s, KEY_CAP, "%s", mapping_name((kr__mapping_t)v)); break;
    case IT_SYNC:
        snprintf(k, KEY_CAP, "sync");
        snprintf(s, KEY_CAP, "%s", kr__sync_name((kr_sync_algorithm_t)v));
        break;
    case IT_STOP_LOOKAHEAD:
        snprintf(k, KEY_CAP, "stop lookahead");
        snprintf(s, KEY_CAP, "%.15g", units(w, v));
        break;
    case IT_SIM_PIN:
        snprintf(k, KEY_CAP, "simulator '%s' rank", sim_name(w, a));
        if (v) snprintf(s, KEY_CAP, "pinned to %llu", (unsigned long long)(v - 1));
        else snprintf(s, KEY_CAP, "free");
        break;
    case IT_SIM_EMULATION:
        snprintf(k, KEY_CAP, "simulator '%s' emulation settings and --replay", sim_name(w, a));
        snprintf(s, KEY_CAP, "digest %016llx", (unsigned long long)v);
        break;
    }
}

static void emit(walk_t *w, item_t what, uint32_t a, uint32_t b, uint64_t value)
{
    uint64_t x = item_hash(what, a, b, value);
    size_t i = w->index++;
    switch (w->mode) {
    case MODE_DIGEST:
        w->h = kr__mix64(w->h * 31 + x);
        break;
    case MODE_HASHES:
        if (i == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 1024;
            uint64_t *h = realloc(w->hashes, cap * sizeof *h);
            if (!h) { w->failed = true; return; }
            w->hashes = h;
            w->cap = cap;
        }
        if (!w->failed) w->hashes[i] = x;
        if (w->values && !w->failed) {
            describe(w, what, a, b, value);
            if (json_array_append_new(w->values, json_string(w->val))) w->failed = true;
        }
        break;
    case MODE_DESCRIBE:
        if (i == w->want) describe(w, what, a, b, value);
        break;
    }
}

/* The bytes of a plug-in file: a stale build on one node differs. */
static uint64_t file_digest(const char *path, uint32_t *size)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        *size = UINT32_MAX;
        return 0;
    }
    char buf[65536];
    size_t n, total = 0;
    uint64_t h = 0x706c7567696eULL;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        h = kr__hash_bytes(buf, n, h);
        total += n;
    }
    bool bad = ferror(in);
    fclose(in);
    *size = bad ? UINT32_MAX : total >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)total;
    return bad ? 0 : h;
}

static uint64_t text_hash(const char *s) { return s ? kr__hash_bytes(s, strlen(s), 0x6b696e64ULL) : 0; }

static int by_pair(const void *a, const void *b)
{
    const kr__edge_t *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

/* The dependencies by (from, to): their order in the file changes nothing a
 * run does (no edge is found by its index in what a run computes or a
 * checkpoint keeps), so a model file that lists them in another order is
 * the same model. */
static void emit_edges(walk_t *w)
{
    const kr_model_t *m = w->m;
    kr__edge_t *sorted = w->edges_in_file_order ? NULL : malloc((m->edge_count ? m->edge_count : 1) * sizeof *sorted);
    if (!sorted && !w->edges_in_file_order) {
        w->failed = true;
        return;
    }
    if (sorted && m->edge_count) {
        memcpy(sorted, m->edges, m->edge_count * sizeof *sorted);
        qsort(sorted, m->edge_count, sizeof *sorted, by_pair);
    }
    const kr__edge_t *edges = sorted ? sorted : m->edges;
    for (uint32_t i = 0; i < m->edge_count; i++) emit(w, IT_EDGE, edges[i].from, edges[i].to, edges[i].promise);
    free(sorted);
}

static void walk(walk_t *w)
{
    const kr__model_file_t *f = w->f;
    kr_model_t *m = w->m;
    w->index = 0;
    w->h = 0x6964656e74697479ULL;
    emit(w, IT_PRECISION, 0, 0, kr_model_precision(m));
    emit(w, IT_SEED, 0, 0, kr_model_seed(m));
    uint32_t n = (uint32_t)kr_model_sim_count(m);
    emit(w, IT_SIM_COUNT, 0, 0, n);
    for (uint32_t i = 0; i < n; i++) {
        kr_sim_t *s = kr_model_sim(m, i);
        emit(w, IT_SIM_NAME, i, 0, text_hash(kr_sim_name(s)));
        emit(w, IT_SIM_KIND, i, 0, text_hash(i < f->sim_count ? f->sims[i].kind : NULL));
        emit(w, IT_SIM_FORMALISM, i, 0, (uint64_t)kr_sim_formalism(s));
        emit(w, IT_SIM_STEP, i, 0, kr_sim_time_step(s));
    }
    emit(w, IT_EDGE_COUNT, 0, 0, m->edge_count);
    emit_edges(w);
    json_t *entries = json_object_get(f->root, "simulators");
    emit(w, IT_ENTRY_COUNT, 0, 0, json_array_size(entries));
    for (size_t i = 0; i < json_array_size(entries); i++) {
        /* the walk that describes needs no hash of what it does not describe */
        uint64_t v = 0;
        if (w->mode != MODE_DESCRIBE || w->index == w->want) {
            char *text = json_dumps(entry_params(w, (uint32_t)i), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY |
                                    JSON_REAL_PRECISION(17));
            v = text_hash(text);
            if (!text) w->failed = true;
            free(text);
        }
        emit(w, IT_ENTRY_PARAMS, (uint32_t)i, 0, v);
    }
    kr_registry_t *reg = kr_model_registry(m);
    uint32_t nc = kr_registry_count(reg);
    emit(w, IT_COMPONENT_COUNT, 0, 0, nc);
    for (uint32_t i = 0; i < nc; i++) {
        const kr_component_info_t *info = kr_component_info(reg, i + 1);
        uint64_t v = info ? kr__hash_bytes(info->name, strlen(info->name), info->size * 31 + info->align) : 0;
        if (info) v = kr__mix64(v ^ (info->vtbl ? 1u : 0u) ^ ((uint64_t)info->field_count << 8));
        emit(w, IT_COMPONENT, i, 0, v);
    }
    uint32_t nt = kr_model_event_type_count(m);
    emit(w, IT_TYPE_COUNT, 0, 0, nt);
    for (uint32_t i = 0; i < nt; i++) {
        const char *name = kr_model_event_type_name(m, i + 1);
        emit(w, IT_TYPE, i, 0, name ? kr__hash_bytes(name, strlen(name), kr_model_event_type_size(m, i + 1)) : 0);
    }
    /* Plug-ins by the bytes of their files, opened as model_file.c opened
     * them (relative to the model file's folder). */
    json_t *plugins = json_object_get(f->root, "plugins");
    emit(w, IT_PLUGIN_COUNT, 0, 0, json_array_size(plugins));
    for (size_t i = 0; i < json_array_size(plugins); i++) {
        const char *name = plugin_name(w, (uint32_t)i);
        char full[4096];
        if (name[0] == '/') snprintf(full, sizeof full, "%s", name);
        else snprintf(full, sizeof full, "%s/%s", f->dir, name);
        uint32_t size = 0;
        uint64_t v = w->mode != MODE_DESCRIBE || w->index == w->want ? file_digest(full, &size) : 0;
        emit(w, IT_PLUGIN, (uint32_t)i, size, v);
    }
    /* A stop lookahead changes where a stopped run ends (kairos/stop.h). */
    if (kr_model_stop_lookahead(m) != KR_TIME_NEVER) emit(w, IT_STOP_LOOKAHEAD, 0, 0, kr_model_stop_lookahead(m));
    w->identity = w->h;
    w->identity_items = w->index;
    emit(w, IT_END_TIME, 0, 0, kr_model_end_time(m));
    emit(w, IT_MAPPING, 0, 0, (uint64_t)f->mapping);
    emit(w, IT_SYNC, 0, 0, (uint64_t)m->sync_asked); /* asked for: auto stays auto */
    for (size_t i = 0; i < f->sim_count; i++)
        emit(w, IT_SIM_PIN, (uint32_t)i, 0, f->sims[i].rank < 0 ? 0 : (uint64_t)f->sims[i].rank + 1);
    /* An emulation's speed, input, log and replay: how this run meets the
     * outside, the same on every rank (the rank that runs it reads them). */
    for (size_t i = 0; i < f->sim_count; i++) {
        const kr__sim_entry_t *e = &f->sims[i];
        if (!e->emulation && !e->replay) continue;
        char *text = e->emulation ? json_dumps(e->emulation, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (e->emulation && !text) w->failed = true;
        uint64_t v = text ? text_hash(text) : 0;
        if (e->replay) v = kr__mix64(v ^ text_hash(e->replay));
        free(text);
        emit(w, IT_SIM_EMULATION, (uint32_t)i, 0, v);
    }
}

kr_status_t kr__model_digest(const kr__model_file_t *f, kr_model_t *m, kr__model_digest_t *out)
{
    walk_t w = { .f = f, .m = m, .mode = MODE_DIGEST };
    walk(&w);
    if (w.failed) return kr__fail(KR_ERR_NOMEM, "out of memory computing the model's digest");
    out->identity = out->identity_file_order = w.identity;
    out->run = w.h;
    bool sorted = true;
    for (uint32_t i = 1; sorted && i < m->edge_count; i++) sorted = by_pair(&m->edges[i - 1], &m->edges[i]) < 0;
    if (!sorted) {
        walk_t legacy = { .f = f, .m = m, .mode = MODE_DIGEST, .edges_in_file_order = true };
        walk(&legacy);
        if (legacy.failed) return kr__fail(KR_ERR_NOMEM, "out of memory computing the model's digest");
        out->identity_file_order = legacy.identity;
    }
    return KR_OK;
}

kr_status_t kr__model_identity_items(const kr__model_file_t *f, kr_model_t *m, uint64_t **hashes, size_t *count,
                                     json_t **values)
{
    char key[KEY_CAP], val[KEY_CAP];
    walk_t w = { .f = f, .m = m, .mode = MODE_HASHES, .key = key, .val = val, .values = values ? json_array() : NULL };
    if (values && !w.values) w.failed = true;
    else walk(&w);
    if (w.failed) {
        free(w.hashes);
        json_decref(w.values);
        return kr__fail(KR_ERR_NOMEM, "out of memory computing the model's digest");
    }
    *hashes = w.hashes;
    *count = w.identity_items;
    if (values) {
        /* (the identity's items only: the walk went on through the run's) */
        while (json_array_size(w.values) > w.identity_items) json_array_remove(w.values, json_array_size(w.values) - 1);
        *values = w.values;
    }
    return KR_OK;
}

void kr__model_describe_item(const kr__model_file_t *f, kr_model_t *m, size_t index, char *out, size_t cap)
{
    char key[KEY_CAP], val[KEY_CAP];
    walk_t d = { .f = f, .m = m, .mode = MODE_DESCRIBE, .want = index, .key = key, .val = val };
    snprintf(key, KEY_CAP, "the model's items");
    snprintf(val, KEY_CAP, "nothing more");
    walk(&d);
    snprintf(out, cap, "%s: %s", key, val);
}

/* Every rank learns the first item (lowest index, then lowest rank) where
 * some rank differs from rank 0, and fails with the same message. */
static kr_status_t name_difference(const kr__model_file_t *f, kr_model_t *m, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    walk_t w = { .f = f, .m = m, .mode = MODE_HASHES };
    walk(&w);
    int failed = w.failed, any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
    if (any_failed) {
        free(w.hashes);
        return kr__fail(KR_ERR_NOMEM, "out of memory comparing the ranks' models");
    }
    uint64_t n0 = w.index;
    MPI_Bcast(&n0, 1, MPI_UINT64_T, 0, comm);
    uint64_t *ref = rank == 0 ? w.hashes : malloc((n0 ? n0 : 1) * sizeof *ref);
    failed = !ref;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
    if (any_failed) {
        if (ref != w.hashes) free(ref);
        free(w.hashes);
        return kr__fail(KR_ERR_NOMEM, "out of memory comparing the ranks' models");
    }
    MPI_Bcast(ref, (int)n0, MPI_UINT64_T, 0, comm);
    size_t common = w.index < n0 ? w.index : (size_t)n0, first = SIZE_MAX;
    for (size_t i = 0; i < common && first == SIZE_MAX; i++)
        if (w.hashes[i] != ref[i]) first = i;
    if (first == SIZE_MAX && w.index != n0) first = common;
    if (ref != w.hashes) free(ref);
    free(w.hashes);
    struct { int index; int rank; } mine = { first == SIZE_MAX || first > INT32_MAX - 1 ? INT32_MAX : (int)first, rank },
                                     worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MINLOC, comm);
    if (worst.index == INT32_MAX) return KR_OK; /* the digests differed, the items do not: cannot happen */
    /* The item as rank 0 and as the differing rank have it. */
    char text[2][2 * KEY_CAP];
    for (int side = 0; side < 2; side++) {
        int who = side ? worst.rank : 0;
        memset(text[side], 0, sizeof text[side]);
        if (rank == who) {
            walk_t d = { .f = f, .m = m, .mode = MODE_DESCRIBE, .want = (size_t)worst.index, .key = text[side],
                         .val = text[side] + KEY_CAP };
            snprintf(d.key, KEY_CAP, "the model's items");
            snprintf(d.val, KEY_CAP, "nothing more");
            walk(&d);
        }
        MPI_Bcast(text[side], (int)sizeof text[side], MPI_CHAR, who, comm);
    }
    const char *k0 = text[0], *v0 = text[0] + KEY_CAP, *k1 = text[1], *v1 = text[1] + KEY_CAP;
    if (!strcmp(k0, k1))
        return kr__fail(KR_ERR_MISMATCH, "%s: the model differs between ranks: %s: %s on rank 0, %s on rank %d",
                        f->path, k0, v0, v1, worst.rank);
    return kr__fail(KR_ERR_MISMATCH, "%s: the model differs between ranks: %s: %s on rank 0, but %s: %s on rank %d",
                    f->path, k0, v0, k1, v1, worst.rank);
}

kr_status_t kr__model_digest_check(const kr__model_file_t *f, kr_model_t *m, int ranks, MPI_Comm comm,
                                   kr__model_digest_t *out)
{
    kr_status_t st = kr__model_digest(f, m, out);
    if (ranks <= 1) return st;
    /* Every rank takes part even when its own walk failed. */
    uint64_t mine[3] = { out->identity, out->run, st != KR_OK }, ref[3];
    memcpy(ref, mine, sizeof ref);
    MPI_Bcast(ref, 3, MPI_UINT64_T, 0, comm);
    int differ = st ? 2 : (mine[0] != ref[0] || mine[1] != ref[1]), worst = 0;
    MPI_Allreduce(&differ, &worst, 1, MPI_INT, MPI_MAX, comm);
    if (worst == 2) return st ? st : kr__fail(KR_ERR_NOMEM, "out of memory computing the model's digest on a rank");
    if (!worst) return KR_OK;
    return name_difference(f, m, comm);
}
