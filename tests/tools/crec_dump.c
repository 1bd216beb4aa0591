/*
 * crec_dump.c - test tool: print bytes of one stream of a recording as hex.
 *
 *   crec_dump FILE STREAM TID OFFSET N
 *       STREAM is a stream's name (READS, EVENTS, SEQ, ...) or number; N
 *       bytes (at most 64) of thread TID's stream from uncompressed
 *       OFFSET, as 2*N hex digits in file order on one line.
 *   Exit 0, or 1 with a message (no such stream, range past its end).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

static int stream_type(const char *s)
{
    for (int t = 1; t <= CREC_FMT_S_MAX; t++)
        if (strcmp(crec_fmt_stream_name(t), s) == 0)
            return t;
    return atoi(s);
}

int main(int argc, char **argv)
{
    crec_fmt_reader *r;
    crec_error err = {0};
    uint8_t buf[64];

    if (argc != 6) {
        fprintf(stderr, "usage: crec_dump FILE STREAM TID OFFSET N\n");
        return 2;
    }
    int type = stream_type(argv[2]);
    uint32_t tid = (uint32_t)strtoul(argv[3], NULL, 0);
    uint64_t off = strtoull(argv[4], NULL, 0);
    size_t n = strtoul(argv[5], NULL, 0);
    if (type < 1 || type > CREC_FMT_S_MAX || n == 0 || n > sizeof buf) {
        fprintf(stderr, "crec_dump: bad stream or length\n");
        return 2;
    }
    if (crec_fmt_reader_open(argv[1], &r, &err) != CREC_OK) {
        fprintf(stderr, "crec_dump: %s\n", err.msg);
        return 1;
    }
    int rc = crec_fmt_read_at(r, type, tid, off, buf, n, &err);
    crec_fmt_reader_free(r);
    if (rc != CREC_OK) {
        fprintf(stderr, "crec_dump: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        printf("%02x", buf[i]);
    printf("\n");
    return 0;
}
