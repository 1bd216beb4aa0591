/*
 * session.c - crec_replay_run: load the key frames, cut the recording into
 * runs of segments, replay them (in parallel with --jobs) and merge what
 * each found.
 *
 * Every segment between two key frames replays alone, because the recorder
 * flushed its prediction cache at each key frame and listed the memory map
 * after it.  So N threads can each take a contiguous run of segments, with
 * their own reader and CPU, and check their last key frame; the run that
 * reaches the end of the recording also checks how it ended.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/common.h"
#include "replayer/replayer_int.h"

#define REP_MAX_JOBS 64
#define REP_POINT_COST 4 /* twice what a part from a restart point costs an
                            instruction, to one from a key frame, when the
                            index does not say (index version 5) */
#define REP_SEED_COST 2.0 /* see point_part_cost */

/* Does a STOP mark say that no --start-at trigger came? */
static int nothing_recorded(crec_fmt_reader *r)
{
    crec_fmt_marks m;
    int never = crec_fmt_marks_read(r, &m, NULL) == CREC_OK && m.stop.kind &&
                m.stop.u.stop.why == CREC_FMT_STOP_NEVER;

    crec_fmt_marks_clear(&m);
    return never;
}

/* Append kf to the array *v of *n (capacity *cap).  @return 0, -1 no memory. */
static int kf_push(crec_fmt_keyframe **v, size_t *n, size_t *cap, const crec_fmt_keyframe *kf)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        crec_fmt_keyframe *p = crec_realloc(*v, ncap * sizeof *p);
        if (!p)
            return -1;
        *v = p, *cap = ncap;
    }
    (*v)[(*n)++] = *kf;
    return 0;
}

int rep_load_points(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                    crec_fmt_keyframe **cps, size_t *ncp, crec_error *err)
{
    crec_fmt_cursor *c;
    crec_fmt_keyframe *kfs = NULL, *cv = NULL, one;
    size_t cap = 0, len = 0, ccap = 0, clen = 0;
    uint64_t last = 0;
    const uint8_t *body;
    size_t blen;
    int kind, rc;
    uint32_t version = crec_fmt_reader_header(r)->version;

    rc = crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        if (kind != CREC_FMT_K_KEYFRAME && (kind != CREC_FMT_K_CHECKPOINT || version < 4)) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the KEYFRAMES stream", kind);
            break;
        }
        rc = crec_fmt_kf_decode(body, blen, &one, err);
        if (rc != CREC_OK)
            break;
        if (len + clen > 0 && one.global_icount < last) {
            rc = crec_error_corrupt(err, "%s %zu goes back in time",
                                    kind == CREC_FMT_K_KEYFRAME ? "key frame" : "check point",
                                    kind == CREC_FMT_K_KEYFRAME ? len : clen);
            break;
        }
        last = one.global_icount;
        if (kind == CREC_FMT_K_CHECKPOINT && !cps)
            continue;
        if (kind == CREC_FMT_K_KEYFRAME ? kf_push(&kfs, &len, &cap, &one)
                                        : kf_push(&cv, &clen, &ccap, &one)) {
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory loading key frames");
            break;
        }
    }
    crec_fmt_cursor_free(c);
    /* In a file cut short, KEYFRAMES may end inside the record its last
     * chunk began (a chunk is cut when it is full): the key frames before
     * it are the recording's. */
    if (rc == CREC_ERR_TRUNCATED)
        rc = CREC_ERR_NOTFOUND;
    if (rc == CREC_ERR_NOTFOUND && len == 0 && nothing_recorded(r))
        rc = crec_error_set(err, CREC_ERR_NOTFOUND, "nothing was recorded: no --start-at "
                            "trigger came");
    else if (rc == CREC_ERR_NOTFOUND && len == 0 && crec_fmt_reader_truncated(r, NULL, NULL))
        rc = crec_error_set(err, CREC_ERR_TRUNCATED, "the recording was cut short before its "
                            "first key frame: nothing to verify");
    else if (rc == CREC_ERR_NOTFOUND && len == 0)
        rc = crec_error_corrupt(err, "the recording has no key frame");
    else if (rc == CREC_ERR_NOTFOUND)
        rc = CREC_OK;
    if (rc != CREC_OK) {
        crec_free(kfs);
        crec_free(cv);
        return rc;
    }
    *out = kfs;
    *n = len;
    if (cps) {
        *cps = cv;
        *ncp = clen;
    }
    return CREC_OK;
}

int rep_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                       crec_error *err)
{
    return rep_load_points(r, out, n, NULL, NULL, err);
}

size_t rep_threads(const crec_fmt_reader *r)
{
    size_t n = 0;

    for (size_t i = 0; i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        if (crec_fmt_reader_stream(r, i, &si, NULL) == CREC_OK && si.type == CREC_FMT_S_EVENTS)
            n++;
    }
    return n;
}

