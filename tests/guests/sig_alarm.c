/* Asynchronous signals: alarm(1) with a handler around a loop that makes
 * no syscall, then a periodic setitimer(ITIMER_REAL) that interrupts the
 * loop three times; the handlers set flags the loops wait for. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t fired, ticks;

static void on_alarm(int sig)
{
    (void)sig;
    fired = 1;
}

static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

int main(void)
{
    struct sigaction sa;
    struct itimerval it;
    volatile unsigned long spins = 0;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    printf("alarm before: %u\n", alarm(1));
    while (!fired)
        spins++;
    printf("alarm fired: %d, spun: %d\n", (int)fired, spins > 0);

    sa.sa_handler = on_tick;
    sigaction(SIGALRM, &sa, NULL);
    memset(&it, 0, sizeof it);
    it.it_interval.tv_usec = 50000;
    it.it_value.tv_usec = 50000;
    setitimer(ITIMER_REAL, &it, NULL);
    while (ticks < 3)
        spins++;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    getitimer(ITIMER_REAL, &it);
    printf("ticks: %d, disarmed: %d\n", ticks >= 3, it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0);
    printf("alarm(5) then alarm(0): %u\n", (alarm(5), alarm(0)));
    return 0;
}
