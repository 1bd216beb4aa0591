/*
 * races.c - the multiprocessor view of a recording of several threads:
 * `crec races` and `crec query --all-values` (docs/QUERY.md, "Races").
 *
 * The recording ran on one CPU, and its schedule orders every access.  A
 * multiprocessor would have ordered only what the sequencing points order:
 * the syscalls, atomic instructions, thread starts and wakes, each with a
 * global sequence number in its thread's SEQ stream (the switches of the
 * one CPU are left out).  In that view, access a (thread A, its
 * instruction ia) comes before access b of another thread B iff A's first
 * sequencing point at or after ia has a smaller number than B's last one at
 * or before ib.  Two accesses of different threads to the same bytes, at
 * least one a store, ordered neither way, are a race: either could have
 * come first, and the value a load saw could have been another one.
 *
 * One whole-program replay reports every access in the recorded order; a
 * shadow per 8-byte granule keeps the last store and the last load of each
 * thread, with the number of the first sequencing point after it, so that
 * each new access is checked against them (as FastTrack does with its
 * vector clocks).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

/* ---- the sequencing points of each thread ----------------------------------- */

struct syncs {
    uint64_t *c;   /* the thread's count including the point's instruction */
    uint64_t *seq; /* its sequence number */
    size_t n, cap;
};

/* The sequencing points (not the switches) of every thread, from SEQ. */
static int load_syncs(crec_recording *rec, struct syncs *v, crec_error *err)
{
    int rc = CREC_OK;

    for (uint32_t tid = 1; tid <= rec->nthr && rc == CREC_OK; tid++) {
        struct syncs *t = &v[tid - 1];
        crec_fmt_seq_ctx ctx = {0, 0, 1};
        crec_fmt_cursor *c;
        crec_fmt_seq e;
        if ((rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SEQ, tid, 0, &c, err)) != CREC_OK)
            break;
        while ((rc = crec_fmt_cursor_seq(c, &ctx, &e, err)) == CREC_OK) {
            size_t cap = t->cap;
            if (e.kind == CREC_FMT_SEQ_IN || e.kind == CREC_FMT_SEQ_OUT ||
                e.kind == CREC_FMT_SEQ_OUT_EXACT)
                continue;
            if (!(t->c = crec_grow(t->c, &cap, t->n + 1, sizeof *t->c, 256)) ||
                !(t->seq = crec_grow(t->seq, &t->cap, t->n + 1, sizeof *t->seq, 256))) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading SEQ");
                break;
            }
            t->c[t->n] = e.icount;
            t->seq[t->n++] = e.seq;
        }
        crec_fmt_cursor_free(c);
        if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
            rc = CREC_OK;
    }
    return rc;
}

static void syncs_free(struct syncs *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        crec_free(v[i].c);
        crec_free(v[i].seq);
    }
    crec_free(v);
}

/* The first point at or after instruction i (its count c > i), as its
 * sequence number; none yet: a number after every other. */
static uint64_t first_after(const struct syncs *t, uint64_t i)
{
    size_t a = 0, b = t->n;

    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->c[m] > i)
            b = m;
        else
            a = m + 1;
    }
    return a < t->n ? t->seq[a] : UINT64_MAX;
}

/* The last point at or before instruction i (c <= i + 1); none: 0, which
 * orders nothing before it (numbers start at 0, a thread's first point). */
static uint64_t last_before(const struct syncs *t, uint64_t i)
{
    size_t a = 0, b = t->n;

    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->c[m] <= i + 1)
            a = m + 1;
        else
            b = m;
    }
    return a > 0 ? t->seq[a - 1] + 1 : 0; /* +1: "smaller than" becomes "at most" */
}

/* ---- one access, as the replay reports it --------------------------------------- */

struct access {
    uint32_t tid;
    uint64_t g, i;       /* its instruction: global number, the thread's own */
    uint64_t fa, lb;     /* first point after it, last before it (+1) */
    uint64_t rip;
    int write;
    uint64_t addr, len;
};

/* What the access callback of a whole-program run knows. */
static void describe(crec_recording *rec, const struct syncs *syncs, crec_replay_qrun *q,
                     int kind, uint64_t addr, uint64_t len, struct access *a)
{
    (void)rec;
    a->tid = crec_replay_qrun_tid(q);
    a->rip = crec_replay_qrun_rip(q);
    a->g = crec_replay_qrun_icount_at(q, a->rip);
    a->i = crec_replay_qrun_own(q, a->g);
    a->fa = first_after(&syncs[a->tid - 1], a->i);
    a->lb = last_before(&syncs[a->tid - 1], a->i);
    a->write = kind == 'w';
    a->addr = addr, a->len = len;
}

