/* "bath": the factory's chemical bath (continuous).
 *
 * The state is the bath's temperature Tb and one temperature Ti per slot
 * (`capacity` slots). A part that arrives takes a free slot at
 * `part_temperature`, or waits in a FIFO for one. With A the set of
 * occupied slots,
 *
 *     dTb/dt = heater - loss (Tb - ambient) - heat_ratio * sum_{i in A} exchange (Tb - Ti)
 *     dTi/dt = exchange (Tb - Ti)   for i in A,   0 otherwise.
 *
 * One state event, g = max_{i in A} (Ti - target) (-1 when A is empty),
 * rising, fires when a part reaches `target`: the handler takes out every
 * part at or above it (finished: its lead time, now - created, goes into a
 * tally), frees the slots and admits waiting parts. The handler changes the
 * occupied set behind the ODE's params pointer; the engine evaluates the
 * threshold's sign afresh after every event it stopped for, so the next
 * part's rising crossing fires in turn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/factory/factory.h"

#define FACTORY_DONE "factory.done"

/* Read by the ODE callbacks, which get a pointer to it: it lives in the
 * bath's context, a block that never moves. */
typedef struct bath_ode {
    double heater, loss, ambient, exchange, heat_ratio, target;
    size_t capacity;
    const unsigned char *active; /* capacity flags: the slot holds a part */
} bath_ode_t;

typedef struct bath {
    bath_ode_t ode;
    double part_temperature;
    unsigned char *active;       /* owned; ode.active points here */
    kr_entity_t *slot;           /* owned; the part in each slot */
    size_t in_bath;
    factory_queue_t waiting;     /* owned */
    uint64_t received, finished;
    kr_tally_t lead;             /* lead times of finished parts, model units */
    /* The temperature profile: every stride-th update point (when full,
     * every other point goes and the stride doubles), and the last one. */
    double *ptime, *ptemp;       /* owned; room for pcap + 1 */
    size_t pn, pcap, plimit;
    uint64_t pcandidates, pstride;
    double plast_t, plast_v;
    bool plast_kept;
} bath_t;

static void bath_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    bath_t *b = context;
    free(b->active);
    free(b->slot);
    free(b->ptime);
    free(b->ptemp);
    factory_queue_fini(&b->waiting);
}

static int bath_rhs(double t, const double y[], double dydt[], void *params)
{
    (void)t;
    const bath_ode_t *p = params;
    double absorbed = 0.0;
    for (size_t i = 0; i < p->capacity; i++) {
        double d = p->active[i] ? p->exchange * (y[0] - y[1 + i]) : 0.0;
        dydt[1 + i] = d;
        absorbed += d;
    }
    dydt[0] = p->heater - p->loss * (y[0] - p->ambient) - p->heat_ratio * absorbed;
    return 0;
}

static int bath_jacobian(double t, const double y[], double *dfdy, double dfdt[], void *params)
{
    (void)t, (void)y;
    const bath_ode_t *p = params;
    size_t n = p->capacity + 1;
    memset(dfdy, 0, n * n * sizeof *dfdy);
    memset(dfdt, 0, n * sizeof *dfdt);
    dfdy[0] = -p->loss;
    for (size_t i = 0; i < p->capacity; i++) {
        if (!p->active[i]) continue;
        dfdy[0] -= p->heat_ratio * p->exchange;
        dfdy[1 + i] = p->heat_ratio * p->exchange;
        dfdy[(1 + i) * n] = p->exchange;
        dfdy[(1 + i) * n + 1 + i] = -p->exchange;
    }
    return 0;
}

static double bath_hottest_over_target(double t, const double y[], void *params)
{
    (void)t;
    const bath_ode_t *p = params;
    double g = -INFINITY;
    for (size_t i = 0; i < p->capacity; i++)
        if (p->active[i] && y[1 + i] - p->target > g) g = y[1 + i] - p->target;
    return g == -INFINITY ? -1.0 : g;
}

static void profile_add(bath_t *b, double t, double v)
{
    b->plast_t = t, b->plast_v = v, b->plast_kept = false;
    if (b->pcandidates++ % b->pstride != 0) return;
    if (b->pn == b->pcap && b->pcap < b->plimit) {
        size_t cap = b->pcap ? 2 * b->pcap : 256;
        if (cap > b->plimit) cap = b->plimit;
        double *t2 = realloc(b->ptime, (cap + 1) * sizeof *t2);
        if (t2) b->ptime = t2;
        double *v2 = t2 ? realloc(b->ptemp, (cap + 1) * sizeof *v2) : NULL;
        if (v2) b->ptemp = v2;
        if (v2) b->pcap = cap;
    }
    if (b->pn == b->pcap) {
        if (b->pcap < b->plimit) return;   /* out of memory: the profile stops growing */
        /* Stored point j is candidate j x stride: keep the even ones. */
        for (size_t j = 0; 2 * j < b->pn; j++) {
            b->ptime[j] = b->ptime[2 * j];
            b->ptemp[j] = b->ptemp[2 * j];
        }
        b->pn = (b->pn + 1) / 2;
        b->pstride *= 2;
        if ((b->pcandidates - 1) % b->pstride != 0) return;
    }
    b->ptime[b->pn] = t;
    b->ptemp[b->pn] = v;
    b->pn++;
    b->plast_kept = true;
}

