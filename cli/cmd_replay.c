/*
 * cmd_replay.c - `crec replay`: re-execute a recording with no OS and check
 * that it runs as recorded.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char replay_usage[] =
    "usage: crec replay [OPTIONS] FILE\n"
    "       crec replay FILE --query WHAT@WHEN [WHAT@WHEN ...]\n"
    "       crec replay query FILE WHAT@WHEN [WHAT@WHEN ...]\n"
    "\n"
    "Re-execute the recording FILE on crec's software CPU, with no OS and no\n"
    "file of the recorded program, and check at every key frame, at every\n"
    "write-like syscall and at the end that it runs exactly as recorded.\n"
    "A recording cut short (the recorder was killed) is verified up to its\n"
    "last key frame, and the result says so.  On a terminal, a long replay\n"
    "shows how far it has got on standard error.  FILE '-' (or a FIFO) is\n"
    "verified as it arrives, while the recorder still writes it\n"
    "(crec record -o - -- PROG | crec replay -), and each part verified is\n"
    "reported on standard error.\n"
    "\n"
    "A recording of several processes (a program that forks) is verified one\n"
    "process at a time, each from its own streams; a process whose recorder was\n"
    "killed is verified up to its last key frame.\n"
    "\n"
    "A program of several threads is replayed whole, its threads switched where\n"
    "the recording switched them.  With --jobs N (N > 1), --thread, --from, or\n"
    "a file cut short, each thread is verified alone instead, from its own\n"
    "streams (its loads' values, its events, and where it was switched in and\n"
    "out), in pieces spread over N host threads.\n"
    "Exit status 0: verified; 1: a bad file; 3: the replay diverged.\n"
    "\n"
    "With --query (or as 'crec replay query'), answer each WHAT@WHEN instead,\n"
    "as 'crec query FILE WHAT@WHEN ...' does (see 'crec query --help').\n"
    "\n"
    "Options:\n"
    "  --from T        start at the last key frame at or before instruction T\n"
    "                  (decimal, or hex with 0x)\n"
    "  -j, --jobs N    verify N parts at once on N threads (default 1): cut at\n"
    "                  key frames, and at the restart points of FILE.idx (checked:\n"
    "                  if they don't hold, the replay is done again without them),\n"
    "                  into parts of about equal cost as FILE.idx measured it\n"
    "  --thread T      verify thread T alone (threads are numbered from 1, as\n"
    "                  'crec info' lists them)\n"
    "  --pid N[.K]     a recording of several processes: verify only those of pid N\n"
    "                  (with .K its K-th program only: execve goes on as a new\n"
    "                  process); without it every process is verified, each alone\n"
    "  -q, --quiet     print nothing when the replay is verified\n"
    "  --query Q       answer the query Q (WHAT@WHEN); more queries may follow FILE\n"
    "  --size N, --format F, --json, --no-index\n"
    "                  with --query: as for 'crec query'\n"
    "  -h, --help      show this help\n";

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

/* A recording read from a pipe while it is made: how far it is verified. */
static void show_live(void *ctx, uint64_t verified, uint64_t replayed)
{
    const char *file = ctx;

    fprintf(stderr, "crec replay: %s: verified up to instruction %" PRIu64 " (%" PRIu64
            " replayed); the recording goes on\n", strcmp(file, "-") ? file : "<stdin>", verified,
            replayed);
    fflush(stderr);
}

static void erase_progress(const struct progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr); /* carriage return, erase to the end of the line */
        fflush(stderr);
    }
}

/* With --jobs: how the replay was cut (a user can't see it otherwise). */
static void print_parts(const char *file, const crec_replay_result *res)
{
    const char *s = res->parts == 1 ? "" : "s";
    char starts[32 * CREC_REPLAY_PARTS_SHOWN + 64] = "";
    size_t at = 0;

    /* where the parts of one thread start (threads alone: each its own) */
    for (uint64_t j = 0; !res->alone && res->parts > 1 && j < res->parts &&
                         j < CREC_REPLAY_PARTS_SHOWN; j++)
        at += (size_t)snprintf(starts + at, sizeof starts - at, "%s %" PRIu64,
                               j == 0 ? " (from instructions" : j + 1 == res->parts ? " and" : ",",
                               res->part_start[j]);
    if (at)
        snprintf(starts + at, sizeof starts - at, "%s)",
                 res->parts > CREC_REPLAY_PARTS_SHOWN ? ", ..." : "");
    if (res->parts_at_points)
        printf("%s: replayed in %" PRIu64 " parts%s, %" PRIu64 " of them from restart points of "
               "%s.idx, cut to equal %s\n", file, res->parts, starts, res->parts_at_points, file,
               res->parts_by_cost ? "costs as it measured them" : "instruction counts");
    else if (res->points_failed)
        printf("%s: the restart points of %s.idx did not hold: replayed again in %" PRIu64
               " part%s%s cut at key frames\n", file, file, res->parts, s, starts);
    else
        printf("%s: replayed in %" PRIu64 " part%s%s cut at key frames\n", file, res->parts, s,
               starts);
}

