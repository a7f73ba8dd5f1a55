/* Fuzz target: the emulation formalism's readers of outside bytes
 * (schedulers/formalisms/emulation.c): the JSON-lines input read from a
 * descriptor, and the replay log. The first byte picks which:
 *   even: the rest is the input stream (through a pipe, closed after it),
 *         logged; then the log is replayed and must give the run's
 *         checksum again;
 *   odd:  the rest is a replay log.
 * A bad line is skipped (input) or refused with one message (replay);
 * nothing may crash, leak or hang. The clock is injected (no real
 * waiting): it moves 1 ms per read.
 *
 * Two simulators: "ctl" (emulation), whose on_input turns an "order" line
 * into a sync-event to "plant" (promise 0.5) and any other into a local
 * event, and "plant". */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S (KR_PRECISION_DEFAULT)

typedef struct fake_clock {
    uint64_t now; /* ns */
} fake_clock_t;

static uint64_t fake_now(void *arg)
{
    fake_clock_t *f = arg;
    f->now += 1000000;
    return f->now;
}

static void fake_wait(void *arg, uint64_t deadline, int fd)
{
    (void)fd;
    fake_clock_t *f = arg;
    if (deadline > f->now) f->now = deadline;
}

typedef struct order {
    int32_t qty;
} order_t;

static kr_event_type_t order_type, work_type;

static void on_input(kr_sim_t *sim, const char *event, const char *data)
{
    if (!strcmp(event, "order")) {
        int q = atoi(data);
        order_t o = { .qty = q < 0 ? 0 : q > 8 ? 8 : q };
        kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = 1, .delay = S / 2, .type = order_type, .data = &o }, NULL);
    } else {
        kr_schedule(sim, 0, (kr_time_t)(strlen(data) % 7) * S / 10, work_type, NULL, NULL);
    }
}

static void plant_order(kr_sim_t *sim, void *data)
{
    const order_t *o = data;
    for (int i = 0; i < o->qty; i++) kr_schedule(sim, 0, (kr_time_t)(i + 1) * S / 7, work_type, NULL, NULL);
}

static void work(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

/* Runs the two simulators; returns the status, the checksum in *sum. */
static kr_status_t emulate(int input_fd, const char *log_path, const char *replay_path, uint64_t *sum)
{
    fake_clock_t f = { .now = 1000000000 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 3 * S, .seed = 9, .log_level = KR_LOG_OFF });
    if (!m) abort();
    order_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "order", .size = sizeof(order_t),
                                                                  .on_target_side = plant_order });
    work_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "work", .on_event = work });
    kr_emulation_desc_t ed = { .speed = 1, .clock = &clock, .input_fd = input_fd, .on_input = on_input,
                               .log_path = log_path, .replay_path = replay_path };
    kr_status_t st = KR_OK;
    kr_sim_t *ctl = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed });
    if (!ctl) {
        st = kr_last_status();
        if (!st || !kr_last_error()[0]) abort();
    } else {
        if (!kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "plant" }) || kr_model_add_dependency(m, 0, 1, S / 2))
            abort();
        st = kr_model_run(m);
        if (st && !kr_last_error()[0]) abort();
        *sum = kr_model_checksum(m);
    }
    kr_model_destroy(m);
    return st;
}

static char dir[64], log_path[128], replay_path[128];

static void cleanup(void)
{
    unlink(log_path);
    unlink(replay_path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/kairos_fuzz_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(log_path, sizeof log_path, "%s/input.log", dir);
        snprintf(replay_path, sizeof replay_path, "%s/replay.log", dir);
        atexit(cleanup);
    }
    if (size < 1 || size > 60000) return -1; /* a pipe holds 64 KiB: no writer thread needed */
    uint64_t sum = 0, again = 0;
    if (data[0] & 1) {
        FILE *fp = fopen(replay_path, "wb");
        if (!fp || fwrite(data + 1, 1, size - 1, fp) != size - 1 || fclose(fp)) abort();
        emulate(-1, NULL, replay_path, &sum);
        return 0;
    }
    int fds[2];
    if (pipe(fds)) abort();
    if (write(fds[1], data + 1, size - 1) != (ssize_t)(size - 1)) abort();
    close(fds[1]);
    kr_status_t st = emulate(fds[0], log_path, NULL, &sum);
    close(fds[0]);
    if (st) return 0;
    /* the log replays to the same run */
    st = emulate(-1, NULL, log_path, &again);
    if (st || again != sum) {
        fprintf(stderr, "fuzz_emulation: the replay of the input's log differs: %s\n", st ? kr_last_error() : "checksum");
        abort();
    }
    return 0;
}
