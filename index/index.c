/*
 * index.c - the summarization index: build, encode, decode, look up.
 *
 * The index file PATH.idx (docs/QUERY.md is the spec), all integers
 * little-endian:
 *
 *   offset size  field
 *   0      8     magic "CRECIDX\0"
 *   8      4     version (1)
 *   12     4     reserved, zero
 *   16     8     size of the recording it describes, in bytes
 *   24     8     XXH3-64 of the recording's first and last 64 KiB
 *   32     8     body length in bytes
 *   40     8     XXH3-64 of the body
 *   48     ...   body:
 *                varint nseg, then per segment:
 *                  varint start icount (delta from the previous segment's)
 *                  varint flags (bit 0: the kernel wrote unknown ranges)
 *                  varint ntouch, ntouch x varint line delta
 *                  varint nwrite, nwrite x varint line delta
 *                  varint nk, nk x (varint addr, varint len)
 *                "line" is address >> 6; the first delta of a list is
 *                from 0, the others from the previous line, so strictly
 *                increasing lists have deltas > 0.
 *
 * A stale index (other recording size or hash) is rebuilt; a corrupt one
 * is rejected with CREC_ERR_CORRUPT, and rebuilt by load_or_build.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

#define IDX_MAGIC "CRECIDX"
#define IDX_VERSION 1
#define IDX_HEAD 48
#define IDX_MAX_LIST (1ull << 32)

/* ---- encoding ------------------------------------------------------------ */

static void put_bytes(crec_fmt_buf *b, const void *p, size_t n)
{
    if (b->nomem)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *d = crec_realloc(b->data, cap);
        if (!d) {
            b->nomem = 1;
            return;
        }
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u64(crec_fmt_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, x, 8);
}

static void put_varint(crec_fmt_buf *b, uint64_t v)
{
    uint8_t x[10];
    size_t n = 0;
    do {
        x[n] = v & 0x7f;
        v >>= 7;
        if (v)
            x[n] |= 0x80;
        n++;
    } while (v);
    put_bytes(b, x, n);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v, crec_error *err)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return crec_error_corrupt(err, "index: body ends inside a number");
        uint8_t c = p[(*pos)++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return CREC_OK;
        }
    }
    return crec_error_corrupt(err, "index: number too long");
}

static void put_list(crec_fmt_buf *b, const uint64_t *v, size_t n)
{
    uint64_t prev = 0;
    put_varint(b, n);
    for (size_t i = 0; i < n; i++) {
        put_varint(b, v[i] - prev);
        prev = v[i];
    }
}

