/* The hardware-in-the-loop production line (examples/hil/README.md):
 *
 *   feeder --part--> belt --reading, status--> controller
 *                    belt <--divert, stop, start-- controller
 *
 * The feeder makes a part every exponential `interval` with a normal
 * weight. The belt carries each part `sensor_time` of running to the
 * sensor, where it sends the controller a reading, and `divert_time` more
 * to the diverter, where the part is good or, if the controller asked for
 * it in time, rejected. A stopped belt freezes every part where it is:
 * positions are measured on an odometer of running time, not on the clock.
 * The controller here is the in-model policy that examples/hil/controller.py
 * implements outside the model; with the emulation gateway in its place
 * the belt and the feeder are unchanged.
 *
 * The three kinds share their event types, so they live in one file: a
 * sync-event is sent by its target's handler, and each kind declares every
 * type it sends or receives (the same definition declared twice is one
 * type), so that the belt can send readings to a gateway that is no
 * controller kind. Every type that crosses to the controller describes
 * its payload's fields: the gateway writes them as JSON.
 *
 * Parts are entities of the belt's world, listed in arrival order (one
 * speed keeps the order), and everything else that changes is declared
 * state: a checkpoint needs no code of the kinds'. */
#include <math.h>
#include <string.h>
#include "kairos/kairos.h"
#include "models/hil/hil.h"

#define HIL_PART "hil.part"

/* ---- the payloads that cross, and their fields ---- */

typedef struct part_msg {
    uint64_t id;
    double weight;   /* g */
} part_msg_t;

typedef struct reading_msg {
    uint64_t part;
    double weight;
} reading_msg_t;

typedef struct divert_msg {
    uint64_t part;
} divert_msg_t;

/* Zeroed before it is filled: the trailing padding after `running` is
 * copied with the payload. */
typedef struct status_msg {
    double time_stopped;   /* s stopped since the start, the current stop included */
    uint64_t on_belt, good, rejected;
    bool running;
} status_msg_t;

static const kr_field_t part_fields[] = {
    KR_FIELD(part_msg_t, id, KR_FIELD_U64), KR_FIELD(part_msg_t, weight, KR_FIELD_F64), { 0 } };
static const kr_field_t reading_fields[] = {
    KR_FIELD(reading_msg_t, part, KR_FIELD_U64), KR_FIELD(reading_msg_t, weight, KR_FIELD_F64), { 0 } };
static const kr_field_t divert_fields[] = { KR_FIELD(divert_msg_t, part, KR_FIELD_U64), { 0 } };
static const kr_field_t status_fields[] = {
    KR_FIELD(status_msg_t, running, KR_FIELD_BOOL),
    KR_FIELD(status_msg_t, on_belt, KR_FIELD_U64),
    KR_FIELD(status_msg_t, good, KR_FIELD_U64),
    KR_FIELD(status_msg_t, rejected, KR_FIELD_U64),
    KR_FIELD(status_msg_t, time_stopped, KR_FIELD_F64),
    { 0 } };
/* stop and start carry nothing, and say so: an empty object. */
static const kr_field_t no_fields[] = { { 0 } };

/* The target sides, declared here for the shared event table rows. */
static void belt_part(kr_sim_t *sim, void *data);
static void belt_divert(kr_sim_t *sim, void *data);
static void belt_stop(kr_sim_t *sim, void *data);
static void belt_start(kr_sim_t *sim, void *data);
static void controller_reading(kr_sim_t *sim, void *data);
static void controller_status(kr_sim_t *sim, void *data);

/* One definition of each shared type, for every kind that declares it. */
#define EV_PART { .name = "part", .size = sizeof(part_msg_t), .on_target_side = belt_part, .fields = part_fields }
#define EV_DIVERT { .name = "divert", .size = sizeof(divert_msg_t), .on_target_side = belt_divert, \
                    .fields = divert_fields }
#define EV_STOP { .name = "stop", .on_target_side = belt_stop, .fields = no_fields }
#define EV_START { .name = "start", .on_target_side = belt_start, .fields = no_fields }
#define EV_READING { .name = "reading", .size = sizeof(reading_msg_t), .on_target_side = controller_reading, \
                     .fields = reading_fields }
