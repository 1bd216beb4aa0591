/*
 * test_format.c - the .crec container: record round trips, the writer and
 * reader, corruption (every truncation, every byte flipped, byte-swapped
 * fields, the hex dumps of tests/corrupt/), allocation failure and I/O
 * errors.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/common.h"
#include "format/format.h"
#include "format/format_int.h"
#include "tests/tools/sample.h"

/* ---- helpers -------------------------------------------------------------- */

/* The bytes of the file at `path`, which is removed (caller frees). */
static uint8_t *take_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *p = malloc(*len ? *len : 1);
    cr_assert_eq(fread(p, 1, *len, f), *len);
    fclose(f);
    unlink(path);
    return p;
}

/* The sample recording as bytes in memory (caller frees). */
static uint8_t *sample_bytes(uint32_t threads, size_t chunk, int close_it, size_t *len)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    crec_error e = {0};
    cr_assert_eq(sample_write_fd(fd, path, threads, chunk, close_it, &e), CREC_OK, "%s", e.msg);
    return take_file(path, len);
}

/* What `crec info` does: open and summarize.  Checks the error contract:
 * success, or a known code with a one-line, non-empty message. */
static int info_mem(const uint8_t *p, size_t n, crec_fmt_summary *s, crec_error *e)
{
    crec_fmt_reader *r;
    crec_fmt_summary tmp;
    int rc = crec_fmt_reader_open_mem(p, n, &r, e);
    if (!rc) {
        rc = crec_fmt_summarize(r, s ? s : &tmp, e);
        crec_fmt_reader_free(r);
        crec_fmt_summary_clear(s ? s : &tmp); /* the counts stay */
    }
    if (rc) {
        cr_assert(rc == CREC_ERR_CORRUPT || rc == CREC_ERR_VERSION || rc == CREC_ERR_NOMEM,
                  "rc %d: %s", rc, e->msg);
        cr_assert(e->msg[0] != '\0');
        cr_assert(strchr(e->msg, '\n') == NULL, "%s", e->msg);
    }
    return rc;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32be(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_u64(uint8_t *p, uint64_t v, int big)
{
    for (int i = 0; i < 8; i++)
        p[big ? 7 - i : i] = (uint8_t)(v >> (8 * i));
}

/* Recompute a chunk's checksum in place, as a writer would have. */
static void chunk_resum(uint8_t *chunk, uint32_t clen)
{
    uint8_t *tmp = malloc(32 + clen);
    memcpy(tmp, chunk, 32);
    memcpy(tmp + 32, chunk + 40, clen);
    put_u64(chunk + 32, XXH3_64bits(tmp, 32 + clen), 0);
    free(tmp);
}

/* ---- record round trips ---------------------------------------------------- */

/* Field by field: the structs have padding. */
static int kf_eq(const crec_fmt_keyframe *a, const crec_fmt_keyframe *b)
{
    const crec_regs *x = &a->regs, *y = &b->regs;
    return a->tid == b->tid && a->global_icount == b->global_icount &&
           a->thread_icount == b->thread_icount && a->reads_off == b->reads_off &&
           a->events_off == b->events_off && a->seq_off == b->seq_off &&
           memcmp(x->gpr, y->gpr, sizeof x->gpr) == 0 && x->rip == y->rip &&
           x->rflags == y->rflags && x->fs_base == y->fs_base && x->gs_base == y->gs_base &&
           memcmp(x->xmm, y->xmm, sizeof x->xmm) == 0 && x->mxcsr == y->mxcsr &&
           x->fpcw == y->fpcw && x->fpsw == y->fpsw && x->fptag == y->fptag &&
           memcmp(x->st, y->st, sizeof x->st) == 0;
}

/* The body of the one framed record of b, checked to be of `kind`. */
static const uint8_t *frame_body(const crec_fmt_buf *b, int kind, size_t *len);

static void kf_roundtrip(const crec_fmt_keyframe *kf)
{
    crec_fmt_buf b = {0};
    crec_error e = {0};
    size_t len;
    const uint8_t *body;
    crec_fmt_keyframe out;

    cr_assert_eq(crec_fmt_kf_encode(&b, kf), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_KEYFRAME, &len);
    cr_assert_eq(crec_fmt_kf_decode(body, len, &out, &e), CREC_OK, "%s", e.msg);
    cr_assert(kf_eq(&out, kf));
    /* every shorter body is refused */
    for (size_t n = 0; n < len; n++)
        cr_assert_eq(crec_fmt_kf_decode(body, n, &out, &e), CREC_ERR_CORRUPT);
    crec_fmt_buf_free(&b);
}

Test(format, keyframe_roundtrip_edges)
{
    crec_fmt_keyframe kf;
    memset(&kf, 0, sizeof kf);
    kf_roundtrip(&kf);
    memset(&kf, 0xff, sizeof kf);
    kf.tid = UINT32_MAX;
    kf_roundtrip(&kf);
    for (size_t i = 0; i < sizeof kf; i++)
        ((uint8_t *)&kf)[i] = (uint8_t)(i * 37 + 1);
    kf.tid = 12345;
    kf_roundtrip(&kf);
}

/* Decode a framed record of buffer b and compare the event. */
static void ev_check(const crec_fmt_event *ev)
{
    crec_fmt_buf b = {0};
    crec_error e = {0};
    size_t len;
    cr_assert_eq(crec_fmt_ev_encode(&b, ev), CREC_OK);
    const uint8_t *body = frame_body(&b, ev->kind, &len);
    crec_fmt_event out;
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, ev->kind, body, len, &out, &e), CREC_OK,
                 "%s", e.msg);
    cr_assert_eq(out.kind, ev->kind);
    if (ev->kind == CREC_FMT_K_MMAP) {
        cr_assert_eq(out.u.mmap.op, ev->u.mmap.op);
        cr_assert_eq(out.u.mmap.addr, ev->u.mmap.addr);
        cr_assert_eq(out.u.mmap.len, ev->u.mmap.len);
        cr_assert_eq(out.u.mmap.prot, ev->u.mmap.prot);
        cr_assert_eq(out.u.mmap.mflags, ev->u.mmap.mflags);
        cr_assert_eq(out.u.mmap.addr2, ev->u.mmap.addr2);
        cr_assert_eq(out.u.mmap.len2, ev->u.mmap.len2);
        cr_assert_eq(out.u.mmap.flags, ev->u.mmap.flags);
        if (ev->u.mmap.flags & CREC_FMT_EV_HAS_HASH)
            cr_assert(memcmp(&out.u.mmap.blob, &ev->u.mmap.blob, 16) == 0);
        if (ev->u.mmap.flags & CREC_FMT_EV_HAS_NAME) {
            cr_assert_eq(out.u.mmap.name_len, ev->u.mmap.name_len);
            cr_assert(memcmp(out.u.mmap.name, ev->u.mmap.name, ev->u.mmap.name_len) == 0);
        }
    } else {
        cr_assert(memcmp(&out.u, &ev->u, sizeof out.u) == 0, "event kind 0x%x", ev->kind);
    }
    for (size_t n = 0; n < len; n++)
        cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, ev->kind, body, n, &out, &e),
                     CREC_ERR_CORRUPT);
    crec_fmt_buf_free(&b);
}

Test(format, event_roundtrip_every_kind)
{
    const uint64_t vals[] = {0, 1, 127, 128, 0x7ffe12345678ull, UINT64_MAX};
    for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
        uint64_t x = vals[v];
        crec_fmt_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_SYSCALL;
        ev.u.sys.icount = x;
        ev.u.sys.nr = x;
        for (int i = 0; i < 6; i++)
            ev.u.sys.args[i] = x - (uint64_t)i;
        ev.u.sys.ret = (int64_t)x;
        ev.u.sys.flags = v & 1 ? CREC_FMT_EV_HAS_HASH : 0;
        ev.u.sys.write_hash = v & 1 ? x : 0;
        ev_check(&ev);
        ev.u.sys.ret = INT64_MIN;
        ev_check(&ev);
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_CPUID;
        ev.u.cpuid.leaf = ev.u.cpuid.subleaf = ev.u.cpuid.eax = (uint32_t)x;
        ev.u.cpuid.ebx = ev.u.cpuid.ecx = ev.u.cpuid.edx = (uint32_t)~x;
        ev_check(&ev);
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_RDTSC;
        ev.u.rdtsc.value = x;
        ev_check(&ev);
        for (uint32_t op = CREC_FMT_MM_MAP; op <= CREC_FMT_MM_REMAP; op++) {
            memset(&ev, 0, sizeof ev);
            ev.kind = CREC_FMT_K_MMAP;
            ev.u.mmap.op = op;
            /* guest ranges stay in the address space (the limit itself: half each) */
            ev.u.mmap.addr = x % (CREC_FMT_ADDR_LIMIT / 2 + 1);
            ev.u.mmap.len = ~x % (CREC_FMT_ADDR_LIMIT / 2 + 1);
            ev.u.mmap.prot = 7;
            ev.u.mmap.mflags = x;
            ev.u.mmap.addr2 = x / 3 % (CREC_FMT_ADDR_LIMIT / 2 + 1);
            ev.u.mmap.len2 = x / 5 % (CREC_FMT_ADDR_LIMIT / 2 + 1);
            ev.u.mmap.flags = (uint32_t)(op + v) & 3;
            ev.u.mmap.blob = crec_fmt_hash_bytes(&x, sizeof x);
            ev.u.mmap.name = v ? "/usr/lib/x86_64-linux-gnu/libc.so.6" : "";
            ev.u.mmap.name_len = strlen(ev.u.mmap.name);
            ev_check(&ev);
        }
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_SIGNAL;
        ev.u.sig.icount = x;
        ev.u.sig.signo = 1 + (uint32_t)(x % 64); /* version 3: a signal's number */
        ev.u.sig.code = -(int64_t)(x & 0xff);
        ev.u.sig.addr = x;
        ev.u.sig.flags = (uint32_t)(x & 3);
        ev.u.sig.nregs = (uint32_t)(x % 3);
        for (uint32_t i = 0; i < ev.u.sig.nregs; i++) {
            ev.u.sig.regs[i].id = i ? CREC_FMT_REG_RIP : CREC_RSP;
            ev.u.sig.regs[i].value = x + i;
        }
        ev.u.sig.nout = (uint32_t)(x & 1);
        if (ev.u.sig.nout) {
            ev.u.sig.out[0].addr = x % (CREC_FMT_ADDR_LIMIT / 2);
            ev.u.sig.out[0].len = 1000;
        }
        ev_check(&ev);
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_THREAD;
        ev.u.thread.op = v & 1 ? CREC_FMT_TH_EXIT : CREC_FMT_TH_CREATE;
        ev.u.thread.tid = (uint32_t)x;
        ev_check(&ev);
        memset(&ev, 0, sizeof ev);
        ev.kind = CREC_FMT_K_EXIT;
        ev.u.exit.global_icount = x;
        ev.u.exit.how = v & 1;
        ev.u.exit.value = x;
        ev_check(&ev);
    }
}

Test(format, event_decode_refuses_bad_fields)
{
    crec_error e = {0};
    crec_fmt_event ev;
    const uint8_t bad_op[] = {9, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_MMAP, bad_op, sizeof bad_op, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "mmap operation"));
    const uint8_t flags[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80 /* reserved bit */};
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_SYSCALL, flags, sizeof flags, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "reserved"), "%s", e.msg);
    const uint8_t rdtsc[] = {1, 2};
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_RDTSC, rdtsc, 2, &ev, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "stray"), "%s", e.msg);
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, 0x77, rdtsc, 1, &ev, &e), CREC_ERR_CORRUPT);
    const uint8_t longv[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_RDTSC, longv, sizeof longv, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "too long"), "%s", e.msg);
    const uint8_t maxv[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_RDTSC, maxv, sizeof maxv, &ev, &e), CREC_OK);
    cr_assert_eq(ev.u.rdtsc.value, UINT64_MAX);
}

