/*
 * sys_mman.c - the guest's memory map: mmap, munmap, mprotect, mremap, brk.
 *
 * Addresses are chosen top-down below 0x7ffff7fff000 as the kernel does
 * without ASLR, so a run's layout is the same every time.  A private file
 * mapping is a copy of the file taken at mmap time; a shared one is the
 * host's own MAP_SHARED mapping of the file, so writes reach the file.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "emu/emu_int.h"

#define PROT_MASK (CREC_PROT_READ | CREC_PROT_WRITE | CREC_PROT_EXEC)

/* 1 if no page of [addr, addr+len) is mapped. */
static int range_free(crec_emu *e, uint64_t addr, uint64_t len)
{
    uint64_t got;
    return crec_emu_mem_find_free(e->cpu, len, addr, addr + len, &got) == 0 && got == addr;
}

static int64_t choose_addr(crec_emu *e, uint64_t hint, uint64_t len, int low32, uint64_t *out)
{
    if (hint && !(hint & (CREC_PAGE_SIZE - 1)) && hint + len > hint && hint + len <= EMU_STACK_TOP &&
        hint >= EMU_MMAP_BOTTOM && range_free(e, hint, len)) {
        *out = hint;
        return 0;
    }
    if (crec_emu_mem_find_free(e->cpu, len, EMU_MMAP_BOTTOM, low32 ? 0x80000000ull : e->mmap_top,
                               out) != 0)
        return -ENOMEM;
    return 0;
}

/* Fill a fresh private mapping with the file's bytes from off. */
static int64_t copy_file_in(crec_emu *e, int h, uint64_t addr, uint64_t len, uint64_t off)
{
    uint8_t *p = crec_emu_mem_host(e->cpu, addr, len, 0);
    uint64_t done = 0;

    if (!p)
        return -EFAULT;
    while (done < len) {
        ssize_t r = pread(h, p + done, len - done, (off_t)(off + done));
        if (r < 0)
            return -errno;
        if (r == 0)
            break; /* past the end of the file: the rest stays zero */
        done += (uint64_t)r;
    }
    return 0;
}

static int64_t sys_mmap(crec_emu *e, const uint64_t a[6])
{
    uint64_t addr = a[0], len = EMU_PAGE_UP(a[1]), off = a[5];
    int prot = (int)a[2] & PROT_MASK, flags = (int)a[3], h = -1;
    int fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
    int64_t rc;
    crec_error err;

    if (a[1] == 0 || len < a[1] || (off & (CREC_PAGE_SIZE - 1)))
        return -EINVAL;
    if (!(flags & MAP_ANONYMOUS)) {
        struct stat st;
        h = emu_fd_host(e, a[4]);
        if (h < 0)
            return -EBADF;
        if (fstat(h, &st) != 0)
            return -errno;
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 5))
            h = -1, flags |= MAP_ANONYMOUS; /* /dev/zero */
        else if (!S_ISREG(st.st_mode))
            return -ENODEV;
    }
    if (fixed) {
        if (addr & (CREC_PAGE_SIZE - 1) || addr + len < addr)
            return -EINVAL;
        if ((flags & MAP_FIXED_NOREPLACE) && !(flags & MAP_FIXED) && !range_free(e, addr, len))
            return -EEXIST;
    } else if ((rc = choose_addr(e, addr, len, flags & MAP_32BIT, &addr)) != 0) {
        return rc;
    }
    if (h >= 0 && (flags & MAP_TYPE) == MAP_SHARED) {
        void *host = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, h, (off_t)off);
        if (host == MAP_FAILED)
            host = mmap(NULL, len, PROT_READ, MAP_SHARED, h, (off_t)off);
        if (host == MAP_FAILED)
            return -errno;
        if (crec_emu_mem_map_host(e->cpu, addr, len, prot, host, &err) != CREC_OK) {
            munmap(host, len);
            return -ENOMEM;
        }
    } else if (h < 0 && (flags & MAP_TYPE) == MAP_SHARED) {
        /* shared anonymous memory: a fork's child shares it (crec forks) */
        void *host = mmap(NULL, len, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (host == MAP_FAILED)
            return -ENOMEM;
        if (crec_emu_mem_map_host(e->cpu, addr, len, prot, host, &err) != CREC_OK) {
            munmap(host, len);
            return -ENOMEM;
        }
    } else {
        if (crec_emu_mem_map(e->cpu, addr, len, prot, &err) != CREC_OK)
            return -ENOMEM;
        if (h >= 0 && (rc = copy_file_in(e, h, addr, len, off)) != 0) {
            crec_emu_mem_unmap(e->cpu, addr, len, NULL);
            return rc;
        }
    }
    if (h >= 0) /* /proc/self/maps names it */
        emu_named_map(e, addr, len, h, NULL, off, (flags & MAP_TYPE) == MAP_SHARED);
    emu_mem_event(e, CREC_MEM_MMAP, addr, len, prot, h >= 0 ? (int)a[4] : -1, off);
    if (h < 0 && (flags & MAP_TYPE) == MAP_SHARED) /* as Linux names it */
        emu_named_map(e, addr, len, -1, "/dev/zero (deleted)", 0, 1);
    return (int64_t)addr;
}

