/* Failing a run from a layer above the schedulers with a message of the
 * caller's own making (regions/ reports "region 'NAME', step S: ..."), where
 * the public kr_sim_fail (kairos/sim.h) would prefix the simulator and the
 * time. Not public API; model.c defines it, and model_private.h includes
 * this header for schedulers/ itself. */
#ifndef KAIROS_SCHEDULERS_MODEL_FAIL_H
#define KAIROS_SCHEDULERS_MODEL_FAIL_H

#include "kairos/model.h"
#include "kairos/status.h"

/* Stops the run after the current event with this error (first one wins;
 * KR_OK counts as KR_ERR_STATE). */
void kr__model_fail(kr_model_t *m, kr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
