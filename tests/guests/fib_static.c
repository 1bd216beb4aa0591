/* fib_static.c - recursive fib(20): `crec profile` must count exactly
 * 21891 calls of fib (tests/e2e/t_analysis.sh). */
#include <stdio.h>

__attribute__((noinline)) int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
    printf("fib(20) = %d\n", fib(20));
    return 0;
}
