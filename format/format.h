/*
 * format.h - the .crec container: the one header other modules include to
 * write or read a recording.  docs/FORMAT.md is the normative byte-level
 * spec; this header is the C view of it.
 *
 * A recording is a header and a set of named streams.  A stream is a byte
 * sequence identified by (type, thread id); global streams use thread 0.
 * Streams are cut into zstd-compressed, checksummed chunks.  The records in
 * each stream are encoded and decoded by the crec_fmt_*_encode/_decode pairs
 * below, the one place where packet layouts are defined for both record and
 * replay.
 *
 * Every function that can fail returns a crec_err and fills `err` (which may
 * be NULL) with a one-line message.  Handles are opaque; free accepts NULL.
 */
#ifndef CREC_FORMAT_H
#define CREC_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"

/* ---- versions and stream types ------------------------------------------ */

/*
 * The format version and the list of stream and record types sit together:
 * bump CREC_FMT_VERSION when this list changes (or when any layout in
 * docs/FORMAT.md changes).  A reader refuses every other version.
 */
#define CREC_FMT_VERSION 5
#define CREC_FMT_MIN_VERSION 1 /* the oldest version a reader still reads */

enum crec_fmt_stream {
    CREC_FMT_S_HEADER = 1,    /* the recording header (one chunk, first) */
    CREC_FMT_S_READS = 2,     /* per thread: unpredicted read values */
    CREC_FMT_S_EVENTS = 3,    /* per thread: non-determinism records */
    CREC_FMT_S_SEQ = 4,       /* per thread: sequencing points (version 2: with a kind) */
    CREC_FMT_S_KEYFRAMES = 5, /* global: KEYFRAME and (version 4) CHECKPOINT records */
    CREC_FMT_S_SNAPSHOTS = 6, /* global: SNAPSHOT records */
    CREC_FMT_S_BLOBS = 7,     /* global: content-addressed BLOB records */
    CREC_FMT_S_CODE = 8,      /* global: CODE mapping records */
    CREC_FMT_S_SYMBOLS = 9,   /* global: SYMBOL records */
    CREC_FMT_S_INDEX = 10,    /* global: opaque bytes of the index module */
    CREC_FMT_S_DIRECTORY = 11, /* the chunk directory (one chunk, last) */
    CREC_FMT_S_MARKS = 12,    /* version 3, global: MARK records (ring, gaps, stops) */
    CREC_FMT_S_PROCESS = 13,  /* per process (version 3): PROCESS records */
    CREC_FMT_S_MAX = 13
};

/* Record kinds: the first byte of every framed record (docs/FORMAT.md §6). */
enum crec_fmt_kind {
    CREC_FMT_K_KEYFRAME = 0x01,
    CREC_FMT_K_CHECKPOINT = 0x02, /* version 4 */
    CREC_FMT_K_SYSCALL = 0x10,
    CREC_FMT_K_CPUID = 0x11,
    CREC_FMT_K_RDTSC = 0x12,
    CREC_FMT_K_MMAP = 0x13,
    CREC_FMT_K_SIGNAL = 0x14,
    CREC_FMT_K_THREAD = 0x15,
    CREC_FMT_K_EXIT = 0x16,
    CREC_FMT_K_SNAPSHOT = 0x20,
    CREC_FMT_K_BLOB = 0x30,
    CREC_FMT_K_PAGED = 0x31, /* version 5, BLOBS: code stored a page at a time */
    CREC_FMT_K_CODE = 0x40,
    CREC_FMT_K_SYMBOL = 0x50,
    CREC_FMT_K_RING = 0x60, /* version 3, MARKS: what a ring recording dropped */
    CREC_FMT_K_GAP = 0x61,  /* version 3, MARKS: instructions that ran unrecorded */
    CREC_FMT_K_STOP = 0x62, /* version 3, MARKS: why the recording ended before the program */
    CREC_FMT_K_PROCESS = 0x70, /* version 3: PROCESS stream */
};

/* ---- limits a reader enforces (and a writer respects) ------------------- */

#define CREC_FMT_MAX_CHUNK (64u << 20)    /* bytes in one chunk, either form */
#define CREC_FMT_MAX_RECORD (64u << 20)   /* bytes in one framed record body */
#define CREC_FMT_MAX_PAGED (1ull << 30)   /* bytes of code one PAGED record names */
#define CREC_FMT_MAX_STRING (1u << 20)    /* bytes in one string */
/* argv or envp entries: Linux starts a program with at most 6 MiB of
 * arguments and environment, a pointer and a NUL at least each, so fewer
 * than 700,000 strings in all. */
#define CREC_FMT_MAX_STRINGS (1u << 20)
#define CREC_FMT_MAX_THREADS 65536        /* distinct thread ids */
/* Processes of one recording (version 3): a number fits the chunk header's
 * 24 bits, and a reader keeps a small entry for each. */
#define CREC_FMT_MAX_PROCS (1u << 20)
#define CREC_FMT_MAX_STREAMS (1u << 22)
#define CREC_FMT_MAX_CPUID 1024           /* CPUID leaves in the header */
#define CREC_FMT_DEFAULT_CHUNK (256u << 10) /* writer flush threshold */
#define CREC_FMT_READ_WIDTH_MAX 16        /* bytes of one READS value */
/* Guest memory a record names (a mapping, code, a snapshot page, a range
 * a syscall wrote) lies below this: the x86-64 user address space. */
#define CREC_FMT_ADDR_LIMIT (1ull << 47)

/* Header values this reader honours; it refuses a file that claims others,
 * naming both values (docs/FORMAT.md §4). */
#define CREC_FMT_PAGE_SIZE CREC_PAGE_SIZE /* the only page size */
#define CREC_FMT_GRANULE 8                /* the only cache granule (crec_fmt_read_span) */
#define CREC_FMT_CACHE_LOG2_MIN 4         /* cache entries: a power of two, */
#define CREC_FMT_CACHE_LOG2_MAX 24        /*   2^4 .. 2^24 */

/* ---- the header ----------------------------------------------------------- */

#define CREC_FMT_ARCH_X86_64 1
#define CREC_FMT_DEFAULT_SLICE 100000 /* instructions */
#define CREC_FMT_ORDER_LITTLE 0
#define CREC_FMT_ORDER_BIG 1

/* One CPUID answer shown to the guest. */
typedef struct crec_fmt_cpuid {
    uint32_t leaf, subleaf;
    uint32_t eax, ebx, ecx, edx;
} crec_fmt_cpuid;

/*
 * The recording header.  The writer copies what it is given; a header
 * filled by the reader owns its strings and is released with
 * crec_fmt_header_clear().
 */
