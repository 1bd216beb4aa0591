/* Signal handlers: raise with SA_SIGINFO (si_signo, si_code, si_pid), kill
 * to itself, a signal blocked then unblocked, SA_RESETHAND, SA_NODEFER
 * (a handler that raises its own signal again), a handler on an alternate
 * stack, a handler that uses the FPU and SSE (its registers come back),
 * a handler that changes the interrupted code's RAX through its
 * ucontext, a real-time signal queued three times (each delivered, in
 * order, with its value), and a second handler entered at the end of the first one's
 * rt_sigreturn with RDI (its signal number) as that syscall had it.  Prints what each handler saw; the e2e test compares with the
 * native run. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static volatile sig_atomic_t got, depth, maxdepth;
static volatile int last_signo, last_code, pid_ok, in_mask, uc_had;
static volatile uintptr_t handler_sp;
static volatile double fsum;

static void on_info(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    got++;
    last_signo = si->si_signo;
    last_code = si->si_code;
    pid_ok = si->si_pid == getpid();
    {   /* the mask while in the handler holds the signal itself; the
         * ucontext holds the mask before it */
        sigset_t cur;
        sigprocmask(SIG_BLOCK, NULL, &cur);
        in_mask = sigismember(&cur, sig);
        uc_had = sigismember(&uc->uc_sigmask, sig);
    }
}

static void on_plain(int sig)
{
    (void)sig;
    got++;
}

static void on_nodefer(int sig)
{
    depth++;
    if (depth > maxdepth)
        maxdepth = depth;
    if (depth < 3)
        raise(sig); /* SA_NODEFER: delivered again at once, nested */
    depth--;
}

static void on_alt(int sig)
{
    int local;
    (void)sig;
    handler_sp = (uintptr_t)&local;
}

static void on_fpu(int sig)
{
    /* clobbers xmm registers and the x87 stack */
    volatile double a = 1.5, b = 2.25;
    char buf[64];
    (void)sig;
    snprintf(buf, sizeof buf, "%.3f", a * b + (double)sig);
    fsum += strtod(buf, NULL);
}

static volatile int two_seen[2], two_n;

static void on_second(int sig)
{
    if (two_n < 2)
        two_seen[two_n++] = sig;
}

/* Returns with RDI = SIGUSR2: the rt_sigreturn that ends it has the RDI
 * SIGUSR2's handler, entered at its end, starts with. */
static void on_first(int sig)
{
    on_second(sig);
    __asm__ volatile("mov %0, %%edi" : : "i"(SIGUSR2) : "rdi");
}

static volatile int rt_values[4], rt_n;

static void on_rt(int sig, siginfo_t *si, void *ucv)
{
    (void)sig, (void)ucv;
    if (rt_n < 4)
        rt_values[rt_n++] = si->si_value.sival_int;
}

static void on_setrax(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    (void)sig, (void)si;
    uc->uc_mcontext.gregs[REG_RAX] = 4242; /* the syscall's result, as the program sees it */
}

int main(void)
{
    struct sigaction sa;
    sigset_t set, old;
    static char altstack[1 << 16];
    stack_t ss;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    printf("raise: got=%d signo=%d code=%d pid_ok=%d in_mask=%d uc_had=%d\n", (int)got, last_signo,
           last_code, pid_ok, in_mask, uc_had);

    got = 0;
    kill(getpid(), SIGUSR1);
    printf("kill: got=%d signo=%d code=%d pid_ok=%d\n", (int)got, last_signo, last_code, pid_ok);

    /* blocked: pending until unblocked */
    got = 0;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    kill(getpid(), SIGUSR1);
    kill(getpid(), SIGUSR1); /* a standard signal pending twice is delivered once */
    printf("blocked: got=%d\n", (int)got);
    sigpending(&set);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("unblocked: got=%d\n", (int)got);

    /* SA_RESETHAND: the second one takes the default action (ignored for SIGCHLD) */
    got = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_plain;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGURG, &sa, NULL);
    raise(SIGURG);
    raise(SIGURG);
    sigaction(SIGURG, NULL, &sa);
    printf("resethand: got=%d now_default=%d\n", (int)got, sa.sa_handler == SIG_DFL);

    /* SA_NODEFER: nested */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_nodefer;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    printf("nodefer: maxdepth=%d depth=%d\n", (int)maxdepth, (int)depth);

    /* an alternate stack */
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0)
        perror("sigaltstack");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alt;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGWINCH, &sa, NULL);
    raise(SIGWINCH);
    printf("altstack: on_it=%d\n", handler_sp >= (uintptr_t)altstack &&
                                        handler_sp < (uintptr_t)altstack + sizeof altstack);
    sigaltstack(NULL, &ss);
    printf("altstack: flags=%d size=%zu\n", ss.ss_flags, ss.ss_size);

    /* the FPU state comes back after a handler that used it */
    {
        volatile double x = 3.0;
        double before = x * 7.0, after;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fpu;
        sigaction(SIGALRM, &sa, NULL);
        for (int i = 0; i < 5; i++)
            raise(SIGALRM);
        after = x * 7.0;
        printf("fpu: before=%.1f after=%.1f fsum=%.3f\n", before, after, fsum);
    }

    /* a real-time signal is queued: each one sent is delivered */
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN + 1, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    sigprocmask(SIG_BLOCK, &set, &old);
    for (int i = 1; i <= 3; i++)
        sigqueue(getpid(), SIGRTMIN + 1, (union sigval){.sival_int = i});
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("queued: %d delivered, values %d %d %d\n", rt_n, rt_values[0], rt_values[1],
           rt_values[2]);

    /* two pending: SIGUSR2, blocked in SIGUSR1's handler, comes at its end */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_second;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_first;
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGUSR1, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    kill(getpid(), SIGUSR2);
    kill(getpid(), SIGUSR1);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("back to back: %d then %d\n", two_seen[0], two_seen[1]);

    /* a handler that changes the interrupted context */
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_setrax;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    {
        long r = syscall(SYS_kill, (long)getpid(), (long)SIGUSR1);
        printf("setrax: kill returned %ld\n", r);
    }
    return 0;
}
