/* threads_join: create and join N threads (argv[1], default 100) one
 * after the other; each returns its number, which main adds up. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *work(void *arg)
{
    return (void *)((uintptr_t)arg * 3);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    uintptr_t sum = 0;

    for (int i = 0; i < n; i++) {
        pthread_t t;
        void *r;
        if (pthread_create(&t, NULL, work, (void *)(uintptr_t)i) != 0)
            return 1;
        pthread_join(t, &r);
        sum += (uintptr_t)r;
    }
    printf("%d threads joined, sum %lu\n", n, (unsigned long)sum);
    return 0;
}
