/* The "sqss" model kind: Source -> Queue -> Server(s) -> Sink. */
#ifndef KAIROS_MODELS_SQSS_H
#define KAIROS_MODELS_SQSS_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr__sqss_kind;

#endif
