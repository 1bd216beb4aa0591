/*
 * test_index.c - the summarization index: encode/decode round trip,
 * lookups to the byte, and rejection of corrupt index files.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"

static uint64_t *dup64(const uint64_t *v, size_t n)
{
    uint64_t *p = crec_malloc((n ? n : 1) * sizeof *p);
    memcpy(p, v, n * sizeof *p);
    return p;
}

/*
 * Two segments, three spans.  The first touches lines 0x100 (bytes 0..7),
 * 0x101 (every byte; it stores bytes 8..11, leaving 1, 2, 3, 4) and 0x4000
 * (byte 63).  The second touches line 7, loads byte 0x5000, has a kernel
 * write of 0x5000..0x5010, and stores bytes 8..11 of line 0x101 again
 * (leaving 5, 6, 7, 8), byte 8 before a kernel write of it (stale); the
 * third starts at a restart point in the second segment, restores line 7
 * and touches nothing.  Two blobs.
 */
static uint8_t *line_values(uint8_t first)
{
    uint8_t *v = crec_calloc(1, 64);

    for (unsigned b = 8; b < 12; b++)
        v[b] = (uint8_t)(first + b - 8);
    v[20] = 0xee; /* not in the mask: not kept */
    return v;
}

static crec_idx *sample(void)
{
    static const uint64_t t0[] = {0x100, 0x101, 0x4000}, w0[] = {0x101};
    static const uint64_t tm0[] = {0xff, ~0ull, 1ull << 63}, wm0[] = {0xf00};
    static const uint64_t t1[] = {0x7}, k1[] = {0x5000, 0x10};
    static const uint64_t t1b[] = {0x7, 0x101, 0x140}, tm1b[] = {0x3, 0xf00, 0x1};
    static const uint64_t st1[] = {0x101}, stm1[] = {0x100};
    static const uint64_t sm2[] = {0xffffffffffffffdfull}; /* all but byte 5 */
    crec_idx *ix = crec_calloc(1, sizeof *ix);
    crec_fmt_keyframe *p = crec_calloc(1, sizeof *p);
    uint8_t *v = crec_malloc(64);

    ix->rec_size = 123456;
    ix->rec_hash = 0xfeedfacecafebeefull;
    ix->nspan = 3;
    ix->spans = crec_calloc(3, sizeof *ix->spans);
    ix->spans[0] = (crec_idx_span){.start = 0, .kf = 0, .ntouch = 3, .nwrite = 1, .nk = 0,
                                   .touch = dup64(t0, 3), .touch_mask = dup64(tm0, 3),
                                   .write = dup64(w0, 1), .write_mask = dup64(wm0, 1),
                                   .k = dup64(k1, 0), .flags = CREC_IDX_VALUED,
                                   .write_values = line_values(1)};
    ix->spans[1] = (crec_idx_span){.start = 1000000, .kf = 1, .ntouch = 3, .nwrite = 1,
                                   .nk = 1, .touch = dup64(t1b, 3), .touch_mask = dup64(tm1b, 3),
                                   .write = dup64(w0, 1), .write_mask = dup64(wm0, 1),
                                   .k = dup64(k1, 2), .flags = CREC_IDX_VALUED,
                                   .write_values = line_values(5), .nstale = 1,
                                   .stale = dup64(st1, 1), .stale_mask = dup64(stm1, 1)};
    p->tid = 1, p->global_icount = p->thread_icount = 1125000;
    p->regs.rip = 0x401000, p->regs.gpr[CREC_RSP] = 0x7ffe0000;
    p->reads_off = 77, p->events_off = 99, p->hits_before = 3;
    memset(v, 0xab, 64);
    v[5] = 0; /* not in the mask: not kept */
    ix->spans[2] = (crec_idx_span){.start = 1125000, .kf = 1, .at_point = 1, .point = p,
                                   .nlines = 1, .lines = dup64(t1, 1), .values = v,
                                   .masks = dup64(sm2, 1),
                                   .touch = dup64(t1, 0), .touch_mask = dup64(t1, 0),
                                   .write = dup64(t1, 0), .write_mask = dup64(t1, 0),
                                   .k = dup64(t1, 0)};
    ix->spans[0].cost = 1500, ix->spans[1].cost = 1, ix->spans[2].cost = 250000;
    ix->nkf = 3;
    ix->kfs = crec_calloc(3, sizeof *ix->kfs);
    ix->kf_off = crec_calloc(3, sizeof *ix->kf_off);
    for (size_t i = 0; i < 3; i++) {
        ix->kfs[i] = (crec_fmt_keyframe){.tid = 1, .global_icount = 1000000 * i,
                                         .thread_icount = 1000000 * i, .reads_off = 10 * i,
                                         .events_off = 20 * i, .seq_off = 0,
                                         .hits_before = i};
        ix->kf_off[i] = 300 * i;
    }
    ix->nblobs = 2;
    ix->blobs = crec_calloc(2, sizeof *ix->blobs);
    ix->blobs[0] = (crec_fmt_blob_loc){{{1, 2, 3}}, 18, 4096};
    ix->blobs[1] = (crec_fmt_blob_loc){{{9, 9}}, 5000, 123};
    return ix;
}

static void encode(const crec_idx *ix, crec_fmt_buf *b)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(crec_idx_encode(ix, b), CREC_OK);
}

