/*
 * procfs.c - the files of /proc and /sys that must describe the guest, not
 * crec: /proc/self (and /proc/PID, /proc/thread-self) maps, fd/, exe,
 * cmdline, environ, auxv, stat, status; /proc/cpuinfo and
 * /sys/devices/system/cpu/{online,possible,present} from the CPU model.
 *
 * A file is made when it is opened (Linux makes it when it is read): its
 * text is written to a memfd, which the guest then reads, seeks and fstats
 * like any file.  The directory /proc/self/fd is listed by getdents64 from
 * the guest's descriptor table.  Everything else under /proc and /sys is
 * the host's.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "emu/emu_int.h"

/* ---- names of mappings ----------------------------------------------------- */

/* Cut [start, end) out of the table of names. */
static void named_cut(crec_emu *e, uint64_t start, uint64_t end)
{
    for (size_t i = 0; i < e->n_named; i++) {
        struct emu_named *n = &e->named[i];
        if (n->end <= start || n->start >= end)
            continue;
        if (n->start < start && n->end > end) { /* a hole in the middle: two pieces */
            struct emu_named right = *n;
            struct emu_named *g = crec_grow(e->named, &e->cap_named, e->n_named + 1,
                                            sizeof *g, 16);
            if (!g)
                return;
            e->named = g;
            n = &e->named[i];
            right.off += end - n->start;
            right.start = end;
            right.path = crec_malloc(strlen(n->path) + 1);
            if (!right.path)
                return;
            strcpy(right.path, n->path);
            n->end = start;
            memmove(e->named + i + 2, e->named + i + 1, (e->n_named - i - 1) * sizeof *g);
            e->named[i + 1] = right;
            e->n_named++;
            return;
        }
        if (n->start >= start && n->end <= end) { /* all of it */
            crec_free(n->path);
            memmove(n, n + 1, (e->n_named - i - 1) * sizeof *n);
            e->n_named--;
            i--;
        } else if (n->start < start) {
            n->end = start;
        } else {
            n->off += end - n->start;
            n->start = end;
        }
    }
}

int emu_named_shared(const crec_emu *e, uint64_t addr)
{
    for (size_t i = 0; i < e->n_named && e->named[i].start <= addr; i++)
        if (addr < e->named[i].end)
            return e->named[i].shared;
    return 0;
}

void emu_named_map(crec_emu *e, uint64_t addr, uint64_t len, int hostfd, const char *path,
                   uint64_t off, int shared)
{
    struct emu_named n = {addr, addr + len, off, 0, 0, NULL, shared};
    struct stat st;
    char link[64], buf[4096];
    size_t at = 0;

    named_cut(e, addr, addr + len);
    if (!path && hostfd >= 0) {
        ssize_t k;
        snprintf(link, sizeof link, "/proc/self/fd/%d", hostfd);
        k = readlink(link, buf, sizeof buf - 1);
        if (k <= 0)
            return;
        buf[k] = '\0';
        path = buf;
    }
    if (!path)
        return; /* anonymous */
    if (hostfd < 0 && realpath(path, buf) && buf != path)
        path = buf; /* the file's own path, as the kernel shows it */
    if ((hostfd >= 0 ? fstat(hostfd, &st) : stat(path, &st)) == 0)
        n.dev = st.st_dev, n.ino = st.st_ino;
    n.path = crec_malloc(strlen(path) + 1);
    if (!n.path)
        return;
    strcpy(n.path, path);
    struct emu_named *g = crec_grow(e->named, &e->cap_named, e->n_named + 1, sizeof *g, 16);
    if (!g) {
        crec_free(n.path);
        return;
    }
    e->named = g;
    while (at < e->n_named && e->named[at].start < n.start)
        at++;
    memmove(e->named + at + 1, e->named + at, (e->n_named - at) * sizeof *g);
    e->named[at] = n;
    e->n_named++;
}

void emu_named_unmap(crec_emu *e, uint64_t addr, uint64_t len)
{
    named_cut(e, addr, addr + len);
}

void emu_named_free(crec_emu *e)
{
    for (size_t i = 0; i < e->n_named; i++)
        crec_free(e->named[i].path);
    crec_free(e->named);
    e->named = NULL;
    e->n_named = e->cap_named = 0;
}

