/*
 * writer.c - writing a .crec file front to back, never seeking, so that the
 * output may be a pipe (docs/FORMAT.md §2-§5).
 *
 *   preamble  "\x89CREC\r\n\x1a" | u32 LE version | u32 reserved (0)
 *   HEADER chunk
 *   data chunks, in the order streams fill up (streams interleave freely)
 *   DIRECTORY chunk: varint n, then n entries
 *       varint file offset, u8 type, (version 3) varint process, varint tid,
 *       varint seq, varint stream offset, varint clen, varint ulen, u64 LE checksum
 *   trailer (32 bytes): u64 LE directory offset, u64 LE directory length,
 *       u64 LE XXH3-64 of the previous 16 bytes, "CRECEND\0"
 *
 * Each stream has a buffer that grows up to chunk_size bytes; a chunk is
 * written when it is full, so memory is bounded by streams x chunk_size.  The directory is kept
 * in memory (about 48 bytes per chunk) and written by crec_fmt_writer_close.
 *
 * A shared writer (crec_fmt_writer_opts.shared) is used by every process of
 * a recorded tree: fork copies it, and each process writes the chunks of
 * its own streams to the one file.  What they share lives in shared memory
 * made before the first fork: a robust mutex held while one chunk is
 * written, the file offset, the directory, the numbering of the shared
 * streams' chunks (BLOBS, SYMBOLS: each process appends whole records) and
 * of processes.  A pipe that every process holds open tells the first
 * process, which writes the directory, when the others are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#include <xxhash.h>
#include <zstd.h>

#include "format/format_int.h"

/* A shared writer's directory: at most this many chunks (48 bytes each,
 * address space only until used).  Past it no directory is written: a
 * reader scans the file. */
#define FMT_SHARED_DIR_MAX ((256u << 20) / sizeof(fmt_chunk))

/* What the processes of a shared writer share (in shared memory). */
struct fmt_shared {
    pthread_mutex_t mu;   /* held while a chunk is written (robust) */
    uint64_t off;         /* bytes written to the file so far */
    int broken;           /* a process died holding mu: the file may hold a part
                             of a chunk, and no directory is written */
    uint32_t next_proc;   /* the next process number */
    uint32_t seq[CREC_FMT_S_MAX + 1];  /* shared streams: the next chunk number */
    uint64_t uoff[CREC_FMT_S_MAX + 1]; /* ... and its stream offset */
    uint64_t ndir;        /* entries of the directory (fmt_chunk[] after this page) */
};

int fmt_w_nomem(crec_fmt_writer *w, crec_error *err)
{
    w->failed = 1;
    return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory", w->name);
}

int fmt_w_dead(crec_fmt_writer *w, crec_error *err)
{
    return crec_error_set(err, CREC_ERR_IO, "%s: an earlier write failed", w->name);
}

/* ---- the lock of a shared writer -------------------------------------------- */

static void w_lock(crec_fmt_writer *w)
{
    int r;

    if (!w->sh)
        return;
    r = pthread_mutex_lock(&w->sh->mu);
    if (r == EOWNERDEAD) { /* it died writing: the file holds a part of a chunk */
        w->sh->broken = 1;
        pthread_mutex_consistent(&w->sh->mu);
        /* a file's offset is shared with the dead process: where it stopped */
        off_t at = lseek(w->fd, 0, SEEK_CUR);
        if (at >= 0)
            w->sh->off = (uint64_t)at;
    }
}

static void w_unlock(crec_fmt_writer *w)
{
    if (w->sh)
        pthread_mutex_unlock(&w->sh->mu);
}

/* Bytes written to the file so far (a shared writer's, under the lock). */
static uint64_t *w_off(crec_fmt_writer *w)
{
    return w->sh ? &w->sh->off : &w->off;
}

int fmt_write_all(crec_fmt_writer *w, const void *p, size_t n, crec_error *err)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(w->fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->failed = 1;
            return crec_error_set(err, CREC_ERR_IO, "%s: write failed: %s", w->name,
                                  k < 0 ? strerror(errno) : "short write");
        }
        b += k;
        n -= (size_t)k;
        *w_off(w) += (uint64_t)k;
    }
    return CREC_OK;
}

static int zbuf_reserve(crec_fmt_writer *w, size_t ulen, crec_error *err)
{
    size_t need = ZSTD_compressBound(ulen);
    if (need <= w->zcap)
        return CREC_OK;
    uint8_t *p = crec_realloc(w->zbuf, need);
    if (!p)
        return fmt_w_nomem(w, err);
    w->zbuf = p;
    w->zcap = need;
    return CREC_OK;
}

/* Compress `ulen` bytes into w->zbuf.  @return CREC_OK and *z, or an error. */
static int compress_chunk(crec_fmt_writer *w, const uint8_t *data, size_t ulen, size_t *z,
                          crec_error *err)
{
    int rc = zbuf_reserve(w, ulen, err);
    if (rc)
        return rc;
    *z = ZSTD_compressCCtx(w->cctx, w->zbuf, w->zcap, data, ulen, w->level);
    if (ZSTD_isError(*z)) {
        /* Only an allocation inside zstd can fail here: the bound is exact. */
        w->failed = 1;
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: compression failed: %s", w->name,
                              ZSTD_getErrorName(*z));
    }
    return CREC_OK;
}

