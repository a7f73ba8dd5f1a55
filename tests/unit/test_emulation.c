/* The emulation formalism with an injected clock (no real waiting): model
 * time never ahead of clock x speed and behind it by at most a few clock
 * reads, at speed 1 and 10; input lines injected as events, stamped with
 * the clock and logged; a replay of the log reproducing the run's checksum;
 * malformed lines skipped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "schedulers/checkpoint.h"
#include "schedulers/model_private.h"

#define S (KR_PRECISION_DEFAULT)

typedef struct fake_clock {
    uint64_t now;        /* ns */
    uint64_t per_read;   /* ns the clock moves on every read: the cost of work */
    int pipe_w;          /* input written at given clock times, then closed */
    const uint64_t *line_at;
    const char *const *lines;
    int line_count, next_line;
} fake_clock_t;

static void feed(fake_clock_t *f)
{
    while (f->next_line < f->line_count && f->now >= f->line_at[f->next_line]) {
        const char *l = f->lines[f->next_line++];
        cr_assert_eq(write(f->pipe_w, l, strlen(l)), (ssize_t)strlen(l));
    }
    if (f->pipe_w >= 0 && f->next_line == f->line_count) {
        close(f->pipe_w);
        f->pipe_w = -1;
    }
}

static uint64_t fake_now(void *arg)
{
    fake_clock_t *f = arg;
    f->now += f->per_read;
    if (f->lines) feed(f);
    return f->now;
}

static void fake_wait(void *arg, uint64_t deadline, int fd)
{
    (void)fd;
    fake_clock_t *f = arg;
    /* input due before the deadline wakes the wait early */
    if (f->lines && f->next_line < f->line_count && f->line_at[f->next_line] < deadline)
        deadline = f->line_at[f->next_line];
    if (deadline > f->now) f->now = deadline;
    if (f->lines) feed(f);
}

/* ---- pacing ---- */

static kr_event_type_t tick_type;
static kr_time_t max_lag;
static int ticks;
static void tick(kr_sim_t *sim, void *data)
{
    (void)data;
    uint64_t clock = kr_emulation_clock(sim);
    cr_assert_geq(clock, kr_sim_now(sim), "ahead of the clock: now %llu, clock %llu",
                  (unsigned long long)kr_sim_now(sim), (unsigned long long)clock);
    if (clock - kr_sim_now(sim) > max_lag) max_lag = clock - kr_sim_now(sim);
    ticks++;
    cr_assert_eq(kr_schedule(sim, 0, S / 10, tick_type, NULL, NULL), KR_OK);
}

static void pacing(double speed, kr_sync_algorithm_t sync)
{
    fake_clock_t f = { .now = 1000000000, .per_read = 20000, .pipe_w = -1 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 3 * S, .log_level = KR_LOG_OFF, .sync = sync });
    tick_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = tick });
    kr_emulation_desc_t ed = { .speed = speed, .clock = &clock, .input_fd = -1 };
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed });
    cr_assert_not_null(s, "%s", kr_last_error());
    cr_assert_eq(kr_schedule(s, 0, S / 10, tick_type, NULL, NULL), KR_OK);
    max_lag = 0;
    ticks = 0;
    uint64_t wall0 = f.now;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(ticks, 30);
    /* The documented bound: a few clock reads of work per event. */
    kr_time_t bound = (kr_time_t)(16 * f.per_read * 1e-9 * speed * S);
    cr_assert_leq(max_lag, bound, "lag %llu ticks > bound %llu", (unsigned long long)max_lag,
                  (unsigned long long)bound);
    /* and the run took (model time / speed) of clock time */
    double wall = (double)(f.now - wall0) * 1e-9;
    cr_assert(wall >= 3.0 / speed && wall < 3.0 / speed + 0.1, "wall %g s", wall);
    kr_model_destroy(m);
}

Test(emulation, paced_at_speed_1) { pacing(1.0, KR_SYNC_NULL_MESSAGE); }
Test(emulation, paced_at_speed_10) { pacing(10.0, KR_SYNC_NULL_MESSAGE); }
/* The window's rounds wait for the clock too: an event not yet due is no
 * deadlock. */
Test(emulation, paced_with_the_window_algorithm) { pacing(1.0, KR_SYNC_WINDOW); }

/* auto keeps null messages for a model with an emulation, however many
 * dependencies it has (kairos/model.h): 10 simulators with an edge from
 * each to every other would otherwise run window rounds. */
