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

struct pcache_entry {
    uint64_t tag;  /* address / CREC_PCACHE_GRANULE */
    uint8_t bytes[CREC_PCACHE_GRANULE];
    uint8_t known; /* bit i set: bytes[i] is known */
};

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

/*
 * Look at `len` bytes starting `off` bytes into the granule `tag`, compare
 * them with the entry, then store them.  @return 1 if they were all known
 * and equal.
 */
static int pcache_piece(crec_pcache *pc, uint64_t tag, unsigned off, const uint8_t *bytes,
                        unsigned len, int is_read)
{
    struct pcache_entry *e = pcache_slot(pc, tag);
    uint8_t mask = (uint8_t)(((1u << len) - 1) << off);
    int hit = 0;

    if (e->tag != tag || e->known == 0) {
        e->tag = tag;
        e->known = 0;
    } else if (is_read && (e->known & mask) == mask) {
        hit = 1;
    }
    /* At most 8 bytes: a loop the compiler inlines beats a call to libc
     * (this runs for every load and store of the guest). */
    for (unsigned i = 0; i < len; i++) {
        hit &= e->bytes[off + i] == bytes[i];
        e->bytes[off + i] = bytes[i];
    }
    e->known |= mask;
    return hit;
}

static int pcache_access(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size,
                         int is_read)
{
    int hit = 1;

    while (size > 0) {
        unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);
        unsigned len = CREC_PCACHE_GRANULE - off;

        if (len > size)
            len = size;
        hit &= pcache_piece(pc, addr / CREC_PCACHE_GRANULE, off, bytes, len, is_read);
        addr += len;
        bytes += len;
        size -= len;
    }
    return hit;
}

void crec_pcache_write(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    pcache_access(pc, addr, bytes, size, 0);
}

int crec_pcache_read(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    return pcache_access(pc, addr, bytes, size, 1);
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
        for (size_t i = 0; i < n; i++)
            if (pc->entries[i].tag >= first && pc->entries[i].tag <= last)
                pc->entries[i].known = 0;
        return;
    }
    for (uint64_t tag = first; tag <= last; tag++) {
        struct pcache_entry *e = pcache_slot(pc, tag);
        if (e->tag == tag)
            e->known = 0;
    }
}
