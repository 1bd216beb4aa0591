/*
 * cpu.c - the Unicorn engine in x86-64 mode: creation, hooks, the run
 * loop, and the register state.  No syscall or ELF code is referenced
 * here, so the replayer can link the CPU alone.
 *
 * uc_emu_start is never given a count or a timeout (DESIGN.md): a count
 * adds a code hook and toggling it flushes every translation, a timeout is
 * a timer thread and so not deterministic.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "emu/emu_int.h"

/*
 * Byte order.  Unicorn stores a register through a pointer of the
 * register's own width, in the host's byte order: 2 bytes for the x87
 * control, status and tag words and the segment selectors, 4 for EFLAGS
 * and MXCSR, 8 for the 64-bit registers.  Passing a uint64_t for a 2-byte
 * register works on a little-endian host only (on s390x the value lands in
 * the high bytes), so every access goes through a union of the right width.
 * XMM registers are two host-order u64 words and x87 registers a host-order
 * u64 mantissa then u16 exponent; crec_regs holds guest (little-endian)
 * bytes, converted in crec_emu_regs_get/set.
 */
static unsigned reg_width(int reg)
{
    switch (reg) {
    case UC_X86_REG_FPCW: case UC_X86_REG_FPSW: case UC_X86_REG_FPTAG:
    case UC_X86_REG_FCS: case UC_X86_REG_FDS: case UC_X86_REG_FOP:
    case UC_X86_REG_CS: case UC_X86_REG_DS: case UC_X86_REG_ES:
    case UC_X86_REG_FS: case UC_X86_REG_GS: case UC_X86_REG_SS:
    case UC_X86_REG_FLAGS:
        return 2;
    case UC_X86_REG_EFLAGS: case UC_X86_REG_MXCSR:
    case UC_X86_REG_EAX: case UC_X86_REG_EBX: case UC_X86_REG_ECX: case UC_X86_REG_EDX:
    case UC_X86_REG_ESI: case UC_X86_REG_EDI: case UC_X86_REG_EBP: case UC_X86_REG_ESP:
    case UC_X86_REG_EIP:
        return 4;
    default:
        return 8;
    }
}

union reg_value {
    uint64_t u64;
    uint32_t u32;
    uint16_t u16;
};

static uc_err reg_read(crec_emu_cpu *cpu, int reg, uint64_t *out)
{
    union reg_value v = {0};
    uc_err ue = uc_reg_read(cpu->uc, reg, &v);

    switch (reg_width(reg)) {
    case 2: *out = v.u16; break;
    case 4: *out = v.u32; break;
    default: *out = v.u64; break;
    }
    return ue;
}

static uc_err reg_write(crec_emu_cpu *cpu, int reg, uint64_t value)
{
    union reg_value v = {0};

    switch (reg_width(reg)) {
    case 2: v.u16 = (uint16_t)value; break;
    case 4: v.u32 = (uint32_t)value; break;
    default: v.u64 = value; break;
    }
    return uc_reg_write(cpu->uc, reg, &v);
}

void emu_engine_error(crec_emu_cpu *cpu, uc_err ue, const char *fmt, ...)
{
    va_list ap;
    size_t n;

    if (cpu->engine_err != UC_ERR_OK)
        return; /* the first error is the one to report */
    cpu->engine_err = ue;
    va_start(ap, fmt);
    vsnprintf(cpu->engine_what, sizeof cpu->engine_what, fmt, ap);
    va_end(ap);
    n = strlen(cpu->engine_what);
    snprintf(cpu->engine_what + n, sizeof cpu->engine_what - n, ": %s", uc_strerror(ue));
    uc_emu_stop(cpu->uc); /* state is wrong from here: run no further */
}

/* Keep the error of a register access that has no way to return it. */
static void note_engine_error(crec_emu_cpu *cpu, uc_err ue, const char *what, int reg)
{
    emu_engine_error(cpu, ue, "%s of Unicorn register %d", what, reg);
}

uint64_t emu_reg_get(crec_emu_cpu *cpu, int uc_reg)
{
    uint64_t v = 0;
    uc_err ue = reg_read(cpu, uc_reg, &v);

    if (ue != UC_ERR_OK)
        note_engine_error(cpu, ue, "read", uc_reg);
    return v;
}

void emu_reg_set(crec_emu_cpu *cpu, int uc_reg, uint64_t v)
{
    uc_err ue = reg_write(cpu, uc_reg, v);

    if (ue != UC_ERR_OK)
        note_engine_error(cpu, ue, "write", uc_reg);
}

