/* The coordinator's transport over MPI (the collectives a distributed run
 * needs around it are in collectives.h). Not public API: public headers
 * never include mpi.h.
 *
 * Messages to simulators of this rank loop back in order; messages to
 * another rank are appended to that rank's outgoing batch, which leaves as
 * one MPI message (non-blocking) when it grows past a threshold or when the
 * coordinator polls; receives wait posted ahead for whatever arrives, so
 * a batch is copied once. At most a fixed number of batches per peer are in
 * flight: a sender that would exceed it receives (into its inbox) while it
 * waits, so two ranks sending to each other never deadlock. The run ends,
 * or is found deadlocked, by quiescence rounds (see mpi_settle): every
 * message sent is delivered before anyone leaves. A rank that fails tells
 * every other one, which stop at their next poll. Waiting ranks spin when
 * the node has a core per rank, and sleep-poll otherwise. */
#ifndef KAIROS_NET_TRANSPORT_MPI_H
#define KAIROS_NET_TRANSPORT_MPI_H

#include <mpi.h>
#include <stdint.h>
#include "net/transport.h"

typedef struct kr__mpi_transport_desc {
    MPI_Comm comm;
    const int *rank_of_sim;   /* copied; rank of every simulator */
    uint32_t sim_count;
    size_t flush_bytes;       /* the largest batch but for a single larger message; 0 = 3968 bytes */
} kr__mpi_transport_desc_t;

kr__transport_t *kr__transport_mpi_create(const kr__mpi_transport_desc_t *desc);

/* Statistics of the transport, for the stats file. */
typedef struct kr__mpi_transport_stats {
    uint64_t batches_sent, batches_received, bytes_sent;
    uint64_t reductions;      /* window rounds' all-reduce pairs */
} kr__mpi_transport_stats_t;
void kr__transport_mpi_stats(const kr__transport_t *t, kr__mpi_transport_stats_t *out);

/* After a failed run: the rank that failed first as far as this one knows
 * (this rank itself, or the sender of the first abort message it got), or
 * -1 when nothing failed. */
int kr__transport_mpi_failed_rank(const kr__transport_t *t);

#endif
