/*
 * emu_int.h - private to emu/: the structures behind crec_emu_cpu and
 * crec_emu, and the helpers the syscall families share.
 */
#ifndef CREC_EMU_INT_H
#define CREC_EMU_INT_H

#include <capstone/capstone.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unicorn/unicorn.h>

#include "common/common.h"
#include "emu/emu.h"
#include "emu/xinsn.h"

/* ---- the CPU (cpu.c, mem.c, blocks.c) ----------------------------------- */

/*
 * One guest mapping.  Host memory always comes from mmap(2), so any page
 * range of it can be given back with munmap, which is what lets us cut a
 * mapping into pieces.  Each entry is exactly one Unicorn region.
 */
struct emu_map {
    uint64_t start, end; /* guest, page-aligned */
    uint8_t *host;       /* host address of `start` */
    int prot;
    int lazy;            /* Unicorn regions made as it is used (mem.c) */
};

/* A mapping this big (and not executable) is given to Unicorn in chunks
 * when first touched, not whole: see mem.c. */
#define EMU_LAZY_MIN (64ull << 20)
#define EMU_CHUNK (2ull << 20)

#define EMU_MAP_HINTS 64

/* Memoised instruction count of one translated block. */
struct emu_block {
    uint64_t addr;  /* 0: empty slot */
    uint32_t size;  /* bytes, as Unicorn reported */
    uint32_t ninsns;
    uint32_t atomics; /* 0: no atomic instruction; else 1 + where its list
                         starts in crec_emu_cpu.atomic_lists */
    uint64_t sum;   /* code that is writable too: a hash of its bytes, 0 otherwise */
    /* instructions that run before control leaves it at instructions crec
     * executes itself (xinsn.c: up to the end of their run); 0: all */
    uint32_t nrun;
    /* instructions up to and including its first RDTSC/RDTSCP, where an
     * emulated one leaves it (rdtsc_hook); 0: none */
    uint32_t ntsc;
};

/* emu_count_insns' answers kept (a power of two). */
#define EMU_COUNT_MEMO 64

/* At most this many instructions crec executes itself in a row are carried
 * out in one visit (xinsn.c); blocks.c counts them the same way. */
#define EMU_XI_BATCH 64

/* An instruction crec executes itself (xinsn.c), and its code hook. */
struct emu_xsite {
    uint64_t addr; /* 0: empty slot */
    uc_hook hook;
};

/* QEMU ends a translation block after at most this many instructions. */
#define EMU_BLOCK_MAX_INSNS 512

/* Hooks a client added with crec_emu_cpu_hook_mem (removed at free). */
#define EMU_MAX_CLIENT_HOOKS 4

/* A client's code hook (crec_emu_cpu_hook_code): Unicorn's handle, the
 * client's callback and its range (xinsn.c calls it for the instructions
 * crec executes itself).  Each is allocated alone, so that Unicorn keeps a
 * pointer that the array growing does not move. */
struct emu_code_hook {
    uc_hook uc;
    crec_emu_code_fn fn;
    void *ctx;
    uint64_t begin, end; /* begin > end: every instruction */
};

struct emu_client_hook {
    uc_hook uc;
    crec_emu_mem_fn fn;
    void *ctx;
    int kinds; /* CREC_EMU_LOAD | CREC_EMU_STORE (xinsn.c reports to them too) */
};

/*
 * A page the fast memory path (cpu.c, emu_fast_access) may touch straight
 * through host memory: an entry is good while the regions are as they
 * were when it was filled (ucfix.c's generation).
 */
#define EMU_FAST_PAGES 256 /* a power of two */
struct emu_fast_page {
    uint64_t page_plus1;  /* guest page number + 1; 0: empty */
    uint64_t gen;         /* emu_regions_generation() when filled */
    uint8_t *host;        /* the page in host memory */
    uint64_t ram_page;    /* Unicorn's RAM page of it (UINT64_MAX: unknown) */
    int prot;             /* CREC_PROT_* */
};

struct crec_emu_cpu {
    uc_engine *uc;
    uc_context *uc_reset;     /* the engine's registers as new (cpu.c's pool) */
    csh cs;
    csh cs_detail;            /* with operand details, opened on first need (0: not yet) */
    struct crec_emu_cpu_hooks hooks;
    uc_hook h_block, h_syscall, h_cpuid, h_invalid, h_mem, h_intr;
    struct emu_client_hook client_hooks[EMU_MAX_CLIENT_HOOKS];
    size_t n_client_hooks;
    struct emu_code_hook **code_hooks; /* crec_emu_cpu_hook_code's, any number */
    size_t n_code_hooks, cap_code_hooks;

    struct emu_map *maps; /* sorted by start, no overlap */
    size_t n_maps, cap_maps;
    /* mem.c: by page number mod EMU_MAP_HINTS, the index of the mapping
     * found last for such a page (checked before use) */
    size_t map_hints[EMU_MAP_HINTS];
    int ever_exec;        /* some mapping was executable: flushes must scan */
    /* mem.c: the chunks of lazy mappings that are Unicorn regions (open
     * addressing, chunk start + 1; 0 empty) */
    uint64_t *chunks;
    size_t chunks_cap, n_chunks;

    struct emu_fast_page fast[EMU_FAST_PAGES];

    struct emu_block *blocks; /* open addressing, power-of-two size */
    size_t blocks_cap, blocks_used;
    /* The atomic instructions of blocks that have any (lock prefix, xchg
     * with memory): for each such block a count n, then n instruction
     * numbers within the block.  Blocks point into it (emu_block.atomics). */
    uint16_t *atomic_lists;
    size_t n_atomic_lists, cap_atomic_lists;
    const uint16_t *cur_atomics; /* the list of the block running now, or NULL */

