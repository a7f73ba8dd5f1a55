#define _XOPEN_SOURCE 700 /* realpath */
/* Output files written under NAME.partial and renamed into place only
 * when complete (runtime/run.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/error.h"
#include "base/file.h"
#include "base/hmap.h"
#include "runtime/run.h"

static kr_status_t open_partial(kr__out_file_t *o, const char *path, bool empty_now);

kr_status_t kr__out_open(kr__out_file_t *o, const char *path) { return open_partial(o, path, true); }

kr_status_t kr__out_open_unemptied(kr__out_file_t *o, const char *path)
{
    kr_status_t st = open_partial(o, path, false);
    if (st || o->direct) return st;
    /* (a .partial file of an earlier run, unfinished, stays as it was
     * should this run be refused: a restart may go on with it) */
    struct stat sb;
    o->unemptied = !fstat(fileno(o->fp), &sb) && sb.st_size > 0;
    o->keep_partial = o->unemptied;
    return KR_OK;
}

kr_status_t kr__out_empty(kr__out_file_t *o)
{
    if (!o->unemptied) return KR_OK;
    if (ftruncate(fileno(o->fp), 0))
        return kr__fail(KR_ERR_IO, "%s: cannot empty: %s", o->partial, strerror(errno));
    o->unemptied = false;
    o->keep_partial = false;
    return KR_OK;
}

static kr_status_t open_partial(kr__out_file_t *o, const char *path, bool empty_now)
{
    *o = (kr__out_file_t){ .digest = KR__FNV_START };
    struct stat st;
    /* a link's file is replaced, not the link (a dangling one is replaced) */
    char *real = !lstat(path, &st) && S_ISLNK(st.st_mode) ? realpath(path, NULL) : NULL;
    const char *name = real ? real : path;
    bool exists = !stat(name, &st);
    if (exists && S_ISDIR(st.st_mode)) {
        free(real);
        return kr__fail(KR_ERR_IO, "%s: cannot write: found a directory", path);
    }
    o->direct = exists && !S_ISREG(st.st_mode);
    size_t n = strlen(name);
    o->final = real ? real : strdup(path);
    o->partial = malloc(n + 9);
    if (!o->final || !o->partial) return kr__fail(KR_ERR_NOMEM, "out of memory");
    snprintf(o->partial, n + 9, o->direct ? "%s" : "%s.partial", name);
    /* (without waiting: a named pipe nobody reads blocked open() for ever,
     * deaf to SIGTERM; it is refused instead) */
    o->fp = kr__fopen_write_now(o->partial, empty_now || o->direct);
    if (!o->fp) {
        /* Named as the user gave it (the .partial name is this file's own
         * business) unless the .partial name is what is in the way; and
         * what is there is not this run's to remove at the end. */
        int e = errno;
        const char *why = e == ENXIO ? "nobody reads it (a named pipe or a socket)" : strerror(e);
        kr_status_t st = o->direct || (e != EISDIR && e != ENXIO)
                             ? kr__fail(KR_ERR_IO, "%s: cannot write: %s", path, why)
                             : kr__fail(KR_ERR_IO, "%s: cannot write its temporary %s: %s", path, o->partial, why);
        free(o->partial);
        o->partial = NULL;
        return st;
    }
    return KR_OK;
}

/* The file a restart goes on with: PATH.partial if there, else PATH. */
static char *resumed_file(const char *path)
{
    size_t n = strlen(path);
    char *partial = malloc(n + 9);
    if (!partial) return NULL;
    snprintf(partial, n + 9, "%s.partial", path);
    struct stat st;
    if (stat(partial, &st)) {
        free(partial);
        return strdup(path);
    }
    return partial;
}

