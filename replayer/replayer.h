/*
 * replayer.h - re-execute a recording with no OS.  A full replay that
 * checks the recording is public (crec_replay_run, include/crec.h); this
 * header is the query runs index/ builds on: a replay stopped at an exact
 * instruction count, reporting every memory access.  It speaks the
 * replayer's own types: index/ never sees the CPU behind a run.
 */
#ifndef CREC_REPLAYER_H
#define CREC_REPLAYER_H

#include <stdint.h>

#include "crec.h"

/* ---- query runs (for index/) ------------------------------------------- */

#include "format/format.h"

/* One replay stopped at an exact instruction count, kept for inspection. */
typedef struct crec_replay_qrun crec_replay_qrun;

/* A guest memory access seen by query run q: kind 'r' a load (the bytes
 * now hold their recorded value), 'w' a store (before it happens), 'k'
 * bytes written by the kernel or a new mapping (not in replay memory;
 * addr 0 with len UINT64_MAX: anywhere).  q may be read with the
 * crec_replay_qrun_* accessors below during the call. */
typedef void (*crec_replay_access_fn)(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr,
                                      uint64_t len);

struct crec_replay_exec;

/* What a query run reports; every member may be NULL (0). */
typedef struct crec_replay_watch {
    crec_replay_access_fn access;            /* every guest memory access */
    /* the run passes key frame k (q's memory is that at k) */
    void (*keyframe)(void *ctx, crec_replay_qrun *q, size_t k);
    void *ctx;
    /* A restart point, offered at the first block start at or after every
     * point_every instructions since the last key frame or point, strictly
     * inside a segment: registers and stream positions as a key frame,
     * which crec_replay_from can start from (with the memory it needs). */
    void (*point)(void *ctx, crec_replay_qrun *q, const crec_fmt_keyframe *p);
    uint64_t point_every;
    const struct crec_replay_exec *exec; /* an execution run (below), or NULL */
} crec_replay_watch;

/*
 * Where a query run starts: key frame `first` itself, or a restart point
 * that a run offered inside its segment.  Starting at a point, the run
 * builds the key frame's memory map, applies the map changes made before
 * the point, and writes the bytes of `nlines` 64-byte lines (line numbers
 * are addresses >> 6) that masks[i] names (bit b: byte b; NULL masks: the
 * whole lines): the memory that loads predicted after the point need
 * (index/build.c says which).
 */
typedef struct crec_replay_from {
    const crec_fmt_keyframe *point;
    size_t nlines;
    const uint64_t *lines;
    const uint8_t *values;   /* 64 bytes a line */
    const uint64_t *masks;
} crec_replay_from;

/*! crec_replay_query() :
 *  Replay from key frame `first` of `kfs` (all nkf key frames of the
 *  recording read by `r`), or from a restart point in its segment (`from`,
 *  may be NULL), until exactly `until` instructions have run (or the
 *  recording ends), with no checks, reporting to `w` (may be NULL).
 *  @return CREC_OK and *out (free it with crec_replay_qrun_free), or an
 *  error; a divergence is CREC_ERR_DIVERGENCE with its description. */
int crec_replay_query(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                      size_t first, const crec_replay_from *from, uint64_t until,
                      const crec_replay_watch *w, crec_replay_qrun **out, crec_error *err);

/*! crec_replay_whole_query() :
 *  A query run of the whole program (a recording of several threads): one
 *  memory, every thread run in the recorded order from instruction 0 to
 *  exactly `until` (global time; inside a slice or not), reporting every
 *  access to `w` (only its `access` is used).  No key frame is checked.
 *  During a callback, crec_replay_qrun_tid says whose access it is and
 *  crec_replay_qrun_own converts a count of the run into that thread's own.
 *  @return CREC_OK and *out, or an error. */
int crec_replay_whole_query(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                            uint64_t until, const crec_replay_watch *w, crec_replay_qrun **out,
                            crec_error *err);

/*! crec_replay_qrun_own() : @return the running thread's own count at
 *  count `icount` of the run (a run of one thread: icount itself). */
uint64_t crec_replay_qrun_own(const crec_replay_qrun *q, uint64_t icount);

