/*
 * cmd_trace.c - `crec trace FILE`: one line per instruction of a range,
 * with its symbol, source line and disassembly; --mem adds the memory it
 * read and wrote, --regs the registers it changed; --format tenet writes
 * the trace format of the Tenet trace explorer.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char trace_usage[] =
    "usage: crec trace [OPTIONS] FILE\n"
    "\n"
    "One line per instruction of the range, streamed as the replay runs:\n"
    "  T  THREAD  ADDRESS  SYMBOL+OFFSET  [FILE:LINE]  DISASSEMBLY\n"
    "T is the instruction count before it (the state the instruction starts from).\n"
    "\n"
    "Options:\n"
    "  --from T          start at T (a count, end, N%, syscall:N; default 0)\n"
    "  --to T            the last instruction shown is the one at T (default: the end)\n"
    "  --thread N        only thread N\n"
    "  --only WHERE      only instructions in function WHERE, or in LO-HI (addresses)\n"
    "  --mem             add each memory read (r) and write (w) with its value, and\n"
    "                    the ranges the kernel wrote (k)\n"
    "  --regs            add the registers each instruction changed\n"
    "  --format F        text (default) or tenet: rip=0x..,rax=0x..,mr=ADDR:HEX,mw=ADDR:HEX\n"
    "                    per line, the registers that changed since the line before\n"
    "  --debug-dir DIR   look for separate debug files (source lines) in DIR too\n"
    "  -h, --help        show this help\n"
    "\n"
    "Source lines come from the program's files while they are on disk unchanged.\n";

static const char *const reg_names[] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10",
    "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "fs_base", "gs_base",
};

struct trace {
    crec_symtab *sym;
    int mem, regs, tenet;
    uint64_t only_lo, only_hi; /* [lo, hi), or 0, 0 */
    int have_prev;
    uint64_t prev[20];     /* registers before the last instruction printed */
    int pending;           /* an instruction printed whose changes are not yet */
    uint32_t pending_tid;  /* ... its thread */
    char mem_line[4096];   /* tenet: this instruction's accesses */
    size_t mem_len;
    crec_error err;
    int failed;
};

static void regs_vec(const crec_regs *r, uint64_t *v)
{
    memcpy(v, r->gpr, 16 * sizeof *v);
    v[16] = r->rip, v[17] = r->rflags, v[18] = r->fs_base, v[19] = r->gs_base;
}

/* --regs: what the instruction printed last changed (now is the state after it). */
static void print_changes(struct trace *tr, const uint64_t *now)
{
    int any = 0;

    for (int i = 0; i < 20; i++) {
        if (i == 16 || now[i] == tr->prev[i])
            continue; /* rip always changes */
        printf("%s%s=0x%" PRIx64, any ? " " : "    regs: ", reg_names[i], now[i]);
        any = 1;
    }
    if (any)
        putchar('\n');
}

static int in_only(struct trace *tr, uint64_t rip)
{
    return tr->only_hi == 0 || (rip >= tr->only_lo && rip < tr->only_hi);
}

static void tenet_flush(struct trace *tr)
{
    if (tr->mem_len) {
        fwrite(tr->mem_line, 1, tr->mem_len, stdout);
        tr->mem_len = 0;
    }
    if (tr->pending)
        putchar('\n');
    tr->pending = 0;
}

static int on_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct trace *tr = ctx;
    uint64_t now[20];
    crec_regs r;

    if (tr->regs && tr->pending && tr->pending_tid != tid) {
        /* another thread runs now: the last one's changes are in its registers */
        if (crec_exec_thread_regs(x, tr->pending_tid, &r, &tr->err) != CREC_OK) {
            tr->failed = 1;
            return 1;
        }
        regs_vec(&r, now);
        print_changes(tr, now);
        tr->pending = 0;
    }
    if (tr->regs || tr->tenet) {
        if (crec_exec_regs(x, &r, &tr->err) != CREC_OK) {
            tr->failed = 1;
            return 1;
        }
        regs_vec(&r, now);
    }
    if (tr->tenet) {
        tenet_flush(tr);
        if (!in_only(tr, rip))
            return cli_output_gone();
        printf("rip=0x%" PRIx64, rip);
        for (int i = 0; i < 20; i++)
            if (i != 16 && (!tr->have_prev || now[i] != tr->prev[i]))
                printf(",%s=0x%" PRIx64, reg_names[i], now[i]);
        memcpy(tr->prev, now, sizeof tr->prev);
        tr->have_prev = 1;
        tr->pending = 1;
        return cli_output_gone();
    }
    if (tr->regs && tr->pending)
        print_changes(tr, now);
    tr->pending = 0;
    if (!in_only(tr, rip))
        return cli_output_gone();
    if (tr->regs)
        memcpy(tr->prev, now, sizeof tr->prev);
    {
        char name[300], dis[160];
        crec_place p;
        crec_symtab_name(tr->sym, rip, name, sizeof name);
        crec_symtab_place(tr->sym, rip, &p);
        if (crec_symtab_disasm(tr->sym, rip, dis, sizeof dis, NULL, NULL) != CREC_OK)
            snprintf(dis, sizeof dis, "(not code of a recorded mapping)");
        printf("%" PRIu64 " %" PRIu32 " 0x%" PRIx64 " %s", t, tid, rip, name);
        if (p.file)
            printf(" %s:%u", p.file, p.line);
        printf("  %s\n", dis);
    }
    tr->pending = 1;
    tr->pending_tid = tid;
    return cli_output_gone();
}

