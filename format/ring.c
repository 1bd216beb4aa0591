/*
 * ring.c - ring recordings (docs/FORMAT.md §10): a file that keeps the end
 * of a run within a bound, its oldest segments dropped whole.
 *
 * The writer cuts the run into segments at key frames the recorder makes
 * for the purpose (crec_fmt_ring_boundary): every stream is flushed there,
 * so that no chunk holds bytes of two segments and no record spans two.
 * Code blobs, CODE, SYMBOLS and MARKS are pinned: no segment owns them, and
 * a rotation keeps them.
 *
 * A file can't lose its start in place, so a full ring is rotated: a new
 * file is written beside it (PATH.ring-PID) with the header, the pinned
 * chunks, the newest segments that fit in three quarters of the bound, and
 * the memory at the first segment kept (a full snapshot, built from the
 * snapshots of the segments dropped and the blobs they name), then renamed
 * over PATH.  So PATH always names a readable recording: killed at any
 * point, the recorder leaves the old file or the new one, each read up to
 * its last complete chunk.  A rotation copies what it keeps: the cost of
 * writing a ring is that copy, about three times the bytes recorded
 * (measured in docs/FORMAT.md §10).
 *
 * What the new file keeps is renumbered as if it had been written that
 * way: each stream's chunks from 0, offsets from 0, the key frames' stream
 * offsets shifted to match.  A reader needs nothing new to read it; the
 * RING mark says what was dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "format/format_int.h"

#define RING_MIN_SIZE (64u << 10)     /* a smaller bound holds hardly a segment */
#define RING_MIN_SEGMENT (16u << 10)
#define RING_SEGMENTS 16              /* a segment is this fraction of the bound */

struct fmt_ring_seg {
    uint32_t id;
    uint64_t icount;     /* global time of its first key frame */
    uint64_t kf_off;     /* where its records begin in KEYFRAMES */
    uint64_t snap_off;   /* ... and in SNAPSHOTS */
    uint64_t file_start; /* the file's size when it began */
};

struct fmt_ring {
    char *path;
    uint64_t size, segment;
    struct fmt_ring_seg *segs;
    size_t nsegs, cap;
    uint32_t next_id;
    crec_fmt_mark mark;  /* the RING mark of the file as it is */
    crec_fmt_ring_stats st;
    uint64_t base_bytes; /* the base snapshot and its blobs, at the last rotation */
};

uint32_t fmt_ring_current(const crec_fmt_writer *w)
{
    return w->ring && w->ring->nsegs ? w->ring->segs[w->ring->nsegs - 1].id : 0;
}

void fmt_ring_free(crec_fmt_writer *w)
{
    if (!w->ring)
        return;
    crec_free(w->ring->path);
    crec_free(w->ring->segs);
    crec_free(w->ring);
    w->ring = NULL;
}

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int push_segment(crec_fmt_writer *w, uint64_t icount, crec_error *err)
{
    struct fmt_ring *g = w->ring;
    struct fmt_ring_seg *s = crec_grow(g->segs, &g->cap, g->nsegs + 1, sizeof *s, 16);

    if (!s)
        return fmt_w_nomem(w, err);
    g->segs = s;
    g->segs[g->nsegs++] = (struct fmt_ring_seg){
        g->next_id++, icount, crec_fmt_writer_offset(w, CREC_FMT_S_KEYFRAMES, 0),
        crec_fmt_writer_offset(w, CREC_FMT_S_SNAPSHOTS, 0), w->off};
    fmt_hset_clear(&w->seg_blobs);
    return CREC_OK;
}

static int write_mark(crec_fmt_writer *w, const crec_fmt_mark *m, crec_error *err)
{
    crec_fmt_buf b = {0};
    int rc = crec_fmt_mark_encode(&b, m);

    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(w, CREC_FMT_S_MARKS, 0, &b, err);
    else
        rc = fmt_w_nomem(w, err);
    crec_fmt_buf_free(&b);
    return rc;
}

