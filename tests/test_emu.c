/*
 * test_emu.c - the emulator: guest memory, instruction counting (rep),
 * the RDTSC trap, CPUID, stops on faults and bad instructions, and the
 * observer a recorder relies on.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "emu/emu.h"

#define CODE 0x1000ull
#define DATA 0x10000ull

static void stop_at_syscall(void *ctx, crec_emu_cpu *cpu)
{
    (*(int *)ctx)++;
    crec_emu_cpu_stop(cpu);
}

/* A CPU with `code` at CODE (r-x) and 64 KiB of data at DATA (rw-). */
static crec_emu_cpu *cpu_with(const void *code, size_t n, int *syscalls)
{
    struct crec_emu_cpu_hooks h = {.ctx = syscalls, .syscall = stop_at_syscall};
    crec_emu_cpu *cpu;
    crec_error err = {0};

    cr_assert_eq(crec_emu_cpu_create(&cpu, &h, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, CODE, 0x1000, CREC_PROT_READ | CREC_PROT_EXEC, &err),
                 CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, DATA, 0x10000, CREC_PROT_READ | CREC_PROT_WRITE, &err),
                 CREC_OK);
    cr_assert_eq(crec_emu_mem_write(cpu, CODE, code, n), 0);
    crec_emu_reg_set(cpu, CREC_EMU_RIP, CODE);
    crec_emu_reg_set(cpu, CREC_EMU_RSP, DATA + 0x8000);
    return cpu;
}

static uint64_t run_to_syscall(crec_emu_cpu *cpu)
{
    struct crec_emu_stop stop;
    crec_error err = {0};
    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(stop.why, CREC_STOP_REQUESTED, "stopped: %d %s", stop.why, stop.what);
    return crec_emu_cpu_icount(cpu);
}

Test(emu, rep_counts_once_per_iteration_plus_one)
{
    /* mov rcx, 100; mov rdi, DATA; rep stosb; syscall */
    static const uint8_t code[] = {0x48, 0xc7, 0xc1, 0x64, 0, 0, 0, 0x48, 0xc7, 0xc7, 0, 0,
                                   1,    0,    0xf3, 0xaa, 0x0f, 0x05};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
    uint64_t got = run_to_syscall(cpu);
    /* 100 iterations, then one more block execution that finds rcx == 0 */
    cr_expect_eq(got, 2 + 101 + 1, "got %llu", (unsigned long long)got);
    crec_emu_cpu_free(cpu);
}

Test(emu, rep_with_zero_count_counts_once)
{
    /* mov rcx, 0; mov rdi, DATA; rep stosb; syscall */
    static const uint8_t code[] = {0x48, 0xc7, 0xc1, 0, 0, 0, 0, 0x48, 0xc7, 0xc7, 0, 0,
                                   1,    0,    0xf3, 0xaa, 0x0f, 0x05};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
    cr_expect_eq(run_to_syscall(cpu), 4);
    crec_emu_cpu_free(cpu);
}

Test(emu, counts_a_loop_exactly)
{
    /* mov ecx, 1000; l: dec ecx; jnz l; syscall  -> 1 + 2*1000 + 1 */
    static const uint8_t code[] = {0xb9, 0xe8, 0x03, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0x0f, 0x05};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
    cr_expect_eq(run_to_syscall(cpu), 2002);
    crec_emu_cpu_free(cpu);
}

Test(emu, rdtsc_is_virtual_and_exact)
{
    /* rdtsc; mov rbx, rax; nop; rdtsc; syscall */
    static const uint8_t code[] = {0x0f, 0x31, 0x48, 0x89, 0xc3, 0x90, 0x0f, 0x31, 0x0f, 0x05};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
    cr_expect_eq(run_to_syscall(cpu), 5);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX), crec_emu_rdtsc_default(1));
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), crec_emu_rdtsc_default(4));
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RDX), 0);
    crec_emu_cpu_free(cpu);
}

Test(emu, rdtsc_in_a_loop_stays_trapped)
{
    /* mov ecx, 3; l: rdtsc; dec ecx; jnz l; syscall */
    static const uint8_t code[] = {0xb9, 3, 0, 0, 0, 0x0f, 0x31, 0xff, 0xc9, 0x75, 0xfa, 0x0f, 0x05};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
    cr_expect_eq(run_to_syscall(cpu), 1 + 3 * 3 + 1);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), crec_emu_rdtsc_default(8));
    crec_emu_cpu_free(cpu);
}

Test(emu, cpuid_table_is_fixed)
{
    /* mov eax, 1; cpuid; syscall */
    static const uint8_t code[] = {0xb8, 1, 0, 0, 0, 0x0f, 0xa2, 0x0f, 0x05};
    uint32_t out[4];
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    run_to_syscall(cpu);
    crec_emu_cpuid_default(1, 0, out);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RCX), out[2]);
    cr_expect_eq(out[2] & (1u << 28), 0, "no AVX");
    cr_expect_eq(out[2] & (1u << 27), 0, "no OSXSAVE");
    cr_expect_eq(out[2] & ((1u << 12) | (1u << 29)), 0, "no FMA, F16C");
    cr_expect_neq(out[2] & (1u << 20), 0, "SSE4.2");
    cr_expect_eq(out[2] & ((1u << 1) | (1u << 22) | (1u << 23) | (1u << 30)),
                 (1u << 1) | (1u << 22) | (1u << 23) | (1u << 30),
                 "PCLMULQDQ, MOVBE, POPCNT, RDRAND");
    crec_emu_cpuid_default(0xd, 1, out);
    cr_expect_eq(out[0] | out[1] | out[2] | out[3], 0);
    crec_emu_cpuid_default(7, 0, out);
    cr_expect_eq(out[1] & ((1u << 5) | (1u << 16) | (1u << 29)), 0, "no AVX2, AVX-512, SHA");
    cr_expect_eq(out[1] & ((1u << 3) | (1u << 8) | (1u << 18) | (1u << 19)),
                 (1u << 3) | (1u << 8) | (1u << 18) | (1u << 19), "BMI1, BMI2, RDSEED, ADX");
    crec_emu_cpu_free(cpu);
}

/* xmm register i as two little-endian quadwords, through crec_regs. */
static void xmm_set(crec_emu_cpu *cpu, int i, const uint64_t q[2])
{
    crec_regs r;
    cr_assert_eq(crec_emu_regs_get(cpu, &r, NULL), CREC_OK);
    for (int b = 0; b < 16; b++)
        r.xmm[i][b] = (uint8_t)(q[b / 8] >> (8 * (b % 8)));
    cr_assert_eq(crec_emu_regs_set(cpu, &r, NULL), CREC_OK);
}

