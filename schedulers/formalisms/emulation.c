/* The emulation formalism: a clock paced to the wall clock, input lines
 * injected as events, output lines, their log, and replaying it. The door
 * itself (sockets, pipes) is emulation_link.c. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kairos/stop.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/file.h"
#include "base/grow.h"
#include "base/hmap.h"
#include "schedulers/formalisms/emulation_link.h"
#include "schedulers/model_private.h"

typedef struct replay_line {
    kr_time_t time;
    uint64_t after;
    char *text;          /* "event\0to\0data"; event "" for a stop */
    size_t text_len;
    unsigned line_no;    /* in the log's file, for messages */
} replay_line_t;

struct kr__emulation {
    kr_clock_t clock;
    bool custom_clock;
    double speed;
    uint64_t start_ns;
    kr_time_t clock_base;   /* the clock's reading at start_ns: 0, or a checkpoint's cut on a restart */
    kr__link_t link;
    kr_input_fn on_input;
    kr_input_line_fn on_line;
    kr_arrival_fn on_arrival;
    /* the log: both directions; its length and hash go into checkpoints */
    char *log_path;
    FILE *log;
    uint64_t log_bytes, log_hash;
    int log_errno;          /* a write to the log failed (its errno): the run fails at the next poll */
    bool resume_log;        /* a restart: go on with the log the checkpoint describes */
    bool prepared;          /* kr__emulation_prepare has checked the log and the link's files */
    int log_fd;             /* a new log opened in the setup, until the run starts (-1: none) */
    bool log_made;          /* ... and made then: removed if the run never starts */
    char *line;             /* partial input line */
    size_t line_len;
    bool discarding;        /* inside a line too long to keep: skip to its end */
    uint32_t backlog;       /* input lines scheduled and not run yet */
    replay_line_t *replay;
    size_t replay_count, replay_next;
    bool replaying;
    bool replay_saw_end;    /* the replayed log ends with the live run's end record */
    bool end_warned;        /* ... or the replay has said it does not */
    bool end_logged;        /* this run's end record is in its log */
    char *replay_path;
    /* The identity digest of the model (kr__model_identify): written first
     * in a new log, and checked against the replayed log's first record. */
    uint64_t identity, replay_identity;
    bool identified, replay_identified;
    kr_emulation_counts_t counts;
    bool told_out_error;    /* the output's failed write has been warned of */
    /* The clock as last looked at (each poll and wait): what guarantees
     * are made from. A clock read afresh each time would let a fixpoint of
     * guarantees around a cycle go on for as long as the clock moves. */
    kr_time_t clock_seen;
    bool news;              /* kr__emulation_take_news */
};

/* What one poll reads at most, so that a flood leaves the run time for its
 * events; the line buffer holds a whole line and one read more. */
#define READ_CHUNK (64u * 1024)
#define LINE_BUFFER (KR_EMULATION_MAX_LINE + READ_CHUNK)
#define POLL_BUDGET (256u * 1024)

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

/* "event\0to\0data" as one allocation. */
static char *make_text(const char *event, const char *to, const char *data, size_t *len)
{
    size_t a = strlen(event), b = strlen(to), c = strlen(data);
    char *t = malloc(a + b + c + 3);
    if (!t) return NULL;
    memcpy(t, event, a + 1);
    memcpy(t + a + 1, to, b + 1);
    memcpy(t + a + b + 2, data, c + 1);
    *len = a + b + c + 3;
    return t;
}

/* ---- the log ---- */

/* Writes one record (a JSON object's text) and its newline, and flushes:
 * a log must hold every line taken even if the process dies next. */
static void log_text(kr__emulation_t *em, const char *text, size_t len)
{
    if (!em->log) return;
    fwrite(text, 1, len, em->log);
    fputc('\n', em->log);
    if ((fflush(em->log) || ferror(em->log)) && !em->log_errno) em->log_errno = errno ? errno : EIO;
    em->log_bytes += len + 1;
    em->log_hash = kr__fnv1a(kr__fnv1a(em->log_hash, text, len), "\n", 1);
}

static void log_json(kr__emulation_t *em, json_t *rec)
{
    if (!em->log || !rec) return;
    char *text = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text) log_text(em, text, strlen(text));
    free(text);
}

/* The log's first log_bytes bytes against the checkpoint's hash: a
 * restart goes on with the log the checkpoint saw. */
static kr_status_t check_log_start(kr_sim_t *s, kr__emulation_t *em, FILE *f)
{
    uint64_t h = KR__FNV_START, n = 0;
    char buf[65536];
    while (n < em->log_bytes) {
        size_t want = em->log_bytes - n < sizeof buf ? (size_t)(em->log_bytes - n) : sizeof buf;
        size_t got = fread(buf, 1, want, f);
        if (!got) break;
        h = kr__fnv1a(h, buf, got);
        n += got;
    }
    if (n != em->log_bytes || h != em->log_hash)
        return kr__fail(KR_ERR_CORRUPT, "emulation '%s': the log %s is not the one the checkpoint was written with "
                        "(expected its first %llu bytes to be the checkpoint's)", s->name, em->log_path,
                        (unsigned long long)em->log_bytes);
    return KR_OK;
}

/* The log a restart goes on with, opened to read (`update`: and to write)
 * and its start checked; a regular file. */
