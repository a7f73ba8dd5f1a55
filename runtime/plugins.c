/* Loading one plug-in into a kinds registry: for a model file's
 * "plugins" (runtime/model_file.c), and for `kairos kinds`, which lists
 * the kinds of plug-ins named on its command line or in a model file
 * without loading the model. */
#include <dlfcn.h>
#include <stdio.h>
#include "base/error.h"
#include "runtime/model_file.h"
#include "runtime/plugins.h"

kr_status_t kr__plugin_load(kr_kinds_t *kinds, const char *name, const char *dir, const char *file, const char *where,
                            void **handle)
{
    if (handle) *handle = NULL;
    char full[4096];
    /* a bare name is a file here, not a library for dlopen to search for */
    if (name[0] == '/') snprintf(full, sizeof full, "%s", name);
    else snprintf(full, sizeof full, "%s/%s", dir ? dir : ".", name);
    json_t *shown = json_string(name);
    kr_status_t st = KR_OK;
    /* Never closed: kinds registered from it point into its code and data;
     * the process exit unloads it. */
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        char expected[4200];
        snprintf(expected, sizeof expected, "a loadable shared object (%s)", dlerror());
        st = kr__input_error(file, where, expected, shown);
    } else {
        if (handle) *handle = h;
        kr_plugin_init_fn init;
        *(void **)&init = dlsym(h, KR_PLUGIN_ENTRY);
        if (!init) st = kr__input_error(file, where, "a plugin exporting " KR_PLUGIN_ENTRY, shown);
        else if (kr__kinds_has_plugin(kinds, h))
            st = kr__input_error(file, where, "each plug-in once (this file is loaded already, under another name "
                                 "or the same)", shown);
        else {
            /* (a plug-in may fail without a message: then it is not an
             * earlier, unrelated one that is shown) */
            kr_clear_error();
            if ((st = init(kinds))) {
                const char *why = kr_last_error();
                st = why[0] ? kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected a plugin whose " KR_PLUGIN_ENTRY
                                       " succeeds, found: %s", file, where, why)
                            : kr__fail(KR_ERR_INVALID_ARG, "%s: %s: expected a plugin whose " KR_PLUGIN_ENTRY
                                       " succeeds, found status %d (%s) with no message", file, where, (int)st,
                                       kr_status_str(st));
            }
            if (!st) st = kr__kinds_add_plugin(kinds, h);
        }
    }
    json_decref(shown);
    return st;
}
