/* TEST DOUBLE, unit tests only: a stand-in for the runtime's kr_params_*,
 * kr_kind_register and kr_report_* (include/kairos/kind.h), so that model
 * kinds can be tested before and apart from the real runtime. Params are a
 * tiny key/value table instead of JSON; never compiled into libkairos. */
#ifndef KAIROS_TESTS_KINDS_STUB_H
#define KAIROS_TESTS_KINDS_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos/kind.h"

#define STUB_MAX 16

typedef enum stub_type { STUB_NUMBER = 1, STUB_STRING, STUB_BOOL, STUB_DIST } stub_type_t;

typedef struct stub_param {
    const char *key;
    stub_type_t type;
    double number;
    const char *string;
    bool boolean;
    kr_dist_desc_t dist;
    bool read;                    /* the kind asked for it */
} stub_param_t;

struct kr_params {
    const char *where;            /* for messages, e.g. "simulators[1].params" */
    uint64_t precision;           /* for durations */
    size_t count;
    stub_param_t items[STUB_MAX];
};

void stub_params_init(kr_params_t *p, const char *where, uint64_t precision);
void stub_params_number(kr_params_t *p, const char *key, double value);
void stub_params_string(kr_params_t *p, const char *key, const char *value);
void stub_params_bool(kr_params_t *p, const char *key, bool value);
void stub_params_dist(kr_params_t *p, const char *key, const kr_dist_desc_t *value);
/* The first key the kind never read, NULL if it read them all. */
const char *stub_params_unread(const kr_params_t *p);

typedef struct stub_figure {
    const char *name;
    int type;                     /* 'n' number, 'i' int, 's' string */
    double number;
    int64_t integer;
    const char *string;
} stub_figure_t;

struct kr_report {
    size_t count;
    stub_figure_t figures[STUB_MAX];
};

/* The figure named `name`, NULL if absent. */
const stub_figure_t *stub_report_get(const kr_report_t *r, const char *name);

struct kr_kinds {
    size_t count;
    const kr_kind_desc_t *kinds[32];
};

const kr_kind_desc_t *stub_kinds_find(const kr_kinds_t *k, const char *name);

#endif
