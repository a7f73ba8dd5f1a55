/* Growing a heap array by doubling: see grow.h. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fault.h"
#include "base/grow.h"

static kr_status_t no_room(const char *what)
{
    return what ? kr__fail(KR_ERR_NOMEM, "%s: out of memory", what) : KR_ERR_NOMEM;
}

/* The common part: grows to a capacity of at most max_cap items, stored in
 * *grown; the array is untouched on failure. Called only with need > cap. */
static kr_status_t grow(void *items, size_t cap, size_t max_cap, size_t need, size_t min, size_t item_size,
                        const char *what, size_t *grown)
{
    size_t c = cap ? cap : min ? min : 1;
    while (c < need) {
        if (c > max_cap / 2) return no_room(what);
        c *= 2;
    }
    if (c > max_cap || c > SIZE_MAX / item_size) return no_room(what);
    void *old;
    memcpy(&old, items, sizeof old);
    void *p = kr__fault_alloc() ? NULL : realloc(old, c * item_size);
    if (!p) return no_room(what);
    memcpy(items, &p, sizeof p);
    *grown = c;
    return KR_OK;
}

kr_status_t kr__grow(void *items, size_t *cap, size_t need, size_t min, size_t item_size, const char *what)
{
    if (need <= *cap) return KR_OK;
    return grow(items, *cap, SIZE_MAX, need, min, item_size, what, cap);
}

kr_status_t kr__grow_u32(void *items, uint32_t *cap, size_t need, uint32_t min, size_t item_size,
                         const char *what)
{
    if (need <= *cap) return KR_OK;
    size_t grown = 0; /* (set when grow succeeds; GCC 12 -O3 cannot see it) */
    kr_status_t st = grow(items, *cap, UINT32_MAX, need, min, item_size, what, &grown);
    if (!st) *cap = (uint32_t)grown;
    return st;
}
