/*
 * record.c - `crec record`: run a program under emu/ and log what a replay
 * could not work out for itself.
 *
 * Per thread, three streams (docs/FORMAT.md), and a prediction cache:
 *   READS   (hits, value) each time the thread's cache missed a load;
 *   EVENTS  syscall results, CPUID and RDTSC answers, memory-map changes
 *           (its own, and FOREIGN copies of the others'), its start and end;
 *   SEQ     sequencing points, once a second thread exists: a global
 *           sequence number at every syscall, atomic instruction, thread
 *           start, wake and switch of the CPU.
 * Globally: a KEYFRAME every N of a thread's instructions (its registers;
 * its cache is then flushed so that its next segment replays alone),
 * snapshots, code blobs.
 *
 * Nothing is logged for stores: the replay executes them.  Bytes the
 * emulated kernel writes are not logged either: the cache never saw them,
 * so the program's next load of a changed byte misses and is logged then.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

/* The header says what the cache was; the reader honours only these. */
_Static_assert(CREC_PCACHE_GRANULE == CREC_FMT_GRANULE, "the format's granule");
_Static_assert(CREC_PCACHE_MIN_LOG2 == CREC_FMT_CACHE_LOG2_MIN &&
                   CREC_PCACHE_MAX_LOG2 == CREC_FMT_CACHE_LOG2_MAX,
               "the cache sizes a reader accepts");

/* How much wall time of recording a SIGKILL may lose at most (rec_sync). */
#define REC_SYNC_SECONDS 1.0

/* The recording can't go on (its file can't be written, or memory ran
 * out): stop the program for good.  Only stopping the CPU would run the
 * same instruction again, and fail again, for ever. */
void rec_fail(struct rec_session *rs, const crec_error *err)
{
    if (!rs->failed) {
        rs->failed = 1;
        rs->err = *err;
    }
    crec_emu_stop(rs->emu);
}

/* Hand the pending READS bytes to the writer. */
int rec_flush_reads(struct rec_session *rs)
{
    crec_error err = {0};
    int rc;

    if (rs->reads.len == 0 && !rs->reads.nomem)
        return CREC_OK;
    rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_READS, rs->tid, &rs->reads, &err);
    crec_fmt_buf_reset(&rs->reads);
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* ---- sequencing ------------------------------------------------------------ */

/* A SEQ entry for thread t, with the next global sequence number. */
static void rec_seq(struct rec_session *rs, struct rec_thread *t, uint64_t icount, int kind)
{
    crec_fmt_seq e = {rs->seq++, icount, (uint32_t)kind};

    if (crec_fmt_seq_encode(&t->seq, &t->seq_ctx, &e) != CREC_OK) {
        crec_error err;
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory buffering the SEQ stream");
        rec_fail(rs, &err);
    }
}

/* Hand thread t's pending SEQ entries to the writer. */
static int rec_flush_seq(struct rec_session *rs, struct rec_thread *t)
{
    crec_error err = {0};
    int rc;

    t->seq_atomics = 0;
    t->seq_atomics_last = 0;
    if (t->seq.len == 0 && !t->seq.nomem)
        return CREC_OK;
    rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_SEQ, t->tid, &t->seq, &err);
    crec_fmt_buf_reset(&t->seq);
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/*
 * The atomic instructions of a block get their sequence numbers when the
 * block starts (it runs to its end unless something cuts it, and no other
 * thread runs meanwhile).  When it was cut (an exact switch, an RDTSC that
 * leaves its block, a fault) the entries of instructions that did not run,
 * after `icount`, are taken back; their numbers are simply not used.
 */
static void rec_seq_take_back_slow(struct rec_thread *t, uint64_t icount)
{
    crec_fmt_cur c = {t->seq.data, t->seq.len, t->seq_atomics};
    crec_fmt_seq_ctx ctx = t->seq_atomics_ctx;

    while (c.pos < c.len) {
        size_t at = c.pos;
        crec_fmt_seq_ctx before = ctx;
        crec_fmt_seq e;
        if (crec_fmt_seq_decode(CREC_FMT_VERSION, &c, &ctx, &e, NULL) != CREC_OK)
            return;
        if (e.kind == CREC_FMT_SEQ_ATOMIC && e.icount > icount) {
            t->seq.len = at;
            t->seq_ctx = before;
            return;
        }
    }
}

static inline void rec_seq_take_back(struct rec_thread *t, uint64_t icount)
{
    if (icount < t->seq_atomics_last) /* else (most blocks) every one of them ran */
        rec_seq_take_back_slow(t, icount);
}

/* A block of the running thread starts at its count `before`. */
static void rec_seq_block(struct rec_session *rs, uint64_t before)
{
    struct rec_thread *t = rs->cur;
    const uint16_t *idx;
    unsigned n;

    rec_seq_take_back(t, before);
    if (t->seq.len >= CREC_FMT_DEFAULT_CHUNK)
        rec_flush_seq(rs, t);
    t->seq_atomics = t->seq.len;
    t->seq_atomics_ctx = t->seq_ctx;
    n = crec_emu_cpu_block_atomics(rs->cpu, &idx);
    for (unsigned i = 0; i < n; i++)
        rec_seq(rs, t, before + idx[i] + 1, CREC_FMT_SEQ_ATOMIC);
    t->seq_atomics_last = n ? before + idx[n - 1] + 1 : 0; /* idx ascending */
}

/* ---- events --------------------------------------------------------------------- */

/* One event into thread tid's EVENTS stream. */
static int rec_event_to(struct rec_session *rs, uint32_t tid, const crec_fmt_event *ev)
{
    crec_error err = {0};
    int rc;

    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_ev_encode(&rs->scratch, ev);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_EVENTS, tid, &rs->scratch, &err);
    else
        crec_error_set(&err, rc, "out of memory encoding an event");
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

int rec_event(struct rec_session *rs, const crec_fmt_event *ev)
{
    return rec_event_to(rs, rs->tid, ev);
}

int rec_foreign_mmap(struct rec_session *rs, const crec_fmt_event *ev)
{
    crec_fmt_event copy = *ev;

    copy.u.mmap.flags |= CREC_FMT_EV_FOREIGN;
    for (size_t i = 0; i < rs->nthreads; i++) {
        struct rec_thread *t = rs->threads[i];
        if (!t || !t->live || t == rs->cur)
            continue;
        /* its replay alone loses its bytes there: its cache must too */
        if (ev->u.mmap.op != CREC_FMT_MM_PROTECT)
            crec_pcache_forget(t->pc, ev->u.mmap.addr, ev->u.mmap.len);
        if (rec_event_to(rs, t->tid, &copy) != CREC_OK)
            return rs->err.code;
    }
    return CREC_OK;
}

/*
 * The kernel wrote [addr, addr+len) (a syscall's output, a thread's exit):
 * with several threads, every cache forgets it.  A replay of the whole
 * program does not rewrite what the kernel wrote, so its memory there holds
 * the last value a thread loaded or stored; a thread's cache may still hold
 * that value from before another thread's store, and the kernel's write may
 * have brought it back: a hit would then read the other thread's value.
 * (With one thread the cache holds that last value itself, and a hit is
 * right.)  len UINT64_MAX: anywhere.
 */
static void rec_kernel_wrote(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    if (!rs->multi)
        return;
    for (size_t i = 0; i < rs->nthreads; i++) {
        struct rec_thread *t = rs->threads[i];
        if (!t)
            continue;
        if (len == UINT64_MAX)
            crec_pcache_flush(t->pc);
        else
            crec_pcache_forget(t->pc, addr, len);
    }
}

/* The host address of [addr, addr+size) when it lies in one mapped guest
 * page, else NULL: the table of recent pages spares most loads a search of
 * the memory map. */
static inline const uint8_t *rec_guest_bytes(struct rec_session *rs, uint64_t addr,
                                              unsigned size)
{
    return crec_emu_hostpages_find(&rs->hostpages, rs->cpu, addr, size);
}

/* Log a load the cache did not predict: the whole granules it touched, and
 * let the cache know all of their bytes. */
