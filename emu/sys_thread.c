/*
 * sys_thread.c - threads: clone and clone3 for a thread (every flag
 * glibc's pthread_create passes), futex, exit of one thread, thread ids,
 * tgkill/tkill, sched_yield and the CPU affinity the guest is shown.
 *
 * A clone without CLONE_THREAD|CLONE_VM makes a process (fork, vfork,
 * posix_spawn): not supported yet (issue 15), with one line.
 *
 * Futex waiters are the blocked threads themselves (emu_thread.futex_*),
 * woken first come, first served.  The futex word is read and written as
 * the kernel does, through emu_copy_in/out (a write is a kernel write the
 * recording notes).  Waits with a timeout end on the host's clock.
 */
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu/emu_int.h"

/* ---- futex ---------------------------------------------------------------- */

#define FUTEX_TID_MASK_ 0x3fffffffu
#define FUTEX_WAITERS_ 0x80000000u
#define FUTEX_OWNER_DIED_ 0x40000000u

/* The blocked thread that waits longest on addr (PI waiters or not, and
 * matching bitset), or NULL. */
static struct emu_thread *first_waiter(crec_emu *e, uint64_t addr, int pi, uint32_t bitset)
{
    struct emu_sched *s = &e->sched;
    struct emu_thread *best = NULL;

    for (size_t i = 0; i < s->n; i++) {
        struct emu_thread *t = s->th[i];
        if (t->state != EMU_TH_BLOCKED || t->wait != EMU_WAIT_FUTEX || t->futex_addr != addr ||
            t->futex_pi != pi || !(t->futex_bitset & bitset))
            continue;
        if (!best || t->futex_seq < best->futex_seq)
            best = t;
    }
    return best;
}

int emu_futex_wake(crec_emu *e, uint64_t addr, int n, uint32_t bitset)
{
    int woken = 0;
    struct emu_thread *t;

    while (woken < n && (t = first_waiter(e, addr, 0, bitset))) {
        emu_wake(e, t, 0);
        woken++;
    }
    return woken;
}

/* Move up to n waiters of addr to addr2 (they are not woken). */
static int futex_requeue(crec_emu *e, uint64_t addr, uint64_t addr2, int n)
{
    int moved = 0;
    struct emu_thread *t;

    while (moved < n && (t = first_waiter(e, addr, 0, ~0u))) {
        t->futex_addr = addr2;
        moved++;
    }
    return moved;
}

/* Block the calling thread on futex addr. */
static int64_t futex_block(crec_emu *e, uint64_t addr, uint32_t bitset, int pi,
                           int64_t deadline)
{
    struct emu_thread *t = e->sched.cur;

    emu_block(e, EMU_WAIT_FUTEX, deadline, -ETIMEDOUT);
    t->futex_shared = 0;
    t->futex_addr = addr;
    t->futex_bitset = bitset;
    t->futex_pi = pi;
    t->requeue_pi = 0;
    t->futex_seq = ++e->sched.wait_counter;
    return EMU_BLOCKED;
}

/* The timeout argument of a wait: relative (FUTEX_WAIT) or absolute, on
 * CLOCK_MONOTONIC or (FUTEX_CLOCK_REALTIME) CLOCK_REALTIME.
 * @return 0 with *deadline (-1: none), or -errno. */
static int64_t futex_deadline(crec_emu *e, uint64_t uts, int absolute, int realtime,
                              int64_t *deadline)
{
    struct timespec ts;

    *deadline = -1;
    if (!uts)
        return 0;
    if (emu_copy_in(e, &ts, uts, sizeof ts) != 0)
        return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
        return -EINVAL;
    *deadline = absolute ? emu_deadline_abs(realtime, &ts) : emu_deadline_rel(&ts);
    return 0;
}

static int64_t futex_get(crec_emu *e, uint64_t addr, uint32_t *v)
{
    if (addr & 3)
        return -EINVAL;
    return emu_copy_in(e, v, addr, 4) ? -EFAULT : 0;
}

static int64_t futex_put(crec_emu *e, uint64_t addr, uint32_t v)
{
    return emu_copy_out(e, addr, &v, 4) ? -EFAULT : 0;
}

