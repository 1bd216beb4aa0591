/*
 * replay.c - `crec replay`: re-execute a recording on Unicorn with no OS.
 *
 * The mirror image of recorder/record.c.  Where the recorder logged a load
 * the cache could not predict, the replayer writes the logged value into
 * memory inside the load's own hook, so the load sees it; every other load
 * finds in memory what the program itself stored there.  Syscalls are not
 * executed: their recorded results are put back into the registers, and
 * memory-map changes are rebuilt from the EVENTS stream.
 *
 * Replay checks itself at every key frame (all registers), at every
 * write-like syscall (a hash of the bytes sent out) and at the end.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unicorn/unicorn.h>

#include "common/common.h"
#include "emu/emu.h"
#include "emu/sysout.h"
#include "format/format.h"
#include "replayer/replayer.h"
#include "replayer/replayer_int.h"

/* ---- divergence ---------------------------------------------------------- */

/* Stop the replay and say where and how it left the recorded path. */
static void rep_diverge(struct rep_seg *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rep_diverge(struct rep_seg *s, const char *fmt, ...)
{
    va_list ap;

    if (s->diverged || s->failed)
        return;
    s->diverged = 1;
    s->div.icount = crec_emu_cpu_icount(s->cpu);
    s->div.rip = crec_emu_reg_get(s->cpu, UC_X86_REG_RIP);
    crec_emu_cpu_describe(s->cpu, s->div.rip, s->div.insn, sizeof s->div.insn);
    va_start(ap, fmt);
    vsnprintf(s->div.what, sizeof s->div.what, fmt, ap);
    va_end(ap);
    crec_emu_cpu_stop(s->cpu);
}

/* A bad file found in the middle of a replay: an error, not a divergence. */
static void rep_fail(struct rep_seg *s, const crec_error *err)
{
    if (!s->failed && !s->diverged) {
        s->failed = 1;
        s->err = *err;
    }
    crec_emu_cpu_stop(s->cpu);
}

/* ---- the read stream ----------------------------------------------------- */

/* Read the hit count of the next READS entry (or note the stream's end). */
static int rep_next_hits(struct rep_seg *s)
{
    crec_error err = {0};
    int rc = crec_fmt_cursor_varint(s->reads, &s->hits_left, &err);

    if (rc == CREC_ERR_NOTFOUND) {
        /* No more values: every load until the end was predicted. */
        s->hits_left = UINT64_MAX;
        return CREC_OK;
    }
    if (rc != CREC_OK)
        rep_fail(s, &err);
    return rc;
}

/*
 * One load of `size` bytes (by the program, or by the kernel reading a
 * syscall's buffer): predicted, or given its recorded value.
 */
static int rep_load(struct rep_seg *s, uint64_t addr, unsigned size, uint8_t *bytes)
{
    crec_error err = {0};
    uint8_t span[16];
    uint64_t start;
    unsigned len;
    int rc;

    if (crec_emu_mem_read(s->cpu, bytes, addr, size) != 0)
        return -1; /* unmapped: the recorder skipped it too */
    if (s->hits_left > 0) {
        if (s->hits_left != UINT64_MAX)
            s->hits_left--;
        if (s->on_access)
            s->on_access(s->access_ctx, s->cpu, 'r', addr, size);
        return 0;
    }
    len = crec_fmt_read_span(addr, size, &start);
    rc = crec_fmt_cursor_read(s->reads, span, len, &err);
    if (rc == CREC_ERR_NOTFOUND) {
        rep_diverge(s, "a %u-byte load at 0x%" PRIx64 " needs a recorded value, but the read "
                       "stream has ended", size, addr);
        return -1;
    }
    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return -1;
    }
    crec_emu_mem_write(s->cpu, start, span, len);
    crec_emu_mem_read(s->cpu, bytes, addr, size);
    s->reads_taken++;
    if (s->on_access)
        s->on_access(s->access_ctx, s->cpu, 'r', addr, size);
    return rep_next_hits(s) == CREC_OK ? 0 : -1;
}

/*
 * Installed for loads and stores alike, exactly as the recorder installs
 * its hook: Unicorn ends a translated block sooner when more hooks inflate
 * its code, and key frames sit at block starts, so both sides must cut the
 * program into the same blocks.
 */
