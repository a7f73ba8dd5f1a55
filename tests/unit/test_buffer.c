/* Byte buffers and readers: little-endian layout byte by byte, growth that
 * keeps the contents, the size-overflow refusal, and readers that fail on
 * the first short read, stay failed, return zeros and never touch a byte
 * past their end (checked with a guard page right after the data). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kairos/buffer.h"
#include "kairos/status.h"

static void assert_bytes(const kr_buf_t *b, const uint8_t *want, size_t n)
{
    cr_assert_eq(b->len, n, "buffer holds %zu bytes, want %zu", b->len, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(b->data[i], want[i], "byte %zu is 0x%02x, want 0x%02x", i, b->data[i], want[i]);
}

Test(buffer, init_is_empty)
{
    kr_buf_t b;
    memset(&b, 0xab, sizeof b);
    kr_buf_init(&b);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.cap, 0);
    kr_buf_fini(&b);
    cr_assert_null(b.data);
    kr_buf_fini(NULL); /* allowed */
}

Test(buffer, put_is_little_endian)
{
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_buf_put_u8(&b, 0xfe), KR_OK);
    cr_assert_eq(kr_buf_put_u32(&b, 0x11223344u), KR_OK);
    cr_assert_eq(kr_buf_put_u64(&b, 0x0102030405060708ull), KR_OK);
    cr_assert_eq(kr_buf_put_f64(&b, 1.0), KR_OK);   /* 0x3ff0000000000000 */
    cr_assert_eq(kr_buf_put_f64(&b, -2.5), KR_OK);  /* 0xc004000000000000 */
    const uint8_t want[] = {
        0xfe,
        0x44, 0x33, 0x22, 0x11,
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0,
    };
    assert_bytes(&b, want, sizeof want);
    cr_assert_geq(b.cap, b.len);
    kr_buf_fini(&b);
}

Test(buffer, extremes_of_each_width)
{
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_buf_put_u8(&b, 0), KR_OK);
    cr_assert_eq(kr_buf_put_u8(&b, UINT8_MAX), KR_OK);
    cr_assert_eq(kr_buf_put_u32(&b, UINT32_MAX), KR_OK);
    cr_assert_eq(kr_buf_put_u32(&b, 0x80000001u), KR_OK);
    cr_assert_eq(kr_buf_put_u64(&b, UINT64_MAX), KR_OK);
    cr_assert_eq(kr_buf_put_u64(&b, 0x8000000000000001ull), KR_OK);
    const uint8_t want[] = {
        0x00, 0xff,
        0xff, 0xff, 0xff, 0xff,
        0x01, 0x00, 0x00, 0x80,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0x01, 0, 0, 0, 0, 0, 0, 0x80,
    };
    assert_bytes(&b, want, sizeof want);

    kr_reader_t r;
    kr_reader_init(&r, b.data, b.len);
    cr_assert_eq(kr_reader_u8(&r), 0);
    cr_assert_eq(kr_reader_u8(&r), UINT8_MAX);
    cr_assert_eq(kr_reader_u32(&r), UINT32_MAX);
    cr_assert_eq(kr_reader_u32(&r), 0x80000001u);
    cr_assert_eq(kr_reader_u64(&r), UINT64_MAX);
    cr_assert_eq(kr_reader_u64(&r), 0x8000000000000001ull);
    cr_assert_not(r.failed);
    cr_assert_eq(kr_reader_left(&r), 0);
    kr_buf_fini(&b);
}

Test(buffer, reader_decodes_little_endian)
{
    const uint8_t bytes[] = {
        0x7f,
        0x78, 0x56, 0x34, 0x12,
        0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x24, 0x40, /* 10.0 */
    };
    kr_reader_t r;
    kr_reader_init(&r, bytes, sizeof bytes);
    cr_assert_eq(r.pos, 0);
    cr_assert_eq(kr_reader_left(&r), sizeof bytes);
    cr_assert_eq(kr_reader_u8(&r), 0x7f);
    cr_assert_eq(kr_reader_u32(&r), 0x12345678u);
    cr_assert_eq(kr_reader_u64(&r), 0x0123456789abcdefull);
    cr_assert_eq(kr_reader_f64(&r), 10.0);
    cr_assert_eq(r.pos, sizeof bytes);
    cr_assert_not(r.failed);
}

