/* abort.c - calls abort(): the process dies of SIGABRT (status 134). */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    printf("aborting\n");
    fflush(stdout);
    abort();
}