/* emu's register ids (emu.h) as Unicorn's. */
static const int uc_reg_of[CREC_EMU_REG_END - CREC_EMU_REG_BASE] = {
    [CREC_EMU_RAX - CREC_EMU_REG_BASE] = UC_X86_REG_RAX,
    [CREC_EMU_RCX - CREC_EMU_REG_BASE] = UC_X86_REG_RCX,
    [CREC_EMU_RDX - CREC_EMU_REG_BASE] = UC_X86_REG_RDX,
    [CREC_EMU_RBX - CREC_EMU_REG_BASE] = UC_X86_REG_RBX,
    [CREC_EMU_RSP - CREC_EMU_REG_BASE] = UC_X86_REG_RSP,
    [CREC_EMU_RBP - CREC_EMU_REG_BASE] = UC_X86_REG_RBP,
    [CREC_EMU_RSI - CREC_EMU_REG_BASE] = UC_X86_REG_RSI,
    [CREC_EMU_RDI - CREC_EMU_REG_BASE] = UC_X86_REG_RDI,
    [CREC_EMU_R8 - CREC_EMU_REG_BASE] = UC_X86_REG_R8,
    [CREC_EMU_R9 - CREC_EMU_REG_BASE] = UC_X86_REG_R9,
    [CREC_EMU_R10 - CREC_EMU_REG_BASE] = UC_X86_REG_R10,
    [CREC_EMU_R11 - CREC_EMU_REG_BASE] = UC_X86_REG_R11,
    [CREC_EMU_R12 - CREC_EMU_REG_BASE] = UC_X86_REG_R12,
    [CREC_EMU_R13 - CREC_EMU_REG_BASE] = UC_X86_REG_R13,
    [CREC_EMU_R14 - CREC_EMU_REG_BASE] = UC_X86_REG_R14,
    [CREC_EMU_R15 - CREC_EMU_REG_BASE] = UC_X86_REG_R15,
    [CREC_EMU_RIP - CREC_EMU_REG_BASE] = UC_X86_REG_RIP,
    [CREC_EMU_RFLAGS - CREC_EMU_REG_BASE] = UC_X86_REG_RFLAGS,
    [CREC_EMU_FS_BASE - CREC_EMU_REG_BASE] = UC_X86_REG_FS_BASE,
    [CREC_EMU_GS_BASE - CREC_EMU_REG_BASE] = UC_X86_REG_GS_BASE,
    [CREC_EMU_MXCSR - CREC_EMU_REG_BASE] = UC_X86_REG_MXCSR,
    [CREC_EMU_FPCW - CREC_EMU_REG_BASE] = UC_X86_REG_FPCW,
    [CREC_EMU_FPSW - CREC_EMU_REG_BASE] = UC_X86_REG_FPSW,
    [CREC_EMU_FPTAG - CREC_EMU_REG_BASE] = UC_X86_REG_FPTAG,
};

_Static_assert(UC_X86_REG_ENDING < CREC_EMU_REG_BASE,
               "emu's register ids must not overlap Unicorn's");

/* Unicorn's id of one of emu's, or -1 for an id that is not one. */
static int uc_reg(crec_emu_cpu *cpu, enum crec_emu_reg reg)
{
    if ((int)reg < CREC_EMU_REG_BASE || reg >= CREC_EMU_REG_END) {
        emu_engine_error(cpu, UC_ERR_ARG,
                         "register id %d is not an emu register (enum crec_emu_reg)", (int)reg);
        return -1;
    }
    return uc_reg_of[reg - CREC_EMU_REG_BASE];
}

uint64_t crec_emu_reg_get(crec_emu_cpu *cpu, enum crec_emu_reg reg)
{
    int id = uc_reg(cpu, reg);
    return id < 0 ? 0 : emu_reg_get(cpu, id);
}

void crec_emu_reg_set(crec_emu_cpu *cpu, enum crec_emu_reg reg, uint64_t v)
{
    int id = uc_reg(cpu, reg);
    if (id >= 0)
        emu_reg_set(cpu, id, v);
}

int crec_emu_cpu_error(const crec_emu_cpu *cpu, crec_error *err)
{
    if (cpu->engine_err == UC_ERR_OK)
        return CREC_OK;
    return crec_error_set(err, CREC_ERR_EMU, "Unicorn: %s", cpu->engine_what);
}

uint64_t crec_emu_rdtsc_default(uint64_t icount)
{
    return 1000000000ull + 4 * icount;
}

static void hook_syscall(uc_engine *uc, void *ud)
{
    crec_emu_cpu *cpu = ud;
    (void)uc;
    if (cpu->hooks.syscall) {
        cpu->in_syscall_hook = 1;
        cpu->rip_moved = 0;
        cpu->hooks.syscall(cpu->hooks.ctx, cpu);
        cpu->in_syscall_hook = 0;
        /* Unicorn 2.0.1 drops a stop asked for in a hook that also wrote RIP
         * (a process that dies of a signal at rt_sigreturn): the next block
         * hook asks again, before its block */
        if (cpu->stop_requested && cpu->rip_moved)
            cpu->xstop_pending = 1;
    } else
        emu_reg_set(cpu, UC_X86_REG_RAX, (uint64_t)-ENOSYS);
}

static int hook_cpuid(uc_engine *uc, void *ud)
{
    crec_emu_cpu *cpu = ud;
    uint32_t out[4];
    uint32_t leaf = (uint32_t)emu_reg_get(cpu, UC_X86_REG_RAX);
    uint32_t sub = (uint32_t)emu_reg_get(cpu, UC_X86_REG_RCX);

    (void)uc;
    if (cpu->hooks.cpuid)
        cpu->hooks.cpuid(cpu->hooks.ctx, leaf, sub, out);
    else
        crec_emu_cpuid_default(leaf, sub, out);
    emu_reg_set(cpu, UC_X86_REG_RAX, out[0]);
    emu_reg_set(cpu, UC_X86_REG_RBX, out[1]);
    emu_reg_set(cpu, UC_X86_REG_RCX, out[2]);
    emu_reg_set(cpu, UC_X86_REG_RDX, out[3]);
    return 1; /* skip Unicorn's own CPUID */
}

