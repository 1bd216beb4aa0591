/*
 * refield.h - a recording taken apart into records, one decoded field of
 * one record changed, and put together again with every checksum right:
 * what a buggy or hostile writer could produce, that only the meaning of
 * the fields can betray.  Shared by the fuzz target tests/fuzz/fuzz_fields.c
 * and the test tool tests/tools/crec_refield.c (static functions only).
 *
 * A change names a stream (its type), a record (its index in the stream,
 * modulo the count), a field (an index into the record kind's table below,
 * modulo its size) and what to do: set, add or xor a value.  The bare
 * streams (READS, SEQ) and BLOB bodies have no fields: their bytes are
 * xored at an offset instead.
 */
#ifndef CREC_TESTS_REFIELD_H
#define CREC_TESTS_REFIELD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "format/format.h"

/* Each user takes what it needs of these. */
#define RF_FN static __attribute__((unused))

enum rf_op { RF_SET, RF_ADD, RF_XOR };

struct rf_record {
    int kind;
    uint8_t *body; /* malloc'd */
    size_t len;
};

struct rf_stream {
    int type;
    uint32_t tid;
    uint8_t *raw; /* the stream's bytes (bare streams; framed ones are rebuilt) */
    size_t len;
    int framed;
    struct rf_record *recs;
    size_t nrecs;
};

struct rf_file {
    crec_fmt_header hdr; /* owned */
    struct rf_stream *streams;
    size_t nstreams;
};

RF_FN int rf_framed(int type)
{
    return type != CREC_FMT_S_READS && type != CREC_FMT_S_SEQ && type != CREC_FMT_S_INDEX;
}

RF_FN void rf_free(struct rf_file *f)
{
    for (size_t i = 0; i < f->nstreams; i++) {
        for (size_t k = 0; k < f->streams[i].nrecs; k++)
            free(f->streams[i].recs[k].body);
        free(f->streams[i].recs);
        free(f->streams[i].raw);
    }
    free(f->streams);
    crec_fmt_header_clear(&f->hdr);
    memset(f, 0, sizeof *f);
}

/* Copy the header's strings and arrays, so that the file outlives its reader. */
RF_FN int rf_copy_header(crec_fmt_header *to, const crec_fmt_header *from)
{
    *to = *from;
    to->crec_version = crec_malloc(strlen(from->crec_version ? from->crec_version : "") + 1);
    to->cpuid = crec_malloc((from->ncpuid ? from->ncpuid : 1) * sizeof *to->cpuid);
    to->argv = crec_calloc(from->argc + 1, sizeof *to->argv);
    to->envp = crec_calloc(from->envc + 1, sizeof *to->envp);
    if (!to->crec_version || !to->cpuid || !to->argv || !to->envp)
        return -1;
    strcpy(to->crec_version, from->crec_version ? from->crec_version : "");
    memcpy(to->cpuid, from->cpuid, from->ncpuid * sizeof *to->cpuid);
    for (size_t i = 0; i < from->argc; i++)
        if (!(to->argv[i] = crec_malloc(strlen(from->argv[i]) + 1)))
            return -1;
        else
            strcpy(to->argv[i], from->argv[i]);
    for (size_t i = 0; i < from->envc; i++)
        if (!(to->envp[i] = crec_malloc(strlen(from->envp[i]) + 1)))
            return -1;
        else
            strcpy(to->envp[i], from->envp[i]);
    return 0;
}

/* Split a framed stream's bytes into records (what does not parse stays
 * in one last record of kind -1, written back as it was). */
RF_FN int rf_split(struct rf_stream *s)
{
    crec_fmt_cur c = {s->raw, s->len, 0};
    size_t cap = 0;

    while (c.pos < c.len) {
        const uint8_t *body;
        size_t len, at = c.pos;
        int kind;
        struct rf_record *r;
        if (s->nrecs == cap) {
            cap = cap ? 2 * cap : 64;
            if (!(r = realloc(s->recs, cap * sizeof *r)))
                return -1;
            s->recs = r;
        }
        r = &s->recs[s->nrecs];
        if (crec_fmt_frame_next(&c, &kind, &body, &len, NULL) != CREC_OK) {
            *r = (struct rf_record){-1, malloc(s->len - at + 1), s->len - at};
            if (!r->body)
                return -1;
            memcpy(r->body, s->raw + at, r->len);
            s->nrecs++;
            break;
        }
        *r = (struct rf_record){kind, malloc(len + 1), len};
        if (!r->body)
            return -1;
        memcpy(r->body, body, len);
        s->nrecs++;
    }
    return 0;
}

