/* The per-thread last error (base/error.c): a message is kept to one line
 * whatever it quotes, each control character becoming one '?' (C0 and DEL,
 * and in UTF-8 the C1 controls and the line and paragraph separators),
 * while other text beyond ASCII stays as it is; the status goes with it,
 * and kr_clear_error forgets both. */
#include <criterion/criterion.h>

#include "base/error.h"
#include "kairos/status.h"

Test(error, message_and_status)
{
    cr_assert_eq(kr__fail(KR_ERR_IO, "%s: %d", "file", 3), KR_ERR_IO);
    cr_assert_str_eq(kr_last_error(), "file: 3");
    cr_assert_eq(kr_last_status(), KR_ERR_IO);
    kr_clear_error();
    cr_assert_str_eq(kr_last_error(), "");
    cr_assert_eq(kr_last_status(), KR_OK);
}

Test(error, control_characters_become_one_question_mark_each)
{
    kr__fail(KR_ERR_INVALID_ARG, "a%sb", "\n\t\x1b[31m\x7f");
    cr_assert_str_eq(kr_last_error(), "a???[31m?b");
    /* U+009B (a terminal's CSI), U+0085 (next line), U+2028, U+2029 */
    kr__fail(KR_ERR_INVALID_ARG, "a%sb", "\xc2\x9b" "31m\xc2\x85\xe2\x80\xa8\xe2\x80\xa9");
    cr_assert_str_eq(kr_last_error(), "a?31m???b");
}

Test(error, other_text_beyond_ascii_stays)
{
    /* U+00A0 and U+00FC (C2 A0, C3 BC), U+2192 (E2 86 92), U+1F600 */
    const char *text = "\xc2\xa0Z\xc3\xbcrich \xe2\x86\x92 \xf0\x9f\x98\x80";
    kr__fail(KR_ERR_INVALID_ARG, "%s", text);
    cr_assert_str_eq(kr_last_error(), text);
    /* a lone lead byte at the end is not read past */
    kr__fail(KR_ERR_INVALID_ARG, "x\xc2");
    cr_assert_str_eq(kr_last_error(), "x\xc2");
    kr__fail(KR_ERR_INVALID_ARG, "x\xe2\x80");
    cr_assert_str_eq(kr_last_error(), "x\xe2\x80");
}
