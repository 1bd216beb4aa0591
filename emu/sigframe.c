/*
 * sigframe.c - the signal frame Linux x86-64 builds on the stack for a
 * handler, as bytes: what emu writes at delivery and what rt_sigreturn
 * reads back.  It is in emu's CPU part because the replayer restores the
 * registers of an rt_sigreturn from the same bytes (docs/EMU.md, Signals).
 *
 * The kernel's `struct ucontext` (arch/x86/include/uapi/asm/ucontext.h,
 * sigcontext.h), every field little-endian:
 *
 *   off  size  field
 *     0     8  uc_flags (UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS: no xsave)
 *     8     8  uc_link (0)
 *    16     8  uc_stack.ss_sp
 *    24     4  uc_stack.ss_flags, then 4 bytes of padding
 *    32     8  uc_stack.ss_size
 *    40   256  uc_mcontext (struct sigcontext): r8..r15, rdi, rsi, rbp, rbx,
 *              rdx, rax, rcx, rsp, rip, eflags (8 bytes each, from 40),
 *              cs, gs, fs, ss (2 each, at 184), err, trapno, oldmask, cr2
 *              (8 each, at 192), fpstate (the address of the FXSAVE image,
 *              at 224), 64 reserved bytes
 *   296     8  uc_sigmask
 *
 * The FXSAVE image (512 bytes, 64-byte aligned): fcw at 0, fsw at 2, the
 * abridged tag byte at 4, mxcsr at 24, mxcsr_mask at 28, st0..st7 at 32
 * (16 bytes each, 10 used), xmm0..xmm15 at 160.
 */
#include <string.h>

#include "common/common.h"
#include "emu/emu.h"

#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define MC 40 /* uc_mcontext */
#define PUT64(p, v) crec_le_put((p), (v), 8)
#define PUT32(p, v) crec_le_put((p), (v), 4)
#define PUT16(p, v) crec_le_put((p), (v), 2)
#define GET64(p) crec_le_get((p), 8)
#define GET32(p) ((uint32_t)crec_le_get((p), 4))
#define GET16(p) ((uint16_t)crec_le_get((p), 2))
/* The order of the general registers in sigcontext, as crec_gpr numbers. */
static const int mc_gpr[18] = {CREC_R8,  CREC_R9,  CREC_R10, CREC_R11, CREC_R12, CREC_R13,
                               CREC_R14, CREC_R15, CREC_RDI, CREC_RSI, CREC_RBP, CREC_RBX,
                               CREC_RDX, CREC_RAX, CREC_RCX, CREC_RSP, -1 /* rip */,
                               -2 /* eflags */};
/* The flags a handler may change through its frame (Linux's FIX_EFLAGS):
 * AC OF DF TF SF ZF AF PF CF RF. */
#define FIX_EFLAGS 0x50dd5ull

void crec_emu_sigframe_encode(const crec_regs *r, const struct crec_emu_sigframe_ctx *c,
                              uint8_t uc[CREC_EMU_UCONTEXT_SIZE], uint8_t fp[CREC_EMU_FXSAVE_SIZE])
{
    uint8_t ftw = 0;

    memset(uc, 0, CREC_EMU_UCONTEXT_SIZE);
    PUT64(uc + 0, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
    PUT64(uc + 16, c->ss_sp);
    PUT32(uc + 24, c->ss_flags);
    PUT64(uc + 32, c->ss_size);
    for (int i = 0; i < 18; i++)
        PUT64(uc + MC + 8 * i, mc_gpr[i] >= 0 ? r->gpr[mc_gpr[i]]
                                       : mc_gpr[i] == -1 ? r->rip : r->rflags);
    PUT16(uc + MC + 144, 0x33); /* cs: the 64-bit user code segment */
    PUT16(uc + MC + 150, 0x2b); /* ss */
    PUT64(uc + MC + 152, c->err);
    PUT64(uc + MC + 160, c->trapno);
    PUT64(uc + MC + 168, c->mask);
    PUT64(uc + MC + 176, c->cr2);
    PUT64(uc + MC + 184, c->fpstate);
    PUT64(uc + 296, c->mask);

    memset(fp, 0, CREC_EMU_FXSAVE_SIZE);
    PUT16(fp + 0, r->fpcw);
    PUT16(fp + 2, r->fpsw);
    for (int i = 0; i < 8; i++) /* abridged: 1 = not empty (full tag != 3) */
        if (((r->fptag >> (2 * i)) & 3) != 3)
            ftw |= (uint8_t)(1u << i);
    fp[4] = ftw;
    PUT32(fp + 24, r->mxcsr);
    PUT32(fp + 28, 0xffff); /* mxcsr_mask */
    for (int i = 0; i < 8; i++)
        memcpy(fp + 32 + 16 * i, r->st[i], 10);
    for (int i = 0; i < 16; i++)
        memcpy(fp + 160 + 16 * i, r->xmm[i], 16);
}

uint64_t crec_emu_sigframe_fpstate(const uint8_t uc[CREC_EMU_UCONTEXT_SIZE])
{
    return GET64(uc + MC + 184);
}

void crec_emu_sigframe_decode(const uint8_t uc[CREC_EMU_UCONTEXT_SIZE],
                              const uint8_t *fp, crec_regs *r, uint64_t *mask)
{
    for (int i = 0; i < 18; i++) {
        uint64_t v = GET64(uc + MC + 8 * i);
        if (mc_gpr[i] >= 0)
            r->gpr[mc_gpr[i]] = v;
        else if (mc_gpr[i] == -1)
            r->rip = v;
        else
            r->rflags = (r->rflags & ~FIX_EFLAGS) | (v & FIX_EFLAGS);
    }
    *mask = GET64(uc + 296);
    if (!fp) /* fpstate 0: Linux resets the FPU; keep what is there */
        return;
    r->fpcw = GET16(fp + 0);
    r->fpsw = GET16(fp + 2);
    r->fptag = 0;
    for (int i = 0; i < 8; i++)
        if (!(fp[4] >> i & 1))
            r->fptag |= (uint16_t)(3u << (2 * i));
    r->mxcsr = GET32(fp + 24) & 0xffff;
    for (int i = 0; i < 8; i++)
        memcpy(r->st[i], fp + 32 + 16 * i, 10);
    for (int i = 0; i < 16; i++)
        memcpy(r->xmm[i], fp + 160 + 16 * i, 16);
}

int crec_emu_sigreturn_apply(crec_emu_cpu *cpu, uint64_t uc_addr, uint64_t *mask,
                             crec_error *err)
{
    uint8_t uc[CREC_EMU_UCONTEXT_SIZE], fp[CREC_EMU_FXSAVE_SIZE];
    uint64_t fpa;
    crec_regs r;
    int rc;

    if (crec_emu_mem_read(cpu, uc, uc_addr, sizeof uc) != 0)
        return crec_error_set(err, CREC_ERR_ARG, "rt_sigreturn: no signal frame at 0x%llx",
                              (unsigned long long)uc_addr);
    fpa = crec_emu_sigframe_fpstate(uc);
    if (fpa && crec_emu_mem_read(cpu, fp, fpa, sizeof fp) != 0)
        return crec_error_set(err, CREC_ERR_ARG, "rt_sigreturn: no FPU state at 0x%llx",
                              (unsigned long long)fpa);
    if ((rc = crec_emu_regs_get(cpu, &r, err)) != CREC_OK)
        return rc;
    crec_emu_sigframe_decode(uc, fpa ? fp : NULL, &r, mask);
    return crec_emu_regs_set(cpu, &r, err);
}
