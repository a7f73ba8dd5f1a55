/* The model container: simulators, dependencies and promises, event and
 * context types, zero-promise groups, and the start of a run. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/rng.h"
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_private.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static uint64_t name_hash(const char *name)
{
    return kr__hash_bytes(name, strlen(name), 0x6b616972);
}

void kr__model_fail(kr_model_t *m, kr_status_t status, const char *fmt, ...)
{
    if (m->failure) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->failure_msg, sizeof m->failure_msg, fmt, ap);
    va_end(ap);
    m->failure = status ? status : KR_ERR_STATE;
}

kr_model_t *kr_model_create(const kr_model_desc_t *desc)
{
    kr_model_desc_t d = desc ? *desc : (kr_model_desc_t){ 0 };
    kr_model_t *m = calloc(1, sizeof *m);
    if (!m) { kr__fail(KR_ERR_NOMEM, "kr_model_create: out of memory"); return NULL; }
    if ((unsigned)d.sync > KR_SYNC_AUTO) {
        free(m);
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_create: unknown sync algorithm %d", (int)d.sync);
        return NULL;
    }
    m->rank = d.rank;
    m->sync = m->sync_asked = d.sync;
    m->precision = d.precision ? d.precision : KR_PRECISION_DEFAULT;
    m->seed = d.seed;
    m->end_time = d.end_time;
    m->log_level = d.log_level;
    m->log_fn = d.log_fn;
    m->log_arg = d.log_arg;
    if (d.observer) {
        m->observer = *d.observer;
        m->observed = true;
    }
    if (d.registry) {
        m->registry = d.registry;
    } else {
        m->registry = kr_registry_create();
        if (!m->registry) { free(m); return NULL; }
        m->owns_registry = true;
    }
    kr__hmap_init(&m->sim_names);
    kr__hmap_init(&m->edge_pairs);
    kr_buf_init(&m->msg);
    return m;
}

static void edge_fini(kr__edge_t *e)
{
    free(e->pending);
    for (size_t i = 0; i < e->early_count; i++) kr_buf_fini(&e->early[i]);
    free(e->early);
    free(e->early_seq);
}

static void free_groups(kr_model_t *m);

void kr_model_destroy(kr_model_t *m)
{
    if (!m) return;
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        kr__sim_states_free(s);
        kr__sim_fini(s);
        free(s);
    }
    free(m->sims);
    for (uint32_t i = 0; i < m->edge_count; i++) edge_fini(&m->edges[i]);
    free(m->edges);
    for (uint32_t i = 0; i < m->type_count; i++) free(m->types[i].name);
    free(m->types);
    kr__state_types_free(m);
    free_groups(m);
    kr__stop_fini(m);
    if (m->transport && m->owns_transport) m->transport->vtbl->destroy(m->transport);
    kr__hmap_fini(&m->sim_names);
    kr__hmap_fini(&m->edge_pairs);
    kr_buf_fini(&m->msg);
    if (m->owns_registry) kr_registry_destroy(m->registry);
    free(m->promise_source);
    free(m);
}

uint64_t kr_model_precision(const kr_model_t *m) { return m ? m->precision : 0; }
uint64_t kr_model_seed(const kr_model_t *m) { return m ? m->seed : 0; }
kr_time_t kr_model_end_time(const kr_model_t *m) { return m ? m->end_time : 0; }
kr_sync_algorithm_t kr_model_sync(const kr_model_t *m) { return m ? m->sync : KR_SYNC_NULL_MESSAGE; }
kr_registry_t *kr_model_registry(kr_model_t *m) { return m ? m->registry : NULL; }

/* Every structural change goes through here: refused after start, and it
 * drops groups computed on demand before start. */
kr_status_t kr__model_refuse_after_start(const kr_model_t *cm, const char *fn)
{
    kr_model_t *m = (kr_model_t *)cm;
    if (!m) return kr__fail(KR_ERR_INVALID_ARG, "%s: null model", fn);
    if (m->started) return kr__fail(KR_ERR_STATE, "%s: the model has started; its structure is fixed", fn);
    if (m->groups) free_groups(m);
    return KR_OK;
}

