/* An event payload described by its type's fields (kr_event_type_desc_t's
 * `fields`) as the JSON object {field: value} and back: what the gateway
 * kind sends and accepts (docs/emulation.md, "Payloads"). */
#ifndef KAIROS_MODELS_PAYLOAD_JSON_H
#define KAIROS_MODELS_PAYLOAD_JSON_H

#include <jansson.h>
#include <kairos/kairos.h>

/* The payload as a new JSON object (NULL when out of memory). */
json_t *kr__payload_to_json(const kr_field_t *fields, const void *payload);

/* Fills `payload` (size bytes, zeroed first) from `data`: an object whose
 * keys are fields, or null for all zeros. NULL when it fits; otherwise the
 * reason, in `why`. */
const char *kr__payload_from_json(const kr_field_t *fields, size_t size, const json_t *data, void *payload,
                                  char *why, size_t why_cap);

#endif
