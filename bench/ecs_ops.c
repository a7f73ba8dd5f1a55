/* Instructions per structural operation of the ECS (issue 20;
 * bench/README.md, "Fast paths in one function" and "Batched structural
 * changes"): the churn of bench_ecs (1,000,000 entities with two 8-byte
 * components; 100,000 distinct random ones get a third component, lose it,
 * then are destroyed; 100,000 others get and lose a sparse component;
 * 100,000 others get and lose the third one and are destroyed through the
 * batched calls (kr_component_add_n, _remove_n, kr_entity_destroy_n); the
 * 1,000,000 entities of a world with a spatial hash move, one call each and
 * then in one kr_spatial_move_n, and 100,000 of them are destroyed), each
 * phase in a function of its own, so that callgrind counts each apart.
 * Timing is bench_ecs's job; this counts.
 *
 *   valgrind --tool=callgrind --callgrind-out-file=cg.ecs build/bench/ecs_ops
 *   callgrind_annotate --inclusive=yes cg.ecs | grep phase_
 *
 * Each phase's count over 100,000 (the moves: 1,000,000) is its
 * instructions per operation (about 6 of them the loop's). Prints the
 * entities left, as a check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kairos/kairos.h"

enum { N = 1000000, CHURN = 100000 };

static kr_entity_t ids[N], pick[CHURN];
static uint64_t rng_state = 1;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The first k entries of ids in random order (a partial shuffle). */
static void shuffle_first(int k)
{
    for (int i = 0; i < k; i++) {
        int j = i + (int)(rng_next() % (uint64_t)(N - i));
        kr_entity_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

__attribute__((noinline)) static void phase_add(kr_world_t *w, kr_component_t c)
{
    for (int i = 0; i < CHURN; i++) kr_component_add(w, pick[i], c);
}

__attribute__((noinline)) static void phase_remove(kr_world_t *w, kr_component_t c)
{
    for (int i = 0; i < CHURN; i++) kr_component_remove(w, pick[i], c);
}

/* The same changes, each phase in one batched call. */
__attribute__((noinline)) static void phase_add_n(kr_world_t *w, kr_component_t c)
{
    kr_component_add_n(w, CHURN, pick, c, NULL);
}

__attribute__((noinline)) static void phase_remove_n(kr_world_t *w, kr_component_t c)
{
    kr_component_remove_n(w, CHURN, pick, c, NULL);
}

__attribute__((noinline)) static void phase_destroy_n(kr_world_t *w)
{
    kr_entity_destroy_n(w, CHURN, pick, NULL);
}

__attribute__((noinline)) static void phase_sparse_add_remove(kr_world_t *w, kr_component_t c)
{
    for (int i = 0; i < CHURN; i++) kr_component_add(w, pick[i], c);
    for (int i = 0; i < CHURN; i++) kr_component_remove(w, pick[i], c);
}

__attribute__((noinline)) static void phase_destroy(kr_world_t *w)
{
    for (int i = 0; i < CHURN; i++) kr_entity_destroy(w, pick[i]);
}

/* (backwards, so that the compiler does not fold it into phase_destroy) */
__attribute__((noinline)) static void phase_destroy_spatial(kr_world_t *w)
{
    for (int i = CHURN - 1; i >= 0; i--) kr_entity_destroy(w, pick[i]);
}

/* Every entity of the spatial world moved by up to half a cell, one call
 * each; then the same moves in one kr_spatial_move_n, on a twin world
 * made the same way (so that its cell table is in the same state). */
static double mx[N], my[N];

static void next_positions(void)
{
    for (int i = 0; i < N; i++) {
        mx[i] += (double)(rng_next() % 1000) / 1000.0 - 0.5;
        my[i] += (double)(rng_next() % 1000) / 1000.0 - 0.5;
    }
}

static kr_world_t *spatial_twin(kr_registry_t *reg, const kr_component_t both[2])
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_cell_size = 1.0 });
    for (int i = 0; i < N; i++) {
        kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        kr_spatial_insert(w, e, mx[i], my[i]);
    }
    return w;
}

