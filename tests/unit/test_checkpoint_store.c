/* The checkpoint store (runtime/checkpoint_store.h): parts written over two
 * rank files and read back, the newest complete checkpoint chosen in a
 * directory of them, pruning, the directory's life, and every refusal of a
 * bad checkpoint, each with one message naming the file. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "runtime/checkpoint_store.h"

static char root[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/kairos_ckpt_XXXXXX");
    cr_assert(mkdtemp(root));
}

static void teardown(void)
{
    if (root[0]) nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    root[0] = '\0';
}

TestSuite(checkpoint_store, .init = setup, .fini = teardown);

#define NPARTS 5
static const char *sim_names[NPARTS] = { "alpha", "beta", "gamma", "delta", "epsilon" };
static unsigned char *part_data[NPARTS];
static size_t part_size[NPARTS];

/* Parts: short text, empty, 1 MiB compressible, 4 KiB noise, one byte. */
static void make_parts(void)
{
    static const size_t sizes[NPARTS] = { 26, 0, 1 << 20, 4096, 1 };
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < NPARTS; i++) {
        part_size[i] = sizes[i];
        part_data[i] = malloc(sizes[i] ? sizes[i] : 1);
        for (size_t j = 0; j < sizes[i]; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            part_data[i][j] = i == 0 ? (unsigned char)('a' + j) : i == 2 ? (unsigned char)(j % 251 / 16)
                                                                         : (unsigned char)x;
        }
    }
}

static void free_parts(void)
{
    for (int i = 0; i < NPARTS; i++) free(part_data[i]);
}

/* ROOT/NAME: parts 0-2 in rank-0.bin, 3-4 in rank-1.bin (or only the first
 * `small` bytes' worth: two tiny parts in rank-0.bin). */
static void write_ckpt(const char *name, uint64_t ticks, bool small)
{
    char *dir;
    cr_assert_eq(kr__ckpt_dir_begin(root, name, &dir), KR_OK, "%s", kr_last_error());
    kr__ckpt_part_t parts[NPARTS];
    for (int i = 0; i < NPARTS; i++) parts[i] = (kr__ckpt_part_t){ sim_names[i], part_data[i], part_size[i] };
    kr__ckpt_entry_t entries[NPARTS];
    size_t n;
    if (small) {
        kr__ckpt_part_t two[2] = { parts[0], parts[4] };
        cr_assert_eq(kr__ckpt_write_rank_file(dir, "rank-0.bin", 3, two, 2, entries), KR_OK, "%s", kr_last_error());
        n = 2;
    } else {
        cr_assert_eq(kr__ckpt_write_rank_file(dir, "rank-0.bin", 3, parts, 3, entries), KR_OK, "%s", kr_last_error());
        cr_assert_eq(kr__ckpt_write_rank_file(dir, "rank-1.bin", 19, parts + 3, 2, entries + 3), KR_OK, "%s",
                     kr_last_error());
        n = NPARTS;
    }
    kr__ckpt_manifest_t m = { .identity = 0x0123456789abcdefULL, .time = ticks, .time_units = ticks / 1e6,
                              .precision = 1000000, .ranks = 2, .entry_count = n };
    m.entries = malloc(n * sizeof *m.entries);
    memcpy(m.entries, entries, n * sizeof *m.entries);
    m.extra = json_pack("{s:{s:i},s:b}", "outputs", "stats.csv", 1234, "stop_pending", 1);
    cr_assert_eq(kr__ckpt_manifest_write(dir, &m), KR_OK, "%s", kr_last_error());
    kr__ckpt_manifest_fini(&m);
    cr_assert_eq(kr__ckpt_dir_commit(root, name), KR_OK, "%s", kr_last_error());
    free(dir);
}

static char *path_of(const char *a, const char *b)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s%s%s", root, a, b ? "/" : "", b ? b : "");
    return p[k];
}

