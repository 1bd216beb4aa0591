/* Signals sent to `crec record` itself: prints "ready", then waits in
 * pause(); SIGUSR1 prints "usr1", SIGTERM prints "term" and exits 3
 * (with --forward-signals; by default crec stops the recording instead). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, term;

static void on_sig(int sig)
{
    if (sig == SIGUSR1)
        usr1++;
    else
        term = 1;
}

int main(void)
{
    struct sigaction sa;
    int seen = 0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    while (!term) {
        pause();
        for (; seen < usr1; seen++)
            printf("usr1\n");
        fflush(stdout);
    }
    printf("term\n");
    return 3;
}
