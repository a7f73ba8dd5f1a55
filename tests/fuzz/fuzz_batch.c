/* Fuzz target: a batch received from another rank, through the code a real
 * one takes: the batch splitter of the MPI transport (kr__batch_deliver,
 * net/batch.c, which transport_mpi.c calls) hands each record to
 * kr__sync_deliver (schedulers/sync.c, as the coordinator's poll does),
 * which checks it and applies it to the model or refuses it; then the model
 * runs on (bounded), so that delivered sync-events execute and the
 * entities they carry are unpacked.
 *
 * The model is rank 0's half of a two-rank run, built from a model file
 * with the built-in kinds: ERS's factory with the assembly line and the
 * robots on rank 1 and the bath on rank 0 (sync-events carrying entities),
 * and two PHOLD simulators, one per rank (plain sync-events both ways).
 * Messages rank 0 sends go nowhere; rank 1 never answers except through
 * the fuzzed batch, so a run with nothing from it ends in a deadlock
 * report, which is one of the clean outcomes. Every record must be
 * delivered or refused with a message; nothing may crash, leak or hang.
 *
 * KAIROS_FUZZ_SEEDS=DIR: writes seed batches to DIR and exits (the whole
 * model run on one rank, recording what rank 1's simulators send to rank
 * 0's: tests/fuzz/make-corpus.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "models/builtin.h"
#include "net/batch.h"
#include "net/transport.h"
#include "runtime/model_file.h"
#include "schedulers/model_private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const char model_text[] =
    "{\"precision\": 1000, \"seed\": 1, \"end_time\": 30, \"log_level\": \"off\",\n"
    " \"simulators\": [\n"
    "  {\"name\": \"Line\", \"kind\": \"assembly\", \"params\": {\"to\": \"Robots\"}},\n"
    "  {\"name\": \"Robots\", \"kind\": \"robots\", \"time_step\": 1, \"params\": {\"to\": \"Bath\", \"robots\": 2}},\n"
    "  {\"name\": \"Bath\", \"kind\": \"bath\", \"time_step\": 2},\n"
    "  {\"name\": \"p\", \"kind\": \"phold\", \"count\": 2,\n"
    "   \"params\": {\"lps\": 4, \"start_events\": 2, \"remote\": 0.5, \"lookahead\": 0.5, \"mean\": 1}}],\n"
    " \"dependencies\": [{\"from\": \"Line\", \"to\": \"Robots\", \"promise\": 0},\n"
    "                  {\"from\": \"Robots\", \"to\": \"Bath\", \"promise\": 2},\n"
    "                  {\"from\": \"p[*]\", \"to\": \"p[*]\", \"promise\": 0.5}]}\n";

/* Line, Robots, p[1] on rank 1; Bath, p[0] on rank 0. */
static const int rank_of[] = { 1, 1, 0, 0, 1 };
enum { SIMS = 5 };

static kr__model_file_t *file;

/* ---- a transport that records (seeds) or drops (fuzzing) what is sent ---- */

typedef struct sink {
    kr__transport_t base;
    kr__transport_t *inner; /* seeds: the local transport, which delivers */
    kr_buf_t *record;       /* seeds: rank 1 -> rank 0 records, batch framed */
    const uint8_t *batch;   /* fuzzing: arrives from rank 1 at the first poll */
    size_t batch_len;
    size_t delivered;
    kr_status_t batch_status;
} sink_t;

static kr_status_t sink_send(kr__transport_t *t, uint32_t from, uint32_t to, const void *bytes, size_t len)
{
    sink_t *s = (sink_t *)t;
    if (s->record && rank_of[from] == 1 && rank_of[to] == 0) {
        kr_buf_put_u32(s->record, (uint32_t)len);
        kr_buf_append(s->record, bytes, len);
    }
    return s->inner ? s->inner->vtbl->send(s->inner, from, to, bytes, len) : KR_OK;
}

