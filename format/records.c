/*
 * records.c - the record layouts of every stream, encoder and decoder side
 * by side so that record and replay can't drift apart (docs/FORMAT.md §6).
 *
 * Framed record:   u8 kind | varint body length | body
 * Bare entries (READS, SEQ) have no frame: they are the hot path.
 *
 *   KEYFRAME 0x01  varint tid, varint global icount, varint thread icount,
 *                  regs (506 bytes: 16 GPR u64, rip, rflags, fs_base,
 *                  gs_base u64; xmm0..15 16 bytes each; mxcsr u32; fpcw,
 *                  fpsw, fptag u16; st0..7 10 bytes each),
 *                  varint READS offset, varint EVENTS offset, varint SEQ offset,
 *                  varint hits before
 *   SYSCALL  0x10  varint icount, varint nr, 6 x varint arg, svarint ret,
 *                  u8 flags (bit 0: hash follows), [u64 XXH3-64 of written bytes],
 *                  varint nregs (<= 24), nregs x (varint reg id, u64 value)
 *                  (flags bit 1: varint nout (<= 8), nout x (varint addr, varint len);
 *                  flags bit 2: the kernel wrote more ranges than listed)
 *   CPUID    0x11  varint leaf, varint subleaf, u32 eax, ebx, ecx, edx
 *   RDTSC    0x12  varint value
 *   MMAP     0x13  u8 op, varint addr, len, prot, flags, addr2, len2,
 *                  u8 flags (bit 0: hash16 follows, bit 1: string name follows,
 *                  bit 2: listing after a key frame, bit 3 (v2): foreign)
 *   SIGNAL   0x14  varint icount, varint signo, svarint code, varint addr;
 *                  version 3 then: u8 flags (bit 0 fault, bit 1 fatal),
 *                  varint nregs (<= 24), nregs x (varint reg id, u64 value),
 *                  varint nout (<= 8), nout x (varint addr, varint len)
 *   THREAD   0x15  u8 op (1 create, 2 exit), varint tid; version 2 then:
 *                  create: varint parent tid, varint guest tid;
 *                  exit: varint thread icount, u8 how (0 exited, 1 ended),
 *                  varint status, varint cleared address
 *   EXIT     0x16  varint global icount, u8 how (0 status, 1 signal, 2 stopped,
 *                  3 (v3) execve, 4 (v3) ended before the program: a STOP
 *                  mark says why), varint value
 *   SNAPSHOT 0x20  varint global icount, varint npages, npages x (varint addr, hash16)
 *   BLOB     0x30  hash16, then the blob bytes (the rest of the body)
 *   CODE     0x40  varint addr, len, prot, file offset, hash16, string name
 *   SYMBOL   0x50  hash16, varint addr, varint size, varint type, string name
 *   PROCESS  0x60  (v3) u8 op, varint process;
 *                  start: u8 how (0 root, 1 fork, 2 execve), varint parent,
 *                  varint parent thread, varint parent icount, varint pid,
 *                  varint ppid, string path, varint argc, argc x string;
 *                  end: u8 how (the EXIT kinds), varint value, varint instructions
 *   READS    bare  varint hits, then `width` value bytes as in guest memory
 *   SEQ      bare  varint global sequence number, varint thread icount,
 *                  (version 2) u8 kind (1..7) | 0x80 when the two numbers are
 *                  whole, else they are differences from the entry before
 *
 * Every reserved flag bit must be zero and a body must be consumed exactly.
 */
#include <stdio.h>

#include "format/format_int.h"

#define RC(x)                                                                                  \
    do {                                                                                       \
        int rc_ = (x);                                                                         \
        if (rc_)                                                                               \
            return rc_;                                                                        \
    } while (0)

