/*
 * cmd_printf.c - `crec printf FILE LOCATION FORMAT ARGS...`: a printf
 * added after the run (like gdb's dprintf), evaluated at every execution
 * of LOCATION in the replay.  Values are captured there and formatted here,
 * as each line is written.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char printf_usage[] =
    "usage: crec printf [OPTIONS] FILE LOCATION FORMAT [ARG...]\n"
    "\n"
    "Print FORMAT with ARGs at every execution of LOCATION (a function, an\n"
    "address or SYMBOL+OFF), as a printf placed there would have: before the\n"
    "instruction at LOCATION runs (at a function's entry, its arguments are in\n"
    "rdi, rsi, rdx, rcx, r8, r9).  Each ARG is an expression of registers and\n"
    "memory (see 'crec find --help'); '(char*)E' is the string at E, for %s.\n"
    "FORMAT takes C's conversions d i u x X o c s p %% with flags, width,\n"
    "precision and the hh h l ll z length modifiers, and the escapes \\n \\t \\\\.\n"
    "\n"
    "  crec printf prog.crec parse 'len=%d buf=%s\\n' rsi '(char*)rdi'\n"
    "\n"
    "Options:\n"
    "  --from T, --to T  the range (default: the whole recording)\n"
    "  --thread N        only thread N\n"
    "  --time            start each output with 'T THREAD: '\n"
    "  --debug-dir DIR   look for separate debug files in DIR too\n"
    "  -h, --help        show this help\n";

struct pf_out {
    const crec_printf *p;
    int with_time;
    char *buf;
    size_t cap;
};

static int on_hit(void *ctx, const crec_printf_hit *h)
{
    struct pf_out *o = ctx;
    uint32_t tid;
    uint64_t t = crec_printf_hit_time(h, &tid);
    size_t n = crec_printf_format(o->p, h, o->buf, o->cap);

    if (n >= o->cap) { /* formatting is cheap: do it again in a bigger buffer */
        char *g = realloc(o->buf, n + 1);
        if (!g)
            return 1;
        o->buf = g, o->cap = n + 1;
        crec_printf_format(o->p, h, o->buf, o->cap);
    }
    if (o->with_time)
        printf("%" PRIu64 " %" PRIu32 ": ", t, tid);
    fwrite(o->buf, 1, n, stdout);
    return cli_output_gone();
}

/* C's escapes in FORMAT, as the shell leaves them: \n \t \\ \" \a \r \0. */
static char *unescape(const char *s)
{
    char *out = malloc(strlen(s) + 1), *d = out;

    if (!out)
        return NULL;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *d++ = *s;
            continue;
        }
        switch (*++s) {
        case 'n': *d++ = '\n'; break;
        case 't': *d++ = '\t'; break;
        case 'r': *d++ = '\r'; break;
        case 'a': *d++ = '\a'; break;
        case '0': *d++ = '\0'; break;
        default: *d++ = *s; break;
        }
    }
    *d = 0;
    return out;
}

int cmd_printf(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},   {"to", required_argument, NULL, 't'},
        {"thread", required_argument, NULL, 'T'}, {"time", no_argument, NULL, 'm'},
        {"debug-dir", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    struct pf_out o = {0};
    crec_recording *rec;
    crec_symtab *sym;
    crec_printf *p = NULL;
    crec_error err = {0};
    uint64_t from, to;
    char *format;
    int c, rc;

    opterr = 0;
    optind = 1;
    /* '+': stop at the first argument, so that an ARG like -1 stays one */
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': range.from = optarg; break;
        case 't': range.to = optarg; break;
        case 'T':
            if (cli_thread("printf", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'm': o.with_time = 1; break;
        case 'd': range.debug_dir = optarg; break;
        case 'h': fputs(printf_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("printf", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("printf", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind < 3)
        return cli_usage_error("printf", "needs a FILE, a LOCATION and a FORMAT");
    if ((rc = cli_analysis_open("printf", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    if (!(format = unescape(argv[optind + 2])))
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "out of memory"));
    rc = crec_printf_parse(sym, argv[optind + 1], format, argv + optind + 3,
                           (size_t)(argc - optind - 3), &p, &err);
    free(format);
    if (rc != CREC_OK)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    o.p = p;
    o.cap = 4096;
    o.buf = malloc(o.cap);
    rc = o.buf ? crec_printf_run(rec, p, from, to, (uint32_t)range.thread, on_hit, &o, &err)
               : CREC_ERR_NOMEM;
    free(o.buf);
    crec_printf_free(p);
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg[0] ? err.msg :
                                             crec_strerror(rc)));
    return cli_finish(rec, sym, EXIT_OK);
}