static void rec_log_load(struct rec_session *rs, uint64_t addr, unsigned size)
{
    uint8_t copy[CREC_PCACHE_MAX_ACCESS];
    const uint8_t *span;
    uint64_t start;
    unsigned len = crec_fmt_read_span(addr, size, &start);

    span = rec_guest_bytes(rs, start, len);
    if (!span) { /* across two pages */
        crec_emu_mem_read(rs->cpu, copy, start, len);
        span = copy;
    }
    crec_pcache_write(rs->pc, start, span, len);
    if (crec_fmt_read_encode(&rs->reads, rs->hits, span, len) != CREC_OK ||
        rs->reads.nomem) {
        crec_error err;
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory buffering the read stream");
        rec_fail(rs, &err);
    }
    rs->stats.reads_hit += rs->hits;
    rs->hits = 0;
    rs->stats.reads_logged++;
    if (rs->reads.len >= CREC_FMT_DEFAULT_CHUNK)
        rec_flush_reads(rs);
}

/* A load whose bytes are at `bytes`: predicted, or logged with the hits
 * before it. */
static inline void rec_check_load(struct rec_session *rs, uint64_t addr, unsigned size,
                                  const uint8_t *bytes)
{
    int hit = crec_pcache_read(rs->pc, addr, bytes, size);

    /* before logging: the index needs the cache's bytes of a predicted load */
    rec_ix_access(rs, addr, size, 0, hit);
    if (hit)
        rs->hits++; /* counted into stats.reads_hit when logged */
    else
        rec_log_load(rs, addr, size);
}

/*
 * One load of `size` bytes, by the program or by the kernel reading a
 * syscall's buffer, wherever it lies.  The bytes loaded are copied to `out`
 * when it is not NULL.  @return -1 if it is not mapped (the replay skips
 * such a load the same way), else 0.
 */
static int rec_load(struct rec_session *rs, uint64_t addr, unsigned size, uint8_t *out)
{
    uint8_t copy[CREC_PCACHE_MAX_ACCESS];
    const uint8_t *bytes = rec_guest_bytes(rs, addr, size);

    if (!bytes) {
        if (crec_emu_mem_read(rs->cpu, copy, addr, size) != 0)
            return -1;
        bytes = copy;
    }
    if (out)
        memcpy(out, bytes, size);
    rec_check_load(rs, addr, size, bytes);
    return 0;
}

/* A load or a store: Unicorn's, or one of an instruction emu executes
 * itself (AVX and up), which emu reports through the same hook. */
/* After a slow path brought guest page `page` into the cache's table: say
 * where it is in host memory, for the fast path of the next access. */
static void rec_bind_host(struct rec_session *rs, uint64_t page)
{
    struct crec_pcache_tlbe *e = pcache_tlb(rs->pc, page);

    if (e && !e->host)
        e->host = crec_emu_hostpages_find(&rs->hostpages, rs->cpu, page * CREC_PAGE_SIZE,
                                          CREC_PAGE_SIZE);
}

static void rec_mem_hook(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    struct rec_session *rs = ctx;
    uint64_t page = addr / CREC_PAGE_SIZE;
    unsigned off = (unsigned)(addr % CREC_PAGE_SIZE);
    struct crec_pcache_tlbe *e = pcache_tlb(rs->pc, page);
    const uint8_t *bytes;

    /* Most accesses: inside one granule of a page in the cache's table.
     * The page also keeps, for the index, what the span did with it. */
    if (e && e->host && off % CREC_PCACHE_GRANULE + size <= CREC_PCACHE_GRANULE) {
        struct crec_pcache_page *p = e->p;
        unsigned g = off / CREC_PCACHE_GRANULE;
        uint8_t m = (uint8_t)((0xffu >> (8 - size)) << (off % CREC_PCACHE_GRANULE));
        if (kind != CREC_EMU_LOAD) {
            pcache_put(p, off, size, value);
            p->touch[g] |= m;
            p->wrote[g] |= m;
            rec_mark_dirty(rs, addr, (uint64_t)size);
            return;
        }
        if (pcache_hit(p, off, size, pcache_load_le(e->host + off, size))) {
            if (m & ~p->touch[g]) /* the span had not touched these bytes */
                rec_ix_need(rs, p, g, m & ~p->touch[g]);
            p->touch[g] |= m;
            rs->hits++; /* counted into stats.reads_hit when logged */
            return;
        }
    }
    if (size > CREC_PCACHE_MAX_ACCESS)
        return;
    if (kind == CREC_EMU_LOAD) {
        /* most loads lie in a page the table knows: compared in place */
        bytes = rec_guest_bytes(rs, addr, (unsigned)size);
        if (bytes)
            rec_check_load(rs, addr, size, bytes);
        else
            rec_load(rs, addr, size, NULL);
        rec_bind_host(rs, page);
        return;
    }
    /* A store: Unicorn passes the value (up to 8 bytes), little-endian. */
    if (size > 8)
        crec_pcache_forget(rs->pc, addr, (uint64_t)size);
    else
        crec_pcache_store(rs->pc, addr, (uint64_t)value, (unsigned)size);
    rec_ix_access(rs, addr, size, 1, 0);
    rec_mark_dirty(rs, addr, (uint64_t)size);
    rec_bind_host(rs, page);
}

/*
 * The first read since the key frame of register state a key frame does
 * not hold (the upper parts of ymm/zmm, zmm16-31, k0-7): logged in the
 * READS stream as a value no cache predicted, so a replay from the key
 * frame gets it at the same point.
 */
static void rec_xstate(void *ctx, uint8_t *bytes, unsigned len)
{
    struct rec_session *rs = ctx;

    if (crec_fmt_read_encode(&rs->reads, rs->hits, bytes, len) != CREC_OK || rs->reads.nomem) {
        crec_error err;
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory buffering the read stream");
        rec_fail(rs, &err);
    }
    rs->hits = 0;
    rs->stats.reads_logged++;
}

static int rec_kernel_read(void *ctx, uint64_t addr, unsigned len, uint8_t *out)
{
    return rec_load(ctx, addr, len, out);
}

/* ---- key frames ---------------------------------------------------------- */

/*
 * A key frame of the running thread: its registers (`regs`, or the CPU's)
 * at global count `icount` and its own count `ticount`.  At a block start
 * `rip` is the block's address: Unicorn's RIP register is not up to date
 * inside a block hook (it may still point into the previous block).  0:
 * the registers' own RIP.
 */
static int rec_fill_point(struct rec_session *rs, uint64_t icount, uint64_t ticount,
                          uint64_t rip, const crec_regs *regs, crec_fmt_keyframe *out)
{
    crec_fmt_keyframe kf = {0};
    crec_error err;

    if (rec_flush_reads(rs) != CREC_OK || rec_flush_seq(rs, rs->cur) != CREC_OK)
        return CREC_ERR_IO;
    rs->cur->seq_ctx.fresh = 1; /* a replay from here reads SEQ from here */
    kf.tid = rs->tid;
    kf.global_icount = icount;
    kf.thread_icount = ticount;
    if (regs) {
        kf.regs = *regs;
    } else if (crec_emu_regs_get(rs->cpu, &kf.regs, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return CREC_ERR_EMU;
    }
    if (rip)
        kf.regs.rip = rip;
    kf.reads_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_READS, rs->tid);
    kf.events_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_EVENTS, rs->tid);
    kf.seq_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_SEQ, rs->tid);
    kf.hits_before = rs->hits;
    *out = kf;
    return CREC_OK;
}

/*
 * A point of the running thread at global count `icount` and its own
 * count `ticount`: a key frame (`key`), after which its cache is flushed
 * and the memory map listed, so that a replay can start there; or a check
 * point, which a replay checks but does not start at (docs/FORMAT.md).
 */
