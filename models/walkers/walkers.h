/* The "walkers" model kind: random walkers on a grid cut into regions. */
#ifndef KAIROS_MODELS_WALKERS_H
#define KAIROS_MODELS_WALKERS_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr__walkers_kind;

#endif
