/* Status codes and the per-thread last error message.
 *
 * Functions that can fail return kr_status_t (KR_OK = 0) or a documented
 * failure value (NULL, KR_ENTITY_INVALID, false); in every failure case the
 * reason is kept, per thread like errno, for kr_last_error(). */
#ifndef KAIROS_STATUS_H
#define KAIROS_STATUS_H

#include "kairos/export.h"

KR_BEGIN_DECLS

typedef enum kr_status {
    KR_OK = 0,
    KR_ERR_INVALID_ARG,   /* null world, bad size, malformed description */
    KR_ERR_STALE_ENTITY,  /* invalid id, or an id whose entity was destroyed */
    KR_ERR_UNREGISTERED,  /* component id not in the registry */
    KR_ERR_NO_COMPONENT,  /* the entity does not have that component */
    KR_ERR_EXISTS,        /* duplicate: component already on the entity, name taken */
    KR_ERR_LOCKED,        /* structural change refused during a chunk pass */
    KR_ERR_CYCLE,         /* reparent would make an entity its own ancestor */
    KR_ERR_CORRUPT,       /* truncated or malformed buffer */
    KR_ERR_MISMATCH,      /* registries or formats that do not agree */
    KR_ERR_NOMEM,
    KR_ERR_IO,
    KR_ERR_STATE,         /* call not valid in the object's current state */
    KR_ERR_NUMERIC,       /* a numerical method failed: ODE step, callback error, NaN */
    KR_ERR_DEADLOCK,      /* a run that cannot advance: nothing runnable, nothing in flight, not finished */
    KR_ERR_INTERRUPTED    /* a run stopped by a signal (SIGINT, SIGTERM) at a safe point */
} kr_status_t;

/* Message of the last failure on this thread ("" when none yet). */
KR_API const char *kr_last_error(void);
/* Status of the last failure on this thread (KR_OK when none yet). */
KR_API kr_status_t kr_last_status(void);
/* Short name of a status, e.g. "stale entity". */
KR_API const char *kr_status_str(kr_status_t status);
/* Clears the last error of this thread. */
KR_API void kr_clear_error(void);

KR_END_DECLS

#endif
