/*
 * recorder_int.h - private to recorder/: the prediction cache and the
 * recording session.  Other modules see the recorder only through
 * crec_record() and crec_run() in include/crec.h.
 *
 * The cache decides which guest reads the recording must log.  See
 * docs/ARCHITECTURE.md, "The prediction cache", for the rules.
 */
#ifndef CREC_RECORDER_INT_H
#define CREC_RECORDER_INT_H

#include <stdint.h>

#include "crec.h"

/* Bytes covered by one cache entry; accesses are split at this boundary. */
#define CREC_PCACHE_GRANULE 8

/* Widest single access the cache accepts (an SSE load). */
#define CREC_PCACHE_MAX_ACCESS 16

/* Bounds of the log2 of the number of entries (a recording parameter). */
#define CREC_PCACHE_MIN_LOG2 4
#define CREC_PCACHE_MAX_LOG2 24

typedef struct crec_pcache crec_pcache;

/* Create a cache of 2^log2_entries entries, all invalid. */
int crec_pcache_create(crec_pcache **out, unsigned log2_entries, crec_error *err);

/* Free a cache; NULL is accepted. */
void crec_pcache_free(crec_pcache *pc);

/* Invalidate every entry: done at each key frame so segments stand alone. */
void crec_pcache_flush(crec_pcache *pc);

/* A guest store of `size` bytes at addr: the cache now predicts them. */
void crec_pcache_write(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size);

/* Forget every granule of [addr, addr+len) (a remapped range). */
void crec_pcache_forget(crec_pcache *pc, uint64_t addr, uint64_t len);

/* crec_pcache_read and crec_pcache_store (below) for an access that
 * touches more than one granule. */
int crec_pcache_read_split(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size);
void crec_pcache_store_split(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size);

/*
 * The cache itself, here so that the lookup every guest load and store
 * makes compiles into the memory hook.  One entry holds the granule's
 * number and which of its bytes are known in one word, its bytes in
 * another, so that a lookup touches 16 bytes and compares whole words.
 * Byte i of a granule is bits 8i..8i+7 of `value`.
 */
struct crec_pcache_entry {
    uint64_t tag_known; /* granule number << 8 | bit i set: byte i is known */
    uint64_t value;
};

struct crec_pcache {
    unsigned log2_entries;
    struct crec_pcache_entry *entries;
};

/* Granule numbers that fit beside the mask: addresses below 2^59, which
 * covers every user-space address.  Others are never cached (always a miss). */
#define CREC_PCACHE_TAG_LIMIT (1ull << 56)

/*
 * Neighbouring granules take neighbouring entries, so a run of loads walks
 * host cache lines in order (a hash that scattered them made gzip's record
 * a third slower for no better prediction); the high bits folded in keep
 * arrays a power of two apart from taking the same entries.  Only the
 * recorder places entries: replay follows the logged hit counts.
 */
static inline struct crec_pcache_entry *pcache_slot(crec_pcache *pc, uint64_t tag)
{
    return &pc->entries[(tag ^ tag >> pc->log2_entries) & ((1ull << pc->log2_entries) - 1)];
}

/* The low n bytes of a word, 1 <= n <= 8. */
static inline uint64_t pcache_low_bytes(unsigned n)
{
    return n >= 8 ? ~0ull : (1ull << (8 * n)) - 1;
}

/* n <= 8 guest (little-endian) bytes as a number; fixed sizes compile to
 * one load on a little-endian host. */
static inline uint64_t pcache_load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    switch (n) {
    case 8:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
               (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    case 4:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24;
    case 2:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8;
    default:
        for (unsigned i = n; i-- > 0;)
            v = v << 8 | p[i];
        return v;
    }
}

/*
 * Compare bytes [off, off+len) of granule `tag` with `bits` (already in
 * place, zero elsewhere), then store them; off + len <= 8.  @return 1 if
 * they were all known and equal.
 */
static inline int pcache_piece(crec_pcache *pc, uint64_t tag, unsigned off, unsigned len,
                               uint64_t bits, int is_read)
{
    struct crec_pcache_entry *e;
    uint64_t lanes = pcache_low_bytes(len) << (8 * off);
    uint64_t mask = (uint64_t)(0xffu >> (8 - len)) << off;
    int hit = 0;

    if (tag >= CREC_PCACHE_TAG_LIMIT)
        return 0;
    e = pcache_slot(pc, tag);
    if ((e->tag_known >> 8) != tag)
        e->tag_known = tag << 8; /* another granule: forget it */
    else if (is_read)
        hit = (e->tag_known & mask) == mask && ((e->value ^ bits) & lanes) == 0;
    e->value = (e->value & ~lanes) | bits;
    e->tag_known |= mask;
    return hit;
}

