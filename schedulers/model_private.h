/* The model container, its simulators and dependency edges, as the
 * coordinator sees them. Not public API.
 *
 * The model is the root of a run: simulators (each its own world, queue and
 * clock), dependency edges (each with a sender half and a receiver half, so
 * the halves can live on different ranks), zero-promise groups, and the
 * transport that carries every message between simulators of different
 * groups, also inside one process. */
#ifndef KAIROS_SCHEDULERS_MODEL_PRIVATE_H
#define KAIROS_SCHEDULERS_MODEL_PRIVATE_H

#include <stdbool.h>
#include <stdio.h>
#include "kairos/buffer.h"
#include "kairos/emulation.h"
#include "kairos/model.h"
#include "kairos/sync.h"
#include "base/hmap.h"
#include "schedulers/event_queue.h"
#include "net/transport.h"
#include "schedulers/model_fail.h"
#include "schedulers/time_private.h"

/* Makes a model use `t` (owned by the model from then on) instead of the
 * in-process transport; before kr_model_start. */
kr_status_t kr__model_use_transport(kr_model_t *model, kr__transport_t *t);

/* The promises of this model come from `source` (a model file's
 * "dependencies"; copied): from now on kr_model_set_promise and
 * kr_model_set_promises refuse, naming it. A kind's setup runs only on
 * the rank of its simulator, so a promise it changed would differ between
 * ranks (docs/concepts.md). */
kr_status_t kr__model_fix_promises(kr_model_t *model, const char *source);

/* What a queued event record does when it runs. */
typedef enum kr__event_kind {
    KR__EV_LOCAL,     /* type's on_event */
    KR__EV_STEP,      /* agent-based step: on_update, on_late_update, next step */
    KR__EV_OBSERVE,   /* continuous observation point (also the end) */
    KR__EV_SENDER,    /* sync-event sender side: on_sender_side, then the payload leaves */
    KR__EV_TARGET,    /* sync-event target side (awaiting_payload while a placeholder) */
    KR__EV_INPUT,     /* emulation input line */
    KR__EV_STATE      /* continuous state event (threshold crossing) */
} kr__event_kind_t;

/* An event record's state (kr__event_rec_t.state). KR__EVREC_, not
 * KR__REC_: that prefix is the ECS's entity records (ecs/world_private.h). */
enum { KR__EVREC_FREE, KR__EVREC_PENDING };

/* An event record's flags (kr__event_rec_t.flags). */
enum {
    KR__EVREC_AWAITING = 1,  /* target-side placeholder: payload not here yet */
    KR__EVREC_HEAP = 2,      /* payload in data.heap, not inline */
    KR__EVREC_INDEXED = 4    /* in the simulator's by_source index */
};

/* Payloads up to this size live in the record itself; 24 keeps a record
 * at one 64-byte cache line. */
#define KR__INLINE_DATA 24

/* One pending event: one cache line, touched once when scheduled and once
 * when run. Queue entries point at records by slot; the simulator's
 * version array changes whenever an entry for a slot goes stale (delay,
 * cancel, free), so stale entries are skipped when they surface. The key
 * is stored flat (its target is the simulator holding the record); the
 * rare fields (entities, input text) live in a side table. */
typedef struct kr__event_rec {
    kr_time_t time;
    uint64_t sequence;
    kr_priority_t priority;
    uint32_t source;
    kr_event_type_t type;
    uint32_t data_size;
    uint32_t extra;             /* 1 + index into the simulator's extras, 0 none */
    uint8_t kind;
    uint8_t phase;
    uint8_t state;
    uint8_t flags;
    union {
        uint8_t bytes[KR__INLINE_DATA];
        void *heap;
        uint32_t next_free;     /* while free */
    } data;
} kr__event_rec_t;

/* The rare fields of a record (sync-events that carry entities, emulation
 * input), allocated on demand. */
typedef struct kr__rec_extra {
    kr_buf_t pack;              /* target side: entities to unpack */
    kr_entity_t *roots;         /* sender side: entities to pack after it ran */
    size_t root_count;          /* target side: roots in pack; sender side: roots */
    char *text;                 /* input: "event\0to\0data" */
    uint32_t target;            /* sender side: the target simulator */
    uint32_t next_free;
} kr__rec_extra_t;

/* A sync-event this simulator sent that it may still cancel or delay: the
 * sender's own record of it, whatever edge or transport carried it. */
