/*
 * mem.c - guest memory: a sorted list of mappings, each one Unicorn region
 * backed by host memory from mmap(2) that we own (uc_mem_map_ptr), so that
 * any guest range can be read through a host pointer - the recorder needs
 * that because UC_HOOK_MEM_READ passes value 0 in Unicorn 2.0.1.
 *
 * Unmapping or re-protecting part of a mapping is done by hand: unmap the
 * whole Unicorn region, give the cut pages back to the host, and map the
 * pieces that remain.  That keeps our list and Unicorn's in step one to
 * one, and never relies on Unicorn splitting a pointer-backed region.
 *
 * Except for PROT_NONE: such a mapping (a reservation, often huge: Go,
 * JVMs, AddressSanitizer) is in our list but is no Unicorn region at all,
 * so that reserving costs nothing and committing a piece maps only the
 * piece.  The guest can't touch it either way; hook_mem_invalid (cpu.c)
 * reports its faults as protection faults, as Linux does.
 *
 * And except for big ones (EMU_LAZY_MIN and up, not executable): those
 * are "lazy".  Unicorn 2.0.1 unmaps a region page by page (memory_unmap
 * walks every page to flush it: seconds for a few GiB, a day for
 * AddressSanitizer's 16 TiB shadow), and any cut of a mapping unmaps its
 * region.  A lazy mapping becomes regions EMU_CHUNK at a time, the first
 * time the guest touches a chunk (emu_mem_fault_in, from the invalid-
 * memory hook, after which the access goes on); a cut drops only the
 * chunks it has.  Untouched memory costs nothing, in Unicorn or the host.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu/emu_int.h"

/* Index of the first mapping whose end is above addr.  The mapping last
 * found for a page like addr's is tried first: memory hooks ask about the
 * same few mappings over and over. */
static size_t map_lower(crec_emu_cpu *cpu, uint64_t addr)
{
    size_t lo = 0, hi = cpu->n_maps;
    size_t *hint = &cpu->map_hints[addr / CREC_PAGE_SIZE % EMU_MAP_HINTS];

    if (*hint < hi && cpu->maps[*hint].start <= addr && addr < cpu->maps[*hint].end)
        return *hint;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cpu->maps[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return lo;
}

static int map_insert(crec_emu_cpu *cpu, size_t at, const struct emu_map *m)
{
    struct emu_map *n = crec_grow(cpu->maps, &cpu->cap_maps, cpu->n_maps + 1, sizeof *n, 64);

    if (!n)
        return -1;
    cpu->maps = n;
    memmove(cpu->maps + at + 1, cpu->maps + at, (cpu->n_maps - at) * sizeof *cpu->maps);
    cpu->maps[at] = *m;
    cpu->n_maps++;
    return 0;
}

static void map_delete(crec_emu_cpu *cpu, size_t at)
{
    memmove(cpu->maps + at, cpu->maps + at + 1, (cpu->n_maps - at - 1) * sizeof *cpu->maps);
    cpu->n_maps--;
}

/*
 * Hosts other than x86-64.  Unicorn 2.0.1 makes a guest load fire
 * UC_HOOK_MEM_READ only when its TCG backend sends every load to the slow
 * path while memory hooks exist; the x86-64 backend does, the s390x one
 * (and aarch64, ppc64, riscv64: unicorn issues #1908, #2124) does not, so
 * there a load fires the hook only on a TLB miss and a replay loses count
 * of the loads.  Pages mapped as MMIO always take the slow path, so on such
 * hosts every readable, non-executable mapping is MMIO, served from the
 * same host memory by the two callbacks below (values are little-endian
 * guest bytes).  Code stays RAM: QEMU can't execute from MMIO.  The one
 * difference this makes to the hooks is handled by crec_emu_mem_echo.
 * CREC_DATA_MMIO=1 (replay only) forces this on an x86-64 host, to test it.
 */
int emu_mem_data_mmio_default(void)
{
#if defined(__x86_64__)
    const char *e = getenv("CREC_DATA_MMIO");
    return e && e[0] == '1';
#else
    return 1;
#endif
}

static uint64_t mmio_read(uc_engine *uc, uint64_t off, unsigned size, void *host)
{
    (void)uc;
    return crec_le_get((const uint8_t *)host + off, size);
}

static void mmio_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t v, void *host)
{
    (void)uc;
    crec_le_put((uint8_t *)host + off, v, size);
}

