/* The built-in model kinds compiled into the kairos executable. */
#ifndef KAIROS_MODELS_BUILTIN_H
#define KAIROS_MODELS_BUILTIN_H

#include "kairos/kind.h"

/* Registers every built-in kind with kr_kind_register; stops at the first
 * failure (a duplicate name) and returns it. */
kr_status_t kr__models_register_builtin(kr_kinds_t *kinds);

#endif
