/* The command line's words (arguments.h). */
#include <ctype.h>
#include "cli/arguments.h"

static bool is_option(const char *s)
{
    if (s[0] != '-') return false;
    if (s[1] == '-') return isalpha((unsigned char)s[2]);
    return isalpha((unsigned char)s[1]) && !s[2];
}

bool kr__cli_has_value(int i, int argc, char **argv)
{
    return i + 1 < argc && !is_option(argv[i + 1]);
}
