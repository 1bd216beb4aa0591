/*
 * process.c - a guest process on top of a CPU: creation, the run loop, how
 * a run ends, guest memory access for syscall handlers, and the fd table.
 *
 * Guest file descriptors are numbers in a table of host descriptors, so
 * that crec's own files (a recording being written) are invisible to the
 * guest and can't be closed by it.  0, 1 and 2 start as the host's.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/emu_int.h"

/* ---- the standard streams crec was given ---------------------------------- */

/* Bit i: fd i (0-2) was closed when crec started.  Such an fd is taken at
 * once (by /dev/null), before crec opens anything that would land on it
 * (its log, a recording), and the guest gets it closed, as it would run
 * natively: `crec run -- echo hi >&-` fails as `echo hi >&-` does. */
static unsigned emu_std_closed;

__attribute__((constructor)) static void emu_std_note(void)
{
    for (int i = 0; i < 3; i++) {
        if (fcntl(i, F_GETFD) != -1 || errno != EBADF)
            continue;
        emu_std_closed |= 1u << i;
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0 && fd != i) { /* a lower one is still closed: it comes next */
            dup2(fd, i);
            close(fd);
        }
    }
}

/* ---- CPU callbacks that also tell the observer -------------------------- */

static void os_cpuid(void *ctx, uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    crec_emu *e = ctx;
    crec_emu_cpuid_default(leaf, sub, out);
    if (e->obs.on_cpuid)
        e->obs.on_cpuid(e->obs.ctx, leaf, sub, out);
}

static uint64_t os_rdtsc(void *ctx, crec_emu_cpu *cpu)
{
    crec_emu *e = ctx;
    uint64_t v = crec_emu_rdtsc_default(crec_emu_cpu_icount(cpu));
    if (e->obs.on_rdtsc)
        e->obs.on_rdtsc(e->obs.ctx, v);
    return v;
}

/* RDRAND/RDSEED: the host kernel's randomness (what the instruction would
 * give, and what a recording must keep). */
static uint64_t os_rdrand(void *ctx, crec_emu_cpu *cpu, int seed)
{
    crec_emu *e = ctx;
    uint64_t v = 0;

    (void)cpu, (void)seed;
    if (getrandom(&v, sizeof v, 0) != sizeof v)
        v = (uint64_t)crec_emu_cpu_icount(cpu) * 0x9E3779B97F4A7C15ull; /* never short in practice */
    if (e->obs.on_rdrand)
        e->obs.on_rdrand(e->obs.ctx, v);
    return v;
}

/* A block starts: the scheduler may stop the CPU before it (the observer
 * then sees the block when it runs, later). */
static void os_block(void *ctx, uint64_t addr, uint32_t n, uint64_t icount)
{
    crec_emu *e = ctx;

    if (emu_sched_block(e, addr, n, icount))
        return;
    /* a signal from outside, one that became ready, or (looked for every
     * 1024 blocks, in case the host timer could not be made) a due timer */
    if ((emu_hostsig_any || emu_signal_ready(e) || ++e->async_tick >= 1024) &&
        emu_signal_async(e, addr))
        return;
    if (e->obs.on_block)
        e->obs.on_block(e->obs.ctx, addr, n, icount, emu_running_icount(e, icount));
}

/*
 * The stack as RLIMIT_STACK (crec's own, which the guest inherits) says,
 * and the mmap area below it as Linux places it without ASLR: the stack
 * limit and a 1 MiB guard gap below the stack top, but at least 128 MiB
 * (an unlimited stack is taken as 1 GiB).
 */
static void stack_layout(crec_emu *e)
{
    struct rlimit rl;
    uint64_t size = 8ull << 20, gap;

    if (getrlimit(RLIMIT_STACK, &rl) == 0)
        size = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1ull << 30) ? 1ull << 30
                                                                         : rl.rlim_cur;
    if (size < (128ull << 10))
        size = 128ull << 10;
    e->stack_size = EMU_PAGE_UP(size);
    gap = e->stack_size + (1ull << 20);
    if (gap < (128ull << 20))
        gap = 128ull << 20;
    e->mmap_top = EMU_STACK_TOP - gap;
}

