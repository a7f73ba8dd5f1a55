/* The MPI transport: batched, non-blocking, bounded. See transport_mpi.h. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include "base/clock.h"
#include "base/error.h"
#include "base/grow.h"
#include "kairos/buffer.h"
#include "net/batch.h"
#include "net/transport_mpi.h"

enum { TAG_DATA = 7101, TAG_LARGE = 7102 };
#define MAX_IN_FLIGHT 8          /* batches per peer not yet completed */
#define MAX_MESSAGE KR__MAX_MESSAGE
/* The default largest batch: within the eager size of Open MPI's shared
 * memory (4 KiB, with room for its headers). A larger one needs a
 * rendezvous, and without single-copy transfers moves only while its
 * sender is inside MPI: PHOLD at remote 0.5, whose batches of a step
 * were about 5 KiB, ran 12 % faster on 2 ranks with two eager batches
 * instead, the receiver's mean wait halved (bench/README.md, "Batches
 * within the eager size"). Networks between nodes have larger eager
 * sizes; batches this size still carry some fifty sync-events each. */
#define EAGER_BATCH ((size_t)4096 - 128)

/* Receives posted ahead (receive_all): RECV_SLOTS receives of SLOT_BYTES
 * from any rank on TAG_DATA are always waiting, so an arriving batch is
 * copied once, straight into one, and taking it costs a test and a new
 * receive instead of a probe, a receive and a probe that finds nothing
 * (bench/README.md, "Receives posted ahead"). A batch larger than a slot
 * is announced on TAG_DATA and follows on TAG_LARGE; an abort also
 * travels on TAG_DATA. Their first u32 tells them from a batch, whose
 * first record's length is at most MAX_MESSAGE:
 *   [MARK_LARGE][u64 length]                       the batch follows
 *   [MARK_ABORT][u32 status][message, NUL-terminated] */
#define RECV_SLOTS 8
#define SLOT_BYTES EAGER_BATCH
#define SPARE_SLOT_BUFS (2 * RECV_SLOTS) /* delivered slots' buffers kept for the next receives */
#define MARK_LARGE 0xFFFFFFFFu
#define MARK_ABORT 0xFFFFFFFEu
#define LARGE_NOTE_BYTES 12

/* A batch handed to MPI: req[0] sends it; req[1] sends the note that
 * announces a batch larger than a slot (its 12 bytes sit past the end of
 * buf, where they stay put while sending), else is MPI_REQUEST_NULL. */
typedef struct pending_send {
    MPI_Request req[2];
    kr_buf_t buf;
} pending_send_t;

typedef struct peer {
    kr_buf_t out;                /* the batch being filled */
    kr_buf_t spare;              /* a sent batch's buffer, for the next (keep_as_spare) */
    pending_send_t sends[MAX_IN_FLIGHT];
    int sends_used;
    uint64_t batches_sent, batches_received;
} peer_t;

/* A batch taken off the network: whole from a slot, or a large one whose
 * receive is posted once announced and may complete later (req,
 * MPI_REQUEST_NULL once complete). */
typedef struct inbox_item {
    int source;
    kr_buf_t buf;
    MPI_Request req;
} inbox_item_t;

/* How a rank waits for messages (KAIROS_WAIT, docs/cli.md): polling
 * without pause (a core of its own); polling and yielding the core between
 * polls (ranks outnumber the cores: a rank with work runs at once, and one
 * without gets its message as soon as the scheduler comes back); or short
 * sleeps between polls. */
typedef enum wait_mode { WAIT_SPIN, WAIT_YIELD, WAIT_SLEEP } wait_mode_t;

typedef struct mpi_transport {
    kr__transport_t base;
    MPI_Comm comm;
    int rank, size;
    int *rank_of;
    uint32_t sim_count;
    size_t flush_bytes;
    peer_t *peers;
    /* messages to this rank's own simulators, in order */
    kr_buf_t loop;
    size_t loop_read, loop_count;
    kr__held_t last_sent;        /* where the last message sent waits (mpi_held) */
    /* Batches received (or being received) but not yet delivered, in
     * arrival order; the first `inbox_complete` have arrived whole. */
    inbox_item_t *inbox;
    size_t inbox_count, inbox_cap, inbox_complete;
    kr_buf_t inbox_spare;        /* a delivered large batch's buffer, for the next */
    /* the receives posted ahead; the next to complete is slots[slot_next]
     * (MPI matches receives from any rank in the order posted) */
    struct { MPI_Request req; kr_buf_t buf; } slots[RECV_SLOTS];
    size_t slot_next;
    kr_buf_t spare_slot_bufs[SPARE_SLOT_BUFS];
    size_t spare_slot_count;
    /* termination and deadlock: quiescence rounds (see mpi_settle) */
    uint64_t records_sent, records_delivered;
    bool round_active, have_last, finished;
    MPI_Request round;
    uint64_t *round_in, *round_out; /* 3 each, one allocation (see mpi_destroy) */
    uint64_t last[3];
    uint64_t round_end_ns;
    /* The idle streak a round waits for (mpi_settle): polls counts every
     * step's poll; a streak goes on while each settle follows the last
     * one by a single step and no record was sent or delivered between. */
    uint64_t polls, streak_polls, streak_sent, streak_delivered, idle_since_ns;
    /* failure: the first one heard of (this rank's own, or a peer's abort
     * message), with its status, so that every rank reports the same */
    bool aborted;
    int abort_origin;            /* the rank that failed first, as far as this rank knows */
    kr_status_t abort_status;
    char abort_msg[1024];
    /* The abort's wire message, allocated with the transport: a rank that
     * fails for want of memory must still be able to tell the others. */
    uint8_t *abort_wire;
    kr__mpi_transport_stats_t stats;
    wait_mode_t wait;            /* how it waits: polling with a core of its own, else yielding it */
    /* the window's reduction (see mpi_reduce) */
    size_t window_n;
    uint64_t *window_buf;
    bool window_pending;         /* a reduction into window_buf not yet complete */
    MPI_Datatype window_type;
    MPI_Op window_op;
    bool window_op_made;
} mpi_transport_t;