    uint64_t icount;
    uint64_t cur_block;       /* address of the block running now */
    uint32_t cur_block_n;     /* its instruction count (already in icount) */
    uint32_t cur_block_size;
    uint32_t cur_block_run;   /* its emu_block.nrun */
    uint32_t cur_block_tsc;   /* its emu_block.ntsc */
    /* emu_count_insns' last answers: an emulated RDTSC or a run of
     * instructions crec executes itself in the middle of a block asks each
     * time it runs, and decoding the block up to it took most of the time
     * of an -O3 -march=native loop (emptied by emu_blocks_forget) */
    struct emu_count_memo {
        uint64_t addr, size, upto; /* upto 0: empty */
        long n;
    } count_memo[EMU_COUNT_MEMO];

    uint64_t *rdtsc_sites;    /* instructions with a bounded code hook */
    uc_hook *rdtsc_hooks;     /* the hook of each site */
    size_t n_rdtsc, cap_rdtsc;
    uint64_t restart_at;      /* non-zero: the run loop restarts here */

    /* An engine error met where it could not be returned (a register
     * access from a hook): crec_emu_cpu_run returns it. */
    uc_err engine_err;
    char engine_what[160];

    int stop_requested;
    int in_block_hook;        /* hooks.block is running */
    int in_syscall_hook;      /* hooks.syscall is running */
    int fault_seen;           /* `fault` holds a stop a hook prepared: an invalid
                                 memory access, or an instruction crec could not
                                 execute itself (xinsn.c) */
    struct crec_emu_stop fault;
    int intr_seen;
    uint32_t intno;

    /* mem.c: data pages mapped as MMIO (hosts whose Unicorn skips read
     * hooks on TLB hits), and the aligned re-reports to pass over */
    int data_mmio;
    unsigned echo_left, echo_size;
    uint64_t echo_next;

    /* xinsn.c: instructions crec executes itself, found by blocks.c */
    struct emu_xsite *xsites; /* open addressing by address */
    size_t xsites_cap, n_xsites;
    uc_hook xsite_hook;       /* the one code hook of every site, or 0 */
    uint64_t *xsite_range;    /* its range (ucfix), moved per translation */
    struct xi_state xs;       /* register state Unicorn can't hold */
    int xreporting;           /* xinsn.c is calling the memory hooks */
    crec_emu_xstate_fn xstate_fn; /* crec_emu_cpu_on_xstate */
    void *xstate_ctx;
    uint64_t xinsns;          /* instructions executed there */
    /* xinsn.c prepared a stop (fault_seen) after writing RIP, which makes
     * Unicorn 2.0.1 drop the stop request and go on at RIP: the next hook
     * asks again (emu_block_hook, emu_xinsn_site) */
    int xstop_pending;
    int rip_moved;            /* the syscall hook running wrote RIP (resume_at) */
    uint64_t xstop_rip;       /* a stop asked again before the block here: RIP */
    uint64_t hook_stop_rip;   /* a stop from a block hook, before the block here: RIP */

    /* crec_emu_cpu_run_until (blocks.c): query runs only */
    int until_armed;          /* stop once `until` instructions have run */
    uint64_t until;
    uc_hook h_until;          /* the one-address code hook, 0 if none */
    int until_hook_is_stale;  /* it fired: remove it (and the block's translation) */
    uint64_t until_stop_rip;  /* it fired there: stop the block that starts there */
    uint64_t until_block, until_block_size; /* the block it sits in */
};

/* One register by Unicorn's id (UC_X86_REG_*), inside emu only: an error
 * is kept for crec_emu_cpu_run to return (crec_emu_cpu_error). */
uint64_t emu_reg_get(crec_emu_cpu *cpu, int uc_reg);
/* Keep an engine error that can't be returned where it happened (a hook)
 * and stop the engine: crec_emu_cpu_run returns it.  The first one wins. */
void emu_engine_error(crec_emu_cpu *cpu, uc_err ue, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void emu_reg_set(crec_emu_cpu *cpu, int uc_reg, uint64_t value);

int emu_blocks_init(crec_emu_cpu *cpu);
/* Remove the one-address code hook of an exact stop that has fired. */
void emu_until_clear(crec_emu_cpu *cpu);
void emu_blocks_free(crec_emu_cpu *cpu);
void emu_blocks_forget(crec_emu_cpu *cpu, uint64_t addr, uint64_t len);
void emu_block_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud);
/* Instructions of [addr, addr+size) before `upto`; -1 on decode trouble. */
long emu_count_insns(crec_emu_cpu *cpu, uint64_t addr, uint64_t size, uint64_t upto);
/* Before Unicorn translates the block at pc: how many of its instructions
 * come before one its translator would abort on (see tcg_aborts), or -1
 * if none does; sites[0..1]: the first and last of its instructions that
 * are sites (xinsn.c), both 0 if none is.  emu_untranslatable_stop: that
 * one is at pc; stop with #UD there, as a CPU does. */
long emu_untranslatable(crec_emu_cpu *cpu, uint64_t pc, uint64_t sites[2]);
void emu_untranslatable_stop(crec_emu_cpu *cpu, uint64_t pc);
/* A query run's stop before the instruction at addr, which is the
 * `until`-th (crec_emu_cpu_run_until). */
void emu_until_stop(crec_emu_cpu *cpu, uint64_t addr);
/* Format "BYTES  MNEMONIC OPS" for the instruction at addr into buf. */
void emu_describe_insn(crec_emu_cpu *cpu, uint64_t addr, char *buf, size_t size);

