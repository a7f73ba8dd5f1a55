/* Departures: the agents a region's exchange is about to send to its
 * neighbours, shown to an observer while they are still in the region's
 * world. Between the end of a step and the arrival at the next one a
 * migrant is in no world; the frames recorder (runtime/frames.c) draws it
 * from what it saw here. Not public API. */
#ifndef KAIROS_REGIONS_DEPARTURE_H
#define KAIROS_REGIONS_DEPARTURE_H

#include "kairos/region.h"

typedef void (*kr__region_departure_fn)(kr_region_t *r, kr_entity_t e, void *arg);

/* fn (NULL: none) sees every migrant of every exchange, before it leaves. */
void kr__region_on_departure(kr_region_t *r, kr__region_departure_fn fn, void *arg);

#endif
