/*
 * index.c - the summarization index: lookups, and finding, loading or
 * building PATH.idx (the file format is codec.c, building is build.c).
 *
 * An index names its recording by size and a hash of its first and last
 * 64 KiB; a stale one (another recording) or a corrupt one is rebuilt.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/common.h"
#include "index/index.h"
#include "replayer/replayer.h"

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

/* The entry of `line` in a sorted list, or n. */
static size_t list_find(const uint64_t *v, size_t n, uint64_t line)
{
    size_t a = 0, b = n;

    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (v[m] < line)
            a = m + 1;
        else
            b = m;
    }
    return a < n && v[a] == line ? a : n;
}

int crec_idx_byte_at_end(const crec_idx *ix, size_t seg, uint64_t addr, uint8_t *value)
{
    const crec_idx_span *s = &ix->spans[seg];
    uint64_t line = addr >> CREC_IDX_LINE_SHIFT, bit = 1ull << (addr & 63);
    size_t w = list_find(s->write, s->nwrite, line), k;
    int touched;

    if (w < s->nwrite && s->write_mask[w] & bit) {
        /* its last store left it, unless the kernel wrote it after */
        k = list_find(s->stale, s->nstale, line);
        if (!(s->flags & CREC_IDX_VALUED) || !s->write_values || s->flags & CREC_IDX_WILD ||
            (s->values_part && (line < s->vlo || line > s->vhi)) ||
            (k < s->nstale && s->stale_mask[k] & bit))
            return CREC_IDX_BYTE_REPLAY;
        *value = s->write_values[64 * w + (addr & 63)];
        return CREC_IDX_BYTE_VALUE;
    }
    w = list_find(s->touch, s->ntouch, line);
    touched = w < s->ntouch && (s->touch_mask[w] & bit) != 0;
    if (crec_idx_kernel_writes(ix, seg, addr, 1)) /* loaded before or after it? */
        return touched ? CREC_IDX_BYTE_REPLAY : CREC_IDX_BYTE_KERNEL;
    return touched ? CREC_IDX_BYTE_LOADED : CREC_IDX_BYTE_NONE;
}

int crec_idx_span_values(crec_idx_span *s,
                         int (*read)(void *ctx, void *dst, uint64_t addr, uint64_t len),
                         void *ctx)
{
    size_t n = s->nwrite ? s->nwrite : 1, k = 0, j = 0;
    uint64_t *st = crec_malloc((s->nstale + n) * sizeof *st);
    uint64_t *sm = crec_malloc((s->nstale + n) * sizeof *sm);

    s->write_values = crec_malloc(n * 64);
    if (!st || !sm || !s->write_values) {
        crec_free(st), crec_free(sm), crec_free(s->write_values);
        s->write_values = NULL;
        return -1;
    }
    /* the stale lines, and the lines that can't be read, merged in order */
    for (size_t i = 0; i < s->nwrite; i++) {
        uint64_t m = read(ctx, s->write_values + 64 * i, s->write[i] << CREC_IDX_LINE_SHIFT,
                          64) != 0 ? s->write_mask[i] : 0;
        for (; j < s->nstale && s->stale[j] < s->write[i]; j++)
            st[k] = s->stale[j], sm[k++] = s->stale_mask[j];
        if (j < s->nstale && s->stale[j] == s->write[i])
            m |= s->stale_mask[j++];
        if (m)
            st[k] = s->write[i], sm[k++] = m;
    }
    for (; j < s->nstale; j++)
        st[k] = s->stale[j], sm[k++] = s->stale_mask[j];
    crec_free(s->stale), crec_free(s->stale_mask);
    s->stale = st, s->stale_mask = sm, s->nstale = k;
    s->flags |= CREC_IDX_VALUED;
    return 0;
}

/* ---- a span as the recorder gathered it, put in order ------------------------ */

_Static_assert(offsetof(crec_idx_line, line) == 0, "a line's key comes first");
_Static_assert(offsetof(crec_idx_granule, granule) == 0, "a need's key comes first");

/*
 * Sort n items of `size` bytes by the number in their first 8 bytes (a
 * line or a granule): a radix sort, 11 bits a pass, stable, passing over
 * the digits every key shares (the high ones, mostly).  qsort took 12% of
 * recording bench_hash, whose spans' seeds hold 500,000 granules each,
 * loaded in no order.  Out of memory, qsort with `cmp` does it.
 */
