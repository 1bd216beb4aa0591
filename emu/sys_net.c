/*
 * sys_net.c - sockets, passed through to the host with descriptors
 * translated.  Enough for glibc's NSS (which tries nscd's socket before
 * /etc/passwd: `ls -l`), and for simple clients and servers.  Control
 * messages (SCM_RIGHTS) are not translated.
 */
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define ADDR_MAX 128
#define BUF_MAX (1u << 20)

static int64_t R(long r)
{
    return r < 0 ? -errno : r;
}

#define HOSTFD(h, gfd)                                                                        \
    int h = emu_fd_host(e, (gfd));                                                            \
    if (h < 0)                                                                                \
        return -EBADF

/* A sockaddr from the guest: length checked, copied in. */
static int addr_in(crec_emu *e, uint64_t addr, uint64_t len, unsigned char *buf)
{
    if (len > ADDR_MAX)
        return -EINVAL;
    return emu_copy_in(e, buf, addr, len);
}

/* Write a sockaddr back and its length, as the kernel does (truncated). */
static int addr_out(crec_emu *e, uint64_t addr, uint64_t lenp, const unsigned char *buf,
                    socklen_t got)
{
    uint32_t room;
    if (!addr || !lenp)
        return 0;
    if (emu_copy_in(e, &room, lenp, 4) != 0)
        return -EFAULT;
    if (emu_copy_out(e, addr, buf, got < room ? got : room) != 0)
        return -EFAULT;
    return emu_copy_out(e, lenp, &got, 4);
}

static int64_t sys_socket(crec_emu *e, const uint64_t a[6])
{
    int h = socket((int)a[0], (int)a[1] | SOCK_CLOEXEC, (int)a[2]), g;
    if (h < 0)
        return -errno;
    g = emu_fd_install(e, h, 0);
    if (g >= 0)
        e->cloexec[g] = (a[1] & SOCK_CLOEXEC) != 0;
    return g;
}

static int64_t sys_socketpair(crec_emu *e, const uint64_t a[6])
{
    int hp[2], gp[2];
    if (emu_mem_check(e->cpu, a[3], 8, CREC_PROT_WRITE) != 0)
        return -EFAULT;
    if (socketpair((int)a[0], (int)a[1] | SOCK_CLOEXEC, (int)a[2], hp) != 0)
        return -errno;
    gp[0] = emu_fd_install(e, hp[0], 0);
    gp[1] = gp[0] < 0 ? gp[0] : emu_fd_install(e, hp[1], 0);
    if (gp[0] < 0 || gp[1] < 0) {
        if (gp[0] >= 0)
            close(hp[0]), e->fds[gp[0]] = -1;
        else
            close(hp[1]);
        return -EMFILE;
    }
    e->cloexec[gp[0]] = e->cloexec[gp[1]] = (a[1] & SOCK_CLOEXEC) != 0;
    return emu_copy_out(e, a[3], gp, 8);
}

static int64_t sys_connect(crec_emu *e, const uint64_t a[6])
{
    unsigned char sa[ADDR_MAX];
    HOSTFD(h, a[0]);
    int rc = addr_in(e, a[1], a[2], sa);
    return rc ? rc : R(connect(h, (struct sockaddr *)sa, (socklen_t)a[2]));
}

static int64_t sys_bind(crec_emu *e, const uint64_t a[6])
{
    unsigned char sa[ADDR_MAX];
    HOSTFD(h, a[0]);
    int rc = addr_in(e, a[1], a[2], sa);
    return rc ? rc : R(bind(h, (struct sockaddr *)sa, (socklen_t)a[2]));
}

static int64_t sys_listen(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(listen(h, (int)a[1]));
}

