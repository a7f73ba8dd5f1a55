/* The emulation formalism: a clock paced to the wall clock, input lines
 * injected as events, their log, and replaying it. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/error.h"
#include "base/grow.h"
#include "schedulers/model_private.h"

typedef struct replay_line {
    kr_time_t time;
    uint64_t after;
    char *text;          /* "event\0data" */
    size_t text_len;
} replay_line_t;

struct kr__emulation {
    kr_clock_t clock;
    bool custom_clock;
    double speed;
    uint64_t start_ns;
    kr_time_t clock_base;   /* the clock's reading at start_ns: 0, or a checkpoint's cut on a restart */
    int fd;
    bool input_open;
    kr_input_fn on_input;
    FILE *log;
    char *line;          /* partial input line */
    size_t line_len, line_cap;
    replay_line_t *replay;
    size_t replay_count, replay_next;
    bool replaying;
};

static uint64_t real_now(void *arg)
{
    (void)arg;
    return kr__monotonic_ns();
}

static void real_wait(void *arg, uint64_t deadline, int fd)
{
    uint64_t now = real_now(arg);
    if (now >= deadline) return;
    uint64_t ms = (deadline - now + 999999) / 1000000;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    poll(&p, fd >= 0 ? 1 : 0, ms > 1000 ? 1000 : (int)ms);
}

/* "event\0data" as one allocation. */
static char *make_text(const char *event, const char *data, size_t *len)
{
    size_t a = strlen(event), b = strlen(data);
    char *t = malloc(a + b + 2);
    if (!t) return NULL;
    memcpy(t, event, a + 1);
    memcpy(t + a + 1, data, b + 1);
    *len = a + b + 2;
    return t;
}