int crec_fmt_ring_start(crec_fmt_writer *w, const crec_fmt_ring_opts *o, crec_error *err)
{
    struct fmt_ring *g;
    struct stat st;

    if (w->ring)
        return crec_error_set(err, CREC_ERR_ARG, "%s: already a ring", w->name);
    if (!o->path || fstat(w->fd, &st) != 0 || !S_ISREG(st.st_mode))
        return crec_error_set(err, CREC_ERR_ARG, "%s: a ring is written to a file, not a pipe "
                              "or a device", w->name);
    if (o->size < RING_MIN_SIZE)
        return crec_error_set(err, CREC_ERR_ARG, "a ring of %llu bytes is too small (at least "
                              "%u KiB)", (unsigned long long)o->size, RING_MIN_SIZE >> 10);
    if (w->ndir)
        return crec_error_set(err, CREC_ERR_ARG, "%s: a ring starts before the first chunk",
                              w->name);
    if (!(g = crec_calloc(1, sizeof *g)) || !(g->path = crec_malloc(strlen(o->path) + 1))) {
        crec_free(g);
        return fmt_w_nomem(w, err);
    }
    strcpy(g->path, o->path);
    { /* a rotation writes a file beside it: find out now if it can't */
        char tmp[4096];
        int fd;
        snprintf(tmp, sizeof tmp, "%s.ring-%ld", o->path, (long)getpid());
        unlink(tmp);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            int e = errno;
            crec_free(g->path);
            crec_free(g);
            return crec_error_set(err, CREC_ERR_IO, "%s: a ring writes its next file beside "
                                  "it, and can't: %s", tmp, strerror(e));
        }
        close(fd);
        unlink(tmp);
    }
    g->size = o->size;
    g->segment = o->segment ? o->segment : o->size / RING_SEGMENTS;
    if (g->segment < RING_MIN_SEGMENT)
        g->segment = RING_MIN_SEGMENT;
    w->ring = g;
    g->mark.kind = CREC_FMT_K_RING;
    g->mark.u.ring.size = o->size;
    if (push_segment(w, 0, err) != CREC_OK)
        return err ? err->code : CREC_ERR_NOMEM;
    return write_mark(w, &g->mark, err);
}

uint64_t crec_fmt_ring_segment_bytes(const crec_fmt_writer *w)
{
    uint64_t buffered = 0;

    if (!w->ring)
        return 0;
    /* buffered bytes counted whole, as if they did not compress: the
     * estimate errs towards shorter segments, never longer ones */
    for (size_t i = 0; i < w->nstreams; i++)
        buffered += w->streams[i].len;
    return w->off - w->ring->segs[w->ring->nsegs - 1].file_start + buffered;
}

int crec_fmt_ring_stats_get(const crec_fmt_writer *w, crec_fmt_ring_stats *st)
{
    if (!w->ring)
        return 0;
    *st = w->ring->st;
    return 1;
}

/* ---- a rotation ------------------------------------------------------------ */

/* Re-encoded rather than copied: their records are renumbered or merged. */
static int reencoded(int type)
{
    return type == CREC_FMT_S_KEYFRAMES || type == CREC_FMT_S_SNAPSHOTS ||
           type == CREC_FMT_S_MARKS;
}

static size_t stream_index(const crec_fmt_writer *w, int type, uint32_t tid)
{
    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].type == type && w->streams[i].tid == tid)
            return i;
    return SIZE_MAX;
}

/* A page of the memory at the first segment kept. */
struct base_page {
    uint64_t addr;
    size_t order; /* later snapshots win */
    crec_fmt_hash blob;
};

static int cmp_base(const void *a, const void *b)
{
    const struct base_page *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_loc(const void *key, const void *e)
{
    return memcmp(key, &((const crec_fmt_blob_loc *)e)->hash, sizeof(crec_fmt_hash));
}

/* Everything a rotation builds before it writes the new file. */
struct rot {
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    const uint8_t *map;  /* the old file */
    size_t s0;           /* the first segment kept */
    uint32_t cut;        /* its id: chunks of older segments are dropped */
    uint64_t g0;         /* its time */
    uint64_t *shift;     /* per writer stream: the bytes dropped from its start */
    crec_fmt_buf kfs;    /* the new KEYFRAMES */
    uint64_t *kf_off, *snap_off; /* per segment kept: its new offsets */
    crec_fmt_buf snaps;  /* the new SNAPSHOTS */
    crec_fmt_buf blobs;  /* blobs of the base snapshot that only dropped chunks hold */
    crec_fmt_buf marks;  /* the new MARKS */
    struct base_page *base;
    size_t nbase, capbase;
    uint64_t listing[2 * 1024]; /* mappings at the first key frame kept: start, end */
    size_t nlisting;
    int listing_all;     /* too many mappings to list: keep every page */
};

static int rot_nomem(struct rot *t, crec_error *err)
{
    return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory rotating the ring",
                          t->w->name);
}

