/*
 * sys_fs.c - files, descriptors and directories.
 *
 * Most calls pass through to the host kernel with the guest descriptor
 * translated and guest buffers reached through host pointers.  A buffer
 * that spans two mappings whose host memory is not contiguous goes through
 * a bounce buffer instead.  x86-64 host and guest share every structure
 * layout (stat, statx, statfs, termios, dirent64), so they are copied as
 * bytes.
 */
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define BOUNCE_MAX (1u << 20)
#define PATH_SZ 4096

/* Sizes of the guest's structures, as Linux x86-64 lays them out. */
#define G_IOVEC 16        /* struct iovec: base, length */
#define G_IOV_MAX 1024    /* UIO_MAXIOV */
#define G_IOV_BATCH 64    /* iovecs moved at once (a short transfer is allowed) */
#define G_FD_PAIR 8       /* int[2] of pipe2 */
#define G_TERMIOS 36      /* struct termios as the kernel has it */
#define G_WINSIZE 8       /* struct winsize */
#define G_PID 4           /* pid_t */
#define G_LOFF 8          /* loff_t, off_t */
#define G_STATX 256       /* struct statx */
#define G_STATFS 120      /* struct statfs */
#define G_POLL_MAX 256    /* pollfds handled in one poll */
#define G_FD_SETSIZE 1024 /* FD_SETSIZE */

static int64_t R(long r)
{
    return r < 0 ? -errno : r;
}

static int dirfd_host(crec_emu *e, uint64_t fd)
{
    if ((int)fd == AT_FDCWD)
        return AT_FDCWD;
    return emu_fd_host(e, fd);
}

#define HOSTFD(h, gfd)                                                                        \
    int h = emu_fd_host(e, (gfd));                                                            \
    if (h < 0)                                                                                \
        return -EBADF

#define PATH(buf, addr)                                                                       \
    char buf[PATH_SZ];                                                                        \
    do {                                                                                      \
        long l_ = emu_string_in(e, (addr), buf, sizeof buf);                                  \
        if (l_ < 0)                                                                           \
            return l_;                                                                        \
    } while (0)

/* ---- read and write ------------------------------------------------------ */

/* read/pread into a guest buffer; off < 0: no offset. */
static int64_t do_read(crec_emu *e, int h, uint64_t buf, uint64_t n, int64_t off)
{
    void *p;
    long r;

    if (n == 0)
        return R(off < 0 ? read(h, NULL, 0) : pread(h, NULL, 0, off));
    /* A buffer that runs off the end of its mapping: Linux transfers what
     * fits before the fault, and fails with EFAULT only when nothing does. */
    if ((n = emu_mem_span(e->cpu, buf, n, CREC_PROT_WRITE)) == 0)
        return -EFAULT;
    p = emu_buf(e, buf, n, CREC_PROT_WRITE);
    if (!p) {
        if (n > BOUNCE_MAX)
            n = BOUNCE_MAX;
        p = crec_malloc(n);
        if (!p)
            return -ENOMEM;
        r = off < 0 ? read(h, p, n) : pread(h, p, n, off);
        int64_t ret = R(r);
        if (r > 0)
            emu_copy_out(e, buf, p, (uint64_t)r);
        crec_free(p);
        return ret;
    }
    r = off < 0 ? read(h, p, n) : pread(h, p, n, off);
    if (r > 0)
        emu_note_written(e, buf, (uint64_t)r);
    return R(r);
}

static int64_t do_write(crec_emu *e, int h, uint64_t buf, uint64_t n, int64_t off)
{
    const void *p;
    void *tmp = NULL;
    long r;

    if (n) { /* as for read: what fits is sent, but a pipe takes all or nothing */
        uint64_t fit = emu_mem_span(e->cpu, buf, n, CREC_PROT_READ);
        struct stat st;
        if (fit == 0 || (fit < n && fstat(h, &st) == 0 && S_ISFIFO(st.st_mode)))
            return -EFAULT;
        n = fit;
    }
    p = emu_buf(e, buf, n, CREC_PROT_READ);
    if (n && !p) {
        if (n > BOUNCE_MAX)
            n = BOUNCE_MAX;
        p = tmp = crec_malloc(n);
        if (!tmp)
            return -ENOMEM;
        crec_emu_mem_read(e->cpu, tmp, buf, n);
    }
    r = off < 0 ? write(h, p, n) : pwrite(h, p, n, off);
    crec_free(tmp);
    return R(r);
}

static int64_t sys_read(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return do_read(e, h, a[1], a[2], -1);
}

static int64_t sys_write(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return do_write(e, h, a[1], a[2], -1);
}

static int64_t sys_pread64(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    if ((int64_t)a[3] < 0)
        return -EINVAL;
    return do_read(e, h, a[1], a[2], (int64_t)a[3]);
}

static int64_t sys_pwrite64(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    if ((int64_t)a[3] < 0)
        return -EINVAL;
    return do_write(e, h, a[1], a[2], (int64_t)a[3]);
}

