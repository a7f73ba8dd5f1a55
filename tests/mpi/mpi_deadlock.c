/* A deadlock spread over ranks is reported, on every rank, instead of
 * hanging: with either algorithm, whichever ranks hold the simulators
 * involved, and when the rank that prints (rank 0) is itself finished.
 *
 * The model: alpha -> beta with promise 1 and a sync-event whose sender
 * side runs at 2; beta -> alpha with promise 0. Beta waits for the
 * payload, which alpha sends only once beta guarantees it nothing before
 * 2: neither can move. A third simulator, calm, has nothing to do.
 * Layouts: alpha on rank 0 and beta on the last rank; or calm alone on
 * rank 0 and the two others on the last rank (rank 0 is then done, and
 * must learn of the deadlock from the rank that sees it).
 * Plain C with MPI (not Criterion); exits non-zero on any failure. The
 * meson timeout is the test that nothing hangs. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "kairos/kairos.h"
#include "net/transport_mpi.h"
#include "net/transport.h"
#include "schedulers/model_private.h"

#define S KR_PRECISION_DEFAULT

static void noop(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

/* Runs one layout; returns the number of failed checks on this rank. */
static int run(int rank, int size, const int rank_of[3], kr_sync_algorithm_t sync, const char *label)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 10 * S, .log_level = KR_LOG_OFF, .rank = rank,
                                                         .sync = sync });
    const char *names[3] = { "alpha", "beta", "calm" };
    for (int i = 0; i < 3; i++) kr_model_add_sim(m, &(kr_sim_desc_t){ .name = names[i], .rank = rank_of[i] });
    kr_event_type_t t = kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "t", .on_sender_side = noop,
                                                                        .on_target_side = noop });
    kr_model_add_dependency(m, 0, 1, S);
    kr_model_add_dependency(m, 1, 0, 0);
    kr__transport_t *tr = kr__transport_mpi_create(&(kr__mpi_transport_desc_t){ .comm = MPI_COMM_WORLD,
                                                                             .rank_of_sim = rank_of, .sim_count = 3 });
    if (!tr || kr__model_use_transport(m, tr) || kr_model_start(m)) {
        fprintf(stderr, "rank %d: %s: setting up: %s\n", rank, label, kr_last_error());
        kr_model_destroy(m);
        return 1;
    }
    kr_sim_t *alpha = kr_model_sim(m, 0);
    if (kr_sim_is_local(alpha) && kr_schedule_sync(alpha, &(kr_sync_desc_t){ .target = 1, .delay = 2 * S, .type = t },
                                                   NULL)) {
        fprintf(stderr, "rank %d: %s: scheduling: %s\n", rank, label, kr_last_error());
        kr_model_destroy(m);
        return 1;
    }
    kr_status_t st = kr_model_run(m);
    int failed = 0;
    char err[1024];
    snprintf(err, sizeof err, "%s", kr_last_error());
    if (st == KR_OK) {
        fprintf(stderr, "rank %d: %s: the run ended without an error\n", rank, label);
        failed = 1;
    } else if (st != KR_ERR_DEADLOCK) {
        /* every rank, the describing one and those that heard of it */
        fprintf(stderr, "rank %d: %s: status %s, not a deadlock: %s\n", rank, label, kr_status_str(st), err);
        failed = 1;
    } else if (!strstr(err, "deadlock") || (size > 1 && !strstr(err, "'beta'"))) {
        /* one rank (or every rank in one process) names the simulators */
        fprintf(stderr, "rank %d: %s: not the deadlock expected: %s\n", rank, label, err);
        failed = 1;
    }
    if (rank == 0 && !failed) printf("%s: %s\n", label, err);
    kr_model_destroy(m);
    return failed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int last = size - 1;
    int split[3] = { 0, last, 0 }, apart[3] = { last, last, 0 };
    for (int alg = 0; alg < 2; alg++) {
        kr_sync_algorithm_t sync = alg ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE;
        char label[96];
        snprintf(label, sizeof label, "%s, alpha and beta on ranks 0 and %d", alg ? "window" : "null-message", last);
        failures += run(rank, size, split, sync, label);
        snprintf(label, sizeof label, "%s, both on rank %d, rank 0 done", alg ? "window" : "null-message", last);
        failures += run(rank, size, apart, sync, label);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("deadlock over %d rank%s: %s\n", size, size == 1 ? "" : "s", total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