/* The key frames of the segments kept, their stream offsets shifted. */
static int rot_keyframes(struct rot *t, crec_error *err)
{
    struct fmt_ring *g = t->w->ring;
    crec_fmt_cursor *c;
    size_t seg = t->s0;
    int rc = crec_fmt_cursor_open(t->r, CREC_FMT_S_KEYFRAMES, 0, g->segs[t->s0].kf_off, &c, err);

    if (rc != CREC_OK)
        return rc;
    for (;;) {
        uint64_t at = crec_fmt_cursor_offset(c);
        const uint8_t *body;
        size_t len;
        int kind;
        crec_fmt_keyframe kf;
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) != CREC_OK)
            break;
        if (kind != CREC_FMT_K_KEYFRAME && kind != CREC_FMT_K_CHECKPOINT) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the KEYFRAMES stream", kind);
            break;
        }
        if ((rc = crec_fmt_kf_decode(body, len, &kf, err)) != CREC_OK)
            break;
        while (seg < g->nsegs && g->segs[seg].kf_off <= at)
            t->kf_off[seg++ - t->s0] = t->kfs.len;
        const int types[3] = {CREC_FMT_S_READS, CREC_FMT_S_EVENTS, CREC_FMT_S_SEQ};
        uint64_t *offs[3] = {&kf.reads_off, &kf.events_off, &kf.seq_off};
        for (int k = 0; k < 3; k++) {
            size_t si = stream_index(t->w, types[k], kf.tid);
            uint64_t sh = si == SIZE_MAX ? 0 : t->shift[si];
            if (*offs[k] < sh) {
                rc = crec_error_corrupt(err, "a key frame kept by the ring points into the "
                                        "dropped part of thread %u's %s", kf.tid,
                                        crec_fmt_stream_name(types[k]));
                break;
            }
            *offs[k] -= sh;
        }
        /* a check point keeps its kind: a replay checks it, starts at none */
        if (rc != CREC_OK ||
            (rc = kind == CREC_FMT_K_CHECKPOINT ? crec_fmt_cp_encode(&t->kfs, &kf)
                                                : crec_fmt_kf_encode(&t->kfs, &kf)) != CREC_OK)
            break;
    }
    crec_fmt_cursor_free(c);
    while (seg < g->nsegs) /* segments with no key frame yet (none, at a boundary) */
        t->kf_off[seg++ - t->s0] = t->kfs.len;
    if (rc == CREC_ERR_NOTFOUND)
        rc = CREC_OK;
    return rc == CREC_ERR_NOMEM ? rot_nomem(t, err) : rc;
}

/* The memory map listed after the first key frame kept: the base snapshot
 * keeps only pages mapped then. */