int crec_idx_encode(const crec_idx *ix, crec_fmt_buf *b)
{
    crec_fmt_buf body = {0};
    uint64_t prev = 0;
    uint8_t head[IDX_HEAD] = IDX_MAGIC;

    put_varint(&body, ix->nseg);
    for (size_t i = 0; i < ix->nseg; i++) {
        const crec_idx_seg *s = &ix->segs[i];
        put_varint(&body, s->start - prev);
        prev = s->start;
        put_varint(&body, s->flags);
        put_list(&body, s->touch, s->ntouch);
        put_list(&body, s->write, s->nwrite);
        put_varint(&body, s->nk);
        for (size_t j = 0; j < 2 * s->nk; j++)
            put_varint(&body, s->k[j]);
    }
    head[8] = IDX_VERSION;
    crec_fmt_buf h = {0};
    put_bytes(&h, head, 16);
    put_u64(&h, ix->rec_size);
    put_u64(&h, ix->rec_hash);
    put_u64(&h, body.len);
    put_u64(&h, XXH3_64bits(body.data, body.len));
    put_bytes(b, h.data, h.len);
    put_bytes(b, body.data, body.len);
    crec_free(h.data);
    crec_free(body.data);
    if (body.nomem || h.nomem)
        b->nomem = 1;
    return b->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

/* ---- decoding ------------------------------------------------------------ */

static int get_list(const uint8_t *p, size_t len, size_t *pos, uint64_t **out, size_t *n,
                    crec_error *err)
{
    uint64_t cnt, prev = 0, d;
    int rc = get_varint(p, len, pos, &cnt, err);

    if (rc)
        return rc;
    if (cnt > len - *pos) /* each entry takes at least one byte */
        return crec_error_corrupt(err, "index: a list of %" PRIu64 " lines in %zu bytes", cnt,
                                  len - *pos);
    *out = crec_malloc((cnt ? cnt : 1) * sizeof **out);
    if (!*out)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index");
    for (uint64_t i = 0; i < cnt; i++) {
        if ((rc = get_varint(p, len, pos, &d, err)))
            return rc;
        if (i > 0 && d == 0)
            return crec_error_corrupt(err, "index: line list not increasing");
        prev += d;
        (*out)[i] = prev;
    }
    *n = cnt;
    return CREC_OK;
}

int crec_idx_decode(const uint8_t *data, size_t len, crec_idx **out, crec_error *err)
{
    crec_idx *ix;
    uint64_t blen, nseg, prev = 0, v;
    size_t pos = 0;
    const uint8_t *p;
    int rc = CREC_OK;

    *out = NULL;
    if (len < IDX_HEAD || memcmp(data, IDX_MAGIC, 8) != 0)
        return crec_error_corrupt(err, "index: not a crec index file");
    if (get_u64(data + 8) != IDX_VERSION)
        return crec_error_set(err, CREC_ERR_VERSION, "index: version %" PRIu64
                              " (this crec reads version %d)", get_u64(data + 8), IDX_VERSION);
    blen = get_u64(data + 32);
    if (blen != len - IDX_HEAD)
        return crec_error_corrupt(err, "index: body of %" PRIu64 " bytes, file has %zu", blen,
                                  len - IDX_HEAD);
    p = data + IDX_HEAD;
    if (XXH3_64bits(p, blen) != get_u64(data + 40))
        return crec_error_corrupt(err, "index: checksum mismatch");
    ix = crec_calloc(1, sizeof *ix);
    if (!ix)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index");
    ix->rec_size = get_u64(data + 16);
    ix->rec_hash = get_u64(data + 24);
    if ((rc = get_varint(p, blen, &pos, &nseg, err)))
        goto fail;
    if (nseg > blen) {
        rc = crec_error_corrupt(err, "index: %" PRIu64 " segments in %" PRIu64 " bytes", nseg,
                                blen);
        goto fail;
    }
    ix->segs = crec_calloc(nseg ? nseg : 1, sizeof *ix->segs);
    if (!ix->segs) {
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index");
        goto fail;
    }
    ix->nseg = nseg;
    for (size_t i = 0; i < nseg; i++) {
        crec_idx_seg *s = &ix->segs[i];
        if ((rc = get_varint(p, blen, &pos, &v, err)))
            goto fail;
        s->start = prev + v;
        prev = s->start;
        if ((rc = get_varint(p, blen, &pos, &v, err)))
            goto fail;
        if (v & ~(uint64_t)CREC_IDX_WILD) {
            rc = crec_error_corrupt(err, "index: reserved segment flags set");
            goto fail;
        }
        s->flags = (uint32_t)v;
        if ((rc = get_list(p, blen, &pos, &s->touch, &s->ntouch, err)) ||
            (rc = get_list(p, blen, &pos, &s->write, &s->nwrite, err)) ||
            (rc = get_varint(p, blen, &pos, &v, err)))
            goto fail;
        if (v > (blen - pos) / 2) {
            rc = crec_error_corrupt(err, "index: %" PRIu64 " kernel ranges", v);
            goto fail;
        }
        s->nk = v;
        s->k = crec_malloc((v ? 2 * v : 1) * sizeof *s->k);
        if (!s->k) {
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index");
            goto fail;
        }
        for (size_t j = 0; j < 2 * v; j++)
            if ((rc = get_varint(p, blen, &pos, &s->k[j], err)))
                goto fail;
    }
    if (pos != blen) {
        rc = crec_error_corrupt(err, "index: %zu stray bytes", (size_t)(blen - pos));
        goto fail;
    }
    *out = ix;
    return CREC_OK;
fail:
    crec_idx_free(ix);
    return rc;
}

void crec_idx_free(crec_idx *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->nseg; i++) {
        crec_free(ix->segs[i].touch);
        crec_free(ix->segs[i].write);
        crec_free(ix->segs[i].k);
    }
    crec_free(ix->segs);
    crec_free(ix);
}

/* ---- lookups ------------------------------------------------------------- */

