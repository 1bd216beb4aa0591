/*
 * reader.c - reading a .crec file that may be hostile, truncated or a pipe
 * (docs/FORMAT.md §2-§5, §7).
 *
 *   0       16    preamble: magic, u32 LE version, u32 reserved
 *   16      ...   HEADER chunk (40-byte frame + zstd payload)
 *   ...     ...   data chunks
 *   D       L     DIRECTORY chunk
 *   size-32 32    trailer: u64 LE D, u64 LE L, u64 LE XXH3-64(D,L), "CRECEND\0"
 *
 * Two ways to find the chunks:
 *  - the trailer is valid and D + L + 32 == size: parse the directory; each
 *    chunk's frame header is compared with its entry when the chunk is read;
 *  - otherwise (recorder killed, or input is a pipe) scan frames from offset
 *    16 on, and stop before the first frame that is incomplete, bad or fails
 *    its checksum.  The file is then "truncated at" that offset.
 * Either way the chunk list is checked the same way before use: chunks of a
 * stream are numbered 0..n-1 and their stream offsets follow each other.
 *
 * Memory stays bounded by what the file really holds, never by what a field
 * claims: counts are checked against the bytes left before allocating, and a
 * chunk is at most CREC_FMT_MAX_CHUNK bytes either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/format_int.h"

struct rstream {
    uint8_t type;
    uint32_t proc;   /* version 3: per-process streams' process */
    uint32_t tid;
    size_t first, n; /* chunks[first .. first+n) */
    uint64_t raw, comp;
};

/*
 * Chunks decompressed lately for crec_fmt_read_at: a replay reads code a
 * page at a time from a few chunks, and snapshot pages come from others.
 */
#define FMT_CHUNK_CACHE_N 8
#define FMT_CHUNK_CACHE_BYTES (64u << 20)

struct chunkcache {
    size_t chunk;  /* index in r->chunks */
    uint8_t *data;
    size_t cap;
    size_t have;   /* bytes of data decompressed so far (from the start) */
    uint8_t *z;    /* while not all is: the chunk's payload, checked, */
    size_t zlen, zpos;
    ZSTD_DCtx *ds; /* ... and where decompression stands */
    uint64_t used; /* tick of the last use, 0 = empty */
};

/*
 * Blobs read lately, checked against their hash, kept so that the code a
 * replay maps at every key frame is decompressed and hashed once per
 * reader, not once per replay.  At most FMT_BLOB_CACHE_N blobs and
 * FMT_BLOB_CACHE_BYTES bytes (the newest blob is kept even when larger).
 */
#define FMT_BLOB_CACHE_N 64
#define FMT_BLOB_CACHE_BYTES (64u << 20)

struct blobcache {
    crec_fmt_hash h;
    uint8_t *data;
    size_t len;
    uint64_t used; /* tick of the last use, 0 = empty slot */
};

struct crec_fmt_reader {
    char *name;
    int fd, own_fd;
    int pipe;             /* fd is not seekable: bytes are kept in mem */
    const uint8_t *mem;   /* memory image (open_mem, or a pipe's bytes) */
    uint8_t *pipebuf;
    size_t memlen, pipecap;
    uint64_t size; /* bytes in the file (for a pipe: read so far) */
    uint32_t version; /* the preamble's */
    crec_fmt_header hdr;
    fmt_chunk *chunks; /* sorted by (type, proc, tid, seq) */
    size_t nchunks;
    struct rstream *streams; /* sorted by (type, proc, tid) */
    size_t nstreams;
    /* processes (version 3): the one the per-process streams are read
     * from, the streams a caller sees (it and the shared ones), and every
     * process number that has a chunk */
    uint32_t sel;
    size_t *vis;
    size_t nvis;
    uint32_t *procs;
    size_t nprocs;
    int sel_cut;          /* the selected process has no end (its recorder was killed) */
    char sel_why[160];
    int truncated;
    uint64_t trunc_at;
    char why[CREC_ERROR_MSG_MAX];
    ZSTD_DCtx *dctx;
    uint8_t *zbuf; /* compressed bytes of the chunk being read */
    size_t zcap;
    uint8_t *cache;       /* the header and directory chunks, while opening */
    size_t cachecap;
    struct chunkcache ccache[FMT_CHUNK_CACHE_N]; /* for crec_fmt_read_at */
    uint64_t ccache_tick;
    crec_fmt_blob_loc *blobs; /* sorted by hash: scanned on first use, or given */
    size_t nblobs;
    uint8_t *blob_checked;    /* per blob: its record header was checked */
    int blobs_built;
    struct blobcache bcache[FMT_BLOB_CACHE_N];
    size_t bcache_bytes;
    uint64_t bcache_tick;
};

static int r_nomem(const crec_fmt_reader *r, crec_error *err)
{
    return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory", r->name);
}

/* Stop decompressing a cached chunk (it is whole, or dropped). */
static void ccache_end_stream(struct chunkcache *c)
{
    ZSTD_freeDCtx(c->ds);
    crec_free(c->z);
    c->ds = NULL, c->z = NULL, c->zlen = c->zpos = 0;
}

/* ---- bytes of the file ------------------------------------------------------ */

/* Read more of a pipe until `want` bytes are held or it ends. */
static int pipe_fill(crec_fmt_reader *r, uint64_t want, crec_error *err)
{
    while (r->memlen < want) {
        if (r->memlen == r->pipecap) {
            uint8_t *p = crec_grow(r->pipebuf, &r->pipecap, r->memlen + 1, 1, 1 << 16);
            if (!p)
                return r_nomem(r, err);
            r->pipebuf = p;
            r->mem = p;
        }
        ssize_t k = read(r->fd, r->pipebuf + r->memlen, r->pipecap - r->memlen);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return crec_error_set(err, CREC_ERR_IO, "%s: read failed: %s", r->name,
                                  strerror(errno));
        if (k == 0)
            break;
        r->memlen += (size_t)k;
        r->size = r->memlen;
    }
    return CREC_OK;
}