typedef struct crec_fmt_header {
    uint32_t version;        /* read only: CREC_FMT_VERSION */
    uint32_t arch;           /* CREC_FMT_ARCH_X86_64 */
    uint32_t host_order;     /* CREC_FMT_ORDER_* of the recording host */
    uint64_t page_size;
    uint64_t cache_entries;  /* prediction cache: number of entries */
    uint64_t cache_granule;  /* prediction cache: bytes per entry */
    uint64_t keyframe_interval; /* instructions between key frames; version 4:
                                   0, placed by what they cost */
    uint64_t snapshot_interval; /* key frames between snapshots; version 4: 0,
                                   placed by what they cost */
    int64_t start_sec;       /* wall clock at start, for information only */
    uint32_t start_nsec;
    char *crec_version;      /* e.g. CREC_VERSION_STRING; NULL = "" */
    /* version 2 (a version-1 file reads as one CPU, the default slice, no chaos) */
    uint64_t time_slice;     /* instructions a thread ran before another could
                                (0 when writing: CREC_FMT_DEFAULT_SLICE) */
    uint64_t cpus;           /* CPUs shown to the guest (0 when writing: 1) */
    int chaos;               /* --chaos: random slices, switches inside blocks */
    uint64_t chaos_seed;
    /* version 4 (an older file reads as 0: none) */
    uint64_t checkpoint_interval; /* instructions between check points */
    size_t ncpuid;
    crec_fmt_cpuid *cpuid;
    size_t argc;
    char **argv;
    size_t envc;
    char **envp;
} crec_fmt_header;

/*! crec_fmt_header_clear() :
 *  Free the strings and arrays of a header filled by the reader, and zero it.
 *  @return nothing; accepts NULL. */
void crec_fmt_header_clear(crec_fmt_header *h);

/*! crec_fmt_stream_name() :
 *  @return "READS", "EVENTS", ... for a stream type, "?" otherwise. */
const char *crec_fmt_stream_name(int type);

/*! crec_fmt_stream_per_thread() :
 *  @return 1 for READS, EVENTS and SEQ (thread id > 0 allowed), else 0. */
int crec_fmt_stream_per_thread(int type);

/*! crec_fmt_stream_per_process() :
 *  @return 1 for the streams each process of a version-3 recording has of
 *  its own (every type but HEADER, DIRECTORY, BLOBS and SYMBOLS, which the
 *  processes share), else 0. */
int crec_fmt_stream_per_process(int type);

/* ---- content hashes ------------------------------------------------------ */

/* XXH3-128 of a blob's bytes: 16 bytes, low half first, each half LE. */
typedef struct crec_fmt_hash {
    uint8_t b[16];
} crec_fmt_hash;

/*! crec_fmt_hash_bytes() :
 *  @return the content hash of `len` bytes (XXH3-128, seed 0). */
crec_fmt_hash crec_fmt_hash_bytes(const void *data, size_t len);

/* ---- byte buffers and cursors (records are built and parsed with these) -- */

/* A growable output buffer.  Zero-initialise; release with crec_fmt_buf_free. */
typedef struct crec_fmt_buf {
    uint8_t *data;
    size_t len, cap;
    int nomem; /* set once an append failed: the content is then incomplete */
} crec_fmt_buf;

void crec_fmt_buf_free(crec_fmt_buf *b);
void crec_fmt_buf_reset(crec_fmt_buf *b); /* len = 0, keeps memory, clears nomem */

/* A bounds-checked input cursor over bytes the caller owns. */
typedef struct crec_fmt_cur {
    const uint8_t *p;
    size_t len, pos;
} crec_fmt_cur;

/*
 * The primitive encodings (docs/FORMAT.md §1), for other files built the
 * same way (the index, index/codec.c).  Appends latch b->nomem on failure;
 * reads fail with CREC_ERR_CORRUPT naming `what` when the bytes end early
 * or a varint is malformed (longer than 10 bytes, or a 10th byte over 1).
 */
void crec_fmt_buf_bytes(crec_fmt_buf *b, const void *p, size_t n);
void crec_fmt_buf_u32(crec_fmt_buf *b, uint32_t v);
void crec_fmt_buf_u64(crec_fmt_buf *b, uint64_t v);
void crec_fmt_buf_varint(crec_fmt_buf *b, uint64_t v);
int crec_fmt_cur_bytes(crec_fmt_cur *c, void *out, size_t n, const char *what, crec_error *err);
int crec_fmt_cur_u32(crec_fmt_cur *c, uint32_t *v, const char *what, crec_error *err);
int crec_fmt_cur_u64(crec_fmt_cur *c, uint64_t *v, const char *what, crec_error *err);
int crec_fmt_cur_varint(crec_fmt_cur *c, uint64_t *v, const char *what, crec_error *err);
/* @return CREC_OK when every byte was read, else CREC_ERR_CORRUPT. */
int crec_fmt_cur_end(const crec_fmt_cur *c, const char *what, crec_error *err);

/* A sequential cursor over one stream of a reader (crec_fmt_cursor_open). */
typedef struct crec_fmt_cursor crec_fmt_cursor;

/*! crec_fmt_frame_next() :
 *  One framed record (kind, varint body length, body) from bytes in memory,
 *  as crec_fmt_cursor_next reads one from a stream: *kind and *body (into
 *  c's bytes) for the *_decode functions below.
 *  @return CREC_OK, or CREC_ERR_CORRUPT when the bytes end inside it. */
int crec_fmt_frame_next(crec_fmt_cur *c, int *kind, const uint8_t **body, size_t *len,
                        crec_error *err);

/* ---- record codecs ------------------------------------------------------- */
/*
 * Each *_encode appends one record, framed (kind, varint body length, body)
 * except READS and SEQ entries, which are bare.  It returns CREC_OK or
 * CREC_ERR_NOMEM.  Each *_decode takes a record body as returned by
 * crec_fmt_cursor_next() (kind already consumed) and fails with
 * CREC_ERR_CORRUPT naming the field when the body is short or inconsistent.
 */

/*! KEYFRAME: the full state of one thread at a segment start, and where its
 *  per-thread streams stood, so that replay can start there. */
typedef struct crec_fmt_keyframe {
    uint32_t tid;
    uint64_t global_icount, thread_icount;
    crec_regs regs;
    uint64_t reads_off, events_off, seq_off; /* uncompressed stream offsets */
    uint64_t hits_before; /* hits of the next READS entry that belong to
                             the segments before this key frame */
} crec_fmt_keyframe;
int crec_fmt_kf_encode(crec_fmt_buf *b, const crec_fmt_keyframe *kf);
/*! CHECKPOINT (version 4): the same body as a KEYFRAME, kind 0x02: where a
 *  replay checks the thread's registers and stream positions, with no
 *  flush of the prediction cache and no memory-map listing after it. */
int crec_fmt_cp_encode(crec_fmt_buf *b, const crec_fmt_keyframe *cp);
int crec_fmt_kf_decode(const uint8_t *body, size_t len, crec_fmt_keyframe *kf, crec_error *err);

/* EVENT records (EVENTS stream).  `kind` selects the union member. */
#define CREC_FMT_EV_HAS_HASH 1 /* syscall: write_hash is set; mmap: blob is set */
#define CREC_FMT_EV_HAS_NAME 2 /* mmap: name is set */
#define CREC_FMT_EV_LISTING 4  /* mmap: part of the map listing after a key frame */
#define CREC_FMT_EV_FOREIGN 8  /* mmap (version 2): a change another thread made
                                  while this one was switched out */
#define CREC_FMT_EV_HAS_OUT 2  /* syscall: the ranges the kernel wrote follow */
#define CREC_FMT_EV_OUT_MORE 4 /* syscall: it wrote more ranges than listed */
#define CREC_FMT_SYS_MAXOUT 8  /* at most this many listed ranges */

/* Register ids in a SYSCALL record's list of changed registers: 0..15 are
 * the GPRs (enum crec_gpr), then these. */
#define CREC_FMT_REG_RIP 16
#define CREC_FMT_REG_RFLAGS 17
#define CREC_FMT_REG_FS_BASE 18
#define CREC_FMT_REG_GS_BASE 19
#define CREC_FMT_SYS_MAXREGS 24 /* at most this many changed registers */

