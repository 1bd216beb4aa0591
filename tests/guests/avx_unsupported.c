/*
 * avx_unsupported.c - an AVX-512 instruction crec does not execute
 * (vgetmantps): under crec the program gets SIGILL with a message that
 * names it (docs/EMU.md lists what is executed).
 */
#include <stdio.h>

int main(void)
{
    printf("before\n");
    fflush(stdout);
    __asm__ volatile("vgetmantps $0, %%zmm1, %%zmm0" ::: "xmm0", "xmm1");
    printf("after\n");
    return 0;
}
