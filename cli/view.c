/* `kairos view DIR`: a small HTTP/1.1 server for the viewer page and a
 * recording's data (docs/viewer.md, "The viewer's data API").
 *
 * One thread, one request per connection (answered with Connection:
 * close). Connections are polled together, each with a deadline, so that a
 * browser's idle preconnect or a client that never finishes its request
 * cannot hold the others up. Only GET and HEAD, and only files under three
 * roots: the page's folder, its uPlot library and the recording; a path
 * is checked as text first (no "..", no encoded slash, no NUL) and then
 * resolved with realpath, so a symbolic link that leads out is refused. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/file.h"
#include "runtime/data_path.h"
#include "runtime/recording.h"
#include "cli/arguments.h"
#include "cli/viewer_commands.h"

const char *const kr__view_help =
    "usage: kairos view DIR [--port P] [--host H]\n"
    "\n"
    "Serves the viewer page and the recording in DIR (kairos run --frames DIR) over\n"
    "HTTP until interrupted (Ctrl-C); open the address it prints in a browser\n"
    "(docs/viewer.md).\n"
    "\n"
    "options:\n"
    "  --port P     the port (default: a free one, printed; 0 too)\n"
    "  --host H     the address to listen on (default 127.0.0.1, this machine only)\n"
    "  -h, --help   this help\n"
    "\n"
    "The page comes from KAIROS_VIEWER_DIR when set, else from kairos's own copy.\n";

#define MAX_CLIENTS 16
#define REQUEST_MAX 8192
/* How long a client has to send its request, and to take each part of the
 * answer. */
#define CLIENT_SECONDS 5

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

/* An answer, built whole before it goes out: the loop of kr__view_main
 * sends it as the client takes it, without blocking, so that a client that
 * does not read holds up only its own connection. */
typedef struct reply {
    char *p;
    size_t len, cap;
    bool failed;                 /* out of memory: the connection is dropped */
} reply_t;

typedef struct client {
    int fd;                      /* -1: a free slot */
    uint64_t deadline_ns;        /* for the request, then for each part of the answer */
    size_t len;
    char request[REQUEST_MAX + 1];
    bool answering;              /* the request is in; `out` goes out */
    reply_t out;
    size_t sent;
} client_t;

typedef struct server {
    const kr__recording_t *rec;
    char recording_root[PATH_MAX];   /* realpath of DIR */
    char page_root[PATH_MAX];        /* realpath of the page's folder, or "" */
    char lib_root[PATH_MAX];         /* realpath of its node_modules/uplot/dist, or "" */
    client_t clients[MAX_CLIENTS];
} server_t;

/* ---- answering ---- */

static bool reply_add(reply_t *out, const void *data, size_t len)
{
    if (out->failed) return false;
    if (len > out->cap - out->len) {
        size_t cap = out->cap ? out->cap : 4096;
        while (cap - out->len < len) {
            if (cap > SIZE_MAX / 2) return !(out->failed = true);
            cap *= 2;
        }
        char *p = realloc(out->p, cap);
        if (!p) return !(out->failed = true);
        out->p = p;
        out->cap = cap;
    }
    memcpy(out->p + out->len, data, len);
    out->len += len;
    return true;
}

static bool send_head(reply_t *out, int status, const char *reason, const char *type, size_t length, const char *extra)
{
    char head[512];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
                     status, reason, type, length, extra ? extra : "");
    return reply_add(out, head, (size_t)n);
}

static void send_text(reply_t *out, bool head_only, int status, const char *reason, const char *text)
{
    if (send_head(out, status, reason, "text/plain; charset=utf-8", strlen(text),
                  status == 405 ? "Allow: GET, HEAD\r\n" : NULL) && !head_only)
        reply_add(out, text, strlen(text));
}

static void not_found(reply_t *out, bool head_only) { send_text(out, head_only, 404, "Not Found", "not found\n"); }