Test(buffer, f64_round_trip_is_bit_exact)
{
    double vals[] = { 0.0, -0.0, 1e-310 /* subnormal */, -1e300, INFINITY, -INFINITY, NAN, 3.141592653589793 };
    size_t n = sizeof vals / sizeof vals[0];
    kr_buf_t b;
    kr_buf_init(&b);
    for (size_t i = 0; i < n; i++) cr_assert_eq(kr_buf_put_f64(&b, vals[i]), KR_OK);
    /* A NaN with a payload must survive too: packs carry raw bits. */
    uint64_t payload_nan = 0x7ff4000000abcdefull;
    double pn;
    memcpy(&pn, &payload_nan, sizeof pn);
    cr_assert_eq(kr_buf_put_f64(&b, pn), KR_OK);
    cr_assert_eq(b.len, 8 * (n + 1));

    kr_reader_t r;
    kr_reader_init(&r, b.data, b.len);
    for (size_t i = 0; i < n; i++) {
        double got = kr_reader_f64(&r);
        cr_assert_eq(memcmp(&got, &vals[i], sizeof got), 0, "value %zu changed bits", i);
    }
    double got = kr_reader_f64(&r);
    uint64_t bits;
    memcpy(&bits, &got, sizeof bits);
    cr_assert_eq(bits, payload_nan);
    cr_assert_not(r.failed);
    kr_buf_fini(&b);
}

Test(buffer, append_and_growth_keep_contents)
{
    kr_buf_t b;
    kr_buf_init(&b);
    /* Grow through many reallocations with bytes of varied sizes. */
    uint8_t chunk[97];
    size_t total = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(round % 97) + 1;
        for (size_t i = 0; i < n; i++) chunk[i] = (uint8_t)(total + i);
        size_t old_cap = b.cap;
        cr_assert_eq(kr_buf_append(&b, chunk, n), KR_OK);
        total += n;
        cr_assert_eq(b.len, total);
        cr_assert_geq(b.cap, b.len);
        if (old_cap >= total) cr_assert_eq(b.cap, old_cap, "grew although the bytes fit");
    }
    for (size_t i = 0; i < total; i++)
        cr_assert_eq(b.data[i], (uint8_t)i, "byte %zu lost in growth", i);
    /* Capacity grows geometrically: far fewer than 2000 distinct capacities. */
    cr_assert_lt(b.cap, 4 * total);
    kr_buf_fini(&b);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.cap, 0);
}

Test(buffer, append_nothing)
{
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_buf_append(&b, NULL, 0), KR_OK);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(kr_buf_put_u8(&b, 9), KR_OK);
    cr_assert_eq(kr_buf_append(&b, NULL, 0), KR_OK);
    cr_assert_eq(b.len, 1);
    cr_assert_eq(b.data[0], 9);
    kr_buf_fini(&b);
}

Test(buffer, reserve_makes_room_without_changing_len)
{
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_buf_put_u32(&b, 0xdeadbeefu), KR_OK);
    cr_assert_eq(kr_buf_reserve(&b, 10000), KR_OK);
    cr_assert_eq(b.len, 4);
    cr_assert_geq(b.cap, 10004);
    uint8_t *data = b.data;
    size_t cap = b.cap;
    /* Writes within the reservation never reallocate. */
    for (int i = 0; i < 10000 / 8; i++) cr_assert_eq(kr_buf_put_u64(&b, (uint64_t)i), KR_OK);
    cr_assert_eq(b.data, data);
    cr_assert_eq(b.cap, cap);
    cr_assert_eq(kr_buf_reserve(&b, 0), KR_OK);
    cr_assert_eq(b.data, data);
    kr_reader_t r;
    kr_reader_init(&r, b.data, b.len);
    cr_assert_eq(kr_reader_u32(&r), 0xdeadbeefu);
    for (int i = 0; i < 10000 / 8; i++) cr_assert_eq(kr_reader_u64(&r), (uint64_t)i);
    kr_buf_fini(&b);
}

Test(buffer, reserve_overflow_is_refused_and_harmless)
{
    kr_buf_t b;
    kr_buf_init(&b);
    cr_assert_eq(kr_buf_put_u64(&b, 42), KR_OK);
    uint8_t *data = b.data;
    size_t cap = b.cap;
    kr_clear_error();
    cr_assert_eq(kr_buf_reserve(&b, SIZE_MAX), KR_ERR_NOMEM);
    cr_assert_neq(kr_last_error()[0], '\0');
    cr_assert_eq(kr_last_status(), KR_ERR_NOMEM);
    cr_assert_eq(kr_buf_reserve(&b, SIZE_MAX - 7), KR_ERR_NOMEM);
    cr_assert_neq(kr_buf_append(&b, data, SIZE_MAX - 2), KR_OK);
    cr_assert_eq(b.len, 8);
    cr_assert_eq(b.cap, cap);
    cr_assert_eq(b.data, data);
    kr_reader_t r;
    kr_reader_init(&r, b.data, b.len);
    cr_assert_eq(kr_reader_u64(&r), 42);
    kr_buf_fini(&b);
}

