/*
 * sys_process.c - processes under `crec run`: fork, vfork and clone
 * without CLONE_THREAD; wait4 and waitid; execve and execveat.
 *
 * Without a recording, a guest process is a crec process: fork forks crec
 * itself, so the child crec runs the child guest with a copy-on-write copy
 * of everything (guest memory, the fd table, the emulator), and the two
 * run side by side as native processes would.  Guest pids are then host
 * pids, so wait4 and waitid are the host's, and a pipe between guest
 * processes is a host pipe.  A child whose guest is killed by a signal
 * dies by that signal itself (crec_emu_run), so that its parent's wait4
 * sees WIFSIGNALED, as natively.  execve replaces the image in place: the
 * old mappings go, the loader runs again in the same engine.
 *
 * Recorded, each process is recorded by its own crec, into the one file
 * (docs/ARCHITECTURE.md, "Processes"): the observer is told before and
 * after a fork (on_fork) and an execve (on_exec), and each new image
 * counts its instructions and numbers its threads from the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define CLONE_VM_ 0x00000100ull
#define CLONE_VFORK_ 0x00004000ull
#define CLONE_SETTLS_ 0x00080000ull
#define CLONE_PARENT_SETTID_ 0x00100000ull
#define CLONE_CHILD_CLEARTID_ 0x00200000ull
#define CLONE_CHILD_SETTID_ 0x01000000ull
#define ARG_MAX_BYTES (2u << 20) /* argv and envp together, as Linux's default limit */
#define ARG_MAX_COUNT 65536

/* ---- fork ------------------------------------------------------------------ */

int64_t emu_fork(crec_emu *e, uint64_t flags, uint64_t stack, uint64_t ptid, uint64_t ctid,
                 uint64_t tls)
{
    struct emu_thread *t = e->sched.cur;
    pid_t pid;

    if ((flags & CLONE_VM_) && !(flags & CLONE_VFORK_))
        return emu_not_yet(e, "clone with CLONE_VM but neither CLONE_THREAD nor CLONE_VFORK",
                           -EAGAIN);
    if (e->obs.on_fork)
        e->obs.on_fork(e->obs.ctx, CREC_EMU_FORK_BEFORE, 0);
    if (e->fatal)
        return -EAGAIN;
    emu_hostsig_prefork(e);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        uint32_t tid = (uint32_t)getpid();
        e->forked = 1;
        emu_sched_only_current(e); /* a child has only the thread that forked */
        emu_sched_restart(e);      /* ... numbered 1, counting from 0 */
        emu_hostsig_child(e);
        emu_thread_drop_id(t); /* its id is the pid now */
        t->tid = tid;
        e->sig_pending = t->sig_pending = 0; /* pending signals are the parent's */
        e->sig_more.n = t->sig_more.n = 0;
        for (int k = 0; k < EMU_MAX_TIMERS; k++) /* and so are its timers */
            e->timers[k].used = 0;
        e->itimer_slot = 0;
        if (flags & CLONE_CHILD_SETTID_)
            emu_copy_out(e, ctid, &tid, 4);
        if (flags & CLONE_CHILD_CLEARTID_)
            t->clear_child_tid = ctid;
        if (stack)
            emu_reg_set(e->cpu, UC_X86_REG_RSP, stack);
        if (flags & CLONE_SETTLS_)
            emu_reg_set(e->cpu, UC_X86_REG_FS_BASE, tls);
        if (e->obs.on_fork)
            e->obs.on_fork(e->obs.ctx, CREC_EMU_FORK_CHILD, 0);
        e->fork_child_syscall = 1; /* this fork's end is not the child's to record */
        return 0;
    }
    emu_hostsig_parent(e, pid);
    if (e->obs.on_fork)
        e->obs.on_fork(e->obs.ctx, CREC_EMU_FORK_PARENT, pid);
    if (flags & CLONE_PARENT_SETTID_) {
        uint32_t p = (uint32_t)pid;
        emu_copy_out(e, ptid, &p, 4);
    }
    return pid;
}

static int64_t sys_fork(crec_emu *e, const uint64_t a[6])
{
    (void)a;
    return emu_fork(e, SIGCHLD, 0, 0, 0, 0);
}

static int64_t sys_vfork(crec_emu *e, const uint64_t a[6])
{
    (void)a;
    return emu_fork(e, CLONE_VM_ | CLONE_VFORK_ | SIGCHLD, 0, 0, 0, 0);
}

