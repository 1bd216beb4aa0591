/* pthread_kill with a handler: a signal to another thread is delivered at the
 * end of that thread's next syscall, one to itself at once; recorded and
 * replayed whole and thread by thread (per-thread SYSCALL records).  Each
 * signal waits for the one before it to be handled: two pending at once are
 * one (standard signals do not queue), natively as under crec, and how many
 * merged depended on the host's load. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile int got[2];
static pthread_t main_t;
static void h(int s) { (void)s; got[pthread_equal(pthread_self(), main_t) ? 0 : 1]++; }
static void *worker(void *a) {
    (void)a;
    for (int i = 0; i < 50000 && got[1] < 3; i++) usleep(100);
    return NULL;
}
int main(void) {
    pthread_t t; main_t = pthread_self();
    signal(SIGUSR1, h);
    pthread_create(&t, NULL, worker, NULL);
    for (int i = 0; i < 3; i++) {
        pthread_kill(t, SIGUSR1);
        for (int w = 0; w < 50000 && got[1] <= i; w++) usleep(100);
    }
    pthread_kill(main_t, SIGUSR1);
    pthread_join(t, NULL);
    printf("main got %d, worker got %d\n", got[0], got[1]);
    return 0;
}
