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
#include "models/serialize.h"

#define FACTORY_BATH "factory.bath" /* the behavior of the bath entity */

/* The declared state: the params, then the run's state. The ODE callbacks
 * get a pointer to it: the block never moves. */
typedef struct bath {
    double ambient, heater, loss, exchange, heat_ratio;   /* params */
    int64_t capacity;
    double part_temperature, target;
    int64_t profile_points;
    kr_entity_list_t slot;       /* capacity entries: the part in each slot, KR_ENTITY_INVALID if free */
    size_t in_bath;
    kr_entity_list_t waiting;    /* parts waiting for a slot, oldest first */
    uint64_t received, finished;
    kr_tally_t lead;             /* lead times of finished parts, model units */
    /* The temperature profile: every stride-th update point (when full,
     * every other point goes and the stride doubles), and the last one.
     * Number lists of the state own their values (freed with the
     * simulator); the bath fills them itself, with room for pcap + 1. */
    kr_number_list_t ptime, ptemp;
    size_t pcap;
    uint64_t pcandidates, pstride;
    double plast_t, plast_v;
    bool plast_kept;
} bath_t;

static bool occupied(const bath_t *b, size_t i) { return b->slot.items[i] != KR_ENTITY_INVALID; }

static int bath_rhs(double t, const double y[], double dydt[], void *params)
{
    (void)t;
    const bath_t *p = params;
    double absorbed = 0.0;
    for (size_t i = 0; i < (size_t)p->capacity; i++) {
        double d = occupied(p, i) ? p->exchange * (y[0] - y[1 + i]) : 0.0;
        dydt[1 + i] = d;
        absorbed += d;
    }
    dydt[0] = p->heater - p->loss * (y[0] - p->ambient) - p->heat_ratio * absorbed;
    return 0;
}

static int bath_jacobian(double t, const double y[], double *dfdy, double dfdt[], void *params)
{
    (void)t, (void)y;
    const bath_t *p = params;
    size_t n = (size_t)p->capacity + 1;
    memset(dfdy, 0, n * n * sizeof *dfdy);
    memset(dfdt, 0, n * sizeof *dfdt);
    dfdy[0] = -p->loss;
    for (size_t i = 0; i < (size_t)p->capacity; i++) {
        if (!occupied(p, i)) continue;
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
    const bath_t *p = params;
    double g = -INFINITY;
    for (size_t i = 0; i < (size_t)p->capacity; i++)
        if (occupied(p, i) && y[1 + i] - p->target > g) g = y[1 + i] - p->target;
    return g == -INFINITY ? -1.0 : g;
}

static void profile_add(bath_t *b, double t, double v)
{
    size_t pn = b->ptime.count, plimit = (size_t)b->profile_points;
    b->plast_t = t, b->plast_v = v, b->plast_kept = false;
    if (b->pcandidates++ % b->pstride != 0) return;
    if (pn == b->pcap && b->pcap < plimit) {
        size_t cap = b->pcap ? 2 * b->pcap : 256;
        if (cap > plimit) cap = plimit;
        double *t2 = realloc((double *)b->ptime.values, (cap + 1) * sizeof *t2);
        if (t2) b->ptime.values = t2;
        double *v2 = t2 ? realloc((double *)b->ptemp.values, (cap + 1) * sizeof *v2) : NULL;
        if (v2) b->ptemp.values = v2;
        if (v2) b->pcap = cap;
    }
    double *ptime = (double *)b->ptime.values, *ptemp = (double *)b->ptemp.values;
    if (pn == b->pcap) {
        if (b->pcap < plimit) return;   /* out of memory: the profile stops growing */
        /* Stored point j is candidate j x stride: keep the even ones. */
        for (size_t j = 0; 2 * j < pn; j++) {
            ptime[j] = ptime[2 * j];
            ptemp[j] = ptemp[2 * j];
        }
        pn = (pn + 1) / 2;
        b->ptime.count = b->ptemp.count = pn;
        b->pstride *= 2;
        if ((b->pcandidates - 1) % b->pstride != 0) return;
    }
    ptime[pn] = t;
    ptemp[pn] = v;
    b->ptime.count = b->ptemp.count = pn + 1;
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
    profile_now(sim, kr_sim_state(sim));
}

static const kr_behavior_vtbl_t bath_vtbl = { .on_update = bath_update };

static void admit(kr_sim_t *sim, bath_t *b, size_t i, kr_entity_t part)
{
    double *y = kr_continuous_state(sim, NULL);
    b->slot.items[i] = part;
    b->in_bath++;
    y[1 + i] = b->part_temperature;
}

static void admit_waiting(kr_sim_t *sim, bath_t *b)
{
    for (size_t i = 0; i < (size_t)b->capacity && b->waiting.count; i++)
        if (!occupied(b, i)) admit(sim, b, i, factory_queue_pop(&b->waiting));
}

static void bath_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count)
{
    bath_t *b = kr_sim_state(sim);
    for (size_t i = 0; i < count; i++) {
        b->received++;
        if (kr_entity_list_push(&b->waiting, parts[i]) != KR_OK)
            kr_sim_fail(sim, KR_ERR_NOMEM, "out of memory queueing a part");
    }
    admit_waiting(sim, b);
}

