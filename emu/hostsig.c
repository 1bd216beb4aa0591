/*
 * hostsig.c - signals that the host sends to crec, made the guest's.
 *
 * A guest process is a crec process (sys_process.c), so a signal another
 * process sends the guest (kill, a shell's job control, a child's exit:
 * SIGCHLD) arrives at crec.  While a guest runs, crec takes the signals
 * the guest has a handler for (and, in a recording, those whose default
 * kills it, so that the recording is completed) with a handler of its own
 * that only notes them; they become the guest's pending signals at the
 * next block start or syscall end (emu_hostsig_import), where the guest
 * takes them as the kernel would: its handler at an instruction boundary,
 * its default action, or nothing.  A blocking host call is interrupted
 * (no SA_RESTART here): the guest's syscall returns EINTR, restarts with
 * SA_RESTART, or restarts unseen when the guest does not take the signal
 * (syscall.c).  A signal the guest ignores is ignored by crec too.
 *
 * Signals to `crec record` from outside the recorded process tree:
 * SIGINT and SIGTERM stop the recording (crec_emu_options.stop) and
 * SIGUSR1 asks for a dump (crec_emu_options.dump), unless
 * crec_emu_options.forward_signals; every other one is the guest's.  A
 * sender is inside the tree when its pid is one of the crec processes of
 * the recording, which a table in shared memory lists.
 *
 * The guest's timers (alarm, setitimer, timer_create) run on the host's
 * clock: a host timer of crec's, on signal EMU_SIG_INTERNAL, fires at the
 * nearest expiry, so that a loop with no syscall and a blocking syscall
 * both see it.  The same signal, queued by another crec of the tree with
 * sigqueue, asks this one to end its guest as SIGKILL would (a recording
 * SIGKILL itself would lose its end, see emu_hostsig_kill).
 *
 * This is process-wide state (signal dispositions are): one guest runs in
 * a crec process at a time, installed by crec_emu_run and put back after.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define EMU_SIG_INTERNAL 64 /* SIGRTMAX: glibc keeps 32 and 33 for itself */
#define HS_MAGIC_TIMER 0x63726563 /* "crec" */
#define HS_MAGIC_KILL 0x6b696c6c  /* "kill" */
#define HS_TREE_MAX 65536
#define SI_USER_ 0
#define SI_QUEUE_ (-1)
#define SI_TKILL_ (-6)

/* What the handler notes (async-signal-safe: plain stores, atomics). */
volatile sig_atomic_t emu_hostsig_any;
static uint64_t hs_bits;            /* signals noted, bit sig-1 (atomic) */
static siginfo_t hs_info[65];       /* ... the first one's siginfo */
static volatile sig_atomic_t hs_timer_due, hs_kill;
static volatile sig_atomic_t *hs_stop;
static volatile sig_atomic_t *hs_dump;
static int hs_forward;

/* The pids of the crec processes of a recording (shared memory). */
struct hs_tree {
    uint32_t n;
    uint32_t pids[HS_TREE_MAX];
};
static struct hs_tree *hs_tree;

static struct sigaction hs_saved[65];
static uint8_t hs_saved_set[65];
static int hs_active;

static timer_t hs_timer;
static pid_t hs_timer_pid; /* the process that made hs_timer (0: none) */

static int in_tree(pid_t pid)
{
    uint32_t n;

    if (!hs_tree || pid <= 0)
        return 0;
    n = __atomic_load_n(&hs_tree->n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < HS_TREE_MAX; i++)
        if (hs_tree->pids[i] == (uint32_t)pid)
            return 1;
    return 0;
}

static void tree_add(pid_t pid)
{
    uint32_t i;

    if (!hs_tree || in_tree(pid))
        return;
    i = __atomic_fetch_add(&hs_tree->n, 1, __ATOMIC_ACQ_REL);
    if (i < HS_TREE_MAX)
        __atomic_store_n(&hs_tree->pids[i], (uint32_t)pid, __ATOMIC_RELEASE);
}

/* Does si say that a process sent it (kill, sigqueue, tgkill)? */
static int sent_by_process(const siginfo_t *si)
{
    return si->si_code == SI_USER_ || si->si_code == SI_QUEUE_ || si->si_code == SI_TKILL_;
}

