/*
 * threads.c - answers across the threads of a recording (format 2,
 * several threads; docs/QUERY.md, "Threads").
 *
 * Every thread has a handle of its own (recording.c) whose key frames and
 * index are in that thread's time, so the engine of query.c answers for
 * one thread as for a recording of one thread.  Here, for time T:
 *
 *   - each thread's count at T comes from the schedule (qx_thread_time);
 *   - each thread's last access to each byte before T is found by going
 *     back through that thread's index spans and replaying (alone) the
 *     latest that touch the byte, noting the number of the instruction of
 *     the access;
 *   - the latest of those accesses over all threads, in global time, says
 *     where the value is: the replay memory of its thread (a load or a
 *     store), or a snapshot taken since (a kernel write);
 *   - as in query.c, a byte no thread touched since the last snapshot S
 *     before T holds what it held at S.
 *
 * `crec when` replays each thread's spans that store to the range and
 * merges the changes in global time.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

/* The latest access to one byte found so far, over all threads. */
struct latest {
    int kind;        /* 0 none, 'r', 'w', 'k' */
    uint64_t g;      /* global number of the accessing instruction */
    uint32_t tid;
    uint8_t value;   /* 'r', 'w': the value then */
};

/* Does span sp of thread handle th touch a byte of [addr, addr+len) that
 * `found` says is still open? */
static int span_touches(const crec_recording *th, size_t sp, uint64_t addr, size_t len,
                        const uint8_t *found)
{
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        if (found[i]) {
            i++;
            continue;
        }
        while (i + n < len && !found[i + n])
            n++;
        if (crec_idx_touches(th->ix, sp, addr + i, n, 0))
            return 1;
        i += n;
    }
    return 0;
}

/* What one replay of thread tid saw: its last access to each byte. */
static void take_run(const crec_recording *rec, uint32_t tid, const struct qx_track *tr,
                     crec_replay_qrun *q, uint8_t *found, struct latest *best)
{
    for (size_t i = 0; i < tr->len; i++) {
        uint64_t g;
        uint8_t v = 0;
        if (found[i] || !tr->st[i])
            continue;
        found[i] = 1;
        g = qx_global_time(rec, tid, tr->at[i]);
        if (best[i].kind && best[i].g >= g)
            continue;
        if (tr->st[i] != 'k' && crec_replay_qrun_read(q, &v, tr->addr + i, 1) != 0)
            continue; /* unmapped since: nothing to say */
        best[i] = (struct latest){tr->st[i], g, tid, v};
    }
}

/*
 * Thread tid's last access to each byte before global time t: back
 * through its spans from the one holding its count at t, replaying those
 * that touch bytes it has not been seen to touch yet; not past a span that
 * starts before `since` (a snapshot), which knows the older state.
 */
static int thread_latest(crec_recording *rec, uint32_t tid, uint64_t t, uint64_t since,
                         struct qx_track *tr, struct latest *best, crec_error *err)
{
    crec_recording *th = rec->thr[tid - 1];
    uint64_t tt;
    uint8_t *found;
    size_t open = tr->len, sp;
    int rc = CREC_OK;

