/*
 * wait.c - the one place where the guest waits: for time to pass, for
 * descriptors to become ready, or both (nanosleep, clock_nanosleep, poll,
 * ppoll, select, pselect6, epoll_wait).
 *
 * Every timed wait of the syscall layer comes here with a deadline on the
 * monotonic clock, so that a wait takes its time when nothing can end it
 * sooner, and so that a scheduler of guest threads has one place where a
 * thread that would block can give way to another instead of blocking the
 * host.  With threads, the one mechanism is the scheduler's (sched.c): a
 * thread that would wait while another could run blocks with its deadline
 * and its fds (emu_block), and when no thread can run the scheduler waits
 * here for the earliest deadline or fd of them all; a handler waits here
 * itself only when its thread is the only one alive.  A recording holds what each syscall returned (and the time the
 * guest read afterwards); a replay does not wait.
 */
#include <poll.h>
#include <time.h>

#include "emu/emu_int.h"

int64_t emu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t emu_deadline_after(const struct timespec *rel)
{
    uint64_t now = (uint64_t)emu_now_ns(), d;

    if (rel->tv_sec < 0 || (rel->tv_sec == 0 && rel->tv_nsec <= 0))
        return now;
    if ((uint64_t)rel->tv_sec > (EMU_FOREVER - now) / 1000000000ull - 1)
        return EMU_FOREVER;
    d = now + (uint64_t)rel->tv_sec * 1000000000ull + (uint64_t)rel->tv_nsec;
    return d;
}

uint64_t emu_sc_deadline_after(crec_emu *e, const struct timespec *rel)
{
    /* a syscall run again after a signal it did not take keeps its end */
    if (!e->sc_deadline_set) {
        e->sc_deadline = emu_deadline_after(rel);
        e->sc_deadline_set = 1;
    }
    return e->sc_deadline;
}

void emu_deadline_left(uint64_t deadline, struct timespec *left)
{
    uint64_t now = (uint64_t)emu_now_ns(), ns = deadline > now ? deadline - now : 0;

    left->tv_sec = (time_t)(ns / 1000000000ull);
    left->tv_nsec = (long)(ns % 1000000000ull);
}

int64_t emu_deadline_rel(const struct timespec *ts)
{
    uint64_t d = emu_deadline_after(ts);

    return d > (uint64_t)INT64_MAX / 2 ? -1 : (int64_t)d;
}

int64_t emu_deadline_abs(int clock_realtime, const struct timespec *ts)
{
    struct timespec now, rel;

    if (!clock_realtime) {
        if (ts->tv_sec > INT64_MAX / 2 / 1000000000)
            return -1;
        return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    rel.tv_sec = ts->tv_sec - now.tv_sec;
    rel.tv_nsec = ts->tv_nsec - now.tv_nsec;
    if (rel.tv_nsec < 0)
        rel.tv_sec--, rel.tv_nsec += 1000000000;
    return emu_deadline_rel(&rel);
}

int emu_block_until(crec_emu *e, uint64_t deadline, struct pollfd *fds, unsigned n)
{
    struct timespec left;
    int r;

    (void)e;
    emu_deadline_left(deadline, &left);
    r = ppoll(fds, n, deadline == EMU_FOREVER ? NULL : &left, NULL);
    /* EINTR: a signal to crec (SIGINT/SIGTERM while recording) ends the
     * wait, as a signal to the guest would */
    return r < 0 ? -errno : r;
}
