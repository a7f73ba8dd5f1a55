/* Unit-test helper: model files written from text into a fresh temporary
 * folder and loaded through the real runtime (runtime/model_file.h) with
 * the built-in kinds. In the text, ' stands for " so that models read as
 * JSON inside C strings. Header-only; each test binary includes it once. */
#ifndef KAIROS_TESTS_MODEL_TEXT_H
#define KAIROS_TESTS_MODEL_TEXT_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "runtime/model_file.h"
#include "models/builtin.h"

static char mt_dir[64];
static char mt_path[128];

/* Writes `text` (with ' turned into ") to DIR/model.json; returns its path. */
static const char *mt_write(const char *text)
{
    if (!mt_dir[0]) {
        snprintf(mt_dir, sizeof mt_dir, "/tmp/kairos_mf_XXXXXX");
        cr_assert(mkdtemp(mt_dir), "mkdtemp");
    }
    snprintf(mt_path, sizeof mt_path, "%s/model.json", mt_dir);
    FILE *fp = fopen(mt_path, "w");
    cr_assert(fp);
    for (const char *c = text; *c; c++) fputc(*c == '\'' ? '"' : *c, fp);
    cr_assert_eq(fclose(fp), 0);
    return mt_path;
}

/* Removes what mt_write made (a Criterion .fini). */
static void mt_cleanup(void)
{
    if (!mt_dir[0]) return;
    unlink(mt_path);
    rmdir(mt_dir);
    mt_dir[0] = '\0';
}

/* Loads a model file from text with the built-in kinds and the --set
 * overrides given as further arguments, NULL-terminated. */
static inline kr__model_file_t *mt_load(const char *text, ...)
{
    const char *sets[16];
    size_t n = 0;
    va_list ap;
    va_start(ap, text);
    for (const char *s; (s = va_arg(ap, const char *)) && n < 16;) sets[n++] = s;
    va_end(ap);
    mt_write(text);
    return kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path, .sets = sets, .set_count = n,
                                                       .register_builtin = kr__models_register_builtin });
}

/* The text of examples/NAME (the tests run from the source root, or from
 * build/), for mt_write: it must hold no ' (mt_write turns them into "). */
static inline const char *mt_read_example(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "examples/%s", name);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(path, sizeof path, "../examples/%s", name);
        fp = fopen(path, "r");
    }
    cr_assert_not_null(fp, "examples/%s not found", name);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    for (char *c = text; *c; c++) cr_assert_neq(*c, '\'', "the example has no ' (mt_write turns them into \")");
    return text;
}

/* Asserts the last error is exactly one line "FILE: JSONPATH: expected
 * EXPECTED, found FOUND" for the file mt_write made, with status `st`. */
static void mt_expect(kr_status_t st, const char *jpath, const char *expected, const char *found)
{
    const char *e = kr_last_error();
    cr_assert_eq(kr_last_status(), st, "status %d for: %s", (int)kr_last_status(), e);
    cr_assert_null(strchr(e, '\n'), "one line: %s", e);
    char want[4096];
    snprintf(want, sizeof want, "%s: %s: expected %s, found %s", mt_path, jpath, expected, found);
    cr_assert_str_eq(e, want);
}

#endif
