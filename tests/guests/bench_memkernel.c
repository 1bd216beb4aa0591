/*
 * bench_memkernel.c - a tight, memory-heavy kernel for the benchmarks:
 * pseudo-random reads and writes over an array larger than any cache.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    uint64_t *a = calloc(n, sizeof *a);
    uint64_t x = 88172645463325252ull, sum = 0;

    if (!a)
        return 1;
    for (size_t round = 0; round < 8; round++)
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            a[x % n] += i;
            sum += a[(x >> 20) % n];
        }
    printf("%llu\n", (unsigned long long)sum);
    free(a);
    return 0;
}