/* readv/writev (and the p- forms, off >= 0): one host call when every
 * element is directly reachable, else element by element. */
static int64_t do_vec(crec_emu *e, const uint64_t a[6], int writing, int64_t off)
{
    uint64_t cnt = a[2], iov[2 * G_IOV_BATCH];
    struct iovec hv[G_IOV_BATCH];
    int64_t total = 0;
    int direct = 1;
    long r;

    HOSTFD(h, a[0]);
    if (cnt > G_IOV_MAX)
        return -EINVAL;
    if (cnt > G_IOV_BATCH)
        cnt = G_IOV_BATCH; /* a short transfer is allowed */
    if (cnt && emu_copy_in(e, iov, a[1], cnt * G_IOVEC) != 0)
        return -EFAULT;
    for (uint64_t i = 0; i < cnt; i++) {
        hv[i].iov_len = iov[2 * i + 1];
        hv[i].iov_base = emu_buf(e, iov[2 * i], iov[2 * i + 1],
                                 writing ? CREC_PROT_READ : CREC_PROT_WRITE);
        if (!hv[i].iov_base && hv[i].iov_len)
            direct = 0;
    }
    if (direct) {
        if (writing)
            r = off < 0 ? writev(h, hv, (int)cnt) : pwritev(h, hv, (int)cnt, off);
        else
            r = off < 0 ? readv(h, hv, (int)cnt) : preadv(h, hv, (int)cnt, off);
        if (r > 0 && !writing) {
            uint64_t left = (uint64_t)r;
            for (uint64_t i = 0; i < cnt && left; i++) {
                uint64_t n = hv[i].iov_len < left ? hv[i].iov_len : left;
                emu_note_written(e, iov[2 * i], n);
                left -= n;
            }
        }
        return R(r);
    }
    for (uint64_t i = 0; i < cnt; i++) {
        int64_t n = writing ? do_write(e, h, iov[2 * i], iov[2 * i + 1], off)
                            : do_read(e, h, iov[2 * i], iov[2 * i + 1], off);
        if (n < 0)
            return total ? total : n;
        total += n;
        if (off >= 0)
            off += n;
        if ((uint64_t)n < iov[2 * i + 1])
            break;
    }
    return total;
}

static int64_t sys_readv(crec_emu *e, const uint64_t a[6]) { return do_vec(e, a, 0, -1); }
static int64_t sys_writev(crec_emu *e, const uint64_t a[6]) { return do_vec(e, a, 1, -1); }
static int64_t sys_preadv(crec_emu *e, const uint64_t a[6]) { return do_vec(e, a, 0, (int64_t)a[3]); }
static int64_t sys_pwritev(crec_emu *e, const uint64_t a[6]) { return do_vec(e, a, 1, (int64_t)a[3]); }

/* ---- open, close, dup ------------------------------------------------------ */

static int64_t do_openat(crec_emu *e, uint64_t dirfd, uint64_t path, uint64_t flags, uint64_t mode)
{
    int d = dirfd_host(e, dirfd), h, r, g;
    PATH(p, path);
    if (d == -1)
        return -EBADF;
    /* /proc/self and the CPU's files describe the guest (procfs.c) */
    if (p[0] == '/' && (r = emu_procfs_open(e, p, (int)flags, &h)) != 0) {
        if (r < 0)
            return r;
        g = emu_fd_install(e, h, 0);
        if (g >= 0 && r == 2)
            e->synth[g] = 1, e->synth_pos[g] = 0;
        return g;
    }
    h = openat(d, p, (int)flags | O_CLOEXEC, (mode_t)mode);
    if (h < 0)
        return -errno;
    g = emu_fd_install(e, h, 0);
    if (g >= 0)
        e->cloexec[g] = (flags & O_CLOEXEC) != 0;
    return g;
}

static int64_t sys_open(crec_emu *e, const uint64_t a[6])
{
    return do_openat(e, (uint64_t)AT_FDCWD, a[0], a[1], a[2]);
}

static int64_t sys_openat(crec_emu *e, const uint64_t a[6])
{
    return do_openat(e, a[0], a[1], a[2], a[3]);
}

static int64_t sys_creat(crec_emu *e, const uint64_t a[6])
{
    return do_openat(e, (uint64_t)AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1]);
}

static int64_t sys_close(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    e->fds[a[0]] = -1;
    e->synth[a[0]] = 0;
    return close(h) == 0 || errno == EINTR ? 0 : -errno;
}

static int64_t sys_dup(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    int n = fcntl(h, F_DUPFD_CLOEXEC, 3);
    return n < 0 ? -errno : emu_fd_install(e, n, 0);
}