static FILE *open_kept_log(kr_sim_t *s, kr__emulation_t *em, bool update)
{
    bool odd;
    FILE *f = update ? kr__fopen_regular_update(em->log_path, &odd) : kr__fopen_regular(em->log_path, &odd);
    if (!f && odd)
        kr__fail(KR_ERR_IO, "emulation '%s': cannot go on with the log %s: not a regular file (a folder, a named "
                 "pipe or a device)", s->name, em->log_path);
    else if (!f)
        kr__fail(KR_ERR_IO, "emulation '%s': cannot go on with the log %s: %s", s->name, em->log_path,
                 strerror(errno));
    else if (check_log_start(s, em, f)) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* A restart goes on with the log the checkpoint saw: the same first
 * log_bytes bytes (anything after them was written after the cut, by the
 * run that stopped, and is cut off). */
static kr_status_t resume_log(kr_sim_t *s, kr__emulation_t *em)
{
    FILE *f = open_kept_log(s, em, true);
    if (!f) return kr_last_status();
    if (fflush(f) || ftruncate(fileno(f), (off_t)em->log_bytes) || fseeko(f, (off_t)em->log_bytes, SEEK_SET)) {
        fclose(f);
        return kr__fail(KR_ERR_IO, "emulation '%s': cannot go on with the log %s: %s", s->name, em->log_path,
                        strerror(errno));
    }
    em->log = f;
    return KR_OK;
}

/* A new log, opened in the setup without waiting for a reader and without
 * cutting what is there (kr__emulation_begin empties a file when the run
 * starts): a refused run leaves an old log as it was. */
static kr_status_t open_new_log(kr_sim_t *s, kr__emulation_t *em)
{
    struct stat sb;
    bool existed = stat(em->log_path, &sb) == 0;
    int fd = kr__open_write_now(em->log_path, false);
    if (fd < 0)
        return kr__fail(KR_ERR_IO, "emulation '%s': cannot write log %s: %s", s->name, em->log_path,
                        errno == ENXIO ? "nobody reads it (a named pipe or a socket)" : strerror(errno));
    em->log_fd = fd;
    em->log_made = !existed;
    return KR_OK;
}

/* ---- the replay log ---- */

static kr_status_t replay_add(kr_sim_t *s, kr__emulation_t *em, kr_time_t time, uint64_t after, const char *event,
                              const char *to, const char *data, const char *path, unsigned line_no)
{
    if (em->replay_count && (after < em->replay[em->replay_count - 1].after ||
                             time < em->replay[em->replay_count - 1].time))
        return kr__fail(KR_ERR_CORRUPT, "%s:%u: lines out of order", path, line_no);
    replay_line_t *r = realloc(em->replay, (em->replay_count + 1) * sizeof *r);
    if (!r) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory reading %s", s->name, path);
    em->replay = r;
    replay_line_t *l = &r[em->replay_count];
    l->time = time;
    l->after = after;
    l->line_no = line_no;
    l->text = make_text(event, to, data, &l->text_len);
    if (!l->text) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory reading %s", s->name, path);
    em->replay_count++;
    return KR_OK;
}

static kr_status_t not_a_record(json_t *j, const char *path, unsigned line_no)
{
    char *found = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    kr_status_t st = kr__fail(KR_ERR_CORRUPT, "%s:%u: expected {\"time\": ticks, \"after\": events, \"event\": "
                              "name, \"to\": simulator, \"data\": ...} or a record of output, skipped input, a peer "
                              "or the end, found %.60s", path, line_no, found ? found : "another record");
    free(found);
    return st;
}

/* One record of a log. Lines taken and stops are replayed; lines sent,
 * skipped input and peers coming and going are what happened around them. */
static kr_status_t replay_record(kr_sim_t *s, kr__emulation_t *em, json_t *j, const char *path, unsigned line_no)
{
    /* the first record: the model that wrote the log */
    json_t *model = json_object_get(j, "model");
    if (model) {
        const char *hex = json_string_value(model);
        if (hex) em->replay_identity = strtoull(hex, NULL, 16);
        if (line_no != 1 || json_object_size(j) != 1 || !hex || strlen(hex) != 16 ||
            strspn(hex, "0123456789abcdefABCDEF") != 16) {
            char *found = json_dumps(line_no != 1 || json_object_size(j) != 1 ? j : model, JSON_COMPACT |
                                     JSON_ENCODE_ANY);
            kr_status_t st = kr__fail(KR_ERR_CORRUPT, "%s:%u: model: expected {\"model\": 16 hex digits} alone on "
                                      "the first line, found %.60s", path, line_no, found ? found : "other");
            free(found);
            return st;
        }
        em->replay_identified = true;
        return KR_OK;
    }
    if (em->replay_saw_end)
        return kr__fail(KR_ERR_CORRUPT, "%s:%u: expected nothing after the end record, found another record", path,
                        line_no);
    json_t *time = json_object_get(j, "time"), *after = json_object_get(j, "after");
    json_t *event = json_object_get(j, "event"), *data = json_object_get(j, "data"), *to = json_object_get(j, "to");
    json_t *peer = json_object_get(j, "peer");
    json_t *stop = json_object_get(j, "stop"), *end_rec = json_object_get(j, "end");
    if (!(time || after || event || peer || end_rec || json_object_get(j, "out") || json_object_get(j, "skipped")))
        return not_a_record(j, path, line_no);
    const char *flag = stop && !json_is_boolean(stop) ? "stop" : end_rec && !json_is_boolean(end_rec) ? "end" : NULL;
    if (flag) return kr__fail(KR_ERR_CORRUPT, "%s:%u: %s: expected true or false, found another value", path,
                              line_no, flag);
    const char *field = !json_is_integer(time) || json_integer_value(time) < 0     ? "time"
                        : !json_is_integer(after) || json_integer_value(after) < 0 ? "after"
                                                                                   : NULL;
    if (field) {
        json_t *v = json_object_get(j, field);
        char *found = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        kr_status_t st = kr__fail(KR_ERR_CORRUPT, "%s:%u: %s: expected a whole number of %s from 0 to 2^63 - 1, "
                                  "found %.40s", path, line_no, field, field[0] == 't' ? "ticks" : "events",
                                  found ? found : "none");
        free(found);
        return st;
    }
    bool input = json_is_string(event) && json_string_length(event) > 0 && (!to || json_is_string(to));
    bool end = json_is_true(end_rec);
    bool other = json_object_get(j, "out") || json_is_string(json_object_get(j, "skipped")) || json_is_string(peer) ||
                 end;
    if (end) em->replay_saw_end = true;
    if (!(input || other)) return not_a_record(j, path, line_no);
    kr_time_t t = (kr_time_t)json_integer_value(time);
    uint64_t n = (uint64_t)json_integer_value(after);
    if (input) {
        char *dump = json_dumps(data ? data : json_null(), JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        if (!dump) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory reading %s", s->name, path);
        kr_status_t st = replay_add(s, em, t, n, json_string_value(event), to ? json_string_value(to) : "", dump, path,
                                    line_no);
        free(dump);
        return st;
    }
    if (json_is_string(peer) && json_is_true(stop))
        return replay_add(s, em, t, n, "", "", "null", path, line_no);
    return KR_OK;
}

static kr_status_t load_replay(kr_sim_t *s, kr__emulation_t *em, const char *path)
{
    bool odd;
    FILE *f = kr__fopen_regular(path, &odd);
    if (odd)
        return kr__fail(KR_ERR_IO, "emulation '%s': replay log %s: expected a regular file, found another kind",
                        s->name, path);
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
        json_t *j = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &err);
        st = j ? replay_record(s, em, j, path, line_no)
               : kr__fail(KR_ERR_CORRUPT, "%s:%u: column %d: expected one JSON object a line, found %s", path, line_no,
                          err.column, err.text);
        json_decref(j);
    }
    free(buf);
    fclose(f);
    return st;
}

