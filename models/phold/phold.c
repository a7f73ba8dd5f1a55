/* "phold": PHOLD as the PDES literature defines it.
 *
 * Each simulator holds `lps` logical processes (LPs), each an entity with a
 * small component (its index and its event count), and starts every LP with
 * `start_events` events. An event at an LP schedules exactly one new event
 * at now + lookahead + Exp(mean - lookahead); with probability `remote` its
 * target is an LP drawn uniformly among all LPs of the PHOLD (every replica
 * of the entry, `count` x `lps` LPs), otherwise the same LP. A target on
 * another simulator gets a sync-event (the promise of the edge must not
 * exceed the lookahead); a target on this simulator, even one the remote
 * draw chose, a local event.
 *
 * LP ids are global: replica r's local LP i is r * lps + i, so the target's
 * simulator follows from the id alone, whichever rank holds it. Every draw
 * comes from the simulator's own stream (kr_sim_rng), so the answer never
 * depends on ranks or on the synchronization algorithm.
 *
 * The handler is the hot path of the benchmark: it allocates nothing, looks
 * nothing up by name, and schedules by event type id (kr_schedule,
 * kr_schedule_sync), not by handler (kairos/handler.h), which costs a scan
 * of the event types per call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/kairos.h"
#include "models/phold/phold.h"
#include "models/serialize.h"

#define PHOLD_LP "phold.lp"
#define PHOLD_EVENT "phold.event"

/* The LP component; its fields put every LP's count in the checksum. */
typedef struct phold_lp {
    uint32_t index;             /* local index in its simulator */
    uint64_t events;            /* events it processed */
} phold_lp_t;

static const kr_field_t lp_fields[] = {
    KR_FIELD(phold_lp_t, index, KR_FIELD_U32),
    KR_FIELD(phold_lp_t, events, KR_FIELD_U64),
};

/* The payload of every PHOLD event, local or sync. */
typedef struct phold_msg {
    uint32_t lp;                /* local index of the target LP in the target simulator */
    uint32_t pad;
    kr_time_t sent;             /* when it was scheduled: checks the lookahead */
} phold_msg_t;

/* The kind's state. Ids, the world and the stream are looked up once in
 * setup, so that the handler calls nothing to find them. */
typedef struct phold {
    int64_t lps, start_events;  /* params */
    double remote, lookahead, mean;
    kr_entity_list_t lp;        /* LP entities by local index; ids stay valid (no LP is ever destroyed) */
    phold_lp_t *rows;           /* the LP component's column when row i is LP i, else NULL (find_rows) */
    uint64_t events, remote_sent;
    kr_time_t min_delay;        /* smallest (run time - scheduling time) seen */
    double exp_mean;            /* mean - lookahead, model units */
    uint64_t precision;
    kr_event_type_t ev;
    kr_component_t lp_comp;
    kr_world_t *world;
    kr_rng_t *rng;
    uint32_t first_sim;         /* simulator id of replica 0: replicas have consecutive ids */
    uint32_t replicas, self;    /* replica count, this one's index */
    uint64_t total_lps;
} phold_t;

static void fail(kr_sim_t *sim, const char *what)
{
    kr_sim_fail(sim, kr_last_status(), "phold: %s: %s", what, kr_last_error());
}

/* now + lookahead + Exp(mean - lookahead), rounded up to whole ticks so it
 * is never below the lookahead (nor, therefore, below the promise). */
static inline kr_time_t draw_delay(phold_t *ph)
{
    double x = ph->lookahead;
    if (ph->exp_mean > 0) x -= ph->exp_mean * log1p(-kr_rng_uniform(ph->rng));
    return kr_time_delay_ticks(x, ph->precision);
}