static int64_t sys_accept4(crec_emu *e, const uint64_t a[6])
{
    unsigned char sa[ADDR_MAX];
    socklen_t len = sizeof sa;
    HOSTFD(h, a[0]);
    int n = accept4(h, (struct sockaddr *)sa, &len, (int)a[3] | SOCK_CLOEXEC), g, rc;
    if (n < 0)
        return -errno;
    g = emu_fd_install(e, n, 0);
    if (g >= 0 && (rc = addr_out(e, a[1], a[2], sa, len)) != 0)
        return rc;
    return g;
}

static int64_t sys_accept(crec_emu *e, const uint64_t a[6])
{
    uint64_t b[6] = {a[0], a[1], a[2], 0, 0, 0};
    return sys_accept4(e, b);
}

static int64_t name_call(crec_emu *e, const uint64_t a[6], int peer)
{
    unsigned char sa[ADDR_MAX];
    socklen_t len = sizeof sa;
    HOSTFD(h, a[0]);
    int r = peer ? getpeername(h, (struct sockaddr *)sa, &len)
                 : getsockname(h, (struct sockaddr *)sa, &len);
    return r ? -errno : addr_out(e, a[1], a[2], sa, len);
}

static int64_t sys_getsockname(crec_emu *e, const uint64_t a[6]) { return name_call(e, a, 0); }
static int64_t sys_getpeername(crec_emu *e, const uint64_t a[6]) { return name_call(e, a, 1); }

static int64_t sys_setsockopt(crec_emu *e, const uint64_t a[6])
{
    unsigned char v[256];
    HOSTFD(h, a[0]);
    if (a[4] > sizeof v)
        return -EINVAL;
    if (a[4] && emu_copy_in(e, v, a[3], a[4]) != 0)
        return -EFAULT;
    return R(setsockopt(h, (int)a[1], (int)a[2], v, (socklen_t)a[4]));
}

static int64_t sys_getsockopt(crec_emu *e, const uint64_t a[6])
{
    unsigned char v[256];
    socklen_t len = sizeof v;
    HOSTFD(h, a[0]);
    if (getsockopt(h, (int)a[1], (int)a[2], v, &len) != 0)
        return -errno;
    return addr_out(e, a[3], a[4], v, len);
}

static int64_t sys_shutdown(crec_emu *e, const uint64_t a[6])
{
    HOSTFD(h, a[0]);
    return R(shutdown(h, (int)a[1]));
}

static int64_t sys_sendto(crec_emu *e, const uint64_t a[6])
{
    unsigned char sa[ADDR_MAX];
    uint64_t n = a[2] > BUF_MAX ? BUF_MAX : a[2];
    void *buf;
    long r;
    HOSTFD(h, a[0]);
    if (a[4] && addr_in(e, a[4], a[5], sa) != 0)
        return -EFAULT;
    buf = crec_malloc(n);
    if (!buf)
        return -ENOMEM;
    if (emu_copy_in(e, buf, a[1], n) != 0) {
        crec_free(buf);
        return -EFAULT;
    }
    r = sendto(h, buf, n, (int)a[3], a[4] ? (struct sockaddr *)sa : NULL, (socklen_t)a[5]);
    crec_free(buf);
    return R(r);
}

static int64_t sys_recvfrom(crec_emu *e, const uint64_t a[6])
{
    unsigned char sa[ADDR_MAX];
    socklen_t len = sizeof sa;
    uint64_t n = a[2] > BUF_MAX ? BUF_MAX : a[2];
    void *buf;
    long r;
    int64_t ret;
    HOSTFD(h, a[0]);
    buf = crec_malloc(n);
    if (!buf)
        return -ENOMEM;
    r = recvfrom(h, buf, n, (int)a[3], (struct sockaddr *)sa, &len);
    ret = R(r);
    if (r > 0 && emu_copy_out(e, a[1], buf, (uint64_t)r) != 0)
        ret = -EFAULT;
    if (r >= 0 && a[4] && addr_out(e, a[4], a[5], sa, len) != 0)
        ret = -EFAULT;
    crec_free(buf);
    return ret;
}

/* sendmsg/recvmsg: the iovecs are gathered into (scattered from) one host
 * buffer; the name is translated, control data passed as bytes. */
