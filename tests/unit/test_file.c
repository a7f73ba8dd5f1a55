/* kr__open_regular (base/file.h): a regular file opens, blocking as usual;
 * a named pipe, a device and a directory are refused at once, without
 * blocking (a pipe with no writer used to block open() for ever, and the
 * run's signal handlers restarted it: checkpoints, frames, replay logs and
 * the viewer's files all go through it now). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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
