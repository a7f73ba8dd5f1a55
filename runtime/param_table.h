/* Declared parameters (kairos/param.h): checking a kind's table when it is
 * registered, and reading an entry's "params" into a simulator's state
 * before the kind's setup. Not public API. */
#ifndef KAIROS_RUNTIME_PARAM_TABLE_H
#define KAIROS_RUNTIME_PARAM_TABLE_H

#include <jansson.h>
#include <stdio.h>
#include "kairos/kind.h"

/* At kr_kind_register: every row has a name, a known type, a field inside
 * state_size, a default that parses as JSON of its type and lies in its
 * range, and a range that parses. The message names the kind and the row. */
kr_status_t kr__param_table_check(const kr_kind_desc_t *kind);

/* Before setup: reads every declared parameter of `params` (or its
 * default) into `state`, marking the keys read, and checks targets'
 * dependencies from `sim`. Errors in the standard form (file, JSON path,
 * expected, found). */
kr_status_t kr__param_table_apply(const kr_kind_desc_t *kind, kr_params_t *params, kr_sim_t *sim, void *state);

/* Frees what apply put into a state block of the caller's (strings,
 * lists' numbers, distributions). A simulator's state needs no call: the
 * runtime gives such parameters slots that the state frees itself
 * (runtime/kind_build.c). A zeroed state, or one apply stopped in, is
 * fine. */
void kr__param_table_fini(const kr_kind_desc_t *kind, void *state);

/* Writes the values a run will use, after defaults, as "interval 5 s,
 * target conveyor" to out (for `kairos validate`): applies the table to a
 * scratch state and shows each row. Fails as apply does. */
kr_status_t kr__param_table_show(const kr_kind_desc_t *kind, kr_params_t *params, kr_sim_t *sim, FILE *out);

/* The name of a type as shown in tables and messages ("duration"). */
const char *kr__param_type_name(kr_param_type_t type);

/* A row's range as kairos shows it (">= 1, <= 64"; a duration's ">= 0"
 * when none); "" without. */
void kr__param_row_range(const kr_param_t *row, char *buf, size_t cap);
/* x in the fewest digits that read back as x. */
const char *kr__param_number_text(double x, char buf[32]);

/* ---- params.c internals the table reads with ---- */
/* The value of `key`, marking it read; NULL when absent. */
json_t *kr__params_take(const kr_params_t *p, const char *key);
const char *kr__params_file(const kr_params_t *p);
const char *kr__params_path(const kr_params_t *p);   /* "simulators[2].params" */
uint64_t kr__params_precision(const kr_params_t *p);
/* A distribution from its JSON form ({"dist": ...} or a bare number, a
 * constant); errors name FILE: PATH. */
kr_status_t kr__dist_from_json(const char *file, const char *path, const json_t *v, kr_dist_t *out);
/* `v` names a simulator `from` has a dependency to; its id in *out. */
kr_status_t kr__params_target_of(const kr_params_t *p, const char *key, const json_t *v, kr_sim_t *from,
                                 uint32_t *out);

#endif
