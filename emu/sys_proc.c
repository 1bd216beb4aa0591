/*
 * sys_proc.c - the process: exit, identity, limits, signal actions and
 * masks (delivery is sys_signal.c).  Processes are sys_process.c
 * what is not there yet (fork, exec).  Threads are sys_thread.c.
 */
#include <asm/prctl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "emu/emu_int.h"

static int64_t sys_exit_group(crec_emu *e, const uint64_t a[6])
{
    emu_exit(e, (int)(a[0] & 0xff), 0, NULL);
    return 0;
}

static int64_t sys_getpid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getpid(); }
static int64_t sys_getppid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getppid(); }
static int64_t sys_getuid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getuid(); }
static int64_t sys_geteuid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return geteuid(); }
static int64_t sys_getgid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getgid(); }
static int64_t sys_getegid(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getegid(); }
static int64_t sys_getpgrp(crec_emu *e, const uint64_t a[6]) { (void)e, (void)a; return getpgrp(); }
static int64_t sys_getsid(crec_emu *e, const uint64_t a[6]) { (void)e; return getsid((pid_t)a[0]); }
static int64_t sys_getpgid(crec_emu *e, const uint64_t a[6]) { (void)e; return getpgid((pid_t)a[0]); }

static int64_t sys_getresuid(crec_emu *e, const uint64_t a[6])
{
    uint32_t id = getuid(), eid = geteuid();
    if (emu_copy_out(e, a[0], &id, 4) || emu_copy_out(e, a[1], &eid, 4) ||
        emu_copy_out(e, a[2], &eid, 4))
        return -EFAULT;
    return 0;
}

static int64_t sys_getresgid(crec_emu *e, const uint64_t a[6])
{
    uint32_t id = getgid(), eid = getegid();
    if (emu_copy_out(e, a[0], &id, 4) || emu_copy_out(e, a[1], &eid, 4) ||
        emu_copy_out(e, a[2], &eid, 4))
        return -EFAULT;
    return 0;
}

static int64_t sys_getgroups(crec_emu *e, const uint64_t a[6])
{
    gid_t g[256];
    int n = getgroups(256, g);
    if (n < 0)
        return -errno;
    if (a[0] == 0)
        return n;
    if ((int)a[0] < n)
        return -EINVAL;
    return emu_copy_out(e, a[1], g, (uint64_t)n * sizeof *g) ?: n;
}

/* capget: crec's own capabilities, which are the guest's (one process);
 * an unknown version gets the one the host prefers written back, as the
 * kernel does. */
static int64_t sys_capget(crec_emu *e, const uint64_t a[6])
{
    uint32_t hdr[2], data[6] = {0}, want = 0;
    long r;

    if (emu_copy_in(e, hdr, a[0], sizeof hdr) != 0)
        return -EFAULT;
    want = hdr[0];
    r = syscall(SYS_capget, hdr, a[1] ? data : NULL);
    r = r ? -errno : 0;
    if (hdr[0] != want && emu_copy_out(e, a[0], hdr, sizeof hdr) != 0)
        return -EFAULT;
    if (r)
        return r;
    if (a[1] && emu_copy_out(e, a[1], data, hdr[0] == 0x19980330 ? 12 : 24) != 0)
        return -EFAULT; /* version 1 has one set of masks, 2 and 3 two */
    return 0;
}

static int64_t sys_zero(crec_emu *e, const uint64_t a[6])
{
    (void)e, (void)a;
    return 0;
}

static int64_t sys_enosys(crec_emu *e, const uint64_t a[6])
{
    (void)e, (void)a;
    return -ENOSYS; /* known, and glibc copes without it (rseq) */
}

static int64_t sys_arch_prctl(crec_emu *e, const uint64_t a[6])
{
    uint64_t v;
    switch (a[0]) {
    case ARCH_SET_FS:
        emu_reg_set(e->cpu, UC_X86_REG_FS_BASE, a[1]);
        return 0;
    case ARCH_SET_GS:
        emu_reg_set(e->cpu, UC_X86_REG_GS_BASE, a[1]);
        return 0;
    case ARCH_GET_FS:
        v = emu_reg_get(e->cpu, UC_X86_REG_FS_BASE);
        return emu_copy_out(e, a[1], &v, 8);
    case ARCH_GET_GS:
        v = emu_reg_get(e->cpu, UC_X86_REG_GS_BASE);
        return emu_copy_out(e, a[1], &v, 8);
    default:
        return -EINVAL;
    }
}

