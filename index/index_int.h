/*
 * index_int.h - private to index/: the recording handle behind crec_open.
 */
#ifndef CREC_INDEX_INT_H
#define CREC_INDEX_INT_H

#include <stdint.h>

#include "format/format.h"
#include "index/index.h"

/* A page of a snapshot. */
struct qx_snap_page {
    uint64_t addr;     /* page address */
    uint64_t icount;   /* the snapshot's time */
    crec_fmt_hash blob;
};

/* A code mapping (CODE record) and its bytes, loaded on demand. */
struct qx_code {
    uint64_t addr, len;
    crec_fmt_hash blob;
    uint8_t *bytes;
};

struct qx_range {
    uint64_t start, end;
};

struct crec_recording {
    char *path;
    crec_fmt_reader *r;
    crec_fmt_keyframe *kfs;
    size_t nkf;
    uint64_t end;            /* instructions in the recording */
    uint64_t t;              /* the current time (crec_seek) */
    unsigned flags;          /* CREC_OPEN_* */
    crec_idx *ix;            /* NULL until the first query that needs it */
    int index_built;         /* the index was built by this handle */

    struct qx_snap_page *snap; /* sorted by (addr, icount) */
    size_t nsnap;
    struct qx_code *code;
    size_t ncode;
    struct qx_range *mapped; /* every range ever mapped, merged */
    size_t nmapped;
    uint64_t *syscalls;      /* icount of each syscall, in order */
    size_t nsyscalls;
};

#endif /* CREC_INDEX_INT_H */
