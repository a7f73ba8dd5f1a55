/* Model files through the real runtime (runtime/model_file.h) with the
 * built-in kinds: valid files, --set, count and wildcards, the rank
 * mapping, and one test per kind of bad input, each checking the one-line
 * message "FILE: JSON.PATH: expected ..., found ..." exactly. */
#include "model_text.h"

#define S KR_PRECISION_DEFAULT

TestSuite(model_file, .fini = mt_cleanup);

/* ERS's factory, short. */
#define FACTORY                                                                                       \
    "{'end_time': 100, 'seed': 3, 'description': 'the factory',"                                      \
    " 'simulators': ["                                                                                \
    "  {'name': 'Line', 'kind': 'assembly', 'params': {'to': 'Robots'}},"                             \
    "  {'name': 'Robots', 'kind': 'robots', 'time_step': 1, 'params': {'to': 'Bath'}},"               \
    "  {'name': 'Bath', 'kind': 'bath', 'time_step': 2}],"                                            \
    " 'dependencies': [{'from': 'Line', 'to': 'Robots', 'promise': 0},"                               \
    "                  {'from': 'Robots', 'to': 'Bath', 'promise': 2}]}"

/* Six baths (no params needed) and room for dependencies. */
#define BATHS(deps, extra) \
    "{'end_time': 10, " extra " 'simulators': [{'name': 'b', 'kind': 'bath', 'time_step': 1, 'count': 6}], " \
    "'dependencies': [" deps "]}"

static void expect_load_error(kr__model_file_t *f, const char *jpath, const char *expected, const char *found)
{
    cr_assert_null(f, "the file should be refused");
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
}

