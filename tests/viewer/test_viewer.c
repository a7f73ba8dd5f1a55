/* Recordings of frames (docs/viewer.md): the reader's refusals and merged
 * frames, `kairos frames --png` (sizes, colours at known pixels, the same
 * bytes from one simulator or two regions), and `kairos view` (routes, the
 * frame API, paths that try to leave the served folders, a client that
 * never finishes its request, SIGINT and SIGTERM). The recordings come
 * from make_recording.py (described there). */
#define _GNU_SOURCE /* memmem, usleep */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <png.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include "runtime/recording.h"
#include "tests/cli/spawn.h"

TestSuite(viewer, .fini = cli_cleanup);

/* make_recording.py DIR [ARG [ARG]] into the test's folder; returns DIR. */
static const char *make(const char *name, const char *arg1, const char *arg2)
{
    const char *python = getenv("PYTHON3"), *dir = cli_path(name);
    cr_assert(python, "PYTHON3 is not set");
    char *argv[] = { (char *)python, (char *)cli_source("tests/viewer/make_recording.py"), (char *)dir,
                     (char *)arg1, (char *)arg2, NULL };
    cli_result_t r = cli_spawn(argv);
    cr_assert_eq(r.status, 0, "make_recording.py %s: %s", name, r.err);
    cli_free(&r);
    return dir;
}

/* ---- the reader ---- */

typedef struct refusal {
    const char *spoil, *file, *says;
    kr_status_t status;
} refusal_t;

Test(viewer, reader_refusals)
{
    static const refusal_t cases[] = {
        { "no-manifest", "manifest.json", "expected the manifest of a finished recording", KR_ERR_CORRUPT },
        { "foreign", "manifest.json", "format: expected \"kairos-frames\", found \"someone-else\"", KR_ERR_CORRUPT },
        { "version", "manifest.json", "version: expected 1, found 2", KR_ERR_CORRUPT },
        { "missing-file", "eco.frames", "expected the frames of simulator eco", KR_ERR_CORRUPT },
        { "truncated", "eco.frames", "truncated", KR_ERR_CORRUPT },
        { "magic", "eco.frames", "block 0 at byte 16: expected KRFB", KR_ERR_CORRUPT },
        { "sizes", "eco.frames", "block 0: expected 1000", KR_ERR_CORRUPT },
        { "count", "eco.frames", "expected 3 frames, found 1", KR_ERR_CORRUPT },
        /* (reserved fields not 0 were drawn) */
        { "reserved", "eco.frames", "expected 0 in the header's last 4 bytes, found 1", KR_ERR_CORRUPT },
        { "block-reserved", "eco.frames", "block 0: expected 0 in the block header's last 4 bytes, found 7",
          KR_ERR_CORRUPT },
        /* hand-edited manifests, each read as if right before */
        { "twice", "manifest.json", "worlds[1].simulators[0].file: expected a file of its own (another simulator's "
                                    "names it too), found \"clock.frames\"", KR_ERR_CORRUPT },
        { "no-series", "manifest.json", "series: expected a file there (or null), found \"series.csv\"",
          KR_ERR_CORRUPT },
        { "no-simulators", "manifest.json", "worlds[0].simulators: expected at least one simulator, found []",
          KR_ERR_CORRUPT },
        { "top-array", "manifest.json", "(top): expected an object, found []", KR_ERR_CORRUPT },
        { "end-early", "manifest.json", "end_time: expected a time at or after the last frame's, found -5",
          KR_ERR_CORRUPT },
        { "every-zero", "manifest.json", "frame_every: expected a time > 0, found 0", KR_ERR_CORRUPT },
        { "ranks-zero", "manifest.json", "ranks: expected a whole number >= 1, found 0", KR_ERR_CORRUPT },
        { "file-manifest", "manifest.json", "worlds[0].simulators[0].file: expected the name of a frames file in the "
                                            "folder (not the manifest's or the series'), found \"manifest.json\"",
          KR_ERR_CORRUPT },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad-%s", cases[i].spoil);
        const char *dir = make(name, "--break", cases[i].spoil);
        kr__recording_t *rec = (kr__recording_t *)1;
        cr_assert_eq(kr__recording_open(dir, &rec), cases[i].status, "%s: %s", cases[i].spoil, kr_last_error());
        cr_assert_null(rec);
        char file[600];
        snprintf(file, sizeof file, "%s/%s: ", dir, cases[i].file);
        cr_assert(!strncmp(kr_last_error(), file, strlen(file)) && strstr(kr_last_error(), cases[i].says),
                  "%s: %s", cases[i].spoil, kr_last_error());
        cr_assert_null(strchr(kr_last_error(), '\n'));
    }
    /* a manifest or a frames file that is a named pipe: refused at once
     * (kairos frames and the viewer waited in open() for a writer) */
    const char *piped[] = { "manifest.json", "eco.frames" };
    for (int k = 0; k < 2; k++) {
        char name[64], path[600];
        snprintf(name, sizeof name, "piped-%d", k);
        const char *dir = make(name, NULL, NULL);
        snprintf(path, sizeof path, "%s/%s", dir, piped[k]);
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(mkfifo(path, 0644), 0);
        kr__recording_t *rec = NULL;
        cr_assert_neq(kr__recording_open(dir, &rec), KR_OK);
        cr_assert(strstr(kr_last_error(), piped[k]) && strstr(kr_last_error(), "expected a regular file"), "%s",
                  kr_last_error());
    }
    kr__recording_t *rec;
    cr_assert_eq(kr__recording_open(cli_path("nowhere"), &rec), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "nowhere: expected a frames folder, found none"), "%s", kr_last_error());
    /* a block that does not decompress is found when its frame is read */
    cr_assert_eq(kr__recording_open(make("bad-zstd", "--break", "zstd"), &rec), KR_OK, "%s", kr_last_error());
    kr__frame_t f;
    cr_assert_eq(kr__recording_load(rec, 1, 0, &f), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "eco.frames: frame 0: expected a zstd frame"), "%s", kr_last_error());
    kr__frame_fini(&f);
    cr_assert_eq(kr__recording_load(rec, 1, 1, &f), KR_OK, "%s", kr_last_error());
    kr__frame_fini(&f);
    kr__recording_close(rec);
    /* ... and so is one whose content does not match its zstd checksum */
    cr_assert_eq(kr__recording_open(make("bad-checksum", "--break", "checksum"), &rec), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__recording_load(rec, 1, 0, &f), KR_ERR_CORRUPT);
    cr_assert(strstr(kr_last_error(), "eco.frames: frame 0: ") && strstr(kr_last_error(), "checksum"), "%s",
              kr_last_error());
    kr__frame_fini(&f);
    kr__recording_close(rec);
}

