/*
 * sys_signal.c - signals delivered to the guest's handlers: the action a
 * signal takes, the frame Linux builds on the stack for a handler
 * (sigframe.c has its bytes), rt_sigreturn and sigaltstack.
 *
 * A signal for a handler is made pending and delivered at the end of a
 * syscall (the one that sent it, unblocked it, or that it interrupted),
 * or at the next block start when it arrives while the program computes
 * (a timer, another process, a fault: at its instruction).  At a syscall's
 * end, entering the handler changes only registers the SYSCALL record
 * already lists (and RIP), and the frame is memory the kernel wrote, so
 * such a delivery records and replays like any syscall; at an instruction
 * boundary the observer is told (on_signal), and the recorder writes a
 * SIGNAL record with the registers it set (docs/EMU.md, "Signals").
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define SA_RESTART_ 0x10000000ull
#define SA_ONSTACK_ 0x08000000ull
#define SA_RESETHAND_ 0x80000000ull
#define SA_NODEFER_ 0x40000000ull
#define SA_RESTORER_ 0x04000000ull
#define SS_ONSTACK_ 1
#define SS_DISABLE_ 2
#define SS_AUTODISARM_ (1u << 31)
#define MINSIGSTKSZ_ 2048
#define REDZONE 128
/* struct rt_sigframe: pretcode, the ucontext, the siginfo */
#define FRAME_SIZE (8 + CREC_EMU_UCONTEXT_SIZE + 128)

