/* parts.c - the sample of a recording in parts (format version 3): three
 * rounds of work() then rest(), recorded with --start-at work --stop-at
 * rest, so that the file holds the work and the gaps are marked. */
#include <stdio.h>

volatile unsigned long acc[16];

__attribute__((noinline)) void work(int round)
{
    for (int i = 0; i < 2000; i++)
        acc[(i + round) & 15] += (unsigned long)(i ^ round);
}

__attribute__((noinline)) void rest(int round)
{
    for (int i = 0; i < 20000; i++)
        acc[i & 15] ^= (unsigned long)i;
    printf("round %d acc %lu\n", round, acc[round & 15]);
}

int main(void)
{
    for (int r = 0; r < 3; r++) {
        work(r);
        rest(r);
    }
    return 0;
}