#define EV_STATUS { .name = "status", .size = sizeof(status_msg_t), .on_target_side = controller_status, \
                    .fields = status_fields }

static void fail(kr_sim_t *sim, const char *what)
{
    kr_sim_fail(sim, kr_last_status(), "%s: %s: %s", kr_sim_name(sim), what, kr_last_error());
}

/* ---- feeder ---- */

typedef struct feeder {
    double interval, weight_mean, weight_sd;   /* params */
    const char *to;
    kr_dist_t gap, weight;                     /* made from the params by setup */
    uint64_t made;                             /* also the last part's id */
} feeder_t;

static void feeder_make(kr_sim_t *sim, void *data)
{
    (void)data;
    feeder_t *f = kr_sim_state(sim);
    kr_rng_t *rng = kr_sim_rng(sim);
    part_msg_t part = { .id = ++f->made, .weight = kr_dist_sample(&f->weight, rng) };
    if (kr_send(sim, &(kr_send_t){ .to = f->to, .handler = belt_part, .data = &part })) fail(sim, "sending a part");
    else if (kr_schedule_in(sim, kr_dist_sample(&f->gap, rng), feeder_make, NULL)) fail(sim, "planning the next part");
}

static kr_status_t feeder_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    feeder_t *f = kr_sim_state(sim);
    kr_status_t st = kr_dist_init(&f->gap, &(kr_dist_desc_t){ .kind = KR_DIST_EXPONENTIAL, .mean = f->interval });
    if (!st) st = kr_dist_init(&f->weight, &(kr_dist_desc_t){ .kind = KR_DIST_NORMAL, .mean = f->weight_mean,
                                                               .sd = f->weight_sd });
    /* On a restart the checkpoint replaces the events and the stream: this
     * first draw and event are dropped with the rest of setup's. */
    if (!st) st = kr_schedule_in(sim, kr_dist_sample(&f->gap, kr_sim_rng(sim)), feeder_make, NULL);
    return st;
}

const kr_kind_desc_t kr__hil_feeder_kind = {
    .name = "feeder",
    .summary = "makes a weighed part every exponential `interval` and sends it to `to` (examples/hil)",
    .formalism = KR_DISCRETE_EVENT,
    .setup = feeder_setup,
    /* It sends parts and takes nothing: a sync-event sent to it is refused. */
    .receives = (const char *const[]){ NULL },
    .state_size = sizeof(feeder_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(feeder_t, gap, KR_FIELD_DIST),
        KR_FIELD(feeder_t, weight, KR_FIELD_DIST),
        KR_FIELD(feeder_t, made, KR_FIELD_COUNTER),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(feeder_t, interval, KR_PARAM_NUMBER, .def = "3", .range = "> 0", .unit = "s",
                 .help = "mean time between two parts (exponential), the first one draw after 0"),
        KR_PARAM(feeder_t, weight_mean, KR_PARAM_NUMBER, .def = "100", .range = ">= 0", .unit = "g",
                 .help = "mean weight of a part (normal)"),
        KR_PARAM(feeder_t, weight_sd, KR_PARAM_NUMBER, .def = "4", .range = ">= 0", .unit = "g",
                 .help = "standard deviation of a part's weight"),
        KR_PARAM(feeder_t, to, KR_PARAM_TARGET, .def = "\"belt\"", .help = "where parts go (a belt)"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = "hil.make", .on_event = feeder_make },
        EV_PART,
        { 0 } },
};

/* ---- belt ---- */

/* A part on the belt; `entered` is the odometer reading when it got on. */
typedef struct part {
    uint64_t id;
    double weight;
    kr_time_t entered;
    bool sensed, divert;
} part_t;

static const kr_field_t part_component_fields[] = {
    KR_FIELD(part_t, id, KR_FIELD_U64),
    KR_FIELD(part_t, weight, KR_FIELD_F64),
    KR_FIELD(part_t, entered, KR_FIELD_U64),
    KR_FIELD(part_t, sensed, KR_FIELD_BOOL),
    KR_FIELD(part_t, divert, KR_FIELD_BOOL),
};

static kr_status_t belt_register(kr_model_t *m)
{
    kr_component_t c = kr_component_register(kr_model_registry(m), &(kr_component_desc_t){
        .name = HIL_PART, .size = sizeof(part_t), .fields = part_component_fields,
        .field_count = sizeof part_component_fields / sizeof part_component_fields[0] });
    return c ? KR_OK : kr_last_status();
}

