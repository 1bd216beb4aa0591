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
    int deadlock;    /* every thread of it was blocked, with nothing that could
                        wake one: crec ended the run (signo 0) */
    int ended;       /* the recording ended before the program (--stop-at,
                        --max-size, a ring meeting a second thread); `why` */
    char why[256];   /* ... says why and where, in one line (empty when crec's
                        log said so as it happened) */
    char msg[512];   /* signo != 0 or deadlock: one line, e.g. "guest killed by
                        SIGSEGV at ...", "deadlock: every thread is blocked; ..." */
    int forked;      /* this is a crec process that the program's fork made (it
                        recorded or ran that child, and exits as it does) */
} crec_exit;

/*
 * How the program's threads take turns on crec's one CPU (docs/EMU.md):
 * round robin, each for a time slice counted in instructions, or (chaos)
 * in random slices that may end inside a block, the next thread drawn at
 * random and now and then one starved for a while.
 */
typedef struct crec_thread_options {
    uint64_t slice;      /* instructions of a time slice; 0: 100000 */
    unsigned cpus;       /* CPUs shown to the program (nproc, sched_getaffinity); 0: 1 */
    int chaos;           /* random schedule from chaos_seed (crec record --chaos) */
    uint64_t chaos_seed;
} crec_thread_options;

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
    crec_thread_options threads;
} crec_run_options;

/*! crec_run() :
 *  Run the program at `path` (crec_find_program) with argv and envp
 *  (NULL-terminated) under crec's CPU, without recording, to its end.
 *  *instructions (may be NULL) is how many it executed.
 *  @return CREC_OK with *ex filled; CREC_ERR_GUEST when it can't be loaded;
 *  CREC_ERR_UNSUPPORTED (strict) or another error when crec could not go on. */
int crec_run(const crec_run_options *o, const char *path, char *const argv[],
             char *const envp[], crec_exit *ex, uint64_t *instructions, crec_error *err);

#define CREC_RECORD_DEFAULT_CP_INTERVAL 1000000ull /* instructions between check points */
#define CREC_RECORD_DEFAULT_CACHE_LOG2 24          /* granules: 128 MiB of pages */

/*
 * Where a conditional recording starts or stops (crec record --start-at,
 * --stop-at; docs/USAGE.md): at a block start, when the program reaches an
 * address (the block holding it: the next block start after it), an
 * instruction count, or the end of a syscall.
 */
enum crec_trigger_kind {
    CREC_TRIGGER_ADDRESS = 1, /* `value`: an address of the program */
    CREC_TRIGGER_SYMBOL = 2,  /* `symbol` (+ `value`): a function or object of the
                                 program or of a library it maps */
    CREC_TRIGGER_ICOUNT = 3,  /* `value`: an instruction count */
    CREC_TRIGGER_SYSCALL = 4, /* `value`: a syscall number */
};
typedef struct crec_trigger {
    int kind;                 /* enum crec_trigger_kind */
    uint64_t value;
    const char *symbol;
} crec_trigger;

/* What the recorder does when a file reaches crec_record_options.max_size. */
enum crec_on_full {
    CREC_ON_FULL_STOP = 0,     /* stop the program there (crec exits 128+SIGXFSZ) */
    CREC_ON_FULL_CONTINUE = 1, /* the program runs on, unrecorded, to its end */
};

typedef struct crec_record_options {
    const char *out_path;        /* where to write, for messages (and to
                                    create, when out_fd is -1) */
    int out_fd;                  /* >= 0: write the recording to this fd,
                                    which crec_record closes */
    uint64_t keyframe_interval;  /* 0: where they cost little (the default) */
    uint64_t snapshot_interval;  /* key frames between snapshots; 0: where
                                    they cost little (the default) */
    uint64_t checkpoint_interval; /* 0: the default */
    unsigned cache_log2;         /* 0: the default; else 4..24 */
    int strace, strict;          /* as for crec_run */
    FILE *log;                   /* NULL: stderr */
    /* NULL, or a flag the caller sets (from a signal handler, say) to a
     * signal number to stop recording: the recorder looks at it at every
     * block start, and when it is non-zero ends the recording there, the
     * program still alive, as stopped by that signal.  The library never
     * installs a signal handler. */
    volatile sig_atomic_t *stop;
    crec_thread_options threads; /* stored in the recording's header */
    /* The flight recorder (docs/USAGE.md): every one 0 / NULL for a plain
     * recording of the whole run. */
    uint64_t ring;               /* > 0: keep only the end of the run, the file
                                    within about this many bytes (a file, not a pipe) */
    uint64_t max_size;           /* > 0: end the recording before the file grows past
                                    this many bytes, as on_full says */
    int on_full;                 /* enum crec_on_full */
    /* NULL, or a counter the caller raises (from a signal handler, say):
     * each raise writes the recording so far to a new file, dump_to with
     * its number for %d, while the program runs on */
    volatile sig_atomic_t *dump;
    const char *dump_to;         /* NULL: the output's name with .dumpN */
    const crec_trigger *start_at; /* recording starts at any of these (NULL: at once) */
    size_t n_start_at;
    const crec_trigger *stop_at;  /* ... and stops at any of these */
    size_t n_stop_at;
    /* SIGINT and SIGTERM sent to crec from outside the recorded processes
     * go to the program, as every other signal does, instead of stopping
     * the recording (crec record --forward-signals; docs/USAGE.md) */
    int forward_signals;
} crec_record_options;

/* What a finished recording measured. */
typedef struct crec_record_stats {
    uint64_t instructions;
    uint64_t reads_logged;  /* loads the cache did not predict */
    uint64_t reads_hit;     /* loads it did */
    uint64_t keyframes, snapshots, syscalls;
    /* the flight recorder */
    uint64_t recorded_from;   /* the first instruction the file holds */
    uint64_t recorded_to;     /* ... and its end (the program may have run on) */
    uint64_t parts;           /* parts recorded (--start-at, --stop-at) */
    uint64_t rotations;       /* times a ring rewrote its file */
    uint64_t dropped_bytes;   /* bytes of the segments a ring dropped */
    uint64_t copied_bytes;    /* bytes rotations wrote */
    double rotate_seconds;    /* time they took */
    uint64_t dumps;           /* dumps written */
    uint64_t checkpoints;
    int indexed;            /* FILE.idx was written while recording */
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
    unsigned jobs;   /* verify segments on this many threads (0, 1: one); a recording
                        of several threads is then verified a thread at a time, each
                        alone, its pieces spread over the jobs */
    uint32_t thread; /* 0: every thread; else verify only this thread, alone */
    /* called about ten times a second on the calling thread while the
     * replay runs (may be NULL) */
    crec_progress_fn progress;
    void *progress_ctx;
    /* A recording read from a pipe or a FIFO (crec record -o - | crec replay
     * -) is verified as it arrives, key frame to key frame: called each time
     * more of it is verified, with the instruction count it is verified to
     * and the instructions replayed so far (may be NULL). */
    void (*live)(void *ctx, uint64_t verified, uint64_t replayed);
    void *live_ctx;
    /* a recording of several processes: 0 every one; else only those of
     * guest pid `pid` (all its programs, or with image K its K-th: execve
     * starts a new process; `crec info` lists them) */
    uint32_t pid, image;
} crec_replay_options;

