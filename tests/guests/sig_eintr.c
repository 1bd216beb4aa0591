/* Blocking syscalls and signals: pause() and nanosleep() ended by a timer's
 * handler (EINTR); a read of an empty pipe ended by one without SA_RESTART
 * (EINTR) and run again after one with SA_RESTART (its handler writes the
 * byte the read then gets); sigtimedwait for a blocked signal; an ignored
 * signal that ends nothing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;
static int wfd = -1;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
    if (wfd >= 0 && write(wfd, "z", 1) != 1)
        alarms = -100;
}

static void arm(long usec)
{
    struct itimerval it;

    memset(&it, 0, sizeof it);
    it.it_value.tv_usec = usec;
    setitimer(ITIMER_REAL, &it, NULL);
}

int main(void)
{
    struct sigaction sa;
    struct timespec ts = {5, 0}, left;
    int fds[2], r;
    char c;
    sigset_t s;
    siginfo_t si;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    arm(20000);
    r = pause();
    printf("pause: %d %s, alarms %d\n", r, strerror(errno), (int)alarms);
    arm(20000);
    r = nanosleep(&ts, &left);
    printf("nanosleep: %d %s, some time left %d\n", r, strerror(errno), left.tv_sec >= 4);

    if (pipe(fds) != 0)
        return 1;
    arm(20000);
    r = (int)read(fds[0], &c, 1);
    printf("read, no SA_RESTART: %d %s\n", r, strerror(errno));
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    wfd = fds[1];
    arm(20000);
    r = (int)read(fds[0], &c, 1);
    printf("read, SA_RESTART: %d '%c', alarms %d\n", r, r == 1 ? c : '?', (int)alarms);
    wfd = -1;

    signal(SIGUSR2, SIG_IGN); /* an ignored signal from outside ends nothing */
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigprocmask(SIG_BLOCK, &s, NULL);
    kill(getpid(), SIGUSR1);
    r = sigtimedwait(&s, &si, &(struct timespec){1, 0});
    printf("sigtimedwait: %d code %d\n", r, si.si_code);
    return 0;
}
