/*
 * test_replayer.c - the replayer's register comparison, which names the
 * first difference in a divergence report, and replays of a recording
 * changed in one place: each divergence or failure with its message.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crec.h"
#include "format/format.h"
#include "replayer/replayer_int.h"

Test(replayer, equal_states_do_not_differ)
{
    crec_regs a, b;
    char what[200] = "";
    memset(&a, 0x5a, sizeof a);
    b = a;
    cr_expect_eq(crec_regs_diff(&a, &b, what, sizeof what), 0);
}

Test(replayer, names_the_first_differing_register)
{
    crec_regs want = {0}, got = {0};
    char what[200];
    got.gpr[CREC_RBX] = 7;
    got.rip = 1;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect_str_eq(what, "rbx is 0x7, recorded 0x0");
}

Test(replayer, vector_and_x87_state_count)
{
    crec_regs want = {0}, got = {0};
    char what[200];
    got.xmm[15][3] = 1;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "xmm15") != NULL, "%s", what);
    got = want;
    got.st[7][9] = 0x80;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "st7") != NULL, "%s", what);
    got = want;
    got.fs_base = 0x1000;
    cr_assert_eq(crec_regs_diff(&want, &got, what, sizeof what), 1);
    cr_expect(strstr(what, "fs_base") != NULL, "%s", what);
}

/* ---- failure paths: a recording changed in one place ----------------------- */

/*
 * The fixture: build/guests/hello_static recorded with a key frame every
 * 5000 instructions, then copied with one stream rewritten (checksums
 * valid), so that only the replay's own checks can notice.
 */
#define GUEST "build/guests/hello_static"

