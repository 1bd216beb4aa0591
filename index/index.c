/*
 * index.c - the summarization index: lookups, and finding, loading or
 * building PATH.idx (the file format is codec.c, building is build.c).
 *
 * An index names its recording by size and a hash of its first and last
 * 64 KiB; a stale one (another recording) or a corrupt one is rebuilt.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/common.h"
#include "index/index.h"

/* ---- lookups ------------------------------------------------------------- */

size_t crec_idx_span_at(const crec_idx *ix, uint64_t t)
{
    size_t a = 0, b = ix->nspan;

    while (b - a > 1) { /* the last span starting at or before t */
        size_t m = a + (b - a) / 2;
        if (ix->spans[m].start <= t)
            a = m;
        else
            b = m;
    }
    return a;
}

uint64_t crec_idx_line_mask(uint64_t line, uint64_t addr, uint64_t len)
{
    uint64_t lo = line << CREC_IDX_LINE_SHIFT, hi = lo + (1u << CREC_IDX_LINE_SHIFT) - 1;
    uint64_t a = addr > lo ? addr : lo, b = addr + len - 1 < hi ? addr + len - 1 : hi;
    unsigned n = (unsigned)(b - a + 1);

    return (n >= 64 ? ~0ull : (1ull << n) - 1) << (a - lo);
}

/* Does the sorted list hold a line in [lo, hi] whose mask meets the range? */
static int list_hits(const uint64_t *v, const uint64_t *mask, size_t n, uint64_t addr,
                     uint64_t len)
{
    uint64_t lo = addr >> CREC_IDX_LINE_SHIFT, hi = (addr + len - 1) >> CREC_IDX_LINE_SHIFT;
    size_t a = 0, b = n;

    while (a < b) { /* first entry >= lo */
        size_t m = a + (b - a) / 2;
        if (v[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    for (; a < n && v[a] <= hi; a++)
        if (mask[a] & crec_idx_line_mask(v[a], addr, len))
            return 1;
    return 0;
}

int crec_idx_kernel_writes(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len)
{
    const crec_idx_span *s = &ix->spans[seg];

    if (len == 0)
        return 0;
    if (s->flags & CREC_IDX_WILD)
        return 1;
    for (size_t j = 0; j < s->nk; j++)
        if (s->k[2 * j] < addr + len && addr < s->k[2 * j] + s->k[2 * j + 1])
            return 1;
    return 0;
}

int crec_idx_touches(const crec_idx *ix, size_t seg, uint64_t addr, uint64_t len,
                     int writes_only)
{
    const crec_idx_span *s = &ix->spans[seg];

    if (len == 0 || addr + len - 1 < addr)
        return 0;
    if (writes_only ? list_hits(s->write, s->write_mask, s->nwrite, addr, len)
                    : list_hits(s->touch, s->touch_mask, s->ntouch, addr, len))
        return 1;
    return crec_idx_kernel_writes(ix, seg, addr, len);
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
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the index file");
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

/* Do the spans cut this recording's segments: one at each key frame but
 * the last, and the others at points strictly inside their segment?  And
 * are the index's key frames the recording's? */
static int spans_fit(const crec_idx *ix, const crec_fmt_keyframe *kfs, size_t nkf)
{
    size_t nseg = nkf ? nkf - 1 : 0, seen = 0;

    if (ix->nkf != nkf || nkf == 0)
        return 0;
    for (size_t i = 0; i < nkf; i++)
        if (ix->kfs[i].global_icount != kfs[i].global_icount ||
            ix->kfs[i].events_off != kfs[i].events_off ||
            ix->kfs[i].reads_off != kfs[i].reads_off || (i > 0 &&
            kfs[i].global_icount < kfs[i - 1].global_icount))
            return 0;

    for (size_t i = 0; i < ix->nspan; i++) {
        const crec_idx_span *s = &ix->spans[i];
        if (s->kf >= nseg)
            return 0;
        if (s->at_point ? s->start <= kfs[s->kf].global_icount ||
                              s->start >= kfs[s->kf + 1].global_icount
                        : s->start != kfs[s->kf].global_icount)
            return 0;
        seen += !s->at_point;
    }
    return seen == nseg;
}

int crec_idx_load(const char *path, const crec_fmt_keyframe *kfs, size_t nkf, crec_idx **out,
                  crec_error *err)
{
    char ipath[4096];
    crec_error quiet = {0};
    uint8_t *data;
    size_t len;
    uint64_t size, hash;
    crec_idx *ix = NULL;
    int rc;

    *out = NULL;
    rc = crec_idx_recording_id(path, &size, &hash, err);
    if (rc != CREC_OK)
        return rc;
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    if (read_file(ipath, &data, &len) != 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "no index %s", ipath);
    rc = crec_idx_decode(data, len, &ix, &quiet);
    crec_free(data);
    if (rc == CREC_OK &&
        (ix->rec_size != size || ix->rec_hash != hash ||
         !spans_fit(ix, kfs ? kfs : ix->kfs, kfs ? nkf : ix->nkf))) {
        crec_idx_free(ix); /* stale: another recording */
        rc = CREC_ERR_NOTFOUND;
    }
    if (rc != CREC_OK)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "no usable index in %s", ipath);
    *out = ix;
    return CREC_OK;
}

/* Write PATH.idx (best effort: a recording on a read-only medium still
 * answers queries, it just builds its index again next time). */
static void save(const char *path, const crec_idx *ix)
{
    char ipath[4096], tmp[4200];
    crec_fmt_buf b = {0};
    FILE *f;

    snprintf(ipath, sizeof ipath, "%s.idx", path);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", ipath, (int)getpid());
    if (crec_idx_encode(ix, &b) == CREC_OK && (f = fopen(tmp, "wb"))) {
        int ok = fwrite(b.data, 1, b.len, f) == b.len;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, ipath) != 0)
            unlink(tmp);
    }
    crec_fmt_buf_free(&b);
}

int crec_idx_load_or_build(const char *path, const crec_fmt_keyframe *kfs, size_t nkf,
                           crec_progress_fn progress, void *pctx, crec_idx **out, int *built,
                           crec_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int rc;

    *built = 0;
    rc = crec_idx_load(path, kfs, nkf, out, err);
    if (rc != CREC_ERR_NOTFOUND)
        return rc;
    rc = crec_idx_build(path, kfs, nkf, ncpu > 2 ? 2 : (unsigned)(ncpu > 0 ? ncpu : 1),
                        progress, pctx, out, err);
    if (rc != CREC_OK)
        return rc;
    *built = 1;
    save(path, *out);
    return CREC_OK;
}
