/* What a restart from a checkpoint asks of the regions (runtime/checkpoint.c).
 * Not public API. */
#ifndef KAIROS_REGIONS_RESTART_H
#define KAIROS_REGIONS_RESTART_H

#include "kairos/region.h"

/* A region's last step before the end time sends no exchange (its migrants
 * stay: regions/step.c), so whether the step before the cut sent one
 * depends on the end. Refuses (KR_ERR_INVALID_ARG) a restart whose end
 * time would have decided it otherwise, for sim if it is a region's
 * simulator: the checkpoint cut at `cut` of a run that ended at
 * `saved_end`. */
kr_status_t kr__region_check_end_change(kr_sim_t *sim, kr_time_t cut, kr_time_t saved_end);

/* Whether kr_region_serialize saved r since the last call (which clears
 * it): a kind's serialize that leaves its region out would checkpoint a
 * run that restarts to other results. */
bool kr__region_take_saved(kr_region_t *r);

#endif
