/*
 * events.c - what the index keeps from the EVENTS stream: every range
 * ever mapped (so that a query for an address no mapping ever covered is
 * an error, not "unknown") and the time of every syscall (`syscall:N`);
 * and where each key frame's record lies in KEYFRAMES.
 */
#include <stdlib.h>

#include "common/common.h"
#include "index/index.h"

struct scan {
    uint64_t *mapped, *syscalls;
    size_t nmapped, capm, nsyscalls, caps;
};

static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        uint64_t *p = crec_realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p, *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int add_range(struct scan *s, uint64_t start, uint64_t len)
{
    size_t n = 2 * s->nmapped;

    if (len == 0 || start + len < start)
        return 0;
    if (push(&s->mapped, &n, &s->capm, start) || push(&s->mapped, &n, &s->capm, start + len))
        return -1;
    s->nmapped++;
    return 0;
}

static int cmp_range(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sort the (start, end) pairs and merge the ones that overlap or touch. */
static void merge_ranges(struct scan *s)
{
    uint64_t *m = s->mapped;
    size_t k = 0;

    if (!s->nmapped)
        return;
    crec_sort(m, s->nmapped, 2 * sizeof *m, cmp_range);
    for (size_t i = 1; i < s->nmapped; i++) {
        if (m[2 * i] <= m[2 * k + 1]) {
            if (m[2 * i + 1] > m[2 * k + 1])
                m[2 * k + 1] = m[2 * i + 1];
        } else {
            k++;
            m[2 * k] = m[2 * i];
            m[2 * k + 1] = m[2 * i + 1];
        }
    }
    s->nmapped = k + 1;
}

/* One event: a syscall's time, or the ranges a map change maps. */
static int take_event(struct scan *s, uint32_t version, int kind, const uint8_t *body,
                      size_t len, int listing_ok, crec_error *err)
{
    crec_fmt_event ev;
    int rc = crec_fmt_ev_decode(version, kind, body, len, &ev, err), bad = 0;

    if (rc != CREC_OK)
        return rc;
    if (kind == CREC_FMT_K_SYSCALL)
        bad = push(&s->syscalls, &s->nsyscalls, &s->caps, ev.u.sys.icount);
    else if (ev.u.mmap.op != CREC_FMT_MM_UNMAP &&
             (listing_ok || !(ev.u.mmap.flags & CREC_FMT_EV_LISTING))) {
        bad = add_range(s, ev.u.mmap.addr, ev.u.mmap.len);
        if (ev.u.mmap.op == CREC_FMT_MM_REMAP)
            bad = bad || add_range(s, ev.u.mmap.addr2, ev.u.mmap.len2);
    }
    return bad ? crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the events") : 0;
}

/*
 * The memory-map listings after key frames only repeat what earlier
 * events mapped, so only the first one (which holds the initial mappings)
 * is taken: on a long recording they are most of the stream.
 */
int crec_idx_scan_events(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                         uint64_t **mapped, size_t *nmapped, uint64_t **syscalls,
                         size_t *nsyscalls, crec_error *err)
{
    uint64_t first_listing_end = nkf > 1 ? kfs[1].events_off : UINT64_MAX;
    struct scan s = {0};
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen;
    int kind, rc;

    rc = crec_fmt_cursor_open(r, CREC_FMT_S_EVENTS, kfs[0].tid, 0, &c, err);
    while (rc == CREC_OK) {
        uint64_t off = crec_fmt_cursor_offset(c);
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) != CREC_OK)
            break;
        if (kind == CREC_FMT_K_SYSCALL || kind == CREC_FMT_K_MMAP)
            rc = take_event(&s, crec_fmt_reader_header(r)->version, kind, body, blen,
                            off < first_listing_end, err);
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rc != CREC_OK) {
        crec_free(s.mapped);
        crec_free(s.syscalls);
        return rc;
    }
    merge_ranges(&s);
    *mapped = s.mapped, *nmapped = s.nmapped;
    *syscalls = s.syscalls, *nsyscalls = s.nsyscalls;
    return CREC_OK;
}

int crec_idx_scan_keyframes(crec_fmt_reader *r, size_t nkf, uint64_t **offs, crec_error *err)
{
    uint64_t *o = crec_malloc((nkf ? nkf : 1) * sizeof *o);
    crec_fmt_cursor *c = NULL;
    const uint8_t *body;
    size_t blen, n = 0;
    int kind, rc;

    if (!o)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the key frames");
    rc = crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, err);
    while (rc == CREC_OK && n < nkf) {
        o[n] = crec_fmt_cursor_offset(c);
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK &&
            kind != CREC_FMT_K_CHECKPOINT) /* not where a replay starts */
            n++;
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_OK && n < nkf)
        rc = crec_error_corrupt(err, "KEYFRAMES holds %zu key frames, not %zu", n, nkf);
    if (rc != CREC_OK) {
        crec_free(o);
        return rc == CREC_ERR_NOTFOUND ? crec_error_corrupt(err, "KEYFRAMES ends early") : rc;
    }
    *offs = o;
    return CREC_OK;
}