static int64_t do_dup3(crec_emu *e, uint64_t oldfd, uint64_t newfd, int flags)
{
    HOSTFD(h, oldfd);
    int n;
    if (newfd >= EMU_MAX_FDS)
        return -EBADF;
    if (oldfd == newfd)
        return flags ? -EINVAL : (int64_t)newfd;
    n = fcntl(h, F_DUPFD_CLOEXEC, 3);
    if (n < 0)
        return -errno;
    if (e->fds[newfd] >= 0)
        close(e->fds[newfd]);
    e->fds[newfd] = n;
    e->synth[newfd] = 0;
    e->cloexec[newfd] = (flags & O_CLOEXEC) != 0;
    return (int64_t)newfd;
}

static int64_t sys_dup2(crec_emu *e, const uint64_t a[6])
{
    if (a[0] == a[1])
        return emu_fd_host(e, a[0]) < 0 ? -EBADF : (int64_t)a[1];
    return do_dup3(e, a[0], a[1], 0);
}

static int64_t sys_dup3(crec_emu *e, const uint64_t a[6])
{
    return do_dup3(e, a[0], a[1], (int)a[2]);
}

static int64_t sys_pipe2(crec_emu *e, const uint64_t a[6])
{
    int hp[2], gp[2];
    if (emu_mem_check(e->cpu, a[0], G_FD_PAIR, CREC_PROT_WRITE) != 0)
        return -EFAULT;
    if (pipe2(hp, ((int)a[1] & ~O_CLOEXEC) | O_CLOEXEC) != 0)
        return -errno;
    gp[0] = emu_fd_install(e, hp[0], 0);
    if (gp[0] < 0) {
        close(hp[1]);
        return gp[0];
    }
    gp[1] = emu_fd_install(e, hp[1], 0);
    if (gp[1] < 0) {
        close(hp[0]);
        e->fds[gp[0]] = -1;
        return gp[1];
    }
    e->cloexec[gp[0]] = e->cloexec[gp[1]] = (a[1] & O_CLOEXEC) != 0;
    return emu_copy_out(e, a[0], gp, G_FD_PAIR);
}

static int64_t sys_pipe(crec_emu *e, const uint64_t a[6])
{
    uint64_t b[6] = {a[0], 0};
    return sys_pipe2(e, b);
}

static int64_t sys_fcntl(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    int cmd = (int)a[1];
    switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
        int n = fcntl(h, F_DUPFD_CLOEXEC, 3), g;
        if (n < 0)
            return -errno;
        g = emu_fd_install(e, n, (int)a[2]);
        if (g >= 0)
            e->cloexec[g] = cmd == F_DUPFD_CLOEXEC;
        return g;
    }
    case F_GETFD: /* the guest's close-on-exec (crec's host fds all have it) */
        return e->cloexec[a[0]] ? FD_CLOEXEC : 0;
    case F_SETFD:
        e->cloexec[a[0]] = (a[2] & FD_CLOEXEC) != 0;
        return 0;
    case F_GETFL:
    case F_SETFL:
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
    case F_GET_SEALS:
        return R(fcntl(h, cmd, (long)a[2]));
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW: {
        struct flock fl;
        if (emu_copy_in(e, &fl, a[2], sizeof fl) != 0)
            return -EFAULT;
        if (fcntl(h, cmd, &fl) != 0)
            return -errno;
        if (cmd == F_GETLK || cmd == F_OFD_GETLK)
            return emu_copy_out(e, a[2], &fl, sizeof fl);
        return 0;
    }
    default:
        return -EINVAL;
    }
}

/*
 * ioctls crec knows: how the argument travels.  IN/OUT: a buffer of
 * `size` bytes copied in or out around the host's ioctl; VAL: the argument
 * is a number; NONE: there is none; FD: a guest descriptor (FICLONE).
 */
enum ioctl_arg { ARG_NONE, ARG_VAL, ARG_IN, ARG_OUT, ARG_FD };

static const struct {
    unsigned long req;
    enum ioctl_arg how;
    unsigned size;
} ioctls[] = {
    {TCGETS, ARG_OUT, G_TERMIOS},      {TCSETS, ARG_IN, G_TERMIOS},
    {TCSETSW, ARG_IN, G_TERMIOS},      {TCSETSF, ARG_IN, G_TERMIOS},
    {TIOCGWINSZ, ARG_OUT, G_WINSIZE},  {TIOCSWINSZ, ARG_IN, G_WINSIZE},
    {TIOCGPGRP, ARG_OUT, G_PID},       {TIOCSPGRP, ARG_IN, G_PID},
    {TIOCGSID, ARG_OUT, G_PID},        {TIOCOUTQ, ARG_OUT, 4},
    {TIOCSCTTY, ARG_VAL, 0},  {TIOCNOTTY, ARG_NONE, 0}, {TCSBRK, ARG_VAL, 0},
    {TCXONC, ARG_VAL, 0},     {TCFLSH, ARG_VAL, 0},     {TIOCGPTN, ARG_OUT, 4},
    {TIOCSPTLCK, ARG_IN, 4},  {FIONREAD, ARG_OUT, 4},   {FIONBIO, ARG_IN, 4},
    {FIOASYNC, ARG_IN, 4},    {FICLONE, ARG_FD, 0},
};

