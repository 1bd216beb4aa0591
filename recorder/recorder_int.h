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

/* Bounds of the log2 of the granules the cache holds (a recording
 * parameter, in the header).  It holds whole pages: at least one. */
#define CREC_PCACHE_MIN_LOG2 4
#define CREC_PCACHE_MAX_LOG2 24

#define CREC_PCACHE_PAGE 4096
#define CREC_PCACHE_PAGE_GRANULES (CREC_PCACHE_PAGE / CREC_PCACHE_GRANULE)
/* Recently used pages, a power of two: 16 MiB of them, so that a program
 * going through a large table or list at random (bench_hash, bench_chase)
 * finds most of its pages in the memory hook's fast path. */
#define CREC_PCACHE_TLB 4096

typedef struct crec_pcache crec_pcache;

/* Create a cache of 2^log2_granules granules (at least a page's), all unknown. */
int crec_pcache_create(crec_pcache **out, unsigned log2_granules, crec_error *err);

/* Free a cache; NULL is accepted. */
void crec_pcache_free(crec_pcache *pc);

/* Forget every byte: done at each key frame so segments stand alone.
 * Costs nothing now; each page forgets when it is next used. */
void crec_pcache_flush(crec_pcache *pc);

/* A guest store of `size` bytes at addr: the cache now predicts them. */
void crec_pcache_write(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size);

/* Forget every granule of [addr, addr+len) (a remapped range). */
void crec_pcache_forget(crec_pcache *pc, uint64_t addr, uint64_t len);

/* crec_pcache_read and crec_pcache_store (below) for an access that
 * touches more than one granule, or a page not in the table of recent
 * pages. */
int crec_pcache_read_slow(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size);
void crec_pcache_store_slow(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size);

/*! crec_pcache_reused_over() : did the cache predict a load of more than
 *  `limit` granules since the last flush?  They are what a flush now would
 *  make the thread log again, if it goes on using what it used (about 9
 *  bytes of READS each).  It stops counting past the limit: a program
 *  going through 16 MiB at random has 4096 pages to count. */
int crec_pcache_reused_over(crec_pcache *pc, uint64_t limit);

/*! crec_pcache_pages() : the pages the cache holds now (its memory:
 *  about 4.6 KiB each). */
size_t crec_pcache_pages(const crec_pcache *pc);

/*
 * The cache is a copy of the guest pages the thread used, as the replay
 * of this thread would hold them: for each page its bytes, and for each
 * 8-byte granule which of its bytes are known (loaded or stored since the
 * last flush).  A load is predicted when all its bytes are known and equal
 * to the guest's.  Pages are found through a small table of the ones used
 * last (which also holds where the guest page is in host memory, for the
 * memory hook); the rest through a hash table.  When the cache holds its
 * maximum of pages, one not used lately gives way.
 *
 * A granule is almost always wholly known or not at all: one bit per
 * granule says "wholly known", next to the bit that says a load of it was
 * predicted since the last flush, so that the memory hook's check of a
 * load touches one word of them and the bytes.  `known` holds the mask of
 * a granule known in part (its bit clear).
 *
 * A flush (key frame) only bumps `epoch`: a page forgets what it knew the
 * first time it is brought into the table in the new epoch.  The "hit"
 * bits make the cost of the next flush known (crec_pcache_reused_over).
 */
struct crec_pcache_page {
    struct {
        uint64_t full; /* bit g: granule g is wholly known */
        uint64_t hit;  /* bit g: a load of it was predicted this epoch */
    } fh[CREC_PCACHE_PAGE_GRANULES / 64];
    uint64_t page;        /* guest page number */
    uint32_t epoch;       /* the flush epoch of its state */
    uint32_t used;        /* brought into the table since the eviction hand passed */
    uint32_t idx;         /* where it is in crec_pcache.pages */
    uint32_t span;        /* the index span `touch` and `wrote` are of */
    uint8_t known[CREC_PCACHE_PAGE_GRANULES]; /* granules known in part: which bytes */
    /* for the index (rec_index.c): per granule, the bytes loaded or stored,
     * and stored, in the current span of the index */
    uint8_t touch[CREC_PCACHE_PAGE_GRANULES];
    uint8_t wrote[CREC_PCACHE_PAGE_GRANULES];
    uint8_t bytes[CREC_PCACHE_PAGE];
};