Test(buffer, clear_keeps_capacity)
{
    kr_buf_t b;
    kr_buf_init(&b);
    for (int i = 0; i < 100; i++) cr_assert_eq(kr_buf_put_u64(&b, (uint64_t)i), KR_OK);
    size_t cap = b.cap;
    uint8_t *data = b.data;
    kr_buf_clear(&b);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.cap, cap);
    cr_assert_eq(b.data, data);
    cr_assert_eq(kr_buf_put_u32(&b, 0x01020304u), KR_OK);
    const uint8_t want[] = { 4, 3, 2, 1 };
    assert_bytes(&b, want, 4);
    kr_buf_fini(&b);
}

Test(buffer, short_read_fails_and_stays_failed)
{
    const uint8_t bytes[] = { 1, 2, 3, 4, 5 };
    kr_reader_t r;
    kr_reader_init(&r, bytes, sizeof bytes);
    cr_assert_eq(kr_reader_u32(&r), 0x04030201u);
    cr_assert_not(r.failed);
    /* One byte left: a u32 is short. It returns 0, fails, and consumes nothing. */
    cr_assert_eq(kr_reader_u32(&r), 0);
    cr_assert(r.failed);
    cr_assert_eq(r.pos, 4);
    /* Sticky: even a read that would fit now returns zero. */
    cr_assert_eq(kr_reader_u8(&r), 0);
    cr_assert_eq(kr_reader_u64(&r), 0);
    cr_assert_eq(kr_reader_f64(&r), 0.0);
    cr_assert_null(kr_reader_view(&r, 0));
    cr_assert_null(kr_reader_view(&r, 1));
    uint8_t out[3] = { 9, 9, 9 };
    cr_assert_not(kr_reader_get(&r, out, 1));
    cr_assert_eq(out[0], 0);
    cr_assert_eq(out[1], 9);
    cr_assert(r.failed);
    cr_assert_eq(r.pos, 4);
}

