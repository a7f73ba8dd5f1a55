/* A test plug-in kind for checkpoints and restarts (tests/checkpoint,
 * docs/checkpoint.md): "ckpt", a discrete-event simulator whose every
 * decision is a draw from its stream (kr_sim_rng), so that any state a
 * restart loses changes the results.
 *
 * Every tick (exponential gaps of mean `period`) it
 *   - sends a sync-event to a random simulator of `to` (comma-separated,
 *     each with a dependency from it), after the edge's promise plus a
 *     random extra (none at all, now and then, on a zero promise); with
 *     probability `sender_side` of the type with a sender side
 *     ("ckpt.hand": the sender-side record waits in this queue with the
 *     entities it will carry, a placeholder in the target's), otherwise
 *     of the plain type ("ckpt.msg"); with probability `carry` it carries
 *     a parcel entity, a new one or one it received earlier;
 *   - keeps the keys of its last KEEP sync-events and, at random, cancels
 *     one (never one carrying entities: the runtime refuses that) or
 *     delays it, while it may (its time at least now + promise);
 *   - keeps one local "alarm" pending, and at random cancels, delays or
 *     sets it again;
 *   - once its time reaches `stop_at` (model units, 0: never), ends the
 *     run with kr_sim_stop.
 * The sender side draws again and changes the payload and the parcel it
 * carries; the target side digests the payload, the time and every parcel,
 * and keeps up to HELD parcels to send on later.
 *
 * Its changing state is declared (state_fields: digest, counters, a
 * tally, the held parcels) except the kept event keys, which its
 * `serialize` callback saves (and its `digest` adds to the checksum);
 * setup makes the rest (targets, type ids) again on a restart. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <kairos/kairos.h>

#define KEEP 8
#define HELD 16
#define MAX_PEERS 8

typedef struct parcel {
    uint64_t value;
    double born;
    uint32_t hops;
} parcel_t;

static const kr_field_t parcel_fields[] = {
    KR_FIELD(parcel_t, value, KR_FIELD_U64),
    KR_FIELD(parcel_t, born, KR_FIELD_F64),
    KR_FIELD(parcel_t, hops, KR_FIELD_U32),
};

/* A sync-event's payload. */
typedef struct note {
    uint64_t value;
    double sent;
    kr_entity_t parcel;   /* in the sender's world, for its sender side */
    uint32_t from;
} note_t;

typedef struct kept {
    kr_event_key_t key;
    uint8_t live, carries;
} kept_t;

typedef struct ckpt {
    /* params */
    double period, sender_side, carry, stop_at;
    const char *to;
    int64_t misbehave;          /* on a restart: 1 schedules, 2 draws, 3 makes an entity (all refused), 4 fails
                                 * without a message; 5: saving fails without a message */
    int64_t tokens;             /* entities setup makes, each counting its on_destroy in token_destroys */
    /* declared state */
    uint64_t mixed;
    uint64_t ticks, sent, received, parcels_in, sender_sides, cancels, delays, alarms, alarm_changes;
    uint64_t token_destroys;
    uint8_t stopped;
    kr_tally_t latency;
    kr_entity_list_t held;
    /* kept event keys: saved by serialize */
    kept_t kept[KEEP];
    kr_event_key_t alarm;
    uint8_t alarm_live;
    /* made by setup */
    uint32_t peers[MAX_PEERS], peer_count;
    kr_time_t promise[MAX_PEERS];
    kr_component_t parcel, token;
    kr_event_type_t msg, hand, tick_type, alarm_type;
    uint64_t prec;
} ckpt_t;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    return h * 0xbf58476d1ce4e5b9ULL;
}

static uint64_t mixd(uint64_t h, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return mix(h, u);
}

static kr_time_t draw_ticks(ckpt_t *c, kr_rng_t *r, double mean)
{
    double u = kr_rng_uniform(r);
    double t = -log(1.0 - u) * mean * (double)c->prec;
    return t < 1 ? 1 : (kr_time_t)t;
}

static void fail(kr_sim_t *sim, const char *what)
{
    kr_sim_fail(sim, kr_last_status(), "ckpt: %s: %s", what, kr_last_error());
}

/* ---- handlers ---- */