/* pcache_piece for all 8 bytes of granule `tag`: the entry ends up fully
 * known whatever it held. */
static inline int pcache_whole(crec_pcache *pc, uint64_t tag, uint64_t value, int is_read)
{
    struct crec_pcache_entry *e;
    uint64_t full = tag << 8 | 0xff;
    int hit;

    if (tag >= CREC_PCACHE_TAG_LIMIT)
        return 0;
    e = pcache_slot(pc, tag);
    hit = is_read && e->tag_known == full && e->value == value;
    e->tag_known = full;
    e->value = value;
    return hit;
}

/*
 * A guest load of `size` bytes at addr that returned `bytes`.
 * @return 1 if the cache predicted every byte (a hit), 0 otherwise.
 * Either way the cache then holds `bytes` for that range.
 */
static inline int crec_pcache_read(crec_pcache *pc, uint64_t addr, const uint8_t *bytes,
                                   unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);

    if (off == 0 && size == CREC_PCACHE_GRANULE) /* a whole granule: most loads */
        return pcache_whole(pc, addr / CREC_PCACHE_GRANULE, pcache_load_le(bytes, 8), 1);
    if (off + size > CREC_PCACHE_GRANULE)
        return crec_pcache_read_split(pc, addr, bytes, size);
    return pcache_piece(pc, addr / CREC_PCACHE_GRANULE, off, size,
                        pcache_load_le(bytes, size) << (8 * off), 1);
}

/* A store of 1 to 8 bytes given as a number (byte i of the store in bits
 * 8i..8i+7), as Unicorn's store hook passes it: the cache predicts them. */
static inline void crec_pcache_store(crec_pcache *pc, uint64_t addr, uint64_t value,
                                     unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);

    if (off == 0 && size == CREC_PCACHE_GRANULE)
        pcache_whole(pc, addr / CREC_PCACHE_GRANULE, value, 0);
    else if (off + size > CREC_PCACHE_GRANULE)
        crec_pcache_store_split(pc, addr, value, size);
    else
        pcache_piece(pc, addr / CREC_PCACHE_GRANULE, off, size,
                     (value & pcache_low_bytes(size)) << (8 * off), 0);
}

/* ---- the recording session (record.c, rec_mem.c) ------------------------ */

#include "emu/emu.h"
#include "format/format.h"

/* A set of guest page numbers: the pages written since the last snapshot. */
struct rec_pageset {
    uint64_t *slots; /* page number + 1; 0 = empty */
    size_t cap, used;
};

/*
 * Ranges too large to list page by page (REC_DIRTY_BIG_PAGES or more): a
 * new mapping of a reservation, a whole heap given back with
 * MADV_DONTNEED.  The next snapshot takes only the pages of them that host
 * memory holds: a page nothing has touched reads as zeros and costs
 * nothing, neither here nor in the recording (docs/ARCHITECTURE.md).
 */
#define REC_DIRTY_BIG_PAGES 16384 /* 64 MiB */

struct rec_range {
    uint64_t addr, len;
};

/* An executable piece of a file, mapped before recording began (the loader's). */
struct rec_image {
    uint64_t addr, len, file_off;
    char *path;
};

/*
 * The hash of an executable mapping's bytes as last stored, so the listing
 * after each key frame need not copy and hash unchanged code again.  A
 * store, a kernel write or a map change touching the range clears `valid`.
 */
struct rec_code_hash {
    uint64_t start, end;
    crec_fmt_hash hash;
    int valid;
};

/* Code is stored in blobs of at most this many bytes: memory stays bounded
 * and a blob fits a record whatever the size of an executable mapping. */
#define REC_CODE_PIECE (16ull << 20)
#define REC_MAX_IMAGES 1024
#define REC_MAX_SYMBOLIZED 256

/*
 * One guest thread's part of the recording: its own prediction cache,
 * READS, EVENTS, SEQ and key frames.  The running thread's cache, pending
 * READS bytes and hit count live in rec_session (pc, reads, hits), where
 * the memory hook finds them without an indirection; a switch moves them.
 */
struct rec_thread {
    uint32_t tid;         /* crec's number of the thread */
    int live;
    crec_pcache *pc;      /* while switched out: its cache, */
    crec_fmt_buf reads;   /* pending READS bytes */
    uint64_t hits;        /* and hit count */
    uint64_t next_kf;     /* its own instruction count of its next key frame */
    crec_regs sys_regs;   /* registers when its current syscall began */
    int in_syscall;       /* between on_syscall_enter and _exit */
    int blocked;          /* ... and switched out meanwhile: the syscall blocked */
    crec_fmt_buf seq;     /* SEQ entries not yet handed to the writer */
    crec_fmt_seq_ctx seq_ctx; /* the entry the next is written relative to */
    size_t seq_atomics;   /* where in `seq` the atomics of the running block begin */
    crec_fmt_seq_ctx seq_atomics_ctx; /* ... and the context there */
};