static int rec_point(struct rec_session *rs, uint64_t icount, uint64_t ticount, uint64_t rip,
                     const crec_regs *regs, int key)
{
    crec_fmt_keyframe kf;
    crec_error err = {0};
    int rc = rec_fill_point(rs, icount, ticount, rip, regs, &kf);

    if (rc != CREC_OK)
        return rc;
    crec_fmt_buf_reset(&rs->scratch);
    rc = key ? crec_fmt_kf_encode(&rs->scratch, &kf) : crec_fmt_cp_encode(&rs->scratch, &kf);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_KEYFRAMES, 0, &rs->scratch, &err);
    if (rc != CREC_OK) {
        rec_fail(rs, &err);
        return rc;
    }
    if (!key) { /* a replay checks it, but does not start there */
        rs->stats.checkpoints++;
        return CREC_OK;
    }
    rs->cur->last_kf = ticount;
    rs->cur->has_kf = 1;
    rec_ix_keyframe(rs, icount, rs->finishing); /* a span of the index starts */
    crec_pcache_flush(rs->pc);
    crec_emu_cpu_xstate_forget(rs->cpu);
    rs->stats.keyframes++;
    return rec_write_listing(rs);
}

int rec_keyframe(struct rec_session *rs, uint64_t icount, uint64_t ticount, uint64_t rip,
                 const crec_regs *regs)
{
    return rec_point(rs, icount, ticount, rip, regs, 1);
}

static double monotonic_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Right after a key frame, at most once a second: write every stream's
 * pending bytes as chunks.  A recorder killed with SIGKILL (or a crash of
 * crec itself) then leaves a file readable up to that key frame, so at most
 * about a second of the run is lost; without this, small streams such as
 * KEYFRAMES would sit in memory until the end.
 */
static void rec_sync(struct rec_session *rs)
{
    double now = monotonic_seconds();

    if (rs->failed || now - rs->last_sync < REC_SYNC_SECONDS)
        return;
    rs->last_sync = now;
    rec_flush_held(rs);
}

/* Hand the writer every byte the recorder holds but the running thread's
 * SEQ entries (its block's atomics may yet be taken back), and write every
 * stream's pending bytes as chunks. */
void rec_flush_held(struct rec_session *rs)
{
    crec_error err = {0};

    if (rs->failed || rec_flush_reads(rs) != CREC_OK)
        return;
    for (size_t i = 0; i < rs->nthreads; i++) {
        struct rec_thread *t = rs->threads[i];
        crec_fmt_buf *reads;
        if (!t || !t->live)
            continue;
        if (t != rs->cur && (reads = &t->reads)->len > 0) {
            if (crec_fmt_write_buf(rs->w, CREC_FMT_S_READS, t->tid, reads, &err) != CREC_OK) {
                rec_fail(rs, &err);
                return;
            }
            crec_fmt_buf_reset(reads);
        }
        /* the running block's atomics may yet be taken back */
        if (t != rs->cur && rec_flush_seq(rs, t) != CREC_OK)
            return;
    }
    if (crec_fmt_flush_all(rs->w, &err) != CREC_OK)
        rec_fail(rs, &err);
}

/*
 * Every block start: take a key frame of the running thread when one is
 * due, give the block's atomic instructions their sequence numbers, and
 * notice that the caller asked to stop (crec_record_options.stop: the
 * CLI's SIGINT or SIGTERM), which ends the recording cleanly at this point.
 */
/*
 * Is the point the running thread reaches at its count `tnow` a key frame?
 * With a fixed interval, every so many instructions.  Otherwise where a
 * key frame costs little.  Its flush of the cache makes the thread log
 * again what it goes on using, and what it used since the last flush (the
 * granules whose loads the cache predicted, crec_pcache_reused_over) is what
 * the next flush will cost, about.  A key frame is taken once that cost,
 * spread over the instructions since the last one, is below
 * REC_KF_BITS_MILLI thousandths of a bit an instruction; or, after
 * REC_KF_FLOOR instructions, below REC_KF_FLOOR_BITS_MILLI, so that most
 * runs have key frames enough for `crec replay --jobs` to share out
 * (docs/ARCHITECTURE.md, "Key frames and check points").
 */
static int rec_keyframe_due(struct rec_session *rs, uint64_t tnow)
{
    struct rec_thread *t = rs->cur;
    uint64_t since = tnow - t->last_kf, budget;

    if (!t->has_kf)
        return 1;
    if (!rs->kf_auto)
        return since >= rs->kf_interval;
    /* thousandths of a bit: 8 * (9 * reused + fixed) * 1000 <= budget */
    budget = (since >= REC_KF_FLOOR ? REC_KF_FLOOR_BITS_MILLI : REC_KF_BITS_MILLI) * since;
    if (budget < 8000 * REC_KF_FIXED_BYTES)
        return 0;
    return !crec_pcache_reused_over(rs->pc, (budget - 8000 * REC_KF_FIXED_BYTES) / 72000);
}

/*
 * After a key frame at global count `icount`: is a snapshot due?  With a
 * fixed interval, every so many key frames.  Otherwise when REC_SNAP_MIN
 * instructions or more ran since the last one and the pages written since
 * (what it would hold) cost less than REC_SNAP_BITS_MILLI thousandths of a
 * bit an instruction of that time.
 */
static int rec_snapshot_due(struct rec_session *rs, uint64_t icount)
{
    uint64_t since = icount - rs->last_snap, bits;

    if (!rs->snap_auto)
        return ++rs->kfs_since_snap >= rs->snap_every;
    if (since < REC_SNAP_MIN)
        return 0;
    bits = 8 * (uint64_t)CREC_PAGE_SIZE * (rs->dirty.used + 16 * rs->n_dirty_big);
    return rs->dirty_all || bits * 1000 <= REC_SNAP_BITS_MILLI * since;
}

static void rec_on_block(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount,
                         uint64_t thread_icount)
{
    struct rec_session *rs = ctx;
    uint64_t before = icount - ninsns;
    uint64_t tbefore = thread_icount - ninsns;
    int boundary = 0;

    if (rs->opt->stop && *rs->opt->stop) {
        crec_emu_stop(rs->emu);
        return;
    }
    if (rs->failed)
        return;
    if (rs->fl && (!rs->fl_calm || (rs->opt->dump && *rs->opt->dump != rs->fl_dumps_seen)) &&
        rec_flight_block(rs, addr, before, tbefore, &boundary))
        return;
    if (!rec_code_ran_known(rs, addr, ninsns)) {
        rec_code_ran(rs, addr, crec_emu_cpu_block_bytes(rs->cpu));
        if (rs->failed)
            return;
    }
    if (boundary || tbefore >= rs->cur->next_kf) {
        /* a ring segment, a part or a process image starts with a key frame */
        int key = boundary || rs->snap_full_due || rec_keyframe_due(rs, tbefore);
        rs->cur->next_kf = tbefore + rs->point_every;
        if (rs->multi)
            rec_seq_take_back(rs->cur, tbefore); /* before the point writes SEQ */
        if (boundary && rec_ring_boundary(rs, before) != CREC_OK)
            return;
        if (rec_point(rs, before, tbefore, addr, NULL, key) != CREC_OK)
            return;
        if (key) {
            /* and at a ring segment's start, so that a rotation can build
             * the memory there from the snapshots */
            if (rs->snap_full_due || boundary || rec_snapshot_due(rs, before)) {
                rec_write_snapshot(rs, before, rs->snap_full_due);
                rs->snap_full_due = 0;
                rs->kfs_since_snap = 0;
                rs->last_snap = before;
            }
            rec_sync(rs);
            if (rs->multi)
                rec_seq_block(rs, tbefore);
            return;
        }
    }
    /* a restart point of the index (its first test inline: most blocks fail it) */
    if (rs->ix.on && before >= rs->ix.next_offer && rec_ix_point_due(rs, before)) {
        crec_fmt_keyframe p;
        if (rec_fill_point(rs, before, tbefore, addr, NULL, &p) == CREC_OK)
            rec_ix_point(rs, &p);
    }
    if (rs->multi)
        rec_seq_block(rs, tbefore);
}

/* ---- syscalls and other non-determinism ---------------------------------- */