int crec_emu_forked(const crec_emu *e)
{
    return e->forked;
}

void crec_emu_forked_exit(crec_emu *e)
{
    struct rlimit no_core = {0, 0};
    sigset_t set;
    int sig = e->exit.signo;

    if (!e->forked || !sig || e->exit.deadlock)
        return;
    /* no message: natively the parent (a shell) says what it wants */
    fflush(NULL);
    setrlimit(RLIMIT_CORE, &no_core); /* crec's core is not the program's */
    signal(sig, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig); /* a signal whose default is not to die */
}

/* ---- wait ------------------------------------------------------------------ */

static int64_t sys_wait4(crec_emu *e, const uint64_t a[6])
{
    struct rusage ru;
    int status = 0;
    pid_t r;

    if (a[1] && emu_mem_check(e->cpu, a[1], 4, CREC_PROT_WRITE) != 0)
        return -EFAULT;
    r = wait4((pid_t)a[0], &status, (int)a[2], a[3] ? &ru : NULL);
    if (r < 0)
        return -errno;
    if (r > 0 && a[1] && emu_copy_out(e, a[1], &status, 4) != 0)
        return -EFAULT;
    if (a[3] && emu_copy_out(e, a[3], &ru, sizeof ru) != 0)
        return -EFAULT;
    return r;
}

static int64_t sys_waitid(crec_emu *e, const uint64_t a[6])
{
    siginfo_t si;
    struct rusage ru;
    long r;

    memset(&si, 0, sizeof si);
    /* the host is x86-64 too: siginfo_t and rusage have the guest's layout */
    r = syscall(SYS_waitid, (int)a[0], (int)a[1], &si, (int)a[3], a[4] ? &ru : NULL);
    if (r < 0)
        return -errno;
    if (a[2] && emu_copy_out(e, a[2], &si, sizeof si) != 0)
        return -EFAULT;
    if (a[4] && emu_copy_out(e, a[4], &ru, sizeof ru) != 0)
        return -EFAULT;
    return r;
}

/* ---- execve ---------------------------------------------------------------- */

struct emu_exec {
    char path[PATH_MAX];
    char **argv, **envp;
    char *strings;
};

static void exec_free(struct emu_exec *x)
{
    if (!x)
        return;
    crec_free(x->argv);
    crec_free(x->envp);
    crec_free(x->strings);
    crec_free(x);
}

/* A NULL-terminated array of strings from the guest, appended to
 * x->strings: *out gets their offsets there (the caller makes them
 * pointers when the strings stop moving).  @return how many, or -errno. */
static int64_t read_strv(crec_emu *e, uint64_t addr, char ***out, struct emu_exec *x,
                         size_t *used, size_t *cap)
{
    size_t n = 0, ncap = 0;
    uint64_t *offs = NULL;

    for (;;) {
        uint64_t p = 0;
        long len;
        if (addr && emu_copy_in(e, &p, addr + 8 * n, 8) != 0)
            goto fault;
        if (!p)
            break;
        if (n >= ARG_MAX_COUNT)
            goto big;
        if (*cap - *used < 4096 + 1) {
            char *s = crec_realloc(x->strings, *cap * 2 + 8192);
            if (!s)
                goto nomem;
            x->strings = s;
            *cap = *cap * 2 + 8192;
        }
        len = emu_string_in(e, p, x->strings + *used, *cap - *used);
        if (len == -ENAMETOOLONG) { /* longer than what is left: grow and again */
            if (*cap > ARG_MAX_BYTES)
                goto big;
            char *s = crec_realloc(x->strings, *cap * 2);
            if (!s)
                goto nomem;
            x->strings = s;
            *cap *= 2;
            continue;
        }
        if (len < 0)
            goto fault;
        uint64_t *o = crec_grow(offs, &ncap, n + 2, sizeof *offs, 16);
        if (!o)
            goto nomem;
        offs = o;
        offs[n++] = *used;
        *used += (size_t)len + 1;
        if (*used > ARG_MAX_BYTES)
            goto big;
    }
    *out = crec_calloc(n + 1, sizeof **out);
    if (!*out)
        goto nomem;
    for (size_t i = 0; i < n; i++)
        (*out)[i] = (char *)(uintptr_t)offs[i]; /* made pointers by the caller */
    crec_free(offs);
    return (int64_t)n;
fault:
    crec_free(offs);
    return -EFAULT;
big:
    crec_free(offs);
    return -E2BIG;
nomem:
    crec_free(offs);
    return -ENOMEM;
}

