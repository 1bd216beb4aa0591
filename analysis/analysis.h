/*
 * analysis.h - private to analysis/: what its files share.
 *
 * analysis/ is a client of the public API (include/crec.h): symbols and
 * source lines (sym.c), the shadow call stack (stack.c), the profiler
 * (profile.c), expressions (expr.c), find (find.c), retroactive printf
 * (printf.c) and back-trace (backtrace.c).  It never sees the replayer.
 */
#ifndef CREC_ANALYSIS_H
#define CREC_ANALYSIS_H

#include <stdint.h>

#include "crec.h"

/* What a block's last instruction does to the call stack (sym.c). */
enum an_flow {
    AN_FLOW_OTHER = 0, /* falls through or branches inside the function */
    AN_FLOW_CALL,      /* call: the next block is the callee */
    AN_FLOW_RET,       /* ret */
    AN_FLOW_JMP,       /* an unconditional jmp (direct or not): maybe a tail call */
    AN_FLOW_SYSCALL,
};

/*! an_block_flow() : decode the block of n instructions at addr (memoised
 *  by address and n): what its last instruction is, and where that
 *  instruction lies and ends (*last, *next).  @return an enum an_flow. */
int an_block_flow(crec_symtab *s, uint64_t addr, uint32_t n, uint64_t *last, uint64_t *next);

/*! an_func_of() : @return the start of the function holding addr (0: no
 *  symbol), from the recording's symbols only (no source lines: cheap). */
uint64_t an_func_of(crec_symtab *s, uint64_t addr);

/*! an_is_function_start() : @return 1 if a symbol starts exactly at addr. */
int an_is_function_start(crec_symtab *s, uint64_t addr);

/*! an_error() : fill err (may be NULL) with code and a message.
 *  @return code. */
int an_error(crec_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*! an_recording() : @return the recording a symtab describes. */
crec_recording *an_recording(crec_symtab *s);

/*! an_reg_id() : a register name ("rax", "eax", "al", "rip", "r8d") as the
 *  id crec_exec_reg takes, with the bits it keeps (*width: 8, 16, 32, 64)
 *  and shift (8 for ah..dh).  @return the id, or -1. */
int an_reg_id(const char *name, size_t len, unsigned *width, unsigned *shift);

/* Where an expression reads registers and memory (expr.c): at a
 * callback's point (crec_expr_eval), or from a value crec_watch reported. */
struct an_source {
    void *ctx;
    uint64_t (*reg)(void *ctx, int id);
    int (*read)(void *ctx, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                crec_error *err);
    crec_error *err;
};

/*! an_expr_value() : evaluate e reading from src (NULL: constants only,
 *  CREC_ERR_ARG if it reads anything).  @return CREC_OK or an error. */
int an_expr_value(const crec_expr *e, const struct an_source *src, uint64_t *v, int *known);

/*! an_expr_is_string() : @return 1 for a (char*) cast: printf's %s reads a string there. */
int an_expr_is_string(const crec_expr *e);

#endif /* CREC_ANALYSIS_H */
