/* Channels and resources (kairos/channel.h): adding, connecting, opening,
 * sending, the exact order of every callback (ERS's example among
 * them), re-entrant callbacks, destroy, packs, and every refusal with its
 * message. Callbacks are logged as text, "Resource 1.output_ready(Channel
 * 1)", so an order is asserted as one string. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

/* ---- the recording behavior -------------------------------------------- */

static char logbuf[1 << 16];
static size_t logn;
static bool logging = true;

/* Optional action after a callback is logged; tests set it. */
typedef void (*hook_fn)(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b);
static hook_fn hook;

static const char *nm(const kr_world_t *w, kr_entity_t e)
{
    static char buf[4][32];
    static int k;
    const char *n = e && kr_entity_alive(w, e) ? kr_entity_name(w, e) : NULL;
    if (n) return n;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "#%llu", (unsigned long long)e);
    return buf[k];
}

static void rec(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    if (logging) {
        char line[256];
        if (b)
            snprintf(line, sizeof line, "%s%s.%s(%s, %s)", logn ? "; " : "", nm(w, self), cb, nm(w, a), nm(w, b));
        else
            snprintf(line, sizeof line, "%s%s.%s(%s)", logn ? "; " : "", nm(w, self), cb, nm(w, a));
        size_t len = strlen(line);
        cr_assert_lt(logn + len, sizeof logbuf, "log overflow");
        memcpy(logbuf + logn, line, len + 1);
        logn += len;
    }
    if (hook) hook(w, self, cb, a, b);
}

static void clear_log(void) { logn = 0; logbuf[0] = '\0'; }

static void r_entering(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "entering", a, 0); }
static void r_entered(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "entered", a, 0); }
static void r_exiting(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "exiting", a, 0); }
static void r_exited(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "exited", a, 0); }
static void r_in_ready(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "input_ready", a, 0); }
static void r_out_ready(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a) { (void)st; rec(w, s, "output_ready", a, 0); }
static void r_destroy(kr_world_t *w, kr_entity_t s, void *st) { (void)st; rec(w, s, "destroy", 0, 0); }
static void r_receive(kr_world_t *w, kr_entity_t s, void *st, kr_entity_t a, kr_entity_t b)
{
    (void)st;
    cr_assert(b, "on_receive always names the child");
    rec(w, s, "receive", a, b);
}

static const kr_behavior_vtbl_t rec_vtbl = {
    .on_destroy = r_destroy, .on_entering = r_entering, .on_entered = r_entered, .on_exiting = r_exiting, .on_exited = r_exited,
    .on_input_channel_ready = r_in_ready, .on_output_channel_ready = r_out_ready, .on_receive = r_receive,
};

static kr_registry_t *reg;
static kr_world_t *W;
static kr_component_t REC;

static void setup(void)
{
    clear_log();
    hook = NULL;
    logging = true;
    reg = kr_registry_create();
    cr_assert_not_null(reg);
    REC = kr_behavior_register(reg, &(kr_behavior_desc_t){ .name = "rec", .vtbl = &rec_vtbl });
    cr_assert_neq(REC, KR_COMPONENT_NONE, "%s", kr_last_error());
    W = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    cr_assert_not_null(W);
}

static void teardown(void)
{
    hook = NULL;
    kr_world_destroy(W);
    kr_registry_destroy(reg);
}

TestSuite(channel, .init = setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------ */

static kr_entity_t named(const char *name, kr_entity_t parent)
{
    kr_entity_t e = kr_entity_create_desc(W, &(kr_entity_desc_t){ .name = name, .parent = parent });
    cr_assert(e, "%s", kr_last_error());
    return e;
}

/* A resource with the recording behavior. */
static kr_entity_t resource(const char *name)
{
    kr_entity_t e = named(name, 0);
    cr_assert_eq(kr_resource_add(W, e), KR_OK, "%s", kr_last_error());
    cr_assert_not_null(kr_component_add(W, e, REC), "%s", kr_last_error());
    return e;
}

static kr_entity_t channel(const char *name, kr_channel_kind_t kind, kr_entity_t res)
{
    kr_entity_t c = named(name, 0);
    cr_assert_eq(kr_channel_add(W, c, kind, res), KR_OK, "%s", kr_last_error());
    return c;
}

static void expect_log(const char *want)
{
    cr_assert_str_eq(logbuf, want, "\n got: %s\nwant: %s", logbuf, want);
}

/* The last error has this status and its message contains every fragment. */
static void expect_error(kr_status_t st, const char *frag1, const char *frag2)
{
    cr_assert_eq(kr_last_status(), st, "status %s, want %s (%s)", kr_status_str(kr_last_status()),
                 kr_status_str(st), kr_last_error());
    cr_assert(strstr(kr_last_error(), frag1), "'%s' lacks '%s'", kr_last_error(), frag1);
    if (frag2) cr_assert(strstr(kr_last_error(), frag2), "'%s' lacks '%s'", kr_last_error(), frag2);
}

/* Two resources joined by Out (on R1) -> In (on R2), closed. */
typedef struct pair { kr_entity_t r1, r2, out, in; } pair_t;

static pair_t make_pair(void)
{
    pair_t p;
    p.r1 = resource("R1");
    p.r2 = resource("R2");
    p.out = channel("Out", KR_CHANNEL_OUTPUT, p.r1);
    p.in = channel("In", KR_CHANNEL_INPUT, p.r2);
    cr_assert_eq(kr_channel_connect(W, p.out, p.in), KR_OK, "%s", kr_last_error());
    clear_log();
    return p;
}

static void open_pair(pair_t p)
{
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_channel_open(W, p.in), KR_OK, "%s", kr_last_error());
}

/* ---- resources and adding channels --------------------------------------- */