/* Write frame header and the compressed payload (w->zbuf, z bytes) of
 * chunk c at the file's end (a shared writer: under the lock). */
static int put_chunk(crec_fmt_writer *w, fmt_chunk *c, size_t z, crec_error *err)
{
    uint8_t hdr[FMT_CHUNK_HDR];
    int rc;

    c->file_off = *w_off(w);
    c->clen = (uint32_t)z;
    fmt_chunk_pack(hdr, c);
    c->sum = fmt_chunk_sum(hdr, w->zbuf, z);
    fmt_put_u64(hdr + 32, c->sum);
    if ((rc = fmt_write_all(w, hdr, sizeof hdr, err)) != 0)
        return rc;
    return fmt_write_all(w, w->zbuf, z, err);
}

/* Compress one chunk and write frame header and payload. */
int fmt_write_chunk(crec_fmt_writer *w, fmt_chunk *c, const uint8_t *data, crec_error *err)
{
    size_t z;
    int rc = compress_chunk(w, data, c->ulen, &z, err);

    return rc ? rc : put_chunk(w, c, z, err);
}

/* A chunk of segment `seg` (FMT_SEG_PINNED: never dropped) in the directory. */
int fmt_dir_add(crec_fmt_writer *w, const fmt_chunk *c, uint32_t seg, crec_error *err)
{
    fmt_chunk *d;
    uint32_t *g;

    if (w->sh) { /* past the limit the file is read by a scan */
        if (w->sh->ndir < FMT_SHARED_DIR_MAX)
            w->sdir[w->sh->ndir++] = *c;
        else
            w->sh->broken = 1;
        return CREC_OK;
    }
    d = crec_grow(w->dir, &w->dcap, w->ndir + 1, sizeof *d, 64);
    if (!d)
        return fmt_w_nomem(w, err);
    w->dir = d;
    if (w->ring) { /* the segment of each chunk, beside it */
        if (!(g = crec_grow(w->dir_seg, &w->dseg_cap, w->ndir + 1, sizeof *g, 64)))
            return fmt_w_nomem(w, err);
        w->dir_seg = g;
        w->dir_seg[w->ndir] = seg;
    }
    w->dir[w->ndir++] = *c;
    return CREC_OK;
}

/* The segment a chunk of stream s flushed now belongs to. */
static uint32_t chunk_segment(const crec_fmt_writer *w, const struct wstream *s)
{
    if (!w->ring)
        return 0;
    return w->pinning || s->pinned ? FMT_SEG_PINNED : fmt_ring_current(w);
}

/* Is stream type `type` one that the processes of a shared writer share? */
static int shared_type(const crec_fmt_writer *w, int type)
{
    return w->sh && !crec_fmt_stream_per_process(type);
}

/* Write chunk c of stream s from `data` (its number and stream offset are
 * the shared ones for a shared stream: taken once it is written whole, so
 * that a process that dies writing it leaves no gap in the numbering), and
 * list it.  A shared writer's lock is held (`locked`), or taken here. */
static int emit_chunk(crec_fmt_writer *w, struct wstream *s, fmt_chunk *c, const uint8_t *data,
                      int locked, crec_error *err)
{
    size_t z;
    int rc = compress_chunk(w, data, c->ulen, &z, err);

    if (rc)
        return rc;
    if (!locked)
        w_lock(w);
    if (shared_type(w, s->type)) {
        c->seq = w->sh->seq[s->type];
        c->uoff = w->sh->uoff[s->type];
    }
    rc = put_chunk(w, c, z, err);
    if (rc == CREC_OK && shared_type(w, s->type)) {
        w->sh->seq[s->type]++;
        w->sh->uoff[s->type] += c->ulen;
    }
    if (rc == CREC_OK)
        rc = fmt_dir_add(w, c, chunk_segment(w, s), err);
    if (!locked)
        w_unlock(w);
    return rc;
}

static struct wstream *find_stream(crec_fmt_writer *w, int type, uint32_t tid);

/* Does a record of stream type `type` name blobs (by their hash)? */
static int names_blobs(int type)
{
    return type == CREC_FMT_S_EVENTS || type == CREC_FMT_S_SNAPSHOTS ||
           type == CREC_FMT_S_CODE || type == CREC_FMT_S_SYMBOLS;
}