Test(format, reads_and_seq_roundtrip)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_buf b = {0}, q = {0};
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    crec_fmt_cursor *rc;
    crec_error e = {0};
    crec_fmt_seq_ctx wctx = {0, 0, 1}, rctx = {0, 0, 1};
    uint8_t v[16];
    uint64_t hits;
    for (unsigned w8 = 1; w8 <= 16; w8++) {
        memset(v, (int)w8, sizeof v);
        cr_assert_eq(crec_fmt_read_encode(&b, w8 == 16 ? UINT64_MAX : w8 * 1000, v, w8), CREC_OK);
        crec_fmt_seq sq = {w8 == 1 ? 0 : UINT64_MAX - w8, w8, 1 + w8 % 7};
        cr_assert_eq(crec_fmt_seq_encode(&q, &wctx, &sq), CREC_OK);
    }
    cr_assert_eq(crec_fmt_read_encode(&b, 0, v, 0), CREC_ERR_ARG);
    cr_assert_eq(crec_fmt_read_encode(&b, 0, v, 17), CREC_ERR_ARG);
    crec_fmt_buf_varint(&b, 5); /* an entry cut after its hit count */
    /* READS entries are read from a stream, as the replayer reads them */
    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, NULL, &w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_READS, 1, &b, &e), CREC_OK);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_READS, 1, 0, &rc, &e), CREC_OK);
    crec_fmt_cur c = {q.data, q.len, 0};
    for (unsigned w8 = 1; w8 <= 16; w8++) {
        crec_fmt_seq sq;
        uint8_t out[16] = {0};
        cr_assert_eq(crec_fmt_read_decode_hits(rc, &hits, &e), CREC_OK, "%s", e.msg);
        cr_assert_eq(hits, w8 == 16 ? UINT64_MAX : w8 * 1000);
        cr_assert_eq(crec_fmt_read_decode_value(rc, w8, out, &e), CREC_OK, "%s", e.msg);
        memset(v, (int)w8, sizeof v);
        cr_assert(memcmp(out, v, w8) == 0);
        cr_assert_eq(crec_fmt_seq_decode(CREC_FMT_VERSION, &c, &rctx, &sq, &e), CREC_OK);
        cr_assert_eq(sq.seq, w8 == 1 ? 0 : UINT64_MAX - w8);
        cr_assert_eq(sq.icount, w8);
        cr_assert_eq(sq.kind, 1 + w8 % 7);
    }
    cr_assert_eq(c.pos, c.len);
    cr_assert_eq(crec_fmt_read_decode_hits(rc, &hits, &e), CREC_OK);
    cr_assert_eq(hits, 5);
    cr_assert_eq(crec_fmt_read_decode_value(rc, 8, v, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "ends inside an entry") != NULL, "%s", e.msg);
    cr_assert_eq(crec_fmt_read_decode_hits(rc, &hits, &e), CREC_ERR_NOTFOUND);
    cr_assert_eq(crec_fmt_read_decode_value(rc, 0, v, &e), CREC_ERR_ARG);
    crec_fmt_cursor_free(rc);
    crec_fmt_reader_free(r);
    unlink(path);
    crec_fmt_buf_free(&b);
    crec_fmt_buf_free(&q);
}

static const uint8_t *frame_body(const crec_fmt_buf *b, int kind, size_t *len)
{
    crec_fmt_cur c = {b->data, b->len, 0};
    const uint8_t *body;
    int k;

    cr_assert_eq(crec_fmt_frame_next(&c, &k, &body, len, NULL), CREC_OK);
    cr_assert_eq(k, kind);
    cr_assert_eq(c.pos, b->len, "one record");
    c.len--; /* the same record cut one byte short */
    c.pos = 0;
    cr_assert_eq(crec_fmt_frame_next(&c, &k, &body, len, NULL), CREC_ERR_CORRUPT);
    c = (crec_fmt_cur){b->data, b->len, 0};
    cr_assert_eq(crec_fmt_frame_next(&c, &k, &body, len, NULL), CREC_OK);
    return body;
}

Test(format, snapshot_code_symbol_roundtrip)
{
    crec_error e = {0};
    for (int edge = 0; edge < 2; edge++) {
        uint64_t x = edge ? UINT64_MAX : 0;
        uint64_t top = edge ? CREC_FMT_ADDR_LIMIT - 4096 : 0; /* the last page there is */
        crec_fmt_buf b = {0};
        size_t len;
        crec_fmt_snap_page pages[3] = {{top, crec_fmt_hash_bytes("a", 1)},
                                       {0x1000, crec_fmt_hash_bytes("", 0)},
                                       {top, crec_fmt_hash_bytes("b", 1)}};
        crec_fmt_snapshot s = {x, edge ? 3 : 0, pages}, so;
        cr_assert_eq(crec_fmt_snap_encode(&b, &s), CREC_OK);
        const uint8_t *body = frame_body(&b, CREC_FMT_K_SNAPSHOT, &len);
        cr_assert_eq(crec_fmt_snap_decode(body, len, &so, &e), CREC_OK, "%s", e.msg);
        cr_assert_eq(so.global_icount, x);
        cr_assert_eq(so.npages, s.npages);
        for (size_t i = 0; i < s.npages; i++)
            cr_assert(memcmp(&so.pages[i], &pages[i], sizeof pages[i]) == 0);
        crec_fmt_snapshot_clear(&so);
        for (size_t n = 0; n < len; n++)
            cr_assert_eq(crec_fmt_snap_decode(body, n, &so, &e), CREC_ERR_CORRUPT);

        crec_fmt_buf_reset(&b);
        crec_fmt_code m = {top, 4096 * edge, x, x, pages[0].blob, edge ? "/lib/ld.so" : NULL,
                           edge ? 10 : 0},
                      mo;
        cr_assert_eq(crec_fmt_code_encode(&b, &m), CREC_OK);
        body = frame_body(&b, CREC_FMT_K_CODE, &len);
        cr_assert_eq(crec_fmt_code_decode(body, len, &mo, &e), CREC_OK, "%s", e.msg);
        cr_assert(mo.addr == m.addr && mo.len == m.len && mo.prot == x && mo.file_off == x);
        cr_assert(memcmp(&mo.blob, &m.blob, 16) == 0);
        cr_assert_eq(mo.name_len, m.name_len);
        cr_assert(memcmp(mo.name, edge ? m.name : "", mo.name_len) == 0);
        for (size_t n = 0; n < len; n++)
            cr_assert_eq(crec_fmt_code_decode(body, n, &mo, &e), CREC_ERR_CORRUPT);

        crec_fmt_buf_reset(&b);
        crec_fmt_symbol y = {pages[2].blob, x, x, edge ? UINT32_MAX : 0, "", 0}, yo;
        cr_assert_eq(crec_fmt_sym_encode(&b, &y), CREC_OK);
        body = frame_body(&b, CREC_FMT_K_SYMBOL, &len);
        cr_assert_eq(crec_fmt_sym_decode(body, len, &yo, &e), CREC_OK, "%s", e.msg);
        cr_assert(yo.addr == x && yo.size == x && yo.type == y.type && yo.name_len == 0);
        cr_assert(memcmp(&yo.blob, &y.blob, 16) == 0);
        for (size_t n = 0; n < len; n++)
            cr_assert_eq(crec_fmt_sym_decode(body, n, &yo, &e), CREC_ERR_CORRUPT);
        crec_fmt_buf_free(&b);
    }
}

Test(format, hash_is_byte_order_fixed)
{
    /* Stored as XXH3-128's low half then high half, each little-endian. */
    XXH128_hash_t x = XXH3_128bits("crec", 4);
    crec_fmt_hash h = crec_fmt_hash_bytes("crec", 4);
    cr_assert_eq(get_u64le(h.b), x.low64);
    cr_assert_eq(get_u64le(h.b + 8), x.high64);
}

/* ---- whole files -------------------------------------------------------------- */

