/* Setting the per-thread last error. Not public API. */
#ifndef KAIROS_BASE_ERROR_H
#define KAIROS_BASE_ERROR_H

#include "kairos/status.h"

/* Records status and a printf-style message for kr_last_error(); returns
 * status so callers can write `return kr__fail(KR_ERR_..., "...")`. The
 * message is kept to one line: control characters become '?'. */
kr_status_t kr__fail(kr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