int rep_thread_keyframes(const crec_fmt_keyframe *kfs, size_t nkf, uint32_t tid,
                         crec_fmt_keyframe **out, size_t *n, crec_error *err)
{
    crec_fmt_keyframe *v;
    size_t k = 0;

    *out = NULL, *n = 0;
    for (size_t i = 0; i < nkf; i++)
        k += kfs[i].tid == tid;
    if (k == 0)
        return CREC_OK;
    if (!(v = crec_malloc(k * sizeof *v)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the key frames of thread %u",
                              tid);
    k = 0;
    for (size_t i = 0; i < nkf; i++)
        if (kfs[i].tid == tid) {
            if (k > 0 && kfs[i].thread_icount < v[k - 1].thread_icount) {
                crec_free(v);
                return crec_error_corrupt(err, "the key frames of thread %u go back in time", tid);
            }
            v[k++] = kfs[i];
        }
    *out = v, *n = k;
    return CREC_OK;
}

/* ---- pieces on a pool of host threads ----------------------------------------- */

/* Pieces of replay (rep_seg) spread over host threads, in order. */
struct pool {
    const char *path;
    uint32_t proc;            /* the process replayed */
    crec_fmt_reader *r0;      /* the caller's reader, for the first worker */
    struct rep_seg *segs;
    unsigned nsegs;
    unsigned next;            /* the next piece to take */
    pthread_mutex_t mu;
};

struct worker {
    struct pool *p;
    unsigned id;
    int rc;
    crec_error err;
};

/* A part cut at restart points: the points it starts at and passes (or,
 * at_end, the one it ends at), read now on the part's own thread (a point
 * it ends at when it is there, which the next part has read by then, most
 * likely) and checked to be the thread's, at the times the plan took them
 * at.  @return 0, or -1 (meet_failed: the replay is done again without
 * the points). */
static int part_points(struct rep_seg *s, int at_end)
{
    const struct rep_points *P = s->points;
    size_t hi = s->pt_hi + 2;

    for (size_t k = s->pt_lo; k < hi; k++) {
        size_t i = k < s->pt_hi ? k : k == s->pt_hi ? s->pt_start : s->pt_end;
        const crec_replay_from *f;
        if ((k > s->pt_hi) != at_end || i == SIZE_MAX)
            continue; /* where the part ends: once it is there, and only that */
        f = &P->pts[i];
        if (P->fn->need(P->fn->ctx, P->keep, i) != CREC_OK || !f->point ||
            f->point->thread_icount != P->times[i] || f->point->tid != s->kfs[0].tid ||
            (f->nlines && (!f->lines || !f->values))) {
            s->meet_failed = 1;
            snprintf(s->meet_what, sizeof s->meet_what, "the index can't give the restart "
                     "point at instruction %" PRIu64, P->times[i]);
            return -1;
        }
    }
    if (s->pt_start != SIZE_MAX && !at_end) {
        const crec_replay_from *f = &P->pts[s->pt_start];
        s->start = f->point;
        s->from_lines = f->lines, s->from_values = f->values, s->from_masks = f->masks;
        s->from_nlines = f->nlines;
        s->pass = &P->pts[s->pt_lo];
        s->npass = s->pt_hi - s->pt_lo;
    }
    if (at_end && s->pt_end != SIZE_MAX)
        s->end_point = &P->pts[s->pt_end];
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct pool *p = w->p;
    crec_fmt_reader *r = NULL;

    if (w->id == 0)
        r = p->r0;
    else if ((w->rc = crec_fmt_reader_open(p->path, &r, &w->err)) != CREC_OK ||
             (w->rc = crec_fmt_reader_select(r, p->proc, &w->err)) != CREC_OK) {
        crec_fmt_reader_free(r);
        r = NULL;
    }
    for (;;) {
        struct rep_seg *s;
        pthread_mutex_lock(&p->mu);
        s = p->next < p->nsegs ? &p->segs[p->next++] : NULL;
        pthread_mutex_unlock(&p->mu);
        if (!s)
            break;
        if (!r) { /* no reader for this worker: the piece fails with its error */
            s->failed = 1;
            s->err = w->err;
        } else {
            s->r = r;
            if (!s->points || part_points(s, 0) == 0)
                rep_seg_run(s);
            /* it stopped where the next part starts: does it meet it? */
            if (s->points && s->pt_end != SIZE_MAX && s->cpu && !s->diverged && !s->failed &&
                !s->meet_failed && part_points(s, 1) == 0)
                rep_seg_meet(s);
            /* what merge() needs, then the CPU goes: at most one per host
             * thread is alive (an engine holds a big code buffer); a part
             * that ends at a restart point keeps its memory, for the next
             * part to be checked against (parts_held) */
            if (s->cpu) /* the gaps jumped over were not replayed */
                s->replayed = crec_emu_cpu_icount(s->cpu) - s->skipped -
                              (s->whole ? 0 : s->start->thread_icount);
            if (!s->end_point || s->diverged || s->failed || s->meet_failed)
                rep_seg_close(s);
        }
        __atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
    }
    if (w->id != 0)
        crec_fmt_reader_free(r);
    return NULL;
}

/* Instructions the pieces have replayed so far (read while they run). */
static uint64_t pieces_done(struct rep_seg *segs, unsigned n)
{
    uint64_t done = 0;

    for (unsigned j = 0; j < n; j++) {
        uint64_t at = __atomic_load_n(&segs[j].at, __ATOMIC_RELAXED);
        uint64_t start = segs[j].t0;
        if (__atomic_load_n(&segs[j].finished, __ATOMIC_ACQUIRE))
            at = segs[j].stop_at;
        done += at > start ? at - start : 0;
    }
    return done;
}

static int pieces_finished(struct rep_seg *segs, unsigned n)
{
    for (unsigned j = 0; j < n; j++)
        if (!__atomic_load_n(&segs[j].finished, __ATOMIC_ACQUIRE))
            return 0;
    return 1;
}

/*
 * Run the pieces on `jobs` host threads and wait for them all: the calling
 * thread is left free to report progress (o->progress).  Every worker has
 * its own reader; a worker whose thread can't be created runs on the
 * calling thread instead.
 */
static void run_pool(const char *path, crec_fmt_reader *r0, struct rep_seg *segs, unsigned n,
                     unsigned jobs, const crec_replay_options *o, uint64_t total)
{
    const struct timespec tenth = {0, 100 * 1000 * 1000};
    struct pool p = {path, crec_fmt_reader_selected(r0), r0, segs, n, 0,
                     PTHREAD_MUTEX_INITIALIZER};
    struct worker w[REP_MAX_JOBS];
    pthread_t th[REP_MAX_JOBS];
    int started[REP_MAX_JOBS];

    if (jobs > n)
        jobs = n;
    for (unsigned j = 0; j < jobs; j++) {
        w[j] = (struct worker){&p, j, CREC_OK, {0}};
        started[j] = pthread_create(&th[j], NULL, worker_main, &w[j]) == 0;
        if (!started[j])
            worker_main(&w[j]);
    }
    if (o->progress)
        while (!pieces_finished(segs, n)) {
            nanosleep(&tenth, NULL);
            o->progress(o->progress_ctx, pieces_done(segs, n), total);
        }
    for (unsigned j = 0; j < jobs; j++)
        if (started[j])
            pthread_join(th[j], NULL);
}

/* The first key frame to start from: the last one at or before `from`
 * (global time) among the first nblocks. */
static size_t start_index(const crec_fmt_keyframe *kfs, size_t nblocks, uint64_t from)
{
    size_t i = 0;

    while (i + 1 < nblocks && kfs[i + 1].global_icount <= from)
        i++;
    return i;
}

/* What the pieces found, into res; the first failure into err. */
static int merge(struct rep_seg *segs, unsigned n, crec_replay_result *res, crec_error *err)
{
    int rc = CREC_OK;

    for (unsigned j = 0; j < n; j++) {
        struct rep_seg *s = &segs[j];
        res->keyframes_checked += s->keyframes_checked;
        res->checkpoints_checked += s->checkpoints_checked;
        res->syscalls += s->syscalls;
        res->writes_checked += s->writes_checked;
        res->replayed += s->replayed;
        if (s->diverged && (!res->diverged || s->div.icount < res->div.icount)) {
            res->diverged = 1;
            res->div = s->div;
        }
        if (s->failed && rc == CREC_OK) {
            *err = s->err;
            rc = err->code ? (int)err->code : CREC_ERR_CORRUPT;
        }
        if (s->have_exit) {
            res->exited_by_signal = s->exit.u.exit.how == CREC_FMT_EXIT_SIGNAL;
            res->exit_value = s->exit.u.exit.value;
        }
    }
    return rc;
}

/* Cut key frames [first, last] of one thread into `k` pieces of about
 * equal instruction counts, appended to segs. */
static void plan_pieces(struct rep_seg *segs, unsigned *n, const crec_fmt_keyframe *kfs,
                        size_t nkf, const crec_fmt_keyframe *cps, size_t ncp, size_t first,
                        unsigned k, int truncated, int alone)
{
    size_t last = nkf - 1, at = first;
    uint64_t t0 = kfs[first].thread_icount, span = kfs[last].thread_icount - t0;

    if (k > last - first)
        k = last - first ? (unsigned)(last - first) : 1;
    for (unsigned j = 1; j <= k; j++) {
        struct rep_seg *s = &segs[(*n)++];
        size_t end = j == k ? last : at + 1;
        while (end < last && kfs[end].thread_icount - t0 < span / k * j)
            end++;
        if (end >= last && j < k)
            end = last;
        s->kfs = kfs, s->nkf = nkf;
        s->cps = cps, s->ncp = ncp;
        s->first = at, s->end_kf = end;
        s->is_last = end == last;
        s->start = &kfs[at];
        s->truncated = truncated;
        s->stop_at = kfs[end].thread_icount;
        s->nkf_blocks = s->is_last && !truncated ? nkf - 1 : end + 1;
        s->at = s->t0 = kfs[at].thread_icount;
        s->alone = alone;
        at = end;
        if (end == last)
            break;
    }
}

/* The last key frame of [first, last] before time t. */
static size_t kf_before(const crec_fmt_keyframe *kfs, size_t first, size_t last, uint64_t t)
{
    while (first < last && kfs[first + 1].thread_icount < t)
        first++;
    return first;
}

/* Are the restart points usable here: in time order, each strictly inside
 * a segment of [first, last] (no key frame at its time)?  The index is not
 * trusted for more: a point that is wrong in any other way makes its part
 * fail, and the replay is done again. */
static int points_fit(const crec_fmt_keyframe *kfs, size_t first, size_t last,
                      const uint64_t *times, size_t n)
{
    size_t k = first;

    for (size_t i = 0; i < n; i++) {
        if (i > 0 && times[i] <= times[i - 1])
            return 0;
        if (times[i] <= kfs[first].thread_icount || times[i] >= kfs[last].thread_icount)
            continue; /* outside the replay: not a cut (the order is all that matters) */
        k = kf_before(kfs, k, last, times[i]);
        if (kfs[k + 1].thread_icount == times[i])
            return 0;
    }
    return 1;
}

/* A cut between two parts: key frame kf, or restart point pt (pt < SIZE_MAX). */
struct cut {
    uint64_t t;
    size_t kf, pt;
};

/* The cost of the instructions before t, as the index's spans measured it
 * (linear inside a span; the last one runs to `end`). */
static double cost_before(const crec_replay_costs *c, uint64_t t, uint64_t end)
{
    double acc = 0;

    for (size_t i = 0; i < c->n && t > c->start[i]; i++) {
        uint64_t e = i + 1 < c->n ? c->start[i + 1] : end;
        if (t >= e)
            acc += (double)c->cost[i];
        else
            return acc + (double)c->cost[i] * (double)(t - c->start[i]) / (double)(e - c->start[i]);
    }
    return acc;
}

/* The instruction count where the cost before it reaches `cost`. */
static uint64_t cost_time(const crec_replay_costs *c, double cost, uint64_t end)
{
    double acc = 0;

    for (size_t i = 0; i < c->n; i++) {
        uint64_t e = i + 1 < c->n ? c->start[i + 1] : end;
        double in = cost - acc > 0 ? cost - acc : 0;
        if (acc + (double)c->cost[i] >= cost)
            return c->start[i] + (uint64_t)((double)(e - c->start[i]) * in / (double)c->cost[i]);
        acc += (double)c->cost[i];
    }
    return end;
}

/* Can the plan go by the index's costs: every span measured, covering
 * [t0, end) in order? */
static int costs_fit(const crec_replay_costs *c, uint64_t t0, uint64_t end)
{
    if (c->n == 0 || c->start[0] > t0)
        return 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->cost[i] == 0 || (i > 0 && c->start[i] <= c->start[i - 1]) || c->start[i] >= end)
            return 0;
    return 1;
}

