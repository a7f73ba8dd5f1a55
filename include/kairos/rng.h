/* Keyed random streams.
 *
 * A stream is keyed by (seed, domain, id, extra) and draws from the
 * counter-based generator Philox-4x64-10 (Random123): block i of a stream is
 * philox4x64(counter = {i, domain, extra, 0}, key = {seed, id}), four 64-bit
 * words used low 32 bits first. Nothing depends on the machine, the rank or
 * the order in which streams are made, so a key always gives the same
 * numbers. For a fixed key Philox is a bijection of the counter, so streams
 * that share (seed, id) but differ in domain or extra never overlap.
 *
 *  - KR_RNG_SIMULATOR: one stream per simulator, id = simulator id (extra 0
 *    unless the simulator wants several streams).
 *  - KR_RNG_AGENT: any 64-bit id (an agent), and extra for a third word such
 *    as a step number, so that (seed, agent, step) gives the same numbers
 *    however a world is cut into regions.
 *
 * kr_rng_gsl() exposes a stream as a gsl_rng of type "kairos-philox", so
 * every gsl_ran_* distribution draws from it: get() gives full 32-bit values
 * (min 0, max 0xffffffff), get_double() a uniform in [0, 1) with 53 random
 * bits (one 64-bit word). gsl_rng_set(g, s) rewinds the stream re-keyed with
 * seed s, keeping domain, id and extra. gsl_rng_clone() of it gives an
 * independent copy at the same position (free it with gsl_rng_free). */
#ifndef KAIROS_RNG_H
#define KAIROS_RNG_H

#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "kairos/export.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef enum kr_rng_domain {
    KR_RNG_SIMULATOR = 1,
    KR_RNG_AGENT = 2
} kr_rng_domain_t;

typedef struct kr_rng kr_rng_t;

/* Words of a saved stream state. */
#define KR_RNG_STATE_WORDS 8

/* A stream's position as plain data: write it to a checkpoint or send it;
 * kr_rng_restore checks it (format tag, domain, position, check word). */
typedef struct kr_rng_state {
    uint64_t words[KR_RNG_STATE_WORDS];
} kr_rng_state_t;

/* A new stream at its start. NULL (KR_ERR_INVALID_ARG) for an unknown
 * domain, or KR_ERR_NOMEM. The caller owns it: kr_rng_destroy. */
KR_API kr_rng_t *kr_rng_create(uint64_t seed, kr_rng_domain_t domain, uint64_t id, uint64_t extra);
/* Frees a stream (NULL allowed), and with it its gsl_rng view. */
KR_API void kr_rng_destroy(kr_rng_t *rng);
/* Re-keys a stream in place and rewinds it: afterwards it draws exactly what
 * kr_rng_create with the same key would. Allocates nothing. Fails
 * (KR_ERR_INVALID_ARG, stream unchanged) for an unknown domain. */
KR_API kr_status_t kr_rng_reset(kr_rng_t *rng, uint64_t seed, kr_rng_domain_t domain, uint64_t id,
                                uint64_t extra);

/* The stream as a gsl_rng, owned by the stream and valid until it is
 * destroyed. Draws through it and through kr_rng_* share one position. */
KR_API gsl_rng *kr_rng_gsl(kr_rng_t *rng);

/* Next 64 random bits (two 32-bit draws: low half first). */
KR_API uint64_t kr_rng_u64(kr_rng_t *rng);
/* Uniform in [0, 1): the top 53 bits of kr_rng_u64, times 2^-53. Neither
 * checks rng (they run several times an event): it must be a stream. */
KR_API double kr_rng_uniform(kr_rng_t *rng);

/* Writes the stream's key and position to *state. */
KR_API void kr_rng_save(const kr_rng_t *rng, kr_rng_state_t *state);
/* Puts the stream where *state says: it then draws what the saved stream
 * would have drawn next. Fails (KR_ERR_CORRUPT, stream unchanged) for a
 * state that kr_rng_save did not write: wrong format tag or check word,
 * unknown domain, position out of range. */
KR_API kr_status_t kr_rng_restore(kr_rng_t *rng, const kr_rng_state_t *state);

KR_END_DECLS

#endif