/*
 * A futex of memory shared with other processes (a MAP_SHARED mapping,
 * and not FUTEX_PRIVATE_FLAG: a process-shared semaphore or mutex) may be
 * woken by another process, which is another crec: the host's futex on
 * the same host memory is the one both meet at.  Alone, the thread waits
 * on the host's futex; with other threads to run, it blocks and the
 * scheduler looks at the word now and then (emu_futex_shared_poll), which
 * a futex may do (a wake-up that finds nothing changed is allowed).
 */
static int shared_futex(crec_emu *e, int op, uint64_t addr)
{
    return !(op & FUTEX_PRIVATE_FLAG) && emu_named_shared(e, addr);
}

static int64_t futex_wait_host(crec_emu *e, uint64_t addr, uint32_t val, int64_t deadline,
                               uint32_t bitset)
{
    uint32_t *word = emu_buf(e, addr, 4, CREC_PROT_READ);
    struct timespec ts;
    long r;

    if (!word)
        return -EFAULT;
    ts.tv_sec = deadline / 1000000000;
    ts.tv_nsec = deadline % 1000000000;
    r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET, val, deadline < 0 ? NULL : &ts, NULL,
                bitset);
    return r < 0 ? -errno : 0;
}

static int64_t futex_wait(crec_emu *e, uint64_t addr, uint32_t val, uint64_t uts, int absolute,
                          int realtime, uint32_t bitset, int shared)
{
    uint32_t v;
    int64_t deadline, rc;

    if (bitset == 0)
        return -EINVAL;
    if ((rc = futex_get(e, addr, &v)) != 0)
        return rc;
    if (v != val)
        return -EAGAIN;
    if ((rc = futex_deadline(e, uts, absolute, realtime, &deadline)) != 0)
        return rc;
    if (shared && e->sched.nlive < 2)
        return futex_wait_host(e, addr, val, deadline, bitset);
    rc = futex_block(e, addr, bitset, 0, deadline);
    if (shared) {
        e->sched.cur->futex_shared = 1;
        e->sched.cur->futex_val = val;
    }
    return rc;
}

void emu_futex_shared_poll(crec_emu *e)
{
    struct emu_sched *s = &e->sched;

    for (size_t i = 0; i < s->n; i++) {
        struct emu_thread *t = s->th[i];
        uint32_t v;
        if (t->state == EMU_TH_BLOCKED && t->wait == EMU_WAIT_FUTEX && t->futex_shared &&
            (futex_get(e, t->futex_addr, &v) != 0 || v != t->futex_val))
            emu_wake(e, t, 0);
    }
}

/* A wake of a shared futex: this process's waiters, then the host's (the
 * other processes'). */
static int64_t futex_wake_shared(crec_emu *e, uint64_t addr, int n, uint32_t bitset)
{
    int woken = emu_futex_wake(e, addr, n, bitset);
    uint32_t *word = emu_buf(e, addr, 4, CREC_PROT_READ);
    long r = 0;

    if (woken < n && word)
        r = syscall(SYS_futex, word, FUTEX_WAKE_BITSET, n - woken, NULL, NULL, bitset);
    return woken + (r > 0 ? r : 0);
}

/* FUTEX_WAKE_OP's operation on *addr2: @return the old value's test. */
static int64_t futex_wake_op(crec_emu *e, uint64_t addr, int n, uint64_t addr2, int n2,
                             uint32_t op)
{
    uint32_t old, nw;
    int32_t oparg = (int32_t)(op << 8) >> 20, cmparg = (int32_t)(op << 20) >> 20;
    unsigned kind = (op >> 28) & 7, cmp = (op >> 24) & 15;
    int64_t rc;
    int ok, woken;

    if (op & (8u << 28)) /* FUTEX_OP_OPARG_SHIFT */
        oparg = oparg < 0 || oparg > 31 ? 0 : 1 << oparg;
    if ((rc = futex_get(e, addr2, &old)) != 0)
        return rc;
    switch (kind) {
    case 0: nw = (uint32_t)oparg; break;            /* SET */
    case 1: nw = old + (uint32_t)oparg; break;      /* ADD */
    case 2: nw = old | (uint32_t)oparg; break;      /* OR */
    case 3: nw = old & ~(uint32_t)oparg; break;     /* ANDN */
    case 4: nw = old ^ (uint32_t)oparg; break;      /* XOR */
    default: return -ENOSYS;
    }
    if ((rc = futex_put(e, addr2, nw)) != 0)
        return rc;
    switch (cmp) {
    case 0: ok = (int32_t)old == cmparg; break;
    case 1: ok = (int32_t)old != cmparg; break;
    case 2: ok = (int32_t)old < cmparg; break;
    case 3: ok = (int32_t)old <= cmparg; break;
    case 4: ok = (int32_t)old > cmparg; break;
    case 5: ok = (int32_t)old >= cmparg; break;
    default: return -ENOSYS;
    }
    woken = emu_futex_wake(e, addr, n, ~0u);
    if (ok)
        woken += emu_futex_wake(e, addr2, n2, ~0u);
    return woken;
}

