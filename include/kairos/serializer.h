/* Symmetric serialization for behavior state (ERS's Serialization
 * callback): one function both saves and loads. While saving, each call
 * writes *value; while loading, it reads into *value. Errors are sticky: after
 * the first failure (a truncated buffer, say) every call returns it and
 * reads zeros, so a callback may check only the status it returns. */
#ifndef KAIROS_SERIALIZER_H
#define KAIROS_SERIALIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/entity.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

typedef struct kr_serializer kr_serializer_t;

KR_API bool kr_serializer_loading(const kr_serializer_t *s);
/* Bytes left to load (0 when saving): check a length read from the wire
 * against it before allocating for it. */
KR_API size_t kr_serializer_left(const kr_serializer_t *s);
KR_API kr_status_t kr_serializer_status(const kr_serializer_t *s);
/* True while saving to or loading from a checkpoint (docs/checkpoint.md):
 * the world comes back whole in this process's model, entity ids kept,
 * rather than moving to another simulator (kr_pack). State that cannot
 * travel (a pointer to something setup made) can still be relinked then. */
KR_API bool kr_serializer_in_checkpoint(const kr_serializer_t *s);

KR_API kr_status_t kr_ser_bytes(kr_serializer_t *s, void *data, size_t n);
KR_API kr_status_t kr_ser_u32(kr_serializer_t *s, uint32_t *v);
KR_API kr_status_t kr_ser_u64(kr_serializer_t *s, uint64_t *v);
KR_API kr_status_t kr_ser_i64(kr_serializer_t *s, int64_t *v);
KR_API kr_status_t kr_ser_f64(kr_serializer_t *s, double *v);
/* An entity reference: remapped like KR_FIELD_ENTITY fields (a reference
 * outside the packed subtree loads as KR_ENTITY_INVALID). */
KR_API kr_status_t kr_ser_entity(kr_serializer_t *s, kr_entity_t *v);
/* A NUL-terminated string (NULL allowed). Loading allocates it with malloc;
 * the behavior owns it. */
KR_API kr_status_t kr_ser_string(kr_serializer_t *s, char **v);

KR_END_DECLS

#endif