Test(format, sample_reads_back)
{
    size_t len;
    uint8_t *p = sample_bytes(2, 64, 1, &len);
    crec_error e = {0};
    crec_fmt_reader *r;
    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r, &e), CREC_OK, "%s", e.msg);
    const crec_fmt_header *h = crec_fmt_reader_header(r);
    crec_fmt_header want = sample_header();
    cr_assert_eq(h->version, CREC_FMT_VERSION);
    cr_assert_eq(h->page_size, 4096);
    cr_assert_eq(h->cache_entries, 65536);
    cr_assert_eq(h->cache_granule, 8);
    cr_assert_eq(h->keyframe_interval, 1000000);
    cr_assert_eq(h->snapshot_interval, 10);
    cr_assert_eq(h->start_sec, 1700000000);
    cr_assert_eq(h->start_nsec, 123456789);
    cr_assert_str_eq(h->crec_version, "0.1.0-test");
    cr_assert_eq(h->argc, 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert_str_eq(h->argv[i], want.argv[i]);
    cr_assert_eq(h->envc, 2);
    cr_assert_str_eq(h->envp[1], "PATH=/usr/bin");
    cr_assert_eq(h->ncpuid, 2);
    cr_assert(memcmp(h->cpuid, want.cpuid, 2 * sizeof *h->cpuid) == 0);
    cr_assert_eq(crec_fmt_reader_truncated(r, NULL, NULL), 0);

    /* key frames: thread 2's offsets point at its first records */
    crec_fmt_cursor *c;
    int kind;
    const uint8_t *body;
    size_t blen;
    crec_fmt_keyframe kf;
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, &e), CREC_OK);
    cr_assert_eq(crec_fmt_cursor_next(c, &kind, &body, &blen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_cursor_next(c, &kind, &body, &blen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(kind, CREC_FMT_K_KEYFRAME);
    cr_assert_eq(crec_fmt_kf_decode(body, blen, &kf, &e), CREC_OK);
    cr_assert_eq(kf.tid, 2);
    cr_assert_eq(kf.regs.rip, 0x401002);
    cr_assert_eq(kf.regs.xmm[15][15], 0xaa);
    cr_assert_eq(kf.regs.st[7][9], 0x55);
    cr_assert_eq(crec_fmt_cursor_next(c, &kind, &body, &blen, &e), CREC_ERR_NOTFOUND);
    crec_fmt_cursor_free(c);

    /* READS of thread 2 through the cursor, bare entries */
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_READS, 2, kf.reads_off, &c, &e), CREC_OK);
    uint64_t hits;
    uint8_t v[16];
    cr_assert_eq(crec_fmt_cursor_varint(c, &hits, &e), CREC_OK);
    cr_assert_eq(hits, 0);
    cr_assert_eq(crec_fmt_cursor_read(c, v, 8, &e), CREC_OK);
    cr_assert_eq(v[7], 0xf7);
    crec_fmt_cursor_free(c);

    /* random access: the SYSCALL record of thread 1 at its stream start */
    uint8_t first[2];
    cr_assert_eq(crec_fmt_read_at(r, CREC_FMT_S_EVENTS, 1, 0, first, 2, &e), CREC_OK);
    cr_assert_eq(first[0], CREC_FMT_K_SYSCALL);
    cr_assert_eq(crec_fmt_read_at(r, CREC_FMT_S_EVENTS, 9, 0, first, 1, &e), CREC_ERR_NOTFOUND);

    /* blobs: stored once, found by hash, checked */
    uint8_t code[256];
    for (int i = 0; i < 256; i++)
        code[i] = (uint8_t)(i * 7);
    crec_fmt_hash hc = crec_fmt_hash_bytes(code, sizeof code);
    uint8_t *data;
    size_t dlen;
    cr_assert_eq(crec_fmt_blob_get(r, &hc, &data, &dlen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(dlen, 256);
    cr_assert(memcmp(data, code, 256) == 0);
    crec_free(data);
    crec_fmt_hash he = crec_fmt_hash_bytes("", 0);
    cr_assert_eq(crec_fmt_blob_get(r, &he, &data, &dlen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(dlen, 0);
    crec_free(data);
    crec_fmt_hash hx = crec_fmt_hash_bytes("x", 1);
    cr_assert_eq(crec_fmt_blob_get(r, &hx, &data, &dlen, &e), CREC_ERR_NOTFOUND);

    crec_fmt_summary s;
    cr_assert_eq(crec_fmt_summarize(r, &s, &e), CREC_OK, "%s", e.msg);
    crec_fmt_summary_clear(&s);
    cr_assert_eq(s.nthreads, 2);
    cr_assert_eq(s.nkeyframes, 2);
    cr_assert_eq(s.nsnapshots, 1);
    cr_assert_eq(s.nblobs, 2);
    cr_assert_eq(s.ncode, 1);
    cr_assert_eq(s.nsymbols, 1);
    cr_assert_eq(s.nevents, 11);
    cr_assert_eq(s.instructions, SAMPLE_ICOUNT);
    cr_assert(s.exited && s.exit_value == 3);
    cr_assert_eq(s.file_bytes, len);
    crec_fmt_reader_free(r);
    free(p);
}

/* Parts of blobs, and a table of blobs given by someone else (the index):
 * entries are checked before they are trusted. */
Test(format, blob_parts_and_given_tables)
{
    size_t len, n, dlen;
    uint8_t *p = sample_bytes(2, 64, 1, &len), part[64], code[256];
    crec_error e = {0};
    crec_fmt_reader *r, *r2;
    const crec_fmt_blob_loc *locs;
    const uint8_t *view;
    crec_fmt_blob_loc t[2];
    uint64_t size;

    for (int i = 0; i < 256; i++)
        code[i] = (uint8_t)(i * 7);
    crec_fmt_hash hc = crec_fmt_hash_bytes(code, sizeof code);
    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_size(r, &hc, &size, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(size, 256);
    cr_assert_eq(crec_fmt_blob_read(r, &hc, 100, part, 50, &e), CREC_OK, "%s", e.msg);
    cr_expect(memcmp(part, code + 100, 50) == 0);
    cr_expect_eq(crec_fmt_blob_read(r, &hc, 250, part, 7, &e), CREC_ERR_ARG);
    cr_assert_eq(crec_fmt_blob_view(r, &hc, &view, &dlen, &e), CREC_OK, "%s", e.msg);
    cr_expect(dlen == 256 && memcmp(view, code, 256) == 0);
    cr_assert_eq(crec_fmt_blob_table(r, &locs, &n, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(n, 2);
    memcpy(t, locs, sizeof t);

    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_read(r2, &hc, 0, part, 64, &e), CREC_OK, "%s", e.msg);
    cr_expect(memcmp(part, code, 64) == 0);
    crec_fmt_reader_free(r2);

    for (size_t i = 0; i < 2; i++)
        t[i].off += memcmp(&t[i].hash, &hc, sizeof hc) == 0; /* a wrong offset */
    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_blob_read(r2, &hc, 0, part, 8, &e), CREC_ERR_CORRUPT);
    cr_expect_eq(crec_fmt_blob_view(r2, &hc, &view, &dlen, &e), CREC_ERR_CORRUPT);
    memcpy(t, locs, sizeof t);
    t[1].off = UINT64_MAX - 2; /* past the end of BLOBS */
    cr_expect_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_ERR_CORRUPT);
    memcpy(t, locs + 1, sizeof *t); /* not sorted */
    memcpy(t + 1, locs, sizeof *t);
    cr_expect_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_ERR_CORRUPT);
    crec_fmt_reader_free(r2);
    crec_fmt_reader_free(r);
    free(p);
}

/* A paged code file: `len` bytes of code named whole; pages in `stored`
 * (a bit each) stored as their blobs; `extra` (if not NULL) one more blob. */
static uint8_t *paged_file(const uint8_t *code, size_t len, unsigned stored, const void *extra,
                           size_t extra_len, crec_fmt_hash *h, size_t *flen)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header hd = sample_header();
    crec_fmt_writer *w;
    crec_error e = {0};
    crec_fmt_hash again;

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &hd, NULL, &w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_code_put_paged(w, code, len, h, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_code_put_paged(w, code, len, &again, &e), CREC_OK, "%s", e.msg);
    cr_assert(memcmp(h, &again, sizeof again) == 0);
    cr_assert(memcmp(h, &(crec_fmt_hash){0}, sizeof *h) != 0);
    for (size_t i = 0; i * CREC_PAGE_SIZE < len; i++)
        if (stored >> i & 1) {
            size_t off = i * CREC_PAGE_SIZE;
            cr_assert_eq(crec_fmt_blob_put_pinned(w, code + off, len - off < CREC_PAGE_SIZE ?
                                                  len - off : CREC_PAGE_SIZE, NULL, &e), CREC_OK);
        }
    if (extra)
        cr_assert_eq(crec_fmt_blob_put(w, extra, extra_len, NULL, &e), CREC_OK);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    return take_file(path, flen);
}

/* Version 5's PAGED record: the pages stored read back, the others as
 * zeros that crec_fmt_blob_recorded tells apart; a part read across both;
 * a table given back; a page blob of the wrong length, a PAGED record in a
 * version 4 file. */
Test(format, paged_code)
{
    enum { LEN = 3 * CREC_PAGE_SIZE + 100 };
    uint8_t *code = malloc(LEN), *zero = calloc(1, CREC_PAGE_SIZE), part[200];
    size_t flen, n, dlen;
    crec_fmt_hash h;
    crec_error e = {0};
    crec_fmt_reader *r, *r2;
    const crec_fmt_blob_loc *locs;
    const uint8_t *view;
    uint64_t size;
    int all;

    for (size_t i = 0; i < LEN; i++)
        code[i] = (uint8_t)(i * 2654435761u >> 13);
    uint8_t *p = paged_file(code, LEN, 0xA /* pages 1 and 3 */, NULL, 0, &h, &flen);
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_size(r, &h, &size, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(size, LEN);
    cr_assert_eq(crec_fmt_blob_view(r, &h, &view, &dlen, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(dlen, LEN);
    cr_expect(memcmp(view, zero, CREC_PAGE_SIZE) == 0, "page 0 was not stored");
    cr_expect(memcmp(view + CREC_PAGE_SIZE, code + CREC_PAGE_SIZE, CREC_PAGE_SIZE) == 0);
    cr_expect(memcmp(view + 2 * CREC_PAGE_SIZE, zero, CREC_PAGE_SIZE) == 0);
    cr_expect(memcmp(view + 3 * CREC_PAGE_SIZE, code + 3 * CREC_PAGE_SIZE, 100) == 0);
    cr_assert_eq(crec_fmt_blob_recorded(r, &h, CREC_PAGE_SIZE, CREC_PAGE_SIZE, &all, &e), CREC_OK);
    cr_expect_eq(all, 1);
    cr_assert_eq(crec_fmt_blob_recorded(r, &h, CREC_PAGE_SIZE - 1, 2, &all, &e), CREC_OK);
    cr_expect_eq(all, 0);
    cr_assert_eq(crec_fmt_blob_recorded(r, &h, 3 * CREC_PAGE_SIZE, 100, &all, &e), CREC_OK);
    cr_expect_eq(all, 1);
    cr_expect_eq(crec_fmt_blob_recorded(r, &h, 3 * CREC_PAGE_SIZE, 101, &all, &e), CREC_ERR_ARG);
    /* a part across pages 1 (stored) and 2 (not) */
    cr_assert_eq(crec_fmt_blob_read(r, &h, 2 * CREC_PAGE_SIZE - 100, part, 200, &e), CREC_OK,
                 "%s", e.msg);
    cr_expect(memcmp(part, code + 2 * CREC_PAGE_SIZE - 100, 100) == 0);
    cr_expect(memcmp(part + 100, zero, 100) == 0);
    cr_expect_eq(crec_fmt_blob_read(r, &h, LEN - 10, part, 11, &e), CREC_ERR_ARG);
    /* the table, given to another reader, reads the same */
    cr_assert_eq(crec_fmt_blob_table(r, &locs, &n, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(n, 3);
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table_set(r2, locs, n, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_read(r2, &h, 2 * CREC_PAGE_SIZE - 100, part, 200, &e), CREC_OK);
    cr_expect(memcmp(part, code + 2 * CREC_PAGE_SIZE - 100, 100) == 0);
    crec_fmt_reader_free(r2);
    crec_fmt_reader_free(r);

    /* the same file called version 4: the PAGED record is refused */
    p[8] = 4;
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_blob_size(r, &h, &size, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "a PAGED record in a version 4 file"), "%s", e.msg);
    crec_fmt_reader_free(r);
    free(p);

    /* a table whose entry for page 1 says 100 bytes, or a wrong place */
    p = paged_file(code, LEN, 0x2, NULL, 0, &h, &flen);
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table(r, &locs, &n, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(n, 2);
    crec_fmt_blob_loc t[2];
    memcpy(t, locs, sizeof t);
    size_t pg = t[0].len == CREC_PAGE_SIZE ? 0 : 1;
    cr_assert_eq(t[pg].len, CREC_PAGE_SIZE);
    t[pg].len = 100;
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_blob_view(r2, &h, &view, &dlen, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "a page of paged code is a blob of 100 bytes, not 4096"), "%s", e.msg);
    crec_fmt_reader_free(r2);
    t[pg].len = CREC_PAGE_SIZE;
    t[pg].off -= 1;
    cr_assert_eq(crec_fmt_reader_open_mem(p, flen, &r2, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_table_set(r2, t, 2, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_blob_read(r2, &h, CREC_PAGE_SIZE, part, 8, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "does not match its hash"), "%s", e.msg);
    crec_fmt_reader_free(r2);
    crec_fmt_reader_free(r);
    free(p);
    free(zero);
    free(code);
}

Test(format, stream_bytes_across_many_chunks)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_writer_opts o = {.chunk_size = 1000};
    crec_fmt_writer *w;
    crec_error e = {0};
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, &o, &w, &e), CREC_OK);
    enum { N = 300000 };
    uint8_t *data = malloc(N);
    for (size_t i = 0; i < N; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t i = 0; i < N;) {
        size_t k = (i * 7 % 5000) + 1;
        if (k > N - i)
            k = N - i;
        cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_READS, 7, data + i, k, &e), CREC_OK);
        cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_SEQ, 7, data + i, 1, &e), CREC_OK);
        if (i % 3 == 0)
            cr_assert_eq(crec_fmt_flush(w, CREC_FMT_S_READS, 7, &e), CREC_OK);
        i += k;
    }
    cr_assert_eq(crec_fmt_writer_offset(w, CREC_FMT_S_READS, 7), N);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_KEYFRAMES, 3, "x", 1, &e), CREC_ERR_ARG);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);

    crec_fmt_reader *r;
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    uint8_t *buf = malloc(N);
    for (uint64_t off = 0; off < N; off += 9973) {
        size_t n = (size_t)(N - off < 4000 ? N - off : 4000);
        cr_assert_eq(crec_fmt_read_at(r, CREC_FMT_S_READS, 7, off, buf, n, &e), CREC_OK);
        cr_assert(memcmp(buf, data + off, n) == 0);
    }
    crec_fmt_cursor *c;
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_READS, 7, 0, &c, &e), CREC_OK);
    cr_assert_eq(crec_fmt_cursor_read(c, buf, N, &e), CREC_OK);
    cr_assert(memcmp(buf, data, N) == 0);
    cr_assert_eq(crec_fmt_cursor_read(c, buf, 1, &e), CREC_ERR_NOTFOUND);
    crec_fmt_cursor_free(c);
    crec_fmt_stream_info si;
    cr_assert_eq(crec_fmt_reader_stream(r, 0, &si, &e), CREC_OK);
    cr_assert_eq(si.type, CREC_FMT_S_READS);
    cr_assert_eq(si.raw_bytes, N);
    cr_assert_geq(si.nchunks, N / 1000);
    crec_fmt_reader_free(r);
    free(buf);
    free(data);
    unlink(path);
}

/*
 * A header value this reader can't honour, in an otherwise valid file: the
 * file is refused, the message names the field and both values.
 */
static void expect_header_refused(crec_fmt_header h, const char *field, const char *got,
                                  const char *want)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_writer *w;
    crec_fmt_reader *r = NULL;
    crec_error e = {0};

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, NULL, &w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_READS, 1, "x", 1, &e), CREC_OK);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_reader_open(path, &r, &e), CREC_ERR_UNSUPPORTED, "%s: %s", field,
                 e.msg);
    cr_expect(strstr(e.msg, field) && strstr(e.msg, got) && strstr(e.msg, want),
              "'%s' should name %s, %s and %s", e.msg, field, got, want);
    crec_fmt_reader_free(r);
    unlink(path);
}

Test(format, header_page_size_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.page_size = 65536;
    expect_header_refused(h, "page size", "65536", "4096");
}

Test(format, header_cache_granule_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.cache_granule = 64;
    expect_header_refused(h, "cache granule", "64", "8");
}

Test(format, header_cache_entries_are_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.cache_entries = 1000;
    expect_header_refused(h, "cache entries", "1000", "power of two");
    h.cache_entries = 1ull << 30;
    expect_header_refused(h, "cache entries", "1073741824", "16777216");
}

Test(format, header_architecture_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.arch = 2;
    expect_header_refused(h, "guest architecture", "2", "x86-64");
}

Test(format, header_byte_order_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.host_order = 7;
    expect_header_refused(h, "host byte order", "7", "0 (little-endian) or 1");
}

/* An interval of 0: "placed by cost" from version 4; before, refused. */
static void expect_interval_zero(crec_fmt_header h, const char *field)
{
    crec_fmt_buf b = {0};
    crec_fmt_header got;
    crec_error e = {0};

    cr_assert_eq(fmt_header_encode(&b, &h), CREC_OK);
    cr_expect_eq(fmt_header_decode(4, b.data, b.len, &got, &e), CREC_OK, "%s", e.msg);
    crec_fmt_header_clear(&got);
    cr_expect_eq(fmt_header_decode(3, b.data, b.len, &got, &e), CREC_ERR_UNSUPPORTED);
    cr_expect(strstr(e.msg, field) && strstr(e.msg, "1 or more"), "%s", e.msg);
    crec_fmt_buf_free(&b);
}

Test(format, header_keyframe_interval_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.keyframe_interval = 0;
    expect_interval_zero(h, "key frame interval");
}

Test(format, header_snapshot_interval_is_honoured_or_refused)
{
    crec_fmt_header h = sample_header();
    h.snapshot_interval = 0;
    expect_interval_zero(h, "snapshot interval");
}

