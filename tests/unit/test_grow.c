/* The private doubling growth of heap arrays (base/grow.h): capacities from
 * the minimum by doubling, contents kept, nothing done when the array is big
 * enough, refusal of capacities whose count or size in bytes overflows (the
 * array and capacity untouched), the error message, and a NULL `what` that
 * records nothing. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "kairos/status.h"

typedef struct item {
    uint64_t a;
    uint32_t b;
} item_t;

Test(grow, from_empty_to_the_minimum)
{
    item_t *items = NULL;
    size_t cap = 0;
    cr_assert_eq(KR__GROW(items, cap, 1, 16, "test"), KR_OK);
    cr_assert_not_null(items);
    cr_assert_eq(cap, 16);
    free(items);

    /* Beyond the minimum at once: the minimum doubled until it fits. */
    items = NULL;
    cap = 0;
    cr_assert_eq(KR__GROW(items, cap, 17, 16, "test"), KR_OK);
    cr_assert_eq(cap, 32);
    free(items);

    /* Minimum 0 starts at 1. */
    items = NULL;
    cap = 0;
    cr_assert_eq(KR__GROW(items, cap, 1, 0, "test"), KR_OK);
    cr_assert_eq(cap, 1);
    cr_assert_eq(KR__GROW(items, cap, 5, 0, "test"), KR_OK);
    cr_assert_eq(cap, 8);
    free(items);
}

Test(grow, doubles_from_the_capacity_and_keeps_the_contents)
{
    item_t *items = NULL;
    size_t cap = 0, count = 0;
    size_t seen[16], n = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        if (count == cap) {
            cr_assert_eq(KR__GROW(items, cap, count + 1, 8, "test"), KR_OK);
            seen[n++] = cap;
        }
        items[count++] = (item_t){ (uint64_t)i * 7919u, i };
    }
    size_t want[] = { 8, 16, 32, 64, 128, 256, 512, 1024 };
    cr_assert_eq(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) cr_assert_eq(seen[i], want[i], "growth %zu to %zu, want %zu", i, seen[i], want[i]);
    for (uint32_t i = 0; i < 1000; i++) {
        cr_assert_eq(items[i].a, (uint64_t)i * 7919u);
        cr_assert_eq(items[i].b, i);
    }
    /* A capacity that is not a power of two doubles as it is; the minimum
     * matters only for an empty array. */
    cap = 3;
    cr_assert_eq(KR__GROW(items, cap, 4, 64, "test"), KR_OK);
    cr_assert_eq(cap, 6);
    cr_assert_eq(KR__GROW(items, cap, 20, 64, "test"), KR_OK);
    cr_assert_eq(cap, 24);
    for (uint32_t i = 0; i < 3; i++) cr_assert_eq(items[i].b, i);
    free(items);
}

Test(grow, nothing_to_do_when_it_fits)
{
    item_t *items = malloc(10 * sizeof *items);
    item_t *before = items;
    size_t cap = 10;
    kr_clear_error();
    cr_assert_eq(KR__GROW(items, cap, 10, 16, "test"), KR_OK);
    cr_assert_eq(KR__GROW(items, cap, 0, 16, "test"), KR_OK);
    cr_assert_eq(items, before);
    cr_assert_eq(cap, 10);
    uint32_t cap32 = 10;
    cr_assert_eq(KR__GROW_U32(items, cap32, 7, 16, "test"), KR_OK);
    cr_assert_eq(items, before);
    cr_assert_eq(cap32, 10);
    cr_assert_eq(kr_last_status(), KR_OK);
    free(items);
}

Test(grow, uint32_capacity)
{
    uint16_t *items = NULL;
    uint32_t cap = 0;
    cr_assert_eq(KR__GROW_U32(items, cap, 1, 64, "test"), KR_OK);
    cr_assert_eq(cap, 64);
    items[63] = 0xbeef;
    cr_assert_eq(KR__GROW_U32(items, cap, 65, 64, "test"), KR_OK);
    cr_assert_eq(cap, 128);
    cr_assert_eq(items[63], 0xbeef);
    free(items);
}

/* Each refusal leaves the array, its capacity and (what NULL) the last
 * error as they were; no call here reaches realloc. */
static void assert_refused(kr_status_t st, const void *items, const void *before, const char *msg)
{
    cr_assert_eq(st, KR_ERR_NOMEM);
    cr_assert_eq(items, before, "the array moved");
    if (msg) {
        cr_assert_eq(kr_last_status(), KR_ERR_NOMEM);
        cr_assert_str_eq(kr_last_error(), msg);
    } else {
        cr_assert_eq(kr_last_status(), KR_OK);
        cr_assert_str_eq(kr_last_error(), "");
    }
}

Test(grow, refuses_overflow)
{
    item_t *items = malloc(4 * sizeof *items);
    item_t *before = items;
    items[0] = (item_t){ 42, 43 };

    /* The size in bytes overflows. */
    size_t cap = 4;
    kr_clear_error();
    assert_refused(KR__GROW(items, cap, SIZE_MAX / sizeof *items + 1, 4, "items"), items, before, "items: out of memory");
    cr_assert_eq(cap, 4);

    /* Doubling the count overflows. */
    cap = SIZE_MAX / 2 + 1;
    kr_clear_error();
    assert_refused(KR__GROW(items, cap, cap + 1, 4, "items"), items, before, "items: out of memory");
    cr_assert_eq(cap, SIZE_MAX / 2 + 1);
    kr_clear_error();
    assert_refused(KR__GROW(items, cap, SIZE_MAX, 4, "items"), items, before, "items: out of memory");

    /* A uint32_t capacity stops at UINT32_MAX, in count... */
    uint32_t cap32 = UINT32_C(1) << 31;
    kr_clear_error();
    assert_refused(KR__GROW_U32(items, cap32, (size_t)cap32 + 1, 16, "table"), items, before, "table: out of memory");
    cr_assert_eq(cap32, UINT32_C(1) << 31);
    cap32 = 4;
    kr_clear_error();
    assert_refused(KR__GROW_U32(items, cap32, (size_t)UINT32_MAX + 1, 16, "table"), items, before,
                   "table: out of memory");
    cr_assert_eq(cap32, 4);
    /* ... and in bytes. */
    kr_clear_error();
    assert_refused(kr__grow_u32(&items, &cap32, 2048, 16, SIZE_MAX / 1024, "huge"), items, before,
                   "huge: out of memory");
    cr_assert_eq(cap32, 4);

    /* what NULL: the same refusal, the last error left alone. */
    kr_clear_error();
    assert_refused(KR__GROW(items, cap, SIZE_MAX, 4, NULL), items, before, NULL);
    cap32 = 4;
    assert_refused(KR__GROW_U32(items, cap32, (size_t)UINT32_MAX + 1, 16, NULL), items, before, NULL);

    cr_assert_eq(items[0].a, 42);
    cr_assert_eq(items[0].b, 43);
    free(items);
}

Test(grow, message_names_what)
{
    char *bytes = NULL;
    size_t cap = 0;
    kr_clear_error();
    cr_assert_eq(kr__grow(&bytes, &cap, SIZE_MAX / 2 + 2, 1, 1, "MPI transport"), KR_ERR_NOMEM);
    cr_assert_null(bytes);
    cr_assert_eq(cap, 0);
    cr_assert_str_eq(kr_last_error(), "MPI transport: out of memory");
    cr_assert_str_eq(kr_status_str(kr_last_status()), "out of memory");
}