typedef struct kr__outgoing {
    uint64_t sequence;
    kr_time_t time;             /* current time, after delays */
    kr_time_t promise;          /* of its edge */
    uint32_t target;
    uint32_t sender_handle;     /* 1 + slot of the sender-side record in the sender, 0 none */
    uint32_t target_handle;     /* 1 + slot of the target record, when the sender placed it directly */
    bool live;
    bool carries_entities;
} kr__outgoing_t;

typedef struct kr__continuous kr__continuous_t; /* continuous.c */
typedef struct kr__emulation kr__emulation_t;   /* emulation.c */

struct kr_sim {
    kr_model_t *model;
    uint32_t id;
    uint32_t group;
    int rank;                   /* where it runs */
    bool local;                 /* rank == the model's rank: world, queue and all */
    char *name;
    kr_formalism_t formalism;
    kr_time_t time_step;
    kr_world_t *world;
    kr_rng_t *rng;
    void *user;                 /* kr_sim_set_user, for the owner `user_tag` */
    const void *user_tag;

    /* The sync-event types it runs on the target side, a bit per type id
     * (receive.c); NULL: none declared, and none checked (all bits 0: it
     * receives none). */
    uint64_t *receives;
    uint32_t receives_words;

    kr__equeue_t queue;
    kr__event_rec_t *recs;       /* 64-byte aligned */
    uint32_t *versions;         /* by slot: a queue entry is live iff its aux equals this */
    uint32_t rec_count, rec_cap, free_head;
    uint32_t stale_entries;     /* queue entries known to be stale (exact) */
    kr__rec_extra_t *extras;
    uint32_t extra_count, extra_cap, extra_free;
    /* (source, sequence) -> slot of target-side records, which other
     * simulators name that way (payloads, cancel, delay). Local events are
     * found by the handle in their key instead. Placeholders are always
     * indexed; the other target records only once a lookup needed the
     * index (index_targets), so a model that never cancels a sync-event
     * never pays for it. */
    kr__hmap_t by_source;
    bool index_targets;

    uint64_t sequence;          /* advanced by every schedule */
    kr_time_t now;
    uint64_t executed;
    uint64_t digest;
    uint64_t sync_sent, sync_received, null_sent, requests_sent;
    uint64_t blocked_ns, blocked_since;  /* blocked_since 0: not blocked */
    /* The stall watch (coordinator.c, watch_stalls): now and executed at
     * its last look, since when (wall ns, 0: not yet looked) events have
     * run here without now moving, and the events then. */
    kr_time_t watch_now;
    uint64_t watch_executed, stalled_since, stalled_from;
    bool stall_told;
    uint64_t blocked_episodes;  /* spans opened (note_blocked) */
    bool executing;
    kr_event_key_t current;
    uint32_t current_slot;

    uint32_t *out_edges, out_count;  /* indices into model->edges */
    uint32_t *in_edges, in_count;

    /* Sync-events sent, for cancel and delay, in increasing sequence order
     * (so found by binary search); pruned when full. */
    kr__outgoing_t *outgoing;
    uint32_t outgoing_count, outgoing_cap, outgoing_live;

    kr_entity_t *moved;         /* entities of the executing target side */
    size_t moved_count, moved_cap;

    void **contexts;            /* by state (context) type id */
    void *state;                /* kr_sim_state: one of contexts */
    struct kr__named_stat *stats; /* kr_sim_tally & co., in creation order */
    uint32_t stat_count, stat_cap;
    uint32_t state_type;        /* its type, 0 for none */
    void (*on_step)(kr_sim_t *sim);
    kr__continuous_t *cont;
    kr__emulation_t *emu;
    struct kr__render *render;  /* render.c: layers and fields for frames, NULL for none */
    /* stop.c: it runs no event at or after this (KR_TIME_NEVER: none) */
    kr_time_t stop_horizon;
    /* checkpoint.c: its state came from a checkpoint, so starting the
     * model schedules nothing for it (the queue holds its next step) */
    bool restored;
};

/* A pending guarantee: applies once `count` data messages have arrived. */
typedef struct kr__pending_guarantee { uint64_t count; kr_time_t time; } kr__pending_guarantee_t;