/* Is this the same file as that one (so that logging would overwrite the
 * log being replayed)? */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) || stat(b, &sb)) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

kr_status_t kr__emulation_create(kr_sim_t *s, const kr_emulation_desc_t *d)
{
    kr__emulation_t *em = calloc(1, sizeof *em);
    if (!em) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
    s->emu = em;
    em->link = (kr__link_t){ .listen_fd = -1, .in_fd = -1, .out_fd = -1, .in_flags = -1 };
    em->log_fd = -1;
    em->log_hash = KR__FNV_START;
    kr_emulation_desc_t desc = d ? *d : (kr_emulation_desc_t){ .input_fd = -1 };
    if (!(desc.speed >= 0) || !isfinite(desc.speed))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': speed must be a positive number", s->name);
    em->speed = desc.speed > 0 ? desc.speed : 1.0;
    em->custom_clock = desc.clock != NULL;
    em->clock = desc.clock ? *desc.clock : (kr_clock_t){ real_now, real_wait, NULL };
    if (!em->clock.now_ns || !em->clock.wait_ns)
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': a clock needs now_ns and wait_ns", s->name);
    em->on_input = desc.on_input;
    em->on_line = desc.on_line;
    em->on_arrival = desc.on_arrival;
    bool handler = desc.on_input || desc.on_line;
    int fd = handler || desc.input_fd > 0 ? desc.input_fd : -1;
    kr_status_t st = kr__link_init(&em->link, &desc.link, fd, s->name);
    if (st) return st;
    if (desc.replay_path) {
        em->replaying = true;
        if (!(em->replay_path = strdup(desc.replay_path)))
            return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
        if ((st = load_replay(s, em, desc.replay_path))) return st;
    }
    /* Logging a replay into the log it replays would overwrite it. */
    if (desc.log_path && !(desc.replay_path && same_file(desc.log_path, desc.replay_path)) &&
        !(em->log_path = strdup(desc.log_path)))
        return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
    if (!(em->line = malloc(LINE_BUFFER))) return kr__fail(KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
    /* What the files' kinds already tell is refused here, with the
     * simulator's entry named (kr__emulation_prepare opens them later). */
    if (!em->replaying && (st = kr__link_check(&em->link, s->name))) return st;
    struct stat sb;
    if (em->log_path && stat(em->log_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return kr__fail(KR_ERR_INVALID_ARG, "emulation '%s': the log %s is a folder, not a file", s->name,
                        em->log_path);
    return KR_OK;
}

void kr__emulation_fini(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (!em) return;
    kr__link_close(&em->link);
    if (em->log) fclose(em->log);
    if (em->log_fd >= 0) close(em->log_fd);
    if (em->log_made) unlink(em->log_path); /* (made in the setup of a run that never started) */
    free(em->log_path);
    free(em->replay_path);
    for (size_t i = 0; i < em->replay_count; i++) free(em->replay[i].text);
    free(em->replay);
    free(em->line);
    free(em);
    s->emu = NULL;
}

kr_status_t kr__model_identify(kr_model_t *m, uint64_t identity, uint64_t also)
{
    for (uint32_t i = 0; i < m->sim_count; i++) {
        kr_sim_t *s = m->sims[i];
        kr__emulation_t *em = s->local ? s->emu : NULL;
        if (!em) continue;
        em->identity = identity;
        em->identified = true;
        if (em->replaying && em->replay_identified && em->replay_identity != identity && em->replay_identity != also)
            return kr__fail(KR_ERR_MISMATCH, "emulation '%s': the replay log %s was written by another model or seed "
                            "(its model %016llx, this one %016llx; kairos validate prints a model's identity digest)",
                            s->name, em->replay_path, (unsigned long long)em->replay_identity,
                            (unsigned long long)identity);
    }
    return KR_OK;
}

kr_status_t kr_emulation_handlers(kr_sim_t *s, kr_input_line_fn on_line, kr_arrival_fn on_arrival)
{
    if (!s || !s->emu) return kr__fail(KR_ERR_INVALID_ARG, "kr_emulation_handlers: '%s' is not an emulation simulator "
                                       "of this process", s ? s->name : "(null)");
    if (on_line) s->emu->on_line = on_line;
    if (on_arrival) s->emu->on_arrival = on_arrival;
    return KR_OK;
}

kr_emulation_counts_t kr_emulation_counts(const kr_sim_t *s)
{
    return s && s->emu ? s->emu->counts : (kr_emulation_counts_t){ 0 };
}

static void note_peer(kr_sim_t *s, kr_time_t t, const char *what, const char *why, bool stop);
static kr_time_t input_time(kr_sim_t *s);

static void announce(void *arg, const char *what, bool notable)
{
    kr_sim_t *s = arg;
    kr_log(s, notable ? KR_LOG_WARN : KR_LOG_INFO, "%s", what);
}

kr_status_t kr__emulation_prepare(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (em->prepared) return KR_OK;
    kr_status_t st = KR_OK;
    if (em->log_path && em->resume_log) {
        FILE *f = open_kept_log(s, em, false); /* (checked only: it is cut when the run starts) */
        if (!f) return kr_last_status();
        fclose(f);
    } else if (em->log_path && (st = open_new_log(s, em))) {
        return st;
    }
    if (!em->replaying && (st = kr__link_check(&em->link, s->name))) return st;
    em->prepared = true;
    return KR_OK;
}

/* The log, when the run starts: a new one emptied and begun with the
 * model's identity, or the kept one cut back to the checkpoint's length. */
static kr_status_t start_log(kr_sim_t *s, kr__emulation_t *em)
{
    if (em->resume_log) return resume_log(s, em);
    struct stat sb;
    if (fstat(em->log_fd, &sb) || (S_ISREG(sb.st_mode) && ftruncate(em->log_fd, 0)) ||
        !(em->log = fdopen(em->log_fd, "w")))
        return kr__fail(KR_ERR_IO, "emulation '%s': cannot write log %s: %s", s->name, em->log_path, strerror(errno));
    em->log_fd = -1;
    em->log_made = false;
    if (em->identified) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)em->identity);
        json_t *rec = json_pack("{s:s}", "model", hex);
        log_json(em, rec);
        json_decref(rec);
    }
    return KR_OK;
}

