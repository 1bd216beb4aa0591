/*
 * rec_index.c - the summarization index (docs/QUERY.md), gathered while
 * recording, so that the first query after a recording finds it ready.
 *
 * Building the index afterwards means replaying the whole recording with
 * every access reported (index/build.c): several times the cost of the
 * recording itself.  The recorder sees every access anyway, and its
 * prediction cache already finds the page of each one: two bytes a
 * granule there (touch, wrote) hold what the current span loaded and
 * stored, and a load the cache predicted that reads bytes the span did
 * not touch before gives those bytes to the span's seed (what a replay
 * starting at the span must be given, index/build.c).  A span ends at a
 * key frame, and at a restart point: at a block start at or after every
 * REC_IX_POINT_DIV-th of the check-point interval since the span began,
 * where the vector state a point can't hold is unused, as the index's own
 * build offers them, once what the span holds (its lines and seed) costs
 * the index less than REC_IX_BITS_MILLI thousandths of a bit an
 * instruction, or the span is REC_IX_SPAN_MAX long.  A query replays at
 * most one span: spans are short where they cost little (a loop over
 * little data), longer where every one would hold much (a program that
 * goes through megabytes), so that the index stays about the size of the
 * recording.  When the span ends its pages are walked into the index's
 * lists.
 *
 * Recordings of one thread and one process only (a second thread, a fork
 * or an execve turns it off: the index of threads, or of each process, is
 * built by the first query); not to a pipe (-o -), nor with --ring,
 * --start-at, --stop-at or --max-size (record.c, rec_start).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

static void ix_off(struct rec_session *rs)
{
    rs->ix.on = 0;
}

static int push(void **v, size_t *n, size_t *cap, size_t size, const void *item)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 256;
        void *g = crec_realloc(*v, ncap * size);
        if (!g)
            return -1;
        *v = g, *cap = ncap;
    }
    memcpy((uint8_t *)*v + *n * size, item, size);
    (*n)++;
    return 0;
}

/* The lines of page p that the span touched, into the span's list. */
static void page_lines(struct rec_session *rs, const struct crec_pcache_page *p)
{
    for (unsigned g0 = 0; g0 < CREC_PCACHE_PAGE_GRANULES; g0 += 8) {
        crec_idx_line l = {p->page * (CREC_PCACHE_PAGE / 64) + g0 / 8, 0, 0, 0,
                           CREC_IDX_NO_SLOT};
        for (unsigned k = 0; k < 8; k++) {
            l.touch |= (uint64_t)p->touch[g0 + k] << (8 * k);
            l.write |= (uint64_t)p->wrote[g0 + k] << (8 * k);
        }
        if (l.touch && push((void **)&rs->ix.lines, &rs->ix.nlines, &rs->ix.caplines,
                            sizeof l, &l) != 0)
            ix_off(rs);
    }
}

/* The cache gives up a page the span used: its lines now. */
static void on_evict(void *ctx, const struct crec_pcache_page *p)
{
    page_lines(ctx, p);
}

void rec_ix_start(struct rec_session *rs, int on)
{
    memset(&rs->ix, 0, sizeof rs->ix);
    rs->ix.on = on && crec_idx_writer_new(&rs->ix.writer, 1) == CREC_OK;
    rs->ix.point_every = rs->cp_interval / REC_IX_POINT_DIV;
    if (rs->ix.point_every < REC_IX_POINT_MIN)
        rs->ix.point_every = 0;
    crec_thread_cpu_lap(&rs->ix.cpu_at);
}

void rec_ix_attach(struct rec_session *rs, crec_pcache *pc)
{
    pc->evict = on_evict;
    pc->evict_ctx = rs;
}

void rec_ix_need(struct rec_session *rs, const struct crec_pcache_page *p, unsigned g,
                 unsigned mask)
{
    crec_idx_granule n = {p->page * CREC_PCACHE_PAGE_GRANULES + g,
                          pcache_load_le(p->bytes + 8 * g, 8), mask};

    if (!rs->ix.on) /* turned off (threads, a fork): nothing gathers it */
        return;
    if (push((void **)&rs->ix.needs, &rs->ix.nneeds, &rs->ix.capneeds, sizeof n, &n) != 0)
        ix_off(rs);
}

void rec_ix_access(struct rec_session *rs, uint64_t addr, unsigned size, int store,
                   int predicted)
{
    if (!rs->ix.on)
        return;
    while (size > 0) {
        unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);
        unsigned n = CREC_PCACHE_GRANULE - off < size ? CREC_PCACHE_GRANULE - off : size;
        unsigned mask = (0xffu >> (8 - n)) << off;
        struct crec_pcache_page *p = crec_pcache_page_of(rs->pc, addr / CREC_PCACHE_PAGE);
        unsigned g = (unsigned)(addr % CREC_PCACHE_PAGE / CREC_PCACHE_GRANULE);
        if (!p) { /* beyond user space, or no memory: the span can't be told */
            ix_off(rs);
            return;
        }
        if (predicted && (mask & ~p->touch[g]))
            rec_ix_need(rs, p, g, mask & ~p->touch[g]);
        p->touch[g] |= (uint8_t)mask;
        if (store)
            p->wrote[g] |= (uint8_t)mask;
        addr += n, size -= n;
    }
}

