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
 * Breakpoints have no index, so they are searched for by replaying, and
 * the session remembers what it learnt (gdb_memo): the timeline is cut in
 * buckets of 2^20 instructions, and for each bucket a search ran over
 * whole, which breakpoint addresses were looked for and which of them ran,
 * and the code it ran (the byte ranges of its basic blocks, measured once
 * per block with Capstone; at most CODE_RANGES ranges, else "too much").
 * A bucket known to run none of the breakpoints now set is passed over
 * without a replay.  That matters because gdb always has breakpoints of
 * its own (the dynamic loader's, for shared library events): without the
 * memory every watchpoint search would replay everything between now and
 * the write; and once a stretch has been run through, a breakpoint
 * anywhere its code does not go costs nothing there.
 *
 * Backwards, the search never replays from instruction 0: it runs the
 * buckets newest first, in windows that double, from the bucket holding
 * now down to the watchpoint's hit if there is one, and stops at the
 * newest window with a hit (its last hit).  The hits of the last window
 * are kept too, so that the next reverse-continue of a conditional
 * breakpoint that gdb found false is answered without a replay.
 * Forwards, long runs go in pieces so that gdb's ^C is seen.
 */
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdb/gdb_int.h"

/* The first forward piece, and the most a piece may grow to (a forward run
 * stops at its first hit, so only ^C wants pieces at all). */
#define PIECE_FIRST 4000000ull
#define PIECE_MAX 512000000ull
/* The most a backward window may grow to: a window runs to its end before
 * its last hit is known, so a long one would replay far past the hit. */
#define WINDOW_MAX 64000000ull
/* A piece that took less than this doubles the next. */
#define PIECE_SECONDS 0.25
/* The most hits of one window kept for the next reverse-continue. */
#define HITS_KEPT 4096
/* The buckets of the timeline: 2^20 instructions (tests use smaller). */
#define BUCKET_SHIFT 20
/* The most code ranges a bucket's summary holds. */
#define CODE_RANGES 256

/* What the searches learnt about one bucket run over whole. */
struct bucket {
    uint64_t *searched; /* breakpoint addresses looked for, sorted */
    uint64_t *hit;      /* those that ran in the bucket, sorted */
    uint32_t nsearched, nhit;
    uint64_t *code;     /* the code it ran: sorted, disjoint [start, end) pairs */
    uint32_t ncode;     /* ranges in code */
    uint8_t code_state; /* 0 unknown, 1 code[] is all it ran, 2 too much code */
};

/* The byte length of a basic block, by its address. */
struct blen {
    uint64_t addr;     /* 0: empty slot */
    uint32_t n;        /* instructions (a run's last block may be cut short) */
    uint32_t len;
};

struct gdb_memo {
    uint64_t end;       /* the recording's length */
    unsigned shift;     /* buckets of 2^shift instructions */
    struct bucket *b;
    size_t nb;
    /* the hits of the last backward window */
    uint64_t *addrs;    /* the breakpoint addresses they are for */
    size_t naddrs;
    uint64_t lo, hi;    /* [lo, hi) was searched: every hit in it is in t[] */
    uint64_t *t;        /* the hits, in time order */
    uint32_t *tid;
    size_t n;
    /* block lengths, measured once each (open addressing) */
    struct blen *blens;
    size_t nblens, capblens;
    csh cs;
    int cs_open;
};

gdb_memo *gdb_memo_new(uint64_t end, unsigned shift)
{
    gdb_memo *m = calloc(1, sizeof *m);

    if (!m)
        return NULL;
    m->end = end;
    m->shift = shift ? shift : BUCKET_SHIFT;
    m->nb = (size_t)(end >> m->shift) + 1;
    m->b = calloc(m->nb, sizeof *m->b);
    if (!m->b) {
        free(m);
        return NULL;
    }
    return m;
}

void gdb_memo_free(gdb_memo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nb; i++) {
        free(m->b[i].searched);
        free(m->b[i].hit);
        free(m->b[i].code);
    }
    free(m->b);
    free(m->blens);
    if (m->cs_open)
        cs_close(&m->cs);
    free(m->addrs);
    free(m->t);
    free(m->tid);
    free(m);
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

static int sorted_has(const uint64_t *a, size_t n, uint64_t v)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] == v)
            return 1;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* *a (sorted, *n long) becomes its union with b (sorted).  On no memory it
 * is left as it was: a bucket then only knows less. */
