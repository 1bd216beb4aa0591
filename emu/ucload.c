/*
 * ucload.c - libunicorn loaded when crec first needs a CPU, not when it
 * starts.
 *
 * Debian's libunicorn is linked with BIND_NOW: loading it binds 13,000
 * symbols, 5.5 ms of every crec process on the bench machine, more than
 * what a memory query answered from the index then does.  So crec is not
 * linked with it: each Unicorn function crec calls is defined here, and
 * the first call loads the library (dlopen, RTLD_GLOBAL) and finds the
 * library's own function.  `crec info`, a query the index answers or a
 * gdb session that has not replayed yet never load it.
 *
 * ucfix.c's replacements of the library's internal functions keep working:
 * the executable exports them (emu/ucfix.sym, the linker's dynamic list),
 * and the library, bound when loaded, finds them first in the global scope
 * as it did when it was linked.  A program that links libunicorn itself
 * (the tests, the fuzzers) gets the same library back from dlopen.
 */
#include <assert.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emu/emu_int.h"

#define UCLOAD_NAME "libunicorn.so.2"

static pthread_once_t ucload_once = PTHREAD_ONCE_INIT;
static void *ucload_handle;
static char ucload_why[256]; /* why it could not be loaded */

static void ucload_open(void)
{
    const char *e;

    ucload_handle = dlopen(UCLOAD_NAME, RTLD_NOW | RTLD_GLOBAL);
    if (!ucload_handle) {
        e = dlerror();
        snprintf(ucload_why, sizeof ucload_why, "%s", e ? e : UCLOAD_NAME " could not be loaded");
    }
}

void *emu_uc_handle(void)
{
    pthread_once(&ucload_once, ucload_open);
    return ucload_handle;
}

/* The library's function `name`, or NULL when it can't be loaded. */
static void *ucload_sym(const char *name)
{
    void *h = emu_uc_handle();
    void *p = h ? dlsym(h, name) : NULL;

    if (h && !p)
        snprintf(ucload_why, sizeof ucload_why, "%s has no %s", UCLOAD_NAME, name);
    return p;
}

/* Find `name` once; its address is kept in *slot (a function pointer). */
#define UCLOAD_FN(slot, name)                                                                \
    do {                                                                                     \
        if (!__atomic_load_n(&(slot), __ATOMIC_ACQUIRE)) {                                  \
            void *p_ = ucload_sym(name);                                                     \
            __typeof__(slot) f_;                                                             \
            memcpy(&f_, &p_, sizeof f_);                                                     \
            __atomic_store_n(&(slot), f_, __ATOMIC_RELEASE);                                 \
        }                                                                                    \
    } while (0)

unsigned int uc_version(unsigned int *major, unsigned int *minor)
{
    static unsigned int (*fn)(unsigned int *, unsigned int *);

    UCLOAD_FN(fn, "uc_version");
    if (!fn) {
        *major = *minor = 0;
        return 0;
    }
    return fn(major, minor);
}

uc_err uc_open(uc_arch arch, uc_mode mode, uc_engine **uc)
{
    static uc_err (*fn)(uc_arch, uc_mode, uc_engine **);

    UCLOAD_FN(fn, "uc_open");
    return fn ? fn(arch, mode, uc) : UC_ERR_HANDLE;
}

const char *uc_strerror(uc_err code)
{
    static const char *(*fn)(uc_err);

    if (!emu_uc_handle())
        return ucload_why;
    UCLOAD_FN(fn, "uc_strerror");
    return fn ? fn(code) : ucload_why;
}

const char *emu_uc_load_error(void)
{
    return emu_uc_handle() ? NULL : ucload_why;
}

