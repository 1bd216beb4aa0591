/*
 * bytes.c - varints (unsigned LEB128, docs/FORMAT.md §1): 7 bits a byte,
 * the low group first, the high bit set on every byte but the last; at
 * most 10 bytes, the 10th only 0 or 1.  300 is AC 02.
 */
#include "common/common.h"

size_t crec_varint_put(uint8_t out[CREC_VARINT_MAX], uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int crec_varint_get(const uint8_t *p, size_t len, uint64_t *v)
{
    uint64_t r = 0;

    for (size_t i = 0; i < CREC_VARINT_MAX; i++) {
        if (i >= len)
            return 0;
        if (i == CREC_VARINT_MAX - 1 && p[i] > 1)
            return -1;
        r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return (int)i + 1;
        }
    }
    return -1;
}