typedef struct belt {
    kr_time_t sensor_time, divert_time, status_every;   /* params */
    const char *controller;
    kr_entity_list_t parts;    /* on the belt, first on first */
    /* Running time in ticks: `odo` at `odo_at`, plus the time since while
     * running. Parts move by it, so a stop freezes them. */
    kr_time_t odo, odo_at;
    kr_time_t stopped, stopped_at;   /* ticks stopped before the current stop, and its start */
    /* The next move carries `gen`; a stop makes it stale instead of
     * cancelling it. At most one current move is pending (`planned`). */
    uint64_t gen;
    bool running, planned;
    uint64_t parts_in, good, rejected, diverts, late_diverts, stops, starts, readings;
    kr_component_t part;       /* setup's */
    kr_event_type_t move, tick;
} belt_t;

static kr_time_t odometer(const belt_t *b, kr_time_t now) { return b->running ? b->odo + (now - b->odo_at) : b->odo; }

static void advance(belt_t *b, kr_time_t now)
{
    b->odo = odometer(b, now);
    b->odo_at = now;
}

/* Plans the move to the next milestone: the first part's arrival at the
 * diverter, or an earlier arrival at the sensor of the first part not
 * sensed yet (the parts before it are all past the sensor). */
static void plan(kr_sim_t *sim)
{
    belt_t *b = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    if (!b->running || b->planned || !b->parts.count) return;
    kr_time_t next = KR_TIME_NEVER;
    for (uint32_t i = 0; i < b->parts.count; i++) {
        const part_t *p = kr_component_get(w, b->parts.items[i], b->part);
        kr_time_t at = p->entered + b->sensor_time + (p->sensed ? b->divert_time : 0);
        if (at < next) next = at;
        if (!p->sensed) break;
    }
    kr_time_t odo = odometer(b, kr_sim_now(sim));
    uint64_t gen = b->gen;
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, next > odo ? next - odo : 0, b->move, &gen, NULL)) fail(sim, "planning a move");
    else b->planned = true;
}

static void belt_part(kr_sim_t *sim, void *data)
{
    const part_msg_t *msg = data;
    belt_t *b = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &b->part, .component_count = 1 });
    if (!e || kr_entity_list_push(&b->parts, e)) { fail(sim, "putting a part on the belt"); return; }
    *(part_t *)kr_component_get(w, e, b->part) =
        (part_t){ .id = msg->id, .weight = msg->weight, .entered = odometer(b, kr_sim_now(sim)) };
    b->parts_in++;
    plan(sim);
}

static void belt_move(kr_sim_t *sim, void *data)
{
    belt_t *b = kr_sim_state(sim);
    if (*(const uint64_t *)data != b->gen) return;   /* planned before a stop */
    kr_world_t *w = kr_sim_world(sim);
    b->planned = false;
    advance(b, kr_sim_now(sim));
    for (uint32_t i = 0; i < b->parts.count;) {
        kr_entity_t e = b->parts.items[i];
        part_t *p = kr_component_get(w, e, b->part);
        if (!p->sensed && p->entered + b->sensor_time <= b->odo) {
            p->sensed = true;
            b->readings++;
            reading_msg_t r = { .part = p->id, .weight = p->weight };
            if (kr_send(sim, &(kr_send_t){ .to = b->controller, .handler = controller_reading, .data = &r })) {
                fail(sim, "sending a reading");
                return;
            }
        }
        if (!p->sensed) break;   /* the parts behind it got on later */
        if (p->entered + b->sensor_time + b->divert_time > b->odo) { i++; continue; }
        if (p->divert) b->rejected++;
        else b->good++;
        kr_entity_list_remove_at(&b->parts, i);
        if (kr_entity_destroy(w, e)) { fail(sim, "taking a part off the belt"); return; }
    }
    plan(sim);
}

static const part_t *find_part(kr_sim_t *sim, uint64_t id)
{
    belt_t *b = kr_sim_state(sim);
    for (uint32_t i = 0; i < b->parts.count; i++) {
        const part_t *p = kr_component_get(kr_sim_world(sim), b->parts.items[i], b->part);
        if (p->id == id) return p;
    }
    return NULL;
}

