/*
 * gdb_loop.c - a long run for the gdb server's figures (bench/gdb.sh
 * --reverse): a loop of about 7 instructions an iteration, N iterations
 * (argv[1], default 200000000: about 1.4e9 instructions).  tick() runs
 * every 2^20 iterations (a breakpoint a few million instructions back);
 * middle() runs once, half way (a breakpoint far back); `rare` is written
 * at the start and half way (a watchpoint whose last write is far back).
 */
#include <stdio.h>
#include <stdlib.h>

volatile long rare;
volatile long acc;
long ticks;

__attribute__((noinline)) void tick(long i)
{
    ticks += i & 1;
}

__attribute__((noinline)) void middle(long i)
{
    rare = i;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000000;

    rare = 1;
    for (long i = 0; i < n; i++) {
        acc += i;
        if ((i & 0xfffff) == 0)
            tick(i);
        if (i == n / 2)
            middle(i);
    }
    printf("%ld %ld %ld\n", acc, ticks, rare);
    return 0;
}