/* An ioctl crec does not know: no result the program can rely on. */
static int64_t ioctl_unknown(crec_emu *e, const uint64_t a[6])
{
    if (e->opt.strict) {
        crec_error_set(&e->err, CREC_ERR_UNSUPPORTED,
                       "unsupported ioctl 0x%llx on fd %llu (--strict)", (unsigned long long)a[1],
                       (unsigned long long)a[0]);
        e->fatal = 1;
        crec_emu_cpu_stop(e->cpu);
    } else if (e->opt.strace) {
        fprintf(e->log, "crec: ioctl 0x%llx on fd %llu is not emulated: -ENOTTY\n",
                (unsigned long long)a[1], (unsigned long long)a[0]);
    }
    return -ENOTTY;
}

static int64_t sys_ioctl(crec_emu *e, const uint64_t a[6])
{
    unsigned char buf[64];
    HOSTFD(h, a[0]);

    switch (a[1]) {
    case FIOCLEX: /* the guest's close-on-exec, as fcntl F_SETFD */
    case FIONCLEX:
        e->cloexec[a[0]] = a[1] == FIOCLEX;
        return 0;
    default:
        break;
    }
    for (size_t i = 0; i < sizeof ioctls / sizeof ioctls[0]; i++) {
        int other;
        if (ioctls[i].req != (unsigned long)(uint32_t)a[1])
            continue;
        switch (ioctls[i].how) {
        case ARG_NONE:
            return R(ioctl(h, ioctls[i].req));
        case ARG_VAL:
            return R(ioctl(h, ioctls[i].req, (unsigned long)a[2]));
        case ARG_FD:
            other = emu_fd_host(e, a[2]);
            return other < 0 ? -EBADF : R(ioctl(h, ioctls[i].req, other));
        case ARG_IN:
            if (emu_copy_in(e, buf, a[2], ioctls[i].size) != 0)
                return -EFAULT;
            return R(ioctl(h, ioctls[i].req, buf));
        case ARG_OUT:
            if (ioctl(h, ioctls[i].req, buf) != 0)
                return -errno;
            return emu_copy_out(e, a[2], buf, ioctls[i].size);
        }
    }
    return ioctl_unknown(e, a);
}

/* ---- metadata ------------------------------------------------------------ */

static int64_t stat_out(crec_emu *e, long r, uint64_t addr, const void *st, size_t n)
{
    if (r < 0)
        return -errno;
    return emu_copy_out(e, addr, st, n);
}

static int64_t sys_fstat(crec_emu *e, const uint64_t a[6])
{
    struct stat st;
    HOSTFD(h, a[0]);
    return stat_out(e, syscall(SYS_fstat, h, &st), a[1], &st, sizeof st);
}

static int64_t sys_stat(crec_emu *e, const uint64_t a[6])
{
    struct stat st;
    PATH(p, a[0]);
    return stat_out(e, syscall(SYS_stat, p, &st), a[1], &st, sizeof st);
}

static int64_t sys_lstat(crec_emu *e, const uint64_t a[6])
{
    struct stat st;
    PATH(p, a[0]);
    return stat_out(e, syscall(SYS_lstat, p, &st), a[1], &st, sizeof st);
}

static int64_t sys_newfstatat(crec_emu *e, const uint64_t a[6])
{
    struct stat st;
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    if (d == -1 && !(p[0] == '/'))
        return -EBADF;
    return stat_out(e, syscall(SYS_newfstatat, d, p, &st, (int)a[3]), a[2], &st, sizeof st);
}

static int64_t sys_statx(crec_emu *e, const uint64_t a[6])
{
    unsigned char stx[G_STATX];
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    if (d == -1 && !(p[0] == '/'))
        return -EBADF;
    return stat_out(e, syscall(SYS_statx, d, p, (int)a[2], (unsigned)a[3], stx), a[4], stx,
                    G_STATX);
}

static int64_t sys_statfs(crec_emu *e, const uint64_t a[6])
{
    unsigned char b[G_STATFS];
    PATH(p, a[0]);
    return stat_out(e, syscall(SYS_statfs, p, b), a[1], b, sizeof b);
}

static int64_t sys_fstatfs(crec_emu *e, const uint64_t a[6])
{
    unsigned char b[G_STATFS];
    HOSTFD(h, a[0]);
    return stat_out(e, syscall(SYS_fstatfs, h, b), a[1], b, sizeof b);
}

static int64_t sys_lseek(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    if (e->synth[a[0]]) { /* rewinddir of /proc/self/fd: back to an entry */
        if ((int)a[2] != SEEK_SET || (int64_t)a[1] < 0)
            return -EINVAL;
        e->synth_pos[a[0]] = a[1];
        return (int64_t)a[1];
    }
    return R(lseek(h, (off_t)a[1], (int)a[2]));
}