struct rec_session {
    const crec_record_options *opt;
    crec_fmt_writer *w;
    crec_emu *emu;
    crec_emu_cpu *cpu;
    crec_pcache *pc;
    uint32_t tid;

    crec_fmt_buf reads;   /* READS bytes not yet handed to the writer */
    crec_fmt_buf scratch; /* one encoded record */
    uint64_t hits;        /* loads predicted since the last logged value */

    /* threads: the running one is `cur` (its hot state is pc, reads, hits
     * above); SEQ entries are written once there is a second thread */
    struct rec_thread **threads; /* by crec's number - 1 */
    size_t nthreads;
    struct rec_thread *cur;
    int multi;            /* a second thread was created: sequencing is on */
    uint64_t seq;         /* the next global sequence number */
    /* Guest pages the hooks touched lately; emptied after every syscall,
     * since only a syscall can move or drop a page's host memory. */
    struct crec_emu_hostpages hostpages;

    uint64_t next_kf;     /* instruction count of the next key frame */
    uint64_t kf_interval;
    uint64_t snap_every;  /* key frames between snapshots */
    int started;          /* the first key frame is written */
    int stopped;          /* the caller asked to stop (opt->stop): it ends early */
    double last_sync;     /* when every stream was last flushed (monotonic s) */

    struct crec_emu_observer observer;
    struct rec_pageset dirty;
    struct rec_range *dirty_big; /* big ranges changed since the last snapshot */
    size_t n_dirty_big, cap_dirty_big;
    int dirty_all;        /* the next snapshot must take every page */
    uint64_t last_dirty_page;

    struct rec_code_hash *code_hashes; /* one per piece of code (REC_CODE_PIECE) */
    size_t n_code_hashes, cap_code_hashes;
    /* the files code is mapped from (the loader's, then mmap's), so that the
     * first listing of a process can name them (a fork's child) */
    struct rec_image *images;
    size_t n_images, cap_images;
    crec_fmt_hash symbolized[REC_MAX_SYMBOLIZED]; /* blobs whose symbols are written */
    size_t n_symbolized;

    crec_record_stats stats;
    int failed;           /* a write failed: `err` says why; stop recording */
    crec_error err;

    /* the flight recorder (flight.c): ring, --max-size, dumps, --start-at */
    struct rec_flight *fl; /* NULL for a plain recording of the whole run */
    int active;           /* recording now (not in a gap of --start-at/--stop-at) */
    int ended;            /* the file is complete; the program runs on unrecorded */
    int hooked;           /* the memory hooks are installed */
    int snap_full_due;    /* the next snapshot takes every page */
    uint64_t kfs_since_snap;
    int listing_code_due; /* the next listing writes CODE records for new code */
    struct rec_coded { uint64_t addr; crec_fmt_hash hash; } *coded; /* CODE records written */
    size_t ncoded, capcoded;

    /* processes (docs/ARCHITECTURE.md, "Processes"): this one's number, its
     * command line, and where a fork or execve began in it */
    uint32_t proc;
    char *path;           /* the program (crec_malloc'd) */
    char **argv;          /* its argv, one crec_malloc'd block */
    int child;            /* this crec was made by a guest's fork */
    uint64_t forks;       /* the guest forked this many times here (recorded) */
    uint32_t from_tid;    /* fork/execve: the thread that made it, */
    uint64_t from_icount; /* ... its own count at the syscall */
    uint32_t exec_parent; /* execve: the process it replaced */
};

/* rec_mem.c: the memory map, code, snapshots and dirty pages. */
int rec_pageset_add(struct rec_pageset *s, uint64_t page);
void rec_pageset_free(struct rec_pageset *s);
void rec_mark_dirty_pages(struct rec_session *rs, uint64_t addr, uint64_t len);

/*
 * Bytes [addr, addr+len) changed.  The page of the last store is
 * remembered, so a run of stores to one page costs a compare; the set of
 * dirty pages and the code hashes are only looked at when the page changes.
 */
static inline void rec_mark_dirty(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    uint64_t first = addr / CREC_PAGE_SIZE;

    if (len > 0 && first + 1 == rs->last_dirty_page && (addr + len - 1) / CREC_PAGE_SIZE == first)
        return;
    rec_mark_dirty_pages(rs, addr, len);
}
int rec_write_listing(struct rec_session *rs);
/* Every stored hash of code is stale (stores went unseen: a gap). */
void rec_code_hashes_forget(struct rec_session *rs);
/* A memory-map change made by the running thread, as FOREIGN copies in
 * every other live thread's EVENTS (their caches forget the range). */