static kr_status_t mpi_fail(int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, text, &len);
    return kr__fail(KR_ERR_IO, "MPI %s: %s", what, text);
}

static void keep_until_finalize(void *p);

/* Keeps the emptied buffer of a batch sent or delivered as `spare`, the
 * next batch's (if there is none yet): growing each new batch from nothing
 * cost a reallocation every few messages (about a tenth of what sending a
 * sync-event to another rank cost). */
static void keep_as_spare(kr_buf_t *spare, kr_buf_t *buf)
{
    if (spare->data) {
        kr_buf_fini(buf);
        return;
    }
    *spare = *buf;
    kr_buf_clear(spare);
}

/* Completed sends free their slot, oldest first. A failed test (only
 * with an error handler other than MPI's default, which aborts) keeps its
 * send and the ones after it, and is reported. */
static kr_status_t reap_sends(peer_t *p)
{
    int k = 0, err = MPI_SUCCESS;
    for (int i = 0; i < p->sends_used; i++) {
        pending_send_t *s = &p->sends[i];
        int done = 0;
        if (err == MPI_SUCCESS)
            err = s->req[1] == MPI_REQUEST_NULL ? MPI_Test(&s->req[0], &done, MPI_STATUS_IGNORE)
                                                : MPI_Testall(2, s->req, &done, MPI_STATUSES_IGNORE);
        if (done && err == MPI_SUCCESS) {
            keep_as_spare(&p->spare, &s->buf);
            continue;
        }
        p->sends[k++] = *s;
    }
    p->sends_used = k;
    return err == MPI_SUCCESS ? KR_OK : mpi_fail(err, "send");
}

/* Completes the large batches' receives, in arrival order, up to the
 * first still under way (a batch from a slot is whole already). */
static kr_status_t complete_receives(mpi_transport_t *t)
{
    while (t->inbox_complete < t->inbox_count) {
        inbox_item_t *it = &t->inbox[t->inbox_complete];
        if (it->req != MPI_REQUEST_NULL) {
            int done = 0;
            int err = MPI_Test(&it->req, &done, MPI_STATUS_IGNORE);
            if (err != MPI_SUCCESS) return mpi_fail(err, "receive");
            if (!done) return KR_OK;
        }
        t->inbox_complete++;
        t->peers[it->source].batches_received++;
        t->stats.batches_received++;
    }
    return KR_OK;
}

/* Keeps a delivered batch's buffer: a slot's for the next slots, a
 * large one's for the next large batch. */
static void recycle(mpi_transport_t *t, kr_buf_t *buf)
{
    if (buf->cap >= SLOT_BYTES && buf->cap < 2 * SLOT_BYTES && t->spare_slot_count < SPARE_SLOT_BUFS) {
        kr_buf_clear(buf);
        t->spare_slot_bufs[t->spare_slot_count++] = *buf;
        kr_buf_init(buf);
        return;
    }
    keep_as_spare(&t->inbox_spare, buf);
}

/* Posts slot i's receive, into a kept buffer if there is one. */
static kr_status_t post_slot(mpi_transport_t *t, size_t i)
{
    kr_buf_t *buf = &t->slots[i].buf;
    t->slots[i].req = MPI_REQUEST_NULL;
    kr_buf_fini(buf);
    if (t->spare_slot_count) *buf = t->spare_slot_bufs[--t->spare_slot_count];
    else kr_buf_init(buf);
    if (kr_buf_reserve(buf, SLOT_BYTES)) return kr_last_status();
    int err = MPI_Irecv(buf->data, (int)SLOT_BYTES, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, t->comm, &t->slots[i].req);
    return err == MPI_SUCCESS ? KR_OK : mpi_fail(err, "receive");
}

/* A peer's abort: the first one heard of is kept, so that every rank
 * reports the same. `wire` is [MARK_ABORT][u32 status][message]. */
static void note_abort(mpi_transport_t *t, int source, const uint8_t *wire, size_t len)
{
    if (t->aborted) return;
    uint32_t code = len >= 8 ? kr__batch_record_len(wire + 4) : 0;
    size_t n = len > 8 ? len - 8 : 0;
    if (n > sizeof t->abort_msg - 1) n = sizeof t->abort_msg - 1;
    t->aborted = true;
    t->abort_origin = source;
    /* a status this build does not know still fails the run */
    t->abort_status = code && code <= KR_ERR_INTERRUPTED ? (kr_status_t)code : KR_ERR_STATE;
    memcpy(t->abort_msg, wire + 8, n);
    t->abort_msg[n] = '\0';
}

/* Files a message from a slot: a batch goes into the inbox whole; a
 * large batch's announcement posts its receive there, in the same place
 * in arrival order (MPI keeps a sender's messages on one tag in order, so
 * the receive matches the batch announced); an abort is noted. */
