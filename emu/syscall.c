/*
 * syscall.c - the Linux x86-64 syscall ABI and the table of handlers.
 *
 * The ABI: number in rax, arguments in rdi rsi rdx r10 r8 r9, result in rax
 * (-4095..-1 is -errno); the `syscall` instruction sets rcx to the return
 * address and r11 to rflags.  Handlers live one file per family
 * (sys_fs.c, sys_mman.c, sys_proc.c, sys_time.c, sys_net.c, sys_thread.c,
 * sys_timer.c) and are found by number.
 * A number with no handler returns -ENOSYS with one message per number, or
 * stops the run with --strict.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

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
    emu_sys_thread_register(table, N_SYSCALLS);
    emu_sys_timer_register(table, N_SYSCALLS);
    emu_sys_signal_register(table, N_SYSCALLS);
    emu_sys_process_register(table, N_SYSCALLS);
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

/*
 * The signal Linux sends with an error of a write-like call: SIGPIPE with
 * EPIPE (a closed pipe or socket; send with MSG_NOSIGNAL sends none),
 * SIGXFSZ with EFBIG (past RLIMIT_FSIZE).  crec blocks both for itself, so
 * the host call only returns the error and the guest's disposition acts.
 * @return the signal, or 0.
 */
static int write_signal(uint64_t nr, const uint64_t a[6], int64_t ret)
{
    switch (nr) {
    case SYS_sendto: case SYS_sendmsg: case SYS_sendmmsg:
        if (a[nr == SYS_sendto ? 3 : nr == SYS_sendmsg ? 2 : 3] & MSG_NOSIGNAL)
            return 0;
        /* fall through */
    case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_pwritev: case SYS_pwritev2:
    case SYS_sendfile: case SYS_splice: case SYS_tee: case SYS_vmsplice:
    case SYS_copy_file_range: case SYS_truncate: case SYS_ftruncate: case SYS_fallocate:
        return ret == -EPIPE ? SIGPIPE : ret == -EFBIG ? SIGXFSZ : 0;
    default:
        return 0;
    }
}

/* One try of syscall sc. */
static int64_t call_once(crec_emu *e, struct crec_emu_syscall *sc)
{
    int64_t ret;

    /* a read that would wait while other threads could run blocks the thread */
    ret = emu_fd_wait(e, sc->nr, sc->args);
    if (ret != 0)
        return ret;
    if (sc->nr < N_SYSCALLS && table[sc->nr].fn)
        return table[sc->nr].fn(e, sc->args);
    return unsupported(e, sc->nr);
}

int64_t emu_syscall_call(crec_emu *e, struct crec_emu_syscall *sc)
{
    table_init();
    for (;;) {
        int64_t ret = call_once(e, sc), next, now;
        /* A host call that a signal to crec interrupted: the guest's syscall
         * ends with EINTR when the guest takes the signal (a handler, which
         * SA_RESTART may send back to the syscall), and runs again unseen
         * when it does not (ignored, or another thread's). */
        if (ret != -EINTR || (!emu_hostsig_any && !(e->opt.stop && *e->opt.stop)))
            return ret;
        emu_hostsig_import(e);
        if ((next = emu_timers_next(e)) >= 0 && (now = emu_now_ns()) >= next) {
            emu_timers_fire(e, now);
            emu_hostsig_arm(e);
        }
        if (e->done || e->fatal || (e->opt.stop && *e->opt.stop))
            return ret;
        if (emu_signal_ready(e)) {
            e->sc_eintr = 1;
            return ret;
        }
        emu_signal_kick(e);
    }
}

void emu_syscall_finish(crec_emu *e, int64_t ret, uint64_t next_rip)
{
    struct crec_emu_syscall *sc = &e->sc;

    sc->ret = ret;
    if (e->opt.strace)
        emu_strace(e, sc->nr, sc->args, ret);
    if (e->exec_req)
        return; /* execve: the image ends in it (the observer's on_exec) */
    if (e->fork_child_syscall) { /* fork's child: its own recording starts after it */
        e->fork_child_syscall = 0;
        emu_reg_set(e->cpu, UC_X86_REG_RAX, 0);
        emu_reg_set(e->cpu, UC_X86_REG_RCX, next_rip);
        emu_reg_set(e->cpu, UC_X86_REG_R11, emu_reg_get(e->cpu, UC_X86_REG_RFLAGS));
        return;
    }
    if (!e->done && !e->fatal && write_signal(sc->nr, sc->args, ret))
        emu_signal_self(e, write_signal(sc->nr, sc->args, ret),
                        ret == -EPIPE ? "it wrote to a closed pipe"
                                      : "it wrote past the file size limit");
    if (e->done || e->fatal || e->sched.cur->state == EMU_TH_EXITED)
        return; /* exit: registers stay as they were at the syscall */
    emu_reg_set(e->cpu, UC_X86_REG_RAX, (uint64_t)ret);
    if (!sc->resume_rip) { /* rt_sigreturn set every register from its frame */
        emu_reg_set(e->cpu, UC_X86_REG_RCX, next_rip);
        emu_reg_set(e->cpu, UC_X86_REG_R11, emu_reg_get(e->cpu, UC_X86_REG_RFLAGS));
    }
    if (emu_hostsig_any) /* one sent to crec meanwhile (kill to its own group) */
        emu_hostsig_import(e);
    /* a handled signal it sent, unblocked or was interrupted by; or one
     * whose default action ends the process now (after the syscall, which
     * the observer is then still told of) */
    emu_signal_deliver(e, next_rip);
    if (e->fatal)
        return;
    if (e->obs.on_syscall_exit)
        e->obs.on_syscall_exit(e->obs.ctx, sc);
    emu_signal_fatal_observe(e); /* it died at its end */
}

void emu_syscall_entry(void *ctx, crec_emu_cpu *cpu)
{
    static const int arg_regs[6] = {UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX,
                                    UC_X86_REG_R10, UC_X86_REG_R8,  UC_X86_REG_R9};
    crec_emu *e = ctx;
    struct crec_emu_syscall *sc = &e->sc;
    uint64_t nr = emu_reg_get(cpu, UC_X86_REG_RAX);
    uint64_t next_rip = emu_reg_get(cpu, UC_X86_REG_RIP) + 2;
    int64_t ret;

    memset(sc, 0, sizeof *sc);
    e->sc_eintr = e->sc_deadline_set = 0;
    sc->nr = nr;
    for (int i = 0; i < 6; i++)
        sc->args[i] = emu_reg_get(cpu, arg_regs[i]);
    if (e->obs.on_syscall_enter)
        e->obs.on_syscall_enter(e->obs.ctx, sc);
    ret = emu_syscall_call(e, sc);
    if (ret == EMU_BLOCKED) {
        /* the thread waits; the syscall completes when it runs again */
        struct emu_thread *t = e->sched.cur;
        t->sc = *sc;
        t->sc_next_rip = next_rip;
        e->sched.want_switch = 1;
        crec_emu_cpu_stop(cpu);
        return;
    }
    emu_syscall_finish(e, ret, next_rip);
}

const char *emu_syscall_fmt(uint64_t nr)
{
    table_init();
    return nr < N_SYSCALLS && table[nr].fmt ? table[nr].fmt : "xxxxxx";
}
