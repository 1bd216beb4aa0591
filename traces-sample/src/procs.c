/* procs.c - the sample of several processes (format version 3): the
 * program forks; the child execs the program again ("child"), which
 * computes until the SIGUSR1 its parent sends arrives (a signal delivered
 * at an instruction) and writes its count through a pipe; the parent reads
 * it, waits, and recovers from a SIGSEGV in its handler (a fault's
 * signal).  Every process is in the one recording. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t usr1;
static sigjmp_buf env;
volatile long spins;

static void on_usr1(int sig)
{
    (void)sig;
    usr1 = 1;
}

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(env, 1);
}

int main(int argc, char **argv)
{
    int fds[2], st;
    char line[64];
    ssize_t n;
    pid_t c;

    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        signal(SIGUSR1, on_usr1);
        if (write(1, "r", 1) != 1) /* ready: its parent may send the signal */
            return 3;
        while (!usr1)
            spins++;
        n = snprintf(line, sizeof line, "child saw SIGUSR1 after spinning: %d\n", spins > 0);
        return write(1, line, (size_t)n) == n ? 7 : 3;
    }
    if (pipe(fds) != 0)
        return 1;
    c = fork();
    if (c == 0) { /* the child's stdout is the pipe */
        char *args[] = {argv[0], "child", NULL};
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], args);
        _exit(127);
    }
    close(fds[1]);
    if (read(fds[0], line, 1) != 1)
        return 1;
    usleep(5000); /* it spins meanwhile */
    kill(c, SIGUSR1);
    n = read(fds[0], line, sizeof line - 1);
    line[n > 0 ? n : 0] = '\0';
    waitpid(c, &st, 0);
    printf("%sthe child exited %d\n", line, WEXITSTATUS(st));
    signal(SIGSEGV, on_segv);
    if (sigsetjmp(env, 1) == 0)
        *(volatile int *)8 = 1;
    else
        printf("recovered\n");
    return 0;
}
