/*
 * replayer.h - re-execute a recording with no OS and check that it runs
 * exactly as it did when recorded.
 */
#ifndef CREC_REPLAYER_H
#define CREC_REPLAYER_H

#include <stdint.h>

#include "crec.h"

typedef struct crec_replay_options {
    uint64_t from;   /* start at the last key frame at or before this time */
    unsigned jobs;   /* verify segments on this many threads (0, 1: one) */
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
    int diverged;
    crec_divergence div;
} crec_replay_result;

/*! crec_replay_run() :
 *  Replay the recording at `path`.  A divergence is not an error: it is
 *  reported in res->diverged / res->div with CREC_OK.
 *  @return CREC_OK, or an error reading the file (CREC_ERR_CORRUPT, ...). */
int crec_replay_run(const char *path, const crec_replay_options *o, crec_replay_result *res,
                    crec_error *err);

#endif /* CREC_REPLAYER_H */
