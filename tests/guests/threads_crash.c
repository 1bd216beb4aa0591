/* threads_crash.c - a worker thread dereferences NULL three calls deep
 * (work -> outer -> middle -> inner) while the main thread waits in
 * pthread_join: `crec backtrace` follows the thread that faulted, and
 * `crec info` names it. */
#include <pthread.h>
#include <stdio.h>

volatile int *target = NULL;
volatile long spins;

__attribute__((noinline)) int inner(volatile int *p)
{
    return *p + 1; /* the fault */
}

__attribute__((noinline)) int middle(volatile int *p)
{
    return inner(p) * 3;
}

__attribute__((noinline)) int outer(volatile int *p)
{
    return middle(p) + 5;
}

static void *work(void *arg)
{
    for (long i = 0; i < 200000; i++) /* past a few time slices */
        spins++;
    return (void *)(long)outer(arg);
}

int main(void)
{
    pthread_t t;
    void *r;

    printf("main starts the worker\n");
    fflush(stdout);
    pthread_create(&t, NULL, work, (void *)target);
    pthread_join(t, &r);
    return (int)(long)r;
}