static int rot_listing(struct rot *t, crec_error *err)
{
    crec_fmt_cur cur = {t->kfs.data, t->kfs.len, 0};
    crec_fmt_keyframe kf;
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, rc;
    size_t si;

    if ((rc = crec_fmt_frame_next(&cur, &kind, &body, &len, err)) != CREC_OK ||
        (rc = crec_fmt_kf_decode(body, len, &kf, err)) != CREC_OK)
        return rc;
    si = stream_index(t->w, CREC_FMT_S_EVENTS, kf.tid);
    kf.events_off += si == SIZE_MAX ? 0 : t->shift[si]; /* the old file's offset */
    if ((rc = crec_fmt_cursor_open(t->r, CREC_FMT_S_EVENTS, kf.tid, kf.events_off, &c, err)))
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) == CREC_OK) {
        crec_fmt_event ev;
        if (kind != CREC_FMT_K_MMAP)
            break;
        if ((rc = crec_fmt_ev_decode(crec_fmt_reader_header(t->r)->version, kind, body, len,
                                     &ev, err)) != CREC_OK)
            break;
        if (!(ev.u.mmap.flags & CREC_FMT_EV_LISTING))
            break;
        if (t->nlisting + 2 > sizeof t->listing / sizeof t->listing[0]) {
            t->listing_all = 1;
            break;
        }
        t->listing[t->nlisting++] = ev.u.mmap.addr;
        t->listing[t->nlisting++] = ev.u.mmap.addr + ev.u.mmap.len;
    }
    crec_fmt_cursor_free(c);
    return rc == CREC_ERR_NOTFOUND || rc == CREC_OK ? CREC_OK : rc;
}

static int listed(const struct rot *t, uint64_t addr)
{
    if (t->listing_all)
        return 1;
    for (size_t i = 0; i < t->nlisting; i += 2)
        if (addr >= t->listing[i] && addr < t->listing[i + 1])
            return 1;
    return 0;
}

/* Snapshots up to the first segment kept merge into one, the memory then;
 * later ones are kept as they are. */
static int rot_snapshots(struct rot *t, crec_error *err)
{
    struct fmt_ring *g = t->w->ring;
    crec_fmt_cursor *c;
    crec_fmt_buf later = {0};
    size_t order = 0, seg = t->s0 + 1, n = 0;
    int rc = crec_fmt_cursor_open(t->r, CREC_FMT_S_SNAPSHOTS, 0, 0, &c, err);

    if (rc != CREC_OK)
        return rc;
    t->snap_off[0] = 0;
    for (;;) {
        uint64_t at = crec_fmt_cursor_offset(c);
        const uint8_t *body;
        size_t len;
        int kind;
        crec_fmt_snapshot s;
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) != CREC_OK)
            break;
        if (kind != CREC_FMT_K_SNAPSHOT) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the SNAPSHOTS stream", kind);
            break;
        }
        if ((rc = crec_fmt_snap_decode(body, len, &s, err)) != CREC_OK)
            break;
        if (s.global_icount > t->g0) {
            /* kept: where each later segment's snapshots begin, relative to
             * the end of the base record (added when it is known) */
            while (seg < g->nsegs && g->segs[seg].snap_off <= at)
                t->snap_off[seg++ - t->s0] = later.len;
            rc = crec_fmt_snap_encode(&later, &s);
        } else {
            for (size_t i = 0; i < s.npages && rc == CREC_OK; i++) {
                struct base_page *p = crec_grow(t->base, &t->capbase, t->nbase + 1,
                                                sizeof *p, 1024);
                if (!p)
                    rc = CREC_ERR_NOMEM;
                else {
                    t->base = p;
                    t->base[t->nbase++] = (struct base_page){s.pages[i].addr, order++,
                                                             s.pages[i].blob};
                }
            }
        }
        crec_fmt_snapshot_clear(&s);
        if (rc != CREC_OK)
            break;
    }
    crec_fmt_cursor_free(c);
    while (seg < g->nsegs)
        t->snap_off[seg++ - t->s0] = later.len;
    if (rc == CREC_ERR_NOTFOUND)
        rc = CREC_OK;
    if (rc == CREC_OK) { /* the newest version of each page that is still mapped */
        crec_fmt_snapshot base = {t->g0, 0, NULL};
        crec_sort(t->base, t->nbase, sizeof *t->base, cmp_base);
        for (size_t i = 0; i < t->nbase; i++)
            if ((i + 1 == t->nbase || t->base[i + 1].addr != t->base[i].addr) &&
                listed(t, t->base[i].addr))
                t->base[n++] = t->base[i];
        t->nbase = n;
        base.npages = n;
        base.pages = crec_malloc((n ? n : 1) * sizeof *base.pages);
        if (!base.pages)
            rc = CREC_ERR_NOMEM;
        for (size_t i = 0; i < n && base.pages; i++)
            base.pages[i] = (crec_fmt_snap_page){t->base[i].addr, t->base[i].blob};
        if (rc == CREC_OK)
            rc = crec_fmt_snap_encode(&t->snaps, &base);
        crec_free(base.pages);
        for (size_t k = 1; rc == CREC_OK && k < g->nsegs - t->s0; k++)
            t->snap_off[k] += t->snaps.len;
        if (rc == CREC_OK)
            crec_fmt_buf_bytes(&t->snaps, later.data, later.len);
        if (rc == CREC_OK && t->snaps.nomem)
            rc = CREC_ERR_NOMEM;
    }
    crec_fmt_buf_free(&later);
    return rc == CREC_ERR_NOMEM ? rot_nomem(t, err) : rc;
}