/*
 * What a part from restart points costs, to a part from a key frame of the
 * same cost: it is given the seed of its first point and of every point it
 * passes, and tracks what it holds through a memory hook.  1 + the seeds'
 * bytes an instruction * REP_SEED_COST, fitted on the bench's workloads
 * (`replay --jobs 2` of bench_hash 500000, seeds of 0.26 bytes an
 * instruction: fastest cut between 1.5 and 1.8; python3 wordcount, 0.04
 * bytes: between 1.03 and 1.1; bench_chase, bench_memkernel: 1.3 to 2).
 */
static double point_part_cost(const crec_replay_costs *c, uint64_t t0, uint64_t end)
{
    double seed = 0;

    for (size_t i = 0; i < c->n; i++)
        if (c->start[i] > t0 && c->start[i] < end)
            seed += (double)c->seed[i];
    return 1 + REP_SEED_COST * seed / (double)(end - t0);
}

/* The instruction count a fraction frac into [t0, end): of its cost if
 * costs is set, else of its instructions. */
static uint64_t plan_at(const crec_replay_costs *costs, uint64_t t0, uint64_t end, double frac)
{
    double c0, c1;

    if (!costs)
        return t0 + (uint64_t)((double)(end - t0) * frac);
    c0 = cost_before(costs, t0, end), c1 = cost_before(costs, end, end);
    return cost_time(costs, c0 + (c1 - c0) * frac, end);
}

