/* threads_condvar: a producer/consumer queue on a mutex and two
 * condition variables; P producers put ITEMS numbers each, C consumers
 * take them all and add them up. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define QSIZE 16
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long queue[QSIZE];
static int head, count, producers_left;
static long items = 20000;
static long total, taken;

static void *producer(void *arg)
{
    long base = (long)arg * 1000000;
    for (long i = 0; i < items; i++) {
        pthread_mutex_lock(&mu);
        while (count == QSIZE)
            pthread_cond_wait(&not_full, &mu);
        queue[(head + count++) % QSIZE] = base + i;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    producers_left--;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        long v;
        pthread_mutex_lock(&mu);
        while (count == 0 && producers_left > 0)
            pthread_cond_wait(&not_empty, &mu);
        if (count == 0) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        v = queue[head];
        head = (head + 1) % QSIZE;
        count--;
        total += v;
        taken++;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&mu);
    }
}

int main(int argc, char **argv)
{
    int np = 2, nc = 2;
    pthread_t p[8], c[8];
    long want = 0;

    if (argc > 1)
        items = atol(argv[1]);
    producers_left = np;
    for (long i = 0; i < nc; i++)
        pthread_create(&c[i], NULL, consumer, NULL);
    for (long i = 0; i < np; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < np; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < nc; i++)
        pthread_join(c[i], NULL);
    for (long i = 0; i < np; i++)
        want += i * 1000000 * items + items * (items - 1) / 2;
    printf("consumed %ld items, total %ld (%s)\n", taken, total, total == want ? "right" : "WRONG");
    return total == want ? 0 : 1;
}
