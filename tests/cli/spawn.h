/* CLI-test helpers: run build/kairos (KAIROS_BIN) or mpirun (MPIRUN) as a
 * child process with stdout and stderr captured into files of a fresh
 * temporary folder, and small file helpers. Header-only. */
#ifndef KAIROS_TESTS_CLI_SPAWN_H
#define KAIROS_TESTS_CLI_SPAWN_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char cli_dir[64];

typedef struct cli_result {
    int status;        /* exit status, or 128 + signal */
    char *out, *err;   /* everything written, NUL-terminated */
} cli_result_t;

static inline const char *cli_tmp(void)
{
    if (!cli_dir[0]) {
        snprintf(cli_dir, sizeof cli_dir, "/tmp/kairos_cli_XXXXXX");
        cr_assert(mkdtemp(cli_dir), "mkdtemp");
    }
    return cli_dir;
}

/* A path inside the test's temporary folder (a ring of 32 static buffers). */
static inline const char *cli_path(const char *name)
{
    static char ring[32][512];
    static int at;
    char *p = ring[at++ % 32];
    snprintf(p, sizeof ring[0], "%s/%s", cli_tmp(), name);
    return p;
}

static inline char *cli_slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s);
    size_t got = fread(s, 1, (size_t)n, fp);
    s[got] = '\0';
    fclose(fp);
    return s;
}

static inline bool cli_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline void cli_write(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    cr_assert(fp, "write %s", path);
    for (const char *c = text; *c; c++) fputc(*c == '\'' ? '"' : *c, fp);
    cr_assert_eq(fclose(fp), 0);
}

/* Starts argv (argv[0] a path) with stdout/stderr captured, in a process
 * group of its own (so that a test can signal it and whatever it starts);
 * exit 127 from the child means it could not be started. */
static inline pid_t cli_start(char *const argv[])
{
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/stdout.txt", cli_tmp());
    snprintf(err, sizeof err, "%s/stderr.txt", cli_tmp());
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork");
    if (pid == 0) {
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
            e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    return pid;
}

/* Waits for a process of cli_start: its status and what it wrote. */
static inline cli_result_t cli_wait(pid_t pid)
{
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/stdout.txt", cli_tmp());
    snprintf(err, sizeof err, "%s/stderr.txt", cli_tmp());
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cli_result_t r = { .status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws) };
    r.out = cli_slurp(out);
    r.err = cli_slurp(err);
    cr_assert(r.out && r.err);
    return r;
}

/* Runs argv (argv[0] a path) with stdout/stderr captured. */
static inline cli_result_t cli_spawn(char *const argv[])
{
    return cli_wait(cli_start(argv));
}

/* kairos ARGS..., NULL-terminated. */
static inline cli_result_t kairos(const char *first, ...)
{
    const char *bin = getenv("KAIROS_BIN");
    cr_assert(bin, "KAIROS_BIN is not set");
    char *argv[64] = { (char *)bin };
    int n = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *)) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return cli_spawn(argv);
}

/* mpirun -np NP kairos ARGS... (NP 0: kairos alone; MPIRUN names mpirun),
 * ARGS NULL-terminated, up to 27 of them. */
static inline cli_result_t kairos_on(int np, const char *const *args)
{
    const char *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    cr_assert(bin && (np <= 0 || mpirun), "KAIROS_BIN or MPIRUN is not set");
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np);
    char *argv[32];
    int n = 0;
    if (np > 0) {
        argv[n++] = (char *)mpirun;
        argv[n++] = "-np";
        argv[n++] = nps;
        argv[n++] = "--oversubscribe";
    }
    argv[n++] = (char *)bin;
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return cli_spawn(argv);
}

static inline void cli_free(cli_result_t *r)
{
    free(r->out);
    free(r->err);
}

static inline size_t cli_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* A file of the source tree (KAIROS_SOURCE_ROOT/rel); the last four
 * stay valid. */
static inline const char *cli_source(const char *rel)
{
    static char buf[4][1024];
    static int at;
    const char *root = getenv("KAIROS_SOURCE_ROOT");
    cr_assert(root, "KAIROS_SOURCE_ROOT is not set");
    char *p = buf[at++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", root, rel);
    return p;
}

/* Removes the temporary folder (a Criterion .fini). */
static inline void cli_cleanup(void)
{
    if (!cli_dir[0]) return;
    char *argv[] = { "/bin/rm", "-rf", cli_dir, NULL };
    pid_t pid = fork();
    if (pid == 0) {
        execve(argv[0], argv, environ);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    cli_dir[0] = '\0';
}

/* The checksum of a stats file. */
static inline char *cli_checksum(const char *stats_path)
{
    json_error_t e;
    json_t *s = json_load_file(stats_path, 0, &e);
    cr_assert(s, "%s: %s", stats_path, e.text);
    const char *c = json_string_value(json_object_get(s, "checksum"));
    cr_assert(c && strlen(c) == 16, "checksum of %s", stats_path);
    char *dup = strdup(c);
    json_decref(s);
    return dup;
}

/* A short M/M/1 (lambda 0.8, mu 1) for replications and sweeps; ' stands
 * for " (cli_write). */
#define CLI_MM1                                                                                        \
    "{'seed': 5, 'end_time': 2000, 'simulators': [{'name': 'mm1', 'kind': 'sqss', 'params': {"         \
    "  'arrival': {'dist': 'exponential', 'mean': 1.25},"                                              \
    "  'service': {'dist': 'exponential', 'mean': 1}, 'capacity': 1000, 'servers': 1, 'warmup': 100}}]}"

#endif