/* ---- building a file ------------------------------------------------------- */

struct text {
    char *p;
    size_t len, cap;
    int bad;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->bad = 1;
            return;
        }
        if (t->p && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        char *q = crec_grow(t->p, &t->cap, t->len + (size_t)n + 1, 1, 4096);
        if (!q) {
            t->bad = 1;
            return;
        }
        t->p = q;
    }
}

static void put_bytes(struct text *t, const void *b, size_t n)
{
    char *q = crec_grow(t->p, &t->cap, t->len + n + 1, 1, 4096);

    if (!q) {
        t->bad = 1;
        return;
    }
    t->p = q;
    memcpy(t->p + t->len, b, n);
    t->len += n;
}

/* The text in a memfd, as a new host descriptor, at offset 0. */
static int text_fd(struct text *t)
{
    int fd;
    size_t done = 0;

    if (t->bad) {
        crec_free(t->p);
        return -ENOMEM;
    }
    fd = memfd_create("crec-proc", MFD_CLOEXEC);
    if (fd < 0) {
        crec_free(t->p);
        return -errno;
    }
    while (done < t->len) {
        ssize_t w = write(fd, t->p + done, t->len - done);
        if (w <= 0) {
            close(fd);
            crec_free(t->p);
            return -EIO;
        }
        done += (size_t)w;
    }
    crec_free(t->p);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* ---- the files ----------------------------------------------------------------- */

struct maps_walk {
    crec_emu *e;
    struct text *t;
};

static void maps_line(struct maps_walk *w, uint64_t a, uint64_t b, int prot,
                      const struct emu_named *n)
{
    crec_emu *e = w->e;
    const char *name = "";

    if (n)
        name = n->path;
    else if (a >= e->brk_start && b <= EMU_PAGE_UP(e->brk_cur) && e->brk_cur > e->brk_start)
        name = "[heap]";
    else if (b == EMU_STACK_TOP)
        name = "[stack]";
    size_t line = w->t->len;

    put(w->t, "%08llx-%08llx %c%c%c%c %08llx %02x:%02x %llu", (unsigned long long)a,
        (unsigned long long)b, prot & CREC_PROT_READ ? 'r' : '-',
        prot & CREC_PROT_WRITE ? 'w' : '-', prot & CREC_PROT_EXEC ? 'x' : '-',
        n && n->shared ? 's' : 'p', n ? (unsigned long long)(n->off + (a - n->start)) : 0ull,
        n ? major((dev_t)n->dev) : 0u, n ? minor((dev_t)n->dev) : 0u,
        n ? (unsigned long long)n->ino : 0ull);
    if (*name) /* the name in column 74, as Linux pads it */
        put(w->t, "%*s%s", w->t->len - line < 72 ? (int)(72 - (w->t->len - line)) + 1 : 1, "",
            name);
    put(w->t, "\n");
}

/* One line per mapping, cut where its name changes, as Linux's vmas. */
static int maps_one(void *ctx, const struct crec_emu_mapping *m)
{
    struct maps_walk *w = ctx;
    crec_emu *e = w->e;
    uint64_t a = m->start;

    for (size_t i = 0; i < e->n_named && a < m->end; i++) {
        const struct emu_named *n = &e->named[i];
        if (n->end <= a || n->start >= m->end)
            continue;
        if (n->start > a)
            maps_line(w, a, n->start, m->prot, NULL);
        a = n->start > a ? n->start : a;
        maps_line(w, a, n->end < m->end ? n->end : m->end, m->prot, n);
        a = n->end < m->end ? n->end : m->end;
    }
    if (a < m->end)
        maps_line(w, a, m->end, m->prot, NULL);
    return 0;
}

static void file_maps(crec_emu *e, struct text *t)
{
    struct maps_walk w = {e, t};

    crec_emu_mem_foreach(e->cpu, maps_one, &w);
}

/* Bytes [a, b) of guest memory (cmdline, environ: where the stack holds
 * them, as Linux reads them). */
static void guest_bytes(crec_emu *e, struct text *t, uint64_t a, uint64_t b)
{
    uint8_t buf[4096];

    while (a < b) {
        uint64_t n = b - a < sizeof buf ? b - a : sizeof buf;
        if (crec_emu_mem_read(e->cpu, buf, a, n) != 0)
            return;
        put_bytes(t, buf, n);
        a += n;
    }
}

struct vm_sizes {
    uint64_t size, rss, data, stack;
};

static int vm_page(void *ctx, uint64_t page)
{
    (void)page;
    ((struct vm_sizes *)ctx)->rss += CREC_PAGE_SIZE;
    return 0;
}

static int vm_one(void *ctx, const struct crec_emu_mapping *m)
{
    struct vm_sizes *v = ctx;

    v->size += m->end - m->start;
    if ((m->prot & CREC_PROT_WRITE) && !(m->prot & CREC_PROT_EXEC))
        v->data += m->end - m->start;
    if (m->end == EMU_STACK_TOP)
        v->stack = m->end - m->start;
    return 0;
}

static void vm_sizes(crec_emu *e, struct vm_sizes *v)
{
    memset(v, 0, sizeof *v);
    crec_emu_mem_foreach(e->cpu, vm_one, v);
    crec_emu_mem_resident(e->cpu, 0, ~0ull - CREC_PAGE_SIZE, vm_page, v);
}

static void file_stat(crec_emu *e, struct text *t)
{
    struct vm_sizes v;
    struct rusage ru;
    long hz = 100;
    uint64_t ut, st;

    vm_sizes(e, &v);
    getrusage(RUSAGE_SELF, &ru);
    ut = (uint64_t)ru.ru_utime.tv_sec * hz + (uint64_t)ru.ru_utime.tv_usec / (1000000 / hz);
    st = (uint64_t)ru.ru_stime.tv_sec * hz + (uint64_t)ru.ru_stime.tv_usec / (1000000 / hz);
    put(t, "%d (%s) R %d %d %d 0 -1 4194304 0 0 0 0 %llu %llu 0 0 20 0 1 0 0 %llu %llu "
           "18446744073709551615 0 0 %llu 0 0 0 %llu 0 0 0 0 0 17 0 0 0 0 0 0 0 0 %llu %llu "
           "%llu %llu %llu 0\n",
        getpid(), e->comm, getppid(), getpgrp(), getsid(0), (unsigned long long)ut,
        (unsigned long long)st, (unsigned long long)v.size,
        (unsigned long long)(v.rss / CREC_PAGE_SIZE), (unsigned long long)e->start_stack,
        (unsigned long long)e->sigmask, (unsigned long long)e->brk_start,
        (unsigned long long)e->arg_start, (unsigned long long)e->arg_end,
        (unsigned long long)e->env_start, (unsigned long long)e->env_end);
}

static void file_status(crec_emu *e, struct text *t)
{
    struct vm_sizes v;
    uint64_t caught = 0, ignored = 0;
    int n = 0;

    vm_sizes(e, &v);
    for (int s = 1; s <= 64; s++) {
        if (e->sigs[s].handler == 1)
            ignored |= emu_sigbit(s);
        else if (e->sigs[s].handler > 1)
            caught |= emu_sigbit(s);
    }
    for (int i = 0; i < EMU_MAX_FDS; i++)
        n = e->fds[i] >= 0 ? i + 1 : n;
    put(t, "Name:\t%s\nUmask:\t%04o\nState:\tR (running)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
           "PPid:\t%d\nTracerPid:\t0\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n"
           "FDSize:\t%d\n",
        e->comm, e->umask_v, getpid(), getpid(), getppid(), getuid(), geteuid(), geteuid(),
        geteuid(), getgid(), getegid(), getegid(), getegid(), n < 64 ? 64 : (n + 63) / 64 * 64);
    put(t, "VmPeak:\t%8llu kB\nVmSize:\t%8llu kB\nVmRSS:\t%8llu kB\nVmData:\t%8llu kB\n"
           "VmStk:\t%8llu kB\nThreads:\t%u\n",
        (unsigned long long)v.size / 1024, (unsigned long long)v.size / 1024,
        (unsigned long long)v.rss / 1024, (unsigned long long)v.data / 1024,
        (unsigned long long)v.stack / 1024, e->sched.nlive ? e->sched.nlive : 1);
    put(t, "SigQ:\t0/%d\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
           "SigBlk:\t%016llx\nSigIgn:\t%016llx\nSigCgt:\t%016llx\n",
        EMU_MAX_FDS, (unsigned long long)e->sigmask, (unsigned long long)ignored,
        (unsigned long long)caught);
    put(t, "Cpus_allowed:\t%llx\nCpus_allowed_list:\t0-%d\n",
        emu_ncpus(e) >= 64 ? ~0ull : (unsigned long long)((1ull << emu_ncpus(e)) - 1),
        emu_ncpus(e) - 1);
}

/* "0" or "0-N": the CPUs of the model. */
static void file_cpulist(crec_emu *e, struct text *t)
{
    if (emu_ncpus(e) == 1)
        put(t, "0\n");
    else
        put(t, "0-%d\n", emu_ncpus(e) - 1);
}

/* Linux's names of CPUID feature bits, for /proc/cpuinfo "flags". */
struct feature {
    uint32_t leaf;
    int reg, bit; /* reg: 1 ebx, 2 ecx, 3 edx */
    const char *name;
};

static const struct feature features[] = {
    {1, 3, 0, "fpu"}, {1, 3, 1, "vme"}, {1, 3, 2, "de"}, {1, 3, 3, "pse"}, {1, 3, 4, "tsc"},
    {1, 3, 5, "msr"}, {1, 3, 6, "pae"}, {1, 3, 7, "mce"}, {1, 3, 8, "cx8"}, {1, 3, 9, "apic"},
    {1, 3, 11, "sep"}, {1, 3, 12, "mtrr"}, {1, 3, 13, "pge"}, {1, 3, 14, "mca"},
    {1, 3, 15, "cmov"}, {1, 3, 16, "pat"}, {1, 3, 17, "pse36"}, {1, 3, 19, "clflush"},
    {1, 3, 23, "mmx"}, {1, 3, 24, "fxsr"}, {1, 3, 25, "sse"}, {1, 3, 26, "sse2"},
    {0x80000001, 3, 11, "syscall"}, {0x80000001, 3, 20, "nx"}, {0x80000001, 3, 27, "rdtscp"},
    {0x80000001, 3, 29, "lm"}, {1, 2, 0, "pni"}, {1, 2, 1, "pclmulqdq"}, {1, 2, 9, "ssse3"},
    {1, 2, 12, "fma"}, {1, 2, 13, "cx16"}, {1, 2, 19, "sse4_1"}, {1, 2, 20, "sse4_2"},
    {1, 2, 22, "movbe"}, {1, 2, 23, "popcnt"}, {1, 2, 25, "aes"}, {1, 2, 26, "xsave"},
    {1, 2, 28, "avx"}, {1, 2, 29, "f16c"}, {1, 2, 30, "rdrand"}, {0x80000001, 2, 0, "lahf_lm"},
    {0x80000001, 2, 5, "abm"}, {7, 1, 3, "bmi1"}, {7, 1, 5, "avx2"}, {7, 1, 8, "bmi2"},
    {7, 1, 9, "erms"}, {7, 1, 16, "avx512f"}, {7, 1, 18, "rdseed"}, {7, 1, 19, "adx"},
};

static void file_cpuinfo(crec_emu *e, struct text *t)
{
    uint32_t r1[4], brand[12];
    char name[49];

    crec_emu_cpuid_default(1, 0, r1);
    for (uint32_t i = 0; i < 3; i++)
        crec_emu_cpuid_default(0x80000002u + i, 0, brand + 4 * i);
    for (int i = 0; i < 48; i++)
        name[i] = (char)(brand[i / 4] >> (8 * (i % 4)));
    name[48] = '\0';
    for (int cpu = 0; cpu < emu_ncpus(e); cpu++) {
        put(t, "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: %u\nmodel\t\t: %u\n"
               "model name\t: %s\nstepping\t: %u\ncpu MHz\t\t: 1000.000\ncache size\t: 8192 KB\n"
               "physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\napicid\t\t: %d\n"
               "fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 25\nwp\t\t: yes\nflags\t\t:",
            cpu, (r1[0] >> 8) & 15, ((r1[0] >> 4) & 15) | ((r1[0] >> 12) & 0xf0), name,
            r1[0] & 15, emu_ncpus(e), cpu, emu_ncpus(e), cpu);
        for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
            uint32_t out[4];
            crec_emu_cpuid_default(features[i].leaf, 0, out);
            if (out[features[i].reg] >> features[i].bit & 1)
                put(t, " %s", features[i].name);
        }
        put(t, " constant_tsc nonstop_tsc\nbogomips\t: 2000.00\nclflush size\t: 64\n"
               "cache_alignment\t: 64\naddress sizes\t: 39 bits physical, 48 bits virtual\n"
               "power management:\n\n");
    }
}

