/*
 * cmd_gdb.c - `crec gdb [--server] [--port N] FILE [-- GDB-ARGS...]`:
 * serve a recording to gdb over the remote protocol (gdb/, docs/GDB.md),
 * and, without --server, start gdb connected to it with the program's
 * symbols.  This file parses arguments and starts things; libcrec serves.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

static const char gdb_usage[] =
    "usage: crec gdb [OPTIONS] FILE [-- GDB-ARGS...]\n"
    "\n"
    "Debug a recording with gdb, forwards and backwards in time: crec serves\n"
    "the recording over gdb's remote protocol on 127.0.0.1 and starts\n"
    "  gdb -l 10000 -ex 'set sysroot /' -ex HOOK -ex 'target extended-remote 127.0.0.1:PORT' PROG\n"
    "with the recorded program's symbols when its file is still there.\n"
    "GDB-ARGS are passed to gdb (for instance -batch -x SCRIPT).  In gdb:\n"
    "break, watch, continue, step, next, and reverse-continue, reverse-step,\n"
    "reverse-next, reverse-stepi; `monitor help` lists crec's own commands\n"
    "(monitor when, monitor seek T, monitor info recording); HOOK makes gdb\n"
    "forget what it cached after a monitor command, which may move in time.\n"
    "A recording of several threads shows them as gdb's threads 1.N (crec's\n"
    "thread N): info threads, thread N; a step moves the selected thread while\n"
    "the others run meanwhile.\n"
    "\n"
    "Options:\n"
    "  --server        only serve: print the gdb command to connect and wait\n"
    "                  for one gdb session\n"
    "  --port N        listen on port N (default 0: a free port)\n"
    "  --gdb PROG      the gdb to start (default gdb)\n"
    "  --log FILE      write every packet, both ways, to FILE\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: gdb's own (with --server: 0 when the session ended);\n"
    "1 a bad file or gdb never connected; 2 a bad command line.\n";

/* What gdb is told before it connects: the files are the local ones (no
 * "file transfer" through the protocol), and after a monitor command (which
 * may have moved in time) it forgets the registers and memory it cached. */
static const char gdb_sysroot[] = "set sysroot /";
static const char gdb_hook[] =
    "python gdb.execute(\"define hookpost-monitor\\nmaintenance flush register-cache\\n"
    "maintenance flush dcache\\nend\")";

/* Print a shell word, quoted when it needs to be. */
static void print_word(FILE *out, const char *a)
{
    if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "%+,-./:=@_") == strlen(a)) {
        fputs(a, out);
        return;
    }
    fputc('\'', out);
    for (; *a; a++)
        if (*a == '\'')
            fputs("'\\''", out);
        else
            fputc(*a, out);
    fputc('\'', out);
}

/* The recorded program's file, absolute, if it is still there with the
 * bytes it had (crec_modules: on_disk); "" otherwise. */
static void program_file(crec_recording *rec, char *out, size_t size)
{
    const char *p = crec_program_path(rec);
    const crec_module *m;
    crec_error err = {0};
    char abs[4096];
    size_t n;

    out[0] = 0;
    if (!p[0] || crec_modules(rec, &m, &n, &err) != CREC_OK)
        return;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].path, p) == 0 && m[i].on_disk && realpath(p, abs)) {
            snprintf(out, size, "%s", abs);
            return;
        }
}

static pid_t gdb_child;
static int gdb_status, gdb_reaped;

/* Is gdb still running?  Reaps it (keeping its status) once it is not. */
static int gdb_running(void *ctx)
{
    (void)ctx;
    if (!gdb_reaped && waitpid(gdb_child, &gdb_status, WNOHANG) == gdb_child)
        gdb_reaped = 1;
    return !gdb_reaped;
}

/* Start gdb on port with the program; extra arguments last. */
static pid_t start_gdb(const char *gdb, int port, const char *prog, int nextra, char **extra)
{
    char target[64];
    char **av = calloc((size_t)nextra + 12, sizeof *av);
    int n = 0;
    pid_t pid;

    if (!av)
        return -1;
    snprintf(target, sizeof target, "target extended-remote 127.0.0.1:%d", port);
    av[n++] = (char *)gdb;
    av[n++] = "-l";
    av[n++] = "10000";
    av[n++] = "-ex";
    av[n++] = (char *)gdb_sysroot;
    av[n++] = "-ex";
    av[n++] = (char *)gdb_hook;
    av[n++] = "-ex";
    av[n++] = target;
    for (int i = 0; i < nextra; i++)
        av[n++] = extra[i];
    if (prog[0])
        av[n++] = (char *)prog;
    av[n] = NULL;
    pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        execvp(gdb, av);
        fprintf(stderr, "crec: can't start %s: %s\n", gdb, strerror(errno));
        _exit(127);
    }
    free(av);
    return pid;
}