static int done(const crec_fmt_buf *b)
{
    return b->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

/* ---- KEYFRAME ------------------------------------------------------------- */

static void regs_encode(crec_fmt_buf *b, const crec_regs *r)
{
    for (int i = 0; i < CREC_NGPR; i++)
        fmt_buf_u64(b, r->gpr[i]);
    fmt_buf_u64(b, r->rip);
    fmt_buf_u64(b, r->rflags);
    fmt_buf_u64(b, r->fs_base);
    fmt_buf_u64(b, r->gs_base);
    for (int i = 0; i < 16; i++)
        fmt_buf_bytes(b, r->xmm[i], 16);
    fmt_buf_u32(b, r->mxcsr);
    fmt_buf_u16(b, r->fpcw);
    fmt_buf_u16(b, r->fpsw);
    fmt_buf_u16(b, r->fptag);
    for (int i = 0; i < 8; i++)
        fmt_buf_bytes(b, r->st[i], 10);
}

static int regs_decode(crec_fmt_cur *c, crec_regs *r, crec_error *err)
{
    for (int i = 0; i < CREC_NGPR; i++)
        RC(fmt_cur_u64(c, &r->gpr[i], "key frame registers", err));
    RC(fmt_cur_u64(c, &r->rip, "key frame rip", err));
    RC(fmt_cur_u64(c, &r->rflags, "key frame rflags", err));
    RC(fmt_cur_u64(c, &r->fs_base, "key frame fs_base", err));
    RC(fmt_cur_u64(c, &r->gs_base, "key frame gs_base", err));
    for (int i = 0; i < 16; i++)
        RC(fmt_cur_bytes(c, r->xmm[i], 16, "key frame xmm", err));
    RC(fmt_cur_u32(c, &r->mxcsr, "key frame mxcsr", err));
    RC(fmt_cur_u16(c, &r->fpcw, "key frame fpcw", err));
    RC(fmt_cur_u16(c, &r->fpsw, "key frame fpsw", err));
    RC(fmt_cur_u16(c, &r->fptag, "key frame fptag", err));
    for (int i = 0; i < 8; i++)
        RC(fmt_cur_bytes(c, r->st[i], 10, "key frame st", err));
    return CREC_OK;
}

static int kf_encode(crec_fmt_buf *b, const crec_fmt_keyframe *kf, int kind)
{
    size_t f = fmt_frame_begin(b, (uint8_t)kind);
    fmt_buf_varint(b, kf->tid);
    fmt_buf_varint(b, kf->global_icount);
    fmt_buf_varint(b, kf->thread_icount);
    regs_encode(b, &kf->regs);
    fmt_buf_varint(b, kf->reads_off);
    fmt_buf_varint(b, kf->events_off);
    fmt_buf_varint(b, kf->seq_off);
    fmt_buf_varint(b, kf->hits_before);
    fmt_frame_end(b, f);
    return done(b);
}

int crec_fmt_kf_encode(crec_fmt_buf *b, const crec_fmt_keyframe *kf)
{
    return kf_encode(b, kf, CREC_FMT_K_KEYFRAME);
}

int crec_fmt_cp_encode(crec_fmt_buf *b, const crec_fmt_keyframe *cp)
{
    return kf_encode(b, cp, CREC_FMT_K_CHECKPOINT);
}

int crec_fmt_kf_decode(const uint8_t *body, size_t len, crec_fmt_keyframe *kf, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    memset(kf, 0, sizeof *kf);
    RC(fmt_cur_varint32(&c, &kf->tid, "key frame thread", err));
    RC(fmt_cur_varint(&c, &kf->global_icount, "key frame instruction count", err));
    RC(fmt_cur_varint(&c, &kf->thread_icount, "key frame thread instruction count", err));
    RC(regs_decode(&c, &kf->regs, err));
    RC(fmt_cur_varint(&c, &kf->reads_off, "key frame READS offset", err));
    RC(fmt_cur_varint(&c, &kf->events_off, "key frame EVENTS offset", err));
    RC(fmt_cur_varint(&c, &kf->seq_off, "key frame SEQ offset", err));
    RC(fmt_cur_varint(&c, &kf->hits_before, "key frame hits before", err));
    return fmt_cur_end(&c, "key frame", err);
}

/* ---- EVENTS ----------------------------------------------------------------- */

/* varint n, then n x (varint register id, u64 value) */
static void regs_list_encode(crec_fmt_buf *b, const crec_fmt_reg_value *r, uint32_t n)
{
    if (n > CREC_FMT_SYS_MAXREGS)
        n = CREC_FMT_SYS_MAXREGS;
    fmt_buf_varint(b, n);
    for (uint32_t i = 0; i < n; i++) {
        fmt_buf_varint(b, r[i].id);
        fmt_buf_u64(b, r[i].value);
    }
}

/* varint n, then n x (varint address, varint length) */
static void ranges_encode(crec_fmt_buf *b, const crec_fmt_range *r, uint32_t n)
{
    if (n > CREC_FMT_SYS_MAXOUT)
        n = CREC_FMT_SYS_MAXOUT;
    fmt_buf_varint(b, n);
    for (uint32_t i = 0; i < n; i++) {
        fmt_buf_varint(b, r[i].addr);
        fmt_buf_varint(b, r[i].len);
    }
}

static void ev_body(crec_fmt_buf *b, const crec_fmt_event *ev)
{
    switch (ev->kind) {
    case CREC_FMT_K_SYSCALL:
        fmt_buf_varint(b, ev->u.sys.icount);
        fmt_buf_varint(b, ev->u.sys.nr);
        for (int i = 0; i < 6; i++)
            fmt_buf_varint(b, ev->u.sys.args[i]);
        fmt_buf_svarint(b, ev->u.sys.ret);
        fmt_buf_u8(b, ev->u.sys.flags &
                          (CREC_FMT_EV_HAS_HASH | CREC_FMT_EV_HAS_OUT | CREC_FMT_EV_OUT_MORE));
        if (ev->u.sys.flags & CREC_FMT_EV_HAS_HASH)
            fmt_buf_u64(b, ev->u.sys.write_hash);
        regs_list_encode(b, ev->u.sys.regs, ev->u.sys.nregs);
        if (ev->u.sys.flags & CREC_FMT_EV_HAS_OUT)
            ranges_encode(b, ev->u.sys.out, ev->u.sys.nout);
        break;
    case CREC_FMT_K_CPUID:
        fmt_buf_varint(b, ev->u.cpuid.leaf);
        fmt_buf_varint(b, ev->u.cpuid.subleaf);
        fmt_buf_u32(b, ev->u.cpuid.eax);
        fmt_buf_u32(b, ev->u.cpuid.ebx);
        fmt_buf_u32(b, ev->u.cpuid.ecx);
        fmt_buf_u32(b, ev->u.cpuid.edx);
        break;
    case CREC_FMT_K_RDTSC:
        fmt_buf_varint(b, ev->u.rdtsc.value);
        break;
    case CREC_FMT_K_MMAP:
        fmt_buf_u8(b, (uint8_t)ev->u.mmap.op);
        fmt_buf_varint(b, ev->u.mmap.addr);
        fmt_buf_varint(b, ev->u.mmap.len);
        fmt_buf_varint(b, ev->u.mmap.prot);
        fmt_buf_varint(b, ev->u.mmap.mflags);
        fmt_buf_varint(b, ev->u.mmap.addr2);
        fmt_buf_varint(b, ev->u.mmap.len2);
        fmt_buf_u8(b, ev->u.mmap.flags & (CREC_FMT_EV_HAS_HASH | CREC_FMT_EV_HAS_NAME |
                                          CREC_FMT_EV_LISTING | CREC_FMT_EV_FOREIGN));
        if (ev->u.mmap.flags & CREC_FMT_EV_HAS_HASH)
            fmt_buf_hash(b, &ev->u.mmap.blob);
        if (ev->u.mmap.flags & CREC_FMT_EV_HAS_NAME)
            fmt_buf_str(b, ev->u.mmap.name, ev->u.mmap.name_len);
        break;
    case CREC_FMT_K_SIGNAL:
        fmt_buf_varint(b, ev->u.sig.icount);
        fmt_buf_varint(b, ev->u.sig.signo);
        fmt_buf_svarint(b, ev->u.sig.code);
        fmt_buf_varint(b, ev->u.sig.addr);
        fmt_buf_u8(b, (uint8_t)(ev->u.sig.flags & (CREC_FMT_SIG_FAULT | CREC_FMT_SIG_FATAL)));
        regs_list_encode(b, ev->u.sig.regs, ev->u.sig.nregs);
        ranges_encode(b, ev->u.sig.out, ev->u.sig.nout);
        break;
    case CREC_FMT_K_THREAD:
        fmt_buf_u8(b, (uint8_t)ev->u.thread.op);
        fmt_buf_varint(b, ev->u.thread.tid);
        if (ev->u.thread.op == CREC_FMT_TH_CREATE) {
            fmt_buf_varint(b, ev->u.thread.parent);
            fmt_buf_varint(b, ev->u.thread.guest_tid);
        } else {
            fmt_buf_varint(b, ev->u.thread.icount);
            fmt_buf_u8(b, (uint8_t)ev->u.thread.how);
            fmt_buf_varint(b, ev->u.thread.status);
            fmt_buf_varint(b, ev->u.thread.cleared);
        }
        break;
    case CREC_FMT_K_EXIT:
        fmt_buf_varint(b, ev->u.exit.global_icount);
        fmt_buf_u8(b, (uint8_t)ev->u.exit.how);
        fmt_buf_varint(b, ev->u.exit.value);
        break;
    }
}

int crec_fmt_ev_encode(crec_fmt_buf *b, const crec_fmt_event *ev)
{
    if (ev->kind < CREC_FMT_K_SYSCALL || ev->kind > CREC_FMT_K_EXIT)
        return CREC_ERR_ARG;
    size_t f = fmt_frame_begin(b, ev->kind);
    ev_body(b, ev);
    fmt_frame_end(b, f);
    return done(b);
}

static int flags_check(uint8_t flags, uint8_t allowed, const char *what, crec_error *err)
{
    if (flags & ~allowed)
        return crec_error_corrupt(err, "reserved %s flag bits set (0x%02x)", what, flags);
    return CREC_OK;
}

/* A range of guest memory must lie in the x86-64 user address space: a
 * length of 64 TiB in a hostile file is refused here, not mapped. */
static int range_check(uint64_t addr, uint64_t len, const char *what, crec_error *err)
{
    if (addr > CREC_FMT_ADDR_LIMIT || len > CREC_FMT_ADDR_LIMIT - addr)
        return crec_error_corrupt(err, "%s 0x%llx (+0x%llx) is outside the address space "
                                  "(0x%llx)", what, (unsigned long long)addr,
                                  (unsigned long long)len,
                                  (unsigned long long)CREC_FMT_ADDR_LIMIT);
    return CREC_OK;
}

/* A register list of a SYSCALL or SIGNAL record (`what` names it). */
static int regs_list_decode(crec_fmt_cur *c, crec_fmt_reg_value *r, uint32_t *n, const char *what,
                            crec_error *err)
{
    RC(fmt_cur_varint32(c, n, "register count", err));
    if (*n > CREC_FMT_SYS_MAXREGS)
        return crec_error_corrupt(err, "%s changes %u registers (at most %d)", what, *n,
                                  CREC_FMT_SYS_MAXREGS);
    for (uint32_t i = 0; i < *n; i++) {
        RC(fmt_cur_varint32(c, &r[i].id, "register id", err));
        if (r[i].id > CREC_FMT_REG_GS_BASE)
            return crec_error_corrupt(err, "%s register id %u out of range", what, r[i].id);
        RC(fmt_cur_u64(c, &r[i].value, "register value", err));
    }
    return CREC_OK;
}

/* The ranges the kernel wrote of a SYSCALL or SIGNAL record. */
static int ranges_decode(crec_fmt_cur *c, crec_fmt_range *r, uint32_t *n, const char *what,
                         crec_error *err)
{
    char name[48];

    RC(fmt_cur_varint32(c, n, "range count", err));
    if (*n > CREC_FMT_SYS_MAXOUT)
        return crec_error_corrupt(err, "%s lists %u written ranges (at most %d)", what, *n,
                                  CREC_FMT_SYS_MAXOUT);
    snprintf(name, sizeof name, "%s written range", what);
    for (uint32_t i = 0; i < *n; i++) {
        RC(fmt_cur_varint(c, &r[i].addr, "range address", err));
        RC(fmt_cur_varint(c, &r[i].len, "range length", err));
        RC(range_check(r[i].addr, r[i].len, name, err));
    }
    return CREC_OK;
}

static int sys_decode(crec_fmt_cur *c, crec_fmt_event *ev, crec_error *err)
{
    uint8_t fl;
    RC(fmt_cur_varint(c, &ev->u.sys.icount, "syscall instruction count", err));
    RC(fmt_cur_varint(c, &ev->u.sys.nr, "syscall number", err));
    for (int i = 0; i < 6; i++)
        RC(fmt_cur_varint(c, &ev->u.sys.args[i], "syscall argument", err));
    RC(fmt_cur_svarint(c, &ev->u.sys.ret, "syscall result", err));
    RC(fmt_cur_u8(c, &fl, "syscall flags", err));
    RC(flags_check(fl, CREC_FMT_EV_HAS_HASH | CREC_FMT_EV_HAS_OUT | CREC_FMT_EV_OUT_MORE,
                   "syscall", err));
    ev->u.sys.flags = fl;
    if (fl & CREC_FMT_EV_HAS_HASH)
        RC(fmt_cur_u64(c, &ev->u.sys.write_hash, "syscall write hash", err));
    RC(regs_list_decode(c, ev->u.sys.regs, &ev->u.sys.nregs, "syscall", err));
    ev->u.sys.nout = 0;
    if (fl & CREC_FMT_EV_HAS_OUT)
        RC(ranges_decode(c, ev->u.sys.out, &ev->u.sys.nout, "syscall", err));
    return CREC_OK;
}

static int cpuid_decode(crec_fmt_cur *c, crec_fmt_event *ev, crec_error *err)
{
    RC(fmt_cur_varint32(c, &ev->u.cpuid.leaf, "cpuid leaf", err));
    RC(fmt_cur_varint32(c, &ev->u.cpuid.subleaf, "cpuid subleaf", err));
    RC(fmt_cur_u32(c, &ev->u.cpuid.eax, "cpuid eax", err));
    RC(fmt_cur_u32(c, &ev->u.cpuid.ebx, "cpuid ebx", err));
    RC(fmt_cur_u32(c, &ev->u.cpuid.ecx, "cpuid ecx", err));
    return fmt_cur_u32(c, &ev->u.cpuid.edx, "cpuid edx", err);
}

static int mmap_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_event *ev, crec_error *err)
{
    uint8_t op, fl;
    RC(fmt_cur_u8(c, &op, "mmap operation", err));
    if (op < CREC_FMT_MM_MAP || op > CREC_FMT_MM_REMAP)
        return crec_error_corrupt(err, "unknown mmap operation %u", op);
    ev->u.mmap.op = op;
    RC(fmt_cur_varint(c, &ev->u.mmap.addr, "mmap address", err));
    RC(fmt_cur_varint(c, &ev->u.mmap.len, "mmap length", err));
    RC(fmt_cur_varint(c, &ev->u.mmap.prot, "mmap protection", err));
    RC(fmt_cur_varint(c, &ev->u.mmap.mflags, "mmap flags", err));
    RC(fmt_cur_varint(c, &ev->u.mmap.addr2, "mmap new address", err));
    RC(fmt_cur_varint(c, &ev->u.mmap.len2, "mmap new length", err));
    RC(range_check(ev->u.mmap.addr, ev->u.mmap.len, "mmap range", err));
    RC(range_check(ev->u.mmap.addr2, ev->u.mmap.len2, "mmap new range", err));
    RC(fmt_cur_u8(c, &fl, "mmap record flags", err));
    RC(flags_check(fl, CREC_FMT_EV_HAS_HASH | CREC_FMT_EV_HAS_NAME | CREC_FMT_EV_LISTING |
                           (version >= 2 ? CREC_FMT_EV_FOREIGN : 0),
                   "mmap", err));
    ev->u.mmap.flags = fl;
    /* a key frame's listing says what is mapped: a replay starting there maps
     * each entry, so anything but a mapping would build another memory */
    if ((fl & CREC_FMT_EV_LISTING) && op != CREC_FMT_MM_MAP)
        return crec_error_corrupt(err, "mmap operation %u in a key frame's listing (only %u, a "
                                       "mapping, lists)", op, CREC_FMT_MM_MAP);
    if (fl & CREC_FMT_EV_HAS_HASH)
        RC(fmt_cur_hash(c, &ev->u.mmap.blob, "mmap blob hash", err));
    if (fl & CREC_FMT_EV_HAS_NAME) {
        const uint8_t *s;
        RC(fmt_cur_str(c, &s, &ev->u.mmap.name_len, "mmap name", err));
        ev->u.mmap.name = (const char *)s;
    }
    return CREC_OK;
}