static int flush_stream(crec_fmt_writer *w, struct wstream *s, crec_error *err)
{
    if (s->len == 0)
        return CREC_OK;
    /* The blobs this chunk's records name reach the file first (the BLOBS
     * bytes held now: a record names only blobs stored before it), so that
     * a file cut at any byte that holds a record holds its blobs too
     * (docs/FORMAT.md §7.2). */
    if (names_blobs(s->type)) {
        struct wstream *b = find_stream(w, CREC_FMT_S_BLOBS, 0);
        int rc = b ? flush_stream(w, b, err) : CREC_OK;
        if (rc)
            return rc;
    }
    /* Reserve the directory slot first: a failure after the chunk is on
     * disk would leave the directory short of a chunk. */
    if (!w->sh && w->ndir == w->dcap) {
        int rc = fmt_dir_add(w, &(fmt_chunk){0}, 0, err);
        if (rc)
            return rc;
        w->ndir--;
    }
    /* A shared stream holds whole records only (another process's chunks
     * may follow), so its buffer may pass chunk_size: cut it here, its
     * chunks one after another under one hold of the lock, so that no
     * other process's come between them. */
    int whole = shared_type(w, s->type), rc = CREC_OK;
    if (whole)
        w_lock(w);
    for (size_t at = 0; at < s->len && rc == CREC_OK;) {
        size_t n = s->len - at < w->chunk_size ? s->len - at : w->chunk_size;
        fmt_chunk c = {.type = s->type, .proc = s->proc, .tid = s->tid, .seq = s->seq,
                       .uoff = s->flushed, .ulen = (uint32_t)n};
        rc = emit_chunk(w, s, &c, s->buf + at, whole, err);
        s->flushed += n;
        s->seq++;
        at += n;
    }
    if (whole)
        w_unlock(w);
    s->len = 0;
    return rc;
}

/* ---- streams ------------------------------------------------------------- */

/* The process a stream of type `type` belongs to now. */
static uint32_t stream_proc(const crec_fmt_writer *w, int type)
{
    return crec_fmt_stream_per_process(type) ? w->proc : 0;
}

static struct wstream *find_stream(crec_fmt_writer *w, int type, uint32_t tid)
{
    /* The recorder writes runs to one thread's streams: remember the last
     * stream of each type, and only search on a thread switch. */
    size_t *last = &w->last[type >= 0 && type <= CREC_FMT_S_MAX ? type : 0];
    uint32_t proc = stream_proc(w, type);
    if (*last < w->nstreams && w->streams[*last].type == type && w->streams[*last].tid == tid &&
        w->streams[*last].proc == proc)
        return &w->streams[*last];
    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].type == type && w->streams[i].tid == tid &&
            w->streams[i].proc == proc) {
            *last = i;
            return &w->streams[i];
        }
    return NULL;
}

static int add_stream(crec_fmt_writer *w, int type, uint32_t tid, struct wstream **out,
                      crec_error *err)
{
    struct wstream *s;

    if (w->nstreams >= CREC_FMT_MAX_STREAMS)
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: more than %d streams", w->name,
                              CREC_FMT_MAX_STREAMS);
    s = crec_grow(w->streams, &w->scap, w->nstreams + 1, sizeof *s, 16);
    if (!s)
        return fmt_w_nomem(w, err);
    w->streams = s;
    w->last[type] = w->nstreams;
    *out = &w->streams[w->nstreams++];
    **out = (struct wstream){.type = (uint8_t)type, .proc = stream_proc(w, type), .tid = tid};
    /* a ring never drops the code's list, its symbols, or its marks */
    (*out)->pinned = type == CREC_FMT_S_CODE || type == CREC_FMT_S_SYMBOLS ||
                     type == CREC_FMT_S_MARKS;
    return CREC_OK;
}

/* Room for n more bytes, up to chunk_size: small streams (one per thread
 * and type) stay small. */
static int stream_reserve(crec_fmt_writer *w, struct wstream *s, size_t n, crec_error *err)
{
    /* a shared stream's buffer takes whole records, whatever their size */
    size_t max = shared_type(w, s->type) ? SIZE_MAX : w->chunk_size;
    if (s->cap - s->len >= n || s->cap == max)
        return CREC_OK;
    size_t cap = s->cap ? s->cap : 256;
    while (cap - s->len < n && cap < max)
        cap *= 2;
    if (cap > max)
        cap = max;
    uint8_t *p = crec_realloc(s->buf, cap);
    if (!p)
        return fmt_w_nomem(w, err);
    s->buf = p;
    s->cap = cap;
    return CREC_OK;
}

static int check_stream(const crec_fmt_writer *w, int type, uint32_t tid, crec_error *err)
{
    if (type <= CREC_FMT_S_HEADER || type > CREC_FMT_S_MAX || type == CREC_FMT_S_DIRECTORY)
        return crec_error_set(err, CREC_ERR_ARG, "%s: bad stream type %d", w->name, type);
    if (tid != 0 && !crec_fmt_stream_per_thread(type))
        return crec_error_set(err, CREC_ERR_ARG, "%s: global stream %s with thread %u",
                              w->name, crec_fmt_stream_name(type), tid);
    return CREC_OK;
}

