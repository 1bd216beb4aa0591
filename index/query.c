/*
 * query.c - the query engine behind crec_read_memory, crec_read_registers
 * and crec_watch (the public API in include/crec.h; docs/QUERY.md explains
 * the method).
 *
 * The value of byte X at time T:
 *   1. X in a code mapping: the code bytes;
 *   2. going back from T's span, each span that the index says touches X:
 *      one that ends by T gives the value its stores left, if it stored X
 *      last (kept in the index, no replay), and passes over X if it only
 *      loaded it (a load changes nothing); the span holding T, or one
 *      whose value the index can't give (the kernel wrote X there), is
 *      replayed (to T, or to its end), watching X: if the guest loaded or
 *      stored X there, replay memory holds X's value; if the kernel (a
 *      syscall, a new mapping) wrote X last, replay memory does not, and
 *      only a snapshot taken after that write and at or before T knows it;
 *   3. once the search passes the last snapshot S at or before T, the
 *      bytes still open were not touched between S and T: if X's page was
 *      mapped (and not executable) at S, the newest snapshot of the page at
 *      or before S holds X's value (every snapshot holds all the pages
 *      written since the one before); unmapped at S: unknown;
 *   4. bytes that are still open: the newest snapshot at or before T of
 *      their page, otherwise "unknown" (??): never a guessed value.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

/* ---- one memory query ------------------------------------------------------ */

/* What is known so far about each byte of a memory query. */
struct answer {
    uint64_t addr, t;
    size_t len;
    uint8_t *buf, *known;
    uint8_t *done;   /* settled: known, or known to be unknown */
    size_t open;     /* bytes not done */
    size_t *load_sp; /* the latest span by t that only loaded it (SIZE_MAX: none) */
    int nsrc[5];     /* bytes answered by each CREC_SRC_* */
};

static void answer_unknown(struct answer *a, size_t i)
{
    a->done[i] = 1;
    a->open--;
    a->nsrc[CREC_SRC_UNKNOWN]++;
}

static int answer_from_snapshot(crec_recording *rec, struct answer *a, size_t i,
                                const struct qx_snap_page *p, crec_error *err)
{
    int rc = qx_snap_byte(rec, p, a->addr + i, &a->buf[i], err);

    if (rc != CREC_OK)
        return rc;
    a->known[i] = a->done[i] = 1;
    a->open--;
    a->nsrc[CREC_SRC_SNAPSHOT]++;
    return CREC_OK;
}

void qx_track_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t a, uint64_t l)
{
    struct qx_track *t = ctx;
    uint64_t lo, hi, at;

    if (a >= t->addr + t->len || (l != UINT64_MAX && a + l <= t->addr))
        return;
    lo = a > t->addr ? a - t->addr : 0;
    hi = l == UINT64_MAX || a + l > t->addr + t->len ? t->len : a + l - t->addr;
    /* a syscall's count includes it: the instruction before that count */
    at = kind == 'k' ? crec_replay_qrun_icount(q) - 1
                     : crec_replay_qrun_icount_at(q, crec_replay_qrun_rip(q));
    for (uint64_t i = lo; i < hi; i++) {
        t->st[i] = (uint8_t)kind;
        if (kind == 'k')
            t->kt[i] = crec_replay_qrun_icount(q);
        if (t->at)
            t->at[i] = at;
    }
}

/* A run that must have stopped at exactly `until`. */
int qx_run_checked(crec_recording *rec, size_t kf, const crec_replay_from *from,
                       uint64_t until, crec_replay_access_fn fn, void *ctx,
                       crec_replay_qrun **q, crec_error *err)
{
    crec_replay_watch w = {fn, NULL, ctx, NULL, 0};
    int rc = from ? CREC_OK : qx_need_kf(rec, kf, err);

    if (rc == CREC_OK) /* a run jumps over gaps to where the next part starts */
        rc = qx_need_parts(rec, err);
    if (rc == CREC_OK)
        rc = crec_replay_query(rec->r, rec->kfs, rec->nkf, kf, from, until, &w, q, err);

    if (rc == CREC_OK && crec_replay_qrun_icount(*q) != until) {
        rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay stopped at instruction %" PRIu64
                            ", not %" PRIu64, crec_replay_qrun_icount(*q), until);
        crec_replay_qrun_free(*q);
        *q = NULL;
    }
    return rc;
}

/* The memory a run starting at point span sp restores: the span's seed
 * (index/build.c), which the caller must not free (it is the index's). */