/* Where and how a replay left the recorded path. */
typedef struct crec_divergence {
    uint64_t icount;  /* instruction count when it was noticed (a thread verified
                         alone: that thread's own count) */
    uint32_t tid;     /* the thread it was noticed in (0: the recording has one) */
    uint64_t thread_icount; /* ... and that thread's own count then */
    int alone;        /* the thread was verified alone: icount is its own count */
    uint64_t rip;
    char insn[160];   /* the instruction at rip: bytes and disassembly */
    char what[400];   /* what differed */
    uint32_t pid;     /* a recording of several processes: the guest pid of the
                         process it was noticed in (0: the recording has one) */
    uint32_t image;   /* ... which of that pid's programs, from 1 */
} crec_divergence;

#define CREC_REPLAY_PARTS_SHOWN 8 /* crec_replay_result.part_start */

typedef struct crec_replay_result {
    uint64_t start_icount;    /* the key frame replay started from */
    uint64_t instructions;    /* the recording's last instruction count */
    uint64_t replayed;        /* instructions executed by this replay */
    uint64_t keyframes_checked;
    uint64_t checkpoints_checked; /* format 4 */
    uint64_t syscalls, writes_checked;
    int exited_by_signal;
    uint64_t exit_value;      /* status, or the signal */
    int truncated;            /* the file was cut short: the replay verified it
                               * up to its last key frame (`instructions`) */
    uint64_t threads;         /* the recording's threads, when more than one */
    int alone;                /* ... each was verified alone from its own streams
                                 (else the whole program, in the recorded order) */
    int diverged;
    crec_divergence div;
    uint64_t processes;       /* the processes verified, when the recording has more
                                 than one (their instructions are summed above) */
    uint64_t processes_cut;   /* ... of which cut short (a recorder was killed) */
    uint64_t parts;           /* the pieces verified on their own (one thread, --jobs) */
    uint64_t parts_at_points; /* ... of which started at a restart point of FILE.idx */
    int points_failed;        /* parts cut at FILE.idx's restart points did not hold:
                                 the replay was done again cut at key frames only */
    int parts_by_cost;        /* the parts were cut to equal costs, as FILE.idx
                                 measured them (else equal instruction counts) */
    uint64_t part_start[CREC_REPLAY_PARTS_SHOWN]; /* one thread: where the first
                                 parts start (instruction counts, in order) */
} crec_replay_result;

/*! crec_replay_run() :
 *  Replay the recording at `path`, checking every key frame, every
 *  write-like syscall and the end.  With jobs > 1, a recording of one
 *  thread and one process is cut at the restart points of its index
 *  (FILE.idx) too, when it has one that names it.  A divergence is not an error: it is
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
    CREC_EXIT_EXEC = 3,    /* a process called execve (value: the process it goes
                              on as): crec_process_info */
    CREC_EXIT_ENDED = 4,   /* the recording ended before the program (stop_why says
                              why: --stop-at, --max-size, a dump) */
};

/* Instructions that ran but were not recorded (crec record --start-at and
 * --stop-at): a recording holds parts of the run with gaps between them. */
enum crec_gap_why {
    CREC_GAP_BEFORE_START = 1, /* before the first --start-at trigger */
    CREC_GAP_STOPPED = 2,      /* from a --stop-at to the next --start-at */
};
typedef struct crec_gap {
    uint64_t from, to;         /* instructions [from, to) */
    int why;                   /* enum crec_gap_why */
} crec_gap;

/* Why a recording ended before its program did (crec_info.stop_why). */
enum crec_stop_why {
    CREC_STOP_STOP_AT = 1,     /* a --stop-at trigger */
    CREC_STOP_MAX_SIZE = 2,    /* the file reached --max-size */
    CREC_STOP_DUMP = 3,        /* a dump (SIGUSR1, crec dump), the program ran on */
    CREC_STOP_THREADS = 4,     /* a ring or --start-at recording met a second thread */
    CREC_STOP_NEVER = 5,       /* no --start-at trigger came: nothing was recorded */
    CREC_STOP_PROCESS = 6,     /* a --ring, --max-size, --start-at or --stop-at recording
                                  (one process) met a fork or an execve */
};

/* How a process of a recording began (crec_process_info.how). */
enum crec_process_start {
    CREC_PROCESS_ROOT = 0, /* the program crec started */
    CREC_PROCESS_FORK = 1, /* a fork (vfork, clone) of its parent */
    CREC_PROCESS_EXEC = 2, /* execve: the same pid, a new program */
};

/*
 * One process of a recording.  A recording holds every process the program
 * forked (format 3), each with its own threads, memory and time (its own
 * instruction count from 0): one process per program image, so a pid that
 * called execve has one process for each program it ran ("images").
 */
typedef struct crec_process_info {
    uint32_t proc;           /* crec's number of it (0: the one crec started) */
    uint32_t pid, ppid;      /* the guest's pid and parent pid (0: not recorded) */
    uint32_t image;          /* which program of that pid it is, from 1 */
    int how;                 /* enum crec_process_start */
    uint32_t parent;         /* the process it came from (fork or execve); the
                                first process: its own number */
    uint32_t parent_tid;     /* ... that process's thread that made the call, */
    uint64_t parent_icount;  /* ... at this count of its own */
    const char *path;        /* the program ("" if not recorded) */
    size_t argc;
    char *const *argv;       /* its command line */
    int ended;               /* its end was recorded; else its recorder was killed
                                and its part of the recording is cut short */
    int exit_how;            /* enum crec_exit_how (CREC_EXIT_EXEC: execve) */
    uint64_t exit_value;
    uint64_t instructions;   /* its own instruction count */
} crec_process_info;

/*! crec_list_processes() :
 *  The processes of the recording at `path`, by number (one for a recording
 *  of one process, or of format 1 or 2), without decoding more than their
 *  PROCESS streams.  @return CREC_OK, *out (crec_processes_free) and *n,
 *  or an error. */
int crec_list_processes(const char *path, crec_process_info **out, size_t *n, crec_error *err);

/*! crec_processes_free() : NULL is fine. */
void crec_processes_free(crec_process_info *p, size_t n);

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

/* One thread of a recording, as `crec info` lists it. */
typedef struct crec_thread_info {
    uint32_t tid;            /* crec's number: 1 for the first thread */
    uint32_t parent;         /* the number of the thread that created it (0: none) */
    uint32_t guest_tid;      /* the thread id the program saw (0: not recorded) */
    uint64_t start, end;     /* global time of its first instruction, and after its last */
    uint64_t instructions;   /* its own */
    uint64_t keyframes;
    int exited;              /* it ended by itself (exit) with `status`; else it ran
                                until the program ended */
    uint64_t status;
    int ended_program;       /* the program ended in this thread (exit_group, a fatal
                                signal, the end of the recording) */
    uint64_t stream_bytes;   /* compressed bytes of its READS, EVENTS and SEQ */
} crec_thread_info;