/* Make `t` (or the caller, t NULL) the owner of PI futex addr if it is
 * free.  @return 1 if it now owns it, 0 if another thread does, or -errno. */
static int64_t pi_take(crec_emu *e, uint64_t addr, struct emu_thread *t)
{
    struct emu_thread *me = t ? t : e->sched.cur;
    uint32_t v, owner;
    int64_t rc;

    if ((rc = futex_get(e, addr, &v)) != 0)
        return rc;
    owner = v & FUTEX_TID_MASK_;
    if (owner == me->tid)
        return -EDEADLK;
    if (owner != 0 && emu_thread_by_tid(e, owner))
        return 0;
    /* free, or its owner is gone (it died holding it) */
    v = me->tid | (owner ? FUTEX_OWNER_DIED_ : 0) |
        (first_waiter(e, addr, 1, ~0u) ? FUTEX_WAITERS_ : 0);
    return (rc = futex_put(e, addr, v)) != 0 ? rc : 1;
}

static int64_t futex_lock_pi(crec_emu *e, uint64_t addr, uint64_t uts, int realtime,
                             int try_only)
{
    uint32_t v;
    int64_t deadline, rc = pi_take(e, addr, NULL);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    if (try_only)
        return -EAGAIN;
    if ((rc = futex_deadline(e, uts, 1, realtime, &deadline)) != 0)
        return rc;
    if ((rc = futex_get(e, addr, &v)) != 0 || (rc = futex_put(e, addr, v | FUTEX_WAITERS_)) != 0)
        return rc;
    return futex_block(e, addr, ~0u, 1, deadline);
}

static int64_t futex_unlock_pi(crec_emu *e, uint64_t addr)
{
    struct emu_thread *w;
    uint32_t v;
    int64_t rc;

    if ((rc = futex_get(e, addr, &v)) != 0)
        return rc;
    if ((v & FUTEX_TID_MASK_) != e->sched.cur->tid)
        return -EPERM;
    w = first_waiter(e, addr, 1, ~0u);
    if (!w)
        return futex_put(e, addr, 0);
    w->futex_pi = 0; /* no longer a waiter while it is looked for below */
    v = w->tid | (first_waiter(e, addr, 1, ~0u) ? FUTEX_WAITERS_ : 0);
    w->futex_pi = 1;
    if ((rc = futex_put(e, addr, v)) != 0)
        return rc;
    emu_wake(e, w, 0);
    return 0;
}

/* FUTEX_CMP_REQUEUE_PI: wake one waiter of addr (it takes PI futex addr2
 * if it is free) and move the others to addr2 as PI waiters. */
static int64_t futex_cmp_requeue_pi(crec_emu *e, uint64_t addr, int nwake, uint64_t addr2,
                                    int nmove, uint32_t val3)
{
    struct emu_thread *t;
    uint32_t v;
    int64_t rc;
    int done = 0;

    if (nwake != 1 || addr == addr2)
        return -EINVAL;
    if ((rc = futex_get(e, addr, &v)) != 0)
        return rc;
    if (v != val3)
        return -EAGAIN;
    while ((t = first_waiter(e, addr, 0, ~0u)) && t->requeue_pi == addr2) {
        if (done == 0) {
            rc = pi_take(e, addr2, t);
            if (rc < 0)
                return rc;
            if (rc == 1) {
                emu_wake(e, t, 0);
                done++;
                continue;
            }
        }
        if (done - 1 >= nmove)
            break;
        t->futex_addr = addr2;
        t->futex_pi = 1;
        if ((rc = futex_get(e, addr2, &v)) != 0 ||
            (rc = futex_put(e, addr2, v | FUTEX_WAITERS_)) != 0)
            return rc;
        done++;
    }
    return done;
}

