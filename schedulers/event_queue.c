#include "event_queue.h"
#include <stdlib.h>
#include "../ecs/error_private.h"
static bool less(const kr_qentry_t *a, const kr_qentry_t *b)
{
    if (a->time != b->time) return a->time < b->time;
    if (a->hi != b->hi) return a->hi < b->hi;
    return a->lo < b->lo;
}
kr_status_t kr_equeue_init(kr_equeue_t *q) { q->a = NULL; q->n = q->cap = 0; return KR_OK; }
void kr_equeue_fini(kr_equeue_t *q) { free(q->a); q->a = NULL; q->n = q->cap = 0; }
static void up(kr_equeue_t *q, size_t i)
{
    kr_qentry_t e = q->a[i];
    while (i) { size_t p = (i - 1) / 2; if (!less(&e, &q->a[p])) break; q->a[i] = q->a[p]; i = p; }
    q->a[i] = e;
}
static void down(kr_equeue_t *q, size_t i)
{
    kr_qentry_t e = q->a[i];
    for (;;) {
        size_t c = 2 * i + 1; if (c >= q->n) break;
        if (c + 1 < q->n && less(&q->a[c + 1], &q->a[c])) c++;
        if (!less(&q->a[c], &e)) break;
        q->a[i] = q->a[c]; i = c;
    }
    q->a[i] = e;
}
kr_status_t kr_equeue_push(kr_equeue_t *q, const kr_qentry_t *e)
{
    if (q->n == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 64;
        kr_qentry_t *na = realloc(q->a, nc * sizeof *na);
        if (!na) return kr__fail(KR_ERR_NOMEM, "event queue: out of memory");
        q->a = na; q->cap = nc;
    }
    q->a[q->n++] = *e; up(q, q->n - 1);
    return KR_OK;
}
bool kr_equeue_pop(kr_equeue_t *q, kr_qentry_t *out)
{
    if (!q->n) return false;
    *out = q->a[0]; q->a[0] = q->a[--q->n]; if (q->n) down(q, 0);
    return true;
}
const kr_qentry_t *kr_equeue_peek(kr_equeue_t *q) { return q->n ? &q->a[0] : NULL; }
size_t kr_equeue_size(const kr_equeue_t *q) { return q->n; }
kr_status_t kr_equeue_filter(kr_equeue_t *q, bool (*keep)(void *arg, const kr_qentry_t *e), void *arg)
{
    size_t w = 0;
    for (size_t i = 0; i < q->n; i++) if (keep(arg, &q->a[i])) q->a[w++] = q->a[i];
    q->n = w;
    for (size_t i = q->n / 2; i-- > 0;) down(q, i);
    return KR_OK;
}