/* An MMAP record's protection bits: Linux's PROT_* values. */
#define CREC_FMT_PROT_READ 1
#define CREC_FMT_PROT_WRITE 2
#define CREC_FMT_PROT_EXEC 4

enum crec_fmt_mmap_op { CREC_FMT_MM_MAP = 1, CREC_FMT_MM_UNMAP, CREC_FMT_MM_PROTECT,
                        CREC_FMT_MM_BRK, CREC_FMT_MM_REMAP };
enum crec_fmt_thread_op { CREC_FMT_TH_CREATE = 1, CREC_FMT_TH_EXIT = 2 };
/* How a thread ended (THREAD exit, version 2): it called exit, or the
 * process ended (or the recording stopped) while it lived. */
enum crec_fmt_thread_how { CREC_FMT_TH_EXITED = 0, CREC_FMT_TH_ENDED = 1 };
/* How a recording ended: the program exited (value: its status), was
 * killed (value: the signal), or crec stopped recording while the program
 * was still running (value: the signal crec got, SIGINT or SIGTERM; or 0:
 * every thread was blocked for good, a deadlock). */
enum crec_fmt_exit_how { CREC_FMT_EXIT_STATUS = 0, CREC_FMT_EXIT_SIGNAL = 1,
                         CREC_FMT_EXIT_STOPPED = 2,
                         /* version 3: the process called execve (value: the
                          * number of the process it goes on as) */
                         CREC_FMT_EXIT_EXEC = 3,
                         /* version 3: the recording ended before the program,
                          * for the reason a STOP mark gives (value 0) */
                         CREC_FMT_EXIT_ENDED = 4 };

/* A SIGNAL record's flags (version 3).  Neither: an asynchronous signal
 * whose handler is entered at the block start at `icount`. */
#define CREC_FMT_SIG_FAULT 1 /* the instruction at icount faulted (it did not run);
                                its handler is entered there */
#define CREC_FMT_SIG_FATAL 2 /* the process dies of it at the block start at icount
                                (its default action); the EXIT record follows */

/* A register a SYSCALL or SIGNAL record sets (ids above), and a range of
 * guest memory the kernel wrote. */
typedef struct crec_fmt_reg_value {
    uint32_t id;
    uint64_t value;
} crec_fmt_reg_value;
typedef struct crec_fmt_range {
    uint64_t addr, len;
} crec_fmt_range;

typedef struct crec_fmt_event {
    int kind; /* CREC_FMT_K_SYSCALL .. CREC_FMT_K_EXIT */
    union {
        struct { /* a syscall's result; write_hash = XXH3-64 of bytes written */
            uint64_t icount, nr, args[6];
            int64_t ret;
            uint32_t flags;
            uint64_t write_hash;
            uint32_t nregs; /* registers besides rax the syscall changed */
            crec_fmt_reg_value regs[CREC_FMT_SYS_MAXREGS];
            uint32_t nout;  /* guest ranges the emulated kernel wrote */
            crec_fmt_range out[CREC_FMT_SYS_MAXOUT];
        } sys;
        struct { uint32_t leaf, subleaf, eax, ebx, ecx, edx; } cpuid;
        struct { uint64_t value; } rdtsc;
        struct { /* a change to the memory map; remap: addr2/len2 = new range */
            uint32_t op, flags;
            uint64_t addr, len, prot, mflags, addr2, len2;
            crec_fmt_hash blob; /* code bytes when the range became executable */
            const char *name;   /* decode: points into the body, not NUL-terminated */
            size_t name_len;
        } mmap;
        struct { /* a signal delivered at an instruction boundary; version 3 has
                    all but the first four: entering the handler set the
                    registers `regs` and wrote the frame at `out` */
            uint64_t icount; uint32_t signo; int64_t code; uint64_t addr;
            uint32_t flags; /* CREC_FMT_SIG_* */
            uint32_t nregs;
            crec_fmt_reg_value regs[CREC_FMT_SYS_MAXREGS];
            uint32_t nout;
            crec_fmt_range out[CREC_FMT_SYS_MAXOUT];
        } sig;
        struct { /* a thread starts or ends; version 2 has all but op and tid */
            uint32_t op, tid;
            uint32_t parent, guest_tid; /* create: who made it, its tid in the guest */
            uint64_t icount;            /* exit: its instructions */
            uint32_t how;               /* exit: enum crec_fmt_thread_how */
            uint64_t status;            /* exit, how EXITED: its exit status */
            uint64_t cleared;           /* exit: the 4 bytes the kernel zeroed (0: none) */
        } thread;
        struct { uint64_t global_icount; uint32_t how; uint64_t value; } exit;
    } u;
} crec_fmt_event;
int crec_fmt_ev_encode(crec_fmt_buf *b, const crec_fmt_event *ev);
/* `version`: the file's (crec_fmt_reader_header(r)->version). */
int crec_fmt_ev_decode(uint32_t version, int kind, const uint8_t *body, size_t len,
                       crec_fmt_event *ev, crec_error *err);

/*! READS entry (bare): hits predicted reads, then one value of `width`
 *  bytes (1..16; the replayer knows the width from the access). */
int crec_fmt_read_encode(crec_fmt_buf *b, uint64_t hits, const uint8_t *value, unsigned width);

/*! crec_fmt_read_span() :
 *  The bytes a READS value holds for a load of `size` bytes at `addr`: the
 *  whole aligned 8-byte granules the load touches (8 or 16 bytes) when
 *  size <= 8, else exactly the load.  A byte-by-byte scan then misses once
 *  per granule, not once per byte.
 *  @return the span's length; *start is its first address. */
unsigned crec_fmt_read_span(uint64_t addr, unsigned size, uint64_t *start);

/*! crec_fmt_read_decode_hits() / crec_fmt_read_decode_value() :
 *  The two halves of the READS entry at cursor c (a READS stream): its hit
 *  count, read when the previous value has been used, and its value, read
 *  when the load that needs it comes (only then is its width known).
 *  @return CREC_OK; for the hits CREC_ERR_NOTFOUND at the clean end of the
 *  stream; CREC_ERR_CORRUPT (a value cut off), CREC_ERR_TRUNCATED or an
 *  error reading, as crec_fmt_cursor_read. */
int crec_fmt_read_decode_hits(crec_fmt_cursor *c, uint64_t *hits, crec_error *err);
int crec_fmt_read_decode_value(crec_fmt_cursor *c, unsigned width, uint8_t *value,
                               crec_error *err);

/*! SEQ entry (bare): a global sequence number, the thread's icount at that
 *  point (including the instruction), and (version 2) what kind of point. */
enum crec_fmt_seq_kind {
    CREC_FMT_SEQ_SYSCALL = 1,  /* a syscall begins */
    CREC_FMT_SEQ_ATOMIC = 2,   /* a lock-prefixed instruction, or xchg with memory */
    CREC_FMT_SEQ_START = 3,    /* the thread is created (its parent's clone) */
    CREC_FMT_SEQ_WAKE = 4,     /* a syscall that blocked completes */
    CREC_FMT_SEQ_IN = 5,       /* the thread gets the CPU */
    CREC_FMT_SEQ_OUT = 6,      /* it gives the CPU up at a block start or after a syscall */
    CREC_FMT_SEQ_OUT_EXACT = 7, /* it gives it up inside a block (--chaos) */
};
typedef struct crec_fmt_seq {
    uint64_t seq, icount;
    uint32_t kind; /* enum crec_fmt_seq_kind; 0 in a version-1 file */
} crec_fmt_seq;
/* Version 2 writes an entry's numbers as differences from the entry before
 * it in the stream, except where a reader may start (the stream's start,
 * and each key frame's SEQ offset): there they are whole, and flagged so.
 * The context is that entry; `fresh` 1 where a reader or writer starts. */
