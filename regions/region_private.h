/* A region simulator's state, shared by the files of regions/ (not public
 * API): struct kr_region (kairos/region.h declares the handle), its
 * neighbours and ghosts, the entities and message of the exchange, and the
 * few functions that one file calls in another. Everything else in regions/
 * is static to its file:
 *
 *   geometry.c   the cut: own and stored rectangles, owners, neighbours
 *   region.c     a region: registering its types, creating it, accessors
 *   agents.c     agents: creating, finding and moving them; their streams
 *   scatter.c    births spread over the regions of a cut
 *   halo.c       field layers and the ghosts of the halo
 *   exchange.c   each step's message to each neighbour: migrants, strips
 *   step.c       the step: every agent acts, then the exchange goes out
 *   digest.c     the state digest of a region's agents
 *   checkpoint.c its run-time state for checkpoints (kr_region_serialize)
 *
 * docs/regions.md describes what they do. */
#ifndef KAIROS_REGIONS_REGION_PRIVATE_H
#define KAIROS_REGIONS_REGION_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* The public headers of regions/ and the layers below (not kairos.h,
 * which reaches up to the runtime's kinds). */
#include "kairos/behavior.h"
#include "kairos/buffer.h"
#include "kairos/component.h"
#include "kairos/entity.h"
#include "kairos/event.h"
#include "kairos/log.h"
#include "kairos/model.h"
#include "kairos/pack.h"
#include "kairos/region.h"
#include "kairos/registry.h"
#include "kairos/rng.h"
#include "kairos/serializer.h"
#include "kairos/sim.h"
#include "kairos/spatial.h"
#include "kairos/status.h"
#include "kairos/sync.h"
#include "kairos/time.h"
#include "kairos/view.h"
#include "kairos/world.h"
#include "regions/departure.h"

/* The sync-event type of the exchanges between neighbouring regions: a
 * region receives it whatever its kind declares (runtime/kind_build.c). */
#define KR__REGION_EXCHANGE "kr.region.exchange"

/* An agent of a cell being scanned, or a migrant listed by a move. */
typedef struct kr__region_snap {
    uint64_t id;
    kr_entity_t e;
    int32_t x, y;            /* its cell (a cell's gathered agents only) */
} kr__region_snap_t;

typedef struct kr__region_neighbour {
    uint32_t region, sim;
    kr_rect_t send;          /* my own cells in its halo */
    kr_rect_t receive;       /* its own cells in my halo */
    kr_rect_t stored;        /* its own cells and halo */
    kr__region_snap_t *out;  /* migrants this step (may hold stale or returned ones) */
    size_t out_count, out_cap;
    bool arrived;            /* its strip for this step is in */
    size_t migrants;         /* leaving for it this step */
} kr__region_neighbour_t;

typedef struct kr__region_ghost_rec {
    uint64_t id;
    int32_t x, y;
    size_t offset;           /* of its bytes in ghost_bytes */
} kr__region_ghost_rec_t;

