/* The frames' writer (runtime/frame_writer.c): a thread that compresses
 * frame blocks and appends them to their files, so that a frame costs
 * the simulation only the gathering of what it draws. Not public API. */
#ifndef KAIROS_RUNTIME_FRAME_WRITER_H
#define KAIROS_RUNTIME_FRAME_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include "kairos/buffer.h"
#include "kairos/status.h"

typedef struct kr__frame_writer kr__frame_writer_t;

/* Starts the thread; NULL with kr_last_error(). `level`: zstd's. */
kr__frame_writer_t *kr__frame_writer_create(int level);
/* Waits until every block handed over is written; the first failure
 * among them, as a message naming the file. */
kr_status_t kr__frame_writer_wait(kr__frame_writer_t *w);
/* Queues a block for `fp` (`path` names it in messages): its 40-byte
 * header (the compressed size is filled in) and its raw bytes, which the
 * writer takes (*raw gets an empty buffer, with some capacity, back).
 * Only between a wait and the next go. */
kr_status_t kr__frame_writer_put(kr__frame_writer_t *w, FILE *fp, const char *path, const uint32_t head[10],
                                 kr_buf_t *raw);
/* Starts writing what was queued. */
void kr__frame_writer_go(kr__frame_writer_t *w);
/* Waits, stops the thread and frees. */
void kr__frame_writer_destroy(kr__frame_writer_t *w);

#endif
