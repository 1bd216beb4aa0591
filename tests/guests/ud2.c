/* ud2.c - runs an undefined instruction: the kernel sends SIGILL. */
#include <stdio.h>

int main(void)
{
    printf("before ud2\n");
    fflush(stdout);
    __asm__ volatile("ud2");
    return 0;
}