static void xmm_get(crec_emu_cpu *cpu, int i, uint64_t q[2])
{
    crec_regs r;
    cr_assert_eq(crec_emu_regs_get(cpu, &r, NULL), CREC_OK);
    q[0] = q[1] = 0;
    for (int b = 16; b-- > 0;)
        q[b / 8] = q[b / 8] << 8 | r.xmm[i][b];
}

Test(emu, popcnt_movbe_pclmulqdq_run, .description = "TCG runs them, also on a reused engine")
{
    /* popcnt rax, rbx; movbe ecx, [DATA]; pclmulqdq xmm0, xmm1, 0; syscall */
    static const uint8_t code[] = {0xf3, 0x48, 0x0f, 0xb8, 0xc3, 0x0f, 0x38, 0xf0, 0x0c, 0x25,
                                   0x00, 0x00, 0x01, 0x00, 0x66, 0x0f, 0x3a, 0x44, 0xc1, 0x00,
                                   0x0f, 0x05};
    static const uint8_t word[4] = {0x12, 0x34, 0x56, 0x78};
    uint64_t x0[2] = {3, 0}, x1[2] = {3, 0};

    for (int round = 0; round < 2; round++) { /* the second takes a pooled engine */
        int n = 0;
        crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);
        crec_emu_reg_set(cpu, CREC_EMU_RBX, 0xff0f);
        crec_emu_mem_write(cpu, DATA, word, 4);
        xmm_set(cpu, 0, x0);
        xmm_set(cpu, 1, x1);
        cr_expect_eq(run_to_syscall(cpu), 4);
        cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), 12);
        cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RCX), 0x12345678);
        uint64_t r[2];
        xmm_get(cpu, 0, r);
        cr_expect_eq(r[0], 5, "3 clmul 3 = 5, got %llu", (unsigned long long)r[0]);
        crec_emu_cpu_free(cpu);
    }
}

/* What crec's own instruction path reported. */
struct xseen {
    int loads, stores, xstates;
    uint64_t load_addr, store_addr, store_value;
};

static void x_access(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    struct xseen *x = ctx;
    if (kind == CREC_EMU_STORE) {
        if (!x->stores++)
            x->store_addr = addr, x->store_value = value;
    } else if (!x->loads++) {
        x->load_addr = addr;
    }
    cr_expect_leq(size, 8);
}

static void x_state(void *ctx, uint8_t *bytes, unsigned len)
{
    ((struct xseen *)ctx)->xstates++;
    memset(bytes, 0xab, len); /* as a replayer puts the recorded bytes */
}

Test(emu, vex_runs_in_crec_with_its_accesses_reported)
{
    /* vpaddd xmm0, xmm1, xmm2 (TCG would add xmm2 to xmm0); vmovdqu ymm3, [DATA];
     * vmovdqu [DATA+64], ymm3; syscall */
    static const uint8_t code[] = {0xc5, 0xf1, 0xfe, 0xc2, 0xc5, 0xfe, 0x6f, 0x1c, 0x25, 0x00,
                                   0x00, 0x01, 0x00, 0xc5, 0xfe, 0x7f, 0x1c, 0x25, 0x40, 0x00,
                                   0x01, 0x00, 0x0f, 0x05};
    uint64_t x0[2] = {1, 1}, x1[2] = {10, 10}, x2[2] = {100, 100}, r[2];
    uint8_t data[32], back[32];
    struct xseen x = {0};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    for (int i = 0; i < 32; i++)
        data[i] = (uint8_t)(i * 7);
    crec_emu_mem_write(cpu, DATA, data, 32);
    cr_assert_eq(crec_emu_cpu_hook_mem(cpu, CREC_EMU_LOAD | CREC_EMU_STORE, x_access, &x, NULL),
                 CREC_OK);
    crec_emu_cpu_flush_code(cpu, CODE, 0x1000); /* the hook applies to new translations */
    crec_emu_cpu_on_xstate(cpu, x_state, &x);
    xmm_set(cpu, 0, x0);
    xmm_set(cpu, 1, x1);
    xmm_set(cpu, 2, x2);
    cr_expect_eq(run_to_syscall(cpu), 4);
    xmm_get(cpu, 0, r);
    cr_expect_eq(r[0], 110, "xmm1 + xmm2, got %llu", (unsigned long long)r[0]);
    cr_expect_eq(crec_emu_cpu_xinsns(cpu), 3);
    cr_expect_eq(x.loads, 4, "a 32-byte load is four 8-byte pieces");
    cr_expect_eq(x.load_addr, DATA);
    cr_expect_eq(x.stores, 4);
    cr_expect_eq(x.store_addr, DATA + 64);
    cr_expect_eq(x.store_value, 0x312a231c150e0700ull, "bytes 0..7, little-endian");
    cr_expect_eq(crec_emu_mem_read(cpu, back, DATA + 64, 32), 0);
    cr_expect_eq(memcmp(back, data, 32), 0);
    /* the writes of vpaddd and vmovdqu made the state known: nothing asked */
    cr_expect_eq(x.xstates, 0);
    crec_emu_cpu_free(cpu);
}

Test(emu, vex_sites_apart_in_a_loop_all_run_in_crec,
     .description = "each site of a block gets its call, translated once or again")
{
    /* mov ecx, 3; loop: vpaddd xmm0, xmm2, xmm1; add rax, 1; vpaddd xmm3, xmm2, xmm1;
     * add rax, 1; dec ecx; jnz loop; vpaddd xmm4, xmm2, xmm1; syscall.  TCG's own
     * paddd would add xmm1 to the destination: 1 + 10 per pass. */
    static const uint8_t code[] = {0xb9, 0x03, 0x00, 0x00, 0x00, 0xc5, 0xe9, 0xfe, 0xc1, 0x48,
                                   0x83, 0xc0, 0x01, 0xc5, 0xe9, 0xfe, 0xd9, 0x48, 0x83, 0xc0,
                                   0x01, 0xff, 0xc9, 0x75, 0xec, 0xc5, 0xe9, 0xfe, 0xe1, 0x0f,
                                   0x05};
    uint64_t one[2] = {1, 1}, x1[2] = {10, 10}, x2[2] = {100, 100}, r[2];
    static const int dst[] = {0, 3, 4};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    for (size_t i = 0; i < sizeof dst / sizeof dst[0]; i++)
        xmm_set(cpu, dst[i], one);
    xmm_set(cpu, 1, x1);
    xmm_set(cpu, 2, x2);
    crec_emu_reg_set(cpu, CREC_EMU_RAX, 0);
    cr_expect_eq(run_to_syscall(cpu), 21);
    for (size_t i = 0; i < sizeof dst / sizeof dst[0]; i++) {
        xmm_get(cpu, dst[i], r);
        cr_expect_eq(r[0], 110, "xmm%d: xmm2 + xmm1, got %llu", dst[i], (unsigned long long)r[0]);
    }
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), 6);
    cr_expect_eq(crec_emu_cpu_xinsns(cpu), 7);
    crec_emu_cpu_free(cpu);
}