/* Is the chunk of the old BLOBS stream holding offset `off` kept? */
static int blob_kept(const struct rot *t, uint64_t off)
{
    const crec_fmt_writer *w = t->w;

    for (size_t i = 0; i < w->ndir; i++) {
        const fmt_chunk *c = &w->dir[i];
        if (c->type == CREC_FMT_S_BLOBS && off >= c->uoff && off < c->uoff + c->ulen)
            return w->dir_seg[i] == FMT_SEG_PINNED || w->dir_seg[i] >= t->cut;
    }
    return 0;
}

/* The base snapshot's blobs that only dropped chunks hold are copied. */
static int rot_blobs(struct rot *t, crec_error *err)
{
    const crec_fmt_blob_loc *locs;
    struct fmt_hashset done = {0};
    size_t nlocs;
    int rc = CREC_OK;

    if (t->nbase == 0)
        return CREC_OK;
    if ((rc = crec_fmt_blob_table(t->r, &locs, &nlocs, err)) != CREC_OK)
        return rc;
    for (size_t i = 0; i < t->nbase && rc == CREC_OK; i++) {
        const crec_fmt_hash *h = &t->base[i].blob;
        const crec_fmt_blob_loc *e = bsearch(h, locs, nlocs, sizeof *locs, cmp_loc);
        const uint8_t *data;
        size_t len;
        int kept = 0;
        if (!e) {
            rc = crec_error_corrupt(err, "the ring's snapshot names a blob it does not hold");
            break;
        }
        while (e > locs && memcmp(&e[-1].hash, h, sizeof *h) == 0)
            e--;
        for (; e < locs + nlocs && memcmp(&e->hash, h, sizeof *h) == 0 && !kept; e++)
            kept = blob_kept(t, e->off);
        if (kept || fmt_hset_has(&done, h))
            continue;
        if ((rc = crec_fmt_blob_view(t->r, h, &data, &len, err)) != CREC_OK)
            break;
        fmt_buf_u8(&t->blobs, CREC_FMT_K_BLOB);
        fmt_buf_varint(&t->blobs, 16 + len);
        fmt_buf_hash(&t->blobs, h);
        fmt_buf_bytes(&t->blobs, data, len);
        if (t->blobs.nomem || fmt_hset_add(&done, h) != 0)
            rc = rot_nomem(t, err);
    }
    crec_free(done.v);
    return rc;
}

/* The marks, with the RING mark brought up to date. */
static int rot_marks(struct rot *t, uint64_t dropped_bytes, crec_error *err)
{
    struct fmt_ring *g = t->w->ring;
    crec_fmt_marks m;
    int rc = crec_fmt_marks_read(t->r, &m, err);

    if (rc != CREC_OK)
        return rc;
    g->mark.u.ring.kept_from = t->g0;
    g->mark.u.ring.dropped_segments += t->s0;
    g->mark.u.ring.dropped_bytes += dropped_bytes;
    g->mark.u.ring.rotations++;
    rc = crec_fmt_mark_encode(&t->marks, &g->mark);
    for (size_t i = 0; i < m.ngaps && rc == CREC_OK; i++)
        if (m.gaps[i].u.gap.to > t->g0)
            rc = crec_fmt_mark_encode(&t->marks, &m.gaps[i]);
    if (rc == CREC_OK && m.stop.kind)
        rc = crec_fmt_mark_encode(&t->marks, &m.stop);
    crec_fmt_marks_clear(&m);
    return rc == CREC_OK ? CREC_OK : rot_nomem(t, err);
}

