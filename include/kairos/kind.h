/* Model kinds: what a simulator entry of a model file builds.
 *
 * A model file names a kind for every simulator ("kind": "sqss"). A kind
 * declares, in its kr_kind_desc_t, what the runtime does for it
 * (docs/tutorial.md): its per-simulator state (kairos/state.h), its
 * parameters (kairos/param.h: read from the entry's "params" into the
 * state before setup), its event handlers (kairos/handler.h) and the
 * formalisms an entry may choose. The runtime then digests each
 * simulator's world and state for the checksum and writes the statistics
 * of the state's slots into the stats file; the kind's code is its setup
 * (first entities and events), its handlers and callbacks, and a report or
 * digest only for figures or state kept elsewhere. `kairos kinds` lists
 * the kinds there are, `kairos kinds NAME` one kind's parameters.
 *
 * Built-in kinds are compiled into kairos (models/); user kinds live in
 * shared objects named in the model file's "plugins". A plugin exports
 *
 *     kr_status_t kairos_plugin_init(kr_kinds_t *kinds);
 *
 * which registers its kinds with kr_kind_register. Kinds must register the
 * same event and component types in the same order on every rank, which
 * they do when registration depends only on the model file; the runtime
 * registers declared events and state types in the order kinds first
 * appear in the model file. Two kinds may register the same component or
 * event type with the same definition (it is one type); a different
 * definition under the same name is an error naming both kinds. */
#ifndef KAIROS_KIND_H
#define KAIROS_KIND_H

#include <stdbool.h>
#include <stdint.h>
#include "kairos/export.h"
#include "kairos/dist.h"
#include "kairos/model.h"
#include "kairos/param.h"
#include "kairos/region.h"
#include "kairos/serializer.h"
#include "kairos/sim.h"
#include "kairos/state.h"
#include "kairos/statistics.h"
#include "kairos/status.h"
#include "kairos/time.h"

KR_BEGIN_DECLS

typedef struct kr_kinds kr_kinds_t;
typedef struct kr_params kr_params_t;
typedef struct kr_report kr_report_t;

typedef struct kr_kind_desc {
    const char *name;               /* as written in model files */
    const char *summary;            /* one line for `kairos kinds` and docs */
    kr_formalism_t formalism;       /* used when the entry names none */
    /* Once per model, before any simulator of this kind is set up: register
     * event types, components and behaviors (kr_model_event_type,
     * kr_component_register on kr_model_registry). Optional. */
    kr_status_t (*register_types)(kr_model_t *model);
    /* Builds one simulator: its first entities and events. Declared params
     * are in its state already; read any other through kr_params_* (a key
     * nobody reads is reported as unknown). Optional for a kind that
     * declares events or on_step. */
    kr_status_t (*setup)(kr_sim_t *sim, const kr_params_t *params);
    /* After the run: figures of the kind's own (kr_report_*), written
     * before the statistics of its state's slots. Optional. */
    void (*report)(kr_sim_t *sim, kr_report_t *report);
    /* After the run: a digest of state kept outside the simulator's world,
     * declared state and ODE state vector (the runtime digests those,
     * kairos/digest.h),
     * added to its part of the checksum. Optional. Must not depend on
     * entity ids or memory addresses. */
    uint64_t (*digest)(kr_sim_t *sim);
    /* After the run: this simulator's part of stats.state_digest, which is
     * the sum (mod 2^64) of the parts of every simulator. Optional; kinds
     * that cut one world into regions return kr_region_state_digest, an
     * order-free digest of their agents, so the sum does not depend on the
     * cut. stats.state_digest appears when some kind has this callback. */
    uint64_t (*state_digest)(kr_sim_t *sim);

    /* ---- the declared parts (docs/tutorial.md); each is optional ---- */
    /* Formalisms an entry may choose with "formalism" besides `formalism`,
     * as a set of KR_FORMALISM_BIT. The runtime refuses any other before
     * setup, in the standard form, for a kind that declares formalisms,
     * state, params or events; a kind that declares none of them checks
     * its own in setup. */
    uint32_t formalisms;
    /* Per-simulator state (kairos/state.h): a zeroed block of state_size
     * bytes, described by state_fields (ending with { 0 }), reached with
     * kr_sim_state. Digested, and its slots reported, by the runtime. */
    size_t state_size;
    const kr_field_t *state_fields;
    /* Parameters (kairos/param.h), ending with { 0 }: parsed, checked and
     * written into the state before setup. */
    const kr_param_t *params;
    /* Event handlers (kairos/handler.h), ending with { 0 }: registered as
     * event types by name before any setup; a type another kind declares
     * with the same definition is shared. */
    const kr_event_type_desc_t *events;
    /* Names of the sync-events whose target side this kind's simulators
     * run, ending with NULL (each declared in some kind's `events` or
     * register_types; kr_sim_receive). A kind may list a type in `events`
     * only to send it, and the type's target side is then another kind's
     * handler: with `receives`, a sync-event of an undeclared type sent to
     * one of these simulators is refused instead of run on the wrong
     * state, and the emulation gateway forwards input to them only for
     * these types (docs/emulation.md). Optional; without it nothing is
     * checked, and the gateway forwards nothing to them. An empty list
     * ({ NULL }) declares that the kind receives none: every sync-event
     * sent to it is refused (a region's exchanges with its neighbours
     * aside, which a region always receives). Not copied (a static table,
     * like the kind's other parts). */
    const char *const *receives;
    /* Agent-based: runs at every time step, before the behaviors'
     * on_update (kr_sim_set_on_step). Optional. */
    void (*on_step)(kr_sim_t *sim);

    /* ---- checkpoints (docs/checkpoint.md); both optional ---- */
    /* Saves (kr_serializer_loading false) or loads what this simulator
     * keeps outside its world, its declared state and its statistics by
     * name; a kind whose changing state is all declared needs none. On a
     * restart, setup runs first (it makes what the code owns: ids, pointers,
     * equations) and the checkpoint then replaces the world, the events,
     * the stream and the declared state; serialize loads last. */
    kr_status_t (*serialize)(kr_sim_t *sim, kr_serializer_t *s);
    /* After a restart, once everything is loaded: what a checkpoint cannot
     * hold (reopening a file). Scheduling events is refused here: the
     * checkpoint holds them all. */
    kr_status_t (*restore)(kr_sim_t *sim);
} kr_kind_desc_t;

