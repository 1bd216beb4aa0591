/* readfile.c - the dynamic sample: reads a file with read(2) and mmap(2),
 * prints its size, a checksum of each copy and the first line. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror("open");
        return 1;
    }
    size_t n = (size_t)st.st_size, got = 0;
    unsigned char *buf = malloc(n + 1);
    ssize_t r;
    while ((r = read(fd, buf + got, n - got)) > 0)
        got += (size_t)r;
    buf[got] = 0;
    unsigned char *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    char *nl = strchr((char *)buf, '\n');
    if (nl)
        *nl = 0;
    printf("%s: %zu bytes, read sum %lu, mmap sum %lu\nfirst line: %s\n", argv[1], got,
           sum(buf, got), sum(m, n), (char *)buf);
    munmap(m, n);
    close(fd);
    free(buf);
    return 0;
}
