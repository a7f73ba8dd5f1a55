/* "rows": fan-in production lines (docs/models/rows.md).
 *
 * A simulator of kind rows is either a line (role "line", the default) or
 * the final simulator the lines feed (role "final"). A line makes totes at
 * random intervals and moves each through `conveyors` conveyor sections in
 * series. A section is an accumulating FIFO: a tote needs `transit` to
 * cross it, plus, with probability `delay_probability`, an extra draw of
 * `delay` (a snag); it cannot leave before the tote ahead of it on that
 * section left plus `spacing`, so a snagged tote holds back the ones behind
 * it, as on a real conveyor. A tote that leaves the last section is shipped
 * to `to` with a sync-event `sync_delay` later (at least the edge's
 * promise); the final simulator counts what it receives.
 *
 * Each tote is an entity of the line's world (the rows.tote component)
 * from its arrival until it is shipped; one local event per section end
 * moves it on. Every draw comes from the simulator's own stream, so the
 * answer does not depend on ranks or on the synchronization algorithm. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/kairos.h"
#include "models/factory/factory.h"
#include "models/rows/rows.h"
#include "models/serialize.h"

#define ROWS_TOTE "rows.tote"
#define ROWS_SECTIONS "rows.sections"

/* The tote component, on a line. */
typedef struct rows_tote {
    uint64_t serial;            /* 0, 1, 2, ... per line */
    kr_time_t created;          /* ticks */
    kr_time_t extra;            /* extra delay drawn so far, ticks */
    uint32_t snags;             /* sections on which it drew an extra delay */
} rows_tote_t;

/* The payload of a section end: which tote, which section it leaves. */
typedef struct rows_leave {
    kr_entity_t tote;
    uint32_t section;
} rows_leave_t;

/* The payload of a shipment to the final simulator. */
typedef struct rows_ship {
    uint32_t line;              /* the sending simulator's id */
    uint32_t snags;
    uint64_t serial;
    kr_time_t created, extra;   /* ticks */
} rows_ship_t;

/* The kind's state (kr_sim_state). */
typedef struct rows {
    /* params of the table below (a line's; a final takes `role` only) */
    const char *role;
    kr_dist_t interval, transit, delay;
    double delay_probability;
    int64_t conveyors, limit;
    kr_time_t spacing;
    /* params read by setup: their defaults come from the edge and a draw */
    uint32_t target;
    kr_time_t sync_delay;
    bool final;
    uint64_t precision;
    kr_time_t end_time;
    kr_world_t *world;
    kr_rng_t *rng;
    kr_component_t tote_comp;
    /* ids, not kr_schedule_in by handler: these are the benchmark's hot path */
    kr_event_type_t arrive, leave, ship;
    kr_time_t *last_exit;       /* per section: when its last tote left (freed by the rows.sections context) */
    /* line; digested (state_fields), reported by rows_report */
    uint64_t generated, shipped, shipped_late, passes, snags;
    kr_time_t extra_total;
    /* final */
    uint64_t received, received_snagged;
    kr_tally_t lead_time;       /* model units, creation to arrival here */
} rows_t;

static void fail(kr_sim_t *sim, const char *what)
{
    kr_sim_fail(sim, kr_last_status(), "rows: %s: %s", what, kr_last_error());
}

/* Puts the tote on section `k` at the current time: schedules its end. */
static void enter_section(kr_sim_t *sim, rows_t *r, kr_entity_t tote, uint32_t k)
{
    kr_time_t now = kr_sim_now(sim);
    kr_time_t cross = kr_dist_sample_ticks(&r->transit, r->rng, r->precision);
    rows_tote_t *t = kr_component_get(r->world, tote, r->tote_comp);
    r->passes++;
    if (kr_rng_uniform(r->rng) < r->delay_probability) {
        kr_time_t extra = kr_dist_sample_ticks(&r->delay, r->rng, r->precision);
        cross += extra;
        r->snags++;
        r->extra_total += extra;
        if (t) {
            t->snags++;
            t->extra += extra;
        }
    }
    kr_time_t leave = now + cross;
    if (r->last_exit[k] != KR_TIME_NEVER && leave < r->last_exit[k] + r->spacing) leave = r->last_exit[k] + r->spacing;
    r->last_exit[k] = leave;
    rows_leave_t msg = { .tote = tote, .section = k };
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, leave - now, r->leave, &msg, NULL)) fail(sim, "moving a tote");
}

