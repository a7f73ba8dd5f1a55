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
 * The handler is the hot path of the benchmark: it allocates nothing and
 * looks nothing up by name. The runtime hands handlers no user pointer, so
 * the payload carries the id of the kind's context type (ids are the same
 * on every rank: registration is by model file and checked at start-up). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos/kairos.h"
#include "models/phold/phold.h"

#define PHOLD_CONTEXT "phold.state"
#define PHOLD_LP "phold.lp"
#define PHOLD_EVENT "phold.event"

/* The LP component. */
typedef struct phold_lp {
    uint32_t index;             /* local index in its simulator */
    uint64_t events;            /* events it processed */
} phold_lp_t;

/* The payload of every PHOLD event, local or sync. */
typedef struct phold_msg {
    uint32_t lp;                /* local index of the target LP in the target simulator */
    uint32_t pad;
    kr_time_t sent;             /* when it was scheduled: checks the lookahead */
} phold_msg_t;

typedef struct phold {
    int64_t lps, start_events;
    double remote, lookahead, mean;
    double exp_mean;            /* mean - lookahead, model units */
    uint64_t precision;
    kr_context_type_t ctx;
    kr_event_type_t ev;
    kr_component_t lp_comp;
    kr_world_t *world;
    kr_rng_t *rng;
    kr_entity_t *lp_entity;     /* by local index; ids stay valid (no LP is ever destroyed) */
    uint32_t *replica_sim;      /* simulator id of every replica */
    uint32_t replicas, self;    /* replica count, this one's index */
    uint64_t total_lps;
    uint64_t events, remote_sent;
    kr_time_t min_delay;        /* smallest (run time - scheduling time) seen */
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
        if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = ph->replica_sim[replica], .delay = delay,
                                                      .type = ph->ev, .data = &msg }, NULL))
            fail(sim, "scheduling a remote event");
    }
}

/* One LP event, local or the target side of a sync-event. */
static void lp_event(kr_sim_t *sim, void *data)
{
    const phold_msg_t *m = data;
    phold_t *ph = kr_sim_user(sim, &kr__phold_kind);
    if (!ph || m->lp >= (uint64_t)ph->lps) {
        kr_sim_fail(sim, KR_ERR_CORRUPT, "phold: an event for LP %u, which this simulator does not have", m->lp);
        return;
    }
    kr_time_t now = kr_sim_now(sim);
    if (now - m->sent < ph->min_delay) ph->min_delay = now - m->sent;
    phold_lp_t *lp = kr_component_get(ph->world, ph->lp_entity[m->lp], ph->lp_comp);
    if (lp) lp->events++;
    ph->events++;
    send_next(sim, ph, m->lp, now);
}

static void context_fini(kr_sim_t *sim, void *context)
{
    (void)sim;
    phold_t *ph = context;
    free(ph->lp_entity);
    free(ph->replica_sim);
}

static kr_status_t phold_register(kr_model_t *m)
{
    if (!kr_model_context_type(m, &(kr_context_desc_t){ .name = PHOLD_CONTEXT, .size = sizeof(phold_t),
                                                        .fini = context_fini }))
        return kr_last_status();
    if (!kr_component_register(kr_model_registry(m), &(kr_component_desc_t){
            .name = PHOLD_LP, .size = sizeof(phold_lp_t), .align = _Alignof(phold_lp_t) }))
        return kr_last_status();
    if (!kr_model_event_type(m, &(kr_event_type_desc_t){ .name = PHOLD_EVENT, .size = sizeof(phold_msg_t),
                                                          .on_event = lp_event, .on_target_side = lp_event }))
        return kr_last_status();
    return KR_OK;
}

/* The replicas of this simulator's entry: "phold[3]" is replica 3 of
 * "phold[0]" ... "phold[N-1]"; a simulator without a count is alone. */
static kr_status_t find_replicas(kr_sim_t *sim, phold_t *ph, const kr_params_t *p)
{
    kr_model_t *m = kr_sim_model(sim);
    size_t n = kr_model_sim_count(m);
    ph->replica_sim = malloc(n * sizeof *ph->replica_sim);
    if (!ph->replica_sim) return kr_params_error(p, "lps", "memory for the table of replicas", "none left");
    const char *name = kr_sim_name(sim);
    const char *open = strrchr(name, '[');
    char *end = NULL;
    unsigned long self = open ? strtoul(open + 1, &end, 10) : 0;
    ph->replicas = 0;
    if (open && end && !strcmp(end, "]")) {
        char buf[512];
        int base = (int)(open - name);
        for (; ph->replicas < n; ph->replicas++) {
            snprintf(buf, sizeof buf, "%.*s[%u]", base, name, ph->replicas);
            kr_sim_t *r = kr_model_find_sim(m, buf);
            if (!r) break;
            ph->replica_sim[ph->replicas] = kr_sim_id(r);
        }
    }
    if (ph->replicas == 0 || self >= ph->replicas || ph->replica_sim[self] != kr_sim_id(sim)) {
        ph->replicas = 1;
        ph->replica_sim[0] = kr_sim_id(sim);
        self = 0;
    }
    ph->self = (uint32_t)self;
    return KR_OK;
}