static const char *content_type(const char *path)
{
    static const char *const types[][2] = {
        { ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
        { ".css", "text/css; charset=utf-8" },   { ".json", "application/json" },
        { ".csv", "text/csv; charset=utf-8" },   { ".png", "image/png" },
        { ".svg", "image/svg+xml" },             { ".map", "application/json" },
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i][0])) return types[i][1];
    return "application/octet-stream";
}

/* Serves root/rel when it resolves to a regular file inside root (rel has
 * been checked as text already). */
static void send_file(reply_t *out, bool head_only, const char *root, const char *rel)
{
    char path[PATH_MAX * 2], real[PATH_MAX];
    size_t root_len = strlen(root);
    if (!root[0] || snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path || !realpath(path, real) ||
        strncmp(real, root, root_len) || real[root_len] != '/')
        return not_found(out, head_only);
    int file = kr__open_regular(real); /* (a FIFO would block the server) */
    struct stat sb;
    if (file < 0 || fstat(file, &sb) || !S_ISREG(sb.st_mode)) {
        if (file >= 0) close(file);
        return not_found(out, head_only);
    }
    bool ok = send_head(out, 200, "OK", content_type(real), (size_t)sb.st_size, NULL);
    char buf[65536];
    for (ssize_t n; ok && !head_only && (n = read(file, buf, sizeof buf)) > 0;) ok = reply_add(out, buf, (size_t)n);
    close(file);
}

/* ---- the frame API ---- */

typedef struct bytes {
    unsigned char *p;
    size_t len;
} bytes_t;

static void put32(bytes_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b->p[b->len++] = (unsigned char)(v >> (8 * i));
}

static void putf32(bytes_t *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    put32(b, u);
}

static void pad4(bytes_t *b)
{
    while (b->len % 4) b->p[b->len++] = 0;
}

/* The KRVF message of a frame (docs/viewer.md). */
static bool frame_message(const kr__frame_t *f, bytes_t *b)
{
    size_t label_bytes = 0;
    for (uint32_t i = 0; i < f->label_count; i++) label_bytes += (8 + (size_t)f->label_length[i] + 3) / 4 * 4;
    size_t cells = (size_t)f->field_count * f->grid_width * f->grid_height;
    size_t agents = ((size_t)f->n * 18 + 3) / 4 * 4;
    if (!(b->p = malloc(40 + agents + cells * 4 + label_bytes))) return false;
    b->len = 0;
    memcpy(b->p, "KRVF", 4);
    b->len = 4;
    put32(b, 1);
    uint64_t t;
    memcpy(&t, &f->time, sizeof t);
    put32(b, (uint32_t)t);
    put32(b, (uint32_t)(t >> 32));
    put32(b, f->n);
    put32(b, f->field_count);
    put32(b, f->grid_width);
    put32(b, f->grid_height);
    put32(b, (uint32_t)label_bytes);
    put32(b, 0);
    const float *columns[3] = { f->x, f->y, f->size };
    for (int c = 0; c < 3; c++)
        for (uint32_t i = 0; i < f->n; i++) putf32(b, columns[c][i]);
    for (uint32_t i = 0; i < f->n; i++) put32(b, f->rgba[i]);
    memcpy(b->p + b->len, f->shape, f->n);
    b->len += f->n;
    memcpy(b->p + b->len, f->layer, f->n);
    b->len += f->n;
    pad4(b);
    for (size_t i = 0; i < cells; i++) putf32(b, f->fields[i]);
    for (uint32_t i = 0; i < f->label_count; i++) {
        put32(b, f->label_agent[i]);
        put32(b, f->label_length[i]);
        memcpy(b->p + b->len, f->label[i], f->label_length[i]);
        b->len += f->label_length[i];
        pad4(b);
    }
    return true;
}

