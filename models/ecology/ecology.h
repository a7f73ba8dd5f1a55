/* The "ecology" model kind: plants and herbivore swarms on a grid that may
 * be cut into regions (docs/ecology.md). */
#ifndef KAIROS_MODELS_ECOLOGY_H
#define KAIROS_MODELS_ECOLOGY_H

#include <stdint.h>
#include "kairos/kind.h"

/* The agents' components (also read by the tests). */
#define KR__ECOLOGY_PLANT "ecology.plant"
#define KR__ECOLOGY_SWARM "ecology.swarm"

typedef struct kr__ecology_plant {
    double energy;
    int64_t born;           /* step of birth (0: initial) */
    int64_t last_seed;      /* step of the last seed sown */
    int64_t attacked;       /* last step it was fed on; -1: never */
} kr__ecology_plant_t;

typedef struct kr__ecology_swarm {
    double energy;
    int64_t population;
    int32_t last_dx, last_dy;  /* last move, for inertia */
    int32_t repelled;          /* steps of random walk left */
    int32_t pad;
} kr__ecology_swarm_t;

/* The field layers of a region, as of the end of the previous step:
 * plant energy and plant count per cell (from the agents at the start of
 * the step that wrote them), the flow field and the signal. */
enum { KR__ECOLOGY_ENERGY, KR__ECOLOGY_FLOW, KR__ECOLOGY_SIGNAL, KR__ECOLOGY_PLANTS, KR__ECOLOGY_FIELDS };

extern const kr_kind_desc_t kr__ecology_kind;

#endif
