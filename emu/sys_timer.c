/*
 * sys_timer.c - POSIX timers (timer_create, timer_settime, timer_gettime,
 * timer_getoverrun, timer_delete) and waiting for a signal
 * (rt_sigtimedwait), with the queue of pending signals they need.
 *
 * This is what glibc's SIGEV_THREAD timers are made of: timer_create
 * starts a helper thread that blocks every signal and loops in
 * rt_sigtimedwait(SIGTIMER); the timer is created SIGEV_THREAD_ID for that
 * thread, and each expiry gives the helper a siginfo (SI_TIMER, the
 * timer's sigev_value) from which it starts a thread running the callback.
 * sigwait and sigwaitinfo are rt_sigtimedwait too.
 *
 * A signal is only *queued* here: to a thread (a timer's SIGEV_THREAD_ID,
 * tgkill, tkill) or to the process (a timer's SIGEV_SIGNAL, kill), for
 * rt_sigtimedwait to take.  One that nobody can take (not blocked and not
 * waited for) goes to emu_signal_self: its default action, or the line
 * that says a handler is not supported yet (issue 15 delivers signals to
 * handlers).  Like the kernel, a standard signal already pending is not
 * queued twice, a real-time one is (emu_signal_pend); a timer whose signal
 * is still pending counts an overrun instead.
 *
 * Timers run on the host's clock: the scheduler asks emu_timers_next for
 * the nearest expiry when it waits on the host, and emu_timers_fire at
 * every slice end and after each wait.  The recording sees only the
 * syscalls' results (the siginfo rt_sigtimedwait writes), so a replay does
 * not need the clock.
 */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define SIGEV_SIGNAL_ 0
#define SIGEV_NONE_ 1
#define SIGEV_THREAD_ID_ 4
#define SI_USER_ 0
#define SI_TIMER_ (-2)
#define SI_TKILL_ (-6)

/* The guest's struct siginfo for a queued signal (x86-64 layout). */
void emu_siginfo_bytes(const struct emu_siginfo *si, uint8_t out[EMU_SIGINFO_SIZE])
{
    memset(out, 0, EMU_SIGINFO_SIZE);
    crec_le_put(out + 0, (uint64_t)(uint32_t)si->signo, 4);
    crec_le_put(out + 8, (uint64_t)(uint32_t)si->code, 4);
    if (si->code > 0 && (si->signo == SIGSEGV || si->signo == SIGBUS || si->signo == SIGFPE ||
                         si->signo == SIGILL || si->signo == SIGTRAP)) {
        crec_le_put(out + 16, si->value, 8); /* _sigfault: the address */
        return;
    }
    if (si->code > 0 && si->signo == SIGCHLD) { /* _sigchld: pid, uid, status */
        crec_le_put(out + 16, (uint64_t)si->pid, 4);
        crec_le_put(out + 20, (uint64_t)si->uid, 4);
        crec_le_put(out + 24, (uint64_t)(uint32_t)si->status, 4);
        return;
    }
    if (si->code == SI_TIMER_) { /* _timer: tid (the timer), overrun, value */
        crec_le_put(out + 16, (uint64_t)(uint32_t)si->timer, 4);
        crec_le_put(out + 20, (uint64_t)(uint32_t)si->overrun, 4);
    } else { /* _kill / _rt: pid, uid, value */
        crec_le_put(out + 16, (uint64_t)(uint32_t)si->pid, 4);
        crec_le_put(out + 20, (uint64_t)(uint32_t)si->uid, 4);
    }
    crec_le_put(out + 24, si->value, 8);
}

void emu_siginfo_parse(const uint8_t in[EMU_SIGINFO_SIZE], int signo, struct emu_siginfo *si)
{
    memset(si, 0, sizeof *si);
    si->signo = signo;
    si->code = (int)(uint32_t)crec_le_get(in + 8, 4);
    si->pid = (uint32_t)crec_le_get(in + 16, 4);
    si->uid = (uint32_t)crec_le_get(in + 20, 4);
    si->value = crec_le_get(in + 24, 8);
}

/* ---- the queues ------------------------------------------------------------------ */

/* The thread's signal mask (the running thread's is the process's). */
static uint64_t mask_of(crec_emu *e, const struct emu_thread *t)
{
    return t == e->sched.cur ? e->sigmask : t->sigmask;
}

/* A thread that waits in rt_sigtimedwait for sig: it takes it now. */
static int give_waiter(crec_emu *e, struct emu_thread *t, int sig)
{
    if (t->state != EMU_TH_BLOCKED || t->wait != EMU_WAIT_SIGNAL || !(t->sigwait_set & emu_sigbit(sig)))
        return 0;
    emu_wake(e, t, 0);
    t->retry = 1; /* its handler runs again and dequeues it */
    return 1;
}