__attribute__((noinline)) static void phase_move(kr_world_t *w)
{
    for (int i = 0; i < N; i++) kr_spatial_move(w, ids[i], mx[i], my[i]);
}

__attribute__((noinline)) static void phase_move_n(kr_world_t *w)
{
    kr_spatial_move_n(w, N, ids, mx, my, NULL);
}

/* A world of N entities with Position and Velocity (and in the spatial
 * hash, with cells of 1 on a 1000 x 1000 area, when `spatial`). */
static kr_world_t *populate(kr_registry_t *reg, const kr_component_t both[2], bool spatial)
{
    kr_world_t *w = kr_world_create(&(kr_world_desc_t){ .registry = reg, .spatial_cell_size = spatial ? 1.0 : 0 });
    for (int i = 0; i < N; i++) {
        ids[i] = kr_entity_create_desc(w, &(kr_entity_desc_t){ .components = both, .component_count = 2 });
        if (!spatial) continue;
        mx[i] = (double)(rng_next() % 1000000) / 1000.0;
        my[i] = (double)(rng_next() % 1000000) / 1000.0;
        kr_spatial_insert(w, ids[i], mx[i], my[i]);
    }
    return w;
}

int main(void)
{
    kr_registry_t *reg = kr_registry_create();
    kr_component_t both[2] = {
        kr_component_register(reg, &(kr_component_desc_t){ .name = "Position", .size = 8 }),
        kr_component_register(reg, &(kr_component_desc_t){ .name = "Velocity", .size = 8 }),
    };
    kr_component_t extra = kr_component_register(reg, &(kr_component_desc_t){ .name = "Extra", .size = 4 });
    kr_component_t sparse = kr_component_register(
        reg, &(kr_component_desc_t){ .name = "Sparse", .size = 4, .storage = KR_STORAGE_SPARSE });

    kr_world_t *w = populate(reg, both, false);
    shuffle_first(3 * CHURN);
    /* one add and remove first, so that the tables and edges exist and
     * the phases measure the steady state */
    kr_component_add(w, ids[N - 1], extra);
    kr_component_remove(w, ids[N - 1], extra);
    kr_component_add(w, ids[N - 1], sparse);
    kr_component_remove(w, ids[N - 1], sparse);
    for (int i = 0; i < CHURN; i++) pick[i] = ids[i];
    phase_add(w, extra);
    phase_remove(w, extra);
    for (int i = 0; i < CHURN; i++) pick[i] = ids[CHURN + i];
    phase_sparse_add_remove(w, sparse);
    for (int i = 0; i < CHURN; i++) pick[i] = ids[i];
    phase_destroy(w);
    for (int i = 0; i < CHURN; i++) pick[i] = ids[2 * CHURN + i];
    phase_add_n(w, extra);
    phase_remove_n(w, extra);
    phase_destroy_n(w);
    size_t left = kr_world_entity_count(w);
    kr_world_destroy(w);

    w = populate(reg, both, true);
    kr_world_t *twin = spatial_twin(reg, both);
    uint64_t saved = rng_state;
    next_positions();
    rng_state = saved; /* (the shuffle below as before these phases) */
    phase_move(w);
    phase_move_n(twin);
    kr_world_destroy(twin);
    shuffle_first(CHURN);
    for (int i = 0; i < CHURN; i++) pick[i] = ids[i];
    phase_destroy_spatial(w);
    size_t left_spatial = kr_world_entity_count(w);
    kr_world_destroy(w);
    kr_registry_destroy(reg);
    printf("{\"bench\": \"ecs_ops\", \"left\": %zu, \"left_spatial\": %zu}\n", left, left_spatial);
    return left == N - 2 * CHURN && left_spatial == N - CHURN ? 0 : 1;
}
