/*
 * crec_idxmangle.c - test tool: rewrite the index of a recording of one
 * thread (FILE.idx) with its restart points made wrong, and its checksum
 * made right again, so that only what uses the points can notice: an index
 * that reads well but lies (a bug, or a file edited by hand).
 *
 *   crec_idxmangle FILE seed     every byte of every point's seed xor 0xff
 *   crec_idxmangle FILE regs     every point's RBX plus one
 *   crec_idxmangle FILE noseed   every point's seed dropped
 *   crec_idxmangle FILE nocost   every span's cost made 0 ("not known", as
 *                                in an index of version 5)
 *
 * Prints how many points it changed; exit 1 when FILE.idx can't be read
 * or written.
 */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"

int main(int argc, char **argv)
{
    char ipath[4096];
    crec_error err = {0};
    crec_idx *ix = NULL;
    crec_fmt_buf b = {0};
    size_t changed = 0;
    FILE *f;
    int ok;

    if (argc != 3 || (strcmp(argv[2], "seed") && strcmp(argv[2], "regs") &&
                      strcmp(argv[2], "noseed") && strcmp(argv[2], "nocost"))) {
        fprintf(stderr, "usage: crec_idxmangle FILE seed|regs|noseed|nocost\n");
        return 2;
    }
    if (crec_idx_load(argv[1], 0, 0, NULL, 0, &ix, &err) != CREC_OK ||
        crec_idx_need_all(ix, &err) != CREC_OK) {
        fprintf(stderr, "crec_idxmangle: %s: %s\n", argv[1], err.msg);
        crec_idx_free(ix);
        return 1;
    }
    for (size_t i = 0; i < ix->nspan; i++) {
        crec_idx_span *s = &ix->spans[i];
        if (strcmp(argv[2], "nocost") == 0) {
            changed += s->cost != 0;
            s->cost = 0;
            continue;
        }
        if (!s->at_point || !s->point)
            continue;
        if (strcmp(argv[2], "seed") == 0) {
            for (size_t k = 0; k < 64 * s->nlines; k++)
                s->values[k] ^= 0xff;
            changed += s->nlines > 0;
        } else if (strcmp(argv[2], "regs") == 0) {
            s->point->regs.gpr[CREC_RBX]++;
            changed++;
        } else {
            changed += s->nlines > 0;
            s->nlines = 0;
        }
    }
    crec_idx_file(argv[1], 0, ipath, sizeof ipath);
    ok = crec_idx_encode(ix, &b) == CREC_OK && (f = fopen(ipath, "wb")) != NULL;
    if (ok) {
        ok = fwrite(b.data, 1, b.len, f) == b.len;
        ok = fclose(f) == 0 && ok;
    }
    crec_fmt_buf_free(&b);
    crec_idx_free(ix);
    if (!ok) {
        fprintf(stderr, "crec_idxmangle: can't write %s\n", ipath);
        return 1;
    }
    printf("%zu\n", changed);
    return 0;
}
