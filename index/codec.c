/*
 * codec.c - the index file PATH.idx: encode, decode (docs/QUERY.md is the
 * spec).  All integers little-endian:
 *
 *   offset size  field
 *   0      8     magic "CRECIDX\0"
 *   8      4     version (IDX_VERSION, 6; 5 is read too)
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
 *   varint nspan, then per span:
 *     varint start icount - the previous span's start
 *     varint (key frame - the previous span's key frame) << 1 | point
 *       (point 1: the span starts at a restart point inside the segment of
 *       that key frame; 0: at the key frame, which is then the previous
 *       span's plus one, or 0 for the first span)
 *     varint cost: host CPU microseconds the recorder spent in the span, 0
 *       if not known, and varint the bytes of its point's seed (0 at a key
 *       frame): what replay --jobs plans its parts by (version 6; version 5
 *       has neither)
 *   version 6: varint nfilters (0 or nblocks), per block: varint log2 of
 *     its filter's bits (0: none), varint flags (bit 0: it may touch any
 *     address), and 2^log2 / 8 bytes: a Bloom filter of every line a span
 *     of the block touched or the kernel wrote in it (IDX_FILTER_PROBES
 *     probes, filter_probe), so that a query passes over a block that
 *     never touched its address without decoding it
 *   varint nblocks,
 *   nblocks x (varint spans in it, varint compressed length, varint length)
 *   varint nranges, nranges x (varint start - end of the previous range,
 *                              varint length): every range ever mapped
 *   varint nsyscalls, nsyscalls x varint (icount - the previous one)
 *   varint nblobs, nblobs x (16-byte hash, varint BLOBS offset, varint length),
 *                          sorted by hash
 *   varint nkf, nkf x (varint global icount - the previous one, varint
 *                      offset of its record in KEYFRAMES - the previous one,
 *                      varint tid, thread icount, reads_off, events_off,
 *                      seq_off, hits_before): every key frame but its
 *                      registers, which are read from KEYFRAMES when needed
 * A block, decompressed, for each of its spans:
 *   if it starts at a point: the point as a framed KEYFRAME record
 *     (docs/FORMAT.md), then varint nlines, nlines x varint line delta,
 *     nlines x u64 byte mask, then for each line the bytes of its mask, in
 *     order: the memory a replay starting there (or passing there) must
 *     be given, the bytes the span loads before it stores them (version
 *     3: nlines x 64 bytes, every line whole)
 *   varint flags (bit 0: the kernel wrote unknown ranges; bit 1: the
 *     span holds the values its stores left)
 *   varint ntouch, ntouch x varint line delta, ntouch x u64 byte mask
 *   varint nwrite, nwrite x varint line delta, nwrite x u64 byte mask
 *   varint nk, nk x (varint addr, varint len)
 *   varint nstale, nstale x varint line delta, nstale x u64 byte mask: the
 *     stored bytes the kernel wrote after their last store (their values
 *     below are not theirs at the end)
 *   flags bit 1: for each stored line, the bytes of its mask as they were
 *     at the span's end, each XORed with the same byte of the last span
 *     before it in the block that holds a value of it (version 4 had none)
 * "line" is address >> 6; the first delta of a list is from 0, the others
 * from the previous line, so that strictly increasing lists have deltas
 * > 0.  Bit b of a line's mask says byte b of the line was accessed; a
 * mask is never 0.
 *
 * Blocks hold up to IDX_BLOCK_SPANS spans, so that a query decompresses
 * and decodes only the few spans near its time (crec_idx_need).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#include <zstd.h>

#include "common/common.h"
#include "index/index.h"

#define IDX_MAGIC "CRECIDX"
#define IDX_VERSION 6
#define IDX_VERSION_NO_COST 5 /* read too: the same but the spans' costs */
/* Where each field of the header (the table above) lies. */
#define IDX_OFF_VERSION 8
#define IDX_OFF_REC_SIZE 16
#define IDX_OFF_REC_HASH 24
#define IDX_OFF_REST_LEN 32
#define IDX_OFF_REST_SUM 40
#define IDX_OFF_TABLE_ZLEN 48
#define IDX_OFF_TABLE_LEN 52
#define IDX_HEAD 56
#define IDX_ZSTD_LEVEL 3
#define IDX_BLOCK_SPANS 64
#define IDX_FILTER_BITS 8        /* a block's filter: bits a line touched, */
#define IDX_FILTER_PROBES 3      /* ... probes a line (about 3% false hits), */
#define IDX_FILTER_LOG2_MAX 26   /* ... at most 8 MiB, */
#define IDX_FILTER_KLINES 65536  /* ... and lines the kernel wrote, past which
                                    the block may touch anything */
/* A table or block can't be bigger than this, nor more than IDX_MAX_RATIO
 * times its compressed size: a hostile header can't make us allocate more. */
#define IDX_MAX_PART (256u << 20)
#define IDX_MAX_RATIO 4096

/* One block of spans in the file image. */
struct crec_idx_block {
    size_t first, n;      /* spans [first, first+n) */
    size_t zoff, zlen;    /* where its frame lies in the image */
    size_t len;           /* decompressed */
    size_t vzoff, vzlen;  /* where the frame of its values lies (vzlen 0: none) */
    size_t vlen;          /* ... decompressed */
    int decoded;          /* its spans are read */
    int valued;           /* ... and their values */
    uint8_t *raw;         /* decompressed (kept: seeds are read from it when */
    size_t *span_at;      /* ... needed), and where each span lies in it, */
    int span_known;       /* ... once found (by decoding, or passing over) */
    uint8_t *filter;      /* the lines its spans touched (NULL: any) */
    unsigned filter_log2; /* ... 2^filter_log2 bits */
    uint8_t *vraw;        /* its values decompressed (kept: another span's may
                             be asked for) */
};

/* A block's filter as the table holds it (get_filters). */
struct idx_filter {
    uint8_t *bits;
    unsigned log2;
};

/* ---- the last value of each stored byte in a block -------------------------- */

/* Line -> its 64 bytes as last stored in the block (0 where none was):
 * what the values of a span are XORed with. */
struct xor_map {
    uint64_t *key;  /* line + 1, 0: empty */
    uint8_t *val;   /* 64 bytes a slot */
    size_t cap, n;
    size_t want;    /* lines it will hold at least: the first table has room */
    int nomem;
};

static size_t xor_hash(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
}

/* The slot of `line` (zeros when new).  @return it, or NULL out of memory. */
static uint8_t *xor_slot(struct xor_map *m, uint64_t line)
{
    size_t j;

    if (m->n * 2 >= m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        while (cap < 2 * m->want) /* room for the lines the caller expects */
            cap *= 2;
        uint64_t *k = crec_calloc(cap, sizeof *k);
        uint8_t *v = crec_calloc(cap, 64);
        if (!k || !v) {
            crec_free(k), crec_free(v);
            m->nomem = 1;
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                for (j = xor_hash(m->key[i], cap); k[j]; j = (j + 1) & (cap - 1))
                    ;
                k[j] = m->key[i];
                memcpy(v + 64 * j, m->val + 64 * i, 64);
            }
        crec_free(m->key), crec_free(m->val);
        m->key = k, m->val = v, m->cap = cap;
    }
    for (j = xor_hash(line + 1, m->cap); m->key[j] && m->key[j] != line + 1;
         j = (j + 1) & (m->cap - 1))
        ;
    if (!m->key[j]) {
        m->key[j] = line + 1;
        m->n++;
    }
    return m->val + 64 * j;
}

