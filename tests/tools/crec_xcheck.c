/*
 * crec_xcheck.c - cross-check the query engine: N random (address, time)
 * queries answered through the index must equal what one sequential
 * replay of the whole recording, from instruction 0, says about the same
 * bytes at the same times.
 *
 *   crec_xcheck FILE N [SEED]
 *
 * Addresses are drawn, a quarter each, in the stack, the heap and the
 * globals (lines the index says segments touched, or anywhere in snapshot
 * pages: memory the program may never touch) and in the buffers syscalls
 * wrote (kernel); times are uniform over the run.  The oracle is independent of the index: its own reader,
 * one replay from key frame 0 that stops at each query time in order and
 * keeps, for every queried byte, the last access to it.  A byte last
 * loaded or stored is read from replay memory; one the kernel wrote last
 * is known only from a snapshot taken since, one never touched from the
 * newest snapshot; code bytes are the code.
 *
 * A recording of several threads: the index of a thread drawn at random
 * gives each address, and the oracle is a whole-program replay (one
 * memory, every thread in the recorded order) from instruction 0 to each
 * query's time.
 *
 * Prints one line per difference, then
 *   "xcheck: N queries, M equal; stack A heap B globals C kernel D other E; ..."
 * and exits 0 when all are equal, 1 otherwise, 2 on bad usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "crec.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

#define QLEN 8

enum region { R_STACK, R_HEAP, R_GLOBALS, R_KERNEL, R_OTHER, R_N };
static const char *region_name[R_N] = {"stack", "heap", "globals", "kernel", "other"};

struct query {
    uint64_t addr, t;
    int region;
    uint8_t val[QLEN], known[QLEN]; /* through the index */
    int path;
    uint8_t st[QLEN];               /* oracle: last access, 0 r w k */
    uint64_t kt[QLEN];              /* ... the kernel's write time */
};

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ---- where addresses come from --------------------------------------------- */

struct ranges {
    uint64_t v[2 * 4096];
    size_t n;
};

static void ranges_add(struct ranges *r, uint64_t a, uint64_t len)
{
    if (r->n < 4096 && len > 0)
        r->v[2 * r->n] = a, r->v[2 * r->n + 1] = a + len, r->n++;
}

static int ranges_hold(const struct ranges *r, uint64_t a)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[2 * i] <= a && a < r->v[2 * i + 1])
            return 1;
    return 0;
}

/*
 * Regions, from the events: the stack is the mapping that holds the first
 * key frame's RSP; globals are the writable mappings of the initial map
 * that follow an executable one (the data of the program and its
 * libraries); the heap is the brk area and the anonymous mappings made
 * later.
 */
static struct ranges stack, heap, globals;

static void scan_listing0(crec_recording *rec, const crec_fmt_keyframe *kf0, crec_fmt_cursor *c)
{
    uint64_t rsp0 = kf0->regs.gpr[CREC_RSP], code_end = 0;
    uint64_t end = rec->nkf > 1 ? rec->kfs[1].events_off : UINT64_MAX;
    const uint8_t *body;
    size_t len;
    int kind;

    while (crec_fmt_cursor_offset(c) < end &&
           crec_fmt_cursor_next(c, &kind, &body, &len, NULL) == CREC_OK) {
        crec_fmt_event ev;
        uint64_t a, n;
        if (kind != CREC_FMT_K_MMAP || crec_fmt_ev_decode(crec_fmt_reader_header(rec->r)->version, kind, body, len,
                                                                  &ev, NULL) != CREC_OK ||
            !(ev.u.mmap.flags & CREC_FMT_EV_LISTING))
            break;
        a = ev.u.mmap.addr, n = ev.u.mmap.len;
        if (a <= rsp0 && rsp0 < a + n)
            ranges_add(&stack, a, n);
        else if ((ev.u.mmap.prot & CREC_FMT_PROT_WRITE) && code_end && a - code_end < (2 << 20))
            ranges_add(&globals, a, n);
        if (ev.u.mmap.prot & CREC_FMT_PROT_EXEC)
            code_end = a + n;
    }
}

