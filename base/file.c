/* Opening a file that must be a regular one (base/file.h). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* open() with `flags` and O_NONBLOCK, kept only for a regular file. */
static int open_regular(const char *path, int flags)
{
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
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

FILE *kr__fopen_write_now(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fd >= 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    return as_stream(fd, "w");
}
