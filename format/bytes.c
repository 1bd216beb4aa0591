/*
 * bytes.c - the primitive encodings every .crec structure is built from
 * (docs/FORMAT.md §1), and the chunk frame header (§3).
 *
 *   u8/u16/u32/u64   fixed width, little-endian, written byte by byte
 *   varint           unsigned LEB128: 7 bits per byte, low group first, high
 *                    bit set on every byte but the last; at most 10 bytes,
 *                    the 10th may only be 0 or 1
 *   svarint          zigzag ((v << 1) ^ (v >> 63)) then varint
 *   string           varint length n (<= CREC_FMT_MAX_STRING), n bytes, no NUL
 *   hash             16 bytes: XXH3-128 low64 as u64 LE, then high64 as u64 LE
 *
 *   e.g. 300 as varint: AC 02;  -1 as svarint: 01;  "ab": 02 61 62
 *
 * Chunk frame header (40 bytes, see format_int.h for the table):
 *   43 52 43 4B | 02 | 00 00 00 | 01 00 00 00 | 03 00 00 00 | ...
 *   "CRCK"        READS reserved  thread 1      chunk 3
 */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced: custom allocator */
#include <xxhash.h>
#include <zstd.h>

#include "format/format_int.h"

#ifdef CREC_FUZZ
int fmt_fuzz_no_checksums;
#endif

/* ---- growable buffer ---------------------------------------------------- */

static int buf_reserve(crec_fmt_buf *b, size_t n)
{
    if (b->nomem)
        return 0;
    if (b->cap - b->len >= n)
        return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2)
            return !(b->nomem = 1);
        cap *= 2;
    }
    uint8_t *p = crec_realloc(b->data, cap);
    if (!p)
        return !(b->nomem = 1);
    b->data = p;
    b->cap = cap;
    return 1;
}

void crec_fmt_buf_free(crec_fmt_buf *b)
{
    if (!b)
        return;
    crec_free(b->data);
    memset(b, 0, sizeof *b);
}

void crec_fmt_buf_reset(crec_fmt_buf *b)
{
    b->len = 0;
    b->nomem = 0;
}

void crec_fmt_buf_bytes(crec_fmt_buf *b, const void *p, size_t n)
{
    if (n && buf_reserve(b, n)) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
}

void fmt_buf_u8(crec_fmt_buf *b, uint8_t v)
{
    fmt_buf_bytes(b, &v, 1);
}

void fmt_buf_u16(crec_fmt_buf *b, uint16_t v)
{
    uint8_t t[2];
    fmt_put_u16(t, v);
    fmt_buf_bytes(b, t, 2);
}

void crec_fmt_buf_u32(crec_fmt_buf *b, uint32_t v)
{
    uint8_t t[4];
    fmt_put_u32(t, v);
    fmt_buf_bytes(b, t, 4);
}

void crec_fmt_buf_u64(crec_fmt_buf *b, uint64_t v)
{
    uint8_t t[8];
    fmt_put_u64(t, v);
    fmt_buf_bytes(b, t, 8);
}

size_t fmt_varint_len(uint64_t v)
{
    uint8_t t[CREC_VARINT_MAX];
    return crec_varint_put(t, v);
}

void crec_fmt_buf_varint(crec_fmt_buf *b, uint64_t v)
{
    uint8_t t[CREC_VARINT_MAX];
    fmt_buf_bytes(b, t, crec_varint_put(t, v));
}