kr_status_t kr__model_refuse_change(const kr_model_t *cm, const char *fn)
{
    kr_status_t st = kr__model_refuse_after_start(cm, fn);
    if (st || !cm->acting) return st;
    char why[512];
    snprintf(why, sizeof why, "%s: called from the setup of '%s': a kind's setup must not change the model (its "
             "simulators, dependencies and types come from the model file and the kinds)", fn, cm->acting->name);
    kr__model_fail((kr_model_t *)cm, KR_ERR_STATE, "%s", why);
    return kr__fail(KR_ERR_STATE, "%s", why);
}

/* ---- event types (state types: state.c) ---- */

kr_event_type_t kr_model_find_event_type(const kr_model_t *m, const char *name)
{
    if (!m || !name) return 0;
    for (uint32_t i = 0; i < m->type_count; i++)
        if (!strcmp(m->types[i].name, name)) return i + 1;
    return 0;
}

const char *kr_model_event_type_name(const kr_model_t *m, kr_event_type_t t)
{
    const kr__event_type_rec_t *r = m ? kr__event_type(m, t) : NULL;
    return r ? r->name : "kairos";
}

uint32_t kr_model_event_type_count(const kr_model_t *m) { return m ? m->type_count : 0; }

size_t kr_model_event_type_size(const kr_model_t *m, kr_event_type_t t)
{
    const kr__event_type_rec_t *r = m ? kr__event_type(m, t) : NULL;
    return r ? r->desc.size : 0;
}

bool kr_model_event_type_is_sync(const kr_model_t *m, kr_event_type_t t)
{
    const kr__event_type_rec_t *r = m ? kr__event_type(m, t) : NULL;
    return r && r->desc.on_target_side;
}

const kr_field_t *kr_model_event_type_fields(const kr_model_t *m, kr_event_type_t t)
{
    const kr__event_type_rec_t *r = m ? kr__event_type(m, t) : NULL;
    return r ? r->desc.fields : NULL;
}

kr_event_type_t kr_model_event_type(kr_model_t *m, const kr_event_type_desc_t *d)
{
    if (kr__model_refuse_after_start(m, "kr_model_event_type")) return 0;
    if (!d || !d->name || !d->name[0]) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_event_type: an event type needs a name");
        return 0;
    }
    if (!d->on_event && !d->on_target_side) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_event_type: event type '%s' has neither on_event nor on_target_side",
                 d->name);
        return 0;
    }
    if (d->size > UINT32_MAX) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_event_type: event type '%s' payload too large", d->name);
        return 0;
    }
    /* (a local event's payload never leaves its rank; a sync-event's may) */
    if (d->on_target_side && d->size > KR__MAX_SYNC_PAYLOAD) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_event_type: sync-event type '%s': a payload of %zu bytes, more than "
                 "the %zu a sync-event may carry between ranks", d->name, d->size, (size_t)KR__MAX_SYNC_PAYLOAD);
        return 0;
    }
    for (const kr_field_t *f = d->fields; f && f->name; f++) {
        size_t count = f->count ? f->count : 1;
        /* (no sum that could wrap: an offset near SIZE_MAX is outside too) */
        if (f->type < KR_FIELD_BOOL || f->type > KR_FIELD_F64 || f->offset > d->size ||
            count > (d->size - f->offset) / kr__field_bytes(f->type)) {
            kr__fail(KR_ERR_INVALID_ARG, "kr_model_event_type: event type '%s': field '%s' is not a number or boolean "
                     "inside the payload", d->name, f->name);
            return 0;
        }
    }
    kr_event_type_t same = kr_model_find_event_type(m, d->name);
    if (same) {
        /* Kinds that share an event type each declare it: the same
         * definition again is the same type. */
        const kr_event_type_desc_t *o = &m->types[same - 1].desc;
        if (o->size == d->size && o->on_event == d->on_event && o->on_sender_side == d->on_sender_side &&
            o->on_target_side == d->on_target_side && o->fields == d->fields)
            return same;
        kr__fail(KR_ERR_EXISTS, "kr_model_event_type: event type '%s' is already registered with another %s",
                 d->name, o->size != d->size ? "payload size" : o->fields != d->fields ? "fields table" : "handler");
        return 0;
    }
    /* (a new type, not the same one again, is a change of the model) */
    if (kr__model_refuse_change(m, "kr_model_event_type")) return 0;
    kr__event_type_rec_t *types = realloc(m->types, (m->type_count + 1) * sizeof *types);
    if (!types) { kr__fail(KR_ERR_NOMEM, "kr_model_event_type: out of memory"); return 0; }
    m->types = types;
    char *name = dup_str(d->name);
    if (!name) { kr__fail(KR_ERR_NOMEM, "kr_model_event_type: out of memory"); return 0; }
    types[m->type_count].name = name;
    types[m->type_count].desc = *d;
    types[m->type_count].desc.name = name;
    return ++m->type_count;
}

