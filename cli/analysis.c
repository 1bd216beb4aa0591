/*
 * analysis.c - what the analysis commands (trace, calls, profile,
 * backtrace, syscalls, find, printf) share: opening a recording with its
 * symbols, --from/--to/--thread, and stopping quietly when the reader of
 * the output goes away (`crec trace FILE | head`).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int out_gone;

int cli_output_gone(void)
{
    if (!out_gone && ferror(stdout))
        out_gone = 1;
    return out_gone;
}

int cli_thread(const char *cmd, const char *arg, struct cli_range *r)
{
    uint64_t n;

    if (cli_option_u64(cmd, "thread", arg, 1, UINT32_MAX, &n) != EXIT_OK)
        return EXIT_USAGE;
    r->thread = (unsigned long)n;
    return EXIT_OK;
}

int cli_analysis_open(const char *cmd, const char *path, const struct cli_range *r,
                      crec_recording **rec, crec_symtab **sym, uint64_t *from, uint64_t *to)
{
    crec_error err = {0};

    (void)cmd;
    /* A reader that goes away ends the command at its next write, with no
     * message: SIGPIPE as usual, or EPIPE where it is ignored. */
    signal(SIGPIPE, SIG_DFL);
    *rec = NULL, *sym = NULL;
    if (crec_open(path, 0, rec, &err) != CREC_OK)
        return cli_fail_file(path, &err);
    cli_show_progress(*rec, path); /* find and printf may build the index */
    *from = 0;
    *to = crec_length(*rec);
    if ((r->from && cli_parse_when(*rec, r->from, from, &err) != 0) ||
        (r->to && cli_parse_when(*rec, r->to, to, &err) != 0)) {
        crec_close(*rec);
        *rec = NULL;
        return cli_fail(EXIT_FAIL, "%s", err.msg);
    }
    if (*from > *to) {
        crec_close(*rec);
        *rec = NULL;
        return cli_fail(EXIT_FAIL, "--from %llu is after --to %llu", (unsigned long long)*from,
                        (unsigned long long)*to);
    }
    if (r->thread > crec_threads(*rec)) {
        size_t n = crec_threads(*rec);
        crec_close(*rec);
        *rec = NULL;
        return cli_fail(EXIT_FAIL, "no thread %lu (the recording has %zu thread%s, 1 to %zu)",
                        r->thread, n, n == 1 ? "" : "s", n);
    }
    if (crec_symtab_open(*rec, r->debug_dir, sym, &err) != CREC_OK) {
        crec_close(*rec);
        *rec = NULL;
        return cli_fail_file(path, &err);
    }
    return EXIT_OK;
}

int cli_finish(crec_recording *rec, crec_symtab *sym, int rc)
{
    crec_symtab_free(sym);
    crec_close(rec);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno == EPIPE || out_gone)
            return rc; /* the reader went away: not a failure of ours */
        return cli_fail(EXIT_FAIL, "can't write the output: %s", strerror(errno));
    }
    return rc;
}
