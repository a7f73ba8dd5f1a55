/* Large-array allocation for the ECS. Not public API. */
#ifndef KAIROS_BASE_MEMORY_H
#define KAIROS_BASE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

/* Returns a new array of new_bytes aligned to at least `align` (64 minimum;
 * its whole 2 MiB pages advised for huge pages), holding the first
 * old_bytes of old, which is freed. NULL on failure (old untouched). Free
 * the result with free(). */
void *kr__array_grow(void *old, size_t old_bytes, size_t new_bytes, size_t align);

#endif