static void print_result(const char *file, const crec_replay_result *res, uint32_t thread,
                         double secs)
{
    char threads[96] = "", procs[128] = "", points[48] = "";

    if (thread && res->threads > 1)
        snprintf(threads, sizeof threads, " (thread %u of %" PRIu64 ", alone)", thread,
                 res->threads);
    else if (res->threads > 1)
        snprintf(threads, sizeof threads, res->alone ? " (%" PRIu64 " threads, each alone)"
                                                     : " (%" PRIu64 " threads, in the recorded "
                                                       "order)", res->threads);
    /* (a recording before format 4 has no check point: its line is as it was) */
    if (res->checkpoints_checked)
        snprintf(points, sizeof points, " and %" PRIu64 " check points", res->checkpoints_checked);
    if (res->processes > 0)
        snprintf(procs, sizeof procs, " (%" PRIu64 " process%s%s%s)", res->processes,
                 res->processes == 1 ? "" : "es", res->processes == 1 ? "" : ", each alone",
                 res->processes_cut ? ", some cut short: their recorders were killed" : "");
    if (res->processes > 0 && res->threads > 1)
        snprintf(threads, sizeof threads, " (up to %" PRIu64 " threads in one)", res->threads);
    if (res->processes > 0) {
        printf("%s: replay verified%s%s: %" PRIu64 " instructions replayed in all, %" PRIu64
               " key frames%s checked, %" PRIu64 " syscalls, %" PRIu64 " writes checked, %.2f s",
               file, procs, threads, res->replayed, res->keyframes_checked, points, res->syscalls,
               res->writes_checked, secs);
        if (secs > 0)
            printf(", %.1f MIPS", (double)res->replayed / secs / 1e6);
        printf("\n");
        return;
    }
    printf("%s: replay verified%s%s: %" PRIu64 " instructions replayed (from %" PRIu64 " to %"
           PRIu64 "), %" PRIu64 " key frames%s checked, %" PRIu64 " syscalls, %" PRIu64
           " writes checked, %.2f s",
           file, res->truncated ? " up to where the recording was cut short (its last key frame)"
                                : "",
           threads, res->replayed, res->start_icount, res->instructions, res->keyframes_checked,
           points, res->syscalls, res->writes_checked, secs);
    if (secs > 0)
        printf(", %.1f MIPS", (double)res->replayed / secs / 1e6);
    printf("\n");
}

/* The queries of `crec replay FILE --query Q ...`, and query's options. */
struct replay_queries {
    char **q;          /* --query values, then FILE's extra arguments */
    size_t n;
    uint64_t size;
    const char *fmt;
    int json, no_index, used_query_option;
};

static int add_query(struct replay_queries *rq, char *q)
{
    char **grown = realloc(rq->q, (rq->n + 1) * sizeof *grown);

    if (!grown)
        return cli_fail(EXIT_FAIL, "out of memory");
    rq->q = grown;
    rq->q[rq->n++] = q;
    return EXIT_OK;
}

/* `crec replay FILE --query ...`: the options make sense together? */
static int check_query_use(const struct replay_queries *rq, int nfiles, int verify_options)
{
    if (rq->n == 0 && rq->used_query_option)
        return cli_usage_error("replay", "--size, --format, --json and --no-index go with "
                               "--query");
    if (rq->n == 0 && nfiles > 1)
        return cli_usage_error("replay", "one recording at a time");
    if (rq->n > 0 && verify_options)
        return cli_usage_error("replay", "--from, --jobs and --quiet verify a replay; "
                               "--query answers queries instead");
    return EXIT_OK;
}

