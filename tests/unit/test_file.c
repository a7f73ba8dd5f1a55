/* kr__open_regular (base/file.h): a regular file opens, blocking as usual;
 * a named pipe, a device and a directory are refused at once, without
 * blocking (a pipe with no writer used to block open() for ever, and the
 * run's signal handlers restarted it: checkpoints, frames, replay logs and
 * the viewer's files all go through it now). kr__fopen_write_now and
 * kr__fopen_regular_update, the emulation log's: the same for a file
 * written (a named pipe nobody reads fails at once) and one gone on with. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/kairos_file_XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char p[128];
    snprintf(p, sizeof p, "%s/regular", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/pipe", dir);
    unlink(p);
    rmdir(dir);
}

TestSuite(file, .init = setup, .fini = teardown);

Test(file, only_a_regular_file_opens)
{
    char regular[128], pipe[128], missing[128];
    snprintf(regular, sizeof regular, "%s/regular", dir);
    snprintf(pipe, sizeof pipe, "%s/pipe", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    FILE *f = fopen(regular, "w");
    fputs("abc", f);
    fclose(f);
    int fd = kr__open_regular(regular);
    cr_assert_geq(fd, 0);
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "the descriptor blocks again");
    char buf[4];
    cr_assert_eq(read(fd, buf, sizeof buf), 3);
    close(fd);
    cr_assert_eq(mkfifo(pipe, 0644), 0);
    cr_assert_eq(kr__open_regular(pipe), KR__NOT_REGULAR, "a named pipe (no writer) is refused at once");
    cr_assert_eq(kr__open_regular("/dev/zero"), KR__NOT_REGULAR);
    cr_assert_eq(kr__open_regular(dir), KR__NOT_REGULAR);
    errno = 0;
    cr_assert_eq(kr__open_regular(missing), -1);
    cr_assert_eq(errno, ENOENT);
}

/* The size of `path` once opened for writing and closed again. */
static long long size_after_opening(const char *path, bool truncate)
{
    FILE *f = kr__fopen_write_now(path, truncate);
    cr_assert(f, "%s opens", path);
    fclose(f);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    return (long long)sb.st_size;
}

/* The emulation log's two opens: a fresh log never waits for a reader,
 * and a log a restart goes on with must be a regular file. */
Test(file, a_log_opens_without_waiting_for_a_reader)
{
    char regular[128], pipe[128];
    snprintf(regular, sizeof regular, "%s/regular", dir);
    snprintf(pipe, sizeof pipe, "%s/pipe", dir);
    FILE *f = kr__fopen_write_now(regular, true);
    cr_assert(f);
    cr_assert_eq(fcntl(fileno(f), F_GETFL) & O_NONBLOCK, 0, "the stream blocks again");
    fputs("abcdef", f);
    fclose(f);
    bool odd = true;
    f = kr__fopen_regular_update(regular, &odd);
    cr_assert(f && !odd);
    char buf[8] = "";
    cr_assert_eq(fread(buf, 1, 3, f), 3);
    cr_assert_str_eq(buf, "abc");
    cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
    fputs("X", f);
    fclose(f);
    cr_assert_eq(size_after_opening(regular, false), 6, "without truncate the file keeps its bytes");
    cr_assert_eq(size_after_opening(regular, true), 0, "\"w\" truncates");

    cr_assert_eq(mkfifo(pipe, 0644), 0);
    errno = 0;
    cr_assert_null(kr__fopen_write_now(pipe, true), "a named pipe nobody reads is refused at once");
    cr_assert_eq(errno, ENXIO);
    int reader = open(pipe, O_RDONLY | O_NONBLOCK);
    cr_assert_geq(reader, 0);
    f = kr__fopen_write_now(pipe, true);
    cr_assert(f, "a named pipe with a reader opens");
    fclose(f);
    close(reader);
    errno = 0;
    cr_assert_null(kr__fopen_write_now(dir, true));
    cr_assert_eq(errno, EISDIR);
    f = kr__fopen_write_now("/dev/null", true);
    cr_assert(f, "a device opens");
    fclose(f);

    odd = false;
    cr_assert_null(kr__fopen_regular_update(pipe, &odd));
    cr_assert(odd, "a log to go on with must be a regular file");
    errno = 0;
    cr_assert_null(kr__fopen_regular_update(dir, &odd));
    cr_assert_eq(errno, EISDIR, "a folder: open() says why");
}
