/*
 * sched.c - guest threads and the scheduler that runs them on one CPU.
 *
 * A process (crec_emu) is one Unicorn engine, so one address space, with
 * its fd table, its signal actions, and a set of threads.  The threads take
 * turns on the engine: the running thread's registers are in it, the
 * others' are saved in a uc_context (copying the CPU state costs 0.16 us).
 *
 * The scheduler is deterministic given what it is told: round robin, in
 * creation order, with a time slice counted in instructions.  A thread
 * gives up the CPU
 *   - at the first block start after its slice is over, if another thread
 *     can run (the block hook stops the CPU before the block);
 *   - when it blocks in a syscall (a futex wait, a read with nothing to
 *     read while other threads could run, a sleep): the syscall's handler
 *     returns EMU_BLOCKED, and the syscall completes when the thread is
 *     switched in again after something woke it;
 *   - when it exits, or yields (sched_yield).
 * What wakes a thread from outside (a timeout, an fd that became ready) is
 * checked at every slice end, and waited for on the host (ppoll on the fds
 * with the nearest timeout) when no thread can run.  When every thread
 * waits for something nothing can give, the run ends with "deadlock".
 *
 * --chaos (rr's chaos mode, Undo's thread fuzzing): slices of random
 * length that end at an exact instruction, inside a block if need be
 * (crec_emu_cpu_stop_inside), the next thread drawn at random, and now and
 * then a thread starved for a while.  The seed makes it reproducible as far
 * as the program's own timing allows; the recording holds what happened.
 *
 * Issue 15 (processes) adds engines: a thread already points at nothing
 * but its process's engine through `e`, and the scheduler's state is kept
 * apart in emu_sched so that it can move out of crec_emu then.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu/emu_int.h"

/* ---- the random source of --chaos (splitmix64) ------------------------------ */