kr_status_t kr__out_check_resume(const char *path, uint64_t offset)
{
    char *have = resumed_file(path);
    if (!have) return kr__fail(KR_ERR_NOMEM, "out of memory");
    struct stat st;
    bool exists = !stat(have, &st);
    kr_status_t s = KR_OK;
    if (!exists && offset)
        s = kr__fail(KR_ERR_CORRUPT, "%s: missing: the checkpoint continues this output from byte %llu", path,
                     (unsigned long long)offset);
    else if (exists && !S_ISREG(st.st_mode))
        s = kr__fail(KR_ERR_CORRUPT, "%s: expected the file the checkpoint continues, found %s", have,
                     S_ISDIR(st.st_mode) ? "a directory" : "no regular file");
    else if (exists && (uint64_t)st.st_size < offset)
        s = kr__fail(KR_ERR_CORRUPT, "%s: %lld bytes, shorter than the %llu the checkpoint continues from", have,
                     (long long)st.st_size, (unsigned long long)offset);
    free(have);
    return s;
}

kr_status_t kr__out_prefix_digest(const char *path, uint64_t offset, uint64_t *digest)
{
    *digest = KR__FNV_START;
    if (!offset) return KR_OK;
    char *have = resumed_file(path);
    if (!have) return kr__fail(KR_ERR_NOMEM, "out of memory");
    bool odd;
    FILE *in = kr__fopen_regular(have, &odd);
    kr_status_t st = KR_OK;
    if (!in) {
        st = kr__fail(KR_ERR_CORRUPT, "%s: cannot read the start the checkpoint continues: %s", have,
                      odd ? "not a regular file" : strerror(errno));
        free(have);
        return st;
    }
    char buf[65536];
    uint64_t h = KR__FNV_START, n = 0;
    while (n < offset) {
        size_t want = offset - n < sizeof buf ? (size_t)(offset - n) : sizeof buf;
        size_t got = fread(buf, 1, want, in);
        if (!got) break;
        h = kr__fnv1a(h, buf, got);
        n += got;
    }
    if (n < offset)
        st = kr__fail(KR_ERR_CORRUPT, "%s: %llu bytes, shorter than the %llu the checkpoint continues from", have,
                      (unsigned long long)n, (unsigned long long)offset);
    fclose(in);
    free(have);
    *digest = h;
    return st;
}

void kr__out_write(kr__out_file_t *o, const void *data, size_t n)
{
    fwrite(data, 1, n, o->fp);
    o->digest = kr__fnv1a(o->digest, data, n);
}

typedef struct json_sink {
    FILE *fp;
    size_t len;
    char buf[1 << 16];
} json_sink_t;

static int json_sink_put(const char *text, size_t n, void *arg)
{
    json_sink_t *k = arg;
    if (k->len + n > sizeof k->buf) {
        if (k->len && fwrite(k->buf, 1, k->len, k->fp) != k->len) return -1;
        k->len = 0;
        if (n > sizeof k->buf) return fwrite(text, 1, n, k->fp) == n ? 0 : -1;
    }
    memcpy(k->buf + k->len, text, n);
    k->len += n;
    return 0;
}

int kr__json_dump_to(const json_t *j, FILE *fp, size_t flags)
{
    json_sink_t *k = malloc(sizeof *k);
    if (!k) return -1;
    k->fp = fp;
    k->len = 0;
    int rc = json_dump_callback(j, json_sink_put, k, flags);
    if (!rc && k->len && fwrite(k->buf, 1, k->len, fp) != k->len) rc = -1;
    free(k);
    return rc;
}

kr_status_t kr__out_resume(kr__out_file_t *o, const char *path, uint64_t offset)
{
    kr_status_t checked = kr__out_check_resume(path, offset);
    if (checked) return checked;
    size_t n = strlen(path);
    o->final = strdup(path);
    o->partial = malloc(n + 9);
    if (!o->final || !o->partial) return kr__fail(KR_ERR_NOMEM, "out of memory");
    snprintf(o->partial, n + 9, "%s.partial", path);
    struct stat st;
    /* a finished file goes back under its .partial name until this run ends */
    if (stat(o->partial, &st) && !stat(o->final, &st) && rename(o->final, o->partial))
        return kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", o->final, o->partial, strerror(errno));
    if (stat(o->partial, &st)) {
        /* none to go on with (offset 0, checked): a new file */
        free(o->final);
        free(o->partial);
        return kr__out_open(o, path);
    }
    if (truncate(o->partial, (off_t)offset))
        return kr__fail(KR_ERR_IO, "%s: cannot cut to %llu bytes: %s", o->partial, (unsigned long long)offset,
                        strerror(errno));
    o->fp = fopen(o->partial, "a");
    if (!o->fp) return kr__fail(KR_ERR_IO, "%s: cannot write: %s", o->partial, strerror(errno));
    o->keep_partial = true;
    return KR_OK;
}