Test(format, header_v4_checkpoint_interval)
{
    crec_fmt_header h = sample_header(), got;
    crec_fmt_buf b = {0};
    crec_error e = {0};

    h.checkpoint_interval = 123456;
    cr_assert_eq(fmt_header_encode(&b, &h), CREC_OK);
    cr_assert_eq(fmt_header_decode(4, b.data, b.len, &got, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(got.checkpoint_interval, 123456);
    crec_fmt_header_clear(&got);
    /* a version-3 reader would find bytes left over */
    cr_expect_eq(fmt_header_decode(3, b.data, b.len, &got, &e), CREC_ERR_CORRUPT);
    crec_fmt_buf_free(&b);
}

Test(format, empty_file_and_empty_strings)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    char *argv[] = {"", NULL};
    crec_fmt_header h = {.arch = 1, .page_size = 4096, .cache_entries = 16, .cache_granule = 8,
                         .keyframe_interval = 1, .snapshot_interval = 1, .argc = 1,
                         .argv = argv};
    crec_fmt_writer *w;
    crec_error e = {0};
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, NULL, &w, &e), CREC_OK);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_READS, 1, "", 0, &e), CREC_OK);
    cr_assert_eq(crec_fmt_flush_all(w, &e), CREC_OK);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK);
    crec_fmt_reader *r;
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    const crec_fmt_header *rh = crec_fmt_reader_header(r);
    cr_assert_eq(rh->argc, 1);
    cr_assert_str_eq(rh->argv[0], "");
    cr_assert_str_eq(rh->crec_version, "");
    cr_assert_eq(rh->envc, 0);
    cr_assert_eq(crec_fmt_reader_nstreams(r), 0);
    crec_fmt_summary s;
    cr_assert_eq(crec_fmt_summarize(r, &s, &e), CREC_OK, "%s", e.msg);
    crec_fmt_summary_clear(&s);
    cr_assert_eq(s.nchunks, 0);
    cr_assert_eq(s.instructions, 0);
    crec_fmt_cursor *c;
    cr_assert_eq(crec_fmt_cursor_open(r, CREC_FMT_S_EVENTS, 1, 0, &c, &e), CREC_OK);
    uint8_t b;
    cr_assert_eq(crec_fmt_cursor_read(c, &b, 1, &e), CREC_ERR_NOTFOUND);
    crec_fmt_cursor_free(c);
    crec_fmt_reader_free(r);
    unlink(path);
}

Test(format, many_threads)
{
    size_t len;
    uint8_t *p = sample_bytes(300, 4096, 1, &len);
    crec_fmt_summary s;
    crec_error e = {0};
    cr_assert_eq(info_mem(p, len, &s, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(s.nthreads, 300);
    cr_assert_eq(s.nkeyframes, 300);
    cr_assert_eq(s.nstreams, 300 * 3 + 6);
    free(p);
}

Test(format, open_file_without_directory_is_truncated)
{
    size_t len, full;
    uint8_t *p = sample_bytes(2, 64, 0, &len);
    uint8_t *q = sample_bytes(2, 64, 1, &full);
    cr_assert_lt(len, full);
    crec_fmt_summary s;
    crec_error e = {0};
    cr_assert_eq(info_mem(p, len, &s, &e), CREC_OK, "%s", e.msg);
    cr_assert(s.truncated);
    cr_assert_eq(s.truncated_at, len);
    cr_assert_eq(s.nthreads, 2);
    /* the same bytes as the complete file, up to the directory */
    cr_assert(memcmp(p, q, len) == 0);
    free(p);
    free(q);
}

/* ---- corruption ---------------------------------------------------------------- */

Test(format, truncated_at_every_offset)
{
    size_t len;
    uint8_t *p = sample_bytes(1, 64, 1, &len);
    size_t opened = 0;
    uint64_t last_at = 0;
    for (size_t n = 0; n < len; n++) {
        uint8_t *q = malloc(n ? n : 1); /* exact size: ASan sees overreads */
        memcpy(q, p, n);
        crec_fmt_summary s;
        crec_error e = {0};
        if (info_mem(q, n, &s, &e) == CREC_OK) {
            opened++;
            cr_assert(s.truncated, "cut at %zu not reported", n);
            cr_assert_leq(s.truncated_at, n);
            cr_assert_geq(s.truncated_at, last_at);
            last_at = s.truncated_at;
        } else {
            /* only a cut inside the preamble or header chunk fails */
            cr_assert_lt(n, 200, "cut at %zu: %s", n, e.msg);
        }
        free(q);
    }
    cr_assert_gt(opened, len - 200);
    cr_log_info("truncation: %zu cuts, %zu opened", len, opened);
    free(p);
}

/* Is every blob that the complete records of stream `type` name in the
 * file?  (MMAP events name code blobs, snapshots name pages.) */
static int named_blobs_present(crec_fmt_reader *r, int type, uint32_t tid)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, ok = 1;
    uint64_t blen;
    crec_error e = {0};

    if (crec_fmt_cursor_open(r, type, tid, 0, &c, &e) != CREC_OK)
        return 1; /* the stream has no chunk in the file */
    while (ok && crec_fmt_cursor_next(c, &kind, &body, &len, &e) == CREC_OK) {
        crec_fmt_event ev;
        crec_fmt_snapshot snap;
        if (kind == CREC_FMT_K_MMAP) {
            cr_assert_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, kind, body, len, &ev, &e), CREC_OK);
            ok = crec_fmt_blob_size(r, &ev.u.mmap.blob, &blen, &e) == CREC_OK;
        } else if (kind == CREC_FMT_K_SNAPSHOT) {
            cr_assert_eq(crec_fmt_snap_decode(body, len, &snap, &e), CREC_OK);
            for (size_t i = 0; ok && i < snap.npages; i++)
                ok = crec_fmt_blob_size(r, &snap.pages[i].blob, &blen, &e) == CREC_OK;
            crec_fmt_snapshot_clear(&snap);
        }
    }
    crec_fmt_cursor_free(c);
    return ok;
}

/* A recording cut at any byte holds the blobs that its records name: the
 * writer puts the BLOBS bytes it holds in the file before a chunk of a
 * stream whose records name blobs, however the streams' chunks fill (a
 * recorder killed with SIGKILL left MMAP events naming code blobs that
 * never reached the file, and replay failed on "no such blob"). */
Test(format, a_cut_file_holds_the_blobs_its_records_name)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_writer_opts o = {.chunk_size = 1024}; /* a page blob spans chunks */
    crec_fmt_writer *w;
    crec_error e = {0};
    crec_fmt_buf b = {0};

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, &o, &w, &e), CREC_OK, "%s", e.msg);
    for (uint32_t i = 0; i < 12; i++) {
        uint8_t code[100], page[4096];
        crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP};
        crec_fmt_snap_page sp = {0x10000 + 4096 * (uint64_t)i, {{0}}};
        crec_fmt_snapshot snap = {i, 1, &sp};
        crec_fmt_keyframe kf = {.tid = 1, .global_icount = i, .thread_icount = i};
        memset(code, (int)i, sizeof code);
        memset(page, (int)(i + 100), sizeof page);
        /* a code mapping, as the recorder writes one: its blob, then its event */
        ev.u.mmap.op = CREC_FMT_MM_MAP;
        ev.u.mmap.flags = CREC_FMT_EV_HAS_HASH;
        ev.u.mmap.addr = 0x400000 + 4096 * (uint64_t)i;
        ev.u.mmap.len = sizeof code;
        ev.u.mmap.prot = CREC_FMT_PROT_READ | CREC_FMT_PROT_EXEC;
        cr_assert_eq(crec_fmt_blob_put_pinned(w, code, sizeof code, &ev.u.mmap.blob, &e), CREC_OK);
        crec_fmt_buf_reset(&b);
        cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
        cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_EVENTS, 1, &b, &e), CREC_OK, "%s", e.msg);
        /* its chunk cut now, as when the buffer fills (BLOBS still holds bytes) */
        if (i % 3 != 2)
            cr_assert_eq(crec_fmt_flush(w, CREC_FMT_S_EVENTS, 1, &e), CREC_OK);
        /* a key frame with a snapshot of one page */
        kf.events_off = crec_fmt_writer_offset(w, CREC_FMT_S_EVENTS, 1);
        crec_fmt_buf_reset(&b);
        cr_assert_eq(crec_fmt_kf_encode(&b, &kf), CREC_OK);
        cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_KEYFRAMES, 0, &b, &e), CREC_OK);
        cr_assert_eq(crec_fmt_blob_put(w, page, sizeof page, &sp.blob, &e), CREC_OK);
        crec_fmt_buf_reset(&b);
        cr_assert_eq(crec_fmt_snap_encode(&b, &snap), CREC_OK);
        cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_SNAPSHOTS, 0, &b, &e), CREC_OK);
        if (i % 2)
            cr_assert_eq(crec_fmt_flush(w, CREC_FMT_S_SNAPSHOTS, 0, &e), CREC_OK);
        cr_assert_eq(crec_fmt_flush(w, CREC_FMT_S_KEYFRAMES, 0, &e), CREC_OK);
    }
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    crec_fmt_buf_free(&b);
    size_t len, cuts = 0;
    uint8_t *p = take_file(path, &len);
    for (size_t n = 0; n <= len; n++) {
        crec_fmt_reader *r;
        uint8_t *q = malloc(n ? n : 1);
        memcpy(q, p, n);
        if (crec_fmt_reader_open_mem(q, n, &r, &e) == CREC_OK) {
            cr_assert(named_blobs_present(r, CREC_FMT_S_EVENTS, 1),
                      "cut at %zu: an MMAP event names a blob the file lacks", n);
            cr_assert(named_blobs_present(r, CREC_FMT_S_SNAPSHOTS, 0),
                      "cut at %zu: a snapshot names a blob the file lacks", n);
            crec_fmt_reader_free(r);
            cuts++;
        }
        free(q);
    }
    cr_assert_gt(cuts, len / 2);
    free(p);
}

/* A key frame of a cut file is reached when its thread's READS, EVENTS and
 * SEQ bytes before it are all in the file. */
Test(format, a_key_frame_is_reached_with_its_seq_bytes)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    crec_error e = {0};
    size_t len;

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, NULL, &w, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_SEQ, 1, "01234", 5, &e), CREC_OK);
    cr_assert_eq(crec_fmt_flush(w, CREC_FMT_S_SEQ, 1, &e), CREC_OK);
    cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_SEQ, 1, "56789", 5, &e), CREC_OK);
    uint8_t *p = take_file(path, &len); /* the recorder killed here */
    crec_fmt_writer_free(w);
    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r, &e), CREC_OK, "%s", e.msg);
    crec_fmt_keyframe at5 = {.tid = 1, .seq_off = 5}, at10 = {.tid = 1, .seq_off = 10};
    cr_expect(crec_fmt_kf_reached(r, &at5));
    cr_expect(!crec_fmt_kf_reached(r, &at10), "SEQ bytes 5..10 never reached the file");
    crec_fmt_reader_free(r);
    free(p);
}

/*
 * Every byte flipped (two ways) in a valid file: a flip before the 32-byte
 * trailer is reported corrupt, every one (each byte is under a checksum: a
 * chunk's, the trailer's, or the preamble's magic and version); a flip
 * inside the trailer makes the directory unfindable, and the file then
 * reads as one cut short, which info says (truncated).  No flip is read
 * as a good, complete file, but one: the version 5 flipped to 4 (below).
 * Measured: 4552 of 4616 variants of the sample reported corrupt (98.6%),
 * the other 64 are the trailer's.
 */
Test(format, byte_flipped_at_every_offset)
{
    size_t len;
    uint8_t *p = sample_bytes(1, 64, 1, &len);
    uint8_t *q = malloc(len);
    size_t corrupt = 0, truncated = 0, as_older = 0;
    for (size_t i = 0; i < len; i++) {
        for (int m = 0; m < 2; m++) {
            crec_fmt_summary s;
            crec_error e = {0};
            memcpy(q, p, len);
            q[i] ^= m ? 0x01 : 0xff;
            if (info_mem(q, len, &s, &e) != CREC_OK) {
                corrupt++;
                continue;
            }
            /* The version is under no checksum: version 5 with its low bit
             * flipped is version 4, and this sample, holding no record of
             * version 5, is a good version 4 file too. */
            if (i == 8 && m && CREC_FMT_VERSION == 5) {
                crec_fmt_reader *r;
                cr_assert_eq(crec_fmt_reader_open_mem(q, len, &r, &e), CREC_OK);
                cr_assert_eq(crec_fmt_reader_header(r)->version, 4);
                crec_fmt_reader_free(r);
                as_older++;
                continue;
            }
            cr_assert_geq(i, len - FMT_TRAILER_LEN, "a flip at byte %zu of %zu (0x%02x) went unnoticed", i,
                          len, m ? 0x01 : 0xff);
            cr_assert(s.truncated, "a flip in the trailer (byte %zu) must read as a cut file", i);
            truncated++;
        }
    }
    cr_assert_eq(corrupt + truncated + as_older, 2 * len);
    cr_assert_eq(as_older, CREC_FMT_VERSION == 5);
    cr_assert_eq(truncated, 2 * FMT_TRAILER_LEN, "only the trailer's flips read as a cut file");
    cr_log_info("byte flips: %zu variants, %zu reported corrupt (%.1f%%), %zu in the trailer "
                "read as cut short", 2 * len, corrupt, 100.0 * (double)corrupt / (double)(2 * len),
                truncated);
    free(q);
    free(p);
}

