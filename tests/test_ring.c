/*
 * test_ring.c - the flight recorder's part of the format (format version 3):
 * MARK records, and a ring's rotations (format/ring.c) driven through the
 * writer API: what a rotation keeps, how it renumbers, the snapshot it
 * merges, and that the file reads back at every step.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "common/common.h"
#include "format/format.h"
#include "format/format_int.h"
#include "tests/tools/sample.h"

/* sample.h is shared by every test: not all of it is used here */
__attribute__((unused)) static void use_sample(void) { (void)sample_write_fd; }

/* ---- marks ------------------------------------------------------------------ */

static void mark_roundtrip(const crec_fmt_mark *m)
{
    crec_fmt_buf b = {0};
    crec_fmt_cur c;
    crec_fmt_mark d;
    crec_error e = {0};
    const uint8_t *body;
    size_t len;
    int kind;

    cr_assert_eq(crec_fmt_mark_encode(&b, m), CREC_OK);
    c = (crec_fmt_cur){b.data, b.len, 0};
    cr_assert_eq(crec_fmt_frame_next(&c, &kind, &body, &len, &e), CREC_OK);
    cr_assert_eq(kind, m->kind);
    cr_assert_eq(crec_fmt_mark_decode(kind, body, len, &d, &e), CREC_OK, "%s", e.msg);
    cr_assert(memcmp(&d, m, sizeof d) == 0, "kind 0x%02x", m->kind);
    crec_fmt_buf_free(&b);
}

Test(ring, marks_round_trip)
{
    crec_fmt_mark m;

    memset(&m, 0, sizeof m);
    m.kind = CREC_FMT_K_RING;
    m.u.ring.size = 8u << 20;
    m.u.ring.kept_from = 8100000000ull;
    m.u.ring.dropped_segments = 321;
    m.u.ring.dropped_bytes = UINT64_MAX;
    m.u.ring.rotations = 7;
    mark_roundtrip(&m);
    memset(&m, 0, sizeof m);
    m.kind = CREC_FMT_K_GAP;
    m.u.gap.from = 0;
    m.u.gap.to = 754;
    m.u.gap.why = CREC_FMT_GAP_BEFORE_START;
    mark_roundtrip(&m);
    memset(&m, 0, sizeof m);
    m.kind = CREC_FMT_K_STOP;
    m.u.stop.at = 56805794;
    m.u.stop.why = CREC_FMT_STOP_DUMP;
    m.u.stop.number = 2;
    mark_roundtrip(&m);
    m.u.stop.ended = 1;
    m.u.stop.end = 72807496;
    m.u.stop.how = CREC_FMT_EXIT_SIGNAL;
    m.u.stop.value = 11;
    mark_roundtrip(&m);
}

/* A mark body that must be refused, naming `what`. */
static void mark_refused(int kind, const uint8_t *body, size_t len, const char *what)
{
    crec_fmt_mark m;
    crec_error e = {0};

    cr_assert_eq(crec_fmt_mark_decode(kind, body, len, &m, &e), CREC_ERR_CORRUPT, "%s", what);
    cr_assert(strstr(e.msg, what), "'%s' does not say '%s'", e.msg, what);
}

Test(ring, marks_refuse_bad_fields)
{
    const uint8_t gap_empty[] = {5, 5, 1}, gap_why[] = {1, 5, 3};
    const uint8_t stop_why[] = {9, 7, 0, 0}, stop_ended[] = {9, 1, 0, 2};
    const uint8_t stop_before[] = {9, 1, 0, 1, 8, 0, 0}, stop_how[] = {9, 1, 0, 1, 10, 2, 0};
    const uint8_t stray[] = {1, 5, 1, 0}, ring_cut[] = {1, 2, 3};

    mark_refused(CREC_FMT_K_GAP, gap_empty, sizeof gap_empty, "empty or backwards");
    mark_refused(CREC_FMT_K_GAP, gap_why, sizeof gap_why, "gap reason 3");
    mark_refused(CREC_FMT_K_STOP, stop_why, sizeof stop_why, "stop mark reason 7");
    mark_refused(CREC_FMT_K_STOP, stop_ended, sizeof stop_ended, "end flag 2");
    mark_refused(CREC_FMT_K_STOP, stop_before, sizeof stop_before, "before the recording");
    mark_refused(CREC_FMT_K_STOP, stop_how, sizeof stop_how, "end kind 2");
    mark_refused(CREC_FMT_K_GAP, stray, sizeof stray, "stray");
    mark_refused(CREC_FMT_K_RING, ring_cut, sizeof ring_cut, "ring");
    mark_refused(CREC_FMT_K_KEYFRAME, stray, sizeof stray, "MARKS stream");
}