static int is_mmio(const crec_emu_cpu *cpu, int prot)
{
    return cpu->data_mmio && (prot & CREC_PROT_READ) && !(prot & CREC_PROT_EXEC);
}

/* Give the Unicorn region of one of our mappings a new shape (none for
 * PROT_NONE: see the top of this file). */
static int uc_region_map(crec_emu_cpu *cpu, const struct emu_map *m)
{
    if (m->prot == 0)
        return UC_ERR_OK;
    if (is_mmio(cpu, m->prot))
        return emu_uc_mmio_map(cpu->uc, m->start, m->end - m->start, mmio_read, m->host,
                           (m->prot & CREC_PROT_WRITE) ? mmio_write : NULL, m->host);
    return emu_uc_mem_map_ptr(cpu->uc, m->start, m->end - m->start, m->prot, m->host);
}

/*
 * QEMU's load helper cuts an unaligned MMIO load into the two aligned
 * loads that cover it, and reports all three; on RAM it reports a load
 * inside a page once.  (A load across a page is reported three times on
 * both.)  So after an unaligned in-page load from an MMIO page, the next
 * two reports are passed over.
 */
int crec_emu_mem_echo(crec_emu_cpu *cpu, int kind, uint64_t addr, unsigned size)
{
    uint64_t sz = size > 0 ? (uint64_t)size : 1;
    int prot;

    if (!cpu->data_mmio || kind != CREC_EMU_LOAD)
        return 0;
    if (cpu->xreporting) { /* crec's own instructions' loads: never echoed */
        cpu->echo_left = 0;
        return 0;
    }
    if (cpu->echo_left > 0 && addr == cpu->echo_next && sz == cpu->echo_size) {
        cpu->echo_left--;
        cpu->echo_next += sz;
        return 1;
    }
    cpu->echo_left = 0;
    if (sz > 1 && (addr & (sz - 1)) != 0 &&
        addr / CREC_PAGE_SIZE == (addr + sz - 1) / CREC_PAGE_SIZE &&
        (prot = crec_emu_mem_prot(cpu, addr)) >= 0 && is_mmio(cpu, prot)) {
        cpu->echo_left = 2;
        cpu->echo_size = (unsigned)sz;
        cpu->echo_next = addr & ~(sz - 1);
    }
    return 0;
}

int crec_emu_mem_echoes(crec_emu_cpu *cpu)
{
    return cpu->data_mmio;
}

/* ---- lazy mappings -------------------------------------------------------- */

static int lazy_size(uint64_t len, int prot)
{
    return len >= EMU_LAZY_MIN && prot && !(prot & CREC_PROT_EXEC);
}

static size_t chunk_slot(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 28) & (cap - 1);
}

static void chunk_put(uint64_t *tab, size_t cap, uint64_t key)
{
    size_t i = chunk_slot(key, cap);
    while (tab[i])
        i = (i + 1) & (cap - 1);
    tab[i] = key;
}

/* Is key (a chunk's start + 1) in the table? */
static int chunk_has(const uint64_t *tab, size_t cap, uint64_t key)
{
    size_t i;

    if (!cap)
        return 0;
    for (i = chunk_slot(key, cap); tab[i] && tab[i] != key; i = (i + 1) & (cap - 1))
        ;
    return tab[i] != 0;
}

/* Make the chunk of mapping m that holds addr a region. */
static int chunk_map(crec_emu_cpu *cpu, const struct emu_map *m, uint64_t addr)
{
    uint64_t a = addr & ~(EMU_CHUNK - 1), b = a + EMU_CHUNK;
    struct emu_map c;

    if (a < m->start)
        a = m->start;
    if (b > m->end)
        b = m->end;
    if ((cpu->n_chunks + 1) * 2 > cpu->chunks_cap) {
        size_t cap = cpu->chunks_cap ? 2 * cpu->chunks_cap : 256;
        uint64_t *n = crec_calloc(cap, sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < cpu->chunks_cap; i++)
            if (cpu->chunks[i])
                chunk_put(n, cap, cpu->chunks[i]);
        crec_free(cpu->chunks);
        cpu->chunks = n;
        cpu->chunks_cap = cap;
    }
    c = (struct emu_map){a, b, m->host + (a - m->start), m->prot, 0};
    if (uc_region_map(cpu, &c) != UC_ERR_OK)
        return -1;
    chunk_put(cpu->chunks, cpu->chunks_cap, a + 1);
    cpu->n_chunks++;
    return 0;
}

