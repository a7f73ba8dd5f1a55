/* Logging: levels from trace to critical, chosen per run, and a hook.
 *
 * Messages below the run's level cost one comparison. Without a hook they go
 * to stderr as "[level] simulator @ time: message"; a hook receives them
 * instead (for tests, GUIs, or a cluster's log collector). */
#ifndef KAIROS_LOG_H
#define KAIROS_LOG_H

#include "kairos/export.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

typedef struct kr_sim kr_sim_t;
typedef struct kr_model kr_model_t;

typedef enum kr_log_level {
    KR_LOG_TRACE, KR_LOG_DEBUG, KR_LOG_INFO, KR_LOG_WARN, KR_LOG_ERROR, KR_LOG_CRITICAL,
    KR_LOG_OFF
} kr_log_level_t;

/* sim_name is "" for messages about the whole model; now is in ticks. */
typedef void (*kr_log_fn)(void *arg, kr_log_level_t level, const char *sim_name, kr_time_t now,
                          const char *message);

/* Logs on behalf of a simulator (its name and current time are attached). */
KR_API void kr_log(kr_sim_t *sim, kr_log_level_t level, const char *fmt, ...)
           __attribute__((format(printf, 3, 4)));
/* Logs on behalf of the model. */
KR_API void kr_model_log(kr_model_t *model, kr_log_level_t level, const char *fmt, ...)
           __attribute__((format(printf, 3, 4)));

/* "trace", "debug", "info", "warn", "error", "critical", "off". */
KR_API const char *kr_log_level_name(kr_log_level_t level);
/* Parses a level name; returns KR_ERR_INVALID_ARG for an unknown one. */
KR_API kr_status_t kr_log_level_from_name(const char *name, kr_log_level_t *out);

KR_END_DECLS

#endif
