/* threads_misc: the other thread calls: a PI mutex, a robust mutex whose
 * owner dies, pthread_kill(t, 0), sched_yield, a timed wait that times
 * out, nanosleep while another thread runs, a read of a pipe that another
 * thread fills, thread ids, and main ending with pthread_exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t pi, robust;
static int pipefd[2];
static volatile int spin_go;

static void *pi_holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pi);
    for (int i = 0; i < 3; i++)
        sched_yield();
    pthread_mutex_unlock(&pi);
    return NULL;
}

static void *robust_dies(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&robust);
    return NULL; /* dies holding it */
}

static void *writer(void *arg)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    (void)arg;
    nanosleep(&ts, NULL);
    if (write(pipefd[1], "hello", 5) != 5)
        return (void *)1;
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    while (!spin_go)
        ;
    return (void *)(long)syscall(SYS_gettid);
}

int main(void)
{
    pthread_mutexattr_t at;
    pthread_t t, t2;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    struct timespec ts;
    char buf[16] = {0};
    void *r;
    int rc;

    pthread_mutexattr_init(&at);
    pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&pi, &at);
    pthread_create(&t, NULL, pi_holder, NULL);
    sched_yield();
    pthread_mutex_lock(&pi);
    pthread_mutex_unlock(&pi);
    pthread_join(t, NULL);
    printf("pi mutex: ok\n");

    pthread_mutexattr_init(&at);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &at);
    pthread_create(&t, NULL, robust_dies, NULL);
    pthread_join(t, NULL);
    rc = pthread_mutex_lock(&robust);
    printf("robust mutex after its owner died: %s\n", rc == EOWNERDEAD ? "EOWNERDEAD" : strerror(rc));
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(&robust);
    pthread_mutex_unlock(&robust);

    pthread_create(&t, NULL, spinner, NULL);
    printf("pthread_kill(t, 0): %d\n", pthread_kill(t, 0));
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000)
        ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_mutex_lock(&mu);
    rc = pthread_cond_timedwait(&cv, &mu, &ts);
    pthread_mutex_unlock(&mu);
    printf("timed wait: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : strerror(rc));
    spin_go = 1;
    pthread_join(t, &r);
    printf("spinner tid differs from main: %s\n",
           (long)r != (long)syscall(SYS_gettid) && (long)r > 0 ? "yes" : "no");

    if (pipe(pipefd) != 0)
        return 1;
    pthread_create(&t2, NULL, writer, NULL);
    if (read(pipefd[0], buf, 5) != 5)
        return 1;
    printf("read from the pipe: %s\n", buf);
    pthread_join(t2, NULL);
    fflush(stdout);
    pthread_exit(NULL);
}