typedef struct kr__edge {
    uint32_t from, to;
    kr_time_t promise;
    bool internal;              /* both ends in one zero-promise group */
    /* Both ends in this process, over a transport that allows it: messages
     * are applied at once instead of travelling (still counted in sent and
     * received, and in the model's msgs_sent / msgs_delivered), and
     * guarantees are set directly. */
    bool direct;
    bool touched;               /* on the model's touched list (kr__touch_edge) */
    uint32_t in_pos;            /* its place in its receiver group's in_edges */
    /* sender half */
    kr_event_type_t received_type; /* the last type found among what `to` receives (0: none yet; receive.c) */
    uint64_t sent;              /* data messages sent so far */
    kr_time_t guarantee_sent;   /* the highest guarantee sent, on a null or a data message */
    kr_time_t demand;           /* the receiver asked for a guarantee up to this */
    kr__held_t held;            /* the last data message, while the transport holds it (sync.c) */
    bool held_sync;             /* ... and it is a SYNC, to which sync-events may be added */
    /* receiver half */
    uint64_t received;          /* data messages applied, in edge order */
    uint64_t next_sync_seq;     /* sync-events arrive in increasing sender sequence */
    kr_time_t guarantee;        /* applied: no sync-event from `from` before it */
    kr_time_t requested;        /* the largest guarantee asked of the sender */
    kr__pending_guarantee_t *pending; size_t pending_count, pending_cap;
    kr_buf_t *early;            /* data messages that arrived ahead of their turn */
    uint64_t *early_seq; size_t early_count, early_cap;
} kr__edge_t;

typedef struct kr__group {
    /* (laid out in 64 bytes: the coordinator walks the groups every step) */
    uint32_t *members;          /* sim ids, ascending */
    uint32_t *in_edges;         /* edges from outside into the group */
    uint32_t count, in_count;   /* of members, of in_edges */
    kr_time_t bound;            /* min guarantee over in_edges */
    kr_time_t horizon;          /* stop.c: its members' stop horizon (equal in a group) */
    /* Null messages: the model time a stretch of its events may span
     * before what it sent and may now guarantee leaves (coordinator.c,
     * kr__coord_prepare); KR_TIME_NEVER when nothing it sends travels. */
    kr_time_t stretch;
    /* The base (least of its next time and bound) of send_guarantees's
     * last full pass over its edges, while `sent_valid`: a pass from a
     * base no higher finds nothing to send, unless a receiver asked for
     * more since (which clears `sent_valid`). */
    kr_time_t sent_base;
    uint32_t bound_from;        /* window: the simulator whose edge set the bound */
    bool raised;                /* its bound grew by a direct guarantee: its own guarantees may grow */
    bool done;
    bool local;                 /* its members run in this process */
    bool sent_valid;
} kr__group_t;

/* A min-tree over a group's in-edge guarantees (coordinator.c, "Bounds
 * over many in-edges"): node[1] is the least, leaves from node[leaves]. */
typedef struct kr__bound_tree {
    kr_time_t *node;            /* NULL: the group rescans its in-edges */
    uint32_t leaves;
} kr__bound_tree_t;

typedef struct kr__event_type_rec {
    char *name;
    kr_event_type_desc_t desc;
} kr__event_type_rec_t;

typedef struct kr__context_rec {
    char *name;
    kr_context_desc_t desc;     /* desc.fields: a copy, ending with { 0 } */
} kr__context_rec_t;

struct kr_model {
    int rank;                   /* this process's rank */
    kr_sync_algorithm_t sync;   /* what runs: never auto once started (kr_model_start) */
    kr_sync_algorithm_t sync_asked; /* kr_model_desc_t's */
    bool window_open;           /* window: this round's bounds are set */
    /* the groups whose bounds a direct guarantee raised (each `raised`),
     * for propagate to pass the growth on; by group count, from
     * kr__coord_prepare (null messages) */
    uint32_t *raised, raised_count;
    uint64_t rounds;            /* window rounds so far */
    uint64_t msgs_sent, msgs_delivered; /* data messages, for the window's quiescence */
    uint64_t transport_sent;    /* messages handed to the transport (data and guarantees), for the stats */
    uint64_t window_last[3];    /* this process's messages, events run, next times at the last round */
    /* window, over ranks: per group, the earliest data message sent to it
     * since the last round (it may still be on its way when the round
     * gathers next times, and must count as the receiver's) */
    kr_time_t *window_sent_min;
    /* window: per group, the least promise of an edge into it from another
     * group (KR_TIME_NEVER: none), so that a round's Dijkstra can tell when
     * no bound can fall any more (window_round) */
    kr_time_t *window_least_in;
    uint64_t precision, seed;
    kr_time_t end_time;
    kr_registry_t *registry;
    bool owns_registry;
    kr_log_level_t log_level;
    kr_log_fn log_fn;
    void *log_arg;
    kr_observer_t observer;
    bool observed;              /* any hook set */