static kr_status_t load_replay(kr_sim_t *s, kr__emulation_t *em, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return kr__fail(KR_ERR_IO, "emulation '%s': cannot open replay log %s: %s", s->name, path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned line_no = 0;
    kr_status_t st = KR_OK;
    while (!st && (n = getline(&buf, &cap, f)) >= 0) {
        line_no++;
        if (n <= 1) continue;
        json_error_t err;
        json_t *j = json_loadb(buf, (size_t)n, 0, &err);
        json_t *time = j ? json_object_get(j, "time") : NULL, *after = j ? json_object_get(j, "after") : NULL;
        json_t *event = j ? json_object_get(j, "event") : NULL, *data = j ? json_object_get(j, "data") : NULL;
        if (!json_is_integer(time) || !json_is_integer(after) || !json_is_string(event) || !data ||
            json_integer_value(time) < 0 || json_integer_value(after) < 0) {
            st = kr__fail(KR_ERR_CORRUPT, "%s:%u: expected {\"time\": ticks, \"after\": events, \"event\": name, "
                          "\"data\": ...}", path, line_no);
        } else {
            char *dump = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
            replay_line_t *r = realloc(em->replay, (em->replay_count + 1) * sizeof *r);
            if (!dump || !r) {
                st = kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory reading %s", s->name, path);
            } else {
                em->replay = r;
                replay_line_t *l = &r[em->replay_count];
                l->time = (kr_time_t)json_integer_value(time);
                l->after = (uint64_t)json_integer_value(after);
                l->text = make_text(json_string_value(event), dump, &l->text_len);
                if (!l->text) st = kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
                else if (em->replay_count && (l->after < r[em->replay_count - 1].after ||
                                              l->time < r[em->replay_count - 1].time)) {
                    free(l->text);
                    st = kr__fail(KR_ERR_CORRUPT, "%s:%u: lines out of order", path, line_no);
                } else {
                    em->replay_count++;
                }
            }
            free(dump);
        }
        json_decref(j);
    }
    free(buf);
    fclose(f);
    return st;
}

kr_status_t kr__emulation_create(kr_sim_t *s, const kr_emulation_desc_t *d)
{
    kr__emulation_t *em = calloc(1, sizeof *em);
    if (!em) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
    s->emu = em;
    kr_emulation_desc_t desc = d ? *d : (kr_emulation_desc_t){ .input_fd = -1 };
    if (!(desc.speed >= 0) || !isfinite(desc.speed))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': speed must be a positive number", s->name);
    em->speed = desc.speed > 0 ? desc.speed : 1.0;
    em->custom_clock = desc.clock != NULL;
    em->clock = desc.clock ? *desc.clock : (kr_clock_t){ real_now, real_wait, NULL };
    if (!em->clock.now_ns || !em->clock.wait_ns)
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': a clock needs now_ns and wait_ns", s->name);
    em->on_input = desc.on_input;
    em->fd = desc.on_input || desc.input_fd > 0 ? desc.input_fd : -1;
    if (desc.replay_path) {
        em->replaying = true;
        em->fd = -1;
        kr_status_t st = load_replay(s, em, desc.replay_path);
        if (st) return st;
    }
    em->input_open = em->fd >= 0;
    if (em->input_open) {
        int flags = fcntl(em->fd, F_GETFL);
        if (flags < 0 || fcntl(em->fd, F_SETFL, flags | O_NONBLOCK) < 0)
            return kr__fail(KR_ERR_IO, "emulation '%s': input descriptor %d: %s", s->name, em->fd, strerror(errno));
    }
    if (desc.log_path && !(em->log = fopen(desc.log_path, "w")))
        return kr__fail(KR_ERR_IO, "emulation '%s': cannot write log %s: %s", s->name, desc.log_path, strerror(errno));
    return KR_OK;
}

void kr__emulation_fini(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (!em) return;
    if (em->log) fclose(em->log);
    for (size_t i = 0; i < em->replay_count; i++) free(em->replay[i].text);
    free(em->replay);
    free(em->line);
    free(em);
    s->emu = NULL;
}

kr_status_t kr__emulation_begin(kr_sim_t *s)
{
    s->emu->start_ns = s->emu->clock.now_ns(s->emu->clock.arg);
    return KR_OK;
}

/* The clock in ticks of model time since the run began. */
static kr_time_t clock_ticks(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    uint64_t now = em->clock.now_ns(em->clock.arg);
    if (now <= em->start_ns) return em->clock_base;
    double ticks = (double)(now - em->start_ns) * 1e-9 * em->speed * (double)s->model->precision;
    return ticks >= 1.8e19 ? KR_TIME_NEVER - 1 : kr__time_add(em->clock_base, (kr_time_t)ticks);
}

uint64_t kr_emulation_clock(kr_sim_t *s)
{
    if (!s) return 0;
    return s->emu && !s->emu->replaying ? clock_ticks(s) : s->now;
}

static void inject(kr_sim_t *s, kr_time_t t, char *text, size_t len)
{
    kr_model_t *m = s->model;
    uint32_t slot = kr__rec_alloc(s);
    if (slot == UINT32_MAX) {
        free(text);
        kr__model_fail(m, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
        return;
    }
    kr__event_rec_t *r = &s->recs[slot];
    r->time = t;
    r->priority = KR_PRIORITY_DEFAULT;
    r->source = s->id;
    r->sequence = s->sequence++;
    r->kind = KR__EV_INPUT;
    (void)len;
    kr__rec_extra_t *x = kr__rec_extra(s, r);
    if (x) x->text = text;
    else free(text);
    if (!x || kr__rec_enqueue(s, slot)) {
        kr__rec_free(s, slot);
        kr__model_fail(m, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
    }
}

static void take_line(kr_sim_t *s, const char *line, size_t n)
{
    kr__emulation_t *em = s->emu;
    kr_model_t *m = s->model;
    json_error_t err;
    json_t *j = json_loadb(line, n, 0, &err);
    json_t *event = j ? json_object_get(j, "event") : NULL;
    json_t *data = j ? json_object_get(j, "data") : NULL;
    if (!json_is_string(event)) {
        kr_log(s, KR_LOG_ERROR, "input line skipped: expected {\"event\": name, \"data\": ...}, found %.*s",
               (int)(n > 80 ? 80 : n), line);
        json_decref(j);
        return;
    }
    kr_time_t t = clock_ticks(s);
    if (t < s->now) t = s->now;
    if (t > m->end_time) {
        kr_log(s, KR_LOG_WARN, "input line after the end time skipped");
        json_decref(j);
        return;
    }
    char *dump = json_dumps(data ? data : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = 0;
    char *text = dump ? make_text(json_string_value(event), dump, &len) : NULL;
    if (text && em->log) {
        json_t *rec = json_pack("{s:I, s:I, s:s, s:O}", "time", (json_int_t)t, "after", (json_int_t)s->executed,
                                "event", json_string_value(event), "data", data ? data : json_null());
        if (rec) {
            json_dumpf(rec, em->log, JSON_COMPACT);
            fputc('\n', em->log);
            fflush(em->log);
        }
        json_decref(rec);
    }
    free(dump);
    json_decref(j);
    if (!text) { kr__model_fail(m, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name); return; }
    inject(s, t, text, len);
}

void kr__emulation_poll(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (em->replaying) {
        while (em->replay_next < em->replay_count && em->replay[em->replay_next].after == s->executed) {
            replay_line_t *l = &em->replay[em->replay_next++];
            if (l->time < s->now || l->time > s->model->end_time) {
                kr__model_fail(s->model, KR_ERR_CORRUPT, "emulation '%s': replay line %zu at %llu does not fit the run "
                               "(now %llu)", s->name, em->replay_next, (unsigned long long)l->time,
                               (unsigned long long)s->now);
                return;
            }
            inject(s, l->time, l->text, l->text_len);
            l->text = NULL;
        }
        return;
    }
    while (em->input_open) {
        /* At least 4096 bytes free for the next read. */
        if (em->line_cap - em->line_len < 4096 && KR__GROW(em->line, em->line_cap, em->line_len + 4096, 8192, NULL)) {
            kr__model_fail(s->model, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
            return;
        }
        ssize_t n = read(em->fd, em->line + em->line_len, em->line_cap - em->line_len);
        if (n == 0) em->input_open = false;
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                kr_log(s, KR_LOG_ERROR, "input closed: %s", strerror(errno));
                em->input_open = false;
            }
            if (!em->input_open && em->line_len) take_line(s, em->line, em->line_len);
            if (!em->input_open) em->line_len = 0;
            break;
        }
        em->line_len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < em->line_len; i++) {
            if (em->line[i] != '\n') continue;
            if (i > start) take_line(s, em->line + start, i - start);
            start = i + 1;
        }
        memmove(em->line, em->line + start, em->line_len - start);
        em->line_len -= start;
    }
}

size_t kr__emulation_leftover(const kr_sim_t *s)
{
    return s->emu->replaying ? s->emu->replay_count - s->emu->replay_next : 0;
}

bool kr__emulation_ready(kr_sim_t *s, kr_time_t t)
{
    return s->emu->replaying || clock_ticks(s) >= t;
}

kr_time_t kr__emulation_next(kr_sim_t *s, kr_time_t head)
{
    kr__emulation_t *em = s->emu;
    kr_time_t t = head;
    if (em->replaying) {
        if (em->replay_next < em->replay_count && em->replay[em->replay_next].time < t)
            t = em->replay[em->replay_next].time;
    } else if (em->input_open) {
        kr_time_t c = clock_ticks(s);
        if (c < s->now) c = s->now;
        if (c < t) t = c;
    }
    return t;
}

bool kr__emulation_waiting(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (em->replaying) return false;
    kr__event_rec_t *h = kr__sim_head(s);
    /* past a stop horizon (stop.c) nothing more runs: nothing to wait for */
    bool pending = h && h->time <= s->model->end_time && h->time < s->stop_horizon &&
                   !(h->flags & KR__EVREC_AWAITING);
    kr_time_t clock = em->input_open ? clock_ticks(s) : 0;
    return (pending && !kr__emulation_ready(s, h->time)) ||
           (em->input_open && clock < s->model->end_time && clock + 1 < s->stop_horizon);
}

/* Wall-clock nanoseconds at which the clock of s reads t. */
static uint64_t deadline_of(kr_sim_t *s, kr_time_t t)
{
    kr__emulation_t *em = s->emu;
    if (t <= em->clock_base) return em->start_ns;
    double ns = (double)(t - em->clock_base) / ((double)s->model->precision * em->speed) * 1e9;
    if (ns >= 1.8e19) return UINT64_MAX;
    return em->start_ns + (uint64_t)ceil(ns);
}

void kr__emulation_wait(kr_model_t *m)
{
    kr_sim_t *first = NULL;
    uint64_t deadline = UINT64_MAX;
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        if (!s->emu || !kr__emulation_waiting(s)) continue;
        kr__event_rec_t *h = kr__sim_head(s);
        kr_time_t t = h && h->time <= m->end_time ? h->time : m->end_time;
        uint64_t d = deadline_of(s, t);
        if (!first || d < deadline) {
            first = s;
            deadline = d;
        }
    }
    if (!first) return;
    /* Held by its inputs rather than its clock: the deadline has passed, so
     * wait a millisecond for the clock (and the guarantees it moves). */
    uint64_t now = first->emu->clock.now_ns(first->emu->clock.arg);
    if (deadline <= now) deadline = now + 1000000;
    first->emu->clock.wait_ns(first->emu->clock.arg, deadline, first->emu->fd);
}

void kr__emulation_run_input(kr_sim_t *s, kr__event_rec_t *r)
{
    kr__emulation_t *em = s->emu;
    kr__rec_extra_t *x = kr__rec_extra_peek(s, r);
    if (!x || !x->text) return;
    /* on_input may schedule events, which may move the side table */
    char *text = x->text;
    x->text = NULL;
    const char *event = text, *data = text + strlen(text) + 1;
    if (em->on_input) em->on_input(s, event, data);
    else kr_log(s, KR_LOG_WARN, "input event '%s' has no on_input handler", event);
    free(text);
}

/* A checkpoint holds the events input became (they are in the queue) and
 * how far a replay got; on a restart the clock goes on from the cut, paced
 * from the moment the restarted run begins. */
void kr__emulation_save(kr_sim_t *s, kr_buf_t *b)
{
    kr_buf_put_u64(b, s->emu ? s->emu->replay_next : 0);
}

kr_status_t kr__emulation_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut)
{
    uint64_t next = kr_reader_u64(r);
    if (!s->emu) return next ? kr__fail(KR_ERR_CORRUPT, "simulator '%s': its saved state is an emulation's", s->name)
                             : KR_OK;
    kr__emulation_t *em = s->emu;
    if (next > (em->replaying ? em->replay_count : 0))
        return kr__fail(KR_ERR_CORRUPT, "emulation '%s': the checkpoint has replayed %llu lines, its replay log has "
                        "%zu", s->name, (unsigned long long)next, em->replaying ? em->replay_count : (size_t)0);
    em->replay_next = (size_t)next;
    em->clock_base = cut;
    return KR_OK;
}