/* xinsn.c and blocks.c: the instructions crec executes itself.
 * emu_xinsn_site: one is about to run at addr (from its code hook;
 * hooked: Unicorn called the client's code hooks on addr already);
 * emu_xinsn_hook: that code hook; emu_xinsn_fast: ucfix's dispatch of a
 * code hook call, 1 if addr was one of ours (run) on the engine running
 * on this thread; emu_xsite_has: addr is a site. */
void emu_xinsn_site(crec_emu_cpu *cpu, uint64_t addr, int hooked);
void emu_xinsn_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud);
int emu_xinsn_fast(void *uc, uint64_t addr);
int emu_xsite_has(const crec_emu_cpu *cpu, uint64_t addr);
/* While Unicorn translates a block whose sites are first..last (0: none),
 * the shared hook of the sites spans them (blocks.c). */
void emu_xsites_range(crec_emu_cpu *cpu, uint64_t first, uint64_t last);
/* Free the table of sites; del_hooks: delete their hooks from the engine. */
void emu_xsites_free(crec_emu_cpu *cpu, int del_hooks);
/* ucfix.c: 1 once some engine got the CPU features crec adds (POPCNT...). */
int emu_ucfix_features(void);
/* ucfix.c: where the code hook h, just added with range [begin, end],
 * keeps that range, so that it can be moved; NULL if the library is not
 * the one ucfix knows, or does not keep it there. */
uint64_t *emu_ucfix_hook_range(uc_hook h, void *callback, void *user_data, uint64_t begin,
                               uint64_t end);

/* ucload.c: the library, loaded on the first call (NULL if it can't be),
 * and why it could not be (NULL once loaded). */
void *emu_uc_handle(void);
const char *emu_uc_load_error(void);

/* ucfix.c: Unicorn's calls that open, close or change the regions of an
 * engine.  Call Unicorn's own never: ucfix.c keeps a cache of which region
 * holds an address, and these keep it true. */
uc_err emu_uc_open(uc_engine **uc);
void emu_uc_close(uc_engine *uc);
uc_err emu_uc_mem_map_ptr(uc_engine *uc, uint64_t addr, size_t len, uint32_t perms, void *host);
uc_err emu_uc_mmio_map(uc_engine *uc, uint64_t addr, size_t len, uc_cb_mmio_read_t rd,
                       void *rd_ctx, uc_cb_mmio_write_t wr, void *wr_ctx);
uc_err emu_uc_mem_unmap(uc_engine *uc, uint64_t addr, size_t len);

/* ucfix.c, for the fast memory path (below): the generation of every
 * engine's regions (it changes whenever one changes); bit n: a block was
 * once translated from Unicorn's RAM page n (a store there must go
 * Unicorn's way, which drops the code it overwrites; a page past the
 * bitmap is taken to hold code); Unicorn's RAM page of host memory
 * (UINT64_MAX: none). */
#define EMU_CODE_PAGES (1u << 22)
extern uint64_t emu_regions_gen;
extern uint64_t emu_code_pages[EMU_CODE_PAGES / 64];
uint64_t emu_ram_page(uc_engine *uc, void *host);

/* cpu.c: the CPU whose engine runs on this thread (NULL: none). */
extern _Thread_local crec_emu_cpu *emu_running;
/* cpu.c: fill entry e with guest page `page` (regions generation gen).
 * @return 1, or 0 when the fast path can't touch the page. */
int emu_fast_fill(crec_emu_cpu *cpu, struct emu_fast_page *e, uint64_t page, uint64_t gen);

/* TCGMemOpIdx: the MemOp above the 4 bits of the MMU index; MemOp's
 * alignment bits (MO_AMASK, 7 << 4) there are bits 8-10. */
#define EMU_OI_ALIGN (7u << 8)

/*
 * The fast memory path (cpu.c explains it): a load or store of `size`
 * bytes at addr by one of Unicorn's helpers (oi: its TCGMemOpIdx), done
 * by crec when the page is plain RAM of the engine running on this
 * thread: the client's memory hooks are told, as Unicorn would, and the
 * host address of the bytes is returned (a load reads it after the hooks;
 * the caller stores the value).  NULL: Unicorn's own helper must do it.
 */
static inline struct emu_fast_page *emu_fast_entry(crec_emu_cpu *cpu, uint64_t addr,
                                                   unsigned size, uint32_t oi)
{
    uint64_t page = addr / CREC_PAGE_SIZE, gen = __atomic_load_n(&emu_regions_gen,
                                                                 __ATOMIC_RELAXED);
    struct emu_fast_page *e;

    if (!cpu || (oi & EMU_OI_ALIGN) || addr % CREC_PAGE_SIZE + size > CREC_PAGE_SIZE)
        return NULL;
    e = &cpu->fast[page & (EMU_FAST_PAGES - 1)];
    if (e->page_plus1 == page + 1 && e->gen == gen)
        return e;
    return emu_fast_fill(cpu, e, page, gen) ? e : NULL;
}

/* Tell the client's memory hooks of a fast access, as Unicorn would. */
static inline void emu_fast_tell(crec_emu_cpu *cpu, int kind, uint64_t addr, unsigned size,
                                 uint64_t value)
{
    for (size_t h = 0; h < cpu->n_client_hooks; h++)
        if (cpu->client_hooks[h].kinds & kind)
            cpu->client_hooks[h].fn(cpu->client_hooks[h].ctx, kind, addr, size, value);
}

static inline const uint8_t *emu_fast_load(uint64_t addr, unsigned size, uint32_t oi)
{
    crec_emu_cpu *cpu = emu_running;
    struct emu_fast_page *e = emu_fast_entry(cpu, addr, size, oi);

    if (!e || !(e->prot & CREC_PROT_READ))
        return NULL;
    emu_fast_tell(cpu, CREC_EMU_LOAD, addr, size, 0);
    return e->host + addr % CREC_PAGE_SIZE;
}