    kr_sim_t **sims;
    uint32_t sim_count, sim_cap;
    kr__hmap_t sim_names;        /* name hash -> id */
    kr__edge_t *edges;
    uint32_t edge_count, edge_cap;
    kr__hmap_t edge_pairs;       /* hash of (from, to) -> edge index: duplicates found in O(1) while building */
    kr__event_type_rec_t *types; /* id 1 at index 0 */
    uint32_t type_count;
    kr__context_rec_t *contexts; /* id 1 at index 0 */
    uint32_t context_count;

    kr__group_t *groups;
    uint32_t group_count;
    kr__bound_tree_t *bound_trees; /* by group, from kr__coord_prepare (null messages) */
    uint32_t last_ran;          /* the group the last step ran (names an injected allocation failure) */
    /* Null messages with many groups here (coordinator.c, "The groups a
     * scan found runnable"): the runnable groups the last full scan found,
     * lowest head first, which the next steps take in turn; ready_keep is
     * how many a scan keeps (0: every step scans), and how many steps may
     * follow it before the next (ready_steps: how many are left). */
    struct kr__time_item *ready;
    uint32_t ready_count, ready_next, ready_keep, ready_steps;
    uint32_t ready_cap;         /* entries `ready` has room for: the local groups */
    /* Null messages: the edges deliveries came on since the last poll's
     * were taken up (each `touched`), and the groups at their ends, each
     * once (group_touched), so that a poll costs what it brought, not
     * the number of groups (coordinator.c, "What a delivery touched");
     * touched_all: a stop came, which may change every group. By edge and
     * group count, from kr__coord_prepare; NULL under the window. */
    uint32_t *touched, touched_count;
    uint32_t *touched_groups, touched_group_count;
    bool *group_touched;
    bool touched_all;
    uint32_t steps_unwatched;   /* steps since the stall watch last looked */
    uint64_t steps, groups_scanned; /* the coordinator's steps, and the groups its scans visited (tests/unit/test_sync.c) */
    uint64_t window_edges;      /* the edges the window's rounds looked at (the same) */
    bool started, running, finished;
    bool prepared;              /* kr__coord_prepare ran */
    /* Null messages: every guarantee leaves as soon as it grows, none held
     * back to the next mark (coordinator.c, kr__coord_prepare). */
    bool eager_guarantees;
    bool has_continuous;        /* a simulator is continuous (coordinator.c, advance_continuous) */
    bool has_emulation;         /* a simulator is an emulation (its clock is polled every step) */
    /* The simulator whose setup or world start is running, if any: only it
     * may schedule then (kr__sim_may_change). */
    kr_sim_t *acting;
    /* A checkpoint's cut (0: none): the coordinator runs only events
     * before it, and stops once every process has, with nothing in flight
     * (at_cut); guarantees stay those of the whole run. */
    kr_time_t cut;
    bool at_cut;

    kr__transport_t *transport;  /* NULL until run: the in-process one */
    bool owns_transport;
    kr_buf_t msg;               /* scratch for encoding one message */
    char *promise_source;       /* kr__model_fix_promises: where the promises come from */
    kr_status_t failure;        /* first error inside a handler stops the run */
    char failure_msg[512];
    /* stop.c: ending the run from inside the model */
    bool has_stop_lookahead;
    kr_time_t stop_lookahead;
    bool stopped;               /* the earliest stop known here, by (time, simulator id) */
    uint32_t stopped_by;
    kr_time_t stopped_at;
    struct kr__stop *stop_unsent; /* learned, not yet passed on along this process's edges */
    uint32_t stop_unsent_count, stop_unsent_cap;
};

/* The last time the coordinator may run an event: the end time, or the
 * tick before a checkpoint's cut. */
static inline kr_time_t kr__run_limit(const kr_model_t *m)
{
    return m->cut && m->cut - 1 < m->end_time ? m->cut - 1 : m->end_time;
}

/* model.c */
static inline kr__event_type_rec_t *kr__event_type(const kr_model_t *m, kr_event_type_t t)
{
    return t >= 1 && t <= m->type_count ? &m->types[t - 1] : NULL;
}

/* Marks what sim receives as declared, even when nothing is (a kind's
 * empty `receives`): every sync-event to it is checked from now on. */