/* Loads fine, then build refuses. */
static void expect_build_error(kr__model_file_t *f, const char *jpath, const char *expected, const char *found)
{
    cr_assert(f, "load: %s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert_null(m, "build should fail");
    mt_expect(KR_ERR_INVALID_ARG, jpath, expected, found);
    kr__model_file_free(f);
}

static bool has_dep(const kr__model_file_t *f, const char *from, const char *to, kr_time_t promise)
{
    for (size_t i = 0; i < f->dep_count; i++)
        if (!strcmp(f->sims[f->deps[i].from].name, from) && !strcmp(f->sims[f->deps[i].to].name, to))
            return f->deps[i].promise == promise;
    return false;
}

/* ---- valid files ---- */

Test(model_file, valid_factory_defaults)
{
    kr__model_file_t *f = mt_load(FACTORY, NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->precision, S);
    cr_assert_eq(f->seed, 3);
    cr_assert_eq(f->end_time, 100 * S);
    cr_assert_eq(f->sync, KR_SYNC_AUTO);
    cr_assert_eq(f->mapping, KR__MAP_ROUND_ROBIN);
    cr_assert_eq(f->log_level, KR_LOG_WARN);
    cr_assert_null(f->out_stats);
    cr_assert_null(f->out_event_log);
    cr_assert_null(f->out_trace);
    cr_assert_eq(f->sim_count, 3);
    cr_assert_str_eq(f->sims[0].name, "Line");
    cr_assert_eq(f->sims[0].formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(f->sims[0].time_step, 0);
    cr_assert_eq(f->sims[0].rank, -1);
    cr_assert_eq(f->sims[1].formalism, KR_AGENT_BASED, "the kind's formalism when none is named");
    cr_assert_eq(f->sims[1].time_step, S);
    cr_assert_eq(f->sims[2].formalism, KR_CONTINUOUS);
    cr_assert_eq(f->sims[2].time_step, 2 * S);
    cr_assert(json_is_object(f->sims[2].params) && json_object_size(f->sims[2].params) == 0);
    cr_assert_eq(f->dep_count, 2);
    cr_assert(has_dep(f, "Line", "Robots", 0));
    cr_assert(has_dep(f, "Robots", "Bath", 2 * S));
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_sim_count(m), 3);
    cr_assert_eq(kr_model_promise(m, 1, 2), 2 * S);
    cr_assert_str_eq(kr__model_file_kind(f, 2)->name, "bath");
    cr_assert_eq(kr_model_sync(m), KR_SYNC_AUTO, "before start: what was asked");
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_model_sync(m), KR_SYNC_NULL_MESSAGE, "auto, for 3 groups with 2 edges between them");
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(model_file, valid_every_top_level_field)
{
    kr__model_file_t *f = mt_load("{'precision': 1000, 'seed': 0, 'end_time': 2.5, 'sync': 'window',"
                                 " 'mapping': 'block', 'log_level': 'error', 'description': 'd',"
                                 " 'outputs': {'stats': 's.json', 'event_log': 'ev', 'trace': 't.json'},"
                                 " 'plugins': [],"
                                 " 'simulators': [{'name': 'B', 'kind': 'bath', 'formalism': 'continuous',"
                                 "   'time_step': 0.001, 'params': {'loss': 0.2}, 'rank': 0, 'description': 'x'}],"
                                 " 'dependencies': []}", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->precision, 1000);
    cr_assert_eq(f->end_time, 2500);
    cr_assert_eq(f->sync, KR_SYNC_WINDOW);
    cr_assert_eq(f->mapping, KR__MAP_BLOCK);
    cr_assert_eq(f->log_level, KR_LOG_ERROR);
    cr_assert_str_eq(f->out_stats, "s.json");
    cr_assert_str_eq(f->out_event_log, "ev");
    cr_assert_str_eq(f->out_trace, "t.json");
    cr_assert_eq(f->sims[0].time_step, 1, "0.001 is one tick at precision 1000");
    cr_assert_eq(f->sims[0].rank, 0);
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(model_file, decimal_step_is_whole_ticks)
{
    /* 0.1 is not exact in binary, but 0.1 * 10^6 is a whole number of ticks. */
    kr__model_file_t *f = mt_load(FACTORY, "simulators.Robots.time_step=0.1", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sims[1].time_step, S / 10);
    kr__model_file_free(f);
}

/* ---- --set ---- */

Test(model_file, set_top_level)
{
    kr__model_file_t *f = mt_load(FACTORY, "end_time=20", "seed=9", "sync=window", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->end_time, 20 * S);
    cr_assert_eq(f->seed, 9);
    cr_assert_eq(f->sync, KR_SYNC_WINDOW, "a bare word is a string");
    kr__model_file_free(f);
    f = mt_load(FACTORY, "sync=null-message", NULL);
    cr_assert(f && f->sync == KR_SYNC_NULL_MESSAGE, "%s", kr_last_error());
    kr__model_file_free(f);
    f = mt_load(FACTORY, "sync=window", "sync=auto", NULL);
    cr_assert(f && f->sync == KR_SYNC_AUTO, "%s", kr_last_error());
    kr__model_file_free(f);
}

Test(model_file, set_nested_params_by_name)
{
    /* adds a key to an existing params object, addressed by simulator name */
    kr__model_file_t *f = mt_load(FACTORY, "simulators.Line.params.limit=5", "simulators.Bath.time_step=0.5", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(json_integer_value(json_object_get(f->sims[0].params, "limit")), 5);
    cr_assert_eq(f->sims[2].time_step, S / 2);
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_sim_event_count(kr_model_sim(m, 0)), 5, "five parts made, one event each");
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(model_file, set_by_array_index)
{
    kr__model_file_t *f = mt_load(FACTORY, "dependencies.1.promise=1.5", "simulators.0.params.to=Robots",
                                 "simulators.1.params.delay=3", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert(has_dep(f, "Robots", "Bath", 3 * S / 2));
    cr_assert_eq(json_number_value(json_object_get(f->sims[1].params, "delay")), 3.0);
    kr__model_file_free(f);
}

Test(model_file, set_json_versus_bare_string)
{
    kr__model_file_t *f = mt_load(FACTORY, "description=hello world", "simulators.Line.description=\"42\"",
                                 "simulators.Line.params.interval={\"dist\": \"constant\", \"value\": 3}",
                                 "outputs={\"stats\": \"out.json\"}", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_str_eq(json_string_value(json_object_get(f->root, "description")), "hello world");
    json_t *line = json_array_get(json_object_get(f->root, "simulators"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(line, "description")), "42", "quoted JSON stays a string");
    cr_assert(json_is_object(json_object_get(f->sims[0].params, "interval")));
    cr_assert_str_eq(f->out_stats, "out.json");
    kr__model_file_free(f);

    /* 42 is JSON: a number, refused where a string belongs */
    expect_load_error(mt_load(FACTORY, "description=42", NULL), "description", "a string", "42");
    /* and "5" is a string where a number belongs */
    expect_load_error(mt_load(FACTORY, "seed=\"5\"", NULL), "seed", "a whole number >= 0", "\"5\"");
}

Test(model_file, set_later_wins)
{
    kr__model_file_t *f = mt_load(FACTORY, "seed=1", "seed=2", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->seed, 2);
    kr__model_file_free(f);
}

/* ---- count and wildcards ---- */

Test(model_file, count_expands_names)
{
    kr__model_file_t *f = mt_load(BATHS("", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 6);
    for (size_t i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "b[%zu]", i);
        cr_assert_str_eq(f->sims[i].name, name);
        cr_assert_eq(f->sims[i].index, 0, "every replica comes from entry 0");
    }
    kr__model_file_free(f);
}

Test(model_file, wildcards_expand_without_self_edges)
{
    kr__model_file_t *f = mt_load("{'end_time': 10, 'simulators': ["
                                 " {'name': 'src', 'kind': 'bath', 'time_step': 1},"
                                 " {'name': 'line', 'kind': 'bath', 'time_step': 1, 'count': 3},"
                                 " {'name': 'lines', 'kind': 'bath', 'time_step': 1}],"
                                 " 'dependencies': [{'from': 'src', 'to': 'line[*]', 'promise': 1},"
                                 "  {'from': 'line[*]', 'to': 'line[*]', 'promise': 2},"
                                 "  {'from': 'line[1]', 'to': 'lines', 'promise': 0}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 5);
    cr_assert_eq(f->dep_count, 3 + 6 + 1, "3 from src, 3*2 among the lines (no self edge), 1 explicit");
    for (size_t i = 0; i < f->dep_count; i++) cr_assert_neq(f->deps[i].from, f->deps[i].to);
    cr_assert(has_dep(f, "src", "line[2]", S));
    cr_assert(has_dep(f, "line[2]", "line[0]", 2 * S));
    cr_assert(has_dep(f, "line[1]", "lines", 0));
    cr_assert(!has_dep(f, "src", "lines", S), "'line[*]' does not match 'lines'");
    kr__model_file_free(f);
}

/* A wildcard between the replicas of one entry means "every other
 * replica": with one replica, no edge (and no complaint), also when only
 * one end is a wildcard; towards another simulator it still makes one. */
Test(model_file, wildcard_with_one_replica_is_no_edge)
{
    kr__model_file_t *f = mt_load("{'end_time': 10, 'simulators': ["
                                 " {'name': 'line', 'kind': 'bath', 'time_step': 1, 'count': 1},"
                                 " {'name': 'sink', 'kind': 'bath', 'time_step': 1}],"
                                 " 'dependencies': [{'from': 'line[*]', 'to': 'line[*]', 'promise': 2},"
                                 "  {'from': 'line[*]', 'to': 'line[0]', 'promise': 2},"
                                 "  {'from': 'line[0]', 'to': 'line[*]', 'promise': 2},"
                                 "  {'from': 'line[*]', 'to': 'sink', 'promise': 1}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->sim_count, 2);
    cr_assert_eq(f->dep_count, 1, "only line[0] -> sink");
    cr_assert(has_dep(f, "line[0]", "sink", S));
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
    /* the same file with three replicas: every other one */
    f = mt_load("{'end_time': 10, 'simulators': [{'name': 'line', 'kind': 'bath', 'time_step': 1, 'count': 3}],"
                " 'dependencies': [{'from': 'line[*]', 'to': 'line[1]', 'promise': 2}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->dep_count, 2);
    cr_assert(has_dep(f, "line[0]", "line[1]", 2 * S) && has_dep(f, "line[2]", "line[1]", 2 * S));
    kr__model_file_free(f);
}

/* Limits are checked before expansion (docs/model-file.md, "Limits"). */
Test(model_file, limits_refused_before_expansion)
{
    expect_load_error(mt_load(BATHS("", ""), "simulators.0.count=100001", NULL), "simulators[0].count",
                      "a whole number from 1 to 100000", "100001");
    expect_load_error(mt_load("{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1, "
                              "'count': 99999}, {'name': 'b', 'kind': 'bath', 'time_step': 1},"
                              " {'name': 'c', 'kind': 'bath', 'time_step': 1}]}", NULL),
                      "simulators[2]", "at most 100000 simulators in a model file (100000 before this entry)",
                      "{\"name\":\"c\",\"kind\":\"bath\",\"time_step\":1,\"params\":{}}");
    /* 4000 replicas all to all: 15,996,000 dependencies */
    expect_load_error(mt_load("{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1, "
                              "'count': 4000}], 'dependencies': [{'from': 'a[*]', 'to': 'a[*]', 'promise': 1}]}", NULL),
                      "dependencies[0]", "at most 10000000 dependencies in a model file (0 before, 15996000 more here)",
                      "{\"from\":\"a[*]\",\"to\":\"a[*]\",\"promise\":1}");
    char name[300];
    memset(name, 'n', 234);
    name[234] = 0;
    char text[1200];
    snprintf(text, sizeof text, "{'end_time': 10, 'simulators': [{'name': '%s', 'kind': 'bath', 'time_step': 1}]}",
             name);
    expect_load_error(mt_load(text, NULL), "simulators[0].name", "a name of at most 233 bytes",
                      "\"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...");
    name[233] = 0; /* 233 bytes is fine, and so are its replicas' names */
    snprintf(text, sizeof text, "{'end_time': 10, 'simulators': [{'name': '%s', 'kind': 'bath', 'time_step': 1, "
             "'count': 2}], 'dependencies': [{'from': '%s[*]', 'to': '%s[*]', 'promise': 1}]}", name, name, name);
    kr__model_file_t *f = mt_load(text, NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->dep_count, 2);
    kr__model_file_free(f);
}

Test(model_file, explicit_self_edge_refused)
{
    expect_load_error(mt_load(BATHS("{'from': 'b[1]', 'to': 'b[1]', 'promise': 1}", ""), NULL), "dependencies[0]",
                      "a dependency between two different simulators",
                      "{\"from\":\"b[1]\",\"to\":\"b[1]\",\"promise\":1}");
}

Test(model_file, duplicate_dependency_refused)
{
    expect_load_error(mt_load(BATHS("{'from': 'b[0]', 'to': 'b[1]', 'promise': 1},"
                                    "{'from': 'b[*]', 'to': 'b[1]', 'promise': 2}", ""), NULL),
                      "dependencies[1]", "one dependency b[0] -> b[1] (already declared)",
                      "{\"from\":\"b[*]\",\"to\":\"b[1]\",\"promise\":2}");
}

/* A pair that `regions` makes already: the message says so (it said
 * "already declared", naming nothing the user wrote). */
Test(model_file, dependency_regions_make_refused)
{
    expect_load_error(mt_load("{'end_time': 10, 'simulators': [{'name': 'q', 'kind': 'bath', 'time_step': 1}, "
                              "{'name': 'w', 'kind': 'walkers', 'formalism': 'agent-based', 'time_step': 1, "
                              "'regions': [2, 2]}], 'dependencies': [{'from': 'q', 'to': 'w[0]', 'promise': 1}, "
                              "{'from': 'w[0]', 'to': 'w[3]', 'promise': 2}]}", NULL),
                      "dependencies[1]", "one dependency w[0] -> w[3] (simulators[1].regions makes it, with promise "
                      "= its time_step: neighbouring regions need none declared)",
                      "{\"from\":\"w[0]\",\"to\":\"w[3]\",\"promise\":2}");
}

Test(model_file, wildcard_matching_nothing_refused)
{
    expect_load_error(mt_load(BATHS("{'from': 'c[*]', 'to': 'b[1]', 'promise': 1}", ""), NULL),
                      "dependencies[0].from", "the name of a simulator (or \"name[*]\")", "\"c[*]\"");
}

/* ---- mapping ---- */

static void map(kr__model_file_t *f, int ranks, int *rank_of, kr_status_t want)
{
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_status_t st = kr__model_file_map(f, m, ranks, rank_of);
    cr_assert_eq(st, want, "map: %s", st ? kr_last_error() : "ok");
    kr_model_destroy(m);
}

static void expect_ranks(const int *got, const int *want, size_t n)
{
    for (size_t i = 0; i < n; i++) cr_assert_eq(got[i], want[i], "b[%zu] on rank %d, expected %d", i, got[i], want[i]);
}

Test(model_file, map_round_robin_and_block)
{
    int r[6];
    kr__model_file_t *f = mt_load(BATHS("", ""), NULL);
    cr_assert(f);
    map(f, 2, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 1, 0, 1, 0, 1 }, 6);
    map(f, 1, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 0, 0, 0, 0, 0 }, 6);
    kr__model_file_free(f);
    f = mt_load(BATHS("", "'mapping': 'block',"), NULL);
    cr_assert(f);
    map(f, 2, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 0, 0, 1, 1, 1 }, 6);
    map(f, 4, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 0, 1, 2, 2, 3 }, 6);
    kr__model_file_free(f);
}

Test(model_file, map_pins)
{
    int r[6];
    kr__model_file_t *f = mt_load("{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1, 'count': 3},"
                " {'name': 'p', 'kind': 'bath', 'time_step': 1, 'rank': 2}, {'name': 'q', 'kind': 'bath',"
                " 'time_step': 1, 'rank': 0}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 3, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 1, 2, 2, 0 }, 5);
    kr__model_file_free(f);
}

Test(model_file, map_zero_promise_group_kept_together)
{
    int r[6];
    /* b[1] <-> b[4] with promise 0: one group, on the rank of b[1] */
    kr__model_file_t *f = mt_load(BATHS("{'from': 'b[1]', 'to': 'b[4]', 'promise': 0},"
                                       "{'from': 'b[4]', 'to': 'b[1]', 'promise': 0},"
                                       "{'from': 'b[0]', 'to': 'b[1]', 'promise': 0}", ""), NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 3, r, KR_OK);
    expect_ranks(r, (int[]){ 0, 1, 2, 0, 1, 2 }, 6);
    kr__model_file_free(f);
    /* a pinned member decides for its group */
    f = mt_load("{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1, 'count': 3},"
                " {'name': 'p', 'kind': 'bath', 'time_step': 1, 'rank': 2}],"
                " 'dependencies': [{'from': 'a[0]', 'to': 'p', 'promise': 0}, {'from': 'p', 'to': 'a[0]',"
                " 'promise': 0}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 3, r, KR_OK);
    expect_ranks(r, (int[]){ 2, 1, 2, 2 }, 4);
    kr__model_file_free(f);
}

Test(model_file, map_pin_splitting_group_refused)
{
    int r[6];
    kr__model_file_t *f = mt_load("{'end_time': 10, 'simulators': [{'name': 'p', 'kind': 'bath', 'time_step': 1,"
                                 " 'rank': 0}, {'name': 'q', 'kind': 'bath', 'time_step': 1, 'rank': 1}],"
                                 " 'dependencies': [{'from': 'p', 'to': 'q', 'promise': 0},"
                                 " {'from': 'q', 'to': 'p', 'promise': 0}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 2, r, KR_ERR_INVALID_ARG);
    mt_expect(KR_ERR_INVALID_ARG, "simulators[1].rank",
              "rank 0, where 'p' is pinned (a cycle of zero promises joins them and runs as one loop on one rank)",
              "1");
    kr__model_file_free(f);
}

/* The group's lowest member is free; two others are pinned apart. */
Test(model_file, map_pins_split_group_with_free_lowest_member)
{
    int r[6];
    kr__model_file_t *f = mt_load("{'end_time': 10, 'simulators': [{'name': 'a', 'kind': 'bath', 'time_step': 1},"
                                 " {'name': 'p', 'kind': 'bath', 'time_step': 1, 'rank': 0},"
                                 " {'name': 'q', 'kind': 'bath', 'time_step': 1, 'rank': 1}],"
                                 " 'dependencies': [{'from': 'a', 'to': 'p', 'promise': 0},"
                                 " {'from': 'p', 'to': 'q', 'promise': 0}, {'from': 'q', 'to': 'a', 'promise': 0}]}",
                                 NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 2, r, KR_ERR_INVALID_ARG);
    mt_expect(KR_ERR_INVALID_ARG, "simulators[2].rank",
              "rank 0, where 'p' is pinned (a cycle of zero promises joins them and runs as one loop on one rank)",
              "1");
    kr__model_file_free(f);
}

Test(model_file, map_rank_out_of_range)
{
    int r[6];
    kr__model_file_t *f = mt_load(BATHS("", ""), "simulators.0.rank=3", NULL);
    cr_assert(f, "%s", kr_last_error());
    map(f, 4, r, KR_OK);
    expect_ranks(r, (int[]){ 3, 3, 3, 3, 3, 3 }, 6);
    map(f, 3, r, KR_ERR_INVALID_ARG);
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].rank", "a rank below 3", "3");
    kr__model_file_free(f);
}

/* ---- bad input: one test each ---- */

Test(model_file, bad_unreadable_file)
{
    mt_write("{}");
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.json", mt_dir);
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){ .path = missing,
                                                                    .register_builtin = kr__models_register_builtin });
    cr_assert_null(f);
    cr_assert_eq(kr_last_status(), KR_ERR_IO);
    char want[300];
    snprintf(want, sizeof want, "%s: (file): expected a readable model file, found No such file or directory", missing);
    cr_assert_str_eq(kr_last_error(), want);
}

Test(model_file, bad_truncated_file)
{
    cr_assert_null(mt_load("{'end_time': 10, 'simulators': [{'name': 'b', 'kind'", NULL));
    const char *e = kr_last_error();
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s: line 1 column ", mt_path);
    cr_assert(!strncmp(e, prefix, strlen(prefix)), "%s", e);
    cr_assert(strstr(e, ": expected valid JSON, found "), "%s", e);
    cr_assert_null(strchr(e, '\n'));
}

/* A control character the parser quotes back ("near '\v'") would break
 * the one line: every error keeps to printable characters. */
Test(model_file, bad_json_quoting_a_control_character)
{
    cr_assert_null(mt_load("{\"end_time\": 1\v0, \"simulators\": []}", NULL));
    const char *e = kr_last_error();
    cr_assert(strstr(e, ": expected valid JSON, found "), "%s", e);
    for (const char *c = e; *c; c++) cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "byte %d in: %s", *c, e);
}

/* jansson takes a NUL byte between two tokens as white space: the rest of
 * the file was read as if the NUL were not there. */
Test(model_file, bad_nul_byte)
{
    mt_write("{'end_time': 10, 'simulators': []}");
    FILE *fp = fopen(mt_path, "r+");
    cr_assert(fp);
    fseek(fp, 15, SEEK_SET); /* the space after the comma */
    fputc('\0', fp);
    cr_assert_eq(fclose(fp), 0);
    cr_assert_null(kr__model_file_load(&(kr__model_file_desc_t){ .path = mt_path,
                                                                .register_builtin = kr__models_register_builtin }));
    char want[200];
    snprintf(want, sizeof want, "%s: byte 16: expected valid JSON, found a NUL byte", mt_path);
    cr_assert_str_eq(kr_last_error(), want);
}

/* A UTF-8 byte-order mark before the JSON is skipped (jansson refused it,
 * quoting it invisibly), also with a NUL byte after it, whose offset counts
 * the mark; a \u0000 in a string is named as such, not by jansson's flag. */
Test(model_file, byte_order_mark_and_escaped_nul)
{
    mt_write("{}"); /* (makes the folder and the path) */
    FILE *fp = fopen(mt_path, "wb");
    cr_assert(fp);
    fputs("\xEF\xBB\xBF{\"end_time\": 10, \"simulators\": []}", fp);
    cr_assert_eq(fclose(fp), 0);
    kr__model_file_desc_t desc = { .path = mt_path, .register_builtin = kr__models_register_builtin };
    kr__model_file_t *f = kr__model_file_load(&desc);
    cr_assert(!f || !strstr(kr_last_error(), "valid JSON"), "%s", kr_last_error());
    kr__model_file_free(f);
    fp = fopen(mt_path, "wb");
    fputs("\xEF\xBB\xBF{\"a\"", fp);
    fputc('\0', fp);
    cr_assert_eq(fclose(fp), 0);
    cr_assert_null(kr__model_file_load(&desc));
    char want[200];
    snprintf(want, sizeof want, "%s: byte 8: expected valid JSON, found a NUL byte", mt_path);
    cr_assert_str_eq(kr_last_error(), want);
    mt_write("{'end_time': 10, 'x': 'a\\u0000b'}");
    cr_assert_null(kr__model_file_load(&desc));
    cr_assert(strstr(kr_last_error(), "expected valid JSON, found \\u0000 (a NUL character) in a string"), "%s",
              kr_last_error());
}

/* A file of one JSON value that is no object is named as such, also with a
 * --set that would look into it. */
Test(model_file, bad_top_not_an_object)
{
    expect_load_error(mt_load("42", "end_time=3", NULL), "(top)", "an object", "42");
    expect_load_error(mt_load("[1, 2]", NULL), "(top)", "an object", "[1,2]");
}

Test(model_file, bad_empty_file)
{
    cr_assert_null(mt_load("", NULL));
    cr_assert(strstr(kr_last_error(), ": (file): expected a readable model file, found an empty file"), "%s",
              kr_last_error());
}

/* fopen opens a directory: it is named as such, not as bad JSON */
Test(model_file, bad_directory)
{
    char dir[] = "/tmp/kairos_mf_dir_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_null(kr__model_file_load(&(kr__model_file_desc_t){ .path = dir }));
    char want[200];
    snprintf(want, sizeof want, "%s: (file): expected a readable model file, found a directory", dir);
    cr_assert_str_eq(kr_last_error(), want);
    rmdir(dir);
}

Test(model_file, bad_duplicate_json_key)
{
    cr_assert_null(mt_load("{'end_time': 10, 'end_time': 11}", NULL));
    cr_assert(strstr(kr_last_error(), ": expected valid JSON, found duplicate object key"), "%s", kr_last_error());
}

Test(model_file, bad_top_not_object)
{
    expect_load_error(mt_load("[1, 2]", NULL), "(top)", "an object", "[1,2]");
}

Test(model_file, bad_unknown_top_key)
{
    expect_load_error(mt_load(FACTORY, "endtime=5", NULL), "endtime",
                      "one of the keys precision, seed, end_time, sync, mapping, log_level, simulators, "
                      "dependencies, outputs, plugins, description, stop_lookahead", "the unknown key \"endtime\"");
}

Test(model_file, bad_unknown_simulator_key)
{
    expect_load_error(mt_load(FACTORY, "simulators.Bath.step=1", NULL), "simulators[2].step",
                      "one of the keys name, kind, formalism, time_step, params, rank, count, regions, description, render, emulation",
                      "the unknown key \"step\"");
}

Test(model_file, bad_unknown_dependency_key)
{
    expect_load_error(mt_load(FACTORY, "dependencies.0.delay=1", NULL), "dependencies[0].delay",
                      "one of the keys from, to, promise", "the unknown key \"delay\"");
}

Test(model_file, bad_unknown_output_key)
{
    expect_load_error(mt_load(FACTORY, "outputs={\"log\": \"x\"}", NULL), "outputs.log",
                      "one of the keys stats, event_log, trace, series, checkpoint", "the unknown key \"log\"");
}

Test(model_file, bad_missing_end_time)
{
    expect_load_error(mt_load("{'simulators': [{'name': 'b', 'kind': 'bath', 'time_step': 1}]}", NULL), "end_time",
                      "a time >= 0 in model units", "nothing");
}

Test(model_file, bad_end_time_type)
{
    expect_load_error(mt_load(FACTORY, "end_time=soon", NULL), "end_time", "a time >= 0 in model units",
                      "\"soon\"");
}

Test(model_file, bad_negative_end_time)
{
    expect_load_error(mt_load(FACTORY, "end_time=-1", NULL), "end_time", "a time >= 0 in model units", "-1");
}

Test(model_file, bad_precision)
{
    expect_load_error(mt_load(FACTORY, "precision=0", NULL), "precision",
                      "a whole number of ticks per model unit >= 1", "0");
    expect_load_error(mt_load(FACTORY, "precision=1.5", NULL), "precision",
                      "a whole number of ticks per model unit >= 1", "1.5");
}

/* JSON with \u0000 in a string (jansson takes none): it was taken as a
 * bare word, and refused later as a string where an object was expected. */
Test(model_file, a_set_with_a_nul_says_so)
{
    expect_load_error(mt_load(FACTORY, "simulators.0={\"name\":\"A\\u0000B\"}", NULL), "simulators.0",
                      "a value without \\u0000 (--set)", "\"{\\\"name\\\":\\\"A\\\\u0000B\\\"}\"");
}

Test(model_file, bad_seed)
{
    expect_load_error(mt_load(FACTORY, "seed=-3", NULL), "seed", "a whole number >= 0", "-3");
    expect_load_error(mt_load(FACTORY, "seed=1e300", NULL), "seed", "a whole number >= 0", "1e300");
}

/* Whole numbers written as floats (a program that writes every number
 * as one gives 2.0) are whole numbers wherever the file takes one, as in
 * a kind's params. They were refused here and taken there. */
Test(model_file, whole_numbers_written_as_floats)
{
    kr__model_file_t *f = mt_load("{'end_time': 10, 'seed': 7.0, 'precision': 1000.0, 'simulators': ["
                                  "{'name': 'b', 'kind': 'bath', 'time_step': 1, 'count': 3.0, 'rank': 0.0}, "
                                  "{'name': 'w', 'kind': 'walkers', 'formalism': 'agent-based', 'time_step': 1, "
                                  "'regions': [2.0, 1.0]}], 'outputs': {'checkpoint': {'keep': 2.0, 'level': 3.0}}}",
                                  NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->seed, 7);
    cr_assert_eq(f->precision, 1000);
    cr_assert_eq(f->sim_count, 5);
    cr_assert_eq(f->sims[0].rank, 0);
    cr_assert_eq(f->sims[3].region_cols, 2);
    cr_assert_eq(f->sims[3].region_rows, 1);
    cr_assert_eq(f->ckpt.keep, 2);
    cr_assert_eq(f->ckpt.level, 3);
    kr__model_file_free(f);
    expect_load_error(mt_load(BATHS("", ""), "simulators.0.regions=[2.5,1]", NULL), "simulators[0].regions",
                      "[P, Q], two whole numbers >= 1 with P x Q <= 4096", "[2.5,1]");
}

Test(model_file, bad_sync)
{
    expect_load_error(mt_load(FACTORY, "sync=optimistic", NULL), "sync", "\"auto\", \"null-message\" or \"window\"",
                      "\"optimistic\"");
    expect_load_error(mt_load(FACTORY, "sync=7", NULL), "sync", "\"auto\", \"null-message\" or \"window\"", "7");
}

Test(model_file, bad_mapping)
{
    expect_load_error(mt_load(FACTORY, "mapping=random", NULL), "mapping", "\"round-robin\", \"block\" or \"metis\"",
                      "\"random\"");
}

Test(model_file, bad_log_level)
{
    expect_load_error(mt_load(FACTORY, "log_level=loud", NULL), "log_level",
                      "one of trace, debug, info, warn, error, critical, off", "\"loud\"");
}

Test(model_file, bad_output_name)
{
    expect_load_error(mt_load(FACTORY, "outputs={\"stats\": \"\"}", NULL), "outputs.stats", "a file or folder name",
                      "\"\"");
    expect_load_error(mt_load(FACTORY, "outputs=[]", NULL), "outputs", "an object", "[]");
}

Test(model_file, bad_simulators_missing_or_empty)
{
    expect_load_error(mt_load("{'end_time': 1}", NULL), "simulators", "a non-empty array of simulators", "nothing");
    expect_load_error(mt_load("{'end_time': 1, 'simulators': []}", NULL), "simulators",
                      "a non-empty array of simulators", "[]");
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [3]}", NULL), "simulators[0]", "a simulator object", "3");
}

#define NAME_RULE "a non-empty name without '[', ']', '*', '.', '/', '\\' or control characters"
Test(model_file, bad_simulator_name)
{
    expect_load_error(mt_load(FACTORY, "simulators.0.name=a.b", NULL), "simulators[0].name", NAME_RULE, "\"a.b\"");
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"\"", NULL), "simulators[0].name", NAME_RULE, "\"\"");
    /* names name files (an event log NAME.jsonl) and are printed on one line */
    expect_load_error(mt_load(FACTORY, "simulators.0.name=a/b", NULL), "simulators[0].name", NAME_RULE, "\"a/b\"");
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"a\\\\b\"", NULL), "simulators[0].name", NAME_RULE,
                      "\"a\\\\b\"");
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"a\\nb\"", NULL), "simulators[0].name", NAME_RULE,
                      "\"a\\nb\"");
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"a\\u0007b\"", NULL), "simulators[0].name", NAME_RULE,
                      "\"a\\u0007b\"");
    /* C1 controls (a terminal's CSI among them) and the line separators */
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"a\\u009bb\"", NULL), "simulators[0].name", NAME_RULE,
                      "\"a?b\"");
    expect_load_error(mt_load(FACTORY, "simulators.0.name=\"a\\u2028b\"", NULL), "simulators[0].name", NAME_RULE,
                      "\"a?b\"");
    /* other characters beyond ASCII are names like any */
    kr__model_file_t *f = mt_load("{'end_time': 1, 'simulators': [{'name': 'Z\u00fcrich \u2192 1', 'kind': 'phold'}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr__model_file_free(f);
}

