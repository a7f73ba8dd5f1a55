/* TEMPORARY until the kinds branch lands. */
#ifndef KAIROS_MODELS_BUILTIN_H
#define KAIROS_MODELS_BUILTIN_H
#include "kairos/kind.h"
kr_status_t kr_models_register_builtin(kr_kinds_t *kinds);
#endif
