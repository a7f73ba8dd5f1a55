/* Opening a file that must be a regular one (base/file.h). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int kr__open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
        close(fd);
        return KR__NOT_REGULAR;
    }
    return fd;
}

FILE *kr__fopen_regular(const char *path, bool *not_regular)
{
    int fd = kr__open_regular(path);
    *not_regular = fd == KR__NOT_REGULAR;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (fd >= 0 && !f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
