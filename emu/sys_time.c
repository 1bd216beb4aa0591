/*
 * sys_time.c - clocks and sleeping.  There is no vDSO, so glibc asks for
 * the time with real syscalls; the host answers.  (The recorder logs the
 * answers; the replayer feeds them back.)
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

static int64_t sleep_result(crec_emu *e, int r, uint64_t rem_addr, const struct timespec *rem)
{
    if (r == 0)
        return 0;
    if (r == EINTR && rem_addr)
        emu_copy_out(e, rem_addr, rem, sizeof *rem);
    return -r;
}

static int64_t sys_nanosleep(crec_emu *e, const uint64_t a[6])
{
    struct timespec req, rem = {0, 0};
    if (emu_copy_in(e, &req, a[0], sizeof req) != 0)
        return -EFAULT;
    if (req.tv_nsec < 0 || req.tv_nsec >= 1000000000 || req.tv_sec < 0)
        return -EINVAL;
    if (e->sched.nlive > 1) /* the other threads run meanwhile */
        return emu_block(e, EMU_WAIT_SLEEP, emu_deadline_rel(&req), 0);
    return sleep_result(e, nanosleep(&req, &rem) ? errno : 0, a[1], &rem);
}

static int64_t sys_clock_nanosleep(crec_emu *e, const uint64_t a[6])
{
    struct timespec req, rem = {0, 0};
    if (emu_copy_in(e, &req, a[2], sizeof req) != 0)
        return -EFAULT;
    if (e->sched.nlive > 1 && req.tv_nsec >= 0 && req.tv_nsec < 1000000000 && req.tv_sec >= 0)
        return emu_block(e, EMU_WAIT_SLEEP,
                         (a[1] & TIMER_ABSTIME)
                             ? emu_deadline_abs(a[0] == CLOCK_REALTIME, &req)
                             : emu_deadline_rel(&req),
                         0);
    return sleep_result(e, clock_nanosleep((clockid_t)a[0], (int)a[1], &req, &rem), a[3], &rem);
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
