/* What the runtime does for a kind's declared parts (kairos/kind.h) when a
 * model file is built: registers its event handlers and state type once
 * per model, and for each simulator of the kind gives it its state, checks
 * its formalism and reads its declared parameters before setup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "kairos/sync.h"
#include "runtime/kind_build.h"
#include "runtime/param_table.h"
#include "regions/region_private.h"
#include "schedulers/model_private.h"

/* The state type of a kind is registered under this name. */
static void state_type_name(const kr_kind_desc_t *k, char *out, size_t n) { snprintf(out, n, "kind:%s", k->name); }

/* The slot that frees what reading a parameter of this type allocated
 * (runtime/param_table.c), 0 for none. */
static kr_field_type_t owning_slot(kr_param_type_t t)
{
    return t == KR_PARAM_DIST ? KR_FIELD_DIST : t == KR_PARAM_STRING ? KR_FIELD_STRING
         : t == KR_PARAM_LIST ? KR_FIELD_NUMBER_LIST : 0;
}

/* The state's fields, plus a slot for every parameter that holds memory,
 * so that the simulator's state frees it: a table ending with { 0 }, freed
 * by the caller. */
static kr_field_t *state_fields(const kr_kind_desc_t *k)
{
    size_t n = 0, extra = 0;
    while (k->state_fields && k->state_fields[n].name) n++;
    for (size_t i = 0; k->params && k->params[i].name; i++) extra += owning_slot(k->params[i].type) != 0;
    kr_field_t *all = calloc(n + extra + 1, sizeof *all);
    if (!all) return NULL;
    if (n) memcpy(all, k->state_fields, n * sizeof *all);
    for (size_t i = 0; k->params && k->params[i].name; i++)
        if (owning_slot(k->params[i].type))
            all[n++] = (kr_field_t){ k->params[i].name, owning_slot(k->params[i].type), k->params[i].offset, 1 };
    return all;
}

/* The name in the first pair of quotes of a message ("... 'x' is already
 * registered ..."): the registry and the model name what they refuse that
 * way. */
static void quoted(const char *msg, char *out, size_t n)
{
    const char *a = strchr(msg, '\''), *b = a ? strchr(a + 1, '\'') : NULL;
    snprintf(out, n, "%.*s", b ? (int)(b - a - 1) : 0, b ? a + 1 : "");
}

/* Which kind first registered a component or an event type, to name both
 * kinds when a second one defines it otherwise. */
typedef struct owners {
    const char **component;  /* by component id */
    size_t component_count;
    const char **event;      /* by event type id */
    size_t event_count;
} owners_t;

static void note_owners(owners_t *o, kr_model_t *m, const char *kind)
{
    uint32_t nc = kr_registry_count(kr_model_registry(m)) + 1, ne = kr_model_event_type_count(m) + 1;
    const char **c = realloc(o->component, nc * sizeof *c), **e = c ? realloc(o->event, ne * sizeof *e) : NULL;
    if (c) o->component = c;
    if (e) o->event = e;
    if (!c || !e) return; /* then the message names one kind only */
    for (size_t i = o->component_count; i < nc; i++) c[i] = kind;
    for (size_t i = o->event_count; i < ne; i++) e[i] = kind;
    o->component_count = nc;
    o->event_count = ne;
}

static kr_status_t conflict(const owners_t *o, kr_model_t *m, const char *file, const char *kind)
{
    char name[128];
    quoted(kr_last_error(), name, sizeof name);
    kr_component_t c = kr_component_lookup(kr_model_registry(m), name);
    kr_event_type_t e = kr_model_find_event_type(m, name);
    const char *first = c && c < o->component_count ? o->component[c]
                        : e && e < o->event_count   ? o->event[e]
                                                    : NULL;
    if (kr_last_status() == KR_ERR_EXISTS && first && first != kind)
        return kr__fail(KR_ERR_INVALID_ARG, "%s: kind '%s' defines '%s' otherwise than kind '%s' (%s)", file, kind,
                        name, first, kr_last_error());
    return kr__fail(kr_last_status() == KR_ERR_EXISTS ? KR_ERR_INVALID_ARG : kr_last_status(), "%s: kind '%s': %s",
                    file, kind, kr_last_error());
}

static kr_status_t register_kind(owners_t *o, kr_model_t *m, const char *file, const kr_kind_desc_t *k)
{
    for (size_t i = 0; k->events && k->events[i].name; i++)
        if (!kr_model_event_type(m, &k->events[i])) return conflict(o, m, file, k->name);
    if (k->register_types) {
        kr_clear_error();
        kr_status_t st = k->register_types(m);
        /* one that failed without a message fails the load all the same
         * (the load went on as if it had succeeded) */
        if (st && (kr_last_status() == KR_OK || !kr_last_error()[0]))
            return kr__fail(st == KR_ERR_NOMEM ? KR_ERR_NOMEM : KR_ERR_INVALID_ARG, "%s: kind '%s': register_types "
                            "failed with status %d (%s) and no message", file, k->name, (int)st, kr_status_str(st));
        if (st) return conflict(o, m, file, k->name);
    }
    note_owners(o, m, k->name);
    if (!k->state_size) return KR_OK;
    char name[300];
    state_type_name(k, name, sizeof name);
    kr_field_t *fields = state_fields(k);
    if (!fields) return kr__fail(KR_ERR_NOMEM, "%s: kind '%s': out of memory", file, k->name);
    kr_context_type_t t = kr_model_context_type(m, &(kr_context_desc_t){ .name = name, .size = k->state_size,
                                                                          .fields = fields });
    free(fields);
    return t ? KR_OK : kr__fail(kr_last_status(), "%s: kind '%s': %s", file, k->name, kr_last_error());
}

