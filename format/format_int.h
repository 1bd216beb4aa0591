/*
 * format_int.h - private to format/: the fixed on-disk layouts and the
 * byte-level helpers shared by the writer and the reader.
 *
 * File layout (docs/FORMAT.md §2), every integer little-endian:
 *
 *   offset  size  field
 *   0       8     magic 89 43 52 45 43 0D 0A 1A  ("\x89CREC\r\n\x1a")
 *   8       4     format version (u32 LE): CREC_FMT_VERSION written,
 *                 CREC_FMT_MIN_VERSION .. CREC_FMT_VERSION read
 *   12      4     reserved, must be zero
 *   16      ...   HEADER chunk, then data chunks, then the DIRECTORY chunk
 *   end-32  32    trailer
 *
 * Chunk (§3): a 40-byte frame header, then `clen` bytes of one zstd frame.
 *
 *   0   4  chunk magic "CRCK" (43 52 43 4B)
 *   4   1  stream type
 *   5   3  version 3: process number (u24 LE), 0 for the shared streams;
 *          versions 1 and 2: reserved, must be zero
 *   8   4  thread id (u32 LE), 0 for global streams
 *   12  4  chunk sequence number within its stream (u32 LE)
 *   16  8  uncompressed offset of the chunk within its stream (u64 LE)
 *   24  4  compressed length clen (u32 LE)
 *   28  4  uncompressed length ulen (u32 LE)
 *   32  8  XXH3-64 (seed 0) of bytes 0..31 followed by the clen payload bytes
 *
 * Trailer (§5):
 *
 *   0   8  file offset of the DIRECTORY chunk (u64 LE)
 *   8   8  total length of the DIRECTORY chunk, frame header included
 *   16  8  XXH3-64 of bytes 0..15
 *   24  8  magic "CRECEND\0"
 */
#ifndef CREC_FORMAT_INT_H
#define CREC_FORMAT_INT_H

#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

#define FMT_MAGIC "\x89" "CREC\r\n\x1a"
#define FMT_MAGIC_LEN 8
#define FMT_PREAMBLE_LEN 16
#define FMT_CHUNK_MAGIC "CRCK"
#define FMT_CHUNK_HDR 40
#define FMT_TRAILER_MAGIC "CRECEND\0"
#define FMT_TRAILER_LEN 32
#define FMT_TRAILER_DIR_OFF 0  /* the trailer's fields (table above) */
#define FMT_TRAILER_DIR_LEN 8
#define FMT_TRAILER_SUM 16     /* XXH3-64 of the 16 bytes before it */
#define FMT_TRAILER_MAGIC_AT 24
#define FMT_PREAMBLE_VERSION 8 /* the preamble's version field */
#define FMT_MAX_VARINT CREC_VARINT_MAX
#define FMT_DIR_ENTRY_MIN 15 /* smallest encoded directory entry */

/* ---- fixed-width little-endian integers: common.h's, by width ---------- */
static inline void fmt_put_u16(uint8_t *p, uint16_t v) { crec_le_put(p, v, 2); }
static inline void fmt_put_u32(uint8_t *p, uint32_t v) { crec_le_put(p, v, 4); }
static inline void fmt_put_u64(uint8_t *p, uint64_t v) { crec_le_put(p, v, 8); }
static inline uint16_t fmt_get_u16(const uint8_t *p) { return (uint16_t)crec_le_get(p, 2); }
static inline uint32_t fmt_get_u32(const uint8_t *p) { return (uint32_t)crec_le_get(p, 4); }
static inline uint64_t fmt_get_u64(const uint8_t *p) { return crec_le_get(p, 8); }

/* ---- buffer appends (bytes.c); failures latch b->nomem -----------------
 * The ones other modules use too (the index file) are format.h's
 * crec_fmt_buf_*; format's own files call them by these short names. */