/* "world=W&index=N" (either order): whole numbers, nothing else. */
static bool frame_query(const char *query, size_t *world, size_t *index)
{
    bool has_world = false, has_index = false;
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq) return false;
        const char *v = eq + 1;
        size_t vlen = len - (size_t)(v - p);
        if (!vlen || vlen > 9 || strspn(v, "0123456789") < vlen) return false;
        size_t value = (size_t)strtoul(v, NULL, 10);
        if ((size_t)(eq - p) == 5 && !strncmp(p, "world", 5) && !has_world) has_world = true, *world = value;
        else if ((size_t)(eq - p) == 5 && !strncmp(p, "index", 5) && !has_index) has_index = true, *index = value;
        else return false;
        p = amp ? amp + 1 : NULL;
    }
    return has_world && has_index;
}

static void send_frame(const server_t *s, reply_t *out, bool head_only, const char *query)
{
    size_t world = 0, index = 0;
    if (!frame_query(query, &world, &index) || world >= s->rec->world_count || index >= s->rec->frame_count)
        return not_found(out, head_only);
    kr__frame_t f;
    bytes_t b = { 0 };
    bool loaded = !kr__recording_load(s->rec, world, index, &f);
    if (!loaded || !frame_message(&f, &b)) {
        char text[1100];
        snprintf(text, sizeof text, "%s\n", loaded ? "out of memory" : kr_last_error());
        fprintf(stderr, "kairos view: %s", text);
        send_text(out, head_only, 500, "Internal Server Error", text);
    } else if (send_head(out, 200, "OK", "application/octet-stream", b.len, NULL) && !head_only) {
        reply_add(out, b.p, b.len);
    }
    free(b.p);
    kr__frame_fini(&f);
}

/* ---- requests ---- */

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                                                       : -1;
}

/* Decodes the URL path into out and checks it: it starts with "/", no
 * segment is empty or starts with "." (".", "..", hidden files), and
 * nothing decodes to a slash, a
 * backslash or a NUL (an encoded slash could hide a ".." segment). */
