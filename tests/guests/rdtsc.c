/* rdtsc.c - reads the TSC.  Under crec the value is the virtual TSC
 * (1e9 + 4 * instructions), so it is small, increasing and the same on
 * every run; natively it is the host's. */
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

int main(int argc, char **argv)
{
    unsigned aux;
    uint64_t a = __rdtsc(), b = __rdtsc(), c = __rdtscp(&aux);
    int virt = a < (1ull << 40);

    (void)argv;
    if (argc > 1)
        printf("%llu %llu %llu\n", (unsigned long long)a, (unsigned long long)b,
               (unsigned long long)c);
    printf("increasing=%d virtual=%d\n", a < b && b < c, virt);
    return 0;
}