int qx_restore_lines(crec_recording *rec, size_t sp, crec_replay_from *from,
                     crec_error *err)
{
    const crec_idx_span *s;
    int rc = crec_idx_need(rec->ix, sp, err);

    if (rc != CREC_OK || (rc = crec_idx_need_point(rec->ix, sp, err)) != CREC_OK)
        return rc;
    s = &rec->ix->spans[sp];
    *from = (crec_replay_from){s->point, s->nlines, s->lines, s->values, s->masks};
    return CREC_OK;
}

int qx_continue(crec_recording *rec, crec_replay_qrun *q, uint64_t until,
                void (*restored)(void *ctx, uint64_t addr, uint64_t len), void *ctx,
                crec_error *err)
{
    const crec_idx *ix = rec->ix;
    uint64_t now = crec_replay_qrun_icount(q);
    size_t sp;
    int rc = CREC_OK;

    if (!ix || ix->nspan == 0)
        return crec_replay_qrun_continue(q, until, err);
    /* each point span on the way: run to its start exactly, give it its seed */
    for (sp = crec_idx_span_at(ix, now); sp < ix->nspan && rc == CREC_OK; sp++) {
        const crec_idx_span *s = &ix->spans[sp];
        if (s->start < now || !s->at_point)
            continue;
        if (s->start >= until && !(s->start == until && s->start == now))
            break;
        if (s->start > now && (rc = crec_replay_qrun_continue(q, s->start, err)) != CREC_OK)
            break;
        if (crec_replay_qrun_halted(q)) /* its client ended it short of the point */
            return CREC_OK;
        if (crec_replay_qrun_icount(q) != s->start)
            return crec_error_set(err, CREC_ERR_DIVERGENCE, "replay stopped at instruction %"
                                  PRIu64 ", not %" PRIu64, crec_replay_qrun_icount(q),
                                  s->start);
        if ((rc = crec_idx_need_point(rec->ix, sp, err)) != CREC_OK)
            break;
        s = &ix->spans[sp];
        for (size_t i = 0; i < s->nlines; i++) {
            crec_replay_qrun_write_masked(q, s->lines[i], s->masks[i], s->values + 64 * i);
            for (unsigned b = 0; restored && b < 64; b++)
                if (s->masks[i] >> b & 1)
                    restored(ctx, (s->lines[i] << 6) + b, 1);
        }
        now = s->start;
    }
    if (rc == CREC_OK && now < until)
        rc = crec_replay_qrun_continue(q, until, err);
    return rc;
}

/* A run from the start of span sp of the index (its key frame, or its
 * restart point) to exactly `until`. */
int qx_run_span(crec_recording *rec, size_t sp, uint64_t until, crec_replay_access_fn fn,
                    void *ctx, crec_replay_qrun **q, crec_error *err)
{
    crec_replay_from from = {0};
    int rc;

    uint64_t end = qx_span_end(rec, sp);

    if (!rec->ix->spans[sp].at_point)
        rc = qx_run_checked(rec, rec->ix->spans[sp].kf, NULL, until < end ? until : end, fn,
                            ctx, q, err);
    else if ((rc = qx_restore_lines(rec, sp, &from, err)) == CREC_OK)
        rc = qx_run_checked(rec, rec->ix->spans[sp].kf, &from, until < end ? until : end, fn,
                            ctx, q, err);
    /* past the span: through the points on the way */
    if (rc == CREC_OK && until > end)
        rc = qx_continue(rec, *q, until, NULL, NULL, err);
    return rc;
}

/* Where span sp ends: the next one's start, or the end of the recording. */
uint64_t qx_span_end(const crec_recording *rec, size_t sp)
{
    return sp + 1 < rec->ix->nspan ? rec->ix->spans[sp + 1].start : rec->end;
}

/* Settle the bytes a run saw: the last access to each says where its value is. */
static int settle(crec_recording *rec, const struct qx_track *tr, crec_replay_qrun *q,
                  struct answer *a, crec_error *err)
{
    for (size_t i = 0; i < a->len; i++) {
        const struct qx_snap_page *p;
        if (a->done[i] || !tr->st[i])
            continue;
        if (tr->st[i] != 'k') {
            if (crec_replay_qrun_read(q, &a->buf[i], a->addr + i, 1) != 0) {
                answer_unknown(a, i);
                continue;
            }
            a->known[i] = a->done[i] = 1;
            a->open--;
            a->nsrc[CREC_SRC_REPLAY]++;
            continue;
        }
        /* the kernel wrote it last: only a snapshot taken since knows it */
        p = qx_snap_find(rec, (a->addr + i) & ~(CREC_PAGE_SIZE - 1), a->t);
        if (!p || p->icount < tr->kt[i]) {
            answer_unknown(a, i);
            continue;
        }
        int rc = answer_from_snapshot(rec, a, i, p, err);
        if (rc != CREC_OK)
            return rc;
    }
    return CREC_OK;
}

