/*
 * cmd_profile.c - `crec profile FILE`: an exact profile by instruction
 * count, as a table or for flame-graph tools, callgrind and speedscope.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char profile_usage[] =
    "usage: crec profile [OPTIONS] FILE\n"
    "\n"
    "An exact profile of the range: instructions are the clock (deterministic),\n"
    "every call and return is seen (recursion, tail calls, longjmp and C++\n"
    "exceptions included), nothing is sampled.  The table has, per function:\n"
    "  calls  self (instructions in it)  inclusive (with what it called; recursion\n"
    "  counted once)  min, max and mean inclusive instructions of one call.\n"
    "Syscalls and code without symbols have their own entries: [syscall:read],\n"
    "[unknown 0x401000].  The self column sums to the total.\n"
    "\n"
    "Options:\n"
    "  --from T, --to T  the range (default: the whole recording)\n"
    "  --thread N        only thread N\n"
    "  --sort COL        calls, self (default), inclusive, min, max, mean or name\n"
    "  --folded          folded stacks instead (\"main;parse;read 1200\"), for flame graphs\n"
    "  --callgrind       callgrind's format instead (callgrind_annotate, KCachegrind)\n"
    "  --speedscope      speedscope's JSON instead (evented, one profile per thread)\n"
    "  --merge-threads   several threads: merge their stacks (by default each thread's\n"
    "                    hang from a frame [thread N]: a root in folded stacks, a\n"
    "                    function in callgrind's format and in the table)\n"
    "  -o FILE           write to FILE instead of standard output\n"
    "  --debug-dir DIR   look for separate debug files in DIR too\n"
    "  -h, --help        show this help\n";

static const char *sort_col = "self";

static int cmp_fn(const void *x, const void *y)
{
    const crec_profile_fn *a = x, *b = y;
    uint64_t va, vb;

    if (!strcmp(sort_col, "name"))
        return strcmp(a->name, b->name);
    if (!strcmp(sort_col, "mean"))
        return a->mean < b->mean ? 1 : a->mean > b->mean ? -1 : strcmp(a->name, b->name);
    va = !strcmp(sort_col, "calls") ? a->calls : !strcmp(sort_col, "inclusive") ? a->inclusive
         : !strcmp(sort_col, "min") ? a->min : !strcmp(sort_col, "max") ? a->max : a->self;
    vb = !strcmp(sort_col, "calls") ? b->calls : !strcmp(sort_col, "inclusive") ? b->inclusive
         : !strcmp(sort_col, "min") ? b->min : !strcmp(sort_col, "max") ? b->max : b->self;
    return va < vb ? 1 : va > vb ? -1 : strcmp(a->name, b->name);
}

static void print_table(const crec_profile *p, FILE *out)
{
    const crec_profile_fn *fns;
    uint64_t total;
    size_t n = crec_profile_functions(p, &fns, &total);
    crec_profile_fn *rows = malloc((n ? n : 1) * sizeof *rows);

    if (!rows)
        return;
    if (n) /* fns may be NULL when there are none */
        memcpy(rows, fns, n * sizeof *rows);
    qsort(rows, n, sizeof *rows, cmp_fn);
    fprintf(out, "total: %" PRIu64 " instructions, %zu functions\n", total, n);
    fprintf(out, "%12s %14s %6s %14s %12s %12s %14s  %s\n", "calls", "self", "self%",
            "inclusive", "min", "max", "mean", "function");
    for (size_t i = 0; i < n && !ferror(out); i++)
        fprintf(out, "%12" PRIu64 " %14" PRIu64 " %5.1f%% %14" PRIu64 " %12" PRIu64 " %12" PRIu64
                     " %14.1f  %s\n", rows[i].calls, rows[i].self,
                total ? 100.0 * (double)rows[i].self / (double)total : 0.0, rows[i].inclusive,
                rows[i].min, rows[i].max, rows[i].mean, rows[i].name);
    free(rows);
}

int cmd_profile(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},   {"to", required_argument, NULL, 't'},
        {"thread", required_argument, NULL, 'T'}, {"sort", required_argument, NULL, 's'},
        {"folded", no_argument, NULL, 'F'},       {"callgrind", no_argument, NULL, 'C'},
        {"speedscope", no_argument, NULL, 'S'},   {"debug-dir", required_argument, NULL, 'd'},
        {"merge-threads", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    static const char *const cols[] = {"calls", "self", "inclusive", "min", "max", "mean", "name"};
    struct cli_range range = {0};
    const char *outpath = NULL;
    int c, rc, mode = 0, merge = 0;
    unsigned flags = 0;
    crec_recording *rec;
    crec_symtab *sym;
    crec_profile *p = NULL;
    crec_error err = {0};
    uint64_t from, to;
    FILE *out = stdout;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': range.from = optarg; break;
        case 't': range.to = optarg; break;
        case 'T':
            if (cli_thread("profile", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 's': {
            size_t i = 0;
            while (i < 7 && strcmp(cols[i], optarg))
                i++;
            if (i == 7)
                return cli_usage_error("profile", "bad --sort '%s' (calls, self, inclusive, "
                                       "min, max, mean, name)", optarg);
            sort_col = cols[i];
            break;
        }
        case 'F': case 'C': case 'S':
            if (mode && mode != c)
                return cli_usage_error("profile", "--folded, --callgrind and --speedscope "
                                       "exclude each other");
            mode = c;
            break;
        case 'o': outpath = optarg; break;
        case 'M': merge = 1; break;
        case 'd': range.debug_dir = optarg; break;
        case 'h': fputs(profile_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("profile", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("profile", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("profile", "needs one FILE");
    if ((rc = cli_analysis_open("profile", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    if (outpath && !(out = fopen(outpath, "w")))
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "can't create '%s'", outpath));
    if (mode == 'S')
        flags |= CREC_PROFILE_SPEEDSCOPE;
    if (crec_threads(rec) > 1 && !range.thread && !merge)
        flags |= CREC_PROFILE_THREADS;
    rc = crec_profile_run(rec, sym, from, to, (uint32_t)range.thread, flags, &p, &err);
    if (rc == CREC_OK) {
        if (mode == 'F')
            rc = crec_profile_write_folded(p, out, &err);
        else if (mode == 'C')
            rc = crec_profile_write_callgrind(p, out, &err);
        else if (mode == 'S')
            rc = crec_profile_write_speedscope(p, out, &err);
        else
            print_table(p, out);
    }
    crec_profile_free(p);
    if (out != stdout && fclose(out) != 0 && rc == CREC_OK)
        rc = CREC_ERR_IO, snprintf(err.msg, sizeof err.msg, "can't write '%s'", outpath);
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    return cli_finish(rec, sym, EXIT_OK);
}