Test(channel, resource_is_a_builtin_tag)
{
    kr_entity_t e = named("E", 0);
    cr_assert_not(kr_component_has(W, e, KR_RESOURCE));
    cr_assert_eq(kr_resource_add(W, e), KR_OK);
    cr_assert(kr_component_has(W, e, KR_RESOURCE));
    cr_assert_eq(kr_resource_add(W, e), KR_ERR_EXISTS);
    expect_error(KR_ERR_EXISTS, "kr_resource_add", "already is a resource");
    /* kr_component_add is the same thing. */
    kr_entity_t f = named("F", 0);
    cr_assert_not_null(kr_component_add(W, f, KR_RESOURCE));
    cr_assert_eq(kr_resource_inputs(W, f, NULL, 0), 0);
    cr_assert_eq(kr_channel_add(W, named("C", 0), KR_CHANNEL_INPUT, f), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_resource_inputs(W, f, NULL, 0), 1);
    /* Refusals. */
    cr_assert_neq(kr_resource_add(NULL, e), KR_OK);
    expect_error(KR_ERR_INVALID_ARG, "kr_resource_add", "null world");
    kr_entity_t dead = named("dead", 0);
    kr_entity_destroy(W, dead);
    cr_assert_eq(kr_resource_add(W, dead), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_resource_add(W, KR_ENTITY_INVALID), KR_ERR_STALE_ENTITY);
}

Test(channel, add_makes_a_closed_unconnected_last_child)
{
    kr_entity_t r = resource("R");
    kr_entity_t first = named("first", r);
    clear_log();
    kr_entity_t in1 = named("In1", 0);
    cr_assert_eq(kr_channel_add(W, in1, KR_CHANNEL_INPUT, r), KR_OK);
    expect_log("R.entered(In1)");
    kr_entity_t out1 = channel("Out1", KR_CHANNEL_OUTPUT, r);
    kr_entity_t in2 = channel("In2", KR_CHANNEL_INPUT, r);
    /* A channel that already was a child moves to the end. */
    kr_entity_t out2 = named("Out2", r);
    kr_entity_t last = named("last", r);
    cr_assert_eq(kr_channel_add(W, out2, KR_CHANNEL_OUTPUT, r), KR_OK);
    cr_assert_eq(kr_entity_last_child(W, r), out2);
    cr_assert_eq(kr_entity_next_sibling(W, last), out2);
    cr_assert_eq(kr_entity_first_child(W, r), first);

    cr_assert(kr_component_has(W, in1, KR_CHANNEL));
    cr_assert_eq(kr_entity_parent(W, in1), r);
    cr_assert_eq(kr_channel_kind(W, in1), KR_CHANNEL_INPUT);
    cr_assert_eq(kr_channel_kind(W, out1), KR_CHANNEL_OUTPUT);
    cr_assert_eq(kr_channel_resource(W, in1), r);
    cr_assert_not(kr_channel_is_open(W, in1));
    cr_assert_not(kr_channel_is_ready(W, in1));
    cr_assert_eq(kr_channel_peer(W, in1), KR_ENTITY_INVALID);
    const kr_channel_t *v = kr_component_get(W, in1, KR_CHANNEL);
    cr_assert_eq(v->kind, KR_CHANNEL_INPUT);
    cr_assert_eq(v->resource, r);
    cr_assert_eq(v->peer, KR_ENTITY_INVALID);
    cr_assert_not(v->open);

    /* The resource's lists, in child order, with the total count. */
    kr_entity_t got[4] = { 0 };
    cr_assert_eq(kr_resource_inputs(W, r, got, 4), 2);
    cr_assert(got[0] == in1 && got[1] == in2);
    cr_assert_eq(kr_resource_outputs(W, r, got, 4), 2);
    cr_assert(got[0] == out1 && got[1] == out2);
    memset(got, 0, sizeof got);
    cr_assert_eq(kr_resource_outputs(W, r, got, 1), 2, "the count exceeds cap");
    cr_assert(got[0] == out1 && got[1] == 0, "only cap entries are written");
    /* Reordering children reorders the lists. */
    cr_assert_eq(kr_entity_insert_before(W, in2, r, in1), KR_OK);
    cr_assert_eq(kr_resource_inputs(W, r, got, 4), 2);
    cr_assert(got[0] == in2 && got[1] == in1);
}

Test(channel, add_refusals_have_messages)
{
    kr_entity_t r = resource("R");
    kr_entity_t plain = named("plain", 0);
    kr_entity_t c = named("C", 0);
    kr_entity_t dead = named("dead", 0);
    kr_entity_destroy(W, dead);

    cr_assert_eq(kr_channel_add(NULL, c, KR_CHANNEL_INPUT, r), KR_ERR_INVALID_ARG);
    expect_error(KR_ERR_INVALID_ARG, "kr_channel_add", "null world");
    cr_assert_eq(kr_channel_add(W, dead, KR_CHANNEL_INPUT, r), KR_ERR_STALE_ENTITY);
    expect_error(KR_ERR_STALE_ENTITY, "kr_channel_add", "destroyed");
    cr_assert_eq(kr_channel_add(W, c, KR_CHANNEL_INPUT, dead), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_channel_add(W, c, KR_CHANNEL_INPUT, KR_ENTITY_INVALID), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_channel_add(W, c, (kr_channel_kind_t)7, r), KR_ERR_INVALID_ARG);
    expect_error(KR_ERR_INVALID_ARG, "kind 7", NULL);
    cr_assert_eq(kr_channel_add(W, c, KR_CHANNEL_KIND_NONE, r), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_channel_add(W, r, KR_CHANNEL_INPUT, r), KR_ERR_INVALID_ARG);
    expect_error(KR_ERR_INVALID_ARG, "channel of itself", NULL);
    cr_assert_eq(kr_channel_add(W, c, KR_CHANNEL_INPUT, plain), KR_ERR_NO_COMPONENT);
    expect_error(KR_ERR_NO_COMPONENT, "not a resource", NULL);
    /* c is an ancestor of the resource r2. */
    kr_entity_t r2 = resource("R2");
    cr_assert_eq(kr_entity_set_parent(W, r2, c), KR_OK);
    cr_assert_eq(kr_channel_add(W, c, KR_CHANNEL_INPUT, r2), KR_ERR_CYCLE);
    expect_error(KR_ERR_CYCLE, "ancestor", NULL);
    /* Nothing above changed c. */
    cr_assert_not(kr_component_has(W, c, KR_CHANNEL));
    cr_assert_eq(kr_entity_parent(W, c), KR_ENTITY_INVALID);

    kr_entity_t ok = channel("ok", KR_CHANNEL_OUTPUT, r);
    cr_assert_eq(kr_channel_add(W, ok, KR_CHANNEL_INPUT, r), KR_ERR_EXISTS);
    expect_error(KR_ERR_EXISTS, "already is a channel", NULL);
    cr_assert_eq(kr_channel_kind(W, ok), KR_CHANNEL_OUTPUT, "the refusal left it as it was");

    /* Lists of a non-resource. */
    cr_assert_eq(kr_resource_inputs(W, plain, NULL, 0), 0);
    expect_error(KR_ERR_NO_COMPONENT, "kr_resource_inputs", "not a resource");
    cr_assert_eq(kr_resource_outputs(W, dead, NULL, 0), 0);
    expect_error(KR_ERR_STALE_ENTITY, "kr_resource_outputs", NULL);
    cr_assert_eq(kr_resource_outputs(W, r, NULL, 3), 0);
    expect_error(KR_ERR_INVALID_ARG, "out is NULL", NULL);
}