kr_status_t kr__emulation_open(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    kr_status_t st = kr__emulation_prepare(s);
    if (st) return st;
    /* A replay opens no link: no outside system takes part. */
    if (!em->replaying && (st = kr__link_open(&em->link, s->name, s->model->rank, announce, s))) return st;
    return KR_OK;
}

/* More wall time to the end than this is worth a warning: 30 days. */
#define WALL_WARN_SECONDS (30.0 * 86400)

kr_status_t kr__emulation_begin(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    kr_status_t st;
    if (em->log_path && (st = start_log(s, em))) return st;
    if (em->replaying) em->link.ended = true;
    /* the clock starts once the peer the run waited for is there */
    em->start_ns = em->clock.now_ns(em->clock.arg);
    bool networked = em->link.kind == KR_LINK_LISTEN || em->link.kind == KR_LINK_CONNECT;
    if (!em->replaying && networked && kr__link_connected(&em->link)) note_peer(s, input_time(s), "connected", NULL, false);
    /* A speed that puts the end out of reach is most likely a slip (1e-3
     * for 1e3): say so, since such a run shows no progress (its model time
     * hardly moves, and safe points need it to). */
    double units_left = kr_time_to_units(s->model->end_time - s->now, s->model->precision);
    double wall = units_left / em->speed;
    if (!em->replaying && !em->custom_clock && wall > WALL_WARN_SECONDS)
        kr_log(s, KR_LOG_WARN, "at speed %g (model units a second) the end time %g is %.3g s of wall time away (%.3g "
               "days)", em->speed, kr_time_to_units(s->model->end_time, s->model->precision), wall, wall / 86400);
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

/* Where input becomes events: at the clock's reading, never before the
 * simulator's current time. */
static kr_time_t input_time(kr_sim_t *s)
{
    kr_time_t t = clock_ticks(s);
    return t < s->now ? s->now : t;
}

static void inject(kr_sim_t *s, kr_time_t t, char *text)
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
    kr__rec_extra_t *x = kr__rec_extra(s, r);
    if (x) x->text = text;
    else free(text);
    if (!x || kr__rec_enqueue(s, slot)) {
        kr__rec_free(s, slot);
        kr__model_fail(m, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name);
        return;
    }
    s->emu->backlog++;
}

/* Input refused, in the log and (the first times, then rarely) the run's
 * log: a flood of bad lines must not become a flood of warnings. */
/* At most cap - 1 bytes of text from the wire, printable ASCII kept and
 * every other byte (a control character, a byte of UTF-8 or of anything
 * else) shown as '?': neither the terminal nor the log takes the peer's
 * escape sequences. */
static void printable(char *out, size_t cap, const char *text, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n && m + 1 < cap; i++) out[m++] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    out[m] = 0;
}

/* A refused line: counted, warned about (the first ten, then each
 * tenfold) and logged, both at the simulator's time now. */
