/* The checkpoint of a replications run or a sweep (docs/replications.md,
 * "Long jobs"): the records of the replications that finished, so that a
 * restart runs only the others and pools exactly what an uninterrupted
 * run pools.
 *
 * One JSON file, DIR/replications.json, written as .partial, fsynced and
 * renamed, so that a file found there is always whole:
 *   {"format": "kairos-replications", "version": 2, "plan": "<16 hex>",
 *    "items": N, "done": [record, ...], "digest": "<16 hex>"}
 * where a record is what kr__replications_run gathers for a work item
 * (with its "_item"). "plan" is a digest of everything that decides the
 * records: every point's model file as loaded (its outputs aside) and the
 * number of replications; a restart of another plan is refused. "digest"
 * is of "done" as written: a record changed by hand (a simulator renamed,
 * a figure, an item moved) would have gone into the CSV as if computed.
 * Version 1, without the digest, is still read (a job checkpointed before
 * it came goes on). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/error.h"
#include "base/file.h"
#include "runtime/replications.h"

#define FILE_NAME "replications.json"
#define FORMAT "kairos-replications"

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
    return h;
}

uint64_t kr__replications_plan_digest(const kr__replications_desc_t *d)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    char head[64];
    snprintf(head, sizeof head, "%zu points x %u", d->point_count, d->replications);
    h = fnv1a(h, head);
    for (size_t p = 0; p < d->point_count; p++) {
        /* the run part may change on a restart, as for one run's checkpoint:
         * outputs, algorithm, mapping */
        json_t *copy = json_deep_copy(d->points[p]->root);
        json_object_del(copy, "outputs");
        json_object_del(copy, "sync");
        json_object_del(copy, "mapping");
        char *text = copy ? json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) : NULL;
        h = fnv1a(h, text ? text : "?");
        h = fnv1a(h, "\n");
        free(text);
        json_decref(copy);
    }
    return h;
}

/* The records' digest: their compact text, keys sorted. */
static kr_status_t done_digest(const json_t *done, char hex[17])
{
    char *text = json_dumps(done, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    if (!text) return kr__fail(KR_ERR_NOMEM, "out of memory");
    snprintf(hex, 17, "%016" PRIx64, fnv1a(UINT64_C(0xcbf29ce484222325), text));
    free(text);
    return KR_OK;
}

static char *path_in(const char *dir)
{
    size_t n = strlen(dir) + sizeof FILE_NAME + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, FILE_NAME);
    return p;
}

kr_status_t kr__replications_checkpoint_foreign(const char *dir, uint64_t plan)
{
    char *file = path_in(dir);
    if (!file) return kr__fail(KR_ERR_NOMEM, "out of memory");
    bool odd;
    FILE *in = kr__fopen_regular(file, &odd);
    json_t *root = in ? json_loadf(in, 0, NULL) : NULL;
    if (in) fclose(in);
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, plan);
    const char *theirs = json_string_value(json_object_get(root, "plan"));
    kr_status_t st = KR_OK;
    /* (one that does not read is no other job's to lose) */
    if (theirs && strcmp(theirs, hex))
        st = kr__fail(KR_ERR_INVALID_ARG, "%s: expected no checkpoint or one of these replications, found one of "
                      "other replications (plan %.16s, these %s): give this run a --checkpoint-dir of its own (its "
                      "checkpoint would replace it)", file, theirs, hex);
    json_decref(root);
    free(file);
    return st;
}

