/*
 * avx_ops.c - a differential test of the instructions crec executes itself
 * (emu/xinsn.c, emu/xfloat.c): each of about two thousand AVX, AVX2, FMA,
 * F16C and AVX-512 instruction forms runs on eight register states
 * (random bits, small integers, the special floats: zeros, infinities,
 * NaNs, denormals; two states with another rounding mode, DAZ and FTZ),
 * and one line per form prints a hash of every register, flag, MXCSR and
 * the memory buffer after it.  Run natively on the AVX-512 machine the
 * tests run on and under crec, the two outputs must be the same.
 *
 * The instruction list is in avx_ops.h (written by avx_ops_gen.py).
 * `avx_ops NAME v` runs one form and prints every state in and out, to see
 * what differs; `avx_ops quick` runs two states of every eighth form (a
 * recording of 4e6 instructions where the whole list makes 2e8);
 * `avx_ops partK/N` runs every form t with t % N == K (to bisect).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct st {
    uint8_t z[7][64];      /* zmm0 1 2 3 5 16 17 */
    uint64_t k[3];         /* k1 k2 k3 */
    uint64_t g[5];         /* rax rbx rcx r8 flags */
    uint32_t mxcsr, pad;
    uint8_t mem[256] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

#define LOAD                                                                                  \
    "vmovdqu64 0(%%rdi), %%zmm0\n\tvmovdqu64 64(%%rdi), %%zmm1\n\t"                             \
    "vmovdqu64 128(%%rdi), %%zmm2\n\tvmovdqu64 192(%%rdi), %%zmm3\n\t"                          \
    "vmovdqu64 256(%%rdi), %%zmm5\n\tvmovdqu64 320(%%rdi), %%zmm16\n\t"                         \
    "vmovdqu64 384(%%rdi), %%zmm17\n\tkmovq 448(%%rdi), %%k1\n\tkmovq 456(%%rdi), %%k2\n\t"     \
    "kmovq 464(%%rdi), %%k3\n\tmov 472(%%rdi), %%rax\n\tmov 480(%%rdi), %%rbx\n\t"              \
    "mov 488(%%rdi), %%rcx\n\tmov 496(%%rdi), %%r8\n\tldmxcsr 512(%%rdi)\n\t"                   \
    "lea 576(%%rdi), %%rsi\n\tpushq 504(%%rdi)\n\tpopfq\n\t"
#define STORE                                                                                 \
    "\n\tpushfq\n\tpopq 504(%%rdi)\n\tvmovdqu64 %%zmm0, 0(%%rdi)\n\t"                            \
    "vmovdqu64 %%zmm1, 64(%%rdi)\n\tvmovdqu64 %%zmm2, 128(%%rdi)\n\t"                           \
    "vmovdqu64 %%zmm3, 192(%%rdi)\n\tvmovdqu64 %%zmm5, 256(%%rdi)\n\t"                          \
    "vmovdqu64 %%zmm16, 320(%%rdi)\n\tvmovdqu64 %%zmm17, 384(%%rdi)\n\t"                        \
    "kmovq %%k1, 448(%%rdi)\n\tkmovq %%k2, 456(%%rdi)\n\tkmovq %%k3, 464(%%rdi)\n\t"            \
    "mov %%rax, 472(%%rdi)\n\tmov %%rbx, 480(%%rdi)\n\tmov %%rcx, 488(%%rdi)\n\t"               \
    "mov %%r8, 496(%%rdi)\n\tstmxcsr 512(%%rdi)\n\t"

#define T(name, insn)                                                                         \
    static __attribute__((noinline)) void t_##name(struct st *s)                              \
    {                                                                                         \
        __asm__ volatile(LOAD insn STORE                                                      \
                         :                                                                    \
                         : "D"(s)                                                             \
                         : "rax", "rbx", "rcx", "rsi", "r8", "memory", "cc", "xmm0", "xmm1",  \
                           "xmm2", "xmm3", "xmm5");                                           \
    }