static kr_status_t file_message(mpi_transport_t *t, int source, kr_buf_t *got)
{
    const uint8_t *d = got->data;
    uint32_t mark = got->len >= 4 ? kr__batch_record_len(d) : 0;
    if (mark == MARK_ABORT) {
        note_abort(t, source, d, got->len);
        recycle(t, got);
        return KR_OK;
    }
    if (t->inbox_count == t->inbox_cap &&
        KR__GROW(t->inbox, t->inbox_cap, t->inbox_count + 1, 16, "MPI transport")) {
        kr_buf_fini(got);
        return kr_last_status();
    }
    inbox_item_t *it = &t->inbox[t->inbox_count];
    it->source = source;
    it->req = MPI_REQUEST_NULL;
    if (mark != MARK_LARGE || got->len != LARGE_NOTE_BYTES) {
        it->buf = *got; /* (a malformed batch is refused when delivered) */
        kr_buf_init(got);
        t->inbox_count++;
        return KR_OK;
    }
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)d[4 + i] << (8 * i);
    recycle(t, got);
    if (len <= SLOT_BYTES || len > 4 + MAX_MESSAGE)
        return kr__fail(KR_ERR_CORRUPT, "MPI transport: from rank %d: a large batch of %llu bytes announced", source,
                        (unsigned long long)len);
    it->buf = t->inbox_spare;
    kr_buf_init(&t->inbox_spare);
    if (kr_buf_reserve(&it->buf, (size_t)len)) {
        kr_buf_fini(&it->buf);
        return kr_last_status();
    }
    int err = MPI_Irecv(it->buf.data, (int)len, MPI_BYTE, source, TAG_LARGE, t->comm, &it->req);
    if (err != MPI_SUCCESS) {
        kr_buf_fini(&it->buf);
        return mpi_fail(err, "receive");
    }
    it->buf.len = (size_t)len;
    t->inbox_count++;
    return KR_OK;
}

/* Takes every message that has arrived into the inbox (and notes an
 * abort): each completed slot is posted again as soon as its message is
 * filed, so RECV_SLOTS receives stay waiting (the first are posted with
 * the transport, before the run counts its allocations). An abort is
 * noted before the new receive needs memory: a rank out of memory still
 * reports the peer that failed first. */
static kr_status_t receive_all(mpi_transport_t *t)
{
    for (;;) {
        size_t i = t->slot_next;
        int done = 0;
        MPI_Status status;
        /* (a slot whose posting failed is posted again, or fails again) */
        if (t->slots[i].req == MPI_REQUEST_NULL) {
            kr_status_t st = post_slot(t, i);
            if (st) return st;
        }
        int err = MPI_Test(&t->slots[i].req, &done, &status);
        if (err != MPI_SUCCESS) return mpi_fail(err, "receive");
        if (!done) return complete_receives(t);
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        kr_buf_t got = t->slots[i].buf;
        got.len = count > 0 ? (size_t)count : 0;
        kr_buf_init(&t->slots[i].buf);
        t->slot_next = (i + 1) % RECV_SLOTS;
        kr_status_t st = file_message(t, status.MPI_SOURCE, &got);
        if (!st) st = post_slot(t, i);
        if (st) return st;
    }
}

/* Sends the batch for peer r (if any), waiting for a free slot first while
 * receiving, so that two ranks sending to each other always progress. */
static kr_status_t flush_peer(mpi_transport_t *t, int r)
{
    peer_t *p = &t->peers[r];
    if (!p->out.len) return KR_OK;
    kr_status_t st = reap_sends(p);
    while (!st && p->sends_used == MAX_IN_FLIGHT) {
        st = receive_all(t);
        /* a failed peer may never receive: stop waiting for it */
        if (!st && t->aborted) st = kr__fail(t->abort_status, "%s", t->abort_msg);
        if (!st) st = reap_sends(p);
        /* sharing a CPU, leave it to the receiver we wait for */
        if (!st && p->sends_used == MAX_IN_FLIGHT && t->wait == WAIT_SLEEP)
            nanosleep(&(struct timespec){ 0, 20000 }, NULL);
        else if (!st && p->sends_used == MAX_IN_FLIGHT && t->wait == WAIT_YIELD)
            sched_yield();
    }
    if (st) return st;
    pending_send_t *s = &p->sends[p->sends_used];
    s->buf = p->out;
    s->req[0] = s->req[1] = MPI_REQUEST_NULL;
    p->out = p->spare;
    kr_buf_init(&p->spare);
    size_t len = s->buf.len;
    if (len > (size_t)INT32_MAX) return kr__fail(KR_ERR_INVALID_ARG, "MPI transport: batch too large");
    int err = MPI_SUCCESS;
    if (len <= SLOT_BYTES) {
        err = MPI_Isend(s->buf.data, (int)len, MPI_BYTE, r, TAG_DATA, t->comm, &s->req[0]);
    } else {
        /* the note goes first; the batch waits unmatched until it is read */
        if (kr_buf_reserve(&s->buf, LARGE_NOTE_BYTES)) {
            kr_buf_fini(&s->buf);
            return kr_last_status();
        }
        uint8_t *note = s->buf.data + len;
        for (int i = 0; i < 4; i++) note[i] = (uint8_t)(MARK_LARGE >> (8 * i));
        for (int i = 0; i < 8; i++) note[4 + i] = (uint8_t)((uint64_t)len >> (8 * i));
        err = MPI_Isend(note, LARGE_NOTE_BYTES, MPI_BYTE, r, TAG_DATA, t->comm, &s->req[1]);
        if (err == MPI_SUCCESS) err = MPI_Isend(s->buf.data, (int)len, MPI_BYTE, r, TAG_LARGE, t->comm, &s->req[0]);
        if (err != MPI_SUCCESS && s->req[1] != MPI_REQUEST_NULL) {
            /* (the note alone went: the peer waits for its batch, but this
             * rank fails and aborts the run) */
            MPI_Request_free(&s->req[1]);
            keep_until_finalize(s->buf.data);
            kr_buf_init(&s->buf);
        }
    }
    if (err != MPI_SUCCESS) {
        kr_buf_fini(&s->buf);
        return mpi_fail(err, "send");
    }
    p->sends_used++;
    p->batches_sent++;
    t->stats.batches_sent++;
    t->stats.bytes_sent += len;
    return KR_OK;
}