/* Exactly n bytes at off, or CREC_ERR_TRUNCATED when the file is shorter. */
static int src_read(crec_fmt_reader *r, uint64_t off, void *buf, size_t n, crec_error *err)
{
    if (off > UINT64_MAX - n)
        return crec_error_set(err, CREC_ERR_TRUNCATED, "%s: offset out of range", r->name);
    if (r->pipe) {
        int rc = pipe_fill(r, off + n, err);
        if (rc)
            return rc;
    }
    if (r->mem || r->pipe) {
        if (off + n > r->memlen)
            return crec_error_set(err, CREC_ERR_TRUNCATED, "%s: ends at byte %zu", r->name,
                                  r->memlen);
        if (n)
            memcpy(buf, r->mem + off, n);
        return CREC_OK;
    }
    if (off + n > r->size)
        return crec_error_set(err, CREC_ERR_TRUNCATED, "%s: ends at byte %llu", r->name,
                              (unsigned long long)r->size);
    uint8_t *b = buf;
    while (n) {
        ssize_t k = pread(r->fd, b, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return crec_error_set(err, CREC_ERR_IO, "%s: read failed: %s", r->name,
                                  strerror(errno));
        if (k == 0)
            return crec_error_set(err, CREC_ERR_TRUNCATED, "%s: file shrank", r->name);
        b += k;
        off += (uint64_t)k;
        n -= (size_t)k;
    }
    return CREC_OK;
}

static int grow(uint8_t **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 1;
    uint8_t *q = crec_realloc(*p, n);
    if (!q)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

/* ---- one chunk ------------------------------------------------------------- */

static const char *chunk_desc(const fmt_chunk *c, char *buf, size_t n)
{
    char p[24] = "";

    if (c->proc)
        snprintf(p, sizeof p, " process %u", c->proc);
    if (crec_fmt_stream_per_thread(c->type))
        snprintf(buf, n, "stream %s%s thread %u chunk %u", crec_fmt_stream_name(c->type), p,
                 c->tid, c->seq);
    else
        snprintf(buf, n, "stream %s%s chunk %u", crec_fmt_stream_name(c->type), p, c->seq);
    return buf;
}

/* Read a chunk's frame header at `off` and its payload into r->zbuf,
 * verifying the checksum.  Fills *c. */
static int fetch_chunk(crec_fmt_reader *r, uint64_t off, fmt_chunk *c, crec_error *err)
{
    uint8_t hdr[FMT_CHUNK_HDR];
    char d[96];
    int rc = src_read(r, off, hdr, sizeof hdr, err);
    if (rc || (rc = fmt_chunk_unpack(r->version, hdr, off, c, err)) != 0)
        return rc;
    if (!grow(&r->zbuf, &r->zcap, c->clen))
        return r_nomem(r, err);
    if ((rc = src_read(r, off + FMT_CHUNK_HDR, r->zbuf, c->clen, err)) != 0)
        return rc;
    if (fmt_chunk_sum(hdr, r->zbuf, c->clen) != c->sum && !fmt_fuzz_no_checksums)
        return crec_error_corrupt(err, "checksum mismatch in %s at offset %llu",
                                  chunk_desc(c, d, sizeof d), (unsigned long long)off);
    return CREC_OK;
}

/* Decompress r->zbuf (the chunk c) into *dst. */
static int inflate_chunk(crec_fmt_reader *r, const fmt_chunk *c, uint8_t **dst, size_t *cap,
                         crec_error *err)
{
    char d[96];
    /* The frame's own content size is only a hint: the frame header
     * declares ulen, and it is what we allocate (capped by unpack). */
    unsigned long long fcs = ZSTD_getFrameContentSize(r->zbuf, c->clen);
    if (fcs == ZSTD_CONTENTSIZE_ERROR || (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != c->ulen))
        return crec_error_corrupt(err, "bad zstd frame in %s", chunk_desc(c, d, sizeof d));
    if (!grow(dst, cap, c->ulen))
        return r_nomem(r, err);
    size_t n = ZSTD_decompressDCtx(r->dctx, *dst, c->ulen, r->zbuf, c->clen);
    if (ZSTD_isError(n)) {
        if (ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
            return r_nomem(r, err);
        return crec_error_corrupt(err, "zstd error in %s: %s", chunk_desc(c, d, sizeof d),
                                  ZSTD_getErrorName(n));
    }
    if (n != c->ulen)
        return crec_error_corrupt(err, "%s holds %zu bytes, not %u", chunk_desc(c, d, sizeof d),
                                  n, c->ulen);
    return CREC_OK;
}

/* Load chunk number `i` of r->chunks, checking its frame against the entry. */
/* Read chunk number `i` of r->chunks into r->zbuf, checking its frame
 * against the entry and its checksum. */
static int fetch_checked(crec_fmt_reader *r, size_t i, fmt_chunk *out, crec_error *err)
{
    const fmt_chunk *e = &r->chunks[i];
    fmt_chunk c;
    char d[96];
    int rc = fetch_chunk(r, e->file_off, &c, err);
    if (rc == CREC_ERR_TRUNCATED)
        return crec_error_corrupt(err, "%s at offset %llu is past the end of the file",
                                  chunk_desc(e, d, sizeof d), (unsigned long long)e->file_off);
    if (rc)
        return rc;
    if (c.type != e->type || c.proc != e->proc || c.tid != e->tid || c.seq != e->seq ||
        c.uoff != e->uoff || c.clen != e->clen || c.ulen != e->ulen || c.sum != e->sum)
        return crec_error_corrupt(err, "chunk at offset %llu does not match the directory (%s)",
                                  (unsigned long long)e->file_off, chunk_desc(e, d, sizeof d));
    *out = c;
    return CREC_OK;
}

/* Load chunk number `i` of r->chunks, checking its frame against the entry. */
static int load_chunk(crec_fmt_reader *r, size_t i, uint8_t **dst, size_t *cap,
                      crec_error *err)
{
    fmt_chunk c;
    int rc = fetch_checked(r, i, &c, err);

    return rc ? rc : inflate_chunk(r, &c, dst, cap, err);
}

/* ---- chunk list: sort, check, group into streams ------------------------------ */

static int cmp_stream_order(const void *a, const void *b)
{
    const fmt_chunk *x = a, *y = b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return 0;
}

static int cmp_file_order(const void *a, const void *b)
{
    const fmt_chunk *x = a, *y = b;
    return x->file_off < y->file_off ? -1 : x->file_off > y->file_off;
}

/* Directory chunks must not overlap each other or leave [start, end). */
static int check_placement(crec_fmt_reader *r, uint64_t start, uint64_t end, crec_error *err)
{
    uint64_t at = start;

    crec_sort(r->chunks, r->nchunks, sizeof *r->chunks, cmp_file_order);
    for (size_t i = 0; i < r->nchunks; i++) {
        const fmt_chunk *c = &r->chunks[i];
        if (c->file_off < at || c->file_off > end || end - c->file_off < FMT_CHUNK_HDR + (uint64_t)c->clen)
            return crec_error_corrupt(err, "directory entry %zu: chunk at offset %llu out of range",
                                      i, (unsigned long long)c->file_off);
        at = c->file_off + FMT_CHUNK_HDR + c->clen;
    }
    return CREC_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int select_proc(crec_fmt_reader *r, uint32_t proc, crec_error *err);

/* Every process number that has a stream, sorted; the first is selected. */
static int list_procs(crec_fmt_reader *r, crec_error *err)
{
    size_t n = 0;

    r->procs = crec_malloc((r->nstreams + 1) * sizeof *r->procs);
    if (!r->procs)
        return r_nomem(r, err);
    r->procs[n++] = 0; /* the first process, whatever it holds */
    for (size_t i = 0; i < r->nstreams; i++)
        if (r->streams[i].proc)
            r->procs[n++] = r->streams[i].proc;
    crec_sort(r->procs, n, sizeof *r->procs, cmp_u32);
    r->nprocs = 0;
    for (size_t i = 0; i < n; i++)
        if (r->nprocs == 0 || r->procs[r->nprocs - 1] != r->procs[i])
            r->procs[r->nprocs++] = r->procs[i];
    if (r->nprocs > CREC_FMT_MAX_PROCS)
        return crec_error_corrupt(err, "%zu processes, more than the limit %u", r->nprocs,
                                  CREC_FMT_MAX_PROCS);
    return select_proc(r, 0, err);
}

/* Count streams, then fill them: each stream's chunks must be numbered
 * 0..n-1 with contiguous stream offsets. */
static int build_streams(crec_fmt_reader *r, crec_error *err)
{
    crec_sort(r->chunks, r->nchunks, sizeof *r->chunks, cmp_stream_order);
    size_t ns = 0;
    for (size_t i = 0; i < r->nchunks; i++) {
        const fmt_chunk *c = &r->chunks[i], *p = i ? c - 1 : NULL;
        if (!p || p->type != c->type || p->proc != c->proc || p->tid != c->tid)
            ns++;
    }
    if (ns > CREC_FMT_MAX_STREAMS)
        return crec_error_corrupt(err, "%zu streams, more than the limit %d", ns,
                                  CREC_FMT_MAX_STREAMS);
    r->streams = crec_calloc(ns ? ns : 1, sizeof *r->streams);
    if (!r->streams)
        return r_nomem(r, err);
    for (size_t i = 0; i < r->nchunks; i++) {
        const fmt_chunk *c = &r->chunks[i];
        struct rstream *s = r->nstreams ? &r->streams[r->nstreams - 1] : NULL;
        if (!s || s->type != c->type || s->proc != c->proc || s->tid != c->tid) {
            s = &r->streams[r->nstreams++];
            *s = (struct rstream){.type = c->type, .proc = c->proc, .tid = c->tid, .first = i};
        }
        char d[96];
        if (c->type == CREC_FMT_S_MARKS && r->hdr.version < 3)
            return crec_error_corrupt(err, "a MARKS chunk in a version %u file (marks came with "
                                      "version 3)", r->hdr.version);
        if (c->seq != s->n || c->uoff != s->raw)
            return crec_error_corrupt(err, "%s is out of sequence (stream offset %llu, expected %llu)",
                                      chunk_desc(c, d, sizeof d), (unsigned long long)c->uoff,
                                      (unsigned long long)s->raw);
        s->n++;
        s->raw += c->ulen;
        s->comp += FMT_CHUNK_HDR + (uint64_t)c->clen;
    }
    return list_procs(r, err);
}

static int add_chunk(crec_fmt_reader *r, size_t *cap, const fmt_chunk *c, crec_error *err)
{
    fmt_chunk *p = crec_grow(r->chunks, cap, r->nchunks + 1, sizeof *p, 64);

    if (!p)
        return r_nomem(r, err);
    r->chunks = p;
    r->chunks[r->nchunks++] = *c;
    return CREC_OK;
}

/* ---- the directory --------------------------------------------------------- */

static int dir_entry(uint32_t version, crec_fmt_cur *cur, size_t i, fmt_chunk *c,
                     crec_error *err)
{
    uint64_t off, uoff;
    uint32_t proc = 0, tid, seq, clen, ulen;
    uint8_t type;
    int rc;
    if ((rc = fmt_cur_varint(cur, &off, "directory chunk offset", err)) ||
        (rc = fmt_cur_u8(cur, &type, "directory stream type", err)) ||
        (version >= 3 && (rc = fmt_cur_varint32(cur, &proc, "directory process", err))) ||
        (rc = fmt_cur_varint32(cur, &tid, "directory thread id", err)) ||
        (rc = fmt_cur_varint32(cur, &seq, "directory chunk number", err)) ||
        (rc = fmt_cur_varint(cur, &uoff, "directory stream offset", err)) ||
        (rc = fmt_cur_varint32(cur, &clen, "directory chunk length", err)) ||
        (rc = fmt_cur_varint32(cur, &ulen, "directory chunk size", err)))
        return rc;
    if (type == CREC_FMT_S_HEADER || type == CREC_FMT_S_DIRECTORY)
        return crec_error_corrupt(err, "directory entry %zu names a %s chunk", i,
                                  crec_fmt_stream_name(type));
    uint64_t sum;
    if ((rc = fmt_cur_u64(cur, &sum, "directory checksum", err)) != 0)
        return rc;
    /* Same range checks as a frame header read from the file. */
    uint8_t hdr[FMT_CHUNK_HDR];
    if (proc > FMT_MAX_PROC)
        return crec_error_corrupt(err, "directory entry %zu: process %u out of range", i, proc);
    fmt_chunk t = {.type = type, .proc = proc, .tid = tid, .seq = seq, .uoff = uoff,
                   .clen = clen, .ulen = ulen, .sum = sum};
    fmt_chunk_pack(hdr, &t);
    return fmt_chunk_unpack(version, hdr, off, c, err);
}

/* Parse a DIRECTORY chunk's payload into r->chunks. */
static int parse_directory(crec_fmt_reader *r, const uint8_t *p, size_t n, uint64_t max,
                           crec_error *err)
{
    crec_fmt_cur cur = {p, n, 0};
    uint64_t count;
    int rc = fmt_cur_varint(&cur, &count, "directory count", err);
    if (rc)
        return rc;
    if (count > (n - cur.pos) / FMT_DIR_ENTRY_MIN || count > max)
        return crec_error_corrupt(err, "directory count %llu out of range",
                                  (unsigned long long)count);
    r->chunks = crec_calloc(count ? (size_t)count : 1, sizeof *r->chunks);
    if (!r->chunks)
        return r_nomem(r, err);
    for (size_t i = 0; i < count; i++) {
        if ((rc = dir_entry(r->version, &cur, i, &r->chunks[i], err)) != 0)
            return rc;
        r->nchunks++;
    }
    return fmt_cur_end(&cur, "the directory", err);
}

/* Read the trailer; CREC_ERR_NOTFOUND (no message) when there is none. */
static int read_trailer(crec_fmt_reader *r, uint64_t start, uint64_t *doff, uint64_t *dlen,
                        crec_error *err)
{
    uint8_t t[FMT_TRAILER_LEN];
    if (r->size < start + FMT_CHUNK_HDR + FMT_TRAILER_LEN)
        return CREC_ERR_NOTFOUND;
    int rc = src_read(r, r->size - FMT_TRAILER_LEN, t, sizeof t, err);
    if (rc)
        return rc;
    if (memcmp(t + FMT_TRAILER_MAGIC_AT, FMT_TRAILER_MAGIC, 8) != 0 ||
        (fmt_get_u64(t + FMT_TRAILER_SUM) != XXH3_64bits(t, FMT_TRAILER_SUM) && !fmt_fuzz_no_checksums))
        return CREC_ERR_NOTFOUND;
    *doff = fmt_get_u64(t + FMT_TRAILER_DIR_OFF);
    *dlen = fmt_get_u64(t + FMT_TRAILER_DIR_LEN);
    if (*doff < start || *dlen > r->size || *doff != r->size - FMT_TRAILER_LEN - *dlen)
        return crec_error_corrupt(err, "trailer points at a directory out of range (offset %llu, length %llu)",
                                  (unsigned long long)*doff, (unsigned long long)*dlen);
    return CREC_OK;
}

static int load_directory(crec_fmt_reader *r, uint64_t start, uint64_t doff, uint64_t dlen,
                          crec_error *err)
{
    fmt_chunk c;
    int rc = fetch_chunk(r, doff, &c, err);
    if (rc == CREC_ERR_TRUNCATED)
        rc = crec_error_corrupt(err, "directory chunk out of range");
    if (rc)
        return rc;
    if (c.type != CREC_FMT_S_DIRECTORY || c.seq || c.uoff || FMT_CHUNK_HDR + (uint64_t)c.clen != dlen)
        return crec_error_corrupt(err, "the trailer does not point at a directory chunk");
    if ((rc = inflate_chunk(r, &c, &r->cache, &r->cachecap, err)) != 0 ||
        (rc = parse_directory(r, r->cache, c.ulen, (doff - start) / (FMT_CHUNK_HDR + 1), err)) != 0 ||
        (rc = check_placement(r, start, doff, err)) != 0)
        return rc;
    return build_streams(r, err);
}

/* ---- recovery scan (truncated files and pipes) ------------------------------ */

static void set_truncated(crec_fmt_reader *r, uint64_t at, const char *why)
{
    r->truncated = 1;
    r->trunc_at = at;
    snprintf(r->why, sizeof r->why, "%s", why);
}

/* A directory found by the scan must list exactly the chunks scanned. */
static int scan_directory(crec_fmt_reader *r, const fmt_chunk *c, uint64_t off, crec_error *err)
{
    crec_fmt_reader tmp = {.name = r->name, .version = r->version};
    int rc = inflate_chunk(r, c, &r->cache, &r->cachecap, err);
    if (!rc)
        rc = parse_directory(&tmp, r->cache, c->ulen, r->nchunks, err);
    if (!rc && tmp.nchunks != r->nchunks)
        rc = crec_error_corrupt(err, "directory lists %zu chunks, the file has %zu",
                                tmp.nchunks, r->nchunks);
    for (size_t i = 0; !rc && i < tmp.nchunks; i++) {
        const fmt_chunk *a = &tmp.chunks[i], *b = &r->chunks[i];
        if (a->file_off != b->file_off || a->sum != b->sum)
            rc = crec_error_corrupt(err, "directory entry %zu does not match the chunk at %llu",
                                    i, (unsigned long long)b->file_off);
    }
    crec_free(tmp.chunks);
    if (rc)
        return rc;
    uint8_t t[FMT_TRAILER_LEN];
    uint64_t toff = off + FMT_CHUNK_HDR + c->clen;
    if (src_read(r, toff, t, sizeof t, NULL) != CREC_OK || memcmp(t + FMT_TRAILER_MAGIC_AT, FMT_TRAILER_MAGIC, 8) ||
        fmt_get_u64(t + FMT_TRAILER_SUM) != XXH3_64bits(t, FMT_TRAILER_SUM) || fmt_get_u64(t + FMT_TRAILER_DIR_OFF) != off) {
        set_truncated(r, toff, "the trailer is missing or damaged");
    }
    return CREC_OK;
}

/* A version-3 file written by several processes may hold the part of a
 * chunk that a process killed while writing it left: the next chunk after
 * off (a frame that checks), or 0 when there is none.  Bounded, so that a
 * crafted file of false frames costs a bounded time. */
#define FMT_RESYNC_TRIES 4096
static uint64_t resync(crec_fmt_reader *r, uint64_t off, int *tries)
{
    uint8_t buf[65536];

    for (uint64_t at = off + 1;;) {
        size_t n = sizeof buf;
        const uint8_t *m;
        if (r->pipe && pipe_fill(r, at + n, NULL) != CREC_OK)
            return 0;
        if (r->mem || r->pipe) {
            if (at >= r->memlen)
                return 0;
            n = r->memlen - at < n ? (size_t)(r->memlen - at) : n;
            memcpy(buf, r->mem + at, n);
        } else {
            if (at >= r->size)
                return 0;
            n = r->size - at < n ? (size_t)(r->size - at) : n;
            if (src_read(r, at, buf, n, NULL) != CREC_OK)
                return 0;
        }
        m = memmem(buf, n, FMT_CHUNK_MAGIC, 4);
        if (!m) { /* the magic may straddle the window's end */
            if (n < 4)
                return 0;
            at += n - 3;
            continue;
        }
        at += (uint64_t)(m - buf);
        fmt_chunk c;
        if (fetch_chunk(r, at, &c, NULL) == CREC_OK && c.type != CREC_FMT_S_HEADER)
            return at;
        if (++*tries > FMT_RESYNC_TRIES)
            return 0;
        at++;
    }
}

static int scan(crec_fmt_reader *r, uint64_t start, crec_error *err)
{
    size_t cap = 0;
    uint64_t off = start;
    int damaged = 0, tries = 0;
    crec_error e;
    for (;;) {
        fmt_chunk c;
        crec_error_clear(&e);
        int rc = fetch_chunk(r, off, &c, &e);
        if (rc == CREC_ERR_NOMEM || rc == CREC_ERR_IO)
            return crec_error_set(err, (crec_err)rc, "%s", e.msg);
        if (rc == CREC_ERR_TRUNCATED && !damaged)
            set_truncated(r, off, r->size == off ? "no directory" : "ends inside a chunk");
        if (rc == CREC_ERR_TRUNCATED)
            break;
        if (!rc && c.type == CREC_FMT_S_HEADER)
            rc = crec_error_corrupt(&e, "a second HEADER chunk at offset %llu",
                                    (unsigned long long)off);
        if (rc && r->version >= 3) {
            /* several processes wrote the file: one may have died in the
             * middle of a chunk, and the others wrote theirs after it */
            uint64_t next = resync(r, off, &tries);
            if (!damaged) {
                char why[CREC_ERROR_MSG_MAX];
                snprintf(why, sizeof why, "%.300s; %s", e.msg,
                         next ? "chunks after it were read (a recorder was killed while "
                                "writing it)" : "nothing after it could be read");
                set_truncated(r, off, why);
            }
            damaged = 1;
            if (!next)
                break;
            off = next;
            continue;
        }
        if (rc) {
            set_truncated(r, off, e.msg);
            break;
        }
        if (c.type == CREC_FMT_S_DIRECTORY) {
            rc = damaged ? CREC_OK : scan_directory(r, &c, off, &e);
            if (rc == CREC_ERR_NOMEM)
                return crec_error_set(err, CREC_ERR_NOMEM, "%s", e.msg);
            if (rc)
                set_truncated(r, off, e.msg);
            break;
        }
        if ((rc = add_chunk(r, &cap, &c, err)) != 0)
            return rc;
        off += FMT_CHUNK_HDR + (uint64_t)c.clen;
    }
    return build_streams(r, err);
}

/* ---- open ------------------------------------------------------------------- */

static int read_header(crec_fmt_reader *r, uint64_t *start, crec_error *err)
{
    uint8_t pre[FMT_PREAMBLE_LEN];
    int rc = src_read(r, 0, pre, sizeof pre, err);
    if (rc == CREC_ERR_TRUNCATED)
        return crec_error_corrupt(err, "too short for a recording (%llu bytes)",
                                  (unsigned long long)r->size);
    if (rc)
        return rc;
    if (memcmp(pre, FMT_MAGIC, FMT_MAGIC_LEN) != 0)
        return crec_error_corrupt(err, "bad magic: not a crec recording");
    uint32_t v = fmt_get_u32(pre + FMT_PREAMBLE_VERSION);
    if (v < CREC_FMT_MIN_VERSION || v > CREC_FMT_VERSION)
        return crec_error_set(err, CREC_ERR_VERSION,
                              "unsupported format version %u (this crec reads %d to %d)", v,
                              CREC_FMT_MIN_VERSION, CREC_FMT_VERSION);
    r->version = v;
    if (fmt_get_u32(pre + 12) != 0)
        return crec_error_corrupt(err, "reserved header field is not zero");
    fmt_chunk c;
    rc = fetch_chunk(r, FMT_PREAMBLE_LEN, &c, err);
    if (rc == CREC_ERR_TRUNCATED)
        return crec_error_corrupt(err, "truncated inside the header (%llu bytes)",
                                  (unsigned long long)r->size);
    if (rc)
        return rc;
    if (c.type != CREC_FMT_S_HEADER || c.seq || c.uoff)
        return crec_error_corrupt(err, "the first chunk is not a header");
    if ((rc = inflate_chunk(r, &c, &r->cache, &r->cachecap, err)) != 0 ||
        (rc = fmt_header_decode(v, r->cache, c.ulen, &r->hdr, err)) != 0)
        return rc;
    *start = FMT_PREAMBLE_LEN + FMT_CHUNK_HDR + (uint64_t)c.clen;
    return CREC_OK;
}

static int open_common(crec_fmt_reader *r, crec_error *err)
{
    uint64_t start = 0, doff = 0, dlen = 0;
    r->dctx = fmt_zstd_dctx();
    if (!r->dctx)
        return r_nomem(r, err);
    int rc = read_header(r, &start, err);
    if (rc)
        return rc;
    if (r->pipe)
        return scan(r, start, err);
    rc = read_trailer(r, start, &doff, &dlen, err);
    if (rc == CREC_ERR_NOTFOUND)
        return scan(r, start, err);
    return rc ? rc : load_directory(r, start, doff, dlen, err);
}

/* Prefix any message with the file name, as `crec: FILE: message` wants. */
static int finish_open(crec_fmt_reader *r, int rc, crec_fmt_reader **out, crec_error *err)
{
    if (rc) {
        if (err && strncmp(err->msg, r->name, strlen(r->name)) != 0) {
            char m[CREC_ERROR_MSG_MAX];
            snprintf(m, sizeof m, "%s", err->msg);
            crec_error_set(err, err->code, "%s: %s", r->name, m);
        }
        crec_fmt_reader_free(r);
        return rc;
    }
    *out = r;
    return CREC_OK;
}

static crec_fmt_reader *reader_new(const char *name)
{
    crec_fmt_reader *r = crec_calloc(1, sizeof *r);
    char *n = crec_malloc(strlen(name) + 1);
    if (!r || !n) {
        crec_free(r);
        crec_free(n);
        return NULL;
    }
    strcpy(n, name);
    r->name = n;
    r->fd = -1;
    return r;
}

int crec_fmt_reader_open_mem(const void *data, size_t len, crec_fmt_reader **out,
                             crec_error *err)
{
    *out = NULL;
    crec_fmt_reader *r = reader_new("<memory>");
    if (!r)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    r->mem = data;
    r->memlen = len;
    r->size = len;
    return finish_open(r, open_common(r, err), out, err);
}

int crec_fmt_reader_open(const char *path, crec_fmt_reader **out, crec_error *err)
{
    int std = strcmp(path, "-") == 0;
    *out = NULL;
    crec_fmt_reader *r = reader_new(std ? "<stdin>" : path);
    if (!r)
        return crec_error_set(err, CREC_ERR_NOMEM, "%s: out of memory", path);
    r->fd = std ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        crec_error_set(err, CREC_ERR_IO, "%s: %s", path, strerror(errno));
        crec_fmt_reader_free(r);
        return CREC_ERR_IO;
    }
    r->own_fd = !std;
    struct stat st;
    if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode))
        r->pipe = 1;
    else
        r->size = (uint64_t)st.st_size;
    return finish_open(r, open_common(r, err), out, err);
}

int crec_fmt_reader_spool(const char *path, char *out, size_t size, int *fd, crec_error *err)
{
    crec_fmt_reader *r = NULL;
    struct stat st;
    int rc, mfd;

    *fd = -1;
    if (strlen(path) >= size)
        return crec_error_set(err, CREC_ERR_ARG, "%.64s...: path too long", path);
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(out, size, "%s", path);
        return CREC_OK;
    }
    if (strcmp(path, "-") == 0 && fstat(0, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(out, size, "/proc/self/fd/0"); /* a file given as standard input */
        return CREC_OK;
    }
    /* Read it once, as a pipe: the scan keeps every byte it read. */
    rc = crec_fmt_reader_open(path, &r, err);
    if (rc != CREC_OK)
        return rc;
    mfd = memfd_create("crec-recording", MFD_CLOEXEC);
    if (mfd < 0) {
        rc = crec_error_set(err, CREC_ERR_IO, "%s: can't keep the recording read from it: %s",
                            r->name, strerror(errno));
        crec_fmt_reader_free(r);
        return rc;
    }
    for (size_t done = 0; done < r->memlen;) {
        ssize_t k = write(mfd, r->mem + done, r->memlen - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rc = crec_error_set(err, CREC_ERR_IO, "%s: can't keep the recording read from it: "
                                "%s", r->name, k < 0 ? strerror(errno) : "short write");
            close(mfd);
            crec_fmt_reader_free(r);
            return rc;
        }
        done += (size_t)k;
    }
    crec_fmt_reader_free(r);
    *fd = mfd;
    snprintf(out, size, "/proc/self/fd/%d", mfd);
    return CREC_OK;
}

void crec_fmt_reader_free(crec_fmt_reader *r)
{
    if (!r)
        return;
    if (r->own_fd)
        close(r->fd);
    crec_fmt_header_clear(&r->hdr);
    crec_free(r->pipebuf);
    crec_free(r->chunks);
    crec_free(r->streams);
    crec_free(r->vis);
    crec_free(r->procs);
    crec_free(r->zbuf);
    crec_free(r->cache);
    for (size_t i = 0; i < FMT_CHUNK_CACHE_N; i++) {
        ccache_end_stream(&r->ccache[i]);
        crec_free(r->ccache[i].data);
    }
    crec_free(r->blobs);
    crec_free(r->blob_checked);
    for (size_t i = 0; i < FMT_BLOB_CACHE_N; i++)
        crec_free(r->bcache[i].data);
    ZSTD_freeDCtx(r->dctx);
    crec_free(r->name);
    crec_free(r);
}

/* ---- queries ------------------------------------------------------------------ */

const crec_fmt_header *crec_fmt_reader_header(const crec_fmt_reader *r)
{
    return &r->hdr;
}

int crec_fmt_reader_truncated(const crec_fmt_reader *r, uint64_t *at, const char **why)
{
    if (at)
        *at = r->truncated ? r->trunc_at : r->size;
    if (why)
        *why = r->truncated ? r->why : r->sel_why;
    return r->truncated || r->sel_cut;
}

static const struct rstream *find_stream(const crec_fmt_reader *r, int type, uint32_t tid);

/* Does process `proc` have an END record in its PROCESS stream? */
static int proc_ended(crec_fmt_reader *r, uint32_t proc)
{
    uint32_t sel = r->sel;
    crec_fmt_cursor *c = NULL;
    const uint8_t *body;
    size_t len;
    int kind, ended = 0, rc;

    r->sel = proc;
    rc = crec_fmt_cursor_open(r, CREC_FMT_S_PROCESS, 0, 0, &c, NULL);
    while (rc == CREC_OK && (rc = crec_fmt_cursor_next(c, &kind, &body, &len, NULL)) == CREC_OK)
        if (kind == CREC_FMT_K_PROCESS && len > 0 && body[0] == CREC_FMT_PR_END)
            ended = 1;
    crec_fmt_cursor_free(c);
    r->sel = sel;
    return ended;
}

/* Make process `proc` the one whose streams are read. */
static int select_proc(crec_fmt_reader *r, uint32_t proc, crec_error *err)
{
    size_t n = 0;
    int has_process_stream = 0;

    if (!bsearch(&proc, r->procs, r->nprocs, sizeof *r->procs, cmp_u32))
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: no process %u in the recording",
                              r->name, proc);
    crec_free(r->vis);
    r->vis = crec_malloc((r->nstreams ? r->nstreams : 1) * sizeof *r->vis);
    if (!r->vis) {
        r->nvis = 0;
        return r_nomem(r, err);
    }
    for (size_t i = 0; i < r->nstreams; i++) {
        const struct rstream *st = &r->streams[i];
        if (!crec_fmt_stream_per_process(st->type) || st->proc == proc)
            r->vis[n++] = i;
        if (st->type == CREC_FMT_S_PROCESS && st->proc == proc)
            has_process_stream = 1;
    }
    r->nvis = n;
    r->sel = proc;
    /* A process with a PROCESS stream but no end: its recorder was killed,
     * and its streams end where its last chunks did. */
    r->sel_cut = r->version >= 3 && has_process_stream && !proc_ended(r, proc);
    r->sel_why[0] = '\0';
    if (r->sel_cut)
        snprintf(r->sel_why, sizeof r->sel_why,
                 "process %u has no end: its recorder was killed", proc);
    return CREC_OK;
}