static void arrive(kr_sim_t *sim, void *data)
{
    (void)data;
    rows_t *r = kr_sim_state(sim);
    kr_entity_t tote = kr_entity_create_desc(r->world, &(kr_entity_desc_t){ .components = &r->tote_comp,
                                                                             .component_count = 1 });
    if (!tote) {
        fail(sim, "making a tote");
        return;
    }
    *(rows_tote_t *)kr_component_get(r->world, tote, r->tote_comp) =
        (rows_tote_t){ .serial = r->generated, .created = kr_sim_now(sim) };
    r->generated++;
    enter_section(sim, r, tote, 0);
    if (r->limit == 0 || r->generated < (uint64_t)r->limit) {
        kr_time_t gap = kr_dist_sample_ticks(&r->interval, r->rng, r->precision);
        if (kr_schedule(sim, KR_PRIORITY_DEFAULT, gap, r->arrive, NULL, NULL)) fail(sim, "planning the next tote");
    }
}

static void leave(kr_sim_t *sim, void *data)
{
    const rows_leave_t *m = data;
    rows_t *r = kr_sim_state(sim);
    if (m->section + 1 < (uint64_t)r->conveyors) {
        enter_section(sim, r, m->tote, m->section + 1);
        return;
    }
    const rows_tote_t *t = kr_component_get(r->world, m->tote, r->tote_comp);
    if (!t) {
        kr_sim_fail(sim, KR_ERR_STATE, "rows: a tote that is not in this line's world");
        return;
    }
    rows_ship_t ship = { .line = kr_sim_id(sim), .snags = t->snags, .serial = t->serial,
                         .created = t->created, .extra = t->extra };
    if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = r->target, .delay = r->sync_delay, .type = r->ship,
                                                 .data = &ship }, NULL)) {
        fail(sim, "shipping a tote");
        return;
    }
    r->shipped++;
    if (kr_sim_now(sim) + r->sync_delay > r->end_time) r->shipped_late++;
    if (kr_entity_destroy(r->world, m->tote)) fail(sim, "removing a shipped tote");
}

static void receive(kr_sim_t *sim, void *data)
{
    const rows_ship_t *m = data;
    /* the receiver's own state, if it is a rows simulator: nothing from the wire picks it */
    rows_t *r = kr_sim_user(sim, &kr__rows_kind);
    if (!r || !r->final) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "rows: a tote from simulator %u arrived at a simulator that is not a final "
                    "one", m->line);
        return;
    }
    if (m->created > kr_sim_now(sim)) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "rows: a tote from simulator %u made after it arrived", m->line);
        return;
    }
    r->received++;
    if (m->snags) r->received_snagged++;
    kr_tally_add(&r->lead_time, kr_time_to_units(kr_sim_now(sim) - m->created, r->precision));
}

/* The sections' last exits are memory no state slot holds: a context of
 * their own frees them. */
static void sections_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    free(*(kr_time_t **)context);
}

static kr_status_t rows_register(kr_model_t *m)
{
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = ROWS_SECTIONS, .size = sizeof(kr_time_t *),
                                                        .fini = sections_fini }) ||
        !kr_component_register(kr_model_registry(m), &(kr_component_desc_t){
            .name = ROWS_TOTE, .size = sizeof(rows_tote_t), .align = _Alignof(rows_tote_t) }))
        return kr_last_status();
    return KR_OK;
}

/* A distribution param whose draws must not be negative: a time. */
static kr_status_t check_time_dist(const kr_params_t *p, const char *key, const kr_dist_t *d)
{
    if (kr_dist_mean(d) >= 0) return KR_OK;
    char found[64];
    snprintf(found, sizeof found, "a distribution with mean %g", kr_dist_mean(d));
    return kr_params_error(p, key, "a distribution of times, with a mean >= 0", found);
}

/* The `to` param of a line (a simulator it has a dependency to, read as
 * the factory kinds read theirs) and the sync delay, at least that edge's
 * promise. */
static kr_status_t line_target(kr_sim_t *sim, rows_t *r, const kr_params_t *p)
{
    kr_time_t promise = 0;
    kr_status_t st = factory_param_target(sim, p, &r->target, &promise);
    if (!st) st = factory_check_takes(sim, p, "to", r->target, "rows.ship");
    if (!st) st = kr_params_duration(p, "sync_delay", promise, &r->sync_delay);
    if (st) return st;
    if (r->sync_delay < promise) {
        char expected[300], found[64];
        snprintf(expected, sizeof expected, "a delay >= the promise %g of '%.120s' -> '%.120s'",
                 kr_time_to_units(promise, r->precision), kr_sim_name(sim),
                 kr_sim_name(kr_model_sim(kr_sim_model(sim), r->target)));
        snprintf(found, sizeof found, "%g", kr_time_to_units(r->sync_delay, r->precision));
        return kr_params_error(p, "sync_delay", expected, found);
    }
    return KR_OK;
}

