/* A plug-in kind that makes the mistakes of issue 16 in its setup, which
 * runs only on the rank of its simulator: "lower_promise" sets the
 * promises of its outgoing dependencies (kr_model_set_promises, refused
 * for a model built from a file; "lower_promise_ignored" the same, going
 * on whatever the answer), "add_dependency_from" adds a dependency
 * from the named simulator to this one, "add_simulator" adds a simulator
 * of that name and ignores the answer, "add_event_type" registers an event
 * type of that name (these three refused in setup, on any number of ranks),
 * "register_component" registers a component of that name in the model's
 * registry (caught when the ranks compare their models). Otherwise the
 * simulator does nothing. */
#include <kairos/kairos.h>

static void nothing(kr_sim_t *sim, void *data)
{
    (void)sim, (void)data;
}

static kr_status_t meddler_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *m = kr_sim_model(sim);
    if (kr_params_has(params, "lower_promise")) {
        kr_time_t promise;
        kr_status_t st = kr_params_duration(params, "lower_promise", 0, &promise);
        if (st) return st;
        st = kr_model_set_promises(m, kr_sim_id(sim), promise);
        if (st) return st;
    }
    if (kr_params_has(params, "lower_promise_ignored")) {
        kr_time_t promise;
        kr_status_t st = kr_params_duration(params, "lower_promise_ignored", 0, &promise);
        if (st) return st;
        (void)kr_model_set_promises(m, kr_sim_id(sim), promise); /* (a kind that does not look) */
    }
    const char *component = NULL;
    kr_status_t st = kr_params_string(params, "register_component", NULL, &component);
    if (st) return st;
    if (component && kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = component,
                                                                                        .size = sizeof(double) }) == 0)
        return kr_last_status();
    const char *added = NULL;
    st = kr_params_string(params, "add_simulator", NULL, &added);
    if (st) return st;
    if (added) (void)kr_model_add_sim(m, &(kr_sim_desc_t){ .name = added }); /* (a kind that does not look) */
    st = kr_params_string(params, "add_event_type", NULL, &added);
    if (st) return st;
    if (added && !kr_model_event_type(m, &(kr_event_type_desc_t){ .name = added, .on_event = nothing }))
        return kr_last_status();
    const char *from = NULL;
    st = kr_params_string(params, "add_dependency_from", NULL, &from);
    if (st || !from) return st;
    kr_sim_t *other = kr_model_find_sim(m, from);
    if (!other) return kr_params_error(params, "add_dependency_from", "the name of a simulator", from);
    return kr_model_add_dependency(m, kr_sim_id(other), kr_sim_id(sim), 0);
}

static const kr_kind_desc_t meddler_kind = {
    .name = "meddler",
    .summary = "changes the model in its setup (a test of issue 16)",
    .formalism = KR_DISCRETE_EVENT,
    .setup = meddler_setup,
};

kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    return kr_kind_register(kinds, &meddler_kind);
}
