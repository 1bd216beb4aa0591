/* threads_tids: thread ids and process ids come from one space.  Three
 * threads wait while the program forks three children, which wait to be
 * killed; no child's pid may be a thread's id (kill() of the child would
 * reach the thread), and SIGTERM to each child kills that child. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 3

static pid_t tids[N];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, release;

static void *work(void *arg)
{
    pthread_mutex_lock(&mu);
    tids[(long)arg] = (pid_t)syscall(SYS_gettid);
    started++;
    pthread_cond_broadcast(&cv);
    while (!release)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    pthread_t th[N];
    pid_t kids[N];
    int clash = 0;

    for (long i = 0; i < N; i++)
        if (pthread_create(&th[i], NULL, work, (void *)i) != 0)
            return 1;
    pthread_mutex_lock(&mu);
    while (started < N)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] < 0)
            return 2;
        if (kids[i] == 0) {
            for (;;)
                pause();
        }
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            clash += kids[i] == tids[j] || tids[i] == getpid() || (i != j && tids[i] == tids[j]);
    printf("thread ids apart from the pids: %s\n", clash ? "no" : "yes");
    for (int i = 0; i < N; i++) {
        int st = 0;
        kill(kids[i], SIGTERM);
        waitpid(kids[i], &st, 0);
        printf("child %d: %s %d\n", i, WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    pthread_mutex_lock(&mu);
    release = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    puts("done");
    return 0;
}