/*
 * Cut key frames [first, last] of one thread into k parts of about equal
 * cost (as the index measured it; else of equal instruction counts), at
 * key frames or at restart points (which points_fit): a key frame near the
 * ideal cut is taken rather than a point, which makes the part hang on the
 * index.  Each part reads its points on its own thread (part_points).
 * *by_cost says whether costs were known.  @return how many parts start
 * at a restart point.
 */
static unsigned plan_parts(struct rep_seg *segs, unsigned *n, const crec_fmt_keyframe *kfs,
                           size_t nkf, const crec_fmt_keyframe *cps, size_t ncp, size_t first,
                           unsigned k, const struct rep_points *points, int *by_cost)
{
    const uint64_t *times = points->times;
    size_t last = nkf - 1, p0 = 0, pe, ncut = 1;
    uint64_t t0 = kfs[first].thread_icount, span = kfs[last].thread_icount - t0;
    uint64_t end = kfs[last].thread_icount;
    const crec_replay_costs *costs = costs_fit(&points->costs, t0, end) ? &points->costs : NULL;
    double point_cost = costs ? point_part_cost(costs, t0, end) : REP_POINT_COST / 2.0;

    *by_cost = costs != NULL;
    struct cut cuts[REP_MAX_JOBS + 1];
    unsigned at_points = 0;

    while (p0 < points->n && times[p0] <= t0)
        p0++;
    pe = p0;
    while (pe < points->n && times[pe] < kfs[last].thread_icount)
        pe++;
    cuts[0] = (struct cut){t0, first, SIZE_MAX};
    for (unsigned j = 1; j < k; j++) {
        uint64_t want = plan_at(costs, t0, end, (double)j / k), slack = span / k / 8, d;
        struct cut best = {0, 0, SIZE_MAX};
        uint64_t bestd = UINT64_MAX;
        for (size_t i = first + 1; i < last; i++) {
            d = kfs[i].thread_icount > want ? kfs[i].thread_icount - want
                                            : want - kfs[i].thread_icount;
            if (kfs[i].thread_icount > cuts[ncut - 1].t && d < bestd)
                best = (struct cut){kfs[i].thread_icount, i, SIZE_MAX}, bestd = d;
        }
        /* no key frame near: a point, where a part from a point costs more
         * than one from a key frame (it tracks what it holds, reads the
         * index): the first part, which starts at a key frame, is made
         * longer, as if the others ran REP_POINT_COST / 2 times slower */
        if (bestd > slack) {
            want = plan_at(costs, t0, end, 1 - (double)(k - j) / (point_cost + (k - 1)));
            bestd = UINT64_MAX;
        }
        if (bestd == UINT64_MAX)
            for (size_t i = p0; i < pe; i++) {
                d = times[i] > want ? times[i] - want : want - times[i];
                if (times[i] > cuts[ncut - 1].t && d < bestd)
                    best = (struct cut){times[i], 0, i}, bestd = d;
            }
        if (bestd != UINT64_MAX)
            cuts[ncut++] = best;
    }
    cuts[ncut++] = (struct cut){kfs[last].thread_icount, last, SIZE_MAX};
    for (size_t j = 0; j + 1 < ncut; j++) {
        const struct cut *a = &cuts[j], *b = &cuts[j + 1];
        struct rep_seg *s = &segs[(*n)++];
        s->kfs = kfs, s->nkf = nkf;
        s->cps = cps, s->ncp = ncp;
        s->first = a->pt == SIZE_MAX ? a->kf : kf_before(kfs, first, last, a->t);
        s->start = &kfs[s->first]; /* a point's record once the part has read it */
        s->points = points;
        s->pt_start = a->pt, s->pt_end = b->pt;
        s->pt_lo = s->pt_hi = 0;
        if (a->pt != SIZE_MAX) { /* from the point, and through the points after it */
            s->pt_lo = s->pt_hi = a->pt + 1;
            while (s->pt_hi < pe && times[s->pt_hi] < b->t)
                s->pt_hi++;
            at_points++;
        }
        if (b->pt == SIZE_MAX) {
            s->end_kf = b->kf;
            s->is_last = b->kf == last;
        } else {
            s->end_kf = kf_before(kfs, first, last, b->t);
        }
        s->stop_at = b->t;
        s->nkf_blocks = s->is_last ? nkf - 1 : s->end_kf + 1;
        s->at = s->t0 = a->t;
    }
    return at_points;
}

/*
 * Did the parts cut at restart points hold?  Each ran to its end with
 * nothing found, met the next one's start, and what the next one took
 * from the seeds of the points it passed is what this one held there.
 * Anything else (a divergence too) is found again by a replay cut at key
 * frames only: the index must never be what a divergence is blamed on.
 */
static int parts_held(const struct rep_seg *segs, unsigned n)
{
    for (unsigned j = 0; j < n; j++) {
        const struct rep_seg *s = &segs[j];
        if (s->diverged || s->failed || s->meet_failed || (s->end_point && j + 1 >= n) ||
            (s->points && s->pt_end != SIZE_MAX && !s->end_point) ||
            (j > 0 && s->trk_cap && !rep_parts_meet(segs, j)))
            return 0;
    }
    return 1;
}

static void segs_free(struct rep_seg *segs, unsigned n)
{
    for (unsigned j = 0; j < n; j++) {
        rep_seg_close(&segs[j]);
        rep_parts_free(&segs[j]);
    }
    crec_free(segs);
}

/* One thread of a recording: its key frames and check points. */
struct rep_view {
    uint32_t tid;
    crec_fmt_keyframe *kfs, *cps;
    size_t nkf, ncp;
};

/* The threads of the recording (by number) and each one's key frames and
 * check points (cps may be NULL). */
