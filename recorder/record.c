/*
 * record.c - `crec record`: run a program under emu/ and log what a replay
 * could not work out for itself.
 *
 * Per thread, three streams (docs/FORMAT.md):
 *   READS   (hits, value) each time the prediction cache missed a load;
 *   EVENTS  syscall results, CPUID and RDTSC answers, memory-map changes,
 *           the exit;
 *   SEQ     sequencing points (one thread for now: unused).
 * Globally: a KEYFRAME every N instructions (registers; the cache is then
 * flushed so the next segment replays alone), snapshots, code blobs.
 *
 * Nothing is logged for stores: the replay executes them.  Bytes the
 * emulated kernel writes are not logged either: the cache never saw them,
 * so the program's next load of a changed byte misses and is logged then.
 */
#include <signal.h>
#include <string.h>
#include <time.h>

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
static int rec_flush_reads(struct rec_session *rs)
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

int rec_event(struct rec_session *rs, const crec_fmt_event *ev)
{
    crec_error err = {0};
    int rc;

    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_ev_encode(&rs->scratch, ev);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_EVENTS, rs->tid, &rs->scratch, &err);
    else
        crec_error_set(&err, rc, "out of memory encoding an event");
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* ---- loads and stores ---------------------------------------------------- */

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
    if (crec_pcache_read(rs->pc, addr, bytes, size)) {
        rs->hits++;
        rs->stats.reads_hit++;
    } else {
        rec_log_load(rs, addr, size);
    }
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
static void rec_mem_hook(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    struct rec_session *rs = ctx;
    const uint8_t *bytes;

    if (size > CREC_PCACHE_MAX_ACCESS)
        return;
    if (kind == CREC_EMU_LOAD) {
        /* most loads lie in a page the table knows: compared in place */
        bytes = rec_guest_bytes(rs, addr, (unsigned)size);
        if (bytes)
            rec_check_load(rs, addr, size, bytes);
        else
            rec_load(rs, addr, size, NULL);
        return;
    }
    /* A store: Unicorn passes the value (up to 8 bytes), little-endian. */
    if (size > 8)
        crec_pcache_forget(rs->pc, addr, (uint64_t)size);
    else
        crec_pcache_store(rs->pc, addr, (uint64_t)value, (unsigned)size);
    rec_mark_dirty(rs, addr, (uint64_t)size);
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
 * A key frame at instruction `icount`.  At a block start `rip` is the
 * block's address: Unicorn's RIP register is not up to date inside a block
 * hook (it may still point into the previous block).  0: read RIP.
 */
static int rec_keyframe(struct rec_session *rs, uint64_t icount, uint64_t rip)
{
    crec_fmt_keyframe kf = {0};
    crec_error err = {0};
    int rc;

    if (rec_flush_reads(rs) != CREC_OK)
        return CREC_ERR_IO;
    kf.tid = rs->tid;
    kf.global_icount = kf.thread_icount = icount;
    if (crec_emu_regs_get(rs->cpu, &kf.regs, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return CREC_ERR_EMU;
    }
    if (rip)
        kf.regs.rip = rip;
    kf.reads_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_READS, rs->tid);
    kf.events_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_EVENTS, rs->tid);
    kf.seq_off = crec_fmt_writer_offset(rs->w, CREC_FMT_S_SEQ, rs->tid);
    kf.hits_before = rs->hits;
    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_kf_encode(&rs->scratch, &kf);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_KEYFRAMES, 0, &rs->scratch, &err);
    if (rc != CREC_OK) {
        rec_fail(rs, &err);
        return rc;
    }
    crec_pcache_flush(rs->pc);
    crec_emu_cpu_xstate_forget(rs->cpu);
    rs->stats.keyframes++;
    return rec_write_listing(rs);
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
    crec_error err = {0};
    double now = monotonic_seconds();

    if (rs->failed || now - rs->last_sync < REC_SYNC_SECONDS)
        return;
    rs->last_sync = now;
    if (rec_flush_reads(rs) != CREC_OK)
        return;
    if (crec_fmt_flush_all(rs->w, &err) != CREC_OK)
        rec_fail(rs, &err);
}

/*
 * Every block start: take a key frame when one is due, and notice that the
 * caller asked to stop (crec_record_options.stop: the CLI's SIGINT or
 * SIGTERM), which ends the recording cleanly at this point.
 */
static void rec_on_block(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount)
{
    struct rec_session *rs = ctx;
    uint64_t before = icount - ninsns;

    if (rs->opt->stop && *rs->opt->stop) {
        crec_emu_stop(rs->emu);
        return;
    }
    if (before < rs->next_kf || rs->failed)
        return;
    if (rec_keyframe(rs, before, addr) != CREC_OK)
        return;
    rs->next_kf = before + rs->kf_interval;
    if (rs->stats.keyframes % rs->snap_every == 1 % rs->snap_every)
        rec_write_snapshot(rs, before, rs->stats.keyframes == 1);
    rec_sync(rs);
}