/* a (earlier) is ordered before b: a's thread reached a sequencing point
 * after a before b's reached one before b. */
static int ordered(const struct access *a, const struct access *b)
{
    return a->tid == b->tid || a->fa < b->lb;
}

/* ---- races ---------------------------------------------------------------------- */

#define SHADOW_READS 4

struct shadow_acc {
    uint32_t tid;        /* 0: none */
    uint8_t mask, write;
    uint64_t g, i, fa, rip;
};

struct shadow {
    uint64_t key;        /* granule + 1; 0: empty */
    struct shadow_acc w; /* the last store */
    struct shadow_acc r[SHADOW_READS]; /* the last load of a few threads */
    int reported;
};

struct race_run {
    crec_recording *rec;
    struct syncs *syncs;
    struct shadow *tab;
    size_t cap, used;
    crec_race *found;
    size_t nfound, capfound;
    int nomem;
};

static struct shadow *shadow_get(struct race_run *rr, uint64_t gran)
{
    size_t i;

    if (2 * (rr->used + 1) > rr->cap) {
        size_t cap = rr->cap ? 2 * rr->cap : 1 << 16;
        struct shadow *t = crec_calloc(cap, sizeof *t);
        if (!t) {
            rr->nomem = 1;
            return NULL;
        }
        for (size_t k = 0; k < rr->cap; k++) {
            if (!rr->tab[k].key)
                continue;
            for (i = (rr->tab[k].key * 0x9E3779B97F4A7C15ull) & (cap - 1); t[i].key;
                 i = (i + 1) & (cap - 1))
                ;
            t[i] = rr->tab[k];
        }
        crec_free(rr->tab);
        rr->tab = t, rr->cap = cap;
    }
    for (i = ((gran + 1) * 0x9E3779B97F4A7C15ull) & (rr->cap - 1); rr->tab[i].key;
         i = (i + 1) & (rr->cap - 1))
        if (rr->tab[i].key == gran + 1)
            return &rr->tab[i];
    rr->tab[i].key = gran + 1;
    rr->used++;
    return &rr->tab[i];
}

static void race_side(crec_replay_qrun *q, const struct shadow_acc *s, int have_insn,
                      struct crec_race_side *out)
{
    out->tid = s->tid;
    out->t = s->g;
    out->thread_icount = s->i;
    out->rip = s->rip;
    out->write = s->write;
    if (have_insn)
        crec_replay_qrun_describe(q, s->rip, out->insn, sizeof out->insn);
}

/* A race between shadow access s and the new access b on granule gran. */
static void race_found(struct race_run *rr, crec_replay_qrun *q, struct shadow *sh,
                       uint64_t gran, const struct shadow_acc *s, const struct shadow_acc *b,
                       unsigned size)
{
    crec_race *r;
    unsigned bit = 0;

    sh->reported = 1;
    if (!(r = crec_grow(rr->found, &rr->capfound, rr->nfound + 1, sizeof *r, 16))) {
        rr->nomem = 1;
        return;
    }
    rr->found = r;
    r = &rr->found[rr->nfound++];
    memset(r, 0, sizeof *r);
    while (bit < 7 && !((s->mask & b->mask) & (1u << bit)))
        bit++;
    r->addr = gran * 8 + bit;
    r->size = size;
    race_side(q, s, 1, &r->first);
    race_side(q, b, 1, &r->second);
    qx_symbol_at(rr->rec, r->addr, r->symbol, sizeof r->symbol);
}

