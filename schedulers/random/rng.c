/* Keyed Philox streams, and their face as a GSL generator. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <Random123/philox.h>

#include "kairos/rng.h"
#include "base/error.h"

/* The GSL state. ctr[0] is the index of the next block to generate; buf
 * holds the last block, of which `used` 32-bit halves (0..8) are spent. */
typedef struct rng_state {
    uint64_t key[2];   /* seed, id */
    uint64_t ctr[4];   /* next block, domain, extra, 0 */
    uint64_t buf[4];
    uint32_t used;
} rng_state_t;

struct kr_rng {
    gsl_rng gsl;       /* type and a pointer to state, for gsl_ran_* */
    rng_state_t state;
};

#define HALVES 8u
/* "KRPHX" and format version 1. */
#define STATE_TAG UINT64_C(0x4b52504858000001)

static void refill(rng_state_t *s)
{
    philox4x64_ctr_t c = {{s->ctr[0], s->ctr[1], s->ctr[2], s->ctr[3]}};
    philox4x64_key_t k = {{s->key[0], s->key[1]}};
    philox4x64_ctr_t r = philox4x64(c, k);
    memcpy(s->buf, r.v, sizeof s->buf);
    s->ctr[0]++;
    s->used = 0;
}

static inline uint32_t next32(rng_state_t *s)
{
    if (s->used == HALVES) refill(s);
    uint64_t w = s->buf[s->used >> 1];
    uint32_t v = (s->used & 1) ? (uint32_t)(w >> 32) : (uint32_t)w;
    s->used++;
    return v;
}

static inline uint64_t next64(rng_state_t *s)
{
    if (s->used == HALVES) refill(s);
    if (!(s->used & 1)) { /* aligned: one whole word */
        uint64_t w = s->buf[s->used >> 1];
        s->used += 2;
        return w;
    }
    uint64_t lo = next32(s);
    return lo | (uint64_t)next32(s) << 32;
}

static inline double to_unit(uint64_t w) { return (double)(w >> 11) * 0x1p-53; }

static void gsl_set(void *state, unsigned long seed)
{
    rng_state_t *s = state;
    s->key[0] = seed;
    s->ctr[0] = 0;
    s->used = HALVES;
}

static unsigned long gsl_get(void *state) { return next32(state); }
static double gsl_get_double(void *state) { return to_unit(next64(state)); }

/* Read-only: the one instance of the type every stream points at. */
static const gsl_rng_type kairos_philox = {
    .name = "kairos-philox",
    .max = 0xffffffffUL,
    .min = 0,
    .size = sizeof(rng_state_t),
    .set = gsl_set,
    .get = gsl_get,
    .get_double = gsl_get_double,
};

static bool domain_ok(kr_rng_domain_t d) { return d == KR_RNG_SIMULATOR || d == KR_RNG_AGENT; }

/* The buffer is left as it is: `used` = HALVES marks it spent. */
static void key(rng_state_t *s, uint64_t seed, kr_rng_domain_t domain, uint64_t id, uint64_t extra)
{
    s->key[0] = seed;
    s->key[1] = id;
    s->ctr[0] = 0;
    s->ctr[1] = (uint64_t)domain;
    s->ctr[2] = extra;
    s->ctr[3] = 0;
    s->used = HALVES;
}

kr_rng_t *kr_rng_create(uint64_t seed, kr_rng_domain_t domain, uint64_t id, uint64_t extra)
{
    if (!domain_ok(domain)) {
        kr__fail(KR_ERR_INVALID_ARG, "rng: unknown domain %d", (int)domain);
        return NULL;
    }
    kr_rng_t *r = calloc(1, sizeof *r);
    if (!r) {
        kr__fail(KR_ERR_NOMEM, "rng: out of memory");
        return NULL;
    }
    r->gsl.type = &kairos_philox;
    r->gsl.state = &r->state;
    key(&r->state, seed, domain, id, extra);
    return r;
}

void kr_rng_destroy(kr_rng_t *rng) { free(rng); }

kr_status_t kr_rng_reset(kr_rng_t *rng, uint64_t seed, kr_rng_domain_t domain, uint64_t id,
                         uint64_t extra)
{
    if (!rng) return kr__fail(KR_ERR_INVALID_ARG, "rng: null stream");
    if (!domain_ok(domain)) return kr__fail(KR_ERR_INVALID_ARG, "rng: unknown domain %d", (int)domain);
    key(&rng->state, seed, domain, id, extra);
    return KR_OK;
}

gsl_rng *kr_rng_gsl(kr_rng_t *rng) { return &rng->gsl; }

/* (rng is not checked here: these run several times an event, and a
 * check costs 0.7 % of PHOLD's instructions; kairos/rng.h) */
uint64_t kr_rng_u64(kr_rng_t *rng) { return next64(&rng->state); }

double kr_rng_uniform(kr_rng_t *rng) { return to_unit(next64(&rng->state)); }

/* splitmix64's finalizer: any flipped bit of a saved state changes the
 * check word. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t check_word(const uint64_t *w)
{
    uint64_t h = 0;
    for (int i = 0; i < KR_RNG_STATE_WORDS - 1; i++) h = mix(h ^ w[i]);
    return h;
}

/* Layout: tag, seed, domain, id, extra, next block, halves used, check. */
void kr_rng_save(const kr_rng_t *rng, kr_rng_state_t *state)
{
    const rng_state_t *s = &rng->state;
    uint64_t *w = state->words;
    w[0] = STATE_TAG;
    w[1] = s->key[0];
    w[2] = s->ctr[1];
    w[3] = s->key[1];
    w[4] = s->ctr[2];
    w[5] = s->ctr[0];
    w[6] = s->used;
    w[7] = check_word(w);
}

kr_status_t kr_rng_restore(kr_rng_t *rng, const kr_rng_state_t *state)
{
    if (!rng || !state) return kr__fail(KR_ERR_INVALID_ARG, "rng: null stream or state");
    const uint64_t *w = state->words;
    if (w[0] != STATE_TAG)
        return kr__fail(KR_ERR_CORRUPT, "rng: saved state has an unknown format tag 0x%llx",
                        (unsigned long long)w[0]);
    if (w[7] != check_word(w))
        return kr__fail(KR_ERR_CORRUPT, "rng: saved state fails its check word");
    if (w[2] != KR_RNG_SIMULATOR && w[2] != KR_RNG_AGENT)
        return kr__fail(KR_ERR_CORRUPT, "rng: saved state has unknown domain %llu",
                        (unsigned long long)w[2]);
    if (w[6] > HALVES)
        return kr__fail(KR_ERR_CORRUPT, "rng: saved state has %llu of %u halves used",
                        (unsigned long long)w[6], HALVES);
    if (w[6] < HALVES && w[5] == 0)
        return kr__fail(KR_ERR_CORRUPT, "rng: saved state is inside a block it never made");

    rng_state_t s;
    key(&s, w[1], (kr_rng_domain_t)w[2], w[3], w[4]);
    if (w[6] < HALVES) { /* regenerate the current block rather than store it */
        s.ctr[0] = w[5] - 1;
        refill(&s);
        s.used = (uint32_t)w[6];
    } else {
        s.ctr[0] = w[5];
    }
    rng->state = s;
    return KR_OK;
}
