/*
 * crec_mutate.c - test tool: copy a recording with one byte of one stream
 * changed (xor), every stream written again through the writer, so that
 * every checksum is right and only the meaning of the bytes is wrong.
 *
 *   crec_mutate IN OUT STREAM OFFSET XOR
 *
 * STREAM is a stream name (EVENTS, KEYFRAMES, READS, ...), OFFSET a byte
 * of its uncompressed bytes (of the first stream of that name), XOR the
 * bits to flip (e.g. 1, 0x80).  Exits 0, 1 on error, 3 when the stream has
 * no such byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

int main(int argc, char **argv)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_writer *w = NULL;
    crec_error err = {0};
    uint64_t off;
    int flip, done = 0, rc;

    if (argc != 6) {
        fprintf(stderr, "usage: crec_mutate IN OUT STREAM OFFSET XOR\n");
        return 2;
    }
    off = strtoull(argv[4], NULL, 0);
    flip = (int)strtol(argv[5], NULL, 0);
    rc = crec_fmt_reader_open(argv[1], &r, &err);
    if (rc == CREC_OK)
        rc = crec_fmt_writer_open(argv[2], crec_fmt_reader_header(r), NULL, &w, &err);
    for (size_t i = 0; rc == CREC_OK && i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        uint8_t *buf;
        if ((rc = crec_fmt_reader_stream(r, i, &si, &err)) != CREC_OK)
            break;
        if (si.type == CREC_FMT_S_HEADER || si.type == CREC_FMT_S_DIRECTORY)
            continue;
        if (!(buf = malloc(si.raw_bytes ? si.raw_bytes : 1))) {
            rc = crec_error_set(&err, CREC_ERR_NOMEM, "out of memory");
            break;
        }
        rc = crec_fmt_read_at(r, si.type, si.tid, 0, buf, si.raw_bytes, &err);
        if (rc == CREC_OK && !done && strcmp(crec_fmt_stream_name(si.type), argv[3]) == 0 &&
            off < si.raw_bytes) {
            buf[off] ^= (uint8_t)flip;
            done = 1;
        }
        if (rc == CREC_OK)
            rc = crec_fmt_write(w, si.type, si.tid, buf, si.raw_bytes, &err);
        free(buf);
    }
    if (rc == CREC_OK)
        rc = crec_fmt_writer_close(w, &err);
    else
        crec_fmt_writer_free(w);
    crec_fmt_reader_free(r);
    if (rc != CREC_OK) {
        fprintf(stderr, "crec_mutate: %s\n", err.msg);
        return 1;
    }
    return done ? 0 : 3;
}