int crec_fmt_reader_select(crec_fmt_reader *r, uint32_t proc, crec_error *err)
{
    return select_proc(r, proc, err);
}

uint32_t crec_fmt_reader_selected(const crec_fmt_reader *r)
{
    return r->sel;
}

void crec_fmt_reader_totals(const crec_fmt_reader *r, uint64_t *chunks, uint64_t *raw,
                            uint64_t *comp)
{
    *chunks = *raw = *comp = 0;
    for (size_t i = 0; i < r->nstreams; i++) {
        *chunks += r->streams[i].n;
        *raw += r->streams[i].raw;
        *comp += r->streams[i].comp;
    }
}

size_t crec_fmt_reader_procs(const crec_fmt_reader *r, const uint32_t **procs)
{
    if (procs)
        *procs = r->procs;
    return r->nprocs;
}

int crec_fmt_kf_reached(const crec_fmt_reader *r, const crec_fmt_keyframe *kf)
{
    const struct rstream *reads = find_stream(r, CREC_FMT_S_READS, kf->tid);
    const struct rstream *events = find_stream(r, CREC_FMT_S_EVENTS, kf->tid);
    const struct rstream *seq = find_stream(r, CREC_FMT_S_SEQ, kf->tid);

    /* the blobs those records name are in the file before them (the writer
     * puts BLOBS first), so the streams' positions are all a point needs */
    return kf->reads_off <= (reads ? reads->raw : 0) &&
           kf->events_off <= (events ? events->raw : 0) && kf->seq_off <= (seq ? seq->raw : 0);
}