/* What `crec info` prints.  Strings and arrays belong to the crec_info. */
typedef struct crec_info {
    /* the header */
    uint32_t format_version;
    const char *crec_version;   /* of the crec that wrote it */
    int big_endian_host;        /* recorded on a big-endian host */
    uint64_t page_size, cache_entries, cache_granule;
    uint64_t keyframe_interval, snapshot_interval; /* 0 (format 4): placed by cost */
    uint64_t checkpoint_interval; /* format 4; 0: none */
    int64_t start_sec;          /* wall clock at the start */
    uint32_t start_nsec;
    size_t argc, envc, ncpuid;
    char *const *argv;
    char *const *envp;
    const crec_cpuid_leaf *cpuid;
    uint64_t time_slice, cpus;  /* how the threads took turns (format 2) */
    int chaos;                  /* --chaos, with chaos_seed */
    uint64_t chaos_seed;
    /* the contents */
    uint64_t file_bytes, chunks, threads, instructions, keyframes, snapshots;
    uint64_t checkpoints;       /* format 4 */
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
    size_t nthread_list;
    const crec_thread_info *thread_list; /* by number */
    /* the flight recorder (format 3) */
    uint64_t recorded_from;     /* the time of the first key frame: a ring dropped what
                                   came before, or it was not recorded */
    int ring;                   /* a ring recording (crec record --ring): */
    uint64_t ring_size, ring_dropped_segments, ring_dropped_bytes, ring_rotations;
    size_t ngaps;
    const crec_gap *gaps;       /* unrecorded instructions between parts, in order */
    int stop_why;               /* 0, or the recording ended before the program
                                   (enum crec_stop_why) at stop_at: */
    uint64_t stop_at, dump_number;
    int program_ended;          /* ... and the program ended after it, unrecorded: */
    uint64_t program_end;       /*   at this instruction count, */
    int program_how;            /*   CREC_EXIT_STATUS or CREC_EXIT_SIGNAL, */
    uint64_t program_value;     /*   with this status or signal */
    /* every process (format 3), by number; the fields above are the first's,
     * but for the file's size, chunks and streams, which are all of them */
    size_t nprocesses;
    const crec_process_info *processes;
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
    CREC_SRC_INDEX = 4,    /* the index: the value a span's stores left */
};

/*! crec_open() :
 *  Open the recording at `path` (flags: CREC_OPEN_*).  The index
 *  (PATH.idx) is loaded, or built and saved, on the first memory query.
 *  The current time is 0.  @return CREC_OK and *out, or an error. */
int crec_open(const char *path, unsigned flags, crec_recording **out, crec_error *err);

/*! crec_open_process() :
 *  crec_open of one process of a recording of several (`proc`: crec's
 *  number, crec_process_info; crec_open is process 0).  Its times are its
 *  own instruction counts; its index file is PATH.pN.idx.
 *  @return CREC_OK and *out, CREC_ERR_NOTFOUND (no such process), or an
 *  error. */
int crec_open_process(const char *path, uint32_t proc, unsigned flags, crec_recording **out,
                      crec_error *err);

/*! crec_recording_processes() : crec_list_processes of an open recording
 *  (one read from a pipe too).  @return CREC_OK, *out and *n, or an error. */
int crec_recording_processes(crec_recording *rec, crec_process_info **out, size_t *n,
                             crec_error *err);

/*! crec_reopen_process() : replace *rec by a handle of process `proc` of
 *  the same recording (with its flags and progress; *rec is closed).
 *  @return CREC_OK, or an error (*rec is then unchanged). */
int crec_reopen_process(crec_recording **rec, uint32_t proc, crec_error *err);

/*! crec_set_progress() : call fn (NULL: nothing) now and then while a
 *  query does long work, such as building the index (units: instructions
 *  replayed); it is last called with done == total. */
void crec_set_progress(crec_recording *rec, crec_progress_fn fn, void *ctx);

/*! crec_close() : NULL is fine. */
void crec_close(crec_recording *rec);

/*! crec_length() : @return the recording's instruction count (its end). */
uint64_t crec_length(const crec_recording *rec);

/*! crec_start() : @return the first time the recording holds: 0, or the
 *  time of its first key frame when a ring dropped the start or a
 *  --start-at recording began later.  crec_open starts there. */
uint64_t crec_start(const crec_recording *rec);

/*! crec_recorded() : is the state at time t in the recording?
 *  @return CREC_OK; CREC_ERR_NOTFOUND when it was dropped by a ring or
 *  not recorded (a gap), err saying so and what the recording keeps
 *  ("time 0 was dropped: the ring keeps 8100000000 to 9000000000"); or
 *  CREC_ERR_ARG past the end. */
int crec_recorded(crec_recording *rec, uint64_t t, crec_error *err);

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

/*! crec_threads() : @return how many threads the recording has (1 for a
 *  program of one thread).  Threads are numbered 1, 2, ... in the order
 *  they were created. */
size_t crec_threads(const crec_recording *rec);

/*! crec_thread_at() : @return the thread that runs instruction t+1 (at the
 *  end: the one that ran last). */
uint32_t crec_thread_at(crec_recording *rec, uint64_t t);

/*! crec_thread_time() : the time at which thread tid had run `step` of its
 *  own instructions (the first such time; step 0: when it first runs).
 *  @return CREC_OK and *t, or CREC_ERR_ARG (no such thread, or it never
 *  ran that far). */
int crec_thread_time(crec_recording *rec, uint32_t tid, uint64_t step, uint64_t *t,
                     crec_error *err);

/*! crec_thread_count() : @return how many of thread tid's own instructions
 *  ran before time t (0 when it had not started, or there is no such
 *  thread). */
uint64_t crec_thread_count(crec_recording *rec, uint32_t tid, uint64_t t);

/*! crec_thread_insn_time() : the time at which thread tid's own instruction
 *  number i (from 0) runs: the state before it.  With crec_thread_count,
 *  a thread's next instruction after t and its last one before t (gdb's
 *  stepi and reverse-stepi of one thread, the others running meanwhile).
 *  @return CREC_OK and *t, or CREC_ERR_ARG (no such thread, or it ran
 *  fewer instructions). */
int crec_thread_insn_time(crec_recording *rec, uint32_t tid, uint64_t i, uint64_t *t,
                          crec_error *err);

/*! crec_thread_describe() : what the recording says of thread tid without
 *  a replay, as crec_info lists it: its creator and guest tid, the global
 *  time of its first instruction and after its last, its instructions and
 *  key frames, whether it ended by itself (exited, with status) and whether
 *  the program ended in it (stream_bytes is 0).  @return CREC_OK, or
 *  CREC_ERR_ARG (no such thread), or an error reading the file. */
