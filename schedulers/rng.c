/* TEMPORARY placeholder until the rng branch lands. */
#include <stdlib.h>
#include "kairos/rng.h"
#include "../ecs/hmap.h"
struct kr_rng { uint64_t s; };
kr_rng_t *kr_rng_create(uint64_t seed, kr_rng_domain_t d, uint64_t id, uint64_t extra)
{ kr_rng_t *r = malloc(sizeof *r); if (r) r->s = kr_mix64(seed ^ kr_mix64(id + d) ^ extra); return r; }
void kr_rng_destroy(kr_rng_t *r) { free(r); }
uint64_t kr_rng_u64(kr_rng_t *r) { r->s += 0x9e3779b97f4a7c15ULL; return kr_mix64(r->s); }
double kr_rng_uniform(kr_rng_t *r) { return (double)(kr_rng_u64(r) >> 11) * 0x1.0p-53; }