#define KR_FORMALISM_BIT(f) (1u << (unsigned)(f))

/* The layout of the public structs a kind compiles in (kr_kind_desc_t and
 * those it points to: params, events, fields, state slots): raised
 * whenever one changes. A kind built against headers of another layout is
 * refused when it registers, instead of running on misread structs. */
#define KR_ABI_VERSION 1

/* What a plug-in built against headers from before KR_ABI_VERSION calls,
 * and a pointer to kr_kind_register gets: refused, with a message saying
 * to call the macro below (which is what code built now calls), declared
 * after this. */
KR_API kr_status_t kr_kind_register(kr_kinds_t *kinds, const kr_kind_desc_t *desc);
/* Registers a kind; refuses a duplicate or empty name, a kind with
 * neither setup nor declared events or on_step (the comment on setup),
 * and a kind built against other headers: kr_kind_register is a macro,
 * passing the ABI version and struct size of the caller's headers. */
KR_API kr_status_t kr_kind_register_abi(kr_kinds_t *kinds, const kr_kind_desc_t *desc, uint32_t abi,
                                        size_t desc_size);
#define kr_kind_register(kinds, ...) /* (variadic: a compound literal's commas) */ \
    kr_kind_register_abi((kinds), (__VA_ARGS__), KR_ABI_VERSION, sizeof(kr_kind_desc_t))

/* The signature of a plugin's entry point, "kairos_plugin_init". */
typedef kr_status_t (*kr_plugin_init_fn)(kr_kinds_t *kinds);
#define KR_PLUGIN_ENTRY "kairos_plugin_init"
/* The entry point a plug-in defines, declared here so that it needs no
 * prototype of its own (-Wmissing-prototypes) and stays visible when the
 * plug-in is built with -fvisibility=hidden. */
KR_API kr_status_t kairos_plugin_init(kr_kinds_t *kinds);

/* ---- reading params ----
 * Each getter leaves *out at `def` when the key is absent and fails with a
 * message naming the file and the JSON path (e.g. "model.json:
 * simulators[2].params.capacity: expected a whole number >= 1, found 2.5")
 * when the value has the wrong type or range. Return that status from the
 * setup; a setup that goes on from a getter's refusal (and so from the
 * default) and returns KR_OK fails all the same, with that message, as
 * the last error it left. */