int cmd_replay(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"jobs", required_argument, NULL, 'j'},
        {"thread", required_argument, NULL, 'T'},
        {"pid", required_argument, NULL, 'P'},
        {"quiet", no_argument, NULL, 'q'},
        {"query", required_argument, NULL, 'Q'},
        {"size", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'F'},
        {"json", no_argument, NULL, 'J'},
        {"no-index", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    crec_replay_options o = {0};
    crec_replay_result res;
    crec_error err = {0};
    struct progress prog = {0};
    struct replay_queries rq = {NULL, 0, 8, "hex", 0, 0, 0};
    int c, quiet = 0, verify_options = 0, rc;
    double secs;
    uint64_t v;

    /* `crec replay query FILE WHAT@WHEN`, as the request first wrote it */
    if (argc > 1 && strcmp(argv[1], "query") == 0)
        return cmd_query(argc - 1, argv + 1);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (cli_option_u64("replay", "from", optarg, 0, UINT64_MAX, &o.from) != EXIT_OK)
                return EXIT_USAGE;
            verify_options = 1;
            break;
        case 'j':
            if (cli_option_u64("replay", "jobs", optarg, 1, 64, &v) != EXIT_OK)
                return EXIT_USAGE;
            o.jobs = (unsigned)v;
            verify_options = 1;
            break;
        case 'T':
            if (cli_option_u64("replay", "thread", optarg, 1, UINT32_MAX, &v) != EXIT_OK)
                return EXIT_USAGE;
            o.thread = (uint32_t)v;
            verify_options = 1;
            break;
        case 'P':
            if (cli_parse_pid("replay", optarg, &o.pid, &o.image) != EXIT_OK)
                return EXIT_USAGE;
            verify_options = 1;
            break;
        case 'q':
            quiet = 1;
            verify_options = 1;
            break;
        case 'Q':
            if (add_query(&rq, optarg) != EXIT_OK)
                return EXIT_FAIL;
            break;
        case 's':
            if (cli_option_u64("replay", "size", optarg, 1, CLI_QUERY_MAX, &rq.size) != EXIT_OK)
                return EXIT_USAGE;
            rq.used_query_option = 1;
            break;
        case 'F':
            if (cli_check_format("replay", optarg) != EXIT_OK)
                return EXIT_USAGE;
            rq.fmt = optarg;
            rq.used_query_option = 1;
            break;
        case 'J':
            rq.json = rq.used_query_option = 1;
            break;
        case 'N':
            rq.no_index = rq.used_query_option = 1;
            break;
        case 'h':
            fputs(replay_usage, stdout);
            free(rq.q);
            return EXIT_OK;
        case ':':
            free(rq.q);
            return cli_usage_error("replay", "option '%s' needs a value", argv[optind - 1]);
        default:
            free(rq.q);
            return cli_usage_error("replay", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        free(rq.q);
        return cli_usage_error("replay", "no recording given");
    }
    if (rq.n > 0) /* more WHAT@WHEN after FILE */
        for (int i = optind + 1; i < argc; i++)
            if (add_query(&rq, argv[i]) != EXIT_OK)
                return EXIT_FAIL;
    if (check_query_use(&rq, argc - optind, verify_options) != EXIT_OK) {
        free(rq.q);
        return EXIT_USAGE;
    }
    if (rq.n > 0) {
        rc = cli_query_run(argv[optind], rq.q, rq.n, rq.size, rq.fmt, rq.json, rq.no_index, 0,
                           0, 0);
        free(rq.q);
        return rc;
    }
    if (!quiet && isatty(STDERR_FILENO)) {
        o.progress = show_progress;
        o.progress_ctx = &prog;
    }
    if (!quiet) {
        o.live = show_live;
        o.live_ctx = argv[optind];
    }
    prog.t0 = cli_now();
    rc = crec_replay_run(argv[optind], &o, &res, &err);
    secs = cli_now() - prog.t0;
    erase_progress(&prog);
    if (rc != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    if (res.diverged && res.div.pid) /* say which process, then as below */
        fprintf(stderr, "crec: %s: in pid %u (its program %u):\n", argv[optind], res.div.pid,
                res.div.image);
    if (res.diverged && res.div.alone)
        return cli_fail(EXIT_DIVERGED,
                        "%s: replay diverged in thread %u (verified alone) at its instruction %"
                        PRIu64 ", rip 0x%" PRIx64 " (%s): %s",
                        argv[optind], res.div.tid, res.div.thread_icount, res.div.rip,
                        res.div.insn, res.div.what);
    if (res.diverged && res.div.tid)
        return cli_fail(EXIT_DIVERGED,
                        "%s: replay diverged at instruction %" PRIu64 " (thread %u, its "
                        "instruction %" PRIu64 "), rip 0x%" PRIx64 " (%s): %s",
                        argv[optind], res.div.icount, res.div.tid, res.div.thread_icount,
                        res.div.rip, res.div.insn, res.div.what);
    if (res.diverged)
        return cli_fail(EXIT_DIVERGED,
                        "%s: replay diverged at instruction %" PRIu64 ", rip 0x%" PRIx64
                        " (%s): %s",
                        argv[optind], res.div.icount, res.div.rip, res.div.insn, res.div.what);
    if (!quiet)
        print_result(argv[optind], &res, o.thread, secs);
    if (!quiet && o.jobs > 1 && res.processes == 0 && res.threads <= 1)
        print_parts(argv[optind], &res);
    return EXIT_OK;
}