Test(index, round_trip)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};

    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_idx_need_all(back, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(back->rec_size, 123456);
    cr_expect_eq(back->rec_hash, 0xfeedfacecafebeefull);
    cr_assert_eq(back->nspan, 3);
    for (size_t i = 0; i < 3; i++) {
        const crec_idx_span *a = &ix->spans[i], *c = &back->spans[i];
        cr_expect_eq(a->start, c->start);
        cr_expect_eq(a->kf, c->kf);
        cr_expect_eq(a->cost, c->cost);
        cr_expect_eq(c->seed_bytes, a->at_point ? 63u : 0u, "span %zu", i); /* all but byte 5 */
        cr_assert_eq(a->at_point, c->at_point);
        cr_assert_eq(a->nlines, c->nlines);
        if (a->at_point) {
            cr_expect_eq(memcmp(&a->point->regs, &c->point->regs, sizeof a->point->regs), 0);
            cr_expect_eq(c->point->reads_off, 77);
            cr_expect_eq(c->point->events_off, 99);
            cr_expect_eq(c->point->hits_before, 3);
            cr_expect_eq(memcmp(a->lines, c->lines, 8 * a->nlines), 0);
            cr_expect_eq(memcmp(a->masks, c->masks, 8 * a->nlines), 0);
            for (size_t l = 0; l < a->nlines; l++)
                for (unsigned k = 0; k < 64; k++)
                    if (a->masks[l] >> k & 1)
                        cr_expect_eq(a->values[64 * l + k], c->values[64 * l + k]);
        }
        cr_assert_eq(a->ntouch, c->ntouch);
        cr_assert_eq(a->nwrite, c->nwrite);
        cr_assert_eq(a->nk, c->nk);
        cr_expect_eq(memcmp(a->touch, c->touch, a->ntouch * 8), 0);
        cr_expect_eq(memcmp(a->touch_mask, c->touch_mask, a->ntouch * 8), 0);
        cr_expect_eq(memcmp(a->write, c->write, a->nwrite * 8), 0);
        cr_expect_eq(memcmp(a->write_mask, c->write_mask, a->nwrite * 8), 0);
        cr_expect_eq(memcmp(a->k, c->k, a->nk * 16), 0);
        cr_expect_eq(a->flags, c->flags);
        cr_assert_eq(a->nstale, c->nstale);
        for (size_t l = 0; l < a->nstale; l++)
            cr_expect(a->stale[l] == c->stale[l] && a->stale_mask[l] == c->stale_mask[l]);
        cr_assert_eq(!a->write_values, !c->write_values);
        for (size_t l = 0; a->write_values && l < a->nwrite; l++)
            for (unsigned k = 0; k < 64; k++)
                if (a->write_mask[l] >> k & 1)
                    cr_expect_eq(a->write_values[64 * l + k], c->write_values[64 * l + k],
                                 "span %zu line %zu byte %u", i, l, k);
    }
    cr_assert_eq(back->nkf, 3);
    cr_expect_eq(memcmp(back->kfs, ix->kfs, 3 * sizeof *ix->kfs), 0);
    cr_expect_eq(memcmp(back->kf_off, ix->kf_off, 3 * sizeof *ix->kf_off), 0);
    cr_assert_eq(back->nblobs, 2);
    cr_expect_eq(memcmp(back->blobs, ix->blobs, 2 * sizeof *ix->blobs), 0);
    crec_idx_free(back);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

/* n spans at key frames, each touching two lines and storing bytes 0..3
 * of one of seven, every tenth with a kernel write: blocks of many spans. */
static crec_idx *many(size_t n)
{
    crec_idx *ix = crec_calloc(1, sizeof *ix);

    ix->nspan = n;
    ix->spans = crec_calloc(n, sizeof *ix->spans);
    for (size_t i = 0; i < n; i++) {
        uint64_t t[2] = {0x100 + i % 7, 0x1000 + i}, tm[2] = {0xff, 0xf0};
        uint64_t w[1] = {0x100 + i % 7}, wm[1] = {0x0f}, k[2] = {0x40000 + 64 * i, 100};
        uint8_t *v = crec_calloc(1, 64);
        v[0] = (uint8_t)i, v[3] = (uint8_t)(3 * i);
        ix->spans[i] = (crec_idx_span){.start = 1000 * i, .kf = i, .cost = i + 1, .ntouch = 2,
                                       .touch = dup64(t, 2), .touch_mask = dup64(tm, 2),
                                       .nwrite = 1, .write = dup64(w, 1),
                                       .write_mask = dup64(wm, 1), .write_values = v,
                                       .flags = CREC_IDX_VALUED, .nk = i % 10 == 0,
                                       .k = dup64(k, 2)};
    }
    ix->nkf = n + 1;
    ix->kfs = crec_calloc(n + 1, sizeof *ix->kfs);
    ix->kf_off = crec_calloc(n + 1, sizeof *ix->kf_off);
    for (size_t i = 0; i <= n; i++)
        ix->kfs[i] = (crec_fmt_keyframe){.tid = 1, .global_icount = 1000 * i,
                                         .thread_icount = 1000 * i},
        ix->kf_off[i] = 100 * i;
    return ix;
}

/* Every span of ix through a writer, then its image: head and tail in b. */
static int write_through(crec_idx *ix, int threaded, crec_fmt_buf *b)
{
    crec_idx_writer *w;
    const uint8_t *tail = NULL;
    size_t n = ix->nspan, tail_len = 0;
    int rc = crec_idx_writer_new(&w, threaded);

    memset(b, 0, sizeof *b);
    for (size_t i = 0; rc == CREC_OK && i < n; i++)
        rc = crec_idx_writer_add(w, &ix->spans[i]);
    for (size_t i = 0; i < n; i++) /* those not handed over (a failure) */
        crec_idx_span_clear(&ix->spans[i]);
    crec_free(ix->spans);
    ix->spans = NULL, ix->nspan = 0;
    if (rc == CREC_OK)
        rc = crec_idx_writer_finish(w, ix, b, &tail, &tail_len);
    crec_fmt_buf_bytes(b, tail, tail_len);
    if (rc == CREC_OK && b->nomem)
        rc = CREC_ERR_NOMEM;
    crec_idx_writer_free(w);
    return rc;
}

Test(index, a_writer_writes_what_encode_does,
     .description = "a span at a time, on its thread or not, over several blocks")
{
    for (int threaded = 0; threaded < 2; threaded++)
        for (size_t n = 0; n < 2; n++) {
            crec_idx *a = n ? many(150) : sample(), *b = n ? many(150) : sample(), *back;
            crec_fmt_buf want, got;
            crec_error err = {0};
            encode(a, &want);
            cr_assert_eq(write_through(b, threaded, &got), CREC_OK);
            cr_expect_eq(got.len, want.len, "threaded %d: %zu bytes, encode %zu", threaded,
                         got.len, want.len);
            cr_expect_eq(memcmp(got.data, want.data, want.len < got.len ? want.len : got.len), 0);
            cr_assert_eq(b->nspan, a->nspan, "finish gives the spans' starts back");
            for (size_t i = 0; i < a->nspan; i++)
                cr_expect(b->spans[i].start == a->spans[i].start &&
                          b->spans[i].kf == a->spans[i].kf &&
                          b->spans[i].at_point == a->spans[i].at_point, "span %zu", i);
            cr_assert_eq(crec_idx_decode(got.data, got.len, &back, &err), CREC_OK, "%s", err.msg);
            cr_assert_eq(crec_idx_need_all(back, &err), CREC_OK, "%s", err.msg);
            cr_assert_eq(back->nspan, a->nspan);
            for (size_t i = 0; n && i < back->nspan; i++)
                cr_expect(back->spans[i].write_values[0] == (uint8_t)i &&
                          back->spans[i].write_values[3] == (uint8_t)(3 * i) &&
                          back->spans[i].touch[1] == 0x1000 + i, "span %zu", i);
            crec_idx_free(back);
            crec_fmt_buf_free(&want);
            crec_fmt_buf_free(&got);
            crec_idx_free(a);
            crec_idx_free(b);
        }
}

Test(index, every_allocation_failure_in_the_writer)
{
    int done = 0;

    for (unsigned long n = 1; !done && n < 100000; n++) {
        crec_idx *ix = many(70);
        crec_fmt_buf b;
        int rc;
        crec_alloc_fail_after(n);
        rc = write_through(ix, 0, &b);
        crec_alloc_fail_after(0);
        cr_assert(rc == CREC_OK || rc == CREC_ERR_NOMEM, "n=%lu rc=%d", n, rc);
        done = rc == CREC_OK;
        crec_fmt_buf_free(&b);
        crec_idx_free(ix);
    }
    cr_assert(done);
}

Test(index, a_gathered_span_is_put_in_order,
     .description = "lines sorted and merged, values by slot, unread lines stale, the seed")
{
    static const crec_idx_line lines[] = {
        {0x30, 0xff, 0x0f, 0, 1}, {0x10, 0x1, 0, 0, CREC_IDX_NO_SLOT},
        {0x30, 0xff00, 0, 0xf0, CREC_IDX_NO_SLOT}, /* the page taken again */
        {0x20, 0x3, 0x3, 0, CREC_IDX_NO_SLOT},     /* stored, not readable */
        {0x40, 0x1, 0, 0x1, 0}};
    static const crec_idx_granule needs[] = {
        {17, 0x1122334455667788ull, 0x0f}, {3, 0xaa, 0x01}, {16, 0xbbcc, 0x03}};
    crec_idx_gathered g = {.s = {.start = 5, .at_point = 1}};
    crec_idx_span *s = &g.s;

    g.lines = crec_malloc(sizeof lines), g.nlines = 5;
    memcpy(g.lines, lines, sizeof lines);
    g.needs = crec_malloc(sizeof needs), g.nneeds = 3;
    memcpy(g.needs, needs, sizeof needs);
    g.values = crec_calloc(2, 64);
    g.values[0] = 0x40, g.values[64] = 0x30;
    cr_assert_eq(crec_idx_gathered_close(&g), 0);
    cr_expect_eq(g.lines, NULL);
    cr_assert_eq(s->ntouch, 4);
    cr_expect(s->touch[0] == 0x10 && s->touch[1] == 0x20 && s->touch[2] == 0x30 &&
              s->touch[3] == 0x40);
    cr_expect(s->touch_mask[0] == 0x1 && s->touch_mask[1] == 0x3 &&
              s->touch_mask[2] == 0xffff && s->touch_mask[3] == 0x1);
    cr_assert_eq(s->nwrite, 3);
    cr_expect(s->write[0] == 0x20 && s->write[1] == 0x30 && s->write[2] == 0x40);
    cr_expect(s->write_mask[0] == 0x3 && s->write_mask[1] == 0xff && s->write_mask[2] == 0x1);
    cr_expect_eq(s->write_values[64], 0x30, "line 0x30 from slot 1");
    cr_expect_eq(s->write_values[128], 0x40, "line 0x40 from slot 0");
    cr_assert_eq(s->nstale, 3);
    cr_expect(s->stale[0] == 0x20 && s->stale_mask[0] == 0x3, "not read: all its stores");
    cr_expect(s->stale[1] == 0x30 && s->stale_mask[1] == 0xf0, "stored before the kernel");
    cr_expect(s->stale[2] == 0x40 && s->stale_mask[2] == 0x1);
    cr_expect(s->flags & CREC_IDX_VALUED);
    cr_assert_eq(s->nlines, 2);
    cr_expect(s->lines[0] == 0 && s->masks[0] == 1ull << 24 && s->values[24] == 0xaa);
    cr_expect(s->lines[1] == 2 && s->masks[1] == 0xf03);
    cr_expect(s->values[64] == 0xcc && s->values[65] == 0xbb && s->values[72] == 0x88 &&
              s->values[75] == 0x55);
    crec_idx_gathered_clear(&g);
}

Test(index, a_block_filter_passes_over_what_it_never_touched)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};

    ix->spans[1].nk = 0; /* no kernel write: the filter holds only the lines touched */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    for (size_t sp = 0; sp < 3; sp++) {
        cr_expect(crec_idx_may_touch(back, sp, 0x101 << 6, 8), "line 0x101 is touched");
        cr_expect(crec_idx_may_touch(back, sp, (0x4000 << 6) + 63, 1), "line 0x4000");
        cr_expect(crec_idx_may_touch(back, sp, (7 << 6) + 60, 8), "a range into line 8: line 7");
        cr_expect(crec_idx_may_touch(back, sp, 0x1000000, 1ull << 20), "too long to ask: may");
    }
    /* lines nothing touched: most are passed over (a filter may err the other way) */
    size_t passed = 0;
    for (uint64_t l = 0x200000; l < 0x200000 + 1000; l++)
        passed += !crec_idx_may_touch(back, 0, l << 6, 64);
    cr_expect(passed > 900, "%zu of 1000 untouched lines passed over", passed);
    cr_expect_eq(back->spans[0].ntouch, 0, "not decoded to answer");
    crec_idx_free(back);
    crec_fmt_buf_free(&b);

    /* a kernel write: its lines are in the filter; unknown ones: anything may be */
    ix->spans[1].nk = 1; /* 0x5000..0x5010 */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_expect(crec_idx_may_touch(back, 2, 0x500f, 1), "the kernel wrote it");
    crec_idx_free(back);
    crec_fmt_buf_free(&b);
    ix->spans[1].flags |= CREC_IDX_WILD;
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_expect(crec_idx_may_touch(back, 0, 0x200000 << 6, 64), "a wild span: anything");
    crec_idx_free(back);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