/* Read a recording into memory.  @return 0, or -1 (err says why). */
RF_FN int rf_load(const char *path, struct rf_file *f, crec_error *err)
{
    crec_fmt_reader *r = NULL;
    int rc;

    memset(f, 0, sizeof *f);
    if ((rc = crec_fmt_reader_open(path, &r, err)) != CREC_OK)
        return -1;
    if (rf_copy_header(&f->hdr, crec_fmt_reader_header(r)) != 0 ||
        !(f->streams = calloc(crec_fmt_reader_nstreams(r) + 1, sizeof *f->streams))) {
        crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        crec_fmt_reader_free(r);
        return -1;
    }
    for (size_t i = 0; i < crec_fmt_reader_nstreams(r); i++) {
        crec_fmt_stream_info si;
        struct rf_stream *s = &f->streams[f->nstreams];
        if (crec_fmt_reader_stream(r, i, &si, err) != CREC_OK)
            break;
        if (si.type == CREC_FMT_S_HEADER || si.type == CREC_FMT_S_DIRECTORY)
            continue;
        s->type = si.type, s->tid = si.tid, s->len = (size_t)si.raw_bytes;
        s->framed = rf_framed(si.type);
        f->nstreams++;
        if (!(s->raw = malloc(s->len + 1)) ||
            crec_fmt_read_at(r, si.type, si.tid, 0, s->raw, s->len, err) != CREC_OK ||
            (s->framed && rf_split(s) != 0)) {
            if (!err->msg[0])
                crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
            crec_fmt_reader_free(r);
            rf_free(f);
            return -1;
        }
    }
    crec_fmt_reader_free(r);
    return 0;
}

RF_FN uint64_t rf_apply(uint64_t v, int op, uint64_t x)
{
    return op == RF_SET ? x : op == RF_ADD ? v + x : v ^ x;
}

/* The numeric fields of a decoded record, by index; each reached through a
 * u64 that is copied in and out.  @return how many fields kind has. */
#define RF_CHANGE(lvalue)                                                                     \
    do {                                                                                     \
        tmp = (uint64_t)(lvalue);                                                            \
        tmp = rf_apply(tmp, op, x);                                                          \
        lvalue = (__typeof__(lvalue))tmp;                                                    \
    } while (0)
#define RF_FIELD(idx, lvalue)                                                                 \
    case idx:                                                                                \
        RF_CHANGE(lvalue);                                                                   \
        return 0

RF_FN int rf_event_field(crec_fmt_event *ev, unsigned f, int op, uint64_t x)
{
    uint64_t tmp;

    switch (ev->kind) {
    case CREC_FMT_K_SYSCALL:
        switch (f % 17) {
            RF_FIELD(0, ev->u.sys.icount);
            RF_FIELD(1, ev->u.sys.nr);
            RF_FIELD(2, ev->u.sys.args[0]);
            RF_FIELD(3, ev->u.sys.args[1]);
            RF_FIELD(4, ev->u.sys.args[2]);
            RF_FIELD(5, ev->u.sys.ret);
            RF_FIELD(6, ev->u.sys.flags);
            RF_FIELD(7, ev->u.sys.write_hash);
            RF_FIELD(8, ev->u.sys.nregs);
            RF_FIELD(9, ev->u.sys.regs[0].id);
            RF_FIELD(10, ev->u.sys.regs[0].value);
            RF_FIELD(11, ev->u.sys.nout);
            RF_FIELD(12, ev->u.sys.out[0].addr);
            RF_FIELD(13, ev->u.sys.out[0].len);
            RF_FIELD(14, ev->u.sys.args[3]);
            RF_FIELD(15, ev->u.sys.regs[1].value);
            RF_FIELD(16, ev->u.sys.out[1].len);
        }
        break;
    case CREC_FMT_K_MMAP:
        switch (f % 8) {
            RF_FIELD(0, ev->u.mmap.op);
            RF_FIELD(1, ev->u.mmap.addr);
            RF_FIELD(2, ev->u.mmap.len);
            RF_FIELD(3, ev->u.mmap.prot);
            RF_FIELD(4, ev->u.mmap.mflags);
            RF_FIELD(5, ev->u.mmap.addr2);
            RF_FIELD(6, ev->u.mmap.len2);
            RF_FIELD(7, ev->u.mmap.flags);
        }
        break;
    case CREC_FMT_K_CPUID:
        switch (f % 3) {
            RF_FIELD(0, ev->u.cpuid.leaf);
            RF_FIELD(1, ev->u.cpuid.subleaf);
            RF_FIELD(2, ev->u.cpuid.eax);
        }
        break;
    case CREC_FMT_K_RDTSC:
        switch (f % 1) {
            RF_FIELD(0, ev->u.rdtsc.value);
        }
        break;
    case CREC_FMT_K_SIGNAL:
        switch (f % 4) {
            RF_FIELD(0, ev->u.sig.icount);
            RF_FIELD(1, ev->u.sig.signo);
            RF_FIELD(2, ev->u.sig.code);
            RF_FIELD(3, ev->u.sig.addr);
        }
        break;
    case CREC_FMT_K_THREAD:
        switch (f % 2) {
            RF_FIELD(0, ev->u.thread.op);
            RF_FIELD(1, ev->u.thread.tid);
        }
        break;
    case CREC_FMT_K_EXIT:
        switch (f % 3) {
            RF_FIELD(0, ev->u.exit.global_icount);
            RF_FIELD(1, ev->u.exit.how);
            RF_FIELD(2, ev->u.exit.value);
        }
        break;
    }
    return -1;
}

