/* ring.c - the ring sample (format version 3): a loop that reads bytes no
 * cache predicts (/dev/urandom) far longer than a 64 KiB ring holds, then
 * a crash.  Recorded with --ring 64K, the file keeps only the end. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static unsigned char buf[1024];
volatile unsigned long counter;

__attribute__((noinline)) static void crash(unsigned long *p)
{
    *p = counter;
}

int main(int argc, char **argv)
{
    int fd = open("/dev/urandom", O_RDONLY);
    unsigned long sum = 0;

    for (int i = 0; i < 400; i++) {
        if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 2;
        for (int k = 0; k < 1024; k++)
            sum += buf[k];
        counter++;
    }
    printf("sum %lu\n", sum);
    fflush(stdout);
    crash((unsigned long *)(argc > 100 ? (void *)argv : NULL) + 0x10);
    return 0;
}
