/*
 * index.h - the summarization index and the query engine (docs/QUERY.md).
 *
 * For each span of a recording (a key-frame segment, or a part of one
 * after a restart point) the index holds the 64-byte lines the guest
 * loaded or stored, the values its stores left, the ranges the kernel
 * (syscalls, new mappings) wrote, and for a restart point what a replay
 * needs to start there.  It
 * is built by replaying every segment and kept beside the recording in
 * FILE.idx (FILE.pN.idx for process N of a recording of several).  The public face of this module is the
 * crec_open/crec_query API in include/crec.h; this header is for tests.
 */
#ifndef CREC_INDEX_H
#define CREC_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"
#include "format/format.h"

#define CREC_IDX_LINE_SHIFT 6 /* 64-byte lines */

/*
 * One span of the recording: a key-frame segment, or a part of one that
 * starts at a restart point the index build took inside it, and what it
 * touched.  A line's mask has bit b set when byte b of the line was
 * accessed, so that a query for bytes next to a busy variable does not
 * replay spans that never touched them.
 *
 * A span that starts at a point holds what a replay needs to start there
 * (crec_replay_from): the point (registers and stream positions, as a key
 * frame) and the bytes the span loads before it stores them (which the
 * recording's cache predicted: READS does not hold them), with their
 * values at the point.  A replay starting at a point writes them; one
 * that passes a point (it started before) writes that span's too, at the
 * point exactly (qx_continue): it holds every byte it accessed already,
 * and those are the others the span needs.
 */
typedef struct crec_idx_span {
    uint64_t start;        /* global icount where it starts */
    size_t kf;             /* the key frame of its segment */
    int at_point;          /* it starts at a restart point, not the key frame */
    uint64_t cost;         /* host CPU microseconds the recorder (or the
                              build's replay) spent in it, at least 1; 0:
                              not known (index version 5) */
    uint64_t seed_bytes;   /* bytes of its point's seed (read from the table:
                              what a part starting or passing there is given) */
    crec_fmt_keyframe *point; /* ... that point (once its block is read) */
    size_t nlines;         /* ... and the memory to restore: */
    uint64_t *lines;       /* sorted line numbers */
    uint64_t *masks;       /* ... the bytes of each (bit b: byte b) */
    uint8_t *values;       /* 64 bytes a line (those of its mask count) */
    int seed_read;         /* lines, masks and values hold it: read from a
                              file only when a run needs it (crec_idx_need_point) */
    uint32_t flags;        /* CREC_IDX_WILD: the kernel wrote unknown ranges */
    size_t ntouch, nwrite, nk;
    uint64_t *touch;       /* sorted line numbers loaded or stored */
    uint64_t *touch_mask;  /* ... and which of their bytes */
    uint64_t *write;       /* sorted line numbers stored (a subset of touch) */
    uint64_t *write_mask;
    uint8_t *write_values; /* CREC_IDX_VALUED: 64 bytes a stored line, those of
                              its mask holding their values at the span's end */
    int values_part;       /* write_values hold only lines [vlo, vhi] (read from a
                              file for a query, crec_idx_need_values) */
    uint64_t vlo, vhi;
    size_t nstale;         /* stored bytes whose value at the end is not kept */
    uint64_t *stale;       /* (the kernel wrote them after the last store, or */
    uint64_t *stale_mask;  /* ... unmapped since): sorted, a subset of write */
    uint64_t *k;           /* nk (addr, len) pairs written by the kernel */
} crec_idx_span;

#define CREC_IDX_WILD 1
#define CREC_IDX_VALUED 2 /* the span holds the values its stores left */

struct crec_idx_block; /* codec.c */

typedef struct crec_idx {
    uint64_t rec_size, rec_hash; /* which recording it describes */
    size_t nspan;                /* spans in time order; start and kf are */
    crec_idx_span *spans;        /* always there, the rest is read from the
                                    file a block at a time: crec_idx_need() */
    size_t nblobs;               /* where each blob lies, so that a reader */
    crec_fmt_blob_loc *blobs;    /* need not scan BLOBS (crec_fmt_blob_table) */
    size_t nmapped;              /* every range ever mapped: nmapped sorted, */
    uint64_t *mapped;            /* disjoint (start, end) pairs */
    size_t nsyscalls;            /* the icount of each SYSCALL record, in order */
    uint64_t *syscalls;
    size_t nkf;                  /* every key frame, registers left zero, */
    crec_fmt_keyframe *kfs;      /* and where its record lies in KEYFRAMES: */
    uint64_t *kf_off;            /* opening a recording needn't decode them */

    struct crec_idx_block *blocks; /* NULL when built in memory */
    size_t nblocks;
    uint8_t *image;              /* the file, for blocks not yet decoded */
    size_t image_len;
} crec_idx;

