/* A model built by hand and run over ranks with the MPI transport, against
 * the same model run in one process: sync-events with sender sides, and
 * entities (with children and components) carried by sync-events, across
 * ranks exactly as in one process — the same event sequence digest on
 * every simulator, the same entity counts, with both algorithms.
 *
 * Three simulators in a ring a -> b -> c -> a (promise 1): each forwards a
 * parcel (an entity with a child and a counter component) with a sender
 * side that stamps the payload. Simulator i runs on rank i mod N.
 * First, the transport's held/amend on its own (a null message's
 * guarantee rides on a data message still waiting in its batch), and its
 * batches staying within MPI's eager size.
 * Plain C with MPI (not Criterion); exits non-zero on any failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"
#include "net/transport_mpi.h"
#include "net/transport.h"
#include "schedulers/model_private.h"

#define S KR_PRECISION_DEFAULT
#define SIMS 3

typedef struct parcel { int32_t hops; int32_t stamp; } parcel_t;
typedef struct note { int32_t stamped_by; int32_t hops; } note_t;

typedef struct ids { kr_component_t parcel; kr_event_type_t hop; } ids_t;
static ids_t ids_of(kr_model_t *m)
{
    return (ids_t){ kr_component_lookup(kr_model_registry(m), "parcel"), kr_model_find_event_type(m, "hop") };
}

static void sender_side(kr_sim_t *sim, void *data)
{
    note_t *n = data;
    n->stamped_by = (int32_t)kr_sim_id(sim) + 100;
}

static void target_side(kr_sim_t *sim, void *data)
{
    note_t *n = data;
    kr_model_t *m = kr_sim_model(sim);
    ids_t id = ids_of(m);
    kr_world_t *w = kr_sim_world(sim);
    size_t count;
    const kr_entity_t *arrived = kr_event_entities(sim, &count);
    if (count != 1 || n->stamped_by != (int32_t)((kr_sim_id(sim) + SIMS - 1) % SIMS) + 100) {
        fprintf(stderr, "%s: bad arrival (%zu entities, stamp %d)\n", kr_sim_name(sim), count, n->stamped_by);
        exit(3);
    }
    parcel_t *p = kr_component_get(w, arrived[0], id.parcel);
    if (!p || kr_entity_child_count(w, arrived[0]) != 1 || p->hops != n->hops) {
        fprintf(stderr, "%s: the parcel arrived damaged\n", kr_sim_name(sim));
        exit(3);
    }
    p->hops++;
    p->stamp = n->stamped_by;
    note_t next = { 0, p->hops };
    kr_entity_t e = arrived[0];
    kr_time_t delay = S + (kr_time_t)(kr_rng_uniform(kr_sim_rng(sim)) * S);
    if (kr_schedule_sync(sim, &(kr_sync_desc_t){ .target = (kr_sim_id(sim) + 1) % SIMS, .delay = delay,
                                                 .type = id.hop, .data = &next, .entities = &e, .entity_count = 1 },
                         NULL)) {
        fprintf(stderr, "%s: %s\n", kr_sim_name(sim), kr_last_error());
        exit(3);
    }
}

/* Builds the ring; rank_of NULL: everything in this process. */
static kr_model_t *build(int rank, const int *rank_of, kr_sync_algorithm_t sync)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 300 * S, .seed = 5, .log_level = KR_LOG_WARN,
                                                         .rank = rank, .sync = sync });
    kr_component_register(kr_model_registry(m), &(kr_component_desc_t){ .name = "parcel", .size = sizeof(parcel_t),
                                                                        .align = _Alignof(parcel_t) });
    kr_model_event_type(m, &(kr_event_type_desc_t){ .name = "hop", .size = sizeof(note_t),
                                                    .on_sender_side = sender_side, .on_target_side = target_side });
    const char *names[SIMS] = { "a", "b", "c" };
    for (int i = 0; i < SIMS; i++)
        kr_model_add_sim(m, &(kr_sim_desc_t){ .name = names[i], .rank = rank_of ? rank_of[i] : 0 });
    for (uint32_t i = 0; i < SIMS; i++) kr_model_add_dependency(m, i, (i + 1) % SIMS, S);
    return m;
}

