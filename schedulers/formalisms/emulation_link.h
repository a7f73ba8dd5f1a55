/* The emulation formalism's door to the outside: standard input, a named
 * pipe, a descriptor, or a TCP socket listened on or connected from, and
 * the output that goes back through it. Not public API; emulation.c is
 * its one user, and kairos/emulation.h documents what users see. */
#ifndef KAIROS_SCHEDULERS_EMULATION_LINK_H
#define KAIROS_SCHEDULERS_EMULATION_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "kairos/emulation.h"

typedef struct kr__link {
    kr_link_kind_t kind;
    char *path, *output_path, *host; /* owned copies */
    int port;
    double wait_seconds;
    bool stop_when_gone;
    int listen_fd;       /* LISTEN: the listening socket */
    int in_fd, out_fd;   /* -1 when none; a socket is both */
    bool owns_in, owns_out;
    int in_flags;        /* a borrowed input's flags before it was made non-blocking, -1 if not */
    bool ended;          /* no input will come any more */
    char *out;           /* output the peer has not taken yet */
    size_t out_len, out_cap;
    int out_errno;       /* an output file that failed a write (a full disk): nothing more is written, 0 if none */
    uint64_t out_lost;   /* lines taken but lost to that failure, not yet counted by the caller */
} kr__link_t;

/* Copies the description; opens nothing. `fd` is the descriptor of a
 * KR_LINK_FD link (-1 for none). */
kr_status_t kr__link_init(kr__link_t *l, const kr_emulation_link_t *d, int fd, const char *sim);
/* Checks the files a KR_LINK_PIPE link names without opening them: the
 * input must be a named pipe if it exists, the output not a folder. */
kr_status_t kr__link_check(const kr__link_t *l, const char *sim);
/* Opens the link when the run starts, on the rank that runs the
 * simulator, and waits for a peer as the description asks. `announce`
 * reports the listening address (`notable` when the port was chosen here:
 * nobody can know it otherwise). */
kr_status_t kr__link_open(kr__link_t *l, const char *sim, int rank,
                          void (*announce)(void *arg, const char *what, bool notable), void *arg);
/* The descriptor to wait on for input or a peer; -1 for none. */
int kr__link_wait_fd(const kr__link_t *l);
/* A waiting peer accepted (LISTEN without a peer): true if one came. */
bool kr__link_accept(kr__link_t *l);
/* Reads what is there: > 0 bytes, 0 for nothing now, -1 when the peer just
 * left (or input ended); *why then says how. */
ssize_t kr__link_read(kr__link_t *l, char *buf, size_t cap, const char **why);
/* True when a peer (or a source) is there to read from. */
bool kr__link_connected(const kr__link_t *l);
/* Queues a line (a newline is added) for the peer and writes what it can
 * without blocking; false when it was dropped: no output, or
 * KR_EMULATION_OUT_BUFFER bytes are already waiting. */
bool kr__link_send(kr__link_t *l, const char *line, size_t len);
/* Writes queued output without blocking. */
void kr__link_flush(kr__link_t *l);
/* Gives queued output up to a second to leave, then closes everything. */
void kr__link_close(kr__link_t *l);

#endif