static bool safe_path(const char *path, size_t len, char *out, size_t cap)
{
    if (!len || path[0] != '/' || len >= cap) return false;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = path[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex(path[i + 1]) : -1, lo = i + 2 < len ? hex(path[i + 2]) : -1;
            if (hi < 0 || lo < 0) return false;
            c = (char)(hi * 16 + lo);
            if (c == '/' || c == '\\' || c == '\0') return false;
            i += 2;
        } else if (c == '\\') {
            return false;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    if (!strcmp(out, "/")) return true;
    for (const char *seg = out + 1;;) {
        const char *slash = strchr(seg, '/');
        size_t seg_len = slash ? (size_t)(slash - seg) : strlen(seg);
        /* (".", ".." and hidden files alike) */
        if (!seg_len || seg[0] == '.') return false;
        if (!slash) return true;
        seg = slash + 1;
    }
}

static void answer(const server_t *s, reply_t *out, char *request)
{
    char *line_end = strstr(request, "\r\n");
    if (line_end) *line_end = '\0';
    char *method = request, *target = strchr(request, ' ');
    char *version = target ? strchr(target + 1, ' ') : NULL;
    if (!target || !version || strncmp(version + 1, "HTTP/1.", 7))
        return send_text(out, false, 400, "Bad Request", "bad request\n");
    *target++ = '\0';
    *version = '\0';
    bool head_only = !strcmp(method, "HEAD");
    if (!head_only && strcmp(method, "GET"))
        return send_text(out, false, 405, "Method Not Allowed", "only GET and HEAD\n");
    char *query = strchr(target, '?');
    if (query) *query++ = '\0';
    char path[REQUEST_MAX];
    if (!safe_path(target, strlen(target), path, sizeof path)) return not_found(out, head_only);
    if (!strcmp(path, "/")) return send_file(out, head_only, s->page_root, "index.html");
    /* the page's own files, not the npm packages beside them (/lib/ serves uPlot's dist/) */
    if (!strncmp(path, "/viewer/", 8) && strncmp(path + 8, "node_modules/", 13))
        return send_file(out, head_only, s->page_root, path + 8);
    if (!strncmp(path, "/lib/uplot/dist/", 16)) return send_file(out, head_only, s->lib_root, path + 16);
    if (!strcmp(path, "/recording/manifest.json")) return send_file(out, head_only, s->recording_root, "manifest.json");
    if (!strcmp(path, "/recording/series.csv") && s->rec->series)
        return send_file(out, head_only, s->recording_root, s->rec->series);
    if (!strcmp(path, "/api/frame")) return send_frame(s, out, head_only, query);
    not_found(out, head_only);
}

/* ---- the loop ---- */

static void drop(client_t *c)
{
    close(c->fd);
    c->fd = -1;
    free(c->out.p);
    c->out = (reply_t){ 0 };
    c->answering = false;
}

/* Reads what c has sent; answers once the request's head is complete. */
static void serve_client(const server_t *s, client_t *c)
{
    ssize_t n = recv(c->fd, c->request + c->len, REQUEST_MAX - c->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return drop(c);
    bool nul = memchr(c->request + c->len, '\0', (size_t)n) != NULL;
    c->len += (size_t)n;
    c->request[c->len] = '\0';
    bool complete = strstr(c->request, "\r\n\r\n") || strstr(c->request, "\n\n");
    if (!complete && !nul && c->len < REQUEST_MAX) return;
    if (nul) send_text(&c->out, false, 400, "Bad Request", "bad request\n");
    else if (complete) answer(s, &c->out, c->request);
    else send_text(&c->out, false, 431, "Request Header Fields Too Large", "request too large\n");
    if (c->out.failed) return drop(c);
    c->answering = true;
    c->sent = 0;
    c->deadline_ns = kr__monotonic_ns() + (uint64_t)CLIENT_SECONDS * 1000000000u;
}

/* Sends what c takes of its answer now; drops it once all is sent. */
static void send_some(client_t *c)
{
    ssize_t n = send(c->fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return drop(c);
    c->sent += (size_t)n;
    c->deadline_ns = kr__monotonic_ns() + (uint64_t)CLIENT_SECONDS * 1000000000u;
    if (c->sent == c->out.len) drop(c);
}

static int listen_on(const char *host, const char *port, int *bound_port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
    int e = getaddrinfo(host, port, &hints, &res);
    if (e) {
        fprintf(stderr, "kairos: --host %s: expected an address to listen on, found %s\n", host, gai_strerror(e));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        int one = 1;
        if (fd >= 0 && (fcntl(fd, F_SETFL, O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC) ||
                        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
                        bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 32))) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "kairos: %s port %s: expected a free port to listen on, found %s\n", host, port,
                strerror(err ? err : EADDRNOTAVAIL));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* The page's folder: KAIROS_VIEWER_DIR, else the source tree's viewer/
 * for a kairos of the build tree, the installed copy for an installed one
 * (runtime/data_path.h). */
static void find_page(server_t *s)
{
    const char *env = getenv("KAIROS_VIEWER_DIR");
    char installed[PATH_MAX];
    const char *candidates[] = { env, env ? NULL
                                          : kr__data_path(KAIROS_VIEWER_SOURCE, KAIROS_VIEWER_INSTALLED, installed,
                                                          sizeof installed) };
    for (size_t i = 0; i < 2 && !s->page_root[0]; i++) {
        char index[PATH_MAX + 16];
        if (!candidates[i]) continue;
        snprintf(index, sizeof index, "%s/index.html", candidates[i]);
        if ((env || !access(index, R_OK)) && !realpath(candidates[i], s->page_root)) s->page_root[0] = '\0';
    }
    if (!s->page_root[0]) {
        fprintf(stderr, "kairos view: warning: no viewer page found (%s); only the data is served\n",
                env ? "KAIROS_VIEWER_DIR" : candidates[1]);
        return;
    }
    char lib[PATH_MAX + 32];
    snprintf(lib, sizeof lib, "%s/node_modules/uplot/dist", s->page_root);
    if (!realpath(lib, s->lib_root)) s->lib_root[0] = '\0';
}

int kr__cli_view(int argc, char **argv)
{
    const char *dir = NULL, *host = "127.0.0.1", *port = "0";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(kr__view_help, stdout);
            return 0;
        } else if (!strcmp(a, "--port") || !strcmp(a, "--host")) {
            if (!kr__cli_has_value(i, argc, argv) || !argv[i + 1][0]) {
                fprintf(stderr, "kairos: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            char *end;
            long p = strtol(v, &end, 10);
            if (!strcmp(a, "--host")) host = v;
            else if (*end || p < 0 || p > 65535) {
                fprintf(stderr, "kairos: --port: expected a port from 0 to 65535 (0: any free one), found \"%s\"\n", v);
                return 2;
            } else port = v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "kairos: view: unknown option %s (kairos view --help lists them)\n", a);
            return 2;
        } else if (!dir) {
            dir = a;
        } else {
            fprintf(stderr, "kairos: one frames folder only (found another: %s)\n", a);
            return 2;
        }
    }
    if (!dir) {
        fputs("kairos: view: expected a frames folder DIR, found none (kairos view --help lists the options)\n",
              stderr);
        return 2;
    }
    kr__recording_t *rec;
    if (kr__recording_open(dir, &rec)) {
        fprintf(stderr, "kairos: %s\n", kr_last_error());
        return 2;
    }
    server_t *s = calloc(1, sizeof *s);
    if (!s || !realpath(dir, s->recording_root)) {
        fprintf(stderr, "kairos: %s: %s\n", dir, s ? strerror(errno) : "out of memory");
        free(s);
        kr__recording_close(rec);
        return s ? 2 : 1;
    }
    s->rec = rec;
    find_page(s);
    int bound, lfd = listen_on(host, port, &bound);
    if (lfd < 0) {
        free(s);
        kr__recording_close(rec);
        return 2;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    bool v6 = strchr(host, ':') != NULL;
    printf("kairos view: serving %s at http://%s%s%s:%d/\n", dir, v6 ? "[" : "", host, v6 ? "]" : "", bound);
    fflush(stdout);
    for (int i = 0; i < MAX_CLIENTS; i++) s->clients[i].fd = -1;
    while (!stop_signal) {
        struct pollfd fds[MAX_CLIENTS + 1] = { { .fd = lfd, .events = POLLIN } };
        for (int i = 0; i < MAX_CLIENTS; i++)
            fds[i + 1] = (struct pollfd){ .fd = s->clients[i].fd, .events = s->clients[i].answering ? POLLOUT : POLLIN };
        /* a short wait, so that a signal between the check and poll is seen soon */
        if (poll(fds, MAX_CLIENTS + 1, 200) < 0 && errno != EINTR) break;
        uint64_t now = kr__monotonic_ns();
        for (int i = 0; i < MAX_CLIENTS; i++) {
            client_t *c = &s->clients[i];
            if (c->fd >= 0 && fds[i + 1].revents) {
                if (c->answering) send_some(c);
                else serve_client(s, c);
            }
            if (c->fd >= 0 && now > c->deadline_ns) drop(c);
        }
        if (fds[0].revents & POLLIN) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0 && (fcntl(fd, F_SETFL, O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))) {
                close(fd);
                fd = -1;
            }
            client_t *slot = NULL;
            for (int i = 0; fd >= 0 && i < MAX_CLIENTS && !slot; i++)
                if (s->clients[i].fd < 0) slot = &s->clients[i];
            if (slot) {
                slot->fd = fd;
                slot->len = 0;
                slot->deadline_ns = now + (uint64_t)CLIENT_SECONDS * 1000000000u;
            } else if (fd >= 0) {
                close(fd); /* all slots busy: the client may try again */
            }
        }
    }
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (s->clients[i].fd >= 0) drop(&s->clients[i]);
    close(lfd);
    printf("kairos view: stopped (%s)\n", stop_signal == SIGINT ? "SIGINT" : stop_signal == SIGTERM ? "SIGTERM" : "poll failed");
    fflush(stdout);
    free(s);
    kr__recording_close(rec);
    return stop_signal ? 0 : 1;
}