static void merge_into(uint64_t **a, uint32_t *n, const uint64_t *b, size_t nb)
{
    uint64_t *out = malloc((*n + nb ? *n + nb : 1) * sizeof *out);
    size_t i = 0, j = 0, k = 0;

    if (!out)
        return;
    while (i < *n || j < nb) {
        uint64_t v = j >= nb || (i < *n && (*a)[i] <= b[j]) ? (*a)[i++] : b[j++];
        if (k == 0 || out[k - 1] != v)
            out[k++] = v;
    }
    free(*a);
    *a = out;
    *n = (uint32_t)k;
}

/* Is addr inside one of the sorted, disjoint ranges r[0..n)? */
static int in_ranges(const uint64_t *r, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;

    while (lo < hi) { /* the last range starting at or before addr */
        size_t mid = lo + (hi - lo) / 2;
        if (r[2 * mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && addr < r[2 * (lo - 1) + 1];
}

/* Does bucket i surely not run any of the breakpoints bp[0..n)? */
static int bucket_clean(const gdb_memo *m, size_t i, const uint64_t *bp, size_t n)
{
    const struct bucket *b;

    if (!m || i >= m->nb)
        return 0;
    b = &m->b[i];
    for (size_t k = 0; k < n; k++) {
        int searched = sorted_has(b->searched, b->nsearched, bp[k]);
        if (searched && sorted_has(b->hit, b->nhit, bp[k]))
            return 0; /* it runs there */
        if (!searched && !(b->code_state == 1 && !in_ranges(b->code, b->ncode, bp[k])))
            return 0; /* not known not to */
    }
    return 1;
}

/* ---- the code a run runs ------------------------------------------------------ */

/* The byte length of the block of n instructions at addr, decoded with
 * Capstone; 15 bytes an instruction (the most x86 has) when it can't be,
 * which only makes the summary say more code ran than did.  Kept out of
 * line: its buffers would cost every block a deeper stack. */
static __attribute__((noinline)) uint32_t block_measure(gdb_memo *m, crec_exec *x,
                                                        uint64_t addr, uint32_t n)
{
    uint32_t worst = n < 4096 / 15 ? 15 * n : 4095, len = worst;
    uint8_t code[4096], known[4096];
    crec_error err = {0};
    cs_insn *insn = NULL;
    size_t have = 0;

    if (!m->cs_open && cs_open(CS_ARCH_X86, CS_MODE_64, &m->cs) == CS_ERR_OK)
        m->cs_open = 1;
    if (m->cs_open && crec_exec_read(x, addr, worst, code, known, &err) == CREC_OK) {
        while (have < worst && known[have])
            have++;
        size_t got = cs_disasm(m->cs, code, have, addr, n, &insn);
        if (got == n) {
            len = 0;
            for (size_t k = 0; k < got; k++)
                len += insn[k].size;
        }
        if (got)
            cs_free(insn, got);
    }
    return len;
}

static size_t blen_slot(uint64_t addr, uint32_t n, size_t cap)
{
    return (size_t)((addr ^ (uint64_t)n << 48) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* The byte length of the block of n instructions at addr, measured once. */
static uint32_t block_len(gdb_memo *m, crec_exec *x, uint64_t addr, uint32_t n)
{
    size_t i;

    if (m->nblens * 2 >= m->capblens) { /* grow: at most half full */
        size_t cap = m->capblens ? 2 * m->capblens : 1024;
        struct blen *nb = calloc(cap, sizeof *nb);
        if (!nb)
            return block_measure(m, x, addr, n);
        for (size_t k = 0; k < m->capblens; k++)
            if (m->blens[k].addr) {
                size_t j = blen_slot(m->blens[k].addr, m->blens[k].n, cap);
                while (nb[j].addr)
                    j = (j + 1) & (cap - 1);
                nb[j] = m->blens[k];
            }
        free(m->blens);
        m->blens = nb;
        m->capblens = cap;
    }
    i = blen_slot(addr, n, m->capblens);
    while (m->blens[i].addr && (m->blens[i].addr != addr || m->blens[i].n != n))
        i = (i + 1) & (m->capblens - 1);
    if (m->blens[i].addr)
        return m->blens[i].len;
    uint32_t len = block_measure(m, x, addr, n);
    if (addr) {
        m->blens[i].addr = addr;
        m->blens[i].n = n;
        m->blens[i].len = len;
        m->nblens++;
    }
    return len;
}

/* The code of the buckets a run goes through, as it goes. */
struct codelog {
    gdb_memo *m;
    uint64_t lo;        /* the run starts here: only buckets from here on are whole */
    size_t cur;         /* the bucket being gathered, SIZE_MAX: none yet */
    uint64_t *r;        /* its ranges, as they come */
    size_t n, cap;
    int too_much;
    uint64_t carry[2];  /* a block that runs on into a later bucket ... */
    size_t carry_to;    /* ... this one, SIZE_MAX: none */
    uint64_t seen[64][2]; /* ranges added lately: a loop adds the same ones */
};

static int cmp_range(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void code_add(struct codelog *c, uint64_t start, uint64_t end)
{
    uint64_t *seen = c->seen[(start ^ start >> 6) & 63];

    if (c->too_much)
        return;
    if (seen[0] == start && seen[1] == end)
        return; /* a loop runs the same blocks again and again */
    seen[0] = start, seen[1] = end;
    if (c->n >= 64 * CODE_RANGES) { /* merge what we have before growing further */
        qsort(c->r, c->n, 2 * sizeof *c->r, cmp_range);
        size_t k = 0;
        for (size_t i = 0; i < c->n; i++)
            if (k && c->r[2 * i] <= c->r[2 * k - 1]) {
                if (c->r[2 * i + 1] > c->r[2 * k - 1])
                    c->r[2 * k - 1] = c->r[2 * i + 1];
            } else {
                c->r[2 * k] = c->r[2 * i], c->r[2 * k + 1] = c->r[2 * i + 1], k++;
            }
        c->n = k;
        if (c->n > CODE_RANGES) {
            c->too_much = 1;
            return;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        uint64_t *p = realloc(c->r, 2 * cap * sizeof *p);
        if (!p) {
            c->too_much = 1;
            return;
        }
        c->r = p;
        c->cap = cap;
    }
    c->r[2 * c->n] = start;
    c->r[2 * c->n + 1] = end;
    c->n++;
}

/* The bucket being gathered is over: keep what it ran, if it ran whole. */
static void code_flush(struct codelog *c)
{
    struct bucket *b;
    size_t k = 0;

    if (c->cur == SIZE_MAX || c->cur >= c->m->nb)
        goto reset;
    b = &c->m->b[c->cur];
    if (((uint64_t)c->cur << c->m->shift) < c->lo || b->code_state)
        goto reset; /* not run from its start, or known already */
    if (c->too_much) {
        b->code_state = 2;
        goto reset;
    }
    qsort(c->r, c->n, 2 * sizeof *c->r, cmp_range);
    for (size_t i = 0; i < c->n; i++) /* merge what overlaps or touches */
        if (k && c->r[2 * i] <= c->r[2 * k - 1]) {
            if (c->r[2 * i + 1] > c->r[2 * k - 1])
                c->r[2 * k - 1] = c->r[2 * i + 1];
        } else {
            c->r[2 * k] = c->r[2 * i], c->r[2 * k + 1] = c->r[2 * i + 1], k++;
        }
    if (k > CODE_RANGES) {
        b->code_state = 2;
        goto reset;
    }
    b->code = malloc((k ? k : 1) * 2 * sizeof *b->code);
    if (b->code) {
        memcpy(b->code, c->r, k * 2 * sizeof *b->code);
        b->ncode = (uint32_t)k;
        b->code_state = 1;
    }
reset:
    c->n = 0;
    c->too_much = 0;
    memset(c->seen, 0, sizeof c->seen);
}

static void code_block(struct codelog *c, crec_exec *x, uint64_t t, uint64_t addr, uint32_t n)
{
    unsigned sh = c->m->shift;
    size_t b = (size_t)(t >> sh);
    uint64_t len;

    if (b < c->m->nb && c->m->b[b].code_state && b == c->cur)
        return; /* known already: nothing to gather */
    len = block_len(c->m, x, addr, n);
    if (b != c->cur) {
        code_flush(c); /* a block of a later bucket: the earlier one ran to its end */
        c->cur = b;
        if (c->carry_to == b) /* buckets a block covers whole stay unknown */
            code_add(c, c->carry[0], c->carry[1]);
        c->carry_to = SIZE_MAX;
    }
    code_add(c, addr, addr + len);
    if ((t + n - 1) >> sh != (uint64_t)b) { /* its last instructions are a later bucket's */
        c->carry[0] = addr, c->carry[1] = addr + len;
        c->carry_to = (size_t)((t + n - 1) >> sh);
    }
}

/* The run ended at `stop`: the bucket being gathered is whole if the run
 * reached its end. */
static void code_end(struct codelog *c, uint64_t stop)
{
    if (c->cur != SIZE_MAX) {
        uint64_t be = ((uint64_t)c->cur + 1) << c->m->shift;
        if (be > c->m->end)
            be = c->m->end;
        if (stop >= be)
            code_flush(c);
    }
    free(c->r);
}

/* The breakpoint addresses a run saw, bucket by bucket, in time order. */
struct runlog {
    unsigned shift;    /* of the buckets */
    uint64_t *pairs;   /* (bucket, address) pairs, each once */
    size_t n, cap;
    int nomem;
};

static void runlog_hit(struct runlog *l, uint64_t t, uint64_t addr)
{
    size_t b = (size_t)(t >> l->shift);

    /* hits come in time order: only the current bucket's pairs can repeat */
    for (size_t i = l->n; i >= 2 && l->pairs[i - 2] == b; i -= 2)
        if (l->pairs[i - 1] == addr)
            return;
    if (l->n + 2 > l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        uint64_t *p = realloc(l->pairs, cap * sizeof *p);
        if (!p) {
            l->nomem = 1;
            return;
        }
        l->pairs = p;
        l->cap = cap;
    }
    l->pairs[l->n++] = b;
    l->pairs[l->n++] = addr;
}

/* A run looked for bp[0..n) over [lo, hi) and saw the hits in l: learn it
 * for every bucket that lies whole in [lo, hi). */
static void learn(gdb_memo *m, const uint64_t *bp, size_t n, uint64_t lo, uint64_t hi,
                  const struct runlog *l)
{
    if (!m || l->nomem)
        return;
    uint64_t bucket = 1ull << m->shift;
    size_t first = (size_t)((lo + bucket - 1) >> m->shift);
    for (size_t i = first; i < m->nb; i++) {
        uint64_t bs = (uint64_t)i << m->shift, be = bs + bucket;
        if (be > m->end)
            be = m->end;
        if (be > hi || bs >= be)
            break;
        merge_into(&m->b[i].searched, &m->b[i].nsearched, bp, n);
        for (size_t k = 0; k < l->n; k += 2)
            if (l->pairs[k] == i)
                merge_into(&m->b[i].hit, &m->b[i].nhit, &l->pairs[k + 1], 1);
    }
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

/* ---- a scan for breakpoints ------------------------------------------------ */

/* One run looking for breakpoints, forwards (stop at the first hit after
 * `skip`) or backwards (run to the end of the window, keep the last). */
struct scan {
    int forward;
    uint64_t skip;     /* forwards: where we start; its breakpoint is behind us */
    gdb_memo *keep;    /* backwards: every hit of the window (the last HITS_KEPT) */
    struct runlog *log;
    struct codelog *code;
    int hit;
    uint64_t t;
    uint32_t tid;
};

static int scan_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct scan *sc = ctx;
    gdb_memo *h = sc->keep;

    (void)x;
    runlog_hit(sc->log, t, rip);
    if (sc->forward && t == sc->skip)
        return 0;
    sc->hit = 1;
    sc->t = t;
    sc->tid = tid;
    if (sc->forward)
        return 1;
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

static int scan_block(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr,
                      uint32_t n)
{
    struct scan *sc = ctx;

    (void)tid;
    code_block(sc->code, x, t, addr, n);
    return 0;
}

/* Run [lo, hi) looking for the breakpoints of g, learning what it sees. */
static int scan_run(const gdb_search *s, const struct targets *g, struct scan *sc, uint64_t lo,
                    uint64_t hi, crec_error *err)
{
    gdb_memo *m = s->memo;
    unsigned sh = m ? m->shift : BUCKET_SHIFT;
    struct runlog log = {sh, NULL, 0, 0, 0};
    struct codelog code = {m, lo, SIZE_MAX, NULL, 0, 0, 0, {0, 0}, SIZE_MAX, {{0}}};
    crec_observer obs = {0};
    int rc;

    sc->log = &log;
    sc->code = &code;
    obs.ctx = sc;
    obs.insn = scan_insn;
    obs.addrs = g->bp;
    obs.n_addrs = g->nbp;
    obs.block = m ? scan_block : NULL;
    rc = crec_exec_run(s->rec, lo, hi, &obs, NULL, err);
    /* a forward run that stopped saw everything up to its stop */
    uint64_t seen = sc->forward && sc->hit ? sc->t : hi;
    if (rc == CREC_OK)
        learn(m, g->bp, g->nbp, lo, seen, &log);
    if (m)
        code_end(&code, rc == CREC_OK ? seen : 0);
    free(log.pairs);
    return rc;
}

/* ---- forwards -------------------------------------------------------------- */

int gdb_forward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err)
{
    uint64_t end = crec_length(s->rec), limit = end, piece = PIECE_FIRST, pos = t;
    gdb_memo *m = s->memo;
    unsigned sh = m ? m->shift : BUCKET_SHIFT;
    crec_access wa = {0};
    struct targets g;
    int wfound = 0, rc;

    if ((rc = targets_of(s, &g, err)) != CREC_OK)
        return rc;
    /* the next watched access, through the index; breakpoints need only be
     * looked for up to it (one at its instruction comes first) */
    if (g.nw > 0) {
        rc = crec_find_access(s->rec, g.w, g.nw, g.writes_only, match_cb, &g, t, 0, &wa, &wfound,
                              err);
        if (rc != CREC_OK)
            goto out;
        if (wfound)
            limit = wa.t + 1;
    }
    while (g.nbp > 0 && pos < limit) {
        uint64_t be = ((pos >> sh) + 1) << sh, to;
        if (bucket_clean(m, (size_t)(pos >> sh), g.bp, g.nbp)) {
            pos = be < limit ? be : limit; /* known to run none of them */
            continue;
        }
        /* a piece: this bucket and the next ones not known to be clean */
        to = be;
        while (to < limit && to - pos < piece &&
               !bucket_clean(m, (size_t)(to >> sh), g.bp, g.nbp))
            to += 1ull << sh;
        if (to > limit)
            to = limit;
        struct scan f = {1, t, NULL, NULL, NULL, 0, 0, 0};
        double t0 = now_seconds();
        if ((rc = scan_run(s, &g, &f, pos, to, err)) != CREC_OK)
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

/* Are the kept hits for these breakpoints? */
static int hits_for(const gdb_memo *h, const struct targets *g)
{
    return h && h->t && h->naddrs == g->nbp &&
           memcmp(h->addrs, g->bp, g->nbp * sizeof *g->bp) == 0;
}

/* Keep the hits of a window about to be searched, for these breakpoints. */
static void hits_reset(gdb_memo *h, const struct targets *g, uint64_t lo, uint64_t hi)
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

int gdb_backward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err)
{
    gdb_memo *m = s->memo;
    unsigned sh = m ? m->shift : BUCKET_SHIFT;
    crec_access wa = {0};
    struct targets g;
    uint64_t floor = crec_start(s->rec), hi = t, size = 0;
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
        /* the last search's window answers when it covers hi */
        if (hits_for(m, &g) && hi > m->lo && hi <= m->hi) {
            size_t i = m->n;
            while (i > 0 && m->t[i - 1] >= hi)
                i--;
            if (i > 0 && m->t[i - 1] >= floor) {
                bp_stop(&g, m->t[i - 1], m->tid[i - 1], stop);
                goto out;
            }
            hi = m->lo > floor ? m->lo : floor;
            continue;
        }
        uint64_t bs = ((hi - 1) >> sh) << sh;
        if (bucket_clean(m, (size_t)(bs >> sh), g.bp, g.nbp)) {
            hi = bs > floor ? bs : floor; /* known to run none of them */
            continue;
        }
        /* a window: this bucket and the older ones not known to be clean,
         * twice as long as the last window */
        uint64_t lo = bs;
        while (lo > floor && hi - lo < size &&
               !bucket_clean(m, (size_t)((lo - 1) >> sh), g.bp, g.nbp))
            lo -= 1ull << sh;
        if (lo < floor)
            lo = floor;
        struct scan b = {0, 0, m, NULL, NULL, 0, 0, 0};
        hits_reset(m, &g, lo, hi);
        if ((rc = scan_run(s, &g, &b, lo, hi, err)) != CREC_OK) {
            if (m)
                m->naddrs = 0, m->hi = 0; /* what it holds is not a whole window */
            goto out;
        }
        if (b.hit) {
            bp_stop(&g, b.t, b.tid, stop);
            goto out;
        }
        size = 2 * (hi - lo) < WINDOW_MAX ? 2 * (hi - lo) : WINDOW_MAX;
        hi = lo;
        if (hi > floor && s->conn && gdb_conn_interrupted(s->conn)) {
            plain_stop(GDB_STOP_INTERRUPT, hi, s->tid, stop);
            goto out;
        }
    }
    if (wfound)
        watch_stop(&g, &wa, wa.t, stop);
    else
        plain_stop(GDB_STOP_BEGIN, crec_start(s->rec), s->tid, stop);
out:
    targets_free(&g);
    return rc;
}