/* ---- which path is which ------------------------------------------------------ */

/* The part of path after /proc/self/ (or /proc/PID/, /proc/thread-self/
 * for the guest's pid), or NULL. */
static const char *self_path(const char *p)
{
    char pid[32];
    size_t n;

    if (strncmp(p, "/proc/self/", 11) == 0)
        return p + 11;
    /* /dev/fd and /dev/std{in,out,err} are links into /proc/self, which the
     * host would resolve to crec's own descriptors (bash's <(...) opens
     * /dev/fd/63) */
    if (strncmp(p, "/dev/fd/", 8) == 0)
        return p + 5;
    if (strcmp(p, "/dev/stdin") == 0)
        return "fd/0";
    if (strcmp(p, "/dev/stdout") == 0)
        return "fd/1";
    if (strcmp(p, "/dev/stderr") == 0)
        return "fd/2";
    if (strncmp(p, "/proc/thread-self/", 18) == 0)
        return p + 18;
    n = (size_t)snprintf(pid, sizeof pid, "/proc/%d/", getpid());
    if (strncmp(p, pid, n) == 0)
        return p + n;
    n = (size_t)snprintf(pid, sizeof pid, "/proc/%d/task/%d/", getpid(), getpid());
    if (strncmp(p, pid, n) == 0)
        return p + n;
    return NULL;
}

