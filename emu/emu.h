/*
 * emu.h - the emulator module: runs a Linux x86-64 program under Unicorn.
 *
 * Two layers, so that the replayer can take the first without the second:
 *
 *   the CPU  (crec_emu_cpu_*, crec_emu_mem_*, crec_emu_regs_*): a Unicorn
 *            engine in x86-64 mode, guest memory that we own and map with
 *            uc_mem_map_ptr, the full register state, exact instruction
 *            counting, CPUID answered by a callback and RDTSC trapped into a
 *            callback, the instructions crec executes itself (AVX and up,
 *            RDRAND), and which bytes a syscall sends out.  Files: cpu.c,
 *            mem.c, blocks.c, cpuid.c, sysout.c, ucfix.c, xdecode.c,
 *            xinsn.c, xfloat.c.  They never reference the syscall or ELF
 *            code.
 *
 *   the OS   (crec_emu_*): a process on top of a CPU - the ELF loader, the
 *            initial stack, the Linux syscall layer and the observer that
 *            the recorder fills.  Files: loader.c, process.c, syscall.c,
 *            sys_*.c (one per syscall family), wait.c (timed waits),
 *            procfs.c (/proc/self), strace.c, sysnames.c.
 *            docs/EMU.md describes what is emulated.
 *
 * Time is the instruction count: a `rep`-prefixed instruction counts once
 * per iteration (docs/EMU.md explains how that falls out of Unicorn).
 */
#ifndef CREC_EMU_H
#define CREC_EMU_H

#include <stdint.h>
#include <stdio.h>

#include "crec.h"

/* ------------------------------------------------------------------------ */
/* The CPU                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct crec_emu_cpu crec_emu_cpu;

/* Protection bits of a guest mapping (the same values as PROT_* on Linux). */
#define CREC_PROT_READ 1
#define CREC_PROT_WRITE 2
#define CREC_PROT_EXEC 4

/*
 * Callbacks from the CPU to whoever drives it (the OS layer when running,
 * the replayer when replaying).  All optional except `syscall`, which must
 * be there for any program that makes one.
 */
struct crec_emu_cpu_hooks {
    void *ctx;
    /* A `syscall` instruction; RIP is the instruction's own address and is
     * advanced past it after the callback returns. */
    void (*syscall)(void *ctx, crec_emu_cpu *cpu);
    /* Fill out[0..3] = eax, ebx, ecx, edx for CPUID leaf/subleaf.  Absent:
     * crec_emu_cpuid_default. */
    void (*cpuid)(void *ctx, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);
    /* The value RDTSC/RDTSCP returns.  Absent: crec_emu_rdtsc_default. */
    uint64_t (*rdtsc)(void *ctx, crec_emu_cpu *cpu);
    /* A block starts; `icount` already includes its `ninsns`. */
    void (*block)(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount);
    /* The value RDRAND (seed 0) or RDSEED (seed 1) returns, with CF=1.
     * Absent: 0. */
    uint64_t (*rdrand)(void *ctx, crec_emu_cpu *cpu, int seed);
};

/* Why crec_emu_cpu_run returned. */
enum crec_emu_stop_why {
    CREC_STOP_REQUESTED = 0, /* a callback called crec_emu_cpu_stop */
    CREC_STOP_FAULT = 1,     /* unmapped or protected memory access */
    CREC_STOP_ILLEGAL = 2,   /* invalid or unsupported instruction */
    CREC_STOP_TRAP = 3,      /* another CPU exception (int3, #DE, #GP, hlt) */
};

struct crec_emu_stop {
    enum crec_emu_stop_why why;
    int signo;          /* the signal Linux would deliver (0 for REQUESTED) */
    uint64_t rip;       /* address of the instruction that stopped */
    uint64_t addr;      /* FAULT: the data address */
    int access;         /* FAULT: 'r', 'w' or 'x' */
    int unmapped;       /* FAULT: 1 unmapped, 0 protection */
    char what[160];     /* ILLEGAL/TRAP: bytes and disassembly, one line */
};

/*! crec_emu_cpu_create() :
 *  A fresh x86-64 CPU with no memory and all registers zero.  `hooks` is
 *  copied.  @return CREC_OK or CREC_ERR_EMU / CREC_ERR_NOMEM. */
int crec_emu_cpu_create(crec_emu_cpu **out, const struct crec_emu_cpu_hooks *hooks,
                        crec_error *err);

/*! crec_emu_cpu_free() : free the CPU and all guest memory.  NULL is fine. */
void crec_emu_cpu_free(crec_emu_cpu *cpu);

/*! crec_emu_cpu_run() :
 *  Run from the current RIP until a callback calls crec_emu_cpu_stop or the
 *  guest stops on a fault, an illegal instruction or a trap (described in
 *  *stop; the instruction count then covers only the instructions that
 *  completed).  An error of Unicorn itself (not of the guest: out of
 *  memory, a refused register, a failed hook) is never reported as a guest
 *  fault.  @return CREC_OK, or CREC_ERR_EMU with Unicorn's message. */
int crec_emu_cpu_run(crec_emu_cpu *cpu, struct crec_emu_stop *stop, crec_error *err);

/*! crec_emu_cpu_stop() : from a callback, end crec_emu_cpu_run after the
 *  current instruction. */