#include "avx_ops.h"
#undef T

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One 8-byte lane of test data. */
static uint64_t lane(void)
{
    static const uint32_t f32[] = {0, 0x80000000u, 0x3f800000u, 0xc0200000u, 0x7f800000u,
                                   0xff800000u, 0x7fc00001u, 0x7f800011u, 0xffc00000u,
                                   0x00000123u, 0x807fffffu, 0x7f7fffffu, 0x3dcccccdu,
                                   0x4f000000u, 0xcf000001u, 0x5f800000u, 0x47800000u};
    static const uint64_t f64[] = {0, 1ull << 63, 0x3ff0000000000000ull, 0xc004000000000000ull,
                                   0x7ff0000000000000ull, 0xfff0000000000000ull,
                                   0x7ff8000000000001ull, 0x7ff0000000000011ull,
                                   0x000000000000abcdull, 0x7fefffffffffffffull,
                                   0x3fb999999999999aull, 0x43e0000000000000ull,
                                   0xc3e0000000000001ull, 0x41e0000000000000ull};
    unsigned c = (unsigned)(next() % 10);
    uint64_t r = next();

    if (c < 3)
        return r;
    if (c < 5) /* small integers in every 16-bit and 32-bit piece */
        return r & 0x000f800f000f800full;
    if (c < 8)
        return f32[next() % (sizeof f32 / 4)] | (uint64_t)f32[next() % (sizeof f32 / 4)] << 32;
    return f64[next() % (sizeof f64 / 8)];
}

static void fill(struct st *s, int run)
{
    uint64_t *p = (uint64_t *)s->z;

    for (unsigned i = 0; i < sizeof s->z / 8; i++)
        p[i] = lane();
    /* gather indexes: 0..15 as dwords and as qwords */
    memset(s->z[4], 0, 64);
    for (unsigned i = 0; i < 64; i += 8)
        s->z[4][i] = (uint8_t)(next() % 16);
    for (int i = 0; i < 3; i++)
        s->k[i] = next();
    s->g[0] = lane();
    s->g[1] = next() % 3 ? lane() : next() >> 40;
    s->g[2] = next();
    s->g[3] = 32;
    s->g[4] = 0x202 | (next() & 0x8d5);
    p = (uint64_t *)s->mem;
    for (unsigned i = 0; i < sizeof s->mem / 8; i++)
        p[i] = lane();
    s->mxcsr = 0x1f80;
    if (run >= 6) /* another rounding mode, DAZ and FTZ at random */
        s->mxcsr |= (uint32_t)(next() & 0x6000) | (uint32_t)(next() & 0x8040);
}

static uint64_t hash(const struct st *s)
{
    const uint8_t *b = (const uint8_t *)s;
    uint64_t h = 0xcbf29ce484222325ull;
    struct st c = *s;

    c.g[4] &= 0x8d5; /* the arithmetic flags */
    c.pad = 0;
    b = (const uint8_t *)&c;
    for (size_t i = 0; i < sizeof c; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#define T(name, insn) {#name, t_##name},
static const struct {
    const char *name;
    void (*fn)(struct st *);
} tests[] = {
#include "avx_ops.h"
};
#undef T

int main(int argc, char **argv)
{
    static struct st s;
    unsigned part = 0, parts = 1;
    int sliced = argc > 1 && sscanf(argv[1], "part%u/%u", &part, &parts) == 2 && parts > 0;
    const char *only = argc > 1 && !sliced && strcmp(argv[1], "quick") != 0 ? argv[1] : NULL;
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    int runs = quick ? 2 : 8;

    setvbuf(stdout, NULL, _IOLBF, 0);

    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        uint64_t h = 0;
        if ((only && strcmp(only, tests[t].name) != 0) || (quick && t % 8 != 0) ||
            (sliced && t % parts != part))
            continue;
        rng = 0x9e3779b97f4a7c15ull + t;
        for (int run = 0; run < runs; run++) {
            fill(&s, run);
            if (argc > 2) {
                printf("run %d mx %08x in:", run, s.mxcsr);
                for (int r = 0; r < 4; r++) { printf(" z%d=", r); for (int i = 63; i >= 0; i--) printf("%02x", s.z[r][i]); }
                printf(" k1=%llx mem=", (unsigned long long)s.k[0]); for (int i = 0; i < 64; i++) printf("%02x", s.mem[i]);
                printf("\n");
            }
            tests[t].fn(&s);
            if (argc > 2) {
                printf("run %d out:", run);
                for (int r = 0; r < 7; r++) { printf(" z%d=", r); for (int i = 63; i >= 0; i--) printf("%02x", s.z[r][i]); }
                printf(" k=%llx,%llx,%llx g=%llx,%llx,%llx fl=%llx mx=%x\n", (unsigned long long)s.k[0], (unsigned long long)s.k[1], (unsigned long long)s.k[2], (unsigned long long)s.g[0], (unsigned long long)s.g[1], (unsigned long long)s.g[2], (unsigned long long)(s.g[4] & 0x8d5), s.mxcsr);
            }
            h = h * 31 + hash(&s);
        }
        printf("%s %016llx\n", tests[t].name, (unsigned long long)h);
    }
    return 0;
}
