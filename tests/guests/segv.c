/* segv.c - dies of SIGSEGV writing through a bad pointer. */
#include <stdio.h>

int main(int argc, char **argv)
{
    volatile int *p = (int *)(argc > 100 ? argv : 0) + 0x10;
    printf("about to crash\n");
    fflush(stdout);
    *p = 42;
    return 0;
}
