/* The statistics of the built-in kinds' own state, for their serialize
 * callbacks (models/serialize.h). */
#include "models/serialize.h"
#include "base/error.h"

kr_status_t kr__ser_time(kr_serializer_t *s, kr_time_t *t)
{
    uint64_t v = *t;
    kr_status_t st = kr_ser_u64(s, &v);
    *t = v;
    return st;
}

kr_status_t kr__ser_tally(kr_serializer_t *s, kr_tally_t *t)
{
    kr_ser_u64(s, &t->count);
    kr_ser_f64(s, &t->mean);
    kr_ser_f64(s, &t->m2);
    kr_ser_f64(s, &t->min);
    return kr_ser_f64(s, &t->max);
}

kr_status_t kr__ser_timeavg(kr_serializer_t *s, kr_timeavg_t *a)
{
    kr__ser_time(s, &a->start);
    kr__ser_time(s, &a->last);
    kr_ser_f64(s, &a->value);
    kr_ser_f64(s, &a->area);
    kr_ser_f64(s, &a->min);
    return kr_ser_f64(s, &a->max);
}

kr_status_t kr__ser_batchmeans(kr_serializer_t *s, kr_batchmeans_t *b)
{
    for (size_t i = 0; i < KR_BATCH_SLOTS; i++) kr_ser_f64(s, &b->sums[i]);
    kr_ser_u64(s, &b->batch_size);
    kr_ser_u32(s, &b->full);
    kr_ser_u64(s, &b->in_current);
    kr_ser_f64(s, &b->current);
    kr_status_t st = kr__ser_tally(s, &b->all);
    /* as kr_batchmeans_add leaves it (all slots full are merged at once):
     * anything else would index past the slots on the next observation */
    if (!st && kr_serializer_loading(s) &&
        (b->full >= KR_BATCH_SLOTS || b->batch_size < 1 || b->in_current >= b->batch_size))
        st = kr__fail(KR_ERR_CORRUPT, "batch means: %u full batches of %llu, %llu in the current one: not a "
                      "state they can be in", b->full, (unsigned long long)b->batch_size,
                      (unsigned long long)b->in_current);
    return st;
}