void crec_emu_cpu_stop(crec_emu_cpu *cpu);

/*! crec_emu_cpu_icount() : @return instructions executed so far. */
uint64_t crec_emu_cpu_icount(const crec_emu_cpu *cpu);

/*! crec_emu_cpu_set_icount() : set the instruction count (a replay that
 *  starts at a key frame). */
void crec_emu_cpu_set_icount(crec_emu_cpu *cpu, uint64_t icount);

/*! crec_emu_cpu_run_until() :
 *  Query runs only (it adds a code hook, so blocks may be cut differently
 *  from a recording run; never use it where key frames are checked at
 *  block starts).  Like crec_emu_cpu_run, but also return once exactly `t`
 *  instructions have executed, before instruction t+1 runs, even when t
 *  falls inside a block: RIP is then that instruction's address and the
 *  count is exactly t.  A callback may still stop the run sooner; *reached
 *  says whether t was reached.  `t` must not be below the current count.
 *  @return CREC_OK or CREC_ERR_EMU. */
int crec_emu_cpu_run_until(crec_emu_cpu *cpu, uint64_t t, int *reached,
                           struct crec_emu_stop *stop, crec_error *err);

/*! crec_emu_cpu_stop_inside() :
 *  From a block hook, for the block now starting (its instructions already
 *  counted): stop before instruction t+1 when it lies strictly inside the
 *  block.  A code hook is added at that one instruction, the block's
 *  translation dropped and the block entered again (the block hook then
 *  runs again for it); crec_emu_cpu_run returns with the count exactly t
 *  and RIP at that instruction, and the hook is removed.  Record and
 *  replay cut a block this way at the same count (--chaos switches).
 *  @return 0, or -1 if t is not inside the block. */
int crec_emu_cpu_stop_inside(crec_emu_cpu *cpu, uint64_t t);

/*! crec_emu_cpu_block_atomics() :
 *  From a block hook: the atomic instructions of the block now starting
 *  (lock-prefixed, or xchg with memory), as instruction numbers within the
 *  block from 0, in order, in *index (valid until the next block).
 *  @return how many (0 for most blocks). */
unsigned crec_emu_cpu_block_atomics(const crec_emu_cpu *cpu, const uint16_t **index);

/*! crec_emu_cpu_access_rip() :
 *  From a memory hook: the address of the instruction that makes the access
 *  to addr, given RIP as the hook reads it.  Inside an atomic instruction
 *  (lock prefix, xchg) Unicorn 2.0.1 does not bring RIP up to date, so a
 *  hook reads the address of an earlier instruction of the block; the
 *  instruction is then the first atomic one after it whose memory operand
 *  covers addr.  @return that address (rip itself in every other case). */
uint64_t crec_emu_cpu_access_rip(crec_emu_cpu *cpu, uint64_t rip, uint64_t addr);

/*! crec_emu_cpu_icount_at() : from a memory or code hook: the number of
 *  instructions executed before the instruction at `rip` of the block now
 *  running (the block is counted whole on entry; this takes back the part
 *  that has not run yet). */
uint64_t crec_emu_cpu_icount_at(crec_emu_cpu *cpu, uint64_t rip);

/*! crec_emu_cpu_block_insns() : from the block hook: how many instructions
 *  of the block now starting run before control leaves it (an emulated
 *  RDTSC leaves its block, so a block holding one runs only up to it; so
 *  does a run of instructions crec executes itself, after the run). */
uint32_t crec_emu_cpu_block_insns(crec_emu_cpu *cpu);

/*! crec_emu_cpu_describe() : "BYTES (MNEMONIC OPERANDS)" of the instruction
 *  at addr, one line, into buf. */
void crec_emu_cpu_describe(crec_emu_cpu *cpu, uint64_t addr, char *buf, size_t size);

/* What a memory hook is told: a load (before it happens, the bytes still
 * in guest memory) or a store (before it happens, with its value). */
#define CREC_EMU_LOAD 1
#define CREC_EMU_STORE 2

/*
 * A memory hook: `kind` is CREC_EMU_LOAD or CREC_EMU_STORE, `size` 1..16
 * bytes at `addr`; `value` is a store's value (the low `size` bytes, up to
 * 8), 0 for a load.  Called on the thread that runs the CPU.
 */
typedef void (*crec_emu_mem_fn)(void *ctx, int kind, uint64_t addr, unsigned size,
                                uint64_t value);

/*! crec_emu_cpu_hook_mem() :
 *  Call `fn` with `ctx` for every access of the kinds in `kinds`
 *  (CREC_EMU_LOAD | CREC_EMU_STORE) at any address.  At most 4 per CPU;
 *  crec_emu_cpu_free removes them (engines are reused after it, so emu is
 *  the only one that adds hooks to them).  Add hooks before running, or
 *  call crec_emu_cpu_flush_code afterwards: Unicorn applies a hook only to
 *  code translated after it was added.
 *  @return CREC_OK, CREC_ERR_ARG, CREC_ERR_LIMIT or CREC_ERR_EMU. */
int crec_emu_cpu_hook_mem(crec_emu_cpu *cpu, int kinds, crec_emu_mem_fn fn, void *ctx,
                          crec_error *err);