/* ---- syscalls and other non-determinism ---------------------------------- */

static void rec_on_syscall_enter(void *ctx, const struct crec_emu_syscall *sc)
{
    struct rec_session *rs = ctx;

    crec_error err = {0};

    (void)sc;
    if (crec_emu_regs_get(rs->cpu, &rs->sys_regs, &err) != CREC_OK)
        rec_fail(rs, &err);
}

/* Registers the emulated kernel changed: what replay sets after the syscall. */
static void rec_changed_regs(struct rec_session *rs, crec_fmt_event *ev)
{
    crec_error err = {0};
    crec_regs now;
    uint32_t n = 0;

    if (crec_emu_regs_get(rs->cpu, &now, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return;
    }
    for (int i = 0; i < CREC_NGPR; i++)
        if (now.gpr[i] != rs->sys_regs.gpr[i] && i != CREC_RAX) {
            ev->u.sys.regs[n].id = (uint32_t)i;
            ev->u.sys.regs[n++].value = now.gpr[i];
        }
    if (now.fs_base != rs->sys_regs.fs_base) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_FS_BASE;
        ev->u.sys.regs[n++].value = now.fs_base;
    }
    if (now.gs_base != rs->sys_regs.gs_base) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_GS_BASE;
        ev->u.sys.regs[n++].value = now.gs_base;
    }
    if (now.rflags != rs->sys_regs.rflags) {
        ev->u.sys.regs[n].id = CREC_FMT_REG_RFLAGS;
        ev->u.sys.regs[n++].value = now.rflags;
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
    for (unsigned i = 0; i < sc->n_out; i++)
        rec_mark_dirty(rs, sc->out[i].addr, sc->out[i].len);
    if (sc->out_overflow)
        rs->dirty_all = 1; /* unknown writes: the next snapshot takes every page */
    ev.u.sys.icount = crec_emu_cpu_icount(rs->cpu);
    ev.u.sys.nr = sc->nr;
    memcpy(ev.u.sys.args, sc->args, sizeof ev.u.sys.args);
    ev.u.sys.ret = sc->ret;
    sent = crec_emu_sysout_walk(sc->nr, sc->args, sc->ret, rec_kernel_read, rs, &hash);
    if (sent == 1) {
        ev.u.sys.flags |= CREC_FMT_EV_HAS_HASH;
        ev.u.sys.write_hash = hash;
    }
    rec_changed_regs(rs, &ev);
    for (unsigned i = 0; i < sc->n_out && i < CREC_FMT_SYS_MAXOUT; i++) {
        ev.u.sys.out[i].addr = sc->out[i].addr;
        ev.u.sys.out[i].len = sc->out[i].len;
        ev.u.sys.nout = i + 1;
    }
    if (ev.u.sys.nout)
        ev.u.sys.flags |= CREC_FMT_EV_HAS_OUT;
    if (sc->out_overflow || sc->n_out > CREC_FMT_SYS_MAXOUT)
        ev.u.sys.flags |= CREC_FMT_EV_OUT_MORE;
    rs->stats.syscalls++;
    rec_event(rs, &ev);
}

static void rec_on_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, const uint32_t out[4])
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_CPUID};

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
    crec_fmt_event ev = {.kind = CREC_FMT_K_RDTSC};

    ev.u.rdtsc.value = value;
    rec_event(ctx, &ev);
}

static void rec_on_mem(void *ctx, const struct crec_emu_mem_event *mev)
{
    struct rec_session *rs = ctx;

    crec_emu_hostpages_clear(&rs->hostpages);
    if (rs->started)
        rec_on_mem_event(rs, mev);
    else
        rec_note_image(rs, mev);
}

/* The end: a last key frame at the final instruction, then the EXIT event. */
static int rec_finish(struct rec_session *rs, const struct crec_emu_exit *ex)
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_EXIT};
    uint64_t icount = crec_emu_cpu_icount(rs->cpu);

    if (rs->failed)
        return rs->err.code;
    if (rec_keyframe(rs, icount, 0) != CREC_OK)
        return rs->err.code;
    ev.u.exit.global_icount = icount;
    ev.u.exit.how = rs->stopped  ? CREC_FMT_EXIT_STOPPED
                    : ex->signo ? CREC_FMT_EXIT_SIGNAL
                                : CREC_FMT_EXIT_STATUS;
    ev.u.exit.value = ex->signo ? (uint64_t)ex->signo : (uint64_t)ex->status;
    rec_event(rs, &ev);
    rec_flush_reads(rs);
    rs->stats.instructions = icount;
    return rs->failed ? rs->err.code : CREC_OK;
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
    h->keyframe_interval = rs->kf_interval;
    h->snapshot_interval = rs->snap_every;
    clock_gettime(CLOCK_REALTIME, &now);
    h->start_sec = now.tv_sec;
    h->start_nsec = (uint32_t)now.tv_nsec;
    h->crec_version = CREC_VERSION_STRING;
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