/* Is any of lines [lo, hi] in the sorted list? */
static int list_hits(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = n;
    while (a < b) { /* first entry >= lo */
        size_t m = a + (b - a) / 2;
        if (v[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    return a < n && v[a] <= hi;
}

int crec_idx_touches(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len,
                     int writes_only)
{
    const crec_idx_seg *s = &ix->segs[seg];
    uint64_t lo, hi;

    if (len == 0)
        return 0;
    if (s->flags & CREC_IDX_WILD)
        return 1;
    lo = addr >> CREC_IDX_LINE_SHIFT;
    hi = (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
    if (writes_only ? list_hits(s->write, s->nwrite, lo, hi) : list_hits(s->touch, s->ntouch, lo, hi))
        return 1;
    for (size_t j = 0; j < s->nk; j++)
        if (s->k[2 * j] < addr + len && addr < s->k[2 * j] + s->k[2 * j + 1])
            return 1;
    return 0;
}

/* ---- the recording's identity -------------------------------------------- */

int crec_idx_recording_id(const char *path, uint64_t *size, uint64_t *hash, crec_error *err)
{
    static uint8_t zero;
    struct stat st;
    uint8_t *buf;
    size_t n = 64 << 10, got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return crec_error_set(err, CREC_ERR_IO, "can't open %s", path);
    }
    buf = crec_malloc(2 * n);
    if (!buf) {
        close(fd);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    ssize_t r = pread(fd, buf, n, 0);
    if (r > 0)
        got = (size_t)r;
    if ((uint64_t)st.st_size > n) {
        r = pread(fd, buf + got, n, st.st_size - (off_t)n);
        if (r > 0)
            got += (size_t)r;
    }
    close(fd);
    *size = (uint64_t)st.st_size;
    *hash = XXH3_64bits(got ? buf : &zero, got);
    crec_free(buf);
    return CREC_OK;
}

/* ---- building ------------------------------------------------------------ */

/* An open-addressing set of line numbers (value+1 stored; 0 = empty). */
struct lineset {
    uint64_t *v;
    size_t cap, n;
};

static int set_add(struct lineset *s, uint64_t line)
{
    if (s->n * 2 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *nv = crec_calloc(cap, sizeof *nv);
        if (!nv)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i]) {
                size_t j = (size_t)(s->v[i] * 0x9E3779B97F4A7C15ull >> 17) & (cap - 1);
                while (nv[j])
                    j = (j + 1) & (cap - 1);
                nv[j] = s->v[i];
            }
        crec_free(s->v);
        s->v = nv, s->cap = cap;
    }
    uint64_t key = line + 1;
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == key)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = key;
    s->n++;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sorted content of a set, which is freed. */
static uint64_t *set_sorted(struct lineset *s, size_t *n)
{
    uint64_t *out = crec_malloc((s->n ? s->n : 1) * sizeof *out);
    size_t k = 0;

    if (out) {
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i])
                out[k++] = s->v[i] - 1;
        qsort(out, k, sizeof *out, cmp_u64);
    }
    *n = k;
    crec_free(s->v);
    memset(s, 0, sizeof *s);
    return out;
}

struct seg_build {
    struct lineset touch, write;
    uint64_t last_t, last_w; /* the last line added (skip repeats) */
    uint64_t *k;
    size_t nk, capk;
    uint32_t flags;
    int nomem;
};