/*! crec_emu_cpu_unhook_mem() :
 *  Remove the hook crec_emu_cpu_hook_mem added with fn and ctx.  As when
 *  adding one, code translated before still calls it: flush it
 *  (crec_emu_cpu_flush_code), from a block hook then stop and enter the
 *  block again (crec_emu_cpu_stop).
 *  @return CREC_OK, or CREC_ERR_NOTFOUND when there is no such hook. */
int crec_emu_cpu_unhook_mem(crec_emu_cpu *cpu, crec_emu_mem_fn fn, void *ctx);

/*! crec_emu_cpu_block_bytes() : from a block hook: @return the bytes of
 *  the block about to run (its instructions from the hook's address). */
uint64_t crec_emu_cpu_block_bytes(const crec_emu_cpu *cpu);

/*
 * Instructions crec executes itself, because Unicorn 2.0.1 can't (AVX,
 * AVX2, FMA, F16C and AVX-512 encodings, RDRAND/RDSEED; docs/EMU.md).
 * Their loads and stores go to the hooks of crec_emu_cpu_hook_mem, as
 * Unicorn's own do (a wide access in 8-byte pieces, in address order; a
 * load before memory is read, so a replayer can still put the recorded
 * bytes there).  The register state they use that crec_regs (and so a key
 * frame) does not hold comes through this callback.
 */

/* The first read since crec_emu_cpu_xstate_forget of a piece of the
 * register state crec_regs does not hold (bits 128 and up of zmm0-15,
 * zmm16-31, k0-7): `len` (at most 16) bytes, which a recorder logs as they
 * are and a replayer overwrites with the recorded ones. */
typedef void (*crec_emu_xstate_fn)(void *ctx, uint8_t *bytes, unsigned len);

/*! crec_emu_cpu_on_xstate() : install that callback (NULL: none). */
void crec_emu_cpu_on_xstate(crec_emu_cpu *cpu, crec_emu_xstate_fn fn, void *ctx);

/*! crec_emu_cpu_xstate_forget() : at a key frame: every piece of the state
 *  crec_regs does not hold is unknown again (its next read goes through
 *  crec_emu_cpu_on_xstate). */
void crec_emu_cpu_xstate_forget(crec_emu_cpu *cpu);

/*! crec_emu_cpu_xstate_touched() : @return 1 if that state was read or
 *  written since crec_emu_cpu_xstate_forget (a restart point taken now
 *  would not hold it). */
int crec_emu_cpu_xstate_touched(const crec_emu_cpu *cpu);

/* That state of one thread (opaque): the CPU holds the running thread's,
 * so a switch saves the one and loads the other, as for Unicorn's
 * registers.  A new one is zero, with nothing known. */
typedef struct crec_emu_xstate crec_emu_xstate;
crec_emu_xstate *crec_emu_xstate_new(void);
void crec_emu_xstate_free(crec_emu_xstate *x);
/*! crec_emu_cpu_xstate_save() / _load() : copy the CPU's to x, x's to the CPU. */
void crec_emu_cpu_xstate_save(const crec_emu_cpu *cpu, crec_emu_xstate *x);
void crec_emu_cpu_xstate_load(crec_emu_cpu *cpu, const crec_emu_xstate *x);

/*! crec_emu_cpu_xinsns() : @return instructions crec executed itself. */
uint64_t crec_emu_cpu_xinsns(const crec_emu_cpu *cpu);

/* A code hook: the instruction of `size` bytes at `addr` is about to run. */
typedef void (*crec_emu_code_fn)(void *ctx, uint64_t addr, unsigned size);

/*! crec_emu_cpu_hook_code() :
 *  Call `fn` with `ctx` before each instruction in [begin, end] (begin >
 *  end: every instruction, which makes the CPU about 10x slower; a bounded
 *  hook costs nothing outside its range).  Any number; crec_emu_cpu_free
 *  removes them.  Add them before running, as crec_emu_cpu_hook_mem.  A
 *  hook that calls crec_emu_cpu_stop ends the run soon after (the rest of
 *  the block may still run).  The instructions crec executes itself are
 *  hooked too (a stop from their hook comes before them).
 *  @return CREC_OK, CREC_ERR_NOMEM or CREC_ERR_EMU. */
int crec_emu_cpu_hook_code(crec_emu_cpu *cpu, uint64_t begin, uint64_t end, crec_emu_code_fn fn,
                           void *ctx, crec_error *err);

/*! crec_emu_ucfix_used() : @return 1 once a guest store has gone through
 *  crec's replacement for Unicorn 2.0.1's page collection (emu/ucfix.c),
 *  which shows that the work-around is in effect in this process. */
int crec_emu_ucfix_used(void);

/*! crec_emu_fast_accesses() : @return how many guest loads and stores
 *  crec's fast memory path (emu/ucfix.c, 7) did in this process, rather
 *  than Unicorn's helpers. */
uint64_t crec_emu_fast_accesses(void);

/*! crec_emu_cpu_flush_code() : forget every translated block and every
 *  memoised block count in [addr, addr+len) (len 0: everything, which costs
 *  seconds: Unicorn 2.0.1 then zeroes its whole code buffer). */