static int64_t sys_getdents64(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    if (e->synth[a[0]])
        return emu_synthdir_getdents(e, (int)a[0], a[1], a[2]);
    uint64_t n = a[2] > BOUNCE_MAX ? BOUNCE_MAX : a[2];
    void *p = crec_malloc(n ? n : 1);
    long r;
    if (!p)
        return -ENOMEM;
    r = syscall(SYS_getdents64, h, p, n);
    int64_t ret = R(r);
    if (r > 0 && emu_copy_out(e, a[1], p, (uint64_t)r) != 0)
        ret = -EFAULT;
    crec_free(p);
    return ret;
}

static int64_t do_faccessat(crec_emu *e, uint64_t dirfd, uint64_t path, uint64_t mode,
                            uint64_t flags)
{
    int d = dirfd_host(e, dirfd);
    PATH(p, path);
    if (d == -1 && p[0] != '/')
        return -EBADF;
    return R(syscall(SYS_faccessat2, d, p, (int)mode, (int)flags));
}

static int64_t sys_access(crec_emu *e, const uint64_t a[6])
{
    return do_faccessat(e, (uint64_t)AT_FDCWD, a[0], a[1], 0);
}

static int64_t sys_faccessat(crec_emu *e, const uint64_t a[6])
{
    return do_faccessat(e, a[0], a[1], a[2], 0);
}

static int64_t sys_faccessat2(crec_emu *e, const uint64_t a[6])
{
    return do_faccessat(e, a[0], a[1], a[2], a[3]);
}

static int64_t sys_getcwd(crec_emu *e, const uint64_t a[6])
{
    char buf[PATH_SZ];
    size_t n;
    if (!getcwd(buf, sizeof buf))
        return -errno;
    n = strlen(buf) + 1;
    if (n > a[1])
        return -ERANGE;
    return emu_copy_out(e, a[0], buf, n) ?: (int64_t)n;
}

static int64_t sys_chdir(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(chdir(p));
}

static int64_t sys_fchdir(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(fchdir(h));
}

static int64_t do_readlinkat(crec_emu *e, uint64_t dirfd, uint64_t path, uint64_t buf,
                             uint64_t size)
{
    char out[PATH_SZ];
    int d = dirfd_host(e, dirfd);
    long n;
    PATH(p, path);
    if ((int64_t)size <= 0)
        return -EINVAL;
    if (p[0] == '/' && (n = emu_procfs_readlink(e, p, out, sizeof out)) != -1) {
        if (n < 0) /* /proc/self/exe, fd/N: the guest's, not crec's */
            return n;
        if (n > (long)sizeof out)
            n = sizeof out;
    } else {
        if (d == -1 && p[0] != '/')
            return -EBADF;
        n = readlinkat(d, p, out, sizeof out);
        if (n < 0)
            return -errno;
    }
    if ((uint64_t)n > size)
        n = (long)size;
    return emu_copy_out(e, buf, out, (uint64_t)n) ?: n;
}

static int64_t sys_readlink(crec_emu *e, const uint64_t a[6])
{
    return do_readlinkat(e, (uint64_t)AT_FDCWD, a[0], a[1], a[2]);
}

static int64_t sys_readlinkat(crec_emu *e, const uint64_t a[6])
{
    return do_readlinkat(e, a[0], a[1], a[2], a[3]);
}

/* ---- namespace changes ------------------------------------------------------ */

static int64_t sys_unlink(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(unlink(p));
}

static int64_t sys_unlinkat(crec_emu *e, const uint64_t a[6])
{
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    return R(unlinkat(d, p, (int)a[2]));
}

static int64_t sys_rmdir(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(rmdir(p));
}

static int64_t sys_mkdir(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(mkdir(p, (mode_t)a[1]));
}

static int64_t sys_mkdirat(crec_emu *e, const uint64_t a[6])
{
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    return R(mkdirat(d, p, (mode_t)a[2]));
}

static int64_t sys_rename(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    PATH(q, a[1]);
    return R(rename(p, q));
}

static int64_t sys_renameat2(crec_emu *e, const uint64_t a[6])
{
    int d1 = dirfd_host(e, a[0]), d2 = dirfd_host(e, a[2]);
    PATH(p, a[1]);
    PATH(q, a[3]);
    return R(syscall(SYS_renameat2, d1, p, d2, q, (unsigned)a[4]));
}

static int64_t sys_renameat(crec_emu *e, const uint64_t a[6])
{
    uint64_t b[6] = {a[0], a[1], a[2], a[3], 0, 0};
    return sys_renameat2(e, b);
}

static int64_t sys_symlink(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    PATH(q, a[1]);
    return R(symlink(p, q));
}

static int64_t sys_symlinkat(crec_emu *e, const uint64_t a[6])
{
    int d = dirfd_host(e, a[1]);
    PATH(p, a[0]);
    PATH(q, a[2]);
    return R(symlinkat(p, d, q));
}

static int64_t sys_link(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    PATH(q, a[1]);
    return R(link(p, q));
}

static int64_t sys_linkat(crec_emu *e, const uint64_t a[6])
{
    int d1 = dirfd_host(e, a[0]), d2 = dirfd_host(e, a[2]);
    PATH(p, a[1]);
    PATH(q, a[3]);
    return R(linkat(d1, p, d2, q, (int)a[4]));
}