static void xor_free(struct xor_map *m)
{
    crec_free(m->key), crec_free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---- encoding ------------------------------------------------------------ */

/* The index is built from the recording's own encodings (format.h). */
#define put_bytes crec_fmt_buf_bytes
#define put_varint crec_fmt_buf_varint

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
        crec_fmt_buf_u64(b, mask[i]);
}

/* What a replay starting at a span's point needs (none at a key frame). */
static void put_point(crec_fmt_buf *b, const crec_idx_span *s)
{
    uint64_t prev = 0;

    if (!s->at_point || !s->point) {
        b->nomem |= s->at_point; /* a point span without its point: can't encode */
        return;
    }
    if (crec_fmt_kf_encode(b, s->point) != CREC_OK)
        b->nomem = 1;
    put_varint(b, s->nlines);
    for (size_t i = 0; i < s->nlines; i++) {
        put_varint(b, s->lines[i] - prev);
        prev = s->lines[i];
    }
    for (size_t i = 0; i < s->nlines; i++)
        crec_fmt_buf_u64(b, s->masks[i]);
    for (size_t i = 0; i < s->nlines; i++) { /* a line's bytes at once */
        uint8_t x[64];
        size_t n = 0;
        for (uint64_t m = s->masks[i]; m; m &= m - 1)
            x[n++] = s->values[64 * i + (unsigned)__builtin_ctzll(m)];
        put_bytes(b, x, n);
    }
}

/* The values a span's stores left (CREC_IDX_VALUED), each byte XORed
 * with its last value in the block: a hot line's bytes repeat span after
 * span, and then code as zeros. */
static void put_values(crec_fmt_buf *b, const crec_idx_span *s, struct xor_map *prev)
{
    if (!(s->flags & CREC_IDX_VALUED))
        return;
    b->nomem |= !s->write_values && s->nwrite; /* valued without its values: can't encode */
    for (size_t i = 0; s->write_values && i < s->nwrite; i++) {
        uint8_t *last = xor_slot(prev, s->write[i]), x[64];
        const uint8_t *v = &s->write_values[64 * i];
        size_t n = 0;
        if (!last) /* out of memory: prev says so */
            break;
        for (uint64_t m = s->write_mask[i]; m; m &= m - 1) { /* its bytes, low first */
            unsigned k = (unsigned)__builtin_ctzll(m);
            x[n++] = v[k] ^ last[k];
            last[k] = v[k];
        }
        put_bytes(b, x, n);
    }
}

static void put_span(crec_fmt_buf *b, const crec_idx_span *s)
{
    put_point(b, s);
    put_varint(b, s->flags);
    put_list(b, s->touch, s->touch_mask, s->ntouch);
    put_list(b, s->write, s->write_mask, s->nwrite);
    put_varint(b, s->nk);
    for (size_t j = 0; j < 2 * s->nk; j++)
        put_varint(b, s->k[j]);
    put_list(b, s->stale, s->stale_mask, s->nstale);
}

/* The key frames, but their registers (read from KEYFRAMES when needed). */
static void put_keyframes(crec_fmt_buf *t, const crec_idx *ix)
{
    uint64_t prev = 0, prev_off = 0;

    put_varint(t, ix->nkf);
    for (size_t i = 0; i < ix->nkf; i++) {
        const crec_fmt_keyframe *k = &ix->kfs[i];
        put_varint(t, k->global_icount - prev);
        put_varint(t, ix->kf_off[i] - prev_off);
        put_varint(t, k->tid);
        put_varint(t, k->thread_icount);
        put_varint(t, k->reads_off);
        put_varint(t, k->events_off);
        put_varint(t, k->seq_off);
        put_varint(t, k->hits_before);
        prev = k->global_icount, prev_off = ix->kf_off[i];
    }
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
    put_keyframes(t, ix);
}

/* ---- a block's filter of the lines its spans touched ------------------- */

/* Probe k of `line` into a filter of 2^log2 bits (double hashing). */
static uint64_t filter_probe(uint64_t line, unsigned k, unsigned log2)
{
    uint64_t x = line * 0x9E3779B97F4A7C15ull, y;

    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
    y = (x >> 32 | x << 32) * 0x94D049BB133111EBull | 1;
    return (x + k * y) & ((1ull << log2) - 1);
}