static void skip(kr_sim_t *s, const char *reason, const char *line, size_t n)
{
    kr__emulation_t *em = s->emu;
    uint64_t k = ++em->counts.skipped;
    char why[256], shown[201];
    printable(why, sizeof why, reason, strlen(reason));
    printable(shown, sizeof shown, line, n);
    /* the first ten, then each tenfold: a flood of garbage gives a line
     * per power of ten, not one per thousand lines */
    uint64_t p = 10;
    while (p < k && p <= UINT64_MAX / 10) p *= 10;
    if (k <= 10 || k == p)
        kr_log(s, KR_LOG_WARN, "input skipped (%llu so far): %s: %.80s%s", (unsigned long long)k, why, shown,
               n > 80 ? "..." : "");
    if (!em->log) return;
    json_t *rec = json_pack("{s:I, s:I, s:s, s:s}", "time", (json_int_t)s->now, "after", (json_int_t)s->executed,
                            "skipped", why, "line", shown);
    log_json(em, rec);
    json_decref(rec);
}

void kr_emulation_skip(kr_sim_t *s, const char *reason, const char *line)
{
    if (!s || !s->emu) return;
    skip(s, reason ? reason : "refused", line ? line : "", line ? strlen(line) : 0);
}

static void note_peer(kr_sim_t *s, kr_time_t t, const char *what, const char *why, bool stop)
{
    kr__emulation_t *em = s->emu;
    if (!strcmp(what, "connected")) em->counts.peers++;
    /* (a stop is at the clock's reading, which the log records and a
     * replay repeats: the message says when) */
    char at[64] = "";
    if (stop) snprintf(at, sizeof at, "; the run stops at %.15g", kr_time_to_units(t, s->model->precision));
    kr_log(s, stop || !strcmp(what, "gone") ? KR_LOG_WARN : KR_LOG_INFO, "peer %s%s%s%s%s", what, why ? " (" : "",
           why ? why : "", why ? ")" : "", at);
    json_t *rec = json_pack("{s:I, s:I, s:s}", "time", (json_int_t)t, "after", (json_int_t)s->executed, "peer", what);
    if (rec && why) json_object_set_new(rec, "reason", json_string(why));
    if (rec && stop) json_object_set_new(rec, "stop", json_true());
    log_json(em, rec);
    json_decref(rec);
}