Test(emu, vector_state_is_asked_for_after_a_key_frame)
{
    /* vmovdqu [DATA], ymm5; syscall */
    static const uint8_t code[] = {0xc5, 0xfe, 0x7f, 0x2c, 0x25, 0x00, 0x00, 0x01, 0x00, 0x0f, 0x05};
    struct xseen x = {0};
    uint8_t back[32];
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    crec_emu_cpu_on_xstate(cpu, x_state, &x);
    crec_emu_cpu_xstate_forget(cpu);
    cr_expect_eq(crec_emu_cpu_xstate_touched(cpu), 0);
    run_to_syscall(cpu);
    cr_expect_eq(x.xstates, 3, "bytes 16..63 of zmm5, in 16-byte pieces");
    cr_expect_eq(crec_emu_cpu_xstate_touched(cpu), 1);
    crec_emu_mem_read(cpu, back, DATA + 16, 16);
    cr_expect_eq(back[0], 0xab, "the upper half came from the callback");
    crec_emu_cpu_free(cpu);
}

static uint64_t fixed_rdrand(void *ctx, crec_emu_cpu *cpu, int seed)
{
    (void)ctx, (void)cpu;
    return seed ? 0x5eed : 0x1234567890abcdefull;
}

Test(emu, rdrand_takes_the_hook_value_and_sets_cf)
{
    /* rdrand rax; setc bl; rdseed ecx; syscall */
    static const uint8_t code[] = {0x48, 0x0f, 0xc7, 0xf0, 0x0f, 0x92, 0xc3,
                                   0x0f, 0xc7, 0xf9, 0x0f, 0x05};
    struct crec_emu_cpu_hooks h = {.syscall = stop_at_syscall, .rdrand = fixed_rdrand};
    crec_emu_cpu *cpu;
    crec_error err = {0};
    int n = 0;

    h.ctx = &n;
    cr_assert_eq(crec_emu_cpu_create(&cpu, &h, &err), CREC_OK);
    crec_emu_mem_map(cpu, CODE, 0x1000, CREC_PROT_READ | CREC_PROT_EXEC, &err);
    crec_emu_mem_write(cpu, CODE, code, sizeof code);
    crec_emu_reg_set(cpu, CREC_EMU_RIP, CODE);
    crec_emu_reg_set(cpu, CREC_EMU_RCX, ~0ull);
    cr_expect_eq(run_to_syscall(cpu), 4);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), 0x1234567890abcdefull);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX) & 0xff, 1, "CF was 1");
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RCX), 0x5eed, "32-bit write zero-extends");
    crec_emu_cpu_free(cpu);
}

Test(emu, avx_fault_stops_with_the_instruction_uncounted)
{
    /* nop; vmovdqu ymm0, [0x10]; syscall */
    static const uint8_t code[] = {0x90, 0xc5, 0xfe, 0x6f, 0x04, 0x25, 0x10, 0, 0, 0, 0x0f, 0x05};
    struct crec_emu_stop stop;
    crec_error err = {0};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, &err), CREC_OK);
    cr_expect_eq(stop.why, CREC_STOP_FAULT);
    cr_expect_eq(stop.signo, SIGSEGV);
    cr_expect_eq(stop.rip, CODE + 1);
    cr_expect_eq(stop.addr, 0x10);
    cr_expect_eq(stop.access, 'r');
    cr_expect_eq(crec_emu_cpu_icount(cpu), 1);
    crec_emu_cpu_free(cpu);
}

struct cseen {
    crec_emu_cpu *cpu;
    uint64_t addrs[16], counts[16];
    unsigned n, sizes[16];
    uint64_t stop_at; /* stop before the instruction there (0: never) */
};

static void c_insn(void *ctx, uint64_t addr, unsigned size)
{
    struct cseen *c = ctx;

    if (c->n < 16) {
        c->addrs[c->n] = addr, c->sizes[c->n] = size;
        c->counts[c->n] = crec_emu_cpu_icount_at(c->cpu, addr);
        c->n++;
    }
    cr_expect_eq(crec_emu_reg_get(c->cpu, CREC_EMU_RIP), addr);
    if (addr == c->stop_at)
        crec_emu_cpu_stop(c->cpu);
}

/* nop; vpaddd xmm0, xmm1, xmm2; vpaddd xmm0, xmm0, xmm0; nop; syscall */
static const uint8_t hooked_vex[] = {0x90, 0xc5, 0xf1, 0xfe, 0xc2, 0xc5, 0xf9, 0xfe,
                                     0xc0, 0x90, 0x0f, 0x05};

Test(emu, code_hooks_see_the_instructions_crec_executes)
{
    struct cseen c = {0};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(hooked_vex, sizeof hooked_vex, &n);
    static const uint64_t want[] = {CODE, CODE + 1, CODE + 5, CODE + 9, CODE + 10};

    c.cpu = cpu;
    cr_assert_eq(crec_emu_cpu_hook_code(cpu, 1, 0, c_insn, &c, NULL), CREC_OK);
    cr_expect_eq(run_to_syscall(cpu), 5);
    cr_expect_eq(crec_emu_cpu_xinsns(cpu), 2);
    cr_assert_eq(c.n, 5);
    for (unsigned i = 0; i < 5; i++) {
        cr_expect_eq(c.addrs[i], want[i], "instruction %u at %#llx", i,
                     (unsigned long long)c.addrs[i]);
        cr_expect_eq(c.counts[i], i, "count before instruction %u", i);
    }
    cr_expect_eq(c.sizes[1], 4);
    crec_emu_cpu_free(cpu);
}

Test(emu, a_code_hook_stops_before_an_instruction_crec_executes)
{
    struct cseen c = {0};
    struct crec_emu_stop stop;
    uint64_t x0[2] = {1, 1}, x1[2] = {10, 10}, x2[2] = {100, 100}, r[2];
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(hooked_vex, sizeof hooked_vex, &n);

    c.cpu = cpu, c.stop_at = CODE + 5; /* the second vpaddd */
    cr_assert_eq(crec_emu_cpu_hook_code(cpu, CODE + 5, CODE + 5, c_insn, &c, NULL), CREC_OK);
    xmm_set(cpu, 0, x0);
    xmm_set(cpu, 1, x1);
    xmm_set(cpu, 2, x2);
    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, NULL), CREC_OK);
    cr_expect_eq(stop.why, CREC_STOP_REQUESTED);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RIP), CODE + 5);
    cr_expect_eq(crec_emu_cpu_icount(cpu), 2, "nop and the first vpaddd ran");
    cr_expect_eq(c.n, 1);
    xmm_get(cpu, 0, r);
    cr_expect_eq(r[0], 110, "the first vpaddd's result, the second not run");
    /* going on runs the rest */
    c.stop_at = 0;
    cr_expect_eq(run_to_syscall(cpu), 5);
    xmm_get(cpu, 0, r);
    cr_expect_eq(r[0], 220);
    cr_expect_eq(c.n, 2);
    crec_emu_cpu_free(cpu);
}