/* The state event: parts at or above the target leave. */
static void bath_done(kr_sim_t *sim, void *data)
{
    (void)data;
    bath_t *b = kr_sim_state(sim);
    double *y = kr_continuous_state(sim, NULL);
    if (!y) return;
    kr_world_t *w = kr_sim_world(sim);
    kr_time_t now = kr_sim_now(sim);
    uint64_t precision = kr_model_precision(kr_sim_model(sim));
    for (size_t i = 0; i < (size_t)b->capacity; i++) {
        if (!occupied(b, i) || y[1 + i] < b->target) continue;
        const factory_part_t *p = factory_part_get(sim, b->slot.items[i]);
        kr_time_t created = p && p->created <= now ? p->created : now;
        kr_tally_add(&b->lead, kr_time_to_units(now - created, precision));
        b->finished++;
        kr_entity_destroy(w, b->slot.items[i]);
        b->slot.items[i] = KR_ENTITY_INVALID;
        b->in_bath--;
    }
    admit_waiting(sim, b);
    profile_now(sim, b);
}

static kr_status_t bath_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK && !kr_behavior_register(kr_model_registry(model), &(kr_behavior_desc_t){
            .name = FACTORY_BATH, .vtbl = &bath_vtbl }))
        st = kr_last_status();
    return st;
}

static const factory_station_t bath_station = { .receive = bath_receive };

static kr_status_t bath_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    bath_t *b = kr_sim_state(sim);
    /* Not in the table: its default is `ambient`. */
    double initial = 0;
    kr_status_t st = kr_params_number(params, "initial", b->ambient, &initial);
    if (st != KR_OK) return st;
    if (!(b->part_temperature < b->target)) {
        /* A part must rise to the target: entering at or above it, it never would. */
        char found[128];
        snprintf(found, sizeof found, "%g, not above \"part_temperature\" %g", b->target, b->part_temperature);
        return kr_params_error(params, "target", "a temperature above \"part_temperature\"", found);
    }
    size_t n = (size_t)b->capacity;
    double *y0 = malloc((n + 1) * sizeof *y0);
    for (size_t i = 0; y0 && i < n && !st; i++) st = kr_entity_list_push(&b->slot, KR_ENTITY_INVALID);
    if (!y0 || st) {
        free(y0);
        return kr_params_error(params, "capacity", "memory for the bath's slots", "out of memory");
    }
    b->pstride = 1;
    kr_tally_init(&b->lead);
    factory_set_station(sim, &bath_station);
    y0[0] = initial;
    for (size_t i = 0; i < n; i++) y0[1 + i] = b->part_temperature;
    st = kr_continuous_set_ode(sim, &(kr_ode_desc_t){ .dim = n + 1, .rhs = bath_rhs, .jacobian = bath_jacobian,
                                                      .params = b, .initial = y0 });
    free(y0);
    if (st == KR_OK)
        st = kr_continuous_add_state_event(sim, &(kr_ode_threshold_t){ .g = bath_hottest_over_target,
                                                                       .direction = +1 },
                                           kr_model_handler_type(model, bath_done), NULL);
    kr_component_t c = kr_component_lookup(kr_model_registry(model), FACTORY_BATH);
    if (st == KR_OK && kr_entity_create_desc(kr_sim_world(sim), &(kr_entity_desc_t){ .name = "bath",
            .components = &c, .component_count = 1 }) == KR_ENTITY_INVALID)
        st = kr_last_status();
    if (st == KR_OK) profile_add(b, 0.0, initial);
    return st;
}

