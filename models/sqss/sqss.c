/* "sqss": Source -> Queue -> Server(s) -> Sink in one discrete-event
 * simulator, each station a resource with behaviors, joined by channels.
 *
 * The source makes a product at every arrival and sends it down its output
 * channel if the queue takes it (its input is open while it has a free
 * place); otherwise that generation is skipped and the source carries on,
 * as in the reference tutorial. The queue hands its oldest product to any
 * server whose input is open (an idle server); a server works for a draw
 * of `service`, then passes the product to the sink and opens its input
 * again, which makes the queue send the next one. The sink records the
 * product's time in system.
 *
 * Statistics count from `warmup` on: time in system for products created
 * after it, queue length and busy servers as time averages from it;
 * created, skipped and received count the whole run. */
#include <math.h>
#include <stdio.h>
#include "kairos/kairos.h"
#include "models/sqss/sqss.h"
#include "models/serialize.h"

#define SQSS_PRODUCT "sqss.product"

typedef struct product {
    kr_time_t created;
    uint64_t serial;
} product_t;

/* Described, so that the runtime digests the products in the world. */
static const kr_field_t product_fields[] = {
    KR_FIELD(product_t, created, KR_FIELD_U64),
    KR_FIELD(product_t, serial, KR_FIELD_U64),
};

/* The kind's state: its parameters, ids and statistics. The statistics are
 * not slots (kairos/state.h): slots would report them under other names
 * than the kind's. */
typedef struct sqss {
    kr_dist_t arrival, service;       /* params */
    int64_t capacity, servers;
    kr_time_t warmup;
    int64_t created, skipped, received;
    int64_t in_queue, busy, in_system;
    kr_batchmeans_t time_in_system;   /* model units */
    kr_timeavg_t queue_length, busy_servers, system_size;
    kr_component_t product, server_b;
    kr_event_type_t arrive, done, warmed;
    kr_entity_t source_out;           /* the source's output channel */
    kr_entity_t queue, queue_in;
    uint64_t serial;
} sqss_t;

/* Servers keep their channel to the sink. */
typedef struct station {
    kr_entity_t output;
} station_t;

static sqss_t *state_of(kr_world_t *w) { return kr_sim_state(kr_sim_of_world(w)); }

static void fail(kr_sim_t *sim, const char *what)
{
    kr_sim_fail(sim, kr_last_status(), "sqss: %s: %s", what, kr_last_error());
}

/* ---- source ---- */

static void arrive(kr_sim_t *sim, void *data)
{
    (void)data;
    sqss_t *sq = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    kr_time_t now = kr_sim_now(sim);
    if (kr_channel_is_ready(w, sq->source_out)) {
        kr_entity_t p = kr_entity_create_desc(w, &(kr_entity_desc_t){
            .parent = kr_channel_resource(w, sq->source_out), .components = &sq->product, .component_count = 1 });
        if (!p) { fail(sim, "making a product"); return; }
        *(product_t *)kr_component_get(w, p, sq->product) = (product_t){ now, sq->serial++ };
        sq->created++;
        if (!kr_channel_send(w, sq->source_out, p)) fail(sim, "sending a product to the queue");
    } else {
        sq->skipped++;
    }
    kr_time_t gap = kr_dist_sample_ticks(&sq->arrival, kr_sim_rng(sim), kr_model_precision(kr_sim_model(sim)));
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, gap, sq->arrive, NULL, NULL)) fail(sim, "planning the next arrival");
}

/* ---- queue ---- */

static void set_count(kr_time_t now, int64_t *count, kr_timeavg_t *avg, int64_t delta)
{
    *count += delta;
    kr_timeavg_set(avg, now, (double)*count);
}

/* The oldest product waiting in the queue: its first child that is not a
 * channel. */
static kr_entity_t first_product(kr_world_t *w, const sqss_t *sq)
{
    for (kr_entity_t c = kr_entity_first_child(w, sq->queue); c; c = kr_entity_next_sibling(w, c))
        if (kr_component_get(w, c, sq->product)) return c;
    return KR_ENTITY_INVALID;
}

/* Hands products to every idle server, oldest first, servers in order. */
static void dispatch(kr_world_t *w, sqss_t *sq)
{
    kr_sim_t *sim = kr_sim_of_world(w);
    kr_entity_t outs[256];
    size_t n = kr_resource_outputs(w, sq->queue, outs, 256);
    if (n > 256) n = 256;
    for (size_t i = 0; i < n && sq->in_queue > 0; i++) {
        if (!kr_channel_is_ready(w, outs[i])) continue;
        kr_entity_t p = first_product(w, sq);
        if (!p) break;
        set_count(kr_sim_now(sim), &sq->in_queue, &sq->queue_length, -1);
        if (!kr_channel_send(w, outs[i], p)) fail(sim, "sending a product to a server");
    }
    if (sq->in_queue < sq->capacity && !kr_channel_is_open(w, sq->queue_in) && kr_channel_open(w, sq->queue_in))
        fail(sim, "opening the queue");
}