/* Replay from the start of span sp (SIZE_MAX: from instruction 0) up to
 * `until`, watching the open bytes, and settle them. */
static int replay_and_settle(crec_recording *rec, size_t sp, uint64_t until, struct qx_track *tr,
                             struct answer *a, crec_error *err)
{
    crec_replay_qrun *q = NULL;
    int rc;

    memset(tr->st, 0, a->len);
    if (sp == SIZE_MAX)
        rc = qx_run_checked(rec, 0, NULL, until, qx_track_access, tr, &q, err);
    else
        rc = qx_run_span(rec, sp, until, qx_track_access, tr, &q, err);
    if (rc == CREC_OK)
        rc = settle(rec, tr, q, a, err);
    crec_replay_qrun_free(q);
    return rc;
}

/* Every open byte is in a snapshot taken at or after `since` and by a->t. */
static int snapshots_since(const crec_recording *rec, const struct answer *a, uint64_t since)
{
    for (size_t i = 0; i < a->len; i++) {
        const struct qx_snap_page *p;
        if (a->done[i])
            continue;
        p = qx_snap_find(rec, (a->addr + i) & ~(CREC_PAGE_SIZE - 1), a->t);
        if (!p || p->icount < since)
            return 0;
    }
    return 1;
}

/* Answer the open bytes from the newest snapshots at or before `t`. */
static int settle_by_snapshots(crec_recording *rec, struct answer *a, uint64_t t,
                               crec_error *err)
{
    for (size_t i = 0; i < a->len; i++) {
        const struct qx_snap_page *p;
        int rc;
        if (a->done[i])
            continue;
        p = qx_snap_find(rec, (a->addr + i) & ~(CREC_PAGE_SIZE - 1), t);
        if (p && (rc = answer_from_snapshot(rec, a, i, p, err)) != CREC_OK)
            return rc;
    }
    return CREC_OK;
}

/*
 * The open bytes were not touched between the snapshot at key frame ks
 * and a->t: they hold what they held then.  A byte whose page was mapped
 * and not executable then is in a snapshot up to ks; one whose page was
 * not mapped is unknown; one in code is left open (code pages are not in
 * snapshots).
 */
static int settle_at_snapshot(crec_recording *rec, struct answer *a, size_t ks,
                              crec_error *err)
{
    uint64_t s = rec->kfs[ks].global_icount;

    for (size_t i = 0; i < a->len; i++) {
        uint64_t page = (a->addr + i) & ~(CREC_PAGE_SIZE - 1);
        const struct qx_snap_page *p;
        int prot, rc;
        if (a->done[i])
            continue;
        if ((rc = qx_prot_at_keyframe(rec, ks, page, &prot, err)) != CREC_OK)
            return rc;
        if (prot < 0) {
            if (a->load_sp[i] == SIZE_MAX) /* a load's value is known: replay it */
                answer_unknown(a, i);
            continue;
        }
        p = qx_snap_find(rec, page, s);
        if (!(prot & CREC_FMT_PROT_EXEC) && p &&
            (rc = answer_from_snapshot(rec, a, i, p, err)) != CREC_OK)
            return rc;
    }
    return CREC_OK;
}

/* Does segment c touch (writes_only: store or kernel-write) one of the open bytes? */
static int touches_open(const crec_recording *rec, size_t c, const struct answer *a,
                        int writes_only)
{
    for (size_t i = 0; i < a->len;) {
        size_t n = 0;
        if (a->done[i]) {
            i++;
            continue;
        }
        while (i + n < a->len && !a->done[i + n])
            n++;
        if (crec_idx_touches(rec->ix, c, a->addr + i, n, writes_only))
            return 1;
        i += n;
    }
    return 0;
}

/* Replay the spans that last loaded the open bytes for which the search
 * found nothing better (want[i]): a load's value is the value then, and
 * nothing wrote the byte between it and t. */
