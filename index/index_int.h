/*
 * index_int.h - private to index/: the recording handle behind crec_open
 * (recording.c) and what the query engine (query.c) asks of it.
 */
#ifndef CREC_INDEX_INT_H
#define CREC_INDEX_INT_H

#include <stdint.h>

#include "format/format.h"
#include "index/index.h"
#include "replayer/replayer.h"


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
    char *path;        /* the file it was mapped from ("" if none) */
    uint64_t file_off;
};

/* A function symbol at its run-time address (program.c). */
struct qx_sym {
    uint64_t addr, size;
    uint32_t type;
    size_t code;       /* the code mapping it lies in */
    char *name;
};

/* One mapping of a key frame's memory-map listing. */
struct qx_mapping {
    uint64_t start, end;
    int prot;          /* CREC_FMT_PROT_* */
};

struct crec_recording {
    char *path;
    crec_fmt_reader *r;
    crec_fmt_keyframe *kfs;
    size_t nkf;
    uint8_t *kf_regs;        /* kf_regs[i]: kfs[i].regs are read (qx_need_kf) */
    uint64_t end;            /* instructions in the recording */
    uint64_t t;              /* the current time (crec_seek) */
    int regs_valid;          /* regs_at_t holds the registers at time regs_t: */
    uint64_t regs_t;         /* the queries of one time share one replay */
    crec_regs regs_at_t;
    unsigned flags;          /* CREC_OPEN_* */
    crec_idx *ix;            /* NULL until the first query that needs it */
    int index_built;         /* the index was built by this handle */
    crec_progress_fn progress; /* crec_set_progress */
    void *progress_ctx;

    struct qx_snap_page *snap; /* sorted by (addr, icount) */
    size_t nsnap;
    size_t *snap_kf;         /* the key frame of each snapshot, in time order */
    size_t nsnap_kf;
    struct qx_code *code;
    size_t ncode;

    int events_loaded;       /* the two lists below, on first need: */
    const uint64_t *mapped;  /* every range ever mapped: (start, end) pairs */
    size_t nmapped;
    const uint64_t *syscalls; /* icount of each SYSCALL record, in order */
    size_t nsyscalls;
    uint64_t *own_mapped, *own_syscalls; /* ... when not the index's */

    int program_loaded;      /* program.c: modules and symbols, on first need */
    crec_module *modules;    /* one per code mapping */
    struct qx_sym *syms;     /* sorted by address */
    size_t nsyms;
    char *program_path;

    size_t listing_kf;       /* 1 + the key frame whose map `listing` holds, 0: none */
    struct qx_mapping *listing;
    size_t nlisting;
};

/* recording.c */

/*! qx_ensure_index() : load or build the index, once.  @return CREC_OK or an error. */
int qx_ensure_index(crec_recording *rec, crec_error *err);

/*! qx_need_kf() : make sure key frame k has its registers (an index that
 *  was there gave the key frames without them).  @return CREC_OK or an error. */
int qx_need_kf(crec_recording *rec, size_t k, crec_error *err);

/*! qx_seg_of() : @return the segment holding time t (the last key frame at
 *  or before it; the last segment for t at the end). */
size_t qx_seg_of(const crec_recording *rec, uint64_t t);

/*! qx_last_snapshot() : the key frame of the last snapshot at or before t.
 *  @return 1 and *kf, or 0 when there is none. */
int qx_last_snapshot(const crec_recording *rec, uint64_t t, size_t *kf);

/*! qx_snap_find() : @return the newest snapshot of `page` at or before t, or NULL. */
const struct qx_snap_page *qx_snap_find(const crec_recording *rec, uint64_t page, uint64_t t);

/*! qx_snap_byte() : the byte at addr of snapshot page p.  @return CREC_OK or an error. */
int qx_snap_byte(crec_recording *rec, const struct qx_snap_page *p, uint64_t addr,
                 uint8_t *out, crec_error *err);

/*! qx_prot_at_keyframe() : the protection of addr in the memory map listed
 *  after key frame k (*prot -1: not mapped).  @return CREC_OK or an error. */
int qx_prot_at_keyframe(crec_recording *rec, size_t k, uint64_t addr, int *prot,
                        crec_error *err);

/*! qx_ever_mapped() : *yes = 1 if a byte of the range was ever mapped.
 *  @return CREC_OK or an error reading the events. */
int qx_ever_mapped(crec_recording *rec, uint64_t addr, size_t len, int *yes, crec_error *err);

/*! qx_code_bytes() : the bytes of a code mapping holding the whole range
 *  (*found 1, buf filled), if there is one.  @return CREC_OK or an error. */
int qx_code_bytes(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf, int *found,
                  crec_error *err);

/* program.c: free what crec_modules and crec_symbolize loaded. */
void qx_program_free(crec_recording *rec);

/* query.c */

/*! qx_restore_lines() : where a run starting at point span sp starts, with
 *  the memory it restores (from->lines and ->values are crec_malloc'd: the
 *  caller frees them).  @return CREC_OK or an error. */
int qx_restore_lines(crec_recording *rec, size_t sp, crec_replay_from *from, crec_error *err);

/*! qx_read_at() : crec_read_memory at time t, whatever the current time.
 *  known must not be NULL.  @return as crec_read_memory. */
int qx_read_at(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
               uint8_t *known, int *source, crec_error *err);

#endif /* CREC_INDEX_INT_H */