static int64_t sys_chmod(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(chmod(p, (mode_t)a[1]));
}

static int64_t sys_fchmod(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(fchmod(h, (mode_t)a[1]));
}

static int64_t sys_fchmodat(crec_emu *e, const uint64_t a[6])
{
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    return R(syscall(SYS_fchmodat, d, p, (mode_t)a[2]));
}

static int64_t sys_fchown(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(fchown(h, (uid_t)a[1], (gid_t)a[2]));
}

static int64_t sys_fchownat(crec_emu *e, const uint64_t a[6])
{
    int d = dirfd_host(e, a[0]);
    PATH(p, a[1]);
    return R(fchownat(d, p, (uid_t)a[2], (gid_t)a[3], (int)a[4]));
}

static int64_t sys_utimensat(crec_emu *e, const uint64_t a[6])
{
    struct timespec ts[2];
    char p[PATH_SZ];
    int d = dirfd_host(e, a[0]);
    if (a[1] && emu_string_in(e, a[1], p, sizeof p) < 0)
        return -EFAULT;
    if (a[2] && emu_copy_in(e, ts, a[2], sizeof ts) != 0)
        return -EFAULT;
    return R(syscall(SYS_utimensat, d, a[1] ? p : NULL, a[2] ? ts : NULL, (int)a[3]));
}

static int64_t sys_ftruncate(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(ftruncate(h, (off_t)a[1]));
}

static int64_t sys_truncate(crec_emu *e, const uint64_t a[6])
{
    PATH(p, a[0]);
    return R(truncate(p, (off_t)a[1]));
}

static int64_t sys_fsync(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(fsync(h));
}

static int64_t sys_fallocate(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(fallocate(h, (int)a[1], (off_t)a[2], (off_t)a[3]));
}

static int64_t sys_flock(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(syscall(SYS_flock, h, (int)a[1]));
}

static int64_t sys_fadvise64(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    (void)h;
    return 0; /* advice only */
}

static int64_t sys_umask(crec_emu *e, const uint64_t a[6])
{
    uint32_t old = e->umask_v;
    e->umask_v = (uint32_t)a[0] & 0777;
    umask((mode_t)e->umask_v);
    return old;
}

/* copy_file_range and sendfile move data inside the host kernel; only the
 * offsets live in guest memory. */
static int64_t sys_copy_file_range(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(hi, a[0]);
    HOSTFD(ho, a[2]);
    loff_t oi, oo;
    long r;
    if ((a[1] && emu_copy_in(e, &oi, a[1], G_LOFF)) || (a[3] && emu_copy_in(e, &oo, a[3], G_LOFF)))
        return -EFAULT;
    r = syscall(SYS_copy_file_range, hi, a[1] ? &oi : NULL, ho, a[3] ? &oo : NULL,
                (size_t)a[4], (unsigned)a[5]);
    if (r < 0)
        return -errno;
    if ((a[1] && emu_copy_out(e, a[1], &oi, G_LOFF)) ||
        (a[3] && emu_copy_out(e, a[3], &oo, G_LOFF)))
        return -EFAULT;
    return r;
}

static int64_t sys_sendfile(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(ho, a[0]);
    HOSTFD(hi, a[1]);
    off_t off;
    long r;
    if (a[2] && emu_copy_in(e, &off, a[2], G_LOFF))
        return -EFAULT;
    r = syscall(SYS_sendfile, ho, hi, a[2] ? &off : NULL, (size_t)a[3]);
    if (r < 0)
        return -errno;
    if (a[2] && emu_copy_out(e, a[2], &off, G_LOFF))
        return -EFAULT;
    return r;
}

/* ---- extended attributes ------------------------------------------------------------ */

/*
 * The guest's files behave as on a file system without extended
 * attributes: every call is refused with ENOTSUP once the file is found
 * (so `cp -a` and `sed -i`, which copy them when they can, go on quietly;
 * `ls -l` shows no ACL mark).  Path calls look the path up first, as Linux
 * does: a missing file is ENOENT.
 */
static int64_t xattr_path(crec_emu *e, uint64_t path, int follow)
{
    struct stat st;
    PATH(p, path);
    if ((follow ? stat(p, &st) : lstat(p, &st)) != 0)
        return -errno;
    return -ENOTSUP;
}

static int64_t sys_getxattr(crec_emu *e, const uint64_t a[6]) { return xattr_path(e, a[0], 1); }
static int64_t sys_lgetxattr(crec_emu *e, const uint64_t a[6]) { return xattr_path(e, a[0], 0); }

static int64_t sys_fgetxattr(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    (void)h;
    return -ENOTSUP;
}

/* ---- waiting on descriptors --------------------------------------------------- */

/* poll/ppoll: guest pollfds turned into host ones, waited on in
 * emu_block_until, and back.  A guest fd that is not open is POLLNVAL. */
