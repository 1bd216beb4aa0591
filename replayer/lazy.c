/*
 * lazy.c - code copied in a page at a time, for query runs.
 *
 * A replay starting at a key frame maps every executable mapping of the
 * listing, megabytes of code, but a query that replays part of one segment
 * runs a few pages of it (python's interpreter loop: 4 pages of 1100).  So
 * a query run maps code without its bytes and copies each page in from the
 * blob (decompressing only the chunks that hold it) the first time a block
 * starts on it, with its neighbours (REP_LAZY_GROUP pages at a time).  That first time Unicorn has translated a block of zeros:
 * the block hook fills the page and the next one (a block can run on into
 * it), drops what was translated and the block's memoised length, and has
 * the block entered again (rep_seg_run_until).  The last page of a mapping
 * is filled at once: a block of zeros there would run past the mapping's
 * end, and Unicorn faults while translating it, before any hook runs.  Nothing ran in between: a
 * block hook that stops the CPU stops it before the block runs.
 *
 * Data loads never need the bytes: the first load of a granule after a key
 * frame is a logged miss, whose value the replayer writes into memory, and
 * later loads find it there.  Writable code is copied in at once, and so is
 * lazy code that a change of the memory map is about to touch.
 */
#include <inttypes.h>
#include <string.h>

#include "common/common.h"
#include "replayer/replayer_int.h"

#define REP_LAZY_GROUP 16 /* pages filled together */

struct rep_lazy {
    uint64_t addr, len;
    crec_fmt_hash blob;
    uint8_t *filled; /* one byte per page */
};

/* Copy pages [p, q) of lazy range l in from its blob, the empty ones. */
static int fill_pages(struct rep_seg *s, struct rep_lazy *l, size_t p, size_t q,
                      crec_error *err)
{
    uint8_t page[CREC_PAGE_SIZE];
    size_t npages = (size_t)((l->len + CREC_PAGE_SIZE - 1) / CREC_PAGE_SIZE);
    uint64_t lo = UINT64_MAX, hi = 0;

    for (q = q < npages ? q : npages; p < q; p++) {
        uint64_t off = (uint64_t)p * CREC_PAGE_SIZE;
        size_t n = l->len - off < CREC_PAGE_SIZE ? (size_t)(l->len - off) : CREC_PAGE_SIZE;
        int rc;
        if (l->filled[p])
            continue;
        if ((rc = crec_fmt_blob_read(s->r, &l->blob, off, page, n, err)) != CREC_OK)
            return rc;
        crec_emu_mem_write(s->cpu, l->addr + off, page, n);
        l->filled[p] = 1;
        lo = off < lo ? off : lo;
        hi = off + n;
    }
    /* what Unicorn translated from the empty pages, and emu's count of it */
    if (lo < hi)
        crec_emu_cpu_flush_code(s->cpu, l->addr + lo, hi - lo);
    return CREC_OK;
}

int rep_lazy_add(struct rep_seg *s, uint64_t addr, uint64_t len, const crec_fmt_hash *blob,
                 crec_error *err)
{
    size_t pages = (size_t)((len + CREC_PAGE_SIZE - 1) / CREC_PAGE_SIZE);
    struct rep_lazy *grown = crec_grow(s->lazy, &s->caplazy, s->nlazy + 1, sizeof *grown, 8);
    struct rep_lazy *l;

    if (!grown)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory mapping code");
    s->lazy = grown;
    l = &s->lazy[s->nlazy];
    l->filled = crec_calloc(pages ? pages : 1, 1);
    if (!l->filled)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory mapping code");
    l->addr = addr, l->len = len, l->blob = *blob;
    s->nlazy++;
    memset(s->lazy_seen, 0, sizeof s->lazy_seen); /* pages seen may be lazy now */
    /* Unicorn translates a block before the block hook sees it: zeros on the
     * last page would run on past the mapping and fault in translation. */
    return fill_pages(s, l, pages ? pages - 1 : 0, pages, err);
}

static void drop(struct rep_seg *s, size_t i)
{
    crec_free(s->lazy[i].filled);
    s->lazy[i] = s->lazy[--s->nlazy];
}

int rep_lazy_settle(struct rep_seg *s, uint64_t addr, uint64_t len, crec_error *err)
{
    for (size_t i = 0; i < s->nlazy;) {
        struct rep_lazy *l = &s->lazy[i];
        if (!(l->addr < addr + len && addr < l->addr + l->len)) {
            i++;
            continue;
        }
        int rc = fill_pages(s, l, 0, SIZE_MAX, err);
        if (rc != CREC_OK)
            return rc;
        drop(s, i);
    }
    return CREC_OK;
}

/*
 * Fill the group of REP_LAZY_GROUP pages holding addr, if it is lazy and
 * that page is empty: neighbouring code usually runs too, and one group
 * costs one drop of translated code instead of one per page.
 * @return 1 if it filled, else 0; *rc an error.
 */
static int fill_at(struct rep_seg *s, uint64_t addr, crec_error *err, int *rc)
{
    for (size_t i = 0; i < s->nlazy; i++) {
        struct rep_lazy *l = &s->lazy[i];
        size_t p;
        if (addr < l->addr || addr - l->addr >= l->len)
            continue;
        p = (size_t)((addr - l->addr) / CREC_PAGE_SIZE);
        if (l->filled[p])
            return 0;
        p -= p % REP_LAZY_GROUP;
        *rc = fill_pages(s, l, p, p + REP_LAZY_GROUP, err);
        return *rc == CREC_OK;
    }
    return 0;
}

int rep_lazy_block(struct rep_seg *s, uint64_t addr, int *refill, crec_error *err)
{
    uint64_t page = addr & ~(CREC_PAGE_SIZE - 1);
    uint64_t *seen = &s->lazy_seen[(page / CREC_PAGE_SIZE) % REP_LAZY_SEEN];
    int rc = CREC_OK, n;

    *refill = 0;
    if (*seen == page + 1)
        return CREC_OK; /* its pages were looked at already: most blocks */
    n = fill_at(s, page, err, &rc);
    if (rc == CREC_OK) /* a block may run on into the next page */
        n += fill_at(s, page + CREC_PAGE_SIZE, err, &rc);
    *refill = rc == CREC_OK && n > 0;
    if (rc == CREC_OK)
        *seen = page + 1;
    return rc;
}

void rep_lazy_free(struct rep_seg *s)
{
    while (s->nlazy > 0)
        drop(s, s->nlazy - 1);
    crec_free(s->lazy);
    s->lazy = NULL;
    s->caplazy = 0;
}
