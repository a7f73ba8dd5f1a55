/* A model file's emulation settings: an emulation entry's "emulation"
 * object (docs/model-file.md, "Emulation") and `kairos run --replay`,
 * checked when the file loads and turned into the simulator's
 * kr_emulation_desc_t when the rank that runs it builds it. Not public
 * API. */
#ifndef KAIROS_RUNTIME_EMULATION_SETTINGS_H
#define KAIROS_RUNTIME_EMULATION_SETTINGS_H

#include "kairos/emulation.h"
#include "runtime/model_file.h"

/* Checks entry e's settings (the JSON at simulators[e->index].emulation). */
kr_status_t kr__emulation_settings_check(const kr__model_file_t *f, const kr__sim_entry_t *e, json_t *settings);

/* Refuses an emulation file (a log, an input pipe, an output, a replayed
 * log) that is the model file or another one of them: a log written over
 * the model file or over another gateway's replayed log, two logs
 * interleaved, an output looping back into its own input. A gateway may
 * replay its own log (it then writes none). After --replay. */
kr_status_t kr__emulation_settings_distinct(const kr__model_file_t *f);

/* The files an emulation names: its log, input pipe, output and replayed
 * log (--replay's before the model file's). */
enum { KR__EMULATION_FILES = 4 };
extern const char *const kr__emulation_file_keys[KR__EMULATION_FILES]; /* "log", "input.pipe", ... */
/* File k of entry e as a path from the working folder (malloc'd), or NULL
 * when the entry names none. */
char *kr__emulation_file(const kr__model_file_t *f, const kr__sim_entry_t *e, size_t k);

/* Applies `--replay NAME=LOG` (LOG relative to the working folder). */
kr_status_t kr__emulation_settings_replay(kr__model_file_t *f, const char *name_eq_log);

/* The description of entry e's simulator; the strings it points to live in
 * `s` until kr__emulation_settings_free. */
typedef struct kr__emulation_settings {
    kr_emulation_desc_t desc;
    char *log, *replay, *pipe, *output, *host;
} kr__emulation_settings_t;
kr_status_t kr__emulation_settings_desc(const kr__model_file_t *f, const kr__sim_entry_t *e,
                                        kr__emulation_settings_t *s);
void kr__emulation_settings_free(kr__emulation_settings_t *s);

#endif