Test(index, values_of_every_mask_shape)
{
    /* a line whole, bytes in runs, a byte alone, the last byte: each span's
     * values are XORed with the last values before it (codec.c) */
    static const uint64_t masks[] = {~0ull, 0xf0f0000000000ff1ull, 1ull << 63, 0x8000000000000001ull};
    crec_fmt_buf b;
    crec_error err = {0};

    for (size_t m = 0; m < sizeof masks / sizeof *masks; m++) {
        crec_idx *ix = sample(), *back = NULL;
        for (size_t i = 0; i < 2; i++) {
            ix->spans[i].write_mask[0] = masks[m] >> i | masks[m]; /* the second a superset */
            for (unsigned k = 0; k < 64; k++)
                ix->spans[i].write_values[k] = (uint8_t)(7 * k + 13 * i + m);
        }
        encode(ix, &b);
        cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
        cr_assert_eq(crec_idx_need_all(back, &err), CREC_OK, "%s", err.msg);
        for (size_t i = 0; i < 2; i++)
            for (unsigned k = 0; k < 64; k++)
                if (ix->spans[i].write_mask[0] >> k & 1)
                    cr_expect_eq(back->spans[i].write_values[k], ix->spans[i].write_values[k],
                                 "mask %zu span %zu byte %u", m, i, k);
        crec_idx_free(back);
        crec_idx_free(ix);
        crec_fmt_buf_free(&b);
    }
}