size_t crec_fmt_reader_nstreams(const crec_fmt_reader *r)
{
    return r->nvis;
}

uint64_t crec_fmt_reader_size(const crec_fmt_reader *r)
{
    return r->size;
}

int crec_fmt_reader_stream(const crec_fmt_reader *r, size_t i, crec_fmt_stream_info *info,
                           crec_error *err)
{
    if (i >= r->nvis)
        return crec_error_set(err, CREC_ERR_ARG, "%s: no stream %zu (there are %zu)", r->name, i,
                              r->nvis);
    const struct rstream *s = &r->streams[r->vis[i]];
    *info = (crec_fmt_stream_info){s->type, s->tid, s->n, s->raw, s->comp};
    return CREC_OK;
}

static const struct rstream *find_stream(const crec_fmt_reader *r, int type, uint32_t tid)
{
    size_t lo = 0, hi = r->nstreams;
    uint32_t proc = crec_fmt_stream_per_process(type) ? r->sel : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct rstream *s = &r->streams[mid];
        if (s->type == type && s->proc == proc && s->tid == tid)
            return s;
        if (s->type < type || (s->type == type && (s->proc < proc ||
                                                   (s->proc == proc && s->tid < tid))))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Index in r->chunks of the chunk of stream s holding offset off. */
static size_t chunk_at(const crec_fmt_reader *r, const struct rstream *s, uint64_t off)
{
    size_t lo = s->first, hi = s->first + s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->chunks[mid].uoff <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Keep the chunk cache under FMT_CHUNK_CACHE_BYTES, dropping the least
 * recently used chunks but `keep`. */
static void ccache_trim(crec_fmt_reader *r, const struct chunkcache *keep)
{
    for (;;) {
        struct chunkcache *old = NULL;
        size_t total = 0;
        for (size_t k = 0; k < FMT_CHUNK_CACHE_N; k++) {
            struct chunkcache *c = &r->ccache[k];
            total += c->cap;
            if (c != keep && c->cap && (!old || c->used < old->used))
                old = c;
        }
        if (total <= FMT_CHUNK_CACHE_BYTES || !old)
            return;
        ccache_end_stream(old);
        crec_free(old->data);
        memset(old, 0, sizeof *old);
    }
}

/* Chunk i decompressed, from the cache or loaded into its least recently
 * used slot. */
/* Start chunk i in slot c: its payload checked and kept, nothing decompressed. */
static int ccache_start(crec_fmt_reader *r, struct chunkcache *c, size_t i, crec_error *err)
{
    fmt_chunk f;
    char d[96];
    int rc = fetch_checked(r, i, &f, err);
    unsigned long long fcs;

    if (rc)
        return rc;
    fcs = ZSTD_getFrameContentSize(r->zbuf, f.clen);
    if (fcs == ZSTD_CONTENTSIZE_ERROR || (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != f.ulen))
        return crec_error_corrupt(err, "bad zstd frame in %s", chunk_desc(&f, d, sizeof d));
    if (!grow(&c->data, &c->cap, f.ulen) || !(c->z = crec_malloc(f.clen ? f.clen : 1)) ||
        !(c->ds = fmt_zstd_dctx()) ||
        ZSTD_isError(ZSTD_DCtx_setParameter(c->ds, ZSTD_d_stableOutBuffer, 1))) {
        ccache_end_stream(c);
        return r_nomem(r, err);
    }
    memcpy(c->z, r->zbuf, f.clen);
    c->zlen = f.clen;
    c->chunk = i;
    return CREC_OK;
}

/* Decompress slot c's chunk on until at least `end` bytes are there. */
static int ccache_extend(crec_fmt_reader *r, struct chunkcache *c, size_t end, crec_error *err)
{
    const fmt_chunk *e = &r->chunks[c->chunk];
    ZSTD_outBuffer out = {c->data, e->ulen, c->have};
    char d[96];

    while (out.pos < end) {
        size_t step = c->zlen - c->zpos < (64u << 10) ? c->zlen - c->zpos : (64u << 10);
        ZSTD_inBuffer in = {c->z, c->zpos + step, c->zpos};
        size_t rc = ZSTD_decompressStream(c->ds, &out, &in);
        if (ZSTD_isError(rc) || (in.pos == c->zpos && out.pos == c->have && step == 0)) {
            if (ZSTD_isError(rc) && ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
                return r_nomem(r, err);
            return crec_error_corrupt(err, "%s holds %zu bytes, not %u",
                                      chunk_desc(e, d, sizeof d), out.pos, e->ulen);
        }
        c->zpos = in.pos, c->have = out.pos;
    }
    if (c->have == e->ulen)
        ccache_end_stream(c);
    return CREC_OK;
}

/*
 * Chunk i, decompressed at least up to byte `end`, from the cache or loaded
 * into its least recently used slot.  A chunk is decompressed only as far
 * as it is read: a BLOBS chunk can hold all of a program's code, and a
 * query copies in a few pages of it.
 */
static int cached_chunk(crec_fmt_reader *r, size_t i, size_t end, const uint8_t **data,
                        crec_error *err)
{
    struct chunkcache *slot = &r->ccache[0];
    int rc;

    for (size_t k = 0; k < FMT_CHUNK_CACHE_N; k++) {
        struct chunkcache *c = &r->ccache[k];
        if (c->used && c->chunk == i) {
            slot = c;
            break;
        }
        if (c->used < slot->used)
            slot = c;
    }
    if (!slot->used || slot->chunk != i) {
        ccache_end_stream(slot);
        slot->used = 0, slot->have = 0;
        if ((rc = ccache_start(r, slot, i, err)) != 0)
            return rc;
    }
    slot->used = ++r->ccache_tick;
    if (slot->have < end && (rc = ccache_extend(r, slot, end, err)) != 0) {
        ccache_end_stream(slot);
        slot->used = 0;
        return rc;
    }
    *data = slot->data;
    ccache_trim(r, slot);
    return CREC_OK;
}

int crec_fmt_read_at(crec_fmt_reader *r, int type, uint32_t tid, uint64_t off, void *buf,
                     size_t n, crec_error *err)
{
    const struct rstream *s = find_stream(r, type, tid);
    if (!s || off > s->raw || n > s->raw - off)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: %s thread %u: range %llu+%zu past the end",
                              r->name, crec_fmt_stream_name(type), tid, (unsigned long long)off, n);
    uint8_t *b = buf;
    while (n) {
        size_t i = chunk_at(r, s, off);
        const fmt_chunk *c = &r->chunks[i];
        size_t at = (size_t)(off - c->uoff), k = c->ulen - at;
        const uint8_t *data;
        if (k > n)
            k = n;
        int rc = cached_chunk(r, i, at + k, &data, err);
        if (rc)
            return rc;
        memcpy(b, data + at, k);
        b += k;
        off += k;
        n -= k;
    }
    return CREC_OK;
}

int crec_fmt_reader_verify(crec_fmt_reader *r, crec_error *err)
{
    for (size_t i = 0; i < r->nchunks; i++) {
        fmt_chunk c;
        const fmt_chunk *e = &r->chunks[i];
        char d[96];
        int rc = fetch_chunk(r, e->file_off, &c, err);
        if (rc == CREC_ERR_TRUNCATED)
            return crec_error_corrupt(err, "%s is past the end of the file",
                                      chunk_desc(e, d, sizeof d));
        if (rc)
            return rc;
        if (c.type != e->type || c.proc != e->proc || c.tid != e->tid || c.seq != e->seq ||
            c.uoff != e->uoff || c.clen != e->clen || c.ulen != e->ulen || c.sum != e->sum)
            return crec_error_corrupt(err, "chunk at offset %llu does not match the directory (%s)",
                                      (unsigned long long)e->file_off, chunk_desc(e, d, sizeof d));
    }
    return CREC_OK;
}

/* ---- sequential cursor ------------------------------------------------------ */

struct crec_fmt_cursor {
    crec_fmt_reader *r;
    const struct rstream *s; /* NULL: an empty stream */
    uint64_t off;            /* stream offset of the next byte */
    size_t ci;               /* chunk held in data, SIZE_MAX for none */
    uint8_t *data;
    size_t cap;
    uint8_t *body; /* the last framed record's body */
    size_t bodycap;
};

int crec_fmt_cursor_open(crec_fmt_reader *r, int type, uint32_t tid, uint64_t off,
                         crec_fmt_cursor **out, crec_error *err)
{
    *out = NULL;
    const struct rstream *s = find_stream(r, type, tid);
    if (off > (s ? s->raw : 0))
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: %s thread %u has no offset %llu",
                              r->name, crec_fmt_stream_name(type), tid,
                              (unsigned long long)off);
    crec_fmt_cursor *c = crec_calloc(1, sizeof *c);
    if (!c)
        return r_nomem(r, err);
    *c = (crec_fmt_cursor){.r = r, .s = s, .off = off, .ci = SIZE_MAX};
    *out = c;
    return CREC_OK;
}

void crec_fmt_cursor_free(crec_fmt_cursor *c)
{
    if (!c)
        return;
    crec_free(c->data);
    crec_free(c->body);
    crec_free(c);
}

uint64_t crec_fmt_cursor_offset(const crec_fmt_cursor *c)
{
    return c->off;
}

static uint64_t cursor_left(const crec_fmt_cursor *c)
{
    return c->s ? c->s->raw - c->off : 0;
}

/*
 * A stream that ends inside a record is corrupt, except in a truncated file,
 * where the recorder was stopped mid-way: then it is just the end.
 */
static int cursor_cut(const crec_fmt_cursor *c, crec_error *err)
{
    if (c->r->truncated || c->r->sel_cut)
        return crec_error_set(err, CREC_ERR_TRUNCATED,
                              "stream %s thread %u ends inside a record (truncated file)",
                              crec_fmt_stream_name(c->s->type), c->s->tid);
    return crec_error_corrupt(err, "stream %s thread %u ends inside a record",
                              crec_fmt_stream_name(c->s->type), c->s->tid);
}

/*
 * Make the chunk holding c->off current, and return how many of its bytes
 * are left from there.  Sequential reading moves to the next chunk without
 * a search; only the first read after open does a binary search.
 */
static int cursor_fill(crec_fmt_cursor *c, size_t *avail, crec_error *err)
{
    const fmt_chunk *ch = c->ci != SIZE_MAX ? &c->r->chunks[c->ci] : NULL;
    if (!ch || c->off >= ch->uoff + ch->ulen || c->off < ch->uoff) {
        size_t i = ch && c->ci + 1 < c->s->first + c->s->n && ch[1].uoff == c->off
                       ? c->ci + 1
                       : chunk_at(c->r, c->s, c->off);
        c->ci = SIZE_MAX;
        int rc = load_chunk(c->r, i, &c->data, &c->cap, err);
        if (rc)
            return rc;
        c->ci = i;
        ch = &c->r->chunks[i];
    }
    *avail = (size_t)(ch->uoff + ch->ulen - c->off);
    return CREC_OK;
}

static const uint8_t *cursor_ptr(const crec_fmt_cursor *c)
{
    return c->data + (size_t)(c->off - c->r->chunks[c->ci].uoff);
}

int crec_fmt_cursor_read(crec_fmt_cursor *c, void *buf, size_t n, crec_error *err)
{
    if (n == 0)
        return CREC_OK;
    if (cursor_left(c) == 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "end of stream");
    if (n > cursor_left(c))
        return cursor_cut(c, err);
    uint8_t *b = buf;
    while (n) {
        size_t k;
        int rc = cursor_fill(c, &k, err);
        if (rc)
            return rc;
        if (k > n)
            k = n;
        memcpy(b, cursor_ptr(c), k);
        b += k;
        c->off += k;
        n -= k;
    }
    return CREC_OK;
}

int crec_fmt_cursor_varint(crec_fmt_cursor *c, uint64_t *v, crec_error *err)
{
    uint8_t bytes[CREC_VARINT_MAX];
    size_t avail;
    int n;

    *v = 0;
    if (cursor_left(c) == 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "end of stream");
    int rc = cursor_fill(c, &avail, err);
    if (rc)
        return rc;
    /* Fast path: the whole varint is in the current chunk. */
    n = crec_varint_get(cursor_ptr(c), avail, v);
    if (n > 0) {
        c->off += (uint64_t)n;
        return CREC_OK;
    }
    /* Slow path: byte by byte across a chunk boundary, the same decoder. */
    for (size_t i = 0; n == 0 && i < CREC_VARINT_MAX; i++) {
        rc = crec_fmt_cursor_read(c, &bytes[i], 1, err);
        if (rc == CREC_ERR_NOTFOUND && i > 0)
            rc = cursor_cut(c, err);
        if (rc)
            return rc;
        n = crec_varint_get(bytes, i + 1, v);
    }
    if (n > 0)
        return CREC_OK;
    return crec_error_corrupt(err, "varint too long in stream %s thread %u",
                              crec_fmt_stream_name(c->s->type), c->s->tid);
}

int crec_fmt_cursor_seq(crec_fmt_cursor *c, crec_fmt_seq_ctx *ctx, crec_fmt_seq *e,
                        crec_error *err)
{
    uint64_t a, b;
    uint8_t kind;
    int rc = crec_fmt_cursor_varint(c, &a, err);

    e->kind = 0;
    if (rc)
        return rc;
    if ((rc = crec_fmt_cursor_varint(c, &b, err)) != 0)
        return rc == CREC_ERR_NOTFOUND ? cursor_cut(c, err) : rc;
    if (c->r->hdr.version < 2) {
        e->seq = a, e->icount = b;
        return CREC_OK;
    }
    if ((rc = crec_fmt_cursor_read(c, &kind, 1, err)) != 0)
        return rc == CREC_ERR_NOTFOUND ? cursor_cut(c, err) : rc;
    return fmt_seq_apply(ctx, a, b, kind, e, err);
}

int crec_fmt_cursor_next(crec_fmt_cursor *c, int *kind, const uint8_t **body, size_t *len,
                         crec_error *err)
{
    uint8_t k;
    uint64_t n;
    int rc = crec_fmt_cursor_read(c, &k, 1, err);
    if (rc)
        return rc;
    if ((rc = crec_fmt_cursor_varint(c, &n, err)) != 0)
        return rc == CREC_ERR_NOTFOUND ? cursor_cut(c, err) : rc;
    if (n <= CREC_FMT_MAX_RECORD && n > cursor_left(c) && (c->r->truncated || c->r->sel_cut))
        return cursor_cut(c, err);
    if (n > CREC_FMT_MAX_RECORD || n > cursor_left(c))
        return crec_error_corrupt(err, "record length %llu out of range in stream %s thread %u at offset %llu",
                                  (unsigned long long)n, crec_fmt_stream_name(c->s->type),
                                  c->s->tid, (unsigned long long)c->off);
    if (!grow(&c->body, &c->bodycap, n ? (size_t)n : 1))
        return r_nomem(c->r, err);
    if ((rc = crec_fmt_cursor_read(c, c->body, (size_t)n, err)) != 0)
        return rc;
    *kind = k;
    *body = c->body;
    *len = (size_t)n;
    return CREC_OK;
}

/* ---- blobs ---------------------------------------------------------------------- */

static int cmp_blob(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(crec_fmt_hash));
}

