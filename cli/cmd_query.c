/*
 * cmd_query.c - `crec query FILE WHAT@WHEN ...`: the value of a memory
 * range or a register at any instruction count (docs/QUERY.md), and the
 * parsing of WHAT / WHEN that `crec when` shares.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char query_usage[] =
    "usage: crec query [OPTIONS] FILE WHAT@WHEN [WHAT@WHEN ...]\n"
    "\n"
    "Print the value of memory or of a register at a point of the recording.\n"
    "\"At T\" is the state after exactly T instructions have run, before\n"
    "instruction T+1 (T=0: the initial state).\n"
    "\n"
    "WHAT:  ADDR            decimal or hex (0x...) address, --size bytes; a\n"
    "                       leading 0 is decimal, never octal\n"
    "       ADDR:LEN        a range of LEN bytes\n"
    "       SYMBOL[+OFF]    an ELF symbol of the program (e.g. counter, main+0x10)\n"
    "       REGISTER        rax .. r15, rip, rflags, fs_base, gs_base, xmm0 .. xmm15,\n"
    "                       st0 .. st7, mxcsr, fpcw, fpsw, fptag: of the thread\n"
    "                       that runs instruction T+1 (or of TID, at TID:STEP)\n"
    "       TID:REGISTER    thread TID's register: its state after its last\n"
    "                       instruction before T\n"
    "WHEN:  T               an instruction count (all threads' instructions, in the\n"
    "                       order they ran)\n"
    "       end             the end of the recording\n"
    "       N%              N percent of the way through\n"
    "       TID:STEP        thread TID after STEP of its own instructions (threads are\n"
    "                       numbered from 1, as 'crec info' lists them)\n"
    "       syscall:N       just before the Nth syscall (from 1)\n"
    "       PID/WHEN        in the process of guest pid PID (PID.K: its K-th\n"
    "                       program), as --pid says: PID/TID:STEP, PID/T, ...\n"
    "       WHEN+N, WHEN-N  N instructions after or before WHEN (syscall:3+1: just\n"
    "                       after the 3rd syscall)\n"
    "\n"
    "A byte the recording never saw prints as ??.  Each answer names the path\n"
    "that gave it: code, index+replay, snapshot, unknown (or register).\n"
    "Exit status 0: answered; 1: a bad query or file; 2: bad command line.\n"
    "\n"
    "Options:\n"
    "  --size N        bytes of an address query (default 8, at most 4096)\n"
    "  --format F      hex (default), dec, str or bytes\n"
    "  --json          one JSON array of answers; a failed query ends it with\n"
    "                  {\"query\": ..., \"error\": ...}\n"
    "  --no-index      answer by a full replay from instruction 0 (slow; a test oracle)\n"
    "  --pid N[.K]     a recording of several processes (crec info lists them):\n"
    "                  the process of guest pid N, in its own time (its own\n"
    "                  instruction count, all its threads); N.K: its K-th program\n"
    "                  (execve goes on as a new process), else the one it ran\n"
    "                  last.  Without it such a recording says which pids it has\n"
    "  --all-values    a recording of several threads: every value the memory may\n"
    "                  hold at that time when threads are ordered only by their\n"
    "                  sequencing points (syscalls, atomic instructions), as on a\n"
    "                  multiprocessor; more than one is \"undetermined\" (a race)\n"
    "  -h, --help      show this help\n";

/* ---- parsing --------------------------------------------------------------- */

