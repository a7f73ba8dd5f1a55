/* Large and hostile model files through the kairos command (KAIROS_BIN),
 * each generated here in a temporary folder (docs/model-file.md,
 * "Limits"): what fits is built in time linear in simulators plus
 * dependencies (an absolute bound a quadratic build misses by far), what
 * does not is refused in one line, exit 2, before anything is expanded
 * (a bound on the child's memory). And every example runs with each of its
 * counts set to 1 (a wildcard between the replicas of one entry is no edge
 * when there is one replica). */
#include <sys/resource.h>
#include <time.h>
#include "spawn.h"

TestSuite(hostile, .fini = cli_cleanup);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The largest resident set of the children waited for so far, in MB. Each
 * Criterion test runs in a process of its own, so this is this test's. */
static long children_peak_mb(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return ru.ru_maxrss / 1024;
}

/* A sanitizer build (this test is built with the same options as kairos)
 * runs several times slower; the bounds stay far below what a quadratic
 * build takes (minutes for 10^5 simulators). */
static double slack(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 6.0;
#else
    return 1.0;
#endif
}

static FILE *create(const char *path)
{
    FILE *fp = fopen(path, "w");
    cr_assert(fp, "create %s", path);
    return fp;
}

/* Exit 2, nothing on stdout, one line on stderr that starts with
 * "kairos: FILE: " + want. */
static void expect_refused(cli_result_t r, const char *file, const char *want)
{
    cr_assert_eq(r.status, 2, "status %d, stderr: %.300s", r.status, r.err);
    cr_assert_str_empty(r.out, "nothing on stdout: %.300s", r.out);
    cr_assert_eq(cli_lines(r.err), 1, "one line: %.600s", r.err);
    char line[4096];
    snprintf(line, sizeof line, "kairos: %s: %s", file, want);
    cr_assert(!strncmp(r.err, line, strlen(line)), "got:  %.600s\nwant: %s", r.err, line);
    cr_assert_leq(strlen(r.err), 1000, "the line shows a value's first bytes only");
    cli_free(&r);
}

/* ---- large files that fit ---- */

/* 10^5 simulators (the limit), each an entry of its own, in a ring of 10^5
 * dependencies named one by one, mapped by METIS on 4 ranks: validate loads,
 * maps and builds it (every simulator local) in seconds. */
Test(hostile, hundred_thousand_simulators_in_linear_time, .timeout = 300)
{
    const char *path = cli_path("many.json");
    FILE *fp = create(path);
    const int n = 100000;
    fprintf(fp, "{\"end_time\": 1, \"mapping\": \"metis\", \"simulators\": [");
    for (int i = 0; i < n; i++) fprintf(fp, "%s{\"name\": \"s%d\", \"kind\": \"bath\", \"time_step\": 1}", i ? "," : "", i);
    fprintf(fp, "], \"dependencies\": [");
    for (int i = 0; i < n; i++)
        fprintf(fp, "%s{\"from\": \"s%d\", \"to\": \"s%d\", \"promise\": 1}", i ? "," : "", i, (i + 1) % n);
    fprintf(fp, "]}\n");
    cr_assert_eq(fclose(fp), 0);
    double t0 = now();
    cli_result_t r = kairos("validate", path, "--ranks", "4", NULL);
    double took = now() - t0;
    cr_assert_eq(r.status, 0, "%.500s", r.err);
    cr_assert(strstr(r.out, "simulators (100000):\n"), "%.300s", r.out);
    cr_assert(strstr(r.out, "dependencies (100000):\n"));
    cr_assert(strstr(r.out, "  s99999 -> s0  promise 1\n"));
    cr_assert(strstr(r.out, "\n  rank 3: s"), "METIS used every rank");
    cli_free(&r);
    cr_assert_lt(took, 30 * slack(), "10^5 simulators took %.1f s", took);
}

/* 10^6 dependencies: one entry of 1000 replicas, all to all (999000
 * edges), mapped by METIS on 4 ranks. */
Test(hostile, million_dependencies_in_linear_time, .timeout = 300)
{
    const char *path = cli_path("edges.json");
    cli_write(path, "{'end_time': 1, 'mapping': 'metis', 'simulators': [{'name': 'p', 'kind': 'phold', 'count': 1000}],"
                    " 'dependencies': [{'from': 'p[*]', 'to': 'p[*]', 'promise': 0.1}]}");
    double t0 = now();
    cli_result_t r = kairos("validate", path, "--ranks", "4", NULL);
    double took = now() - t0;
    cr_assert_eq(r.status, 0, "%.500s", r.err);
    cr_assert(strstr(r.out, "dependencies (999000):\n"), "%.300s", r.out);
    cr_assert(strstr(r.out, "  p[999] -> p[998]  promise 0.1\n"));
    cli_free(&r);
    cr_assert_lt(took, 30 * slack(), "10^6 dependencies took %.1f s", took);
}

/* A 100 MB string where any length is fine (a description) is read and
 * the file validated; as a name, a key of the file or a key of a kind's
 * params it is refused, and the line shows its first bytes. */