/* Through the command: exit 2 and one line naming the file. */
Test(viewer, refusal_on_the_command_line)
{
    const char *dir = make("bad", "--break", "truncated");
    cli_result_t r = kairos("frames", dir, "--png", cli_path("out"), NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, "kairos: ") == r.err && strstr(r.err, "eco.frames: "), "%s", r.err);
    cli_free(&r);
    r = kairos("view", dir, "--port", "0", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    cli_free(&r);
}

static void frames_equal(const kr__frame_t *a, const kr__frame_t *b)
{
    cr_assert_eq(a->n, b->n);
    cr_assert_eq(memcmp(a->id, b->id, a->n * 8), 0);
    cr_assert_eq(memcmp(a->x, b->x, a->n * 4), 0);
    cr_assert_eq(memcmp(a->rgba, b->rgba, a->n * 4), 0);
    cr_assert_eq(memcmp(a->layer, b->layer, a->n), 0);
    cr_assert_eq(memcmp(a->fields, b->fields, (size_t)a->grid_width * a->grid_height * 4), 0);
    cr_assert_eq(a->label_count, b->label_count);
    for (uint32_t i = 0; i < a->label_count; i++) cr_assert_eq(a->label_agent[i], b->label_agent[i]);
}

Test(viewer, reader_merges_and_sorts)
{
    kr__recording_t *one, *two;
    cr_assert_eq(kr__recording_open(make("one", "--cut", "1"), &one), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__recording_open(make("two", "--cut", "2"), &two), KR_OK, "%s", kr_last_error());
    cr_assert_eq(one->frame_count, 3);
    cr_assert_eq(one->world_count, 2);
    const kr__rec_world_t *w = &two->worlds[1];
    cr_assert_str_eq(w->name, "eco");
    cr_assert_eq(w->layer_count, 3);
    cr_assert_eq(w->layers[2].shape, KR__SHAPE_DIAMOND);
    cr_assert_eq(w->layers[0].rgba, 0xff41961a);
    cr_assert_eq(w->sim_count, 2);
    cr_assert(w->sims[1].has_rect && w->sims[1].rect[0] == 4);
    cr_assert_eq(kr__recording_world_named(two, "eco"), 1);
    cr_assert_eq(kr__recording_world_named(two, "none"), -1);
    for (size_t frame = 0; frame < 3; frame++) {
        kr__frame_t a, b;
        cr_assert_eq(kr__recording_load(one, 1, frame, &a), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr__recording_load(two, 1, frame, &b), KR_OK, "%s", kr_last_error());
        cr_assert_eq(a.time, (double)frame);
        /* (layer, id): plants 1 and 5, swarm 2, beacon 9 */
        cr_assert_eq(a.n, 4);
        uint64_t ids[] = { 1, 5, 2, 9 };
        for (int i = 0; i < 4; i++) cr_assert_eq(a.id[i], ids[i]);
        cr_assert_float_eq(a.x[2], 2.5 + frame, 1e-6);
        cr_assert_eq(a.shape[3], KR__SHAPE_DIAMOND);
        cr_assert_eq(a.label_count, 1);
        cr_assert_eq(a.label_agent[0], 2);
        cr_assert(a.label_length[0] == 2 && !memcmp(a.label[0], "s2", 2));
        cr_assert_eq(a.grid_width, 8);
        cr_assert_float_eq(a.fields[0 * 8 + 3], 3 / 8.0, 1e-7);
        cr_assert(isnan(a.fields[5 * 8 + 3]), "row 5 is never recorded");
        frames_equal(&a, &b);
        kr__frame_fini(&a);
        kr__frame_fini(&b);
    }
    kr__recording_close(one);
    kr__recording_close(two);
}

