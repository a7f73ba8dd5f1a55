/* What the factory kinds share: the part component, the ship sync-event and
 * its dispatch to the receiving kind, stations, the "to" parameter. */
#include <stdio.h>
#include <string.h>

#include "factory.h"

static const kr_field_t part_fields[] = {
    KR_FIELD(factory_part_t, serial, KR_FIELD_U64),
    KR_FIELD(factory_part_t, created, KR_FIELD_U64),
};

/* A static table, not mutable state: which station takes the parts. */
static const struct {
    const char *station;
    void (*receive)(kr_sim_t *sim, const kr_entity_t *parts, size_t count);
} receivers[] = {
    { FACTORY_ROBOTS, factory_robots_receive },
    { FACTORY_BATH, factory_bath_receive },
};

static void ship_arrive(kr_sim_t *sim, void *data)
{
    (void)data;
    size_t count = 0;
    const kr_entity_t *parts = kr_event_entities(sim, &count);
    kr_world_t *w = kr_sim_world(sim);
    for (size_t i = 0; i < sizeof receivers / sizeof receivers[0]; i++) {
        if (kr_entity_find(w, receivers[i].station) != KR_ENTITY_INVALID) {
            receivers[i].receive(sim, parts, count);
            return;
        }
    }
    kr_log(sim, KR_LOG_WARN, "%zu part(s) arrived at a simulator that is neither factory robots nor a bath; "
           "they stay in its world untouched", count);
}

kr_status_t factory_register_common(kr_model_t *model)
{
    kr_registry_t *reg = kr_model_registry(model);
    kr_component_t part = kr_component_lookup(reg, FACTORY_PART);
    if (part == KR_COMPONENT_NONE) {
        if (!kr_component_register(reg, &(kr_component_desc_t){ .name = FACTORY_PART,
                .size = sizeof(factory_part_t), .fields = part_fields,
                .field_count = sizeof part_fields / sizeof part_fields[0] }))
            return kr_last_status();
    } else {
        const kr_component_info_t *info = kr_component_info(reg, part);
        if (!info || info->size != sizeof(factory_part_t) || info->vtbl) {
            /* Someone else took the name: refuse rather than misread bytes. */
            if (!kr_component_register(reg, &(kr_component_desc_t){ .name = FACTORY_PART,
                    .size = sizeof(factory_part_t) }))
                return kr_last_status();
        }
    }
    if (!kr_model_find_event_type(model, FACTORY_SHIP) &&
        !kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FACTORY_SHIP,
            .on_target_side = ship_arrive }))
        return kr_last_status();
    return KR_OK;
}

kr_status_t factory_register_behavior(kr_model_t *model, const char *name, size_t state_size,
                                     const kr_behavior_vtbl_t *vtbl)
{
    kr_registry_t *reg = kr_model_registry(model);
    if (kr_component_lookup(reg, name) != KR_COMPONENT_NONE) return KR_OK;
    if (!kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = name, .state_size = state_size,
            .vtbl = vtbl }))
        return kr_last_status();
    return KR_OK;
}

void *factory_station_create(kr_sim_t *sim, const char *name)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), name);
    /* Unregistered (register_types did not run): create_desc fails and says so. */
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name, .components = &c,
        .component_count = 1 });
    if (e == KR_ENTITY_INVALID) return NULL;
    return kr_component_get(w, e, c);
}

void *factory_station(kr_sim_t *sim, const char *name)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_entity_t e = kr_entity_find(w, name);
    if (e == KR_ENTITY_INVALID) return NULL;
    kr_component_t c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), name);
    return c == KR_COMPONENT_NONE ? NULL : kr_component_get(w, e, c);
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

kr_status_t factory_ship(kr_sim_t *sim, uint32_t target, kr_time_t delay, const kr_entity_t *parts,
                         size_t count)
{
    kr_event_type_t ship = kr_model_find_event_type(kr_sim_model(sim), FACTORY_SHIP);
    kr_status_t st = kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = target, .delay = delay,
        .type = ship, .entities = parts, .entity_count = count }, NULL);
    if (st != KR_OK) kr_log(sim, KR_LOG_ERROR, "shipping parts: %s", kr_last_error());
    return st;
}

uint64_t factory_double_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
