/* readfile.c - reads a file three ways (read, pread, mmap) and prints its
 * size and a checksum from each; they must agree. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long sum(const unsigned char *p, size_t n)
{
    unsigned long s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + p[i];
    return s;
}

int main(int argc, char **argv)
{
    struct stat st;
    int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror("open");
        return 1;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n + 1), *buf2 = malloc(n + 1);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, buf + got, n - got)) > 0)
        got += (size_t)r;
    if (pread(fd, buf2, n, 0) != (ssize_t)n)
        return 2;
    unsigned char *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return 3;
    printf("size=%zu read=%lu pread=%lu mmap=%lu\n", got, sum(buf, got), sum(buf2, n), sum(m, n));
    munmap(m, n);
    close(fd);
    return 0;
}