Test(index, lookups)
{
    crec_idx *ix = sample();

    cr_expect(crec_idx_touches(ix, 0, 0x100 << 6, 8, 0));
    cr_expect_not(crec_idx_touches(ix, 0, (0x100 << 6) + 8, 8, 0)); /* line, not bytes */
    cr_expect(crec_idx_touches(ix, 0, (0x100 << 6) + 7, 2, 0));
    cr_expect(crec_idx_touches(ix, 0, (0x101 << 6) + 63, 1, 0));
    cr_expect_not(crec_idx_touches(ix, 0, 0x102 << 6, 8, 0));
    cr_expect(crec_idx_touches(ix, 0, (0x102 << 6) - 4, 8, 0)); /* spans two lines */
    cr_expect(crec_idx_touches(ix, 0, (0x101 << 6) + 11, 4, 1));
    cr_expect_not(crec_idx_touches(ix, 0, (0x101 << 6) + 12, 4, 1)); /* loaded, not stored */
    cr_expect_not(crec_idx_touches(ix, 0, 0x100 << 6, 8, 1));
    cr_expect(crec_idx_touches(ix, 0, (0x4000ull << 6) + 60, 8, 0));
    cr_expect_not(crec_idx_touches(ix, 0, 0x4000ull << 6, 63, 0));
    cr_expect_not(crec_idx_touches(ix, 0, 0x3fffull << 6, 64, 0));
    /* kernel writes count as writes, by byte range */
    cr_expect(crec_idx_touches(ix, 1, 0x500f, 1, 1));
    cr_expect_not(crec_idx_touches(ix, 1, 0x5010, 1, 1));
    cr_expect_not(crec_idx_touches(ix, 1, 0x4ff8, 8, 0));
    cr_expect(crec_idx_kernel_writes(ix, 1, 0x4ff8, 9));
    cr_expect_not(crec_idx_kernel_writes(ix, 0, 0x5000, 1));
    ix->spans[1].flags = CREC_IDX_WILD;
    cr_expect(crec_idx_touches(ix, 1, 0x123456789, 1, 1));
    cr_expect_eq(crec_idx_span_at(ix, 0), 0);
    cr_expect_eq(crec_idx_span_at(ix, 999999), 0);
    cr_expect_eq(crec_idx_span_at(ix, 1000000), 1);
    cr_expect_eq(crec_idx_span_at(ix, 1124999), 1);
    cr_expect_eq(crec_idx_span_at(ix, 1125000), 2);
    cr_expect_eq(crec_idx_span_at(ix, 99999999), 2);
    crec_idx_free(ix);
}

