/* "bath": the factory's chemical bath (continuous by default).
 *
 * The temperature T follows dT/dt = heater - k (T - ambient). Each part
 * that arrives absorbs heat (T -= part_cooling), is counted and leaves the
 * model; a state event counts every rise of T above `alarm`. */
#include <stdio.h>
#include <stdlib.h>

#include "factory.h"

#define FACTORY_ALARM "factory.alarm"

/* Read by the ODE callbacks: kept on the heap (the ODE engine keeps the
 * pointer; component storage may move), owned by the station. */
typedef struct bath_ode {
    double ambient, k, heater, alarm;
} bath_ode_t;

typedef struct bath {
    bath_ode_t *ode;
    double part_cooling;
    uint64_t received, alarms;
    uint64_t residence_ticks; /* sum over received parts of arrival - creation */
} bath_t;

static int bath_rhs(double t, const double y[], double dydt[], void *params)
{
    (void)t;
    const bath_ode_t *p = params;
    dydt[0] = p->heater - p->k * (y[0] - p->ambient);
    return 0;
}

static int bath_jacobian(double t, const double y[], double *dfdy, double dfdt[], void *params)
{
    (void)t, (void)y;
    dfdy[0] = -((const bath_ode_t *)params)->k;
    dfdt[0] = 0.0;
    return 0;
}

static double bath_over_alarm(double t, const double y[], void *params)
{
    (void)t;
    return y[0] - ((const bath_ode_t *)params)->alarm;
}

static void bath_destroy(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)w, (void)self;
    free(((bath_t *)state)->ode);
    ((bath_t *)state)->ode = NULL;
}

static const kr_behavior_vtbl_t bath_vtbl = { .on_destroy = bath_destroy };

static void bath_alarm(kr_sim_t *sim, void *data)
{
    (void)data;
    bath_t *b = factory_station(sim, FACTORY_BATH);
    if (!b) return;
    b->alarms++;
    kr_log(sim, KR_LOG_DEBUG, "temperature above %g", b->ode->alarm);
}

void factory_bath_receive(kr_sim_t *sim, const kr_entity_t *parts, size_t count)
{
    kr_world_t *w = kr_sim_world(sim);
    kr_component_t part_c = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), FACTORY_PART);
    kr_time_t now = kr_sim_now(sim);
    double *y = kr_continuous_state(sim, NULL);
    for (size_t i = 0; i < count; i++) {
        const factory_part_t *p = kr_component_get(w, parts[i], part_c);
        kr_time_t created = p ? p->created : now;  /* a part without a record: residence 0 */
        bath_t *b = factory_station(sim, FACTORY_BATH);
        b->received++;
        b->residence_ticks += now >= created ? now - created : 0;
        if (y) y[0] -= b->part_cooling;
        kr_entity_destroy(w, parts[i]);             /* treated: it leaves the model */
    }
}

static kr_status_t bath_register(kr_model_t *model)
{
    kr_status_t st = factory_register_common(model);
    if (st == KR_OK) st = factory_register_behavior(model, FACTORY_BATH, sizeof(bath_t), &bath_vtbl);
    if (st == KR_OK && !kr_model_find_event_type(model, FACTORY_ALARM) &&
        !kr_model_event_type(model, &(kr_event_type_desc_t){ .name = FACTORY_ALARM, .on_event = bath_alarm }))
        st = kr_last_status();
    return st;
}

static kr_status_t bath_setup(kr_sim_t *sim, const kr_params_t *params)
{
    kr_model_t *model = kr_sim_model(sim);
    bath_ode_t ode = { 0 };
    double initial = 0, part_cooling = 0;
    kr_status_t st = kr_params_number(params, "ambient", 20.0, &ode.ambient);
    if (st == KR_OK) st = kr_params_number(params, "k", 0.1, &ode.k);
    if (st == KR_OK && ode.k < 0) {
        char found[64];
        snprintf(found, sizeof found, "%g", ode.k);
        st = kr_params_error(params, "k", "a number >= 0", found);
    }
    if (st == KR_OK) st = kr_params_number(params, "heater", 5.0, &ode.heater);
    if (st == KR_OK) st = kr_params_number(params, "initial", ode.ambient, &initial);
    if (st == KR_OK) st = kr_params_number(params, "part_cooling", 0.5, &part_cooling);
    if (st == KR_OK) st = kr_params_number(params, "alarm", 80.0, &ode.alarm);
    if (st != KR_OK) return st;

    bath_t *b = factory_station_create(sim, FACTORY_BATH);
    if (!b) return kr_last_status();
    /* The station owns the ODE parameters from here on (freed by on_destroy). */
    b->ode = malloc(sizeof *b->ode);
    if (!b->ode) return kr_params_error(params, "ambient", "memory for the bath's state", "out of memory");
    *b->ode = ode;
    b->part_cooling = part_cooling;
    bath_ode_t *p = b->ode;
    st = kr_continuous_set_ode(sim, &(kr_ode_desc_t){ .dim = 1, .rhs = bath_rhs, .jacobian = bath_jacobian,
                                                      .params = p, .initial = &initial });
    if (st == KR_OK)
        st = kr_continuous_add_state_event(sim, &(kr_ode_threshold_t){ .g = bath_over_alarm, .direction = +1 },
                                           kr_model_find_event_type(model, FACTORY_ALARM), NULL);
    return st;
}

static double bath_temperature(kr_sim_t *sim)
{
    double *y = kr_continuous_state(sim, NULL);
    return y ? y[0] : 0.0;
}

static void bath_report(kr_sim_t *sim, kr_report_t *r)
{
    const bath_t *b = factory_station(sim, FACTORY_BATH);
    if (!b) return;
    double precision = (double)kr_model_precision(kr_sim_model(sim));
    kr_report_int(r, "received", (int64_t)b->received);
    kr_report_number(r, "temperature", bath_temperature(sim));
    kr_report_int(r, "alarms", (int64_t)b->alarms);
    kr_report_number(r, "mean_residence",
                     b->received ? (double)b->residence_ticks / (double)b->received / precision : 0.0);
}

static uint64_t bath_digest(kr_sim_t *sim)
{
    const bath_t *b = factory_station(sim, FACTORY_BATH);
    if (!b) return 0;
    uint64_t h = factory_mix(UINT64_C(0xba7c0000), b->received);
    h = factory_mix(h, b->alarms);
    h = factory_mix(h, b->residence_ticks);
    return factory_mix(h, factory_double_bits(bath_temperature(sim)));
}

const kr_kind_desc_t kr_factory_bath_kind = {
    .name = "bath",
    .summary = "factory chemical bath: temperature ODE, cooled by arriving parts, counts alarms",
    .formalism = KR_CONTINUOUS,
    .register_types = bath_register,
    .setup = bath_setup,
    .report = bath_report,
    .digest = bath_digest,
};
