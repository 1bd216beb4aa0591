/*
 * bench_hash.c - a hash-table-heavy kernel for the benchmarks (make bench):
 * an open-addressing table (linear probing, 16-byte slots) far larger than
 * crec's prediction cache, filled by N inserts of pseudo-random keys, then
 * 8N lookups of which about half find their key.  Keys come from a fixed
 * xorshift generator, so the checksum it prints is the same on every run.
 *
 *   bench_hash N      (default 500000: a table of 2^20 slots, 16 MiB)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct slot {
    uint64_t key; /* 0: empty (keys are never 0) */
    uint64_t value;
};

static uint64_t next_key(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x | 1;
}

/* A multiplicative mix, so that keys that differ in their high bits only
 * still spread over the table. */
static size_t slot_of(uint64_t key, size_t mask)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 500000, cap = 1024;
    while (cap < 2 * n)
        cap *= 2;
    struct slot *t = calloc(cap, sizeof *t);
    uint64_t x = 88172645463325252ull, sum = 0, found = 0;

    if (!t)
        return 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = next_key(&x);
        size_t s = slot_of(k, cap - 1);
        while (t[s].key && t[s].key != k)
            s = (s + 1) & (cap - 1);
        t[s].key = k;
        t[s].value += i;
    }
    /* Lookups: the same generator again finds the inserted keys in order,
     * a second one keys that are (almost all) absent; alternate them. */
    for (int round = 0; round < 4; round++) {
        uint64_t hit = 88172645463325252ull, miss = 0x2545f4914f6cdd1dull + round;
        for (size_t i = 0; i < n; i++)
            for (int j = 0; j < 2; j++) {
                uint64_t k = next_key(j ? &miss : &hit);
                size_t s = slot_of(k, cap - 1);
                while (t[s].key && t[s].key != k)
                    s = (s + 1) & (cap - 1);
                if (t[s].key) {
                    found++;
                    sum += t[s].value ^ k;
                    t[s].value++;
                }
            }
    }
    printf("%llu %llu\n", (unsigned long long)found, (unsigned long long)sum);
    free(t);
    return 0;
}