static int64_t do_execve(crec_emu *e, int dirfd, uint64_t upath, uint64_t uargv, uint64_t uenvp,
                         int flags)
{
    struct emu_exec *x;
    size_t used = 0, cap = 0;
    char rel[PATH_MAX];
    int64_t r, nargv = 0;
    long len;

    if (flags & ~0x100 /* AT_SYMLINK_NOFOLLOW */)
        return emu_not_yet(e, "execveat with AT_EMPTY_PATH", -ENOSYS);
    len = emu_string_in(e, upath, rel, sizeof rel);
    if (len < 0)
        return len;
    if (len == 0)
        return -ENOENT;
    x = crec_calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    if (rel[0] == '/' || dirfd == AT_FDCWD) {
        snprintf(x->path, sizeof x->path, "%s", rel);
    } else {
        int h = emu_fd_host(e, (uint64_t)(unsigned)dirfd);
        char link[64];
        ssize_t n;
        if (h < 0) {
            exec_free(x);
            return -EBADF;
        }
        snprintf(link, sizeof link, "/proc/self/fd/%d", h);
        n = readlink(link, x->path, sizeof x->path - 1);
        if (n < 0 || (size_t)n + 1 + strlen(rel) >= sizeof x->path) {
            exec_free(x);
            return -ENAMETOOLONG;
        }
        snprintf(x->path + n, sizeof x->path - (size_t)n, "/%s", rel);
    }
    if ((r = emu_exec_check(x->path)) != 0 ||
        (r = nargv = read_strv(e, uargv, &x->argv, x, &used, &cap)) < 0 ||
        (r = read_strv(e, uenvp, &x->envp, x, &used, &cap)) < 0) {
        exec_free(x);
        return r;
    }
    for (int64_t i = 0; i < nargv; i++)
        x->argv[i] = x->strings + (uintptr_t)x->argv[i];
    for (int64_t i = 0; i < r; i++)
        x->envp[i] = x->strings + (uintptr_t)x->envp[i];
    /* The point of no return.  Handlers are reset now, so that nothing is
     * delivered into the old image; the image itself is replaced when the
     * CPU has stopped after this syscall (emu_exec_now). */
    for (int sig = 1; sig <= 64; sig++)
        if (e->sigs[sig].handler > 1)
            e->sigs[sig] = (struct emu_sigaction){0, 0, 0, 0};
    exec_free(e->exec_req);
    e->exec_req = x;
    crec_emu_cpu_stop(e->cpu);
    return 0;
}

static int64_t sys_execve(crec_emu *e, const uint64_t a[6])
{
    return do_execve(e, AT_FDCWD, a[0], a[1], a[2], 0);
}

static int64_t sys_execveat(crec_emu *e, const uint64_t a[6])
{
    return do_execve(e, (int)a[0], a[1], a[2], a[3], (int)a[4]);
}

struct maplist {
    struct crec_emu_mapping *m;
    size_t n, cap;
};

static int collect(void *ctx, const struct crec_emu_mapping *m)
{
    struct maplist *l = ctx;
    struct crec_emu_mapping *p = crec_grow(l->m, &l->cap, l->n + 1, sizeof *p, 64);
    if (!p)
        return 1;
    l->m = p;
    l->m[l->n++] = *m;
    return 0;
}

