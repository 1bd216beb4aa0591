/*
 * fuzz_fields.c - libFuzzer target: a real recording whose decoded fields
 * are changed and which is written again with every checksum right
 * (tests/tools/refield.h), then replayed with one job, two jobs and from
 * its middle, and queried.  Where fuzz_replay turns checksums off and
 * flips bytes, this one keeps the file well-formed down to each record's
 * layout, so that the mutations reach what the fields mean: a memory-map
 * length of a TiB, a key frame's stream offsets, a syscall's registers.
 *
 * The input is a list of changes, 16 bytes each:
 *   u8 stream type, u8 op (set, add, xor), u8 field, u8 value class,
 *   u32 LE record index, u64 LE value
 * (value class 1..7 picks a value a hostile writer would: 0, 2^40, 2^46,
 * 2^47, 2^63, UINT64_MAX, a page further; 0 takes the value as it is).
 * The recording is traces-sample/segv.crec (CREC_FUZZ_SEED overrides), or,
 * when the first change's op byte is 3 or more (op / 3 odd),
 * traces-sample/v3-parts.crec: a recording in parts (format version 3),
 * whose marks and gaps the changes then reach too.
 *
 * Any crash, leak, sanitizer report, error without a message, or a
 * recording that one job verifies and --jobs 2 or --from refuses, is a
 * bug.  Each input must also finish within the budget run.sh gives it
 * (-timeout, -rss_limit_mb): a replay's cost is bounded by what the file
 * holds, not by what its fields claim.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crec.h"
#include "tests/tools/refield.h"

static char path[64], idx_path[80];
static const char *seed_path, *seed_v3 = "traces-sample/v3-parts.crec";

static void check_message(int rc, const crec_error *err, const char *what)
{
    if (rc != CREC_OK && err->msg[0] == '\0') {
        fprintf(stderr, "fuzz_fields: %s failed with code %d and no message\n", what, rc);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    seed_path = getenv("CREC_FUZZ_SEED");
    if (!seed_path)
        seed_path = "traces-sample/segv.crec";
    snprintf(path, sizeof path, "/dev/shm/crec-fields-%d.crec", (int)getpid());
    snprintf(idx_path, sizeof idx_path, "%s.idx", path);
    return 0;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t pick(unsigned cls, uint64_t v)
{
    static const uint64_t hostile[] = {0, 0, 1ull << 40, 1ull << 46, 1ull << 47, 1ull << 63,
                                       UINT64_MAX, 4096};
    return cls % 8 ? hostile[cls % 8] : v;
}

/* One replay; 1 if it verified (no error, no divergence). */
static int replay(unsigned jobs, uint64_t from, uint64_t *end)
{
    crec_replay_options o = {0};
    crec_replay_result res;
    crec_error err = {0};
    int rc;

    o.jobs = jobs;
    o.from = from;
    rc = crec_replay_run(path, &o, &res, &err);
    check_message(rc, &err, "crec_replay_run");
    if (end)
        *end = res.instructions;
    return rc == CREC_OK && !res.diverged;
}

static void query(void)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    crec_regs regs;
    uint8_t buf[16], known[16];
    int source, rc = crec_open(path, 0, &rec, &err);

    check_message(rc, &err, "crec_open");
    if (rc != CREC_OK)
        return;
    for (int end = 0; end < 2; end++) {
        rc = crec_seek(rec, end ? crec_length(rec) : crec_length(rec) / 2, &err);
        if (rc == CREC_OK && (rc = crec_read_registers(rec, &regs, &err)) == CREC_OK)
            rc = crec_read_memory(rec, regs.gpr[CREC_RSP], sizeof buf, buf, known, &source,
                                  &err);
        check_message(rc, &err, "a query");
    }
    crec_close(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rf_file f;
    crec_error err = {0};
    uint64_t end = 0;
    int one;

    if (size < 16 || size > 16 * 8)
        return 0;
    const char *seed = (data[1] / 3) & 1 ? seed_v3 : seed_path;
    if (rf_load(seed, &f, &err) != 0) {
        fprintf(stderr, "fuzz_fields: can't read the seed %s: %s\n", seed, err.msg);
        abort();
    }
    for (size_t at = 0; at + 16 <= size; at += 16) {
        const uint8_t *c = data + at;
        rf_change(&f, c[0] % (CREC_FMT_S_MAX + 1), (uint32_t)le(c + 4, 4), c[2], c[1] % 3,
                  pick(c[3], le(c + 8, 8)));
    }
    if (rf_save(&f, path, &err) != 0) {
        rf_free(&f);
        return 0; /* a change the writer refuses (a header it can't write) */
    }
    rf_free(&f);
    one = replay(1, 0, &end);
    /* every path checks the same things: what one job verifies, the others do */
    if (one && (!replay(2, 0, NULL) || !replay(1, end / 2, NULL))) {
        fprintf(stderr, "fuzz_fields: one job verified %s, --jobs 2 or --from %llu did not\n",
                path, (unsigned long long)(end / 2));
        abort();
    }
    query();
    unlink(idx_path);
    unlink(path);
    return 0;
}