static void filter_add(uint8_t *bits, unsigned log2, uint64_t line)
{
    for (unsigned k = 0; k < IDX_FILTER_PROBES; k++) {
        uint64_t b = filter_probe(line, k, log2);
        bits[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
}

static int filter_has(const uint8_t *bits, unsigned log2, uint64_t line)
{
    for (unsigned k = 0; k < IDX_FILTER_PROBES; k++) {
        uint64_t b = filter_probe(line, k, log2);
        if (!(bits[b >> 3] >> (b & 7) & 1))
            return 0;
    }
    return 1;
}

/* The bytes of a span's seed (those of its masks), as the table says. */
static uint64_t seed_bytes(const crec_idx_span *s)
{
    uint64_t n = 0;

    for (size_t i = 0; s->at_point && s->masks && i < s->nlines; i++)
        n += (uint64_t)__builtin_popcountll(s->masks[i]);
    return n;
}

/* ---- the writer: the file a span at a time --------------------------------- */

/*
 * Each span is encoded when it comes, into the zstd frames of its block,
 * which are compressed as they grow: the writer holds the file so far,
 * compressed, the distinct lines the block touched (its filter), and the
 * last value of each line stored in the block (put_values), never every
 * span at once (the spans of a recording of bench_hash, each over a 16 MiB
 * table, took 660 MB of the recorder's 730).  A threaded writer encodes on
 * a host thread of its own while its caller goes on.
 */
#define IDX_QUEUE 1 /* spans handed over, not yet encoded */

/* One zstd frame being written. */
struct idx_frame {
    ZSTD_CCtx *cctx;
    uint8_t *z;      /* the frame so far */
    size_t zlen, zcap;
    uint64_t len;    /* bytes put in it */
};

struct crec_idx_writer {
    crec_fmt_buf spans_tab;  /* the table's entries of the spans so far, */
    crec_fmt_buf filters;    /* ... the filters of the blocks done, */
    crec_fmt_buf blocks_tab; /* ... and their sizes */
    crec_fmt_buf blocks;     /* the blocks' frames */
    size_t nspan, nblocks, prev_kf;
    uint64_t prev_start;
    crec_idx_span *light;    /* each span's start, key frame and point flag */
    size_t caplight;

    /* the block being written */
    size_t bspans;
    struct idx_frame raw, vals;
    crec_fmt_buf tmp;        /* one span's bytes, before they are compressed */
    struct xor_map last;
    uint64_t *lines, *merged; /* the lines its spans touched: sorted, distinct */
    size_t nlines, caplines, capmerged;
    uint64_t *kr;            /* the (addr, len) the kernel wrote in it */
    size_t nkr, capkr;
    uint64_t klines;         /* ... lines of it, counted */
    int any;                 /* its spans may touch any line: no filter */
    int bad;                 /* out of memory, or a span that can't be encoded */
    int failed;              /* bad, as the caller may read it (under mu) */

    /* threaded: spans handed over, and the thread that encodes them */
    int threaded, stop;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    crec_idx_gathered q[IDX_QUEUE];
    size_t qhead, qn;
};

/* Put tmp's bytes into frame f (end: and close it).  @return 0, -1 on failure. */
static int frame_put(struct idx_frame *f, crec_fmt_buf *tmp, ZSTD_EndDirective end)
{
    ZSTD_inBuffer in = {tmp->data, tmp->len, 0};

    if (tmp->nomem)
        return -1;
    f->len += tmp->len;
    for (;;) {
        size_t room = ZSTD_CStreamOutSize(), left;
        uint8_t *z = f->z;
        ZSTD_outBuffer out;
        if (f->zcap - f->zlen < room && !(z = crec_grow(f->z, &f->zcap, f->zlen + room, 1, room)))
            return -1;
        f->z = z;
        out = (ZSTD_outBuffer){f->z + f->zlen, room, 0};
        left = ZSTD_compressStream2(f->cctx, &out, &in, end);
        if (ZSTD_isError(left))
            return -1;
        f->zlen += out.pos;
        if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
            break;
    }
    crec_fmt_buf_reset(tmp);
    return 0;
}

/* Merge a span's sorted touched lines into the block's. */
static int lines_merge(crec_idx_writer *w, const uint64_t *v, size_t n)
{
    size_t i = 0, j = 0, k = 0, need = w->nlines + n;
    uint64_t *t;

    if (need > w->capmerged) {
        size_t cap = w->capmerged;
        if (!(t = crec_grow(w->merged, &cap, need, sizeof *t, 1024)))
            return -1;
        w->merged = t, w->capmerged = cap;
    }
    while (i < w->nlines || j < n) {
        uint64_t x = j == n || (i < w->nlines && w->lines[i] <= v[j]) ? w->lines[i++] : v[j++];
        if (k == 0 || w->merged[k - 1] != x)
            w->merged[k++] = x;
    }
    t = w->lines, w->lines = w->merged, w->merged = t; /* the two swap places */
    i = w->caplines, w->caplines = w->capmerged, w->capmerged = i;
    w->nlines = k;
    return 0;
}

/* The kernel's writes of a span, for the block's filter. */
static int kernel_lines(crec_idx_writer *w, const crec_idx_span *s)
{
    if (s->flags & CREC_IDX_WILD)
        w->any = 1;
    for (size_t j = 0; j < s->nk && !w->any; j++) {
        uint64_t a = s->k[2 * j], n = s->k[2 * j + 1];
        uint64_t *t;
        if (!n)
            continue;
        w->klines += ((a + n - 1) >> CREC_IDX_LINE_SHIFT) - (a >> CREC_IDX_LINE_SHIFT) + 1;
        if (w->klines > IDX_FILTER_KLINES) {
            w->any = 1;
            break;
        }
        if (w->nkr + 2 > w->capkr) {
            size_t cap = w->capkr;
            if (!(t = crec_grow(w->kr, &cap, w->nkr + 2, sizeof *t, 64)))
                return -1;
            w->kr = t, w->capkr = cap;
        }
        w->kr[w->nkr++] = a, w->kr[w->nkr++] = n;
    }
    return 0;
}

/* The block's filter into the table: every line its spans touched, every
 * line the kernel wrote.  None (any address may be touched) when a span's
 * kernel writes are unknown or too many lines. */
static void put_filter(crec_idx_writer *w)
{
    uint64_t lines = w->nlines + (w->any ? 0 : w->klines);
    unsigned log2 = 6;
    uint8_t *bits;
    crec_fmt_buf *t = &w->filters;

    while (log2 < IDX_FILTER_LOG2_MAX && (1ull << log2) < IDX_FILTER_BITS * lines)
        log2++;
    if (w->any || !(bits = crec_calloc(1, (size_t)1 << (log2 - 3)))) {
        put_varint(t, 0);
        put_varint(t, 1);
        return;
    }
    for (size_t j = 0; j < w->nlines; j++)
        filter_add(bits, log2, w->lines[j]);
    for (size_t j = 0; j < w->nkr; j += 2)
        for (uint64_t l = w->kr[j] >> CREC_IDX_LINE_SHIFT;
             l <= (w->kr[j] + w->kr[j + 1] - 1) >> CREC_IDX_LINE_SHIFT; l++)
            filter_add(bits, log2, l);
    put_varint(t, log2);
    put_varint(t, 0);
    put_bytes(t, bits, (size_t)1 << (log2 - 3));
    crec_free(bits);
}

/* The block being written is done: its frames and its entries in the table. */
static void block_end(crec_idx_writer *w)
{
    if (!w->bspans)
        return;
    w->bad |= frame_put(&w->raw, &w->tmp, ZSTD_e_end) != 0;
    if (w->vals.len)
        w->bad |= frame_put(&w->vals, &w->tmp, ZSTD_e_end) != 0;
    w->bad |= w->raw.len > IDX_MAX_PART || w->vals.len > IDX_MAX_PART || w->last.nomem;
    put_filter(w);
    put_varint(&w->blocks_tab, w->bspans);
    put_varint(&w->blocks_tab, w->raw.zlen);
    put_varint(&w->blocks_tab, w->raw.len);
    put_varint(&w->blocks_tab, w->vals.len ? w->vals.zlen : 0);
    put_varint(&w->blocks_tab, w->vals.len);
    put_bytes(&w->blocks, w->raw.z, w->raw.zlen);
    if (w->vals.len)
        put_bytes(&w->blocks, w->vals.z, w->vals.zlen);
    w->nblocks++;
    w->bspans = 0;
    w->raw.zlen = w->vals.zlen = 0;
    w->raw.len = w->vals.len = 0;
    ZSTD_CCtx_reset(w->raw.cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_reset(w->vals.cctx, ZSTD_reset_session_only);
    xor_free(&w->last);
    w->nlines = w->nkr = 0;
    w->klines = 0;
    w->any = 0;
}

/* Encode span s (left as it is) into the file. */
static void writer_put(crec_idx_writer *w, const crec_idx_span *s)
{
    crec_idx_span *t = w->light;
    size_t cap = w->caplight;

    if (w->bad) /* the file can't be written: nothing to do */
        return;
    if (w->nspan == w->caplight && !(t = crec_grow(w->light, &cap, w->nspan + 1, sizeof *t, 64))) {
        w->bad = 1;
        return;
    }
    w->light = t, w->caplight = cap;
    w->light[w->nspan++] = (crec_idx_span){.start = s->start, .kf = s->kf,
                                           .at_point = s->at_point};
    put_varint(&w->spans_tab, s->start - w->prev_start);
    put_varint(&w->spans_tab, (uint64_t)(s->kf - w->prev_kf) << 1 | (s->at_point != 0));
    put_varint(&w->spans_tab, s->cost);
    put_varint(&w->spans_tab, seed_bytes(s));
    w->prev_start = s->start, w->prev_kf = s->kf;
    put_span(&w->tmp, s);
    w->bad |= frame_put(&w->raw, &w->tmp, ZSTD_e_continue) != 0;
    put_values(&w->tmp, s, &w->last);
    if (w->tmp.len)
        w->bad |= frame_put(&w->vals, &w->tmp, ZSTD_e_continue) != 0;
    w->bad |= w->tmp.nomem;
    crec_fmt_buf_reset(&w->tmp);
    if (lines_merge(w, s->touch, s->ntouch) != 0 || kernel_lines(w, s) != 0)
        w->bad = 1;
    if (++w->bspans == IDX_BLOCK_SPANS)
        block_end(w);
}

/* Put a span handed over in order if it needs it, and encode it. */
static void writer_take(crec_idx_writer *w, crec_idx_gathered *g)
{
    if ((g->lines || g->needs) && crec_idx_gathered_close(g) != 0)
        w->bad = 1;
    writer_put(w, &g->s);
    crec_idx_gathered_clear(g);
}

static void *writer_main(void *arg)
{
    crec_idx_writer *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        crec_idx_gathered g;
        while (!w->qn && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->qn)
            break;
        g = w->q[w->qhead];
        pthread_mutex_unlock(&w->mu);
        writer_take(w, &g);
        pthread_mutex_lock(&w->mu);
        w->qhead = (w->qhead + 1) % IDX_QUEUE, w->qn--;
        w->failed = w->bad;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Wait until every span handed over is encoded, and end the thread. */
static void writer_join(crec_idx_writer *w)
{
    if (!w->threaded)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    w->threaded = 0;
}

static int writer_init(crec_idx_writer *w)
{
    memset(w, 0, sizeof *w);
    w->raw.cctx = ZSTD_createCCtx();
    w->vals.cctx = ZSTD_createCCtx();
    if (!w->raw.cctx || !w->vals.cctx ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->raw.cctx, ZSTD_c_compressionLevel, IDX_ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->vals.cctx, ZSTD_c_compressionLevel, IDX_ZSTD_LEVEL)))
        return -1;
    return 0;
}

static void writer_release(crec_idx_writer *w)
{
    writer_join(w);
    for (size_t i = 0; i < w->qn; i++) /* handed over, never encoded (no thread) */
        crec_idx_gathered_clear(&w->q[(w->qhead + i) % IDX_QUEUE]);
    ZSTD_freeCCtx(w->raw.cctx);
    ZSTD_freeCCtx(w->vals.cctx);
    crec_free(w->raw.z);
    crec_free(w->vals.z);
    crec_fmt_buf_free(&w->spans_tab);
    crec_fmt_buf_free(&w->filters);
    crec_fmt_buf_free(&w->blocks_tab);
    crec_fmt_buf_free(&w->blocks);
    crec_fmt_buf_free(&w->tmp);
    xor_free(&w->last);
    crec_free(w->light);
    crec_free(w->lines);
    crec_free(w->merged);
    crec_free(w->kr);
}

int crec_idx_writer_new(crec_idx_writer **out, int threaded)
{
    crec_idx_writer *w = crec_malloc(sizeof *w);

    *out = NULL;
    if (!w)
        return CREC_ERR_NOMEM;
    if (writer_init(w) != 0) {
        writer_release(w);
        crec_free(w);
        return CREC_ERR_NOMEM;
    }
    if (threaded) {
        if (pthread_mutex_init(&w->mu, NULL) != 0)
            threaded = 0;
        else if (pthread_cond_init(&w->cv, NULL) != 0)
            pthread_mutex_destroy(&w->mu), threaded = 0;
        else if (crec_thread_start(&w->th, 0, writer_main, w) != 0)
            pthread_cond_destroy(&w->cv), pthread_mutex_destroy(&w->mu), threaded = 0;
        w->threaded = threaded; /* no thread: each span is encoded when it comes */
    }
    *out = w;
    return CREC_OK;
}

int crec_idx_writer_add_gathered(crec_idx_writer *w, crec_idx_gathered *g)
{
    int bad;

    if (!w->threaded) {
        writer_take(w, g);
        return w->bad ? CREC_ERR_NOMEM : CREC_OK;
    }
    pthread_mutex_lock(&w->mu);
    while (w->qn == IDX_QUEUE)
        pthread_cond_wait(&w->cv, &w->mu);
    w->q[(w->qhead + w->qn++) % IDX_QUEUE] = *g;
    memset(g, 0, sizeof *g);
    pthread_cond_broadcast(&w->cv);
    bad = w->failed;
    pthread_mutex_unlock(&w->mu);
    return bad ? CREC_ERR_NOMEM : CREC_OK;
}

int crec_idx_writer_add(crec_idx_writer *w, crec_idx_span *s)
{
    crec_idx_gathered g = {.s = *s};

    memset(s, 0, sizeof *s);
    return crec_idx_writer_add_gathered(w, &g);
}

void crec_idx_writer_free(crec_idx_writer *w)
{
    if (!w)
        return;
    writer_release(w);
    crec_free(w);
}

/* The file image: its head (the header, the table of the spans, the
 * blocks and ix's tables) into out, followed by the blocks' frames (left
 * in the writer: the image is not copied whole). */
static int writer_finish(crec_idx_writer *w, const crec_idx *ix, crec_fmt_buf *out)
{
    crec_fmt_buf table = {0};
    uint8_t magic[8] = IDX_MAGIC;
    uint64_t table_len;
    XXH3_state_t st;

    block_end(w); /* which leaves the blocks' frame empty: the table's, now */
    put_varint(&table, w->nspan);
    put_bytes(&table, w->spans_tab.data, w->spans_tab.len);
    put_varint(&table, w->nblocks); /* the filters */
    put_bytes(&table, w->filters.data, w->filters.len);
    put_varint(&table, w->nblocks);
    put_bytes(&table, w->blocks_tab.data, w->blocks_tab.len);
    put_table_tail(&table, ix);
    table_len = table.len;
    w->bad |= frame_put(&w->raw, &table, ZSTD_e_end) != 0 ||
              table_len > IDX_MAX_PART;
    XXH3_64bits_reset(&st); /* the sum of the rest: the table's frame, the blocks */
    XXH3_64bits_update(&st, w->raw.z, w->raw.zlen);
    XXH3_64bits_update(&st, w->blocks.data, w->blocks.len);
    put_bytes(out, magic, 8);
    crec_fmt_buf_u32(out, IDX_VERSION);
    crec_fmt_buf_u32(out, 0);
    crec_fmt_buf_u64(out, ix->rec_size);
    crec_fmt_buf_u64(out, ix->rec_hash);
    crec_fmt_buf_u64(out, w->raw.zlen + w->blocks.len);
    crec_fmt_buf_u64(out, XXH3_64bits_digest(&st));
    crec_fmt_buf_u32(out, (uint32_t)w->raw.zlen);
    crec_fmt_buf_u32(out, (uint32_t)table_len);
    put_bytes(out, w->raw.z, w->raw.zlen);
    w->bad |= w->spans_tab.nomem || w->filters.nomem || w->blocks_tab.nomem ||
              w->blocks.nomem;
    crec_fmt_buf_free(&table);
    if (w->bad)
        out->nomem = 1;
    return out->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

int crec_idx_writer_finish(crec_idx_writer *w, crec_idx *ix, crec_fmt_buf *head,
                           const uint8_t **tail, size_t *tail_len)
{
    int rc;

    writer_join(w);
    ix->spans = w->light, ix->nspan = w->nspan; /* what a check of them needs */
    w->light = NULL, w->caplight = 0;
    rc = writer_finish(w, ix, head);
    *tail = w->blocks.data, *tail_len = w->blocks.len;
    return rc;
}

int crec_idx_encode(const crec_idx *ix, crec_fmt_buf *out)
{
    crec_idx_writer w;
    int rc = CREC_ERR_NOMEM;

    if (writer_init(&w) == 0) {
        for (size_t i = 0; i < ix->nspan; i++)
            writer_put(&w, &ix->spans[i]);
        rc = writer_finish(&w, ix, out);
        put_bytes(out, w.blocks.data, w.blocks.len);
        rc = rc == CREC_OK && out->nomem ? CREC_ERR_NOMEM : rc;
    }
    if (rc != CREC_OK)
        out->nomem = 1;
    writer_release(&w);
    return rc;
}

/* ---- decoding ------------------------------------------------------------ */

/* A bounds-checked walk over decompressed bytes, with the error to fill. */
struct body {
    crec_fmt_cur c;
    crec_error *err;
};

static int get_varint(struct body *d, uint64_t *v)
{
    if (d->c.pos < d->c.len && d->c.p[d->c.pos] < 0x80) { /* most line deltas: one byte */
        *v = d->c.p[d->c.pos++];
        return CREC_OK;
    }
    return crec_fmt_cur_varint(&d->c, v, "number of the index", d->err);
}

/* A count of items of at least `each` bytes that must fit in what is left. */
static int get_count(struct body *d, size_t each, uint64_t *n, const char *what)
{
    int rc = get_varint(d, n);

    if (rc == CREC_OK && *n > (d->c.len - d->c.pos) / each)
        rc = crec_error_corrupt(d->err, "index: %" PRIu64 " %s in %zu bytes", *n, what,
                                d->c.len - d->c.pos);
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

/* n byte masks, none 0: the bounds are checked once, as a block holds
 * millions of them (a part of replay --jobs reads a point's seed). */
static int get_masks(struct body *d, uint64_t *mask, uint64_t n, const char *empty)
{
    const uint8_t *p = d->c.p + d->c.pos;

    if (n > (d->c.len - d->c.pos) / 8)
        return crec_error_corrupt(d->err, "index: ends inside a list of masks");
    for (uint64_t i = 0; i < n; i++, p += 8)
        if ((mask[i] = crec_le_get(p, 8)) == 0)
            return crec_error_corrupt(d->err, "%s", empty);
    d->c.pos += 8 * n;
    return CREC_OK;
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
    return get_masks(d, *mask, cnt, "index: a line with an empty byte mask");
}

static void seed_clear(crec_idx_span *s)
{
    crec_free(s->lines);
    crec_free(s->masks);
    crec_free(s->values);
    s->lines = NULL, s->masks = NULL, s->values = NULL;
    s->nlines = 0;
    s->seed_read = 0;
}

/* A span's restart point: a framed KEYFRAME record, read by the format's
 * decoder (once: a point read again is passed over).  Its seed follows. */
static int get_point(struct body *d, crec_idx_span *s)
{
    const uint8_t *body;
    size_t len;
    int kind, rc;

    if ((rc = crec_fmt_frame_next(&d->c, &kind, &body, &len, d->err)))
        return rc;
    if (kind != CREC_FMT_K_KEYFRAME)
        return crec_error_corrupt(d->err, "index: a restart point is not a KEYFRAME record");
    if (s->point)
        return CREC_OK;
    if (!(s->point = crec_malloc(sizeof *s->point)))
        return nomem(d->err);
    if ((rc = crec_fmt_kf_decode(body, len, s->point, d->err)) == CREC_OK &&
        s->point->global_icount != s->start)
        rc = crec_error_corrupt(d->err, "index: a restart point at %" PRIu64 " for a span at "
                                "%" PRIu64, s->point->global_icount, s->start);
    if (rc != CREC_OK) {
        crec_free(s->point);
        s->point = NULL;
    }
    return rc;
}

/* A point's seed: the memory a run starting or passing there is given. */
static int get_seed(struct body *d, crec_idx_span *s)
{
    uint64_t n, prev = 0, delta;
    int rc;

    seed_clear(s);
    if ((rc = get_count(d, 10, &n, "lines to restore"))) /* delta, mask, a byte each */
        return rc;
    s->lines = alloc_n(n, sizeof *s->lines);
    s->masks = alloc_n(n, sizeof *s->masks);
    s->values = crec_calloc(n ? n : 1, 64);
    if (!s->lines || !s->masks || !s->values)
        return nomem(d->err);
    s->nlines = n;
    for (size_t i = 0; i < n; i++) {
        if ((rc = get_varint(d, &delta)))
            return rc;
        if (i > 0 && delta == 0)
            return crec_error_corrupt(d->err, "index: restored lines not increasing");
        s->lines[i] = prev += delta;
    }
    if ((rc = get_masks(d, s->masks, n, "index: a restored line with an empty mask")))
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t m = s->masks[i];
        uint8_t *v = &s->values[64 * i];
        if ((unsigned)__builtin_popcountll(m) > d->c.len - d->c.pos)
            return crec_error_corrupt(d->err, "index: ends inside the restored bytes");
        if (m == ~0ull) { /* most lines are whole */
            memcpy(v, d->c.p + d->c.pos, 64);
            d->c.pos += 64;
            continue;
        }
        for (; m; m &= m - 1)
            v[__builtin_ctzll(m)] = d->c.p[d->c.pos++];
    }
    s->seed_read = 1;
    return CREC_OK;
}

/* The number of bytes a span's values take (CREC_IDX_VALUED). */
static uint64_t values_len(const crec_idx_span *s)
{
    uint64_t n = 0;

    for (size_t i = 0; i < s->nwrite; i++)
        n += (uint64_t)__builtin_popcountll(s->write_mask[i]);
    return n;
}

/* The values of a span's stores at p (values_len bytes, checked to be
 * there), undoing put_values. */
static int get_values(const uint8_t *p, crec_idx_span *s, struct xor_map *prev, int keep,
                      uint64_t lo, uint64_t hi, crec_error *err)
{
    uint8_t scratch[64];

    if (keep && !s->write_values && !(s->write_values = crec_calloc(s->nwrite ? s->nwrite : 1, 64)))
        return nomem(err);
    for (size_t i = 0; i < s->nwrite; i++) {
        uint8_t *last, *v = keep ? &s->write_values[64 * i] : scratch; /* only `last` is kept */
        if (s->write[i] < lo || s->write[i] > hi) { /* a line not asked for: passed over */
            p += __builtin_popcountll(s->write_mask[i]);
            continue;
        }
        if (!(last = xor_slot(prev, s->write[i])))
            return nomem(err);
        /* its bytes, low first, a run of them at a time (stores are whole
         * words, and lines often whole) */
        for (uint64_t m = s->write_mask[i]; m;) {
            unsigned k = (unsigned)__builtin_ctzll(m);
            uint64_t r = m >> k; /* bit 0 set, the top k bits clear */
            unsigned run = r == ~0ull ? 64 : (unsigned)__builtin_ctzll(~r);
            for (unsigned j = k; j < k + run; j++)
                last[j] = v[j] = *p++ ^ last[j];
            m = k + run >= 64 ? 0 : m & ~0ull << (k + run);
        }
    }
    return CREC_OK;
}

/* ---- passing over what is not read ------------------------------------- */

/* Pass over n varints. */
static int skip_varints(struct body *d, uint64_t n)
{
    for (; n > 0; n--) {
        while (d->c.pos < d->c.len && d->c.p[d->c.pos] >= 0x80)
            d->c.pos++;
        if (d->c.pos++ >= d->c.len)
            return crec_error_corrupt(d->err, "index: a block ends inside a number");
    }
    return CREC_OK;
}

/* Pass over n bytes. */
static int skip_bytes(struct body *d, uint64_t n)
{
    if (n > d->c.len - d->c.pos)
        return crec_error_corrupt(d->err, "index: a block ends %" PRIu64 " bytes early",
                                  n - (d->c.len - d->c.pos));
    d->c.pos += n;
    return CREC_OK;
}

/* Pass over a list of lines (get_list), or a point's seed (get_point:
 * seed 1, whose masks say how many bytes follow). */
static int skip_lines(struct body *d, int seed)
{
    uint64_t n, bytes = 0;
    int rc = get_count(d, seed ? 10 : 9, &n, "lines");

    if (rc || (rc = skip_varints(d, n)))
        return rc;
    if (n > (d->c.len - d->c.pos) / 8)
        return crec_error_corrupt(d->err, "index: ends inside a list of masks");
    for (uint64_t i = 0; seed && i < n; i++)
        bytes += (uint64_t)__builtin_popcountll(crec_le_get(d->c.p + d->c.pos + 8 * i, 8));
    return skip_bytes(d, 8 * n + bytes);
}

/* Pass over a span (get_span), reading nothing. */
static int skip_span(struct body *d, int point)
{
    const uint8_t *body;
    size_t len;
    uint64_t v;
    int kind, rc;

    if (point && ((rc = crec_fmt_frame_next(&d->c, &kind, &body, &len, d->err)) ||
                  (rc = skip_lines(d, 1))))
        return rc;
    if ((rc = get_varint(d, &v)) || (rc = skip_lines(d, 0)) || (rc = skip_lines(d, 0)) ||
        (rc = get_count(d, 2, &v, "kernel ranges")) || (rc = skip_varints(d, 2 * v)))
        return rc;
    return skip_lines(d, 0);
}

/* A span's contents; its start, key frame and whether it has a point come
 * from the table; *nvalues += the bytes its values take in the block's
 * values, which are read when a query needs them (crec_idx_need_values). */
static int get_span(struct body *d, crec_idx_span *s, int point, uint64_t *nvalues)
{
    uint64_t v;
    int rc;

    /* a point's seed is read when a run starts or passes there
     * (crec_idx_need_point): most queries answer without */
    if (point && ((rc = get_point(d, s)) || (rc = skip_lines(d, 1))))
        return rc;
    if ((rc = get_varint(d, &v)))
        return rc;
    if (v & ~(uint64_t)(CREC_IDX_WILD | CREC_IDX_VALUED))
        return crec_error_corrupt(d->err, "index: reserved span flags set");
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
    if ((rc = get_list(d, &s->stale, &s->stale_mask, &s->nstale)))
        return rc;
    if (s->flags & CREC_IDX_VALUED)
        *nvalues += values_len(s);
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

/* The spans' starts and key frames, checked to follow each other. */
static int get_spans(struct body *d, crec_idx *ix, int costs)
{
    uint64_t n, prev = 0, v;
    size_t kf = 0;
    int rc = get_count(d, 2, &n, "spans");

    if (rc)
        return rc;
    if (!(ix->spans = crec_calloc(n ? n : 1, sizeof *ix->spans)))
        return nomem(d->err);
    ix->nspan = n;
    for (size_t i = 0; i < n; i++) {
        crec_idx_span *s = &ix->spans[i];
        if ((rc = get_varint(d, &v)))
            return rc;
        s->start = prev += v;
        if ((rc = get_varint(d, &v)))
            return rc;
        s->at_point = v & 1;
        kf += (size_t)(v >> 1);
        s->kf = kf;
        /* a point continues the segment before it; a key frame starts the next */
        if (s->at_point ? i == 0 || v >> 1 != 0 : (i == 0 ? v >> 1 != 0 : v >> 1 != 1))
            return crec_error_corrupt(d->err, "index: span %zu does not follow the one before",
                                      i);
        if (costs && ((rc = get_varint(d, &s->cost)) || (rc = get_varint(d, &s->seed_bytes))))
            return rc;
    }
    return CREC_OK;
}

/* The blocks' filters (version 6), before the blocks are known: *out,
 * *n of them (0, or one a block: checked by get_table). */
static int get_filters(struct body *d, struct idx_filter **out, uint64_t *n)
{
    int rc = get_count(d, 2, n, "filters");

    if (rc)
        return rc;
    if (!(*out = crec_calloc(*n ? *n : 1, sizeof **out)))
        return nomem(d->err);
    for (uint64_t i = 0; i < *n; i++) {
        uint64_t log2, flags;
        if ((rc = get_varint(d, &log2)) || (rc = get_varint(d, &flags)))
            return rc;
        if (flags & ~1ull || (log2 != 0) == (flags & 1) || (log2 && (log2 < 6 ||
                                                                     log2 > IDX_FILTER_LOG2_MAX)))
            return crec_error_corrupt(d->err, "index: filter %" PRIu64 " of %" PRIu64
                                      " bits, flags %" PRIu64, i, log2, flags);
        if (!log2)
            continue;
        if ((1ull << (log2 - 3)) > d->c.len - d->c.pos)
            return crec_error_corrupt(d->err, "index: filter %" PRIu64 " is cut short", i);
        if (!((*out)[i].bits = crec_malloc((size_t)1 << (log2 - 3))))
            return nomem(d->err);
        memcpy((*out)[i].bits, d->c.p + d->c.pos, (size_t)1 << (log2 - 3));
        d->c.pos += (size_t)1 << (log2 - 3);
        (*out)[i].log2 = (unsigned)log2;
    }
    return CREC_OK;
}

static void filters_free(struct idx_filter *f, uint64_t n)
{
    for (uint64_t i = 0; f && i < n; i++)
        crec_free(f[i].bits);
    crec_free(f);
}

static int get_blocks(struct body *d, crec_idx *ix, size_t zoff, size_t zend)
{
    uint64_t nblocks, n, zlen, len, vzlen, vlen;
    size_t span = 0;
    int rc;

    if ((rc = get_count(d, 5, &nblocks, "blocks")))
        return rc;
    if (!(ix->blocks = crec_calloc(nblocks ? nblocks : 1, sizeof *ix->blocks)))
        return nomem(d->err);
    ix->nblocks = nblocks;
    for (size_t b = 0; b < nblocks; b++) {
        if ((rc = get_varint(d, &n)) || (rc = get_varint(d, &zlen)) ||
            (rc = get_varint(d, &len)) || (rc = get_varint(d, &vzlen)) ||
            (rc = get_varint(d, &vlen)))
            return rc;
        if (n == 0 || n > ix->nspan - span || zlen > zend - zoff ||
            vzlen > zend - zoff - zlen || (vzlen == 0) != (vlen == 0))
            return crec_error_corrupt(d->err, "index: block %zu does not fit", b);
        ix->blocks[b] = (struct crec_idx_block){.first = span, .n = n, .zoff = zoff,
                                                .zlen = zlen, .len = len, .vzoff = zoff + zlen,
                                                .vzlen = vzlen, .vlen = vlen};
        span += n;
        zoff += zlen + vzlen;
    }
    if (span != ix->nspan || zoff != zend)
        return crec_error_corrupt(d->err, "index: the blocks hold %zu spans and end at %zu, not "
                                  "%zu and %zu", span, zoff, ix->nspan, zend);
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

static int get_keyframes(struct body *d, crec_idx *ix)
{
    uint64_t n, v, prev = 0, prev_off = 0;
    int rc = get_count(d, 8, &n, "key frames");

    if (rc)
        return rc;
    ix->kfs = crec_calloc(n ? n : 1, sizeof *ix->kfs);
    ix->kf_off = alloc_n(n, sizeof *ix->kf_off);
    if (!ix->kfs || !ix->kf_off)
        return nomem(d->err);
    ix->nkf = n;
    for (size_t i = 0; i < n; i++) {
        crec_fmt_keyframe *k = &ix->kfs[i];
        if ((rc = get_varint(d, &v)))
            return rc;
        k->global_icount = prev += v;
        if ((rc = get_varint(d, &v)))
            return rc;
        ix->kf_off[i] = prev_off += v;
        if ((rc = get_varint(d, &v)))
            return rc;
        if (v > UINT32_MAX)
            return crec_error_corrupt(d->err, "index: key frame %zu of thread %" PRIu64, i, v);
        k->tid = (uint32_t)v;
        if ((rc = get_varint(d, &k->thread_icount)) || (rc = get_varint(d, &k->reads_off)) ||
            (rc = get_varint(d, &k->events_off)) || (rc = get_varint(d, &k->seq_off)) ||
            (rc = get_varint(d, &k->hits_before)))
            return rc;
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
        if (d->c.len - d->c.pos < sizeof b->hash.b)
            return crec_error_corrupt(d->err, "index: ends inside a blob hash");
        memcpy(b->hash.b, d->c.p + d->c.pos, sizeof b->hash.b);
        d->c.pos += sizeof b->hash.b;
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
    uint64_t rest, tz, version, nf = 0;
    struct body d = {{NULL, 0, 0}, err};
    struct idx_filter *f = NULL;
    uint8_t *raw = NULL;
    int rc;

    if (len < IDX_HEAD || memcmp(data, IDX_MAGIC, 8) != 0)
        return crec_error_corrupt(err, "index: not a crec index file");
    version = crec_le_get(data + IDX_OFF_VERSION, 4);
    if (version != IDX_VERSION && version != IDX_VERSION_NO_COST)
        return crec_error_set(err, CREC_ERR_VERSION, "index: version %" PRIu64
                              " (this crec reads versions %d and %d)", version,
                              IDX_VERSION_NO_COST, IDX_VERSION);
    rest = crec_le_get(data + IDX_OFF_REST_LEN, 8);
    tz = crec_le_get(data + IDX_OFF_TABLE_ZLEN, 4);
    if (rest != len - IDX_HEAD || tz > rest)
        return crec_error_corrupt(err, "index: %" PRIu64 " bytes after the header, file has %zu",
                                  rest, len - IDX_HEAD);
    if (XXH3_64bits(data + IDX_HEAD, rest) != crec_le_get(data + IDX_OFF_REST_SUM, 8))
        return crec_error_corrupt(err, "index: checksum mismatch");
    ix->rec_size = crec_le_get(data + IDX_OFF_REC_SIZE, 8);
    ix->rec_hash = crec_le_get(data + IDX_OFF_REC_HASH, 8);
    rc = inflate_part(data + IDX_HEAD, tz, crec_le_get(data + IDX_OFF_TABLE_LEN, 4), &raw, err);
    if (rc)
        return rc;
    d.c.p = raw, d.c.len = crec_le_get(data + IDX_OFF_TABLE_LEN, 4);
    if (!(rc = get_spans(&d, ix, version >= IDX_VERSION)) &&
        !(rc = version >= IDX_VERSION ? get_filters(&d, &f, &nf) : CREC_OK) &&
        !(rc = get_blocks(&d, ix, IDX_HEAD + tz, len)) && !(rc = get_ranges(&d, ix)) &&
        !(rc = get_syscalls(&d, ix)) && !(rc = get_blobs(&d, ix)) &&
        !(rc = get_keyframes(&d, ix)) && d.c.pos != d.c.len)
        rc = crec_error_corrupt(err, "index: %zu stray bytes in the table", d.c.len - d.c.pos);
    if (rc == CREC_OK && nf != 0 && nf != ix->nblocks)
        rc = crec_error_corrupt(err, "index: %" PRIu64 " filters for %zu blocks", nf,
                                ix->nblocks);
    for (uint64_t i = 0; rc == CREC_OK && i < nf; i++) { /* the blocks own them now */
        ix->blocks[i].filter = f[i].bits, ix->blocks[i].filter_log2 = f[i].log2;
        f[i].bits = NULL;
    }
    filters_free(f, nf);
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

void crec_idx_span_clear(crec_idx_span *s)
{
    crec_free(s->point);
    crec_free(s->lines);
    crec_free(s->masks);
    crec_free(s->values);
    crec_free(s->touch);
    crec_free(s->touch_mask);
    crec_free(s->write);
    crec_free(s->write_mask);
    crec_free(s->write_values);
    crec_free(s->stale);
    crec_free(s->stale_mask);
    crec_free(s->k);
    memset(s, 0, sizeof *s);
}

static void block_values_free(struct crec_idx_block *b)
{
    crec_free(b->vraw);
    b->vraw = NULL;
}

static void block_raw_free(struct crec_idx_block *b)
{
    crec_free(b->raw);
    crec_free(b->span_at);
    b->raw = NULL, b->span_at = NULL;
    b->span_known = 0;
    block_values_free(b);
}

/* Forget what a block's spans hold (not what the table says). */
static void block_clear(crec_idx *ix, struct crec_idx_block *b)
{
    block_raw_free(b);
    for (size_t i = b->first; i < b->first + b->n; i++) {
        crec_idx_span keep = ix->spans[i]; /* what the table said */
        crec_idx_span_clear(&ix->spans[i]);
        ix->spans[i].start = keep.start, ix->spans[i].kf = keep.kf;
        ix->spans[i].at_point = keep.at_point, ix->spans[i].cost = keep.cost;
        ix->spans[i].seed_bytes = keep.seed_bytes;
    }
    b->decoded = b->valued = 0;
}

/* The block holding span seg (there are blocks). */
static struct crec_idx_block *block_of(crec_idx *ix, size_t seg)
{
    size_t lo = 0, hi = ix->nblocks;

    while (hi - lo > 1) { /* the last block starting at or before seg */
        size_t m = lo + (hi - lo) / 2;
        if (ix->blocks[m].first <= seg)
            lo = m;
        else
            hi = m;
    }
    return &ix->blocks[lo];
}

int crec_idx_may_touch(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len)
{
    const struct crec_idx_block *b;
    uint64_t first, last;

    if (!ix->blocks || seg >= ix->nspan || len == 0)
        return 1;
    b = block_of((crec_idx *)ix, seg);
    first = addr >> CREC_IDX_LINE_SHIFT, last = (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
    if (!b->filter || last < first || last - first > 64) /* none, or a range too long to ask */
        return 1;
    for (uint64_t l = first; l <= last; l++)
        if (filter_has(b->filter, b->filter_log2, l))
            return 1;
    return 0;
}

/* ---- decoding a block, and a point's seed when a run needs it ----------- */

/*
 * A block is decompressed once and kept (raw), with where each of its
 * spans lies (span_at): the seeds of its points are read only when a run
 * starts or passes there (crec_idx_need_point), and a part of `replay
 * --jobs` reads its points without the lists of every span (bench_hash:
 * 12 spans in a block of 110 MB, each seed 16 MB).
 */
static int block_raw(crec_idx *ix, struct crec_idx_block *b, crec_error *err)
{
    int rc;

    if (b->raw)
        return CREC_OK;
    if ((rc = inflate_part(ix->image + b->zoff, b->zlen, b->len, &b->raw, err)))
        return rc;
    if (!(b->span_at = alloc_n(b->n, sizeof *b->span_at))) {
        block_raw_free(b);
        return nomem(err);
    }
    return CREC_OK;
}

/* Where each span of the block lies, found by passing over them, when no
 * decoding of the block found it (a part of replay --jobs). */
static int block_spans(crec_idx *ix, struct crec_idx_block *b, crec_error *err)
{
    struct body d = {{NULL, 0, 0}, err};
    int rc = block_raw(ix, b, err);

    if (rc != CREC_OK || b->span_known)
        return rc;
    d.c.p = b->raw, d.c.len = b->len;
    for (size_t i = 0; i < b->n; i++) {
        b->span_at[i] = d.c.pos;
        if ((rc = skip_span(&d, ix->spans[b->first + i].at_point))) {
            block_raw_free(b);
            return rc;
        }
    }
    b->span_known = 1;
    return CREC_OK;
}

int crec_idx_need_point(crec_idx *ix, size_t seg, crec_error *err)
{
    struct crec_idx_block *b;
    struct body d = {{NULL, 0, 0}, err};
    crec_idx_span *s;
    int rc;

    if (!ix->blocks || seg >= ix->nspan || !ix->spans[seg].at_point ||
        ix->spans[seg].seed_read)
        return CREC_OK; /* built in memory, read, or no point */
    b = block_of(ix, seg);
    if ((rc = block_spans(ix, b, err)))
        return rc;
    s = &ix->spans[seg];
    d.c.p = b->raw, d.c.len = b->len, d.c.pos = b->span_at[seg - b->first];
    if ((rc = get_point(&d, s)) == CREC_OK)
        rc = get_seed(&d, s);
    if (rc != CREC_OK) {
        seed_clear(s);
        if (!b->decoded) { /* a decoded block's point stays: its lists name it */
            crec_free(s->point);
            s->point = NULL;
        }
    }
    return rc;
}

static int decode_block(crec_idx *ix, struct crec_idx_block *b, crec_error *err)
{
    struct body d = {{NULL, 0, 0}, err};
    uint64_t nvalues = 0;
    int rc = block_raw(ix, b, err);

    d.c.p = b->raw, d.c.len = b->len;
    for (size_t i = b->first; rc == CREC_OK && i < b->first + b->n; i++) {
        b->span_at[i - b->first] = d.c.pos; /* where a seed is read later */
        rc = get_span(&d, &ix->spans[i], ix->spans[i].at_point, &nvalues);
    }
    b->span_known = rc == CREC_OK;
    if (rc == CREC_OK && d.c.pos != d.c.len)
        rc = crec_error_corrupt(err, "index: %zu stray bytes in a block", d.c.len - d.c.pos);
    if (rc == CREC_OK && nvalues != b->vlen)
        rc = crec_error_corrupt(err, "index: a block's values take %" PRIu64 " bytes, not %zu",
                                nvalues, b->vlen);
    b->decoded = rc == CREC_OK;
    b->valued = rc == CREC_OK && b->vlen == 0;
    if (rc != CREC_OK)
        block_clear(ix, b);
    return rc;
}

/*
 * The values span `seg` of a decoded block stored in lines [lo, hi] (every
 * valued span's, with `all`).  Each value is XORed with the block's last
 * one of its line before it, so a span's need every span's before it in
 * the block, not those after; a query needs one span's, that of the span
 * that last stored its address, and of the lines it asks for: the spans
 * before are passed over, a line not asked for a count of its bytes, so a
 * query does not pay for the values of a block's every store.
 */
static int block_values(crec_idx *ix, struct crec_idx_block *b, size_t seg, int all, uint64_t lo,
                        uint64_t hi, crec_error *err)
{
    struct xor_map last = {0};
    size_t at = 0, end = all ? b->first + b->n : seg + 1;
    int rc = CREC_OK;

    if (!b->vraw && (rc = inflate_part(ix->image + b->vzoff, b->vzlen, b->vlen, &b->vraw, err)))
        return rc;
    for (size_t i = b->first; i < end && all; i++) /* room for the most of one span */
        if (ix->spans[i].flags & CREC_IDX_VALUED && ix->spans[i].nwrite > last.want)
            last.want = ix->spans[i].nwrite;
    for (size_t i = b->first; rc == CREC_OK && i < end; i++)
        if (ix->spans[i].flags & CREC_IDX_VALUED) {
            crec_idx_span *s = &ix->spans[i];
            int keep = all || i == seg;
            rc = get_values(b->vraw + at, s, &last, keep, lo, hi, err);
            at += values_len(s); /* the sum was checked: vlen */
            if (keep)
                s->values_part = !all, s->vlo = lo, s->vhi = hi;
        }
    xor_free(&last);
    if (rc != CREC_OK) {
        block_clear(ix, b);
        return rc;
    }
    if (all) {
        block_values_free(b);
        b->valued = 1;
    }
    return CREC_OK;
}

int crec_idx_need_values(crec_idx *ix, size_t seg, uint64_t addr, uint64_t len, crec_error *err)
{
    struct crec_idx_block *b;
    crec_idx_span *s;
    uint64_t lo = addr >> CREC_IDX_LINE_SHIFT, hi = (addr + (len ? len : 1) - 1) >> CREC_IDX_LINE_SHIFT;
    int rc;

    if (!ix->blocks || seg >= ix->nspan)
        return CREC_OK; /* built in memory: the values are there */
    b = block_of(ix, seg);
    if (!b->decoded && (rc = decode_block(ix, b, err)) != CREC_OK)
        return rc;
    s = &ix->spans[seg];
    if (b->valued || !(s->flags & CREC_IDX_VALUED) ||
        (s->write_values && (!s->values_part || (s->vlo <= lo && hi <= s->vhi))))
        return CREC_OK;
    if (s->write_values) { /* others asked before: theirs too */
        lo = lo < s->vlo ? lo : s->vlo;
        hi = hi > s->vhi ? hi : s->vhi;
    }
    return block_values(ix, b, seg, 0, lo, hi, err);
}

int crec_idx_need(crec_idx *ix, size_t seg, crec_error *err)
{
    struct crec_idx_block *b;

    if (!ix->blocks || seg >= ix->nspan)
        return CREC_OK; /* built in memory: every segment is there */
    b = block_of(ix, seg);
    return b->decoded ? CREC_OK : decode_block(ix, b, err);
}

int crec_idx_need_all(crec_idx *ix, crec_error *err)
{
    for (size_t b = 0; b < ix->nblocks; b++) {
        int rc = CREC_OK;
        if (!ix->blocks[b].decoded)
            rc = decode_block(ix, &ix->blocks[b], err);
        if (rc == CREC_OK && !ix->blocks[b].valued)
            rc = block_values(ix, &ix->blocks[b], 0, 1, 0, UINT64_MAX, err);
        for (size_t i = 0; rc == CREC_OK && i < ix->blocks[b].n; i++)
            rc = crec_idx_need_point(ix, ix->blocks[b].first + i, err);
        if (rc != CREC_OK)
            return rc;
    }
    return CREC_OK;
}

void crec_idx_free(crec_idx *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nspan && ix->spans; i++)
        crec_idx_span_clear(&ix->spans[i]);
    crec_free(ix->spans);
    for (size_t b = 0; b < ix->nblocks && ix->blocks; b++) {
        block_raw_free(&ix->blocks[b]);
        crec_free(ix->blocks[b].filter);
    }
    crec_free(ix->blocks);
    crec_free(ix->image);
    crec_free(ix->blobs);
    crec_free(ix->mapped);
    crec_free(ix->syscalls);
    crec_free(ix->kfs);
    crec_free(ix->kf_off);
    crec_free(ix);
}