int crec_fmt_write(crec_fmt_writer *w, int type, uint32_t tid, const void *data, size_t len,
                   crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    struct wstream *s = find_stream(w, type, tid);
    int rc;
    if (!s && ((rc = check_stream(w, type, tid, err)) || (rc = add_stream(w, type, tid, &s, err))))
        return rc;
    const uint8_t *p = data;
    while (len) {
        if ((rc = stream_reserve(w, s, len, err)) != 0)
            return rc;
        size_t n = s->cap - s->len;
        if (n > len)
            n = len;
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        p += n;
        len -= n;
        if (s->len == w->chunk_size && !shared_type(w, type) &&
            (rc = flush_stream(w, s, err)) != 0)
            return rc;
    }
    /* a shared stream is given whole records: it may be cut after them */
    if (shared_type(w, type) && s->len >= w->chunk_size)
        return flush_stream(w, s, err);
    return CREC_OK;
}

int crec_fmt_write_buf(crec_fmt_writer *w, int type, uint32_t tid, const crec_fmt_buf *b,
                       crec_error *err)
{
    if (b->nomem)
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory encoding a record",
                              w->name);
    return crec_fmt_write(w, type, tid, b->data, b->len, err);
}

uint64_t crec_fmt_writer_offset(const crec_fmt_writer *w, int type, uint32_t tid)
{
    uint32_t proc = stream_proc(w, type);

    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].type == type && w->streams[i].tid == tid &&
            w->streams[i].proc == proc)
            return w->streams[i].flushed + w->streams[i].len;
    return 0;
}

int crec_fmt_flush(crec_fmt_writer *w, int type, uint32_t tid, crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    struct wstream *s = find_stream(w, type, tid);
    return s ? flush_stream(w, s, err) : CREC_OK;
}

int crec_fmt_flush_all(crec_fmt_writer *w, crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    for (size_t i = 0; i < w->nstreams; i++) {
        int rc = flush_stream(w, &w->streams[i], err);
        if (rc)
            return rc;
    }
    return CREC_OK;
}

/* ---- blobs ------------------------------------------------------------------ */

/* The slot of h in set s: h itself, or the empty slot where it goes. */
static size_t hset_slot(const struct fmt_hashset *s, const crec_fmt_hash *h)
{
    size_t i = (size_t)fmt_get_u64(h->b) & (s->cap - 1);
    while (1) {
        const crec_fmt_hash *e = &s->v[i];
        static const crec_fmt_hash zero;
        if (memcmp(e, h, sizeof *h) == 0 || memcmp(e, &zero, sizeof zero) == 0)
            return i;
        i = (i + 1) & (s->cap - 1);
    }
}

int fmt_hset_has(const struct fmt_hashset *s, const crec_fmt_hash *h)
{
    return s->cap && memcmp(&s->v[hset_slot(s, h)], h, sizeof *h) == 0;
}

/*
 * An all-zero hash marks an empty slot.  XXH3-128 yields it with odds of
 * 2^-128; such a blob would merely be stored twice, never lost.
 * @return 0, or -1 out of memory.
 */
int fmt_hset_add(struct fmt_hashset *s, const crec_fmt_hash *h)
{
    if ((s->count + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        crec_fmt_hash *t = crec_calloc(cap, sizeof *t);
        struct fmt_hashset n = {t, cap, 0};
        if (!t)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            static const crec_fmt_hash zero;
            if (memcmp(&s->v[i], &zero, sizeof zero) != 0)
                t[hset_slot(&n, &s->v[i])] = s->v[i];
        }
        n.count = s->count;
        crec_free(s->v);
        *s = n;
    }
    size_t slot = hset_slot(s, h);
    if (memcmp(&s->v[slot], h, sizeof *h) != 0) {
        s->v[slot] = *h;
        s->count++;
    }
    return 0;
}

void fmt_hset_clear(struct fmt_hashset *s)
{
    if (s->v)
        memset(s->v, 0, s->cap * sizeof *s->v);
    s->count = 0;
}

/*
 * Write one record of the BLOBS stream: `kind`, the hash, then `tail`.  In
 * a tree of processes sharing the stream it is one write, cut only after.
 */
static int blobs_record(crec_fmt_writer *w, int kind, const crec_fmt_hash *h, const void *tail,
                        size_t len, int pinned, crec_error *err)
{
    uint8_t head[1 + FMT_MAX_VARINT + 16];
    crec_fmt_buf b = {head, 0, sizeof head, 0};
    int rc;

    fmt_buf_u8(&b, (uint8_t)kind);
    fmt_buf_varint(&b, 16 + len);
    fmt_buf_hash(&b, h);
    if (w->sh) { /* one record: the stream is cut only after it */
        struct wstream *s = find_stream(w, CREC_FMT_S_BLOBS, 0);
        if ((!s && (rc = add_stream(w, CREC_FMT_S_BLOBS, 0, &s, err)) != 0) ||
            (rc = stream_reserve(w, s, b.len + len, err)) != 0)
            return rc;
        memcpy(s->buf + s->len, head, b.len);
        memcpy(s->buf + s->len + b.len, tail, len);
        s->len += b.len + len;
        if (s->len >= w->chunk_size && (rc = flush_stream(w, s, err)) != 0)
            return rc;
        return CREC_OK;
    }
    /* a pinned blob has chunks of its own in a ring: flushed before and after */
    if (pinned && w->ring && (rc = crec_fmt_flush(w, CREC_FMT_S_BLOBS, 0, err)) != 0)
        return rc;
    w->pinning = pinned && w->ring;
    rc = crec_fmt_write(w, CREC_FMT_S_BLOBS, 0, head, b.len, err);
    if (rc == CREC_OK)
        rc = crec_fmt_write(w, CREC_FMT_S_BLOBS, 0, tail, len, err);
    if (rc == CREC_OK && w->pinning)
        rc = crec_fmt_flush(w, CREC_FMT_S_BLOBS, 0, err);
    w->pinning = 0;
    return rc;
}