static void rec_on_syscall_enter(void *ctx, const struct crec_emu_syscall *sc)
{
    struct rec_session *rs = ctx;

    crec_error err = {0};

    (void)sc;
    if (!rs->active || rs->ended)
        return;
    if (crec_emu_regs_get(rs->cpu, &rs->cur->sys_regs, &err) != CREC_OK)
        rec_fail(rs, &err);
    rs->cur->in_syscall = 1;
    if (rs->multi)
        rec_seq(rs, rs->cur, crec_emu_thread_icount(rs->emu), CREC_FMT_SEQ_SYSCALL);
}

/* Registers the emulated kernel changed: what replay sets after the syscall. */
static void rec_changed_regs(struct rec_session *rs, const struct crec_emu_syscall *sc,
                             crec_fmt_event *ev)
{
    const crec_regs *before = &rs->cur->sys_regs;
    crec_error err = {0};
    crec_regs now;
    uint32_t n = 0;
    /* rt_sigreturn: the replay first restores every register from the
     * frame, so a register the syscall left as it was at entry may still
     * differ from the frame's (a second handler entered at its end keeps
     * the first one's RDI): all of them are listed */
    int all = sc->nr == CREC_EMU_NR_RT_SIGRETURN;

    if (crec_emu_regs_get(rs->cpu, &now, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return;
    }
    for (int i = 0; i < CREC_NGPR; i++)
        if (all || (i == CREC_RAX ? now.gpr[i] != (uint64_t)sc->ret : now.gpr[i] != before->gpr[i])) {
            /* rax is the result, unless a signal handler was entered (rax 0,
             * or the syscall's number when SA_RESTART will run it again) */
            ev->u.sys.regs[n].id = (uint32_t)i;
            ev->u.sys.regs[n++].value = now.gpr[i];
        }
    if (now.fs_base != before->fs_base) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_FS_BASE;
        ev->u.sys.regs[n++].value = now.fs_base;
    }
    if (now.gs_base != before->gs_base) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_GS_BASE;
        ev->u.sys.regs[n++].value = now.gs_base;
    }
    if (all || now.rflags != before->rflags) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_RFLAGS;
        ev->u.sys.regs[n++].value = now.rflags;
    }
    if (sc->resume_rip) { /* a signal handler's entry, or the end of rt_sigreturn */
        ev->u.sys.regs[n].id = CREC_FMT_REG_RIP;
        ev->u.sys.regs[n++].value = sc->resume_rip;
    }
    ev->u.sys.nregs = n;
}

static void rec_on_syscall_exit(void *ctx, const struct crec_emu_syscall *sc)
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_SYSCALL};
    uint64_t hash;
    int sent;

    crec_emu_hostpages_clear(&rs->hostpages); /* the map may have changed */
    crec_pcache_drop_hosts(rs->pc);
    if (rs->fl)
        rec_flight_syscall(rs, sc->nr);
    if (!rs->active || rs->ended)
        return;
    if (rs->cur->blocked && rs->multi) /* it waited: others ran meanwhile */
        rec_seq(rs, rs->cur, crec_emu_thread_icount(rs->emu), CREC_FMT_SEQ_WAKE);
    rs->cur->in_syscall = rs->cur->blocked = 0;
    for (unsigned i = 0; i < sc->n_out; i++) {
        rec_mark_dirty(rs, sc->out[i].addr, sc->out[i].len);
        rec_kernel_wrote(rs, sc->out[i].addr, sc->out[i].len);
    }
    if (sc->out_overflow) {
        rs->dirty_all = 1; /* unknown writes: the next snapshot takes every page */
        rec_kernel_wrote(rs, 0, UINT64_MAX);
    }
    ev.u.sys.icount = crec_emu_thread_icount(rs->emu);
    ev.u.sys.nr = sc->nr;
    memcpy(ev.u.sys.args, sc->args, sizeof ev.u.sys.args);
    ev.u.sys.ret = sc->ret;
    sent = crec_emu_sysout_walk(sc->nr, sc->args, sc->ret, rec_kernel_read, rs, &hash);
    if (sent == 1) {
        ev.u.sys.flags |= CREC_FMT_EV_HAS_HASH;
        ev.u.sys.write_hash = hash;
    }
    rec_changed_regs(rs, sc, &ev);
    for (unsigned i = 0; i < sc->n_out && i < CREC_FMT_SYS_MAXOUT; i++) {
        ev.u.sys.out[i].addr = sc->out[i].addr;
        ev.u.sys.out[i].len = sc->out[i].len;
        ev.u.sys.nout = i + 1;
    }
    if (ev.u.sys.nout)
        ev.u.sys.flags |= CREC_FMT_EV_HAS_OUT;
    if (sc->out_overflow || sc->n_out > CREC_FMT_SYS_MAXOUT)
        ev.u.sys.flags |= CREC_FMT_EV_OUT_MORE;
    /* what the kernel wrote, as a replay reports it from this record */
    for (uint32_t i = 0; i < ev.u.sys.nout; i++)
        rec_ix_kernel(rs, ev.u.sys.out[i].addr, ev.u.sys.out[i].len);
    if (ev.u.sys.flags & CREC_FMT_EV_OUT_MORE)
        rec_ix_kernel(rs, 0, UINT64_MAX);
    rs->stats.syscalls++;
    rec_event(rs, &ev);
}

static void rec_on_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, const uint32_t out[4])
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_CPUID};

    if (!rs->active || rs->ended)
        return;
    ev.u.cpuid.leaf = leaf;
    ev.u.cpuid.subleaf = subleaf;
    ev.u.cpuid.eax = out[0];
    ev.u.cpuid.ebx = out[1];
    ev.u.cpuid.ecx = out[2];
    ev.u.cpuid.edx = out[3];
    rec_event(ctx, &ev);
}

/* RDTSC, and RDRAND/RDSEED (docs/FORMAT.md: an RDTSC event carries both). */
static void rec_on_rdtsc(void *ctx, uint64_t value)
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_RDTSC};

    if (!rs->active || rs->ended)
        return;
    ev.u.rdtsc.value = value;
    rec_event(ctx, &ev);
}

/* A signal delivered at an instruction boundary: the registers entering
 * the handler set, and the frame it wrote (docs/FORMAT.md, SIGNAL). */
static void rec_on_signal(void *ctx, const struct crec_emu_signal *sig)
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_SIGNAL};
    crec_error err = {0};
    crec_regs now;
    uint32_t n = 0;

    if (rs->failed)
        return;
    crec_emu_hostpages_clear(&rs->hostpages);
    ev.u.sig.icount = crec_emu_thread_icount(rs->emu);
    ev.u.sig.signo = (uint32_t)sig->signo;
    ev.u.sig.code = sig->code;
    ev.u.sig.addr = sig->addr;
    ev.u.sig.flags = (sig->fault ? CREC_FMT_SIG_FAULT : 0) | (sig->fatal ? CREC_FMT_SIG_FATAL : 0);
    if (sig->before) {
        const crec_regs *b = sig->before;
        if (crec_emu_regs_get(rs->cpu, &now, &err) != CREC_OK) {
            rec_fail(rs, &err);
            return;
        }
        for (int i = 0; i < CREC_NGPR; i++)
            if (now.gpr[i] != b->gpr[i]) {
                ev.u.sig.regs[n].id = (uint32_t)i;
                ev.u.sig.regs[n++].value = now.gpr[i];
            }
        if (now.rflags != b->rflags) {
            ev.u.sig.regs[n].id = CREC_FMT_REG_RFLAGS;
            ev.u.sig.regs[n++].value = now.rflags;
        }
        ev.u.sig.regs[n].id = CREC_FMT_REG_RIP; /* the handler */
        ev.u.sig.regs[n++].value = now.rip;
    }
    ev.u.sig.nregs = n;
    for (unsigned i = 0; i < sig->n_out && i < CREC_FMT_SYS_MAXOUT; i++) {
        ev.u.sig.out[i].addr = sig->out[i].addr;
        ev.u.sig.out[i].len = sig->out[i].len;
        ev.u.sig.nout = i + 1;
        rec_mark_dirty(rs, sig->out[i].addr, sig->out[i].len);
        rec_kernel_wrote(rs, sig->out[i].addr, sig->out[i].len);
    }
    rec_event(rs, &ev);
}