/* Two parcels start at a (if a is here). */
static int start(kr_model_t *m)
{
    if (kr_model_start(m)) return 1;
    kr_sim_t *a = kr_model_sim(m, 0);
    if (!kr_sim_is_local(a)) return 0;
    ids_t id = ids_of(m);
    kr_world_t *w = kr_sim_world(a);
    for (int k = 0; k < 2; k++) {
        kr_entity_t e = kr_entity_create(w);
        kr_component_add(w, e, id.parcel);
        kr_entity_create_desc(w, &(kr_entity_desc_t){ .parent = e });
        note_t n = { 0, 0 };
        if (kr_schedule_sync(a, &(kr_sync_desc_t){ .target = 1, .delay = S + (kr_time_t)k, .type = id.hop, .data = &n,
                                                   .entities = &e, .entity_count = 1 }, NULL))
            return 1;
    }
    return 0;
}

static kr_status_t count_and_check(void *arg, const void *bytes, size_t len)
{
    int *got = arg;
    const uint8_t *b = bytes;
    /* the first message was amended in its batch: 7 became 9 */
    if (len != 3 || b[0] != (*got ? 8 : 9) || b[2] != 1) {
        fprintf(stderr, "message %d arrived as %u %u %u\n", *got, b[0], b[1], b[2]);
        exit(3);
    }
    ++*got;
    return KR_OK;
}

/* Rank 0 sends two messages to simulator 1 (rank 1) and amends the first
 * while both wait in the batch; once the batch has left, amend refuses.
 * A message to a simulator of this rank is not held. Returns failures. */