kr_status_t kr__out_finish(kr__out_file_t *o)
{
    if (!o->fp) return o->failed ? KR_ERR_IO : KR_OK;
    /* (failed with the stream open: a line its writer could not make) */
    bool unmade = o->failed, bad = ferror(o->fp) != 0 || unmade;
    kr_status_t st = KR_OK;
    if (fclose(o->fp) || bad) {
        st = kr__fail(KR_ERR_IO, "%s: write failed: %s", o->partial, unmade ? "out of memory" : strerror(errno));
        o->failed = true;
    }
    o->fp = NULL;
    return st;
}

kr_status_t kr__out_commit(kr__out_file_t *o, bool keep)
{
    kr_status_t st = KR_OK;
    if (o->fp) {
        /* committed without finishing: finish now, keeping only a good file */
        if (kr__out_finish(o) && keep) st = kr_last_status();
    }
    if (o->partial && !o->direct) {
        keep = keep && !o->failed;
        if (keep && rename(o->partial, o->final)) {
            st = kr__fail(KR_ERR_IO, "%s: cannot rename to %s: %s", o->partial, o->final, strerror(errno));
            keep = false;
        }
        if (!keep && !o->keep_partial) remove(o->partial);
    }
    free(o->final);
    free(o->partial);
    *o = (kr__out_file_t){ 0 };
    return st;
}

kr_status_t kr__out_close(kr__out_file_t *o, bool keep)
{
    kr_status_t st = kr__out_finish(o);
    kr_status_t committed = kr__out_commit(o, keep && !st);
    return keep ? (st ? st : committed) : KR_OK;
}

char *kr__out_file_identity(const char *path, bool fifos)
{
    struct stat st;
    if (!stat(path, &st)) {
        if (!S_ISREG(st.st_mode) && !(fifos && S_ISFIFO(st.st_mode))) return NULL;
        /* An existing file by its device and inode, which every name of it
         * shares: hard links too (no real path starts with "//"). */
        char id[64];
        snprintf(id, sizeof id, "//inode %ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
        return strdup(id);
    }
    /* A name that does not exist yet: the real path of its deepest folder
     * that does, then the rest as written, without "." parts and with
     * ".." taking one part back, so that two spellings of one file to be
     * (fr/x, ./fr/x, fr/../fr/x) are one. */
    char *folder = strdup(path), *real = NULL;
    if (!folder) return NULL;
    size_t split = strlen(folder);
    while (!real) {
        while (split > 0 && folder[split - 1] != '/') split--;
        if (split <= 1) {                      /* no folder left: the working one, or the root */
            real = split ? strdup("/") : realpath(".", NULL);
            break;
        }
        folder[--split] = 0;                   /* the folder before that '/' */
        real = realpath(folder, NULL);
    }
    size_t n = real ? strlen(real) : 0, rest = strlen(path + split);
    char *id = real ? malloc(n + rest + 2) : NULL;
    if (id) {
        memcpy(id, real, n + 1);
        for (const char *part = path + split; *part;) {
            size_t k = strcspn(part, "/");
            if (k == 2 && part[0] == '.' && part[1] == '.') {
                while (n > 1 && id[n - 1] != '/') n--;   /* back one part */
                if (n > 1) n--;
            } else if (k && !(k == 1 && part[0] == '.')) {
                if (id[n - 1] != '/') id[n++] = '/';
                memcpy(id + n, part, k);
                n += k;
            }
            id[n] = 0;
            part += k;
            while (*part == '/') part++;
        }
    }
    free(real);
    free(folder);
    return id;
}