static void race_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr, uint64_t len)
{
    struct race_run *rr = ctx;
    struct access a;

    if (kind == 'k' || len == UINT64_MAX || len == 0 || rr->nomem)
        return; /* the kernel: its writes are ordered by the syscall that made them */
    describe(rr->rec, rr->syncs, q, kind, addr, len, &a);
    for (uint64_t gran = addr / 8; gran <= (addr + len - 1) / 8; gran++) {
        uint64_t lo = gran * 8 > addr ? gran * 8 : addr;
        uint64_t hi = gran * 8 + 8 < addr + len ? gran * 8 + 8 : addr + len;
        struct shadow_acc b = {a.tid, (uint8_t)(((1u << (hi - lo)) - 1) << (lo - gran * 8)),
                               (uint8_t)a.write, a.g, a.i, a.fa, a.rip};
        struct shadow *sh = shadow_get(rr, gran);
        struct access prev;
        if (!sh)
            return;
        /* against the last store, and a store against the last loads */
        prev = (struct access){sh->w.tid, sh->w.g, sh->w.i, sh->w.fa, 0, 0, 1, 0, 0};
        if (!sh->reported && sh->w.tid && (sh->w.mask & b.mask) && !ordered(&prev, &a))
            race_found(rr, q, sh, gran, &sh->w, &b, (unsigned)len);
        for (int k = 0; b.write && k < SHADOW_READS; k++) {
            const struct shadow_acc *r = &sh->r[k];
            prev = (struct access){r->tid, r->g, r->i, r->fa, 0, 0, 0, 0, 0};
            if (!sh->reported && r->tid && (r->mask & b.mask) && !ordered(&prev, &a))
                race_found(rr, q, sh, gran, r, &b, (unsigned)len);
        }
        if (b.write) {
            sh->w = b;
            memset(sh->r, 0, sizeof sh->r); /* later loads are checked against this store */
        } else {
            int slot = 0;
            for (int k = 0; k < SHADOW_READS; k++) {
                if (sh->r[k].tid == b.tid || !sh->r[k].tid) {
                    slot = k;
                    break;
                }
                if (sh->r[k].g < sh->r[slot].g)
                    slot = k; /* else the oldest makes room */
            }
            sh->r[slot] = b;
        }
    }
}