/* ---- a ring ------------------------------------------------------------------ */

#define RING_SIZE (256u << 10)
#define SEG_READS 20000u
#define PAGES 4

/* The READS bytes of segment `seg`: its number first, then noise that
 * compresses badly (so that the ring fills). */
static void seg_reads(uint64_t seg, uint8_t *out)
{
    uint64_t x = seg * 0x9E3779B97F4A7C15ull + 1;

    memcpy(out, &seg, 8);
    for (size_t i = 8; i < SEG_READS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out[i] = (uint8_t)x;
    }
}

static void put(crec_fmt_writer *w, int type, uint32_t tid, const crec_fmt_buf *b)
{
    crec_error e = {0};
    cr_assert_eq(crec_fmt_write_buf(w, type, tid, b, &e), CREC_OK, "%s", e.msg);
}

/* One segment as the recorder writes it: a key frame, the memory map
 * listed after it, its loads, a snapshot of the page it wrote. */
static void write_segment(crec_fmt_writer *w, uint64_t seg)
{
    static uint8_t reads[SEG_READS];
    uint8_t page[4096];
    crec_fmt_buf b = {0};
    crec_fmt_keyframe kf = {0};
    crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP};
    crec_fmt_snap_page pg;
    crec_fmt_snapshot snap = {seg * 1000, 1, &pg};
    crec_error e = {0};

    kf.tid = 1;
    kf.global_icount = kf.thread_icount = seg * 1000;
    kf.regs.rip = seg;
    kf.reads_off = crec_fmt_writer_offset(w, CREC_FMT_S_READS, 1);
    kf.events_off = crec_fmt_writer_offset(w, CREC_FMT_S_EVENTS, 1);
    cr_assert_eq(crec_fmt_kf_encode(&b, &kf), CREC_OK);
    put(w, CREC_FMT_S_KEYFRAMES, 0, &b);
    crec_fmt_buf_reset(&b);
    ev.u.mmap.op = CREC_FMT_MM_MAP;
    ev.u.mmap.flags = CREC_FMT_EV_LISTING;
    ev.u.mmap.addr = 0x10000;
    ev.u.mmap.len = PAGES * 4096;
    ev.u.mmap.prot = CREC_FMT_PROT_READ | CREC_FMT_PROT_WRITE;
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    put(w, CREC_FMT_S_EVENTS, 1, &b);
    seg_reads(seg, reads);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_READS, 1, reads, sizeof reads, &e), CREC_OK);
    memset(page, (int)(seg & 0xff), sizeof page);
    memcpy(page, &seg, 8);
    pg.addr = 0x10000 + (seg % PAGES) * 4096;
    cr_assert_eq(crec_fmt_blob_put(w, page, sizeof page, &pg.blob, &e), CREC_OK, "%s", e.msg);
    crec_fmt_buf_reset(&b);
    cr_assert_eq(crec_fmt_snap_encode(&b, &snap), CREC_OK);
    put(w, CREC_FMT_S_SNAPSHOTS, 0, &b);
    crec_fmt_buf_free(&b);
}