struct kr_region {
    kr_sim_t *sim;
    kr_world_t *world;
    kr__region_departure_fn on_departure; /* departure.h; NULL: none */
    void *departure_arg;
    kr_region_desc_t desc;
    kr_region_grid_t grid;
    uint32_t index;
    kr_rect_t own, stored;
    uint32_t stride;
    kr_time_t time_step, end_time;
    uint64_t seed, step;
    kr_component_t agent, strip, driver;
    kr_event_type_t exchange;
    kr__region_neighbour_t nb[8];
    size_t nb_count;
    double *cur, *next;      /* fields x stored cells each */
    kr_rng_t *rng;
    kr__region_snap_t *snap; /* the agents of the cell being scanned */
    size_t snap_cap;
    kr__region_ghost_rec_t *ghost_recs;
    size_t ghost_count, ghost_cap;
    kr_buf_t ghost_bytes;
    kr_region_ghost_t *ghosts; /* the public view of ghost_recs, sorted */
    bool ghosts_ready;
    bool saved;                 /* kr_region_serialize saved it since the last kr__region_take_saved */
    kr_buf_t scratch;
    /* This step's emigrants as ghosts: they are in cells of other regions
     * at the end of the step, where nobody else can report them yet. */
    kr__region_ghost_rec_t *emigrants;
    size_t emigrant_count, emigrant_cap;
    kr_buf_t emigrant_bytes;
    uint64_t updates, migrants_sent, migrant_bytes;
    /* The agent acting now and its cell: its cell is known from the
     * scan, which spares act a look into the spatial hash. */
    kr_entity_t acting;
    int32_t acting_x, acting_y;
    bool moved_other;        /* an act moved an agent other than itself */
    /* ids of the migrants that arrived for the next step: checked for
     * duplicates before it (two regions cannot both send one agent) */
    uint64_t *arrived;
    size_t arrived_count, arrived_cap;
    /* kr_region_scatter: the births of every region of the cut in this
     * process, placed once by the first region that asked, by region
     * (start[i] .. start[i + 1]); freed when the last local region has
     * taken its share. Held by a region of the cut whose slot was free,
     * so several populations may be under way at once. */
    struct kr__region_scatter {
        uint64_t first, count;
        bool (*place)(uint64_t id, int32_t *x, int32_t *y, void *arg);
        kr_region_birth_t *births;
        size_t *start;
        uint32_t waiting;    /* local regions that have not taken theirs */
    } scatter;
};

/* The state of a strip entity (behavior kr.region.strip): the strip's
 * bytes, which its serialize callback writes into the exchange's pack. */
typedef struct kr__region_strip {
    uint8_t *data;
    uint64_t len;
} kr__region_strip_t;

/* The state of the step driver (behavior kr.region.driver). */
typedef struct kr__region_driver {
    kr_region_t *region;
} kr__region_driver_t;

/* The data of an exchange sync-event (kr.region.exchange). */
typedef struct kr__region_exchange_msg {
    uint32_t from;           /* region index of the sender */
    uint32_t migrants;
    uint64_t step;           /* the sender's step */
} kr__region_exchange_msg_t;

/* geometry.c */
/* The cells of both a and b: an empty rectangle (x1 == x0 or y1 == y0) if
 * none. */
kr_rect_t kr__region_rect_meet(kr_rect_t a, kr_rect_t b);

/* agents.c */
/* Agent e's cell from the spatial index; false if e has no position. The
 * step's scan calls it for agents gathered with one whose act moved
 * another. Out of line on purpose: inlined, it would cost
 * kr_region_agent_cell a stack frame on its fast path (the acting agent). */
bool kr__region_cell_lookup(const kr_region_t *r, kr_entity_t e, int32_t *x, int32_t *y);

/* halo.c */
/* Adds a ghost for the next step to this region's halo. */
kr_status_t kr__region_ghost_add(kr_region_t *r, uint64_t id, int32_t x, int32_t y, const void *bytes);

/* exchange.c */
/* Sends this step's exchange to every neighbour (at time 0: the initial
 * halos). */
kr_status_t kr__region_exchange_send(kr_region_t *r);
/* The target side of an exchange (event type kr.region.exchange). */
void kr__region_exchange_arrive(kr_sim_t *sim, void *data);
/* The strip behavior's callbacks. */
void kr__region_strip_destroy(kr_world_t *w, kr_entity_t self, void *state);
kr_status_t kr__region_strip_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser);

/* step.c */
/* Time 0 of a region (event type kr.region.start). */
void kr__region_start(kr_sim_t *sim, void *data);
/* The step driver's callbacks: on_update runs the step. */
void kr__region_driver_update(kr_world_t *w, kr_entity_t self, void *state);
kr_status_t kr__region_driver_serialize(kr_world_t *w, kr_entity_t self, void *state, kr_serializer_t *ser);

#endif