void crec_emu_cpu_flush_code(crec_emu_cpu *cpu, uint64_t addr, uint64_t len);

/*! crec_emu_regs_get() / crec_emu_regs_set() :
 *  The whole register state.  Unicorn 2.0.1 reads and writes every field of
 *  crec_regs; the x87 tag word is the full form (two bits per register,
 *  0xffff = all empty), as FNSTENV stores it.
 *  @return CREC_OK or CREC_ERR_EMU naming the register Unicorn refused. */
int crec_emu_regs_get(crec_emu_cpu *cpu, crec_regs *r, crec_error *err);
int crec_emu_regs_set(crec_emu_cpu *cpu, const crec_regs *r, crec_error *err);

/*
 * Register ids of crec_emu_reg_get/set, emu's own (emu maps them to
 * Unicorn's).  The GPRs are in crec_gpr order: CREC_EMU_RAX + CREC_RBX is
 * rbx.  They start at CREC_EMU_REG_BASE, above every Unicorn id, so that a
 * Unicorn id passed by mistake is refused rather than read as another
 * register.
 */
#define CREC_EMU_REG_BASE 0x400
enum crec_emu_reg {
    CREC_EMU_RAX = CREC_EMU_REG_BASE, CREC_EMU_RCX, CREC_EMU_RDX, CREC_EMU_RBX,
    CREC_EMU_RSP, CREC_EMU_RBP, CREC_EMU_RSI, CREC_EMU_RDI,
    CREC_EMU_R8, CREC_EMU_R9, CREC_EMU_R10, CREC_EMU_R11,
    CREC_EMU_R12, CREC_EMU_R13, CREC_EMU_R14, CREC_EMU_R15,
    CREC_EMU_RIP, CREC_EMU_RFLAGS, CREC_EMU_FS_BASE, CREC_EMU_GS_BASE,
    CREC_EMU_MXCSR, CREC_EMU_FPCW, CREC_EMU_FPSW, CREC_EMU_FPTAG,
    CREC_EMU_REG_END
};

/*! crec_emu_reg_get() / crec_emu_reg_set() : one register, for callbacks
 *  that need only a few.  An id Unicorn refuses (or one that is not a
 *  crec_emu_reg) reads as 0 and is not lost: the CPU keeps the error, and
 *  crec_emu_cpu_run returns it (CREC_ERR_EMU) instead of running on. */
uint64_t crec_emu_reg_get(crec_emu_cpu *cpu, enum crec_emu_reg reg);
void crec_emu_reg_set(crec_emu_cpu *cpu, enum crec_emu_reg reg, uint64_t value);

/*! crec_emu_cpu_error() : @return the engine error a register access or a
 *  hook met since the last run (CREC_OK: none), with its message in err. */
int crec_emu_cpu_error(const crec_emu_cpu *cpu, crec_error *err);

/*! crec_emu_cpuid_default() : the fixed CPUID table (docs/EMU.md): the same
 *  answer on every host. */
