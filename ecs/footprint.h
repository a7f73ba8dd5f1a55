/* What a world holds in memory, for `kairos validate`'s estimate of each
 * rank's memory (runtime/memory_estimate.c). Not public API. */
#ifndef KAIROS_ECS_FOOTPRINT_H
#define KAIROS_ECS_FOOTPRINT_H

#include <stddef.h>
#include "kairos/world.h"

typedef struct kr__world_footprint {
    size_t entities;        /* live entities */
    size_t component_bytes; /* component storage (table columns, sparse pools) as allocated */
    size_t bytes;           /* all the world's own arrays, component_bytes included */
} kr__world_footprint_t;

/* Counts what w has allocated: capacities, not counts, since that is what
 * the process holds. Leaves out what the world cannot see: memory that
 * behaviors or components point to, and a registry the world shares. */
kr__world_footprint_t kr__world_footprint(const kr_world_t *w);

#endif
