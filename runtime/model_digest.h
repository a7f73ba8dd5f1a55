/* The two digests of a model built from a file, and the start-up check
 * that every rank holds the same model (docs/concepts.md, docs/stats.md).
 * Not public API.
 *
 * The identity covers what the model is: precision, seed, every simulator
 * (name, kind, formalism, time step), every dependency with its promise,
 * the params of every entry, the component registry and event types, and
 * the bytes of every plug-in file. Dependencies count by (from, to), not
 * by their place in the file. The run digest is the identity plus how
 * this run goes: end time, mapping and algorithm. Neither depends on the
 * number of ranks. */
#ifndef KAIROS_RUNTIME_MODEL_DIGEST_H
#define KAIROS_RUNTIME_MODEL_DIGEST_H

#include <mpi.h>
#include <stdint.h>
#include "runtime/model_file.h"

typedef struct kr__model_digest {
    uint64_t identity, run;
    /* The identity with the dependencies in the file's order, as the
     * checkpoints written before it took them by (from, to) have it:
     * a restart from one of those is still of this model. */
    uint64_t identity_file_order;
} kr__model_digest_t;

/* The digests of `m` as built on this rank from `f` (after every local
 * kind's setup). */
kr_status_t kr__model_digest(const kr__model_file_t *f, kr_model_t *m, kr__model_digest_t *out);

/* The digests, and on several ranks (ranks > 1, collective on comm) the
 * check that every rank has the same: on a mismatch every rank fails alike
 * with KR_ERR_MISMATCH, naming the first difference and both ranks'
 * values. */
kr_status_t kr__model_digest_check(const kr__model_file_t *f, kr_model_t *m, int ranks, MPI_Comm comm,
                                   kr__model_digest_t *out);

/* The hashes of the identity's items, in order (*hashes malloc'ed), so
 * that a later model can name where it differs (a checkpoint keeps them);
 * with `values`, also each item's value as a JSON array of strings (as
 * kr__model_describe_item gives it), so that it can say what it was. */
kr_status_t kr__model_identity_items(const kr__model_file_t *f, kr_model_t *m, uint64_t **hashes, size_t *count,
                                     json_t **values);
/* Item `index` of the model's walk as "what: value on this model". */
void kr__model_describe_item(const kr__model_file_t *f, kr_model_t *m, size_t index, char *out, size_t cap);

#endif