typedef struct crec_fmt_seq_ctx {
    uint64_t seq, icount;
    int fresh;
} crec_fmt_seq_ctx;
#define CREC_FMT_SEQ_WHOLE 0x80 /* kind byte: the numbers are not differences */
int crec_fmt_seq_encode(crec_fmt_buf *b, crec_fmt_seq_ctx *ctx, const crec_fmt_seq *e);
int crec_fmt_seq_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_seq_ctx *ctx, crec_fmt_seq *e,
                        crec_error *err);

/*! SNAPSHOT: pages that changed since the previous snapshot. */
typedef struct crec_fmt_snap_page {
    uint64_t addr;
    crec_fmt_hash blob;
} crec_fmt_snap_page;
typedef struct crec_fmt_snapshot {
    uint64_t global_icount;
    size_t npages;
    crec_fmt_snap_page *pages; /* decode: allocated; crec_fmt_snapshot_clear */
} crec_fmt_snapshot;
int crec_fmt_snap_encode(crec_fmt_buf *b, const crec_fmt_snapshot *s);
int crec_fmt_snap_decode(const uint8_t *body, size_t len, crec_fmt_snapshot *s, crec_error *err);
void crec_fmt_snapshot_clear(crec_fmt_snapshot *s);

/*! CODE: an executable mapping whose bytes are blob `blob`. */
typedef struct crec_fmt_code {
    uint64_t addr, len, prot, file_off;
    crec_fmt_hash blob;
    const char *name; /* decode: points into the body, not NUL-terminated */
    size_t name_len;
} crec_fmt_code;
int crec_fmt_code_encode(crec_fmt_buf *b, const crec_fmt_code *c);
int crec_fmt_code_decode(const uint8_t *body, size_t len, crec_fmt_code *c, crec_error *err);

/*! SYMBOL: a symbol of the code blob `blob`; addr is relative to the blob. */
typedef struct crec_fmt_symbol {
    crec_fmt_hash blob;
    uint64_t addr, size;
    uint32_t type; /* ELF STT_* */
    const char *name; /* decode: points into the body, not NUL-terminated */
    size_t name_len;
} crec_fmt_symbol;
int crec_fmt_sym_encode(crec_fmt_buf *b, const crec_fmt_symbol *s);
int crec_fmt_sym_decode(const uint8_t *body, size_t len, crec_fmt_symbol *s, crec_error *err);

/*! MARK records (version 3, MARKS stream; marks.c): what a reader needs to
 *  know of a recording that does not hold the whole run.  RING: a ring
 *  recording, and what it dropped so far (the last RING mark is current).
 *  GAP: instructions [from, to) ran but were not recorded.  STOP: the
 *  recording ended at `at` before the program did, and how the program
 *  ended if that is known. */
enum crec_fmt_gap_why {
    CREC_FMT_GAP_BEFORE_START = 1, /* before the first --start-at trigger */
    CREC_FMT_GAP_STOPPED = 2,      /* between a --stop-at and the next --start-at */
};
enum crec_fmt_stop_why {
    CREC_FMT_STOP_STOP_AT = 1,  /* a --stop-at trigger (no --start-at came after) */
    CREC_FMT_STOP_MAX_SIZE = 2, /* the file reached --max-size */
    CREC_FMT_STOP_DUMP = 3,     /* a dump taken while the program ran on */
    CREC_FMT_STOP_THREADS = 4,  /* a ring or a --start-at recording met a second thread */
    CREC_FMT_STOP_NEVER = 5,    /* no --start-at trigger came: nothing was recorded */
    CREC_FMT_STOP_PROCESS = 6,  /* a one-process recording (ring, --max-size, --start-at,
                                   --stop-at) met a fork or an execve */
};
#define CREC_FMT_STOP_WHY_MAX 6
typedef struct crec_fmt_mark {
    int kind; /* CREC_FMT_K_RING, _GAP or _STOP */
    union {
        struct {
            uint64_t size;             /* the bound the user gave (--ring SIZE) */
            uint64_t kept_from;        /* global time of the first key frame kept */
            uint64_t dropped_segments; /* segments dropped so far */
            uint64_t dropped_bytes;    /* file bytes they took */
            uint64_t rotations;        /* times the file was rewritten */
        } ring;
        struct {
            uint64_t from, to; /* global times, from < to */
            uint32_t why;      /* enum crec_fmt_gap_why */
        } gap;
        struct {
            uint64_t at;       /* global time where the recording ended */
            uint32_t why;      /* enum crec_fmt_stop_why */
            uint64_t number;   /* a dump's number (1, 2, ...), else 0 */
            int ended;         /* the program's end is known: */
            uint64_t end;      /*   its global time, */
            uint32_t how;      /*   CREC_FMT_EXIT_STATUS or _SIGNAL, */
            uint64_t value;    /*   its status or signal */
        } stop;
    } u;
} crec_fmt_mark;
int crec_fmt_mark_encode(crec_fmt_buf *b, const crec_fmt_mark *m);
int crec_fmt_mark_decode(int kind, const uint8_t *body, size_t len, crec_fmt_mark *m,
                         crec_error *err);

/* Every mark of a recording, in the order written (the MARKS stream). */
typedef struct crec_fmt_marks {
    crec_fmt_mark ring;        /* the last RING mark; kind 0 when there is none */
    crec_fmt_mark stop;        /* the last STOP mark; kind 0 when there is none */
    size_t ngaps;
    crec_fmt_mark *gaps;       /* GAP marks, sorted by time; crec_malloc'd */
} crec_fmt_marks;

/*! crec_fmt_marks_read() :
 *  Read the MARKS stream (none before version 3: no marks).  Gaps must not
 *  overlap and go forward in time.
 *  @return CREC_OK and *m (crec_fmt_marks_clear), or an error. */
struct crec_fmt_reader;
int crec_fmt_marks_read(struct crec_fmt_reader *r, crec_fmt_marks *m, crec_error *err);
void crec_fmt_marks_clear(crec_fmt_marks *m);

/*! PROCESS (version 3, the PROCESS stream of each process): how it began
 *  and how it ended.  A process is one program image of one guest pid:
 *  fork makes a new process, and so does execve (the same pid goes on as
 *  a new process, whose parent is the one it replaced). */