Test(model_file, bad_duplicate_name)
{
    expect_load_error(mt_load(FACTORY, "simulators.Bath.name=Line", NULL), "simulators[2].name",
                      "a name not used before (simulators[0] is \"Line\")", "\"Line\"");
    /* Entry names, counted or not: v[0], v[1] and v would otherwise all
     * be built, and --set simulators.v... would reach the first entry only. */
    const char *want = "a name not used before (simulators[0] is \"v\")";
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [{'name': 'v', 'kind': 'phold', 'count': 2}, "
                              "{'name': 'v', 'kind': 'phold'}]}", NULL), "simulators[1].name", want, "\"v\"");
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [{'name': 'v', 'kind': 'phold'}, "
                              "{'name': 'v', 'kind': 'phold', 'count': 2}]}", NULL), "simulators[1].name", want, "\"v\"");
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [{'name': 'v', 'kind': 'phold', 'count': 2}, "
                              "{'name': 'v', 'kind': 'phold', 'count': 3}]}", NULL), "simulators[1].name", want, "\"v\"");
}

Test(model_file, bad_unknown_kind)
{
    expect_load_error(mt_load(FACTORY, "simulators.Bath.kind=tub", NULL), "simulators[2].kind",
                      "a known kind (assembly, robots, bath, sqss, phold, rows, walkers, ecology, feeder, belt, controller, gateway)", "\"tub\"");
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [{'name': 'x'}]}", NULL), "simulators[0].kind",
                      "a known kind (assembly, robots, bath, sqss, phold, rows, walkers, ecology, feeder, belt, controller, gateway)", "nothing");
}

