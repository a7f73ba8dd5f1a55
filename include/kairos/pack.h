/* Packing entity subtrees into bytes and recreating them in another world,
 * the base of migration between simulators and ranks and of checkpoints.
 *
 * A pack holds, for each root and its whole subtree (pre-order): names,
 * parent links, data components as raw bytes, behavior state through the
 * behavior's serialize callback, and the spatial-hash position. Entity-id
 * fields (KR_FIELD_ENTITY and kr_ser_entity) are written as references
 * within the pack; a reference to an entity outside the packed subtrees
 * becomes KR_ENTITY_INVALID on unpack. The pack records the registry hash;
 * unpacking into a world with a different registry is refused. Packs assume
 * sender and receiver share byte order and component layouts (the registry
 * hash covers the layouts). */
#ifndef KAIROS_PACK_H
#define KAIROS_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos/export.h"
#include "kairos/buffer.h"
#include "kairos/entity.h"

KR_BEGIN_DECLS

/* Appends one pack holding `count` subtrees to `out`. Roots must be live and
 * none may lie inside another root's subtree. The world is not changed. */
KR_API kr_status_t kr_pack(kr_world_t *world, const kr_entity_t *roots, size_t count, kr_buf_t *out);

typedef struct kr_unpack_desc {
    kr_entity_t *roots;     /* optional: receives the new root ids, in order */
    size_t roots_capacity;  /* entries available in roots */
    bool notify_move;       /* fire on_submodel_move on every behavior */
} kr_unpack_desc_t;

/* Recreates the subtrees of one pack in `world` with new ids; roots have no
 * parent. Behaviors get on_creation, then their serialize callback, then
 * (with notify_move) on_submodel_move; hierarchy callbacks do not fire.
 * `used` (optional) receives the pack's size in bytes, so packs can be read
 * back to back; `root_count` (optional) the number of roots. A truncated or
 * corrupt pack, or one from another registry, is refused with nothing
 * created. */
KR_API kr_status_t kr_unpack(kr_world_t *world, const void *data, size_t len,
                             const kr_unpack_desc_t *desc, size_t *root_count, size_t *used);

KR_END_DECLS

#endif
