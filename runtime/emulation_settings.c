/* An emulation entry's settings in a model file (emulation_settings.h).
 *
 *   "emulation": {
 *     "speed": 10,                            model units per wall second (1)
 *     "input": "stdin" | {"pipe": PATH, "output": PATH}
 *            | {"listen": "HOST:PORT" | PORT} | {"connect": "HOST:PORT"},
 *     "wait": 30,                             seconds for a peer (listen, connect)
 *     "on_disconnect": "continue" | "stop",
 *     "log": PATH, "replay": PATH             relative to the model file
 *   }
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "runtime/emulation_settings.h"
#include "runtime/run.h"

#define DEFAULT_WAIT 30.0

static const char *const keys[] = { "speed", "input", "wait", "on_disconnect", "log", "replay", NULL };

static kr_status_t bad(const kr__model_file_t *f, const kr__sim_entry_t *e, const char *key, const char *expected,
                       const json_t *found)
{
    char path[160];
    snprintf(path, sizeof path, "simulators[%zu].emulation%s%s", e->index, key[0] ? "." : "", key);
    return kr__input_error(f->path, path, expected, found);
}

/* "HOST:PORT", "[V6]:PORT" or a bare PORT (then `host` is NULL). */
static bool split_address(const json_t *v, char *host, size_t host_cap, int *port, bool need_host)
{
    /* (a whole number written as a float, 7341.0, is one, as elsewhere in
     * the model file) */
    if (json_is_number(v) && !need_host) {
        double p = json_number_value(v);
        if (!(p >= 0 && p <= 65535) || p != floor(p)) return false;
        host[0] = 0;
        *port = (int)p;
        return true;
    }
    const char *s = json_string_value(v);
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || colon == s) return false;
    const char *h = s, *h_end = colon;
    if (*h == '[') {
        if (h_end[-1] != ']') return false;
        h++;
        h_end--;
    }
    if (h_end <= h || (size_t)(h_end - h) >= host_cap) return false;
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    /* digits only: strtol also takes " +7000" and "-0" */
    if (!isdigit((unsigned char)colon[1]) || *end || errno || p < 0 || p > 65535) return false;
    memcpy(host, h, (size_t)(h_end - h));
    host[h_end - h] = 0;
    *port = (int)p;
    return true;
}

static bool is_path(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) > 0 && strlen(json_string_value(v)) == json_string_length(v);
}

kr_status_t kr__emulation_settings_check(const kr__model_file_t *f, const kr__sim_entry_t *e, json_t *s)
{
    if (e->formalism != KR_EMULATION)
        return bad(f, e, "", "settings of an emulation entry only (this entry's formalism is not emulation)", s);
    if (!json_is_object(s)) return bad(f, e, "", "an object of emulation settings", s);
    char where[64];
    snprintf(where, sizeof where, "simulators[%zu].emulation", e->index);
    kr_status_t st = kr__model_file_check_keys(f, s, keys, where);
    if (st) return st;
    json_t *v;
    if ((v = json_object_get(s, "speed")) && !(json_is_number(v) && json_number_value(v) > 0 &&
                                               isfinite(json_number_value(v))))
        return bad(f, e, "speed", "a number > 0 (model units per wall-clock second)", v);
    json_t *input = json_object_get(s, "input");
    const char *source = NULL;
    if (input) {
        const char *how = "\"stdin\", {\"pipe\": PATH}, {\"listen\": \"HOST:PORT\"} or {\"connect\": \"HOST:PORT\"}";
        if (json_is_string(input)) {
            if (strcmp(json_string_value(input), "stdin")) return bad(f, e, "input", how, input);
            source = "stdin";
        } else if (json_is_object(input) && json_object_size(input) >= 1) {
            static const char *const sources[] = { "pipe", "listen", "connect" };
            for (int i = 0; i < 3; i++)
                if (json_object_get(input, sources[i])) {
                    if (source) return bad(f, e, "input", "one source: pipe, listen or connect", input);
                    source = sources[i];
                }
            if (!source) return bad(f, e, "input", how, input);
            char key[32], host[256];
            int port;
            snprintf(key, sizeof key, "input.%s", source);
            json_t *a = json_object_get(input, source);
            if (!strcmp(source, "pipe")) {
                if (!is_path(a)) return bad(f, e, key, "the path of a named pipe", a);
                json_t *o = json_object_get(input, "output");
                if (o && !is_path(o)) return bad(f, e, "input.output", "the path of a file or named pipe", o);
                if (json_object_size(input) != (o ? 2u : 1u))
                    return bad(f, e, "input", "only \"pipe\" and \"output\" for a named pipe", input);
            } else {
                bool listen = !strcmp(source, "listen");
                if (!split_address(a, host, sizeof host, &port, !listen) || (!listen && port == 0))
                    return bad(f, e, key, listen ? "\"HOST:PORT\" or a port (0: any free port)" : "\"HOST:PORT\"", a);
                if (json_object_size(input) != 1) return bad(f, e, "input", "one key: listen or connect", input);
            }
        } else {
            return bad(f, e, "input", how, input);
        }
        if (e->replicas)
            return bad(f, e, "input", "no input on an entry with a count or regions (each replica would open the "
                       "same source)", input);
    }
    bool networked = source && (!strcmp(source, "listen") || !strcmp(source, "connect"));
    if ((v = json_object_get(s, "wait"))) {
        if (!networked) return bad(f, e, "wait", "a wait only with a listen or connect input", v);
        if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
            return bad(f, e, "wait", "seconds >= 0 to wait for the peer before the run starts", v);
    }
    if ((v = json_object_get(s, "on_disconnect"))) {
        if (!json_is_string(v) || (strcmp(json_string_value(v), "continue") && strcmp(json_string_value(v), "stop")))
            return bad(f, e, "on_disconnect", "\"continue\" or \"stop\"", v);
        if (!source || !strcmp(source, "pipe"))
            return bad(f, e, "on_disconnect", "an input that can disconnect: stdin, listen or connect", v);
    }
    if ((v = json_object_get(s, "log")) && !is_path(v)) return bad(f, e, "log", "a file name", v);
    if (v && e->replicas)
        return bad(f, e, "log", "no log on an entry with a count or regions (each replica would write the same log)",
                   v);
    if ((v = json_object_get(s, "replay")) && !is_path(v)) return bad(f, e, "replay", "the file name of a log", v);
    return KR_OK;
}