static crec_emu_cpu *blk_cpu;
static uint64_t blk_sum;

static void blk_seen(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount)
{
    (void)ctx, (void)addr, (void)ninsns, (void)icount;
    blk_sum += crec_emu_cpu_block_insns(blk_cpu);
}

Test(emu, block_insns_end_at_the_run_crec_executes)
{
    struct crec_emu_cpu_hooks h = {.syscall = stop_at_syscall, .block = blk_seen};
    crec_error err = {0};
    int n = 0;

    h.ctx = &n;
    cr_assert_eq(crec_emu_cpu_create(&blk_cpu, &h, &err), CREC_OK);
    crec_emu_mem_map(blk_cpu, CODE, 0x1000, CREC_PROT_READ | CREC_PROT_EXEC, &err);
    crec_emu_mem_write(blk_cpu, CODE, hooked_vex, sizeof hooked_vex);
    crec_emu_reg_set(blk_cpu, CREC_EMU_RIP, CODE);
    blk_sum = 0;
    cr_expect_eq(run_to_syscall(blk_cpu), 5);
    /* the first block is left after the two vpaddd; the rest is a new block */
    cr_expect_eq(blk_sum, 5, "every instruction in one block, got %llu",
                 (unsigned long long)blk_sum);
    crec_emu_cpu_free(blk_cpu);
}

static void mem_hook(void *ctx, int kind, uint64_t a, unsigned sz, uint64_t v)
{
    (void)ctx, (void)kind, (void)a, (void)sz, (void)v;
}

/* nop; nop; mov [0x99999], al; nop; syscall */
static const uint8_t fault_code[] = {0x90, 0x90, 0x88, 0x04, 0x25, 0x99, 0x99, 0x09, 0, 0x90, 0x0f, 0x05};

Test(emu, fault_stops_with_address)
{
    struct crec_emu_stop stop;
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(fault_code, sizeof fault_code, &n);

    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, NULL), CREC_OK);
    cr_expect_eq(stop.why, CREC_STOP_FAULT);
    cr_expect_eq(stop.signo, SIGSEGV);
    cr_expect_eq(stop.addr, 0x99999);
    cr_expect_eq(stop.access, 'w');
    /* without a memory hook, Unicorn 2.0.1 reports the block's start */
    cr_expect(stop.rip == CODE || stop.rip == CODE + 2);
    cr_expect_eq(crec_emu_cpu_icount(cpu), stop.rip - CODE, "count matches the reported rip");
    crec_emu_cpu_free(cpu);
}

Test(emu, fault_with_memory_hook_is_exact)
{
    struct crec_emu_stop stop;
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(fault_code, sizeof fault_code, &n);

    cr_assert_eq(crec_emu_cpu_hook_mem(cpu, CREC_EMU_STORE, mem_hook, NULL, NULL),
                 CREC_OK);
    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, NULL), CREC_OK);
    cr_expect_eq(stop.why, CREC_STOP_FAULT);
    cr_expect_eq(stop.signo, SIGSEGV);
    cr_expect_eq(stop.addr, 0x99999);
    cr_expect_eq(stop.access, 'w');
    cr_expect_eq(stop.rip, CODE + 2, "rip %llx", (unsigned long long)stop.rip);
    cr_expect_eq(crec_emu_cpu_icount(cpu), 2, "n %llu", (unsigned long long)crec_emu_cpu_icount(cpu));
    crec_emu_cpu_free(cpu);
}

/*
 * Engines are reused after crec_emu_cpu_free (emu/cpu.c's pool).  A CPU
 * made after another must not see anything of it: the first ran
 * "mov ebx, 1; mov r12, 0x55; syscall" with a store hook, the second runs
 * "mov ebx, 2; syscall" at the same address, which must run as new code,
 * with r12 back to 0 and the old hook gone.
 */
static int reuse_hook_calls;

static void reuse_hook(void *ctx, int kind, uint64_t a, unsigned sz, uint64_t v)
{
    (void)ctx, (void)kind, (void)a, (void)sz, (void)v;
    reuse_hook_calls++;
}

Test(emu, a_reused_engine_keeps_nothing_of_the_last_cpu)
{
    static const uint8_t first[] = {0xbb, 0x01, 0, 0, 0,          /* mov ebx, 1 */
                                    0x49, 0xc7, 0xc4, 0x55, 0, 0, 0, /* mov r12, 0x55 */
                                    0x50,                          /* push rax */
                                    0x0f, 0x05};
    static const uint8_t second[] = {0xbb, 0x02, 0, 0, 0, 0x50, 0x0f, 0x05};
    int n = 0;

    for (int round = 0; round < 3; round++) {
        crec_emu_cpu *cpu = cpu_with(first, sizeof first, &n);
        cr_assert_eq(crec_emu_cpu_hook_mem(cpu, CREC_EMU_STORE, reuse_hook, NULL, NULL),
                     CREC_OK);
        reuse_hook_calls = 0;
        run_to_syscall(cpu);
        cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX), 1);
        cr_expect_eq(reuse_hook_calls, 1, "the push, seen by the hook");
        crec_emu_cpu_free(cpu);

        cpu = cpu_with(second, sizeof second, &n);
        reuse_hook_calls = 0;
        cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_R12), 0, "registers are new");
        cr_expect_eq(run_to_syscall(cpu), 3, "mov, push, syscall");
        cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX), 2, "the new code ran");
        cr_expect_eq(reuse_hook_calls, 0, "the last CPU's hook is gone");
        crec_emu_cpu_free(cpu);
    }
}

/*
 * The Unicorn 2.0.1 work-around (emu/ucfix.c) replaces the page collection
 * that every guest store built: a store that rewrites code must still make
 * the new code run, in another block or in the block doing the store.
 *
 * Another block:                      The next instruction:
 *   0: xor ecx, ecx                     0: mov byte [CODE+9], 7
 *   2: mov ebx, 2    <- becomes 7       8: mov ebx, 2    <- becomes 7
 *   7: inc ecx                          d: syscall
 *   9: cmp ecx, 2
 *   c: je 0x18
 *   e: mov byte [CODE+3], 7
 *  16: jmp 2
 *  18: syscall
 */
static const uint8_t smc_loop[] = {0x31, 0xc9, 0xbb, 0x02, 0,    0,    0,    0xff, 0xc1,
                                   0x83, 0xf9, 0x02, 0x74, 0x0a, 0xc6, 0x04, 0x25, 0x03,
                                   0x10, 0,    0,    0x07, 0xeb, 0xea, 0x0f, 0x05};
