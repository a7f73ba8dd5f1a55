/* Channels and resources: ERS's ChannelComponent and ResourceComponent
 * (docs/channels.md).
 *
 * A *resource* is an entity with the built-in KR_RESOURCE tag. A *channel*
 * is an entity with the built-in KR_CHANNEL component, an input or an
 * output, added to a resource with kr_channel_add: the channel becomes the
 * resource's last child. A resource's channels are the channel children
 * added to it, in child order (kr_resource_inputs, kr_resource_outputs); a
 * channel moved away from its resource, or whose resource lost the
 * KR_RESOURCE tag, has no resource until that is undone.
 *
 * One output connects to one input (kr_channel_connect). Channels start
 * closed. A connected pair whose two ends are open, and whose two resources
 * are alive resources still holding them as children, is *ready*; only a
 * ready pair carries a send. Destroying a channel disconnects its peer;
 * destroying a resource destroys its channels (they are its children).
 *
 * Callbacks (kairos/behavior.h), on the behaviors of the resources:
 *  - when a pair becomes ready (kr_channel_open of its second end, or
 *    kr_channel_connect of two open ends): on_output_channel_ready(output)
 *    on the output's resource, then on_input_channel_ready(input) on the
 *    input's resource;
 *  - kr_channel_send(output, child): the child moves to the input's
 *    resource with kr_entity_set_parent (child.on_exiting, child.on_entering,
 *    sender.on_exited, receiver.on_entered), then on_receive(input, child)
 *    on the receiver; then, if the pair is still ready,
 *    on_output_channel_ready and on_input_channel_ready again.
 *
 * Re-entrancy: callbacks may open, close, connect, disconnect and send.
 * Ready notifications are queued per world and fired in order when the
 * outermost channel call returns; a notification whose pair is no longer
 * ready when its turn comes is dropped. So a send made inside
 * on_output_channel_ready completes (hierarchy callbacks and on_receive
 * run inside it) and returns true, and the ready callbacks it earns fire
 * after the current callback has returned: a resource that sends from
 * on_output_channel_ready until it is empty runs as a loop, not a recursion,
 * however much it sends. on_receive is part of the send and always runs
 * inside kr_channel_send (so forwarding from on_receive nests, one level per
 * hop). Only kr_channel_open, kr_channel_connect and kr_channel_send fire
 * ready callbacks: a pair that becomes ready otherwise (a channel moved back
 * under its resource, a tag re-added, an unpack) fires nothing. A channel or
 * resource being destroyed is never ready.
 *
 * Packs (kairos/pack.h) carry channels and resources: the peer and resource
 * of a channel are remapped; a peer outside the packed subtrees becomes
 * KR_ENTITY_INVALID (disconnected). Unpacking fires no channel callbacks.
 *
 * Every function checks its arguments; failures return a status, false,
 * KR_ENTITY_INVALID or 0, with the reason in kr_last_error(). */
#ifndef KAIROS_CHANNEL_H
#define KAIROS_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/registry.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef enum kr_channel_kind {
    KR_CHANNEL_KIND_NONE = 0,   /* not a channel (a failure value) */
    KR_CHANNEL_INPUT = 1,
    KR_CHANNEL_OUTPUT = 2
} kr_channel_kind_t;

/* The value of the KR_CHANNEL component. Read it if you like; change it
 * only through kr_channel_*: the functions below check that both ends of a
 * pair agree, and treat a one-sided or dangling peer as no peer. */
typedef struct kr_channel {
    kr_entity_t peer;      /* the connected channel, or KR_ENTITY_INVALID */
    kr_entity_t resource;  /* the resource the channel was added to */
    uint32_t kind;         /* kr_channel_kind_t */
    bool open;
} kr_channel_t;

/* Makes e a resource (adds the KR_RESOURCE tag; kr_component_add(w, e,
 * KR_RESOURCE) does the same). Fails with KR_ERR_EXISTS if it already is. */