static int rec_add_hooks(struct rec_session *rs, crec_error *err)
{
    crec_emu_cpu_on_xstate(rs->cpu, rec_xstate, rs);
    if (crec_emu_cpu_hook_mem(rs->cpu, CREC_EMU_LOAD | CREC_EMU_STORE, rec_mem_hook, rs,
                              err) != CREC_OK)
        return crec_error_set(err, CREC_ERR_EMU, "can't add the recorder's memory hooks: %s",
                              err->msg);
    /* No flush of translated code is needed (loading translates none), and
     * a full flush would cost seconds: Unicorn zeroes its whole code buffer. */
    return CREC_OK;
}

static void rec_session_free(struct rec_session *rs)
{
    crec_emu_free(rs->emu);
    crec_pcache_free(rs->pc);
    crec_fmt_buf_free(&rs->reads);
    crec_fmt_buf_free(&rs->scratch);
    rec_pageset_free(&rs->dirty);
    crec_free(rs->code_hashes);
    crec_free(rs->dirty_big);
    for (size_t i = 0; i < rs->n_images; i++)
        crec_free(rs->images[i].path);
}

static int rec_start(struct rec_session *rs, const crec_record_options *o, const char *path,
                     char *const argv[], char *const envp[], crec_error *err)
{
    struct crec_emu_options eo = {0};
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
        .on_rdrand = rec_on_rdtsc,
    };
    eo.strace = o->strace;
    eo.strict = o->strict;
    eo.log = o->log;
    eo.observer = &rs->observer;
    rc = crec_pcache_create(&rs->pc, o->cache_log2, err);
    if (rc == CREC_OK)
        rc = crec_emu_create(&rs->emu, &eo, err);
    if (rc == CREC_OK)
        rc = crec_emu_load(rs->emu, path, argv, envp, err);
    if (rc != CREC_OK)
        return rc;
    rs->cpu = crec_emu_cpu_of(rs->emu);
    rc = rec_add_hooks(rs, err);
    if (rc != CREC_OK)
        return rc;
    rec_header(o, rs, argv, envp, leaves, &h);
    if (o->out_fd >= 0)
        rc = crec_fmt_writer_open_fd(o->out_fd, o->out_path, &h, NULL, &rs->w, err);
    else
        rc = crec_fmt_writer_open(o->out_path, &h, NULL, &rs->w, err);
    if (rc != CREC_OK)
        return rc;
    rs->started = 1;
    return CREC_OK;
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
    if (!o.keyframe_interval)
        o.keyframe_interval = CREC_RECORD_DEFAULT_KF_INTERVAL;
    if (!o.snapshot_interval)
        o.snapshot_interval = CREC_RECORD_DEFAULT_SNAP_INTERVAL;
    if (!o.cache_log2)
        o.cache_log2 = CREC_RECORD_DEFAULT_CACHE_LOG2;
    rs.opt = &o;
    rs.tid = 1;
    rs.kf_interval = o.keyframe_interval;
    rs.snap_every = o.snapshot_interval;
    memset(&ex, 0, sizeof ex);

    rc = rec_start(&rs, &o, path, argv, envp, err);
    if (rc != CREC_OK) {
        crec_fmt_writer_free(rs.w);
        rec_session_free(&rs);
        return rc;
    }

    /* However the run ended, what was recorded is completed and closed. */
    rc = crec_emu_run(rs.emu, &ex, err);
    if (rc == CREC_OK && o.stop && *o.stop && !ex.signo) {
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
        if (rc == CREC_OK && err)
            crec_error_set(err, rs.err.code, "%s; the program was stopped at instruction %llu, "
                           "and the recording is readable up to its last complete chunk",
                           rs.err.msg, (unsigned long long)crec_emu_cpu_icount(rs.cpu));
        rc = rc == CREC_OK ? (int)rs.err.code : rc;
    } else {
        int crc = crec_fmt_writer_close(rs.w, rc == CREC_OK ? err : NULL);
        rc = rc == CREC_OK ? crc : rc;
    }
    *st = rs.stats;
    out->status = ex.status;
    out->signo = ex.signo;
    out->stopped = rs.stopped;
    snprintf(out->msg, sizeof out->msg, "%s", ex.msg);
    rec_session_free(&rs);
    return rc;
}
