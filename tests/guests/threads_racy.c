/* threads_racy: two threads add to one global with no lock, by a load and
 * a store of their own (volatile, so the compiler keeps them apart): a
 * switch between the two loses updates.  Also stores the thread's number
 * to `last_writer`, a race that `crec races` must name. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile long racy_counter;
volatile long last_writer;
static long iters = 200000;

static void *work(void *arg)
{
    for (long i = 0; i < iters; i++) {
        long v = racy_counter;
        racy_counter = v + 1;
        last_writer = (long)arg;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t a, b;

    if (argc > 1)
        iters = atol(argv[1]);
    pthread_create(&a, NULL, work, (void *)1);
    pthread_create(&b, NULL, work, (void *)2);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("racy counter %ld of %ld, last writer %ld\n", racy_counter, 2 * iters, last_writer);
    return 0;
}