static kr_status_t sink_poll(kr__transport_t *t, kr__deliver_fn deliver, void *arg, size_t *count)
{
    sink_t *s = (sink_t *)t;
    if (s->inner) return s->inner->vtbl->poll(s->inner, deliver, arg, count);
    size_t n = 0;
    kr_status_t st = KR_OK;
    if (s->batch) {
        /* as mpi_poll delivers a batch received from rank 1 */
        st = s->batch_status = kr__batch_deliver(s->batch, s->batch_len, 1, deliver, arg, &n);
        s->batch = NULL;
        s->delivered = n;
    }
    if (count) *count = n;
    return st;
}

static size_t sink_in_flight(const kr__transport_t *t)
{
    const sink_t *s = (const sink_t *)t;
    return s->inner ? s->inner->vtbl->in_flight(s->inner) : 0;
}

static void sink_destroy(kr__transport_t *t)
{
    sink_t *s = (sink_t *)t;
    if (s->inner) s->inner->vtbl->destroy(s->inner);
    free(s);
}

static const kr__transport_vtbl_t sink_vtbl = { .send = sink_send, .poll = sink_poll, .in_flight = sink_in_flight,
                                                .destroy = sink_destroy, .direct_local = false };

static sink_t *sink_create(kr__transport_t *inner, kr_buf_t *record)
{
    sink_t *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->base.vtbl = &sink_vtbl;
    s->inner = inner;
    s->record = record;
    return s;
}

/* ---- set-up ---- */

static void load_model(void)
{
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/kairos_fuzz_XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/model.json", dir);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(model_text, fp) < 0 || fclose(fp)) abort();
    file = kr__model_file_load(&(kr__model_file_desc_t){ .path = path,
                                                         .register_builtin = kr__models_register_builtin });
    unlink(path);
    rmdir(dir);
    if (!file || file->sim_count != SIMS) {
        fprintf(stderr, "fuzz_batch: %s\n", kr_last_error());
        abort();
    }
}


static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The recorded traffic as an MPI rank sends it when SYNC messages on an
 * edge follow each other in a batch: each added to the one before as a
 * further sync-event (u64 time, then its fields from priority on;
 * schedulers/sync.c, append_sync), a guarantee on that edge in between
 * written into it instead (amend), and the edge's later messages
 * renumbered, since the run is one message in the edge's order. */
static void merge_runs(const kr_buf_t *rec, kr_buf_t *out)
{
    enum { KIND_SYNC = 1, KIND_GUARANTEE = 5, KIND_REQUEST = 6, HEADER = 25, DATA_HEADER = 33 };
    uint64_t merged[SIMS * SIMS] = { 0 };
    size_t last_at = SIZE_MAX; /* the record in `out` that may take more */
    for (size_t at = 0; at + 4 + HEADER <= rec->len;) {
        uint32_t len = (uint32_t)get_le(rec->data + at, 4);
        const uint8_t *r = rec->data + at + 4;
        at += 4 + (size_t)len;
        if (at > rec->len || len < HEADER) break;
        uint8_t kind = r[0];
        uint32_t from = (uint32_t)get_le(r + 1, 4), to = (uint32_t)get_le(r + 5, 4);
        if (from >= SIMS || to >= SIMS) break;
        uint64_t *n = &merged[from * SIMS + to];
        bool same_edge = last_at != SIZE_MAX && out->data[last_at + 4] == KIND_SYNC &&
                         get_le(out->data + last_at + 5, 4) == from && get_le(out->data + last_at + 9, 4) == to;
        if (kind == KIND_GUARANTEE && same_edge) {
            if (get_le(r + 17, 8) > get_le(out->data + last_at + 4 + HEADER, 8))
                put_le(out->data + last_at + 4 + HEADER, get_le(r + 17, 8), 8);
            continue;
        }
        if (kind == KIND_SYNC && len > DATA_HEADER && same_edge) {
            kr_buf_append(out, r + 17, 8);                                  /* its time */
            kr_buf_append(out, r + DATA_HEADER, len - DATA_HEADER);         /* its fields */
            put_le(out->data + last_at, out->len - last_at - 4, 4);
            (*n)++;
            continue;
        }
        size_t here = out->len;
        kr_buf_put_u32(out, len);
        kr_buf_append(out, r, len);
        if (kind != KIND_REQUEST) put_le(out->data + here + 4 + 9, get_le(r + 9, 8) - *n, 8);
        last_at = kind == KIND_GUARANTEE || kind == KIND_REQUEST ? SIZE_MAX : here;
    }
}