/* Unmap the chunks of [a, b) that are regions. */
static void chunks_drop(crec_emu_cpu *cpu, uint64_t a, uint64_t b)
{
    uint64_t *old = cpu->chunks;
    size_t cap = cpu->chunks_cap, n = 0;

    if (!cpu->n_chunks)
        return;
    cpu->chunks = crec_calloc(cap, sizeof *cpu->chunks);
    if (!cpu->chunks) { /* rebuild in place is not possible: keep the table */
        cpu->chunks = old;
        for (size_t i = 0; i < cap; i++)
            if (old[i] && old[i] - 1 >= a && old[i] - 1 < b) {
                uc_mem_region *r;
                uint32_t k;
                if (uc_mem_regions(cpu->uc, &r, &k) == UC_ERR_OK) {
                    for (uint32_t j = 0; j < k; j++)
                        if (r[j].begin == old[i] - 1)
                            emu_uc_mem_unmap(cpu->uc, r[j].begin, r[j].end - r[j].begin + 1);
                    uc_free(r);
                }
            }
        return;
    }
    for (size_t i = 0; i < cap; i++) {
        uint64_t start;
        if (!old[i])
            continue;
        start = old[i] - 1;
        if (start >= a && start < b) {
            uint64_t end = (start | (EMU_CHUNK - 1)) + 1;
            if (end > b)
                end = b;
            emu_uc_mem_unmap(cpu->uc, start, end - start);
            continue;
        }
        chunk_put(cpu->chunks, cap, old[i]);
        n++;
    }
    cpu->n_chunks = n;
    crec_free(old);
}

int emu_mem_fast_page(crec_emu_cpu *cpu, uint64_t page, uint8_t **host, int *prot)
{
    uint64_t addr = page * CREC_PAGE_SIZE;
    size_t i = map_lower(cpu, addr);
    const struct emu_map *m;

    if (cpu->data_mmio || i >= cpu->n_maps || cpu->maps[i].start > addr)
        return -1;
    m = &cpu->maps[i];
    if (!m->prot) /* PROT_NONE: no region at all */
        return -1;
    if (m->lazy) { /* only a chunk that is a region: Unicorn makes the others */
        uint64_t a = addr & ~(EMU_CHUNK - 1);
        if (a < m->start)
            a = m->start;
        if (!chunk_has(cpu->chunks, cpu->chunks_cap, a + 1))
            return -1;
    }
    *host = m->host + (addr - m->start);
    *prot = m->prot;
    return 0;
}

int emu_mem_fault_in(crec_emu_cpu *cpu, uint64_t addr)
{
    size_t i = map_lower(cpu, addr);
    const struct emu_map *m;

    if (i >= cpu->n_maps || cpu->maps[i].start > addr || !cpu->maps[i].lazy)
        return 0;
    m = &cpu->maps[i];
    return chunk_map(cpu, m, addr) == 0;
}

/* Forget translated code in a mapping that was executable: called while
 * it is still mapped, since Unicorn looks the page up to invalidate it. */
static void forget_code(crec_emu_cpu *cpu, const struct emu_map *m, uint64_t a, uint64_t b)
{
    if (!(m->prot & CREC_PROT_EXEC))
        return;
    uc_ctl_remove_cache(cpu->uc, a, b);
    emu_blocks_forget(cpu, a, b - a);
}

/*
 * Cut [a, b) out of mapping i, which overlaps it.  The pieces left on
 * either side stay mapped; with `keep` 1 the cut part is mapped again with
 * prot `newprot` (mprotect), with 0 its host pages are released, with 2
 * they are left alone (crec_emu_mem_move takes them).
 * Returns the number of entries that now stand where i stood.
 */