/* By hash, then paged before whole (a whole copy is kept over a paged
 * one), then by place in the stream. */
static int cmp_blob_place(const void *a, const void *b)
{
    const crec_fmt_blob_loc *x = a, *y = b;
    int c = cmp_blob(a, b);
    int xp = !!(x->len & CREC_FMT_BLOB_PAGED), yp = !!(y->len & CREC_FMT_BLOB_PAGED);
    if (c)
        return c;
    if (xp != yp)
        return xp ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int blob_add(crec_fmt_reader *r, size_t *cap, const crec_fmt_blob_loc *e,
                    crec_error *err)
{
    crec_fmt_blob_loc *p = crec_grow(r->blobs, cap, r->nblobs + 1, sizeof *p, 64);

    if (!p)
        return r_nomem(r, err);
    r->blobs = p;
    r->blobs[r->nblobs++] = *e;
    return CREC_OK;
}

/* One pass over BLOBS: (hash, offset, length) of each blob, sorted. */
static int build_blob_index(crec_fmt_reader *r, crec_error *err)
{
    crec_fmt_cursor *c;
    size_t cap = 0;
    int rc;

    crec_free(r->blobs);
    r->blobs = NULL;
    r->nblobs = 0;
    rc = crec_fmt_cursor_open(r, CREC_FMT_S_BLOBS, 0, 0, &c, err);
    while (!rc) {
        int kind;
        const uint8_t *body;
        size_t len;
        crec_fmt_blob_loc e;
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) != 0)
            break;
        if ((kind != CREC_FMT_K_BLOB && kind != CREC_FMT_K_PAGED) || len < 16) {
            rc = crec_error_corrupt(err, "bad record (kind 0x%02x, %zu bytes) in stream BLOBS",
                                    kind, len);
            break;
        }
        if (kind == CREC_FMT_K_PAGED && r->version < 5) {
            rc = crec_error_corrupt(err, "%s: a PAGED record in a version %u file (paged code "
                                    "came with version 5)", r->name, r->version);
            break;
        }
        memcpy(e.hash.b, body, 16);
        e.len = len - 16;
        e.off = crec_fmt_cursor_offset(c) - e.len;
        if (kind == CREC_FMT_K_PAGED)
            e.len |= CREC_FMT_BLOB_PAGED;
        rc = blob_add(r, &cap, &e, err);
    }
    crec_fmt_cursor_free(c);
    if (rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_TRUNCATED)
        return rc;
    if (r->nblobs) {
        /* The same bytes may be stored twice (each ring segment stores the
         * data blobs it names; each process of a version-3 recording may
         * store one another has): the table keeps the last copy. */
        size_t n = 0;
        crec_sort(r->blobs, r->nblobs, sizeof *r->blobs, cmp_blob_place);
        for (size_t i = 0; i < r->nblobs; i++)
            if (i + 1 == r->nblobs || cmp_blob(&r->blobs[i], &r->blobs[i + 1]) != 0)
                r->blobs[n++] = r->blobs[i];
        r->nblobs = n;
    }
    crec_free(r->blob_checked); /* found by the scan: right by construction */
    r->blob_checked = crec_malloc(r->nblobs ? r->nblobs : 1);
    if (!r->blob_checked)
        return r_nomem(r, err);
    memset(r->blob_checked, 1, r->nblobs);
    r->blobs_built = 1;
    return CREC_OK;
}

