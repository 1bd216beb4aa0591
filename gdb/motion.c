/*
 * motion.c - where a continue stops, forwards and backwards in time.
 *
 * A stop is at a time t (the state after t instructions):
 *   - a breakpoint at address A: the instruction at t is at A (it has not
 *     run yet), found by crec_exec_run with A among its `addrs`;
 *   - a watchpoint: forwards, just after the instruction w that made the
 *     access (t = w+1, as the hardware reports it); backwards, just before
 *     it (t = w: gdb shows the value before and after the write, at the
 *     writing line, as rr does).  Watched accesses are found through the
 *     index (crec_find_access), which replays only the spans that touch
 *     the watched bytes.
 * When a breakpoint and a watchpoint give the same state the watchpoint is
 * reported.
 *
 * Backwards, the breakpoint search never replays from instruction 0: it
 * runs [crec_restart_before(hi - 1), hi), keeps the last hit, and goes one
 * window further back when there is none, each window twice as long as the
 * one before, down to the watchpoint's hit if there is one.  The hits of
 * the last window are kept (gdb_hits), so that the next reverse-continue
 * of a conditional breakpoint that gdb found false is answered without a
 * replay.  Forwards, long runs go in pieces so that gdb's ^C is seen.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdb/gdb_int.h"

/* The first forward piece, and the most a piece or a window may grow to. */
#define PIECE_FIRST 4000000ull
#define PIECE_MAX 512000000ull
/* A piece that took less than this doubles the next. */
#define PIECE_SECONDS 0.25
/* The most hits of one window kept for the next reverse-continue. */
#define HITS_KEPT 4096

struct gdb_hits {
    uint64_t *addrs;   /* the breakpoint addresses they are for */
    size_t naddrs;
    uint64_t lo, hi;   /* [lo, hi) was searched: every hit in it is in t[] */
    uint64_t *t;       /* the hits, in time order */
    uint32_t *tid;
    size_t n;
};

void gdb_hits_free(gdb_hits *h)
{
    if (!h)
        return;
    free(h->addrs);
    free(h->t);
    free(h->tid);
    free(h);
}

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* What a search looks for, split by kind. */
struct targets {
    uint64_t *bp;      /* breakpoint addresses, sorted, once each */
    size_t nbp;
    int hw_only;       /* only Z1 breakpoints: report hwbreak */
    crec_range *w;     /* watched ranges, with their points */
    const gdb_point **wp;
    size_t nw;
    int writes_only;   /* every watchpoint is a Z2 */
};

static void targets_free(struct targets *g)
{
    free(g->bp);
    free(g->w);
    free(g->wp);
}

static int targets_of(const gdb_search *s, struct targets *g, crec_error *err)
{
    size_t n = s->npoints ? s->npoints : 1;

    memset(g, 0, sizeof *g);
    g->bp = malloc(n * sizeof *g->bp);
    g->w = malloc(n * sizeof *g->w);
    g->wp = malloc(n * sizeof *g->wp);
    if (!g->bp || !g->w || !g->wp) {
        targets_free(g);
        err->code = CREC_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return CREC_ERR_NOMEM;
    }
    g->hw_only = 1;
    g->writes_only = 1;
    for (size_t i = 0; i < s->npoints; i++) {
        const gdb_point *p = &s->points[i];
        if (p->type <= 1) {
            g->bp[g->nbp++] = p->addr;
            if (p->type == 0)
                g->hw_only = 0;
        } else {
            g->w[g->nw] = (crec_range){p->addr, p->len};
            g->wp[g->nw++] = p;
            if (p->type != 2)
                g->writes_only = 0;
        }
    }
    qsort(g->bp, g->nbp, sizeof *g->bp, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < g->nbp; i++)
        if (k == 0 || g->bp[k - 1] != g->bp[i])
            g->bp[k++] = g->bp[i];
    g->nbp = k;
    return CREC_OK;
}

/* The watchpoint an access hits, or NULL: Z2 takes stores and kernel
 * writes, Z3 loads, Z4 all three. */
static const gdb_point *watch_hit(const struct targets *g, const crec_access *a)
{
    for (size_t i = 0; i < g->nw; i++) {
        const gdb_point *p = g->wp[i];
        int write = a->kind != CREC_ACCESS_READ;
        if ((p->type == 2 && !write) || (p->type == 3 && write))
            continue;
        if (a->len != UINT64_MAX && (a->addr >= p->addr + p->len || a->addr + a->len <= p->addr))
            continue;
        return p;
    }
    return NULL;
}

