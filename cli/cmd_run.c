/*
 * cmd_run.c - `crec run [OPTIONS] -- PROG ARGS...`: run a program under the
 * emulator with no recording, and exit with its status.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: crec run [OPTIONS] [--] PROG [ARGS...]\n\n"
            "Run PROG (looked up in PATH) under crec's emulator, without recording.\n\n"
            "Options:\n"
            "  --strace     print each syscall with its arguments and result to stderr\n"
            "  --strict     stop (exit 125) at the first unsupported syscall\n"
            "  --stats      print instructions, wall time and MIPS to stderr at the end\n"
            "  --cpus N     show the guest N CPUs (default 1): nproc, thread pools\n"
            "  --slice N    instructions a thread runs before another may (default 100000)\n"
            "  --chaos SEED random slices, switches inside blocks, starved threads\n"
            "  -h, --help   show this help\n\n"
            "Exit status: the program's own; 128+N if it was killed by signal N;\n"
            "124 if every thread of it was blocked for good (a deadlock);\n"
            "125 if crec failed, 126 if PROG can't be executed, 127 if not found.\n");
}

/* Our own stderr: the guest may close fd 2 (coreutils does at exit). */
static FILE *open_log(void)
{
    int fd = dup(2);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return stderr;
    setvbuf(f, NULL, _IOLBF, 0);
    return f;
}

static int run(char **argv, const crec_run_options *opt, int stats)
{
    char path[PATH_MAX];
    crec_error err = {0};
    crec_exit ex;
    uint64_t n;
    double t0, dt;
    int rc;

    rc = crec_find_program(argv[0], path, sizeof path, &err);
    if (rc == CREC_ERR_NOTFOUND)
        return cli_fail(EXIT_NOT_FOUND, "%s", err.msg);
    if (rc != CREC_OK)
        return cli_fail(EXIT_NOT_EXEC, "%s", err.msg);
    cli_block_write_signals();
    t0 = cli_now();
    rc = crec_run(opt, path, argv, environ, &ex, &n, &err);
    dt = cli_now() - t0;
    if (stats && !ex.forked) /* the process crec started, not its forked children */
        fprintf(opt->log, "crec: %llu instructions in %.3f s, %.1f MIPS\n",
                (unsigned long long)n, dt, dt > 0 ? (double)n / dt / 1e6 : 0.0);
    if (rc != CREC_OK)
        return cli_fail(rc == CREC_ERR_GUEST ? EXIT_NOT_EXEC : EXIT_CREC_FAILED, "%s", err.msg);
    return cli_guest_status(&ex, opt->log);
}

int cli_guest_status(const crec_exit *ex, FILE *log)
{
    if (ex->deadlock) {
        fprintf(log, "crec: %s\n", ex->msg);
        return EXIT_DEADLOCK;
    }
    if (ex->signo) {
        fprintf(log, "crec: %s\n", ex->msg);
        return 128 + ex->signo;
    }
    return ex->status;
}

int cli_thread_option(const char *cmd, const char *name, const char *value,
                      crec_thread_options *opt)
{
    uint64_t v;

    if (!value)
        return cli_usage_error(cmd, "option '--%s' needs a number", name), -1;
    if (strcmp(name, "cpus") == 0) {
        if (cli_option_u64(cmd, name, value, 1, 1024, &v) != EXIT_OK)
            return -1;
        opt->cpus = (unsigned)v;
    } else if (strcmp(name, "slice") == 0) {
        if (cli_option_u64(cmd, name, value, 1000, 1000000000, &opt->slice) != EXIT_OK)
            return -1;
    } else {
        if (cli_option_u64(cmd, name, value, 0, UINT64_MAX, &opt->chaos_seed) != EXIT_OK)
            return -1;
        opt->chaos = 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    crec_run_options opt = {0};
    int stats = 0, i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (cli_is_help(a)) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--strace") == 0)
            opt.strace = 1;
        else if (strcmp(a, "--strict") == 0)
            opt.strict = 1;
        else if (strcmp(a, "--stats") == 0)
            stats = 1;
        else if (strcmp(a, "--cpus") == 0 || strcmp(a, "--slice") == 0 ||
                 strcmp(a, "--chaos") == 0) {
            if (cli_thread_option("run", a + 2, i + 1 < argc ? argv[i + 1] : NULL,
                                  &opt.threads) != 0)
                return EXIT_USAGE;
            i++;
        } else
            return cli_usage_error("run", "unknown option '%s'", a);
    }
    if (i >= argc)
        return cli_usage_error("run", "no program given");
    opt.log = open_log();
    fflush(stdout);
    return run(argv + i, &opt, stats);
}