/*! crec_idx_encode() : the whole index file image (docs/QUERY.md) into b.
 *  @return CREC_OK or CREC_ERR_NOMEM. */
int crec_idx_encode(const crec_idx *ix, crec_fmt_buf *b);

/*! crec_idx_decode() : parse and check an index file image.
 *  @return CREC_OK and *out, or CREC_ERR_CORRUPT / CREC_ERR_VERSION. */
int crec_idx_decode(const uint8_t *data, size_t len, crec_idx **out, crec_error *err);

/*! crec_idx_need() / crec_idx_need_all() : decode the block of the file
 *  holding span `seg` (or every block), if it is not yet.
 *  @return CREC_OK or CREC_ERR_CORRUPT / CREC_ERR_NOMEM. */
int crec_idx_need(crec_idx *ix, size_t seg, crec_error *err);
int crec_idx_need_all(crec_idx *ix, crec_error *err);

/*! crec_idx_need_point() : span `seg`'s restart point and seed (its
 *  point, lines, masks, values), if it has one: what a run starting or
 *  passing there needs.  Decoding a block (crec_idx_need) reads its
 *  points but not their seeds; this reads them without decoding the
 *  block's lists (what a part of replay --jobs needs).
 *  @return CREC_OK or CREC_ERR_CORRUPT / CREC_ERR_NOMEM. */
int crec_idx_need_point(crec_idx *ix, size_t seg, crec_error *err);

/*! crec_idx_may_touch() : 0 when the filter of span `seg`'s block proves
 *  that none of its spans touched [addr, addr+len) or had the kernel write
 *  it (crec_idx_touches would say 0 for each, without the block decoded);
 *  1 when they may have.  Blocks built in memory, of version 5, or whose
 *  spans' kernel writes are unknown always may. */
int crec_idx_may_touch(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len);

/*! crec_idx_need_values() : the same, and the values the stores of span
 *  `seg` left in the lines of [addr, addr+len) (read apart: most queries
 *  pass over most spans' values, and need one span's, of a few lines;
 *  crec_idx_need_all reads them all).
 *  @return CREC_OK or CREC_ERR_CORRUPT / CREC_ERR_NOMEM. */
int crec_idx_need_values(crec_idx *ix, size_t seg, uint64_t addr, uint64_t len,
                         crec_error *err);

/*! crec_idx_span_values() : the values span s's stores left, read with
 *  read(ctx, dst, addr, len) (0: read; memory at the span's end), and
 *  CREC_IDX_VALUED; a stored line that can't be read (unmapped since)
 *  joins s's stale lines: its bytes are answered by a replay (the index's
 *  build; a recorder gathers them as crec_idx_gathered).
 *  @return 0, or -1 out of memory (s then has no values). */
int crec_idx_span_values(crec_idx_span *s,
                         int (*read)(void *ctx, void *dst, uint64_t addr, uint64_t len),
                         void *ctx);

/*
 * A span as a recorder gathers it (recorder/rec_index.c), put in order on
 * the writer's thread: `s` holds its start, key frame, point, flags, cost
 * and kernel writes; `lines` its lines in any order, a line perhaps more
 * than once (its page given up and taken again), each with `slot`, where
 * its 64 bytes at the span's end lie in `values` (a line with stored
 * bytes), or CREC_IDX_NO_SLOT (none, or they could not be read: unmapped
 * since; then a replay answers them); `needs` the granules of its point's
 * seed, in any order.
 */
typedef struct crec_idx_line {
    uint64_t line, touch, write, stale; /* bytes loaded or stored, stored, and
                                           stored before the kernel wrote them */
    uint64_t slot;
} crec_idx_line;
#define CREC_IDX_NO_SLOT UINT64_MAX

typedef struct crec_idx_granule {
    uint64_t granule, value; /* the bytes of the mask are needed, with these values */
    uint64_t mask;
} crec_idx_granule;

typedef struct crec_idx_gathered {
    crec_idx_span s;
    crec_idx_line *lines;
    size_t nlines;
    uint8_t *values;
    crec_idx_granule *needs;
    size_t nneeds;
} crec_idx_gathered;

/*! crec_idx_gathered_close() : g's lines and seed into g->s, in order (its
 *  stored lines' values, CREC_IDX_VALUED), and the rest of g freed.
 *  @return 0, or -1 out of memory (g->s then holds what it had). */