static int64_t sys_munmap(crec_emu *e, const uint64_t a[6])
{
    uint64_t len = EMU_PAGE_UP(a[1]);
    if ((a[0] & (CREC_PAGE_SIZE - 1)) || a[1] == 0 || a[0] + len < a[0])
        return -EINVAL;
    if (crec_emu_mem_unmap(e->cpu, a[0], len, NULL) != CREC_OK)
        return -ENOMEM;
    emu_mem_event(e, CREC_MEM_MUNMAP, a[0], len, 0, -1, 0);
    return 0;
}

static int64_t sys_mprotect(crec_emu *e, const uint64_t a[6])
{
    uint64_t len = EMU_PAGE_UP(a[1]);
    int prot = (int)a[2] & PROT_MASK;
    if (a[0] & (CREC_PAGE_SIZE - 1) || a[0] + len < a[0])
        return -EINVAL;
    if (len == 0)
        return 0;
    if (crec_emu_mem_protect(e->cpu, a[0], len, prot, NULL) != CREC_OK)
        return -ENOMEM;
    emu_mem_event(e, CREC_MEM_MPROTECT, a[0], len, prot, -1, 0);
    return 0;
}

/* Protection keys: the CPU crec shows has none (no PKU in CPUID), so
 * allocation fails with EINVAL as Linux fails it there, and only the
 * default key -1 can be given to pkey_mprotect. */
static int64_t sys_pkey_mprotect(crec_emu *e, const uint64_t a[6])
{
    return (int)a[3] == -1 ? sys_mprotect(e, a) : -EINVAL;
}

/* pkey_alloc and pkey_free */
static int64_t sys_no_pkeys(crec_emu *e, const uint64_t a[6])
{
    (void)e, (void)a;
    return -EINVAL;
}

static int64_t sys_mremap(crec_emu *e, const uint64_t a[6])
{
    uint64_t old = a[0], olen = EMU_PAGE_UP(a[1]), nlen = EMU_PAGE_UP(a[2]), naddr = a[4];
    int flags = (int)a[3], prot;
    crec_error err;
    void *buf;

    if ((old & (CREC_PAGE_SIZE - 1)) || nlen == 0 || olen == 0)
        return -EINVAL;
    if (emu_mem_check(e->cpu, old, olen, 0) != 0)
        return -EFAULT;
    prot = crec_emu_mem_prot(e->cpu, old);
    if (!(flags & MREMAP_FIXED)) {
        if (nlen <= olen) {
            if (nlen < olen)
                crec_emu_mem_unmap(e->cpu, old + nlen, olen - nlen, NULL);
            emu_mem_event(e, CREC_MEM_MUNMAP, old + nlen, olen - nlen, 0, -1, 0);
            return (int64_t)old;
        }
        if (range_free(e, old + olen, nlen - olen)) {
            if (crec_emu_mem_map(e->cpu, old + olen, nlen - olen, prot, &err) != CREC_OK)
                return -ENOMEM;
            emu_mem_event(e, CREC_MEM_MREMAP, old + olen, nlen - olen, prot, -1, 0);
            return (int64_t)old;
        }
        if (!(flags & MREMAP_MAYMOVE))
            return -ENOMEM;
        if (choose_addr(e, 0, nlen, 0, &naddr) != 0)
            return -ENOMEM;
    } else if (naddr & (CREC_PAGE_SIZE - 1)) {
        return -EINVAL;
    }
    /* move: the host moves the pages (a range over several mappings is
     * copied: what is kept, then the old range dropped) */
    if (crec_emu_mem_move(e->cpu, old, olen, naddr, nlen, &err) != CREC_OK) {
        if (err.code != CREC_ERR_ARG)
            return -ENOMEM;
        buf = crec_malloc(olen < nlen ? olen : nlen);
        if (!buf)
            return -ENOMEM;
        crec_emu_mem_read(e->cpu, buf, old, olen < nlen ? olen : nlen);
        if (crec_emu_mem_map(e->cpu, naddr, nlen, prot, &err) != CREC_OK) {
            crec_free(buf);
            return -ENOMEM;
        }
        crec_emu_mem_write(e->cpu, naddr, buf, olen < nlen ? olen : nlen);
        crec_free(buf);
        crec_emu_mem_unmap(e->cpu, old, olen, NULL);
    }
    emu_mem_event(e, CREC_MEM_MUNMAP, old, olen, 0, -1, 0);
    emu_mem_event(e, CREC_MEM_MREMAP, naddr, nlen, prot, -1, 0);
    return (int64_t)naddr;
}

