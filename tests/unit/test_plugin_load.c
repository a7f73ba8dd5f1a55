/* The plugin recipe end to end: examples/plugin/counter.c built as a
 * module that links nothing (kr_* left unresolved), dlopened by a host
 * that carries libkairos whole and exports its symbols (export_dynamic),
 * as the kairos executable will. The kinds runtime is the test double
 * (kinds_stub.c). The module's path comes from KAIROS_TEST_PLUGIN. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"
#include "kinds_stub.h"

#define S (KR_PRECISION_DEFAULT)

Test(plugin_load, counter_ticks)
{
    const char *path = getenv("KAIROS_TEST_PLUGIN");
    cr_assert(path, "KAIROS_TEST_PLUGIN is not set");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(h, "dlopen: %s", dlerror());
    kr_plugin_init_fn init;
    *(void **)&init = dlsym(h, KR_PLUGIN_ENTRY);
    cr_assert(init, "no %s: %s", KR_PLUGIN_ENTRY, dlerror());

    kr_kinds_t kinds = { 0 };
    cr_assert_eq(init(&kinds), KR_OK, "%s", kr_last_error());
    const kr_kind_desc_t *k = stub_kinds_find(&kinds, "counter");
    cr_assert(k);
    cr_assert_eq(k->formalism, KR_DISCRETE_EVENT);

    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .seed = 1, .end_time = 10 * S, .log_level = KR_LOG_WARN });
    kr_sim_t *clock = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "Clock", .formalism = k->formalism });
    cr_assert(clock);
    cr_assert_eq(k->register_types(m), KR_OK, "%s", kr_last_error());
    kr_params_t p;
    stub_params_init(&p, "simulators[0].params", S);
    stub_params_number(&p, "period", 0.5);
    cr_assert_eq(k->setup(clock, &p), KR_OK, "%s", kr_last_error());
    cr_assert_eq(kr_model_run(m), KR_OK, "%s", kr_last_error());
    kr_report_t r = { 0 };
    k->report(clock, &r);
    cr_assert_eq(stub_report_get(&r, "ticks")->integer, 20, "ticks at 0.5, 1, ..., 10");
    cr_assert_neq(k->digest(clock), 0);
    kr_model_destroy(m);

    /* A zero period is refused with the parameter named. */
    m = kr_model_create(&(kr_model_desc_t){ .seed = 1, .end_time = 10 * S, .log_level = KR_LOG_OFF });
    clock = kr_model_add_sim(m, &(kr_sim_desc_t){ .name = "Clock", .formalism = k->formalism });
    cr_assert_eq(k->register_types(m), KR_OK);
    stub_params_init(&p, "simulators[0].params", S);
    stub_params_number(&p, "period", 0);
    cr_assert_neq(k->setup(clock, &p), KR_OK);
    cr_assert(strstr(kr_last_error(), "simulators[0].params.period"), "%s", kr_last_error());
    kr_model_destroy(m);
    dlclose(h);
}