static int replay_loads(crec_recording *rec, struct answer *a, struct qx_track *tr,
                        const uint8_t *want, crec_error *err)
{
    for (size_t i = 0; i < a->len; i++) {
        size_t sp = a->load_sp[i];
        int rc;
        if (a->done[i] || (want && !want[i]) || sp == SIZE_MAX)
            continue;
        if ((rc = replay_and_settle(rec, sp, qx_span_end(rec, sp), tr, a, err)) != CREC_OK)
            return rc;
        for (size_t j = i; j < a->len; j++) /* a span that is no help is not asked again */
            if (!a->done[j] && a->load_sp[j] == sp)
                a->load_sp[j] = SIZE_MAX;
    }
    return CREC_OK;
}

/* Byte i was written last by the kernel, in span sp (with no load or store
 * of it there): settle it as a replay would (settle), without one when the
 * snapshot that could hold it was taken after the span (it does) or
 * before it (none does); else the span is replayed (*replay 1) to learn
 * when the kernel wrote it. */
static int kernel_byte(crec_recording *rec, size_t sp, struct answer *a, size_t i, int *replay,
                       crec_error *err)
{
    const struct qx_snap_page *p =
        qx_snap_find(rec, (a->addr + i) & ~(CREC_PAGE_SIZE - 1), a->t);

    if (p && p->icount >= qx_span_end(rec, sp))
        return answer_from_snapshot(rec, a, i, p, err);
    if (!p || p->icount < rec->ix->spans[sp].start)
        answer_unknown(a, i);
    else
        *replay = 1;
    return CREC_OK;
}

/*
 * Span sp ends at or before t: answer from the index what it can.  A byte
 * it stored last has the value the span's stores left (CREC_IDX_VALUED);
 * one it only loaded stays open for the spans before (a load changes
 * nothing); one it stored with no value kept, or the kernel wrote, needs
 * a replay: of the latest span that loaded it since, if any (its value
 * is the loaded one), else of this span (*replay 1).
 */
static int settle_from_values(crec_recording *rec, size_t sp, struct answer *a,
                              struct qx_track *tr, int *replay, crec_error *err)
{
    int rc = CREC_OK, loads = 0;

    *replay = 0;
    /* its values are read only when it stores what is asked */
    if (rec->ix->spans[sp].flags & CREC_IDX_VALUED && touches_open(rec, sp, a, 1) &&
        (rc = crec_idx_need_values(rec->ix, sp, a->addr, a->len, err)) != CREC_OK)
        return rc;
    memset(tr->st, 0, a->len); /* here: the bytes that want their load replayed */
    for (size_t i = 0; i < a->len; i++) {
        uint8_t v;
        if (a->done[i])
            continue;
        switch (crec_idx_byte_at_end(rec->ix, sp, a->addr + i, &v)) {
        case CREC_IDX_BYTE_LOADED:
            if (a->load_sp[i] == SIZE_MAX)
                a->load_sp[i] = sp;
            break;
        case CREC_IDX_BYTE_VALUE:
            a->buf[i] = v;
            a->known[i] = a->done[i] = 1;
            a->open--;
            a->nsrc[CREC_SRC_INDEX]++;
            break;
        case CREC_IDX_BYTE_KERNEL: /* a load since has its value; else kernel_byte */
            if (a->load_sp[i] != SIZE_MAX)
                tr->st[i] = 1, loads = 1;
            else if ((rc = kernel_byte(rec, sp, a, i, replay, err)) != CREC_OK)
                return rc;
            break;
        case CREC_IDX_BYTE_REPLAY:
            if (a->load_sp[i] != SIZE_MAX)
                tr->st[i] = 1, loads = 1;
            else
                *replay = 1;
            break;
        }
    }
    if (loads) {
        uint8_t *want = crec_malloc(a->len);
        if (!want)
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a query");
        memcpy(want, tr->st, a->len);
        rc = replay_loads(rec, a, tr, want, err);
        crec_free(want);
    }
    return rc;
}