Test(emulation, auto_keeps_null_messages)
{
    fake_clock_t f = { .now = 1000000000, .per_read = 20000, .pipe_w = -1 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = S, .log_level = KR_LOG_OFF, .sync = KR_SYNC_AUTO });
    kr_emulation_desc_t ed = { .speed = 1, .clock = &clock, .input_fd = -1 };
    cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed }));
    for (int i = 1; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%d", i);
        cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = name, .formalism = KR_DISCRETE_EVENT }));
    }
    for (uint32_t i = 0; i < 10; i++)
        for (uint32_t j = 0; j < 10; j++)
            if (i != j) cr_assert_eq(kr_model_add_dependency(m, i, j, S / 10), KR_OK);
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_model_sync(m), KR_SYNC_NULL_MESSAGE);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_model_destroy(m);
}

/* ---- input, log and replay ---- */

typedef struct order { int32_t qty; } order_t;
static kr_event_type_t order_type, work_type;
static int inputs_seen, bad_inputs;
static kr_time_t input_times[16];
static int64_t delivered;

static void on_input(kr_sim_t *sim, const char *event, const char *data)
{
    if (strcmp(event, "order")) { bad_inputs++; return; }
    input_times[inputs_seen++] = kr_sim_now(sim);
    order_t o = { .qty = atoi(data) };
    cr_assert_eq(kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = 1, .delay = S / 2, .type = order_type, .data = &o },
                                  NULL), KR_OK, "%s", kr_last_error());
}

static void plant_order(kr_sim_t *sim, void *data)
{
    order_t *o = data;
    delivered += o->qty;
    for (int i = 0; i < o->qty; i++) kr_schedule(sim, 0, (kr_time_t)(i + 1) * S / 7, work_type, NULL, NULL);
}

static void work(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

/* An emulation "ctl" whose orders go to "plant" half a second later. */
static kr_model_t *order_model(kr_clock_t *clock, int input_fd, const char *log_path, const char *replay_path)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 5 * S, .seed = 9, .log_level = KR_LOG_OFF });
    order_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "order", .size = sizeof(order_t),
                                                                  .on_target_side = plant_order });
    work_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "work", .on_event = work });
    kr_emulation_desc_t ed = { .speed = 1, .clock = clock, .input_fd = input_fd, .on_input = on_input,
                               .log_path = log_path, .replay_path = replay_path };
    kr_sim_t *ctl = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed });
    cr_assert_not_null(ctl, "%s", kr_last_error());
    cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "plant" }));
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S / 2), KR_OK);
    return m;
}

