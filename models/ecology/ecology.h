/* The "ecology" model kind: plants and herbivore swarms on a grid that may
 * be cut into regions (docs/ecology.md). */
#ifndef KAIROS_MODELS_ECOLOGY_H
#define KAIROS_MODELS_ECOLOGY_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr_ecology_kind;

#endif