static void rep_mem_hook(uc_engine *uc, uc_mem_type type, uint64_t addr, int size,
                         int64_t value, void *ctx)
{
    uint8_t bytes[16];

    struct rep_seg *s = ctx;

    (void)uc, (void)value;
    if (crec_emu_mem_echo(s->cpu, type, addr, size))
        return; /* a re-report of part of the last load (non-x86-64 hosts) */
    if (type == UC_MEM_READ && size > 0 && size <= 16)
        rep_load(ctx, addr, (unsigned)size, bytes);
    else if (type == UC_MEM_WRITE && s->on_access && size > 0)
        s->on_access(s->access_ctx, s->cpu, 'w', addr, (uint64_t)size);
}

static int rep_kernel_read(void *ctx, uint64_t addr, unsigned len, uint8_t *out)
{
    return rep_load(ctx, addr, len, out);
}

/* ---- the events stream --------------------------------------------------- */

/* The next event, from the one-event look-ahead if it is full. */
static int rep_next_event(struct rep_seg *s, crec_fmt_event *ev)
{
    crec_error err = {0};
    const uint8_t *body;
    size_t len;
    int kind, rc;

    if (s->have_peek) {
        *ev = s->peek;
        s->have_peek = 0;
        return CREC_OK;
    }
    rc = crec_fmt_cursor_next(s->events, &kind, &body, &len, &err);
    if (rc == CREC_OK)
        rc = crec_fmt_ev_decode(kind, body, len, ev, &err);
    if (rc == CREC_ERR_NOTFOUND)
        return rc;
    if (rc != CREC_OK)
        rep_fail(s, &err);
    return rc;
}

static void rep_unget_event(struct rep_seg *s, const crec_fmt_event *ev)
{
    s->peek = *ev;
    s->have_peek = 1;
}

/* Rebuild one change of the memory map, and the code it brought. */
static int rep_apply_mmap(struct rep_seg *s, const crec_fmt_event *ev)
{
    crec_error err = {0};
    uint64_t addr = ev->u.mmap.addr, len = ev->u.mmap.len;
    int prot = (int)ev->u.mmap.prot, rc;
    uint8_t *code;
    size_t code_len;

    if (ev->u.mmap.op == CREC_FMT_MM_UNMAP)
        rc = crec_emu_mem_unmap(s->cpu, addr, len, &err);
    else if (ev->u.mmap.op == CREC_FMT_MM_PROTECT)
        rc = crec_emu_mem_protect(s->cpu, addr, len, prot, &err);
    else
        rc = crec_emu_mem_map(s->cpu, addr, len, prot, &err);
    if (rc != CREC_OK) {
        rep_diverge(s, "can't rebuild the memory map at 0x%" PRIx64 " (+0x%" PRIx64 "): %s",
                    addr, len, err.msg);
        return rc;
    }
    /* a map or an unmap changes the bytes (or takes them away) */
    if (s->on_access && !(ev->u.mmap.flags & CREC_FMT_EV_LISTING) &&
        ev->u.mmap.op != CREC_FMT_MM_PROTECT)
        s->on_access(s->access_ctx, s->cpu, 'k', addr, len);
    if (!(ev->u.mmap.flags & CREC_FMT_EV_HAS_HASH))
        return CREC_OK;
    rc = crec_fmt_blob_get(s->r, &ev->u.mmap.blob, &code, &code_len, &err);
    if (rc == CREC_OK && code_len != len) {
        crec_free(code);
        rc = crec_error_corrupt(&err, "code blob for 0x%" PRIx64 " holds %zu bytes, not %" PRIu64,
                                addr, code_len, len);
    }
    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return rc;
    }
    crec_emu_mem_write(s->cpu, addr, code, len);
    crec_emu_cpu_flush_code(s->cpu, addr, len);
    crec_free(code);
    return CREC_OK;
}

/* Skip (or, when starting, apply) the memory-map listing after a key frame. */
static int rep_listing(struct rep_seg *s, int apply)
{
    crec_fmt_event ev;
    int rc;

    while ((rc = rep_next_event(s, &ev)) == CREC_OK) {
        if (ev.kind != CREC_FMT_K_MMAP || !(ev.u.mmap.flags & CREC_FMT_EV_LISTING)) {
            rep_unget_event(s, &ev);
            return CREC_OK;
        }
        if (apply && rep_apply_mmap(s, &ev) != CREC_OK)
            return CREC_ERR_CORRUPT;
    }
    return rc == CREC_ERR_NOTFOUND ? CREC_OK : rc;
}

/*
 * The next event that is not a memory-map change, applying those on the
 * way (the kernel changed the map during the syscall that follows them).
 */