enum crec_fmt_proc_op { CREC_FMT_PR_START = 1, CREC_FMT_PR_END = 2 };
enum crec_fmt_proc_how { CREC_FMT_PR_ROOT = 0, CREC_FMT_PR_FORK = 1, CREC_FMT_PR_EXEC = 2 };
typedef struct crec_fmt_process {
    uint32_t op;          /* enum crec_fmt_proc_op */
    uint32_t proc;        /* crec's number of the process (0: the first) */
    /* START */
    uint32_t how;         /* enum crec_fmt_proc_how */
    uint32_t parent;      /* the process that forked it, or that execve replaced */
    uint32_t parent_tid;  /* ... its thread that made that syscall */
    uint64_t parent_icount; /* ... that thread's own count at the syscall */
    uint32_t pid, ppid;   /* the guest's pid and parent pid */
    const char *path;     /* decode: points into the body, not NUL-terminated */
    size_t path_len;
    size_t argc;          /* the command line: argc strings, */
    const uint8_t *args;  /* decode: the bytes of the argc strings in the body */
    size_t args_len;      /* (crec_fmt_process_argv makes them an array) */
    char *const *argv;    /* encode: the strings */
    /* END */
    uint32_t end_how;     /* enum crec_fmt_exit_how */
    uint64_t value;       /* the status, the signal, or the process execve made */
    uint64_t instructions; /* its instruction count (all threads) */
} crec_fmt_process;
int crec_fmt_proc_encode(crec_fmt_buf *b, const crec_fmt_process *p);
int crec_fmt_proc_decode(const uint8_t *body, size_t len, crec_fmt_process *p, crec_error *err);
/*! crec_fmt_process_argv() : a decoded START's command line as a
 *  NULL-terminated array of NUL-terminated strings in one crec_malloc'd
 *  block (free it with crec_free).  @return CREC_OK or CREC_ERR_NOMEM. */
int crec_fmt_process_argv(const crec_fmt_process *p, char ***out);

/* ---- writer --------------------------------------------------------------- */

typedef struct crec_fmt_writer crec_fmt_writer;

typedef struct crec_fmt_writer_opts {
    size_t chunk_size; /* flush threshold in uncompressed bytes; 0 = default */
    int zstd_level;    /* 0 = 3 */
    int shared;        /* the writer is shared by the processes a fork makes
                          (crec_fmt_writer_forked): its file offset, directory
                          and the shared streams live in shared memory */
} crec_fmt_writer_opts;

/*! crec_fmt_writer_open() :
 *  Create `path` ("-" = stdout) and write the preamble and the header.
 *  The writer never seeks, so a pipe works.  `opts` may be NULL.
 *  @return CREC_OK and *out, or an error (CREC_ERR_IO naming the file). */
int crec_fmt_writer_open(const char *path, const crec_fmt_header *h,
                         const crec_fmt_writer_opts *opts, crec_fmt_writer **out,
                         crec_error *err);

/*! crec_fmt_writer_open_fd() :
 *  The same on an open fd, which the writer owns and closes (except 0, 1
 *  and 2, which it leaves open); `name` is for messages.  A pipe works.
 *  Writing to a pipe whose reader has gone raises SIGPIPE: a caller that
 *  wants CREC_ERR_IO instead ignores SIGPIPE.
 *  @return CREC_OK and *out, or an error (the fd is closed either way). */
int crec_fmt_writer_open_fd(int fd, const char *name, const crec_fmt_header *h,
                            const crec_fmt_writer_opts *opts, crec_fmt_writer **out,
                            crec_error *err);

/*! crec_fmt_write() :
 *  Append bytes to stream (type, tid); tid must be 0 for a global stream.
 *  A chunk is written each time the stream's buffer reaches the threshold.
 *  @return CREC_OK or an error; after an error the writer only accepts free. */
int crec_fmt_write(crec_fmt_writer *w, int type, uint32_t tid, const void *data, size_t len,
                   crec_error *err);

/*! crec_fmt_write_buf() :
 *  crec_fmt_write() of an encoded buffer; reports b->nomem as CREC_ERR_NOMEM.
 *  @return CREC_OK or an error. */
int crec_fmt_write_buf(crec_fmt_writer *w, int type, uint32_t tid, const crec_fmt_buf *b,
                       crec_error *err);

/*! crec_fmt_writer_offset() :
 *  @return the uncompressed size written so far to stream (type, tid): the
 *          offset a key frame stores. */
uint64_t crec_fmt_writer_offset(const crec_fmt_writer *w, int type, uint32_t tid);

/*! crec_fmt_flush() / crec_fmt_flush_all() :
 *  Write the buffered bytes of one stream (or of all) as chunks now.
 *  @return CREC_OK or an error. */
int crec_fmt_flush(crec_fmt_writer *w, int type, uint32_t tid, crec_error *err);
int crec_fmt_flush_all(crec_fmt_writer *w, crec_error *err);

/*! crec_fmt_blob_put() :
 *  Store `len` bytes once in the BLOBS stream, keyed by content hash; a
 *  second put of the same bytes writes nothing.  `hash` may be NULL.
 *  @return CREC_OK and *hash, or an error. */
int crec_fmt_blob_put(crec_fmt_writer *w, const void *data, size_t len, crec_fmt_hash *hash,
                      crec_error *err);

/*! crec_fmt_blob_put_pinned() :
 *  crec_fmt_blob_put() of bytes that must stay in the file for as long as
 *  it is written: code, which the listing after every key frame names.  In
 *  ring mode they go in chunks of their own that a rotation never drops;
 *  otherwise this is crec_fmt_blob_put().
 *  @return CREC_OK and *hash, or an error. */
int crec_fmt_blob_put_pinned(crec_fmt_writer *w, const void *data, size_t len,
                             crec_fmt_hash *hash, crec_error *err);

/*! crec_fmt_code_put_paged() :
 *  Name `len` bytes of code (at most CREC_FMT_MAX_PAGED) by their hash, as
 *  crec_fmt_blob_put_pinned() does, but store only the hash of each page
 *  (a PAGED record, pinned): a page's bytes are stored when the program
 *  first runs it, as a pinned blob of their own (crec_fmt_blob_put_pinned),
 *  and a reader sees the pages never stored as zeros it can tell apart
 *  (crec_fmt_blob_recorded).  Code stored whole already is not paged.
 *  @return CREC_OK and *hash, or an error. */
int crec_fmt_code_put_paged(crec_fmt_writer *w, const void *data, size_t len,
                            crec_fmt_hash *hash, crec_error *err);

/*! crec_fmt_writer_size() :
 *  @return the bytes of the file so far plus an upper bound of what its
 *  buffered bytes and its directory would add if it were closed now. */
uint64_t crec_fmt_writer_size(const crec_fmt_writer *w);

/*! crec_fmt_writer_copy_to() :
 *  Start a copy of the recording so far in a new file (a dump): the bytes
 *  written so far are copied to `fd`, which the writer then writes to
 *  instead, as if it had been there from the start (ring mode is left).
 *  Meant for a forked copy of the recorder.
 *  @return CREC_OK, or CREC_ERR_IO naming `name`. */
int crec_fmt_writer_copy_to(crec_fmt_writer *w, int fd, const char *name, crec_error *err);

/* ---- ring mode (ring.c; docs/FORMAT.md §10) ---- */

typedef struct crec_fmt_ring_opts {
    const char *path;  /* the file being written (replaced at each rotation) */
    uint64_t size;     /* the bound on the file, in bytes */
    uint64_t segment;  /* bytes after which the recorder starts a new segment */
} crec_fmt_ring_opts;

/* What a ring has done so far. */
typedef struct crec_fmt_ring_stats {
    uint64_t rotations, dropped_segments, dropped_bytes, copied_bytes, kept_from;
    double seconds;    /* spent rotating */
    uint64_t fixed_bytes; /* header, code, symbols and the base snapshot */
} crec_fmt_ring_stats;