static int sig_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_event *ev, crec_error *err)
{
    uint8_t fl;
    RC(fmt_cur_varint(c, &ev->u.sig.icount, "signal instruction count", err));
    RC(fmt_cur_varint32(c, &ev->u.sig.signo, "signal number", err));
    RC(fmt_cur_svarint(c, &ev->u.sig.code, "signal code", err));
    RC(fmt_cur_varint(c, &ev->u.sig.addr, "signal address", err));
    if (version < 3)
        return CREC_OK;
    if (ev->u.sig.signo < 1 || ev->u.sig.signo > 64)
        return crec_error_corrupt(err, "signal number %u out of range (1 to 64)",
                                  ev->u.sig.signo);
    RC(fmt_cur_u8(c, &fl, "signal flags", err));
    RC(flags_check(fl, CREC_FMT_SIG_FAULT | CREC_FMT_SIG_FATAL, "signal", err));
    ev->u.sig.flags = fl;
    RC(regs_list_decode(c, ev->u.sig.regs, &ev->u.sig.nregs, "signal", err));
    return ranges_decode(c, ev->u.sig.out, &ev->u.sig.nout, "signal", err);
}

static int thread_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_event *ev,
                         crec_error *err)
{
    uint8_t op, how;
    RC(fmt_cur_u8(c, &op, "thread operation", err));
    if (op != CREC_FMT_TH_CREATE && op != CREC_FMT_TH_EXIT)
        return crec_error_corrupt(err, "unknown thread operation %u", op);
    ev->u.thread.op = op;
    RC(fmt_cur_varint32(c, &ev->u.thread.tid, "thread id", err));
    if (version < 2)
        return CREC_OK;
    if (op == CREC_FMT_TH_CREATE) {
        RC(fmt_cur_varint32(c, &ev->u.thread.parent, "thread parent", err));
        return fmt_cur_varint32(c, &ev->u.thread.guest_tid, "thread guest tid", err);
    }
    RC(fmt_cur_varint(c, &ev->u.thread.icount, "thread instruction count", err));
    RC(fmt_cur_u8(c, &how, "thread end", err));
    if (how > CREC_FMT_TH_ENDED)
        return crec_error_corrupt(err, "unknown thread end %u", how);
    ev->u.thread.how = how;
    RC(fmt_cur_varint(c, &ev->u.thread.status, "thread exit status", err));
    return fmt_cur_varint(c, &ev->u.thread.cleared, "thread cleared address", err);
}