int rec_foreign_mmap(struct rec_session *rs, const crec_fmt_event *ev);
int rec_write_snapshot(struct rec_session *rs, uint64_t icount, int full);
int rec_on_mem_event(struct rec_session *rs, const struct crec_emu_mem_event *ev);
void rec_note_image(struct rec_session *rs, const struct crec_emu_mem_event *ev);
/* A new process image (a fork's child, execve): nothing of the old one's
 * memory is known (the next snapshot takes every page). */
void rec_mem_restart(struct rec_session *rs);

/* symbols.c: SYMBOL records for the ELF file `path`, whose bytes from
 * file_off on are the code blob `blob`.  A missing or odd file: none. */
int rec_symbols(struct rec_session *rs, const char *path, uint64_t file_off,
                const crec_fmt_hash *blob);

/* symbols.c: the address of symbol `name` relative to the code blob that
 * starts at file offset file_off of the ELF file `path`.  @return 1 and
 * *rel if it is there, else 0. */
int rec_symbol_find(const char *path, uint64_t file_off, const char *name, uint64_t *rel);

/* record.c */
int rec_event(struct rec_session *rs, const crec_fmt_event *ev);
void rec_fail(struct rec_session *rs, const crec_error *err);
int rec_keyframe(struct rec_session *rs, uint64_t icount, uint64_t ticount, uint64_t rip,
                 const crec_regs *regs);
int rec_flush_reads(struct rec_session *rs);
void rec_flush_held(struct rec_session *rs);
int rec_add_hooks(struct rec_session *rs, crec_error *err);
void rec_remove_hooks(struct rec_session *rs);
/* End the recording with the program still running (why: enum
 * crec_fmt_stop_why, number: a dump's) at the block start `rip`, global
 * time icount, the running thread's own time ticount: a last key frame of
 * every thread, the EXIT record (ended), a STOP mark.  The file stays open. */
int rec_end_here(struct rec_session *rs, uint32_t why, uint64_t number, uint64_t rip,
                 uint64_t icount, uint64_t ticount);

/* flight.c */
/* Set up what the options ask (after the writer is open).  @return CREC_OK
 * or an error (a ring on a pipe, ...). */
int rec_flight_open(struct rec_session *rs, crec_error *err);
void rec_flight_free(struct rec_session *rs);
/* At every block start, before the key frame: triggers, --max-size, dumps,
 * ring segments.  *boundary 1: the key frame about to be taken starts a
 * ring segment (rec_ring_boundary first).  @return 1 when the block hook
 * must do nothing more (not recording, or the CPU was stopped). */
int rec_flight_block(struct rec_session *rs, uint64_t addr, uint64_t before, uint64_t tbefore,
                     int *boundary);
/* A new ring segment begins at `icount`: the streams are flushed. */
int rec_ring_boundary(struct rec_session *rs, uint64_t icount);
/* A syscall ended (syscall:NAME triggers). */
void rec_flight_syscall(struct rec_session *rs, uint64_t nr);
/* Executable code of the file `path` at file_off was mapped at addr
 * (symbol triggers). */
void rec_flight_image(struct rec_session *rs, const char *path, uint64_t file_off,
                      uint64_t addr);
/* A second thread starts: a ring or a conditional recording ends at the
 * next block start (they hold one thread). */
void rec_flight_thread(struct rec_session *rs);
/* Does this recording hold one process (--ring, --start-at, --stop-at,
 * --max-size)?  Then a fork ends it (rec_flight_forked, each phase of
 * enum crec_emu_fork_phase: the parent at its next block start, the child
 * lets go of the file) and so does an execve (rec_flight_exec, at once),
 * with one line, and the program runs on unrecorded. */
int rec_flight_one_process(const struct rec_session *rs);
void rec_flight_forked(struct rec_session *rs, int phase, int pid);
void rec_flight_exec(struct rec_session *rs);
/* The program ended (or crec stopped it) at icount: the end of a recording
 * that is in a gap or reached --max-size.  @return CREC_ERR_NOTFOUND when
 * neither is so (the plain end), else CREC_OK or an error. */
int rec_flight_finish(struct rec_session *rs, const struct crec_emu_exit *ex, uint64_t icount);
void rec_flight_wait_dumps(struct rec_session *rs);
/* @return 1 when --max-size stopped the program (--on-full stop). */
int rec_flight_full_stop(const struct rec_session *rs);
/* Before the file is closed: the ring's figures into rs->stats. */
void rec_flight_stats(struct rec_session *rs);
/* What the caller is told: why the recording ended before the program. */
void rec_flight_why(struct rec_session *rs, crec_exit *out);
/* Write a mark to the MARKS stream.  @return CREC_OK or the error (rec_fail). */
int rec_mark(struct rec_session *rs, const crec_fmt_mark *m);

#endif /* CREC_RECORDER_INT_H */