Test(viewer, colormap)
{
    uint32_t bw[] = { 0xff000000, 0xffffffff }, three[] = { 0xff0000ff, 0xff00ff00, 0x80ff0000 };
    cr_assert_eq(kr__colormap(bw, 2, 0, 1, 0.375), 0xff606060); /* 95.625 -> 96 */
    cr_assert_eq(kr__colormap(bw, 2, 0, 1, -3), bw[0]);
    cr_assert_eq(kr__colormap(bw, 2, 0, 1, 7), bw[1]);
    cr_assert_eq(kr__colormap(bw, 2, 0, 1, NAN), 0);
    cr_assert_eq(kr__colormap(three, 3, 0, 2, 1), three[1]);
    cr_assert_eq(kr__colormap(three, 3, 0, 2, 1.5), 0xc0808000); /* halfway green -> blue: 127.5 -> 128, alpha 191.5 -> 192 */
    cr_assert_eq(kr__colormap(three, 3, 5, 5, 5), three[0]);
    cr_assert_eq(kr__colormap(three, 3, 5, 5, 5.5), three[2]);
}

/* ---- pictures ---- */

typedef struct picture {
    uint32_t width, height;
    uint8_t *rgba;
} picture_t;

static picture_t read_png(const char *path)
{
    png_image image = { .version = PNG_IMAGE_VERSION };
    cr_assert(png_image_begin_read_from_file(&image, path), "%s: %s", path, image.message);
    image.format = PNG_FORMAT_RGBA;
    picture_t p = { image.width, image.height, malloc(PNG_IMAGE_SIZE(image)) };
    cr_assert(png_image_finish_read(&image, NULL, p.rgba, 0, NULL), "%s: %s", path, image.message);
    return p;
}

static uint32_t pixel(const picture_t *p, uint32_t x, uint32_t y)
{
    const uint8_t *c = p->rgba + ((size_t)y * p->width + x) * 4;
    return (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3]; /* 0xRRGGBBAA, to read */
}