/* Steps 2 and 3 of the method (top of this file). */
static int search_index(crec_recording *rec, struct answer *a, struct qx_track *tr,
                        crec_error *err)
{
    size_t ks = 0, sp = crec_idx_span_at(rec->ix, a->t) + 1;
    int have_snap = qx_last_snapshot(rec, a->t, &ks), rc = CREC_OK, replay;
    uint64_t snap_t = rec->kfs[ks].global_icount;

    while (sp-- > 0 && a->open > 0) {
        uint64_t start = rec->ix->spans[sp].start, end = qx_span_end(rec, sp);
        if (have_snap && start < snap_t) {
            have_snap = 0; /* spans from the snapshot on are done: X is as it was then */
            if ((rc = settle_at_snapshot(rec, a, ks, err)) != CREC_OK ||
                (rc = replay_loads(rec, a, tr, NULL, err)) != CREC_OK || a->open == 0)
                return rc;
        }
        if (start >= a->t)
            continue; /* nothing of it runs before t */
        if (!crec_idx_may_touch(rec->ix, sp, a->addr, a->len))
            continue; /* its block's filter: it leaves X alone, as below */
        if ((rc = crec_idx_need(rec->ix, sp, err)) != CREC_OK)
            return rc;
        if (!touches_open(rec, sp, a, 0))
            continue; /* it leaves the open bytes alone */
        /* the span holding t is replayed: its accesses may come after t */
        if (end <= a->t) {
            if ((rc = settle_from_values(rec, sp, a, tr, &replay, err)) != CREC_OK)
                return rc;
            if (!replay)
                continue;
        }
        if (snapshots_since(rec, a, end))
            return CREC_OK; /* the bytes are in snapshots taken after it */
        rc = replay_and_settle(rec, sp, a->t < end ? a->t : end, tr, a, err);
        if (rc != CREC_OK)
            return rc;
    }
    if (have_snap && a->open > 0) /* every span was searched, back to the snapshot */
        rc = settle_at_snapshot(rec, a, ks, err);
    if (rc == CREC_OK && a->open > 0) /* no snapshot has them, a load does */
        rc = replay_loads(rec, a, tr, NULL, err);
    return rc;
}

static int answer_init(struct answer *a, struct qx_track *tr, uint64_t addr, size_t len,
                       uint64_t t, uint8_t *buf, uint8_t *known)
{
    memset(a, 0, sizeof *a);
    a->addr = addr, a->len = len, a->t = t, a->open = len;
    a->buf = buf, a->known = known;
    a->done = crec_calloc(len, 1);
    a->load_sp = crec_malloc(len * sizeof *a->load_sp);
    for (size_t i = 0; a->load_sp && i < len; i++)
        a->load_sp[i] = SIZE_MAX;
    tr->addr = addr, tr->len = len;
    tr->at = NULL;
    tr->st = crec_calloc(len, 1);
    tr->kt = crec_calloc(len, sizeof *tr->kt);
    return a->done && a->load_sp && tr->st && tr->kt ? 0 : -1;
}

static void answer_free(struct answer *a, struct qx_track *tr)
{
    crec_free(a->done);
    crec_free(a->load_sp);
    crec_free(tr->st);
    crec_free(tr->kt);
}

/* The path that answered the most bytes. */
static int answer_source(const struct answer *a)
{
    int best = 0;

    for (int s = 1; s < 5; s++)
        if (a->nsrc[s] > a->nsrc[best])
            best = s;
    return best;
}