/* ---- simulators ---- */

kr_sim_t *kr_model_add_sim(kr_model_t *m, const kr_sim_desc_t *d)
{
    if (kr__model_refuse_change(m, "kr_model_add_sim")) return NULL;
    if (!d || !d->name || !d->name[0]) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_sim: a simulator needs a name");
        return NULL;
    }
    if (kr_model_find_sim(m, d->name)) {
        kr__fail(KR_ERR_EXISTS, "kr_model_add_sim: a simulator named '%s' already exists", d->name);
        return NULL;
    }
    if (d->formalism > KR_EMULATION) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_sim: simulator '%s': unknown formalism %d", d->name,
                 (int)d->formalism);
        return NULL;
    }
    bool stepped = d->formalism == KR_AGENT_BASED || d->formalism == KR_CONTINUOUS;
    if (stepped && d->time_step < 1) {
        kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_sim: simulator '%s' (%s) needs a time step of at least one tick",
                 d->name, kr_formalism_name(d->formalism));
        return NULL;
    }
    if (m->sim_count == m->sim_cap && KR__GROW_U32(m->sims, m->sim_cap, m->sim_count + 1, 8, "kr_model_add_sim"))
        return NULL;
    kr_sim_t *s = calloc(1, sizeof *s);
    if (!s) { kr__fail(KR_ERR_NOMEM, "kr_model_add_sim: out of memory"); return NULL; }
    s->model = m;
    s->id = m->sim_count;
    s->rank = d->rank;
    s->local = d->rank == m->rank;
    s->formalism = d->formalism;
    s->time_step = d->time_step;
    s->stop_horizon = KR_TIME_NEVER;
    s->name = dup_str(d->name);
    s->contexts = calloc(m->context_count + 1, sizeof *s->contexts);
    kr_world_desc_t wd = { .registry = m->registry, .spatial_cell_size = d->spatial_cell_size, .owner = s };
    memcpy(wd.spatial_bounds, d->spatial_bounds, sizeof wd.spatial_bounds);
    if (!s->name || !s->contexts || kr__sim_init(s)) goto fail;
    /* A simulator another rank runs is only a name, an id and its edges. */
    if (s->local) {
        s->world = kr_world_create(&wd);
        if (!s->world) goto fail;
        s->rng = kr_rng_create(m->seed, KR_RNG_SIMULATOR, s->id, 0);
        if (!s->rng) goto fail;
        if (d->formalism == KR_EMULATION && kr__emulation_create(s, d->emulation)) goto fail;
    }
    if (kr__hmap_insert(&m->sim_names, name_hash(s->name), s->id)) goto fail;
    m->sims[m->sim_count++] = s;
    return s;
fail:
    if (!kr_last_status()) kr__fail(KR_ERR_NOMEM, "kr_model_add_sim: out of memory");
    kr__sim_fini(s);
    free(s);
    return NULL;
}

size_t kr_model_sim_count(const kr_model_t *m) { return m ? m->sim_count : 0; }
bool kr_sim_is_local(const kr_sim_t *s) { return s && s->local; }
int kr_model_rank(const kr_model_t *m) { return m ? m->rank : 0; }
int kr_sim_rank(const kr_sim_t *s) { return s ? s->rank : 0; }

kr_sim_t *kr_model_sim(kr_model_t *m, uint32_t id)
{
    return m && id < m->sim_count ? m->sims[id] : NULL;
}

kr_sim_t *kr_model_find_sim(kr_model_t *m, const char *name)
{
    if (!m || !name) return NULL;
    uint32_t cursor = 0, id;
    while ((id = kr__hmap_next(&m->sim_names, name_hash(name), &cursor)) != KR__HMAP_EMPTY)
        if (!strcmp(m->sims[id]->name, name)) return m->sims[id];
    return NULL;
}

