/* Opening a file that must be a regular one (checkpoints, frames, replay
 * and emulation logs, the files the viewer serves), and opening one for
 * writing without waiting for a reader. Not public API. */
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
/* The same for reading and writing in place (fopen's "r+"): a file kairos
 * goes on with, whose start it reads first. */
FILE *kr__fopen_regular_update(const char *path, bool *not_regular);
/* Opens `path` for writing as fopen's "w" does, but never waits: a named
 * pipe that nobody reads fails at once with errno ENXIO, where fopen()
 * would block for ever. A pipe with a reader, a device or a regular file
 * opens as usual (writes then block as usual). Without `truncate`, a file
 * there keeps its bytes (written over from its start). */
FILE *kr__fopen_write_now(const char *path, bool truncate);
/* The same as a descriptor, emptying the file only when `truncate`
 * (created if missing); -1 with errno on failure. */
int kr__open_write_now(const char *path, bool truncate);

#endif
