/*
 * timed_waits.c - waits that nothing ends early take their time: nanosleep,
 * clock_nanosleep (relative and absolute), poll and ppoll on a pipe nobody
 * writes, select and pselect, epoll_wait.  Each is timed on the monotonic
 * clock; the program prints, for each, whether it took at least 90% of the
 * time asked for and less than 5 s more (so the output is the same
 * natively and under crec).  Then a poll that data ends at once.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(const char *what, double t0, double want)
{
    double took = now() - t0;
    printf("%-22s %s\n", what, took >= want * 0.9 && took < want + 5 ? "waited" : "WRONG");
}

int main(void)
{
    int p[2], ep;
    struct timespec ts = {0, 100000000}, abs_ts;
    struct timeval tv = {0, 100000};
    struct pollfd pf;
    struct epoll_event ev = {.events = EPOLLIN}, out;
    fd_set rd;
    double t0;

    if (pipe(p) != 0)
        return 1;
    t0 = now();
    nanosleep(&ts, NULL);
    report("nanosleep", t0, 0.1);
    t0 = now();
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    report("clock_nanosleep", t0, 0.1);
    clock_gettime(CLOCK_REALTIME, &abs_ts);
    abs_ts.tv_nsec += 100000000;
    if (abs_ts.tv_nsec >= 1000000000)
        abs_ts.tv_sec++, abs_ts.tv_nsec -= 1000000000;
    t0 = now();
    clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs_ts, NULL);
    report("clock_nanosleep abs", t0, 0.1);
    pf.fd = p[0], pf.events = POLLIN;
    t0 = now();
    printf("poll: %d\n", poll(&pf, 1, 100));
    report("poll", t0, 0.1);
    t0 = now();
    printf("ppoll: %d\n", ppoll(&pf, 1, &ts, NULL));
    report("ppoll", t0, 0.1);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    t0 = now();
    printf("select: %d\n", select(p[0] + 1, &rd, NULL, NULL, &tv));
    report("select", t0, 0.1);
    FD_SET(p[0], &rd);
    t0 = now();
    printf("pselect: %d\n", pselect(p[0] + 1, &rd, NULL, NULL, &ts, NULL));
    report("pselect", t0, 0.1);
    ep = epoll_create1(0);
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    t0 = now();
    printf("epoll_wait: %d\n", epoll_wait(ep, &out, 1, 100));
    report("epoll_wait", t0, 0.1);
    if (write(p[1], "x", 1) != 1)
        return 1;
    t0 = now();
    int n = poll(&pf, 1, 5000);
    printf("poll with data: %d revents=%#x\n", n, pf.revents);
    printf("epoll with data: %d\n", epoll_wait(ep, &out, 1, 5000));
    FD_SET(p[0], &rd);
    n = select(p[0] + 1, &rd, NULL, NULL, NULL);
    printf("select with data: %d set=%d\n", n, FD_ISSET(p[0], &rd));
    printf("data ended them at once: %s\n", now() - t0 < 1 ? "yes" : "NO");
    return 0;
}