static int64_t sys_uname(crec_emu *e, const uint64_t a[6])
{
    struct utsname u;
    uname(&u);
    return emu_copy_out(e, a[0], &u, sizeof u);
}

static int64_t sys_sysinfo(crec_emu *e, const uint64_t a[6])
{
    struct sysinfo si;
    sysinfo(&si);
    si.procs = 1;
    return emu_copy_out(e, a[0], &si, sizeof si);
}

static int64_t sys_getcpu(crec_emu *e, const uint64_t a[6])
{
    uint32_t zero = 0;
    if ((a[0] && emu_copy_out(e, a[0], &zero, 4)) || (a[1] && emu_copy_out(e, a[1], &zero, 4)))
        return -EFAULT;
    return 0;
}

static int64_t sys_prlimit64(crec_emu *e, const uint64_t a[6])
{
    struct rlimit rl;
    if (a[0] != 0 && (pid_t)a[0] != getpid())
        return -EPERM;
    if (a[3]) {
        if (getrlimit((int)a[1], &rl) != 0)
            return -errno;
        if (a[1] == RLIMIT_NOFILE) /* the guest's fd table */
            rl.rlim_cur = rl.rlim_max = EMU_MAX_FDS;
        if (emu_copy_out(e, a[3], &rl, sizeof rl) != 0)
            return -EFAULT;
    }
    /* a new limit is accepted and not applied: it would bind crec too */
    return 0;
}

static int64_t sys_getrlimit(crec_emu *e, const uint64_t a[6])
{
    uint64_t b[6] = {0, a[0], 0, a[1], 0, 0};
    return sys_prlimit64(e, b);
}

static int64_t sys_getrusage(crec_emu *e, const uint64_t a[6])
{
    struct rusage ru;
    if (getrusage((int)a[0] == RUSAGE_CHILDREN ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru) != 0)
        return -errno;
    return emu_copy_out(e, a[1], &ru, sizeof ru);
}

static int64_t sys_getrandom(crec_emu *e, const uint64_t a[6])
{
    uint8_t buf[256];
    uint64_t n = a[1] > sizeof buf ? sizeof buf : a[1];
    ssize_t r = getrandom(buf, n, (unsigned)a[2] & GRND_NONBLOCK);
    if (r < 0)
        return -errno;
    return emu_copy_out(e, a[0], buf, (uint64_t)r) ?: r;
}

static int64_t sys_prctl(crec_emu *e, const uint64_t a[6])
{
    switch (a[0]) {
    case 15: /* PR_SET_NAME */
        if (emu_string_in(e, a[1], e->comm, sizeof e->comm) == -EFAULT)
            return -EFAULT;
        e->comm[15] = '\0';
        return 0;
    case 16: /* PR_GET_NAME */
        return emu_copy_out(e, a[1], e->comm, 16);
    case 3: /* PR_GET_DUMPABLE */
        return 1;
    default:
        return -EINVAL;
    }
}

/* ---- signals: bookkeeping ------------------------------------------------ */

static int64_t sys_rt_sigaction(crec_emu *e, const uint64_t a[6])
{
    int sig = (int)a[0];
    struct emu_sigaction act;
    if (sig < 1 || sig > 64 || a[3] != 8)
        return -EINVAL;
    if (a[1] && (sig == SIGKILL || sig == SIGSTOP))
        return -EINVAL;
    if (a[1] && emu_copy_in(e, &act, a[1], sizeof act) != 0)
        return -EFAULT;
    if (a[2] && emu_copy_out(e, a[2], &e->sigs[sig], sizeof act) != 0)
        return -EFAULT;
    if (a[1]) {
        e->sigs[sig] = act;
        emu_hostsig_sync(e, sig); /* what crec does with it when the host sends it */
    }
    if (a[1] && act.handler > 1 && (sig == SIGSEGV || sig == SIGBUS))
        emu_signal_precise(e);
    return 0;
}

static int64_t sys_rt_sigprocmask(crec_emu *e, const uint64_t a[6])
{
    uint64_t set, old = e->sigmask;
    if (a[3] != 8)
        return -EINVAL;
    if (a[1]) {
        if (emu_copy_in(e, &set, a[1], 8) != 0)
            return -EFAULT;
        set &= ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1)));
        switch (a[0]) {
        case SIG_BLOCK: e->sigmask |= set; break;
        case SIG_UNBLOCK: e->sigmask &= ~set; break;
        case SIG_SETMASK: e->sigmask = set; break;
        default: return -EINVAL;
        }
    }
    if (a[2] && emu_copy_out(e, a[2], &old, 8) != 0)
        return -EFAULT;
    return 0;
}