static bool hook_invalid_insn(uc_engine *uc, void *ud)
{
    (void)uc, (void)ud;
    return false; /* stop with UC_ERR_INSN_INVALID */
}

static bool hook_mem_invalid(uc_engine *uc, uc_mem_type type, uint64_t addr, int size,
                             int64_t value, void *ud)
{
    crec_emu_cpu *cpu = ud;
    struct crec_emu_stop *f = &cpu->fault;

    (void)uc, (void)size, (void)value;
    /* a chunk of a lazy mapping not given to Unicorn yet (mem.c) */
    if ((type == UC_MEM_READ_UNMAPPED || type == UC_MEM_WRITE_UNMAPPED) &&
        emu_mem_fault_in(cpu, addr))
        return true;
    memset(f, 0, sizeof *f);
    f->why = CREC_STOP_FAULT;
    f->signo = SIGSEGV;
    f->addr = addr;
    f->rip = emu_reg_get(cpu, UC_X86_REG_RIP);
    switch (type) {
    case UC_MEM_READ_UNMAPPED: f->access = 'r', f->unmapped = 1; break;
    case UC_MEM_WRITE_UNMAPPED: f->access = 'w', f->unmapped = 1; break;
    case UC_MEM_FETCH_UNMAPPED: f->access = 'x', f->unmapped = 1, f->rip = addr; break;
    case UC_MEM_WRITE_PROT: f->access = 'w'; break;
    case UC_MEM_READ_PROT: f->access = 'r'; break;
    case UC_MEM_FETCH_PROT: f->access = 'x', f->rip = addr; break;
    default: f->access = '?'; break;
    }
    /* a PROT_NONE mapping is no Unicorn region (mem.c): mapped, protected */
    if (f->unmapped && crec_emu_mem_prot(cpu, addr) >= 0)
        f->unmapped = 0;
    cpu->fault_seen = 1;
    return false;
}

/* The CPU whose engine runs on this thread (for emu_xinsn_fast). */
_Thread_local crec_emu_cpu *emu_running;

int emu_xinsn_fast(void *uc, uint64_t addr)
{
    crec_emu_cpu *cpu = emu_running;

    if (!cpu || (void *)cpu->uc != uc || !emu_xsite_has(cpu, addr))
        return 0;
    emu_xinsn_site(cpu, addr, 0);
    return 1;
}

/* ---- the fast memory path --------------------------------------------------
 *
 * With memory hooks installed, Unicorn sends every guest load and store
 * through its helpers (ucfix.c, 7), which search the region, walk the hook
 * lists and their bound checks, check the TLB and then reach the bytes:
 * that machinery, not the hook, was most of what recording and replay
 * cost over plain emulation.  For an access inside one page of plain RAM
 * of the engine running on this thread, crec does it itself: the client's
 * hooks are called as Unicorn calls them (before the access, with the
 * value for a store), then the bytes are read or written in host memory.
 * Anything else (an access across pages or needing alignment, a page that
 * is not a region of RAM or lacks the permission, a store to a page code
 * was translated from) goes Unicorn's way, unchanged.
 */

int emu_fast_fill(crec_emu_cpu *cpu, struct emu_fast_page *e, uint64_t page, uint64_t gen)
{
    uint8_t *host;
    int prot;

    e->page_plus1 = 0;
    if (emu_mem_fast_page(cpu, page, &host, &prot) != 0)
        return 0;
    *e = (struct emu_fast_page){page + 1, gen, host, emu_ram_page(cpu->uc, host), prot};
    return 1;
}

static void hook_intr(uc_engine *uc, uint32_t intno, void *ud)
{
    crec_emu_cpu *cpu = ud;
    cpu->intr_seen = 1;
    cpu->intno = intno;
    uc_emu_stop(uc);
}

/*
 * The FPU as Linux starts a process: x87 control word 0x37f (all exceptions
 * masked, 64-bit precision), an empty x87 stack, MXCSR 0x1f80.  Unicorn's
 * reset leaves the control word and MXCSR at 0 and all tags "full"; that
 * goes unnoticed until an FXRSTOR (ld.so's lazy binding) loads the zero
 * control word into the softfloat state.
 */
static void cpu_reset_fpu(crec_emu_cpu *cpu)
{
    /* CR4.OSFXSR|OSXMMEXCPT, as Linux sets them: without OSFXSR, QEMU's
     * FXSAVE/FXRSTOR skip MXCSR and the XMM registers, and ld.so's lazy
     * binding (_dl_runtime_resolve_fxsave) loses the caller's xmm args. */
    emu_reg_set(cpu, UC_X86_REG_CR4,
                     emu_reg_get(cpu, UC_X86_REG_CR4) | (1u << 9) | (1u << 10));
    emu_reg_set(cpu, UC_X86_REG_FPCW, 0x37f);
    emu_reg_set(cpu, UC_X86_REG_FPTAG, 0xffff);
    emu_reg_set(cpu, UC_X86_REG_MXCSR, 0x1f80);
}

/*
 * Unicorn engines are kept and reused: a freed CPU gives its engine back
 * to a small pool, cleaned (no hook, no memory, no translated code,
 * registers as new), and the next CPU takes it.  A process so creates at
 * most as many engines as it runs at once.  That is what makes replay
 * work under qemu-user before QEMU 8.1, where s390x "relative long"
 * offsets beyond 2 GiB are miscomputed (the 32-bit `imm * 2` wraps): every
 * engine maps a 1 GiB code buffer, so the third one a process creates
 * sits too far from the heap and from libunicorn, and its generated code
 * calls and loads the wrong addresses (docs/PORTABILITY.md).
 */