Test(buffer, each_width_fails_when_short)
{
    const uint8_t bytes[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    for (size_t len = 0; len < 8; len++) {
        kr_reader_t r;
        kr_reader_init(&r, bytes, len);
        cr_assert_eq(kr_reader_u64(&r), 0, "u64 from %zu bytes", len);
        cr_assert(r.failed);
        kr_reader_init(&r, bytes, len);
        cr_assert_eq(kr_reader_f64(&r), 0.0);
        cr_assert(r.failed);
        kr_reader_init(&r, bytes, len);
        if (len < 4) {
            cr_assert_eq(kr_reader_u32(&r), 0);
            cr_assert(r.failed);
        } else {
            cr_assert_eq(kr_reader_u32(&r), UINT32_MAX);
            cr_assert_not(r.failed);
        }
        kr_reader_init(&r, bytes, len);
        if (len == 0) {
            cr_assert_eq(kr_reader_u8(&r), 0);
            cr_assert(r.failed);
        } else {
            cr_assert_eq(kr_reader_u8(&r), 0xff);
            cr_assert_not(r.failed);
        }
    }
}

Test(buffer, get_and_view)
{
    const uint8_t bytes[] = { 10, 11, 12, 13, 14, 15 };
    kr_reader_t r;
    kr_reader_init(&r, bytes, sizeof bytes);
    uint8_t out[4] = { 0 };
    cr_assert(kr_reader_get(&r, out, 2));
    cr_assert_eq(out[0], 10);
    cr_assert_eq(out[1], 11);
    const uint8_t *v = kr_reader_view(&r, 3);
    cr_assert_eq(v, bytes + 2, "view must point into the data, not a copy");
    cr_assert_eq(kr_reader_left(&r), 1);
    /* An empty view at the end is fine. */
    cr_assert(kr_reader_get(&r, out, 1));
    cr_assert_eq(out[0], 15);
    cr_assert_not_null(kr_reader_view(&r, 0));
    cr_assert_not(r.failed);
    /* A short get zeroes what it was asked for. */
    memset(out, 0x55, sizeof out);
    cr_assert_not(kr_reader_get(&r, out, 4));
    for (int i = 0; i < 4; i++) cr_assert_eq(out[i], 0);
    cr_assert(r.failed);
}

Test(buffer, huge_requests_do_not_wrap)
{
    const uint8_t bytes[16] = { 0 };
    kr_reader_t r;
    kr_reader_init(&r, bytes, sizeof bytes);
    cr_assert_eq(kr_reader_u32(&r), 0);
    /* pos + n would overflow size_t: must still be refused. */
    cr_assert_null(kr_reader_view(&r, SIZE_MAX));
    cr_assert(r.failed);
    cr_assert_eq(r.pos, 4);
    kr_reader_init(&r, bytes, sizeof bytes);
    cr_assert_null(kr_reader_view(&r, SIZE_MAX - 2));
    cr_assert(r.failed);
    kr_reader_init(&r, bytes, sizeof bytes);
    cr_assert_null(kr_reader_view(&r, 17));
    cr_assert(r.failed);
}

Test(buffer, null_data_reads_as_empty)
{
    kr_reader_t r;
    kr_reader_init(&r, NULL, 100);
    cr_assert_eq(r.len, 0);
    cr_assert_eq(kr_reader_left(&r), 0);
    cr_assert_eq(kr_reader_u8(&r), 0);
    cr_assert(r.failed);
}

/* Data placed so that its last byte is the last byte of a readable page,
 * followed by an inaccessible page: any read past the end faults. */
typedef struct guarded {
    uint8_t *map;
    size_t page;
    uint8_t *data;
} guarded_t;

static guarded_t guard_alloc(size_t n)
{
    guarded_t g;
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    cr_assert_leq(n, g.page);
    g.map = mmap(NULL, 2 * g.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(g.map, MAP_FAILED);
    cr_assert_eq(mprotect(g.map + g.page, g.page, PROT_NONE), 0);
    g.data = g.map + g.page - n;
    return g;
}

static void guard_free(guarded_t *g) { munmap(g->map, 2 * g->page); }

Test(buffer, never_reads_past_the_end)
{
    for (size_t n = 0; n <= 17; n++) {
        guarded_t g = guard_alloc(n);
        for (size_t i = 0; i < n; i++) g.data[i] = (uint8_t)(0xa0 + i);
        /* Every read pattern from every starting position. */
        for (size_t start = 0; start <= n; start++) {
            kr_reader_t r;
            kr_reader_init(&r, g.data, n);
            cr_assert(start == 0 || kr_reader_view(&r, start));
            uint64_t v = kr_reader_u64(&r);
            cr_assert_eq(r.failed, n - start < 8);
            if (!r.failed) cr_assert_eq(v & 0xff, 0xa0 + start);
            else cr_assert_eq(v, 0);

            kr_reader_init(&r, g.data, n);
            if (start) kr_reader_view(&r, start);
            uint32_t u = kr_reader_u32(&r);
            cr_assert_eq(r.failed, n - start < 4);
            if (r.failed) cr_assert_eq(u, 0);

            kr_reader_init(&r, g.data, n);
            if (start) kr_reader_view(&r, start);
            double d = kr_reader_f64(&r);
            cr_assert_eq(r.failed, n - start < 8);
            if (r.failed) cr_assert_eq(d, 0.0);

            kr_reader_init(&r, g.data, n);
            if (start) kr_reader_view(&r, start);
            uint8_t out[32];
            bool ok = kr_reader_get(&r, out, n - start + 1);
            cr_assert_not(ok);
            cr_assert(r.failed);

            /* Byte by byte to the end, then one more. */
            kr_reader_init(&r, g.data, n);
            for (size_t i = 0; i < n; i++) cr_assert_eq(kr_reader_u8(&r), 0xa0 + i);
            cr_assert_not(r.failed);
            cr_assert_eq(kr_reader_u8(&r), 0);
            cr_assert(r.failed);
        }
        guard_free(&g);
    }
}

Test(buffer, buffer_then_reader_round_trip)
{
    kr_buf_t b;
    kr_buf_init(&b);
    for (uint32_t i = 0; i < 1000; i++) {
        cr_assert_eq(kr_buf_put_u8(&b, (uint8_t)(i * 7)), KR_OK);
        cr_assert_eq(kr_buf_put_u32(&b, i * 2654435761u), KR_OK);
        cr_assert_eq(kr_buf_put_u64(&b, (uint64_t)i * 0x9e3779b97f4a7c15ull), KR_OK);
        cr_assert_eq(kr_buf_put_f64(&b, (double)i / 3.0), KR_OK);
    }
    cr_assert_eq(b.len, 1000u * 21u);
    kr_reader_t r;
    kr_reader_init(&r, b.data, b.len);
    for (uint32_t i = 0; i < 1000; i++) {
        cr_assert_eq(kr_reader_u8(&r), (uint8_t)(i * 7));
        cr_assert_eq(kr_reader_u32(&r), i * 2654435761u);
        cr_assert_eq(kr_reader_u64(&r), (uint64_t)i * 0x9e3779b97f4a7c15ull);
        cr_assert_eq(kr_reader_f64(&r), (double)i / 3.0);
    }
    cr_assert_not(r.failed);
    cr_assert_eq(kr_reader_left(&r), 0);
    cr_assert_eq(kr_reader_u8(&r), 0);
    cr_assert(r.failed);
    kr_buf_fini(&b);
}
