/* Logging for simulators and the model: level filter, then a hook or stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/error.h"
#include "schedulers/model_private.h"

static const char *const level_names[] = { "trace", "debug", "info", "warn", "error", "critical", "off" };

const char *kr_log_level_name(kr_log_level_t level)
{
    return (unsigned)level <= KR_LOG_OFF ? level_names[level] : "unknown";
}

kr_status_t kr_log_level_from_name(const char *name, kr_log_level_t *out)
{
    for (int i = 0; name && i <= KR_LOG_OFF; i++)
        if (!strcmp(name, level_names[i])) {
            *out = (kr_log_level_t)i;
            return KR_OK;
        }
    return kr__fail(KR_ERR_INVALID_ARG, "unknown log level '%s' (expected trace, debug, info, warn, error, critical "
                    "or off)", name ? name : "(null)");
}

static void emit(kr_model_t *m, kr_log_level_t level, const char *sim, kr_time_t now, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (m->log_fn) {
        m->log_fn(m->log_arg, level, sim, now, msg);
        return;
    }
    if (sim[0]) fprintf(stderr, "[%s] %s @ %g: %s\n", kr_log_level_name(level), sim,
                        kr_time_to_units(now, m->precision), msg);
    else fprintf(stderr, "[%s] %s\n", kr_log_level_name(level), msg);
}

void kr_log(kr_sim_t *s, kr_log_level_t level, const char *fmt, ...)
{
    if (!s || level < s->model->log_level || level >= KR_LOG_OFF) return;
    va_list ap;
    va_start(ap, fmt);
    emit(s->model, level, s->name, s->now, fmt, ap);
    va_end(ap);
}

void kr_model_log(kr_model_t *m, kr_log_level_t level, const char *fmt, ...)
{
    if (!m || level < m->log_level || level >= KR_LOG_OFF) return;
    va_list ap;
    va_start(ap, fmt);
    emit(m, level, "", 0, fmt, ap);
    va_end(ap);
}
