/* The few collectives a distributed run needs besides the transport. Not
 * public API: public headers never include mpi.h. */
#ifndef KAIROS_NET_COLLECTIVES_H
#define KAIROS_NET_COLLECTIVES_H

#include <mpi.h>
#include <stdint.h>
#include "kairos/status.h"

/* Every rank's string, gathered on rank 0 in rank order (*all and each
 * entry malloc'ed, NULL elsewhere). */
kr_status_t kr__net_gather_strings(MPI_Comm comm, const char *mine, char ***all);

/* Checks that every rank has the same list of 64-bit entry digests (a
 * registry's components or a model's event types); on a mismatch, fails on
 * every rank naming the first differing entry with name_of(index) as rank
 * 0 knows it. */
kr_status_t kr__net_check_same(MPI_Comm comm, const char *what, const uint64_t *digests, uint32_t count,
                              const char *(*name_of)(void *arg, uint32_t index), void *arg);

#endif
