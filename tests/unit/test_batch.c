/* The batch splitter of the MPI transport (net/batch.h), the first decoder
 * a batch from another rank meets: records handed over in order, an empty
 * batch and empty records, a record running past the end refused (whatever
 * the damage), and a failing delivery stopping the batch with its rank
 * named. tests/fuzz/fuzz_batch feeds it arbitrary bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "kairos/kairos.h"
#include "base/error.h"
#include "net/batch.h"

typedef struct seen {
    size_t n;
    size_t len[8];
    char text[8][16];
    size_t fail_at; /* refuse the record with this index (0: never) */
} seen_t;

static kr_status_t record(void *arg, const void *bytes, size_t len)
{
    seen_t *s = arg;
    cr_assert_lt(s->n, 8);
    s->len[s->n] = len;
    memcpy(s->text[s->n], bytes, len < 15 ? len : 15);
    s->n++;
    if (s->fail_at && s->n == s->fail_at) return kr__fail(KR_ERR_CORRUPT, "record %zu refused", s->n);
    return KR_OK;
}

static void put(kr_buf_t *b, const char *text)
{
    kr_buf_put_u32(b, (uint32_t)strlen(text));
    kr_buf_append(b, text, strlen(text));
}

Test(batch, records_in_order)
{
    kr_buf_t b;
    kr_buf_init(&b);
    put(&b, "first");
    put(&b, "");
    put(&b, "third one");
    seen_t s = { 0 };
    size_t count = 0;
    cr_assert_eq(kr__batch_deliver(b.data, b.len, 1, record, &s, &count), KR_OK, "%s", kr_last_error());
    cr_assert_eq(count, 3);
    cr_assert_eq(s.n, 3);
    cr_assert_str_eq(s.text[0], "first");
    cr_assert_eq(s.len[1], 0);
    cr_assert_str_eq(s.text[2], "third one");
    count = 0;
    cr_assert_eq(kr__batch_deliver(NULL, 0, 1, record, &s, &count), KR_OK, "an empty batch");
    cr_assert_eq(count, 0);
    kr_buf_fini(&b);
}

Test(batch, every_truncation_is_refused)
{
    kr_buf_t b;
    kr_buf_init(&b);
    put(&b, "abc");
    put(&b, "defgh");
    for (size_t cut = 1; cut < b.len; cut++) {
        if (cut == 7) continue; /* a whole first record: a shorter batch, not a truncated one */
        seen_t s = { 0 };
        size_t count = 0;
        kr_status_t st = kr__batch_deliver(b.data, cut, 3, record, &s, &count);
        cr_assert_eq(st, KR_ERR_CORRUPT, "cut at %zu", cut);
        cr_assert(strstr(kr_last_error(), "truncated batch from rank 3"), "%s", kr_last_error());
        cr_assert_eq(count, cut > 7 ? 1 : 0, "cut at %zu", cut);
    }
    /* a length far past the end */
    uint8_t huge[6] = { 0xff, 0xff, 0xff, 0xff, 'x', 'y' };
    seen_t s = { 0 };
    size_t count = 0;
    cr_assert_eq(kr__batch_deliver(huge, sizeof huge, 2, record, &s, &count), KR_ERR_CORRUPT);
    cr_assert_eq(s.n, 0);
    kr_buf_fini(&b);
}

Test(batch, a_refused_record_stops_the_batch)
{
    kr_buf_t b;
    kr_buf_init(&b);
    put(&b, "one");
    put(&b, "two");
    put(&b, "three");
    seen_t s = { .fail_at = 2 };
    size_t count = 0;
    cr_assert_eq(kr__batch_deliver(b.data, b.len, 5, record, &s, &count), KR_ERR_CORRUPT);
    cr_assert_eq(count, 2, "the refused record counts as handed over");
    cr_assert_eq(s.n, 2, "nothing after it");
    cr_assert_str_eq(kr_last_error(), "from rank 5: record 2 refused");
    /* this rank's own records (source -1) keep the message as it is */
    s = (seen_t){ .fail_at = 1 };
    count = 0;
    cr_assert_eq(kr__batch_deliver(b.data, b.len, -1, record, &s, &count), KR_ERR_CORRUPT);
    cr_assert_str_eq(kr_last_error(), "record 1 refused");
    kr_buf_fini(&b);
}
