/* The runtime's part of a kind's declared pieces when a model file is
 * built (kind_build.c). Not public API. */
#ifndef KAIROS_RUNTIME_KIND_BUILD_H
#define KAIROS_RUNTIME_KIND_BUILD_H

#include "runtime/model_file.h"

/* At kr_kind_register: the declared parts are consistent. */
kr_status_t kr__kind_check(const kr_kind_desc_t *kind);

/* Once per model, before simulators are added: every kind's events,
 * register_types and state type, in the order kinds first appear. A type
 * two kinds define differently fails naming both kinds. */
kr_status_t kr__kinds_register_types(const kr__model_file_t *f, kr_model_t *m);

/* On every rank, for every simulator as it is added (from entry e): the
 * sync-events its kind declares it receives (kr_kind_desc_t.receives; an
 * empty list: none, a region's exchanges aside), so that a sender on any
 * rank is checked against them. */
kr_status_t kr__kind_declare_receives(const kr__model_file_t *f, const kr__sim_entry_t *e, const kr_kind_desc_t *kind,
                                      kr_sim_t *sim);

/* The formalism of entry `index` is one the kind allows (a kind that
 * declares its parts; an older kind checks in its setup): the model file
 * checks it where it reads the entry, before the time step it implies. */
kr_status_t kr__kind_check_formalism(const kr__model_file_t *f, size_t index, const kr_kind_desc_t *kind,
                                     kr_formalism_t formalism);
/* Before the kind's setup on a simulator this rank runs: its formalism
 * (when the kind declares a set), its state, its step callback, its
 * declared parameters. */
kr_status_t kr__kind_prepare_sim(const kr__model_file_t *f, const kr__sim_entry_t *e, const kr_kind_desc_t *kind,
                                 kr_sim_t *sim, kr_params_t *params);

#endif
