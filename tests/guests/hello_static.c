/* hello_static.c - the smallest static guest: prints its arguments. */
#include <stdio.h>

int main(int argc, char **argv)
{
    printf("hello from a static guest");
    for (int i = 1; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    return argc > 1 ? 3 : 0;
}
