/*
 * cli.h - the crec command: one file per subcommand (cmd_<name>.c), sharing
 * the exit codes and the few helpers declared here.  The cli only parses
 * arguments and prints; all the work is done by libcrec.
 */
#ifndef CREC_CLI_H
#define CREC_CLI_H

#include <stdio.h>

#include "crec.h"

/*
 * Exit codes of the crec command, documented in `crec --help` and
 * docs/USAGE.md.  `crec run` and `crec record` exit with the guest's own
 * status instead, and use the 12x codes for their own failures, as env(1)
 * and timeout(1) do.
 */
enum cli_exit {
    EXIT_OK = 0,
    EXIT_FAIL = 1,        /* bad file, bad query, I/O error */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_DIVERGED = 3,    /* replay did not match the recording */
    EXIT_CREC_FAILED = 125, /* run/record: crec itself failed */
    EXIT_NOT_EXEC = 126,  /* run/record: the program can't be executed */
    EXIT_NOT_FOUND = 127, /* run/record: the program does not exist */
};

/* One subcommand: its name, a one-line summary, and its entry point. */
struct cli_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);

/* Print "crec CMD: message" and a hint to stderr; return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "crec: message" to stderr as one line; return `code`. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when argv[i] is -h or --help. */
int cli_is_help(const char *arg);

#endif /* CREC_CLI_H */