/* A function the library has once uc_open succeeded: only a CPU calls them. */
#define UCLOAD_CALL(ret, name, params, args)                                                 \
    ret name params                                                                          \
    {                                                                                        \
        static ret (*fn) params;                                                             \
        UCLOAD_FN(fn, #name);                                                                \
        return fn ? fn args : UC_ERR_HANDLE;                                                 \
    }

UCLOAD_CALL(uc_err, uc_close, (uc_engine * uc), (uc))
UCLOAD_CALL(uc_err, uc_reg_write, (uc_engine * uc, int regid, const void *value),
            (uc, regid, value))
UCLOAD_CALL(uc_err, uc_reg_read, (uc_engine * uc, int regid, void *value), (uc, regid, value))
UCLOAD_CALL(uc_err, uc_emu_start,
            (uc_engine * uc, uint64_t begin, uint64_t until, uint64_t timeout, size_t count),
            (uc, begin, until, timeout, count))
UCLOAD_CALL(uc_err, uc_emu_stop, (uc_engine * uc), (uc))
UCLOAD_CALL(uc_err, uc_hook_del, (uc_engine * uc, uc_hook hh), (uc, hh))
UCLOAD_CALL(uc_err, uc_mem_map_ptr,
            (uc_engine * uc, uint64_t address, size_t size, uint32_t perms, void *ptr),
            (uc, address, size, perms, ptr))
UCLOAD_CALL(uc_err, uc_mmio_map,
            (uc_engine * uc, uint64_t address, size_t size, uc_cb_mmio_read_t read_cb,
             void *user_data_read, uc_cb_mmio_write_t write_cb, void *user_data_write),
            (uc, address, size, read_cb, user_data_read, write_cb, user_data_write))
UCLOAD_CALL(uc_err, uc_mem_unmap, (uc_engine * uc, uint64_t address, size_t size),
            (uc, address, size))
UCLOAD_CALL(uc_err, uc_mem_regions, (uc_engine * uc, uc_mem_region **regions, uint32_t *count),
            (uc, regions, count))
UCLOAD_CALL(uc_err, uc_context_alloc, (uc_engine * uc, uc_context **context), (uc, context))
UCLOAD_CALL(uc_err, uc_free, (void *mem), (mem))
UCLOAD_CALL(uc_err, uc_context_save, (uc_engine * uc, uc_context *context), (uc, context))
UCLOAD_CALL(uc_err, uc_context_reg_write, (uc_context * ctx, int regid, const void *value),
            (ctx, regid, value))
UCLOAD_CALL(uc_err, uc_context_restore, (uc_engine * uc, uc_context *context), (uc, context))
UCLOAD_CALL(uc_err, uc_context_free, (uc_context * context), (context))

/* Variadic: the instruction of a UC_HOOK_INSN hook follows (crec adds no
 * UC_HOOK_TCG_OPCODE hook, the other kind with arguments after `end`). */
uc_err uc_hook_add(uc_engine *uc, uc_hook *hh, int type, void *callback, void *user_data,
                   uint64_t begin, uint64_t end, ...)
{
    static uc_err (*fn)(uc_engine *, uc_hook *, int, void *, void *, uint64_t, uint64_t, ...);
    va_list ap;
    int insn;

    assert(!(type & UC_HOOK_TCG_OPCODE));
    UCLOAD_FN(fn, "uc_hook_add");
    if (!fn)
        return UC_ERR_HANDLE;
    if (!(type & UC_HOOK_INSN))
        return fn(uc, hh, type, callback, user_data, begin, end);
    va_start(ap, end);
    insn = va_arg(ap, int);
    va_end(ap);
    return fn(uc, hh, type, callback, user_data, begin, end, insn);
}

/* Variadic: the control type says how many arguments follow (bits 26-29). */
uc_err uc_ctl(uc_engine *uc, uc_control_type control, ...)
{
    static uc_err (*fn)(uc_engine *, uc_control_type, ...);
    unsigned nr = ((unsigned)control >> 26) & 0xf;
    uintptr_t a[4] = {0};
    va_list ap;

    assert(nr <= 4);
    UCLOAD_FN(fn, "uc_ctl");
    if (!fn)
        return UC_ERR_HANDLE;
    va_start(ap, control);
    for (unsigned i = 0; i < nr && i < 4; i++)
        a[i] = va_arg(ap, uintptr_t);
    va_end(ap);
    switch (nr) {
    case 0:
        return fn(uc, control);
    case 1:
        return fn(uc, control, a[0]);
    case 2:
        return fn(uc, control, a[0], a[1]);
    case 3:
        return fn(uc, control, a[0], a[1], a[2]);
    default:
        return fn(uc, control, a[0], a[1], a[2], a[3]);
    }
}