kr_status_t kr__replications_checkpoint_read(const char *path, uint64_t plan, uint64_t items, json_t **done)
{
    *done = NULL;
    struct stat sb;
    char *file = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? path_in(path) : strdup(path);
    if (!file) return kr__fail(KR_ERR_NOMEM, "out of memory");
    json_error_t err = { .text = "" };
    bool odd;
    FILE *in = kr__fopen_regular(file, &odd);
    json_t *root = in ? json_loadf(in, 0, &err) : NULL;
    if (in) fclose(in);
    if (odd) snprintf(err.text, sizeof err.text, "not a regular file");
    kr_status_t st = KR_OK;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, plan);
    char manifest[4096];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    if (!root && access(file, F_OK) && !access(manifest, F_OK)) {
        st = kr__fail(KR_ERR_INVALID_ARG, "--restart %s: expected with --replications the checkpoint of a replications "
                      "run or a sweep (%s), found the checkpoint of one run", path, FILE_NAME);
    } else if (!root) {
        st = access(file, F_OK) ? kr__fail(KR_ERR_IO, "--restart %s: expected the checkpoint of a replications run or "
                                           "a sweep (%s), found no such file", path, FILE_NAME)
                                : kr__fail(KR_ERR_CORRUPT, "%s: line %d: expected JSON, found: %s", file, err.line,
                                           err.text);
    } else if (!json_is_string(json_object_get(root, "format")) ||
               strcmp(json_string_value(json_object_get(root, "format")), FORMAT)) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: format: expected \"%s\", found something else", file, FORMAT);
    } else if (json_integer_value(json_object_get(root, "version")) != 1 &&
               json_integer_value(json_object_get(root, "version")) != 2) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: version: expected 1 or 2, found %s", file,
                      json_is_integer(json_object_get(root, "version")) ? "another" : "none");
    } else if (!json_is_string(json_object_get(root, "plan")) ||
               strcmp(json_string_value(json_object_get(root, "plan")), hex)) {
        st = kr__fail(KR_ERR_MISMATCH, "%s: plan: the checkpoint is of other replications (the model, a --set, a "
                      "--vary or --replications differ: plan %s here, %s there)", file, hex,
                      json_is_string(json_object_get(root, "plan")) ? json_string_value(json_object_get(root, "plan"))
                                                                    : "none");
    } else if (json_integer_value(json_object_get(root, "items")) != (json_int_t)items) {
        /* (the plan counts them: only an edited file gets here) */
        st = kr__fail(KR_ERR_CORRUPT, "%s: items: expected %" PRIu64 " (the plan's), found another number", file,
                      items);
    } else if (!json_is_array(json_object_get(root, "done"))) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: done: expected an array of records, found none", file);
    } else if (json_integer_value(json_object_get(root, "version")) == 2) {
        char sum[17];
        const char *was = json_string_value(json_object_get(root, "digest"));
        st = done_digest(json_object_get(root, "done"), sum);
        if (!st && (!was || strcmp(was, sum)))
            st = kr__fail(KR_ERR_CORRUPT, "%s: digest: expected %s (what done gives), found %s: the records were "
                          "changed after they were written", file, sum, was ? was : "none");
    }
    size_t i;
    json_t *rec;
    json_int_t last = -1;
    json_array_foreach(st ? NULL : json_object_get(root, "done"), i, rec) {
        json_t *item = json_object_get(rec, "_item");
        /* (written in item order, each once) */
        if (!json_is_object(rec) || !json_is_integer(item) || json_integer_value(item) <= last ||
            (uint64_t)json_integer_value(item) >= items || !json_is_array(json_object_get(rec, "simulators"))) {
            st = kr__fail(KR_ERR_CORRUPT, "%s: done[%zu]: expected a record with an _item from %lld to %" PRIu64
                          " and its simulators, found something else", file, i, (long long)last + 1, items - 1);
            break;
        }
        last = json_integer_value(item);
    }
    if (!st) *done = json_incref(json_object_get(root, "done"));
    json_decref(root);
    free(file);
    return st;
}

kr_status_t kr__replications_checkpoint_write(const char *dir, uint64_t plan, uint64_t items, json_t *done)
{
    if (mkdir(dir, 0777) && errno != EEXIST)
        return kr__fail(KR_ERR_IO, "%s: cannot make the checkpoint folder: %s", dir, strerror(errno));
    char *file = path_in(dir);
    size_t n = file ? strlen(file) + 16 : 0;
    char *partial = file ? malloc(n) : NULL;
    if (!partial) {
        free(file);
        return kr__fail(KR_ERR_NOMEM, "out of memory");
    }
    snprintf(partial, n, "%s.partial", file);
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, plan);
    char sum[17];
    kr_status_t st = done_digest(done, sum);
    json_t *root = st ? NULL : json_pack("{s:s, s:i, s:s, s:I, s:O, s:s}", "format", FORMAT, "version", 2, "plan", hex,
                                         "items", (json_int_t)items, "done", done, "digest", sum);
    if (!st && !root) st = kr__fail(KR_ERR_NOMEM, "out of memory");
    FILE *fp = st ? NULL : fopen(partial, "w");
    if (!st && !fp) st = kr__fail(KR_ERR_IO, "%s: cannot write: %s", partial, strerror(errno));
    if (fp) {
        if (kr__json_dump_to(root, fp, JSON_COMPACT | JSON_REAL_PRECISION(17)) || fflush(fp) || fsync(fileno(fp)))
            st = kr__fail(KR_ERR_IO, "%s: write failed: %s", partial, strerror(errno));
        if (fclose(fp) && !st) st = kr__fail(KR_ERR_IO, "%s: write failed: %s", partial, strerror(errno));
    }
    if (!st && rename(partial, file)) st = kr__fail(KR_ERR_IO, "%s: cannot rename into place: %s", file, strerror(errno));
    if (st) unlink(partial);
    json_decref(root);
    free(partial);
    free(file);
    return st;
}
