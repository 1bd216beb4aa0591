/*
 * pcache.c - the hit-count prediction cache of the compressed-recording seed.
 *
 * A copy of the guest pages a thread used, as its replay would hold them:
 * each page's bytes, and for each aligned 8-byte granule a mask of which
 * of its bytes are known.  A store makes its bytes known; a load is
 * "predicted" when every byte it returns is known and equal to the copy.
 * The recorder logs only loads that are not predicted, so the replayer,
 * whose memory holds exactly what the guest stored or was given, loads the
 * same bytes for every predicted one.
 *
 * An access is whatever Unicorn reports in one memory hook call.  It is cut
 * at granule boundaries, so unaligned and page-straddling accesses are just
 * accesses touching two granules; it is a hit only if all its pieces hit.
 *
 * Why whole pages and not a direct-mapped table of granules: a program's
 * working set is pages (its heap, its stack, an array), a table of pages
 * holds one without the conflicts of a hashed table of granules (stack and
 * heap granules took each other's entries), its bytes sit next to each
 * other as in guest memory, and a page's state is forgotten lazily, so
 * that a flush costs nothing however big the cache (docs/ARCHITECTURE.md).
 */
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

int crec_pcache_create(crec_pcache **out, unsigned log2_granules, crec_error *err)
{
    crec_pcache *pc;
    size_t granules;

    *out = NULL;
    if (log2_granules < CREC_PCACHE_MIN_LOG2 || log2_granules > CREC_PCACHE_MAX_LOG2)
        return crec_error_set(err, CREC_ERR_ARG,
                              "prediction cache size 2^%u is out of range (2^%d to 2^%d)",
                              log2_granules, CREC_PCACHE_MIN_LOG2, CREC_PCACHE_MAX_LOG2);
    pc = crec_calloc(1, sizeof *pc);
    if (!pc)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the prediction cache");
    granules = (size_t)1 << log2_granules;
    pc->log2_granules = log2_granules;
    pc->max_pages = granules < CREC_PCACHE_PAGE_GRANULES ? 1 : granules / CREC_PCACHE_PAGE_GRANULES;
    pc->epoch = 1;
    pc->tlb_gen = 1ull << CREC_PCACHE_GEN_SHIFT;
    *out = pc;
    return CREC_OK;
}

void crec_pcache_free(crec_pcache *pc)
{
    if (!pc)
        return;
    for (size_t i = 0; i < pc->npages; i++)
        crec_free(pc->pages[i]);
    crec_free(pc->pages);
    crec_free(pc->hash);
    crec_free(pc->used);
    crec_free(pc->spanp);
    crec_free(pc);
}

static void tlb_clear(crec_pcache *pc)
{
    pc->tlb_gen += 1ull << CREC_PCACHE_GEN_SHIFT;
    if (pc->tlb_gen == 0) { /* round again: no entry of an old one may match */
        memset(pc->tlb, 0, sizeof pc->tlb);
        pc->tlb_gen = 1ull << CREC_PCACHE_GEN_SHIFT;
    }
}

void crec_pcache_flush(crec_pcache *pc)
{
    pc->epoch++;
    pc->nused = 0;
    tlb_clear(pc);
}

void crec_pcache_new_span(crec_pcache *pc)
{
    pc->span++;
    pc->nspanp = 0;
    tlb_clear(pc); /* each page goes by page_get again, which starts its masks */
}

/* Append p to a list of pages (a failure only loses the list's end:
 * callers use it for statistics, or tolerate a shorter list). */
static int list_push(struct crec_pcache_page ***v, size_t *n, size_t *cap,
                     struct crec_pcache_page *p)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        struct crec_pcache_page **g = crec_realloc(*v, ncap * sizeof *g);
        if (!g)
            return -1;
        *v = g, *cap = ncap;
    }
    (*v)[(*n)++] = p;
    return 0;
}

int crec_pcache_reused_over(crec_pcache *pc, uint64_t limit)
{
    uint64_t n = 0;

    for (size_t i = 0; i < pc->nused && n <= limit; i++)
        if (pc->used[i]->epoch == pc->epoch) /* else given to another page since */
            for (unsigned w = 0; w < CREC_PCACHE_PAGE_GRANULES / 64; w++)
                n += (uint64_t)__builtin_popcountll(pc->used[i]->fh[w].hit);
    return n > limit;
}

void crec_pcache_drop_hosts(crec_pcache *pc)
{
    tlb_clear(pc); /* each page is looked up again, its host address too */
}

size_t crec_pcache_pages(const crec_pcache *pc)
{
    return pc->npages;
}

/* ---- finding a page ---------------------------------------------------------- */

