/* Setting the per-thread last error. Not public API. */
#ifndef KAIROS_BASE_ERROR_H
#define KAIROS_BASE_ERROR_H

#include <stddef.h>

#include "kairos/status.h"

/* Records status and a printf-style message for kr_last_error(); returns
 * status so callers can write `return kr__fail(KR_ERR_..., "...")`. The
 * message is kept to one line: control characters become '?'. */
kr_status_t kr__fail(kr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The length in bytes of the control character that s starts with, 0 for
 * none (or the end): C0 and DEL, and in UTF-8 the C1 controls
 * (U+0080-U+009F) and the line and paragraph separators (U+2028, U+2029),
 * which would break a one-line message or drive a terminal. */
size_t kr__control_len(const char *s);

#endif
