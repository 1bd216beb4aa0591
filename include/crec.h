/*
 * crec.h - the public API of libcrec, the crec record/replay engine.
 *
 * This is the only header that code outside libcrec (the crec command, the
 * gdb server, other clients) includes.  Handles are opaque; every function
 * that can fail returns a crec_err code and, where a crec_error is passed,
 * fills it with a one-line message the caller can print as it is.
 */
#ifndef CREC_H
#define CREC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CREC_VERSION_STRING "0.1.0"

/*
 * Error codes.  Values are stable: they may be stored or compared by
 * clients, so a new code is only ever appended.
 */
typedef enum crec_err {
    CREC_OK = 0,
    CREC_ERR_NOMEM = 1,       /* an allocation failed */
    CREC_ERR_IO = 2,          /* a read, write, open or seek failed */
    CREC_ERR_CORRUPT = 3,     /* a .crec file is malformed */
    CREC_ERR_VERSION = 4,     /* a .crec file of a format version we can't read */
    CREC_ERR_TRUNCATED = 5,   /* a .crec file ends early */
    CREC_ERR_ARG = 6,         /* a bad argument from the caller */
    CREC_ERR_UNSUPPORTED = 7, /* a syscall, instruction or feature we lack */
    CREC_ERR_GUEST = 8,       /* the guest program can't be loaded or run */
    CREC_ERR_EMU = 9,         /* Unicorn reported an error */
    CREC_ERR_DIVERGENCE = 10, /* replay did not match the recording */
    CREC_ERR_NOTFOUND = 11,   /* a stream, symbol or record is not there */
    CREC_ERR_LIMIT = 12,      /* a size or count is over a sane limit */
} crec_err;

/* The guest's page size: every mapping is a whole number of pages, and a
 * recording that claims another page size is refused. */
#define CREC_PAGE_SIZE 4096ull

/* Largest message a crec_error holds, including the terminating NUL. */
#define CREC_ERROR_MSG_MAX 512

/*
 * An error code with the message that explains it.  Functions that fail
 * fill it in; a zeroed crec_error means "no error".
 */
typedef struct crec_error {
    crec_err code;
    char msg[CREC_ERROR_MSG_MAX];
} crec_error;

/*
 * The register state of one guest thread: what a key frame holds and what a
 * register query reads.  In memory only; the file encoding is field by
 * field (docs/FORMAT.md), never this struct.
 */
enum crec_gpr {
    CREC_RAX, CREC_RCX, CREC_RDX, CREC_RBX, CREC_RSP, CREC_RBP, CREC_RSI, CREC_RDI,
    CREC_R8, CREC_R9, CREC_R10, CREC_R11, CREC_R12, CREC_R13, CREC_R14, CREC_R15,
    CREC_NGPR
};

typedef struct crec_regs {
    uint64_t gpr[CREC_NGPR]; /* indexed by enum crec_gpr (x86 encoding order) */
    uint64_t rip;
    uint64_t rflags;
    uint64_t fs_base;
    uint64_t gs_base;
    uint8_t xmm[16][16]; /* xmm0..xmm15, little-endian bytes as in the guest */
    uint32_t mxcsr;
    uint16_t fpcw;       /* x87 control word */
    uint16_t fpsw;       /* x87 status word */
    uint16_t fptag;      /* x87 tag word, as Unicorn reports it */
    uint8_t st[8][10];   /* st0..st7, 80-bit little-endian bytes */
} crec_regs;

/*! crec_strerror() :
 *  @return a static, constant description of an error code
 *          ("unknown error" for a value that is not a crec_err). */
const char *crec_strerror(int code);