static void expect_refused(const char *path, kr_status_t status, const char *file, const char *what)
{
    kr__ckpt_t *c = (kr__ckpt_t *)1;
    kr_status_t st = kr__ckpt_open(path, &c);
    cr_assert_eq(st, status, "expected status %d, found %d: %s", status, st, kr_last_error());
    cr_assert_null(c);
    const char *msg = kr_last_error();
    cr_assert(strstr(msg, file), "message should name %s: %s", file, msg);
    cr_assert(strstr(msg, what), "message should say %s: %s", what, msg);
    cr_assert_null(strchr(msg, '\n'), "one line: %s", msg);
}

/* Edits ROOT/ck/manifest.json with fn. */
static void edit_manifest(void (*fn)(json_t *))
{
    const char *p = path_of("ck", "manifest.json");
    json_error_t err;
    json_t *j = json_load_file(p, 0, &err);
    cr_assert(j, "%s", err.text);
    fn(j);
    /* digested again: these edits stand for a manifest that is consistent
     * but wrong (see edited_manifest_refused for one that is not) */
    uint64_t d;
    json_object_del(j, "digest");
    cr_assert(kr__ckpt_manifest_digest(j, &d));
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, d);
    json_object_set_new(j, "digest", json_string(hex));
    cr_assert_eq(json_dump_file(j, p, JSON_INDENT(2)), 0);
    json_decref(j);
}

static void read_all_ok(kr__ckpt_t *c, int n)
{
    for (int i = 0; i < n; i++) {
        int k = n == 2 && i == 1 ? 4 : i;
        void *d;
        size_t sz;
        cr_assert_eq(kr__ckpt_read(c, sim_names[k], &d, &sz), KR_OK, "%s", kr_last_error());
        cr_assert_eq(sz, part_size[k]);
        cr_assert(sz == 0 || !memcmp(d, part_data[k], sz), "%s's part differs", sim_names[k]);
        free(d);
    }
}

Test(checkpoint_store, round_trip_over_two_rank_files)
{
    make_parts();
    write_ckpt("ck", 5000000, false);
    kr__ckpt_t *c;
    cr_assert_eq(kr__ckpt_open(path_of("ck", NULL), &c), KR_OK, "%s", kr_last_error());
    cr_assert_str_eq(kr__ckpt_path(c), path_of("ck", NULL));
    const kr__ckpt_manifest_t *m = kr__ckpt_manifest(c);
    cr_assert_eq(m->identity, 0x0123456789abcdefULL);
    cr_assert_eq(m->time, 5000000);
    cr_assert_float_eq(m->time_units, 5.0, 1e-12);
    cr_assert_eq(m->precision, 1000000);
    cr_assert_eq(m->ranks, 2);
    cr_assert_eq(m->entry_count, NPARTS);
    cr_assert_str_eq(m->entries[3].file, "rank-1.bin");
    cr_assert_eq(m->entries[0].offset, KR__CKPT_HEADER_SIZE);
    cr_assert_lt(m->entries[2].size, m->entries[2].raw_size / 10, "1 MiB of runs compresses: %" PRIu64,
                 m->entries[2].size);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(m->extra, "outputs"), "stats.csv")), 1234);
    cr_assert(json_is_true(json_object_get(m->extra, "stop_pending")));
    read_all_ok(c, NPARTS);
    void *d;
    size_t sz;
    cr_assert_eq(kr__ckpt_read(c, "zeta", &d, &sz), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "zeta"), "%s", kr_last_error());
    cr_assert_null(d);
    kr__ckpt_close(c);

    /* The manifest reads for people: pretty-printed, the names in it. */
    FILE *fp = fopen(path_of("ck", "manifest.json"), "r");
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[len] = '\0';
    cr_assert(strstr(text, "\"format\": \"kairos-checkpoint\""), "%s", text);
    cr_assert(strstr(text, "\"identity\": \"0123456789abcdef\""), "%s", text);
    cr_assert(strstr(text, "\"files\": [\n    \"rank-0.bin\",\n    \"rank-1.bin\"\n  ]"), "%s", text);
    free_parts();
}

/* ROOT as a folder of checkpoints: a (time 10), b (30), c (20), a newer
 * one half-written under its .partial name (d.partial, 99) and a folder
 * without a manifest (junk). */
