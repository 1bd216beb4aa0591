/* threads.c - the sample of several threads (format version 2): two
 * threads add to a counter under a mutex and to `unlocked` with no lock
 * (the race `crec races` names), and the first thread joins them. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
volatile long unlocked;

static void *work(void *arg)
{
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&lock);
        counter += (long)arg;
        pthread_mutex_unlock(&lock);
        unlocked = unlocked + 1;
    }
    return NULL;
}

int main(void)
{
    pthread_t a, b;

    pthread_create(&a, NULL, work, (void *)1);
    pthread_create(&b, NULL, work, (void *)2);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter %ld, unlocked %ld\n", counter, unlocked);
    return 0;
}
