/* Allocation of large arrays (table columns, entity records, reverse
 * indexes). Arrays of 2 MiB and more are aligned to 2 MiB and marked for
 * transparent huge pages: random access over a million entities then costs
 * one TLB entry per 2 MiB instead of per 4 KiB, and creating them faults in
 * 512 times fewer pages. Where huge pages are unavailable madvise fails
 * harmlessly and the array is ordinary memory. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memory_private.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *kr__array_grow(void *old, size_t old_bytes, size_t new_bytes, size_t align)
{
    if (align < 64) align = 64;
    bool huge = new_bytes >= HUGE_PAGE;
    if (huge) align = HUGE_PAGE;
    size_t rounded = (new_bytes + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, rounded ? rounded : align)) return NULL;
    if (huge && !getenv("KR_NO_THP")) madvise(p, rounded, MADV_HUGEPAGE);
    if (old) {
        memcpy(p, old, old_bytes < new_bytes ? old_bytes : new_bytes);
        free(old);
    }
    return p;
}
