/* The emulation's door to the outside (emulation_link.h). Every descriptor
 * is non-blocking: the run never waits on a peer except where the model
 * file asks for it, before the run starts. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/fault.h"
#include "base/grow.h"
#include "schedulers/formalisms/emulation_link.h"

static char *dup_or_null(const char *s, bool *ok)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *ok = false;
    return d;
}

kr_status_t kr__link_init(kr__link_t *l, const kr_emulation_link_t *d, int fd, const char *sim)
{
    *l = (kr__link_t){ .listen_fd = -1, .in_fd = -1, .out_fd = -1, .in_flags = -1 };
    kr_emulation_link_t none = { .kind = KR_LINK_FD };
    if (!d) d = &none;
    if (d->kind > KR_LINK_CONNECT) return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': unknown link kind", sim);
    if (d->kind == KR_LINK_PIPE && (!d->path || !d->path[0]))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': a named pipe needs a path", sim);
    if (d->kind == KR_LINK_CONNECT && (!d->host || !d->host[0]))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': connecting needs a host", sim);
    if ((d->kind == KR_LINK_LISTEN || d->kind == KR_LINK_CONNECT) &&
        (d->port < 0 || d->port > 65535 || (d->kind == KR_LINK_CONNECT && d->port == 0)))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': port %d is not a TCP port", sim, d->port);
    if (!(d->wait_seconds >= 0) || !isfinite(d->wait_seconds))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': the wait for a peer must be >= 0 seconds", sim);
    bool ok = true;
    l->kind = d->kind;
    l->path = dup_or_null(d->path, &ok);
    l->output_path = dup_or_null(d->output_path, &ok);
    l->host = dup_or_null(d->kind == KR_LINK_LISTEN && !d->host ? "127.0.0.1" : d->host, &ok);
    l->port = d->port;
    l->wait_seconds = d->wait_seconds;
    l->stop_when_gone = d->stop_when_gone;
    l->in_fd = d->kind == KR_LINK_FD ? fd : -1;
    if (!ok) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", sim);
    return KR_OK;
}

static kr_status_t nonblocking(int fd, const char *sim, const char *what)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return kr__fail(KR_ERR_IO, "emulation '%s': %s: %s", sim, what, strerror(errno));
    return KR_OK;
}

/* Writing to a pipe whose reader left raises SIGPIPE, which would end the
 * process: such a reader is a peer gone, reported like any other. Sockets
 * use MSG_NOSIGNAL instead. */
static void ignore_sigpipe(void)
{
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, NULL);
    }
}

static kr_status_t resolve(const kr__link_t *l, const char *sim, struct addrinfo **out, bool passive)
{
    char port[16];
    snprintf(port, sizeof port, "%d", l->port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = passive ? AI_PASSIVE : 0 };
    int rc = getaddrinfo(l->host, port, &hints, out);
    if (rc) return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': cannot resolve %s: %s", sim, l->host, gai_strerror(rc));
    return KR_OK;
}

static void set_peer(kr__link_t *l, int fd)
{
    int one = 1;
    /* lines are small and a controller answers each: no Nagle delay */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    l->in_fd = l->out_fd = fd;
    l->owns_in = l->owns_out = true;
    l->out_len = 0; /* what the last peer did not take was meant for it */
}

/* SIGINT or SIGTERM while waiting for the peer (up to the model's `wait`,
 * 30 s by default): the run stops as it starts (docs/cli.md, "Signals"),
 * not after the wait. */
static kr_status_t interrupted(const kr__link_t *l, const char *sim)
{
    return kr__fail(KR_ERR_INTERRUPTED, "emulation '%s': interrupted by %s while waiting for a peer at %s:%d", sim,
                    kr__signal_caught == SIGINT ? "SIGINT" : "SIGTERM", l->host, l->port);
}

/* The monotonic clock `seconds` from now, saturated: a wait of 1e12 s
 * overflowed into the past and failed at once. */
static uint64_t deadline_after(double seconds)
{
    uint64_t now = kr__monotonic_ns();
    double ns = seconds * 1e9;
    return ns >= (double)(UINT64_MAX - now) ? UINT64_MAX : now + (uint64_t)ns;
}

static kr_status_t open_listen(kr__link_t *l, const char *sim, void (*announce)(void *, const char *, bool),
                               void *arg)
{
    struct addrinfo *ai = NULL;
    kr_status_t st = resolve(l, sim, &ai, true);
    if (st) return st;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1) < 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return kr__fail(KR_ERR_IO, "emulation '%s': cannot listen on %s:%d: %s", sim, l->host, l->port, strerror(e));
    }
    freeaddrinfo(ai);
    l->listen_fd = fd;
    if ((st = nonblocking(fd, sim, "listening socket"))) return st;
    bool chosen = l->port == 0;
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        int port = sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
                                            : ntohs(((struct sockaddr_in *)&sa)->sin_port);
        l->port = port;
    }
    char what[300];
    snprintf(what, sizeof what, "listening on %s:%d%s", l->host, l->port, chosen ? " (a free port)" : "");
    if (announce) announce(arg, what, chosen);
    if (l->wait_seconds > 0) {
        uint64_t until = deadline_after(l->wait_seconds);
        while (!kr__link_accept(l)) {
            if (kr__signal_caught) return interrupted(l, sim);
            uint64_t now = kr__monotonic_ns();
            if (now >= until)
                return kr__fail(KR_ERR_STATE, "emulation '%s': no peer connected to %s:%d within %g s", sim, l->host,
                                l->port, l->wait_seconds);
            struct pollfd p = { .fd = fd, .events = POLLIN };
            uint64_t ms = (until - now) / 1000000 + 1;
            poll(&p, 1, ms > 1000 ? 1000 : (int)ms);
        }
    }
    return KR_OK;
}

