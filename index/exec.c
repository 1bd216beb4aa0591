/*
 * exec.c - crec_exec_run: replay part of a recording and report what it
 * does to an observer (include/crec.h, docs/API.md), on top of the
 * replayer's execution runs (replayer/qexec.c).
 *
 * A run follows the recorded schedule (format/schedule.c): each thread is a
 * *lane*, its own replay from its own streams (a thread replays alone,
 * docs/ARCHITECTURE.md "Threads"), and the run takes the slices of the
 * schedule in time order, running the lane of each slice on to the slice's
 * end.  So callbacks come in global time, whichever thread makes them, and
 * a thread that is not wanted (crec_observer.tid) need not run at all.  A
 * recording of one thread is one lane and one slice.
 *
 * A lane starts, at its first slice in [from, to), at the restart point (or
 * key frame) of its own thread before its own count there, replays
 * silently up to that count with the exact stop of query runs, and then
 * goes on slice by slice with the observer's callbacks live.  A callback
 * that returns non-zero halts the run; nothing is reported after it.
 *
 * crec_exec_read must equal crec_read_memory at the same time.  A lane's
 * replay memory holds the right bytes only where its thread loaded or
 * stored them since the run began and nothing wrote them since: no other
 * thread (a store by one thread makes every other lane's copy stale) and
 * not the kernel.  With CREC_EXEC_READS_MEMORY the run keeps, page by page,
 * which lane holds which bytes, and answers from that lane's memory; every
 * other byte is asked of the query engine, and the answer is kept beside
 * (never written into replay memory, whose bytes a lane's predicted loads
 * rely on) until something writes that byte, so that it is asked once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

#define EX_PAGE 4096u

/*
 * The most lanes with a replay at once: each holds an engine (Unicorn
 * reserves a large code buffer for each), and a program may have hundreds
 * of threads alive.  Past it, the lane that ran least lately is parked (its
 * replay freed) and started again from its restart point when its thread
 * runs next.  The s390x build under qemu-user sets 1 (docs/PORTABILITY.md:
 * qemu 7.2 breaks the third engine of a process).
 */
#ifndef CREC_EXEC_MAX_LANES
#define CREC_EXEC_MAX_LANES 16
#endif

/* The bytes of a page one lane's replay memory holds rightly (bit per byte). */
struct ex_hold {
    size_t lane;
    uint8_t *bits;         /* EX_PAGE / 8 bytes */
};

struct ex_page {
    uint64_t page_plus1;   /* page number + 1; 0: empty slot */
    struct ex_hold *holds;
    uint32_t nholds, capholds;
    uint8_t *ovals, *obits; /* answers of the query engine, while nothing writes them */
};

struct crec_exec;

/* One thread of the run: its replay, alone, from its own streams. */
struct ex_lane {
    struct crec_exec *x;
    size_t index;
    crec_recording *th;    /* the thread's handle, in its own time (one thread: rec) */
    uint32_t tid;
    crec_replay_qrun *q;   /* NULL before its first slice, and after its last */
    int finished;          /* it ran its last slice: q was freed */
    crec_replay_exec rx;
    crec_replay_watch w;
    crec_replay_from rf;   /* where it started (its lines are the index's) */
    uint64_t off;          /* the slice running: global time = own count + off */
    uint64_t own_start, own_end; /* ... its own counts */
    int active;            /* in a slice of [from, to): callbacks are live */
    uint64_t last_run;     /* the slice it ran last (which lane to park) */
};

struct crec_exec {
    crec_recording *rec;
    const crec_observer *obs;
    uint64_t from, to;
    struct ex_lane *lanes; /* by thread number - 1 */
    size_t nlanes;
    size_t live;           /* lanes with a replay now */
    struct ex_lane *cur;   /* the lane of the callback */
    crec_replay_qrun *q;   /* its run, inside a callback */
    uint64_t now;          /* the time of the callback's point */
    uint32_t tid;
    int stopped;           /* a callback asked to stop ... */
    uint64_t stop_t;       /* ... here */
    crec_range *ranges;    /* obs->ranges, sorted by address */
    size_t nranges;

