/* The gateway kind (docs/emulation.md): an emulation simulator that
 * bridges an external system and the model without any C.
 *
 * In: each input line {"event": NAME, "to": SIM, "data": {field: value}}
 * becomes the sync-event NAME to SIM, sent along the declared dependency
 * gateway -> SIM with its promise as the delay; the kind that handles NAME
 * in SIM does the rest. A line naming an unknown event, an unknown
 * simulator, a simulator with no dependency from the gateway, an event
 * SIM does not declare it receives (kr_sim_receive), or data that does
 * not fit the event's fields is skipped and logged with the reason: the
 * external system is never trusted to be right.
 *
 * Out: each sync-event a model simulator sends to the gateway goes to the
 * external system as {"time": T, "from": SIM, "event": NAME, "data":
 * {field: value}}, T in model units. The event's own on_target_side does
 * not run here: the gateway stands in for whatever it would have reached.
 *
 * Both directions are in the emulation's log, which a replay reads: the
 * gateway keeps no state of its own, so a replay is the run again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gateway/gateway.h"
#include "models/gateway/payload_json.h"

/* Payloads this large or smaller are built on the stack. */
#define SMALL_PAYLOAD 512

static void refuse(kr_sim_t *sim, const kr_input_t *in, const char *reason)
{
    char line[300];
    snprintf(line, sizeof line, "{\"event\":\"%.80s\",\"to\":\"%.80s\",\"data\":%.100s}", in->event, in->to,
             in->data_json);
    kr_emulation_skip(sim, reason, line);
}

static void on_line(kr_sim_t *sim, const kr_input_t *in)
{
    kr_model_t *m = kr_sim_model(sim);
    char why[256];
    kr_event_type_t type = kr_model_find_event_type(m, in->event);
    if (!type) {
        snprintf(why, sizeof why, "unknown event \"%.60s\"", in->event);
        return refuse(sim, in, why);
    }
    if (!in->to[0]) return refuse(sim, in, "no \"to\": name the simulator the event goes to");
    kr_sim_t *target = kr_model_find_sim(m, in->to);
    if (!target) {
        snprintf(why, sizeof why, "unknown simulator \"%.60s\"", in->to);
        return refuse(sim, in, why);
    }
    kr_time_t promise = kr_model_promise(m, kr_sim_id(sim), kr_sim_id(target));
    if (promise == KR_TIME_NEVER) {
        snprintf(why, sizeof why, "no dependency from \"%.60s\" to \"%.60s\"", kr_sim_name(sim), in->to);
        return refuse(sim, in, why);
    }
    /* The event must be one the target runs: the type's target side may
     * be another kind's handler, which would run on this one's state. */
    if (!kr_model_event_type_is_sync(m, type)) {
        snprintf(why, sizeof why, "\"%.60s\" is not a sync-event (no simulator runs it on arrival)", in->event);
        return refuse(sim, in, why);
    }
    if (!kr_sim_receives(target, type)) {
        snprintf(why, sizeof why, "\"%.60s\" does not receive \"%.60s\" (not among the sync-events its kind "
                 "declares in `receives`)", in->to, in->event);
        return refuse(sim, in, why);
    }
    size_t size = kr_model_event_type_size(m, type);
    const kr_field_t *fields = kr_model_event_type_fields(m, type);
    if (size && !fields) {
        snprintf(why, sizeof why, "event \"%.60s\" does not describe its payload (its type declares no fields)",
                 in->event);
        return refuse(sim, in, why);
    }
    json_error_t err;
    json_t *data = json_loads(in->data_json, JSON_DECODE_ANY, &err);
    unsigned char small[SMALL_PAYLOAD];
    unsigned char *payload = size <= sizeof small ? small : malloc(size);
    if (!payload) {
        json_decref(data);
        kr_sim_fail(sim, KR_ERR_NOMEM, "gateway: out of memory");
        return;
    }
    const char *bad = kr__payload_from_json(fields, size, data, payload, why, sizeof why);
    json_decref(data);
    if (bad) {
        refuse(sim, in, bad);
    } else if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = kr_sim_id(target), .delay = promise, .type = type,
                                                         .data = payload }, NULL)) {
        /* e.g. a local event's name: not a sync-event */
        snprintf(why, sizeof why, "refused: %.200s", kr_last_error());
        refuse(sim, in, why);
    }
    if (payload != small) free(payload);
}

static void on_arrival(kr_sim_t *sim, kr_event_type_t type, uint32_t from, const void *data)
{
    kr_model_t *m = kr_sim_model(sim);
    const kr_field_t *fields = kr_model_event_type_fields(m, type);
    json_t *line = json_pack("{s:f, s:s, s:s}", "time", kr_sim_now_units(sim), "from",
                             kr_sim_name(kr_model_sim(m, from)), "event", kr_model_event_type_name(m, type));
    /* a payload the type does not describe cannot be written: null, not
     * an empty object that would pass for "no payload" */
    json_t *payload = fields || !kr_model_event_type_size(m, type) ? kr__payload_to_json(fields, data) : json_null();
    char *text = NULL;
    if (line && payload && !json_object_set_new(line, "data", payload)) {
        payload = NULL;
        text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    json_decref(payload);
    json_decref(line);
    if (!text || kr_emulation_send(sim, text)) kr_sim_fail(sim, KR_ERR_NOMEM, "gateway: cannot send a line: out of memory");
    free(text);
}

static kr_status_t setup(kr_sim_t *sim, const kr_params_t *params)
{
    (void)params;
    return kr_emulation_handlers(sim, on_line, on_arrival);
}

static void report(kr_sim_t *sim, kr_report_t *r)
{
    kr_emulation_counts_t c = kr_emulation_counts(sim);
    kr_report_int(r, "lines_in", (int64_t)c.lines_in);
    kr_report_int(r, "lines_out", (int64_t)c.lines_out);
    kr_report_int(r, "skipped", (int64_t)c.skipped);
    kr_report_int(r, "dropped", (int64_t)c.dropped);
    kr_report_int(r, "peers", (int64_t)c.peers);
}

/* Nothing outside its world to digest: what the gateway did is the events
 * it ran, which the run's event digest already holds. (Its counts are the
 * emulation's, which a checkpoint keeps.) */
static uint64_t digest(kr_sim_t *sim)
{
    (void)sim;
    return 0;
}

/* None: a gateway's settings are its entry's "emulation" object. */
static const kr_param_t no_params[] = { { 0 } };

const kr_kind_desc_t kr__gateway_kind = {
    .name = "gateway",
    .summary = "an external system in the loop: its JSON lines become sync-events, and sync-events sent here go "
               "out to it (docs/emulation.md)",
    .formalism = KR_EMULATION,
    .formalisms = KR_FORMALISM_BIT(KR_EMULATION),
    .params = no_params,
    .setup = setup,
    .report = report,
    .digest = digest,
};