struct gmsg {
    uint64_t name;
    uint32_t namelen, pad0;
    uint64_t iov, iovlen, control, controllen;
    int32_t flags, pad1;
};

static int64_t msg_call(crec_emu *e, const uint64_t a[6], int sending)
{
    struct gmsg m;
    uint64_t iov[2 * 64], total = 0;
    unsigned char sa[ADDR_MAX], ctl[512];
    struct msghdr hm = {0};
    struct iovec one;
    uint8_t *buf;
    long r;
    int64_t ret;
    HOSTFD(h, a[0]);

    if (emu_copy_in(e, &m, a[1], sizeof m) != 0)
        return -EFAULT;
    if (m.iovlen > 64 || m.namelen > ADDR_MAX || m.controllen > sizeof ctl)
        return -EINVAL;
    if (m.iovlen && emu_copy_in(e, iov, m.iov, m.iovlen * 16) != 0)
        return -EFAULT;
    for (uint64_t i = 0; i < m.iovlen; i++)
        total += iov[2 * i + 1];
    if (total > BUF_MAX)
        return -EMSGSIZE;
    buf = crec_malloc(total);
    if (!buf)
        return -ENOMEM;
    if (sending) {
        uint64_t off = 0;
        for (uint64_t i = 0; i < m.iovlen; off += iov[2 * i + 1], i++)
            if (emu_copy_in(e, buf + off, iov[2 * i], iov[2 * i + 1]) != 0) {
                crec_free(buf);
                return -EFAULT;
            }
        if ((m.name && emu_copy_in(e, sa, m.name, m.namelen)) ||
            (m.controllen && emu_copy_in(e, ctl, m.control, m.controllen))) {
            crec_free(buf);
            return -EFAULT;
        }
    }
    one = (struct iovec){buf, total};
    hm.msg_name = m.name ? sa : NULL;
    hm.msg_namelen = m.name ? (sending ? m.namelen : sizeof sa) : 0;
    hm.msg_iov = &one;
    hm.msg_iovlen = 1;
    hm.msg_control = m.controllen ? ctl : NULL;
    hm.msg_controllen = m.controllen;
    r = sending ? sendmsg(h, &hm, (int)a[2]) : recvmsg(h, &hm, (int)a[2] | MSG_CMSG_CLOEXEC);
    ret = R(r);
    if (r > 0 && !sending) {
        uint64_t off = 0, left = (uint64_t)r;
        for (uint64_t i = 0; i < m.iovlen && left; i++) {
            uint64_t n = iov[2 * i + 1] < left ? iov[2 * i + 1] : left;
            if (emu_copy_out(e, iov[2 * i], buf + off, n) != 0)
                ret = -EFAULT;
            off += n, left -= n;
        }
        m.namelen = m.name ? (uint32_t)hm.msg_namelen : 0;
        m.controllen = hm.msg_controllen;
        m.flags = hm.msg_flags;
        if ((m.name && emu_copy_out(e, m.name, sa, m.namelen < ADDR_MAX ? m.namelen : ADDR_MAX)) ||
            (m.controllen && emu_copy_out(e, m.control, ctl, m.controllen)) ||
            emu_copy_out(e, a[1], &m, sizeof m))
            ret = -EFAULT;
    }
    crec_free(buf);
    return ret;
}

static int64_t sys_sendmsg(crec_emu *e, const uint64_t a[6]) { return msg_call(e, a, 1); }
static int64_t sys_recvmsg(crec_emu *e, const uint64_t a[6]) { return msg_call(e, a, 0); }

/* ---- epoll and eventfd: the event data is the guest's own, untouched ---- */

static int64_t sys_epoll_create1(crec_emu *e, const uint64_t a[6])
{
    int h = epoll_create1((int)a[0] | EPOLL_CLOEXEC);
    return h < 0 ? -errno : emu_fd_install(e, h, 0);
}

