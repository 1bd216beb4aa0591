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
    char *path;              /* where to open it again (crec_fmt_reader_spool) */
    uint32_t proc;           /* the process it is of (crec_open_process) */
    int spool_fd;            /* >= 0: the in-memory copy of a pipe's recording */
    crec_fmt_reader *r;
    crec_fmt_keyframe *kfs;
    size_t nkf;
    uint8_t *kf_regs;        /* kf_regs[i]: kfs[i].regs are read (qx_need_kf) */
    uint64_t end;            /* instructions in the recording */
    crec_fmt_marks marks;    /* a ring, gaps (crec_recorded says what a time is) */
    uint64_t t;              /* the current time (crec_seek) */
    int regs_valid;          /* regs_at_t holds the registers at time regs_t: */
    uint64_t regs_t;         /* the queries of one time share one replay */
    crec_regs regs_at_t;
    unsigned flags;          /* CREC_OPEN_* */
    crec_idx *ix;            /* NULL until the first query that needs it */
    int index_built;         /* the index was built by this handle */
    int index_dropped;       /* the index of PATH.idx failed a query: rebuild it */
    unsigned index_jobs;     /* host threads a rebuild replays on (0: a query's two) */
    crec_error index_note;   /* why PATH.idx was not used (crec_index_note), or empty */
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

    /*
     * Several threads (format 2): a handle per thread, whose key frames,
     * index and times are the thread's own (its key frames' global_icount
     * holds the thread's count, so that a thread's handle is a recording of
     * one thread to the code that answers for one); this handle answers
     * across them, through the schedule.
     */
    size_t nthr;
    crec_recording **thr;    /* by number - 1 (NULL: a thread with no key frame) */
    uint32_t tid;            /* a thread's handle: its number; else 0 */
    int borrowed_reader;     /* a thread's handle reads through its parent's reader */
    crec_fmt_slice *slices;  /* the schedule, on first need */
    size_t nslices;
    size_t **tslices;        /* per thread: the indexes of its slices, in order */
    size_t *ntslices;
    uint32_t reg_tid;        /* crec_read_registers: whose (0: the one running at t) */
};

/* Per-byte state of the bytes a query run watches. */
struct qx_track {
    uint64_t addr;
    size_t len;
    uint8_t *st;   /* 0 no access, 'r' loaded, 'w' stored, 'k' kernel wrote */
    uint64_t *kt;  /* 'k': the count after the syscall that wrote */
    uint64_t *at;  /* NULL, or: the number of the instruction of the last access */
};

/* query.c: a crec_replay_access_fn that keeps the last access to each
 * byte of a struct qx_track. */
void qx_track_access(void *ctx, crec_replay_qrun *q, int kind, uint64_t a, uint64_t l);

/* query.c: a query run from key frame kf (or a point), or from the start of
 * index span sp, that must stop at exactly `until`. */
int qx_run_checked(crec_recording *rec, size_t kf, const crec_replay_from *from, uint64_t until,
                   crec_replay_access_fn fn, void *ctx, crec_replay_qrun **q, crec_error *err);
int qx_run_span(crec_recording *rec, size_t sp, uint64_t until, crec_replay_access_fn fn,
                void *ctx, crec_replay_qrun **q, crec_error *err);
/* query.c: where index span sp ends: the next one's start, or the end. */
uint64_t qx_span_end(const crec_recording *rec, size_t sp);

/* threads.c: the answers of query.c for a recording of several threads. */
int qx_read_threads(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
                    uint8_t *known, int *source, crec_error *err);
int qx_watch_threads(crec_recording *rec, uint64_t addr, size_t len,
                     int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err);

/* recording.c */

/*! qx_symbol_at() : "name" or "name+0xOFF" of the symbol holding addr into
 *  buf, or "" when none does. */
void qx_symbol_at(crec_recording *rec, uint64_t addr, char *buf, size_t size);

/*! qx_schedule() : load the schedule of a recording of several threads,
 *  once.  @return CREC_OK or an error. */
int qx_schedule(crec_recording *rec, crec_error *err);

/*! qx_thread_slices() : thread tid's slices (indexes into rec->slices, in
 *  time order; at least one), the schedule loaded.  @return CREC_OK, or
 *  CREC_ERR_ARG naming a thread the recording does not have. */
int qx_thread_slices(crec_recording *rec, uint32_t tid, const size_t **v, size_t *n,
                     crec_error *err);

/*! qx_thread_time() : how many of thread tid's instructions ran before
 *  global time t.  @return 1 and *tt, or 0 when the thread had not
 *  started by then. */
int qx_thread_time(const crec_recording *rec, uint32_t tid, uint64_t t, uint64_t *tt);

/*! qx_global_time() : the global time of thread tid's instruction number
 *  i (counted from 0: it runs after i of its instructions). */
uint64_t qx_global_time(const crec_recording *rec, uint32_t tid, uint64_t i);

/*! qx_ensure_index() : load or build the index, once.  @return CREC_OK or an error. */
int qx_ensure_index(crec_recording *rec, crec_error *err);

/*! qx_index_retry() : a query failed with rc (err says why) while using an
 *  index read from PATH.idx: if that index may be to blame, drop it and
 *  everything taken from it, so that the query can run again on an index
 *  built anew (once per handle).  @return 1 if the query should be tried
 *  again, 0 if not (err is then the error to report). */
int qx_index_retry(crec_recording *rec, int rc, crec_error *err);

/*! qx_need_kf() : make sure key frame k has its registers (an index that
 *  was there gave the key frames without them).  @return CREC_OK or an error. */
int qx_need_kf(crec_recording *rec, size_t k, crec_error *err);

/*! qx_need_parts() : the registers of every key frame that starts a part
 *  after a gap (a run jumps there, docs/QUERY.md).  @return CREC_OK or an
 *  error. */
int qx_need_parts(crec_recording *rec, crec_error *err);

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
 *  (*found 1, buf filled), if there is one and the recording holds them (of
 *  paged code, only the pages the program ran).  @return CREC_OK or an error. */
int qx_code_bytes(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf, int *found,
                  crec_error *err);

/*! qx_in_code() : @return 1 if a code mapping holds the whole range. */
int qx_in_code(const crec_recording *rec, uint64_t addr, size_t len);

/* program.c: free what crec_modules and crec_symbolize loaded. */
void qx_program_free(crec_recording *rec);

/* query.c */

/*! qx_restore_lines() : where a run starting at point span sp starts, with
 *  the memory it restores (the index's: not to be freed, nor kept past a
 *  drop of the index).  @return CREC_OK or an error. */
int qx_restore_lines(crec_recording *rec, size_t sp, crec_replay_from *from, crec_error *err);

/*! qx_continue() : run q on to exactly `until` (crec_replay_qrun_continue),
 *  stopping at the start of every point span of the index on the way to
 *  write the memory it needs (its seed); restored (may be NULL) is told of
 *  each byte written.  A run its execution client halts (a `crec find`
 *  that found) ends there, before `until`.  @return CREC_OK or an error. */
int qx_continue(crec_recording *rec, crec_replay_qrun *q, uint64_t until,
                void (*restored)(void *ctx, uint64_t addr, uint64_t len), void *ctx,
                crec_error *err);

/*! qx_read_at() : crec_read_memory at time t, whatever the current time.
 *  known must not be NULL.  @return as crec_read_memory. */
int qx_read_at(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
               uint8_t *known, int *source, crec_error *err);

#endif /* CREC_INDEX_INT_H */
