/* Where shipped files are (data_path.h): the build tree's binary uses the
 * source tree; an installed binary finds PREFIX from its own place,
 * PREFIX/BINDIR/kairos. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/data_path.h"

const char *kr__data_path(const char *source, const char *installed, char *out, size_t cap)
{
    const char *bindir = KAIROS_BINDIR;
    char exe[4096], root[PATH_MAX];
    bool beside = false;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        size_t rl = realpath(KAIROS_BUILD_ROOT, root) ? strlen(root) : 0;
        if (rl && !strncmp(exe, root, rl) && exe[rl] == '/') return source;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        size_t dl = strlen(exe), bl = strlen(bindir);
        if (installed[0] != '/' && bindir[0] != '/' && dl > bl && exe[dl - bl - 1] == '/' &&
            !strcmp(exe + dl - bl, bindir)) {
            exe[dl - bl - 1] = '\0';
            snprintf(out, cap, "%s/%s", exe, installed);
            if (access(out, R_OK) == 0) return out;
            beside = true;
        }
    }
    char configured[PATH_MAX];
    snprintf(configured, sizeof configured, "%s%s%s", installed[0] == '/' ? "" : KAIROS_PREFIX,
             installed[0] == '/' ? "" : "/", installed);
    /* An installed binary never reaches for the source tree (gone, or of
     * another version): missing, the file is named where it should be,
     * beside the binary when it has a prefix of its own. */
    if (!beside || access(configured, R_OK) == 0) snprintf(out, cap, "%s", configured);
    return out;
}