static void bath_report(kr_sim_t *sim, kr_report_t *r)
{
    bath_t *b = kr_sim_state(sim);
    double *y = kr_continuous_state(sim, NULL);
    if (!y) return;
    kr_report_int(r, "received", (int64_t)b->received);
    kr_report_int(r, "finished", (int64_t)b->finished);
    kr_report_int(r, "in_bath", (int64_t)b->in_bath);
    kr_report_int(r, "waiting", (int64_t)b->waiting.count);
    kr_report_number(r, "mean_lead_time", kr_tally_mean(&b->lead));
    kr_report_tally(r, "lead_time", &b->lead);
    kr_report_number(r, "temperature", y[0]);
    size_t n = b->ptime.count;
    if (!b->plast_kept && b->ptime.values) {
        /* The last update point always shows (the arrays have room for it). */
        ((double *)b->ptime.values)[n] = b->plast_t;
        ((double *)b->ptemp.values)[n] = b->plast_v;
        n++;
    }
    kr_report_series(r, "temperature_profile", b->ptime.values, b->ptemp.values, n);
}

/* The ODE's state vector, kept by the engine, and the lead-time tally,
 * which has no field type: the rest is declared state. */
static uint64_t bath_digest(kr_sim_t *sim)
{
    const bath_t *b = kr_sim_state(sim);
    size_t dim = 0;
    double *y = kr_continuous_state(sim, &dim);
    double bits[] = { b->lead.mean, b->lead.m2 };
    uint64_t h = kr_digest_mix(b->lead.count), u;
    for (size_t i = 0; i < 2 + dim; i++) {
        memcpy(&u, i < 2 ? &bits[i] : &y[i - 2], sizeof u);
        h = kr_digest_mix(h ^ u);
    }
    return h;
}

/* Checkpoints: the ODE's time and values are the engine's, the parts the
 * world's; slots, waiting parts, counters and the profile's points are
 * declared. What else changes during the run: the parts in the bath, the
 * lead-time tally and the profile's bookkeeping: its capacity, stride and
 * last update point. The profile's lists come back with their points but
 * not their room: profile_add writes up to pcap + 1 values, so loading
 * gives them that room again. The ODE's params pointer is the state
 * block, which setup hands it and which does not move. */