static int exit_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_event *ev, crec_error *err)
{
    uint8_t how;
    RC(fmt_cur_varint(c, &ev->u.exit.global_icount, "exit instruction count", err));
    RC(fmt_cur_u8(c, &how, "exit kind", err));
    if (how > (version >= 3 ? CREC_FMT_EXIT_ENDED : CREC_FMT_EXIT_STOPPED))
        return crec_error_corrupt(err, "unknown exit kind %u", how);
    ev->u.exit.how = how;
    return fmt_cur_varint(c, &ev->u.exit.value, "exit status", err);
}

int crec_fmt_ev_decode(uint32_t version, int kind, const uint8_t *body, size_t len,
                       crec_fmt_event *ev, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    switch (kind) {
    case CREC_FMT_K_SYSCALL: RC(sys_decode(&c, ev, err)); break;
    case CREC_FMT_K_CPUID: RC(cpuid_decode(&c, ev, err)); break;
    case CREC_FMT_K_RDTSC: RC(fmt_cur_varint(&c, &ev->u.rdtsc.value, "rdtsc value", err)); break;
    case CREC_FMT_K_MMAP: RC(mmap_decode(version, &c, ev, err)); break;
    case CREC_FMT_K_SIGNAL: RC(sig_decode(version, &c, ev, err)); break;
    case CREC_FMT_K_THREAD: RC(thread_decode(version, &c, ev, err)); break;
    case CREC_FMT_K_EXIT: RC(exit_decode(version, &c, ev, err)); break;
    default: return crec_error_corrupt(err, "record kind 0x%02x in an EVENTS stream", kind);
    }
    return fmt_cur_end(&c, "event", err);
}