Test(channel, queries_refuse_non_channels)
{
    kr_entity_t plain = named("plain", 0);
    /* KR_CHANNEL added by hand has no kind: not a channel for the API. */
    kr_entity_t forged = named("forged", 0);
    cr_assert_not_null(kr_component_add(W, forged, KR_CHANNEL));
    kr_entity_t dead = named("dead", 0);
    kr_entity_destroy(W, dead);
    kr_entity_t ids[] = { plain, forged };
    for (size_t i = 0; i < 2; i++) {
        kr_clear_error();
        cr_assert_not(kr_channel_is_open(W, ids[i]));
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_is_open", "not a channel");
        cr_assert_not(kr_channel_is_ready(W, ids[i]));
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_is_ready", "not a channel");
        cr_assert_eq(kr_channel_peer(W, ids[i]), KR_ENTITY_INVALID);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_peer", "not a channel");
        cr_assert_eq(kr_channel_resource(W, ids[i]), KR_ENTITY_INVALID);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_resource", "not a channel");
        cr_assert_eq(kr_channel_kind(W, ids[i]), KR_CHANNEL_KIND_NONE);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_kind", "not a channel");
        cr_assert_eq(kr_channel_open(W, ids[i]), KR_ERR_NO_COMPONENT);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_open", "not a channel");
        cr_assert_eq(kr_channel_close(W, ids[i]), KR_ERR_NO_COMPONENT);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_close", "not a channel");
        cr_assert_eq(kr_channel_disconnect(W, ids[i]), KR_ERR_NO_COMPONENT);
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_disconnect", "not a channel");
        cr_assert_not(kr_channel_send(W, ids[i], plain));
        expect_error(KR_ERR_NO_COMPONENT, "kr_channel_send", "not a channel");
    }
    cr_assert_not(kr_channel_is_open(W, dead));
    expect_error(KR_ERR_STALE_ENTITY, "kr_channel_is_open", NULL);
    cr_assert_eq(kr_channel_kind(NULL, plain), KR_CHANNEL_KIND_NONE);
    expect_error(KR_ERR_INVALID_ARG, "kr_channel_kind", "null world");
    cr_assert_eq(kr_channel_open(NULL, plain), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_channel_close(NULL, plain), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_channel_connect(NULL, plain, plain), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_channel_disconnect(NULL, plain), KR_ERR_INVALID_ARG);
    cr_assert_not(kr_channel_send(NULL, plain, plain));
    expect_error(KR_ERR_INVALID_ARG, "kr_channel_send", "null world");
    cr_assert_eq(kr_resource_inputs(NULL, plain, NULL, 0), 0);
    expect_error(KR_ERR_INVALID_ARG, "kr_resource_inputs", "null world");
}

/* ---- connecting --------------------------------------------------------- */

Test(channel, connect_one_output_to_one_input)
{
    kr_entity_t r1 = resource("R1"), r2 = resource("R2");
    kr_entity_t out = channel("Out", KR_CHANNEL_OUTPUT, r1), out2 = channel("Out2", KR_CHANNEL_OUTPUT, r1);
    kr_entity_t in = channel("In", KR_CHANNEL_INPUT, r2), in2 = channel("In2", KR_CHANNEL_INPUT, r2);
    kr_entity_t plain = named("plain", 0);
    clear_log();

    cr_assert_eq(kr_channel_connect(W, in, out), KR_ERR_INVALID_ARG);
    expect_error(KR_ERR_INVALID_ARG, "kr_channel_connect", "must be an output");
    cr_assert_eq(kr_channel_connect(W, out, out2), KR_ERR_INVALID_ARG);
    expect_error(KR_ERR_INVALID_ARG, "must be an input", NULL);
    cr_assert_eq(kr_channel_connect(W, out, plain), KR_ERR_NO_COMPONENT);
    expect_error(KR_ERR_NO_COMPONENT, "not a channel", NULL);
    cr_assert_eq(kr_channel_peer(W, out), KR_ENTITY_INVALID, "failed connects connect nothing");

    cr_assert_eq(kr_channel_connect(W, out, in), KR_OK);
    cr_assert_eq(kr_channel_peer(W, out), in);
    cr_assert_eq(kr_channel_peer(W, in), out);
    expect_log("");
    /* One to one. */
    cr_assert_eq(kr_channel_connect(W, out, in2), KR_ERR_EXISTS);
    expect_error(KR_ERR_EXISTS, "output channel", "already connected");
    cr_assert_eq(kr_channel_connect(W, out2, in), KR_ERR_EXISTS);
    expect_error(KR_ERR_EXISTS, "input channel", "already connected");
    cr_assert_eq(kr_channel_connect(W, out, in), KR_ERR_EXISTS);
    cr_assert_eq(kr_channel_peer(W, in2), KR_ENTITY_INVALID);

    /* Disconnect from either end; a second disconnect is refused. */
    cr_assert_eq(kr_channel_disconnect(W, in), KR_OK);
    cr_assert_eq(kr_channel_peer(W, out), KR_ENTITY_INVALID);
    cr_assert_eq(kr_channel_peer(W, in), KR_ENTITY_INVALID);
    cr_assert_eq(kr_channel_disconnect(W, out), KR_ERR_STATE);
    expect_error(KR_ERR_STATE, "kr_channel_disconnect", "not connected");
    cr_assert_eq(kr_channel_connect(W, out, in2), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_channel_connect(W, out2, in), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_channel_peer(W, in2), out);
    cr_assert_eq(kr_channel_peer(W, in), out2);
    expect_log("");
}

