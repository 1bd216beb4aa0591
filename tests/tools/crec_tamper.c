/*
 * crec_tamper.c - test tool: copy a recording with one thing changed and
 * every checksum made right again, so that only the reader's or the
 * replay's own checks can notice.
 *
 *   crec_tamper IN OUT HEX16
 *       HEX16 is 8 bytes as 16 hex digits (in memory order); the first
 *       place they appear in the READS stream of thread 1 gets its first
 *       byte xor 1.
 *   crec_tamper IN OUT --header FIELD=VALUE
 *       one header value (page_size, cache_granule, cache_entries, arch,
 *       host_order, keyframe_interval, snapshot_interval) set to VALUE.
 *   crec_tamper IN OUT --listing-len DELTA
 *       the first mapping of the first key frame's memory-map listing
 *       (EVENTS of thread 1) made DELTA bytes longer: a memory map no
 *       replay can rebuild, in a well-formed file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

struct change {
    int reads;                /* flip the first match of `pattern` in READS */
    uint8_t pattern[8];
    int listing;              /* lengthen the first listed mapping by `delta` */
    uint64_t delta;
    int done;
};

/* The EVENTS bytes with the first LISTING mapping lengthened; the record
 * keeps its size, so no offset a key frame holds moves. */
static int lengthen_listing(uint8_t *buf, uint64_t n, struct change *ch, crec_error *err)
{
    crec_fmt_cur c = {buf, (size_t)n, 0};

    while (!ch->done && c.pos < c.len) {
        size_t start = c.pos;
        int kind = buf[c.pos++];
        uint64_t len;
        crec_fmt_event ev;
        crec_fmt_buf out = {0};
        int rc = crec_fmt_cur_varint(&c, &len, "record length", err);
        if (rc != CREC_OK || len > c.len - c.pos)
            return rc ? rc : crec_error_corrupt(err, "EVENTS record past the stream's end");
        if (kind == CREC_FMT_K_MMAP &&
            crec_fmt_ev_decode(kind, buf + c.pos, (size_t)len, &ev, err) == CREC_OK &&
            (ev.u.mmap.flags & CREC_FMT_EV_LISTING)) {
            ev.u.mmap.len += ch->delta;
            rc = crec_fmt_ev_encode(&out, &ev);
            if (rc == CREC_OK && out.len != c.pos + len - start)
                rc = crec_error_set(err, CREC_ERR_ARG, "the changed record has another size");
            if (rc == CREC_OK) {
                memcpy(buf + start, out.data, out.len);
                ch->done = 1;
            }
            crec_fmt_buf_free(&out);
            if (rc != CREC_OK)
                return rc;
        }
        c.pos += (size_t)len;
    }
    return CREC_OK;
}

static int copy_stream(crec_fmt_reader *r, crec_fmt_writer *w, const crec_fmt_stream_info *si,
                       struct change *ch, crec_error *err)
{
    uint8_t *buf = malloc(si->raw_bytes ? si->raw_bytes : 1);
    int rc;

    if (!buf)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rc = crec_fmt_read_at(r, si->type, si->tid, 0, buf, si->raw_bytes, err);
    if (rc == CREC_OK && ch->reads && si->type == CREC_FMT_S_READS && !ch->done) {
        for (uint64_t i = 0; i + 8 <= si->raw_bytes; i++)
            if (memcmp(buf + i, ch->pattern, 8) == 0) {
                buf[i] ^= 1;
                ch->done = 1;
                break;
            }
    }
    if (rc == CREC_OK && ch->listing && si->type == CREC_FMT_S_EVENTS && si->tid == 1)
        rc = lengthen_listing(buf, si->raw_bytes, ch, err);
    if (rc == CREC_OK)
        rc = crec_fmt_write(w, si->type, si->tid, buf, si->raw_bytes, err);
    free(buf);
    return rc;
}

/* FIELD=VALUE into the header h.  @return 0, or -1 for an unknown field. */
static int set_header(crec_fmt_header *h, const char *arg)
{
    const char *eq = strchr(arg, '=');
    uint64_t v;

    if (!eq)
        return -1;
    v = strtoull(eq + 1, NULL, 0);
    if (!strncmp(arg, "page_size=", 10))
        h->page_size = v;
    else if (!strncmp(arg, "cache_granule=", 14))
        h->cache_granule = v;
    else if (!strncmp(arg, "cache_entries=", 14))
        h->cache_entries = v;
    else if (!strncmp(arg, "arch=", 5))
        h->arch = (uint32_t)v;
    else if (!strncmp(arg, "host_order=", 11))
        h->host_order = (uint32_t)v;
    else if (!strncmp(arg, "keyframe_interval=", 18))
        h->keyframe_interval = v;
    else if (!strncmp(arg, "snapshot_interval=", 18))
        h->snapshot_interval = v;
    else
        return -1;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: crec_tamper IN OUT HEX16\n"
                    "       crec_tamper IN OUT --header FIELD=VALUE\n"
                    "       crec_tamper IN OUT --listing-len DELTA\n");
    return 2;
}

int main(int argc, char **argv)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_writer *w = NULL;
    crec_fmt_header h;
    crec_error err = {0};
    struct change ch = {0};
    const char *header = NULL;
    int rc;

    if (argc == 5 && strcmp(argv[3], "--header") == 0) {
        header = argv[4];
        ch.done = 1;
    } else if (argc == 5 && strcmp(argv[3], "--listing-len") == 0) {
        ch.listing = 1;
        ch.delta = strtoull(argv[4], NULL, 0);
    } else if (argc == 4 && strlen(argv[3]) == 16) {
        ch.reads = 1;
        for (int i = 0; i < 8; i++) {
            char byte[3] = {argv[3][2 * i], argv[3][2 * i + 1], 0};
            ch.pattern[i] = (uint8_t)strtoul(byte, NULL, 16);
        }
    } else {
        return usage();
    }
    rc = crec_fmt_reader_open(argv[1], &r, &err);
    if (rc == CREC_OK) {
        h = *crec_fmt_reader_header(r);
        if (header && set_header(&h, header) != 0) {
            crec_fmt_reader_free(r);
            return usage();
        }
        rc = crec_fmt_writer_open(argv[2], &h, NULL, &w, &err);
    }
    for (size_t i = 0; rc == CREC_OK && i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        rc = crec_fmt_reader_stream(r, i, &si, &err);
        if (rc == CREC_OK && si.type != CREC_FMT_S_HEADER && si.type != CREC_FMT_S_DIRECTORY)
            rc = copy_stream(r, w, &si, &ch, &err);
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
    if (!ch.done) {
        fprintf(stderr, "crec_tamper: nothing to change found in %s\n", argv[1]);
        return 1;
    }
    return 0;
}