int crec_fmt_blob_table(crec_fmt_reader *r, const crec_fmt_blob_loc **locs, size_t *n,
                        crec_error *err)
{
    *locs = NULL;
    *n = 0;
    if (!r->blobs_built) {
        int rc = build_blob_index(r, err);
        if (rc)
            return rc;
    }
    *locs = r->blobs;
    *n = r->nblobs;
    return CREC_OK;
}

int crec_fmt_blob_table_set(crec_fmt_reader *r, const crec_fmt_blob_loc *locs, size_t n,
                            crec_error *err)
{
    const struct rstream *s = find_stream(r, CREC_FMT_S_BLOBS, 0);
    uint64_t raw = s ? s->raw : 0;
    crec_fmt_blob_loc *copy;
    uint8_t *checked;

    for (size_t i = 0; i < n; i++) {
        if (locs[i].off > raw || (locs[i].len & ~CREC_FMT_BLOB_PAGED) > raw - locs[i].off)
            return crec_error_corrupt(err, "%s: blob table entry %zu lies past the end of "
                                           "BLOBS", r->name, i);
        if (i > 0 && cmp_blob(&locs[i - 1].hash, &locs[i].hash) >= 0)
            return crec_error_corrupt(err, "%s: blob table not sorted by hash", r->name);
    }
    copy = crec_malloc((n ? n : 1) * sizeof *copy);
    checked = crec_calloc(n ? n : 1, 1);
    if (!copy || !checked) {
        crec_free(copy);
        crec_free(checked);
        return r_nomem(r, err);
    }
    if (n)
        memcpy(copy, locs, n * sizeof *copy);
    crec_free(r->blobs);
    crec_free(r->blob_checked);
    r->blobs = copy;
    r->blob_checked = checked;
    r->nblobs = n;
    r->blobs_built = 1;
    return CREC_OK;
}

