/*
 * header.c - the payload of the HEADER chunk (docs/FORMAT.md §4).
 *
 * The HEADER chunk is the first chunk, at file offset 16 (stream type 1,
 * thread 0, chunk 0, stream offset 0).  Its uncompressed payload:
 *
 *   varint   guest architecture (1 = x86-64)
 *   u8       recording host byte order (0 little, 1 big)
 *   varint   page size (4096: CREC_FMT_PAGE_SIZE)
 *   varint   prediction cache entries (a power of two, 2^4 .. 2^24)
 *   varint   prediction cache granule in bytes (8: CREC_FMT_GRANULE)
 *   varint   key frame interval (instructions, >= 1; version 4: 0, placed by cost)
 *   varint   snapshot interval (key frames, >= 1; version 4: 0, placed by cost)
 *
 * A value other than these is refused with CREC_ERR_UNSUPPORTED naming
 * both values: the reader can't honour it (as zstd refuses a window it
 * can't hold), and reading on would give wrong answers.
 *   svarint  start time, seconds since the epoch (information only)
 *   varint   start time, nanoseconds (< 10^9)
 *   string   crec version that wrote the file
 *   varint   number of CPUID entries (<= 1024), then each:
 *              varint leaf, varint subleaf, u32 eax, u32 ebx, u32 ecx, u32 edx
 *   varint   argc (<= 2^20), then argc strings
 *   varint   envc (<= 2^20), then envc strings
 * version 2 only:
 *   varint   time slice (instructions, >= 1)
 *   varint   CPUs shown to the guest (1 .. 1024)
 *   u8       chaos (0 none, 1 on), then with 1: varint chaos seed
 * version 4 only:
 *   varint   check point interval (instructions; 0: none)
 *
 * Nothing may follow.  Strings hold no NUL byte.
 */
#include <stdlib.h>

#include "format/format_int.h"

static void put_strings(crec_fmt_buf *b, char *const *v, size_t n)
{
    fmt_buf_varint(b, n);
    for (size_t i = 0; i < n; i++)
        fmt_buf_str(b, v[i] ? v[i] : "", v[i] ? strlen(v[i]) : 0);
}

int fmt_header_encode(crec_fmt_buf *b, const crec_fmt_header *h)
{
    const char *ver = h->crec_version ? h->crec_version : "";
    fmt_buf_varint(b, h->arch);
    fmt_buf_u8(b, (uint8_t)h->host_order);
    fmt_buf_varint(b, h->page_size);
    fmt_buf_varint(b, h->cache_entries);
    fmt_buf_varint(b, h->cache_granule);
    fmt_buf_varint(b, h->keyframe_interval);
    fmt_buf_varint(b, h->snapshot_interval);
    fmt_buf_svarint(b, h->start_sec);
    fmt_buf_varint(b, h->start_nsec);
    fmt_buf_str(b, ver, strlen(ver));
    fmt_buf_varint(b, h->ncpuid);
    for (size_t i = 0; i < h->ncpuid; i++) {
        const crec_fmt_cpuid *c = &h->cpuid[i];
        fmt_buf_varint(b, c->leaf);
        fmt_buf_varint(b, c->subleaf);
        fmt_buf_u32(b, c->eax);
        fmt_buf_u32(b, c->ebx);
        fmt_buf_u32(b, c->ecx);
        fmt_buf_u32(b, c->edx);
    }
    put_strings(b, h->argv, h->argc);
    put_strings(b, h->envp, h->envc);
    fmt_buf_varint(b, h->time_slice ? h->time_slice : CREC_FMT_DEFAULT_SLICE);
    fmt_buf_varint(b, h->cpus ? h->cpus : 1);
    fmt_buf_u8(b, h->chaos ? 1 : 0);
    if (h->chaos)
        fmt_buf_varint(b, h->chaos_seed);
    fmt_buf_varint(b, h->checkpoint_interval);
    return b->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        crec_free(v[i]);
    crec_free(v);
}

void crec_fmt_header_clear(crec_fmt_header *h)
{
    if (!h)
        return;
    crec_free(h->crec_version);
    crec_free(h->cpuid);
    free_strings(h->argv, h->argc);
    free_strings(h->envp, h->envc);
    memset(h, 0, sizeof *h);
}