Test(model_file, bad_unknown_formalism)
{
    expect_load_error(mt_load(FACTORY, "simulators.Line.formalism=quantum", NULL), "simulators[0].formalism",
                      "discrete-event, agent-based, continuous or emulation", "\"quantum\"");
}

#define STEP_EXPECTED "a time step that is a whole positive number of ticks (1 tick = 1e-06 model units)"

Test(model_file, bad_time_step_fraction_of_tick)
{
    expect_load_error(mt_load(FACTORY, "simulators.Bath.time_step=0.0000015", NULL), "simulators[2].time_step",
                      STEP_EXPECTED, "1.5e-6");
}

Test(model_file, bad_time_step_zero_or_negative)
{
    expect_load_error(mt_load(FACTORY, "simulators.Bath.time_step=0", NULL), "simulators[2].time_step",
                      STEP_EXPECTED, "0");
    expect_load_error(mt_load(FACTORY, "simulators.Bath.time_step=-2", NULL), "simulators[2].time_step",
                      STEP_EXPECTED, "-2");
}

Test(model_file, bad_time_step_missing_for_stepped)
{
    expect_load_error(mt_load("{'end_time': 1, 'simulators': [{'name': 'b', 'kind': 'bath'}]}", NULL),
                      "simulators[0].time_step", STEP_EXPECTED, "nothing");
}