void emu_exec_now(crec_emu *e)
{
    struct emu_exec *x = e->exec_req;
    struct emu_thread *t = e->sched.cur;
    struct maplist l = {0};
    crec_error err = {0};
    crec_regs r;
    char msg[512];

    e->exec_req = NULL;
    if (e->obs.on_exec) /* the old image ends here, as it is */
        e->obs.on_exec(e->obs.ctx, CREC_EMU_EXEC_BEFORE, NULL, NULL);
    emu_sched_only_current(e); /* execve ends every other thread (Linux: de_thread) */
    /* the old image: every mapping, its translated code, crec's own hooks
     * on its instructions */
    if (crec_emu_mem_foreach(e->cpu, collect, &l) != 0) {
        crec_error_set(&e->err, CREC_ERR_NOMEM, "execve: out of memory");
        e->fatal = 1;
        goto out;
    }
    emu_xsites_free(e->cpu, 1);
    for (size_t i = 0; i < l.n; i++) {
        if (l.m[i].prot & CREC_PROT_EXEC)
            crec_emu_cpu_flush_code(e->cpu, l.m[i].start, l.m[i].end - l.m[i].start);
        crec_emu_mem_unmap(e->cpu, l.m[i].start, l.m[i].end - l.m[i].start, &err);
    }
    emu_named_free(e);
    e->brk_start = e->brk_cur = 0;
    /* what survives execve: fds without O_CLOEXEC, ignored signals, the mask */
    for (int i = 0; i < EMU_MAX_FDS; i++)
        if (e->fds[i] >= 0 && e->cloexec[i]) {
            close(e->fds[i]);
            e->fds[i] = -1;
            e->cloexec[i] = 0;
            e->synth[i] = 0;
        }
    for (int k = 0; k < EMU_MAX_TIMERS; k++) /* POSIX timers go; alarm stays */
        if (k != e->itimer_slot - 1)
            e->timers[k].used = 0;
    t->clear_child_tid = t->robust_list = 0;
    t->ss_sp = t->ss_size = 0;
    t->ss_flags = 0;
    memset(&r, 0, sizeof r);
    r.rflags = 0x202;
    r.fpcw = 0x37f;
    r.mxcsr = 0x1f80;
    r.fptag = 0xffff;
    emu_sched_restart(e); /* the new image counts from 0, its thread is number 1 */
    emu_hostsig_exec(e);
    if (crec_emu_regs_set(e->cpu, &r, &err) != CREC_OK ||
        emu_load_elf(e, x->path, x->argv, x->envp, &err) != CREC_OK) {
        snprintf(msg, sizeof msg, "guest killed by SIGSEGV (execve of %.100s failed after the old "
                 "image was gone: %.200s)", x->path, err.msg);
        emu_exit(e, 0, SIGSEGV, msg);
    }
    if (e->obs.on_exec)
        e->obs.on_exec(e->obs.ctx, CREC_EMU_EXEC_AFTER, x->path, x->argv);
out:
    crec_free(l.m);
    exec_free(x);
}

void emu_exec_free(crec_emu *e)
{
    exec_free(e->exec_req);
    e->exec_req = NULL;
}

/* ---- identity and fds around exec --------------------------------------------- */

/* The ids are the host's: crec is the process (a forked child crec too). */
#define ID_PASSTHROUGH(name)                                                           \
    static int64_t sys_##name(crec_emu *e, const uint64_t a[6])                      \
    {                                                                              \
        long r = syscall(SYS_##name, a[0], a[1], a[2]);                            \
        (void)e;                                                                   \
        return r < 0 ? -errno : r;                                                 \
    }
ID_PASSTHROUGH(setuid)
ID_PASSTHROUGH(setgid)
ID_PASSTHROUGH(setreuid)
ID_PASSTHROUGH(setregid)
ID_PASSTHROUGH(setresuid)
ID_PASSTHROUGH(setresgid)
ID_PASSTHROUGH(setsid)
ID_PASSTHROUGH(setpgid) /* timeout(1) signals its own group, made so */

/* close_range(first, last, flags): CLOSE_RANGE_CLOEXEC marks them instead. */
static int64_t sys_close_range(crec_emu *e, const uint64_t a[6])
{
    uint64_t last = a[1] < EMU_MAX_FDS - 1 ? a[1] : EMU_MAX_FDS - 1;

    if (a[0] > a[1] || (a[2] & ~(uint64_t)(2 | 4) /* UNSHARE, CLOEXEC */))
        return -EINVAL;
    for (uint64_t i = a[0]; i <= last; i++) {
        if (e->fds[i] < 0)
            continue;
        if (a[2] & 4) {
            e->cloexec[i] = 1;
        } else {
            close(e->fds[i]);
            e->fds[i] = -1;
            e->synth[i] = 0;
        }
    }
    return 0;
}

void emu_sys_process_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(fork, "");
    REG(vfork, "");
    REG(execve, "spp");
    REG(execveat, "fsppx");
    REG(wait4, "dpxp");
    REG(waitid, "ddpxp");
    REG(setuid, "d");
    REG(setgid, "d");
    REG(setreuid, "dd");
    REG(setregid, "dd");
    REG(setresuid, "ddd");
    REG(setresgid, "ddd");
    REG(setsid, "");
    REG(setpgid, "dd");
    REG(close_range, "uux");
#undef REG
}
