/*
 * slow_walk.c - a table of 256 KiB, written once, then read a line at a time
 * with a long computation on each line: the shape that gets few key frames
 * (a flush would log again every line read since the last one) but many
 * restart points of the index (a span of 125000 instructions reads a few
 * dozen lines), for `crec replay --jobs` (tests/e2e/t_jobs.sh).
 *
 *   slow_walk N      (default 600: N lines visited, about 16000 instructions each)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TABLE (256u << 10)

static uint64_t table[TABLE / 8];

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 600;
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < TABLE / 8; i++)
        table[i] = i * 0x9e3779b97f4a7c15ull;
    for (long k = 0; k < n; k++) {
        /* lines far apart: the visits go through the whole table; read a
         * word at a time (the index's seed costs it a granule each) */
        const uint64_t *p = table + (size_t)(k * 2654435761u) % (TABLE / 64) * 8;
        for (int r = 0; r < 512; r++)
            for (int w = 0; w < 8; w++)
                h = (h ^ p[w]) * 1099511628211ull;
    }
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}