/* The whole model on one rank, recording rank 1 -> rank 0 traffic; writes
 * prefixes of it (each batch is a run's first records, so they apply), a
 * few single records, and prefixes of the same traffic with the runs of
 * sync-events merged as over MPI. */
static void make_seeds(const char *dir)
{
    kr_buf_t rec;
    kr_buf_init(&rec);
    kr_model_t *m = kr__model_file_build(file, NULL);
    if (!m || kr__model_use_transport(m, &sink_create(kr__transport_local_create(), &rec)->base) || kr_model_run(m)) {
        fprintf(stderr, "fuzz_batch: seeds: %s\n", kr_last_error());
        exit(1);
    }
    kr_model_destroy(m);
    /* record boundaries */
    size_t bounds[4096], n = 0;
    for (size_t at = 0; at + 4 <= rec.len && n < 4096;) {
        uint32_t len;
        memcpy(&len, rec.data + at, 4);
        at += 4 + len;
        bounds[n++] = at;
    }
    int files = 0;
    for (size_t k = 1; k <= n; k = k < 4 ? k + 1 : k * 2) {
        if (bounds[k - 1] > 4000) break;
        char p[512];
        snprintf(p, sizeof p, "%s/batch-first-%zu", dir, k);
        FILE *fp = fopen(p, "wb");
        if (!fp || fwrite(rec.data, 1, bounds[k - 1], fp) != bounds[k - 1] || fclose(fp)) exit(1);
        files++;
    }
    /* single records from later in the run (they arrive "early") */
    for (size_t i = 1; i < n; i += n / 8 + 1) {
        char p[512];
        snprintf(p, sizeof p, "%s/batch-record-%zu", dir, i);
        FILE *fp = fopen(p, "wb");
        size_t len = bounds[i] - bounds[i - 1];
        if (!fp || fwrite(rec.data + bounds[i - 1], 1, len, fp) != len || fclose(fp)) exit(1);
        files++;
    }
    kr_buf_t runs;
    kr_buf_init(&runs);
    merge_runs(&rec, &runs);
    for (size_t cut = 256; cut <= 4096; cut *= 4) {
        /* whole records up to about `cut` bytes */
        size_t end = 0;
        for (size_t at = 0; at + 4 <= runs.len;) {
            size_t next = at + 4 + (size_t)get_le(runs.data + at, 4);
            if (next > cut || next > runs.len) break;
            end = at = next;
        }
        char p[512];
        snprintf(p, sizeof p, "%s/batch-runs-%zu", dir, cut);
        FILE *fp = fopen(p, "wb");
        if (!end || !fp || fwrite(runs.data, 1, end, fp) != end || fclose(fp)) exit(1);
        files++;
    }
    kr_buf_fini(&runs);
    kr_buf_fini(&rec);
    printf("fuzz_batch: %d seeds from %zu records\n", files, n);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    load_model();
    const char *seeds = getenv("KAIROS_FUZZ_SEEDS");
    if (seeds) make_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kr_model_t *m = kr__model_file_build_on(file, NULL, 0, rank_of);
    sink_t *sink = sink_create(NULL, NULL);
    sink->batch = data;
    sink->batch_len = size;
    if (!m || kr__model_use_transport(m, &sink->base)) {
        fprintf(stderr, "fuzz_batch: %s\n", kr_last_error());
        abort();
    }
    /* The run: the batch arrives at the first poll; the run ends at the end
     * time, with a refused record, or in a deadlock (rank 1 says nothing
     * more). Every failure has its message. */
    kr_status_t st = kr_model_run(m);
    if (st && !kr_last_error()[0]) abort();
    if (getenv("KAIROS_FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_batch: %zu records, delivery %d, run %d: %s\n", sink->delivered,
                (int)sink->batch_status, (int)st, st ? kr_last_error() : "finished");
    kr_model_destroy(m);
    return 0;
}
