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
    "T is the time before the syscall instruction.  Arguments are shown as many\n"
    "as the syscall takes (small numbers in decimal, others in hex); a failure shows\n"
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

/* How many arguments a syscall takes (strace shows only those); -1 for
 * one not listed, shown up to its last non-zero argument. */
static int arity(const char *name)
{
    static const struct { const char *name; int n; } t[] = {
        {"read", 3}, {"write", 3}, {"open", 3}, {"close", 1}, {"stat", 2}, {"fstat", 2},
        {"lstat", 2}, {"poll", 3}, {"lseek", 3}, {"mmap", 6}, {"mprotect", 3}, {"munmap", 2},
        {"brk", 1}, {"rt_sigaction", 4}, {"rt_sigprocmask", 4}, {"ioctl", 3}, {"pread64", 4},
        {"pwrite64", 4}, {"readv", 3}, {"writev", 3}, {"access", 2}, {"pipe", 1}, {"dup", 1},
        {"dup2", 2}, {"getpid", 0}, {"gettid", 0}, {"exit", 1}, {"exit_group", 1},
        {"openat", 4}, {"newfstatat", 4}, {"arch_prctl", 2}, {"set_tid_address", 1},
        {"set_robust_list", 2}, {"rseq", 4}, {"prlimit64", 4}, {"getrandom", 3},
        {"clock_gettime", 2}, {"futex", 6}, {"uname", 1}, {"fcntl", 3}, {"getdents64", 3},
        {"readlink", 3}, {"readlinkat", 4}, {"getcwd", 2}, {"execve", 3}, {"clone", 5},
        {"wait4", 4}, {"kill", 2}, {"mremap", 5}, {"madvise", 3}, {"statx", 5},
        {"faccessat", 3}, {"faccessat2", 4}, {"getuid", 0}, {"geteuid", 0}, {"getgid", 0},
        {"getegid", 0}, {"sysinfo", 1}, {"nanosleep", 2}, {"clock_nanosleep", 4},
        {"sched_getaffinity", 3}, {"pipe2", 2}, {"dup3", 3}, {"socket", 3}, {"connect", 3},
        {"sendto", 6}, {"recvfrom", 6}, {"fadvise64", 4}, {"unlink", 1}, {"unlinkat", 3},
        {"mkdir", 2}, {"chdir", 1}, {"rename", 2}, {"umask", 1}, {"getppid", 0},
    };

    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, name) == 0)
            return t[i].n;
    return -1;
}

static int on_syscall(void *ctx, const crec_syscall_info *s)
{
    unsigned long *thread = ctx;
    int n = arity(crec_syscall_name(s->nr));

    if (*thread && s->tid != *thread)
        return 0;
    if (n < 0)
        for (n = 6; n > 1 && s->args[n - 1] == 0; n--)
            ;
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
