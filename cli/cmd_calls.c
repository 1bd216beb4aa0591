/*
 * cmd_calls.c - `crec calls FILE FUNC`: every call of a function with its
 * arguments and return value; `--tree`: every call of a range, indented.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char calls_usage[] =
    "usage: crec calls [OPTIONS] FILE FUNC\n"
    "       crec calls --tree [OPTIONS] FILE\n"
    "\n"
    "Every call of FUNC, one line as it returns:\n"
    "  THREAD  START  END  FUNC(ARG1, ...) = RESULT\n"
    "START is the time at its first instruction, END the time after its return;\n"
    "the arguments are the SysV integer argument registers (rdi, rsi, rdx, rcx,\n"
    "r8, r9) at the entry, the result rax after the return.  A call left by a\n"
    "longjmp or an exception shows '= (unwound)', one still open at the end of\n"
    "the range '= (running)'.\n"
    "\n"
    "--tree prints every call of the range instead, as it happens, indented by\n"
    "depth: 'T THREAD  name(args)' when it begins and 'T THREAD  } name = RESULT'\n"
    "when it ends; each thread has its own stack, and the lines of threads that\n"
    "took turns interleave.  '(tail call)' marks a jmp to another function's\n"
    "start, '(signal N)' a signal handler entered at the end of a syscall.\n"
    "\n"
    "Options:\n"
    "  --args N          arguments to show (0 to 6, default 3)\n"
    "  --tree            the call tree of the range\n"
    "  --from T, --to T  the range (default: the whole recording)\n"
    "  --thread N        only thread N\n"
    "  --debug-dir DIR   look for separate debug files in DIR too\n"
    "  -h, --help        show this help\n";

struct calls {
    crec_symtab *sym;
    uint64_t fn;
    int tree;
    unsigned nargs;
};

static void print_args(const struct calls *k, const crec_frame *f)
{
    putchar('(');
    for (unsigned i = 0; i < k->nargs; i++)
        printf("%s%" PRId64, i ? ", " : "", (int64_t)f->args[i]);
    putchar(')');
}

static void print_result(int how, uint64_t rv)
{
    if (how == CREC_LEAVE_RET)
        printf(" = %" PRId64 "\n", (int64_t)rv);
    else
        printf(" = (%s)\n", how == CREC_LEAVE_UNWOUND ? "unwound" : "running");
}

static int on_enter(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth)
{
    struct calls *k = ctx;
    char name[300];

    (void)x;
    if (!k->tree)
        return 0;
    crec_symtab_name(k->sym, stack[depth].fn, name, sizeof name);
    printf("%" PRIu64 " %" PRIu32 " %*s%s", stack[depth].t, stack[depth].tid, (int)(2 * depth),
           "", name);
    print_args(k, &stack[depth]);
    if (stack[depth].signal)
        printf(" (signal %" PRIu64 ")\n", stack[depth].args[0]);
    else
        puts(stack[depth].tail ? " (tail call)" : "");
    return cli_output_gone();
}

static int on_leave(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                    int how, uint64_t rv)
{
    struct calls *k = ctx;
    char name[300];

    (void)x;
    crec_symtab_name(k->sym, stack[depth].fn, name, sizeof name);
    if (k->tree) {
        printf("%" PRIu64 " %" PRIu32 " %*s} %s", t, stack[depth].tid, (int)(2 * depth), "",
               name);
        print_result(how, rv);
    } else if (stack[depth].fn == k->fn) {
        printf("%" PRIu32 " %" PRIu64 " %" PRIu64 " %s", stack[depth].tid, stack[depth].t, t,
               name);
        print_args(k, &stack[depth]);
        print_result(how, rv);
    }
    return cli_output_gone();
}

int cmd_calls(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},   {"to", required_argument, NULL, 't'},
        {"thread", required_argument, NULL, 'T'}, {"args", required_argument, NULL, 'a'},
        {"tree", no_argument, NULL, 'r'},         {"debug-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    struct calls k = {.nargs = 3};
    crec_recording *rec;
    crec_symtab *sym;
    crec_error err = {0};
    uint64_t from, to;
    uint64_t n;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': range.from = optarg; break;
        case 't': range.to = optarg; break;
        case 'T':
            if (cli_thread("calls", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'a':
            if (cli_option_u64("calls", "args", optarg, 0, 6, &n) != EXIT_OK)
                return EXIT_USAGE;
            k.nargs = (unsigned)n;
            break;
        case 'r': k.tree = 1; break;
        case 'd': range.debug_dir = optarg; break;
        case 'h': fputs(calls_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("calls", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("calls", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != (k.tree ? 1 : 2))
        return cli_usage_error("calls", k.tree ? "--tree needs one FILE" : "needs a FILE and a FUNC");
    if ((rc = cli_analysis_open("calls", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    k.sym = sym;
    if (!k.tree && crec_symtab_resolve(sym, argv[optind + 1], &k.fn, &err) != CREC_OK)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    crec_calls_observer o = {.ctx = &k, .tid = (uint32_t)range.thread, .enter = on_enter,
                             .leave = on_leave};
    rc = crec_calls_run(rec, sym, from, to, &o, &err);
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    return cli_finish(rec, sym, EXIT_OK);
}