/* Points ph->rows at the LP component's column if the world is one table
 * whose row i is LP i, as setup leaves it. The handler then reaches an LP
 * with one memory access where kr_component_get takes three dependent ones
 * (the LP's id, its entity record, its row): with 2^18 LPs those are cache
 * misses, and they were half of an event's time (bench/README.md, "PHOLD
 * as the model grows"). The column stays where it is because nothing
 * changes the world's structure after setup: LPs are never created,
 * destroyed or given components, and PHOLD's sync-events carry no
 * entities. After a restart serialize calls it again on the loaded world. */
static void find_rows(phold_t *ph)
{
    ph->rows = NULL;
    kr_view_t v;
    if (kr_view_init(&v, ph->world, &(kr_view_desc_t){ .include = { ph->lp_comp } })) return;
    kr_view_chunk_t c;
    phold_lp_t *col = NULL;
    bool dense = kr_view_next_chunk(&v, &c) && c.count == (size_t)ph->lps && !kr_view_next_chunk(&v, &(kr_view_chunk_t){ 0 });
    if (dense) {
        col = c.columns[0];
        for (size_t i = 0; i < c.count && dense; i++)
            dense = col[i].index == i && c.entities[i] == ph->lp.items[i];
    }
    kr_view_fini(&v);
    if (dense && kr_world_entity_count(ph->world) == (size_t)ph->lps) ph->rows = col;
}

/* Schedules the next event of a chain whose current LP is `lp`. */
static inline void send_next(kr_sim_t *sim, phold_t *ph, uint32_t lp, kr_time_t now)
{
    uint32_t replica = ph->self;
    if (ph->remote > 0 && kr_rng_uniform(ph->rng) < ph->remote) {
        uint64_t g = (uint64_t)(kr_rng_uniform(ph->rng) * (double)ph->total_lps);
        if (g >= ph->total_lps) g = ph->total_lps - 1;
        replica = (uint32_t)(g / (uint64_t)ph->lps);
        lp = (uint32_t)(g % (uint64_t)ph->lps);
    }
    phold_msg_t msg = { .lp = lp, .sent = now };
    kr_time_t delay = draw_delay(ph);
    if (replica == ph->self) {
        if (kr_schedule(sim, KR_PRIORITY_DEFAULT, delay, ph->ev, &msg, NULL)) fail(sim, "scheduling an event");
    } else {
        ph->remote_sent++;
        if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = ph->first_sim + replica, .delay = delay,
                                                      .type = ph->ev, .data = &msg }, NULL))
            fail(sim, "scheduling a remote event");
    }
}

/* One LP event, local or the target side of a sync-event. */
static void lp_event(kr_sim_t *sim, void *data)
{
    const phold_msg_t *m = data;
    phold_t *ph = kr_sim_state(sim);
    if (m->lp >= ph->lp.count) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "phold: an event for LP %u, which this simulator does not have", m->lp);
        return;
    }
    kr_time_t now = kr_sim_now(sim);
    if (now - m->sent < ph->min_delay) ph->min_delay = now - m->sent;
    phold_lp_t *lp = ph->rows ? &ph->rows[m->lp] : kr_component_get(ph->world, ph->lp.items[m->lp], ph->lp_comp);
    if (lp) lp->events++;
    ph->events++;
    send_next(sim, ph, m->lp, now);
}

static kr_status_t phold_register(kr_model_t *m)
{
    kr_component_t c = kr_component_register(kr_model_registry(m), &(kr_component_desc_t){
        .name = PHOLD_LP, .size = sizeof(phold_lp_t), .align = _Alignof(phold_lp_t), .fields = lp_fields,
        .field_count = 2 });
    return c ? KR_OK : kr_last_status();
}

/* Whether "base[k]" is the simulator with id first + k. */
static bool is_replica(kr_model_t *m, const char *base, int base_len, uint32_t first, uint64_t k)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s[%llu]", base_len, base, (unsigned long long)k);
    kr_sim_t *r = kr_model_find_sim(m, buf);
    return r && kr_sim_id(r) == first + k;
}