/* ---- dependencies ---- */

/* Appends to an array whose capacity is implicit: the smallest power of
 * two >= its count, so it is reallocated only when the count reaches a
 * power of two. Doubling keeps building linear in the edges (growing by
 * one would copy a simulator's list once per edge: quadratic in its
 * degree). */
static kr_status_t append_u32(uint32_t **arr, uint32_t *count, uint32_t v)
{
    uint32_t n = *count;
    if ((n & (n - 1)) == 0) { /* 0, 1, 2, 4, ...: full */
        if (n > UINT32_MAX / 2) return kr__fail(KR_ERR_NOMEM, "out of memory");
        uint32_t *a = realloc(*arr, (n ? 2 * (size_t)n : 1) * sizeof *a);
        if (!a) return kr__fail(KR_ERR_NOMEM, "out of memory");
        *arr = a;
    }
    (*arr)[(*count)++] = v;
    return KR_OK;
}

/* The edge map's key: the pair itself, unique (the map mixes its keys). */
static uint64_t pair_key(uint32_t from, uint32_t to)
{
    return (uint64_t)from << 32 | to;
}

/* The edge from -> to by hash: for building and setup, where a kind asks
 * for each of a simulator's d edges (a scan of them would cost d^2 per
 * simulator), and for kr__edge beyond a few edges. */
kr__edge_t *kr__edge_by_hash(const kr_model_t *m, uint32_t from, uint32_t to)
{
    uint32_t cursor = 0, k = kr__hmap_next(&m->edge_pairs, pair_key(from, to), &cursor);
    return k == KR__HMAP_EMPTY ? NULL : &m->edges[k];
}

kr_status_t kr_model_add_dependency(kr_model_t *m, uint32_t from, uint32_t to, kr_time_t promise)
{
    kr_status_t st = kr__model_refuse_change(m, "kr_model_add_dependency");
    if (st) return st;
    if (from >= m->sim_count || to >= m->sim_count)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_dependency: no simulator with id %u",
                        from >= m->sim_count ? from : to);
    if (from == to)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_dependency: '%s' cannot depend on itself",
                        m->sims[from]->name);
    if (promise == KR_TIME_NEVER)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_model_add_dependency: promise of '%s' -> '%s' is not finite",
                        m->sims[from]->name, m->sims[to]->name);
    /* By hash, not by kr__edge's scan of the sender's edges: a sender
     * with d edges would cost d^2 to build. */
    uint64_t key = pair_key(from, to);
    if (kr__edge_by_hash(m, from, to))
        return kr__fail(KR_ERR_EXISTS, "kr_model_add_dependency: '%s' -> '%s' already exists",
                        m->sims[from]->name, m->sims[to]->name);
    if (m->edge_count == m->edge_cap &&
        KR__GROW_U32(m->edges, m->edge_cap, m->edge_count + 1, 8, "kr_model_add_dependency"))
        return kr_last_status();
    uint32_t idx = m->edge_count;
    if (kr__hmap_insert(&m->edge_pairs, key, idx)) return kr__fail(KR_ERR_NOMEM, "kr_model_add_dependency: out of memory");
    if ((st = append_u32(&m->sims[from]->out_edges, &m->sims[from]->out_count, idx))) {
        kr__hmap_remove(&m->edge_pairs, key, idx);
        return st;
    }
    if ((st = append_u32(&m->sims[to]->in_edges, &m->sims[to]->in_count, idx))) {
        m->sims[from]->out_count--;
        kr__hmap_remove(&m->edge_pairs, key, idx);
        return st;
    }
    m->edges[idx] = (kr__edge_t){ .from = from, .to = to, .promise = promise };
    m->edge_count++;
    return KR_OK;
}

kr_status_t kr__model_fix_promises(kr_model_t *m, const char *source)
{
    char *copy = dup_str(source);
    if (!copy) return kr__fail(KR_ERR_NOMEM, "out of memory");
    free(m->promise_source);
    m->promise_source = copy;
    return KR_OK;
}

/* A promise changed in a model whose promises are fixed (built from a
 * model file), or from a kind's setup. From a setup the run fails even if
 * the setup ignores the answer and goes on, as with every change of the
 * model there (kr__model_refuse_change): the promise would otherwise
 * differ between the rank that ran the setup and the others. */
