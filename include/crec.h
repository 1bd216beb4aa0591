/*
 * crec.h - the public API of libcrec, the crec record/replay engine.
 *
 * This is the only header that code outside libcrec (the crec command, the
 * gdb server, other clients) includes.  Handles are opaque; every function
 * that can fail returns a crec_err code and, where a crec_error is passed,
 * fills it with a one-line message the caller can print as it is.
 */
#ifndef CREC_H
#define CREC_H

#include <stddef.h>
#include <stdint.h>

#define CREC_VERSION_STRING "0.1.0"

/*
 * Error codes.  Values are stable: they may be stored or compared by
 * clients, so a new code is only ever appended.
 */
typedef enum crec_err {
    CREC_OK = 0,
    CREC_ERR_NOMEM = 1,       /* an allocation failed */
    CREC_ERR_IO = 2,          /* a read, write, open or seek failed */
    CREC_ERR_CORRUPT = 3,     /* a .crec file is malformed */
    CREC_ERR_VERSION = 4,     /* a .crec file of a format version we can't read */
    CREC_ERR_TRUNCATED = 5,   /* a .crec file ends early */
    CREC_ERR_ARG = 6,         /* a bad argument from the caller */
    CREC_ERR_UNSUPPORTED = 7, /* a syscall, instruction or feature we lack */
    CREC_ERR_GUEST = 8,       /* the guest program can't be loaded or run */
    CREC_ERR_EMU = 9,         /* Unicorn reported an error */
    CREC_ERR_DIVERGENCE = 10, /* replay did not match the recording */
    CREC_ERR_NOTFOUND = 11,   /* a stream, symbol or record is not there */
    CREC_ERR_LIMIT = 12,      /* a size or count is over a sane limit */
} crec_err;

/* Largest message a crec_error holds, including the terminating NUL. */
#define CREC_ERROR_MSG_MAX 512

/*
 * An error code with the message that explains it.  Functions that fail
 * fill it in; a zeroed crec_error means "no error".
 */
typedef struct crec_error {
    crec_err code;
    char msg[CREC_ERROR_MSG_MAX];
} crec_error;

/*
 * The register state of one guest thread: what a key frame holds and what a
 * register query reads.  In memory only; the file encoding is field by
 * field (docs/FORMAT.md), never this struct.
 */
enum crec_gpr {
    CREC_RAX, CREC_RCX, CREC_RDX, CREC_RBX, CREC_RSP, CREC_RBP, CREC_RSI, CREC_RDI,
    CREC_R8, CREC_R9, CREC_R10, CREC_R11, CREC_R12, CREC_R13, CREC_R14, CREC_R15,
    CREC_NGPR
};

typedef struct crec_regs {
    uint64_t gpr[CREC_NGPR]; /* indexed by enum crec_gpr (x86 encoding order) */
    uint64_t rip;
    uint64_t rflags;
    uint64_t fs_base;
    uint64_t gs_base;
    uint8_t xmm[16][16]; /* xmm0..xmm15, little-endian bytes as in the guest */
    uint32_t mxcsr;
    uint16_t fpcw;       /* x87 control word */
    uint16_t fpsw;       /* x87 status word */
    uint16_t fptag;      /* x87 tag word, as Unicorn reports it */
    uint8_t st[8][10];   /* st0..st7, 80-bit little-endian bytes */
} crec_regs;

/*! crec_strerror() :
 *  @return a static, constant description of an error code
 *          ("unknown error" for a value that is not a crec_err). */
const char *crec_strerror(int code);

#endif /* CREC_H */