static int map_cut(crec_emu_cpu *cpu, size_t i, uint64_t a, uint64_t b, int keep, int newprot,
                   crec_error *err)
{
    struct emu_map m = cpu->maps[i], piece[3];
    int n = 0;
    uc_err ue;

    if (a < m.start)
        a = m.start;
    if (b > m.end)
        b = m.end;
    if (keep && m.prot == newprot)
        return 1;
    forget_code(cpu, &m, a, b);
    ue = UC_ERR_OK;
    if (m.lazy)
        chunks_drop(cpu, m.start, m.end); /* the pieces fault them in again */
    else if (m.prot)
        ue = emu_uc_mem_unmap(cpu->uc, m.start, m.end - m.start);
    if (ue != UC_ERR_OK)
        return crec_error_set(err, CREC_ERR_EMU, "uc_mem_unmap(0x%llx): %s",
                              (unsigned long long)m.start, uc_strerror(ue)),
               -1;
    if (m.start < a)
        piece[n++] = (struct emu_map){m.start, a, m.host, m.prot, 0};
    if (keep == 1)
        piece[n++] = (struct emu_map){a, b, m.host + (a - m.start), newprot, 0};
    else if (keep == 0)
        munmap(m.host + (a - m.start), b - a);
    /* keep == 2: the host pages leave with the caller (crec_emu_mem_move) */
    if (b < m.end)
        piece[n++] = (struct emu_map){b, m.end, m.host + (b - m.start), m.prot, 0};
    map_delete(cpu, i);
    for (int k = 0; k < n; k++) {
        piece[k].lazy = lazy_size(piece[k].end - piece[k].start, piece[k].prot);
        ue = piece[k].lazy ? UC_ERR_OK : uc_region_map(cpu, &piece[k]);
        if (ue != UC_ERR_OK || map_insert(cpu, i + k, &piece[k]) != 0) {
            crec_error_set(err, ue ? CREC_ERR_EMU : CREC_ERR_NOMEM,
                           "remapping guest 0x%llx: %s", (unsigned long long)piece[k].start,
                           ue ? uc_strerror(ue) : "out of memory");
            return -1;
        }
    }
    return n;
}

int crec_emu_mem_unmap(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, crec_error *err)
{
    uint64_t end = addr + len;
    size_t i = map_lower(cpu, addr);

    while (i < cpu->n_maps && cpu->maps[i].start < end) {
        int n = map_cut(cpu, i, addr, end, 0, 0, err);
        if (n < 0)
            return err ? err->code : CREC_ERR_EMU;
        i += n; /* past the pieces left on either side of the cut */
    }
    return CREC_OK;
}

int crec_emu_mem_move(crec_emu_cpu *cpu, uint64_t old, uint64_t olen, uint64_t to, uint64_t nlen,
                      crec_error *err)
{
    size_t i = map_lower(cpu, old);
    uint8_t *host, *moved;
    int prot;

    if (i >= cpu->n_maps || cpu->maps[i].start > old || cpu->maps[i].end < old + olen)
        return crec_error_set(err, CREC_ERR_ARG, "mremap of 0x%llx: not one mapping",
                              (unsigned long long)old);
    host = cpu->maps[i].host + (old - cpu->maps[i].start);
    prot = cpu->maps[i].prot;
    if (map_cut(cpu, i, old, old + olen, 2, 0, err) < 0)
        return err ? err->code : CREC_ERR_EMU;
    /* the host moves the pages (and zero-fills a growth), as Linux does */
    moved = mremap(host, olen, nlen, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) {
        crec_emu_mem_map_host(cpu, old, olen, prot, host, NULL);
        return crec_error_set(err, CREC_ERR_NOMEM, "mremap of 0x%llx: %s",
                              (unsigned long long)old, strerror(errno));
    }
    return crec_emu_mem_map_host(cpu, to, nlen, prot, moved, err);
}

int crec_emu_mem_protect(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                         crec_error *err)
{
    uint64_t end = addr + len, at = addr;
    size_t i = map_lower(cpu, addr);

    /* all mapped?  mprotect(2) fails with ENOMEM on a hole and changes nothing */
    for (size_t k = i; at < end; k++) {
        if (k >= cpu->n_maps || cpu->maps[k].start > at)
            return crec_error_set(err, CREC_ERR_ARG, "mprotect of unmapped 0x%llx",
                                  (unsigned long long)at);
        at = cpu->maps[k].end;
    }
    if (prot & CREC_PROT_EXEC)
        cpu->ever_exec = 1;
    while (i < cpu->n_maps && cpu->maps[i].start < end) {
        int n = map_cut(cpu, i, addr, end, 1, prot, err);
        if (n < 0)
            return err ? err->code : CREC_ERR_EMU;
        i += n;
    }
    return CREC_OK;
}