static kr_status_t refuse_promise_change(kr_model_t *m, const char *fn)
{
    if (!m->promise_source) return kr__model_refuse_change(m, fn);
    char why[1024];
    snprintf(why, sizeof why, "%s: the promises of a model built from %s come from its \"dependencies\" (each "
             "one's \"promise\"); change them there, or with --set dependencies.N.promise=VALUE", fn, m->promise_source);
    if (m->acting) kr__model_fail(m, KR_ERR_INVALID_ARG, "%s", why);
    return kr__fail(KR_ERR_INVALID_ARG, "%s", why);
}

kr_status_t kr_model_set_promise(kr_model_t *m, uint32_t from, uint32_t to, kr_time_t promise)
{
    kr_status_t st = kr__model_refuse_after_start(m, "kr_model_set_promise");
    if (st) return st;
    if (m->promise_source || m->acting) return refuse_promise_change(m, "kr_model_set_promise");
    kr__edge_t *e = kr__edge_by_hash(m, from, to);
    if (!e) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_set_promise: no dependency %u -> %u", from, to);
    if (promise == KR_TIME_NEVER) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_set_promise: promise is not finite");
    e->promise = promise;
    return KR_OK;
}

kr_status_t kr_model_set_promises(kr_model_t *m, uint32_t from, kr_time_t promise)
{
    kr_status_t st = kr__model_refuse_after_start(m, "kr_model_set_promises");
    if (st) return st;
    if (m->promise_source || m->acting) return refuse_promise_change(m, "kr_model_set_promises");
    if (from >= m->sim_count) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_set_promises: no simulator with id %u", from);
    if (promise == KR_TIME_NEVER) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_set_promises: promise is not finite");
    kr_sim_t *s = m->sims[from];
    for (uint32_t i = 0; i < s->out_count; i++) m->edges[s->out_edges[i]].promise = promise;
    return KR_OK;
}

kr_time_t kr_model_promise(const kr_model_t *m, uint32_t from, uint32_t to)
{
    const kr__edge_t *e = m ? kr__edge_by_hash(m, from, to) : NULL;
    return e ? e->promise : KR_TIME_NEVER;
}

/* ---- zero-promise groups: strongly connected components (Tarjan,
 * iterative) of the graph of zero-promise edges ---- */

typedef struct scc_state {
    kr_model_t *m;
    uint32_t *index, *low, *stack, *comp, *call, *edge_pos;
    bool *on_stack;
    uint32_t next_index, sp, comp_count;
} scc_state_t;

static void scc_visit(scc_state_t *st, uint32_t root)
{
    kr_model_t *m = st->m;
    uint32_t depth = 0;
    st->call[depth++] = root;
    st->index[root] = st->low[root] = st->next_index++;
    st->stack[st->sp++] = root;
    st->on_stack[root] = true;
    st->edge_pos[root] = 0;
    while (depth) {
        uint32_t v = st->call[depth - 1];
        kr_sim_t *s = m->sims[v];
        if (st->edge_pos[v] < s->out_count) {
            kr__edge_t *e = &m->edges[s->out_edges[st->edge_pos[v]++]];
            if (e->promise != 0) continue;
            uint32_t w = e->to;
            if (st->index[w] == UINT32_MAX) {
                st->index[w] = st->low[w] = st->next_index++;
                st->stack[st->sp++] = w;
                st->on_stack[w] = true;
                st->edge_pos[w] = 0;
                st->call[depth++] = w;
            } else if (st->on_stack[w] && st->index[w] < st->low[v]) {
                st->low[v] = st->index[w];
            }
            continue;
        }
        depth--;
        if (depth && st->low[v] < st->low[st->call[depth - 1]]) st->low[st->call[depth - 1]] = st->low[v];
        if (st->low[v] == st->index[v]) {
            uint32_t w;
            do {
                w = st->stack[--st->sp];
                st->on_stack[w] = false;
                st->comp[w] = st->comp_count;
            } while (w != v);
            st->comp_count++;
        }
    }
}

