/* The commands that show a recording of frames (docs/viewer.md):
 * `kairos frames` (frames.c) and `kairos view` (view.c). Each takes the
 * whole command line (argv[1] is the command) and returns the exit
 * status. */
#ifndef KAIROS_CLI_VIEWER_COMMANDS_H
#define KAIROS_CLI_VIEWER_COMMANDS_H

extern const char *const kr__frames_help;
extern const char *const kr__view_help;

int kr__cli_frames(int argc, char **argv);
int kr__cli_view(int argc, char **argv);

#endif
