/*
 * build.c - building the summarization index by replay (docs/QUERY.md).
 *
 * The key frames are cut into one contiguous run per thread, of about the
 * same number of instructions, and each run is replayed in one pass from
 * its first key frame: a query run that reports every memory access and
 * every key frame it passes.  Accesses go to the segment being replayed;
 * passing a key frame closes that segment.  One pass per thread (rather
 * than one replay per segment) builds the memory map and translates the
 * code once, so building costs about what a parallel replay costs.
 *
 * The runs also offer restart points inside segments (crec_replay_watch):
 * a point cuts its segment into spans, and holds what a replay needs to
 * start there rather than at the key frame, so that a query replays at
 * most BUILD_POINTS-th of a check-point interval however long the segment
 * (key frames are rare where they cost much: docs/ARCHITECTURE.md).  What
 * a replay starting at a point needs besides its registers is the memory
 * the recording's cache predicted in the span without the span having
 * loaded or stored it first: the span's loads that READS has no value
 * for and that read bytes it did not touch before.  Those bytes, as they
 * were at the point, are collected as the span runs (its "seed").
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "index/index.h"
#include "replayer/replayer.h"

#define BUILD_MAX_JOBS CREC_INDEX_MAX_JOBS
#define BUILD_POINTS 8          /* restart points per key-frame interval */
#define BUILD_POINT_MIN 10000   /* ... but not closer than this */
#define DENSE_POINT_LINES 65536 /* lines a point may restore in a range of crec keyframes (4 MiB) */
#define BUILD_RECENT 256 /* lines remembered to skip repeats cheaply */
/* A point is taken once its span costs the index less than this many
 * thousandths of a bit an instruction (about 10 bytes a line touched or
 * seeded), or once the span is BUILD_SPAN_MAX long: the rule of
 * recorder/rec_index.c, which gathers the same index while recording. */
#define BUILD_BITS_MILLI 100
#define BUILD_SPAN_MAX (1ull << 24)

/* ---- sets of lines --------------------------------------------------------- */

/* An open-addressing map from line number (value+1 stored; 0 = empty) to
 * the mask of its bytes accessed. */
struct lineset {
    uint64_t *v;
    uint64_t *mask;
    size_t cap, n;
};

static size_t set_slot(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
}

static int set_grow(struct lineset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *nv = crec_calloc(cap, sizeof *nv);
    uint64_t *nm = crec_calloc(cap, sizeof *nm);

    if (!nv || !nm) {
        crec_free(nv);
        crec_free(nm);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->v[i]) {
            size_t j = set_slot(s->v[i], cap);
            while (nv[j])
                j = (j + 1) & (cap - 1);
            nv[j] = s->v[i];
            nm[j] = s->mask[i];
        }
    crec_free(s->v);
    crec_free(s->mask);
    s->v = nv, s->mask = nm, s->cap = cap;
    return 0;
}

static int set_add(struct lineset *s, uint64_t line, uint64_t mask)
{
    uint64_t key = line + 1;
    size_t j;

    if (s->n * 2 >= s->cap && set_grow(s) != 0)
        return -1;
    j = set_slot(key, s->cap);
    while (s->v[j] && s->v[j] != key)
        j = (j + 1) & (s->cap - 1);
    if (!s->v[j]) {
        s->v[j] = key;
        s->n++;
    }
    s->mask[j] |= mask;
    return 0;
}