static const uint8_t smc_next[] = {0xc6, 0x04, 0x25, 0x09, 0x10, 0,    0, 0x07,
                                   0xbb, 0x02, 0,    0,    0,    0x0f, 0x05};

/* Run code from a writable page, with or without a memory hook (the
 * recorder's slow path); @return the instruction count at its syscall. */
static uint64_t run_self_modifying(const uint8_t *code, size_t n, int with_hook)
{
    struct crec_emu_cpu_hooks h = {.syscall = stop_at_syscall};
    crec_emu_cpu *cpu;
    crec_error err = {0};
    uint64_t icount;
    int calls = 0;

    h.ctx = &calls;
    cr_assert_eq(crec_emu_cpu_create(&cpu, &h, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, CODE, 0x1000,
                                  CREC_PROT_READ | CREC_PROT_WRITE | CREC_PROT_EXEC, &err),
                 CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_write(cpu, CODE, code, n), 0);
    crec_emu_reg_set(cpu, CREC_EMU_RIP, CODE);
    if (with_hook)
        cr_assert_eq(crec_emu_cpu_hook_mem(cpu, CREC_EMU_STORE, mem_hook, NULL, NULL),
                     CREC_OK);
    icount = run_to_syscall(cpu);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX), 7, "the rewritten instruction ran");
    crec_emu_cpu_free(cpu);
    return icount;
}

Test(emu, store_into_code_runs_the_new_code)
{
    for (int hook = 0; hook <= 1; hook++) {
        /* xor, 6 in the first pass, 4 in the second, syscall */
        cr_expect_eq(run_self_modifying(smc_loop, sizeof smc_loop, hook), 1 + 6 + 4 + 1);
        /* Over-counted, as docs/EMU.md says: the block is counted whole (3)
         * on entry; QEMU then drops it at the store, runs the store again
         * as a block of its own (1) and the rest as a new block (2). */
        uint64_t got = run_self_modifying(smc_next, sizeof smc_next, hook);
        cr_expect_eq(got, 3 + 1 + 2, "got %llu", (unsigned long long)got);
    }
}

/*
 * A JIT: code stored into a fresh page, run, rewritten, run again.  The page
 * takes stores before it ever holds code (ucfix.c skips looking for code
 * there), then holds code that a store must invalidate.
 *
 *   mov dword [JIT], 0x000001bb    ; bb 01 00 00: mov ebx, 1 ...
 *   mov word [JIT+4], 0xc300       ; 00 c3: ... ret
 *   mov eax, JIT; call rax
 *   mov r12d, ebx
 *   mov byte [JIT+1], 2            ; now mov ebx, 2
 *   call rax
 *   syscall
 */
#define JIT 0x3000ull
static const uint8_t jit_code[] = {
    0xc7, 0x04, 0x25, 0x00, 0x30, 0, 0, 0xbb, 0x01, 0, 0, 0x66, 0xc7, 0x04, 0x25,
    0x04, 0x30, 0,    0,    0x00, 0xc3, 0xb8, 0x00, 0x30, 0, 0, 0xff, 0xd0, 0x41,
    0x89, 0xdc, 0xc6, 0x04, 0x25, 0x01, 0x30, 0,    0,    0x02, 0xff, 0xd0, 0x0f, 0x05};

Test(emu, code_written_at_run_time_runs_and_reruns_rewritten)
{
    crec_error err = {0};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(jit_code, sizeof jit_code, &n);

    cr_assert_eq(crec_emu_mem_map(cpu, JIT, 0x1000,
                                  CREC_PROT_READ | CREC_PROT_WRITE | CREC_PROT_EXEC, &err),
                 CREC_OK, "%s", err.msg);
    run_to_syscall(cpu);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_R12), 1, "the first code ran");
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RBX), 2, "the rewritten code ran");
    crec_emu_cpu_free(cpu);
}

Test(emu, stores_use_the_unicorn_2_0_1_work_arounds)
{
    /* mov rdi, DATA; mov [rdi], rdi; mov rdi, CODE+0x800; mov [rdi], rdi; syscall:
     * a store to data goes crec's fast way, one to a page of code Unicorn's */
    static const uint8_t code[] = {0x48, 0xc7, 0xc7, 0, 0, 1, 0, 0x48, 0x89, 0x3f,
                                   0x48, 0xc7, 0xc7, 0, 0x18, 0, 0, 0x48, 0x89, 0x3f,
                                   0x0f, 0x05};
    struct crec_emu_cpu_hooks h = {0};
    crec_emu_cpu *cpu;
    crec_error err = {0};
    uint64_t v = 0;
    int n = 0;

    h.ctx = &n, h.syscall = stop_at_syscall;
    cr_assert_eq(crec_emu_cpu_create(&cpu, &h, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, CODE, 0x1000,
                                  CREC_PROT_READ | CREC_PROT_WRITE | CREC_PROT_EXEC, &err),
                 CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, DATA, 0x10000, CREC_PROT_READ | CREC_PROT_WRITE, &err),
                 CREC_OK);
    cr_assert_eq(crec_emu_mem_write(cpu, CODE, code, sizeof code), 0);
    crec_emu_reg_set(cpu, CREC_EMU_RIP, CODE);
    crec_emu_reg_set(cpu, CREC_EMU_RSP, DATA + 0x8000);
    run_to_syscall(cpu);
    cr_expect_eq(crec_emu_ucfix_used(), 1,
                 "crec is built for Unicorn 2.0.1, whose page collection a store must skip");
    cr_expect_neq(crec_emu_fast_accesses(), 0, "the fast memory path is on");
    cr_assert_eq(crec_emu_mem_read(cpu, &v, DATA, 8), 0);
    cr_expect_eq(v, DATA);
    cr_assert_eq(crec_emu_mem_read(cpu, &v, CODE + 0x800, 8), 0);
    cr_expect_eq(v, CODE + 0x800);
    crec_emu_cpu_free(cpu);
}

Test(emu, illegal_instruction_is_described)
{
    static const uint8_t code[] = {0x90, 0x0f, 0x0b};
    struct crec_emu_stop stop;
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    cr_assert_eq(crec_emu_cpu_run(cpu, &stop, NULL), CREC_OK);
    cr_expect_eq(stop.why, CREC_STOP_ILLEGAL);
    cr_expect_eq(stop.signo, SIGILL);
    cr_expect_eq(stop.rip, CODE + 1);
    cr_expect(strstr(stop.what, "0f 0b (ud2)") != NULL, "what: %s", stop.what);
    crec_emu_cpu_free(cpu);
}

