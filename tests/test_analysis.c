/*
 * test_analysis.c - the analysis module on traces-sample/segv.crec (a
 * static musl program of 999 instructions killed by SIGSEGV), copied to a
 * temporary directory: expressions, find, profile, back-trace, printf,
 * symbols.  tests/e2e/t_analysis.sh checks the commands on more guests.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"

static char tmpdir[64], path[128];
static crec_recording *rec;
static crec_symtab *sym;

static void setup(void)
{
    char cmd[300];
    crec_error err = {0};

    strcpy(tmpdir, "/tmp/crec-analysis-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
    snprintf(path, sizeof path, "%s/segv.crec", tmpdir);
    snprintf(cmd, sizeof cmd, "cp traces-sample/segv.crec %s", path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(crec_open(path, 0, &rec, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_symtab_open(rec, NULL, &sym, &err), CREC_OK, "%s", err.msg);
}

static void teardown(void)
{
    char cmd[300];

    crec_symtab_free(sym);
    crec_close(rec);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(analysis, .init = setup, .fini = teardown);

Test(analysis, expressions_parse_and_fold)
{
    crec_expr *e;
    crec_error err = {0};
    crec_range r;
    uint64_t v;
    int known;

    cr_assert_eq(crec_expr_parse(sym, "1 + 2 * 3 == 7 && (0x10 >> 2) == 4", &e, &err), CREC_OK);
    cr_assert_eq(an_expr_value(e, NULL, &v, &known), CREC_OK);
    cr_assert_eq(v, 1);
    cr_assert(known);
    crec_expr_free(e);
    cr_assert_eq(crec_expr_parse(sym, "*(u32*)(0x1000 + 8) != 5", &e, &err), CREC_OK);
    cr_assert(crec_expr_memory(e, &r));
    cr_assert_eq(r.addr, 0x1008);
    cr_assert_eq(r.len, 4);
    cr_assert_not(crec_expr_uses_registers(e));
    crec_expr_free(e);
    cr_assert_eq(crec_expr_parse(sym, "r8d + ah - *(i16*)rsp", &e, &err), CREC_OK);
    cr_assert(crec_expr_uses_registers(e));
    cr_assert_not(crec_expr_memory(e, &r));
    crec_expr_free(e);
    cr_assert_eq(crec_expr_parse(sym, "-1 < 0", &e, &err), CREC_OK); /* signed: true */
    cr_assert_eq(an_expr_value(e, NULL, &v, &known), CREC_OK);
    cr_assert_eq(v, 1);
    crec_expr_free(e);
}

Test(analysis, bad_expressions_say_where)
{
    crec_expr *e = NULL;
    crec_error err = {0};

    cr_assert_eq(crec_expr_parse(sym, "1 +", &e, &err), CREC_ERR_ARG);
    cr_assert(strstr(err.msg, "'1 +'") != NULL, "%s", err.msg);
    cr_assert_null(e);
    cr_assert_eq(crec_expr_parse(sym, "*rax", &e, &err), CREC_ERR_ARG);
    cr_assert(strstr(err.msg, "needs a type") != NULL, "%s", err.msg);
    cr_assert_eq(crec_expr_parse(sym, "no_such_symbol + 1", &e, &err), CREC_ERR_NOTFOUND);
    cr_assert(strstr(err.msg, "no_such_symbol") != NULL, "%s", err.msg);
}

Test(analysis, symbols_resolve_and_name)
{
    crec_error err = {0};
    uint64_t main_addr, a;
    char name[64];

    cr_assert_eq(crec_symtab_resolve(sym, "main", &main_addr, &err), CREC_OK);
    cr_assert_eq(crec_symtab_resolve(sym, "main+0x29", &a, &err), CREC_OK);
    cr_assert_eq(a, main_addr + 0x29);
    crec_symtab_name(sym, a, name, sizeof name);
    cr_assert_str_eq(name, "main+0x29");
    cr_assert_eq(crec_symtab_resolve(sym, "0x401162", &a, &err), CREC_OK);
    cr_assert_eq(a, 0x401162);
    cr_assert_eq(crec_symtab_disasm(sym, 0x401162, name, sizeof name, NULL, &err), CREC_OK);
    cr_assert_str_eq(name, "mov dword ptr [rbx], 0x2a");
    cr_assert_eq(crec_symtab_resolve(sym, "nothing_here", &a, &err), CREC_ERR_NOTFOUND);
}

static int first_hit(void *ctx, uint64_t t, uint32_t tid)
{
    uint64_t *out = ctx;

    cr_assert_eq(tid, 1);
    *out = t;
    return 1;
}