int cmd_gdb(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"server", no_argument, NULL, 's'},
        {"port", required_argument, NULL, 'p'},
        {"gdb", required_argument, NULL, 'g'},
        {"log", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *gdb = "gdb", *logpath = NULL, *file;
    crec_gdb_options o = {0};
    crec_recording *rec = NULL;
    crec_error err = {0};
    crec_gdb *g = NULL;
    char prog[4096];
    int c, server = 0, rc = EXIT_OK;
    long port = 0;
    uint64_t ib, tb;
    int built;
    char *end;

    opterr = 0;
    optind = 1;
    /* '+': options end at FILE, so that what follows `--` is gdb's */
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            server = 1;
            break;
        case 'p':
            errno = 0;
            port = strtol(optarg, &end, 10);
            if (*end || !optarg[0] || errno || port < 0 || port > 65535)
                return cli_usage_error("gdb", "bad --port '%s' (0 to 65535)", optarg);
            break;
        case 'g':
            gdb = optarg;
            break;
        case 'l':
            logpath = optarg;
            break;
        case 'h':
            fputs(gdb_usage, stdout);
            return EXIT_OK;
        case ':':
            return cli_usage_error("gdb", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("gdb", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("gdb", "needs a FILE");
    file = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    else if (optind < argc)
        return cli_usage_error("gdb", "unexpected '%s' (gdb's own arguments go after --)",
                               argv[optind]);
    if (server && optind < argc)
        return cli_usage_error("gdb", "--server starts no gdb to give arguments to");

    if (crec_open(file, 0, &rec, &err) != CREC_OK)
        return cli_fail_file(file, &err);
    /* the index now, not at gdb's first question: backward searches start
     * from its restart points */
    cli_show_progress(rec, file);
    if (crec_index_info(rec, &ib, &tb, &built, &err) != CREC_OK) {
        rc = cli_fail_file(file, &err);
        goto out;
    }
    if (logpath && !(o.log = fopen(logpath, "w"))) {
        rc = cli_fail(EXIT_FAIL, "%s: %s", logpath, strerror(errno));
        goto out;
    }
    if (crec_gdb_listen((int)port, &g, &err) != CREC_OK) {
        rc = cli_fail(EXIT_FAIL, "%s", err.msg);
        goto out;
    }
    program_file(rec, prog, sizeof prog);
    o.path = file;
    o.parse_time = cli_parse_when;

    if (server) {
        printf("crec gdb: serving %s on 127.0.0.1:%d; connect with:\n", file, crec_gdb_port(g));
        printf("gdb -l 10000 -ex '%s' -ex '%s' -ex 'target extended-remote 127.0.0.1:%d'",
               gdb_sysroot, gdb_hook, crec_gdb_port(g));
        if (prog[0]) {
            fputc(' ', stdout);
            print_word(stdout, prog);
        }
        fputc('\n', stdout);
        if (!prog[0])
            printf("crec gdb: the program's file is not there any more: gdb gets no symbols\n");
        fflush(stdout);
        if (crec_gdb_serve(g, rec, &o, &err) != CREC_OK)
            rc = cli_fail(EXIT_FAIL, "%s", err.msg);
        goto out;
    }

    /* ^C at the terminal is gdb's (it interrupts a long continue through
     * the protocol); crec goes on serving */
    signal(SIGINT, SIG_IGN);
    gdb_child = start_gdb(gdb, crec_gdb_port(g), prog, argc - optind, argv + optind);
    if (gdb_child < 0) {
        rc = cli_fail(EXIT_FAIL, "can't start %s: %s", gdb, strerror(errno));
    } else {
        o.still_waiting = gdb_running;
        if (crec_gdb_serve(g, rec, &o, &err) != CREC_OK && gdb_running(NULL))
            fprintf(stderr, "crec: %s\n", err.msg);
        crec_gdb_close(g); /* no second session */
        g = NULL;
        if (!gdb_reaped && waitpid(gdb_child, &gdb_status, 0) == gdb_child)
            gdb_reaped = 1;
        rc = !gdb_reaped ? EXIT_FAIL
             : WIFEXITED(gdb_status) ? WEXITSTATUS(gdb_status) : 128 + WTERMSIG(gdb_status);
    }
out:
    crec_gdb_close(g);
    if (o.log)
        fclose(o.log);
    crec_close(rec);
    return rc;
}