Test(emu, memory_cut_into_pieces)
{
    crec_emu_cpu *cpu;
    crec_error err = {0};
    uint64_t a = 0x400000, got;
    uint8_t *h;

    cr_assert_eq(crec_emu_cpu_create(&cpu, NULL, &err), CREC_OK);
    cr_assert_eq(crec_emu_mem_map(cpu, a, 16 * 4096, CREC_PROT_READ | CREC_PROT_WRITE, &err), CREC_OK);
    h = crec_emu_mem_host(cpu, a, 16 * 4096, CREC_PROT_WRITE);
    cr_assert_not_null(h);
    memset(h, 0x5a, 16 * 4096);
    cr_assert_eq(crec_emu_mem_unmap(cpu, a + 4 * 4096, 4 * 4096, &err), CREC_OK);
    cr_assert_eq(crec_emu_mem_protect(cpu, a + 9 * 4096, 2 * 4096, CREC_PROT_READ, &err), CREC_OK);
    cr_expect_eq(crec_emu_mem_prot(cpu, a + 4 * 4096), -1);
    cr_expect_eq(crec_emu_mem_prot(cpu, a + 9 * 4096), CREC_PROT_READ);
    cr_expect_eq(crec_emu_mem_prot(cpu, a + 11 * 4096), CREC_PROT_READ | CREC_PROT_WRITE);
    /* contents survive the cuts, and a range across pieces is still one host run */
    cr_expect_eq(((uint8_t *)crec_emu_mem_host(cpu, a + 8 * 4096, 8 * 4096, 0))[5 * 4096], 0x5a);
    cr_expect_null(crec_emu_mem_host(cpu, a + 8 * 4096, 8 * 4096, CREC_PROT_WRITE));
    cr_expect_null(crec_emu_mem_host(cpu, a, 8 * 4096, 0), "the hole is not mapped");
    cr_expect_eq(crec_emu_mem_protect(cpu, a, 16 * 4096, 0, &err), CREC_ERR_ARG);
    cr_assert_eq(crec_emu_mem_find_free(cpu, 4 * 4096, a, a + 16 * 4096, &got), 0);
    cr_expect_eq(got, a + 4 * 4096);
    cr_expect_neq(crec_emu_mem_find_free(cpu, 5 * 4096, a, a + 16 * 4096, &got), 0);
    crec_emu_cpu_free(cpu);
}

Test(emu, regs_round_trip)
{
    crec_emu_cpu *cpu;
    crec_regs r, back;

    cr_assert_eq(crec_emu_cpu_create(&cpu, NULL, NULL), CREC_OK);
    cr_assert_eq(crec_emu_regs_get(cpu, &r, NULL), CREC_OK);
    cr_expect_eq(r.fpcw, 0x37f);
    cr_expect_eq(r.mxcsr, 0x1f80);
    for (int i = 0; i < CREC_NGPR; i++)
        r.gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
    r.rip = 0x401000;
    r.fs_base = 0x7ffff7d8a740;
    memset(r.xmm[3], 0xab, 16);
    cr_assert_eq(crec_emu_regs_set(cpu, &r, NULL), CREC_OK);
    cr_assert_eq(crec_emu_regs_get(cpu, &back, NULL), CREC_OK);
    cr_expect_eq(memcmp(back.gpr, r.gpr, sizeof r.gpr), 0);
    cr_expect_eq(back.rip, r.rip);
    cr_expect_eq(back.fs_base, r.fs_base);
    cr_expect_eq(memcmp(back.xmm[3], r.xmm[3], 16), 0);
    crec_emu_cpu_free(cpu);
}

/* ---- the observer, on a real program ------------------------------------- */

struct counts {
    unsigned long blocks, enters, exits, cpuids, rdtscs, mems, exits_seen, execs;
    uint64_t last_icount;
    int status;
};

static void ob_block(void *c, uint64_t a, uint32_t n, uint64_t ic, uint64_t tic)
{
    struct counts *k = c;
    (void)a;
    k->blocks++;
    cr_assert_geq(ic, k->last_icount);
    cr_assert_geq(tic, n); /* the running thread's count holds this block */
    cr_assert_leq(tic, ic); /* and is part of the whole count */
    k->last_icount = ic;
}
static void ob_enter(void *c, const struct crec_emu_syscall *s) { (void)s; ((struct counts *)c)->enters++; }
static void ob_exit(void *c, const struct crec_emu_syscall *s) { (void)s; ((struct counts *)c)->exits++; }
static void ob_cpuid(void *c, uint32_t l, uint32_t s, const uint32_t o[4])
{
    (void)l, (void)s, (void)o;
    ((struct counts *)c)->cpuids++;
}
static void ob_rdtsc(void *c, uint64_t v) { (void)v; ((struct counts *)c)->rdtscs++; }
static void ob_mem(void *c, const struct crec_emu_mem_event *ev)
{
    struct counts *k = c;
    k->mems++;
    k->execs += ev->became_exec != 0;
}
static void ob_end(void *c, const struct crec_emu_exit *ex)
{
    struct counts *k = c;
    k->exits_seen++;
    k->status = ex->status;
}