/* A part still on the belt has not reached the diverter (it leaves there). */
static void belt_divert(kr_sim_t *sim, void *data)
{
    belt_t *b = kr_sim_state(sim);
    part_t *p = (part_t *)find_part(sim, ((const divert_msg_t *)data)->part);
    if (p) {
        p->divert = true;
        b->diverts++;
    } else {
        b->late_diverts++;
    }
}

static void belt_stop(kr_sim_t *sim, void *data)
{
    (void)data;
    belt_t *b = kr_sim_state(sim);
    b->stops++;
    if (!b->running) return;
    kr_time_t now = kr_sim_now(sim);
    advance(b, now);
    b->running = false;
    b->stopped_at = now;
    b->gen++;
    b->planned = false;
}

static void belt_start(kr_sim_t *sim, void *data)
{
    (void)data;
    belt_t *b = kr_sim_state(sim);
    b->starts++;
    if (b->running) return;
    kr_time_t now = kr_sim_now(sim);
    advance(b, now);
    b->running = true;
    b->stopped += now - b->stopped_at;
    plan(sim);
}

static void belt_tick(kr_sim_t *sim, void *data)
{
    (void)data;
    belt_t *b = kr_sim_state(sim);
    kr_time_t now = kr_sim_now(sim);
    status_msg_t s;
    memset(&s, 0, sizeof s);
    s.running = b->running;
    s.on_belt = b->parts.count;
    s.good = b->good;
    s.rejected = b->rejected;
    s.time_stopped = kr_time_to_units(b->stopped + (b->running ? 0 : now - b->stopped_at),
                                      kr_model_precision(kr_sim_model(sim)));
    if (kr_send(sim, &(kr_send_t){ .to = b->controller, .handler = controller_status, .data = &s }))
        fail(sim, "sending a status");
    else if (kr_schedule(sim, KR_PRIORITY_DEFAULT, b->status_every, b->tick, NULL, NULL))
        fail(sim, "planning the next status");
}

static kr_status_t belt_setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    belt_t *b = kr_sim_state(sim);
    kr_model_t *m = kr_sim_model(sim);
    b->part = kr_component_lookup(kr_model_registry(m), HIL_PART);
    /* By id, in ticks: positions are whole ticks of the odometer. */
    b->move = kr_model_handler_type(m, belt_move);
    b->tick = kr_model_handler_type(m, belt_tick);
    b->running = true;
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, b->status_every, b->tick, NULL, NULL);
}

const kr_kind_desc_t kr__hil_belt_kind = {
    .name = "belt",
    .summary = "carries parts past a sensor to a diverter; a controller diverts parts and stops it (examples/hil)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = belt_register,
    .setup = belt_setup,
    .state_size = sizeof(belt_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(belt_t, parts, KR_FIELD_ENTITY_LIST),
        KR_FIELD(belt_t, odo, KR_FIELD_U64),
        KR_FIELD(belt_t, odo_at, KR_FIELD_U64),
        KR_FIELD(belt_t, stopped, KR_FIELD_U64),
        KR_FIELD(belt_t, stopped_at, KR_FIELD_U64),
        KR_FIELD(belt_t, gen, KR_FIELD_U64),
        KR_FIELD(belt_t, running, KR_FIELD_BOOL),
        KR_FIELD(belt_t, planned, KR_FIELD_BOOL),
        KR_FIELD(belt_t, parts_in, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, good, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, rejected, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, diverts, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, late_diverts, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, stops, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, starts, KR_FIELD_COUNTER),
        KR_FIELD(belt_t, readings, KR_FIELD_COUNTER),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(belt_t, sensor_time, KR_PARAM_DURATION, .def = "4", .range = "> 0", .unit = "s",
                 .help = "running time from getting on to the weight sensor"),
        KR_PARAM(belt_t, divert_time, KR_PARAM_DURATION, .def = "2", .range = "> 0", .unit = "s",
                 .help = "running time from the sensor to the diverter"),
        KR_PARAM(belt_t, status_every, KR_PARAM_DURATION, .def = "10", .range = "> 0", .unit = "s",
                 .help = "time between two status messages to the controller"),
        KR_PARAM(belt_t, controller, KR_PARAM_TARGET, .def = "\"controller\"",
                 .help = "where readings and status go (a controller or the gateway)"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = "hil.move", .size = sizeof(uint64_t), .on_event = belt_move },
        { .name = "hil.status", .on_event = belt_tick },
        EV_PART, EV_DIVERT, EV_STOP, EV_START, EV_READING, EV_STATUS,
        { 0 } },
    /* (reading and status are only sent: their target side is the
     * controller's) */
    .receives = (const char *const[]){ "part", "divert", "stop", "start", NULL },
};