/* "fd/N": the guest fd N, else -1. */
static int self_fd(const char *rest)
{
    char *end;
    long n;

    if (strncmp(rest, "fd/", 3) != 0 || !rest[3])
        return -1;
    n = strtol(rest + 3, &end, 10);
    return *end == '\0' && n >= 0 && n < EMU_MAX_FDS ? (int)n : -1;
}

int emu_procfs_open(crec_emu *e, const char *path, int flags, int *hostfd)
{
    const char *rest = self_path(path);
    struct text t = {0};
    int gfd;

    if (rest) {
        if ((gfd = self_fd(rest)) >= 0) { /* a new open of what guest fd N is */
            char host[64];
            int h = emu_fd_host(e, (uint64_t)gfd);
            if (h < 0)
                return -ENOENT;
            snprintf(host, sizeof host, "/proc/self/fd/%d", h);
            *hostfd = open(host, flags | O_CLOEXEC);
            return *hostfd < 0 ? -errno : 1;
        }
        if (strcmp(rest, "fd") == 0 || strcmp(rest, "fd/") == 0) {
            *hostfd = emu_synthdir_fd(e);
            return *hostfd < 0 ? *hostfd : 2;
        }
        if ((flags & O_ACCMODE) != O_RDONLY)
            return 0; /* writing (oom_score_adj, comm...): the host says no */
        if (strcmp(rest, "maps") == 0)
            file_maps(e, &t);
        else if (strcmp(rest, "cmdline") == 0)
            guest_bytes(e, &t, e->arg_start, e->arg_end);
        else if (strcmp(rest, "environ") == 0)
            guest_bytes(e, &t, e->env_start, e->env_end);
        else if (strcmp(rest, "auxv") == 0)
            put_bytes(&t, e->auxv, e->auxv_len);
        else if (strcmp(rest, "stat") == 0)
            file_stat(e, &t);
        else if (strcmp(rest, "status") == 0)
            file_status(e, &t);
        else if (strcmp(rest, "comm") == 0)
            put(&t, "%s\n", e->comm);
        else
            return 0;
    } else if (strcmp(path, "/proc/cpuinfo") == 0) {
        file_cpuinfo(e, &t);
    } else if (strcmp(path, "/sys/devices/system/cpu/online") == 0 ||
               strcmp(path, "/sys/devices/system/cpu/possible") == 0 ||
               strcmp(path, "/sys/devices/system/cpu/present") == 0) {
        file_cpulist(e, &t);
    } else {
        return 0;
    }
    *hostfd = text_fd(&t);
    return *hostfd < 0 ? *hostfd : 1;
}