/* Bytes of line l's mask `m` were stored, then written by the kernel. */
static void add_stale(struct rec_session *rs, uint64_t line, uint64_t m)
{
    crec_idx_line l = {line, 0, 0, m, CREC_IDX_NO_SLOT};

    if (push((void **)&rs->ix.lines, &rs->ix.nlines, &rs->ix.caplines, sizeof l, &l) != 0)
        ix_off(rs);
}

/*
 * The kernel wrote [addr, end): the bytes of it the span stored so far
 * hold the kernel's value now, not their store's.  Their store bits move
 * to stale lines, so that what stays is the bytes stored since their last
 * kernel write, whose values the span's end holds (close_values).  The
 * span's pages are looked at, and the lines of pages given up.
 */
static void kernel_stales(struct rec_session *rs, uint64_t addr, uint64_t end)
{
    crec_pcache *pc = rs->pc;
    size_t n = rs->ix.nlines;

    for (size_t i = 0; i < pc->nspanp; i++) {
        struct crec_pcache_page *p = pc->spanp[i];
        uint64_t base = p->page * CREC_PCACHE_PAGE;
        if (p->span != pc->span || base >= end || base + CREC_PCACHE_PAGE <= addr)
            continue;
        for (unsigned g0 = 0; g0 < CREC_PCACHE_PAGE_GRANULES; g0 += 8) {
            uint64_t line = base / 64 + g0 / 8, w = pcache_load_le(p->wrote + g0, 8), m;
            if (!w || line * 64 >= end || (line + 1) * 64 <= addr ||
                !(m = w & crec_idx_line_mask(line, addr, end - addr)))
                continue;
            for (unsigned k = 0; k < 8; k++)
                p->wrote[g0 + k] &= (uint8_t)~(m >> (8 * k));
            add_stale(rs, line, m);
        }
    }
    for (size_t i = 0; i < n; i++) { /* pages given up before */
        crec_idx_line *l = &rs->ix.lines[i];
        uint64_t m;
        if (l->write && (l->line + 1) * 64 > addr && l->line * 64 < end &&
            (m = l->write & crec_idx_line_mask(l->line, addr, end - addr)) != 0) {
            l->write &= ~m;
            l->stale |= m;
        }
    }
}

void rec_ix_kernel(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    uint64_t k[2] = {addr, len};

    if (addr == 0 && len == UINT64_MAX) {
        rs->ix.flags |= CREC_IDX_WILD;
        return;
    }
    if (!rs->ix.on)
        return;
    if (len > 0 && rs->ix.open)
        kernel_stales(rs, addr, addr + len < addr ? UINT64_MAX : addr + len);
    if (push((void **)&rs->ix.k, &rs->ix.nk, &rs->ix.capk, sizeof k, k) != 0)
        ix_off(rs);
}

/* Read guest memory (span_values): a line at a time, mostly of pages the
 * hooks' table of host pages holds already. */
static int guest_read(struct rec_session *rs, void *dst, uint64_t addr, uint64_t len)
{
    const uint8_t *h = crec_emu_hostpages_find(&rs->hostpages, rs->cpu, addr, (unsigned)len);

    if (!h)
        return crec_emu_mem_read(rs->cpu, dst, addr, len);
    memcpy(dst, h, len);
    return 0;
}

/*
 * The values the span's stores left, from guest memory at its end (a
 * later query takes them rather than replaying the span), read now, before
 * the program goes on, for each line with stored bytes: the writer's
 * thread puts the lines in order.  A line that can't be read (unmapped
 * since) keeps no slot: its bytes are a replay's.  @return -1 out of memory.
 */
static int span_values(struct rec_session *rs, crec_idx_gathered *g)
{
    size_t n = 0;

    for (size_t i = 0; i < g->nlines; i++)
        n += (g->lines[i].write | g->lines[i].stale) != 0;
    if (!(g->values = crec_malloc((n ? n : 1) * 64)))
        return -1;
    n = 0;
    for (size_t i = 0; i < g->nlines; i++) {
        crec_idx_line *l = &g->lines[i];
        if ((l->write | l->stale) && guest_read(rs, g->values + 64 * n, l->line * 64, 64) == 0)
            l->slot = n++;
    }
    return 0;
}