static int rep_next_non_mmap(struct rep_seg *s, crec_fmt_event *ev)
{
    int rc;

    while ((rc = rep_next_event(s, ev)) == CREC_OK) {
        if (ev->kind != CREC_FMT_K_MMAP)
            return CREC_OK;
        if (s->query && (ev->u.mmap.flags & CREC_FMT_EV_LISTING))
            continue; /* a listing whose key frame fell inside a block */
        if (rep_apply_mmap(s, ev) != CREC_OK)
            return CREC_ERR_CORRUPT;
    }
    if (rc == CREC_ERR_NOTFOUND)
        rep_diverge(s, "the program goes on, but the recording has no more events");
    return rc;
}

static const char *event_name(int kind)
{
    switch (kind) {
    case CREC_FMT_K_SYSCALL:
        return "a syscall";
    case CREC_FMT_K_CPUID:
        return "CPUID";
    case CREC_FMT_K_RDTSC:
        return "RDTSC";
    case CREC_FMT_K_EXIT:
        return "the exit";
    case CREC_FMT_K_SIGNAL:
        return "a signal";
    case CREC_FMT_K_THREAD:
        return "a thread event";
    }
    return "an unknown event";
}

/* ---- syscalls, CPUID, RDTSC ---------------------------------------------- */

static void rep_set_regs(struct rep_seg *s, const crec_fmt_event *ev)
{
    static const int gpr_ids[CREC_NGPR] = {
        UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
        UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
        UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
        UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
    };

    crec_emu_reg_set(s->cpu, UC_X86_REG_RAX, (uint64_t)ev->u.sys.ret);
    for (uint32_t i = 0; i < ev->u.sys.nregs; i++) {
        uint32_t id = ev->u.sys.regs[i].id;
        uint64_t v = ev->u.sys.regs[i].value;
        if (id < CREC_NGPR)
            crec_emu_reg_set(s->cpu, gpr_ids[id], v);
        else if (id == CREC_FMT_REG_FS_BASE)
            crec_emu_reg_set(s->cpu, UC_X86_REG_FS_BASE, v);
        else if (id == CREC_FMT_REG_GS_BASE)
            crec_emu_reg_set(s->cpu, UC_X86_REG_GS_BASE, v);
        else if (id == CREC_FMT_REG_RFLAGS)
            crec_emu_reg_set(s->cpu, UC_X86_REG_EFLAGS, v);
    }
}

static void rep_check_sent(struct rep_seg *s, const crec_fmt_event *ev)
{
    uint64_t hash;
    int sent = crec_emu_sysout_walk(ev->u.sys.nr, ev->u.sys.args, ev->u.sys.ret,
                                    rep_kernel_read, s, &hash);

    if (sent != 1 || !(ev->u.sys.flags & CREC_FMT_EV_HAS_HASH))
        return;
    s->writes_checked++;
    if (hash != ev->u.sys.write_hash)
        rep_diverge(s, "syscall %" PRIu64 " (fd %" PRIu64 ") sent out other bytes than when "
                       "recorded (hash %016" PRIx64 ", recorded %016" PRIx64 ")",
                    ev->u.sys.nr, ev->u.sys.args[0], hash, ev->u.sys.write_hash);
}

static void rep_on_syscall(void *ctx, crec_emu_cpu *cpu)
{
    struct rep_seg *s = ctx;
    uint64_t nr = crec_emu_reg_get(cpu, UC_X86_REG_RAX);
    crec_fmt_event ev;

    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return;
    if (ev.kind == CREC_FMT_K_EXIT) {
        s->exit = ev;
        s->have_exit = 1;
        crec_emu_cpu_stop(cpu);
        return;
    }
    if (ev.kind != CREC_FMT_K_SYSCALL) {
        rep_diverge(s, "the program made syscall %" PRIu64 " where the recording has %s", nr,
                    event_name(ev.kind));
        return;
    }
    if (ev.u.sys.nr != nr) {
        rep_diverge(s, "the program made syscall %" PRIu64 " where the recording has syscall "
                       "%" PRIu64, nr, ev.u.sys.nr);
        return;
    }
    s->syscalls++;
    rep_check_sent(s, &ev);
    rep_set_regs(s, &ev);
    if (s->on_access) {
        for (uint32_t i = 0; i < ev.u.sys.nout; i++)
            s->on_access(s->access_ctx, cpu, 'k', ev.u.sys.out[i].addr, ev.u.sys.out[i].len);
        if (ev.u.sys.flags & CREC_FMT_EV_OUT_MORE)
            s->on_access(s->access_ctx, cpu, 'k', 0, UINT64_MAX); /* anywhere */
    }
}

