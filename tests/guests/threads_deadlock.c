/* threads_deadlock: two threads take two mutexes in opposite orders, with
 * a barrier between the first and the second lock: every thread ends up
 * blocked, for good. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;

static void *one(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&bar);
    pthread_mutex_lock(&b);
    return NULL;
}

int main(void)
{
    pthread_t t;

    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&t, NULL, one, NULL);
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&bar);
    printf("both hold one lock\n");
    fflush(stdout);
    pthread_mutex_lock(&a);
    pthread_join(t, NULL);
    return 0;
}