/* ---- READS and SEQ (bare) --------------------------------------------------- */

unsigned crec_fmt_read_span(uint64_t addr, unsigned size, uint64_t *start)
{
    const uint64_t g = CREC_FMT_GRANULE;
    uint64_t first = addr & ~(g - 1), last = (addr + size - 1) & ~(g - 1);

    if (size == 0 || size > g) {
        *start = addr;
        return size;
    }
    *start = first;
    return (unsigned)(last - first + g);
}

int crec_fmt_read_encode(crec_fmt_buf *b, uint64_t hits, const uint8_t *value, unsigned width)
{
    if (width < 1 || width > CREC_FMT_READ_WIDTH_MAX)
        return CREC_ERR_ARG;
    fmt_buf_varint(b, hits);
    fmt_buf_bytes(b, value, width);
    return done(b);
}

int crec_fmt_read_decode_hits(crec_fmt_cursor *c, uint64_t *hits, crec_error *err)
{
    return crec_fmt_cursor_varint(c, hits, err);
}

int crec_fmt_read_decode_value(crec_fmt_cursor *c, unsigned width, uint8_t *value,
                               crec_error *err)
{
    int rc;

    if (width < 1 || width > CREC_FMT_READ_WIDTH_MAX)
        return crec_error_set(err, CREC_ERR_ARG, "read width %u out of range", width);
    rc = crec_fmt_cursor_read(c, value, width, err);
    if (rc == CREC_ERR_NOTFOUND) /* the entry's hit count was there: cut inside it */
        return crec_error_corrupt(err, "the READS stream ends inside an entry, before its "
                                  "%u-byte value", width);
    return rc;
}

