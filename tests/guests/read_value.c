/*
 * read_value.c - loads one 8-byte value from a file and prints a function
 * of it.  The divergence test changes that value in the recording's read
 * stream and expects replay to notice.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile uint64_t value;

int main(int argc, char **argv)
{
    char buf[8];
    FILE *f;

    if (argc < 2 || !(f = fopen(argv[1], "rb")) || fread(buf, 1, 8, f) != 8)
        return 2;
    fclose(f);
    memcpy((void *)&value, buf, 8);
    printf("%llx\n", (unsigned long long)(value * 3 + 1));
    return 0;
}