/* Progress of long work: `done` of `total` units (instructions replayed). */
typedef void (*crec_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* ------------------------------------------------------------------------ */
/* Running and recording a program (x86-64 hosts only)                      */
/* ------------------------------------------------------------------------ */

/* How a program run under crec ended. */
typedef struct crec_exit {
    int status;      /* its exit status, when signo is 0 */
    int signo;       /* the signal that killed it; or, when `stopped`, the
                        signal that stopped the recording */
    int stopped;     /* the caller stopped the run (crec_record_options.stop)
                        while the program was alive */
    char msg[256];   /* signo != 0: one line, e.g. "guest killed by SIGSEGV at ..." */
} crec_exit;

/*! crec_find_program() :
 *  Resolve `prog` as execvp does (a name with a '/' as it is, else each
 *  entry of PATH) into path, and check that it is an executable x86-64 ELF
 *  file.  @return CREC_OK; CREC_ERR_NOTFOUND when there is no such file (a
 *  shell's 127); CREC_ERR_GUEST when it is not an executable x86-64 ELF
 *  file (126); err says which. */
int crec_find_program(const char *prog, char *path, size_t size, crec_error *err);

typedef struct crec_run_options {
    int strace;       /* print every syscall to `log` */
    int strict;       /* an unsupported syscall stops the run (CREC_ERR_UNSUPPORTED) */
    FILE *log;        /* crec's messages; NULL: stderr */
} crec_run_options;

/*! crec_run() :
 *  Run the program at `path` (crec_find_program) with argv and envp
 *  (NULL-terminated) under crec's CPU, without recording, to its end.
 *  *instructions (may be NULL) is how many it executed.
 *  @return CREC_OK with *ex filled; CREC_ERR_GUEST when it can't be loaded;
 *  CREC_ERR_UNSUPPORTED (strict) or another error when crec could not go on. */
int crec_run(const crec_run_options *o, const char *path, char *const argv[],
             char *const envp[], crec_exit *ex, uint64_t *instructions, crec_error *err);

#define CREC_RECORD_DEFAULT_KF_INTERVAL 1000000ull /* instructions */
#define CREC_RECORD_DEFAULT_SNAP_INTERVAL 16       /* key frames */
#define CREC_RECORD_DEFAULT_CACHE_LOG2 16          /* 65536 entries */

typedef struct crec_record_options {
    const char *out_path;        /* where to write, for messages (and to
                                    create, when out_fd is -1) */
    int out_fd;                  /* >= 0: write the recording to this fd,
                                    which crec_record closes */
    uint64_t keyframe_interval;  /* 0: the default */
    uint64_t snapshot_interval;  /* key frames between snapshots; 0: default */
    unsigned cache_log2;         /* 0: the default; else 4..24 */
    int strace, strict;          /* as for crec_run */
    FILE *log;                   /* NULL: stderr */
    /* NULL, or a flag the caller sets (from a signal handler, say) to a
     * signal number to stop recording: the recorder looks at it at every
     * block start, and when it is non-zero ends the recording there, the
     * program still alive, as stopped by that signal.  The library never
     * installs a signal handler. */
    volatile sig_atomic_t *stop;
} crec_record_options;

/* What a finished recording measured. */
typedef struct crec_record_stats {
    uint64_t instructions;
    uint64_t reads_logged;  /* loads the cache did not predict */
    uint64_t reads_hit;     /* loads it did */
    uint64_t keyframes, snapshots, syscalls;
} crec_record_stats;

/*! crec_record() :
 *  Record the program at `path` with argv/envp into o->out_path (or
 *  o->out_fd).  The file is complete whether the program exits, crashes,
 *  or the caller stops it (o->stop).
 *  @return CREC_OK with *ex and *st filled, or an error (the file written
 *          so far stays readable up to its last chunk); CREC_ERR_GUEST
 *          when the program can't be loaded. */
int crec_record(const crec_record_options *o, const char *path, char *const argv[],
                char *const envp[], crec_exit *ex, crec_record_stats *st, crec_error *err);

/* ------------------------------------------------------------------------ */
/* Replay: re-execute a recording with no OS and verify it                  */
/* ------------------------------------------------------------------------ */

typedef struct crec_replay_options {
    uint64_t from;   /* start at the last key frame at or before this time */
    unsigned jobs;   /* verify segments on this many threads (0, 1: one) */
    /* called about ten times a second on the calling thread while the
     * replay runs (may be NULL) */
    crec_progress_fn progress;
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
 *  Replay the recording at `path`, checking every key frame, every
 *  write-like syscall and the end.  A divergence is not an error: it is
 *  reported in res->diverged / res->div with CREC_OK.
 *  @return CREC_OK, or an error reading the file (CREC_ERR_CORRUPT, ...),
 *  whose message names what failed. */
int crec_replay_run(const char *path, const crec_replay_options *o, crec_replay_result *res,
                    crec_error *err);

/* ------------------------------------------------------------------------ */
/* Describing a recording (`crec info`)                                     */
/* ------------------------------------------------------------------------ */

/* How a recording ended (crec_info.exit_how). */
enum crec_exit_how {
    CREC_EXIT_STATUS = 0,  /* the program exited (value: its status) */
    CREC_EXIT_SIGNAL = 1,  /* it was killed (value: the signal) */
    CREC_EXIT_STOPPED = 2, /* the recording was stopped (value: the signal) */
};

/* One CPUID answer the recording showed the program. */
typedef struct crec_cpuid_leaf {
    uint32_t leaf, subleaf;
    uint32_t eax, ebx, ecx, edx;
} crec_cpuid_leaf;

/* One stream of the file: its name ("READS", ...), thread and sizes. */
typedef struct crec_stream_info {
    const char *type;
    uint32_t tid;
    uint64_t chunks, raw_bytes, compressed_bytes;
} crec_stream_info;

/* What `crec info` prints.  Strings and arrays belong to the crec_info. */
typedef struct crec_info {
    /* the header */
    uint32_t format_version;
    const char *crec_version;   /* of the crec that wrote it */
    int big_endian_host;        /* recorded on a big-endian host */
    uint64_t page_size, cache_entries, cache_granule;
    uint64_t keyframe_interval, snapshot_interval;
    int64_t start_sec;          /* wall clock at the start */
    uint32_t start_nsec;
    size_t argc, envc, ncpuid;
    char *const *argv;
    char *const *envp;
    const crec_cpuid_leaf *cpuid;
    /* the contents */
    uint64_t file_bytes, chunks, threads, instructions, keyframes, snapshots;
    uint64_t events, code_mappings, symbols, blobs;
    uint64_t raw_bytes, compressed_bytes; /* all streams */
    int exited;                 /* an EXIT event was seen: */
    int exit_how;               /*   enum crec_exit_how */
    uint64_t exit_value;
    int truncated;              /* no directory: read up to truncated_at */
    uint64_t truncated_at;
    const char *truncated_why;
    size_t nstreams;
    const crec_stream_info *streams; /* sorted by (type, thread) */
} crec_info;

/*! crec_info_read() :
 *  Read and check the whole recording at `path` ("-": standard input, in
 *  one pass): every chunk's checksum and every framed record.
 *  @return CREC_OK and *out (free it with crec_info_free), or the first
 *  problem found. */
int crec_info_read(const char *path, crec_info **out, crec_error *err);

/*! crec_info_free() : NULL is fine. */
void crec_info_free(crec_info *info);

/* ------------------------------------------------------------------------ */
/* Queries: the state of a recorded program at any time (docs/QUERY.md)     */
/* ------------------------------------------------------------------------ */

/*
 * Time.  "At T" is the state after exactly T instructions have executed,
 * before instruction T+1 runs; T = 0 is the initial state and T =
 * crec_length() the state at the end.  A `rep` instruction counts once per
 * iteration.
 */

/* An open recording, with its index and a current time.  Opaque. */
typedef struct crec_recording crec_recording;

/* crec_open flags. */
#define CREC_OPEN_NO_INDEX 1 /* answer memory queries by a full replay from
                                instruction 0 (slow; a test oracle) */

/* Where a memory value came from. */
enum crec_source {
    CREC_SRC_UNKNOWN = 0,  /* the recording never saw it: print "??" */
    CREC_SRC_CODE = 1,     /* the bytes of a code mapping */
    CREC_SRC_REPLAY = 2,   /* the index, then a replay of one segment */
    CREC_SRC_SNAPSHOT = 3, /* a memory snapshot */
};

/*! crec_open() :
 *  Open the recording at `path` (flags: CREC_OPEN_*).  The index
 *  (PATH.idx) is loaded, or built and saved, on the first memory query.
 *  The current time is 0.  @return CREC_OK and *out, or an error. */
int crec_open(const char *path, unsigned flags, crec_recording **out, crec_error *err);

/*! crec_set_progress() : call fn (NULL: nothing) now and then while a
 *  query does long work, such as building the index (units: instructions
 *  replayed); it is last called with done == total. */
void crec_set_progress(crec_recording *rec, crec_progress_fn fn, void *ctx);

/*! crec_close() : NULL is fine. */
void crec_close(crec_recording *rec);

/*! crec_length() : @return the recording's instruction count (its end). */
uint64_t crec_length(const crec_recording *rec);

/*! crec_seek() : make `t` the current time.
 *  @return CREC_OK, or CREC_ERR_ARG when t is past the end. */
int crec_seek(crec_recording *rec, uint64_t t, crec_error *err);

/*! crec_tell() : @return the current time. */
uint64_t crec_tell(const crec_recording *rec);

/*! crec_step() : move the current time by n instructions (n < 0: back;
 *  stepping back re-replays from the previous key frame).
 *  @return CREC_OK, or CREC_ERR_ARG when that leaves [0, crec_length()]. */
int crec_step(crec_recording *rec, int64_t n, crec_error *err);

/*! crec_read_memory() :
 *  The `len` bytes at `addr` at the current time, in guest (little-endian)
 *  order, into buf.  known[i] (may be NULL) is 1 for each byte whose value
 *  is known, 0 for one the recording never saw (buf[i] is then 0).
 *  *source (may be NULL) is where the answer came from: for a mix, the
 *  path that answered the most bytes.
 *  @return CREC_OK, CREC_ERR_ARG when no byte was ever mapped, or an error. */
int crec_read_memory(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf,
                     uint8_t *known, int *source, crec_error *err);

/*! crec_read_registers() : the registers at the current time.
 *  @return CREC_OK or an error. */
int crec_read_registers(crec_recording *rec, crec_regs *regs, crec_error *err);

/*! crec_lookup_symbol() : the run-time address of an ELF symbol of a code
 *  mapping (SYMBOL records).  @return CREC_OK, or CREC_ERR_NOTFOUND. */
int crec_lookup_symbol(crec_recording *rec, const char *name, uint64_t *addr, crec_error *err);

/*! crec_syscall_time() : the time just before the n-th syscall (n from 1).
 *  @return CREC_OK, or CREC_ERR_ARG when there are fewer syscalls. */
int crec_syscall_time(crec_recording *rec, uint64_t n, uint64_t *t, crec_error *err);

/* One change of a watched range, as crec_watch reports it. */
typedef struct crec_change {
    uint64_t t;             /* the value is new at time t (the store was instruction t) */
    uint64_t rip;           /* the instruction that changed it (0: the kernel) */
    char insn[160];         /* its bytes and disassembly ("syscall" for the kernel) */
    const uint8_t *value;   /* the new bytes */
    const uint8_t *known;   /* known[i]: value[i] is known */
    size_t len;
} crec_change;

/*! crec_watch() :
 *  Call fn for every change of the `len` (1..64) bytes at addr over the
 *  whole recording, in time order (fn returning non-zero stops early).
 *  The first call gives the initial value (t 0, rip 0).
 *  @return CREC_OK or an error. */
int crec_watch(crec_recording *rec, uint64_t addr, size_t len,
               int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err);

/*! crec_index_info() : index statistics: its size in bytes, the size of the
 *  recording, and whether this handle built it.  Builds it if needed.
 *  @return CREC_OK or an error. */
int crec_index_info(crec_recording *rec, uint64_t *index_bytes, uint64_t *trace_bytes,
                    int *built, crec_error *err);

#endif /* CREC_H */