static void scan_map(crec_recording *rec, const crec_fmt_keyframe *kf0)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind;

    if (crec_fmt_cursor_open(rec->r, CREC_FMT_S_EVENTS, rec->kfs[0].tid, rec->kfs[0].events_off,
                             &c, NULL) != CREC_OK)
        return;
    scan_listing0(rec, kf0, c);
    while (crec_fmt_cursor_next(c, &kind, &body, &len, NULL) == CREC_OK) {
        crec_fmt_event ev;
        if (kind != CREC_FMT_K_MMAP || crec_fmt_ev_decode(crec_fmt_reader_header(rec->r)->version, kind, body, len,
                                                                  &ev, NULL) != CREC_OK ||
            (ev.u.mmap.flags & CREC_FMT_EV_LISTING))
            continue;
        if (ev.u.mmap.op == CREC_FMT_MM_BRK ||
            (ev.u.mmap.op == CREC_FMT_MM_MAP && (ev.u.mmap.prot & CREC_FMT_PROT_WRITE) &&
             !(ev.u.mmap.flags & CREC_FMT_EV_HAS_NAME)))
            ranges_add(&heap, ev.u.mmap.addr, ev.u.mmap.len);
    }
    crec_fmt_cursor_free(c);
}

static int classify(uint64_t a)
{
    if (ranges_hold(&stack, a))
        return R_STACK;
    if (ranges_hold(&globals, a))
        return R_GLOBALS;
    if (ranges_hold(&heap, a))
        return R_HEAP;
    return R_OTHER;
}

/*
 * One random query: a kernel-written buffer (how 0), anywhere in a snapshot
 * page (how 1) or a touched line (else).  @return 0 if the span drawn has
 * nothing of the kind.
 */
static int pick(crec_recording *rec, unsigned how, struct query *q)
{
    const crec_idx *ix = rec->ix;
    size_t th;

    if (rec->nthr) { /* a thread's index, drawn at random */
        th = (size_t)(rnd() % rec->nthr);
        if (!rec->thr[th] || !rec->thr[th]->ix || rec->thr[th]->ix->nspan == 0)
            return 0;
        ix = rec->thr[th]->ix;
    }
    size_t s = (size_t)(rnd() % ix->nspan);
    const crec_idx_span *g = &ix->spans[s];

    q->t = rnd() % (crec_length(rec) + 1);
    if (how == 0) { /* a buffer the kernel wrote */
        if (g->nk == 0)
            return 0;
        size_t k = (size_t)(rnd() % g->nk);
        q->addr = g->k[2 * k] + rnd() % g->k[2 * k + 1];
        q->region = R_KERNEL;
        return 1;
    }
    if (how == 1 && rec->nsnap > 0) {
        q->addr = rec->snap[rnd() % rec->nsnap].addr + rnd() % (CREC_PAGE_SIZE - QLEN);
    } else if (g->ntouch > 0) {
        q->addr = (g->touch[rnd() % g->ntouch] << CREC_IDX_LINE_SHIFT) + rnd() % 64;
    } else {
        return 0;
    }
    q->region = classify(q->addr);
    return 1;
}

/*
 * Query i is drawn in region i % 4 (stack, heap, globals, kernel), so that
 * every region a recording has gets its share whatever the seed; a region
 * not found in many draws (the recording may have none) takes any query.
 */
static void pick_in_region(crec_recording *rec, int i, struct query *q)
{
    static const int order[4] = {R_STACK, R_HEAP, R_GLOBALS, R_KERNEL};
    int want = order[i % 4];

    for (int tries = 0; tries < 200000; tries++) {
        unsigned how = want == R_KERNEL ? 0 : 1 + (unsigned)(rnd() % 2);
        if (pick(rec, how, q) && q->region == want)
            return;
    }
    while (!pick(rec, (unsigned)(rnd() % 8), q))
        ;
}

/* ---- the oracle: one sequential replay ------------------------------------ */

struct oracle {
    struct query **byaddr; /* sorted by address */
    size_t n;
};

