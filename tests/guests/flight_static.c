/*
 * flight_static.c - a guest for the flight recorder's tests (t_flight.sh):
 *
 *   ring N EVERY     N turns of a loop that reads 4 KiB of /dev/urandom every
 *                    EVERY turns (data no cache predicts: the recording
 *                    grows), then calls late() and crashes (SIGSEGV)
 *   phases N         N rounds of work() then rest(): --start-at work
 *                    --stop-at rest records the work only
 *   slow N           N lines, 0.3 s apart, each after some computing
 *   thread N         N turns of the ring loop, then a second thread
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char buf[4096];
volatile unsigned long counter;
volatile unsigned long acc[64];

__attribute__((noinline)) static void crash(unsigned long *p)
{
    *p = counter;
}

__attribute__((noinline)) unsigned long late(unsigned long x)
{
    return x * 3 + counter;
}

static unsigned long loop(unsigned long n, unsigned long every)
{
    int fd = open("/dev/urandom", O_RDONLY);
    unsigned long sum = 0;

    for (unsigned long i = 0; i < n; i++) {
        counter++;
        if (i % every == 0) {
            if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
                exit(2);
            for (int k = 0; k < 4096; k += 8) {
                unsigned long v;
                memcpy(&v, buf + k, 8);
                sum += v;
            }
        }
    }
    close(fd);
    return sum;
}

__attribute__((noinline)) void work(int round)
{
    for (int i = 0; i < 200000; i++)
        acc[(i + round) & 63] += (unsigned long)(i ^ round);
}

/* Busy with data no cache predicts (/dev/urandom): a recording of it is big. */
__attribute__((noinline)) void rest(int round)
{
    unsigned long sum = loop(200000, 500);
    for (int i = 0; i < 500000; i++)
        acc[i & 63] ^= (unsigned long)i;
    printf("round %d acc %lu (%lu)\n", round, acc[round & 63], sum & 1);
}

static void *second(void *arg)
{
    (void)arg;
    counter += 7;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ring";
    unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1000000;

    if (strcmp(mode, "ring") == 0) {
        unsigned long every = argc > 3 ? strtoul(argv[3], NULL, 0) : 1000;
        unsigned long sum = loop(n, every ? every : 1);
        printf("late %lu\n", late(sum));
        fflush(stdout);
        crash((unsigned long *)(argc > 100 ? (void *)argv : NULL) + 0x10);
        return 0;
    }
    if (strcmp(mode, "phases") == 0) {
        for (unsigned long r = 0; r < n; r++) {
            work((int)r);
            rest((int)r);
        }
        return (int)(acc[0] & 1);
    }
    if (strcmp(mode, "slow") == 0) {
        volatile unsigned long x = 0;
        for (unsigned long i = 0; i < n; i++) {
            struct timespec ts = {0, 300000000};
            for (unsigned long k = 0; k < 600000; k++)
                x += k;
            printf("tick %lu %lu\n", i, x);
            fflush(stdout);
            nanosleep(&ts, NULL);
        }
        return 0;
    }
    if (strcmp(mode, "thread") == 0) {
        pthread_t t;
        printf("sum %lu\n", loop(n, 1000));
        if (pthread_create(&t, NULL, second, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 3;
        printf("counter %lu\n", counter);
        return 0;
    }
    fprintf(stderr, "flight_static: unknown mode %s\n", mode);
    return 2;
}
