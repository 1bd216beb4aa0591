/*
 * recording.c - the handle behind crec_open: what a query needs to know of
 * a recording besides the index (key frames, snapshots, code, the memory
 * map at a key frame, syscall times, symbols), loaded as it is needed so
 * that opening a recording for one query costs little.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The key frame a snapshot was taken at (snapshots are taken right after
 * one), remembered in time order.  @return -1 out of memory. */
static int add_snap_time(crec_recording *rec, size_t *cap, uint64_t icount)
{
    size_t k = 0, hi = rec->nkf;

    while (k < hi) { /* the first key frame at or after icount */
        size_t m = k + (hi - k) / 2;
        if (rec->kfs[m].global_icount < icount)
            k = m + 1;
        else
            hi = m;
    }
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
    if (rec->nsnap)
        qsort(rec->snap, rec->nsnap, sizeof *rec->snap, cmp_snap);
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
    uint64_t end = k + 1 < rec->nkf ? rec->kfs[k + 1].events_off : UINT64_MAX;
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0;
    int kind, rc;

    if (rec->listing_kf == k + 1)
        return CREC_OK;
    rec->listing_kf = 0;
    rec->nlisting = 0;
    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_EVENTS, rec->kfs[k].tid, rec->kfs[k].events_off,
                              &c, err);
    while (rc == CREC_OK && crec_fmt_cursor_offset(c) < end &&
           (rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_event ev;
        if (kind != CREC_FMT_K_MMAP)
            break;
        if ((rc = crec_fmt_ev_decode(kind, body, blen, &ev, err)) != CREC_OK ||
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

/*
 * The key frames: from an index that is there (registers are read when a
 * run needs them: decoding every key frame is most of what opening a long
 * recording costs), else from KEYFRAMES.
 */
static int load_keyframes(crec_recording *rec, crec_error *err)
{
    crec_idx *ix = NULL;
    crec_error quiet = {0};
    int rc, cut;

    if (!(rec->flags & CREC_OPEN_NO_INDEX) &&
        crec_idx_load(rec->path, NULL, 0, &ix, &quiet) == CREC_OK) {
        rec->kfs = crec_malloc(ix->nkf * sizeof *rec->kfs);
        rec->kf_regs = crec_calloc(ix->nkf, 1);
        if (!rec->kfs || !rec->kf_regs) {
            crec_idx_free(ix);
            return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening the index");
        }
        memcpy(rec->kfs, ix->kfs, ix->nkf * sizeof *rec->kfs);
        rec->nkf = ix->nkf;
        return adopt_index(rec, ix, err);
    }
    rc = crec_replay_load_keyframes(rec->r, &rec->kfs, &rec->nkf, err);
    if (rc == CREC_OK) /* a file cut short ends where its replay does */
        rec->nkf = crec_replay_reachable_keyframes(rec->r, rec->kfs, rec->nkf, &cut);
    if (rc == CREC_OK && !(rec->kf_regs = crec_malloc(rec->nkf ? rec->nkf : 1)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the key frames");
    if (rc == CREC_OK)
        memset(rec->kf_regs, 1, rec->nkf);
    return rc;
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

int crec_open(const char *path, unsigned flags, crec_recording **out, crec_error *err)
{
    crec_recording *rec;
    int rc;

    *out = NULL;
    rec = crec_calloc(1, sizeof *rec);
    if (!rec)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening a recording");
    rec->flags = flags;
    rec->path = crec_malloc(strlen(path) + 1);
    if (!rec->path) {
        crec_free(rec);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory opening a recording");
    }
    strcpy(rec->path, path);
    rc = crec_fmt_reader_open(path, &rec->r, err);
    if (rc == CREC_OK)
        rc = load_keyframes(rec, err);
    if (rc == CREC_OK && rec->nkf == 0)
        rc = crec_error_corrupt(err, "the recording has no key frame whose data reached the file");
    if (rc == CREC_OK) {
        rec->end = rec->kfs[rec->nkf - 1].global_icount;
        rc = load_snapshots(rec, err);
    }
    if (rc == CREC_OK)
        rc = load_code(rec, err);
    if (rc != CREC_OK) {
        crec_close(rec);
        return rc;
    }
    *out = rec;
    return CREC_OK;
}

void crec_close(crec_recording *rec)
{
    if (!rec)
        return;
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
    crec_fmt_reader_free(rec->r);
    crec_free(rec->path);
    crec_free(rec);
}

void crec_set_progress(crec_recording *rec, crec_progress_fn fn, void *ctx)
{
    rec->progress = fn;
    rec->progress_ctx = ctx;
}

/* ---- time ---------------------------------------------------------------- */

uint64_t crec_length(const crec_recording *rec)
{
    return rec->end;
}

int crec_seek(crec_recording *rec, uint64_t t, crec_error *err)
{
    if (t > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", t, rec->end);
    rec->t = t;
    return CREC_OK;
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

int crec_syscall_time(crec_recording *rec, uint64_t n, uint64_t *t, crec_error *err)
{
    int rc = load_events(rec, err);

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

    if (rec->ix)
        return CREC_OK;
    rc = crec_idx_load_or_build(rec->path, rec->kfs, rec->nkf, rec->progress,
                                rec->progress_ctx, &ix, &rec->index_built, err);
    return rc == CREC_OK ? adopt_index(rec, ix, err) : rc;
}

int crec_index_info(crec_recording *rec, uint64_t *index_bytes, uint64_t *trace_bytes,
                    int *built, crec_error *err)
{
    char ipath[4096];
    struct stat st;
    int rc = qx_ensure_index(rec, err);

    if (rc != CREC_OK)
        return rc;
    snprintf(ipath, sizeof ipath, "%s.idx", rec->path);
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
    int rc = load_events(rec, err);

    *yes = 0;
    if (rc != CREC_OK)
        return rc;
    for (size_t i = 0; i < rec->nmapped && !*yes; i++)
        *yes = rec->mapped[2 * i] < addr + len && addr < rec->mapped[2 * i + 1];
    for (size_t i = 0; i < rec->nsnap && !*yes; i++)
        *yes = rec->snap[i].addr < addr + len && addr < rec->snap[i].addr + CREC_PAGE_SIZE;
    return CREC_OK;
}

int qx_code_bytes(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf, int *found,
                  crec_error *err)
{
    *found = 0;
    for (size_t i = 0; i < rec->ncode; i++) {
        struct qx_code *c = &rec->code[i];
        if (addr < c->addr || addr + len > c->addr + c->len)
            continue;
        if (!c->bytes) {
            size_t blen;
            int rc = crec_fmt_blob_get(rec->r, &c->blob, &c->bytes, &blen, err);
            if (rc != CREC_OK)
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
