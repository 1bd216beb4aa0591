/*
 * crec_tamper.c - test tool: copy a recording, changing one value in a
 * thread's read stream, with every checksum made right again, so that only
 * replay itself can notice.
 *
 *   crec_tamper IN OUT HEX16
 *
 * HEX16 is 8 bytes as 16 hex digits (in memory order); the first place
 * they appear in the READS stream of thread 1 gets its first byte xor 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

static int copy_stream(crec_fmt_reader *r, crec_fmt_writer *w, const crec_fmt_stream_info *si,
                       const uint8_t pattern[8], int *found, crec_error *err)
{
    uint8_t *buf = malloc(si->raw_bytes ? si->raw_bytes : 1);
    int rc;

    if (!buf)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rc = crec_fmt_read_at(r, si->type, si->tid, 0, buf, si->raw_bytes, err);
    if (rc == CREC_OK && si->type == CREC_FMT_S_READS && !*found) {
        for (uint64_t i = 0; i + 8 <= si->raw_bytes; i++)
            if (memcmp(buf + i, pattern, 8) == 0) {
                buf[i] ^= 1;
                *found = 1;
                break;
            }
    }
    if (rc == CREC_OK)
        rc = crec_fmt_write(w, si->type, si->tid, buf, si->raw_bytes, err);
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_writer *w = NULL;
    crec_error err = {0};
    uint8_t pattern[8];
    int found = 0, rc;

    if (argc != 4 || strlen(argv[3]) != 16) {
        fprintf(stderr, "usage: crec_tamper IN OUT HEX16\n");
        return 2;
    }
    for (int i = 0; i < 8; i++) {
        char byte[3] = {argv[3][2 * i], argv[3][2 * i + 1], 0};
        pattern[i] = (uint8_t)strtoul(byte, NULL, 16);
    }
    rc = crec_fmt_reader_open(argv[1], &r, &err);
    if (rc == CREC_OK)
        rc = crec_fmt_writer_open(argv[2], crec_fmt_reader_header(r), NULL, &w, &err);
    for (size_t i = 0; rc == CREC_OK && i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        rc = crec_fmt_reader_stream(r, i, &si, &err);
        if (rc == CREC_OK && si.type != CREC_FMT_S_HEADER && si.type != CREC_FMT_S_DIRECTORY)
            rc = copy_stream(r, w, &si, pattern, &found, &err);
    }
    if (rc == CREC_OK)
        rc = crec_fmt_writer_close(w, &err);
    else
        crec_fmt_writer_free(w);
    crec_fmt_reader_free(r);
    if (rc != CREC_OK) {
        fprintf(stderr, "crec_tamper: %s\n", err.msg);
        return 1;
    }
    if (!found) {
        fprintf(stderr, "crec_tamper: value %s not found in the read stream\n", argv[3]);
        return 1;
    }
    return 0;
}
