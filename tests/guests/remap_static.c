/* remap_static.c - loads of the same guest addresses across changes of
 * the memory map: a page unmapped and mapped again at the same address, a
 * region moved by mremap, a file mapped over anonymous memory.  The
 * recorder keeps host addresses of guest pages; each load must see the
 * page as it is now, and the replay must agree. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define AT ((char *)0x200000000ul)

static unsigned long sum_of(const volatile unsigned long *p, long n)
{
    unsigned long s = 0;
    for (int round = 0; round < 3; round++) /* loads the cache can predict */
        for (long i = 0; i < n; i++)
            s = s * 31 + p[i];
    return s;
}

static char *map_at(char *where, long len, int fd)
{
    int flags = MAP_PRIVATE | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0);
    char *p = mmap(where, len, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    long pg = sysconf(_SC_PAGESIZE);
    unsigned long s = 0;
    char *p, *q;
    int fd;

    (void)argc;
    p = map_at(AT, 4 * pg, -1);
    memset(p, 0x5a, 4 * pg);
    s += sum_of((unsigned long *)p, pg / 8);
    munmap(p, 4 * pg); /* the same address again: fresh zero pages */
    p = map_at(AT, 4 * pg, -1);
    s += sum_of((unsigned long *)p, pg / 8);
    memset(p + pg, 0x33, pg);
    q = mremap(p, 4 * pg, 64 * pg, MREMAP_MAYMOVE);
    s += sum_of((unsigned long *)(q + pg), pg / 8);
    fd = open(argv[0], O_RDONLY); /* the program's own bytes over the region */
    if (fd < 0)
        return 1;
    map_at(q, pg, fd);
    s += sum_of((unsigned long *)q, pg / 8);
    close(fd);
    printf("sum=%lu\n", s);
    return 0;
}
