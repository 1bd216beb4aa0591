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

/* An access of 1 to 8 bytes whose value is `value`: one or two granules. */
static int pcache_value(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size,
                        int is_read)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);
    unsigned first = CREC_PCACHE_GRANULE - off < size ? CREC_PCACHE_GRANULE - off : size;
    uint64_t tag = addr / CREC_PCACHE_GRANULE;
    int hit;

    value &= pcache_low_bytes(size);
    hit = pcache_piece(pc, tag, off, first, (value & pcache_low_bytes(first)) << (8 * off),
                       is_read);
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
        hit &= pcache_value(pc, addr, pcache_load_le(bytes, n), n, is_read);
        addr += n, bytes += n, size -= n;
    }
    return hit;
}

void crec_pcache_write(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    pcache_bytes(pc, addr, bytes, size, 0);
}

int crec_pcache_read_split(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    return pcache_bytes(pc, addr, bytes, size, 1);
}

void crec_pcache_store_split(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size)
{
    pcache_value(pc, addr, value, size, 0);
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
    for (uint64_t tag = first; tag <= last && tag < CREC_PCACHE_TAG_LIMIT; tag++) {
        struct crec_pcache_entry *e = pcache_slot(pc, tag);
        if (e->tag_known >> 8 == tag)
            e->tag_known = tag << 8;
    }
}