Test(channel, a_one_sided_peer_is_no_peer)
{
    pair_t p = make_pair();
    kr_entity_t r3 = resource("R3");
    kr_entity_t in3 = channel("In3", KR_CHANNEL_INPUT, r3);
    /* A direct write claims Out from In3's side only. */
    ((kr_channel_t *)kr_component_get(W, in3, KR_CHANNEL))->peer = p.out;
    cr_assert_eq(kr_channel_peer(W, in3), KR_ENTITY_INVALID);
    cr_assert_eq(kr_channel_open(W, in3), KR_OK);
    open_pair(p);
    cr_assert_not(kr_channel_is_ready(W, in3));
    cr_assert(kr_channel_is_ready(W, p.out));
    cr_assert_eq(kr_channel_connect(W, p.out, in3), KR_ERR_EXISTS);
    /* In3 may still connect to a free output; its stale field is overwritten. */
    kr_entity_t out3 = channel("Out3", KR_CHANNEL_OUTPUT, r3);
    cr_assert_eq(kr_channel_connect(W, out3, in3), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_channel_peer(W, in3), out3);
}

/* ---- open, close, ready ------------------------------------------------- */

Test(channel, ready_needs_connection_and_both_ends_open)
{
    pair_t p = make_pair();
    cr_assert_not(kr_channel_is_ready(W, p.out));
    cr_assert_eq(kr_channel_open(W, p.in), KR_OK);
    cr_assert(kr_channel_is_open(W, p.in));
    cr_assert_not(kr_channel_is_open(W, p.out));
    cr_assert_not(kr_channel_is_ready(W, p.in));
    expect_log("");
    /* The second end makes the pair ready: output side first. */
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    cr_assert(kr_channel_is_ready(W, p.in));
    cr_assert(kr_channel_is_ready(W, p.out));
    expect_log("R1.output_ready(Out); R2.input_ready(In)");
    /* Opening an open end does nothing. */
    clear_log();
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    cr_assert_eq(kr_channel_open(W, p.in), KR_OK);
    expect_log("");
    /* Closing fires nothing; reopening makes it ready again. */
    cr_assert_eq(kr_channel_close(W, p.out), KR_OK);
    cr_assert_not(kr_channel_is_ready(W, p.in));
    cr_assert_eq(kr_channel_close(W, p.out), KR_OK, "closing a closed channel is fine");
    expect_log("");
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    expect_log("R1.output_ready(Out); R2.input_ready(In)");
    /* Disconnecting an open pair: not ready, nothing fires. */
    clear_log();
    cr_assert_eq(kr_channel_disconnect(W, p.out), KR_OK);
    cr_assert_not(kr_channel_is_ready(W, p.out));
    cr_assert(kr_channel_is_open(W, p.out), "disconnect keeps the ends open");
    expect_log("");
    /* Connecting two open ends makes the pair ready at once. */
    cr_assert_eq(kr_channel_connect(W, p.out, p.in), KR_OK);
    expect_log("R1.output_ready(Out); R2.input_ready(In)");
}

Test(channel, ready_needs_both_resources)
{
    pair_t p = make_pair();
    open_pair(p);
    kr_entity_t elsewhere = named("elsewhere", 0);
    clear_log();
    /* A channel moved away from its resource has none. */
    cr_assert_eq(kr_entity_set_parent(W, p.in, elsewhere), KR_OK);
    cr_assert_eq(kr_channel_resource(W, p.in), KR_ENTITY_INVALID);
    cr_assert_not(kr_channel_is_ready(W, p.out));
    cr_assert_eq(kr_resource_inputs(W, p.r2, NULL, 0), 0, "only the resource's children are listed");
    kr_entity_t child = named("child", p.r1);
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "kr_channel_send", "peer without a resource");
    /* Back home: ready (no callbacks: the hierarchy does not fire them). */
    cr_assert_eq(kr_entity_set_parent(W, p.in, p.r2), KR_OK);
    cr_assert(kr_channel_is_ready(W, p.out));
    cr_assert_eq(kr_channel_resource(W, p.in), p.r2);
    /* A resource that loses its tag holds no channels. */
    cr_assert_eq(kr_component_remove(W, p.r1, KR_RESOURCE), KR_OK);
    cr_assert_not(kr_channel_is_ready(W, p.in));
    cr_assert_eq(kr_channel_resource(W, p.out), KR_ENTITY_INVALID);
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "kr_channel_send", "has no resource");
    cr_assert_eq(kr_entity_parent(W, child), p.r1);
    clear_log();
    cr_assert_eq(kr_resource_add(W, p.r1), KR_OK);
    cr_assert(kr_channel_is_ready(W, p.in));
    expect_log("");
}

/* ---- sending ------------------------------------------------------------ */

