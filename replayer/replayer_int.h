/*
 * replayer_int.h - private to replayer/: one replay of a run of segments.
 */
#ifndef CREC_REPLAYER_INT_H
#define CREC_REPLAYER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "emu/emu.h"
#include "format/format.h"
#include "replayer/replayer.h"

#define REP_LAZY_SEEN 64
/* At a key frame, code that is writable too is hashed again (it may have
 * changed since); past this many bytes, it is not compared. */
#define REP_CODE_CHECK_MAX (64ull << 20)

/* The restart points a replay on several jobs may cut at (session.c). */
struct rep_points {
    const crec_replay_points *fn;
    void *keep;
    const uint64_t *times;       /* the instruction count of each */
    crec_replay_from *pts;       /* each, once fn->need has filled it */
    size_t n;
    crec_replay_costs costs;     /* what each span of the index cost (n 0: not known) */
};

#define REP_TRK_TLB 4096

/* A guest page a part from a restart point accessed (replay.c rep_track). */
struct rep_trk_page {
    uint64_t page;               /* address >> 12 */
    uint64_t full[8];            /* a bit an 8-byte granule: every byte of it own (the
                                    common case, in a cache line: 1/64 of the memory) */
    uint64_t own[64];            /* a mask a 64-byte line: bytes the part holds itself */
    uint64_t used[64];           /* ... bytes first read by a predicted load */
    uint8_t *val;                /* the values of those (4096 bytes, NULL: none yet) */
};

/*
 * What a thread keeps while another one has the CPU, in a whole-program
 * replay: the fields of rep_seg that belong to the running thread.
 */
struct rep_thread {
    uint32_t tid;
    int started;                 /* its first key frame was loaded */
    int ended;                   /* it exited, or the recording ended it */
    crec_regs regs;
    crec_emu_xstate *xs;         /* its vector state crec holds itself (NULL: none yet) */
    const crec_fmt_keyframe *kfs; /* its key frames (thread_icount is its time) */
    size_t nkf, next_kf, kf_checked_last;
    const crec_fmt_keyframe *cps; /* its check points */
    size_t ncp, next_cp;
    crec_fmt_cursor *reads, *events, *seq;
    uint64_t hits_left, entry_off, entry_hits;
    crec_fmt_event peek;
    int have_peek;
    uint64_t peek_off, ev_off;
    crec_fmt_seq_ctx seq_ctx;
    crec_fmt_seq seq_next;
    int have_seq_next;
};

/*
 * One replay on its own CPU, from key frame `first` until instruction
 * `stop_at` (the start of the next job's segments, or the end).  Parallel
 * replay runs several, each with its own reader.
 *
 * Counts: `kfs` are the key frames of the thread being replayed, and what
 * is compared with them is that thread's own count, thread_icount (a
 * recording of one thread has the same number in both).  Replaying one
 * thread alone, the CPU counts that thread's instructions.  A whole-program
 * replay (`whole`) counts every thread's on the CPU; the running thread's
 * count is tbase + (CPU count - gbase).
 */
struct rep_seg {
    crec_fmt_reader *r;
    crec_emu_cpu *cpu;
    uint32_t tid;
    crec_fmt_cursor *reads, *events;
    uint64_t hits_left;          /* loads still predicted before the next value */
    /* Guest pages the load hook touched lately; emptied at every change of
     * the memory map, which can move or drop a page's host memory. */
    struct crec_emu_hostpages hostpages;
    int echoes;                  /* the load hook must filter echoes (crec_emu_mem_echoes) */

    const crec_fmt_keyframe *kfs; /* every key frame of the recording */
    size_t nkf;
    const crec_fmt_keyframe *cps; /* the check points of the thread replayed */
    size_t ncp, next_cp;         /* (a full replay checks them; none: NULL) */
    size_t nkf_blocks;           /* key frames checked at block starts */
    size_t first, next_kf;
    size_t end_kf;               /* the key frame where this run ends */
    uint64_t stop_at;            /* its instruction count */
    int is_last;                 /* this run goes to the end of the recording */
    int truncated;               /* ... which has no EXIT: stop at end_kf */