int crec_fmt_seq_encode(crec_fmt_buf *b, crec_fmt_seq_ctx *ctx, const crec_fmt_seq *e)
{
    int whole = ctx->fresh || e->seq < ctx->seq || e->icount < ctx->icount;

    fmt_buf_varint(b, whole ? e->seq : e->seq - ctx->seq);
    fmt_buf_varint(b, whole ? e->icount : e->icount - ctx->icount);
    fmt_buf_u8(b, (uint8_t)(e->kind | (whole ? CREC_FMT_SEQ_WHOLE : 0)));
    ctx->seq = e->seq, ctx->icount = e->icount, ctx->fresh = 0;
    return done(b);
}

/* The numbers of an entry, whole or as differences (version 2). */
static int seq_apply(crec_fmt_seq_ctx *ctx, uint64_t dseq, uint64_t dic, uint8_t kind,
                     crec_fmt_seq *e, crec_error *err)
{
    if (!(kind & CREC_FMT_SEQ_WHOLE) && ctx->fresh)
        return crec_error_corrupt(err, "a sequence entry where one must start holds differences");
    if (kind & CREC_FMT_SEQ_WHOLE) {
        e->seq = dseq, e->icount = dic;
    } else {
        if (dseq > UINT64_MAX - ctx->seq || dic > UINT64_MAX - ctx->icount)
            return crec_error_corrupt(err, "sequence entry out of range");
        e->seq = ctx->seq + dseq, e->icount = ctx->icount + dic;
    }
    kind &= (uint8_t)~CREC_FMT_SEQ_WHOLE;
    if (kind < CREC_FMT_SEQ_SYSCALL || kind > CREC_FMT_SEQ_OUT_EXACT)
        return crec_error_corrupt(err, "unknown sequence kind %u", kind);
    e->kind = kind;
    ctx->seq = e->seq, ctx->icount = e->icount, ctx->fresh = 0;
    return CREC_OK;
}

int crec_fmt_seq_decode(uint32_t version, crec_fmt_cur *c, crec_fmt_seq_ctx *ctx, crec_fmt_seq *e,
                        crec_error *err)
{
    uint64_t a, b;
    uint8_t kind;
    e->kind = 0;
    RC(fmt_cur_varint(c, &a, "sequence number", err));
    RC(fmt_cur_varint(c, &b, "sequence instruction count", err));
    if (version < 2) {
        e->seq = a, e->icount = b;
        return CREC_OK;
    }
    RC(fmt_cur_u8(c, &kind, "sequence kind", err));
    return seq_apply(ctx, a, b, kind, e, err);
}

int fmt_seq_apply(crec_fmt_seq_ctx *ctx, uint64_t dseq, uint64_t dic, uint8_t kind,
                  crec_fmt_seq *e, crec_error *err)
{
    return seq_apply(ctx, dseq, dic, kind, e, err);
}