void fmt_buf_svarint(crec_fmt_buf *b, int64_t v)
{
    fmt_buf_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void fmt_buf_str(crec_fmt_buf *b, const char *s, size_t n)
{
    fmt_buf_varint(b, n);
    fmt_buf_bytes(b, s, n);
}

void fmt_buf_hash(crec_fmt_buf *b, const crec_fmt_hash *h)
{
    fmt_buf_bytes(b, h->b, 16);
}

/*
 * A framed record is kind, varint body length, body.  The body length is
 * only known once the body is encoded, so the body is appended first and
 * then moved up by the size of the length field: simpler than computing
 * every record's size twice.
 */
size_t fmt_frame_begin(crec_fmt_buf *b, int kind)
{
    fmt_buf_u8(b, (uint8_t)kind);
    return b->len;
}

void fmt_frame_end(crec_fmt_buf *b, size_t start)
{
    if (b->nomem)
        return;
    size_t body = b->len - start;
    uint8_t t[FMT_MAX_VARINT];
    size_t n = crec_varint_put(t, body);
    if (!buf_reserve(b, n))
        return;
    memmove(b->data + start + n, b->data + start, body);
    memcpy(b->data + start, t, n);
    b->len += n;
}

/* ---- bounds-checked cursor ---------------------------------------------- */

static int cur_short(const crec_fmt_cur *c, const char *what, crec_error *err)
{
    return crec_error_corrupt(err, "record ends inside %s (at byte %zu of %zu)", what, c->pos,
                              c->len);
}

int crec_fmt_cur_bytes(crec_fmt_cur *c, void *out, size_t n, const char *what, crec_error *err)
{
    if (c->len - c->pos < n)
        return cur_short(c, what, err);
    if (n)
        memcpy(out, c->p + c->pos, n);
    c->pos += n;
    return CREC_OK;
}

int fmt_cur_u8(crec_fmt_cur *c, uint8_t *v, const char *what, crec_error *err)
{
    return fmt_cur_bytes(c, v, 1, what, err);
}

int fmt_cur_u16(crec_fmt_cur *c, uint16_t *v, const char *what, crec_error *err)
{
    uint8_t t[2] = {0};
    int rc = fmt_cur_bytes(c, t, 2, what, err);
    *v = rc ? 0 : fmt_get_u16(t);
    return rc;
}

int crec_fmt_cur_u32(crec_fmt_cur *c, uint32_t *v, const char *what, crec_error *err)
{
    uint8_t t[4] = {0};
    int rc = fmt_cur_bytes(c, t, 4, what, err);
    *v = rc ? 0 : fmt_get_u32(t);
    return rc;
}

int crec_fmt_cur_u64(crec_fmt_cur *c, uint64_t *v, const char *what, crec_error *err)
{
    uint8_t t[8] = {0};
    int rc = fmt_cur_bytes(c, t, 8, what, err);
    *v = rc ? 0 : fmt_get_u64(t);
    return rc;
}

int crec_fmt_cur_varint(crec_fmt_cur *c, uint64_t *v, const char *what, crec_error *err)
{
    int n = crec_varint_get(c->p + c->pos, c->len - c->pos, v);

    if (n > 0) {
        c->pos += (size_t)n;
        return CREC_OK;
    }
    *v = 0;
    if (n == 0) {
        c->pos = c->len;
        return cur_short(c, what, err);
    }
    return crec_error_corrupt(err, "varint %s too long", what);
}

int fmt_cur_varint32(crec_fmt_cur *c, uint32_t *v, const char *what, crec_error *err)
{
    uint64_t t;
    *v = 0;
    int rc = fmt_cur_varint(c, &t, what, err);
    if (rc)
        return rc;
    if (t > UINT32_MAX)
        return crec_error_corrupt(err, "%s %llu out of range", what, (unsigned long long)t);
    *v = (uint32_t)t;
    return CREC_OK;
}

int fmt_cur_svarint(crec_fmt_cur *c, int64_t *v, const char *what, crec_error *err)
{
    uint64_t t;
    int rc = fmt_cur_varint(c, &t, what, err);
    *v = rc ? 0 : (int64_t)((t >> 1) ^ (~(t & 1) + 1));
    return rc;
}

int fmt_cur_str(crec_fmt_cur *c, const uint8_t **s, size_t *n, const char *what,
                crec_error *err)
{
    uint64_t len;
    int rc = fmt_cur_varint(c, &len, what, err);
    if (rc)
        return rc;
    if (len > CREC_FMT_MAX_STRING || len > c->len - c->pos)
        return crec_error_corrupt(err, "%s length %llu out of range", what,
                                  (unsigned long long)len);
    *s = c->p + c->pos;
    *n = (size_t)len;
    c->pos += (size_t)len;
    return CREC_OK;
}

int fmt_cur_hash(crec_fmt_cur *c, crec_fmt_hash *h, const char *what, crec_error *err)
{
    return fmt_cur_bytes(c, h->b, 16, what, err);
}

int crec_fmt_cur_end(const crec_fmt_cur *c, const char *what, crec_error *err)
{
    if (c->pos != c->len)
        return crec_error_corrupt(err, "%zu stray bytes after %s", c->len - c->pos, what);
    return CREC_OK;
}

/* ---- hashes, names -------------------------------------------------------- */

crec_fmt_hash crec_fmt_hash_bytes(const void *data, size_t len)
{
    XXH128_hash_t x = XXH3_128bits(data, len);
    crec_fmt_hash h;
    fmt_put_u64(h.b, x.low64);
    fmt_put_u64(h.b + 8, x.high64);
    return h;
}

static const char *const stream_names[] = {
    [CREC_FMT_S_HEADER] = "HEADER",       [CREC_FMT_S_READS] = "READS",
    [CREC_FMT_S_EVENTS] = "EVENTS",       [CREC_FMT_S_SEQ] = "SEQ",
    [CREC_FMT_S_KEYFRAMES] = "KEYFRAMES", [CREC_FMT_S_SNAPSHOTS] = "SNAPSHOTS",
    [CREC_FMT_S_BLOBS] = "BLOBS",         [CREC_FMT_S_CODE] = "CODE",
    [CREC_FMT_S_SYMBOLS] = "SYMBOLS",     [CREC_FMT_S_INDEX] = "INDEX",
    [CREC_FMT_S_DIRECTORY] = "DIRECTORY", [CREC_FMT_S_MARKS] = "MARKS",
    [CREC_FMT_S_PROCESS] = "PROCESS",
};

const char *crec_fmt_stream_name(int type)
{
    if (type < 1 || type > CREC_FMT_S_MAX)
        return "?";
    return stream_names[type];
}

int crec_fmt_stream_per_thread(int type)
{
    return type == CREC_FMT_S_READS || type == CREC_FMT_S_EVENTS || type == CREC_FMT_S_SEQ;
}

int crec_fmt_stream_per_process(int type)
{
    return type >= CREC_FMT_S_READS && type <= CREC_FMT_S_MAX && type != CREC_FMT_S_BLOBS &&
           type != CREC_FMT_S_SYMBOLS && type != CREC_FMT_S_DIRECTORY;
}

/* ---- chunk frame header ------------------------------------------------- */

void fmt_chunk_pack(uint8_t h[FMT_CHUNK_HDR], const fmt_chunk *c)
{
    memcpy(h, FMT_CHUNK_MAGIC, 4);
    h[4] = c->type;
    h[5] = (uint8_t)c->proc;
    h[6] = (uint8_t)(c->proc >> 8);
    h[7] = (uint8_t)(c->proc >> 16);
    fmt_put_u32(h + 8, c->tid);
    fmt_put_u32(h + 12, c->seq);
    fmt_put_u64(h + 16, c->uoff);
    fmt_put_u32(h + 24, c->clen);
    fmt_put_u32(h + 28, c->ulen);
    fmt_put_u64(h + 32, c->sum);
}

int fmt_chunk_unpack(uint32_t version, const uint8_t h[FMT_CHUNK_HDR], uint64_t off,
                     fmt_chunk *c, crec_error *err)
{
    if (memcmp(h, FMT_CHUNK_MAGIC, 4) != 0)
        return crec_error_corrupt(err, "bad chunk magic at offset %llu", (unsigned long long)off);
    c->file_off = off;
    c->type = h[4];
    c->proc = (uint32_t)h[5] | (uint32_t)h[6] << 8 | (uint32_t)h[7] << 16;
    c->tid = fmt_get_u32(h + 8);
    c->seq = fmt_get_u32(h + 12);
    c->uoff = fmt_get_u64(h + 16);
    c->clen = fmt_get_u32(h + 24);
    c->ulen = fmt_get_u32(h + 28);
    c->sum = fmt_get_u64(h + 32);
    if (c->type < 1 || c->type > CREC_FMT_S_MAX ||
        (version < 3 && c->type == CREC_FMT_S_PROCESS))
        return crec_error_corrupt(err, "unknown stream type %u at offset %llu", c->type,
                                  (unsigned long long)off);
    if (version < 3 && c->proc)
        return crec_error_corrupt(err, "reserved chunk bytes not zero at offset %llu",
                                  (unsigned long long)off);
    if (c->proc && !crec_fmt_stream_per_process(c->type))
        return crec_error_corrupt(err, "shared stream %s has process %u at offset %llu",
                                  crec_fmt_stream_name(c->type), c->proc,
                                  (unsigned long long)off);
    if (c->tid != 0 && !crec_fmt_stream_per_thread(c->type))
        return crec_error_corrupt(err, "global stream %s has thread id %u at offset %llu",
                                  crec_fmt_stream_name(c->type), c->tid,
                                  (unsigned long long)off);
    if (c->clen == 0 || c->clen > ZSTD_compressBound(CREC_FMT_MAX_CHUNK))
        return crec_error_corrupt(err, "chunk length %u out of range at offset %llu", c->clen,
                                  (unsigned long long)off);
    if (c->ulen == 0 || c->ulen > CREC_FMT_MAX_CHUNK)
        return crec_error_corrupt(err, "chunk size %u out of range at offset %llu", c->ulen,
                                  (unsigned long long)off);
    if (c->uoff > (UINT64_MAX >> 2))
        return crec_error_corrupt(err, "chunk stream offset %llu out of range at offset %llu",
                                  (unsigned long long)c->uoff, (unsigned long long)off);
    return CREC_OK;
}

uint64_t fmt_chunk_sum(const uint8_t h[FMT_CHUNK_HDR], const uint8_t *payload, size_t clen)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, h, 32);
    XXH3_64bits_update(&st, payload, clen);
    return XXH3_64bits_digest(&st);
}