/* Bytes of one stream as new chunks of the file being written. */
static int emit(crec_fmt_writer *w, int type, const crec_fmt_buf *b, uint32_t seg,
                uint32_t *seq, uint64_t *uoff, crec_error *err)
{
    for (size_t at = 0; at < b->len;) {
        size_t n = b->len - at < w->chunk_size ? b->len - at : w->chunk_size;
        fmt_chunk c = {.type = (uint8_t)type, .seq = *seq, .uoff = *uoff, .ulen = (uint32_t)n};
        int rc = fmt_write_chunk(w, &c, b->data + at, err);
        if (rc == CREC_OK)
            rc = fmt_dir_add(w, &c, seg, err);
        if (rc != CREC_OK)
            return rc;
        (*seq)++;
        *uoff += n;
        at += n;
    }
    return CREC_OK;
}

/* A chunk of the old file, renumbered, into the new one. */
static int copy_chunk(crec_fmt_writer *w, const uint8_t *map, const fmt_chunk *old, uint32_t seg,
                      uint32_t *seq, uint64_t *uoff, crec_error *err)
{
    fmt_chunk c = *old;
    uint8_t hdr[FMT_CHUNK_HDR];
    const uint8_t *payload = map + old->file_off + FMT_CHUNK_HDR;
    int rc;

    c.seq = (*seq)++;
    c.uoff = *uoff;
    *uoff += c.ulen;
    c.file_off = w->off;
    fmt_chunk_pack(hdr, &c);
    c.sum = fmt_chunk_sum(hdr, payload, c.clen);
    fmt_put_u64(hdr + 32, c.sum);
    if ((rc = fmt_write_all(w, hdr, sizeof hdr, err)) != CREC_OK ||
        (rc = fmt_write_all(w, payload, c.clen, err)) != CREC_OK)
        return rc;
    return fmt_dir_add(w, &c, seg, err);
}

/* Write the new file at w->fd (empty): header, kept chunks, the rest. */
static int rot_write(struct rot *t, uint32_t *seq, uint64_t *uoff, crec_error *err,
                     const fmt_chunk *odir, const uint32_t *oseg, size_t ondir)
{
    crec_fmt_writer *w = t->w;
    size_t si;
    int rc = fmt_write_all(w, t->map, w->header_end, err);

    for (size_t i = 0; i < ondir && rc == CREC_OK; i++) {
        const fmt_chunk *c = &odir[i];
        if (reencoded(c->type) || (oseg[i] != FMT_SEG_PINNED && oseg[i] < t->cut))
            continue;
        si = stream_index(w, c->type, c->tid);
        if (si == SIZE_MAX)
            return crec_error_corrupt(err, "%s: a chunk of a stream the writer does not know",
                                      w->name);
        rc = copy_chunk(w, t->map, c, oseg[i], &seq[si], &uoff[si], err);
    }
    if (rc == CREC_OK && t->blobs.len) {
        si = stream_index(w, CREC_FMT_S_BLOBS, 0);
        rc = emit(w, CREC_FMT_S_BLOBS, &t->blobs, t->cut, &seq[si], &uoff[si], err);
    }
    const int types[3] = {CREC_FMT_S_KEYFRAMES, CREC_FMT_S_SNAPSHOTS, CREC_FMT_S_MARKS};
    const crec_fmt_buf *bufs[3] = {&t->kfs, &t->snaps, &t->marks};
    for (int k = 0; k < 3 && rc == CREC_OK; k++) {
        si = stream_index(w, types[k], 0);
        if (si == SIZE_MAX && bufs[k]->len)
            return crec_error_corrupt(err, "%s: no %s stream to rotate", w->name,
                                      crec_fmt_stream_name(types[k]));
        if (si != SIZE_MAX)
            rc = emit(w, types[k], bufs[k], types[k] == CREC_FMT_S_MARKS ? FMT_SEG_PINNED : t->cut,
                      &seq[si], &uoff[si], err);
    }
    return rc;
}

/* The first segment to keep: the newest ones that fit in three quarters of
 * the bound beside what every file holds (at least the newest one). */
