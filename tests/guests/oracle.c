/*
 * oracle.c - a guest for the query tests: stores a known sequence of values
 * into a global array and prints each store as "STORE index address value",
 * so `crec when` and `crec query` can be checked against it.
 */
#include <stdint.h>
#include <stdio.h>

volatile uint64_t oracle_array[8];

int main(void)
{
    uint64_t x = 0x1234567;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 8; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            oracle_array[i] = x >> 8;
            printf("STORE %d %p %llu\n", i, (void *)&oracle_array[i],
                   (unsigned long long)(x >> 8));
        }
        /* some work between rounds, so stores fall in different segments */
        volatile uint64_t sink = 0;
        for (int k = 0; k < 20000; k++)
            sink += (uint64_t)k * round;
    }
    return 0;
}
