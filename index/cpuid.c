/*
 * cpuid.c - crec_recorded_cpuid(): the CPUID answers the recorded program
 * was shown, from the recording's header (the gdb server describes AVX
 * registers only when the program could see AVX).
 */
#include "common/common.h"
#include "index/index_int.h"

int crec_recorded_cpuid(crec_recording *rec, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
    const crec_fmt_header *h = crec_fmt_reader_header(rec->r);

    for (size_t i = 0; h && i < h->ncpuid; i++) {
        const crec_fmt_cpuid *c = &h->cpuid[i];
        if (c->leaf == leaf && c->subleaf == subleaf) {
            out[0] = c->eax, out[1] = c->ebx, out[2] = c->ecx, out[3] = c->edx;
            return CREC_OK;
        }
    }
    return CREC_ERR_NOTFOUND;
}
