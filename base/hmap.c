#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fault.h"

void kr__hmap_init(kr__hmap_t *m) { memset(m, 0, sizeof *m); }

void kr__hmap_fini(kr__hmap_t *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static kr_status_t grow(kr__hmap_t *m)
{
    uint32_t cap = m->capacity ? m->capacity * 2 : 16;
    kr__hmap_slot_t *slots = cap > m->capacity && !kr__fault_alloc() ? malloc((size_t)cap * sizeof *slots) : NULL;
    if (!slots) return kr__fail(KR_ERR_NOMEM, "hash map: out of memory growing to %u slots", cap);
    for (uint32_t i = 0; i < cap; i++) slots[i].value = KR__HMAP_EMPTY;
    uint32_t mask = cap - 1;
    for (uint32_t i = 0; i < m->capacity; i++) {
        if (m->slots[i].value == KR__HMAP_EMPTY) continue;
        uint32_t s = (uint32_t)kr__mix64(m->slots[i].key) & mask;
        while (slots[s].value != KR__HMAP_EMPTY) s = (s + 1) & mask;
        slots[s] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->capacity = cap;
    return KR_OK;
}

kr_status_t kr__hmap_insert(kr__hmap_t *m, uint64_t key, uint32_t value)
{
    if (value == KR__HMAP_EMPTY) return kr__fail(KR_ERR_INVALID_ARG, "hash map: value %u is reserved", value);
    if ((uint64_t)(m->count + 1) * 10 > (uint64_t)m->capacity * 7) {
        kr_status_t st = grow(m);
        if (st) return st;
    }
    uint32_t mask = m->capacity - 1;
    uint32_t s = (uint32_t)kr__mix64(key) & mask;
    while (m->slots[s].value != KR__HMAP_EMPTY) s = (s + 1) & mask;
    m->slots[s] = (kr__hmap_slot_t){ key, value, 0 };
    m->count++;
    return KR_OK;
}

static uint32_t find_slot(const kr__hmap_t *m, uint64_t key, uint32_t value)
{
    if (!m->capacity) return KR__HMAP_EMPTY;
    uint32_t mask = m->capacity - 1;
    for (uint32_t s = (uint32_t)kr__mix64(key) & mask; m->slots[s].value != KR__HMAP_EMPTY; s = (s + 1) & mask)
        if (m->slots[s].key == key && m->slots[s].value == value) return s;
    return KR__HMAP_EMPTY;
}

bool kr__hmap_remove(kr__hmap_t *m, uint64_t key, uint32_t value)
{
    uint32_t hole = find_slot(m, key, value);
    if (hole == KR__HMAP_EMPTY) return false;
    uint32_t mask = m->capacity - 1;
    /* Backward shift: pull later entries of the probe run into the hole when
     * their home slot does not lie cyclically in (hole, s]. */
    for (uint32_t s = (hole + 1) & mask; m->slots[s].value != KR__HMAP_EMPTY; s = (s + 1) & mask) {
        uint32_t home = (uint32_t)kr__mix64(m->slots[s].key) & mask;
        bool stays = hole <= s ? (hole < home && home <= s) : (hole < home || home <= s);
        if (stays) continue;
        m->slots[hole] = m->slots[s];
        hole = s;
    }
    m->slots[hole].value = KR__HMAP_EMPTY;
    m->count--;
    return true;
}

bool kr__hmap_replace(kr__hmap_t *m, uint64_t key, uint32_t old_value, uint32_t new_value)
{
    if (new_value == KR__HMAP_EMPTY) return false;
    uint32_t s = find_slot(m, key, old_value);
    if (s == KR__HMAP_EMPTY) return false;
    m->slots[s].value = new_value;
    return true;
}

uint64_t kr__fnv1a(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t kr__hash_bytes(const void *data, size_t n, uint64_t seed)
{
    return kr__mix64(kr__fnv1a(KR__FNV_START ^ seed, data, n));
}
