/*
 * bigexec.c - executable memory of any size: maps argv[1] MiB (default
 * 2048) read-write-execute, writes a small function at its start and one
 * at its end, and calls both; then makes a second mapping of the same size
 * executable with mprotect and calls code there.  Prints what they returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const unsigned char ret42[] = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3}; /* mov eax, 42; ret */

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 2048, len = mib << 20;
    unsigned char *a = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    unsigned char *b = mmap(NULL, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    int r1, r2, r3;

    if (a == MAP_FAILED || b == MAP_FAILED)
        return 2;
    memcpy(a, ret42, sizeof ret42);
    memcpy(a + len - 4096, ret42, sizeof ret42);
    memcpy(b + len / 2, ret42, sizeof ret42);
    if (mprotect(b, len, PROT_READ | PROT_EXEC) != 0)
        return 3;
    r1 = ((int (*)(void))a)();
    r2 = ((int (*)(void))(a + len - 4096))();
    r3 = ((int (*)(void))(b + len / 2))();
    printf("%d %d %d\n", r1, r2, r3);
    return 0;
}