/*
 * Store a blob unless it is stored already.  A ring keeps two sets: blobs
 * that are never dropped (pinned: code), and those of the current segment,
 * which forgets the others so that a segment holds every data blob it
 * names (its older copy may be dropped with its segment).
 */
static int blob_put(crec_fmt_writer *w, const void *data, size_t len, crec_fmt_hash *hash,
                    int pinned, crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    if (len > CREC_FMT_MAX_RECORD - 16)
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: blob of %zu bytes is too large",
                              w->name, len);
    crec_fmt_hash h = crec_fmt_hash_bytes(data, len);
    struct fmt_hashset *set = w->ring && !pinned ? &w->seg_blobs : &w->blobs;
    int rc;
    if (hash)
        *hash = h;
    if (fmt_hset_has(&w->blobs, &h) || fmt_hset_has(set, &h))
        return CREC_OK;
    if ((rc = blobs_record(w, CREC_FMT_K_BLOB, &h, data, len, pinned, err)) != CREC_OK)
        return rc;
    if (fmt_hset_add(set, &h) != 0)
        return fmt_w_nomem(w, err);
    return CREC_OK;
}

int crec_fmt_blob_put(crec_fmt_writer *w, const void *data, size_t len, crec_fmt_hash *hash,
                      crec_error *err)
{
    return blob_put(w, data, len, hash, 0, err);
}

int crec_fmt_blob_put_pinned(crec_fmt_writer *w, const void *data, size_t len,
                             crec_fmt_hash *hash, crec_error *err)
{
    return blob_put(w, data, len, hash, 1, err);
}

int crec_fmt_code_put_paged(crec_fmt_writer *w, const void *data, size_t len,
                            crec_fmt_hash *hash, crec_error *err)
{
    size_t npages = (len + CREC_FMT_PAGE_SIZE - 1) / CREC_FMT_PAGE_SIZE;
    crec_fmt_buf b = {0};
    crec_fmt_hash h;
    int rc;

    if (w->failed)
        return fmt_w_dead(w, err);
    if (len > CREC_FMT_MAX_PAGED)
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: paged code of %zu bytes is too large",
                              w->name, len);
    h = crec_fmt_hash_bytes(data, len);
    if (hash)
        *hash = h;
    /* stored whole, or paged already: a paged copy adds nothing */
    if (fmt_hset_has(&w->blobs, &h) || fmt_hset_has(&w->paged, &h))
        return CREC_OK;
    fmt_buf_varint(&b, len);
    for (size_t i = 0; i < npages; i++) {
        size_t off = i * CREC_FMT_PAGE_SIZE;
        crec_fmt_hash ph = crec_fmt_hash_bytes((const uint8_t *)data + off,
                                               len - off < CREC_FMT_PAGE_SIZE
                                                   ? len - off : CREC_FMT_PAGE_SIZE);
        fmt_buf_hash(&b, &ph);
    }
    if (b.nomem)
        rc = fmt_w_nomem(w, err);
    else
        rc = blobs_record(w, CREC_FMT_K_PAGED, &h, b.data, b.len, 1, err);
    crec_fmt_buf_free(&b);
    if (rc == CREC_OK && fmt_hset_add(&w->paged, &h) != 0)
        rc = fmt_w_nomem(w, err);
    return rc;
}

/* ---- open, close ------------------------------------------------------------ */