/* Everything a reader must find in a ring's file (complete or not). */
static void check_ring_file(const char *path, uint64_t last_seg, crec_fmt_hash code)
{
    crec_fmt_reader *r;
    crec_fmt_cursor *c;
    crec_fmt_marks m;
    crec_error e = {0};
    const uint8_t *body;
    size_t len;
    int kind;
    uint64_t first = UINT64_MAX, n = 0;
    static uint8_t want[SEG_READS], got[SEG_READS];
    uint8_t *data;
    size_t dlen;

    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_reader_verify(r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_marks_read(r, &m, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(m.ring.kind, CREC_FMT_K_RING);
    cr_assert_eq(m.ring.u.ring.size, RING_SIZE);
    /* every key frame kept finds its segment's bytes at its offsets */
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, &e), CREC_OK);
    while (crec_fmt_cursor_next(c, &kind, &body, &len, &e) == CREC_OK) {
        crec_fmt_keyframe kf;
        cr_assert_eq(crec_fmt_kf_decode(body, len, &kf, &e), CREC_OK, "%s", e.msg);
        if (first == UINT64_MAX) {
            first = kf.regs.rip;
            cr_assert_eq(kf.reads_off, 0, "the first key frame kept starts the stream");
            cr_assert_eq(kf.events_off, 0);
            cr_assert_eq(kf.global_icount, m.ring.u.ring.kept_from);
        }
        cr_assert_eq(kf.regs.rip, first + n, "key frames in order, none lost");
        seg_reads(kf.regs.rip, want);
        cr_assert_eq(crec_fmt_read_at(r, CREC_FMT_S_READS, 1, kf.reads_off, got, SEG_READS, &e),
                     CREC_OK, "%s", e.msg);
        cr_assert(memcmp(got, want, SEG_READS) == 0, "segment %llu's loads",
                  (unsigned long long)kf.regs.rip);
        n++;
    }
    crec_fmt_cursor_free(c);
    cr_assert_eq(first + n - 1, last_seg, "the newest segment is kept");
    cr_assert(m.ring.u.ring.rotations == 0 || first > 0);
    /* the first snapshot holds every page as it was at the first key frame */
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_SNAPSHOTS, 0, 0, &c, &e), CREC_OK);
    cr_assert_eq(crec_fmt_cursor_next(c, &kind, &body, &len, &e), CREC_OK);
    crec_fmt_snapshot s;
    cr_assert_eq(crec_fmt_snap_decode(body, len, &s, &e), CREC_OK);
    cr_assert_eq(s.global_icount, first * 1000);
    cr_assert_eq(s.npages, first >= PAGES - 1 ? PAGES : first + 1, "every page written by then");
    for (size_t i = 0; i < s.npages; i++) {
        uint64_t pg = (s.pages[i].addr - 0x10000) / 4096, seg = first - (first - pg) % PAGES, v;
        cr_assert_eq(crec_fmt_blob_get(r, &s.pages[i].blob, &data, &dlen, &e), CREC_OK, "%s",
                     e.msg);
        memcpy(&v, data, 8);
        cr_assert_eq(v, seg, "page %llu: the newest version by the first key frame",
                     (unsigned long long)pg);
        crec_free(data);
    }
    crec_fmt_snapshot_clear(&s);
    crec_fmt_cursor_free(c);
    /* pinned: the code blob and the CODE record naming it */
    cr_assert_eq(crec_fmt_blob_get(r, &code, &data, &dlen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(dlen, 5000);
    crec_free(data);
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_CODE, 0, 0, &c, &e), CREC_OK);
    cr_assert_eq(crec_fmt_cursor_next(c, &kind, &body, &len, &e), CREC_OK);
    crec_fmt_cursor_free(c);
    crec_fmt_marks_clear(&m);
    crec_fmt_reader_free(r);
}

