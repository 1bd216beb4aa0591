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
    if ((rc = qx_ensure_index(rec, err)) != CREC_OK)
        return rc;
    obs.ctx = &f;
    obs.access = find_access_cb;
    obs.ranges = ranges;
    obs.n_ranges = n;
    if (rec->ix->nspan == 0) { /* nothing to prune with: one run over the whole range */
        rc = backward ? crec_exec_run(rec, 0, t, &obs, NULL, err)
                      : crec_exec_run(rec, t, rec->end, &obs, NULL, err);
        *found = f.found;
        *hit = f.hit;
        return rc;
    }
    size_t sp = crec_idx_span_at(rec->ix, backward ? t - 1 : t);
    for (;;) {
        uint64_t start = rec->ix->spans[sp].start;
        uint64_t end = sp + 1 < rec->ix->nspan ? rec->ix->spans[sp + 1].start : rec->end;
        if ((rc = crec_idx_need(rec->ix, sp, err)) != CREC_OK)
            return rc;
        if (span_touches(rec, sp, &f)) {
            rc = backward ? crec_exec_run(rec, start, end < t ? end : t, &obs, NULL, err)
                          : crec_exec_run(rec, start > t ? start : t, end, &obs, NULL, err);
            if (rc != CREC_OK)
                return rc;
            if (f.found)
                break;
        }
        if (backward ? sp == 0 : sp + 1 >= rec->ix->nspan)
            break;
        sp = backward ? sp - 1 : sp + 1;
    }
    *found = f.found;
    *hit = f.hit;
    return CREC_OK;
}
