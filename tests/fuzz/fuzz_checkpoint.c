/* Fuzz target: reading a checkpoint back (runtime/checkpoint_store.c:
 * kr__ckpt_open, then kr__ckpt_read of every simulator the manifest
 * lists). Any bytes must give a checkpoint whose parts read or are refused
 * one by one, or one clean refusal at open (KR_ERR_CORRUPT or KR_ERR_IO,
 * with a message), never a crash, a leak or a hang.
 *
 * The input: a flags byte, the manifest's length (2 bytes, little endian),
 * the manifest's text, then the rest: the bytes of rank-0.bin. They are
 * written into a checkpoint directory DIR/ck. Flags:
 *   bit 0  before writing, the harness sets every simulator's "checksum"
 *          that it can (an object entry whose offset and size lie within
 *          the rank file's bytes) to the checksum of those bytes, so that
 *          mutated zstd frames get past the checksum to the decompressor;
 *   bit 1  open DIR, the directory of checkpoints, not DIR/ck.
 * Only rank-0.bin is written: a manifest naming other files is refused at
 * open (the refusal of a missing file is what that exercises).
 *
 * KAIROS_FUZZ_SEEDS=DIR: writes seed inputs made by the store itself to
 * DIR and exits (tests/fuzz/make-corpus.sh). */
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hmap.h"
#include "kairos/kairos.h"
#include "runtime/checkpoint_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char root[64], ck[96], manifest[128], rank0[128];

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || (n && fwrite(data, 1, n, fp) != n) || fclose(fp)) {
        fprintf(stderr, "fuzz_checkpoint: cannot write %s\n", path);
        abort();
    }
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) abort();
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, fp);
    fclose(fp);
    return b;
}

/* Bit 0: the manifest with the checksums of the rank file's bytes. */
static char *fix_checksums(const char *text, size_t len, const uint8_t *bin, size_t bin_len)
{
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *sims = json_object_get(j, "simulators");
    size_t i;
    json_t *s;
    json_array_foreach(sims, i, s) {
        json_int_t off = json_integer_value(json_object_get(s, "offset"));
        json_int_t sz = json_integer_value(json_object_get(s, "size"));
        if (!json_is_object(s) || off < 0 || sz < 0 || (uint64_t)off > bin_len || (uint64_t)sz > bin_len - (uint64_t)off)
            continue;
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, kr__hash_bytes(bin + off, (size_t)sz, 0));
        json_object_set_new(s, "checksum", json_string(hex));
    }
    char *out = j ? json_dumps(j, JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    unsigned flags = data[0];
    size_t mlen = data[1] | (size_t)data[2] << 8;
    if (mlen > size - 3) mlen = size - 3;
    const char *text = (const char *)data + 3;
    const uint8_t *bin = data + 3 + mlen;
    size_t bin_len = size - 3 - mlen;
    char *fixed = flags & 1 ? fix_checksums(text, mlen, bin, bin_len) : NULL;
    if (fixed) write_bytes(manifest, fixed, strlen(fixed));
    else write_bytes(manifest, text, mlen);
    free(fixed);
    write_bytes(rank0, bin, bin_len);

    kr__ckpt_t *c = NULL;
    kr_status_t st = kr__ckpt_open(flags & 2 ? root : ck, &c);
    if (st) {
        if (c || (st != KR_ERR_CORRUPT && st != KR_ERR_IO && st != KR_ERR_NOMEM) || !*kr_last_error()) {
            fprintf(stderr, "fuzz_checkpoint: open: status %d, message \"%s\"\n", st, kr_last_error());
            abort();
        }
    } else {
        const kr__ckpt_manifest_t *m = kr__ckpt_manifest(c);
        for (size_t i = 0; i < m->entry_count; i++) {
            void *part = NULL;
            size_t n = 0;
            st = kr__ckpt_read(c, m->entries[i].sim, &part, &n);
            if (st ? (part || (st != KR_ERR_CORRUPT && st != KR_ERR_IO && st != KR_ERR_NOMEM) || !*kr_last_error())
                   : (!part || n != m->entries[i].raw_size)) {
                fprintf(stderr, "fuzz_checkpoint: read %s: status %d, message \"%s\"\n", m->entries[i].sim, st,
                        kr_last_error());
                abort();
            }
            free(part);
        }
        kr__ckpt_close(c);
    }
    unlink(manifest);
    unlink(rank0);
    return 0;
}

