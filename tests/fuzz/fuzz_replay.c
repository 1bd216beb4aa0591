/*
 * fuzz_replay.c - libFuzzer target over everything that reads a recording
 * after the format layer has accepted it: replay (crec_replay_run: a
 * program of several threads whole, then each thread alone) and the query
 * engine (crec_open, the index build, memory and register reads; with
 * threads, a thread's registers, races and all values; with processes,
 * each replayed alone and the last one's registers and memory).
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

/* The execution API and what the recording says of its program: a short
 * run with every callback, symbols, syscalls, the ending and a crash. */
static int on_block(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr, uint32_t n)
{
    uint8_t b[16];

    (void)ctx, (void)t, (void)tid, (void)n;
    crec_exec_read(x, crec_exec_reg(x, CREC_RSP), sizeof b, b, NULL, NULL);
    return addr == 0;
}

static int on_access(void *ctx, crec_exec *x, const crec_access *a)
{
    (void)ctx, (void)x;
    return a->len > 16 && a->kind != CREC_ACCESS_KERNEL;
}

static int on_sys(void *ctx, const crec_syscall_info *s)
{
    (void)ctx;
    return s->nr > 1000;
}

static void execute(crec_recording *rec)
{
    crec_observer o = {.flags = CREC_EXEC_READS_MEMORY, .block = on_block, .access = on_access};
    const crec_module *mods;
    crec_error err = {0};
    crec_symbol sym;
    crec_crash crash;
    crec_end end;
    uint8_t *auxv;
    size_t n, len;
    uint64_t t;
    int rc;

    rc = crec_exec_run(rec, crec_length(rec) / 3, crec_length(rec) / 3 + 2000, &o, NULL, &err);
    check_message(rc, &err, "crec_exec_run");
    rc = crec_modules(rec, &mods, &n, &err);
    check_message(rc, &err, "crec_modules");
    if (rc == CREC_OK && n > 0) {
        rc = crec_symbolize(rec, mods[0].addr + mods[0].len / 2, &sym, &err);
        check_message(rc, &err, "crec_symbolize");
    }
    crec_program_path(rec);
    rc = crec_initial_auxv(rec, &auxv, &len, &err);
    check_message(rc, &err, "crec_initial_auxv");
    if (rc == CREC_OK)
        free(auxv);
    rc = crec_syscalls(rec, on_sys, NULL, &err);
    check_message(rc, &err, "crec_syscalls");
    rc = crec_ending(rec, &end, &err);
    check_message(rc, &err, "crec_ending");
    rc = crec_crash_info(rec, &crash, &err);
    check_message(rc, &err, "crec_crash_info");
    rc = crec_last_write(rec, 0x7fffffffe000, 8, crec_length(rec), &t, &err);
    check_message(rc, &err, "crec_last_write");
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
static void seek_and_read(crec_recording *rec)
{
    crec_error err = {0};
    crec_regs regs;
    uint8_t buf[16], known[16];
    int source, rc;

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
}

static void query(void)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    crec_regs regs;
    crec_process_info *procs;
    size_t nprocs;
    int rc = crec_open(path, 0, &rec, &err);

    check_message(rc, &err, "crec_open");
    if (rc != CREC_OK)
        return;
    /* Several processes: the last one's registers and memory too. */
    rc = crec_recording_processes(rec, &procs, &nprocs, &err);
    check_message(rc, &err, "crec_recording_processes");
    if (rc == CREC_OK) {
        if (nprocs > 1) {
            char pidx[96];
            rc = crec_reopen_process(&rec, procs[nprocs - 1].proc, &err);
            check_message(rc, &err, "crec_reopen_process");
            if (rc == CREC_OK)
                seek_and_read(rec);
            snprintf(pidx, sizeof pidx, "%s.p%u.idx", path, procs[nprocs - 1].proc);
            unlink(pidx);
            rc = crec_reopen_process(&rec, 0, &err);
            check_message(rc, &err, "crec_reopen_process");
        }
        crec_processes_free(procs, nprocs);
    }
    seek_and_read(rec);
    if (crec_threads(rec) > 1) {
        crec_value vals[4];
        size_t n;
        rc = crec_read_thread_registers(rec, 2, &regs, &err);
        check_message(rc, &err, "crec_read_thread_registers");
        if (rc == CREC_OK) {
            rc = crec_read_memory_all(rec, regs.gpr[CREC_RSP], 8, vals, 4, &n, &err);
            check_message(rc, &err, "crec_read_memory_all");
        }
        rc = crec_races(rec, race_seen, NULL, &err);
        check_message(rc, &err, "crec_races");
    }
    execute(rec);
    crec_close(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crec_replay_options o = {0};
    crec_replay_result res;
    crec_error err = {0};
    int rc;

    fmt_fuzz_no_checksums = 1;
    if (write_input(data, size) != 0)
        return 0;
    o.jobs = 1;
    rc = crec_replay_run(path, &o, &res, &err);
    check_message(rc, &err, "crec_replay_run");
    if (rc == CREC_OK && res.threads > 1) {
        o.jobs = 2; /* each thread alone */
        check_message(crec_replay_run(path, &o, &res, &err), &err, "crec_replay_run");
    }
    query();
    unlink(idx_path);
    return 0;
}