Test(channel, send_refusals_have_messages_and_change_nothing)
{
    pair_t p = make_pair();
    kr_entity_t child = named("child", p.r1);
    kr_entity_t grandchild = named("grandchild", child);
    kr_entity_t stranger = named("stranger", 0);
    kr_entity_t dead = named("dead", p.r1);
    kr_entity_destroy(W, dead);
    kr_entity_t lonely = channel("Lonely", KR_CHANNEL_OUTPUT, p.r1);
    clear_log();

    cr_assert_not(kr_channel_send(W, lonely, child));
    expect_error(KR_ERR_STATE, "kr_channel_send", "is not connected");
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "output channel", "is closed");
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "closed peer", NULL);
    cr_assert_eq(kr_channel_close(W, p.out), KR_OK);
    cr_assert_eq(kr_channel_open(W, p.in), KR_OK);
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "is closed", NULL);
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    clear_log();

    cr_assert_not(kr_channel_send(W, p.in, child));
    expect_error(KR_ERR_INVALID_ARG, "is an input", NULL);
    cr_assert_not(kr_channel_send(W, p.out, dead));
    expect_error(KR_ERR_STALE_ENTITY, "kr_channel_send", "destroyed");
    cr_assert_not(kr_channel_send(W, p.out, KR_ENTITY_INVALID));
    expect_error(KR_ERR_STALE_ENTITY, "kr_channel_send", NULL);
    cr_assert_not(kr_channel_send(W, p.out, grandchild));
    expect_error(KR_ERR_INVALID_ARG, "not a child of the sending resource", NULL);
    cr_assert_not(kr_channel_send(W, p.out, stranger));
    expect_error(KR_ERR_INVALID_ARG, "not a child of the sending resource", NULL);
    cr_assert_not(kr_channel_send(W, p.out, p.r1));
    expect_error(KR_ERR_INVALID_ARG, "not a child", NULL);
    cr_assert_not(kr_channel_send(W, p.out, lonely));
    expect_error(KR_ERR_INVALID_ARG, "is a channel", NULL);
    cr_assert_not(kr_channel_send(W, p.out, p.out));
    expect_error(KR_ERR_INVALID_ARG, "is a channel", NULL);
    /* The receiver inside the child: sending it would make a cycle. */
    kr_entity_t tote = named("tote", p.r1);
    cr_assert_eq(kr_entity_set_parent(W, p.r2, tote), KR_OK);
    clear_log();
    cr_assert_not(kr_channel_send(W, p.out, tote));
    expect_error(KR_ERR_CYCLE, "receiving resource", "ancestors");
    cr_assert_eq(kr_entity_set_parent(W, p.r2, KR_ENTITY_INVALID), KR_OK);
    clear_log();

    expect_log("");
    cr_assert_eq(kr_entity_parent(W, child), p.r1);
    cr_assert_eq(kr_entity_parent(W, grandchild), child);
    cr_assert_eq(kr_entity_parent(W, stranger), KR_ENTITY_INVALID);
    cr_assert(kr_channel_send(W, p.out, child), "%s", kr_last_error());
    cr_assert_eq(kr_entity_parent(W, child), p.r2);
    cr_assert_eq(kr_entity_parent(W, grandchild), child, "the child's subtree travels with it");
}

/* ERS's code example, step by step, with every callback in order. */
Test(channel, seed_example_exact_order)
{
    kr_entity_t resource1 = named("Resource 1", 0), resource2 = named("Resource 2", 0);
    cr_assert_eq(kr_component_add(W, resource1, KR_RESOURCE) != NULL, true);
    cr_assert_not_null(kr_component_add(W, resource1, REC));
    cr_assert_eq(kr_resource_add(W, resource2), KR_OK);
    cr_assert_not_null(kr_component_add(W, resource2, REC));

    kr_entity_t channel1 = named("Channel 1", 0), channel2 = named("Channel 2", 0);
    cr_assert_eq(kr_channel_add(W, channel1, KR_CHANNEL_OUTPUT, resource1), KR_OK);
    cr_assert_eq(kr_channel_add(W, channel2, KR_CHANNEL_INPUT, resource2), KR_OK);
    cr_assert_eq(kr_channel_connect(W, channel1, channel2), KR_OK);

    kr_entity_t child = named("Child", 0);
    cr_assert_not_null(kr_component_add(W, child, REC));
    cr_assert_eq(kr_entity_set_parent(W, child, resource1), KR_OK);
    expect_log("Resource 1.entered(Channel 1); Resource 2.entered(Channel 2); "
               "Child.entering(Resource 1); Resource 1.entered(Child)");

    /* Execution. */
    clear_log();
    cr_assert_eq(kr_channel_open(W, channel1), KR_OK);
    expect_log("");
    cr_assert_eq(kr_channel_open(W, channel2), KR_OK);
    /* Child's parent is still Resource 1; callback 2 fires on Resource 1,
     * callback 1 on Resource 2. */
    cr_assert_eq(kr_entity_parent(W, child), resource1);
    expect_log("Resource 1.output_ready(Channel 1); Resource 2.input_ready(Channel 2)");

    clear_log();
    cr_assert(kr_channel_send(W, channel1, child), "%s", kr_last_error());
    /* Child's parent is now Resource 2; callback 3 fired on Resource 2 after
     * the hierarchy callbacks, and the pair, still ready, fired again. */
    cr_assert_eq(kr_entity_parent(W, child), resource2);
    expect_log("Child.exiting(Resource 2); Child.entering(Resource 2); "
               "Resource 1.exited(Child); Resource 2.entered(Child); "
               "Resource 2.receive(Channel 2, Child); "
               "Resource 1.output_ready(Channel 1); Resource 2.input_ready(Channel 2)");
    cr_assert(kr_channel_is_ready(W, channel1));
}

static kr_entity_t hook_in;

