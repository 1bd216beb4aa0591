/*
 * sample.h - writes a small sample recording through the writer API, with
 * one record of every type.  Header-only (static functions) so that
 * tests/test_format.c, tests/tools/mksample.c and the fuzz corpus all make
 * the same file.
 */
#ifndef CREC_TESTS_SAMPLE_H
#define CREC_TESTS_SAMPLE_H

#include <string.h>

#include "format/format.h"

#define SAMPLE_ICOUNT 123456789ull

static crec_fmt_header sample_header(void)
{
    static char *argv[] = {"/bin/true", "arg with space", "", NULL};
    static char *envp[] = {"A=1", "PATH=/usr/bin", NULL};
    static crec_fmt_cpuid cpuid[] = {
        {0, 0, 0xd, 0x756e6547, 0x6c65746e, 0x49656e69},
        {1, 0, 0x000806c1, 0x00100800, 0x80d82203, 0x078bfbff},
    };
    crec_fmt_header h = {
        .arch = CREC_FMT_ARCH_X86_64,
        .host_order = CREC_FMT_ORDER_LITTLE,
        .page_size = 4096,
        .cache_entries = 65536,
        .cache_granule = 8,
        .keyframe_interval = 1000000,
        .snapshot_interval = 10,
        .start_sec = 1700000000,
        .start_nsec = 123456789,
        .crec_version = "0.1.0-test",
        .ncpuid = 2,
        .cpuid = cpuid,
        .argc = 3,
        .argv = argv,
        .envc = 2,
        .envp = envp,
    };
    return h;
}

/* Encode with `enc` into a scratch buffer and append it to a stream. */
#define SAMPLE_PUT(w, type, tid, enc, ...)                                                     \
    do {                                                                                       \
        crec_fmt_buf b_ = {0};                                                                 \
        rc = enc(&b_, __VA_ARGS__);                                                            \
        if (!rc)                                                                               \
            rc = crec_fmt_write_buf(w, type, tid, &b_, err);                                   \
        else                                                                                   \
            crec_error_set(err, (crec_err)rc, "encode failed");                                \
        crec_fmt_buf_free(&b_);                                                                \
        if (rc)                                                                                \
            goto out;                                                                          \
    } while (0)

static int sample_thread(crec_fmt_writer *w, uint32_t tid, crec_error *err)
{
    int rc;
    uint8_t v16[16];
    for (int i = 0; i < 16; i++)
        v16[i] = (uint8_t)(0xf0 + i);
    SAMPLE_PUT(w, CREC_FMT_S_READS, tid, crec_fmt_read_encode, 0, v16, 8);
    SAMPLE_PUT(w, CREC_FMT_S_READS, tid, crec_fmt_read_encode, 1000, v16, 1);
    SAMPLE_PUT(w, CREC_FMT_S_READS, tid, crec_fmt_read_encode, UINT64_MAX, v16, 16);
    crec_fmt_seq seq1 = {1, 10, CREC_FMT_SEQ_SYSCALL}, seq2 = {7, 5000, CREC_FMT_SEQ_ATOMIC};
    crec_fmt_seq_ctx sctx = {0, 0, 1};
    SAMPLE_PUT(w, CREC_FMT_S_SEQ, tid, crec_fmt_seq_encode, &sctx, &seq1);
    SAMPLE_PUT(w, CREC_FMT_S_SEQ, tid, crec_fmt_seq_encode, &sctx, &seq2);

    crec_fmt_event ev = {.kind = CREC_FMT_K_SYSCALL};
    ev.u.sys.icount = 42;
    ev.u.sys.nr = 1;
    ev.u.sys.args[0] = 1;
    ev.u.sys.args[1] = 0x7ffe12345678ull;
    ev.u.sys.args[2] = 13;
    ev.u.sys.ret = 13;
    ev.u.sys.flags = CREC_FMT_EV_HAS_HASH;
    ev.u.sys.write_hash = 0x0123456789abcdefull;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, tid, crec_fmt_ev_encode, &ev);
    ev = (crec_fmt_event){.kind = CREC_FMT_K_SYSCALL};
    ev.u.sys.nr = 2;
    ev.u.sys.ret = -2;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, tid, crec_fmt_ev_encode, &ev);
    ev = (crec_fmt_event){.kind = CREC_FMT_K_CPUID};
    ev.u.cpuid.leaf = 7;
    ev.u.cpuid.ebx = 0xdeadbeef;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, tid, crec_fmt_ev_encode, &ev);
    ev = (crec_fmt_event){.kind = CREC_FMT_K_RDTSC};
    ev.u.rdtsc.value = 0x123456789abull;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, tid, crec_fmt_ev_encode, &ev);
    ev = (crec_fmt_event){.kind = CREC_FMT_K_SIGNAL};
    ev.u.sig.icount = 99;
    ev.u.sig.signo = 11;
    ev.u.sig.code = -6;
    ev.u.sig.addr = 0x10;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, tid, crec_fmt_ev_encode, &ev);
