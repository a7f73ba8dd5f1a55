/* The private hash multimap (ecs/hmap.h): duplicate keys, removal of one
 * (key, value) entry among many, backward-shift deletion (also across the
 * end of the table), replace, growth, and long random churn checked after
 * every step against a brute-force multiset, together with the probing
 * invariant (every entry is reachable from its home slot without crossing a
 * free slot). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

static uint32_t home_of(const kr__hmap_t *m, uint64_t key)
{
    return (uint32_t)kr__mix64(key) & (m->capacity - 1);
}

/* Every value under key, in iteration order; returns how many. */
static size_t values_of(const kr__hmap_t *m, uint64_t key, uint32_t *out, size_t cap)
{
    uint32_t cursor = 0, v;
    size_t n = 0;
    while ((v = kr__hmap_next(m, key, &cursor)) != KR__HMAP_EMPTY) {
        cr_assert_lt(n, cap, "iteration under key %llu does not end", (unsigned long long)key);
        out[n++] = v;
    }
    /* Once exhausted, it stays exhausted. */
    cr_assert_eq(kr__hmap_next(m, key, &cursor), KR__HMAP_EMPTY);
    return n;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Structural invariants: count matches the occupied slots, capacity is a
 * power of two with a bounded load, and no free slot separates an entry
 * from its home. */
static void check_invariants(const kr__hmap_t *m)
{
    if (!m->capacity) {
        cr_assert_eq(m->count, 0);
        return;
    }
    cr_assert_eq(m->capacity & (m->capacity - 1), 0, "capacity %u is not a power of two", m->capacity);
    /* Probing ends at a free slot, so one must always remain; and the load
     * must stay well below 1 for probes to stay short. */
    cr_assert_lt(m->count, m->capacity, "no free slot left: %u / %u", m->count, m->capacity);
    cr_assert_leq((uint64_t)m->count * 10, (uint64_t)m->capacity * 9, "load above 0.9: %u / %u",
                  m->count, m->capacity);
    uint32_t used = 0, mask = m->capacity - 1;
    for (uint32_t s = 0; s < m->capacity; s++) {
        if (m->slots[s].value == KR__HMAP_EMPTY) continue;
        used++;
        for (uint32_t p = home_of(m, m->slots[s].key); p != s; p = (p + 1) & mask)
            cr_assert_neq(m->slots[p].value, KR__HMAP_EMPTY,
                          "slot %u (key %llu) unreachable: free slot %u lies between it and its home",
                          s, (unsigned long long)m->slots[s].key, p);
    }
    cr_assert_eq(used, m->count, "count %u but %u slots in use", m->count, used);
}

Test(hmap, empty_map)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    uint32_t cursor = 0;
    cr_assert_eq(kr__hmap_next(&m, 1, &cursor), KR__HMAP_EMPTY);
    cr_assert_not(kr__hmap_remove(&m, 1, 0));
    cr_assert_not(kr__hmap_replace(&m, 1, 0, 5));
    check_invariants(&m);
    kr__hmap_fini(&m);
    kr__hmap_fini(&m); /* twice is harmless: fini leaves an empty map */
    cr_assert_eq(m.capacity, 0);
}

Test(hmap, insert_and_find)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    for (uint32_t i = 0; i < 100; i++) cr_assert_eq(kr__hmap_insert(&m, (uint64_t)i * 1000003u, i), KR_OK);
    cr_assert_eq(m.count, 100);
    check_invariants(&m);
    for (uint32_t i = 0; i < 100; i++) {
        uint32_t v[4];
        cr_assert_eq(values_of(&m, (uint64_t)i * 1000003u, v, 4), 1);
        cr_assert_eq(v[0], i);
    }
    uint32_t v[4];
    cr_assert_eq(values_of(&m, 7, v, 4), 0);
    kr__hmap_fini(&m);
}

