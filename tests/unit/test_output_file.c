/* Output files (runtime/output_file.c): written as NAME.partial and
 * renamed once whole; a symbolic link keeps pointing at its file, which
 * gets the output; something other than a file (a FIFO here, /dev/null
 * for a user) is written in place and never replaced by a rename; a
 * directory, and a FIFO nobody reads, are refused before anything is
 * written. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/run.h"

static char dir[64], path[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/kairos_out_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(output_file, .init = setup, .fini = teardown);

static const char *in_dir(const char *name)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static char *slurp(const char *p)
{
    static char text[256];
    FILE *f = fopen(p, "r");
    if (!f) return NULL;
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static void write_whole(const char *p, bool keep)
{
    kr__out_file_t o;
    cr_assert_eq(kr__out_open(&o, p), KR_OK, "%s", kr_last_error());
    fputs("whole\n", o.fp);
    cr_assert_eq(kr__out_close(&o, keep), KR_OK, "%s", kr_last_error());
}

Test(output_file, a_file_appears_only_when_whole)
{
    char final[256], partial[300];
    snprintf(final, sizeof final, "%s", in_dir("out.json"));
    snprintf(partial, sizeof partial, "%s.partial", final);
    kr__out_file_t o;
    cr_assert_eq(kr__out_open(&o, final), KR_OK);
    fputs("half", o.fp);
    cr_assert(access(final, F_OK) && !access(partial, F_OK), "only the .partial while writing");
    cr_assert_eq(kr__out_close(&o, true), KR_OK);
    cr_assert_str_eq(slurp(final), "half");
    cr_assert(access(partial, F_OK));
    /* a failed run leaves neither */
    write_whole(in_dir("failed.json"), false);
    cr_assert(access(in_dir("failed.json"), F_OK) && access(in_dir("failed.json.partial"), F_OK));
}

Test(output_file, a_link_keeps_pointing_at_its_file)
{
    char target[256];
    snprintf(target, sizeof target, "%s", in_dir("target.json"));
    FILE *f = fopen(target, "w");
    fputs("old\n", f);
    fclose(f);
    cr_assert_eq(symlink(target, in_dir("link.json")), 0);
    write_whole(in_dir("link.json"), true);
    struct stat st;
    cr_assert_eq(lstat(in_dir("link.json"), &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link is still a link");
    cr_assert_str_eq(slurp(target), "whole\n");
}

Test(output_file, a_fifo_is_written_in_place)
{
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s", in_dir("pipe"));
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so that opening for writing does not wait */
    cr_assert_geq(rd, 0, "%s", strerror(errno));
    write_whole(fifo, true);
    char got[16] = { 0 };
    cr_assert_eq(read(rd, got, sizeof got - 1), 6);
    cr_assert_str_eq(got, "whole\n");
    close(rd);
    struct stat st;
    cr_assert_eq(lstat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "still a FIFO, not a file renamed over it");
    cr_assert(access(in_dir("pipe.partial"), F_OK), "no .partial beside it");
}

Test(output_file, a_directory_is_refused)
{
    cr_assert_eq(mkdir(in_dir("d"), 0700), 0);
    kr__out_file_t o;
    cr_assert_eq(kr__out_open(&o, in_dir("d")), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "/d: cannot write: found a directory"), "%s", kr_last_error());
    kr__out_commit(&o, false);
    cr_assert(access(in_dir("d.partial"), F_OK));
}

/* A FIFO nobody reads: opening it for writing waited for a reader for
 * ever (and the run's signal handlers restarted the wait); it is refused
 * at once. The same for a FIFO in the way of the .partial name. */
Test(output_file, a_fifo_nobody_reads_is_refused_at_once, .timeout = 10)
{
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s", in_dir("pipe"));
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    kr__out_file_t o;
    cr_assert_eq(kr__out_open(&o, fifo), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "/pipe: cannot write: nobody reads it (a named pipe or a socket)"), "%s",
              kr_last_error());
    kr__out_commit(&o, false);
    struct stat st;
    cr_assert_eq(lstat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "left as it was");

    cr_assert_eq(mkfifo(in_dir("out.json.partial"), 0600), 0);
    cr_assert_eq(kr__out_open(&o, in_dir("out.json")), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "cannot write its temporary"), "%s", kr_last_error());
    kr__out_commit(&o, false);
}

/* An unfinished run's .partial file (a restart may go on with it) stays as
 * it was when the next run that opens it is refused, and is emptied only
 * once that run begins; a .partial the open made is removed as before. */
Test(output_file, an_unfinished_partial_outlives_a_refused_run)
{
    char final[256], partial[300];
    snprintf(final, sizeof final, "%s", in_dir("log.jsonl"));
    snprintf(partial, sizeof partial, "%s.partial", final);
    FILE *f = fopen(partial, "w");
    fputs("unfinished", f);
    fclose(f);
    kr__out_file_t o;
    cr_assert_eq(kr__out_open_unemptied(&o, final), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__out_commit(&o, false), KR_OK);
    cr_assert_str_eq(slurp(partial), "unfinished", "a refused run leaves it as it was");
    cr_assert_eq(kr__out_open_unemptied(&o, final), KR_OK);
    cr_assert_eq(kr__out_empty(&o), KR_OK);
    fputs("new", o.fp);
    cr_assert_eq(kr__out_close(&o, true), KR_OK);
    cr_assert_str_eq(slurp(final), "new");
    cr_assert(access(partial, F_OK));
    /* emptied, then failed: removed, as any output of a failed run */
    f = fopen(partial, "w");
    fputs("unfinished", f);
    fclose(f);
    cr_assert_eq(kr__out_open_unemptied(&o, final), KR_OK);
    cr_assert_eq(kr__out_empty(&o), KR_OK);
    cr_assert_eq(kr__out_close(&o, false), KR_OK);
    cr_assert(access(partial, F_OK), "a failed run's own file goes");
    /* none there: made by the open, and removed by a refusal */
    cr_assert_eq(kr__out_open_unemptied(&o, in_dir("new.jsonl")), KR_OK);
    cr_assert_eq(kr__out_commit(&o, false), KR_OK);
    cr_assert(access(in_dir("new.jsonl.partial"), F_OK));
}