static int thread_views(const crec_fmt_keyframe *kfs, size_t nkf, const crec_fmt_keyframe *cps,
                        size_t ncp, struct rep_view **out, size_t *n, crec_error *err)
{
    uint32_t max = 0;
    struct rep_view *v;
    int rc = CREC_OK;

    for (size_t i = 0; i < nkf; i++)
        if (kfs[i].tid > max)
            max = kfs[i].tid;
    if (max == 0 || max > CREC_FMT_MAX_THREADS)
        return crec_error_corrupt(err, "key frames of thread %u", max);
    if (!(v = crec_calloc(max, sizeof *v)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %u threads", max);
    for (uint32_t t = 1; t <= max && rc == CREC_OK; t++) {
        v[t - 1].tid = t;
        rc = rep_thread_keyframes(kfs, nkf, t, &v[t - 1].kfs, &v[t - 1].nkf, err);
        if (rc == CREC_OK && cps)
            rc = rep_thread_keyframes(cps, ncp, t, &v[t - 1].cps, &v[t - 1].ncp, err);
    }
    if (rc != CREC_OK) {
        for (uint32_t t = 0; t < max; t++)
            crec_free(v[t].kfs), crec_free(v[t].cps);
        crec_free(v);
        return rc;
    }
    *out = v, *n = max;
    return CREC_OK;
}

static void views_free(struct rep_view *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        crec_free(v[i].kfs), crec_free(v[i].cps);
    crec_free(v);
}

/* Where the first parts of one thread start, for the user to see. */
static void part_starts(crec_replay_result *res, const struct rep_seg *segs, unsigned n)
{
    for (unsigned j = 0; j < n && j < CREC_REPLAY_PARTS_SHOWN; j++)
        res->part_start[j] = segs[j].t0;
}

/* Replay pieces: every segment of the recording (one thread), or of each
 * thread alone (several), on o->jobs host threads. */
static int run_pieces(const char *path, crec_fmt_reader *r0, const crec_fmt_keyframe *kfs,
                      size_t nkf, const crec_fmt_keyframe *cps, size_t ncp,
                      struct rep_view *views, size_t nviews, int truncated,
                      const struct rep_points *points, const crec_replay_options *o,
                      crec_replay_result *res, crec_error *err)
{
    unsigned jobs = o->jobs ? o->jobs : 1, n = 0, cap = 0;
    uint64_t total = 0;
    struct rep_seg *segs;
    int rc;

    if (jobs > REP_MAX_JOBS)
        jobs = REP_MAX_JOBS;
    if (!views) { /* one thread: `jobs` runs of segments, as before threads */
        size_t nblocks = truncated ? nkf : nkf - 1;
        size_t first = start_index(kfs, nblocks ? nblocks : 1, o->from);
        if (!(segs = crec_calloc(jobs, sizeof *segs)))
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %u replay jobs", jobs);
        res->start_icount = kfs[first].global_icount;
        total = kfs[nkf - 1].thread_icount - kfs[first].thread_icount;
        res->instructions = kfs[nkf - 1].global_icount;
        /* at the index's restart points too, where key frames are few */
        if (points && jobs > 1 && !truncated && nkf > 1 &&
            points_fit(kfs, first, nkf - 1, points->times, points->n) &&
            (res->parts_at_points = plan_parts(segs, &n, kfs, nkf, cps, ncp, first, jobs,
                                               points, &res->parts_by_cost)) > 0) {
            run_pool(path, r0, segs, n, jobs, o, total);
            if (parts_held(segs, n)) {
                res->parts = n;
                part_starts(res, segs, n);
                rc = merge(segs, n, res, err);
                segs_free(segs, n);
                return rc;
            }
            /* not trusted: everything again, cut at key frames only */
            segs_free(segs, n);
            res->parts_at_points = 0;
            res->parts_by_cost = 0;
            res->points_failed = 1;
            n = 0;
            if (!(segs = crec_calloc(jobs, sizeof *segs)))
                return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %u replay jobs",
                                      jobs);
        } else {
            n = 0;
            memset(segs, 0, jobs * sizeof *segs);
            res->parts_at_points = 0;
            res->parts_by_cost = 0; /* a plan of key frames only is made below */
        }
        plan_pieces(segs, &n, kfs, nkf, cps, ncp, first, jobs, truncated, 0);
    } else { /* threads alone: pieces of about a jobs-th of the average thread */
        uint64_t sum = 0, piece;
        for (size_t t = 0; t < nviews; t++)
            if (views[t].nkf && (!o->thread || o->thread == views[t].tid))
                sum += views[t].kfs[views[t].nkf - 1].thread_icount, cap += 1 + jobs;
        if (cap == 0)
            return crec_error_set(err, CREC_ERR_ARG, "no thread %u in the recording", o->thread);
        piece = sum / (2 * jobs) + 1;
        if (!(segs = crec_calloc(cap, sizeof *segs)))
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the replay pieces");
        res->start_icount = UINT64_MAX;
        for (size_t t = 0; t < nviews; t++) {
            const struct rep_view *v = &views[t];
            size_t first;
            uint64_t len;
            if (!v->nkf || (o->thread && o->thread != v->tid))
                continue;
            first = start_index(v->kfs, truncated ? v->nkf : v->nkf - 1, o->from);
            if (first >= v->nkf - 1 && v->nkf > 1 && !truncated)
                first = v->nkf - 2; /* a thread that ended before `from`: its last segment */
            len = v->kfs[v->nkf - 1].thread_icount - v->kfs[first].thread_icount;
            total += len;
            if (v->kfs[first].global_icount < res->start_icount)
                res->start_icount = v->kfs[first].global_icount;
            if (v->nkf == 1) { /* a thread with one key frame: nothing to replay */
                res->keyframes_checked++;
                continue;
            }
            plan_pieces(segs, &n, v->kfs, v->nkf, v->cps, v->ncp, first,
                        (unsigned)(len / piece + 1) > jobs
                        ? jobs : (unsigned)(len / piece + 1), truncated, 1);
        }
        if (res->start_icount == UINT64_MAX)
            res->start_icount = 0;
    }
    res->instructions = kfs[nkf - 1].global_icount;
    if (views && o->thread && views[o->thread - 1].nkf) /* to where that thread ended */
        res->instructions = views[o->thread - 1].kfs[views[o->thread - 1].nkf - 1].global_icount;
    if (n > 0)
        run_pool(path, r0, segs, n, jobs, o, total);
    res->parts = n;
    if (!views)
        part_starts(res, segs, n);
    rc = merge(segs, n, res, err);
    segs_free(segs, n);
    return rc;
}

int rep_whole_open(struct rep_seg *s, crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                   size_t nkf, const crec_fmt_keyframe *cps, size_t ncp, crec_error *err)
{
    struct rep_view *views = NULL;
    crec_fmt_slice *slices = NULL;
    size_t nviews = 0, nslices = 0;
    int rc = thread_views(kfs, nkf, cps, ncp, &views, &nviews, err);

    s->r = r;
    s->whole = s->alone = 1;
    s->owns_whole = 1;
    if (rc == CREC_OK)
        rc = crec_fmt_schedule(r, kfs[nkf - 1].global_icount, &slices, &nslices, err);
    if (rc == CREC_OK && (nslices == 0 || slices[0].tid < 1 || slices[0].tid > nviews ||
                          views[slices[0].tid - 1].nkf == 0))
        rc = crec_error_corrupt(err, "the schedule does not start with a thread that has a "
                                     "key frame");
    if (rc == CREC_OK && !(s->threads = crec_calloc(nviews, sizeof *s->threads)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %zu threads", nviews);
    if (rc != CREC_OK) {
        views_free(views, nviews);
        crec_free(slices);
        return rc;
    }
    s->slices = slices, s->nslices = nslices;
    s->nthreads = nviews;
    for (size_t t = 0; t < nviews; t++) { /* the threads own their key frames now */
        s->threads[t].tid = views[t].tid;
        s->threads[t].kfs = views[t].kfs;
        s->threads[t].nkf = views[t].nkf;
        s->threads[t].cps = views[t].cps;
        s->threads[t].ncp = views[t].ncp;
    }
    crec_free(views);
    s->kfs = s->threads[slices[0].tid - 1].kfs, s->nkf = s->threads[slices[0].tid - 1].nkf;
    s->cps = s->threads[slices[0].tid - 1].cps, s->ncp = s->threads[slices[0].tid - 1].ncp;
    s->first = 0, s->end_kf = s->nkf - 1, s->is_last = 1;
    s->nkf_blocks = s->nkf - 1;
    s->start = &s->kfs[0];
    return CREC_OK;
}

/* The whole program on one CPU, its threads switched as recorded. */
static int run_whole(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                     const crec_fmt_keyframe *cps, size_t ncp, const crec_replay_options *o,
                     crec_replay_result *res, crec_error *err)
{
    struct rep_seg s;
    int rc;

    memset(&s, 0, sizeof s);
    rc = rep_whole_open(&s, r, kfs, nkf, cps, ncp, err);
    if (rc == CREC_OK) {
        if (o->progress) /* one thread: the caller's own reports nothing meanwhile */
            o->progress(o->progress_ctx, 0, kfs[nkf - 1].global_icount);
        rep_whole_run(&s);
        /* from its first key frame: 0, unless a ring dropped the start */
        res->start_icount = kfs[0].global_icount;
        s.replayed = s.cpu ? crec_emu_cpu_icount(s.cpu) - res->start_icount : 0;
        res->instructions = kfs[nkf - 1].global_icount;
        rc = merge(&s, 1, res, err);
    }
    rep_seg_close(&s);
    return rc;
}

/* Does the EVENTS stream hold the EXIT event after key frame `kf`? */
static int has_exit(crec_fmt_reader *r, const crec_fmt_keyframe *kf)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, found = 0;

    if (crec_fmt_cursor_open(r, CREC_FMT_S_EVENTS, kf->tid, kf->events_off, &c, NULL) != CREC_OK)
        return 0;
    while (!found && crec_fmt_cursor_next(c, &kind, &body, &len, NULL) == CREC_OK)
        found = kind == CREC_FMT_K_EXIT;
    crec_fmt_cursor_free(c);
    return found;
}

size_t crec_replay_reachable_keyframes(crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                                       size_t nkf, int *cut)
{
    uint64_t at;
    size_t n = 0;

    *cut = 0;
    if (!crec_fmt_reader_truncated(r, &at, NULL))
        return nkf;
    while (n < nkf && crec_fmt_kf_reached(r, &kfs[n]))
        n++;
    *cut = n < nkf || !has_exit(r, &kfs[nkf - 1]);
    return n;
}

/* Does the recording have gaps (--start-at, --stop-at)?  A whole-program
 * replay does not jump over them; each thread alone does. */
static int has_gaps(crec_fmt_reader *r)
{
    crec_fmt_marks m;
    int gaps = crec_fmt_marks_read(r, &m, NULL) == CREC_OK && m.ngaps > 0;

    crec_fmt_marks_clear(&m);
    return gaps;
}

/* Replay the process selected in r (one process of the recording at
 * `path`, a file that can be opened again and again).  live: a stream still
 * being written, read as it stands; nothing past key frame `o->from` to
 * verify yet is CREC_ERR_NOTFOUND (no message). */
static int replay_one(const char *path, crec_fmt_reader *r, const crec_replay_options *o,
                      int live, const crec_replay_points *pts, crec_replay_result *res,
                      crec_error *err)
{
    crec_fmt_keyframe *kfs = NULL, *cps = NULL;
    size_t nkf = 0, ncp = 0;
    int truncated = 0, rc;

    memset(res, 0, sizeof *res);
    rc = rep_load_points(r, &kfs, &nkf, &cps, &ncp, err);
    if (rc == CREC_OK) {
        nkf = crec_replay_reachable_keyframes(r, kfs, nkf, &truncated);
        if (nkf == 0)
            rc = crec_error_corrupt(err, "the recording was cut short before its first key "
                                         "frame's data");
    }
    if (rc == CREC_OK && live && truncated && kfs[nkf - 1].global_icount <= o->from)
        rc = CREC_ERR_NOTFOUND; /* the stream has not got past `from` yet */
    if (rc == CREC_OK && kfs[nkf - 1].global_icount == 0) /* never "verified" */
        rc = truncated ? crec_error_set(err, CREC_ERR_TRUNCATED, "the recording was cut short "
                                        "before its first complete segment: nothing to verify")
                       : crec_error_set(err, CREC_ERR_NOTFOUND, "the recording holds 0 "
                                        "instructions: nothing to verify");
    if (rc == CREC_OK) {
        struct rep_view *views = NULL;
        size_t nviews = 0;
        res->truncated = truncated;
        if (o->from > kfs[nkf - 1].global_icount)
            rc = crec_error_set(err, CREC_ERR_ARG,
                                "--from %" PRIu64 " is past the end of the recording (%" PRIu64
                                " instructions)", o->from, kfs[nkf - 1].global_icount);
        else
            rc = thread_views(kfs, nkf, cps, ncp, &views, &nviews, err);
        if (rc == CREC_OK && nviews > 1)
            res->threads = nviews;
        if (rc == CREC_OK && o->thread && o->thread > (nviews > 1 ? nviews : 1))
            rc = nviews > 1 ? crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording "
                                             "has %zu threads, 1 to %zu)", o->thread, nviews,
                                             nviews)
                            : crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording "
                                             "has one thread, 1)", o->thread);
        /* Several threads: the whole program in the recorded order, or (with
         * --jobs, --thread, --from, a file cut short, or gaps) each thread alone. */
        if (rc == CREC_OK && nviews > 1 && (o->jobs <= 1 && !o->thread && !o->from && !truncated &&
                                            !has_gaps(r)))
            rc = run_whole(r, kfs, nkf, cps, ncp, o, res, err);
        else if (rc == CREC_OK) {
            struct rep_points points = {pts, NULL, NULL, NULL, 0, {0, NULL, NULL, NULL}};
            res->alone = nviews > 1;
            /* one thread of one process, on several jobs: the index's restart
             * points too (none if it has none or can't give them) */
            if (pts && o->jobs > 1 && nviews <= 1 && !truncated && !has_gaps(r) &&
                pts->get(pts->ctx, path, crec_fmt_reader_selected(r), kfs, nkf, &points.times,
                         &points.pts, &points.n, &points.costs, &points.keep) != CREC_OK)
                points.n = 0;
            rc = run_pieces(path, r, kfs, nkf, cps, ncp, nviews > 1 ? views : NULL, nviews,
                            truncated, points.n ? &points : NULL, o, res, err);
            if (points.keep)
                pts->release(pts->ctx, points.keep);
        }
        views_free(views, nviews);
    }
    crec_free(kfs);
    crec_free(cps);
    return rc;
}