static int64_t sys_epoll_create(crec_emu *e, const uint64_t a[6])
{
    if ((int)a[0] <= 0)
        return -EINVAL;
    uint64_t b[6] = {0};
    return sys_epoll_create1(e, b);
}

static int64_t sys_epoll_ctl(crec_emu *e, const uint64_t a[6])
{
    struct epoll_event ev = {0};
    HOSTFD(h, a[0]);
    HOSTFD(t, a[2]);
    if ((int)a[1] != EPOLL_CTL_DEL && emu_copy_in(e, &ev, a[3], sizeof ev) != 0)
        return -EFAULT;
    return R(epoll_ctl(h, (int)a[1], t, &ev));
}

/* epoll_wait/epoll_pwait: the epoll descriptor itself is waited on in
 * emu_block_until (it polls readable when an event is ready), then the
 * events are taken without waiting. */
static int64_t epoll_until(crec_emu *e, const uint64_t a[6], uint64_t deadline)
{
    struct epoll_event ev[64];
    struct pollfd pf;
    int n = (int)a[2] > 64 ? 64 : (int)a[2], r;
    HOSTFD(h, a[0]);

    if ((int)a[2] <= 0)
        return -EINVAL;
    pf.fd = h, pf.events = POLLIN, pf.revents = 0;
    r = emu_block_until(e, deadline, &pf, 1);
    if (r < 0)
        return r;
    r = epoll_wait(h, ev, n, 0);
    if (r < 0)
        return -errno;
    return emu_copy_out(e, a[1], ev, (uint64_t)r * sizeof *ev) ?: r;
}

static int64_t sys_epoll_pwait(crec_emu *e, const uint64_t a[6])
{
    int ms = (int)a[3];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    int64_t r = emu_signal_wait_mask(e, a[4], a[5]);

    if (r)
        return r;
    return epoll_until(e, a, ms < 0 ? EMU_FOREVER : emu_sc_deadline_after(e, &ts));
}

static int64_t sys_epoll_wait(crec_emu *e, const uint64_t a[6])
{
    const uint64_t b[6] = {a[0], a[1], a[2], a[3], 0, 0};

    return sys_epoll_pwait(e, b);
}

static int64_t sys_epoll_pwait2(crec_emu *e, const uint64_t a[6])
{
    struct timespec ts;
    int64_t r = emu_signal_wait_mask(e, a[4], a[5]);

    if (r)
        return r;
    if (!a[3])
        return epoll_until(e, a, EMU_FOREVER);
    if (emu_copy_in(e, &ts, a[3], sizeof ts) != 0)
        return -EFAULT;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
        return -EINVAL;
    return epoll_until(e, a, emu_sc_deadline_after(e, &ts));
}

static int64_t sys_eventfd2(crec_emu *e, const uint64_t a[6])
{
    int h = eventfd((unsigned)a[0], (int)a[1] | EFD_CLOEXEC);
    return h < 0 ? -errno : emu_fd_install(e, h, 0);
}

void emu_sys_net_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
    REG(socket, "ddd");
    REG(socketpair, "dddp");
    REG(connect, "fpu");
    REG(bind, "fpu");
    REG(listen, "fd");
    REG(accept, "fpp");
    REG(accept4, "fppx");
    REG(getsockname, "fpp");
    REG(getpeername, "fpp");
    REG(setsockopt, "fddpu");
    REG(getsockopt, "fddpp");
    REG(shutdown, "fd");
    REG(sendto, "fbuxpu");
    REG(recvfrom, "fBuxpp");
    REG(sendmsg, "fpx");
    REG(recvmsg, "fpx");
    REG(epoll_create1, "x");
    REG(epoll_create, "d");
    REG(epoll_ctl, "fdfp");
    REG(epoll_pwait, "fpddpu");
    REG(epoll_pwait2, "fpdppu");
    if (SYS_epoll_wait < n)
        t[SYS_epoll_wait] = (struct emu_sys){sys_epoll_wait, "fpdd"};
    REG(eventfd2, "ux");
#undef REG
}