int crec_emu_create(crec_emu **out, const struct crec_emu_options *opt, crec_error *err)
{
    crec_emu *e = crec_calloc(1, sizeof *e);
    struct crec_emu_cpu_hooks h = {0};
    int rc;

    *out = NULL;
    if (!e)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (opt)
        e->opt = *opt;
    e->log = e->opt.log ? e->opt.log : stderr;
    if (e->opt.observer)
        e->obs = *e->opt.observer;
    h.ctx = e;
    h.syscall = emu_syscall_entry;
    h.cpuid = os_cpuid;
    h.rdtsc = os_rdtsc;
    h.rdrand = os_rdrand;
    h.block = os_block;
    rc = crec_emu_cpu_create(&e->cpu, &h, err);
    if (rc == CREC_OK)
        rc = emu_sched_init(e, err);
    if (rc != CREC_OK) {
        emu_sched_free(e);
        crec_emu_cpu_free(e->cpu);
        crec_free(e);
        return rc;
    }
    /* The guest gets its own copies of 0, 1 and 2: when it closes them at
     * exit (coreutils does), crec's own stderr stays open for its messages.
     * One that was closed when crec started is closed for the guest too. */
    for (int i = 0; i < EMU_MAX_FDS; i++)
        e->fds[i] = i < 3 && !(emu_std_closed >> i & 1) ? fcntl(i, F_DUPFD_CLOEXEC, 3) : -1;
    e->umask_v = 022;
    /* A signal ignored when crec started stays ignored across execve(2):
     * the program starts with it ignored, as it would natively. */
    for (int sig = 1; sig <= 64; sig++) {
        struct sigaction old;
        if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &old) == 0 &&
            old.sa_handler == SIG_IGN)
            e->sigs[sig].handler = 1; /* SIG_IGN */
    }
    stack_layout(e);
    *out = e;
    return CREC_OK;
}

void crec_emu_free(crec_emu *e)
{
    if (!e)
        return;
    for (int i = 0; i < EMU_MAX_FDS; i++)
        if (e->fds[i] >= 0)
            close(e->fds[i]);
    emu_sched_free(e);
    emu_exec_free(e);
    crec_emu_cpu_free(e->cpu);
    emu_named_free(e);
    crec_free(e);
}

void crec_emu_stop(crec_emu *e)
{
    e->stopped = 1;
    crec_emu_cpu_stop(e->cpu);
}

crec_emu_cpu *crec_emu_cpu_of(crec_emu *e)
{
    return e->cpu;
}

int crec_emu_load(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                  crec_error *err)
{
    return emu_load_elf(e, path, argv, envp, err);
}

/* ---- the end of a run ---------------------------------------------------- */

void emu_exit(crec_emu *e, int status, int signo, const char *msg)
{
    if (e->done)
        return;
    e->done = 1;
    e->exit.status = status;
    e->exit.signo = signo;
    if (msg)
        snprintf(e->exit.msg, sizeof e->exit.msg, "%s", msg);
    crec_emu_cpu_stop(e->cpu);
}

static const char *access_text(const struct crec_emu_stop *s)
{
    switch (s->access) {
    case 'r': return s->unmapped ? "read of unmapped" : "read of protected";
    case 'w': return s->unmapped ? "write to unmapped" : "write to read-only";
    case 'x': return s->unmapped ? "execute of unmapped" : "execute of non-executable";
    default: return "access to";
    }
}

static void fatal_stop(crec_emu *e, const struct crec_emu_stop *s)
{
    char msg[256];
    const char *name = sigabbrev_np(s->signo);

    if (s->why == CREC_STOP_FAULT && s->unmapped &&
        s->addr < EMU_STACK_TOP - e->stack_size &&
        s->addr >= EMU_STACK_TOP - e->stack_size - (1ull << 20))
        snprintf(msg, sizeof msg, "guest killed by SIG%s at 0x%llx: stack overflow (%s 0x%llx, "
                 "below the %llu KiB stack; ulimit -s sets its size)", name,
                 (unsigned long long)s->rip, access_text(s), (unsigned long long)s->addr,
                 (unsigned long long)(e->stack_size >> 10));
    else if (s->why == CREC_STOP_FAULT && s->access != '?')
        snprintf(msg, sizeof msg, "guest killed by SIG%s at 0x%llx (%s 0x%llx)", name,
                 (unsigned long long)s->rip, access_text(s), (unsigned long long)s->addr);
    else if (s->why == CREC_STOP_ILLEGAL)
        snprintf(msg, sizeof msg, "guest killed by SIG%s at 0x%llx: illegal instruction %s",
                 name, (unsigned long long)s->rip, s->what);
    else
        snprintf(msg, sizeof msg, "guest killed by SIG%s at 0x%llx: %s", name,
                 (unsigned long long)s->rip, s->what);
    emu_exit(e, 0, s->signo, msg);
    e->exit.stop = *s;
}