void emu_signal_pend(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si)
{
    uint64_t *pending = t ? &t->sig_pending : &e->sig_pending;
    struct emu_sigqueue *more = t ? &t->sig_more : &e->sig_more;
    int sig = si->signo;

    if (!(*pending & emu_sigbit(sig))) {
        *pending |= emu_sigbit(sig);
        (t ? t->sig_info : e->sig_info)[sig] = *si;
    } else if (sig >= EMU_SIGRTMIN && more->n < EMU_RTSIG_QUEUE) {
        more->q[more->n++] = *si;
    }
}

void emu_signal_unpend(crec_emu *e, struct emu_thread *t, int sig)
{
    struct emu_sigqueue *more = t ? &t->sig_more : &e->sig_more;
    unsigned kept = 0;

    *(t ? &t->sig_pending : &e->sig_pending) &= ~emu_sigbit(sig);
    for (unsigned i = 0; i < more->n; i++)
        if (more->q[i].signo != sig)
            more->q[kept++] = more->q[i];
    more->n = kept;
}

int emu_signal_queue(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si)
{
    struct emu_sched *s = &e->sched;
    int sig = si->signo;

    if (sig < 1 || sig > 64)
        return 0;
    if (t) { /* to that thread: waited for, or blocked there */
        if (t->state == EMU_TH_EXITED)
            return 1;
        if ((t->sig_pending & emu_sigbit(sig)) || give_waiter(e, t, sig) ||
            (mask_of(e, t) & emu_sigbit(sig))) {
            emu_signal_pend(e, t, si);
            return 1;
        }
        return 0;
    }
    if (e->sig_pending & emu_sigbit(sig)) {
        emu_signal_pend(e, NULL, si);
        return 1;
    }
    for (size_t i = 0; i < s->n; i++) /* a thread waiting for it takes it */
        if (give_waiter(e, s->th[i], sig)) {
            emu_signal_pend(e, NULL, si);
            return 1;
        }
    for (size_t i = 0; i < s->n; i++) /* pending while every thread blocks it */
        if (s->th[i]->state != EMU_TH_EXITED && !(mask_of(e, s->th[i]) & emu_sigbit(sig)))
            return 0;
    emu_signal_pend(e, NULL, si);
    return 1;
}

/* The lowest pending signal of `set` for the running thread, dequeued: a
 * real-time one queued again stays pending with its next instance. */
int emu_signal_take(crec_emu *e, uint64_t set, struct emu_siginfo *si)
{
    struct emu_thread *t = e->sched.cur;
    uint64_t *from[2] = {&t->sig_pending, &e->sig_pending};
    struct emu_siginfo *info[2] = {t->sig_info, e->sig_info};
    struct emu_sigqueue *more[2] = {&t->sig_more, &e->sig_more};

    for (int k = 0; k < 2; k++) {
        uint64_t m = *from[k] & set;
        if (m) {
            int sig = __builtin_ctzll(m) + 1;
            unsigned i = 0;
            *si = info[k][sig];
            while (i < more[k]->n && more[k]->q[i].signo != sig)
                i++;
            if (i == more[k]->n) {
                *from[k] &= ~emu_sigbit(sig);
                return sig;
            }
            info[k][sig] = more[k]->q[i];
            memmove(&more[k]->q[i], &more[k]->q[i + 1],
                    (more[k]->n - i - 1) * sizeof more[k]->q[0]);
            more[k]->n--;
            return sig;
        }
    }
    return 0;
}

/* ---- timers ----------------------------------------------------------------------- */

static int64_t ts_to_ns(const uint64_t ts[2])
{
    if (ts[0] > (uint64_t)INT64_MAX / 1000000000 - 1)
        return INT64_MAX / 2;
    return (int64_t)ts[0] * 1000000000 + (int64_t)ts[1];
}

static void ns_to_ts(int64_t ns, uint64_t ts[2])
{
    if (ns < 0)
        ns = 0;
    ts[0] = (uint64_t)(ns / 1000000000);
    ts[1] = (uint64_t)(ns % 1000000000);
}

static int timer_clock_ok(uint64_t clock)
{
    /* realtime, monotonic, the CPU-time clocks (as monotonic: crec's CPU is
     * the host's time), monotonic raw and coarse, boottime, and the alarm
     * clocks */
    return clock <= 11 && clock != 10;
}

static struct emu_timer *timer_of(crec_emu *e, uint64_t id)
{
    return id < EMU_MAX_TIMERS && e->timers[id].used ? &e->timers[id] : NULL;
}