static void on_alarm(kr_sim_t *sim, void *data)
{
    (void)data;
    ckpt_t *c = kr_sim_state(sim);
    c->alarm_live = 0;
    c->alarms++;
    c->mixed = mix(mix(c->mixed, 0xa1a), kr_sim_now(sim));
}

static void on_sender(kr_sim_t *sim, void *data)
{
    ckpt_t *c = kr_sim_state(sim);
    note_t *n = data;
    uint64_t d = kr_rng_u64(kr_sim_rng(sim));
    c->sender_sides++;
    n->value = mix(n->value, d);
    c->mixed = mix(mix(c->mixed, n->value), kr_sim_now(sim));
    if (n->parcel != KR_ENTITY_INVALID) {
        parcel_t *p = kr_component_get(kr_sim_world(sim), n->parcel, c->parcel);
        if (!p) {
            kr_sim_fail(sim, KR_ERR_STATE, "ckpt: the parcel a sender side carries is gone");
            return;
        }
        p->value ^= d;
        p->hops++;
    }
}

static void on_target(kr_sim_t *sim, void *data)
{
    ckpt_t *c = kr_sim_state(sim);
    const note_t *n = data;
    kr_world_t *w = kr_sim_world(sim);
    c->received++;
    c->mixed = mix(mix(mix(c->mixed, n->value), kr_sim_now(sim)), n->from);
    kr_tally_add(&c->latency, kr_sim_now_units(sim) - n->sent);
    size_t count;
    const kr_entity_t *e = kr_event_entities(sim, &count);
    for (size_t i = 0; i < count; i++) {
        parcel_t *p = kr_component_get(w, e[i], c->parcel);
        if (!p) {
            kr_sim_fail(sim, KR_ERR_STATE, "ckpt: a carried entity has no parcel");
            return;
        }
        p->hops++;
        c->parcels_in++;
        c->mixed = mixd(mix(mix(c->mixed, p->value), p->hops), p->born);
        if (c->held.count < HELD) {
            if (kr_entity_list_push(&c->held, e[i])) return fail(sim, "holding a parcel");
        } else {
            kr_entity_destroy(w, e[i]);
        }
    }
}

static void send_one(kr_sim_t *sim, ckpt_t *c, kr_rng_t *r)
{
    uint32_t i = (uint32_t)(kr_rng_u64(r) % c->peer_count);
    kr_time_t delay = c->promise[i];
    if (!(c->promise[i] == 0 && kr_rng_uniform(r) < 0.3)) delay += draw_ticks(c, r, c->period);
    bool hand = kr_rng_uniform(r) < c->sender_side;
    note_t n = { .value = kr_rng_u64(r), .sent = kr_sim_now_units(sim), .parcel = KR_ENTITY_INVALID,
                 .from = kr_sim_id(sim) };
    kr_entity_t e = KR_ENTITY_INVALID;
    if (kr_rng_uniform(r) < c->carry) {
        kr_world_t *w = kr_sim_world(sim);
        if (c->held.count && kr_rng_uniform(r) < 0.6) {
            uint32_t k = (uint32_t)(kr_rng_u64(r) % c->held.count);
            e = c->held.items[k];
            kr_entity_list_remove_at(&c->held, k);
        } else {
            e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = &c->parcel, .component_count = 1 });
            if (e == KR_ENTITY_INVALID) return fail(sim, "making a parcel");
            parcel_t *p = kr_component_get(w, e, c->parcel);
            p->value = kr_rng_u64(r);
            p->born = kr_sim_now_units(sim);
        }
        n.parcel = e;
    }
    kr_event_key_t key;
    if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = c->peers[i], .delay = delay,
                                                 .type = hand ? c->hand : c->msg, .data = &n,
                                                 .entities = e == KR_ENTITY_INVALID ? NULL : &e,
                                                 .entity_count = e == KR_ENTITY_INVALID ? 0 : 1 }, &key))
        return fail(sim, "sending");
    c->sent++;
    kept_t *k = &c->kept[c->sent % KEEP];
    k->key = key;
    k->live = 1;
    k->carries = e != KR_ENTITY_INVALID;
}

/* The promise of the edge a kept sync-event went along. */
static kr_time_t kept_promise(const ckpt_t *c, uint32_t target)
{
    for (uint32_t i = 0; i < c->peer_count; i++)
        if (c->peers[i] == target) return c->promise[i];
    return 0;
}