static void set_free(struct lineset *s)
{
    crec_free(s->v);
    crec_free(s->mask);
    memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The lines of a set, sorted, and their masks; the set is emptied.
 * @return 0, or -1 out of memory. */
static int set_sorted(struct lineset *s, uint64_t **lines, uint64_t **masks, size_t *n)
{
    uint64_t *v = crec_malloc((s->n ? s->n : 1) * sizeof *v);
    uint64_t *m = crec_malloc((s->n ? s->n : 1) * sizeof *m);
    size_t k = 0;

    *lines = v, *masks = m, *n = 0;
    if (!v || !m) {
        set_free(s);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->v[i])
            v[k++] = s->v[i] - 1;
    crec_sort(v, k, sizeof *v, cmp_u64);
    for (size_t i = 0; i < k; i++) { /* look each mask up again: sets are small */
        size_t j = set_slot(v[i] + 1, s->cap);
        while (s->v[j] != v[i] + 1)
            j = (j + 1) & (s->cap - 1);
        m[i] = s->mask[j];
    }
    *n = k;
    set_free(s);
    return 0;
}

/* The bytes of `line` in set s (0: none). */
static uint64_t set_mask(const struct lineset *s, uint64_t line)
{
    size_t j;

    if (!s->cap)
        return 0;
    for (j = set_slot(line + 1, s->cap); s->v[j]; j = (j + 1) & (s->cap - 1))
        if (s->v[j] == line + 1)
            return s->mask[j];
    return 0;
}

/* ---- the seed of a span: lines, byte masks and the bytes' values ---------- */

struct seedset {
    uint64_t *key, *mask; /* line + 1 (0 empty), the bytes of it held */
    uint8_t *val;         /* 64 bytes a slot */
    size_t cap, n;
};

static int seed_grow(struct seedset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 256;
    uint64_t *k = crec_calloc(cap, sizeof *k), *m = crec_calloc(cap, sizeof *m);
    uint8_t *v = crec_calloc(cap, 64);

    if (!k || !m || !v) {
        crec_free(k), crec_free(m), crec_free(v);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->key[i]) {
            size_t j = set_slot(s->key[i], cap);
            while (k[j])
                j = (j + 1) & (cap - 1);
            k[j] = s->key[i], m[j] = s->mask[i];
            memcpy(v + 64 * j, s->val + 64 * i, 64);
        }
    crec_free(s->key), crec_free(s->mask), crec_free(s->val);
    s->key = k, s->mask = m, s->val = v, s->cap = cap;
    return 0;
}

/* The bytes of `mask` of line `line` are `bytes` (64, of the whole line). */
static int seed_add(struct seedset *s, uint64_t line, uint64_t mask, const uint8_t *bytes)
{
    size_t j;

    if (s->n * 2 >= s->cap && seed_grow(s) != 0)
        return -1;
    for (j = set_slot(line + 1, s->cap); s->key[j] && s->key[j] != line + 1;
         j = (j + 1) & (s->cap - 1))
        ;
    if (!s->key[j]) {
        s->key[j] = line + 1;
        s->n++;
    }
    s->mask[j] |= mask;
    for (unsigned b = 0; b < 64; b++)
        if (mask >> b & 1)
            s->val[64 * j + b] = bytes[b];
    return 0;
}

static void seed_free(struct seedset *s)
{
    crec_free(s->key), crec_free(s->mask), crec_free(s->val);
    memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *a, const void *b);

/* The seed, sorted by line, into span sp; the set is emptied.
 * @return 0, or -1 out of memory. */
static int seed_sorted(struct seedset *s, crec_idx_span *sp)
{
    size_t n = 0;

    sp->lines = crec_malloc((s->n ? s->n : 1) * sizeof *sp->lines);
    sp->masks = crec_malloc((s->n ? s->n : 1) * sizeof *sp->masks);
    sp->values = crec_malloc((s->n ? s->n : 1) * 64);
    if (!sp->lines || !sp->masks || !sp->values) {
        seed_free(s);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->key[i])
            sp->lines[n++] = s->key[i] - 1;
    crec_sort(sp->lines, n, sizeof *sp->lines, cmp_u64);
    for (size_t i = 0; i < n; i++) {
        size_t j = set_slot(sp->lines[i] + 1, s->cap);
        while (s->key[j] != sp->lines[i] + 1)
            j = (j + 1) & (s->cap - 1);
        sp->masks[i] = s->mask[j];
        memcpy(sp->values + 64 * i, s->val + 64 * j, 64);
    }
    sp->nlines = n;
    seed_free(s);
    return 0;
}

/* ---- one segment ---------------------------------------------------------- */

/* What the segment being replayed touched so far. */
struct seg_build {
    struct lineset touch, write;
    struct lineset stale; /* stored bytes the kernel wrote since (their last store) */
    struct seedset seed;
    uint64_t recent_t[BUILD_RECENT], recent_w[BUILD_RECENT]; /* line+1, 0 = none */
    uint64_t recent_tm[BUILD_RECENT], recent_wm[BUILD_RECENT]; /* ... its mask */
    uint64_t *k;
    size_t nk, capk;
    uint32_t flags;
    int nomem;
};

/* The kernel wrote [addr, addr+len): the bytes of it stored so far hold
 * the kernel's value now, not their store's (until stored again).  The
 * lines of the range are looked up, or the lines stored, if fewer. */
static void seg_stale(struct seg_build *b, uint64_t addr, uint64_t len)
{
    uint64_t lo = addr >> CREC_IDX_LINE_SHIFT, hi;

    if (len == 0 || b->write.n == 0)
        return;
    hi = addr + len - 1 < addr ? UINT64_MAX >> CREC_IDX_LINE_SHIFT
                               : (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
    if (hi - lo < b->write.cap) {
        for (uint64_t line = lo; line <= hi; line++) {
            uint64_t m = set_mask(&b->write, line) & crec_idx_line_mask(line, addr, len);
            if (m && set_add(&b->stale, line, m) != 0)
                b->nomem = 1;
        }
        return;
    }
    for (size_t i = 0; i < b->write.cap; i++) {
        uint64_t line = b->write.v[i] - 1, m;
        if (!b->write.v[i] || line < lo || line > hi)
            continue;
        m = b->write.mask[i] & crec_idx_line_mask(line, addr, len);
        if (m && set_add(&b->stale, line, m) != 0)
            b->nomem = 1;
    }
}

/* A store to bytes of a line: they are the store's again. */
static void seg_unstale(struct seg_build *b, uint64_t line, uint64_t mask)
{
    struct lineset *s = &b->stale;

    for (size_t j = set_slot(line + 1, s->cap); s->v[j]; j = (j + 1) & (s->cap - 1))
        if (s->v[j] == line + 1) {
            s->mask[j] &= ~mask;
            return;
        }
}

static void seg_add_kernel(struct seg_build *b, uint64_t addr, uint64_t len)
{
    if (addr == 0 && len == UINT64_MAX) {
        b->flags |= CREC_IDX_WILD;
        return;
    }
    seg_stale(b, addr, len);
    if (b->nk == b->capk) {
        size_t cap = b->capk ? 2 * b->capk : 16;
        uint64_t *n = crec_realloc(b->k, 2 * cap * sizeof *n);
        if (!n) {
            b->nomem = 1;
            return;
        }
        b->k = n, b->capk = cap;
    }
    b->k[2 * b->nk] = addr;
    b->k[2 * b->nk + 1] = len;
    b->nk++;
}

/* Add bytes of a line to a set, unless they were added lately. */
static void seg_add_line(struct seg_build *b, struct lineset *s, uint64_t *recent,
                         uint64_t *recent_mask, uint64_t line, uint64_t mask)
{
    size_t i = line & (BUILD_RECENT - 1);

    if (recent[i] == line + 1 && (mask & ~recent_mask[i]) == 0)
        return;
    if (recent[i] != line + 1)
        recent[i] = line + 1, recent_mask[i] = 0;
    recent_mask[i] |= mask;
    if (set_add(s, line, mask) != 0)
        b->nomem = 1;
}

/* A predicted load of [addr, addr+len) (q's memory holds its bytes): the
 * bytes of it the span did not touch before go to its seed. */
static void seg_need(struct seg_build *b, crec_replay_qrun *q, uint64_t line, uint64_t addr,
                     uint64_t len, uint64_t mask)
{
    size_t i = line & (BUILD_RECENT - 1);
    uint64_t need, lo, hi;
    uint8_t bytes[64];

    if (b->recent_t[i] == line + 1 && (mask & ~b->recent_tm[i]) == 0)
        return; /* touched lately */
    need = mask & ~set_mask(&b->touch, line);
    if (!need)
        return;
    lo = addr > line << CREC_IDX_LINE_SHIFT ? addr : line << CREC_IDX_LINE_SHIFT;
    hi = addr + len < (line + 1) << CREC_IDX_LINE_SHIFT ? addr + len
                                                         : (line + 1) << CREC_IDX_LINE_SHIFT;
    if (crec_replay_qrun_read(q, bytes + (lo & 63), lo, hi - lo) != 0)
        return; /* unmapped: nothing to give a replay */
    if (seed_add(&b->seed, line, need, bytes) != 0)
        b->nomem = 1;
}

static void seg_access(struct seg_build *b, crec_replay_qrun *q, int kind, uint64_t addr,
                       uint64_t len)
{
    uint64_t last = (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
    int predicted = kind == 'r' && crec_replay_qrun_predicted(q);

    if (kind == 'k') {
        seg_add_kernel(b, addr, len);
        return;
    }
    for (uint64_t line = addr >> CREC_IDX_LINE_SHIFT; line <= last; line++) {
        uint64_t mask = crec_idx_line_mask(line, addr, len);
        if (predicted)
            seg_need(b, q, line, addr, len, mask);
        seg_add_line(b, &b->touch, b->recent_t, b->recent_tm, line, mask);
        if (kind == 'w' && b->stale.n)
            seg_unstale(b, line, mask);
        if (kind == 'w')
            seg_add_line(b, &b->write, b->recent_w, b->recent_wm, line, mask);
    }
}

/* Read replay memory (crec_idx_span_values). */
static int qrun_read(void *ctx, void *dst, uint64_t addr, uint64_t len)
{
    return crec_replay_qrun_read(ctx, dst, addr, len);
}

/* Move what was collected into the index entry of segment s, with the
 * values of its stores if q (the run, at the span's end) is given; reset b. */
static int seg_finish(struct seg_build *b, crec_idx_span *s, uint64_t start, crec_replay_qrun *q)
{
    int bad = b->nomem;

    s->start = start;
    s->flags = b->flags;
    bad |= set_sorted(&b->touch, &s->touch, &s->touch_mask, &s->ntouch);
    bad |= set_sorted(&b->write, &s->write, &s->write_mask, &s->nwrite);
    bad |= set_sorted(&b->stale, &s->stale, &s->stale_mask, &s->nstale);
    if (!bad) { /* lines stored again since: not stale */
        size_t k = 0;
        for (size_t i = 0; i < s->nstale; i++)
            if (s->stale_mask[i])
                s->stale[k] = s->stale[i], s->stale_mask[k++] = s->stale_mask[i];
        s->nstale = k;
    }
    /* q's memory holds every byte the run stored: what it stored last */
    if (!bad && q)
        bad |= crec_idx_span_values(s, qrun_read, q);
    if (s->at_point) /* a key frame's span needs no memory: READS has it all */
        bad |= seed_sorted(&b->seed, s);
    else
        seed_free(&b->seed);
    s->k = b->k ? b->k : crec_malloc(sizeof *s->k);
    s->nk = b->nk;
    memset(b, 0, sizeof *b);
    return bad || !s->k ? -1 : 0;
}

/* ---- one thread ----------------------------------------------------------- */

/* Shared by the threads: progress, and when the last one is done. */
struct build_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t done;     /* instructions of the segments finished */
    unsigned running;  /* threads still replaying */
};

struct build_job {
    const char *path;
    uint32_t proc;
    const crec_fmt_keyframe *kfs;
    size_t nkf;
    int values;           /* keep the values of each span's stores */
    uint64_t point_every; /* offer restart points this often (0: none) */
    uint64_t default_every; /* take one this often (0: none), but in: */
    const crec_idx_dense *dense; /* ranges of crec keyframes: their own */
    size_t ndense;
    uint64_t last_taken;  /* the last point or key frame */
    size_t first, last;   /* this thread's segments: [first, last) */
    size_t kf;            /* the segment being replayed */
    crec_idx_span cur;    /* the span being replayed, but its lists: */
    struct seg_build b;   /* ... what it touched so far */
    crec_idx_span *spans; /* the spans finished, in order */
    size_t nspans, capspans;
    uint64_t cpu_at;      /* thread CPU time (us) where the span began */
    struct build_shared *sh;
    int rc;
    crec_error err;
};

static void job_nomem(struct build_job *bj)
{
    if (bj->rc == CREC_OK)
        bj->rc = crec_error_set(&bj->err, CREC_ERR_NOMEM, "out of memory building the index");
}

/* Finish the span being replayed (q: the run, at its end; NULL once it
 * failed): its lists are what it touched. */
static void job_close(struct build_job *bj, crec_replay_qrun *q)
{
    crec_idx_span *p;

    if (bj->nspans == bj->capspans) {
        size_t cap = bj->capspans ? 2 * bj->capspans : 64;
        p = crec_realloc(bj->spans, cap * sizeof *p);
        if (!p) {
            job_nomem(bj);
            return;
        }
        bj->spans = p, bj->capspans = cap;
    }
    p = &bj->spans[bj->nspans++];
    *p = bj->cur;
    p->cost = crec_thread_cpu_lap(&bj->cpu_at); /* as the recorder's: what it cost to replay */
    memset(&bj->cur, 0, sizeof bj->cur);
    if (seg_finish(&bj->b, p, p->start, bj->values ? q : NULL) != 0)
        job_nomem(bj);
}

static void job_report(struct build_job *bj, uint64_t instructions)
{
    pthread_mutex_lock(&bj->sh->mu);
    bj->sh->done += instructions;
    pthread_mutex_unlock(&bj->sh->mu);
}

/* The run (q) reached key frame k: close the segments before it. */
static void job_keyframe(void *ctx, crec_replay_qrun *q, size_t k)
{
    struct build_job *bj = ctx;

    while (bj->kf < k && bj->kf < bj->last) {
        job_close(bj, q);
        job_report(bj, bj->kfs[bj->kf + 1].global_icount - bj->kfs[bj->kf].global_icount);
        bj->kf++;
        if (bj->kf < bj->last)
            bj->cur = (crec_idx_span){.start = bj->kfs[bj->kf].global_icount, .kf = bj->kf};
        bj->last_taken = bj->kfs[bj->kf < bj->last ? bj->kf : bj->last].global_icount;
    }
}

/* The interval of points the build keeps at time t, and whether t lies in
 * a range of crec keyframes (where every offered point is taken). */
static uint64_t every_at(const struct build_job *bj, uint64_t t, int *dense)
{
    for (size_t i = 0; i < bj->ndense; i++)
        if (t >= bj->dense[i].from && t < bj->dense[i].to) {
            *dense = 1;
            return bj->dense[i].every;
        }
    *dense = 0;
    return bj->default_every;
}

/* The run offers a restart point: if the span since the last one is cheap
 * enough to keep (or long enough, or a range of crec keyframes asks for
 * it), it ends, and a span starting at the point begins (its seed is
 * collected as it runs). */
static void job_point(void *ctx, crec_replay_qrun *q, const crec_fmt_keyframe *p)
{
    struct build_job *bj = ctx;
    crec_idx_span next = {.start = p->global_icount, .kf = bj->kf, .at_point = 1};
    uint64_t len = p->global_icount - bj->cur.start;
    uint64_t bytes = 10 * (uint64_t)(bj->b.touch.n + bj->b.seed.n);
    int dense;
    uint64_t every = every_at(bj, p->global_icount, &dense);

    /* offered as often as the densest range asks: elsewhere at the default */
    if (every == 0 || p->global_icount - bj->last_taken < every)
        return;
    if (bj->b.nomem || bj->kf >= bj->last)
        return;
    if (dense ? bj->b.seed.n > DENSE_POINT_LINES
              : len < BUILD_SPAN_MAX && 8 * 1000 * bytes > BUILD_BITS_MILLI * len)
        return;
    bj->last_taken = p->global_icount;
    job_close(bj, q);
    next.point = crec_malloc(sizeof *next.point);
    if (!next.point)
        job_nomem(bj);
    else
        *next.point = *p;
    bj->cur = next;
}

static void job_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr, uint64_t len)
{
    struct build_job *bj = ctx;

    seg_access(&bj->b, q, kind, addr, len);
}

static void *job_main(void *arg)
{
    struct build_job *bj = arg;
    crec_replay_watch w = {job_access, job_keyframe, bj, job_point, bj->point_every};
    crec_fmt_reader *r = NULL;
    crec_replay_qrun *q = NULL;
    crec_error err = {0};
    int rc;

    bj->kf = bj->first;
    crec_thread_cpu_lap(&bj->cpu_at);
    bj->cur = (crec_idx_span){.start = bj->kfs[bj->first].global_icount, .kf = bj->first};
    bj->last_taken = bj->kfs[bj->first].global_icount;
    rc = crec_fmt_reader_open(bj->path, &r, &err);
    if (rc == CREC_OK)
        rc = crec_fmt_reader_select(r, bj->proc, &err);
    if (rc == CREC_OK)
        rc = crec_replay_query(r, bj->kfs, bj->nkf, bj->first, NULL,
                               bj->kfs[bj->last].global_icount, &w, &q, &err);
    if (rc != CREC_OK && bj->rc == CREC_OK) { /* the first error is the job's */
        bj->rc = rc;
        bj->err = err;
    }
    job_keyframe(bj, q, bj->last); /* the end of the recording is no block start */
    crec_replay_qrun_free(q);
    crec_fmt_reader_free(r);
    crec_idx_span_clear(&bj->cur);
    set_free(&bj->b.touch);
    set_free(&bj->b.write);
    set_free(&bj->b.stale);
    seed_free(&bj->b.seed);
    crec_free(bj->b.k);
    pthread_mutex_lock(&bj->sh->mu);
    bj->sh->running--;
    pthread_cond_signal(&bj->sh->cv);
    pthread_mutex_unlock(&bj->sh->mu);
    return NULL;
}

/* ---- the whole build ------------------------------------------------------ */

/* Cut segments [0, nseg) into runs of about equal instruction counts. */
static unsigned plan_jobs(struct build_job *bj, unsigned jobs, const crec_fmt_keyframe *kfs,
                          size_t nseg)
{
    uint64_t t0 = kfs[0].global_icount, total = kfs[nseg].global_icount - t0;
    size_t at = 0;
    unsigned n = 0;

    for (unsigned j = 1; j <= jobs; j++) {
        size_t end = j == jobs ? nseg : at;
        while (end < nseg && kfs[end].global_icount - t0 < total / jobs * j)
            end++;
        if (end > at) {
            bj[n].first = at;
            bj[n].last = end;
            n++;
            at = end;
        }
    }
    return n;
}

/* Wait for the threads, reporting progress now and then. */
static void wait_reporting(struct build_shared *sh, uint64_t total, crec_progress_fn progress,
                           void *pctx)
{
    pthread_mutex_lock(&sh->mu);
    while (sh->running > 0) {
        struct timespec until;
        uint64_t done = sh->done;
        pthread_mutex_unlock(&sh->mu);
        if (progress)
            progress(pctx, done, total);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&sh->mu);
        if (sh->running > 0)
            pthread_cond_timedwait(&sh->cv, &sh->mu, &until);
    }
    pthread_mutex_unlock(&sh->mu);
    if (progress)
        progress(pctx, total, total);
}