static uint64_t emulate(const char *log_path, const char *replay_path, int *inputs)
{
    static const uint64_t at[] = { 1300000000ull, 1300000000ull, 2100000000ull, 3700000000ull, 4000000000ull };
    static const char *const lines[] = { "{\"event\": \"order\", \"data\": 3}\n", "not json\n",
                                         "{\"event\": \"order\", \"data\": 5}\n{\"event\": \"order\", ",
                                         "\"data\": 2}\n", "{\"event\": \"other\", \"data\": {\"x\": [1, 2.5]}}\n" };
    int fds[2] = { -1, -1 };
    if (!replay_path) cr_assert_eq(pipe(fds), 0);
    fake_clock_t f = { .now = 1000000000, .per_read = 1000, .pipe_w = fds[1],
                       .line_at = replay_path ? NULL : at, .lines = replay_path ? NULL : lines, .line_count = 5 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    kr_model_t *m = order_model(&clock, fds[0], log_path, replay_path);
    inputs_seen = bad_inputs = 0;
    delivered = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    uint64_t sum = kr_model_checksum(m);
    *inputs = inputs_seen;
    kr_model_destroy(m);
    if (fds[0] >= 0) close(fds[0]);
    return sum;
}

Test(emulation, replay_of_the_log_gives_the_same_checksum)
{
    char path[] = "/tmp/kairos-emu-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    int live_inputs, replay_inputs;
    uint64_t live = emulate(path, NULL, &live_inputs);
    cr_assert_eq(live_inputs, 3);
    cr_assert_eq(bad_inputs, 1);          /* "other" reached on_input; "not json" was skipped */
    cr_assert_eq(delivered, 10);
    /* stamped with the clock: 0.3 s, 1.1 s, 1.1 s after the start */
    cr_assert(input_times[0] >= 300000 && input_times[0] < 310000, "%llu", (unsigned long long)input_times[0]);
    cr_assert(input_times[1] >= 1100000 && input_times[1] < 1110000, "%llu", (unsigned long long)input_times[1]);
    kr_time_t live_times[3];
    memcpy(live_times, input_times, sizeof live_times);
    FILE *log = fopen(path, "r");
    char line[256];
    int lines = 0, skipped = 0, ended = 0, finished = 0;
    while (fgets(line, sizeof line, log)) {
        /* the bad line is logged with its reason, and not replayed */
        if (strstr(line, "\"skipped\":\"not JSON\"") && strstr(line, "\"line\":\"not json\"")) {
            skipped++;
            continue;
        }
        /* and the end of the input, as a peer gone */
        if (strstr(line, "\"peer\":\"gone\"")) {
            ended++;
            continue;
        }
        /* and, last, the end of the run */
        if (strstr(line, "\"end\":true")) {
            finished++;
            continue;
        }
        cr_assert(strstr(line, "\"time\"") && strstr(line, "\"after\"") && strstr(line, "\"event\""), "%s", line);
        lines++;
    }
    fclose(log);
    cr_assert_eq(lines, 4);
    cr_assert_eq(skipped, 1);
    cr_assert_eq(ended, 1);
    cr_assert_eq(finished, 1);
    uint64_t replay = emulate(NULL, path, &replay_inputs);
    cr_assert_eq(replay_inputs, 3);
    cr_assert_eq(delivered, 10);
    cr_assert_eq(memcmp(live_times, input_times, sizeof live_times), 0);
    cr_assert_eq(replay, live, "replay checksum differs");
    unlink(path);
}

/* A replay cut by a checkpoint at 1 s (one of its three orders behind it,
 * two at 1.1 s and another input at 2.7 s ahead) and restarted in a fresh model goes on with its next line: the same
 * checksum as the live run (docs/checkpoint.md, "Emulation"). */
Test(emulation, a_replay_restarted_from_a_checkpoint_gives_the_same_checksum)
{
    char path[] = "/tmp/kairos-emu-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    int live_inputs;
    uint64_t live = emulate(path, NULL, &live_inputs);
    fake_clock_t f = { .now = 1000000000, .per_read = 1000 };
    kr_clock_t clock = { fake_now, fake_wait, &f };
    kr_time_t cut = S;
    kr_buf_t parts[2];
    kr_model_t *m = order_model(&clock, -1, NULL, path);
    inputs_seen = 0;
    cr_assert_eq(kr_model_start(m), KR_OK, "%s", kr_last_error());
    bool at_cut = false;
    cr_assert_eq(kr__coord_run_until(m, cut, &at_cut), KR_OK, "%s", kr_last_error());
    cr_assert(at_cut);
    cr_assert_eq(inputs_seen, 1, "%d inputs before the cut", inputs_seen);
    for (uint32_t i = 0; i < 2; i++) {
        kr_buf_init(&parts[i]);
        cr_assert_eq(kr__sim_checkpoint_save(kr_model_sim(m, i), &parts[i]), KR_OK, "%s", kr_last_error());
    }
    kr_model_destroy(m);
    m = order_model(&clock, -1, NULL, path);
    for (uint32_t i = 0; i < 2; i++) {
        kr_reader_t r;
        kr_reader_init(&r, parts[i].data, parts[i].len);
        cr_assert_eq(kr__sim_checkpoint_load(kr_model_sim(m, i), &r, cut, 5 * S), KR_OK, "%s", kr_last_error());
        kr_buf_fini(&parts[i]);
    }
    inputs_seen = 0;
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(inputs_seen, 2, "the restart replays only the lines after the cut");
    cr_assert_eq(kr_model_checksum(m), live, "restarted replay checksum differs");
    kr_model_destroy(m);
    unlink(path);
}

Test(emulation, corrupt_replay_log_is_refused)
{
    char path[] = "/tmp/kairos-emu-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_gt(write(fd, "{\"time\": 5}\n", 12), 0);
    close(fd);
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 5 * S, .log_level = KR_LOG_OFF });
    kr_emulation_desc_t ed = { .replay_path = path, .input_fd = -1 };
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed }));
    cr_assert(strstr(kr_last_error(), path) && strstr(kr_last_error(), ":1:"), "%s", kr_last_error());
    kr_model_destroy(m);
    unlink(path);
}