/* The replicas of this simulator's entry: "phold[3]" is replica 3 of
 * "phold[0]" ... "phold[N-1]", which the model file adds in a row, so with
 * consecutive ids; a simulator without a count is alone. N is found by a
 * doubling and a halving search from this replica: every replica's setup
 * counting them one by one made a model of N simulators cost N^2 lookups
 * (20,000 replicas took 47 s to build). */
static void find_replicas(kr_sim_t *sim, phold_t *ph)
{
    kr_model_t *m = kr_sim_model(sim);
    const char *name = kr_sim_name(sim), *open = strrchr(name, '[');
    char *end = NULL;
    unsigned long self = open ? strtoul(open + 1, &end, 10) : 0;
    ph->first_sim = kr_sim_id(sim);
    ph->replicas = 1;
    if (!open || !end || strcmp(end, "]") || self > ph->first_sim) return;
    int base_len = (int)(open - name);
    uint32_t first = ph->first_sim - (uint32_t)self;
    if (!is_replica(m, name, base_len, first, 0) || !is_replica(m, name, base_len, first, self)) return;
    /* replicas below `lo` exist, and `hi` is none */
    uint64_t lo = (uint64_t)self + 1, step = 1, hi;
    for (;;) {
        hi = (uint64_t)self + step;
        if (!is_replica(m, name, base_len, first, hi)) break;
        lo = hi + 1;
        step *= 2;
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (is_replica(m, name, base_len, first, mid)) lo = mid + 1;
        else hi = mid;
    }
    ph->first_sim = first;
    ph->replicas = (uint32_t)lo;
    ph->self = (uint32_t)self;
}

static kr_status_t phold_setup(kr_sim_t *sim, const kr_params_t *p)
{
    kr_model_t *m = kr_sim_model(sim);
    phold_t *ph = kr_sim_state(sim);
    if (ph->lookahead > ph->mean) {
        char expected[96], found[64];
        snprintf(expected, sizeof expected, "a lookahead <= mean (%g)", ph->mean);
        snprintf(found, sizeof found, "%g", ph->lookahead);
        return kr_params_error(p, "lookahead", expected, found);
    }
    ph->exp_mean = ph->mean - ph->lookahead;
    ph->precision = kr_model_precision(m);
    ph->world = kr_sim_world(sim);
    ph->rng = kr_sim_rng(sim);
    ph->ev = kr_model_find_event_type(m, PHOLD_EVENT);
    ph->lp_comp = kr_component_lookup(kr_model_registry(m), PHOLD_LP);
    ph->min_delay = KR_TIME_NEVER;
    find_replicas(sim, ph);
    ph->total_lps = (uint64_t)ph->replicas * (uint64_t)ph->lps;

    /* Remote targets need an edge to every other replica whose promise the
     * lookahead keeps. */
    kr_time_t la = kr_time_delay_ticks(ph->lookahead, ph->precision);
    for (uint32_t r = 0; ph->remote > 0 && r < ph->replicas; r++) {
        if (r == ph->self) continue;
        kr_time_t promise = kr_model_promise(m, kr_sim_id(sim), ph->first_sim + r);
        if (promise == KR_TIME_NEVER || promise > la) {
            const char *other = kr_sim_name(kr_model_sim(m, ph->first_sim + r));
            char expected[256], what[256];
            snprintf(expected, sizeof expected, "a dependency from '%s' to every other replica, with a promise <= "
                     "the lookahead %g (remote > 0 sends events to their LPs)", kr_sim_name(sim), ph->lookahead);
            if (promise == KR_TIME_NEVER)
                snprintf(what, sizeof what, "no dependency '%s' -> '%s'", kr_sim_name(sim), other);
            else
                snprintf(what, sizeof what, "the promise %g on '%s' -> '%s'", kr_time_to_units(promise, ph->precision),
                         kr_sim_name(sim), other);
            return kr_params_error(p, "remote", expected, what);
        }
    }

    for (int64_t i = 0; i < ph->lps; i++) {
        kr_entity_t e = kr_entity_create_desc(ph->world, &(kr_entity_desc_t){ .components = &ph->lp_comp,
                                                                               .component_count = 1 });
        if (!e || kr_entity_list_push(&ph->lp, e)) return kr_last_status();
        ((phold_lp_t *)kr_component_get(ph->world, e, ph->lp_comp))->index = (uint32_t)i;
    }
    find_rows(ph);
    kr_status_t st;
    for (int64_t i = 0; i < ph->lps; i++)
        for (int64_t k = 0; k < ph->start_events; k++) {
            phold_msg_t msg = { .lp = (uint32_t)i, .sent = 0 };
            if ((st = kr_schedule(sim, KR_PRIORITY_DEFAULT, draw_delay(ph), ph->ev, &msg, NULL))) return st;
        }
    return KR_OK;
}

