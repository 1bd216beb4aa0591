/*
 * cmd_record.c - `crec record`: run a program under the emulator and write
 * a recording of it.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

static const char record_usage[] =
    "usage: crec record [OPTIONS] [--] PROG [ARGS...]   (or: crec rec ...)\n"
    "\n"
    "Run PROG under crec's software CPU and record it.  The program's input and\n"
    "output are the real ones; crec exits with the program's own status.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE           write the recording to FILE; default: the program's\n"
    "                              name with .crec.  '-': to standard output, for a\n"
    "                              pipe; the program's own output then goes to\n"
    "                              standard error\n"
    "  --keyframe-interval N       instructions between key frames (default 1000000);\n"
    "                              numbers are decimal, or hex with 0x\n"
    "  --snapshot-interval M       key frames between memory snapshots (default 16)\n"
    "  --cache-bits K              prediction cache of 2^K entries (4..24, default 16)\n"
    "  --stats                     print what was recorded when the program ends\n"
    "  --strace                    log every syscall to standard error\n"
    "  --strict                    stop at the first syscall crec does not emulate\n"
    "  -h, --help                  show this help\n"
    "\n"
    "SIGINT or SIGTERM stops the recording: the file is completed where the\n"
    "program was, and crec exits 128+N.\n";

/* The signal that asked us to stop recording (SIGINT/SIGTERM), or 0: the
 * recorder looks at it at every block start (crec_record_options.stop). */
static volatile sig_atomic_t record_stop;

static void on_stop_signal(int signo)
{
    record_stop = signo;
}

/* The default output: the program's base name with .crec, in the current directory. */
static void default_output(const char *prog, char *buf, size_t size)
{
    const char *base = strrchr(prog, '/');
    snprintf(buf, size, "%s.crec", base ? base + 1 : prog);
}

static void print_stats(const char *out, const crec_record_stats *st, double secs)
{
    fprintf(stderr,
            "crec: recorded %llu instructions in %.2f s to %s: %llu key frames, %llu "
            "snapshots, %llu syscalls, %llu of %llu loads logged\n",
            (unsigned long long)st->instructions, secs, out, (unsigned long long)st->keyframes,
            (unsigned long long)st->snapshots, (unsigned long long)st->syscalls,
            (unsigned long long)st->reads_logged,
            (unsigned long long)(st->reads_logged + st->reads_hit));
}

int cmd_record(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"keyframe-interval", required_argument, NULL, 'k'},
        {"snapshot-interval", required_argument, NULL, 's'},
        {"cache-bits", required_argument, NULL, 'c'},
        {"stats", no_argument, NULL, 'S'},
        {"strace", no_argument, NULL, 't'},
        {"strict", no_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    crec_record_options o = {0};
    crec_record_stats st;
    struct sigaction sa = {0}, old_int, old_term;
    crec_exit ex;
    crec_error err = {0};
    char path[PATH_MAX], out[PATH_MAX];
    double t0, secs;
    int c, stats = 0, rc;
    uint64_t v;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            o.out_path = optarg;
            break;
        case 'k':
            if (cli_option_u64("record", "keyframe-interval", optarg, 1, UINT64_MAX,
                               &o.keyframe_interval) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 's':
            if (cli_option_u64("record", "snapshot-interval", optarg, 1, UINT64_MAX,
                               &o.snapshot_interval) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'c':
            if (cli_option_u64("record", "cache-bits", optarg, 4, 24, &v) != EXIT_OK)
                return EXIT_USAGE;
            o.cache_log2 = (unsigned)v;
            break;
        case 'S':
            stats = 1;
            break;
        case 't':
            o.strace = 1;
            break;
        case 'x':
            o.strict = 1;
            break;
        case 'h':
            fputs(record_usage, stdout);
            return EXIT_OK;
        default:
            return cli_usage_error("record", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("record", "no program to record");
    switch (crec_find_program(argv[optind], path, sizeof path, &err)) {
    case CREC_OK:
        break;
    case CREC_ERR_NOTFOUND:
        return cli_fail(EXIT_NOT_FOUND, "%s", err.msg);
    default:
        return cli_fail(EXIT_NOT_EXEC, "%s", err.msg);
    }
    o.out_fd = -1;
    if (!o.out_path) {
        default_output(argv[optind], out, sizeof out);
        o.out_path = out;
    } else if (strcmp(o.out_path, "-") == 0) {
        /* The recording takes standard output; the program writes to stderr. */
        o.out_fd = dup(STDOUT_FILENO);
        if (o.out_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            return cli_fail(EXIT_CREC_FAILED, "can't set up standard output for the recording");
        o.out_path = "<standard output>";
        signal(SIGPIPE, SIG_IGN); /* a reader that goes away is an I/O error */
    }
    /* The command owns the process's signals: SIGINT and SIGTERM ask the
     * recorder to stop, and the recording is completed. */
    record_stop = 0;
    o.stop = &record_stop;
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    t0 = cli_now();
    rc = crec_record(&o, path, argv + optind, environ, &ex, &st, &err);
    secs = cli_now() - t0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc != CREC_OK)
        return cli_fail(rc == CREC_ERR_GUEST ? EXIT_NOT_EXEC : EXIT_CREC_FAILED, "%s", err.msg);
    if (stats)
        print_stats(o.out_path, &st, secs);
    if (ex.signo) {
        fprintf(stderr, "crec: %s\n", ex.msg);
        return 128 + ex.signo;
    }
    return ex.status;
}