static void rec_on_mem(void *ctx, const struct crec_emu_mem_event *mev)
{
    struct rec_session *rs = ctx;

    crec_emu_hostpages_clear(&rs->hostpages);
    crec_pcache_drop_hosts(rs->pc);
    if (rs->ended)
        return;
    if (rs->fl && mev->became_exec && mev->path && mev->kind != CREC_MEM_MUNMAP)
        rec_flight_image(rs, mev->path, mev->offset, mev->addr);
    if (rs->started && rs->active)
        rec_on_mem_event(rs, mev);
    else
        rec_note_image(rs, mev); /* named by the listing that starts the next part */
}

/* ---- threads --------------------------------------------------------------- */

static struct rec_thread *rec_thread_of(struct rec_session *rs, uint32_t tid)
{
    return tid >= 1 && tid <= rs->nthreads ? rs->threads[tid - 1] : NULL;
}

/* A new thread's state (its cache empty, a key frame due at its first block). */
static struct rec_thread *rec_thread_new(struct rec_session *rs, uint32_t tid)
{
    struct rec_thread *t, **p;
    crec_error err = {0};

    if (tid != rs->nthreads + 1) { /* emu numbers threads 1, 2, ... */
        crec_error_set(&err, CREC_ERR_EMU, "thread %u created after thread %zu", tid,
                       rs->nthreads);
        rec_fail(rs, &err);
        return NULL;
    }
    t = crec_calloc(1, sizeof *t);
    p = t ? crec_realloc(rs->threads, (rs->nthreads + 1) * sizeof *p) : NULL;
    if (!p || crec_pcache_create(&t->pc, rs->opt->cache_log2, &err) != CREC_OK) {
        crec_free(t);
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory for thread %u", tid);
        rec_fail(rs, &err);
        return NULL;
    }
    rs->threads = p;
    rs->threads[rs->nthreads++] = t;
    rec_ix_attach(rs, t->pc);
    t->tid = tid;
    t->live = 1;
    t->seq_ctx.fresh = 1;
    return t;
}

static void rec_thread_free(struct rec_thread *t)
{
    if (!t)
        return;
    crec_pcache_free(t->pc);
    crec_fmt_buf_free(&t->reads);
    crec_fmt_buf_free(&t->seq);
    crec_free(t);
}

/* Make thread t the running one: the hot state of the one before goes back
 * to its struct (or away, when it has exited). */
static void rec_thread_enter(struct rec_session *rs, struct rec_thread *t)
{
    struct rec_thread *old = rs->cur;

    if (old) {
        old->pc = rs->pc;
        old->reads = rs->reads;
        old->hits = rs->hits;
    }
    rs->cur = t;
    rs->tid = t->tid;
    rs->pc = t->pc;
    crec_pcache_drop_hosts(rs->pc); /* the map may have changed while it was out */
    rs->reads = t->reads;
    rs->hits = t->hits;
    memset(&t->reads, 0, sizeof t->reads);
}

static void rec_on_thread(void *ctx, const struct crec_emu_thread_event *tev)
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_THREAD};
    struct rec_thread *t;
    uint64_t ticount = crec_emu_thread_icount(rs->emu);

    if (rs->failed || rs->ended)
        return;
    if (rs->fl && tev->op == CREC_EMU_THREAD_CREATE)
        rec_flight_thread(rs);
    if (!rs->active)
        return;
    if (tev->op == CREC_EMU_THREAD_CREATE) {
        if (!rs->multi) {
            /* sequencing starts: the first thread has run since 0, and is
             * in the syscall that makes the second; its THREAD record,
             * which a program of one thread does without, says its tid */
            struct crec_emu_thread_info first;
            rs->multi = 1;
            rec_ix_stop(rs); /* the index of threads is the first query's */
            /* from its first key frame in the file: 0, unless a ring
             * dropped the start or --start-at began later */
            rec_seq(rs, rs->cur, rs->stats.recorded_from, CREC_FMT_SEQ_IN);
            rec_seq(rs, rs->cur, ticount, CREC_FMT_SEQ_SYSCALL);
            if (crec_emu_threads(rs->emu, &first, 1) >= 1) {
                ev.u.thread.op = CREC_FMT_TH_CREATE;
                ev.u.thread.tid = rs->cur->tid;
                ev.u.thread.guest_tid = first.tid;
                rec_event(rs, &ev);
            }
        }
        if (!(t = rec_thread_new(rs, tev->id)))
            return;
        rec_seq(rs, t, 0, CREC_FMT_SEQ_START);
        ev.u.thread.op = CREC_FMT_TH_CREATE;
        ev.u.thread.tid = tev->id;
        ev.u.thread.parent = tev->parent;
        ev.u.thread.guest_tid = tev->tid;
        rec_event_to(rs, t->tid, &ev);
        return;
    }
    /* the running thread ends inside its exit: its last key frame is as
     * the syscall left it (RIP past the syscall instruction) */
    t = rs->cur;
    {
        crec_regs r;
        crec_error err = {0};
        if (crec_emu_regs_get(rs->cpu, &r, &err) != CREC_OK) {
            rec_fail(rs, &err);
            return;
        }
        r.rip += 2;
        if (rec_keyframe(rs, crec_emu_cpu_icount(rs->cpu), ticount, 0, &r) != CREC_OK)
            return;
    }
    for (unsigned i = 0; i < tev->n_out; i++) { /* clear_child_tid, robust mutexes */
        rec_mark_dirty(rs, tev->out[i].addr, tev->out[i].len);
        rec_kernel_wrote(rs, tev->out[i].addr, tev->out[i].len);
    }
    if (tev->out_overflow) {
        rs->dirty_all = 1;
        rec_kernel_wrote(rs, 0, UINT64_MAX);
    }
    ev.u.thread.op = CREC_FMT_TH_EXIT;
    ev.u.thread.tid = t->tid;
    ev.u.thread.icount = ticount;
    ev.u.thread.how = CREC_FMT_TH_EXITED;
    ev.u.thread.status = (uint64_t)tev->status;
    ev.u.thread.cleared = tev->cleared;
    rec_event(rs, &ev);
    t->live = 0;
    t->in_syscall = 0;
}

static void rec_on_switch(void *ctx, const struct crec_emu_switch *sw)
{
    struct rec_session *rs = ctx;
    struct rec_thread *from = rec_thread_of(rs, sw->from), *to = rec_thread_of(rs, sw->to);

    if (rs->ended || !rs->active)
        return;
    if (!from || !to || from != rs->cur) {
        crec_error err;
        crec_error_set(&err, CREC_ERR_EMU, "switch from thread %u to %u, which the recorder "
                                           "does not know", sw->from, sw->to);
        rec_fail(rs, &err);
        return;
    }
    if (rs->multi) {
        if (sw->exact)
            rec_seq_take_back(from, sw->from_icount);
        rec_seq(rs, from, sw->from_icount,
                sw->exact ? CREC_FMT_SEQ_OUT_EXACT : CREC_FMT_SEQ_OUT);
    }
    if (from->in_syscall)
        from->blocked = 1;
    rec_thread_enter(rs, to);
    if (!from->live) { /* it has exited: its streams are complete */
        rec_flush_seq(rs, from);
        rs->threads[from->tid - 1] = NULL;
        rec_thread_free(from);
    }
    if (rs->multi)
        rec_seq(rs, to, sw->to_icount, CREC_FMT_SEQ_IN);
}

/* At the end of the run, thread t (not the running one) ends as it is: a
 * last key frame of its saved registers, and a THREAD record. */