Test(model_file, bad_count)
{
    expect_load_error(mt_load(BATHS("", ""), "simulators.0.count=0", NULL), "simulators[0].count",
                      "a whole number from 1 to 100000", "0");
    expect_load_error(mt_load(BATHS("", ""), "simulators.0.count=2.5", NULL), "simulators[0].count",
                      "a whole number from 1 to 100000", "2.5");
}

Test(model_file, bad_rank)
{
    expect_load_error(mt_load(FACTORY, "simulators.Line.rank=-1", NULL), "simulators[0].rank",
                      "a rank: a whole number from 0 to 1048575", "-1");
    expect_load_error(mt_load(FACTORY, "simulators.Line.rank=1.5", NULL), "simulators[0].rank",
                      "a rank: a whole number from 0 to 1048575", "1.5");
    /* (pins up to 16777216 were taken, beyond the 2^20 ranks validate --ranks plans for) */
    expect_load_error(mt_load(FACTORY, "simulators.Line.rank=1048576", NULL), "simulators[0].rank",
                      "a rank: a whole number from 0 to 1048575", "1048576");
}

/* A positive promise that would round to no tick (precision 10^6) is
 * refused; half a tick rounds to one. */
Test(model_file, a_promise_below_half_a_tick)
{
    expect_load_error(mt_load(FACTORY, "dependencies.1.promise=4e-7", NULL), "dependencies[1].promise",
                      "0 or a promise of at least half a tick (a tick is 1/precision model units)", "4e-7");
    kr__model_file_t *f = mt_load(FACTORY, "dependencies.1.promise=5e-7", NULL);
    cr_assert_not_null(f, "%s", kr_last_error());
    cr_assert(has_dep(f, "Robots", "Bath", 1));
    kr__model_file_free(f);
}