kr_status_t kr__sim_receives_declared(kr_sim_t *sim);

/* kr_sim_receives for a simulator that is not NULL (receive.c). */
static inline bool kr__sim_receives(const kr_sim_t *s, kr_event_type_t t)
{
    return t / 64 < s->receives_words && (s->receives[t / 64] >> (t % 64) & 1);
}
kr__edge_t *kr__edge_by_hash(const kr_model_t *m, uint32_t from, uint32_t to);
/* Every sync-event sent and every message delivered looks its edge up: a
 * scan of the sender's edges while they are few (cheaper than hashing),
 * by hash beyond, where the scan grew with the fan-out (PHOLD over 32
 * simulators: bench/README.md). Inline: a call was half of its cost. */
#define KR__EDGE_SCAN_MAX 8
static inline kr__edge_t *kr__edge(kr_model_t *m, uint32_t from, uint32_t to)
{
    if (from >= m->sim_count) return NULL;
    const kr_sim_t *s = m->sims[from];
    if (s->out_count > KR__EDGE_SCAN_MAX) return kr__edge_by_hash(m, from, to);
    for (uint32_t i = 0; i < s->out_count; i++)
        if (m->edges[s->out_edges[i]].to == to) return &m->edges[s->out_edges[i]];
    return NULL;
}
/* kr__model_fail: schedulers/model_fail.h. */

/* A delivery came on edge e: the coordinator takes up what it changed at
 * its receiver and, for a guarantee request, at its sender (coordinator.c,
 * "What a delivery touched"). Each edge goes on the list once. */
static inline void kr__touch_edge(kr_model_t *m, kr__edge_t *e)
{
    if (!m->touched || e->touched) return;
    e->touched = true;
    m->touched[m->touched_count++] = (uint32_t)(e - m->edges);
}

/* sim.c */
kr_status_t kr__sim_init(kr_sim_t *s);
void kr__sim_fini(kr_sim_t *s);
/* A simulator's pending events and what they hold, for `kairos
 * validate`'s memory estimate (runtime/memory_estimate.c): arrays counted
 * by capacity, as allocated. */
typedef struct kr__sim_footprint {
    size_t pending;          /* pending event records */
    size_t payload_bytes;    /* payloads outside the records, and their rare fields' bytes */
    size_t event_bytes;      /* records, versions, queue, index, payloads: all the events hold */
    size_t other_bytes;      /* the simulator itself: its struct, sent sync-events, edges */
} kr__sim_footprint_t;
kr__sim_footprint_t kr__sim_footprint(const kr_sim_t *s);
/* A fresh record (state pending, no data); returns its slot or UINT32_MAX. */
uint32_t kr__rec_alloc(kr_sim_t *s);
void kr__rec_free(kr_sim_t *s, uint32_t slot);
kr_status_t kr__rec_set_data(kr__event_rec_t *r, const void *data, size_t size);
static inline void *kr__rec_data(kr__event_rec_t *r)
{
    return r->flags & KR__EVREC_HEAP ? r->data.heap : r->data.bytes;
}
/* The record's rare fields, allocated on first use (NULL: out of memory). */
kr__rec_extra_t *kr__rec_extra(kr_sim_t *s, kr__event_rec_t *r);
/* The record's rare fields if it has any, else NULL. */
static inline kr__rec_extra_t *kr__rec_extra_peek(kr_sim_t *s, const kr__event_rec_t *r)
{
    return r->extra ? &s->extras[r->extra - 1] : NULL;
}
/* The public key of the record at `slot` of s. */
static inline kr_event_key_t kr__rec_key(const kr_sim_t *s, const kr__event_rec_t *r, uint32_t slot)
{
    return (kr_event_key_t){ .time = r->time, .priority = r->priority, .source = r->source, .sequence = r->sequence,
                             .phase = r->phase, .target = s->id, .handle = slot + 1 };
}
/* Key order of two records. */
static inline bool kr__rec_less(const kr__event_rec_t *a, const kr__event_rec_t *b)
{
    if (a->time != b->time) return a->time < b->time;
    if (a->priority != b->priority) return a->priority < b->priority;
    if (a->source != b->source) return a->source < b->source;
    if (a->sequence != b->sequence) return a->sequence < b->sequence;
    return a->phase < b->phase;
}
/* Pushes the record's queue entry (and indexes a placeholder). */
kr_status_t kr__rec_enqueue(kr_sim_t *s, uint32_t slot);
/* The pending record (source, sequence) of s, or UINT32_MAX. A non-zero
 * handle (1 + slot, from a key or the outgoing table) is authoritative. */
