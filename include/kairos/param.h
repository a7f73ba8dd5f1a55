/* Declared parameters: a kind's table of what its model-file entry may
 * say under "params", read and checked by the runtime before the kind's
 * setup.
 *
 * Each row names a parameter, its type, where its value goes in the kind's
 * per-simulator state (kairos/state.h), its default, its range, its unit
 * and one line of help. The runtime parses the entry's "params" against
 * the table and writes every value (or its default) into the state; every
 * error names the file, the JSON path, what was expected and what was
 * found. `kairos kinds NAME` prints the table and `kairos validate` the
 * values a run will use.
 *
 *     typedef struct source { kr_time_t interval; const char *target; } source_t;
 *     static const kr_param_t source_params[] = {
 *         KR_PARAM(source_t, interval, KR_PARAM_DURATION, .def = "5", .range = "> 0",
 *                  .unit = "s", .help = "time between two products"),
 *         KR_PARAM(source_t, target, KR_PARAM_TARGET, .def = "\"conveyor\"",
 *                  .help = "the simulator products go to"),
 *         { 0 } };
 */
#ifndef KAIROS_PARAM_H
#define KAIROS_PARAM_H

#include <stddef.h>
#include "kairos/state.h" /* kr_number_list_t */

KR_BEGIN_DECLS

/* The type of a parameter, and of the state field it is written to. */
typedef enum kr_param_type {
    KR_PARAM_NUMBER = 1, /* double */
    KR_PARAM_DURATION,   /* kr_time_t: model units, in ticks rounded up (kr_time_delay_ticks) */
    KR_PARAM_INT,        /* int64_t: a whole number */
    KR_PARAM_BOOL,       /* bool */
    KR_PARAM_STRING,     /* const char *, a copy freed with the state */
    KR_PARAM_DIST,       /* kr_dist_t (the runtime frees it): {"dist": ...} or a bare number, a constant */
    KR_PARAM_TARGET,     /* const char *: the name of a simulator this one has a dependency to */
    KR_PARAM_LIST        /* kr_number_list_t: an array of numbers */
} kr_param_type_t;

typedef struct kr_param {
    const char *name;     /* the key under "params" */
    kr_param_type_t type;
    size_t offset;        /* of its field in the kind's state */
    /* The default as JSON text ("5", "true", "\"conveyor\"", "[1, 2]",
     * "{\"dist\": \"exponential\", \"mean\": 2}"); NULL makes the parameter
     * required. Checked when the kind is registered. */
    const char *def;
    /* Bounds for number, duration, int and list elements: comma-separated
     * "> x", ">= x", "< x", "<= x" (e.g. ">= 1, <= 64"); NULL for none. */
    const char *range;
    const char *unit;     /* shown in the table: "s", "m/s"; may be NULL */
    const char *help;     /* one line */
} kr_param_t;

/* A row whose key is the state member's name. */
#define KR_PARAM(State, member, ptype, ...) \
    { .name = #member, .type = (ptype), .offset = offsetof(State, member), __VA_ARGS__ }

KR_END_DECLS

#endif