static void take_line(kr_sim_t *s, const char *line, size_t n)
{
    kr__emulation_t *em = s->emu;
    kr_model_t *m = s->model;
    json_error_t err;
    /* (any JSON value, so that `5` is told apart from what is not JSON; a
     * key given twice would otherwise be taken with its last value) */
    json_t *j = json_loadb(line, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    json_t *event = j ? json_object_get(j, "event") : NULL;
    json_t *data = j ? json_object_get(j, "data") : NULL;
    json_t *to = j ? json_object_get(j, "to") : NULL;
    const char *why = !j && json_error_code(&err) == json_error_duplicate_key ? "a key given twice"
                    : !j ? "not JSON" : !json_is_object(j) ? "not a JSON object"
                    : !json_is_string(event) || !json_string_length(event) ? "no \"event\" name"
                    : to && !json_is_string(to) ? "\"to\" is not a simulator name" : NULL;
    if (!why && (strlen(json_string_value(event)) != json_string_length(event) ||
                 (to && strlen(json_string_value(to)) != json_string_length(to))))
        why = "a name holds a NUL character";
    /* A misspelt key ("dat") would otherwise send the event with no data. */
    char unknown[96];
    const char *key;
    json_t *value;
    if (!why) json_object_foreach(j, key, value) {
        if (!strcmp(key, "event") || !strcmp(key, "to") || !strcmp(key, "data")) continue;
        snprintf(unknown, sizeof unknown, "the unknown key \"%.40s\" (expected event, to and data)", key);
        why = unknown;
        break;
    }
    if (why) {
        skip(s, why, line, n);
        json_decref(j);
        return;
    }
    kr_time_t t = input_time(s);
    if (t > m->end_time) {
        skip(s, "after the end time", line, n);
        json_decref(j);
        return;
    }
    char *dump = json_dumps(data ? data : json_null(), JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    size_t len = 0;
    char *text = dump ? make_text(json_string_value(event), to ? json_string_value(to) : "", dump, &len) : NULL;
    if (text && em->log) {
        json_t *rec = json_pack("{s:I, s:I, s:s}", "time", (json_int_t)t, "after", (json_int_t)s->executed,
                                "event", json_string_value(event));
        if (rec && to) json_object_set(rec, "to", to);
        if (rec) json_object_set(rec, "data", data ? data : json_null());
        log_json(em, rec);
        json_decref(rec);
    }
    free(dump);
    json_decref(j);
    if (!text) { kr__model_fail(m, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name); return; }
    em->counts.lines_in++;
    inject(s, t, text);
}

/* The peer left: say so, and stop the run if the model file asked. */
static void peer_gone(kr_sim_t *s, const char *why)
{
    kr__emulation_t *em = s->emu;
    bool stop = em->link.stop_when_gone;
    /* one reading of the clock: the log must say when the stop is */
    kr_time_t t = input_time(s);
    note_peer(s, t, "gone", why, stop);
    if (stop) {
        size_t len;
        char *text = make_text("", "", "null", &len);
        if (!text) { kr__model_fail(s->model, KR_ERR_NOMEM, "emulation '%s': out of memory", s->name); return; }
        inject(s, t, text);
        kr__link_close(&em->link);
        em->link.ended = true;
    }
    if (em->link.ended) em->news = true;
}

/* Splits what was read into lines. A line longer than the bound is
 * skipped to its end however long it is, with only the bound held. */
static void skip_long(kr_sim_t *s, const char *line, size_t n)
{
    char reason[80];
    snprintf(reason, sizeof reason, "longer than %u bytes", KR_EMULATION_MAX_LINE);
    skip(s, reason, line, n);
}

/* Takes every whole line in the buffer. A line longer than the limit is
 * skipped whether its newline came in the same read or not (the buffer
 * holds a read's worth beyond the limit, so a whole line may be longer). */
static void split_lines(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    size_t start = 0;
    for (;;) {
        char *nl = memchr(em->line + start, '\n', em->line_len - start);
        if (!nl) break;
        size_t i = (size_t)(nl - em->line);
        if (em->discarding) em->discarding = false;
        else if (i - start > KR_EMULATION_MAX_LINE) skip_long(s, em->line + start, i - start);
        else if (i > start && !(i - start == 1 && em->line[start] == '\r')) take_line(s, em->line + start, i - start);
        start = i + 1;
    }
    memmove(em->line, em->line + start, em->line_len - start);
    em->line_len -= start;
    if (em->line_len > KR_EMULATION_MAX_LINE || (em->discarding && em->line_len)) {
        if (!em->discarding) skip_long(s, em->line, em->line_len);
        em->discarding = true;
        em->line_len = 0;
    }
}

static void replay_due(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    while (em->replay_next < em->replay_count && em->replay[em->replay_next].after == s->executed) {
        replay_line_t *l = &em->replay[em->replay_next++];
        if (l->time < s->now || l->time > s->model->end_time) {
            uint64_t p = s->model->precision;
            if (l->time > s->model->end_time)
                kr__model_fail(s->model, KR_ERR_CORRUPT, "emulation '%s': replay log %s:%u: time: expected at most "
                               "this run's end time %.15g, found %.15g: replay it up to the live run's end time",
                               s->name, em->replay_path, l->line_no, kr_time_to_units(s->model->end_time, p),
                               kr_time_to_units(l->time, p));
            else
                kr__model_fail(s->model, KR_ERR_CORRUPT, "emulation '%s': replay log %s:%u: time: expected at least "
                               "%.15g (the simulator's time when the line's 'after' count is reached), found %.15g: "
                               "the log does not fit this run (another model or seed?)", s->name, em->replay_path,
                               l->line_no, kr_time_to_units(s->now, p), kr_time_to_units(l->time, p));
            return;
        }
        /* logged again, as the run it replays logged it */
        if (em->log && l->text[0]) {
            const char *event = l->text, *to = event + strlen(event) + 1, *data = to + strlen(to) + 1;
            json_error_t err;
            json_t *d = json_loads(data, JSON_DECODE_ANY, &err);
            json_t *rec = json_pack("{s:I, s:I, s:s}", "time", (json_int_t)l->time, "after", (json_int_t)l->after,
                                    "event", event);
            if (rec && to[0]) json_object_set_new(rec, "to", json_string(to));
            if (rec) json_object_set_new(rec, "data", d ? d : json_null());
            log_json(em, rec);
            json_decref(rec);
        } else if (em->log) {
            json_t *rec = json_pack("{s:I, s:I, s:s, s:b}", "time", (json_int_t)l->time, "after", (json_int_t)l->after,
                                    "peer", "gone", "stop", 1);
            log_json(em, rec);
            json_decref(rec);
        }
        if (l->text[0]) em->counts.lines_in++;
        inject(s, l->time, l->text);
        l->text = NULL;
    }
}

static void see_clock(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    kr_time_t c = clock_ticks(s);
    if (c > em->clock_seen) {
        em->clock_seen = c;
        em->news = true;
    }
}

bool kr__emulation_take_news(kr_sim_t *s)
{
    bool news = s->emu->news;
    s->emu->news = false;
    return news;
}

/* Counts output lines lost: `refused` just now (the peer not taking them,
 * or the output failed), and those a failed write of the output threw
 * away (kr__link_flush); warns once of a failed output, else at the
 * first drop and every 10,000th. */
static void note_dropped(kr_sim_t *s, uint64_t refused)
{
    kr__emulation_t *em = s->emu;
    kr__link_t *l = &em->link;
    uint64_t lost = l->out_lost + refused, before = em->counts.dropped;
    l->out_lost = 0;
    if (!lost) return;
    em->counts.dropped += lost;
    if (l->out_errno && !em->told_out_error) {
        em->told_out_error = true;
        kr_log(s, KR_LOG_WARN, "the output %s cannot be written (%s): its lines are dropped (they are in the log)",
               l->output_path ? l->output_path : "(standard output)", strerror(l->out_errno));
    } else if (!l->out_errno && (before == 0 || before / 10000 != em->counts.dropped / 10000)) {
        kr_log(s, KR_LOG_WARN, "the peer is not taking output: %llu line%s dropped (they are in the log)",
               (unsigned long long)em->counts.dropped, em->counts.dropped == 1 ? "" : "s");
    }
}

void kr__emulation_poll(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    /* A log that lost a line is no log of the run (and no replay would
     * give the run again): the run fails, as it does when an output
     * cannot be written. */
    if (em->log_errno && !s->model->failure) {
        kr__model_fail(s->model, KR_ERR_IO, "emulation '%s': writing the log %s failed: %s", s->name, em->log_path,
                       strerror(em->log_errno));
        return;
    }
    if (!em->replaying && !em->link.ended) see_clock(s);
    if (em->replaying) {
        replay_due(s);
        return;
    }
    kr__link_t *l = &em->link;
    if (l->out_len) {
        kr__link_flush(l);
        note_dropped(s, 0);
    }
    if (l->ended) return;
    /* Past the end time no line read could run: read none. A sender that
     * outpaced the run could otherwise keep it reading, and logging lines
     * it skips, for as long as it sends. */
    if ((em->clock_seen < s->now ? s->now : em->clock_seen) > s->model->end_time) return;
    if (kr__link_accept(l)) note_peer(s, input_time(s), "connected", NULL, false);
    size_t budget = POLL_BUDGET;
    /* Back-pressure: while KR_EMULATION_BACKLOG lines wait to run, read
     * nothing; the sender's writes then wait in the kernel, and TCP slows
     * a remote sender down. */
    while (kr__link_connected(l) && budget && em->backlog < KR_EMULATION_BACKLOG && !kr_model_failure(s->model)) {
        size_t room = LINE_BUFFER - em->line_len;
        if (room > READ_CHUNK) room = READ_CHUNK;
        const char *why = NULL;
        ssize_t n = kr__link_read(l, em->line + em->line_len, room, &why);
        if (n == 0) break;
        if (n < 0) {
            /* a last line without its newline still counts */
            if (em->line_len && !em->discarding) take_line(s, em->line, em->line_len);
            em->line_len = 0;
            em->discarding = false;
            peer_gone(s, why);
            break;
        }
        em->line_len += (size_t)n;
        budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
        split_lines(s);
    }
}

void kr__emulation_end(kr_sim_t *s)
{
    /* A run that reached its end says so last: a log without this record
     * is of a run that was interrupted or failed (a replay of it warns).
     * Written where the coordinator ends a run that reached its end, not
     * when the simulator is torn down, which a failed run's is too. */
    kr__emulation_t *em = s->emu;
    if (!em->log || em->end_logged) return;
    em->end_logged = true;
    json_t *rec = json_pack("{s:I, s:I, s:b}", "time", (json_int_t)s->now, "after", (json_int_t)s->executed, "end", 1);
    log_json(em, rec);
    json_decref(rec);
}

bool kr__emulation_replay_unended(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (!em->replaying || em->replay_saw_end || em->end_warned) return false;
    em->end_warned = true;
    return true;
}

bool kr__emulation_replay_waiting(const kr_sim_t *s, unsigned *line, uint64_t *after)
{
    const kr__emulation_t *em = s->emu;
    if (!em->replaying || em->replay_next == em->replay_count || em->replay[em->replay_next].after <= s->executed)
        return false;
    *line = em->replay[em->replay_next].line_no;
    *after = em->replay[em->replay_next].after;
    return true;
}

size_t kr__emulation_leftover(const kr_sim_t *s, kr_time_t *first)
{
    const kr__emulation_t *em = s->emu;
    if (!em->replaying || em->replay_next == em->replay_count) return 0;
    *first = em->replay[em->replay_next].time;
    return em->replay_count - em->replay_next;
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
    } else if (!em->link.ended) {
        kr_time_t c = em->clock_seen < s->now ? s->now : em->clock_seen;
        if (c < t) t = c;
    }
    return t;
}

/* The clock is waited for up to the end time, or up to a cut (a safe
 * point, a checkpoint, a frame: kr__run_limit) while one is set: input
 * stamped before the cut must be in before the run may stop there. */
static kr_time_t wait_limit(const kr_model_t *m)
{
    return m->cut && m->cut - 1 < m->end_time ? m->cut : m->end_time;
}

bool kr__emulation_waiting(kr_sim_t *s)
{
    kr__emulation_t *em = s->emu;
    if (em->replaying) return false;
    kr__event_rec_t *h = kr__sim_head(s);
    /* past a stop horizon (stop.c) nothing more runs: nothing to wait for */
    bool pending = h && h->time <= s->model->end_time && h->time < s->stop_horizon &&
                   !(h->flags & KR__EVREC_AWAITING);
    /* Input may still come while the clock, as the guarantees last saw
     * it, is short of the limit: until they have seen it pass, others may
     * be held below the limit by them. */
    bool open = !em->link.ended;
    return (pending && !kr__emulation_ready(s, h->time)) ||
           (open && em->clock_seen < wait_limit(s->model) && em->clock_seen + 1 < s->stop_horizon);
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
        kr_time_t t = h && h->time <= wait_limit(m) ? h->time : wait_limit(m);
        /* Its clock is a guarantee to the simulators it sends to, even with
         * no event of its own due: wake at least every half of its
         * smallest promise, so that they follow the clock that closely. */
        kr_time_t step = KR_TIME_NEVER;
        for (uint32_t k = 0; k < s->out_count; k++) {
            kr_time_t p = m->edges[s->out_edges[k]].promise;
            if (p / 2 < step) step = p / 2;
        }
        if (step < KR_TIME_NEVER) {
            kr_time_t c = clock_ticks(s);
            kr_time_t soon = kr__time_add(c > s->now ? c : s->now, step ? step : 1);
            if (soon < t) t = soon;
        }
        uint64_t d = deadline_of(s, t);
        if (!first || d < deadline) {
            first = s;
            deadline = d;
        }
    }
    if (!first) return;
    /* Held by its inputs rather than its clock: the deadline has passed, so
     * wait a millisecond for the clock (and the guarantees it moves). */
    kr__emulation_t *em = first->emu;
    uint64_t now = em->clock.now_ns(em->clock.arg);
    if (deadline <= now) deadline = now + 1000000;
    /* With the backlog full, input is not read: waiting on it would not wait. */
    int fd = em->backlog < KR_EMULATION_BACKLOG ? kr__link_wait_fd(&em->link) : -1;
    em->clock.wait_ns(em->clock.arg, deadline, fd);
    for (uint32_t i = 0; i < m->sim_count; i++)
        if (m->sims[i]->emu && !m->sims[i]->emu->replaying && !m->sims[i]->emu->link.ended) see_clock(m->sims[i]);
}