static void rec_end_thread(struct rec_session *rs, struct rec_thread *t,
                           const struct crec_emu_thread_info *info, uint64_t icount)
{
    struct rec_thread *running = rs->cur;
    crec_fmt_event ev = {.kind = CREC_FMT_K_THREAD};
    crec_regs r;
    crec_error err = {0};

    if (crec_emu_thread_regs(rs->emu, t->tid, &r, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return;
    }
    rec_thread_enter(rs, t); /* its streams and cache, for the key frame */
    if (rec_keyframe(rs, icount, info->icount, 0, &r) == CREC_OK) {
        ev.u.thread.op = CREC_FMT_TH_EXIT;
        ev.u.thread.tid = t->tid;
        ev.u.thread.icount = info->icount;
        ev.u.thread.how = CREC_FMT_TH_ENDED;
        rec_event(rs, &ev);
        rec_flush_reads(rs);
        rec_flush_seq(rs, t);
    }
    rec_thread_enter(rs, running);
}

/* ---- processes --------------------------------------------------------------- */

/* A PROCESS record in the process's own PROCESS stream. */
static int rec_process(struct rec_session *rs, const crec_fmt_process *p)
{
    crec_error err = {0};
    int rc;

    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_proc_encode(&rs->scratch, p);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_PROCESS, 0, &rs->scratch, &err);
    else
        crec_error_set(&err, rc, "out of memory encoding a process record");
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* The start of this process: who made it, its pid, its command line. */
static int rec_process_start(struct rec_session *rs, uint32_t how, uint32_t parent)
{
    crec_fmt_process p = {0};

    p.op = CREC_FMT_PR_START;
    p.proc = rs->proc;
    p.how = how;
    p.parent = parent;
    p.parent_tid = how == CREC_FMT_PR_ROOT ? 0 : rs->from_tid;
    p.parent_icount = how == CREC_FMT_PR_ROOT ? 0 : rs->from_icount;
    p.pid = (uint32_t)getpid();
    p.ppid = (uint32_t)getppid();
    p.path = rs->path ? rs->path : "";
    p.path_len = strlen(p.path);
    for (p.argc = 0; rs->argv && rs->argv[p.argc]; p.argc++)
        ;
    p.argv = rs->argv;
    return rec_process(rs, &p);
}

/* Keep the program's path and argv (crec_malloc'd), for its START record. */
static void rec_set_command(struct rec_session *rs, const char *path, char *const argv[])
{
    size_t n = 0, bytes = 0;
    char **v, *at;

    crec_free(rs->path);
    crec_free(rs->argv);
    rs->path = NULL, rs->argv = NULL;
    for (; argv && argv[n]; n++)
        bytes += strlen(argv[n]) + 1;
    if ((rs->path = crec_malloc(strlen(path) + 1)) != NULL)
        strcpy(rs->path, path);
    if (!(v = crec_malloc((n + 1) * sizeof *v + bytes)))
        return; /* only the record's command line is lost */
    at = (char *)(v + n + 1);
    for (size_t i = 0; i < n; i++) {
        v[i] = at;
        strcpy(at, argv[i]);
        at += strlen(argv[i]) + 1;
    }
    v[n] = NULL;
    rs->argv = v;
}

/*
 * A new process image starts (a fork's child, the program execve loaded):
 * its only thread is number 1 with nothing written yet, sequencing is off
 * until it makes a second one, its next block start takes its first key
 * frame (the cache emptied, the memory map listed, every page snapshot).
 */
static void rec_image_restart(struct rec_session *rs)
{
    struct rec_thread *cur = rs->cur;

    for (size_t i = 0; i < rs->nthreads; i++)
        if (rs->threads[i] && rs->threads[i] != cur)
            rec_thread_free(rs->threads[i]);
    rs->threads[0] = cur;
    rs->nthreads = 1;
    cur->tid = rs->tid = 1;
    cur->live = 1;
    cur->next_kf = 0;
    cur->has_kf = 0;
    cur->in_syscall = cur->blocked = 0;
    crec_fmt_buf_reset(&cur->seq);
    cur->seq_ctx = (crec_fmt_seq_ctx){0, 0, 1};
    cur->seq_atomics = 0;
    cur->seq_atomics_last = 0;
    rs->multi = 0;
    rs->seq = 0;
    crec_fmt_buf_reset(&rs->reads);
    rs->hits = 0;
    crec_pcache_flush(rs->pc);
    crec_emu_hostpages_clear(&rs->hostpages);
    memset(&rs->stats, 0, sizeof rs->stats);
    rs->last_sync = 0;
    rs->finishing = 0;
    rec_ix_stop(rs); /* a process tree's index is built by the first query */
    rec_mem_restart(rs);
}

static int rec_finish_core(struct rec_session *rs, uint64_t icount, uint64_t ticount, uint64_t rip,
                           uint32_t how, uint64_t value);

/* The end of this process now (an execve). */
static int rec_end(struct rec_session *rs, uint32_t how, uint64_t value)
{
    return rec_finish_core(rs, crec_emu_cpu_icount(rs->cpu), crec_emu_thread_icount(rs->emu), 0,
                           how, value);
}

static void rec_on_fork(void *ctx, int phase, int pid)
{
    struct rec_session *rs = ctx;
    crec_error err = {0};
    uint32_t parent = rs->proc;

    if (phase == CREC_EMU_FORK_BEFORE) /* a process tree's index is built by the first */
        rec_ix_stop(rs);                /* query, and no child gets the writer's thread */
    if (phase == CREC_EMU_FORK_CHILD)
        rs->child = 1; /* it exits as the guest's child does, however it records */
    if (rs->failed || rs->ended) /* ended: the program runs on unrecorded */
        return;
    if (rec_flight_one_process(rs)) {
        rec_flight_forked(rs, phase, pid);
        return;
    }
    switch (phase) {
    case CREC_EMU_FORK_BEFORE: /* the blobs the child will know of are in the file */
        rs->from_tid = rs->tid;
        rs->from_icount = crec_emu_thread_icount(rs->emu);
        if (crec_fmt_writer_prefork(rs->w, &err) != CREC_OK)
            rec_fail(rs, &err);
        break;
    case CREC_EMU_FORK_PARENT:
        rs->forks++;
        break;
    case CREC_EMU_FORK_CHILD:
        if (crec_fmt_writer_forked(rs->w, &rs->proc, &err) != CREC_OK) {
            rec_fail(rs, &err);
            return;
        }
        rec_image_restart(rs);
        rec_process_start(rs, CREC_FMT_PR_FORK, parent);
        break;
    }
}

static void rec_on_exec(void *ctx, int phase, const char *path, char *const argv[])
{
    struct rec_session *rs = ctx;
    crec_error err = {0};
    uint32_t next;

    if (rs->failed || rs->ended)
        return;
    if (phase == CREC_EMU_EXEC_BEFORE && rec_flight_one_process(rs)) {
        rec_flight_exec(rs);
        return;
    }
    if (phase == CREC_EMU_EXEC_BEFORE) {
        /* the old image ends in its execve, and goes on as process `next` */
        rs->from_tid = rs->tid;
        rs->from_icount = crec_emu_thread_icount(rs->emu);
        if (crec_fmt_writer_take_process(rs->w, &next, &err) != CREC_OK) {
            rec_fail(rs, &err);
            return;
        }
        if (rec_end(rs, CREC_FMT_EXIT_EXEC, next) != CREC_OK)
            return;
        if (crec_fmt_writer_set_process(rs->w, next, &err) != CREC_OK) {
            rec_fail(rs, &err);
            return;
        }
        rs->exec_parent = rs->proc;
        rs->proc = next;
        rs->started = 0; /* the loader's mappings are the new image's listing */
        for (size_t i = 0; i < rs->n_images; i++)
            crec_free(rs->images[i].path);
        rs->n_images = 0;
        rec_ran_clear(rs); /* the new image's code is checked from its first block */
        return;
    }
    rec_image_restart(rs);
    rec_set_command(rs, path, argv);
    rs->started = 1;
    rec_process_start(rs, CREC_FMT_PR_EXEC, rs->exec_parent);
}

/*
 * The end of the recording at global time `icount` (the running thread at
 * its own `ticount`; `rip` the block start, or 0: the CPU's RIP): a last
 * key frame of every thread, then the EXIT event (how, value) in the
 * running thread's EVENTS, the END of its PROCESS stream.  how: enum
 * crec_fmt_exit_how (an exit, a fatal signal, a stop, an execve, the
 * recording ending before the program).
 */
static int rec_finish_core(struct rec_session *rs, uint64_t icount, uint64_t ticount, uint64_t rip,
                           uint32_t how, uint64_t value)
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_EXIT};
    crec_fmt_process p = {0};
    size_t n = crec_emu_threads(rs->emu, NULL, 0);
    struct crec_emu_thread_info *info;

    if (rs->failed)
        return rs->err.code;
    if (!(info = crec_calloc(n ? n : 1, sizeof *info))) {
        crec_error err;
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory ending %zu threads", n);
        rec_fail(rs, &err);
        return rs->err.code;
    }
    n = crec_emu_threads(rs->emu, info, n);
    for (size_t i = 0; i < n && !rs->failed; i++) {
        struct rec_thread *t = rec_thread_of(rs, info[i].id);
        if (t && t != rs->cur && t->live)
            rec_end_thread(rs, t, &info[i], icount);
    }
    crec_free(info);
    if (rs->multi)
        rec_seq(rs, rs->cur, ticount, CREC_FMT_SEQ_OUT); /* the schedule ends */
    rs->finishing = 1; /* the last key frame: no span of the index starts there */
    if (rec_keyframe(rs, icount, ticount, rip, NULL) != CREC_OK)
        return rs->err.code;
    ev.u.exit.global_icount = icount;
    ev.u.exit.how = how;
    ev.u.exit.value = value;
    rec_event(rs, &ev);
    rec_flush_reads(rs);
    rec_flush_seq(rs, rs->cur);
    p.op = CREC_FMT_PR_END;
    p.proc = rs->proc;
    p.end_how = how;
    p.value = value;
    p.instructions = icount;
    rec_process(rs, &p);
    rs->stats.instructions = icount;
    rs->stats.reads_hit += rs->hits; /* the predicted loads never followed by a value */
    for (size_t i = 0; i < rs->nthreads; i++)
        if (rs->threads[i] && rs->threads[i] != rs->cur)
            rs->stats.reads_hit += rs->threads[i]->hits;
    return rs->failed ? rs->err.code : CREC_OK;
}

