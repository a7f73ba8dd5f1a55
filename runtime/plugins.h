/* Loading a plug-in's kinds outside a model file (`kairos kinds`). Not
 * public API. */
#ifndef KAIROS_RUNTIME_PLUGINS_H
#define KAIROS_RUNTIME_PLUGINS_H

#include "kairos/kind.h"

/* Opens the shared object `name` (under `dir`, or the current folder when
 * dir is NULL, unless absolute) and runs its kairos_plugin_init on `kinds`. It stays loaded.
 * Errors in the standard form "FILE: WHERE: expected ..., found "NAME""
 * (e.g. file "model.json", where "plugins[0]"). The dlopen handle in
 * *handle when it opened (even if the entry point then failed), else NULL;
 * handle may be NULL. */
kr_status_t kr__plugin_load(kr_kinds_t *kinds, const char *name, const char *dir, const char *file, const char *where,
                            void **handle);

#endif