static void change_one(kr_sim_t *sim, ckpt_t *c, kr_rng_t *r)
{
    kept_t *k = &c->kept[kr_rng_u64(r) % KEEP];
    double u = kr_rng_uniform(r);
    kr_time_t now = kr_sim_now(sim);
    if (!k->live) return;
    /* still in the sender's hands only while its time is at least now +
     * promise (and after now); past that it runs, or has run */
    if (k->key.time <= now || k->key.time < now + kept_promise(c, k->key.target)) {
        k->live = 0;
        return;
    }
    if (!k->carries && u < 0.4) {
        if (kr_cancel(sim, &k->key)) return fail(sim, "cancelling a kept sync-event");
        k->live = 0;
        c->cancels++;
    } else if (u < 0.8) {
        kr_event_key_t nk;
        if (kr_delay(sim, &k->key, draw_ticks(c, r, c->period / 2), &nk)) return fail(sim, "delaying a kept sync-event");
        k->key = nk;
        c->delays++;
    }
    c->mixed = mix(c->mixed, k->key.time);
}

static void on_tick(kr_sim_t *sim, void *data)
{
    (void)data;
    ckpt_t *c = kr_sim_state(sim);
    kr_rng_t *r = kr_sim_rng(sim);
    c->ticks++;
    c->mixed = mix(mix(c->mixed, kr_sim_now(sim)), c->ticks);
    if (c->stop_at > 0 && !c->stopped && kr_sim_now_units(sim) >= c->stop_at) {
        c->stopped = 1;
        kr_sim_stop(sim);
    }
    uint32_t sends = (uint32_t)(kr_rng_u64(r) % 3);
    for (uint32_t s = 0; s < sends && c->peer_count; s++) send_one(sim, c, r);
    change_one(sim, c, r);
    double u = kr_rng_uniform(r);
    if (c->alarm_live && u < 0.3) {
        if (kr_cancel(sim, &c->alarm)) return fail(sim, "cancelling the alarm");
        c->alarm_live = 0;
        c->alarm_changes++;
    } else if (c->alarm_live && u < 0.6) {
        if (kr_delay(sim, &c->alarm, draw_ticks(c, r, c->period), &c->alarm)) return fail(sim, "delaying the alarm");
        c->alarm_changes++;
    } else if (!c->alarm_live) {
        if (kr_schedule(sim, KR_PRIORITY_DEFAULT, draw_ticks(c, r, 2 * c->period), c->alarm_type, NULL, &c->alarm))
            return fail(sim, "setting the alarm");
        c->alarm_live = 1;
    }
    if (kr_schedule(sim, KR_PRIORITY_DEFAULT, draw_ticks(c, r, c->period), c->tick_type, NULL, NULL))
        fail(sim, "ticking");
}

/* ---- the kind ---- */

/* A token's on_destroy counts in the declared state: a restart destroys
 * the tokens its setup made before the state is restored, so the count
 * is the uninterrupted run's (it was the setup's tokens too many). */
static void token_destroyed(kr_world_t *w, kr_entity_t self, void *state)
{
    (void)self, (void)state;
    ckpt_t *c = kr_sim_state(kr_sim_of_world(w));
    if (c) c->token_destroys++;
}

static const kr_behavior_vtbl_t token_vtbl = { .on_destroy = token_destroyed };

static kr_status_t ckpt_register(kr_model_t *model)
{
    kr_registry_t *reg = kr_model_registry(model);
    kr_component_t p = kr_component_register(reg, &(kr_component_desc_t){
        .name = "parcel", .size = sizeof(parcel_t), .fields = parcel_fields, .field_count = 3 });
    if (!p || !kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "ckpt.token", .vtbl = &token_vtbl }))
        return kr_last_status();
    return KR_OK;
}