static void write_folder(void)
{
    write_ckpt("a", 10, true);
    write_ckpt("b", 30, true);
    write_ckpt("c", 20, true);
    write_ckpt("d", 99, true);
    cr_assert_eq(rename(path_of("d", NULL), path_of("d.partial", NULL)), 0);
    mkdir(path_of("junk", NULL), 0777);
}

Test(checkpoint_store, newest_complete_one_chosen)
{
    make_parts();
    write_folder();
    /* and one half-written still under its .partial name, with no manifest */
    char *dir;
    cr_assert_eq(kr__ckpt_dir_begin(root, "e", &dir), KR_OK);
    free(dir);
    kr__ckpt_t *c;
    cr_assert_eq(kr__ckpt_open(root, &c), KR_OK, "%s", kr_last_error());
    cr_assert_str_eq(kr__ckpt_path(c), path_of("b", NULL));
    cr_assert_eq(kr__ckpt_manifest(c)->time, 30);
    read_all_ok(c, 2);
    kr__ckpt_close(c);
    expect_refused(path_of("d.partial", NULL), KR_ERR_CORRUPT, "d.partial", "half-written");
    expect_refused(path_of("e.partial", NULL), KR_ERR_CORRUPT, "e.partial", "half-written");
    expect_refused(path_of("junk", NULL), KR_ERR_CORRUPT, "junk", "half-written");
    /* A newest candidate whose manifest is bad is refused, not skipped. */
    FILE *fp = fopen(path_of("b", "manifest.json"), "w");
    fputs("{\"format\": \"kairos-checkpoint\", \"version\": 1, \"time\": oops", fp);
    fclose(fp);
    expect_refused(root, KR_ERR_CORRUPT, "b/manifest.json", "expected valid JSON");
    free_parts();
}

/* The listing a restart's refusal looks through for another checkpoint
 * (runtime/checkpoint.c): complete ones whose manifest reads, newest
 * first; a bad manifest, a .partial folder and a folder without a manifest
 * left out. */
Test(checkpoint_store, list_skips_what_does_not_read)
{
    make_parts();
    write_folder();
    FILE *fp = fopen(path_of("b", "manifest.json"), "w");
    fputs("{", fp);
    fclose(fp);
    kr__ckpt_found_t *list;
    size_t n;
    cr_assert_eq(kr__ckpt_list(root, &list, &n), KR_OK, "%s", kr_last_error());
    cr_assert_eq(n, 2);
    cr_assert_str_eq(list[0].name, "c");
    cr_assert_eq(list[0].time, 20);
    cr_assert_str_eq(list[1].name, "a");
    cr_assert_eq(list[1].time, 10);
    kr__ckpt_list_free(list, n);
    cr_assert_neq(kr__ckpt_list(path_of("nowhere", NULL), &list, &n), KR_OK);
    free_parts();
}

Test(checkpoint_store, prune_keeps_the_newest_n)
{
    make_parts();
    const char *names[] = { "t3", "t1", "t5", "t2", "t4" };
    const uint64_t times[] = { 3, 1, 5, 2, 4 };
    for (int i = 0; i < 5; i++) write_ckpt(names[i], times[i], true);
    char *dir;
    cr_assert_eq(kr__ckpt_dir_begin(root, "t9", &dir), KR_OK);
    free(dir);
    mkdir(path_of("other", NULL), 0777);
    cr_assert_eq(kr__ckpt_dir_prune(root, 0, UINT64_MAX), KR_OK, "%s", kr_last_error());
    struct stat sb;
    for (int i = 0; i < 5; i++) cr_assert_eq(stat(path_of(names[i], NULL), &sb), 0, "keep <= 0 keeps all");
    cr_assert_eq(kr__ckpt_dir_prune(root, 2, UINT64_MAX), KR_OK, "%s", kr_last_error());
    for (int i = 0; i < 5; i++)
        cr_assert_eq(stat(path_of(names[i], NULL), &sb) == 0, times[i] >= 4, "%s", names[i]);
    cr_assert_eq(stat(path_of("t9.partial", NULL), &sb), 0, "a .partial is not pruned");
    cr_assert_eq(stat(path_of("other", NULL), &sb), 0, "not a checkpoint: not pruned");
    cr_assert_eq(kr__ckpt_dir_prune(root, 1, UINT64_MAX), KR_OK);
    cr_assert_neq(stat(path_of("t4", NULL), &sb), 0);
    cr_assert_eq(stat(path_of("t5", NULL), &sb), 0);
    /* a restart from an earlier checkpoint prunes only up to the one it
     * wrote: the later ones are a longer run's */
    for (int i = 0; i < 4; i++)
        if (times[i] != 5) write_ckpt(names[i], times[i], true); /* t3, t1, t2 again, beside t5 */
    cr_assert_eq(kr__ckpt_dir_prune(root, 2, 3), KR_OK, "%s", kr_last_error());
    for (int i = 0; i < 4; i++)
        cr_assert_eq(stat(path_of(names[i], NULL), &sb) == 0, times[i] >= 2, "%s", names[i]);
    free_parts();
}

