/*
 * fuzz_replay.c - libFuzzer target over everything that reads a recording
 * after the format layer has accepted it: replay (crec_replay_run: a
 * program of several threads whole, then each thread alone) and the query
 * engine (crec_open, the index build, memory and register reads; with
 * threads, a thread's registers, races and all values).
 * The input is a whole .crec file.  Checksums are not enforced
 * (fmt_fuzz_no_checksums), so a mutation is not caught by the chunk's
 * XXH3 and reaches the replayer as a well-framed, wrong record: what a
 * buggy or hostile writer could produce.  Any crash, hang, leak or
 * sanitizer report is a bug; a divergence or a clean error is fine.
 *
 * The replay API takes a path, so each input is written to a file in
 * /dev/shm first (and its index, PATH.idx, removed after).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crec.h"
#include "format/format_int.h"
#include "replayer/replayer.h"

static char path[64], idx_path[80];

static int write_input(const uint8_t *data, size_t size)
{
    FILE *f;

    if (!path[0]) {
        snprintf(path, sizeof path, "/dev/shm/crec-fuzz-%d.crec", (int)getpid());
        snprintf(idx_path, sizeof idx_path, "%s.idx", path);
    }
    f = fopen(path, "wb");
    if (!f)
        return -1;
    if (fwrite(data, 1, size, f) != size) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

static int race_seen(void *ctx, const crec_race *r)
{
    (void)ctx, (void)r;
    return 0;
}

/* A few queries of the kinds a user runs: registers at the middle and the
 * end, and the memory at the stack pointer there (which builds the index);
 * with threads, thread 2's registers, the races, and every value at the
 * stack pointer. */
static void query(void)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    crec_regs regs;
    uint8_t buf[16], known[16];
    int source;

    if (crec_open(path, 0, &rec, &err) != CREC_OK)
        return;
    if (crec_seek(rec, crec_length(rec) / 2, &err) == CREC_OK &&
        crec_read_registers(rec, &regs, &err) == CREC_OK)
        crec_read_memory(rec, regs.gpr[CREC_RSP], sizeof buf, buf, known, &source, &err);
    if (crec_seek(rec, crec_length(rec), &err) == CREC_OK &&
        crec_read_registers(rec, &regs, &err) == CREC_OK)
        crec_read_memory(rec, regs.gpr[CREC_RSP], sizeof buf, buf, known, &source, &err);
    if (crec_threads(rec) > 1) {
        crec_value vals[4];
        size_t n;
        if (crec_read_thread_registers(rec, 2, &regs, &err) == CREC_OK)
            crec_read_memory_all(rec, regs.gpr[CREC_RSP], 8, vals, 4, &n, &err);
        crec_races(rec, race_seen, NULL, &err);
    }
    crec_close(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crec_replay_options o = {0};
    crec_replay_result res;
    crec_error err = {0};

    fmt_fuzz_no_checksums = 1;
    if (write_input(data, size) != 0)
        return 0;
    o.jobs = 1;
    if (crec_replay_run(path, &o, &res, &err) == CREC_OK && res.threads > 1) {
        o.jobs = 2; /* each thread alone */
        crec_replay_run(path, &o, &res, &err);
    }
    query();
    unlink(idx_path);
    return 0;
}