static void hs_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;

    (void)uc;
    if (sig == EMU_SIG_INTERNAL && si->si_code == SI_TIMER &&
        si->si_value.sival_int == HS_MAGIC_TIMER) {
        hs_timer_due = 1;
    } else if (sig == EMU_SIG_INTERNAL && si->si_code == SI_QUEUE_ &&
               si->si_value.sival_int == HS_MAGIC_KILL && in_tree(si->si_pid)) {
        hs_kill = 1;
    } else if (hs_stop && !hs_forward && (sig == SIGINT || sig == SIGTERM) &&
               !(sent_by_process(si) && in_tree(si->si_pid))) {
        *hs_stop = sig; /* the user's: crec stops recording */
        errno = saved;
        return;
    } else if (hs_dump && !hs_forward && sig == SIGUSR1 &&
               !(sent_by_process(si) && in_tree(si->si_pid))) {
        (*hs_dump)++; /* the user's: a dump of the recording so far */
        errno = saved;
        return;
    } else {
        if (!(__atomic_load_n(&hs_bits, __ATOMIC_ACQUIRE) & emu_sigbit(sig)))
            hs_info[sig] = *si;
        __atomic_or_fetch(&hs_bits, emu_sigbit(sig), __ATOMIC_ACQ_REL);
    }
    emu_hostsig_any = 1;
    errno = saved;
}

/* ---- which signals crec takes -------------------------------------------------- */

/* Signals crec leaves alone: its own faults, the ones it blocks for itself
 * (SIGPIPE, SIGXFSZ: syscall.c), those nobody can catch, and job control,
 * which stops crec and its guest together. */
static int left_alone(int sig)
{
    switch (sig) {
    case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE:
    case SIGTRAP: case SIGSYS: case SIGPIPE: case SIGXFSZ: case SIGTSTP: case SIGTTIN:
    case SIGTTOU: case SIGCONT:
        return 1;
    }
    return sig == 32 || sig == 33; /* glibc's own (cancellation, setxid) */
}

static int default_ignored(int sig)
{
    return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH;
}

#define SA_NOCLDWAIT_ 2ull

/* The host disposition signal `sig` needs now: SIG_DFL, SIG_IGN, or
 * crec's handler (NULL). */
static void (*wanted(const crec_emu *e, int sig))(int)
{
    uint64_t h = e->sigs[sig].handler;

    if (sig == EMU_SIG_INTERNAL)
        return NULL;
    if (sig == SIGCHLD && (h == 1 || (e->sigs[sig].flags & SA_NOCLDWAIT_)))
        return SIG_IGN; /* the host reaps such children itself, as for the guest */
    if (hs_stop && (sig == SIGINT || sig == SIGTERM))
        return NULL; /* crec's stop, or the guest's */
    if (hs_dump && sig == SIGUSR1)
        return NULL; /* crec's dump, or the guest's */
    if (h == 1)
        return SIG_IGN;
    if (h > 1)
        return NULL;
    if (default_ignored(sig))
        return SIG_DFL;
    /* the default kills: a recording notes it and completes its file;
     * `crec run` dies of it as the guest would */
    return e->opt.recording ? NULL : SIG_DFL;
}

static void install(crec_emu *e, int sig)
{
    struct sigaction sa;
    void (*w)(int) = wanted(e, sig);

    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (w) {
        sa.sa_handler = w;
    } else {
        sa.sa_sigaction = hs_handler;
        sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: a blocking host call returns EINTR */
    }
    if (!hs_saved_set[sig] && sigaction(sig, NULL, &hs_saved[sig]) == 0)
        hs_saved_set[sig] = 1;
    sigaction(sig, &sa, NULL);
}

void emu_hostsig_sync(crec_emu *e, int sig)
{
    if (hs_active && sig >= 1 && sig <= 64 && !left_alone(sig))
        install(e, sig);
}