static void close_input_on_receive(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)self; (void)a; (void)b;
    if (!strcmp(cb, "receive")) cr_assert_eq(kr_channel_close(w, hook_in), KR_OK);
}

Test(channel, no_ready_again_when_the_receiver_closes)
{
    pair_t p = make_pair();
    kr_entity_t child = named("child", p.r1);
    open_pair(p);
    hook_in = p.in;
    hook = close_input_on_receive;
    clear_log();
    cr_assert(kr_channel_send(W, p.out, child), "%s", kr_last_error());
    expect_log("R1.exited(child); R2.entered(child); R2.receive(In, child)");
    cr_assert_not(kr_channel_is_ready(W, p.out));
    kr_entity_t next = named("next", p.r1);
    cr_assert_not(kr_channel_send(W, p.out, next));
    expect_error(KR_ERR_STATE, "closed peer", NULL);
}

Test(channel, loopback_on_one_resource)
{
    kr_entity_t r = resource("R");
    kr_entity_t a = named("a", r);
    kr_entity_t out = channel("Out", KR_CHANNEL_OUTPUT, r), in = channel("In", KR_CHANNEL_INPUT, r);
    kr_entity_t b = named("b", r);
    cr_assert_eq(kr_channel_connect(W, out, in), KR_OK);
    cr_assert_eq(kr_channel_open(W, out), KR_OK);
    clear_log();
    cr_assert_eq(kr_channel_open(W, in), KR_OK);
    expect_log("R.output_ready(Out); R.input_ready(In)");
    clear_log();
    cr_assert(kr_channel_send(W, out, a), "%s", kr_last_error());
    /* Same parent: a moves to the end, no hierarchy callbacks. */
    expect_log("R.receive(In, a); R.output_ready(Out); R.input_ready(In)");
    cr_assert_eq(kr_entity_last_child(W, r), a);
    cr_assert_eq(kr_entity_prev_sibling(W, a), b);
}

/* ---- re-entrancy -------------------------------------------------------- */

static kr_entity_t hook_out;
static int out_ready_depth, out_ready_max_depth;
static size_t out_ready_calls;

/* The usual server: on_output_channel_ready sends the first item it holds. */
static void send_first_item(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)b;
    if (strcmp(cb, "output_ready")) return;
    out_ready_calls++;
    if (++out_ready_depth > out_ready_max_depth) out_ready_max_depth = out_ready_depth;
    for (kr_entity_t c = kr_entity_first_child(w, self); c; c = kr_entity_next_sibling(w, c)) {
        if (kr_component_has(w, c, KR_CHANNEL)) continue;
        cr_assert(kr_channel_send(w, a, c), "%s", kr_last_error());
        break;
    }
    out_ready_depth--;
}

Test(channel, sending_from_output_ready_exact_order)
{
    pair_t p = make_pair();
    named("x", p.r1);
    named("y", p.r1);
    clear_log();
    hook = send_first_item;
    cr_assert_eq(kr_channel_open(W, p.out), KR_OK);
    cr_assert_eq(kr_channel_open(W, p.in), KR_OK);
    /* Each send completes inside the callback; the ready callbacks it earns
     * fire after that callback has returned, queued behind the pending
     * input_ready. */
    expect_log("R1.output_ready(Out); R1.exited(x); R2.entered(x); R2.receive(In, x); "
               "R2.input_ready(In); "
               "R1.output_ready(Out); R1.exited(y); R2.entered(y); R2.receive(In, y); "
               "R2.input_ready(In); "
               "R1.output_ready(Out); R2.input_ready(In)");
    cr_assert_eq(out_ready_max_depth, 1);
    cr_assert_eq(kr_entity_child_count(W, p.r2), 3, "In, x, y");
}

Test(channel, a_long_queue_drains_without_recursion)
{
    enum { N = 100000 };
    pair_t p = make_pair();
    kr_entity_t *items = malloc(N * sizeof *items);
    logging = false;
    for (size_t i = 0; i < N; i++) items[i] = kr_entity_create_desc(W, &(kr_entity_desc_t){ .parent = p.r1 });
    hook = send_first_item;
    out_ready_calls = 0;
    out_ready_max_depth = 0;
    open_pair(p);
    cr_assert_eq(out_ready_calls, N + 1);
    cr_assert_eq(out_ready_max_depth, 1, "callbacks did not nest");
    cr_assert_eq(kr_entity_child_count(W, p.r1), 1, "only Out is left");
    cr_assert_eq(kr_entity_child_count(W, p.r2), N + 1);
    /* In order: In first, then the items as they were sent. */
    kr_entity_t c = kr_entity_next_sibling(W, kr_entity_first_child(W, p.r2));
    for (size_t i = 0; i < N; i++, c = kr_entity_next_sibling(W, c)) cr_assert_eq(c, items[i]);
    free(items);
}

/* A sender that is already empty when the callbacks run closes its output:
 * the queued input_ready of that pair is dropped. */
static void close_output_on_ready(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)self; (void)b;
    if (!strcmp(cb, "output_ready")) cr_assert_eq(kr_channel_close(w, a), KR_OK);
}

Test(channel, notifications_of_a_pair_no_longer_ready_are_dropped)
{
    pair_t p = make_pair();
    hook = close_output_on_ready;
    open_pair(p);
    expect_log("R1.output_ready(Out)");
    cr_assert_not(kr_channel_is_ready(W, p.in));
}

/* A pass-through: R2 forwards what it receives to R3 from on_receive. */
static void forward_on_receive(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)a;
    if (strcmp(cb, "receive") || self != kr_entity_find(w, "R2")) return;
    cr_assert(kr_channel_send(w, hook_out, b), "%s", kr_last_error());
}