static int64_t do_poll(crec_emu *e, uint64_t addr, uint64_t n, uint64_t deadline)
{
    struct pollfd fds[G_POLL_MAX];
    int gfd[G_POLL_MAX];
    int64_t r;

    if (n > G_POLL_MAX)
        return -EINVAL;
    if (n && emu_copy_in(e, fds, addr, n * sizeof *fds) != 0)
        return -EFAULT;
    for (uint64_t i = 0; i < n; i++) {
        gfd[i] = fds[i].fd;
        fds[i].fd = gfd[i] < 0 ? -1 : emu_fd_host(e, (uint64_t)gfd[i]);
        fds[i].revents = 0;
    }
    r = emu_block_until(e, deadline, fds, (unsigned)n);
    if (r < 0)
        return r;
    for (uint64_t i = 0; i < n; i++) {
        if (gfd[i] >= 0 && fds[i].fd < 0) {
            fds[i].revents = POLLNVAL;
            r++;
        }
        fds[i].fd = gfd[i];
    }
    return emu_copy_out(e, addr, fds, n * sizeof *fds) ?: r;
}

/* The guest's timespec of ppoll/pselect6 as a deadline (NULL: none). */
static int64_t deadline_in(crec_emu *e, uint64_t addr, uint64_t *deadline)
{
    struct timespec ts;

    *deadline = EMU_FOREVER;
    if (!addr)
        return 0;
    if (emu_copy_in(e, &ts, addr, sizeof ts) != 0)
        return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
        return -EINVAL;
    *deadline = emu_sc_deadline_after(e, &ts);
    return 0;
}

/* The time left, written back as Linux does for select, pselect6, ppoll. */
static void time_left_out(crec_emu *e, uint64_t addr, uint64_t deadline, int micro)
{
    struct timespec left;
    int64_t tv[2];

    if (!addr || deadline == EMU_FOREVER)
        return;
    emu_deadline_left(deadline, &left);
    if (!micro) {
        emu_copy_out(e, addr, &left, sizeof left);
        return;
    }
    tv[0] = left.tv_sec, tv[1] = left.tv_nsec / 1000;
    emu_copy_out(e, addr, tv, sizeof tv);
}

/* select: the guest's fd_sets as host pollfds (read: POLLIN, write:
 * POLLOUT, except: POLLPRI), and back with the kernel's rules. */
static int64_t do_select(crec_emu *e, const uint64_t a[6], uint64_t deadline)
{
    uint64_t gset[3][G_FD_SETSIZE / 64] = {{0}}, nbytes;
    struct pollfd pf[G_FD_SETSIZE];
    short gfd[G_FD_SETSIZE];
    int n = (int)a[0], np = 0, ready = 0;
    int64_t r;

    if (n < 0 || n > G_FD_SETSIZE)
        return -EINVAL;
    nbytes = (uint64_t)(n + 63) / 64 * 8;
    for (int k = 0; k < 3; k++)
        if (a[1 + k] && nbytes && emu_copy_in(e, gset[k], a[1 + k], nbytes) != 0)
            return -EFAULT;
    for (int fd = 0; fd < n; fd++) {
        short ev = 0;
        for (int k = 0; k < 3; k++)
            if (gset[k][fd / 64] >> (fd % 64) & 1)
                ev |= k == 0 ? POLLIN : k == 1 ? POLLOUT : POLLPRI;
        if (!ev)
            continue;
        pf[np].fd = emu_fd_host(e, (uint64_t)fd);
        if (pf[np].fd < 0)
            return -EBADF;
        pf[np].events = ev;
        pf[np].revents = 0;
        gfd[np++] = (short)fd;
    }
    r = emu_block_until(e, deadline, pf, (unsigned)np);
    if (r < 0)
        return r;
    memset(gset, 0, sizeof gset);
    for (int i = 0; i < np; i++) {
        short ev = pf[i].events, re = pf[i].revents;
        uint64_t bit = 1ull << (gfd[i] % 64);
        if ((ev & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR)))
            gset[0][gfd[i] / 64] |= bit, ready++;
        if ((ev & POLLOUT) && (re & (POLLOUT | POLLERR)))
            gset[1][gfd[i] / 64] |= bit, ready++;
        if ((ev & POLLPRI) && (re & POLLPRI))
            gset[2][gfd[i] / 64] |= bit, ready++;
    }
    for (int k = 0; k < 3; k++)
        if (a[1 + k] && nbytes && emu_copy_out(e, a[1 + k], gset[k], nbytes) != 0)
            return -EFAULT;
    return ready;
}

static int64_t sys_select(crec_emu *e, const uint64_t a[6])
{
    uint64_t deadline = EMU_FOREVER;
    int64_t tv[2], r;

    if (a[4]) {
        struct timespec ts;
        if (emu_copy_in(e, tv, a[4], sizeof tv) != 0)
            return -EFAULT;
        if (tv[0] < 0 || tv[1] < 0 || tv[1] >= 1000000)
            return -EINVAL;
        ts.tv_sec = tv[0], ts.tv_nsec = tv[1] * 1000;
        deadline = emu_sc_deadline_after(e, &ts);
    }
    r = do_select(e, a, deadline);
    time_left_out(e, a[4], deadline, 1);
    return r;
}