/* What the index keeps besides the spans: where the blobs lie, the ranges
 * ever mapped, the syscall times and the key frames (docs/QUERY.md). */
int crec_idx_read_tables(const char *path, uint32_t proc, const crec_fmt_keyframe *kfs,
                         size_t nkf, crec_idx *ix, crec_error *err)
{
    const crec_fmt_blob_loc *locs;
    crec_fmt_reader *r = NULL;
    size_t n = 0;
    int rc = crec_fmt_reader_open(path, &r, err);

    if (rc == CREC_OK)
        rc = crec_fmt_reader_select(r, proc, err);

    if (rc == CREC_OK)
        rc = crec_fmt_blob_table(r, &locs, &n, err);
    if (rc == CREC_OK && !(ix->blobs = crec_malloc((n ? n : 1) * sizeof *locs)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
    if (rc == CREC_OK) {
        if (n)
            memcpy(ix->blobs, locs, n * sizeof *locs);
        ix->nblobs = n;
        rc = crec_idx_scan_events(r, kfs, nkf, &ix->mapped, &ix->nmapped, &ix->syscalls,
                                  &ix->nsyscalls, err);
    }
    if (rc == CREC_OK)
        rc = crec_idx_scan_keyframes(r, nkf, &ix->kf_off, err);
    if (rc == CREC_OK && !(ix->kfs = crec_malloc((nkf ? nkf : 1) * sizeof *kfs)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
    if (rc == CREC_OK) { /* registers are not kept: they are read when needed */
        for (size_t i = 0; i < nkf; i++) {
            ix->kfs[i] = kfs[i];
            memset(&ix->kfs[i].regs, 0, sizeof ix->kfs[i].regs);
        }
        ix->nkf = nkf;
    }
    crec_fmt_reader_free(r);
    return rc;
}

/* Restart points every 1/BUILD_POINTS of the key-frame interval (of the
 * check-point interval when key frames are placed by cost, format 4), not
 * closer than BUILD_POINT_MIN instructions (0: none). */
static uint64_t point_every(const char *path)
{
    crec_fmt_reader *r = NULL;
    uint64_t every = 0; /* the header's: every process's */

    if (crec_fmt_reader_open(path, &r, NULL) == CREC_OK) {
        const crec_fmt_header *h = crec_fmt_reader_header(r);
        every = (h->keyframe_interval ? h->keyframe_interval : h->checkpoint_interval) /
                BUILD_POINTS;
    }
    crec_fmt_reader_free(r);
    return every < BUILD_POINT_MIN ? 0 : every;
}

/* The spans of every job, in time order, into the index. */
static int gather(crec_idx *ix, struct build_job *bj, unsigned n, crec_error *err)
{
    size_t total = 0;

    for (unsigned j = 0; j < n; j++)
        total += bj[j].nspans;
    ix->spans = crec_calloc(total ? total : 1, sizeof *ix->spans);
    for (unsigned j = 0; j < n; j++) {
        if (ix->spans && bj[j].nspans)
            memcpy(ix->spans + ix->nspan, bj[j].spans, bj[j].nspans * sizeof *bj[j].spans);
        else
            for (size_t i = 0; i < bj[j].nspans; i++)
                crec_idx_span_clear(&bj[j].spans[i]);
        ix->nspan += ix->spans ? bj[j].nspans : 0;
        crec_free(bj[j].spans);
    }
    return ix->spans ? CREC_OK
                     : crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
}

int crec_idx_build(const char *path, uint32_t proc, const crec_fmt_keyframe *kfs, size_t nkf,
                   unsigned jobs, int values, crec_progress_fn progress, void *pctx,
                   crec_idx **out, crec_error *err)
{
    struct build_job bj[BUILD_MAX_JOBS];
    pthread_t th[BUILD_MAX_JOBS];
    struct build_shared sh = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    size_t nseg = nkf ? nkf - 1 : 0, ndense = 0;
    unsigned n = 0, started = 0;
    uint64_t every = point_every(path), offer = every;
    crec_idx_dense *dense = NULL;
    crec_idx *ix;
    int rc;

    *out = NULL;
    if (!(ix = crec_calloc(1, sizeof *ix)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
    if (proc == 0) /* crec keyframes asked for more (of the first process: its times) */
        crec_idx_dense_read(path, &dense, &ndense);
    for (size_t i = 0; i < ndense; i++)
        if (offer == 0 || dense[i].every < offer)
            offer = dense[i].every;
    rc = crec_idx_recording_id(path, &ix->rec_size, &ix->rec_hash, err);
    if (rc == CREC_OK)
        rc = crec_idx_read_tables(path, proc, kfs, nkf, ix, err);
    memset(bj, 0, sizeof bj);
    if (rc == CREC_OK && nseg > 0) {
        jobs = jobs < 1 ? 1 : jobs > BUILD_MAX_JOBS ? BUILD_MAX_JOBS : jobs;
        n = plan_jobs(bj, jobs, kfs, nseg);
    }
    sh.running = n;
    for (unsigned j = 0; j < n; j++) {
        bj[j].path = path, bj[j].proc = proc, bj[j].kfs = kfs, bj[j].nkf = nkf, bj[j].sh = &sh;
        bj[j].values = values;
        bj[j].point_every = offer;
        bj[j].default_every = every;
        bj[j].dense = dense, bj[j].ndense = ndense;
        if (pthread_create(&th[j], NULL, job_main, &bj[j]) != 0)
            break;
        started++;
    }
    if (started < n) {
        pthread_mutex_lock(&sh.mu);
        sh.running -= n - started;
        pthread_mutex_unlock(&sh.mu);
        rc = crec_error_set(err, CREC_ERR_NOMEM, "can't start a thread to build the index");
    }
    if (n > 0)
        wait_reporting(&sh, kfs[nseg].global_icount - kfs[0].global_icount, progress, pctx);
    for (unsigned j = 0; j < started; j++) {
        pthread_join(th[j], NULL);
        if (bj[j].rc != CREC_OK && rc == CREC_OK) {
            rc = bj[j].rc;
            if (err)
                *err = bj[j].err;
        }
    }
    if (rc == CREC_OK)
        rc = gather(ix, bj, started, err);
    else
        for (unsigned j = 0; j < started; j++) {
            for (size_t i = 0; i < bj[j].nspans; i++)
                crec_idx_span_clear(&bj[j].spans[i]);
            crec_free(bj[j].spans);
        }
    crec_free(dense);
    if (rc != CREC_OK) {
        crec_idx_free(ix);
        return rc;
    }
    *out = ix;
    return CREC_OK;
}
