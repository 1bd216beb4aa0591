/*
 * recorder_int.h - private to recorder/: the prediction cache.
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

/* The same for a store of 1 to 8 bytes given as a number (byte i of the
 * store in bits 8i..8i+7), as Unicorn's store hook passes it. */
void crec_pcache_store(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size);

/*
 * A guest load of `size` bytes at addr that returned `bytes`.
 * @return 1 if the cache predicted every byte (a hit), 0 otherwise.
 * Either way the cache then holds `bytes` for that range.
 */
int crec_pcache_read(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size);

/* Forget every granule of [addr, addr+len) (a remapped range). */
void crec_pcache_forget(crec_pcache *pc, uint64_t addr, uint64_t len);

/* ---- the recording session (record.c, rec_mem.c) ------------------------ */

#include "emu/emu.h"
#include "format/format.h"
#include "recorder/recorder.h"

/* A set of guest page numbers: the pages written since the last snapshot. */
struct rec_pageset {
    uint64_t *slots; /* page number + 1; 0 = empty */
    size_t cap, used;
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

/* The host address of one guest page, as the memory hooks last found it. */
struct rec_hostpage {
    uint64_t page_plus1; /* guest page number + 1; 0 = empty */
    uint8_t *host;
};

#define REC_HOSTPAGES 256 /* a power of two */
#define REC_MAX_CODE_HASHES 64
#define REC_MAX_IMAGES 16
#define REC_MAX_SYMBOLIZED 256

struct rec_session {
    const crec_rec_options *opt;
    crec_fmt_writer *w;
    crec_emu *emu;
    crec_emu_cpu *cpu;
    crec_pcache *pc;
    uint32_t tid;

    crec_fmt_buf reads;   /* READS bytes not yet handed to the writer */
    crec_fmt_buf scratch; /* one encoded record */
    uint64_t hits;        /* loads predicted since the last logged value */
    /* Guest pages the hooks touched lately; emptied after every syscall,
     * since only a syscall can move or drop a page's host memory. */
    struct rec_hostpage hostpages[REC_HOSTPAGES];

    uint64_t next_kf;     /* instruction count of the next key frame */
    uint64_t kf_interval;
    uint64_t snap_every;  /* key frames between snapshots */
    int started;          /* the first key frame is written */
    int stopped;          /* crec got SIGINT/SIGTERM: the recording ends early */

    crec_regs sys_regs;   /* registers when the current syscall began */
    struct crec_emu_observer observer;
    struct rec_pageset dirty;
    int dirty_all;        /* the next snapshot must take every page */
    uint64_t last_dirty_page;

    struct rec_code_hash code_hashes[REC_MAX_CODE_HASHES];
    size_t n_code_hashes;
    struct rec_image images[REC_MAX_IMAGES]; /* from the ELF loader */
    size_t n_images;
    crec_fmt_hash symbolized[REC_MAX_SYMBOLIZED]; /* blobs whose symbols are written */
    size_t n_symbolized;

    crec_rec_stats stats;
    int failed;           /* a write failed: `err` says why; stop recording */
    crec_error err;
};

/* rec_mem.c: the memory map, code, snapshots and dirty pages. */
int rec_pageset_add(struct rec_pageset *s, uint64_t page);
void rec_pageset_free(struct rec_pageset *s);
void rec_mark_dirty(struct rec_session *rs, uint64_t addr, uint64_t len);
int rec_write_listing(struct rec_session *rs);
int rec_write_snapshot(struct rec_session *rs, uint64_t icount, int full);
int rec_on_mem_event(struct rec_session *rs, const struct crec_emu_mem_event *ev);
void rec_note_image(struct rec_session *rs, const struct crec_emu_mem_event *ev);

/* symbols.c: SYMBOL records for the ELF file `path`, whose bytes from
 * file_off on are the code blob `blob`.  A missing or odd file: none. */
int rec_symbols(struct rec_session *rs, const char *path, uint64_t file_off,
                const crec_fmt_hash *blob);

/* record.c */
/* Empty the table of guest pages the memory hooks use (the map changed). */
void rec_forget_hostpages(struct rec_session *rs);
int rec_event(struct rec_session *rs, const crec_fmt_event *ev);
void rec_fail(struct rec_session *rs, const crec_error *err);

#endif /* CREC_RECORDER_INT_H */
