/* The checkpoint store: the single-process file layer of checkpoints
 * (issue 18). Not public API; whoever orchestrates a checkpoint (gathers
 * over ranks, decides the cut) builds on it.
 *
 * A checkpoint is one flat directory ROOT/NAME:
 *   manifest.json  what it holds, for programs and people (below);
 *   rank-K.bin     one file per writing rank: a 16-byte header (the magic
 *                  "KRCKPT\r\n" then the format version, 32-bit little
 *                  endian, then 4 zero bytes), then each simulator's part,
 *                  one zstd frame (with zstd's content checksum and content
 *                  size), back to back, at the offsets the manifest lists.
 * Paths inside the manifest are plain file names, relative to its
 * directory. The manifest, pretty-printed:
 *   {"format": "kairos-checkpoint", "version": 1,
 *    "identity": "0123456789abcdef",          the model's identity digest
 *    "time": {"ticks": 5000000, "units": 5.0}, the cut
 *    "precision": 1000000,                     ticks per model unit
 *    "ranks": 2,                               ranks that wrote it
 *    "files": ["rank-0.bin", "rank-1.bin"],
 *    "simulators": [{"name": "a", "file": "rank-0.bin", "offset": 16,
 *                    "size": 123, "raw_size": 456,
 *                    "checksum": "89abcdef01234567"}, ...],
 *    "extra": {...}}                           the caller's own, optional
 * "checksum" is kr__hash_bytes (base/hmap.h, seed 0) of the part's stored
 * (compressed) bytes, as 16 hex digits.
 *
 * A checkpoint appears under its final name only when complete: it is
 * written as ROOT/NAME.partial/ (kr__ckpt_dir_begin), each file fsynced,
 * the manifest last, then renamed (kr__ckpt_dir_commit); older ones are
 * pruned after that (kr__ckpt_dir_prune).
 *
 * Everything read back is untrusted: kr__ckpt_open and kr__ckpt_read refuse
 * a truncated, corrupted, foreign-version, half-written or incomplete
 * checkpoint with one line naming the file and what is wrong
 * (KR_ERR_CORRUPT for contents, KR_ERR_IO for a file that cannot be read),
 * and allocate nothing larger than what the files hold before checking it. */
#ifndef KAIROS_RUNTIME_CHECKPOINT_STORE_H
#define KAIROS_RUNTIME_CHECKPOINT_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kairos/status.h"

#define KR__CKPT_FORMAT "kairos-checkpoint"
#define KR__CKPT_VERSION 2 /* 2: the manifest's digest */
#define KR__CKPT_MANIFEST "manifest.json"
/* Bytes of a rank file's header; the first part starts there. */
#define KR__CKPT_HEADER_SIZE 16

/* One simulator's part, uncompressed, as handed to the store. */
typedef struct kr__ckpt_part {
    const char *sim;
    const void *data;
    size_t size;
} kr__ckpt_part_t;

/* Where a part went. sim and file are malloc'ed (kr__ckpt_entry_fini). */
typedef struct kr__ckpt_entry {
    char *sim;
    char *file;           /* a plain file name in the checkpoint directory */
    uint64_t offset;      /* of the part's zstd frame in file */
    uint64_t size;        /* of the frame */
    uint64_t raw_size;    /* of the part uncompressed */
    uint64_t checksum;    /* kr__hash_bytes(frame, size, 0) */
} kr__ckpt_entry_t;

/* Writes DIR/FILE (FILE a plain name: no '/', not "." or ".."): the header,
 * then each part as one zstd frame at `level` (ZSTD_minCLevel() to
 * ZSTD_maxCLevel(); 0 is zstd's default) with zstd's content checksum on,
 * back to back. fsyncs and closes it; it is written as FILE.partial and
 * renamed (runtime/output_file.c), so a FILE present is whole. entries[i]
 * gets where part i went (its strings malloc'ed: kr__ckpt_entry_fini).
 * KR_ERR_INVALID_ARG for a bad name or level, KR_ERR_IO, KR_ERR_NOMEM. */
kr_status_t kr__ckpt_write_rank_file(const char *dir, const char *file, int level, const kr__ckpt_part_t *parts,
                                     size_t n, kr__ckpt_entry_t *entries);
/* Frees an entry's strings. */
void kr__ckpt_entry_fini(kr__ckpt_entry_t *e);

typedef struct kr__ckpt_manifest {
    uint64_t identity;        /* model identity digest (written as 16 hex digits) */
    uint64_t time;            /* the cut, in ticks (at most INT64_MAX) */
    double time_units;        /* the same in model units, for people */
    uint64_t precision;       /* ticks per unit (>= 1) */
    int ranks;                /* ranks that wrote it (>= 1) */
    kr__ckpt_entry_t *entries;
    size_t entry_count;       /* "files" is the distinct entry files, in order of first use */
    json_t *extra;            /* an object of the caller's own, written and read back as is; may be NULL */
} kr__ckpt_manifest_t;

/* Writes DIR/manifest.json (as manifest.json.partial, fsynced, renamed).
 * Write it after the rank files: a directory with a manifest is complete.
 * KR_ERR_INVALID_ARG for a manifest that would not read back (a time above
 * INT64_MAX, precision or ranks below 1, a bad file name, extra not an
 * object), KR_ERR_IO, KR_ERR_NOMEM. */