/* One expiry of timer k: its signal, or an overrun if it is still pending. */
static void timer_expire(crec_emu *e, int k)
{
    struct emu_timer *tm = &e->timers[k];
    struct emu_siginfo si = {tm->signo, SI_TIMER_, 0, 0, k, 0, tm->value};
    struct emu_thread *t = NULL;
    uint64_t pending;

    if (tm->notify == SIGEV_NONE_)
        return;
    if (tm->notify == SIGEV_THREAD_ID_ && !(t = emu_thread_by_tid(e, tm->tid)))
        return; /* its thread is gone */
    pending = t ? t->sig_pending : e->sig_pending;
    if (pending & emu_sigbit(tm->signo)) {
        tm->overrun++;
        return;
    }
    si.overrun = (int)(tm->overrun > INT32_MAX ? INT32_MAX : tm->overrun);
    tm->overrun = 0;
    if (emu_signal_queue(e, t, &si))
        return;
    /* nobody blocks or waits for it: the default action, or its handler */
    emu_signal_send(e, t, &si, "its timer expired");
}

int emu_timers_fire(crec_emu *e, int64_t now)
{
    size_t blocked = 0;
    int woken = 0;

    for (size_t i = 0; i < e->sched.n; i++)
        blocked += e->sched.th[i]->state == EMU_TH_BLOCKED;
    for (int k = 0; k < EMU_MAX_TIMERS; k++) {
        struct emu_timer *tm = &e->timers[k];
        if (!tm->used || tm->next < 0 || tm->next > now)
            continue;
        if (tm->interval > 0) { /* periodic: the expiries it missed are overruns */
            uint64_t missed = (uint64_t)((now - tm->next) / tm->interval);
            tm->next += (int64_t)(missed + 1) * tm->interval;
            tm->overrun += missed;
        } else {
            tm->next = -1;
        }
        timer_expire(e, k);
    }
    for (size_t i = 0; i < e->sched.n; i++)
        woken -= e->sched.th[i]->state == EMU_TH_BLOCKED;
    return woken + (int)blocked;
}

int64_t emu_timers_next(const crec_emu *e)
{
    int64_t next = -1;

    for (int k = 0; k < EMU_MAX_TIMERS; k++) {
        const struct emu_timer *tm = &e->timers[k];
        if (tm->used && tm->next >= 0 && tm->notify != SIGEV_NONE_ && (next < 0 || tm->next < next))
            next = tm->next;
    }
    return next;
}

static int64_t sys_timer_create(crec_emu *e, const uint64_t a[6])
{
    uint8_t ev[64];
    struct emu_timer tm = {0};
    int k;

    if (!timer_clock_ok(a[0]))
        return -EINVAL;
    if (a[1]) {
        if (emu_copy_in(e, ev, a[1], sizeof ev) != 0)
            return -EFAULT;
        tm.value = crec_le_get(ev, 8);
        tm.signo = (int)(int32_t)crec_le_get(ev + 8, 4);
        tm.notify = (int)(int32_t)crec_le_get(ev + 12, 4);
        tm.tid = (uint32_t)crec_le_get(ev + 16, 4);
    } else {
        tm.notify = SIGEV_SIGNAL_;
        tm.signo = SIGALRM;
    }
    if (tm.notify != SIGEV_NONE_ && tm.notify != SIGEV_SIGNAL_ && tm.notify != SIGEV_THREAD_ID_)
        return -EINVAL; /* SIGEV_THREAD is the C library's, never the kernel's */
    if (tm.notify != SIGEV_NONE_ && (tm.signo < 1 || tm.signo > 64))
        return -EINVAL;
    if (tm.notify == SIGEV_THREAD_ID_ && !emu_thread_by_tid(e, tm.tid))
        return -EINVAL;
    for (k = 0; k < EMU_MAX_TIMERS && e->timers[k].used; k++)
        ;
    if (k == EMU_MAX_TIMERS)
        return -EAGAIN;
    if (!a[1])
        tm.value = (uint64_t)k;
    tm.used = 1;
    tm.clock = (int)a[0];
    tm.next = -1;
    {
        uint32_t id = (uint32_t)k;
        if (emu_copy_out(e, a[2], &id, 4) != 0)
            return -EFAULT;
    }
    e->timers[k] = tm;
    return 0;
}

/* The time left and the interval of a timer, as struct itimerspec. */
static void timer_now(const struct emu_timer *tm, uint8_t out[32])
{
    uint64_t iv[2], left[2];

    ns_to_ts(tm->interval, iv);
    ns_to_ts(tm->next < 0 ? 0 : tm->next - emu_now_ns(), left);
    if (tm->next >= 0 && left[0] == 0 && left[1] == 0)
        left[1] = 1; /* due, not yet fired: still armed */
    crec_le_put(out, iv[0], 8);
    crec_le_put(out + 8, iv[1], 8);
    crec_le_put(out + 16, left[0], 8);
    crec_le_put(out + 24, left[1], 8);
}