/* Records that do not read are refused as the log loads, naming the file,
 * the line and what is wrong (a trial found them taken: a stop after the
 * end record was replayed, a key given twice took its last value, a bad
 * header or an unknown record was blamed on "time"). */
/* Writes `text` to a new temporary file named from the template `path`. */
static void replay_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void nothing(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

static const char *refusal_of(const char *text)
{
    static char msg[1024];
    char path[] = "/tmp/kairos-emu-XXXXXX";
    replay_file(path, text);
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 5 * S, .log_level = KR_LOG_OFF });
    kr_emulation_desc_t ed = { .replay_path = path, .input_fd = -1 };
    cr_assert_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed }),
                   "%s was taken", text);
    cr_assert(strstr(kr_last_error(), path), "%s", kr_last_error());
    snprintf(msg, sizeof msg, "%s", strstr(kr_last_error(), path) + strlen(path));
    kr_model_destroy(m);
    unlink(path);
    return msg;
}

Test(emulation, records_that_do_not_read_are_refused)
{
    cr_assert_str_eq(refusal_of("{\"model\": 5}\n"),
                     ":1: model: expected {\"model\": 16 hex digits} alone on the first line, found 5");
    cr_assert_str_eq(refusal_of("{\"time\": 1, \"after\": 0, \"event\": \"x\"}\n{\"model\": \"0123456789abcdef\"}\n"),
                     ":2: model: expected {\"model\": 16 hex digits} alone on the first line, found "
                     "{\"model\":\"0123456789abcdef\"}");
    cr_assert_str_eq(refusal_of("{\"foo\": 1}\n"),
                     ":1: expected {\"time\": ticks, \"after\": events, \"event\": name, \"to\": simulator, \"data\": "
                     "...} or a record of output, skipped input, a peer or the end, found {\"foo\":1}");
    cr_assert_str_eq(refusal_of("{\"time\": 5, \"after\": 0, \"end\": true}\n"
                                "{\"time\": 6, \"after\": 0, \"event\": \"x\"}\n"),
                     ":2: expected nothing after the end record, found another record");
    cr_assert_str_eq(refusal_of("{\"time\": 5, \"after\": 0, \"peer\": \"gone\", \"stop\": \"yes\"}\n"),
                     ":1: stop: expected true or false, found another value");
    const char *dup = refusal_of("{\"time\": 5, \"after\": 0, \"event\": \"x\", \"data\": {\"a\": 1, \"a\": 2}}\n");
    cr_assert(strstr(dup, ":1:") && strstr(dup, "duplicate"), "%s", dup);
}

/* A line due after more events than the simulator runs holds the run
 * back: the deadlock names it (with either algorithm; the window
 * algorithm's message named nothing). */
static void replay_waits(kr_sync_algorithm_t sync)
{
    char path[] = "/tmp/kairos-emu-XXXXXX";
    replay_file(path, "{\"time\": 5, \"after\": 99, \"event\": \"x\"}\n");
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = S, .log_level = KR_LOG_OFF, .sync = sync });
    kr_event_type_t tt = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = nothing });
    kr_emulation_desc_t ed = { .input_fd = -1, .replay_path = path };
    kr_sim_t *e = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "emu", .formalism = KR_EMULATION, .emulation = &ed });
    kr_sim_t *d = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "des", .formalism = KR_DISCRETE_EVENT });
    cr_assert(e && d, "%s", kr_last_error());
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, S / 2), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_schedule(d, 0, S / 2 + 1, tt, NULL, NULL), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_DEADLOCK);
    cr_assert(strstr(kr_last_error(), "'emu' (now 0, 0 events run) waits to replay line 1 of its log, due after 99 "
                     "events"), "%s", kr_last_error());
    kr_model_destroy(m);
    unlink(path);
}

/* ---- regressions from review ---- */

static int replayed;
static void count_input(kr_sim_t *sim, const char *event, const char *data)
{
    (void)sim;
    (void)event;
    (void)data;
    replayed++;
}

static kr_status_t replay_with(const char *line, int *inputs)
{
    char path[] = "/tmp/kairos-emu-XXXXXX";
    replay_file(path, line);
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = S, .log_level = KR_LOG_OFF });
    kr_event_type_t tt = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "tick", .on_event = nothing });
    kr_emulation_desc_t ed = { .input_fd = -1, .on_input = count_input, .replay_path = path };
    kr_sim_t *s = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "emu", .formalism = KR_EMULATION, .emulation = &ed });
    cr_assert_not_null(s, "%s", kr_last_error());
    for (int i = 0; i < 10; i++) cr_assert_eq(kr_schedule(s, 0, (kr_time_t)i * 1000, tt, NULL, NULL), KR_OK);
    replayed = 0;
    kr_status_t st = kr_model_run(m);
    *inputs = replayed;
    kr_model_destroy(m);
    unlink(path);
    return st;
}

