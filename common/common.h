/*
 * common.h - helpers every libcrec module may use: error reporting,
 * checked allocation, and the byte-level encodings (little-endian
 * integers, LEB128 varints) that the recording and the index are built
 * from.  Nothing here depends on another module.
 */
#ifndef CREC_COMMON_H
#define CREC_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "crec.h"

/*
 * Fill in err (which may be NULL) with code and a printf-style message, and
 * return code, so that a failure path reads `return crec_error_set(...)`.
 */
int crec_error_set(crec_error *err, crec_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Record that a file is corrupt: fill err with CREC_ERR_CORRUPT and the
 * message, and return CREC_ERR_CORRUPT.  Every corruption check goes
 * through crec_error_corrupt_at, so one debugger breakpoint there stops at
 * the first check that fails.  Debug builds (CREC_DEBUG: `make DEBUG=1`,
 * the sanitizer and fuzz builds) also append the source line of the check
 * to the message, as SQLite's CORRUPT_BKPT logs it; other builds don't
 * carry the file names.
 */
#ifdef CREC_DEBUG
#define crec_error_corrupt(err, ...) crec_error_corrupt_at((err), __FILE__, __LINE__, __VA_ARGS__)
#else
#define crec_error_corrupt(err, ...) crec_error_corrupt_at((err), NULL, 0, __VA_ARGS__)
#endif
int crec_error_corrupt_at(crec_error *err, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clear err back to CREC_OK with an empty message. */
void crec_error_clear(crec_error *err);

/*
 * Allocation hooks.  Tests replace them to make the Nth allocation fail;
 * library code calls these instead of malloc/calloc/realloc directly.
 */
void *crec_malloc(size_t n);
void *crec_calloc(size_t count, size_t size);
void *crec_realloc(void *p, size_t n);
void crec_free(void *p);

/*
 * Room for `need` elements of `size` bytes in the array p of *cap
 * elements: p itself if it has the room, else p reallocated to twice its
 * capacity (at least `first` and at least `need`), with *cap updated.
 * @return NULL when out of memory or the size overflows; p is then
 * unchanged and still owned by the caller.
 */
void *crec_grow(void *p, size_t *cap, size_t need, size_t size, size_t first);

/*
 * qsort of n elements of `size` bytes, for an array that may be NULL when
 * it is empty: qsort's base must never be NULL, even for 0 elements (C11
 * 7.22.5), and an empty table read from a file is normal input.
 */
static inline void crec_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/*
 * Make allocation number `n` (counting from 1 after this call) and every
 * later one fail; 0 turns failure injection off.  For tests only.
 */
void crec_alloc_fail_after(unsigned long n);

/* ---- bytes: little-endian integers and varints ----------------------------
 * The one implementation of the primitive encodings of docs/FORMAT.md §1,
 * for the recording (format/), the index file (index/) and guest register
 * bytes (emu/).  Shifts only: the same result on a big-endian host. */

/* Store the low n (1..8) bytes of v at p, least significant first. */
static inline void crec_le_put(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The n (1..8) bytes at p as a little-endian number. */
static inline uint64_t crec_le_get(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* The microseconds of CPU the calling thread used since *since, at least 1
 * (0 stands for "not known"), and *since set to now: what a span of the
 * index cost to record or to replay (index.h crec_idx_span.cost). */
static inline uint64_t crec_thread_cpu_lap(uint64_t *since)
{
    struct timespec ts;
    uint64_t now, d;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    d = now > *since ? now - *since : 1;
    *since = now;
    return d;
}

/*
 * Start a host thread of crec's own (stack: its size, 0 for the default)
 * with every signal blocked: a signal sent to crec (the guest's, SIGINT,
 * the guest's timers) must reach the thread that runs the guest, whose
 * blocking calls it interrupts.  @return pthread_create's.
 */
int crec_thread_start(pthread_t *th, size_t stack, void *(*fn)(void *), void *arg);

/* Longest varint: 10 bytes, the 10th holding only bit 63. */
#define CREC_VARINT_MAX 10

/* Unsigned LEB128 of v into out.  @return its length (1..10). */
size_t crec_varint_put(uint8_t out[CREC_VARINT_MAX], uint64_t v);

/* Decode the varint at p[0..len).  @return its length (1..10) and *v; 0
 * when p ends inside it; -1 when it is longer than 10 bytes or its 10th
 * byte holds more than bit 63 (such a number is never written). */
int crec_varint_get(const uint8_t *p, size_t len, uint64_t *v);

#endif /* CREC_COMMON_H */