kr_status_t kr__ckpt_manifest_write(const char *dir, const kr__ckpt_manifest_t *m);
/* The manifest's "digest": a hash of the rest of it (root without that key)
 * in one canonical text; a manifest whose digest differs was changed after
 * it was written, and is refused. False when out of memory. */
bool kr__ckpt_manifest_digest(const json_t *root, uint64_t *out);
/* Frees the entries (and their strings) and drops extra; zeroes *m. */
void kr__ckpt_manifest_fini(kr__ckpt_manifest_t *m);

/* Directory life.
 * begin: makes ROOT (mkdir -p) and a fresh, empty ROOT/NAME.partial
 *   (removing a stale one and the files in it); *partial_path (malloc'ed)
 *   is its path, where the rank files and the manifest go. NAME is a plain
 *   name not ending in ".partial".
 * commit: fsyncs ROOT/NAME.partial, renames it to ROOT/NAME (replacing a
 *   checkpoint of that name; refused if the name holds anything else, or
 *   if the partial directory has no manifest.json) and fsyncs ROOT.
 * abandon: removes ROOT/NAME.partial, if there, after a failure.
 * prepare: makes ROOT if needed; refused unless this process can write
 *   there (before a run, so that a bad folder is named at once), or while
 *   another run holds it. *made: how many of ROOT's last parts were made,
 *   ROOT and the folders above it that were missing (a run that leaves
 *   them empty removes them with unmake). *lock: a descriptor of ROOT holding its
 *   lock until closed (at the run's end), or -1.
 * prune: removes the oldest complete checkpoints (by manifest time, ties by
 *   name) under ROOT at or before `upto` (ticks) beyond the newest `keep`
 *   of those (keep <= 0: keeps all). Later ones are left alone: those of
 *   a longer run, which a restart from an earlier checkpoint writes beside
 *   (the newest by model time would have been its own). Only
 *   directories whose manifest.json reads as a kairos checkpoint manifest
 *   count and are removed (manifest first, then the files, then the
 *   directory); .partial ones, other directories and files are left alone. */
kr_status_t kr__ckpt_dir_begin(const char *root, const char *name, char **partial_path);
kr_status_t kr__ckpt_dir_commit(const char *root, const char *name);
kr_status_t kr__ckpt_dir_prune(const char *root, int keep, uint64_t upto);
kr_status_t kr__ckpt_dir_abandon(const char *root, const char *name);
kr_status_t kr__ckpt_dir_prepare(const char *root, unsigned *made, int *lock);
/* Removes the `made` last parts of ROOT that prepare made, deepest first,
 * stopping at the first that is not empty. */
void kr__ckpt_dir_unmake(const char *root, unsigned made);

/* Reading. */
typedef struct kr__ckpt kr__ckpt_t;
/* PATH is a checkpoint directory (it holds manifest.json), or a directory
 * of checkpoints: then the newest complete one by manifest time (ties by
 * name); .partial directories and directories without a manifest are
 * ignored, a candidate whose manifest is bad is refused (not skipped). The
 * manifest is checked whole: format, version (a foreign version is named),
 * keys and types, file names (plain), every listed file present with a
 * good header and exactly as long as its parts need, every entry's file
 * listed, no duplicate simulator, no overlapping parts. The parts
 * themselves are checked by kr__ckpt_read. */
kr_status_t kr__ckpt_open(const char *path, kr__ckpt_t **out);
const kr__ckpt_manifest_t *kr__ckpt_manifest(const kr__ckpt_t *c);
/* The checkpoint directory chosen. */
const char *kr__ckpt_path(const kr__ckpt_t *c);
/* Whether kr__ckpt_open takes PATH as a folder of checkpoints rather than
 * as one (a directory with its manifest, or named .partial). */
bool kr__ckpt_names_folder(const char *path);
/* DIR/NAME, malloc'ed (no doubled slash when DIR ends in one); NULL, the
 * error set, if out of memory. */
char *kr__ckpt_join(const char *dir, const char *name);
/* The complete checkpoints in folder ROOT whose manifest reads (the others
 * skipped; reading one may set the last error), newest first by model
 * time, ties by name: each one's name in ROOT, its time and its model's
 * identity digest. */
typedef struct kr__ckpt_found {
    char *name;
    uint64_t time;
    uint64_t identity;
} kr__ckpt_found_t;
kr_status_t kr__ckpt_list(const char *root, kr__ckpt_found_t **out, size_t *count);
void kr__ckpt_list_free(kr__ckpt_found_t *list, size_t count);
/* One simulator's part, checked: our checksum of the stored bytes, one
 * zstd frame with content size raw_size and zstd's checksum on, then
 * decompressed to exactly raw_size bytes (zstd verifying its checksum).
 * *data is malloc'ed (at least 1 byte, also for an empty part).
 * KR_ERR_CORRUPT naming the file and simulator on any mismatch, KR_ERR_IO
 * if the file cannot be read, KR_ERR_INVALID_ARG if there is no such
 * simulator. */
kr_status_t kr__ckpt_read(kr__ckpt_t *c, const char *sim, void **data, size_t *size);
void kr__ckpt_close(kr__ckpt_t *c);

#endif
