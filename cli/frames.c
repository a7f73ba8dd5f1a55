/* `kairos frames DIR --png OUT`: a recording's frames as PNG pictures,
 * one file per frame, drawn by runtime/picture.c and written by libpng. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/error.h"
#include "runtime/picture.h"
#include "runtime/recording.h"
#include "cli/arguments.h"
#include "cli/viewer_commands.h"

const char *const kr__frames_help =
    "usage: kairos frames DIR --png OUT [--at T[,T...]] [--world NAME] [--scale PX]\n"
    "\n"
    "Draws the frames a run recorded into DIR (kairos run --frames DIR) as PNG\n"
    "pictures OUT/frame-000042.png (the frame's number): the world's first field,\n"
    "then its agents; labels are not drawn (docs/viewer.md, \"Pictures\").\n"
    "\n"
    "options:\n"
    "  --png OUT        the folder to write (created)\n"
    "  --at T[,T...]    only the frames at these model times (each must be a frame's time)\n"
    "  --world NAME     the world to draw (default: the first with layers or fields)\n"
    "  --scale PX       pixels per world unit (default: the largest whole number that keeps\n"
    "                   the longer side at most 1024 pixels)\n"
    "  -h, --help       this help\n";

static int fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "kairos: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

/* The frames at the times listed in text ("T[,T...]"): each must be a
 * frame's time (the nearest is named when it is not). */
static int frames_at(const kr__recording_t *rec, const char *text, bool *wanted)
{
    for (const char *at = text;;) {
        char *end;
        double t = strtod(at, &end);
        if (end == at || !isfinite(t) || (*end && *end != ','))
            return fail("--at: expected model times T[,T...], found \"%s\"", text);
        /* (times ascend: past either end the nearest is that end, which
         * differences too large for a double's precision would not tell) */
        size_t last = rec->frame_count - 1, best = t >= rec->times[last] ? last : 0;
        if (t > rec->times[0] && t < rec->times[last])
            for (size_t i = 1; i <= last; i++)
                if (fabs(rec->times[i] - t) < fabs(rec->times[best] - t)) best = i;
        if (fabs(rec->times[best] - t) > 1e-9 * fmax(1, fabs(t))) {
            fprintf(stderr, "kairos: %s: --at %g: expected the time of a frame, found none (the nearest: %.15g, "
                    "frame %zu)\n", rec->dir, t, rec->times[best], (size_t)rec->first_frame + best);
            return 2;
        }
        wanted[best] = true;
        if (!*end) return 0;
        at = end + 1;
    }
}

/* Written as PATH.partial and renamed: a picture under its own name is
 * always whole. */
static kr_status_t write_png(const char *path, const kr__picture_t *pic)
{
    png_image image = { .version = PNG_IMAGE_VERSION, .width = pic->width, .height = pic->height,
                        .format = PNG_FORMAT_RGBA };
    char partial[4200];
    snprintf(partial, sizeof partial, "%s.partial", path);
    if (!png_image_write_to_file(&image, partial, 0, pic->rgba, 0, NULL)) {
        kr_status_t st = kr__fail(KR_ERR_IO, "%s: cannot write the picture: %s", path, image.message);
        remove(partial);
        return st;
    }
    if (rename(partial, path)) {
        kr_status_t st = kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", partial, path, strerror(errno));
        remove(partial);
        return st;
    }
    return KR_OK;
}

