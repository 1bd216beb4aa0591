/* Signals between processes: a child computes (no syscall) until the
 * SIGUSR1 its parent sends arrives (its handler runs at an instruction
 * boundary); the parent's SIGCHLD handler counts the child's exit while it
 * waits in pause(); a second child is killed with SIGTERM (its default
 * action) and a third with SIGKILL, as the parent's wait status shows. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, chld;

static void on_usr1(int sig)
{
    (void)sig;
    usr1 = 1;
}

static void on_chld(int sig)
{
    (void)sig;
    chld++;
}

static pid_t spinner(void)
{
    pid_t c = fork();
    if (c == 0) {
        volatile unsigned long n = 0;
        for (;;)
            n++;
    }
    return c;
}

int main(void)
{
    struct sigaction sa;
    int st, pfd[2];
    pid_t c;
    sigset_t block, old;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    if (pipe(pfd) != 0)
        return 1;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    c = fork();
    if (c == 0) {
        volatile unsigned long n = 0;
        close(pfd[0]);
        if (write(pfd[1], "r", 1) != 1) /* ready: the handler is installed */
            _exit(3);
        while (!usr1)
            n++;
        _exit(n > 0 ? 7 : 8);
    }
    char b;
    close(pfd[1]);
    if (read(pfd[0], &b, 1) != 1)
        return 1;
    usleep(20000); /* let it spin */
    kill(c, SIGUSR1);
    while (!chld) /* SIGCHLD, taken in sigsuspend */
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    waitpid(c, &st, 0);
    printf("child exited %d after SIGUSR1, SIGCHLD seen %d\n", WEXITSTATUS(st), chld > 0);

    c = spinner();
    usleep(20000);
    kill(c, SIGTERM);
    waitpid(c, &st, 0);
    printf("killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    c = spinner();
    usleep(20000);
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    printf("killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}