out:
    return rc;
}

/*
 * The sample: threads 1..nthreads, each with READS, SEQ and EVENTS; key
 * frames, a snapshot, blobs (one stored twice), code, symbols, index bytes.
 * `close`: 1 writes the directory and trailer, 0 abandons the writer (the
 * file then ends after its last flushed chunk).
 */
static int sample_write_fd(int fd, const char *name, uint32_t nthreads, size_t chunk_size,
                           int close, crec_error *err)
{
    crec_fmt_header h = sample_header();
    crec_fmt_writer_opts o = {.chunk_size = chunk_size};
    crec_fmt_writer *w;
    int rc = crec_fmt_writer_open_fd(fd, name, &h, &o, &w, err);
    if (rc)
        return rc;
    uint8_t code[256];
    for (int i = 0; i < 256; i++)
        code[i] = (uint8_t)(i * 7);
    crec_fmt_hash ch, page;
    if ((rc = crec_fmt_blob_put(w, code, sizeof code, &ch, err)) ||
        (rc = crec_fmt_blob_put(w, code, sizeof code, &ch, err)) ||
        (rc = crec_fmt_blob_put(w, "", 0, &page, err)))
        goto out;
    crec_fmt_code cm = {0x400000, 0x1000, 5, 0, ch, "/bin/true", 9};
    crec_fmt_symbol sy = {ch, 0x10, 0x20, 2, "main", 4};
    SAMPLE_PUT(w, CREC_FMT_S_CODE, 0, crec_fmt_code_encode, &cm);
    SAMPLE_PUT(w, CREC_FMT_S_SYMBOLS, 0, crec_fmt_sym_encode, &sy);
    for (uint32_t t = 1; t <= nthreads; t++) {
        crec_fmt_keyframe kf = {.tid = t, .global_icount = t * 1000ull, .thread_icount = t};
        kf.regs.rip = 0x401000 + t;
        kf.regs.gpr[CREC_RSP] = 0x7ffe0000;
        kf.regs.xmm[15][15] = 0xaa;
        kf.regs.st[7][9] = 0x55;
        kf.reads_off = crec_fmt_writer_offset(w, CREC_FMT_S_READS, t);
        kf.events_off = crec_fmt_writer_offset(w, CREC_FMT_S_EVENTS, t);
        kf.seq_off = crec_fmt_writer_offset(w, CREC_FMT_S_SEQ, t);
        SAMPLE_PUT(w, CREC_FMT_S_KEYFRAMES, 0, crec_fmt_kf_encode, &kf);
        if ((rc = sample_thread(w, t, err)) != 0)
            goto out;
    }
    crec_fmt_snap_page pages[2] = {{0x400000, ch}, {0x7ffe0000, page}};
    crec_fmt_snapshot snap = {5000, 2, pages};
    SAMPLE_PUT(w, CREC_FMT_S_SNAPSHOTS, 0, crec_fmt_snap_encode, &snap);
    crec_fmt_event ex = {.kind = CREC_FMT_K_EXIT};
    ex.u.exit.global_icount = SAMPLE_ICOUNT;
    ex.u.exit.value = 3;
    SAMPLE_PUT(w, CREC_FMT_S_EVENTS, 1, crec_fmt_ev_encode, &ex);
    if ((rc = crec_fmt_write(w, CREC_FMT_S_INDEX, 0, "idx", 3, err)) != 0)
        goto out;
    if (!close) {
        rc = crec_fmt_flush_all(w, err);
        crec_fmt_writer_free(w);
        return rc;
    }
    return crec_fmt_writer_close(w, err);
out:
    crec_fmt_writer_free(w);
    return rc;
}

#endif /* CREC_TESTS_SAMPLE_H */