static int match_cb(void *ctx, const crec_access *a)
{
    return watch_hit(ctx, a) != NULL;
}

static void watch_stop(const struct targets *g, const crec_access *a, uint64_t t, gdb_stop *st)
{
    const gdb_point *p = watch_hit(g, a);

    memset(st, 0, sizeof *st);
    st->kind = GDB_STOP_WATCH;
    st->t = t;
    st->tid = a->tid;
    st->watch_type = p ? p->type : 2;
    /* the address gdb matches against its watchpoints: inside the range */
    st->watch_addr = p && (a->len == UINT64_MAX || a->addr < p->addr) ? p->addr : a->addr;
}

static void bp_stop(const struct targets *g, uint64_t t, uint32_t tid, gdb_stop *st)
{
    memset(st, 0, sizeof *st);
    st->kind = g->hw_only ? GDB_STOP_HWBREAK : GDB_STOP_SWBREAK;
    st->t = t;
    st->tid = tid;
}

static void plain_stop(int kind, uint64_t t, uint32_t tid, gdb_stop *st)
{
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->t = t;
    st->tid = tid;
}

/* ---- forwards -------------------------------------------------------------- */

struct fwd {
    uint64_t skip;     /* the time we start from: its breakpoint is behind us */
    int hit;
    uint64_t t;
    uint32_t tid;
};

static int fwd_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct fwd *f = ctx;

    (void)x, (void)rip;
    if (t == f->skip)
        return 0;
    f->hit = 1;
    f->t = t;
    f->tid = tid;
    return 1;
}

int gdb_forward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err)
{
    uint64_t end = crec_length(s->rec), limit = end, piece = PIECE_FIRST, pos = t;
    crec_access wa = {0};
    struct targets g;
    int wfound = 0, rc;

    if ((rc = targets_of(s, &g, err)) != CREC_OK)
        return rc;
    /* the next watched access, through the index; breakpoints need only be
     * looked for up to it */
    if (g.nw > 0) {
        rc = crec_find_access(s->rec, g.w, g.nw, g.writes_only, match_cb, &g, t, 0, &wa, &wfound,
                              err);
        if (rc != CREC_OK)
            goto out;
        if (wfound)
            limit = wa.t + 1;
    }
    while (g.nbp > 0 && pos < limit) {
        struct fwd f = {t, 0, 0, 0};
        crec_observer obs = {0};
        uint64_t to = limit - pos > piece ? pos + piece : limit;
        double t0 = now_seconds();
        obs.ctx = &f;
        obs.insn = fwd_insn;
        obs.addrs = g.bp;
        obs.n_addrs = g.nbp;
        /* a breakpoint up to the watched access's instruction comes first */
        rc = crec_exec_run(s->rec, pos, to, &obs, NULL, err);
        if (rc != CREC_OK)
            goto out;
        if (f.hit) {
            bp_stop(&g, f.t, f.tid, stop);
            goto out;
        }
        pos = to;
        if (pos < limit && s->conn && gdb_conn_interrupted(s->conn)) {
            plain_stop(GDB_STOP_INTERRUPT, pos, s->tid, stop);
            goto out;
        }
        if (now_seconds() - t0 < PIECE_SECONDS && piece < PIECE_MAX)
            piece *= 2;
    }
    if (wfound)
        watch_stop(&g, &wa, wa.t + 1, stop);
    else
        plain_stop(GDB_STOP_END, end, s->tid, stop);
out:
    targets_free(&g);
    return rc;
}

/* ---- backwards ------------------------------------------------------------- */

struct bwd {
    gdb_hits *keep;    /* every hit of the window (the last HITS_KEPT) */
    int hit;
    uint64_t t;
    uint32_t tid;
};

static int bwd_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct bwd *b = ctx;
    gdb_hits *h = b->keep;

    (void)x, (void)rip;
    b->hit = 1;
    b->t = t;
    b->tid = tid;
    if (h && h->t) {
        if (h->n == HITS_KEPT) { /* keep the newest: the window now starts later */
            memmove(h->t, h->t + 1, (HITS_KEPT - 1) * sizeof *h->t);
            memmove(h->tid, h->tid + 1, (HITS_KEPT - 1) * sizeof *h->tid);
            h->n--;
            h->lo = h->t[0] + 1 > h->lo ? h->t[0] + 1 : h->lo;
        }
        h->t[h->n] = t;
        h->tid[h->n++] = tid;
    }
    return 0; /* the last hit of the window is the one: run on */
}