int crec_races(crec_recording *rec, int (*fn)(void *ctx, const crec_race *r), void *ctx,
               crec_error *err)
{
    struct race_run rr = {rec, NULL, NULL, 0, 0, NULL, 0, 0, 0};
    crec_replay_watch w = {race_access, NULL, &rr, NULL, 0};
    crec_replay_qrun *q = NULL;
    int rc;

    if (rec->nthr == 0)
        return CREC_OK; /* one thread: nothing to race with */
    if (!(rr.syncs = crec_calloc(rec->nthr, sizeof *rr.syncs)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rc = load_syncs(rec, rr.syncs, err);
    if (rc == CREC_OK)
        rc = crec_replay_whole_query(rec->r, rec->kfs, rec->nkf, rec->end, &w, &q, err);
    if (rc == CREC_OK && rr.nomem)
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory looking for races");
    for (size_t i = 0; rc == CREC_OK && i < rr.nfound; i++)
        if (fn(ctx, &rr.found[i]))
            break;
    crec_replay_qrun_free(q);
    crec_free(rr.tab);
    crec_free(rr.found);
    syncs_free(rr.syncs, rec->nthr);
    return rc;
}

/* ---- every value the multiprocessor view allows -------------------------------- */

struct store {
    struct access a;
    uint8_t bytes[64], mask[64];
};

struct all_run {
    crec_recording *rec;
    struct syncs *syncs;
    uint64_t addr;
    size_t len;
    struct store *v;
    size_t n, cap;
    int pending, nomem;
};

/* A store is seen before it happens: its bytes are read at the next access. */
static void all_settle(struct all_run *ar, crec_replay_qrun *q)
{
    struct store *s;

    if (!ar->pending)
        return;
    ar->pending = 0;
    s = &ar->v[ar->n - 1];
    for (size_t i = 0; i < ar->len; i++)
        if (s->mask[i] && crec_replay_qrun_read(q, &s->bytes[i], ar->addr + i, 1) != 0)
            s->mask[i] = 0;
}

static void all_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr, uint64_t len)
{
    struct all_run *ar = ctx;
    struct store *s;

    all_settle(ar, q);
    if (kind != 'w' || addr >= ar->addr + ar->len || addr + len <= ar->addr)
        return;
    if (!(s = crec_grow(ar->v, &ar->cap, ar->n + 1, sizeof *s, 16))) {
        ar->nomem = 1;
        return;
    }
    ar->v = s;
    s = &ar->v[ar->n++];
    memset(s, 0, sizeof *s);
    describe(ar->rec, ar->syncs, q, kind, addr, len, &s->a);
    for (uint64_t a = addr > ar->addr ? addr : ar->addr; a < addr + len && a < ar->addr + ar->len;
         a++)
        s->mask[a - ar->addr] = 1;
    ar->pending = 1;
}

/* Add value v (with its origin) to the answers, unless it is there. */
static void add_value(crec_value *out, size_t max, size_t *n, const uint8_t *bytes,
                      const uint8_t *known, size_t len, const crec_value *origin)
{
    for (size_t i = 0; i < *n && i < max; i++)
        if (!memcmp(out[i].bytes, bytes, len) && !memcmp(out[i].known, known, len))
            return;
    if (*n < max) {
        out[*n] = *origin;
        memcpy(out[*n].bytes, bytes, len);
        memcpy(out[*n].known, known, len);
    }
    (*n)++;
}

int crec_read_memory_all(crec_recording *rec, uint64_t addr, size_t len, crec_value *out,
                         size_t max, size_t *n, crec_error *err)
{
    struct all_run ar = {rec, NULL, addr, len, NULL, 0, 0, 0, 0};
    crec_replay_watch w = {all_access, NULL, &ar, NULL, 0};
    crec_replay_qrun *q = NULL;
    struct access at = {0};
    uint8_t cur[64], curk[64];
    crec_value origin = {0};
    uint64_t t = rec->t, tt;
    size_t last = SIZE_MAX;
    int src, rc;

    *n = 0;
    if (len < 1 || len > 64)
        return crec_error_set(err, CREC_ERR_ARG, "all values of 1 to 64 bytes, not %zu", len);
    /* the value in the recorded order is always one of them */
    rc = crec_read_memory(rec, addr, len, cur, curk, &src, err);
    if (rc != CREC_OK)
        return rc;
    origin.recorded = 1;
    add_value(out, max, n, cur, curk, len, &origin);
    if (rec->nthr == 0 || src == CREC_SRC_CODE)
        return CREC_OK;
    if (!(ar.syncs = crec_calloc(rec->nthr, sizeof *ar.syncs)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rc = qx_schedule(rec, err);
    if (rc == CREC_OK)
        rc = load_syncs(rec, ar.syncs, err);
    if (rc == CREC_OK) /* every store to the bytes, in the whole run */
        rc = crec_replay_whole_query(rec->r, rec->kfs, rec->nkf, rec->end, &w, &q, err);
    if (rc == CREC_OK)
        all_settle(&ar, q);
    if (rc == CREC_OK && ar.nomem)
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (rc != CREC_OK)
        goto out;
    /* the point of view: the thread that runs at t, before its next instruction */
    at.tid = crec_thread_at(rec, t);
    if (!qx_thread_time(rec, at.tid, t, &tt))
        tt = 0;
    at.i = tt;
    at.lb = last_before(&ar.syncs[at.tid - 1], tt ? tt - 1 : 0);
    if (tt == 0)
        at.lb = 0;
    at.fa = first_after(&ar.syncs[at.tid - 1], tt);
    for (size_t k = 0; k < ar.n; k++) {
        const struct access *s = &ar.v[k].a;
        int before = s->tid == at.tid ? s->i < at.i : s->fa < at.lb;
        int after = s->tid == at.tid ? s->i >= at.i : at.fa < s->lb;
        if (before && (last == SIZE_MAX || s->g > ar.v[last].a.g))
            last = k;
        if (!before && !after) { /* a store no sequencing point orders with t */
            crec_value o = {0};
            memcpy(cur, out[0].bytes, len);
            memcpy(curk, out[0].known, len);
            for (size_t i = 0; i < len; i++)
                if (ar.v[k].mask[i])
                    cur[i] = ar.v[k].bytes[i], curk[i] = 1;
            o.tid = s->tid, o.t = s->g + 1, o.rip = s->rip, o.unordered = 1;
            crec_replay_qrun_describe(q, s->rip, o.insn, sizeof o.insn);
            add_value(out, max, n, cur, curk, len, &o);
        }
    }
    if (last != SIZE_MAX) { /* the last store ordered before t */
        crec_value o = {0};
        memcpy(cur, out[0].bytes, len);
        memcpy(curk, out[0].known, len);
        for (size_t i = 0; i < len; i++)
            if (ar.v[last].mask[i])
                cur[i] = ar.v[last].bytes[i], curk[i] = 1;
        o.tid = ar.v[last].a.tid, o.t = ar.v[last].a.g + 1, o.rip = ar.v[last].a.rip;
        crec_replay_qrun_describe(q, o.rip, o.insn, sizeof o.insn);
        add_value(out, max, n, cur, curk, len, &o);
    }
out:
    crec_replay_qrun_free(q);
    crec_free(ar.v);
    syncs_free(ar.syncs, rec->nthr);
    return rc;
}
