/* memops_static.c - exercises the memory syscalls: brk growth and shrink,
 * big mmaps, munmap of a middle piece, mprotect of a sub-range, mremap. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *b0 = sbrk(0), *p, *q;
    unsigned long s = 0;

    sbrk(10 * pg);
    memset(b0, 1, 10 * pg);
    sbrk(-5 * pg);
    p = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 2, 16 * pg);
    munmap(p + 4 * pg, 4 * pg);                      /* a hole in the middle */
    mprotect(p + 8 * pg, 2 * pg, PROT_READ);          /* a read-only sub-range */
    for (long i = 0; i < 4 * pg; i++)
        s += (unsigned char)p[i] + (unsigned char)p[8 * pg + i];
    q = mremap(p + 12 * pg, 4 * pg, 64 * pg, MREMAP_MAYMOVE);
    for (long i = 0; i < 4 * pg; i++)
        s += (unsigned char)q[i];
    memset(q + 4 * pg, 3, 60 * pg);
    for (int i = 0; i < 100; i++) {
        char *r = malloc(1000 + i * 500);
        memset(r, i, 1000 + i * 500);
        s += (unsigned char)r[999];
        free(r);
    }
    printf("sum=%lu\n", s);
    return 0;
}