/* End the span being gathered: handed to the index's writer. */
static void close_span(struct rec_session *rs)
{
    crec_idx_gathered g = {.s = rs->ix.cur};
    crec_pcache *pc = rs->pc;

    if (!rs->ix.open)
        return;
    rs->ix.open = 0;
    if (pc->span_lost)
        ix_off(rs);
    for (size_t i = 0; rs->ix.on && i < pc->nspanp; i++)
        if (pc->spanp[i]->span == pc->span) /* else given to another page since */
            page_lines(rs, pc->spanp[i]);
    memset(&rs->ix.cur, 0, sizeof rs->ix.cur);
    if (rs->ix.on) {
        g.s.flags = rs->ix.flags;
        /* what it cost to record, where replay --jobs cuts (replayer/session.c) */
        g.s.cost = crec_thread_cpu_lap(&rs->ix.cpu_at);
        g.s.k = rs->ix.k ? rs->ix.k : crec_malloc(sizeof *g.s.k);
        g.s.nk = rs->ix.nk;
        rs->ix.k = NULL, rs->ix.nk = rs->ix.capk = 0;
        /* the lists go with the span; the next one makes its own */
        g.lines = rs->ix.lines, g.nlines = rs->ix.nlines;
        rs->ix.lines = NULL, rs->ix.nlines = rs->ix.caplines = 0;
        if (g.s.at_point) {
            g.needs = rs->ix.needs, g.nneeds = rs->ix.nneeds;
            rs->ix.needs = NULL, rs->ix.nneeds = rs->ix.capneeds = 0;
        }
        if (!g.s.k || span_values(rs, &g) != 0) {
            crec_idx_gathered_clear(&g);
            ix_off(rs);
        } else if (crec_idx_writer_add_gathered(rs->ix.writer, &g) != CREC_OK) { /* took g */
            ix_off(rs);
        } else {
            rs->ix.nspans++;
        }
    } else {
        crec_idx_span_clear(&g.s);
    }
    rs->ix.nlines = rs->ix.nneeds = rs->ix.nk = 0;
    rs->ix.flags = 0;
    crec_pcache_new_span(pc);
}

void rec_ix_keyframe(struct rec_session *rs, uint64_t icount, int last)
{
    close_span(rs);
    if (last || !rs->ix.on)
        return;
    rs->ix.cur = (crec_idx_span){.start = icount, .kf = rs->ix.nkf++};
    rs->ix.open = 1;
    rs->ix.last_start = icount;
    rs->ix.next_offer = icount + rs->ix.point_every;
}

void rec_ix_point(struct rec_session *rs, const crec_fmt_keyframe *p)
{
    crec_fmt_keyframe *copy;

    if (!rs->ix.open || !rs->ix.on)
        return;
    if (!(copy = crec_malloc(sizeof *copy))) {
        ix_off(rs);
        return;
    }
    *copy = *p;
    close_span(rs);
    rs->ix.cur = (crec_idx_span){.start = p->global_icount, .kf = rs->ix.nkf - 1,
                                 .at_point = 1, .point = copy};
    rs->ix.open = 1;
    rs->ix.last_start = p->global_icount;
    rs->ix.next_offer = p->global_icount + rs->ix.point_every;
}

/* Would the current span cost the index more than `limit` bytes?  About
 * 10 bytes a line touched (a delta and a mask), 10 a granule of its seed.
 * It stops counting there: a span over a 16 MiB table has 4096 pages to
 * walk, at every restart point offered (bench_hash: 14% of recording). */
static int span_bytes_over(const struct rec_session *rs, uint64_t limit)
{
    const crec_pcache *pc = rs->pc;
    uint64_t n = rs->ix.nlines + rs->ix.nneeds;

    for (size_t i = 0; i < pc->nspanp && 10 * n <= limit; i++) {
        const struct crec_pcache_page *p = pc->spanp[i];
        if (p->span != pc->span)
            continue;
        for (unsigned g = 0; g < CREC_PCACHE_PAGE_GRANULES; g += 8) {
            uint64_t w = pcache_load_le(p->touch + g, 8);
            n += w != 0;
        }
    }
    return 10 * n > limit;
}

int rec_ix_point_due(struct rec_session *rs, uint64_t icount)
{
    uint64_t len;

    if (!rs->ix.on || !rs->ix.open || !rs->ix.point_every || icount < rs->ix.next_offer ||
        crec_emu_cpu_xstate_touched(rs->cpu))
        return 0;
    rs->ix.next_offer = icount + rs->ix.point_every; /* if this one is not taken */
    len = icount - rs->ix.last_start;
    /* cheap enough: 8000 * bytes <= REC_IX_BITS_MILLI * len */
    return len >= REC_IX_SPAN_MAX || !span_bytes_over(rs, REC_IX_BITS_MILLI * len / 8000);
}

void rec_ix_save(struct rec_session *rs, const char *path)
{
    crec_error err = {0};

    close_span(rs);
    if (!rs->ix.on || rs->ix.nspans == 0)
        return; /* what was gathered before it was turned off: rec_ix_free's */
    if (crec_idx_save_writer(path, rs->proc, rs->ix.writer, &err) == CREC_OK)
        rs->stats.indexed = 1;
    rs->ix.writer = NULL; /* crec_idx_save_writer freed it */
    rs->ix.nspans = 0;
}

void rec_ix_stop(struct rec_session *rs)
{
    rs->ix.on = 0;
    crec_idx_writer_free(rs->ix.writer); /* its thread ends here */
    rs->ix.writer = NULL;
}

void rec_ix_free(struct rec_session *rs)
{
    crec_idx_writer_free(rs->ix.writer);
    crec_idx_span_clear(&rs->ix.cur);
    crec_free(rs->ix.lines);
    crec_free(rs->ix.needs);
    crec_free(rs->ix.k);
    memset(&rs->ix, 0, sizeof rs->ix);
}