Test(format, version_refused_with_both_numbers)
{
    size_t len;
    uint8_t *p = sample_bytes(1, 64, 1, &len);
    crec_error e = {0};
    put_u32le(p + 8, 9);
    cr_assert_eq(info_mem(p, len, NULL, &e), CREC_ERR_VERSION);
    cr_assert(strstr(e.msg, "unsupported format version 9 (this crec reads 1 to 5)"), "%s", e.msg);
    free(p);
}

/* Offset of the first data chunk: after the preamble and header chunk. */
static size_t first_data_chunk(const uint8_t *p)
{
    return 16 + 40 + get_u32le(p + 16 + 24);
}

Test(format, byte_swapped_fields_are_corrupt)
{
    size_t len;
    uint8_t *p = sample_bytes(1, 64, 1, &len);
    uint8_t *q = malloc(len);
    crec_error e = {0};

    /* version written big-endian */
    memcpy(q, p, len);
    put_u32be(q + 8, 1);
    cr_assert_eq(info_mem(q, len, NULL, &e), CREC_ERR_VERSION);
    cr_assert(strstr(e.msg, "16777216"), "%s", e.msg);

    /* a chunk's lengths written big-endian, checksum made to match */
    size_t c0 = first_data_chunk(p);
    for (int field = 24; field <= 28; field += 4) {
        memcpy(q, p, len);
        put_u32be(q + c0 + field, get_u32le(p + c0 + field));
        chunk_resum(q + c0, get_u32le(p + c0 + 24));
        cr_assert_eq(info_mem(q, len, NULL, &e), CREC_ERR_CORRUPT, "field %d", field);
        cr_assert(strstr(e.msg, "out of range") || strstr(e.msg, "does not match"), "%s", e.msg);
    }
    /* the stream offset of a chunk written big-endian */
    memcpy(q, p, len);
    put_u64(q + c0 + 16, get_u64le(p + c0 + 16) + 64, 1);
    chunk_resum(q + c0, get_u32le(p + c0 + 24));
    cr_assert_eq(info_mem(q, len, NULL, &e), CREC_ERR_CORRUPT);

    /* the trailer's directory offset big-endian, trailer checksum recomputed */
    memcpy(q, p, len);
    uint8_t *t = q + len - 32;
    put_u64(t, get_u64le(p + len - 32), 1);
    put_u64(t + 16, XXH3_64bits(t, 16), 0);
    cr_assert_eq(info_mem(q, len, NULL, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "trailer"), "%s", e.msg);
    free(q);
    free(p);
}

/* ---- tests/corrupt/ hex files: SQLite-style dumps of bad files -------------------------- */

/* Parse a dump: '#' lines are comments ("# expect: TEXT" names the error,
 * "ok" or "truncated" success); other lines "OFFSET: hex bytes". */
static uint8_t *load_hex(const char *path, size_t *len, char *expect, size_t elen)
{
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    size_t cap = 4096, n = 0;
    uint8_t *p = malloc(cap);
    char line[1024];
    expect[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#') {
            if (strncmp(line, "# expect: ", 10) == 0)
                snprintf(expect, elen, "%s", line + 10);
            continue;
        }
        char *s = strchr(line, ':');
        s = s ? s + 1 : line;
        unsigned v;
        int k;
        while (sscanf(s, " %2x%n", &v, &k) == 1) {
            if (n == cap)
                p = realloc(p, cap *= 2);
            p[n++] = (uint8_t)v;
            s += k;
        }
    }
    fclose(f);
    *len = n;
    return p;
}

Test(format, corrupt_hex_dumps)
{
    DIR *d = opendir("tests/corrupt");
    cr_assert(d, "run from the source root");
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(d)) != NULL) {
        size_t nl = strlen(de->d_name);
        if (nl < 5 || strcmp(de->d_name + nl - 4, ".hex") != 0)
            continue;
        char path[512], expect[1024];
        snprintf(path, sizeof path, "tests/corrupt/%s", de->d_name);
        size_t len;
        uint8_t *p = load_hex(path, &len, expect, sizeof expect);
        uint8_t *q = malloc(len ? len : 1);
        memcpy(q, p, len);
        crec_fmt_summary s;
        crec_error e = {0};
        int rc = info_mem(q, len, &s, &e);
        if (strcmp(expect, "ok") == 0 || strcmp(expect, "truncated") == 0) {
            cr_assert_eq(rc, CREC_OK, "%s: %s", path, e.msg);
            cr_assert_eq(s.truncated, expect[0] == 't', "%s", path);
        } else {
            cr_assert_neq(rc, CREC_OK, "%s: no error", path);
            cr_assert(expect[0] && strstr(e.msg, expect), "%s: got '%s', expected '%s'", path,
                      e.msg, expect);
        }
        free(q);
        free(p);
        cases++;
    }
    closedir(d);
    cr_assert_gt(cases, 5);
}

/* ---- fault injection ------------------------------------------------------------- */

Test(format, every_allocation_failure_in_writer)
{
    int done = 0;
    for (unsigned long n = 1; !done && n < 100000; n++) {
        char path[] = "/tmp/crec-test-XXXXXX";
        int fd = mkstemp(path);
        crec_error e = {0};
        crec_alloc_fail_after(n);
        int rc = sample_write_fd(fd, path, 2, 64, 1, &e);
        crec_alloc_fail_after(0);
        cr_assert(rc == CREC_OK || rc == CREC_ERR_NOMEM, "n=%lu rc=%d %s", n, rc, e.msg);
        done = rc == CREC_OK;
        unlink(path);
    }
    cr_assert(done);
}

Test(format, every_allocation_failure_in_reader)
{
    size_t len;
    uint8_t *p = sample_bytes(2, 64, 1, &len);
    for (int variant = 0; variant < 2; variant++) {
        /* variant 1: truncated, so the recovery scan runs */
        size_t n_bytes = variant ? len - 40 : len;
        int done = 0;
        for (unsigned long n = 1; !done && n < 100000; n++) {
            crec_error e = {0};
            crec_fmt_reader *r = NULL;
            crec_alloc_fail_after(n);
            int rc = crec_fmt_reader_open_mem(p, n_bytes, &r, &e);
            crec_fmt_summary s;
            if (!rc)
                rc = crec_fmt_summarize(r, &s, &e);
            if (!rc)
                crec_fmt_summary_clear(&s);
            if (!rc) {
                crec_fmt_hash h = crec_fmt_hash_bytes("", 0);
                uint8_t *data;
                size_t dl;
                rc = crec_fmt_blob_get(r, &h, &data, &dl, &e);
                if (!rc)
                    crec_free(data);
            }
            crec_alloc_fail_after(0);
            crec_fmt_reader_free(r);
            cr_assert(rc == CREC_OK || rc == CREC_ERR_NOMEM, "n=%lu rc=%d %s", n, rc, e.msg);
            done = rc == CREC_OK;
        }
        cr_assert(done);
    }
    free(p);
}

Test(format, write_error_names_the_file)
{
    crec_fmt_header h = sample_header();
    crec_fmt_writer *w;
    crec_error e = {0};
    int rc = crec_fmt_writer_open("/dev/full", &h, NULL, &w, &e);
    cr_assert_eq(rc, CREC_ERR_IO);
    cr_assert(strstr(e.msg, "/dev/full"), "%s", e.msg);
    rc = crec_fmt_writer_open("/nonexistent-dir/x.crec", &h, NULL, &w, &e);
    cr_assert_eq(rc, CREC_ERR_IO);
    cr_assert(strstr(e.msg, "/nonexistent-dir/x.crec"), "%s", e.msg);
}

Test(format, write_to_closed_pipe_is_io_error)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    signal(SIGPIPE, SIG_IGN);
    crec_fmt_header h = sample_header();
    crec_fmt_writer *w;
    crec_error e = {0};
    /* the header fits in the pipe; the reader then goes away */
    cr_assert_eq(crec_fmt_writer_open_fd(fds[1], "pipe:[test]", &h, NULL, &w, &e), CREC_OK);
    close(fds[0]);
    uint8_t blk[4096] = {1};
    int rc = CREC_OK;
    for (int i = 0; i < 1000 && !rc; i++)
        rc = crec_fmt_write(w, CREC_FMT_S_INDEX, 0, blk, sizeof blk, &e);
    if (!rc)
        rc = crec_fmt_writer_close(w, &e);
    else
        crec_fmt_writer_free(w);
    cr_assert_eq(rc, CREC_ERR_IO);
    cr_assert(strstr(e.msg, "pipe:[test]"), "%s", e.msg);
}

/* ---- pipes: write to one, read from one ---------------------------------------- */

struct pipe_job {
    int fd;
    const uint8_t *p;
    size_t len;
};

static void *feed(void *arg)
{
    struct pipe_job *j = arg;
    for (size_t off = 0; off < j->len;) {
        ssize_t k = write(j->fd, j->p + off, j->len - off > 100 ? 100 : j->len - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    close(j->fd);
    return NULL;
}

static void read_through_pipe(const uint8_t *p, size_t len, int want_trunc)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    struct pipe_job j = {fds[1], p, len};
    pthread_t t;
    pthread_create(&t, NULL, feed, &j);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
    crec_fmt_reader *r;
    crec_error e = {0};
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    crec_fmt_summary s;
    cr_assert_eq(crec_fmt_summarize(r, &s, &e), CREC_OK, "%s", e.msg);
    crec_fmt_summary_clear(&s);
    cr_assert_eq(s.truncated, want_trunc);
    cr_assert_eq(s.nthreads, 2);
    crec_fmt_reader_free(r);
    pthread_join(t, NULL);
    close(fds[0]);
}

Test(format, reads_a_pipe_in_one_pass)
{
    size_t len;
    uint8_t *p = sample_bytes(2, 64, 1, &len);
    read_through_pipe(p, len, 0);
    read_through_pipe(p, len - 7, 1);
    free(p);
}

static void *drain(void *arg)
{
    struct pipe_job *j = arg;
    uint8_t *buf = malloc(1 << 20);
    size_t n = 0;
    ssize_t k;
    while ((k = read(j->fd, buf + n, (1 << 20) - n)) > 0)
        n += (size_t)k;
    j->p = buf;
    j->len = n;
    return NULL;
}

Test(format, writes_to_a_pipe)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    struct pipe_job j = {fds[0], NULL, 0};
    pthread_t t;
    pthread_create(&t, NULL, drain, &j);
    crec_error e = {0};
    cr_assert_eq(sample_write_fd(fds[1], "pipe", 2, 64, 1, &e), CREC_OK, "%s", e.msg);
    pthread_join(t, NULL);
    close(fds[0]);
    crec_fmt_summary s;
    cr_assert_eq(info_mem(j.p, j.len, &s, &e), CREC_OK, "%s", e.msg);
    cr_assert(!s.truncated);
    cr_assert_eq(s.instructions, SAMPLE_ICOUNT);
    free((void *)j.p);
}

/* ---- exact bytes: the encodings of docs/FORMAT.md, independent of the host -- */

Test(format, checkpoint_records)
{
    /* a check point is a key frame's body with kind 0x02; the summary counts
     * it apart, and a key frame is still what it was */
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_keyframe kf = {.tid = 1, .global_icount = 0}, cp = {.tid = 1, .global_icount = 500,
                                                                   .thread_icount = 500,
                                                                   .reads_off = 0};
    crec_fmt_buf b = {0};
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    crec_fmt_summary sum;
    crec_error e = {0};
    const uint8_t *body;
    size_t len;
    int kind;

    cp.regs.rip = 0x401000;
    cr_assert_eq(crec_fmt_cp_encode(&b, &cp), CREC_OK);
    cr_assert_eq(b.data[0], CREC_FMT_K_CHECKPOINT);
    crec_fmt_cur c = {b.data, b.len, 0};
    crec_fmt_keyframe back;
    cr_assert_eq(crec_fmt_frame_next(&c, &kind, &body, &len, &e), CREC_OK);
    cr_assert_eq(crec_fmt_kf_decode(body, len, &back, &e), CREC_OK);
    cr_expect_eq(back.global_icount, 500);
    cr_expect_eq(back.regs.rip, 0x401000);
    crec_fmt_buf_free(&b);

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, NULL, &w, &e), CREC_OK, "%s", e.msg);
    crec_fmt_buf kb = {0};
    cr_assert_eq(crec_fmt_kf_encode(&kb, &kf), CREC_OK);
    cr_assert_eq(crec_fmt_cp_encode(&kb, &cp), CREC_OK);
    cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_KEYFRAMES, 0, &kb, &e), CREC_OK);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    crec_fmt_buf_free(&kb);
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_summarize(r, &sum, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(sum.nkeyframes, 1);
    cr_expect_eq(sum.ncheckpoints, 1);
    crec_fmt_summary_clear(&sum);
    crec_fmt_reader_free(r);
    unlink(path);
}