Test(hmap, duplicate_keys_yield_every_value)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    /* Interleave a heavy key with others so its run is fragmented. */
    for (uint32_t i = 0; i < 60; i++) {
        cr_assert_eq(kr__hmap_insert(&m, 42, 1000 + i), KR_OK);
        cr_assert_eq(kr__hmap_insert(&m, 100 + i, i), KR_OK);
    }
    /* The same (key, value) twice is two entries. */
    cr_assert_eq(kr__hmap_insert(&m, 42, 1000), KR_OK);
    check_invariants(&m);
    uint32_t v[128];
    size_t n = values_of(&m, 42, v, 128);
    cr_assert_eq(n, 61);
    qsort(v, n, sizeof v[0], cmp_u32);
    cr_assert_eq(v[0], 1000);
    cr_assert_eq(v[1], 1000);
    for (size_t i = 2; i < n; i++) cr_assert_eq(v[i], 1000 + i - 1);

    /* Removing one (key, value) leaves the rest, including its twin. */
    cr_assert(kr__hmap_remove(&m, 42, 1000));
    cr_assert(kr__hmap_remove(&m, 42, 1030));
    cr_assert_not(kr__hmap_remove(&m, 42, 1030));
    cr_assert_not(kr__hmap_remove(&m, 42, 5)); /* value under another key */
    check_invariants(&m);
    n = values_of(&m, 42, v, 128);
    cr_assert_eq(n, 59);
    qsort(v, n, sizeof v[0], cmp_u32);
    cr_assert_eq(v[0], 1000);
    for (size_t i = 0; i < n; i++) cr_assert_neq(v[i], 1030);
    cr_assert(kr__hmap_remove(&m, 42, 1000));
    cr_assert_not(kr__hmap_remove(&m, 42, 1000));
    for (uint32_t i = 0; i < 60; i++) {
        uint32_t w[2];
        cr_assert_eq(values_of(&m, 100 + i, w, 2), 1);
        cr_assert_eq(w[0], i);
    }
    kr__hmap_fini(&m);
}

Test(hmap, replace_changes_one_entry)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    cr_assert_eq(kr__hmap_insert(&m, 9, 1), KR_OK);
    cr_assert_eq(kr__hmap_insert(&m, 9, 2), KR_OK);
    cr_assert_eq(kr__hmap_insert(&m, 10, 1), KR_OK);
    cr_assert(kr__hmap_replace(&m, 9, 1, 77));
    cr_assert_not(kr__hmap_replace(&m, 9, 1, 78)); /* already replaced */
    cr_assert_not(kr__hmap_replace(&m, 11, 1, 78)); /* absent key */
    cr_assert_eq(m.count, 3);
    uint32_t v[4];
    size_t n = values_of(&m, 9, v, 4);
    cr_assert_eq(n, 2);
    qsort(v, n, sizeof v[0], cmp_u32);
    cr_assert_eq(v[0], 2);
    cr_assert_eq(v[1], 77);
    cr_assert_eq(values_of(&m, 10, v, 4), 1);
    cr_assert_eq(v[0], 1, "replace touched another key's entry");
    /* The replaced entry is removable under its new value only. */
    cr_assert_not(kr__hmap_remove(&m, 9, 1));
    cr_assert(kr__hmap_remove(&m, 9, 77));
    cr_assert_eq(values_of(&m, 9, v, 4), 1);
    cr_assert_eq(v[0], 2);
    check_invariants(&m);
    kr__hmap_fini(&m);
}

Test(hmap, growth_keeps_every_entry)
{
    const uint64_t HEAVY = 1ull << 40;
    kr__hmap_t m;
    kr__hmap_init(&m);
    uint32_t last_cap = 0, grows = 0;
    const uint32_t n = 100000;
    for (uint32_t i = 0; i < n; i++) {
        /* Half the keys repeat so runs are long. */
        uint64_t key = (i & 1) ? (uint64_t)i : (uint64_t)(i / 64) | HEAVY;
        cr_assert_eq(kr__hmap_insert(&m, key, i), KR_OK);
        if (m.capacity != last_cap) {
            cr_assert_gt(m.capacity, last_cap);
            last_cap = m.capacity;
            grows++;
            check_invariants(&m);
        }
    }
    cr_assert_eq(m.count, n);
    cr_assert_leq(m.capacity, 4 * n, "capacity %u for %u entries", m.capacity, n);
    cr_assert_geq(grows, 10);
    check_invariants(&m);
    /* Every odd key has one value; heavy key k holds the 32 even i with i / 64 == k. */
    uint32_t v[64];
    for (uint32_t i = 1; i < n; i += 2) {
        cr_assert_eq(values_of(&m, i, v, 64), 1);
        cr_assert_eq(v[0], i);
    }
    for (uint64_t k = 0; k < n / 64; k++) {
        size_t c = values_of(&m, k | HEAVY, v, 64);
        cr_assert_eq(c, 32, "heavy key %llu has %zu values", (unsigned long long)k, c);
        qsort(v, c, sizeof v[0], cmp_u32);
        for (size_t j = 0; j < c; j++) cr_assert_eq(v[j], (uint32_t)(k * 64 + 2 * j));
    }
    kr__hmap_fini(&m);
}

