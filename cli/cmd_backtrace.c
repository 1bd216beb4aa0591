/*
 * cmd_backtrace.c - `crec backtrace FILE`: the last blocks before a time
 * (by default the end, or the faulting instruction of a crash), expanded
 * into instructions with source lines and with loops collapsed, then the
 * call stack there.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char backtrace_usage[] =
    "usage: crec backtrace [OPTIONS] FILE\n"
    "\n"
    "How the program got to a time: the last blocks before it, each expanded\n"
    "into its instructions with their source lines (T ADDRESS SYMBOL+OFF\n"
    "[FILE:LINE] DISASSEMBLY), a loop shown once with 'repeated N times'; then\n"
    "the call stack there, innermost first.  The time is the end, where a crash\n"
    "is: its faulting instruction comes last.  With several threads it follows\n"
    "the thread that runs at that time (at the end of a crash, the one that\n"
    "faulted), or --thread N: its blocks, and its stack (its state when it last ran).\n"
    "\n"
    "Options:\n"
    "  --at T           the time (a count, end, N%, syscall:N; default: the end)\n"
    "  --last N         blocks to show (default 16; a collapsed loop counts once)\n"
    "  --thread N       follow thread N\n"
    "  --debug-dir DIR  look for separate debug files in DIR too\n"
    "  -h, --help       show this help\n";

static void print_insn(crec_symtab *sym, uint64_t t, uint64_t addr, const char *mark,
                       unsigned *len)
{
    char name[300], dis[160];
    crec_place p;

    crec_symtab_name(sym, addr, name, sizeof name);
    crec_symtab_place(sym, addr, &p);
    if (crec_symtab_disasm(sym, addr, dis, sizeof dis, len, NULL) != CREC_OK)
        snprintf(dis, sizeof dis, "(not code of a recorded mapping)");
    if (t == UINT64_MAX)
        printf("    ");
    else
        printf("%" PRIu64 " ", t);
    printf("0x%" PRIx64 " %s", addr, name);
    if (p.file)
        printf(" %s:%u", p.file, p.line);
    printf("  %s%s\n", dis, mark);
}

/* One block's instructions, with their times when t is known. */
static void print_block(crec_symtab *sym, uint64_t t, uint64_t addr, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned len = 1;
        print_insn(sym, t == UINT64_MAX ? t : t + i, addr, "", &len);
        addr += len;
    }
}

static void print_frame(crec_symtab *sym, size_t k, uint64_t pc, const crec_frame *f)
{
    char name[300], fn[300];
    crec_place p;

    crec_symtab_name(sym, pc, name, sizeof name);
    crec_symtab_name(sym, f->fn, fn, sizeof fn);
    crec_symtab_place(sym, pc, &p);
    printf("#%zu  0x%" PRIx64 " in %s (%s", k, pc, fn, name);
    if (p.file)
        printf(", %s:%u", p.file, p.line);
    if (f->signal)
        printf(")  entered at %" PRIu64 " by signal %" PRIu64 "\n", f->t, f->args[0]);
    else
        printf(")  entered at %" PRIu64 "%s\n", f->t, f->tail ? " by a tail call" : "");
}

int cmd_backtrace(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"at", required_argument, NULL, 'a'},     {"last", required_argument, NULL, 'l'},
        {"thread", required_argument, NULL, 'T'},
        {"debug-dir", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    unsigned long last = 16;
    crec_recording *rec;
    crec_symtab *sym;
    crec_backtrace *b = NULL;
    crec_crash crash;
    crec_end ending;
    crec_error err = {0};
    uint64_t from, at;
    int c, rc, crashed;
    uint64_t n;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': range.to = optarg; break;
        case 'l':
            if (cli_option_u64("backtrace", "last", optarg, 1, 1000000, &n) != EXIT_OK)
                return EXIT_USAGE;
            last = (unsigned long)n;
            break;
        case 'd': range.debug_dir = optarg; break;
        case 'T':
            if (cli_thread("backtrace", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h': fputs(backtrace_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("backtrace", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("backtrace", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("backtrace", "needs one FILE");
    if ((rc = cli_analysis_open("backtrace", argv[optind], &range, &rec, &sym, &from, &at)) != EXIT_OK)
        return rc;
    if (crec_backtrace_run(rec, sym, at, last, (uint32_t)range.thread, &b, &err) != CREC_OK)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    crashed = at == crec_length(rec) && crec_crash_info(rec, &crash, NULL) == CREC_OK &&
              crec_ending(rec, &ending, NULL) == CREC_OK && ending.tid == b->tid;
    if (crec_threads(rec) > 1)
        printf("Thread %" PRIu32 ": the last %zu block%s before %" PRIu64 ":\n", b->tid, b->nruns,
               b->nruns == 1 ? "" : "s", at);
    else
        printf("The last %zu block%s before %" PRIu64 ":\n", b->nruns, b->nruns == 1 ? "" : "s",
               at);
    for (size_t i = 0; i < b->nruns && !cli_output_gone(); i++) {
        const crec_bt_run *r = &b->runs[i];
        if (r->reps == 1) {
            print_block(sym, r->t, r->addr[0], r->ninsns[0]);
            continue;
        }
        char lo[300], hi[300];
        crec_symtab_name(sym, r->addr[0], lo, sizeof lo);
        crec_symtab_name(sym, r->addr[r->period - 1], hi, sizeof hi);
        printf("--- from %" PRIu64 ": block%s %s%s%s repeated %" PRIu64 " times; one turn:\n", r->t,
               r->period > 1 ? "s" : "", lo, r->period > 1 ? ".." : "", r->period > 1 ? hi : "",
               r->reps);
        for (uint32_t k = 0; k < r->period; k++)
            print_block(sym, UINT64_MAX, r->addr[k], r->ninsns[k]);
        printf("---\n");
    }
    if (crashed) {
        char mark[200];
        const char *name = sigabbrev_np(crash.signo);
        if (crash.has_addr)
            snprintf(mark, sizeof mark, "   <- SIG%s, address 0x%" PRIx64, name ? name : "?",
                     crash.addr);
        else
            snprintf(mark, sizeof mark, "   <- SIG%s", name ? name : "?");
        print_insn(sym, crash.t, crash.rip, mark, NULL);
    }
    if (crec_threads(rec) > 1)
        printf("\nCall stack of thread %" PRIu32 " at %" PRIu64 ":\n", b->tid, at);
    else
        printf("\nCall stack at %" PRIu64 ":\n", at);
    {
        crec_regs r;
        uint64_t pc = 0;
        if (crec_seek(rec, at, &err) == CREC_OK &&
            crec_read_thread_registers(rec, b->tid, &r, &err) == CREC_OK)
            pc = r.rip;
        for (size_t k = b->depth; k-- > 0 && !cli_output_gone();) {
            print_frame(sym, b->depth - 1 - k, pc, &b->stack[k]);
            pc = b->stack[k].site;
        }
    }
    crec_backtrace_free(b);
    return cli_finish(rec, sym, EXIT_OK);
}