kr_status_t kr__emulation_settings_replay(kr__model_file_t *f, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return kr__fail(KR_ERR_INVALID_ARG, "--replay %s: expected NAME=LOG", arg);
    size_t n = (size_t)(eq - arg);
    for (size_t i = 0; i < f->sim_count; i++) {
        kr__sim_entry_t *e = &f->sims[i];
        if (strlen(e->name) != n || strncmp(e->name, arg, n)) continue;
        if (e->formalism != KR_EMULATION)
            return kr__fail(KR_ERR_INVALID_ARG, "--replay %s: expected an emulation simulator of %s, found '%s' "
                            "(%s)", arg, f->path, e->name, kr_formalism_name(e->formalism));
        if (e->replay)
            return kr__fail(KR_ERR_INVALID_ARG, "--replay %s: expected one --replay for '%s', found a second (the "
                            "first: %s)", arg, e->name, e->replay);
        if (!(e->replay = strdup(eq + 1))) return kr__fail(KR_ERR_NOMEM, "out of memory");
        return KR_OK;
    }
    return kr__fail(KR_ERR_INVALID_ARG, "--replay %s: expected the name of an emulation simulator of %s, found "
                    "none named '%.*s'", arg, f->path, (int)n, arg);
}

/* A path of the model file, relative to its folder. */
static char *file_path(const kr__model_file_t *f, const char *p)
{
    if (!p) return NULL;
    if (p[0] == '/' || !strcmp(f->dir, ".")) return strdup(p);
    size_t n = strlen(f->dir) + strlen(p) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s/%s", f->dir, p);
    return out;
}