static size_t choose_first(const crec_fmt_writer *w, uint64_t *dropped)
{
    struct fmt_ring *g = w->ring;
    uint64_t fixed = w->header_end + g->base_bytes, kept, budget;
    uint64_t *bytes = crec_calloc(g->nsegs, sizeof *bytes);
    size_t s0 = g->nsegs - 1;

    *dropped = 0;
    if (!bytes)
        return g->nsegs > 1 ? g->nsegs - 1 : 0;
    for (size_t i = 0; i < w->ndir; i++) {
        uint64_t n = FMT_CHUNK_HDR + (uint64_t)w->dir[i].clen;
        uint32_t s = w->dir_seg[i];
        if (s == FMT_SEG_PINNED)
            fixed += n;
        else if (!reencoded(w->dir[i].type) && s >= g->segs[0].id &&
                 s - g->segs[0].id < g->nsegs)
            bytes[s - g->segs[0].id] += n;
        else if (reencoded(w->dir[i].type))
            fixed += n / 2; /* about what stays of them */
    }
    budget = g->size / 4 * 3;
    budget = budget > fixed ? budget - fixed : 0;
    kept = bytes[s0];
    while (s0 > 1 && kept + bytes[s0 - 1] <= budget)
        kept += bytes[--s0];
    for (size_t i = 0; i < s0; i++)
        *dropped += bytes[i];
    crec_free(bytes);
    return s0;
}

