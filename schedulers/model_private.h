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
#include "../ecs/hmap.h"
#include "event_queue.h"
#include "transport.h"

/* What a queued event record does when it runs. */
typedef enum kr_event_kind {
    KR_EV_LOCAL,     /* type's on_event */
    KR_EV_STEP,      /* agent-based step: on_update, on_late_update, next step */
    KR_EV_OBSERVE,   /* continuous observation point (also the end) */
    KR_EV_SENDER,    /* sync-event sender side: on_sender_side, then the payload leaves */
    KR_EV_TARGET,    /* sync-event target side (awaiting_payload while a placeholder) */
    KR_EV_INPUT,     /* emulation input line */
    KR_EV_STATE      /* continuous state event (threshold crossing) */
} kr_event_kind_t;

enum { KR_REC_FREE, KR_REC_PENDING };

#define KR_INLINE_DATA 32

/* One pending event. Queue entries point at records by slot; a record's
 * version changes whenever an entry for it goes stale (delay, cancel, free),
 * so stale entries are skipped when they surface. */
typedef struct kr_event_rec {
    kr_event_key_t key;
    kr_event_type_t type;
    uint8_t kind;
    uint8_t state;
    bool awaiting_payload;      /* target-side placeholder: payload not here yet */
    uint32_t version;
    uint32_t next_free;
    uint32_t data_size;
    bool data_inline;           /* payload in inline_data, else in data */
    void *data;                 /* heap payload when not inline */
    uint8_t inline_data[KR_INLINE_DATA];
    kr_buf_t pack;              /* target side: entities to unpack */
    kr_entity_t *roots;         /* sender side: entities to pack after it ran */
    size_t root_count;
    char *text;                 /* input: "event\0data" */
} kr_event_rec_t;

/* A sync-event this simulator sent that it may still cancel or delay: the
 * sender's own record of it, whatever edge or transport carried it. */
typedef struct kr_outgoing {
    uint64_t sequence;
    kr_time_t time;             /* current time, after delays */
    kr_time_t promise;          /* of its edge */
    uint32_t target;
    bool live;
    bool carries_entities;
} kr_outgoing_t;

typedef struct kr_continuous kr_continuous_t; /* continuous.c */
typedef struct kr_emulation kr_emulation_t;   /* emulation.c */

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

    kr_equeue_t queue;
    kr_event_rec_t *recs;
    uint32_t rec_count, rec_cap, free_head;
    uint32_t stale_entries;     /* queue entries known to be stale */
    kr_hmap_t by_source;        /* (source, sequence) -> slot, for cancel, delay, payloads */

    uint64_t sequence;          /* advanced by every schedule */
    kr_time_t now;
    uint64_t executed;
    uint64_t digest;
    uint64_t sync_sent, sync_received, null_sent;
    uint64_t blocked_ns, blocked_since;  /* blocked_since 0: not blocked */
    bool executing;
    kr_event_key_t current;
    uint32_t current_slot;

    uint32_t *out_edges, out_count;  /* indices into model->edges */
    uint32_t *in_edges, in_count;

    kr_outgoing_t *outgoing;    /* sync-events sent, for cancel and delay */
    uint32_t outgoing_count, outgoing_cap, outgoing_live;
    kr_hmap_t outgoing_index;   /* sequence -> index */

    kr_entity_t *moved;         /* entities of the executing target side */
    size_t moved_count, moved_cap;

    void **contexts;            /* by context type id */
    kr_continuous_t *cont;
    kr_emulation_t *emu;
};

/* A pending guarantee: applies once `count` data messages have arrived. */
typedef struct kr_pending_guarantee { uint64_t count; kr_time_t time; } kr_pending_guarantee_t;

typedef struct kr_edge {
    uint32_t from, to;
    kr_time_t promise;
    bool internal;              /* both ends in one zero-promise group */
    /* sender half */
    uint64_t sent;              /* data messages sent so far */
    kr_time_t guarantee_sent;   /* last guarantee sent */
    /* receiver half */
    uint64_t received;          /* data messages applied, in edge order */
    kr_time_t guarantee;        /* applied: no sync-event from `from` before it */
    kr_pending_guarantee_t *pending; size_t pending_count, pending_cap;
    kr_buf_t *early;            /* data messages that arrived ahead of their turn */
    uint64_t *early_seq; size_t early_count, early_cap;
} kr_edge_t;

typedef struct kr_group {
    uint32_t *members, count;   /* sim ids, ascending */
    uint32_t *in_edges, in_count; /* edges from outside into the group */
    kr_time_t bound;            /* min guarantee over in_edges */
    bool done;
    bool local;                 /* its members run in this process */
} kr_group_t;

typedef struct kr_event_type_rec {
    char *name;
    kr_event_type_desc_t desc;
} kr_event_type_rec_t;

typedef struct kr_context_rec {
    char *name;
    kr_context_desc_t desc;
} kr_context_rec_t;