static int check_amend(int rank, int size)
{
    int rank_of[2] = { 0, size > 1 ? 1 : 0 }, failures = 0;
    kr__transport_t *t = kr__transport_mpi_create(&(kr__mpi_transport_desc_t){ .comm = MPI_COMM_WORLD,
                                                                            .rank_of_sim = rank_of, .sim_count = 2 });
    kr__held_t first, second;
    size_t n = 0;
    if (!t) return 1;
    if (size == 1) {
        t->vtbl->send(t, 0, 1, (const uint8_t[]){ 7, 0, 1 }, 3);
        failures += t->vtbl->held(t, &first);
    } else if (rank == 0) {
        t->vtbl->send(t, 0, 1, (const uint8_t[]){ 7, 0, 1 }, 3);
        failures += !t->vtbl->held(t, &first);
        t->vtbl->send(t, 0, 1, (const uint8_t[]){ 8, 0, 1 }, 3);
        failures += !t->vtbl->held(t, &second);
        failures += !t->vtbl->amend(t, &first, 0, (const uint8_t[]){ 9 }, 1);
        failures += !t->vtbl->amend(t, &second, 1, (const uint8_t[]){ 0 }, 1);
        failures += t->vtbl->amend(t, &first, 2, (const uint8_t[]){ 0, 0 }, 2); /* past its end */
        t->vtbl->poll(t, count_and_check, &(int){ 0 }, &n);                    /* the batch leaves */
        failures += t->vtbl->amend(t, &second, 0, (const uint8_t[]){ 0 }, 1);
    } else if (rank == 1) {
        int got = 0;
        while (got < 2) t->vtbl->poll(t, count_and_check, &got, &n);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t->vtbl->destroy(t);
    if (failures) fprintf(stderr, "rank %d: held/amend: %d failures\n", rank, failures);
    return failures;
}

/* check_batches' messages: number i is 100 bytes, every 50th 5,000 */
#define BATCH_TEST_MESSAGES 600
static size_t batch_test_len(int32_t i) { return i % 50 == 49 ? 5000u : 100u; }

static kr_status_t count_in_order(void *arg, const void *bytes, size_t len)
{
    int *got = arg;
    int32_t index;
    memcpy(&index, bytes, sizeof index);
    if (index != *got || len != batch_test_len(*got)) {
        fprintf(stderr, "message %d arrived as number %d of %zu bytes\n", *got, (int)index, len);
        exit(3);
    }
    ++*got;
    return KR_OK;
}

/* Ranks 0 and 1 each send the other 600 messages without delivering
 * any, 100 bytes each but every 50th of 5,000: a batch leaves before a
 * message would take it past the default flush size (3,968 bytes, within
 * Open MPI's shared-memory eager size), so each sends at least 24
 * batches, more than the receives posted ahead and than the sends a peer
 * may have in flight, and the large ones each alone (announced, then
 * sent on their own tag, which needs the receiver to answer while it is
 * itself waiting to send). Every message arrives once and in order. */
static int check_batches(int rank, int size)
{
    if (size == 1) return 0;
    int rank_of[2] = { 0, 1 }, failures = 0;
    kr__transport_t *t = kr__transport_mpi_create(&(kr__mpi_transport_desc_t){ .comm = MPI_COMM_WORLD,
                                                                            .rank_of_sim = rank_of, .sim_count = 2 });
    if (!t) return 1;
    size_t n = 0;
    int got = 0;
    uint64_t bytes = 0, sent[2] = { 0, 0 };
    if (rank < 2) {
        static uint8_t msg[5000];
        for (int32_t i = 0; i < BATCH_TEST_MESSAGES; i++) {
            memcpy(msg, &i, sizeof i);
            failures += t->vtbl->send(t, (uint32_t)rank, (uint32_t)(1 - rank), msg, batch_test_len(i)) != KR_OK;
            bytes += 4 + batch_test_len(i);
        }
        while (got < BATCH_TEST_MESSAGES) failures += t->vtbl->poll(t, count_in_order, &got, &n) != KR_OK;
        kr__mpi_transport_stats_t st;
        kr__transport_mpi_stats(t, &st);
        sent[rank] = st.batches_sent;
        if (st.batches_sent < 24 || st.bytes_sent != bytes) {
            fprintf(stderr, "rank %d: %llu batches of %llu bytes\n", rank, (unsigned long long)st.batches_sent,
                    (unsigned long long)st.bytes_sent);
            failures++;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, sent, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank < 2) {
        kr__mpi_transport_stats_t st;
        kr__transport_mpi_stats(t, &st);
        if (st.batches_received != sent[1 - rank]) {
            fprintf(stderr, "rank %d: %llu batches received of %llu\n", rank,
                    (unsigned long long)st.batches_received, (unsigned long long)sent[1 - rank]);
            failures++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t->vtbl->destroy(t);
    return failures;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    failures += check_amend(rank, size);
    failures += check_batches(rank, size);
    /* the reference, in this process */
    uint64_t want[SIMS], want_count[SIMS];
    kr_model_t *ref = build(0, NULL, KR_SYNC_NULL_MESSAGE);
    if (start(ref) || kr_model_run(ref)) {
        fprintf(stderr, "rank %d: reference run: %s\n", rank, kr_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < SIMS; i++) {
        want[i] = kr_sim_event_digest(kr_model_sim(ref, (uint32_t)i));
        want_count[i] = kr_sim_event_count(kr_model_sim(ref, (uint32_t)i));
    }
    kr_model_destroy(ref);
    int rank_of[SIMS];
    for (int i = 0; i < SIMS; i++) rank_of[i] = i % size;
    for (int alg = 0; alg < 2; alg++) {
        kr_model_t *m = build(rank, rank_of, alg ? KR_SYNC_WINDOW : KR_SYNC_NULL_MESSAGE);
        kr__transport_t *t = kr__transport_mpi_create(&(kr__mpi_transport_desc_t){ .comm = MPI_COMM_WORLD,
                                                                                .rank_of_sim = rank_of, .sim_count = SIMS });
        if (!t || kr__model_use_transport(m, t) || start(m) || kr_model_run(m)) {
            fprintf(stderr, "rank %d: distributed run (%s): %s\n", rank, alg ? "window" : "null-message", kr_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < SIMS; i++) {
            kr_sim_t *s = kr_model_sim(m, (uint32_t)i);
            if (!kr_sim_is_local(s)) continue;
            if (kr_sim_event_digest(s) != want[i] || kr_sim_event_count(s) != want_count[i]) {
                fprintf(stderr, "rank %d: simulator %d (%s) ran another sequence: %llu events, want %llu\n", rank, i,
                        alg ? "window" : "null-message", (unsigned long long)kr_sim_event_count(s),
                        (unsigned long long)want_count[i]);
                failures++;
            }
        }
        kr_model_destroy(m);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("ring with sender sides and entities on %d rank%s: %s\n", size, size == 1 ? "" : "s",
                          total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