static kr_status_t bath_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    bath_t *b = kr_sim_state(sim);
    uint64_t in_bath = b->in_bath, pcap = b->pcap;
    uint32_t kept = b->plast_kept;
    kr_ser_u64(s, &in_bath);
    kr__ser_tally(s, &b->lead);
    kr_ser_u64(s, &pcap);
    kr_ser_u64(s, &b->pstride);
    kr_ser_f64(s, &b->plast_t);
    kr_ser_f64(s, &b->plast_v);
    kr_status_t st = kr_ser_u32(s, &kept);
    if (st || !kr_serializer_loading(s)) return st;
    if (in_bath > (uint64_t)b->capacity || pcap > (uint64_t)b->profile_points || b->ptime.count > pcap ||
        b->ptemp.count != b->ptime.count || !b->pstride) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "bath: a checkpoint that does not fit this bath (%llu parts in %lld slots, "
                    "a profile of %zu points in room for %llu)", (unsigned long long)in_bath,
                    (long long)b->capacity, b->ptime.count, (unsigned long long)pcap);
        return KR_ERR_CORRUPT;
    }
    b->in_bath = (size_t)in_bath;
    b->plast_kept = kept != 0;
    double *t2 = realloc((double *)b->ptime.values, (pcap + 1) * sizeof *t2);
    if (t2) b->ptime.values = t2;
    double *v2 = t2 ? realloc((double *)b->ptemp.values, (pcap + 1) * sizeof *v2) : NULL;
    if (v2) b->ptemp.values = v2;
    if (!v2) {
        kr_sim_fail(sim, KR_ERR_NOMEM, "bath: out of memory for the temperature profile");
        return KR_ERR_NOMEM;
    }
    b->pcap = (size_t)pcap;
    return KR_OK;
}

const kr_kind_desc_t kr__factory_bath_kind = {
    .name = "bath",
    .summary = "factory chemical bath: heats each part along an ODE until a state event finds it at the target",
    .formalism = KR_CONTINUOUS,
    .register_types = bath_register,
    .setup = bath_setup,
    .report = bath_report,
    .digest = bath_digest,
    .serialize = bath_serialize,
    .formalisms = KR_FORMALISM_BIT(KR_CONTINUOUS),
    .state_size = sizeof(bath_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(bath_t, slot, KR_FIELD_ENTITY_LIST),
        KR_FIELD(bath_t, waiting, KR_FIELD_ENTITY_LIST),
        KR_FIELD(bath_t, received, KR_FIELD_U64),
        KR_FIELD(bath_t, finished, KR_FIELD_U64),
        KR_FIELD(bath_t, pcandidates, KR_FIELD_U64),
        KR_FIELD(bath_t, ptime, KR_FIELD_NUMBER_LIST),
        KR_FIELD(bath_t, ptemp, KR_FIELD_NUMBER_LIST),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(bath_t, ambient, KR_PARAM_NUMBER, .def = "20", .unit = "degrees",
                 .help = "temperature of the surroundings (and Tb at time 0 unless `initial` says)"),
        KR_PARAM(bath_t, heater, KR_PARAM_NUMBER, .def = "4", .unit = "degrees/model unit", .help = "heating"),
        KR_PARAM(bath_t, loss, KR_PARAM_NUMBER, .def = "0.05", .range = ">= 0", .unit = "1/model unit",
                 .help = "heat loss rate to the surroundings"),
        KR_PARAM(bath_t, exchange, KR_PARAM_NUMBER, .def = "0.1", .range = "> 0", .unit = "1/model unit",
                 .help = "heat exchange rate between bath and part"),
        KR_PARAM(bath_t, heat_ratio, KR_PARAM_NUMBER, .def = "0.05", .range = ">= 0",
                 .help = "heat capacity of a part / that of the bath"),
        KR_PARAM(bath_t, capacity, KR_PARAM_INT, .def = "8", .range = ">= 1, <= 100000",
                 .help = "slots (parts heated at once)"),
        KR_PARAM(bath_t, part_temperature, KR_PARAM_NUMBER, .def = "20", .unit = "degrees",
                 .help = "temperature of an entering part"),
        KR_PARAM(bath_t, target, KR_PARAM_NUMBER, .def = "60", .unit = "degrees",
                 .help = "a part leaves when it reaches it (above `part_temperature`)"),
        KR_PARAM(bath_t, profile_points, KR_PARAM_INT, .def = "10000", .range = ">= 2, <= 100000000",
                 .help = "cap on the stored temperature profile"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        FACTORY_SHIP_EVENT, { .name = "factory.done", .on_event = bath_done }, { 0 } },
    .receives = (const char *const[]){ FACTORY_SHIP, NULL },
};