/* Figures the state's slots would name otherwise (and min_delay in model
 * units), so the kind reports them itself. */
static void phold_report(kr_sim_t *sim, kr_report_t *r)
{
    phold_t *ph = kr_sim_state(sim);
    kr_report_int(r, "events", (int64_t)ph->events);
    kr_report_int(r, "remote_sent", (int64_t)ph->remote_sent);
    kr_report_int(r, "lps", ph->lps);
    kr_report_number(r, "min_delay", ph->events ? kr_time_to_units(ph->min_delay, ph->precision) : NAN);
}

/* Checkpoints: the LPs are entities of the world, the counters and the LP
 * list declared state, every draw from kr_sim_rng; min_delay alone changes
 * during the run outside them (declaring it would change the digest). The
 * rest of the block is setup's (params, ids, pointers, replicas). */
static kr_status_t phold_serialize(kr_sim_t *sim, kr_serializer_t *s)
{
    phold_t *ph = kr_sim_state(sim);
    /* setup's pointers, taken afresh should the restart have replaced the
     * world or the stream objects rather than their contents */
    if (kr_serializer_loading(s)) {
        ph->world = kr_sim_world(sim);
        ph->rng = kr_sim_rng(sim);
        find_rows(ph);
    }
    return kr__ser_time(s, &ph->min_delay);
}

const kr_kind_desc_t kr__phold_kind = {
    .name = "phold",
    .summary = "PHOLD: LPs passing events, a fraction of them to LPs of other replicas",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = phold_register,
    .setup = phold_setup,
    .report = phold_report,
    .serialize = phold_serialize,
    .state_size = sizeof(phold_t),
    /* digested: every LP (its event count) in LP order, and the totals */
    .state_fields = (const kr_field_t[]){
        KR_FIELD(phold_t, lp, KR_FIELD_ENTITY_LIST),
        KR_FIELD(phold_t, events, KR_FIELD_U64),
        KR_FIELD(phold_t, remote_sent, KR_FIELD_U64),
        { 0 } },
    .params = (const kr_param_t[]){
        KR_PARAM(phold_t, lps, KR_PARAM_INT, .def = "1", .range = ">= 1, <= 100000000", .help = "LPs per simulator"),
        KR_PARAM(phold_t, start_events, KR_PARAM_INT, .def = "1", .range = ">= 1, <= 1000000",
                 .help = "events per LP at the start"),
        KR_PARAM(phold_t, remote, KR_PARAM_NUMBER, .def = "0.25", .range = ">= 0, <= 1",
                 .help = "probability that an event's target is drawn among all LPs"),
        KR_PARAM(phold_t, lookahead, KR_PARAM_NUMBER, .def = "0.1", .range = ">= 0",
                 .help = "the smallest delay, model units; at most `mean`"),
        KR_PARAM(phold_t, mean, KR_PARAM_NUMBER, .def = "1", .range = "> 0", .help = "the mean delay, model units"),
        { 0 } },
    .events = (const kr_event_type_desc_t[]){
        { .name = PHOLD_EVENT, .size = sizeof(phold_msg_t), .on_event = lp_event, .on_target_side = lp_event },
        { 0 } },
    .receives = (const char *const[]){ PHOLD_EVENT, NULL },
};
