/*
 * deep_stack.c - recursion that needs about 40 MiB of stack (argv[1]
 * MiB): with `ulimit -s 65536` it completes, with the default 8 MiB it
 * dies of SIGSEGV, natively and under crec (where the message says it
 * was a stack overflow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long depth(unsigned long n)
{
    volatile char frame[1000];

    memset((char *)frame, (int)n, sizeof frame);
    if (n == 0)
        return frame[0];
    return depth(n - 1) + frame[n % sizeof frame];
}

int main(int argc, char **argv)
{
    unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 40;

    printf("recursing through %lu MiB\n", mib);
    fflush(stdout);
    printf("sum %lu\n", depth(mib * 1024 * 1024 / 1056));
    return 0;
}