/* What a span leaves a byte, seen after its end: the rule of the answer
 * (docs/QUERY.md, "Answering"). */
Test(index, byte_at_end)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};
    uint64_t l101 = 0x101 << 6;
    uint8_t v = 0;

    /* from the file: the values are read when asked for */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_idx_need(back, 1, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_idx_byte_at_end(back, 1, l101 + 9, &v), CREC_IDX_BYTE_REPLAY,
                 "values not read yet: a replay");
    cr_assert_eq(crec_idx_need_values(back, 1, l101, 64, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_idx_byte_at_end(back, 1, l101 + 9, &v), CREC_IDX_BYTE_VALUE);
    cr_expect_eq(v, 6);
    /* span 0's were worked out for span 1's, not kept: asked, from the start */
    cr_expect_eq(crec_idx_byte_at_end(back, 0, l101 + 8, &v), CREC_IDX_BYTE_REPLAY);
    cr_assert_eq(crec_idx_need_values(back, 0, l101, 64, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_idx_byte_at_end(back, 0, l101 + 8, &v), CREC_IDX_BYTE_VALUE);
    cr_expect_eq(v, 1);
    cr_expect_eq(crec_idx_byte_at_end(back, 1, l101 + 9, &v), CREC_IDX_BYTE_VALUE);
    cr_expect_eq(v, 6);
    crec_idx_free(back);
    crec_fmt_buf_free(&b);

    cr_expect_eq(crec_idx_byte_at_end(ix, 0, l101 + 11, &v), CREC_IDX_BYTE_VALUE);
    cr_expect_eq(v, 4);
    cr_expect_eq(crec_idx_byte_at_end(ix, 0, l101 + 12, &v), CREC_IDX_BYTE_LOADED);
    cr_expect_eq(crec_idx_byte_at_end(ix, 0, 0x100 << 6, &v), CREC_IDX_BYTE_LOADED);
    cr_expect_eq(crec_idx_byte_at_end(ix, 0, (0x100 << 6) + 8, &v), CREC_IDX_BYTE_NONE);
    cr_expect_eq(crec_idx_byte_at_end(ix, 0, 0x5000, &v), CREC_IDX_BYTE_NONE);
    /* stored, then written by the kernel: a replay says which came last */
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, l101 + 8, &v), CREC_IDX_BYTE_REPLAY);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, l101 + 10, &v), CREC_IDX_BYTE_VALUE);
    cr_expect_eq(v, 7);
    /* the kernel wrote it: loaded too (in some order) or not */
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 0x5000, &v), CREC_IDX_BYTE_REPLAY);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 0x500f, &v), CREC_IDX_BYTE_KERNEL);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 0x5010, &v), CREC_IDX_BYTE_NONE);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 7 << 6, &v), CREC_IDX_BYTE_LOADED);
    cr_expect_eq(crec_idx_byte_at_end(ix, 2, l101 + 8, &v), CREC_IDX_BYTE_NONE);
    /* no values kept, or the kernel wrote unknown ranges: a replay */
    ix->spans[0].flags = 0;
    cr_expect_eq(crec_idx_byte_at_end(ix, 0, l101 + 9, &v), CREC_IDX_BYTE_REPLAY);
    ix->spans[1].flags = CREC_IDX_VALUED | CREC_IDX_WILD;
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, l101 + 9, &v), CREC_IDX_BYTE_REPLAY);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 7 << 6, &v), CREC_IDX_BYTE_REPLAY);
    cr_expect_eq(crec_idx_byte_at_end(ix, 1, 0x123456, &v), CREC_IDX_BYTE_KERNEL);
    crec_idx_free(ix);
}

Test(index, values_must_fit)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};

    ix->spans[1].flags = 0; /* a span without values: none are in the file */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_idx_need_values(back, 0, 0x101 << 6, 64, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(back->spans[1].write_values, NULL);
    crec_idx_free(back);
    crec_fmt_buf_free(&b);
    ix->spans[1].flags = CREC_IDX_VALUED;
    crec_free(ix->spans[1].write_values);
    ix->spans[1].write_values = NULL; /* valued with no values: can't be written */
    memset(&b, 0, sizeof b);
    cr_expect_eq(crec_idx_encode(ix, &b), CREC_ERR_NOMEM);
    crec_fmt_buf_free(&b);
    crec_idx_free(ix);
}

static int decode_rc(const uint8_t *p, size_t n)
{
    crec_idx *ix = NULL;
    crec_error err = {0};
    int rc = crec_idx_decode(p, n, &ix, &err);

    if (rc == CREC_OK)
        rc = crec_idx_need_all(ix, &err);
    crec_idx_free(ix);
    if (rc == CREC_OK)
        return rc;
    cr_expect(err.msg[0] != 0, "an error names the problem");
    return rc;
}

