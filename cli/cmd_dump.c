/*
 * cmd_dump.c - `crec dump PID`: ask a running `crec record` for a dump of
 * the recording so far, as SIGUSR1 does (the flight recorder's DumpNow).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cli/cli.h"

static const char dump_usage[] =
    "usage: crec dump PID\n"
    "\n"
    "Ask the recorder with process id PID (a running 'crec record') to write the\n"
    "recording so far to a new file while the program runs on: its --dump-to\n"
    "pattern, or the recording's name with .dumpN (N = 1, 2, ...).  The recorder\n"
    "ends the copy where the program is (a last key frame, so that the dump\n"
    "replays verified up to there) and names the file on its standard error.\n"
    "This sends it SIGUSR1, which does the same.  With --forward-signals (if\n"
    "this crec has it) SIGUSR1 goes to the program instead, and so does this.\n"
    "\n"
    "Exit status: 0 asked; 1 no such recorder; 2 bad command line.\n";

/* The recorder's command line (NUL-separated), or 0 bytes. */
static size_t read_cmdline(long pid, char *buf, size_t size)
{
    char path[64];
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    if (!(f = fopen(path, "re")))
        return 0;
    n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    return n;
}

int cmd_dump(int argc, char **argv)
{
    char cmd[4096], *arg1, *base;
    uint64_t pid;
    size_t n;

    if (argc == 2 && cli_is_help(argv[1])) {
        fputs(dump_usage, stdout);
        return EXIT_OK;
    }
    if (argc != 2)
        return cli_usage_error("dump", argc < 2 ? "no PID given" : "one PID at a time");
    if (cli_parse_u64(argv[1], &pid) != 0 || pid == 0 || pid > 4194304)
        return cli_usage_error("dump", "bad PID '%s'", argv[1]);
    /* only a recorder: SIGUSR1 kills most other programs */
    n = read_cmdline((long)pid, cmd, sizeof cmd);
    if (n == 0)
        return cli_fail(EXIT_FAIL, "dump: no process %llu", (unsigned long long)pid);
    arg1 = cmd + strlen(cmd) + 1;
    base = strrchr(cmd, '/');
    base = base ? base + 1 : cmd;
    if (strcmp(base, "crec") != 0 || arg1 >= cmd + n ||
        (strcmp(arg1, "record") != 0 && strcmp(arg1, "rec") != 0))
        return cli_fail(EXIT_FAIL, "dump: process %llu is not a crec recorder ('crec record')",
                        (unsigned long long)pid);
    if (kill((pid_t)pid, SIGUSR1) != 0)
        return cli_fail(EXIT_FAIL, "dump: process %llu: %s", (unsigned long long)pid,
                        strerror(errno));
    fprintf(stderr, "crec: recorder %llu is writing a dump (its standard error names the file)\n",
            (unsigned long long)pid);
    return EXIT_OK;
}