    int track;             /* CREC_EXEC_READS_MEMORY */
    int track_silent;      /* one lane: what it does before `from` counts too */
    struct ex_page *pages; /* open addressing, power-of-two size */
    size_t cap, used;
    struct ex_page *last;  /* the page found last */
};

/* ---- which bytes which lane holds ------------------------------------------- */

static size_t page_slot(uint64_t page, size_t cap)
{
    return (size_t)((page * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
}

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
    x->pages[i].page_plus1 = page + 1;
    x->used++;
    return x->last = &x->pages[i];
}

/* Lane `lane`'s bits of page p; NULL when it has none (create 0) or out of memory. */
static uint8_t *hold_bits(struct ex_page *p, size_t lane, int create)
{
    struct ex_hold *h;

    for (uint32_t i = 0; i < p->nholds; i++)
        if (p->holds[i].lane == lane)
            return p->holds[i].bits;
    if (!create)
        return NULL;
    if (p->nholds == p->capholds) {
        uint32_t cap = p->capholds ? 2 * p->capholds : 1;
        if (!(h = crec_realloc(p->holds, cap * sizeof *h)))
            return NULL;
        p->holds = h, p->capholds = cap;
    }
    h = &p->holds[p->nholds];
    if (!(h->bits = crec_calloc(EX_PAGE / 8, 1)))
        return NULL;
    h->lane = lane;
    p->nholds++;
    return h->bits;
}

static void set_bits(uint8_t *bits, uint64_t off, uint64_t n, int on)
{
    if (n == EX_PAGE) {
        memset(bits, on ? 0xff : 0, EX_PAGE / 8);
        return;
    }
    for (uint64_t i = off; i < off + n; i++) {
        if (on)
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
        else
            bits[i / 8] &= (uint8_t)~(1u << (i % 8));
    }
}

static int bit(const uint8_t *bits, uint64_t off)
{
    return bits && (bits[off / 8] >> (off % 8) & 1);
}

enum { MARK_LOAD, MARK_STORE, MARK_KERNEL };

/*
 * A lane loaded (MARK_LOAD) or stored (MARK_STORE) [addr, addr+len), or
 * the kernel wrote it (MARK_KERNEL, lane unused).  A load makes the lane
 * hold the bytes; a store too, and every other copy stale; a kernel write
 * makes every copy stale.  Out of memory a byte is left "not held", which
 * only sends its reads to the query engine.
 */
static void mark(struct crec_exec *x, size_t lane, int how, uint64_t addr, uint64_t len)
{
    while (len > 0) {
        uint64_t page = addr / EX_PAGE, off = addr % EX_PAGE;
        uint64_t n = EX_PAGE - off < len ? EX_PAGE - off : len;
        struct ex_page *p = page_find(x, page, how != MARK_KERNEL);
        if (p) {
            uint8_t *mine = how == MARK_KERNEL ? NULL : hold_bits(p, lane, 1);
            if (mine)
                set_bits(mine, off, n, 1);
            if (how != MARK_LOAD) {
                for (uint32_t i = 0; i < p->nholds; i++)
                    if (p->holds[i].bits != mine)
                        set_bits(p->holds[i].bits, off, n, 0);
                if (p->obits)
                    set_bits(p->obits, off, n, 0);
            }
        }
        addr += n, len -= n;
    }
}

/* Bytes a lane's run was given at a restart point it passed (qx_continue):
 * memory it holds, as if it had loaded them. */
static void ex_restored(void *ctx, uint64_t addr, uint64_t len)
{
    struct ex_lane *l = ctx;

    if (l->active || l->x->track_silent)
        mark(l->x, l->index, MARK_LOAD, addr, len);
}

static void forget_all(struct crec_exec *x)
{
    for (size_t i = 0; i < x->cap; i++) {
        struct ex_page *p = &x->pages[i];
        if (!p->page_plus1)
            continue;
        for (uint32_t k = 0; k < p->nholds; k++)
            memset(p->holds[k].bits, 0, EX_PAGE / 8);
        if (p->obits)
            memset(p->obits, 0, EX_PAGE / 8);
    }
}

/* The lane that holds byte `off` of page p with a replay still there (the
 * callback's own first), or NULL. */
static struct ex_lane *holder(struct crec_exec *x, const struct ex_page *p, uint64_t off)
{
    struct ex_lane *found = NULL;

    for (uint32_t i = 0; i < p->nholds; i++) {
        struct ex_lane *l = &x->lanes[p->holds[i].lane];
        if (!l->q || !bit(p->holds[i].bits, off))
            continue;
        if (l == x->cur)
            return l;
        found = found ? found : l;
    }
    return found;
}

/* Keep an answer of the query engine for the byte at addr. */
static void keep_answer(struct crec_exec *x, uint64_t addr, uint8_t v)
{
    struct ex_page *p = page_find(x, addr / EX_PAGE, 1);
    uint64_t off = addr % EX_PAGE;

    if (!p)
        return;
    if (!p->ovals) {
        p->ovals = crec_malloc(EX_PAGE);
        p->obits = crec_calloc(EX_PAGE / 8, 1);
        if (!p->ovals || !p->obits) {
            crec_free(p->ovals), crec_free(p->obits);
            p->ovals = p->obits = NULL;
            return;
        }
    }
    p->ovals[off] = v;
    set_bits(p->obits, off, 1, 1);
}

static void pages_free(struct crec_exec *x)
{
    for (size_t i = 0; i < x->cap; i++) {
        for (uint32_t k = 0; k < x->pages[i].nholds; k++)
            crec_free(x->pages[i].holds[k].bits);
        crec_free(x->pages[i].holds);
        crec_free(x->pages[i].ovals);
        crec_free(x->pages[i].obits);
    }
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

/* Is own count t of lane l inside the slice being reported, for the observer? */
static int live(const struct ex_lane *l, uint64_t t)
{
    return l->active && t >= l->own_start && t < l->own_end &&
           (!l->x->obs->tid || l->x->obs->tid == l->tid);
}

/* A callback's point: lane l, run q, global time `now`. */
static void enter(struct ex_lane *l, crec_replay_qrun *q, uint64_t now)
{
    struct crec_exec *x = l->x;

    x->cur = l, x->q = q, x->now = now, x->tid = l->tid;
}

static void ex_block(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t addr, uint32_t ninsns)
{
    struct ex_lane *l = ctx;
    struct crec_exec *x = l->x;

    if (!live(l, t))
        return;
    if (ninsns > l->own_end - t) /* the slice, or the run, ends inside it */
        ninsns = (uint32_t)(l->own_end - t);
    enter(l, q, t + l->off);
    if (x->obs->block(x->obs->ctx, x, t + l->off, l->tid, addr, ninsns))
        halt_at(x, q, t + l->off);
}

static void ex_insn(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t rip)
{
    struct ex_lane *l = ctx;
    struct crec_exec *x = l->x;

    if (!live(l, t))
        return;
    enter(l, q, t + l->off);
    if (x->obs->insn(x->obs->ctx, x, t + l->off, l->tid, rip))
        halt_at(x, q, t + l->off);
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
    struct ex_lane *l = ctx;
    struct crec_exec *x = l->x;
    int track = x->track && (l->active || x->track_silent);

    if (track && kind == 'k') {
        if (len == UINT64_MAX)
            forget_all(x);
        else
            mark(x, l->index, MARK_KERNEL, addr, len);
    } else if (track && kind == 'r') {
        mark(x, l->index, MARK_LOAD, addr, len);
    }
    if (x->obs->access && in_ranges(x, addr, len)) {
        uint64_t t = crec_replay_qrun_time(q);
        crec_access a = {t + l->off, l->tid, kind, addr, len, value};
        if (live(l, t)) {
            enter(l, q, kind == 'k' ? a.t + 1 : a.t); /* a kernel write is over by now */
            if (x->obs->access(x->obs->ctx, x, &a))
                halt_at(x, q, a.t + 1);
        }
    }
    if (track && kind == 'w') /* after the client, which saw the old bytes */
        mark(x, l->index, MARK_STORE, addr, len);
}

static void ex_syscall(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t nr,
                       const uint64_t args[6], int64_t ret)
{
    struct ex_lane *l = ctx;
    struct crec_exec *x = l->x;
    crec_syscall_info si = {.t = t + l->off, .tid = l->tid, .nr = nr, .ret = ret};

    if (!live(l, t))
        return;
    memcpy(si.args, args, sizeof si.args);
    enter(l, q, si.t + 1);
    if (x->obs->syscall(x->obs->ctx, x, &si))
        halt_at(x, q, si.t + 1);
}

/* ---- where a replay can start ------------------------------------------------- */

/* One thread's latest restart point at or before its own count t. */
static uint64_t restart_own(const crec_recording *th, uint64_t t)
{
    if (t > th->end)
        t = th->end;
    if (th->ix && th->ix->nspan > 0)
        return th->ix->spans[crec_idx_span_at(th->ix, t)].start;
    return th->kfs[qx_seg_of(th, t)].global_icount;
}

uint64_t crec_restart_before(crec_recording *rec, uint64_t t)
{
    uint32_t tid;
    uint64_t tt, g;

    if (t > rec->end)
        t = rec->end;
    if (!rec->nthr)
        return restart_own(rec, t);
    /* several threads: the restart point of the thread that runs at t (the
     * others start at their own points before t) */
    if (qx_schedule(rec, NULL) != CREC_OK)
        return 0;
    tid = crec_thread_at(rec, t);
    if (!rec->thr[tid - 1] || !qx_thread_time(rec, tid, t, &tt))
        return 0;
    g = qx_global_time(rec, tid, restart_own(rec->thr[tid - 1], tt));
    return g < t ? g : t;
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
 * Start lane l's replay so that it stands at its own count t: from its
 * thread's index span at or before t (its key frame, or a restart point
 * with the memory it restores), else the key frame, silently up to t.
 * Restored lines are memory the lane holds when it is the only one.
 */
static int lane_start(struct crec_exec *x, struct ex_lane *l, uint64_t t, crec_error *err)
{
    crec_recording *th = l->th;
    crec_replay_from *rf = &l->rf;
    size_t kf;
    int rc;

    memset(rf, 0, sizeof *rf);
    if (th->ix && th->ix->nspan > 0) {
        size_t sp = crec_idx_span_at(th->ix, t);
        kf = th->ix->spans[sp].kf;
        if (th->ix->spans[sp].at_point) {
            if ((rc = qx_restore_lines(th, sp, rf, err)) != CREC_OK)
                return rc;
            for (size_t i = 0; x->track && x->track_silent && i < rf->nlines; i++)
                for (unsigned b = 0; b < 64; b++)
                    if (rf->masks[i] >> b & 1)
                        mark(x, l->index, MARK_LOAD, (rf->lines[i] << 6) + b, 1);
        } else if ((rc = qx_need_kf(th, kf, err)) != CREC_OK) {
            return rc;
        }
    } else {
        kf = qx_seg_of(th, t);
        if ((rc = qx_need_kf(th, kf, err)) != CREC_OK)
            return rc;
    }
    /* a run jumps over the gaps of a recording of parts: where each part
     * starts, the key frame's registers are needed */
    if ((rc = qx_need_parts(th, err)) != CREC_OK)
        return rc;
    l->active = 0;
    rc = crec_replay_query(th->r, th->kfs, th->nkf, kf, rf->point ? rf : NULL, t, &l->w, &l->q,
                           err);
    if (rc == CREC_OK)
        x->live++;
    if (rc == CREC_OK && crec_replay_qrun_icount(l->q) != t)
        rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay of thread %u stopped at its "
                            "instruction %" PRIu64 ", not %" PRIu64, l->tid,
                            crec_replay_qrun_icount(l->q), t);
    return rc;
}

/* Free lane l's replay: its engine goes back to the pool. */
static void lane_park(struct ex_lane *l)
{
    crec_replay_qrun_free(l->q);
    l->q = NULL;
    l->x->live--;
}

/* Make room for one more lane with a replay, parking the one that ran
 * least lately when there are CREC_EXEC_MAX_LANES. */
static void lane_room(struct crec_exec *x)
{
    struct ex_lane *oldest = NULL;

    if (x->live < CREC_EXEC_MAX_LANES)
        return;
    for (size_t i = 0; i < x->nlanes; i++)
        if (x->lanes[i].q && (!oldest || x->lanes[i].last_run < oldest->last_run))
            oldest = &x->lanes[i];
    if (oldest)
        lane_park(oldest);
}

static void lanes_free(struct crec_exec *x)
{
    for (size_t i = 0; i < x->nlanes; i++) {
        crec_replay_qrun_free(x->lanes[i].q);
    }
    crec_free(x->lanes);
    x->lanes = NULL;
}

/* Set up the lanes: one per thread, each with the hooks the observer wants. */
static int lanes_open(struct crec_exec *x, const uint64_t *addrs, crec_error *err)
{
    crec_recording *rec = x->rec;
    const crec_observer *obs = x->obs;

    x->nlanes = rec->nthr ? rec->nthr : 1;
    if (!(x->lanes = crec_calloc(x->nlanes, sizeof *x->lanes)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %zu threads", x->nlanes);
    for (size_t i = 0; i < x->nlanes; i++) {
        struct ex_lane *l = &x->lanes[i];
        l->x = x;
        l->index = i;
        l->tid = (uint32_t)i + 1;
        l->th = rec->nthr ? rec->thr[i] : rec;
        l->rx.ctx = l;
        l->rx.block = obs->block ? ex_block : NULL;
        l->rx.insn = obs->insn ? ex_insn : NULL;
        l->rx.every_insn = obs->insn && obs->n_addrs == 0;
        l->rx.addrs = addrs;
        l->rx.n_addrs = addrs ? obs->n_addrs : 0;
        l->rx.access = obs->access || x->track ? ex_access : NULL;
        l->rx.syscall = obs->syscall ? ex_syscall : NULL;
        l->w.exec = &l->rx;
    }
    return CREC_OK;
}

/* Is slice i thread tid's last? */
static int last_slice_of(const crec_recording *rec, uint32_t tid, size_t i)
{
    return rec->nthr && rec->ntslices[tid - 1] > 0 &&
           rec->tslices[tid - 1][rec->ntslices[tid - 1] - 1] == i;
}

/* Run the slices of [from, to) in order.  *reached: where the run ended
 * (`to`, or where the recording does when it is cut short). */
static int run_slices(struct crec_exec *x, const crec_fmt_slice *v, size_t n, uint64_t *reached,
                      crec_error *err)
{
    crec_recording *rec = x->rec;
    const crec_observer *obs = x->obs;
    int rc = CREC_OK;

    *reached = x->to;
    for (size_t i = crec_fmt_slice_at(v, n, x->from); i < n && !x->stopped; i++) {
        const crec_fmt_slice *sl = &v[i];
        uint64_t gs = sl->start > x->from ? sl->start : x->from;
        uint64_t ge = sl->start + sl->len < x->to ? sl->start + sl->len : x->to;
        uint64_t own_s, own_e, now;
        struct ex_lane *l;

        if (sl->start >= x->to)
            break;
        if (ge <= gs || (obs->tid && sl->tid != obs->tid && !x->track))
            continue; /* empty, or a thread nobody needs run */
        if (sl->tid < 1 || sl->tid > x->nlanes || !(l = &x->lanes[sl->tid - 1])->th)
            return crec_error_corrupt(err, "the schedule runs thread %u, which has no key frame",
                                      sl->tid);
        if (l->finished)
            return crec_error_corrupt(err, "the schedule runs thread %u after its last slice",
                                      sl->tid);
        own_s = sl->thread_start + (gs - sl->start);
        own_e = own_s + (ge - gs);
        if (own_s < l->th->kfs[0].global_icount) { /* its start was dropped (a ring) */
            if (own_e <= l->th->kfs[0].global_icount)
                continue;
            own_s = l->th->kfs[0].global_icount;
        }
        l->off = sl->start - sl->thread_start;
        l->own_start = own_s, l->own_end = own_e;
        l->last_run = i;
        if (!l->q) {
            lane_room(x);
            rc = lane_start(x, l, own_s, err);
        } else if (crec_replay_qrun_icount(l->q) != own_s)
            rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay of thread %u is at its "
                                "instruction %" PRIu64 " where its slice at %" PRIu64
                                " starts at %" PRIu64, l->tid, crec_replay_qrun_icount(l->q),
                                sl->start, sl->thread_start);
        if (rc != CREC_OK)
            return rc;
        l->active = 1;
        rc = qx_continue(l->th, l->q, own_e, x->track ? ex_restored : NULL, l, err);
        l->active = 0;
        if (rc != CREC_OK)
            return rc;
        if (x->stopped)
            break;
        now = crec_replay_qrun_icount(l->q);
        if (now != own_e) { /* the recording ends here (cut short) */
            *reached = now + l->off;
            break;
        }
        if (last_slice_of(rec, l->tid, i)) { /* a thread that ran its last gives its engine back */
            lane_park(l);
            l->finished = 1;
        }
    }
    return rc;
}

int crec_exec_run(crec_recording *rec, uint64_t from, uint64_t to, const crec_observer *obs,
                  uint64_t *stopped, crec_error *err)
{
    struct crec_exec x = {0};
    crec_fmt_slice whole = {0};
    const crec_fmt_slice *slices = &whole;
    size_t nslices = 1;
    uint64_t *addrs = NULL, reached = from;
    int rc;

    if (from > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", from, rec->end);
    if (from > to)
        return crec_error_set(err, CREC_ERR_ARG, "a run from %" PRIu64 " to %" PRIu64
                              " goes back in time", from, to);
    if (obs->tid && (obs->tid > crec_threads(rec) || (rec->nthr && !rec->thr[obs->tid - 1])))
        return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has %zu)",
                              obs->tid, crec_threads(rec));
    if (to > rec->end)
        to = rec->end;
    /* nothing before the first key frame can be replayed (a ring recording
     * dropped it): a run starts there at the earliest */
    if (!rec->nthr && from < rec->kfs[0].global_icount)
        from = rec->kfs[0].global_icount;
    if (to < from)
        to = from;
    if (stopped)
        *stopped = to;
    if (from == to)
        return CREC_OK;
    if (rec->nthr) {
        if ((rc = qx_schedule(rec, err)) != CREC_OK)
            return rc;
        slices = rec->slices, nslices = rec->nslices;
    } else {
        whole = (crec_fmt_slice){.tid = 1, .start = 0, .len = rec->end, .thread_start = 0};
    }
    x.rec = rec, x.obs = obs, x.from = from, x.to = to;
    x.track = (obs->flags & CREC_EXEC_READS_MEMORY) != 0;
    x.track_silent = !rec->nthr;
    if (obs->n_ranges && obs->access) {
        x.ranges = crec_malloc(obs->n_ranges * sizeof *x.ranges);
        if (!x.ranges)
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        memcpy(x.ranges, obs->ranges, obs->n_ranges * sizeof *x.ranges);
        crec_sort(x.ranges, obs->n_ranges, sizeof *x.ranges, cmp_range);
        x.nranges = obs->n_ranges;
    }
    if (obs->insn && obs->n_addrs) { /* bounded hooks want them sorted, once each */
        addrs = crec_malloc(obs->n_addrs * sizeof *addrs);
        if (!addrs) {
            crec_free(x.ranges);
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        }
        memcpy(addrs, obs->addrs, obs->n_addrs * sizeof *addrs);
        crec_sort(addrs, obs->n_addrs, sizeof *addrs, cmp_u64);
    }
    rc = lanes_open(&x, addrs, err);
    if (rc == CREC_OK)
        rc = run_slices(&x, slices, nslices, &reached, err);
    if (rc == CREC_OK && stopped)
        *stopped = x.stopped ? x.stop_t : reached;
    lanes_free(&x);
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

int crec_exec_thread_regs(crec_exec *x, uint32_t tid, crec_regs *r, crec_error *err)
{
    struct ex_lane *l;
    uint64_t saved;
    int rc;

    if (tid == 0 || tid == x->tid)
        return crec_exec_regs(x, r, err);
    if (tid > x->nlanes)
        return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has %zu)", tid,
                              x->nlanes);
    l = &x->lanes[tid - 1];
    /* a lane that ran in this run stands where its thread was switched out */
    if (l->q && !crec_replay_qrun_halted(l->q))
        return crec_replay_qrun_regs(l->q, r, err);
    saved = x->rec->t; /* else the query API, without moving the caller's time */
    x->rec->t = x->now;
    rc = crec_read_thread_registers(x->rec, tid, r, err);
    x->rec->t = saved;
    return rc;
}

