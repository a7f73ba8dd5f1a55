#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

/* Per-thread, like errno: the only mutable state outside a world. */
static _Thread_local char last_message[1024];
static _Thread_local kr_status_t last_status;

size_t kr__control_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (p[0] < 0x20 || p[0] == 0x7f) return p[0] ? 1 : 0;
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) return 2;
    if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) return 3;
    return 0;
}

kr_status_t kr__fail(kr_status_t status, const char *fmt, ...)
{
    /* Format aside first: callers often wrap kr_last_error() itself. */
    char message[sizeof last_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    /* One line, whatever it quotes: a control character from a file or
     * the wire (a parser's "near '\v'", a name with a newline, a
     * terminal's escape) becomes one '?'. */
    char *r = message, *w = message;
    while (*r) {
        size_t n = kr__control_len(r);
        if (n) {
            *w++ = '?';
            r += n;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    memcpy(last_message, message, sizeof last_message);
    last_status = status;
    return status;
}

const char *kr_last_error(void) { return last_message; }
kr_status_t kr_last_status(void) { return last_status; }

void kr_clear_error(void)
{
    last_message[0] = '\0';
    last_status = KR_OK;
}

const char *kr_status_str(kr_status_t status)
{
    switch (status) {
    case KR_OK: return "ok";
    case KR_ERR_INVALID_ARG: return "invalid argument";
    case KR_ERR_STALE_ENTITY: return "stale entity";
    case KR_ERR_UNREGISTERED: return "unregistered component";
    case KR_ERR_NO_COMPONENT: return "no such component";
    case KR_ERR_EXISTS: return "already exists";
    case KR_ERR_LOCKED: return "structure locked";
    case KR_ERR_CYCLE: return "cycle";
    case KR_ERR_CORRUPT: return "corrupt data";
    case KR_ERR_MISMATCH: return "mismatch";
    case KR_ERR_NOMEM: return "out of memory";
    case KR_ERR_IO: return "i/o error";
    case KR_ERR_STATE: return "invalid state";
    case KR_ERR_NUMERIC: return "numerical failure";
    case KR_ERR_DEADLOCK: return "deadlock";
    case KR_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}
