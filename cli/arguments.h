/* The command line's words (main.c, frames.c, view.c). */
#ifndef KAIROS_CLI_ARGUMENTS_H
#define KAIROS_CLI_ARGUMENTS_H

#include <stdbool.h>

/* Whether the word after argv[i] is there to be argv[i]'s value: not
 * when it is an option itself (`--word`, or one letter after a dash, as
 * `-o`). `--checkpoint-dir --quiet` took "--quiet" as the folder; a
 * negative number (`-5`) is still a value, and a file whose name starts
 * with a dash is written `./-name`. */
bool kr__cli_has_value(int i, int argc, char **argv);

#endif
