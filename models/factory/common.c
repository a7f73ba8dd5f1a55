/* What the factory kinds share: the part (component and tracker behavior),
 * the ship sync-event and its dispatch to the receiving kind, the "to"
 * parameter, a FIFO of entities. */
#include <stdio.h>

#include "models/factory/factory.h"

static const kr_field_t part_fields[] = {
    KR_FIELD(factory_part_t, serial, KR_FIELD_U64),
    KR_FIELD(factory_part_t, created, KR_FIELD_U64),
};

static void tracker_moved(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t old_self)
{
    (void)w, (void)self, (void)old_self;
    ((factory_tracker_t *)state)->moves++;
}

static const kr_behavior_vtbl_t tracker_vtbl = { .on_submodel_move = tracker_moved };

/* Who takes arriving parts, by this tag's address (kr_sim_user): no
 * other kind's pointer is taken for a station. */
static const char station_tag;

void factory_set_station(kr_sim_t *sim, const factory_station_t *station)
{
    kr_sim_set_user(sim, &station_tag, (void *)station);   /* only read back as const */
}

void factory_ship_arrive(kr_sim_t *sim, void *data)
{
    (void)data;
    size_t count = 0;
    const kr_entity_t *parts = kr_event_entities(sim, &count);
    const factory_station_t *st = kr_sim_user(sim, &station_tag);
    if (st) {
        st->receive(sim, parts, count);
        return;
    }
    kr_log(sim, KR_LOG_WARN, "%zu part(s) arrived at a simulator that is neither factory robots nor a bath; "
           "they stay in its world untouched", count);
}

kr_status_t factory_register_common(kr_model_t *model)
{
    kr_registry_t *reg = kr_model_registry(model);
    if (!kr_component_register(reg, &(kr_component_desc_t){ .name = FACTORY_PART, .size = sizeof(factory_part_t),
            .fields = part_fields, .field_count = sizeof part_fields / sizeof part_fields[0] }) ||
        !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = FACTORY_TRACKER,
            .state_size = sizeof(factory_tracker_t), .vtbl = &tracker_vtbl }))
        return kr_last_status();
    return KR_OK;
}

kr_entity_t factory_part_create(kr_sim_t *sim, uint64_t serial, kr_time_t created)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_registry_t *reg = kr_model_registry(kr_sim_model(sim));
    kr_component_t cs[2] = { kr_component_lookup(reg, FACTORY_PART), kr_component_lookup(reg, FACTORY_TRACKER) };
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = cs, .component_count = 2 });
    if (e == KR_ENTITY_INVALID) return e;
    *(factory_part_t *)kr_component_get(w, e, cs[0]) = (factory_part_t){ .serial = serial, .created = created };
    return e;
}

factory_part_t *factory_part_get(kr_sim_t *sim, kr_entity_t part)
{
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), FACTORY_PART);
    return c == KR_COMPONENT_NONE ? NULL : kr_component_get(kr_sim_world(sim), part, c);
}

int64_t factory_part_count(kr_sim_t *sim)
{
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), FACTORY_PART);
    kr_view_t v;
    if (c == KR_COMPONENT_NONE ||
        kr_view_init(&v, kr_sim_world(sim), &(kr_view_desc_t){ .include = { c } }) != KR_OK)
        return -1;
    int64_t n = (int64_t)kr_view_count(&v);
    kr_view_fini(&v);
    return n;
}

kr_status_t factory_param_target(kr_sim_t *sim, const kr_params_t *params, uint32_t *target,
                                 kr_time_t *promise)
{
    kr_model_t *model = kr_sim_model(sim);
    const char *to = NULL;
    kr_status_t st = kr_params_string(params, "to", NULL, &to);
    if (st != KR_OK) return st;
    if (!to) return kr_params_error(params, "to", "the name of the simulator that takes the parts", "nothing");
    char found[768];
    kr_sim_t *t = kr_model_find_sim(model, to);
    if (!t) {
        snprintf(found, sizeof found, "'%.200s', which is not a simulator of this model", to);
        return kr_params_error(params, "to", "the name of a simulator", found);
    }
    kr_time_t p = kr_model_promise(model, kr_sim_id(sim), kr_sim_id(t));
    if (p == KR_TIME_NEVER) {
        snprintf(found, sizeof found, "'%.200s', but there is no dependency '%.140s' -> '%.140s'", to,
                 kr_sim_name(sim), to);
        return kr_params_error(params, "to", "a simulator that this one has a dependency to", found);
    }
    *target = kr_sim_id(t);
    *promise = p;
    return KR_OK;
}

uint32_t factory_target(kr_sim_t *sim, const char *name, kr_time_t *promise)
{
    kr_model_t *model = kr_sim_model(sim);
    uint32_t id = kr_sim_id(kr_model_find_sim(model, name));
    *promise = kr_model_promise(model, kr_sim_id(sim), id);
    return id;
}

kr_status_t factory_check_takes(kr_sim_t *sim, const kr_params_t *params, const char *key, uint32_t target,
                                const char *type_name)
{
    kr_model_t *model = kr_sim_model(sim);
    kr_sim_t *t = kr_model_sim(model, target);
    kr_event_type_t type = kr_model_find_event_type(model, type_name);
    if (!t || !type || kr_sim_takes(t, type)) return KR_OK;
    char expected[160], found[300];
    snprintf(expected, sizeof expected, "a simulator that receives %s (what this one sends it)", type_name);
    snprintf(found, sizeof found, "'%.200s', whose kind does not receive it", kr_sim_name(t));
    return kr_params_error(params, key, expected, found);
}

kr_status_t factory_ship(kr_sim_t *sim, uint32_t target, kr_time_t delay, const kr_entity_t *parts,
                         size_t count)
{
    kr_event_type_t ship = kr_model_find_event_type(kr_sim_model(sim), FACTORY_SHIP);
    kr_status_t st = kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = target, .delay = delay,
        .type = ship, .entities = parts, .entity_count = count }, NULL);
    if (st != KR_OK) kr_sim_fail(sim, st, "shipping parts: %s", kr_last_error());
    return st;
}

kr_entity_t factory_queue_pop(kr_entity_list_t *q)
{
    if (q->count == 0) return KR_ENTITY_INVALID;
    kr_entity_t e = q->items[0];
    kr_entity_list_remove_at(q, 0);
    return e;
}