static inline uint8_t *emu_fast_store(uint64_t addr, unsigned size, uint32_t oi, uint64_t value)
{
    crec_emu_cpu *cpu = emu_running;
    struct emu_fast_page *e = emu_fast_entry(cpu, addr, size, oi);

    if (!e || !(e->prot & CREC_PROT_WRITE) || e->ram_page >= EMU_CODE_PAGES ||
        (__atomic_load_n(&emu_code_pages[e->ram_page / 64], __ATOMIC_RELAXED) >>
         (e->ram_page % 64) & 1))
        return NULL;
    emu_fast_tell(cpu, CREC_EMU_STORE, addr, size, value);
    return e->host + addr % CREC_PAGE_SIZE;
}
/* mem.c: the host address and protection of guest page `page` when it is
 * a Unicorn region of RAM now (0), else -1. */
int emu_mem_fast_page(crec_emu_cpu *cpu, uint64_t page, uint8_t **host, int *prot);

void emu_mem_free_all(crec_emu_cpu *cpu);
/* Whether data pages are mapped as MMIO on this host (see mem.c). */
int emu_mem_data_mmio_default(void);
/* An access Unicorn found unmapped at addr: if it lies in a lazy mapping,
 * its chunk becomes a region and 1 is returned (the access goes on). */
int emu_mem_fault_in(crec_emu_cpu *cpu, uint64_t addr);
/* 0 if every byte of the range is mapped with at least `prot`, else -1. */
int emu_mem_check(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot);
/* How many bytes from addr on (at most len) are mapped with at least `prot`:
 * what a read or write reaches before it would fault. */
uint64_t emu_mem_span(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot);
/* Read what is mapped of [addr, addr + len) into dst, up to the first hole
 * (an instruction near the end of a mapping).  @return the bytes read. */
uint64_t emu_mem_read_mapped(crec_emu_cpu *cpu, void *dst, uint64_t addr, uint64_t len);

/* ---- the OS (process.c, loader.c, syscall.c, sys_*.c) ------------------- */

#define EMU_MAX_FDS 1024
#define EMU_STACK_TOP 0x7ffffffff000ull
#define EMU_MMAP_BOTTOM 0x10000ull
#define EMU_PIE_BASE 0x555555554000ull

struct emu_sigaction {
    uint64_t handler, flags, restorer, mask;
};

/* ---- threads and the scheduler (sched.c, sys_thread.c) ------------------- */

enum emu_th_state { EMU_TH_RUNNABLE = 0, EMU_TH_BLOCKED, EMU_TH_EXITED };

/* What a blocked thread waits for. */
enum emu_wait { EMU_WAIT_NONE = 0, EMU_WAIT_FUTEX, EMU_WAIT_FD, EMU_WAIT_SLEEP,
                EMU_WAIT_SIGNAL, EMU_WAIT_SUSPEND };

/* A queued signal, as rt_sigtimedwait reports it (sys_timer.c). */
struct emu_siginfo {
    int signo, code;          /* code: SI_USER, SI_TKILL, SI_TIMER, SI_QUEUE, CLD_* */
    uint32_t pid, uid;        /* the sender (kill, tgkill), or the child (SIGCHLD) */
    int timer, overrun;       /* SI_TIMER: the timer's id, its overruns */
    uint64_t value;           /* SI_TIMER: its sigev_value */
    int status;               /* SIGCHLD: the child's exit status or signal */
};

/* Further instances of real-time signals already pending, oldest first:
 * Linux queues each one sent (a standard signal pending twice is one). */
#define EMU_SIGRTMIN 32 /* the kernel's first real-time signal (glibc keeps 32 and 33) */
#define EMU_RTSIG_QUEUE 32
struct emu_sigqueue {
    unsigned n;
    struct emu_siginfo q[EMU_RTSIG_QUEUE];
};

/* A POSIX timer (timer_create). */
#define EMU_MAX_TIMERS 64
struct emu_timer {
    int used;
    int clock;                /* the clock it was created on */
    int notify, signo;        /* SIGEV_NONE, SIGEV_SIGNAL or SIGEV_THREAD_ID; the signal */
    uint32_t tid;             /* SIGEV_THREAD_ID: the thread */
    uint64_t value;           /* sigev_value */
    int64_t next;             /* CLOCK_MONOTONIC ns of the next expiry; -1: disarmed */
    int64_t interval;         /* ns between expiries; 0: once */
    uint64_t overrun;         /* expiries merged into the signal still pending */
    int last_overrun;         /* ... in the last one taken (timer_getoverrun) */
};

/* A handler's result that says: the calling thread blocks (sched.c). */
#define EMU_BLOCKED INT64_MIN

/*
 * One guest thread.  The running thread's registers are in the engine;
 * the others' are in `ctx`.  A thread blocked in a syscall keeps the
 * syscall, which completes when it is switched in again after a wake.
 */
struct emu_thread {
    uint32_t id;              /* crec's number: 1, 2, ... in creation order */
    uint32_t tid;             /* the guest's thread id (gettid) */
    struct emu_tid_holder *holder; /* the host thread that holds tid (sched.c) */
    uint32_t parent;          /* id of the thread that created it (0: none) */
    int state;                /* enum emu_th_state */
    uc_context *ctx;          /* registers while another thread runs */
    crec_emu_xstate *xs;      /* ... and the vector state crec holds itself */
    uint64_t icount;          /* instructions it ran before its current slice */
    uint64_t sigmask;
    uint64_t clear_child_tid; /* zeroed and woken at exit (CLONE_CHILD_CLEARTID) */
    uint64_t robust_list;     /* set_robust_list */