/* Add the result of one process's replay to the whole's. */
static void add_result(crec_replay_result *all, const crec_replay_result *one)
{
    if (all->processes == 0) {
        *all = *one;
        all->processes = 1;
        all->processes_cut = one->truncated;
        return;
    }
    all->processes++;
    all->processes_cut += one->truncated;
    all->instructions += one->instructions;
    all->replayed += one->replayed;
    all->keyframes_checked += one->keyframes_checked;
    all->checkpoints_checked += one->checkpoints_checked;
    all->syscalls += one->syscalls;
    all->writes_checked += one->writes_checked;
    all->truncated |= one->truncated;
    if (one->threads > all->threads)
        all->threads = one->threads;
    if (one->diverged && !all->diverged) {
        all->diverged = 1;
        all->div = one->div;
    }
}

/* Replay every process of the recording at `path` (a file that can be
 * opened again and again), or those o->pid and o->image pick; live: as
 * replay_one, but a stream of several processes is verified only once it
 * has ended (CREC_ERR_NOTFOUND until then; *several says so). */
static int replay_path(const char *path, const crec_replay_options *o, int live,
                       const crec_replay_points *pts, crec_replay_result *res, int *several,
                       crec_error *err)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_proc_sum *sums = NULL;
    size_t *which = NULL;
    size_t nsums = 0, np = 0;
    int rc;

    memset(res, 0, sizeof *res);
    rc = crec_fmt_reader_open(path, &r, err);
    /* every chunk, also of streams a replay never reads (SYMBOLS): a file
     * that is damaged anywhere is not "verified" */
    if (rc == CREC_OK)
        rc = crec_fmt_reader_verify(r, err);
    if (rc == CREC_OK)
        rc = crec_fmt_processes(r, &sums, &nsums, err);
    if (rc == CREC_OK && !(which = crec_malloc(nsums * sizeof *which)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %zu processes", nsums);
    if (rc == CREC_OK)
        rc = crec_fmt_pick_processes(sums, nsums, o->pid, o->image, which, &np, err);
    *several = rc == CREC_OK && nsums > 1;
    if (rc == CREC_OK && live && nsums > 1)
        rc = CREC_ERR_NOTFOUND; /* --from is one process's time: wait for the end */
    else if (rc == CREC_OK && nsums == 1) { /* one process: as before processes */
        rc = replay_one(path, r, o, live, pts, res, err);
    } else if (rc == CREC_OK) {
        /* each process alone, in number order: the first divergence or
         * error stops it, naming the process */
        for (size_t i = 0; i < np && rc == CREC_OK && !res->diverged; i++) {
            const crec_fmt_proc_sum *ps = &sums[which[i]];
            crec_replay_result one;
            crec_error e1 = {0};
            uint32_t image = 1;
            for (size_t k = 0; k < which[i]; k++)
                image += sums[k].started && sums[k].pid == ps->pid;
            rc = crec_fmt_reader_select(r, ps->proc, err);
            if (rc == CREC_OK)
                rc = replay_one(path, r, o, live, NULL, &one, &e1);
            if (rc == CREC_ERR_NOTFOUND || (rc == CREC_ERR_TRUNCATED && !ps->ended)) {
                /* nothing to verify: 0 instructions (a fork's child that
                 * called execve at once), or killed before its first key
                 * frame */
                memset(&one, 0, sizeof one);
                one.truncated = rc == CREC_ERR_TRUNCATED;
                rc = CREC_OK;
            } else if (rc != CREC_OK) {
                crec_error_set(err, e1.code, "pid %u (process %u, %s): %s", ps->pid, ps->proc,
                               ps->argv && ps->argv[0] ? ps->argv[0] : "?", e1.msg);
            }
            if (rc == CREC_OK && one.diverged) {
                one.div.pid = ps->pid;
                one.div.image = image;
            }
            if (rc == CREC_OK)
                add_result(res, &one);
        }
    }
    crec_fmt_processes_free(sums, nsums);
    crec_free(which);
    crec_fmt_reader_free(r);
    return rc;
}

/* ---- a live stream ----------------------------------------------------------- */

/*
 * A recording read from a pipe while it is made (crec record -o - | crec
 * replay -): a thread pumps the pipe into an anonymous file, and the
 * replay verifies what has arrived, from key frame to key frame, as a
 * replay with --from does, each time more has come; the recorder is held
 * back by the pipe, never loses data.
 */
struct live {
    int in, out;
    uint64_t bytes;   /* pumped so far */
    int eof;          /* the pipe ended (or failed: rerr) */
    int rerr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void *pump_main(void *arg)
{
    struct live *l = arg;
    static __thread uint8_t buf[1 << 16];

    for (;;) {
        ssize_t k = read(l->in, buf, sizeof buf), done = 0;
        if (k < 0 && errno == EINTR)
            continue;
        while (k > 0 && done < k) {
            ssize_t m = write(l->out, buf + done, (size_t)(k - done));
            if (m < 0 && errno == EINTR)
                continue;
            if (m <= 0) {
                k = -1;
                break;
            }
            done += m;
        }
        pthread_mutex_lock(&l->mu);
        if (k > 0)
            l->bytes += (uint64_t)k;
        else {
            l->eof = 1;
            l->rerr = k < 0 ? errno ? errno : EIO : 0;
        }
        pthread_cond_broadcast(&l->cv);
        pthread_mutex_unlock(&l->mu);
        if (k <= 0)
            return NULL;
    }
}

/* Add one piece's result to the whole's. */
static void live_add(crec_replay_result *all, const crec_replay_result *r, int first)
{
    if (first)
        all->start_icount = r->start_icount;
    all->instructions = r->instructions;
    all->replayed += r->replayed;
    all->keyframes_checked += r->keyframes_checked;
    all->checkpoints_checked += r->checkpoints_checked;
    all->syscalls += r->syscalls;
    all->writes_checked += r->writes_checked;
    all->exited_by_signal = r->exited_by_signal;
    all->exit_value = r->exit_value;
    all->truncated = r->truncated;
    all->threads = r->threads;
    all->alone = r->alone;
    if (r->diverged) {
        all->diverged = 1;
        all->div = r->div;
    }
}

#define LIVE_EVERY_S 0.5 /* the least time between two replays of the stream */

static double live_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int replay_live(const char *name, int in, const crec_replay_options *o,
                       crec_replay_result *res, crec_error *err)
{
    struct live l = {.in = in, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    crec_replay_options po = *o;
    char path[64];
    pthread_t th;
    uint64_t tried = 0;
    int pieces = 0, eof = 0, several = 0, rc = CREC_OK;

    memset(res, 0, sizeof *res);
    if ((l.out = memfd_create("crec-stream", MFD_CLOEXEC)) < 0)
        return crec_error_set(err, CREC_ERR_IO, "%s: can't keep the stream: %s", name,
                              strerror(errno));
    snprintf(path, sizeof path, "/proc/self/fd/%d", l.out);
    if (pthread_create(&th, NULL, pump_main, &l) != 0) {
        close(l.out);
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: can't start reading the stream", name);
    }
    po.jobs = 1;
    po.progress = NULL;
    for (;;) {
        crec_replay_result r;
        crec_error e = {0};
        uint64_t have;
        double until = live_now() + LIVE_EVERY_S;
        /* wait for more, at most every LIVE_EVERY_S, or for the end */
        pthread_mutex_lock(&l.mu);
        while (!l.eof && (l.bytes == tried || live_now() < until)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&l.cv, &l.mu, &ts);
        }
        have = l.bytes, eof = l.eof;
        pthread_mutex_unlock(&l.mu);
        tried = have;
        if (eof && l.rerr) {
            rc = crec_error_set(err, CREC_ERR_IO, "%s: read failed: %s", name, strerror(l.rerr));
            break;
        }
        rc = replay_path(path, &po, !eof, NULL, &r, &several, &e);
        if (!eof && (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED ||
                     rc == CREC_ERR_CORRUPT))
            continue; /* not far enough yet (the header, a first segment) */
        if (several && po.from) {
            /* the program forked after the first pieces: every process
             * from its start, the first one again too */
            po.from = 0;
            rc = replay_path(path, &po, 0, NULL, &r, &several, &e);
        }
        if (rc != CREC_OK) {
            *err = e;
            break;
        }
        if (several) {
            *res = r;
            break;
        }
        live_add(res, &r, pieces++ == 0);
        po.from = r.instructions; /* the next replay starts where this one was checked */
        if (r.diverged || eof)
            break;
        if (o->live)
            o->live(o->live_ctx, res->instructions, res->replayed);
    }
    if (!eof) /* stopped early (a divergence, an error): stop reading too */
        pthread_cancel(th);
    pthread_join(th, NULL);
    close(l.out);
    return rc;
}

int crec_replay_run_points(const char *path, const crec_replay_options *o,
                           const crec_replay_points *pts, crec_replay_result *res,
                           crec_error *err)
{
    char spooled[PATH_MAX];
    struct stat st;
    int spool_fd, several, rc;

    memset(res, 0, sizeof *res);
    /* a stream (a pipe, a FIFO) is verified as it arrives */
    if (strcmp(path, "-") == 0 && fstat(0, &st) == 0 && !S_ISREG(st.st_mode))
        return replay_live("<stdin>", 0, o, res, err);
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return crec_error_set(err, CREC_ERR_IO, "%s: %s", path, strerror(errno));
        rc = replay_live(path, fd, o, res, err);
        close(fd);
        return rc;
    }
    /* each job opens the file again: a device is read once, kept */
    rc = crec_fmt_reader_spool(path, spooled, sizeof spooled, &spool_fd, err);
    if (rc == CREC_OK)
        rc = replay_path(spooled, o, 0, pts, res, &several, err);
    if (spool_fd >= 0)
        close(spool_fd);
    return rc;
}
