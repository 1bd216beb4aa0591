/*
 * cmd_find.c - `crec find FILE COND`: the next (or previous) time at which
 * a condition holds.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char find_usage[] =
    "usage: crec find [OPTIONS] FILE COND\n"
    "\n"
    "The first time after --from (before it with --backward) at which COND holds,\n"
    "printed as 'T THREAD' (every such time with --all, nearest first).  COND is:\n"
    "  enter FUNC        FUNC is entered: T is before its first instruction\n"
    "  leave FUNC        FUNC returns: T is after its ret\n"
    "  exec ADDR         the instruction at ADDR (or SYMBOL+OFF) is about to run\n"
    "  syscall NAME|NR   the syscall is about to run (no replay needed)\n"
    "  EXPRESSION        the expression becomes true: true at T, false at T-1, as\n"
    "                    '*(u32*)counter == 5', 'rax > 100', '*(u8*)0x601040 != 0'\n"
    "                    (registers, symbols, numbers, *(TYPE*)ADDR with TYPE u8..u64,\n"
    "                    i8..i64, char, int, long; + - * / % & | ^ << >> == != < <=\n"
    "                    > >= && || ! ~ and parentheses)\n"
    "Events at --from itself count going forward.  An expression that reads one\n"
    "fixed address and no register is found by replaying only the parts of the\n"
    "recording that write that address (the index says which); one that reads a\n"
    "register is evaluated before every instruction.\n"
    "\n"
    "Options:\n"
    "  --from T          where to look from (default: 0, or the end with --backward)\n"
    "  --backward        look back from --from\n"
    "  --all             every time, not only the first\n"
    "  --thread N        only in thread N (an expression that reads a register is\n"
    "                    followed in each thread; a memory one holds in thread N\n"
    "                    when thread N made it true)\n"
    "  --debug-dir DIR   look for separate debug files in DIR too\n"
    "  -h, --help        show this help\n"
    "\n"
    "Exit status: 0 found, 1 not found (or an error), 2 bad command line.\n";

static int print_hit(void *ctx, uint64_t t, uint32_t tid)
{
    int *found = ctx;

    (*found)++;
    printf("%" PRIu64 " %" PRIu32 "\n", t, tid);
    return cli_output_gone();
}

int cmd_find(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'}, {"backward", no_argument, NULL, 'b'},
        {"all", no_argument, NULL, 'a'},        {"debug-dir", required_argument, NULL, 'd'},
        {"thread", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    int c, rc, backward = 0, all = 0, found = 0;
    crec_recording *rec;
    crec_symtab *sym;
    crec_cond *cond = NULL;
    crec_error err = {0};
    uint64_t from, to;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': range.from = optarg; break;
        case 'b': backward = 1; break;
        case 'a': all = 1; break;
        case 'd': range.debug_dir = optarg; break;
        case 'T':
            if (cli_thread("find", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h': fputs(find_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("find", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("find", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("find", "needs a FILE and a COND (quote it)");
    if ((rc = cli_analysis_open("find", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    if (backward && !range.from)
        from = crec_length(rec);
    if (crec_cond_parse(sym, argv[optind + 1], &cond, &err) != CREC_OK)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    rc = crec_find(rec, cond, from, backward, all, (uint32_t)range.thread, print_hit, &found,
                   &err);
    crec_cond_free(cond);
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    if (!found && !cli_output_gone()) {
        fprintf(stderr, "crec: %s: '%s' does not hold %s %" PRIu64 "\n", argv[optind],
                argv[optind + 1], backward ? "before" : "after", from);
        return cli_finish(rec, sym, EXIT_FAIL);
    }
    return cli_finish(rec, sym, EXIT_OK);
}