int crec_idx_gathered_close(crec_idx_gathered *g);
/*! crec_idx_gathered_clear() : free what g holds, span included, and zero it. */
void crec_idx_gathered_clear(crec_idx_gathered *g);

/*
 * The index file written a span at a time (recorder/rec_index.c), each
 * span encoded when it comes, by a host thread of the writer's own if
 * `threaded` (else in crec_idx_writer_add).  crec_idx_writer_add takes
 * the span's arrays (s is zeroed); its error, CREC_ERR_NOMEM, may be a
 * span's given before.  crec_idx_writer_finish: every span encoded, then
 * the file image with ix's tables (crec_idx_read_tables): its head into
 * b, then the `tail` bytes, which the writer keeps; ix->spans becomes the
 * spans' starts, key frames and point flags (for spans_fit).
 * A process that forks must not leave a threaded writer to its child.
 */
typedef struct crec_idx_writer crec_idx_writer;
int crec_idx_writer_new(crec_idx_writer **out, int threaded);
int crec_idx_writer_add(crec_idx_writer *w, crec_idx_span *s);
/* ... a span as gathered, put in order (crec_idx_gathered_close) before it
 * is encoded, on the writer's thread: g is zeroed */
int crec_idx_writer_add_gathered(crec_idx_writer *w, crec_idx_gathered *g);
int crec_idx_writer_finish(crec_idx_writer *w, crec_idx *ix, crec_fmt_buf *b,
                           const uint8_t **tail, size_t *tail_len);
void crec_idx_writer_free(crec_idx_writer *w);

/*! crec_idx_span_clear() : free what a span holds and zero it. */
void crec_idx_span_clear(crec_idx_span *s);

/*! crec_idx_free() : NULL is fine. */
void crec_idx_free(crec_idx *ix);

/*! crec_idx_span_at() : @return the last span starting at or before t. */
size_t crec_idx_span_at(const crec_idx *ix, uint64_t t);

/*! crec_idx_touches() : does span `seg` load, store (writes_only: store)
 *  or kernel-write any byte of [addr, addr+len)?  @return 1 or 0 (loads and
 *  stores are known to the byte). */
int crec_idx_touches(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len,
                     int writes_only);

/*! crec_idx_line_mask() : @return the bytes of line `line` that
 *  [addr, addr+len) covers, as a mask (bit b: byte b); the range must meet it. */
uint64_t crec_idx_line_mask(uint64_t line, uint64_t addr, uint64_t len);

/* How a span leaves a byte, seen from a time at or after its end
 * (crec_idx_byte_at_end). */
enum crec_idx_byte {
    CREC_IDX_BYTE_NONE = 0,   /* not accessed: look at the spans before */
    CREC_IDX_BYTE_LOADED,     /* only loaded, which changes nothing: look before */
    CREC_IDX_BYTE_VALUE,      /* stored: its value at the span's end is known */
    CREC_IDX_BYTE_REPLAY,     /* stored with no value kept, or the kernel wrote it
                                 and the guest loaded it too (in some order) */
    CREC_IDX_BYTE_KERNEL,     /* only the kernel wrote it: its value is that of
                                 a snapshot taken since, or unknown */
};

/*! crec_idx_byte_at_end() : what span `seg` did to the byte at addr
 *  (docs/QUERY.md, "Answering"); *value gets the byte for
 *  CREC_IDX_BYTE_VALUE (the span's values read: crec_idx_need_values;
 *  not read yet, a stored byte says CREC_IDX_BYTE_REPLAY).
 *  @return a crec_idx_byte. */
int crec_idx_byte_at_end(const crec_idx *ix, size_t seg, uint64_t addr, uint8_t *value);

/*! crec_idx_kernel_writes() : does the kernel (a syscall, a change of the
 *  memory map) write any byte of [addr, addr+len) in span `seg`?
 *  @return 1 or 0. */
int crec_idx_kernel_writes(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len);

/*! crec_idx_recording_id() : size and hash of a recording file, which an
 *  index names.  @return CREC_OK or CREC_ERR_IO. */
int crec_idx_recording_id(const char *path, uint64_t *size, uint64_t *hash, crec_error *err);

/* A range where the index takes restart points every `every` instructions
 * (crec keyframes; dense.c): [from, to) in global time. */
typedef struct crec_idx_dense {
    uint64_t from, to, every;
} crec_idx_dense;

/*! crec_idx_dense_read() : the ranges PATH.kf asks for (none when it is
 *  missing, bad, or names another recording).  *out crec_malloc'd.
 *  @return CREC_OK. */
int crec_idx_dense_read(const char *path, crec_idx_dense **out, size_t *n);

