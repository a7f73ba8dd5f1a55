/* TEMPORARY placeholder until the rng branch lands. */
#ifndef KAIROS_RNG_H
#define KAIROS_RNG_H
#include <stdint.h>
typedef struct kr_rng kr_rng_t;
typedef enum kr_rng_domain { KR_RNG_SIMULATOR = 1, KR_RNG_AGENT = 2 } kr_rng_domain_t;
kr_rng_t *kr_rng_create(uint64_t seed, kr_rng_domain_t domain, uint64_t id, uint64_t extra);
void kr_rng_destroy(kr_rng_t *r);
double kr_rng_uniform(kr_rng_t *r);
uint64_t kr_rng_u64(kr_rng_t *r);
#endif
