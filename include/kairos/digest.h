/* Digests of state for the run's checksum (docs/stats.md), computed by the
 * runtime from field metadata so that kinds need no digest code.
 *
 * A world's digest is the sum mod 2^64 of one hash per live entity, so it
 * depends neither on the order of entities nor on their ids (which change
 * when an entity migrates) nor on memory layout. An entity's hash covers
 * the names of its components and, for components registered with fields,
 * the values of those fields: integers by value, floating point by its bits,
 * never padding. An entity reference (KR_FIELD_ENTITY, and the parent link)
 * counts by whether it is set and by the referenced entity's own hash
 * (its fields with references counted as set or not), never by its id.
 * Components without field metadata, behaviors included, count by presence
 * only: describe a component's fields to have its values checked.
 * A simulator's declared state adds kr_fields_digest (kairos/state.h). */
#ifndef KAIROS_DIGEST_H
#define KAIROS_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/registry.h"
#include "kairos/world.h"

KR_BEGIN_DECLS

KR_API uint64_t kr_world_digest(kr_world_t *world);

/* A live entity's own hash: its components' names and described fields,
 * references counted as set or not, and whether it has a parent; 0 for
 * an entity that is not alive. kr_world_digest adds to it, per reference,
 * the referenced entity's own hash. */
KR_API uint64_t kr_entity_digest(kr_world_t *world, kr_entity_t e);

/* A 64-bit mixer (a bijection) for kinds that digest state kept outside
 * their world and their declared state: combine with
 * h = kr_digest_mix(h ^ value). */
KR_API uint64_t kr_digest_mix(uint64_t x);

KR_END_DECLS

#endif
