/*
 * codec.c - the index file PATH.idx: encode, decode (docs/QUERY.md is the
 * spec).  All integers little-endian:
 *
 *   offset size  field
 *   0      8     magic "CRECIDX\0"
 *   8      4     version (2)
 *   12     4     reserved, zero
 *   16     8     size of the recording it describes, in bytes
 *   24     8     XXH3-64 of the recording's first and last 64 KiB
 *   32     8     length of the rest of the file
 *   40     8     XXH3-64 of the rest of the file
 *   48     4     compressed length of the table
 *   52     4     length of the table once decompressed
 *   56     ...   the table (one zstd frame), then the blocks (one zstd
 *                frame each), each at most IDX_MAX_PART bytes decompressed
 *
 * The table, decompressed:
 *   varint nseg, varint nblocks,
 *   nblocks x (varint segments in it, varint compressed length, varint length)
 *   varint nranges, nranges x (varint start - end of the previous range,
 *                              varint length): every range ever mapped
 *   varint nsyscalls, nsyscalls x varint (icount - the previous one)
 *   varint nblobs, nblobs x (16-byte hash, varint BLOBS offset, varint length),
 *                          sorted by hash
 * A block, decompressed, for each of its segments:
 *   varint start icount (delta from the previous segment's; absolute for
 *          the first segment of the block)
 *   varint flags (bit 0: the kernel wrote unknown ranges)
 *   varint ntouch, ntouch x varint line delta, ntouch x u64 byte mask
 *   varint nwrite, nwrite x varint line delta, nwrite x u64 byte mask
 *   varint nk, nk x (varint addr, varint len)
 * "line" is address >> 6; the first delta of a list is from 0, the others
 * from the previous line, so that strictly increasing lists have deltas
 * > 0.  Bit b of a line's mask says byte b of the line was accessed; a
 * mask is never 0.
 *
 * Blocks hold up to IDX_BLOCK_SEGS segments, so that a query decompresses
 * and decodes only the few segments near its time (crec_idx_need).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "common/common.h"
#include "index/index.h"

#define IDX_MAGIC "CRECIDX"
#define IDX_VERSION 2
#define IDX_HEAD 56
#define IDX_ZSTD_LEVEL 3
#define IDX_BLOCK_SEGS 32
/* A table or block can't be bigger than this, nor more than IDX_MAX_RATIO
 * times its compressed size: a hostile header can't make us allocate more. */
#define IDX_MAX_PART (256u << 20)
#define IDX_MAX_RATIO 4096

/* One block of segments in the file image. */
struct crec_idx_block {
    size_t first, n;      /* segments [first, first+n) */
    size_t zoff, zlen;    /* where its frame lies in the image */
    size_t len;           /* decompressed */
    int decoded;
};

/* ---- encoding ------------------------------------------------------------ */

static void put_bytes(crec_fmt_buf *b, const void *p, size_t n)
{
    if (b->nomem || n == 0)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *d = crec_realloc(b->data, cap);
        if (!d) {
            b->nomem = 1;
            return;
        }
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_le(crec_fmt_buf *b, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, x, (size_t)n);
}

