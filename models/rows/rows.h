/* The "rows" kind: fan-in production lines (docs/models/rows.md). */
#ifndef KAIROS_MODELS_ROWS_H
#define KAIROS_MODELS_ROWS_H

#include "kairos/kind.h"

extern const kr_kind_desc_t kr__rows_kind;

#endif
