/*
 * schedule.c - the recorded schedule: which thread ran when.
 *
 * A recording made on one CPU orders its threads exactly by the switch
 * entries of their SEQ streams (docs/FORMAT.md §6.4): a thread's IN entry
 * and its next OUT (or OUT_EXACT) entry bound a slice of its instructions,
 * and the slices of all threads, in the order of their IN sequence
 * numbers, are the run.  Global time adds up the slices' lengths.  A
 * recording with no switch entry (one thread, or version 1) is one slice.
 *
 * The SEQ streams are read whole; only the switch entries are kept.
 */
#include <stdlib.h>

#include "format/format_int.h"

struct sched_build {
    crec_fmt_slice *v;
    size_t n, cap;
};

static int push(struct sched_build *b, const crec_fmt_slice *s)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        crec_fmt_slice *p = crec_realloc(b->v, cap * sizeof *p);
        if (!p)
            return -1;
        b->v = p, b->cap = cap;
    }
    b->v[b->n++] = *s;
    return 0;
}

/* The switch entries of thread tid's SEQ stream, as slices (start unset). */
static int thread_slices(crec_fmt_reader *r, uint32_t tid, struct sched_build *b,
                         crec_error *err)
{
    crec_fmt_cursor *c;
    crec_fmt_slice cur = {0};
    crec_fmt_seq_ctx ctx = {0, 0, 1};
    uint64_t last_icount = 0, last_seq = 0;
    int in = 0, rc, any = 0;

    rc = crec_fmt_cursor_open(r, CREC_FMT_S_SEQ, tid, 0, &c, err);
    while (rc == CREC_OK) {
        crec_fmt_seq e;
        if ((rc = crec_fmt_cursor_seq(c, &ctx, &e, err)) != CREC_OK)
            break;
        if ((any && (e.seq <= last_seq || e.icount < last_icount))) {
            rc = crec_error_corrupt(err, "SEQ stream of thread %u goes back (sequence %llu, "
                                         "instruction %llu)", tid, (unsigned long long)e.seq,
                                    (unsigned long long)e.icount);
            break;
        }
        any = 1;
        last_seq = e.seq, last_icount = e.icount;
        if (e.kind == CREC_FMT_SEQ_IN) {
            if (in) {
                rc = crec_error_corrupt(err, "thread %u gets the CPU twice (sequence %llu)", tid,
                                        (unsigned long long)e.seq);
                break;
            }
            cur = (crec_fmt_slice){.tid = tid, .thread_start = e.icount, .seq_in = e.seq};
            in = 1;
        } else if (e.kind == CREC_FMT_SEQ_OUT || e.kind == CREC_FMT_SEQ_OUT_EXACT) {
            if (!in) {
                rc = crec_error_corrupt(err, "thread %u gives up a CPU it does not have "
                                             "(sequence %llu)", tid, (unsigned long long)e.seq);
                break;
            }
            cur.len = e.icount - cur.thread_start;
            cur.seq_out = e.seq;
            cur.exact_out = e.kind == CREC_FMT_SEQ_OUT_EXACT;
            in = 0;
            if (push(b, &cur))
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the schedule");
        }
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rc == CREC_OK && in) { /* the run ended while it ran: closed by the caller */
        cur.seq_out = UINT64_MAX;
        cur.open = 1;
        cur.len = last_icount - cur.thread_start;
        if (push(b, &cur))
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the schedule");
    }
    return rc;
}

static int cmp_seq_in(const void *a, const void *b)
{
    const crec_fmt_slice *x = a, *y = b;
    return x->seq_in < y->seq_in ? -1 : x->seq_in > y->seq_in;
}

int crec_fmt_schedule(crec_fmt_reader *r, uint64_t end, crec_fmt_slice **out, size_t *n,
                      crec_error *err)
{
    struct sched_build b = {0};
    uint64_t t = 0;
    uint32_t first_tid = 0;
    int rc = CREC_OK;

    *out = NULL, *n = 0;
    for (size_t i = 0; i < crec_fmt_reader_nstreams(r) && rc == CREC_OK; i++) {
        crec_fmt_stream_info si;
        crec_fmt_reader_stream(r, i, &si, NULL);
        if (si.type == CREC_FMT_S_EVENTS && !first_tid)
            first_tid = si.tid;
        if (si.type == CREC_FMT_S_SEQ)
            rc = thread_slices(r, si.tid, &b, err);
    }
    if (rc != CREC_OK) {
        crec_free(b.v);
        return rc;
    }
    if (b.n == 0) { /* one thread ran all along */
        crec_fmt_slice all = {.tid = first_tid ? first_tid : 1, .len = end, .open = 1};
        if (push(&b, &all))
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the schedule");
        *out = b.v, *n = 1;
        return CREC_OK;
    }
    crec_sort(b.v, b.n, sizeof *b.v, cmp_seq_in);
    /* Until the second thread, the first one's count is global time: its
     * first IN is 0, or later when the start was dropped (a ring) or not
     * recorded (--start-at). */
    t = b.v[0].thread_start;
    for (size_t i = 0; i < b.n; i++) {
        crec_fmt_slice *s = &b.v[i];
        if (i + 1 < b.n && (s->open || s->seq_out > b.v[i + 1].seq_in)) {
            crec_free(b.v);
            return crec_error_corrupt(err, "thread %u still runs when thread %u gets the CPU "
                                           "(sequence %llu)", s->tid, b.v[i + 1].tid,
                                      (unsigned long long)b.v[i + 1].seq_in);
        }
        s->start = t;
        if (s->open && end > t && end - t > s->len)
            s->len = end - t; /* the last slice runs to the end of the recording */
        t += s->len;
    }
    *out = b.v, *n = b.n;
    return CREC_OK;
}

size_t crec_fmt_slice_at(const crec_fmt_slice *v, size_t n, uint64_t t)
{
    size_t a = 0, b = n;

    while (b - a > 1) { /* the last slice starting at or before t */
        size_t m = a + (b - a) / 2;
        if (v[m].start <= t)
            a = m;
        else
            b = m;
    }
    return a;
}
