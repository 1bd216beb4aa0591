/*
 * exec.c - crec_exec_run: replay part of a recording and report what it
 * does to an observer (include/crec.h, docs/API.md), on top of the
 * replayer's execution runs (replayer/qexec.c).
 *
 * A run starts at the restart point (or key frame) at or before `from`,
 * replays silently up to `from` with the exact stop of query runs, and then
 * goes on to `to` with the observer's callbacks live.  A callback that
 * returns non-zero halts the run; nothing is reported after it.
 *
 * crec_exec_read must equal crec_read_memory at the same time.  Replay
 * memory holds the right bytes only where the run loaded or stored them
 * (or restored them at a restart point) and the kernel has not written
 * since, so with CREC_EXEC_READS_MEMORY the run keeps a bitmap of those
 * bytes, page by page; every other byte is asked of the query engine, and
 * then put into replay memory and marked, so that it is asked once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

#define EX_PAGE 4096u

/* The bytes of one page that replay memory holds rightly (bit per byte). */
struct ex_page {
    uint64_t page_plus1; /* page number + 1; 0: empty slot */
    uint8_t *bits;       /* EX_PAGE / 8 bytes */
};

struct crec_exec {
    crec_recording *rec;
    const crec_observer *obs;
    uint64_t from, to;
    int active;            /* past `from`: callbacks are live */
    crec_replay_qrun *q;   /* the run, inside a callback */
    uint64_t now;          /* the time of the callback's point */
    uint32_t tid;
    int stopped;           /* a callback asked to stop ... */
    uint64_t stop_t;       /* ... here */
    crec_range *ranges;    /* obs->ranges, sorted by address */
    size_t nranges;

    int track;             /* CREC_EXEC_READS_MEMORY */
    struct ex_page *pages; /* open addressing, power-of-two size */
    size_t cap, used;
    struct ex_page *last;  /* the page found last */
};

/* ---- which bytes replay memory holds ---------------------------------------- */

static size_t page_slot(uint64_t page, size_t cap)
{
    return (size_t)((page * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
}

static struct ex_page *page_find(struct crec_exec *x, uint64_t page, int create);

static int pages_grow(struct crec_exec *x)
{
    size_t cap = x->cap ? 2 * x->cap : 256;
    struct ex_page *n = crec_calloc(cap, sizeof *n), *old = x->pages;
    size_t oldcap = x->cap;

    if (!n)
        return -1;
    x->pages = n, x->cap = cap, x->used = 0, x->last = NULL;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].page_plus1) {
            size_t j = page_slot(old[i].page_plus1 - 1, cap);
            while (n[j].page_plus1)
                j = (j + 1) & (cap - 1);
            n[j] = old[i];
            x->used++;
        }
    crec_free(old);
    return 0;
}

/* @return the page's entry; NULL when it has none (create 0) or out of memory. */
static struct ex_page *page_find(struct crec_exec *x, uint64_t page, int create)
{
    size_t i;

    if (x->last && x->last->page_plus1 == page + 1)
        return x->last;
    if (x->cap == 0) {
        if (!create || pages_grow(x) != 0)
            return NULL;
    }
    for (i = page_slot(page, x->cap); x->pages[i].page_plus1; i = (i + 1) & (x->cap - 1))
        if (x->pages[i].page_plus1 == page + 1)
            return x->last = &x->pages[i];
    if (!create)
        return NULL;
    if ((x->used + 1) * 2 > x->cap) {
        if (pages_grow(x) != 0)
            return NULL;
        return page_find(x, page, create);
    }
    x->pages[i].bits = crec_calloc(EX_PAGE / 8, 1);
    if (!x->pages[i].bits)
        return NULL;
    x->pages[i].page_plus1 = page + 1;
    x->used++;
    return x->last = &x->pages[i];
}

/* Mark [addr, addr+len) held (on 1) or not (on 0).  Out of memory, a byte
 * is left "not held", which only sends its reads to the query engine. */
