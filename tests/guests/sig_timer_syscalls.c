/* A periodic setitimer(ITIMER_REAL) whose SIGALRM handler interrupts a
 * loop that makes syscalls: each signal is delivered at the end of one, so
 * a recording holds it (docs/EMU.md, Signals). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

int main(void)
{
    struct sigaction sa;
    struct itimerval it;
    unsigned long calls = 0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sigaction(SIGALRM, &sa, NULL);
    memset(&it, 0, sizeof it);
    it.it_interval.tv_usec = 20000;
    it.it_value.tv_usec = 20000;
    setitimer(ITIMER_REAL, &it, NULL);
    while (ticks < 3) {
        getppid();
        calls++;
    }
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    printf("ticks >= 3: %d, syscalls made: %d\n", ticks >= 3, calls > 0);
    return 0;
}