/* A NUL-terminated copy of a string field. */
static int get_cstr(crec_fmt_cur *c, char **out, const char *what, crec_error *err)
{
    const uint8_t *s;
    size_t n;
    int rc = fmt_cur_str(c, &s, &n, what, err);
    if (rc)
        return rc;
    if (memchr(s, 0, n))
        return crec_error_corrupt(err, "%s contains a NUL byte", what);
    char *p = crec_malloc(n + 1);
    if (!p)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading %s", what);
    memcpy(p, s, n);
    p[n] = '\0';
    *out = p;
    return CREC_OK;
}

/* Count first, checked against what is left, so a huge count can't make us
 * allocate: every string takes at least one byte. */
static int get_strings(crec_fmt_cur *c, char ***out, size_t *count, const char *what,
                       crec_error *err)
{
    uint64_t n;
    int rc = fmt_cur_varint(c, &n, what, err);
    if (rc)
        return rc;
    if (n > CREC_FMT_MAX_STRINGS || n > c->len - c->pos)
        return crec_error_corrupt(err, "%s count %llu out of range (at most %u, and the "
                                  "bytes left)", what, (unsigned long long)n,
                                  CREC_FMT_MAX_STRINGS);
    char **v = crec_calloc((size_t)n + 1, sizeof *v);
    if (!v)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading %s", what);
    *out = v;
    for (size_t i = 0; i < n; i++) {
        if ((rc = get_cstr(c, &v[i], what, err)) != 0)
            return rc;
        *count = i + 1;
    }
    return CREC_OK;
}

static int is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

/* A header value this reader can't honour: both values, named. */
static int refuse(crec_error *err, const char *field, unsigned long long got, const char *want)
{
    return crec_error_set(err, CREC_ERR_UNSUPPORTED, "%s %llu is not supported; this crec reads %s",
                          field, got, want);
}

/* Every header value is one this reader honours, or the file is refused. */
static int check_params(uint32_t version, const crec_fmt_header *h, crec_error *err)
{
    if (h->arch != CREC_FMT_ARCH_X86_64)
        return refuse(err, "guest architecture", h->arch, "1 (x86-64)");
    if (h->host_order > CREC_FMT_ORDER_BIG)
        return refuse(err, "host byte order", h->host_order, "0 (little-endian) or 1 (big)");
    if (h->page_size != CREC_FMT_PAGE_SIZE)
        return refuse(err, "page size", (unsigned long long)h->page_size, "4096");
    if (h->cache_granule != CREC_FMT_GRANULE)
        return refuse(err, "cache granule", (unsigned long long)h->cache_granule, "8");
    if (!is_pow2(h->cache_entries) || h->cache_entries < (1ull << CREC_FMT_CACHE_LOG2_MIN) ||
        h->cache_entries > (1ull << CREC_FMT_CACHE_LOG2_MAX))
        return refuse(err, "cache entries", (unsigned long long)h->cache_entries,
                      "a power of two from 16 to 16777216");
    /* version 4: 0, they are placed where they cost little (FORMAT.md §4) */
    if (h->keyframe_interval == 0 && version < 4)
        return refuse(err, "key frame interval", 0, "1 or more");
    if (h->snapshot_interval == 0 && version < 4)
        return refuse(err, "snapshot interval", 0, "1 or more");
    if (h->start_nsec >= 1000000000u)
        return crec_error_corrupt(err, "start time nanoseconds %u out of range", h->start_nsec);
    return CREC_OK;
}

