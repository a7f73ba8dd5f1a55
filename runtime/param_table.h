/* Declared parameters (kairos/param.h): checking a kind's table when it is
 * registered, and reading an entry's "params" into a simulator's state
 * before the kind's setup. Not public API. */
#ifndef KAIROS_RUNTIME_PARAM_TABLE_H
#define KAIROS_RUNTIME_PARAM_TABLE_H

#include <jansson.h>
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

#endif