/*! crec_fmt_ring_start() :
 *  Make w (a file opened by crec_fmt_writer_open, nothing written after the
 *  header yet) a ring: its oldest segments are dropped whole so that the
 *  file stays within o->size plus one segment.  Writes the first RING mark.
 *  @return CREC_OK, or CREC_ERR_ARG (a pipe, a bound too small). */
int crec_fmt_ring_start(crec_fmt_writer *w, const crec_fmt_ring_opts *o, crec_error *err);

/*! crec_fmt_ring_segment_bytes() :
 *  @return the bytes the current segment holds (buffered ones included);
 *  0 when w is not a ring. */
uint64_t crec_fmt_ring_segment_bytes(const crec_fmt_writer *w);

/*! crec_fmt_ring_boundary() :
 *  A new segment begins here, at global time `icount`, with a key frame
 *  of every live thread written next, then a snapshot: every stream is
 *  flushed, and when the file is full it is rewritten without its oldest
 *  segments (a rotation: the new file replaces the old one by rename, so
 *  that the path always names a readable recording).  The segment's
 *  snapshot at `icount` must follow, so that a rotation can build the
 *  memory at the start of the first segment it keeps.
 *  @return CREC_OK or an error (the file is then as it was). */
int crec_fmt_ring_boundary(crec_fmt_writer *w, uint64_t icount, crec_error *err);

/*! crec_fmt_ring_stats_get() : @return 1 and *st when w is a ring, else 0. */
int crec_fmt_ring_stats_get(const crec_fmt_writer *w, crec_fmt_ring_stats *st);

/*
 * Several processes (version 3).  A writer writes the per-process streams
 * of one process at a time, numbered 0 (the first) up; BLOBS and SYMBOLS
 * are shared by all.  A writer opened `shared` survives fork: each process
 * then writes its own chunks to the one file, one chunk at a time under a
 * lock in shared memory (docs/ARCHITECTURE.md, "Processes").
 */

/*! crec_fmt_writer_process() : @return the number of the process whose
 *  streams the writer writes now. */
uint32_t crec_fmt_writer_process(const crec_fmt_writer *w);

/*! crec_fmt_writer_take_process() : a number for a new process (the next
 *  one; shared by the processes of a shared writer).
 *  @return CREC_OK and *proc, or CREC_ERR_LIMIT. */
int crec_fmt_writer_take_process(crec_fmt_writer *w, uint32_t *proc, crec_error *err);

/*! crec_fmt_writer_set_process() :
 *  The current process's streams are complete (execve): write what is
 *  pending of them, and go on with the streams of process `proc` (from
 *  crec_fmt_writer_take_process).  @return CREC_OK or an error. */
int crec_fmt_writer_set_process(crec_fmt_writer *w, uint32_t proc, crec_error *err);

/*! crec_fmt_writer_prefork() :
 *  Just before fork (shared writers only): the shared streams' pending
 *  records are written, so that the child, which knows the same blobs,
 *  never names one that is not in the file.  @return CREC_OK or an error. */
int crec_fmt_writer_prefork(crec_fmt_writer *w, crec_error *err);

/*! crec_fmt_writer_forked() :
 *  In the child, just after fork: the bytes the parent had pending are the
 *  parent's to write; the child writes the streams of a new process, *proc.
 *  @return CREC_OK or an error. */
int crec_fmt_writer_forked(crec_fmt_writer *w, uint32_t *proc, crec_error *err);

/*! crec_fmt_writer_leave() :
 *  A process that is not the first is done: write everything it has
 *  pending, and free the writer without a directory (the first process
 *  writes it, for every process, when all have left).
 *  @return CREC_OK or an error. */
int crec_fmt_writer_leave(crec_fmt_writer *w, crec_error *err);

/*! crec_fmt_writer_close() :
 *  Flush every stream, write the directory and the trailer, close the file
 *  and free the writer (also on error).  A shared writer first waits until
 *  every process forked from it has left (crec_fmt_writer_leave, or died);
 *  if one died in the middle of writing a chunk, no directory is written
 *  (a reader scans the file, docs/FORMAT.md §7.2).
 *  @return CREC_OK, or an error such as CREC_ERR_IO naming the file. */
int crec_fmt_writer_close(crec_fmt_writer *w, crec_error *err);

/*! crec_fmt_writer_free() :
 *  Abandon a writer: close the file without a directory (the file then
 *  reads as truncated after its last chunk) and free it.
 *  @return nothing; accepts NULL. */
void crec_fmt_writer_free(crec_fmt_writer *w);

/* ---- reader --------------------------------------------------------------- */

typedef struct crec_fmt_reader crec_fmt_reader;

/*! crec_fmt_reader_open() :
 *  Open a recording ("-" = stdin).  A seekable file is located through its
 *  trailer and directory; a file without a valid trailer (recorder killed)
 *  or a pipe is scanned chunk by chunk, stopping at the last complete,
 *  checksum-valid chunk (see crec_fmt_reader_truncated()).
 *  @return CREC_OK and *out, or an error naming the problem. */
int crec_fmt_reader_open(const char *path, crec_fmt_reader **out, crec_error *err);

/*! crec_fmt_reader_open_mem() :
 *  The same over `len` bytes in memory, which must outlive the reader.
 *  @return CREC_OK and *out, or an error. */
int crec_fmt_reader_open_mem(const void *data, size_t len, crec_fmt_reader **out,
                             crec_error *err);

/*! crec_fmt_reader_spool() :
 *  A path that can be opened again and again for the recording at `path`:
 *  `path` itself when it is a regular file; otherwise ("-", a FIFO, a
 *  device) the recording is read once, as a pipe, up to its last complete
 *  chunk, into an anonymous in-memory file, and *out names it
 *  ("/proc/self/fd/N").  Replay with jobs and the index open a recording
 *  more than once: a pipe would give them nothing, and a FIFO would hang.
 *  @return CREC_OK, *out and *fd (-1, or the fd to close when done), or an
 *  error reading the recording. */
int crec_fmt_reader_spool(const char *path, char *out, size_t size, int *fd, crec_error *err);

/*! crec_fmt_reader_free() :  @return nothing; accepts NULL. */
void crec_fmt_reader_free(crec_fmt_reader *r);

/*! crec_fmt_reader_header() :  @return the header (owned by the reader). */
const crec_fmt_header *crec_fmt_reader_header(const crec_fmt_reader *r);

/*! crec_fmt_reader_truncated() :
 *  @return 1 when the file had no valid directory and was recovered by
 *          scanning, or the selected process has no end (its recorder was
 *          killed: crec_fmt_reader_select); *at is then the byte offset
 *          where valid data ends (the file's size for a process cut short)
 *          and `why` (may be NULL) receives the reason.  0 otherwise. */
int crec_fmt_reader_truncated(const crec_fmt_reader *r, uint64_t *at, const char **why);

/*! crec_fmt_kf_reached() :
 *  @return 1 when every byte of the thread's READS, EVENTS and SEQ streams
 *          before key frame kf reached the file, so that a replay can get
 *          there (a file cut short may have lost the chunks written last;
 *          the blobs those bytes name reached it before them). */
int crec_fmt_kf_reached(const crec_fmt_reader *r, const crec_fmt_keyframe *kf);

/* What the reader knows about one stream. */
typedef struct crec_fmt_stream_info {
    int type;
    uint32_t tid;
    uint64_t nchunks;
    uint64_t raw_bytes;        /* uncompressed size */
    uint64_t compressed_bytes; /* chunk payloads plus chunk headers */
} crec_fmt_stream_info;

