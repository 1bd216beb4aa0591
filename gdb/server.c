/*
 * server.c - the debugger behind the gdb remote protocol: one recording,
 * a current time, and what gdb asks of it (docs/GDB.md has the table of
 * packets).
 *
 * The state gdb sees is the recording's state at the current time `t`.
 * Registers and memory come from the query API (crec_read_registers,
 * crec_read_memory), cached until t moves; breakpoints and watchpoints are
 * kept here and searched for in time by motion.c.  A recording is
 * read-only: writes of memory or registers are refused.  A byte the
 * recording never saw is never made up: gdb gets the bytes before it and
 * an error for it ("Cannot access memory").
 *
 * Threads: gdb's threads are the recording's (crec's numbers, as `crec
 * query 2:rax@T` takes them), in one process whose id is its first
 * thread's.  The list at a time holds the threads that have started and
 * not yet exited; the thread gdb looks at (Hg) has the registers it had
 * when it last ran; a stop names the thread that hit; a step is one
 * instruction of the stepped thread, the others running meanwhile, as
 * under rr.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gdb/gdb_int.h"

/* Memory is cached in aligned lines of this many bytes, per time. */
#define LINE 64
#define NLINES 256
/* Most thread ids in one qfThreadInfo/qsThreadInfo reply. */
#define THREADS_PER_REPLY 256

struct line {
    uint64_t addr;
    int state; /* 0 empty, 1 read, 2 never mapped */
    uint8_t b[LINE], k[LINE];
};

struct crec_gdb {
    int listen_fd;
    int port;
};

struct gdb_session {
    crec_recording *rec;
    const crec_gdb_options *o;
    gdb_conn *c;
    uint64_t t;             /* the current time */
    uint64_t end;           /* the recording's length */
    uint32_t tid;           /* the thread gdb looks at (Hg) */
    uint32_t ctid;          /* the thread gdb resumes (Hc; 0: any) */
    uint32_t pid;           /* the process gdb sees: its first thread's id */
    uint32_t end_tid;       /* the thread the program ended in */
    size_t nthreads;        /* the recording's threads, 1..nthreads */
    crec_thread_info *threads; /* what the recording says of each, on first need */
    size_t list_next;       /* qsThreadInfo: where the list goes on */
    int multiprocess, swbreak, hwbreak; /* what gdb said it understands */
    int avx;                /* the recording's CPUID showed AVX */
    int done;               /* detach, kill or a lost connection */
    gdb_stop last;          /* the last stop, for '?' */
    gdb_point *points;
    size_t npoints, cap;

    int regs_ok;            /* regs holds the registers of regs_tid at regs_t */
    uint64_t regs_t;
    uint32_t regs_tid;
    crec_regs regs;
    uint64_t lines_t;       /* the time of the cached lines */
    struct line lines[NLINES];

    char *xml;              /* target.xml */
    uint8_t *auxv;          /* the initial auxv, read on first need */
    size_t auxv_len;
    char exec_file[4096];   /* the program's path, "" until found */
    int end_signal;         /* gdb's number of the signal that ended the run, or 0 */
    gdb_memo *memo;         /* what motion.c learnt in earlier searches */
    gdb_window *win;        /* registers and writes around where gdb looks */
    int dir;                /* the way gdb last went: -1 backward, 1 forward */
};

/* ---- helpers --------------------------------------------------------------- */

static int reply(gdb_session *s, const char *text)
{
    if (gdb_conn_send(s->c, text) != 0)
        s->done = 1;
    return 0;
}

