/*
 * pcache.c - the hit-count prediction cache of the compressed-recording seed.
 *
 * A direct-mapped cache of aligned 8-byte granules.  Each entry holds the
 * granule's address (its tag), its 8 bytes, and a mask of which of those
 * bytes are known.  A store makes its bytes known; a load is "predicted"
 * when every byte it returns is known and equal to what the cache holds.
 * The recorder logs only loads that are not predicted, so the replayer,
 * whose memory holds exactly what the guest stored or was given, loads the
 * same bytes for every predicted one.
 *
 * An access is whatever Unicorn reports in one memory hook call.  It is cut
 * at granule boundaries, so unaligned and page-straddling accesses are just
 * accesses touching two granules; it is a hit only if all its pieces hit.
 */
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

/*
 * One entry: the granule's number and which of its bytes are known in one
 * word, its bytes in another, so that a lookup touches 16 bytes and compares
 * whole words.  Byte i of a granule is bits 8i..8i+7 of `value`.
 */
struct pcache_entry {
    uint64_t tag_known; /* granule number << 8 | bit i set: byte i is known */
    uint64_t value;
};

/* Granule numbers that fit beside the mask: addresses below 2^59, which
 * covers every user-space address.  Others are never cached (always a miss). */
#define PCACHE_TAG_LIMIT (1ull << 56)

struct crec_pcache {
    unsigned log2_entries;
    struct pcache_entry *entries;
};

int crec_pcache_create(crec_pcache **out, unsigned log2_entries, crec_error *err)
{
    crec_pcache *pc;

    *out = NULL;
    if (log2_entries < CREC_PCACHE_MIN_LOG2 || log2_entries > CREC_PCACHE_MAX_LOG2)
        return crec_error_set(err, CREC_ERR_ARG,
                              "prediction cache size 2^%u is out of range (2^%d to 2^%d)",
                              log2_entries, CREC_PCACHE_MIN_LOG2, CREC_PCACHE_MAX_LOG2);
    pc = crec_calloc(1, sizeof *pc);
    if (pc)
        pc->entries = crec_calloc((size_t)1 << log2_entries, sizeof *pc->entries);
    if (!pc || !pc->entries) {
        crec_pcache_free(pc);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the prediction cache");
    }
    pc->log2_entries = log2_entries;
    *out = pc;
    return CREC_OK;
}

void crec_pcache_free(crec_pcache *pc)
{
    if (!pc)
        return;
    crec_free(pc->entries);
    crec_free(pc);
}

void crec_pcache_flush(crec_pcache *pc)
{
    memset(pc->entries, 0, ((size_t)1 << pc->log2_entries) * sizeof *pc->entries);
}

/* Fibonacci hashing spreads neighbouring granules over the whole table. */
static struct pcache_entry *pcache_slot(crec_pcache *pc, uint64_t tag)
{
    return &pc->entries[(tag * 0x9E3779B97F4A7C15ull) >> (64 - pc->log2_entries)];
}

/* The low n bytes of a word, 0 <= n <= 8. */
static const uint64_t low_bytes[9] = {
    0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffffull, 0xffffffffffffull,
    0xffffffffffffffull, ~0ull,
};

/* n <= 8 guest (little-endian) bytes as a number; fixed sizes compile to
 * one load on a little-endian host. */
static inline uint64_t load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    switch (n) {
    case 8:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
               (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    case 4:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
               (uint64_t)p[3] << 24;
    case 2:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8;
    default:
        for (unsigned i = n; i-- > 0;)
            v = v << 8 | p[i];
        return v;
    }
}

/*
 * Compare bytes [off, off+len) of granule `tag` with `bits` (already in
 * place, zero elsewhere), then store them; off + len <= 8.  @return 1 if
 * they were all known and equal.
 */
static inline int pcache_piece(crec_pcache *pc, uint64_t tag, unsigned off, unsigned len,
                               uint64_t bits, int is_read)
{
    struct pcache_entry *e;
    uint64_t lanes = low_bytes[len] << (8 * off);
    uint64_t mask = (uint64_t)(0xffu >> (8 - len)) << off;
    int hit = 0;

    if (tag >= PCACHE_TAG_LIMIT)
        return 0;
    e = pcache_slot(pc, tag);
    if ((e->tag_known >> 8) != tag)
        e->tag_known = tag << 8; /* another granule: forget it */
    else if (is_read)
        hit = (e->tag_known & mask) == mask && ((e->value ^ bits) & lanes) == 0;
    e->value = (e->value & ~lanes) | bits;
    e->tag_known |= mask;
    return hit;
}

/* An access of 1 to 8 bytes whose value is `value`: one or two granules. */
static int pcache_value(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size,
                        int is_read)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);
    unsigned first = CREC_PCACHE_GRANULE - off < size ? CREC_PCACHE_GRANULE - off : size;
    uint64_t tag = addr / CREC_PCACHE_GRANULE;
    int hit;

    value &= low_bytes[size];
    hit = pcache_piece(pc, tag, off, first, (value & low_bytes[first]) << (8 * off), is_read);
    if (first < size) /* & and not &&: the second granule is stored either way */
        hit &= pcache_piece(pc, tag + 1, 0, size - first, value >> (8 * first), is_read);
    return hit;
}

/* Any access, up to CREC_PCACHE_MAX_ACCESS bytes, in pieces of 8. */
static int pcache_bytes(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size,
                        int is_read)
{
    int hit = 1;

    while (size > 0) {
        unsigned n = size < 8 ? size : 8;
        hit &= pcache_value(pc, addr, load_le(bytes, n), n, is_read);
        addr += n, bytes += n, size -= n;
    }
    return hit;
}

/* Most accesses lie in one granule: those take one step. */
static int in_one_granule(uint64_t addr, unsigned size)
{
    return addr % CREC_PCACHE_GRANULE + size <= CREC_PCACHE_GRANULE;
}

void crec_pcache_write(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    pcache_bytes(pc, addr, bytes, size, 0);
}

void crec_pcache_store(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);

    if (in_one_granule(addr, size))
        pcache_piece(pc, addr / CREC_PCACHE_GRANULE, off, size,
                     (value & low_bytes[size]) << (8 * off), 0);
    else
        pcache_value(pc, addr, value, size, 0);
}

int crec_pcache_read(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);

    if (in_one_granule(addr, size))
        return pcache_piece(pc, addr / CREC_PCACHE_GRANULE, off, size,
                            load_le(bytes, size) << (8 * off), 1);
    return pcache_bytes(pc, addr, bytes, size, 1);
}

void crec_pcache_forget(crec_pcache *pc, uint64_t addr, uint64_t len)
{
    uint64_t first = addr / CREC_PCACHE_GRANULE;
    uint64_t last = (addr + len - 1) / CREC_PCACHE_GRANULE;
    size_t n = (size_t)1 << pc->log2_entries;

    if (len == 0)
        return;
    /* A huge range is cheaper to forget by scanning the table once. */
    if (last - first >= n) {
        for (size_t i = 0; i < n; i++) {
            uint64_t tag = pc->entries[i].tag_known >> 8;
            if (tag >= first && tag <= last)
                pc->entries[i].tag_known = tag << 8;
        }
        return;
    }
    for (uint64_t tag = first; tag <= last && tag < PCACHE_TAG_LIMIT; tag++) {
        struct pcache_entry *e = pcache_slot(pc, tag);
        if (e->tag_known >> 8 == tag)
            e->tag_known = tag << 8;
    }
}
