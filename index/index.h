/*
 * index.h - the summarization index and the query engine (docs/QUERY.md).
 *
 * For each key-frame segment of a recording, the index holds the 64-byte
 * lines the guest loaded or stored and the ranges the kernel (syscalls,
 * new mappings) wrote.  It is built by replaying every segment and kept
 * beside the recording in FILE.idx.  The public face of this module is the
 * crec_open/crec_query API in include/crec.h; this header is for tests.
 */
#ifndef CREC_INDEX_H
#define CREC_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"
#include "format/format.h"

#define CREC_IDX_LINE_SHIFT 6 /* 64-byte lines */

/* One segment: the key frame it starts at, and what it touched. */
typedef struct crec_idx_seg {
    uint64_t start;        /* global icount of its key frame */
    uint32_t flags;        /* CREC_IDX_WILD: the kernel wrote unknown ranges */
    size_t ntouch, nwrite, nk;
    uint64_t *touch;       /* sorted line numbers loaded or stored */
    uint64_t *write;       /* sorted line numbers stored (a subset of touch) */
    uint64_t *k;           /* nk (addr, len) pairs written by the kernel */
} crec_idx_seg;

#define CREC_IDX_WILD 1

typedef struct crec_idx {
    uint64_t rec_size, rec_hash; /* which recording it describes */
    size_t nseg;
    crec_idx_seg *segs;
} crec_idx;

/*! crec_idx_encode() : the whole index file image (docs/QUERY.md) into b.
 *  @return CREC_OK or CREC_ERR_NOMEM. */
int crec_idx_encode(const crec_idx *ix, crec_fmt_buf *b);

/*! crec_idx_decode() : parse and check an index file image.
 *  @return CREC_OK and *out, or CREC_ERR_CORRUPT / CREC_ERR_VERSION. */
int crec_idx_decode(const uint8_t *data, size_t len, crec_idx **out, crec_error *err);

/*! crec_idx_free() : NULL is fine. */
void crec_idx_free(crec_idx *ix);

/*! crec_idx_touches() : does segment `seg` load, store (writes_only: store)
 *  or kernel-write any byte of [addr, addr+len)?  @return 1 or 0. */
int crec_idx_touches(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len,
                     int writes_only);

/*! crec_idx_recording_id() : size and hash of a recording file, which an
 *  index names.  @return CREC_OK or CREC_ERR_IO. */
int crec_idx_recording_id(const char *path, uint64_t *size, uint64_t *hash, crec_error *err);

/*! crec_idx_build() : replay every segment (on `jobs` threads) and collect
 *  the index.  @return CREC_OK and *out, or an error. */
int crec_idx_build(const char *path, const crec_fmt_keyframe *kfs, size_t nkf, unsigned jobs,
                   crec_idx **out, crec_error *err);

/*! crec_idx_load_or_build() : read PATH.idx if it names this recording,
 *  else build it and (best effort) write it.  *built says which.
 *  @return CREC_OK and *out, or an error. */
int crec_idx_load_or_build(const char *path, const crec_fmt_keyframe *kfs, size_t nkf,
                           crec_idx **out, int *built, crec_error *err);

#endif /* CREC_INDEX_H */