#define EMU_POOL_MAX 2

struct emu_engine {
    uc_engine *uc;
    uc_context *reset; /* its registers as new */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct emu_engine pool[EMU_POOL_MAX];
static size_t pool_n;

/* A clean engine: from the pool, or a new one with its reset state saved. */
static uc_err engine_take(crec_emu_cpu *cpu)
{
    uc_err ue;

    pthread_mutex_lock(&pool_lock);
    if (pool_n > 0) {
        pool_n--;
        cpu->uc = pool[pool_n].uc;
        cpu->uc_reset = pool[pool_n].reset;
        pthread_mutex_unlock(&pool_lock);
        return uc_context_restore(cpu->uc, cpu->uc_reset);
    }
    pthread_mutex_unlock(&pool_lock);
    ue = emu_uc_open(&cpu->uc);
    if (ue != UC_ERR_OK)
        return ue;
    ue = uc_context_alloc(cpu->uc, &cpu->uc_reset);
    if (ue == UC_ERR_OK)
        ue = uc_context_save(cpu->uc, cpu->uc_reset);
    return ue;
}

/*
 * Remove every hook this CPU added and every guest region; 0 if clean.
 * The block hook goes last: Unicorn 2.0.1 deletes it by going over every
 * translated block, which is cheap once the regions' code is dropped and
 * cost 0.28 s of the end of a python3 replay before.
 */
static int engine_clean(crec_emu_cpu *cpu)
{
    uc_hook base[] = {cpu->h_syscall, cpu->h_cpuid, cpu->h_invalid, cpu->h_mem, cpu->h_intr};
    uc_mem_region *regions;
    uint32_t n;
    int bad = 0;

    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        if (base[i] && uc_hook_del(cpu->uc, base[i]) != UC_ERR_OK)
            bad = 1;
    for (size_t i = 0; i < cpu->n_client_hooks; i++)
        if (cpu->client_hooks[i].kinds && uc_hook_del(cpu->uc, cpu->client_hooks[i].uc) != UC_ERR_OK)
            bad = 1;
    for (size_t i = 0; i < cpu->n_rdtsc; i++)
        if (uc_hook_del(cpu->uc, cpu->rdtsc_hooks[i]) != UC_ERR_OK)
            bad = 1;
    for (size_t i = 0; i < cpu->n_code_hooks; i++)
        if (uc_hook_del(cpu->uc, cpu->code_hooks[i]->uc) != UC_ERR_OK)
            bad = 1;
    if (cpu->h_until && uc_hook_del(cpu->uc, cpu->h_until) != UC_ERR_OK)
        bad = 1;
    emu_xsites_free(cpu, 1);
    if (uc_mem_regions(cpu->uc, &regions, &n) != UC_ERR_OK)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        /* Translated blocks are found by guest and RAM address: drop those
         * of every executable region (no other holds any), so that a later
         * mapping at the same addresses can never meet them.  A whole
         * flush would cost 20 ms, and 3 s the first time. */
        if (regions[i].perms & UC_PROT_EXEC)
            uc_ctl_remove_cache(cpu->uc, regions[i].begin, regions[i].end + 1);
        if (emu_uc_mem_unmap(cpu->uc, regions[i].begin,
                             regions[i].end - regions[i].begin + 1) != UC_ERR_OK)
            bad = 1;
    }
    uc_free(regions);
    if (cpu->h_block && uc_hook_del(cpu->uc, cpu->h_block) != UC_ERR_OK)
        bad = 1;
    return bad ? -1 : 0;
}

/* Give the engine back to the pool, or close it when the pool is full or
 * the engine could not be cleaned. */
static void engine_give(crec_emu_cpu *cpu)
{
    int kept = 0;

    if (cpu->uc_reset && engine_clean(cpu) == 0) {
        pthread_mutex_lock(&pool_lock);
        if (pool_n < EMU_POOL_MAX) {
            pool[pool_n].uc = cpu->uc;
            pool[pool_n].reset = cpu->uc_reset;
            pool_n++;
            kept = 1;
        }
        pthread_mutex_unlock(&pool_lock);
    }
    if (!kept) {
        if (cpu->uc_reset)
            uc_context_free(cpu->uc_reset);
        emu_uc_close(cpu->uc);
    }
    cpu->uc = NULL;
    cpu->uc_reset = NULL;
}