int crec_thread_describe(crec_recording *rec, uint32_t tid, crec_thread_info *ti,
                         crec_error *err);

/*! crec_read_thread_registers() : thread tid's registers at the current
 *  time: its state after the last of its instructions that ran before it
 *  (tid 0: the thread crec_thread_at names).
 *  @return CREC_OK, CREC_ERR_ARG (no such thread, or it had not started
 *  yet), or an error. */
int crec_read_thread_registers(crec_recording *rec, uint32_t tid, crec_regs *regs,
                               crec_error *err);

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
    uint32_t tid;           /* the thread that changed it (0: a recording of one
                               thread, or the initial value) */
} crec_change;

/*! crec_watch() :
 *  Call fn for every change of the `len` (1..64) bytes at addr over the
 *  whole recording, in time order (fn returning non-zero stops early).
 *  The first call gives the initial value (at crec_start: 0, unless a ring
 *  dropped the start or a --start-at recording began later; rip 0).
 *  @return CREC_OK or an error. */
int crec_watch(crec_recording *rec, uint64_t addr, size_t len,
               int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err);

/*
 * Races (docs/QUERY.md): the recording ran on one CPU, whose schedule
 * orders every access.  A multiprocessor orders only what the sequencing
 * points order (syscalls, atomic instructions, thread starts and wakes):
 * access a of thread A comes before access b of thread B when A reaches a
 * sequencing point after a before B reaches one before b.
 */

/* One side of a race. */
struct crec_race_side {
    uint32_t tid;           /* the thread */
    uint64_t t;             /* the global number of its instruction (it ran after t) */
    uint64_t thread_icount; /* ... and the thread's own */
    uint64_t rip;
    int write;              /* a store (else a load) */
    char insn[160];         /* the instruction's bytes and disassembly */
};

/* Two accesses of different threads to the same bytes, at least one a
 * store, that no sequencing point orders: `first` ran first here. */
typedef struct crec_race {
    uint64_t addr;          /* the first byte both touch */
    unsigned size;          /* the bytes of the second access */
    char symbol[128];       /* "name" or "name+0xOFF" of the data, or "" */
    struct crec_race_side first, second;
} crec_race;

/*! crec_races() :
 *  Replay the whole program and call fn for each address (8-byte granule)
 *  where two threads' accesses race, once, with the first pair found (fn
 *  returning non-zero stops).  A recording of one thread has none.
 *  @return CREC_OK or an error. */
int crec_races(crec_recording *rec, int (*fn)(void *ctx, const crec_race *r), void *ctx,
               crec_error *err);

/* One value the bytes may hold, in the multiprocessor view. */
typedef struct crec_value {
    uint8_t bytes[64], known[64];
    int recorded;           /* the value in the recorded order (crec_read_memory's) */
    int unordered;          /* else: stored by a store no sequencing point orders with
                               the time (else the last store ordered before it) */
    uint32_t tid;           /* the store's thread (0: recorded) */
    uint64_t t;             /* ... its value is new at t */
    uint64_t rip;
    char insn[160];
} crec_value;

/*! crec_read_memory_all() :
 *  Every value the `len` (1..64) bytes at addr may hold at the current
 *  time in the multiprocessor view, the recorded one first: the last store
 *  ordered before the time, and every store (before or after it) that no
 *  sequencing point orders with it, seen from the thread that runs at that
 *  time.  Values are distinct; *n is how many there are (out holds the
 *  first max).  More than one: the answer is undetermined.
 *  @return CREC_OK, or an error. */
int crec_read_memory_all(crec_recording *rec, uint64_t addr, size_t len, crec_value *out,
                         size_t max, size_t *n, crec_error *err);

/*! crec_index_note() : why the index file PATH.idx could not be used and
 *  was rebuilt (it could not be decoded, or a query found it wrong), for
 *  the user to see; NULL when nothing of the kind happened. */
const char *crec_index_note(const crec_recording *rec);

/*! crec_index_build() : build the index of a recording opened with
 *  CREC_OPEN_NO_INDEX afresh, replaying its segments on `jobs` host
 *  threads (0: the default, two), and write PATH.idx; the sizes as
 *  crec_index_info's.  A thread replays whole segments (key frame to key
 *  frame), so a recording of few segments builds on fewer threads.
 *  @return CREC_OK or an error. */
#define CREC_INDEX_MAX_JOBS 16u /* host threads an index build may use, at most */
int crec_index_build(crec_recording *rec, unsigned jobs, uint64_t *index_bytes,
                     uint64_t *trace_bytes, crec_error *err);

/*! crec_index_info() : index statistics: its size in bytes, the size of the
 *  recording, and whether this handle built it.  Builds it if needed.
 *  @return CREC_OK or an error. */
int crec_index_info(crec_recording *rec, uint64_t *index_bytes, uint64_t *trace_bytes,
                    int *built, crec_error *err);

/* What crec_keyframes made. */
typedef struct crec_keyframes_result {
    uint64_t from, to;      /* the range, within the recording */
    uint64_t points;        /* restart points the index now has in it */
    uint64_t all_points;    /* ... and in all */
    uint64_t index_bytes;   /* the size of PATH.idx */
} crec_keyframes_result;

#define CREC_KEYFRAMES_MIN_EVERY 1000 /* instructions between two key frames, at least */

/*! crec_keyframes() :
 *  Key frames on demand: make restart points (registers, stream positions
 *  and the memory a replay starting there needs: a key frame made by
 *  replay) every `every` instructions in [from, to) of the recording at
 *  path, so that later queries, seeks and steps back there replay less.
 *  They are kept in PATH.idx, and the request in PATH.kf, which every
 *  later build of the index follows (docs/QUERY.md).  A recording of one
 *  thread.  progress (may be NULL) as for crec_set_progress.
 *  @return CREC_OK and *res, or an error (CREC_ERR_ARG: an empty range, or
 *  `every` under CREC_KEYFRAMES_MIN_EVERY). */
int crec_keyframes(const char *path, uint64_t from, uint64_t to, uint64_t every,
                   crec_progress_fn progress, void *pctx, crec_keyframes_result *res,
                   crec_error *err);

/* ------------------------------------------------------------------------ */
/* Execution: replay part of a recording and watch it (docs/API.md)        */
/* ------------------------------------------------------------------------ */

/*
 * crec_exec_run() replays [from, to) and calls an observer at every block,
 * instruction, memory access or syscall it asks for.  Times are as above:
 * the instruction "at t" is instruction number t+1, which runs from state t
 * to state t+1.  A recording of several threads runs in its recorded order
 * (global time counts every thread's instructions), each callback naming
 * the thread it is about; a run can follow one thread (crec_observer.tid).
 */

/* A replay in progress; passed to observer callbacks, valid only inside them. */
typedef struct crec_exec crec_exec;

