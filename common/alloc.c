/*
 * alloc.c - allocation wrappers with failure injection, so that tests can
 * walk every out-of-memory path the way SQLite's malloc tests do.
 */
#include <stdlib.h>

#include "common/common.h"

/* 0: never fail.  Otherwise the number of allocations left before failing.
 * Atomic: replay jobs and the index build allocate on several threads. */
static unsigned long alloc_budget;

void crec_alloc_fail_after(unsigned long n)
{
    __atomic_store_n(&alloc_budget, n, __ATOMIC_RELAXED);
}

static int alloc_should_fail(void)
{
    unsigned long b = __atomic_load_n(&alloc_budget, __ATOMIC_RELAXED);

    for (;;) {
        if (b == 0)
            return 0;
        if (b == 1)
            return 1; /* stays at 1: every later allocation fails too */
        if (__atomic_compare_exchange_n(&alloc_budget, &b, b - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return 0;
    }
}

void *crec_malloc(size_t n)
{
    return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}

void *crec_calloc(size_t count, size_t size)
{
    return alloc_should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *crec_realloc(void *p, size_t n)
{
    return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

void crec_free(void *p)
{
    free(p);
}

void *crec_grow(void *p, size_t *cap, size_t need, size_t size, size_t first)
{
    size_t n = *cap ? *cap : first;
    void *q;

    if (need <= *cap)
        return p;
    while (n < need && n <= SIZE_MAX / 2)
        n *= 2;
    if (n < need || n > SIZE_MAX / size)
        return NULL;
    q = crec_realloc(p, n * size);
    if (q)
        *cap = n;
    return q;
}