Test(hostile, hundred_megabyte_strings, .timeout = 300)
{
    const char *path = cli_path("big.json");
    const size_t big = 100u << 20;
    char *chunk = malloc(1 << 20);
    cr_assert(chunk);
    memset(chunk, 'a', 1 << 20);
    const char *b = "{\"name\": \"b\", \"kind\": \"bath\", \"time_step\": 1";
    const char *a57 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (int where = 0; where < 4; where++) {
        FILE *fp = create(path);
        const char *before[] = { "{\"end_time\": 1, \"description\": \"",
                                 "{\"end_time\": 1, \"simulators\": [{\"kind\": \"bath\", \"time_step\": 1, \"name\": \"",
                                 "{\"end_time\": 1, \"", "{\"end_time\": 1, \"simulators\": [{\"name\": \"b\", "
                                 "\"kind\": \"bath\", \"time_step\": 1, \"params\": {\"" };
        fputs(before[where], fp);
        for (size_t k = 0; k < big >> 20; k++) cr_assert_eq(fwrite(chunk, 1, 1 << 20, fp), 1u << 20);
        if (where == 0) fprintf(fp, "\", \"simulators\": [%s}]}\n", b);
        if (where == 1) fprintf(fp, "\"}]}\n");
        if (where == 2) fprintf(fp, "\": 1, \"simulators\": [%s}]}\n", b);
        if (where == 3) fprintf(fp, "\": 1}}]}\n");
        cr_assert_eq(fclose(fp), 0);
        double t0 = now();
        cli_result_t r = kairos("validate", path, NULL);
        double took = now() - t0;
        char want[600];
        if (where == 0) {
            cr_assert_eq(r.status, 0, "%.500s", r.err);
            cli_free(&r);
        } else if (where == 1) {
            snprintf(want, sizeof want, "simulators[0].name: expected a name of at most 233 bytes, found \"%.56s...",
                     a57);
            expect_refused(r, path, want);
        } else if (where == 2) {
            snprintf(want, sizeof want, "%s...: expected one of the keys ", a57);
            cr_assert(strstr(r.err, "found the unknown key \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"\n"),
                      "%.300s", r.err);
            expect_refused(r, path, want);
        } else {
            snprintf(want, sizeof want, "simulators[0].params.%s...: expected a parameter of kind 'bath' (", a57);
            expect_refused(r, path, want);
        }
        cr_assert_lt(took, 20 * slack(), "a 100 MB string took %.1f s", took);
    }
    free(chunk);
    unlink(path);
    cr_assert_lt(children_peak_mb(), 1024, "%ld MB for a 100 MB string", children_peak_mb());
}

/* ---- refused before expansion ---- */

/* 1,000-deep nesting parses (the JSON parser's limit is 2048) and is
 * refused where it stands; 100,000-deep is refused by the parser. */
Test(hostile, deep_nesting, .timeout = 120)
{
    const char *path = cli_path("deep.json");
    const int depths[] = { 1000, 100000 };
    double t0 = now();
    for (int k = 0; k < 2; k++) {
        for (int in_params = 0; in_params < 2; in_params++) {
            FILE *fp = create(path);
            fprintf(fp, "{\"end_time\": 1, \"simulators\": [{\"name\": \"b\", \"kind\": \"bath\", \"time_step\": 1, "
                        "\"params\": {\"capacity\": 8%s", in_params ? ", \"deep\": " : "}}], \"description\": ");
            for (int i = 0; i < depths[k]; i++) fputc('[', fp);
            for (int i = 0; i < depths[k]; i++) fputc(']', fp);
            fprintf(fp, in_params ? "}}]}\n" : "}\n");
            cr_assert_eq(fclose(fp), 0);
            cli_result_t r = kairos("validate", path, NULL);
            char want[600];
            if (depths[k] > 2048)
                snprintf(want, sizeof want, "line 1 column ");
            else if (in_params)
                snprintf(want, sizeof want, "simulators[0].params.deep: expected a parameter of kind 'bath' (");
            else
                snprintf(want, sizeof want, "description: expected a string, found %.57s...",
                         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
            if (depths[k] > 2048) cr_assert(strstr(r.err, "expected valid JSON, found maximum parsing depth"), "%s", r.err);
            expect_refused(r, path, want);
        }
    }
    double took = now() - t0;
    cr_assert_lt(took, 10 * slack(), "refusing took %.1f s", took);
    cr_assert_lt(children_peak_mb(), 512, "%ld MB to refuse", children_peak_mb());
}

/* A count of 10^12, a cut of 10^6 x 10^6, and counts that together pass
 * 10^5 simulators: refused at once, in one line, in little memory. */
Test(hostile, huge_counts_and_cuts, .timeout = 120)
{
    const char *path = cli_path("huge.json");
    cli_write(path, "{'end_time': 1, 'simulators': [{'name': 'b', 'kind': 'bath', 'time_step': 1, "
                    "'count': 1000000000000}]}");
    double t0 = now();
    expect_refused(kairos("validate", path, NULL), path,
                   "simulators[0].count: expected a whole number from 1 to 100000, found 1000000000000");
    cli_write(path, "{'end_time': 1, 'simulators': [{'name': 'w', 'kind': 'walkers', 'formalism': 'agent-based', "
                    "'time_step': 1, 'regions': [1000000, 1000000]}]}");
    expect_refused(kairos("validate", path, NULL), path,
                   "simulators[0].regions: expected [P, Q], two whole numbers >= 1 with P x Q <= 4096, found "
                   "[1000000,1000000]");
    cli_write(path, "{'end_time': 1, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1, 'count': 60000},"
                    " {'name': 'b', 'kind': 'bath', 'time_step': 1, 'count': 60000}]}");
    expect_refused(kairos("validate", path, NULL), path,
                   "simulators[1].count: expected at most 100000 simulators in a model file (60000 before this "
                   "entry), found 60000");
    double took = now() - t0;
    cr_assert_lt(took, 10 * slack(), "refusing took %.1f s", took);
    cr_assert_lt(children_peak_mb(), 512, "%ld MB to refuse", children_peak_mb());
}

/* 10^5 replicas all to all would be 10^10 dependencies: refused from the
 * size of the product, before one is made. */
Test(hostile, wildcard_of_ten_billion_edges, .timeout = 120)
{
    const char *path = cli_path("wild.json");
    cli_write(path, "{'end_time': 1, 'simulators': [{'name': 'p', 'kind': 'phold', 'count': 100000}],"
                    " 'dependencies': [{'from': 'p[*]', 'to': 'p[*]', 'promise': 0.5}]}");
    double t0 = now();
    expect_refused(kairos("validate", path, NULL), path,
                   "dependencies[0]: expected at most 10000000 dependencies in a model file (0 before, 9999900000 "
                   "more here), found {\"from\":\"p[*]\",\"to\":\"p[*]\",\"promise\":0.5}");
    double took = now() - t0;
    cr_assert_lt(took, 10 * slack(), "refusing took %.1f s", took);
    cr_assert_lt(children_peak_mb(), 512, "%ld MB to refuse", children_peak_mb());
}

/* ---- count 1 ---- */

/* Every example with each entry that has a count set to 1 (and each cut to
 * [1, 1]) runs: a wildcard between one replica and itself is no edge. */
Test(hostile, every_example_runs_with_count_one, .timeout = 300)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    cr_assert(root);
    const char *examples[] = { "factory.json", "mm1.json", "sqss.json", "phold.json", "rows.json", "walkers.json",
                               "walkers-large.json", "ecology.json", "ecology-large.json" };
    int changed = 0;
    for (size_t x = 0; x < sizeof examples / sizeof *examples; x++) {
        char model[1024];
        snprintf(model, sizeof model, "%s/examples/%s", root, examples[x]);
        json_error_t e;
        json_t *doc = json_load_file(model, 0, &e);
        cr_assert(doc, "%s: %s", model, e.text);
        char sets[8][300];
        const char *argv[32] = { "run", model, "--end", "1", "--quiet", "-o", cli_path("stats.json") };
        int argc = 7, nsets = 0;
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(doc, "simulators"), i, s) {
            const char *name = json_string_value(json_object_get(s, "name"));
            if (nsets < 8 && json_object_get(s, "count"))
                snprintf(sets[nsets++], sizeof sets[0], "simulators.%s.count=1", name);
            else if (nsets < 8 && json_object_get(s, "regions"))
                snprintf(sets[nsets++], sizeof sets[0], "simulators.%s.regions=[1,1]", name);
            else continue;
            argv[argc++] = "--set";
            argv[argc++] = sets[nsets - 1];
        }
        json_decref(doc);
        changed += nsets;
        const char *bin = getenv("KAIROS_BIN");
        char *full[34] = { (char *)bin };
        for (int k = 0; k < argc; k++) full[k + 1] = (char *)argv[k];
        full[argc + 1] = NULL;
        cli_result_t r = cli_spawn(full);
        cr_assert_eq(r.status, 0, "%s with every count 1: %s", examples[x], r.err);
        cli_free(&r);
    }
    cr_assert_geq(changed, 4, "phold, rows, walkers and ecology have counts or cuts");
}

/* phold's all-to-all wildcard with one replica is no dependency; the same
 * pair named explicitly is still refused. */
Test(hostile, phold_with_one_replica)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/phold.json", root);
    cli_result_t r = kairos("validate", model, "--set", "simulators.phold.count=1", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "simulators (1):\n"), "%s", r.out);
    cr_assert(strstr(r.out, "dependencies (0):\n"), "%s", r.out);
    cli_free(&r);
    expect_refused(kairos("validate", model, "--set", "simulators.phold.count=1", "--set",
                          "dependencies.0.from=phold[0]", "--set", "dependencies.0.to=phold[0]", NULL),
                   model, "dependencies[0]: expected a dependency between two different simulators, found "
                          "{\"from\":\"phold[0]\",\"to\":\"phold[0]\",\"promise\":0.1");
}
