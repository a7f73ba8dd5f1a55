/* The gateway kind: an external system in the loop (docs/emulation.md). */
#ifndef KAIROS_MODELS_GATEWAY_H
#define KAIROS_MODELS_GATEWAY_H

#include <kairos/kairos.h>

extern const kr_kind_desc_t kr__gateway_kind;

#endif