/* Finds a key whose home slot in a table of `cap` slots is `slot`. */
static uint64_t key_with_home(uint32_t cap, uint32_t slot, uint64_t from)
{
    for (uint64_t k = from;; k++)
        if (((uint32_t)kr__mix64(k) & (cap - 1)) == slot) return k;
}

Test(hmap, backward_shift_wraps_around_the_end)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    cr_assert_eq(kr__hmap_insert(&m, 123456789, 0), KR_OK); /* sizes the table */
    cr_assert(kr__hmap_remove(&m, 123456789, 0));
    const uint32_t cap = m.capacity;
    cr_assert_geq(cap, 16);
    /* A run from slot cap-2 that wraps to slots 0..: homes cap-2, cap-2,
     * cap-1, 0, cap-1, 1, 0 (keys distinct, so removals are exact). */
    uint32_t homes[] = { cap - 2, cap - 2, cap - 1, 0, cap - 1, 1, 0 };
    size_t n = sizeof homes / sizeof homes[0];
    uint64_t keys[7];
    uint64_t from = 1;
    for (size_t i = 0; i < n; i++) {
        keys[i] = key_with_home(cap, homes[i], from);
        from = keys[i] + 1;
        cr_assert_eq(kr__hmap_insert(&m, keys[i], (uint32_t)i), KR_OK);
    }
    cr_assert_eq(m.capacity, cap, "test assumes no growth");
    check_invariants(&m);
    /* Remove each entry in turn (from a fresh copy of the run), checking
     * every survivor is still found. */
    for (size_t victim = 0; victim < n; victim++) {
        kr__hmap_t c;
        kr__hmap_init(&c);
        for (size_t i = 0; i < n; i++) cr_assert_eq(kr__hmap_insert(&c, keys[i], (uint32_t)i), KR_OK);
        cr_assert_eq(c.capacity, cap);
        cr_assert(kr__hmap_remove(&c, keys[victim], (uint32_t)victim));
        check_invariants(&c);
        for (size_t i = 0; i < n; i++) {
            uint32_t v[2];
            size_t got = values_of(&c, keys[i], v, 2);
            if (i == victim) {
                cr_assert_eq(got, 0, "removed entry %zu still found", i);
            } else {
                cr_assert_eq(got, 1, "entry %zu (home %u) lost after removing %zu", i, homes[i], victim);
                cr_assert_eq(v[0], i);
            }
        }
        kr__hmap_fini(&c);
    }
    kr__hmap_fini(&m);
}

/* ---- random churn against a brute-force multiset -------------------------- */

typedef struct pair { uint64_t key; uint32_t value; } pair_t;

typedef struct model {
    pair_t *p;
    size_t n, cap;
} model_t;

static uint64_t rng_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    return kr__mix64(*s);
}

static void model_add(model_t *md, uint64_t key, uint32_t value)
{
    if (md->n == md->cap) {
        md->cap = md->cap ? md->cap * 2 : 64;
        md->p = realloc(md->p, md->cap * sizeof *md->p);
        cr_assert_not_null(md->p);
    }
    md->p[md->n++] = (pair_t){ key, value };
}

static bool model_remove(model_t *md, uint64_t key, uint32_t value)
{
    for (size_t i = 0; i < md->n; i++)
        if (md->p[i].key == key && md->p[i].value == value) {
            md->p[i] = md->p[--md->n];
            return true;
        }
    return false;
}

static bool model_replace(model_t *md, uint64_t key, uint32_t old, uint32_t new_value)
{
    for (size_t i = 0; i < md->n; i++)
        if (md->p[i].key == key && md->p[i].value == old) {
            md->p[i].value = new_value;
            return true;
        }
    return false;
}

/* Compares the values under every key of a key universe with the model. */
static void compare_with_model(const kr__hmap_t *m, const model_t *md, uint64_t key_lo, uint64_t key_hi)
{
    cr_assert_eq(m->count, md->n, "map holds %u entries, model %zu", m->count, md->n);
    uint32_t *got = malloc((md->n + 1) * sizeof *got), *want = malloc((md->n + 1) * sizeof *want);
    cr_assert(got && want);
    for (uint64_t k = key_lo; k <= key_hi; k++) {
        size_t ng = values_of(m, k, got, md->n + 1);
        size_t nw = 0;
        for (size_t i = 0; i < md->n; i++)
            if (md->p[i].key == k) want[nw++] = md->p[i].value;
        cr_assert_eq(ng, nw, "key %llu: map has %zu values, model %zu", (unsigned long long)k, ng, nw);
        qsort(got, ng, sizeof *got, cmp_u32);
        qsort(want, nw, sizeof *want, cmp_u32);
        for (size_t i = 0; i < ng; i++)
            cr_assert_eq(got[i], want[i], "key %llu value %zu: %u vs model %u", (unsigned long long)k, i,
                         got[i], want[i]);
    }
    free(got);
    free(want);
}

