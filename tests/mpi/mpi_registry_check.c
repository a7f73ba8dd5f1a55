/* Every rank must agree on its registries: kr__net_check_same passes when
 * the lists are equal and, when one rank differs, fails on every rank
 * naming the first differing entry (as rank 0 names it) and the rank.
 * Run under mpirun -np 1, 2 and 4; exits non-zero on any failure. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "kairos/kairos.h"
#include "net/collectives.h"

static const char *names[] = { "kr_transform", "position", "speed", "cargo" };
static const char *name_of(void *arg, uint32_t i)
{
    (void)arg;
    return i < 4 ? names[i] : "?";
}

#define CHECK(cond, ...) \
    do { if (!(cond)) { fprintf(stderr, "rank %d: ", rank); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
                        failures++; } } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t same[4] = { 11, 22, 33, 44 };
    CHECK(kr__net_check_same(MPI_COMM_WORLD, "component registries", same, 4, name_of, NULL) == KR_OK,
          "equal lists refused: %s", kr_last_error());
    if (size > 1) {
        /* the last rank has another "speed" */
        uint64_t other[4] = { 11, 22, rank == size - 1 ? 99 : 33, 44 };
        kr_status_t st = kr__net_check_same(MPI_COMM_WORLD, "component registries", other, 4, name_of, NULL);
        char want[128];
        snprintf(want, sizeof want, "entry 2 (speed on rank 0) is not the same on rank %d", size - 1);
        CHECK(st == KR_ERR_MISMATCH, "a differing entry passed (status %d)", st);
        CHECK(strstr(kr_last_error(), want) != NULL, "message: %s", kr_last_error());
        /* a rank with one entry more */
        uint32_t n = rank == 1 ? 4 : 3;
        st = kr__net_check_same(MPI_COMM_WORLD, "event types", same, n, name_of, NULL);
        CHECK(st == KR_ERR_MISMATCH && strstr(kr_last_error(), "entry 3"), "a longer list passed: %s", kr_last_error());
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("registry check on %d rank%s: %s\n", size, size == 1 ? "" : "s", total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