Test(emulation, replay_injects_between_events_of_one_batch)
{
    int inputs;
    cr_assert_eq(replay_with("{\"time\": 5000, \"after\": 3, \"event\": \"x\", \"data\": 1}\n", &inputs), KR_OK,
                 "%s", kr_last_error());
    cr_assert_eq(inputs, 1);
}

Test(emulation, replay_lines_never_reached_fail_the_run)
{
    int inputs;
    cr_assert_neq(replay_with("{\"time\": 5000, \"after\": 99, \"event\": \"x\", \"data\": 1}\n", &inputs), KR_OK);
    cr_assert(strstr(kr_last_error(), "never"), "%s", kr_last_error());
}

Test(emulation, zero_promise_cycle_with_an_emulation_is_refused)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = S, .log_level = KR_LOG_OFF });
    kr_emulation_desc_t ed = { .input_fd = -1 };
    cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "E", .formalism = KR_EMULATION, .emulation = &ed }));
    cr_assert_not_null(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "M" }));
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 0), KR_OK);
    cr_assert_eq(kr_model_add_dependency(m, 1, 0, 0), KR_OK);
    cr_assert_eq(kr_model_run(m), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "'E'") && strstr(kr_last_error(), "positive promise"), "%s", kr_last_error());
    kr_model_destroy(m);
}

/* ---- input that ends, and a cycle through an emulation (real clock) ---- */

static kr_time_t line_ran_at;
static kr_event_type_t ping_type;
static void ping_back(kr_sim_t *sim, const char *event, const char *data)
{
    (void)event;
    (void)data;
    line_ran_at = kr_sim_now(sim);
    kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = 1, .delay = 500 * S, .type = ping_type }, NULL);
}

/* ctl (emulation, speed 1000, reading fd) <-> plant, end 3000; `cycle`
 * adds plant -> ctl. */
static kr_status_t ctl_and_plant(int fd, bool cycle)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 3000 * S, .log_level = KR_LOG_OFF });
    ping_type = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "ping", .on_target_side = nothing });
    kr_emulation_desc_t ed = { .speed = 1000, .input_fd = fd, .on_input = ping_back };
    cr_assert(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "ctl", .formalism = KR_EMULATION, .emulation = &ed }));
    cr_assert(kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "plant" }));
    cr_assert_eq(kr_model_add_dependency(m, 0, 1, 500 * S), KR_OK);
    if (cycle) cr_assert_eq(kr_model_add_dependency(m, 1, 0, 250 * S), KR_OK);
    kr_status_t st = kr_model_run(m);
    kr_model_destroy(m);
    return st;
}

/* The end of the input frees ctl's guarantees from its clock: the plant
 * then knows nothing more comes (it used to wait forever: a deadlock). */
Test(emulation, input_that_ends_with_nothing_pending_ends_the_run)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    close(fds[1]);
    kr_status_t st = ctl_and_plant(fds[0], false);
    cr_assert_eq(st, KR_OK, "%s", kr_last_error());
    close(fds[0]);
}

/* In a cycle, guarantees are made from the clock as last looked at: read
 * afresh they kept a fixpoint going while the clock moved, and the line,
 * written 0.2 s in (model time 200), was only read at 2250. */
Test(emulation, a_line_in_a_cycle_is_read_when_it_comes)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
        if (write(fds[1], "{\"event\":\"x\"}\n", 14) != 14) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    line_ran_at = 0;
    kr_status_t st = ctl_and_plant(fds[0], true);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    cr_assert_eq(st, KR_OK, "%s", kr_last_error());
    cr_assert(line_ran_at >= 150 * S && line_ran_at < 1000 * S, "the line ran at %g",
              (double)line_ran_at / (double)S);
}


Test(emulation, a_line_never_due_names_itself_in_the_deadlock) { replay_waits(KR_SYNC_NULL_MESSAGE); }
Test(emulation, a_line_never_due_names_itself_in_the_deadlock_window) { replay_waits(KR_SYNC_WINDOW); }