    /* blocked in a syscall */
    struct crec_emu_syscall sc;
    uint64_t sc_next_rip;     /* the instruction after the syscall */
    int wait;                 /* enum emu_wait */
    uint64_t futex_addr;      /* EMU_WAIT_FUTEX: the word it waits on */
    uint32_t futex_bitset;
    int futex_pi;             /* a LOCK_PI waiter: owns the lock when woken */
    uint64_t requeue_pi;      /* WAIT_REQUEUE_PI: the PI futex it may be moved to */
    uint64_t futex_seq;       /* when it began to wait: wakes go first come first */
    int futex_shared;         /* ... on memory shared with other processes, holding: */
    uint32_t futex_val;       /* ... this value, which another process may change */
    int64_t deadline;         /* CLOCK_MONOTONIC ns when the wait times out; -1: never */
    int64_t timeout_ret;      /* what the syscall returns then */
    struct pollfd *wait_fds;  /* EMU_WAIT_FD: the host fds and poll events */
    unsigned nwait_fds, capwait_fds;
    int wait_poll;            /* ... of a poll, select or epoll_wait: a timeout
                                 clears what it reports */
    int woken;                /* the wait is over: complete the syscall */
    int retry;                /* ... by running its handler again (fd waits) */
    int64_t wake_ret;         /* ... else with this result */
    uint64_t sigwait_set;     /* EMU_WAIT_SIGNAL: the signals it waits for */
    uint64_t sig_pending;     /* signals sent to this thread, not yet taken */
    struct emu_siginfo sig_info[65];
    struct emu_sigqueue sig_more;
    uint64_t ss_sp, ss_size;  /* its alternate signal stack (sigaltstack) */
    uint32_t ss_flags;        /* SS_DISABLE or 0 */
    int interrupted;          /* its blocked syscall was ended by a signal (EINTR) */
    int suspended;            /* in rt_sigsuspend or pause: its mask before is */
    uint64_t suspend_mask;    /* ... this, which a handler's frame restores */
    uint64_t starved_until;   /* --chaos: not chosen before this global count */
};

struct emu_sched {
    struct emu_thread **th;   /* threads not yet reaped, in creation order */
    size_t n, cap;
    struct emu_thread *cur;
    uint32_t last_id;
    unsigned nlive;           /* threads that have not exited */
    uint64_t slice;           /* instructions of a time slice */
    uint64_t slice_end;       /* global count where the running slice ends */
    uint64_t cur_since;       /* global count when `cur` was switched in */
    int want_switch;          /* the CPU stopped for the scheduler */
    int have_resume_rip;      /* ... before the block at resume_rip (RIP is stale) */
    uint64_t resume_rip;
    int exact_armed;          /* --chaos: a stop inside a block is set */
    uint64_t wait_counter;    /* futex waits begun so far */
    unsigned cpus;            /* CPUs shown to the guest */
    int chaos;
    uint64_t rng;             /* --chaos: the state of the random generator */
    uc_context *scratch;
};

/* sched.c */
int emu_sched_init(crec_emu *e, crec_error *err);
void emu_sched_free(crec_emu *e);
/* From the block hook: the scheduler's view of a block start.  @return 1
 * if the CPU stops before the block (the observer must not see it). */
int emu_sched_block(crec_emu *e, uint64_t addr, uint32_t ninsns, uint64_t icount);
/* The CPU stopped at the scheduler's request: switch, wait, complete. */
void emu_sched_stopped(crec_emu *e);
/* Block the current thread in its syscall until woken or `deadline`
 * (CLOCK_MONOTONIC ns, -1: never), then return `timeout_ret`.
 * @return EMU_BLOCKED, the handler's result. */
int64_t emu_block(crec_emu *e, int wait, int64_t deadline, int64_t timeout_ret);
/* Wake a blocked thread: its syscall returns ret. */
void emu_wake(crec_emu *e, struct emu_thread *t, int64_t ret);
/* The calling thread gives up the rest of its slice after the syscall. */
void emu_yield(crec_emu *e);
struct emu_thread *emu_thread_by_tid(crec_emu *e, uint32_t tid);
/* A new thread, runnable, with the registers of `ctx_from` (the engine's
 * now): the caller then sets its own. */
struct emu_thread *emu_thread_new(crec_emu *e, crec_error *err);
/* The other threads are gone (fork's child, execve): the current one is
 * the process's only thread. */
void emu_sched_only_current(crec_emu *e);
/* Thread t's id is no longer held (it exits, or becomes a fork's child's
 * pid): its host thread ends, or in a forked child is let go. */
void emu_thread_drop_id(struct emu_thread *t);
/* A new process image (fork's child, execve): its only thread is number 1
 * and every instruction count starts at 0. */
void emu_sched_restart(crec_emu *e);
/* The current thread ends (SYS_exit, or the process ends). */
void emu_thread_exit(crec_emu *e, int status);
/* A syscall that may wait on a guest fd: block the thread (EMU_BLOCKED) when
 * other threads could run meanwhile and the fd has nothing; 0 to go on. */
int64_t emu_fd_wait(crec_emu *e, uint64_t nr, const uint64_t a[6]);
/* wait.c: now on CLOCK_MONOTONIC, in ns; a CLOCK_REALTIME or
 * CLOCK_MONOTONIC time, or a time from now, as a CLOCK_MONOTONIC deadline
 * for emu_block (-1: never). */