/* ---- SNAPSHOT ------------------------------------------------------------- */

int crec_fmt_snap_encode(crec_fmt_buf *b, const crec_fmt_snapshot *s)
{
    size_t f = fmt_frame_begin(b, CREC_FMT_K_SNAPSHOT);
    fmt_buf_varint(b, s->global_icount);
    fmt_buf_varint(b, s->npages);
    for (size_t i = 0; i < s->npages; i++) {
        fmt_buf_varint(b, s->pages[i].addr);
        fmt_buf_hash(b, &s->pages[i].blob);
    }
    fmt_frame_end(b, f);
    return done(b);
}

void crec_fmt_snapshot_clear(crec_fmt_snapshot *s)
{
    if (!s)
        return;
    crec_free(s->pages);
    memset(s, 0, sizeof *s);
}

int crec_fmt_snap_decode(const uint8_t *body, size_t len, crec_fmt_snapshot *s, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    uint64_t n;
    memset(s, 0, sizeof *s);
    RC(fmt_cur_varint(&c, &s->global_icount, "snapshot instruction count", err));
    RC(fmt_cur_varint(&c, &n, "snapshot page count", err));
    /* Each page takes at least 17 bytes: the count can't outgrow the body. */
    if (n > (c.len - c.pos) / 17)
        return crec_error_corrupt(err, "snapshot page count %llu out of range",
                                  (unsigned long long)n);
    s->pages = crec_calloc((size_t)n, sizeof *s->pages);
    if (!s->pages)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading a snapshot");
    s->npages = (size_t)n;
    for (size_t i = 0; i < n; i++) {
        int rc = fmt_cur_varint(&c, &s->pages[i].addr, "snapshot page address", err);
        if (rc == CREC_OK)
            rc = range_check(s->pages[i].addr, CREC_PAGE_SIZE, "snapshot page", err);
        if (!rc)
            rc = fmt_cur_hash(&c, &s->pages[i].blob, "snapshot page hash", err);
        if (rc) {
            crec_fmt_snapshot_clear(s);
            return rc;
        }
    }
    if (fmt_cur_end(&c, "snapshot", err)) {
        crec_fmt_snapshot_clear(s);
        return CREC_ERR_CORRUPT;
    }
    return CREC_OK;
}

/* ---- CODE and SYMBOL ---------------------------------------------------- */

int crec_fmt_code_encode(crec_fmt_buf *b, const crec_fmt_code *m)
{
    size_t f = fmt_frame_begin(b, CREC_FMT_K_CODE);
    fmt_buf_varint(b, m->addr);
    fmt_buf_varint(b, m->len);
    fmt_buf_varint(b, m->prot);
    fmt_buf_varint(b, m->file_off);
    fmt_buf_hash(b, &m->blob);
    fmt_buf_str(b, m->name ? m->name : "", m->name ? m->name_len : 0);
    fmt_frame_end(b, f);
    return done(b);
}

int crec_fmt_code_decode(const uint8_t *body, size_t len, crec_fmt_code *m, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    const uint8_t *s;
    memset(m, 0, sizeof *m);
    RC(fmt_cur_varint(&c, &m->addr, "code address", err));
    RC(fmt_cur_varint(&c, &m->len, "code length", err));
    RC(range_check(m->addr, m->len, "code range", err));
    RC(fmt_cur_varint(&c, &m->prot, "code protection", err));
    RC(fmt_cur_varint(&c, &m->file_off, "code file offset", err));
    RC(fmt_cur_hash(&c, &m->blob, "code blob hash", err));
    RC(fmt_cur_str(&c, &s, &m->name_len, "code file name", err));
    m->name = (const char *)s;
    return fmt_cur_end(&c, "code mapping", err);
}

int crec_fmt_sym_encode(crec_fmt_buf *b, const crec_fmt_symbol *y)
{
    size_t f = fmt_frame_begin(b, CREC_FMT_K_SYMBOL);
    fmt_buf_hash(b, &y->blob);
    fmt_buf_varint(b, y->addr);
    fmt_buf_varint(b, y->size);
    fmt_buf_varint(b, y->type);
    fmt_buf_str(b, y->name ? y->name : "", y->name ? y->name_len : 0);
    fmt_frame_end(b, f);
    return done(b);
}

int crec_fmt_sym_decode(const uint8_t *body, size_t len, crec_fmt_symbol *y, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    const uint8_t *s;
    memset(y, 0, sizeof *y);
    RC(fmt_cur_hash(&c, &y->blob, "symbol blob hash", err));
    RC(fmt_cur_varint(&c, &y->addr, "symbol address", err));
    RC(fmt_cur_varint(&c, &y->size, "symbol size", err));
    RC(fmt_cur_varint32(&c, &y->type, "symbol type", err));
    RC(fmt_cur_str(&c, &s, &y->name_len, "symbol name", err));
    y->name = (const char *)s;
    return fmt_cur_end(&c, "symbol", err);
}

/* ---- PROCESS (version 3) ------------------------------------------------------- */