static kr_status_t flush_all(mpi_transport_t *t)
{
    for (int r = 0; r < t->size; r++) {
        kr_status_t st = flush_peer(t, r);
        if (st) return st;
    }
    return KR_OK;
}

static kr_status_t mpi_send(kr__transport_t *base, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    (void)from;
    mpi_transport_t *t = (mpi_transport_t *)base;
    if (to >= t->sim_count) return kr__fail(KR_ERR_INVALID_ARG, "MPI transport: no simulator %u", to);
    if (len > MAX_MESSAGE)
        return kr__fail(KR_ERR_INVALID_ARG, "MPI transport: a message of %zu bytes, more than the %zu one message may "
                        "carry (a sync-event's payload with the entities it carries)", len, MAX_MESSAGE);
    int r = t->rank_of[to];
    kr_buf_t *b = r == t->rank ? &t->loop : &t->peers[r].out;
    /* A batch that this message would take past flush_bytes leaves first
     * (flush_bytes, below). */
    if (r != t->rank && b->len && b->len + 4 + len > t->flush_bytes) {
        kr_status_t st = flush_peer(t, r);
        if (st) return st;
    }
    t->records_sent++;
    /* one reservation, then the u32 length (little-endian) and the bytes */
    if (b->cap - b->len < 4 + len && kr_buf_reserve(b, 4 + len)) return kr_last_status();
    uint8_t *p = b->data + b->len;
    /* (a peer's batch is named by the count of batches sent before it, + 1;
     * loop-back messages are not amended) */
    t->last_sent = r == t->rank ? (kr__held_t){ 0 } : (kr__held_t){ t->peers[r].batches_sent + 1, b->len, r };
    kr__batch_put_record_len(p, (uint32_t)len);
    memcpy(p + 4, bytes, len);
    b->len += 4 + len;
    if (r == t->rank) {
        t->loop_count++;
        return KR_OK;
    }
    return b->len >= t->flush_bytes ? flush_peer(t, r) : KR_OK; /* (a message alone as large) */
}

static bool mpi_held(kr__transport_t *base, kr__held_t *where)
{
    *where = ((mpi_transport_t *)base)->last_sent;
    return where->batch != 0;
}

/* The peer whose batch being filled still holds the message at `where`
 * (mpi_held), or NULL: that batch has the number it had when the message
 * went in (flush_peer counts it once it is handed to MPI), and the
 * message's length prefix lies within it. */
static inline peer_t *held_peer(mpi_transport_t *t, const kr__held_t *where)
{
    if (!where->batch || where->peer < 0 || where->peer >= t->size || where->peer == t->rank) return NULL;
    peer_t *p = &t->peers[where->peer];
    if (p->batches_sent + 1 != where->batch || where->at + 4 > p->out.len) return NULL;
    return p;
}

static bool mpi_amend(kr__transport_t *base, const kr__held_t *where, size_t offset, const void *bytes, size_t len)
{
    peer_t *p = held_peer((mpi_transport_t *)base, where);
    if (!p) return false;
    size_t rec_len = kr__batch_record_len(p->out.data + where->at);
    if (offset > rec_len || len > rec_len - offset) return false;
    memcpy(p->out.data + where->at + 4 + offset, bytes, len);
    return true;
}

static uint8_t *mpi_extend(kr__transport_t *base, const kr__held_t *where, size_t len);

/* mpi_extend when the batch must grow first: the room is made here, out
 * of the common path (which then saves no registers), and the extension
 * is made as usual. */
__attribute__((noinline)) static uint8_t *extend_grown(kr__transport_t *base, peer_t *p, const kr__held_t *where,
                                                       size_t len)
{
    if (kr_buf_reserve(&p->out, len)) return NULL;
    return mpi_extend(base, where, len);
}

/* Only the last record of the batch being filled can grow in place, and
 * only while the batch stays below the size at which mpi_send would have
 * let it leave. */
static uint8_t *mpi_extend(kr__transport_t *base, const kr__held_t *where, size_t len)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    peer_t *p = held_peer(t, where);
    if (!p) return NULL;
    size_t at = where->at, out_len = p->out.len;
    uint8_t *data = p->out.data;
    size_t rec_len = kr__batch_record_len(data + at);
    if (at + 4 + rec_len != out_len || out_len + len > t->flush_bytes) return NULL;
    if (p->out.cap - out_len < len) return extend_grown(base, p, where, len);
    p->out.len = out_len + len;
    kr__batch_put_record_len(data + at, (uint32_t)(rec_len + len));
    return data + out_len;
}

