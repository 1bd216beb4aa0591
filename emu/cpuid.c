/*
 * cpuid.c - the CPU the guest is shown: a fixed table, the same on every
 * host, so that glibc makes the same choices (string functions, cache
 * sizes from leaf 4) wherever a program is recorded or replayed.
 *
 * x86-64-v2 and the extensions Unicorn's TCG runs at full speed once crec
 * lets it (emu/ucfix.c): SSE up to SSE4.2, SSSE3, CX16, LAHF, POPCNT,
 * MOVBE, PCLMULQDQ, AES, LZCNT, BMI1, BMI2, ADX, ERMS, RDTSCP; and RDRAND
 * and RDSEED, which crec executes itself and records (emu/xinsn.c).
 *
 * Not shown: AVX, AVX2, FMA, F16C, AVX-512, and so XSAVE/OSXSAVE (leaf 0xD
 * is all zero).  crec executes them when a program uses them anyway (one
 * built with -march=native), but at a few hundred nanoseconds each:
 * shown, they would make glibc pick its AVX2 string functions for every
 * program (docs/EMU.md has the measurements).  Nor PKU, CET or SHA.
 * The table is printed in docs/EMU.md; keep the two in step.
 */
#include <string.h>

#include "emu/emu_int.h"

#define MAX_BASIC 0x19u
#define MAX_EXT 0x80000008u

/* Caches: L1d 32K 8-way, L1i 32K 8-way, L2 1M 16-way, L3 8M 16-way; 64-byte
 * lines; one logical processor.  Leaf 4 layout (also used for 0x8000001D). */
static const uint32_t caches[4][4] = {
    {0x121, (7u << 22) | 63, 63, 0},      /* L1 data */
    {0x122, (7u << 22) | 63, 63, 0},      /* L1 instruction */
    {0x143, (15u << 22) | 63, 1023, 0},   /* L2 unified */
    {0x163, (15u << 22) | 63, 8191, 0},   /* L3 unified */
};

static void set4(uint32_t out[4], uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    out[0] = a, out[1] = b, out[2] = c, out[3] = d;
}

static void cache_leaf(uint32_t sub, uint32_t out[4])
{
    if (sub < 4)
        memcpy(out, caches[sub], 4 * sizeof *out);
}

static void basic_leaf(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    switch (leaf) {
    case 0: /* max leaf, "GenuineIntel" */
        set4(out, MAX_BASIC, 0x756e6547, 0x6c65746e, 0x49656e69);
        break;
    case 1:
        /* family 6 model 0x9e stepping 10; CLFLUSH 64 bytes, 1 logical cpu.
         * ecx: SSE3 PCLMULQDQ SSSE3 CX16 SSE4.1 SSE4.2 MOVBE POPCNT AES RDRAND.
         * edx: FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MTRR PGE MCA CMOV
         *      PAT PSE36 CLFSH MMX FXSR SSE SSE2. */
        set4(out, 0x000906ea, 0x00010800, 0x42d82203, 0x078bfbff);
        break;
    case 2: /* descriptor 0xff: "use leaf 4" */
        set4(out, 0x0000ff01, 0, 0, 0);
        break;
    case 4:
        cache_leaf(sub, out);
        break;
    case 7: /* subleaf 0: max subleaf 1; ebx: BMI1 BMI2 ERMS RDSEED ADX.
             * subleaf 1: nothing */
        if (sub == 0)
            set4(out, 1, (1u << 3) | (1u << 8) | (1u << 9) | (1u << 18) | (1u << 19), 0, 0);
        break;
    default: /* 0xD (no XSAVE), 0x14 (no PT), 0x19 (no Key Locker), ... */
        break;
    }
}

static void ext_leaf(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    /* "crec virtual x86-64 CPU", NUL-padded to 48 bytes */
    static const uint32_t brand[12] = {0x63657263, 0x72697620, 0x6c617574, 0x36387820,
                                       0x2034362d, 0x00555043};
    switch (leaf) {
    case 0x80000000:
        set4(out, MAX_EXT, 0, 0, 0);
        break;
    case 0x80000001: /* ecx: LAHF/SAHF, LZCNT (ABM); edx: SYSCALL NX RDTSCP LM */
        set4(out, 0, 0, 0x21, 0x28100800);
        break;
    case 0x80000002: case 0x80000003: case 0x80000004:
        memcpy(out, brand + 4 * (leaf - 0x80000002), 4 * sizeof *out);
        break;
    case 0x80000006: /* L2: 1024K, 16-way (code 8), 64-byte lines */
        set4(out, 0, 0, (1024u << 16) | (8u << 12) | 64, 0);
        break;
    case 0x80000007: /* invariant TSC */
        set4(out, 0, 0, 0, 1u << 8);
        break;
    case 0x80000008: /* 39 physical, 48 virtual address bits */
        set4(out, 0x3027, 0, 0, 0);
        break;
    case 0x8000001d: /* AMD's cache topology, answered like leaf 4 */
        cache_leaf(sub, out);
        break;
    default:
        break;
    }
}

void crec_emu_cpuid_default(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    set4(out, 0, 0, 0, 0);
    if (leaf <= MAX_BASIC)
        basic_leaf(leaf, sub, out);
    else if (leaf >= 0x80000000u)
        ext_leaf(leaf, sub, out);
}