enum crec_access_kind {
    CREC_ACCESS_READ = 'r',
    CREC_ACCESS_WRITE = 'w',
    CREC_ACCESS_KERNEL = 'k', /* a syscall or a change of the memory map wrote it */
};

typedef struct crec_access {
    uint64_t t;            /* the instruction that made it (runs from t to t+1) */
    uint32_t tid;          /* its thread */
    int kind;              /* enum crec_access_kind */
    uint64_t addr;
    uint64_t len;          /* 1..16 for READ/WRITE; any for KERNEL (addr 0 and
                              len UINT64_MAX: anywhere) */
    const uint8_t *value;  /* READ: bytes loaded; WRITE: bytes stored;
                              KERNEL: NULL (crec_exec_read after it) */
} crec_access;

typedef struct crec_syscall_info {
    uint64_t t;            /* the `syscall` instruction (runs from t to t+1) */
    uint32_t tid;
    uint64_t nr, args[6];
    int64_t ret;           /* value or -errno */
} crec_syscall_info;

/* A range of guest addresses [addr, addr+len). */
typedef struct crec_range {
    uint64_t addr, len;
} crec_range;

/* crec_observer flags. */
#define CREC_EXEC_READS_MEMORY 1 /* the client calls crec_exec_read: the run keeps
                                    track of which bytes replay memory holds, so
                                    that reads are answered from it (without the
                                    flag each read is a query of its own: right,
                                    but far slower) */

/* What a run reports.  Every callback may be NULL; a non-zero return stops
 * the run there (*stopped of crec_exec_run says where). */
typedef struct crec_observer {
    void *ctx;
    unsigned flags;        /* CREC_EXEC_* */
    uint32_t tid;          /* only this thread's instructions, blocks, accesses and
                              syscalls are reported (0: every thread's); without
                              CREC_EXEC_READS_MEMORY the other threads are not even
                              replayed */
    /* Before the instruction at time t runs (the state is the state at t).
     * Every instruction (a code hook: about 10x slower), or, when n_addrs
     * > 0, only those at one of the addresses `addrs` (any order; free
     * elsewhere: gdb breakpoints, function entries). */
    int (*insn)(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip);
    const uint64_t *addrs;
    size_t n_addrs;
    /* Before a basic block of `ninsns` instructions starting at t runs (a
     * block cut short by `to` reports only the instructions before it). */
    int (*block)(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr,
                 uint32_t ninsns);
    /* A memory access.  WRITE: before it happens (crec_exec_read shows the
     * old bytes); READ and KERNEL: after.  When n_ranges > 0, only accesses
     * that meet one of `ranges` are reported (gdb watchpoints). */
    int (*access)(void *ctx, crec_exec *x, const crec_access *a);
    const crec_range *ranges;
    size_t n_ranges;
    /* After a syscall, with its result (registers are after it). */
    int (*syscall)(void *ctx, crec_exec *x, const crec_syscall_info *s);
} crec_observer;

/*! crec_exec_run() :
 *  Replay [from, to) (to past the end: to the end) reporting to obs.
 *  *stopped (may be NULL): where it stopped - `to`, the end of the
 *  recording, or the point where a callback returned non-zero (insn and
 *  block: t, before that instruction; access and syscall: t+1, after the
 *  instruction that made it).  The replay starts at the restart point
 *  before `from` (crec_restart_before) and reports nothing before `from`;
 *  a `from` before the first key frame (a recording whose start was
 *  dropped) is that key frame.
 *  @return CREC_OK, CREC_ERR_ARG for from > to or from past the end, or an
 *  error (a callback's stop is not one). */
int crec_exec_run(crec_recording *rec, uint64_t from, uint64_t to, const crec_observer *obs,
                  uint64_t *stopped, crec_error *err);

/*! crec_exec_regs() : the registers at the callback's point (RIP: the
 *  instruction about to run; in a syscall callback, the one after it).
 *  @return CREC_OK or an error. */
int crec_exec_regs(crec_exec *x, crec_regs *r, crec_error *err);

/*! crec_exec_reg() : one register at the callback's point, cheaply: 0..15
 *  enum crec_gpr, or CREC_REG_RIP, _RFLAGS, _FS_BASE, _GS_BASE.
 *  @return its value (0 for another id). */
#define CREC_REG_RIP 16
#define CREC_REG_RFLAGS 17
#define CREC_REG_FS_BASE 18
#define CREC_REG_GS_BASE 19
uint64_t crec_exec_reg(crec_exec *x, int reg);

/*! crec_exec_thread_regs() : thread tid's registers at the callback's
 *  point (tid 0: the callback's thread, as crec_exec_regs): its state after
 *  the last of its instructions before that point, as
 *  crec_read_thread_registers gives.  @return CREC_OK, CREC_ERR_ARG (no
 *  such thread, or it has not started), or an error. */
int crec_exec_thread_regs(crec_exec *x, uint32_t tid, crec_regs *r, crec_error *err);

/*! crec_exec_read() :
 *  Memory at the callback's point.  Bytes the replay has not seen (never
 *  loaded or stored since the run started, or written by the kernel since)
 *  come from the query engine, so the answer always equals
 *  crec_read_memory at that time; known[] (may be NULL) as there.
 *  @return CREC_OK, CREC_ERR_ARG when no byte was ever mapped, or an error. */
int crec_exec_read(crec_exec *x, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                   crec_error *err);

/*! crec_exec_time() : @return the time of the callback's point (the t the
 *  callback was given; after a syscall, t+1). */
uint64_t crec_exec_time(const crec_exec *x);

/*! crec_restart_before() : the latest time <= t at which a replay starts
 *  without replaying anything earlier (a key frame or an index restart
 *  point).  Backward searches run [restart_before(t), t), keep the last
 *  hit, and step back one restart point when there is none. */
uint64_t crec_restart_before(crec_recording *rec, uint64_t t);

/*! crec_last_write() : the last write to a byte of [addr, addr+len) by an
 *  instruction before `before` (or by the kernel during a syscall before
 *  it), as *t: the time at which the written value is new (the write was
 *  instruction *t - 1), as crec_when reports it.  A store of the same value
 *  counts.  Only the spans the index says store to the range are replayed
 *  (gdb's reverse watchpoints).  @return CREC_OK, CREC_ERR_NOTFOUND when
 *  nothing wrote it before `before`, or an error. */
int crec_last_write(crec_recording *rec, uint64_t addr, uint64_t len, uint64_t before,
                    uint64_t *t, crec_error *err);

/* ------------------------------------------------------------------------ */
/* What the recording holds besides its run: modules, symbols, syscalls     */
/* ------------------------------------------------------------------------ */

/* An executable mapping of the recorded program (a CODE record). */
typedef struct crec_module {
    const char *path;      /* the file it was mapped from ("" if none) */
    uint64_t addr, len;    /* where it was mapped */
    uint64_t file_off;     /* the offset in the file of its first byte */
    int on_disk;           /* the file is still there, with the same bytes there */
} crec_module;