/*! crec_fmt_reader_procs() :
 *  The processes of the recording (version 3: each has streams of its own;
 *  an older file has one, 0), sorted, into *procs (the reader's).
 *  @return how many there are (at least 1). */
size_t crec_fmt_reader_procs(const crec_fmt_reader *r, const uint32_t **procs);

/*! crec_fmt_reader_totals() : chunks, and raw and compressed bytes, of
 *  every stream of every process. */
void crec_fmt_reader_totals(const crec_fmt_reader *r, uint64_t *chunks, uint64_t *raw,
                            uint64_t *comp);

/*! crec_fmt_reader_select() :
 *  Read the per-process streams (crec_fmt_stream_per_process) of process
 *  `proc` from now on; a reader starts with process 0, the first.  A
 *  process whose PROCESS stream has no end (its recorder was killed) reads
 *  as a truncated file (crec_fmt_reader_truncated).
 *  @return CREC_OK, or CREC_ERR_NOTFOUND (no such process). */
int crec_fmt_reader_select(crec_fmt_reader *r, uint32_t proc, crec_error *err);

/*! crec_fmt_reader_selected() : @return the process selected. */
uint32_t crec_fmt_reader_selected(const crec_fmt_reader *r);

/*! crec_fmt_reader_nstreams() / crec_fmt_reader_stream() :
 *  The selected process's streams and the shared ones, sorted by (type,
 *  tid); index in [0, nstreams).
 *  @return the count / CREC_OK and *info (CREC_ERR_ARG for a bad index). */
size_t crec_fmt_reader_nstreams(const crec_fmt_reader *r);
int crec_fmt_reader_stream(const crec_fmt_reader *r, size_t i, crec_fmt_stream_info *info,
                           crec_error *err);

/*! crec_fmt_reader_size() :  @return the bytes of file that were read. */
uint64_t crec_fmt_reader_size(const crec_fmt_reader *r);

/*! crec_fmt_read_at() :
 *  Read `n` bytes of stream (type, tid) from uncompressed offset `off`,
 *  decompressing only the chunks that hold them.
 *  @return CREC_OK, CREC_ERR_NOTFOUND for a missing stream or a range past
 *          its end, or a corruption/I/O error. */
int crec_fmt_read_at(crec_fmt_reader *r, int type, uint32_t tid, uint64_t off, void *buf,
                     size_t n, crec_error *err);

/*! crec_fmt_reader_verify() :
 *  Check every chunk's checksum (reading the whole file, not decompressing).
 *  @return CREC_OK or the first corruption found. */
int crec_fmt_reader_verify(crec_fmt_reader *r, crec_error *err);

/* A sequential cursor over one stream (declared with the records). */

/*! crec_fmt_cursor_open() :
 *  A cursor at uncompressed offset `off` of stream (type, tid).  A missing
 *  stream reads as empty.
 *  @return CREC_OK and *out, or an error. */
int crec_fmt_cursor_open(crec_fmt_reader *r, int type, uint32_t tid, uint64_t off,
                         crec_fmt_cursor **out, crec_error *err);
void crec_fmt_cursor_free(crec_fmt_cursor *c);

/*! crec_fmt_cursor_offset() :  @return the current uncompressed offset. */
uint64_t crec_fmt_cursor_offset(const crec_fmt_cursor *c);

/*! crec_fmt_cursor_read() :
 *  Read exactly `n` bytes.
 *  @return CREC_OK, CREC_ERR_NOTFOUND at the clean end of the stream (no
 *          byte read), CREC_ERR_CORRUPT when the stream ends inside them, or
 *          CREC_ERR_TRUNCATED for that in a truncated file (the recorder
 *          stopped mid-record: treat it as the end). */
int crec_fmt_cursor_read(crec_fmt_cursor *c, void *buf, size_t n, crec_error *err);

/*! crec_fmt_cursor_varint() :
 *  @return as crec_fmt_cursor_read(), for one LEB128 varint. */
int crec_fmt_cursor_varint(crec_fmt_cursor *c, uint64_t *v, crec_error *err);

/*! crec_fmt_cursor_seq() :
 *  Read one SEQ entry (crec_fmt_seq_decode for the file's version); ctx as
 *  for it, fresh where the cursor was opened.
 *  @return as crec_fmt_cursor_read(). */
int crec_fmt_cursor_seq(crec_fmt_cursor *c, crec_fmt_seq_ctx *ctx, crec_fmt_seq *e,
                        crec_error *err);

/*! crec_fmt_cursor_next() :
 *  Read one framed record: *kind and its body (valid until the next call).
 *  @return CREC_OK, CREC_ERR_NOTFOUND at the clean end of the stream,
 *          CREC_ERR_TRUNCATED (see crec_fmt_cursor_read), or CREC_ERR_CORRUPT. */
int crec_fmt_cursor_next(crec_fmt_cursor *c, int *kind, const uint8_t **body, size_t *len,
                         crec_error *err);

/*! crec_fmt_blob_get() :
 *  Find a blob by hash (the first call indexes the BLOBS stream, unless a
 *  table was given) and copy it into a new crec_malloc'd buffer; its
 *  content is checked against hash.
 *  @return CREC_OK, *data and *len; CREC_ERR_NOTFOUND; or an error. */
int crec_fmt_blob_get(crec_fmt_reader *r, const crec_fmt_hash *hash, uint8_t **data,
                      size_t *len, crec_error *err);

/*! crec_fmt_blob_view() :
 *  The same without a copy: *data points into the reader's cache of
 *  recently read blobs (bounded), valid until the next blob call on r.
 *  @return as crec_fmt_blob_get(). */
int crec_fmt_blob_view(crec_fmt_reader *r, const crec_fmt_hash *hash, const uint8_t **data,
                       size_t *len, crec_error *err);

/*! crec_fmt_blob_size() : the length of a blob, without reading it.
 *  @return CREC_OK and *len, CREC_ERR_NOTFOUND, or an error. */
int crec_fmt_blob_size(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t *len,
                       crec_error *err);

/*! crec_fmt_blob_read() :
 *  Copy bytes [off, off+n) of a blob, decompressing only the chunks that
 *  hold them (a replay maps code a page at a time).  The bytes can't be
 *  checked against the hash of the whole blob, so a blob table given by
 *  crec_fmt_blob_table_set() is first checked against the BLOB record
 *  header before the blob's bytes (kind, length and hash).
 *  @return CREC_OK; CREC_ERR_NOTFOUND; CREC_ERR_ARG for a range past the
 *  blob's end; CREC_ERR_CORRUPT; or an error reading. */
int crec_fmt_blob_read(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t off, void *buf,
                       size_t n, crec_error *err);

/* Where a blob's bytes lie in the BLOBS stream (uncompressed offsets).  A
 * PAGED record's entry has CREC_FMT_BLOB_PAGED set in len, and off and len
 * say where its body lies after the hash. */
typedef struct crec_fmt_blob_loc {
    crec_fmt_hash hash;
    uint64_t off, len;
} crec_fmt_blob_loc;

#define CREC_FMT_BLOB_PAGED (1ull << 63)

/*! crec_fmt_blob_recorded() :
 *  Does the recording hold bytes [off, off+n) of blob `hash`?  *all is 1
 *  for a whole blob, and for paged code only if every page those bytes lie
 *  on was stored (the program ran it); the others read as zeros.
 *  @return CREC_OK; CREC_ERR_NOTFOUND; CREC_ERR_ARG past the blob's end; or
 *  an error reading. */
