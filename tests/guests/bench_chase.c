/*
 * bench_chase.c - a pointer-chasing kernel for the benchmarks (make bench):
 * N nodes of 16 bytes linked in one random cycle (Sattolo's shuffle with a
 * fixed xorshift generator), far larger than crec's prediction cache, then
 * followed for STEPS steps, adding up the values on the way.  Every load
 * of a next pointer goes to an unpredictable place.  Prints the index of
 * the last node and the sum, the same on every run.
 *
 *   bench_chase N STEPS   (default 500000 nodes, 8 MiB, and 4N steps)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
    struct node *next;
    uint64_t value;
};

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 500000;
    size_t steps = argc > 2 ? strtoul(argv[2], NULL, 10) : 4 * n;
    struct node *a = malloc(n * sizeof *a);
    size_t *perm = malloc(n * sizeof *perm);
    uint64_t x = 88172645463325252ull, sum = 0;

    if (!a || !perm || n < 2)
        return 1;
    /* Sattolo: a uniformly random permutation with a single cycle. */
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = x % i, t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < n; i++) {
        a[i].next = &a[perm[i]];
        a[i].value = i * 2654435761u;
    }
    free(perm);
    struct node *p = a;
    for (size_t i = 0; i < steps; i++) {
        sum += p->value;
        p = p->next;
    }
    printf("%zu %llu\n", (size_t)(p - a), (unsigned long long)sum);
    free(a);
    return 0;
}