/* Is the query valid, and is it answered by code bytes (*is_code)? */
static int check_query(crec_recording *rec, uint64_t t, uint64_t addr, size_t len,
                       uint8_t *buf, int *is_code, crec_error *err)
{
    int mapped, rc;

    if (len == 0 || addr + len < addr)
        return crec_error_set(err, CREC_ERR_ARG, "bad range");
    if (t > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", t, rec->end);
    rc = qx_code_bytes(rec, addr, len, buf, is_code, err);
    if (rc != CREC_OK || *is_code)
        return rc;
    rc = qx_ever_mapped(rec, addr, len, &mapped, err);
    if (rc == CREC_OK && !mapped)
        rc = crec_error_set(err, CREC_ERR_ARG, "address 0x%" PRIx64 " was never mapped", addr);
    return rc;
}

static int read_one(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
                    uint8_t *known, int *source, crec_error *err)
{
    struct answer a;
    struct qx_track tr;
    int is_code = 0, rc;

    memset(buf, 0, len);
    memset(known, 0, len);
    rc = check_query(rec, t, addr, len, buf, &is_code, err);
    if (rc != CREC_OK || is_code) {
        if (is_code) {
            memset(known, 1, len);
            *source = CREC_SRC_CODE;
        }
        return rc;
    }
    if (rec->nthr) /* several threads: the latest access of any of them */
        return qx_read_threads(rec, t, addr, len, buf, known, source, err);
    if (answer_init(&a, &tr, addr, len, t, buf, known) != 0) {
        answer_free(&a, &tr);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a query of %zu bytes", len);
    }
    if (rec->flags & CREC_OPEN_NO_INDEX)
        rc = replay_and_settle(rec, SIZE_MAX, t, &tr, &a, err);
    else if ((rc = qx_ensure_index(rec, err)) == CREC_OK && rec->ix->nspan > 0)
        rc = search_index(rec, &a, &tr, err);
    if (rc == CREC_OK)
        rc = settle_by_snapshots(rec, &a, t, err);
    for (size_t i = 0; i < len && rc == CREC_OK; i++)
        if (!a.done[i])
            answer_unknown(&a, i);
    *source = answer_source(&a);
    answer_free(&a, &tr);
    return rc;
}

/*
 * Paged code (docs/FORMAT.md, PAGED) holds only the pages the program ran:
 * a range of code over several pages is answered a page at a time, from the
 * code where it was recorded and as data elsewhere.  The source is the one
 * that answered the most bytes.
 */
static int read_at(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
                   uint8_t *known, int *source, crec_error *err)
{
    size_t nsrc[5] = {0}, best = 0;
    int rc;

    if (len <= CREC_PAGE_SIZE - addr % CREC_PAGE_SIZE || addr + len < addr ||
        !qx_in_code(rec, addr, len))
        return read_one(rec, t, addr, len, buf, known, source, err);
    for (size_t done = 0; done < len;) {
        uint64_t at = addr + done;
        size_t k = CREC_PAGE_SIZE - at % CREC_PAGE_SIZE;
        int src;
        k = k < len - done ? k : len - done;
        if ((rc = read_one(rec, t, at, k, buf + done, known + done, &src, err)) != CREC_OK)
            return rc;
        if (src >= 0 && src < 5)
            nsrc[src] += k;
        done += k;
    }
    for (size_t s = 1; s < 5; s++)
        if (nsrc[s] > nsrc[best])
            best = s;
    *source = (int)best;
    return CREC_OK;
}

int qx_read_at(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
               uint8_t *known, int *source, crec_error *err)
{
    return read_at(rec, t, addr, len, buf, known, source, err);
}

int crec_read_memory(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf,
                     uint8_t *known, int *source, crec_error *err)
{
    uint8_t *k = known ? known : crec_malloc(len ? len : 1);
    int src = 0, rc;

    if (!k)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a query of %zu bytes", len);
    rc = read_at(rec, rec->t, addr, len, buf, k, &src, err);
    if (qx_index_retry(rec, rc, err))
        rc = read_at(rec, rec->t, addr, len, buf, k, &src, err);
    if (source)
        *source = src;
    if (!known)
        crec_free(k);
    return rc;
}

int crec_read_thread_registers(crec_recording *rec, uint32_t tid, crec_regs *regs,
                               crec_error *err)
{
    crec_recording *th;
    uint64_t tt;
    int rc;

    if (!rec->nthr) {
        if (tid > 1)
            return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has one "
                                  "thread, 1)", tid);
        return crec_read_registers(rec, regs, err);
    }
    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        return rc;
    if (tid == 0)
        tid = crec_thread_at(rec, rec->t);
    if (tid < 1 || tid > rec->nthr || !(th = rec->thr[tid - 1]))
        return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has %zu threads, "
                              "1 to %zu)", tid, rec->nthr, rec->nthr);
    if (!qx_thread_time(rec, tid, rec->t, &tt)) {
        uint64_t start;
        crec_thread_time(rec, tid, 0, &start, NULL);
        return crec_error_set(err, CREC_ERR_ARG, "thread %u has not started at instruction %"
                              PRIu64 " (it starts at %" PRIu64 ")", tid, rec->t, start);
    }
    th->t = tt; /* its registers after its last instruction before t */
    return crec_read_registers(th, regs, err);
}

static int read_registers(crec_recording *rec, crec_regs *regs, crec_error *err);

int crec_read_registers(crec_recording *rec, crec_regs *regs, crec_error *err)
{
    int rc = read_registers(rec, regs, err);

    return qx_index_retry(rec, rc, err) ? read_registers(rec, regs, err) : rc;
}