static int64_t sys_futex(crec_emu *e, const uint64_t a[6])
{
    int op = (int)a[1], cmd = op & FUTEX_CMD_MASK;
    int realtime = (op & FUTEX_CLOCK_REALTIME) != 0;
    uint64_t addr = a[0], uts = a[3], addr2 = a[4];
    uint32_t val = (uint32_t)a[2], val3 = (uint32_t)a[5], v;
    int64_t rc;

    int shared = shared_futex(e, op, addr);

    switch (cmd) {
    case FUTEX_WAIT:
        return futex_wait(e, addr, val, uts, 0, realtime, ~0u, shared);
    case FUTEX_WAIT_BITSET:
        return futex_wait(e, addr, val, uts, 1, realtime, val3, shared);
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
        if (cmd == FUTEX_WAKE_BITSET && val3 == 0)
            return -EINVAL;
        if (addr & 3)
            return -EINVAL;
        if (shared)
            return futex_wake_shared(e, addr, (int)(val > INT32_MAX ? INT32_MAX : val),
                                     cmd == FUTEX_WAKE ? ~0u : val3);
        return emu_futex_wake(e, addr, (int)(val > INT32_MAX ? INT32_MAX : val),
                              cmd == FUTEX_WAKE ? ~0u : val3);
    case FUTEX_CMP_REQUEUE:
        if ((rc = futex_get(e, addr, &v)) != 0)
            return rc;
        if (v != val3)
            return -EAGAIN;
        /* fall through */
    case FUTEX_REQUEUE: {
        int n = val > INT32_MAX ? INT32_MAX : (int)val;
        int n2 = uts > INT32_MAX ? INT32_MAX : (int)uts;
        int woken = emu_futex_wake(e, addr, n, ~0u);
        int moved = futex_requeue(e, addr, addr2, n2);
        return cmd == FUTEX_REQUEUE ? woken : woken + moved;
    }
    case FUTEX_WAKE_OP:
        return futex_wake_op(e, addr, (int)(val > INT32_MAX ? INT32_MAX : val), addr2,
                             uts > INT32_MAX ? INT32_MAX : (int)uts, val3);
    case FUTEX_LOCK_PI:
        return futex_lock_pi(e, addr, uts, 1, 0);
    case FUTEX_LOCK_PI2:
        return futex_lock_pi(e, addr, uts, realtime, 0);
    case FUTEX_TRYLOCK_PI:
        return futex_lock_pi(e, addr, 0, 1, 1);
    case FUTEX_UNLOCK_PI:
        return futex_unlock_pi(e, addr);
    case FUTEX_WAIT_REQUEUE_PI:
        rc = futex_wait(e, addr, val, uts, 1, realtime, ~0u, 0);
        if (rc == EMU_BLOCKED)
            e->sched.cur->requeue_pi = addr2;
        return rc;
    case FUTEX_CMP_REQUEUE_PI:
        return futex_cmp_requeue_pi(e, addr, (int)val, addr2,
                                    uts > INT32_MAX ? INT32_MAX : (int)uts, val3);
    default:
        return -ENOSYS;
    }
}

/* ---- clone -------------------------------------------------------------------- */

/* Flags a thread may be created with; the rest belong to processes and
 * namespaces (CLONE_SYSVSEM: one process, so its semaphores are shared). */
#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |    \
                      CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |                  \
                      CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID | CLONE_DETACHED)

/*
 * A new thread: the caller's registers, but rax 0 (clone returns 0 in the
 * child), the given stack and TLS, and resuming after the syscall as the
 * syscall instruction would (rcx = the return address, r11 = rflags).
 */
