/* The per-simulator event queue (temporary binary heap; replaced by the measured choice). */
#ifndef KAIROS_SCHEDULERS_EVENT_QUEUE_H
#define KAIROS_SCHEDULERS_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kairos/status.h"

typedef struct kr_qentry { uint64_t time; uint64_t hi; uint64_t lo; uint32_t slot; uint32_t aux; } kr_qentry_t;
typedef struct kr_equeue { kr_qentry_t *a; size_t n, cap; } kr_equeue_t;
kr_status_t kr_equeue_init(kr_equeue_t *q);
void kr_equeue_fini(kr_equeue_t *q);
kr_status_t kr_equeue_push(kr_equeue_t *q, const kr_qentry_t *e);
bool kr_equeue_pop(kr_equeue_t *q, kr_qentry_t *out);
const kr_qentry_t *kr_equeue_peek(kr_equeue_t *q);
size_t kr_equeue_size(const kr_equeue_t *q);
kr_status_t kr_equeue_filter(kr_equeue_t *q, bool (*keep)(void *arg, const kr_qentry_t *e), void *arg);
#endif