uint32_t kr__rec_find(kr_sim_t *s, uint32_t source, uint64_t sequence, uint32_t handle);
kr__event_rec_t *kr__sim_head_slow(kr_sim_t *s);
/* The lowest pending record, stale queue entries dropped; NULL if none.
 * Without stale entries (the common case) it is the queue's head. */
static inline kr__event_rec_t *kr__sim_head(kr_sim_t *s)
{
    if (s->stale_entries == 0 && s->queue.heap_count) return &s->recs[s->queue.heap[0].slot];
    return kr__sim_head_slow(s);
}
/* Runs the head record (precondition: kr__sim_head is runnable). Returns
 * false if instead of running it the simulator had to do something first
 * (a continuous state event was found before it). */
bool kr__sim_run_head(kr_sim_t *s);
/* Whether fn may change s's events although s executes no event (callers
 * test s->executing first, so that a handler's own calls pay one test):
 * false, with the error set, from another simulator's callback, during the
 * run outside s's events, after the run, or for a simulator of another
 * rank. sim.c says why. */
bool kr__sim_may_change(const kr_sim_t *s, const char *fn);
/* Time of the earliest thing the simulator may still do, for guarantees. */
kr_time_t kr__sim_next_time(kr_sim_t *s);
/* The same without a continuous simulator's possible state events (a tick
 * past its state's time until it integrates further): what a cut waits
 * for (coordinator.c, window_round). */
kr_time_t kr__sim_next_scheduled(kr_sim_t *s);
uint64_t kr__sim_next_sequence(kr_sim_t *s);
/* Schedules a record of `kind` in s at time t with the given priority. */
/* state.c: frees a simulator's state blocks with their slots; frees the
 * model's state types. */
void kr__sim_states_free(kr_sim_t *s);
void kr__state_types_free(kr_model_t *m);
/* state.c, for checkpoint.c: every state block of s (by state type name,
 * field by field) and its statistics by name; loading overwrites the
 * blocks setup made and fails (KR_ERR_CORRUPT) on anything that does not
 * fit the model. */
void kr__sim_states_save(kr_sim_t *s, kr_buf_t *b);
kr_status_t kr__sim_states_load(kr_sim_t *s, kr_reader_t *r);
/* model.c: refuses (KR_ERR_STATE, naming `fn`) a structural change after
 * start, and drops groups computed before. */
kr_status_t kr__model_refuse_after_start(const kr_model_t *m, const char *fn);
/* model.c: the same, and also refuses an addition of a simulator, a
 * dependency or a type made from a simulator's setup (a kind's setup runs
 * only on its simulator's rank; docs/model-file.md). Such a refusal also
 * fails the model, so that a setup that ignores it still stops the run. */
kr_status_t kr__model_refuse_change(const kr_model_t *m, const char *fn);

kr_status_t kr__sim_schedule_kind(kr_sim_t *s, kr__event_kind_t kind, kr_priority_t prio, kr_time_t t,
                                  kr_event_type_t type, const void *data, size_t size,
                                  kr_event_key_t *key);
/* Cancels (extra ignored) or delays by `extra` the pending record `key`
 * names in s itself, local or a sync-event's side; `fn` names the caller
 * in errors. */
kr_status_t kr__sim_change(kr_sim_t *s, const kr_event_key_t *key, bool delay, kr_time_t extra,
                           kr_event_key_t *new_key, const char *fn);

/* sync.c */
/* Applies one message from the transport; a malformed one fails the run. */
kr_status_t kr__sync_deliver(kr_model_t *m, const void *bytes, size_t len);
/* The sender side ran in s: pack the entities and send the payload. */
void kr__sync_send_payload(kr_sim_t *s, kr__event_rec_t *r);
/* Unpacks a target side's entities into s->moved. */
kr_status_t kr__sync_unpack(kr_sim_t *s, kr__event_rec_t *r);
kr_status_t kr__sync_send_guarantee(kr_model_t *m, kr__edge_t *e, kr_time_t g);
/* Writes guarantee g into the edge's last data message if the transport
 * still holds it (free: no message of its own); false if it does not. */
bool kr__sync_raise_held(kr_model_t *m, kr__edge_t *e, kr_time_t g);
/* Asks the sender of edge e (in another process) for a guarantee of at
 * least `need` (on demand: it sends guarantees that grow until then). */
