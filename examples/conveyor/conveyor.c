/* The ERS tutorial line as a kairos plug-in (docs/tutorial.md walks
 * through it): a discrete-event "source" makes a product every `interval`
 * and sends the product itself to an agent-based "conveyor", which carries
 * it along `length` at `speed` and records its lead time at the end.
 *
 * Everything a kind declares (state, parameters, event handlers) is in its
 * kr_kind_desc_t; the runtime reads the parameters, digests the state and
 * reports its statistics, so there is no digest and no report here. */
#include <kairos/kairos.h>

/* A product, carried from the source's world into the conveyor's. */
typedef struct product {
    double created;   /* model units */
    double entered;   /* when it got on the belt */
} product_t;

static const kr_field_t product_fields[] = {
    KR_FIELD(product_t, created, KR_FIELD_F64),
    KR_FIELD(product_t, entered, KR_FIELD_F64),
};

/* Both kinds register it: the same definition twice is one component. */
static kr_status_t register_product(kr_model_t *model)
{
    kr_component_t c = kr_component_register(kr_model_registry(model), &(kr_component_desc_t){
        .name = "product", .size = sizeof(product_t), .fields = product_fields, .field_count = 2 });
    return c ? KR_OK : kr_last_status();
}

static kr_component_t product_id(kr_sim_t *sim)
{
    return kr_component_lookup(kr_model_registry(kr_sim_model(sim)), "product");
}

/* ---- the source ---- */

typedef struct source {
    double interval;         /* params */
    const char *target;
    kr_component_t product;
} source_t;

static void arrive(kr_sim_t *sim, void *data);

static void make(kr_sim_t *sim, void *data)
{
    (void)data;
    source_t *s = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &s->product, .component_count = 1 });
    if (e != KR_ENTITY_INVALID) ((product_t *)kr_component_get(w, e, s->product))->created = kr_sim_now_units(sim);
    if (e == KR_ENTITY_INVALID ||
        kr_send(sim, &(kr_send_t){ .to = s->target, .handler = arrive, .entities = &e, .entity_count = 1 }) ||
        kr_schedule_in(sim, s->interval, make, NULL))
        kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
}

static kr_status_t source_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    source_t *s = kr_sim_state(sim);
    s->product = product_id(sim);
    return kr_schedule_in(sim, s->interval, make, NULL);
}

static const kr_kind_desc_t source_kind = {
    .name = "source",
    .summary = "makes a product every `interval` and sends it to `target` (the ERS tutorial)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = register_product,
    .setup = source_setup,
    .state_size = sizeof(source_t),
    .params = (const kr_param_t[]){
        KR_PARAM(source_t, interval, KR_PARAM_NUMBER, .def = "5", .range = "> 0", .unit = "s",
                 .help = "time between two products, the first at `interval`"),
        KR_PARAM(source_t, target, KR_PARAM_TARGET, .def = "\"conveyor\"", .help = "where products go"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){ { .name = "make", .on_event = make }, { 0 } },
};

/* ---- the conveyor ---- */

typedef struct conveyor {
    double length, speed;    /* params */
    int64_t stop_after;
    kr_entity_list_t belt;   /* products on the belt, first on first */
    uint64_t arrived;        /* reported */
    kr_tally_t lead_time;
    kr_component_t product;
} conveyor_t;

static void arrive(kr_sim_t *sim, void *data)
{
    (void)data;
    conveyor_t *c = kr_sim_state(sim);
    size_t n;
    const kr_entity_t *e = kr_event_entities(sim, &n);
    for (size_t i = 0; i < n; i++) {
        ((product_t *)kr_component_get(kr_sim_world(sim), e[i], c->product))->entered = kr_sim_now_units(sim);
        if (kr_entity_list_push(&c->belt, e[i])) kr_sim_fail(sim, kr_last_status(), "%s", kr_last_error());
        c->arrived++;
    }
}

/* Every time step: products that have covered the length leave. One speed
 * for all keeps the belt in arrival order. */
static void move(kr_sim_t *sim)
{
    conveyor_t *c = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    double now = kr_sim_now_units(sim);
    while (c->belt.count) {
        const product_t *p = kr_component_get(w, c->belt.items[0], c->product);
        if (c->speed * (now - p->entered) < c->length) break;
        kr_tally_add(&c->lead_time, now - p->created);
        kr_entity_destroy(w, c->belt.items[0]);
        kr_entity_list_remove_at(&c->belt, 0);
        if (c->stop_after > 0 && c->lead_time.count == (uint64_t)c->stop_after) kr_sim_stop(sim);
    }
}

static kr_status_t conveyor_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    ((conveyor_t *)kr_sim_state(sim))->product = product_id(sim);
    return KR_OK;
}

static const kr_kind_desc_t conveyor_kind = {
    .name = "conveyor",
    .summary = "carries products along `length` at `speed` and tallies their lead time (the ERS tutorial)",
    .formalism = KR_AGENT_BASED,
    .register_types = register_product,
    .setup = conveyor_setup,
    .on_step = move,
    .state_size = sizeof(conveyor_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(conveyor_t, belt, KR_FIELD_ENTITY_LIST),
        KR_FIELD(conveyor_t, arrived, KR_FIELD_COUNTER),
        KR_FIELD(conveyor_t, lead_time, KR_FIELD_TALLY),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(conveyor_t, length, KR_PARAM_NUMBER, .def = "10", .range = "> 0", .unit = "m",
                 .help = "length of the belt"),
        KR_PARAM(conveyor_t, speed, KR_PARAM_NUMBER, .def = "1", .range = "> 0", .unit = "m/s",
                 .help = "speed of the belt"),
        KR_PARAM(conveyor_t, stop_after, KR_PARAM_INT, .def = "0", .range = ">= 0",
                 .help = "end the run once this many products reached the end (0: never)"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){ { .name = "arrive", .on_target_side = arrive }, { 0 } },
    .receives = (const char *const[]){ "arrive", NULL },
};

/* The entry point the kairos executable looks up (KR_PLUGIN_ENTRY). */
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    kr_status_t st = kr_kind_register(kinds, &source_kind);
    return st ? st : kr_kind_register(kinds, &conveyor_kind);
}