static kr_status_t line_setup(kr_sim_t *sim, rows_t *r, const kr_params_t *p)
{
    kr_status_t st = line_target(sim, r, p);
    if (!st) st = check_time_dist(p, "interval", &r->interval);
    if (!st) st = check_time_dist(p, "transit", &r->transit);
    if (!st) st = check_time_dist(p, "delay", &r->delay);
    kr_time_t first = KR_TIME_NEVER;
    if (!st) st = kr_params_duration(p, "first", KR_TIME_NEVER, &first);
    if (st) return st;
    double tick = 1.0 / (double)kr_model_precision(kr_sim_model(sim));
    if (r->limit == 0 && !(kr_dist_mean(&r->interval) >= tick)) {
        /* a zero interval without a limit would make totes forever at one
         * time, and one below a tick (each gap taken as one) a million a unit */
        char found[64], expected[96];
        snprintf(found, sizeof found, "a distribution with mean %g and no limit", kr_dist_mean(&r->interval));
        snprintf(expected, sizeof expected, "a distribution with a mean of at least one tick (%g), or a \"limit\"",
                 tick);
        return kr_params_error(p, "interval", expected, found);
    }
    kr_time_t **sections = kr_sim_context(sim, kr_model_find_context_type(kr_sim_model(sim), ROWS_SECTIONS));
    if (!sections) return kr_last_status();
    if (!(*sections = r->last_exit = malloc((size_t)r->conveyors * sizeof *r->last_exit)))
        return kr_params_error(p, "conveyors", "a number of conveyors that fits in memory", "too many");
    for (int64_t k = 0; k < r->conveyors; k++) r->last_exit[k] = KR_TIME_NEVER;
    if (first == KR_TIME_NEVER) first = kr_dist_sample_ticks(&r->interval, r->rng, r->precision);
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, first, r->arrive, NULL, NULL);
}

/* What only a line takes: a final refuses it as an unknown key, as when
 * it read `role` alone. */
static const char *const line_keys[] = { "to", "sync_delay", "first", "interval", "transit", "delay",
                                         "delay_probability", "conveyors", "spacing", "limit" };

static kr_status_t rows_setup(kr_sim_t *sim, const kr_params_t *p)
{
    kr_model_t *m = kr_sim_model(sim);
    rows_t *r = kr_sim_state(sim);
    kr_sim_set_user(sim, &kr__rows_kind, r); /* a shipment checks that it reached a rows simulator */
    r->precision = kr_model_precision(m);
    r->end_time = kr_model_end_time(m);
    r->world = kr_sim_world(sim);
    r->rng = kr_sim_rng(sim);
    r->tote_comp = kr_component_lookup(kr_model_registry(m), ROWS_TOTE);
    r->arrive = kr_model_handler_type(m, arrive);
    r->leave = kr_model_handler_type(m, leave);
    r->ship = kr_model_handler_type(m, receive);
    kr_tally_init(&r->lead_time);
    if (!strcmp(r->role, "final")) {
        r->final = true;
        for (size_t i = 0; i < sizeof line_keys / sizeof *line_keys; i++) {
            if (!kr_params_json_type(p, line_keys[i])) continue;
            char found[64];
            snprintf(found, sizeof found, "the unknown key \"%s\"", line_keys[i]);
            return kr_params_error(p, line_keys[i], "a parameter of kind 'rows' (role)", found);
        }
        return KR_OK;
    }
    if (strcmp(r->role, "line")) {
        char found[300];
        snprintf(found, sizeof found, "\"%.280s\"", r->role);
        return kr_params_error(p, "role", "\"line\" or \"final\"", found);
    }
    return line_setup(sim, r, p);
}