static void churn(uint64_t seed, uint64_t key_space, uint32_t steps, uint32_t target, uint32_t check_every)
{
    kr__hmap_t m;
    kr__hmap_init(&m);
    model_t md = { 0 };
    uint64_t s = seed;
    uint32_t next_value = 0;
    for (uint32_t step = 0; step < steps; step++) {
        uint64_t r = rng_next(&s);
        /* Hover around `target` entries so removals hit long, clustered runs. */
        unsigned op = (unsigned)(r % 100);
        bool grow = md.n < target ? op < 60 : op < 40;
        if (grow || md.n == 0) {
            uint64_t key = rng_next(&s) % key_space;
            uint32_t value;
            if (md.n && op % 7 == 0) {
                /* Repeat an existing (key, value) exactly. */
                pair_t twin = md.p[rng_next(&s) % md.n];
                key = twin.key;
                value = twin.value;
            } else {
                value = next_value++;
            }
            cr_assert_eq(kr__hmap_insert(&m, key, value), KR_OK);
            model_add(&md, key, value);
        } else if (op < 85) {
            pair_t victim = md.p[rng_next(&s) % md.n];
            cr_assert(kr__hmap_remove(&m, victim.key, victim.value), "present entry not removed");
            cr_assert(model_remove(&md, victim.key, victim.value));
        } else if (op < 92) {
            /* Removing something absent changes nothing. */
            uint64_t key = rng_next(&s) % key_space;
            uint32_t value = next_value + 1000000;
            cr_assert_not(kr__hmap_remove(&m, key, value));
        } else {
            pair_t victim = md.p[rng_next(&s) % md.n];
            uint32_t nv = next_value++;
            cr_assert(kr__hmap_replace(&m, victim.key, victim.value, nv));
            cr_assert(model_replace(&md, victim.key, victim.value, nv));
        }
        if (step % check_every == 0) {
            check_invariants(&m);
            compare_with_model(&m, &md, 0, key_space - 1);
        }
    }
    check_invariants(&m);
    compare_with_model(&m, &md, 0, key_space - 1);
    /* Drain completely: the map must end empty and consistent. */
    while (md.n) {
        pair_t victim = md.p[rng_next(&s) % md.n];
        cr_assert(kr__hmap_remove(&m, victim.key, victim.value));
        cr_assert(model_remove(&md, victim.key, victim.value));
    }
    cr_assert_eq(m.count, 0);
    check_invariants(&m);
    for (uint32_t i = 0; i < m.capacity; i++) cr_assert_eq(m.slots[i].value, KR__HMAP_EMPTY);
    compare_with_model(&m, &md, 0, key_space - 1);
    free(md.p);
    kr__hmap_fini(&m);
}

Test(hmap, churn_few_keys_many_duplicates)
{
    /* 8 keys: every key has many values, runs are long and interleaved. */
    churn(1, 8, 20000, 200, 1);
}

Test(hmap, churn_moderate_keys)
{
    churn(2, 300, 60000, 400, 7);
}

Test(hmap, churn_many_keys)
{
    churn(3, 5000, 100000, 2000, 997);
}

Test(hmap, churn_near_load_limit)
{
    /* Hovering just under a growth threshold keeps the table at ~70% load,
     * where backward shifts move the most entries. */
    churn(4, 64, 40000, 44, 1);
}

Test(hmap, hash_bytes_depends_on_bytes_and_seed)
{
    const char a[] = "kairos", b[] = "kairoz";
    cr_assert_eq(kr__hash_bytes(a, 6, 0), kr__hash_bytes(a, 6, 0));
    cr_assert_neq(kr__hash_bytes(a, 6, 0), kr__hash_bytes(b, 6, 0));
    cr_assert_neq(kr__hash_bytes(a, 6, 0), kr__hash_bytes(a, 6, 1));
    cr_assert_neq(kr__hash_bytes(a, 6, 0), kr__hash_bytes(a, 5, 0));
    cr_assert_neq(kr__mix64(1), kr__mix64(2));
}
