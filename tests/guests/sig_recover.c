/* Issue 15's acceptance guests in one: a SIGSEGV handler that longjmps out
 * and prints "recovered"; raise(SIGUSR1) to an SA_SIGINFO handler that
 * prints si_signo and si_code; a write to a closed pipe with SIGPIPE
 * ignored (EPIPE), with a handler (the handler, then EPIPE), and with the
 * default action last (the program dies of SIGPIPE: exit 141). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile sig_atomic_t got_signo, got_code, pipes;

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(env, 1);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    got_signo = si->si_signo;
    got_code = si->si_code;
}

static void on_pipe(int sig)
{
    (void)sig;
    pipes++;
}

/* A write to a pipe whose reading end is closed: -1 and errno. */
static int closed_pipe_write(void)
{
    int fds[2];
    ssize_t n;

    if (pipe(fds) != 0)
        return -1;
    close(fds[0]);
    n = write(fds[1], "x", 1);
    close(fds[1]);
    return n < 0 ? errno : 0;
}

int main(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    if (sigsetjmp(env, 1) == 0) {
        volatile int *bad = (volatile int *)16;
        *bad = 1;
        printf("not reached\n");
    } else {
        printf("recovered\n");
    }

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    printf("si_signo %d si_code %d\n", (int)got_signo, (int)got_code);

    signal(SIGPIPE, SIG_IGN);
    printf("ignored: %s\n", strerror(closed_pipe_write()));
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_pipe;
    sigaction(SIGPIPE, &sa, NULL);
    printf("handler: %s, handler ran %d\n", strerror(closed_pipe_write()), (int)pipes);
    signal(SIGPIPE, SIG_DFL);
    fflush(stdout);
    closed_pipe_write();
    printf("not reached: SIGPIPE kills\n");
    return 0;
}
