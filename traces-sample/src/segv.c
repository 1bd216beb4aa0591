/* segv.c - the crashing sample: prints a line, then writes through a bad
 * pointer and dies of SIGSEGV. */
#include <stdio.h>

int main(int argc, char **argv)
{
    volatile int *p = (int *)(argc > 100 ? (void *)argv : NULL) + 0x10;
    printf("about to crash\n");
    fflush(stdout);
    *p = 42;
    return 0;
}
