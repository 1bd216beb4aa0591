/*
 * recording.c - the handle behind crec_open: what a query needs to know of
 * a recording besides the index (key frames, snapshots, code, the memory
 * map at a key frame, syscall times, symbols), loaded as it is needed so
 * that opening a recording for one query costs little.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

/* ---- snapshots and code (read at open) ------------------------------------- */

static int cmp_snap(const void *a, const void *b)
{
    const struct qx_snap_page *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->icount < y->icount ? -1 : x->icount > y->icount;
}

static int add_snap_page(crec_recording *rec, size_t *cap, uint64_t icount,
                         const crec_fmt_snap_page *pg)
{
    if (rec->nsnap == *cap) {
        size_t n = *cap ? 2 * *cap : 1024;
        struct qx_snap_page *p = crec_realloc(rec->snap, n * sizeof *p);
        if (!p)
            return -1;
        rec->snap = p, *cap = n;
    }
    rec->snap[rec->nsnap].addr = pg->addr;
    rec->snap[rec->nsnap].icount = icount;
    rec->snap[rec->nsnap].blob = pg->blob;
    rec->nsnap++;
    return 0;
}

/* @return the first key frame at or after global time t (nkf: none). */
static size_t kf_at_or_after(const crec_recording *rec, uint64_t t)
{
    size_t lo = 0, hi = rec->nkf;

    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (rec->kfs[m].global_icount < t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The key frame a snapshot was taken at (snapshots are taken right after
 * one), remembered in time order.  @return -1 out of memory. */
static int add_snap_time(crec_recording *rec, size_t *cap, uint64_t icount)
{
    size_t k = kf_at_or_after(rec, icount);

    if (k == rec->nkf || rec->kfs[k].global_icount != icount)
        return 0; /* not at a key frame: not usable as a point where all is known */
    if (rec->nsnap_kf == *cap) {
        size_t n = *cap ? 2 * *cap : 64;
        size_t *p = crec_realloc(rec->snap_kf, n * sizeof *p);
        if (!p)
            return -1;
        rec->snap_kf = p, *cap = n;
    }
    if (rec->nsnap_kf == 0 || rec->snap_kf[rec->nsnap_kf - 1] < k)
        rec->snap_kf[rec->nsnap_kf++] = k;
    return 0;
}

static int load_snapshots(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0, kcap = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SNAPSHOTS, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_snapshot s = {0};
        int bad = 0;
        if (kind != CREC_FMT_K_SNAPSHOT) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the SNAPSHOTS stream", kind);
            break;
        }
        if ((rc = crec_fmt_snap_decode(body, blen, &s, err)) != CREC_OK)
            break;
        for (size_t i = 0; i < s.npages && !bad; i++)
            bad = add_snap_page(rec, &cap, s.global_icount, &s.pages[i]);
        bad = bad || add_snap_time(rec, &kcap, s.global_icount);
        crec_fmt_snapshot_clear(&s);
        if (bad) {
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the snapshots");
            break;
        }
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    crec_sort(rec->snap, rec->nsnap, sizeof *rec->snap, cmp_snap);
    return rc;
}

static int load_code(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_CODE, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_code cd;
        if (kind != CREC_FMT_K_CODE) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the CODE stream", kind);
            break;
        }
        if ((rc = crec_fmt_code_decode(body, blen, &cd, err)) != CREC_OK)
            break;
        if (rec->ncode == cap) {
            cap = cap ? 2 * cap : 16;
            struct qx_code *p = crec_realloc(rec->code, cap * sizeof *p);
            if (!p) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the CODE records");
                break;
            }
            rec->code = p;
        }
        rec->code[rec->ncode].addr = cd.addr;
        rec->code[rec->ncode].len = cd.len;
        rec->code[rec->ncode].blob = cd.blob;
        rec->code[rec->ncode].bytes = NULL;
        rec->code[rec->ncode].file_off = cd.file_off;
        rec->code[rec->ncode].path = crec_malloc(cd.name_len + 1);
        if (!rec->code[rec->ncode].path) {
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
            break;
        }
        memcpy(rec->code[rec->ncode].path, cd.name, cd.name_len);
        rec->code[rec->ncode].path[cd.name_len] = 0;
        rec->ncode++;
    }
    crec_fmt_cursor_free(c);
    return rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED ? CREC_OK : rc;
}

/* ---- the events (read on first need) --------------------------------------- */

/* Ranges ever mapped and syscall times: from the index, else from EVENTS. */
static int load_events(crec_recording *rec, crec_error *err)
{
    int rc;

    if (rec->events_loaded)
        return CREC_OK;
    if (rec->ix) {
        rec->mapped = rec->ix->mapped, rec->nmapped = rec->ix->nmapped;
        rec->syscalls = rec->ix->syscalls, rec->nsyscalls = rec->ix->nsyscalls;
    } else {
        rc = crec_idx_scan_events(rec->r, rec->kfs, rec->nkf, &rec->own_mapped, &rec->nmapped,
                                  &rec->own_syscalls, &rec->nsyscalls, err);
        if (rc != CREC_OK)
            return rc;
        rec->mapped = rec->own_mapped, rec->syscalls = rec->own_syscalls;
    }
    rec->events_loaded = 1;
    return CREC_OK;
}

/*
 * The memory map listed after key frame k, kept for the next call: the
 * listing starts at the key frame's EVENTS offset and ends at the first
 * other event or at the next key frame's listing.
 */
