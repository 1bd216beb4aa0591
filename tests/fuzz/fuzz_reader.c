/*
 * fuzz_reader.c - libFuzzer target over the .crec reader: the input is a
 * whole file.  It runs what `crec info` runs (open, verify, decode every
 * framed stream), then reads every stream through a cursor and at random
 * offsets, and looks up the blobs that snapshots name.  Any crash, leak or
 * sanitizer report is a bug; add the input to tests/corrupt/ when fixed.
 *
 * Each file is read twice: with checksums enforced (what users run), and
 * without (fmt_fuzz_no_checksums), so that mutations reach the zstd frames,
 * the directory and the record decoders behind the checksums.  An input
 * that starts with 'R' is instead one record body given to every decoder
 * (the marks of version 3 too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"
#include "format/format_int.h"

static void read_streams(crec_fmt_reader *r)
{
    uint8_t buf[4096];
    crec_error e;
    for (size_t i = 0; i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        crec_fmt_cursor *c;
        if (crec_fmt_reader_stream(r, i, &si, &e) != CREC_OK)
            continue;
        if (si.raw_bytes)
            crec_fmt_read_at(r, si.type, si.tid, si.raw_bytes / 2, buf,
                             si.raw_bytes / 2 < sizeof buf ? (size_t)(si.raw_bytes / 2) : sizeof buf,
                             &e);
        if (crec_fmt_cursor_open(r, si.type, si.tid, 0, &c, &e) != CREC_OK)
            continue;
        if (si.type == CREC_FMT_S_SEQ) {
            crec_fmt_seq_ctx ctx = {0, 0, 1};
            crec_fmt_seq q;
            while (crec_fmt_cursor_seq(c, &ctx, &q, &e) == CREC_OK)
                ;
        } else if (si.type == CREC_FMT_S_READS) {
            uint64_t hits;
            unsigned width = 1;
            while (crec_fmt_read_decode_hits(c, &hits, &e) == CREC_OK &&
                   crec_fmt_read_decode_value(c, width, buf, &e) == CREC_OK)
                width = width % CREC_FMT_READ_WIDTH_MAX + 1;
        } else {
            int kind;
            const uint8_t *body;
            size_t len;
            while (crec_fmt_cursor_next(c, &kind, &body, &len, &e) == CREC_OK) {
                crec_fmt_snapshot s;
                if (kind == CREC_FMT_K_SNAPSHOT && crec_fmt_snap_decode(body, len, &s, &e) == 0) {
                    for (size_t p = 0; p < s.npages && p < 4; p++) {
                        uint8_t *d;
                        size_t dl;
                        if (crec_fmt_blob_get(r, &s.pages[p].blob, &d, &dl, &e) == CREC_OK)
                            crec_free(d);
                    }
                    crec_fmt_snapshot_clear(&s);
                }
            }
        }
        crec_fmt_cursor_free(c);
    }
}

/* The rest of the input as the body of every kind of record. */
static void decode_records(const uint8_t *p, size_t n)
{
    static const int kinds[] = {CREC_FMT_K_SYSCALL, CREC_FMT_K_CPUID, CREC_FMT_K_RDTSC,
                                CREC_FMT_K_MMAP,    CREC_FMT_K_SIGNAL, CREC_FMT_K_THREAD,
                                CREC_FMT_K_EXIT,    CREC_FMT_K_PROCESS, 0x7f};
    crec_error e;
    crec_fmt_keyframe kf;
    crec_fmt_event ev;
    crec_fmt_snapshot s;
    crec_fmt_code m;
    crec_fmt_symbol y;
    crec_fmt_header h;
    crec_fmt_process pr;
    crec_fmt_kf_decode(p, n, &kf, &e);
    if (crec_fmt_proc_decode(p, n, &pr, &e) == CREC_OK) {
        char **argv;
        if (crec_fmt_process_argv(&pr, &argv) == CREC_OK)
            crec_free(argv);
    }
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        for (uint32_t v = CREC_FMT_MIN_VERSION; v <= CREC_FMT_VERSION; v++)
            crec_fmt_ev_decode(v, kinds[i], p, n, &ev, &e);
    if (crec_fmt_snap_decode(p, n, &s, &e) == CREC_OK)
        crec_fmt_snapshot_clear(&s);
    crec_fmt_code_decode(p, n, &m, &e);
    crec_fmt_sym_decode(p, n, &y, &e);
    for (int k = CREC_FMT_K_RING; k <= CREC_FMT_K_STOP; k++) { /* version 3 */
        crec_fmt_mark mk;
        crec_fmt_buf b = {0};
        if (crec_fmt_mark_decode(k, p, n, &mk, &e) == CREC_OK &&
            crec_fmt_mark_encode(&b, &mk) != CREC_OK)
            abort(); /* what decodes encodes again */
        crec_fmt_buf_free(&b);
    }
    for (uint32_t ver = CREC_FMT_MIN_VERSION; ver <= CREC_FMT_VERSION; ver++) {
        crec_fmt_cur c = {p, n, 0};
        crec_fmt_seq_ctx ctx = {0, 0, 1};
        crec_fmt_seq q;
        if (fmt_header_decode(ver, p, n, &h, &e) == CREC_OK)
            crec_fmt_header_clear(&h);
        while (crec_fmt_seq_decode(ver, &c, &ctx, &q, &e) == CREC_OK)
            ;
    }
}

static void read_file(const uint8_t *data, size_t size)
{
    crec_fmt_reader *r;
    crec_error e;
    crec_fmt_summary s;
    if (crec_fmt_reader_open_mem(data, size, &r, &e) != CREC_OK)
        return;
    if (crec_fmt_summarize(r, &s, &e) == CREC_OK)
        crec_fmt_summary_clear(&s);
    {
        crec_fmt_marks mk;
        if (crec_fmt_marks_read(r, &mk, &e) == CREC_OK)
            crec_fmt_marks_clear(&mk);
    }
    {
        crec_fmt_slice *v;
        size_t n;
        if (crec_fmt_schedule(r, 1000000, &v, &n, &e) == CREC_OK)
            crec_free(v);
    }
    read_streams(r);
    {
        /* Version 3: every process's streams, each selected in turn. */
        crec_fmt_proc_sum *pv;
        size_t np, which[8], nw;
        if (crec_fmt_processes(r, &pv, &np, &e) == CREC_OK) {
            for (size_t i = 1; i < np && i < 8; i++)
                if (crec_fmt_reader_select(r, pv[i].proc, &e) == CREC_OK) {
                    if (crec_fmt_summarize(r, &s, &e) == CREC_OK)
                        crec_fmt_summary_clear(&s);
                    read_streams(r);
                }
            if (np && np <= 8)
                crec_fmt_pick_processes(pv, np, pv[np - 1].pid, 1, which, &nw, &e);
            crec_fmt_processes_free(pv, np);
        }
    }
    crec_fmt_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 0 && data[0] == 'R') {
        decode_records(data + 1, size - 1);
        return 0;
    }
    fmt_fuzz_no_checksums = 0;
    read_file(data, size);
    fmt_fuzz_no_checksums = 1;
    read_file(data, size);
    fmt_fuzz_no_checksums = 0;
    return 0;
}