struct kr_model {
    int rank;                   /* this process's rank */
    kr_sync_algorithm_t sync;
    bool window_open;           /* window: this round's bounds are set */
    uint64_t rounds;            /* window rounds so far */
    uint64_t msgs_sent, msgs_delivered; /* data messages, for the window's quiescence */
    uint64_t window_last[3];    /* messages sent, events run, next times at the last round */
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
    kr_hmap_t sim_names;        /* name hash -> id */
    kr_edge_t *edges;
    uint32_t edge_count, edge_cap;
    kr_event_type_rec_t *types; /* id 1 at index 0 */
    uint32_t type_count;
    kr_context_rec_t *contexts; /* id 1 at index 0 */
    uint32_t context_count;

    kr_group_t *groups;
    uint32_t group_count;
    bool started, running, finished;

    kr_transport_t *transport;  /* NULL until run: the in-process one */
    bool owns_transport;
    kr_buf_t msg;               /* scratch for encoding one message */
    kr_status_t failure;        /* first error inside a handler stops the run */
    char failure_msg[512];
};

/* model.c */
kr_event_type_rec_t *kr__event_type(const kr_model_t *m, kr_event_type_t t);
kr_edge_t *kr__edge(kr_model_t *m, uint32_t from, uint32_t to);
/* Stops the run after the current event with this error (first one wins). */
void kr__model_fail(kr_model_t *m, kr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
kr_time_t kr__time_add(kr_time_t a, kr_time_t b); /* saturating at KR_TIME_NEVER */

/* sim.c */
kr_status_t kr__sim_init(kr_sim_t *s);
void kr__sim_fini(kr_sim_t *s);
/* A fresh record (state pending, no data); returns its slot or UINT32_MAX. */
uint32_t kr__rec_alloc(kr_sim_t *s);
void kr__rec_free(kr_sim_t *s, uint32_t slot);
kr_status_t kr__rec_set_data(kr_event_rec_t *r, const void *data, size_t size);
static inline void *kr__rec_data(kr_event_rec_t *r) { return r->data_inline ? r->inline_data : r->data; }
/* Pushes the record's queue entry and indexes it by (source, sequence). */
kr_status_t kr__rec_enqueue(kr_sim_t *s, uint32_t slot);
uint32_t kr__rec_find(const kr_sim_t *s, uint32_t source, uint64_t sequence);
/* The lowest pending record, stale queue entries dropped; NULL if none. */
kr_event_rec_t *kr__sim_head(kr_sim_t *s);
/* Runs the head record (precondition: kr__sim_head is runnable). Returns
 * false if instead of running it the simulator had to do something first
 * (a continuous state event was found before it). */
bool kr__sim_run_head(kr_sim_t *s);
/* Time of the earliest thing the simulator may still do, for guarantees. */
kr_time_t kr__sim_next_time(kr_sim_t *s);
uint64_t kr__sim_next_sequence(kr_sim_t *s);
/* Schedules a record of `kind` in s at time t with the given priority. */
kr_status_t kr__sim_schedule_kind(kr_sim_t *s, kr_event_kind_t kind, kr_priority_t prio, kr_time_t t,
                                  kr_event_type_t type, const void *data, size_t size,
                                  kr_event_key_t *key);

/* sync.c */
/* Applies one message from the transport; a malformed one fails the run. */
kr_status_t kr__sync_deliver(kr_model_t *m, const void *bytes, size_t len);
/* The sender side ran in s: pack the entities and send the payload. */
void kr__sync_send_payload(kr_sim_t *s, kr_event_rec_t *r);
/* Unpacks a target side's entities into s->moved. */
kr_status_t kr__sync_unpack(kr_sim_t *s, kr_event_rec_t *r);
kr_status_t kr__sync_send_guarantee(kr_model_t *m, kr_edge_t *e, kr_time_t g);

/* coordinator.c */
kr_status_t kr__coord_run(kr_model_t *m);
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
/* While waiting for its inputs, integrates ahead to the last checkpoint
 * below `bound`, finding state events there; true if it moved. */
bool kr__continuous_lookahead(kr_sim_t *s, kr_time_t bound);
kr_status_t kr__continuous_start(kr_sim_t *s);

/* emulation.c */
kr_status_t kr__emulation_create(kr_sim_t *s, const kr_emulation_desc_t *d);
void kr__emulation_fini(kr_sim_t *s);
kr_status_t kr__emulation_begin(kr_sim_t *s);
/* Reads pending input (or the replay log) into events. */
void kr__emulation_poll(kr_sim_t *s);
/* True if an event at t may run now by the clock. */
bool kr__emulation_ready(kr_sim_t *s, kr_time_t t);
kr_time_t kr__emulation_next(kr_sim_t *s, kr_time_t head);
/* Replay lines the run never reached (0 when not replaying). */
size_t kr__emulation_leftover(const kr_sim_t *s);
/* True if the simulator still waits on its clock or input before the end. */
bool kr__emulation_waiting(kr_sim_t *s);
/* Blocks until the earliest of the emulation simulators can move. */
void kr__emulation_wait(kr_model_t *m);
void kr__emulation_run_input(kr_sim_t *s, kr_event_rec_t *r);

#endif