static void build_access(void *ctx, crec_emu_cpu *cpu, int kind, uint64_t addr, uint64_t len)
{
    struct seg_build *b = ctx;

    (void)cpu;
    if (kind == 'k') {
        if (addr == 0 && len == UINT64_MAX) {
            b->flags |= CREC_IDX_WILD;
            return;
        }
        if (b->nk == b->capk) {
            size_t cap = b->capk ? 2 * b->capk : 16;
            uint64_t *n = crec_realloc(b->k, 2 * cap * sizeof *n);
            if (!n) {
                b->nomem = 1;
                return;
            }
            b->k = n, b->capk = cap;
        }
        b->k[2 * b->nk] = addr;
        b->k[2 * b->nk + 1] = len;
        b->nk++;
        return;
    }
    for (uint64_t l = addr >> CREC_IDX_LINE_SHIFT; l <= (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
         l++) {
        if (l + 1 != b->last_t) {
            b->last_t = l + 1;
            if (set_add(&b->touch, l))
                b->nomem = 1;
        }
        if (kind == 'w' && l + 1 != b->last_w) {
            b->last_w = l + 1;
            if (set_add(&b->write, l))
                b->nomem = 1;
        }
    }
}

struct build_job {
    const char *path;
    const crec_fmt_keyframe *kfs;
    size_t nkf;
    crec_idx *ix;
    unsigned j, jobs;
    int rc;
    crec_error err;
};

static int build_one(crec_fmt_reader *r, struct build_job *bj, size_t i)
{
    struct seg_build b = {0};
    crec_replay_qrun *q = NULL;
    crec_idx_seg *s = &bj->ix->segs[i];
    int rc;

    rc = crec_replay_query(r, bj->kfs, bj->nkf, i, bj->kfs[i + 1].global_icount, build_access,
                           &b, &q, &bj->err);
    crec_replay_qrun_free(q);
    s->start = bj->kfs[i].global_icount;
    s->flags = b.flags;
    s->touch = set_sorted(&b.touch, &s->ntouch);
    s->write = set_sorted(&b.write, &s->nwrite);
    s->k = b.k ? b.k : crec_malloc(sizeof *s->k);
    s->nk = b.nk;
    if (rc == CREC_OK && (b.nomem || !s->touch || !s->write || !s->k))
        rc = crec_error_set(&bj->err, CREC_ERR_NOMEM, "out of memory building the index");
    return rc;
}

static void *build_main(void *arg)
{
    struct build_job *bj = arg;
    crec_fmt_reader *r = NULL;

    bj->rc = crec_fmt_reader_open(bj->path, &r, &bj->err);
    for (size_t i = bj->j; bj->rc == CREC_OK && i < bj->ix->nseg; i += bj->jobs)
        bj->rc = build_one(r, bj, i);
    crec_fmt_reader_free(r);
    return NULL;
}

#define IDX_MAX_JOBS 16

int crec_idx_build(const char *path, const crec_fmt_keyframe *kfs, size_t nkf, unsigned jobs,
                   crec_idx **out, crec_error *err)
{
    struct build_job bj[IDX_MAX_JOBS];
    pthread_t th[IDX_MAX_JOBS];
    crec_idx *ix;
    int rc = CREC_OK;

    *out = NULL;
    ix = crec_calloc(1, sizeof *ix);
    if (!ix)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
    rc = crec_idx_recording_id(path, &ix->rec_size, &ix->rec_hash, err);
    if (rc != CREC_OK) {
        crec_free(ix);
        return rc;
    }
    ix->nseg = nkf ? nkf - 1 : 0;
    ix->segs = crec_calloc(ix->nseg ? ix->nseg : 1, sizeof *ix->segs);
    if (!ix->segs) {
        crec_free(ix);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory building the index");
    }
    if (jobs < 1)
        jobs = 1;
    if (jobs > IDX_MAX_JOBS)
        jobs = IDX_MAX_JOBS;
    if (jobs > ix->nseg)
        jobs = ix->nseg ? (unsigned)ix->nseg : 1;
    for (unsigned j = 0; j < jobs; j++) {
        memset(&bj[j], 0, sizeof bj[j]);
        bj[j].path = path, bj[j].kfs = kfs, bj[j].nkf = nkf, bj[j].ix = ix;
        bj[j].j = j, bj[j].jobs = jobs;
    }
    for (unsigned j = 1; j < jobs; j++)
        pthread_create(&th[j], NULL, build_main, &bj[j]);
    build_main(&bj[0]);
    for (unsigned j = 1; j < jobs; j++)
        pthread_join(th[j], NULL);
    for (unsigned j = 0; j < jobs; j++)
        if (bj[j].rc != CREC_OK && rc == CREC_OK) {
            rc = bj[j].rc;
            if (err)
                *err = bj[j].err;
        }
    if (rc != CREC_OK) {
        crec_idx_free(ix);
        return rc;
    }
    *out = ix;
    return CREC_OK;
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *d = NULL;
    size_t n = 0, cap = 0;

    if (!f)
        return -1;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            uint8_t *nd = crec_realloc(d, cap);
            if (!nd) {
                crec_free(d);
                fclose(f);
                return -1;
            }
            d = nd;
        }
        size_t r = fread(d + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *data = d, *len = n;
    return 0;
}

int crec_idx_load_or_build(const char *path, const crec_fmt_keyframe *kfs, size_t nkf,
                           crec_idx **out, int *built, crec_error *err)
{
    char ipath[4096];
    uint8_t *data;
    size_t len;
    uint64_t size, hash;
    crec_idx *ix = NULL;
    int rc;

    *built = 0;
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    rc = crec_idx_recording_id(path, &size, &hash, err);
    if (rc != CREC_OK)
        return rc;
    if (read_file(ipath, &data, &len) == 0) {
        crec_error e2 = {0};
        if (crec_idx_decode(data, len, &ix, &e2) == CREC_OK &&
            (ix->rec_size != size || ix->rec_hash != hash || ix->nseg != (nkf ? nkf - 1 : 0))) {
            crec_idx_free(ix); /* stale: another recording */
            ix = NULL;
        }
        crec_free(data);
    }
    if (!ix) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        rc = crec_idx_build(path, kfs, nkf, ncpu > 2 ? 2 : (unsigned)(ncpu > 0 ? ncpu : 1), &ix,
                            err);
        if (rc != CREC_OK)
            return rc;
        *built = 1;
        crec_fmt_buf b = {0};
        if (crec_idx_encode(ix, &b) == CREC_OK) {
            char tmp[4200];
            snprintf(tmp, sizeof tmp, "%s.tmp%d", ipath, (int)getpid());
            FILE *f = fopen(tmp, "wb");
            if (f) {
                int ok = fwrite(b.data, 1, b.len, f) == b.len;
                ok = fclose(f) == 0 && ok;
                if (!ok || rename(tmp, ipath) != 0)
                    unlink(tmp);
            }
        }
        crec_fmt_buf_free(&b);
    }
    *out = ix;
    return CREC_OK;
}
