/* The hardware-in-the-loop production line (examples/hil): a "feeder"
 * makes weighed parts, a "belt" carries them past a sensor to a diverter,
 * and a "controller" rejects parts outside the weight band and stops the
 * belt after too many rejects in a row. The controller's events are the
 * ones an external controller exchanges with the model through the
 * emulation gateway, so every one of them describes its payload. */
#ifndef KAIROS_MODELS_HIL_H
#define KAIROS_MODELS_HIL_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr__hil_feeder_kind;
extern const kr_kind_desc_t kr__hil_belt_kind;
extern const kr_kind_desc_t kr__hil_controller_kind;

#endif