#define fmt_buf_bytes crec_fmt_buf_bytes
#define fmt_buf_u32 crec_fmt_buf_u32
#define fmt_buf_u64 crec_fmt_buf_u64
#define fmt_buf_varint crec_fmt_buf_varint
void fmt_buf_u8(crec_fmt_buf *b, uint8_t v);
void fmt_buf_u16(crec_fmt_buf *b, uint16_t v);
void fmt_buf_svarint(crec_fmt_buf *b, int64_t v);
void fmt_buf_str(crec_fmt_buf *b, const char *s, size_t n);
void fmt_buf_hash(crec_fmt_buf *b, const crec_fmt_hash *h);
/* Frame the bytes appended since `start` (a record body) as kind+len+body. */
size_t fmt_frame_begin(crec_fmt_buf *b, int kind);
void fmt_frame_end(crec_fmt_buf *b, size_t start);
size_t fmt_varint_len(uint64_t v);

/* ---- cursor reads (bytes.c); each fails with a message naming `what` ---
 * Again format.h's crec_fmt_cur_* where other modules need them. */
#define fmt_cur_u32 crec_fmt_cur_u32
#define fmt_cur_u64 crec_fmt_cur_u64
#define fmt_cur_bytes crec_fmt_cur_bytes
#define fmt_cur_varint crec_fmt_cur_varint
#define fmt_cur_end crec_fmt_cur_end
int fmt_cur_u8(crec_fmt_cur *c, uint8_t *v, const char *what, crec_error *err);
int fmt_cur_u16(crec_fmt_cur *c, uint16_t *v, const char *what, crec_error *err);
int fmt_cur_varint32(crec_fmt_cur *c, uint32_t *v, const char *what, crec_error *err);
int fmt_cur_svarint(crec_fmt_cur *c, int64_t *v, const char *what, crec_error *err);
int fmt_cur_str(crec_fmt_cur *c, const uint8_t **s, size_t *n, const char *what,
                crec_error *err);
int fmt_cur_hash(crec_fmt_cur *c, crec_fmt_hash *h, const char *what, crec_error *err);

/* ---- chunk frame header ------------------------------------------------- */
typedef struct fmt_chunk {
    uint64_t file_off; /* where the frame header starts */
    uint8_t type;
    uint32_t proc;     /* version 3: the process (< 2^24) */
    uint32_t tid, seq;
    uint64_t uoff;
    uint32_t clen, ulen;
    uint64_t sum;
} fmt_chunk;

void fmt_chunk_pack(uint8_t hdr[FMT_CHUNK_HDR], const fmt_chunk *c);
/* Parse and range-check a frame header (not the checksum) of a file of
 * format `version` (a process number only from version 3 on). */
int fmt_chunk_unpack(uint32_t version, const uint8_t hdr[FMT_CHUNK_HDR], uint64_t file_off,
                     fmt_chunk *c, crec_error *err);
#define FMT_MAX_PROC ((1u << 24) - 1) /* the chunk header's field */
uint64_t fmt_chunk_sum(const uint8_t hdr[FMT_CHUNK_HDR], const uint8_t *payload, size_t clen);

/* ---- the writer (writer.c; ring.c reads and rewrites its state) -------- */

struct wstream {
    uint8_t type;
    uint32_t proc;    /* per-process streams: its process; shared ones: 0 */
    uint32_t tid;
    uint8_t *buf;     /* grows by doubling up to chunk_size */
    size_t len, cap;  /* bytes buffered, bytes allocated */
    uint64_t flushed; /* bytes already written as chunks */
    uint32_t seq;     /* next chunk number */
    int pinned;       /* a ring never drops its chunks (CODE, SYMBOLS, MARKS) */
};

/* An open-addressing set of blob hashes (all-zero marks an empty slot). */
struct fmt_hashset {
    crec_fmt_hash *v;
    size_t cap, count;
};
int fmt_hset_has(const struct fmt_hashset *s, const crec_fmt_hash *h);
int fmt_hset_add(struct fmt_hashset *s, const crec_fmt_hash *h); /* 0, or -1 no memory */
void fmt_hset_clear(struct fmt_hashset *s);