Test(format, golden_bytes)
{
    crec_fmt_buf b = {0};
    crec_fmt_event ev = {.kind = CREC_FMT_K_CPUID};
    ev.u.cpuid.leaf = 300;
    ev.u.cpuid.subleaf = 0;
    ev.u.cpuid.eax = 0x11223344;
    ev.u.cpuid.ebx = 1;
    ev.u.cpuid.ecx = 0;
    ev.u.cpuid.edx = 0xffffffff;
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    const uint8_t want[] = {0x11, 19, 0xac, 0x02, 0x00, 0x44, 0x33, 0x22, 0x11, 1, 0, 0, 0,
                            0,    0,  0,    0,    0xff, 0xff, 0xff, 0xff};
    cr_assert_eq(b.len, sizeof want);
    cr_assert(memcmp(b.data, want, sizeof want) == 0);

    crec_fmt_buf_reset(&b);
    ev = (crec_fmt_event){.kind = CREC_FMT_K_SYSCALL};
    ev.u.sys.ret = -1; /* svarint 01 */
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    const uint8_t want2[] = {0x10, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00};
    cr_assert_eq(b.len, sizeof want2);
    cr_assert(memcmp(b.data, want2, sizeof want2) == 0);

    crec_fmt_buf_reset(&b);
    uint8_t v[2] = {0xab, 0xcd};
    cr_assert_eq(crec_fmt_read_encode(&b, 128, v, 2), CREC_OK);
    const uint8_t want3[] = {0x80, 0x01, 0xab, 0xcd};
    cr_assert(b.len == 4 && memcmp(b.data, want3, 4) == 0);
    crec_fmt_buf_free(&b);

    /* the preamble of every file */
    size_t len;
    uint8_t *p = sample_bytes(1, 4096, 1, &len);
    const uint8_t pre[16] = {0x89, 'C', 'R', 'E', 'C', '\r', '\n', 0x1a, 5, 0, 0, 0, 0, 0, 0, 0};
    cr_assert(memcmp(p, pre, 16) == 0);
    cr_assert(memcmp(p + 16, "CRCK\x01\0\0\0", 8) == 0);
    cr_assert(memcmp(p + len - 8, "CRECEND\0", 8) == 0);
    free(p);
}

Test(format, every_allocation_failure_reading_a_pipe)
{
    size_t len;
    uint8_t *p = sample_bytes(2, 64, 1, &len);
    cr_assert_lt(len, 60000); /* fits in a pipe: no writer thread needed */
    int done = 0;
    for (unsigned long n = 1; !done && n < 100000; n++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        cr_assert_eq(write(fds[1], p, len), (ssize_t)len);
        close(fds[1]);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
        crec_error e = {0};
        crec_fmt_reader *r = NULL;
        crec_fmt_summary s;
        crec_alloc_fail_after(n);
        int rc = crec_fmt_reader_open(path, &r, &e);
        if (!rc)
            rc = crec_fmt_summarize(r, &s, &e);
        if (!rc)
            crec_fmt_summary_clear(&s);
        crec_alloc_fail_after(0);
        crec_fmt_reader_free(r);
        close(fds[0]);
        cr_assert(rc == CREC_OK || rc == CREC_ERR_NOMEM, "n=%lu rc=%d %s", n, rc, e.msg);
        done = rc == CREC_OK;
    }
    cr_assert(done);
    free(p);
}

/* ---- version 2: threads ------------------------------------------------------ */

/* SEQ entries: whole where a reader starts, differences after; a version-1
 * entry has no kind. */
Test(format, seq_v2_whole_then_differences)
{
    crec_fmt_buf b = {0};
    crec_fmt_seq_ctx w = {0, 0, 1}, r = {0, 0, 1};
    crec_error e = {0};
    const crec_fmt_seq in[] = {
        {1000, 500, CREC_FMT_SEQ_IN},       {1001, 520, CREC_FMT_SEQ_SYSCALL},
        {1005, 520, CREC_FMT_SEQ_WAKE},     {1006, 600100, CREC_FMT_SEQ_OUT_EXACT},
        {7, 700000, CREC_FMT_SEQ_ATOMIC} /* goes back: written whole */,
    };
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(crec_fmt_seq_encode(&b, &w, &in[i]), CREC_OK);
    const uint8_t want[] = {0xe8, 0x07, 0xf4, 0x03, 0x85, /* whole */
                            1, 20, 1, 4, 0, 4, 1, 0x9c, 0xcc, 0x24, 7,
                            7, 0xe0, 0xdc, 0x2a, 0x82};
    cr_assert_eq(b.len, sizeof want);
    cr_assert(memcmp(b.data, want, sizeof want) == 0);
    crec_fmt_cur c = {b.data, b.len, 0};
    for (size_t i = 0; i < 5; i++) {
        crec_fmt_seq s;
        cr_assert_eq(crec_fmt_seq_decode(2, &c, &r, &s, &e), CREC_OK, "%s", e.msg);
        cr_assert_eq(s.seq, in[i].seq);
        cr_assert_eq(s.icount, in[i].icount);
        cr_assert_eq(s.kind, in[i].kind);
    }
    /* a key frame's SEQ offset is where a reader starts: differences there
     * are corrupt */
    crec_fmt_seq s;
    crec_fmt_seq_ctx fresh = {0, 0, 1};
    crec_fmt_cur mid = {b.data + 5, b.len - 5, 0};
    cr_assert_eq(crec_fmt_seq_decode(2, &mid, &fresh, &s, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "holds differences"), "%s", e.msg);
    const uint8_t kinds[][3] = {{1, 1, 0x80}, {1, 1, 0x88}};
    for (size_t i = 0; i < 2; i++) {
        crec_fmt_seq_ctx f = {0, 0, 1};
        crec_fmt_cur k = {kinds[i], 3, 0};
        cr_assert_eq(crec_fmt_seq_decode(2, &k, &f, &s, &e), CREC_ERR_CORRUPT);
        cr_assert(strstr(e.msg, "unknown sequence kind"), "%s", e.msg);
    }
    const uint8_t over[] = {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x81,
                            0, 1, 1};
    crec_fmt_seq_ctx o = {0, 0, 1};
    crec_fmt_cur oc = {over, sizeof over, 0};
    cr_assert_eq(crec_fmt_seq_decode(2, &oc, &o, &s, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_seq_decode(2, &oc, &o, &s, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "out of range"), "%s", e.msg);
    /* version 1: two numbers, whole, no kind */
    const uint8_t v1[] = {0x05, 0x64, 0x06, 0x65};
    crec_fmt_cur c1 = {v1, sizeof v1, 0};
    crec_fmt_seq_ctx x = {0, 0, 1};
    cr_assert_eq(crec_fmt_seq_decode(1, &c1, &x, &s, &e), CREC_OK);
    cr_assert(s.seq == 5 && s.icount == 100 && s.kind == 0);
    cr_assert_eq(crec_fmt_seq_decode(1, &c1, &x, &s, &e), CREC_OK);
    cr_assert(s.seq == 6 && s.icount == 101 && s.kind == 0);
    crec_fmt_buf_free(&b);
}

/* THREAD: version 2 carries the parent, the guest tid, the count, how it
 * ended, its status and the cleared address; version 1 only op and tid. */
Test(format, thread_record_v2_fields)
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_THREAD};
    ev.u.thread.op = CREC_FMT_TH_CREATE;
    ev.u.thread.tid = 3;
    ev.u.thread.parent = 1;
    ev.u.thread.guest_tid = 4242;
    ev_check(&ev);
    memset(&ev.u, 0, sizeof ev.u);
    ev.u.thread.op = CREC_FMT_TH_EXIT;
    ev.u.thread.tid = 3;
    ev.u.thread.icount = 123456789;
    ev.u.thread.how = CREC_FMT_TH_EXITED;
    ev.u.thread.status = 0xffffffffffffff85ull;
    ev.u.thread.cleared = 0x7ffff7d7e990;
    ev_check(&ev);
    ev.u.thread.how = CREC_FMT_TH_ENDED;
    ev_check(&ev);

    crec_error e = {0};
    crec_fmt_event out;
    const uint8_t v1[] = {CREC_FMT_TH_CREATE, 2};
    cr_assert_eq(crec_fmt_ev_decode(1, CREC_FMT_K_THREAD, v1, sizeof v1, &out, &e), CREC_OK);
    cr_assert(out.u.thread.op == CREC_FMT_TH_CREATE && out.u.thread.tid == 2);
    cr_assert_eq(crec_fmt_ev_decode(2, CREC_FMT_K_THREAD, v1, sizeof v1, &out, &e),
                 CREC_ERR_CORRUPT, "a version-2 create needs its parent");
    const uint8_t how[] = {CREC_FMT_TH_EXIT, 2, 5, 9, 0, 0};
    cr_assert_eq(crec_fmt_ev_decode(2, CREC_FMT_K_THREAD, how, sizeof how, &out, &e),
                 CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "unknown thread end 9"), "%s", e.msg);
    const uint8_t op[] = {7, 2};
    cr_assert_eq(crec_fmt_ev_decode(2, CREC_FMT_K_THREAD, op, sizeof op, &out, &e),
                 CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "unknown thread operation 7"), "%s", e.msg);
}

/* An in-memory recording of the given header and SEQ streams. */
static crec_fmt_reader *seq_file(const crec_fmt_header *h, const crec_fmt_seq *const *seqs,
                                 const size_t *n, uint32_t nthreads, uint8_t **mem)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_writer *w;
    crec_fmt_reader *r;
    crec_error e = {0};
    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, h, NULL, &w, &e), CREC_OK, "%s", e.msg);
    for (uint32_t t = 0; t < nthreads; t++) {
        crec_fmt_buf b = {0};
        crec_fmt_seq_ctx ctx = {0, 0, 1};
        for (size_t i = 0; i < n[t]; i++)
            cr_assert_eq(crec_fmt_seq_encode(&b, &ctx, &seqs[t][i]), CREC_OK);
        cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_SEQ, t + 1, &b, &e), CREC_OK, "%s", e.msg);
        crec_fmt_buf_free(&b);
    }
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    *mem = malloc(len);
    cr_assert_eq(fread(*mem, 1, len, f), len);
    fclose(f);
    unlink(path);
    cr_assert_eq(crec_fmt_reader_open_mem(*mem, len, &r, &e), CREC_OK, "%s", e.msg);
    return r;
}

