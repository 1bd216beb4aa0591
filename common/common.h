/*
 * common.h - helpers every libcrec module may use: error reporting and
 * checked allocation.  Nothing here depends on another module.
 */
#ifndef CREC_COMMON_H
#define CREC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "crec.h"

/*
 * Fill in err (which may be NULL) with code and a printf-style message, and
 * return code, so that a failure path reads `return crec_error_set(...)`.
 */
int crec_error_set(crec_error *err, crec_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Record that a file is corrupt.  Every corruption check goes through here,
 * so a debugger breakpoint on crec_error_corrupt stops at the first one.
 */
int crec_error_corrupt(crec_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

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
 * Make allocation number `n` (counting from 1 after this call) and every
 * later one fail; 0 turns failure injection off.  For tests only.
 */
void crec_alloc_fail_after(unsigned long n);

#endif /* CREC_COMMON_H */
