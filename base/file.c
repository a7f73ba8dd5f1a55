/* Opening a file that must be a regular one (base/file.h). */
#include "base/file.h"

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
