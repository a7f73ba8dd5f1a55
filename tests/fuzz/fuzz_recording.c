/* Fuzz target: reading a recording of frames (runtime/recording.c:
 * kr__recording_open, then kr__recording_load of every frame of every
 * world), as `kairos view` and `kairos frames --png` do. Any bytes must
 * give frames or one clean refusal (KR_ERR_CORRUPT or KR_ERR_IO, with a
 * message), never a crash, a leak or a hang.
 *
 * The input: the manifest's length (2 bytes, little endian), the
 * manifest's text, then the rest: the bytes of the one frame file
 * "s.frames", written with it into a folder. A manifest naming other
 * files is refused at open (the refusal of a missing file is what that
 * exercises). The seeds (corpus/recording/) are real recordings of one
 * simulator, packed so by make-corpus.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "runtime/recording.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char root[64], manifest[128], frames[128];

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) abort();
    if (n && fwrite(data, 1, n, fp) != n) abort();
    fclose(fp);
}

/* The folder goes when the fuzzer exits (it was left in /tmp by every run). */
static void cleanup(void)
{
    remove(manifest);
    remove(frames);
    rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    snprintf(root, sizeof root, "/tmp/kairos-fuzz-recording-XXXXXX");
    if (!mkdtemp(root)) abort();
    snprintf(manifest, sizeof manifest, "%s/manifest.json", root);
    snprintf(frames, sizeof frames, "%s/s.frames", root);
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t len = (size_t)data[0] | (size_t)data[1] << 8;
    if (len > size - 2) len = size - 2;
    write_bytes(manifest, data + 2, len);
    write_bytes(frames, data + 2 + len, size - 2 - len);
    kr__recording_t *rec = NULL;
    kr_status_t st = kr__recording_open(root, &rec);
    if (st) {
        if (st != KR_ERR_CORRUPT && st != KR_ERR_IO && st != KR_ERR_NOMEM) abort();
        if (!kr_last_error()[0]) abort();
        return 0;
    }
    /* at most 64 frames a world: a long recording adds nothing new */
    for (size_t w = 0; w < rec->world_count; w++)
        for (size_t i = 0; i < rec->frame_count && i < 64; i++) {
            kr__frame_t f;
            st = kr__recording_load(rec, w, i, &f);
            if (st && !kr_last_error()[0]) abort();
            kr__frame_fini(&f);
        }
    kr__recording_close(rec);
    return 0;
}