    if (!th || !qx_thread_time(rec, tid, t, &tt) || tt == 0)
        return CREC_OK; /* it had not run yet */
    if (!(found = crec_calloc(tr->len, 1)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (rec->flags & CREC_OPEN_NO_INDEX) { /* one run from its start, the oracle */
        crec_replay_qrun *q = NULL;
        memset(tr->st, 0, tr->len);
        rc = qx_run_checked(th, 0, NULL, tt, qx_track_access, tr, &q, err);
        if (rc == CREC_OK)
            take_run(rec, tid, tr, q, found, best);
        crec_replay_qrun_free(q);
        crec_free(found);
        return rc;
    }
    if ((rc = qx_ensure_index(th, err)) != CREC_OK || th->ix->nspan == 0) {
        crec_free(found);
        return rc;
    }
    sp = crec_idx_span_at(th->ix, tt) + 1;
    while (sp-- > 0 && open > 0 && rc == CREC_OK) {
        uint64_t start = th->ix->spans[sp].start, end = qx_span_end(th, sp);
        crec_replay_qrun *q = NULL;
        if (start >= tt)
            continue; /* nothing of it runs before t */
        if ((rc = crec_idx_need(th->ix, sp, err)) != CREC_OK)
            break;
        if (span_touches(th, sp, tr->addr, tr->len, found)) {
            memset(tr->st, 0, tr->len);
            rc = qx_run_span(th, sp, tt < end ? tt : end, qx_track_access, tr, &q, err);
            if (rc == CREC_OK)
                take_run(rec, tid, tr, q, found, best);
            crec_replay_qrun_free(q);
            open = 0;
            for (size_t i = 0; i < tr->len; i++)
                open += !found[i];
        }
        if (qx_global_time(rec, tid, start) < since)
            break; /* older accesses: the snapshot at `since` knows their outcome */
    }
    crec_free(found);
    return rc;
}

int qx_read_threads(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
                    uint8_t *known, int *source, crec_error *err)
{
    struct latest *best = crec_calloc(len, sizeof *best);
    struct qx_track tr = {addr, len, crec_calloc(len, 1), crec_calloc(len, sizeof *tr.kt),
                          crec_calloc(len, sizeof *tr.at)};
    uint8_t *done = crec_calloc(len, 1);
    int nsrc[4] = {0}, have_snap, rc;
    size_t ks = 0;
    uint64_t since = 0;

    if (!best || !tr.st || !tr.kt || !tr.at || !done) {
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        goto out;
    have_snap = qx_last_snapshot(rec, t, &ks);
    if (have_snap)
        since = rec->kfs[ks].global_icount;
    for (uint32_t tid = 1; tid <= rec->nthr && rc == CREC_OK; tid++)
        rc = thread_latest(rec, tid, t, have_snap ? since : 0, &tr, best, err);
    for (size_t i = 0; i < len && rc == CREC_OK; i++) {
        uint64_t page = (addr + i) & ~(CREC_PAGE_SIZE - 1);
        const struct qx_snap_page *p;
        int prot;
        if (best[i].kind && (!have_snap || best[i].g >= since)) {
            if (best[i].kind != 'k') {
                buf[i] = best[i].value, known[i] = done[i] = 1;
                nsrc[CREC_SRC_REPLAY]++;
                continue;
            }
            /* the kernel wrote it last: only a snapshot taken since knows it */
            p = qx_snap_find(rec, page, t);
            if (p && p->icount > best[i].g && (rc = qx_snap_byte(rec, p, addr + i, &buf[i],
                                                                  err)) == CREC_OK) {
                known[i] = 1;
                nsrc[CREC_SRC_SNAPSHOT]++;
            } else {
                nsrc[CREC_SRC_UNKNOWN]++;
            }
            done[i] = 1;
            continue;
        }
        if (!have_snap)
            continue;
        /* no thread touched it since the snapshot: what it held then */
        if ((rc = qx_prot_at_keyframe(rec, ks, page, &prot, err)) != CREC_OK)
            break;
        if (prot < 0) {
            done[i] = 1;
            nsrc[CREC_SRC_UNKNOWN]++;
            continue;
        }
        p = qx_snap_find(rec, page, since);
        if (!(prot & CREC_FMT_PROT_EXEC) && p) {
            if ((rc = qx_snap_byte(rec, p, addr + i, &buf[i], err)) != CREC_OK)
                break;
            known[i] = done[i] = 1;
            nsrc[CREC_SRC_SNAPSHOT]++;
        }
    }
    for (size_t i = 0; i < len && rc == CREC_OK; i++) { /* the newest snapshot, or ?? */
        const struct qx_snap_page *p;
        if (done[i])
            continue;
        p = qx_snap_find(rec, (addr + i) & ~(CREC_PAGE_SIZE - 1), t);
        if (p && (rc = qx_snap_byte(rec, p, addr + i, &buf[i], err)) == CREC_OK) {
            known[i] = 1;
            nsrc[CREC_SRC_SNAPSHOT]++;
        } else {
            nsrc[CREC_SRC_UNKNOWN]++;
        }
    }
    *source = 0;
    for (int k = 1; k < 4; k++)
        if (nsrc[k] > nsrc[*source])
            *source = k;
out:
    crec_free(best);
    crec_free(tr.st);
    crec_free(tr.kt);
    crec_free(tr.at);
    crec_free(done);
    return rc;
}

/* ---- crec_watch ----------------------------------------------------------------- */

/* One change of the watched bytes by one thread, before the merge. */
struct change {
    uint64_t g;          /* global time: the value is new after instruction g */
    uint32_t tid;
    int kind;            /* 'w' a store, 'k' the kernel, 'r' a load that shows a value */
    uint64_t rip;
    char insn[160];
    uint8_t mask[64];    /* the bytes it sets */
    uint8_t bytes[64];
};

struct thread_watch {
    crec_recording *rec;
    uint32_t tid;
    uint64_t addr;
    size_t len;
    struct change *v;
    size_t n, cap;
    int pending;         /* v[n-1] is a store whose bytes are read at the next access */
    int nomem;
};

static struct change *add_change(struct thread_watch *w)
{
    struct change *p = crec_grow(w->v, &w->cap, w->n + 1, sizeof *p, 64);

    if (!p) {
        w->nomem = 1;
        return NULL;
    }
    w->v = p;
    memset(&p[w->n], 0, sizeof p[w->n]);
    return &p[w->n++];
}

/* A store is seen before it happens: its bytes are read at the next access. */
static void settle_store(struct thread_watch *w, crec_replay_qrun *q)
{
    struct change *c;

    if (!w->pending)
        return;
    w->pending = 0;
    c = &w->v[w->n - 1];
    for (size_t i = 0; i < w->len; i++)
        if (c->mask[i] && crec_replay_qrun_read(q, &c->bytes[i], w->addr + i, 1) != 0)
            c->mask[i] = 0;
}

static void watch_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t a, uint64_t l)
{
    struct thread_watch *w = ctx;
    struct change *c;
    uint64_t lo, hi, at;

    settle_store(w, q);
    if (a >= w->addr + w->len || (l != UINT64_MAX && a + l <= w->addr))
        return;
    lo = a > w->addr ? a - w->addr : 0;
    hi = l == UINT64_MAX || a + l > w->addr + w->len ? w->len : a + l - w->addr;
    if (!(c = add_change(w)))
        return;
    c->tid = w->tid;
    c->kind = kind;
    at = kind == 'k' ? crec_replay_qrun_icount(q) - 1
                     : crec_replay_qrun_icount_at(q, crec_replay_qrun_rip(q));
    c->g = qx_global_time(w->rec, w->tid, at);
    for (uint64_t i = lo; i < hi; i++)
        c->mask[i] = 1;
    if (kind == 'k') {
        snprintf(c->insn, sizeof c->insn, "(the kernel: a syscall or a new mapping)");
        return;
    }
    if (kind == 'r') { /* the value it loaded is in memory now */
        for (uint64_t i = lo; i < hi; i++)
            if (crec_replay_qrun_read(q, &c->bytes[i], w->addr + i, 1) != 0)
                c->mask[i] = 0;
        return;
    }
    c->rip = crec_replay_qrun_rip(q);
    crec_replay_qrun_describe(q, c->rip, c->insn, sizeof c->insn);
    w->pending = 1;
}

/* Every change one thread made to the range: its spans that store to it
 * (or whose kernel writes it), replayed in order, a run going on into the
 * next such span when it ends where that one starts. */
static int thread_changes(crec_recording *rec, uint32_t tid, struct thread_watch *w,
                          crec_error *err)
{
    crec_recording *th = rec->thr[tid - 1];
    crec_replay_qrun *q = NULL;
    int rc;

    if (!th)
        return CREC_OK;
    if ((rc = qx_ensure_index(th, err)) != CREC_OK)
        return rc;
    for (size_t sp = 0; sp < th->ix->nspan && rc == CREC_OK; sp++) {
        uint64_t end = qx_span_end(th, sp);
        if ((rc = crec_idx_need(th->ix, sp, err)) != CREC_OK)
            break;
        if (!crec_idx_touches(th->ix, sp, w->addr, w->len, 1)) {
            crec_replay_qrun_free(q); /* a gap: the next run starts afresh */
            q = NULL;
            continue;
        }
        if (!q)
            rc = qx_run_span(th, sp, end, watch_access, w, &q, err);
        else
            rc = qx_continue(th, q, end, NULL, NULL, err);
        if (rc == CREC_OK)
            settle_store(w, q);
    }
    crec_replay_qrun_free(q);
    return rc;
}

static int cmp_change(const void *a, const void *b)
{
    const struct change *x = a, *y = b;
    return x->g < y->g ? -1 : x->g > y->g;
}

int qx_watch_threads(crec_recording *rec, uint64_t addr, size_t len,
                     int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err)
{
    struct thread_watch w = {rec, 0, addr, len, NULL, 0, 0, 0, 0};
    uint8_t cur[64], curk[64];
    int src, rc;

    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        return rc;
    memset(cur, 0, sizeof cur);
    rc = qx_read_threads(rec, 0, addr, len, cur, curk, &src, err);
    if (rc != CREC_OK)
        return rc;
    {
        crec_change c = {0, 0, "(initial)", cur, curk, len, 0};
        if (fn(ctx, &c))
            return CREC_OK;
    }
    for (uint32_t tid = 1; tid <= rec->nthr && rc == CREC_OK; tid++) {
        w.tid = tid;
        w.pending = 0;
        rc = thread_changes(rec, tid, &w, err);
    }
    if (rc == CREC_OK && w.nomem)
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory watching 0x%" PRIx64, addr);
    if (rc == CREC_OK)
        crec_sort(w.v, w.n, sizeof *w.v, cmp_change);
    for (size_t k = 0; k < w.n && rc == CREC_OK; k++) {
        const struct change *c = &w.v[k];
        int changed = c->kind == 'k';
        for (size_t i = 0; i < len; i++) {
            if (!c->mask[i])
                continue;
            if (c->kind == 'k') {
                curk[i] = 0;
            } else if (c->kind == 'r') {
                if (!curk[i])
                    cur[i] = c->bytes[i], curk[i] = 1; /* a value comes to light */
            } else {
                changed |= !curk[i] || cur[i] != c->bytes[i];
                cur[i] = c->bytes[i], curk[i] = 1;
            }
        }
        if (changed) {
            crec_change out = {c->g + 1, c->kind == 'k' ? 0 : c->rip, "", cur, curk, len,
                               c->tid};
            snprintf(out.insn, sizeof out.insn, "%s", c->insn);
            if (fn(ctx, &out))
                break;
        }
    }
    crec_free(w.v);
    return rc;
}
