/* The component registry: data components (plain bytes with field metadata)
 * and behavior components (a callback table plus per-instance state).
 *
 * A registry is shared by the worlds of one model; every rank must build the
 * same registry (same names, sizes and fields, in the same order), which
 * kr_registry_hash() lets a distributed run check. Registering is not
 * thread-safe; register everything before worlds run. */
#ifndef KAIROS_REGISTRY_H
#define KAIROS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/status.h"

KR_BEGIN_DECLS

/* Component type id; 0 is never a valid component. */
typedef uint32_t kr_component_t;
#define KR_COMPONENT_NONE ((kr_component_t)0)

typedef struct kr_registry kr_registry_t;
typedef struct kr_behavior_vtbl kr_behavior_vtbl_t; /* kairos/behavior.h */

typedef enum kr_field_type {
    KR_FIELD_BOOL = 1, KR_FIELD_I8, KR_FIELD_U8, KR_FIELD_I16, KR_FIELD_U16,
    KR_FIELD_I32, KR_FIELD_U32, KR_FIELD_I64, KR_FIELD_U64,
    KR_FIELD_F32, KR_FIELD_F64,
    KR_FIELD_ENTITY,      /* a kr_entity_t: remapped when a subtree is unpacked */
    /* Slots: only in a kind's per-simulator state (kairos/state.h), never in
     * components. They hold memory or are reported, so the runtime owns
     * them: it frees them with the simulator, digests them and writes the
     * statistics into the stats file under the field's name. */
    KR_FIELD_COUNTER,     /* uint64_t, reported as NAME */
    KR_FIELD_TALLY,       /* kr_tally_t (kairos/statistics.h), reported */
    KR_FIELD_TIMEAVG,     /* kr_timeavg_t, reported as its mean at the end */
    KR_FIELD_BATCHMEANS,  /* kr_batchmeans_t, reported with its interval */
    KR_FIELD_HISTOGRAM,   /* kr_histogram_t, reported; freed by the runtime */
    KR_FIELD_DIST,        /* kr_dist_t (kairos/dist.h); freed by the runtime */
    KR_FIELD_ENTITY_LIST, /* kr_entity_list_t (kairos/entity.h); freed */
    KR_FIELD_STRING,      /* char *, owned: freed, and digested by its text */
    KR_FIELD_NUMBER_LIST  /* kr_number_list_t (kairos/state.h); freed */
} kr_field_type_t;

/* One field of a data component. count > 1 describes a fixed-size array. */
typedef struct kr_field {
    const char *name;
    kr_field_type_t type;
    size_t offset;
    uint32_t count;       /* 0 is taken as 1 */
} kr_field_t;

#define KR_FIELD(Struct, member, ftype) \
    { #member, (ftype), offsetof(Struct, member), 1 }
#define KR_FIELD_ARRAY(Struct, member, ftype, n) \
    { #member, (ftype), offsetof(Struct, member), (n) }

/* Where a data component's values live (docs/ecs.md, "Storage").
 *  - KR_STORAGE_TABLE (default): in the entity's table, one contiguous array
 *    per component; views hand them out as plain arrays. Adding or removing
 *    moves the entity's row to another table.
 *  - KR_STORAGE_SPARSE: in a pool of its own (a sparse set); adding and
 *    removing touch only that pool, several times faster, but views that
 *    name the component iterate by entity, not by chunk. For markers and
 *    data that come and go often. */
typedef enum kr_storage {
    KR_STORAGE_TABLE = 0,
    KR_STORAGE_SPARSE = 1
} kr_storage_t;

typedef struct kr_component_desc {
    const char *name;         /* unique in the registry; required */
    size_t size;              /* 0 makes a tag: no storage */
    size_t align;             /* 0: the largest power of two dividing size, up to 16 */
    const kr_field_t *fields; /* optional; needed for entity-id remapping */
    size_t field_count;
    kr_storage_t storage;     /* KR_STORAGE_TABLE unless set */
} kr_component_desc_t;

typedef struct kr_behavior_desc {
    const char *name;                /* unique in the registry; required */
    size_t state_size;               /* per-instance state, zeroed on add */
    size_t state_align;              /* 0 as for components */
    const kr_behavior_vtbl_t *vtbl;  /* required; unused callbacks are NULL */
} kr_behavior_desc_t;

/* Creates a registry holding the built-in components: kr_transform,
 * kr_resource and kr_channel (ids KR_TRANSFORM, KR_RESOURCE, KR_CHANNEL). */
KR_API kr_registry_t *kr_registry_create(void);
KR_API void kr_registry_destroy(kr_registry_t *reg);

/* Registers a data component. Returns its id, or KR_COMPONENT_NONE with
 * kr_last_error() set (missing name, a name registered with another
 * definition: KR_ERR_EXISTS, fields outside size, unknown storage). The
 * same definition registered again returns the id it has (every kind of
 * a model may register what it uses). */
KR_API kr_component_t kr_component_register(kr_registry_t *reg, const kr_component_desc_t *desc);
/* Registers a behavior component. Same failure rules. */
KR_API kr_component_t kr_behavior_register(kr_registry_t *reg, const kr_behavior_desc_t *desc);

/* Finds a component by name; KR_COMPONENT_NONE if absent. */
KR_API kr_component_t kr_component_lookup(const kr_registry_t *reg, const char *name);
/* Number of registered components, built-ins included. */
KR_API uint32_t kr_registry_count(const kr_registry_t *reg);

typedef struct kr_component_info {
    const char *name;
    size_t size, align;
    const kr_field_t *fields;
    size_t field_count;
    const kr_behavior_vtbl_t *vtbl; /* non-NULL for behavior components */
    kr_storage_t storage;           /* behaviors always use tables */
} kr_component_info_t;

/* Metadata of a component; NULL (and kr_last_error) if unregistered. */
KR_API const kr_component_info_t *kr_component_info(const kr_registry_t *reg, kr_component_t id);

/* A 64-bit digest of every entry (name, kind, size, alignment, fields), in
 * id order: two registries with the same hash describe the same layout. */
KR_API uint64_t kr_registry_hash(const kr_registry_t *reg);

/* The built-in transform component, registered in every registry. */
typedef struct kr_transform {
    double position[3];
    double rotation[4];  /* quaternion x, y, z, w */
    double scale[3];
} kr_transform_t;

/* Id of kr_transform_t in every registry. */
#define KR_TRANSFORM ((kr_component_t)1)
/* Id of the resource tag (kairos/channel.h) in every registry. */
#define KR_RESOURCE ((kr_component_t)2)
/* Id of kr_channel_t (kairos/channel.h) in every registry. */
#define KR_CHANNEL ((kr_component_t)3)
/* Number of built-in components; user components get ids from
 * KR_BUILTIN_COUNT + 1 on. */
#define KR_BUILTIN_COUNT 3u

KR_END_DECLS

#endif
