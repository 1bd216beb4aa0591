/*
 * primes.c - the demo program: a sieve of Eratosthenes whose result is
 * printed, so a native run and an emulated run can be compared by eye.
 * Built static so that it runs the same on any machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long count_primes(unsigned long limit, char *composite)
{
    unsigned long count = 0;

    memset(composite, 0, limit + 1);
    for (unsigned long i = 2; i <= limit; i++) {
        if (composite[i])
            continue;
        count++;
        for (unsigned long j = i * i; j <= limit; j += i)
            composite[j] = 1;
    }
    return count;
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