static void queue_receive(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel, kr_entity_t child)
{
    (void)self, (void)state, (void)channel, (void)child;
    sqss_t *sq = state_of(w);
    kr_sim_t *sim = kr_sim_of_world(w);
    set_count(kr_sim_now(sim), &sq->in_queue, &sq->queue_length, +1);
    set_count(kr_sim_now(sim), &sq->in_system, &sq->system_size, +1);
    if (sq->in_queue >= sq->capacity && kr_channel_close(w, sq->queue_in)) fail(sim, "closing the queue");
    dispatch(w, sq);
}

static void queue_output_ready(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel)
{
    (void)self, (void)state, (void)channel;
    dispatch(w, state_of(w));
}

/* ---- server ---- */

static void server_receive(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel, kr_entity_t child)
{
    (void)state, (void)child;
    sqss_t *sq = state_of(w);
    kr_sim_t *sim = kr_sim_of_world(w);
    if (kr_channel_close(w, channel)) fail(sim, "closing a server");
    set_count(kr_sim_now(sim), &sq->busy, &sq->busy_servers, +1);
    kr_time_t work = kr_dist_sample_ticks(&sq->service, kr_sim_rng(sim), kr_model_precision(kr_sim_model(sim)));
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, work, sq->done, &self, NULL)) fail(sim, "planning a service");
}

static void service_done(kr_sim_t *sim, void *data)
{
    kr_entity_t server = *(kr_entity_t *)data;
    sqss_t *sq = kr_sim_state(sim);
    kr_world_t *w = kr_sim_world(sim);
    station_t *st = kr_component_get(w, server, sq->server_b);
    kr_entity_t product = KR_ENTITY_INVALID;
    for (kr_entity_t c = kr_entity_first_child(w, server); c && !product; c = kr_entity_next_sibling(w, c))
        if (kr_component_get(w, c, sq->product)) product = c;
    if (!st || !product) { kr_sim_fail(sim, KR_ERR_STATE, "sqss: a service ended with no product"); return; }
    set_count(kr_sim_now(sim), &sq->busy, &sq->busy_servers, -1);
    if (!kr_channel_send(w, st->output, product)) fail(sim, "sending a product to the sink");
    /* Idle again: opening the input lets the queue send the next product. */
    kr_entity_t ins[1];
    if (kr_resource_inputs(w, server, ins, 1) == 1 && kr_channel_open(w, ins[0])) fail(sim, "opening a server");
}

/* ---- sink ---- */

static void sink_receive(kr_world_t *w, kr_entity_t self, void *state, kr_entity_t channel, kr_entity_t child)
{
    (void)self, (void)state, (void)channel;
    sqss_t *sq = state_of(w);
    kr_sim_t *sim = kr_sim_of_world(w);
    const product_t *p = kr_component_get(w, child, sq->product);
    kr_time_t now = kr_sim_now(sim);
    sq->received++;
    set_count(now, &sq->in_system, &sq->system_size, -1);
    if (p && p->created >= sq->warmup)
        kr_batchmeans_add(&sq->time_in_system, kr_time_to_units(now - p->created, kr_model_precision(kr_sim_model(sim))));
    if (kr_entity_destroy(w, child)) fail(sim, "removing a product");
}

static void warmed_up(kr_sim_t *sim, void *data)
{
    (void)data;
    sqss_t *sq = kr_sim_state(sim);
    kr_time_t now = kr_sim_now(sim);
    kr_timeavg_reset(&sq->queue_length, now);
    kr_timeavg_reset(&sq->busy_servers, now);
    kr_timeavg_reset(&sq->system_size, now);
}

static const kr_behavior_vtbl_t source_vtbl = { 0 };
static const kr_behavior_vtbl_t queue_vtbl = { .on_receive = queue_receive, .on_output_channel_ready = queue_output_ready };
static const kr_behavior_vtbl_t server_vtbl = { .on_receive = server_receive };
static const kr_behavior_vtbl_t sink_vtbl = { .on_receive = sink_receive };

static kr_status_t sqss_register(kr_model_t *m)
{
    kr_registry_t *reg = kr_model_registry(m);
    if (!kr_component_register(reg, &(kr_component_desc_t){ .name = SQSS_PRODUCT, .size = sizeof(product_t),
                                                            .align = _Alignof(product_t), .fields = product_fields,
                                                            .field_count = 2 }))
        return kr_last_status();
    const struct { const char *name; const kr_behavior_vtbl_t *vtbl; } b[] = {
        { "sqss.source", &source_vtbl }, { "sqss.queue", &queue_vtbl },
        { "sqss.server", &server_vtbl }, { "sqss.sink", &sink_vtbl },
    };
    for (size_t i = 0; i < 4; i++)
        if (!kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = b[i].name, .state_size = sizeof(station_t),
                                                              .state_align = _Alignof(station_t), .vtbl = b[i].vtbl }))
            return kr_last_status();
    return KR_OK;
}