static void profile_now(kr_sim_t *sim, bath_t *b)
{
    double *y = kr_continuous_state(sim, NULL);
    if (y) profile_add(b, kr_time_to_units(kr_sim_now(sim), kr_model_precision(kr_sim_model(sim))), y[0]);
}

/* The bath entity's behavior: it samples the profile at every update point. */
static void bath_update(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self, (void)state;
    kr_sim_t *sim = kr_sim_of_world(w);
    bath_t *b = factory_context(sim, FACTORY_BATH);
    if (b && b->slot) profile_now(sim, b);
}

static const kr_behavior_vtbl_t bath_vtbl = { .on_update = bath_update };

static void admit(kr_sim_t *sim, bath_t *b, size_t i, kr_entity_t part)
{
    double *y = kr_continuous_state(sim, NULL);
    b->slot[i] = part;
    b->active[i] = 1;
    b->in_bath++;
    y[1 + i] = b->part_temperature;
}

static void admit_waiting(kr_sim_t *sim, bath_t *b)
{
    for (size_t i = 0; i < b->ode.capacity && b->waiting.len; i++)
        if (!b->active[i]) admit(sim, b, i, factory_queue_pop(&b->waiting));
}

static void bath_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count)
{
    bath_t *b = factory_context(sim, FACTORY_BATH);
    if (!b || !b->slot) return;
    for (size_t i = 0; i < count; i++) {
        b->received++;
        if (factory_queue_push(&b->waiting, parts[i]) != KR_OK)
            kr_sim_fail(sim, KR_ERR_NOMEM, "out of memory queueing a part");
    }
    admit_waiting(sim, b);
}

/* The state event: parts at or above the target leave. */
static void bath_done(kr_sim_t *sim, void *data)
{
    (void)data;
    bath_t *b = factory_context(sim, FACTORY_BATH);
    double *y = kr_continuous_state(sim, NULL);
    if (!b || !b->slot || !y) return;
    kr_world_t *w = kr_sim_world(sim);
    kr_time_t now = kr_sim_now(sim);
    uint64_t precision = kr_model_precision(kr_sim_model(sim));
    for (size_t i = 0; i < b->ode.capacity; i++) {
        if (!b->active[i] || y[1 + i] < b->ode.target) continue;
        const factory_part_t *p = factory_part_get(sim, b->slot[i]);
        kr_time_t created = p && p->created <= now ? p->created : now;
        kr_tally_add(&b->lead, kr_time_to_units(now - created, precision));
        b->finished++;
        kr_entity_destroy(w, b->slot[i]);
        b->slot[i] = KR_ENTITY_INVALID;
        b->active[i] = 0;
        b->in_bath--;
    }
    admit_waiting(sim, b);
    profile_now(sim, b);
}

static kr_status_t bath_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK) st = factory_register_context(model, FACTORY_BATH, sizeof(bath_t), bath_fini);
    if (st == KR_OK) st = factory_register_behavior(model, FACTORY_BATH, 0, &bath_vtbl);
    if (st == KR_OK && !kr_model_find_event_type(model, FACTORY_DONE) &&
        !kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FACTORY_DONE, .on_event = bath_done }))
        st = kr_last_status();
    return st;
}