/* Are the kept hits for these breakpoints? */
static int hits_for(const gdb_hits *h, const struct targets *g)
{
    return h && h->t && h->naddrs == g->nbp &&
           memcmp(h->addrs, g->bp, g->nbp * sizeof *g->bp) == 0;
}

/* Keep the hits of a window about to be searched, for these breakpoints. */
static void hits_reset(gdb_hits *h, const struct targets *g, uint64_t lo, uint64_t hi)
{
    if (!h)
        return;
    if (!hits_for(h, g)) {
        uint64_t *a = malloc((g->nbp ? g->nbp : 1) * sizeof *a);
        if (!h->t)
            h->t = malloc(HITS_KEPT * sizeof *h->t);
        if (!h->tid)
            h->tid = malloc(HITS_KEPT * sizeof *h->tid);
        free(h->addrs);
        h->addrs = a;
        if (!a || !h->t || !h->tid) {
            free(h->t);
            free(h->tid);
            h->t = NULL;
            h->tid = NULL;
            h->naddrs = 0;
            return;
        }
        memcpy(a, g->bp, g->nbp * sizeof *a);
        h->naddrs = g->nbp;
    }
    h->lo = lo;
    h->hi = hi;
    h->n = 0;
}

gdb_hits *gdb_hits_new(void)
{
    return calloc(1, sizeof(gdb_hits));
}

int gdb_backward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err)
{
    crec_access wa = {0};
    struct targets g;
    uint64_t floor = 0, hi = t, size = 0;
    int wfound = 0, rc;

    if ((rc = targets_of(s, &g, err)) != CREC_OK)
        return rc;
    if (g.nw > 0) { /* the last watched access before t: a lookup in the index */
        rc = crec_find_access(s->rec, g.w, g.nw, g.writes_only, match_cb, &g, t, 1, &wa, &wfound,
                              err);
        if (rc != CREC_OK)
            goto out;
        if (wfound)
            floor = wa.t + 1; /* a breakpoint at wa.t itself: the watchpoint wins */
    }
    while (g.nbp > 0 && hi > floor) {
        gdb_hits *h = s->hits;
        /* the last search's window answers when it covers hi */
        if (hits_for(h, &g) && hi > h->lo && hi <= h->hi) {
            size_t i = h->n;
            while (i > 0 && h->t[i - 1] >= hi)
                i--;
            if (i > 0 && h->t[i - 1] >= floor) {
                bp_stop(&g, h->t[i - 1], h->tid[i - 1], stop);
                goto out;
            }
            hi = h->lo > floor ? h->lo : floor;
            continue;
        }
        uint64_t back = size ? size : 1;
        uint64_t lo = crec_restart_before(s->rec, hi > back ? hi - back : 0);
        if (lo < floor)
            lo = floor;
        struct bwd b = {h, 0, 0, 0};
        crec_observer obs = {0};
        obs.ctx = &b;
        obs.insn = bwd_insn;
        obs.addrs = g.bp;
        obs.n_addrs = g.nbp;
        hits_reset(h, &g, lo, hi);
        rc = crec_exec_run(s->rec, lo, hi, &obs, NULL, err);
        if (rc != CREC_OK) {
            if (h)
                h->naddrs = 0, h->hi = 0; /* what it holds is not a whole window */
            goto out;
        }
        if (b.hit) {
            bp_stop(&g, b.t, b.tid, stop);
            goto out;
        }
        size = size ? size * 2 : (hi - lo) * 2;
        if (size > PIECE_MAX)
            size = PIECE_MAX;
        hi = lo;
        if (hi > floor && s->conn && gdb_conn_interrupted(s->conn)) {
            plain_stop(GDB_STOP_INTERRUPT, hi, s->tid, stop);
            goto out;
        }
    }
    if (wfound)
        watch_stop(&g, &wa, wa.t, stop);
    else
        plain_stop(GDB_STOP_BEGIN, 0, s->tid, stop);
out:
    targets_free(&g);
    return rc;
}