/*! crec_replay_qrun_continue() :
 *  Run a query run on, from where it stopped to exactly `until`
 *  instructions (or the recording's end), reporting as before.  Block
 *  boundaries may then differ from the recording's: only query runs, which
 *  check no key frame, may do this.
 *  @return CREC_OK, CREC_ERR_ARG for a time before the run's, or an error. */
int crec_replay_qrun_continue(crec_replay_qrun *q, uint64_t until, crec_error *err);

/*! crec_replay_qrun_icount() : @return the instructions executed: where
 *  the run stopped, or (from a callback) the count at the current block's
 *  end. */
uint64_t crec_replay_qrun_icount(const crec_replay_qrun *q);

/*! crec_replay_qrun_rip() : @return RIP: where the run stopped, or (from an
 *  access callback) the instruction making the access. */
uint64_t crec_replay_qrun_rip(crec_replay_qrun *q);

/*! crec_replay_qrun_icount_at() : from an access callback: @return the
 *  instructions executed before the instruction at `rip` of the block now
 *  running. */
uint64_t crec_replay_qrun_icount_at(crec_replay_qrun *q, uint64_t rip);

/*! crec_replay_qrun_describe() : "BYTES (MNEMONIC OPERANDS)" of the
 *  instruction at addr, one line, into buf. */
void crec_replay_qrun_describe(crec_replay_qrun *q, uint64_t addr, char *buf, size_t size);

/*! crec_replay_qrun_read() : copy `len` bytes of replay memory at addr.
 *  @return 0, or -1 when a byte is not mapped. */
int crec_replay_qrun_read(crec_replay_qrun *q, void *dst, uint64_t addr, uint64_t len);

/*! crec_replay_qrun_regs() : the registers where the run stopped, or (from
 *  an execution callback, below) at the callback's point: RIP the
 *  instruction about to run; after a syscall, the one after it.
 *  @return CREC_OK or CREC_ERR_EMU. */
int crec_replay_qrun_regs(crec_replay_qrun *q, crec_regs *r, crec_error *err);

/*! crec_replay_qrun_free() : NULL is fine. */
void crec_replay_qrun_free(crec_replay_qrun *q);

/* ---- execution runs (for index/exec.c: crec_exec_run) ------------------- */

/*
 * What an execution run tells its client, besides what crec_replay_watch
 * does.  Every callback may be NULL.  Inside one, crec_replay_qrun_regs,
 * _reg, _read, _time and _tid describe the state at that point, and
 * crec_replay_qrun_halt ends the run (no callback follows).
 */
typedef struct crec_replay_exec {
    void *ctx;
    /* a block of ninsns instructions starting at addr is about to run; t
     * instructions ran before it */
    void (*block)(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t addr, uint32_t ninsns);
    /* the instruction at rip is about to run, t instructions ran before it:
     * every instruction when every_insn (a code hook everywhere, ~10x
     * slower), else those at one of the n_addrs addresses (bounded hooks,
     * free elsewhere) */
    void (*insn)(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t rip);
    int every_insn;
    const uint64_t *addrs;
    size_t n_addrs;
    /* a memory access: 'r' a load (memory now holds the loaded bytes,
     * `value`), 'w' a store (before it; `value` the bytes stored), 'k' the
     * kernel or a map change wrote the range (value NULL; addr 0 with len
     * UINT64_MAX: anywhere) */
    void (*access)(void *ctx, crec_replay_qrun *q, int kind, uint64_t addr, uint64_t len,
                   const uint8_t *value);
    /* a syscall has run (its results are in the registers) */
    void (*syscall)(void *ctx, crec_replay_qrun *q, uint64_t t, uint64_t nr,
                    const uint64_t args[6], int64_t ret);
} crec_replay_exec;

/*! crec_replay_qrun_halt() : from an execution callback: end the run; no
 *  callback is made after this one. */
void crec_replay_qrun_halt(crec_replay_qrun *q);

/*! crec_replay_qrun_halted() : @return 1 once crec_replay_qrun_halt was called. */
int crec_replay_qrun_halted(const crec_replay_qrun *q);

/*! crec_replay_qrun_time() : in an insn or access callback: the instructions
 *  run before the one now running (for 'k': the syscall's). */
uint64_t crec_replay_qrun_time(crec_replay_qrun *q);

