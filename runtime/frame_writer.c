/* The frames' writer thread (frame_writer.h). The run thread gathers a
 * frame, queues one block per simulator and goes on; the writer
 * compresses and appends them while the model runs. The next frame (or a
 * checkpoint's file lengths, or the end) first waits for it, so at most
 * one frame is ever in flight and the files hold whole frames in order.
 * The writer calls nothing of kairos: it keeps its own first error, which
 * the run thread reports. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "base/error.h"
#include "runtime/frame_writer.h"

typedef struct job {
    FILE *fp;
    const char *path;
    uint32_t head[10];
    kr_buf_t raw;
} job_t;

/* Blocks queued for one go: the run thread fills one list while the
 * writer empties the other. */
typedef struct job_list {
    job_t *jobs;
    size_t n, cap;
} job_list_t;

struct kr__frame_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_list_t lists[2];
    int filling;                 /* the list the run thread fills */
    bool busy;                   /* the writer has the other list */
    bool stop;
    ZSTD_CCtx *zstd;
    void *packed;
    size_t packed_cap;
    kr_status_t failed;          /* the first failure, kept */
    char error[600];
};

static void fail_once(kr__frame_writer_t *w, kr_status_t st, const char *path, const char *why)
{
    if (w->failed) return;
    w->failed = st;
    snprintf(w->error, sizeof w->error, "%s: %s", path, why);
}

static void write_job(kr__frame_writer_t *w, job_t *j)
{
    size_t bound = ZSTD_compressBound(j->raw.len);
    if (bound > w->packed_cap) {
        void *more = realloc(w->packed, bound);
        if (!more) return fail_once(w, KR_ERR_NOMEM, j->path, "out of memory compressing a frame");
        w->packed = more;
        w->packed_cap = bound;
    }
    size_t packed = ZSTD_compress2(w->zstd, w->packed, bound, j->raw.data, j->raw.len);
    if (ZSTD_isError(packed)) return fail_once(w, KR_ERR_STATE, j->path, ZSTD_getErrorName(packed));
    j->head[7] = (uint32_t)packed;
    if (fwrite(j->head, sizeof j->head, 1, j->fp) != 1 || fwrite(w->packed, 1, packed, j->fp) != packed) {
        char why[160];
        snprintf(why, sizeof why, "write failed: %s", strerror(errno));
        return fail_once(w, KR_ERR_IO, j->path, why);
    }
}

static void *writer_main(void *arg)
{
    kr__frame_writer_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy) break;
        job_list_t *list = &w->lists[1 - w->filling];
        pthread_mutex_unlock(&w->mu);
        for (size_t i = 0; i < list->n; i++)
            if (!w->failed) write_job(w, &list->jobs[i]);
        pthread_mutex_lock(&w->mu);
        list->n = 0;
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

kr__frame_writer_t *kr__frame_writer_create(int level)
{
    kr__frame_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->zstd = ZSTD_createCCtx())) {
        free(w);
        kr__fail(KR_ERR_NOMEM, "out of memory for the frames' writer");
        return NULL;
    }
    ZSTD_CCtx_setParameter(w->zstd, ZSTD_c_compressionLevel, level);
    /* a checksum of each block's content, which the reader's decompression
     * checks: a changed byte inside the compressed data is otherwise drawn */
    ZSTD_CCtx_setParameter(w->zstd, ZSTD_c_checksumFlag, 1);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w)) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        ZSTD_freeCCtx(w->zstd);
        free(w);
        kr__fail(KR_ERR_STATE, "cannot start the frames' writer thread");
        return NULL;
    }
    return w;
}

kr_status_t kr__frame_writer_wait(kr__frame_writer_t *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return w->failed ? kr__fail(w->failed, "%s", w->error) : KR_OK;
}

kr_status_t kr__frame_writer_put(kr__frame_writer_t *w, FILE *fp, const char *path, const uint32_t head[10],
                                 kr_buf_t *raw)
{
    job_list_t *list = &w->lists[w->filling];
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 8;
        job_t *more = realloc(list->jobs, cap * sizeof *more);
        if (!more) return kr__fail(KR_ERR_NOMEM, "out of memory queueing a frame");
        memset(more + list->cap, 0, (cap - list->cap) * sizeof *more);
        list->jobs = more;
        list->cap = cap;
    }
    job_t *j = &list->jobs[list->n++];
    j->fp = fp;
    j->path = path;
    memcpy(j->head, head, sizeof j->head);
    /* the block's bytes change hands; the job's old buffer goes back */
    kr_buf_t spare = j->raw;
    j->raw = *raw;
    *raw = spare;
    kr_buf_clear(raw);
    return KR_OK;
}

void kr__frame_writer_go(kr__frame_writer_t *w)
{
    pthread_mutex_lock(&w->mu);
    w->filling = 1 - w->filling;
    w->busy = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void kr__frame_writer_destroy(kr__frame_writer_t *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    while (w->busy) pthread_cond_wait(&w->cv, &w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < w->lists[k].cap; i++) kr_buf_fini(&w->lists[k].jobs[i].raw);
        free(w->lists[k].jobs);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    ZSTD_freeCCtx(w->zstd);
    free(w->packed);
    free(w);
}
