/*
 * crec_refield.c - test tool: copy a recording with one decoded field of
 * one record changed, every checksum right (tests/tools/refield.h).
 *
 *   crec_refield IN OUT STREAM KIND N FIELD set|add|xor VALUE
 *
 * STREAM is a stream name (EVENTS, KEYFRAMES, SNAPSHOTS, CODE, SYMBOLS),
 * KIND a record kind number (0x13 for MMAP, 0x10 SYSCALL ...; -1: any), N
 * which one of them (from 0), FIELD the index of the field in refield.h's
 * table for that kind (MMAP: 0 op, 1 addr, 2 len, 3 prot ...), VALUE a
 * number.  Exits 0, 1 on error, 3 when there is no such record.
 */
#include <stdio.h>

#include "tests/tools/refield.h"

int main(int argc, char **argv)
{
    struct rf_file f;
    crec_error err = {0};
    int kind, op, found = 0;
    unsigned long n, field;
    uint64_t value;

    if (argc != 9) {
        fprintf(stderr, "usage: crec_refield IN OUT STREAM KIND N FIELD set|add|xor VALUE\n");
        return 2;
    }
    kind = (int)strtol(argv[4], NULL, 0);
    n = strtoul(argv[5], NULL, 0);
    field = strtoul(argv[6], NULL, 0);
    op = argv[7][0] == 's' ? RF_SET : argv[7][0] == 'a' ? RF_ADD : RF_XOR;
    value = strtoull(argv[8], NULL, 0);
    if (rf_load(argv[1], &f, &err) != 0) {
        fprintf(stderr, "crec_refield: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < f.nstreams && !found; i++) {
        struct rf_stream *s = &f.streams[i];
        if (strcmp(crec_fmt_stream_name(s->type), argv[3]) != 0)
            continue;
        for (size_t k = 0; k < s->nrecs && !found; k++)
            if ((kind < 0 || s->recs[k].kind == kind) && n-- == 0) {
                rf_change_record(&s->recs[k], f.hdr.version, (unsigned)field, op, value);
                found = 1;
            }
    }
    if (found && rf_save(&f, argv[2], &err) != 0) {
        fprintf(stderr, "crec_refield: %s\n", err.msg);
        rf_free(&f);
        return 1;
    }
    rf_free(&f);
    return found ? 0 : 3;
}
