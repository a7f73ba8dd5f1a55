/* A shuffle of entity ids for the tests of the batched calls (the same
 * entities in another order than their creation's), from a seed: the
 * same order on every run. */
#ifndef KAIROS_TESTS_SHUFFLE_H
#define KAIROS_TESTS_SHUFFLE_H

#include <stdint.h>
#include "kairos/entity.h"

/* Fisher-Yates over ids[0..n), drawing from a linear congruential
 * generator that *state carries from call to call. */
static inline void shuffle_entities(kr_entity_t *ids, int n, uint64_t *state)
{
    for (int i = n - 1; i > 0; i--) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((*state >> 33) % (uint64_t)(i + 1));
        kr_entity_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

#endif