Test(channel, forwarding_from_on_receive)
{
    pair_t p = make_pair();
    kr_entity_t r3 = resource("R3");
    kr_entity_t out2 = channel("Out2", KR_CHANNEL_OUTPUT, p.r2);
    kr_entity_t in3 = channel("In3", KR_CHANNEL_INPUT, r3);
    cr_assert_eq(kr_channel_connect(W, out2, in3), KR_OK);
    cr_assert_eq(kr_channel_open(W, out2), KR_OK);
    cr_assert_eq(kr_channel_open(W, in3), KR_OK);
    open_pair(p);
    kr_entity_t item = named("item", p.r1);
    hook_out = out2;
    hook = forward_on_receive;
    clear_log();
    cr_assert(kr_channel_send(W, p.out, item), "%s", kr_last_error());
    /* on_receive runs inside each send; the ready callbacks of both pairs
     * wait for the outermost send, in the order they were earned. */
    expect_log("R1.exited(item); R2.entered(item); R2.receive(In, item); "
               "R2.exited(item); R3.entered(item); R3.receive(In3, item); "
               "R2.output_ready(Out2); R3.input_ready(In3); "
               "R1.output_ready(Out); R2.input_ready(In)");
    cr_assert_eq(kr_entity_parent(W, item), r3);
}

/* A hierarchy callback that destroys the child: the send fails. */
static void destroy_on_entering(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)a; (void)b;
    if (!strcmp(cb, "entering")) kr_entity_destroy(w, self);
}

Test(channel, send_fails_when_a_callback_destroys_the_child)
{
    pair_t p = make_pair();
    open_pair(p);
    kr_entity_t child = named("child", p.r1);
    cr_assert_not_null(kr_component_add(W, child, REC));
    hook = destroy_on_entering;
    clear_log();
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STALE_ENTITY, "destroyed by a callback", NULL);
    cr_assert_not(kr_entity_alive(W, child));
    cr_assert(kr_channel_is_ready(W, p.out), "the pair is untouched");
    cr_assert_null(strstr(logbuf, "receive"), "nothing was received: %s", logbuf);
}

/* The sender's on_exited, which fires once the child has moved, destroys
 * it; the receiver's on_entered moves it on: both after a move that
 * succeeded, and the send fails all the same. */
static void destroy_on_exited(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)self; (void)b;
    if (!strcmp(cb, "exited")) kr_entity_destroy(w, a);
}

static kr_entity_t elsewhere;
static void move_on_entered(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)self; (void)b;
    if (!strcmp(cb, "entered") && elsewhere) kr_entity_set_parent(w, a, elsewhere);
}

Test(channel, send_fails_when_a_callback_after_the_move_destroys_or_moves_the_child)
{
    pair_t p = make_pair();
    open_pair(p);
    kr_entity_t child = named("child", p.r1);
    hook = destroy_on_exited;
    clear_log();
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "was destroyed or moved by a hierarchy callback during the send", NULL);
    cr_assert_not(kr_entity_alive(W, child));
    cr_assert_null(strstr(logbuf, "receive"), "nothing was received: %s", logbuf);

    child = named("child2", p.r1);
    elsewhere = named("elsewhere", 0);
    hook = move_on_entered;
    clear_log();
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "was destroyed or moved by a hierarchy callback during the send", NULL);
    cr_assert_eq(kr_entity_parent(W, child), elsewhere);
    cr_assert_null(strstr(logbuf, "receive"), "nothing was received: %s", logbuf);
    elsewhere = 0;
}

/* ---- destroy ------------------------------------------------------------ */

Test(channel, destroying_a_channel_disconnects_its_peer)
{
    pair_t p = make_pair();
    open_pair(p);
    clear_log();
    cr_assert_eq(kr_entity_destroy(W, p.in), KR_OK);
    expect_log("R2.exited(In)");
    cr_assert_eq(kr_channel_peer(W, p.out), KR_ENTITY_INVALID);
    cr_assert_eq(((kr_channel_t *)kr_component_get(W, p.out, KR_CHANNEL))->peer, KR_ENTITY_INVALID,
                 "the stored peer is cleared too");
    cr_assert_not(kr_channel_is_ready(W, p.out));
    kr_entity_t child = named("child", p.r1);
    cr_assert_not(kr_channel_send(W, p.out, child));
    expect_error(KR_ERR_STATE, "not connected", NULL);
    cr_assert_eq(kr_channel_peer(W, p.in), KR_ENTITY_INVALID);
    expect_error(KR_ERR_STALE_ENTITY, "kr_channel_peer", NULL);
    cr_assert_eq(kr_resource_inputs(W, p.r2, NULL, 0), 0);
    /* The output is free again. */
    kr_entity_t in2 = channel("In2", KR_CHANNEL_INPUT, p.r2);
    cr_assert_eq(kr_channel_open(W, in2), KR_OK);
    clear_log();
    cr_assert_eq(kr_channel_connect(W, p.out, in2), KR_OK, "%s", kr_last_error());
    expect_log("R1.output_ready(Out); R2.input_ready(In2)");
}

Test(channel, destroying_a_resource_destroys_its_channels)
{
    pair_t p = make_pair();
    open_pair(p);
    kr_entity_t child = named("child", p.r1);
    clear_log();
    cr_assert_eq(kr_entity_destroy(W, p.r1), KR_OK);
    cr_assert_not(kr_entity_alive(W, p.out));
    cr_assert_not(kr_entity_alive(W, child));
    cr_assert_eq(kr_channel_peer(W, p.in), KR_ENTITY_INVALID);
    cr_assert_not(kr_channel_is_ready(W, p.in));
    cr_assert(kr_channel_is_open(W, p.in));
    expect_log("R1.destroy(#0)");
}

/* A channel's behavior that opens it from on_destroy gets no ready
 * callback: a channel being destroyed, or one whose resource is, is not
 * ready. */
static int dying_checks;

static void open_self_on_destroy(kr_world_t *w, kr_entity_t self, const char *cb, kr_entity_t a, kr_entity_t b)
{
    (void)a; (void)b;
    if (strcmp(cb, "destroy") || !kr_component_has(w, self, KR_CHANNEL)) return;
    dying_checks++;
    cr_assert_not(kr_channel_is_ready(w, self));
    cr_assert_eq(kr_channel_open(w, self), KR_OK, "%s", kr_last_error());
    cr_assert_not(kr_channel_is_ready(w, self));
}