static void mark(struct crec_exec *x, uint64_t addr, uint64_t len, int on)
{
    while (len > 0) {
        uint64_t page = addr / EX_PAGE, off = addr % EX_PAGE;
        uint64_t n = EX_PAGE - off < len ? EX_PAGE - off : len;
        struct ex_page *p = page_find(x, page, on);
        if (p) {
            if (n == EX_PAGE)
                memset(p->bits, on ? 0xff : 0, EX_PAGE / 8);
            else
                for (uint64_t i = off; i < off + n; i++) {
                    if (on)
                        p->bits[i / 8] |= (uint8_t)(1u << (i % 8));
                    else
                        p->bits[i / 8] &= (uint8_t)~(1u << (i % 8));
                }
        }
        addr += n, len -= n;
    }
}

static void forget_all(struct crec_exec *x)
{
    for (size_t i = 0; i < x->cap; i++)
        if (x->pages[i].page_plus1)
            memset(x->pages[i].bits, 0, EX_PAGE / 8);
}

static int held(struct crec_exec *x, uint64_t addr)
{
    struct ex_page *p = page_find(x, addr / EX_PAGE, 0);
    uint64_t off = addr % EX_PAGE;

    return p && (p->bits[off / 8] >> (off % 8) & 1);
}

static void pages_free(struct crec_exec *x)
{
    for (size_t i = 0; i < x->cap; i++)
        crec_free(x->pages[i].bits);
    crec_free(x->pages);
    x->pages = NULL, x->cap = x->used = 0, x->last = NULL;
}

/* ---- callbacks from the replayer ------------------------------------------- */

static void halt_at(struct crec_exec *x, crec_replay_qrun *q, uint64_t t)
{
    x->stopped = 1;
    x->stop_t = t;
    crec_replay_qrun_halt(q);
}

static void ex_block(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t addr, uint32_t ninsns)
{
    struct crec_exec *x = ctx;

    if (!x->active || t < x->from || t >= x->to)
        return;
    if (ninsns > x->to - t)
        ninsns = (uint32_t)(x->to - t);
    x->q = q, x->now = t, x->tid = crec_replay_qrun_tid(q);
    if (x->obs->block(x->obs->ctx, x, t, x->tid, addr, ninsns))
        halt_at(x, q, t);
}

static void ex_insn(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t rip)
{
    struct crec_exec *x = ctx;

    if (!x->active || t < x->from || t >= x->to)
        return;
    x->q = q, x->now = t, x->tid = crec_replay_qrun_tid(q);
    if (x->obs->insn(x->obs->ctx, x, t, x->tid, rip))
        halt_at(x, q, t);
}

/* Does [addr, addr+len) meet one of the observer's ranges? */
static int in_ranges(const struct crec_exec *x, uint64_t addr, uint64_t len)
{
    size_t a = 0, b = x->nranges;

    if (x->nranges == 0 || len == UINT64_MAX)
        return 1;
    while (a < b) { /* the first range starting at or after addr + len */
        size_t m = a + (b - a) / 2;
        if (x->ranges[m].addr < addr + len)
            a = m + 1;
        else
            b = m;
    }
    /* ranges may overlap, so look back past the ones that end too soon */
    for (size_t i = a; i-- > 0;)
        if (x->ranges[i].addr + x->ranges[i].len > addr)
            return 1;
    return 0;
}

static void ex_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr, uint64_t len,
                      const uint8_t *value)
{
    struct crec_exec *x = ctx;

    if (x->track && kind == 'k') {
        if (len == UINT64_MAX)
            forget_all(x);
        else
            mark(x, addr, len, 0);
    } else if (x->track && kind == 'r') {
        mark(x, addr, len, 1);
    }
    if (x->active && x->obs->access && in_ranges(x, addr, len)) {
        uint64_t t = crec_replay_qrun_time(q);
        crec_access a = {t, crec_replay_qrun_tid(q), kind, addr, len, value};
        if (t >= x->from && t < x->to) {
            x->q = q, x->tid = a.tid;
            x->now = kind == 'k' ? t + 1 : t; /* a kernel write is over by now */
            if (x->obs->access(x->obs->ctx, x, &a))
                halt_at(x, q, t + 1);
        }
    }
    if (x->track && kind == 'w') /* after the client, which saw the old bytes */
        mark(x, addr, len, 1);
}

static void ex_syscall(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t nr,
                       const uint64_t args[6], int64_t ret)
{
    struct crec_exec *x = ctx;
    crec_syscall_info si = {.t = t, .nr = nr, .ret = ret};

    if (!x->active || t < x->from || t >= x->to)
        return;
    memcpy(si.args, args, sizeof si.args);
    si.tid = x->tid = crec_replay_qrun_tid(q);
    x->q = q, x->now = t + 1;
    if (x->obs->syscall(x->obs->ctx, x, &si))
        halt_at(x, q, t + 1);
}