static kr_status_t open_connect(kr__link_t *l, const char *sim)
{
    uint64_t until = deadline_after(l->wait_seconds);
    int err = 0;
    for (;;) {
        struct addrinfo *ai = NULL;
        kr_status_t st = resolve(l, sim, &ai, false);
        if (st) return st;
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) { err = errno; continue; }
            if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                freeaddrinfo(ai);
                set_peer(l, fd);
                return KR_OK;
            }
            err = errno;
            close(fd);
        }
        freeaddrinfo(ai);
        if (kr__signal_caught) return interrupted(l, sim);
        if (kr__monotonic_ns() >= until)
            return kr__fail(KR_ERR_STATE, "emulation '%s': cannot connect to %s:%d%s: %s", sim, l->host, l->port,
                            l->wait_seconds > 0 ? " (retried for the wait given)" : "", strerror(err));
        nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
    }
}

/* Whether the folder `path` would be made in exists (as the file's
 * setup can tell; the open itself says why it failed otherwise). */
static bool folder_exists(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return true;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) + (slash == path), path);
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
}

kr_status_t kr__link_check(const kr__link_t *l, const char *sim)
{
    struct stat sb;
    if (l->kind != KR_LINK_PIPE) return KR_OK;
    if (stat(l->path, &sb) == 0 && !S_ISFIFO(sb.st_mode))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': %s is not a named pipe (make one with mkfifo)", sim,
                        l->path);
    if (!folder_exists(l->path))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': the named pipe %s would be in a folder that does not "
                        "exist", sim, l->path);
    if (l->output_path && stat(l->output_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': the output %s is a folder, not a file or a named pipe",
                        sim, l->output_path);
    if (l->output_path && !folder_exists(l->output_path))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': the output %s would be in a folder that does not exist",
                        sim, l->output_path);
    return KR_OK;
}

kr_status_t kr__link_open(kr__link_t *l, const char *sim, int rank, void (*announce)(void *, const char *, bool),
                          void *arg)
{
    kr_status_t st = KR_OK;
    switch (l->kind) {
    case KR_LINK_FD:
        if (l->in_fd >= 0) {
            l->in_flags = fcntl(l->in_fd, F_GETFL);
            st = nonblocking(l->in_fd, sim, "input descriptor");
        }
        break;
    case KR_LINK_STDIN:
        /* mpirun hands standard input to rank 0 alone: elsewhere the
         * simulator would wait on a descriptor that never speaks */
        if (rank != 0)
            return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': standard input reaches rank 0 only, and this "
                            "simulator runs on rank %d (give it \"rank\": 0, or read a named pipe or a socket)",
                            sim, rank);
        l->in_fd = STDIN_FILENO;
        l->out_fd = STDOUT_FILENO;
        ignore_sigpipe();
        /* shared with the shell that started kairos: put back at the end */
        l->in_flags = fcntl(l->in_fd, F_GETFL);
        st = nonblocking(l->in_fd, sim, "standard input");
        break;
    case KR_LINK_PIPE: {
        struct stat sb;
        if ((st = kr__link_check(l, sim))) return st;
        if (stat(l->path, &sb) != 0 && mkfifo(l->path, 0600) != 0 && errno != EEXIST)
            return kr__fail(KR_ERR_IO, "emulation '%s': cannot make the named pipe %s: %s", sim, l->path,
                            strerror(errno));
        /* Read and write: the pipe then never reads as ended, and writers
         * may come and go (`echo LINE > PIPE`). */
        l->in_fd = open(l->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (l->in_fd < 0)
            return kr__fail(KR_ERR_IO, "emulation '%s': cannot open the named pipe %s: %s", sim, l->path,
                            strerror(errno));
        l->owns_in = true;
        if (l->output_path) {
            ignore_sigpipe();
            /* O_RDWR again so that a named pipe opens without a reader */
            l->out_fd = open(l->output_path, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_APPEND, 0644);
            if (l->out_fd < 0)
                return kr__fail(KR_ERR_IO, "emulation '%s': cannot open the output %s: %s", sim, l->output_path,
                                strerror(errno));
            l->owns_out = true;
        }
        break;
    }
    case KR_LINK_LISTEN: st = open_listen(l, sim, announce, arg); break;
    case KR_LINK_CONNECT: st = open_connect(l, sim); break;
    }
    if (!st && l->kind != KR_LINK_LISTEN && l->in_fd < 0) l->ended = true;
    return st;
}

