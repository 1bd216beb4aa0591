/*
 * run.c - crec_run and crec_find_program (include/crec.h): a program run
 * under emu/ with nobody watching, and the look-up that both it and
 * crec_record start from.
 */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

int crec_find_program(const char *prog, char *path, size_t size, crec_error *err)
{
    switch (crec_emu_find_program(prog, path, size, err)) {
    case CREC_FIND_OK:
        return CREC_OK;
    case CREC_FIND_MISSING:
        if (err)
            err->code = CREC_ERR_NOTFOUND;
        return CREC_ERR_NOTFOUND;
    default:
        if (err)
            err->code = CREC_ERR_GUEST;
        return CREC_ERR_GUEST;
    }
}

int crec_run(const crec_run_options *o, const char *path, char *const argv[],
             char *const envp[], crec_exit *out, uint64_t *instructions, crec_error *err)
{
    struct crec_emu_options eo = {0};
    struct crec_emu_exit ex;
    crec_emu *e = NULL;
    int rc;

    memset(out, 0, sizeof *out);
    if (instructions)
        *instructions = 0;
    eo.strace = o->strace;
    eo.strict = o->strict;
    eo.log = o->log;
    eo.slice = o->threads.slice;
    eo.cpus = o->threads.cpus;
    eo.chaos = o->threads.chaos;
    eo.chaos_seed = o->threads.chaos_seed;
    rc = crec_emu_create(&e, &eo, err);
    if (rc == CREC_OK)
        rc = crec_emu_load(e, path, argv, envp, err);
    if (rc == CREC_OK)
        rc = crec_emu_run(e, &ex, err);
    if (instructions && e)
        *instructions = crec_emu_cpu_icount(crec_emu_cpu_of(e));
    out->forked = e && crec_emu_forked(e);
    crec_emu_free(e);
    if (rc != CREC_OK)
        return rc;
    out->status = ex.status;
    out->signo = ex.signo;
    out->deadlock = ex.deadlock;
    snprintf(out->msg, sizeof out->msg, "%s", ex.msg);
    return CREC_OK;
}