static int write_start(crec_fmt_writer *w, const crec_fmt_header *h, crec_error *err)
{
    uint8_t pre[FMT_PREAMBLE_LEN] = {0};
    memcpy(pre, FMT_MAGIC, FMT_MAGIC_LEN);
    fmt_put_u32(pre + FMT_PREAMBLE_VERSION, CREC_FMT_VERSION);
    crec_fmt_buf b = {0};
    /* what the reader refuses is never written (docs/FORMAT.md §7.1) */
    if (h->argc > CREC_FMT_MAX_STRINGS || h->envc > CREC_FMT_MAX_STRINGS)
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: %zu %s: more than %u", w->name,
                              h->argc > CREC_FMT_MAX_STRINGS ? h->argc : h->envc,
                              h->argc > CREC_FMT_MAX_STRINGS ? "arguments"
                                                             : "environment variables",
                              CREC_FMT_MAX_STRINGS);
    if (fmt_header_encode(&b, h) != CREC_OK) {
        crec_fmt_buf_free(&b);
        return fmt_w_nomem(w, err);
    }
    if (b.len > CREC_FMT_MAX_CHUNK) {
        crec_fmt_buf_free(&b);
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: header too large", w->name);
    }
    fmt_chunk c = {.type = CREC_FMT_S_HEADER, .ulen = (uint32_t)b.len};
    int rc = fmt_write_all(w, pre, sizeof pre, err);
    if (!rc)
        rc = fmt_write_chunk(w, &c, b.data, err);
    crec_fmt_buf_free(&b);
    w->header_end = w->off;
    return rc;
}

/* The shared memory and the pipe of a shared writer, made before the first
 * fork (at the open, or by crec_fmt_writer_prefork): what the writer did
 * alone so far (its offset, directory, process and shared chunk numbers)
 * moves there.  A ring is never shared: its rotations rewrite the file. */
static int share(crec_fmt_writer *w, crec_error *err)
{
    pthread_mutexattr_t a;
    size_t head = 4096;
    void *m = mmap(NULL, head + FMT_SHARED_DIR_MAX * sizeof(fmt_chunk), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    _Static_assert(sizeof(struct fmt_shared) <= 4096, "the shared state fits its page");
    if (m == MAP_FAILED)
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: no shared memory for the writer: %s",
                              w->name, strerror(errno));
    w->sh = m;
    w->sdir = (fmt_chunk *)((uint8_t *)m + head);
    w->sh->next_proc = w->next_proc;
    w->sh->off = w->off;
    for (size_t i = 0; i < w->ndir; i++)
        fmt_dir_add(w, &w->dir[i], 0, NULL);
    for (size_t i = 0; i < w->nstreams; i++)
        if (!crec_fmt_stream_per_process(w->streams[i].type)) {
            w->sh->seq[w->streams[i].type] = w->streams[i].seq;
            w->sh->uoff[w->streams[i].type] = w->streams[i].flushed;
        }
    if (pthread_mutexattr_init(&a) != 0 ||
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) != 0 ||
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) != 0 ||
        pthread_mutex_init(&w->sh->mu, &a) != 0)
        return crec_error_set(err, CREC_ERR_IO, "%s: can't make the writer's lock", w->name);
    pthread_mutexattr_destroy(&a);
    if (pipe2(w->alive, O_CLOEXEC) != 0)
        return crec_error_set(err, CREC_ERR_IO, "%s: can't make the writer's pipe: %s", w->name,
                              strerror(errno));
    return CREC_OK;
}

int crec_fmt_writer_open_fd(int fd, const char *name, const crec_fmt_header *h,
                            const crec_fmt_writer_opts *opts, crec_fmt_writer **out,
                            crec_error *err)
{
    size_t cs = opts && opts->chunk_size ? opts->chunk_size : CREC_FMT_DEFAULT_CHUNK;
    *out = NULL;
    if (cs < 16 || cs > CREC_FMT_MAX_CHUNK) {
        if (fd > 2)
            close(fd);
        return crec_error_set(err, CREC_ERR_ARG, "%s: chunk size %zu out of range", name, cs);
    }
    crec_fmt_writer *w = crec_calloc(1, sizeof *w);
    char *nm = crec_malloc(strlen(name) + 1);
    ZSTD_CCtx *cctx = fmt_zstd_cctx();
    if (!w || !nm || !cctx) {
        crec_free(w);
        crec_free(nm);
        ZSTD_freeCCtx(cctx);
        if (fd > 2)
            close(fd);
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory", name);
    }
    strcpy(nm, name);
    w->fd = fd;
    w->own_fd = fd > 2;
    w->name = nm;
    w->cctx = cctx;
    w->chunk_size = cs;
    w->level = opts && opts->zstd_level ? opts->zstd_level : 3;
    w->alive[0] = w->alive[1] = -1;
    w->next_proc = 1;
    int rc = opts && opts->shared ? share(w, err) : CREC_OK;
    if (rc == CREC_OK)
        rc = write_start(w, h, err);
    if (rc) {
        crec_fmt_writer_free(w);
        return rc;
    }
    *out = w;
    return CREC_OK;
}

int crec_fmt_writer_open(const char *path, const crec_fmt_header *h,
                         const crec_fmt_writer_opts *opts, crec_fmt_writer **out,
                         crec_error *err)
{
    *out = NULL;
    if (strcmp(path, "-") == 0)
        return crec_fmt_writer_open_fd(1, "<stdout>", h, opts, out, err);
    /* readable too: a ring reads itself back when it rotates */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return crec_error_set(err, CREC_ERR_IO, "%s: %s", path, strerror(errno));
    return crec_fmt_writer_open_fd(fd, path, h, opts, out, err);
}