KR_API kr_status_t kr_resource_add(kr_world_t *world, kr_entity_t e);

/* Writes the resource's input (or output) channels, in child order, to
 * out[0..cap) and returns how many it has (which may exceed cap). Returns 0
 * with kr_last_error() set if resource is stale or not a resource. */
KR_API size_t kr_resource_inputs(const kr_world_t *world, kr_entity_t resource, kr_entity_t *out, size_t cap);
KR_API size_t kr_resource_outputs(const kr_world_t *world, kr_entity_t resource, kr_entity_t *out, size_t cap);

/* Makes channel a closed, unconnected channel of the given kind and the
 * last child of resource (hierarchy callbacks fire as for
 * kr_entity_set_parent). Refuses stale ids, an unknown kind, channel ==
 * resource, a resource without KR_RESOURCE, an entity that already is a
 * channel, and a channel that is an ancestor of resource (KR_ERR_CYCLE). */
KR_API kr_status_t kr_channel_add(kr_world_t *world, kr_entity_t channel, kr_channel_kind_t kind,
                                  kr_entity_t resource);

/* Connects an output to an input, one to one. Refuses wrong kinds and ends
 * already connected (KR_ERR_EXISTS). If both ends are open the pair is
 * ready now and the ready callbacks fire. The two may belong to the same
 * resource. */
KR_API kr_status_t kr_channel_connect(kr_world_t *world, kr_entity_t output, kr_entity_t input);
/* Disconnects channel (either end) from its peer; KR_ERR_STATE if it is
 * not connected. Fires nothing. */
KR_API kr_status_t kr_channel_disconnect(kr_world_t *world, kr_entity_t channel);

/* Opens channel. Opening the second end of a connected pair makes it ready:
 * on_output_channel_ready, then on_input_channel_ready, fire. Opening an
 * open channel does nothing. */
KR_API kr_status_t kr_channel_open(kr_world_t *world, kr_entity_t channel);
/* Closes channel. Fires nothing. */
KR_API kr_status_t kr_channel_close(kr_world_t *world, kr_entity_t channel);

/* Sends child through output to the resource of its peer. child must be a
 * live, direct child of output's resource (what the resource holds), and
 * neither a channel nor an ancestor of the receiving resource. Returns
 * false with kr_last_error() set when output is not an output channel, is
 * not connected, either end is closed, an end has lost its resource, or
 * child is not acceptable; nothing happens then. Otherwise the child
 * becomes the receiver's last child, on_receive fires and the pair, if
 * still ready, fires its ready callbacks again (see the top of this file).
 * When output and input belong to one resource the child just moves to its
 * last place, without hierarchy callbacks, and on_receive still fires. */
KR_API bool kr_channel_send(kr_world_t *world, kr_entity_t output, kr_entity_t child);

/* False both for a closed channel and on failure (then kr_last_error()). */
KR_API bool kr_channel_is_open(const kr_world_t *world, kr_entity_t channel);
/* True if channel's pair is ready (see the top of this file). */
KR_API bool kr_channel_is_ready(const kr_world_t *world, kr_entity_t channel);
/* The connected channel; KR_ENTITY_INVALID when not connected, or on
 * failure (then kr_last_error()). */
KR_API kr_entity_t kr_channel_peer(const kr_world_t *world, kr_entity_t channel);
/* The resource holding channel; KR_ENTITY_INVALID if the channel was moved
 * away from it or it lost its resource tag, or on failure. */
KR_API kr_entity_t kr_channel_resource(const kr_world_t *world, kr_entity_t channel);
/* KR_CHANNEL_INPUT or KR_CHANNEL_OUTPUT; KR_CHANNEL_KIND_NONE on failure. */
KR_API kr_channel_kind_t kr_channel_kind(const kr_world_t *world, kr_entity_t channel);

KR_END_DECLS

#endif
