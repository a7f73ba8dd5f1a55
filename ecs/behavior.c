/* Dispatching behavior callbacks. Callbacks may change the world, so every
 * call re-resolves the entity's table and row instead of keeping pointers. */
#include <stdlib.h>

#include "ecs/world_private.h"

static void fire_one(kr_world_t *w, kr_entity_t e, kr_component_t c, kr__callback_t cb, kr_entity_t arg,
                     kr_entity_t arg2)
{
    if (!kr_entity_alive(w, e)) return;
    kr__record_t *r = &w->records[kr_entity_index(e)];
    kr__table_t *t = w->tables[r->table];
    int col = kr__column_index(t, c);
    if (col < 0) return;
    const kr_behavior_vtbl_t *v = kr__registry_entry(w->registry, c)->info.vtbl;
    if (!v) return;
    void *state = kr__column_ptr(t, (uint32_t)col, r->row);
    switch (cb) {
    case KR__CB_CREATION: if (v->on_creation) v->on_creation(w, e, state); break;
    case KR__CB_DESTROY:
        if (v->on_destroy) {
            kr__removal_t frame = { e, c, w->removing };
            w->removing = &frame;
            v->on_destroy(w, e, state);
            w->removing = frame.outer;
        }
        break;
    case KR__CB_AWAKE: if (v->on_awake) v->on_awake(w, e, state); break;
    case KR__CB_START: if (v->on_start) v->on_start(w, e, state); break;
    case KR__CB_ENTERING: if (v->on_entering) v->on_entering(w, e, state, arg); break;
    case KR__CB_ENTERED: if (v->on_entered) v->on_entered(w, e, state, arg); break;
    case KR__CB_EXITING: if (v->on_exiting) v->on_exiting(w, e, state, arg); break;
    case KR__CB_EXITED: if (v->on_exited) v->on_exited(w, e, state, arg); break;
    case KR__CB_SUBMODEL_MOVE: if (v->on_submodel_move) v->on_submodel_move(w, e, state, arg); break;
    case KR__CB_UPDATE: if (v->on_update) v->on_update(w, e, state); break;
    case KR__CB_LATE_UPDATE: if (v->on_late_update) v->on_late_update(w, e, state); break;
    case KR__CB_INPUT_READY:
        if (v->on_input_channel_ready) v->on_input_channel_ready(w, e, state, arg);
        break;
    case KR__CB_OUTPUT_READY:
        if (v->on_output_channel_ready) v->on_output_channel_ready(w, e, state, arg);
        break;
    case KR__CB_RECEIVE: if (v->on_receive) v->on_receive(w, e, state, arg, arg2); break;
    }
}

void kr__behavior_fire_one(kr_world_t *w, kr_entity_t e, kr_component_t c, kr__callback_t cb,
                           kr_entity_t arg)
{
    fire_one(w, e, c, cb, arg, KR_ENTITY_INVALID);
}

bool kr__behavior_removing(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    for (const kr__removal_t *f = w->removing; f; f = f->outer)
        if (f->entity == e && f->component == c) return true;
    return false;
}

static bool pending_creation(const kr_world_t *w, kr_entity_t e, kr_component_t c)
{
    if (e != w->creating.entity) return false;
    for (uint32_t i = 0; i < w->creating.pending_count; i++)
        if (w->creating.pending[i] == c) return true;
    return false;
}

kr_component_t *kr__behavior_list(const kr__table_t *t, kr_component_t small[16], uint32_t *n)
{
    kr_component_t *types = t->behavior_count > 16 ? malloc(t->behavior_count * sizeof *types) : small;
    *n = types ? t->behavior_count : 0;
    for (uint32_t i = 0; i < *n; i++) types[i] = t->types[t->behavior_columns[i]];
    return types;
}

void kr__behaviors_fire(kr_world_t *w, kr_entity_t e, kr__callback_t cb, kr_entity_t arg)
{
    kr__behaviors_fire2(w, e, cb, arg, KR_ENTITY_INVALID);
}

void kr__behaviors_fire2(kr_world_t *w, kr_entity_t e, kr__callback_t cb, kr_entity_t arg,
                         kr_entity_t arg2)
{
    if (!kr_entity_alive(w, e)) return;
    /* Snapshot the behavior types first: a callback may add or remove
     * behaviors, and each listed one still present gets exactly one call. */
    kr_component_t small[16];
    uint32_t n;
    kr_component_t *types = kr__behavior_list(w->tables[w->records[kr_entity_index(e)].table], small, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (cb == KR__CB_DESTROY && kr__behavior_removing(w, e, types[i])) continue;
        /* A behavior whose on_creation never ran gets no on_destroy. */
        if (cb == KR__CB_DESTROY && pending_creation(w, e, types[i])) continue;
        fire_one(w, e, types[i], cb, arg, arg2);
    }
    if (types != small) free(types);
}