/*! crec_modules() : the executable mappings, in the order they were made
 *  (the program's first when it is not static-pie; then ld.so, libraries).
 *  *out stays valid until crec_close.  @return CREC_OK or an error. */
int crec_modules(crec_recording *rec, const crec_module **out, size_t *n, crec_error *err);

/* A symbol at an address, as crec_symbolize finds it. */
typedef struct crec_symbol {
    const char *name;      /* NULL: no symbol covers the address */
    uint64_t addr;         /* its run-time address */
    uint64_t size;         /* 0 if the ELF did not say */
    uint64_t offset;       /* the address asked for, minus addr */
    const crec_module *module; /* the mapping holding the address, or NULL */
} crec_symbol;

/*! crec_symbolize() : the function symbol covering addr (or the nearest
 *  one before it in the same mapping, when the ELF gave no size), from the
 *  symbol tables stored in the recording.  Strings stay valid until
 *  crec_close.  @return CREC_OK (sym->name NULL when none) or an error. */
int crec_symbolize(crec_recording *rec, uint64_t addr, crec_symbol *sym, crec_error *err);

/*! crec_symbols() : call fn for every function symbol at its run-time
 *  address (fn returning non-zero stops).  @return CREC_OK or an error. */
int crec_symbols(crec_recording *rec, int (*fn)(void *ctx, const crec_symbol *s), void *ctx,
                 crec_error *err);

/*! crec_program_path() : the path of the recorded program (argv[0] as crec
 *  record resolved it: the first module that is not the dynamic loader).
 *  @return a string valid until crec_close ("" if unknown). */
const char *crec_program_path(crec_recording *rec);

/*! crec_initial_auxv() : the auxiliary vector the program started with, as
 *  the kernel lays it out (pairs of little-endian u64, AT_NULL last), read
 *  from the initial stack at time 0.  *len: bytes.  *out is malloc'd: free().
 *  @return CREC_OK, CREC_ERR_NOTFOUND, or an error. */
int crec_initial_auxv(crec_recording *rec, uint8_t **out, size_t *len, crec_error *err);

/*! crec_syscalls() : call fn for every syscall of the recording, in order,
 *  without replaying (fn returning non-zero stops); s->t as in the
 *  observer.  @return CREC_OK or an error. */
int crec_syscalls(crec_recording *rec, int (*fn)(void *ctx, const crec_syscall_info *s),
                  void *ctx, crec_error *err);

/* How a recording ended (EXIT record), and where. */
typedef struct crec_ending {
    int how;               /* 0 exit status, 1 killed by a signal, 2 recording
                              stopped (SIGINT/SIGTERM to crec), -1 unknown (cut) */
    uint64_t value;        /* the status or the signal */
    uint64_t t;            /* the time at the end */
    uint32_t tid;
    uint64_t rip;          /* 1 (signal): the instruction that faulted */
} crec_end;

/*! crec_ending() : how the recording ended.  @return CREC_OK or an error. */
int crec_ending(crec_recording *rec, crec_end *e, crec_error *err);

/*! crec_syscall_name() : @return the x86-64 Linux name of syscall nr ("?"
 *  for a number Linux does not have). */
const char *crec_syscall_name(uint64_t nr);

/* ------------------------------------------------------------------------ */
/* Analysis from replay (analysis/; docs/USAGE.md: trace, calls, profile,    */
/* backtrace, syscalls, find, printf)                                        */
/* ------------------------------------------------------------------------ */

/* Symbols and source lines of a recording, cached: the symbol tables stored
 * in the recording, and the DWARF line tables of the program's files while
 * they are still on disk with the same bytes (or found under a debug
 * directory by build id or name). */
typedef struct crec_symtab crec_symtab;

/*! crec_symtab_open() : debug_dir (may be NULL) is searched for separate
 *  debug files (DIR/.build-id/xx/rest.debug, DIR/PATH, DIR/BASENAME) too.
 *  @return CREC_OK and *out, or an error. */
int crec_symtab_open(crec_recording *rec, const char *debug_dir, crec_symtab **out,
                     crec_error *err);

/*! crec_symtab_free() : NULL is fine. */
void crec_symtab_free(crec_symtab *s);

/* Where an address is: function, module, source line.  Strings stay valid
 * until crec_symtab_free. */
typedef struct crec_place {
    const char *func;      /* NULL: no symbol */
    uint64_t func_addr, offset;
    const char *module;    /* NULL: not in a code mapping */
    const char *file;      /* NULL: no source line known */
    unsigned line;
} crec_place;

/*! crec_symtab_place() : @return CREC_OK (fields NULL where unknown). */
int crec_symtab_place(crec_symtab *s, uint64_t addr, crec_place *p);

/*! crec_symtab_name() : "func+0x12", "func", or "[unknown 0x...]" into buf. */
void crec_symtab_name(crec_symtab *s, uint64_t addr, char *buf, size_t size);

/*! crec_symtab_resolve() : an address from "0x401000", "1234", "main",
 *  "main+0x10".  @return CREC_OK, or CREC_ERR_NOTFOUND naming it. */
int crec_symtab_resolve(crec_symtab *s, const char *what, uint64_t *addr, crec_error *err);

/*! crec_symtab_disasm() : the instruction at addr, as Capstone prints it
 *  ("mov rax, qword ptr [rbp - 8]"), and its length.  @return CREC_OK, or
 *  CREC_ERR_NOTFOUND for bytes that are no instruction or not code. */
int crec_symtab_disasm(crec_symtab *s, uint64_t addr, char *text, size_t size,
                       unsigned *len, crec_error *err);

/* ---- the shadow call stack ---------------------------------------------- */

/* One frame of the shadow call stack. */
typedef struct crec_frame {
    uint64_t fn;           /* the function's entry (where the call went) */
    uint64_t t;            /* when it was entered (the state at the entry) */
    uint64_t sp;           /* RSP at the entry: the frame is gone once RSP is above it */
    uint64_t ret;          /* the return address (0 for a tail call or the root) */
    uint64_t site;         /* the call instruction (0 for the root) */
    int tail;              /* entered by a jmp to a function start (a tail call) */
    uint64_t args[6];      /* rdi, rsi, rdx, rcx, r8, r9 at the entry */
    uint32_t tid;          /* its thread */
    int signal;            /* a signal handler entered at the end of the syscall at
                              `site` (args[0] is the signal's number) */
} crec_frame;

/* How a frame left. */
enum crec_leave { CREC_LEAVE_RET = 0,      /* a ret (rax is its value) */
                  CREC_LEAVE_UNWOUND = 1,  /* RSP went above it: longjmp, C++ unwinding */
                  CREC_LEAVE_END = 2 };    /* the run ended inside it */

