/*
 * cmd_replay.c - `crec replay`: re-execute a recording with no OS and check
 * that it runs as recorded.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "replayer/replayer.h"

static const char replay_usage[] =
    "usage: crec replay [OPTIONS] FILE\n"
    "\n"
    "Re-execute the recording FILE on crec's software CPU, with no OS and no\n"
    "file of the recorded program, and check at every key frame, at every\n"
    "write-like syscall and at the end that it runs exactly as recorded.\n"
    "A recording cut short (the recorder was killed) is verified up to its\n"
    "last key frame, and the result says so.  On a terminal, a long replay\n"
    "shows how far it has got on standard error.\n"
    "Exit status 0: verified; 1: a bad file; 3: the replay diverged.\n"
    "\n"
    "Options:\n"
    "  --from T        start at the last key frame at or before instruction T\n"
    "  -j, --jobs N    verify segments on N threads at once (default 1)\n"
    "  -q, --quiet     print nothing when the replay is verified\n"
    "  -h, --help      show this help\n";

static int parse_count(const char *s, uint64_t *out)
{
    char *end;

    if (!s[0] || s[0] == '-')
        return -1;
    *out = strtoull(s, &end, 0);
    return *end ? -1 : 0;
}

/* The progress line: on a terminal only, and only once a replay has run
 * long enough for a user to wonder how far it has got. */
struct progress {
    double t0;        /* cli_now() when the replay started */
    int shown; /* a line is on the terminal and must be erased */
};

#define PROGRESS_AFTER_S 1.0

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress *p = ctx;

    if (!p->shown && cli_now() - p->t0 < PROGRESS_AFTER_S)
        return;
    if (done > total)
        done = total;
    fprintf(stderr, "\rcrec replay: %" PRIu64 " of %" PRIu64 " instructions (%d%%)", done, total,
            total ? (int)(100 * (double)done / (double)total) : 100);
    fflush(stderr);
    p->shown = 1;
}

static void erase_progress(const struct progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr); /* carriage return, erase to the end of the line */
        fflush(stderr);
    }
}

static void print_result(const char *file, const crec_replay_result *res, double secs)
{
    printf("%s: replay verified%s: %" PRIu64 " instructions replayed (from %" PRIu64 " to %" PRIu64
           "), %" PRIu64 " key frames checked, %" PRIu64 " syscalls, %" PRIu64
           " writes checked, %.2f s",
           file, res->truncated ? " up to where the recording was cut short (its last key frame)"
                                : "",
           res->replayed, res->start_icount, res->instructions, res->keyframes_checked,
           res->syscalls, res->writes_checked, secs);
    if (secs > 0)
        printf(", %.1f MIPS", (double)res->replayed / secs / 1e6);
    printf("\n");
}

int cmd_replay(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"jobs", required_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    crec_replay_options o = {0};
    crec_replay_result res;
    crec_error err = {0};
    struct progress prog = {0};
    int c, quiet = 0, rc;
    double secs;
    uint64_t v;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (parse_count(optarg, &o.from) != 0)
                return cli_usage_error("replay", "bad --from '%s'", optarg);
            break;
        case 'j':
            if (parse_count(optarg, &v) != 0 || v < 1 || v > 64)
                return cli_usage_error("replay", "bad --jobs '%s' (1 to 64)", optarg);
            o.jobs = (unsigned)v;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(replay_usage, stdout);
            return EXIT_OK;
        default:
            return cli_usage_error("replay", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error("replay", optind >= argc ? "no recording given"
                                                        : "one recording at a time");
    if (!quiet && isatty(STDERR_FILENO)) {
        o.progress = show_progress;
        o.progress_ctx = &prog;
    }
    prog.t0 = cli_now();
    rc = crec_replay_run(argv[optind], &o, &res, &err);
    secs = cli_now() - prog.t0;
    erase_progress(&prog);
    if (rc != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    if (res.diverged)
        return cli_fail(EXIT_DIVERGED,
                        "%s: replay diverged at instruction %" PRIu64 ", rip 0x%" PRIx64
                        " (%s): %s",
                        argv[optind], res.div.icount, res.div.rip, res.div.insn, res.div.what);
    if (!quiet)
        print_result(argv[optind], &res, secs);
    return EXIT_OK;
}