KR_API kr_status_t kr_params_number(const kr_params_t *p, const char *key, double def, double *out);
/* A whole number within [min, max]. */
KR_API kr_status_t kr_params_int(const kr_params_t *p, const char *key, int64_t def, int64_t min, int64_t max,
                                 int64_t *out);
KR_API kr_status_t kr_params_bool(const kr_params_t *p, const char *key, bool def, bool *out);
/* The string stays valid as long as the model. */
KR_API kr_status_t kr_params_string(const kr_params_t *p, const char *key, const char *def, const char **out);
/* A duration in model units converted to ticks (rounded up, see time.h);
 * negative values are refused. */
KR_API kr_status_t kr_params_duration(const kr_params_t *p, const char *key, kr_time_t def, kr_time_t *out);
/* A distribution in the form of docs/model-file.md ({"dist": ...}, or a
 * bare number: a constant distribution of that value); `def`
 * (may be NULL: the key is then required) when absent. The caller owns
 * *out (kr_dist_fini). */
KR_API kr_status_t kr_params_dist(const kr_params_t *p, const char *key, const kr_dist_desc_t *def, kr_dist_t *out);
KR_API bool kr_params_has(const kr_params_t *p, const char *key);
/* The region cut of this simulator's entry ("regions": [P, Q], see
 * kairos/region.h): a 1 x 1 cut when the entry has none. Fails in the
 * standard form, naming the entry's "regions", when the cut has more
 * columns than `width` or more rows than `height` cells. */
KR_API kr_status_t kr_params_region_cut(const kr_params_t *p, int64_t width, int64_t height, kr_region_cut_t *out);
/* The name of a simulator `from` has a dependency to (so that it may
 * schedule sync-events on it): its id in *out. `def` when absent (NULL:
 * required). Refuses a name that is no simulator of the model, or one
 * without a dependency from `from`, naming both. */
KR_API kr_status_t kr_params_target(const kr_params_t *p, const char *key, const char *def, kr_sim_t *from,
                                    uint32_t *out);
/* The JSON type of a key's value: "number", "string", "boolean", "object",
 * "array" or "null"; NULL when absent. Asking does not count as reading
 * the key (an unread key is still reported as unknown). */
KR_API const char *kr_params_json_type(const kr_params_t *p, const char *key);
/* Reports an error about one parameter in the standard form. */
KR_API kr_status_t kr_params_error(const kr_params_t *p, const char *key, const char *expected, const char *found);
/* Reports an error about the entry itself rather than its params, e.g. key
 * "formalism": "FILE: simulators[2].formalism: expected X, found Y". */
KR_API kr_status_t kr_params_entry_error(const kr_params_t *p, const char *key, const char *expected,
                                         const char *found);

/* ---- reporting ----
 * Figures appear under the simulator's "stats" in the stats file, in the
 * order given. */
KR_API void kr_report_number(kr_report_t *r, const char *name, double value);
KR_API void kr_report_int(kr_report_t *r, const char *name, int64_t value);
KR_API void kr_report_string(kr_report_t *r, const char *name, const char *value);
/* A per-step figure: values[s] at step s = 0 .. n-1, fixed-point with
 * `decimals` decimal digits (0..9) so that sums are exact and do not depend
 * on their order. The run adds it up over the simulators of its model-file
 * entry (the regions of one world, the replicas of a count), step by
 * step, into stats.totals.ENTRY.NAME (the value of the last step)
 * and, with --series FILE (outputs.series), into a CSV with one row per
 * step. It does not appear under the simulator's own stats. */
KR_API void kr_report_steps(kr_report_t *r, const char *name, const int64_t *values, size_t n, unsigned decimals);

/* ---- into a kind's report ----
 * kr_report_tally writes NAME_count, NAME_mean, NAME_sd, NAME_min, NAME_max;
 * kr_report_histogram writes NAME as {"lo", "hi", "counts", "under", "over"};
 * kr_report_series writes NAME as {"time": [...], "value": [...]} (times in
 * model units). */
KR_API void kr_report_tally(kr_report_t *r, const char *name, const kr_tally_t *t);
KR_API void kr_report_histogram(kr_report_t *r, const char *name, const kr_histogram_t *h);
KR_API void kr_report_series(kr_report_t *r, const char *name, const double *time, const double *value, size_t n);

KR_END_DECLS

#endif