/* Delivers the records of one batch (net/batch.h). */
static kr_status_t deliver_batch(const kr_buf_t *b, size_t from, int source, kr__deliver_fn deliver, void *arg,
                                 size_t *count)
{
    return kr__batch_deliver(b->data + from, b->len - from, source, deliver, arg, count);
}

static kr_status_t mpi_poll(kr__transport_t *base, kr__deliver_fn deliver, void *arg, size_t *count)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    size_t n = 0;
    t->polls++;
    kr_status_t st = flush_all(t);
    if (!st) st = receive_all(t);
    if (!st && t->aborted) st = kr__fail(t->abort_status, "%s", t->abort_msg);
    /* This rank's own messages first (they were sent earlier than anything
     * a peer can answer), then the batches in arrival order. Deliveries
     * may send: loop-back messages added now wait for the next poll. */
    if (!st && t->loop_count) {
        kr_buf_t loop = t->loop;
        kr_buf_init(&t->loop);
        t->loop_count = 0;
        st = deliver_batch(&loop, 0, -1, deliver, arg, &n);
        kr_buf_fini(&loop);
    }
    size_t done = 0;
    for (; !st && done < t->inbox_complete; done++) st = deliver_batch(&t->inbox[done].buf, 0,
                                                                       t->inbox[done].source, deliver, arg, &n);
    for (size_t i = 0; i < done; i++) recycle(t, &t->inbox[i].buf);
    if (done && t->inbox_count > done)
        memmove(t->inbox, t->inbox + done, (t->inbox_count - done) * sizeof *t->inbox);
    t->inbox_count -= done;
    t->inbox_complete -= done;
    t->records_delivered += n;
    if (count) *count = n;
    return st;
}

static size_t mpi_in_flight(const kr__transport_t *base)
{
    const mpi_transport_t *t = (const mpi_transport_t *)base;
    size_t n = t->loop_count + t->inbox_count;
    for (int r = 0; r < t->size; r++) n += t->peers[r].out.len ? 1 : 0;
    return n;
}

/* Waits for this rank's sends; called once every record is known to have
 * been delivered, so each has a matching receive. */
static kr_status_t complete_sends(mpi_transport_t *t)
{
    for (int r = 0; r < t->size; r++) {
        peer_t *p = &t->peers[r];
        for (int i = 0; i < p->sends_used; i++) {
            int err = MPI_Waitall(2, p->sends[i].req, MPI_STATUSES_IGNORE);
            kr_buf_fini(&p->sends[i].buf);
            if (err != MPI_SUCCESS) return mpi_fail(err, "send");
        }
        p->sends_used = 0;
    }
    return KR_OK;
}

/* Decides the end of the run, and deadlocks, by quiescence rounds (the
 * four-counter method): a rank joins a round (a non-blocking sum of the
 * records it sent and delivered and whether it is unfinished) only while
 * idle, so a round completes once every rank has been idle. An idle rank
 * does nothing until a record reaches it; so when two rounds in a row
 * count the same records sent and delivered, and as many delivered as
 * sent, no rank did anything in between and nothing is in flight: the run
 * is over if no rank is unfinished, deadlocked if some is. Every rank
 * sees the same sums and decides alike, in the same round (and on a
 * deadlock, calls mpi_deadlock together). Rounds are at
 * least 200 us apart on each rank, so blocked ranks do not flood the
 * network with them.
 *
 * A rank that is not done joins a round only after a streak of idle steps
 * of ROUND_AFTER_IDLE_NS: a rank blocked for microseconds at a small
 * lookahead would otherwise start a round its peer joins only much
 * later, and until then every MPI call on both ranks progresses the
 * pending collective (PHOLD at lookahead 0.01 started about 4,000 rounds
 * a run, bench/README.md). A done rank joins at once,
 * so the end of a run is not delayed; a deadlock is found that much
 * later. */
#define ROUND_AFTER_IDLE_NS 1000000
static kr_status_t mpi_settle(kr__transport_t *base, bool idle, bool locally_done, kr__settle_t *verdict)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    *verdict = KR__SETTLE_RUNNING;
    if (t->finished) {
        *verdict = KR__SETTLE_FINISHED;
        return KR_OK;
    }
    kr_status_t st = flush_all(t);
    if (st) return st;
    uint64_t now = kr__monotonic_ns();
    bool streak = idle && t->polls == t->streak_polls + 1 && t->records_sent == t->streak_sent &&
                  t->records_delivered == t->streak_delivered;
    if (!streak) t->idle_since_ns = now;
    t->streak_polls = t->polls;
    t->streak_sent = t->records_sent;
    t->streak_delivered = t->records_delivered;
    if (t->round_active) {
        int done = 0;
        int err = MPI_Test(&t->round, &done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) return mpi_fail(err, "quiescence round");
        if (!done) return KR_OK;
        t->round_active = false;
        t->round_end_ns = now;
        const uint64_t *r = t->round_out;
        bool quiet = t->have_last && r[0] == r[1] && r[0] == t->last[0] && r[1] == t->last[1];
        memcpy(t->last, r, sizeof t->last);
        t->have_last = true;
        if (quiet && r[2] == 0) {
            if ((st = complete_sends(t))) return st;
            t->finished = true;
            *verdict = KR__SETTLE_FINISHED;
            return KR_OK;
        }
        if (quiet) *verdict = KR__SETTLE_DEADLOCK;
        return KR_OK;
    }
    if (!idle) return KR_OK;
    if (!locally_done && now - t->idle_since_ns < ROUND_AFTER_IDLE_NS) return KR_OK;
    if (now - t->round_end_ns >= 200000) {
        t->round_in[0] = t->records_sent;
        t->round_in[1] = t->records_delivered;
        t->round_in[2] = locally_done ? 0 : 1;
        int err = MPI_Iallreduce(t->round_in, t->round_out, 3, MPI_UINT64_T, MPI_SUM, t->comm, &t->round);
        if (err != MPI_SUCCESS) return mpi_fail(err, "quiescence round");
        t->round_active = true;
    }
    return KR_OK;
}

