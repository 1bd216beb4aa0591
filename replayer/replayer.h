/*
 * replayer.h - re-execute a recording with no OS and check that it runs
 * exactly as it did when recorded.
 */
#ifndef CREC_REPLAYER_H
#define CREC_REPLAYER_H

#include <stdint.h>

#include "crec.h"

/* How far a replay has got: `done` of `total` instructions to replay. */
typedef void (*crec_replay_progress_fn)(void *ctx, uint64_t done, uint64_t total);

typedef struct crec_replay_options {
    uint64_t from;   /* start at the last key frame at or before this time */
    unsigned jobs;   /* verify segments on this many threads (0, 1: one) */
    /* called about ten times a second on the calling thread while the
     * replay runs (may be NULL) */
    crec_replay_progress_fn progress;
    void *progress_ctx;
} crec_replay_options;

/* Where and how a replay left the recorded path. */
typedef struct crec_divergence {
    uint64_t icount;  /* instruction count when it was noticed */
    uint64_t rip;
    char insn[160];   /* the instruction at rip: bytes and disassembly */
    char what[400];   /* what differed */
} crec_divergence;

typedef struct crec_replay_result {
    uint64_t start_icount;    /* the key frame replay started from */
    uint64_t instructions;    /* the recording's last instruction count */
    uint64_t replayed;        /* instructions executed by this replay */
    uint64_t keyframes_checked;
    uint64_t syscalls, writes_checked;
    int exited_by_signal;
    uint64_t exit_value;      /* status, or the signal */
    int truncated;            /* the file was cut short: the replay verified it
                               * up to its last key frame (`instructions`) */
    int diverged;
    crec_divergence div;
} crec_replay_result;

/*! crec_replay_run() :
 *  Replay the recording at `path`.  A divergence is not an error: it is
 *  reported in res->diverged / res->div with CREC_OK.
 *  @return CREC_OK, or an error reading the file (CREC_ERR_CORRUPT, ...). */
int crec_replay_run(const char *path, const crec_replay_options *o, crec_replay_result *res,
                    crec_error *err);

/* ---- query runs (for index/) ------------------------------------------- */

#include "emu/emu.h"
#include "format/format.h"

/* One replay stopped at an exact instruction count, kept for inspection. */
typedef struct crec_replay_qrun crec_replay_qrun;

/* A guest memory access seen by a query run: kind 'r' a load (the bytes
 * now hold their recorded value), 'w' a store (before it happens), 'k'
 * bytes written by the kernel or a new mapping (not in replay memory;
 * addr 0 with len UINT64_MAX: anywhere). */
typedef void (*crec_replay_access_fn)(void *ctx, crec_emu_cpu *cpu, int kind, uint64_t addr,
                                      uint64_t len);

struct crec_replay_exec;

/* What a query run reports; every member may be NULL (0). */
typedef struct crec_replay_watch {
    crec_replay_access_fn access;            /* every guest memory access */
    void (*keyframe)(void *ctx, size_t k);   /* the run passes key frame k */
    void *ctx;
    /* A restart point, offered at the first block start at or after every
     * point_every instructions since the last key frame or point, strictly
     * inside a segment: registers and stream positions as a key frame,
     * which crec_replay_from can start from (with the memory it needs). */
    void (*point)(void *ctx, crec_emu_cpu *cpu, const crec_fmt_keyframe *p);
    uint64_t point_every;
    const struct crec_replay_exec *exec; /* an execution run (below), or NULL */
} crec_replay_watch;

/*
 * Where a query run starts: key frame `first` itself, or a restart point
 * that a run offered inside its segment.  Starting at a point, the run
 * builds the key frame's memory map, applies the map changes made before
 * the point, and writes `nlines` 64-byte lines of memory (line numbers are
 * addresses >> 6; later entries win): the lines accessed since the key
 * frame, as they were at the point.  Loads predicted after the point find
 * their values there.
 */
typedef struct crec_replay_from {
    const crec_fmt_keyframe *point;
    size_t nlines;
    const uint64_t *lines;
    const uint8_t *values;   /* 64 bytes a line */
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

/*! crec_replay_qrun_continue() :
 *  Run a query run on, from where it stopped to exactly `until`
 *  instructions (or the recording's end), reporting as before.  Block
 *  boundaries may then differ from the recording's: only query runs, which
 *  check no key frame, may do this.
 *  @return CREC_OK, CREC_ERR_ARG for a time before the run's, or an error. */
int crec_replay_qrun_continue(crec_replay_qrun *q, uint64_t until, crec_error *err);

/*! crec_replay_qrun_cpu() : @return the CPU, stopped where the run ended. */
crec_emu_cpu *crec_replay_qrun_cpu(crec_replay_qrun *q);

/*! crec_replay_qrun_free() : NULL is fine. */
void crec_replay_qrun_free(crec_replay_qrun *q);

/* ---- execution runs (for index/exec.c: crec_exec_run) ------------------- */

/*
 * What an execution run tells its client, besides what crec_replay_watch
 * does.  Every callback may be NULL.  Inside one, crec_replay_qrun_regs,
 * _read, _time and _tid describe the state at that point, and
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

/*! crec_replay_qrun_icount() : @return the instructions the run has
 *  executed (where it stopped, between calls). */
uint64_t crec_replay_qrun_icount(crec_replay_qrun *q);

/*! crec_replay_qrun_tid() : @return the thread the run replays. */
uint32_t crec_replay_qrun_tid(const crec_replay_qrun *q);

/*! crec_replay_qrun_regs() : the registers at the callback's point (RIP
 *  is the instruction about to run; after a syscall, the one after it).
 *  @return CREC_OK or CREC_ERR_EMU. */
int crec_replay_qrun_regs(crec_replay_qrun *q, crec_regs *r, crec_error *err);

/*! crec_replay_qrun_reg() : one register: 0..15 enum crec_gpr, then
 *  CREC_FMT_REG_RIP, _RFLAGS, _FS_BASE, _GS_BASE.  @return its value (0 for
 *  another id). */
uint64_t crec_replay_qrun_reg(crec_replay_qrun *q, int id);

/*! crec_replay_qrun_read() : replay memory (what the run holds, right or
 *  not: the client knows which bytes it saw).  @return 0, -1 if unmapped. */
int crec_replay_qrun_read(crec_replay_qrun *q, uint64_t addr, uint64_t len, uint8_t *buf);

/*! crec_replay_load_keyframes() : every KEYFRAME record, in order; *out is
 *  crec_malloc'd.  @return CREC_OK or an error. */
int crec_replay_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                               crec_error *err);

/*! crec_replay_reachable_keyframes() : in a file cut short, the key frames
 *  a replay can reach: those whose READS and EVENTS data before them all
 *  reached the file (the chunks written last may be the ones lost).
 *  @return how many, from the first; *cut 1 when a replay must stop at the
 *  last of them, 0 when the file still holds the whole run (only its
 *  directory was lost, or it was not cut at all). */
size_t crec_replay_reachable_keyframes(crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                                       size_t nkf, int *cut);

#endif /* CREC_REPLAYER_H */