RF_FN int rf_kf_field(crec_fmt_keyframe *kf, unsigned f, int op, uint64_t x)
{
    uint64_t tmp;

    switch (f % 12) {
        RF_FIELD(0, kf->tid);
        RF_FIELD(1, kf->global_icount);
        RF_FIELD(2, kf->thread_icount);
        RF_FIELD(3, kf->reads_off);
        RF_FIELD(4, kf->events_off);
        RF_FIELD(5, kf->seq_off);
        RF_FIELD(6, kf->hits_before);
        RF_FIELD(7, kf->regs.rip);
        RF_FIELD(8, kf->regs.gpr[CREC_RSP]);
        RF_FIELD(9, kf->regs.rflags);
        RF_FIELD(10, kf->regs.fs_base);
        RF_FIELD(11, kf->regs.gpr[CREC_RAX]);
    }
    return -1;
}

RF_FN int rf_mark_field(crec_fmt_mark *m, unsigned f, int op, uint64_t x)
{
    uint64_t tmp;

    switch (m->kind) {
    case CREC_FMT_K_RING:
        switch (f % 5) {
            RF_FIELD(0, m->u.ring.size);
            RF_FIELD(1, m->u.ring.kept_from);
            RF_FIELD(2, m->u.ring.dropped_segments);
            RF_FIELD(3, m->u.ring.dropped_bytes);
            RF_FIELD(4, m->u.ring.rotations);
        }
        break;
    case CREC_FMT_K_GAP:
        switch (f % 3) {
            RF_FIELD(0, m->u.gap.from);
            RF_FIELD(1, m->u.gap.to);
            RF_FIELD(2, m->u.gap.why);
        }
        break;
    case CREC_FMT_K_STOP:
        switch (f % 7) {
            RF_FIELD(0, m->u.stop.at);
            RF_FIELD(1, m->u.stop.why);
            RF_FIELD(2, m->u.stop.number);
            RF_FIELD(3, m->u.stop.ended);
            RF_FIELD(4, m->u.stop.end);
            RF_FIELD(5, m->u.stop.how);
            RF_FIELD(6, m->u.stop.value);
        }
        break;
    }
    return -1;
}

/* Change field f of record body r of a file of format `version` (decoded,
 * changed, encoded again).  Bodies that do not decode, and BLOBs, get byte
 * f xored with x. */
