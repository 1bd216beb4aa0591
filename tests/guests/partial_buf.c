/*
 * partial_buf.c - read and write with buffers that run off the end of a
 * mapping.  Linux transfers the bytes that fit before the unmapped page (a
 * short count) and fails with EFAULT only when none fit, except that a
 * pipe takes a write whole or not at all.  Prints what each call returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s\n", what, r, r < 0 && errno == EFAULT ? " (EFAULT)" : "");
}

int main(void)
{
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *end = p + 4096, *tail = end - 96, name[] = "/tmp/partial_buf.XXXXXX", data[200];
    int zero = open("/dev/zero", O_RDONLY), file = mkstemp(name), fds[2];
    struct iovec iov[2];

    if (p == MAP_FAILED || zero < 0 || file < 0 || pipe(fds) != 0)
        return 2;
    unlink(name);
    munmap(end, 4096);
    memset(data, 'd', sizeof data);
    write(file, data, sizeof data);
    lseek(file, 0, SEEK_SET);
    show("read a file, 100 into the last 96", read(file, tail, 100));
    show("write a file, 100 from the last 96", write(file, tail, 100));
    show("the file's offset", lseek(file, 0, SEEK_CUR));
    show("read /dev/zero, 100 into the last 96", read(zero, tail, 100));
    write(fds[1], "hello!", 6);
    show("read a pipe of 6, 100 into the last 96", read(fds[0], tail, 100));
    show("write a pipe, 100 from the last 96", write(fds[1], tail, 100));
    iov[0] = (struct iovec){tail - 10, 10};
    iov[1] = (struct iovec){tail, 200};
    show("readv /dev/zero, 10 + 200 into the last 106", readv(zero, iov, 2));
    show("read into unmapped memory", read(zero, end, 10));
    show("write from unmapped memory", write(file, end, 10));
    printf("last bytes: %d %d\n", end[-1], tail[0]);
    return 0;
}