int crec_exec_read(crec_exec *x, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                   crec_error *err)
{
    uint8_t *k = known ? known : crec_malloc(len ? len : 1), *qb = NULL, *qk = NULL;
    size_t have = 0;
    int src = 0, rc = CREC_OK;

    if (!k)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (len == 0 || addr + len < addr) {
        rc = crec_error_set(err, CREC_ERR_ARG, "bad range");
        goto out;
    }
    memset(k, 0, len);
    for (size_t i = 0; x->track && i < len;) { /* what the lanes hold, or answers kept */
        uint64_t off = (addr + i) % EX_PAGE, n = EX_PAGE - off < len - i ? EX_PAGE - off : len - i;
        struct ex_page *p = page_find(x, (addr + i) / EX_PAGE, 0);
        for (uint64_t j = 0; p && j < n;) {
            struct ex_lane *l = holder(x, p, off + j);
            uint64_t r = 1;
            if (l) { /* a run of bytes this lane holds: one read */
                while (j + r < n && holder(x, p, off + j + r) == l)
                    r++;
                if (crec_replay_qrun_read(l->q, &buf[i + j], addr + i + j, r) == 0) {
                    memset(&k[i + j], 1, r);
                    have += r;
                }
            } else if (bit(p->obits, off + j)) {
                buf[i + j] = p->ovals[off + j];
                k[i + j] = 1;
                have++;
            }
            j += r;
        }
        i += n;
    }
    if (have == len)
        goto out;
    /* bytes the run does not hold: the query engine knows them */
    qb = crec_malloc(len), qk = crec_malloc(len);
    if (!qb || !qk) {
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        goto out;
    }
    rc = qx_read_at(x->rec, x->now, addr, len, qb, qk, &src, err);
    for (size_t i = 0; rc == CREC_OK && i < len; i++) {
        if (k[i])
            continue;
        buf[i] = qb[i], k[i] = qk[i];
        /* kept until something writes it: exec evaluates a condition before
         * every instruction (code bytes cost no replay) */
        if (x->track && qk[i] && src != CREC_SRC_CODE)
            keep_answer(x, addr + i, qb[i]);
    }
out:
    crec_free(qb);
    crec_free(qk);
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
