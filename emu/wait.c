/*
 * wait.c - the one place where the guest waits: for time to pass, for
 * descriptors to become ready, or both (nanosleep, clock_nanosleep, poll,
 * ppoll, select, pselect6, epoll_wait).
 *
 * Every timed wait of the syscall layer comes here with a deadline on the
 * monotonic clock, so that a wait takes its time when nothing can end it
 * sooner, and so that a scheduler of guest threads has one place where a
 * thread that would block can give way to another instead of blocking the
 * host.  A recording holds what each syscall returned (and the time the
 * guest read afterwards); a replay does not wait.
 */
#include <poll.h>
#include <time.h>

#include "emu/emu_int.h"

uint64_t emu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t emu_deadline_after(const struct timespec *rel)
{
    uint64_t now = emu_now_ns(), d;

    if (rel->tv_sec < 0 || (rel->tv_sec == 0 && rel->tv_nsec <= 0))
        return now;
    if ((uint64_t)rel->tv_sec > (EMU_FOREVER - now) / 1000000000ull - 1)
        return EMU_FOREVER;
    d = now + (uint64_t)rel->tv_sec * 1000000000ull + (uint64_t)rel->tv_nsec;
    return d;
}

void emu_deadline_left(uint64_t deadline, struct timespec *left)
{
    uint64_t now = emu_now_ns(), ns = deadline > now ? deadline - now : 0;

    left->tv_sec = (time_t)(ns / 1000000000ull);
    left->tv_nsec = (long)(ns % 1000000000ull);
}

int emu_block_until(crec_emu *e, uint64_t deadline, struct pollfd *fds, unsigned n)
{
    struct timespec left;
    int r;

    (void)e; /* one guest thread: nothing else can run meanwhile */
    emu_deadline_left(deadline, &left);
    r = ppoll(fds, n, deadline == EMU_FOREVER ? NULL : &left, NULL);
    /* EINTR: a signal to crec (SIGINT/SIGTERM while recording) ends the
     * wait, as a signal to the guest would */
    return r < 0 ? -errno : r;
}
