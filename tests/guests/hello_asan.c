/* hello_asan.c - hello world built with AddressSanitizer (build.sh): it
 * reserves a 16 TiB shadow and more at start-up.  Run with
 * ASAN_OPTIONS=detect_leaks=0: LeakSanitizer stops the world with ptrace,
 * which crec does not emulate (docs/EMU.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    char *p = malloc(64);

    snprintf(p, 64, "hello from %s", argc > 1 ? argv[1] : "asan");
    puts(p);
    free(p);
    return 0;
}