static void rep_on_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
    struct rep_seg *s = ctx;
    crec_fmt_event ev;

    memset(out, 0, 4 * sizeof out[0]);
    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return;
    if (ev.kind != CREC_FMT_K_CPUID || ev.u.cpuid.leaf != leaf ||
        ev.u.cpuid.subleaf != subleaf) {
        rep_diverge(s, "the program ran CPUID leaf 0x%x.%u where the recording has %s", leaf,
                    subleaf, event_name(ev.kind));
        return;
    }
    out[0] = ev.u.cpuid.eax;
    out[1] = ev.u.cpuid.ebx;
    out[2] = ev.u.cpuid.ecx;
    out[3] = ev.u.cpuid.edx;
}

static uint64_t rep_on_rdtsc(void *ctx, crec_emu_cpu *cpu)
{
    struct rep_seg *s = ctx;
    crec_fmt_event ev;

    (void)cpu;
    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return 0;
    if (ev.kind != CREC_FMT_K_RDTSC) {
        rep_diverge(s, "the program ran RDTSC where the recording has %s", event_name(ev.kind));
        return 0;
    }
    return ev.u.rdtsc.value;
}

/* ---- key frames ---------------------------------------------------------- */

/* Check a key frame at the start of the block at `rip` (see rec_keyframe). */
static void rep_verify_kf(struct rep_seg *s, const crec_fmt_keyframe *kf, uint64_t rip)
{
    crec_regs now;
    char what[300];

    crec_emu_regs_get(s->cpu, &now);
    now.rip = rip;
    if (crec_regs_diff(&kf->regs, &now, what, sizeof what)) {
        rep_diverge(s, "at the key frame at instruction %" PRIu64 ": %s", kf->global_icount,
                    what);
        return;
    }
    s->keyframes_checked++;
}

/*
 * At the recording's last instruction count, at a block start: did crec
 * stop recording here (SIGINT/SIGTERM)?  Otherwise the program ends inside
 * this block (a fault) and must run into it.
 */
static int rep_stopped_here(struct rep_seg *s)
{
    crec_fmt_event ev;

    if (rep_next_event(s, &ev) != CREC_OK)
        return 0;
    rep_unget_event(s, &ev);
    return ev.kind == CREC_FMT_K_EXIT && ev.u.exit.how == CREC_FMT_EXIT_STOPPED;
}

static void rep_on_block(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount)
{
    struct rep_seg *s = ctx;
    uint64_t before = icount - ninsns;

    while (s->next_kf < s->nkf_blocks && s->kfs[s->next_kf].global_icount <= before) {
        const crec_fmt_keyframe *kf = &s->kfs[s->next_kf++];
        if (s->query) { /* no checks; just pass its map listing */
            if (rep_listing(s, 0) != CREC_OK)
                return;
            continue;
        }
        if (kf->global_icount < before) {
            rep_diverge(s, "the key frame at instruction %" PRIu64 " falls inside a block",
                        kf->global_icount);
            return;
        }
        rep_verify_kf(s, kf, addr);
        if (s->diverged || s->failed)
            return;
        if (rep_listing(s, 0) != CREC_OK)
            return;
    }
    if (before >= s->stop_at && (!s->is_last || s->truncated || rep_stopped_here(s)))
        crec_emu_cpu_stop(s->cpu);
}

/* ---- one run of segments ------------------------------------------------- */

static int rep_seg_open(struct rep_seg *s, crec_error *err)
{
    const crec_fmt_keyframe *kf = &s->kfs[s->first];
    struct crec_emu_cpu_hooks hooks = {
        .ctx = s,
        .syscall = rep_on_syscall,
        .cpuid = rep_on_cpuid,
        .rdtsc = rep_on_rdtsc,
        .block = rep_on_block,
    };
    int rc;

    rc = crec_emu_cpu_create(&s->cpu, &hooks, err);
    if (rc == CREC_OK)
        rc = crec_emu_cpu_hook_mem(s->cpu, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                                   (void *)rep_mem_hook, s, err);
    if (rc != CREC_OK)
        return rc;
    rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_READS, kf->tid, kf->reads_off, &s->reads, err);
    if (rc == CREC_OK)
        rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_EVENTS, kf->tid, kf->events_off, &s->events,
                                  err);
    if (rc != CREC_OK)
        return rc;
    s->tid = kf->tid;
    if (crec_emu_regs_set(s->cpu, &kf->regs) != CREC_OK)
        return crec_error_set(err, CREC_ERR_EMU, "can't load the registers of the key frame");
    crec_emu_cpu_set_icount(s->cpu, kf->global_icount);
    s->next_kf = s->first + 1;
    return CREC_OK;
}