static void run_observed(const char *prog, struct counts *k, struct crec_emu_exit *ex)
{
    struct crec_emu_observer ob = {k, ob_block, ob_enter, ob_exit, ob_cpuid, ob_rdtsc, ob_mem, ob_end};
    struct crec_emu_options opt = {.observer = &ob};
    char *argv[] = {(char *)prog, NULL}, *envp[] = {"LANG=C", NULL};
    crec_emu *e;
    crec_error err = {0};

    cr_assert_eq(crec_emu_create(&e, &opt, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_load(e, prog, argv, envp, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_run(e, ex, &err), CREC_OK, "%s", err.msg);
    cr_expect_eq(k->last_icount, crec_emu_cpu_icount(crec_emu_cpu_of(e)));
    crec_emu_free(e);
}

Test(emu, observer_sees_a_dynamic_program)
{
    struct counts k = {0};
    struct crec_emu_exit ex;

    run_observed("/bin/true", &k, &ex);
    cr_expect_eq(ex.signo, 0);
    cr_expect_eq(ex.status, 0);
    cr_expect_gt(k.blocks, 1000);
    cr_expect_gt(k.enters, 10);
    cr_expect_eq(k.exits + 1, k.enters, "every syscall but exit_group returns");
    cr_expect_gt(k.cpuids, 0, "glibc asks CPUID");
    cr_expect_gt(k.mems, 5);
    cr_expect_gt(k.execs, 2, "ld.so, the program and libc are executable");
    cr_expect_eq(k.exits_seen, 1);
}

Test(emu, observer_sees_rdtsc)
{
    struct counts k = {0};
    struct crec_emu_exit ex;

    cr_assert_eq(access("build/guests/rdtsc", X_OK), 0,
                 "build/guests/rdtsc is missing: `make test` builds it (make guests)");
    run_observed("build/guests/rdtsc", &k, &ex);
    cr_expect_geq(k.rdtscs, 3, "ld.so reads the TSC too; n %lu", k.rdtscs);
    cr_expect_eq(ex.status, 0);
}

Test(emu, find_program_like_execvp)
{
    char path[4096];
    crec_error err = {0};

    cr_expect_eq(crec_emu_find_program("true", path, sizeof path, &err), CREC_FIND_OK);
    cr_expect(strstr(path, "/true") != NULL);
    cr_expect_eq(crec_emu_find_program("no-such-program-xyz", path, sizeof path, &err),
                 CREC_FIND_MISSING);
    cr_expect_eq(crec_emu_find_program("/etc/passwd", path, sizeof path, &err), CREC_FIND_NOEXEC);
    cr_expect_eq(crec_emu_find_program("/", path, sizeof path, &err), CREC_FIND_NOEXEC);
}

Test(emu, allocation_failures_are_clean)
{
    for (unsigned long n = 1; n < 8; n++) {
        crec_emu *e = NULL;
        crec_error err = {0};
        crec_alloc_fail_after(n);
        int rc = crec_emu_create(&e, NULL, &err);
        crec_alloc_fail_after(0);
        cr_expect(rc == CREC_OK || rc == CREC_ERR_NOMEM, "n=%lu rc=%d", n, rc);
        cr_expect((rc == CREC_OK) == (e != NULL));
        crec_emu_free(e);
    }
}

/* ---- threads: the scheduler is deterministic --------------------------------- */

struct sched_log {
    unsigned creates, exits, switches, exact;
    uint64_t hash;           /* of every switch, in order */
    uint64_t icount[16];     /* each thread's count at its last switch */
    int bad;
};

static void sl_thread(void *c, const struct crec_emu_thread_event *ev)
{
    struct sched_log *l = c;
    if (ev->op == CREC_EMU_THREAD_CREATE) {
        l->creates++;
        l->bad |= ev->id != l->creates + 1 || ev->parent != 1;
    } else {
        l->exits++;
    }
}

static void sl_switch(void *c, const struct crec_emu_switch *sw)
{
    struct sched_log *l = c;
    l->switches++;
    l->exact += sw->exact != 0;
    l->bad |= sw->from == sw->to || sw->from >= 16 || sw->to >= 16;
    if (!l->bad) {
        l->bad |= sw->from_icount < l->icount[sw->from] || sw->to_icount != l->icount[sw->to];
        l->icount[sw->from] = sw->from_icount;
    }
    l->hash = (l->hash ^ (sw->from | (uint64_t)sw->to << 8 | sw->from_icount << 16)) *
              0x100000001b3ull;
}

static void run_threads(const char *prog, const char *arg, uint64_t slice, int chaos,
                        uint64_t seed, struct sched_log *l, struct crec_emu_exit *ex)
{
    struct crec_emu_observer ob = {.ctx = l, .on_thread = sl_thread, .on_switch = sl_switch};
    struct crec_emu_options opt = {.observer = &ob, .slice = slice, .chaos = chaos,
                                   .chaos_seed = seed, .log = fopen("/dev/null", "w")};
    char *argv[] = {(char *)prog, (char *)arg, arg ? "20000" : NULL, NULL};
    char *envp[] = {"LANG=C", NULL};
    crec_emu *e;
    crec_error err = {0};
    int out = dup(1), null = open("/dev/null", O_WRONLY);

    memset(l, 0, sizeof *l);
    dup2(null, 1); /* the guest's output */
    cr_assert_eq(crec_emu_create(&e, &opt, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_load(e, prog, argv, envp, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_run(e, ex, &err), CREC_OK, "%s", err.msg);
    crec_emu_free(e);
    dup2(out, 1);
    close(out), close(null);
    fclose(opt.log);
}

Test(emu, threads_switch_deterministically)
{
    struct sched_log a, b;
    struct crec_emu_exit ex;

    if (access("build/guests/threads_counter", X_OK) != 0)
        cr_skip_test("build/guests/threads_counter not built");
    run_threads("build/guests/threads_counter", "3", 5000, 0, 0, &a, &ex);
    cr_assert_eq(ex.status, 0, "%s", ex.msg);
    cr_expect_eq(a.creates, 3);
    cr_expect_eq(a.exits, 3, "every thread but the first exits alone");
    cr_expect_gt(a.switches, 3);
    cr_expect_eq(a.exact, 0, "without --chaos, switches are at block starts");
    cr_expect_eq(a.bad, 0);
    run_threads("build/guests/threads_counter", "3", 5000, 0, 0, &b, &ex);
    cr_expect_eq(a.hash, b.hash, "the same schedule twice");
    cr_expect_eq(a.switches, b.switches);

    /* --chaos: a seed gives one schedule, with switches inside blocks;
     * another seed another */
    run_threads("build/guests/threads_counter", "3", 5000, 1, 7, &a, &ex);
    cr_assert_eq(ex.status, 0, "%s", ex.msg);
    run_threads("build/guests/threads_counter", "3", 5000, 1, 7, &b, &ex);
    cr_expect_eq(a.hash, b.hash);
    cr_expect_gt(a.exact, 0);
    cr_expect_eq(a.bad, 0);
    run_threads("build/guests/threads_counter", "3", 5000, 1, 8, &b, &ex);
    cr_expect_neq(a.hash, b.hash);
}

Test(emu, deadlock_ends_the_run)
{
    struct sched_log l;
    struct crec_emu_exit ex;

    if (access("build/guests/threads_deadlock", X_OK) != 0)
        cr_skip_test("build/guests/threads_deadlock not built");
    run_threads("build/guests/threads_deadlock", NULL, 0, 0, 0, &l, &ex);
    cr_expect_eq(ex.deadlock, 1);
    cr_expect_eq(ex.signo, 0);
    cr_expect(strstr(ex.msg, "deadlock: every thread is blocked") != NULL, "%s", ex.msg);
    cr_expect(strstr(ex.msg, "waits on the futex") != NULL, "%s", ex.msg);
}

/* ---- engine errors are errors, never guest faults -------------------------- */

/* A syscall hook that asks for a register by a Unicorn id, as code written
 * against the old interface would: emu must refuse it loudly. */
static void syscall_with_unicorn_id(void *ctx, crec_emu_cpu *cpu)
{
    (void)ctx;
    crec_emu_reg_set(cpu, (enum crec_emu_reg)35 /* UC_X86_REG_RAX */, 1);
}

Test(emu, an_engine_error_is_returned_not_recorded_as_a_fault)
{
    static const uint8_t code[] = {0x90, 0x0f, 0x05, 0x90, 0x0f, 0x05};
    struct crec_emu_cpu_hooks h = {.syscall = syscall_with_unicorn_id};
    struct crec_emu_stop stop;
    crec_emu_cpu *cpu;
    crec_error err = {0};

    cr_assert_eq(crec_emu_cpu_create(&cpu, &h, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(crec_emu_mem_map(cpu, CODE, 0x1000, CREC_PROT_READ | CREC_PROT_EXEC, &err),
                 CREC_OK);
    cr_assert_eq(crec_emu_mem_write(cpu, CODE, code, sizeof code), 0);
    crec_emu_reg_set(cpu, CREC_EMU_RIP, CODE);
    cr_expect_eq(crec_emu_cpu_run(cpu, &stop, &err), CREC_ERR_EMU);
    cr_expect_eq(err.code, CREC_ERR_EMU);
    cr_expect(strstr(err.msg, "register id 35 is not an emu register") != NULL, "%s", err.msg);
    cr_expect_eq(stop.signo, 0, "no signal: the guest did nothing wrong");
    cr_expect_eq(crec_emu_cpu_run(cpu, &stop, &err), CREC_ERR_EMU, "the CPU stays failed");
    crec_emu_cpu_free(cpu);
}

Test(emu, register_ids_are_emus_own)
{
    crec_emu_cpu *cpu;
    crec_error err = {0};
    crec_regs r;

    cr_assert_eq(crec_emu_cpu_create(&cpu, NULL, &err), CREC_OK);
    for (int i = 0; i < CREC_NGPR; i++)
        crec_emu_reg_set(cpu, (enum crec_emu_reg)(CREC_EMU_RAX + i), 100 + (uint64_t)i);
    crec_emu_reg_set(cpu, CREC_EMU_FS_BASE, 0x1234000);
    cr_assert_eq(crec_emu_regs_get(cpu, &r, &err), CREC_OK, "%s", err.msg);
    for (int i = 0; i < CREC_NGPR; i++)
        cr_expect_eq(r.gpr[i], 100 + (uint64_t)i, "gpr %d in crec_gpr order", i);
    cr_expect_eq(r.fs_base, 0x1234000);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_FPCW), 0x37f);
    cr_expect_eq(crec_emu_cpu_error(cpu, &err), CREC_OK);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_REG_END), 0, "not a register");
    cr_expect_eq(crec_emu_cpu_error(cpu, &err), CREC_ERR_EMU);
    crec_emu_cpu_free(cpu);
}

static unsigned hook_kinds, hook_sizes;
static uint64_t hook_value;

static void typed_hook(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    (void)ctx, (void)addr;
    hook_kinds |= (unsigned)kind;
    hook_sizes += size;
    if (kind == CREC_EMU_STORE)
        hook_value = value;
}

Test(emu, memory_hooks_are_typed)
{
    /* mov rdi, DATA; mov qword [rdi], 0x55; mov rax, [rdi]; syscall */
    static const uint8_t code[] = {0x48, 0xc7, 0xc7, 0, 0, 1, 0, 0x48, 0xc7, 0x07, 0x55, 0, 0, 0,
                                   0x48, 0x8b, 0x07, 0x0f, 0x05};
    crec_error err = {0};
    int n = 0;
    crec_emu_cpu *cpu = cpu_with(code, sizeof code, &n);

    cr_expect_eq(crec_emu_cpu_hook_mem(cpu, 8, typed_hook, NULL, &err), CREC_ERR_ARG);
    cr_assert_eq(crec_emu_cpu_hook_mem(cpu, CREC_EMU_LOAD | CREC_EMU_STORE, typed_hook, NULL,
                                       &err), CREC_OK);
    run_to_syscall(cpu);
    cr_expect_eq(hook_kinds, CREC_EMU_LOAD | CREC_EMU_STORE);
    cr_expect_eq(hook_sizes, 16, "an 8-byte store and an 8-byte load");
    cr_expect_eq(hook_value, 0x55);
    cr_expect_eq(crec_emu_reg_get(cpu, CREC_EMU_RAX), 0x55);
    crec_emu_cpu_free(cpu);
}

/* ---- signals: the frame Linux builds ------------------------------------------- */

Test(emu, sigframe_round_trip_and_linux_offsets)
{
    uint8_t uc[CREC_EMU_UCONTEXT_SIZE], fp[CREC_EMU_FXSAVE_SIZE];
    struct crec_emu_sigframe_ctx c = {0};
    crec_regs r, back;
    uint64_t mask = 0;

    memset(&r, 0, sizeof r);
    for (int i = 0; i < CREC_NGPR; i++)
        r.gpr[i] = 0x1000 + (uint64_t)i;
    r.rip = 0x401234;
    r.rflags = 0x246;
    r.mxcsr = 0x1fa0;
    r.fpcw = 0x27f;
    r.fptag = 0xfff0; /* st0 and st1 in use */
    for (int i = 0; i < 16; i++)
        memset(r.xmm[i], 0x20 + i, 16);
    c.mask = 0x8000000000000201ull;
    c.fpstate = 0x7ffffff000;
    crec_emu_sigframe_encode(&r, &c, uc, fp);
    /* the offsets glibc's ucontext_t reads: gregs[REG_RIP] at 168, the mask at 296 */
    cr_expect_eq(crec_le_get(uc + 40 + 16 * 8, 8), 0x401234);
    cr_expect_eq(crec_le_get(uc + 40 + 13 * 8, 8), r.gpr[CREC_RAX]);
    cr_expect_eq(crec_le_get(uc + 40 + 8 * 8, 8), r.gpr[CREC_RDI]);
    cr_expect_eq(crec_le_get(uc + 296, 8), c.mask);
    cr_expect_eq(crec_emu_sigframe_fpstate(uc), c.fpstate);
    cr_expect_eq(fp[4], 0x03, "abridged tag: st0 and st1 in use");
    cr_expect_eq(crec_le_get(fp + 24, 4), 0x1fa0);

    memset(&back, 0, sizeof back);
    back.rflags = 0x202; /* IF and bit 1: not flags the frame may change */
    crec_emu_sigframe_decode(uc, fp, &back, &mask);
    cr_expect_eq(mask, c.mask);
    cr_expect_eq(back.rip, r.rip);
    cr_expect_eq(back.rflags, 0x246);
    cr_expect(memcmp(back.gpr, r.gpr, sizeof r.gpr) == 0);
    cr_expect(memcmp(back.xmm, r.xmm, sizeof r.xmm) == 0);
    cr_expect_eq(back.mxcsr, r.mxcsr);
    cr_expect_eq(back.fpcw, r.fpcw);
    cr_expect_eq(back.fptag, r.fptag);

    /* a frame without an FPU image leaves the vector state alone */
    memset(&back, 0, sizeof back);
    crec_emu_sigframe_decode(uc, NULL, &back, &mask);
    cr_expect_eq(back.mxcsr, 0);
    cr_expect_eq(back.rip, r.rip);
}