static int write_directory(crec_fmt_writer *w, crec_error *err)
{
    crec_fmt_buf b = {0};
    const fmt_chunk *dir = w->sh ? w->sdir : w->dir;
    size_t ndir = w->sh ? (size_t)w->sh->ndir : w->ndir;
    fmt_buf_varint(&b, ndir);
    for (size_t i = 0; i < ndir; i++) {
        const fmt_chunk *c = &dir[i];
        fmt_buf_varint(&b, c->file_off);
        fmt_buf_u8(&b, c->type);
        fmt_buf_varint(&b, c->proc);
        fmt_buf_varint(&b, c->tid);
        fmt_buf_varint(&b, c->seq);
        fmt_buf_varint(&b, c->uoff);
        fmt_buf_varint(&b, c->clen);
        fmt_buf_varint(&b, c->ulen);
        fmt_buf_u64(&b, c->sum);
    }
    int rc = CREC_OK;
    if (b.nomem)
        rc = fmt_w_nomem(w, err);
    else if (b.len > CREC_FMT_MAX_CHUNK)
        rc = crec_error_set(err, CREC_ERR_LIMIT, "%s: directory too large", w->name);
    fmt_chunk c = {.type = CREC_FMT_S_DIRECTORY, .ulen = (uint32_t)b.len};
    if (!rc)
        rc = fmt_write_chunk(w, &c, b.data, err);
    crec_fmt_buf_free(&b);
    if (rc)
        return rc;
    uint8_t t[FMT_TRAILER_LEN];
    fmt_put_u64(t + FMT_TRAILER_DIR_OFF, c.file_off);
    fmt_put_u64(t + FMT_TRAILER_DIR_LEN, FMT_CHUNK_HDR + (uint64_t)c.clen);
    fmt_put_u64(t + FMT_TRAILER_SUM, XXH3_64bits(t, FMT_TRAILER_SUM));
    memcpy(t + FMT_TRAILER_MAGIC_AT, FMT_TRAILER_MAGIC, 8);
    return fmt_write_all(w, t, sizeof t, err);
}

uint64_t crec_fmt_writer_size(const crec_fmt_writer *w)
{
    uint64_t n = (w->sh ? w->sh->off : w->off) + FMT_CHUNK_HDR + FMT_TRAILER_LEN + 64;
    uint64_t ndir = w->sh ? w->sh->ndir : w->ndir;

    for (size_t i = 0; i < w->nstreams; i++) /* what zstd can't shrink, at worst */
        if (w->streams[i].len)
            n += ZSTD_compressBound(w->streams[i].len) + FMT_CHUNK_HDR;
    /* the directory: an entry is at most 10 varint bytes per field */
    return n + (ndir + w->nstreams) * (uint64_t)(7 * FMT_MAX_VARINT + 9);
}