kr_status_t kr__sync_request_guarantee(kr_model_t *m, kr__edge_t *e, kr_time_t need);
/* kr_cancel (extra ignored) and kr_delay of a sync-event s sent: checked
 * against the sender's own record of it, then applied to both sides. */
kr_status_t kr__sync_cancel(kr_sim_t *s, const kr_event_key_t *key, bool delay, kr_time_t extra,
                            kr_event_key_t *new_key);

/* stop.c (docs/concepts.md, "Ending a run from inside the model") */
typedef struct kr__stop { uint32_t by; kr_time_t at; } kr__stop_t;
/* At start: refuses a zero stop lookahead with several groups. */
kr_status_t kr__stop_check_start(kr_model_t *m);
void kr__stop_fini(kr_model_t *m);
/* A stop by simulator `by` at `at` became known here: lowers the horizons
 * of every simulator (t + shortest promise distance, or + the lookahead)
 * and, with the null-message algorithm, queues it to be passed on along
 * this process's outgoing edges when it lowered any. */
kr_status_t kr__stop_learn(kr_model_t *m, uint32_t by, kr_time_t at);
/* Sends the queued stops on every outgoing edge that leaves this process
 * (before any guarantee sent after they became known). */
kr_status_t kr__stop_flush(kr_model_t *m);
/* Window rounds: group horizons ride with the round's reduction. */
void kr__stop_window_fill(const kr_model_t *m, uint64_t *slots);
kr_status_t kr__stop_window_apply(kr_model_t *m, const uint64_t *slots);
/* Shortest promise distances from `from` to every simulator (with the stop
 * lookahead); KR_TIME_NEVER where no path leads. `dist` has sim_count
 * entries. For tests. */
kr_status_t kr__stop_distances(const kr_model_t *m, uint32_t from, kr_time_t *dist);

/* sync.c: a MSG_STOP on edge e (a data message, so that it applies before
 * any guarantee sent after it). */
kr_status_t kr__sync_send_stop(kr_model_t *m, kr__edge_t *e, uint32_t by, kr_time_t at);
/* sync.c: withdraws the target half of s's sync-event `sequence` to `target`
 * at `time`, whose sender side will never run (at or after s's stop
 * horizon; stop.c): cancelled at once on a direct or internal edge, else by
 * a MSG_CANCEL. */
kr_status_t kr__sync_withdraw(kr_sim_t *s, uint32_t target, uint64_t sequence, kr_time_t time);

/* coordinator.c */
kr_status_t kr__coord_run(kr_model_t *m);
/* Runs every event before `cut` (0: to the end), everywhere: returns with
 * *at_cut once every process did and nothing is in flight (a checkpoint
 * may be taken; call again to go on), or at the end of the run (*at_cut
 * false; finished). On every process at once. */
kr_status_t kr__coord_run_until(kr_model_t *m, kr_time_t cut, bool *at_cut);
/* One unit of work (tests): returns false when the run is over. */
bool kr__coord_step(kr_model_t *m, kr_status_t *status);
kr_status_t kr__coord_prepare(kr_model_t *m);

/* continuous.c */
void kr__continuous_fini(kr_sim_t *s);
/* Before running an event at t: integrate to t. Returns false if a state
 * event was found first (and scheduled). */
bool kr__continuous_advance(kr_sim_t *s, kr_time_t t);
void kr__continuous_observe(kr_sim_t *s, bool observation_point);
kr_time_t kr__continuous_next(kr_sim_t *s, kr_time_t head);
/* For the coordinator's walk of a group's continuous members
 * (coordinator.c, advance_continuous): whether s has state events, the
 * time its state has reached (KR_TIME_NEVER without an ODE), and its next
 * integration stop after `from` (KR_TIME_NEVER without state events). */
bool kr__continuous_has_state_events(const kr_sim_t *s);
kr_time_t kr__continuous_time(const kr_sim_t *s);
kr_time_t kr__continuous_stop_after(const kr_sim_t *s, kr_time_t from);
/* The time of the first state event kr__continuous_advance(s, t) would
 * find, found on a copy of the state (which does not change), or
 * KR_TIME_NEVER: none (or the run failed). */
kr_time_t kr__continuous_first_crossing(kr_sim_t *s, kr_time_t t);
kr_status_t kr__continuous_start(kr_sim_t *s);
/* For a frame at t, once every event up to t has run: until
 * kr__continuous_unshow, kr_continuous_state answers the state at t, not
 * the state itself, which may have been integrated ahead (to the next
 * event or integration stop). Integrates a copy; the run's own state and
 * trajectory do not change. */
