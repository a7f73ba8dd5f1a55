/* The registry of model kinds. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/kind_build.h"
#include "runtime/model_file.h"

struct kr_kinds {
    kr_kind_desc_t *items;
    size_t count;
    void **plugins;       /* the plug-ins whose kinds are here (dlopen handles) */
    size_t plugin_count;
};

kr_kinds_t *kr__kinds_create(void)
{
    kr_kinds_t *k = calloc(1, sizeof *k);
    if (!k) kr__fail(KR_ERR_NOMEM, "kinds: out of memory");
    return k;
}

void kr__kinds_destroy(kr_kinds_t *k)
{
    if (!k) return;
    free(k->items);
    free(k->plugins);
    free(k);
}

bool kr__kinds_has_plugin(const kr_kinds_t *k, const void *handle)
{
    for (size_t i = 0; k && i < k->plugin_count; i++)
        if (k->plugins[i] == handle) return true;
    return false;
}

kr_status_t kr__kinds_add_plugin(kr_kinds_t *k, void *handle)
{
    void **grown = realloc(k->plugins, (k->plugin_count + 1) * sizeof *grown);
    if (!grown) return kr__fail(KR_ERR_NOMEM, "kinds: out of memory");
    k->plugins = grown;
    k->plugins[k->plugin_count++] = handle;
    return KR_OK;
}

const kr_kind_desc_t *kr__kinds_find(const kr_kinds_t *k, const char *name)
{
    for (size_t i = 0; k && name && i < k->count; i++)
        if (!strcmp(k->items[i].name, name)) return &k->items[i];
    return NULL;
}

size_t kr__kinds_count(const kr_kinds_t *k) { return k ? k->count : 0; }
const kr_kind_desc_t *kr__kinds_at(const kr_kinds_t *k, size_t i) { return i < k->count ? &k->items[i] : NULL; }

kr_status_t kr_kind_register_abi(kr_kinds_t *k, const kr_kind_desc_t *d, uint32_t abi, size_t desc_size)
{
    /* (checked first: a desc of another layout is not read at all) */
    if (abi != KR_ABI_VERSION || desc_size != sizeof(kr_kind_desc_t))
        return kr__fail(KR_ERR_MISMATCH, "kr_kind_register: a kind built against other kairos headers (ABI %u, a "
                        "kr_kind_desc_t of %zu bytes; this kairos has ABI %u, %zu bytes): rebuild it against this "
                        "kairos' headers", (unsigned)abi, desc_size, (unsigned)KR_ABI_VERSION, sizeof(kr_kind_desc_t));
    if (!k || !d) return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: null argument");
    if (!d->name || !d->name[0]) return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: a kind needs a name");
    /* A kind that declares its events can start from its state alone (a
     * step callback, events sent to it); one that declares nothing needs
     * a setup to build anything. */
    if (!d->setup && !d->events && !d->on_step)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s' has no setup", d->name);
    if (d->formalism > KR_EMULATION)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_kind_register: kind '%s' has an unknown formalism", d->name);
    if (kr__kind_check(d)) return kr_last_status();
    if (kr__kinds_find(k, d->name))
        return kr__fail(KR_ERR_EXISTS, "kr_kind_register: kind '%s' is already registered", d->name);
    kr_kind_desc_t *items = realloc(k->items, (k->count + 1) * sizeof *items);
    if (!items) return kr__fail(KR_ERR_NOMEM, "kr_kind_register: out of memory");
    k->items = items;
    items[k->count++] = *d; /* names are the kind's static strings */
    return KR_OK;
}

kr_status_t (kr_kind_register)(kr_kinds_t *k, const kr_kind_desc_t *d)
{
    (void)k, (void)d;
    return kr__fail(KR_ERR_MISMATCH, "kr_kind_register: a kind registered through the function, not the macro of "
                    "kairos/kind.h (built against an older kairos' headers, without KR_ABI_VERSION, or called through "
                    "a pointer): call kr_kind_register(kinds, &desc), built against this kairos' headers");
}
