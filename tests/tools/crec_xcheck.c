/*
 * crec_xcheck.c - cross-check the query engine: N random (address, time)
 * queries answered through the index must equal the answers of a full
 * sequential replay from instruction 0 (crec_open with CREC_OPEN_NO_INDEX).
 * Addresses are picked among the lines the index says a random segment
 * touched.
 *
 *   crec_xcheck FILE N [SEED]
 *
 * Prints "xcheck: N queries, M equal, K unknown" and exits 0 when all
 * are equal, 1 otherwise (each difference is printed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "crec.h"
#include "index/index.h"
#include "index/index_int.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    crec_recording *a = NULL, *b = NULL;
    crec_error err = {0};
    uint64_t ib, tb;
    int built, bad = 0, unknown = 0, n;

    if (argc < 3) {
        fprintf(stderr, "usage: crec_xcheck FILE N [SEED]\n");
        return 2;
    }
    n = atoi(argv[2]);
    if (argc > 3)
        rng = strtoull(argv[3], NULL, 0) | 1;
    if (crec_open(argv[1], 0, &a, &err) || crec_open(argv[1], CREC_OPEN_NO_INDEX, &b, &err) ||
        crec_index_info(a, &ib, &tb, &built, &err)) {
        fprintf(stderr, "crec_xcheck: %s\n", err.msg);
        return 1;
    }
    const crec_idx *ix = a->ix;
    for (int q = 0; q < n; q++) {
        uint8_t va[8], ka[8], vb[8], kb[8];
        int sa, sb;
        size_t s;
        uint64_t addr, t;
        int tries = 0;
        do
            s = (size_t)(rnd() % ix->nseg);
        while (ix->segs[s].ntouch == 0 && ++tries < 1000);
        if (ix->segs[s].ntouch == 0)
            break;
        addr = (ix->segs[s].touch[rnd() % ix->segs[s].ntouch] << CREC_IDX_LINE_SHIFT) +
               (rnd() % 8) * 8;
        t = rnd() % (crec_length(a) + 1);
        if (crec_seek(a, t, &err) || crec_seek(b, t, &err) ||
            crec_read_memory(a, addr, 8, va, ka, &sa, &err) ||
            crec_read_memory(b, addr, 8, vb, kb, &sb, &err)) {
            printf("query 0x%" PRIx64 "@%" PRIu64 ": %s\n", addr, t, err.msg);
            bad++;
            continue;
        }
        for (int i = 0; i < 8; i++)
            if (ka[i] != kb[i] || (ka[i] && va[i] != vb[i])) {
                printf("differ 0x%" PRIx64 "@%" PRIu64 " byte %d: index %s%02x (path %d), "
                       "full replay %s%02x (path %d)\n", addr, t, i, ka[i] ? "" : "?", va[i], sa,
                       kb[i] ? "" : "?", vb[i], sb);
                bad++;
                break;
            }
        for (int i = 0; i < 8; i++)
            if (!ka[i]) {
                unknown++;
                break;
            }
    }
    printf("xcheck: %d queries, %d equal, %d with unknown bytes; index %" PRIu64
           " bytes, trace %" PRIu64 " bytes\n", n, n - bad, unknown, ib, tb);
    crec_close(a);
    crec_close(b);
    return bad ? 1 : 0;
}
