/* Fuzz target: the model-file loader and builder (runtime/model_file.c)
 * with the built-in kinds. Any bytes must give a built model or one clean
 * error (KR_ERR_INVALID_ARG, KR_ERR_IO or KR_ERR_NOMEM with a message),
 * never a crash, a leak or a hang. The model is built, not run.
 *
 * Two kinds of input are skipped, as outside what this target looks for:
 * a file naming "plugins" (they are dlopen()ed: arbitrary shared objects
 * are not input the loader can check), and files whose "count", "regions"
 * or "params" hold a number beyond +-4096 (their scale, a model of 10^6
 * simulators or a kind asked for 10^9 agents, is the subject of the large
 * and hostile input tests, not of a fuzzer with a 10 s limit per input). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "models/builtin.h"
#include "runtime/model_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIMIT 4096.0

static char dir[64], path[128];

/* True if a number anywhere under v lies beyond +-LIMIT. */
static bool too_large(json_t *v)
{
    if (json_is_number(v)) return !(fabs(json_number_value(v)) <= LIMIT);
    size_t i;
    json_t *x;
    const char *k;
    if (json_is_array(v)) json_array_foreach(v, i, x) if (too_large(x)) return true;
    if (json_is_object(v)) json_object_foreach(v, k, x) if (too_large(x)) return true;
    return false;
}

static bool skipped(const uint8_t *data, size_t size)
{
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return false; /* the loader refuses it: exercise that */
    }
    bool skip = json_object_get(root, "plugins") != NULL;
    json_t *sims = json_object_get(root, "simulators"), *s;
    size_t i;
    if (json_is_array(sims))
        json_array_foreach(sims, i, s) {
            if (!json_is_object(s)) continue;
            skip = skip || too_large(json_object_get(s, "count")) || too_large(json_object_get(s, "regions")) ||
                   too_large(json_object_get(s, "params"));
        }
    json_decref(root);
    return skip;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/kairos_fuzz_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(path, sizeof path, "%s/model.json", dir);
    }
    if (skipped(data, size)) return -1; /* not added to the corpus */
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp)) abort();
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = path,
                                                                      .register_builtin = kr__models_register_builtin });
    if (!f) {
        /* one clean error */
        if (kr_last_status() == KR_OK || !kr_last_error()[0]) abort();
        return 0;
    }
    kr_model_t *m = kr__model_file_build(f, NULL);
    if (!m) {
        if (kr_last_status() == KR_OK || !kr_last_error()[0]) abort();
    } else {
        kr_model_destroy(m);
    }
    kr__model_file_free(f);
    return 0;
}
