/* threads_counter: N threads (argv[1], default 4) each add 1 to a
 * mutex-protected counter and to an atomic counter ITERS times (argv[2],
 * default 100000).  Prints both totals, which must be N * ITERS. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long atomic_counter;
static long iters = 100000;

static void *work(void *arg)
{
    (void)arg;
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
        __atomic_fetch_add(&atomic_counter, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    pthread_t th[64];

    if (argc > 2)
        iters = atol(argv[2]);
    if (n < 1 || n > 64)
        return 2;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, work, NULL) != 0)
            return 1;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("mutex counter %ld, atomic counter %ld\n", counter, atomic_counter);
    return counter == n * iters && atomic_counter == n * iters ? 0 : 1;
}
