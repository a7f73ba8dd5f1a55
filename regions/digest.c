/* The state digest of a region (docs/regions.md, "State digest"): the sum
 * of a hash of (id, cell, the kind's digest word) over its agents, which
 * the run adds up over the regions; the same however the world was cut. */
#include <stdint.h>
#include "base/hmap.h"
#include "regions/region_private.h"

uint64_t kr_region_agent_hash(uint64_t id, int32_t x, int32_t y, uint64_t word)
{
    uint64_t h = kr__mix64(id * 0x9e3779b97f4a7c15ULL ^ 0x7265676eULL);
    h = kr__mix64(h ^ ((uint64_t)(uint32_t)x << 32 | (uint32_t)y));
    return kr__mix64(h ^ word);
}

uint64_t kr_region_state_digest(kr_region_t *r)
{
    kr_view_t v;
    uint64_t sum = 0;
    if (kr_view_init(&v, r->world, &(kr_view_desc_t){ .include = { r->agent } })) return 0;
    while (kr_view_next(&v)) {
        kr_entity_t e = kr_view_entity(&v);
        const kr_region_agent_t *a = kr_view_get(&v, 0);
        int32_t x = INT32_MIN, y = INT32_MIN;
        kr_region_agent_cell(r, e, &x, &y);
        uint64_t id = a->id;
        uint64_t word = r->desc.digest ? r->desc.digest(r, e, r->desc.arg) : 0;
        sum += kr_region_agent_hash(id, x, y, word);
    }
    kr_view_fini(&v);
    return sum;
}
