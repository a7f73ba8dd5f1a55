/* Fuzz target: the model-file loader and builder (runtime/model_file.c)
 * with the built-in kinds. Any bytes must give a built model or one clean
 * error (KR_ERR_INVALID_ARG, KR_ERR_IO or KR_ERR_NOMEM with a message),
 * never a crash, a leak or a hang. The model is built, not run.
 *
 * Two kinds of input are skipped, as outside what this target looks for:
 * a file naming "plugins" (they are dlopen()ed: arbitrary shared objects
 * are not input the loader can check), and large models: more than 256
 * simulators after "count" and "regions", or an entry whose replicas times
 * every number >= 1 in its "params" exceed 2^19 (a kind asked for 10^9
 * agents). Their scale is the subject of the large and hostile input tests
 * of issue 16 (tests/cli/test_cli_hostile.c), not of a fuzzer with 10 s
 * per input. The first long run of this target found that building 85
 * replicas with a wildcard all-to-all dependency took 12 s: the duplicate
 * check was quadratic in the edges (bench/README.md, "Fuzzing (issue
 * 16)"); it is linear now, and 256 replicas all-to-all (65,280 edges)
 * build in well under a second.
 */
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

#define MAX_SIMS 256.0
#define MAX_ENTRY 524288.0 /* 2^19 */

static char dir[64], path[128];

static void cleanup(void)
{
    unlink(path);
    rmdir(dir);
}

/* The product of max(1, |x|) over every number under v (and NaN, infinite
 * or huge values as too large). */
static double weight(json_t *v)
{
    if (json_is_number(v)) {
        double x = fabs(json_number_value(v));
        return x >= 1 ? x : x >= 0 ? 1 : INFINITY;
    }
    double w = 1;
    size_t i;
    json_t *x;
    const char *k;
    if (json_is_array(v)) json_array_foreach(v, i, x) w *= weight(x);
    if (json_is_object(v)) json_object_foreach(v, k, x) w *= weight(x);
    return w;
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
    double total = 0;
    size_t i;
    if (json_is_array(sims))
        json_array_foreach(sims, i, s) {
            if (!json_is_object(s)) continue;
            double replicas = weight(json_object_get(s, "count")) * weight(json_object_get(s, "regions"));
            total += replicas;
            skip = skip || !(replicas * weight(json_object_get(s, "params")) <= MAX_ENTRY);
        }
    json_decref(root);
    return skip || !(total <= MAX_SIMS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/kairos_fuzz_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(path, sizeof path, "%s/model.json", dir);
        atexit(cleanup);
    }
    bool verbose = getenv("KAIROS_FUZZ_VERBOSE") != NULL;
    if (skipped(data, size)) {
        if (verbose) fprintf(stderr, "fuzz_model_file: skipped (plugins, or too large)\n");
        return -1; /* not added to the corpus */
    }
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp)) abort();
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = path,
                                                                      .register_builtin = kr__models_register_builtin });
    if (!f) {
        if (verbose) fprintf(stderr, "fuzz_model_file: refused: %s\n", kr_last_error());
        /* one clean error */
        if (kr_last_status() == KR_OK || !kr_last_error()[0]) abort();
        return 0;
    }
    kr_model_t *m = kr__model_file_build(f, NULL);
    if (verbose) fprintf(stderr, "fuzz_model_file: %s %s\n", m ? "built" : "refused:", m ? "" : kr_last_error());
    if (!m) {
        if (kr_last_status() == KR_OK || !kr_last_error()[0]) abort();
    } else {
        kr_model_destroy(m);
    }
    kr__model_file_free(f);
    return 0;
}