static int read_registers(crec_recording *rec, crec_regs *regs, crec_error *err)
{
    crec_replay_qrun *q = NULL;
    int rc;

    if (rec->nthr)
        return crec_read_thread_registers(rec, rec->reg_tid, regs, err);

    if (rec->regs_valid && rec->regs_t == rec->t) {
        *regs = rec->regs_at_t;
        return CREC_OK;
    }
    for (size_t i = 0; i < rec->nkf; i++)
        if (rec->kfs[i].global_icount == rec->t) {
            rc = qx_need_kf(rec, i, err);
            if (rc == CREC_OK)
                *regs = rec->kfs[i].regs;
            return rc;
        }
    if (rec->ix && rec->ix->nspan > 0) /* from the restart point before t, if any */
        rc = qx_run_span(rec, crec_idx_span_at(rec->ix, rec->t), rec->t, NULL, NULL, &q, err);
    else
        rc = qx_run_checked(rec, qx_seg_of(rec, rec->t), NULL, rec->t, NULL, NULL, &q, err);
    if (rc == CREC_OK)
        rc = crec_replay_qrun_regs(q, regs, err);
    crec_replay_qrun_free(q);
    if (rc == CREC_OK) {
        rec->regs_valid = 1;
        rec->regs_t = rec->t;
        rec->regs_at_t = *regs;
    }
    return rc;
}

/* ---- watching a range ---------------------------------------------------- */

struct watch {
    crec_recording *rec;
    uint64_t addr;
    size_t len;
    uint8_t cur[64], curk[64];
    int have_store;            /* a store to the range is pending */
    uint64_t st_t, st_rip;
    uint8_t st_mask[64];
    char st_insn[160];
    int have_kernel;           /* a kernel write is pending its value */
    uint64_t k_t;
    int (*fn)(void *ctx, const crec_change *c);
    void *ctx;
    int stopped;
    uint64_t emitted;          /* changes reported so far */
};

static void watch_emit(struct watch *w, uint64_t t, uint64_t rip, const char *insn)
{
    crec_change c = {.t = t, .rip = rip, .value = w->cur, .known = w->curk, .len = w->len};

    snprintf(c.insn, sizeof c.insn, "%s", insn);
    w->emitted++;
    if (!w->stopped && w->fn(w->ctx, &c))
        w->stopped = 1;
}

static void watch_flush(struct watch *w, crec_replay_qrun *q)
{
    if (w->have_store) {
        int changed = 0;
        w->have_store = 0;
        for (size_t i = 0; i < w->len; i++) {
            uint8_t b;
            if (!w->st_mask[i] || crec_replay_qrun_read(q, &b, w->addr + i, 1) != 0)
                continue;
            if (!w->curk[i] || w->cur[i] != b)
                changed = 1;
            w->cur[i] = b, w->curk[i] = 1;
        }
        if (changed)
            watch_emit(w, w->st_t, w->st_rip, w->st_insn);
    }
}

/* Does a gap of a --start-at recording begin at t?  *to: where it ends. */
static int gap_at(const crec_recording *rec, uint64_t t, uint64_t *to)
{
    for (size_t i = 0; i < rec->marks.ngaps; i++)
        if (rec->marks.gaps[i].u.gap.from == t && t >= crec_start(rec)) {
            *to = rec->marks.gaps[i].u.gap.to;
            return 1;
        }
    return 0;
}

static void watch_kernel_emit(struct watch *w)
{
    uint64_t to;
    int src;

    if (!w->have_kernel)
        return;
    w->have_kernel = 0;
    /* a run over a gap drops the memory (the program changed it unrecorded):
     * the value is new where the next part starts, as its snapshot says */
    if (gap_at(w->rec, w->k_t, &to) &&
        qx_read_at(w->rec, to, w->addr, w->len, w->cur, w->curk, &src, NULL) == CREC_OK) {
        watch_emit(w, to, 0, "(not recorded: the program ran unrecorded before this part)");
        return;
    }
    watch_emit(w, w->k_t, 0, "(the kernel: a syscall or a new mapping)");
}

static void watch_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t a, uint64_t l)
{
    struct watch *w = ctx;
    uint64_t lo, hi;

    watch_flush(w, q);
    if (a >= w->addr + w->len || (l != UINT64_MAX && a + l <= w->addr))
        return;
    lo = a > w->addr ? a - w->addr : 0;
    hi = l == UINT64_MAX || a + l > w->addr + w->len ? w->len : a + l - w->addr;
    if (kind == 'k') {
        watch_kernel_emit(w);
        for (uint64_t i = lo; i < hi; i++)
            w->curk[i] = 0;
        w->have_kernel = 1;
        w->k_t = crec_replay_qrun_icount(q);
        return;
    }
    if (kind == 'r') {
        for (uint64_t i = lo; i < hi; i++)
            if (!w->curk[i] && crec_replay_qrun_read(q, &w->cur[i], w->addr + i, 1) == 0)
                w->curk[i] = 1;
        watch_kernel_emit(w);
        return;
    }
    watch_kernel_emit(w);
    uint64_t rip = crec_replay_qrun_rip(q);
    w->have_store = 1;
    w->st_rip = rip;
    w->st_t = crec_replay_qrun_icount_at(q, rip) + 1;
    crec_replay_qrun_describe(q, rip, w->st_insn, sizeof w->st_insn);
    memset(w->st_mask, 0, sizeof w->st_mask);
    for (uint64_t i = lo; i < hi; i++)
        w->st_mask[i] = 1;
}

