/*
 * find_access.c - crec_find_access(): the access to some ranges nearest to
 * a time, before it or after it, replaying only the spans that the index
 * says touch the ranges (gdb's watchpoints, forwards and in reverse: the
 * last write before now is a lookup and a replay of one span, not a replay
 * of everything in between).
 */
#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"

struct find {
    const crec_range *ranges;
    size_t n;
    int writes_only;
    int (*match)(void *ctx, const crec_access *a);
    void *ctx;
    uint64_t before;   /* backward: only accesses by instructions before this */
    int backward;
    int found;
    crec_access hit;
};

static int find_access_cb(void *ctx, crec_exec *x, const crec_access *a)
{
    struct find *f = ctx;

    (void)x;
    if (f->writes_only && a->kind == CREC_ACCESS_READ)
        return 0;
    if (f->backward && a->t >= f->before)
        return 1; /* past the time asked about: nothing later counts */
    if (f->match && !f->match(f->ctx, a))
        return 0;
    f->found = 1;
    f->hit = *a;
    f->hit.value = NULL; /* valid only inside the callback */
    return !f->backward; /* forwards the first is the answer; backwards the last */
}

/* Does span sp touch one of the ranges (stores and kernel writes only:
 * writes_only)? */
static int span_touches(crec_recording *rec, size_t sp, const struct find *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (crec_idx_touches(rec->ix, sp, f->ranges[i].addr, f->ranges[i].len, f->writes_only))
            return 1;
    return 0;
}

/*
 * The nearest access of one thread: th is its handle (the recording itself
 * when it has one thread), whose index spans are in the thread's own time;
 * tt is its own count at t.  A span is replayed as the run of the global
 * times its instructions take (exec follows that thread alone there).
 */
static int thread_find(crec_recording *rec, crec_recording *th, uint32_t tid, uint64_t tt,
                       struct find *f, crec_observer *obs, crec_error *err)
{
    uint64_t t = f->before;
    size_t sp;
    int rc;

    if ((rc = qx_ensure_index(th, err)) != CREC_OK)
        return rc;
    if (th->ix->nspan == 0) { /* nothing to prune with: one run over the whole range */
        return f->backward ? crec_exec_run(rec, 0, t, obs, NULL, err)
                           : crec_exec_run(rec, t, rec->end, obs, NULL, err);
    }
    if (f->backward ? tt == 0 : tt >= th->end)
        return CREC_OK;
    sp = crec_idx_span_at(th->ix, f->backward ? tt - 1 : tt);
    for (;;) {
        uint64_t start = th->ix->spans[sp].start;
        uint64_t end = sp + 1 < th->ix->nspan ? th->ix->spans[sp + 1].start : th->end;
        if ((rc = crec_idx_need(th->ix, sp, err)) != CREC_OK)
            return rc;
        if (span_touches(th, sp, f)) {
            uint64_t lo = f->backward || start > tt ? start : tt;
            uint64_t hi = !f->backward || end < tt ? end : tt;
            if (rec != th) /* its own counts as global times */
                lo = qx_global_time(rec, tid, lo), hi = qx_global_time(rec, tid, hi);
            if ((rc = crec_exec_run(rec, lo, hi, obs, NULL, err)) != CREC_OK)
                return rc;
            if (f->found)
                break;
        }
        if (f->backward ? sp == 0 : sp + 1 >= th->ix->nspan)
            break;
        sp = f->backward ? sp - 1 : sp + 1;
    }
    return CREC_OK;
}

int crec_find_access(crec_recording *rec, const crec_range *ranges, size_t n, int writes_only,
                     int (*match)(void *ctx, const crec_access *a), void *ctx, uint64_t t,
                     int backward, crec_access *hit, int *found, crec_error *err)
{
    struct find f = {ranges, n, writes_only, match, ctx, t, backward, 0, {0}};
    crec_observer obs = {0};
    int rc;

    *found = 0;
    if (n == 0 || (backward && t == 0) || (!backward && t >= rec->end))
        return CREC_OK;
    obs.ctx = &f;
    obs.access = find_access_cb;
    obs.ranges = ranges;
    obs.n_ranges = n;
    if (!rec->nthr) {
        rc = thread_find(rec, rec, 1, t, &f, &obs, err);
        *found = f.found;
        *hit = f.hit;
        return rc;
    }
    /* several threads: each one's nearest, then the nearest of those */
    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        return rc;
    for (uint32_t tid = 1; tid <= rec->nthr; tid++) {
        uint64_t tt = 0;
        if (!rec->thr[tid - 1] || (!qx_thread_time(rec, tid, t, &tt) && backward))
            continue; /* it had not started by t */
        f.found = 0;
        obs.tid = tid;
        if ((rc = thread_find(rec, rec->thr[tid - 1], tid, tt, &f, &obs, err)) != CREC_OK)
            return rc;
        if (f.found && (!*found || (backward ? f.hit.t > hit->t : f.hit.t < hit->t))) {
            *found = 1;
            *hit = f.hit;
        }
    }
    return CREC_OK;
}