static void hex(char *out, size_t size, const uint8_t *b, uint64_t n)
{
    size_t at = 0;

    out[0] = 0;
    for (uint64_t i = 0; i < n && at + 3 < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%02x", b[i]);
}

static int on_access(void *ctx, crec_exec *x, const crec_access *a)
{
    struct trace *tr = ctx;
    char v[80];

    (void)x;
    if (!tr->pending)
        return 0;
    if (a->kind == CREC_ACCESS_KERNEL) {
        if (!tr->tenet) /* Tenet has no kernel writes: the next reads show them */
            printf("    k 0x%" PRIx64 " %" PRIu64 "\n", a->addr, a->len);
        return cli_output_gone();
    }
    hex(v, sizeof v, a->value, a->len);
    if (tr->tenet) {
        int n = snprintf(tr->mem_line + tr->mem_len, sizeof tr->mem_line - tr->mem_len,
                         ",%s=0x%" PRIx64 ":%s", a->kind == CREC_ACCESS_READ ? "mr" : "mw",
                         a->addr, v);
        if (n > 0 && (size_t)n < sizeof tr->mem_line - tr->mem_len)
            tr->mem_len += (size_t)n;
        return 0;
    }
    printf("    %c 0x%" PRIx64 " %" PRIu64 " %s\n", a->kind, a->addr, a->len, v);
    return cli_output_gone();
}

/* --only: a function (its symbol's extent) or LO-HI. */
static int parse_only(crec_recording *rec, crec_symtab *sym, const char *w, struct trace *tr,
                      crec_error *err)
{
    const char *dash = strchr(w, '-');
    char *end;
    crec_place p;
    crec_symbol s;
    uint64_t a;

    if (dash && w[0] >= '0' && w[0] <= '9') {
        tr->only_lo = strtoull(w, &end, 0);
        if (end != dash)
            goto bad;
        tr->only_hi = strtoull(dash + 1, &end, 0);
        if (*end || tr->only_hi <= tr->only_lo)
            goto bad;
        return 0;
    }
    if (crec_symtab_resolve(sym, w, &a, err) != CREC_OK)
        return -1;
    crec_symtab_place(sym, a, &p);
    if (!p.func) {
        snprintf(err->msg, sizeof err->msg, "no function at '%s'", w);
        return -1;
    }
    tr->only_lo = p.func_addr;
    tr->only_hi = p.func_addr + 1;
    if (crec_symbolize(rec, p.func_addr, &s, err) == CREC_OK && s.size)
        tr->only_hi = p.func_addr + s.size;
    else /* no size: up to the next address another symbol names */
        for (uint64_t step = 1; step < 65536; step++) {
            crec_place q;
            crec_symtab_place(sym, p.func_addr + step, &q);
            if (q.func != p.func)
                break;
            tr->only_hi = p.func_addr + step + 1;
        }
    return 0;
bad:
    snprintf(err->msg, sizeof err->msg, "bad --only '%s' (a function, or LO-HI)", w);
    return -1;
}

int cmd_trace(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},  {"to", required_argument, NULL, 't'},
        {"thread", required_argument, NULL, 'T'}, {"only", required_argument, NULL, 'o'},
        {"mem", no_argument, NULL, 'm'},          {"regs", no_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'F'}, {"debug-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    struct cli_range range = {0};
    struct trace tr = {0};
    const char *only = NULL;
    crec_recording *rec;
    crec_symtab *sym;
    crec_error err = {0};
    uint64_t from, to;
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': range.from = optarg; break;
        case 't': range.to = optarg; break;
        case 'T':
            if (cli_thread("trace", optarg, &range) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'o': only = optarg; break;
        case 'm': tr.mem = 1; break;
        case 'r': tr.regs = 1; break;
        case 'd': range.debug_dir = optarg; break;
        case 'F':
            if (strcmp(optarg, "tenet") != 0 && strcmp(optarg, "text") != 0)
                return cli_usage_error("trace", "bad --format '%s' (text or tenet)", optarg);
            tr.tenet = strcmp(optarg, "tenet") == 0;
            break;
        case 'h': fputs(trace_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("trace", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("trace", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("trace", "needs one FILE");
    if ((rc = cli_analysis_open("trace", argv[optind], &range, &rec, &sym, &from, &to)) != EXIT_OK)
        return rc;
    if (range.to && to < crec_length(rec))
        to++; /* --to names the last instruction shown */
    tr.sym = sym;
    if (tr.tenet && crec_threads(rec) > 1 && !range.thread)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s: --format tenet follows one thread "
                                             "and the recording has %zu: give --thread N",
                                             argv[optind], crec_threads(rec)));
    if (only && parse_only(rec, sym, only, &tr, &err) != 0)
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    crec_observer obs = {.ctx = &tr, .tid = (uint32_t)range.thread, .insn = on_insn};
    if (tr.mem || tr.tenet)
        obs.access = on_access;
    rc = crec_exec_run(rec, from, to, &obs, NULL, &err);
    if (rc == CREC_OK && tr.failed)
        rc = tr.err.code, err = tr.err;
    if (rc == CREC_OK && !cli_output_gone()) {
        if (tr.tenet) {
            tenet_flush(&tr);
        } else if (tr.regs && tr.pending) { /* the last instruction's changes */
            crec_regs r;
            uint64_t now[20];
            if (crec_seek(rec, to, &err) == CREC_OK &&
                crec_read_thread_registers(rec, tr.pending_tid, &r, &err) == CREC_OK) {
                regs_vec(&r, now);
                print_changes(&tr, now);
            }
        }
    }
    if (rc != CREC_OK && !cli_output_gone())
        return cli_finish(rec, sym, cli_fail(EXIT_FAIL, "%s", err.msg));
    return cli_finish(rec, sym, EXIT_OK);
}