int crec_fmt_blob_recorded(crec_fmt_reader *r, const crec_fmt_hash *hash, uint64_t off,
                           uint64_t n, int *all, crec_error *err);

/*! crec_fmt_blob_table() :
 *  Every blob of the recording and where it lies, sorted by hash (the
 *  first call scans BLOBS); *locs belongs to the reader.  Saving it (as the
 *  query index does) lets a later reader skip that scan.
 *  @return CREC_OK, or an error reading BLOBS. */
int crec_fmt_blob_table(crec_fmt_reader *r, const crec_fmt_blob_loc **locs, size_t *n,
                        crec_error *err);

/*! crec_fmt_blob_table_set() :
 *  Give the reader a table that crec_fmt_blob_table() returned for this
 *  recording, instead of scanning BLOBS.  Entries must be sorted by hash
 *  and lie inside BLOBS; each blob is still checked against its hash when
 *  read, so a wrong table gives CREC_ERR_CORRUPT, never wrong bytes.
 *  @return CREC_OK, or CREC_ERR_CORRUPT (the reader's table is unchanged). */
int crec_fmt_blob_table_set(crec_fmt_reader *r, const crec_fmt_blob_loc *locs, size_t n,
                            crec_error *err);

/* ---- the schedule (schedule.c) ------------------------------------------- */

/* One slice of the recorded schedule: thread `tid` ran `len` of its
 * instructions from its own count `thread_start`, from global time `start`. */
typedef struct crec_fmt_slice {
    uint32_t tid;
    uint64_t start, len, thread_start;
    uint64_t seq_in, seq_out; /* the sequence numbers of its IN and OUT entries */
    int exact_out;            /* it ended inside a block (OUT_EXACT) */
    int open;                 /* no OUT entry: it ran to the end of the recording */
} crec_fmt_slice;

/*! crec_fmt_schedule() :
 *  The schedule, from the switch entries of every SEQ stream, in time
 *  order (*out crec_malloc'd).  A recording with none (one thread) is one
 *  slice of `end` instructions; a slice still open at the end of the file
 *  runs to `end`.
 *  @return CREC_OK, or CREC_ERR_CORRUPT when the entries don't make one
 *  schedule (a thread runs twice at once, a count goes back). */
int crec_fmt_schedule(crec_fmt_reader *r, uint64_t end, crec_fmt_slice **out, size_t *n,
                      crec_error *err);

/*! crec_fmt_slice_at() : @return the last slice starting at or before t. */
size_t crec_fmt_slice_at(const crec_fmt_slice *v, size_t n, uint64_t t);

/* ---- processes (procs.c) --------------------------------------------------- */

/* One process of a recording, from its PROCESS stream (version 3). */
typedef struct crec_fmt_proc_sum {
    uint32_t proc;          /* crec's number (0: the first) */
    int started;            /* a START record was read: */
    uint32_t how;           /*   enum crec_fmt_proc_how */
    uint32_t parent, parent_tid; /* the process it came from, and its thread */
    uint64_t parent_icount; /*   ... that thread's own count at the fork or execve */
    uint32_t pid, ppid;     /*   the guest's */
    char *path;             /*   the program (crec_malloc'd) */
    char **argv;            /*   NULL-terminated, one crec_malloc'd block */
    int ended;              /* an END record was read (else its recorder was killed): */
    uint32_t end_how;       /*   enum crec_fmt_exit_how */
    uint64_t value;         /*   status, signal, or the process execve made */
    uint64_t instructions;
} crec_fmt_proc_sum;

/*! crec_fmt_processes() :
 *  Every process of the recording (crec_fmt_reader_procs), in number
 *  order, with what its PROCESS stream says (nothing for an older file's
 *  one process).  The selection is kept.
 *  @return CREC_OK, *out (crec_fmt_processes_free) and *n, or an error. */
int crec_fmt_processes(crec_fmt_reader *r, crec_fmt_proc_sum **out, size_t *n, crec_error *err);
void crec_fmt_processes_free(crec_fmt_proc_sum *v, size_t n);

/*! crec_fmt_pick_processes() :
 *  The processes of guest pid `pid` (0: every process), in order: all of
 *  them, or (image > 0) only its image-th program (execve starts a new
 *  process), as indexes into v, into which[] (room for n).
 *  @return CREC_OK and *np, or CREC_ERR_NOTFOUND naming what is not there. */
int crec_fmt_pick_processes(const crec_fmt_proc_sum *v, size_t n, uint32_t pid, uint32_t image,
                            size_t *which, size_t *np, crec_error *err);

/* ---- summary (what `crec info` prints) ----------------------------------- */

/* One thread of a recording, as the summary sees it. */
typedef struct crec_fmt_thread_sum {
    uint32_t tid, parent, guest_tid; /* crec's number, its creator's, the guest's tid */
    uint64_t start, end;   /* global time of its first and past its last instruction */
    uint64_t instructions; /* its own */
    uint64_t keyframes;
    int exited;            /* a THREAD exit record: */
    uint32_t how;          /*   enum crec_fmt_thread_how */
    uint64_t status;
    int ended_program;     /* the EXIT event is in its EVENTS */
} crec_fmt_thread_sum;

typedef struct crec_fmt_summary {
    uint64_t file_bytes;
    uint64_t nchunks;
    uint64_t nstreams;
    uint64_t nthreads;
    uint64_t nkeyframes;
    uint64_t ncheckpoints;   /* version 4 */
    uint64_t nsnapshots;
    uint64_t nblobs, ncode, nsymbols, nevents;
    uint64_t instructions; /* last key frame or exit event, whichever is later;
                              in a file cut short, the last key frame a
                              replay can reach (crec_fmt_kf_reached) */
    int exited;            /* an EXIT event was seen: */
    uint32_t exit_how;     /*   CREC_FMT_EXIT_* */
    uint64_t exit_value;
    uint64_t raw_bytes, compressed_bytes; /* all streams */
    int truncated;
    uint64_t truncated_at;
    const char *truncated_why; /* owned by the reader */
    size_t nthread_sums;       /* every thread, by number (crec_fmt_summary_clear) */
    crec_fmt_thread_sum *thread_sums;
    uint32_t version;          /* the file's format version */
    uint64_t first;            /* the time of the first key frame */
    crec_fmt_marks marks;      /* version 3: ring, gaps, stop (crec_fmt_summary_clear) */
    uint32_t cur_tid;          /* private: the EVENTS stream being read */
    /* while summarizing: */
    crec_fmt_reader *reader;
    int reached_all;       /* every key frame so far is reached */
    uint64_t reached;      /* the last of them */
} crec_fmt_summary;

/*! crec_fmt_summarize() :
 *  Verify every chunk and decode the KEYFRAMES, SNAPSHOTS, EVENTS, CODE,
 *  SYMBOLS and BLOBS streams to count their records: the whole of `crec info`
 *  except printing.
 *  @return CREC_OK and *s, or the first problem found. */
int crec_fmt_summarize(crec_fmt_reader *r, crec_fmt_summary *s, crec_error *err);

/*! crec_fmt_summary_clear() : free what a summary holds.  NULL is fine. */
void crec_fmt_summary_clear(crec_fmt_summary *s);

#endif /* CREC_FORMAT_H */
