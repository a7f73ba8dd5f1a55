/* The "phold" model kind: the PHOLD benchmark of the PDES literature. */
#ifndef KAIROS_MODELS_PHOLD_H
#define KAIROS_MODELS_PHOLD_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr__phold_kind;

#endif