static void rows_report(kr_sim_t *sim, kr_report_t *rep)
{
    rows_t *r = kr_sim_state(sim);
    if (!r) return;
    if (r->final) {
        kr_report_string(rep, "role", "final");
        kr_report_int(rep, "received", (int64_t)r->received);
        kr_report_int(rep, "received_snagged", (int64_t)r->received_snagged);
        kr_report_number(rep, "mean_lead_time", kr_tally_mean(&r->lead_time));
        kr_report_number(rep, "max_lead_time", kr_tally_max(&r->lead_time));
        return;
    }
    kr_report_string(rep, "role", "line");
    kr_report_int(rep, "generated", (int64_t)r->generated);
    kr_report_int(rep, "shipped", (int64_t)r->shipped);
    kr_report_int(rep, "shipped_late", (int64_t)r->shipped_late);
    kr_report_int(rep, "on_line", (int64_t)kr_world_entity_count(r->world));
    kr_report_int(rep, "passes", (int64_t)r->passes);
    kr_report_int(rep, "snags", (int64_t)r->snags);
    kr_report_number(rep, "mean_snag", r->snags ? kr_time_to_units(r->extra_total, r->precision) / (double)r->snags
                                                : NAN);
}

/* Checkpoints: totes are entities of the world, moves and shipments
 * events, draws kr_sim_rng's, and the counters in state_fields declared.
 * What else changes during the run: each section's last exit (the
 * rows.sections context, which has no fields: setup makes it again with
 * every section empty), shipped_late and a final's lead-time tally. */
static kr_status_t rows_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    rows_t *r = kr_sim_state(sim);
    /* setup's pointers, taken afresh should the restart have replaced the
     * world or the stream objects rather than their contents */
    if (kr_serializer_loading(s)) {
        r->world = kr_sim_world(sim);
        r->rng = kr_sim_rng(sim);
    }
    uint64_t sections = r->last_exit ? (uint64_t)r->conveyors : 0, saved = sections;
    kr_status_t st = kr_ser_u64(s, &saved);
    if (st) return st;
    if (saved != sections) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "rows: a checkpoint of %llu conveyor sections, this line has %llu",
                    (unsigned long long)saved, (unsigned long long)sections);
        return KR_ERR_CORRUPT;
    }
    for (uint64_t k = 0; k < sections; k++) kr__ser_time(s, &r->last_exit[k]);
    kr_ser_u64(s, &r->shipped_late);
    return kr__ser_tally(s, &r->lead_time);
}

const kr_kind_desc_t kr__rows_kind = {
    .name = "rows",
    .summary = "fan-in production lines: totes along conveyor sections with random snags, shipped to a final simulator",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = rows_register,
    .receives = (const char *const[]){ "rows.ship", NULL },
    .setup = rows_setup,
    .report = rows_report,
    .serialize = rows_serialize,
    .state_size = sizeof(rows_t),
    /* plain fields: digested, not reported (rows_report names the figures per role) */
    .state_fields = (const kr_field_t[]){
        KR_FIELD(rows_t, generated, KR_FIELD_U64), KR_FIELD(rows_t, shipped, KR_FIELD_U64),
        KR_FIELD(rows_t, passes, KR_FIELD_U64), KR_FIELD(rows_t, snags, KR_FIELD_U64),
        KR_FIELD(rows_t, extra_total, KR_FIELD_I64), KR_FIELD(rows_t, received, KR_FIELD_U64),
        KR_FIELD(rows_t, received_snagged, KR_FIELD_U64), { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(rows_t, role, KR_PARAM_STRING, .def = "\"line\"",
                 .help = "\"line\" or \"final\": what the simulator is"),
        KR_PARAM(rows_t, interval, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 4}",
                 .help = "time between totes at the head of the line"),
        KR_PARAM(rows_t, transit, KR_PARAM_DIST, .def = "{\"dist\": \"constant\", \"value\": 20}",
                 .help = "time to cross one section, before snags"),
        KR_PARAM(rows_t, delay, KR_PARAM_DIST, .def = "{\"dist\": \"uniform\", \"min\": 1, \"max\": 10}",
                 .help = "extra time of a snag"),
        KR_PARAM(rows_t, delay_probability, KR_PARAM_NUMBER, .def = "0.03", .range = ">= 0, <= 1",
                 .help = "chance that a tote snags on one section"),
        KR_PARAM(rows_t, conveyors, KR_PARAM_INT, .def = "10", .range = ">= 1, <= 1000000",
                 .help = "sections of the line"),
        KR_PARAM(rows_t, spacing, KR_PARAM_DURATION, .def = "1",
                 .help = "least time between two totes leaving one section"),
        KR_PARAM(rows_t, limit, KR_PARAM_INT, .def = "0", .range = ">= 0", .help = "totes to make (0: no limit)"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = "rows.arrive", .on_event = arrive },
        { .name = "rows.leave", .size = sizeof(rows_leave_t), .on_event = leave },
        { .name = "rows.ship", .size = sizeof(rows_ship_t), .on_target_side = receive },
        { 0 } },
};
