/*
 * test_common.c - error codes, messages and allocation failure injection.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/common.h"

Test(common, every_code_has_a_name)
{
    for (int code = CREC_OK; code <= CREC_ERR_LIMIT; code++) {
        const char *name = crec_strerror(code);
        cr_expect(name && *name && strcmp(name, "unknown error") != 0, "code %d", code);
    }
    cr_expect_str_eq(crec_strerror(-1), "unknown error");
    cr_expect_str_eq(crec_strerror(CREC_ERR_LIMIT + 1), "unknown error");
}

Test(common, error_set_returns_the_code_and_formats)
{
    crec_error err;
    cr_expect_eq(crec_error_set(&err, CREC_ERR_IO, "cannot open %s: %d", "x.crec", 2),
                 CREC_ERR_IO);
    cr_expect_eq(err.code, CREC_ERR_IO);
    cr_expect_str_eq(err.msg, "cannot open x.crec: 2");
    cr_expect_eq(crec_error_set(NULL, CREC_ERR_ARG, "ignored"), CREC_ERR_ARG);
}

Test(common, corrupt_is_one_place)
{
    crec_error err;
    cr_expect_eq(crec_error_corrupt(&err, "bad magic"), CREC_ERR_CORRUPT);
    cr_expect_eq(err.code, CREC_ERR_CORRUPT);
#ifdef CREC_DEBUG
    /* a debug build names the check's source line, as SQLite's CORRUPT_BKPT */
    cr_expect(strncmp(err.msg, "bad magic [check at ", 20) == 0 &&
                  strstr(err.msg, "tests/test_common.c:") != NULL,
              "%s", err.msg);
#else
    cr_expect_str_eq(err.msg, "bad magic");
#endif
    crec_error_clear(&err);
    cr_expect_eq(err.code, CREC_OK);
    cr_expect_str_eq(err.msg, "");
}

Test(common, long_messages_are_cut_not_overflowed)
{
    crec_error err;
    char big[2 * CREC_ERROR_MSG_MAX];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    crec_error_set(&err, CREC_ERR_ARG, "%s", big);
    cr_expect_eq(strlen(err.msg), CREC_ERROR_MSG_MAX - 1);
}

Test(common, nth_allocation_fails_and_the_rest_too)
{
    void *a, *b, *c;
    crec_alloc_fail_after(2);
    a = crec_malloc(16);
    b = crec_malloc(16);
    c = crec_calloc(2, 8);
    crec_alloc_fail_after(0);
    cr_expect_not_null(a);
    cr_expect_null(b);
    cr_expect_null(c);
    crec_free(a);
    a = crec_realloc(NULL, 32);
    cr_expect_not_null(a, "injection is off again");
    crec_free(a);
    crec_free(NULL);
}

Test(common, grow_doubles_and_keeps_the_array_on_failure)
{
    size_t cap = 0;
    int *a = crec_grow(NULL, &cap, 1, sizeof *a, 4), *b;

    cr_assert_not_null(a);
    cr_expect_eq(cap, 4, "the first capacity");
    a[3] = 7;
    cr_expect_eq(crec_grow(a, &cap, 4, sizeof *a, 4), a, "room enough: the same array");
    b = crec_grow(a, &cap, 5, sizeof *a, 4);
    cr_assert_not_null(b);
    cr_expect_eq(cap, 8);
    cr_expect_eq(b[3], 7, "the elements move with the array");
    b = crec_grow(b, &cap, 100, sizeof *b, 4);
    cr_assert_not_null(b);
    cr_expect_eq(cap, 128, "doubled until it holds what is needed");
    crec_alloc_fail_after(1);
    cr_expect_null(crec_grow(b, &cap, 1000, sizeof *b, 4));
    crec_alloc_fail_after(0);
    cr_expect_eq(cap, 128, "a failed growth changes nothing");
    cr_expect_null(crec_grow(b, &cap, SIZE_MAX / 2, 8, 4), "an overflowing size fails");
    crec_free(b);
}