Test(viewer, png_pictures)
{
    const char *one = make("one", NULL, NULL), *two = make("two", "--cut", "2");
    cli_result_t r = kairos("frames", one, "--png", cli_path("png1"), "--scale", "10", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    r = kairos("frames", two, "--png", cli_path("png2"), "--scale", "10", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "png1/frame-%06d.png", i);
        char *a = cli_slurp(cli_path(name));
        snprintf(name, sizeof name, "png2/frame-%06d.png", i);
        char *b = cli_slurp(cli_path(name));
        cr_assert(a && b, "frame %d written", i);
        struct stat sa, sb;
        stat(cli_path(name), &sb);
        snprintf(name, sizeof name, "png1/frame-%06d.png", i);
        stat(cli_path(name), &sa);
        cr_assert(sa.st_size == sb.st_size && !memcmp(a, b, (size_t)sa.st_size),
                  "frame %d: one simulator and two regions give the same bytes", i);
        free(a);
        free(b);
    }
    picture_t p = read_png(cli_path("png1/frame-000000.png"));
    cr_assert(p.width == 80 && p.height == 60, "%ux%u", p.width, p.height);
    cr_assert_eq(pixel(&p, 15, 15), 0x1a9641ff, "plant 1's circle at (1.5, 1.5)");
    cr_assert_eq(pixel(&p, 35, 5), 0x606060ff, "the field's cell (3, 0): 3/8 of the way to white");
    cr_assert_eq(pixel(&p, 5, 55), 0xffffffff, "row 5 has no value: white");
    cr_assert_eq(pixel(&p, 20, 30), 0xd7191cff, "swarm 2's square, top left pixel");
    cr_assert_eq(pixel(&p, 29, 39), 0xd7191cff, "swarm 2's square, bottom right pixel");
    cr_assert_eq(pixel(&p, 30, 35), 0x606060ff, "beside the square, the field (cell 3)");
    cr_assert_eq(pixel(&p, 65, 15), 0x2b83baff, "beacon 9's diamond, centre");
    cr_assert_eq(pixel(&p, 56, 6), 0x9f9f9fff, "beacon 9's diamond leaves its corners: field cell 5");
    cr_assert_eq(pixel(&p, 11, 11), 0x202020ff, "plant 1's circle leaves its corners: field cell 1");
    free(p.rgba);
    p = read_png(cli_path("png1/frame-000002.png"));
    cr_assert_eq(pixel(&p, 45, 35), 0xd7191cff, "swarm 2 moved two units right");
    free(p.rgba);
}

Test(viewer, png_default_scale_and_times)
{
    const char *dir = make("one", NULL, NULL);
    cli_result_t r = kairos("frames", dir, "--png", cli_path("at"), "--at", "1", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "1024x768 pixels (128 per unit)"), "%s", r.out);
    cli_free(&r);
    cr_assert(cli_exists(cli_path("at/frame-000001.png")));
    cr_assert(!cli_exists(cli_path("at/frame-000000.png")) && !cli_exists(cli_path("at/frame-000002.png")));
    picture_t p = read_png(cli_path("at/frame-000001.png"));
    cr_assert(p.width == 1024 && p.height == 768);
    free(p.rgba);
    r = kairos("frames", dir, "--png", cli_path("at"), "--at", "0,1.6", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--at 1.6: expected the time of a frame, found none (the nearest: 2, frame 2)"), "%s",
              r.err);
    cli_free(&r);
    /* past either end, the nearest is that end (1e18 - 2 and 1e18 are one double) */
    r = kairos("frames", dir, "--png", cli_path("at"), "--at", "1e18", NULL);
    cr_assert(r.status == 2 && strstr(r.err, "found none (the nearest: 2, frame 2)"), "%s", r.err);
    cli_free(&r);
    r = kairos("frames", dir, "--png", cli_path("at"), "--at", "-1e18", NULL);
    cr_assert(r.status == 2 && strstr(r.err, "found none (the nearest: 0, frame 0)"), "%s", r.err);
    cli_free(&r);
    r = kairos("frames", dir, "--png", cli_path("at"), "--world", "nope", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(cli_lines(r.err), 1, "%s", r.err);
    char want[600];
    snprintf(want, sizeof want, "kairos: %s: --world: expected the name of a world of the recording, found \"nope\"",
             dir);
    cr_assert(strstr(r.err, want), "the line names the folder: %s", r.err);
    cli_free(&r);
    r = kairos("frames", dir, "--png", cli_path("clock"), "--world", "clock", "--scale", "3", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);
    p = read_png(cli_path("clock/frame-000000.png"));
    cr_assert(p.width == 3 && p.height == 3 && pixel(&p, 1, 1) == 0xffffffff, "a world with nothing to draw: white");
    free(p.rgba);
    /* bounds too large to draw at the least default scale: the manifest's fault, not --scale's */
    const char *huge = make("huge", "--break", "huge");
    r = kairos("frames", huge, "--png", cli_path("huge-png"), "--world", "clock", NULL);
    cr_assert(r.status == 2 && cli_lines(r.err) == 1 &&
              strstr(r.err, "huge/manifest.json: worlds[0].bounds: expected a world of at most 16384 units a side") &&
              strstr(r.err, "found 1e+30 x 1"), "%s", r.err);
    cli_free(&r);
}

