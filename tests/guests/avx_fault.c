/*
 * avx_fault.c - faults inside instructions crec executes itself: a load
 * from unmapped memory, a misaligned vmovdqa (#GP), a store to read-only
 * memory.  Each is SIGSEGV (status 139) natively and under crec, after the
 * program printed "before".
 */
#include <stdio.h>
#include <string.h>

static const char ro[64] __attribute__((aligned(64))) = "read-only";
static char buf[128] __attribute__((aligned(64)));

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "unmapped";

    printf("before\n");
    fflush(stdout);
    if (strcmp(how, "unmapped") == 0)
        __asm__ volatile("vmovdqu 16, %%ymm0" ::: "xmm0");
    else if (strcmp(how, "misaligned") == 0)
        __asm__ volatile("vmovdqa (%0), %%ymm0" ::"r"(buf + 1) : "xmm0");
    else
        __asm__ volatile("vmovdqu %%ymm0, (%0)" ::"r"(ro) : "memory");
    printf("after\n");
    return 0;
}
