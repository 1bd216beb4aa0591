/* threads_vex: three threads whose loop's block holds an instruction crec
 * executes itself (VEX vaddps) between plain ones.  The run of such
 * instructions leaves the block, so the block's visit ends there and the
 * recorder's scheduler switches at the next block start, which a replay
 * counting the block whole placed inside it.  Prints each thread's sum. */
#include <pthread.h>
#include <stdio.h>
static void *run(void *arg)
{
    long k = (long)arg, n = 0;
    float f[4] = {0};
    for (int i = 0; i < 100; i++) {
        long end = n + 600;
        float one[4] = {1, 1, 1, 1};
        __asm__ volatile("vmovups (%2), %%xmm1\n\t"
                         "vmovups (%3), %%xmm0\n\t"
                         "1: add $1, %0\n\t"
                         "vaddps %%xmm1, %%xmm0, %%xmm0\n\t"
                         "add $0, %%rcx\n\t"
                         "cmp %0, %1\n\t"
                         "jne 1b\n\t"
                         "vmovups %%xmm0, (%3)\n\t"
                         : "+r"(n) : "r"(end), "r"(one), "r"(f) : "rcx", "xmm0", "xmm1", "memory");
    }
    return (void *)(long)(f[0] + k);
}
int main(void)
{
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], 0, run, (void *)(i * 1000000));
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("thread %d: %ld\n", i, (long)r);
    }
    return 0;
}