static kr_status_t mpi_deadlock(kr__transport_t *base, bool can_describe, bool *describe)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    /* every rank is here, in the same round: a blocking reduction is safe */
    int mine = can_describe ? t->rank : t->size, who = t->size;
    int err = MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MIN, t->comm);
    if (err != MPI_SUCCESS) return mpi_fail(err, "deadlock agreement");
    *describe = who == t->rank || (who == t->size && t->rank == 0);
    if (*describe) return KR_OK;
    while (!t->aborted) {
        kr_status_t st = receive_all(t);
        if (st) return st;
        if (!t->aborted) nanosleep(&(struct timespec){ 0, 100000 }, NULL);
    }
    return kr__fail(t->abort_status, "%s", t->abort_msg);
}

static void mpi_wait(kr__transport_t *base)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    /* Polls for up to about a millisecond. With a core to itself a rank
     * spins (a guarantee is usually microseconds away); sharing a core
     * with a busy rank it must leave it the core, so it yields it between
     * polls (sleeping instead, briefly at first and doubling, was up to
     * 2.8 times slower: bench/README.md, "Waiting when ranks outnumber
     * cores"; a fixed 100 us sleep cost more than the work it waited for). */
    uint64_t start = kr__monotonic_ns();
    long ns = 2000, slept = 0;
    for (;;) {
        /* (what arrives is taken now; a failure is met again by the
         * caller's next poll) */
        if (receive_all(t) || t->inbox_complete || t->aborted) return;
        if (t->round_active) {
            /* (a completed request becomes MPI_REQUEST_NULL, which settle's
             * test reports as complete, with the results in round_out) */
            int done = 0;
            MPI_Test(&t->round, &done, MPI_STATUS_IGNORE);
            if (done) return;
        }
        if (t->wait != WAIT_SLEEP) {
            if (kr__monotonic_ns() - start >= 1000000) return;
            if (t->wait == WAIT_YIELD) sched_yield();
            continue;
        }
        if (slept >= 1000000) return;
        nanosleep(&(struct timespec){ 0, ns }, NULL);
        slept += ns;
        ns = ns < 64000 ? ns * 2 : ns;
    }
}

/* Tells every other rank, with the status, so that they all end alike
 * (docs/cli.md, "Exit status"). */
static void mpi_abort(kr__transport_t *base, kr_status_t status, const char *message)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    if (t->aborted) return; /* a peer's failure: it told everyone */
    t->aborted = true;
    t->abort_origin = t->rank;
    t->abort_status = status ? status : KR_ERR_STATE;
    snprintf(t->abort_msg, sizeof t->abort_msg, "rank %d: %s", t->rank, message);
    /* (sent and kept until MPI_Finalize: the buffer of a freed request
     * must outlive the send) */
    size_t text = strlen(t->abort_msg) + 1;
    uint8_t *out = t->abort_wire;
    t->abort_wire = NULL; /* MPI_Finalize frees it now */
    for (int i = 0; i < 4; i++) {
        out[i] = (uint8_t)(MARK_ABORT >> (8 * i));
        out[4 + i] = (uint8_t)((uint32_t)t->abort_status >> (8 * i));
    }
    memcpy(out + 8, t->abort_msg, text);
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank) continue;
        MPI_Request req;
        if (MPI_Isend(out, (int)(8 + text), MPI_BYTE, r, TAG_DATA, t->comm, &req) == MPI_SUCCESS)
            MPI_Request_free(&req);
    }
    keep_until_finalize(out);
}

static int free_attribute(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)extra;
    free(value);
    MPI_Comm_free_keyval(&keyval);
    return MPI_SUCCESS;
}

/* Hands `p` to MPI_COMM_SELF, whose attributes MPI_Finalize deletes first. */
static void keep_until_finalize(void *p)
{
    int keyval;
    if (!p || MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_attribute, &keyval, NULL) != MPI_SUCCESS) return;
    MPI_Comm_set_attr(MPI_COMM_SELF, keyval, p);
}

/* Cancels a receive still posted. One that cannot be cancelled any more
 * (after a failure) may still write into its buffer, which then waits for
 * MPI_Finalize: returns true then, the buffer given up. */
static bool cancel_receive(MPI_Request *req, kr_buf_t *buf)
{
    if (*req == MPI_REQUEST_NULL) return false;
    int done = 0;
    MPI_Cancel(req);
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return false;
    MPI_Request_free(req);
    keep_until_finalize(buf->data);
    kr_buf_init(buf);
    return true;
}