static int64_t clone_thread(crec_emu *e, uint64_t flags, uint64_t stack, uint64_t ptid,
                            uint64_t ctid, uint64_t tls)
{
    struct emu_thread *parent = e->sched.cur, *t;
    struct crec_emu_thread_event ev = {CREC_EMU_THREAD_CREATE, 0, parent->id, 0, 0, 0};
    uint64_t rip = emu_reg_get(e->cpu, UC_X86_REG_RIP) + 2, zero = 0;
    uint64_t rflags = emu_reg_get(e->cpu, UC_X86_REG_RFLAGS);
    crec_error err;
    uint32_t tid;

    if ((flags & ~(uint64_t)THREAD_FLAGS & ~0xffull) != 0 ||
        (flags & (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD)) !=
            (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD))
        return -EINVAL;
    t = emu_thread_new(e, &err);
    if (!t) {
        fprintf(e->log, "crec: %s\n", err.msg);
        return -EAGAIN;
    }
    t->parent = parent->id;
    tid = t->tid;
    /* the kernel writes the tid before either thread runs */
    if ((flags & CLONE_PARENT_SETTID) && emu_copy_out(e, ptid, &tid, 4) != 0)
        return -EFAULT;
    if ((flags & CLONE_CHILD_SETTID) && emu_copy_out(e, ctid, &tid, 4) != 0)
        return -EFAULT;
    if (flags & CLONE_CHILD_CLEARTID)
        t->clear_child_tid = ctid;
    uc_context_reg_write(t->ctx, UC_X86_REG_RAX, &zero);
    uc_context_reg_write(t->ctx, UC_X86_REG_RIP, &rip);
    uc_context_reg_write(t->ctx, UC_X86_REG_RCX, &rip);
    uc_context_reg_write(t->ctx, UC_X86_REG_R11, &rflags);
    if (stack)
        uc_context_reg_write(t->ctx, UC_X86_REG_RSP, &stack);
    if (flags & CLONE_SETTLS)
        uc_context_reg_write(t->ctx, UC_X86_REG_FS_BASE, &tls);
    ev.id = t->id;
    ev.tid = tid;
    if (e->obs.on_thread)
        e->obs.on_thread(e->obs.ctx, &ev);
    return tid;
}


/* clone(flags, stack, parent_tid, child_tid, tls) on x86-64. */
static int64_t sys_clone(crec_emu *e, const uint64_t a[6])
{
    if (!(a[0] & CLONE_THREAD)) /* a process: fork, vfork, posix_spawn (sys_process.c) */
        return emu_fork(e, a[0], a[1], a[2], a[3], a[4]);
    return clone_thread(e, a[0], a[1], a[2], a[3], a[4]);
}

/* clone3(struct clone_args *, size): the same, from a structure. */
static int64_t sys_clone3(crec_emu *e, const uint64_t a[6])
{
    uint64_t ca[11] = {0}; /* flags pidfd child_tid parent_tid exit_signal stack
                              stack_size tls set_tid set_tid_size cgroup */
    uint64_t size = a[1];

    if (size < 64 || size > 4096)
        return -EINVAL;
    if (emu_copy_in(e, ca, a[0], size < sizeof ca ? size : sizeof ca) != 0)
        return -EFAULT;
    if (!(ca[0] & CLONE_THREAD))
        return emu_fork(e, ca[0] | (ca[4] & 0xff), ca[5] ? ca[5] + ca[6] : 0, ca[3], ca[2], ca[7]);
    if (ca[0] & CLONE_PIDFD || ca[8] || ca[9])
        return -EINVAL;
    if ((ca[5] == 0) != (ca[6] == 0))
        return -EINVAL;
    /* the kernel starts the child at the top of the stack it is given */
    return clone_thread(e, ca[0], ca[5] ? ca[5] + ca[6] : 0, ca[3], ca[2], ca[7]);
}

/* ---- the life of a thread ----------------------------------------------------- */

/* exit: the calling thread ends; the last one ends the process. */
static int64_t sys_exit(crec_emu *e, const uint64_t a[6])
{
    if (e->sched.nlive <= 1)
        emu_exit(e, (int)(a[0] & 0xff), 0, NULL);
    else
        emu_thread_exit(e, (int)(a[0] & 0xff));
    return 0;
}

static int64_t sys_gettid(crec_emu *e, const uint64_t a[6])
{
    (void)a;
    return e->sched.cur->tid;
}

static int64_t sys_set_tid_address(crec_emu *e, const uint64_t a[6])
{
    e->sched.cur->clear_child_tid = a[0];
    return e->sched.cur->tid;
}

