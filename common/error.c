/*
 * error.c - error codes, their names and the messages that travel with them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"

static const char *const error_names[] = {
    [CREC_OK] = "success",
    [CREC_ERR_NOMEM] = "out of memory",
    [CREC_ERR_IO] = "I/O error",
    [CREC_ERR_CORRUPT] = "corrupt recording",
    [CREC_ERR_VERSION] = "unsupported format version",
    [CREC_ERR_TRUNCATED] = "truncated recording",
    [CREC_ERR_ARG] = "invalid argument",
    [CREC_ERR_UNSUPPORTED] = "unsupported",
    [CREC_ERR_GUEST] = "guest program error",
    [CREC_ERR_EMU] = "emulator error",
    [CREC_ERR_DIVERGENCE] = "replay diverged from the recording",
    [CREC_ERR_NOTFOUND] = "not found",
    [CREC_ERR_LIMIT] = "over a size limit",
};

const char *crec_strerror(int code)
{
    if (code < 0 || (size_t)code >= sizeof error_names / sizeof error_names[0])
        return "unknown error";
    return error_names[code];
}

static int error_vset(crec_error *err, crec_err code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

int crec_error_set(crec_error *err, crec_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int crec_error_corrupt_at(crec_error *err, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, CREC_ERR_CORRUPT, fmt, ap);
    va_end(ap);
    if (err && file) { /* a debug build: where the check is */
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " [check at %s:%d]", file, line);
    }
    return CREC_ERR_CORRUPT;
}

void crec_error_clear(crec_error *err)
{
    if (err) {
        err->code = CREC_OK;
        err->msg[0] = '\0';
    }
}