int crec_emu_cpu_create(crec_emu_cpu **out, const struct crec_emu_cpu_hooks *hooks,
                        crec_error *err)
{
    crec_emu_cpu *cpu = crec_calloc(1, sizeof *cpu);
    uc_err ue;

    *out = NULL;
    if (!cpu)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    if (hooks)
        cpu->hooks = *hooks;
    cpu->data_mmio = emu_mem_data_mmio_default();
    ue = engine_take(cpu);
    if (ue != UC_ERR_OK) {
        crec_emu_cpu_free(cpu);
        return crec_error_set(err, CREC_ERR_EMU, "uc_open: %s", uc_strerror(ue));
    }
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cpu->cs) != CS_ERR_OK) {
        crec_emu_cpu_free(cpu);
        return crec_error_set(err, CREC_ERR_EMU, "capstone: cs_open failed");
    }
    if (emu_blocks_init(cpu) != 0) {
        crec_emu_cpu_free(cpu);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    /* begin > end: the hooks apply to every address */
    if ((ue = uc_hook_add(cpu->uc, &cpu->h_block, UC_HOOK_BLOCK, (void *)emu_block_hook, cpu,
                          1, 0)) ||
        (ue = uc_hook_add(cpu->uc, &cpu->h_syscall, UC_HOOK_INSN, (void *)hook_syscall, cpu, 1,
                          0, UC_X86_INS_SYSCALL)) ||
        (ue = uc_hook_add(cpu->uc, &cpu->h_cpuid, UC_HOOK_INSN, (void *)hook_cpuid, cpu, 1, 0,
                          UC_X86_INS_CPUID)) ||
        (ue = uc_hook_add(cpu->uc, &cpu->h_invalid, UC_HOOK_INSN_INVALID,
                          (void *)hook_invalid_insn, cpu, 1, 0)) ||
        (ue = uc_hook_add(cpu->uc, &cpu->h_mem, UC_HOOK_MEM_INVALID, (void *)hook_mem_invalid,
                          cpu, 1, 0)) ||
        (ue = uc_hook_add(cpu->uc, &cpu->h_intr, UC_HOOK_INTR, (void *)hook_intr, cpu, 1, 0))) {
        crec_emu_cpu_free(cpu);
        return crec_error_set(err, CREC_ERR_EMU, "uc_hook_add: %s", uc_strerror(ue));
    }
    cpu_reset_fpu(cpu);
    *out = cpu;
    return CREC_OK;
}

/* The one Unicorn memory hook behind each crec_emu_cpu_hook_mem: it turns
 * Unicorn's report into emu's (kind, size, value) call. */
static void client_mem_hook(uc_engine *uc, uc_mem_type type, uint64_t addr, int size,
                            int64_t value, void *ud)
{
    const struct emu_client_hook *h = ud;

    (void)uc;
    if (size <= 0)
        return;
    if (type == UC_MEM_READ)
        h->fn(h->ctx, CREC_EMU_LOAD, addr, (unsigned)size, 0);
    else
        h->fn(h->ctx, CREC_EMU_STORE, addr, (unsigned)size, (uint64_t)value);
}

int crec_emu_cpu_hook_mem(crec_emu_cpu *cpu, int kinds, crec_emu_mem_fn fn, void *ctx,
                          crec_error *err)
{
    struct emu_client_hook *h;
    int types = 0;
    uc_err ue;

    size_t i = 0;

    if (!fn || !kinds || (kinds & ~(CREC_EMU_LOAD | CREC_EMU_STORE)))
        return crec_error_set(err, CREC_ERR_ARG, "bad memory hook kinds 0x%x", kinds);
    while (i < cpu->n_client_hooks && cpu->client_hooks[i].kinds) /* a slot a hook left */
        i++;
    if (i == EMU_MAX_CLIENT_HOOKS)
        return crec_error_set(err, CREC_ERR_LIMIT, "more than %d memory hooks on one CPU",
                              EMU_MAX_CLIENT_HOOKS);
    if (kinds & CREC_EMU_LOAD)
        types |= UC_HOOK_MEM_READ;
    if (kinds & CREC_EMU_STORE)
        types |= UC_HOOK_MEM_WRITE;
    h = &cpu->client_hooks[i];
    h->fn = fn;
    h->ctx = ctx;
    h->kinds = kinds;
    /* begin > end: everywhere */
    ue = uc_hook_add(cpu->uc, &h->uc, types, (void *)client_mem_hook, h, 1, 0);
    if (ue != UC_ERR_OK) {
        h->kinds = 0;
        return crec_error_set(err, CREC_ERR_EMU, "uc_hook_add: %s", uc_strerror(ue));
    }
    if (i == cpu->n_client_hooks)
        cpu->n_client_hooks++;
    return CREC_OK;
}

int crec_emu_cpu_unhook_mem(crec_emu_cpu *cpu, crec_emu_mem_fn fn, void *ctx)
{
    for (size_t i = 0; i < cpu->n_client_hooks; i++) {
        struct emu_client_hook *h = &cpu->client_hooks[i];
        if (h->kinds && h->fn == fn && h->ctx == ctx) {
            /* the slot stays (Unicorn holds pointers to the others) and is
             * skipped (kinds 0) until a hook takes it again */
            uc_hook_del(cpu->uc, h->uc);
            h->kinds = 0;
            return CREC_OK;
        }
    }
    return CREC_ERR_NOTFOUND;
}

uint64_t crec_emu_cpu_block_bytes(const crec_emu_cpu *cpu)
{
    return cpu->cur_block_size;
}

static void client_code_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    const struct emu_code_hook *h = ud;

    (void)uc;
    h->fn(h->ctx, addr, size);
}

