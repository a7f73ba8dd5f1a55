/* Opening a file that must be a regular one (base/file.h). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Clears O_NONBLOCK on fd (open() set it so as not to wait); false on
 * failure. */
static bool blocking_again(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
}

/* open() with `flags` and O_NONBLOCK, kept only for a regular file. */
static int open_regular(const char *path, int flags)
{
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || !blocking_again(fd)) {
        close(fd);
        return KR__NOT_REGULAR;
    }
    return fd;
}

int kr__open_regular(const char *path) { return open_regular(path, O_RDONLY); }

/* The descriptor as a stream, or NULL with open()'s or fdopen()'s errno. */
static FILE *as_stream(int fd, const char *mode)
{
    FILE *f = fd >= 0 ? fdopen(fd, mode) : NULL;
    if (fd >= 0 && !f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

FILE *kr__fopen_regular(const char *path, bool *not_regular)
{
    int fd = open_regular(path, O_RDONLY);
    *not_regular = fd == KR__NOT_REGULAR;
    return as_stream(fd, "r");
}

FILE *kr__fopen_regular_update(const char *path, bool *not_regular)
{
    int fd = open_regular(path, O_RDWR);
    *not_regular = fd == KR__NOT_REGULAR;
    return as_stream(fd, "r+");
}

int kr__open_write_now(const char *path, bool truncate)
{
    int fd = open(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0) | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd >= 0 && !blocking_again(fd)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *kr__fopen_write_now(const char *path, bool truncate)
{
    return as_stream(kr__open_write_now(path, truncate), "w");
}
