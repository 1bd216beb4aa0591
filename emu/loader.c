/*
 * loader.c - what execve does: map an ELF program (ET_EXEC or PIE) and its
 * interpreter, build the initial stack (argv, envp, auxv) and set brk.
 *
 * The layout is the kernel's with ASLR off, so that it is the same on
 * every run: a PIE at 0x555555554000, the interpreter (the host's own
 * ld.so) at the top of the mmap area (0x7ffff7fff000 for a stack of up to
 * 127 MiB, lower for a bigger one: process.c), the stack (RLIMIT_STACK)
 * ending at 0x7ffffffff000, brk just after the program.  No vDSO: glibc
 * then makes real syscalls for the time, which we emulate.
 *
 * A "#!" script is run by its interpreter, as the kernel does.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu/emu_int.h"

struct elf_image {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    uint64_t bias;      /* load address minus link address */
    uint64_t lo, hi;    /* page-aligned link-time span of PT_LOADs */
    uint64_t phdr;      /* guest address of the program headers */
    uint64_t end;       /* end of the highest segment (for brk), biased */
    char interp[256];
};

static int read_full(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int elf_read_headers(int fd, const char *path, struct elf_image *im, crec_error *err)
{
    Elf64_Ehdr *eh = &im->eh;

    memset(im, 0, sizeof *im);
    if (read_full(fd, eh, sizeof *eh, 0) != 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: not an x86-64 ELF file", path);
    if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: not an executable ELF file", path);
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > 64 ||
        read_full(fd, im->ph, eh->e_phnum * sizeof(Elf64_Phdr), (off_t)eh->e_phoff) != 0)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: bad program headers", path);
    im->lo = UINT64_MAX;
    for (int i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        if (p->p_type == PT_INTERP) {
            if (p->p_filesz < 2 || p->p_filesz >= sizeof im->interp ||
                read_full(fd, im->interp, p->p_filesz, (off_t)p->p_offset) != 0)
                return crec_error_set(err, CREC_ERR_GUEST, "%s: bad PT_INTERP", path);
            im->interp[p->p_filesz - 1] = '\0';
        }
        if (p->p_type != PT_LOAD || p->p_memsz == 0)
            continue;
        if (p->p_filesz > p->p_memsz || p->p_vaddr + p->p_memsz < p->p_vaddr)
            return crec_error_set(err, CREC_ERR_GUEST, "%s: bad PT_LOAD", path);
        if (EMU_PAGE_DOWN(p->p_vaddr) < im->lo)
            im->lo = EMU_PAGE_DOWN(p->p_vaddr);
        if (EMU_PAGE_UP(p->p_vaddr + p->p_memsz) > im->hi)
            im->hi = EMU_PAGE_UP(p->p_vaddr + p->p_memsz);
    }
    if (im->lo == UINT64_MAX)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: no PT_LOAD segment", path);
    return CREC_OK;
}

static int elf_prot(uint32_t flags)
{
    return (flags & PF_R ? CREC_PROT_READ : 0) | (flags & PF_W ? CREC_PROT_WRITE : 0) |
           (flags & PF_X ? CREC_PROT_EXEC : 0);
}

/* Map the PT_LOAD segments at im->bias.  Pages shared by two segments get
 * both protections, as they would from the kernel's overlapping mmaps. */
static int elf_map(crec_emu *e, int fd, const char *path, struct elf_image *im,
                   crec_error *err)
{
    uint64_t mapped_end = 0;
    int rc, prev_prot = 0;

    for (int i = 0; i < im->eh.e_phnum; i++) {
        const Elf64_Phdr *p = &im->ph[i];
        uint64_t s, t, va = p->p_vaddr + im->bias;
        int prot = elf_prot(p->p_flags);
        void *h;

        if (p->p_type != PT_LOAD || p->p_memsz == 0)
            continue;
        s = EMU_PAGE_DOWN(va);
        t = EMU_PAGE_UP(va + p->p_memsz);
        if (s < mapped_end) { /* first page already mapped by the previous one */
            rc = crec_emu_mem_protect(e->cpu, s, CREC_PAGE_SIZE, prot | prev_prot, err);
            if (rc)
                return rc;
            s = mapped_end;
        }
        if (s < t) {
            rc = crec_emu_mem_map(e->cpu, s, t - s, prot, err);
            if (rc)
                return rc;
        }
        h = crec_emu_mem_host(e->cpu, va, p->p_filesz ? p->p_filesz : 1, 0);
        if (p->p_filesz && (!h || read_full(fd, h, p->p_filesz, (off_t)p->p_offset) != 0))
            return crec_error_set(err, CREC_ERR_IO, "%s: cannot read segment %d", path, i);
        if (t > mapped_end)
            mapped_end = t;
        prev_prot = prot;
        if (va + p->p_memsz > im->end)
            im->end = va + p->p_memsz;
        if (p->p_offset <= im->eh.e_phoff &&
            im->eh.e_phoff + im->eh.e_phnum * sizeof(Elf64_Phdr) <= p->p_offset + p->p_filesz)
            im->phdr = va + (im->eh.e_phoff - p->p_offset);
        emu_mem_event_path(e, CREC_MEM_MMAP, EMU_PAGE_DOWN(va), t - EMU_PAGE_DOWN(va), prot, path,
                           p->p_offset - (va - EMU_PAGE_DOWN(va)));
    }
    for (int i = 0; i < im->eh.e_phnum; i++)
        if (im->ph[i].p_type == PT_PHDR)
            im->phdr = im->ph[i].p_vaddr + im->bias;
    return CREC_OK;
}

static int elf_load_file(crec_emu *e, const char *path, struct elf_image *im, int is_interp,
                         crec_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

    if (fd < 0)
        return crec_error_set(err, CREC_ERR_GUEST, "%s: %s", path, strerror(errno));
    rc = elf_read_headers(fd, path, im, err);
    if (rc == CREC_OK && im->eh.e_type == ET_DYN) {
        uint64_t base;
        if (!is_interp) {
            base = EMU_PIE_BASE;
        } else if (crec_emu_mem_find_free(e->cpu, im->hi - im->lo, EMU_MMAP_BOTTOM,
                                          e->mmap_top, &base) != 0) {
            close(fd);
            return crec_error_set(err, CREC_ERR_NOMEM, "%s: no room to load it", path);
        }
        im->bias = base - im->lo;
    }
    if (rc == CREC_OK)
        rc = elf_map(e, fd, path, im, err);
    close(fd);
    return rc;
}

/* ---- the initial stack ---------------------------------------------------- */

struct stack {
    crec_emu *e;
    uint64_t sp;
    int bad;
};

static uint64_t push_bytes(struct stack *s, const void *p, size_t n)
{
    s->sp -= n;
    if (crec_emu_mem_write(s->e->cpu, s->sp, p, n) != 0)
        s->bad = 1;
    return s->sp;
}

static uint64_t push_string(struct stack *s, const char *str)
{
    return push_bytes(s, str, strlen(str) + 1);
}

static size_t count(char *const v[])
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static int build_stack(crec_emu *e, const char *execfn, char *const argv[], char *const envp[],
                       const struct elf_image *prog, uint64_t interp_base, crec_error *err)
{
    static const uint8_t random_bytes[16] = {0x63, 0x72, 0x65, 0x63, 0x20, 0x72, 0x61, 0x6e,
                                             0x64, 0x6f, 0x6d, 0x20, 0x31, 0x32, 0x33, 0x34};
    struct stack s = {e, EMU_STACK_TOP, 0};
    size_t argc = count(argv), envc = count(envp), n = 0;
    uint64_t *vec, execfn_at, platform, random, lid[4];
    uint32_t cpuid1[4];
    int rc = crec_emu_mem_map(e->cpu, EMU_STACK_TOP - e->stack_size, e->stack_size,
                              CREC_PROT_READ | CREC_PROT_WRITE, err);

    if (rc)
        return rc;
    vec = crec_calloc(argc + envc + 64, sizeof *vec);
    if (!vec)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    s.sp -= 8;
    execfn_at = push_string(&s, execfn);
    uint64_t *argp = crec_calloc(argc + envc + 1, sizeof *argp);
    if (!argp) {
        crec_free(vec);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = envc; i-- > 0;)
        argp[argc + i] = push_string(&s, envp[i]);
    for (size_t i = argc; i-- > 0;)
        argp[i] = push_string(&s, argv[i]);
    platform = push_string(&s, "x86_64");
    s.sp &= ~15ull;
    random = push_bytes(&s, random_bytes, sizeof random_bytes);

    crec_emu_cpuid_default(1, 0, cpuid1);
    lid[0] = getuid(), lid[1] = geteuid(), lid[2] = getgid(), lid[3] = getegid();
    vec[n++] = argc;
    for (size_t i = 0; i < argc; i++)
        vec[n++] = argp[i];
    vec[n++] = 0;
    for (size_t i = 0; i < envc; i++)
        vec[n++] = argp[argc + i];
    vec[n++] = 0;
#define AUX(k, v) (vec[n++] = (k), vec[n++] = (v))
    AUX(AT_HWCAP, cpuid1[3]);
    AUX(AT_PAGESZ, CREC_PAGE_SIZE);
    AUX(AT_CLKTCK, 100);
    AUX(AT_PHDR, prog->phdr);
    AUX(AT_PHENT, sizeof(Elf64_Phdr));
    AUX(AT_PHNUM, prog->eh.e_phnum);
    AUX(AT_BASE, interp_base);
    AUX(AT_FLAGS, 0);
    AUX(AT_ENTRY, prog->eh.e_entry + prog->bias);
    AUX(AT_UID, lid[0]);
    AUX(AT_EUID, lid[1]);
    AUX(AT_GID, lid[2]);
    AUX(AT_EGID, lid[3]);
    AUX(AT_SECURE, 0);
    AUX(AT_RANDOM, random);
    AUX(AT_HWCAP2, 0);
    AUX(AT_EXECFN, execfn_at);
    AUX(AT_PLATFORM, platform);
    AUX(AT_NULL, 0);
#undef AUX
    s.sp -= n * 8;
    s.sp &= ~15ull;
    if (crec_emu_mem_write(e->cpu, s.sp, vec, n * 8) != 0)
        s.bad = 1;
    /* what /proc/self/{cmdline,environ,auxv,stat} show (procfs.c) */
    e->arg_start = argc ? argp[0] : execfn_at;
    e->env_start = envc ? argp[argc] : (argc ? argp[argc - 1] + strlen(argv[argc - 1]) + 1
                                             : execfn_at);
    e->arg_end = e->env_start;
    e->env_end = envc ? argp[argc + envc - 1] + strlen(envp[envc - 1]) + 1 : e->env_start;
    e->start_stack = s.sp;
    {
        size_t aux_at = 1 + argc + 1 + envc + 1, aux_n = n - aux_at;
        e->auxv_len = aux_n * 8 > sizeof e->auxv ? sizeof e->auxv : aux_n * 8;
        memcpy(e->auxv, vec + aux_at, e->auxv_len);
    }
    crec_free(argp);
    crec_free(vec);
    if (s.bad)
        return crec_error_set(err, CREC_ERR_LIMIT, "arguments and environment too large");
    emu_reg_set(e->cpu, UC_X86_REG_RSP, s.sp);
    return CREC_OK;
}

/* ---- #! scripts ------------------------------------------------------------ */

/* If path is a script, fill interp/arg and return 1. */
static int script_interp(const char *path, char *interp, size_t isz, char *arg, size_t asz)
{
    char line[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
    char *p, *q;

    if (fd >= 0)
        close(fd);
    if (n < 3 || line[0] != '#' || line[1] != '!')
        return 0;
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    p = line + 2 + strspn(line + 2, " \t");
    q = p + strcspn(p, " \t");
    snprintf(interp, isz, "%.*s", (int)(q - p), p);
    q += strspn(q, " \t");
    snprintf(arg, asz, "%s", q);
    for (size_t l = strlen(arg); l > 0 && (arg[l - 1] == ' ' || arg[l - 1] == '\t');)
        arg[--l] = '\0';
    return interp[0] != '\0';
}

static int load_script(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                       int depth, crec_error *err);

static int load_any(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                    int depth, crec_error *err)
{
    struct elf_image prog, interp;
    uint64_t interp_base = 0, entry;
    int rc;

    if (depth < 4 && (rc = load_script(e, path, argv, envp, depth, err)) >= 0)
        return rc;
    rc = elf_load_file(e, path, &prog, 0, err);
    if (rc)
        return rc;
    entry = prog.eh.e_entry + prog.bias;
    if (prog.interp[0]) {
        rc = elf_load_file(e, prog.interp, &interp, 1, err);
        if (rc)
            return rc;
        interp_base = interp.lo + interp.bias;
        entry = interp.eh.e_entry + interp.bias;
    }
    /* what /proc/self/exe says: the canonical path, as the kernel has it */
    if (!realpath(path, e->exe))
        snprintf(e->exe, sizeof e->exe, "%s", path);
    /* the process's name, as the kernel takes it from the file name */
    snprintf(e->comm, sizeof e->comm, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    rc = build_stack(e, path, argv, envp, &prog, interp_base, err);
    if (rc)
        return rc;
    e->brk_start = e->brk_cur = EMU_PAGE_UP(prog.end);
    emu_reg_set(e->cpu, UC_X86_REG_RIP, entry);
    emu_reg_set(e->cpu, UC_X86_REG_RDX, 0);
    return CREC_OK;
}

/* Returns -1 when path is not a script. */
static int load_script(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                       int depth, crec_error *err)
{
    char interp[256], arg[256];
    size_t argc = count(argv), n = 0;
    char **nargv;
    int rc;

    if (!script_interp(path, interp, sizeof interp, arg, sizeof arg))
        return -1;
    nargv = crec_calloc(argc + 4, sizeof *nargv);
    if (!nargv)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    nargv[n++] = interp;
    if (arg[0])
        nargv[n++] = arg;
    nargv[n++] = (char *)path;
    for (size_t i = 1; i < argc; i++)
        nargv[n++] = argv[i];
    rc = load_any(e, interp, nargv, envp, depth + 1, err);
    crec_free(nargv);
    return rc;
}

int emu_load_elf(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                 crec_error *err)
{
    return load_any(e, path, argv, envp, 0, err);
}
