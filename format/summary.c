/*
 * summary.c - everything `crec info` reports, gathered through the public
 * reader API (docs/FORMAT.md §7), so that tests walk exactly the code the
 * command runs.  No layout of its own: it decodes the records of
 * records.c.
 */
#include "format/format_int.h"

/* Count the framed records of one stream, passing each to `each`. */
typedef int (*record_fn)(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                         crec_error *err);

static int walk(crec_fmt_reader *r, int type, uint32_t tid, crec_fmt_summary *s, record_fn each,
                uint64_t *count, crec_error *err)
{
    crec_fmt_cursor *c;
    int rc = crec_fmt_cursor_open(r, type, tid, 0, &c, err);
    if (rc)
        return rc;
    for (;;) {
        int kind;
        const uint8_t *body;
        size_t len;
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) != 0 ||
            (rc = each(s, kind, body, len, err)) != 0)
            break;
        if (count)
            (*count)++;
    }
    crec_fmt_cursor_free(c);
    /* A truncated file's streams may end mid-record: that is their end. */
    return rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED ? CREC_OK : rc;
}

static int wrong_kind(int kind, const char *stream, crec_error *err)
{
    return crec_error_corrupt(err, "record kind 0x%02x in stream %s", kind, stream);
}

/* The entry of thread tid (a new one, by number, if it has none yet). */
static crec_fmt_thread_sum *thread_sum(crec_fmt_summary *s, uint32_t tid)
{
    size_t i = 0;
    crec_fmt_thread_sum *p;

    while (i < s->nthread_sums && s->thread_sums[i].tid < tid)
        i++;
    if (i < s->nthread_sums && s->thread_sums[i].tid == tid)
        return &s->thread_sums[i];
    if (s->nthread_sums >= CREC_FMT_MAX_THREADS)
        return NULL;
    p = crec_realloc(s->thread_sums, (s->nthread_sums + 1) * sizeof *p);
    if (!p)
        return NULL;
    s->thread_sums = p;
    memmove(p + i + 1, p + i, (s->nthread_sums - i) * sizeof *p);
    memset(&p[i], 0, sizeof p[i]);
    p[i].tid = tid;
    s->nthread_sums++;
    return &p[i];
}

static int on_keyframe(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                       crec_error *err)
{
    crec_fmt_keyframe kf;
    crec_fmt_thread_sum *t;
    if (kind != CREC_FMT_K_KEYFRAME && (kind != CREC_FMT_K_CHECKPOINT || s->version < 4))
        return wrong_kind(kind, "KEYFRAMES", err);
    int rc = crec_fmt_kf_decode(body, len, &kf, err);
    if (rc)
        return rc;
    if (kind == CREC_FMT_K_CHECKPOINT) { /* no replay starts there */
        s->ncheckpoints++;
        return CREC_OK;
    }
    /* In a file cut short, the run ends where a replay can get: at the
     * last key frame whose data before it all reached the file. */
    if (s->reached_all && crec_fmt_kf_reached(s->reader, &kf))
        s->reached = kf.global_icount;
    else
        s->reached_all = 0;
    if (kf.global_icount > s->instructions)
        s->instructions = kf.global_icount;
    if (s->nkeyframes++ == 0)
        s->first = kf.global_icount;
    if ((t = thread_sum(s, kf.tid)) != NULL) {
        t->keyframes++;
        if (kf.thread_icount > t->instructions)
            t->instructions = kf.thread_icount;
    }
    return CREC_OK;
}

static int on_snapshot(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                       crec_error *err)
{
    crec_fmt_snapshot snap;
    (void)s;
    if (kind != CREC_FMT_K_SNAPSHOT)
        return wrong_kind(kind, "SNAPSHOTS", err);
    int rc = crec_fmt_snap_decode(body, len, &snap, err);
    crec_fmt_snapshot_clear(&snap);
    return rc;
}

static int on_event(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                    crec_error *err)
{
    crec_fmt_event ev;
    crec_fmt_thread_sum *t;
    int rc = crec_fmt_ev_decode(s->version, kind, body, len, &ev, err);
    if (!rc && kind == CREC_FMT_K_THREAD && (t = thread_sum(s, ev.u.thread.tid)) != NULL) {
        if (ev.u.thread.op == CREC_FMT_TH_CREATE) {
            t->parent = ev.u.thread.parent;
            t->guest_tid = ev.u.thread.guest_tid;
        } else {
            t->exited = 1;
            t->how = ev.u.thread.how;
            t->status = ev.u.thread.status;
        }
    }
    if (!rc && kind == CREC_FMT_K_EXIT && (t = thread_sum(s, s->cur_tid)) != NULL)
        t->ended_program = 1;
    if (!rc && kind == CREC_FMT_K_EXIT) {
        s->exited = 1;
        s->exit_how = ev.u.exit.how;
        s->exit_value = ev.u.exit.value;
        if (ev.u.exit.global_icount > s->instructions)
            s->instructions = ev.u.exit.global_icount;
    }
    return rc;
}