    crec_fmt_event peek;         /* one event of look-ahead */
    int have_peek;
    uint64_t peek_off;           /* its EVENTS offset */
    uint64_t ev_off;             /* the EVENTS offset of the last event read */
    crec_fmt_event exit;         /* the EXIT event, once reached */
    int have_exit;
    /* signals (version 3): the look-ahead is read at the next block start
     * (a SIGNAL record may be the next event, at that block), and a block
     * start where the CPU stopped to enter a handler, or where the process
     * died of a signal */
    int peek_stale;
    uint64_t sig_at;
    uint64_t fatal_at;

    uint64_t keyframes_checked, checkpoints_checked, syscalls, writes_checked, reads_taken;
    uint64_t at;                 /* the last block start: how far the run has got */
    uint64_t replayed;           /* instructions run, once the piece is over */
    int finished;                /* the run has ended (read by the watching thread) */
    int diverged;
    crec_divergence div;
    int failed;                  /* the file is bad: err says how */
    crec_error err;

    /*
     * Query runs (index/, docs/QUERY.md): stop after exactly `until`
     * instructions (crec_emu_cpu_run_until), skip the end-of-recording
     * checks and key-frame register checks, and report every guest memory
     * access to on_access: 'r' a load (its bytes now hold the recorded
     * value), 'w' a store (called before it happens), 'k' bytes the kernel
     * or a memory-map change wrote (replay memory does not hold them).
     */
    int query;
    uint64_t until;
    int reached;                 /* the run got to `until` */
    int ended;                   /* ... or the program exited or faulted first */
    uint64_t stopped_at_block;   /* the block start where on_block stopped it, or 0 */
    uint64_t blocks_seen[2][2];  /* the last two blocks begun: start, bytes (the
                                    latest first; rep_stale_end_rip) */
    struct rep_lazy *lazy;       /* code not copied in yet (lazy.c) */
    size_t nlazy, caplazy;
    uint64_t lazy_seen[REP_LAZY_SEEN]; /* page+1 of pages known filled or not lazy */
    uint64_t refill_at;          /* a block to enter again, its code now there */
    crec_replay_access_fn on_access;
    void (*on_keyframe)(void *ctx, crec_replay_qrun *q, size_t k); /* passing key frame k */
    void (*on_point)(void *ctx, crec_replay_qrun *q, const crec_fmt_keyframe *p);
    crec_replay_qrun *owner;     /* the query run this is, given to the callbacks */
    uint64_t point_every, next_point; /* offer a restart point every so often */
    void *access_ctx;
    int in_access;               /* a load or store is being reported, at: */
    uint64_t access_addr;

    /* where the run starts: &kfs[first], or a restart point in that segment
     * (crec_replay_from) with the memory it restores */
    const crec_fmt_keyframe *start;
    const uint64_t *from_lines;
    const uint8_t *from_values;
    const uint64_t *from_masks;
    size_t from_nlines;
    int predicted;               /* the load reported now was predicted */
    uint64_t entry_off, entry_hits; /* the READS entry being used: where, its hits */

    /* threads (format 2) */
    uint32_t version;            /* the file's format version */
    crec_fmt_cursor *seq;        /* the thread's SEQ stream (NULL: none) */
    crec_fmt_seq_ctx seq_ctx;
    crec_fmt_seq seq_next;       /* its next switch entry (IN, OUT, OUT_EXACT) */
    int have_seq_next;
    uint64_t cut_at;             /* a stop inside a block is set here (CPU count), 0: none */
    int thread_ended;            /* the thread's end was reached (THREAD exit, EXIT) */
    uint64_t gbase, tbase;       /* whole: where the running slice began */
    int whole;                   /* a whole-program replay: one memory, every thread */
    int alone;                   /* one of several threads (format 2): thread counts */
    struct rep_thread *threads;  /* whole: every thread, by number - 1 */
    size_t nthreads;
    const crec_fmt_slice *slices; /* whole: the schedule */
    size_t nslices, slice;
    const crec_fmt_keyframe *all_kfs; /* whole: every key frame (for per-thread views) */
    size_t all_nkf;
    uint64_t thread_keyframes;   /* key frames of threads checked at the end */
    uint64_t whole_until;        /* whole, a query run: stop at this count (0: the end) */
    int owns_whole;              /* threads' key frames, threads and slices are the run's */