static int64_t sys_set_robust_list(crec_emu *e, const uint64_t a[6])
{
    if (a[1] != 24) /* sizeof(struct robust_list_head) */
        return -EINVAL;
    e->sched.cur->robust_list = a[0];
    return 0;
}

static int64_t sys_get_robust_list(crec_emu *e, const uint64_t a[6])
{
    struct emu_thread *t = a[0] ? emu_thread_by_tid(e, (uint32_t)a[0]) : e->sched.cur;
    uint64_t len = 24;

    if (!t)
        return -ESRCH;
    if (emu_copy_out(e, a[1], &t->robust_list, 8) || emu_copy_out(e, a[2], &len, 8))
        return -EFAULT;
    return 0;
}

/* A signal to one thread: pending there if it blocks or waits for it,
 * else as a signal to the process (its default action). */
static int64_t thread_kill(crec_emu *e, uint32_t tid, const struct emu_siginfo *si)
{
    struct emu_thread *t = emu_thread_by_tid(e, tid);

    if (!t)
        return -ESRCH;
    if (si->signo < 0 || si->signo > 64)
        return -EINVAL;
    if (si->signo >= 1 && emu_signal_queue(e, t, si))
        return 0;
    return emu_signal_send(e, t, si, "sent by itself");
}

static int64_t tkill_of(crec_emu *e, uint32_t tid, uint64_t sig)
{
    struct emu_siginfo si = {sig > 64 ? -1 : (int)sig, -6 /* SI_TKILL */, (uint32_t)getpid(),
                             (uint32_t)getuid(), 0, 0, 0};

    return thread_kill(e, tid, &si);
}

static int64_t sys_tgkill(crec_emu *e, const uint64_t a[6])
{
    if ((pid_t)a[0] != getpid())
        return -ESRCH;
    return tkill_of(e, (uint32_t)a[1], a[2]);
}

static int64_t sys_tkill(crec_emu *e, const uint64_t a[6])
{
    return tkill_of(e, (uint32_t)a[0], a[1]);
}

/* rt_tgsigqueueinfo: tgkill with the sender's siginfo (pthread_sigqueue). */
static int64_t sys_rt_tgsigqueueinfo(crec_emu *e, const uint64_t a[6])
{
    uint8_t bytes[EMU_SIGINFO_SIZE];
    struct emu_siginfo si;

    if ((pid_t)a[0] != getpid())
        return -ESRCH;
    if (a[2] > 64)
        return -EINVAL;
    if (emu_copy_in(e, bytes, a[3], sizeof bytes) != 0)
        return -EFAULT;
    emu_siginfo_parse(bytes, (int)a[2], &si);
    return thread_kill(e, (uint32_t)a[1], &si);
}

static int64_t sys_sched_yield(crec_emu *e, const uint64_t a[6])
{
    (void)a;
    emu_yield(e);
    return 0;
}

/* The CPUs the guest is shown (--cpus, default 1): nproc and thread pools
 * size themselves on this. */
static int64_t sys_sched_getaffinity(crec_emu *e, const uint64_t a[6])
{
    uint8_t mask[128] = {0};
    unsigned n = e->sched.cpus, bytes = (n + 63) / 64 * 8;

    if (a[1] < bytes || (a[1] & 7))
        return -EINVAL;
    for (unsigned i = 0; i < n && i < 8 * sizeof mask; i++)
        mask[i / 8] |= (uint8_t)(1u << (i % 8));
    return emu_copy_out(e, a[2], mask, bytes) ?: (int64_t)bytes;
}

static int64_t sys_sched_setaffinity(crec_emu *e, const uint64_t a[6])
{
    (void)e, (void)a;
    return 0; /* accepted: every guest thread runs on crec's one CPU anyway */
}

void emu_sys_thread_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(clone, "xppppp");
    REG(clone3, "pu");
    REG(futex, "pxdppd");
    REG(exit, "d");
    REG(gettid, "");
    REG(set_tid_address, "p");
    REG(set_robust_list, "pu");
    REG(get_robust_list, "dpp");
    REG(tgkill, "ddd");
    REG(tkill, "dd");
    REG(rt_tgsigqueueinfo, "dddp");
    REG(sched_yield, "");
    REG(sched_getaffinity, "dup");
    REG(sched_setaffinity, "dup");
#undef REG
}