/* The program ended (or crec stopped it): the end of the recording. */
static int rec_finish(struct rec_session *rs, const struct crec_emu_exit *ex)
{
    uint64_t icount = crec_emu_cpu_icount(rs->cpu);
    uint32_t how = rs->stopped || ex->deadlock ? CREC_FMT_EXIT_STOPPED
                   : ex->signo                 ? CREC_FMT_EXIT_SIGNAL
                                               : CREC_FMT_EXIT_STATUS;
    uint64_t value = ex->deadlock ? 0 : ex->signo ? (uint64_t)ex->signo : (uint64_t)ex->status;

    if (rs->failed)
        return rs->err.code;
    if (rs->ended) /* the file was completed when the recording ended */
        return CREC_OK;
    if (rs->fl) { /* in a gap, or stopped at --max-size: flight.c ends it */
        int rc = rec_flight_finish(rs, ex, icount);
        if (rc != CREC_ERR_NOTFOUND)
            return rc;
    }
    return rec_finish_core(rs, icount, crec_emu_thread_icount(rs->emu), 0, how, value);
}

int rec_end_here(struct rec_session *rs, uint32_t why, uint64_t number, uint64_t rip,
                 uint64_t icount, uint64_t ticount)
{
    crec_fmt_mark m = {.kind = CREC_FMT_K_STOP};
    int rc = rec_finish_core(rs, icount, ticount, rip, CREC_FMT_EXIT_ENDED, 0);

    m.u.stop.at = icount;
    m.u.stop.why = why;
    m.u.stop.number = number;
    return rc == CREC_OK ? rec_mark(rs, &m) : rc;
}

/* ---- set-up -------------------------------------------------------------- */

/* The CPUID leaves whose answers the header shows (the guest's features). */
#define REC_HEADER_LEAVES 5

static void rec_header(const crec_record_options *o, struct rec_session *rs, char *const argv[],
                       char *const envp[], crec_fmt_cpuid leaves[REC_HEADER_LEAVES],
                       crec_fmt_header *h)
{
    static const uint32_t leaf_ids[REC_HEADER_LEAVES] = {0, 1, 7, 0x80000000u, 0x80000001u};
    struct timespec now;

    memset(h, 0, sizeof *h);
    h->arch = CREC_FMT_ARCH_X86_64;
    h->host_order = CREC_FMT_ORDER_LITTLE;
    h->page_size = CREC_PAGE_SIZE;
    h->cache_entries = (uint64_t)1 << o->cache_log2;
    h->cache_granule = CREC_PCACHE_GRANULE;
    h->keyframe_interval = rs->kf_auto ? 0 : rs->kf_interval;
    h->snapshot_interval = rs->snap_auto ? 0 : rs->snap_every;
    h->checkpoint_interval = rs->kf_auto || rs->cp_interval < rs->kf_interval ? rs->cp_interval
                                                                              : 0;
    clock_gettime(CLOCK_REALTIME, &now);
    h->start_sec = now.tv_sec;
    h->start_nsec = (uint32_t)now.tv_nsec;
    h->crec_version = CREC_VERSION_STRING;
    h->time_slice = o->threads.slice ? o->threads.slice : CREC_EMU_DEFAULT_SLICE;
    h->cpus = o->threads.cpus ? o->threads.cpus : 1;
    h->chaos = o->threads.chaos;
    h->chaos_seed = o->threads.chaos_seed;
    for (size_t i = 0; i < REC_HEADER_LEAVES; i++) {
        uint32_t out[4];
        crec_emu_cpuid_default(leaf_ids[i], 0, out);
        leaves[i] = (crec_fmt_cpuid){leaf_ids[i], 0, out[0], out[1], out[2], out[3]};
    }
    h->ncpuid = REC_HEADER_LEAVES;
    h->cpuid = leaves;
    for (h->argc = 0; argv[h->argc]; h->argc++)
        ;
    h->argv = (char **)argv;
    for (h->envc = 0; envp[h->envc]; h->envc++)
        ;
    h->envp = (char **)envp;
}

int rec_add_hooks(struct rec_session *rs, crec_error *err)
{
    crec_emu_cpu_on_xstate(rs->cpu, rec_xstate, rs);
    if (crec_emu_cpu_hook_mem(rs->cpu, CREC_EMU_LOAD | CREC_EMU_STORE, rec_mem_hook, rs,
                              err) != CREC_OK)
        return crec_error_set(err, CREC_ERR_EMU, "can't add the recorder's memory hooks: %s",
                              err->msg);
    rs->hooked = 1;
    /* No flush of translated code is needed before the run (loading
     * translates none), and a full flush would cost seconds: Unicorn zeroes
     * its whole code buffer.  A hook added during the run: flight.c. */
    return CREC_OK;
}

void rec_remove_hooks(struct rec_session *rs)
{
    if (!rs->hooked)
        return;
    crec_emu_cpu_unhook_mem(rs->cpu, rec_mem_hook, rs);
    crec_emu_cpu_on_xstate(rs->cpu, NULL, NULL);
    rs->hooked = 0;
}

static void rec_session_free(struct rec_session *rs)
{
    rec_flight_free(rs);
    crec_free(rs->coded);
    crec_emu_free(rs->emu);
    if (rs->cur) { /* the running thread's cache and reads are here */
        rs->cur->pc = rs->pc;
        rs->cur->reads = rs->reads;
    }
    for (size_t i = 0; i < rs->nthreads; i++)
        rec_thread_free(rs->threads[i]);
    crec_free(rs->threads);
    rec_ix_free(rs);
    crec_fmt_buf_free(&rs->scratch);
    rec_pageset_free(&rs->dirty);
    rec_pageset_free(&rs->ran);
    crec_free(rs->code_hashes);
    crec_free(rs->dirty_big);
    for (size_t i = 0; i < rs->n_images; i++)
        crec_free(rs->images[i].path);
    crec_free(rs->images);
    crec_free(rs->path);
    crec_free(rs->argv);
}