static void put_varint(crec_fmt_buf *b, uint64_t v)
{
    uint8_t x[10];
    size_t n = 0;
    do {
        x[n] = v & 0x7f;
        v >>= 7;
        if (v)
            x[n] |= 0x80;
        n++;
    } while (v);
    put_bytes(b, x, n);
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A list of lines and their byte masks. */
static void put_list(crec_fmt_buf *b, const uint64_t *v, const uint64_t *mask, size_t n)
{
    uint64_t prev = 0;
    put_varint(b, n);
    for (size_t i = 0; i < n; i++) {
        put_varint(b, v[i] - prev);
        prev = v[i];
    }
    for (size_t i = 0; i < n; i++)
        put_le(b, mask[i], 8);
}

static void put_segment(crec_fmt_buf *b, const crec_idx_seg *s, uint64_t prev)
{
    put_varint(b, s->start - prev);
    put_varint(b, s->flags);
    put_list(b, s->touch, s->touch_mask, s->ntouch);
    put_list(b, s->write, s->write_mask, s->nwrite);
    put_varint(b, s->nk);
    for (size_t j = 0; j < 2 * s->nk; j++)
        put_varint(b, s->k[j]);
}

/* Append `raw` compressed as one zstd frame.  @return its length, 0 on failure. */
static size_t put_frame(crec_fmt_buf *b, const crec_fmt_buf *raw)
{
    size_t bound = ZSTD_compressBound(raw->len), n;
    uint8_t *z;

    if (raw->nomem || b->nomem || !(z = crec_malloc(bound)))
        return 0;
    n = ZSTD_compress(z, bound, raw->data, raw->len, IDX_ZSTD_LEVEL);
    if (ZSTD_isError(n))
        n = 0;
    put_bytes(b, z, n);
    crec_free(z);
    return n;
}

static void put_table_tail(crec_fmt_buf *t, const crec_idx *ix)
{
    uint64_t prev = 0;

    put_varint(t, ix->nmapped);
    for (size_t i = 0; i < ix->nmapped; i++) {
        put_varint(t, ix->mapped[2 * i] - prev);
        put_varint(t, ix->mapped[2 * i + 1] - ix->mapped[2 * i]);
        prev = ix->mapped[2 * i + 1];
    }
    put_varint(t, ix->nsyscalls);
    prev = 0;
    for (size_t i = 0; i < ix->nsyscalls; i++) {
        put_varint(t, ix->syscalls[i] - prev);
        prev = ix->syscalls[i];
    }
    put_varint(t, ix->nblobs);
    for (size_t i = 0; i < ix->nblobs; i++) {
        put_bytes(t, ix->blobs[i].hash.b, sizeof ix->blobs[i].hash.b);
        put_varint(t, ix->blobs[i].off);
        put_varint(t, ix->blobs[i].len);
    }
}

int crec_idx_encode(const crec_idx *ix, crec_fmt_buf *out)
{
    crec_fmt_buf blocks = {0}, table = {0}, raw = {0}, rest = {0};
    size_t nblocks = (ix->nseg + IDX_BLOCK_SEGS - 1) / IDX_BLOCK_SEGS, tz;
    uint8_t magic[8] = IDX_MAGIC;
    int bad = 0;

    put_varint(&table, ix->nseg);
    put_varint(&table, nblocks);
    for (size_t b = 0; b < nblocks; b++) {
        size_t first = b * IDX_BLOCK_SEGS, n = ix->nseg - first, z;
        uint64_t prev = 0;
        if (n > IDX_BLOCK_SEGS)
            n = IDX_BLOCK_SEGS;
        crec_fmt_buf_reset(&raw);
        for (size_t i = first; i < first + n; i++) {
            put_segment(&raw, &ix->segs[i], prev);
            prev = ix->segs[i].start;
        }
        z = put_frame(&blocks, &raw);
        bad |= z == 0 || raw.len > IDX_MAX_PART;
        put_varint(&table, n);
        put_varint(&table, z);
        put_varint(&table, raw.len);
    }
    put_table_tail(&table, ix);
    tz = put_frame(&rest, &table);
    bad |= tz == 0 || table.len > IDX_MAX_PART;
    put_bytes(&rest, blocks.data, blocks.len);
    put_bytes(out, magic, 8);
    put_le(out, IDX_VERSION, 4);
    put_le(out, 0, 4);
    put_le(out, ix->rec_size, 8);
    put_le(out, ix->rec_hash, 8);
    put_le(out, rest.len, 8);
    put_le(out, rest.data ? XXH3_64bits(rest.data, rest.len) : 0, 8);
    put_le(out, tz, 4);
    put_le(out, table.len, 4);
    put_bytes(out, rest.data, rest.len);
    bad |= blocks.nomem || table.nomem || rest.nomem || raw.nomem;
    crec_fmt_buf_free(&blocks);
    crec_fmt_buf_free(&table);
    crec_fmt_buf_free(&raw);
    crec_fmt_buf_free(&rest);
    if (bad)
        out->nomem = 1;
    return out->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

/* ---- decoding ------------------------------------------------------------ */

/* A bounds-checked walk over decompressed bytes. */
struct body {
    const uint8_t *p;
    size_t len, pos;
    crec_error *err;
};

static int get_varint(struct body *d, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (d->pos >= d->len)
            return crec_error_corrupt(d->err, "index: ends inside a number");
        uint8_t c = d->p[d->pos++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return CREC_OK;
        }
    }
    return crec_error_corrupt(d->err, "index: number too long");
}

/* A count of items of at least `each` bytes that must fit in what is left. */
static int get_count(struct body *d, size_t each, uint64_t *n, const char *what)
{
    int rc = get_varint(d, n);

    if (rc == CREC_OK && *n > (d->len - d->pos) / each)
        rc = crec_error_corrupt(d->err, "index: %" PRIu64 " %s in %zu bytes", *n, what,
                                d->len - d->pos);
    return rc;
}

static int nomem(crec_error *err)
{
    return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index");
}

static void *alloc_n(size_t n, size_t size)
{
    return crec_malloc((n ? n : 1) * size);
}

static int get_list(struct body *d, uint64_t **out, uint64_t **mask, size_t *n)
{
    uint64_t cnt, prev = 0, delta;
    int rc = get_count(d, 9, &cnt, "lines"); /* a delta and a mask each */

    if (rc)
        return rc;
    *out = alloc_n(cnt, sizeof **out);
    *mask = alloc_n(cnt, sizeof **mask);
    if (!*out || !*mask)
        return nomem(d->err);
    *n = cnt;
    for (uint64_t i = 0; i < cnt; i++) {
        if ((rc = get_varint(d, &delta)))
            return rc;
        if (i > 0 && delta == 0)
            return crec_error_corrupt(d->err, "index: line list not increasing");
        prev += delta;
        (*out)[i] = prev;
    }
    if (cnt > (d->len - d->pos) / 8)
        return crec_error_corrupt(d->err, "index: ends inside a list of masks");
    for (uint64_t i = 0; i < cnt; i++, d->pos += 8)
        if (((*mask)[i] = get_le(d->p + d->pos, 8)) == 0)
            return crec_error_corrupt(d->err, "index: a line with an empty byte mask");
    return CREC_OK;
}

static int get_segment(struct body *d, crec_idx_seg *s, uint64_t prev)
{
    uint64_t v;
    int rc;

    if ((rc = get_varint(d, &v)))
        return rc;
    s->start = prev + v;
    if ((rc = get_varint(d, &v)))
        return rc;
    if (v & ~(uint64_t)CREC_IDX_WILD)
        return crec_error_corrupt(d->err, "index: reserved segment flags set");
    s->flags = (uint32_t)v;
    if ((rc = get_list(d, &s->touch, &s->touch_mask, &s->ntouch)) ||
        (rc = get_list(d, &s->write, &s->write_mask, &s->nwrite)) ||
        (rc = get_count(d, 2, &v, "kernel ranges")))
        return rc;
    s->nk = v;
    if (!(s->k = alloc_n(2 * v, sizeof *s->k)))
        return nomem(d->err);
    for (size_t j = 0; j < 2 * v; j++)
        if ((rc = get_varint(d, &s->k[j])))
            return rc;
    return CREC_OK;
}

/* Decompress `zlen` bytes at z into exactly `len` bytes (*out, crec_malloc'd). */
static int inflate_part(const uint8_t *z, size_t zlen, uint64_t len, uint8_t **out,
                        crec_error *err)
{
    size_t got;

    *out = NULL;
    if (len > IDX_MAX_PART || len / IDX_MAX_RATIO > zlen)
        return crec_error_corrupt(err, "index: %" PRIu64 " bytes from %zu compressed", len, zlen);
    if (!(*out = alloc_n(len, 1)))
        return nomem(err);
    got = ZSTD_decompress(*out, len, z, zlen);
    if (ZSTD_isError(got) || got != len) {
        crec_free(*out);
        *out = NULL;
        return crec_error_corrupt(err, "index: a part does not decompress to %" PRIu64
                                  " bytes", len);
    }
    return CREC_OK;
}

static int get_blocks(struct body *d, crec_idx *ix, size_t zoff, size_t zend)
{
    uint64_t nseg, nblocks, n, zlen, len;
    size_t seg = 0;
    int rc;

    if ((rc = get_count(d, 1, &nseg, "segments")) || (rc = get_count(d, 3, &nblocks, "blocks")))
        return rc;
    ix->segs = crec_calloc(nseg ? nseg : 1, sizeof *ix->segs);
    ix->blocks = crec_calloc(nblocks ? nblocks : 1, sizeof *ix->blocks);
    if (!ix->segs || !ix->blocks)
        return nomem(d->err);
    ix->nseg = nseg;
    ix->nblocks = nblocks;
    for (size_t b = 0; b < nblocks; b++) {
        if ((rc = get_varint(d, &n)) || (rc = get_varint(d, &zlen)) || (rc = get_varint(d, &len)))
            return rc;
        if (n == 0 || n > nseg - seg || zlen > zend - zoff)
            return crec_error_corrupt(d->err, "index: block %zu does not fit", b);
        ix->blocks[b] = (struct crec_idx_block){seg, n, zoff, zlen, len, 0};
        seg += n;
        zoff += zlen;
    }
    if (seg != nseg || zoff != zend)
        return crec_error_corrupt(d->err, "index: the blocks hold %zu segments and end at %zu, "
                                  "not %" PRIu64 " and %zu", seg, zoff, nseg, zend);
    return CREC_OK;
}

static int get_ranges(struct body *d, crec_idx *ix)
{
    uint64_t n, prev = 0, gap, len;
    int rc = get_count(d, 2, &n, "mapped ranges");

    if (rc)
        return rc;
    if (!(ix->mapped = alloc_n(2 * n, sizeof *ix->mapped)))
        return nomem(d->err);
    ix->nmapped = n;
    for (size_t i = 0; i < n; i++) {
        if ((rc = get_varint(d, &gap)) || (rc = get_varint(d, &len)))
            return rc;
        if (gap > UINT64_MAX - prev || len > UINT64_MAX - prev - gap)
            return crec_error_corrupt(d->err, "index: mapped range %zu wraps around", i);
        ix->mapped[2 * i] = prev + gap;
        ix->mapped[2 * i + 1] = prev = prev + gap + len;
    }
    return CREC_OK;
}

static int get_syscalls(struct body *d, crec_idx *ix)
{
    uint64_t n, prev = 0, delta;
    int rc = get_count(d, 1, &n, "syscalls");

    if (rc)
        return rc;
    if (!(ix->syscalls = alloc_n(n, sizeof *ix->syscalls)))
        return nomem(d->err);
    ix->nsyscalls = n;
    for (size_t i = 0; i < n; i++) {
        if ((rc = get_varint(d, &delta)))
            return rc;
        ix->syscalls[i] = prev += delta;
    }
    return CREC_OK;
}

static int get_blobs(struct body *d, crec_idx *ix)
{
    uint64_t n;
    int rc = get_count(d, 18, &n, "blobs"); /* a hash and two varints each */

    if (rc)
        return rc;
    if (!(ix->blobs = alloc_n(n, sizeof *ix->blobs)))
        return nomem(d->err);
    ix->nblobs = n;
    for (size_t i = 0; i < n; i++) {
        crec_fmt_blob_loc *b = &ix->blobs[i];
        if (d->len - d->pos < sizeof b->hash.b)
            return crec_error_corrupt(d->err, "index: ends inside a blob hash");
        memcpy(b->hash.b, d->p + d->pos, sizeof b->hash.b);
        d->pos += sizeof b->hash.b;
        if ((rc = get_varint(d, &b->off)) || (rc = get_varint(d, &b->len)))
            return rc;
    }
    return CREC_OK;
}

/* Check the header and the checksum; decode the table. */
static int get_table(crec_idx *ix, crec_error *err)
{
    const uint8_t *data = ix->image;
    size_t len = ix->image_len;
    uint64_t rest, tz;
    struct body d = {NULL, 0, 0, err};
    uint8_t *raw = NULL;
    int rc;

    if (len < IDX_HEAD || memcmp(data, IDX_MAGIC, 8) != 0)
        return crec_error_corrupt(err, "index: not a crec index file");
    if (get_le(data + 8, 4) != IDX_VERSION)
        return crec_error_set(err, CREC_ERR_VERSION, "index: version %" PRIu64
                              " (this crec reads version %d)", get_le(data + 8, 4), IDX_VERSION);
    rest = get_le(data + 32, 8);
    tz = get_le(data + 48, 4);
    if (rest != len - IDX_HEAD || tz > rest)
        return crec_error_corrupt(err, "index: %" PRIu64 " bytes after the header, file has %zu",
                                  rest, len - IDX_HEAD);
    if (XXH3_64bits(data + IDX_HEAD, rest) != get_le(data + 40, 8))
        return crec_error_corrupt(err, "index: checksum mismatch");
    ix->rec_size = get_le(data + 16, 8);
    ix->rec_hash = get_le(data + 24, 8);
    rc = inflate_part(data + IDX_HEAD, tz, get_le(data + 52, 4), &raw, err);
    if (rc)
        return rc;
    d.p = raw, d.len = get_le(data + 52, 4);
    if (!(rc = get_blocks(&d, ix, IDX_HEAD + tz, len)) && !(rc = get_ranges(&d, ix)) &&
        !(rc = get_syscalls(&d, ix)) && !(rc = get_blobs(&d, ix)) && d.pos != d.len)
        rc = crec_error_corrupt(err, "index: %zu stray bytes in the table", d.len - d.pos);
    crec_free(raw);
    return rc;
}

int crec_idx_decode(const uint8_t *data, size_t len, crec_idx **out, crec_error *err)
{
    crec_idx *ix = crec_calloc(1, sizeof *ix);
    int rc;

    *out = NULL;
    if (!ix || !(ix->image = alloc_n(len, 1))) {
        crec_free(ix);
        return nomem(err);
    }
    memcpy(ix->image, data, len);
    ix->image_len = len;
    rc = get_table(ix, err);
    if (rc) {
        crec_idx_free(ix);
        return rc;
    }
    *out = ix;
    return CREC_OK;
}

static void seg_clear(crec_idx_seg *s)
{
    crec_free(s->touch);
    crec_free(s->touch_mask);
    crec_free(s->write);
    crec_free(s->write_mask);
    crec_free(s->k);
    memset(s, 0, sizeof *s);
}

static int decode_block(crec_idx *ix, struct crec_idx_block *b, crec_error *err)
{
    struct body d = {NULL, b->len, 0, err};
    uint8_t *raw = NULL;
    uint64_t prev = 0;
    int rc = inflate_part(ix->image + b->zoff, b->zlen, b->len, &raw, err);

    d.p = raw;
    for (size_t i = b->first; rc == CREC_OK && i < b->first + b->n; i++) {
        rc = get_segment(&d, &ix->segs[i], prev);
        prev = ix->segs[i].start;
    }
    if (rc == CREC_OK && d.pos != d.len)
        rc = crec_error_corrupt(err, "index: %zu stray bytes in a block", d.len - d.pos);
    crec_free(raw);
    b->decoded = rc == CREC_OK;
    for (size_t i = b->first; rc != CREC_OK && i < b->first + b->n; i++)
        seg_clear(&ix->segs[i]);
    return rc;
}

int crec_idx_need(crec_idx *ix, size_t seg, crec_error *err)
{
    size_t lo = 0, hi = ix->nblocks;

    if (!ix->blocks || seg >= ix->nseg)
        return CREC_OK; /* built in memory: every segment is there */
    while (hi - lo > 1) { /* the last block starting at or before seg */
        size_t m = lo + (hi - lo) / 2;
        if (ix->blocks[m].first <= seg)
            lo = m;
        else
            hi = m;
    }
    if (ix->blocks[lo].decoded)
        return CREC_OK;
    return decode_block(ix, &ix->blocks[lo], err);
}

int crec_idx_need_all(crec_idx *ix, crec_error *err)
{
    for (size_t b = 0; b < ix->nblocks; b++)
        if (!ix->blocks[b].decoded) {
            int rc = decode_block(ix, &ix->blocks[b], err);
            if (rc != CREC_OK)
                return rc;
        }
    return CREC_OK;
}

void crec_idx_free(crec_idx *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nseg && ix->segs; i++)
        seg_clear(&ix->segs[i]);
    crec_free(ix->segs);
    crec_free(ix->blocks);
    crec_free(ix->image);
    crec_free(ix->blobs);
    crec_free(ix->mapped);
    crec_free(ix->syscalls);
    crec_free(ix);
}