Test(model_file, bad_params_not_object)
{
    expect_load_error(mt_load(FACTORY, "simulators.Line.params=[1]", NULL), "simulators[0].params", "an object",
                      "[1]");
}

Test(model_file, bad_dependency_on_missing_simulator)
{
    expect_load_error(mt_load(FACTORY, "dependencies.1.to=Oven", NULL), "dependencies[1].to",
                      "the name of a simulator (or \"name[*]\")", "\"Oven\"");
    expect_load_error(mt_load(FACTORY, "dependencies.0.from=Oven", NULL), "dependencies[0].from",
                      "the name of a simulator (or \"name[*]\")", "\"Oven\"");
}

Test(model_file, bad_dependencies_type)
{
    expect_load_error(mt_load(FACTORY, "dependencies={}", NULL), "dependencies", "an array of dependencies", "{}");
    expect_load_error(mt_load(FACTORY, "dependencies=[5]", NULL), "dependencies[0]", "a dependency object", "5");
}

Test(model_file, bad_negative_promise)
{
    expect_load_error(mt_load(FACTORY, "dependencies.1.promise=-0.5", NULL), "dependencies[1].promise",
                      "a promise >= 0 in model units", "-0.5");
}

Test(model_file, bad_missing_promise)
{
    expect_load_error(mt_load(FACTORY, "dependencies.1={\"from\": \"Robots\", \"to\": \"Bath\"}", NULL),
                      "dependencies[1].promise", "a promise >= 0 in model units", "nothing");
}

