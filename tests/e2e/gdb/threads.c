/*
 * threads.c - the pthread program tests/e2e/t_gdb.sh records and debugs
 * with gdb (built -O0 -g): three workers square numbers and add their sums
 * to a global under a mutex, printing at each add what gdb must show
 * there, while the main thread waits for them.  Line numbers matter:
 * t_gdb.sh finds lines by the LINE: comments.
 */
#include <pthread.h>
#include <stdio.h>

long total; /* every worker adds to it: a watchpoint's writes come from each */
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long square(long x)
{
    return x * x;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;

    for (long i = 0; i < 3000; i++) {
        sum += square(i % 7 + id);
        if (i % 1000 == 999) {
            pthread_mutex_lock(&lock);
            total += sum; /* LINE:add */
            printf("add id=%ld sum=%ld total=%ld\n", id, sum, total); /* LINE:print */
            pthread_mutex_unlock(&lock); /* LINE:unlock */
            sum = 0;
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t t[3];

    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL); /* LINE:join */
    printf("total=%ld\n", total);
    return 0;
}