/* ---- controller ---- */

typedef struct controller {
    double low, high;            /* params */
    int64_t stop_after;
    kr_time_t restart_after;
    const char *belt;
    uint64_t in_a_row;           /* rejects since the last good part or stop */
    kr_time_t stop_sent;         /* when it last sent stop, if `stopping` */
    bool stopping;               /* sent stop, not start since */
    uint64_t readings, statuses, diverts, stops, starts;
} controller_t;

static void command(kr_sim_t *sim, kr_event_fn handler, const void *data, const char *what)
{
    controller_t *c = kr_sim_state(sim);
    if (kr_send(sim, &(kr_send_t){ .to = c->belt, .handler = handler, .data = data })) fail(sim, what);
}

static void controller_reading(kr_sim_t *sim, void *data)
{
    const reading_msg_t *r = data;
    controller_t *c = kr_sim_state(sim);
    c->readings++;
    if (r->weight >= c->low && r->weight <= c->high) {
        c->in_a_row = 0;
        return;
    }
    command(sim, belt_divert, &(divert_msg_t){ .part = r->part }, "sending a divert");
    c->diverts++;
    if (++c->in_a_row < (uint64_t)c->stop_after) return;
    /* Something upstream is wrong: stop and give people time to look. */
    command(sim, belt_stop, NULL, "sending a stop");
    c->stops++;
    c->in_a_row = 0;
    c->stopping = true;
    c->stop_sent = kr_sim_now(sim);
}

static void controller_status(kr_sim_t *sim, void *data)
{
    const status_msg_t *s = data;
    controller_t *c = kr_sim_state(sim);
    c->statuses++;
    if (s->running || !c->stopping || kr_sim_now(sim) - c->stop_sent < c->restart_after) return;
    command(sim, belt_start, NULL, "sending a start");
    c->starts++;
    c->stopping = false;
}

const kr_kind_desc_t kr__hil_controller_kind = {
    .name = "controller",
    .summary = "rejects parts outside [low, high], stops the belt after `stop_after` rejects in a row (examples/hil)",
    .formalism = KR_DISCRETE_EVENT,
    .state_size = sizeof(controller_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(controller_t, in_a_row, KR_FIELD_U64),
        KR_FIELD(controller_t, stop_sent, KR_FIELD_U64),
        KR_FIELD(controller_t, stopping, KR_FIELD_BOOL),
        KR_FIELD(controller_t, readings, KR_FIELD_COUNTER),
        KR_FIELD(controller_t, statuses, KR_FIELD_COUNTER),
        KR_FIELD(controller_t, diverts, KR_FIELD_COUNTER),
        KR_FIELD(controller_t, stops, KR_FIELD_COUNTER),
        KR_FIELD(controller_t, starts, KR_FIELD_COUNTER),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(controller_t, low, KR_PARAM_NUMBER, .def = "92", .unit = "g", .help = "lightest good part"),
        KR_PARAM(controller_t, high, KR_PARAM_NUMBER, .def = "108", .unit = "g", .help = "heaviest good part"),
        KR_PARAM(controller_t, stop_after, KR_PARAM_INT, .def = "3", .range = ">= 1, <= 1000000",
                 .help = "rejects in a row that stop the belt"),
        KR_PARAM(controller_t, restart_after, KR_PARAM_DURATION, .def = "20", .range = ">= 0", .unit = "s",
                 .help = "restart a stopped belt at the first status this long after the stop"),
        KR_PARAM(controller_t, belt, KR_PARAM_TARGET, .def = "\"belt\"", .help = "the belt it drives"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){ EV_READING, EV_STATUS, EV_DIVERT, EV_STOP, EV_START, { 0 } },
    .receives = (const char *const[]){ "reading", "status", NULL },
};
