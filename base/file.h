/* Opening a file that must be a regular one (checkpoints, frames, replay
 * logs, the files the viewer serves). Not public API. */
#ifndef KAIROS_BASE_FILE_H
#define KAIROS_BASE_FILE_H

#include <stdbool.h>
#include <stdio.h>

/* Opens `path` read-only (O_CLOEXEC). A FIFO or a device in its place
 * would block open() or read() for ever (a signal does not end a blocked
 * open: the handlers restart it) or never end: it is opened without
 * blocking, and refused. Returns the descriptor (blocking again), or -1
 * with errno as open() left it, or KR__NOT_REGULAR (the descriptor
 * closed) when `path` is not a regular file. */
#define KR__NOT_REGULAR (-2)
int kr__open_regular(const char *path);
/* The same as a stdio stream for reading: NULL with errno as open() or
 * fdopen() left it, or with *not_regular set (a FIFO, a device, a folder). */
FILE *kr__fopen_regular(const char *path, bool *not_regular);

#endif
