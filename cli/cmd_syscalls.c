/*
 * cmd_syscalls.c - `crec syscalls FILE`: an strace-style log of the
 * recording from its SYSCALL records, with no replay.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char syscalls_usage[] =
    "usage: crec syscalls [OPTIONS] FILE\n"
    "\n"
    "Every syscall of the recording, one a line, as strace prints them:\n"
    "  T  THREAD  NAME(ARGS) = RESULT\n"
    "T is the time before the syscall instruction.  Arguments are shown up to the\n"
    "last non-zero one (small numbers in decimal, others in hex); a failure shows\n"
    "-1 and the error's name.  Read from the recording: nothing is replayed.\n"
    "\n"
    "Options:\n"
    "  --thread N   only thread N\n"
    "  -h, --help   show this help\n";

static void print_arg(uint64_t v)
{
    if (v < 0x10000)
        printf("%" PRIu64, v);
    else if ((int64_t)v < 0 && (int64_t)v > -0x10000)
        printf("%" PRId64, (int64_t)v);
    else
        printf("0x%" PRIx64, v);
}

static int on_syscall(void *ctx, const crec_syscall_info *s)
{
    unsigned long *thread = ctx;
    int n = 6;

    if (*thread && s->tid != *thread)
        return 0;
    while (n > 1 && s->args[n - 1] == 0)
        n--;
    printf("%" PRIu64 " %" PRIu32 " %s(", s->t, s->tid, crec_syscall_name(s->nr));
    for (int i = 0; i < n; i++) {
        if (i)
            printf(", ");
        print_arg(s->args[i]);
    }
    if (s->ret < 0 && s->ret > -4096) {
        const char *e = strerrorname_np((int)-s->ret);
        printf(") = -1 %s\n", e ? e : "?");
    } else {
        printf(") = ");
        print_arg((uint64_t)s->ret);
        putchar('\n');
    }
    return cli_output_gone();
}

int cmd_syscalls(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"thread", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    crec_recording *rec;
    crec_symtab *sym;
    crec_error err = {0};
    uint64_t from, to;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'T':
            if (cli_thread("syscalls", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h': fputs(syscalls_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("syscalls", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("syscalls", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("syscalls", "needs one FILE");
    if ((rc = cli_analysis_open("syscalls", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    rc = crec_syscalls(rec, on_syscall, &range.thread, &err);
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    return cli_finish(rec, sym, EXIT_OK);
}