/*! crec_idx_dense_add() : add a range to PATH.kf (made anew, renamed).
 *  @return CREC_OK or CREC_ERR_IO. */
int crec_idx_dense_add(const char *path, const crec_idx_dense *d, crec_error *err);

/*! crec_idx_build() : replay every segment (on `jobs` threads) and collect
 *  the index, calling progress (may be NULL) now and then from this thread;
 *  values: keep the values each span's stores left (CREC_IDX_VALUED; not
 *  for a thread of several, whose replay alone lacks the others' stores).
 *  @return CREC_OK and *out, or an error. */
int crec_idx_build(const char *path, uint32_t proc, const crec_fmt_keyframe *kfs, size_t nkf,
                   unsigned jobs, int values, crec_progress_fn progress, void *pctx,
                   crec_idx **out, crec_error *err);

/*! crec_idx_read_tables() : what the index keeps besides the spans (where
 *  the blobs lie, the ranges ever mapped, the syscall times, the key frames
 *  kfs without their registers), read from the recording at path, into ix.
 *  @return CREC_OK or an error. */
int crec_idx_read_tables(const char *path, uint32_t proc, const crec_fmt_keyframe *kfs,
                         size_t nkf, crec_idx *ix, crec_error *err);

/*! crec_idx_save_writer() : write the index file of process `proc` of the
 *  recording at path from the spans a writer was given while it was
 *  recorded (recorder/rec_index.c): the rest is read from the finished
 *  file, and the spans are checked to fit its key frames first.  The writer
 *  is freed.  @return CREC_OK or an error (then no file is written). */
int crec_idx_save_writer(const char *path, uint32_t proc, crec_idx_writer *w, crec_error *err);

/*! crec_idx_scan_events() : every range ever mapped (sorted, merged
 *  (start, end) pairs) and the icount of every syscall, from the EVENTS
 *  stream of the thread of key frame 0.  The arrays are crec_malloc'd.
 *  @return CREC_OK or an error reading the stream. */
int crec_idx_scan_events(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                         uint64_t **mapped, size_t *nmapped, uint64_t **syscalls,
                         size_t *nsyscalls, crec_error *err);

/*! crec_idx_scan_keyframes() : the KEYFRAMES stream offset of each of the
 *  first nkf key frame records (*offs crec_malloc'd).  @return CREC_OK or an error. */
int crec_idx_scan_keyframes(crec_fmt_reader *r, size_t nkf, uint64_t **offs, crec_error *err);

/*! crec_idx_load() : read PATH.idx if it holds an index of this recording
 *  (whose key frames are kfs; NULL: the index's own table is taken): one
 *  span starts at each key frame but the last.  tid 0: the file is the
 *  index of a recording of one thread; else it holds one index per thread
 *  of a recording of several, each in its thread's own time, and thread
 *  tid's is wanted.
 *  @return CREC_OK and *out; CREC_ERR_NOTFOUND when there is none (or not
 *  thread tid's) or it is stale (another recording's); CREC_ERR_CORRUPT,
 *  naming PATH.idx, when it is there but can't be read. */
int crec_idx_load(const char *path, uint32_t proc, uint32_t tid, const crec_fmt_keyframe *kfs,
                  size_t nkf, crec_idx **out, crec_error *err);

/*! crec_idx_load_or_build() : read PATH.idx if it names this recording,
 *  else build it (reporting to progress, may be NULL) and (best effort)
 *  write it.  *built says which; *note (may be NULL) gets why an index
 *  file that was there could not be read, if that is why it was rebuilt.
 *  @return CREC_OK and *out, or an error. */
int crec_idx_load_or_build(const char *path, uint32_t proc, uint32_t tid,
                           const crec_fmt_keyframe *kfs, size_t nkf, crec_progress_fn progress,
                           void *pctx, crec_idx **out, int *built, crec_error *note,
                           crec_error *err);

/*! crec_idx_rebuild() : build the index on `jobs` host threads (0: two,
 *  or the CPUs if fewer) and (best effort) write PATH.idx, whatever is
 *  there.  @return CREC_OK and *out, or an error. */
int crec_idx_rebuild(const char *path, uint32_t proc, uint32_t tid, const crec_fmt_keyframe *kfs,
                     size_t nkf, unsigned jobs, crec_progress_fn progress, void *pctx,
                     crec_idx **out, crec_error *err);

/*! crec_idx_file() : the name of the index file of process `proc` of the
 *  recording at path: PATH.idx for process 0, PATH.pN.idx for process N. */
void crec_idx_file(const char *path, uint32_t proc, char *out, size_t size);

#endif /* CREC_INDEX_H */