Test(checkpoint_store, directory_life)
{
    make_parts();
    char *dir;
    /* begin makes the root (mkdir -p) and replaces a stale .partial. */
    char deep[256];
    snprintf(deep, sizeof deep, "%s/x/y", root);
    cr_assert_eq(kr__ckpt_dir_begin(deep, "n", &dir), KR_OK, "%s", kr_last_error());
    char stale[300];
    snprintf(stale, sizeof stale, "%s/stale.bin", dir);
    FILE *fp = fopen(stale, "w");
    fputs("old", fp);
    fclose(fp);
    free(dir);
    cr_assert_eq(kr__ckpt_dir_begin(deep, "n", &dir), KR_OK, "%s", kr_last_error());
    struct stat sb;
    cr_assert_neq(stat(stale, &sb), 0, "the stale .partial was emptied");
    /* commit wants a manifest. */
    cr_assert_eq(kr__ckpt_dir_commit(deep, "n"), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "manifest.json"), "%s", kr_last_error());
    free(dir);
    /* bad names */
    cr_assert_eq(kr__ckpt_dir_begin(root, "a/b", &dir), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr__ckpt_dir_begin(root, "x.partial", &dir), KR_ERR_INVALID_ARG);
    kr__ckpt_entry_t e[1];
    kr__ckpt_part_t p = { "s", "x", 1 };
    cr_assert_eq(kr__ckpt_write_rank_file(root, "../r.bin", 3, &p, 1, e), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr__ckpt_write_rank_file(root, "r.bin", 1000, &p, 1, e), KR_ERR_INVALID_ARG);
    /* a name taken by a checkpoint: the new one replaces it (a run
     * repeated in the same folder, or restarted from an older checkpoint
     * there, writes checkpoints of the same times again) */
    write_ckpt("ck", 1, true);
    cr_assert_eq(kr__ckpt_dir_begin(root, "ck", &dir), KR_OK);
    kr__ckpt_manifest_t m = { .precision = 1, .ranks = 1, .time = 7 };
    cr_assert_eq(kr__ckpt_manifest_write(dir, &m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__ckpt_dir_commit(root, "ck"), KR_OK, "%s", kr_last_error());
    free(dir);
    cr_assert_neq(stat(path_of("ck", "rank-0.bin"), &sb), 0, "the old checkpoint's files are gone");
    cr_assert_neq(stat(path_of("ck.partial", NULL), &sb), 0);
    cr_assert_neq(stat(path_of("ck.replaced.partial", NULL), &sb), 0);
    kr__ckpt_t *c = NULL;
    cr_assert_eq(kr__ckpt_open(path_of("ck", NULL), &c), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__ckpt_manifest(c)->time, 7);
    kr__ckpt_close(c);
    /* a name taken by anything else is refused, and abandon leaves no
     * .partial behind */
    cr_assert_eq(mkdir(path_of("mine", NULL), 0777), 0);
    cr_assert_eq(kr__ckpt_dir_begin(root, "mine", &dir), KR_OK);
    cr_assert_eq(kr__ckpt_manifest_write(dir, &m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr__ckpt_dir_commit(root, "mine"), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "taken by something that is not a checkpoint"), "%s", kr_last_error());
    cr_assert_eq(kr__ckpt_dir_abandon(root, "mine"), KR_OK, "%s", kr_last_error());
    cr_assert_neq(stat(dir, &sb), 0, "the .partial folder was removed");
    cr_assert_eq(stat(path_of("mine", NULL), &sb), 0, "the user's folder stays");
    cr_assert_eq(kr__ckpt_dir_abandon(root, "mine"), KR_OK, "nothing to abandon is no error");
    free(dir);
    /* prepare: makes the folder and those above it (and says how many), and
     * refuses a file in its place */
    unsigned made = 0;
    int lock = -1, lock2 = -1;
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("p/q", NULL), &made, &lock), KR_OK, "%s", kr_last_error());
    cr_assert_eq(made, 2, "p and p/q");
    cr_assert_eq(stat(path_of("p/q", NULL), &sb), 0);
    cr_assert(S_ISDIR(sb.st_mode));
    /* ... held by one run at a time (two wrote over each other's checkpoints) */
    cr_assert_geq(lock, 0, "this file system locks folders");
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("p/q", NULL), &made, &lock2), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "found one another run is writing checkpoints in"), "%s", kr_last_error());
    cr_assert_eq(lock2, -1);
    close(lock);
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("p/q", NULL), &made, &lock), KR_OK, "%s", kr_last_error());
    cr_assert(!made, "there already");
    close(lock);
    FILE *f = fopen(path_of("plain", NULL), "w");
    fclose(f);
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("plain", NULL), &made, &lock), KR_ERR_IO);
    cr_assert(strstr(kr_last_error(), "expected a directory"), "%s", kr_last_error());
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("plain", "sub"), &made, &lock), KR_ERR_IO);
    cr_assert(!made);
    cr_assert_eq(lock, -1);
    /* unmake: removes what prepare made while empty, deepest first */
    cr_assert_eq(kr__ckpt_dir_prepare(path_of("u/v/w", NULL), &made, &lock), KR_OK, "%s", kr_last_error());
    close(lock);
    cr_assert_eq(made, 3);
    cr_assert_eq(mkdir(path_of("u/kept", NULL), 0777), 0);
    kr__ckpt_dir_unmake(path_of("u/v/w", NULL), made);
    cr_assert_neq(stat(path_of("u/v", NULL), &sb), 0, "u/v/w and u/v removed");
    cr_assert_eq(stat(path_of("u/kept", NULL), &sb), 0, "u, not empty, stays");
    free_parts();
}

