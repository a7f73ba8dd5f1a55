/* Fuzz target: the gateway kind (models/gateway/gateway.c) behind the
 * emulation formalism's JSON-lines input (schedulers/formalisms/
 * emulation.c): the bytes are the gateway's input stream, through a pipe
 * (closed after it) with an injected clock that moves only when waited
 * on: to the deadline, or 1 ms while input is readable (as poll() would
 * return early). Each line {"event", "to", "data"} reaches the real
 * gateway's on_line (installed by kr__gateway_kind.setup), which decodes
 * "data" with the event type's fields (models/gateway/payload_json.c) and
 * sends the sync-event; the plant echoes some of them back, so the
 * gateway's output path (on_arrival, kr__payload_to_json,
 * kr_emulation_send) runs too.
 *
 * Checks: nothing crashes, leaks or hangs; a bad line is skipped, never
 * fails the run (abort() if the live run fails); the run's log, replayed
 * in a fresh model, gives the same checksum (abort() if not). With
 * KAIROS_FUZZ_KEEP_LOG set, the log of the last input stays in
 * gateway.log in a kairos_fuzz_XXXXXX folder of $TMPDIR (to see what the gateway made of it).
 *
 * Simulators: 0 "gateway" (emulation), 1 "plant", 2 "island" (no
 * dependency from the gateway). Edges gateway -> plant (promise 0.5),
 * plant -> gateway (0.25). Event types, all but status handled by the
 * plant, which declares that it receives them (kr_sim_receive):
 *   reading  every number type and bool, and arrays of some (fields);
 *            echoed to the gateway as "status" (whose reals may be
 *            infinite or NaN: they go out as null); an input line that
 *            sends status to the plant is refused (abort() if it runs);
 *   bulk     a payload above the gateway's 512-byte stack buffer (fields);
 *   blob     16 bytes without fields (refused by the gateway);
 *   ping     size 0, echoed back as is;
 *   tick     local only (on_event; refused as a sync-event). */
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "models/gateway/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S (KR_PRECISION_DEFAULT)

typedef struct fake_clock {
    uint64_t now; /* ns */
} fake_clock_t;

/* The clock moves only in waits (unlike fuzz_emulation's, which moves on
 * every read): with the gateway in a cycle, a clock that moves on reads
 * keeps the coordinator's guarantee fixpoint from ever settling until the
 * clock nears the end (see the report of this target's first runs), and
 * all input would be read there. A scheduler that spins without waiting
 * now hangs, which the fuzzer reports. */
static uint64_t fake_now(void *arg)
{
    fake_clock_t *f = arg;
    return f->now;
}

/* Like the real clock's poll(): returns at once while the input is
 * readable, so that lines are read (and stamped) as they come rather than
 * all at the deadline. */
static void fake_wait(void *arg, uint64_t deadline, int fd)
{
    fake_clock_t *f = arg;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (fd >= 0 && poll(&p, 1, 0) > 0) {
        f->now += 1000000;
        return;
    }
    if (deadline > f->now) f->now = deadline;
}

typedef struct reading {
    bool on;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    bool flags[3];
    int16_t a16[2];
    uint64_t au64[2];
    float af32[4];
    double af64[2];
} reading_t;

static const kr_field_t reading_fields[] = {
    KR_FIELD(reading_t, on, KR_FIELD_BOOL),
    KR_FIELD(reading_t, i8, KR_FIELD_I8),
    KR_FIELD(reading_t, u8, KR_FIELD_U8),
    KR_FIELD(reading_t, i16, KR_FIELD_I16),
    KR_FIELD(reading_t, u16, KR_FIELD_U16),
    KR_FIELD(reading_t, i32, KR_FIELD_I32),
    KR_FIELD(reading_t, u32, KR_FIELD_U32),
    KR_FIELD(reading_t, i64, KR_FIELD_I64),
    KR_FIELD(reading_t, u64, KR_FIELD_U64),
    KR_FIELD(reading_t, f32, KR_FIELD_F32),
    KR_FIELD(reading_t, f64, KR_FIELD_F64),
    KR_FIELD_ARRAY(reading_t, flags, KR_FIELD_BOOL, 3),
    KR_FIELD_ARRAY(reading_t, a16, KR_FIELD_I16, 2),
    KR_FIELD_ARRAY(reading_t, au64, KR_FIELD_U64, 2),
    KR_FIELD_ARRAY(reading_t, af32, KR_FIELD_F32, 4),
    KR_FIELD_ARRAY(reading_t, af64, KR_FIELD_F64, 2),
    { 0 },
};

typedef struct status {
    uint32_t seen;
    double ratio;  /* f64 / i32: infinite or NaN when i32 is 0 */
    float scaled;  /* f32 * 1e30: infinite for large f32 */
    uint64_t u64;
    int8_t back[2];
} status_t;

static const kr_field_t status_fields[] = {
    KR_FIELD(status_t, seen, KR_FIELD_U32),
    KR_FIELD(status_t, ratio, KR_FIELD_F64),
    KR_FIELD(status_t, scaled, KR_FIELD_F32),
    KR_FIELD(status_t, u64, KR_FIELD_U64),
    KR_FIELD_ARRAY(status_t, back, KR_FIELD_I8, 2),
    { 0 },
};