static kr_status_t phold_setup(kr_sim_t *sim, const kr_params_t *p)
{
    kr_model_t *m = kr_sim_model(sim);
    kr_context_type_t ctx = kr_model_find_context_type(m, PHOLD_CONTEXT);
    phold_t *ph = ctx ? kr_sim_context(sim, ctx) : NULL;
    if (!ph) return kr_last_status();
    ph->ctx = ctx;
    kr_sim_set_user(sim, &kr__phold_kind, ph);
    kr_status_t st = kr_params_int(p, "lps", 1, 1, 100000000, &ph->lps);
    if (!st) st = kr_params_int(p, "start_events", 1, 1, 1000000, &ph->start_events);
    if (!st) st = kr_params_number(p, "remote", 0.25, &ph->remote);
    if (!st) st = kr_params_number(p, "lookahead", 0.1, &ph->lookahead);
    if (!st) st = kr_params_number(p, "mean", 1.0, &ph->mean);
    if (st) return st;
    char found[64];
    if (!(ph->remote >= 0 && ph->remote <= 1)) {
        snprintf(found, sizeof found, "%g", ph->remote);
        return kr_params_error(p, "remote", "a probability within [0, 1]", found);
    }
    if (!(ph->mean > 0) || !isfinite(ph->mean)) {
        snprintf(found, sizeof found, "%g", ph->mean);
        return kr_params_error(p, "mean", "a mean delay > 0 in model units", found);
    }
    if (!(ph->lookahead >= 0) || !isfinite(ph->lookahead)) {
        snprintf(found, sizeof found, "%g", ph->lookahead);
        return kr_params_error(p, "lookahead", "a lookahead >= 0 in model units", found);
    }
    if (ph->lookahead > ph->mean) {
        char expected[96];
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
    if ((st = find_replicas(sim, ph, p))) return st;
    ph->total_lps = (uint64_t)ph->replicas * (uint64_t)ph->lps;

    /* Remote targets need an edge to every other replica whose promise the
     * lookahead keeps. */
    kr_time_t la = kr_time_delay_ticks(ph->lookahead, ph->precision);
    for (uint32_t r = 0; ph->remote > 0 && r < ph->replicas; r++) {
        if (r == ph->self) continue;
        kr_time_t promise = kr_model_promise(m, kr_sim_id(sim), ph->replica_sim[r]);
        if (promise == KR_TIME_NEVER || promise > la) {
            const char *other = kr_sim_name(kr_model_sim(m, ph->replica_sim[r]));
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

    ph->lp_entity = malloc((size_t)ph->lps * sizeof *ph->lp_entity);
    if (!ph->lp_entity) return kr_params_error(p, "lps", "a number of LPs that fits in memory", "too many");
    for (int64_t i = 0; i < ph->lps; i++) {
        kr_entity_t e = kr_entity_create_desc(ph->world, &(kr_entity_desc_t){ .components = &ph->lp_comp,
                                                                               .component_count = 1 });
        if (!e) return kr_last_status();
        ((phold_lp_t *)kr_component_get(ph->world, e, ph->lp_comp))->index = (uint32_t)i;
        ph->lp_entity[i] = e;
    }
    for (int64_t i = 0; i < ph->lps; i++)
        for (int64_t k = 0; k < ph->start_events; k++) {
            phold_msg_t msg = { .lp = (uint32_t)i, .sent = 0 };
            if ((st = kr_schedule(sim, KR_PRIORITY_DEFAULT, draw_delay(ph), ph->ev, &msg, NULL))) return st;
        }
    return KR_OK;
}

static phold_t *state_of(kr_sim_t *sim)
{
    kr_context_type_t t = kr_model_find_context_type(kr_sim_model(sim), PHOLD_CONTEXT);
    return t ? kr_sim_context(sim, t) : NULL;
}

static void phold_report(kr_sim_t *sim, kr_report_t *r)
{
    phold_t *ph = state_of(sim);
    if (!ph) return;
    kr_report_int(r, "events", (int64_t)ph->events);
    kr_report_int(r, "remote_sent", (int64_t)ph->remote_sent);
    kr_report_int(r, "lps", ph->lps);
    kr_report_number(r, "min_delay", ph->events ? kr_time_to_units(ph->min_delay, ph->precision) : NAN);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ULL;
}

/* Every LP's event count, in LP order, then the remote count. */
static uint64_t phold_digest(kr_sim_t *sim)
{
    phold_t *ph = state_of(sim);
    if (!ph || !ph->lp_entity) return 0;
    uint64_t h = 0x9401d;
    for (int64_t i = 0; i < ph->lps; i++) {
        const phold_lp_t *lp = kr_component_get(ph->world, ph->lp_entity[i], ph->lp_comp);
        h = mix(h, lp ? lp->events : UINT64_MAX);
    }
    return mix(h, ph->remote_sent);
}

const kr_kind_desc_t kr__phold_kind = {
    .name = "phold",
    .summary = "PHOLD: LPs passing events, a fraction of them to LPs of other replicas",
    .formalism = KR_DISCRETE_EVENT,
    .register_types = phold_register,
    .setup = phold_setup,
    .report = phold_report,
    .digest = phold_digest,
};