/* What crec_calls_run reports; every callback may be NULL; non-zero stops. */
typedef struct crec_calls_observer {
    void *ctx;
    uint32_t tid;          /* only this thread (0: all) */
    /* a frame was pushed: stack[0..depth] is the stack, stack[depth] the new one */
    int (*enter)(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth);
    /* stack[depth] leaves at time t; rv = rax after a ret */
    int (*leave)(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                 int how, uint64_t rv);
    /* a block of n instructions at t runs in stack[depth] */
    int (*block)(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                 uint64_t addr, uint32_t n);
    /* a syscall (the `syscall` instruction at t ran in stack[depth]) */
    int (*syscall)(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth,
                   const crec_syscall_info *si);
} crec_calls_observer;

/*! crec_calls_run() :
 *  Replay [from, to) block by block keeping a shadow call stack per
 *  thread: a call pushes a frame; a ret, and also a longjmp or a C++
 *  unwind, pops every frame whose entry RSP is below the current RSP; a jmp
 *  from one function to the start of another is a tail call (a frame with
 *  the same RSP, popped with its caller), except from a stub that has no
 *  symbol of its own (a PLT entry), which takes the target's name.  A
 *  signal handler entered at the end of a syscall is a frame of its own
 *  (`signal`), which the frames below it outlive whatever stack it runs on,
 *  popped by its return (or a longjmp out of it) and by rt_sigreturn.
 *  Frames entered before `from` are not known: a thread's stack starts with
 *  a root frame at its first block in the range.
 *  @return CREC_OK or an error. */
int crec_calls_run(crec_recording *rec, crec_symtab *sym, uint64_t from, uint64_t to,
                   const crec_calls_observer *obs, crec_error *err);

/* ---- profile -------------------------------------------------------------- */

typedef struct crec_profile crec_profile;

/* One function of a profile (instructions: a deterministic clock). */
typedef struct crec_profile_fn {
    const char *name;      /* "fib", "[syscall:read]", "[unknown 0x401000]" */
    uint64_t addr;         /* entry (0 for a syscall) */
    uint64_t calls;
    uint64_t self;         /* instructions in it, not in what it called */
    uint64_t inclusive;    /* in it and what it called (recursion counted once) */
    uint64_t min, max;     /* inclusive instructions of one call */
    double mean;
} crec_profile_fn;

/* crec_profile_run flags. */
#define CREC_PROFILE_SPEEDSCOPE 1 /* keep every enter and leave for
                                     crec_profile_write_speedscope */