Test(analysis, find_syscall_memory_and_entry)
{
    crec_cond *c;
    crec_error err = {0};
    uint64_t t = 0;

    cr_assert_eq(crec_cond_parse(sym, "syscall writev", &c, &err), CREC_OK);
    cr_assert_eq(crec_find(rec, c, 0, 0, 0, 0, first_hit, &t, &err), CREC_OK);
    cr_assert_eq(t, 915);
    crec_cond_free(c);
    /* main's saved rbx: the stack slot at rsp at the end */
    cr_assert_eq(crec_cond_parse(sym, "*(u64*)0x7fffffffee20 == 0x401139", &c, &err), CREC_OK);
    cr_assert_eq(crec_find(rec, c, 0, 0, 0, 0, first_hit, &t, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(t, 550);
    t = 0;
    cr_assert_eq(crec_find(rec, c, 999, 1, 0, 0, first_hit, &t, &err), CREC_OK);
    cr_assert_eq(t, 550);
    crec_cond_free(c);
    cr_assert_eq(crec_cond_parse(sym, "enter main", &c, &err), CREC_OK);
    cr_assert_eq(crec_find(rec, c, 0, 0, 0, 0, first_hit, &t, &err), CREC_OK);
    cr_assert_eq(t, 549);
    t = 0;
    cr_assert_eq(crec_find(rec, c, 999, 1, 0, 0, first_hit, &t, &err), CREC_OK);
    cr_assert_eq(t, 549);
    crec_cond_free(c);
    cr_assert_eq(crec_cond_parse(sym, "syscall no_such_call", &c, &err), CREC_ERR_ARG);
}

Test(analysis, profile_self_sums_to_the_total)
{
    crec_profile *p;
    const crec_profile_fn *fns;
    crec_error err = {0};
    uint64_t total, sum = 0, main_calls = 0;
    size_t n;
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");

    cr_assert_eq(crec_profile_run(rec, sym, 0, crec_length(rec), 0, 1, &p, &err), CREC_OK);
    n = crec_profile_functions(p, &fns, &total);
    cr_assert_eq(total, 999);
    for (size_t i = 0; i < n; i++) {
        sum += fns[i].self;
        if (!strcmp(fns[i].name, "main"))
            main_calls = fns[i].calls;
        cr_assert_leq(fns[i].min, fns[i].max);
    }
    cr_assert_eq(sum, total);
    cr_assert_eq(main_calls, 1);
    cr_assert_eq(crec_profile_write_callgrind(p, f, &err), CREC_OK);
    fclose(f);
    cr_assert(strstr(buf, "summary: 999\n") != NULL);
    crec_profile_free(p);
}

Test(analysis, backtrace_of_the_crash)
{
    crec_backtrace *b;
    crec_crash c;
    crec_error err = {0};
    char name[64];

    cr_assert_eq(crec_crash_info(rec, &c, &err), CREC_OK);
    cr_assert_eq(c.signo, 11);
    cr_assert_eq(c.rip, 0x401162);
    cr_assert(c.has_addr);
    cr_assert_eq(c.addr, 0x40);
    cr_assert_eq(crec_backtrace_run(rec, sym, crec_length(rec), 4, 0, &b, &err), CREC_OK);
    cr_assert_eq(b->nruns, 4);
    cr_assert_gt(b->depth, 1);
    crec_symtab_name(sym, b->stack[b->depth - 1].fn, name, sizeof name);
    cr_assert_str_eq(name, "main", "fflush has returned: main is on top");
    crec_backtrace_free(b);
}

static int keep_hit(void *ctx, const crec_printf_hit *h)
{
    void **pp = ctx;
    char out[128];

    crec_printf_format(pp[0], h, out, sizeof out);
    strcpy(pp[1], out);
    return 0;
}

Test(analysis, printf_formats_when_read)
{
    crec_printf *p;
    crec_error err = {0};
    char *const args[] = {"edi", "*(u64*)rsi", "edi"};
    char got[128] = "";
    void *ctx[2];

    cr_assert_eq(crec_printf_parse(sym, "main", "argc=%d argv[0]=%s %#06x%%", args, 3, &p, &err),
                 CREC_OK, "%s", err.msg);
    ctx[0] = p, ctx[1] = got;
    cr_assert_eq(crec_printf_run(rec, p, 0, crec_length(rec), 0, keep_hit, ctx, &err), CREC_OK);
    cr_assert_str_eq(got, "argc=1 argv[0]=./segv 0x0001%");
    crec_printf_free(p);
    cr_assert_eq(crec_printf_parse(sym, "main", "%d %d", args, 1, &p, &err), CREC_ERR_ARG);
    cr_assert_eq(crec_printf_parse(sym, "main", "%q", args, 1, &p, &err), CREC_ERR_ARG);
}