static int qerr(crec_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int qerr(crec_error *err, const char *fmt, ...)
{
    va_list ap;

    err->code = CREC_ERR_ARG;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* A number of a query: cli_parse_u64, with the reason in err. */
static int parse_num(const char *s, uint64_t *out, const char *what, const char *in,
                     crec_error *err)
{
    int rc = cli_parse_u64(s, out);
    const char *sep = strcmp(s, in) ? "' in '" : "", *whole = strcmp(s, in) ? in : "";

    if (rc == CLI_NUM_RANGE)
        return qerr(err, "%s '%s%s%s' is over 2^64-1", what, s, sep, whole);
    if (rc != 0)
        return qerr(err, "malformed %s '%s%s%s' (decimal, or hex with 0x)", what, s, sep,
                    whole);
    return 0;
}

struct reg_name {
    const char *name;
    int kind; /* 0 gpr, 1 rip, 2 rflags, 3 fs, 4 gs, 5 xmm, 6 st, 7 mxcsr, 8 fpcw, 9 fpsw, 10 fptag */
    int n;
};

static const struct reg_name regs[] = {
    {"rax", 0, CREC_RAX}, {"rcx", 0, CREC_RCX}, {"rdx", 0, CREC_RDX}, {"rbx", 0, CREC_RBX},
    {"rsp", 0, CREC_RSP}, {"rbp", 0, CREC_RBP}, {"rsi", 0, CREC_RSI}, {"rdi", 0, CREC_RDI},
    {"r8", 0, CREC_R8},   {"r9", 0, CREC_R9},   {"r10", 0, CREC_R10}, {"r11", 0, CREC_R11},
    {"r12", 0, CREC_R12}, {"r13", 0, CREC_R13}, {"r14", 0, CREC_R14}, {"r15", 0, CREC_R15},
    {"rip", 1, 0},        {"rflags", 2, 0},     {"eflags", 2, 0},     {"fs_base", 3, 0},
    {"gs_base", 4, 0},    {"mxcsr", 7, 0},      {"fpcw", 8, 0},       {"fpsw", 9, 0},
    {"fptag", 10, 0},
};

/* A register name: fills bytes/len from r if regs != NULL.  @return 1 if it is one. */
static int reg_lookup(const char *s, int *kind, int *n)
{
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        if (strcmp(s, regs[i].name) == 0) {
            *kind = regs[i].kind, *n = regs[i].n;
            return 1;
        }
    if ((strncmp(s, "xmm", 3) == 0 || strncmp(s, "st", 2) == 0)) {
        const char *d = s[0] == 'x' ? s + 3 : s + 2;
        char *end;
        long v;
        if (!isdigit((unsigned char)d[0]))
            return 0;
        v = strtol(d, &end, 10);
        if (*end || (s[0] == 'x' && v > 15) || (s[0] == 's' && v > 7))
            return 0;
        *kind = s[0] == 'x' ? 5 : 6, *n = (int)v;
        return 1;
    }
    return 0;
}

static size_t reg_bytes(const crec_regs *r, int kind, int n, uint8_t *out)
{
    uint64_t v = 0;
    size_t len = 8;

    switch (kind) {
    case 0: v = r->gpr[n]; break;
    case 1: v = r->rip; break;
    case 2: v = r->rflags; break;
    case 3: v = r->fs_base; break;
    case 4: v = r->gs_base; break;
    case 5: memcpy(out, r->xmm[n], 16); return 16;
    case 6: memcpy(out, r->st[n], 10); return 10;
    case 7: v = r->mxcsr, len = 4; break;
    case 8: v = r->fpcw, len = 2; break;
    case 9: v = r->fpsw, len = 2; break;
    default: v = r->fptag, len = 2; break;
    }
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)(v >> (8 * i));
    return len;
}

int cli_parse_what(crec_recording *rec, const char *what, size_t size, struct cli_what *w,
                   crec_error *err)
{
    char buf[512], *colon, *plus;
    uint64_t off = 0, len = size;

    memset(w, 0, sizeof *w);
    if (strlen(what) >= sizeof buf || !what[0])
        return qerr(err, "malformed expression '%s'", what);
    strcpy(buf, what);
    if (reg_lookup(buf, &w->reg_kind, &w->reg_n)) {
        w->is_reg = 1;
        return 0;
    }
    colon = strchr(buf, ':');
    if (colon && isdigit((unsigned char)buf[0]) && reg_lookup(colon + 1, &w->reg_kind, &w->reg_n)) {
        uint64_t tid; /* TID:REG, a register of that thread */
        *colon = 0;
        if (parse_num(buf, &tid, "thread", what, err) != 0)
            return -1;
        if (tid < 1 || tid > crec_threads(rec))
            return qerr(err, "no thread %" PRIu64 " (the recording has %zu thread%s, 1 to %zu)",
                        tid, crec_threads(rec), crec_threads(rec) == 1 ? "" : "s",
                        crec_threads(rec));
        w->is_reg = 1;
        w->tid = (uint32_t)tid;
        return 0;
    }
    colon = strchr(buf, ':');
    if (colon) {
        *colon = 0;
        if (parse_num(colon + 1, &len, "range length", what, err) != 0)
            return -1;
        if (len == 0 || len > CLI_QUERY_MAX)
            return qerr(err, "range length %" PRIu64 " in '%s' (1 to %d)", len, what,
                        CLI_QUERY_MAX);
    }
    if (isdigit((unsigned char)buf[0])) {
        if (parse_num(buf, &w->addr, "address", what, err) != 0)
            return -1;
    } else if (isalpha((unsigned char)buf[0]) || buf[0] == '_' || buf[0] == '.') {
        plus = strpbrk(buf, "+-");
        int neg = plus && *plus == '-';
        if (plus) {
            *plus = 0;
            if (parse_num(plus + 1, &off, "offset", what, err) != 0)
                return -1;
        }
        for (const char *p = buf; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '@')
                return qerr(err, "malformed expression '%s'", what);
        int rc = crec_lookup_symbol(rec, buf, &w->addr, err);
        if (rc == CREC_ERR_NOTFOUND)
            return qerr(err, "'%s' is neither a register nor a symbol "
                                  "of the recording", buf);
        if (rc != CREC_OK)
            return -1; /* the symbols can't be read: err says why */
        if (neg ? off > w->addr : off > UINT64_MAX - w->addr)
            return qerr(err, "'%s' is outside the address space (%s is 0x%" PRIx64 ")", what,
                        buf, w->addr);
        w->addr = neg ? w->addr - off : w->addr + off;
    } else {
        return qerr(err, "malformed expression '%s'", what);
    }
    if (len - 1 > UINT64_MAX - w->addr)
        return qerr(err, "'%s' runs past the end of the address space", what);
    w->len = (size_t)len;
    return 0;
}

/* WHEN without a +N/-N offset. */
static int parse_when_base(crec_recording *rec, const char *when, uint64_t *t, uint32_t *thread,
                           crec_error *err)
{
    uint64_t end = crec_length(rec), n;
    const char *colon = strchr(when, ':');
    size_t l = strlen(when);

    if (strcmp(when, "end") == 0) {
        *t = end;
        return 0;
    }
    if (l > 1 && when[l - 1] == '%') {
        char num[64];
        char *e;
        double p;
        if (l >= sizeof num)
            return qerr(err, "malformed time '%s'", when);
        memcpy(num, when, l - 1);
        num[l - 1] = 0;
        p = strtod(num, &e);
        if (*e || !num[0] || !isdigit((unsigned char)num[0]) || p < 0 || p > 100)
            return qerr(err, "malformed time '%s'", when);
        *t = (uint64_t)((double)end * p / 100.0);
        return 0;
    }
    if (colon && strncmp(when, "syscall:", 8) == 0) {
        if (parse_num(when + 8, &n, "syscall number", when, err) != 0)
            return -1;
        return crec_syscall_time(rec, n, t, err) == CREC_OK ? 0 : -1;
    }
    if (colon) {
        char tid[32];
        uint64_t id;
        if ((size_t)(colon - when) >= sizeof tid)
            return qerr(err, "malformed time '%s'", when);
        memcpy(tid, when, (size_t)(colon - when));
        tid[colon - when] = 0;
        if (parse_num(tid, &id, "thread", when, err) != 0 ||
            parse_num(colon + 1, &n, "step", when, err) != 0)
            return -1;
        if (id < 1 || id > crec_threads(rec))
            return qerr(err, "no thread %" PRIu64 " (the recording has %zu thread%s, 1 to %zu)",
                        id, crec_threads(rec), crec_threads(rec) == 1 ? "" : "s",
                        crec_threads(rec));
        if (crec_thread_time(rec, (uint32_t)id, n, t, err) != CREC_OK)
            return -1;
        *thread = (uint32_t)id;
        return 0;
    }
    if (parse_num(when, t, "time", when, err) != 0)
        return -1;
    if (*t > end)
        return qerr(err, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", *t, end);
    return 0;
}

int cli_parse_when(crec_recording *rec, const char *when, uint64_t *t, crec_error *err)
{
    uint32_t tid;

    return cli_parse_when_thread(rec, when, t, &tid, err);
}

int cli_parse_when_thread(crec_recording *rec, const char *when, uint64_t *t, uint32_t *tid,
                          crec_error *err)
{
    const char *sign = strpbrk(when, "+-");
    char base[128];
    uint64_t n;

    *tid = 0;
    if (!sign)
        return parse_when_base(rec, when, t, tid, err);
    /* WHEN+N / WHEN-N: N instructions after or before WHEN */
    if (sign == when || (size_t)(sign - when) >= sizeof base)
        return qerr(err, "malformed time '%s'", when);
    memcpy(base, when, (size_t)(sign - when));
    base[sign - when] = 0;
    if (parse_when_base(rec, base, t, tid, err) != 0 ||
        parse_num(sign + 1, &n, "instruction count", when, err) != 0)
        return -1;
    if (n > INT64_MAX)
        return qerr(err, "'%s' moves too far", when);
    if (crec_seek(rec, *t, err) != CREC_OK ||
        crec_step(rec, *sign == '-' ? -(int64_t)n : (int64_t)n, err) != CREC_OK)
        return -1;
    *t = crec_tell(rec);
    return 0;
}

/* ---- progress -------------------------------------------------------------- */

static void progress_line(void *ctx, uint64_t done, uint64_t total)
{
    const char *path = ctx;

    if (done >= total) {
        fputs("\r\033[K", stderr); /* the work is done: erase the line */
    } else {
        fprintf(stderr, "\rcrec: building the index of %s: %" PRIu64 "%% (%.1fM of %.1fM "
                "instructions replayed)\033[K", path, total ? done * 100 / total : 0,
                (double)done / 1e6, (double)total / 1e6);
    }
    fflush(stderr);
}

void cli_show_progress(crec_recording *rec, const char *path)
{
    if (isatty(STDERR_FILENO))
        crec_set_progress(rec, progress_line, (void *)path);
}

void cli_close_recording(crec_recording *rec)
{
    const char *note = rec ? crec_index_note(rec) : NULL;

    if (note) {
        fflush(stdout);
        fprintf(stderr, "crec: note: %s\n", note);
    }
    crec_close(rec);
}

/* ---- printing -------------------------------------------------------------- */

void cli_format_value(const uint8_t *b, const uint8_t *k, size_t len, const char *fmt,
                      char *out, size_t size)
{
    size_t o = 0;
    int all = 1;

    for (size_t i = 0; i < len; i++)
        all &= k[i] != 0;
    out[0] = 0;
    if (strcmp(fmt, "dec") == 0 && len <= 8 && all) {
        uint64_t v = 0;
        for (size_t i = len; i-- > 0;)
            v = v << 8 | b[i];
        snprintf(out, size, "%" PRIu64, v);
        return;
    }
    if (strcmp(fmt, "str") == 0) {
        o += (size_t)snprintf(out + o, size - o, "\"");
        for (size_t i = 0; i < len && o + 8 < size; i++) {
            if (!k[i])
                o += (size_t)snprintf(out + o, size - o, "??");
            else if (b[i] == '"' || b[i] == '\\')
                o += (size_t)snprintf(out + o, size - o, "\\%c", b[i]);
            else if (isprint(b[i]))
                o += (size_t)snprintf(out + o, size - o, "%c", b[i]);
            else
                o += (size_t)snprintf(out + o, size - o, "\\x%02x", b[i]);
        }
        snprintf(out + o, size - o, "\"");
        return;
    }
    if (strcmp(fmt, "bytes") != 0 && len <= 8) {
        o += (size_t)snprintf(out + o, size - o, "0x");
        for (size_t i = len; i-- > 0 && o + 3 < size;)
            o += k[i] ? (size_t)snprintf(out + o, size - o, "%02x", b[i])
                      : (size_t)snprintf(out + o, size - o, "??");
        return;
    }
    for (size_t i = 0; i < len && o + 4 < size; i++)
        o += k[i] ? (size_t)snprintf(out + o, size - o, "%s%02x", i ? " " : "", b[i])
                  : (size_t)snprintf(out + o, size - o, "%s??", i ? " " : "");
}

static const char *source_name(int src, int no_index)
{
    switch (src) {
    case CREC_SRC_CODE: return "code";
    case CREC_SRC_REPLAY: return no_index ? "replay" : "index+replay";
    case CREC_SRC_SNAPSHOT: return "snapshot";
    case CREC_SRC_INDEX: return "index";
    }
    return "unknown";
}

/* One WHAT@WHEN of the command line, parsed, and then its answer. */
#define CLI_ALL_VALUES 16 /* --all-values: the values shown */

struct query {
    const char *arg;
    struct cli_what w;
    uint64_t t;
    uint8_t bytes[CLI_QUERY_MAX], known[CLI_QUERY_MAX];
    size_t len;
    const char *path;
    int all;                       /* --all-values: */
    crec_value vals[CLI_ALL_VALUES];
    size_t nvals;
};

/* Parse every query before answering any, so a typo fails at once. */
static int query_parse(crec_recording *rec, const char *arg, uint64_t size, struct query *q,
                       crec_error *err)
{
    char buf[512], *at;
    uint32_t tid;

    if (strlen(arg) >= sizeof buf || !(at = strrchr(strcpy(buf, arg), '@')))
        return qerr(err, "malformed query (WHAT@WHEN)");
    *at = 0;

    if (cli_parse_what(rec, buf, (size_t)size, &q->w, err) != 0 ||
        cli_parse_when_thread(rec, at + 1, &q->t, &tid, err) != 0)
        return -1;
    if (q->w.is_reg && !q->w.tid)
        q->w.tid = tid; /* REG@TID:STEP: that thread's */
    return 0;
}

static int query_answer(crec_recording *rec, struct query *q, int no_index, crec_error *err)
{
    int src = 0;

    if (crec_seek(rec, q->t, err) != CREC_OK)
        return -1;
    if (q->w.is_reg) {
        crec_regs r;
        if (crec_read_thread_registers(rec, q->w.tid, &r, err) != CREC_OK)
            return -1;
        q->len = reg_bytes(&r, q->w.reg_kind, q->w.reg_n, q->bytes);
        memset(q->known, 1, q->len);
        q->path = "register";
        return 0;
    }
    q->len = q->w.len;
    if (crec_read_memory(rec, q->w.addr, q->len, q->bytes, q->known, &src, err) != CREC_OK)
        return -1;
    q->path = source_name(src, no_index);
    if (q->all) {
        if (q->len > 64)
            return qerr(err, "--all-values takes at most 64 bytes, not %zu", q->len);
        if (crec_read_memory_all(rec, q->w.addr, q->len, q->vals, CLI_ALL_VALUES, &q->nvals,
                                 err) != CREC_OK)
            return -1;
    }
    return 0;
}

static void query_json_open(const struct query *q, int first);

/* --all-values: every value the multiprocessor view allows, and why. */
static void query_print_all(const struct query *q, const char *fmt, int json, int first)
{
    static char out[CLI_QUERY_MAX * 4 + 64];
    size_t n = q->nvals < CLI_ALL_VALUES ? q->nvals : CLI_ALL_VALUES;

    if (json) {
        query_json_open(q, first);
        printf(", \"t\": %" PRIu64 ", \"addr\": %" PRIu64 ", \"size\": %zu, \"undetermined\": %s, "
               "\"values\": [", q->t, q->w.addr, q->len, q->nvals > 1 ? "true" : "false");
    } else if (q->nvals == 1) {
        cli_format_value(q->vals[0].bytes, q->vals[0].known, q->len, fmt, out, sizeof out);
        printf("%s = %s (%s; determined: no order the sequencing allows gives another)\n",
               q->arg, out, q->path);
        return;
    } else {
        printf("%s = undetermined, %zu values:\n", q->arg, q->nvals);
    }
    for (size_t i = 0; i < n; i++) {
        const crec_value *v = &q->vals[i];
        cli_format_value(v->bytes, v->known, q->len, fmt, out, sizeof out);
        if (json) {
            printf("%s{\"value\": ", i ? ", " : "");
            cli_json_str(stdout, out);
            if (v->recorded)
                printf(", \"recorded\": true, \"path\": \"%s\"}", q->path);
            else
                printf(", \"thread\": %u, \"t\": %" PRIu64 ", \"rip\": %" PRIu64
                       ", \"order\": \"%s\"}", v->tid, v->t, v->rip,
                       v->unordered ? "unordered" : "before");
            continue;
        }
        if (v->recorded)
            printf("  %s  as recorded (%s)\n", out, q->path);
        else
            printf("  %s  thread %u's store, new at %" PRIu64 ": 0x%" PRIx64 " %s; %s\n", out,
                   v->tid, v->t, v->rip, v->insn,
                   v->unordered ? "no sequencing point orders it with this time"
                                : "the last store ordered before this time");
    }
    if (json)
        printf("]}");
    else if (q->nvals > n)
        printf("  ... and %zu more\n", q->nvals - n);
}

/* The start of q's object in the JSON array, up to its first member. */
static void query_json_open(const struct query *q, int first)
{
    printf("%s\n {\"query\": ", first ? "" : ",");
    cli_json_str(stdout, q->arg);
}

static void query_print(const struct query *q, const char *fmt, int json, int first)
{
    static char out[CLI_QUERY_MAX * 4 + 64];

    if (q->all && !q->w.is_reg) {
        query_print_all(q, fmt, json, first);
        return;
    }

    cli_format_value(q->bytes, q->known, q->len, fmt, out, sizeof out);
    if (!json) {
        printf("%s = %s (%s)\n", q->arg, out, q->path);
        return;
    }
    query_json_open(q, first);
    printf(", \"t\": %" PRIu64 ", ", q->t);
    if (!q->w.is_reg)
        printf("\"addr\": %" PRIu64 ", \"size\": %zu, ", q->w.addr, q->len);
    printf("\"value\": ");
    cli_json_str(stdout, out);
    printf(", \"path\": \"%s\"}", q->path);
}

/* The failed query as the last element of the JSON array, so the output stays valid JSON. */
static void query_print_error(const struct query *q, const char *msg, int first)
{
    query_json_open(q, first);
    printf(", \"error\": ");
    cli_json_str(stdout, msg);
    printf("}");
}

/* Time order, so that queries at one time share its replay. */
static int query_cmp_time(const void *a, const void *b)
{
    const struct query *x = *(const struct query *const *)a, *y = *(const struct query *const *)b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x < y ? -1 : x > y;
}

/*
 * Answer every query (in time order), then print the answers in the order
 * given, up to the first that failed.  @return the index of the first
 * failed query, or n.
 */
static size_t query_run_all(crec_recording *rec, struct query *qs, size_t n, int no_index,
                            crec_error *err)
{
    struct query **order = malloc((n ? n : 1) * sizeof *order);
    size_t failed = n;

    if (!order) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &qs[i];
    qsort(order, n, sizeof *order, query_cmp_time);
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(order[i] - qs);
        crec_error e = {0}; /* the failed one's message stays, whatever runs after it */
        if (k < failed && query_answer(rec, order[i], no_index, &e) != 0) {
            failed = k; /* queries after it in the command line are not printed */
            *err = e;
        }
    }
    free(order);
    return failed;
}

int cli_check_format(const char *cmd, const char *f)
{
    if (!strcmp(f, "hex") || !strcmp(f, "dec") || !strcmp(f, "str") || !strcmp(f, "bytes"))
        return EXIT_OK;
    return cli_usage_error(cmd, "bad --format '%s' (hex, dec, str, bytes)", f);
}

/* ---- processes ---------------------------------------------------------------- */

/* "9021 (sh), 9028.1 (sh), 9028.2 (seq)" for the list of a recording's
 * processes: PID.K where a pid ran more than one program. */
static void describe_pids(const crec_process_info *p, size_t n, char *out, size_t size)
{
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n && o + 48 < size; i++) {
        const char *prog = p[i].argc ? p[i].argv[0] : p[i].path, *base = strrchr(prog, '/');
        int several = 0;
        char k[16] = "";
        for (size_t j = 0; j < n; j++)
            several |= j != i && p[j].pid == p[i].pid;
        if (several)
            snprintf(k, sizeof k, ".%u", p[i].image);
        o += (size_t)snprintf(out + o, size - o, "%s%u%s (%.24s)", i ? ", " : "", p[i].pid, k,
                              base ? base + 1 : prog);
    }
    if (o + 48 >= size && n)
        snprintf(out + (o < size - 5 ? o : size - 5), 5, "...");
}