kr_status_t kr__kinds_register_types(const kr__model_file_t *f, kr_model_t *m)
{
    /* Once per kind, in the order kinds first appear: the same order, and
     * so the same ids, on every rank. The kinds seen so far are few: a
     * short list, not a scan of the simulators before. */
    size_t kind_count = kr__kinds_count(f->kinds), seen_count = 0;
    const kr_kind_desc_t **seen = calloc(kind_count ? kind_count : 1, sizeof *seen);
    owners_t o = { 0 };
    kr_status_t st = seen ? KR_OK : kr__fail(KR_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < f->sim_count && seen_count < kind_count; i++) {
        const kr_kind_desc_t *k = kr__model_file_kind(f, i);
        bool known = false;
        for (size_t j = 0; j < seen_count && !known; j++) known = seen[j] == k;
        if (known) continue;
        seen[seen_count++] = k;
        st = register_kind(&o, m, f->path, k);
    }
    free(seen);
    free(o.component);
    free(o.event);
    return st;
}

kr_status_t kr__kind_declare_receives(const kr__model_file_t *f, const kr__sim_entry_t *e, const kr_kind_desc_t *k,
                                      kr_sim_t *sim)
{
    kr_model_t *m = kr_sim_model(sim);
    if (!k->receives) return KR_OK;
    /* an empty list declares that it receives nothing, and a region
     * receives its neighbours' exchanges as well */
    kr_status_t st = kr__sim_receives_declared(sim);
    kr_event_type_t exchange = kr_model_find_event_type(m, KR__REGION_EXCHANGE);
    if (!st && exchange && e->region_cols) st = kr_sim_receive(sim, exchange);
    if (st) return st;
    for (size_t i = 0; k->receives[i]; i++) {
        kr_event_type_t t = kr_model_find_event_type(m, k->receives[i]);
        if (!t)
            return kr__fail(KR_ERR_INVALID_ARG, "%s: kind '%s' receives '%s', which no kind of this model declares",
                            f->path, k->name, k->receives[i]);
        kr_status_t st = kr_sim_receive(sim, t);
        if (st == KR_ERR_INVALID_ARG)
            return kr__fail(st, "%s: kind '%s' receives '%s', which is not a sync-event (it has no on_target_side)",
                            f->path, k->name, k->receives[i]);
        if (st) return st;
    }
    return KR_OK;
}

static bool allows(const kr_kind_desc_t *k, kr_formalism_t f)
{
    return f == k->formalism || (k->formalisms & KR_FORMALISM_BIT(f));
}

kr_status_t kr__kind_check_formalism(const kr__model_file_t *f, size_t index, const kr_kind_desc_t *k,
                                     kr_formalism_t formalism)
{
    /* Kinds written before declared parts check formalisms in their setup
     * (some accept several with no `formalisms`): leave them to it. */
    bool declared = k->formalisms || k->state_size || k->params || k->events;
    if (!declared || allows(k, formalism)) return KR_OK;
    char path[96], expected[256];
    size_t n = (size_t)snprintf(expected, sizeof expected, "a formalism of kind '%s' (", k->name);
    for (int x = 0, first = 1; x <= KR_EMULATION && n < sizeof expected; x++)
        if (allows(k, (kr_formalism_t)x)) {
            n += (size_t)snprintf(expected + n, sizeof expected - n, "%s%s", first ? "" : ", ",
                                  kr_formalism_name((kr_formalism_t)x));
            first = 0;
        }
    if (n < sizeof expected) snprintf(expected + n, sizeof expected - n, ")");
    snprintf(path, sizeof path, "simulators[%zu].formalism", index);
    json_t *found = json_string(kr_formalism_name(formalism));
    kr_status_t st = kr__input_error(f->path, path, expected, found);
    json_decref(found);
    return st;
}

kr_status_t kr__kind_prepare_sim(const kr__model_file_t *f, const kr__sim_entry_t *e, const kr_kind_desc_t *k,
                                 kr_sim_t *sim, kr_params_t *params)
{
    kr_status_t checked = kr__kind_check_formalism(f, e->index, k, e->formalism);
    if (checked) return checked;
    void *state = NULL;
    if (k->state_size) {
        char name[300];
        state_type_name(k, name, sizeof name);
        state = kr_sim_set_state(sim, kr_model_find_context_type(kr_sim_model(sim), name));
        if (!state) return kr_last_status();
    }
    if (k->on_step) kr_sim_set_on_step(sim, k->on_step);
    return k->params ? kr__param_table_apply(k, params, sim, state) : KR_OK;
}

kr_status_t kr__kind_check(const kr_kind_desc_t *k)
{
    /* (an empty table declares that the kind has no params: no state needed) */
    if (k->params && k->params[0].name && !k->state_size)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s' declares params but no state for them",
                        k->name);
    if (k->formalisms >> (KR_EMULATION + 1))
        return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s' allows unknown formalisms", k->name);
    for (size_t i = 0; k->params && k->params[i].name; i++)
        for (size_t j = 0; owning_slot(k->params[i].type) && k->state_fields && k->state_fields[j].name; j++)
            if (k->state_fields[j].offset == k->params[i].offset)
                return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s': parameter '%s' is also a state "
                                "field (the runtime frees a parameter's memory itself: declare it once, as a "
                                "parameter)", k->name, k->params[i].name);
    for (size_t i = 0; k->receives && k->receives[i]; i++)
        if (!k->receives[i][0])
            return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s': receives[%zu] is an empty name",
                            k->name, i);
    for (size_t i = 0; k->events && k->events[i].name; i++)
        if (!k->events[i].on_event && !k->events[i].on_target_side)
            return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s': event '%s' has no handler", k->name,
                            k->events[i].name);
    return k->params ? kr__param_table_check(k) : KR_OK;
}