static int64_t sys_pselect6(crec_emu *e, const uint64_t a[6])
{
    uint64_t deadline, sig[2] = {0, 0};
    int64_t r = deadline_in(e, a[4], &deadline);

    /* a[5]: {const sigset_t *ss; size_t ss_len} */
    if (!r && a[5] && emu_copy_in(e, sig, a[5], sizeof sig) != 0)
        r = -EFAULT;
    if (!r)
        r = emu_signal_wait_mask(e, sig[0], sig[1]);
    if (r)
        return r;
    r = do_select(e, a, deadline);
    time_left_out(e, a[4], deadline, 0);
    return r;
}

static int64_t sys_poll(crec_emu *e, const uint64_t a[6])
{
    int ms = (int)a[2];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    return do_poll(e, a[0], a[1], ms < 0 ? EMU_FOREVER : emu_sc_deadline_after(e, &ts));
}

static int64_t sys_ppoll(crec_emu *e, const uint64_t a[6])
{
    uint64_t deadline;
    int64_t r = deadline_in(e, a[2], &deadline);

    if (!r)
        r = emu_signal_wait_mask(e, a[3], a[4]);
    if (r)
        return r;
    r = do_poll(e, a[0], a[1], deadline);
    time_left_out(e, a[2], deadline, 0);
    return r;
}

void emu_sys_fs_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(read, "fBu");
    REG(write, "fbu");
    REG(pread64, "fBud");
    REG(pwrite64, "fbud");
    REG(readv, "fpd");
    REG(writev, "fpd");
    REG(preadv, "fpdd");
    REG(pwritev, "fpdd");
    REG(open, "sxo");
    REG(openat, "fsxo");
    REG(creat, "so");
    REG(close, "f");
    REG(dup, "f");
    REG(dup2, "ff");
    REG(dup3, "ffx");
    REG(pipe, "p");
    REG(pipe2, "px");
    REG(fcntl, "fdx");
    REG(ioctl, "fxp");
    REG(fstat, "fp");
    REG(stat, "sp");
    REG(lstat, "sp");
    REG(newfstatat, "fspx");
    REG(statx, "fsxxp");
    REG(statfs, "sp");
    REG(fstatfs, "fp");
    REG(lseek, "fdd");
    REG(getdents64, "fpu");
    REG(access, "so");
    REG(faccessat, "fso");
    REG(faccessat2, "fsox");
    REG(getcwd, "pu");
    REG(chdir, "s");
    REG(fchdir, "f");
    REG(readlink, "spu");
    REG(readlinkat, "fspu");
    REG(unlink, "s");
    REG(unlinkat, "fsx");
    REG(rmdir, "s");
    REG(mkdir, "so");
    REG(mkdirat, "fso");
    REG(rename, "ss");
    REG(renameat, "fsfs");
    REG(renameat2, "fsfsx");
    REG(symlink, "ss");
    REG(symlinkat, "sfs");
    REG(link, "ss");
    REG(linkat, "fsfsx");
    REG(chmod, "so");
    REG(fchmod, "fo");
    REG(fchmodat, "fso");
    REG(fchown, "fdd");
    REG(fchownat, "fsddx");
    REG(utimensat, "fspx");
    REG(ftruncate, "fd");
    REG(truncate, "sd");
    REG(fsync, "f");
    REG(fallocate, "fxdd");
    REG(flock, "fx");
    REG(fadvise64, "fddd");
    REG(umask, "o");
    REG(copy_file_range, "fpfpux");
    REG(sendfile, "ffpu");
    REG(getxattr, "sspu");
    REG(lgetxattr, "sspu");
    REG(fgetxattr, "fspu");
    t[SYS_listxattr] = (struct emu_sys){sys_getxattr, "spu"};
    t[SYS_llistxattr] = (struct emu_sys){sys_lgetxattr, "spu"};
    t[SYS_flistxattr] = (struct emu_sys){sys_fgetxattr, "fpu"};
    t[SYS_setxattr] = (struct emu_sys){sys_getxattr, "sspux"};
    t[SYS_lsetxattr] = (struct emu_sys){sys_lgetxattr, "sspux"};
    t[SYS_fsetxattr] = (struct emu_sys){sys_fgetxattr, "fspux"};
    t[SYS_removexattr] = (struct emu_sys){sys_getxattr, "ss"};
    t[SYS_lremovexattr] = (struct emu_sys){sys_lgetxattr, "ss"};
    t[SYS_fremovexattr] = (struct emu_sys){sys_fgetxattr, "fs"};
    REG(poll, "pud");
    REG(ppoll, "pupp");
    REG(select, "dpppp");
    REG(pselect6, "dppppp");
    t[SYS_fdatasync] = (struct emu_sys){sys_fsync, "f"};
#undef REG
}
