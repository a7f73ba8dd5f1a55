/* kairos under mpirun -np 2 (MPIRUN): exit status 0 and the same checksum
 * as a run on one rank. */
#include "spawn.h"

TestSuite(cli_mpi, .fini = cli_cleanup);

Test(cli_mpi, factory_two_ranks_same_checksum)
{
    const char *root = getenv("KAIROS_SOURCE_ROOT"), *bin = getenv("KAIROS_BIN"), *mpirun = getenv("MPIRUN");
    cr_assert(root && bin && mpirun, "KAIROS_SOURCE_ROOT, KAIROS_BIN and MPIRUN are needed");
    char model[1024];
    snprintf(model, sizeof model, "%s/examples/factory.json", root);
    char one[600], two[600];
    snprintf(one, sizeof one, "%s", cli_path("np1.json"));
    snprintf(two, sizeof two, "%s", cli_path("np2.json"));

    cli_result_t r = kairos("run", model, "-o", one, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cli_free(&r);

    char *argv[] = { (char *)mpirun, "-np", "2", "--oversubscribe", (char *)bin, "run", model, "-o", two, "--quiet",
                     NULL };
    r = cli_spawn(argv);
    cr_assert_eq(r.status, 0, "mpirun: %s", r.err);
    cli_free(&r);

    char *a = cli_checksum(one), *b = cli_checksum(two);
    cr_assert_str_eq(a, b, "one rank and two ranks");
    free(a), free(b);
    json_error_t e;
    json_t *s = json_load_file(two, 0, &e);
    cr_assert(s);
    cr_assert_eq(json_integer_value(json_object_get(s, "ranks")), 2);
    json_decref(s);
}
