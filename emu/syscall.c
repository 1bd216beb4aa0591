/*
 * syscall.c - the Linux x86-64 syscall ABI and the table of handlers.
 *
 * The ABI: number in rax, arguments in rdi rsi rdx r10 r8 r9, result in rax
 * (-4095..-1 is -errno); the `syscall` instruction sets rcx to the return
 * address and r11 to rflags.  Handlers live one file per family
 * (sys_fs.c, sys_mman.c, sys_proc.c, sys_time.c, sys_net.c) and are found by number.
 * A number with no handler returns -ENOSYS with one message per number, or
 * stops the run with --strict.
 */
#include <pthread.h>
#include <string.h>

#include "emu/emu_int.h"

#define N_SYSCALLS 512

/* Filled once, by whichever thread first needs it. */
static struct emu_sys table[N_SYSCALLS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_fill(void)
{
    emu_sys_fs_register(table, N_SYSCALLS);
    emu_sys_mman_register(table, N_SYSCALLS);
    emu_sys_proc_register(table, N_SYSCALLS);
    emu_sys_time_register(table, N_SYSCALLS);
    emu_sys_net_register(table, N_SYSCALLS);
}

static void table_init(void)
{
    pthread_once(&table_once, table_fill);
}

static int64_t unsupported(crec_emu *e, uint64_t nr)
{
    unsigned bit = nr < N_SYSCALLS ? (unsigned)nr : N_SYSCALLS - 1;

    if (e->opt.strict) {
        crec_error_set(&e->err, CREC_ERR_UNSUPPORTED, "unsupported syscall '%s' (%llu) (--strict)",
                       emu_syscall_name(nr), (unsigned long long)nr);
        e->fatal = 1;
        crec_emu_cpu_stop(e->cpu);
        return -ENOSYS;
    }
    if (!(e->unsupported_seen[bit / 8] & (1u << (bit % 8)))) {
        e->unsupported_seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
        fprintf(e->log, "crec: unsupported syscall '%s' (%llu), returning -ENOSYS\n",
                emu_syscall_name(nr), (unsigned long long)nr);
    }
    return -ENOSYS;
}

void emu_syscall_entry(void *ctx, crec_emu_cpu *cpu)
{
    static const int arg_regs[6] = {UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX,
                                    UC_X86_REG_R10, UC_X86_REG_R8,  UC_X86_REG_R9};
    crec_emu *e = ctx;
    struct crec_emu_syscall *sc = &e->sc;
    uint64_t nr = emu_reg_get(cpu, UC_X86_REG_RAX);
    int64_t ret;

    table_init();
    memset(sc, 0, sizeof *sc);
    sc->nr = nr;
    for (int i = 0; i < 6; i++)
        sc->args[i] = emu_reg_get(cpu, arg_regs[i]);
    if (e->obs.on_syscall_enter)
        e->obs.on_syscall_enter(e->obs.ctx, sc);
    if (nr < N_SYSCALLS && table[nr].fn)
        ret = table[nr].fn(e, sc->args);
    else
        ret = unsupported(e, nr);
    sc->ret = ret;
    if (e->opt.strace)
        emu_strace(e, nr, sc->args, ret);
    if (e->done || e->fatal)
        return; /* exit: registers stay as they were at the syscall */
    emu_reg_set(cpu, UC_X86_REG_RAX, (uint64_t)ret);
    emu_reg_set(cpu, UC_X86_REG_RCX, emu_reg_get(cpu, UC_X86_REG_RIP) + 2);
    emu_reg_set(cpu, UC_X86_REG_R11, emu_reg_get(cpu, UC_X86_REG_RFLAGS));
    if (e->obs.on_syscall_exit)
        e->obs.on_syscall_exit(e->obs.ctx, sc);
}

const char *emu_syscall_fmt(uint64_t nr)
{
    table_init();
    return nr < N_SYSCALLS && table[nr].fmt ? table[nr].fmt : "xxxxxx";
}