void emu_hostsig_start(crec_emu *e)
{
    hs_stop = e->opt.stop;
    hs_dump = e->opt.dump;
    hs_forward = e->opt.forward_signals;
    hs_active = 1;
    if (e->opt.recording && e->opt.stop && !hs_tree) {
        void *m = mmap(NULL, sizeof *hs_tree, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
        if (m != MAP_FAILED) { /* without it every sender is from outside */
            hs_tree = m;
            tree_add(getpid());
        }
    }
    for (int sig = 1; sig <= 64; sig++)
        emu_hostsig_sync(e, sig);
}

void emu_hostsig_stop(crec_emu *e)
{
    (void)e;
    if (!hs_active)
        return;
    hs_active = 0;
    if (hs_timer_pid == getpid()) {
        timer_delete(hs_timer);
        hs_timer_pid = 0;
    }
    for (int sig = 1; sig <= 64; sig++)
        if (hs_saved_set[sig]) {
            sigaction(sig, &hs_saved[sig], NULL);
            hs_saved_set[sig] = 0;
        }
    hs_stop = NULL;
    hs_dump = NULL;
}

void emu_hostsig_prefork(crec_emu *e)
{
    (void)e;
}

void emu_hostsig_child(crec_emu *e)
{
    tree_add(getpid());
    hs_timer_pid = 0; /* timers are not inherited */
    __atomic_store_n(&hs_bits, 0, __ATOMIC_RELEASE); /* nor pending signals */
    hs_timer_due = hs_kill = 0;
    (void)e;
}

void emu_hostsig_parent(crec_emu *e, int pid)
{
    (void)e;
    tree_add(pid);
}

void emu_hostsig_exec(crec_emu *e)
{
    for (int sig = 1; sig <= 64; sig++) /* handlers are gone */
        emu_hostsig_sync(e, sig);
}

/* ---- the guest's timers on a host timer ----------------------------------------- */

void emu_hostsig_arm(crec_emu *e)
{
    int64_t next = emu_timers_next(e);
    struct itimerspec its;

    if (!hs_active)
        return;
    memset(&its, 0, sizeof its);
    if (next >= 0) {
        its.it_value.tv_sec = next / 1000000000;
        its.it_value.tv_nsec = next % 1000000000;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* 0 would disarm it */
    }
    if (hs_timer_pid != getpid()) {
        struct sigevent sev;
        if (next < 0)
            return;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = EMU_SIG_INTERNAL;
        sev.sigev_value.sival_int = HS_MAGIC_TIMER;
        if (timer_create(CLOCK_MONOTONIC, &sev, &hs_timer) != 0)
            return; /* the block hook still looks at the clock now and then */
        hs_timer_pid = getpid();
    }
    timer_settime(hs_timer, TIMER_ABSTIME, &its, NULL);
}

/* ---- what the handler noted, to the guest ------------------------------------- */

void emu_hostsig_import(crec_emu *e)
{
    uint64_t bits;

    if (!emu_hostsig_any)
        return;
    emu_hostsig_any = 0;
    if (hs_timer_due) {
        hs_timer_due = 0;
        emu_timers_fire(e, emu_now_ns());
        emu_hostsig_arm(e); /* the next expiry */
    }
    if (hs_kill) {
        hs_kill = 0;
        emu_exit(e, 0, SIGKILL, "guest killed by SIGKILL (sent by another process)");
        return;
    }
    bits = __atomic_exchange_n(&hs_bits, 0, __ATOMIC_ACQ_REL);
    for (int sig = 1; sig <= 64 && bits && !e->done && !e->fatal; sig++) {
        const siginfo_t *hi = &hs_info[sig];
        struct emu_siginfo si;
        if (!(bits & emu_sigbit(sig)))
            continue;
        memset(&si, 0, sizeof si);
        si.signo = sig;
        si.code = hi->si_code;
        si.pid = (uint32_t)hi->si_pid;
        si.uid = (uint32_t)hi->si_uid;
        if (sig == SIGCHLD && hi->si_code > 0) /* CLD_EXITED ...: _sigchld */
            si.status = hi->si_status;
        else if (hi->si_code == SI_QUEUE_ || hi->si_code == SI_TIMER)
            si.value = (uint64_t)(uintptr_t)hi->si_value.sival_ptr;
        if (emu_signal_queue(e, NULL, &si))
            continue; /* blocked everywhere, or waited for: pending */
        emu_signal_send(e, NULL, &si, sent_by_process(hi) ? "sent by another process"
                                                          : "sent to crec");
    }
}

/* ---- kill between the processes of a recording ---------------------------------- */

int emu_hostsig_kill(crec_emu *e, int pid, int sig)
{
    union sigval v;

    /* A crec of this recording killed by SIGKILL would lose the end of its
     * recording: it is asked to end its guest as SIGKILL would, and then
     * dies of SIGKILL itself (crec_emu_forked_exit). */
    if (!e->opt.recording || sig != SIGKILL || pid <= 0 || !in_tree(pid))
        return kill(pid, sig) ? -errno : 0;
    v.sival_int = HS_MAGIC_KILL;
    return sigqueue(pid, EMU_SIG_INTERNAL, v) ? -errno : 0;
}
