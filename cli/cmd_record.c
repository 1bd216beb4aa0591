/*
 * cmd_record.c - `crec record`: run a program under the emulator and write
 * a recording of it.
 */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    "  --keyframe-interval N       a key frame every N instructions (default: where\n"
    "                              one costs little); numbers are decimal, or hex\n"
    "                              with 0x\n"
    "  --checkpoint-interval N     a check point every N instructions (default\n"
    "                              1000000)\n"
    "  --snapshot-interval M       a memory snapshot every M key frames (default:\n"
    "                              where one costs little)\n"
    "  --cache-bits K              prediction cache of 2^K 8-byte granules (4..24,\n"
    "                              default 24: 128 MiB of the program's memory)\n"
    "  --stats                     print what was recorded when the program ends\n"
    "  --strace                    log every syscall to standard error\n"
    "  --strict                    stop at the first syscall crec does not emulate\n"
    "  --cpus N                    show the program N CPUs (default 1): nproc and\n"
    "                              thread pools size themselves on this\n"
    "  --slice N                   instructions a thread runs before another may\n"
    "                              (default 100000)\n"
    "  --chaos SEED                a random schedule from SEED: slices of random\n"
    "                              length that may end inside a block, the next thread\n"
    "                              drawn at random, now and then one starved (races\n"
    "                              show up); the seed is stored in the recording\n"
    "  --forward-signals           SIGINT, SIGTERM and SIGUSR1 sent to crec go to the\n"
    "                              program (see below) instead of stopping the\n"
    "                              recording or writing a dump\n"
    "  --env-clear                 start the program with an empty environment\n"
    "  -e, --env NAME=VALUE        set NAME in the program's environment (again and\n"
    "                              again for more)\n"
    "  --force                     write FILE even if it is the program itself or a\n"
    "                              file that is not a recording\n"
    "  -h, --help                  show this help\n"
    "\n"
    "A recording holds the program's environment, its arguments and every byte it\n"
    "read (files, standard input, the network): share it as you would share those.\n"
    "--env-clear and -e choose the environment it holds.\n"
    "\n"
    "SIGINT or SIGTERM sent to crec from outside the recorded processes (Ctrl-C,\n"
    "kill from another shell) stops the recording: the file is completed where\n"
    "the program was, and crec exits 128+N; SIGUSR1 (crec dump PID) writes a\n"
    "dump.  With --forward-signals the program gets these three instead, as it\n"
    "would natively.  Every other signal, and any signal\n"
    "one recorded process sends another, is the program's (its handler runs, or\n"
    "its default action, and the recording holds it).  A program whose threads\n"
    "are all blocked for good ends with \"deadlock\" and exit status 124; its\n"
    "recording is complete too.\n"
    "\n"
    "Every process the program forks is recorded too, into the same file (one\n"
    "process per program image: execve starts a new one); crec waits for all of\n"
    "them before it completes the file.  --ring, --start-at, --stop-at and\n"
    "--max-size record one process: when it forks or calls execve the recording\n"
    "ends there (crec says so in one line; the file is complete and replays) and\n"
    "the program runs on, unrecorded.  A dump is refused once the program has\n"
    "forked.\n";

/* The signal that asked us to stop recording (SIGINT/SIGTERM), or 0: the
 * recorder looks at it at every block start (crec_record_options.stop). */
static volatile sig_atomic_t record_stop;
/* Raised by SIGUSR1: the recorder writes a dump (crec_record_options.dump). */
static volatile sig_atomic_t record_dump;

static void on_stop_signal(int signo)
{
    record_stop = signo;
}

static void on_dump_signal(int signo)
{
    (void)signo;
    record_dump++;
}

/* A size: a number of bytes, or with K, M, G (powers of 1024).
 * @return EXIT_OK and *out, or a usage error (printed). */