/* The table entry of a blob (the first call scans BLOBS, unless a table was given). */
static int blob_find(crec_fmt_reader *r, const crec_fmt_hash *hash, const crec_fmt_blob_loc **e,
                     crec_error *err)
{
    int rc;

    if (!r->blobs_built && (rc = build_blob_index(r, err)) != 0)
        return rc;
    *e = !r->nblobs ? NULL : bsearch(hash, r->blobs, r->nblobs, sizeof *r->blobs, cmp_blob);
    if (!*e)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: no such blob", r->name);
    return CREC_OK;
}

/* The cache slot holding `hash`, or NULL. */
static struct blobcache *bcache_find(crec_fmt_reader *r, const crec_fmt_hash *hash)
{
    for (size_t i = 0; i < FMT_BLOB_CACHE_N; i++)
        if (r->bcache[i].used && memcmp(&r->bcache[i].h, hash, sizeof *hash) == 0)
            return &r->bcache[i];
    return NULL;
}

/* Drop the least recently used blob but `keep`.  @return 0 if none was left. */
static int bcache_evict(crec_fmt_reader *r, const struct blobcache *keep)
{
    struct blobcache *old = NULL;

    for (size_t i = 0; i < FMT_BLOB_CACHE_N; i++) {
        struct blobcache *b = &r->bcache[i];
        if (b->used && b != keep && (!old || b->used < old->used))
            old = b;
    }
    if (!old)
        return 0;
    r->bcache_bytes -= old->len;
    crec_free(old->data);
    memset(old, 0, sizeof *old);
    return 1;
}

static struct blobcache *bcache_free_slot(crec_fmt_reader *r)
{
    for (size_t i = 0; i < FMT_BLOB_CACHE_N; i++)
        if (!r->bcache[i].used)
            return &r->bcache[i];
    return NULL;
}

static int blob_header_ok(crec_fmt_reader *r, const crec_fmt_blob_loc *e, crec_error *err);

/*
 * A PAGED record (docs/FORMAT.md, BLOBS): the length of the code it names
 * and where its list of page hashes starts.  Checked once: the length fits
 * the record, the list is exactly one hash a page.
 */
static int paged_head(crec_fmt_reader *r, const crec_fmt_blob_loc *e, uint64_t *len,
                      uint64_t *list, crec_error *err)
{
    uint64_t body = e->len & ~CREC_FMT_BLOB_PAGED, npages;
    uint8_t head[FMT_MAX_VARINT];
    crec_fmt_cur c = {head, body < sizeof head ? (size_t)body : sizeof head, 0};
    int rc;

    if (!r->blob_checked[e - r->blobs]) {
        if ((rc = blob_header_ok(r, e, err)) != 0)
            return rc;
        r->blob_checked[e - r->blobs] = 1;
    }
    if ((rc = crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, e->off, head, c.len, err)) != 0 ||
        (rc = fmt_cur_varint(&c, len, "paged code length", err)) != 0)
        return rc;
    if (*len > CREC_FMT_MAX_PAGED)
        return crec_error_corrupt(err, "%s: paged code of %" PRIu64 " bytes (at most %llu)",
                                  r->name, *len, (unsigned long long)CREC_FMT_MAX_PAGED);
    npages = (*len + CREC_FMT_PAGE_SIZE - 1) / CREC_FMT_PAGE_SIZE;
    if (body - c.pos != 16 * npages)
        return crec_error_corrupt(err, "%s: paged code of %" PRIu64 " bytes lists %" PRIu64
                                  " bytes of page hashes, not %" PRIu64, r->name, *len,
                                  body - c.pos, 16 * npages);
    *list = e->off + c.pos;
    return CREC_OK;
}

/*
 * Page `i` (of `n` bytes) of the paged code `e` whose hash list starts at
 * `list`: its bytes, checked against the page's hash, or zeros and
 * *stored 0 when the recording never stored them (the program never ran it).
 */
/* Page i's hash in the list at `list`, and its blob's table entry (*p
 * NULL: the page is not stored). */
static int paged_page_loc(crec_fmt_reader *r, uint64_t list, uint64_t i, crec_fmt_hash *hash,
                          const crec_fmt_blob_loc **p, crec_error *err)
{
    int rc = crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, list + 16 * i, hash->b, 16, err);

    *p = !rc && r->nblobs ? bsearch(hash, r->blobs, r->nblobs, sizeof *r->blobs, cmp_blob)
                          : NULL;
    return rc;
}