static kr_status_t ckpt_setup(kr_sim_t *sim, const kr_params_t *params)
{
    ckpt_t *c = kr_sim_state(sim);
    kr_model_t *m = kr_sim_model(sim);
    c->prec = kr_model_precision(m);
    c->parcel = kr_component_lookup(kr_model_registry(m), "parcel");
    c->token = kr_component_lookup(kr_model_registry(m), "ckpt.token");
    for (int64_t i = 0; i < c->tokens; i++)
        if (!kr_entity_create_desc(kr_sim_world(sim), &(kr_entity_desc_t){ .components = &c->token,
                                                                           .component_count = 1 }))
            return kr_last_status();
    c->msg = kr_model_find_event_type(m, "ckpt.msg");
    c->hand = kr_model_find_event_type(m, "ckpt.hand");
    c->tick_type = kr_model_find_event_type(m, "ckpt.tick");
    c->alarm_type = kr_model_find_event_type(m, "ckpt.alarm");
    if (!c->msg || !c->hand || !c->tick_type || !c->alarm_type)
        return kr_params_error(params, "to", "the kind's event types", "none");
    char names[512];
    snprintf(names, sizeof names, "%s", c->to ? c->to : "");
    char *save = NULL;
    for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        kr_sim_t *t = kr_model_find_sim(m, n);
        kr_time_t pr = t ? kr_model_promise(m, kr_sim_id(sim), kr_sim_id(t)) : KR_TIME_NEVER;
        if (pr == KR_TIME_NEVER || c->peer_count == MAX_PEERS)
            return kr_params_error(params, "to", "names of simulators this one has dependencies to", c->to);
        c->peers[c->peer_count] = kr_sim_id(t);
        c->promise[c->peer_count++] = pr;
    }
    return kr_schedule(sim, KR_PRIORITY_DEFAULT, draw_ticks(c, kr_sim_rng(sim), c->period), c->tick_type, NULL, NULL);
}

static kr_status_t ser_key(kr_serializer_t *s, kr_event_key_t *k)
{
    uint64_t prio = (uint32_t)k->priority, phase = k->phase;
    uint32_t source = k->source, target = k->target, handle = k->handle;
    uint64_t time = k->time, seq = k->sequence;
    kr_ser_u64(s, &time);
    kr_ser_u64(s, &prio);
    kr_ser_u32(s, &source);
    kr_ser_u64(s, &seq);
    kr_ser_u64(s, &phase);
    kr_ser_u32(s, &target);
    kr_status_t st = kr_ser_u32(s, &handle);
    if (kr_serializer_loading(s)) {
        *k = (kr_event_key_t){ .time = time, .priority = (kr_priority_t)(uint32_t)prio, .source = source,
                               .sequence = seq, .phase = (uint8_t)phase, .target = target, .handle = handle };
    }
    return st;
}

static kr_status_t ckpt_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    ckpt_t *c = kr_sim_state(sim);
    if (c->misbehave == 5 && !kr_serializer_loading(s)) return KR_ERR_STATE;
    for (int i = 0; i < KEEP; i++) {
        uint32_t flags = c->kept[i].live | (uint32_t)c->kept[i].carries << 1;
        ser_key(s, &c->kept[i].key);
        kr_ser_u32(s, &flags);
        c->kept[i].live = flags & 1;
        c->kept[i].carries = (flags >> 1) & 1;
    }
    uint32_t live = c->alarm_live;
    ser_key(s, &c->alarm);
    kr_status_t st = kr_ser_u32(s, &live);
    c->alarm_live = (uint8_t)live;
    return st;
}

/* What a restore must not do, on demand (tests/checkpoint/test_restore_refusals.sh). */
static kr_status_t ckpt_restore(kr_sim_t *sim)
{
    ckpt_t *c = kr_sim_state(sim);
    switch (c->misbehave) {
    case 1: return kr_schedule(sim, KR_PRIORITY_DEFAULT, 1, c->tick_type, NULL, NULL);
    case 2: kr_rng_uniform(kr_sim_rng(sim)); break;
    case 3: kr_entity_create(kr_sim_world(sim)); break;
    case 4: return KR_ERR_IO;
    default: break;
    }
    return KR_OK;
}

/* The kept keys, as far as they are the model's (never their handles). */
static uint64_t ckpt_digest(kr_sim_t *sim)
{
    ckpt_t *c = kr_sim_state(sim);
    uint64_t h = 0;
    for (int i = 0; i < KEEP; i++)
        if (c->kept[i].live)
            h = mix(mix(mix(mix(h, (uint64_t)i), c->kept[i].key.time), c->kept[i].key.sequence), c->kept[i].key.target);
    if (c->alarm_live) h = mix(mix(h, c->alarm.time), c->alarm.sequence);
    return h;
}