int64_t emu_now_ns(void);
int64_t emu_deadline_abs(int clock_realtime, const struct timespec *ts);
int64_t emu_deadline_rel(const struct timespec *ts);
/* Run the handler of syscall sc and return its result (syscall.c). */
int64_t emu_syscall_call(crec_emu *e, struct crec_emu_syscall *sc);
/* Finish a syscall: result registers, strace, the observer (syscall.c). */
void emu_syscall_finish(crec_emu *e, int64_t ret, uint64_t next_rip);
/* sys_thread.c: wake up to n waiters of futex addr whose bitset meets bitset. */
int emu_futex_wake(crec_emu *e, uint64_t addr, int n, uint32_t bitset);
/* sys_thread.c: wake the waiters of a futex shared with other processes
 * whose word changed.  @return how many there are still (the scheduler then
 * waits at most EMU_SHARED_POLL_NS on the host). */
void emu_futex_shared_poll(crec_emu *e);
#define EMU_SHARED_POLL_NS 10000000ll
/* sys_timer.c: queue signal si->signo to thread t (NULL: the process), for
 * rt_sigtimedwait; a waiting thread is woken.  @return 1 queued (or merged
 * with the same signal pending), 0 if nobody blocks or waits for it (the
 * caller applies it: emu_signal_self). */
int emu_signal_queue(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si);
/* sys_timer.c: make si pending for thread t (NULL: the process): merged
 * with a standard signal already pending, queued behind a real-time one
 * (dropped past EMU_RTSIG_QUEUE, as Linux drops a kill past
 * RLIMIT_SIGPENDING); and forget every pending instance of sig. */
void emu_signal_pend(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si);
void emu_signal_unpend(crec_emu *e, struct emu_thread *t, int sig);
/* sys_timer.c: the guest's siginfo bytes (128); the lowest pending signal
 * of `set` for the running thread (0: none), dequeued into *si. */
#define EMU_SIGINFO_SIZE 128
void emu_siginfo_bytes(const struct emu_siginfo *si, uint8_t out[EMU_SIGINFO_SIZE]);
/* sys_timer.c: a siginfo the guest wrote (rt_sigqueueinfo) as signal signo's */
void emu_siginfo_parse(const uint8_t in[EMU_SIGINFO_SIZE], int signo, struct emu_siginfo *si);
int emu_signal_take(crec_emu *e, uint64_t set, struct emu_siginfo *si);
/* sys_signal.c: a signal nobody waits for or blocks takes its action:
 * ignored, the default (ending the process: `why` ends the message), or
 * for a handler pending on thread t (NULL: the process), delivered at the
 * end of the syscall in progress or when a thread unblocks it.
 * @return 0 or -EINVAL. */
int64_t emu_signal_send(crec_emu *e, struct emu_thread *t, const struct emu_siginfo *si,
                        const char *why);
/* sys_signal.c: a fault (or trap) the guest has a handler for: enter it
 * and @return 1; 0 if the fault ends the process. */
int emu_signal_fault(crec_emu *e, const struct crec_emu_stop *s);
/* sys_signal.c: a SIGSEGV/SIGBUS handler was installed: make faults
 * report their exact instruction (not under a recording, which has it). */
void emu_signal_precise(crec_emu *e);
/* sys_signal.c: from the block hook (crec run, one thread): a timer is
 * due and its signal has a handler: stop before the block at addr and
 * @return 1; emu_signal_async_now delivers it when the CPU has stopped. */
int emu_signal_async(crec_emu *e, uint64_t addr);
void emu_signal_async_now(crec_emu *e);
/* sys_signal.c: the CPU stopped for emu_signal_precise: do it now. */
void emu_signal_precise_now(crec_emu *e);
/* The bit of signal `sig` (1 to 64) in a mask or pending set, as Linux's sigset. */
static inline uint64_t emu_sigbit(int sig)
{
    return 1ull << (sig - 1);
}
/* sys_signal.c: is a signal pending for the running thread that its mask
 * lets through (it is taken at the next block start or syscall end)? */
static inline int emu_signal_ready(const crec_emu *e);
/* sys_signal.c: blocked threads that a pending signal is for (and that the
 * running one can't take) are woken, their syscall ending with EINTR. */
void emu_signal_kick(crec_emu *e);
/* sys_signal.c: the process has just died of a signal's default action
 * at an instruction boundary (a block start, a syscall's end): tell the
 * observer (on_signal, fatal). */
void emu_signal_fatal_observe(crec_emu *e);
/* sys_signal.c: the signal mask of pselect6, ppoll, epoll_pwait (the guest
 * address of a sigset of `size` bytes, 0: none): in force while the call
 * waits, the mask before coming back at its end (or in the frame of a
 * handler it lets in).  @return 0, -EINTR when a signal it lets through is
 * pending already, or -errno. */
int64_t emu_signal_wait_mask(crec_emu *e, uint64_t addr, uint64_t size);
/* sys_signal.c: the signal taken at the end of a syscall that a signal
 * interrupted (EINTR): SA_RESTART makes it run again after the handler. */
int emu_signal_restartable(uint64_t nr);

/* hostsig.c: signals the host sends crec, made the guest's (see there). */
extern volatile sig_atomic_t emu_hostsig_any; /* one was noted: import it */
void emu_hostsig_start(crec_emu *e);
void emu_hostsig_stop(crec_emu *e);
void emu_hostsig_sync(crec_emu *e, int sig);  /* the guest changed sig's action */
void emu_hostsig_import(crec_emu *e);
void emu_hostsig_arm(crec_emu *e);            /* the guest's timers changed */
void emu_hostsig_prefork(crec_emu *e);
void emu_hostsig_child(crec_emu *e);
void emu_hostsig_parent(crec_emu *e, int pid);
void emu_hostsig_exec(crec_emu *e);
/* kill(pid, sig) to another process (a SIGKILL to a crec of the recording
 * is asked for, so that it completes its file).  @return 0 or -errno. */