int crec_emu_run(crec_emu *e, struct crec_emu_exit *ex, crec_error *err)
{
    struct crec_emu_stop stop;

    memset(ex, 0, sizeof *ex);
    emu_hostsig_start(e);
    emu_hostsig_arm(e);
    while (!e->done && !e->fatal && !e->stopped) {
        int rc = crec_emu_cpu_run(e->cpu, &stop, err);
        if (rc != CREC_OK) {
            emu_hostsig_stop(e);
            return rc;
        }
        if (!e->done && !e->fatal && stop.why != CREC_STOP_REQUESTED) {
            if (!emu_signal_fault(e, &stop))
                fatal_stop(e, &stop);
        } else if (!e->done && !e->fatal && !e->stopped) {
            if (e->precise == 2)
                emu_signal_precise_now(e);
            if (e->exec_req)
                emu_exec_now(e);
            if (e->async_rip)
                emu_signal_async_now(e);
            emu_sched_stopped(e);
        }
    }
    emu_hostsig_stop(e);
    if (e->fatal) {
        if (err)
            *err = e->err;
        return e->err.code;
    }
    if (!e->opt.recording) /* the recorder completes its file first */
        crec_emu_forked_exit(e);
    *ex = e->exit;
    if (e->stopped)
        return CREC_OK;
    if (e->obs.on_exit)
        e->obs.on_exit(e->obs.ctx, ex);
    return CREC_OK;
}

/* ---- guest memory for handlers ------------------------------------------ */

void emu_note_written(crec_emu *e, uint64_t addr, uint64_t len)
{
    struct crec_emu_syscall *sc = &e->sc;
    if (len == 0)
        return;
    if (sc->n_out < CREC_EMU_MAX_OUT)
        sc->out[sc->n_out++] = (struct crec_emu_range){addr, len};
    else
        sc->out_overflow = 1;
}

int emu_copy_in(crec_emu *e, void *dst, uint64_t addr, uint64_t len)
{
    if (emu_mem_check(e->cpu, addr, len, CREC_PROT_READ) != 0)
        return -EFAULT;
    return crec_emu_mem_read(e->cpu, dst, addr, len) ? -EFAULT : 0;
}

int emu_copy_out(crec_emu *e, uint64_t addr, const void *src, uint64_t len)
{
    if (emu_mem_check(e->cpu, addr, len, CREC_PROT_WRITE) != 0)
        return -EFAULT;
    if (crec_emu_mem_write(e->cpu, addr, src, len) != 0)
        return -EFAULT;
    emu_note_written(e, addr, len);
    return 0;
}

long emu_string_in(crec_emu *e, uint64_t addr, char *buf, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (emu_copy_in(e, buf + i, addr + i, 1) != 0)
            return -EFAULT;
        if (buf[i] == '\0')
            return (long)i;
        /* fast path: the rest of the page in one go */
        const char *h = crec_emu_mem_host(e->cpu, addr + i, 1, CREC_PROT_READ);
        uint64_t page_left = CREC_PAGE_SIZE - ((addr + i) & (CREC_PAGE_SIZE - 1));
        size_t n = size - i < page_left ? size - i : page_left;
        const char *z = h ? memchr(h, '\0', n) : NULL;
        if (z) {
            memcpy(buf + i, h, (size_t)(z - h) + 1);
            return (long)(i + (size_t)(z - h));
        }
    }
    return -ENAMETOOLONG;
}

void *emu_buf(crec_emu *e, uint64_t addr, uint64_t len, int prot)
{
    return crec_emu_mem_host(e->cpu, addr, len ? len : 1, prot);
}

/* ---- file descriptors ----------------------------------------------------- */

int emu_fd_host(crec_emu *e, uint64_t gfd)
{
    return gfd < EMU_MAX_FDS ? e->fds[gfd] : -1;
}

int emu_fd_install(crec_emu *e, int hostfd, int lowest)
{
    for (int i = lowest < 0 ? 0 : lowest; i < EMU_MAX_FDS; i++)
        if (e->fds[i] < 0) {
            e->fds[i] = hostfd;
            e->cloexec[i] = 0;
            return i;
        }
    close(hostfd);
    return -EMFILE;
}