static void mpi_destroy(kr__transport_t *base)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    for (int r = 0; r < t->size; r++) {
        peer_t *p = &t->peers[r];
        for (int i = 0; i < p->sends_used; i++) {
            for (int k = 0; k < 2; k++) {
                if (p->sends[i].req[k] == MPI_REQUEST_NULL) continue;
                MPI_Cancel(&p->sends[i].req[k]);
                MPI_Request_free(&p->sends[i].req[k]);
            }
            kr_buf_fini(&p->sends[i].buf);
        }
        kr_buf_fini(&p->out);
        kr_buf_fini(&p->spare);
    }
    for (size_t i = 0; i < t->inbox_count; i++) {
        inbox_item_t *it = &t->inbox[i];
        if (!cancel_receive(&it->req, &it->buf)) kr_buf_fini(&it->buf);
    }
    for (size_t i = 0; i < RECV_SLOTS; i++)
        if (!cancel_receive(&t->slots[i].req, &t->slots[i].buf)) kr_buf_fini(&t->slots[i].buf);
    for (size_t i = 0; i < t->spare_slot_count; i++) kr_buf_fini(&t->spare_slot_bufs[i]);
    kr_buf_fini(&t->inbox_spare);
    /* (an unfinished quiescence round after a failure is left to
     * MPI_Finalize: a collective's request may not be freed) */
    if (t->window_n) MPI_Type_free(&t->window_type);
    if (t->window_op_made) MPI_Op_free(&t->window_op);
    /* Buffers of a collective that may still complete (a peer failed
     * while it was pending; its request may not be freed) must outlive
     * us: MPI_Finalize frees them. */
    if (t->window_pending) keep_until_finalize(t->window_buf);
    else free(t->window_buf);
    if (t->round_active && !t->finished) keep_until_finalize(t->round_in);
    else free(t->round_in);
    free(t->inbox);
    free(t->peers);
    free(t->rank_of);
    free(t->abort_wire); /* NULL once sent */
    kr_buf_fini(&t->loop);
    /* A clean end frees the communicator; after a failure it may still
     * carry a collective a peer never joined, so it is left to MPI_Finalize. */
    if (t->finished || !t->aborted) MPI_Comm_free(&t->comm);
    free(t);
}

/* A window round's one reduction. Each rank contributes one element of a
 * contiguous type (so MPI never splits it): [n, n minima, then per rank
 * the batches sent to it so far]. The operation takes the minimum of the
 * first part and sums the second; every rank learns its next-time minima
 * and how many batches were ever sent to it, and waits for those. */
static void window_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    size_t n = (size_t)bytes / sizeof(uint64_t);
    for (int k = 0; k < *len; k++) {
        const uint64_t *a = (const uint64_t *)in + (size_t)k * n;
        uint64_t *b = (uint64_t *)inout + (size_t)k * n;
        size_t mins = (size_t)a[0];
        for (size_t i = 1; i <= mins && i < n; i++) if (a[i] < b[i]) b[i] = a[i];
        for (size_t i = mins + 1; i < n; i++) b[i] += a[i];
    }
}

/* Waits while receiving: a rank that failed never joins, and the others
 * must notice its abort instead of hanging. */
static kr_status_t mpi_reduce(kr__transport_t *base, uint64_t *mins, size_t n_mins)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    kr_status_t st = flush_all(t);
    if (st) return st;
    size_t n = 1 + n_mins + (size_t)t->size;
    if (n != t->window_n) {
        if (t->window_n) MPI_Type_free(&t->window_type);
        free(t->window_buf);
        t->window_n = 0;
        if (!(t->window_buf = malloc(2 * n * sizeof *t->window_buf)))
            return kr__fail(KR_ERR_NOMEM, "MPI transport: out of memory");
        if (MPI_Type_contiguous((int)n, MPI_UINT64_T, &t->window_type) != MPI_SUCCESS ||
            MPI_Type_commit(&t->window_type) != MPI_SUCCESS)
            return kr__fail(KR_ERR_IO, "MPI transport: cannot make the window's datatype");
        if (!t->window_op_made && MPI_Op_create(window_op, 1, &t->window_op) != MPI_SUCCESS)
            return kr__fail(KR_ERR_IO, "MPI transport: cannot make the window's reduction");
        t->window_op_made = true;
        t->window_n = n;
    }
    uint64_t *in = t->window_buf, *out = in + n;
    in[0] = n_mins;
    memcpy(in + 1, mins, n_mins * sizeof *mins);
    for (int r = 0; r < t->size; r++) in[1 + n_mins + (size_t)r] = t->peers[r].batches_sent;
    MPI_Request req;
    t->stats.reductions++;
    int err = MPI_Iallreduce(in, out, 1, t->window_type, t->window_op, t->comm, &req);
    t->window_pending = err == MPI_SUCCESS;
    if (err != MPI_SUCCESS) return mpi_fail(err, "reduction");
    /* Waits as mpi_wait does: polling, yielding the core between polls, or
     * (KAIROS_WAIT=sleep) sleeping, short first (a round's reduction is
     * usually microseconds away), doubling to 64 us. */
    long ns = 1000;
    for (bool reduced = false;; ns = ns < 64000 ? ns * 2 : ns) {
        if (!reduced) {
            int done = 0;
            err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (err != MPI_SUCCESS) return mpi_fail(err, "reduction");
            reduced = done;
            if (done) t->window_pending = false;
        }
        if (reduced) {
            uint64_t received = 0;
            for (int r = 0; r < t->size; r++) received += t->peers[r].batches_received;
            if (received >= out[1 + n_mins + (size_t)t->rank]) break;
        }
        if ((st = receive_all(t))) return st;
        if (t->aborted) return kr__fail(t->abort_status, "%s", t->abort_msg);
        for (int r = 0; r < t->size; r++) reap_sends(&t->peers[r]);
        if (t->wait == WAIT_SLEEP) nanosleep(&(struct timespec){ 0, ns }, NULL);
        else if (t->wait == WAIT_YIELD) sched_yield();
    }
    memcpy(mins, out + 1, n_mins * sizeof *mins);
    return KR_OK;
}