/* Seeds: checkpoints written by the store (one to four parts: text, empty,
 * runs, noise; an "extra"), each as an input with and without bit 0, and
 * one opened through the directory of checkpoints. */
static void make_seeds(const char *out)
{
    static unsigned char runs[3000], noise[300];
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < sizeof runs; i++) runs[i] = (unsigned char)(i / 100);
    for (size_t i = 0; i < sizeof noise; i++) noise[i] = (unsigned char)(x = kr__mix64(x + i));
    const kr__ckpt_part_t all[] = { { "Line", "a part of Line's state", 22 }, { "Robots", "", 0 },
                                    { "Bath", runs, sizeof runs }, { "walkers[3]", noise, sizeof noise } };
    static const struct {
        const char *name;
        size_t first, n;
        int level;
        bool extra;
    } seeds[] = { { "one", 0, 1, 3, false }, { "empty", 1, 1, 1, false }, { "three", 0, 3, 5, true },
                  { "four", 0, 4, 19, true }, { "none", 0, 0, 3, false } };
    char seed_root[] = "/tmp/kairos_fuzz_seed_XXXXXX";
    if (!mkdtemp(seed_root)) abort();
    int count = 0;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        char *dir;
        kr__ckpt_entry_t entries[4];
        if (kr__ckpt_dir_begin(seed_root, seeds[s].name, &dir) ||
            kr__ckpt_write_rank_file(dir, "rank-0.bin", seeds[s].level, all + seeds[s].first, seeds[s].n, entries)) {
            fprintf(stderr, "fuzz_checkpoint: seeds: %s\n", kr_last_error());
            exit(1);
        }
        kr__ckpt_manifest_t m = { .identity = 0xfeedfacecafebeefULL, .time = 1500000 * (s + 1),
                                  .time_units = 1.5 * (double)(s + 1), .precision = 1000000, .ranks = 1,
                                  .entry_count = seeds[s].n };
        m.entries = malloc(4 * sizeof *m.entries);
        memcpy(m.entries, entries, seeds[s].n * sizeof *entries);
        if (seeds[s].extra) m.extra = json_pack("{s:{s:i},s:n}", "outputs", "series.csv", 4096, "stop");
        if (kr__ckpt_manifest_write(dir, &m)) {
            fprintf(stderr, "fuzz_checkpoint: seeds: %s\n", kr_last_error());
            exit(1);
        }
        kr__ckpt_manifest_fini(&m);
        size_t mlen, blen;
        char mp[256], bp[256];
        snprintf(mp, sizeof mp, "%s/manifest.json", dir);
        snprintf(bp, sizeof bp, "%s/rank-0.bin", dir);
        unsigned char *mt = read_bytes(mp, &mlen), *bt = read_bytes(bp, &blen);
        unsigned char *in = malloc(3 + mlen + blen);
        in[1] = (unsigned char)mlen;
        in[2] = (unsigned char)(mlen >> 8);
        memcpy(in + 3, mt, mlen);
        memcpy(in + 3 + mlen, bt, blen);
        for (unsigned flags = 0; flags < (s == 2 ? 4u : 2u); flags++) {
            char p[512];
            snprintf(p, sizeof p, "%s/ckpt-%s-%u", out, seeds[s].name, flags);
            in[0] = (unsigned char)flags;
            write_bytes(p, in, 3 + mlen + blen);
            count++;
        }
        free(in);
        free(mt);
        free(bt);
        unlink(mp);
        unlink(bp);
        rmdir(dir);
        free(dir);
    }
    rmdir(seed_root);
    printf("fuzz_checkpoint: %d seeds\n", count);
    exit(0);
}

static void cleanup(void)
{
    unlink(manifest);
    unlink(rank0);
    rmdir(ck);
    rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *seeds = getenv("KAIROS_FUZZ_SEEDS");
    if (seeds) make_seeds(seeds);
    snprintf(root, sizeof root, "/tmp/kairos_fuzz_ckpt_XXXXXX");
    if (!mkdtemp(root)) abort();
    snprintf(ck, sizeof ck, "%s/ck", root);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", ck);
    snprintf(rank0, sizeof rank0, "%s/rank-0.bin", ck);
    char *dir;
    if (kr__ckpt_dir_begin(root, "ck", &dir)) abort();
    if (rename(dir, ck)) abort();
    free(dir);
    atexit(cleanup);
    return 0;
}