static kr_status_t build_groups(kr_model_t *m)
{
    uint32_t n = m->sim_count;
    scc_state_t st = { .m = m };
    st.index = malloc(n * sizeof *st.index);
    st.low = malloc(n * sizeof *st.low);
    st.stack = malloc(n * sizeof *st.stack);
    st.comp = malloc(n * sizeof *st.comp);
    st.call = malloc(n * sizeof *st.call);
    st.edge_pos = malloc(n * sizeof *st.edge_pos);
    st.on_stack = calloc(n, sizeof *st.on_stack);
    kr_status_t status = KR_OK;
    if (!st.index || !st.low || !st.stack || !st.comp || !st.call || !st.edge_pos || !st.on_stack) {
        status = kr__fail(KR_ERR_NOMEM, "kr_model_start: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) st.index[i] = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (st.index[i] == UINT32_MAX) scc_visit(&st, i);
    /* Number groups by their lowest member, so numbering is independent of
     * the traversal: group g's id is the position of its first member. */
    uint32_t *group_of_comp = malloc(st.comp_count * sizeof *group_of_comp);
    m->groups = calloc(st.comp_count, sizeof *m->groups);
    if (!group_of_comp || !m->groups) {
        free(group_of_comp);
        status = kr__fail(KR_ERR_NOMEM, "kr_model_start: out of memory");
        goto done;
    }
    for (uint32_t c = 0; c < st.comp_count; c++) group_of_comp[c] = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = st.comp[i];
        if (group_of_comp[c] == UINT32_MAX) group_of_comp[c] = m->group_count++;
        kr__group_t *g = &m->groups[group_of_comp[c]];
        m->sims[i]->group = group_of_comp[c];
        if ((status = append_u32(&g->members, &g->count, i))) break;
    }
    free(group_of_comp);
    for (uint32_t g = 0; !status && g < m->group_count; g++) {
        kr__group_t *gr = &m->groups[g];
        gr->local = m->sims[gr->members[0]]->local;
        gr->horizon = KR_TIME_NEVER;
        for (uint32_t k = 1; k < gr->count; k++)
            if (m->sims[gr->members[k]]->rank != m->sims[gr->members[0]]->rank)
                status = kr__fail(KR_ERR_INVALID_ARG, "'%s' (rank %d) and '%s' (rank %d) are joined by a cycle of "
                                  "zero promises and must run on one rank", m->sims[gr->members[0]]->name,
                                  m->sims[gr->members[0]]->rank, m->sims[gr->members[k]]->name,
                                  m->sims[gr->members[k]]->rank);
    }
    for (uint32_t i = 0; !status && i < m->edge_count; i++) {
        kr__edge_t *e = &m->edges[i];
        e->internal = m->sims[e->from]->group == m->sims[e->to]->group;
        e->in_pos = m->groups[m->sims[e->to]->group].in_count;
        if (!e->internal) status = append_u32(&m->groups[m->sims[e->to]->group].in_edges,
                                              &m->groups[m->sims[e->to]->group].in_count, i);
    }
done:
    free(st.index); free(st.low); free(st.stack); free(st.comp);
    free(st.call); free(st.edge_pos); free(st.on_stack);
    return status;
}

static void free_groups(kr_model_t *m)
{
    for (uint32_t i = 0; i < m->group_count; i++) {
        free(m->groups[i].members);
        free(m->groups[i].in_edges);
        if (m->bound_trees) free(m->bound_trees[i].node);
    }
    free(m->bound_trees);
    m->bound_trees = NULL;
    free(m->groups);
    m->groups = NULL;
    m->group_count = 0;
    free(m->window_sent_min);
    m->window_sent_min = NULL;
    free(m->window_least_in);
    m->window_least_in = NULL;
    free(m->ready);
    m->ready = NULL;
    free(m->raised);
    m->raised = NULL;
    m->raised_count = 0;
    m->ready_count = m->ready_next = m->ready_keep = m->ready_steps = 0;
    free(m->touched);
    free(m->touched_groups);
    free(m->group_touched);
    m->touched = m->touched_groups = NULL;
    m->group_touched = NULL;
    m->touched_count = m->touched_group_count = 0;
    m->touched_all = false;
}

kr_status_t kr__model_use_transport(kr_model_t *m, kr__transport_t *t)
{
    kr_status_t st = kr__model_refuse_after_start(m, "kr__model_use_transport");
    if (st) return st;
    if (!t) return kr__fail(KR_ERR_INVALID_ARG, "kr__model_use_transport: null transport");
    if (m->transport && m->owns_transport) m->transport->vtbl->destroy(m->transport);
    m->transport = t;
    m->owns_transport = true;
    return KR_OK;
}

uint32_t kr_model_group_of(const kr_model_t *cm, uint32_t sim)
{
    kr_model_t *m = (kr_model_t *)cm;
    if (!m || sim >= m->sim_count) return UINT32_MAX;
    /* Before start the groups are computed on demand (and dropped again
     * whenever the structure changes). */
    if (!m->groups && build_groups(m)) {
        free_groups(m);
        return UINT32_MAX;
    }
    return m->groups[m->sims[sim]->group].members[0];
}

/* What `auto` runs (kairos/model.h): the window algorithm when the groups
 * average more than AUTO_WINDOW_IN_EDGES in-edges from other groups. With
 * null messages each group that runs passes its guarantees on over every
 * out-edge, and the groups they raise pass theirs on in turn; a window
 * round computes every bound once. Measured on PHOLD with 2 to 32
 * simulators of one model on 1 and 2 ranks (bench/README.md, "The
 * algorithm chosen by auto"): the window was nowhere dearer in
 * instructions on one rank, and from 9 in-edges per group on it was
 * clearly faster on two; below that the two were within the machine's
 * noise, and a round's cost grows with the ranks, so null messages stay.
 * Fan-in (rows) and region models were even. A model with an emulation
 * keeps null messages: a round's wait would delay every answer to the
 * outside (docs/emulation.md). */
#define AUTO_WINDOW_IN_EDGES 8u

static kr_sync_algorithm_t auto_choice(const kr_model_t *m)
{
    for (uint32_t i = 0; i < m->sim_count; i++)
        if (m->sims[i]->formalism == KR_EMULATION) return KR_SYNC_NULL_MESSAGE;
    uint64_t between = 0;
    for (uint32_t g = 0; g < m->group_count; g++) between += m->groups[g].in_count;
    return between > (uint64_t)AUTO_WINDOW_IN_EDGES * m->group_count ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE;
}

kr_status_t kr_model_start(kr_model_t *m)
{
    kr_status_t st = kr__model_refuse_after_start(m, "kr_model_start");
    if (st) return st;
    if ((st = build_groups(m))) {
        free_groups(m);
        return st;
    }
    /* (from what was asked, at every attempt: a failed start may be
     * followed by a change of structure and another) */
    m->sync = m->sync_asked == KR_SYNC_AUTO ? auto_choice(m) : m->sync_asked;
    if ((st = kr__stop_check_start(m))) {
        free_groups(m);
        return st;
    }
    /* An emulation simulator accepts input at its clock's time; simulators
     * sharing its loop through zero promises could not run ahead of it
     * safely, so such a cycle needs a positive promise somewhere. */
    for (uint32_t gi = 0; gi < m->group_count; gi++) {
        kr__group_t *g = &m->groups[gi];
        for (uint32_t k = 0; g->count > 1 && k < g->count; k++)
            if (m->sims[g->members[k]]->formalism == KR_EMULATION) {
                uint32_t other = g->members[k == 0 ? 1 : 0];
                st = kr__fail(KR_ERR_INVALID_ARG, "kr_model_start: emulation simulator '%s' is in a cycle of zero "
                              "promises with '%s'; give an edge of the cycle a positive promise",
                              m->sims[g->members[k]]->name, m->sims[other]->name);
                free_groups(m);
                return st;
            }
    }
    /* Sync-events may be scheduled from on_start on, so the transport
     * exists before any behavior runs. */
    if (!m->transport) {
        /* (with no transport to other processes, a simulator placed on
         * another rank would wait for messages that never come) */
        for (uint32_t i = 0; i < m->sim_count; i++)
            if (!m->sims[i]->local) {
                free_groups(m);
                return kr__fail(KR_ERR_INVALID_ARG, "kr_model_start: simulator '%s' is placed on rank %d, but this "
                                "process (rank %d) runs the model alone: runs over ranks are kairos run's",
                                m->sims[i]->name, m->sims[i]->rank, m->rank);
            }
        m->transport = kr__transport_local_create();
        if (!m->transport) return kr_last_status();
        m->owns_transport = true;
    }
    /* Over ranks the window counts every message from the first on (see
     * window_round), those sent before the run included. */
    if (m->sync == KR_SYNC_WINDOW && m->transport->vtbl->reduce) {
        m->window_sent_min = malloc((m->group_count ? m->group_count : 1) * sizeof *m->window_sent_min);
        if (!m->window_sent_min) {
            free_groups(m);
            return kr__fail(KR_ERR_NOMEM, "kr_model_start: out of memory");
        }
        for (uint32_t g = 0; g < m->group_count; g++) m->window_sent_min[g] = KR_TIME_NEVER;
    }
    if (m->sync == KR_SYNC_WINDOW) {
        m->window_least_in = malloc((m->group_count ? m->group_count : 1) * sizeof *m->window_least_in);
        if (!m->window_least_in) {
            free_groups(m);
            return kr__fail(KR_ERR_NOMEM, "kr_model_start: out of memory");
        }
        for (uint32_t g = 0; g < m->group_count; g++) {
            const kr__group_t *gr = &m->groups[g];
            kr_time_t least = KR_TIME_NEVER;
            for (uint32_t k = 0; k < gr->in_count; k++)
                if (m->edges[gr->in_edges[k]].promise < least) least = m->edges[gr->in_edges[k]].promise;
            m->window_least_in[g] = least;
        }
    }
    m->started = true;
    for (uint32_t i = 0; i < m->edge_count; i++) {
        kr__edge_t *e = &m->edges[i];
        /* Every sender's time is at least 0, so before any message the
         * receiver may assume the promise itself. */
        e->guarantee = e->promise;
        e->guarantee_sent = e->promise;
        e->direct = !e->internal && m->transport->vtbl->direct_local && m->sims[e->from]->local &&
                    m->sims[e->to]->local;
    }
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        if (!s->local) continue;
        m->acting = s;
        st = kr_world_start(s->world);
        m->acting = NULL;
        if (st) {
            kr__model_fail(m, st, "starting '%s': %s", s->name, kr_last_error());
            return st;
        }
        /* a restored simulator's queue holds its next step or update point */
        if (s->restored) {
            if (s->formalism == KR_CONTINUOUS && s->cont) kr__continuous_space_stops(s);
        } else if (s->formalism == KR_AGENT_BASED) {
            st = kr__sim_schedule_kind(s, KR__EV_STEP, KR_PRIORITY_STEP, s->time_step, 0, NULL, 0, NULL);
        } else if (s->formalism == KR_CONTINUOUS) {
            st = kr__continuous_start(s);
        }
        if (st) {
            kr__model_fail(m, st, "starting '%s': %s", s->name, kr_last_error());
            return st;
        }
        if (m->failure) return kr__fail(m->failure, "%s", m->failure_msg);
    }
    return KR_OK;
}

