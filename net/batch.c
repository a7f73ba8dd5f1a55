/* Splitting a received batch into its records. See batch.h. */
#include <stdio.h>
#include "base/error.h"
#include "net/batch.h"

kr_status_t kr__batch_deliver(const void *data, size_t len, int source, kr__deliver_fn deliver, void *arg,
                              size_t *count)
{
    /* Plain loads, not a reader's calls: this runs once per message
     * between ranks (about 70 instructions of the reader's, against a
     * local schedule's 268; bench/README.md). */
    const uint8_t *p = data;
    size_t left = len;
    while (left) {
        uint32_t n = left >= 4 ? kr__batch_record_len(p) : 0;
        if (left < 4 || n > left - 4)
            return kr__fail(KR_ERR_CORRUPT, "a truncated batch from rank %d (a record of %u bytes, %zu left)", source,
                            n, left < 4 ? left : left - 4);
        kr_status_t st = deliver(arg, p + 4, n);
        (*count)++;
        if (st) {
            if (source >= 0) {
                char text[900];
                snprintf(text, sizeof text, "%s", kr_last_error());
                return kr__fail(st, "from rank %d: %s", source, text);
            }
            return st;
        }
        p += 4 + (size_t)n;
        left -= 4 + (size_t)n;
    }
    return KR_OK;
}