static int rotate(crec_fmt_writer *w, crec_error *err)
{
    struct fmt_ring *g = w->ring;
    struct rot t = {.w = w};
    double t0 = now_seconds();
    char *tmp = NULL;
    void *map = MAP_FAILED;
    uint32_t *seq = NULL;
    uint64_t *uoff = NULL, dropped = 0, old_size = w->off;
    fmt_chunk *odir = w->dir;
    uint32_t *oseg = w->dir_seg;
    size_t ondir = w->ndir, odcap = w->dcap, odscap = w->dseg_cap;
    int ofd = w->fd, nfd = -1, rc;

    t.s0 = choose_first(w, &dropped);
    if (t.s0 == 0)
        return CREC_OK; /* one segment: nothing to drop */
    t.cut = g->segs[t.s0].id;
    t.g0 = g->segs[t.s0].icount;
    map = mmap(NULL, (size_t)w->off, PROT_READ, MAP_SHARED, w->fd, 0);
    if (map == MAP_FAILED)
        return crec_error_set(err, CREC_ERR_IO, "%s: can't read the ring back: %s", w->name,
                              strerror(errno));
    t.map = map;
    t.shift = crec_calloc(w->nstreams, sizeof *t.shift);
    t.kf_off = crec_calloc(g->nsegs - t.s0, sizeof *t.kf_off);
    t.snap_off = crec_calloc(g->nsegs - t.s0, sizeof *t.snap_off);
    seq = crec_calloc(w->nstreams, sizeof *seq);
    uoff = crec_calloc(w->nstreams, sizeof *uoff);
    tmp = crec_malloc(strlen(g->path) + 32);
    rc = t.shift && t.kf_off && t.snap_off && seq && uoff && tmp ? CREC_OK : rot_nomem(&t, err);
    if (rc == CREC_OK)
        rc = crec_fmt_reader_open_mem(map, (size_t)w->off, &t.r, err);
    if (rc == CREC_OK) { /* each stream loses the bytes of the chunks dropped */
        for (size_t i = 0; i < w->nstreams; i++)
            t.shift[i] = w->streams[i].flushed;
        for (size_t i = 0; i < w->ndir; i++) {
            size_t si = stream_index(w, w->dir[i].type, w->dir[i].tid);
            if (si != SIZE_MAX && (w->dir_seg[i] == FMT_SEG_PINNED || w->dir_seg[i] >= t.cut) &&
                w->dir[i].uoff < t.shift[si])
                t.shift[si] = w->dir[i].uoff;
        }
    }
    if (rc == CREC_OK && (rc = rot_keyframes(&t, err)) == CREC_OK && t.kfs.len &&
        (rc = rot_listing(&t, err)) == CREC_OK && (rc = rot_snapshots(&t, err)) == CREC_OK &&
        (rc = rot_blobs(&t, err)) == CREC_OK)
        rc = rot_marks(&t, dropped, err);
    if (rc == CREC_OK && !t.kfs.len)
        rc = crec_error_corrupt(err, "%s: the segments a rotation keeps have no key frame",
                                w->name);
    if (rc == CREC_OK) {
        sprintf(tmp, "%s.ring-%ld", g->path, (long)getpid());
        unlink(tmp); /* a stale one of an earlier crec with our pid */
        nfd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (nfd < 0)
            rc = crec_error_set(err, CREC_ERR_IO, "%s: can't rotate the ring: %s", tmp,
                                strerror(errno));
    }
    if (rc == CREC_OK) { /* write it with the writer's own functions */
        w->fd = nfd, w->off = 0;
        w->dir = NULL, w->dir_seg = NULL, w->ndir = 0, w->dcap = 0, w->dseg_cap = 0;
        rc = rot_write(&t, seq, uoff, err, odir, oseg, ondir);
        if (rc == CREC_OK && rename(tmp, g->path) != 0)
            rc = crec_error_set(err, CREC_ERR_IO, "%s: can't rotate the ring: %s", g->path,
                                strerror(errno));
        if (rc != CREC_OK) { /* the old file stays, as it was */
            unlink(tmp);
            close(nfd);
            crec_free(w->dir);
            crec_free(w->dir_seg);
            w->fd = ofd, w->off = old_size, w->failed = 0;
            w->dir = odir, w->dir_seg = oseg, w->ndir = ondir, w->dcap = odcap;
            w->dseg_cap = odscap;
        }
    }
    if (rc == CREC_OK) {
        if (w->own_fd)
            close(ofd);
        w->own_fd = 1;
        crec_free(odir);
        crec_free(oseg);
        for (size_t i = 0; i < w->nstreams; i++)
            w->streams[i].seq = seq[i], w->streams[i].flushed = uoff[i];
        for (size_t k = t.s0; k < g->nsegs; k++) {
            g->segs[k - t.s0] = g->segs[k];
            g->segs[k - t.s0].kf_off = t.kf_off[k - t.s0];
            g->segs[k - t.s0].snap_off = t.snap_off[k - t.s0];
        }
        g->nsegs -= t.s0;
        g->base_bytes = t.snaps.len / 4 + t.blobs.len / 2; /* about, compressed */
        g->st.rotations++;
        g->st.dropped_segments += t.s0;
        g->st.dropped_bytes += dropped;
        g->st.copied_bytes += w->off;
        g->st.kept_from = t.g0;
        g->st.fixed_bytes = w->header_end + g->base_bytes;
        for (size_t i = 0; i < w->ndir; i++)
            if (w->dir_seg[i] == FMT_SEG_PINNED)
                g->st.fixed_bytes += FMT_CHUNK_HDR + (uint64_t)w->dir[i].clen;
        g->st.seconds += now_seconds() - t0;
    }
    crec_fmt_reader_free(t.r);
    munmap(map, (size_t)old_size);
    crec_free(t.shift);
    crec_free(t.kf_off);
    crec_free(t.snap_off);
    crec_free(t.base);
    crec_fmt_buf_free(&t.kfs);
    crec_fmt_buf_free(&t.snaps);
    crec_fmt_buf_free(&t.blobs);
    crec_fmt_buf_free(&t.marks);
    crec_free(seq);
    crec_free(uoff);
    crec_free(tmp);
    return rc;
}

int crec_fmt_ring_boundary(crec_fmt_writer *w, uint64_t icount, crec_error *err)
{
    int rc;

    if (!w->ring)
        return CREC_OK;
    if (w->failed)
        return fmt_w_dead(w, err);
    if ((rc = crec_fmt_flush_all(w, err)) != CREC_OK)
        return rc;
    if (w->ring->nsegs > 1 && w->off + w->ring->segment > w->ring->size &&
        (rc = rotate(w, err)) != CREC_OK) {
        w->failed = 1;
        return rc;
    }
    return push_segment(w, icount, err);
}
