/*
 * recorder.h - make a recording: run a program under emu/ and write what
 * replay can't predict into a .crec file through format/.
 */
#ifndef CREC_RECORDER_H
#define CREC_RECORDER_H

#include <stdint.h>
#include <stdio.h>

#include "crec.h"
#include "emu/emu.h"

#define CREC_REC_DEFAULT_KF_INTERVAL 1000000ull /* instructions */
#define CREC_REC_DEFAULT_SNAP_INTERVAL 16       /* key frames */
#define CREC_REC_DEFAULT_CACHE_LOG2 16          /* 65536 entries */

typedef struct crec_rec_options {
    const char *out_path;        /* where to write, for messages (and to
                                    create, when out_fd is -1) */
    int out_fd;                  /* >= 0: write the recording to this fd,
                                    which crec_rec_run closes */
    uint64_t keyframe_interval;  /* 0: the default */
    uint64_t snapshot_interval;  /* key frames between snapshots; 0: default */
    unsigned cache_log2;         /* 0: the default */
    int strace, strict;          /* as for crec run */
    FILE *log;                   /* NULL: stderr */
    uint64_t slice;              /* time slice in instructions; 0: the default */
    unsigned cpus;               /* CPUs shown to the guest; 0: 1 */
    int chaos;                   /* random slices and switches, from chaos_seed */
    uint64_t chaos_seed;
} crec_rec_options;

/* What a finished recording measured. */
typedef struct crec_rec_stats {
    uint64_t instructions;
    uint64_t reads_logged;  /* loads the cache did not predict */
    uint64_t reads_hit;     /* loads it did */
    uint64_t keyframes, snapshots, syscalls;
} crec_rec_stats;

/*! crec_rec_run() :
 *  Record the program at `path` with argv/envp into o->out_path.  The file
 *  is complete whether the guest exits, crashes, or crec gets SIGINT or
 *  SIGTERM (then ex->signo is that signal).
 *  @return CREC_OK with *ex and *st filled, or an error (the file written
 *          so far stays readable up to its last chunk). */
int crec_rec_run(const crec_rec_options *o, const char *path, char *const argv[],
                 char *const envp[], struct crec_emu_exit *ex, crec_rec_stats *st,
                 crec_error *err);

#endif /* CREC_RECORDER_H */