static void sort_by_key(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    enum { BITS = 11, DIGITS = 1 << BITS };
    uint8_t *a = v, *b = n > 1 ? crec_malloc(n * size) : NULL, *t;
    size_t count[DIGITS];

    if (!b) {
        crec_sort(v, n, size, cmp);
        return;
    }
    for (unsigned shift = 0; shift < 64; shift += BITS) {
        uint64_t key;
        size_t at = 0;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) {
            memcpy(&key, a + i * size, sizeof key);
            count[key >> shift & (DIGITS - 1)]++;
        }
        memcpy(&key, a, sizeof key);
        if (count[key >> shift & (DIGITS - 1)] == n)
            continue; /* every key has this digit */
        for (size_t d = 0; d < DIGITS; d++) { /* where each digit's items begin */
            size_t c = count[d];
            count[d] = at, at += c;
        }
        for (size_t i = 0; i < n; i++) {
            memcpy(&key, a + i * size, sizeof key);
            memcpy(b + count[key >> shift & (DIGITS - 1)]++ * size, a + i * size, size);
        }
        t = a, a = b, b = t;
    }
    if (a != v) { /* the last pass wrote the copy */
        memcpy(v, a, n * size);
        b = a;
    }
    crec_free(b);
}

static int cmp_line(const void *a, const void *b)
{
    const crec_idx_line *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_need(const void *a, const void *b)
{
    const crec_idx_granule *x = a, *y = b;
    return x->granule < y->granule ? -1 : x->granule > y->granule;
}

/* g's lines into g->s: sorted, merged, with the values of the stored ones;
 * a stored line with no value read (unmapped since) joins the stale lines:
 * its bytes are answered by a replay. */
static int gathered_lines(crec_idx_gathered *g)
{
    crec_idx_span *s = &g->s;
    crec_idx_line *v = g->lines;
    size_t n = 0, nw = 0;

    sort_by_key(v, g->nlines, sizeof *v, cmp_line);
    for (size_t i = 0; i < g->nlines; i++) /* a page given up and taken again */
        if (n > 0 && v[n - 1].line == v[i].line) {
            v[n - 1].touch |= v[i].touch, v[n - 1].write |= v[i].write;
            v[n - 1].stale |= v[i].stale;
            if (v[n - 1].slot == CREC_IDX_NO_SLOT) /* the same bytes, if read */
                v[n - 1].slot = v[i].slot;
        } else {
            v[n++] = v[i];
        }
    for (size_t i = 0; i < n; i++)
        nw += (v[i].write | v[i].stale) != 0;
    s->touch = crec_malloc((n ? n : 1) * sizeof *s->touch);
    s->touch_mask = crec_malloc((n ? n : 1) * sizeof *s->touch_mask);
    s->write = crec_malloc((nw ? nw : 1) * sizeof *s->write);
    s->write_mask = crec_malloc((nw ? nw : 1) * sizeof *s->write_mask);
    s->write_values = crec_malloc((nw ? nw : 1) * 64);
    s->stale = crec_malloc((nw ? nw : 1) * sizeof *s->stale);
    s->stale_mask = crec_malloc((nw ? nw : 1) * sizeof *s->stale_mask);
    if (!s->touch || !s->touch_mask || !s->write || !s->write_mask || !s->write_values ||
        !s->stale || !s->stale_mask)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t w = v[i].write | v[i].stale;
        /* stored again since the kernel's write: its store's value */
        uint64_t stale = v[i].stale & ~v[i].write;
        s->touch[s->ntouch] = v[i].line, s->touch_mask[s->ntouch++] = v[i].touch;
        if (!w)
            continue;
        if (v[i].slot == CREC_IDX_NO_SLOT)
            stale = w; /* no value: every stored byte is a replay's */
        else
            memcpy(s->write_values + 64 * s->nwrite, g->values + 64 * v[i].slot, 64);
        s->write[s->nwrite] = v[i].line, s->write_mask[s->nwrite++] = w;
        if (stale)
            s->stale[s->nstale] = v[i].line, s->stale_mask[s->nstale++] = stale;
    }
    s->flags |= CREC_IDX_VALUED;
    return 0;
}