/* ---- the run ----------------------------------------------------------------- */

uint64_t crec_restart_before(crec_recording *rec, uint64_t t)
{
    if (t > rec->end)
        t = rec->end;
    if (rec->ix && rec->ix->nspan > 0)
        return rec->ix->spans[crec_idx_span_at(rec->ix, t)].start;
    return rec->kfs[qx_seg_of(rec, t)].global_icount;
}

static int cmp_range(const void *a, const void *b)
{
    const crec_range *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Where a run that must reach `from` starts: the index's span (its key
 * frame, or a restart point with the memory it restores), else the key
 * frame.  The restored lines are memory the run holds.
 */
static int start_of(crec_recording *rec, struct crec_exec *x, uint64_t from, size_t *kf,
                    crec_replay_from *rf, crec_error *err)
{
    memset(rf, 0, sizeof *rf);
    if (rec->ix && rec->ix->nspan > 0) {
        size_t sp = crec_idx_span_at(rec->ix, from);
        int rc;
        *kf = rec->ix->spans[sp].kf;
        if (rec->ix->spans[sp].at_point) {
            if ((rc = qx_restore_lines(rec, sp, rf, err)) != CREC_OK)
                return rc;
            for (size_t i = 0; x->track && i < rf->nlines; i++)
                mark(x, rf->lines[i] << 6, 64, 1);
            return qx_need_parts(rec, err);
        }
    } else {
        *kf = qx_seg_of(rec, from);
    }
    int rc = qx_need_parts(rec, err); /* a run jumps over gaps to where the next part starts */
    return rc != CREC_OK ? rc : qx_need_kf(rec, *kf, err);
}

int crec_exec_run(crec_recording *rec, uint64_t from, uint64_t to, const crec_observer *obs,
                  uint64_t *stopped, crec_error *err)
{
    struct crec_exec x = {0};
    crec_replay_exec rx = {0};
    crec_replay_watch w = {0};
    crec_replay_from rf;
    crec_replay_qrun *q = NULL;
    uint64_t *addrs = NULL;
    size_t kf;
    int rc;

    /* its runs replay one thread's streams in global time: not yet the
     * schedule of several (replay, query, when, races and info do) */
    if (rec->nthr > 1)
        return crec_error_set(err, CREC_ERR_UNSUPPORTED, "a recording of %zu threads: the "
                              "execution API (trace, calls, backtrace, profile, find, printf, "
                              "gdb) follows one thread only, not yet several", rec->nthr);
    if (from > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", from, rec->end);
    if (from > to)
        return crec_error_set(err, CREC_ERR_ARG, "a run from %" PRIu64 " to %" PRIu64
                              " goes back in time", from, to);
    if (to > rec->end)
        to = rec->end;
    /* nothing before the first key frame can be replayed (a ring recording
     * dropped it): a run starts there at the earliest */
    if (from < rec->kfs[0].global_icount)
        from = rec->kfs[0].global_icount;
    if (to < from)
        to = from;
    if (stopped)
        *stopped = to;
    if (from == to)
        return CREC_OK;
    x.rec = rec, x.obs = obs, x.from = from, x.to = to;
    x.track = (obs->flags & CREC_EXEC_READS_MEMORY) != 0;
    if (obs->n_ranges && obs->access) {
        x.ranges = crec_malloc(obs->n_ranges * sizeof *x.ranges);
        if (!x.ranges)
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        memcpy(x.ranges, obs->ranges, obs->n_ranges * sizeof *x.ranges);
        qsort(x.ranges, obs->n_ranges, sizeof *x.ranges, cmp_range);
        x.nranges = obs->n_ranges;
    }
    if (obs->insn && obs->n_addrs) { /* bounded hooks want them sorted, once each */
        addrs = crec_malloc(obs->n_addrs * sizeof *addrs);
        if (!addrs) {
            crec_free(x.ranges);
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        }
        memcpy(addrs, obs->addrs, obs->n_addrs * sizeof *addrs);
        qsort(addrs, obs->n_addrs, sizeof *addrs, cmp_u64);
    }
    rx.ctx = &x;
    rx.block = obs->block ? ex_block : NULL;
    rx.insn = obs->insn ? ex_insn : NULL;
    rx.every_insn = obs->insn && obs->n_addrs == 0;
    rx.addrs = addrs;
    rx.n_addrs = addrs ? obs->n_addrs : 0;
    rx.access = obs->access || x.track ? ex_access : NULL;
    rx.syscall = obs->syscall ? ex_syscall : NULL;
    w.exec = &rx;

    rc = start_of(rec, &x, from, &kf, &rf, err);
    if (rc == CREC_OK) /* up to `from`, silently */
        rc = crec_replay_query(rec->r, rec->kfs, rec->nkf, kf, rf.point ? &rf : NULL, from, &w,
                               &q, err);
    if (rc == CREC_OK && crec_replay_qrun_icount(q) != from)
        rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay stopped at instruction %" PRIu64
                            ", not %" PRIu64, crec_replay_qrun_icount(q), from);
    if (rc == CREC_OK) {
        x.active = 1;
        rc = crec_replay_qrun_continue(q, to, err);
    }
    if (rc == CREC_OK && stopped)
        *stopped = x.stopped ? x.stop_t : crec_replay_qrun_icount(q);
    crec_replay_qrun_free(q);
    crec_free((void *)rf.lines);
    crec_free((void *)rf.values);
    crec_free(addrs);
    crec_free(x.ranges);
    pages_free(&x);
    return rc;
}