int emu_hostsig_kill(crec_emu *e, int pid, int sig);
/* sys_process.c: fork (fork, vfork, clone without CLONE_THREAD): the
 * clone flags and arguments; @return the child's pid, 0 in the child, or
 * -errno. */
int64_t emu_fork(crec_emu *e, uint64_t flags, uint64_t stack, uint64_t ptid, uint64_t ctid,
                 uint64_t tls);

/* sys_process.c: the CPU stopped after execve: replace the image. */
void emu_exec_now(crec_emu *e);
void emu_exec_free(crec_emu *e);
/* sys_signal.c: at the end of a syscall (its result already in RAX, RIP
 * to resume at next_rip): enter the handler of a deliverable signal. */
void emu_signal_deliver(crec_emu *e, uint64_t next_rip);
/* sys_timer.c: fire the timers due at `now`; @return threads made runnable. */
int emu_timers_fire(crec_emu *e, int64_t now);
/* sys_timer.c: the nearest expiry that sends a signal (-1: none). */
int64_t emu_timers_next(const crec_emu *e);
/* sys_proc.c: what is not there yet: one line (or a stop, --strict), and ret. */
int64_t emu_not_yet(crec_emu *e, const char *what, int64_t ret);

/* The file a guest mapping came from, for /proc/self/maps (procfs.c). */
struct emu_named {
    uint64_t start, end, off;
    uint64_t dev, ino;
    char *path;
    int shared;
};

struct crec_emu {
    crec_emu_cpu *cpu;
    struct crec_emu_options opt;
    FILE *log;
    struct crec_emu_observer obs;

    int fds[EMU_MAX_FDS];     /* guest fd -> host fd, -1 free */
    uint64_t brk_start, brk_cur, brk_reserved; /* brk_reserved: end of host reservation */
    /* the stack's size (RLIMIT_STACK), and the top of the mmap area below
     * it, as Linux lays them out with no ASLR (process.c) */
    uint64_t stack_size, mmap_top;
    uint8_t *brk_host;        /* host reservation for the heap */
    char exe[4096];           /* the program's path, for /proc/self/exe */
    struct emu_sigaction sigs[65];
    uint64_t sigmask;         /* the running thread's */
    uint64_t sig_pending;     /* signals sent to the process, not yet taken */
    struct emu_siginfo sig_info[65];
    struct emu_sigqueue sig_more;
    struct emu_timer timers[EMU_MAX_TIMERS];
    uint32_t umask_v;
    uint64_t fs_base_dummy;
    struct emu_sched sched;

    /* procfs.c: what /proc/self shows besides the memory map */
    uint64_t arg_start, arg_end, env_start, env_end, start_stack;
    uint8_t auxv[64 * 16];
    size_t auxv_len;
    char comm[16];             /* the name (prctl PR_SET_NAME) */
    struct emu_named *named;   /* names of file mappings, sorted by start */
    size_t n_named, cap_named;
    uint8_t synth[EMU_MAX_FDS];     /* the fd is a /proc/self/fd listing */
    uint64_t synth_pos[EMU_MAX_FDS];

    /* the syscall in progress */
    struct crec_emu_syscall sc;
    unsigned char unsupported_seen[512 / 8];

    int sc_eintr;             /* the syscall in progress was ended by a signal (EINTR) */
    int sc_deadline_set;      /* ... has its timeout's end in sc_deadline */
    uint64_t sc_deadline;
    int forked;               /* a child crec made by fork (sys_process.c) */
    int fork_child_syscall;   /* the fork returning 0 in the child: not observed (the
                                 child's recording starts after it) */
    unsigned async_tick;      /* blocks since timers were last looked at */
    uint64_t async_rip;       /* a signal waits for the CPU to stop before this block */
    int itimer_slot;          /* 1 + the timer slot of ITIMER_REAL (alarm); 0: none */
    struct emu_exec *exec_req; /* an execve waiting for the CPU to stop */
    uint8_t cloexec[EMU_MAX_FDS]; /* the guest fd is closed at execve */
    int precise;              /* faults report their exact instruction (1), or
                                 the CPU stops to make them so (2) */
    int done;                 /* the guest exited or was killed */
    int stopped;              /* crec_emu_stop was called: the guest lives on */
    struct crec_emu_exit exit;
    int fatal;                /* crec must stop: err holds why */
    crec_error err;
};

/* The running thread's count when the CPU's count is `icount` (the CPU's
 * own before any thread is made). */
static inline uint64_t emu_running_icount(const crec_emu *e, uint64_t icount)
{
    return e->sched.cur ? e->sched.cur->icount + icount - e->sched.cur_since : icount;
}

static inline int emu_signal_ready(const crec_emu *e)
{
    return ((e->sched.cur->sig_pending | e->sig_pending) & ~e->sigmask) != 0;
}

/* wait.c: every timed wait of the guest, on the monotonic clock (ns). */
#define EMU_FOREVER UINT64_MAX
/* now + rel (a past or zero rel: now; too far: EMU_FOREVER) */
uint64_t emu_deadline_after(const struct timespec *rel);
/* The same for the timeout of the syscall in progress: computed once, so
 * that one run again after a signal to crec the guest did not take
 * (syscall.c) ends when it would have. */