static const kr_kind_desc_t ckpt_kind = {
    .name = "ckpt",
    .summary = "random sync-events (sender sides, parcels), cancels, delays and a stop (a checkpoint test)",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = ckpt_register,
    .setup = ckpt_setup,
    .digest = ckpt_digest,
    .serialize = ckpt_serialize,
    .restore = ckpt_restore,
    .state_size = sizeof(ckpt_t),
    .state_fields = (const kr_field_t[]){
        KR_FIELD(ckpt_t, mixed, KR_FIELD_U64),
        KR_FIELD(ckpt_t, ticks, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, sent, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, received, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, parcels_in, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, sender_sides, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, cancels, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, delays, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, alarms, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, alarm_changes, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, token_destroys, KR_FIELD_COUNTER),
        KR_FIELD(ckpt_t, stopped, KR_FIELD_U8),
        KR_FIELD(ckpt_t, latency, KR_FIELD_TALLY),
        KR_FIELD(ckpt_t, held, KR_FIELD_ENTITY_LIST),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(ckpt_t, period, KR_PARAM_NUMBER, .def = "1", .range = "> 0", .help = "mean time between ticks"),
        KR_PARAM(ckpt_t, to, KR_PARAM_STRING, .def = "\"\"", .help = "simulators to send to, comma-separated"),
        KR_PARAM(ckpt_t, sender_side, KR_PARAM_NUMBER, .def = "0.5", .range = ">= 0, <= 1",
                 .help = "share of sync-events with a sender side"),
        KR_PARAM(ckpt_t, carry, KR_PARAM_NUMBER, .def = "0.3", .range = ">= 0, <= 1",
                 .help = "share of sync-events carrying a parcel"),
        KR_PARAM(ckpt_t, stop_at, KR_PARAM_NUMBER, .def = "0", .range = ">= 0",
                 .help = "end the run at the first tick at or after this time (0: never)"),
        KR_PARAM(ckpt_t, misbehave, KR_PARAM_INT, .def = "0", .range = ">= 0, <= 5",
                 .help = "on a restart, what its restore does that is refused: 1 schedule, 2 draw, 3 make an entity, "
                         "4 fail without a message; 5: saving fails without a message"),
        KR_PARAM(ckpt_t, tokens, KR_PARAM_INT, .def = "0", .range = ">= 0, <= 1000",
                 .help = "entities made by setup whose on_destroy counts in the declared state"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = "ckpt.tick", .on_event = on_tick },
        { .name = "ckpt.alarm", .on_event = on_alarm },
        { .name = "ckpt.msg", .size = sizeof(note_t), .on_target_side = on_target },
        { .name = "ckpt.hand", .size = sizeof(note_t), .on_sender_side = on_sender, .on_target_side = on_target },
        { 0 } },
};

/* ---- "ckpt_field": a region kind with no serialize of its own ----
 *
 * A field grows by one in every cell at every step, and each agent adds
 * the field under it to its own sum and moves a cell right (up to the
 * world's right edge),
 * so that its region's state (the field, the step, the migrants) is all
 * a restart must bring back; the kind saves nothing itself, and the
 * runtime saves the region for it (its restarts went on from a field of
 * zeros, exit 0). "ckpt_field_forgets" has a serialize that saves
 * nothing: its checkpoint is refused. */

typedef struct field_sum {
    double sum;
} field_sum_t;

static const kr_field_t field_sum_fields[] = { KR_FIELD(field_sum_t, sum, KR_FIELD_F64) };

typedef struct field_state {
    int64_t width, height, agents;
    kr_region_t *region;
    kr_component_t sum;
} field_state_t;

static void field_act(kr_region_t *r, kr_entity_t a, uint64_t id, void *arg)
{
    field_state_t *f = arg;
    (void)id;
    int32_t x, y;
    if (!kr_region_agent_cell(r, a, &x, &y)) return;
    field_sum_t *v = kr_component_get(kr_region_world(r), a, f->sum);
    v->sum += kr_region_field(r, 0)[kr_region_field_index(r, x, y)];
    if (x + 1 < f->width && kr_region_agent_move(r, a, x + 1, y))
        kr_sim_fail(kr_region_sim(r), kr_last_status(), "ckpt_field: %s", kr_last_error());
}