static void record_guest(const char *path)
{
    char *argv[] = {GUEST, NULL}, *envp[] = {NULL};
    crec_record_options o = {.out_path = path, .out_fd = -1, .keyframe_interval = 5000};
    crec_record_stats st;
    crec_exit ex;
    crec_error err = {0};
    FILE *devnull = fopen("/dev/null", "w");

    cr_assert_eq(access(GUEST, X_OK), 0, GUEST " is missing: `make test` builds it");
    o.log = devnull;
    cr_assert_eq(crec_record(&o, GUEST, argv, envp, &ex, &st, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(ex.status, 0);
    cr_assert_gt(st.keyframes, 3, "the test needs key frames to check");
    fclose(devnull);
}

/* Rewrites the bytes of one stream; may change *len (but not grow it). */
typedef void (*edit_fn)(int type, uint32_t tid, uint8_t *buf, uint64_t *len);

static void copy_edited(const char *in, const char *out, edit_fn edit)
{
    crec_fmt_reader *r;
    crec_fmt_writer *w;
    crec_error err = {0};

    cr_assert_eq(crec_fmt_reader_open(in, &r, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_fmt_writer_open(out, crec_fmt_reader_header(r), NULL, &w, &err), CREC_OK);
    for (size_t i = 0; i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        uint8_t *buf;
        uint64_t len;
        cr_assert_eq(crec_fmt_reader_stream(r, i, &si, &err), CREC_OK);
        if (si.type == CREC_FMT_S_HEADER || si.type == CREC_FMT_S_DIRECTORY)
            continue;
        len = si.raw_bytes;
        buf = malloc(len ? len : 1);
        cr_assert_eq(crec_fmt_read_at(r, si.type, si.tid, 0, buf, len, &err), CREC_OK);
        edit(si.type, si.tid, buf, &len);
        cr_assert_eq(crec_fmt_write(w, si.type, si.tid, buf, len, &err), CREC_OK);
        free(buf);
    }
    cr_assert_eq(crec_fmt_writer_close(w, &err), CREC_OK, "%s", err.msg);
    crec_fmt_reader_free(r);
}

/* Each framed record of buf: its offset, kind, body and body length. */
typedef int (*record_fn)(uint8_t *buf, size_t at, int kind, uint8_t *body, size_t len);

static void each_record(uint8_t *buf, uint64_t *len, record_fn fn)
{
    crec_fmt_cur c = {buf, (size_t)*len, 0};

    while (c.pos < c.len) {
        size_t at = c.pos;
        int kind = buf[c.pos++];
        uint64_t n;
        cr_assert_eq(crec_fmt_cur_varint(&c, &n, "length", NULL), CREC_OK);
        if (fn(buf, at, kind, buf + c.pos, (size_t)n)) {
            if (fn(NULL, 0, 0, NULL, 0) == 2) /* "cut the stream here" */
                *len = at;
            return;
        }
        c.pos += (size_t)n;
    }
}

/* Replace record `at` (body [body, body+len)) by `b`, which must be as long. */
static void put_back(uint8_t *buf, size_t at, const uint8_t *body, size_t len, crec_fmt_buf *b)
{
    cr_assert_eq(b->len, (size_t)(body - (buf + at)) + len, "the record keeps its size");
    memcpy(buf + at, b->data, b->len);
    crec_fmt_buf_free(b);
}

static int wrong_register_kf(uint8_t *buf, size_t at, int kind, uint8_t *body, size_t len)
{
    static int n;
    crec_fmt_keyframe kf;
    crec_fmt_buf b = {0};

    if (!buf)
        return 1;
    if (kind != CREC_FMT_K_KEYFRAME || ++n < 3) /* the third key frame */
        return 0;
    cr_assert_eq(crec_fmt_kf_decode(body, len, &kf, NULL), CREC_OK);
    kf.regs.gpr[CREC_RBX] ^= 1; /* one bit: the record keeps its size */
    cr_assert_eq(crec_fmt_kf_encode(&b, &kf), CREC_OK);
    put_back(buf, at, body, len, &b);
    return 1;
}

static void edit_register(int type, uint32_t tid, uint8_t *buf, uint64_t *len)
{
    (void)tid;
    if (type == CREC_FMT_S_KEYFRAMES)
        each_record(buf, len, wrong_register_kf);
}

static int wrong_syscall(uint8_t *buf, size_t at, int kind, uint8_t *body, size_t len)
{
    crec_fmt_event ev;
    crec_fmt_buf b = {0};

    if (!buf)
        return 1;
    if (kind != CREC_FMT_K_SYSCALL)
        return 0;
    cr_assert_eq(crec_fmt_ev_decode(kind, body, len, &ev, NULL), CREC_OK);
    ev.u.sys.nr ^= 1; /* below 128 either way: the record keeps its size */
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    put_back(buf, at, body, len, &b);
    return 1;
}

static void edit_syscall(int type, uint32_t tid, uint8_t *buf, uint64_t *len)
{
    if (type == CREC_FMT_S_EVENTS && tid == 1)
        each_record(buf, len, wrong_syscall);
}

static int is_exit(uint8_t *buf, size_t at, int kind, uint8_t *body, size_t len)
{
    (void)at, (void)body, (void)len;
    if (!buf)
        return 2; /* cut the stream before it */
    return kind == CREC_FMT_K_EXIT;
}

static void edit_drop_exit(int type, uint32_t tid, uint8_t *buf, uint64_t *len)
{
    if (type == CREC_FMT_S_EVENTS && tid == 1)
        each_record(buf, len, is_exit);
}

static int bad_listing(uint8_t *buf, size_t at, int kind, uint8_t *body, size_t len)
{
    crec_fmt_event ev;
    crec_fmt_buf b = {0};

    if (!buf)
        return 1;
    if (kind != CREC_FMT_K_MMAP)
        return 0;
    cr_assert_eq(crec_fmt_ev_decode(kind, body, len, &ev, NULL), CREC_OK);
    cr_assert(ev.u.mmap.flags & CREC_FMT_EV_LISTING, "the first mapping is listed");
    ev.u.mmap.len += 1; /* no page-aligned mapping is that long */
    cr_assert_eq(crec_fmt_ev_encode(&b, &ev), CREC_OK);
    put_back(buf, at, body, len, &b);
    return 1;
}

static void edit_bad_map(int type, uint32_t tid, uint8_t *buf, uint64_t *len)
{
    if (type == CREC_FMT_S_EVENTS && tid == 1)
        each_record(buf, len, bad_listing);
}

/* Replay `edit` of the guest's recording; res and err say how it went. */
static int replay_edited(edit_fn edit, crec_replay_result *res, crec_error *err)
{
    char good[] = "/tmp/crec-rep-XXXXXX", bad[64];
    int fd = mkstemp(good), rc;

    cr_assert(fd >= 0);
    close(fd);
    snprintf(bad, sizeof bad, "%s.bad", good);
    record_guest(good);
    copy_edited(good, bad, edit);
    rc = crec_replay_run(bad, &(crec_replay_options){0}, res, err);
    unlink(good);
    unlink(bad);
    return rc;
}

Test(replayer, a_wrong_register_at_a_key_frame_diverges_naming_it)
{
    crec_replay_result res;
    crec_error err = {0};

    cr_assert_eq(replay_edited(edit_register, &res, &err), CREC_OK, "%s", err.msg);
    cr_assert(res.diverged);
    cr_expect(strstr(res.div.what, "at the key frame at instruction") &&
                  strstr(res.div.what, ": rbx is 0x"),
              "%s", res.div.what);
    cr_expect_gt(res.div.icount, 0);
}

Test(replayer, a_wrong_syscall_diverges_naming_both)
{
    crec_replay_result res;
    crec_error err = {0};

    cr_assert_eq(replay_edited(edit_syscall, &res, &err), CREC_OK, "%s", err.msg);
    cr_assert(res.diverged);
    cr_expect(strstr(res.div.what, "the program made syscall") &&
                  strstr(res.div.what, "where the recording has syscall"),
              "%s", res.div.what);
    cr_expect(strstr(res.div.insn, "syscall") != NULL, "%s", res.div.insn);
}

Test(replayer, a_missing_event_diverges_naming_it)
{
    crec_replay_result res;
    crec_error err = {0};

    cr_assert_eq(replay_edited(edit_drop_exit, &res, &err), CREC_OK, "%s", err.msg);
    cr_assert(res.diverged);
    cr_expect(strstr(res.div.what, "the recording has no more events") != NULL, "%s",
              res.div.what);
}

Test(replayer, a_map_that_cant_be_rebuilt_is_an_error_naming_it)
{
    crec_replay_result res;
    crec_error err = {0};

    cr_assert_eq(replay_edited(edit_bad_map, &res, &err), CREC_ERR_CORRUPT);
    cr_expect_eq(err.code, CREC_ERR_CORRUPT);
    cr_expect(strstr(err.msg, "the memory map can't be rebuilt: map (key frame listing) of 0x") &&
                  strstr(err.msg, "unaligned guest mapping"),
              "%s", err.msg);
    cr_expect(!res.diverged, "a bad file is an error, not a divergence");
}