kr_status_t kr_model_failure(const kr_model_t *m)
{
    if (!m || !m->failure) return KR_OK;
    return kr__fail(m->failure, "%s", m->failure_msg);
}

kr_status_t kr_model_run(kr_model_t *m)
{
    if (!m) return kr__fail(KR_ERR_INVALID_ARG, "kr_model_run: null model");
    if (m->running) return kr__fail(KR_ERR_STATE, "kr_model_run: the model is running (called from inside it)");
    if (m->finished) return kr__fail(KR_ERR_STATE, "kr_model_run: the model has already run");
    kr_status_t st = m->failure ? kr__fail(m->failure, "kr_model_run: %s", m->failure_msg) : KR_OK;
    if (!st && !m->started) st = kr_model_start(m);
    if (!st) return kr__coord_run(m);
    /* Other processes would wait for this one: tell them (as
     * kr__coord_run does for failures while running). */
    if (m->transport && m->transport->vtbl->abort) m->transport->vtbl->abort(m->transport, st, kr_last_error());
    return st;
}

uint64_t kr_model_rounds(const kr_model_t *m) { return m ? m->rounds : 0; }
uint64_t kr_model_transport_messages(const kr_model_t *m) { return m ? m->transport_sent : 0; }

uint64_t kr_model_checksum(const kr_model_t *m)
{
    uint64_t h = 0x6b6169726f73ULL;
    for (uint32_t i = 0; m && i < m->sim_count; i++)
        h = kr__mix64(h ^ kr__mix64(m->sims[i]->digest + i));
    return h;
}