void kr__emulation_run_input(kr_sim_t *s, kr__event_rec_t *r)
{
    kr__emulation_t *em = s->emu;
    if (em->backlog) em->backlog--;
    kr__rec_extra_t *x = kr__rec_extra_peek(s, r);
    if (!x || !x->text) return;
    /* on_input may schedule events, which may move the side table */
    char *text = x->text;
    x->text = NULL;
    kr_input_t in = { .event = text };
    in.to = in.event + strlen(in.event) + 1;
    in.data_json = in.to + strlen(in.to) + 1;
    if (!in.event[0]) kr_sim_stop(s);
    else if (em->on_line) em->on_line(s, &in);
    else if (em->on_input) em->on_input(s, in.event, in.data_json);
    else kr_log(s, KR_LOG_WARN, "input event '%s' has no on_input handler", in.event);
    free(text);
}

bool kr__emulation_arrival(kr_sim_t *s, kr_event_type_t type, uint32_t from, const void *data)
{
    if (!s->emu || !s->emu->on_arrival) return false;
    s->emu->on_arrival(s, type, from, data);
    return true;
}

kr_status_t kr_emulation_send(kr_sim_t *s, const char *text)
{
    if (!s || !s->emu || !text)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_emulation_send: '%s' is not an emulation simulator of this process",
                        s ? s->name : "(null)");
    kr__emulation_t *em = s->emu;
    size_t len = strlen(text);
    json_error_t err;
    json_t *j = memchr(text, '\n', len) ? NULL : json_loadb(text, len, JSON_DECODE_ANY, &err);
    if (!j) return kr__fail(KR_ERR_INVALID_ARG, "kr_emulation_send: '%s': expected one line of JSON, found %.60s",
                            s->name, text);
    json_decref(j);
    em->counts.lines_out++;
    if (em->log) {
        char head[64];
        int n = snprintf(head, sizeof head, "{\"time\":%llu,\"after\":%llu,\"out\":", (unsigned long long)s->now,
                         (unsigned long long)s->executed);
        fwrite(head, 1, (size_t)n, em->log);
        em->log_hash = kr__fnv1a(em->log_hash, head, (size_t)n);
        em->log_bytes += (uint64_t)n;
        char *rest = malloc(len + 2);
        if (rest) {
            memcpy(rest, text, len);
            rest[len] = '}';
            log_text(em, rest, len + 1);
            free(rest);
        }
    }
    if (em->replaying || em->link.out_fd < 0) return KR_OK;
    note_dropped(s, !kr__link_send(&em->link, text, len));
    return KR_OK;
}