Test(index, spans_must_follow_each_other)
{
    crec_idx *ix = sample();
    crec_fmt_buf b;

    ix->spans[2].kf = 2; /* a point in a segment its span did not start */
    encode(ix, &b);
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    crec_fmt_buf_free(&b);
    ix->spans[2].kf = 1;
    ix->spans[2].point->global_icount = 1125001; /* not where its span starts */
    encode(ix, &b);
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

Test(index, line_mask)
{
    cr_expect_eq(crec_idx_line_mask(2, 128, 64), ~0ull);
    cr_expect_eq(crec_idx_line_mask(2, 100, 200), ~0ull);
    cr_expect_eq(crec_idx_line_mask(2, 130, 3), 0x1cull);
    cr_expect_eq(crec_idx_line_mask(2, 190, 8), 3ull << 62); /* runs into line 3 */
    cr_expect_eq(crec_idx_line_mask(3, 190, 8), 0x3full);
}

Test(index, corrupt_rejected)
{
    crec_idx *ix = sample();
    crec_fmt_buf b;

    encode(ix, &b);
    cr_expect_eq(decode_rc(b.data, 10), CREC_ERR_CORRUPT);       /* short */
    cr_expect_eq(decode_rc(b.data, b.len - 1), CREC_ERR_CORRUPT); /* cut */
    b.data[b.len - 1] ^= 1;                                       /* body bit flip */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    b.data[b.len - 1] ^= 1;
    b.data[0] = 'X';                                              /* magic */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    b.data[0] = 'C';
    b.data[8] = 9;                                                /* version */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_VERSION);
    b.data[8] = 4; /* version 4 had no values: an index to build anew */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_VERSION);
    b.data[8] = 6;
    cr_expect_eq(decode_rc(b.data, b.len), CREC_OK);
    b.data[8] = 5; /* a version 6 table read as 5: its costs are stray numbers */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

Test(index, corrupt_body_lengths)
{
    crec_idx *ix = sample();
    crec_fmt_buf b;

    encode(ix, &b);
    b.data[48] ^= 1; /* the decompressed length no longer matches */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    b.data[48] ^= 1;
    b.data[55] = 0x40; /* a huge body from a few bytes: refused before allocating */
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

Test(index, corrupt_body_with_valid_checksum)
{
    /* a body that breaks a rule, with a checksum that matches it */
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};

    ix->spans[0].touch[1] = ix->spans[0].touch[0]; /* not increasing: delta 0 */
    encode(ix, &b);
    cr_expect_eq(decode_rc(b.data, b.len), CREC_ERR_CORRUPT);
    cr_expect_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "read lazily");
    cr_expect_eq(crec_idx_need(back, 0, &err), CREC_ERR_CORRUPT);
    cr_expect(strstr(err.msg, "not increasing") != NULL, "%s", err.msg);
    crec_idx_free(back);
    crec_fmt_buf_free(&b);

    ix->spans[0].touch[1] = 0x101;
    ix->spans[1].touch_mask[0] = 0; /* a touched line with no byte touched */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK);
    cr_expect_eq(crec_idx_need_all(back, &err), CREC_ERR_CORRUPT);
    cr_expect(strstr(err.msg, "empty byte mask") != NULL, "%s", err.msg);
    crec_idx_free(back);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

/* ---- version 5, and a point read alone (replay --jobs) ------------------ */

#include <xxhash.h>
#include <zstd.h>

/* The index image b as version 5 wrote it: the same, but no cost and seed
 * size after each span's key frame in the table, and no filters after the
 * spans. */
static void as_version_5(crec_fmt_buf *b)
{
    size_t tz = crec_le_get(b->data + 48, 4), tlen = crec_le_get(b->data + 52, 4), at = 0;
    uint8_t *t = crec_malloc(tlen), *t5 = crec_malloc(tlen);
    uint8_t *z = crec_malloc(ZSTD_compressBound(tlen));
    size_t n5 = 0, z5, rest;
    uint64_t nspan, v;
    crec_fmt_buf out = {0};

    cr_assert_eq(ZSTD_decompress(t, tlen, b->data + 56, tz), tlen);
    at += (size_t)crec_varint_get(t, tlen, &nspan);
    memcpy(t5, t, at), n5 = at;
    for (uint64_t i = 0; i < nspan; i++)
        for (int f = 0; f < 4; f++) { /* start, key frame | point, cost, seed */
            int len = crec_varint_get(t + at, tlen - at, &v);
            cr_assert(len > 0);
            if (f < 2)
                memcpy(t5 + n5, t + at, (size_t)len), n5 += (size_t)len;
            at += (size_t)len;
        }
    at += (size_t)crec_varint_get(t + at, tlen - at, &v); /* the filters */
    for (uint64_t n = v, f = 0; f < n; f++) {
        uint64_t log2;
        at += (size_t)crec_varint_get(t + at, tlen - at, &log2);
        at += (size_t)crec_varint_get(t + at, tlen - at, &v); /* flags */
        at += log2 ? (size_t)1 << (log2 - 3) : 0;
    }
    cr_assert(at < tlen);
    memcpy(t5 + n5, t + at, tlen - at), n5 += tlen - at;
    z5 = ZSTD_compress(z, ZSTD_compressBound(tlen), t5, n5, 3);
    cr_assert(!ZSTD_isError(z5));
    rest = z5 + (b->len - 56 - tz);
    crec_fmt_buf_bytes(&out, b->data, 56);
    crec_fmt_buf_bytes(&out, z, z5);
    crec_fmt_buf_bytes(&out, b->data + 56 + tz, b->len - 56 - tz);
    crec_le_put(out.data + 8, 5, 4);
    crec_le_put(out.data + 32, rest, 8);
    crec_le_put(out.data + 40, XXH3_64bits(out.data + 56, rest), 8);
    crec_le_put(out.data + 48, z5, 4);
    crec_le_put(out.data + 52, n5, 4);
    crec_fmt_buf_free(b);
    *b = out;
    crec_free(t), crec_free(t5), crec_free(z);
}

