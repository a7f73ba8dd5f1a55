/* Splitting a received batch into its records. See batch.h. */
#include <stdio.h>
#include "base/error.h"
#include "kairos/buffer.h"
#include "net/batch.h"

kr_status_t kr__batch_deliver(const void *data, size_t len, int source, kr__deliver_fn deliver, void *arg,
                              size_t *count)
{
    kr_reader_t r;
    kr_reader_init(&r, data, len);
    while (kr_reader_left(&r)) {
        uint32_t n = kr_reader_u32(&r);
        const void *msg = kr_reader_view(&r, n);
        if (r.failed || (n && !msg))
            return kr__fail(KR_ERR_CORRUPT, "a truncated batch from rank %d (a record of %u bytes, %zu left)", source,
                            n, kr_reader_left(&r));
        kr_status_t st = deliver(arg, msg, n);
        (*count)++;
        if (st) {
            if (source >= 0) {
                char text[900];
                snprintf(text, sizeof text, "%s", kr_last_error());
                return kr__fail(st, "from rank %d: %s", source, text);
            }
            return st;
        }
    }
    return KR_OK;
}