/* A promise set that cannot run: robots may not deliver sooner than they
 * promised; the kind refuses a delay below the promise of its edge. */
Test(model_file, bad_promise_above_delay)
{
    expect_build_error(mt_load(FACTORY, "simulators.Robots.params.delay=1", NULL), "simulators[1].params.delay",
                       "a duration at least the promise of the edge to \"to\"",
                       "1, below the promise 2 of 'Robots' -> 'Bath'");
}

Test(model_file, bad_set_missing_path)
{
    expect_load_error(mt_load(FACTORY, "outputs.stats=s.json", NULL), "outputs",
                      "a path that exists (--set outputs.stats=s.json)", "nothing");
}

Test(model_file, bad_set_missing_simulator)
{
    expect_load_error(mt_load(FACTORY, "simulators.Oven.params.k=1", NULL), "simulators.Oven",
                      "the name of a simulator (--set simulators.Oven.params.k=1)", "nothing");
    /* an index past the entries, and a replica's name, say which */
    expect_load_error(mt_load(FACTORY, "simulators.7.params.k=1", NULL), "simulators.7",
                      "an entry's index below 3 or its name (--set simulators.7.params.k=1)", "nothing");
    expect_load_error(mt_load(BATHS("", ""), "simulators.b[0].time_step=2", NULL), "simulators.b[0]",
                      "the name of a simulator entry (replicas are set through their entry: simulators.NAME...) "
                      "(--set simulators.b[0].time_step=2)", "nothing");
}

Test(model_file, bad_set_index_out_of_range)
{
    expect_load_error(mt_load(FACTORY, "dependencies.7.promise=1", NULL), "dependencies.7",
                      "a path that exists (--set dependencies.7.promise=1)", "nothing");
    expect_load_error(mt_load(FACTORY, "dependencies.7=1", NULL), "dependencies.7",
                      "a path that exists (--set dependencies.7=1)", "nothing");
}

/* A number too large for JSON was taken as a string, and refused later as
 * the string "1e400". */
Test(model_file, bad_set_number_out_of_range)
{
    expect_load_error(mt_load(FACTORY, "end_time=1e400", NULL), "end_time",
                      "a number JSON can hold, a whole one within 64 bits and any other within about 1.8e308 "
                      "(--set end_time=1e400)", "\"1e400\"");
    expect_load_error(mt_load(FACTORY, "seed=99999999999999999999", NULL), "seed",
                      "a number JSON can hold, a whole one within 64 bits and any other within about 1.8e308 "
                      "(--set seed=99999999999999999999)", "\"99999999999999999999\"");
}

Test(model_file, bad_set_through_a_value)
{
    expect_load_error(mt_load(FACTORY, "seed.x=1", NULL), "seed.x", "a path that exists (--set seed.x=1)",
                      "nothing");
}

Test(model_file, bad_set_without_key)
{
    expect_load_error(mt_load(FACTORY, "=1", NULL), "(--set)", "KEY=VALUE with a dotted KEY", "\"=1\"");
    /* an empty part named another key ("dependencies..promise" was
     * dependencies.promise), a sign or a leading 0 entry 0 */
    expect_load_error(mt_load(FACTORY, "dependencies..promise=1", NULL), "(--set)",
                      "KEY=VALUE with a dotted KEY, no part of it empty", "\"dependencies..promise=1\"");
    cr_assert_null(mt_load(FACTORY, "dependencies.00.promise=1", NULL));
    cr_assert(strstr(kr_last_error(), "dependencies.00: expected a path that exists"), "%s", kr_last_error());
    cr_assert_null(mt_load(FACTORY, "dependencies.+1.promise=1", NULL));
}

Test(model_file, bad_plugin_path)
{
    cr_assert_null(mt_load(FACTORY, "plugins=[\"no-such-plugin.so\"]", NULL));
    const char *e = kr_last_error();
    char want[300];
    snprintf(want, sizeof want, "%s: plugins[0]: expected a loadable shared object (%s/no-such-plugin.so: ", mt_path,
             mt_dir);
    cr_assert(!strncmp(e, want, strlen(want)), "%s", e);
    cr_assert(strstr(e, "), found \"no-such-plugin.so\""), "%s", e);
    cr_assert_null(strchr(e, '\n'));
}