#define FMT_SEG_PINNED UINT32_MAX /* a chunk no rotation drops */

struct fmt_ring;   /* ring.c */
struct fmt_shared; /* writer.c: what the processes of a shared writer share */

struct crec_fmt_writer {
    int fd, own_fd;
    struct fmt_shared *sh; /* shared writers only (else NULL; never a ring) */
    fmt_chunk *sdir;       /* ... their directory, FMT_SHARED_DIR_MAX entries */
    int alive[2];          /* ... the pipe each process holds open (-1: closed) */
    int forked;            /* this is a process a fork made (not the first) */
    uint32_t proc;         /* the process whose streams are written */
    uint32_t next_proc;    /* the next process number, when not shared */
    char *name;
    int failed; /* after an error only free/close are accepted */
    size_t chunk_size;
    int level;
    void *cctx; /* ZSTD_CCtx */
    uint8_t *zbuf;
    size_t zcap;
    struct wstream *streams;
    size_t nstreams, scap;
    size_t last[CREC_FMT_S_MAX + 1]; /* per type: the stream written last */
    fmt_chunk *dir;
    size_t ndir, dcap;
    uint32_t *dir_seg;     /* ring: the segment of each chunk of dir */
    size_t dseg_cap;
    uint64_t off;          /* bytes written to the file so far */
    struct fmt_hashset blobs;     /* stored blobs (a ring: only the pinned ones) */
    struct fmt_hashset seg_blobs; /* a ring: the blobs of the current segment */
    struct fmt_hashset paged;     /* code stored a page at a time (PAGED records) */
    int pinning;           /* chunks flushed now are pinned */
    uint64_t header_end;   /* where the HEADER chunk ends */
    struct fmt_ring *ring; /* NULL unless crec_fmt_ring_start */
};

int fmt_w_nomem(crec_fmt_writer *w, crec_error *err);
int fmt_w_dead(crec_fmt_writer *w, crec_error *err);
int fmt_write_all(crec_fmt_writer *w, const void *p, size_t n, crec_error *err);
/* Compress `data` (c->ulen bytes) into one chunk at the end of the file;
 * fills c's file offset, clen and checksum. */
int fmt_write_chunk(crec_fmt_writer *w, fmt_chunk *c, const uint8_t *data, crec_error *err);
int fmt_dir_add(crec_fmt_writer *w, const fmt_chunk *c, uint32_t seg, crec_error *err);
/* ring.c: the current segment's number; free the ring state. */
uint32_t fmt_ring_current(const crec_fmt_writer *w);
void fmt_ring_free(crec_fmt_writer *w);

/* A SEQ entry's numbers, read as the file holds them (records.c). */
int fmt_seq_apply(crec_fmt_seq_ctx *ctx, uint64_t dseq, uint64_t dic, uint8_t kind,
                  crec_fmt_seq *e, crec_error *err);

/* The header chunk's payload (header.c). */
int fmt_header_encode(crec_fmt_buf *b, const crec_fmt_header *h);
int fmt_header_decode(uint32_t version, const uint8_t *p, size_t n, crec_fmt_header *h,
                      crec_error *err);

/*
 * Fuzz builds only (-DCREC_FUZZ, `make fuzz`): the fuzz targets set this so
 * that checksums are computed but not enforced, and mutated inputs reach
 * the decoders instead of all stopping at "checksum mismatch".  In every
 * other build it is the constant 0: no switch to turn checks off exists.
 */
#ifdef CREC_FUZZ
extern int fmt_fuzz_no_checksums;
#else
#define fmt_fuzz_no_checksums 0
#endif

/* zstd contexts allocating through crec_malloc, so failure injection works. */
void *fmt_zstd_cctx(void);
void *fmt_zstd_dctx(void);

#endif /* CREC_FORMAT_INT_H */
