/*
 * test_replayer.c - the replayer's register comparison, which names the
 * first difference in a divergence report.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "replayer/replayer_int.h"

Test(replayer, equal_states_do_not_differ)
{
    crec_regs a, b;
    char what[200] = "";
    memset(&a, 0x5a, sizeof a);
    b = a;
    cr_expect_eq(crec_regs_diff(&a, &b, what, sizeof what), 0);
}

Test(replayer, names_the_first_differing_register)
{
    crec_regs want = {0}, got = {0};
    char what[200];
    got.gpr[CREC_RBX] = 7;
    got.rip = 1;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect_str_eq(what, "rbx is 0x7, recorded 0x0");
}

Test(replayer, vector_and_x87_state_count)
{
    crec_regs want = {0}, got = {0};
    char what[200];
    got.xmm[15][3] = 1;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "xmm15") != NULL, "%s", what);
    got = want;
    got.st[7][9] = 0x80;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "st7") != NULL, "%s", what);
    got = want;
    got.fs_base = 0x1000;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "fs_base") != NULL, "%s", what);
}