/* g's seed into g->s: lines, masks and the needed bytes' values. */
static int gathered_seed(crec_idx_gathered *g)
{
    crec_idx_span *s = &g->s;
    crec_idx_granule *v = g->needs;
    size_t n = g->nneeds, lines = 0;

    sort_by_key(v, n, sizeof *v, cmp_need);
    for (size_t i = 0; i < n; i++)
        lines += i == 0 || v[i].granule / 8 != v[i - 1].granule / 8;
    s->lines = crec_malloc((lines ? lines : 1) * sizeof *s->lines);
    s->masks = crec_calloc(lines ? lines : 1, sizeof *s->masks);
    s->values = crec_calloc(lines ? lines : 1, 64);
    if (!s->lines || !s->masks || !s->values)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t line = v[i].granule / 8;
        unsigned at = (unsigned)(v[i].granule % 8) * 8;
        if (s->nlines == 0 || s->lines[s->nlines - 1] != line)
            s->lines[s->nlines++] = line;
        s->masks[s->nlines - 1] |= v[i].mask << at;
        for (unsigned b = 0; b < 8; b++)
            if (v[i].mask >> b & 1)
                s->values[64 * (s->nlines - 1) + at + b] = (uint8_t)(v[i].value >> (8 * b));
    }
    return 0;
}

int crec_idx_gathered_close(crec_idx_gathered *g)
{
    int rc = gathered_lines(g) == 0 && (!g->s.at_point || gathered_seed(g) == 0) ? 0 : -1;

    crec_free(g->lines), crec_free(g->values), crec_free(g->needs);
    g->lines = NULL, g->values = NULL, g->needs = NULL;
    g->nlines = g->nneeds = 0;
    return rc;
}