static int get_cpuid(crec_fmt_cur *c, crec_fmt_header *h, crec_error *err)
{
    uint64_t n;
    int rc = fmt_cur_varint(c, &n, "cpuid count", err);
    if (rc)
        return rc;
    if (n > CREC_FMT_MAX_CPUID || n * 18 > c->len - c->pos)
        return crec_error_corrupt(err, "cpuid count %llu out of range", (unsigned long long)n);
    h->cpuid = crec_calloc((size_t)n, sizeof *h->cpuid);
    if (!h->cpuid)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the header");
    h->ncpuid = (size_t)n;
    for (size_t i = 0; i < n && !rc; i++) {
        crec_fmt_cpuid *e = &h->cpuid[i];
        if ((rc = fmt_cur_varint32(c, &e->leaf, "cpuid leaf", err)) ||
            (rc = fmt_cur_varint32(c, &e->subleaf, "cpuid subleaf", err)) ||
            (rc = fmt_cur_u32(c, &e->eax, "cpuid eax", err)) ||
            (rc = fmt_cur_u32(c, &e->ebx, "cpuid ebx", err)) ||
            (rc = fmt_cur_u32(c, &e->ecx, "cpuid ecx", err)))
            break;
        rc = fmt_cur_u32(c, &e->edx, "cpuid edx", err);
    }
    return rc;
}

static int get_params(uint32_t version, crec_fmt_cur *c, crec_fmt_header *h, crec_error *err)
{
    uint8_t order;
    uint64_t sec;
    int rc;
    if ((rc = fmt_cur_varint32(c, &h->arch, "architecture", err)) ||
        (rc = fmt_cur_u8(c, &order, "byte order", err)) ||
        (rc = fmt_cur_varint(c, &h->page_size, "page size", err)) ||
        (rc = fmt_cur_varint(c, &h->cache_entries, "cache entries", err)) ||
        (rc = fmt_cur_varint(c, &h->cache_granule, "cache granule", err)) ||
        (rc = fmt_cur_varint(c, &h->keyframe_interval, "key frame interval", err)) ||
        (rc = fmt_cur_varint(c, &h->snapshot_interval, "snapshot interval", err)) ||
        (rc = fmt_cur_varint(c, &sec, "start time", err)) ||
        (rc = fmt_cur_varint32(c, &h->start_nsec, "start time", err)))
        return rc;
    h->host_order = order;
    h->start_sec = (int64_t)((sec >> 1) ^ (~(sec & 1) + 1));
    return check_params(version, h, err);
}

/* The threads' parameters (version 2); a version-1 file had one thread. */
static int get_threads(uint32_t version, crec_fmt_cur *c, crec_fmt_header *h, crec_error *err)
{
    uint8_t chaos;
    int rc;

    h->time_slice = CREC_FMT_DEFAULT_SLICE;
    h->cpus = 1;
    if (version < 2)
        return CREC_OK;
    if ((rc = fmt_cur_varint(c, &h->time_slice, "time slice", err)) ||
        (rc = fmt_cur_varint(c, &h->cpus, "CPU count", err)) ||
        (rc = fmt_cur_u8(c, &chaos, "chaos", err)))
        return rc;
    if (h->time_slice == 0 || h->cpus == 0 || h->cpus > 1024 || chaos > 1)
        return crec_error_corrupt(err, "thread parameters out of range (slice %llu, %llu CPUs, "
                                       "chaos %u)", (unsigned long long)h->time_slice,
                                  (unsigned long long)h->cpus, chaos);
    h->chaos = chaos;
    if (chaos && (rc = fmt_cur_varint(c, &h->chaos_seed, "chaos seed", err)) != CREC_OK)
        return rc;
    return version < 4 ? CREC_OK
                       : fmt_cur_varint(c, &h->checkpoint_interval, "check point interval", err);
}

int fmt_header_decode(uint32_t version, const uint8_t *p, size_t n, crec_fmt_header *h,
                      crec_error *err)
{
    crec_fmt_cur c = {p, n, 0};
    int rc;
    memset(h, 0, sizeof *h);
    h->version = version;
    if ((rc = get_params(version, &c, h, err)) || (rc = get_cstr(&c, &h->crec_version, "crec version", err)) ||
        (rc = get_cpuid(&c, h, err)) ||
        (rc = get_strings(&c, &h->argv, &h->argc, "argv", err)) ||
        (rc = get_strings(&c, &h->envp, &h->envc, "environment", err)) ||
        (rc = get_threads(version, &c, h, err)) ||
        (rc = fmt_cur_end(&c, "the header", err))) {
        crec_fmt_header_clear(h);
        return rc;
    }
    return CREC_OK;
}