int crec_emu_mem_map_host(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                          void *host, crec_error *err)
{
    struct emu_map m = {addr, addr + len, host, prot, lazy_size(len, prot)};
    uc_err ue;
    int rc = crec_emu_mem_unmap(cpu, addr, len, err);

    if (rc != CREC_OK)
        return rc;
    ue = m.lazy ? UC_ERR_OK : uc_region_map(cpu, &m);
    if (ue != UC_ERR_OK)
        return crec_error_set(err, CREC_ERR_EMU, "uc_mem_map_ptr(0x%llx, 0x%llx): %s",
                              (unsigned long long)addr, (unsigned long long)len,
                              uc_strerror(ue));
    if (map_insert(cpu, map_lower(cpu, addr), &m) != 0) {
        if (prot && !m.lazy)
            emu_uc_mem_unmap(cpu->uc, addr, len);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    if (prot & CREC_PROT_EXEC)
        cpu->ever_exec = 1;
    return CREC_OK;
}

int crec_emu_mem_map(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot,
                     crec_error *err)
{
    void *host;
    int rc;

    if (len == 0 || (addr | len) & (CREC_PAGE_SIZE - 1))
        return crec_error_set(err, CREC_ERR_ARG, "unaligned guest mapping 0x%llx+0x%llx",
                              (unsigned long long)addr, (unsigned long long)len);
    host = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    if (host == MAP_FAILED)
        return crec_error_set(err, CREC_ERR_NOMEM, "cannot reserve %llu bytes of guest memory",
                              (unsigned long long)len);
    rc = crec_emu_mem_map_host(cpu, addr, len, prot, host, err);
    if (rc != CREC_OK)
        munmap(host, len);
    return rc;
}

void emu_mem_free_all(crec_emu_cpu *cpu)
{
    for (size_t i = 0; i < cpu->n_maps; i++)
        munmap(cpu->maps[i].host, cpu->maps[i].end - cpu->maps[i].start);
    crec_free(cpu->chunks);
    cpu->chunks = NULL;
    cpu->chunks_cap = cpu->n_chunks = 0;
    crec_free(cpu->maps);
    cpu->maps = NULL;
    cpu->n_maps = cpu->cap_maps = 0;
}

void *crec_emu_mem_host(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot)
{
    size_t i = map_lower(cpu, addr);
    uint64_t end = addr + len;
    uint8_t *p;

    if (end < addr || i >= cpu->n_maps || cpu->maps[i].start > addr)
        return NULL;
    p = cpu->maps[i].host + (addr - cpu->maps[i].start);
    /* a range may run on into the next mapping if its host memory follows */
    for (;;) {
        const struct emu_map *m = &cpu->maps[i];
        if ((m->prot & prot) != prot)
            return NULL;
        if (end <= m->end)
            return p;
        if (i + 1 >= cpu->n_maps || cpu->maps[i + 1].start != m->end ||
            cpu->maps[i + 1].host != m->host + (m->end - m->start))
            return NULL;
        i++;
    }
}

void crec_emu_hostpages_clear(struct crec_emu_hostpages *t)
{
    memset(t, 0, sizeof *t);
}

/* Copy between guest and host, page-run by page-run; dir 0 reads. */
static int mem_copy(crec_emu_cpu *cpu, uint8_t *h, uint64_t addr, uint64_t len, int dir)
{
    size_t i = map_lower(cpu, addr);

    while (len > 0) {
        const struct emu_map *m;
        uint64_t n;
        if (i >= cpu->n_maps || cpu->maps[i].start > addr)
            return -1;
        m = &cpu->maps[i];
        n = m->end - addr < len ? m->end - addr : len;
        if (dir)
            memcpy(m->host + (addr - m->start), h, n);
        else
            memcpy(h, m->host + (addr - m->start), n);
        h += n, addr += n, len -= n, i++;
    }
    return 0;
}

int crec_emu_mem_read(crec_emu_cpu *cpu, void *dst, uint64_t addr, uint64_t len)
{
    return mem_copy(cpu, dst, addr, len, 0);
}

int crec_emu_mem_write(crec_emu_cpu *cpu, uint64_t addr, const void *src, uint64_t len)
{
    return mem_copy(cpu, (uint8_t *)src, addr, len, 1);
}

int crec_emu_mem_prot(crec_emu_cpu *cpu, uint64_t addr)
{
    size_t i = map_lower(cpu, addr);
    if (i >= cpu->n_maps || cpu->maps[i].start > addr)
        return -1;
    return cpu->maps[i].prot;
}

int crec_emu_mem_find_free(crec_emu_cpu *cpu, uint64_t len, uint64_t above, uint64_t below,
                           uint64_t *addr)
{
    size_t i = map_lower(cpu, below); /* maps before i end at or below `below` */
    uint64_t hi = below;

    if (i < cpu->n_maps && cpu->maps[i].start < hi)
        hi = cpu->maps[i].start;
    /* walk the holes downwards: hole i lies between maps[i-1] and hi */
    for (;;) {
        uint64_t lo = i > 0 ? cpu->maps[i - 1].end : 0;
        if (lo < above)
            lo = above;
        if (hi >= lo && hi - lo >= len) {
            *addr = hi - len;
            return 0;
        }
        if (i == 0 || cpu->maps[i - 1].end <= above)
            return -1;
        hi = cpu->maps[--i].start;
    }
}

int crec_emu_mem_foreach(crec_emu_cpu *cpu,
                         int (*fn)(void *ctx, const struct crec_emu_mapping *m), void *ctx)
{
    int rc = 0;
    for (size_t i = 0; i < cpu->n_maps && rc == 0; i++) {
        struct crec_emu_mapping m = {cpu->maps[i].start, cpu->maps[i].end, cpu->maps[i].prot,
                                     cpu->maps[i].host};
        rc = fn(ctx, &m);
    }
    return rc;
}

int crec_emu_mem_resident(crec_emu_cpu *cpu, uint64_t addr, uint64_t len,
                          int (*fn)(void *ctx, uint64_t page), void *ctx)
{
    static const uint64_t chunk = 1 << 16; /* pages per mincore call */
    uint64_t end = addr + len;
    size_t i = map_lower(cpu, addr);
    unsigned char *vec = NULL;
    int rc = 0;

    for (; i < cpu->n_maps && cpu->maps[i].start < end && rc == 0; i++) {
        const struct emu_map *m = &cpu->maps[i];
        uint64_t a = m->start > addr ? m->start : addr, b = m->end < end ? m->end : end;
        if (m->prot == 0)
            continue; /* the guest can't read it: a reservation's pages don't count */
        for (uint64_t at = a; at < b && rc == 0; at += chunk * CREC_PAGE_SIZE) {
            uint64_t n = (b - at) / CREC_PAGE_SIZE < chunk ? (b - at) / CREC_PAGE_SIZE : chunk;
            if (!vec && !(vec = crec_malloc(chunk)))
                return -1;
            if (mincore(m->host + (at - m->start), n * CREC_PAGE_SIZE, vec) != 0)
                memset(vec, 1, n); /* can't tell: take every page */
            for (uint64_t k = 0; k < n && rc == 0; k++)
                if (vec[k] & 1)
                    rc = fn(ctx, at + k * CREC_PAGE_SIZE);
        }
    }
    crec_free(vec);
    return rc;
}

int emu_mem_check(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot)
{
    uint64_t end = addr + len;
    size_t i = map_lower(cpu, addr);

    if (end < addr)
        return -1;
    while (addr < end) {
        if (i >= cpu->n_maps || cpu->maps[i].start > addr || (cpu->maps[i].prot & prot) != prot)
            return -1;
        addr = cpu->maps[i++].end;
    }
    return 0;
}

uint64_t emu_mem_span(crec_emu_cpu *cpu, uint64_t addr, uint64_t len, int prot)
{
    uint64_t at = addr, end = addr + len < addr ? UINT64_MAX : addr + len;
    size_t i = map_lower(cpu, addr);

    while (at < end && i < cpu->n_maps && cpu->maps[i].start <= at &&
           (cpu->maps[i].prot & prot) == prot)
        at = cpu->maps[i++].end;
    return (at < end ? at : end) - addr;
}

uint64_t emu_mem_read_mapped(crec_emu_cpu *cpu, void *dst, uint64_t addr, uint64_t len)
{
    uint64_t n = emu_mem_span(cpu, addr, len, 0);

    return n && crec_emu_mem_read(cpu, dst, addr, n) == 0 ? n : 0;
}