static uint64_t chaos_next(struct emu_sched *s)
{
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The length of the slice that starts now. */
static uint64_t slice_len(struct emu_sched *s)
{
    if (!s->chaos)
        return s->slice;
    return 1 + chaos_next(s) % s->slice;
}

/* ---- threads ---------------------------------------------------------------- */

/* ---- thread ids ------------------------------------------------------------
 *
 * Linux gives threads and processes their ids from one space: no process
 * the program forks can have the id of one of its threads.  An id crec
 * made up (the pid plus n) could be a child's pid, and then kill() of the
 * child reached the thread instead (a Pool of python's multiprocessing
 * ended by SIGTERM to itself).  So each thread but the first has a host
 * thread of crec's that holds its id: it only sleeps, until the guest's
 * thread exits.  A forked child has no such host threads: it lets its
 * copies go without waiting for them.
 */
struct emu_tid_holder {
    pthread_t th;
    pid_t owner;   /* the process that has the host thread */
    uint32_t tid;  /* its id, 0 until it is known (futex word) */
    uint32_t done; /* 1: end (futex word) */
};

/* Its stack holds crec's thread-local data too (66 KiB): glibc refuses a
 * stack smaller than that, and keeps a few stacks of this size for the
 * next threads. */
#define EMU_HOLDER_STACK (256u << 10)

static void *holder_main(void *arg)
{
    struct emu_tid_holder *h = arg;

    __atomic_store_n(&h->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    syscall(SYS_futex, &h->tid, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    while (!__atomic_load_n(&h->done, __ATOMIC_ACQUIRE))
        syscall(SYS_futex, &h->done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static void holder_end(struct emu_tid_holder *h)
{
    if (!h)
        return;
    if (h->owner == getpid()) {
        __atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &h->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        pthread_join(h->th, NULL);
    }
    crec_free(h);
}

/* A host thread to hold a new thread's id.  @return it, or NULL. */
static struct emu_tid_holder *holder_new(void)
{
    struct emu_tid_holder *h = crec_calloc(1, sizeof *h);
    uint32_t tid;

    if (!h)
        return NULL;
    h->owner = getpid();
    if (crec_thread_start(&h->th, EMU_HOLDER_STACK, holder_main, h) != 0) {
        crec_free(h);
        return NULL;
    }
    while ((tid = __atomic_load_n(&h->tid, __ATOMIC_ACQUIRE)) == 0)
        syscall(SYS_futex, &h->tid, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return h;
}

void emu_thread_drop_id(struct emu_thread *t)
{
    holder_end(t->holder);
    t->holder = NULL;
}

static void thread_free(struct emu_thread *t)
{
    emu_thread_drop_id(t);
    if (t->ctx)
        uc_context_free(t->ctx);
    crec_emu_xstate_free(t->xs);
    crec_free(t->wait_fds);
    crec_free(t);
}

struct emu_thread *emu_thread_new(crec_emu *e, crec_error *err)
{
    struct emu_sched *s = &e->sched;
    struct emu_thread *t = crec_calloc(1, sizeof *t);
    struct emu_thread **p;
    uc_engine *uc = e->cpu->uc;

    if (!t || !(p = crec_grow(s->th, &s->cap, s->n + 1, sizeof *p, 8))) {
        crec_free(t);
        crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a new thread");
        return NULL;
    }
    s->th = p;
    if (!(t->xs = crec_emu_xstate_new())) {
        thread_free(t);
        crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a new thread");
        return NULL;
    }
    if (uc_context_alloc(uc, &t->ctx) != UC_ERR_OK || uc_context_save(uc, t->ctx) != UC_ERR_OK) {
        thread_free(t);
        crec_error_set(err, CREC_ERR_EMU, "can't save the registers of a new thread");
        return NULL;
    }
    t->id = ++s->last_id;
    if (t->id == 1) {
        t->tid = (uint32_t)getpid(); /* the first thread's tid is the pid */
    } else if ((t->holder = holder_new()) != NULL) {
        t->tid = t->holder->tid;
    } else {
        thread_free(t);
        crec_error_set(err, CREC_ERR_LIMIT, "can't start a host thread to hold a thread id");
        return NULL;
    }
    t->deadline = -1;
    t->sigmask = e->sigmask;
    crec_emu_cpu_xstate_save(e->cpu, t->xs); /* clone copies the registers, these too */
    s->th[s->n++] = t;
    s->nlive++;
    return t;
}

int emu_sched_init(crec_emu *e, crec_error *err)
{
    struct emu_sched *s = &e->sched;
    struct emu_thread *t;

    s->slice = e->opt.slice ? e->opt.slice : CREC_EMU_DEFAULT_SLICE;
    s->cpus = e->opt.cpus ? e->opt.cpus : 1;
    s->chaos = e->opt.chaos;
    s->rng = e->opt.chaos_seed;
    if (uc_context_alloc(e->cpu->uc, &s->scratch) != UC_ERR_OK)
        return crec_error_set(err, CREC_ERR_EMU, "can't allocate a CPU context");
    t = emu_thread_new(e, err);
    if (!t)
        return err ? err->code : CREC_ERR_NOMEM;
    s->cur = t;
    s->slice_end = slice_len(s);
    return CREC_OK;
}

void emu_sched_free(crec_emu *e)
{
    struct emu_sched *s = &e->sched;

    for (size_t i = 0; i < s->n; i++)
        thread_free(s->th[i]);
    crec_free(s->th);
    if (s->scratch)
        uc_context_free(s->scratch);
    memset(s, 0, sizeof *s);
}

struct emu_thread *emu_thread_by_tid(crec_emu *e, uint32_t tid)
{
    struct emu_sched *s = &e->sched;

    for (size_t i = 0; i < s->n; i++)
        if (s->th[i]->tid == tid && s->th[i]->state != EMU_TH_EXITED)
            return s->th[i];
    return NULL;
}

static uint64_t thread_icount(const crec_emu *e, const struct emu_thread *t)
{
    const struct emu_sched *s = &e->sched;

    if (t != s->cur)
        return t->icount;
    return emu_running_icount(e, crec_emu_cpu_icount(e->cpu));
}

uint32_t crec_emu_thread(const crec_emu *e)
{
    return e->sched.cur ? e->sched.cur->id : 0;
}

uint64_t crec_emu_thread_icount(const crec_emu *e)
{
    return emu_running_icount(e, crec_emu_cpu_icount(e->cpu));
}

size_t crec_emu_threads(const crec_emu *e, struct crec_emu_thread_info *out, size_t max)
{
    const struct emu_sched *s = &e->sched;
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++) {
        const struct emu_thread *t = s->th[i];
        if (t->state == EMU_TH_EXITED)
            continue;
        if (n < max)
            out[n] = (struct crec_emu_thread_info){t->id, t->tid, t->parent,
                                                   thread_icount(e, t), t == s->cur};
        n++;
    }
    return n;
}

int crec_emu_thread_regs(crec_emu *e, uint32_t id, crec_regs *r, crec_error *err)
{
    struct emu_sched *s = &e->sched;
    uc_engine *uc = e->cpu->uc;
    int rc;

    for (size_t i = 0; i < s->n; i++) {
        struct emu_thread *t = s->th[i];
        if (t->id != id)
            continue;
        if (t == s->cur)
            return crec_emu_regs_get(e->cpu, r, err);
        /* the engine reads registers: lend it the thread's for a moment */
        if (uc_context_save(uc, s->scratch) != UC_ERR_OK ||
            uc_context_restore(uc, t->ctx) != UC_ERR_OK)
            return crec_error_set(err, CREC_ERR_EMU, "can't read the registers of thread %u", id);
        rc = crec_emu_regs_get(e->cpu, r, err);
        uc_context_restore(uc, s->scratch);
        return rc;
    }
    return crec_error_set(err, CREC_ERR_NOTFOUND, "no thread %u", id);
}

/* ---- blocking and waking ------------------------------------------------------ */

int64_t emu_block(crec_emu *e, int wait, int64_t deadline, int64_t timeout_ret)
{
    struct emu_thread *t = e->sched.cur;

    t->state = EMU_TH_BLOCKED;
    t->wait = wait;
    t->deadline = deadline;
    t->timeout_ret = timeout_ret;
    t->woken = 0;
    t->retry = 0;
    return EMU_BLOCKED;
}

void emu_wake(crec_emu *e, struct emu_thread *t, int64_t ret)
{
    (void)e;
    if (t->state != EMU_TH_BLOCKED)
        return;
    t->state = EMU_TH_RUNNABLE;
    t->wait = EMU_WAIT_NONE;
    t->woken = 1;
    t->wake_ret = ret;
}

void emu_yield(crec_emu *e)
{
    if (e->sched.nlive > 1) {
        e->sched.want_switch = 1;
        crec_emu_cpu_stop(e->cpu); /* after the syscall */
    }
}

/* Is guest fd `gfd` (on host fd `h`) one that would make a read wait? */
static int fd_would_wait(int h, short events)
{
    struct pollfd p = {h, events, 0};

    if (h < 0 || (fcntl(h, F_GETFL) & O_NONBLOCK))
        return 0; /* a bad fd fails at once; a non-blocking one says EAGAIN */
    return poll(&p, 1, 0) == 0;
}

/* The host fds a poll-like syscall waits on, into t->wait_fds; its timeout
 * as a deadline (-1: none; 0 in *zero: it does not wait).  @return 0, or
 * -1 if the arguments are not readable (the handler then says so). */
static int poll_set(crec_emu *e, struct emu_thread *t, uint64_t nr, const uint64_t a[6],
                    int64_t *deadline, int *zero)
{
    uint64_t tsa = 0, bits[3][1024 / 64];
    int64_t ms = -1;
    unsigned n = 0;

    *deadline = -1, *zero = 0;
    switch (nr) {
    case 7:   /* poll(fds, n, ms) */
    case 271: /* ppoll(fds, n, ts, mask, size) */
        n = a[1] > 1024 ? 1024 : (unsigned)a[1];
        if (nr == 7)
            ms = (int)a[2];
        else
            tsa = a[2];
        break;
    case 23:  /* select(n, r, w, x, tv) */
    case 270: /* pselect6(n, r, w, x, ts, mask) */
        tsa = a[4];
        if ((int)a[0] < 0 || a[0] > 1024)
            return -1;
        break;
    case 232: /* epoll_wait(ep, events, max, ms) */
    case 281: /* epoll_pwait(ep, events, max, ms, mask, size) */
        ms = (int)a[3];
        n = 1;
        break;
    case 441: /* epoll_pwait2(ep, events, max, ts, mask, size) */
        tsa = a[3];
        n = 1;
        break;
    }
    if (tsa) { /* a timespec (a timeval for select) */
        uint64_t ts[2];
        if (emu_copy_in(e, ts, tsa, sizeof ts) != 0)
            return -1;
        if ((int64_t)ts[0] < 0 || (int64_t)ts[1] < 0)
            return -1;
        if (nr == 23)
            ts[1] *= 1000;
        *zero = ts[0] == 0 && ts[1] == 0;
        *deadline = emu_now_ns() + (ts[0] > 1000000000ull ? 1000000000ll * 1000000000 :
                                    (int64_t)ts[0] * 1000000000 + (int64_t)ts[1]);
    } else if (ms >= 0) {
        *zero = ms == 0;
        *deadline = emu_now_ns() + ms * 1000000ll;
    }
    if (nr == 23 || nr == 270) { /* the fd sets, as pollfds */
        unsigned nfds = (unsigned)a[0], words = (nfds + 63) / 64;
        memset(bits, 0, sizeof bits);
        for (int k = 0; k < 3; k++)
            if (a[1 + k] && words && emu_copy_in(e, bits[k], a[1 + k], words * 8) != 0)
                return -1;
        for (unsigned fd = 0; fd < nfds; fd++) {
            short ev = 0;
            for (int k = 0; k < 3; k++)
                if (bits[k][fd / 64] >> (fd % 64) & 1)
                    ev |= k == 0 ? POLLIN : k == 1 ? POLLOUT : POLLPRI;
            if (ev)
                n++;
        }
    }
    if (n > t->capwait_fds) {
        struct pollfd *p = crec_realloc(t->wait_fds, n * sizeof *p);
        if (!p)
            return -1;
        t->wait_fds = p, t->capwait_fds = n;
    }
    t->nwait_fds = 0;
    if (nr == 7 || nr == 271) {
        for (unsigned i = 0; i < n; i++) {
            uint8_t g[8];
            int gfd;
            if (emu_copy_in(e, g, a[0] + 8 * (uint64_t)i, 8) != 0)
                return -1;
            gfd = (int)(int32_t)crec_le_get(g, 4);
            if (gfd < 0)
                continue;
            t->wait_fds[t->nwait_fds++] = (struct pollfd){emu_fd_host(e, (uint64_t)gfd),
                                                          (short)crec_le_get(g + 4, 2), 0};
        }
    } else if (nr == 23 || nr == 270) {
        for (unsigned fd = 0; fd < (unsigned)a[0]; fd++) {
            short ev = 0;
            for (int k = 0; k < 3; k++)
                if (bits[k][fd / 64] >> (fd % 64) & 1)
                    ev |= k == 0 ? POLLIN : k == 1 ? POLLOUT : POLLPRI;
            if (ev)
                t->wait_fds[t->nwait_fds++] = (struct pollfd){emu_fd_host(e, fd), ev, 0};
        }
    } else {
        t->wait_fds[t->nwait_fds++] = (struct pollfd){emu_fd_host(e, a[0]), POLLIN, 0};
    }
    return 0;
}

/* Would these fds make the call wait (none ready, none bad)? */
static int fds_would_wait(struct pollfd *fds, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (fds[i].fd < 0)
            return 0; /* a bad fd: the handler reports it */
    return poll(fds, n, 0) == 0;
}

int64_t emu_fd_wait(crec_emu *e, uint64_t nr, const uint64_t a[6])
{
    struct emu_thread *t = e->sched.cur;
    int64_t deadline = -1;
    short events = 0;
    int h, zero;

    if (e->sched.nlive < 2)
        return 0; /* nothing else could run meanwhile: the host call may wait */
    switch (nr) {
    case 0:   /* read */
    case 19:  /* readv */
    case 45:  /* recvfrom */
    case 47:  /* recvmsg */
    case 43:  /* accept */
    case 288: /* accept4 */
        events = POLLIN;
        break;
    case 1:   /* write, writev, sendto, sendmsg: to a full pipe or socket that */
    case 20:  /* another thread of the program reads */
    case 44:
    case 46:
        events = POLLOUT;
        break;
    case 7:   /* poll, ppoll, select, pselect6, epoll_wait, epoll_pwait(2): */
    case 271: /* the fds another thread may make ready */
    case 23:
    case 270:
    case 232:
    case 281:
    case 441: {
        /* the mask it waits with (ppoll, pselect6, epoll_pwait(2)) */
        uint64_t sig[2] = {0, 0};
        int64_t r = 0;
        if (nr == 271 || nr == 281 || nr == 441)
            sig[0] = nr == 271 ? a[3] : a[4], sig[1] = nr == 271 ? a[4] : a[5];
        else if (nr == 270 && a[5] && emu_copy_in(e, sig, a[5], sizeof sig) != 0)
            return 0; /* the handler reports it */
        if (poll_set(e, t, nr, a, &deadline, &zero) != 0 || zero ||
            !fds_would_wait(t->wait_fds, t->nwait_fds))
            return 0;
        if ((r = emu_signal_wait_mask(e, sig[0], sig[1])) != 0)
            return r;
    }
        emu_block(e, EMU_WAIT_FD, deadline, 0);
        t->wait_poll = 1;
        return EMU_BLOCKED;
    default:
        return 0;
    }
    h = emu_fd_host(e, a[0]);
    if (events == POLLOUT) { /* a file or a terminal is always writable */
        struct stat st;
        if (fstat(h, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
            return 0;
    }
    if (!fd_would_wait(h, events))
        return 0;
    if (!t->capwait_fds) {
        if (!(t->wait_fds = crec_malloc(sizeof *t->wait_fds)))
            return 0;
        t->capwait_fds = 1;
    }
    t->wait_fds[0] = (struct pollfd){h, events, 0};
    t->nwait_fds = 1;
    t->wait_poll = 0;
    emu_block(e, EMU_WAIT_FD, -1, 0);
    return EMU_BLOCKED;
}

/* A poll, select or epoll_wait that timed out reports nothing ready: its
 * revents, or its fd sets, are cleared as the kernel clears them. */
static void poll_timed_out(crec_emu *e, const struct crec_emu_syscall *sc)
{
    const uint64_t *a = sc->args;

    if (sc->nr == 7 || sc->nr == 271) {
        uint8_t zero[2] = {0, 0};
        for (uint64_t i = 0; i < a[1] && i < 1024; i++)
            if (emu_copy_out(e, a[0] + 8 * i + 6, zero, 2) != 0)
                return;
    } else if (sc->nr == 23 || sc->nr == 270) {
        uint64_t zero[1024 / 64] = {0}, words = (a[0] + 63) / 64;
        for (int k = 0; k < 3; k++)
            if (a[1 + k] && words && words <= 1024 / 64)
                emu_copy_out(e, a[1 + k], zero, words * 8);
    }
}

static int signal_waiter(const crec_emu *e);

/* Does a blocked thread wait on a futex shared with other processes? */
static int shared_waiter(const crec_emu *e)
{
    const struct emu_sched *s = &e->sched;

    for (size_t i = 0; i < s->n; i++)
        if (s->th[i]->state == EMU_TH_BLOCKED && s->th[i]->wait == EMU_WAIT_FUTEX &&
            s->th[i]->futex_shared)
            return 1;
    return 0;
}

/* Wake the threads whose timeout passed or whose fd is ready; wait on the
 * host up to `wait_ns` (0: just look, -1: as long as it takes) for one.
 * @return how many were woken. */
static int wake_outside(crec_emu *e, int64_t wait_ns)
{
    struct emu_sched *s = &e->sched;
    struct pollfd fds[256];
    struct emu_thread *who[256];
    nfds_t nfd = 0;
    int64_t now = emu_now_ns(), nearest = emu_timers_next(e);
    int woken = emu_timers_fire(e, now);

    for (size_t i = 0; i < s->n; i++) {
        struct emu_thread *t = s->th[i];
        if (t->state != EMU_TH_BLOCKED)
            continue;
        if (t->deadline >= 0 && t->deadline <= now) {
            emu_wake(e, t, t->timeout_ret);
            woken++;
            continue;
        }
        if (t->deadline >= 0 && (nearest < 0 || t->deadline < nearest))
            nearest = t->deadline;
        for (unsigned k = 0; t->wait == EMU_WAIT_FD && k < t->nwait_fds && nfd < 256; k++) {
            fds[nfd] = t->wait_fds[k];
            fds[nfd].revents = 0;
            who[nfd++] = t;
        }
    }
    emu_futex_shared_poll(e); /* another process may have changed a shared futex */
    for (size_t i = 0; i < s->n; i++)
        woken += s->th[i]->state == EMU_TH_RUNNABLE && s->th[i]->woken;
    if (woken || (wait_ns == 0 && nfd == 0))
        return woken;
    if (wait_ns != 0 && nearest >= 0 && (wait_ns < 0 || nearest - now < wait_ns))
        wait_ns = nearest - now;
    if (shared_waiter(e) && (wait_ns < 0 || wait_ns > EMU_SHARED_POLL_NS))
        wait_ns = EMU_SHARED_POLL_NS;
    if (wait_ns < 0 && nfd == 0 && !signal_waiter(e))
        return 0; /* nothing can come: the caller sees a deadlock */
    {
        /* the one host wait of the guest's threads (wait.c); a signal to
         * crec ends it too */
        int r = emu_block_until(e, wait_ns < 0 ? EMU_FOREVER : (uint64_t)(now + wait_ns),
                                fds, (unsigned)nfd);
        for (nfds_t i = 0; r > 0 && i < nfd; i++)
            if (fds[i].revents && who[i]->state == EMU_TH_BLOCKED) {
                emu_wake(e, who[i], 0);
                who[i]->retry = 1; /* the handler runs again: now it won't wait */
                woken++;
            }
    }
    now = emu_now_ns();
    woken += emu_timers_fire(e, now);
    emu_hostsig_arm(e);
    {
        /* signals from outside: a blocked thread that takes one is woken */
        size_t blocked = 0, after = 0;
        for (size_t i = 0; i < s->n; i++)
            blocked += s->th[i]->state == EMU_TH_BLOCKED;
        emu_hostsig_import(e);
        if (!e->done)
            emu_signal_kick(e);
        for (size_t i = 0; i < s->n; i++)
            after += s->th[i]->state == EMU_TH_BLOCKED;
        woken += (int)(blocked - after);
    }
    for (size_t i = 0; i < s->n; i++) {
        struct emu_thread *t = s->th[i];
        if (t->state == EMU_TH_BLOCKED && t->deadline >= 0 && t->deadline <= now) {
            emu_wake(e, t, t->timeout_ret);
            woken++;
        }
    }
    return woken;
}

/* Does some blocked thread wait for a signal, which another process may
 * send (rt_sigsuspend, pause, rt_sigtimedwait)? */
static int signal_waiter(const crec_emu *e)
{
    const struct emu_sched *s = &e->sched;

    for (size_t i = 0; i < s->n; i++)
        if (s->th[i]->state == EMU_TH_BLOCKED &&
            (s->th[i]->wait == EMU_WAIT_SUSPEND || s->th[i]->wait == EMU_WAIT_SIGNAL))
            return 1;
    return 0;
}

/* Does some blocked thread wait for a timeout or an fd, or a timer send a
 * signal? */
static int someone_waits_outside(const crec_emu *e)
{
    const struct emu_sched *s = &e->sched;

    if (emu_timers_next(e) >= 0 || signal_waiter(e) || shared_waiter(e))
        return 1;
    for (size_t i = 0; i < s->n; i++)
        if (s->th[i]->state == EMU_TH_BLOCKED &&
            (s->th[i]->deadline >= 0 || s->th[i]->wait == EMU_WAIT_FD))
            return 1;
    return 0;
}

/* The next thread to run after `s->cur`, or NULL if none can run now.
 * `others_only`: not the current thread. */
static struct emu_thread *pick(crec_emu *e, int others_only)
{
    struct emu_sched *s = &e->sched;
    uint64_t now = crec_emu_cpu_icount(e->cpu);
    size_t at = 0, cand[64], nc = 0;

    for (size_t i = 0; i < s->n; i++)
        if (s->th[i] == s->cur)
            at = i;
    if (s->chaos) {
        /* any runnable thread but a starved one, unless only starved ones are */
        for (int pass = 0; pass < 2 && nc == 0; pass++)
            for (size_t i = 0; i < s->n && nc < 64; i++) {
                struct emu_thread *t = s->th[i];
                if (t->state != EMU_TH_RUNNABLE || (others_only && t == s->cur))
                    continue;
                if (pass == 0 && t->starved_until > now)
                    continue;
                cand[nc++] = i;
            }
        return nc ? s->th[cand[chaos_next(s) % nc]] : NULL;
    }
    for (size_t k = 1; k <= s->n; k++) {
        struct emu_thread *t = s->th[(at + k) % s->n];
        if (t->state == EMU_TH_RUNNABLE && !(others_only && t == s->cur))
            return t;
    }
    return NULL;
}

/* What a blocked thread waits for, for the deadlock message. */
static int describe_wait(const struct emu_thread *t, char *buf, size_t size)
{
    switch (t->wait) {
    case EMU_WAIT_FUTEX:
        return snprintf(buf, size, "thread %u (tid %u) waits on the futex at 0x%llx", t->id,
                        t->tid, (unsigned long long)t->futex_addr);
    case EMU_WAIT_FD:
        return snprintf(buf, size, "thread %u (tid %u) waits on an fd", t->id, t->tid);
    case EMU_WAIT_SIGNAL:
    case EMU_WAIT_SUSPEND:
        return snprintf(buf, size, "thread %u (tid %u) waits for a signal", t->id, t->tid);
    default:
        return snprintf(buf, size, "thread %u (tid %u) is blocked in syscall %llu", t->id,
                        t->tid, (unsigned long long)t->sc.nr);
    }
}

static void deadlock(crec_emu *e)
{
    struct emu_sched *s = &e->sched;
    char msg[512];
    size_t o = (size_t)snprintf(msg, sizeof msg, "deadlock: every thread is blocked");

    for (size_t i = 0; i < s->n && o < sizeof msg; i++)
        if (s->th[i]->state == EMU_TH_BLOCKED) {
            o += (size_t)snprintf(msg + o, sizeof msg - o, "; ");
            if (o < sizeof msg)
                o += (size_t)describe_wait(s->th[i], msg + o, sizeof msg - o);
        }
    emu_exit(e, 0, 0, msg);
    e->exit.deadlock = 1;
}

/* ---- switching ---------------------------------------------------------------- */

static void switch_to(crec_emu *e, struct emu_thread *next, int exact)
{
    struct emu_sched *s = &e->sched;
    struct emu_thread *cur = s->cur;
    uc_engine *uc = e->cpu->uc;
    uint64_t now = crec_emu_cpu_icount(e->cpu);

    if (s->have_resume_rip) /* RIP is stale after a stop in a block hook */
        emu_reg_set(e->cpu, UC_X86_REG_RIP, s->resume_rip);
    s->have_resume_rip = 0;
    cur->icount += now - s->cur_since;
    cur->sigmask = e->sigmask;
    if (cur->state != EMU_TH_EXITED) {
        uc_context_save(uc, cur->ctx);
        crec_emu_cpu_xstate_save(e->cpu, cur->xs);
    }
    uc_context_restore(uc, next->ctx);
    crec_emu_cpu_xstate_load(e->cpu, next->xs);
    crec_emu_cpu_set_icount(e->cpu, now); /* forget the block of the thread before */
    e->sigmask = next->sigmask;
    if (s->chaos && cur->state == EMU_TH_RUNNABLE && chaos_next(s) % 8 == 0)
        cur->starved_until = now + chaos_next(s) % (20 * s->slice); /* rr's starvation */
    s->cur = next;
    s->cur_since = now;
    s->slice_end = now + slice_len(s);
    if (e->obs.on_switch) {
        struct crec_emu_switch sw = {cur->id, next->id, cur->icount, next->icount, exact};
        e->obs.on_switch(e->obs.ctx, &sw);
    }
    if (cur->state == EMU_TH_EXITED) { /* reap it: its registers are no use now */
        size_t j = 0;
        for (size_t i = 0; i < s->n; i++)
            if (s->th[i] != cur)
                s->th[j++] = s->th[i];
        s->n = j;
        thread_free(cur);
    }
}

/* The syscall a thread was blocked in completes.  @return 0 if it blocked
 * again (a retried handler found nothing yet). */
static int complete(crec_emu *e, struct emu_thread *t)
{
    int64_t ret = t->wake_ret;

    t->woken = 0;
    e->sc = t->sc;
    e->sc_eintr = t->interrupted; /* a signal ended it: SA_RESTART may run it again */
    t->interrupted = 0;
    if (!t->retry && t->wait_poll) /* it timed out */
        poll_timed_out(e, &e->sc);
    t->wait_poll = 0;
    if (t->retry) {
        t->retry = 0;
        e->sc_deadline_set = 0; /* (its wait had the thread's own deadline) */
        ret = emu_syscall_call(e, &e->sc);
        if (ret == EMU_BLOCKED) {
            t->sc = e->sc;
            return 0;
        }
    }
    emu_syscall_finish(e, ret, t->sc_next_rip);
    return 1;
}

int emu_sched_block(crec_emu *e, uint64_t addr, uint32_t ninsns, uint64_t icount)
{
    struct emu_sched *s = &e->sched;
    uint64_t before = icount - ninsns;
    uint64_t visit_end;

    if (s->nlive < 2 || s->exact_armed)
        return 0;
    /* The slice ends at the first block start at or after slice_end; with
     * --chaos at exactly slice_end, inside a block if need be.  Inside
     * means inside this visit: a run of instructions crec executes itself
     * (or an emulated RDTSC) leaves the block sooner, and a stop set past
     * it would fall in the block that follows, whose translation has no
     * hook for it. */
    visit_end = before + crec_emu_cpu_block_insns(e->cpu);
    if (before < s->slice_end && (!s->chaos || visit_end <= s->slice_end))
        return 0;
    wake_outside(e, 0);
    if (!pick(e, 1)) { /* nobody else can run: a new slice */
        s->slice_end = before + slice_len(s);
        return 0;
    }
    if (before < s->slice_end) {
        if (crec_emu_cpu_stop_inside(e->cpu, s->slice_end) == 0) {
            s->exact_armed = 1;
            return 1; /* the block is entered again, with the stop set */
        }
        s->slice_end = before; /* no hook: switch at the block start instead */
    }
    s->want_switch = 1;
    s->have_resume_rip = 1;
    s->resume_rip = addr;
    crec_emu_cpu_stop(e->cpu); /* before the block, which is taken back */
    return 1;
}

void emu_sched_stopped(crec_emu *e)
{
    struct emu_sched *s = &e->sched;
    int exact = 0;

    if (s->exact_armed) {
        s->exact_armed = 0;
        if (crec_emu_cpu_icount(e->cpu) == s->slice_end && !e->cpu->until_armed) {
            exact = 1; /* stopped at that very instruction: RIP is right */
            s->want_switch = 1;
        } else { /* stopped sooner, for something else: the stop is void */
            e->cpu->until_armed = 0;
            emu_until_clear(e->cpu);
        }
    }
    if (!s->want_switch)
        return;
    s->want_switch = 0;
    for (;;) {
        struct emu_thread *next;
        if (s->cur->state == EMU_TH_RUNNABLE && !exact && !s->have_resume_rip &&
            !s->cur->woken)
            next = pick(e, 1); /* a yield: anyone else first */
        else
            next = pick(e, 0);
        if (!next && s->cur->state == EMU_TH_RUNNABLE)
            next = s->cur;
        while (!next) {
            if (!someone_waits_outside(e)) {
                deadlock(e);
                return;
            }
            wake_outside(e, -1);
            if (e->done)
                return; /* a timer's signal ended the process */
            next = pick(e, 0);
        }
        if (next != s->cur) {
            switch_to(e, next, exact);
        } else {
            if (s->have_resume_rip)
                emu_reg_set(e->cpu, UC_X86_REG_RIP, s->resume_rip);
            s->have_resume_rip = 0;
            s->slice_end = crec_emu_cpu_icount(e->cpu) + slice_len(s);
        }
        exact = 0;
        if (next->woken && !complete(e, next))
            continue; /* it blocked again */
        return;
    }
}

/* fork's child and execve (sys_process.c): the calling thread is the only
 * one of the process from now on, as Linux leaves it. */
void emu_sched_only_current(crec_emu *e)
{
    struct emu_sched *s = &e->sched;
    size_t j = 0;

    for (size_t i = 0; i < s->n; i++) {
        if (s->th[i] == s->cur)
            s->th[j++] = s->th[i];
        else
            thread_free(s->th[i]);
    }
    s->n = j;
    s->nlive = 1;
}

/* ---- exit ---------------------------------------------------------------------- */

/* The kernel's work at a thread's exit: walk its robust list (mutexes it
 * held get FUTEX_OWNER_DIED and a waiter is woken), then clear and wake
 * clear_child_tid, which is what pthread_join waits on. */
static void robust_list_walk(crec_emu *e, struct emu_thread *t)
{
    uint64_t head[3], entry, off;
    int limit = 2048;

    if (!t->robust_list || emu_copy_in(e, head, t->robust_list, sizeof head) != 0)
        return;
    off = head[1];
    for (entry = head[0]; entry && entry != t->robust_list && limit-- > 0;) {
        uint64_t addr = entry + off, next;
        uint32_t w;
        if (emu_copy_in(e, &next, entry, 8) != 0)
            break;
        if (emu_copy_in(e, &w, addr, 4) == 0 && (w & 0x3fffffff) == t->tid) {
            w = (w & 0x80000000u) | 0x40000000u; /* FUTEX_WAITERS kept, OWNER_DIED */
            if (emu_copy_out(e, addr, &w, 4) == 0 && (w & 0x80000000u))
                emu_futex_wake(e, addr, 1, ~0u);
        }
        entry = next;
    }
}

void emu_thread_exit(crec_emu *e, int status)
{
    struct emu_sched *s = &e->sched;
    struct emu_thread *t = s->cur;
    struct crec_emu_thread_event ev = {CREC_EMU_THREAD_EXIT, t->id, t->parent, t->tid,
                                       status, 0};
    uint32_t zero = 0;

    robust_list_walk(e, t);
    if (t->clear_child_tid && emu_copy_out(e, t->clear_child_tid, &zero, 4) == 0) {
        ev.cleared = t->clear_child_tid;
        emu_futex_wake(e, t->clear_child_tid, 1, ~0u);
    }
    ev.out = e->sc.out, ev.n_out = e->sc.n_out, ev.out_overflow = e->sc.out_overflow;
    if (e->obs.on_thread)
        e->obs.on_thread(e->obs.ctx, &ev);
    t->state = EMU_TH_EXITED;
    emu_thread_drop_id(t); /* its id is free now, as on Linux */
    s->nlive--;
    s->want_switch = 1;
    crec_emu_cpu_stop(e->cpu);
}

void emu_sched_restart(crec_emu *e)
{
    struct emu_sched *s = &e->sched;

    s->cur->id = 1;
    s->cur->parent = 0;
    s->cur->icount = 0;
    s->last_id = 1;
    s->cur_since = 0;
    s->have_resume_rip = 0;
    crec_emu_cpu_set_icount(e->cpu, 0);
    s->slice_end = slice_len(s);
}
