/*
 * primes.c - the demo program: a sieve of Eratosthenes whose result is
 * printed, so a native run and an emulated run can be compared by eye.
 * Built static so that it runs the same on any machine.  The running count
 * is a global, so that `make demo` can ask the recording what it was at
 * any point of the run (crec query primes_found@50%).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* volatile: every new prime is stored to memory, where a query sees it
 * (otherwise the compiler keeps the count in a register until the end). */
volatile unsigned long primes_found;

static unsigned long count_primes(unsigned long limit, char *composite)
{
    memset(composite, 0, limit + 1);
    for (unsigned long i = 2; i <= limit; i++) {
        if (composite[i])
            continue;
        primes_found++;
        for (unsigned long j = i * i; j <= limit; j += i)
            composite[j] = 1;
    }
    return primes_found;
}

int main(int argc, char **argv)
{
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    char *composite = malloc(limit + 1);

    if (!composite) {
        perror("malloc");
        return 1;
    }
    printf("%lu primes up to %lu\n", count_primes(limit, composite), limit);
    free(composite);
    return 0;
}