/* The header's schedule values, and the schedule the switch entries make. */
Test(format, header_v2_and_schedule)
{
    crec_fmt_header h = sample_header();
    h.time_slice = 5000;
    h.cpus = 4;
    h.chaos = 1;
    h.chaos_seed = 0x123456789abcdefull;
    /* thread 1 runs 0..300 (a syscall at 120, creating 2), 2 runs 0..200
     * cut inside a block, 1 runs 300..350 and stays to the end */
    const crec_fmt_seq t1[] = {{0, 0, CREC_FMT_SEQ_IN}, {1, 120, CREC_FMT_SEQ_SYSCALL},
                               {3, 300, CREC_FMT_SEQ_OUT}, {6, 300, CREC_FMT_SEQ_IN}};
    const crec_fmt_seq t2[] = {{2, 0, CREC_FMT_SEQ_START}, {4, 0, CREC_FMT_SEQ_IN},
                               {5, 200, CREC_FMT_SEQ_OUT_EXACT}};
    const crec_fmt_seq *seqs[] = {t1, t2};
    const size_t n[] = {4, 3};
    uint8_t *mem;
    crec_fmt_reader *r = seq_file(&h, seqs, n, 2, &mem);
    const crec_fmt_header *rh = crec_fmt_reader_header(r);
    cr_assert_eq(rh->version, CREC_FMT_VERSION);
    cr_assert_eq(rh->time_slice, 5000);
    cr_assert_eq(rh->cpus, 4);
    cr_assert_eq(rh->chaos, 1);
    cr_assert_eq(rh->chaos_seed, 0x123456789abcdefull);

    crec_fmt_slice *v;
    size_t ns;
    crec_error e = {0};
    cr_assert_eq(crec_fmt_schedule(r, 550, &v, &ns, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(ns, 3);
    cr_assert(v[0].tid == 1 && v[0].start == 0 && v[0].len == 300 && !v[0].exact_out);
    cr_assert(v[1].tid == 2 && v[1].start == 300 && v[1].len == 200 && v[1].exact_out);
    cr_assert(v[2].tid == 1 && v[2].start == 500 && v[2].thread_start == 300 && v[2].open);
    cr_assert_eq(v[2].len, 50);
    cr_assert_eq(crec_fmt_slice_at(v, ns, 0), 0);
    cr_assert_eq(crec_fmt_slice_at(v, ns, 299), 0);
    cr_assert_eq(crec_fmt_slice_at(v, ns, 300), 1);
    cr_assert_eq(crec_fmt_slice_at(v, ns, 10000), 2);
    free(v);
    crec_fmt_reader_free(r);
    free(mem);

    /* no chaos: no seed; a thread that gets the CPU twice is corrupt */
    h.chaos = 0;
    h.time_slice = 0; /* written as the default */
    const crec_fmt_seq twice[] = {{0, 0, CREC_FMT_SEQ_IN}, {1, 5, CREC_FMT_SEQ_IN}};
    const crec_fmt_seq *s2[] = {twice};
    const size_t n2[] = {2};
    r = seq_file(&h, s2, n2, 1, &mem);
    rh = crec_fmt_reader_header(r);
    cr_assert_eq(rh->chaos, 0);
    cr_assert_eq(rh->chaos_seed, 0);
    cr_assert_eq(rh->time_slice, CREC_FMT_DEFAULT_SLICE);
    cr_assert_eq(crec_fmt_schedule(r, 10, &v, &ns, &e), CREC_ERR_CORRUPT);
    cr_assert(strstr(e.msg, "gets the CPU twice"), "%s", e.msg);
    crec_fmt_reader_free(r);
    free(mem);
}

/* Guest memory a record names lies in the address space: a hostile length
 * is refused, by name, before anything maps it. */
Test(format, guest_ranges_past_the_address_space_refused)
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP}, out;
    crec_fmt_snap_page page = {CREC_FMT_ADDR_LIMIT, crec_fmt_hash_bytes("", 0)};
    crec_fmt_snapshot snap = {7, 1, &page}, so;
    crec_fmt_code code = {0x400000, CREC_FMT_ADDR_LIMIT, 5, 0, page.blob, "", 0}, co;
    crec_fmt_buf b = {0};
    crec_error e = {0};
    const uint8_t *body;
    size_t len;

    ev.u.mmap.op = CREC_FMT_MM_MAP;
    ev.u.mmap.addr = 0x555555554000ull;
    ev.u.mmap.len = 1ull << 46; /* 64 TiB from there runs past 2^47 */
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_MMAP, &len);
    cr_expect_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_MMAP, body, len, &out, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "mmap range 0x555555554000 (+0x400000000000) is outside the "
                             "address space") != NULL, "%s", e.msg);
    ev.u.mmap.len = 1ull << 40; /* a TiB: there is room */
    crec_fmt_buf_reset(&b);
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_MMAP, &len);
    cr_expect_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_MMAP, body, len, &out, &e), CREC_OK, "%s", e.msg);
    ev.u.mmap.len = 0x1000, ev.u.mmap.addr2 = UINT64_MAX - 0xfff, ev.u.mmap.len2 = 0x2000;
    crec_fmt_buf_reset(&b);
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_MMAP, &len);
    cr_expect_eq(crec_fmt_ev_decode(CREC_FMT_VERSION, CREC_FMT_K_MMAP, body, len, &out, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "mmap new range") != NULL, "%s", e.msg);

    crec_fmt_buf_reset(&b);
    cr_assert_eq(crec_fmt_snap_encode(&b, &snap), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_SNAPSHOT, &len);
    cr_expect_eq(crec_fmt_snap_decode(body, len, &so, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "snapshot page") != NULL, "%s", e.msg);
    crec_fmt_snapshot_clear(&so);

    crec_fmt_buf_reset(&b);
    cr_assert_eq(crec_fmt_code_encode(&b, &code), CREC_OK);
    body = frame_body(&b, CREC_FMT_K_CODE, &len);
    cr_expect_eq(crec_fmt_code_decode(body, len, &co, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "code range") != NULL, "%s", e.msg);
    crec_fmt_buf_free(&b);
}

/* What the reader refuses the writer does not write: more argv strings
 * than the limit is an error of the writer, not a file no one can read. */
Test(format, writer_refuses_what_the_reader_refuses)
{
    static char *argv[CREC_FMT_MAX_STRINGS + 2];
    crec_fmt_header h = {0};
    crec_fmt_writer *w = NULL;
    crec_error e = {0};

    for (size_t i = 0; i < CREC_FMT_MAX_STRINGS + 1; i++)
        argv[i] = "";
    h.arch = CREC_FMT_ARCH_X86_64;
    h.page_size = 4096;
    h.argc = CREC_FMT_MAX_STRINGS + 1;
    h.argv = argv;
    cr_expect_eq(crec_fmt_writer_open("/dev/null", &h, NULL, &w, &e), CREC_ERR_LIMIT);
    cr_expect(strstr(e.msg, "1048577 arguments: more than 1048576") != NULL, "%s", e.msg);
    cr_expect_null(w);
}

/* ---- processes (version 3) ------------------------------------------------ */

static void proc_put(crec_fmt_writer *w, const crec_fmt_process *p)
{
    crec_fmt_buf b = {0};
    crec_error e = {0};
    cr_assert_eq(crec_fmt_proc_encode(&b, p), CREC_OK);
    /* the record as it goes in the stream: kind, length, body */
    cr_assert_eq(crec_fmt_write_buf(w, CREC_FMT_S_PROCESS, 0, &b, &e), CREC_OK, "%s", e.msg);
    crec_fmt_buf_free(&b);
}

/* The body of an encoded record (after its kind and length). */
static size_t proc_body(const crec_fmt_process *p, uint8_t *out, size_t room)
{
    crec_fmt_buf b = {0};
    crec_fmt_cur c;
    uint64_t len;
    uint8_t kind;
    cr_assert_eq(crec_fmt_proc_encode(&b, p), CREC_OK);
    c = (crec_fmt_cur){b.data, b.len, 0};
    cr_assert_eq(fmt_cur_u8(&c, &kind, "kind", NULL), CREC_OK);
    cr_assert_eq(kind, CREC_FMT_K_PROCESS);
    cr_assert_eq(fmt_cur_varint(&c, &len, "len", NULL), CREC_OK);
    cr_assert_eq(len, b.len - c.pos);
    cr_assert_leq(len, room);
    memcpy(out, b.data + c.pos, (size_t)len);
    crec_fmt_buf_free(&b);
    return (size_t)len;
}