int cli_open_process(const char *path, uint32_t pid, uint32_t image, unsigned flags,
                     crec_recording **rec, crec_error *err)
{
    crec_process_info *p = NULL;
    size_t n = 0, pick = SIZE_MAX;
    int rc = crec_open(path, flags, rec, err); /* process 0: reads a pipe once */

    if (rc == CREC_OK)
        rc = crec_recording_processes(*rec, &p, &n, err);
    if (rc != CREC_OK) {
        crec_close(*rec);
        *rec = NULL;
        return rc;
    }
    if (n == 1 && (!pid || (p[0].pid == pid && image <= 1) || !p[0].pid)) {
        pick = 0;
    } else if (!pid) {
        char list[400];
        describe_pids(p, n, list, sizeof list);
        qerr(err, "the recording holds %zu processes: pid %s; choose one with --pid PID "
                  "(PID.K: its K-th program)", n, list);
        rc = CREC_ERR_ARG;
    } else {
        for (size_t i = 0; i < n; i++)
            if (p[i].pid == pid && (image ? p[i].image == image : 1))
                pick = i; /* without .K: the program it ran last */
        if (pick == SIZE_MAX)
        {
            if (image)
                qerr(err, "pid %u has no program %u", pid, image);
            else
                qerr(err, "no process with pid %u", pid);
            rc = CREC_ERR_ARG;
        }
    }
    if (rc == CREC_OK)
        rc = crec_reopen_process(rec, p[pick].proc, err);
    crec_processes_free(p, n);
    if (rc != CREC_OK) {
        crec_close(*rec);
        *rec = NULL;
    }
    return rc;
}