struct crec_pcache_tlbe {
    uint64_t tag;         /* guest page number | the table's generation */
    struct crec_pcache_page *p;
    uint8_t *host;        /* the guest page in host memory (NULL: not looked up) */
    uint64_t pad;
};

/* A table entry is valid only in the generation it was made in: emptying
 * the table (at every span of the index, and every syscall) is a new
 * generation, not a pass over it.  Guest page numbers are below 2^52. */
#define CREC_PCACHE_GEN_SHIFT 52

struct crec_pcache {
    struct crec_pcache_tlbe tlb[CREC_PCACHE_TLB];
    uint64_t tlb_gen;     /* the generation, << CREC_PCACHE_GEN_SHIFT; never 0 */
    unsigned log2_granules;
    uint32_t epoch;
    size_t max_pages;
    struct crec_pcache_page **pages; /* every page held, npages of them */
    size_t npages, hand;
    uint32_t *hash;       /* open addressing: index into pages + 1; 0 = empty */
    size_t hcap;
    struct crec_pcache_page **used; /* the pages brought in this epoch */
    size_t nused, capused;
    uint32_t span;        /* the index's current span (crec_pcache_new_span) */
    struct crec_pcache_page **spanp; /* the pages brought in this span */
    size_t nspanp, capspanp;
    /* called with a page of the current span that is about to be reused
     * for another (its touch and wrote masks are then lost) */
    void (*evict)(void *ctx, const struct crec_pcache_page *p);
    void *evict_ctx;
    int span_lost;        /* no memory to list a span's pages: the index is off */
};

/*! crec_pcache_page_of() : the page of guest page number `page`, brought
 *  into the table (made if it was not held).  NULL: not cached (an
 *  address beyond user space, or no memory). */
struct crec_pcache_page *crec_pcache_page_of(crec_pcache *pc, uint64_t page);

/*! crec_pcache_new_span() : the index starts a new span: every page's
 *  touch and wrote masks start empty (lazily, when next used). */
void crec_pcache_new_span(crec_pcache *pc);

/* Pages that fit beside user space: addresses below 2^56.  Others are
 * never cached (always a miss). */
#define CREC_PCACHE_PAGE_LIMIT (1ull << (56 - 12))

/*! crec_pcache_drop_hosts() : forget where guest pages are in host memory
 *  (after anything that may have moved them: a syscall, a map change). */
void crec_pcache_drop_hosts(crec_pcache *pc);

/* The table entry of guest page `page`, or NULL when it is not there. */
static inline struct crec_pcache_tlbe *pcache_tlb(crec_pcache *pc, uint64_t page)
{
    struct crec_pcache_tlbe *e = &pc->tlb[page & (CREC_PCACHE_TLB - 1)];

    return e->tag == (page | pc->tlb_gen) ? e : NULL;
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
    case 1:
        return p[0];
    default:
        for (unsigned i = n; i-- > 0;)
            v = v << 8 | p[i];
        return v;
    }
}

/* Store the low n bytes of v, little-endian, at p; fixed sizes compile to
 * one store on a little-endian host. */
