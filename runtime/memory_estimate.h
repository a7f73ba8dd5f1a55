/* `kairos validate --ranks N`'s estimate of each rank's memory (issue 19):
 * measured on the model as setup left it, not guessed from its params.
 * Not public API. docs/cli.md, "kairos validate", says what it counts. */
#ifndef KAIROS_RUNTIME_MEMORY_ESTIMATE_H
#define KAIROS_RUNTIME_MEMORY_ESTIMATE_H

#include <stddef.h>
#include <stdio.h>
#include "runtime/model_file.h"

typedef struct kr__rank_memory {
    size_t sims;
    size_t entities, component_bytes, entity_bytes;   /* the worlds (entity_bytes: all a world holds) */
    size_t events, event_bytes;                      /* pending events: records, queues, payloads */
    size_t cut_regions;                              /* regions with neighbours, hence a halo */
    size_t ghosts, halo_bytes;                       /* their halos, from geometry (an estimate) */
    size_t other_bytes;                              /* simulators and regions themselves, field layers */
    size_t total;
} kr__rank_memory_t;

/* Fills per_rank[0 .. ranks) from m, a model built with every simulator in
 * this process (kr__model_file_build) and started, simulator i counted on
 * rank_of[i]. Reads only. */
void kr__memory_estimate(const kr__model_file_t *f, kr_model_t *m, int ranks, const int *rank_of,
                         kr__rank_memory_t *per_rank);

/* validate's section: a heading, one line per rank, the total and where
 * a run reports the measured peak. */
void kr__memory_estimate_print(FILE *out, const kr__rank_memory_t *per_rank, int ranks);

#endif