int crec_fmt_writer_copy_to(crec_fmt_writer *w, int fd, const char *name, crec_error *err)
{
    uint8_t buf[1 << 16];
    char *nm = crec_malloc(strlen(name) + 1);

    if (w->sh) { /* other processes write to the file too: no copy ends it */
        crec_free(nm);
        return crec_error_set(err, CREC_ERR_ARG, "%s: a dump holds one process, and %s is "
                              "written by several", name, w->name);
    }
    if (!nm)
        return fmt_w_nomem(w, err);
    strcpy(nm, name);
    for (uint64_t at = 0; at < w->off;) {
        size_t n = w->off - at < sizeof buf ? (size_t)(w->off - at) : sizeof buf;
        ssize_t k = pread(w->fd, buf, n, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        for (ssize_t done = 0, m; k > 0 && done < k; done += m)
            if ((m = write(fd, buf + done, (size_t)(k - done))) <= 0 && !(m < 0 && errno == EINTR))
                k = -1;
            else if (m < 0)
                m = 0;
        if (k <= 0) {
            crec_free(nm);
            return crec_error_set(err, CREC_ERR_IO, "%s: can't copy the recording so far: %s",
                                  name, errno ? strerror(errno) : "short read or write");
        }
        at += (uint64_t)k;
    }
    if (w->own_fd)
        close(w->fd);
    w->fd = fd;
    w->own_fd = 1;
    crec_free(w->name);
    w->name = nm;
    fmt_ring_free(w); /* the copy is a plain file that ends here */
    return CREC_OK;
}

/* The first process of a shared writer: wait until every other has left
 * (each holds the pipe's write end until it ends, however it ends). */
static void wait_others(crec_fmt_writer *w)
{
    char c;

    if (!w->sh || w->forked || w->alive[0] < 0)
        return;
    close(w->alive[1]);
    w->alive[1] = -1;
    for (;;) {
        ssize_t k = read(w->alive[0], &c, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
    }
}

int crec_fmt_writer_close(crec_fmt_writer *w, crec_error *err)
{
    int rc;

    if (w->forked)
        return crec_fmt_writer_leave(w, err);
    rc = crec_fmt_flush_all(w, err);
    wait_others(w);
    if (!rc && !(w->sh && w->sh->broken)) /* else a reader scans it (FORMAT.md §7.2) */
        rc = write_directory(w, err);
    if (w->own_fd) {
        int fd = w->fd;
        w->own_fd = 0;
        if (close(fd) != 0 && !rc)
            rc = crec_error_set(err, CREC_ERR_IO, "%s: close failed: %s", w->name,
                                strerror(errno));
    }
    crec_fmt_writer_free(w);
    return rc;
}

uint32_t crec_fmt_writer_process(const crec_fmt_writer *w)
{
    return w->proc;
}

/* The next process number (shared by every process of a shared writer). */
static int take_proc(crec_fmt_writer *w, uint32_t *proc, crec_error *err)
{
    uint32_t *next = w->sh ? &w->sh->next_proc : &w->next_proc;

    w_lock(w);
    *proc = *next;
    if (*proc <= FMT_MAX_PROC && *proc < CREC_FMT_MAX_PROCS)
        (*next)++;
    w_unlock(w);
    if (*proc > FMT_MAX_PROC || *proc >= CREC_FMT_MAX_PROCS) {
        w->failed = 1;
        return crec_error_set(err, CREC_ERR_LIMIT, "%s: more than %u processes", w->name,
                              CREC_FMT_MAX_PROCS);
    }
    return CREC_OK;
}

/* Drop the streams of the process written until now (written out, or the
 * parent's, in a child); the shared ones stay. */
static void drop_process_streams(crec_fmt_writer *w)
{
    size_t j = 0;

    for (size_t i = 0; i < w->nstreams; i++) {
        if (crec_fmt_stream_per_process(w->streams[i].type))
            crec_free(w->streams[i].buf);
        else
            w->streams[j++] = w->streams[i];
    }
    w->nstreams = j;
    memset(w->last, 0, sizeof w->last);
}

int crec_fmt_writer_take_process(crec_fmt_writer *w, uint32_t *proc, crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    return take_proc(w, proc, err);
}

int crec_fmt_writer_set_process(crec_fmt_writer *w, uint32_t proc, crec_error *err)
{
    int rc;

    if (w->failed)
        return fmt_w_dead(w, err);
    for (size_t i = 0; i < w->nstreams; i++)
        if (crec_fmt_stream_per_process(w->streams[i].type) &&
            (rc = flush_stream(w, &w->streams[i], err)) != 0)
            return rc;
    drop_process_streams(w);
    w->proc = proc;
    return CREC_OK;
}

int crec_fmt_writer_prefork(crec_fmt_writer *w, crec_error *err)
{
    if (w->failed)
        return fmt_w_dead(w, err);
    if (w->ring)
        return crec_error_set(err, CREC_ERR_ARG, "%s: a ring records one process", w->name);
    for (size_t i = 0; i < w->nstreams; i++)
        if (!crec_fmt_stream_per_process(w->streams[i].type)) {
            int rc = flush_stream(w, &w->streams[i], err);
            if (rc)
                return rc;
        }
    return w->sh ? CREC_OK : share(w, err);
}

int crec_fmt_writer_forked(crec_fmt_writer *w, uint32_t *proc, crec_error *err)
{
    if (!w->sh) {
        w->failed = 1;
        return crec_error_set(err, CREC_ERR_ARG, "%s: a writer that is not shared was forked",
                              w->name);
    }
    w->forked = 1;
    if (w->alive[0] >= 0)
        close(w->alive[0]); /* only the first process waits on it */
    w->alive[0] = -1;
    for (size_t i = 0; i < w->nstreams; i++) /* the parent writes what it had */
        w->streams[i].len = 0;
    drop_process_streams(w);
    if (take_proc(w, proc, err) != CREC_OK)
        return CREC_ERR_LIMIT;
    w->proc = *proc;
    return CREC_OK;
}

int crec_fmt_writer_leave(crec_fmt_writer *w, crec_error *err)
{
    int rc = crec_fmt_flush_all(w, err);

    if (w->own_fd) {
        w->own_fd = 0;
        close(w->fd);
    }
    crec_fmt_writer_free(w);
    return rc;
}

void crec_fmt_writer_free(crec_fmt_writer *w)
{
    if (!w)
        return;
    if (w->own_fd)
        close(w->fd);
    for (int i = 0; i < 2; i++)
        if (w->alive[i] >= 0)
            close(w->alive[i]);
    if (w->sh)
        munmap(w->sh, 4096 + FMT_SHARED_DIR_MAX * sizeof(fmt_chunk));
    for (size_t i = 0; i < w->nstreams; i++)
        crec_free(w->streams[i].buf);
    crec_free(w->streams);
    crec_free(w->dir);
    crec_free(w->dir_seg);
    crec_free(w->blobs.v);
    crec_free(w->seg_blobs.v);
    crec_free(w->paged.v);
    fmt_ring_free(w);
    crec_free(w->zbuf);
    ZSTD_freeCCtx(w->cctx);
    crec_free(w->name);
    crec_free(w);
}
