/* Allocation of large arrays (table columns, entity records, reverse
 * indexes). The whole 2 MiB pages inside an array are marked for
 * transparent huge pages: random access over a million entities then costs
 * one TLB entry per 2 MiB instead of per 4 KiB, and creating them faults in
 * 512 times fewer pages. Where huge pages are unavailable madvise fails
 * harmlessly and the array is ordinary memory. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/fault.h"
#include "base/memory.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *kr__array_grow(void *old, size_t old_bytes, size_t new_bytes, size_t align)
{
    if (align < 64) align = 64;
    size_t rounded = (new_bytes + align - 1) / align * align;
    void *p = NULL;
    if (kr__fault_alloc() || posix_memalign(&p, align, rounded ? rounded : align)) return NULL;
    /* Advise the 2 MiB pages inside the array. The array itself is not
     * aligned to 2 MiB: arrays that start at the same offset modulo the page
     * map their elements to the same cache sets, and a loop over two of
     * them (positions and velocities) would then evict itself. */
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + rounded) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    if (old) {
        memcpy(p, old, old_bytes < new_bytes ? old_bytes : new_bytes);
        free(old);
    }
    return p;
}
