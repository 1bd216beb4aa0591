/*
 * fuzz_replay.c - libFuzzer target over everything that reads a recording
 * after the format layer has accepted it: replay (crec_replay_run) and the
 * query engine (crec_open, the index build, memory and register reads).
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

static char path[64], idx_path[80];

/* An error must say what failed (docs/ARCHITECTURE.md, Errors). */
static void check_message(int rc, const crec_error *err, const char *what)
{
    if (rc != CREC_OK && err->msg[0] == '\0') {
        fprintf(stderr, "fuzz_replay: %s failed with code %d (%s) and no message\n", what, rc,
                crec_strerror(rc));
        abort();
    }
    if (rc != CREC_OK && (int)err->code != rc) {
        fprintf(stderr, "fuzz_replay: %s returned %d but its error says %d: %s\n", what, rc,
                (int)err->code, err->msg);
        abort();
    }
}

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

/* A few queries of the kinds a user runs: registers at the middle and the
 * end, and the memory at the stack pointer there (which builds the index). */
static void query(void)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    crec_regs regs;
    uint8_t buf[16], known[16];
    int source;

    int rc = crec_open(path, 0, &rec, &err);

    check_message(rc, &err, "crec_open");
    if (rc != CREC_OK)
        return;
    for (int end = 0; end < 2; end++) {
        rc = crec_seek(rec, end ? crec_length(rec) : crec_length(rec) / 2, &err);
        check_message(rc, &err, "crec_seek");
        if (rc == CREC_OK) {
            rc = crec_read_registers(rec, &regs, &err);
            check_message(rc, &err, "crec_read_registers");
        }
        if (rc == CREC_OK) {
            rc = crec_read_memory(rec, regs.gpr[CREC_RSP], sizeof buf, buf, known, &source,
                                  &err);
            check_message(rc, &err, "crec_read_memory");
        }
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
    check_message(crec_replay_run(path, &o, &res, &err), &err, "crec_replay_run");
    query();
    unlink(idx_path);
    return 0;
}
