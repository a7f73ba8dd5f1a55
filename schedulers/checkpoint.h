/* One simulator's part of a checkpoint (docs/checkpoint.md): what it saves
 * at a cut and how it is put back. Not public API.
 *
 * The part is logical: records of (key, type name, payload, entities),
 * its world as an image (ecs/image.h), its random stream, its declared
 * state and statistics, its formalism's state. Nothing in it depends on the
 * rank or the number of ranks, so it loads on any. */
#ifndef KAIROS_SCHEDULERS_CHECKPOINT_H
#define KAIROS_SCHEDULERS_CHECKPOINT_H

#include "kairos/buffer.h"
#include "kairos/sim.h"
#include "kairos/status.h"

/* Appends s's state to b. Precondition: s is local and the model stands at
 * a cut (kr__coord_run_until), no event under way. */
kr_status_t kr__sim_checkpoint_save(kr_sim_t *s, kr_buf_t *b);

/* Replaces the state s's setup made (its world, events, stream, state,
 * statistics, formalism state) by the one read from r, which a
 * kr__sim_checkpoint_save of the same model wrote, and marks s restored.
 * Before kr_model_start. `cut`: the checkpoint's time (an emulation's
 * clock goes on from it). `saved_end`: the end time of the run that saved
 * it (a continuous simulator's last update point moves to this run's
 * end). Anything that does not fit fails with KR_ERR_CORRUPT, naming the
 * simulator; s is then fit only to be destroyed. */
kr_status_t kr__sim_checkpoint_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut, kr_time_t saved_end);

#endif
