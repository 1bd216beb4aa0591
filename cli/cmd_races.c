/*
 * cmd_races.c - `crec races FILE`: the data races of a recording of
 * several threads (docs/QUERY.md, "Races").
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char races_usage[] =
    "usage: crec races [OPTIONS] FILE\n"
    "\n"
    "List the data races of a recording of several threads: each address where\n"
    "two threads' accesses (at least one a store) are ordered by no sequencing\n"
    "point (syscall, atomic instruction, thread start or wake), so that on a\n"
    "multiprocessor either could have come first.  The recording ran on one\n"
    "CPU and ordered them one way; another order could have given other values.\n"
    "Each address is listed once, with the first two accesses found to race:\n"
    "\n"
    "  ADDR SYMBOL (SIZE bytes)\n"
    "    thread N at T (its instruction I): load|store RIP BYTES (DISASSEMBLY)\n"
    "    thread M at T (its instruction I): load|store RIP BYTES (DISASSEMBLY)\n"
    "\n"
    "T is the global instruction count (crec query's time).  The last line says\n"
    "how many races were found.  A recording of one thread has none.\n"
    "Exit status 0: listed (races or not); 1: a bad file; 2: bad command line.\n"
    "\n"
    "Options:\n"
    "  --json      one JSON array of races\n"
    "  -h, --help  show this help\n";

struct races_out {
    int json;
    size_t n;
};

static void print_side(const struct crec_race_side *s)
{
    printf("    thread %u at %" PRIu64 " (its instruction %" PRIu64 "): %s 0x%" PRIx64 " %s\n",
           s->tid, s->t, s->thread_icount, s->write ? "store" : "load", s->rip, s->insn);
}

static void json_side(const char *name, const struct crec_race_side *s)
{
    printf("\"%s\": {\"thread\": %u, \"t\": %" PRIu64 ", \"thread_icount\": %" PRIu64
           ", \"access\": \"%s\", \"rip\": %" PRIu64 ", \"insn\": \"", name, s->tid, s->t,
           s->thread_icount, s->write ? "store" : "load", s->rip);
    for (const char *p = s->insn; *p; p++)
        printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    printf("\"}");
}

static int print_race(void *ctx, const crec_race *r)
{
    struct races_out *o = ctx;

    if (o->json) {
        printf("%s\n {\"addr\": %" PRIu64 ", \"symbol\": \"%s\", \"size\": %u, ",
               o->n ? "," : "", r->addr, r->symbol, r->size);
        json_side("first", &r->first);
        printf(", ");
        json_side("second", &r->second);
        printf("}");
    } else {
        printf("0x%" PRIx64 " %s (%u bytes)\n", r->addr, r->symbol[0] ? r->symbol : "?",
               r->size);
        print_side(&r->first);
        print_side(&r->second);
    }
    o->n++;
    return 0;
}

int cmd_races(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct races_out o = {0, 0};
    crec_recording *rec = NULL;
    crec_error err = {0};
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'J':
            o.json = 1;
            break;
        case 'h':
            fputs(races_usage, stdout);
            return EXIT_OK;
        default:
            return cli_usage_error("races", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return cli_usage_error("races", optind >= argc ? "no recording given"
                                                       : "one recording at a time");
    if (crec_open(argv[optind], 0, &rec, &err) != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    if (o.json)
        printf("[");
    rc = crec_races(rec, print_race, &o, &err);
    crec_close(rec);
    if (o.json)
        printf("%s]\n", o.n ? "\n" : "");
    if (rc != CREC_OK)
        return cli_fail_file(argv[optind], &err);
    if (!o.json)
        printf("%zu race%s\n", o.n, o.n == 1 ? "" : "s");
    return EXIT_OK;
}