static int paged_page(crec_fmt_reader *r, uint64_t list, uint64_t i, uint8_t *page, size_t n,
                      int *stored, crec_error *err)
{
    crec_fmt_blob_loc key;
    const crec_fmt_blob_loc *p;
    crec_fmt_hash h;
    int rc = paged_page_loc(r, list, i, &key.hash, &p, err);

    *stored = 0;
    if (rc)
        return rc;
    if (!p) {
        memset(page, 0, n);
        return CREC_OK;
    }
    if (p->len != n)
        return crec_error_corrupt(err, "%s: a page of paged code is a blob of %llu bytes, not "
                                  "%zu", r->name, (unsigned long long)(p->len &
                                  ~CREC_FMT_BLOB_PAGED), n);
    if ((rc = crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, p->off, page, n, err)) != 0)
        return rc;
    h = crec_fmt_hash_bytes(page, n);
    if (memcmp(&h, &key.hash, sizeof h) != 0)
        return crec_error_corrupt(err, "%s: blob content does not match its hash", r->name);
    *stored = 1;
    return CREC_OK;
}

/* Do bytes [off, off+n) lie in a blob of len bytes? */
static int blob_range_ok(crec_fmt_reader *r, uint64_t off, uint64_t n, uint64_t len,
                         crec_error *err)
{
    if (off > len || n > len - off)
        return crec_error_set(err, CREC_ERR_ARG, "%s: bytes %" PRIu64 "+%" PRIu64 " are past "
                              "the end of a blob of %" PRIu64, r->name, off, n, len);
    return CREC_OK;
}

/*
 * Walk the pages of blob e that bytes [off, off+n) lie on: with buf, copy
 * them there (zeros where not stored); *all says whether every one was
 * stored.  A whole blob is one stored piece.
 */
static int paged_walk(crec_fmt_reader *r, const crec_fmt_blob_loc *e, uint64_t off, uint64_t n,
                      uint8_t *buf, int *all, crec_error *err)
{
    uint64_t len, list;
    uint8_t page[CREC_FMT_PAGE_SIZE];
    int rc = paged_head(r, e, &len, &list, err);

    *all = 1;
    if (rc || (rc = blob_range_ok(r, off, n, len, err)) != 0)
        return rc;
    for (uint64_t at = off; at < off + n;) {
        uint64_t i = at / CREC_FMT_PAGE_SIZE, base = i * CREC_FMT_PAGE_SIZE;
        size_t pn = len - base < CREC_FMT_PAGE_SIZE ? (size_t)(len - base) : CREC_FMT_PAGE_SIZE;
        uint64_t end = base + pn < off + n ? base + pn : off + n;
        int stored;
        if (!buf) { /* only whether it is stored: no bytes read */
            crec_fmt_hash h;
            const crec_fmt_blob_loc *p;
            if ((rc = paged_page_loc(r, list, i, &h, &p, err)) != 0)
                return rc;
            stored = p != NULL;
        } else {
            if ((rc = paged_page(r, list, i, page, pn, &stored, err)) != 0)
                return rc;
            memcpy(buf + (at - off), page + (at - base), (size_t)(end - at));
        }
        *all &= stored;
        at = end;
    }
    return CREC_OK;
}

/* The length of the bytes blob e names. */
static int loc_len(crec_fmt_reader *r, const crec_fmt_blob_loc *e, uint64_t *len,
                   crec_error *err)
{
    uint64_t list;

    if (!(e->len & CREC_FMT_BLOB_PAGED)) {
        *len = e->len;
        return CREC_OK;
    }
    return paged_head(r, e, len, &list, err);
}

/* Read blob e, check it against its hash (a paged one page by page), and cache it. */
static int bcache_load(crec_fmt_reader *r, const crec_fmt_blob_loc *e, struct blobcache **out,
                       crec_error *err)
{
    struct blobcache *slot;
    uint64_t blen;
    uint8_t *p;
    crec_fmt_hash h;
    int rc = loc_len(r, e, &blen, err), all;

    if (rc)
        return rc;
    if (!(p = crec_malloc(blen ? (size_t)blen : 1)))
        return r_nomem(r, err);
    if (e->len & CREC_FMT_BLOB_PAGED) {
        rc = paged_walk(r, e, 0, blen, p, &all, err);
    } else {
        rc = crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, e->off, p, (size_t)blen, err);
        if (!rc) {
            h = crec_fmt_hash_bytes(p, (size_t)blen);
            if (memcmp(&h, &e->hash, sizeof h) != 0)
                rc = crec_error_corrupt(err, "%s: blob content does not match its hash",
                                        r->name);
        }
    }
    if (rc) {
        crec_free(p);
        return rc;
    }
    if (!(slot = bcache_free_slot(r))) {
        bcache_evict(r, NULL);
        slot = bcache_free_slot(r);
    }
    *slot = (struct blobcache){e->hash, p, (size_t)blen, ++r->bcache_tick};
    r->bcache_bytes += slot->len;
    while (r->bcache_bytes > FMT_BLOB_CACHE_BYTES && bcache_evict(r, slot))
        ;
    *out = slot;
    return CREC_OK;
}

int crec_fmt_blob_view(crec_fmt_reader *r, const crec_fmt_hash *hash, const uint8_t **data,
                       size_t *len, crec_error *err)
{
    struct blobcache *b;
    const crec_fmt_blob_loc *e;
    int rc;

    *data = NULL;
    *len = 0;
    b = bcache_find(r, hash);
    if (!b && ((rc = blob_find(r, hash, &e, err)) != 0 || (rc = bcache_load(r, e, &b, err)) != 0))
        return rc;
    b->used = ++r->bcache_tick;
    *data = b->data;
    *len = b->len;
    return CREC_OK;
}

/*
 * Does the BLOB record before the bytes at e->off name e's hash and length?
 * A table given by crec_fmt_blob_table_set() is checked this way before a
 * part of a blob is read: the bytes of a part can't be checked against the
 * hash of the whole blob.
 */
static int blob_header_ok(crec_fmt_reader *r, const crec_fmt_blob_loc *e, crec_error *err)
{
    uint8_t head[1 + FMT_MAX_VARINT + 16];
    int paged = !!(e->len & CREC_FMT_BLOB_PAGED);
    uint64_t blen = e->len & ~CREC_FMT_BLOB_PAGED;
    size_t v = fmt_varint_len(blen + 16);
    crec_fmt_cur c = {head + 1, v, 0};
    uint64_t body;
    int rc;

    if (e->off < 17 + v)
        return crec_error_corrupt(err, "%s: blob table entry at %llu is not after a record "
                                  "header", r->name, (unsigned long long)e->off);
    rc = crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, e->off - 17 - v, head, 17 + v, err);
    if (rc)
        return rc;
    if (head[0] != (paged ? CREC_FMT_K_PAGED : CREC_FMT_K_BLOB) ||
        fmt_cur_varint(&c, &body, "length", NULL) != CREC_OK || body != blen + 16 ||
        memcmp(head + 1 + v, e->hash.b, 16) != 0)
        return crec_error_corrupt(err, "%s: blob table entry at %llu does not match the "
                                  "BLOB record there", r->name, (unsigned long long)e->off);
    return CREC_OK;
}

int crec_fmt_blob_size(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t *len,
                       crec_error *err)
{
    const crec_fmt_blob_loc *e;
    int rc = blob_find(r, hash, &e, err);

    *len = 0;
    return rc ? rc : loc_len(r, e, len, err);
}

int crec_fmt_blob_recorded(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t off,
                           uint64_t n, int *all, crec_error *err)
{
    const crec_fmt_blob_loc *e;
    int rc = blob_find(r, hash, &e, err);

    *all = 0;
    if (rc)
        return rc;
    if (e->len & CREC_FMT_BLOB_PAGED)
        return paged_walk(r, e, off, n, NULL, all, err);
    if ((rc = blob_range_ok(r, off, n, e->len, err)) != 0)
        return rc;
    *all = 1;
    return CREC_OK;
}

int crec_fmt_blob_read(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t off, void *buf,
                       size_t n, crec_error *err)
{
    const crec_fmt_blob_loc *e;
    int rc = blob_find(r, hash, &e, err);

    if (rc)
        return rc;
    if (e->len & CREC_FMT_BLOB_PAGED) {
        int all;
        return paged_walk(r, e, off, n, buf, &all, err);
    }
    if ((rc = blob_range_ok(r, off, n, e->len, err)) != 0)
        return rc;
    if (!r->blob_checked[e - r->blobs]) {
        if ((rc = blob_header_ok(r, e, err)) != 0)
            return rc;
        r->blob_checked[e - r->blobs] = 1;
    }
    return crec_fmt_read_at(r, CREC_FMT_S_BLOBS, 0, e->off + off, buf, n, err);
}

int crec_fmt_blob_get(crec_fmt_reader *r, const crec_fmt_hash *hash, uint8_t **data,
                      size_t *len, crec_error *err)
{
    const uint8_t *p;
    size_t n;
    int rc = crec_fmt_blob_view(r, hash, &p, &n, err);

    *data = NULL;
    *len = 0;
    if (rc)
        return rc;
    *data = crec_malloc(n ? n : 1);
    if (!*data)
        return r_nomem(r, err);
    memcpy(*data, p, n);
    *len = n;
    return CREC_OK;
}
