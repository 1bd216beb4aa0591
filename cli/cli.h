/*
 * cli.h - the crec command: one file per subcommand (cmd_<name>.c), sharing
 * the exit codes and the few helpers declared here.  The cli only parses
 * arguments and prints; all the work is done by libcrec.
 */
#ifndef CREC_CLI_H
#define CREC_CLI_H

#include <stddef.h>
#include <stdint.h>
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
    EXIT_DEADLOCK = 124,  /* run/record: every guest thread was blocked for good */
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

/* A replay-only build (-DCREC_NO_RECORDER, e.g. `make cross-s390x` for a
 * big-endian host) has no recorder: record and run are not declared, not
 * listed and not linked. */
#ifndef CREC_NO_RECORDER
int cmd_record(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_dump(int argc, char **argv);
#endif
int cmd_replay(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_when(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_races(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_calls(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_backtrace(int argc, char **argv);
int cmd_syscalls(int argc, char **argv);
int cmd_find(int argc, char **argv);
int cmd_printf(int argc, char **argv);
int cmd_gdb(int argc, char **argv);
int cmd_keyframes(int argc, char **argv);

/* ---- shared by the analysis commands (cli/analysis.c) ---------------------- */

/* The options every analysis command takes: --from, --to, --thread,
 * --debug-dir (0 / NULL when not given; to defaults to the end). */
struct cli_range {
    const char *from, *to;
    unsigned long thread;
    const char *debug_dir;
};

/*! cli_analysis_open() : open FILE with its symbols, and turn --from/--to
 *  into times.  On failure the message is printed.  @return EXIT_OK or
 *  EXIT_FAIL. */
int cli_analysis_open(const char *cmd, const char *path, const struct cli_range *r,
                      crec_recording **rec, crec_symtab **sym, uint64_t *from, uint64_t *to);

/*! cli_thread() : parse --thread N into r->thread.  @return EXIT_OK or a
 *  usage error (printed). */
int cli_thread(const char *cmd, const char *arg, struct cli_range *r);

/*! cli_output_gone() : @return 1 when stdout can take no more (its reader
 *  went away: `crec trace | head`): the command then stops quietly. */
int cli_output_gone(void);

/*! cli_finish() : close what cli_analysis_open opened; flush stdout.
 *  @return rc, or EXIT_FAIL when stdout failed for another reason than a
 *  reader that went away. */
int cli_finish(crec_recording *rec, crec_symtab *sym, int rc);

/* `crec query`'s work once FILE is known (cmd_query.c), shared with `crec
 * replay FILE --query ...`: answer every WHAT@WHEN of queries[0..n) in the
 * recording at `path`.  `size`, `fmt`, `json` and `no_index` are query's
 * options.  @return the exit status (the answers and errors are printed). */
int cli_query_run(const char *path, char **queries, size_t n, uint64_t size, const char *fmt,
                  int json, int no_index, int all_values, uint32_t pid, uint32_t image);

/* Open the process of guest pid `pid` of the recording at path (image K:
 * its K-th program; 0: the one it ran last), or, pid 0, the recording's
 * one process; a recording of several without a pid is an error listing
 * them.  @return CREC_OK and *rec, or an error in err. */
int cli_open_process(const char *path, uint32_t pid, uint32_t image, unsigned flags,
                     crec_recording **rec, crec_error *err);

/* The most bytes one query or `--size` reads (a value printed on one line). */
#define CLI_QUERY_MAX 4096

/* cli_parse_u64's failures. */
#define CLI_NUM_BAD -1   /* not a number */
#define CLI_NUM_RANGE -2 /* a number over 2^64 - 1 */

/* The one parser of the numbers a user types: decimal digits, or 0x and
 * hex digits.  A leading 0 is still decimal (010 is ten, never octal); no
 * sign, no space.  @return 0 and *out, CLI_NUM_BAD or CLI_NUM_RANGE. */
int cli_parse_u64(const char *s, uint64_t *out);

/* An option's number: "bad --NAME 'S'" or "--NAME 'S' is too large" as a
 * usage error of `cmd` unless it parses and lies in [min, max].
 * @return EXIT_OK and *out, or EXIT_USAGE (printed). */
int cli_option_u64(const char *cmd, const char *name, const char *s, uint64_t min, uint64_t max,
                   uint64_t *out);

/* A parsed WHAT of `crec query` / `crec when` (cmd_query.c). */
struct cli_what {
    int is_reg, reg_kind, reg_n;
    uint32_t tid;      /* a register of this thread (TID:REG); 0: the one running */
    uint64_t addr;
    size_t len;
};

/* Parse WHAT (address, ADDR:LEN, symbol[+off], register, TID:register;
 * `size` for a bare address) and WHEN (T, end, N%, tid:step, syscall:N, each optionally
 * followed by +N or -N instructions).  An address or offset that runs past
 * 2^64 is an error, never a wrapped address.  @return 0, or -1 with the
 * one-line reason in err. */
int cli_parse_what(crec_recording *rec, const char *what, size_t size, struct cli_what *w,
                   crec_error *err);
int cli_parse_when(crec_recording *rec, const char *when, uint64_t *t, crec_error *err);
/* The same, and *tid the thread a TID:STEP names (0 for another WHEN). */
int cli_parse_when_thread(crec_recording *rec, const char *when, uint64_t *t, uint32_t *tid,
                          crec_error *err);

/* On a terminal only, show on stderr how far the long work of a query
 * (building the index of `path`) has got; elsewhere, nothing. */
void cli_show_progress(crec_recording *rec, const char *path);

/* Close a recording, first telling the user on stderr if its index file
 * could not be used and was rebuilt (crec_index_note). */
void cli_close_recording(crec_recording *rec);

/* A value as --format F prints it: `k[i]` 0 shows byte i as ??. */
void cli_format_value(const uint8_t *b, const uint8_t *k, size_t len, const char *fmt,
                      char *out, size_t size);

/* EXIT_OK if f is a --format of query and when (hex, dec, str, bytes);
 * else a usage error of `cmd`, printed, and EXIT_USAGE. */
int cli_check_format(const char *cmd, const char *f);

/* Print "crec CMD: message" and a hint to stderr; return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print "crec: message" to stderr as one line; return `code`. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "crec: FILE: message" to stderr, unless the message already names the
 * file; return EXIT_FAIL. */
int cli_fail_file(const char *name, const crec_error *e);

/* Block SIGPIPE and SIGXFSZ for crec itself, before running a program:
 * a write by the program to a closed pipe (or past `ulimit -f`) then fails
 * with EPIPE (EFBIG) and the emulator gives the program the signal, as
 * Linux would; a write of the recording that fails is an error crec
 * reports.  Blocked, not ignored: the program inherits ignored signals. */
void cli_block_write_signals(void);

/* Print s as a JSON string: quotes, backslashes and control characters
 * escaped, and each byte that is not part of valid UTF-8 as U+FFFD (a
 * recording's argv or a query may hold any bytes; JSON holds only text). */
void cli_json_str(FILE *out, const char *s);

/* A monotonic clock in seconds, for timing a command. */
double cli_now(void);

/* run/record: parse the value of a thread option (name "cpus", "slice"
 * or "chaos") into *opt.  @return 0, or -1 with a usage error printed. */
int cli_thread_option(const char *cmd, const char *name, const char *value,
                      crec_thread_options *opt);

/* run/record: how the guest ended, as crec's exit status (its own status,
 * 128+N for a fatal signal N, EXIT_DEADLOCK), saying why on `log`. */
int cli_guest_status(const crec_exit *ex, FILE *log);

/* --pid N or N.K (the K-th program of pid N): EXIT_OK and *pid, *image
 * (0 without .K), or a usage error of `cmd` printed and EXIT_USAGE. */
int cli_parse_pid(const char *cmd, const char *arg, uint32_t *pid, uint32_t *image);

/* True when argv[i] is -h or --help. */
int cli_is_help(const char *arg);

#endif /* CREC_CLI_H */