int crec_emu_cpu_hook_code(crec_emu_cpu *cpu, uint64_t begin, uint64_t end, crec_emu_code_fn fn,
                           void *ctx, crec_error *err)
{
    struct emu_code_hook **grown = crec_grow(cpu->code_hooks, &cpu->cap_code_hooks,
                                             cpu->n_code_hooks + 1, sizeof *grown, 8);
    struct emu_code_hook *h;
    uc_err ue;

    if (!grown)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a code hook");
    cpu->code_hooks = grown;
    if (!(h = crec_calloc(1, sizeof *h)))
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for a code hook");
    h->fn = fn, h->ctx = ctx, h->begin = begin, h->end = end;
    ue = uc_hook_add(cpu->uc, &h->uc, UC_HOOK_CODE, (void *)client_code_hook, h, begin, end);
    if (ue != UC_ERR_OK) {
        crec_free(h);
        return crec_error_set(err, CREC_ERR_EMU, "uc_hook_add: %s", uc_strerror(ue));
    }
    grown[cpu->n_code_hooks++] = h;
    return CREC_OK;
}

void crec_emu_cpu_free(crec_emu_cpu *cpu)
{
    if (!cpu)
        return;
    if (cpu->uc)
        engine_give(cpu); /* before the host memory it maps goes away */
    emu_mem_free_all(cpu);
    emu_blocks_free(cpu);
    for (size_t i = 0; i < cpu->n_code_hooks; i++)
        crec_free(cpu->code_hooks[i]);
    crec_free(cpu->code_hooks);
    if (cpu->cs)
        cs_close(&cpu->cs);
    if (cpu->cs_detail)
        cs_close(&cpu->cs_detail);
    crec_free(cpu);
}

void crec_emu_cpu_resume_at(crec_emu_cpu *cpu, uint64_t rip)
{
    /* Unicorn 2.0.1 adds the syscall's length to RIP after the syscall hook
     * returns, whatever the hook wrote there. */
    emu_reg_set(cpu, UC_X86_REG_RIP, cpu->in_syscall_hook ? rip - 2 : rip);
    cpu->rip_moved = cpu->in_syscall_hook;
}

void crec_emu_cpu_stop(crec_emu_cpu *cpu)
{
    cpu->stop_requested = 1;
    /* From a block hook the stop comes before the block runs: uncount it,
     * and RIP is the block's once the engine is out (Unicorn's is stale) */
    if (cpu->in_block_hook) {
        cpu->icount -= cpu->cur_block_n;
        cpu->cur_block_n = 0, cpu->cur_block_size = 0;
        cpu->hook_stop_rip = cpu->cur_block;
    }
    uc_emu_stop(cpu->uc);
}

uint64_t crec_emu_cpu_icount(const crec_emu_cpu *cpu)
{
    return cpu->icount;
}

void crec_emu_cpu_set_icount(crec_emu_cpu *cpu, uint64_t icount)
{
    cpu->icount = icount;
    cpu->cur_block_n = 0, cpu->cur_block_size = 0;
}

void crec_emu_cpu_describe(crec_emu_cpu *cpu, uint64_t addr, char *buf, size_t size)
{
    emu_describe_insn(cpu, addr, buf, size);
}

void crec_emu_cpu_flush_code(crec_emu_cpu *cpu, uint64_t addr, uint64_t len)
{
    if (len == 0) {
        uc_ctl_flush_tlb(cpu->uc); /* UC_CTL_TB_FLUSH: every translated block */
        emu_blocks_forget(cpu, 0, 0);
        return;
    }
    uc_ctl_remove_cache(cpu->uc, addr, addr + len);
    emu_blocks_forget(cpu, addr, len);
}

/*
 * A stop in the middle of a block: count only what completed before rip.
 * At a fault, Unicorn 2.0.1 reports the exact RIP only when a memory hook
 * is installed (as when recording); otherwise RIP is the block's start
 * (unicorn issue #1323).  Either way the count is "instructions completed
 * before the reported RIP", so the two agree with each other.
 */
static void uncount_rest(crec_emu_cpu *cpu, uint64_t rip)
{
    long done;
    if (rip < cpu->cur_block || rip >= cpu->cur_block + cpu->cur_block_size)
        return;
    done = emu_count_insns(cpu, cpu->cur_block, cpu->cur_block_size, rip);
    if (done >= 0 && (uint64_t)done <= cpu->cur_block_n)
        cpu->icount -= cpu->cur_block_n - (uint64_t)done;
    cpu->cur_block_n = 0, cpu->cur_block_size = 0;
}

static int trap_signal(uint32_t intno)
{
    switch (intno) {
    case 0: return SIGFPE;  /* #DE */
    case 1: case 3: return SIGTRAP;
    case 6: return SIGILL;
    case 16: case 19: return SIGFPE;
    default: return SIGSEGV;
    }
}

static void describe_stop(crec_emu_cpu *cpu, struct crec_emu_stop *stop, uc_err ue)
{
    uint64_t rip = emu_reg_get(cpu, UC_X86_REG_RIP);

    if (cpu->fault_seen) {
        *stop = cpu->fault;
        uncount_rest(cpu, stop->rip);
        return;
    }
    stop->rip = rip;
    if (ue == UC_ERR_INSN_INVALID) {
        stop->why = CREC_STOP_ILLEGAL;
        stop->signo = SIGILL;
        uncount_rest(cpu, rip);
        emu_describe_insn(cpu, rip, stop->what, sizeof stop->what);
    } else if (cpu->intr_seen) {
        stop->why = CREC_STOP_TRAP;
        stop->signo = trap_signal(cpu->intno);
        uncount_rest(cpu, rip);
        snprintf(stop->what, sizeof stop->what, "CPU exception %u", cpu->intno);
        if (cpu->intno == 0x80)
            snprintf(stop->what, sizeof stop->what, "int 0x80 (32-bit syscalls are not supported)");
    } else if (ue != UC_ERR_OK) {
        stop->why = CREC_STOP_FAULT;
        stop->signo = SIGSEGV;
        stop->addr = rip;
        stop->access = '?';
        snprintf(stop->what, sizeof stop->what, "%s", uc_strerror(ue));
    } else {
        /* Unicorn returns quietly after HLT, which Linux punishes with #GP */
        stop->why = CREC_STOP_TRAP;
        stop->signo = SIGSEGV;
        stop->rip = rip - 1;
        snprintf(stop->what, sizeof stop->what, "privileged instruction (hlt)");
    }
}