static int on_code(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                   crec_error *err)
{
    crec_fmt_code m;
    (void)s;
    if (kind != CREC_FMT_K_CODE)
        return wrong_kind(kind, "CODE", err);
    return crec_fmt_code_decode(body, len, &m, err);
}

static int on_symbol(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                     crec_error *err)
{
    crec_fmt_symbol y;
    (void)s;
    if (kind != CREC_FMT_K_SYMBOL)
        return wrong_kind(kind, "SYMBOLS", err);
    return crec_fmt_sym_decode(body, len, &y, err);
}

static int on_blob(crec_fmt_summary *s, int kind, const uint8_t *body, size_t len,
                   crec_error *err)
{
    (void)s;
    (void)body;
    if (kind != CREC_FMT_K_BLOB && kind != CREC_FMT_K_PAGED)
        return wrong_kind(kind, "BLOBS", err);
    if (len < 16)
        return crec_error_corrupt(err, "blob record of %zu bytes has no hash", len);
    return CREC_OK;
}

/* Add one stream's sizes; a thread is any tid with a per-thread stream. */
static void count_stream(crec_fmt_summary *s, const crec_fmt_stream_info *si, uint32_t *last_tid,
                         int *seen)
{
    s->nchunks += si->nchunks;
    s->raw_bytes += si->raw_bytes;
    s->compressed_bytes += si->compressed_bytes;
    /* Streams come sorted by (type, tid), and every thread has an EVENTS
     * stream (it ends with an exit), so counting EVENTS tids is enough. */
    if (si->type == CREC_FMT_S_EVENTS && (!*seen || si->tid != *last_tid)) {
        s->nthreads++;
        *last_tid = si->tid;
        *seen = 1;
    }
}

/* Where each thread ran, from the schedule. */
static int thread_times(crec_fmt_reader *r, crec_fmt_summary *s, crec_error *err)
{
    crec_fmt_slice *v;
    size_t n;
    int rc = crec_fmt_schedule(r, s->instructions, &v, &n, err);

    if (rc != CREC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        crec_fmt_thread_sum *t = thread_sum(s, v[i].tid);
        if (!t) {
            crec_free(v);
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the threads");
        }
        if (t->end == 0)
            t->start = v[i].start;
        t->end = v[i].start + v[i].len;
        if (v[i].thread_start + v[i].len > t->instructions)
            t->instructions = v[i].thread_start + v[i].len;
    }
    crec_free(v);
    return CREC_OK;
}

void crec_fmt_summary_clear(crec_fmt_summary *s)
{
    if (!s)
        return;
    crec_free(s->thread_sums);
    s->thread_sums = NULL;
    s->nthread_sums = 0;
    crec_fmt_marks_clear(&s->marks);
}

static int summarize(crec_fmt_reader *r, crec_fmt_summary *s, crec_error *err)
{
    uint32_t last_tid = 0;
    int seen = 0, rc;
    memset(s, 0, sizeof *s);
    s->version = crec_fmt_reader_header(r)->version;
    if ((rc = crec_fmt_reader_verify(r, err)) != 0)
        return rc;
    s->file_bytes = crec_fmt_reader_size(r);
    s->nstreams = crec_fmt_reader_nstreams(r);
    for (size_t i = 0; i < s->nstreams; i++) {
        crec_fmt_stream_info si;
        crec_fmt_reader_stream(r, i, &si, NULL);
        count_stream(s, &si, &last_tid, &seen);
        s->cur_tid = si.tid;
        if (si.type == CREC_FMT_S_EVENTS &&
            (rc = walk(r, si.type, si.tid, s, on_event, &s->nevents, err)) != 0)
            return rc;
    }
    s->reader = r;
    s->reached_all = 1;
    if ((rc = walk(r, CREC_FMT_S_KEYFRAMES, 0, s, on_keyframe, NULL, err)) ||
        (rc = walk(r, CREC_FMT_S_SNAPSHOTS, 0, s, on_snapshot, &s->nsnapshots, err)) ||
        (rc = walk(r, CREC_FMT_S_CODE, 0, s, on_code, &s->ncode, err)) ||
        (rc = walk(r, CREC_FMT_S_SYMBOLS, 0, s, on_symbol, &s->nsymbols, err)) ||
        (rc = walk(r, CREC_FMT_S_BLOBS, 0, s, on_blob, &s->nblobs, err)) ||
        (rc = crec_fmt_marks_read(r, &s->marks, err)) ||
        (rc = thread_times(r, s, err)))
        return rc;
    s->truncated = crec_fmt_reader_truncated(r, &s->truncated_at, &s->truncated_why);
    if (s->truncated && !s->reached_all)
        s->instructions = s->reached;
    s->reader = NULL;
    return CREC_OK;
}

int crec_fmt_summarize(crec_fmt_reader *r, crec_fmt_summary *s, crec_error *err)
{
    int rc = summarize(r, s, err);

    if (rc != CREC_OK)
        crec_fmt_summary_clear(s);
    return rc;
}
