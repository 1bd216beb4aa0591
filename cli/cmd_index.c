/*
 * cmd_index.c - `crec index [--jobs N] [--pid P] FILE`: build FILE.idx (or
 * a process's FILE.pN.idx), the index that queries use (docs/QUERY.md),
 * afresh.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"

static const char index_usage[] =
    "usage: crec index [OPTIONS] FILE\n"
    "\n"
    "Build the index of a recording, FILE.idx beside it, afresh: what `crec\n"
    "query` and the other queries use to answer in milliseconds.  `crec record`\n"
    "writes it as it records a program of one thread and one process to a file,\n"
    "and the first query builds it when it is missing; this builds it now,\n"
    "whatever is there, by replaying the recording's segments on several host\n"
    "threads (a recording with few key frames has few segments to share out).\n"
    "A recording of several processes has an index for each: --pid chooses.\n"
    "\n"
    "Options:\n"
    "  -j, --jobs N    host threads to replay on (default 2, 1..16)\n"
    "  --pid N[.K]     the process of pid N (its K-th program), in a recording\n"
    "                  of several\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: 0 success, 1 bad or corrupt file, 2 bad command line.\n";

int cmd_index(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobs", required_argument, NULL, 'j'},
        {"pid", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    crec_recording *rec = NULL;
    crec_error err = {0};
    uint64_t jobs = 0, ib = 0, tb = 0;
    uint32_t pid = 0, image = 0;
    const char *pid_arg = NULL; /* as given: N or N.K */
    struct timespec t0, t1;
    double secs;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":j:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (cli_option_u64("index", "jobs", optarg, 1, CREC_INDEX_MAX_JOBS, &jobs) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'p':
            if (cli_parse_pid("index", optarg, &pid, &image) != EXIT_OK)
                return EXIT_USAGE;
            pid_arg = optarg;
            break;
        case 'h':
            fputs(index_usage, stdout);
            return EXIT_OK;
        case ':':
            return cli_usage_error("index", "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("index", "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error("index", "expected one FILE");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = cli_open_process(argv[optind], pid, image, CREC_OPEN_NO_INDEX, &rec, &err);
    if (rc == CREC_OK) {
        cli_show_progress(rec, argv[optind]);
        rc = crec_index_build(rec, (unsigned)jobs, &ib, &tb, &err);
    }
    crec_close(rec);
    if (rc != CREC_OK) {
        fprintf(stderr, "crec: %s\n", err.msg);
        return EXIT_FAIL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (pid_arg)
        printf("%s (pid %s): index of %" PRIu64 " bytes, %.3f of the recording, built in %.2f s\n",
               argv[optind], pid_arg, ib, tb ? (double)ib / (double)tb : 0.0, secs);
    else
        printf("%s.idx: %" PRIu64 " bytes, %.3f of the recording, built in %.2f s\n",
               argv[optind], ib, tb ? (double)ib / (double)tb : 0.0, secs);
    return EXIT_OK;
}
