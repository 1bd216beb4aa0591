/*
 * main.c - `crec`: dispatch to a subcommand, and the top-level --help.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static const struct cli_command commands[] = {
#ifndef CREC_NO_RECORDER
    {"record", "run a program under the emulator and record it (also: rec)", cmd_record},
#endif
    {"replay", "re-execute a recording with no OS and verify it", cmd_replay},
#ifndef CREC_NO_RECORDER
    {"run", "run a program under the emulator, without recording", cmd_run},
    {"dump", "ask a running recorder for a dump of the recording so far", cmd_dump},
#endif
    {"info", "describe a recording: header, threads, streams, sizes", cmd_info},
    {"query", "the value of memory or a register at any instruction count", cmd_query},
    {"when", "every instruction count at which a memory value changed", cmd_when},
    {"index", "build the index queries use (FILE.idx), on several host threads", cmd_index},
    {"races", "the data races of a recording of several threads", cmd_races},
    {"trace", "every instruction of a range: symbol, source line, disassembly", cmd_trace},
    {"calls", "every call of a function with its arguments and result; the call tree",
     cmd_calls},
    {"profile", "an exact profile by instruction count (callgrind, speedscope, folded)",
     cmd_profile},
    {"backtrace", "the blocks that led to a crash or a time, and the call stack", cmd_backtrace},
    {"syscalls", "every syscall of the recording, strace style", cmd_syscalls},
    {"find", "the next or previous time at which a condition holds", cmd_find},
    {"printf", "a printf added after the run, evaluated where it would have run", cmd_printf},
    {"gdb", "debug a recording with gdb, forwards and backwards in time", cmd_gdb},
    {"keyframes", "make key frames for a range of interest, for faster queries there",
     cmd_keyframes},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* Other names a command answers to. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"rec", "record"},
};

static void print_help(FILE *out)
{
    fprintf(out, "usage: crec COMMAND [OPTIONS] [ARGS]\n\n"
                 "crec records a Linux x86-64 program under a software CPU and replays it.\n\n"
                 "Commands:\n");
#ifdef CREC_NO_RECORDER
    fprintf(out, "  (this build replays only: record and run need an x86-64 host)\n");
#endif
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'crec COMMAND --help' describes one command.\n\n"
                 "Exit status:\n"
                 "  0    success\n"
                 "  1    failure: bad or corrupt file, bad query, I/O error\n"
                 "  2    bad command line\n"
                 "  3    replay diverged from the recording\n"
                 "  run and record exit with the program's own status (128+N when\n"
                 "  signal N killed it), 124 when every thread of it was blocked for\n"
                 "  good (a deadlock), 125 when crec itself fails, 126 when the\n"
                 "  program can't be executed and 127 when it does not exist.\n");
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "crec %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'crec %s --help')\n", cmd);
    return EXIT_USAGE;
}

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "crec: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    unsigned base = 10;
    uint64_t v = 0;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s)
        return CLI_NUM_BAD;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            return CLI_NUM_BAD;
        if (v > (UINT64_MAX - d) / base)
            return CLI_NUM_RANGE;
        v = v * base + d;
    }
    *out = v;
    return 0;
}

int cli_option_u64(const char *cmd, const char *name, const char *s, uint64_t min, uint64_t max,
                   uint64_t *out)
{
    uint64_t v;
    int rc = cli_parse_u64(s, &v);

    if (rc == CLI_NUM_RANGE || (rc == 0 && v > max)) {
        if (max == UINT64_MAX)
            return cli_usage_error(cmd, "--%s '%s' is too large (at most %" PRIu64 ")", name, s,
                                   max);
        return cli_usage_error(cmd, "bad --%s '%s' (%" PRIu64 " to %" PRIu64 ")", name, s, min,
                               max);
    }
    if (rc != 0 || v < min) {
        if (max == UINT64_MAX)
            return cli_usage_error(cmd, "bad --%s '%s' (a number from %" PRIu64 ")", name, s,
                                   min);
        return cli_usage_error(cmd, "bad --%s '%s' (%" PRIu64 " to %" PRIu64 ")", name, s, min,
                               max);
    }
    *out = v;
    return EXIT_OK;
}

int cli_parse_pid(const char *cmd, const char *arg, uint32_t *pid, uint32_t *image)
{
    char num[32];
    const char *dot = strchr(arg, '.');
    uint64_t p = 0, k = 0;
    size_t n = dot ? (size_t)(dot - arg) : strlen(arg);

    if (n == 0 || n >= sizeof num)
        return cli_usage_error(cmd, "bad --pid '%s' (a pid, or PID.K: its K-th program)", arg);
    memcpy(num, arg, n);
    num[n] = '\0';
    if (cli_parse_u64(num, &p) != 0 || p == 0 || p > UINT32_MAX ||
        (dot && (cli_parse_u64(dot + 1, &k) != 0 || k == 0 || k > UINT32_MAX)))
        return cli_usage_error(cmd, "bad --pid '%s' (a pid, or PID.K: its K-th program)", arg);
    *pid = (uint32_t)p;
    *image = (uint32_t)k;
    return EXIT_OK;
}

double cli_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes
 * there are not one (overlong, a surrogate, past U+10FFFF, cut short). */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0], n, min, cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    for (unsigned i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    return cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : (int)n;
}

void cli_json_str(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', out);
    while (*p) {
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", out); /* a byte that is not UTF-8: JSON can't hold it */
            p++;
        } else if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\u%04x", *p++);
        } else {
            fwrite(p, 1, (size_t)n, out);
            p += n;
        }
    }
    fputc('"', out);
}

void cli_block_write_signals(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGXFSZ);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

int cli_fail_file(const char *name, const crec_error *e)
{
    size_t n = strlen(name);

    if (strncmp(e->msg, name, n) == 0 && e->msg[n] == ':')
        return cli_fail(EXIT_FAIL, "%s", e->msg);
    return cli_fail(EXIT_FAIL, "%s: %s", name, e->msg[0] ? e->msg : crec_strerror(e->code));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    if (cli_is_help(argv[1])) {
        print_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("crec %s\n", CREC_VERSION_STRING);
        return EXIT_OK;
    }
    const char *name = argv[1];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0)
            name = aliases[i].name;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "crec: unknown command '%s' (see 'crec --help')\n", argv[1]);
    return EXIT_USAGE;
}