/* A resource entity with a station behavior. */
static kr_entity_t station(kr_world_t *w, const char *name, const char *behavior)
{
    kr_component_t b = kr_component_lookup(kr_model_registry(kr_sim_model(kr_sim_of_world(w))), behavior);
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name });
    if (!e || kr_resource_add(w, e) || !kr_component_add(w, e, b)) return KR_ENTITY_INVALID;
    return e;
}

/* A connected, open pair of channels from resource a to resource b. */
static kr_status_t link(kr_world_t *w, kr_entity_t a, kr_entity_t b, kr_entity_t *out, kr_entity_t *in)
{
    *out = kr_entity_create(w);
    *in = kr_entity_create(w);
    kr_status_t st = !*out || !*in ? kr_last_status() : KR_OK;
    if (!st) st = kr_channel_add(w, *out, KR_CHANNEL_OUTPUT, a);
    if (!st) st = kr_channel_add(w, *in, KR_CHANNEL_INPUT, b);
    if (!st) st = kr_channel_connect(w, *out, *in);
    if (!st) st = kr_channel_open(w, *out);
    if (!st) st = kr_channel_open(w, *in);
    return st;
}

static kr_status_t sqss_setup(kr_sim_t *sim, const kr_params_t *p)
{
    kr_model_t *m = kr_sim_model(sim);
    sqss_t *sq = kr_sim_state(sim);
    /* Absent means one draw of `arrival`, which a table row cannot say. */
    kr_time_t first = KR_TIME_NEVER;
    kr_status_t st = kr_params_duration(p, "first_arrival", KR_TIME_NEVER, &first);
    if (st) return st;
    double tick = 1.0 / (double)kr_model_precision(m);
    if (!(kr_dist_mean(&sq->arrival) >= tick)) {
        /* Gaps of 0 would make products forever at one time, and gaps
         * below a tick, each taken as one, a million a model unit. */
        char found[64], expected[96];
        snprintf(found, sizeof found, "a distribution with mean %g", kr_dist_mean(&sq->arrival));
        snprintf(expected, sizeof expected, "a distribution with a mean of at least one tick (%g)", tick);
        return kr_params_error(p, "arrival", expected, found);
    }
    if (!(kr_dist_mean(&sq->service) >= 0)) {
        /* (a negative draw is taken as 0: a negative mean is a mistake) */
        char found[64];
        snprintf(found, sizeof found, "a distribution with mean %g", kr_dist_mean(&sq->service));
        return kr_params_error(p, "service", "a distribution of times, with a mean >= 0", found);
    }
    kr_registry_t *reg = kr_model_registry(m);
    sq->product = kr_component_lookup(reg, SQSS_PRODUCT);
    sq->server_b = kr_component_lookup(reg, "sqss.server");
    /* By id: kr_schedule_in would refuse a negative draw, which
     * kr_dist_sample_ticks takes as 0. */
    sq->arrive = kr_model_handler_type(m, arrive);
    sq->done = kr_model_handler_type(m, service_done);
    sq->warmed = kr_model_handler_type(m, warmed_up);
    kr_batchmeans_init(&sq->time_in_system);
    kr_timeavg_init(&sq->queue_length, 0, 0);
    kr_timeavg_init(&sq->busy_servers, 0, 0);
    kr_timeavg_init(&sq->system_size, 0, 0);

    kr_world_t *w = kr_sim_world(sim);
    kr_entity_t source = station(w, "Source", "sqss.source");
    sq->queue = station(w, "Queue", "sqss.queue");
    kr_entity_t sink = station(w, "Sink", "sqss.sink");
    if (!source || !sq->queue || !sink) return kr_last_status();
    if ((st = link(w, source, sq->queue, &sq->source_out, &sq->queue_in))) return st;
    for (int64_t i = 0; i < sq->servers; i++) {
        char name[32];
        snprintf(name, sizeof name, "Server %lld", (long long)i + 1);
        kr_entity_t server = station(w, name, "sqss.server"), q_out, s_in, s_out, k_in;
        if (!server) return kr_last_status();
        if ((st = link(w, sq->queue, server, &q_out, &s_in)) || (st = link(w, server, sink, &s_out, &k_in))) return st;
        ((station_t *)kr_component_get(w, server, sq->server_b))->output = s_out;
    }
    if (first == KR_TIME_NEVER)
        first = kr_dist_sample_ticks(&sq->arrival, kr_sim_rng(sim), kr_model_precision(m));
    if ((st = kr_schedule(sim, KR_PRIORITY_DEFAULT, first, sq->arrive, NULL, NULL))) return st;
    /* Statistics restart at the warm-up, before any arrival at that time. */
    if (sq->warmup > 0 && (st = kr_schedule(sim, KR_PRIORITY_DEFAULT - 1, sq->warmup, sq->warmed, NULL, NULL)))
        return st;
    return KR_OK;
}