void crec_emu_cpuid_default(uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

/*! crec_emu_rdtsc_default() : the virtual TSC, a pure function of the
 *  instruction count: 1e9 + 4 * icount. */
uint64_t crec_emu_rdtsc_default(uint64_t icount);

/* --- guest memory -------------------------------------------------------- */

/*! crec_emu_mem_map() :
 *  Map [addr, addr+len) (page-aligned) with `prot`, zero-filled, backed by
 *  host memory this module owns.  Replaces whatever was mapped there.
 *  @return CREC_OK, CREC_ERR_NOMEM or CREC_ERR_EMU. */
int crec_emu_mem_map(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                     crec_error *err);

/*! crec_emu_mem_map_host() :
 *  Like crec_emu_mem_map, but backed by `host`, which the caller got from
 *  mmap(2) and hands over: it is munmap'ed when the guest unmaps it. */
int crec_emu_mem_map_host(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                          void *host, crec_error *err);

/*! crec_emu_mem_unmap() : unmap every page of the range; holes are fine. */
int crec_emu_mem_unmap(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, crec_error *err);

/*! crec_emu_mem_move() :
 *  mremap: move the pages of [old, old+olen), which must lie in one
 *  mapping, to [to, to+nlen) (whatever was there is replaced), without
 *  copying them; a growth reads as zeros.  @return CREC_OK, CREC_ERR_ARG
 *  (not one mapping: nothing changed) or CREC_ERR_NOMEM / CREC_ERR_EMU. */
int crec_emu_mem_move(crec_emu_cpu *cpu, uint64_t old, uint64_t olen, uint64_t to, uint64_t nlen,
                      crec_error *err);

/*! crec_emu_mem_protect() : change protection of every mapped page in the
 *  range.  @return CREC_ERR_ARG when part of the range is not mapped (and
 *  then nothing changed). */
int crec_emu_mem_protect(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                         crec_error *err);

/*! crec_emu_mem_host() :
 *  Translate a guest range to a host pointer.  @return NULL unless the
 *  whole range is mapped, contiguous in host memory, and allows `prot`
 *  (0: any mapped page will do). */
void *crec_emu_mem_host(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot);

/*
 * A table of the host address of recently used guest pages, for memory
 * hooks that run on every load: it spares most loads the search of the
 * memory map that crec_emu_mem_host does.  The client owns it and must
 * empty it (crec_emu_hostpages_clear) whenever the memory map may have
 * changed, since a map change can move or drop a page's host memory.
 */
#define CREC_EMU_HOSTPAGES 256 /* a power of two */

struct crec_emu_hostpages {
    struct {
        uint64_t page_plus1; /* guest page number + 1; 0 = empty */
        uint8_t *host;
    } slot[CREC_EMU_HOSTPAGES];
};

/*! crec_emu_hostpages_find() :
 *  @return the host address of [addr, addr+size) when it lies in one
 *  mapped guest page, else NULL (not mapped, or across two pages). */
static inline uint8_t *crec_emu_hostpages_find(struct crec_emu_hostpages *t, crec_emu_cpu *cpu,
                                               uint64_t addr, unsigned size)
{
    uint64_t page = addr / CREC_PAGE_SIZE;
    unsigned i = (unsigned)(page & (CREC_EMU_HOSTPAGES - 1));

    if ((addr + size - 1) / CREC_PAGE_SIZE != page)
        return NULL;
    if (t->slot[i].page_plus1 != page + 1) {
        uint8_t *host = crec_emu_mem_host(cpu, page * CREC_PAGE_SIZE, CREC_PAGE_SIZE, 0);
        if (!host)
            return NULL;
        t->slot[i].page_plus1 = page + 1;
        t->slot[i].host = host;
    }
    return t->slot[i].host + addr % CREC_PAGE_SIZE;
}

/*! crec_emu_hostpages_clear() : empty the table (the map changed). */
void crec_emu_hostpages_clear(struct crec_emu_hostpages *t);

/*! crec_emu_mem_read() / crec_emu_mem_write() :
 *  Copy between guest and host memory, across mappings, ignoring
 *  protection (a debugger's view).  @return 0, or -1 if a page is not mapped. */
int crec_emu_mem_read(crec_emu_cpu *cpu, void *dst, uint64_t addr, uint64_t len);
int crec_emu_mem_write(crec_emu_cpu *cpu, uint64_t addr, const void *src, uint64_t len);

/*! crec_emu_mem_prot() : @return the protection of the page holding addr,
 *  or -1 if it is not mapped. */
int crec_emu_mem_prot(crec_emu_cpu *cpu, uint64_t addr);

/*! crec_emu_mem_find_free() :
 *  The highest page-aligned hole of `len` bytes that ends at or below
 *  `below` and starts at or above `above`.  @return 0, or -1 if none. */
int crec_emu_mem_find_free(crec_emu_cpu *cpu, uint64_t len, uint64_t above,
                           uint64_t below, uint64_t *addr);

/*! crec_emu_mem_echo() :
 *  Call first in a memory hook (crec_emu_mem_fn) that counts loads.  On a
 *  host where guest data is mapped as MMIO (not x86-64: Unicorn 2.0.1
 *  fires read hooks there only on TLB misses), Unicorn reports an
 *  unaligned load inside a page three times: the load, then the two
 *  aligned loads it is made of.  An x86-64 host reports it once.
 *  @return 1 for those two extra reports (ignore them), else 0. */
int crec_emu_mem_echo(crec_emu_cpu *cpu, int kind, uint64_t addr, unsigned size);

/*! crec_emu_mem_echoes() :
 *  @return 1 when this CPU maps guest data as MMIO, so that its hooks can
 *  see the re-reports crec_emu_mem_echo() filters; 0 when they can't, and
 *  a hook that runs on every load may skip that call. */
int crec_emu_mem_echoes(crec_emu_cpu *cpu);

/*! crec_emu_mem_resident() :
 *  Call fn(ctx, page) for each page of [addr, addr+len) that is mapped,
 *  not PROT_NONE, and that host memory holds: pages nothing ever touched
 *  are left out (an anonymous one reads as zeros).  Stops when fn returns non-zero.
 *  @return what fn returned last, or -1 (out of memory). */
int crec_emu_mem_resident(crec_emu_cpu *cpu, uint64_t addr, uint64_t len,
                          int (*fn)(void *ctx, uint64_t page), void *ctx);

/* One guest mapping, as crec_emu_mem_foreach reports it. */
struct crec_emu_mapping {
    uint64_t start, end;
    int prot;
    void *host;
};

/*! crec_emu_mem_foreach() : call fn for each mapping in address order; stop
 *  early when fn returns non-zero.  @return what fn returned last. */
int crec_emu_mem_foreach(crec_emu_cpu *cpu,
                         int (*fn)(void *ctx, const struct crec_emu_mapping *m), void *ctx);

/* --- bytes a syscall sends out (sysout.c) --------------------------------- */

/*
 * Read `len` (1..8) guest bytes at addr into out, the way the kernel reads
 * a syscall's buffer.  The recorder and the replayer each pass their own:
 * both must see the same sequence of calls.  @return 0, or -1 if the bytes
 * can't be had (unmapped).
 */
typedef int (*crec_emu_sysout_read_fn)(void *ctx, uint64_t addr, unsigned len, uint8_t *out);

/*! crec_emu_sysout_walk() :
 *  For a write-like syscall (write, pwrite64, writev, pwritev, pwritev2,
 *  sendto) that returned `ret` > 0, read every byte it sent out through
 *  `read`, in order, in pieces that never cross an aligned 8-byte granule,
 *  and hash them.  writev's iovec array is read the same way first.
 *  rt_sigreturn: the ucontext at args[0] and its FXSAVE image, whatever
 *  it returned.
 *  @return 1 and *hash (XXH3-64 of the bytes sent) for such a syscall, 0
 *          for any other syscall, -1 if `read` failed. */
int crec_emu_sysout_walk(uint64_t nr, const uint64_t args[6], int64_t ret,
                         crec_emu_sysout_read_fn read, void *ctx, uint64_t *hash);

/*! crec_emu_cpu_resume_at() : from a syscall hook: the program goes on
 *  at rip instead of after the syscall (a signal handler's entry, the end
 *  of rt_sigreturn). */
void crec_emu_cpu_resume_at(crec_emu_cpu *cpu, uint64_t rip);

/* --- the signal frame (sigframe.c) ---------------------------------------- */

#define CREC_EMU_NR_RT_SIGRETURN 15  /* its record's args[0] is the frame's ucontext */
#define CREC_EMU_UCONTEXT_SIZE 304 /* Linux's struct ucontext on x86-64 */
#define CREC_EMU_FXSAVE_SIZE 512   /* the FXSAVE image its fpstate points at */

/* What a signal frame holds besides the registers. */
struct crec_emu_sigframe_ctx {
    uint64_t mask;                       /* the mask to restore */
    uint64_t ss_sp, ss_size;             /* the alternate stack (sigaltstack) */
    uint32_t ss_flags;
    uint64_t err, trapno, cr2;           /* a fault's error code, vector, address */
    uint64_t fpstate;                    /* guest address of the FXSAVE image */
};

/*! crec_emu_sigframe_encode() / _decode() :
 *  The ucontext and FXSAVE bytes of a frame for registers r (rip: where the
 *  handler returns to), and back: decode sets r's general registers, rip,
 *  the flags a handler may change and (fp not NULL) the x87/SSE state, and
 *  *mask.  Layout: the comment at the top of emu/sigframe.c. */
void crec_emu_sigframe_encode(const crec_regs *r, const struct crec_emu_sigframe_ctx *c,
                              uint8_t uc[CREC_EMU_UCONTEXT_SIZE], uint8_t fp[CREC_EMU_FXSAVE_SIZE]);
void crec_emu_sigframe_decode(const uint8_t uc[CREC_EMU_UCONTEXT_SIZE], const uint8_t *fp,
                              crec_regs *r, uint64_t *mask);
/*! crec_emu_sigframe_fpstate() : the FXSAVE image's address a ucontext names. */
uint64_t crec_emu_sigframe_fpstate(const uint8_t uc[CREC_EMU_UCONTEXT_SIZE]);

/*! crec_emu_sigreturn_apply() :
 *  rt_sigreturn on the CPU: the registers from the ucontext at uc_addr in
 *  guest memory (and its FXSAVE image); *mask gets the signal mask it holds.
 *  The emulated kernel and the replayer both restore with this.
 *  @return CREC_OK, CREC_ERR_ARG (the frame is not mapped) or CREC_ERR_EMU. */
int crec_emu_sigreturn_apply(crec_emu_cpu *cpu, uint64_t uc_addr, uint64_t *mask,
                             crec_error *err);

/* ------------------------------------------------------------------------ */
/* The OS: a process on a CPU                                               */
/* ------------------------------------------------------------------------ */

typedef struct crec_emu crec_emu;

/* A guest range the emulated kernel wrote during one syscall. */
struct crec_emu_range {
    uint64_t addr, len;
};

#define CREC_EMU_MAX_OUT 8

/* One finished syscall, as on_syscall_exit sees it. */
struct crec_emu_syscall {
    uint64_t nr;
    uint64_t args[6];
    int64_t ret;                      /* value or -errno, as the guest sees it */
    unsigned n_out;                   /* ranges of guest memory written */
    struct crec_emu_range out[CREC_EMU_MAX_OUT];
    int out_overflow;                 /* more ranges were written than listed */
    uint64_t resume_rip;              /* 0: the program goes on after the syscall;
                                         else where the kernel sent it (a signal
                                         handler, the end of rt_sigreturn) */
};

/* A change of the guest's memory map. */
enum crec_emu_mem_kind {
    CREC_MEM_MMAP,
    CREC_MEM_MUNMAP,
    CREC_MEM_MPROTECT,
    CREC_MEM_BRK,
    CREC_MEM_MREMAP, /* reported as an MUNMAP of the old range then this */
};

struct crec_emu_mem_event {
    enum crec_emu_mem_kind kind;
    uint64_t addr, len;
    int prot;            /* new protection (MMAP, MPROTECT, BRK, MREMAP) */
    int became_exec;     /* some page in the range is now executable */
    int fd;              /* MMAP of a file: the guest fd, else -1 */
    uint64_t offset;     /* MMAP of a file: its offset */
    const char *path;    /* MMAP of a file: its host path (NULL if unknown),
                            valid during the callback only */
};

/* How the guest ended. */
struct crec_emu_exit {
    int status;          /* exit status when signo == 0 */
    int signo;           /* the fatal signal, or 0 */
    struct crec_emu_stop stop; /* the CPU stop that ended it, if signo != 0 */
    int deadlock;        /* every thread was blocked with nothing to wake it
                            (then signo is 0 and msg says who waited for what) */
    char msg[512];       /* signo != 0: "guest killed by SIGSEGV at ..." */
};

/* A switch of the CPU from one thread to another (crec's numbers). */
struct crec_emu_switch {
    uint32_t from, to;
    uint64_t from_icount;  /* `from`'s own instructions so far */
    uint64_t to_icount;    /* `to`'s */
    int exact;             /* `from` was stopped inside a block (--chaos); else at
                              a block start or after a syscall */
};

/* A thread starts or ends, as the observer sees it. */
enum crec_emu_thread_op { CREC_EMU_THREAD_CREATE = 1, CREC_EMU_THREAD_EXIT = 2 };

struct crec_emu_thread_event {
    int op;              /* enum crec_emu_thread_op */
    uint32_t id;         /* crec's number of the thread: 1, 2, ... in creation order */
    uint32_t parent;     /* CREATE: the number of the thread that made it */
    uint32_t tid;        /* CREATE: the thread id the guest sees */
    int status;          /* EXIT: its exit status */
    uint64_t cleared;    /* EXIT: the guest address of the 4 bytes the kernel
                            zeroed (clear_child_tid), 0 if none */
    /* EXIT: every range the kernel wrote as the thread ended (the robust
     * list's mutexes, clear_child_tid); out_overflow: more than these */
    const struct crec_emu_range *out;
    unsigned n_out;
    int out_overflow;
};

/* Where a fork is (crec_emu_observer.on_fork). */
enum crec_emu_fork_phase {
    CREC_EMU_FORK_BEFORE = 1, /* in the parent, just before crec forks */
    CREC_EMU_FORK_CHILD = 2,  /* in the child, just after: its only thread is
                                 number 1, its instruction counts are 0 */
    CREC_EMU_FORK_PARENT = 3, /* in the parent, after: `pid` is the child's */
};

/* Where an execve is (crec_emu_observer.on_exec). */
enum crec_emu_exec_phase {
    CREC_EMU_EXEC_BEFORE = 1, /* the old image is still there, the CPU stopped in
                                 the execve (registers as it began) */
    CREC_EMU_EXEC_AFTER = 2,  /* the new image is loaded: its only thread is number
                                 1, at its entry, the instruction counts 0 */
};

/* A signal delivered at an instruction boundary (not at a syscall's end,
 * which the syscall's own registers say), as on_signal sees it. */
struct crec_emu_signal {
    int signo, code;
    uint64_t addr;             /* si_addr of a fault */
    int fault;                 /* the running thread's instruction at its count
                                  faulted (did not run): the handler is entered there */
    int fatal;                 /* its default action ends the process here (at the
                                  block start at the thread's count); no handler */
    const crec_regs *before;   /* the registers before (NULL when fatal) */
    unsigned n_out;            /* guest memory the frame took */
    struct crec_emu_range out[2];
};

/*
 * What the recorder watches.  Every member is optional; `ctx` is passed
 * back.  They are called after the event, with the guest state already
 * updated.
 */
struct crec_emu_observer {
    void *ctx;
    /* a block starts: `icount` counts it already, `thread_icount` is the
     * running thread's count (crec_emu_thread_icount), passed because the
     * recorder needs both at every block */
    void (*on_block)(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount,
                     uint64_t thread_icount);
    /* before the emulated kernel runs: nr and args are set, ret is 0 */
    void (*on_syscall_enter)(void *ctx, const struct crec_emu_syscall *sc);
    /* after it: ret and the ranges it wrote are set (not for exit) */
    void (*on_syscall_exit)(void *ctx, const struct crec_emu_syscall *sc);
    void (*on_cpuid)(void *ctx, uint32_t leaf, uint32_t subleaf, const uint32_t out[4]);
    void (*on_rdtsc)(void *ctx, uint64_t value);
    void (*on_mem)(void *ctx, const struct crec_emu_mem_event *ev);
    void (*on_exit)(void *ctx, const struct crec_emu_exit *ex);
    /* A thread was created (called in its parent's clone, before it runs)
     * or has exited (in its own exit, its registers still in the CPU). */
    void (*on_thread)(void *ctx, const struct crec_emu_thread_event *ev);
    /* The CPU passes from one thread to another, the new one's registers
     * now in it. */
    void (*on_switch)(void *ctx, const struct crec_emu_switch *sw);
    /* the value RDRAND/RDSEED returned (not deterministic: recorded) */
    void (*on_rdrand)(void *ctx, uint64_t value);
    /* fork, vfork, clone without CLONE_THREAD (enum crec_emu_fork_phase) */
    void (*on_fork)(void *ctx, int phase, int pid);
    /* execve (enum crec_emu_exec_phase); AFTER: the program and its argv */
    void (*on_exec)(void *ctx, int phase, const char *path, char *const argv[]);
    /* a signal entered its handler (or killed) at an instruction boundary,
     * the registers already as the handler starts */
    void (*on_signal)(void *ctx, const struct crec_emu_signal *sig);
};

struct crec_emu_options {
    int strace;          /* print every syscall to `log` */
    int strict;          /* an unsupported syscall stops the run */
    FILE *log;           /* messages; NULL: stderr */
    const struct crec_emu_observer *observer; /* NULL: none */
    uint64_t slice;      /* instructions a thread runs before another may (0: default) */
    unsigned cpus;       /* CPUs the guest is shown (sched_getaffinity; 0: 1) */
    int chaos;           /* random slices, starvation and switches inside blocks */
    int recording;       /* the recorder runs it: the CPU keeps exactly the hooks a
                            replay installs, and a forked child that the guest's
                            signal killed dies of it only after crec_emu_forked_exit */
    uint64_t chaos_seed; /* ... from this seed */
    /* Signals sent to crec (docs/EMU.md, "Signals to crec"): NULL, or where
     * SIGINT and SIGTERM from outside the recorded process tree are noted
     * (the recorder then stops) instead of going to the guest. */
    volatile sig_atomic_t *stop;
    /* NULL, or raised by SIGUSR1 from outside the recorded processes: the
     * recorder writes a dump (not with forward_signals) */
    volatile sig_atomic_t *dump;
    int forward_signals; /* with `stop`: SIGINT, SIGTERM (and with `dump`,
                            SIGUSR1) go to the guest too */
};

#define CREC_EMU_DEFAULT_SLICE 100000ull

/* One guest thread, as crec_emu_threads lists it. */
struct crec_emu_thread_info {
    uint32_t id, tid, parent;
    uint64_t icount;     /* its own instructions so far */
    int running;         /* it has the CPU now */
};

/* Why crec_emu_find_program failed, for exit codes 126/127. */
enum crec_emu_find {
    CREC_FIND_OK = 0,
    CREC_FIND_MISSING = 1,  /* no such file (127) */
    CREC_FIND_NOEXEC = 2,   /* exists but not executable / not x86-64 ELF (126) */
};

/*! crec_emu_find_program() :
 *  Resolve `prog` like execvp: a name with a '/' as is, else each entry of
 *  PATH.  Checks that it is an executable x86-64 ELF file.
 *  @return CREC_FIND_*; on failure err holds the one-line reason. */
int crec_emu_find_program(const char *prog, char *path, size_t size, crec_error *err);

/*! crec_emu_create() : a process with no program loaded yet.  `opt` is
 *  copied (the observer it points to must outlive the process). */
int crec_emu_create(crec_emu **out, const struct crec_emu_options *opt, crec_error *err);

/*! crec_emu_free() : NULL is fine.  Closes the guest's files. */
void crec_emu_free(crec_emu *e);

/*! crec_emu_load() :
 *  Load the ELF file `path` (and its interpreter) as the kernel's execve
 *  would, with argv and envp (NULL-terminated) on the initial stack.
 *  @return CREC_OK, CREC_ERR_GUEST (bad ELF, missing interpreter),
 *  CREC_ERR_IO, CREC_ERR_NOMEM or CREC_ERR_EMU. */
int crec_emu_load(crec_emu *e, const char *path, char *const argv[], char *const envp[],
                  crec_error *err);

/*! crec_emu_run() :
 *  Run the loaded program to its end.  @return CREC_OK with *ex filled when
 *  the guest exited or was killed; CREC_ERR_UNSUPPORTED (--strict) or
 *  CREC_ERR_EMU when crec could not go on. */
int crec_emu_run(crec_emu *e, struct crec_emu_exit *ex, crec_error *err);

/*! crec_emu_stop() :
 *  From an observer callback: end crec_emu_run before the current block
 *  (from on_block) or after the current instruction, with the guest still
 *  alive; *ex is then all zero.  @return nothing. */
void crec_emu_stop(crec_emu *e);

/*! crec_emu_forked() : @return 1 in a crec process that a guest's fork
 *  made (not the one crec started), else 0. */
int crec_emu_forked(const crec_emu *e);

/*! crec_emu_forked_exit() :
 *  In a forked crec whose guest was killed by a signal: die of that signal
 *  (no return), so that the guest's parent sees WIFSIGNALED as natively;
 *  otherwise nothing.  The recorder calls it once its file is complete. */
void crec_emu_forked_exit(crec_emu *e);

/*! crec_emu_cpu_of() : @return the process's CPU. */
crec_emu_cpu *crec_emu_cpu_of(crec_emu *e);

/*! crec_emu_thread() : @return crec's number of the thread that has the
 *  CPU (1 for the first thread). */
uint32_t crec_emu_thread(const crec_emu *e);

/*! crec_emu_thread_icount() : @return the instructions the running thread
 *  has executed (its own count; the CPU's count is every thread's). */
uint64_t crec_emu_thread_icount(const crec_emu *e);

/*! crec_emu_threads() : the threads that have not exited, in creation
 *  order, into out[0..max).  @return how many there are. */
size_t crec_emu_threads(const crec_emu *e, struct crec_emu_thread_info *out, size_t max);

/*! crec_emu_thread_regs() : the registers of thread `id` (running or not).
 *  @return CREC_OK, CREC_ERR_NOTFOUND or CREC_ERR_EMU. */
int crec_emu_thread_regs(crec_emu *e, uint32_t id, crec_regs *r, crec_error *err);

#endif /* CREC_EMU_H */