static int64_t sys_brk(crec_emu *e, const uint64_t a[6])
{
    uint64_t want = a[0], cur = EMU_PAGE_UP(e->brk_cur), top = EMU_PAGE_UP(want);
    crec_error err;

    if (want < e->brk_start || want > e->brk_start + (1ull << 40))
        return (int64_t)e->brk_cur;
    if (top > cur) {
        if (!range_free(e, cur, top - cur) ||
            crec_emu_mem_map(e->cpu, cur, top - cur, CREC_PROT_READ | CREC_PROT_WRITE, &err))
            return (int64_t)e->brk_cur;
        emu_mem_event(e, CREC_MEM_BRK, cur, top - cur, CREC_PROT_READ | CREC_PROT_WRITE, -1, 0);
    } else if (top < cur) {
        crec_emu_mem_unmap(e->cpu, top, cur - top, NULL);
        emu_mem_event(e, CREC_MEM_MUNMAP, top, cur - top, 0, -1, 0);
    }
    e->brk_cur = want;
    return (int64_t)want;
}

static int64_t sys_madvise(crec_emu *e, const uint64_t a[6])
{
    /* MADV_DONTNEED on private anonymous memory reads back as zeros */
    if ((int)a[2] == MADV_DONTNEED && emu_mem_check(e->cpu, a[0], EMU_PAGE_UP(a[1]), 0) == 0) {
        uint8_t *p = crec_emu_mem_host(e->cpu, a[0], EMU_PAGE_UP(a[1]), 0);
        if (p)
            memset(p, 0, EMU_PAGE_UP(a[1]));
    }
    return 0;
}

static int64_t sys_msync(crec_emu *e, const uint64_t a[6])
{
    void *p = crec_emu_mem_host(e->cpu, a[0], a[1] ? a[1] : 1, 0);
    if (!p)
        return -ENOMEM;
    msync(p, a[1], (int)a[2]); /* private copies are not files: an error is fine */
    return 0;
}

/* Every mapped page is "resident": guest memory is ours, in host RAM. */
static int64_t sys_mincore(crec_emu *e, const uint64_t a[6])
{
    uint64_t pages = EMU_PAGE_UP(a[1]) / CREC_PAGE_SIZE;
    uint8_t ones[256];
    if (a[0] & (CREC_PAGE_SIZE - 1))
        return -EINVAL;
    if (emu_mem_check(e->cpu, a[0], pages * CREC_PAGE_SIZE, 0) != 0)
        return -ENOMEM;
    memset(ones, 1, sizeof ones);
    for (uint64_t done = 0; done < pages;) {
        uint64_t n = pages - done < sizeof ones ? pages - done : sizeof ones;
        if (emu_copy_out(e, a[2] + done, ones, n) != 0)
            return -EFAULT;
        done += n;
    }
    return 0;
}

static int64_t sys_mlock(crec_emu *e, const uint64_t a[6])
{
    (void)e, (void)a;
    return 0;
}

void emu_sys_mman_register(struct emu_sys *t, size_t n)
{
#define REG(name, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){sys_##name, f}
#define ALIAS(name, fn, f) \
    if (SYS_##name < n) t[SYS_##name] = (struct emu_sys){fn, f}
    REG(mmap, "pxxxfx");
    REG(munmap, "px");
    REG(mprotect, "pxx");
    REG(pkey_mprotect, "pxxd");
    ALIAS(pkey_alloc, sys_no_pkeys, "xx");
    ALIAS(pkey_free, sys_no_pkeys, "d");
    REG(mremap, "pxxxp");
    REG(brk, "p");
    REG(madvise, "pxd");
    REG(msync, "pxx");
    REG(mlock, "px");
    REG(mincore, "pxp");
    ALIAS(munlock, sys_mlock, "px");
    ALIAS(mlockall, sys_mlock, "x");
    ALIAS(munlockall, sys_mlock, "");
#undef REG
#undef ALIAS
}