void crec_idx_gathered_clear(crec_idx_gathered *g)
{
    crec_free(g->lines), crec_free(g->values), crec_free(g->needs);
    crec_idx_span_clear(&g->s);
    memset(g, 0, sizeof *g);
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

/* An index larger than this is not read (no recording has one so big). */
#define IDX_FILE_MAX (4ull << 30)

/*
 * Read the whole index file.  Only a regular file is read, opened without
 * blocking: a FIFO or a device planted as PATH.idx must not hang a query
 * or feed it without end.  @return 0, or -1 when there is no usable file.
 */
static int read_file(const char *path, uint8_t **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    uint8_t *d = NULL;
    size_t n = 0, size;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > IDX_FILE_MAX ||
        !(d = crec_malloc(st.st_size ? (size_t)st.st_size : 1))) {
        close(fd);
        return -1;
    }
    size = (size_t)st.st_size;
    while (n < size) {
        ssize_t r = pread(fd, d + n, size - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
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

/*
 * The index file of a recording of several threads holds one index per
 * thread (each in its thread's own time, and complete with its own
 * header and checksums), built as queries need them:
 *
 *   0   8  magic "CRECIDXT"
 *   8   4  n, the number of indexes (u32 LE)
 *   12  4  reserved, zero
 *   16  .. n x (u32 LE thread, u32 reserved zero, u64 LE length, the index)
 */
#define IDX_THREADS_MAGIC "CRECIDXT"

/* The index of thread tid in a file of several (or, tid 0, the file's own
 * index): where its bytes lie in data.  @return 0, or -1 if none. */
static int find_image(const uint8_t *data, size_t len, uint32_t tid, size_t *at, size_t *n)
{
    size_t pos = 16, count;

    if (tid == 0) {
        *at = 0, *n = len;
        return len >= 8 && memcmp(data, IDX_THREADS_MAGIC, 8) != 0 ? 0 : -1;
    }
    if (len < 16 || memcmp(data, IDX_THREADS_MAGIC, 8) != 0 || crec_le_get(data + 12, 4) != 0)
        return -1;
    count = (size_t)crec_le_get(data + 8, 4);
    for (size_t i = 0; i < count && pos + 16 <= len; i++) {
        uint64_t l = crec_le_get(data + pos + 8, 8);
        if (l > len - pos - 16)
            return -1;
        if (crec_le_get(data + pos, 4) == tid) {
            *at = pos + 16, *n = (size_t)l;
            return 0;
        }
        pos += 16 + (size_t)l;
    }
    return -1;
}

void crec_idx_file(const char *path, uint32_t proc, char *out, size_t size)
{
    if (proc)
        snprintf(out, size, "%s.p%u.idx", path, proc);
    else
        snprintf(out, size, "%s.idx", path);
}

int crec_idx_load(const char *path, uint32_t proc, uint32_t tid, const crec_fmt_keyframe *kfs,
                  size_t nkf, crec_idx **out, crec_error *err)
{
    char ipath[4096];
    crec_error quiet = {0};
    uint8_t *data;
    size_t len, at, n;
    uint64_t size, hash;
    crec_idx *ix = NULL;
    int rc;

    *out = NULL;
    rc = crec_idx_recording_id(path, &size, &hash, err);
    if (rc != CREC_OK)
        return rc;
    crec_idx_file(path, proc, ipath, sizeof ipath);
    if (read_file(ipath, &data, &len) != 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "no index %s", ipath);
    if (find_image(data, len, tid, &at, &n) != 0) { /* not built yet, or another's */
        crec_free(data);
        if (tid)
            return crec_error_set(err, CREC_ERR_NOTFOUND, "no index of thread %u in %s", tid,
                                  ipath);
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s is the index of threads", ipath);
    }
    rc = crec_idx_decode(data + at, n, &ix, &quiet);
    crec_free(data);
    if (rc == CREC_ERR_VERSION) /* a cache an older (or newer) crec wrote: built anew */
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s: %s", ipath, quiet.msg);
    if (rc == CREC_ERR_NOMEM)
        return crec_error_set(err, rc, "%s: %s", ipath, quiet.msg);
    if (rc != CREC_OK) /* there, but not readable: rebuilt, and the user told why */
        return crec_error_set(err, CREC_ERR_CORRUPT, "%s: %s", ipath, quiet.msg);
    if (ix->rec_size != size || ix->rec_hash != hash) {
        crec_idx_free(ix); /* stale: another recording */
        return crec_error_set(err, CREC_ERR_NOTFOUND, "%s is the index of another recording",
                              ipath);
    }
    if (!spans_fit(ix, kfs ? kfs : ix->kfs, kfs ? nkf : ix->nkf)) {
        crec_idx_free(ix);
        return crec_error_set(err, CREC_ERR_CORRUPT, "%s: its spans do not fit the recording's "
                              "key frames", ipath);
    }
    *out = ix;
    return CREC_OK;
}

/* The file with thread tid's index in it (the others that are there and
 * name this recording are kept). */
static int add_image(const char *ipath, uint32_t tid, const crec_fmt_buf *img, crec_fmt_buf *out)
{
    uint8_t *old = NULL, head[16];
    size_t len = 0, pos = 16, count = 0, kept = 0;

    if (read_file(ipath, &old, &len) == 0 && len >= 16 &&
        memcmp(old, IDX_THREADS_MAGIC, 8) == 0 && crec_le_get(old + 12, 4) == 0)
        count = (size_t)crec_le_get(old + 8, 4);
    crec_fmt_buf_bytes(out, IDX_THREADS_MAGIC, 8);
    crec_fmt_buf_bytes(out, "\0\0\0\0\0\0\0\0", 8); /* the count, set below */
    for (size_t i = 0; i < count && pos + 16 <= len; i++) {
        uint64_t l = crec_le_get(old + pos + 8, 8);
        if (l > len - pos - 16)
            break;
        if (crec_le_get(old + pos, 4) != tid) {
            crec_fmt_buf_bytes(out, old + pos, 16 + (size_t)l);
            kept++;
        }
        pos += 16 + (size_t)l;
    }
    crec_free(old);
    crec_le_put(head, tid, 4);
    crec_le_put(head + 4, 0, 4);
    crec_le_put(head + 8, img->len, 8);
    crec_fmt_buf_bytes(out, head, 16);
    crec_fmt_buf_bytes(out, img->data, img->len);
    if (out->nomem)
        return -1;
    crec_le_put(out->data + 8, kept + 1, 4);
    return 0;
}

/* Write n bytes to fd.  @return 0, or -1 after a failed or short write. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k, n -= (size_t)k;
    }
    return 0;
}

/*
 * Write PATH.idx (best effort: a recording on a read-only medium still
 * answers queries, it just builds its index again next time).  The index
 * is written to a new file of a name no one can guess, created with
 * O_EXCL (mkstemp), so that a symlink or file someone else planted in the
 * recording's directory is never followed or overwritten; then renamed.
 * tid 0: the file is the index; else it holds thread tid's among the
 * others'.
 */
/* Write the index file image b, then tail (of thread tid, 0: the
 * process's; a thread's has no tail). */
static void save_image(const char *path, uint32_t proc, uint32_t tid, const crec_fmt_buf *b,
                       const uint8_t *tail, size_t tail_len)
{
    char ipath[4096], tmp[4200];
    crec_fmt_buf all = {0};
    const crec_fmt_buf *out = b;
    int fd, ok;

    assert(tid == 0 || tail_len == 0); /* add_image takes a whole image */
    crec_idx_file(path, proc, ipath, sizeof ipath);
    snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", ipath);
    if (tid && add_image(ipath, tid, b, &all) != 0) {
        crec_fmt_buf_free(&all);
        return;
    }
    if (tid)
        out = &all;
    if ((fd = mkostemp(tmp, O_CLOEXEC)) >= 0) {
        /* readable by whoever can read the recording, as a plain file is */
        ok = fchmod(fd, 0644) == 0 && write_all(fd, out->data, out->len) == 0 &&
             write_all(fd, tail, tail_len) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, ipath) != 0)
            unlink(tmp);
    }
    crec_fmt_buf_free(&all);
}

static void save(const char *path, uint32_t proc, uint32_t tid, const crec_idx *ix)
{
    crec_fmt_buf b = {0};

    if (crec_idx_encode(ix, &b) == CREC_OK)
        save_image(path, proc, tid, &b, NULL, 0);
    crec_fmt_buf_free(&b);
}

int crec_idx_save_writer(const char *path, uint32_t proc, crec_idx_writer *w, crec_error *err)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_keyframe *kfs = NULL;
    crec_fmt_buf b = {0};
    const uint8_t *tail = NULL;
    size_t nkf = 0, tail_len = 0;
    crec_idx *ix = crec_calloc(1, sizeof *ix);
    int rc = ix ? CREC_OK : crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the index");

    if (rc == CREC_OK)
        rc = crec_fmt_reader_open(path, &r, err);
    if (rc == CREC_OK)
        rc = crec_fmt_reader_select(r, proc, err);
    if (rc == CREC_OK)
        rc = crec_replay_load_keyframes(r, &kfs, &nkf, err);
    crec_fmt_reader_free(r);
    if (rc == CREC_OK)
        rc = crec_idx_recording_id(path, &ix->rec_size, &ix->rec_hash, err);
    if (rc == CREC_OK)
        rc = crec_idx_read_tables(path, proc, kfs, nkf, ix, err);
    if (rc == CREC_OK && crec_idx_writer_finish(w, ix, &b, &tail, &tail_len) != CREC_OK)
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the index");
    if (rc == CREC_OK && !spans_fit(ix, kfs, nkf))
        rc = crec_error_set(err, CREC_ERR_CORRUPT, "the index gathered while recording does "
                            "not fit the recording's key frames");
    if (rc == CREC_OK)
        save_image(path, proc, 0, &b, tail, tail_len);
    crec_fmt_buf_free(&b);
    crec_idx_writer_free(w);
    crec_idx_free(ix);
    crec_free(kfs);
    return rc;
}

