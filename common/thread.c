/*
 * thread.c - host threads of crec's own.
 */
#include <pthread.h>
#include <signal.h>

#include "common/common.h"

int crec_thread_start(pthread_t *th, size_t stack, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    sigset_t all, old;
    int rc = pthread_attr_init(&attr);

    if (rc != 0)
        return rc;
    if (stack)
        rc = pthread_attr_setstacksize(&attr, stack);
    /* the new thread starts with the mask of its creator: all blocked */
    sigfillset(&all);
    if (rc == 0)
        rc = pthread_sigmask(SIG_SETMASK, &all, &old);
    if (rc == 0) {
        rc = pthread_create(th, &attr, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_attr_destroy(&attr);
    return rc;
}