Test(format, process_record_roundtrip_and_refusals)
{
    char *const argv[] = {"sh", "-c", "seq 1 3 | sort -r", "", NULL};
    crec_fmt_process p = {.op = CREC_FMT_PR_START, .proc = 5, .how = CREC_FMT_PR_EXEC,
                          .parent = 2, .parent_tid = 3, .parent_icount = 1ull << 40,
                          .pid = 4093, .ppid = 4092, .path = "/bin/sh", .path_len = 7,
                          .argc = 4, .argv = argv};
    crec_fmt_process d;
    crec_error e = {0};
    uint8_t body[256];
    size_t n = proc_body(&p, body, sizeof body);
    char **av;

    cr_assert_eq(crec_fmt_proc_decode(body, n, &d, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(d.op, CREC_FMT_PR_START);
    cr_expect_eq(d.proc, 5);
    cr_expect_eq(d.how, CREC_FMT_PR_EXEC);
    cr_expect_eq(d.parent, 2);
    cr_expect_eq(d.parent_tid, 3);
    cr_expect_eq(d.parent_icount, 1ull << 40);
    cr_expect_eq(d.pid, 4093);
    cr_expect_eq(d.ppid, 4092);
    cr_expect_eq(d.path_len, 7);
    cr_expect(memcmp(d.path, "/bin/sh", 7) == 0);
    cr_assert_eq(d.argc, 4);
    cr_assert_eq(crec_fmt_process_argv(&d, &av), CREC_OK);
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq(av[i], argv[i]);
    cr_expect_null(av[4]);
    crec_free(av);
    /* every truncation is refused, with a message */
    for (size_t k = 0; k < n; k++) {
        e.msg[0] = '\0';
        cr_expect_eq(crec_fmt_proc_decode(body, k, &d, &e), CREC_ERR_CORRUPT, "at %zu", k);
        cr_expect(e.msg[0] != '\0');
    }
    body[n] = 0;
    cr_expect_eq(crec_fmt_proc_decode(body, n + 1, &d, &e), CREC_ERR_CORRUPT); /* a stray byte */

    crec_fmt_process end = {.op = CREC_FMT_PR_END, .proc = 5, .end_how = CREC_FMT_EXIT_EXEC,
                            .value = 6, .instructions = UINT64_MAX};
    n = proc_body(&end, body, sizeof body);
    cr_assert_eq(crec_fmt_proc_decode(body, n, &d, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(d.op, CREC_FMT_PR_END);
    cr_expect_eq(d.end_how, CREC_FMT_EXIT_EXEC);
    cr_expect_eq(d.value, 6);
    cr_expect_eq(d.instructions, UINT64_MAX);

    /* bad fields */
    const uint8_t op0[] = {0, 1, 0}, op3[] = {3, 1, 0};
    cr_expect_eq(crec_fmt_proc_decode(op0, sizeof op0, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "process operation"), "%s", e.msg);
    cr_expect_eq(crec_fmt_proc_decode(op3, sizeof op3, &d, &e), CREC_ERR_CORRUPT);
    const uint8_t end_how[] = {CREC_FMT_PR_END, 1, CREC_FMT_EXIT_ENDED + 1, 0, 0};
    cr_expect_eq(crec_fmt_proc_decode(end_how, sizeof end_how, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "process end"), "%s", e.msg);
    const uint8_t start_how[] = {CREC_FMT_PR_START, 1, CREC_FMT_PR_EXEC + 1, 0, 0, 0, 0, 0, 0, 0};
    cr_expect_eq(crec_fmt_proc_decode(start_how, sizeof start_how, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "process start"), "%s", e.msg);
    const uint8_t big_proc[] = {CREC_FMT_PR_END, 0x80, 0x80, 0x80, 0x08, 0, 0, 0}; /* 2^24 */
    cr_expect_eq(crec_fmt_proc_decode(big_proc, sizeof big_proc, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "process number"), "%s", e.msg);
    /* argc larger than the bytes left */
    const uint8_t argc[] = {CREC_FMT_PR_START, 1, 1, 0, 1, 0, 7, 6, 0, 5, 0, 0, 0};
    cr_expect_eq(crec_fmt_proc_decode(argc, sizeof argc, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "argc"), "%s", e.msg);
    /* a NUL inside an argument */
    const uint8_t nul[] = {CREC_FMT_PR_START, 1, 1, 0, 1, 0, 7, 6, 0, 1, 2, 'a', 0};
    cr_expect_eq(crec_fmt_proc_decode(nul, sizeof nul, &d, &e), CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "NUL"), "%s", e.msg);
}

Test(format, signal_v3_fields_refused)
{
    crec_fmt_event ev;
    crec_error e = {0};
    /* icount, signo, code, addr; version 3: flags, registers, ranges */
    const uint8_t signo0[] = {5, 0, 0, 0, 0, 0, 0};
    const uint8_t signo65[] = {5, 65, 0, 0, 0, 0, 0};
    const uint8_t flags[] = {5, 11, 0, 0, 4, 0, 0};
    const uint8_t ok[] = {5, 11, 2, 0x10, CREC_FMT_SIG_FAULT, 0, 0};
    cr_expect_eq(crec_fmt_ev_decode(3, CREC_FMT_K_SIGNAL, signo0, sizeof signo0, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "signal number 0"), "%s", e.msg);
    cr_expect_eq(crec_fmt_ev_decode(3, CREC_FMT_K_SIGNAL, signo65, sizeof signo65, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_expect_eq(crec_fmt_ev_decode(3, CREC_FMT_K_SIGNAL, flags, sizeof flags, &ev, &e),
                 CREC_ERR_CORRUPT);
    cr_expect(strstr(e.msg, "reserved"), "%s", e.msg);
    cr_expect_eq(crec_fmt_ev_decode(3, CREC_FMT_K_SIGNAL, ok, sizeof ok, &ev, &e), CREC_OK,
                 "%s", e.msg);
    cr_expect_eq(ev.u.sig.signo, 11);
    cr_expect_eq(ev.u.sig.code, 1);
    cr_expect_eq(ev.u.sig.flags, CREC_FMT_SIG_FAULT);
    /* version 2's layout is the first four fields alone */
    cr_expect_eq(crec_fmt_ev_decode(2, CREC_FMT_K_SIGNAL, signo0, 4, &ev, &e), CREC_OK,
                 "%s", e.msg);
    cr_expect_eq(crec_fmt_ev_decode(2, CREC_FMT_K_SIGNAL, ok, sizeof ok, &ev, &e),
                 CREC_ERR_CORRUPT); /* stray bytes for version 2 */
}

/* One process's part: a PROCESS start, `n` bytes of EVENTS for thread 1
 * (each `fill`), a blob, and an end unless `cut`. */
static void proc_part(crec_fmt_writer *w, uint32_t proc, uint32_t how, uint32_t parent,
                      uint32_t pid, uint8_t fill, size_t n, int cut)
{
    char *const argv[] = {"prog", pid & 1 ? "odd" : "even", NULL};
    crec_fmt_process p = {.op = CREC_FMT_PR_START, .proc = proc, .how = how, .parent = parent,
                          .parent_tid = 1, .parent_icount = 100, .pid = pid, .ppid = 1,
                          .path = "/bin/prog", .path_len = 9, .argc = 2, .argv = argv};
    uint8_t buf[300];
    crec_error e = {0};
    crec_fmt_hash h;

    cr_assert_eq(crec_fmt_writer_process(w), proc);
    proc_put(w, &p);
    memset(buf, fill, sizeof buf);
    for (size_t k = 0; k < n; k += sizeof buf)
        cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_EVENTS, 1, buf,
                                    n - k < sizeof buf ? n - k : sizeof buf, &e), CREC_OK,
                     "%s", e.msg);
    cr_assert_eq(crec_fmt_blob_put(w, buf, 64, &h, &e), CREC_OK, "%s", e.msg);
    if (!cut) {
        crec_fmt_process end = {.op = CREC_FMT_PR_END, .proc = proc, .end_how = 0,
                                .value = fill, .instructions = n};
        proc_put(w, &end);
    }
    cr_assert_eq(crec_fmt_flush_all(w, &e), CREC_OK, "%s", e.msg);
}

/* Process `proc`'s EVENTS for thread 1 are n bytes of `fill`. */
static void expect_events(crec_fmt_reader *r, uint32_t proc, uint8_t fill, size_t n)
{
    crec_error e = {0};
    uint8_t buf[4096];
    cr_assert_leq(n, sizeof buf);
    cr_assert_eq(crec_fmt_reader_select(r, proc, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(crec_fmt_reader_selected(r), proc);
    cr_assert_eq(crec_fmt_read_at(r, CREC_FMT_S_EVENTS, 1, 0, buf, n, &e), CREC_OK,
                 "process %u: %s", proc, e.msg);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(buf[k], fill, "process %u byte %zu", proc, k);
    cr_expect_eq(crec_fmt_read_at(r, CREC_FMT_S_EVENTS, 1, n, buf, 1, &e), CREC_ERR_NOTFOUND,
                 "process %u has more than %zu bytes", proc, n);
}

/* The writer shared across fork: the first process writes, forks a child
 * (which writes its own streams and leaves), execs (a new process of the
 * same pid), and closes once the child has left; a second child is killed
 * before it ends (its part is cut short).  The reader gives each process
 * its own streams and the shared blobs to all. */
Test(format, shared_writer_processes_fork_exec_and_a_killed_child)
{
    char path[] = "/tmp/crec-test-XXXXXX";
    int fd = mkstemp(path);
    crec_fmt_header h = sample_header();
    crec_fmt_writer_opts o = {.chunk_size = 256, .shared = 1};
    crec_fmt_writer *w;
    crec_error e = {0};
    uint32_t next;
    int st;

    cr_assert(fd >= 0);
    cr_assert_eq(crec_fmt_writer_open_fd(fd, path, &h, &o, &w, &e), CREC_OK, "%s", e.msg);
    int took[2];
    char one;

    cr_assert_eq(pipe(took), 0);
    proc_part(w, 0, CREC_FMT_PR_ROOT, 0, 100, 'a', 700, 1);
    cr_assert_eq(crec_fmt_writer_prefork(w, &e), CREC_OK, "%s", e.msg);
    pid_t c1 = fork();
    cr_assert(c1 >= 0);
    if (c1 == 0) {
        uint32_t me = 99;
        int ok = crec_fmt_writer_forked(w, &me, &e) == CREC_OK && me == 1;
        if (write(took[1], "1", 1) != 1 || !ok)
            _exit(10);
        proc_part(w, 1, CREC_FMT_PR_FORK, 0, 101, 'b', 1500, 0);
        _exit(crec_fmt_writer_leave(w, &e) == CREC_OK ? 0 : 11);
    }
    /* the second child's number is 2: the first has taken its own */
    cr_assert_eq(read(took[0], &one, 1), 1);
    close(took[0]), close(took[1]);
    cr_assert_eq(crec_fmt_writer_prefork(w, &e), CREC_OK, "%s", e.msg);
    pid_t c2 = fork();
    cr_assert(c2 >= 0);
    if (c2 == 0) {
        uint32_t me = 99;
        if (crec_fmt_writer_forked(w, &me, &e) != CREC_OK || me != 2)
            _exit(10);
        proc_part(w, 2, CREC_FMT_PR_FORK, 0, 102, 'c', 600, 1);
        raise(SIGKILL); /* its recorder killed: no end, no leave */
        _exit(12);
    }
    cr_assert_eq(waitpid(c2, &st, 0), c2);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
    /* the first process goes on: more of its own, then execve */
    {
        uint8_t more[100];
        memset(more, 'a', sizeof more);
        cr_assert_eq(crec_fmt_write(w, CREC_FMT_S_EVENTS, 1, more, sizeof more, &e), CREC_OK);
    }
    cr_assert_eq(crec_fmt_writer_take_process(w, &next, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(next, 3);
    {
        crec_fmt_process end = {.op = CREC_FMT_PR_END, .proc = 0,
                                .end_how = CREC_FMT_EXIT_EXEC, .value = next, .instructions = 800};
        proc_put(w, &end);
    }
    cr_assert_eq(crec_fmt_writer_set_process(w, next, &e), CREC_OK, "%s", e.msg);
    proc_part(w, 3, CREC_FMT_PR_EXEC, 0, 100, 'd', 900, 0);
    cr_assert_eq(waitpid(c1, &st, 0), c1);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    cr_assert_eq(crec_fmt_writer_close(w, &e), CREC_OK, "%s", e.msg);

    crec_fmt_reader *r;
    cr_assert_eq(crec_fmt_reader_open(path, &r, &e), CREC_OK, "%s", e.msg);
    const uint32_t *procs;
    cr_assert_eq(crec_fmt_reader_procs(r, &procs), 4);
    for (uint32_t i = 0; i < 4; i++)
        cr_expect_eq(procs[i], i);
    cr_expect_eq(crec_fmt_reader_truncated(r, NULL, NULL), 0); /* process 0 has its end */
    expect_events(r, 0, 'a', 800);
    expect_events(r, 1, 'b', 1500);
    expect_events(r, 3, 'd', 900);
    expect_events(r, 2, 'c', 600);
    {
        uint64_t at;
        const char *why;
        cr_expect_eq(crec_fmt_reader_truncated(r, &at, &why), 1);
        cr_expect(strstr(why, "process 2 has no end"), "%s", why);
    }
    cr_expect_eq(crec_fmt_reader_select(r, 4, &e), CREC_ERR_NOTFOUND);
    cr_expect_eq(crec_fmt_reader_selected(r), 2); /* kept */
    /* each blob is there, whichever process put it, from any process */
    for (uint8_t f = 'a'; f <= 'd'; f++) {
        uint8_t b[64], *d;
        size_t n;
        memset(b, f, sizeof b);
        crec_fmt_hash hh = crec_fmt_hash_bytes(b, sizeof b);
        cr_expect_eq(crec_fmt_blob_get(r, &hh, &d, &n, &e), CREC_OK, "blob %c: %s", f, e.msg);
        if (d) {
            cr_expect_eq(n, 64);
            crec_free(d);
        }
    }

    /* the process table */
    crec_fmt_proc_sum *v;
    size_t np, which[4], nw;
    cr_assert_eq(crec_fmt_processes(r, &v, &np, &e), CREC_OK, "%s", e.msg);
    cr_assert_eq(np, 4);
    cr_expect_eq(crec_fmt_reader_selected(r), 2); /* kept */
    cr_expect(v[0].started && v[0].ended);
    cr_expect_eq(v[0].how, CREC_FMT_PR_ROOT);
    cr_expect_eq(v[0].end_how, CREC_FMT_EXIT_EXEC);
    cr_expect_eq(v[0].value, 3);
    cr_expect_eq(v[1].how, CREC_FMT_PR_FORK);
    cr_expect_eq(v[1].pid, 101);
    cr_expect_eq(v[1].value, 'b');
    cr_expect_eq(v[1].instructions, 1500);
    cr_expect_str_eq(v[1].path, "/bin/prog");
    cr_expect_str_eq(v[1].argv[1], "odd");
    cr_expect_null(v[1].argv[2]);
    cr_expect(v[2].started && !v[2].ended);
    cr_expect_eq(v[3].how, CREC_FMT_PR_EXEC);
    cr_expect_eq(v[3].parent, 0);
    cr_expect_eq(v[3].pid, 100);
    /* pid 100 ran two programs: 0 then 3 */
    cr_assert_eq(crec_fmt_pick_processes(v, np, 100, 0, which, &nw, &e), CREC_OK);
    cr_expect_eq(nw, 2);
    cr_expect_eq(which[0], 0);
    cr_expect_eq(which[1], 3);
    cr_assert_eq(crec_fmt_pick_processes(v, np, 100, 2, which, &nw, &e), CREC_OK);
    cr_expect_eq(nw, 1);
    cr_expect_eq(which[0], 3);
    cr_expect_eq(crec_fmt_pick_processes(v, np, 100, 3, which, &nw, &e), CREC_ERR_NOTFOUND);
    cr_expect(strstr(e.msg, "pid 100 ran 2 programs, not 3"), "%s", e.msg);
    cr_expect_eq(crec_fmt_pick_processes(v, np, 7, 0, which, &nw, &e), CREC_ERR_NOTFOUND);
    cr_expect(strstr(e.msg, "no process with pid 7"), "%s", e.msg);
    cr_assert_eq(crec_fmt_pick_processes(v, np, 0, 0, which, &nw, &e), CREC_OK);
    cr_expect_eq(nw, 4);
    crec_fmt_processes_free(v, np);
    crec_fmt_reader_free(r);

    /* the same file read from memory, without its directory (as a file
     * whose first recorder was killed is read: by scanning) */
    {
        size_t len;
        FILE *f = fopen(path, "rb");
        cr_assert(f);
        fseek(f, 0, SEEK_END);
        len = (size_t)ftell(f);
        rewind(f);
        uint8_t *p = malloc(len);
        cr_assert_eq(fread(p, 1, len, f), len);
        fclose(f);
        int found = 0;
        for (size_t cut = len; cut > 0 && !found; cut--) {
            crec_fmt_reader *rr;
            if (crec_fmt_reader_open_mem(p, cut, &rr, &e) != CREC_OK)
                continue;
            if (crec_fmt_reader_truncated(rr, NULL, NULL) &&
                crec_fmt_reader_procs(rr, &procs) == 4) {
                expect_events(rr, 1, 'b', 1500);
                expect_events(rr, 3, 'd', 900);
                found = 1;
            }
            crec_fmt_reader_free(rr);
        }
        cr_expect(found, "no cut of the file read as 4 processes by scanning");
        free(p);
    }
    unlink(path);
}

/* A file without PROCESS streams (every version-1 and 2 file, and one
 * written without them) has one process, 0, of which nothing is said. */
Test(format, one_process_without_process_streams)
{
    size_t len;
    uint8_t *p = sample_bytes(2, 0, 1, &len);
    crec_fmt_reader *r;
    crec_error e = {0};
    const uint32_t *procs;
    crec_fmt_proc_sum *v;
    size_t np;

    cr_assert_eq(crec_fmt_reader_open_mem(p, len, &r, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(crec_fmt_reader_procs(r, &procs), 1);
    cr_expect_eq(procs[0], 0);
    cr_assert_eq(crec_fmt_processes(r, &v, &np, &e), CREC_OK, "%s", e.msg);
    cr_expect_eq(np, 1);
    cr_expect(!v[0].started); /* no PROCESS stream: nothing said */
    crec_fmt_processes_free(v, np);
    cr_expect_eq(crec_fmt_reader_select(r, 1, &e), CREC_ERR_NOTFOUND);
    crec_fmt_reader_free(r);
    free(p);
}