/* A signal to ourselves (or from the kernel, as SIGPIPE): as kill sends it. */
int64_t emu_signal_self(crec_emu *e, int sig, const char *why)
{
    struct emu_siginfo si = {sig, 0 /* SI_USER */, (uint32_t)getpid(), (uint32_t)getuid(),
                             0, 0, 0};
    return emu_signal_send(e, NULL, &si, why);
}

static int64_t sys_kill(crec_emu *e, const uint64_t a[6])
{
    pid_t pid = (pid_t)a[0];
    if (pid <= 0 && a[1] != 0 && (int)a[1] != SIGKILL && (int)a[1] != SIGSTOP) {
        /* a process group, or every process: the host sends it, to this
         * crec too, whose handler makes it the guest's (hostsig.c) */
        if (a[1] > 64)
            return -EINVAL;
        return kill(pid, (int)a[1]) ? -errno : 0;
    }
    if (pid == 0 || pid == getpid() || (pid > 0 && emu_thread_by_tid(e, (uint32_t)pid))) {
        struct emu_siginfo si = {(int)a[1], 0 /* SI_USER */, (uint32_t)getpid(),
                                 (uint32_t)getuid(), 0, 0, 0};
        if (a[1] >= 1 && a[1] <= 64 && emu_signal_queue(e, NULL, &si))
            return 0; /* blocked everywhere, or waited for: pending */
        return emu_signal_send(e, NULL, &si, "sent by itself");
    }
    if (a[1] > 64)
        return -EINVAL;
    return emu_hostsig_kill(e, pid, (int)a[1]);
}

/* rt_sigqueueinfo: kill with the sender's siginfo (sigqueue's value).  A
 * signal to another process goes through the host with the same bytes. */
static int64_t sys_rt_sigqueueinfo(crec_emu *e, const uint64_t a[6])
{
    pid_t pid = (pid_t)a[0];
    uint8_t bytes[EMU_SIGINFO_SIZE];
    struct emu_siginfo si;

    if (a[1] < 1 || a[1] > 64)
        return -EINVAL;
    if (emu_copy_in(e, bytes, a[2], sizeof bytes) != 0)
        return -EFAULT;
    emu_siginfo_parse(bytes, (int)a[1], &si);
    if (pid != getpid() && !(pid > 0 && emu_thread_by_tid(e, (uint32_t)pid)))
        return syscall(SYS_rt_sigqueueinfo, pid, (int)a[1], bytes) ? -errno : 0;
    if (emu_signal_queue(e, NULL, &si))
        return 0; /* blocked everywhere, or waited for: pending */
    return emu_signal_send(e, NULL, &si, "sent by itself");
}

int64_t emu_not_yet(crec_emu *e, const char *what, int64_t ret)
{
    if (e->opt.strict) {
        crec_error_set(&e->err, CREC_ERR_UNSUPPORTED, "%s is not supported yet (--strict)", what);
        e->fatal = 1;
        crec_emu_cpu_stop(e->cpu);
        return ret;
    }
    fprintf(e->log, "crec: %s is not supported yet; the guest gets %s\n", what,
            ret == -EAGAIN ? "EAGAIN" : "ENOSYS");
    return ret;
}

void emu_sys_proc_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
#define ALIAS(name, fn, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){fn, f}
    REG(exit_group, "d");
    REG(getpid, "");
    REG(getppid, "");
    REG(getuid, "");
    REG(geteuid, "");
    REG(getgid, "");
    REG(getegid, "");
    REG(getpgrp, "");
    REG(getsid, "d");
    REG(getpgid, "d");
    REG(getresuid, "ppp");
    REG(getresgid, "ppp");
    REG(getgroups, "dp");
    REG(capget, "pp");
    ALIAS(rseq, sys_enosys, "pxxx");
    REG(arch_prctl, "xp");
    REG(uname, "p");
    REG(sysinfo, "p");
    REG(getcpu, "ppp");
    REG(prlimit64, "ddpp");
    REG(getrlimit, "dp");
    ALIAS(setrlimit, sys_zero, "dp");
    REG(getrusage, "dp");
    REG(getrandom, "pux");
    REG(prctl, "dxxxx");
    REG(rt_sigaction, "dppu");
    REG(rt_sigprocmask, "dppu");
    REG(kill, "dd");
    REG(rt_sigqueueinfo, "ddp");
    ALIAS(membarrier, sys_zero, "xx");
    ALIAS(sched_getparam, sys_zero, "dp");
    ALIAS(sched_getscheduler, sys_zero, "d");
#undef REG
#undef ALIAS
}
