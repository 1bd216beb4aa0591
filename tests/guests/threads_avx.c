/* threads_avx: three threads each hold a value in the upper half of ymm8
 * (state crec keeps itself, not Unicorn: docs/EMU.md) across a
 * sched_yield that lets the others run and set theirs; each must find its
 * own again.  Prints "bad 0" when every thread always did. */
#include <pthread.h>
#include <stdio.h>
static void *run(void *arg)
{
    long k = (long)arg, bad = 0;
    for (int i = 0; i < 3000; i++) {
        long in[4] = {k, k, k, k + i}, out[4];
        __asm__ volatile("vmovdqu (%1), %%ymm8\n\t"
                         "mov $24, %%eax\n\tsyscall\n\t" /* sched_yield */
                         "mov $0, %%ecx\n1: inc %%ecx\n\tcmp $50, %%ecx\n\tjne 1b\n\t"
                         "vmovdqu %%ymm8, (%0)\n\t"
                         : : "r"(out), "r"(in) : "rax", "rcx", "r11", "memory", "xmm8");
        bad += out[3] != k + i;
    }
    return (void *)bad;
}
int main(void)
{
    pthread_t t[3];
    long bad = 0;
    for (long i = 0; i < 3; i++) pthread_create(&t[i], 0, run, (void *)(i * 100000 + 7));
    for (int i = 0; i < 3; i++) { void *r; pthread_join(t[i], &r); bad += (long)r; }
    printf("bad %ld\n", bad);
    return 0;
}