/* ---- inside a callback ------------------------------------------------------- */

int crec_exec_regs(crec_exec *x, crec_regs *r, crec_error *err)
{
    return crec_replay_qrun_regs(x->q, r, err);
}

uint64_t crec_exec_reg(crec_exec *x, int reg)
{
    return crec_replay_qrun_reg(x->q, reg);
}

uint64_t crec_exec_time(const crec_exec *x)
{
    return x->now;
}

int crec_exec_read(crec_exec *x, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                   crec_error *err)
{
    uint8_t *k = known ? known : crec_malloc(len ? len : 1);
    size_t nheld = 0;
    int src = 0, rc = CREC_OK;

    if (!k)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (len == 0 || addr + len < addr) {
        rc = crec_error_set(err, CREC_ERR_ARG, "bad range");
        goto out;
    }
    for (size_t i = 0; x->track && i < len; i++)
        nheld += held(x, addr + i);
    if (nheld == len && crec_replay_qrun_read(x->q, buf, addr, len) == 0) {
        memset(k, 1, len);
        goto out;
    }
    /* some bytes the run does not hold: the query engine knows them */
    rc = qx_read_at(x->rec, x->now, addr, len, buf, k, &src, err);
    for (size_t i = 0; rc == CREC_OK && x->track && i < len; i++) {
        if (held(x, addr + i)) {
            if (crec_replay_qrun_read(x->q, &buf[i], addr + i, 1) == 0)
                k[i] = 1;
        } else if (k[i] && src != CREC_SRC_CODE &&
                   crec_replay_qrun_write(x->q, addr + i, 1, &buf[i]) == 0) {
            /* the run holds it now: the next read of it costs no query,
             * until the kernel writes it (exec evaluates a condition
             * before every instruction) */
            mark(x, addr + i, 1, 1);
        }
    }
out:
    if (!known)
        crec_free(k);
    return rc;
}

/* ---- the last write to a range ------------------------------------------------- */

int crec_last_write(crec_recording *rec, uint64_t addr, uint64_t len, uint64_t before,
                    uint64_t *t, crec_error *err)
{
    crec_range r = {addr, len};
    crec_access hit;
    int found, rc;

    if (len == 0 || addr + len < addr)
        return crec_error_set(err, CREC_ERR_ARG, "bad range");
    rc = crec_find_access(rec, &r, 1, 1, NULL, NULL, before > rec->end ? rec->end : before, 1,
                          &hit, &found, err);
    if (rc != CREC_OK)
        return rc;
    if (found) {
        *t = hit.t + 1; /* the value is new after the writing instruction */
        return CREC_OK;
    }
    return crec_error_set(err, CREC_ERR_NOTFOUND, "nothing wrote 0x%" PRIx64 " (+%" PRIu64
                          ") before %" PRIu64, addr, len, before);
}