Test(ring, rotations_keep_the_end_within_the_bound)
{
    char path[] = "/tmp/crec-ring-XXXXXX";
    crec_fmt_header h = sample_header();
    crec_fmt_writer_opts wo = {4096, 0};
    crec_fmt_ring_opts ro = {path, RING_SIZE, 0};
    crec_fmt_writer *w;
    crec_fmt_ring_stats st;
    crec_error e = {0};
    crec_fmt_hash code;
    crec_fmt_code cd = {0};
    crec_fmt_buf b = {0};
    uint8_t bytes[5000];
    struct stat sb;
    int fd = mkstemp(path);

    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(crec_fmt_writer_open(path, &h, &wo, &w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_ring_start(w, &ro, &e), CREC_OK, "%s", e.msg);
    memset(bytes, 0x90, sizeof bytes);
    cr_assert_eq(crec_fmt_blob_put_pinned(w, bytes, sizeof bytes, &code, &e), CREC_OK);
    cd.addr = 0x400000, cd.len = sizeof bytes, cd.prot = 5, cd.blob = code;
    cd.name = "prog", cd.name_len = 4;
    cr_assert_eq(crec_fmt_code_encode(&b, &cd), CREC_OK);
    put(w, CREC_FMT_S_CODE, 0, &b);
    crec_fmt_buf_free(&b);
    for (uint64_t seg = 0; seg < 120; seg++) {
        if (seg)
            cr_assert_eq(crec_fmt_ring_boundary(w, seg * 1000, &e), CREC_OK, "%s", e.msg);
        write_segment(w, seg);
        cr_assert_eq(stat(path, &sb), 0);
        cr_assert_leq((uint64_t)sb.st_size, RING_SIZE + 2 * SEG_READS + 16384,
                      "segment %llu: %lld bytes", (unsigned long long)seg, (long long)sb.st_size);
        if (seg % 17 == 16) { /* killed here: the file reads as a ring cut short */
            cr_assert_eq(crec_fmt_flush_all(w, &e), CREC_OK);
            check_ring_file(path, seg, code);
        }
    }
    cr_assert(crec_fmt_ring_stats_get(w, &st));
    cr_assert_gt(st.rotations, 3);
    cr_assert_gt(st.dropped_segments, 60);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    check_ring_file(path, 119, code);
    unlink(path);
}

Test(ring, refused_on_a_pipe_and_when_too_small)
{
    crec_fmt_header h = sample_header();
    crec_fmt_writer *w;
    crec_fmt_ring_opts ro = {"/tmp/x", RING_SIZE, 0};
    crec_error e = {0};
    int p[2];

    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(crec_fmt_writer_open_fd(p[1], "pipe", &h, NULL, &w, &e), CREC_OK);
    cr_assert_eq(crec_fmt_ring_start(w, &ro, &e), CREC_ERR_ARG);
    cr_assert(strstr(e.msg, "not a pipe"), "%s", e.msg);
    crec_fmt_writer_free(w);
    close(p[0]);

    char path[] = "/tmp/crec-ring-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(crec_fmt_writer_open(path, &h, NULL, &w, &e), CREC_OK);
    ro.path = path, ro.size = 1000;
    cr_assert_eq(crec_fmt_ring_start(w, &ro, &e), CREC_ERR_ARG);
    cr_assert(strstr(e.msg, "too small"), "%s", e.msg);
    crec_fmt_writer_free(w);
    unlink(path);
}

/*
 * Make the file at path one of version 2: the preamble says 2 and the
 * HEADER chunk loses what version 4 added after the chaos fields (the
 * check point interval, 0: one byte), with its frame's lengths and
 * checksum made right; the trailer goes (the reader scans the chunks).
 */
static void make_version_2(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p, *q, frame[40];
    long n;
    size_t clen, ulen, qlen;

    cr_assert(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    p = malloc((size_t)n);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    clen = crec_le_get(p + 16 + 24, 4);
    ulen = crec_le_get(p + 16 + 28, 4);
    q = malloc(ulen + ZSTD_compressBound(ulen));
    cr_assert_eq(ZSTD_decompress(q, ulen, p + 16 + 40, clen), ulen);
    cr_assert_eq(q[ulen - 1], 0, "the check point interval is the header's last byte");
    qlen = ZSTD_compress(q + ulen, ZSTD_compressBound(ulen), q, ulen - 1, 3);
    cr_assert(!ZSTD_isError(qlen));
    memcpy(frame, p + 16, 40);
    crec_le_put(frame + 24, qlen, 4);
    crec_le_put(frame + 28, ulen - 1, 4);
    {
        XXH3_state_t *st = XXH3_createState();
        XXH3_64bits_reset(st);
        XXH3_64bits_update(st, frame, 32);
        XXH3_64bits_update(st, q + ulen, qlen);
        crec_le_put(frame + 32, XXH3_64bits_digest(st), 8);
        XXH3_freeState(st);
    }
    crec_le_put(p + 8, 2, 4);
    f = fopen(path, "wb");
    cr_assert(f);
    fwrite(p, 1, 16, f);
    fwrite(frame, 1, 40, f);
    fwrite(q + ulen, 1, qlen, f);
    /* the other chunks, and the trailer less a byte */
    fwrite(p + 16 + 40 + clen, 1, (size_t)n - (16 + 40 + clen) - 1, f);
    fclose(f);
    free(q);
    free(p);
}

/* Marks in a file of version 2 are corruption. */
Test(ring, marks_refused_before_version_3)
{
    char path[] = "/tmp/crec-ring-XXXXXX";
    crec_fmt_header h = sample_header();
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    crec_fmt_mark m = {.kind = CREC_FMT_K_GAP};
    crec_fmt_buf b = {0};
    crec_error e = {0};
    int fd = mkstemp(path);

    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(crec_fmt_writer_open(path, &h, NULL, &w, &e), CREC_OK);
    m.u.gap.from = 0, m.u.gap.to = 10, m.u.gap.why = CREC_FMT_GAP_BEFORE_START;
    cr_assert_eq(crec_fmt_mark_encode(&b, &m), CREC_OK);
    put(w, CREC_FMT_S_MARKS, 0, &b);
    crec_fmt_buf_free(&b);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK);
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    crec_fmt_reader_free(r);
    /* version 2, and no trailer: a version 2 directory has no process field,
     * so the reader scans the chunks, and meets the MARKS one */
    make_version_2(path);
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "MARKS chunk in a version 2 file"), "%s", e.msg);
    unlink(path);
}