/* A checkpoint holds the events input became (they are in the queue), how
 * far a replay got and how long the log was, with its hash; on a restart
 * the clock goes on from the cut, paced from the moment the restarted run
 * begins, and the log from that length. Input read but not yet a whole
 * line, and output the peer had not taken, are not kept: a reconnecting
 * peer starts afresh. */
/* The counts go on across a restart, so that a restarted run reports
 * what the run that never stopped would (docs/emulation.md). */
void kr__emulation_save(kr_sim_t *s, kr_buf_t *b)
{
    const kr__emulation_t *em = s->emu;
    kr_emulation_counts_t c = em ? em->counts : (kr_emulation_counts_t){ 0 };
    kr_buf_put_u64(b, em ? em->replay_next : 0);
    kr_buf_put_u64(b, em && em->log ? em->log_bytes : 0);
    kr_buf_put_u64(b, em && em->log ? em->log_hash : KR__FNV_START);
    kr_buf_put_u64(b, c.lines_in);
    kr_buf_put_u64(b, c.lines_out);
    kr_buf_put_u64(b, c.skipped);
    kr_buf_put_u64(b, c.dropped);
    kr_buf_put_u64(b, c.peers);
}

kr_status_t kr__emulation_load(kr_sim_t *s, kr_reader_t *r, kr_time_t cut)
{
    uint64_t next = kr_reader_u64(r), log_bytes = kr_reader_u64(r), log_hash = kr_reader_u64(r);
    kr_emulation_counts_t c = { 0 };
    c.lines_in = kr_reader_u64(r);
    c.lines_out = kr_reader_u64(r);
    c.skipped = kr_reader_u64(r);
    c.dropped = kr_reader_u64(r);
    c.peers = kr_reader_u64(r);
    if (!s->emu) return next || log_bytes || c.lines_in || c.lines_out || c.skipped || c.dropped || c.peers
                            ? kr__fail(KR_ERR_CORRUPT, "simulator '%s': its saved state is an emulation's", s->name)
                            : KR_OK;
    kr__emulation_t *em = s->emu;
    em->counts = c;
    if (next > (em->replaying ? em->replay_count : 0))
        return kr__fail(KR_ERR_CORRUPT, "emulation '%s': the checkpoint has replayed %llu lines, its replay log has "
                        "%zu", s->name, (unsigned long long)next, em->replaying ? em->replay_count : (size_t)0);
    em->replay_next = (size_t)next;
    em->clock_base = cut;
    /* A checkpoint without a log starts the log afresh. */
    if (log_bytes) {
        em->resume_log = true;
        em->log_bytes = log_bytes;
        em->log_hash = log_hash;
    }
    return KR_OK;
}