uint64_t emu_sc_deadline_after(crec_emu *e, const struct timespec *rel);
void emu_deadline_left(uint64_t deadline, struct timespec *left);
/* Block until one of the host descriptors fds[0..n) is ready (revents
 * set) or the deadline passes (EMU_FOREVER: never; a past one: just
 * look).  The one place where a guest thread waits.  @return how many are
 * ready, 0 at the deadline, -EINTR when a signal to crec ended it, or
 * -errno. */
struct pollfd;
int emu_block_until(crec_emu *e, uint64_t deadline, struct pollfd *fds, unsigned n);

/* A syscall handler: args in a[0..5]; returns the result or -errno. */
typedef int64_t (*emu_sys_fn)(crec_emu *e, const uint64_t a[6]);

struct emu_sys {
    emu_sys_fn fn;
    /* Argument kinds for --strace, one char per argument:
     * d signed, u unsigned, x hex, s path string, b buffer in (a[i], a[i+1]),
     * B buffer out (a[i], ret), o octal, f fd, p pointer.  "" = none. */
    const char *fmt;
};

const char *emu_syscall_name(uint64_t nr);
const char *emu_syscall_fmt(uint64_t nr);
void emu_syscall_entry(void *ctx, crec_emu_cpu *cpu);
void emu_strace(crec_emu *e, uint64_t nr, const uint64_t a[6], int64_t ret);

/* Family tables: each fills its handlers into the table by number. */
void emu_sys_fs_register(struct emu_sys *t, size_t n);
void emu_sys_mman_register(struct emu_sys *t, size_t n);
void emu_sys_proc_register(struct emu_sys *t, size_t n);
void emu_sys_time_register(struct emu_sys *t, size_t n);
void emu_sys_net_register(struct emu_sys *t, size_t n);
void emu_sys_thread_register(struct emu_sys *t, size_t n);
void emu_sys_timer_register(struct emu_sys *t, size_t n);
void emu_sys_signal_register(struct emu_sys *t, size_t n);
void emu_sys_process_register(struct emu_sys *t, size_t n);

/* Guest memory from a handler: return 0 or -EFAULT. Writes are recorded in
 * the syscall's out list for the observer. */
int emu_copy_in(crec_emu *e, void *dst, uint64_t addr, uint64_t len);
int emu_copy_out(crec_emu *e, uint64_t addr, const void *src, uint64_t len);
/* A NUL-terminated string from the guest: length, -EFAULT or -ENAMETOOLONG. */
long emu_string_in(crec_emu *e, uint64_t addr, char *buf, size_t size);
void emu_note_written(crec_emu *e, uint64_t addr, uint64_t len);
/* Host pointer for a guest buffer the handler will write / read in place. */
void *emu_buf(crec_emu *e, uint64_t addr, uint64_t len, int prot);

/* fd table */
int emu_fd_host(crec_emu *e, uint64_t gfd);  /* -1 if not open */
int emu_fd_install(crec_emu *e, int hostfd, int lowest); /* guest fd or -EMFILE */

void emu_mem_event(crec_emu *e, enum crec_emu_mem_kind kind, uint64_t addr, uint64_t len,
                   int prot, int fd, uint64_t off);
/* The same for a mapping of the file `path` (the ELF loader's segments). */
void emu_mem_event_path(crec_emu *e, enum crec_emu_mem_kind kind, uint64_t addr, uint64_t len,
                        int prot, const char *path, uint64_t off);
/* A signal the guest sends itself (or the kernel sends it, as SIGPIPE
 * after a write to a closed pipe): its disposition's action; `why` ends
 * the message if it kills the guest.  @return 0 or -EINVAL. */
int64_t emu_signal_self(crec_emu *e, int sig, const char *why);
/* End the guest: exit status or fatal signal. */
void emu_exit(crec_emu *e, int status, int signo, const char *msg);

/* process.c: what execve(2) checks before it gives up the old image:
 * 0 for an executable x86-64 ELF file or #! script, else -errno. */
int emu_exec_check(const char *path);
int emu_load_elf(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                 crec_error *err);

/* procfs.c: /proc/self and the CPU's /proc and /sys files.
 * emu_procfs_open: 1 (or 2 for the /proc/self/fd directory) with *hostfd
 * set when path is one of them, 0 when it is not, or -errno.
 * emu_procfs_readlink: the link's length (out gets it, cut at size), -1 if
 * path is not one of them, or -errno.  emu_named_*: file names of the
 * guest's mappings. */
int emu_procfs_open(crec_emu *e, const char *path, int flags, int *hostfd);
int emu_procfs_readlink(crec_emu *e, const char *path, char *out, size_t size);
int emu_synthdir_fd(crec_emu *e);
int64_t emu_synthdir_getdents(crec_emu *e, int gfd, uint64_t addr, uint64_t size);
void emu_named_map(crec_emu *e, uint64_t addr, uint64_t len, int hostfd, const char *path,
                   uint64_t off, int shared);
void emu_named_unmap(crec_emu *e, uint64_t addr, uint64_t len);
/* procfs.c: does addr lie in a MAP_SHARED mapping (shared with other
 * processes: a file's, or anonymous memory a fork shares)? */
int emu_named_shared(const crec_emu *e, uint64_t addr);
void emu_named_free(crec_emu *e);

/* The CPUs the guest is shown (--cpus): /proc/cpuinfo, /sys,
 * sched_getaffinity. */
static inline int emu_ncpus(const crec_emu *e)
{
    return e->sched.cpus > 0 ? (int)e->sched.cpus : 1;
}

#define EMU_PAGE_DOWN(x) ((x) & ~(CREC_PAGE_SIZE - 1))
#define EMU_PAGE_UP(x) (((x) + CREC_PAGE_SIZE - 1) & ~(CREC_PAGE_SIZE - 1))

#endif /* CREC_EMU_INT_H */
