/* hello_dyn.c - a dynamic (PIE) guest: arguments, environment, and calls
 * with double arguments through lazy binding, whose trampoline saves and
 * restores the xmm registers with FXSAVE/FXRSTOR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    volatile double one = argc > 100 ? 2.0 : 1.0;
    const char *home = getenv("HOME");

    printf("hello from a dynamic guest, argc=%d HOME=%s\n", argc, home ? home : "(none)");
    double ip, fr = modf(one * 2.75, &ip);
    int ex;
    double m = frexp(ldexp(one, 5) * 1.5, &ex);
    printf("%.6f %.6f %.6f %d %.3f\n", fr, ip, m, ex, scalbn(one * 0.5, 3));
    printf("%.10Lf\n", (long double)one / 3);
    return 7;
}