kr_status_t kr__emulation_settings_desc(const kr__model_file_t *f, const kr__sim_entry_t *e,
                                        kr__emulation_settings_t *s)
{
    *s = (kr__emulation_settings_t){ .desc = { .input_fd = -1 } };
    json_t *j = e->emulation;
    s->desc.speed = json_number_value(json_object_get(j, "speed"));
    s->log = file_path(f, json_string_value(json_object_get(j, "log")));
    /* --replay names its log from the working folder, as every file on the command line */
    s->replay = e->replay ? strdup(e->replay) : file_path(f, json_string_value(json_object_get(j, "replay")));
    json_t *input = json_object_get(j, "input");
    kr_emulation_link_t *l = &s->desc.link;
    l->wait_seconds = json_is_number(json_object_get(j, "wait")) ? json_number_value(json_object_get(j, "wait"))
                                                                  : DEFAULT_WAIT;
    const char *on_disconnect = json_string_value(json_object_get(j, "on_disconnect"));
    l->stop_when_gone = on_disconnect && !strcmp(on_disconnect, "stop");
    char host[256];
    int port = 0;
    json_t *a;
    if (json_is_string(input)) {
        l->kind = KR_LINK_STDIN;
    } else if ((a = json_object_get(input, "pipe"))) {
        l->kind = KR_LINK_PIPE;
        s->pipe = file_path(f, json_string_value(a));
        s->output = file_path(f, json_string_value(json_object_get(input, "output")));
        if (!s->pipe) goto nomem;
    } else if ((a = json_object_get(input, "listen")) || (a = json_object_get(input, "connect"))) {
        bool listen = json_object_get(input, "listen") != NULL;
        l->kind = listen ? KR_LINK_LISTEN : KR_LINK_CONNECT;
        split_address(a, host, sizeof host, &port, !listen);
        if (host[0] && !(s->host = strdup(host))) goto nomem;
        l->port = port;
    }
    if (l->kind != KR_LINK_LISTEN && l->kind != KR_LINK_CONNECT) l->wait_seconds = 0;
    l->path = s->pipe;
    l->output_path = s->output;
    l->host = s->host;
    s->desc.log_path = s->log;
    s->desc.replay_path = s->replay;
    if ((json_object_get(j, "log") && !s->log) || ((e->replay || json_object_get(j, "replay")) && !s->replay))
        goto nomem;
    return KR_OK;
nomem:
    kr__emulation_settings_free(s);
    return kr__fail(KR_ERR_NOMEM, "out of memory");
}

const char *const kr__emulation_file_keys[KR__EMULATION_FILES] = { "log", "input.pipe", "input.output", "replay" };

/* The JSON value that names emulation file k of entry e (borrowed; NULL
 * when absent). */
static json_t *file_value(const kr__sim_entry_t *e, size_t k)
{
    json_t *j = e->emulation;
    if (k == 0) return json_object_get(j, "log");
    if (k == 3) return json_object_get(j, "replay");
    return json_object_get(json_object_get(j, "input"), k == 1 ? "pipe" : "output");
}

char *kr__emulation_file(const kr__model_file_t *f, const kr__sim_entry_t *e, size_t k)
{
    /* (--replay names its log from the working folder) */
    if (k == 3 && e->replay) return strdup(e->replay);
    return file_path(f, json_string_value(file_value(e, k)));
}

kr_status_t kr__emulation_settings_distinct(const kr__model_file_t *f)
{
    typedef struct { char *id; size_t index; const char *key; } seen_t;
    seen_t *seen = NULL;
    size_t count = 0;
    kr_status_t st = KR_OK;
    char *model = kr__out_file_identity(f->path, true);
    for (size_t i = 0; !st && i < f->sim_count; i++) {
        const kr__sim_entry_t *e = &f->sims[i];
        for (size_t k = 0; !st && (e->emulation || e->replay) && k < KR__EMULATION_FILES; k++) {
            char *path = kr__emulation_file(f, e, k);
            char *id = path ? kr__out_file_identity(path, true) : NULL;
            if (!id) {
                free(path);
                continue;
            }
            json_t *given = k == 3 && e->replay ? json_string(e->replay) : json_incref(file_value(e, k));
            free(path);
            char where[96], expected[200] = "";
            if (model && !strcmp(id, model))
                snprintf(expected, sizeof expected, "a file of its own, not the model file");
            /* (a gateway may replay its own log: it then writes none) */
            for (size_t n = 0; !expected[0] && n < count; n++)
                if (!strcmp(id, seen[n].id) && !(seen[n].index == e->index && k == 3 && !strcmp(seen[n].key, "log")))
                    snprintf(expected, sizeof expected, "a file of its own (simulators[%zu].emulation.%s names it too)",
                             seen[n].index, seen[n].key);
            if (expected[0]) {
                snprintf(where, sizeof where, "simulators[%zu].emulation.%s%s", e->index, kr__emulation_file_keys[k],
                         k == 3 && e->replay ? " (--replay)" : "");
                st = kr__input_error(f->path, where, expected, given);
                free(id);
            } else {
                seen_t *grown = realloc(seen, (count + 1) * sizeof *seen);
                if (!grown) { free(id); st = kr__fail(KR_ERR_NOMEM, "out of memory"); break; }
                seen = grown;
                seen[count++] = (seen_t){ id, e->index, kr__emulation_file_keys[k] };
            }
            json_decref(given);
        }
    }
    for (size_t n = 0; n < count; n++) free(seen[n].id);
    free(seen);
    free(model);
    return st;
}

void kr__emulation_settings_free(kr__emulation_settings_t *s)
{
    free(s->log);
    free(s->replay);
    free(s->pipe);
    free(s->output);
    free(s->host);
    *s = (kr__emulation_settings_t){ 0 };
}