/* The first READS entry after a key frame may count hits of earlier segments. */
static int rep_seg_first_hits(struct rep_seg *s, crec_error *err)
{
    uint64_t before = s->kfs[s->first].hits_before;

    if (rep_next_hits(s) != CREC_OK) {
        *err = s->err;
        return err->code;
    }
    if (s->hits_left == UINT64_MAX)
        return CREC_OK;
    if (s->hits_left < before)
        return crec_error_corrupt(err, "key frame at instruction %" PRIu64 " carries %" PRIu64
                                       " hits, but the next read entry has only %" PRIu64,
                                  s->kfs[s->first].global_icount, before, s->hits_left);
    s->hits_left -= before;
    return CREC_OK;
}

/* After the CPU stopped for good: the recording must end the same way. */
static void rep_seg_check_end(struct rep_seg *s, const struct crec_emu_stop *stop)
{
    const crec_fmt_keyframe *last = &s->kfs[s->nkf - 1];
    crec_fmt_event ev;
    crec_regs now;
    char what[300];

    if (!s->have_exit) {
        if (rep_next_non_mmap(s, &ev) != CREC_OK)
            return;
        if (ev.kind != CREC_FMT_K_EXIT) {
            if (stop->why != CREC_STOP_REQUESTED)
                rep_diverge(s, "the program stopped (%s) where the recording has %s",
                            stop->what[0] ? stop->what : "fault", event_name(ev.kind));
            else
                rep_diverge(s, "replay stopped where the recording has %s", event_name(ev.kind));
            return;
        }
        s->exit = ev;
        s->have_exit = 1;
    }
    if (s->exit.u.exit.how != CREC_FMT_EXIT_STATUS && stop->why != CREC_STOP_REQUESTED &&
        (uint64_t)stop->signo != s->exit.u.exit.value) {
        rep_diverge(s, "the program got signal %d, the recording ends with signal %" PRIu64,
                    stop->signo, s->exit.u.exit.value);
        return;
    }
    if (crec_emu_cpu_icount(s->cpu) != s->exit.u.exit.global_icount) {
        rep_diverge(s, "the program ended after %" PRIu64 " instructions, the recording after %"
                       PRIu64, crec_emu_cpu_icount(s->cpu), s->exit.u.exit.global_icount);
        return;
    }
    crec_emu_regs_get(s->cpu, &now);
    if (crec_regs_diff(&last->regs, &now, what, sizeof what)) {
        rep_diverge(s, "at the end: %s", what);
        return;
    }
    s->keyframes_checked++;
}

int rep_seg_run(struct rep_seg *s)
{
    struct crec_emu_stop stop;
    crec_error err = {0};
    int rc;

    rc = rep_seg_open(s, &err);
    if (rc == CREC_OK)
        rc = rep_listing(s, 1) == CREC_OK && !s->failed ? CREC_OK : CREC_ERR_CORRUPT;
    if (rc == CREC_OK && !s->failed && !s->diverged)
        rc = rep_seg_first_hits(s, &err);
    if (rc == CREC_OK && !s->failed && !s->diverged && s->query)
        rc = crec_emu_cpu_run_until(s->cpu, s->until, &s->reached, &stop, &err);
    else if (rc == CREC_OK && !s->failed && !s->diverged)
        rc = crec_emu_cpu_run(s->cpu, &stop, &err);
    if (rc != CREC_OK) {
        if (!s->failed)
            s->err = err;
        s->failed = 1;
        return s->err.code;
    }
    if (s->failed)
        return s->err.code;
    if (s->diverged || s->query)
        return CREC_OK;
    if (!s->is_last || s->truncated) {
        /* It must have reached and checked its last key frame. */
        if (s->next_kf <= s->end_kf)
            rep_diverge(s, "replay stopped before the key frame at instruction %" PRIu64,
                        s->kfs[s->end_kf].global_icount);
        return CREC_OK;
    }
    rep_seg_check_end(s, &stop);
    return CREC_OK;
}

void rep_seg_close(struct rep_seg *s)
{
    crec_fmt_cursor_free(s->reads);
    crec_fmt_cursor_free(s->events);
    crec_emu_cpu_free(s->cpu);
}
