/* printcalls_static.c - for `crec printf`, `crec calls` and `crec find`:
 * report() prints its arguments with printf (crec printf at report must
 * print the same), add3() prints its arguments and result (crec calls add3
 * must find the same), and `counter` becomes 5 at one known store. */
#include <stdio.h>

volatile unsigned counter;

__attribute__((noinline)) void report(int i, const char *name)
{
    printf("i=%d name=%s\n", i, name);
}

__attribute__((noinline)) long add3(long a, long b, long c)
{
    return a + b * 2 - c;
}

int main(void)
{
    static const char *const names[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};

    for (int i = 0; i < 6; i++) {
        report(i * 7 - 3, names[i]);
        long r = add3(i, i * 100, -i * 3);
        printf("add3(%d, %d, %d) = %ld\n", i, i * 100, -i * 3, r);
        counter++;
    }
    return 0;
}
