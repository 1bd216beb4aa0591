/*
 * reserve.c - what Go, JVMs, V8 and AddressSanitizer do: reserve a huge
 * PROT_NONE range (1 TiB; argv[1] GiB), commit pieces of it with mprotect
 * and MAP_FIXED mmap, use them, give some back, and unmap it all.  Prints a
 * checksum of what it wrote and read.  Under crec this must take no more
 * time or memory than the pieces need (docs/EMU.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    uint64_t gib = argc > 1 ? strtoull(argv[1], NULL, 0) : 1024, sum = 0;
    size_t size = (size_t)gib << 30, piece = 1 << 20;
    uint8_t *r = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (r == MAP_FAILED) {
        perror("reserve");
        return 1;
    }
    for (int i = 0; i < 16; i++) {
        uint8_t *p = r + (size / 16) * (size_t)i;
        if (i % 2 == 0) {
            if (mprotect(p, piece, PROT_READ | PROT_WRITE) != 0)
                return perror("mprotect"), 1;
        } else if (mmap(p, piece, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                        -1, 0) != p) {
            return perror("mmap fixed"), 1;
        }
        for (size_t k = 0; k < piece; k += 4096)
            p[k] = (uint8_t)(i + k / 4096);
        for (size_t k = 0; k < piece; k += 4096)
            sum = sum * 31 + p[k] + p[k + 1];
        if (i % 4 == 3) { /* give it back, as a garbage collector would */
            if (madvise(p, piece, MADV_DONTNEED) != 0 || mprotect(p, piece, PROT_NONE) != 0)
                return perror("release"), 1;
        }
    }
    if (munmap(r, size) != 0)
        return perror("munmap"), 1;
    printf("reserved %llu GiB, committed 16 pieces, sum %016llx\n", (unsigned long long)gib,
           (unsigned long long)sum);
    return 0;
}
