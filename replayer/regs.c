/*
 * regs.c - compare two register states, naming the first difference.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "replayer/replayer_int.h"

static const char *const gpr_names[CREC_NGPR] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};

static int diff_u64(const char *name, uint64_t want, uint64_t got, char *what, size_t size)
{
    if (want == got)
        return 0;
    snprintf(what, size, "%s is 0x%" PRIx64 ", recorded 0x%" PRIx64, name, got, want);
    return 1;
}

static int diff_bytes(const char *name, const uint8_t *want, const uint8_t *got, size_t n,
                      char *what, size_t size)
{
    if (memcmp(want, got, n) == 0)
        return 0;
    snprintf(what, size, "%s differs from the recorded value", name);
    return 1;
}

int crec_regs_diff(const crec_regs *want, const crec_regs *got, char *what, size_t size)
{
    char name[16];

    for (int i = 0; i < CREC_NGPR; i++)
        if (diff_u64(gpr_names[i], want->gpr[i], got->gpr[i], what, size))
            return 1;
    if (diff_u64("rip", want->rip, got->rip, what, size) ||
        diff_u64("rflags", want->rflags, got->rflags, what, size) ||
        diff_u64("fs_base", want->fs_base, got->fs_base, what, size) ||
        diff_u64("gs_base", want->gs_base, got->gs_base, what, size) ||
        diff_u64("mxcsr", want->mxcsr, got->mxcsr, what, size) ||
        diff_u64("fpcw", want->fpcw, got->fpcw, what, size) ||
        diff_u64("fpsw", want->fpsw, got->fpsw, what, size) ||
        diff_u64("fptag", want->fptag, got->fptag, what, size))
        return 1;
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "xmm%d", i);
        if (diff_bytes(name, want->xmm[i], got->xmm[i], 16, what, size))
            return 1;
    }
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "st%d", i);
        if (diff_bytes(name, want->st[i], got->st[i], 10, what, size))
            return 1;
    }
    return 0;
}