static inline void pcache_store_le(uint8_t *p, uint64_t v, unsigned n)
{
    switch (n) {
    case 8:
        p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24), p[4] = (uint8_t)(v >> 32), p[5] = (uint8_t)(v >> 40);
        p[6] = (uint8_t)(v >> 48), p[7] = (uint8_t)(v >> 56);
        return;
    case 4:
        p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
        return;
    case 2:
        p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
        return;
    default:
        for (unsigned i = 0; i < n; i++)
            p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* The mask of the known bytes of granule g of page p. */
static inline unsigned pcache_known(const struct crec_pcache_page *p, unsigned g)
{
    return p->fh[g / 64].full >> (g % 64) & 1 ? 0xffu : p->known[g];
}

/* Granule g of page p now knows the bytes of `mask` too. */
static inline void pcache_learn(struct crec_pcache_page *p, unsigned g, unsigned mask)
{
    uint64_t bit = 1ull << (g % 64);

    if (p->fh[g / 64].full & bit)
        return;
    mask |= p->known[g];
    if (mask == 0xff)
        p->fh[g / 64].full |= bit;
    else
        p->known[g] = (uint8_t)mask;
}

/*
 * A load of `size` <= 8 bytes inside one granule, whose bytes are `v`
 * (little-endian, only the low `size` bytes), of a page in the table:
 * predicted?  A predicted load is counted as reuse.  The common case of
 * the memory hook; anything else goes to crec_pcache_read.
 */
static inline int pcache_hit(struct crec_pcache_page *p, unsigned off, unsigned size, uint64_t v)
{
    unsigned g = off / CREC_PCACHE_GRANULE;
    uint64_t bit = 1ull << (g % 64);

    if (!(p->fh[g / 64].full & bit) || pcache_load_le(p->bytes + off, size) != v)
        return 0;
    p->fh[g / 64].hit |= bit;
    return 1;
}

/* A store of `size` <= 8 bytes inside one granule of a page in the table. */
static inline void pcache_put(struct crec_pcache_page *p, unsigned off, unsigned size,
                              uint64_t value)
{
    unsigned g = off / CREC_PCACHE_GRANULE;

    pcache_store_le(p->bytes + off, value, size);
    if (size == CREC_PCACHE_GRANULE)
        p->fh[g / 64].full |= 1ull << (g % 64);
    else
        pcache_learn(p, g, (0xffu >> (8 - size)) << (off % CREC_PCACHE_GRANULE));
}

/*
 * A guest load of `size` bytes at addr that returned `bytes`.
 * @return 1 if the cache predicted every byte (a hit), 0 otherwise.
 * Either way the cache then holds `bytes` for that range.
 */
static inline int crec_pcache_read(crec_pcache *pc, uint64_t addr, const uint8_t *bytes,
                                   unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_PAGE);
    struct crec_pcache_tlbe *e = pcache_tlb(pc, addr / CREC_PCACHE_PAGE);

    if (e && off % CREC_PCACHE_GRANULE + size <= CREC_PCACHE_GRANULE &&
        pcache_hit(e->p, off, size, pcache_load_le(bytes, size)))
        return 1;
    return crec_pcache_read_slow(pc, addr, bytes, size);
}

/* A store of 1 to 8 bytes given as a number (byte i of the store in bits
 * 8i..8i+7), as Unicorn's store hook passes it: the cache predicts them. */
static inline void crec_pcache_store(crec_pcache *pc, uint64_t addr, uint64_t value,
                                     unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_PAGE);
    struct crec_pcache_tlbe *e = pcache_tlb(pc, addr / CREC_PCACHE_PAGE);

    if (e && off % CREC_PCACHE_GRANULE + size <= CREC_PCACHE_GRANULE)
        pcache_put(e->p, off, size, value);
    else
        crec_pcache_store_slow(pc, addr, value, size);
}

/* ---- the recording session (record.c, rec_mem.c) ------------------------ */

#include "emu/emu.h"
#include "format/format.h"
#include "index/index.h"

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

/*
 * Where key frames and snapshots go when no interval is given (record.c,
 * rec_keyframe_due and rec_snapshot_due; docs/ARCHITECTURE.md): budgets
 * in thousandths of a bit of recording an instruction.
 */