/* Run q (NULL: a new run from the start of span sp) to the end of span sp. */
static int run_on(crec_recording *rec, size_t sp, struct watch *w, crec_replay_qrun **q,
                  crec_error *err)
{
    uint64_t end = qx_span_end(rec, sp);
    int rc;

    if (!*q)
        return qx_run_span(rec, sp, end, watch_access, w, q, err);
    rc = qx_continue(rec, *q, end, NULL, NULL, err);
    if (rc == CREC_OK && crec_replay_qrun_icount(*q) != end)
        rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay stopped at instruction %" PRIu64
                            ", not %" PRIu64, crec_replay_qrun_icount(*q), end);
    return rc;
}

/*
 * Replay every span that stores to the range (or whose kernel writes it).
 * A run that ends where the next such span starts goes on into it, instead
 * of building the memory map and translating the code again.
 */
static int watch_spans(crec_recording *rec, struct watch *w, crec_error *err)
{
    crec_replay_qrun *q = NULL;
    int rc = CREC_OK;

    for (size_t sp = 0; sp < rec->ix->nspan && !w->stopped && rc == CREC_OK; sp++) {
        if ((rc = crec_idx_need(rec->ix, sp, err)) != CREC_OK)
            break;
        if (!crec_idx_touches(rec->ix, sp, w->addr, w->len, 1)) {
            crec_replay_qrun_free(q); /* a gap: the next run starts afresh */
            q = NULL;
            continue;
        }
        rc = run_on(rec, sp, w, &q, err);
        if (rc == CREC_OK) {
            watch_flush(w, q);
            watch_kernel_emit(w);
        }
    }
    crec_replay_qrun_free(q);
    return rc;
}

static int watch(crec_recording *rec, uint64_t addr, size_t len,
                 int (*fn)(void *ctx, const crec_change *c), void *ctx, uint64_t *emitted,
                 crec_error *err);

int crec_watch(crec_recording *rec, uint64_t addr, size_t len,
               int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err)
{
    uint64_t emitted = 0;
    int rc = watch(rec, addr, len, fn, ctx, &emitted, err);

    /* again on an index built anew, unless changes were already reported */
    if (emitted == 0 && qx_index_retry(rec, rc, err))
        rc = watch(rec, addr, len, fn, ctx, &emitted, err);
    return rc;
}

static int watch(crec_recording *rec, uint64_t addr, size_t len,
                 int (*fn)(void *ctx, const crec_change *c), void *ctx, uint64_t *emitted,
                 crec_error *err)
{
    struct watch w;
    int src, rc;

    if (len < 1 || len > 64)
        return crec_error_set(err, CREC_ERR_ARG, "watch 1 to 64 bytes, not %zu", len);
    if (rec->nthr) { /* code is not watched */
        int is_code = 0;
        uint8_t buf[64];
        if ((rc = check_query(rec, 0, addr, len, buf, &is_code, err)) != CREC_OK)
            return rc;
        if (is_code) {
            uint8_t k[64];
            crec_change c = {0, 0, "(initial)", buf, k, len, 0};
            memset(k, 1, sizeof k);
            fn(ctx, &c);
            return CREC_OK;
        }
        return qx_watch_threads(rec, addr, len, fn, ctx, err);
    }
    memset(&w, 0, sizeof w);
    w.rec = rec, w.addr = addr, w.len = len, w.fn = fn, w.ctx = ctx;
    /* the initial value: at the recording's start (a ring dropped what came before) */
    rc = read_at(rec, crec_start(rec), addr, len, w.cur, w.curk, &src, err);
    /* every span is read: a bad index is found before anything is reported */
    if (rc == CREC_OK && src != CREC_SRC_CODE && (rc = qx_ensure_index(rec, err)) == CREC_OK)
        rc = crec_idx_need_all(rec->ix, err);
    if (rc != CREC_OK)
        return rc;
    watch_emit(&w, crec_start(rec), 0, "(initial)");
    if (src != CREC_SRC_CODE) /* code is not watched */
        rc = watch_spans(rec, &w, err);
    *emitted = w.emitted;
    return rc;
}