int crec_idx_rebuild(const char *path, uint32_t proc, uint32_t tid, const crec_fmt_keyframe *kfs,
                     size_t nkf, unsigned jobs, crec_progress_fn progress, void *pctx,
                     crec_idx **out, crec_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int rc;

    if (!jobs) /* a query's build: two host threads, or the CPUs if fewer */
        jobs = ncpu > 2 ? 2 : (unsigned)(ncpu > 0 ? ncpu : 1);
    rc = crec_idx_build(path, proc, kfs, nkf, jobs, tid == 0, progress, pctx, out, err);

    if (rc == CREC_OK)
        save(path, proc, tid, *out);
    return rc;
}

int crec_idx_load_or_build(const char *path, uint32_t proc, uint32_t tid,
                           const crec_fmt_keyframe *kfs,
                           size_t nkf, crec_progress_fn progress, void *pctx, crec_idx **out,
                           int *built, crec_error *note, crec_error *err)
{
    crec_error why = {0};
    int rc;

    *built = 0;
    rc = crec_idx_load(path, proc, tid, kfs, nkf, out, &why);
    if (rc == CREC_OK)
        return CREC_OK;
    if (rc == CREC_ERR_CORRUPT && note)
        *note = why;
    else if (rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_CORRUPT)
        return crec_error_set(err, (crec_err)rc, "%s", why.msg);
    rc = crec_idx_rebuild(path, proc, tid, kfs, nkf, 0, progress, pctx, out, err);
    *built = rc == CREC_OK;
    return rc;
}