/* Did the guest stop Unicorn (a fault, an illegal instruction, an
 * exception), rather than Unicorn failing by itself? */
static int guest_stop(uc_err ue)
{
    switch (ue) {
    case UC_ERR_OK:
    case UC_ERR_READ_UNMAPPED: case UC_ERR_WRITE_UNMAPPED: case UC_ERR_FETCH_UNMAPPED:
    case UC_ERR_READ_PROT: case UC_ERR_WRITE_PROT: case UC_ERR_FETCH_PROT:
    case UC_ERR_READ_UNALIGNED: case UC_ERR_WRITE_UNALIGNED: case UC_ERR_FETCH_UNALIGNED:
    case UC_ERR_INSN_INVALID: case UC_ERR_EXCEPTION:
        return 1;
    default:
        return 0;
    }
}

int crec_emu_cpu_run(crec_emu_cpu *cpu, struct crec_emu_stop *stop, crec_error *err)
{
    uc_err ue;

    memset(stop, 0, sizeof *stop);
    for (;;) {
        uint64_t rip = emu_reg_get(cpu, UC_X86_REG_RIP);
        crec_emu_cpu *outer = emu_running;
        if (cpu->engine_err != UC_ERR_OK)
            return crec_emu_cpu_error(cpu, err);
        cpu->stop_requested = cpu->fault_seen = cpu->intr_seen = 0;
        cpu->restart_at = 0;
        cpu->xstop_pending = 0;
        emu_running = cpu;
        ue = uc_emu_start(cpu->uc, rip, (uint64_t)-1, 0, 0);
        emu_running = outer;
        if (cpu->hook_stop_rip) { /* RIP is stale after a stop in a block hook */
            emu_reg_set(cpu, UC_X86_REG_RIP, cpu->hook_stop_rip);
            cpu->hook_stop_rip = 0;
        }
        if (cpu->until_stop_rip) { /* ... and so after an exact stop inside one */
            emu_reg_set(cpu, UC_X86_REG_RIP, cpu->until_stop_rip);
            cpu->until_stop_rip = 0;
        }
        if (cpu->xstop_rip) { /* ... and so after the stop asked again there */
            emu_reg_set(cpu, UC_X86_REG_RIP, cpu->xstop_rip);
            cpu->xstop_rip = 0;
        }
        if (cpu->engine_err != UC_ERR_OK)
            return crec_emu_cpu_error(cpu, err);
        if (!guest_stop(ue) && !cpu->fault_seen)
            return crec_error_set(err, CREC_ERR_EMU, "Unicorn failed at rip 0x%" PRIx64
                                  " after %" PRIu64 " instructions: %s",
                                  emu_reg_get(cpu, UC_X86_REG_RIP), cpu->icount,
                                  uc_strerror(ue));
        if (cpu->restart_at && !cpu->fault_seen && !cpu->intr_seen) {
            /* a block with a new RDTSC trap: enter it again */
            emu_reg_set(cpu, UC_X86_REG_RIP, cpu->restart_at);
            if (!cpu->stop_requested)
                continue;
        }
        /* An exact stop inside a block (crec_emu_cpu_stop_inside) has
         * fired: its code hook goes, and so does the translation it made. */
        if (cpu->until_hook_is_stale && !cpu->until_armed)
            emu_until_clear(cpu);
        if (cpu->stop_requested && ue == UC_ERR_OK && !cpu->intr_seen)
            return CREC_OK;
        describe_stop(cpu, stop, ue);
        return cpu->engine_err != UC_ERR_OK ? crec_emu_cpu_error(cpu, err) : CREC_OK;
    }
}

/* --- registers ---------------------------------------------------------- */

static const int gpr_ids[CREC_NGPR] = {
    UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
    UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};

/* An x87 register as Unicorn passes it: QEMU's floatx80, a u64 mantissa
 * then a u16 exponent, each in host order (10 bytes, no padding between). */
static uc_err st_read(crec_emu_cpu *cpu, int reg, uint8_t out[10])
{
    uint8_t raw[16] = {0};
    uint64_t mant;
    uint16_t exp;
    uc_err ue = uc_reg_read(cpu->uc, reg, raw);

    memcpy(&mant, raw, 8);
    memcpy(&exp, raw + 8, 2);
    crec_le_put(out, mant, 8);
    crec_le_put(out + 8, exp, 2);
    return ue;
}