static void field_begin(kr_region_t *r, void *arg)
{
    (void)arg;
    kr_rect_t own = kr_region_rect(r);
    double *next = kr_region_field_next(r, 0);
    for (int32_t y = own.y0; y < own.y1; y++)
        for (int32_t x = own.x0; x < own.x1; x++) next[kr_region_field_index(r, x, y)] += 1;
}

static uint64_t field_word(kr_region_t *r, kr_entity_t a, void *arg)
{
    field_state_t *f = arg;
    uint64_t u;
    memcpy(&u, kr_component_get(kr_region_world(r), a, f->sum), sizeof u);
    return u;
}

static kr_status_t field_register(kr_model_t *m)
{
    kr_status_t st = kr_region_register(m);
    if (st || kr_component_lookup(kr_model_registry(m), "ckpt.sum")) return st;
    return kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = "ckpt.sum",
        .size = sizeof(field_sum_t), .fields = field_sum_fields, .field_count = 1 }) ? KR_OK : kr_last_status();
}

static kr_status_t field_setup(kr_sim_t *sim, const kr_params_t *p)
{
    field_state_t *f = kr_sim_state(sim);
    f->sum = kr_component_lookup(kr_model_registry(kr_sim_model(sim)), "ckpt.sum");
    kr_region_desc_t d = { .width = (int32_t)f->width, .height = (int32_t)f->height, .halo = 1, .fields = 1,
                           .act = field_act, .begin_step = field_begin, .digest = field_word, .arg = f };
    kr_status_t st = kr_params_region_cut(p, f->width, f->height, &d.cut);
    if (st) return st;
    if (!(f->region = kr_region_create(sim, &d))) return kr_last_status();
    kr_rect_t own = kr_region_rect(f->region);
    for (int64_t i = 0; i < f->agents; i++) {
        int32_t x = (int32_t)(i * 7 % f->width), y = (int32_t)(i % f->height);
        if (x < own.x0 || x >= own.x1 || y < own.y0 || y >= own.y1) continue;
        kr_entity_t e = kr_region_agent_create(f->region, (uint64_t)i + 1, x, y);
        if (!e || !kr_component_add(kr_region_world(f->region), e, f->sum)) return kr_last_status();
    }
    return KR_OK;
}

static uint64_t field_digest(kr_sim_t *sim)
{
    return kr_region_state_digest(((field_state_t *)kr_sim_state(sim))->region);
}

static kr_status_t field_saves_nothing(kr_sim_t *sim, kr_serializer_t *s)
{
    (void)sim;
    (void)s;
    return KR_OK;
}

#define FIELD_KIND(kind_name, serializer)                                                                          \
    {                                                                                                              \
        .name = kind_name, .summary = "a region whose field grows every step (a checkpoint test)",                \
        .formalism = KR_AGENT_BASED, .register_types = field_register, .setup = field_setup,                      \
        .state_digest = field_digest, .serialize = serializer, .state_size = sizeof(field_state_t),               \
        .receives = (const char *const[]){ NULL },                                                               \
        .params = (const kr_param_t[]){                                                                            \
            KR_PARAM(field_state_t, width, KR_PARAM_INT, .def = "12", .range = ">= 1, <= 1000", .help = "cells"),  \
            KR_PARAM(field_state_t, height, KR_PARAM_INT, .def = "4", .range = ">= 1, <= 1000", .help = "cells"),  \
            KR_PARAM(field_state_t, agents, KR_PARAM_INT, .def = "30", .range = ">= 0, <= 10000",                 \
                     .help = "agents at the start"),                                                               \
            { 0 } },                                                                                               \
    }

static const kr_kind_desc_t field_kind = FIELD_KIND("ckpt_field", NULL);
static const kr_kind_desc_t field_forgets_kind = FIELD_KIND("ckpt_field_forgets", field_saves_nothing);

kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
kr_status_t kairos_plugin_init(kr_kinds_t *kinds)
{
    kr_status_t st = kr_kind_register(kinds, &ckpt_kind);
    if (!st) st = kr_kind_register(kinds, &field_kind);
    if (!st) st = kr_kind_register(kinds, &field_forgets_kind);
    return st;
}