RF_FN int rf_change_record(struct rf_record *r, uint32_t version, unsigned f, int op, uint64_t x)
{
    crec_fmt_buf b = {0};
    crec_fmt_event ev;
    crec_fmt_keyframe kf;
    crec_fmt_snapshot snap = {0};
    crec_fmt_code code;
    crec_fmt_symbol sym;
    crec_fmt_mark mark;
    uint64_t tmp;
    int rc = -1;

    if ((r->kind == CREC_FMT_K_KEYFRAME || r->kind == CREC_FMT_K_CHECKPOINT) &&
        crec_fmt_kf_decode(r->body, r->len, &kf, NULL) == 0) {
        rf_kf_field(&kf, f, op, x); /* a check point has a key frame's body */
        rc = r->kind == CREC_FMT_K_KEYFRAME ? crec_fmt_kf_encode(&b, &kf)
                                            : crec_fmt_cp_encode(&b, &kf);
    } else if (r->kind >= CREC_FMT_K_SYSCALL && r->kind <= CREC_FMT_K_EXIT &&
               crec_fmt_ev_decode(version, r->kind, r->body, r->len, &ev, NULL) == 0) {
        rf_event_field(&ev, f, op, x);
        rc = crec_fmt_ev_encode(&b, &ev); /* mmap names point into r->body: still there */
    } else if (r->kind == CREC_FMT_K_SNAPSHOT &&
               crec_fmt_snap_decode(r->body, r->len, &snap, NULL) == 0) {
        size_t n = snap.npages;
        switch (f % 3) {
        case 0:
            RF_CHANGE(snap.global_icount);
            break;
        case 1:
            if (n)
                snap.pages[(x >> 32) % n].addr = rf_apply(snap.pages[(x >> 32) % n].addr, op,
                                                          x & 0xffffffffull);
            break;
        default:
            snap.npages = n ? (size_t)rf_apply(n, op, x) % (n + 1) : 0; /* drop pages */
            break;
        }
        rc = crec_fmt_snap_encode(&b, &snap);
        snap.npages = n;
        crec_fmt_snapshot_clear(&snap);
    } else if (r->kind == CREC_FMT_K_CODE && crec_fmt_code_decode(r->body, r->len, &code, NULL) == 0) {
        switch (f % 4) {
        case 0: RF_CHANGE(code.addr); break;
        case 1: RF_CHANGE(code.len); break;
        case 2: RF_CHANGE(code.prot); break;
        default: RF_CHANGE(code.file_off); break;
        }
        rc = crec_fmt_code_encode(&b, &code);
    } else if (r->kind >= CREC_FMT_K_RING && r->kind <= CREC_FMT_K_STOP &&
               crec_fmt_mark_decode(r->kind, r->body, r->len, &mark, NULL) == 0) {
        rf_mark_field(&mark, f, op, x);
        rc = crec_fmt_mark_encode(&b, &mark);
    } else if (r->kind == CREC_FMT_K_SYMBOL && crec_fmt_sym_decode(r->body, r->len, &sym, NULL) == 0) {
        switch (f % 3) {
        case 0: RF_CHANGE(sym.addr); break;
        case 1: RF_CHANGE(sym.size); break;
        default: RF_CHANGE(sym.type); break;
        }
        rc = crec_fmt_sym_encode(&b, &sym);
    }
    if (rc == 0 && !b.nomem) {
        /* the encoders write the frame (kind, length); keep only the body */
        crec_fmt_cur c = {b.data, b.len, 0};
        const uint8_t *body;
        size_t len;
        int kind;
        if (crec_fmt_frame_next(&c, &kind, &body, &len, NULL) == CREC_OK) {
            uint8_t *nb = malloc(len + 1);
            if (nb) {
                memcpy(nb, body, len);
                free(r->body);
                r->body = nb, r->len = len;
            }
        }
    } else if (r->len > 0) {
        r->body[f % r->len] ^= (uint8_t)(x ? x : 1);
    }
    crec_fmt_buf_free(&b);
    return 0;
}
#undef RF_FIELD
#undef RF_CHANGE

/* Apply one change: stream of type `type` (the first of that type; any
 * stream when none has it), record `rec`, field `field`. */
RF_FN void rf_change(struct rf_file *f, int type, uint32_t rec, unsigned field, int op,
                      uint64_t x)
{
    struct rf_stream *s = NULL;

    for (size_t i = 0; i < f->nstreams && !s; i++)
        if (f->streams[i].type == type)
            s = &f->streams[i];
    if (!s && f->nstreams)
        s = &f->streams[(unsigned)type % f->nstreams];
    if (!s)
        return;
    if (!s->framed) {
        if (s->len)
            s->raw[(rec * 256u + field) % s->len] ^= (uint8_t)(x ? x : 1);
        return;
    }
    if (s->nrecs)
        rf_change_record(&s->recs[rec % s->nrecs], f->hdr.version, field, op, x);
}

/* Write the file again (every checksum right).  @return 0, or -1 (err). */
RF_FN int rf_save(const struct rf_file *f, const char *path, crec_error *err)
{
    crec_fmt_writer *w = NULL;
    int rc = crec_fmt_writer_open(path, &f->hdr, NULL, &w, err);

    for (size_t i = 0; rc == CREC_OK && i < f->nstreams; i++) {
        const struct rf_stream *s = &f->streams[i];
        if (!s->framed) {
            rc = crec_fmt_write(w, s->type, s->tid, s->raw, s->len, err);
            continue;
        }
        for (size_t k = 0; rc == CREC_OK && k < s->nrecs; k++) {
            const struct rf_record *r = &s->recs[k];
            uint8_t head[11];
            size_t n = 0;
            uint64_t len = r->len;
            if (r->kind >= 0) {
                head[n++] = (uint8_t)r->kind;
                do {
                    head[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
                    len >>= 7;
                } while (len);
                rc = crec_fmt_write(w, s->type, s->tid, head, n, err);
            }
            if (rc == CREC_OK && r->len)
                rc = crec_fmt_write(w, s->type, s->tid, r->body, r->len, err);
        }
    }
    if (rc == CREC_OK)
        return crec_fmt_writer_close(w, err) == CREC_OK ? 0 : -1;
    crec_fmt_writer_free(w);
    return -1;
}

#endif /* CREC_TESTS_REFIELD_H */