static int parse_size(const char *name, const char *s, uint64_t *out)
{
    char num[32];
    size_t n = strlen(s);
    unsigned shift = 0;
    uint64_t v;

    if (n > 0 && n < sizeof num) {
        char u = s[n - 1];
        shift = u == 'K' || u == 'k' ? 10 : u == 'M' || u == 'm' ? 20 : u == 'G' || u == 'g' ? 30 : 0;
        memcpy(num, s, n - (shift != 0));
        num[n - (shift != 0)] = 0;
        if (cli_parse_u64(num, &v) == 0 && v > 0 && v <= UINT64_MAX >> shift) {
            *out = v << shift;
            return EXIT_OK;
        }
    }
    return cli_usage_error("record", "bad --%s '%s' (a size such as 65536, 64K, 8M or 2G)",
                           name, s);
}

/* A trigger: syscall:NAME, 0xADDR, N (an instruction count), or a symbol
 * with an optional +OFFSET.  @return EXIT_OK, or a usage error (printed). */
static int parse_where(const char *name, char *s, crec_trigger *t)
{
    char *plus;
    uint64_t v;

    memset(t, 0, sizeof *t);
    if (strncmp(s, "syscall:", 8) == 0) {
        for (v = 0; v < 1024 && strcmp(crec_syscall_name(v), s + 8) != 0; v++)
            ;
        if (v == 1024 && cli_parse_u64(s + 8, &v) != 0)
            return cli_usage_error("record", "--%s %s: no syscall named '%s'", name, s, s + 8);
        t->kind = CREC_TRIGGER_SYSCALL;
        t->value = v;
        return EXIT_OK;
    }
    if (cli_parse_u64(s, &v) == 0) {
        t->kind = strncmp(s, "0x", 2) == 0 ? CREC_TRIGGER_ADDRESS : CREC_TRIGGER_ICOUNT;
        t->value = v;
        return EXIT_OK;
    }
    if (!s[0] || s[0] == '+' || strchr(s, ' '))
        return cli_usage_error("record", "bad --%s '%s' (FUNC, FUNC+0xN, 0xADDR, N or "
                               "syscall:NAME)", name, s);
    if ((plus = strchr(s, '+')) != NULL) {
        if (cli_parse_u64(plus + 1, &v) != 0)
            return cli_usage_error("record", "bad offset in --%s '%s'", name, s);
        *plus = 0;
        t->value = v;
    }
    t->kind = CREC_TRIGGER_SYMBOL;
    t->symbol = s;
    return EXIT_OK;
}

/* The default output: the program's base name with .crec, in the current directory. */
static void default_output(const char *prog, char *buf, size_t size)
{
    const char *base = strrchr(prog, '/');
    snprintf(buf, size, "%s.crec", base ? base + 1 : prog);
}

/*
 * The environment the program starts with: crec's own, or none with
 * --env-clear, then each -e NAME=VALUE in order (a later one for the same
 * NAME wins).  @return a NULL-terminated array, or NULL for bad usage
 * (printed) or no memory.
 */
static char **build_env(int clear, char **sets, size_t nsets)
{
    size_t n = 0, k;
    char **env;

    for (k = 0; !clear && environ[k]; k++)
        ;
    env = calloc(k + nsets + 1, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < k; i++)
        env[n++] = environ[i];
    for (size_t i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        size_t name = eq ? (size_t)(eq - sets[i]) : 0, j;
        if (name == 0) {
            cli_usage_error("record", "-e wants NAME=VALUE, not '%s'", sets[i]);
            free(env);
            return NULL;
        }
        for (j = 0; j < n && !(strncmp(env[j], sets[i], name + 1) == 0); j++)
            ;
        env[j] = sets[i];
        n += j == n;
    }
    env[n] = NULL;
    return env;
}

/*
 * May the recording be written to `out`?  Not over the program being
 * recorded, nor over an existing file that is not a recording (a typo in
 * -o must not destroy a file), unless --force.  A device or a FIFO is
 * written, not replaced.  @return EXIT_OK, or the usage error printed.
 */