static size_t hash_slot(uint64_t page, size_t cap)
{
    return (size_t)(page * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* The hash slot holding `page`, or the empty one where it would go. */
static size_t hash_find(const crec_pcache *pc, uint64_t page)
{
    size_t i = hash_slot(page, pc->hcap);

    while (pc->hash[i] && pc->pages[pc->hash[i] - 1]->page != page)
        i = (i + 1) & (pc->hcap - 1);
    return i;
}

/* Take slot i out of the table (backward-shift deletion keeps every
 * remaining key reachable). */
static void hash_remove(crec_pcache *pc, size_t i)
{
    size_t j = i;

    pc->hash[i] = 0;
    for (;;) {
        size_t home;
        j = (j + 1) & (pc->hcap - 1);
        if (!pc->hash[j])
            return;
        home = hash_slot(pc->pages[pc->hash[j] - 1]->page, pc->hcap);
        /* can the entry at j move to the hole at i? */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            pc->hash[i] = pc->hash[j];
            pc->hash[j] = 0;
            i = j;
        }
    }
}

static int hash_grow(crec_pcache *pc)
{
    size_t cap = pc->hcap ? 2 * pc->hcap : 256;
    uint32_t *h = crec_calloc(cap, sizeof *h);

    if (!h)
        return -1;
    crec_free(pc->hash);
    pc->hash = h;
    pc->hcap = cap;
    for (size_t k = 0; k < pc->npages; k++) {
        size_t i = hash_slot(pc->pages[k]->page, cap);
        while (h[i])
            i = (i + 1) & (cap - 1);
        h[i] = (uint32_t)(k + 1);
    }
    return 0;
}

/* Drop the table entry of page number `page`, if it has one. */
static void tlb_drop(crec_pcache *pc, uint64_t page)
{
    unsigned i = (unsigned)(page & (CREC_PCACHE_TLB - 1));

    if (pc->tlb[i].tag == (page | pc->tlb_gen))
        pc->tlb[i].tag = 0;
}

/* A page to hold a new guest page: a new one, or (at the maximum) the one
 * the eviction hand finds not brought into the table since it last passed
 * and not in the table now.  NULL: no memory. */
static struct crec_pcache_page *page_take(crec_pcache *pc)
{
    struct crec_pcache_page *p;

    if (pc->npages < pc->max_pages) {
        struct crec_pcache_page **v;
        if ((pc->npages + 1) * 2 > pc->hcap && hash_grow(pc) != 0)
            return NULL;
        v = crec_realloc(pc->pages, (pc->npages + 1) * sizeof *v);
        if (!v)
            return NULL;
        pc->pages = v;
        if (!(p = crec_malloc(sizeof *p)))
            return NULL;
        p->idx = (uint32_t)pc->npages;
        pc->pages[pc->npages++] = p;
        p->page = UINT64_MAX; /* in no hash slot yet */
        return p;
    }
    for (size_t tries = 0;; tries++) {
        size_t k = pc->hand++ % pc->npages;
        unsigned t;
        p = pc->pages[k];
        t = (unsigned)(p->page & (CREC_PCACHE_TLB - 1));
        /* twice round: every page is in the table (a cache of few pages) */
        if (tries < 2 * pc->npages && (p->used || pc->tlb[t].tag == (p->page | pc->tlb_gen))) {
            p->used = 0;
            continue;
        }
        tlb_drop(pc, p->page);
        if (p->span == pc->span && pc->evict) /* what the span did with it is told */
            pc->evict(pc->evict_ctx, p);
        p->span = pc->span - 1;
        hash_remove(pc, hash_find(pc, p->page));
        p->page = UINT64_MAX;
        return p;
    }
}

/* The page of guest page number `page`, brought into the table (made
 * when `make`; a new page knows nothing).  NULL: not held (or no memory). */
static struct crec_pcache_page *page_get(crec_pcache *pc, uint64_t page, int make)
{
    struct crec_pcache_tlbe *e = pcache_tlb(pc, page);
    struct crec_pcache_page *p;
    size_t i;

    if (e)
        return e->p;
    if (page >= CREC_PCACHE_PAGE_LIMIT)
        return NULL;
    i = pc->hcap ? hash_find(pc, page) : 0;
    if (pc->hcap && pc->hash[i]) {
        p = pc->pages[pc->hash[i] - 1];
    } else {
        if (!make || !(p = page_take(pc)))
            return NULL;
        i = hash_find(pc, page); /* the table may have grown */
        pc->hash[i] = p->idx + 1;
        p->page = page;
        p->epoch = 0;
        p->span = pc->span - 1;
    }
    if (p->epoch != pc->epoch) { /* new, or a flush since it was last used */
        list_push(&pc->used, &pc->nused, &pc->capused, p); /* (else its reuse is not counted) */
        memset(p->known, 0, sizeof p->known);
        memset(p->fh, 0, sizeof p->fh);
        p->epoch = pc->epoch;
    }
    if (p->span != pc->span) { /* first use in this span of the index */
        if (list_push(&pc->spanp, &pc->nspanp, &pc->capspanp, p) != 0) {
            pc->span_lost = 1; /* what the span touched can't all be said */
            return NULL;
        }
        memset(p->touch, 0, sizeof p->touch);
        memset(p->wrote, 0, sizeof p->wrote);
        p->span = pc->span;
    }
    p->used = 1;
    e = &pc->tlb[page & (CREC_PCACHE_TLB - 1)];
    e->tag = page | pc->tlb_gen;
    e->p = p;
    e->host = NULL;
    return p;
}

struct crec_pcache_page *crec_pcache_page_of(crec_pcache *pc, uint64_t page)
{
    return page_get(pc, page, 1);
}

/* ---- loads and stores ------------------------------------------------------- */

/*
 * Compare bytes [off, off+len) of a granule with `bits` (already in place,
 * zero elsewhere), then store them; off + len <= 8.  @return 1 if they
 * were all known and equal.
 */
static int pcache_piece(crec_pcache *pc, uint64_t granule, unsigned off, unsigned len,
                        uint64_t bits, int is_read)
{
    struct crec_pcache_page *p = page_get(pc, granule / CREC_PCACHE_PAGE_GRANULES, 1);
    unsigned g = (unsigned)(granule % CREC_PCACHE_PAGE_GRANULES);
    uint64_t lanes = pcache_low_bytes(len) << (8 * off), old;
    unsigned mask = (0xffu >> (8 - len)) << off;
    int hit;

    if (!p)
        return 0;
    old = pcache_load_le(p->bytes + 8 * g, 8);
    hit = is_read && (pcache_known(p, g) & mask) == mask && ((old ^ bits) & lanes) == 0;
    if (hit)
        p->fh[g / 64].hit |= 1ull << (g % 64);
    pcache_store_le(p->bytes + 8 * g, (old & ~lanes) | bits, 8);
    pcache_learn(p, g, mask);
    return hit;
}

/* An access of 1 to 8 bytes whose value is `value`: one or two granules. */
static int pcache_value(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size,
                        int is_read)
{
    unsigned off = (unsigned)(addr % CREC_PCACHE_GRANULE);
    unsigned first = CREC_PCACHE_GRANULE - off < size ? CREC_PCACHE_GRANULE - off : size;
    uint64_t granule = addr / CREC_PCACHE_GRANULE;
    int hit;

    value &= pcache_low_bytes(size);
    hit = pcache_piece(pc, granule, off, first, (value & pcache_low_bytes(first)) << (8 * off),
                       is_read);
    if (first < size) /* & and not &&: the second granule is stored either way */
        hit &= pcache_piece(pc, granule + 1, 0, size - first, value >> (8 * first), is_read);
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

int crec_pcache_read_slow(crec_pcache *pc, uint64_t addr, const uint8_t *bytes, unsigned size)
{
    return pcache_bytes(pc, addr, bytes, size, 1);
}

void crec_pcache_store_slow(crec_pcache *pc, uint64_t addr, uint64_t value, unsigned size)
{
    pcache_value(pc, addr, value, size, 0);
}

/* Forget bytes [from, to) of page p (offsets in the page). */
static void page_forget(struct crec_pcache_page *p, unsigned from, unsigned to)
{
    for (unsigned b = from; b < to;) {
        unsigned g = b / CREC_PCACHE_GRANULE, o = b % CREC_PCACHE_GRANULE;
        unsigned n = CREC_PCACHE_GRANULE - o < to - b ? CREC_PCACHE_GRANULE - o : to - b;
        p->known[g] = (uint8_t)(pcache_known(p, g) & ~((0xffu >> (8 - n)) << o));
        p->fh[g / 64].full &= ~(1ull << (g % 64));
        b += n;
    }
}

void crec_pcache_forget(crec_pcache *pc, uint64_t addr, uint64_t len)
{
    uint64_t first = addr / CREC_PCACHE_PAGE, last;

    if (len == 0)
        return;
    last = (addr + len - 1) / CREC_PCACHE_PAGE;
    if (addr + len < addr)
        last = UINT64_MAX / CREC_PCACHE_PAGE;
    /* Every page held is looked at when that is fewer than the range's. */
    for (size_t k = 0; k < pc->npages; k++) {
        struct crec_pcache_page *p = pc->pages[k];
        uint64_t lo, hi;
        if (last - first < pc->npages)
            break;
        if (p->page == UINT64_MAX || p->page < first || p->page > last)
            continue;
        lo = p->page == first ? addr % CREC_PCACHE_PAGE : 0;
        hi = p->page == last && (addr + len) % CREC_PCACHE_PAGE ? (addr + len) % CREC_PCACHE_PAGE
                                                                 : CREC_PCACHE_PAGE;
        page_forget(p, (unsigned)lo, (unsigned)hi);
    }
    if (last - first >= pc->npages)
        return;
    for (uint64_t page = first; page <= last; page++) {
        struct crec_pcache_page *p = page_get(pc, page, 0);
        uint64_t lo = page == first ? addr % CREC_PCACHE_PAGE : 0;
        uint64_t hi = page == last && (addr + len) % CREC_PCACHE_PAGE
                          ? (addr + len) % CREC_PCACHE_PAGE
                          : CREC_PCACHE_PAGE;
        if (p)
            page_forget(p, (unsigned)lo, (unsigned)hi);
    }
}