Test(checkpoint_store, truncated_rank_file)
{
    make_parts();
    write_ckpt("ck", 1, false);
    char p[256];
    snprintf(p, sizeof p, "%s", path_of("ck", "rank-1.bin"));
    struct stat sb;
    stat(p, &sb);
    cr_assert_eq(truncate(p, sb.st_size - 1), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-1.bin", "truncated");
    cr_assert_eq(truncate(p, 5), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-1.bin", "truncated");
    cr_assert_eq(truncate(p, 0), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-1.bin", "truncated");
    /* and longer than its parts */
    cr_assert_eq(truncate(path_of("ck", "rank-0.bin"), 1 << 22), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-0.bin", "does not list");
    free_parts();
}

/* Flips every byte of ROOT/ck/FILE, a checkpoint of parts 0 and 4, three
 * ways each, and opens and reads it every time: no read may ever give
 * wrong data, and each refusal is one line naming the file at fault. A
 * flipped rank file byte is always caught: open (the header) or the read of
 * exactly the part holding it fails, KR_ERR_CORRUPT naming the rank file
 * (and the simulator). Many flips of a manifest byte still read as a
 * manifest (a digit of the time, a letter of "extra"): those need only
 * never give wrong data. */
static void flip_each_byte(const char *file)
{
    bool rank = strcmp(file, "manifest.json") != 0;
    char p[256];
    snprintf(p, sizeof p, "%s", path_of("ck", file));
    FILE *fp = fopen(p, "rb");
    char orig[8192];
    size_t len = fread(orig, 1, sizeof orig, fp);
    fclose(fp);
    cr_assert_lt(len, sizeof orig);
    static const unsigned char masks[] = { 0x01, 0x20, 0x80, 0xff };
    for (size_t i = 0; i < len; i++)
        for (size_t k = 0; k < sizeof masks; k++) {
            char bad[8192];
            memcpy(bad, orig, len);
            bad[i] ^= (char)masks[k];
            fp = fopen(p, "wb");
            fwrite(bad, 1, len, fp);
            fclose(fp);
            kr__ckpt_t *c;
            if (kr__ckpt_open(path_of("ck", NULL), &c)) {
                const char *msg = kr_last_error();
                cr_assert(!rank || kr_last_status() == KR_ERR_CORRUPT, "byte %zu: %s", i, msg);
                cr_assert(strstr(msg, file) || strstr(msg, "rank-0.bin"), "byte %zu: %s", i, msg);
                cr_assert_null(strchr(msg, '\n'), "byte %zu: %s", i, msg);
                continue;
            }
            int failed = 0;
            const int which[2] = { 0, 4 };
            for (int s = 0; s < 2; s++) {
                void *d;
                size_t sz;
                if (kr__ckpt_read(c, sim_names[which[s]], &d, &sz)) {
                    cr_assert_null(d);
                    cr_assert(!rank || (kr_last_status() == KR_ERR_CORRUPT && strstr(kr_last_error(), file) &&
                                        strstr(kr_last_error(), sim_names[which[s]])),
                              "byte %zu: %s", i, kr_last_error());
                    failed++;
                    continue;
                }
                cr_assert_eq(sz, part_size[which[s]], "byte %zu", i);
                cr_assert(!memcmp(d, part_data[which[s]], sz), "byte %zu: wrong data read", i);
                free(d);
            }
            cr_assert(!rank || failed == 1, "byte %zu (mask %02x): exactly the part holding it fails", i, masks[k]);
            kr__ckpt_close(c);
        }
}

Test(checkpoint_store, every_rank_file_byte_flipped)
{
    make_parts();
    write_ckpt("ck", 1, true);
    flip_each_byte("rank-0.bin");
    free_parts();
}

Test(checkpoint_store, every_manifest_byte_flipped)
{
    make_parts();
    write_ckpt("ck", 1, true);
    flip_each_byte("manifest.json");
    free_parts();
}

static void set_format(json_t *j) { json_object_set_new(j, "format", json_string("something-else")); }
static void set_version(json_t *j) { json_object_set_new(j, "version", json_integer(KR__CKPT_VERSION + 1)); }
static void drop_rank_1(json_t *j) { json_array_remove(json_object_get(j, "files"), 1); }
static json_t *sim(json_t *j, size_t i) { return json_array_get(json_object_get(j, "simulators"), i); }
static void far_offset(json_t *j) { json_object_set_new(sim(j, 4), "offset", json_integer(1 << 30)); }
static void huge_size(json_t *j) { json_object_set_new(sim(j, 4), "size", json_integer(INT64_MAX)); }
static void negative_offset(json_t *j) { json_object_set_new(sim(j, 0), "offset", json_integer(-1)); }
static void header_offset(json_t *j) { json_object_set_new(sim(j, 0), "offset", json_integer(3)); }
static void duplicate_sim(json_t *j) { json_object_set_new(sim(j, 3), "name", json_string("alpha")); }
static void overlap(json_t *j)
{
    json_object_set(sim(j, 1), "offset", json_object_get(sim(j, 0), "offset"));
}
static void escape_file(json_t *j)
{
    json_array_set_new(json_object_get(j, "files"), 0, json_string("../../etc/passwd"));
}
static void unlisted_file(json_t *j) { json_object_set_new(sim(j, 0), "file", json_string("rank-7.bin")); }
static void no_identity(json_t *j) { json_object_del(j, "identity"); }
static void string_ticks(json_t *j)
{
    json_object_set_new(json_object_get(j, "time"), "ticks", json_string("5"));
}
static void bomb(json_t *j) { json_object_set_new(sim(j, 0), "raw_size", json_integer(INT64_MAX)); }
static void unknown_key(json_t *j) { json_object_set_new(j, "surprise", json_true()); }

Test(checkpoint_store, bad_manifests_refused)
{
    make_parts();
    struct {
        void (*fn)(json_t *);
        const char *what;
    } cases[] = {
        { set_format, "not a kairos checkpoint" },
        { set_version, "found 3 (a checkpoint of another version" },
        { drop_rank_1, "expected a \"file\" listed in \"files\", found \"rank-1.bin\"" },
        { far_offset, "truncated" },
        { huge_size, "expected offset + size within a file" },
        { negative_offset, "simulators[0].offset: expected an integer >= 16, found -1" },
        { header_offset, "simulators[0].offset: expected an integer >= 16, found 3" },
        { duplicate_sim, "simulators[3]: expected a simulator listed once, found \"alpha\" twice" },
        { overlap, "overlapping" },
        { escape_file, "files[0]: expected a plain file name" },
        { unlisted_file, "found \"rank-7.bin\"" },
        { no_identity, "identity: expected 16 hex digits, found nothing" },
        { string_ticks, "time.ticks: expected an integer, found a string" },
        { bomb, "raw_size a zstd frame" },
        { unknown_key, "found \"surprise\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_ckpt("ck", 1, false);
        edit_manifest(cases[i].fn);
        expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, strstr(cases[i].what, "truncated") ? "rank-1.bin"
                                                                                               : "ck/manifest.json",
                       cases[i].what);
        teardown();
        setup();
    }
    free_parts();
}

/* A manifest edited by hand (one simulator's checksum, then the cut's
 * ticks: one character each, to values they could hold): refused by its
 * digest, naming it. */
Test(checkpoint_store, edited_manifest_refused)
{
    make_parts();
    const char *keys[] = { "\"checksum\": \"", "\"ticks\": " };
    for (size_t i = 0; i < 2; i++) {
        write_ckpt("ck", 1, false);
        const char *p = path_of("ck", "manifest.json");
        FILE *fp = fopen(p, "rb");
        cr_assert_not_null(fp);
        char text[16384];
        size_t n = fread(text, 1, sizeof text - 1, fp);
        fclose(fp);
        text[n] = '\0';
        char *at = strstr(text, keys[i]);
        cr_assert_not_null(at, "%s", text);
        at += strlen(keys[i]); /* a hex digit, or the first digit of the ticks */
        *at = *at == '1' ? '2' : '1';
        fp = fopen(p, "wb");
        cr_assert_not_null(fp);
        cr_assert_eq(fwrite(text, 1, n, fp), n);
        fclose(fp);
        expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "ck/manifest.json",
                       ": the manifest was changed after it was written");
        teardown();
        setup();
    }
    free_parts();
}

Test(checkpoint_store, broken_directories_refused)
{
    make_parts();
    write_ckpt("ck", 1, false);
    /* a missing rank file */
    cr_assert_eq(unlink(path_of("ck", "rank-1.bin")), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-1.bin", "No such file");
    /* a foreign rank file */
    FILE *fp = fopen(path_of("ck", "rank-1.bin"), "wb");
    fputs("this is not a rank file at all, not at all", fp);
    fclose(fp);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "rank-1.bin", "another header");
    /* not JSON */
    fp = fopen(path_of("ck", "manifest.json"), "w");
    fputs("{\"format\": ", fp);
    fclose(fp);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "ck/manifest.json", "expected valid JSON");
    fp = fopen(path_of("ck", "manifest.json"), "w");
    fputs("[1, 2]", fp);
    fclose(fp);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "ck/manifest.json", "expected an object, found an array");
    fp = fopen(path_of("ck", "manifest.json"), "w");
    fputs("{\"format\": \"kairos-checkpoint\", \"version\": \"1\"}", fp);
    fclose(fp);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "ck/manifest.json", "version: expected 2, found a string");
    /* manifest missing: a half-written checkpoint */
    cr_assert_eq(unlink(path_of("ck", "manifest.json")), 0);
    expect_refused(path_of("ck", NULL), KR_ERR_CORRUPT, "ck", "half-written");
    /* nothing there */
    expect_refused(path_of("nowhere", NULL), KR_ERR_IO, "nowhere", "No such file");
    expect_refused(root, KR_ERR_CORRUPT, root, "found neither");
    free_parts();
}

