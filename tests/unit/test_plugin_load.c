/* The plugin recipe end to end: examples/plugin/counter.c built as a
 * module that links nothing (kr_* left unresolved), listed under "plugins"
 * of a model file and loaded by the real runtime (runtime/model_file.c)
 * into a host that, like the kairos executable, carries libkairos whole
 * and exports its symbols (export_dynamic). The module's path comes from
 * KAIROS_TEST_PLUGIN. */
#include "model_text.h"

static char text[8192];

TestSuite(plugin_load, .fini = mt_cleanup);

static const char *counter_model(const char *period)
{
    const char *path = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(path, "KAIROS_TEST_PLUGIN is not set");
    cr_assert_eq(path[0], '/', "an absolute path: %s", path);
    snprintf(text, sizeof text, "{'seed': 1, 'end_time': 10, 'plugins': ['%s'],"
             " 'simulators': [{'name': 'Clock', 'kind': 'counter', 'params': {'period': %s}}]}", path, period);
    return text;
}

Test(plugin_load, counter_ticks)
{
    kr__model_file_t *f = mt_load(counter_model("0.5"), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_eq(f->plugin_count, 1);
    const kr_kind_desc_t *k = kr__kinds_find(f->kinds, "counter");
    cr_assert(k, "the plugin registered its kind");
    cr_assert(kr__kinds_find(f->kinds, "bath"), "next to the built-in kinds");
    cr_assert_eq(k->formalism, KR_DISCRETE_EVENT);
    cr_assert_eq(f->sims[0].formalism, KR_DISCRETE_EVENT);

    kr_model_t *m = kr__model_file_build(f, NULL);
    cr_assert(m, "%s", kr_last_error());
    cr_assert_eq(kr__model_file_kind(f, 0), k);
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_sim_t *clock = kr_model_sim(m, 0);
    /* Its declared state: the runtime reports the counter and digests it
     * (the stats' "ticks" through the executable: tests/cli). */
    cr_assert_null(k->report);
    cr_assert_null(k->digest);
    cr_assert_str_eq(k->state_fields[0].name, "ticks");
    uint64_t ticks;
    memcpy(&ticks, (const char *)kr_sim_state(clock) + k->state_fields[0].offset, sizeof ticks);
    cr_assert_eq(ticks, 20, "ticks at 0.5, 1, ..., 10");
    cr_assert_eq(kr_sim_event_count(clock), 20);
    kr_model_destroy(m);
    kr__model_file_free(f);
}

/* A zero period is refused with the file and the parameter's path named. */
Test(plugin_load, zero_period_refused)
{
    kr__model_file_t *f = mt_load(counter_model("0"), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_null(kr__model_file_build(f, NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.period", "a number > 0", "0");
    kr__model_file_free(f);

    f = mt_load(counter_model("\"fast\""), NULL);
    cr_assert(f, "%s", kr_last_error());
    cr_assert_null(kr__model_file_build(f, NULL));
    mt_expect(KR_ERR_INVALID_ARG, "simulators[0].params.period", "a number > 0", "\"fast\"");
    kr__model_file_free(f);
}

/* The plugin named twice: refused as such (it registered its kind twice). */
Test(plugin_load, twice_refused)
{
    const char *path = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(path);
    snprintf(text, sizeof text, "{'end_time': 1, 'plugins': ['%s', '%s'], 'simulators': [{'name': 'C', 'kind': "
             "'counter'}]}", path, path);
    cr_assert_null(mt_load(text, NULL));
    char found[600];
    snprintf(found, sizeof found, ": plugins[1]: expected each plug-in once (this file is loaded already, under "
             "another name or the same), found \"%s\"", path);
    cr_assert(strstr(kr_last_error(), found), "%s", kr_last_error());
}
