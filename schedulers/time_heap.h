/* A binary min-heap of (time, id) pairs: least time first and, at equal
 * times, least id, so that the order in which items leave never depends on
 * the order they came in. The Dijkstras over simulators (stop.c, a stop's
 * distances) and over groups (coordinator.c, a window round's bounds) use
 * it with lazy deletion: an item whose time has since been lowered is
 * pushed again, and the stale one skipped when it leaves. Not public API. */
#ifndef KAIROS_SCHEDULERS_TIME_HEAP_H
#define KAIROS_SCHEDULERS_TIME_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kairos/time.h"

typedef struct kr__time_item {
    kr_time_t time;
    uint32_t id;
} kr__time_item_t;

static inline bool kr__time_item_less(kr__time_item_t a, kr__time_item_t b)
{
    return a.time != b.time ? a.time < b.time : a.id < b.id;
}

/* h has room for *n + 1 items. */
static inline void kr__time_heap_push(kr__time_item_t *h, size_t *n, kr__time_item_t x)
{
    size_t i = (*n)++;
    while (i > 0 && kr__time_item_less(x, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

/* The least item; *n > 0. */
static inline kr__time_item_t kr__time_heap_pop(kr__time_item_t *h, size_t *n)
{
    kr__time_item_t top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && kr__time_item_less(h[c + 1], h[c])) c++;
        if (!kr__time_item_less(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

#endif
