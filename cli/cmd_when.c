/*
 * cmd_when.c - `crec when FILE ADDR`: every instruction count at which the
 * value at ADDR changed, the new value and the instruction that wrote it.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char when_usage[] =
    "usage: crec when [OPTIONS] FILE ADDR\n"
    "\n"
    "List every instruction count T at which the value at ADDR (an address,\n"
    "ADDR:LEN or SYMBOL[+OFF]) changed: the value is new at T (the state after\n"
    "T instructions), written by instruction T at RIP.  The first line is the\n"
    "initial value (T=0, or where a ring or --start-at recording starts).  A\n"
    "byte the recording never saw prints as ??.\n"
    "\n"
    "Output, one change a line:  T  VALUE  RIP  BYTES (DISASSEMBLY)\n"
    "In a recording of several threads each line ends with the thread that\n"
    "wrote: \"thread N\".\n"
    "\n"
    "Options:\n"
    "  --size N        bytes to watch (default 8, at most 64)\n"
    "  --format F      hex (default), dec, str or bytes\n"
    "  --pid N[.K]     a recording of several processes: the process of guest pid\n"
    "                  N (N.K: its K-th program), in its own time, as for query\n"
    "  -h, --help      show this help\n";

struct when_ctx {
    const char *fmt;
    int first;
};

static int print_change(void *ctx, const crec_change *c)
{
    struct when_ctx *w = ctx;
    char v[512];

    cli_format_value(c->value, c->known, c->len, w->fmt, v, sizeof v);
    if (w->first) {
        printf("%" PRIu64 " %s initial\n", c->t, v);
        w->first = 0;
        return 0;
    }
    if (c->rip)
        printf("%" PRIu64 " %s 0x%" PRIx64 " %s", c->t, v, c->rip, c->insn);
    else
        printf("%" PRIu64 " %s - %s", c->t, v, c->insn);
    if (c->tid)
        printf(" thread %u", c->tid);
    putchar('\n');
    return 0;
}

int cmd_when(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'},
        {"pid", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct when_ctx w = {"hex", 1};
    uint64_t size = 8;
    crec_recording *rec = NULL;
    crec_error err = {0};
    struct cli_what what;
    uint8_t b[64], k[64];
    uint32_t pid = 0, image = 0;
    int c, src, rc = EXIT_OK;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_option_u64("when", "size", optarg, 1, 64, &size) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'f':
            if (cli_check_format("when", optarg) != EXIT_OK)
                return EXIT_USAGE;
            w.fmt = optarg;
            break;
        case 'P':
            if (cli_parse_pid("when", optarg, &pid, &image) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h':
            fputs(when_usage, stdout);
            return EXIT_OK;
        case ':':
            return cli_usage_error("when", "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("when", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("when", "needs a FILE and an ADDR");
    if (cli_open_process(argv[optind], pid, image, 0, &rec, &err) != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    cli_show_progress(rec, argv[optind]);
    if (cli_parse_what(rec, argv[optind + 1], (size_t)size, &what, &err) != 0 || what.is_reg ||
        what.len > 64) {
        if (what.is_reg || what.len > 64)
            snprintf(err.msg, sizeof err.msg, "'%s' is not a memory range of at most 64 bytes",
                     argv[optind + 1]);
        crec_close(rec);
        return cli_fail(EXIT_FAIL, "%s", err.msg);
    }
    /* the initial value first: a bad address fails here with one line */
    if (crec_seek(rec, crec_start(rec), &err) != CREC_OK ||
        crec_read_memory(rec, what.addr, what.len, b, k, &src, &err) != CREC_OK ||
        crec_watch(rec, what.addr, what.len, print_change, &w, &err) != CREC_OK)
        rc = cli_fail(EXIT_FAIL, "%s", err.msg);
    cli_close_recording(rec);
    return rc;
}