/*! crec_replay_qrun_tid() : @return the thread the run replays (a whole
 *  run: the one that runs, or ran last). */
uint32_t crec_replay_qrun_tid(const crec_replay_qrun *q);

/*! crec_replay_qrun_reg() : one register: 0..15 enum crec_gpr, then
 *  CREC_FMT_REG_RIP, _RFLAGS, _FS_BASE, _GS_BASE.  @return its value (0 for
 *  another id). */
uint64_t crec_replay_qrun_reg(crec_replay_qrun *q, int id);

/*! crec_replay_qrun_predicted() : during an access callback of kind 'r':
 *  @return 1 if the load was one the recording's cache predicted (READS
 *  holds no value for it: memory held it already), 0 if its value came
 *  from READS. */
int crec_replay_qrun_predicted(const crec_replay_qrun *q);

/*! crec_replay_qrun_write_masked() : write the bytes of line `line`
 *  (address >> 6) that `mask` names, from `values` (64 bytes), into the
 *  run's memory; bytes not mapped are left out. */
void crec_replay_qrun_write_masked(crec_replay_qrun *q, uint64_t line, uint64_t mask,
                                   const uint8_t *values);

/* ---- a full replay cut at restart points (for index/: replay --jobs) ---- */

/*
 * Where a full replay on several jobs may cut a recording of one thread
 * besides its key frames: restart points with their seeds (what index/
 * keeps in FILE.idx), none of it trusted.  get() is called once for the
 * process replayed (proc, its key frames kfs), from the calling thread:
 * *n points, *times the instruction count of each (in time order), *out
 * an array of n for need() to fill, *costs what each span of the index
 * cost (n 0: not known), *keep what release() frees.  need(i)
 * fills (*out)[i] (the point and its seed), from any thread, once; it
 * may fail (the part that needs it is then replayed again without).  A
 * part that starts at a point also writes the seeds of the later points
 * it passes, where it holds nothing of its own; every cut is checked
 * (registers, streams, and the memory the part used of what it was
 * given), and a replay whose parts do not all hold is done again cut at
 * key frames (replayer/session.c).
 */
/* What stretches of the recording cost, as the index measured them (the
 * host CPU time of recording them, or of replaying them to build it): n
 * spans in time order, span i from instruction start[i] to start[i+1] (the
 * last to the end), each cost[i] > 0.  The parts of replay --jobs are cut
 * to equal costs rather than equal instruction counts: a program's start
 * (code translated for the first time, files read) costs far more an
 * instruction than its loops. */
typedef struct crec_replay_costs {
    size_t n;
    const uint64_t *start, *cost;
    const uint64_t *seed; /* the bytes of the seed of the point each starts at
                             (0: a key frame): what makes a part from points
                             dearer than one from a key frame */
} crec_replay_costs;

typedef struct crec_replay_points {
    int (*get)(void *ctx, const char *path, uint32_t proc, const crec_fmt_keyframe *kfs,
               size_t nkf, const uint64_t **times, crec_replay_from **out, size_t *n,
               crec_replay_costs *costs, void **keep);
    int (*need)(void *ctx, void *keep, size_t i);
    void (*release)(void *ctx, void *keep);
    void *ctx;
} crec_replay_points;

/*! crec_replay_run_points() : crec_replay_run, with the restart points pts
 *  offers (may be NULL: key frames only). */
int crec_replay_run_points(const char *path, const crec_replay_options *o,
                           const crec_replay_points *pts, crec_replay_result *res,
                           crec_error *err);

/*! crec_replay_load_keyframes() : every KEYFRAME record, in order; *out is
 *  crec_malloc'd.  @return CREC_OK or an error. */
int crec_replay_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                               crec_error *err);

/*! crec_replay_reachable_keyframes() : in a file cut short, the key frames
 *  a replay can reach: those whose READS, EVENTS and SEQ data before them all
 *  reached the file (the chunks written last may be the ones lost).
 *  @return how many, from the first; *cut 1 when a replay must stop at the
 *  last of them, 0 when the file still holds the whole run (only its
 *  directory was lost, or it was not cut at all). */
size_t crec_replay_reachable_keyframes(crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                                       size_t nkf, int *cut);

#endif /* CREC_REPLAYER_H */