static int cmp_addr(const void *a, const void *b)
{
    const struct query *x = *(struct query *const *)a, *y = *(struct query *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_time(const void *a, const void *b)
{
    const struct query *x = *(struct query *const *)a, *y = *(struct query *const *)b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static void oracle_access(void *ctx, crec_replay_qrun *run, int kind, uint64_t a, uint64_t l)
{
    struct oracle *o = ctx;
    size_t lo = 0, hi = o->n;
    uint64_t end = l == UINT64_MAX ? UINT64_MAX : a + l;

    if (l == UINT64_MAX)
        a = 0;
    while (lo < hi) { /* first query that may end after a */
        size_t m = lo + (hi - lo) / 2;
        if (o->byaddr[m]->addr + QLEN <= a)
            lo = m + 1;
        else
            hi = m;
    }
    for (size_t i = lo; i < o->n && o->byaddr[i]->addr < end; i++) {
        struct query *q = o->byaddr[i];
        for (int b = 0; b < QLEN; b++)
            if (q->addr + b >= a && q->addr + b < end) {
                q->st[b] = (uint8_t)kind;
                q->kt[b] = crec_replay_qrun_icount(run);
            }
    }
}

/* What the oracle says of byte b of q, with the run stopped at q->t. */
static int oracle_byte(crec_recording *rec, crec_replay_qrun *run, const struct query *q, int b,
                       uint8_t *v)
{
    uint64_t a = q->addr + b;
    const struct qx_snap_page *p;
    int is_code = 0;

    if (qx_code_bytes(rec, a, 1, v, &is_code, NULL) == CREC_OK && is_code)
        return 1;
    if (q->st[b] == 'r' || q->st[b] == 'w')
        return crec_replay_qrun_read(run, v, a, 1) == 0;
    p = qx_snap_find(rec, a & ~(CREC_PAGE_SIZE - 1), q->t);
    if (!p || (q->st[b] == 'k' && p->icount < q->kt[b]))
        return 0;
    return qx_snap_byte(rec, p, a, v, NULL) == CREC_OK;
}

static int compare(crec_recording *rec, crec_replay_qrun *run, const struct query *q)
{
    for (int b = 0; b < QLEN; b++) {
        uint8_t v = 0;
        int known = oracle_byte(rec, run, q, b, &v);
        if (known != q->known[b] || (known && v != q->val[b])) {
            printf("differ 0x%" PRIx64 "@%" PRIu64 " (%s) byte %d: index %s%02x (path %d), "
                   "sequential replay %s%02x (last access '%c' at %" PRIu64 ")\n",
                   q->addr, q->t, region_name[q->region], b, q->known[b] ? "" : "?",
                   q->val[b], q->path, known ? "" : "?", v, q->st[b] ? q->st[b] : '-',
                   q->kt[b]);
            return 1;
        }
    }
    return 0;
}

static int run_oracle(crec_recording *rec, crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                      size_t nkf, struct query *qs, size_t n, int *bad)
{
    struct query **byaddr = malloc(n * sizeof *byaddr), **bytime = malloc(n * sizeof *bytime);
    struct oracle o = {byaddr, n};
    crec_replay_watch w = {oracle_access, NULL, &o};
    crec_replay_qrun *q = NULL;
    crec_error err = {0};
    int rc;

    for (size_t i = 0; i < n; i++)
        byaddr[i] = bytime[i] = &qs[i];
    qsort(byaddr, n, sizeof *byaddr, cmp_addr);
    qsort(bytime, n, sizeof *bytime, cmp_time);
    if (rec->nthr) { /* several threads: the whole program from 0 to each time */
        rc = CREC_OK;
        for (size_t i = 0; i < n; i++) {
            memset(bytime[i]->st, 0, sizeof bytime[i]->st);
            o.byaddr = &bytime[i], o.n = 1;
            rc = crec_replay_whole_query(r, kfs, nkf, bytime[i]->t, &w, &q, &err);
            if (rc != CREC_OK)
                break;
            *bad += compare(rec, q, bytime[i]);
            crec_replay_qrun_free(q);
            q = NULL;
        }
        goto out;
    }
    rc = crec_replay_query(r, kfs, nkf, 0, NULL, bytime[0]->t, &w, &q, &err);
    for (size_t i = 0; rc == CREC_OK && i < n; i++) {
        rc = crec_replay_qrun_continue(q, bytime[i]->t, &err);
        if (rc == CREC_OK && crec_replay_qrun_icount(q) != bytime[i]->t)
            rc = crec_error_set(&err, CREC_ERR_DIVERGENCE, "the sequential replay stopped at "
                                "%" PRIu64 ", not %" PRIu64, crec_replay_qrun_icount(q),
                                bytime[i]->t);
        if (rc == CREC_OK)
            *bad += compare(rec, q, bytime[i]);
    }
out:
    if (rc != CREC_OK)
        fprintf(stderr, "crec_xcheck: sequential replay: %s\n", err.msg);
    crec_replay_qrun_free(q);
    free(byaddr);
    free(bytime);
    return rc;
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    uint64_t ib, tb;
    int built, bad = 0, n, nregion[R_N] = {0}, npath[5] = {0};
    struct query *qs;
    crec_fmt_reader *r = NULL;
    crec_fmt_keyframe *kfs = NULL;
    size_t nkf = 0;

    if (argc < 3 || (n = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: crec_xcheck FILE N [SEED]\n");
        return 2;
    }
    if (argc > 3)
        rng = strtoull(argv[3], NULL, 0) | 1;
    if (crec_open(argv[1], 0, &rec, &err) || crec_index_info(rec, &ib, &tb, &built, &err)) {
        fprintf(stderr, "crec_xcheck: %s\n", err.msg);
        return 1;
    }
    for (size_t t = 0; t < rec->nthr; t++)
        if (rec->thr[t] && crec_idx_need_all(rec->thr[t]->ix, &err)) {
            fprintf(stderr, "crec_xcheck: %s\n", err.msg);
            return 1;
        }
    if (!rec->nthr && crec_idx_need_all(rec->ix, &err)) {
        fprintf(stderr, "crec_xcheck: %s\n", err.msg);
        return 1;
    }
    if (!rec->nthr && rec->ix->nspan == 0) {
        fprintf(stderr, "crec_xcheck: the recording has no segment\n");
        return 1;
    }
    /* the oracle's own reader and key frames: nothing from the index */
    if (crec_fmt_reader_open(argv[1], &r, &err) ||
        crec_replay_load_keyframes(r, &kfs, &nkf, &err)) {
        fprintf(stderr, "crec_xcheck: %s\n", err.msg);
        return 1;
    }
    scan_map(rec, &kfs[0]);
    qs = calloc((size_t)n, sizeof *qs);
    for (int i = 0; i < n; i++) {
        struct query *q = &qs[i];
        pick_in_region(rec, i, q);
        if (crec_seek(rec, q->t, &err) ||
            crec_read_memory(rec, q->addr, QLEN, q->val, q->known, &q->path, &err)) {
            printf("query 0x%" PRIx64 "@%" PRIu64 ": %s\n", q->addr, q->t, err.msg);
            return 1;
        }
        nregion[q->region]++;
        npath[q->path]++;
    }
    if (run_oracle(rec, r, kfs, nkf, qs, (size_t)n, &bad) != CREC_OK)
        return 1;
    printf("xcheck: %d queries, %d equal; stack %d heap %d globals %d kernel %d other %d; "
           "paths: index-values %d index+replay %d snapshot %d code %d unknown %d; index %" PRIu64
           " bytes, trace %" PRIu64 " bytes\n", n, n - bad, nregion[R_STACK], nregion[R_HEAP],
           nregion[R_GLOBALS], nregion[R_KERNEL], nregion[R_OTHER], npath[CREC_SRC_INDEX],
           npath[CREC_SRC_REPLAY],
           npath[CREC_SRC_SNAPSHOT], npath[CREC_SRC_CODE], npath[CREC_SRC_UNKNOWN], ib, tb);
    free(qs);
    crec_free(kfs);
    crec_fmt_reader_free(r);
    crec_close(rec);
    return bad ? 1 : 0;
}
