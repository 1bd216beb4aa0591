/*
 * cmd_keyframes.c - `crec keyframes FILE --from T --to T --every N`: key
 * frames on demand for a range of interest (crec_keyframes).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char keyframes_usage[] =
    "usage: crec keyframes FILE [--from T] [--to T] --every N\n"
    "\n"
    "Make key frames every N instructions from T to T (default: the whole\n"
    "recording) by replaying that range, so that later queries, 'when', the\n"
    "analysis commands and gdb's steps back there start their replays closer:\n"
    "a key frame made by replay is a restart point of the index (registers,\n"
    "stream positions and the memory a replay starting there needs).  They are\n"
    "kept in FILE.idx, and the request in FILE.kf, which every later build of\n"
    "the index follows.  N is at least 1000.  A recording of one thread.\n"
    "\n"
    "Options:\n"
    "  --from T, --to T   the range, instruction counts (decimal, or hex with 0x)\n"
    "  --every N          instructions between two key frames\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 done, 1 a bad file or range, 2 bad command line.\n";

struct kf_progress {
    int shown;
};

static void show(void *ctx, uint64_t done, uint64_t total)
{
    struct kf_progress *p = ctx;

    fprintf(stderr, "\rcrec keyframes: %" PRIu64 " of %" PRIu64 " instructions", done, total);
    p->shown = 1;
}

int cmd_keyframes(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"every", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t from = 0, to = UINT64_MAX, every = 0;
    struct kf_progress prog = {0};
    crec_keyframes_result res;
    crec_error err = {0};
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
        case 't':
        case 'e':
            if (cli_option_u64("keyframes", c == 'f' ? "from" : c == 't' ? "to" : "every", optarg,
                               c == 'e' ? CREC_KEYFRAMES_MIN_EVERY : 0, UINT64_MAX,
                               c == 'f' ? &from : c == 't' ? &to : &every) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h':
            fputs(keyframes_usage, stdout);
            return EXIT_OK;
        case ':':
            return cli_usage_error("keyframes", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("keyframes", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("keyframes", "no recording given");
    if (optind + 1 < argc)
        return cli_usage_error("keyframes", "one recording at a time");
    if (!every)
        return cli_usage_error("keyframes", "--every N is needed");
    if (from >= to)
        return cli_usage_error("keyframes", "--from %" PRIu64 " is not before --to %" PRIu64,
                               from, to);
    rc = crec_keyframes(argv[optind], from, to, every, isatty(STDERR_FILENO) ? show : NULL,
                        &prog, &res, &err);
    if (prog.shown)
        fputs("\r\033[K", stderr);
    if (rc != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    printf("%s: %" PRIu64 " key frames from %" PRIu64 " to %" PRIu64 " (every %" PRIu64
           " instructions; %" PRIu64 " restart points in all), in %s.idx (%" PRIu64 " bytes)\n",
           argv[optind], res.points, res.from, res.to, every, res.all_points, argv[optind],
           res.index_bytes);
    return EXIT_OK;
}