static int check_output(const char *out, const char *prog, int force)
{
    struct stat so, sp;
    char head[8] = {0};
    ssize_t n = 0;
    int fd;

    if (force || stat(out, &so) != 0 || !S_ISREG(so.st_mode))
        return EXIT_OK;
    if (stat(prog, &sp) == 0 && so.st_dev == sp.st_dev && so.st_ino == sp.st_ino)
        return cli_usage_error("record", "%s is the program being recorded; --force writes "
                               "over it", out);
    if (so.st_size == 0)
        return EXIT_OK;
    if ((fd = open(out, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) >= 0) {
        n = read(fd, head, sizeof head);
        close(fd);
    }
    if (n == (ssize_t)sizeof head && memcmp(head, "\x89" "CREC\r\n\x1a", 8) == 0)
        return EXIT_OK; /* a recording, recorded again */
    return cli_usage_error("record", "%s exists and is not a recording; --force writes over it",
                           out);
}

static void print_stats(const char *out, const crec_record_stats *st, double secs)
{
    fprintf(stderr,
            "crec: recorded %llu instructions in %.2f s to %s: %llu key frames, %llu "
            "check points, %llu snapshots, %llu syscalls, %llu of %llu loads logged\n",
            (unsigned long long)st->instructions, secs, out, (unsigned long long)st->keyframes,
            (unsigned long long)st->checkpoints, (unsigned long long)st->snapshots, (unsigned long long)st->syscalls,
            (unsigned long long)st->reads_logged,
            (unsigned long long)(st->reads_logged + st->reads_hit));
    if (st->rotations)
        fprintf(stderr, "crec: the ring rotated %llu times in %.2f s, writing %llu bytes again\n",
                (unsigned long long)st->rotations, st->rotate_seconds,
                (unsigned long long)st->copied_bytes);
    if (st->dumps)
        fprintf(stderr, "crec: %llu dumps written\n", (unsigned long long)st->dumps);
}

/* What the flight recorder kept, in one line (ring, parts, an early end). */
static void print_flight(const char *out, const crec_record_options *o,
                         const crec_record_stats *st, const crec_exit *ex)
{
    if (ex->ended && ex->why[0] && !(o->max_size && o->on_full == CREC_ON_FULL_STOP && ex->stopped))
        fprintf(stderr, "crec: %s\n", ex->why);
    if (o->ring)
        fprintf(stderr, "crec: %s keeps instructions %llu to %llu of the run (ring of %llu "
                "bytes: %llu rotations dropped %llu bytes)\n", out,
                (unsigned long long)st->recorded_from, (unsigned long long)st->recorded_to,
                (unsigned long long)o->ring, (unsigned long long)st->rotations,
                (unsigned long long)st->dropped_bytes);
    else if ((o->n_start_at || o->n_stop_at) && st->parts)
        fprintf(stderr, "crec: %s holds %llu part%s of the run, from instruction %llu to "
                "%llu\n", out, (unsigned long long)st->parts, st->parts == 1 ? "" : "s",
                (unsigned long long)st->recorded_from, (unsigned long long)st->recorded_to);
}

int cmd_record(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"keyframe-interval", required_argument, NULL, 'k'},
        {"snapshot-interval", required_argument, NULL, 's'},
        {"checkpoint-interval", required_argument, NULL, 'P'},
        {"cache-bits", required_argument, NULL, 'c'},
        {"stats", no_argument, NULL, 'S'},
        {"strace", no_argument, NULL, 't'},
        {"strict", no_argument, NULL, 'x'},
        {"cpus", required_argument, NULL, 'C'},
        {"slice", required_argument, NULL, 'L'},
        {"chaos", required_argument, NULL, 'Z'},
        {"env-clear", no_argument, NULL, 'E'},
        {"env", required_argument, NULL, 'e'},
        {"force", no_argument, NULL, 'f'},
        {"ring", required_argument, NULL, 'R'},
        {"max-size", required_argument, NULL, 'M'},
        {"on-full", required_argument, NULL, 'F'},
        {"start-at", required_argument, NULL, 'A'},
        {"stop-at", required_argument, NULL, 'B'},
        {"dump-to", required_argument, NULL, 'D'},
        {"forward-signals", no_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    crec_record_options o = {0};
    crec_record_stats st;
    struct sigaction sa = {0}, old_int, old_term, old_usr1;
    crec_exit ex;
    crec_error err = {0};
    char path[PATH_MAX], out[PATH_MAX], **env, *sets[argc]; /* -e: one per argument at most */
    crec_trigger starts[argc], stops[argc];
    double t0, secs;
    int c, stats = 0, force = 0, env_clear = 0, on_full = 0, rc;
    size_t nsets = 0;
    uint64_t v;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:e:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'E':
            env_clear = 1;
            break;
        case 'e':
            sets[nsets++] = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'R':
        case 'M':
            if (parse_size(c == 'R' ? "ring" : "max-size", optarg,
                           c == 'R' ? &o.ring : &o.max_size) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'F':
            if (strcmp(optarg, "stop") == 0)
                o.on_full = CREC_ON_FULL_STOP;
            else if (strcmp(optarg, "continue") == 0)
                o.on_full = CREC_ON_FULL_CONTINUE;
            else
                return cli_usage_error("record", "--on-full wants stop or continue, not '%s'",
                                       optarg);
            on_full = 1;
            break;
        case 'A':
            if (parse_where("start-at", optarg, &starts[o.n_start_at++]) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'B':
            if (parse_where("stop-at", optarg, &stops[o.n_stop_at++]) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'D':
            if (strchr(optarg, '%') &&
                (!strstr(optarg, "%d") || strchr(optarg, '%') != strrchr(optarg, '%')))
                return cli_usage_error("record", "--dump-to '%s': one %%d, for the dump's "
                                       "number, and no other %%", optarg);
            o.dump_to = optarg;
            break;
        case 'G':
            o.forward_signals = 1;
            break;
        case 'o':
            o.out_path = optarg;
            break;
        case 'k':
            if (cli_option_u64("record", "keyframe-interval", optarg, 1, UINT64_MAX,
                               &o.keyframe_interval) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'P':
            if (cli_option_u64("record", "checkpoint-interval", optarg, 1, UINT64_MAX,
                               &o.checkpoint_interval) != EXIT_OK)
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
        case 'C':
        case 'L':
        case 'Z':
            if (cli_thread_option("record", c == 'C' ? "cpus" : c == 'L' ? "slice" : "chaos",
                                  optarg, &o.threads) != 0)
                return EXIT_USAGE;
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
    if (o.ring && o.max_size)
        return cli_usage_error("record", "--ring and --max-size: a ring keeps the file within "
                               "its size already");
    if (on_full && !o.max_size)
        return cli_usage_error("record", "--on-full says what --max-size does: give --max-size");
    if (o.ring && o.out_path && strcmp(o.out_path, "-") == 0)
        return cli_usage_error("record", "--ring writes a file, not a pipe (-o -): it rewrites "
                               "the file as it drops segments");
    o.start_at = starts;
    o.stop_at = stops;
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
    }
    if (o.out_fd < 0 && check_output(o.out_path, path, force) != EXIT_OK)
        return EXIT_USAGE;
    if (!(env = build_env(env_clear, sets, nsets)))
        return nsets ? EXIT_USAGE : cli_fail(EXIT_CREC_FAILED, "out of memory");
    cli_block_write_signals();
    /* The command owns the process's signals: SIGINT and SIGTERM ask the
     * recorder to stop, and the recording is completed. */
    record_stop = 0;
    o.stop = &record_stop;
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    /* SIGUSR1: a dump of the recording so far (crec dump PID) */
    record_dump = 0;
    o.dump = &record_dump;
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, &old_usr1);
    t0 = cli_now();
    rc = crec_record(&o, path, argv + optind, env, &ex, &st, &err);
    secs = cli_now() - t0;
    free(env);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGUSR1, &old_usr1, NULL);
    if (rc != CREC_OK)
        return cli_fail(rc == CREC_ERR_GUEST ? EXIT_NOT_EXEC : EXIT_CREC_FAILED, "%s", err.msg);
    if (stats && !ex.forked) /* a forked child records into the same file */
        print_stats(o.out_path, &st, secs);
    if ((o.ring || o.n_start_at || o.n_stop_at || o.max_size) && !ex.forked)
        print_flight(o.out_path, &o, &st, &ex);
    return cli_guest_status(&ex, stderr);
}