static int replyf(gdb_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int replyf(gdb_session *s, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return reply(s, buf);
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* What the recording says of every thread, read once.  @return 0, or -1. */
static int load_threads(gdb_session *s)
{
    crec_error err = {0};

    if (s->threads)
        return 0;
    if (!(s->threads = calloc(s->nthreads, sizeof *s->threads)))
        return -1;
    for (size_t i = 0; i < s->nthreads; i++)
        if (crec_thread_describe(s->rec, (uint32_t)i + 1, &s->threads[i], &err) != CREC_OK) {
            free(s->threads);
            s->threads = NULL;
            return -1;
        }
    return 0;
}

/* Is thread tid there at the current time: started, and not exited before
 * (at the instant of its exit it is still shown)? */
static int thread_alive(gdb_session *s, uint32_t tid)
{
    const crec_thread_info *ti;

    if (tid < 1 || tid > s->nthreads || load_threads(s) != 0)
        return tid == s->pid; /* knowing nothing more, the first thread */
    ti = &s->threads[tid - 1];
    return ti->start <= s->t && (s->t <= ti->end || !ti->exited);
}

/* "p1.1" or "1": a thread id as gdb writes them. */
static void thread_id(const gdb_session *s, uint32_t tid, char *out, size_t size)
{
    if (s->multiprocess)
        snprintf(out, size, "p%" PRIx32 ".%" PRIx32, s->pid, tid);
    else
        snprintf(out, size, "%" PRIx32, tid);
}

/* Parse a thread id ("p1.2", "p1.-1", "2", "-1", "0") at *p: *tid 0 for
 * any, UINT32_MAX for all.  @return 0, or -1 when malformed. */
static int parse_thread(const char **p, uint32_t *tid)
{
    const char *q = *p;
    uint64_t v;

    if (*q == 'p') {
        q++;
        if (q[0] == '-' && q[1] == '1')
            q += 2;
        else if (gdb_hex_u64(&q, &v) != 0)
            return -1;
        if (*q != '.') {
            *tid = UINT32_MAX;
            *p = q;
            return 0;
        }
        q++;
    }
    if (q[0] == '-' && q[1] == '1') {
        *tid = UINT32_MAX;
        *p = q + 2;
        return 0;
    }
    if (gdb_hex_u64(&q, &v) != 0 || v > UINT32_MAX)
        return -1;
    *tid = (uint32_t)v;
    *p = q;
    return 0;
}

/* A thread gdb may name (T, Hg, Hc): one of the recording's (any: 0, -1). */
static int thread_exists(gdb_session *s, uint32_t tid)
{
    if (tid == 0 || tid == UINT32_MAX)
        return 1;
    return tid <= s->nthreads;
}

/* Move to time t: what gdb sees changes, so the caches go. */
static void set_time(gdb_session *s, uint64_t t)
{
    s->t = t;
    s->regs_ok = 0;
}

/* The registers of the thread gdb looks at, at the current time: from the
 * stepping window, else the query API (its state when it last ran). */
static int regs_at_t(gdb_session *s, crec_regs *r, crec_error *err)
{
    if (!s->regs_ok || s->regs_t != s->t || s->regs_tid != s->tid) {
        if (gdb_window_regs(s->win, s->rec, s->t, s->tid, s->dir, &s->regs, err) != 0 &&
            (crec_seek(s->rec, s->t, err) != CREC_OK ||
             crec_read_thread_registers(s->rec, s->tid, &s->regs, err) != CREC_OK))
            return -1;
        s->regs_ok = 1;
        s->regs_t = s->t;
        s->regs_tid = s->tid;
    }
    *r = s->regs;
    return 0;
}

/* The cached line holding addr at the current time, read if needed. */
static struct line *line_at(gdb_session *s, uint64_t addr)
{
    uint64_t base = addr & ~(uint64_t)(LINE - 1);
    struct line *l = &s->lines[(base / LINE) % NLINES];
    crec_error err = {0};
    int src;

    if (s->lines_t != s->t) {
        for (size_t i = 0; i < NLINES; i++)
            s->lines[i].state = 0;
        s->lines_t = s->t;
    }
    if (l->state && l->addr == base)
        return l;
    l->addr = base;
    if (gdb_window_line(s->win, s->rec, s->t, base, l->b, l->k) == 0) {
        l->state = 1;
        return l;
    }
    if (crec_seek(s->rec, s->t, &err) != CREC_OK) {
        l->state = 0;
        return NULL;
    }
    if (crec_read_memory(s->rec, base, LINE, l->b, l->k, &src, &err) != CREC_OK) {
        if (err.code != CREC_ERR_ARG) { /* not "never mapped": don't remember it */
            l->state = 0;
            return NULL;
        }
        memset(l->k, 0, LINE);
        l->state = 2;
        return l;
    }
    l->state = 1;
    return l;
}

/* Up to len bytes at addr at the current time, stopping at the first byte
 * the recording does not know.  @return how many were read. */
static size_t read_mem(gdb_session *s, uint64_t addr, size_t len, uint8_t *out)
{
    size_t n = 0;

    while (n < len) {
        struct line *l = line_at(s, addr + n);
        if (!l)
            break;
        size_t off = (size_t)((addr + n) & (LINE - 1));
        while (off < LINE && n < len && l->k[off])
            out[n++] = l->b[off++];
        if (off < LINE && n < len)
            break; /* an unknown byte */
        if (addr + n < addr)
            break; /* wrapped around the address space */
    }
    return n;
}

/* ---- the program: auxv and its path ------------------------------------------ */

/* The value of NAME in the recorded program's initial environment (from
 * its stack at time 0: argc, argv[], NULL, envp[], NULL), or "". */
static void initial_env(gdb_session *s, const char *name, char *out, size_t size)
{
    crec_error err = {0};
    uint64_t saved = s->t, sp, v;
    size_t nlen = strlen(name);
    crec_regs r;
    uint8_t b[8];
    int nulls = 0;

    out[0] = 0;
    set_time(s, 0);
    if (regs_at_t(s, &r, &err) != 0)
        goto out;
    sp = r.gpr[CREC_RSP] + 8; /* past argc */
    for (int i = 0; i < 1 << 16 && nulls < 2; i++, sp += 8) {
        char e[256];
        size_t n;
        if (read_mem(s, sp, 8, b) != 8)
            break;
        memcpy(&v, b, 8);
        v = le64toh(v);
        if (v == 0) {
            nulls++;
            continue;
        }
        if (nulls == 0)
            continue; /* an argument */
        n = read_mem(s, v, sizeof e - 1, (uint8_t *)e);
        e[n] = 0;
        if (strncmp(e, name, nlen) == 0 && e[nlen] == '=') {
            snprintf(out, size, "%s", e + nlen + 1);
            break;
        }
    }
out:
    set_time(s, saved);
}

/* The auxv (crec_initial_auxv) and the program's path as gdb should open
 * it: absolute, made so from crec's directory when the file is there, else
 * from the recorded program's own PWD. */
static int load_program(gdb_session *s)
{
    crec_error err = {0};
    const char *p;

    if (s->auxv)
        return 0;
    if (crec_initial_auxv(s->rec, &s->auxv, &s->auxv_len, &err) != CREC_OK) {
        s->auxv = NULL;
        return -1;
    }
    p = crec_program_path(s->rec);
    if (p[0] == '/' || !p[0]) {
        snprintf(s->exec_file, sizeof s->exec_file, "%s", p);
    } else if (!realpath(p, s->exec_file)) {
        char pwd[2048];
        initial_env(s, "PWD", pwd, sizeof pwd);
        snprintf(s->exec_file, sizeof s->exec_file, "%s%s%s", pwd, pwd[0] ? "/" : "", p);
    }
    if (access(s->exec_file, F_OK) != 0)
        s->exec_file[0] = 0; /* gone: gdb is better told nothing than a wrong file */
    return 0;
}

/* How many threads are there now. */
static size_t alive_count(gdb_session *s)
{
    size_t n = 0;

    for (size_t i = 1; i <= s->nthreads; i++)
        n += thread_alive(s, (uint32_t)i);
    return n;
}

/* ---- stop replies ----------------------------------------------------------- */

/* gdb's number for a Linux signal (gdb's include/gdb/signals.def). */
static int gdb_signal(uint64_t sig)
{
    static const unsigned char map[32] = {
        0, 1, 2, 3, 4, 5, 6, 10, 8, 9, 30, 11, 31, 13, 14, 15,
        38, 20, 19, 17, 18, 21, 22, 16, 24, 25, 26, 27, 28, 23, 32, 12,
    };
    if (sig < 32)
        return map[sig];
    return sig <= 63 ? (int)sig + 12 : 143; /* realtime ones; 143: unknown */
}

static int send_stop(gdb_session *s, const gdb_stop *st)
{
    char buf[256], id[64];
    int sig = st->kind == GDB_STOP_INTERRUPT ? 2 : 5; /* gdb's SIGINT, SIGTRAP */
    int n;

    if (st->kind == GDB_STOP_END && s->end_signal)
        sig = s->end_signal; /* the run ends in a crash: show it, as it happened */
    s->last = *st;
    thread_id(s, st->tid, id, sizeof id);
    n = snprintf(buf, sizeof buf, "T%02xthread:%s;", sig, id);
    switch (st->kind) {
    case GDB_STOP_SWBREAK:
        if (s->swbreak)
            snprintf(buf + n, sizeof buf - (size_t)n, "swbreak:;");
        break;
    case GDB_STOP_HWBREAK:
        if (s->hwbreak)
            snprintf(buf + n, sizeof buf - (size_t)n, "hwbreak:;");
        break;
    case GDB_STOP_WATCH:
        snprintf(buf + n, sizeof buf - (size_t)n, "%swatch:%" PRIx64 ";",
                 st->watch_type == 3 ? "r" : st->watch_type == 4 ? "a" : "", st->watch_addr);
        break;
    case GDB_STOP_BEGIN:
        snprintf(buf + n, sizeof buf - (size_t)n, "replaylog:begin;");
        break;
    case GDB_STOP_END:
        if (!s->end_signal)
            snprintf(buf + n, sizeof buf - (size_t)n, "replaylog:end;");
        break;
    }
    return reply(s, buf);
}

static void stop_here(gdb_session *s, int kind, gdb_stop *st)
{
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->t = s->t;
    st->tid = s->tid ? s->tid : s->pid;
}

/* A stop gdb is told of names a thread that is there: where nothing hit,
 * the thread the program ended in at the end, the first at the start. */
static void stop_thread(gdb_session *s, gdb_stop *st)
{
    if (st->kind == GDB_STOP_END)
        st->tid = s->end_tid;
    else if (st->kind == GDB_STOP_BEGIN && st->t == 0)
        st->tid = s->pid;
    else if (!st->tid)
        st->tid = s->tid ? s->tid : s->pid;
    s->tid = st->tid; /* gdb switches to it */
}

/* ---- motion ----------------------------------------------------------------- */

static void search_init(gdb_session *s, gdb_search *q)
{
    q->rec = s->rec;
    q->points = s->points;
    q->npoints = s->npoints;
    q->conn = s->c;
    q->tid = s->tid ? s->tid : s->pid;
    q->memo = s->memo;
}

/* A motion failed: say why on gdb's console, then stop where we are. */
static int motion_failed(gdb_session *s, const crec_error *err)
{
    char msg[CREC_ERROR_MSG_MAX + 32], hex[2 * sizeof msg + 2];
    gdb_stop st;

    snprintf(msg, sizeof msg, "crec: %s\n", err->msg[0] ? err->msg : crec_strerror(err->code));
    hex[0] = 'O';
    gdb_hex_encode((const uint8_t *)msg, strlen(msg), hex + 1);
    reply(s, hex);
    stop_here(s, GDB_STOP_INTERRUPT, &st);
    return send_stop(s, &st);
}

/* One instruction of thread tid, forwards (the time after its next one) or
 * backwards (the time before its last one); the other threads' run
 * meanwhile.  Past its last, the end; before its first, a stop there. */
static int do_step(gdb_session *s, uint32_t tid, int backward)
{
    uint64_t k = crec_thread_count(s->rec, tid, s->t), t;
    gdb_stop st;

    s->dir = backward ? -1 : 1;
    s->tid = tid;
    /* a ring or --start-at recording begins at crec_start, not 0 */
    if (backward ? k == 0 || s->t <= crec_start(s->rec)
                 : crec_thread_insn_time(s->rec, tid, k, &t, NULL) != CREC_OK) {
        if (!backward)
            set_time(s, s->end);
        stop_here(s, backward ? GDB_STOP_BEGIN : GDB_STOP_END, &st);
        stop_thread(s, &st);
        return send_stop(s, &st);
    }
    if (backward && (crec_thread_insn_time(s->rec, tid, k - 1, &t, NULL) != CREC_OK ||
                     t < crec_start(s->rec))) {
        stop_here(s, GDB_STOP_BEGIN, &st);
        return send_stop(s, &st);
    }
    set_time(s, backward ? t : t + 1);
    /* a step onto the faulting instruction that ended the run shows the fault */
    stop_here(s, !backward && s->t == s->end && s->end_signal ? GDB_STOP_END : GDB_STOP_STEP,
              &st);
    return send_stop(s, &st);
}

/* The thread a step is for: the one gdb resumes (Hc), else the one it looks at. */
static uint32_t step_thread(const gdb_session *s)
{
    return s->ctid ? s->ctid : s->tid ? s->tid : s->pid;
}

static int do_continue(gdb_session *s, int backward)
{
    crec_error err = {0};
    gdb_search q;
    gdb_stop st;
    int rc;

    s->dir = backward ? -1 : 1;
    if (backward ? s->t <= crec_start(s->rec) : s->t >= s->end) {
        stop_here(s, backward ? GDB_STOP_BEGIN : GDB_STOP_END, &st);
        stop_thread(s, &st);
        return send_stop(s, &st);
    }
    search_init(s, &q);
    rc = backward ? gdb_backward(&q, s->t, &st, &err) : gdb_forward(&q, s->t, &st, &err);
    if (rc != CREC_OK)
        return motion_failed(s, &err);
    set_time(s, st.t);
    if (!gdb_conn_alive(s->c)) {
        s->done = 1;
        return 0;
    }
    stop_thread(s, &st);
    return send_stop(s, &st);
}

/* vCont;ACTION[:THREAD];...: a step of the thread an `s` names (of the
 * current one for an `s` without a thread), else a continue.  The threads
 * of a recording run as they ran: `c:THREAD` alone continues them all. */
static int do_vcont(gdb_session *s, const char *p)
{
    uint32_t step = 0;
    int cont = 0;

    while (*p == ';') {
        char a = *++p;
        uint32_t tid = UINT32_MAX;
        if (a != 'c' && a != 'C' && a != 's' && a != 'S')
            return reply(s, "E01");
        p++;
        if (a == 'C' || a == 'S') { /* a signal to deliver: a recording can't take one */
            uint64_t sig;
            if (gdb_hex_u64(&p, &sig) != 0)
                return reply(s, "E01");
        }
        if (*p == ':') {
            p++;
            if (parse_thread(&p, &tid) != 0)
                return reply(s, "E01");
        }
        if (*p && *p != ';')
            return reply(s, "E01");
        if ((a == 's' || a == 'S') && !step) {
            if (tid != UINT32_MAX && tid != 0 && !thread_exists(s, tid))
                return reply(s, "E01");
            step = tid == UINT32_MAX || tid == 0 ? (s->tid ? s->tid : s->pid) : tid;
        } else if (a == 'c' || a == 'C') {
            cont = 1;
        }
    }
    if (*p || (!step && !cont))
        return reply(s, "E01");
    return step ? do_step(s, step, 0) : do_continue(s, 0);
}

/* ---- breakpoints and watchpoints --------------------------------------------- */

static int do_point(gdb_session *s, int insert, const char *p)
{
    uint64_t type, addr, len;

    if (gdb_hex_u64(&p, &type) != 0 || *p++ != ',' || gdb_hex_u64(&p, &addr) != 0 ||
        *p++ != ',' || gdb_hex_u64(&p, &len) != 0)
        return reply(s, "E01");
    if (type > 4)
        return reply(s, ""); /* a kind we don't know: "not supported" */
    if (*p && *p != ';')
        return reply(s, "E01");
    if (type >= 2 && (len == 0 || len > 4096 || addr + len < addr))
        return reply(s, "E16"); /* EINVAL */
    for (size_t i = 0; i < s->npoints; i++) {
        gdb_point *g = &s->points[i];
        if (g->type == (int)type && g->addr == addr && (type < 2 || g->len == len)) {
            if (!insert)
                s->points[i] = s->points[--s->npoints];
            return reply(s, "OK"); /* inserting twice is once, as gdbserver does */
        }
    }
    if (!insert)
        return reply(s, "OK");
    if (s->npoints == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        gdb_point *np = cap > 65536 ? NULL : realloc(s->points, cap * sizeof *np);
        if (!np)
            return reply(s, "E0c"); /* ENOMEM */
        s->points = np;
        s->cap = cap;
    }
    s->points[s->npoints++] = (gdb_point){(int)type, addr, len};
    return reply(s, "OK");
}

/* ---- registers and memory ------------------------------------------------------ */

static int do_read_regs(gdb_session *s)
{
    char buf[2 * GDB_NREGS_AVX * GDB_REG_MAX + 1];
    int nregs = s->avx ? GDB_NREGS_AVX : GDB_NREGS;
    crec_error err = {0};
    crec_regs r;
    size_t o = 0;

    if (regs_at_t(s, &r, &err) != 0)
        return reply(s, "E01");
    for (int i = 0; i < nregs; i++) {
        uint8_t v[GDB_REG_MAX];
        size_t n = gdb_reg_size(i, s->avx);
        if (gdb_reg_value(&r, i, s->avx, v) == 1)
            gdb_hex_encode(v, n, buf + o);
        else
            memset(buf + o, 'x', 2 * n);
        o += 2 * n;
    }
    buf[o] = 0;
    return reply(s, buf);
}

static int do_read_reg(gdb_session *s, const char *p)
{
    char buf[2 * GDB_REG_MAX + 1];
    uint8_t v[GDB_REG_MAX];
    crec_error err = {0};
    crec_regs r;
    uint64_t n;
    int got;

    if (gdb_hex_u64(&p, &n) != 0 || *p || n >= GDB_NREGS_AVX)
        return reply(s, "E01");
    if (gdb_reg_size((int)n, s->avx) == 0)
        return reply(s, "E01");
    if (regs_at_t(s, &r, &err) != 0)
        return reply(s, "E01");
    got = gdb_reg_value(&r, (int)n, s->avx, v);
    if (got == 1)
        gdb_hex_encode(v, gdb_reg_size((int)n, s->avx), buf);
    else
        memset(buf, 'x', 2 * gdb_reg_size((int)n, s->avx)), buf[2 * gdb_reg_size((int)n, s->avx)] = 0;
    return reply(s, buf);
}

/* m ADDR,LEN (hex reply) and x ADDR,LEN (binary reply). */
static int do_read_mem(gdb_session *s, const char *p, int binary)
{
    static uint8_t b[GDB_PACKET_SIZE];
    static char hex[GDB_PACKET_SIZE + 1];
    uint64_t addr, len;
    size_t n;

    if (gdb_hex_u64(&p, &addr) != 0 || *p++ != ',' || gdb_hex_u64(&p, &len) != 0 || *p)
        return reply(s, "E01");
    if (len == 0)
        return binary ? reply(s, "b") : reply(s, "");
    /* at most what one reply holds; gdb asks again for the rest */
    if (len > (GDB_PACKET_SIZE - 16) / 2)
        len = (GDB_PACKET_SIZE - 16) / 2;
    n = read_mem(s, addr, (size_t)len, b);
    if (n == 0)
        return reply(s, "E0e"); /* EFAULT: gdb says "Cannot access memory" */
    if (binary) {
        if (gdb_conn_send_binary(s->c, 'b', b, n) != 0)
            s->done = 1;
        return 0;
    }
    gdb_hex_encode(b, n, hex);
    return reply(s, hex);
}

/* ---- qXfer ------------------------------------------------------------------------ */

/* Send [off, off+len) of an object: 'm' and a piece, or 'l' and the last. */
static int xfer_reply(gdb_session *s, const uint8_t *data, size_t size, uint64_t off, uint64_t len)
{
    size_t n;

    if (off > size)
        return reply(s, "E16");
    if (len > GDB_PACKET_SIZE / 2)
        len = GDB_PACKET_SIZE / 2; /* escapes may double it */
    n = size - (size_t)off < len ? size - (size_t)off : (size_t)len;
    if (gdb_conn_send_binary(s->c, (size_t)off + n < size ? 'm' : 'l', data + off, n) != 0)
        s->done = 1;
    return 0;
}

/* qXfer:OBJECT:read:ANNEX:OFF,LEN */
static int do_xfer(gdb_session *s, const char *p)
{
    char object[32], annex[256];
    const char *colon;
    uint64_t off, len;
    size_t n;

    colon = strchr(p, ':');
    if (!colon || (size_t)(colon - p) >= sizeof object)
        return reply(s, "");
    memcpy(object, p, (size_t)(colon - p));
    object[colon - p] = 0;
    p = colon + 1;
    if (!starts(p, "read:"))
        return reply(s, ""); /* writes: not supported */
    p += 5;
    colon = strchr(p, ':');
    if (!colon || (size_t)(colon - p) >= sizeof annex)
        return reply(s, "E01");
    n = (size_t)(colon - p);
    memcpy(annex, p, n);
    annex[n] = 0;
    p = colon + 1;
    if (gdb_hex_u64(&p, &off) != 0 || *p++ != ',' || gdb_hex_u64(&p, &len) != 0 || *p)
        return reply(s, "E01");
    if (strcmp(object, "features") == 0) {
        if (strcmp(annex, "target.xml") != 0)
            return reply(s, "E00");
        return xfer_reply(s, (const uint8_t *)s->xml, strlen(s->xml), off, len);
    }
    if (strcmp(object, "auxv") == 0) {
        if (annex[0])
            return reply(s, "E00");
        if (load_program(s) != 0)
            return reply(s, "E01");
        return xfer_reply(s, s->auxv, s->auxv_len, off, len);
    }
    if (strcmp(object, "exec-file") == 0) {
        load_program(s);
        if (!s->exec_file[0])
            return reply(s, "E01");
        return xfer_reply(s, (const uint8_t *)s->exec_file, strlen(s->exec_file), off, len);
    }
    return reply(s, "");
}

/* ---- monitor commands (qRcmd) -------------------------------------------------- */

/* Text for gdb's console as a qRcmd answer: hex of the text. */
static int rcmd_text(gdb_session *s, const char *text)
{
    size_t n = strlen(text);
    char *hex = malloc(2 * n + 2);

    if (!hex)
        return reply(s, "E0c");
    gdb_hex_encode((const uint8_t *)text, n, hex);
    reply(s, hex);
    free(hex);
    return 0;
}

/* An error of a monitor command: its message on the console, then an error. */
static int rcmd_error(gdb_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int rcmd_error(gdb_session *s, const char *fmt, ...)
{
    char msg[CREC_ERROR_MSG_MAX + 64], hex[2 * sizeof msg + 2];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    strcat(msg, "\n");
    hex[0] = 'O';
    gdb_hex_encode((const uint8_t *)msg, strlen(msg), hex + 1);
    reply(s, hex);
    return reply(s, "E01");
}

static const char monitor_help[] =
    "crec monitor commands:\n"
    "  monitor when              the current instruction count\n"
    "  monitor seek T            go to time T: a count, end, N%, TID:STEP or\n"
    "                            syscall:N (as crec query takes)\n"
    "  monitor info recording    the recording, its length and where we are\n"
    "  monitor help              this list\n";

static int do_rcmd(gdb_session *s, const char *p)
{
    char cmd[512], text[2 * 4096 + 512];
    size_t n = strlen(p) / 2;
    crec_error err = {0};
    crec_regs r;

    if (strlen(p) % 2 || n >= sizeof cmd || gdb_hex_decode(p, n, (uint8_t *)cmd) != 0)
        return reply(s, "E01");
    cmd[n] = 0;
    while (n > 0 && (cmd[n - 1] == ' ' || cmd[n - 1] == '\n'))
        cmd[--n] = 0;
    char *arg = cmd + strspn(cmd, " ");
    if (strcmp(arg, "when") == 0) {
        snprintf(text, sizeof text, "Current instruction count: %" PRIu64 " (of %" PRIu64 ")\n",
                 s->t, s->end);
        return rcmd_text(s, text);
    }
    if (strcmp(arg, "help") == 0 || !*arg)
        return rcmd_text(s, monitor_help);
    if (starts(arg, "seek ") || strcmp(arg, "seek") == 0) {
        const char *when = arg + 4 + strspn(arg + 4, " ");
        uint64_t t;
        int rc;
        if (!*when)
            return rcmd_error(s, "crec: monitor seek needs a time (monitor help)");
        if (s->o && s->o->parse_time) {
            rc = s->o->parse_time(s->rec, when, &t, &err);
        } else {
            char *e;
            errno = 0;
            t = strtoull(when, &e, 0);
            rc = *e || errno || *when == '-' ? -1 : 0;
            if (rc)
                snprintf(err.msg, sizeof err.msg, "malformed time '%s'", when);
        }
        if (rc != 0)
            return rcmd_error(s, "crec: %s", err.msg);
        if (t > s->end)
            return rcmd_error(s, "crec: time %" PRIu64 " is past the end of the recording "
                              "(%" PRIu64 " instructions)", t, s->end);
        set_time(s, t);
        s->tid = crec_thread_at(s->rec, t); /* the thread that runs there */
        stop_here(s, GDB_STOP_STEP, &s->last);
        if (regs_at_t(s, &r, &err) != 0)
            return rcmd_error(s, "crec: %s", err.msg);
        snprintf(text, sizeof text, "At instruction %" PRIu64 " (rip 0x%" PRIx64 ")\n", t,
                 r.rip);
        return rcmd_text(s, text);
    }
    if (strcmp(arg, "info recording") == 0) {
        uint64_t ib = 0, tb = 0;
        int built = 0;
        load_program(s);
        crec_index_info(s->rec, &ib, &tb, &built, &err);
        snprintf(text, sizeof text,
                 "Recording:    %s (%" PRIu64 " bytes, index %" PRIu64 " bytes)\n"
                 "Program:      %s\n"
                 "Instructions: %" PRIu64 "\n"
                 "Threads:      %zu (%zu there now; gdb's thread %" PRIu32 ".N is crec's "
                 "thread N)\n"
                 "Now at:       instruction %" PRIu64 ", thread %" PRIu32 "\n",
                 s->o && s->o->path ? s->o->path : "?", tb, ib,
                 s->exec_file[0] ? s->exec_file : "(unknown)", s->end, s->nthreads,
                 alive_count(s), s->pid, s->t, s->tid);
        return rcmd_text(s, text);
    }
    return rcmd_error(s, "crec: unknown monitor command '%s' (monitor help lists them)", arg);
}

/* ---- qSupported and the rest ---------------------------------------------------- */

static int do_supported(gdb_session *s, const char *p)
{
    /* what gdb offers decides what we may send */
    s->multiprocess = strstr(p, "multiprocess+") != NULL;
    s->swbreak = strstr(p, "swbreak+") != NULL;
    s->hwbreak = strstr(p, "hwbreak+") != NULL;
    return replyf(s, "PacketSize=%x;QStartNoAckMode+;qXfer:features:read+;qXfer:auxv:read+;"
                     "qXfer:exec-file:read+;%s%s%svContSupported+;ReverseContinue+;ReverseStep+",
                  GDB_PACKET_SIZE, s->multiprocess ? "multiprocess+;" : "",
                  s->swbreak ? "swbreak+;" : "", s->hwbreak ? "hwbreak+;" : "");
}

/* qfThreadInfo / qsThreadInfo: the threads there now, some at a time. */
static int thread_list(gdb_session *s)
{
    char buf[THREADS_PER_REPLY * 24 + 2] = "m", id[64];
    size_t n = 0, at = 1;

    while (s->list_next <= s->nthreads && n < THREADS_PER_REPLY) {
        uint32_t tid = (uint32_t)s->list_next++;
        if (!thread_alive(s, tid))
            continue;
        thread_id(s, tid, id, sizeof id);
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", n ? "," : "", id);
        n++;
    }
    return reply(s, n ? buf : "l");
}

/* qThreadExtraInfo: what gdb shows beside a thread in `info threads`. */
static int thread_extra(gdb_session *s, uint32_t tid)
{
    char text[160], hex[2 * sizeof text + 2];
    const crec_thread_info *ti;

    if (tid == 0 || tid == UINT32_MAX)
        tid = s->tid;
    if (tid > s->nthreads || load_threads(s) != 0)
        return reply(s, "E01");
    ti = &s->threads[tid - 1];
    if (s->t < ti->start)
        snprintf(text, sizeof text, "not started (at instruction %" PRIu64 ")", ti->start);
    else if (ti->guest_tid)
        snprintf(text, sizeof text, "tid %" PRIu32 ", its instruction %" PRIu64 " of %" PRIu64,
                 ti->guest_tid, crec_thread_count(s->rec, tid, s->t), ti->instructions);
    else
        snprintf(text, sizeof text, "its instruction %" PRIu64 " of %" PRIu64,
                 crec_thread_count(s->rec, tid, s->t), ti->instructions);
    gdb_hex_encode((const uint8_t *)text, strlen(text), hex);
    return reply(s, hex);
}

static int do_query(gdb_session *s, const char *p)
{
    char id[64];

    if (starts(p, "qSupported"))
        return do_supported(s, p);
    if (strcmp(p, "qAttached") == 0 || starts(p, "qAttached:"))
        return reply(s, "1"); /* "detach" rather than "kill" when gdb quits */
    if (strcmp(p, "qC") == 0) {
        thread_id(s, s->tid ? s->tid : s->pid, id, sizeof id);
        return replyf(s, "QC%s", id);
    }
    if (strcmp(p, "qfThreadInfo") == 0) {
        s->list_next = 1;
        return thread_list(s);
    }
    if (strcmp(p, "qsThreadInfo") == 0)
        return thread_list(s);
    if (starts(p, "qThreadExtraInfo,")) {
        const char *q = p + 17;
        uint32_t tid;
        if (parse_thread(&q, &tid) != 0 || *q)
            return reply(s, "E01");
        return thread_extra(s, tid);
    }
    if (starts(p, "qXfer:"))
        return do_xfer(s, p + 6);
    if (starts(p, "qRcmd,"))
        return do_rcmd(s, p + 6);
    if (starts(p, "qSymbol:"))
        return reply(s, "OK"); /* no symbols wanted */
    return reply(s, ""); /* qTStatus, qOffsets, ...: not supported */
}

static int do_set_thread(gdb_session *s, const char *p)
{
    uint32_t tid;
    char which = *p++;

    if ((which != 'g' && which != 'c') || parse_thread(&p, &tid) != 0 || *p)
        return reply(s, "E01");
    if (!thread_exists(s, tid))
        return reply(s, "E01");
    if (which == 'c')
        s->ctid = tid == UINT32_MAX ? 0 : tid;
    else if (tid != 0 && tid != UINT32_MAX)
        s->tid = tid;
    return reply(s, "OK");
}

static int do_v(gdb_session *s, const char *p)
{
    if (strcmp(p, "vCont?") == 0)
        return reply(s, "vCont;c;C;s;S");
    if (starts(p, "vCont;"))
        return do_vcont(s, p + 5);
    if (starts(p, "vKill"))
        return reply(s, "OK"); /* a recording can't die: "run" brings it back to 0 */
    if (starts(p, "vRun")) {
        gdb_stop st;
        set_time(s, 0); /* gdb's "run": the start of the recording */
        stop_here(s, GDB_STOP_STEP, &st);
        return send_stop(s, &st);
    }
    if (starts(p, "vAttach"))
        return reply(s, "E01");
    return reply(s, ""); /* vMustReplyEmpty, vFile, ...: gdb reads files itself */
}

/* One packet from gdb. */
static int dispatch(gdb_session *s, const char *p, size_t len)
{
    if (strlen(p) != len && p[0] != 'X')
        return reply(s, "E01"); /* a NUL inside a text packet */
    switch (p[0]) {
    case '?':
        return send_stop(s, &s->last);
    case '!':
        return reply(s, "OK");
    case 'q':
        return do_query(s, p);
    case 'Q':
        if (strcmp(p, "QStartNoAckMode") == 0) {
            reply(s, "OK");
            gdb_conn_no_ack(s->c);
            return 0;
        }
        return reply(s, "");
    case 'H':
        return do_set_thread(s, p + 1);
    case 'T': {
        uint32_t tid;
        const char *q = p + 1;
        if (parse_thread(&q, &tid) != 0 || *q)
            return reply(s, "E01");
        if (tid == 0 || tid == UINT32_MAX)
            return reply(s, "OK");
        return reply(s, thread_alive(s, tid) ? "OK" : "E01");
    }
    case 'g':
        return p[1] ? reply(s, "E01") : do_read_regs(s);
    case 'p':
        return do_read_reg(s, p + 1);
    case 'm':
        return do_read_mem(s, p + 1, 0);
    case 'x':
        return do_read_mem(s, p + 1, 1);
    case 'G':
    case 'P':
    case 'M':
    case 'X':
        return reply(s, "E01"); /* a recording is read-only */
    case 'Z':
        return do_point(s, 1, p + 1);
    case 'z':
        return do_point(s, 0, p + 1);
    case 'c':
    case 'C':
    case 's':
    case 'S': {
        /* c[ADDR], Csig[;ADDR]: resuming elsewhere would change the past */
        const char *q = p + 1;
        uint64_t sig;
        if ((p[0] == 'C' || p[0] == 'S') && (gdb_hex_u64(&q, &sig) != 0))
            return reply(s, "E01");
        if (*q)
            return reply(s, "E01");
        return p[0] == 'c' || p[0] == 'C' ? do_continue(s, 0) : do_step(s, step_thread(s), 0);
    }
    case 'b':
        if (strcmp(p, "bc") == 0)
            return do_continue(s, 1);
        if (strcmp(p, "bs") == 0)
            return do_step(s, step_thread(s), 1);
        return reply(s, "");
    case 'v':
        return do_v(s, p);
    case 'D':
        reply(s, "OK");
        s->done = 1;
        return 0;
    case 'k':
        s->done = 1; /* no reply: gdb closes the connection */
        return 0;
    default:
        return reply(s, "");
    }
}

/* ---- the public API -------------------------------------------------------------- */

int crec_gdb_listen(int port, crec_gdb **out, crec_error *err)
{
    struct sockaddr_in a = {0};
    socklen_t alen = sizeof a;
    crec_gdb *g;
    int fd, one = 1;

    *out = NULL;
    if (port < 0 || port > 65535) {
        err->code = CREC_ERR_ARG;
        snprintf(err->msg, sizeof err->msg, "bad port %d (0 to 65535)", port);
        return CREC_ERR_ARG;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* never reachable from elsewhere */
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
        goto fail;
    g = calloc(1, sizeof *g);
    if (!g) {
        close(fd);
        err->code = CREC_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return CREC_ERR_NOMEM;
    }
    g->listen_fd = fd;
    g->port = ntohs(a.sin_port);
    *out = g;
    return CREC_OK;
fail:
    err->code = CREC_ERR_IO;
    snprintf(err->msg, sizeof err->msg, "can't listen on 127.0.0.1:%d: %s", port,
             strerror(errno));
    if (fd >= 0)
        close(fd);
    return CREC_ERR_IO;
}

int crec_gdb_port(const crec_gdb *g)
{
    return g->port;
}

void crec_gdb_close(crec_gdb *g)
{
    if (!g)
        return;
    close(g->listen_fd);
    free(g);
}

/* Wait for gdb to connect, asking o->still_waiting every 100 ms. */
static int accept_gdb(crec_gdb *g, const crec_gdb_options *o, int *fd, crec_error *err)
{
    for (;;) {
        struct pollfd pfd = {g->listen_fd, POLLIN, 0};
        int pr = poll(&pfd, 1, 100);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr > 0) {
            *fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (*fd >= 0)
                return CREC_OK;
            if (errno != EINTR && errno != ECONNABORTED)
                break;
        }
        if (o && o->still_waiting && !o->still_waiting(o->ctx)) {
            err->code = CREC_ERR_IO;
            snprintf(err->msg, sizeof err->msg, "gdb did not connect");
            return CREC_ERR_IO;
        }
    }
    err->code = CREC_ERR_IO;
    snprintf(err->msg, sizeof err->msg, "accepting gdb's connection: %s", strerror(errno));
    return CREC_ERR_IO;
}

/* The recording's CPUID showed AVX (with OSXSAVE): leaf 1, ECX bits 27, 28. */
static int recorded_avx(crec_recording *rec)
{
    uint32_t r[4];

    if (crec_recorded_cpuid(rec, 1, 0, r) != CREC_OK)
        return 0;
    return (r[2] & (3u << 27)) == (3u << 27);
}

gdb_session *gdb_session_new(crec_recording *rec, gdb_conn *c, const crec_gdb_options *o)
{
    gdb_session *s = calloc(1, sizeof *s);
    crec_error err = {0};
    crec_end ending;

    if (!s)
        return NULL;
    s->rec = rec;
    s->c = c;
    s->o = o;
    s->end = crec_length(rec);
    s->t = crec_start(rec); /* a ring or --start-at recording starts later than 0 */
    s->pid = 1; /* the recording's threads are numbered from 1 */
    s->tid = s->pid;
    s->nthreads = crec_threads(rec);
    s->end_tid = crec_thread_at(rec, s->end);
    s->avx = recorded_avx(rec);
    if (crec_ending(rec, &ending, &err) == CREC_OK && ending.how == 1)
        s->end_signal = gdb_signal(ending.value);
    s->lines_t = UINT64_MAX;
    s->xml = gdb_tdesc_xml(s->avx);
    s->memo = gdb_memo_new(s->end, 0);
    s->win = gdb_window_new();
    s->dir = 1;
    stop_here(s, GDB_STOP_STEP, &s->last);
    if (!s->xml || !s->memo || !s->win) {
        gdb_session_free(s);
        return NULL;
    }
    return s;
}

void gdb_session_free(gdb_session *s)
{
    if (!s)
        return;
    free(s->xml);
    free(s->auxv);
    free(s->points);
    free(s->threads);
    gdb_memo_free(s->memo);
    gdb_window_free(s->win);
    free(s);
}

int gdb_session_packet(gdb_session *s, const char *body, size_t len)
{
    if (!s->done)
        dispatch(s, body, len);
    return s->done || !gdb_conn_alive(s->c);
}

int crec_gdb_serve(crec_gdb *g, crec_recording *rec, const crec_gdb_options *o,
                   crec_error *err)
{
    gdb_session *s = NULL;
    gdb_conn *c = NULL;
    int fd = -1, rc;

    rc = accept_gdb(g, o, &fd, err);
    if (rc != CREC_OK)
        return rc;
    c = gdb_conn_new(fd, o ? o->log : NULL);
    s = c ? gdb_session_new(rec, c, o) : NULL;
    if (!s) {
        gdb_conn_free(c);
        err->code = CREC_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return CREC_ERR_NOMEM;
    }
    for (;;) {
        const char *body;
        size_t len;
        int r = gdb_conn_recv(c, &body, &len);
        if (r <= 0)
            break; /* gdb went away: that is how a session ends */
        if (r == 2)
            continue; /* a ^C that came after the stop it asked for */
        if (gdb_session_packet(s, body, len))
            break;
    }
    gdb_session_free(s);
    gdb_conn_free(c);
    return CREC_OK;
}