    /* Checking the memory map at each key frame against its listing
     * (replay.c): the replay's mappings, and the hashes of code found equal
     * to the listing's, kept while no map change touches them. */
    struct crec_emu_mapping *maps;
    size_t nmaps, capmaps;
    struct rep_code_ok { uint64_t start, end; crec_fmt_hash hash; } *code_ok;
    size_t ncode_ok, capcode_ok;
    uint64_t code_hashed;        /* bytes of writable code hashed at this key frame */

    /* the gaps of a conditional recording (MARKS), jumped over (replay.c) */
    struct rep_gap { uint64_t from, to; } *gaps;
    size_t ngaps;
    size_t jump_to;              /* non-zero: go on at this key frame, the CPU stopped */
    uint64_t skipped;            /* instructions of the gaps jumped over */

    /* execution runs (qexec.c): the client, and where the run is */
    const struct crec_replay_exec *exec;
    int halted;                  /* the client ended the run: report nothing more */
    int in_syscall;              /* a syscall's results are being applied */
    uint64_t blk_t, blk_addr;    /* the block running: instructions before it */
    uint32_t blk_k;              /* ... and its instructions seen by the code hook */
    int blk_seen;                /* blk_t/blk_addr were reported already */
    uint64_t rip_fix;            /* the RIP a callback sees where Unicorn's is stale */

    /*
     * A part of a full replay cut at the index's restart points (session.c,
     * replay --jobs): nothing here is trusted.  A part that starts at a
     * point (start != &kfs[first]) is given the point's seed, and passes
     * the later points in `pass`, where it writes the seed's bytes it does
     * not hold itself.  It tracks every page it accesses (`trk`): the bytes
     * it holds itself (stored, or given by READS), and those whose first
     * access was a predicted load (`used`: their value came from what it
     * was given), with that value.  A part that ends at a point
     * (`end_point`) must meet it: registers and streams as the point says,
     * else `meet_failed` (not a divergence: the index may be to blame); its
     * CPU is kept, and its memory must hold every byte the next part used
     * (rep_parts_meet).
     */
    const struct rep_points *points; /* the points the part is cut at: */
    size_t pt_start, pt_end;     /* ... where it starts and ends (SIZE_MAX: a key frame) */
    size_t pt_lo, pt_hi;         /* ... and those it passes, read by its own thread */
    uint64_t t0;                 /* where the part starts (for the progress line) */
    const crec_replay_from *pass;
    size_t npass, pass_at;
    uint64_t seed_block;         /* a block to enter again, a seed now written */
    struct rep_trk_page **trk;   /* open addressing by page (NULL: empty) */
    size_t trk_cap, trk_n;       /* a power of two (0: nothing tracked); pages */
    struct rep_trk_page *trk_last; /* the page of the last access */
    struct rep_trk_page **trk_tlb; /* REP_TRK_TLB recent ones, by page number, */
    uint64_t *trk_tlb_page;      /* ... and their numbers + 1 (a look costs no miss) */
    const crec_replay_from *end_point;
    int meet_failed;
    char meet_what[200];
};

/* The running thread's own count now. */
static inline uint64_t rep_ticount(const struct rep_seg *s)
{
    return crec_emu_cpu_icount(s->cpu) - s->gbase + s->tbase;
}

/* session.c: every KEYFRAME record, in order (*out is crec_malloc'd). */
int rep_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                       crec_error *err);

/* session.c: the same, and every CHECKPOINT record in *cps (version 4;
 * crec_malloc'd, may be empty). */