/* ---- zstd contexts through crec_malloc ----------------------------------- */

static void *zalloc(void *opaque, size_t n)
{
    (void)opaque;
    return crec_malloc(n);
}

static void zfree(void *opaque, void *p)
{
    (void)opaque;
    crec_free(p);
}

void *fmt_zstd_cctx(void)
{
    ZSTD_customMem m = {zalloc, zfree, NULL};
    return ZSTD_createCCtx_advanced(m);
}

void *fmt_zstd_dctx(void)
{
    ZSTD_customMem m = {zalloc, zfree, NULL};
    return ZSTD_createDCtx_advanced(m);
}

int crec_fmt_frame_next(crec_fmt_cur *c, int *kind, const uint8_t **body, size_t *len,
                        crec_error *err)
{
    uint8_t k = 0;
    uint64_t n = 0;
    int rc = fmt_cur_u8(c, &k, "record kind", err);

    if (rc == CREC_OK)
        rc = fmt_cur_varint(c, &n, "record length", err);
    if (rc != CREC_OK)
        return rc;
    if (n > CREC_FMT_MAX_RECORD || n > c->len - c->pos)
        return crec_error_corrupt(err, "record length %llu out of range (%zu bytes left)",
                                  (unsigned long long)n, c->len - c->pos);
    *kind = k;
    *body = c->p + c->pos;
    *len = (size_t)n;
    c->pos += (size_t)n;
    return CREC_OK;
}