int crec_fmt_proc_encode(crec_fmt_buf *b, const crec_fmt_process *p)
{
    size_t f = fmt_frame_begin(b, CREC_FMT_K_PROCESS);
    fmt_buf_u8(b, (uint8_t)p->op);
    fmt_buf_varint(b, p->proc);
    if (p->op == CREC_FMT_PR_START) {
        fmt_buf_u8(b, (uint8_t)p->how);
        fmt_buf_varint(b, p->parent);
        fmt_buf_varint(b, p->parent_tid);
        fmt_buf_varint(b, p->parent_icount);
        fmt_buf_varint(b, p->pid);
        fmt_buf_varint(b, p->ppid);
        fmt_buf_str(b, p->path ? p->path : "", p->path ? p->path_len : 0);
        fmt_buf_varint(b, p->argc);
        for (size_t i = 0; i < p->argc; i++) {
            const char *a = p->argv && p->argv[i] ? p->argv[i] : "";
            size_t n = strlen(a);
            fmt_buf_str(b, a, n < CREC_FMT_MAX_STRING ? n : CREC_FMT_MAX_STRING);
        }
    } else {
        fmt_buf_u8(b, (uint8_t)p->end_how);
        fmt_buf_varint(b, p->value);
        fmt_buf_varint(b, p->instructions);
    }
    fmt_frame_end(b, f);
    return done(b);
}

int crec_fmt_proc_decode(const uint8_t *body, size_t len, crec_fmt_process *p, crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    const uint8_t *s;
    uint8_t op, how;
    uint64_t argc;

    memset(p, 0, sizeof *p);
    RC(fmt_cur_u8(&c, &op, "process operation", err));
    if (op != CREC_FMT_PR_START && op != CREC_FMT_PR_END)
        return crec_error_corrupt(err, "unknown process operation %u", op);
    p->op = op;
    RC(fmt_cur_varint32(&c, &p->proc, "process number", err));
    if (p->proc > FMT_MAX_PROC)
        return crec_error_corrupt(err, "process number %u out of range", p->proc);
    RC(fmt_cur_u8(&c, &how, "process kind", err));
    if (op == CREC_FMT_PR_END) {
        if (how > CREC_FMT_EXIT_ENDED)
            return crec_error_corrupt(err, "unknown process end %u", how);
        p->end_how = how;
        RC(fmt_cur_varint(&c, &p->value, "process exit value", err));
        RC(fmt_cur_varint(&c, &p->instructions, "process instructions", err));
        return fmt_cur_end(&c, "process record", err);
    }
    if (how > CREC_FMT_PR_EXEC)
        return crec_error_corrupt(err, "unknown process start %u", how);
    p->how = how;
    RC(fmt_cur_varint32(&c, &p->parent, "process parent", err));
    RC(fmt_cur_varint32(&c, &p->parent_tid, "process parent thread", err));
    RC(fmt_cur_varint(&c, &p->parent_icount, "process parent instruction count", err));
    RC(fmt_cur_varint32(&c, &p->pid, "process pid", err));
    RC(fmt_cur_varint32(&c, &p->ppid, "process parent pid", err));
    RC(fmt_cur_str(&c, &s, &p->path_len, "process path", err));
    p->path = (const char *)s;
    RC(fmt_cur_varint(&c, &argc, "process argc", err));
    if (argc > CREC_FMT_MAX_STRINGS || argc > c.len - c.pos)
        return crec_error_corrupt(err, "process argc %llu out of range (at most %u, and the "
                                  "bytes left)", (unsigned long long)argc, CREC_FMT_MAX_STRINGS);
    p->argc = (size_t)argc;
    p->args = c.p + c.pos;
    for (size_t i = 0; i < p->argc; i++) {
        size_t n;
        RC(fmt_cur_str(&c, &s, &n, "process argument", err));
        if (memchr(s, 0, n))
            return crec_error_corrupt(err, "process argument %zu contains a NUL byte", i);
    }
    p->args_len = (size_t)(c.p + c.pos - p->args);
    return fmt_cur_end(&c, "process record", err);
}

int crec_fmt_process_argv(const crec_fmt_process *p, char ***out)
{
    crec_fmt_cur c = {p->args, p->args_len, 0};
    size_t room = (p->argc + 1) * sizeof(char *) + p->args_len + p->argc + 1;
    char **v = crec_malloc(room), *at;

    *out = NULL;
    if (!v)
        return CREC_ERR_NOMEM;
    at = (char *)(v + p->argc + 1);
    for (size_t i = 0; i < p->argc; i++) {
        const uint8_t *s;
        size_t n;
        if (fmt_cur_str(&c, &s, &n, "process argument", NULL) != CREC_OK)
            n = 0, s = (const uint8_t *)""; /* decoded already: never */
        v[i] = at;
        memcpy(at, s, n);
        at[n] = '\0';
        at += n + 1;
    }
    v[p->argc] = NULL;
    *out = v;
    return CREC_OK;
}
