/*
 * test_exec.c - the execution API (crec_exec_run and friends): what a run
 * reports equals what stepping with crec_seek and reading with the query
 * API gives, and a callback's stop lands where crec.h says.
 *
 * On traces-sample/readfile.crec (98046 instructions, dynamic, reads a
 * file), copied to a temporary directory so that the index it builds is
 * not left in the samples.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crec.h"

static char tmpdir[64], path[128];
static crec_recording *rec;

/* Open a copy of traces-sample/NAME in a temporary directory, so that the
 * index it builds is not left in the samples. */
static void open_sample(const char *name, crec_recording **out)
{
    char cmd[300];
    crec_error err = {0};

    strcpy(tmpdir, "/tmp/crec-exec-XXXXXX");
    cr_assert(mkdtemp(tmpdir) != NULL);
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    snprintf(cmd, sizeof cmd, "cp traces-sample/%s %s", name, path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(crec_open(path, 0, out, &err), CREC_OK, "%s", err.msg);
}

static void close_sample(crec_recording **r)
{
    char cmd[300];

    crec_close(*r);
    *r = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static void setup(void)
{
    open_sample("readfile.crec", &rec);
}

static void teardown(void)
{
    close_sample(&rec);
}

TestSuite(exec, .init = setup, .fini = teardown);

/* ---- every instruction ------------------------------------------------------ */

#define NSTEP 40

struct steps {
    uint64_t from, n;
    uint64_t t[NSTEP], rip[NSTEP];
    crec_regs regs[NSTEP];
    uint8_t stack[NSTEP][32], known[NSTEP][32];
    int read_rc[NSTEP];
};

static int on_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct steps *s = ctx;
    crec_error err = {0};

    cr_assert_eq(tid, 1);
    cr_assert_lt(s->n, NSTEP, "an instruction past `to` was reported (t %lu)", (unsigned long)t);
    s->t[s->n] = t;
    s->rip[s->n] = rip;
    cr_assert_eq(crec_exec_regs(x, &s->regs[s->n], &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_exec_reg(x, CREC_RSP), s->regs[s->n].gpr[CREC_RSP]);
    s->read_rc[s->n] = crec_exec_read(x, s->regs[s->n].gpr[CREC_RSP], 32, s->stack[s->n],
                                      s->known[s->n], &err);
    s->n++;
    return 0;
}

static void check_steps(uint64_t from, unsigned flags)
{
    struct steps s = {.from = from};
    crec_observer obs = {.ctx = &s, .flags = flags, .insn = on_insn};
    crec_error err = {0};
    uint64_t stopped = 0;

    cr_assert_eq(crec_exec_run(rec, from, from + NSTEP, &obs, &stopped, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_eq(stopped, from + NSTEP);
    cr_assert_eq(s.n, NSTEP);
    for (uint64_t i = 0; i < NSTEP; i++) {
        crec_regs want;
        uint8_t b[32], k[32];
        cr_assert_eq(s.t[i], from + i);
        cr_assert_eq(crec_seek(rec, from + i, &err), CREC_OK);
        cr_assert_eq(crec_read_registers(rec, &want, &err), CREC_OK, "%s", err.msg);
        cr_assert_eq(s.rip[i], want.rip, "rip at %lu", (unsigned long)(from + i));
        cr_assert_eq(s.regs[i].rip, want.rip);
        cr_assert_eq(memcmp(s.regs[i].gpr, want.gpr, sizeof want.gpr), 0, "gprs at %lu",
                     (unsigned long)(from + i));
        cr_assert_eq(s.regs[i].rflags, want.rflags, "rflags at %lu", (unsigned long)(from + i));
        cr_assert_eq(s.read_rc[i], CREC_OK);
        cr_assert_eq(crec_read_memory(rec, want.gpr[CREC_RSP], 32, b, k, NULL, &err), CREC_OK);
        cr_assert_eq(memcmp(k, s.known[i], 32), 0, "known stack bytes at %lu",
                     (unsigned long)(from + i));
        for (int j = 0; j < 32; j++)
            if (k[j])
                cr_assert_eq(b[j], s.stack[i][j], "stack byte %d at %lu", j,
                             (unsigned long)(from + i));
    }
}

Test(exec, run_equals_stepping_from_a_key_frame)
{
    check_steps(20000, CREC_EXEC_READS_MEMORY);
}

Test(exec, run_equals_stepping_mid_segment)
{
    check_steps(53001, CREC_EXEC_READS_MEMORY);
}

Test(exec, reads_without_tracking_equal_too)
{
    check_steps(71234, 0);
}

/* ---- blocks ---------------------------------------------------------------- */

struct blocks {
    uint64_t next, total;
};

static int on_block(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr,
                    uint32_t n)
{
    struct blocks *b = ctx;

    (void)tid;
    cr_assert_eq(t, b->next, "blocks must follow each other: %lu after %lu", (unsigned long)t,
                 (unsigned long)b->next);
    cr_assert_eq(crec_exec_reg(x, CREC_REG_RIP), addr);
    b->next = t + n;
    b->total += n;
    return 0;
}

Test(exec, blocks_cover_every_instruction_once)
{
    struct blocks b = {.next = 1000};
    crec_observer obs = {.ctx = &b, .block = on_block};
    crec_error err = {0};
    uint64_t end = crec_length(rec), stopped;

    cr_assert_eq(crec_exec_run(rec, 1000, end, &obs, &stopped, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(stopped, end);
    cr_assert_eq(b.total, end - 1000);
    cr_assert_eq(b.next, end);
}

/* ---- stops ----------------------------------------------------------------- */

struct stopper {
    uint64_t at;      /* stop at the first report at or after this time */
    uint64_t seen_t;  /* what it stopped on */
    int calls_after;  /* callbacks after the stop (must stay 0) */
    int stopped;
};

static int stop_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct stopper *s = ctx;

    (void)x, (void)tid, (void)rip;
    if (s->stopped)
        s->calls_after++;
    if (t >= s->at && !s->stopped) {
        s->stopped = 1;
        s->seen_t = t;
        return 1;
    }
    return 0;
}

Test(exec, insn_stop_is_before_the_instruction)
{
    struct stopper s = {.at = 30007};
    crec_observer obs = {.ctx = &s, .insn = stop_insn};
    crec_error err = {0};
    uint64_t stopped = 0;

    cr_assert_eq(crec_exec_run(rec, 30000, 40000, &obs, &stopped, &err), CREC_OK);
    cr_assert_eq(s.seen_t, 30007);
    cr_assert_eq(stopped, 30007);
    cr_assert_eq(s.calls_after, 0);
}

static int stop_access(void *ctx, crec_exec *x, const crec_access *a)
{
    struct stopper *s = ctx;

    (void)x;
    if (s->stopped)
        s->calls_after++;
    if (a->kind == CREC_ACCESS_WRITE && a->t >= s->at && !s->stopped) {
        s->stopped = 1;
        s->seen_t = a->t;
        return 1;
    }
    return 0;
}

Test(exec, access_stop_is_after_the_instruction)
{
    struct stopper s = {.at = 45000};
    crec_observer obs = {.ctx = &s, .access = stop_access};
    crec_error err = {0};
    uint64_t stopped = 0;

    cr_assert_eq(crec_exec_run(rec, 44000, crec_length(rec), &obs, &stopped, &err), CREC_OK);
    cr_assert(s.stopped);
    cr_assert_eq(stopped, s.seen_t + 1);
    cr_assert_eq(s.calls_after, 0);
}

/* A run that a callback stops between two restart points of the index
 * ends there, with what it saw: a run goes on point by point (each gives
 * it its seed), and one stopped short of the next point is not a replay
 * that diverged (`crec find` on a recording with points after its hit). */
Test(exec, stops_between_restart_points)
{
    struct stopper si = {.at = 30507}, sa = {.at = 45500};
    crec_observer oi = {.ctx = &si, .insn = stop_insn}, oa = {.ctx = &sa, .access = stop_access};
    crec_keyframes_result kr;
    crec_error err = {0};
    uint64_t end = crec_length(rec), stopped = 0;

    crec_close(rec);
    rec = NULL;
    cr_assert_eq(crec_keyframes(path, 0, end, 1000, NULL, NULL, &kr, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_gt(kr.all_points, 50);
    cr_assert_eq(crec_open(path, 0, &rec, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_exec_run(rec, 28000, end, &oi, &stopped, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(si.seen_t, 30507);
    cr_assert_eq(stopped, 30507);
    cr_assert_eq(si.calls_after, 0);
    cr_assert_eq(crec_exec_run(rec, 43000, end, &oa, &stopped, &err), CREC_OK, "%s", err.msg);
    cr_assert(sa.stopped);
    cr_assert_eq(stopped, sa.seen_t + 1);
    cr_assert_eq(sa.calls_after, 0);
}

/* ---- breakpoints: insn at chosen addresses ------------------------------------ */

struct hits {
    uint64_t want_rip;
    uint64_t t[4096];
    size_t n;
};

static int on_every(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct hits *h = ctx;

    (void)x, (void)tid;
    if (rip == h->want_rip && h->n < 4096)
        h->t[h->n++] = t;
    return 0;
}

static int on_bp(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct hits *h = ctx;

    (void)tid;
    cr_assert_eq(rip, h->want_rip);
    cr_assert_eq(crec_exec_reg(x, CREC_REG_RIP), rip);
    cr_assert_lt(h->n, 4096);
    h->t[h->n++] = t;
    return 0;
}

Test(exec, breakpoints_hit_where_every_instruction_says)
{
    static struct hits all, bp;
    crec_error err = {0};
    uint64_t addr;

    cr_assert_eq(crec_lookup_symbol(rec, "memcpy", &addr, &err) == CREC_OK ||
                     crec_lookup_symbol(rec, "strlen", &addr, &err) == CREC_OK,
                 1, "%s", err.msg);
    /* a hot instruction: the rip seen most in a stretch of the run */
    crec_seek(rec, 60000, &err);
    crec_regs r;
    cr_assert_eq(crec_read_registers(rec, &r, &err), CREC_OK);
    all.want_rip = bp.want_rip = r.rip;
    crec_observer every = {.ctx = &all, .insn = on_every};
    crec_observer bps = {.ctx = &bp, .insn = on_bp, .addrs = &bp.want_rip, .n_addrs = 1};
    cr_assert_eq(crec_exec_run(rec, 50000, 90000, &every, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_exec_run(rec, 50000, 90000, &bps, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_gt(all.n, 0);
    cr_assert_eq(bp.n, all.n);
    cr_assert_eq(memcmp(bp.t, all.t, all.n * sizeof all.t[0]), 0);
}

/* ---- syscalls and bytes the kernel wrote ------------------------------------ */

struct sysread {
    int nread;
    uint64_t t, buf;
    int64_t ret;
    uint8_t data[256], known[256];
};

static int on_syscall(void *ctx, crec_exec *x, const crec_syscall_info *si)
{
    struct sysread *s = ctx;
    crec_error err = {0};

    cr_assert_eq(crec_exec_time(x), si->t + 1);
    if (si->nr != 0 || si->ret <= 0 || s->nread)
        return 0;
    s->nread++;
    s->t = si->t, s->buf = si->args[1], s->ret = si->ret;
    cr_assert_eq(crec_exec_read(x, s->buf, (size_t)(si->ret < 256 ? si->ret : 256), s->data,
                                s->known, &err), CREC_OK, "%s", err.msg);
    return 0;
}

Test(exec, bytes_a_syscall_wrote_equal_the_query)
{
    struct sysread s = {0};
    crec_observer obs = {.ctx = &s, .flags = CREC_EXEC_READS_MEMORY, .syscall = on_syscall};
    crec_error err = {0};
    uint8_t b[256], k[256];
    size_t n;

    cr_assert_eq(crec_exec_run(rec, 0, crec_length(rec), &obs, NULL, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_eq(s.nread, 1, "the program reads its input file");
    n = (size_t)(s.ret < 256 ? s.ret : 256);
    cr_assert_eq(crec_seek(rec, s.t + 1, &err), CREC_OK);
    cr_assert_eq(crec_read_memory(rec, s.buf, n, b, k, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(memcmp(k, s.known, n), 0);
    cr_assert_eq(memcmp(b, s.data, n), 0);
}

Test(exec, bad_ranges_are_errors)
{
    crec_observer obs = {0};
    crec_error err = {0};

    cr_assert_eq(crec_exec_run(rec, crec_length(rec) + 1, crec_length(rec) + 2, &obs, NULL,
                               &err), CREC_ERR_ARG);
    cr_assert(strstr(err.msg, "past the end") != NULL, "%s", err.msg);
    cr_assert_eq(crec_exec_run(rec, 500, 100, &obs, NULL, &err), CREC_ERR_ARG);
}

Test(exec, restart_before_is_a_start_at_or_before)
{
    uint64_t t = crec_restart_before(rec, 53001);

    cr_assert_leq(t, 53001);
    cr_assert_geq(t, 40000); /* key frames every 20000 */
    cr_assert_eq(crec_restart_before(rec, 0), 0);
}

/* ---- what the recording holds besides its run ---------------------------------- */

Test(exec, modules_and_symbols)
{
    const crec_module *mods;
    size_t n;
    crec_error err = {0};
    crec_symbol sym;
    uint64_t addr;

    cr_assert_eq(crec_modules(rec, &mods, &n, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(n, 3, "readfile, ld.so and libc.so");
    cr_assert_eq(crec_lookup_symbol(rec, "main", &addr, &err), CREC_OK);
    cr_assert_eq(crec_symbolize(rec, addr + 3, &sym, &err), CREC_OK);
    cr_assert_str_eq(sym.name, "main");
    cr_assert_eq(sym.addr, addr);
    cr_assert_eq(sym.offset, 3);
    cr_assert(sym.module != NULL);
    cr_assert(strstr(crec_program_path(rec), "readfile") != NULL, "%s", crec_program_path(rec));
    cr_assert(strstr(sym.module->path, "readfile") != NULL);
    cr_assert_eq(crec_symbolize(rec, 0x10, &sym, &err), CREC_OK);
    cr_assert_null(sym.name);
    cr_assert_null(sym.module);
}

Test(exec, auxv_ending_and_syscalls)
{
    uint8_t *auxv;
    size_t len;
    crec_error err = {0};
    crec_end e;
    int entry = 0;

    cr_assert_eq(crec_initial_auxv(rec, &auxv, &len, &err), CREC_OK, "%s", err.msg);
    cr_assert_gt(len, 16);
    cr_assert_eq(len % 16, 0);
    for (size_t i = 0; i < len; i += 16)
        entry |= auxv[i] == 9; /* AT_ENTRY */
    cr_assert(entry);
    free(auxv);
    cr_assert_eq(crec_ending(rec, &e, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(e.how, 0);
    cr_assert_eq(e.value, 0);
    cr_assert_eq(e.t, crec_length(rec));
}

static int count_sys(void *ctx, const crec_syscall_info *s)
{
    uint64_t *n = ctx;
    uint64_t t;
    crec_error err = {0};

    (*n)++;
    cr_assert_eq(s->tid, 1);
    cr_assert_eq(crec_syscall_time(rec, *n, &t, &err), CREC_OK);
    cr_assert_eq(s->t, t);
    return 0;
}

Test(exec, syscalls_without_replay)
{
    uint64_t n = 0;
    crec_error err = {0};

    cr_assert_eq(crec_syscalls(rec, count_sys, &n, &err), CREC_OK, "%s", err.msg);
    cr_assert_gt(n, 10);
}

/* ---- the last write to a range ------------------------------------------------ */

struct writes {
    uint64_t addr, t[4096];
    size_t n;
};

static int on_store(void *ctx, crec_exec *x, const crec_access *a)
{
    struct writes *w = ctx;

    (void)x;
    if (a->kind != CREC_ACCESS_READ && w->n < 4096)
        w->t[w->n++] = a->t + 1;
    return 0;
}

Test(exec, last_write_equals_a_linear_scan)
{
    static struct writes w;
    crec_error err = {0};
    crec_regs r;
    uint64_t t;

    /* a stack slot written now and then: the one RSP points at mid-run */
    cr_assert_eq(crec_seek(rec, 60000, &err), CREC_OK);
    cr_assert_eq(crec_read_registers(rec, &r, &err), CREC_OK);
    w.addr = r.gpr[CREC_RSP] - 8;
    crec_range range = {w.addr, 8};
    crec_observer o = {.ctx = &w, .access = on_store, .ranges = &range, .n_ranges = 1};
    cr_assert_eq(crec_exec_run(rec, 0, crec_length(rec), &o, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_gt(w.n, 2);
    for (size_t i = 1; i < w.n; i += (w.n / 8) + 1) {
        cr_assert_eq(crec_last_write(rec, w.addr, 8, w.t[i] - 1, &t, &err), CREC_OK, "%s",
                     err.msg);
        /* the last write strictly before instruction w.t[i] - 1 */
        size_t k = i;
        while (k > 0 && w.t[k] - 1 >= w.t[i] - 1)
            k--;
        cr_assert_eq(t, w.t[k], "before %lu", (unsigned long)(w.t[i] - 1));
    }
    cr_assert_eq(crec_last_write(rec, w.addr, 8, w.t[0] - 1, &t, &err), CREC_ERR_NOTFOUND);
}

/* ---- several threads: traces-sample/v2-threads.crec ---------------------------- */

/*
 * Three threads switched every 1000 instructions (44943 in all).  A run
 * follows the recorded schedule: what it reports at each time equals what
 * the query API says of the thread that runs then.
 */
static crec_recording *trec;

static void tsetup(void)
{
    open_sample("v2-threads.crec", &trec);
}

static void tteardown(void)
{
    close_sample(&trec);
}

TestSuite(exec_threads, .init = tsetup, .fini = tteardown);

#define TSTEP 300

struct tsteps {
    uint64_t n;
    uint64_t t[TSTEP], rip[TSTEP];
    uint32_t tid[TSTEP];
    crec_regs regs[TSTEP];
    uint8_t stack[TSTEP][16], known[TSTEP][16];
    uint32_t other;           /* crec_exec_thread_regs of this thread too */
    crec_regs oregs[TSTEP];
    int orc[TSTEP];
};

static int ton_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct tsteps *s = ctx;
    crec_error err = {0};

    cr_assert_lt(s->n, TSTEP);
    s->t[s->n] = t, s->rip[s->n] = rip, s->tid[s->n] = tid;
    cr_assert_eq(crec_exec_regs(x, &s->regs[s->n], &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_exec_read(x, s->regs[s->n].gpr[CREC_RSP], 16, s->stack[s->n],
                                s->known[s->n], &err), CREC_OK, "%s", err.msg);
    if (s->other)
        s->orc[s->n] = crec_exec_thread_regs(x, s->other, &s->oregs[s->n], &err);
    s->n++;
    return 0;
}

/* Instructions [from, from+TSTEP) against crec_seek and the query API. */
static void check_thread_steps(uint64_t from, unsigned flags, uint32_t other)
{
    static struct tsteps s;
    crec_observer obs = {.ctx = &s, .flags = flags, .insn = ton_insn};
    crec_error err = {0};
    int switches = 0;

    memset(&s, 0, sizeof s);
    s.other = other;
    cr_assert_eq(crec_exec_run(trec, from, from + TSTEP, &obs, NULL, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_eq(s.n, TSTEP);
    for (uint64_t i = 0; i < TSTEP; i++) {
        crec_regs want;
        uint8_t b[16], k[16];
        uint64_t t = from + i;
        cr_assert_eq(s.t[i], t);
        cr_assert_eq(s.tid[i], crec_thread_at(trec, t), "thread at %lu", (unsigned long)t);
        switches += i > 0 && s.tid[i] != s.tid[i - 1];
        cr_assert_eq(crec_seek(trec, t, &err), CREC_OK);
        cr_assert_eq(crec_read_thread_registers(trec, s.tid[i], &want, &err), CREC_OK, "%s",
                     err.msg);
        cr_assert_eq(s.rip[i], want.rip, "rip at %lu", (unsigned long)t);
        cr_assert_eq(memcmp(s.regs[i].gpr, want.gpr, sizeof want.gpr), 0, "gprs at %lu",
                     (unsigned long)t);
        cr_assert_eq(crec_read_memory(trec, want.gpr[CREC_RSP], 16, b, k, NULL, &err), CREC_OK);
        for (int j = 0; j < 16; j++) {
            cr_assert_eq(k[j], s.known[i][j], "known byte %d at %lu", j, (unsigned long)t);
            if (k[j])
                cr_assert_eq(b[j], s.stack[i][j], "stack byte %d at %lu", j, (unsigned long)t);
        }
        if (other) {
            int rc = crec_read_thread_registers(trec, other, &want, &err);
            cr_assert_eq(s.orc[i], rc, "thread %u's registers at %lu", other, (unsigned long)t);
            if (rc == CREC_OK)
                cr_assert_eq(memcmp(&s.oregs[i].gpr, &want.gpr, sizeof want.gpr), 0,
                             "thread %u's registers at %lu", other, (unsigned long)t);
        }
    }
    cr_assert_gt(switches, 0, "the stretch crosses a thread switch");
}

/* A stretch of TSTEP instructions around the first thread switch after t. */
static uint64_t around_switch(uint64_t t)
{
    while (crec_thread_at(trec, t) == crec_thread_at(trec, t - 1))
        t++;
    return t - TSTEP / 2;
}

Test(exec_threads, run_follows_the_schedule)
{
    crec_error err = {0};
    uint64_t t;

    /* where thread 3 first takes over */
    cr_assert_eq(crec_thread_time(trec, 3, 0, &t, &err), CREC_OK, "%s", err.msg);
    check_thread_steps(around_switch(t - 1), CREC_EXEC_READS_MEMORY, 0);
    check_thread_steps(around_switch(20000), 0, 0);
}

Test(exec_threads, other_threads_registers)
{
    check_thread_steps(around_switch(12000), CREC_EXEC_READS_MEMORY, 2);
    check_thread_steps(around_switch(30000), 0, 3);
}

struct tblocks {
    uint64_t next, per[4];
    uint32_t only;
};

static int ton_block(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr,
                     uint32_t n)
{
    struct tblocks *b = ctx;

    cr_assert_eq(crec_exec_reg(x, CREC_REG_RIP), addr);
    cr_assert_leq(tid, 3);
    if (b->only)
        cr_assert_eq(tid, b->only);
    else
        cr_assert_eq(t, b->next, "blocks follow each other: %lu after %lu", (unsigned long)t,
                     (unsigned long)b->next);
    b->next = t + n;
    b->per[tid] += n;
    return 0;
}

Test(exec_threads, blocks_cover_every_instruction_once)
{
    struct tblocks b = {0};
    crec_observer obs = {.ctx = &b, .block = ton_block};
    crec_info *info;
    crec_error err = {0};
    uint64_t stopped;

    cr_assert_eq(crec_info_read(path, &info, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(info->nthread_list, 3);
    cr_assert_eq(crec_exec_run(trec, 0, crec_length(trec), &obs, &stopped, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_eq(stopped, crec_length(trec));
    cr_assert_eq(b.next, crec_length(trec));
    for (uint32_t tid = 1; tid <= 3; tid++) {
        cr_assert_eq(b.per[tid], info->thread_list[tid - 1].instructions, "thread %u", tid);
        /* one thread alone, with and without the others replayed */
        struct tblocks o = {.only = tid};
        crec_observer one = {.ctx = &o, .block = ton_block, .tid = tid};
        cr_assert_eq(crec_exec_run(trec, 0, crec_length(trec), &one, NULL, &err), CREC_OK,
                     "%s", err.msg);
        cr_assert_eq(o.per[tid], b.per[tid], "thread %u alone", tid);
        memset(&o, 0, sizeof o);
        o.only = tid;
        one.flags = CREC_EXEC_READS_MEMORY;
        cr_assert_eq(crec_exec_run(trec, 5000, crec_length(trec), &one, NULL, &err), CREC_OK,
                     "%s", err.msg);
        cr_assert_leq(o.per[tid], b.per[tid]);
    }
    {
        crec_observer bad = {.block = ton_block, .tid = 9};
        cr_assert_eq(crec_exec_run(trec, 0, 10, &bad, NULL, &err), CREC_ERR_ARG);
    }
    crec_info_free(info);
}

struct twrites {
    uint64_t t[4096];
    uint32_t tid[4096];
    size_t n;
};

static int ton_store(void *ctx, crec_exec *x, const crec_access *a)
{
    struct twrites *w = ctx;

    (void)x;
    if (a->kind != CREC_ACCESS_READ && w->n < 4096) {
        w->t[w->n] = a->t + 1;
        w->tid[w->n++] = a->tid;
    }
    return 0;
}

Test(exec_threads, last_write_across_threads_equals_a_linear_scan)
{
    static struct twrites w;
    crec_error err = {0};
    uint64_t addr, t;
    int tids = 0;

    cr_assert_eq(crec_lookup_symbol(trec, "unlocked", &addr, &err), CREC_OK, "%s", err.msg);
    crec_range range = {addr, 8};
    crec_observer o = {.ctx = &w, .access = ton_store, .ranges = &range, .n_ranges = 1};
    cr_assert_eq(crec_exec_run(trec, 0, crec_length(trec), &o, NULL, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_gt(w.n, 100);
    for (size_t i = 1; i < w.n; i++)
        tids |= 1 << w.tid[i];
    cr_assert_eq(tids, (1 << 2) | (1 << 3), "both workers store to it");
    for (size_t i = 1; i < w.n; i += 7) {
        crec_access hit;
        int found;
        cr_assert_eq(crec_last_write(trec, addr, 8, w.t[i] - 1, &t, &err), CREC_OK, "%s",
                     err.msg);
        size_t k = i;
        while (k > 0 && w.t[k] - 1 >= w.t[i] - 1)
            k--;
        cr_assert_eq(t, w.t[k], "before %lu", (unsigned long)(w.t[i] - 1));
        cr_assert_eq(crec_find_access(trec, &range, 1, 1, NULL, NULL, w.t[i] - 1, 0, &hit,
                                      &found, &err), CREC_OK, "%s", err.msg);
        cr_assert(found);
        cr_assert_eq(hit.t + 1, w.t[i], "the next write from %lu", (unsigned long)(w.t[i] - 1));
        cr_assert_eq(hit.tid, w.tid[i]);
    }
}

Test(exec_threads, restart_before_is_a_start_at_or_before)
{
    for (uint64_t t = 0; t < crec_length(trec); t += 997) {
        uint64_t r = crec_restart_before(trec, t);
        cr_assert_leq(r, t);
    }
}