static uc_err st_write(crec_emu_cpu *cpu, int reg, const uint8_t in[10])
{
    uint8_t raw[16] = {0};
    uint64_t mant = crec_le_get(in, 8);
    uint16_t exp = (uint16_t)crec_le_get(in + 8, 2);

    memcpy(raw, &mant, 8);
    memcpy(raw + 8, &exp, 2);
    return uc_reg_write(cpu->uc, reg, raw);
}

/* An XMM register: two host-order u64 words, the low one first. */
static uc_err xmm_read(crec_emu_cpu *cpu, int reg, uint8_t out[16])
{
    uint64_t q[2] = {0, 0};
    uc_err ue = uc_reg_read(cpu->uc, reg, q);

    crec_le_put(out, q[0], 8);
    crec_le_put(out + 8, q[1], 8);
    return ue;
}

static uc_err xmm_write(crec_emu_cpu *cpu, int reg, const uint8_t in[16])
{
    uint64_t q[2] = {crec_le_get(in, 8), crec_le_get(in + 8, 8)};
    return uc_reg_write(cpu->uc, reg, q);
}

/* A register access that failed, named, as crec_emu_regs_get/set report it. */
static int regs_error(uc_err ue, const char *what, const char *reg, crec_error *err)
{
    return crec_error_set(err, CREC_ERR_EMU, "Unicorn can't %s %s: %s", what, reg,
                          uc_strerror(ue));
}

int crec_emu_regs_get(crec_emu_cpu *cpu, crec_regs *r, crec_error *err)
{
    static const struct { int id; const char *name; size_t off, width; } scalars[] = {
        {UC_X86_REG_RIP, "rip", offsetof(crec_regs, rip), 8},
        {UC_X86_REG_RFLAGS, "rflags", offsetof(crec_regs, rflags), 8},
        {UC_X86_REG_FS_BASE, "fs_base", offsetof(crec_regs, fs_base), 8},
        {UC_X86_REG_GS_BASE, "gs_base", offsetof(crec_regs, gs_base), 8},
        {UC_X86_REG_MXCSR, "mxcsr", offsetof(crec_regs, mxcsr), 4},
        {UC_X86_REG_FPCW, "fpcw", offsetof(crec_regs, fpcw), 2},
        {UC_X86_REG_FPSW, "fpsw", offsetof(crec_regs, fpsw), 2},
        {UC_X86_REG_FPTAG, "fptag", offsetof(crec_regs, fptag), 2},
    };
    uc_err ue;
    uint64_t v;

    memset(r, 0, sizeof *r);
    for (int i = 0; i < CREC_NGPR; i++)
        if ((ue = reg_read(cpu, gpr_ids[i], &r->gpr[i])) != UC_ERR_OK)
            return regs_error(ue, "read", "a general register", err);
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        uint8_t *field = (uint8_t *)r + scalars[i].off;
        if ((ue = reg_read(cpu, scalars[i].id, &v)) != UC_ERR_OK)
            return regs_error(ue, "read", scalars[i].name, err);
        if (scalars[i].width == 8)
            memcpy(field, &v, 8);
        else if (scalars[i].width == 4)
            *(uint32_t *)(void *)field = (uint32_t)v;
        else
            *(uint16_t *)(void *)field = (uint16_t)v;
    }
    for (int i = 0; i < 16; i++)
        if ((ue = xmm_read(cpu, UC_X86_REG_XMM0 + i, r->xmm[i])) != UC_ERR_OK)
            return regs_error(ue, "read", "an xmm register", err);
    for (int i = 0; i < 8; i++)
        if ((ue = st_read(cpu, UC_X86_REG_ST0 + i, r->st[i])) != UC_ERR_OK)
            return regs_error(ue, "read", "an x87 register", err);
    return CREC_OK;
}

int crec_emu_regs_set(crec_emu_cpu *cpu, const crec_regs *r, crec_error *err)
{
    const struct { int id; const char *name; uint64_t v; } scalars[] = {
        {UC_X86_REG_RFLAGS, "rflags", r->rflags},
        {UC_X86_REG_FS_BASE, "fs_base", r->fs_base},
        {UC_X86_REG_GS_BASE, "gs_base", r->gs_base},
        {UC_X86_REG_MXCSR, "mxcsr", r->mxcsr},
        {UC_X86_REG_FPCW, "fpcw", r->fpcw},
        {UC_X86_REG_FPSW, "fpsw", r->fpsw},
        {UC_X86_REG_FPTAG, "fptag", r->fptag},
        /* RIP last: writing it from inside a hook also restarts the block */
        {UC_X86_REG_RIP, "rip", r->rip},
    };
    uc_err ue;

    for (int i = 0; i < CREC_NGPR; i++)
        if ((ue = reg_write(cpu, gpr_ids[i], r->gpr[i])) != UC_ERR_OK)
            return regs_error(ue, "write", "a general register", err);
    for (int i = 0; i < 16; i++)
        if ((ue = xmm_write(cpu, UC_X86_REG_XMM0 + i, r->xmm[i])) != UC_ERR_OK)
            return regs_error(ue, "write", "an xmm register", err);
    for (int i = 0; i < 8; i++)
        if ((ue = st_write(cpu, UC_X86_REG_ST0 + i, r->st[i])) != UC_ERR_OK)
            return regs_error(ue, "write", "an x87 register", err);
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if ((ue = reg_write(cpu, scalars[i].id, scalars[i].v)) != UC_ERR_OK)
            return regs_error(ue, "write", scalars[i].name, err);
    return CREC_OK;
}