Test(model_file, bad_plugin_not_a_shared_object)
{
    /* the model file itself is no ELF object */
    cr_assert_null(mt_load(FACTORY, "plugins=[\"model.json\"]", NULL));
    cr_assert(strstr(kr_last_error(), ": plugins[0]: expected a loadable shared object ("), "%s", kr_last_error());
    expect_load_error(mt_load(FACTORY, "plugins=[3]", NULL), "plugins[0]", "a shared-object path", "3");
    expect_load_error(mt_load(FACTORY, "plugins=\"x.so\"", NULL), "plugins", "an array of shared-object paths",
                      "\"x.so\"");
}

Test(model_file, bad_unknown_param_of_kind)
{
    expect_build_error(mt_load(FACTORY, "simulators.Bath.params={\"heat\": 3}", NULL), "simulators[2].params.heat",
                       "a parameter of kind 'bath' (ambient, heater, loss, exchange, heat_ratio, capacity, "
                       "part_temperature, target, profile_points, initial)",
                       "the unknown key \"heat\"");
}

Test(model_file, bad_param_wrong_type)
{
    expect_build_error(mt_load(FACTORY, "simulators.Robots.params.robots=three", NULL),
                       "simulators[1].params.robots", "a whole number >= 1, <= 1000000", "\"three\"");
    expect_build_error(mt_load(FACTORY, "simulators.Robots.params.robots=2.5", NULL),
                       "simulators[1].params.robots", "a whole number >= 1, <= 1000000", "2.5");
}

Test(model_file, bad_param_out_of_range)
{
    expect_build_error(mt_load(FACTORY, "simulators.Bath.params={\"loss\": -1}", NULL), "simulators[2].params.loss",
                       "a number >= 0", "-1");
}

Test(model_file, bad_param_missing_required)
{
    expect_build_error(mt_load(FACTORY, "simulators.Line.params={}", NULL), "simulators[0].params.to",
                       "the name of a simulator with a dependency from 'Line'", "nothing");
}

Test(model_file, bad_param_duration)
{
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.first=-1", NULL), "simulators[0].params.first",
                       "a duration >= 0 in model units", "-1");
}

#define DIST_KINDS \
    "a number or a distribution {\"dist\": constant, uniform, exponential, normal, lognormal, triangular, " \
    "erlang, gamma, discrete, poisson or bernoulli, ...}"

Test(model_file, bad_distribution_unknown)
{
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval={\"dist\": \"gauss\"}", NULL),
                       "simulators[0].params.interval", DIST_KINDS, "{\"dist\":\"gauss\"}");
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval=\"2\"", NULL), "simulators[0].params.interval",
                       DIST_KINDS, "\"2\"");
}

/* A bare number is a constant distribution. */
Test(model_file, distribution_bare_number)
{
    kr__model_file_t *f = mt_load(FACTORY, "simulators.Line.params.interval=2", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}

Test(model_file, bad_distribution_fields)
{
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval={\"dist\": \"uniform\", \"min\": 1}", NULL),
                       "simulators[0].params.interval.max", "a number", "nothing");
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval={\"dist\": \"exponential\", \"mean\": 1,"
                               " \"sd\": 2}", NULL),
                       "simulators[0].params.interval.sd", "no key 'sd' in the exponential distribution", "2");
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval={\"dist\": \"discrete\", \"values\": [1, 2],"
                               " \"weights\": [1]}", NULL),
                       "simulators[0].params.interval.weights", "as many weights as values", "[1]");
    expect_build_error(mt_load(FACTORY, "simulators.Line.params.interval={\"dist\": \"uniform\", \"min\": 3,"
                               " \"max\": 1}", NULL),
                       "simulators[0].params.interval", "valid parameters", "uniform: min 3 is greater than max 1");
}

Test(model_file, every_distribution_form_accepted)
{
    static const char *const forms[] = {
        "{\"dist\": \"constant\", \"value\": 2}",
        "{\"dist\": \"uniform\", \"min\": 1, \"max\": 3}",
        "{\"dist\": \"exponential\", \"mean\": 2}",
        "{\"dist\": \"normal\", \"mean\": 2, \"sd\": 0.5}",
        "{\"dist\": \"lognormal\", \"mean\": 2, \"sd\": 0.5}",
        "{\"dist\": \"triangular\", \"min\": 1, \"mode\": 2, \"max\": 3}",
        "{\"dist\": \"erlang\", \"k\": 3, \"mean\": 2}",
        "{\"dist\": \"gamma\", \"shape\": 2, \"scale\": 1}",
        "{\"dist\": \"discrete\", \"values\": [1, 2, 3], \"weights\": [1, 1, 2]}",
        "{\"dist\": \"poisson\", \"mean\": 2}",
        "{\"dist\": \"bernoulli\", \"p\": 0.5}",
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char set[200];
        snprintf(set, sizeof set, "simulators.Line.params.interval=%s", forms[i]);
        kr__model_file_t *f = mt_load(FACTORY, set, NULL);
        cr_assert(f, "%s", kr_last_error());
        kr_model_t *m = kr__model_file_build(f, NULL);
        cr_assert(m, "%s: %s", forms[i], kr_last_error());
        kr_model_destroy(m);
        kr__model_file_free(f);
    }
}

Test(model_file, bad_description_type)
{
    expect_load_error(mt_load(FACTORY, "simulators.Line.description=[]", NULL), "simulators[0].description",
                      "a string", "[]");
}

/* A promise set that cannot run: an emulation simulator (paced by the wall
 * clock) in a cycle of zero promises. Refused at build, so validate says so. */
Test(model_file, bad_emulation_in_zero_promise_cycle)
{
    expect_build_error(mt_load("{'end_time': 2, 'simulators': [{'name': 'A', 'kind': 'assembly', 'formalism':"
                               " 'emulation', 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', 'time_step': 1}],"
                               " 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0},"
                               " {'from': 'B', 'to': 'A', 'promise': 0}]}", NULL),
                       "simulators[0].formalism",
                       "no emulation simulator in a cycle of zero promises (A is in one with B; give an edge of the "
                       "cycle a positive promise)", "\"emulation\"");
    /* a positive promise on the way back lets it run */
    kr__model_file_t *f = mt_load("{'end_time': 0.01, 'simulators': [{'name': 'A', 'kind': 'assembly', 'formalism':"
                                 " 'emulation', 'params': {'to': 'B'}}, {'name': 'B', 'kind': 'bath', 'time_step': 1}],"
                                 " 'dependencies': [{'from': 'A', 'to': 'B', 'promise': 0},"
                                 " {'from': 'B', 'to': 'A', 'promise': 1}]}", NULL);
    cr_assert(f, "%s", kr_last_error());
    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    kr_model_destroy(m);
    kr__model_file_free(f);
}