#define REC_KF_BITS_MILLI 20          /* what a key frame's flush may cost */
#define REC_KF_FLOOR (1ull << 24)     /* ... and after this many instructions: */
#define REC_KF_FLOOR_BITS_MILLI 100
#define REC_KF_FIXED_BYTES 2048       /* its record and memory-map listing */
#define REC_SNAP_MIN (1ull << 26)     /* instructions between snapshots, at least */
#define REC_SNAP_BITS_MILLI 20        /* what the pages of a snapshot may cost */

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
    uint64_t last_kf;     /* ... and of its last one */
    int has_kf;           /* it has had its first key frame */
    crec_regs sys_regs;   /* registers when its current syscall began */
    int in_syscall;       /* between on_syscall_enter and _exit */
    int blocked;          /* ... and switched out meanwhile: the syscall blocked */
    crec_fmt_buf seq;     /* SEQ entries not yet handed to the writer */
    crec_fmt_seq_ctx seq_ctx; /* the entry the next is written relative to */
    size_t seq_atomics;   /* where in `seq` the atomics of the running block begin */
    crec_fmt_seq_ctx seq_atomics_ctx; /* ... and the context there */
    uint64_t seq_atomics_last; /* the count of the last of them */
};

/* The index gathered while recording (rec_index.c). */
#define REC_IX_POINT_DIV 8      /* restart points per check-point interval, */
#define REC_IX_POINT_MIN 10000  /* ... not closer than this (as index/build.c) */
#define REC_IX_BITS_MILLI 100   /* what a span may cost the index, an instruction */
#define REC_IX_SPAN_MAX (1ull << 24) /* ... or how long a span may grow */

struct rec_ix {
    int on;               /* gathering (one thread, a file, no failure yet) */
    int open;             /* a span is being gathered: */
    crec_idx_span cur;    /* its start, key frame and point */
    uint64_t last_start;  /* where it started */
    uint64_t next_offer;  /* where a restart point may next be taken */
    uint64_t point_every; /* instructions between restart points (0: none) */
    size_t nkf;           /* key frames so far */
    crec_idx_writer *writer; /* the spans done, encoded on its own thread */
    size_t nspans;
    crec_idx_line *lines; /* the current span's lines (of pages given up, */
    size_t nlines, caplines; /*  then of all its pages as it ends) */
    crec_idx_granule *needs; /* ... its seed */
    size_t nneeds, capneeds;
    uint64_t *k;          /* ... the ranges the kernel wrote */
    size_t nk, capk;
    uint32_t flags;       /* ... CREC_IDX_WILD */
    uint64_t cpu_at;      /* thread CPU time (us) where it started: its cost */
};

/* Pages of code checked lately, a direct-mapped table the block hook looks
 * in first: an interpreter's loop runs on a few pages in turn. */