static int rec_start(struct rec_session *rs, const crec_record_options *o, const char *path,
                     char *const argv[], char *const envp[], crec_error *err)
{
    struct crec_emu_options eo = {0};
    /* shared once the program forks (crec_fmt_writer_prefork): a guest's fork
     * makes a crec process that writes to it too */
    crec_fmt_writer_opts wo = {0};
    crec_fmt_cpuid leaves[REC_HEADER_LEAVES];
    crec_fmt_header h;
    int rc;

    rs->observer = (struct crec_emu_observer){
        .ctx = rs,
        .on_block = rec_on_block,
        .on_syscall_enter = rec_on_syscall_enter,
        .on_syscall_exit = rec_on_syscall_exit,
        .on_cpuid = rec_on_cpuid,
        .on_rdtsc = rec_on_rdtsc,
        .on_mem = rec_on_mem,
        .on_thread = rec_on_thread,
        .on_switch = rec_on_switch,
        .on_rdrand = rec_on_rdtsc,
        .on_fork = rec_on_fork,
        .on_exec = rec_on_exec,
        .on_signal = rec_on_signal,
    };
    eo.strace = o->strace;
    eo.recording = 1;
    eo.stop = o->stop;
    eo.dump = o->forward_signals ? NULL : o->dump;
    eo.forward_signals = o->forward_signals;
    eo.strict = o->strict;
    eo.log = o->log;
    eo.observer = &rs->observer;
    eo.slice = o->threads.slice;
    eo.cpus = o->threads.cpus;
    eo.chaos = o->threads.chaos;
    eo.chaos_seed = o->threads.chaos_seed;
    rc = rec_thread_new(rs, 1) ? CREC_OK : rs->err.code;
    if (rc != CREC_OK)
        *err = rs->err;
    else
        rec_thread_enter(rs, rs->threads[0]);
    if (rc == CREC_OK)
        rc = crec_emu_create(&rs->emu, &eo, err);
    if (rc == CREC_OK)
        rc = crec_emu_load(rs->emu, path, argv, envp, err);
    if (rc != CREC_OK)
        return rc;
    rs->cpu = crec_emu_cpu_of(rs->emu);
    /* --start-at: the program runs with no memory hook (at `crec run`'s
     * speed) until a trigger adds them (flight.c) */
    rs->active = o->n_start_at == 0;
    rs->snap_full_due = rs->listing_code_due = 1;
    rc = rs->active ? rec_add_hooks(rs, err) : CREC_OK;
    if (rc != CREC_OK)
        return rc;
    /* the index is gathered for a file (not a pipe) of the whole run, and
     * PATH.idx goes beside it; the flight recorder's files (a ring rewrites
     * the file, a part leaves gaps, --max-size may end it early), a dump (a
     * copy made by a fork) and a process tree's (rec_on_fork) get theirs
     * from the first query */
    rec_ix_start(rs, o->out_fd < 0 && !(o->ring || o->max_size || o->n_start_at || o->n_stop_at));
    rec_header(o, rs, argv, envp, leaves, &h);
    if (o->out_fd >= 0)
        rc = crec_fmt_writer_open_fd(o->out_fd, o->out_path, &h, &wo, &rs->w, err);
    else
        rc = crec_fmt_writer_open(o->out_path, &h, &wo, &rs->w, err);
    if (rc != CREC_OK)
        return rc;
    rs->started = 1;
    rec_set_command(rs, path, argv);
    rec_process_start(rs, CREC_FMT_PR_ROOT, 0);
    if (rs->failed) {
        *err = rs->err;
        return rs->err.code;
    }
    if (o->ring || o->max_size || o->dump || o->n_start_at || o->n_stop_at)
        rc = rec_flight_open(rs, err);
    return rc;
}

int crec_record(const crec_record_options *opt, const char *path, char *const argv[],
                char *const envp[], crec_exit *out, crec_record_stats *st, crec_error *err)
{
    struct rec_session rs = {0};
    crec_record_options o = *opt;
    struct crec_emu_exit ex;
    int rc;

    memset(out, 0, sizeof *out);
    memset(st, 0, sizeof *st);
    if (o.cache_log2 && (o.cache_log2 < CREC_PCACHE_MIN_LOG2 || o.cache_log2 > CREC_PCACHE_MAX_LOG2))
        return crec_error_set(err, CREC_ERR_ARG, "a prediction cache of 2^%u entries (%u to %u)",
                              o.cache_log2, CREC_PCACHE_MIN_LOG2, CREC_PCACHE_MAX_LOG2);
    if (!o.cache_log2)
        o.cache_log2 = CREC_RECORD_DEFAULT_CACHE_LOG2;
    rs.opt = &o;
    rs.kf_interval = o.keyframe_interval;
    rs.kf_auto = o.keyframe_interval == 0;
    rs.cp_interval = o.checkpoint_interval ? o.checkpoint_interval
                                           : CREC_RECORD_DEFAULT_CP_INTERVAL;
    rs.point_every = rs.kf_auto || rs.cp_interval < rs.kf_interval ? rs.cp_interval
                                                                   : rs.kf_interval;
    rs.snap_every = o.snapshot_interval;
    rs.snap_auto = o.snapshot_interval == 0;
    memset(&ex, 0, sizeof ex);

    rc = rec_start(&rs, &o, path, argv, envp, err);
    if (rc != CREC_OK) {
        crec_fmt_writer_free(rs.w);
        rec_session_free(&rs);
        return rc;
    }

    /* However the run ended, what was recorded is completed and closed. */
    rc = crec_emu_run(rs.emu, &ex, err);
    if (rc == CREC_OK && rs.fl && rec_flight_full_stop(&rs)) {
        rs.stopped = 1; /* at --max-size, with --on-full stop */
        ex.signo = SIGXFSZ;
        snprintf(ex.msg, sizeof ex.msg, "the recording reached --max-size at instruction %llu: "
                 "the program was stopped there", (unsigned long long)crec_emu_cpu_icount(rs.cpu));
    } else if (rc == CREC_OK && o.stop && *o.stop && !ex.signo) {
        int signo = (int)*o.stop;
        rs.stopped = 1;
        ex.signo = signo;
        if (signo == SIGINT || signo == SIGTERM)
            snprintf(ex.msg, sizeof ex.msg, "recording stopped by %s",
                     signo == SIGINT ? "SIGINT" : "SIGTERM");
        else
            snprintf(ex.msg, sizeof ex.msg, "recording stopped by signal %d", signo);
    }
    if (rec_finish(&rs, &ex) != CREC_OK) {
        crec_fmt_writer_free(rs.w);
        rs.w = NULL;
        if (rc == CREC_OK && err)
            crec_error_set(err, rs.err.code, "%s; the program was stopped at instruction %llu, "
                           "and the recording is readable up to its last complete chunk",
                           rs.err.msg, (unsigned long long)crec_emu_cpu_icount(rs.cpu));
        rc = rc == CREC_OK ? (int)rs.err.code : rc;
    } else if (rs.w && rs.child) { /* the first process writes the directory, for all */
        int crc = crec_fmt_writer_leave(rs.w, rc == CREC_OK ? err : NULL);
        rs.w = NULL;
        rc = rc == CREC_OK ? crc : rc;
    } else if (rs.w) { /* NULL: completed when the recording ended before the program */
        int crc;
        rec_flight_stats(&rs);
        crc = crec_fmt_writer_close(rs.w, rc == CREC_OK ? err : NULL);
        rs.w = NULL;
        rc = rc == CREC_OK ? crc : rc;
        if (crc == CREC_OK) /* the file is whole: its index beside it */
            rec_ix_save(&rs, o.out_path);
    }
    if (rs.fl)
        rec_flight_wait_dumps(&rs);
    if (rs.child && rc == CREC_OK) {
        /* the guest's parent sees it die of its signal, as natively (a
         * recording stopped: of the signal that stopped it) */
        if (rs.stopped)
            signal(ex.signo, SIG_DFL), raise(ex.signo);
        crec_emu_forked_exit(rs.emu);
    }
    out->status = ex.status;
    out->signo = ex.signo;
    out->stopped = rs.stopped;
    out->deadlock = ex.deadlock;
    out->forked = rs.child;
    snprintf(out->msg, sizeof out->msg, "%s", ex.msg);
    if (rs.fl)
        rec_flight_why(&rs, out);
    *st = rs.stats;
    rec_session_free(&rs);
    return rc;
}