static int load_listing(crec_recording *rec, size_t k, crec_error *err)
{
    uint64_t end = UINT64_MAX;
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0;
    int kind, rc;

    if (rec->listing_kf == k + 1)
        return CREC_OK;
    for (size_t i = k + 1; i < rec->nkf; i++) /* the next key frame of its thread */
        if (rec->kfs[i].tid == rec->kfs[k].tid) {
            end = rec->kfs[i].events_off;
            break;
        }
    rec->listing_kf = 0;
    rec->nlisting = 0;
    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_EVENTS, rec->kfs[k].tid, rec->kfs[k].events_off,
                              &c, err);
    while (rc == CREC_OK && crec_fmt_cursor_offset(c) < end &&
           (rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_event ev;
        if (kind != CREC_FMT_K_MMAP)
            break;
        if ((rc = crec_fmt_ev_decode(crec_fmt_reader_header(rec->r)->version, kind, body, blen, &ev, err)) != CREC_OK ||
            !(ev.u.mmap.flags & CREC_FMT_EV_LISTING))
            break;
        if (rec->nlisting == cap) {
            size_t n = cap ? 2 * cap : 64;
            struct qx_mapping *p = crec_realloc(rec->listing, n * sizeof *p);
            if (!p) {
                rc = crec_error_set(err, CREC_ERR_NOMEM,
                                    "out of memory reading a key frame's memory map");
                break;
            }
            rec->listing = p, cap = n;
        }
        rec->listing[rec->nlisting++] =
            (struct qx_mapping){ev.u.mmap.addr, ev.u.mmap.addr + ev.u.mmap.len,
                                (int)ev.u.mmap.prot};
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rc == CREC_OK)
        rec->listing_kf = k + 1;
    return rc;
}

int qx_prot_at_keyframe(crec_recording *rec, size_t k, uint64_t addr, int *prot,
                        crec_error *err)
{
    int rc = load_listing(rec, k, err);

    *prot = -1;
    if (rc != CREC_OK)
        return rc;
    for (size_t i = 0; i < rec->nlisting; i++)
        if (rec->listing[i].start <= addr && addr < rec->listing[i].end)
            *prot = rec->listing[i].prot;
    return CREC_OK;
}

/* Take an index: the reader gets its table of blobs, so that it needn't
 * scan BLOBS for the code and pages a query reads. */
static int adopt_index(crec_recording *rec, crec_idx *ix, crec_error *err)
{
    int rc = crec_fmt_blob_table_set(rec->r, ix->blobs, ix->nblobs, err);

    if (rc != CREC_OK) {
        crec_idx_free(ix);
        return rc;
    }
    rec->ix = ix;
    return CREC_OK;
}

/* ---- opening ------------------------------------------------------------- */

