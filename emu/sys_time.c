/*
 * sys_time.c - clocks and sleeping.  There is no vDSO, so glibc asks for
 * the time with real syscalls; the host answers.  (The recorder logs the
 * answers; the replayer feeds them back.)  Sleeps wait in
 * emu_block_until (wait.c).
 */
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "emu/emu_int.h"

static int64_t sys_clock_gettime(crec_emu *e, const uint64_t a[6])
{
    struct timespec ts;
    if (clock_gettime((clockid_t)a[0], &ts) != 0)
        return -errno;
    return emu_copy_out(e, a[1], &ts, sizeof ts);
}

static int64_t sys_clock_getres(crec_emu *e, const uint64_t a[6])
{
    struct timespec ts;
    if (clock_getres((clockid_t)a[0], &ts) != 0)
        return -errno;
    return a[1] ? emu_copy_out(e, a[1], &ts, sizeof ts) : 0;
}

static int64_t sys_gettimeofday(crec_emu *e, const uint64_t a[6])
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (a[0] && emu_copy_out(e, a[0], &tv, sizeof tv) != 0)
        return -EFAULT;
    if (a[1]) {
        static const int tz[2] = {0, 0};
        return emu_copy_out(e, a[1], tz, sizeof tz);
    }
    return 0;
}

static int64_t sys_time(crec_emu *e, const uint64_t a[6])
{
    int64_t t = (int64_t)time(NULL);
    if (a[0] && emu_copy_out(e, a[0], &t, sizeof t) != 0)
        return -EFAULT;
    return t;
}

/* A timespec from the guest, checked as the kernel checks a sleep's. */
static int64_t timespec_in(crec_emu *e, uint64_t addr, struct timespec *ts)
{
    if (emu_copy_in(e, ts, addr, sizeof *ts) != 0)
        return -EFAULT;
    if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000 || ts->tv_sec < 0)
        return -EINVAL;
    return 0;
}

/* Sleep to the deadline; interrupted, the time left goes to rem_addr. */
static int64_t sleep_until(crec_emu *e, uint64_t deadline, uint64_t rem_addr)
{
    struct timespec rem;
    int r;

    if (e->sched.nlive > 1) /* the other threads run meanwhile (sched.c) */
        return emu_block(e, EMU_WAIT_SLEEP,
                         deadline > (uint64_t)INT64_MAX ? -1 : (int64_t)deadline, 0);
    r = emu_block_until(e, deadline, NULL, 0);

    if (r == -EINTR && rem_addr) {
        emu_deadline_left(deadline, &rem);
        emu_copy_out(e, rem_addr, &rem, sizeof rem);
    }
    return r < 0 ? r : 0;
}

static int64_t sys_nanosleep(crec_emu *e, const uint64_t a[6])
{
    struct timespec req;
    int64_t rc = timespec_in(e, a[0], &req);

    return rc ? rc : sleep_until(e, emu_sc_deadline_after(e, &req), a[1]);
}

/* clock_nanosleep: relative, or absolute (TIMER_ABSTIME) on the clock
 * given, turned into a deadline on the monotonic clock. */
static int64_t sys_clock_nanosleep(crec_emu *e, const uint64_t a[6])
{
    clockid_t id = (clockid_t)a[0];
    struct timespec req, now, rel;
    int64_t rc;

    if (id != CLOCK_REALTIME && id != CLOCK_MONOTONIC && id != CLOCK_BOOTTIME &&
        id != CLOCK_TAI)
        return id == CLOCK_THREAD_CPUTIME_ID ? -EINVAL : -ENOTSUP;
    if ((rc = timespec_in(e, a[2], &req)) != 0)
        return rc;
    if (!(a[1] & TIMER_ABSTIME))
        return sleep_until(e, emu_sc_deadline_after(e, &req), a[3]);
    clock_gettime(id, &now);
    rel.tv_sec = req.tv_sec - now.tv_sec;
    rel.tv_nsec = req.tv_nsec - now.tv_nsec;
    if (rel.tv_nsec < 0)
        rel.tv_sec--, rel.tv_nsec += 1000000000;
    return sleep_until(e, emu_sc_deadline_after(e, &rel), 0);
}

static int64_t sys_times(crec_emu *e, const uint64_t a[6])
{
    struct tms t;
    clock_t r = times(&t);
    if (a[0] && emu_copy_out(e, a[0], &t, sizeof t) != 0)
        return -EFAULT;
    return (int64_t)r;
}

void emu_sys_time_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(clock_gettime, "dp");
    REG(clock_getres, "dp");
    REG(gettimeofday, "pp");
    REG(time, "p");
    REG(nanosleep, "pp");
    REG(clock_nanosleep, "dxpp");
    REG(times, "p");
#undef REG
}