int emu_procfs_readlink(crec_emu *e, const char *path, char *out, size_t size)
{
    /* /dev/stdout itself is a link whose text the host gives right */
    const char *rest = strncmp(path, "/dev/std", 8) == 0 ? NULL : self_path(path);
    char host[64];
    int gfd;
    ssize_t n;

    if (!rest && strcmp(path, "/proc/self") != 0 && strcmp(path, "/proc/thread-self") != 0)
        return -1;
    if (!rest) { /* the link itself: the guest's pid */
        n = snprintf(out, size, strcmp(path, "/proc/self") == 0 ? "%d" : "%d/task/%d", getpid(),
                     getpid());
        return (int)n;
    }
    if (strcmp(rest, "exe") == 0) {
        n = (ssize_t)strlen(e->exe);
        memcpy(out, e->exe, (size_t)n < size ? (size_t)n : size);
        return (int)n;
    }
    if ((gfd = self_fd(rest)) >= 0) {
        int h = emu_fd_host(e, (uint64_t)gfd);
        if (h < 0)
            return -ENOENT;
        if (e->synth[gfd]) {
            n = snprintf(out, size, "/proc/%d/fd", getpid());
            return (int)n;
        }
        snprintf(host, sizeof host, "/proc/self/fd/%d", h);
        n = readlink(host, out, size);
        return n < 0 ? -errno : (int)n;
    }
    return -1;
}