/* The key frames from KEYFRAMES: a file cut short ends where its replay does. */
static int load_keyframes_from_file(crec_recording *rec, crec_error *err)
{
    int rc, cut;

    rc = crec_replay_load_keyframes(rec->r, &rec->kfs, &rec->nkf, err);
    if (rc == CREC_OK)
        rec->nkf = crec_replay_reachable_keyframes(rec->r, rec->kfs, rec->nkf, &cut);
    if (rc == CREC_OK && !(rec->kf_regs = crec_malloc(rec->nkf ? rec->nkf : 1)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the key frames");
    if (rc == CREC_OK)
        memset(rec->kf_regs, 1, rec->nkf);
    return rc;
}

/* Why the index file could not be used, for crec_index_note(). */
static void index_unusable(crec_recording *rec, const char *why)
{
    crec_error_set(&rec->index_note, CREC_ERR_CORRUPT, "%s; the index was rebuilt", why);
}

/*
 * The key frames: from an index that is there (registers are read when a
 * run needs them: decoding every key frame is most of what opening a long
 * recording costs), else from KEYFRAMES.
 */
static int load_keyframes(crec_recording *rec, crec_error *err)
{
    crec_idx *ix = NULL;
    crec_error why = {0};
    int rc;

    if (rec->flags & CREC_OPEN_NO_INDEX)
        return load_keyframes_from_file(rec, err);
    rc = crec_idx_load(rec->path, rec->proc, 0, NULL, 0, &ix, &why);
    if (rc == CREC_ERR_NOMEM)
        return crec_error_set(err, rc, "%s", why.msg);
    if (rc == CREC_ERR_CORRUPT)
        index_unusable(rec, why.msg);
    if (rc != CREC_OK)
        return load_keyframes_from_file(rec, err);
    rec->kfs = crec_malloc(ix->nkf * sizeof *rec->kfs);
    rec->kf_regs = crec_calloc(ix->nkf, 1);
    if (!rec->kfs || !rec->kf_regs) {
        crec_idx_free(ix);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening the index");
    }
    memcpy(rec->kfs, ix->kfs, ix->nkf * sizeof *rec->kfs);
    rec->nkf = ix->nkf;
    rc = adopt_index(rec, ix, &why);
    if (rc == CREC_OK || rc == CREC_ERR_NOMEM)
        return rc == CREC_OK ? CREC_OK : crec_error_set(err, rc, "%s", why.msg);
    index_unusable(rec, why.msg); /* its table of blobs does not fit the recording */
    crec_free(rec->kfs);
    crec_free(rec->kf_regs);
    rec->kfs = NULL, rec->kf_regs = NULL, rec->nkf = 0;
    return load_keyframes_from_file(rec, err);
}

int qx_index_retry(crec_recording *rec, int rc, crec_error *err)
{
    char why[CREC_ERROR_MSG_MAX];

    if (rc == CREC_OK || rc == CREC_ERR_ARG || rc == CREC_ERR_NOMEM || !rec->ix ||
        rec->index_built || rec->index_dropped)
        return 0;
    /* Everything taken from the index goes: the index, what the reader and
     * the handle hold of it, the key frames if it gave them. */
    {
        char ipath[200];
        crec_idx_file(rec->path, rec->proc, ipath, sizeof ipath);
        snprintf(why, sizeof why, "%.160s can't be used (%.300s)", ipath, err->msg);
    }
    index_unusable(rec, why);
    rec->index_dropped = 1;
    crec_idx_free(rec->ix);
    rec->ix = NULL;
    if (!rec->own_mapped) {
        rec->events_loaded = 0;
        rec->mapped = rec->syscalls = NULL;
        rec->nmapped = rec->nsyscalls = 0;
    }
    rec->regs_valid = 0;
    rec->listing_kf = 0;
    crec_fmt_reader_free(rec->r);
    crec_free(rec->kfs);
    crec_free(rec->kf_regs);
    rec->r = NULL, rec->kfs = NULL, rec->kf_regs = NULL, rec->nkf = 0;
    if (crec_fmt_reader_open(rec->path, &rec->r, err) != CREC_OK ||
        crec_fmt_reader_select(rec->r, rec->proc, err) != CREC_OK ||
        load_keyframes_from_file(rec, err) != CREC_OK)
        return 0;
    if (rec->nkf == 0) {
        crec_error_corrupt(err, "the recording has no key frame whose data reached the file");
        return 0;
    }
    rec->end = rec->kfs[rec->nkf - 1].global_icount;
    return 1;
}

const char *crec_index_note(const crec_recording *rec)
{
    return rec->index_note.msg[0] ? rec->index_note.msg : NULL;
}

int qx_need_parts(crec_recording *rec, crec_error *err)
{
    for (size_t i = 0; i < rec->marks.ngaps; i++) {
        size_t k = kf_at_or_after(rec, rec->marks.gaps[i].u.gap.to);
        int rc = k < rec->nkf ? qx_need_kf(rec, k, err) : CREC_OK;
        if (rc != CREC_OK)
            return rc;
    }
    return CREC_OK;
}

int qx_need_kf(crec_recording *rec, size_t k, crec_error *err)
{
    crec_fmt_cursor *c = NULL;
    crec_fmt_keyframe kf;
    const uint8_t *body;
    size_t len;
    int kind, rc;

    if (rec->kf_regs[k])
        return CREC_OK;
    /* the record the index points at, read by the format's own decoder */
    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_KEYFRAMES, 0, rec->ix->kf_off[k], &c, err);
    if (rc == CREC_OK)
        rc = crec_fmt_cursor_next(c, &kind, &body, &len, err);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = crec_error_corrupt(err, "the index puts key frame %zu at offset %" PRIu64
                                ", past the end of KEYFRAMES", k, rec->ix->kf_off[k]);
    else if (rc == CREC_OK && kind != CREC_FMT_K_KEYFRAME)
        rc = crec_error_corrupt(err, "the index puts key frame %zu at offset %" PRIu64
                                " of KEYFRAMES, where a record of kind 0x%02x lies", k,
                                rec->ix->kf_off[k], kind);
    if (rc == CREC_OK)
        rc = crec_fmt_kf_decode(body, len, &kf, err);
    crec_fmt_cursor_free(c);
    if (rc == CREC_OK && (kf.global_icount != rec->kfs[k].global_icount ||
                          kf.events_off != rec->kfs[k].events_off ||
                          kf.reads_off != rec->kfs[k].reads_off ||
                          kf.hits_before != rec->kfs[k].hits_before))
        rc = crec_error_corrupt(err, "key frame %zu in KEYFRAMES is not the index's", k);
    if (rc != CREC_OK)
        return rc;
    rec->kfs[k] = kf;
    rec->kf_regs[k] = 1;
    return CREC_OK;
}

/* ---- threads ------------------------------------------------------------------ */

/* A handle for thread tid alone: its key frames, in its own time. */
static int open_thread(crec_recording *rec, uint32_t tid, crec_recording **out, crec_error *err)
{
    crec_recording *t;
    size_t n = 0;

    *out = NULL;
    for (size_t i = 0; i < rec->nkf; i++)
        n += rec->kfs[i].tid == tid;
    if (n == 0)
        return CREC_OK;
    t = crec_calloc(1, sizeof *t);
    if (t)
        t->spool_fd = -1; /* the parent keeps the spooled copy */
    if (!t || !(t->path = crec_malloc(strlen(rec->path) + 1)) ||
        !(t->kfs = crec_malloc(n * sizeof *t->kfs)) || !(t->kf_regs = crec_malloc(n))) {
        crec_close(t);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    strcpy(t->path, rec->path);
    t->proc = rec->proc;
    t->r = rec->r;
    t->borrowed_reader = 1;
    t->flags = rec->flags;
    t->tid = tid;
    for (size_t i = 0; i < rec->nkf; i++)
        if (rec->kfs[i].tid == tid) {
            t->kfs[t->nkf] = rec->kfs[i];
            t->kfs[t->nkf].global_icount = rec->kfs[i].thread_icount; /* its own time */
            t->kf_regs[t->nkf++] = rec->kf_regs[i];
        }
    t->end = t->kfs[t->nkf - 1].global_icount;
    *out = t;
    return CREC_OK;
}

/* A recording of several threads: a handle per thread. */
static int open_threads(crec_recording *rec, crec_error *err)
{
    uint32_t max = 0;
    int rc = CREC_OK;

    for (size_t i = 0; i < rec->nkf; i++)
        if (rec->kfs[i].tid > max)
            max = rec->kfs[i].tid;
    if (max <= 1)
        return CREC_OK;
    if (max > CREC_FMT_MAX_THREADS)
        return crec_error_corrupt(err, "key frames of thread %u", max);
    if (!(rec->thr = crec_calloc(max, sizeof *rec->thr)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %u threads", max);
    rec->nthr = max;
    for (uint32_t t = 1; t <= max && rc == CREC_OK; t++)
        rc = open_thread(rec, t, &rec->thr[t - 1], err);
    return rc;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int qx_schedule(crec_recording *rec, crec_error *err)
{
    int rc;

    if (rec->slices || rec->nthr == 0)
        return CREC_OK;
    rc = crec_fmt_schedule(rec->r, rec->end, &rec->slices, &rec->nslices, err);
    if (rc != CREC_OK)
        return rc;
    rec->tslices = crec_calloc(rec->nthr, sizeof *rec->tslices);
    rec->ntslices = crec_calloc(rec->nthr, sizeof *rec->ntslices);
    if (!rec->tslices || !rec->ntslices)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the schedule");
    for (size_t i = 0; i < rec->nslices; i++) {
        uint32_t tid = rec->slices[i].tid;
        size_t **v, cap;
        if (tid < 1 || tid > rec->nthr)
            return crec_error_corrupt(err, "the schedule runs thread %u, which has no key frame",
                                      tid);
        v = &rec->tslices[tid - 1];
        cap = rec->ntslices[tid - 1];
        if (!(*v = crec_grow(*v, &cap, rec->ntslices[tid - 1] + 1, sizeof **v, 16)))
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the schedule");
        (*v)[rec->ntslices[tid - 1]++] = i;
    }
    for (size_t t = 0; t < rec->nthr; t++) /* already in order; kept so */
        crec_sort(rec->tslices[t], rec->ntslices[t], sizeof *rec->tslices[t], cmp_size);
    return CREC_OK;
}

int qx_thread_time(const crec_recording *rec, uint32_t tid, uint64_t t, uint64_t *tt)
{
    const size_t *v;
    size_t a = 0, b;
    const crec_fmt_slice *sl;

    if (tid < 1 || tid > rec->nthr || !rec->tslices || rec->ntslices[tid - 1] == 0)
        return 0;
    v = rec->tslices[tid - 1];
    b = rec->ntslices[tid - 1];
    if (rec->slices[v[0]].start > t)
        return 0;
    while (b - a > 1) { /* the last of its slices starting at or before t */
        size_t m = a + (b - a) / 2;
        if (rec->slices[v[m]].start <= t)
            a = m;
        else
            b = m;
    }
    sl = &rec->slices[v[a]];
    *tt = sl->thread_start + (t - sl->start < sl->len ? t - sl->start : sl->len);
    return 1;
}

int qx_thread_slices(crec_recording *rec, uint32_t tid, const size_t **v, size_t *n,
                     crec_error *err)
{
    int rc;

    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        return rc;
    if (tid < 1 || tid > rec->nthr || rec->ntslices[tid - 1] == 0)
        return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has %zu threads, "
                              "1 to %zu)", tid, rec->nthr, rec->nthr);
    *v = rec->tslices[tid - 1];
    *n = rec->ntslices[tid - 1];
    return CREC_OK;
}

uint64_t qx_global_time(const crec_recording *rec, uint32_t tid, uint64_t i)
{
    const size_t *v;
    size_t a = 0, b;
    const crec_fmt_slice *sl;

    if (tid < 1 || tid > rec->nthr || !rec->tslices || rec->ntslices[tid - 1] == 0)
        return i;
    v = rec->tslices[tid - 1];
    b = rec->ntslices[tid - 1];
    while (b - a > 1) { /* the last of its slices starting at or before its count i */
        size_t m = a + (b - a) / 2;
        if (rec->slices[v[m]].thread_start <= i)
            a = m;
        else
            b = m;
    }
    sl = &rec->slices[v[a]];
    return sl->start + (i - sl->thread_start < sl->len ? i - sl->thread_start : sl->len);
}

size_t crec_threads(const crec_recording *rec)
{
    return rec->nthr ? rec->nthr : 1;
}

uint32_t crec_thread_at(crec_recording *rec, uint64_t t)
{
    size_t i;

    if (rec->nthr == 0 || qx_schedule(rec, NULL) != CREC_OK || rec->nslices == 0)
        return 1;
    i = crec_fmt_slice_at(rec->slices, rec->nslices, t);
    /* at a switch the next thread runs; at the end, the last one ran */
    while (i + 1 < rec->nslices && rec->slices[i].start + rec->slices[i].len <= t &&
           rec->slices[i + 1].start <= t)
        i++;
    return rec->slices[i].tid;
}

int crec_thread_time(crec_recording *rec, uint32_t tid, uint64_t step, uint64_t *t,
                     crec_error *err)
{
    const size_t *v;
    size_t n;
    int rc;

    if (rec->nthr == 0) {
        if (tid != 1)
            return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has one "
                                  "thread, 1)", tid);
        if (step > rec->end)
            return crec_error_set(err, CREC_ERR_ARG, "thread 1 ran %" PRIu64 " instructions, "
                                  "not %" PRIu64, rec->end, step);
        *t = step;
        return CREC_OK;
    }
    if ((rc = qx_thread_slices(rec, tid, &v, &n, err)) != CREC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) { /* the first slice that gets that far */
        const crec_fmt_slice *sl = &rec->slices[v[i]];
        if (sl->thread_start + sl->len >= step && sl->thread_start <= step) {
            *t = sl->start + (step - sl->thread_start);
            return CREC_OK;
        }
    }
    return crec_error_set(err, CREC_ERR_ARG, "thread %u ran %" PRIu64 " instructions, not %"
                          PRIu64, tid, rec->slices[v[n - 1]].thread_start +
                          rec->slices[v[n - 1]].len, step);
}

uint64_t crec_thread_count(crec_recording *rec, uint32_t tid, uint64_t t)
{
    uint64_t tt;

    if (t > rec->end)
        t = rec->end;
    if (!rec->nthr)
        return tid == 1 ? t : 0;
    if (qx_schedule(rec, NULL) != CREC_OK || !qx_thread_time(rec, tid, t, &tt))
        return 0;
    return tt;
}

int crec_thread_insn_time(crec_recording *rec, uint32_t tid, uint64_t i, uint64_t *t,
                          crec_error *err)
{
    const crec_fmt_slice *last;
    const size_t *v;
    size_t n;
    int rc;

    if (!rec->nthr) {
        if (tid != 1)
            return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has one "
                                  "thread, 1)", tid);
        if (i >= rec->end)
            return crec_error_set(err, CREC_ERR_ARG, "thread 1 ran %" PRIu64 " instructions, "
                                  "not %" PRIu64, rec->end, i + 1);
        *t = i;
        return CREC_OK;
    }
    if ((rc = qx_thread_slices(rec, tid, &v, &n, err)) != CREC_OK)
        return rc;
    last = &rec->slices[v[n - 1]];
    if (i >= last->thread_start + last->len)
        return crec_error_set(err, CREC_ERR_ARG, "thread %u ran %" PRIu64 " instructions, "
                              "not %" PRIu64, tid, last->thread_start + last->len, i + 1);
    *t = qx_global_time(rec, tid, i);
    return CREC_OK;
}

/* ---- opening ---------------------------------------------------------------- */

int crec_open(const char *path, unsigned flags, crec_recording **out, crec_error *err)
{
    return crec_open_process(path, 0, flags, out, err);
}

int crec_open_process(const char *path, uint32_t proc, unsigned flags, crec_recording **out,
                      crec_error *err)
{
    crec_recording *rec;
    char spooled[PATH_MAX];
    int rc;

    *out = NULL;
    rec = crec_calloc(1, sizeof *rec);
    if (!rec)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening a recording");
    rec->flags = flags;
    rec->proc = proc;
    rec->spool_fd = -1;
    rec->path = crec_malloc(strlen(path) + 1);
    if (!rec->path) {
        crec_free(rec);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening a recording");
    }
    strcpy(rec->path, path);
    /* the index opens the recording again: a pipe or FIFO is read once, kept */
    rc = crec_fmt_reader_spool(path, spooled, sizeof spooled, &rec->spool_fd, err);
    if (rc == CREC_OK && strcmp(spooled, path) != 0) {
        crec_free(rec->path);
        if (!(rec->path = crec_malloc(strlen(spooled) + 1)))
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        else
            strcpy(rec->path, spooled);
    }
    if (rc == CREC_OK)
        rc = crec_fmt_reader_open(rec->path, &rec->r, err);
    if (rc == CREC_OK)
        rc = crec_fmt_reader_select(rec->r, proc, err);
    if (rc == CREC_OK)
        rc = load_keyframes(rec, err);
    if (rc == CREC_OK)
        rc = crec_fmt_marks_read(rec->r, &rec->marks, err);
    if (rc == CREC_OK && rec->nkf == 0)
        rc = rec->marks.stop.kind && rec->marks.stop.u.stop.why == CREC_FMT_STOP_NEVER
                 ? crec_error_set(err, CREC_ERR_NOTFOUND, "nothing was recorded: no --start-at "
                                  "trigger came")
                 : crec_error_corrupt(err, "the recording has no key frame whose data reached "
                                      "the file");
    if (rc == CREC_OK) {
        rec->end = rec->kfs[rec->nkf - 1].global_icount;
        rec->t = rec->kfs[0].global_icount; /* a ring dropped what came before */
    }
    if (rc == CREC_OK)
        rc = load_snapshots(rec, err);
    if (rc == CREC_OK)
        rc = load_code(rec, err);
    if (rc == CREC_OK)
        rc = open_threads(rec, err);
    if (rc != CREC_OK) {
        crec_close(rec);
        return rc;
    }
    *out = rec;
    return CREC_OK;
}

int crec_recording_processes(crec_recording *rec, crec_process_info **out, size_t *n,
                             crec_error *err)
{
    /* the path opens again: a pipe's recording was kept (crec_fmt_reader_spool) */
    return crec_list_processes(rec->path, out, n, err);
}

int crec_reopen_process(crec_recording **rec, uint32_t proc, crec_error *err)
{
    crec_recording *old = *rec, *nw = NULL;
    int rc;

    if (old->proc == proc)
        return CREC_OK;
    rc = crec_open_process(old->path, proc, old->flags, &nw, err);
    if (rc != CREC_OK)
        return rc;
    /* the kept copy of a pipe's recording goes with the new handle */
    nw->spool_fd = old->spool_fd;
    old->spool_fd = -1;
    crec_set_progress(nw, old->progress, old->progress_ctx);
    crec_close(old);
    *rec = nw;
    return CREC_OK;
}

void crec_close(crec_recording *rec)
{
    if (!rec)
        return;
    for (size_t i = 0; i < rec->nthr; i++)
        crec_close(rec->thr[i]);
    crec_free(rec->thr);
    for (size_t i = 0; rec->tslices && i < rec->nthr; i++)
        crec_free(rec->tslices[i]);
    crec_free(rec->tslices);
    crec_free(rec->ntslices);
    crec_free(rec->slices);
    crec_idx_free(rec->ix);
    qx_program_free(rec);
    for (size_t i = 0; i < rec->ncode; i++) {
        crec_free(rec->code[i].bytes);
        crec_free(rec->code[i].path);
    }
    crec_free(rec->code);
    crec_free(rec->snap);
    crec_free(rec->snap_kf);
    crec_free(rec->own_mapped);
    crec_free(rec->own_syscalls);
    crec_free(rec->listing);
    crec_free(rec->kfs);
    crec_free(rec->kf_regs);
    crec_fmt_marks_clear(&rec->marks);
    if (!rec->borrowed_reader)
        crec_fmt_reader_free(rec->r);
    if (rec->spool_fd >= 0)
        close(rec->spool_fd);
    crec_free(rec->path);
    crec_free(rec);
}

void crec_set_progress(crec_recording *rec, crec_progress_fn fn, void *ctx)
{
    rec->progress = fn;
    rec->progress_ctx = ctx;
    for (size_t i = 0; i < rec->nthr; i++)
        if (rec->thr[i])
            crec_set_progress(rec->thr[i], fn, ctx);
}

/* ---- time ---------------------------------------------------------------- */

uint64_t crec_length(const crec_recording *rec)
{
    return rec->end;
}

uint64_t crec_start(const crec_recording *rec)
{
    return rec->nkf ? rec->kfs[0].global_icount : 0;
}

/* The parts the recording holds, "A to B, C to D", into buf. */
static void parts_text(const crec_recording *rec, char *buf, size_t size)
{
    uint64_t from = crec_start(rec);
    size_t n = 0, shown = 0;

    buf[0] = 0;
    for (size_t i = 0; i <= rec->marks.ngaps && n + 1 < size; i++) {
        const crec_fmt_mark *g = i < rec->marks.ngaps ? &rec->marks.gaps[i] : NULL;
        uint64_t to = g ? g->u.gap.from : rec->end;
        if (g && g->u.gap.to <= from)
            continue; /* the gap before the first part */
        if (shown == 4 && g) { /* the first parts and the last */
            n += (size_t)snprintf(buf + n, size - n, ", ...");
            shown++;
        } else if (shown < 4 || !g) {
            n += (size_t)snprintf(buf + n, size - n, "%s%" PRIu64 " to %" PRIu64,
                                  shown ? ", " : "", from, to);
            shown++;
        }
        if (g)
            from = g->u.gap.to;
    }
}

int crec_recorded(crec_recording *rec, uint64_t t, crec_error *err)
{
    uint64_t start = crec_start(rec);
    char parts[200];

    if (t > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", t, rec->end);
    if (t >= start && rec->marks.ngaps == 0)
        return CREC_OK;
    parts_text(rec, parts, sizeof parts);
    for (size_t i = 0; i < rec->marks.ngaps; i++) {
        const crec_fmt_mark *g = &rec->marks.gaps[i];
        /* the state at a gap's ends is recorded: a part's last and first key frames */
        if (t > g->u.gap.from && t < g->u.gap.to && g->u.gap.from >= start)
            return crec_error_set(err, CREC_ERR_NOTFOUND, "time %" PRIu64 " was not recorded: "
                                  "the program ran unrecorded from %" PRIu64 " to %" PRIu64
                                  " (from --stop-at to --start-at); the recording holds %s",
                                  t, g->u.gap.from, g->u.gap.to, parts);
    }
    if (t >= start)
        return CREC_OK;
    if (rec->marks.ring.kind)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "time %" PRIu64 " was dropped: the ring "
                              "keeps %" PRIu64 " to %" PRIu64, t, start, rec->end);
    if (rec->marks.ngaps && rec->marks.gaps[0].u.gap.why == CREC_FMT_GAP_BEFORE_START)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "time %" PRIu64 " was not recorded: the "
                              "recording starts at %" PRIu64 " (--start-at); it holds %s", t,
                              start, parts);
    return crec_error_set(err, CREC_ERR_NOTFOUND, "time %" PRIu64 " is before the recording's "
                          "first key frame (%" PRIu64 "): it holds %s", t, start, parts);
}

int crec_seek(crec_recording *rec, uint64_t t, crec_error *err)
{
    int rc = crec_recorded(rec, t, err);

    if (rc == CREC_OK)
        rec->t = t;
    return rc;
}

uint64_t crec_tell(const crec_recording *rec)
{
    return rec->t;
}

int crec_step(crec_recording *rec, int64_t n, crec_error *err)
{
    uint64_t back = n < 0 ? (uint64_t)(-(n + 1)) + 1 : 0; /* |n|, INT64_MIN too */

    if (back > rec->t)
        return crec_error_set(err, CREC_ERR_ARG, "can't step back %" PRIu64 " instructions "
                              "from %" PRIu64, back, rec->t);
    return crec_seek(rec, rec->t + (uint64_t)n, err);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Several threads: the syscalls of them all, in global time (once). */
static int thread_syscalls(crec_recording *rec, crec_error *err)
{
    size_t n = 0, cap = 0;
    uint64_t *v = NULL;
    int rc = qx_schedule(rec, err);

    for (uint32_t tid = 1; tid <= rec->nthr && rc == CREC_OK; tid++) {
        crec_recording *th = rec->thr[tid - 1];
        if (!th || (rc = load_events(th, err)) != CREC_OK)
            continue;
        for (size_t i = 0; i < th->nsyscalls; i++) {
            uint64_t *p = crec_grow(v, &cap, n + 1, sizeof *v, 256);
            if (!p) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
                break;
            }
            v = p; /* a count that includes the syscall: it is instruction count-1 */
            v[n++] = qx_global_time(rec, tid, th->syscalls[i] ? th->syscalls[i] - 1 : 0) + 1;
        }
    }
    if (rc != CREC_OK) {
        crec_free(v);
        return rc;
    }
    crec_sort(v, n, sizeof *v, cmp_u64);
    rec->own_syscalls = v;
    rec->syscalls = v, rec->nsyscalls = n;
    rec->events_loaded = 1;
    return CREC_OK;
}

int crec_syscall_time(crec_recording *rec, uint64_t n, uint64_t *t, crec_error *err)
{
    int rc = rec->nthr && !rec->events_loaded ? thread_syscalls(rec, err) : load_events(rec, err);

    if (rc != CREC_OK)
        return rc;
    if (n < 1 || n > rec->nsyscalls)
        return crec_error_set(err, CREC_ERR_ARG, "the recording has %zu syscalls, not %" PRIu64,
                              rec->nsyscalls, n);
    /* a SYSCALL record's icount counts the syscall instruction itself */
    *t = rec->syscalls[n - 1] ? rec->syscalls[n - 1] - 1 : 0;
    return CREC_OK;
}

/* The segment holding time t: the last key frame at or before it. */
size_t qx_seg_of(const crec_recording *rec, uint64_t t)
{
    size_t a = 0, b = rec->nkf - 1; /* segments are 0 .. nkf-2 */

    if (b == 0)
        return 0;
    b--; /* last segment */
    while (a < b) {
        size_t m = a + (b - a + 1) / 2;
        if (rec->kfs[m].global_icount <= t)
            a = m;
        else
            b = m - 1;
    }
    return a;
}

/* ---- the index ----------------------------------------------------------- */

int qx_ensure_index(crec_recording *rec, crec_error *err)
{
    crec_idx *ix = NULL;
    int rc;

    if (rec->nthr) { /* several threads: every thread's */
        for (size_t t = 0; t < rec->nthr; t++) {
            if (!rec->thr[t])
                continue;
            if ((rc = qx_ensure_index(rec->thr[t], err)) != CREC_OK)
                return rc;
            rec->index_built |= rec->thr[t]->index_built;
            if (rec->thr[t]->index_note.msg[0] && !rec->index_note.msg[0])
                rec->index_note = rec->thr[t]->index_note;
        }
        return CREC_OK;
    }
    if (rec->ix)
        return CREC_OK;
    if (rec->index_dropped) { /* the file's index failed a query: build it anew */
        rc = crec_idx_rebuild(rec->path, rec->proc, rec->tid, rec->kfs, rec->nkf, rec->index_jobs,
                              rec->progress, rec->progress_ctx, &ix, err);
        rec->index_built = rc == CREC_OK;
    } else {
        crec_error note = {0};
        rc = crec_idx_load_or_build(rec->path, rec->proc, rec->tid, rec->kfs, rec->nkf, rec->progress,
                                    rec->progress_ctx, &ix, &rec->index_built, &note, err);
        if (note.msg[0])
            index_unusable(rec, note.msg);
    }
    return rc == CREC_OK ? adopt_index(rec, ix, err) : rc;
}

int crec_index_build(crec_recording *rec, unsigned jobs, uint64_t *index_bytes,
                     uint64_t *trace_bytes, crec_error *err)
{
    int built;

    if (rec->ix || rec->index_built)
        return crec_error_set(err, CREC_ERR_ARG, "crec_index_build: the handle has an index "
                              "already (open it with CREC_OPEN_NO_INDEX)");
    /* the path that rebuilds a dropped index builds, and saves, this one */
    rec->index_dropped = 1;
    rec->index_jobs = jobs;
    for (size_t t = 0; t < rec->nthr; t++)
        if (rec->thr[t]) {
            rec->thr[t]->index_dropped = 1;
            rec->thr[t]->index_jobs = jobs;
        }
    return crec_index_info(rec, index_bytes, trace_bytes, &built, err);
}

int crec_index_info(crec_recording *rec, uint64_t *index_bytes, uint64_t *trace_bytes,
                    int *built, crec_error *err)
{
    char ipath[4096];
    struct stat st;
    int rc = qx_ensure_index(rec, err);

    if (rc != CREC_OK)
        return rc;
    crec_idx_file(rec->path, rec->proc, ipath, sizeof ipath);
    *index_bytes = stat(ipath, &st) == 0 ? (uint64_t)st.st_size : 0;
    *trace_bytes = stat(rec->path, &st) == 0 ? (uint64_t)st.st_size : 0;
    *built = rec->index_built;
    return CREC_OK;
}

/* ---- what memory held ------------------------------------------------------ */

const struct qx_snap_page *qx_snap_find(const crec_recording *rec, uint64_t page, uint64_t t)
{
    size_t a = 0, b = rec->nsnap;

    while (a < b) { /* first entry > (page, t) */
        size_t m = a + (b - a) / 2;
        const struct qx_snap_page *p = &rec->snap[m];
        if (p->addr < page || (p->addr == page && p->icount <= t))
            a = m + 1;
        else
            b = m;
    }
    return a > 0 && rec->snap[a - 1].addr == page ? &rec->snap[a - 1] : NULL;
}

int qx_snap_byte(crec_recording *rec, const struct qx_snap_page *p, uint64_t addr,
                 uint8_t *out, crec_error *err)
{
    const uint8_t *data;
    size_t len;
    int rc = crec_fmt_blob_view(rec->r, &p->blob, &data, &len, err);

    if (rc != CREC_OK)
        return rc;
    if (addr - p->addr >= len)
        return crec_error_corrupt(err, "snapshot page at 0x%" PRIx64 " holds %zu bytes",
                                  p->addr, len);
    *out = data[addr - p->addr];
    return CREC_OK;
}

int qx_last_snapshot(const crec_recording *rec, uint64_t t, size_t *kf)
{
    size_t a = 0, b = rec->nsnap_kf;

    while (a < b) { /* first snapshot after t */
        size_t m = a + (b - a) / 2;
        if (rec->kfs[rec->snap_kf[m]].global_icount <= t)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0)
        return 0;
    *kf = rec->snap_kf[a - 1];
    return 1;
}

int qx_ever_mapped(crec_recording *rec, uint64_t addr, size_t len, int *yes, crec_error *err)
{
    int rc;

    *yes = 0;
    for (size_t t = 0; t < rec->nthr && !*yes; t++) /* every thread's map changes */
        if (rec->thr[t] && (rc = qx_ever_mapped(rec->thr[t], addr, len, yes, err)) != CREC_OK)
            return rc;
    if (rec->nthr) {
        for (size_t i = 0; i < rec->nsnap && !*yes; i++)
            *yes = rec->snap[i].addr < addr + len && addr < rec->snap[i].addr + CREC_PAGE_SIZE;
        return CREC_OK;
    }
    rc = load_events(rec, err);
    if (rc != CREC_OK)
        return rc;
    for (size_t i = 0; i < rec->nmapped && !*yes; i++)
        *yes = rec->mapped[2 * i] < addr + len && addr < rec->mapped[2 * i + 1];
    for (size_t i = 0; i < rec->nsnap && !*yes; i++)
        *yes = rec->snap[i].addr < addr + len && addr < rec->snap[i].addr + CREC_PAGE_SIZE;
    return CREC_OK;
}

int qx_in_code(const crec_recording *rec, uint64_t addr, size_t len)
{
    for (size_t i = 0; i < rec->ncode; i++)
        if (addr >= rec->code[i].addr && addr + len <= rec->code[i].addr + rec->code[i].len)
            return 1;
    return 0;
}

int qx_code_bytes(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf, int *found,
                  crec_error *err)
{
    *found = 0;
    for (size_t i = 0; i < rec->ncode; i++) {
        struct qx_code *c = &rec->code[i];
        int all, rc;
        if (addr < c->addr || addr + len > c->addr + c->len)
            continue;
        /* a page of paged code the program never ran: not known from here */
        if ((rc = crec_fmt_blob_recorded(rec->r, &c->blob, addr - c->addr, len, &all, err)) !=
            CREC_OK)
            return rc;
        if (!all)
            return CREC_OK;
        if (!c->bytes) {
            size_t blen;
            if ((rc = crec_fmt_blob_get(rec->r, &c->blob, &c->bytes, &blen, err)) != CREC_OK)
                return rc;
            if (blen != c->len) {
                crec_free(c->bytes);
                c->bytes = NULL;
                return crec_error_corrupt(err, "code blob of 0x%" PRIx64 " has %zu bytes",
                                          c->addr, blen);
            }
        }
        memcpy(buf, c->bytes + (addr - c->addr), len);
        *found = 1;
        return CREC_OK;
    }
    return CREC_OK;
}

int crec_lookup_symbol(crec_recording *rec, const char *name, uint64_t *addr, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, nlen = strlen(name);
    int kind, rc, found = 0;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SYMBOLS, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while (!found && (rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_symbol s;
        if (kind != CREC_FMT_K_SYMBOL) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the SYMBOLS stream", kind);
            break;
        }
        if ((rc = crec_fmt_sym_decode(body, blen, &s, err)) != CREC_OK)
            break;
        if (s.name_len != nlen || memcmp(s.name, name, nlen) != 0)
            continue;
        for (size_t i = 0; i < rec->ncode; i++)
            if (memcmp(&rec->code[i].blob, &s.blob, sizeof s.blob) == 0) {
                *addr = rec->code[i].addr + s.addr;
                found = 1;
                break;
            }
    }
    crec_fmt_cursor_free(c);
    if (found)
        return CREC_OK;
    if (rc != CREC_OK && rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_TRUNCATED)
        return rc;
    return crec_error_set(err, CREC_ERR_NOTFOUND, "no symbol '%s' in the recording", name);
}

void qx_symbol_at(crec_recording *rec, uint64_t addr, char *buf, size_t size)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen;
    int kind;
    uint64_t best_off = UINT64_MAX;

    buf[0] = 0;
    if (crec_fmt_cursor_open(rec->r, CREC_FMT_S_SYMBOLS, 0, 0, &c, NULL) != CREC_OK)
        return;
    while (crec_fmt_cursor_next(c, &kind, &body, &blen, NULL) == CREC_OK) {
        crec_fmt_symbol y;
        if (kind != CREC_FMT_K_SYMBOL || crec_fmt_sym_decode(body, blen, &y, NULL) != CREC_OK ||
            !y.name_len)
            continue;
        for (size_t i = 0; i < rec->ncode; i++) {
            uint64_t at;
            if (memcmp(&rec->code[i].blob, &y.blob, sizeof y.blob) != 0)
                continue;
            at = rec->code[i].addr + y.addr;
            /* the symbol holding addr; a sizeless one only when it is exact */
            if (addr < at || addr - at >= (y.size ? y.size : 1) || addr - at >= best_off)
                continue;
            best_off = addr - at;
            if (best_off)
                snprintf(buf, size, "%.*s+0x%" PRIx64, (int)y.name_len, y.name, best_off);
            else
                snprintf(buf, size, "%.*s", (int)y.name_len, y.name);
        }
    }
    crec_fmt_cursor_free(c);
}
