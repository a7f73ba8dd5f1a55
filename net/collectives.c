/* Collectives of a distributed run around the transport: gathering every
 * rank's string, checking that every rank holds the same entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "net/collectives.h"

kr_status_t kr__net_gather_strings(MPI_Comm comm, const char *mine, char ***all)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int len = (int)strlen(mine) + 1;
    int *lens = rank == 0 ? calloc((size_t)size, sizeof *lens) : NULL;
    int *displs = rank == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
    if (rank == 0 && (!lens || !displs)) {
        free(lens);
        free(displs);
        lens = displs = NULL;
    }
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    char *buf = NULL;
    if (rank == 0 && lens) {
        long total = 0;
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += lens[r];
        }
        buf = malloc((size_t)total);
    }
    MPI_Gatherv(mine, len, MPI_CHAR, buf, lens, displs, MPI_CHAR, 0, comm);
    kr_status_t st = KR_OK;
    *all = NULL;
    if (rank == 0) {
        char **out = buf ? calloc((size_t)size, sizeof *out) : NULL;
        for (int r = 0; out && r < size; r++) out[r] = strdup(buf + displs[r]);
        if (!out) st = kr__fail(KR_ERR_NOMEM, "gathering results: out of memory");
        *all = out;
    }
    free(buf);
    free(lens);
    free(displs);
    return st;
}

kr_status_t kr__net_check_same(MPI_Comm comm, const char *what, const uint64_t *digests, uint32_t count,
                              const char *(*name_of)(void *arg, uint32_t index), void *arg)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* Rank 0's list goes to everyone; each rank finds its first difference
     * and the earliest one is reported, by every rank alike. */
    uint32_t n0 = count;
    MPI_Bcast(&n0, 1, MPI_UINT32_T, 0, comm);
    uint64_t *ref = malloc((n0 ? n0 : 1) * sizeof *ref);
    if (!ref) return kr__fail(KR_ERR_NOMEM, "out of memory");
    if (rank == 0) memcpy(ref, digests, n0 * sizeof *ref);
    MPI_Bcast(ref, (int)n0, MPI_UINT64_T, 0, comm);
    uint32_t first = UINT32_MAX;
    uint32_t common = count < n0 ? count : n0;
    for (uint32_t i = 0; i < common && first == UINT32_MAX; i++)
        if (digests[i] != ref[i]) first = i;
    if (first == UINT32_MAX && count != n0) first = common;
    free(ref);
    /* (first, rank) pairs: the lowest index wins, then the lowest rank */
    struct { int index; int rank; } mine = { first == UINT32_MAX ? INT32_MAX : (int)first, rank }, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MINLOC, comm);
    if (worst.index == INT32_MAX) return KR_OK;
    const char *name = rank == 0 && name_of ? name_of(arg, (uint32_t)worst.index) : NULL;
    char text[256] = "";
    if (rank == 0) snprintf(text, sizeof text, "%s", name ? name : "(past rank 0's last entry)");
    MPI_Bcast(text, sizeof text, MPI_CHAR, 0, comm);
    return kr__fail(KR_ERR_MISMATCH, "the %s differ between ranks: entry %d (%s on rank 0) is not the same on rank %d; "
                    "every rank must run the same kairos and plugins", what, worst.index, text, worst.rank);
}