Test(index, version_5_is_read_without_costs)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};

    encode(ix, &b);
    as_version_5(&b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_idx_need_all(back, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(back->nspan, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(back->spans[i].start, ix->spans[i].start);
        cr_expect_eq(back->spans[i].cost, 0, "not known");
        cr_expect_eq(back->spans[i].seed_bytes, 0);
        cr_expect_eq(back->spans[i].nlines, ix->spans[i].nlines);
    }
    crec_idx_free(back);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

Test(index, a_point_is_read_alone)
{
    crec_idx *ix = sample(), *back = NULL;
    crec_fmt_buf b;
    crec_error err = {0};
    const crec_idx_span *s;

    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_idx_need_point(back, 0, &err), CREC_OK, "no point there: nothing to do");
    cr_assert_eq(crec_idx_need_point(back, 2, &err), CREC_OK, "%s", err.msg);
    s = &back->spans[2];
    cr_assert(s->point != NULL);
    cr_expect_eq(s->point->reads_off, 77);
    cr_assert_eq(s->nlines, 1);
    cr_expect_eq(s->lines[0], 0x7);
    cr_expect_eq(s->masks[0], 0xffffffffffffffdfull);
    cr_expect_eq(s->values[0], 0xab);
    cr_expect_eq(s->values[5], 0, "not in the mask");
    cr_expect_eq(back->spans[0].ntouch, 0, "the other spans' lists are not read");
    cr_expect_eq(crec_idx_need_point(back, 2, &err), CREC_OK, "again: kept");
    /* then the whole block: the point is read again, nothing leaks */
    cr_assert_eq(crec_idx_need_all(back, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(back->spans[0].ntouch, 3);
    cr_expect_eq(back->spans[2].point->reads_off, 77);
    cr_expect_eq(back->spans[2].values[63], 0xab);
    crec_idx_free(back);
    crec_fmt_buf_free(&b);

    ix->spans[2].masks[0] = 0; /* a restored line with no byte: corrupt */
    encode(ix, &b);
    cr_assert_eq(crec_idx_decode(b.data, b.len, &back, &err), CREC_OK, "read lazily");
    cr_expect_eq(crec_idx_need_point(back, 2, &err), CREC_ERR_CORRUPT);
    cr_expect(strstr(err.msg, "empty mask") != NULL, "%s", err.msg);
    cr_expect(back->spans[2].point == NULL, "nothing half read is kept");
    crec_idx_free(back);
    crec_idx_free(ix);
    crec_fmt_buf_free(&b);
}

/* ---- a bad index file is rebuilt, and the handle says so ------------------ */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *d;

    cr_assert(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    d = malloc(*len);
    cr_assert(fread(d, 1, *len, f) == *len);
    fclose(f);
    return d;
}

static void spit(const char *path, const uint8_t *d, size_t len)
{
    FILE *f = fopen(path, "wb");

    cr_assert(f && fwrite(d, 1, len, f) == len);
    fclose(f);
}

/* environ@end of traces-sample/hello.crec, through the index. */
static uint64_t environ_at_end(const char *path, const char **note)
{
    crec_recording *rec = NULL;
    crec_error err = {0};
    uint64_t addr = 0, v = 0;
    uint8_t b[8];

    cr_assert_eq(crec_open(path, 0, &rec, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_lookup_symbol(rec, "environ", &addr, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_seek(rec, crec_length(rec), &err), CREC_OK);
    cr_assert_eq(crec_read_memory(rec, addr, 8, b, NULL, NULL, &err), CREC_OK, "%s", err.msg);
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    *note = crec_index_note(rec) ? strdup(crec_index_note(rec)) : NULL;
    crec_close(rec);
    return v;
}

/* Damage the index file at `at`, then make its checksum right again. */
static void damage_index(const char *ipath, size_t at)
{
    size_t len;
    uint8_t *d = slurp(ipath, &len);
    uint64_t sum;

    cr_assert(at < len);
    for (size_t i = at; i < at + 16 && i < len; i++)
        d[i] ^= 0x5a;
    sum = XXH3_64bits(d + 56, len - 56);
    for (int i = 0; i < 8; i++)
        d[40 + i] = (uint8_t)(sum >> (8 * i));
    spit(ipath, d, len);
    free(d);
}

Test(index, bad_index_is_rebuilt)
{
    char dir[] = "/tmp/crec-idx-XXXXXX", path[64], ipath[80];
    const char *note = NULL;
    size_t len, table;
    uint8_t *d;
    uint64_t want;

    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hello.crec", dir);
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    d = slurp("traces-sample/hello.crec", &len);
    spit(path, d, len);
    free(d);
    want = environ_at_end(path, &note); /* builds and saves the index */
    cr_expect_null(note, "%s", note);
    d = slurp(ipath, &len);
    table = 56 + (d[48] | d[49] << 8 | (size_t)d[50] << 16 | (size_t)d[51] << 24);
    free(d);

    /* a block that can't be decoded, found only by a query */
    cr_assert(table + 8 < len);
    damage_index(ipath, table + 8);
    cr_expect_eq(environ_at_end(path, &note), want);
    cr_expect(note && strstr(note, ".idx") && strstr(note, "rebuilt"), "%s", note);
    free((void *)note);
    cr_expect_eq(environ_at_end(path, &note), want);
    cr_expect_null(note, "rebuilt and saved: %s", note);

    /* a table that can't be decoded, found when the recording is opened */
    damage_index(ipath, 60);
    cr_expect_eq(environ_at_end(path, &note), want);
    cr_expect(note && strstr(note, ".idx") && strstr(note, "rebuilt"), "%s", note);
    free((void *)note);
    cr_expect_eq(environ_at_end(path, &note), want);
    cr_expect_null(note, "%s", note);

    unlink(ipath);
    unlink(path);
    rmdir(dir);
}

/* ---- time: seek, step, tell (the CLI's WHEN+N uses them) ------------------- */

Test(index, step_moves_the_current_time_within_the_recording)
{
    crec_recording *rec;
    crec_error err = {0};
    uint64_t end;

    cr_assert_eq(crec_open("traces-sample/hello.crec", 0, &rec, &err), CREC_OK, "%s", err.msg);
    end = crec_length(rec);
    cr_assert_gt(end, 100);
    cr_expect_eq(crec_tell(rec), 0, "a recording opens at time 0");
    cr_assert_eq(crec_seek(rec, 50, &err), CREC_OK);
    cr_assert_eq(crec_step(rec, 7, &err), CREC_OK);
    cr_expect_eq(crec_tell(rec), 57);
    cr_assert_eq(crec_step(rec, -57, &err), CREC_OK);
    cr_expect_eq(crec_tell(rec), 0);
    cr_expect_eq(crec_step(rec, -1, &err), CREC_ERR_ARG, "before the start");
    cr_expect(strstr(err.msg, "can't step back 1 instructions from 0") != NULL, "%s", err.msg);
    cr_expect_eq(crec_tell(rec), 0, "a failed step leaves the time");
    cr_assert_eq(crec_seek(rec, end, &err), CREC_OK);
    cr_expect_eq(crec_step(rec, 1, &err), CREC_ERR_ARG, "past the end");
    cr_expect(strstr(err.msg, "past the end of the recording") != NULL, "%s", err.msg);
    cr_expect_eq(crec_step(rec, INT64_MIN, &err), CREC_ERR_ARG);
    cr_expect_eq(crec_tell(rec), end);
    crec_close(rec);
}

/* ---- processes: traces-sample/v3-procs.crec (pid 2107 forks 2108, which
 * runs execve of the same program) ------------------------------------------ */

Test(index, processes_listed_opened_and_replayed_one_at_a_time)
{
    char dir[] = "/tmp/crec-idx-XXXXXX", path[64], ipath[80];
    crec_process_info *p;
    crec_recording *rec;
    crec_regs regs;
    crec_error err = {0};
    size_t n, len;
    uint8_t *d;

    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/procs.crec", dir);
    d = slurp("traces-sample/v3-procs.crec", &len);
    spit(path, d, len);
    free(d);

    cr_assert_eq(crec_list_processes(path, &p, &n, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_expect_eq(p[0].pid, 2107);
    cr_expect_eq(p[0].how, CREC_PROCESS_ROOT);
    cr_expect_eq(p[0].exit_how, CREC_EXIT_STATUS);
    cr_expect_eq(p[0].instructions, 3009);
    cr_expect_eq(p[1].pid, 2108);
    cr_expect_eq(p[1].ppid, 2107);
    cr_expect_eq(p[1].image, 1);
    cr_expect_eq(p[1].how, CREC_PROCESS_FORK);
    cr_expect_eq(p[1].parent, 0);
    cr_expect_eq(p[1].exit_how, CREC_EXIT_EXEC);
    cr_expect_eq(p[1].exit_value, 2);
    cr_expect_eq(p[2].pid, 2108);
    cr_expect_eq(p[2].image, 2);
    cr_expect_eq(p[2].how, CREC_PROCESS_EXEC);
    cr_expect_eq(p[2].parent, 1);
    cr_expect(p[2].ended);
    cr_expect_eq(p[2].exit_value, 7);
    cr_expect_eq(p[2].instructions, 136203);
    cr_assert_eq(p[2].argc, 2);
    cr_expect_str_eq(p[2].argv[1], "child");
    crec_processes_free(p, n);

    /* process 2 in its own time: the signal's handler entered at 134648 */
    cr_assert_eq(crec_open_process(path, 2, 0, &rec, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_length(rec), 136203);
    cr_assert_eq(crec_seek(rec, 134648, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_read_registers(rec, &regs, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(regs.rip, 0x401139);
    /* and process 0 through the same handle */
    cr_assert_eq(crec_reopen_process(&rec, 0, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(crec_length(rec), 3009);
    cr_assert_eq(crec_seek(rec, 2619, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_read_registers(rec, &regs, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(regs.rip, 0x401144); /* the SIGSEGV handler */
    cr_expect_eq(crec_reopen_process(&rec, 3, &err), CREC_ERR_NOTFOUND);
    crec_close(rec);
    cr_expect_eq(crec_open_process(path, 3, 0, &rec, &err), CREC_ERR_NOTFOUND);

    /* a replay of one pid's second program, then of all */
    {
        crec_replay_options o = {.pid = 2108, .image = 2};
        crec_replay_result res;
        cr_assert_eq(crec_replay_run(path, &o, &res, &err), CREC_OK, "%s", err.msg);
        cr_expect(!res.diverged, "%s", res.div.what);
        cr_expect_eq(res.replayed, 136203);
        o.pid = 0, o.image = 0;
        cr_assert_eq(crec_replay_run(path, &o, &res, &err), CREC_OK, "%s", err.msg);
        cr_expect(!res.diverged, "%s", res.div.what);
        cr_expect_eq(res.processes, 3);
        cr_expect_eq(res.replayed, 3009 + 194 + 136203);
        o.pid = 4094;
        cr_expect_eq(crec_replay_run(path, &o, &res, &err), CREC_ERR_NOTFOUND);
    }

    snprintf(ipath, sizeof ipath, "%s.p2.idx", path);
    unlink(ipath);
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    unlink(ipath);
    unlink(path);
    rmdir(dir);
}