typedef struct bulk {
    double v[70];
    int32_t n;
} bulk_t;

static const kr_field_t bulk_fields[] = {
    KR_FIELD_ARRAY(bulk_t, v, KR_FIELD_F64, 70),
    KR_FIELD(bulk_t, n, KR_FIELD_I32),
    { 0 },
};

static kr_event_type_t reading_type, status_type, bulk_type, blob_type, ping_type, tick_type;
static uint32_t seen;

static void echo(kr_sim_t *sim, kr_event_type_t type, const void *data)
{
    if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = 0, .delay = S / 4, .type = type, .data = data }, NULL))
        abort();
}

static void plant_reading(kr_sim_t *sim, void *data)
{
    const reading_t *r = data;
    status_t s = { .seen = ++seen, .ratio = r->f64 / r->i32, .scaled = r->f32 * 1e30f, .u64 = r->u64 + r->au64[1],
                   .back = { r->i8, (int8_t)r->a16[0] } };
    echo(sim, status_type, &s);
    for (int i = 0; i < r->u8 % 4 + r->on; i++) kr_schedule(sim, 0, (kr_time_t)(i + 1) * S / 9, tick_type, NULL, NULL);
}

static void plant_bulk(kr_sim_t *sim, void *data)
{
    const bulk_t *b = data;
    if (b->n % 2) echo(sim, bulk_type, b);
}

static void plant_blob(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
    abort(); /* the gateway never sends a payload it cannot describe */
}

static void plant_ping(kr_sim_t *sim, void *data)
{
    (void)data;
    echo(sim, ping_type, NULL);
}

static void tick(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

/* The plant sends status to the gateway, whose on_arrival runs instead of
 * this. An input line may address status to the plant, which does not
 * receive it: the gateway must skip that line, so this never runs. */
static void status_target(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
    abort();
}

/* Runs the model; returns the status, the checksum in *sum and the input
 * lines that became events in *lines_in. */
static kr_status_t emulate(int input_fd, const char *log_path, const char *replay_path, uint64_t *sum,
                           uint64_t *lines_in)
{
    fake_clock_t f = { .now = 1000000000 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    seen = 0;
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 6 * S, .seed = 9, .log_level = KR_LOG_OFF });
    if (!m) abort();
    reading_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "reading", .size = sizeof(reading_t),
                                                                    .on_target_side = plant_reading,
                                                                    .fields = reading_fields });
    status_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "status", .size = sizeof(status_t),
                                                                   .on_target_side = status_target,
                                                                   .fields = status_fields });
    bulk_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "bulk", .size = sizeof(bulk_t),
                                                                 .on_target_side = plant_bulk, .fields = bulk_fields });
    blob_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "blob", .size = 16,
                                                                 .on_target_side = plant_blob });
    ping_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "ping", .on_target_side = plant_ping });
    tick_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
    if (!reading_type || !status_type || !bulk_type || !blob_type || !ping_type || !tick_type) abort();
    kr_emulation_desc_t ed = { .speed = 1, .clock = &clock, .input_fd = input_fd, .log_path = log_path,
                               .replay_path = replay_path };
    kr_sim_t *gw = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "gateway", .formalism = KR_EMULATION,
                                                          .emulation = &ed });
    if (!gw) abort();
    if (kr__gateway_kind.setup(gw, NULL)) abort();
    kr_sim_t *plant = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "plant" });
    if (!plant || kr_sim_receive(plant, reading_type) || kr_sim_receive(plant, bulk_type) ||
        kr_sim_receive(plant, blob_type) || kr_sim_receive(plant, ping_type) ||
        !kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "island" }) || kr_model_add_dependency(m, 0, 1, S / 2) ||
        kr_model_add_dependency(m, 1, 0, S / 4))
        abort();
    kr_status_t st = kr_model_run(m);
    if (st && !kr_last_error()[0]) abort();
    *sum = kr_model_checksum(m);
    *lines_in = kr_emulation_counts(gw).lines_in;
    kr_model_destroy(m);
    return st;
}

static char dir[64], log_path[128];

static void cleanup(void)
{
    unlink(log_path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/kairos_fuzz_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(log_path, sizeof log_path, "%s/gateway.log", dir);
        if (!getenv("KAIROS_FUZZ_KEEP_LOG")) atexit(cleanup);
    }
    if (size > 60000) return -1; /* a pipe holds 64 KiB: no writer thread needed */
    int fds[2];
    if (pipe(fds)) abort();
    if (write(fds[1], data, size) != (ssize_t)size) abort();
    close(fds[1]);
    uint64_t sum = 0, again = 0, lines = 0, lines_again = 0;
    kr_status_t st = emulate(fds[0], log_path, NULL, &sum, &lines);
    close(fds[0]);
    if (st) {
        /* the external system is never trusted: a bad line is skipped */
        fprintf(stderr, "fuzz_gateway: the input failed the run: %s\n", kr_last_error());
        abort();
    }
    st = emulate(-1, NULL, log_path, &again, &lines_again);
    if (st || again != sum || lines_again != lines) {
        fprintf(stderr, "fuzz_gateway: the replay of the input's log differs: %s\n", st ? kr_last_error() : "checksum");
        abort();
    }
    return 0;
}