/* Tests the sends under way: a large batch (above the shared-memory
 * transport's eager size, without single-copy transfers) moves a fragment
 * at a time, and only while its sender is inside MPI. */
static void mpi_progress(kr__transport_t *base)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    for (int r = 0; r < t->size; r++)
        /* a failed send stays, to be reported when next tested: by a
         * flush to that peer, or by the wait for every send at the end */
        if (t->peers[r].sends_used) reap_sends(&t->peers[r]);
}

static void mpi_resume(kr__transport_t *base)
{
    mpi_transport_t *t = (mpi_transport_t *)base;
    t->finished = false;
    t->have_last = false;
}

static const kr__transport_vtbl_t mpi_vtbl = { .send = mpi_send, .poll = mpi_poll, .in_flight = mpi_in_flight,
                                              .destroy = mpi_destroy, .settle = mpi_settle,
                                              .deadlock = mpi_deadlock, .wait = mpi_wait, .abort = mpi_abort,
                                              .held = mpi_held, .amend = mpi_amend, .extend = mpi_extend,
                                              .reduce = mpi_reduce, .progress = mpi_progress, .resume = mpi_resume,
                                              .direct_local = true };

kr__transport_t *kr__transport_mpi_create(const kr__mpi_transport_desc_t *d)
{
    mpi_transport_t *t = calloc(1, sizeof *t);
    if (!t) { kr__fail(KR_ERR_NOMEM, "MPI transport: out of memory"); return NULL; }
    t->base.vtbl = &mpi_vtbl;
    /* A communicator of its own: a collective left behind by a failure
     * (a rank that aborted never joins it) cannot clash with the caller's
     * collectives on theirs. */
    if (MPI_Comm_dup(d->comm, &t->comm) != MPI_SUCCESS) {
        free(t);
        kr__fail(KR_ERR_IO, "MPI transport: cannot duplicate the communicator");
        return NULL;
    }
    MPI_Comm_rank(d->comm, &t->rank);
    MPI_Comm_size(d->comm, &t->size);
    t->sim_count = d->sim_count;
    t->flush_bytes = d->flush_bytes ? d->flush_bytes : EAGER_BATCH;
    t->rank_of = malloc((d->sim_count ? d->sim_count : 1) * sizeof *t->rank_of);
    t->peers = calloc((size_t)t->size, sizeof *t->peers);
    t->round_in = calloc(6, sizeof *t->round_in);
    t->round_out = t->round_in ? t->round_in + 3 : NULL;
    t->round = MPI_REQUEST_NULL;
    for (size_t i = 0; i < RECV_SLOTS; i++) t->slots[i].req = MPI_REQUEST_NULL;
    t->abort_wire = malloc(8 + sizeof t->abort_msg);
    if (!t->rank_of || !t->peers || !t->round_in || !t->abort_wire) {
        free(t->rank_of);
        free(t->peers);
        free(t->round_in);
        free(t->abort_wire);
        free(t);
        kr__fail(KR_ERR_NOMEM, "MPI transport: out of memory");
        return NULL;
    }
    for (uint32_t i = 0; i < d->sim_count; i++) {
        if (d->rank_of_sim[i] < 0 || d->rank_of_sim[i] >= t->size) {
            kr__fail(KR_ERR_INVALID_ARG, "MPI transport: simulator %u on rank %d of %d", i, d->rank_of_sim[i], t->size);
            free(t->rank_of);
            free(t->peers);
            free(t->round_in);
            free(t);
            return NULL;
        }
        t->rank_of[i] = d->rank_of_sim[i];
    }
    kr_buf_init(&t->loop);
    /* Waiting ranks spin only when the node has a logical CPU for each
     * rank of the whole job (the launcher says how many share the node;
     * replications run several transports side by side), and yield
     * otherwise; KAIROS_WAIT=spin, yield or sleep overrides. */
    int local = 0;
    const char *vars[] = { "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars && local <= 0; i++)
        if (getenv(vars[i])) local = atoi(getenv(vars[i]));
    MPI_Comm node;
    if (local <= 0 && MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *wait = getenv("KAIROS_WAIT");
    t->wait = wait && !strcmp(wait, "spin") ? WAIT_SPIN : wait && !strcmp(wait, "yield") ? WAIT_YIELD
            : wait && !strcmp(wait, "sleep") ? WAIT_SLEEP : local <= cpus ? WAIT_SPIN : WAIT_YIELD;
#ifdef __linux__
    /* Short sleeps in mpi_wait and mpi_reduce should last about what they
     * ask for, not the default 50 us of timer slack (this thread only). */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
    for (size_t i = 0; i < RECV_SLOTS; i++) {
        if (post_slot(t, i)) {
            kr_status_t st = kr_last_status();
            char msg[sizeof t->abort_msg];
            snprintf(msg, sizeof msg, "%s", kr_last_error());
            mpi_destroy(&t->base);
            kr__fail(st, "%s", msg);
            return NULL;
        }
    }
    return &t->base;
}

void kr__transport_mpi_stats(const kr__transport_t *base, kr__mpi_transport_stats_t *out)
{
    *out = ((const mpi_transport_t *)base)->stats;
}

int kr__transport_mpi_failed_rank(const kr__transport_t *base)
{
    const mpi_transport_t *t = (const mpi_transport_t *)base;
    return t->aborted ? t->abort_origin : -1;
}