static int default_ignored(int sig)
{
    return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

int64_t emu_signal_send(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si,
                        const char *why)
{
    int sig = si->signo;
    uint64_t h;
    char msg[128];

    if (sig == 0)
        return 0;
    if (sig < 1 || sig > 64)
        return -EINVAL;
    h = e->sigs[sig].handler;
    if (sig != SIGKILL && sig != SIGSTOP) {
        if (h == 1 /* SIG_IGN */ || (h == 0 && default_ignored(sig)))
            return 0;
        if (h > 1) { /* a handler: delivered at the end of this syscall, or when unblocked */
            emu_signal_pend(e, t, si);
            return 0;
        }
    }
    snprintf(msg, sizeof msg, "guest killed by SIG%s (%s)",
             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", why);
    emu_exit(e, 0, sig, msg);
    return 0;
}

/* Whether sp lies on the thread's alternate stack. */
static int on_altstack(const struct emu_thread *t, uint64_t sp)
{
    return t->ss_size && !(t->ss_flags & SS_DISABLE_) && sp > t->ss_sp &&
           sp - t->ss_sp <= t->ss_size;
}

/* Write the frame for signal si and enter the handler.  r: the registers
 * the handler returns to.  @return 0, or -1 if the frame can't be written
 * (the process is then killed with SIGSEGV, as Linux does). */
static int enter_handler(crec_emu *e, const struct emu_siginfo *si, crec_regs *r,
                         uint64_t *frame_lo, uint64_t *frame_hi)
{
    struct emu_thread *t = e->sched.cur;
    const struct emu_sigaction *act = &e->sigs[si->signo];
    struct crec_emu_sigframe_ctx c = {0};
    uint8_t uc[CREC_EMU_UCONTEXT_SIZE], fp[CREC_EMU_FXSAVE_SIZE], info[128];
    uint64_t sp = r->gpr[CREC_RSP] - REDZONE, frame, ret;
    crec_error err = {0};

    if ((act->flags & SA_ONSTACK_) && t->ss_size && !(t->ss_flags & SS_DISABLE_) &&
        !on_altstack(t, r->gpr[CREC_RSP]))
        sp = t->ss_sp + t->ss_size;
    /* the mask the handler's return restores: rt_sigsuspend's is the one
     * before the call, not the one it waited with */
    c.mask = t->suspended ? t->suspend_mask : e->sigmask;
    t->suspended = 0;
    c.ss_sp = t->ss_sp;
    c.ss_size = t->ss_size;
    c.ss_flags = on_altstack(t, r->gpr[CREC_RSP]) ? SS_ONSTACK_ : t->ss_flags;
    c.fpstate = (sp - CREC_EMU_FXSAVE_SIZE) & ~63ull;
    frame = ((c.fpstate - FRAME_SIZE) & ~15ull) - 8; /* as after a call */
    if (si->signo == SIGSEGV || si->signo == SIGBUS)
        c.cr2 = si->value;
    crec_emu_sigframe_encode(r, &c, uc, fp);
    emu_siginfo_bytes(si, info);
    ret = act->flags & SA_RESTORER_ ? act->restorer : 0;
    if (emu_copy_out(e, c.fpstate, fp, sizeof fp) != 0 || emu_copy_out(e, frame, &ret, 8) != 0 ||
        emu_copy_out(e, frame + 8, uc, sizeof uc) != 0 ||
        emu_copy_out(e, frame + 8 + sizeof uc, info, sizeof info) != 0)
        return -1;
    *frame_lo = frame;
    *frame_hi = c.fpstate + CREC_EMU_FXSAVE_SIZE;
    r->gpr[CREC_RSP] = frame;
    r->gpr[CREC_RDI] = (uint64_t)si->signo;
    r->gpr[CREC_RSI] = frame + 8 + sizeof uc;
    r->gpr[CREC_RDX] = frame + 8;
    r->gpr[CREC_RAX] = 0;
    r->rflags &= ~(0x400ull | 0x100ull); /* DF and TF clear, as Linux enters */
    r->rip = act->handler;
    if (!(act->flags & SA_NODEFER_))
        e->sigmask |= emu_sigbit(si->signo);
    e->sigmask |= act->mask & ~(emu_sigbit(SIGKILL) | emu_sigbit(SIGSTOP));
    if (act->flags & SA_RESETHAND_)
        e->sigs[si->signo] = (struct emu_sigaction){0, 0, 0, 0};
    (void)err;
    return 0;
}

/* The lowest signal the running thread can take that has a handler. */
static int take_deliverable(crec_emu *e, struct emu_siginfo *si)
{
    uint64_t handled = 0;
    struct emu_thread *t = e->sched.cur;

    if (!((t->sig_pending | e->sig_pending) & ~e->sigmask))
        return 0;
    for (int sig = 1; sig <= 64; sig++)
        if (e->sigs[sig].handler > 1)
            handled |= emu_sigbit(sig);
    return emu_signal_take(e, handled & ~e->sigmask, si);
}

/* Set the registers of a handler's entry, RIP last (from a syscall hook
 * too). */
static void set_regs(crec_emu *e, const crec_regs *r)
{
    crec_error err = {0};

    if (crec_emu_regs_set(e->cpu, r, &err) != CREC_OK) {
        e->err = err;
        e->fatal = 1;
        crec_emu_cpu_stop(e->cpu);
        return;
    }
    crec_emu_cpu_resume_at(e->cpu, r->rip);
}

/*
 * Pending signals that are no longer blocked and have no handler take
 * their disposition now: ignored, or the default action.  A handler that
 * resets its signal to SIG_DFL and raises it again (coreutils' cleanup
 * handlers do) dies of it at rt_sigreturn, when the mask lets it through.
 */
static void settle_unhandled(crec_emu *e)
{
    struct emu_thread *t = e->sched.cur;
    uint64_t ready = (t->sig_pending | e->sig_pending) & ~e->sigmask;

    for (int sig = 1; sig <= 64 && ready && !e->done && !e->fatal; sig++) {
        struct emu_siginfo si;
        if (!(ready & emu_sigbit(sig)) || e->sigs[sig].handler > 1)
            continue;
        si = t->sig_pending & emu_sigbit(sig) ? t->sig_info[sig] : e->sig_info[sig];
        emu_signal_unpend(e, t, sig);
        emu_signal_unpend(e, NULL, sig);
        emu_signal_send(e, NULL, &si, "pending until it was unblocked");
    }
}

int emu_signal_restartable(uint64_t nr)
{
    switch (nr) {
    case 7: case 23: case 35: case 230: case 232: case 270: case 271: case 281: case 441:
        /* poll, select, nanosleep, clock_nanosleep, epoll_wait, pselect6, ppoll,
         * epoll_pwait(2): Linux ends them with EINTR after a handler */
    case 34: case 130: case 128: /* pause, rt_sigsuspend, rt_sigtimedwait */
        return 0;
    }
    return 1;
}

/* Tell the observer of a signal delivered at an instruction boundary. */
static void observe(crec_emu *e, const struct emu_siginfo *si, int fault, int fatal,
                    const crec_regs *before, uint64_t frame_lo, uint64_t frame_hi)
{
    struct crec_emu_signal ev = {si->signo, si->code, si->value, fault, fatal, before, 0,
                                 {{0, 0}, {0, 0}}};

    if (!e->obs.on_signal)
        return;
    if (frame_hi > frame_lo) {
        ev.out[0] = (struct crec_emu_range){frame_lo, frame_hi - frame_lo};
        ev.n_out = 1;
    }
    e->obs.on_signal(e->obs.ctx, &ev);
}

/*
 * Enter the handler of a deliverable signal, the interrupted code going on
 * at rip.  At a syscall's end (sc 1) that a signal interrupted, SA_RESTART
 * makes the handler return to the syscall, to run it again.  Elsewhere (sc
 * 0) the observer is told.  @return the handler's address, or 0 if none
 * was entered.
 */
static uint64_t deliver_at(crec_emu *e, uint64_t rip, int sc)
{
    struct emu_thread *t = e->sched.cur;
    struct emu_siginfo si;
    crec_error err = {0};
    crec_regs r, before;
    uint64_t lo, hi;
    int sig;

    if (!e->done && !e->fatal)
        settle_unhandled(e);
    if (e->done || e->fatal || !(sig = take_deliverable(e, &si))) {
        if (t->suspended && !e->done) { /* nothing taken: the mask as before */
            e->sigmask = t->suspend_mask;
            t->suspended = 0;
        }
        return 0;
    }
    if (crec_emu_regs_get(e->cpu, &r, &err) != CREC_OK) {
        e->err = err;
        e->fatal = 1;
        crec_emu_cpu_stop(e->cpu);
        return 0;
    }
    r.rip = rip;
    before = r;
    if (sc && e->sc_eintr && e->sc.ret == -EINTR && !e->sc.resume_rip &&
        (e->sigs[sig].flags & SA_RESTART_) && emu_signal_restartable(e->sc.nr)) {
        r.gpr[CREC_RAX] = e->sc.nr; /* the handler returns to the syscall */
        r.rip = rip - 2;
    }
    if (enter_handler(e, &si, &r, &lo, &hi) != 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "guest killed by SIGSEGV (no room on the stack for the frame "
                 "of its SIG%s handler)", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
        emu_exit(e, 0, SIGSEGV, msg);
        return 0;
    }
    set_regs(e, &r);
    if (!sc)
        observe(e, &si, 0, 0, &before, lo, hi);
    return r.rip;
}

void emu_signal_fatal_observe(crec_emu *e)
{
    struct emu_siginfo si = {e->exit.signo, 0, 0, 0, 0, 0, 0, 0};

    if (e->done && !e->fatal && e->exit.signo && !e->exit.deadlock)
        observe(e, &si, 0, 1, NULL, 0, 0);
}

void emu_signal_deliver(crec_emu *e, uint64_t next_rip)
{
    uint64_t h = deliver_at(e, e->sc.resume_rip ? e->sc.resume_rip : next_rip, 1);

    if (h)
        e->sc.resume_rip = h;
}

/* A blocked thread a ready signal is for: woken, its syscall returning EINTR
 * (and run again after the handler with SA_RESTART). */
static int can_take(const crec_emu *e, const struct emu_thread *t, uint64_t sigs)
{
    uint64_t mask = t == e->sched.cur ? e->sigmask : t->sigmask;
    return (sigs & ~mask) != 0;
}

void emu_signal_kick(crec_emu *e)
{
    struct emu_sched *s = &e->sched;
    uint64_t proc = e->sig_pending;

    for (size_t i = 0; i < s->n && !e->done; i++) {
        struct emu_thread *t = s->th[i];
        if (t->state == EMU_TH_EXITED)
            continue;
        if (t->state == EMU_TH_RUNNABLE && can_take(e, t, proc))
            proc = 0; /* it takes the process's signals when it runs */
        if (t->state != EMU_TH_BLOCKED || !can_take(e, t, t->sig_pending | proc))
            continue;
        if (can_take(e, t, proc))
            proc = 0;
        t->interrupted = 1;
        emu_wake(e, t, -EINTR);
    }
}

/* ---- asynchronous signals: at a block start ------------------------------------- */

int emu_signal_async(crec_emu *e, uint64_t addr)
{
    int64_t next;

    e->async_tick = 0;
    if (!emu_hostsig_any && !emu_signal_ready(e) &&
        ((next = emu_timers_next(e)) < 0 || emu_now_ns() < next))
        return 0;
    e->async_rip = addr;
    crec_emu_cpu_stop(e->cpu); /* before the block at addr */
    return 1;
}

/* The CPU stopped before the block at e->async_rip for a signal: take what
 * came from outside, fire the timers that are due, and deliver (or die). */
void emu_signal_async_now(crec_emu *e)
{
    uint64_t rip = e->async_rip;
    int64_t next = emu_timers_next(e), now;

    e->async_rip = 0;
    emu_reg_set(e->cpu, UC_X86_REG_RIP, rip); /* stale after a stop in a block hook */
    emu_hostsig_import(e);
    if (!e->done && next >= 0 && (now = emu_now_ns()) >= next) {
        emu_timers_fire(e, now);
        emu_hostsig_arm(e);
    }
    if (!e->done)
        settle_unhandled(e);
    if (e->done && !e->fatal && e->exit.signo && !e->exit.deadlock) {
        emu_signal_fatal_observe(e); /* its default action ends it here, before the block */
        return;
    }
    if (e->done || e->fatal)
        return;
    emu_signal_kick(e); /* one the running thread can't take: another's */
    deliver_at(e, rip, 0);
}

/* ---- ITIMER_REAL: alarm, setitimer, getitimer ---------------------------------- */

/* A process timer sending SIGALRM, in a slot of the POSIX timers whose id
 * the guest is never given. */
static struct emu_timer *itimer_real(crec_emu *e)
{
    if (e->itimer_slot)
        return &e->timers[e->itimer_slot - 1];
    for (int k = EMU_MAX_TIMERS - 1; k >= 0; k--)
        if (!e->timers[k].used) {
            struct emu_timer *tm = &e->timers[k];
            memset(tm, 0, sizeof *tm);
            tm->used = 1;
            tm->clock = CLOCK_MONOTONIC;
            tm->notify = 0; /* SIGEV_SIGNAL */
            tm->signo = SIGALRM;
            tm->next = -1;
            e->itimer_slot = k + 1;
            return tm;
        }
    return NULL;
}

/* struct itimerval: interval then value, each {tv_sec, tv_usec} */
static void itimer_get(struct emu_timer *tm, uint64_t out[4])
{
    int64_t left = tm && tm->next >= 0 ? tm->next - emu_now_ns() : 0;

    if (tm && tm->next >= 0 && left <= 0)
        left = 1000; /* due, not yet fired */
    out[0] = tm ? (uint64_t)(tm->interval / 1000000000) : 0;
    out[1] = tm ? (uint64_t)(tm->interval % 1000000000 / 1000) : 0;
    out[2] = (uint64_t)(left / 1000000000);
    out[3] = (uint64_t)(left % 1000000000 / 1000);
}

static int64_t itimer_set(crec_emu *e, const uint64_t nw[4], uint64_t old[4])
{
    struct emu_timer *tm = itimer_real(e);

    if (!tm)
        return -EAGAIN;
    itimer_get(tm, old);
    tm->interval = (int64_t)(nw[0] * 1000000000 + nw[1] * 1000);
    tm->overrun = 0;
    tm->next = nw[2] || nw[3] ? emu_now_ns() + (int64_t)(nw[2] * 1000000000 + nw[3] * 1000) : -1;
    emu_hostsig_arm(e);
    return 0;
}

static int64_t sys_alarm(crec_emu *e, const uint64_t a[6])
{
    uint64_t nw[4] = {0, 0, a[0] & 0xffffffff, 0}, old[4];
    int64_t r = itimer_set(e, nw, old);

    if (r < 0)
        return r;
    return (int64_t)(old[2] + (old[3] ? 1 : 0)); /* seconds left, rounded up */
}

static int64_t sys_setitimer(crec_emu *e, const uint64_t a[6])
{
    uint64_t nw[4] = {0}, old[4];
    int64_t r;

    if (a[0] != 0 /* ITIMER_REAL */)
        return emu_not_yet(e, "setitimer ITIMER_VIRTUAL/ITIMER_PROF", -EINVAL);
    if (a[1] && emu_copy_in(e, nw, a[1], sizeof nw) != 0)
        return -EFAULT;
    if (nw[1] >= 1000000 || nw[3] >= 1000000)
        return -EINVAL;
    if ((r = itimer_set(e, nw, old)) < 0)
        return r;
    return a[2] && emu_copy_out(e, a[2], old, sizeof old) != 0 ? -EFAULT : 0;
}

static int64_t sys_getitimer(crec_emu *e, const uint64_t a[6])
{
    uint64_t cur[4];

    if (a[0] != 0 /* ITIMER_REAL */)
        return emu_not_yet(e, "getitimer ITIMER_VIRTUAL/ITIMER_PROF", -EINVAL);
    itimer_get(e->itimer_slot ? &e->timers[e->itimer_slot - 1] : NULL, cur);
    return emu_copy_out(e, a[1], cur, sizeof cur) != 0 ? -EFAULT : 0;
}

/* ---- faults ----------------------------------------------------------------- */

static void no_access(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    (void)ctx, (void)kind, (void)addr, (void)size, (void)value;
}

static int flush_exec(void *ctx, const struct crec_emu_mapping *m)
{
    if (m->prot & CREC_PROT_EXEC)
        crec_emu_cpu_flush_code(ctx, m->start, m->end - m->start);
    return 0;
}

void emu_signal_precise(crec_emu *e)
{
    if (e->opt.recording || e->precise)
        return;
    e->precise = 2; /* the CPU stops after this syscall: hooks change code */
    crec_emu_cpu_stop(e->cpu);
}

/* Unicorn 2.0.1 reports the exact RIP of a faulting access only when a
 * memory hook is installed (issue #1323); without it RIP is the block's
 * start and a handler that returns would run part of the block again.  So
 * once the program has a SIGSEGV or SIGBUS handler, `crec run` pays for a
 * hook that does nothing, from code translated afresh. */
void emu_signal_precise_now(crec_emu *e)
{
    crec_error err = {0};

    e->precise = 1;
    if (crec_emu_cpu_hook_mem(e->cpu, CREC_EMU_LOAD | CREC_EMU_STORE, no_access, NULL, &err) !=
        CREC_OK) {
        e->err = err;
        e->fatal = 1;
        return;
    }
    crec_emu_mem_foreach(e->cpu, flush_exec, e->cpu);
}

int emu_signal_fault(crec_emu *e, const struct crec_emu_stop *s)
{
    struct emu_siginfo si = {s->signo, 0, 0, 0, 0, 0, 0};
    crec_error err = {0};
    crec_regs r;
    int sig = s->signo;

    if (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL)
        return 0; /* SIGTRAP: not yet */
    if (e->sigs[sig].handler <= 1 || (e->sigmask & emu_sigbit(sig)))
        return 0; /* blocked or ignored: Linux kills, as with no handler */
    if (sig == SIGSEGV && s->why == CREC_STOP_FAULT && s->access != '?') {
        si.code = s->unmapped ? 1 /* SEGV_MAPERR */ : 2 /* SEGV_ACCERR */;
        si.value = s->addr;
    } else if (sig == SIGSEGV) {
        si.code = 0x80; /* SI_KERNEL: a general protection fault */
    } else {
        si.code = sig == SIGILL ? 2 /* ILL_ILLOPN */ : 1 /* FPE_INTDIV, BUS_ADRALN */;
        si.value = s->rip;
    }
    if (crec_emu_regs_get(e->cpu, &r, &err) != CREC_OK) {
        e->err = err;
        e->fatal = 1;
        return 1;
    }
    r.rip = s->rip; /* the faulting instruction runs again after the handler */
    {
        crec_regs before = r;
        uint64_t lo, hi;
        if (enter_handler(e, &si, &r, &lo, &hi) != 0)
            return 0;
        set_regs(e, &r);
        observe(e, &si, 1, 0, &before, lo, hi);
    }
    return 1;
}

/* rt_sigreturn: the registers, mask and alternate stack from the frame the
 * handler returns through (its ucontext is where RSP points, the return
 * address popped).  The frame's address goes in args[0], so that the
 * recorder and the replayer read the same frame (emu/sysout.c). */
static int64_t sys_rt_sigreturn(crec_emu *e, const uint64_t a[6])
{
    uint64_t uc = emu_reg_get(e->cpu, UC_X86_REG_RSP), mask, ss[3];
    struct emu_thread *t = e->sched.cur;
    crec_error err = {0};
    crec_regs r;

    (void)a;
    e->sc.args[0] = uc;
    if (emu_copy_in(e, ss, uc + 16, sizeof ss) != 0 ||
        crec_emu_sigreturn_apply(e->cpu, uc, &mask, &err) != CREC_OK) {
        emu_exit(e, 0, SIGSEGV, "guest killed by SIGSEGV (rt_sigreturn without a valid frame)");
        return 0;
    }
    e->sigmask = mask & ~(emu_sigbit(SIGKILL) | emu_sigbit(SIGSTOP));
    if (!on_altstack(t, emu_reg_get(e->cpu, UC_X86_REG_RSP)) && ss[2] >= MINSIGSTKSZ_) {
        t->ss_sp = ss[0]; /* restore_altstack, as Linux */
        t->ss_size = ss[2];
        t->ss_flags = (uint32_t)ss[1] & SS_DISABLE_;
    }
    if (crec_emu_regs_get(e->cpu, &r, &err) != CREC_OK) {
        e->err = err;
        e->fatal = 1;
        return 0;
    }
    crec_emu_cpu_resume_at(e->cpu, r.rip);
    e->sc.resume_rip = r.rip;
    return (int64_t)r.gpr[CREC_RAX];
}

/* rt_sigsuspend and pause: wait with `mask` until a signal is taken (its
 * handler's frame restores the mask before), and return EINTR. */
static int64_t suspend(crec_emu *e, uint64_t mask)
{
    struct emu_thread *t = e->sched.cur;

    if (!t->suspended) {
        t->suspend_mask = e->sigmask;
        t->suspended = 1;
    }
    e->sigmask = mask & ~(emu_sigbit(SIGKILL) | emu_sigbit(SIGSTOP));
    for (;;) {
        int64_t next, now;
        emu_hostsig_import(e);
        if ((next = emu_timers_next(e)) >= 0 && (now = emu_now_ns()) >= next) {
            emu_timers_fire(e, now);
            emu_hostsig_arm(e);
            next = emu_timers_next(e);
        }
        if (e->done || e->fatal || emu_signal_ready(e) || (e->opt.stop && *e->opt.stop))
            return -EINTR;
        if (e->sched.nlive > 1) /* the scheduler wakes it (emu_signal_kick) */
            return emu_block(e, EMU_WAIT_SUSPEND, -1, -EINTR);
        emu_block_until(e, next < 0 ? EMU_FOREVER : (uint64_t)next, NULL, 0);
    }
}

int64_t emu_signal_wait_mask(crec_emu *e, uint64_t addr, uint64_t size)
{
    struct emu_thread *t = e->sched.cur;
    uint64_t mask;

    if (!addr)
        return 0;
    if (size != 8)
        return -EINVAL;
    if (emu_copy_in(e, &mask, addr, 8) != 0)
        return -EFAULT;
    if (!t->suspended) {
        t->suspend_mask = e->sigmask;
        t->suspended = 1;
    }
    e->sigmask = crec_le_get((const uint8_t *)&mask, 8) & ~(emu_sigbit(SIGKILL) | emu_sigbit(SIGSTOP));
    return emu_signal_ready(e) ? -EINTR : 0;
}

static int64_t sys_rt_sigsuspend(crec_emu *e, const uint64_t a[6])
{
    uint64_t mask;

    if (a[1] != 8)
        return -EINVAL;
    if (emu_copy_in(e, &mask, a[0], 8) != 0)
        return -EFAULT;
    return suspend(e, crec_le_get((const uint8_t *)&mask, 8));
}

static int64_t sys_pause(crec_emu *e, const uint64_t a[6])
{
    (void)a;
    return suspend(e, e->sigmask);
}

static int64_t sys_rt_sigpending(crec_emu *e, const uint64_t a[6])
{
    uint64_t set = (e->sched.cur->sig_pending | e->sig_pending) & e->sigmask;

    if (a[1] > 8)
        return -EINVAL;
    return emu_copy_out(e, a[0], &set, a[1]) != 0 ? -EFAULT : 0;
}

static int64_t sys_sigaltstack(crec_emu *e, const uint64_t a[6])
{
    struct emu_thread *t = e->sched.cur;
    uint64_t sp = emu_reg_get(e->cpu, UC_X86_REG_RSP);
    uint64_t cur[3] = {t->ss_sp, t->ss_size ? t->ss_flags : SS_DISABLE_, t->ss_size};
    uint64_t nw[3];

    if (on_altstack(t, sp))
        cur[1] = SS_ONSTACK_;
    if (a[0]) {
        uint32_t flags;
        if (emu_copy_in(e, nw, a[0], sizeof nw) != 0)
            return -EFAULT;
        if (on_altstack(t, sp))
            return -EPERM;
        flags = (uint32_t)nw[1] & ~SS_AUTODISARM_;
        if (flags != 0 && flags != SS_DISABLE_ && flags != SS_ONSTACK_)
            return -EINVAL;
        if (flags == SS_DISABLE_) {
            t->ss_sp = t->ss_size = 0;
            t->ss_flags = SS_DISABLE_;
        } else {
            if (nw[2] < MINSIGSTKSZ_)
                return -ENOMEM;
            t->ss_sp = nw[0];
            t->ss_size = nw[2];
            t->ss_flags = 0;
        }
    }
    if (a[1] && emu_copy_out(e, a[1], cur, sizeof cur) != 0)
        return -EFAULT;
    return 0;
}

void emu_sys_signal_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(rt_sigreturn, "");
    REG(rt_sigsuspend, "pu");
    REG(pause, "");
    REG(sigaltstack, "pp");
    REG(rt_sigpending, "pu");
    REG(alarm, "u");
    REG(setitimer, "dpp");
    REG(getitimer, "dp");
#undef REG
}