int kr__link_wait_fd(const kr__link_t *l)
{
    if (l->in_fd >= 0) return l->in_fd;
    return l->listen_fd;
}

bool kr__link_connected(const kr__link_t *l)
{
    return l->in_fd >= 0;
}

bool kr__link_accept(kr__link_t *l)
{
    if (l->listen_fd < 0 || l->in_fd >= 0) return false;
    int fd = accept(l->listen_fd, NULL, NULL);
    if (fd < 0) return false;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    set_peer(l, fd);
    return true;
}

static void drop_peer(kr__link_t *l)
{
    if (!l->owns_in && l->in_fd >= 0 && l->in_flags >= 0) fcntl(l->in_fd, F_SETFL, l->in_flags);
    if (l->owns_in && l->in_fd >= 0) close(l->in_fd);
    if (l->owns_out && l->out_fd >= 0 && l->out_fd != l->in_fd) close(l->out_fd);
    bool socket_out = l->out_fd == l->in_fd;
    l->in_fd = -1;
    if (socket_out || l->owns_out) l->out_fd = -1;
    l->out_len = 0;
    /* a listener may take another peer; anything else has ended */
    if (l->listen_fd < 0) l->ended = true;
}

ssize_t kr__link_read(kr__link_t *l, char *buf, size_t cap, const char **why)
{
    if (l->in_fd < 0) return 0;
    ssize_t n = read(l->in_fd, buf, cap);
    if (n > 0) return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    *why = n == 0 ? "closed" : strerror(errno);
    drop_peer(l);
    return -1;
}

void kr__link_flush(kr__link_t *l)
{
    size_t done = 0;
    while (l->out_fd >= 0 && done < l->out_len) {
        ssize_t n = l->out_fd == l->in_fd ? send(l->out_fd, l->out + done, l->out_len - done, MSG_NOSIGNAL)
                                          : write(l->out_fd, l->out + done, l->out_len - done);
        if (n > 0) { done += (size_t)n; continue; }
        /* An output file that cannot be written (a full disk): what it
         * holds, and all that comes, is lost; said once by the caller. */
        if (n < 0 && l->out_fd != l->in_fd && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            l->out_errno = errno;
            for (size_t i = done; i < l->out_len; i++) l->out_lost += l->out[i] == '\n';
            done = l->out_len;
        }
        /* full, or gone: a gone peer shows as input that ended, read next */
        break;
    }
    memmove(l->out, l->out + done, l->out_len - done);
    l->out_len -= done;
}

bool kr__link_send(kr__link_t *l, const char *line, size_t len)
{
    if (l->out_fd < 0 || l->out_errno) return false;
    if (l->out_len + len + 1 > KR_EMULATION_OUT_BUFFER) {
        kr__link_flush(l);
        if (l->out_len + len + 1 > KR_EMULATION_OUT_BUFFER) return false;
    }
    if (KR__GROW(l->out, l->out_cap, l->out_len + len + 1, 4096, NULL)) return false;
    memcpy(l->out + l->out_len, line, len);
    l->out[l->out_len + len] = '\n';
    l->out_len += len + 1;
    kr__link_flush(l);
    return true;
}

void kr__link_close(kr__link_t *l)
{
    uint64_t until = kr__monotonic_ns() + 1000000000ull;
    while (l->out_fd >= 0 && l->out_len && kr__monotonic_ns() < until) {
        size_t before = l->out_len;
        kr__link_flush(l);
        if (l->out_len == before) {
            struct pollfd p = { .fd = l->out_fd, .events = POLLOUT };
            if (poll(&p, 1, 50) < 0 || (p.revents & (POLLERR | POLLHUP))) break;
        }
    }
    if (l->out_fd >= 0 && l->out_fd == l->in_fd) {
        /* What the kernel still holds for a peer that is not reading would
         * keep the end of the stream from it forever: after the same
         * grace, the connection is reset instead (the lines are in the
         * log). Otherwise it is shut down for writing first, so that the
         * peer sees the end even while this process lives on. */
        int queued = 0;
        while (ioctl(l->out_fd, SIOCOUTQ, &queued) == 0 && queued > 0 && kr__monotonic_ns() < until)
            nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        if (l->out_len || queued > 0) {
            struct linger reset = { .l_onoff = 1, .l_linger = 0 };
            setsockopt(l->out_fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        } else {
            shutdown(l->out_fd, SHUT_WR);
        }
    }
    if (!l->owns_in && l->in_fd >= 0 && l->in_flags >= 0) fcntl(l->in_fd, F_SETFL, l->in_flags);
    if (l->owns_in && l->in_fd >= 0) close(l->in_fd);
    if (l->owns_out && l->out_fd >= 0 && l->out_fd != l->in_fd) close(l->out_fd);
    if (l->listen_fd >= 0) close(l->listen_fd);
    l->in_fd = l->out_fd = l->listen_fd = -1;
    free(l->out);
    free(l->path);
    free(l->output_path);
    free(l->host);
    *l = (kr__link_t){ .listen_fd = -1, .in_fd = -1, .out_fd = -1, .in_flags = -1 };
}
