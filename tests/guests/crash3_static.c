/* crash3_static.c - a NULL dereference three calls deep (main -> outer ->
 * middle -> inner): `crec backtrace` must end at the faulting load, with its
 * source line, and show the three functions on the stack. */
#include <stddef.h>

volatile int *target = NULL;

__attribute__((noinline)) int inner(volatile int *p)
{
    return *p + 1; /* the fault */
}

__attribute__((noinline)) int middle(volatile int *p)
{
    return inner(p) * 3;
}

__attribute__((noinline)) int outer(volatile int *p)
{
    return middle(p) + 5;
}

int main(void)
{
    return outer(target);
}
