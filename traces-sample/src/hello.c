/* hello.c - the static sample: prints a greeting and its arguments. */
#include <stdio.h>

int main(int argc, char **argv)
{
    printf("hello from crec's static sample");
    for (int i = 1; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    return 0;
}