static void sqss_report(kr_sim_t *sim, kr_report_t *r)
{
    sqss_t *sq = kr_sim_state(sim);
    kr_time_t now = kr_model_end_time(kr_sim_model(sim));
    double span = kr_time_to_units(now > sq->warmup ? now - sq->warmup : 0, kr_model_precision(kr_sim_model(sim)));
    kr_report_int(r, "created", sq->created);
    kr_report_int(r, "skipped", sq->skipped);
    kr_report_int(r, "received", sq->received);
    kr_report_number(r, "mean_time_in_system", kr_batchmeans_mean(&sq->time_in_system));
    kr_report_number(r, "ci95_time_in_system", kr_batchmeans_halfwidth(&sq->time_in_system));
    kr_report_int(r, "time_in_system_count", (int64_t)sq->time_in_system.all.count);
    /* Averages from the warm-up to the end: none when the run ends at or
     * before it (the reset never came, or came at the last instant). */
    bool averaged = span > 0;
    kr_report_number(r, "mean_queue_length", averaged ? kr_timeavg_mean(&sq->queue_length, now) : NAN);
    kr_report_number(r, "mean_in_system", averaged ? kr_timeavg_mean(&sq->system_size, now) : NAN);
    kr_report_number(r, "utilisation", averaged ? kr_timeavg_mean(&sq->busy_servers, now) / (double)sq->servers : NAN);
    kr_report_number(r, "throughput", span > 0 ? (double)sq->time_in_system.all.count / span : NAN);
}

/* Checkpoints: products, stations and channels are the world's, the
 * arrivals and services pending are events, the draws kr_sim_rng's, and
 * created/skipped/received declared. What else changes during the run:
 * the three counts behind the time averages, the next product's serial
 * and the statistics themselves (only two of their running values are
 * declared, for the digest). The entity ids and event types are setup's,
 * made again the same (setup builds the same world in the same order). */
static kr_status_t sqss_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    sqss_t *sq = kr_sim_state(sim);
    kr_ser_i64(s, &sq->in_queue);
    kr_ser_i64(s, &sq->busy);
    kr_ser_i64(s, &sq->in_system);
    kr_ser_u64(s, &sq->serial);
    kr_status_t st = kr__ser_batchmeans(s, &sq->time_in_system);
    kr__ser_timeavg(s, &sq->queue_length);
    kr__ser_timeavg(s, &sq->busy_servers);
    kr_status_t last = kr__ser_timeavg(s, &sq->system_size);
    return st ? st : last;
}

const kr_kind_desc_t kr__sqss_kind = {
    .name = "sqss",
    .summary = "Source -> Queue -> Server(s) -> Sink joined by channels",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = sqss_register,
    .setup = sqss_setup,
    .report = sqss_report,
    .serialize = sqss_serialize,
    .state_size = sizeof(sqss_t),
    /* digested; the statistics by their running values */
    .state_fields = (const kr_field_t[]){
        KR_FIELD(sqss_t, created, KR_FIELD_I64),
        KR_FIELD(sqss_t, skipped, KR_FIELD_I64),
        KR_FIELD(sqss_t, received, KR_FIELD_I64),
        KR_FIELD(sqss_t, time_in_system.all.mean, KR_FIELD_F64),
        KR_FIELD(sqss_t, queue_length.area, KR_FIELD_F64),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(sqss_t, arrival, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 1}",
                 .help = "time between generations"),
        KR_PARAM(sqss_t, service, KR_PARAM_DIST, .def = "{\"dist\": \"exponential\", \"mean\": 0.5}",
                 .help = "service time of one product"),
        KR_PARAM(sqss_t, capacity, KR_PARAM_INT, .def = "10", .range = ">= 1, <= 100000000",
                 .help = "queue places (products waiting, not in service)"),
        KR_PARAM(sqss_t, servers, KR_PARAM_INT, .def = "1", .range = ">= 1, <= 256", .help = "parallel servers"),
        KR_PARAM(sqss_t, warmup, KR_PARAM_DURATION, .def = "0", .range = ">= 0",
                 .help = "model time before statistics start"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = "sqss.arrive", .on_event = arrive },
        { .name = "sqss.done", .size = sizeof(kr_entity_t), .on_event = service_done },
        { .name = "sqss.warmup", .on_event = warmed_up },
        { 0 } },
    /* The whole line is in one simulator: a sync-event sent to it is refused. */
    .receives = (const char *const[]){ NULL },
};