static int64_t sys_timer_settime(crec_emu *e, const uint64_t a[6])
{
    struct emu_timer *tm = timer_of(e, a[0]);
    uint8_t in[32], old[32];
    uint64_t iv[2], val[2];

    if (!tm)
        return -EINVAL;
    if (emu_copy_in(e, in, a[2], sizeof in) != 0)
        return -EFAULT;
    for (int i = 0; i < 2; i++) {
        iv[i] = crec_le_get(in + 8 * i, 8);
        val[i] = crec_le_get(in + 16 + 8 * i, 8);
    }
    if (iv[1] >= 1000000000 || val[1] >= 1000000000 || (int64_t)iv[0] < 0 || (int64_t)val[0] < 0)
        return -EINVAL;
    if (a[3]) {
        timer_now(tm, old);
        if (emu_copy_out(e, a[3], old, sizeof old) != 0)
            return -EFAULT;
    }
    tm->interval = ts_to_ns(iv);
    tm->overrun = 0;
    if (val[0] == 0 && val[1] == 0) {
        tm->next = -1; /* disarmed */
    } else if (a[1] & TIMER_ABSTIME) {
        struct timespec ts = {(time_t)val[0], (long)val[1]};
        tm->next = emu_deadline_abs(tm->clock == CLOCK_REALTIME || tm->clock == 8 /* alarm */,
                                    &ts);
    } else {
        tm->next = emu_now_ns() + ts_to_ns(val);
    }
    emu_hostsig_arm(e);
    return 0;
}

static int64_t sys_timer_gettime(crec_emu *e, const uint64_t a[6])
{
    struct emu_timer *tm = timer_of(e, a[0]);
    uint8_t cur[32];

    if (!tm)
        return -EINVAL;
    timer_now(tm, cur);
    return emu_copy_out(e, a[1], cur, sizeof cur) ? -EFAULT : 0;
}

static int64_t sys_timer_getoverrun(crec_emu *e, const uint64_t a[6])
{
    struct emu_timer *tm = timer_of(e, a[0]);

    if (!tm)
        return -EINVAL;
    return tm->last_overrun;
}

static int64_t sys_timer_delete(crec_emu *e, const uint64_t a[6])
{
    struct emu_timer *tm = timer_of(e, a[0]);

    if (!tm)
        return -EINVAL;
    memset(tm, 0, sizeof *tm);
    emu_hostsig_arm(e);
    return 0;
}

/* ---- waiting for a signal ---------------------------------------------------------- */

/* rt_sigtimedwait(set, info, timeout, sigsetsize) */
static int64_t sys_rt_sigtimedwait(crec_emu *e, const uint64_t a[6])
{
    struct emu_thread *t = e->sched.cur;
    struct emu_siginfo si;
    uint64_t set, ts[2] = {0, 0};
    int64_t deadline = -1;
    int sig;

    if (a[3] != 8)
        return -EINVAL;
    if (emu_copy_in(e, &set, a[0], 8) != 0)
        return -EFAULT;
    set = crec_le_get((const uint8_t *)&set, 8) & ~(emu_sigbit(SIGKILL) | emu_sigbit(SIGSTOP));
    if (a[2]) {
        uint8_t b[16];
        if (emu_copy_in(e, b, a[2], sizeof b) != 0)
            return -EFAULT;
        ts[0] = crec_le_get(b, 8), ts[1] = crec_le_get(b + 8, 8);
        if ((int64_t)ts[0] < 0 || ts[1] >= 1000000000)
            return -EINVAL;
    }
    emu_timers_fire(e, emu_now_ns());
    if ((sig = emu_signal_take(e, set, &si)) != 0) {
        if (a[1]) {
            uint8_t out[EMU_SIGINFO_SIZE];
            emu_siginfo_bytes(&si, out);
            if (emu_copy_out(e, a[1], out, sizeof out) != 0)
                return -EFAULT;
        }
        if (si.code == SI_TIMER_) {
            int k = si.timer;
            if (k >= 0 && k < EMU_MAX_TIMERS && e->timers[k].used)
                e->timers[k].last_overrun = si.overrun;
        }
        return sig;
    }
    if (a[2]) {
        struct timespec rel = {(time_t)ts[0], (long)ts[1]};
        if (ts[0] == 0 && ts[1] == 0)
            return -EAGAIN;
        deadline = emu_deadline_rel(&rel);
    }
    t->sigwait_set = set;
    return emu_block(e, EMU_WAIT_SIGNAL, deadline, -EAGAIN);
}

void emu_sys_timer_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(timer_create, "dpp");
    REG(timer_settime, "dxpp");
    REG(timer_gettime, "dp");
    REG(timer_getoverrun, "d");
    REG(timer_delete, "d");
    REG(rt_sigtimedwait, "pppu");
#undef REG
}
