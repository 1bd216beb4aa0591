/*
 * vec_work.h - the body of vec_native.c (built -O3 -march=native) and
 * vec_v2.c (built -O2 -march=x86-64-v2): loops a compiler vectorizes and
 * the bit operations those CPU levels add (popcount, lzcnt/tzcnt, crc32,
 * bmi), on generated data.  It prints checksums: run natively and under
 * crec, the output must be the same.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4099 /* odd, so vector loops have a remainder */

static uint32_t a[N], b[N], c[N];
static uint8_t s8[N];
static int16_t w[N];
static float f[N], g[N], h[N];
static double d[N], e[N];
static char text[N + 1];

__attribute__((noinline)) static uint64_t popsum(const uint64_t *v, int n)
{
    uint64_t t = 0;
    for (int i = 0; i < n; i++)
        t += (uint64_t)__builtin_popcountll(v[i]);
    return t;
}

__attribute__((noinline)) static void saxpy(float k, int n)
{
    for (int i = 0; i < n; i++)
        h[i] = k * f[i] + g[i];
}

__attribute__((noinline)) static uint32_t vmax(int n)
{
    uint32_t m = 0;
    for (int i = 0; i < n; i++)
        m = a[i] > m ? a[i] : m;
    return m;
}

__attribute__((noinline)) static void cond(int n)
{
    for (int i = 0; i < n; i++)
        c[i] = a[i] > b[i] ? a[i] - b[i] : b[i] * 3;
}

__attribute__((noinline)) static double dot(int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += d[i] * e[i];
    return t;
}

__attribute__((noinline)) static int count(uint8_t x, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += s8[i] == x;
    return k;
}

__attribute__((noinline)) static void convert(int n)
{
    for (int i = 0; i < n; i++)
        f[i] = (float)a[i] * 0.5f + sqrtf((float)b[i]) + (float)w[i];
}

__attribute__((noinline)) static int64_t wsum(int n)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++)
        t += (int64_t)w[i] * w[i] - (w[i] >> 3);
    return t;
}

__attribute__((noinline)) static uint64_t bits(int n)
{
    uint64_t t = 0;
    for (int i = 0; i < n; i++) {
        uint32_t x = a[i] | 1u;
        t += (uint64_t)__builtin_clz(x) + (uint64_t)__builtin_ctz(x) +
             ((x >> (b[i] & 15)) & ((1u << (c[i] & 15)) - 1)) + (x & (x - 1));
    }
    return t;
}

__attribute__((noinline)) static uint32_t crc(int n)
{
    uint32_t r = ~0u;
    for (int i = 0; i < n; i++) {
        r ^= s8[i];
        for (int k = 0; k < 8; k++)
            r = (r >> 1) ^ (0xedb88320u & (0u - (r & 1)));
    }
    return ~r;
}

__attribute__((noinline)) static void smooth(int n)
{
    for (int i = 1; i < n - 1; i++)
        e[i] = (d[i - 1] + 2.0 * d[i] + d[i + 1]) * 0.25;
}

static uint64_t hash_words(const void *p, size_t n)
{
    const uint8_t *q = p;
    uint64_t x = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        x = (x ^ q[i]) * 1099511628211ull;
    return x;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t u = *(const uint32_t *)x, v = *(const uint32_t *)y;
    return u < v ? -1 : u > v;
}

int main(void)
{
    uint64_t x = 88172645463325252ull;

    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        a[i] = (uint32_t)x, b[i] = (uint32_t)(x >> 32), s8[i] = (uint8_t)(x >> 56);
        w[i] = (int16_t)(x >> 20);
        f[i] = (float)(x & 0xffff) / 7.0f, g[i] = (float)(x >> 16 & 0xffff) / 3.0f;
        d[i] = (double)(x >> 40) / 1e6, e[i] = (double)(x >> 11 & 0xfffff) / 1e3;
        text[i] = (char)('a' + (x >> 59) % 26);
    }
    text[N] = 0;
    saxpy(1.5f, N);
    cond(N);
    convert(N);
    smooth(N);
    printf("popcount %llu\n", (unsigned long long)popsum((const uint64_t *)a, N / 2));
    printf("max %u count %d\n", vmax(N), count(7, N));
    printf("dot %.9g wsum %lld\n", dot(N), (long long)wsum(N));
    printf("bits %llu crc %08x\n", (unsigned long long)bits(N), crc(N));
    printf("floats %016llx doubles %016llx ints %016llx\n",
           (unsigned long long)hash_words(f, sizeof f), (unsigned long long)hash_words(e, sizeof e),
           (unsigned long long)hash_words(c, sizeof c));
    printf("strlen %zu strchr %td memchr %td\n", strlen(text), strchr(text, 'q') - text,
           (char *)memchr(text, 'z', N) - text);
    qsort(b, N, sizeof b[0], cmp_u32);
    printf("sorted %016llx\n", (unsigned long long)hash_words(b, sizeof b));
    return 0;
}