int kr__cli_frames(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *at = NULL, *world_name = NULL;
    long scale = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = kr__cli_has_value(i, argc, argv);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(kr__frames_help, stdout);
            return 0;
        } else if (!strcmp(a, "--png") || !strcmp(a, "--at") || !strcmp(a, "--world") || !strcmp(a, "--scale")) {
            if (!has_value || !argv[i + 1][0]) return fail("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--png")) out = v;
            else if (!strcmp(a, "--at")) at = v;
            else if (!strcmp(a, "--world")) world_name = v;
            else {
                char *end;
                scale = strtol(v, &end, 10);
                if (*end || scale < 1 || scale > 16384)
                    return fail("--scale: expected a whole number of pixels per unit from 1 to 16384, found \"%s\"", v);
            }
        } else if (a[0] == '-' && a[1]) {
            return fail("frames: unknown option %s (kairos frames --help lists them)", a);
        } else if (!dir) {
            dir = a;
        } else {
            return fail("one frames folder only (found another: %s)", a);
        }
    }
    if (!dir) return fail("frames: expected a frames folder DIR, found none", "");
    if (!out) return fail("frames: expected --png OUT (the folder of pictures), found none", "");
    kr__recording_t *rec;
    if (kr__recording_open(dir, &rec)) return fail("%s", kr_last_error());
    int code = 0;
    long world = -1;
    if (world_name) {
        world = kr__recording_world_named(rec, world_name);
        if (world < 0) {
            fprintf(stderr, "kairos: %s: --world: expected the name of a world of the recording, found \"%s\"\n", dir,
                    world_name);
            code = 2;
        }
    } else {
        for (size_t i = 0; i < rec->world_count && world < 0; i++)
            if (rec->worlds[i].layer_count || rec->worlds[i].field_count) world = (long)i;
        if (world < 0) code = fail("%s: expected a world with layers or fields to draw, found none", dir);
    }
    bool *wanted = calloc(rec->frame_count, sizeof *wanted);
    if (!code && !wanted) code = fail("%s", "out of memory");
    if (!code && at) code = frames_at(rec, at, wanted);
    if (!code && !at)
        for (size_t i = 0; i < rec->frame_count; i++) wanted[i] = true;
    if (!code && mkdir(out, 0777) && errno != EEXIST) {
        fprintf(stderr, "kairos: %s: expected a folder for the pictures, found %s\n", out, strerror(errno));
        code = 2;
    }
    const kr__rec_world_t *w = code ? NULL : &rec->worlds[world];
    uint32_t px = w ? (scale ? (uint32_t)scale : kr__picture_default_scale(w)) : 0;
    uint32_t width = 0, height = 0;
    if (w) kr__picture_size(w, px, &width, &height);
    /* Too large even at 1 pixel per unit, the default's least: the
     * recording's bounds are wrong, not an option the user gave. */
    if (w && !scale && (width > KR__PICTURE_MAX_SIDE || height > KR__PICTURE_MAX_SIDE)) {
        fprintf(stderr, "kairos: %s/manifest.json: worlds[%ld].bounds: expected a world of at most %d units a side "
                "(a picture of at most %d pixels at 1 pixel per unit), found %.15g x %.15g\n", dir, world,
                KR__PICTURE_MAX_SIDE, KR__PICTURE_MAX_SIDE, w->bounds[2] - w->bounds[0], w->bounds[3] - w->bounds[1]);
        code = 2;
        w = NULL;
    }
    size_t written = 0;
    kr__picture_t pic = { 0 };
    for (size_t i = 0; !code && i < rec->frame_count; i++) {
        if (!wanted[i]) continue;
        kr__frame_t f;
        char path[4096];
        snprintf(path, sizeof path, "%s/frame-%06zu.png", out, (size_t)rec->first_frame + i);
        kr_status_t st = kr__recording_load(rec, (size_t)world, i, &f);
        if (!st) st = kr__picture_draw(w, &f, px, &pic);
        if (!st) st = write_png(path, &pic);
        kr__frame_fini(&f);
        kr__picture_fini(&pic);
        if (st) {
            code = fail("%s", kr_last_error());
            /* A folder of some of the pictures would look finished: the
             * ones written here go again. */
            for (size_t j = 0; j < i; j++) {
                if (!wanted[j]) continue;
                snprintf(path, sizeof path, "%s/frame-%06zu.png", out, (size_t)rec->first_frame + j);
                remove(path);
            }
        }
        written++;
    }
    if (!code) {
        kr__picture_size(w, px, &pic.width, &pic.height);
        printf("kairos frames: %zu picture%s of world %s, %ux%u pixels (%u per unit), in %s\n", written,
               written == 1 ? "" : "s", w->name, pic.width, pic.height, px, out);
    }
    free(wanted);
    kr__recording_close(rec);
    return code;
}
