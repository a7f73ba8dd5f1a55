/* The serializer behind kairos/serializer.h. Not public API. */
#ifndef KAIROS_ECS_SERIALIZER_PRIVATE_H
#define KAIROS_ECS_SERIALIZER_PRIVATE_H

#include "kairos/buffer.h"
#include "kairos/serializer.h"
#include "kairos/world.h"

/* Maps entity ids to and from portable references (0 = invalid, k + 1 =
 * the k-th entity of the pack). */
typedef uint64_t (*kr__ref_save_fn)(void *ctx, kr_entity_t e);
typedef kr_entity_t (*kr__ref_load_fn)(void *ctx, uint64_t ref, bool *ok);

struct kr_serializer {
    bool loading;
    kr_status_t status;
    kr_buf_t *out;          /* saving */
    kr_reader_t *in;        /* loading */
    kr__ref_save_fn ref_save;
    kr__ref_load_fn ref_load;
    void *ref_ctx;
};

void kr__serializer_saver(kr_serializer_t *s, kr_buf_t *out, kr__ref_save_fn fn, void *ctx);
void kr__serializer_loader(kr_serializer_t *s, kr_reader_t *in, kr__ref_load_fn fn, void *ctx);
/* The serializers of a checkpoint (ecs/image.c, a kind's serialize):
 * entity ids kept as they are (kr_serializer_in_checkpoint). */
void kr__serializer_checkpoint_saver(kr_serializer_t *s, kr_buf_t *out);
void kr__serializer_checkpoint_loader(kr_serializer_t *s, kr_reader_t *in);

#endif
