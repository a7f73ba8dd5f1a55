/* Growing a heap array by doubling. Not public API.
 *
 * The pattern it replaces, written out at each site:
 *
 *     if (count == cap) {
 *         size_t c = cap ? cap * 2 : 16;
 *         T *p = realloc(items, c * sizeof *p);
 *         if (!p) return kr__fail(KR_ERR_NOMEM, "what: out of memory");
 *         items = p;
 *         cap = c;
 *     }
 *
 * becomes
 *
 *     if (count == cap && KR__GROW(items, cap, count + 1, 16, "what")) return kr_last_status();
 */
#ifndef KAIROS_BASE_GROW_H
#define KAIROS_BASE_GROW_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

/* Makes room for `need` items of item_size bytes in the array whose address
 * is `items` (a T **, passed as void *; the pointer is read and written with
 * memcpy, so any object pointer type will do) and whose capacity, in items,
 * is *cap. When need <= *cap, does nothing. Otherwise the new capacity is
 * *cap, or `min` when *cap is 0 (1 when min is 0 too), doubled until need
 * fits; the array is realloc'ed to it, and the new pointer and capacity are
 * stored.
 *
 * Fails with KR_ERR_NOMEM, the array and *cap untouched, when realloc fails
 * or the capacity or its size in bytes would overflow; the last error then
 * reads "<what>: out of memory". With what NULL it records nothing, for a
 * caller that reports a failure in its own words (or carries on without
 * the room). */
kr_status_t kr__grow(void *items, size_t *cap, size_t need, size_t min, size_t item_size, const char *what);

/* kr__grow for a uint32_t capacity: fails the same way when the capacity
 * would pass UINT32_MAX. */
kr_status_t kr__grow_u32(void *items, uint32_t *cap, size_t need, uint32_t min, size_t item_size,
                         const char *what);

/* The same with the item size taken from the array: KR__GROW(arr, cap, need,
 * min, what) for a size_t cap, KR__GROW_U32 for a uint32_t one; arr and cap
 * are lvalues (t->items, t->cap), not their addresses. */
#define KR__GROW(arr, cap, need, min, what) kr__grow(&(arr), &(cap), (need), (min), sizeof *(arr), (what))
#define KR__GROW_U32(arr, cap, need, min, what) \
    kr__grow_u32(&(arr), &(cap), (need), (min), sizeof *(arr), (what))

#endif