int rep_load_points(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                    crec_fmt_keyframe **cps, size_t *ncp, crec_error *err);

/* session.c: how many threads the recording has (EVENTS streams). */
size_t rep_threads(const crec_fmt_reader *r);

/* session.c: the key frames of thread tid, in order (*out crec_malloc'd). */
int rep_thread_keyframes(const crec_fmt_keyframe *kfs, size_t nkf, uint32_t tid,
                         crec_fmt_keyframe **out, size_t *n, crec_error *err);

/* replay.c: run one replay to its end; its result is left in *s. */
int rep_seg_run(struct rep_seg *s);

/* replay.c: a part that ran to the restart point s->end_point, where the
 * next part starts: does it stand there (count, registers, streams)?
 * meet_failed if not. */
void rep_seg_meet(struct rep_seg *s);

/* replay.c: only the start of a run (its CPU, registers and memory map). */
int rep_seg_run_start(struct rep_seg *s, crec_error *err);

/* replay.c: a whole-program replay (s->whole, threads, slices set). */
int rep_whole_run(struct rep_seg *s);

/* session.c: set s up for a whole-program replay of the recording read by
 * r (key frames kfs): the schedule, every thread's key frames.
 * @return CREC_OK, or an error (s owns what it got: rep_seg_close). */
int rep_whole_open(struct rep_seg *s, crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                   size_t nkf, const crec_fmt_keyframe *cps, size_t ncp, crec_error *err);

/* replay.c: run a query run that stopped on to `until` (s->query). */
int rep_seg_resume(struct rep_seg *s, uint64_t until);
void rep_seg_close(struct rep_seg *s);

/* lazy.c: code copied in a page at a time, for query runs.
 * rep_lazy_add: [addr, addr+len) is mapped and will hold blob's bytes.
 * rep_lazy_settle: copy in every lazy range overlapping [addr, addr+len),
 *   before a change of the memory map there.
 * rep_lazy_block: a block starts at addr: copy in its page and the next if
 *   they are lazy and empty; *refill 1 says the block must be entered again. */
int rep_lazy_add(struct rep_seg *s, uint64_t addr, uint64_t len, const crec_fmt_hash *blob,
                 crec_error *err);
int rep_lazy_settle(struct rep_seg *s, uint64_t addr, uint64_t len, crec_error *err);
int rep_lazy_block(struct rep_seg *s, uint64_t addr, int *refill, crec_error *err);
void rep_lazy_free(struct rep_seg *s);

/* qexec.c: execution runs.  rep_exec_open adds the code hooks the client
 * wants; the others report to s->exec (each does nothing once halted). */
int rep_exec_open(struct rep_seg *s, crec_error *err);
void rep_exec_block(struct rep_seg *s, uint64_t addr, uint32_t ninsns, uint64_t before);
void rep_exec_access(struct rep_seg *s, int kind, uint64_t addr, uint64_t len,
                     const uint8_t *value);
void rep_exec_syscall(struct rep_seg *s, const crec_fmt_event *ev);

/* replay.c: parts cut at restart points, in order, the CPUs of those
 * before j still open.  rep_parts_meet: does every byte part j used
 * without holding it itself hold what the last part before it that held
 * the byte (one from a key frame holds all) held there?  @return 1 or 0.
 * rep_parts_free: what a part tracked. */
int rep_parts_meet(const struct rep_seg *segs, size_t j);
void rep_parts_free(struct rep_seg *s);

/* replay.c: write the bytes of line `line` that `mask` names (NULL
 * mask... all 64) from values into the run's memory. */
void rep_write_line(struct rep_seg *s, uint64_t line, uint64_t mask, const uint8_t *values);

/* regs.c: describe the first difference between two register states in
 * `what`.  @return 1 if they differ, 0 if they are the same. */
int crec_regs_diff(const crec_regs *want, const crec_regs *got, char *what, size_t size);

#endif /* CREC_REPLAYER_INT_H */