/* ---- the server ---- */

/* The page's stand-in: index.html, a script, the uPlot files and one file
 * of the npm package outside dist/, and a link that leads out. */
static const char *fixture_page(void)
{
    const char *page = cli_path("page");
    cr_assert_eq(mkdir(page, 0755), 0);
    cr_assert_eq(mkdir(cli_path("page/node_modules"), 0755), 0);
    cr_assert_eq(mkdir(cli_path("page/node_modules/uplot"), 0755), 0);
    cr_assert_eq(mkdir(cli_path("page/node_modules/uplot/dist"), 0755), 0);
    cli_write(cli_path("page/index.html"), "<!doctype html><title>viewer</title>");
    cli_write(cli_path("page/app.js"), "let page = 1;");
    cli_write(cli_path("page/node_modules/uplot/dist/uPlot.iife.min.js"), "var uPlot;");
    cli_write(cli_path("page/node_modules/uplot/package.json"), "{}");
    cli_write(cli_path("secret.txt"), "secret");
    cr_assert_eq(symlink(cli_path("secret.txt"), cli_path("page/leak.js")), 0);
    return page;
}

static pid_t start_view(const char *dir, int *port)
{
    setenv("KAIROS_VIEWER_DIR", fixture_page(), 1);
    char *argv[] = { getenv("KAIROS_BIN"), "view", (char *)dir, "--port", "0", NULL };
    pid_t pid = cli_start(argv);
    for (int i = 0; i < 400; i++) {
        char *out = cli_slurp(cli_path("stdout.txt"));
        const char *at = out ? strstr(out, "at http://127.0.0.1:") : NULL;
        if (at && strchr(at, '\n')) {
            cr_assert(strstr(out, "kairos view: serving ") == out, "%s", out);
            *port = atoi(at + strlen("at http://127.0.0.1:"));
            free(out);
            return pid;
        }
        free(out);
        usleep(25000);
    }
    kill(pid, SIGKILL);
    cr_assert_fail("kairos view printed no address");
    return -1;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

typedef struct reply {
    int status;
    char head[2048];
    unsigned char *body;
    size_t body_len;
} reply_t;

/* Sends a raw request (exactly these bytes: no client tidies the path)
 * and reads the answer to the end. */
static reply_t http_bytes(int port, const char *request, size_t n)
{
    int fd = connect_to(port);
    cr_assert_eq(send(fd, request, n, 0), (ssize_t)n);
    size_t cap = 1 << 16, len = 0;
    unsigned char *all = malloc(cap);
    for (ssize_t n; (n = recv(fd, all + len, cap - len, 0)) > 0;) {
        len += (size_t)n;
        if (len == cap) all = realloc(all, cap *= 2);
    }
    close(fd);
    reply_t r = { 0 };
    unsigned char *end = memmem(all, len, "\r\n\r\n", 4);
    cr_assert(end, "an answer to %s", request);
    size_t head = (size_t)(end - all);
    memcpy(r.head, all, head < sizeof r.head - 1 ? head : sizeof r.head - 1);
    cr_assert_eq(sscanf(r.head, "HTTP/1.1 %d", &r.status), 1, "%s", r.head);
    r.body_len = len - head - 4;
    r.body = malloc(r.body_len + 1);
    memcpy(r.body, end + 4, r.body_len);
    r.body[r.body_len] = 0;
    free(all);
    return r;
}

static reply_t http(int port, const char *request) { return http_bytes(port, request, strlen(request)); }

static reply_t get(int port, const char *target)
{
    char request[1024];
    snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", target);
    return http(port, request);
}

static void expect(int port, const char *target, int status, const char *type, const char *body)
{
    reply_t r = get(port, target);
    cr_assert_eq(r.status, status, "%s: %s", target, r.head);
    if (type) cr_assert(strstr(r.head, type), "%s: %s", target, r.head);
    if (body) cr_assert_str_eq((char *)r.body, body, "%s", target);
    free(r.body);
}

static void stop(pid_t pid, int sig, const char *name)
{
    kill(pid, sig);
    cli_result_t r = cli_wait(pid);
    cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
    char line[64];
    snprintf(line, sizeof line, "kairos view: stopped (%s)\n", name);
    cr_assert(strstr(r.out, line), "%s", r.out);
    cli_free(&r);
}

Test(viewer, server_routes)
{
    const char *dir = make("one", "--series", NULL);
    int port;
    pid_t pid = start_view(dir, &port);
    expect(port, "/", 200, "Content-Type: text/html", "<!doctype html><title>viewer</title>");
    expect(port, "/viewer/app.js", 200, "Content-Type: text/javascript", "let page = 1;");
    expect(port, "/lib/uplot/dist/uPlot.iife.min.js", 200, "text/javascript", "var uPlot;");
    expect(port, "/lib/uplot/package.json", 404, NULL, NULL);
    expect(port, "/recording/manifest.json", 200, "Content-Type: application/json", NULL);
    expect(port, "/recording/series.csv", 200, "Content-Type: text/csv", "time,plants\n0,2\n1,2\n2,2\n");
    expect(port, "/recording/eco.frames", 404, NULL, NULL);
    expect(port, "/api/frame?world=1&index=3", 404, NULL, NULL);
    expect(port, "/api/frame?world=2&index=0", 404, NULL, NULL);
    expect(port, "/api/frame?world=1", 404, NULL, NULL);
    expect(port, "/nothing", 404, NULL, NULL);
    reply_t r = http(port, "HEAD /viewer/app.js HTTP/1.1\r\n\r\n");
    cr_assert(r.status == 200 && r.body_len == 0 && strstr(r.head, "Content-Length: 13"), "%s", r.head);
    free(r.body);
    r = http(port, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    cr_assert(r.status == 405 && strstr(r.head, "Allow: GET, HEAD"), "%s", r.head);
    free(r.body);
    stop(pid, SIGINT, "SIGINT");
}

/* The KRVF message of docs/viewer.md, byte by byte. */
Test(viewer, server_frame_api)
{
    int port;
    pid_t pid = start_view(make("two", "--cut", "2"), &port);
    reply_t r = get(port, "/api/frame?index=2&world=1");
    cr_assert_eq(r.status, 200, "%s", r.head);
    cr_assert(strstr(r.head, "application/octet-stream"));
    const unsigned char *b = r.body;
    uint32_t u[10];
    memcpy(u, b, sizeof u);
    double t;
    memcpy(&t, b + 8, 8);
    cr_assert(!memcmp(b, "KRVF", 4) && u[1] == 1 && t == 2.0);
    uint32_t n = u[4], fields = u[5], w = u[6], h = u[7], labels = u[8];
    cr_assert(n == 4 && fields == 1 && w == 8 && h == 6 && labels == 12 && u[9] == 0, "%u %u %u %u %u", n, fields,
              w, h, labels);
    size_t agents = (n * 18 + 3) / 4 * 4;
    cr_assert_eq(r.body_len, 40 + agents + (size_t)fields * w * h * 4 + labels);
    float x[4], size[4], value[48];
    memcpy(x, b + 40, sizeof x);
    memcpy(size, b + 40 + 2 * 4 * n, sizeof size);
    cr_assert(x[0] == 1.5f && x[1] == 6.5f && x[2] == 4.5f && x[3] == 6.5f, "sorted by (layer, id)");
    cr_assert(size[0] == 0.8f && size[3] == 2.0f);
    uint32_t rgba;
    memcpy(&rgba, b + 40 + 3 * 4 * n + 8, 4);
    cr_assert_eq(rgba, 0xff1c19d7, "the swarm's red, bytes R G B A");
    const unsigned char *shape = b + 40 + 16 * n, *layer = shape + n;
    cr_assert(shape[0] == 0 && shape[2] == 1 && shape[3] == 3 && layer[0] == 0 && layer[2] == 1 && layer[3] == 2);
    memcpy(value, b + 40 + agents, sizeof value);
    cr_assert(value[3] == 3 / 8.0f && value[8 + 7] == 7 / 8.0f && isnan(value[40]));
    const unsigned char *label = b + 40 + agents + sizeof value;
    memcpy(u, label, 8);
    cr_assert(u[0] == 2 && u[1] == 2 && !memcmp(label + 8, "s2\0\0", 4), "the label of agent 2, padded");
    free(r.body);
    stop(pid, SIGTERM, "SIGTERM");
}

Test(viewer, server_stays_inside)
{
    const char *dir = make("one", "--series", NULL);
    int port;
    pid_t pid = start_view(dir, &port);
    static const char *const outside[] = {
        "/../secret.txt", "/viewer/../../secret.txt", "/%2e%2e/secret.txt", "/viewer/%2e%2e/%2e%2e/secret.txt",
        "/viewer/..%2f..%2fsecret.txt", "/viewer/..%2F..%2Fsecret.txt", "/viewer/..%5c..%5csecret.txt",
        "/viewer/..\\..\\secret.txt", "/viewer//etc/passwd", "/viewer/%2fetc%2fpasswd", "/viewer/app.js%00.html",
        "/viewer/./app.js", "/lib/uplot/dist/../package.json", "/lib/uplot/dist/%2e%2e/package.json",
        "/viewer/leak.js", "/recording/../secret.txt", "/viewer/%", "/viewer/%zz", "//etc/passwd",
        "/viewer/node_modules/uplot/package.json", "/viewer/node_modules/uplot/dist/uPlot.iife.min.js",
        "/viewer/.hidden", "http://evil/secret.txt",
    };
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        reply_t r = get(port, outside[i]);
        cr_assert_eq(r.status, 404, "%s: %s", outside[i], r.head);
        cr_assert_null(strstr((char *)r.body, "secret"), "%s", outside[i]);
        free(r.body);
    }
    /* the recording's series file turned into a link that leads out */
    char series[600];
    snprintf(series, sizeof series, "%s/series.csv", dir);
    cr_assert_eq(unlink(series), 0);
    cr_assert_eq(symlink(cli_path("secret.txt"), series), 0);
    expect(port, "/recording/series.csv", 404, NULL, NULL);
    /* ... and into a named pipe: 404 at once (the server sat in open() on
     * it, and no request was answered any more) */
    cr_assert_eq(unlink(series), 0);
    cr_assert_eq(mkfifo(series, 0644), 0);
    expect(port, "/recording/series.csv", 404, NULL, NULL);
    expect(port, "/viewer/app.js", 200, NULL, "let page = 1;");
    stop(pid, SIGINT, "SIGINT");
}

/* A client that connects and says nothing holds nobody up. */
Test(viewer, server_half_open_client)
{
    int port;
    pid_t pid = start_view(make("one", NULL, NULL), &port);
    int idle = connect_to(port), partial = connect_to(port);
    cr_assert_eq(send(partial, "GET / HT", 8, 0), 8);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect(port, "/viewer/app.js", 200, NULL, "let page = 1;");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(s, 1.0, "answered in %g s beside two silent clients", s);
    close(idle);
    close(partial);
    stop(pid, SIGINT, "SIGINT");
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Clients that ask for a large answer and then stop reading it hold
 * nobody up either: the answer went out blocking, 5 s a write, and two
 * such clients kept every other request waiting for as long as they
 * liked. A request with a NUL byte is answered at once. */
Test(viewer, server_client_that_does_not_read)
{
    int port;
    pid_t pid = start_view(make("one", NULL, NULL), &port);
    size_t big = 32u << 20;
    char *text = malloc(big + 1);
    memset(text, 'x', big);
    text[big] = 0;
    cli_write(cli_path("page/big.js"), text);
    free(text);
    int stalled[2];
    for (int k = 0; k < 2; k++) {
        stalled[k] = connect_to(port);
        int small = 4096;
        setsockopt(stalled[k], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        const char *ask = "GET /viewer/big.js HTTP/1.1\r\n\r\n";
        cr_assert_eq(send(stalled[k], ask, strlen(ask), 0), (ssize_t)strlen(ask));
    }
    usleep(300000);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect(port, "/viewer/app.js", 200, NULL, "let page = 1;");
    double s = seconds_since(&t0);
    cr_assert_lt(s, 1.0, "answered in %g s beside two clients that do not read", s);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static const char nul[] = "GET /vie\0wer/app.js HTTP/1.1\r\n";
    reply_t r = http_bytes(port, nul, sizeof nul - 1); /* (no blank line: a NUL is enough to answer) */
    cr_assert_eq(r.status, 400, "%s", r.head);
    free(r.body);
    s = seconds_since(&t0);
    cr_assert_lt(s, 1.0, "a request with a NUL answered in %g s", s);
    close(stalled[0]);
    close(stalled[1]);
    stop(pid, SIGINT, "SIGINT");
}