kr_status_t kr__continuous_show(kr_sim_t *s, kr_time_t t);
void kr__continuous_unshow(kr_sim_t *s);
/* The spacing of its integration stops, from the model's structure (part
 * of kr__continuous_start; alone for a simulator restored from a checkpoint). */
void kr__continuous_space_stops(kr_sim_t *s);
void kr__continuous_save(kr_sim_t *s, kr_buf_t *b);
/* `cut` and `saved_end`: the checkpoint's, which this run's end time may
 * differ from. */
kr_status_t kr__continuous_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut, kr_time_t saved_end);

/* emulation.c */
kr_status_t kr__emulation_create(kr_sim_t *s, const kr_emulation_desc_t *d);
void kr__emulation_fini(kr_sim_t *s);
/* Checks the log (a new one is opened, not yet emptied; a kept one's
 * start is checked against the checkpoint) and the files the link names,
 * changing nothing: in kairos run's setup, so that a path that cannot
 * serve is the model file's fault (exit 2), found before anything runs.
 * kr__emulation_begin does it for a program that did not. */
kr_status_t kr__emulation_prepare(kr_sim_t *s);
/* Opens the link (after kr__emulation_prepare), waiting for a peer as
 * asked: for every emulation of the process before any begins, so that a
 * run that finds no peer, or cannot listen, empties no log. */
kr_status_t kr__emulation_open(kr_sim_t *s);
/* Starts the log (a new one emptied, a kept one cut back to the
 * checkpoint) and the clock. */
kr_status_t kr__emulation_begin(kr_sim_t *s);
/* Writes the log's end record: the run reached its end. */
void kr__emulation_end(kr_sim_t *s);
/* Reads pending input (or the replay log) into events. */
void kr__emulation_poll(kr_sim_t *s);
/* True once after the simulator's guarantees may have grown without an
 * event of its own: its clock moved on, or its input ended. */
bool kr__emulation_take_news(kr_sim_t *s);
/* True if an event at t may run now by the clock. */
bool kr__emulation_ready(kr_sim_t *s, kr_time_t t);
kr_time_t kr__emulation_next(kr_sim_t *s, kr_time_t head);
/* Gives every local emulation simulator the model's identity digest
 * (runtime/model_digest.c), which heads the logs it writes; a replay of a
 * log headed by another identity than it or `also` (the identity with the
 * dependencies in the file's order, which logs before that was canonical
 * have) fails with KR_ERR_MISMATCH. */
kr_status_t kr__model_identify(kr_model_t *m, uint64_t identity, uint64_t also);
/* The run fails as interrupted by the signal caught (SIGINT or SIGTERM),
 * at the earliest time of this process's simulators: between steps (the
 * coordinator), or inside one that would take too long to wait for (an
 * integration, ode_engine.c). */
void kr__model_fail_interrupted(kr_model_t *m);
/* Whether s replays a log whose next line is due after more events than
 * s has run: its line in the file and that count. */
bool kr__emulation_replay_waiting(const kr_sim_t *s, unsigned *line, uint64_t *after);
/* Replay lines the run never reached (0 when not replaying), and the
 * time of the first of them. */
size_t kr__emulation_leftover(const kr_sim_t *s, kr_time_t *first);
/* True, once, when s replays a log without the end record of the run that
 * wrote it (a run interrupted or failed: its input stops short). */
bool kr__emulation_replay_unended(kr_sim_t *s);
/* Bytes of one element of a field or slot, 0 for an unknown type (state.c). */
size_t kr__field_bytes(kr_field_type_t t);
/* True if the simulator still waits on its clock or input before the end. */
bool kr__emulation_waiting(kr_sim_t *s);
/* Blocks until the earliest of the emulation simulators can move. */
void kr__emulation_wait(kr_model_t *m);
void kr__emulation_run_input(kr_sim_t *s, kr__event_rec_t *r);
/* A sync-event reaching an emulation with on_arrival: handed to it (true),
 * instead of the type's on_target_side. */
bool kr__emulation_arrival(kr_sim_t *s, kr_event_type_t type, uint32_t from, const void *data);
void kr__emulation_save(kr_sim_t *s, kr_buf_t *b);
/* Puts back how far a replay got, and starts the clock at `cut`. */
kr_status_t kr__emulation_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut);

#endif