/* A query's WHEN that names a process, PID[.K]/WHEN (the process's own
 * time), into *pid and *image, the query without it into buf.
 * @return 1 if it names one, 0 if not, -1 if it is malformed. */
static int query_pid(const char *q, uint32_t *pid, uint32_t *image, char *buf, size_t size)
{
    const char *at = strrchr(q, '@'), *slash = at ? strchr(at, '/') : NULL;
    char num[40];
    uint64_t p = 0, k = 0;
    const char *dot;

    if (!slash)
        return 0;
    if ((size_t)(slash - at - 1) >= sizeof num || strlen(q) >= size)
        return -1;
    memcpy(num, at + 1, (size_t)(slash - at - 1));
    num[slash - at - 1] = '\0';
    dot = strchr(num, '.');
    if (dot)
        num[dot - num] = '\0';
    if (cli_parse_u64(num, &p) != 0 || p == 0 || p > UINT32_MAX ||
        (dot && (cli_parse_u64(dot + 1, &k) != 0 || k == 0 || k > UINT32_MAX)))
        return -1;
    *pid = (uint32_t)p;
    *image = (uint32_t)k;
    snprintf(buf, size, "%.*s%s", (int)(at + 1 - q), q, slash + 1);
    return 1;
}

int cli_query_run(const char *path, char **args, size_t n, uint64_t size, const char *fmt,
                  int json, int no_index, int all_values, uint32_t pid, uint32_t image)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    struct query *qs;
    char **bare;
    size_t failed, shown;
    int rc = EXIT_OK;

    /* PID/WHEN names the process of a query: every query the same one */
    bare = calloc(n ? n : 1, sizeof *bare);
    if (!bare)
        return cli_fail(EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
        uint32_t qp = 0, qk = 0;
        size_t len = strlen(args[i]) + 1;
        int named;
        if (!(bare[i] = malloc(len)))
            rc = cli_fail(EXIT_FAIL, "out of memory");
        else if ((named = query_pid(args[i], &qp, &qk, bare[i], len)) < 0)
            rc = cli_fail(EXIT_FAIL, "%s: malformed PID/WHEN (a pid, or PID.K, then '/')",
                          args[i]);
        else if (!named)
            memcpy(bare[i], args[i], len);
        else if (pid && (qp != pid || qk != image))
            rc = cli_fail(EXIT_FAIL, "%s: one process at a time (this names pid %u, another "
                          "query or --pid %u)", args[i], qp, pid);
        else
            pid = qp, image = qk;
    }
    if (rc == EXIT_OK &&
        cli_open_process(path, pid, image, no_index ? CREC_OPEN_NO_INDEX : 0, &rec, &err) !=
            CREC_OK)
        rc = cli_fail_file(path, &err);
    if (rc != EXIT_OK) {
        for (size_t i = 0; i < n; i++)
            free(bare[i]);
        free(bare);
        return rc;
    }
    qs = calloc(n, sizeof *qs);
    if (!qs) {
        crec_close(rec);
        return cli_fail(EXIT_FAIL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        qs[i].arg = args[i]; /* as the user wrote it, for the answer */
        qs[i].all = all_values;
    }
    /* answers up to the first failed query are printed; a bad query prints none */
    failed = n;
    for (size_t i = 0; i < n && failed == n; i++)
        if (query_parse(rec, bare[i], size, &qs[i], &err) != 0)
            failed = i;
    shown = 0;
    if (failed == n) {
        cli_show_progress(rec, path);
        failed = shown = query_run_all(rec, qs, n, no_index, &err);
    }
    if (json)
        printf("[");
    for (size_t i = 0; i < shown; i++)
        query_print(&qs[i], fmt, json, i == 0);
    if (json && failed < n)
        query_print_error(&qs[failed], err.msg, shown == 0);
    if (json)
        printf("\n]\n");
    if (failed < n) {
        fflush(stdout);
        rc = cli_fail(EXIT_FAIL, "%s: %s", qs[failed].arg, err.msg);
    }
    free(qs);
    cli_close_recording(rec);
    for (size_t i = 0; i < n; i++)
        free(bare[i]);
    free(bare);
    return rc;
}

int cmd_query(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'J'},
        {"no-index", no_argument, NULL, 'N'},
        {"all-values", no_argument, NULL, 'A'},
        {"pid", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *fmt = "hex";
    uint64_t size = 8;
    uint32_t pid = 0, image = 0;
    int json = 0, no_index = 0, all = 0, c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_option_u64("query", "size", optarg, 1, CLI_QUERY_MAX, &size) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'f':
            if (cli_check_format("query", optarg) != EXIT_OK)
                return EXIT_USAGE;
            fmt = optarg;
            break;
        case 'J': json = 1; break;
        case 'N': no_index = 1; break;
        case 'A': all = 1; break;
        case 'P':
            if (cli_parse_pid("query", optarg, &pid, &image) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'h': fputs(query_usage, stdout); return EXIT_OK;
        case ':': return cli_usage_error("query", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("query", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind < 2)
        return cli_usage_error("query", "needs a FILE and at least one WHAT@WHEN");
    return cli_query_run(argv[optind], argv + optind + 1, (size_t)(argc - optind - 1), size, fmt,
                         json, no_index, all, pid, image);
}
