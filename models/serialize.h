/* What the built-in kinds' serialize callbacks (kr_kind_desc_t.serialize,
 * docs/checkpoint.md) share: the statistics a kind keeps in its own state
 * rather than by name (kr_sim_counter, kr_sim_tally, ...), field by field,
 * so that a checkpoint holds their exact running values. Each saves or
 * loads like the kr_ser_* calls (kairos/serializer.h) and returns their
 * sticky status. */
#ifndef KAIROS_MODELS_SERIALIZE_H
#define KAIROS_MODELS_SERIALIZE_H

#include "kairos/serializer.h"
#include "kairos/statistics.h"
#include "kairos/time.h"

kr_status_t kr__ser_time(kr_serializer_t *s, kr_time_t *t);
kr_status_t kr__ser_tally(kr_serializer_t *s, kr_tally_t *t);
kr_status_t kr__ser_timeavg(kr_serializer_t *s, kr_timeavg_t *a);
kr_status_t kr__ser_batchmeans(kr_serializer_t *s, kr_batchmeans_t *b);

#endif