#define CREC_PROFILE_THREADS 2    /* each thread's stacks hang from a frame "[thread N]"
                                     of its own (else the threads' stacks are merged) */

/*! crec_profile_run() : an exact profile of [from, to) of thread tid (0:
 *  all; each thread has its own stack, and a call's instructions are its
 *  thread's).  flags: CREC_PROFILE_*.  @return CREC_OK and *out, or an
 *  error. */
int crec_profile_run(crec_recording *rec, crec_symtab *sym, uint64_t from, uint64_t to,
                     uint32_t tid, unsigned flags, crec_profile **out, crec_error *err);

/*! crec_profile_functions() : the functions (in no set order); *total is
 *  every instruction of the range.  @return how many. */
size_t crec_profile_functions(const crec_profile *p, const crec_profile_fn **fns,
                              uint64_t *total);

/*! crec_profile_write_folded() / _callgrind() / _speedscope() : folded
 *  stacks ("main;parse;read 1200"), callgrind's format (for
 *  callgrind_annotate, KCachegrind), or speedscope's evented JSON.
 *  @return CREC_OK, or CREC_ERR_IO when writing failed. */
int crec_profile_write_folded(const crec_profile *p, FILE *out, crec_error *err);
int crec_profile_write_callgrind(const crec_profile *p, FILE *out, crec_error *err);
int crec_profile_write_speedscope(const crec_profile *p, FILE *out, crec_error *err);

/*! crec_profile_free() : NULL is fine. */
void crec_profile_free(crec_profile *p);

/* ---- expressions: find's conditions and printf's arguments ----------------- */

/* A parsed expression over registers and memory: numbers, registers (rax,
 * eax, ax, al, rip, ...), symbols, + - * / % & | ^ << >>, comparisons,
 * && || !, and memory reads *(u8|u16|u32|u64|i8|...|char|int|long*)E,
 * and the cast (char*)E that makes a string for printf's %s. */
typedef struct crec_expr crec_expr;

/*! crec_expr_parse() : @return CREC_OK and *out, or CREC_ERR_ARG with where
 *  the text went wrong. */
int crec_expr_parse(crec_symtab *sym, const char *text, crec_expr **out, crec_error *err);

/*! crec_expr_free() : NULL is fine. */
void crec_expr_free(crec_expr *e);

/*! crec_expr_uses_registers() : @return 1 if it reads a register. */
int crec_expr_uses_registers(const crec_expr *e);

/*! crec_expr_memory() : the one constant address range the expression
 *  reads, if it reads exactly one and no register.  @return 1 and *r, or 0. */
int crec_expr_memory(const crec_expr *e, crec_range *r);

/*! crec_expr_eval() : the value at a callback's point.  *known 0: some
 *  byte it read is unknown (??).  @return CREC_OK or an error. */
int crec_expr_eval(const crec_expr *e, crec_exec *x, uint64_t *value, int *known,
                   crec_error *err);

/* ---- find ------------------------------------------------------------------ */

/* A condition of crec find. */
typedef struct crec_cond crec_cond;

/*! crec_cond_parse() : "enter FUNC", "leave FUNC", "exec ADDR", "syscall
 *  NAME|NR", or an expression that becomes true ("*(u32*)counter == 5",
 *  "rax > 100").  @return CREC_OK and *out, or CREC_ERR_ARG. */
int crec_cond_parse(crec_symtab *sym, const char *text, crec_cond **out, crec_error *err);

/*! crec_cond_free() : NULL is fine. */
void crec_cond_free(crec_cond *c);

/*! crec_find() :
 *  The times in (from, end] (backward: [0, from)) at which the condition
 *  holds in thread tid (0: any): for an event, the time before it (enter,
 *  exec, syscall: before the instruction; leave: after the ret); for an
 *  expression, the time at which it becomes true (one that reads a register
 *  is followed in each thread, whose registers it reads; a memory one, in
 *  the program, the thread being the one that made it true).  fn is called
 *  for each with its thread, nearest first (fn returning non-zero stops;
 *  without `all` only the first is reported).  A memory expression replays
 *  only the spans the index says write its address; syscalls need no
 *  replay.  @return CREC_OK or an error. */
int crec_find(crec_recording *rec, const crec_cond *c, uint64_t from, int backward, int all,
              uint32_t tid, int (*fn)(void *ctx, uint64_t t, uint32_t tid), void *ctx,
              crec_error *err);

/* ---- retroactive printf ------------------------------------------------------ */

/* A printf statement added after the run: a location, a format and its
 * arguments.  Values are captured at each execution of the location and
 * formatted only when the output is read (crec_printf_format). */
typedef struct crec_printf crec_printf;

/* One execution of the location, its arguments as captured: numbers, and
 * the bytes of strings (formatting happens later). */
typedef struct crec_printf_hit crec_printf_hit;

/*! crec_printf_parse() : location (function or address), format, args.
 *  @return CREC_OK and *out, or CREC_ERR_ARG (a %-conversion without an
 *  argument, an argument without one, a bad expression). */
int crec_printf_parse(crec_symtab *sym, const char *location, const char *format,
                      char *const *args, size_t nargs, crec_printf **out, crec_error *err);

/*! crec_printf_free() : NULL is fine. */
void crec_printf_free(crec_printf *p);

/*! crec_printf_run() : replay [from, to) stopping at the location in thread
 *  tid (0: any), and call fn with each hit's captured values (valid during
 *  the call).  @return CREC_OK or an error. */
int crec_printf_run(crec_recording *rec, const crec_printf *p, uint64_t from, uint64_t to,
                    uint32_t tid, int (*fn)(void *ctx, const crec_printf_hit *h), void *ctx,
                    crec_error *err);

/*! crec_printf_hit_time() : @return the hit's time; *tid its thread. */
uint64_t crec_printf_hit_time(const crec_printf_hit *h, uint32_t *tid);

/*! crec_printf_format() : the hit, formatted as the program's printf would
 *  (%d %i %u %x %X %o %c %s %p %%, with flags, width, precision and the
 *  h/l/ll/z length modifiers), into out.  @return the length it needs. */
size_t crec_printf_format(const crec_printf *p, const crec_printf_hit *h, char *out,
                          size_t size);

/* ---- back-trace --------------------------------------------------------------- */

/* A run of blocks before the back-trace's time: one block, or a loop of
 * `period` blocks that ran `reps` times in a row. */
typedef struct crec_bt_run {
    uint64_t t;            /* its first block's time */
    uint32_t period;       /* blocks in one turn (1..8) */
    uint64_t reps;         /* turns (1: it ran once) */
    uint64_t addr[8];      /* the blocks of one turn */
    uint32_t ninsns[8];
} crec_bt_run;

typedef struct crec_backtrace {
    uint64_t at;           /* the time of the back-trace */
    uint32_t tid;          /* the thread it follows */
    crec_bt_run *runs;     /* the last blocks before `at`, loops collapsed, oldest first */
    size_t nruns;
    crec_frame *stack;     /* the call stack at `at`, outermost first */
    size_t depth;
} crec_backtrace;

/*! crec_backtrace_run() : the last `last` runs of blocks of thread tid
 *  before `at` and its shadow call stack there, from a replay of [0, at)
 *  (tid 0: the thread crec_thread_at names, which at the end of a crash is
 *  the one that faulted).  @return CREC_OK and *out (crec_backtrace_free),
 *  or an error (CREC_ERR_ARG: no such thread, or it had not started). */
int crec_backtrace_run(crec_recording *rec, crec_symtab *sym, uint64_t at, size_t last,
                       uint32_t tid, crec_backtrace **out, crec_error *err);

/*! crec_backtrace_free() : NULL is fine. */
void crec_backtrace_free(crec_backtrace *b);

/* A recording that ended by a fatal signal: where and why. */
typedef struct crec_crash {
    int signo;             /* the signal */
    uint64_t t;            /* the end: the faulting instruction is the one at t */
    uint64_t rip;          /* its address */
    char insn[160];        /* its disassembly */
    int has_addr;          /* it accesses memory: ... */
    uint64_t addr;         /* ... at this address (worked out from its operand) */
} crec_crash;

/*! crec_crash_info() : read from the recording (its end and the EXIT
 *  record; the format has no field for the faulting address, so it is
 *  worked out from the instruction's memory operand and the registers).
 *  @return CREC_OK and *c when the recording ended by a signal,
 *  CREC_ERR_NOTFOUND when it did not, or an error. */
int crec_crash_info(crec_recording *rec, crec_crash *c, crec_error *err);

/* ------------------------------------------------------------------------ */
/* The gdb server: time-travel debugging from gdb (gdb/, docs/GDB.md)        */
/* ------------------------------------------------------------------------ */

/*! crec_recorded_cpuid() : the CPUID answer the recorded program was given
 *  for (leaf, subleaf): out[0..3] = eax, ebx, ecx, edx.
 *  @return CREC_OK, or CREC_ERR_NOTFOUND when the header has no such leaf. */
int crec_recorded_cpuid(crec_recording *rec, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

/*! crec_find_access() :
 *  The access to one of `ranges` nearest to time t: backward, the last one
 *  made by an instruction before t; forward, the first made at or after
 *  t.  Only stores and kernel writes when writes_only; only those that
 *  `match` (may be NULL) accepts.  The index leads the search to the spans
 *  that touch the ranges, newest first backward, and only those are
 *  replayed.  *hit is as an observer sees it, without `value`.
 *  @return CREC_OK with *found 1 and *hit, or *found 0; or an error. */
int crec_find_access(crec_recording *rec, const crec_range *ranges, size_t n, int writes_only,
                     int (*match)(void *ctx, const crec_access *a), void *ctx, uint64_t t,
                     int backward, crec_access *hit, int *found, crec_error *err);

/* A socket on 127.0.0.1 that a gdb connects to.  Opaque. */
typedef struct crec_gdb crec_gdb;

typedef struct crec_gdb_options {
    const char *path;  /* the recording's file name (`monitor info recording`) */
    /* `monitor seek T`: turn T into a time (NULL: a plain instruction count);
     * the crec command passes the parser of `crec query`'s WHEN. */
    int (*parse_time)(crec_recording *rec, const char *s, uint64_t *t, crec_error *err);
    /* Called every 100 ms while no gdb has connected yet: returning 0 gives
     * up (NULL: wait for ever). */
    int (*still_waiting)(void *ctx);
    void *ctx;
    FILE *log;         /* every packet, both ways (NULL: none) */
} crec_gdb_options;

/*! crec_gdb_listen() : listen on 127.0.0.1:port (0: a free port the
 *  system picks; crec_gdb_port() tells which).
 *  @return CREC_OK and *out, CREC_ERR_ARG (bad port) or CREC_ERR_IO. */
int crec_gdb_listen(int port, crec_gdb **out, crec_error *err);

/*! crec_gdb_port() : @return the port g listens on. */
int crec_gdb_port(const crec_gdb *g);

/*! crec_gdb_serve() : wait for one gdb to connect and serve it the
 *  recording over the GDB remote serial protocol until it detaches, kills
 *  or goes away (any of which is a normal end).  `o` may be NULL.
 *  @return CREC_OK, or an error (gdb never connected, out of memory). */
int crec_gdb_serve(crec_gdb *g, crec_recording *rec, const crec_gdb_options *o,
                   crec_error *err);

/*! crec_gdb_close() : stop listening.  NULL is fine. */
void crec_gdb_close(crec_gdb *g);

#endif /* CREC_H */