/* ---- /proc/self/fd as a directory -------------------------------------------------- */

/* A guest fd for the directory: a host descriptor of an empty directory
 * (so fstat and fchdir make sense), listed by emu_synthdir_getdents. */
int emu_synthdir_fd(crec_emu *e)
{
    (void)e;
    int h = open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return h < 0 ? -errno : h;
}

int64_t emu_synthdir_getdents(crec_emu *e, int gfd, uint64_t addr, uint64_t size)
{
    uint8_t buf[4096];
    size_t used = 0;
    uint64_t pos = e->synth_pos[gfd];

    /* entries: ".", "..", then every open guest fd, in order; the offset
     * of an entry is its index + 1 */
    for (uint64_t k = pos; k < 2 + EMU_MAX_FDS; k++) {
        char name[16];
        unsigned char type = 10; /* DT_LNK */
        size_t len, rec;
        if (k < 2) {
            snprintf(name, sizeof name, "%s", k ? ".." : ".");
            type = 4; /* DT_DIR */
        } else if (emu_fd_host(e, k - 2) < 0) {
            continue;
        } else {
            snprintf(name, sizeof name, "%llu", (unsigned long long)(k - 2));
        }
        len = strlen(name);
        rec = (19 + len + 1 + 7) & ~(size_t)7;
        if (used + rec > size || used + rec > sizeof buf) {
            if (used == 0)
                return -EINVAL;
            break;
        }
        uint64_t ino = k + 1000, off = k + 1;
        uint16_t reclen = (uint16_t)rec;
        memset(buf + used, 0, rec); /* struct linux_dirent64, as on the host */
        memcpy(buf + used, &ino, 8);
        memcpy(buf + used + 8, &off, 8);
        memcpy(buf + used + 16, &reclen, 2);
        buf[used + 18] = type;
        memcpy(buf + used + 19, name, len);
        used += rec;
        pos = k + 1;
    }
    if (used && emu_copy_out(e, addr, buf, used) != 0)
        return -EFAULT;
    e->synth_pos[gfd] = pos;
    return (int64_t)used;
}