#define REC_RAN_RECENT 16

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
    uint64_t kf_interval; /* instructions between key frames (fixed) */
    int kf_auto;          /* ... or where they cost little (rec_keyframe_due) */
    uint64_t cp_interval; /* instructions between check points */
    uint64_t point_every; /* between points of either kind */
    uint64_t snap_every;  /* key frames between snapshots (fixed) */
    int snap_auto;        /* ... or where they cost little (rec_snapshot_due) */
    uint64_t last_snap;   /* global count of the last snapshot */
    int started;          /* the first key frame is written */
    int finishing;        /* the last key frame is being taken */
    int stopped;          /* the caller asked to stop (opt->stop): it ends early */
    double last_sync;     /* when every stream was last flushed (monotonic s) */

    struct crec_emu_observer observer;
    struct rec_pageset dirty;
    struct rec_range *dirty_big; /* big ranges changed since the last snapshot */
    size_t n_dirty_big, cap_dirty_big;
    int dirty_all;        /* the next snapshot must take every page */
    uint64_t last_dirty_page;

    struct rec_pageset ran; /* pages of code whose bytes are stored (rec_code_ran) */
    uint64_t ran_recent[REC_RAN_RECENT]; /* the last of them blocks ran on, + 1, by
                                           page number modulo REC_RAN_RECENT; 0 = none */
    struct rec_code_hash *code_hashes; /* one per piece of code (REC_CODE_PIECE) */
    size_t n_code_hashes, cap_code_hashes;
    /* the files code is mapped from (the loader's, then mmap's), so that the
     * first listing of a process can name them (a fork's child) */
    struct rec_image *images;
    size_t n_images, cap_images;
    crec_fmt_hash symbolized[REC_MAX_SYMBOLIZED]; /* blobs whose symbols are written */
    size_t n_symbolized;

    struct rec_ix ix;

    crec_record_stats stats;
    int failed;           /* a write failed: `err` says why; stop recording */
    crec_error err;

    /* the flight recorder (flight.c): ring, --max-size, dumps, --start-at */
    struct rec_flight *fl; /* NULL for a plain recording of the whole run */
    /* rec_flight_block has nothing to do at a block start but a dump asked
     * for since fl_dumps_seen: no trigger, ring, --max-size, dump process or
     * stop pending (flight.c: the block tests this inline, and anything
     * that may change it clears it) */
    int fl_calm;
    sig_atomic_t fl_dumps_seen;
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
/* A block of `bytes` at addr is about to run: store the pages of paged code
 * it lies on that the file does not hold yet (rec_code_ran_known first). */
void rec_code_ran(struct rec_session *rs, uint64_t addr, uint64_t bytes);
void rec_ran_clear(struct rec_session *rs); /* a new process image */

/* Is a block of ninsns instructions at addr on a page checked lately, and
 * too short to leave it (an instruction is at most 15 bytes)? */
static inline int rec_code_ran_known(const struct rec_session *rs, uint64_t addr,
                                     uint32_t ninsns)
{
    uint64_t page = addr / CREC_PAGE_SIZE;

    return rs->ran_recent[page % REC_RAN_RECENT] == page + 1 &&
           addr % CREC_PAGE_SIZE + 15 * (uint64_t)ninsns <= CREC_PAGE_SIZE;
}
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

/* rec_index.c: the index, gathered while recording.
 * rec_ix_start: begin (on: it can be); rec_ix_attach: a thread's cache
 * tells what it gives up; rec_ix_access: an access the fast path of the
 * memory hook did not see (predicted: a load the cache predicted);
 * rec_ix_need: bytes of granule g of page p a predicted load read before
 * the span touched them; rec_ix_kernel: the kernel (a syscall, a map
 * change) wrote a range (0, UINT64_MAX: anywhere); rec_ix_keyframe: a key
 * frame at global count icount (last: the recording's end) ends the span
 * and starts the next; rec_ix_point_due / rec_ix_point: a restart point
 * here; rec_ix_save: write PATH.idx, best effort; rec_ix_stop: no index
 * (threads, a fork: before it, so that no child gets the writer's
 * thread); rec_ix_free. */
void rec_ix_start(struct rec_session *rs, int on);
void rec_ix_attach(struct rec_session *rs, crec_pcache *pc);
void rec_ix_access(struct rec_session *rs, uint64_t addr, unsigned size, int store,
                   int predicted);
void rec_ix_need(struct rec_session *rs, const struct crec_pcache_page *p, unsigned g,
                 unsigned mask);
void rec_ix_kernel(struct rec_session *rs, uint64_t addr, uint64_t len);
void rec_ix_keyframe(struct rec_session *rs, uint64_t icount, int last);
int rec_ix_point_due(struct rec_session *rs, uint64_t icount);
void rec_ix_point(struct rec_session *rs, const crec_fmt_keyframe *p);
void rec_ix_save(struct rec_session *rs, const char *path);
void rec_ix_stop(struct rec_session *rs);
void rec_ix_free(struct rec_session *rs);

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