Test(channel, no_ready_callbacks_while_dying)
{
    for (int whole_resource = 0; whole_resource < 2; whole_resource++) {
        pair_t p = make_pair();
        cr_assert_eq(kr_channel_open(W, p.in), KR_OK);
        cr_assert_not_null(kr_component_add(W, p.out, REC));
        hook = open_self_on_destroy;
        dying_checks = 0;
        clear_log();
        cr_assert_eq(kr_entity_destroy(W, whole_resource ? p.r1 : p.out), KR_OK);
        cr_assert_eq(dying_checks, 1);
        cr_assert_null(strstr(logbuf, "ready"), "%s", logbuf);
        cr_assert_eq(kr_channel_peer(W, p.in), KR_ENTITY_INVALID);
        hook = NULL;
        kr_entity_destroy(W, p.r1);
        kr_entity_destroy(W, p.r2);
    }
}

/* ---- packs -------------------------------------------------------------- */

Test(channel, pack_round_trip_keeps_pairs_inside_and_cuts_pairs_outside)
{
    pair_t p = make_pair();
    kr_entity_t lonely_in = channel("LonelyIn", KR_CHANNEL_INPUT, p.r1);
    kr_entity_t r0 = resource("R0");
    kr_entity_t out0 = channel("Out0", KR_CHANNEL_OUTPUT, r0);
    cr_assert_eq(kr_channel_connect(W, out0, lonely_in), KR_OK);
    cr_assert_eq(kr_channel_open(W, lonely_in), KR_OK);
    open_pair(p);
    kr_entity_t item = named("item", p.r1);
    clear_log();

    kr_buf_t buf;
    kr_buf_init(&buf);
    kr_entity_t roots[] = { p.r1, p.r2 };
    cr_assert_eq(kr_pack(W, roots, 2, &buf), KR_OK, "%s", kr_last_error());

    kr_world_t *B = kr_world_create(&(kr_world_desc_t){ .registry = reg });
    kr_entity_t got[2];
    size_t n = 0;
    cr_assert_eq(kr_unpack(B, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = got, .roots_capacity = 2 }, &n,
                           NULL), KR_OK, "%s", kr_last_error());
    kr_buf_fini(&buf);
    cr_assert_eq(n, 2);
    expect_log("");   /* unpacking fires no channel callbacks */

    kr_entity_t r1 = got[0], r2 = got[1];
    cr_assert(kr_component_has(B, r1, KR_RESOURCE));
    cr_assert(kr_component_has(B, r2, KR_RESOURCE));
    kr_entity_t outs[2], ins[2];
    cr_assert_eq(kr_resource_outputs(B, r1, outs, 2), 1);
    cr_assert_eq(kr_resource_inputs(B, r1, ins, 2), 1);
    kr_entity_t out = outs[0], lonely = ins[0];
    cr_assert_eq(kr_resource_inputs(B, r2, ins, 2), 1);
    kr_entity_t in = ins[0];
    cr_assert_str_eq(kr_entity_name(B, out), "Out");
    cr_assert_str_eq(kr_entity_name(B, in), "In");
    /* The pair inside the pack is remapped and still ready. */
    cr_assert_eq(kr_channel_peer(B, out), in);
    cr_assert_eq(kr_channel_peer(B, in), out);
    cr_assert_eq(kr_channel_resource(B, out), r1);
    cr_assert_eq(kr_channel_resource(B, in), r2);
    cr_assert(kr_channel_is_ready(B, out));
    /* The pair cut by the pack is disconnected on arrival; its open flag stays. */
    cr_assert_eq(kr_channel_peer(B, lonely), KR_ENTITY_INVALID);
    cr_assert_eq(((kr_channel_t *)kr_component_get(B, lonely, KR_CHANNEL))->peer, KR_ENTITY_INVALID);
    cr_assert(kr_channel_is_open(B, lonely));
    /* The source world is unchanged. */
    cr_assert_eq(kr_channel_peer(W, lonely_in), out0);
    cr_assert(kr_channel_is_ready(W, p.out));

    /* The unpacked pair works, with its callbacks. */
    kr_entity_t item_b = kr_entity_find(B, "item");
    cr_assert(item_b && item_b != item);
    cr_assert(kr_channel_send(B, out, item_b), "%s", kr_last_error());
    expect_log("R1.exited(item); R2.entered(item); R2.receive(In, item); R1.output_ready(Out); R2.input_ready(In)");
    cr_assert_eq(kr_entity_parent(B, item_b), r2);
    kr_world_destroy(B);
}

Test(channel, pack_of_one_channel_drops_peer_and_resource)
{
    pair_t p = make_pair();
    kr_buf_t buf;
    kr_buf_init(&buf);
    cr_assert_eq(kr_pack(W, &p.out, 1, &buf), KR_OK, "%s", kr_last_error());
    kr_entity_t got = 0;
    cr_assert_eq(kr_unpack(W, buf.data, buf.len, &(kr_unpack_desc_t){ .roots = &got, .roots_capacity = 1 }, NULL,
                           NULL), KR_OK, "%s", kr_last_error());
    kr_buf_fini(&buf);
    const kr_channel_t *v = kr_component_get(W, got, KR_CHANNEL);
    cr_assert_not_null(v);
    cr_assert_eq(v->peer, KR_ENTITY_INVALID);
    cr_assert_eq(v->resource, KR_ENTITY_INVALID);
    cr_assert_eq(kr_channel_kind(W, got), KR_CHANNEL_OUTPUT);
    cr_assert_eq(kr_channel_resource(W, got), KR_ENTITY_INVALID);
    /* The original pair is untouched. */
    cr_assert_eq(kr_channel_peer(W, p.in), p.out);
}
