/*
 * bench_avx2.c - loops that measure the instructions crec executes itself
 * (make bench; docs/EMU.md).
 *
 *   bench_avx2 N avx2   an AVX2 kernel over an array (N passes): 8-wide
 *                       multiply-adds, shuffles, compares and blends
 *   bench_avx2 N sse2   the same arithmetic with SSE2 (which TCG runs),
 *                       4-wide: the same result
 *   bench_avx2 N vex1   N iterations of a loop of 9 instructions, one of
 *                       them VEX-encoded (vpaddd): each iteration costs one
 *                       trip through crec's own path
 *   bench_avx2 N sse1   the same loop with the SSE2 form (paddd)
 *   bench_avx2 N vex8   8 consecutive VEX instructions an iteration (one
 *                       trip for the eight)
 *   bench_avx2 N sse8   the same with SSE2
 *
 * Every mode prints a checksum; avx2 and sse2 print the same one, and so do
 * each vexK/sseK pair.  The AVX2 code is chosen per function (target
 * attribute), so the file builds with the guests' plain flags.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN 4096

static int32_t data[LEN] __attribute__((aligned(32)));

__attribute__((target("avx2"))) static uint64_t kernel_avx2(long passes)
{
    __m256i acc = _mm256_setzero_si256(), k = _mm256_set1_epi32(0x9e3779b9);
    for (long p = 0; p < passes; p++)
        for (int i = 0; i < LEN; i += 8) {
            __m256i x = _mm256_load_si256((const __m256i *)&data[i]);
            __m256i y = _mm256_add_epi32(_mm256_mullo_epi32(x, k), acc);
            __m256i m = _mm256_cmpgt_epi32(y, x);
            acc = _mm256_xor_si256(_mm256_blendv_epi8(x, y, m), _mm256_srli_epi32(y, 7));
        }
    uint32_t out[8];
    _mm256_storeu_si256((__m256i *)out, acc);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h * 31 + out[i];
    return h;
}

/* The same per 32-bit lane, 4 lanes at a time: lanes i and i+4 of the AVX2
 * accumulator live in two SSE accumulators. */
static uint64_t kernel_sse2(long passes)
{
    __m128i acc0 = _mm_setzero_si128(), acc1 = _mm_setzero_si128(),
            k = _mm_set1_epi32((int)0x9e3779b9);
    for (long p = 0; p < passes; p++)
        for (int i = 0; i < LEN; i += 8) {
            for (int h = 0; h < 2; h++) {
                __m128i x = _mm_load_si128((const __m128i *)&data[i + 4 * h]);
                __m128i *acc = h ? &acc1 : &acc0;
                /* mullo_epi32 from two pmuludq (SSE2 has no pmulld) */
                __m128i ev = _mm_mul_epu32(x, k), od = _mm_mul_epu32(_mm_srli_epi64(x, 32), k);
                __m128i lo = _mm_unpacklo_epi32(_mm_shuffle_epi32(ev, 8), _mm_shuffle_epi32(od, 8));
                __m128i y = _mm_add_epi32(lo, *acc);
                __m128i m = _mm_cmpgt_epi32(y, x);
                __m128i b = _mm_or_si128(_mm_and_si128(m, y), _mm_andnot_si128(m, x));
                *acc = _mm_xor_si128(b, _mm_srli_epi32(y, 7));
            }
        }
    uint32_t out[8];
    _mm_storeu_si128((__m128i *)out, acc0);
    _mm_storeu_si128((__m128i *)(out + 4), acc1);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h * 31 + out[i];
    return h;
}

/* One VEX (or SSE) instruction among eight scalar ones per iteration. */
__attribute__((target("avx2"))) static uint64_t loop1_vex(long n)
{
    uint64_t r = 0, s = 1;
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
                     "vpcmpeqd %%xmm1, %%xmm1, %%xmm1\n"
                     "1:\n\t"
                     "vpaddd %%xmm1, %%xmm0, %%xmm0\n\t"
                     "add %[s], %[r]\n\tadd $3, %[s]\n\txor %[r], %[s]\n\t"
                     "rol $5, %[r]\n\tinc %[r]\n\tsub $1, %[s]\n\t"
                     "dec %[n]\n\tjnz 1b\n\t"
                     "vmovd %%xmm0, %%eax\n\tadd %%rax, %[r]"
                     : [r] "+r"(r), [s] "+r"(s), [n] "+r"(n)
                     :
                     : "rax", "xmm0", "xmm1", "cc");
    return r;
}

static uint64_t loop1_sse(long n)
{
    uint64_t r = 0, s = 1;
    __asm__ volatile("pxor %%xmm0, %%xmm0\n\t"
                     "pcmpeqd %%xmm1, %%xmm1\n"
                     "1:\n\t"
                     "paddd %%xmm1, %%xmm0\n\t"
                     "add %[s], %[r]\n\tadd $3, %[s]\n\txor %[r], %[s]\n\t"
                     "rol $5, %[r]\n\tinc %[r]\n\tsub $1, %[s]\n\t"
                     "dec %[n]\n\tjnz 1b\n\t"
                     "movd %%xmm0, %%eax\n\tadd %%rax, %[r]"
                     : [r] "+r"(r), [s] "+r"(s), [n] "+r"(n)
                     :
                     : "rax", "xmm0", "xmm1", "cc");
    return r;
}

/* Eight VEX (or SSE) instructions in a row per iteration. */
#define EIGHT(op) op op op op op op op op
__attribute__((target("avx2"))) static uint64_t loop8_vex(long n)
{
    uint64_t r = 0;
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
                     "vpcmpeqd %%xmm1, %%xmm1, %%xmm1\n"
                     "1:\n\t" EIGHT("vpaddd %%xmm1, %%xmm0, %%xmm0\n\t")
                     "dec %[n]\n\tjnz 1b\n\t"
                     "vmovd %%xmm0, %%eax\n\tmov %%rax, %[r]"
                     : [r] "+r"(r), [n] "+r"(n)
                     :
                     : "rax", "xmm0", "xmm1", "cc");
    return r;
}

static uint64_t loop8_sse(long n)
{
    uint64_t r = 0;
    __asm__ volatile("pxor %%xmm0, %%xmm0\n\t"
                     "pcmpeqd %%xmm1, %%xmm1\n"
                     "1:\n\t" EIGHT("paddd %%xmm1, %%xmm0\n\t")
                     "dec %[n]\n\tjnz 1b\n\t"
                     "movd %%xmm0, %%eax\n\tmov %%rax, %[r]"
                     : [r] "+r"(r), [n] "+r"(n)
                     :
                     : "rax", "xmm0", "xmm1", "cc");
    return r;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10;
    const char *mode = argc > 2 ? argv[2] : "avx2";
    uint64_t h;

    for (int i = 0; i < LEN; i++)
        data[i] = (int32_t)((uint32_t)i * 2654435761u);
    if (strcmp(mode, "avx2") == 0)
        h = kernel_avx2(n);
    else if (strcmp(mode, "sse2") == 0)
        h = kernel_sse2(n);
    else if (strcmp(mode, "vex1") == 0)
        h = loop1_vex(n);
    else if (strcmp(mode, "sse1") == 0)
        h = loop1_sse(n);
    else if (strcmp(mode, "vex8") == 0)
        h = loop8_vex(n);
    else if (strcmp(mode, "sse8") == 0)
        h = loop8_sse(n);
    else {
        fprintf(stderr, "usage: bench_avx2 N avx2|sse2|vex1|sse1|vex8|sse8\n");
        return 2;
    }
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}