static kr_status_t bath_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    bath_ode_t ode = { 0 };
    double initial = 0, part_temperature = 0;
    int64_t capacity = 0, profile_points = 0;
    char found[128];
    kr_status_t st = kr_params_number(params, "ambient", 20.0, &ode.ambient);
    if (st == KR_OK) st = kr_params_number(params, "initial", ode.ambient, &initial);
    if (st == KR_OK) st = kr_params_number(params, "heater", 4.0, &ode.heater);
    if (st == KR_OK) st = factory_param_positive(params, "loss", 0.05, true, &ode.loss);
    if (st == KR_OK) st = factory_param_positive(params, "exchange", 0.1, false, &ode.exchange);
    if (st == KR_OK) st = factory_param_positive(params, "heat_ratio", 0.05, true, &ode.heat_ratio);
    if (st == KR_OK) st = kr_params_int(params, "capacity", 8, 1, 100000, &capacity);
    if (st == KR_OK) st = kr_params_number(params, "part_temperature", 20.0, &part_temperature);
    if (st == KR_OK) st = kr_params_number(params, "target", 60.0, &ode.target);
    if (st == KR_OK && !(part_temperature < ode.target)) {
        /* A part must rise to the target: entering at or above it, it never would. */
        snprintf(found, sizeof found, "%g, not above \"part_temperature\" %g", ode.target, part_temperature);
        st = kr_params_error(params, "target", "a temperature above \"part_temperature\"", found);
    }
    if (st == KR_OK) st = kr_params_int(params, "profile_points", 10000, 2, 100000000, &profile_points);
    if (st != KR_OK) return st;
    kr_formalism_t f = kr_sim_formalism(sim);
    if (f != KR_CONTINUOUS) {
        snprintf(found, sizeof found, "a %s simulator", kr_formalism_name(f));
        return kr_params_error(params, "target", "a crossing to locate (a continuous simulator)", found);
    }

    bath_t *b = factory_context(sim, FACTORY_BATH);
    factory_station_t *station = factory_context(sim, FACTORY_STATION);
    size_t n = (size_t)capacity;
    double *y0 = malloc((n + 1) * sizeof *y0);
    unsigned char *active = calloc(n, 1);
    kr_entity_t *slot = calloc(n, sizeof *slot);
    if (!b || !station || !y0 || !active || !slot) {
        free(y0), free(active), free(slot);
        return kr_params_error(params, "capacity", "memory for the bath's slots", "out of memory");
    }
    ode.capacity = n;
    ode.active = active;
    *b = (bath_t){ .ode = ode, .part_temperature = part_temperature, .active = active, .slot = slot,
                   .plimit = (size_t)profile_points, .pstride = 1 };
    kr_tally_init(&b->lead);
    station->receive = bath_receive;
    y0[0] = initial;
    for (size_t i = 0; i < n; i++) y0[1 + i] = part_temperature;
    st = kr_continuous_set_ode(sim, &(kr_ode_desc_t){ .dim = n + 1, .rhs = bath_rhs, .jacobian = bath_jacobian,
                                                      .params = &b->ode, .initial = y0 });
    free(y0);
    if (st == KR_OK)
        st = kr_continuous_add_state_event(sim, &(kr_ode_threshold_t){ .g = bath_hottest_over_target,
                                                                       .direction = +1 },
                                           kr_model_find_event_type(model, FACTORY_DONE), NULL);
    kr_component_t c = kr_component_lookup(kr_model_registry(model), FACTORY_BATH);
    if (st == KR_OK && kr_entity_create_desc(kr_sim_world(sim), &(kr_entity_desc_t){ .name = "bath",
            .components = &c, .component_count = 1 }) == KR_ENTITY_INVALID)
        st = kr_last_status();
    if (st == KR_OK) profile_add(b, 0.0, initial);
    return st;
}

static void bath_report(kr_sim_t *sim, kr_report_t *r)
{
    bath_t *b = factory_context(sim, FACTORY_BATH);
    double *y = kr_continuous_state(sim, NULL);
    if (!b || !b->slot || !y) return;
    kr_report_int(r, "received", (int64_t)b->received);
    kr_report_int(r, "finished", (int64_t)b->finished);
    kr_report_int(r, "in_bath", (int64_t)b->in_bath);
    kr_report_int(r, "waiting", (int64_t)b->waiting.len);
    kr_report_number(r, "mean_lead_time", kr_tally_mean(&b->lead));
    kr_report_tally(r, "lead_time", &b->lead);
    kr_report_number(r, "temperature", y[0]);
    size_t n = b->pn;
    if (!b->plast_kept && b->ptime) {
        /* The last update point always shows (the arrays have room for it). */
        b->ptime[n] = b->plast_t;
        b->ptemp[n] = b->plast_v;
        n++;
    }
    kr_report_series(r, "temperature_profile", b->ptime, b->ptemp, n);
}

static uint64_t bath_digest(kr_sim_t *sim)
{
    bath_t *b = factory_context(sim, FACTORY_BATH);
    size_t dim = 0;
    double *y = kr_continuous_state(sim, &dim);
    if (!b || !b->slot || !y) return 0;
    uint64_t h = factory_mix(UINT64_C(0xba7c0000), b->received);
    h = factory_mix(h, b->finished);
    h = factory_mix(h, b->waiting.len);
    h = factory_mix(h, b->lead.count);
    h = factory_mix(h, factory_double_bits(b->lead.mean));
    h = factory_mix(h, factory_double_bits(b->lead.m2));
    h = factory_mix(h, b->pcandidates);
    for (size_t i = 0; i < dim; i++) h = factory_mix(h, factory_double_bits(y[i]));
    for (size_t i = 0; i < b->ode.capacity; i++) {
        const factory_part_t *p = b->active[i] ? factory_part_get(sim, b->slot[i]) : NULL;
        h = factory_mix(h, p ? p->serial : UINT64_MAX);
    }
    return h;
}

const kr_kind_desc_t kr__factory_bath_kind = {
    .name = "bath",
    .summary = "factory chemical bath: heats each part along an ODE until a state event finds it at the target",
    .formalism = KR_CONTINUOUS,
    .register_types = bath_register,
    .setup = bath_setup,
    .report = bath_report,
    .digest = bath_digest,
};