void emu_mem_event_path(crec_emu *e, enum crec_emu_mem_kind kind, uint64_t addr, uint64_t len,
                        int prot, const char *path, uint64_t off)
{
    struct crec_emu_mem_event ev = {kind, addr, len, prot, 0, -1, off, path};
    emu_named_map(e, addr, len, -1, path, off, 0);
    if (!e->obs.on_mem)
        return;
    ev.became_exec = (kind != CREC_MEM_MUNMAP) && (prot & CREC_PROT_EXEC);
    e->obs.on_mem(e->obs.ctx, &ev);
}

void emu_mem_event(crec_emu *e, enum crec_emu_mem_kind kind, uint64_t addr, uint64_t len,
                   int prot, int fd, uint64_t off)
{
    struct crec_emu_mem_event ev = {kind, addr, len, prot, 0, fd, off, NULL};
    char link[64], path[4096];
    int hostfd = fd >= 0 ? emu_fd_host(e, (uint64_t)fd) : -1;
    ssize_t n;

    /* anonymous memory (or none) where names were: a file mapping names
     * itself (sys_mmap), a change of protection keeps them */
    if (kind != CREC_MEM_MPROTECT && fd < 0)
        emu_named_unmap(e, addr, len);
    if (!e->obs.on_mem)
        return;
    ev.became_exec = (kind != CREC_MEM_MUNMAP) && (prot & CREC_PROT_EXEC);
    /* Only code needs a name: the recorder reads its symbols from the file. */
    if (ev.became_exec && hostfd >= 0) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", hostfd);
        n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            ev.path = path;
        }
    }
    e->obs.on_mem(e->obs.ctx, &ev);
}

/* ---- finding the program, as execvp does ----------------------------------- */

/* What execve(2) checks before it gives up the old image: @return 0 if
 * path is an executable x86-64 ELF file or #! script, or -errno (ENOENT,
 * EACCES, ENOEXEC, ...). */
int emu_exec_check(const char *path)
{
    struct stat st;
    unsigned char h[20];
    ssize_t n;
    int fd;

    if (stat(path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
        return -EACCES;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = read(fd, h, sizeof h);
    close(fd);
    if (n >= 2 && h[0] == '#' && h[1] == '!')
        return 0;
    if (n < 20 || memcmp(h, "\177ELF", 4) != 0 || h[4] != 2 || h[5] != 1 ||
        (h[18] | h[19] << 8) != 62)
        return -ENOEXEC;
    return 0;
}

/* CREC_FIND_OK if path is an executable x86-64 ELF file or #! script. */
static int check_program(const char *path, crec_error *err)
{
    struct stat st;
    int r = emu_exec_check(path);

    if (r == 0)
        return CREC_FIND_OK;
    if (r == -ENOENT || r == -ENOTDIR || r == -ENAMETOOLONG || r == -ELOOP)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: %s", path, strerror(-r)),
               CREC_FIND_MISSING;
    if (r == -ENOEXEC)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: not an x86-64 ELF executable", path),
               CREC_FIND_NOEXEC;
    if (r == -EACCES)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: %s", path,
                              stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "is a directory"
                                                                          : "permission denied"),
               CREC_FIND_NOEXEC;
    return crec_error_set(err, CREC_ERR_GUEST, "%s: %s", path, strerror(-r)), CREC_FIND_NOEXEC;
}

int crec_emu_find_program(const char *prog, char *path, size_t size, crec_error *err)
{
    const char *dirs = getenv("PATH");
    int noexec = 0;

    if (strchr(prog, '/')) {
        snprintf(path, size, "%s", prog);
        return check_program(path, err);
    }
    if (!dirs)
        dirs = "/usr/local/bin:/usr/bin:/bin";
    while (*prog) {
        const char *end = strchrnul(dirs, ':');
        int len = (int)(end - dirs);
        crec_error e2;
        snprintf(path, size, "%.*s%s%s", len, dirs, len ? "/" : "", prog);
        int rc = check_program(path, &e2);
        if (rc == CREC_FIND_OK)
            return rc;
        if (rc == CREC_FIND_NOEXEC && !noexec) {
            noexec = 1; /* like execvp: report EACCES only if nothing better */
            if (err)
                *err = e2;
        }
        if (!*end)
            break;
        dirs = end + 1;
    }
    if (noexec)
        return CREC_FIND_NOEXEC;
    crec_error_set(err, CREC_ERR_NOTFOUND, "%s: command not found", prog);
    return CREC_FIND_MISSING;
}
