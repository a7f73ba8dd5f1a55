/* World images for checkpoint/restart (issue 18): the exact state of a
 * world, so that a restarted simulator has exactly the future of a run that
 * never stopped. Not public API; the format is described in image.c. */
#ifndef KAIROS_ECS_IMAGE_H
#define KAIROS_ECS_IMAGE_H

#include <stddef.h>
#include "kairos/buffer.h"
#include "kairos/status.h"
#include "kairos/world.h"

/* Appends to `out` the exact image of w: records (ids, generations, the
 * free list in reuse order), tables (ids, component sets, rows in order),
 * sparse pools (dense order), the tree (sibling order), name chains
 * (oldest first) and the spatial hash (grid, occupied cells in (cy, cx)
 * order, members' order). Components are named, not numbered, so the loading world may
 * have registered them in another order. Behaviors with a serialize
 * callback are saved through it (entity ids as they are), others as raw
 * bytes. Precondition: no pass, scan, creation or channel call under way
 * (between events); KR_ERR_STATE otherwise. On failure nothing is appended. */
kr_status_t kr__world_image_save(kr_world_t *w, kr_buf_t *out);

/* Replaces w's contents by an image. Every entity of w is first destroyed
 * (with the usual callbacks), then w's structures are rebuilt to be exactly
 * the saved ones; the world object itself stays. Data components and
 * behaviors without serialize get their raw bytes; behaviors with one get it
 * in loading mode (kr_ser_entity maps ids to themselves), and then every
 * entity that had started gets on_awake, then every one on_start, in
 * entity-index order, so that behaviors can relink. A malformed, truncated
 * or inconsistent image fails with KR_ERR_CORRUPT (KR_ERR_MISMATCH for
 * another format version) and one message saying what is wrong, and leaves
 * w empty and valid. Precondition as for saving. */
kr_status_t kr__world_image_load(kr_world_t *w, const void *data, size_t len);

/* Destroys every entity of w with the usual callbacks, as
 * kr__world_image_load does first. A restore calls it before it restores
 * anything else of the simulator, so that what those callbacks change (the
 * kind's declared state, events, the random stream) is then overwritten
 * by the checkpoint's. Precondition as for saving. */
kr_status_t kr__world_image_clear(kr_world_t *w);

#endif
